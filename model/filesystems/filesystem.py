"""File-system access time, eq. (1) of Djordjevic & Timcenko (2015)::

    T_FSA = T_DO + T_MO + T_FL + T_DFA + T_J                          (1)

for a PostMark workload (:mod:`diskmodel.model.predictions.workload`) on an ext2, ext3,
ext4, xfs or btrfs file system (:mod:`diskmodel.model.filesystems.kinds` holds what
each kind can be and its defaults) made on a volume placed on its disk
(:class:`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk`), in terms of the
cache service time (eq. 2, :mod:`diskmodel.model.filesystems.cache`) and the disk
service time (eqs. 3-8) of requests in the volume's regions, which is all
this layer asks of the layers below.  Which I/Os each term issues is
:mod:`diskmodel.model.filesystems.terms`.

Elapsed time: by default (the serial model) the sum of the five terms, plus
the time the volume below spends remapping the I/O (LVM, eq. 12).
With ``FileSystem(overlapped_writeback=True)`` (the pipeline model) the
same I/O is split into three stages -- application (CPU, memory copies and
the synchronous reads that miss the cache), media (positioning, media
transfer and command overhead of all disk I/O) and link (host-side transfer
T_I of all disk I/O, and the remapping) -- and the run takes as long as the
busiest one, because PostMark's writes reach the disk asynchronously (no
fsync) while it runs.  :attr:`FsaResult.stages` keeps the busy times.

The elapsed time depends on itself through the number of commits and
flushes (coalescing); :func:`file_system_access_time` solves that fixed point
E = f(E) with brentq (f grows with E with a slope far below 1, so the
fixed point is unique).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .._checks import evolve as _evolve
from .._checks import finite_scalar, flag, one_of, show, whole_number
from .terms import FsaResult, evaluate_io, plan_io
from .kinds import CHOICES, DEFAULTS, KINDS, check_kind
from ..stacks.volume_on_disk import VolumeOnDisk
from ..predictions.workload import as_counts
from ..units import KIB, MIB


@dataclass(frozen=True)
class FileSystem:
    """A file system's parameters for eq. (1): ext2, ext3, ext4, xfs or btrfs.

    Parameters left None take the kind's default
    (:data:`diskmodel.model.filesystems.kinds.DEFAULTS`, from today's mkfs and mount
    defaults; the defaults of ext2 and ext3 are the model's of the paper's
    era, unchanged), and a value the kind cannot take is refused naming the
    field, the value and the kind (:data:`diskmodel.model.filesystems.kinds.CHOICES`).

    Attributes
    ----------
    kind : str
        "ext2" (no journal), "ext3", "ext4", "xfs" or "btrfs".
    journal_mode : str
        ext3/ext4 ``data=``: "ordered" (default), "writeback" or "journal"
        (ext4 also "none": made with ``-O ^has_journal``); ext2 "none"; xfs
        "metadata" (its log holds metadata only); btrfs "cow" (no journal:
        each transaction commit writes the changed tree blocks to new places).
    block_size_bytes : int
        B [bytes]: 1024, 2048 or 4096 (ext; xfs up to 65536; btrfs 4096,
        its sector size).
    inode_size_bytes : int
        [bytes]: ext 128-1024 (default 256), xfs 512-2048 (default 512),
        btrfs 160 (an inode item in a B-tree leaf).
    commit_interval_s : float
        How often the journal commits [s], > 0: ext3/ext4 ``commit=`` (5),
        xfs's log force (``xfssyncd_centisecs``, 30), btrfs ``commit=`` (30).
    writeback_interval_s : float
        Age at which dirty pages and checkpointed metadata are written home
        (``dirty_expire_centisecs``, 30 s) [s], > 0.
    journal_size_bytes : int
        [bytes] (mke2fs: 128 MiB for file systems of the paper's size; the
        xfs log 64 MiB; btrfs: the metadata block group its commits write
        to, 256 MiB).
    journal_offset_fraction : float
        Where the journal starts, as a fraction of the file system [0..1)
        (ext3 of the paper's era places it early; default 0.0).
    atime_updates : bool
        Reads dirty the inode (atime; relatime still updates after writes).
    dir_index : bool
        Hashed directories (an index block per directory update).
    allocation_spread : float
        Active region = spread * live file bytes (plus one block group) [>= 1].
    max_request_bytes : int
        Largest request of sequential write-back [bytes] (``max_sectors_kb``).
    reuse_freed_space : bool
        Creates during the transactions fill blocks freed by deletes, at
        random places of the active region (True), or are all allocated in
        fresh, consecutive space (False).  The creation phase always writes
        fresh space.
    cpu_per_file_operation_s : float
        CPU time of the file-system code per file operation (create, delete,
        open for read or append: path lookup, inode and directory handling,
        journal bookkeeping) [s], >= 0; charged to T_DO as cache-side time.
    overlapped_writeback : bool
        How the run's elapsed time is composed from the I/O.  False (the
        serial model): elapsed = the sum of every term's disk and cache time
        (eq. 1 read literally).  True (the pipeline model): PostMark never
        calls fsync, so written data and metadata reach the disk
        asynchronously (page cache -> write-back/commit threads -> host link
        -> drive write cache -> media) while the application runs; only
        reads that miss the cache block it.  In steady state the run then
        takes as long as its busiest stage:
        elapsed = max(application, media, link), where application = CPU and
        memory copies (cache_s) + the full service of synchronous reads,
        media = positioning, media transfer and command overhead of every
        disk I/O (reads and writes), and link = the host-side transfer time
        T_I (eq. 3, size / ``disk.interface_rate_bytes_per_s``) of every disk
        I/O, the file-data path's per-byte cost (``file_data_rate_bytes_per_s``),
        plus any host-side per-I/O cost added by a layer below the file
        system (the LVM mapping cost,
        :meth:`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk.mapping_overhead_s`).  The terms of eq. (1) are
        still each term's busy time; their sum exceeds the elapsed time by
        the overlap.
    file_data_rate_bytes_per_s : float or None
        Host-side rate of the file-data path [bytes/s], > 0: every byte of
        file data moved between the page cache and the disk (T_DFA: reads
        that miss, write-back of data blocks) costs 1 / rate on the link
        stage in addition to its interface time T_I.  It stands for the
        host's per-byte work on file data that eq. (3) does not name (in the
        paper's 2.6.27 ext3 ``data=ordered``, data pages are flushed buffer
        by buffer ahead of each commit); metadata and journal blocks, which
        JBD writes as whole blocks in batches, do not pay it.  A paper
        rarely reports it, so it is fitted on native runs
        (:func:`diskmodel.model.fit.postmark.fit_io_parameters`).  None (the
        default): no such cost.
    extents : bool
        Files map their blocks by extents held in the inode (ext4, xfs,
        btrfs) instead of indirect blocks (ext2, ext3): no indirect block is
        read or written.
    delayed_allocation : bool
        Blocks are allocated when dirty data are written back, not at
        write() (ext4 ``delalloc``, xfs, btrfs): a flush's new files get
        consecutive free space (creates are written as sequential runs, not
        into the holes deletes left), and ``data=ordered`` commits have no
        data to flush (data go at the write-back interval).
    allocation_groups : int or None
        xfs ``agcount`` (default 4): a directory's files are allocated in
        its allocation group, so the active region is at most one group.
        None for the other kinds.
    metadata_copies : int
        Copies of every metadata block written (btrfs ``-m dup``: 2; 1 for
        the others).
    metadata_node_bytes : int or None
        btrfs B-tree node size (``-n``, 16 KiB): the unit metadata is read,
        dirtied and written in.  None for the other kinds (their unit is the
        block).
    data_checksums : bool
        btrfs data checksums (crc32c, 4 bytes per block in the checksum
        tree, updated with every data write).
    copy_on_write : bool
        btrfs: rewritten data go to new places (with delayed allocation, as
        new files do).
    inline_data_max_bytes : int
        Files up to this size keep their data in the metadata (btrfs
        ``max_inline``, 2048; ext4 ``-O inline_data``; 0 for the rest):
        they have no data blocks, and their bytes are written as metadata.
    commit_overhead_s : float
        Time each journal commit (and each fsync) costs beyond the blocks
        it writes [s], >= 0: the cache flush and FUA write the commit
        block waits for, and the journal thread's work.  A paper does not
        report it; it is fitted per kind
        (:mod:`diskmodel.model.fit.filesystems`).  Default 0.
    write_reorder_depth : int or None
        Writes the drive may hold and reorder in its write cache [count].
        None: as many as fit ``disk.cache_size_bytes`` (write caching is on
        by default on ATA drives); 1: write cache off.  Of q held writes the
        drive serves the one of shortest positioning time first, so a
        write's seek + rotational latency within a batch shrinks to about
        1/(q + 1) of its random value (the minimum of q + 1 uniform draws).
        (A property of the disk's setup, kept here with the other what-ifs
        of the I/O path.)
    """

    kind: str = "ext3"
    journal_mode: str | None = None
    block_size_bytes: int = 4096
    inode_size_bytes: int | None = None
    commit_interval_s: float | None = None
    writeback_interval_s: float = 30.0
    journal_size_bytes: int | None = None
    journal_offset_fraction: float = 0.0
    atime_updates: bool = True
    dir_index: bool = True
    allocation_spread: float = 1.5
    max_request_bytes: int = 512 * KIB
    write_reorder_depth: int | None = None
    cpu_per_file_operation_s: float = 0.0
    file_data_rate_bytes_per_s: float | None = None
    reuse_freed_space: bool = True
    overlapped_writeback: bool = False
    extents: bool | None = None
    delayed_allocation: bool | None = None
    allocation_groups: int | None = None
    metadata_copies: int | None = None
    metadata_node_bytes: int | None = None
    data_checksums: bool | None = None
    copy_on_write: bool | None = None
    inline_data_max_bytes: int | None = None
    commit_overhead_s: float = 0.0

    def __post_init__(self):
        kind = one_of("kind", self.kind, KINDS)
        for name, default in DEFAULTS[kind].items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        check_kind(kind, {f: getattr(self, f) for f in CHOICES})  # first: its message names the kind
        block = whole_number("block_size_bytes", self.block_size_bytes, minimum=1)
        object.__setattr__(self, "block_size_bytes", block)
        object.__setattr__(self, "inode_size_bytes", whole_number("inode_size_bytes", self.inode_size_bytes,
                                                                  minimum=1))
        for name in ("extents", "delayed_allocation", "data_checksums", "copy_on_write"):
            flag(name, getattr(self, name))
        object.__setattr__(self, "metadata_copies", whole_number("metadata_copies", self.metadata_copies, minimum=1))
        object.__setattr__(self, "inline_data_max_bytes", whole_number(
            "inline_data_max_bytes", self.inline_data_max_bytes, minimum=0))
        for name in ("allocation_groups", "metadata_node_bytes"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, whole_number(name, getattr(self, name), minimum=1))
        finite_scalar("commit_overhead_s", self.commit_overhead_s, nonnegative=True)
        finite_scalar("commit_interval_s", self.commit_interval_s, positive=True)
        finite_scalar("writeback_interval_s", self.writeback_interval_s, positive=True)
        object.__setattr__(self, "journal_size_bytes", whole_number(
            "journal_size_bytes", self.journal_size_bytes, minimum=1024 * block))
        fraction = finite_scalar("journal_offset_fraction", self.journal_offset_fraction, nonnegative=True)
        if fraction >= 1:
            raise ValueError(f"journal_offset_fraction must lie in [0, 1) (got {show(self.journal_offset_fraction)})")
        for name in ("atime_updates", "dir_index", "reuse_freed_space", "overlapped_writeback"):
            flag(name, getattr(self, name))
        if finite_scalar("allocation_spread", self.allocation_spread) < 1:
            raise ValueError(f"allocation_spread must be >= 1 (got {show(self.allocation_spread)})")
        object.__setattr__(self, "max_request_bytes", whole_number(
            "max_request_bytes", self.max_request_bytes, minimum=block))
        finite_scalar("cpu_per_file_operation_s", self.cpu_per_file_operation_s, nonnegative=True)
        if self.file_data_rate_bytes_per_s is not None:
            finite_scalar("file_data_rate_bytes_per_s", self.file_data_rate_bytes_per_s, positive=True)
        if self.write_reorder_depth is not None:
            object.__setattr__(self, "write_reorder_depth",
                               whole_number("write_reorder_depth", self.write_reorder_depth, minimum=1))

    @property
    def journaled(self) -> bool:
        """The file system commits transactions (a journal, xfs's log, or btrfs's copy-on-write commits)."""
        return self.journal_mode != "none"

    @property
    def metadata_unit_bytes(self) -> int:
        """The unit metadata is read, dirtied and written in [bytes]: a B-tree node (btrfs) or a block."""
        return self.block_size_bytes if self.metadata_node_bytes is None else self.metadata_node_bytes

    @property
    def blocks_per_group(self) -> int:
        return 8 * self.block_size_bytes

    @property
    def group_bytes(self) -> int:
        return self.blocks_per_group * self.block_size_bytes

    @property
    def data_flush_interval_s(self) -> float:
        """How often dirty file data reach the disk [s]."""
        if self.journal_mode in ("ordered", "journal") and not self.delayed_allocation:
            return self.commit_interval_s
        return self.writeback_interval_s

    def evolve(self, **changes) -> "FileSystem":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


@dataclass(frozen=True)
class PageCache:
    """The operating system's page cache, for eq. (2).

    Attributes
    ----------
    size_bytes : float
        Memory the page cache can give the workload [bytes], >= 0.
    rate_bytes_per_s : float
        R_CT, the memory copy rate of a hit or of a write into the cache [bytes/s], > 0.
    syscall_s : float
        CPU cost of one read()/write() call (or stdio call) [s], >= 0.
    """

    size_bytes: float = 256 * MIB
    rate_bytes_per_s: float = 1.0e9
    syscall_s: float = 1.0e-6

    def __post_init__(self):
        finite_scalar("size_bytes", self.size_bytes, nonnegative=True)
        finite_scalar("rate_bytes_per_s", self.rate_bytes_per_s, positive=True)
        finite_scalar("syscall_s", self.syscall_s, nonnegative=True)

    def evolve(self, **changes) -> "PageCache":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


def file_system_access_time(volume: VolumeOnDisk, fs: FileSystem, workload,
                            cache: PageCache | None = None) -> FsaResult:
    """T_FSA (eq. 1) of a PostMark run [s], with every term's I/O spelled out.

    Parameters
    ----------
    volume : VolumeOnDisk
        The volume the file system is made on, placed on its disk, with the
        volume's mapping costs (whose time counts towards the elapsed time
        driving the number of commits: to the sum of the terms in the serial
        model, to the link stage in the pipeline model).
    fs : FileSystem
    workload : PostMarkConfig or PostMarkCounts
        The run (its expected counts come from :func:`expected_counts`).
    cache : PageCache
        Default ``PageCache()``.

    Notes
    -----
    The fixed point is ``details["elapsed_s"]``.
    """
    if cache is None:
        cache = PageCache()
    if not isinstance(volume, VolumeOnDisk):
        raise ValueError(f"volume must be a VolumeOnDisk (got {type(volume).__name__})")
    if not isinstance(fs, FileSystem):
        raise ValueError(f"fs must be a FileSystem (got {type(fs).__name__})")
    if not isinstance(cache, PageCache):
        raise ValueError(f"cache must be a PageCache (got {type(cache).__name__})")
    counts = as_counts(workload)
    plan = plan_io(volume, fs, counts, cache)

    def elapsed_for(guess):
        result = evaluate_io(plan, guess)
        if fs.overlapped_writeback:
            return result, result.pipeline_s(result.mapping_s)
        return result, result.total_s + result.mapping_s

    # f(E) grows with E (more commits and flushes, less coalescing) with a
    # slope well below 1 (a commit costs milliseconds, an interval seconds):
    # bracket the fixed point E = f(E) from below at E -> 0 and double upwards.
    from scipy.optimize import brentq

    low = 1e-6
    _, f_low = elapsed_for(low)
    high = max(2.0 * f_low, 1.0)
    for _ in range(60):
        if elapsed_for(high)[1] < high:
            break
        high *= 2.0
    else:  # pragma: no cover - would need a commit costing more than its interval
        raise ValueError("the elapsed time diverges: every commit costs more than commit_interval_s")
    root = brentq(lambda e: elapsed_for(e)[1] - e, low, high, xtol=1e-6, rtol=1e-10)
    result, _ = elapsed_for(root)
    result.details["elapsed_s"] = root
    return result


#: A synchronous write's journal traffic, per kind (:func:`synchronous_write_time_s`).
_LOG_ITEM_OVERHEAD_BYTES = 512 + 128  # an xfs log record header + the inode log item's format headers


def _journal_requests_bytes(fs: FileSystem, data_bytes: float) -> list[float]:
    """The writes one fsync() of an overwrite makes besides the data [bytes each], in order.

    ext2: the inode block (written in place).  ext3/ext4 (JBD2): the
    descriptor block with the inode's block (and the data under
    ``data=journal``), then the commit block after a cache flush.  xfs: one
    log write holding the inode's log item, in whole blocks.  btrfs: the
    log tree's leaf and the log root tree's leaf, each ``metadata_copies``
    times, then the superblock.
    """
    B = fs.block_size_bytes
    if fs.journal_mode == "none":
        return [float(B)]
    if fs.journal_mode == "metadata":
        return [float(math.ceil((fs.inode_size_bytes + _LOG_ITEM_OVERHEAD_BYTES) / B) * B)]
    if fs.journal_mode == "cow":
        return [float(fs.metadata_unit_bytes)] * (2 * fs.metadata_copies) + [4096.0]
    first = 2.0 * B + (data_bytes if fs.journal_mode == "journal" else 0.0)
    return [first, float(B)]


def synchronous_write_time_s(volume: VolumeOnDisk, fs: FileSystem, request_bytes: float) -> dict:
    """One write() of *request_bytes* over a file's allocated blocks, then fsync() (fio ``--fsync=1``) [s].

    Returns ``data_s`` (the data: a random write in the volume, at a new
    place under copy-on-write, which costs the same), ``journal_s`` (the
    writes :func:`_journal_requests_bytes` lists, each a request of its own
    in the journal's region: a commit waits for each before the next) and
    ``overhead_s`` (``fs.commit_overhead_s``), and ``total_s``.
    """
    if not isinstance(volume, VolumeOnDisk):
        raise ValueError(f"volume must be a VolumeOnDisk (got {type(volume).__name__})")
    if not isinstance(fs, FileSystem):
        raise ValueError(f"fs must be a FileSystem (got {type(fs).__name__})")
    size = finite_scalar("request_bytes", request_bytes, positive=True)
    data = float(volume.region(0, None).batch_service_time(1, size, is_write=True).total_s)
    start = int(fs.journal_offset_fraction * volume.size_bytes)
    journal = volume.region(start, min(fs.journal_size_bytes, volume.size_bytes - start))
    journal_s = sum(float(journal.batch_service_time(1, b, is_write=True).total_s)
                    for b in _journal_requests_bytes(fs, size))
    return {"data_s": data, "journal_s": journal_s, "overhead_s": fs.commit_overhead_s,
            "total_s": data + journal_s + fs.commit_overhead_s}


def sequential_write_time_s(volume: VolumeOnDisk, fs: FileSystem, file_bytes: float,
                            cache: PageCache | None = None) -> dict:
    """Writing a new file of *file_bytes* sequentially through the page cache, then fsync() (fio ``--end_fsync=1``) [s].

    Returns ``copy_s`` (the copy into the page cache at R_CT), ``data_s``
    (one positioning, the transfer, a command per ``max_request_bytes``,
    and the file-data path's cost per byte, ``file_data_rate_bytes_per_s``),
    ``metadata_s`` (indirect blocks, one per B/4 blocks, without extents;
    btrfs's checksums, 4 bytes a block, times ``metadata_copies``; the
    bitmap or free-space blocks; written as one sequential batch),
    ``overhead_s`` (one commit) and ``total_s``.
    """
    if cache is None:
        cache = PageCache()
    if not isinstance(volume, VolumeOnDisk):
        raise ValueError(f"volume must be a VolumeOnDisk (got {type(volume).__name__})")
    if not isinstance(fs, FileSystem):
        raise ValueError(f"fs must be a FileSystem (got {type(fs).__name__})")
    size = finite_scalar("file_bytes", file_bytes, positive=True)
    B = fs.block_size_bytes
    blocks = math.ceil(size / B)
    region = volume.region(0, min(volume.size_bytes, max(int(size), B)))
    piece = region.batch_service_time(1, float(fs.max_request_bytes), is_write=True)
    pieces = math.ceil(size / fs.max_request_bytes)
    data = float(piece.access_s) + pieces * float(piece.command_overhead_s) + size * (
        float(piece.transfer_s + piece.interface_s) / fs.max_request_bytes)
    if fs.file_data_rate_bytes_per_s is not None:
        data += size / fs.file_data_rate_bytes_per_s
    meta_bytes = math.ceil(blocks / (8 * B)) * B  # allocation bitmaps / free-space records
    if not fs.extents:
        meta_bytes += math.ceil(blocks / (B // 4)) * B
    if fs.data_checksums:
        meta_bytes += math.ceil(blocks * 4 / fs.metadata_unit_bytes) * fs.metadata_unit_bytes * fs.metadata_copies
    metadata = float(region.batch_service_time(1, float(meta_bytes), is_write=True).total_s)
    copy = size / cache.rate_bytes_per_s
    return {"copy_s": copy, "data_s": data, "metadata_s": metadata, "overhead_s": fs.commit_overhead_s,
            "total_s": copy + data + metadata + fs.commit_overhead_s}
