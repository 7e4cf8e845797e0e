"""The page cache: which file reads and writes reach the file system's mapping, and when.

Input: a workload's :class:`~.fileops.FileOps`. Output (:class:`CacheResult`): another ``FileOps``
whose reads and writes are the cache's misses and write-backs, in file offsets (the file system maps
them to the device), with the metadata operations passed through for the file system; ``sync``
marks the writes a caller waits for (fsync, sync, direct I/O: ``REQ_SYNC``). A write-back's
``chunk_bytes`` is the smallest write call that dirtied the file: the size of the folios the
cache made for it, which bounds how much one bio can carry.

What it follows (mm/filemap.c, mm/readahead.c, mm/page-writeback.c, fs/fs-writeback.c):

- **Pages** of ``page_bytes``; a file's cached and dirty pages are sets of page runs; a write of part of a
  page inside the file's old size whose page is not cached reads it first (write_begin).
- **Read-ahead** (ondemand_readahead): a read continuing where the file's last read ended (or
  starting at 0) is sequential: its first window is get_init_ra_size of the call's pages
  (``4x`` the call rounded up to a power of two when that is at most ``max/32``, ``2x`` up to ``max/4``,
  else ``max``), each next one get_next_ra_size of the last (``4x`` below ``max/16``, ``2x`` up
  to ``max/2``, else ``max``), with ``max`` = ``read_ahead_kb``; windows stop at end of file, and
  one more is issued when a read enters the last window (the async read-ahead). Any other read
  reads just its missing pages. Cached pages inside a window are skipped. A call larger than
  ``read_ahead_kb`` reads ahead up to the call's size, at most the device's largest request
  (``io_kb``: ondemand_readahead raises ``max_pages`` to ``min(req_size, bdi->io_pages)``), so
  ``dd bs=1M`` reads 1 MiB windows. The async window is issued when the reader reaches the mark
  (PG_readahead) of the window before (page_cache_async_ra), not read by the call that issues it,
  at an instant of its own, listed in ``CacheResult.async_read``. A window is marked where
  ondemand_readahead puts ``start + size - async_size``: an async window at its first page, so the
  call that reaches it issues the next before it waits (``ASYNC_DELAY_S`` before its instant); a
  synchronous window that reaches past its call at the first page after the call (the next call
  issues the async window); one its call takes whole at its middle (readit: the read would hit its
  own mark, ``async_size = max_pages / 2``), so the async window goes out once the reader has copied
  half of it (``ASYNC_DELAY_S`` and that share of the call's time after its instant). The reader
  waits for an async window at the first later call that copies any of its pages
  (``CacheResult.async_waits``; :mod:`~diskmodel.model.iopath.timing`). An op of many calls
  (``chunk_bytes`` below its size) issues each window at the instant of the call that reaches it, a
  nanosecond a call, so the queue does not merge windows of different calls; one call's windows go
  out together.
- **Dirty data and write-back**: each file records when it became dirty (inode dirtied_when). Every
  ``writeback_interval_s`` (``dirty_writeback_centisecs``) the flusher writes back the files dirty
  for longer than ``dirty_expire_s`` (``dirty_expire_centisecs``). Above
  ``dirty_background_ratio`` of the memory the flusher writes the oldest-dirtied files until below
  it; above ``dirty_ratio`` the writer is throttled (balance_dirty_pages) while the same happens,
  counted in ``throttled``. The ratios are of ``memory_bytes``; with ``cgroup_dirty_limits`` (cgroup
  v2, whose memcg has its own dirty limits: mm/page-writeback.c mdtc) of the cgroup's limit instead.
  Under cgroup v1 (no cgroup writeback) a memory-limited group's dirty pages are held to the
  global limits only, and its reclaim writes them back.
- **Journal commits** (``commit_writeback_s``): where the file system allocates at ``write()`` and
  journals in ordered or journal mode (ext3; ext3/ext4 with ``data=journal``), a commit writes the
  running transaction's dirty data first (jbd2's journal_submit_data_buffers): every dirty file
  is written back ``commit_writeback_s`` after the transaction's first change, and at the commits
  the file system forced (``commit_times_s``), the newest file first, each file's bios apart
  (:meth:`_Cache.commit`).
- **fsync** writes back the file's dirty pages, **sync** every file's, oldest-dirtied first, inside one
  plug (fs/fs-writeback.c, wb_writeback's blk_start_plug), so the blocks of files that follow on merge
  (blktrace: bonnie++'s 1024 small files reach the device in a few dozen requests). Write-back that
  reclaim forces goes file by file, each file's bios a nanosecond apart, so the queue does not merge one
  file's last bio with the next file's first (blktrace: PostMark test 3 in a 64 MiB memory cgroup).
- **Reclaim**: when the cached pages pass ``memory_limit_bytes`` the least recently used files lose
  their pages. Reclaim does not write a dirty page itself: it wakes the flusher, which writes back
  every dirty file, oldest-dirtied first (mm/vmscan.c, shrink_folio_list: only kswapd writes file
  folios; wakeup_flusher_threads(WB_REASON_VMSCAN) -> wb_start_writeback: all dirty pages), and
  the file's pages go once clean.
- **Deletes** drop the file's pages, dirty ones unwritten (truncate_inode_pages):
  ``dropped_dirty_bytes`` counts them.
- **fadvise DONTNEED** drops a file's clean pages, and **fadvise RANDOM** turns its read-ahead off (a read
  reads its own missing pages); a **clone** passes to the file system.
- **Direct I/O** writes back and drops the cached range, then passes the request through.
- **Inodes**: a file not created by the workload is read from the device at its first use (a
  ``STAT`` passed down); created files' inodes stay cached.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .fileops import FileOps, Kind
from .page_runs import Pages as _Pages
from .read_ahead import DEFAULT_READ_AHEAD_KB

__all__ = ["CacheParams", "CacheResult", "page_cache"]


@dataclass(frozen=True)
class CacheParams:
    """The cache's settings (defaults: Linux's, with the device's read-ahead and no cgroup)."""

    memory_bytes: int = 4 << 30
    memory_limit_bytes: int | None = None
    #: the file system's device's read-ahead [KiB] (``read_ahead_kb``, ``blockdev --setra``); None: the
    #: kernel's for the device (:func:`~.read_ahead.device_read_ahead_kb`, set by :func:`~.path.run`;
    #: :data:`~.read_ahead.DEFAULT_READ_AHEAD_KB` where no device is known)
    read_ahead_kb: int | None = None
    dirty_expire_s: float = 30.0
    writeback_interval_s: float = 5.0
    dirty_background_ratio: float = 0.10
    dirty_ratio: float = 0.20
    page_bytes: int = 4096
    cgroup_dirty_limits: bool = False
    commit_writeback_s: float | None = None
    #: with ``commit_writeback_s``: further commits, at these instants [s], that the file system forced
    #: (a transaction full, or the file system full while it freed blocks: FsResult.forced_commits_s)
    commit_times_s: tuple = ()
    #: the file system's device's largest request [KiB] (``max_sectors_kb``: the bdi's ``io_pages``); None:
    #: read-ahead windows stay within ``read_ahead_kb`` whatever the call's size
    io_kb: int | None = None
    #: how long after its call's instant an async read-ahead window goes out [s]; None:
    #: :data:`ASYNC_DELAY_S`, an instant of its own, where the application waits for it
    #: (:mod:`~diskmodel.model.iopath.timing`). A loop worker's reads of its image give less than
    #: the timing's instant (:data:`~diskmodel.model.iopath.loop.WORKER_ASYNC_S`): the worker's read
    #: waits for it alike.
    async_delay_s: float | None = None

    def __post_init__(self):
        ints = {"memory_bytes": 1, "read_ahead_kb": 0, "page_bytes": 512}
        for name, low in ints.items():
            v = getattr(self, name)
            if v is None and name == "read_ahead_kb":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"page cache: {name} = {v!r} must be an integer >= {low}"
                                 + (" or None" if name == "read_ahead_kb" else ""))
        if self.io_kb is not None and (isinstance(self.io_kb, bool) or not isinstance(self.io_kb, (int, np.integer))
                                       or self.io_kb < 1):
            raise ValueError(f"page cache: io_kb = {self.io_kb!r} must be an integer >= 1 or None")
        lim = self.memory_limit_bytes
        if lim is not None and (isinstance(lim, bool) or not isinstance(lim, (int, np.integer)) or lim < self.page_bytes):
            raise ValueError(f"page cache: memory_limit_bytes = {lim!r} must be an integer >= page_bytes or None")
        if self.commit_writeback_s is not None and (not isinstance(self.commit_writeback_s, (int, float))
                                                    or not np.isfinite(self.commit_writeback_s) or self.commit_writeback_s <= 0):
            raise ValueError(f"page cache: commit_writeback_s = {self.commit_writeback_s!r} must be a finite number > 0 or None")
        for name in ("dirty_expire_s", "writeback_interval_s"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"page cache: {name} = {v!r} must be a finite number > 0")
        times = self.commit_times_s
        if not isinstance(times, tuple) or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                               or not np.isfinite(x) for x in times) or list(times) != sorted(times):
            raise ValueError(f"page cache: commit_times_s = {times!r} must be a tuple of finite instants, in order")
        d = self.async_delay_s
        if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float)) or not np.isfinite(d) or d <= 0):
            raise ValueError(f"page cache: async_delay_s = {d!r} must be a finite number > 0 or None")
        for name in ("dirty_background_ratio", "dirty_ratio"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"page cache: {name} = {v!r} must be in (0, 1]")


@dataclass(frozen=True)
class CacheResult:
    ops: FileOps
    sync: np.ndarray
    dropped_dirty_bytes: int
    reclaimed_bytes: int
    throttled: int
    #: the write-backs of a flush that writes every dirty inode it reaches (the background
    #: threshold's, reclaim's): the block device's dirty metadata buffers among them (None: none)
    flusher: np.ndarray | None = None
    #: the reads issued by asynchronous read-ahead (page_cache_async_ra; None: none)
    async_read: np.ndarray | None = None
    #: (a read call's instant, the instant of an async window it waits for), one row per pair: the
    #: reader waits for an async window at the first later call that copies any of its pages
    async_waits: np.ndarray | None = None


#: How far from its call's instant an async read-ahead window is issued [s]: before it where the call
#: reaches the mark at its first page (the window goes out before the call waits), after it (and
#: after the reader's copy up to the mark) where the mark lies inside the call. More than the
#: timing's instant (:data:`.stream.INSTANT_S`), so it is an instant of its own, and less than half
#: of the generators' call cost (``call_s``), so it stays between two calls.
ASYNC_DELAY_S = 1.5e-6


def _init_ra(req: int, mx: int) -> int:
    n = 1 << max(req - 1, 0).bit_length()
    if n <= mx // 32:
        return min(4 * n, mx)
    if n <= mx // 4:
        return min(2 * n, mx)
    return mx


def _sync_mark(start: int, size: int, end: int) -> int:
    """The page a synchronous window of ``size`` pages from ``start``, read for a call that ends at page
    ``end``, marks for the async read-ahead (PG_readahead at ``start + size - async_size``,
    ondemand_readahead): where the window reaches past the call, its first page after the call
    (``async_size = size - req_size``); where the call takes the whole window, its middle (readit:
    the read would hit its own mark, so ``async_size = max_pages / 2``, the window at its maximum)."""
    return end if start + size > end else start + size // 2


def _next_ra(cur: int, mx: int) -> int:
    if cur < mx // 16:
        return min(4 * cur, mx)
    if cur <= mx // 2:
        return min(2 * cur, mx)
    return mx


class _File:
    """A file's cached and dirty pages (:class:`_Pages`) and its read-ahead and write-back state."""

    __slots__ = ("cached", "dirty", "size", "dirtied", "ra_end", "ra_win", "ra_last", "prev_end", "chunk",
                 "ra_pending", "random")

    def __init__(self, size: int):
        self.cached, self.dirty = _Pages(), _Pages()
        self.size = size
        self.dirtied = None
        self.ra_end = self.ra_win = self.ra_last = 0
        self.ra_pending: list = []  # async windows no call has waited for yet: (first page, end page, instant)
        self.prev_end = 0
        self.chunk = 0  # the smallest write call since the file was last clean (its folios' size)
        self.random = False  # posix_fadvise(POSIX_FADV_RANDOM): no read-ahead (FMODE_RANDOM)


class _Cache:
    def __init__(self, ops: FileOps, p: CacheParams):
        self.p, self.pg = p, p.page_bytes
        self.initial = ops.initial_bytes
        self.files: dict[int, _File] = {}
        self.lru: OrderedDict[int, None] = OrderedDict()
        self.dirty_order: OrderedDict[int, float] = OrderedDict()  # file -> dirtied_when, oldest first
        self.inode_cached: set[int] = set()
        self.cached = self.dirty = 0
        mem = p.memory_limit_bytes if p.memory_limit_bytes is not None and p.cgroup_dirty_limits else p.memory_bytes
        self.limit = (p.memory_limit_bytes // self.pg) if p.memory_limit_bytes is not None else None
        self.bg = int(p.dirty_background_ratio * mem) // self.pg
        self.hard = int(p.dirty_ratio * mem) // self.pg
        ra_kb = DEFAULT_READ_AHEAD_KB if p.read_ahead_kb is None else p.read_ahead_kb
        self.mx = max(1, ra_kb * 1024 // self.pg) if ra_kb else 0
        self.io = max(1, p.io_kb * 1024 // self.pg) if p.io_kb else 0
        self.async_now = False  # inside an async window's read_pages (CacheResult.async_read)
        self.async_waits: list[tuple[float, float]] = []  # (a call's instant, an async window's it waits for)
        self.out: list[tuple] = []
        self.dropped = self.reclaimed = self.throttled = 0
        self.wb_at, self.wb_files = -1.0, 0  # the instant of the last write-back and files written then
        self.flushing = False  # inside flush_oldest (CacheResult.flusher)

    # -- output ----------------------------------------------------------------------------------
    def emit(self, t, kind, f, off=0, size=0, sync=False, direct=False, chunk=None):
        self.out.append((t, int(kind), f, off, size, size if chunk is None else chunk, direct, sync,
                         self.flushing, self.async_now))

    def file(self, t, f: int) -> _File:
        st = self.files.get(f)
        if st is None:
            size = int(self.initial[f]) if 0 <= f < self.initial.size else 0
            st = self.files[f] = _File(size)
            if f not in self.inode_cached:
                self.inode_cached.add(f)
                self.emit(t, Kind.STAT, f)
        self.lru[f] = None
        self.lru.move_to_end(f)
        return st

    # -- write-back ------------------------------------------------------------------------------
    def writeback(self, t, f: int, sync: bool, lo: int = 0, hi: int | None = None, apart: bool = False):
        st = self.files[f]
        if not st.dirty:
            return
        runs = st.dirty.runs(lo, hi)
        if not runs:
            return
        # Sync, expiry and the background threshold write files back inside one plug, so files that
        # follow on merge; write-back forced by reclaim (*apart*) goes file by file, each file's bios an
        # instant of their own (the module docstring).
        if apart:
            self.wb_files = self.wb_files + 1 if t == self.wb_at else 0
            self.wb_at = t
        at = t + self.wb_files * 1e-9 if apart else t
        for a, b in runs:
            off = a * self.pg
            size = min(b * self.pg, st.size) - off
            if size > 0:
                self.emit(at, Kind.WRITE, f, off, size, sync, chunk=st.chunk or size)
        if hi is None and not lo:
            self.dirty -= st.dirty.n
            st.dirty = _Pages()
        else:
            for a, b in runs:
                self.dirty -= st.dirty.remove(a, b)
        if not st.dirty:
            st.dirtied = None
            self.dirty_order.pop(f, None)

    def commit(self, t):
        """A journal commit in ordered mode writes every dirty file back, the newest first (each
        joins the head of jbd2's t_inode_list: jbd2_journal_inode_ranged_write, and
        journal_submit_data_buffers walks it), each in a writepages of its own, whose plug ends
        with it: one file's bios never merge with the next file's (blktrace: files written back in
        descending order, one request each)."""
        for g in reversed(list(self.dirty_order)):
            self.writeback(t, g, False, apart=True)

    def flush_oldest(self, t, target: int, apart: bool = False):
        self.flushing = True
        while self.dirty > target and self.dirty_order:
            f = next(iter(self.dirty_order))
            self.writeback(t, f, False, apart=apart)
        self.flushing = False

    def timer(self, t):
        expired = [f for f, when in self.dirty_order.items() if when <= t - self.p.dirty_expire_s]
        for f in expired:
            self.writeback(t, f, False)
        self.flush_oldest(t, self.bg)

    def reclaim(self, t):
        if self.limit is None:
            return
        while self.cached > self.limit and self.lru:
            f = next(iter(self.lru))
            st = self.files[f]
            if st.dirty:
                self.flush_oldest(t, 0, apart=True)
            n = st.cached.n
            self.cached -= n
            self.reclaimed += n * self.pg
            st.cached = _Pages()
            st.ra_end = st.ra_win = st.ra_last = 0
            st.ra_pending = []
            self.lru.pop(f)

    # -- operations ------------------------------------------------------------------------------
    def fill(self, st: _File, a: int, b: int) -> None:
        self.cached += st.cached.add(a, b)

    def read_pages(self, t, f, st: _File, a: int, b: int):
        """Read the missing pages of [a, b), one request per run of missing pages."""
        for s, e in st.cached.missing(a, b):
            self.emit(t, Kind.READ, f, s * self.pg, min(e * self.pg, st.size) - s * self.pg)
        self.fill(st, a, b)

    def wait_async(self, t, st: _File, a: int, b: int) -> None:
        """A call at ``t`` reading pages [a, b) waits for the async windows issued before it that hold
        any of them (filemap_read waits on the folios it copies: filemap_update_page), not where they
        were issued: the reader copies the window before while the device reads the next."""
        keep = []
        for lo, hi, u in st.ra_pending:
            if lo < b and a < hi and u < t:
                self.async_waits.append((t, u))
            else:
                keep.append((lo, hi, u))
        st.ra_pending = keep

    def context_read_ahead(self, t, f, st: _File, a: int, b: int, eof: int) -> bool:
        """A read of pages [a, b) that does not continue the last one, right after pages already cached:
        the traces a sequential stream leaves (mm/readahead.c, page_cache_sync_ra's context read-ahead;
        try_context_readahead in Linux 6.1). With more such pages than the call asks for, the window is
        those pages' count (doubled when they reach the file's start) and the call's, at most ``max``,
        marked at its last page (``async_size = 1``); else the read is a standalone one (False)."""
        contig, from_start = st.cached.before(a, self.mx)
        if contig <= b - a:
            return False
        win = min(contig * (2 if from_start else 1) + b - a, self.mx)
        stop = min(a + win, eof)
        self.read_pages(t, f, st, a, stop)
        st.ra_end, st.ra_win, st.ra_last = stop, win, max(a + win - 1, a)
        return True

    def read(self, t, f, off, size, chunk, op_s: float = 0.0):
        """A read op at ``t`` of ``size`` bytes in calls of ``chunk``, the application's time for the
        op ``op_s`` (to its next op)."""
        st = self.file(t, f)
        end = min(off + size, st.size)
        if end <= off:
            return
        eof = -(-st.size // self.pg)
        a, b = off // self.pg, -(-end // self.pg)
        sequential = off == st.prev_end or off == 0
        self.wait_async(t, st, a, b)
        if st.random:  # FMODE_RANDOM: page_cache_sync_ra reads just the call's pages (force_page_cache_ra)
            st.prev_end = end
            self.read_pages(t, f, st, a, b)
            return
        if not sequential and self.mx and chunk < end - off:
            # An op of many calls from a new place: its first call is a random read of its own pages
            # (ondemand_readahead: no history, a standalone read), the next ones read on from it
            # sequentially, from get_init_ra_size's first window.
            first = off + chunk
            self.read_pages(t, f, st, a, -(-first // self.pg))
            st.prev_end, st.ra_end, st.ra_win, st.ra_last = first, -(-first // self.pg), 0, 0
            self.read(t + 1e-9, f, first, end - first, chunk, op_s * (end - first) / (end - off))
            return
        st.prev_end = end
        if not sequential and self.mx and self.context_read_ahead(t, f, st, a, b, eof):
            return
        if not sequential or not self.mx:
            self.read_pages(t, f, st, a, b)
            st.ra_end = st.ra_win = st.ra_last = 0
        else:
            if off == 0 or st.ra_end < a:
                st.ra_end, st.ra_win = a, 0
            # An op of many read calls: the call that reaches a window issues it, each call an
            # instant of its own (a nanosecond per call), so windows of different calls are not
            # merged; the windows one call issues go out together.
            calls = max(1, -(-chunk // self.pg))
            at = lambda page: t + max(page - a, 0) // calls * 1e-9  # noqa: E731
            call_s = op_s * calls / max(b - a, 1)  # the application's time for one call
            # ondemand_readahead: a call larger than the read-ahead reads ahead up to the device's largest request
            mx = min(calls, self.io) if calls > self.mx and self.io > self.mx else self.mx
            before = len(self.out)
            while st.ra_end < b:
                st.ra_win = _init_ra(calls, mx) if not st.ra_win else _next_ra(st.ra_win, mx)
                st.ra_last = _sync_mark(st.ra_end, st.ra_win, b)
                stop = min(st.ra_end + st.ra_win, eof)
                self.read_pages(at(st.ra_end), f, st, st.ra_end, stop)
                st.ra_end = stop
                if stop >= eof:
                    break
            if st.ra_end < eof and b > st.ra_last:
                trigger = st.ra_last  # the asynchronous window: the call that reads the marked page issues it
                st.ra_win = _next_ra(st.ra_win, mx)
                st.ra_last = st.ra_end  # an async window is marked at its first page
                stop = min(st.ra_end + st.ra_win, eof)
                self.async_now = True
                # the reader reaches the mark after copying the call's pages before it; a mark on a call's
                # first page issues the window as the call starts, before it waits for that page
                # (filemap_get_pages: filemap_readahead, then filemap_update_page), so each drive finds
                # it queued behind the window the call waits for: an instant just before the call's,
                # unless this op's own calls read windows (the page waited for is in one of them, issued
                # an instant before the mark's call): then an instant after, behind them
                into = max(trigger - a, 0) % calls / calls * call_s
                if self.p.async_delay_s is not None:  # a loop worker's: within its read's instant
                    issued = at(trigger) + self.p.async_delay_s
                elif into > 0 or len(self.out) > before:
                    issued = at(trigger) + ASYNC_DELAY_S + into
                else:
                    issued = at(trigger) - ASYNC_DELAY_S
                self.read_pages(issued, f, st, st.ra_end, stop)
                self.async_now = False
                st.ra_pending.append((st.ra_end, stop, issued))
                st.ra_end = stop
        self.reclaim(t)

    def write(self, t, f, off, size, chunk):
        st = self.file(t, f)
        st.chunk = min(st.chunk, chunk) if st.dirty else chunk
        end = off + size
        a, b = off // self.pg, -(-end // self.pg)
        for p, partial in ((a, off % self.pg), (b - 1, end % self.pg)):
            if partial and p * self.pg < st.size and not st.cached.has(p):
                self.read_pages(t, f, st, p, p + 1)
        st.size = max(st.size, end)
        self.fill(st, a, b)
        self.dirty += st.dirty.add(a, b)
        if st.dirtied is None and st.dirty:
            st.dirtied = t
            self.dirty_order[f] = t
        if self.dirty > self.hard:
            self.throttled += 1
        if self.dirty > self.bg:
            self.flush_oldest(t, self.bg)
        self.reclaim(t)

    def direct(self, t, kind, f, off, size):
        st = self.file(t, f)
        a, b = off // self.pg, -(-(off + size) // self.pg)
        self.writeback(t, f, True, a, b)
        self.cached -= st.cached.remove(a, b)
        if kind == Kind.WRITE:
            st.size = max(st.size, off + size)
        self.emit(t, kind, f, off, size, kind == Kind.WRITE, True)

    def delete(self, t, f):
        st = self.files.pop(f, None)
        if st is None:
            if f not in self.inode_cached:
                self.emit(t, Kind.STAT, f)  # unlink reads the inode (and the directory) first
            self.inode_cached.discard(f)
            self.emit(t, Kind.DELETE, f)
            return
        nd = st.dirty.n
        self.dropped += min(nd * self.pg, st.size)
        self.dirty -= nd
        self.cached -= st.cached.n
        self.dirty_order.pop(f, None)
        self.lru.pop(f, None)
        self.inode_cached.discard(f)
        self.emit(t, Kind.DELETE, f)


def page_cache(ops: FileOps, params: CacheParams | None = None) -> CacheResult:
    """The file-level I/O that passes the page cache (see the module docstring)."""
    p = params or CacheParams()
    c = _Cache(ops, p)
    next_timer = p.writeback_interval_s
    cols = [ops.time_s.tolist(), ops.kind.tolist(), ops.file.tolist(), ops.offset_bytes.tolist(),
            ops.size_bytes.tolist(), ops.chunk_bytes.tolist(), ops.direct.tolist()]
    commit_s = p.commit_writeback_s
    forced = list(reversed(p.commit_times_s)) if commit_s is not None else []
    # the application's time for each op: to the next op's issue (none for the last, or where the next
    # is issued earlier)
    ahead = np.maximum(np.r_[ops.time_s[1:], ops.time_s[-1:]] - ops.time_s, 0.0) if len(ops) else ops.time_s
    for t, kind, f, off, size, chunk, direct, op_s in zip(*cols, ahead.tolist()):
        while commit_s is not None:  # the commits due before t, timed or forced, in order
            timed = next(iter(c.dirty_order.values())) + commit_s if c.dirty_order else np.inf
            at = min(timed, forced[-1] if forced else np.inf)
            if at > t:
                break
            if forced and forced[-1] == at:
                forced.pop()
            c.commit(at)
        while next_timer <= t:
            if c.dirty_order:
                c.timer(next_timer)
            next_timer += p.writeback_interval_s
        if kind == Kind.CREATE:
            c.inode_cached.add(f)
            c.files[f] = _File(0)
            c.lru[f] = None
            c.emit(t, Kind.CREATE, f)
        elif kind in (Kind.READ, Kind.WRITE) and direct:
            c.direct(t, kind, f, off, size)
        elif kind == Kind.READ:
            c.read(t, f, off, size, chunk, op_s)
        elif kind == Kind.WRITE:
            c.write(t, f, off, size, chunk)
        elif kind == Kind.DELETE:
            c.delete(t, f)
        elif kind == Kind.STAT:
            if f not in c.inode_cached:
                c.inode_cached.add(f)
                c.emit(t, Kind.STAT, f)
        elif kind == Kind.FSYNC:
            if f in c.files:
                c.writeback(t, f, True)
            c.emit(t, Kind.FSYNC, f)
        elif kind == Kind.RANDOM:
            c.file(t, f).random = True
        elif kind == Kind.FALLOCATE:
            # the file system's business: no page is cached or dirtied, and the unwritten blocks read
            # as zeros without I/O, so the cache's size of the file (what was written) is kept
            c.file(t, f)
            c.emit(t, Kind.FALLOCATE, f, off, size)
        elif kind == Kind.DROP:
            st = c.files.get(f)
            if st is not None:  # only clean pages go (invalidate_mapping_pages); dirty pages are cached
                c.cached -= st.cached.n - st.dirty.n
                st.cached = st.dirty.copy()
                st.ra_end = st.ra_win = st.ra_last = 0
                st.ra_pending = []
        elif kind == Kind.CLONE:
            src = c.files.get(off)
            c.file(t, f).size = src.size if src is not None else int(ops.initial_bytes[off])
            c.emit(t, Kind.CLONE, f, off, size)
        elif kind in (Kind.SYNC, Kind.SYNC_ALL):  # the hosts' part of sync(2) is the I/O path's (path._loop)
            for g in list(c.dirty_order):
                c.writeback(t, g, True)
            c.emit(t, Kind.SYNC, -1)
    rows = c.out
    if any(r[9] for r in rows):  # an async window may come after its call's later windows: by time, else in order
        rows = [rows[i] for i in sorted(range(len(rows)), key=lambda i: rows[i][0])]
    cols = list(zip(*rows)) if rows else [[]] * 10
    dtypes = (np.float64, np.int8, np.int64, np.int64, np.int64, np.int64, bool, bool, bool, bool)
    arr = [np.asarray(x, dtype=d) for x, d in zip(cols, dtypes)]
    out = FileOps(*arr[:7], ops.dir_of_file, ops.initial_bytes)
    waits = np.asarray(c.async_waits, np.float64).reshape(-1, 2)
    return CacheResult(out, arr[7], int(c.dropped), int(c.reclaimed), int(c.throttled), arr[8],
                       arr[9] if arr[9].any() else None, waits if waits.size else None)
