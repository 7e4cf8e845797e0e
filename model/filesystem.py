"""File-system access time, eq. (1) of Djordjevic & Timcenko (2015)::

    T_FSA = T_DO + T_MO + T_FL + T_DFA + T_J                          (1)

for a PostMark workload (:mod:`diskmodel.model.workload`) on an ext2/ext3
file system made on a volume placed on its disk
(:class:`diskmodel.model.volume_on_disk.VolumeOnDisk`), in terms of the
cache service time (eq. 2, :mod:`diskmodel.model.cache`) and the disk
service time (eqs. 3-8) of requests in the volume's regions, which is all
this layer asks of the layers below.  Which I/Os each term issues is
:mod:`diskmodel.model.filesystem_terms`.

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

from dataclasses import dataclass

from ._checks import evolve as _evolve
from ._checks import finite_scalar, flag, one_of, show, whole_number
from .filesystem_terms import FsaResult, evaluate_io, plan_io
from .volume_on_disk import VolumeOnDisk
from .workload import as_counts
from .units import KIB, MIB


@dataclass(frozen=True)
class FileSystem:
    """An ext2/ext3 file system's parameters for eq. (1).

    Attributes
    ----------
    kind : str
        "ext2" (no journal) or "ext3".
    journal_mode : str
        ext3's ``data=``: "ordered" (default), "writeback" or "journal".
    block_size_bytes : int
        B [bytes]: 1024, 2048 or 4096.
    inode_size_bytes : int
        [bytes]: 128 or 256 (mke2fs of 2008 defaulted to 256).
    commit_interval_s : float
        ext3 ``commit=`` [s], > 0 (default 5).
    writeback_interval_s : float
        Age at which dirty pages and checkpointed metadata are written home
        (``dirty_expire_centisecs``, 30 s) [s], > 0.
    journal_size_bytes : int
        [bytes] (mke2fs: 128 MiB for file systems of this size).
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
        :meth:`diskmodel.model.volume_on_disk.VolumeOnDisk.mapping_overhead_s`).  The terms of eq. (1) are
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
    journal_mode: str = "ordered"
    block_size_bytes: int = 4096
    inode_size_bytes: int = 256
    commit_interval_s: float = 5.0
    writeback_interval_s: float = 30.0
    journal_size_bytes: int = 128 * MIB
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

    def __post_init__(self):
        one_of("kind", self.kind, ("ext2", "ext3"))
        one_of("journal_mode", self.journal_mode, ("ordered", "writeback", "journal"))
        block = one_of("block_size_bytes", whole_number("block_size_bytes", self.block_size_bytes, minimum=1),
                       (1024, 2048, 4096))
        object.__setattr__(self, "block_size_bytes", block)
        object.__setattr__(self, "inode_size_bytes", one_of(
            "inode_size_bytes", whole_number("inode_size_bytes", self.inode_size_bytes, minimum=1),
            (128, 256, 512, 1024)))
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
        return self.kind == "ext3"

    @property
    def blocks_per_group(self) -> int:
        return 8 * self.block_size_bytes

    @property
    def group_bytes(self) -> int:
        return self.blocks_per_group * self.block_size_bytes

    @property
    def data_flush_interval_s(self) -> float:
        """How often dirty file data reach the disk [s]."""
        if self.journaled and self.journal_mode in ("ordered", "journal"):
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
