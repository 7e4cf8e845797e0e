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

A read is a hit within a limit set from a hundred hits read before the scans (a block
read again and again): their 99th percentile, and as far again. A miss takes a track
change and part of a revolution more, and is seldom that fast. Where it is, the scan goes
on into the read-ahead the miss itself started: that place's value is the reach and one
more read-ahead's, at least twice a fixed reach, or past the end of the next track. Such
values lie beyond the bulk: values past ``TAIL_CUT`` times the 90th percentile are left
out, and so are the places served up to the scan's last stride. Each place also waits a
share of a revolution drawn afresh before it is scanned, so that the head's angle at the
first miss is anywhere, not where one fixed wait puts it at every place.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from diskmodel.calibrate.harness.buffer_probe import BufferMeasurement, _fresh, wait_for_read_ahead
from diskmodel.calibrate.harness.meter import BudgetExhausted, Meter

__all__ = ["scan_reach", "mean_reach", "hit_limit_s"]

#: A scan's last stride, in segments as the bisection found it (the reach of a track's end runs to a track,
#: twice its mean).
REACH_CAP = 4
#: Strides of a scan up to its last one.
REACH_STEPS = 24
#: Places scanned: at least, at most.
REACH_PLACES = (8, 240)
#: The scans stop once the mean reach's standard error is this share of it.
REACH_SE = 0.03
#: Values past this many times the 90th percentile are a scan that went on past a miss (module doc).
TAIL_CUT = 1.25
#: Hits read before the scans, a block read again and again, that the scans' limit is set from (:func:`hit_limit_s`).
HIT_SAMPLES = 100


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


def _scan_place(meter: Meter, rng: np.random.Generator, cap: int, step: int, fast_s: float, rate_at,
                found: BufferMeasurement, block_s: float | None) -> float | None:
    """One place's reach [blocks]: the midpoint between the last stride served and the first not (a read
    slower than *fast_s*), or None where every stride up to *cap* was served."""
    b = meter.block_size_bytes
    o = _fresh(meter, rng, (cap + 2) * b)
    meter.read(o, b, tag="buffer")
    wait_for_read_ahead(meter, o, cap, rate_at, found, block_s)
    if meter.can_idle():
        # and a share of a revolution drawn afresh: the head's angle when the first block past the reach is
        # asked for is then anywhere, and a miss is as fast as a hit only as often as the hit's time is a
        # share of a revolution (a wait of one length at every place can put that angle at the same place)
        meter.idle(float(rng.uniform(0.0, found.rough_period_s)))
    # then the block read, read twice again (hits, their times not used): through the kernel the first request
    # after a wait takes longer than a hit back to back (the host's CPUs wake), and the scan's first read would
    # end it (atlas10k's segment came out 6 blocks); the scan's reads then follow one another as the hits the
    # limit was set from do
    meter.read_many([o, o], b, tag="buffer")
    last = 0
    for s in range(int(rng.integers(1, step + 1)), cap + 1, step):
        if meter.read(o + s * b, b, tag="buffer") > fast_s:
            return 0.5 * (last + s - 1)
        last = s
    return None


def hit_limit_s(hits, first_s: float) -> float:
    """The time past which a scan's read is no hit, from hits' times (*hits*): their 99th percentile, and as
    far again past it as it lies past their median; *first_s* (the verdicts' threshold, a hit's time and a
    revolution's geometric mean) where that is more, or where fewer than HIT_SAMPLES hits are given. The nearer
    the limit to a hit's time, the fewer misses (a track change and a share of a revolution) pass for hits;
    the host's delays of a hit, a tail of any shape, lie under it but for about one in a hundred and more."""
    if len(hits) < HIT_SAMPLES:
        return first_s
    med, q99 = np.percentile(np.asarray(hits, dtype=float), [50, 99])
    return float(min(first_s, q99 + (q99 - med)))


def scan_reach(meter: Meter, rng: np.random.Generator, found: BufferMeasurement, rate_at, *,
               max_s: float, block_s: float | None = None) -> BufferMeasurement:
    """*found* (a buffer :func:`~diskmodel.calibrate.harness.buffer_probe.size_buffer` sized) with its segment the
    mean reach the scans find (module doc) plus the block read, scanning for at most *max_s* of the budget;
    *found* as it was where fewer than the least places were paid for. *block_s*: the time a block takes to
    pass under the head, where the rotation stage measured it (the read-ahead's pace)."""
    if not found.detected or not found.segment_bytes or not found.hit_s or not found.rough_period_s:
        return found  # no hit's time to tell a hit by (a host whose timer rounds a hit to nothing)
    b = meter.block_size_bytes
    cap = max(2, REACH_CAP * int(found.segment_bytes) // b)
    step = max(1, cap // REACH_STEPS)
    first_s = math.sqrt(found.hit_s * found.rough_period_s)
    # the hits' own spread, here and now: one block read, then read again and again (each a hit)
    try:
        o = _fresh(meter, rng, 2 * b)
        meter.read(o, b, tag="buffer")
        limit_s = hit_limit_s(meter.read_many(np.full(HIT_SAMPLES, o), b, tag="buffer"), first_s)
    except BudgetExhausted:
        return replace(found, detail=found.detail + "; the reach scans were not paid for (no hits read)")
    until = meter.used_s + max(float(max_s), 0.0)
    values, past_cap = [], 0
    while len(values) < REACH_PLACES[1] and past_cap < REACH_PLACES[1]:
        got = mean_reach(values) if len(values) >= REACH_PLACES[0] else None
        if got is not None and got[1] <= REACH_SE * got[0]:
            break
        if meter.used_s >= until or not meter.can_afford(REACH_STEPS + 2, b, "buffer"):
            break
        try:
            v = _scan_place(meter, rng, cap, step, limit_s, rate_at, found, block_s)
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
        f"to the last stride; a hit within {limit_s * 1e3:.3f} ms), the read-ahead reaches {mean * b:.0f} bytes on average (standard error "
        f"{se * b:.0f}): segment {seg} bytes"))
