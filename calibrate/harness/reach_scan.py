"""The read-ahead's mean reach, scanned block by block at fresh places.

:func:`~diskmodel.calibrate.harness.buffer_probe.size_buffer` finds the farthest stride
the read-ahead serves by bisecting on verdicts, each of a few fresh places. Where the
read-ahead stops at a fixed count of blocks (a segment, or a maximum read-ahead), that
is its reach. Where it runs to the end of the track holding the read (DiskSim's
read-ahead scheme 4, ``disk_buffer_get_max_readahead``), its reach depends on where the
read lies on its track: anywhere between none and a track. A stride near the middle is
then served at about half the places, and the bisection's verdicts there are coin
tosses; on atlas10k they came out 17-34 % off the mean reach, seed after seed.

A scan reads, after one fresh read and the wait for its read-ahead, the blocks at
strides ``offset + k step`` in turn. Each is a hit until the first one past the reach,
which is a miss; the reach lies between the last stride served and that one, and
their midpoint stands (the offset, drawn per place, makes it unbiased over places). The
mean over places is the mean reach that the segment size of a calibrated drive stands
for; a fixed reach gives the same value at every place, so a few places do.

A hit and a miss are told apart by the reads after them, not by one read's time. The
miss starts a new read-ahead at its block, and each later read of the scan asks for a
block *step* blocks further on, which that read-ahead reaches only as the platter turns
under it: every read after the first miss is paced by the media, and takes at least
*step* blocks' passage less the host's time between two reads. The step is set so that
this passage is at least ``PACE_HITS`` times a hit's time (the median of a hundred hits
read before the scans, a block read again and again), and a read is slow past the
geometric mean of a hit's time and that passage. The reach ends before the first of two
slow reads in a row. A hit the host delays (through the kernel, one in some tens of a
scan's hits took twice a hit's time) is one slow read followed by fast ones, and the
scan goes on past it; a miss as fast as a hit (its sector under the head at once) is
followed by paced reads, and the scan ends one stride late.

A scan that ends late goes on into the read-ahead the miss itself started: that place's
value is the reach and one more read-ahead's, at least twice a fixed reach, or past the
end of the next track. Such values lie beyond the bulk: values past ``TAIL_CUT`` times
the 90th percentile are left out, and so are the places served up to the scan's last
stride. Each place also waits a share of a revolution drawn afresh before it is
scanned, so that the head's angle at the first miss is anywhere, not where one fixed
wait puts it at every place.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from diskmodel.calibrate.harness.buffer_probe import BufferMeasurement, _fresh, wait_for_read_ahead
from diskmodel.calibrate.harness.meter import BudgetExhausted, Meter

__all__ = ["scan_reach", "mean_reach", "scan_step", "reach_end"]

#: A scan's last stride, in segments as the bisection found it (the reach of a track's end runs to a track,
#: twice its mean).
REACH_CAP = 4
#: Strides of a scan up to its last one.
REACH_STEPS = 24
#: The fewest strides a scan reads before its last one: where the step the media's pace asks for is long beside
#: the segment the bisection found, the scan reads past it (atlas_III's bisection found 17 blocks of a mean
#: reach of 55, and its step is 55).
REACH_MIN_STRIDES = 8
#: Places scanned: at least, at most.
REACH_PLACES = (8, 240)
#: The scans stop once the mean reach's standard error is this share of it.
REACH_SE = 0.03
#: Values past this many times the 90th percentile are a scan that went on past a miss (module doc).
TAIL_CUT = 1.25
#: Hits read before the scans, a block read again and again: their median is a hit's time.
HIT_SAMPLES = 100
#: A scan's step lets the media pass at least this many hits' time between two reads (module doc).
PACE_HITS = 4.0


def mean_reach(values) -> tuple[float, float, int] | None:
    """The mean of *values* (one reach [blocks] a place) without the tail the module doc describes, its
    standard error and the values kept; None for fewer than two."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return None
    v = v[v <= TAIL_CUT * np.percentile(v, 90)]
    if v.size < 2:
        return None
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)), int(v.size)


def reach_end(strides, slow) -> float | None:
    """A place's reach [blocks] from its scan: *strides* read in turn and whether each read was *slow*. The
    reach ends before the first of two slow reads in a row (module doc): the midpoint between the stride
    before that read and its own, less one (a stride s reads the block s blocks on). None where no two slow
    reads follow one another."""
    s = np.asarray(strides, dtype=float)
    slow = np.asarray(slow, dtype=bool)
    both = np.flatnonzero(slow[:-1] & slow[1:])
    if both.size == 0:
        return None
    j = int(both[0])
    return 0.5 * ((s[j - 1] if j > 0 else 0.0) + s[j] - 1)


def scan_step(cap: int, hit_s: float, block_s: float) -> int:
    """A scan's step [blocks]: a ``REACH_STEPS``-th of *cap*, and at least the blocks that take ``PACE_HITS``
    hits' time (*hit_s*) to pass under the head (*block_s* each), so that a read paced by the media after a
    miss is slow beside a hit (module doc)."""
    return max(1, cap // REACH_STEPS, int(math.ceil(PACE_HITS * hit_s / block_s)))


def _scan_place(meter: Meter, rng: np.random.Generator, cap: int, step: int, slow_s: float, rate_at,
                found: BufferMeasurement, block_s: float) -> float | None:
    """One place's reach [blocks] (:func:`reach_end`: a read slower than *slow_s* is slow), or None where the
    strides up to *cap* (and one past it) did not end it."""
    b = meter.block_size_bytes
    o = _fresh(meter, rng, (cap + step + 2) * b)
    meter.read(o, b, tag="buffer")
    wait_for_read_ahead(meter, o, cap, rate_at, found, block_s)
    if meter.can_idle():
        # and a share of a revolution drawn afresh: the head's angle when the first block past the reach is
        # asked for is then anywhere, and a miss is as fast as a hit only as often as the hit's time is a
        # share of a revolution (a wait of one length at every place can put that angle at the same place)
        meter.idle(float(rng.uniform(0.0, found.rough_period_s)))
    # then the block read, read twice again (hits, their times not used): through the kernel the first request
    # after a wait takes longer than a hit back to back (the host's CPUs wake)
    meter.read_many([o, o], b, tag="buffer")
    strides, slow = [], []
    for s in range(int(rng.integers(1, step + 1)), cap + step + 1, step):
        strides.append(s)
        slow.append(meter.read(o + s * b, b, tag="buffer") > slow_s)
        if len(slow) > 1 and slow[-1] and slow[-2]:
            break
    return reach_end(strides, slow)


def scan_reach(meter: Meter, rng: np.random.Generator, found: BufferMeasurement, rate_at, *,
               max_s: float, block_s: float | None = None) -> BufferMeasurement:
    """*found* (a buffer :func:`~diskmodel.calibrate.harness.buffer_probe.size_buffer` sized) with its segment the
    mean reach the scans find (module doc) plus the block read, scanning for at most *max_s* of the budget;
    *found* as it was where fewer than the least places were paid for. *block_s*: the time a block takes to
    pass under the head, where the rotation stage measured it (the read-ahead's pace)."""
    if not found.detected or not found.segment_bytes or not found.hit_s or not found.rough_period_s:
        return found  # no hit's time to tell a hit by (a host whose timer rounds a hit to nothing)
    if block_s is None or not block_s > 0:
        # the media's pace is what tells a miss (module doc); a zone's rate can be the interface's, far slower
        return replace(found, detail=found.detail + "; the reach was not scanned (no block passage measured)")
    b = meter.block_size_bytes
    cap = max(2, REACH_CAP * int(found.segment_bytes) // b)
    # a hit's time here and now: one block read, then read again and again (each a hit)
    try:
        o = _fresh(meter, rng, 2 * b)
        meter.read(o, b, tag="buffer")
        hit_s = float(np.median(meter.read_many(np.full(HIT_SAMPLES, o), b, tag="buffer")))
    except BudgetExhausted:
        return replace(found, detail=found.detail + "; the reach scans were not paid for (no hits read)")
    step = scan_step(cap, hit_s, block_s)
    cap = max(cap, REACH_MIN_STRIDES * step)
    slow_s = math.sqrt(hit_s * step * block_s)
    reads = cap // step + 2
    until = meter.used_s + max(float(max_s), 0.0)
    values, past_cap = [], 0
    while len(values) < REACH_PLACES[1] and past_cap < REACH_PLACES[1]:
        got = mean_reach(values) if len(values) >= REACH_PLACES[0] else None
        if got is not None and got[1] <= REACH_SE * got[0]:
            break
        if meter.used_s >= until or not meter.can_afford(reads + 2, b, "buffer"):
            break
        try:
            v = _scan_place(meter, rng, cap, step, slow_s, rate_at, found, block_s)
        except BudgetExhausted:
            break
        if v is None:
            past_cap += 1
        else:
            values.append(v)
    got = mean_reach(values) if len(values) >= REACH_PLACES[0] else None
    if got is None:
        return replace(found, detail=found.detail + f"; the reach scans were not paid for ({len(values)} places)")
    mean, se, kept = got
    seg = int(round(mean + 1)) * b
    return replace(found, segment_bytes=seg, detail=(
        f"{found.detail}; scanned block by block at {len(values)} fresh places ({kept} kept, {past_cap} served "
        f"to the last stride; strides of {step} blocks, a hit {hit_s * 1e3:.3f} ms, a read slow past "
        f"{slow_s * 1e3:.3f} ms), the read-ahead reaches {mean * b:.0f} bytes on average (standard error "
        f"{se * b:.0f}): segment {seg} bytes"))
