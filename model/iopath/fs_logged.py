"""jfs and reiserfs: the page cache's file-level reads and write-backs, and the metadata operations,
as requests on the file system's device (the other kinds are in :mod:`.fs`).

Both allocate a file's blocks when they are first needed (no delayed allocation: jfs_get_block,
reiserfs_get_block), each file after the last one placed in its directory's group, and read or
write a file range as one request per run of contiguous blocks (the bios of :func:`.fs.data_bios`).
Their metadata is journaled differently: jfs logs records of changed lines in 4 KiB log pages and
writes its metapages in place later (:mod:`.fs_jfs`); reiserfs logs whole blocks of its S+tree in
transactions and keeps small files in its leaves (:mod:`.fs_reiserfs`). What they share is in
:mod:`.fs_logged_base`.
"""

from __future__ import annotations

from .fileops import FileOps, Kind
from .fs_jfs import Jfs
from .fs_layout import FsParams
from .fs_logged_base import LOGGED_KINDS
from .fs_reiserfs import Reiserfs
from .stream import Op

__all__ = ["LOGGED_KINDS", "logged_file_system"]


def logged_file_system(ops: FileOps, p: FsParams, data_bios, *, sync=None, dirty_expire_s: float = 30.0,
                       sparse: bool = False, workload: FileOps | None = None) -> list[tuple]:
    """The device requests ``(time, op, offset, size, flags)`` for ``ops`` on a jfs or reiserfs
    file system ``p``; ``data_bios`` builds a data run's bios (:func:`.fs.data_bios`). Files on the
    device before the workload (``ops.initial_bytes``) are placed, their metadata on the device
    and not cached. ``workload``: the operations before the page cache, whose ``write()`` calls
    allocate the blocks (None: blocks are allocated at write-back)."""
    fs = (Jfs if p.kind == "jfs" else Reiserfs)(p, data_bios, dirty_expire_s)
    created = set(ops.file[ops.kind == Kind.CREATE].tolist())
    for f in range(ops.initial_bytes.size):
        if f in created and ops.initial_bytes[f] == 0:
            continue
        file = fs.new_file(f, int(ops.dir_of_file[f]))
        fs.placed(file)
        n = -(-int(ops.initial_bytes[f]) // fs.bs)
        if p.kind == "reiserfs" and 0 < ops.initial_bytes[f] <= fs.tail_max:
            file.tail = int(ops.initial_bytes[f])
        elif n and not sparse:
            fs.allocate(None, file, 0, n)
        file.grown = 0
    fs.on_device = _placed_metadata(fs)
    fs.inplace.clear()
    sync = [False] * len(ops) if sync is None else sync.tolist()
    cols = (ops.time_s.tolist(), ops.kind.tolist(), ops.file.tolist(), ops.offset_bytes.tolist(),
            ops.size_bytes.tolist(), sync, ops.chunk_bytes.tolist())
    writes = _writes(workload)
    for t, kind, f, off, size, s, chunk in zip(*cols):
        while writes and writes[-1][0] < t:
            wt, wf, woff, wsize = writes.pop()
            if wf in fs.files:
                fs.write_call(wt, fs.files[wf], woff, wsize)
        fs.due(t)
        if kind == Kind.READ:
            fs.data(t, Op.READ, f, off, size, s, chunk)
        elif kind == Kind.WRITE:
            fs.data(t, Op.WRITE, f, off, size, s, chunk)
            if p.kind == "jfs":
                fs.after_write_back(t, fs.files[f])
        elif kind == Kind.CREATE:
            fs.files.pop(f, None)
            fs.create(t, f, int(ops.dir_of_file[f]))
        elif kind == Kind.DELETE:
            fs.delete(t, f)
        elif kind == Kind.STAT:
            fs.stat(t, f)
        elif kind == Kind.FSYNC:
            fs.fsync(t, f)
        elif kind in (Kind.SYNC, Kind.SYNC_ALL):
            fs.sync(t)
        elif kind == Kind.CLONE:
            raise ValueError(f"file system: {p.kind} has no FICLONE (cp copies the bytes)")
    return fs.rows


def _writes(workload: FileOps | None) -> list[tuple[float, int, int, int]]:
    """The ``write()`` calls of ``workload`` as ``(time, file, offset, size)``, latest first."""
    if workload is None:
        return []
    w = workload.kind == Kind.WRITE
    rows = zip(workload.time_s[w].tolist(), workload.file[w].tolist(), workload.offset_bytes[w].tolist(),
               workload.size_bytes[w].tolist())
    return sorted(((t, f, o, n) for t, f, o, n in rows if n), key=lambda r: -r[0])


def _placed_metadata(fs) -> set:
    """The metadata blocks the files on the device before the workload have (read when needed)."""
    out = set()
    if isinstance(fs, Reiserfs):
        for f in fs.files.values():
            out.add(fs.file_leaf(None, f))
            out.add(fs.entry_leaf(None, f))
        return out
    for f in fs.files.values():
        out.update(key for key in fs.dir_pages(f) if key[0] == "dt")
        out.add(("ip", fs.inode_page(None, f)))
    return out
