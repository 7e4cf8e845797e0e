"""A workload named in one string, as ``diskmodel iopath --workload`` takes it: ``NAME[:KEY=VALUE,...]``.

- ``postmark:test1`` (the paper's presets test1, test2, test3), or ``postmark:files=N,low=B,high=B,
  transactions=N,read=B,write=B,bias_read=N,bias_create=N,seed=N,buffered=0|1,subdirectories=N``;
- ``fio:rw=randwrite,bs=4k,size=64M,io_size=8M,iodepth=32,direct=1,fsync=0`` (fio's meanings; ``rw`` also
  ``rw``, ``readwrite`` or ``randrw`` with ``rwmixread=PERCENT``);
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

__all__ = ["parse_workload", "describe_workload", "full_definition", "postmark_config", "size_value"]

_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_POSTMARK_KEYS = {
    "files": "number_of_files", "low": "min_file_size_bytes", "high": "max_file_size_bytes",
    "transactions": "transactions", "read": "read_block_size_bytes", "write": "write_block_size_bytes",
    "bias_read": "read_bias", "bias_create": "create_bias", "seed": "seed", "buffered": "buffered_io",
    "subdirectories": "subdirectories",
}
_KEYS = {
    "fio": {"rw", "bs", "size", "io_size", "rwmixread", "iodepth", "direct", "fsync", "seed"},
    "copy": {"size"},
    "metadata": {"op", "files", "file_bytes"},
}


#: The specs' keys whose value counts things (files, transactions, requests in flight, seeks, a seed), not bytes.
_COUNT_KEYS = frozenset({"files", "transactions", "iodepth", "fsync", "seed", "bias_read", "bias_create",
                         "subdirectories", "dirs", "blocking", "seeks", "seekers"})


def size_value(workload: str, key: str, text: str) -> int:
    m = re.fullmatch(r"(\d+)([kKmMgG]?)(i?[bB])?", text.strip())
    if not m:
        what = "a count (a whole number >= 0" if key in _COUNT_KEYS else "a size (a whole number of bytes"
        raise ValueError(f"workload {workload}: {key} = {text!r} is not {what}, optionally with k, M or G)")
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def _whole_text(key: str, text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()):
        raise ValueError(f"workload fio: {key} = {text!r} is not a whole number")
    return int(text)


def _pairs(workload: str, text: str) -> dict[str, str]:
    out = {}
    for item in filter(None, text.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"workload {workload}: {item!r} is not KEY=VALUE")
        if key.strip() in out:  # fio's own last-one-wins would take the second silently
            raise ValueError(f"workload {workload}: key {key.strip()!r} is given twice ({out[key.strip()]!r} and "
                             f"{value.strip()!r}); give it once")
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


def postmark_config(rest: str):
    """The :class:`~diskmodel.model.predictions.workload.PostMarkConfig` of a ``postmark:`` spec's part after the
    colon: a preset (test1, test2, test3) or KEY=VALUE pairs over PostMark's defaults."""
    from diskmodel.model.predictions.workload import PostMarkConfig, postmark_preset

    if rest in ("test1", "test2", "test3"):
        return postmark_preset(rest)
    fields = {}
    for key, value in _pairs("postmark", rest).items():
        if key not in _POSTMARK_KEYS:
            raise ValueError(f"workload postmark: key {key!r} is not one of {', '.join(_POSTMARK_KEYS)}")
        if key == "buffered":
            fields[_POSTMARK_KEYS[key]] = value not in ("0", "false")
        else:
            fields[_POSTMARK_KEYS[key]] = size_value("postmark", key, value)
    try:
        return PostMarkConfig(**fields)
    except ValueError as exc:
        raise ValueError(f"workload postmark: {exc}") from None


def _fio_fields(pairs: dict) -> dict:
    """:func:`~.fileops.fio`'s arguments of an ``fio:`` spec's pairs, its defaults filled in."""
    kw = {"rw": pairs.get("rw", "read"), "bs": 4096, "size": 64 << 20}
    for key in ("bs", "size", "io_size", "iodepth", "fsync", "seed"):
        if key in pairs:
            kw[key] = size_value("fio", key, pairs[key])
    if "rwmixread" in pairs:
        if kw["rw"] not in fileops.FIO_MIXED:
            raise ValueError(f"workload fio: rwmixread = {pairs['rwmixread']!r} applies to a mixed job (rw=rw, "
                             f"readwrite or randrw), not rw={kw['rw']}")
        kw["rwmixread"] = _whole_text("rwmixread", pairs["rwmixread"])
    if "direct" in pairs:
        if pairs["direct"] not in ("0", "1"):
            raise ValueError(f"workload fio: direct = {pairs['direct']!r} must be 0 or 1")
        kw["direct"] = pairs["direct"] == "1"
    return kw


def full_definition(text: str) -> str:
    """:func:`describe_workload`, with the defaults a short spec leaves out written out for PostMark, fio, the
    copy and the metadata workload (what ``diskmodel predict`` prints beside the result); ``text`` must parse."""
    name, _, rest = str(text).partition(":")
    if name in DEFINITIONS:
        return describe_workload(text)
    if name == "postmark":
        c = postmark_config(rest)
        return (f"PostMark: {c.number_of_files} files of {c.min_file_size_bytes}..{c.max_file_size_bytes} B in "
                f"{max(c.subdirectories, 1)} director{'ies' if c.subdirectories > 1 else 'y'}, {c.transactions} "
                f"transactions (read bias {c.read_bias}, create bias {c.create_bias}), reads of "
                f"{c.read_block_size_bytes} B, writes of {c.write_block_size_bytes} B, "
                f"{'buffered (stdio)' if c.buffered_io else 'unbuffered (read/write)'}, seed {c.seed}")
    pairs = _pairs(name, rest)
    if name == "fio":
        kw = {"iodepth": 1, "direct": False, "fsync": 0, **_fio_fields(pairs)}
        mixed = kw["rw"] in fileops.FIO_MIXED
        reads = mixed or "read" in kw["rw"]
        return (f"fio rw={kw['rw']}" + (f" ({kw.get('rwmixread', 50)} % reads)" if mixed else "")
                + f", bs={kw['bs']} B, size={kw['size']} B, io_size={kw.get('io_size', kw['size'])} B, "
                f"iodepth={kw['iodepth']}, direct={int(kw['direct'])}, fsync={kw['fsync']}: one new file"
                + (", laid out and dropped from the cache first" if reads else ""))
    if name == "copy":
        return f"cp of one file of {size_value(name, 'size', pairs.get('size', '64M'))} B to a new one"
    files = size_value(name, "files", pairs.get("files", "1000"))
    return (f"{pairs.get('op', 'create')} of {files} files of {size_value(name, 'file_bytes', pairs.get('file_bytes', '0'))}"
            " B in one directory")


def describe_workload(text: str) -> str:
    """What the workload ``text`` names does, in one line (printed beside its prediction); the
    string itself for the workloads whose spec is their definition (postmark, fio, copy, metadata)."""
    name, _, rest = str(text).partition(":")
    if name in DEFINITIONS:
        return DEFINITIONS[name](_pairs(name, rest), size_value)
    return str(text)


def parse_workload(text: str, *, sync_at_end: bool = True) -> FileOps:
    """The :class:`~.fileops.FileOps` of the workload ``text`` names (see the module docstring)."""
    name, _, rest = str(text).partition(":")
    if name in NAMED:
        return NAMED[name](_pairs(name, rest), size_value, sync_at_end=sync_at_end)
    if name not in fileops.WORKLOADS:
        raise ValueError(f"workload {text!r}: {name!r} is not one of {', '.join(fileops.WORKLOADS + tuple(NAMED))}")
    if name == "postmark":
        return fileops.postmark(postmark_config(rest), sync_at_end=sync_at_end)
    pairs = _pairs(name, rest)
    unknown = sorted(set(pairs) - _KEYS[name])
    if unknown:
        raise ValueError(f"workload {name}: key {unknown[0]!r} is not one of {', '.join(sorted(_KEYS[name]))}")
    if name == "fio":
        return fileops.fio(sync_at_end=sync_at_end, **_fio_fields(pairs))
    if name == "copy":
        return fileops.copy(size_value(name, "size", pairs.get("size", "64M")), sync_at_end=sync_at_end)
    files = size_value(name, "files", pairs.get("files", "1000"))
    file_bytes = size_value(name, "file_bytes", pairs.get("file_bytes", "0"))
    return fileops.metadata(pairs.get("op", "create"), files, file_bytes=file_bytes, sync_at_end=sync_at_end)
