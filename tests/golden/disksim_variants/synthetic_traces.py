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


def write(name, rows):
    (HERE / name).write_text("".join(f"{op} Miss {lbn} {b} 0.0 {gap * 1000:.1f}\n" for op, lbn, b, gap in rows))


if __name__ == "__main__":
    write("synthetic_interrupted.trace", interrupted(22, 600, 8887200, 0.3))   # cheetah4LP's blocks
    write("synthetic_hp_pairs.trace", pairs(23, 600, 2054864))                 # hp_c2247a's
    write("synthetic_hp_tails.trace", tails(24, 600, 2054864, 128))            # its maximum read-ahead
    write("synthetic_overlapping_writes.trace", overlapping_writes(25, 600, 17916240))   # ibm18es's
    write("synthetic_big_reads.trace", big_reads(26, 300, 8887200, 283, 800))   # cheetah4LP: 282-block segments
    write("synthetic_big_transfers.trace", big_transfers(27, 400, 2054864, 0.6))     # within hp_c2247a's blocks
