"""The workloads and the page cache of the I/O path (model/iopath/fileops.py, pagecache.py): each
against a stream worked out by hand from the kernel's rules, plus hypothesis properties."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from diskmodel.model.iopath.fileops import FileOps, Kind, copy, fio, postmark, resolve_clones
from diskmodel.model.iopath.pagecache import CacheParams, page_cache
from diskmodel.model.predictions.workload import PostMarkConfig

PG = 4096
R, W = int(Kind.READ), int(Kind.WRITE)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ops(*rows, initial=(0,), dirs=None) -> FileOps:
    """Operations as (time_s, kind, file, offset, size[, chunk[, direct]])."""
    full = [tuple(r) + (r[4] if len(r) < 6 else r[5],) * (len(r) < 6) + (False,) * (len(r) < 7) for r in rows]
    cols = list(zip(*full))
    dt = (np.float64, np.int8, np.int64, np.int64, np.int64, np.int64, bool)
    initial = np.asarray(initial, np.int64)
    return FileOps(*(np.asarray(c, d) for c, d in zip(cols, dt)),
                   np.zeros(initial.size, np.int64) if dirs is None else np.asarray(dirs), initial)


def io(result, kind=None):
    """(kind, file, offset, size) of the cache's reads and writes."""
    o = result.ops
    keep = (o.kind == R) | (o.kind == W) if kind is None else o.kind == kind
    return list(zip(o.kind[keep].tolist(), o.file[keep].tolist(), o.offset_bytes[keep].tolist(), o.size_bytes[keep].tolist()))


# -- read-ahead ---------------------------------------------------------------------------------
def test_sequential_read_ramps_the_readahead_window():
    # A 100-page file on the device, read whole in 4 KiB calls, read_ahead_kb 128 (max 32 pages).
    # get_init_ra_size(1 page, 32): 1 <= 32/32 -> 4 pages; then get_next_ra_size: 4 <= 16 -> 8,
    # 8 <= 16 -> 16, 16 <= 16 -> 32, then 32 (max), and the last window stops at page 100 (EOF).
    r = page_cache(ops((0, Kind.READ, 0, 0, 100 * PG, PG), initial=[100 * PG]), CacheParams(read_ahead_kb=128))
    assert [s // PG for _, _, _, s in io(r)] == [4, 8, 16, 32, 32, 8]
    assert [o // PG for _, _, o, _ in io(r)] == [0, 4, 12, 28, 60, 92]
    # The inode was not cached: one STAT goes down before the first read.
    assert r.ops.kind.tolist()[0] == Kind.STAT


def test_random_reads_read_only_their_pages_and_cache_them():
    r = page_cache(ops((0, R, 0, 40 * PG, PG), (0, R, 0, 7 * PG, 2 * PG), (0, R, 0, 40 * PG, PG), initial=[64 * PG]))
    # Neither read continues the last one: no read-ahead; the third is a cache hit.
    assert io(r) == [(R, 0, 40 * PG, PG), (R, 0, 7 * PG, 2 * PG)]


def test_a_read_right_after_cached_pages_reads_ahead_by_their_count():
    # Pages 20-29 cached by a read that ends there; a read elsewhere (page 150) moves the stream away;
    # then a 2-page read at page 30 does not continue the last read, but the 10 pages before it are
    # cached: more than the 2 it asks for, the traces of a sequential stream (page_cache_sync_ra's
    # context read-ahead; try_context_readahead in 6.1). Its window is 10 + 2 = 12 pages, marked at its
    # last page (async_size 1), so the next read, reaching page 41, issues the next window (2 x 12).
    r = page_cache(ops((0, R, 0, 20 * PG, 10 * PG), (1, R, 0, 150 * PG, PG), (2, R, 0, 30 * PG, 2 * PG),
                       (3, R, 0, 32 * PG, 10 * PG), initial=[200 * PG]), CacheParams(read_ahead_kb=128))
    assert [(o // PG, s // PG) for _, _, o, s in io(r)] == [(20, 10), (150, 1), (30, 12), (42, 24)]
    # With no more pages cached before it than it asks for, a read is a standalone one: as is.
    r = page_cache(ops((0, R, 0, 28 * PG, 2 * PG), (1, R, 0, 50 * PG, PG), (2, R, 0, 30 * PG, 2 * PG),
                       initial=[200 * PG]), CacheParams(read_ahead_kb=128))
    assert [(o // PG, s // PG) for _, _, o, s in io(r)] == [(28, 2), (50, 1), (30, 2)]


def test_a_read_after_pages_cached_from_the_files_start_doubles_their_count():
    # A 4-page read at page 0 reads get_init_ra_size(4, 32) = 8 pages; after a read elsewhere, a
    # 1-page read at page 8 finds 8 pages cached back to the file's start ("a strong indication of
    # long-run stream"): 2 x 8 + 1 = 17 pages.
    r = page_cache(ops((0, R, 0, 0, 4 * PG), (1, R, 0, 60 * PG, PG), (2, R, 0, 8 * PG, PG), initial=[100 * PG]),
                   CacheParams(read_ahead_kb=128))
    assert [(o // PG, s // PG) for _, _, o, s in io(r)] == [(0, 8), (60, 1), (8, 17)]


def test_reads_stop_at_end_of_file_with_a_partial_last_page():
    r = page_cache(ops((0, R, 0, 0, 10_000, 10_000), initial=[10_000]), CacheParams(read_ahead_kb=128))
    # 10,000 bytes = 3 pages (the last partial); the window (4x the 3-page call rounded up to 4 -> 16)
    # is cut at EOF: one read of the file's 10,000 bytes.
    assert io(r) == [(R, 0, 0, 10_000)]


# -- dirty data and write-back -------------------------------------------------------------------
def test_a_file_deleted_before_write_back_is_never_written():
    o = ops((0, Kind.CREATE, 0, 0, 0), (0.1, W, 0, 0, 20 * PG), (10.0, Kind.DELETE, 0, 0, 0), (11.0, Kind.SYNC, -1, 0, 0))
    r = page_cache(o)
    assert io(r) == []
    assert r.dropped_dirty_bytes == 20 * PG


def test_dirty_pages_expire_at_the_first_flusher_wakeup_after_dirty_expire():
    # Dirtied at t=1; wake-ups every 5 s; expired once dirty for 30 s: the wake-up at t=35 writes it.
    o = ops((0, Kind.CREATE, 0, 0, 0), (1.0, W, 0, 0, 3 * PG + 100), (40.0, Kind.DELETE, 0, 0, 0))
    r = page_cache(o)
    assert io(r) == [(W, 0, 0, 3 * PG + 100)]
    assert r.ops.time_s[r.ops.kind == W].tolist() == [35.0]
    assert r.dropped_dirty_bytes == 0


def test_background_threshold_starts_write_back_of_the_oldest_file():
    # 1 MiB of memory: background threshold 10 % = 25 pages, dirty_ratio 20 % = 51 pages.
    p = CacheParams(memory_bytes=1 << 20)
    o = ops((0, Kind.CREATE, 0, 0, 0), (0, Kind.CREATE, 1, 0, 0),
            (1, W, 0, 0, 20 * PG), (2, W, 1, 0, 10 * PG), initial=[0, 0])
    r = page_cache(o, p)
    # After the second write 30 pages are dirty (> 25): file 0, the oldest dirtied, is written back.
    assert io(r) == [(W, 0, 0, 20 * PG)]
    assert r.ops.time_s[r.ops.kind == W].tolist() == [2.0]
    assert r.throttled == 0


def test_fsync_writes_the_file_back_as_sync_writes():
    o = ops((0, Kind.CREATE, 0, 0, 0), (0, W, 0, 0, 2 * PG), (0, W, 0, 5 * PG, PG), (0, Kind.FSYNC, 0, 0, 0))
    r = page_cache(o)
    # Two runs of dirty pages: [0, 2) and [5, 6); both sync.
    assert io(r) == [(W, 0, 0, 2 * PG), (W, 0, 5 * PG, PG)]
    assert r.sync[(r.ops.kind == W)].all()
    assert r.ops.kind.tolist()[-1] == Kind.FSYNC


def test_a_partial_page_write_inside_the_file_reads_the_page_first():
    o = ops((0, W, 0, 2 * PG + 100, 50), (0, Kind.SYNC, -1, 0, 0), initial=[8 * PG])
    r = page_cache(o)
    assert io(r) == [(R, 0, 2 * PG, PG), (W, 0, 2 * PG, PG)]


# -- reclaim -------------------------------------------------------------------------------------
def test_reclaim_drops_the_least_recently_used_file():
    # Limit 64 pages; two 40-page files read in turn, then the first again: it was reclaimed when the
    # second came in (80 > 64 pages), so it is read again from the device.
    p = CacheParams(memory_limit_bytes=64 * PG, read_ahead_kb=160)
    o = ops((0, R, 0, 0, 40 * PG, 40 * PG), (1, R, 1, 0, 40 * PG, 40 * PG), (2, R, 0, 0, 40 * PG, 40 * PG),
            initial=[40 * PG, 40 * PG])
    r = page_cache(o, p)
    assert [(k, f, s) for k, f, _, s in io(r)] == [(R, 0, 40 * PG), (R, 1, 40 * PG), (R, 0, 40 * PG)]
    assert r.reclaimed_bytes == 2 * 40 * PG


def test_reclaim_writes_a_dirty_file_back_before_dropping_it():
    p = CacheParams(memory_limit_bytes=16 * PG, dirty_background_ratio=1.0, dirty_ratio=1.0)
    o = ops((0, Kind.CREATE, 0, 0, 0), (0, W, 0, 0, 12 * PG), (1, R, 1, 0, 8 * PG, 8 * PG), initial=[0, 8 * PG])
    r = page_cache(o, p)
    assert [(k, f) for k, f, _, _ in io(r)] == [(R, 1), (W, 0)]


def test_reclaim_meeting_a_dirty_file_has_the_flusher_write_back_every_dirty_file():
    # Limit 16 pages: files 0 (6 pages) and 1 (6 pages) are dirty, then file 2 (8 pages) comes in:
    # reclaim meets file 0 dirty and wakes the flusher, which writes back both dirty files, the
    # oldest-dirtied first; file 0's pages then go.
    p = CacheParams(memory_limit_bytes=16 * PG, dirty_background_ratio=1.0, dirty_ratio=1.0)
    o = ops((0, Kind.CREATE, 0, 0, 0), (0, W, 0, 0, 6 * PG), (0.1, Kind.CREATE, 1, 0, 0), (0.1, W, 1, 0, 6 * PG),
            (1, R, 2, 0, 8 * PG, 8 * PG), initial=[0, 0, 8 * PG])
    r = page_cache(o, p)
    assert [(k, f, s) for k, f, _, s in io(r)] == [(R, 2, 8 * PG), (W, 0, 6 * PG), (W, 1, 6 * PG)]


def test_direct_io_bypasses_the_cache():
    o = ops((0, W, 0, 0, 8 * PG, 8 * PG, True), (0, R, 0, 0, 8 * PG, 8 * PG, True), initial=[8 * PG])
    r = page_cache(o)
    assert io(r) == [(W, 0, 0, 8 * PG), (R, 0, 0, 8 * PG)]


# -- workloads -----------------------------------------------------------------------------------
def test_postmark_follows_its_algorithm():
    cfg = PostMarkConfig(number_of_files=50, min_file_size_bytes=1000, max_file_size_bytes=2000, transactions=200, seed=7)
    o = postmark(cfg, sync_at_end=False)
    kind = o.kind
    creates, deletes = int((kind == Kind.CREATE).sum()), int((kind == Kind.DELETE).sum())
    # Every file created is deleted at the end; the pool is made first; each transaction does one
    # read-or-append and one create-or-delete (a create when the pool is full may be refused).
    assert creates == deletes
    assert kind[: 2 * 50].tolist() == [Kind.CREATE, Kind.WRITE] * 50
    sizes = o.size_bytes[: 100][1::2]
    assert ((sizes >= 1000) & (sizes < 2000)).all()
    # No file grows past the high bound: appended bytes per file never exceed high - first size.
    grown = {}
    for k, f, off, size in zip(kind.tolist(), o.file.tolist(), o.offset_bytes.tolist(), o.size_bytes.tolist()):
        if k == Kind.WRITE:
            assert off == grown.get(f, 0)
            grown[f] = off + size
        if k == Kind.READ:
            assert (off, size) == (0, grown[f])
    assert max(grown.values()) <= 2000
    appends = (kind == Kind.WRITE) & (o.offset_bytes > 0)
    assert int((kind == Kind.READ).sum() + appends.sum()) <= 200


def test_copy_clones_or_falls_back():
    o = copy(1 << 20)
    cloned = resolve_clones(o, reflink=True)
    assert Kind.CLONE in cloned.kind.tolist() and Kind.READ not in cloned.kind.tolist()
    copied = resolve_clones(o, reflink=False)
    assert Kind.CLONE not in copied.kind.tolist()
    assert int(copied.size_bytes[copied.kind == Kind.WRITE].sum()) == 1 << 20


def test_fio_random_job_touches_every_block_once():
    o = fio("randwrite", 4096, 1 << 20, sync_at_end=False)
    w = np.sort(o.offset_bytes[o.kind == Kind.WRITE])
    assert w.tolist() == list(range(0, 1 << 20, 4096))


def test_postmark_deletes_drop_dirty_data_under_a_64mib_cgroup_when_files_fit():
    # A scaled PostMark test1 (files of 1-100 KiB) whose pool fits 64 MiB, run in seconds: every
    # file is deleted before its data expires, so the cache writes nothing.
    cfg = PostMarkConfig(number_of_files=300, min_file_size_bytes=1024, max_file_size_bytes=100 * 1024, transactions=3000)
    r = page_cache(postmark(cfg), CacheParams(memory_limit_bytes=64 << 20))
    assert io(r, W) == []
    assert r.dropped_dirty_bytes > 10 << 20


# -- properties ----------------------------------------------------------------------------------
writes = st.lists(st.tuples(st.integers(0, 200_000), st.integers(1, 30_000)), min_size=1, max_size=25)


@FAST
@given(writes)
def test_sync_writes_each_dirtied_page_once_clipped_to_the_file(ws):
    rows = [(0, Kind.CREATE, 0, 0, 0)] + [(i * 1e-3, W, 0, off, size) for i, (off, size) in enumerate(ws)]
    r = page_cache(ops(*rows, (1.0, Kind.SYNC, -1, 0, 0)))
    pages = set()
    for off, size in ws:
        pages.update(range(off // PG, -(-(off + size) // PG)))
    end = max(off + size for off, size in ws)
    expect = sum(min((p + 1) * PG, end) - p * PG for p in pages)
    got = io(r, W)
    assert sum(s for *_, s in got) == expect
    # No page is written twice and no write overlaps another.
    spans = sorted((o, o + s) for _, _, o, s in got)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


@FAST
@given(st.lists(st.tuples(st.integers(0, 63), st.integers(1, 16)), min_size=1, max_size=20), st.integers(4, 64))
def test_reads_never_fetch_a_cached_page_without_reclaim(reads, limit_pages):
    rows = [(i * 1e-3, R, 0, a * PG, n * PG, n * PG) for i, (a, n) in enumerate(reads)]
    r = page_cache(ops(*rows, initial=[64 * PG]), CacheParams(read_ahead_kb=64))
    got = [(o // PG, s // PG) for _, _, o, s in io(r, R)]
    seen = set()
    for a, n in got:
        block = set(range(a, a + n))
        assert not block & seen
        seen |= block
    assert seen <= set(range(64))


def _reference_cpu_s() -> float:
    """The CPU time [s] of fixed work of the two kinds the path does: a pure-Python loop of dict updates
    (its bookkeeping) and numpy calls on small slices of a 32,768-block bitmap (mballoc's free-space
    scans): this machine's speed at them, the least of three."""
    bitmap = np.zeros(32768, bool)
    bitmap[::3] = True
    times = []
    for _ in range(3):
        t0, d, n = time.process_time(), {}, 0
        for i in range(3_000_000):
            d[i & 4095] = d.get(i & 4095, 0) + i
        for i in range(200_000):
            a = (i * 37) & 32767
            n += int(np.count_nonzero(bitmap[a:a + 64]))
        times.append(time.process_time() - t0)
    return min(times)


#: The full-size path's CPU time over the reference work's, at most. History: 10 s on the Intel Xeon hosts
#: of November 2026; 13-14 s on the AMD EPYC host of 2026-12-04, whose pure-Python reference loop took
#: 0.62 s (a ratio of 23), where an absolute 10 s failed with the code unchanged, so the bound became a
#: ratio, half as much again as that one (35), set after seeing it. On the Intel Xeon host of 2026-12-07
#: the path took 11.3 s against a loop of 0.31 s (37) with the code unchanged: its numpy calls on small
#: arrays, which that loop does not exercise, ran slower there against it. The reference now holds such
#: calls too (0.41 s there, against the path's 10.0-10.4 s in the same process after mballoc's
#: bookkeeping was made faster: 24-25), and is taken before and after the path, the larger, so that the
#: host slowing down during the test moves both.
PATH_TO_REFERENCE_MAX = 35.0


@pytest.mark.serial  # asserts a CPU time, which a test computing beside it inflates
@pytest.mark.slow
def test_full_size_postmark_test1_path_runs_within_its_cpu_budget():
    from diskmodel.model.iopath.path import run
    from diskmodel.model.stacks.stack import paper_stack
    from diskmodel.model.predictions.workload import postmark_preset

    before_s = _reference_cpu_s()
    t0 = time.process_time()
    out = run(paper_stack("native"), postmark(postmark_preset("test1")), CacheParams(memory_limit_bytes=64 << 20))
    cpu_s = time.process_time() - t0
    reference_s = max(before_s, _reference_cpu_s())
    assert out["sda"].write_bytes > 0
    # CPU time, not wall time: the machine is shared; the path itself is what must be fast.
    assert cpu_s <= PATH_TO_REFERENCE_MAX * reference_s, (cpu_s, reference_s)


def test_an_ordered_journal_commit_writes_the_transactions_data():
    # ext3 data=ordered: the commit 5 s after the transaction's first change writes the dirty data
    # (here at t = 1 + 5), long before dirty_expire (30 s) would.
    o = ops((0, Kind.CREATE, 0, 0, 0), (1.0, W, 0, 0, 2 * PG), (7.0, Kind.CREATE, 1, 0, 0), initial=[0, 0])
    r = page_cache(o, CacheParams(commit_writeback_s=5.0))
    assert io(r) == [(W, 0, 0, 2 * PG)]
    assert r.ops.time_s[r.ops.kind == W].tolist() == [6.0]
    assert io(page_cache(o)) == []


def test_page_sets_agree_with_a_set_of_pages():
    # The cache's page sets (sorted runs) against Python's own set of page numbers, random operations.
    from diskmodel.model.iopath.page_runs import Pages as _Pages

    rng = np.random.default_rng(11)
    pages, ref = _Pages(), set()
    for _ in range(3000):
        a = int(rng.integers(0, 400))
        b = a + int(rng.integers(0, 40))
        op = rng.integers(0, 3)
        if op == 0:
            assert pages.add(a, b) == len(set(range(a, b)) - ref)
            ref |= set(range(a, b))
        elif op == 1:
            assert pages.remove(a, b) == len(set(range(a, b)) & ref)
            ref -= set(range(a, b))
        else:
            assert pages.missing(a, b) == _runs_of(set(range(a, b)) - ref)
            assert pages.runs(a, b) == _runs_of(set(range(a, b)) & ref)
        assert pages.n == len(ref) and pages.runs() == _runs_of(ref)
        assert all(pages.has(p) == (p in ref) for p in (a, b - 1, b))


def _runs_of(page_set) -> list:
    out = []
    for p in sorted(page_set):
        if out and out[-1][1] == p:
            out[-1] = (out[-1][0], p + 1)
        else:
            out.append((p, p + 1))
    return out


def test_fadvise_random_turns_off_read_ahead_as_fio_asks_for_a_random_job():
    # fio's fadvise_hint=1 (its default) advises POSIX_FADV_RANDOM on a random job's file; the kernel
    # then reads each call's own pages (FMODE_RANDOM), even after neighbours that are cached, where
    # the context read-ahead would read on. A buffered 4 KiB random read of 16 MiB: one read per block.
    ops = fio("randread", 4096, 16 << 20)
    assert (ops.kind == Kind.RANDOM).sum() == 1
    assert (fio("read", 4096, 16 << 20).kind == Kind.RANDOM).sum() == 0
    assert (fio("randread", 4096, 16 << 20, direct=True).kind == Kind.RANDOM).sum() == 0
    r = page_cache(ops, CacheParams(read_ahead_kb=128))
    reads = r.ops.kind == R
    assert int(reads.sum()) == 4096 and set(r.ops.size_bytes[reads].tolist()) == {4096}
    # without the advice the same order reads ahead from cached neighbours: fewer, larger reads
    plain = page_cache(ops.take(ops.kind != Kind.RANDOM), CacheParams(read_ahead_kb=128))
    assert int((plain.ops.kind == R).sum()) < 4096


def test_an_async_window_goes_out_after_the_windows_its_own_op_read():
    # One 1 MiB op in 64 KiB calls (16 pages) on a 2 MiB file, read_ahead_kb 128 (32 pages): the calls
    # read windows of 32 pages up to the op's end, the last marked for the next; the call that reaches
    # the mark issues the window beyond after the ones before it were queued (filemap_get_pages: the
    # sync read-ahead, then filemap_readahead on the marked folio). The model placed that window 1.5 us
    # before the op, ahead of its own windows (and before time 0 for an op at 0: an NFS server's first
    # read, which the file system refused).
    r = page_cache(ops((0.0, R, 0, 0, 1 << 20, 1 << 16), initial=(2 << 20,)),
                   CacheParams(read_ahead_kb=128, io_kb=1280))
    reads = r.ops.kind == R
    t, off = r.ops.time_s[reads], r.ops.offset_bytes[reads] // PG
    assert np.all(t >= 0.0), t
    assert off.tolist() == sorted(off.tolist()), off  # issued in the order of their pages
    assert off.tolist()[-1] == 256 and np.all(np.diff(t) >= 0)  # the window beyond the op comes last
