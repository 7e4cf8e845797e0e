"""Everyday file workloads as file operations (:class:`~.fileops.FileOps`): a tree of small files
read into one archive (tar), and a disk image made zero-filled or sparse.

- :func:`tar` is GNU tar 1.34's ``tar -cf ARCHIVE -C TREE .`` (as ``strace`` shows it): the archive
  is created, then each directory and file of the tree in directory order gets a 512-byte header
  and its data padded to 512 bytes (POSIX ustar); tar fills a record of ``blocking factor x 512``
  bytes (20 x 512 = 10240 by default) and writes it whole, reading each file in calls that fill
  the record's remaining space; the archive ends with two zero blocks, padded to a whole record.
  Each file is stat()ed before it is read (its inode read from the device: the tree was written
  before the workload and is not cached). Directory order is readdir's (:func:`readdir_order`:
  ext2/3/4's htree hash order by default).
- :func:`image` is making a disk image of ``size`` bytes: ``zero`` is ``dd if=/dev/zero of=IMAGE
  bs=1M count=N conv=fsync`` (every block written, then fsync); ``sparse`` is ``truncate -s SIZE
  IMAGE`` (a new inode whose size is set: no data block is written).

Every workload ends with a ``sync`` (the measurement's end) unless ``sync_at_end`` is False.
"""

from __future__ import annotations

import numpy as np

from .fileops import CALL_S, COPY_BYTES_PER_S, FILE_OP_S, FileOps, Kind, _Builder, _whole

__all__ = ["tar", "image", "tar_pairs", "image_pairs", "describe_tar", "describe_image", "readdir_order",
           "TAR_BLOCK_BYTES"]

#: A tar block (POSIX ustar header and data padding unit).
TAR_BLOCK_BYTES = 512
#: GNU tar's default blocking factor (records of 20 blocks).
TAR_BLOCKING = 20


def _archive_bytes(sizes, directories: int, record: int) -> int:
    blocks = (1 + directories) + sum(1 + -(-int(s) // TAR_BLOCK_BYTES) for s in sizes) + 2
    return -(-blocks * TAR_BLOCK_BYTES // record) * record


def readdir_order(files: int, directories: int, order: str = "hash", seed: int = 1) -> list[int]:
    """The files in the order tar meets them: the directories, then each one's files, in readdir's
    order. ``creation``: the order they were made; ``hash``: ext2/3/4's with ``dir_index`` (mke2fs's
    default feature), whose readdir returns a directory's entries in the order of their names'
    htree hashes (fs/ext4/dir.c: ext4_dx_readdir, taken even for a one-block directory,
    is_dx_dir), which has nothing to do with the order the files were made or placed: modelled as a
    seeded shuffle of each directory's files and of the directories."""
    if order not in ("hash", "creation"):
        raise ValueError(f"workload tar: order = {order!r} must be hash or creation")
    by_dir = [[f for f in range(files) if f * directories // files == d] for d in range(directories)]
    if order == "creation":
        return [f for group in by_dir for f in group]
    rng = np.random.default_rng(seed)
    return [f for d in rng.permutation(directories).tolist() for f in rng.permutation(by_dir[d]).tolist()]


def tar(files: int, file_bytes: int, *, directories: int = 1, blocking: int = TAR_BLOCKING,
        order: str = "hash", seed: int = 1, call_s: float = CALL_S, copy_bytes_per_s: float = COPY_BYTES_PER_S,
        file_op_s: float = FILE_OP_S, sync_at_end: bool = True) -> FileOps:
    """``tar -cf`` of a tree of ``files`` files of ``file_bytes`` each, in ``directories``
    directories (file ``i`` in directory ``i * directories // files``), met in readdir's ``order``
    (:func:`readdir_order`); the archive is file ``files``, in its own directory (see the module
    docstring)."""
    files = _whole("files", files, 1)
    file_bytes = _whole("file_bytes", file_bytes, 0)
    directories = _whole("dirs", directories, 1)
    blocking = _whole("blocking", blocking, 1)
    visit = readdir_order(files, directories, order, _whole("seed", seed, 0))
    record = blocking * TAR_BLOCK_BYTES
    b = _Builder(call_s, copy_bytes_per_s, file_op_s)
    archive = files
    state = {"pos": 0, "written": 0}  # bytes placed in the archive; bytes written to it

    def put(n: int):
        state["pos"] += n
        while state["pos"] - state["written"] >= record:
            b.add(Kind.WRITE, archive, state["written"], record, record)
            state["written"] += record

    b.add(Kind.CREATE, archive, op_s=file_op_s)
    put(TAR_BLOCK_BYTES)  # the header of "./"
    current_dir = -1
    for f in visit:
        d = f * directories // files
        if d != current_dir and directories > 1:
            put(TAR_BLOCK_BYTES)  # the directory's header
        current_dir = d
        b.add(Kind.STAT, f, op_s=file_op_s)
        put(TAR_BLOCK_BYTES)
        left = file_bytes
        while left:
            n = min(left, record - (state["pos"] - state["written"]))
            b.add(Kind.READ, f, file_bytes - left, n, n)
            left -= n
            put(n)
        pad = -file_bytes % TAR_BLOCK_BYTES
        if pad:
            put(pad)
    put(2 * TAR_BLOCK_BYTES)
    tail = state["pos"] - state["written"]
    if tail:
        put(record - tail)
    dirs = np.concatenate([np.arange(files, dtype=np.int64) * directories // files, [directories]])
    initial = np.concatenate([np.full(files, file_bytes, np.int64), [0]])
    return b.build(dirs, initial, sync_at_end)


def image(size: int, *, kind: str = "zero", chunk_bytes: int = 1 << 20, call_s: float = CALL_S,
          copy_bytes_per_s: float = COPY_BYTES_PER_S, file_op_s: float = FILE_OP_S, sync_at_end: bool = True) -> FileOps:
    """A new ``size``-byte disk image, ``kind`` ``zero`` (dd from /dev/zero in ``chunk_bytes``
    calls, then fsync) or ``sparse`` (truncate)."""
    if kind not in ("zero", "sparse"):
        raise ValueError(f"workload image: kind = {kind!r} must be zero or sparse")
    size = _whole("size", size, 1)
    chunk_bytes = _whole("chunk_bytes", chunk_bytes, 1)
    b = _Builder(call_s, copy_bytes_per_s, file_op_s)
    b.add(Kind.CREATE, 0, op_s=file_op_s)
    if kind == "zero":
        for off in range(0, size, chunk_bytes):
            b.add(Kind.WRITE, 0, off, min(chunk_bytes, size - off), chunk_bytes)
        b.add(Kind.FSYNC, 0)
    return b.build([0], [0], sync_at_end)


def describe_tar(files: int, file_bytes: int, directories: int = 1, blocking: int = TAR_BLOCKING) -> str:
    total = _archive_bytes([file_bytes] * files, directories if directories > 1 else 0, blocking * TAR_BLOCK_BYTES)
    return (f"tar -cf: {files} files of {file_bytes} B in {directories} director{'y' if directories == 1 else 'ies'} "
            f"read into one archive of {total} B written in {blocking * TAR_BLOCK_BYTES} B records")


def describe_pairs(name: str, pairs: dict, size_value) -> str:
    """The definition of ``tar:...`` or ``image:...`` in one line, from the spec's pairs."""
    if name == "tar":
        v = {k: size_value("tar", k, pairs[k]) for k in ("files", "file_bytes", "dirs", "blocking") if k in pairs}
        return (describe_tar(v.get("files", 1000), v.get("file_bytes", 16 << 10), v.get("dirs", 1),
                             v.get("blocking", TAR_BLOCKING)) + f", files met in {pairs.get('order', 'hash')} order")
    return describe_image(size_value("image", "size", pairs.get("size", "64M")), pairs.get("kind", "zero"))


def describe_image(size: int, kind: str) -> str:
    how = "dd if=/dev/zero bs=1M conv=fsync" if kind == "zero" else "truncate -s"
    return f"image {kind}: {size} B by {how}"


def tar_pairs(pairs: dict, size_value, *, sync_at_end: bool = True) -> FileOps:
    """``tar:files=N,file_bytes=B,dirs=N,blocking=N,order=hash|creation,seed=N`` as FileOps."""
    _known("tar", pairs, ("files", "file_bytes", "dirs", "blocking", "order", "seed"))
    order = pairs.get("order", "hash")
    kw = {k: size_value("tar", k, v) for k, v in pairs.items() if k != "order"}
    return tar(kw.pop("files", 1000), kw.pop("file_bytes", 16 << 10), directories=kw.get("dirs", 1),
               blocking=kw.get("blocking", TAR_BLOCKING), order=order, seed=kw.get("seed", 1),
               sync_at_end=sync_at_end)


def image_pairs(pairs: dict, size_value, *, sync_at_end: bool = True) -> FileOps:
    """``image:size=B,kind=zero|sparse`` as FileOps."""
    _known("image", pairs, ("size", "kind"))
    return image(size_value("image", "size", pairs.get("size", "64M")), kind=pairs.get("kind", "zero"),
                 sync_at_end=sync_at_end)


def _known(name: str, pairs: dict, keys) -> None:
    unknown = sorted(set(pairs) - set(keys))
    if unknown:
        raise ValueError(f"workload {name}: key {unknown[0]!r} is not one of {', '.join(keys)}")
