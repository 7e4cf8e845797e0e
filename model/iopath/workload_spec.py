"""A workload named in one string, as ``diskmodel iopath --workload`` takes it: ``NAME[:KEY=VALUE,...]``.

- ``postmark:test1`` (the paper's presets test1, test2, test3), or ``postmark:files=N,low=B,high=B,
  transactions=N,read=B,write=B,bias_read=N,bias_create=N,seed=N,buffered=0|1,subdirectories=N``;
- ``fio:rw=randwrite,bs=4k,size=64M,iodepth=32,direct=1,fsync=0``;
- ``copy:size=64M``;
- ``metadata:op=create,files=1000,file_bytes=0`` (op create, stat or delete);
- ``bonnie:size=256M,chunk=8k,seeks=8192,seekers=5,files=16384,max=0,min=0,dirs=1,file_chunk=8k,
  direct=0,seed=1,phases=io+files`` (:mod:`.workloads_bonnie`; without ``size``, the file phases alone);
- ``tar:files=1000,file_bytes=16k,dirs=1,blocking=20``, ``image:size=64M,kind=zero|sparse``
  (:mod:`.workloads_files`);
- ``dd:size=4M,step=write|read``: one step of the loop-image study's copy (``dd conv=fsync``, then the read back;
  :mod:`.workloads_copy`).

Sizes take the suffixes k, M, G (powers of 1024, as fio reads them). A bad key or value is one
ValueError line naming the workload, the key and the value.
"""

from __future__ import annotations

import re

from . import fileops, workloads_bonnie, workloads_copy, workloads_files
from .fileops import FileOps

__all__ = ["parse_workload", "describe_workload", "size_value"]

_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_POSTMARK_KEYS = {
    "files": "number_of_files", "low": "min_file_size_bytes", "high": "max_file_size_bytes",
    "transactions": "transactions", "read": "read_block_size_bytes", "write": "write_block_size_bytes",
    "bias_read": "read_bias", "bias_create": "create_bias", "seed": "seed", "buffered": "buffered_io",
    "subdirectories": "subdirectories",
}
_KEYS = {
    "fio": {"rw", "bs", "size", "iodepth", "direct", "fsync", "seed"},
    "copy": {"size"},
    "metadata": {"op", "files", "file_bytes"},
}


def size_value(workload: str, key: str, text: str) -> int:
    m = re.fullmatch(r"(\d+)([kKmMgG]?)(i?[bB])?", text.strip())
    if not m:
        raise ValueError(f"workload {workload}: {key} = {text!r} is not a size (a number with k, M or G)")
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def _pairs(workload: str, text: str) -> dict[str, str]:
    out = {}
    for item in filter(None, text.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"workload {workload}: {item!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


#: Workloads whose generator reads the spec's pairs itself: name -> (pairs, size_value) -> FileOps.
NAMED = {"bonnie": workloads_bonnie.from_pairs, "tar": workloads_files.tar_pairs,
         "image": workloads_files.image_pairs, "dd": workloads_copy.dd_pairs}


#: The definition, in one line, of each workload of :data:`NAMED`: name -> (pairs, size_value) -> str.
DEFINITIONS = {
    "bonnie": lambda pairs, sv: workloads_bonnie.describe(workloads_bonnie.config_of(pairs, sv)),
    "tar": lambda pairs, sv: workloads_files.describe_pairs("tar", pairs, sv),
    "image": lambda pairs, sv: workloads_files.describe_pairs("image", pairs, sv),
    "dd": workloads_copy.describe_pairs,
}


def describe_workload(text: str) -> str:
    """What the workload ``text`` names does, in one line (printed beside its prediction); the
    string itself for the workloads whose spec is their definition (postmark, fio, copy, metadata)."""
    name, _, rest = str(text).partition(":")
    if name in DEFINITIONS:
        return DEFINITIONS[name](_pairs(name, rest), size_value)
    return str(text)


def parse_workload(text: str, *, sync_at_end: bool = True) -> FileOps:
    """The :class:`~.fileops.FileOps` of the workload ``text`` names (see the module docstring)."""
    from diskmodel.model.predictions.workload import PostMarkConfig, postmark_preset

    name, _, rest = str(text).partition(":")
    if name in NAMED:
        return NAMED[name](_pairs(name, rest), size_value, sync_at_end=sync_at_end)
    if name not in fileops.WORKLOADS:
        raise ValueError(f"workload {text!r}: {name!r} is not one of {', '.join(fileops.WORKLOADS + tuple(NAMED))}")
    if name == "postmark":
        if rest in ("test1", "test2", "test3"):
            return fileops.postmark(postmark_preset(rest), sync_at_end=sync_at_end)
        fields = {}
        for key, value in _pairs(name, rest).items():
            if key not in _POSTMARK_KEYS:
                raise ValueError(f"workload postmark: key {key!r} is not one of {', '.join(_POSTMARK_KEYS)}")
            if key == "buffered":
                fields[_POSTMARK_KEYS[key]] = value not in ("0", "false")
            else:
                fields[_POSTMARK_KEYS[key]] = size_value(name, key, value)
        try:
            config = PostMarkConfig(**fields)
        except ValueError as exc:
            raise ValueError(f"workload postmark: {exc}") from None
        return fileops.postmark(config, sync_at_end=sync_at_end)
    pairs = _pairs(name, rest)
    unknown = sorted(set(pairs) - _KEYS[name])
    if unknown:
        raise ValueError(f"workload {name}: key {unknown[0]!r} is not one of {', '.join(sorted(_KEYS[name]))}")
    if name == "fio":
        kw = {"rw": pairs.get("rw", "read")}
        for key in ("bs", "size", "iodepth", "fsync", "seed"):
            if key in pairs:
                kw[key] = size_value(name, key, pairs[key])
        if "direct" in pairs:
            if pairs["direct"] not in ("0", "1"):
                raise ValueError(f"workload fio: direct = {pairs['direct']!r} must be 0 or 1")
            kw["direct"] = pairs["direct"] == "1"
        kw.setdefault("bs", 4096)
        kw.setdefault("size", 64 << 20)
        return fileops.fio(sync_at_end=sync_at_end, **kw)
    if name == "copy":
        return fileops.copy(size_value(name, "size", pairs.get("size", "64M")), sync_at_end=sync_at_end)
    files = size_value(name, "files", pairs.get("files", "1000"))
    file_bytes = size_value(name, "file_bytes", pairs.get("file_bytes", "0"))
    return fileops.metadata(pairs.get("op", "create"), files, file_bytes=file_bytes, sync_at_end=sync_at_end)
