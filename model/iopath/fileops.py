"""Workloads as file-level operations: what an application asks of the file system, before the page cache.

A :class:`FileOps` is a set of equal-length numpy arrays, one element per operation, in issue order:

- ``time_s`` (float64): when the operation is issued, seconds from the workload's start;
- ``kind`` (int8): a :class:`Kind` (create, write, read, delete, fsync, stat, sync);
- ``file`` (int64): the file's number (``-1`` for a sync);
- ``offset_bytes``, ``size_bytes`` (int64): the byte range of a read or write (0 for the others);
- ``chunk_bytes`` (int64): the size of the application's calls the range is done in (the
  read-ahead's request size; the same range in one call or many reaches the cache alike otherwise);
- ``direct`` (bool): ``O_DIRECT``: the range bypasses the page cache.

``dir_of_file`` gives each file's directory (the file systems place a directory's files together),
``initial_bytes`` the size of each file already on the device, not cached, when the workload starts
(fio's laid-out file, a copy's source, the files a stat or delete workload finds).
``end_s``: when the workload's last call returns, on its clock: the last operation's issue plus that
call's own time (a read copies its data to the application after the data arrives, so the copy of the
last read follows its wait). None takes the last operation's issue.
``caches_dropped``: the workload starts after ``sync`` and ``echo 3 > /proc/sys/vm/drop_caches`` on the
mounted file system (as the copy's steps are measured), not on a fresh mount, so the blocks the mount
read are not cached either where no one holds them (:meth:`~.fs_meta.MetadataReads.mounted`).
``timed_from``: the first operation the workload's own figures count; the ones before it run (their
requests reach the devices) but neither their time nor their bytes count: fio lays a read job's file out
before the job, and reports the job alone.

The generators follow the real programs:

- :func:`postmark` is PostMark 1.5's algorithm (postmark-1.5.c): create ``number`` files of sizes
  uniform on ``low .. high-1`` (each written whole), then ``transactions`` transactions, each a read
  (whole file) or an append (``1 .. high - size`` bytes, uniform; none when the file is full) by
  ``bias read``, then a create or a delete by ``bias create``, each on a file picked at random; then
  delete every file. Its random numbers are numpy's (seeded by ``seed``), not the C library's, so a
  run matches the real one in distribution, not file by file.
- :func:`fio` is one fio job on one laid-out file (``rw`` read, write, randread, randwrite; ``bs``;
  ``size``; ``direct``; ``fsync`` every N writes; ``iodepth`` concurrent requests, issued at one
  instant each batch); a random job touches every block once (fio's random map, ``norandommap``
  off).
- :func:`copy` is coreutils 9's ``cp``: it first asks for a clone (``--reflink=auto``, FICLONE),
  which xfs and btrfs grant (blocks shared, no data copied); where refused it reads the file in
  128 KiB calls and writes the copy (io_blksize in src/ioblksize.h). Those ops are marked
  ``fallback``; :func:`resolve_clones` keeps one branch or the other.
- :func:`metadata` creates, stats or deletes many small files in one directory.

Every workload ends with a ``sync`` (the measurement's end: a benchmark syncs before it reads the
device counters) unless ``sync_at_end`` is False. Time advances by ``call_s`` per system call,
``bytes / copy_bytes_per_s`` per byte copied through the cache and, for PostMark and the metadata
workloads, ``file_op_s`` per file operation (an open, create, stat or unlink with its path lookup
and journal handle): the pace, which decides what write-back's timers see. The default
``file_op_s`` makes PostMark's pace the one measured on this project's test machine (PostMark 1.5,
test1's sizes, ext4 on a loop device: about 1,800 transactions per second, each two file
operations); the device's speed is not modelled at this level.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum

import numpy as np

__all__ = ["Kind", "FileOps", "postmark", "fio", "FIO_RW", "FIO_MIXED", "random_map_order", "copy", "metadata", "resolve_clones",
           "WORKLOADS"]


class Kind(IntEnum):
    CREATE = 0
    WRITE = 1
    READ = 2
    DELETE = 3
    FSYNC = 4
    STAT = 5
    SYNC = 6  # syncfs(2) of the workload's file system (``sync -f``, how a measured run ends)
    DROP = 7  # posix_fadvise(POSIX_FADV_DONTNEED): the file's clean pages leave the cache
    CLONE = 8  # FICLONE: ``file`` becomes a copy sharing the blocks of file ``offset_bytes``
    SYNC_ALL = 9  # sync(2): every file system, a loop image's host among them (fs/sync.c, ksys_sync)
    RANDOM = 10  # posix_fadvise(POSIX_FADV_RANDOM): the file is read with no read-ahead (FMODE_RANDOM)
    # fallocate(2), mode 0: the file's blocks [offset, offset + size) allocated as unwritten extents and
    # its size extended; ext2, ext3 (no extents), jfs and reiserfs return EOPNOTSUPP: nothing happens
    FALLOCATE = 11


_FIELDS = ("time_s", "kind", "file", "offset_bytes", "size_bytes", "chunk_bytes", "direct")


@dataclass(frozen=True, eq=False)
class FileOps:
    """File-level operations (see the module docstring)."""

    time_s: np.ndarray
    kind: np.ndarray
    file: np.ndarray
    offset_bytes: np.ndarray
    size_bytes: np.ndarray
    chunk_bytes: np.ndarray
    direct: np.ndarray
    dir_of_file: np.ndarray
    initial_bytes: np.ndarray
    fallback: np.ndarray | None = None  # ops done only when the CLONE before them is refused
    caches_dropped: bool = False  # started after sync and drop_caches, not a fresh mount (module docstring)
    end_s: float | None = None  # when the last call returns (module docstring); None: at its issue
    #: the first operation the workload's own figure counts (fio's job, after laying its file out); 0: all
    timed_from: int = 0

    def __len__(self) -> int:
        return int(self.kind.size)

    def take(self, keep: np.ndarray) -> "FileOps":
        """The operations the boolean mask ``keep`` marks, in their order (the files and the rest as they are)."""
        return FileOps(*(getattr(self, f)[keep] for f in _FIELDS), self.dir_of_file, self.initial_bytes,
                       None if self.fallback is None else self.fallback[keep], self.caches_dropped, self.end_s,
                       int(np.count_nonzero(np.asarray(keep, bool)[:self.timed_from])))

    @property
    def app_end_s(self) -> float:
        """When the application is done on its own clock [s]: ``end_s``, else the last operation's issue."""
        last = float(self.time_s.max()) if len(self) else 0.0
        return last if self.end_s is None else max(float(self.end_s), last)

    def to_frame(self):
        import pandas as pd

        frame = pd.DataFrame({f: getattr(self, f) for f in _FIELDS})
        frame["kind"] = pd.Categorical(np.array([k.name.lower() for k in Kind])[self.kind])
        return frame


class _Builder:
    """Collects operations and advances the workload's clock."""

    def __init__(self, call_s: float, copy_bytes_per_s: float, file_op_s: float = 0.0):
        if not (isinstance(file_op_s, (int, float)) and np.isfinite(file_op_s) and file_op_s >= 0):
            raise ValueError(f"workload: file_op_s = {file_op_s!r} must be a finite number >= 0")
        if not (isinstance(call_s, (int, float)) and np.isfinite(call_s) and call_s >= 0):
            raise ValueError(f"workload: call_s = {call_s!r} must be a finite number >= 0")
        if not (isinstance(copy_bytes_per_s, (int, float)) and copy_bytes_per_s > 0):
            raise ValueError(f"workload: copy_bytes_per_s = {copy_bytes_per_s!r} must be > 0")
        self.call_s, self.rate = float(call_s), float(copy_bytes_per_s)
        self.t = 0.0
        self.rows: list[tuple] = []
        self.fallback: list[bool] = []

    def add(self, kind: Kind, file: int, offset: int = 0, size: int = 0, chunk: int = 0, direct: bool = False, at=None,
            fallback: bool = False, op_s: float = 0.0):
        calls = max(1, -(-size // chunk)) if chunk else 1
        self.rows.append((self.t if at is None else at, int(kind), file, offset, size, chunk or size, direct))
        self.fallback.append(fallback)
        self.t += op_s + calls * self.call_s + (0.0 if direct else size / self.rate)

    def build(self, dir_of_file, initial_bytes, sync_at_end: bool) -> FileOps:
        if sync_at_end:
            self.add(Kind.SYNC, -1)
        cols = list(zip(*self.rows)) if self.rows else [[]] * 7
        dtypes = (np.float64, np.int8, np.int64, np.int64, np.int64, np.int64, bool)
        arrays = [np.asarray(c, dtype=d) for c, d in zip(cols, dtypes)]
        return FileOps(*arrays, np.asarray(dir_of_file, np.int64), np.asarray(initial_bytes, np.int64),
                       np.asarray(self.fallback, bool), end_s=self.t)


def _whole(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"workload: {name} = {value!r} must be an integer >= {minimum}")
    return int(value)


class _Uniform:
    """Integers uniform on ``lo .. hi-1`` from numpy's generator, drawn in blocks (one numpy call per
    draw would cost more than the whole model of a draw)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.buf: list[float] = []

    def integers(self, lo: int, hi: int) -> int:
        if not self.buf:
            self.buf = self.rng.random(65536).tolist()
        return lo + int(self.buf.pop() * (hi - lo))


#: Seconds per file operation (see the module docstring).
FILE_OP_S = 250e-6
#: Seconds per system call, and the page cache's copy rate [bytes/s]: every workload's defaults.
CALL_S = 2e-6
COPY_BYTES_PER_S = 2e9


def postmark(config, *, call_s: float = CALL_S, copy_bytes_per_s: float = COPY_BYTES_PER_S, file_op_s: float = FILE_OP_S,
             sync_at_end: bool = True) -> FileOps:
    """PostMark 1.5 on ``config`` (a :class:`diskmodel.model.predictions.workload.PostMarkConfig`)."""
    rng = _Uniform(config.seed)
    low, high = config.min_file_size_bytes, config.max_file_size_bytes
    # stdio buffers a buffered PostMark's calls into st_blksize (4 KiB) pieces.
    rchunk = 4096 if config.buffered_io else config.read_block_size_bytes
    wchunk = 4096 if config.buffered_io else config.write_block_size_bytes
    nsub = max(config.subdirectories, 1)
    b = _Builder(call_s, copy_bytes_per_s, file_op_s)
    size: list[int] = []
    dirs: list[int] = []
    live: list[int] = []  # live file numbers; a slot array with swap-remove keeps picks O(1)
    pos: dict[int, int] = {}

    def create():
        f = len(size)
        s = int(low + rng.integers(0, high - low)) if high > low else low
        size.append(s)
        dirs.append((rng.integers(0, nsub)) if nsub > 1 else 0)
        pos[f] = len(live)
        live.append(f)
        b.add(Kind.CREATE, f, op_s=file_op_s)
        if s:
            b.add(Kind.WRITE, f, 0, s, wchunk)

    def delete(f):
        i = pos.pop(f)
        last = live.pop()
        if last != f:
            live[i] = last
            pos[last] = i
        b.add(Kind.DELETE, f, op_s=file_op_s)

    for _ in range(config.number_of_files):
        create()
    cap = 2 * config.number_of_files
    for _ in range(config.transactions):
        if not live:
            raise ValueError("workload: transactions: PostMark ran out of files (every file was deleted)")
        f = live[(rng.integers(0, len(live)))]
        if rng.integers(0, 10) < config.read_bias:
            b.add(Kind.READ, f, 0, size[f], rchunk, op_s=file_op_s)
        else:
            gap = high - size[f]
            if gap > 0:
                n = (rng.integers(1, gap + 1))
                b.add(Kind.WRITE, f, size[f], n, wchunk, op_s=file_op_s)
                size[f] += n
        if rng.integers(0, 10) < config.create_bias:
            if len(live) < cap:
                create()
        else:
            delete(live[(rng.integers(0, len(live)))])
    for f in list(live):
        delete(f)
    return b.build(dirs, np.zeros(len(size), np.int64), sync_at_end)


#: fio's rw values (fio(1), "readwrite"): the mixed ones (rw, readwrite, randrw) read ``rwmixread`` percent.
FIO_RW = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw")
FIO_MIXED = ("rw", "readwrite", "randrw")


def random_map_order(n: int, blocks: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` block indices of a random job over ``blocks`` blocks, as fio's random map deals them (on unless
    ``norandommap``: no block twice before every block once): whole passes a permutation each, a last
    partial pass drawn without replacement (which needs no array of the region's every block)."""
    passes = [rng.permutation(blocks) for _ in range(n // blocks)]
    if n % blocks:
        passes.append(rng.choice(blocks, n % blocks, replace=False))
    return np.concatenate(passes).astype(np.int64) if passes else np.zeros(0, np.int64)


def fio(rw: str, bs: int, size: int, *, io_size: int | None = None, rwmixread: int = 50, iodepth: int = 1,
        direct: bool = False, fsync: int = 0, seed: int = 1, call_s: float = CALL_S,
        copy_bytes_per_s: float = COPY_BYTES_PER_S, sync_at_end: bool = True) -> FileOps:
    """One fio job on a new file of ``size`` bytes, moving ``io_size`` bytes (default ``size``; a
    sequential job starts over at the file's start, a random one follows fio's random map); a job that
    reads lays its file out first (written, fsynced and dropped from the cache, as fio does before
    reading). A mixed job (rw, readwrite, randrw) reads ``rwmixread`` percent of its requests, each
    drawn at random (seeded), as fio's rwmix does. The file is fallocated over its size first, as fio
    creates it (fallocate=native)."""
    if rw not in FIO_RW:
        raise ValueError(f"workload: rw = {rw!r} must be one of {', '.join(FIO_RW)}")
    bs = _whole("bs", bs, 1)
    size = _whole("size", size, bs)
    io_size = size if io_size is None else _whole("io_size", io_size, bs)
    rwmixread = _whole("rwmixread", rwmixread, 0)
    if rwmixread > 100:
        raise ValueError(f"workload: rwmixread = {rwmixread} must be a percentage, 0..100")
    iodepth = _whole("iodepth", iodepth, 1)
    fsync = _whole("fsync", fsync, 0)
    if direct and bs % 512:
        raise ValueError(f"workload: bs = {bs} must be a multiple of 512 with direct=1")
    n, blocks = io_size // bs, size // bs
    rng = np.random.default_rng(seed)
    order = random_map_order(n, blocks, rng) if rw.startswith("rand") else np.arange(n, dtype=np.int64) % blocks
    if rw in FIO_MIXED:
        reads = np.random.default_rng(seed + 1).random(n) < rwmixread / 100
    else:
        reads = np.full(n, rw.endswith("read"))
    b = _Builder(call_s, copy_bytes_per_s)
    b.add(Kind.CREATE, 0)
    # fio creates the job's file with fallocate(2) over its size before any I/O (filesetup.c, extend_file:
    # fallocate=native, its default on Linux, falling back to nothing where the file system refuses)
    b.add(Kind.FALLOCATE, 0, 0, size)
    laid_out = 0
    if rw.startswith("rand") and not direct:
        # fio's fadvise_hint=1 (its default): POSIX_FADV_RANDOM on a random job's file (fio(1))
        b.add(Kind.RANDOM, 0)
    if reads.any():
        # fio lays a job's file out (written whole) before it reads, then drops it from the cache (invalidate=1).
        b.add(Kind.WRITE, 0, 0, size, min(bs, 1 << 20))
        b.add(Kind.FSYNC, 0)
        b.add(Kind.DROP, 0)
        laid_out = len(b.rows)  # fio's figures count the job alone
    writes = 0
    for i, (blk, is_read) in enumerate(zip(order.tolist(), reads.tolist())):
        # A batch of iodepth requests goes out at one instant (io_submit of the queue's fill).
        at = b.rows[-1][0] if (iodepth > 1 and i % iodepth and b.rows) else None
        b.add(Kind.READ if is_read else Kind.WRITE, 0, blk * bs, bs, bs, direct, at=at)
        if not is_read:
            writes += 1
            if fsync and writes % fsync == 0:
                b.add(Kind.FSYNC, 0)
    return replace(b.build([0], [0], sync_at_end), timed_from=laid_out)


def copy(size: int, *, chunk_bytes: int = 128 * 1024, call_s: float = CALL_S, copy_bytes_per_s: float = COPY_BYTES_PER_S,
         sync_at_end: bool = True) -> FileOps:
    """``cp`` of a ``size``-byte file (file 0, on the device) to a new file (file 1)."""
    size = _whole("size", size, 1)
    chunk_bytes = _whole("chunk_bytes", chunk_bytes, 1)
    b = _Builder(call_s, copy_bytes_per_s)
    b.add(Kind.CREATE, 1)
    b.add(Kind.CLONE, 1, 0, size)
    for off in range(0, size, chunk_bytes):
        n = min(chunk_bytes, size - off)
        b.add(Kind.READ, 0, off, n, chunk_bytes, fallback=True)
        b.add(Kind.WRITE, 1, off, n, chunk_bytes, fallback=True)
    return b.build([0, 0], [size, 0], sync_at_end)


def metadata(op: str, files: int, *, file_bytes: int = 0, call_s: float = CALL_S, copy_bytes_per_s: float = COPY_BYTES_PER_S,
             file_op_s: float = FILE_OP_S, sync_at_end: bool = True) -> FileOps:
    """``op`` (create, stat or delete) of ``files`` files of ``file_bytes`` each in one directory; a
    stat or delete finds the files already on the device, their inodes not cached."""
    if op not in ("create", "stat", "delete"):
        raise ValueError(f"workload: op = {op!r} must be create, stat or delete")
    files = _whole("files", files, 1)
    file_bytes = _whole("file_bytes", file_bytes, 0)
    b = _Builder(call_s, copy_bytes_per_s, file_op_s)
    for f in range(files):
        if op == "create":
            b.add(Kind.CREATE, f, op_s=file_op_s)
            if file_bytes:
                b.add(Kind.WRITE, f, 0, file_bytes, file_bytes)
        else:
            b.add(Kind.STAT if op == "stat" else Kind.DELETE, f, op_s=file_op_s)
    initial = np.zeros(files, np.int64) if op == "create" else np.full(files, file_bytes, np.int64)
    return b.build(np.zeros(files, np.int64), initial, sync_at_end)


def least_bytes_held(ops: FileOps) -> int:
    """A lower bound of the bytes the workload's files hold at once [bytes]: the files there at the start
    together, or the furthest any one file is written to, whichever is more (a sparse file's holes and a
    deleted file's space are not counted, so a workload above it cannot fit a volume of that size)."""
    writes = (ops.kind == Kind.WRITE) | (ops.kind == Kind.FALLOCATE)
    files = max(int(ops.file.max(initial=-1)) + 1, int(ops.initial_bytes.size))
    end = np.zeros(files, dtype=np.int64)
    np.maximum.at(end, ops.file[writes], ops.offset_bytes[writes] + ops.size_bytes[writes])
    end[:ops.initial_bytes.size] = np.maximum(end[:ops.initial_bytes.size], ops.initial_bytes)
    return int(max(int(ops.initial_bytes.sum()), int(end.max(initial=0))))


def resolve_clones(ops: FileOps, reflink: bool) -> FileOps:
    """``ops`` on a file system that grants clones (``reflink``: drop the fallback ops) or not (drop
    the clones)."""
    if ops.fallback is None:
        return ops
    keep = ~ops.fallback if reflink else ops.kind != Kind.CLONE
    return replace(ops.take(keep), fallback=None)


#: Workload names ``diskmodel iopath --workload`` accepts, with their generator.
WORKLOADS = ("postmark", "fio", "copy", "metadata")
