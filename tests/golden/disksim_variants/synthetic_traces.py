"""The synthetic traces of this folder written with this file (Python's `random`; not run by the tests).

DiskSim's trace format: `op label lbn blocks service_us gap_us`, the gap being the idle time
after the request's completion. Usage: python synthetic_traces.py (rewrites its traces).
"""
import random
from pathlib import Path

HERE = Path(__file__).parent


def interrupted(seed, n, total, write_share):
    """A read, then 0-3 ms after its completion a request elsewhere: the read-ahead is still running."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        rows.append(("R", r.randrange(0, total - 1000), r.randint(4, 16), r.uniform(0.0, 3.0)))
        op = "W" if r.random() < write_share else "R"
        rows.append((op, r.randrange(0, total - 1000), r.randint(4, 16), r.uniform(5, 30)))
    return rows[:n]


def pairs(seed, n, total):
    """Pairs of reads: the second starts near the first's end (30 blocks inside to 40 past it), 0-1.5 ms later."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b = r.randint(16, 64)
        lbn = r.randrange(0, total - 1000)
        rows.append(("R", lbn, b, r.uniform(0.0, 1.5)))
        rows.append(("R", max(0, lbn + b + r.randint(-30, 40)), r.randint(16, 64), r.uniform(5, 30)))
    return rows[:n]


def tails(seed, n, total, reach):
    """Pairs of reads: the second, 15-40 ms later, starts in the last 30 blocks the first's read-ahead
    buffered (*reach* blocks past its end) and runs past them: a partial hit on a clean segment."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b = r.randint(16, 64)
        lbn = r.randrange(0, total - 1000)
        rows.append(("R", lbn, b, r.uniform(15, 40)))
        rows.append(("R", lbn + b + reach - r.randint(1, 30), r.randint(16, 64), r.uniform(5, 30)))
    return rows[:n]


def overlapping_writes(seed, n, total):
    """A read, then 0-3 ms after its completion a write 0-100 blocks past its end (in its read-ahead)."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b = r.randint(4, 16)
        lbn = r.randrange(0, total - 1000)
        rows.append(("R", lbn, b, r.uniform(0.0, 3.0)))
        rows.append(("W", lbn + b + r.randint(0, 100), r.randint(4, 16), r.uniform(5, 30)))
    return rows[:n]


def big_reads(seed, n, total, low, high):
    """Reads of *low*-*high* blocks (more than a segment) anywhere, 0-30 ms apart."""
    r = random.Random(seed)
    return [("R", r.randrange(0, total - 1000), r.randint(low, high), r.uniform(0, 30)) for _ in range(n)]


def reads_after_writes(seed, n, total):
    """A write of 1-128 blocks, then 0-8 ms after its completion a read of the same blocks, of some
    of them, running past their end, starting just past them or just before, or the same blocks
    and, 0-2 ms later, the blocks just past them; a read elsewhere 5-20 ms later moves the head."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b = r.choice([1, 2, 4, 8, 16, 32, 64, 128])
        lbn = r.randrange(1000, total - 1000)
        rows.append(("W", lbn, b, r.choice([0.0, r.uniform(0.0, 2.0), r.uniform(2.0, 8.0)])))
        kind = r.randrange(6)
        if kind == 0:
            rows.append(("R", lbn, b, r.uniform(5, 20)))
        elif kind == 1:
            part = r.randint(1, b)
            rows.append(("R", lbn + r.randint(0, b - part), part, r.uniform(5, 20)))
        elif kind == 2:
            rows.append(("R", lbn + r.randint(0, b - 1), r.randint(2, 64), r.uniform(5, 20)))
        elif kind == 3:
            rows.append(("R", lbn + b, r.randint(1, 16), r.uniform(5, 20)))
        elif kind == 4:
            rows.append(("R", max(0, lbn - r.randint(1, 8)), r.randint(1, b + 8), r.uniform(5, 20)))
        else:
            rows.append(("R", lbn, b, r.uniform(0.0, 2.0)))
            rows.append(("R", lbn + b, r.randint(1, 16), r.uniform(5, 20)))
        rows.append(("R", r.randrange(0, total - 1000), r.randint(1, 64), r.uniform(0.0, 3.0)))
    return rows[:n]


def queued_writes(seed, n, total, reread):
    """Runs of 2-6 writes of 1, 8, 16 or 36 blocks each appending to the previous one, 0-50 us to
    0-3 ms apart (most runs somewhere new), writes elsewhere, reads (a share *reread* of them 0-200
    blocks before the last write's end, the others anywhere) 0-20 ms later: fast writes queued on
    the media ("Allow write prebuffering", "Never disconnect"). Each run stays within a segment:
    DiskSim 4.0 fails once the queued writes outgrow it (disk_buffer_transfer_size's assertion)."""
    r = random.Random(seed)
    rows = []
    lbn = r.randrange(100000, total - 100000)
    while len(rows) < n:
        kind = r.random()
        if kind < 0.55:
            if r.random() < 0.7:
                lbn = r.randrange(100000, total - 100000)
            size = r.choice((1, 8, 16, 36))
            top = r.choice((0.05, 0.3, 1.5, 3.0))
            for _ in range(r.randint(2, 6)):
                rows.append(("W", lbn, size, r.uniform(0.0, top)))
                lbn += size
        elif kind < 0.75:
            lbn = r.randrange(100000, total - 100000)
            rows.append(("W", lbn, r.choice((4, 8, 36)), r.uniform(0.0, 3.0)))
        else:
            where = lbn - r.randint(0, 200) if r.random() < reread else r.randrange(100000, total - 100000)
            rows.append(("R", where, r.choice((1, 8, 64)), r.choice((0.0, 0.1, 2.0, 20.0))))
    return rows[:n]


def big_transfers(seed, n, total, write_share):
    """Writes (*write_share*) and reads of 65-600 blocks anywhere, 0-20 ms apart (a tenth back to
    back): larger than atlas_III's 64-block segments. (Writes appending to a large write make this
    DiskSim fail: disk_buffer_transfer_size's seg_owner->inblkno assertion.)"""
    r = random.Random(seed)
    rows = []
    for _ in range(n):
        op = "W" if r.random() < write_share else "R"
        rows.append((op, r.randrange(0, total - 1000), r.randint(65, 600), 0.0 if r.random() < 0.1 else r.uniform(0, 20)))
    # DiskSim 4.0 fails on atlas_III (Low (write) water mark 0, Hold bus entire write xfer 0) at
    # these two (disk_buffer_sector_done's fpcheck assertion: 6000 sector events in one access):
    # left out, as each time DiskSim stopped there
    return [row for row in rows if row[1] not in (2037955, 2052871)]


def writes_into_reads(seed, n, total):
    """A read of 8-64 blocks, then 0-3 ms after its completion (its read-ahead still running) or
    15-30 ms after (read-ahead done) a write of its blocks, into its middle, over its start or its
    end, or just past it, then 1-20 ms later the read again, then a read elsewhere 5-20 ms later."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b = r.choice([8, 16, 32, 64])
        lbn = r.randrange(1000, total - 1000)
        rows.append(("R", lbn, b, r.choice([r.uniform(0.0, 3.0), r.uniform(15.0, 30.0)])))
        kind = r.randrange(5)
        if kind == 0:
            w_lbn, w_n = lbn, b
        elif kind == 1:
            w_n = r.randint(1, b - 2)
            w_lbn = lbn + r.randint(1, b - w_n - 1)
        elif kind == 2:
            w_lbn, w_n = lbn - r.randint(1, 8), r.randint(9, b + 8)
        elif kind == 3:
            w_lbn, w_n = lbn + r.randint(1, b - 1), r.randint(b, b + 16)
        else:
            w_lbn, w_n = lbn + b + r.randint(0, 40), r.randint(1, 16)
        rows.append(("W", w_lbn, w_n, r.uniform(1.0, 20.0)))
        rows.append(("R", lbn, b, r.uniform(5.0, 20.0)))
        rows.append(("R", r.randrange(0, total - 1000), r.randint(1, 64), r.uniform(0.0, 3.0)))
    return rows[:n]


def appended_writes(seed, n, total):
    """A write of 1-32 blocks, 0-1 ms after its completion a write of the blocks just past it (still
    being written by a fast write), 0-5 ms later a read of both, of the first or of the second,
    then a read elsewhere 5-20 ms later."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b, b2 = r.randint(1, 32), r.randint(1, 32)
        lbn = r.randrange(1000, total - 1000)
        rows.append(("W", lbn, b, r.uniform(0.0, 1.0)))
        rows.append(("W", lbn + b, b2, r.uniform(0.0, 5.0)))
        rows.append(r.choice([("R", lbn, b + b2), ("R", lbn, b), ("R", lbn + b, b2)]) + (r.uniform(5.0, 20.0),))
        rows.append(("R", r.randrange(0, total - 1000), r.randint(1, 64), r.uniform(0.0, 3.0)))
    return rows[:n]


def rereads(seed, n, total):
    """Runs of 2-6 sequential reads of 1-64 blocks (each starting at the previous one's end, 0-3 ms
    after its completion), then 0-10 ms later a read of the run's first request again, of blocks
    inside the run, or over its end; a fifth of the runs then a write into the run and a read of
    its blocks; a tenth of the time a read of 100-500 blocks (larger than some segments), then a
    read elsewhere 5-20 ms later: hits with caching, misses without ("Enable caching in buffer")."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        lbn = r.randrange(1000, total - 2000)
        at, run = lbn, []
        for _ in range(r.randint(2, 6)):
            b = r.randint(1, 64)
            rows.append(("R", at, b, r.uniform(0.0, 3.0)))
            run.append((at, b))
            at += b
        kind = r.randrange(3)
        if kind == 0:
            rows.append(("R",) + run[0] + (r.uniform(0.0, 10.0),))
        elif kind == 1:
            first = r.randrange(lbn, at - 1)
            rows.append(("R", first, r.randint(1, at - first), r.uniform(0.0, 10.0)))
        else:
            first = r.randrange(max(lbn, at - 16), at)
            rows.append(("R", first, r.randint(at - first + 1, at - first + 32), r.uniform(0.0, 10.0)))
        if r.random() < 0.2:
            w = r.randrange(lbn, at)
            rows.append(("W", w, r.randint(1, 16), r.uniform(0.0, 5.0)))
            rows.append(("R", w, r.randint(1, 16), r.uniform(0.0, 10.0)))
        if r.random() < 0.1:
            rows.append(("R", r.randrange(0, total - 1000), r.randint(100, 500), r.uniform(0.0, 5.0)))
        rows.append(("R", r.randrange(0, total - 1000), r.randint(1, 64), r.uniform(5.0, 20.0)))
    return rows[:n]


def appending_runs(seed, n, total, largest):
    """Runs of 3-8 writes of 8-*largest* blocks (at most a segment), each appending to the one before,
    0 us (a third), 0-2 ms or 2-20 ms after its completion: fast writes taken while the one before is
    still being written, with that one's blocks in the segment; after a run a read of some of its
    blocks or elsewhere, 5-30 ms later."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        lbn = r.randrange(1000, total - 8 * largest - 1000)
        start = lbn
        for _ in range(r.randint(3, 8)):
            b = r.randint(8, largest)
            rows.append(("W", lbn, b, r.choice((0.0, r.uniform(0.0, 2.0), r.uniform(2.0, 20.0)))))
            lbn += b
        if r.random() < 0.5:
            rows.append(("R", start + r.randint(0, lbn - start - 1), r.randint(1, 64), r.uniform(5.0, 30.0)))
        else:
            rows.append(("R", r.randrange(0, total - 1000), r.randint(1, 64), r.uniform(5.0, 30.0)))
    return rows[:n]


def sequential_reads(seed, n, total):
    """Runs of 5-30 sequential reads of 1-16 blocks (0-300 us apart, a fifth 0-3 ms), the read-ahead
    running more than a segment ahead of the host and held back while a read is sent; after a run, a
    re-read of blocks of its first half (0-3 ms later: dropped from the circular segment or not),
    and now and then a read elsewhere."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b = r.choice((1, 2, 4, 8, 8, 16, r.randint(1, 16)))
        lbn = r.randrange(0, total - 1000)
        start = lbn
        slow = r.random() < 0.2
        for _ in range(r.randint(5, 30)):
            rows.append(("R", lbn, b, r.uniform(0.0, 3.0) if slow else r.uniform(0.0, 0.3)))
            lbn += b
        rows[-1] = rows[-1][:3] + (r.uniform(0.0, 3.0),)
        rows.append(("R", start + r.randint(0, (lbn - start) // 2), r.randint(1, 16), r.uniform(0.0, 3.0)))
        if r.random() < 0.3:
            rows.append(("R", r.randrange(0, total - 1000), r.randint(1, 64), r.uniform(0.0, 3.0)))
    return rows[:n]


def before_defects(seed, n, total, defects):
    """A read (four fifths) or write of 1-16 blocks ending 2-40 blocks before a block remapped elsewhere
    (*defects*, their LBNs), its read-ahead running over it, then 0-20 ms after its completion a read
    or write of 1-64 blocks elsewhere. DiskSim 4.0 fails on an access that covers a remapped block
    or starts just after one (README.md), so none does."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        d = r.choice(defects)
        b = r.randint(1, 16)
        start = d - r.randint(2, 40) - b + 1
        if start < 0:
            continue
        rows.append(("R" if r.random() < 0.8 else "W", start, b, r.uniform(0.0, 20.0)))
        rows.append(("R" if r.random() < 0.7 else "W", r.randrange(100000, total - 1000), r.randint(1, 64),
                     r.uniform(0.0, 20.0)))
    return rows[:n]

def idle_hit_runs(seed, n, total):
    """Runs of 5-30 sequential reads of 40-120 blocks, 0-300 us apart (a fifth 0.3-20 ms), each a hit
    on a segment read ahead while the drive was idle ("Read-ahead on idle hit") or a miss once the
    read-ahead fell behind or was dropped from the circular segment; after a run, now and then a
    re-read of blocks of its second half and a read elsewhere."""
    r = random.Random(seed)
    rows = []
    while len(rows) < n:
        b = r.randint(40, 120)
        lbn = r.randrange(0, total - 10000)
        start = lbn
        for _ in range(r.randint(5, 30)):
            rows.append(("R", lbn, b, r.uniform(0.3, 20.0) if r.random() < 0.2 else r.uniform(0.0, 0.3)))
            lbn += b
        if r.random() < 0.5:
            rows.append(("R", lbn - r.randint(b, (lbn - start) // 2 + b), r.randint(1, 64), r.uniform(0.0, 3.0)))
        if r.random() < 0.5:
            rows.append(("R", r.randrange(0, total - 1000), r.randint(1, 64), r.uniform(0.0, 3.0)))
    return rows[:n]


def write(name, rows):
    (HERE / name).write_text("".join(f"{op} Miss {lbn} {b} 0.0 {gap * 1000:.1f}\n" for op, lbn, b, gap in rows))


if __name__ == "__main__":
    write("synthetic_interrupted.trace", interrupted(22, 600, 8887200, 0.3))   # cheetah4LP's blocks
    write("synthetic_hp_pairs.trace", pairs(23, 600, 2054864))                 # hp_c2247a's
    write("synthetic_hp_tails.trace", tails(24, 600, 2054864, 128))            # its maximum read-ahead
    write("synthetic_overlapping_writes.trace", overlapping_writes(25, 600, 17916240))   # ibm18es's
    write("synthetic_big_reads.trace", big_reads(26, 300, 8887200, 283, 800))   # cheetah4LP: 282-block segments
    write("synthetic_reads_after_writes.trace", reads_after_writes(27, 500, 2054864))   # hp_c2247a's blocks
    # cheetah4LP's blocks (the smallest of the drives it is run on: ibm18es, atlas10k)
    write("synthetic_queued_writes.trace", queued_writes(27, 600, 8887200, 0.3))
    write("synthetic_queued_writes_far_reads.trace", queued_writes(28, 600, 8887200, 0.0))
    write("synthetic_big_transfers.trace", big_transfers(27, 400, 2054864, 0.6))     # within hp_c2247a's blocks
    write("synthetic_writes_into_reads.trace", writes_into_reads(28, 400, 2054864))   # hp_c2247a's blocks
    write("synthetic_appended_writes.trace", appended_writes(29, 400, 2054864))   # hp_c2247a's blocks
    write("synthetic_rereads.trace", rereads(30, 600, 2054864))   # hp_c2247a's blocks
    write("synthetic_appending_runs.trace", appending_runs(30, 400, 2054864, 64))   # atlas_III's segments of 64
    write("synthetic_sequential_reads.trace", sequential_reads(30, 600, 8887200))   # cheetah4LP's blocks
    # the blocks cheetah4LP_defects_remapped's model file moves to spare sectors (variants.json)
    write("synthetic_before_defects.trace", before_defects(31, 400, 8887200, (10, 4000, 9000)))
    write("synthetic_idle_hit_runs.trace", idle_hit_runs(32, 600, 8887200))   # cheetah4LP's blocks
