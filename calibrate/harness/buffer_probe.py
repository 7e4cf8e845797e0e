"""The drive's buffer: whether it reads ahead, its segment and its segments, found with patterns of
one-block reads as DIXtrac does (Schindler & Ganger 1999); see :mod:`diskmodel.calibrate.harness.mechanics`,
whose stages measure the rest with patterns this buffer cannot serve.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from diskmodel.calibrate.harness.meter import Meter
from diskmodel.model.units import KIB, MIB

__all__ = ["BufferMeasurement", "measure_buffer", "size_buffer", "wait_for_read_ahead"]


def _fresh(meter: Meter, rng: np.random.Generator, room_bytes: int, low: bool = False) -> int:
    """A random aligned offset with *room_bytes* after it (or before it, *low*) on the device."""
    size, b = meter.size_bytes, meter.block_size_bytes
    room = min(int(room_bytes), size - 2 * b)
    o = int(rng.uniform(0, size - room - b)) // b * b
    return o + room if low else o


# ---------------------------------------------------------------------------
# The buffer
# ---------------------------------------------------------------------------

@dataclass
class BufferMeasurement:
    """Read-ahead found or not; its segment size [bytes] and segments (None: not measured);
    the time of a read served by the buffer [s]; a rough revolution [s] (a descending
    read's time), or None where reads take under a millisecond."""

    detected: bool
    segment_bytes: int | None
    segments: int | None
    hit_s: float | None
    rough_period_s: float | None
    detail: str
    reads: int = 0
    bus_block_s: float = 0.0  # a hit's time per block more (the bus transfer of a block)
    no_revolution_why: str = ""  # why the descending reads gave no rough revolution, where they did not


# The interquartile spread of descending reads past which their waits are taken for the host's stalls: every
# such read on a rotating drive waits for the same sector to come round (a revolution less the blocks and the
# overheads passed), so only the host's gap between requests spreads them, a small part of a revolution.
_REVOLUTION_SPREAD = 0.25


def _spread(times) -> float:
    """The interquartile range of *times*."""
    q25, q75 = np.percentile(times, [25, 75])
    return float(q75 - q25)


def _confirm_revolution(meter: Meter, rng: np.random.Generator, back: list, locations: int):
    """The descending reads again at as many fresh places, with the first ones: their median and
    interquartile spread. A drive's descending read waits about a revolution every time; a flash device
    under a busy host waits over a millisecond only when a stall meets it, so a median past a millisecond
    from a few reads that disagree is confirmed on twice as many before it is taken for a revolution."""
    b = meter.block_size_bytes
    back = list(back)
    for _ in range(locations):
        o = _fresh(meter, rng, 4 * b, low=True)
        back.append(meter.read_many([o, o - b], b, tag="buffer")[1])
    return back, float(np.median(back)), _spread(back)


def measure_buffer(meter: Meter, rng: np.random.Generator, *, locations: int = 5) -> BufferMeasurement:
    """Find the read-ahead (see module doc), and a buffer hit's time; :func:`size_buffer` sizes it."""
    b = meter.block_size_bytes
    reads0 = meter.reads
    fwd, back, again = [], [], []
    for _ in range(locations):
        o = _fresh(meter, rng, 4 * b, low=True)
        back.append(meter.read_many([o, o - b], b, tag="buffer")[1])
    bk = float(np.median(back))
    if bk > 1e-3 and _spread(back) > _REVOLUTION_SPREAD * bk:
        back, bk, spread = _confirm_revolution(meter, rng, back, locations)
        if spread > _REVOLUTION_SPREAD * bk:
            why = (f"the reads of the block before the last one spread over {spread * 1e3:.3f} ms (interquartile) "
                   f"about their median {bk * 1e3:.3f} ms: the host's stalls, not a revolution")
            return BufferMeasurement(False, None, None, None, None, why, meter.reads - reads0, no_revolution_why=why)
    # The next block is asked for once the read-ahead has had the time to read it (DIXtrac's delay):
    # a request for the block under the head, not yet read, is a miss that waits a revolution
    # (disk_buffer_check_read_segments: a hit only on blocks read, "almost read hits" aside), and a
    # one-block read completes before the read-ahead has read the next block on a slow platter.
    settle = bk / 8 if bk > 1e-3 and meter.can_idle() else 0.0
    for _ in range(locations):
        o = _fresh(meter, rng, 4 * b)
        meter.read(o, b, tag="buffer")
        if settle:
            meter.idle(settle)
        t = meter.read_many([o + b, o], b, tag="buffer")
        fwd.append(t[0])
        again.append(t[1])
    f, hit = float(np.median(fwd)), float(np.median(again))
    rough = bk if bk > 1e-3 else None
    if rough is None or not (f < 0.5 * bk and bk - f > 1e-3):
        why = ("the block after a fresh read takes as long as the one before it "
               f"({f * 1e3:.3f} ms against {bk * 1e3:.3f} ms): no read-ahead")
        return BufferMeasurement(False, None, None, None, rough, why, meter.reads - reads0)
    hit_s = min(f, hit)
    # a hit of two blocks against one: the bus's time per block
    o = _fresh(meter, rng, 8 * b)
    meter.read(o, b, tag="buffer")
    one = meter.read_many(np.full(6, o), b, tag="buffer")
    two = meter.read_many(np.full(6, o), 2 * b, tag="buffer")
    bus = max(float(np.median(two) - np.median(one)), 0.0)
    detail = (f"read-ahead: the block after a fresh read takes {f * 1e3:.3f} ms, the one before it "
              f"{bk * 1e3:.3f} ms")
    return BufferMeasurement(True, None, None, hit_s, rough, detail, meter.reads - reads0, bus)


# A verdict from reads at fresh places, each fast or slow against a threshold, by Wald's sequential probability
# ratio test (Wald 1945, "Sequential tests of statistical hypotheses"): a place's read is fast with probability
# _P_FAST_HIT where the buffer serves it (a slow one: a host outlier, a preempted thread or a late wake-up), and
# at most _P_FAST_MISS where it does not (a miss whose sector comes under the head at once is as fast as a hit:
# about the threshold's share of a revolution). Places are read until the evidence passes a bound: a hit taken
# for a miss (which ends a search below the segment) is held to _MISSED_ERROR, four slow places in a row; a miss
# taken for a hit to _SERVED_ERROR, three fast places in a row. One slow place among fast ones, or two, takes a
# few more places to outweigh, not the verdict.
_P_FAST_HIT = 0.8
_P_FAST_MISS = 0.3
_SERVED_ERROR = 0.06
_MISSED_ERROR = 3e-3
_VERDICT_PLACES = 24  # the most places one verdict reads (past them: the evidence's sign)


def _verdict(fast_at_a_fresh_place) -> bool:
    """Whether the reads *fast_at_a_fresh_place* () -> bool makes are hits (see above)."""
    up, down = math.log(_P_FAST_HIT / _P_FAST_MISS), math.log((1 - _P_FAST_HIT) / (1 - _P_FAST_MISS))
    served = math.log((1 - _MISSED_ERROR) / _SERVED_ERROR)
    missed = math.log(_MISSED_ERROR / (1 - _SERVED_ERROR))
    evidence = 0.0
    for _ in range(_VERDICT_PLACES):
        evidence += up if fast_at_a_fresh_place() else down
        if not missed < evidence < served:
            break
    return evidence > 0


def _farthest_served(served, first: int, most: int) -> tuple[int, int | None]:
    """The farthest stride *served* serves (of *first* doubled, while at most *most*), and the
    first it does not (None: every stride served). The read-ahead serves every stride up to its
    reach and none past it: where the first stride is not served, twice it is tried, and if that
    is served the first is measured again and its second verdict stands (a host outlier can make a
    served stride look missed), so that no one verdict ends the search at one block."""
    lo, s = 0, first
    while s <= most:
        if served(s):
            lo, s = s, 2 * s
            continue
        if lo == 0 and 2 * s <= most and served(2 * s) and served(s):
            lo, s = 2 * s, 4 * s
            continue
        return lo, s
    return lo, None


def _bisect(served, lo: int, hi: int, close) -> tuple[int, int]:
    """The edge between *lo* (served) and *hi* (not), bisected until ``hi - lo <= close(lo)``. A
    verdict that went wrong moves every later bracket to its side, so the last bracket's ends are
    measured again: a last miss found served, or a last hit found missed, contradicts the drive's one
    edge, and the bisection goes on from the bracket before it (twice at most)."""
    los, his = [lo], [hi]
    for _ in range(3):
        while his[-1] - los[-1] > close(los[-1]):
            mid = (los[-1] + his[-1]) // 2
            (los if served(mid) else his).append(mid)
        if len(his) > 1 and served(his[-1]):
            los.append(his.pop())
        elif len(los) > 1 and not served(los[-1]):
            his.append(los.pop())
        else:
            break
    return los[-1], his[-1]


def wait_for_read_ahead(meter: Meter, o: int, stride: int, rate_at, found: BufferMeasurement,
                        block_s: float | None = None) -> None:
    """Leave the read-ahead after a one-block read at *o* the time to reach *stride* blocks past it: half as
    long again as the zone's rate (*rate_at*) takes over them, and two revolutions (*found*'s rough one).
    Where the time a block takes to pass under the head is known (*block_s*), the read-ahead, which reads at
    the media's pace, needs no longer than half as long again as the blocks' passage, and a revolution for
    each track they cover and two more (the track changes' waits): the shorter of the two stands. A zone's
    rate held to a slow interface's is the longer."""
    b = meter.block_size_bytes
    rough = found.rough_period_s
    need = 1.5 * stride * b / float(rate_at(np.array([o]))[0]) + 2 * rough
    if block_s is not None and block_s > 0:
        need = min(need, 2.5 * stride * block_s + 2 * rough)
    if meter.can_idle():
        # no request meanwhile: on some drives a request, even a hit, stops the read-ahead
        # (DiskSim's read_ahead_on_idle_hit off)
        meter.idle(need)
    else:
        count = int(min(max(need / max(found.hit_s, 1e-5), 1), 20_000))
        meter.read_many(np.full(count, o), b, tag="buffer")


def size_buffer(meter: Meter, rng: np.random.Generator, found: BufferMeasurement, rate_at, *,
                max_segment_bytes: int = 32 * MIB, max_segments: int = 32) -> BufferMeasurement:
    """The segment size and number of segments of a buffer :func:`measure_buffer` found
    (``rate_at``: offsets -> bytes/s, the zone rates, to time the read-ahead)."""
    b = meter.block_size_bytes
    reads0 = meter.reads
    hit_s, rough, detail = found.hit_s, found.rough_period_s, found.detail
    threshold = math.sqrt(hit_s * rough)

    def served(stride: int) -> bool:
        """Is the block *stride* blocks after a fresh read served from the buffer, once the
        read-ahead has had the time to get there? A verdict (:func:`_verdict`) of fresh places."""
        def fast_at_a_fresh_place() -> bool:
            o = _fresh(meter, rng, (stride + 2) * b)
            meter.read(o, b, tag="buffer")
            wait_for_read_ahead(meter, o, stride, rate_at, found)
            return meter.read(o + stride * b, b, tag="buffer") <= threshold
        return _verdict(fast_at_a_fresh_place)

    # Segment size: the farthest stride served, by doubling from 8 KiB, then bisection to 1/16.
    lo, hi = _farthest_served(served, max(1, 8 * KIB // b), max(1, max_segment_bytes // b))
    if hi is None:
        seg_bytes = None
        detail += f"; every stride up to {max_segment_bytes // MIB} MiB was served: segment larger than that"
    else:
        lo, hi = _bisect(served, lo, hi, lambda lo: max(1, lo // 16))
        seg_bytes = (lo + 1) * b if lo else b
        detail += (f"; the read-ahead serves strides up to {lo * b} bytes, not {hi * b}: segment "
                   f"{seg_bytes} bytes")
    # Segments: how many fresh reads (far apart) the first one's data survives.
    span = max(seg_bytes or MIB, MIB) * 4

    def survives(n: int) -> bool:
        def fast_at_a_fresh_place() -> bool:
            offs = [_fresh(meter, rng, span) for _ in range(n + 1)]
            t = meter.read_many(np.array(offs + [offs[0]], dtype=np.int64), b, tag="buffer")
            return t[-1] < threshold
        return _verdict(fast_at_a_fresh_place)

    lo, hi = _farthest_served(survives, 1, max_segments)
    if hi is None:
        segments = None
        detail += f"; a read's data survived {max_segments} other reads: more than {max_segments} segments"
    else:
        lo, hi = _bisect(survives, lo, hi, lambda lo: 1)
        segments = lo + 1  # its own and lo others
        detail += f"; a read's data survives {lo} other reads, not {hi}: {segments} segments"
    return BufferMeasurement(True, seg_bytes, segments, hit_s, rough, detail, found.reads + meter.reads - reads0,
                             found.bus_block_s)
