"""The chains that time a revolution: forward ones on the sector's track, or descending ones alone.

The forward chains' helpers serve :func:`~diskmodel.calibrate.harness.mechanics.measure_rotation`
(its module doc tells how); the rest of this module is the period from descending chains alone, for a
drive whose read-ahead covers a track.

:func:`~diskmodel.calibrate.harness.mechanics.measure_rotation` times a
revolution as a descending read's wait less a forward read's on the same track.
A drive that reads ahead further than a track (DiskSim's HP C2490A: 128 blocks
of read-ahead over 68-108 sectors per track, and a read miss's command overhead
of 3.6 ms, 0.39 rev) serves every forward stride on the same track from its
buffer, and a forward stride past the read-ahead leaves the track: no forward
read waits for its sector there, and that stage finds no period.

A descending chain ``c, c - k, c - 2k ..`` (nothing buffered: a read-ahead runs
forward) still shows the revolution. On the read's own track its sector lies
``k + 1`` blocks behind where the last read ended, so the drive waits
``T - (k + 1) x`` for it, less the host's gap and the drive's own time between
the two, the same for every stride. The reads on the same track then lie on one
line, ``a - k x`` (x: a block's passage). Past the stride at which that wait no
longer covers the command overhead, the read loses the revolution and takes
``a - k x + T``. The reads that cross to the track below wait a skew less (or
more), on lines of their own; they are told apart by their distance from the
same-track lines. So:

* the line from the same-track reads of chains at strides below the limit (a
  least-squares fit of each chain's median on its stride);
* strides stepped up an eighth of a track at a time until no read of a chain
  lies on the line and some lie a revolution (the rough period from the
  buffer probe) above it: the revolution is the median of those reads less the
  line at their stride. Whichever of the host's gaps each read met, the line
  and the lost reads at a stride past the limit met the same gaps, so the
  difference holds no gap;
* the command overhead as the other stage finds it, the limit between the
  reads that caught their sector and those that lost it, on their strides'
  lines (:func:`~diskmodel.calibrate.harness.head_switch.line_limit`), from a
  bisection of the stride between the last caught and the first lost.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import median_abs_deviation

from diskmodel.calibrate.harness.buffer_probe import BufferMeasurement
from diskmodel.calibrate.harness.meter import ChainDoesNotFit, Meter, chain

__all__ = ["DescendingPeriod", "below", "chains_at_median_gap", "cluster_median", "descending_note",
           "descending_period", "forward_start", "lost_below"]

#: Reads of a chain on the same-track line, or a revolution above it, that make it count.
MIN_ON_LINE = 3
#: Strides past the limit whose lost reads give the period.
LOST_STRIDES = 2


@dataclass(frozen=True)
class DescendingPeriod:
    """One start point's revolution from descending chains: the period [s], a block's passage x [s],
    the line's constant a [s] (a read one block back takes ``a - x``), and the reads at the strides of
    the bisection round the limit (their times [s], strides [blocks, negative: descending] and whether
    each caught its sector) for the command overhead's limit."""

    period_s: float
    block_s: float
    line_s: float
    limit_times_s: np.ndarray
    limit_strides: np.ndarray
    limit_caught: np.ndarray


def cluster_median(t: np.ndarray, width_s: float, rough: float) -> float:
    """The median of the most reads of *t* that lie within *width_s* of each other (the spread of the
    host's gaps): the reads of a chain that met their sector alike, without those that changed track
    (they wait the skew longer), were served from the buffer (a read-ahead that reached them) or lost a
    revolution (a host gap the stride did not clear: not counted however many, as they lie half a
    rough revolution *rough* or more above the least read)."""
    v = np.sort(np.asarray(t, dtype=float))
    v = v[v <= v[0] + 0.5 * rough]
    ends = np.searchsorted(v, v + width_s, side="right")
    i = int(np.argmax(ends - np.arange(v.size)))
    return float(np.median(v[i:ends[i]]))


@dataclass
class _SameTrackLine:
    """The descending chains' same-track line ``a - k x`` [s], least squares over each caught stride's
    median: the strides [blocks] and medians [s] so far, its constant a [s] and slope x [s a block]."""

    strides: list
    medians: list
    a_s: float = 0.0
    x_s: float = 0.0

    def __post_init__(self):
        self.refit()

    def refit(self) -> None:
        slope, self.a_s = np.polyfit(np.asarray(self.strides, dtype=float), np.asarray(self.medians), 1)
        self.x_s = -float(slope)

    def at(self, k: int) -> float:
        return self.a_s - k * self.x_s

    def add(self, k: int, median_s: float) -> None:
        self.strides.append(k)
        self.medians.append(median_s)
        self.refit()


@dataclass
class _LimitReads:
    """The same-track reads of every chain read past the first two: times [s], strides [blocks,
    negative: descending] and whether each caught its sector."""

    times_s: list = field(default_factory=list)
    strides: list = field(default_factory=list)
    caught: list = field(default_factory=list)

    def add(self, t: np.ndarray, k: int, caught: bool) -> None:
        self.times_s.extend(t.tolist())
        self.strides.extend([-k] * t.size)
        self.caught.extend([caught] * t.size)


def descending_period(meter, start_bytes: int, *, rough_s: float, x_rough_s: float, width_s: float,
                      reads: int = 15) -> DescendingPeriod | None:
    """The revolution at *start_bytes* from descending chains (see the module doc), or None where
    the chains show no same-track line that loses a revolution past some stride (no rotation, or
    the host's noise hides it). *rough_s*: the rough period (a read one block back); *x_rough_s*: a
    block's time at the zone's rate (never below the media's passage); *width_s*: the spread of the
    host's gaps, within which the reads of one line lie. Unlike the forward chains' limit, the lines
    tell a caught read from a lost one whatever the command overhead (past half a revolution too)."""
    b = meter.block_size_bytes
    cursor = int(start_bytes)

    def read(k: int) -> np.ndarray:
        """A chain at stride k below the last (wrapping round to the device's end)."""
        nonlocal cursor
        t = chain(meter, cursor, -k, reads, "rotation")
        cursor -= (reads + 3) * k * b
        if cursor < (reads + 3) * k * b:
            cursor = meter.size_bytes - (reads + 3) * b
        return t

    # a stride well short of the limit (x_rough_s is never below the media's passage), then the track's
    # length from the line's slope: a zone's rate holds the skews and, on a drive behind a slower
    # interface, the bus, so its block time can be several times the media's
    q = max(2, int(round(rough_s / x_rough_s / 8)))
    line = _SameTrackLine([1, q], [cluster_median(read(k), width_s, rough_s) for k in (1, q)])
    if not 0 < line.x_s < 2 * x_rough_s:
        return None
    track = rough_s / line.x_s
    step = max(2, int(round(track / 8)))
    # the reads of one line lie within the host gaps' spread, and (a host whose gaps do not vary) within a
    # quarter of a block's passage
    width_s = max(width_s, 0.25 * line.x_s)
    lost, limit = [], _LimitReads()

    def visit(k: int) -> str | None:
        """Read a chain at stride k: "caught" (its same-track reads on the line, which they refit),
        "lost" (none on it, some a revolution above it), or None (neither, or a mix)."""
        t = read(k)
        at = line.at(k)
        # the line's place at k is known to its slope's error times the blocks past the strides fitted:
        # a tenth of a block's passage a block
        on_line = np.abs(t - at) < width_s + 0.1 * line.x_s * max(k - max(line.strides), 0)
        above = np.abs(t - (at + rough_s)) < max(width_s, 0.05 * rough_s)
        limit.add(t[on_line], k, True)
        limit.add(t[above], k, False)
        if on_line.sum() >= MIN_ON_LINE:
            line.add(k, float(np.median(t[on_line])))
            return "caught"
        if not on_line.any() and above.sum() >= MIN_ON_LINE:
            lost.append((k, t[above]))
            return "lost"
        return None

    # up an eighth of a track at a time to the first stride whose reads all lose the revolution, then
    # bisected back to the last that catches it: the line then reaches the limit, and the lost reads lie
    # a stride or two past its end (a line of two chains, extrapolated far, puts its slope's error into
    # the period)
    lo = k = q
    while not lost and k + step < 1.5 * track:
        k += step
        if visit(k) == "caught":
            lo = k
    if not lost:
        return None
    hi = lost[0][0]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if visit(mid) == "caught":
            lo = mid
        else:
            hi = mid
    if len(lost) < LOST_STRIDES:
        visit(hi + max(2, step // 4))
    a, x = line.a_s, line.x_s
    if len(lost) < LOST_STRIDES or not 0 < x < 2 * x_rough_s:
        return None
    # the lost reads a revolution above the line; again within the gaps' spread of the period they give
    # (the rough period's window may hold a lost read that changed track, where its skew is short)
    period = float(np.median([np.median(t) - (a - k * x) for k, t in lost]))
    for _ in range(2):
        near = [t[np.abs(t - (a - k * x) - period) < width_s] for k, t in lost]
        if not all(v.size for v in near):
            return None
        period = float(np.median([np.median(v) - (a - k * x) for (k, _), v in zip(lost, near)]))
    return DescendingPeriod(period, float(x), float(a), np.asarray(limit.times_s, dtype=float),
                            np.asarray(limit.strides, dtype=float), np.asarray(limit.caught, dtype=bool))


def descending_note(chains_at) -> str:
    """What the period's detail says of the start points no forward chain timed."""
    n = sum(c is None for c in chains_at)
    return f" ({n} by descending chains alone: a read-ahead over the track)" if n else ""


def below(meter: Meter, low: int, reads: int, stride: int) -> int:
    """The start of a forward chain of *reads* + 1 at *stride* that ends below *low*, the lowest
    block read so far: a read-ahead runs forward from what was read, so no segment holds any of its
    blocks, whatever the segment's size (still unknown here), and it stays beside the chains before
    it, in their zone."""
    return low - (reads * stride + 16) * meter.block_size_bytes


def forward_start(meter: Meter, buffer: BufferMeasurement, o: int, chain_reads: int, rough: float):
    """The least forward stride whose read waits for its sector on the same track (a miss that
    catches it at the host's median gap: not a buffer hit, not a revolution missed); the floor of a
    same-track read from the media (the command overhead of a miss and a block's passage).

    Where the drive reads ahead, the shorter strides are hits, or misses asked for while the
    read-ahead passes their block, which wait a revolution; past them, a miss's command overhead
    (DiskSim's overhead of a read miss, which may differ from a hit's) leaves the head before its
    sector, as on a drive without a buffer. A hit and a caught miss can take alike (equal overheads),
    so a stride counts as caught by time only past one that lost a revolution, which no hit does; the
    first caught stride is then found to the block by bisection from the last one that lost a
    revolution; the reads of that bisection (the caught and the lost) are returned with their strides,
    and the floor is the threshold between them (measure_rotation). Doubled strides can step over the strides that lose
    a revolution (:func:`lost_below` looks for them, from a stride past the hits or faster than them). Where a drive reads ahead with no such stride
    in between (a miss's overhead shorter than the host's gap), a caught miss is not told from a hit
    (it can take less): the floor is then a hit's time, and the last value returned is False."""
    hit_limit = buffer.hit_s + 0.1e-3 if buffer.detected else 0.0
    s, missed, lost, hit_low = 1, None, np.empty(0), 0.0
    limit = max(2, meter.size_bytes // meter.block_size_bytes // 64)
    while s < limit:
        o = below(meter, o, chain_reads, s)
        t = chain(meter, o, s, chain_reads, "rotation")
        med = float(np.median(t))
        # below nearly every hit at s = 1 (where the drive reads ahead) by the hits' own spread: a caught miss
        hit_low = float(2 * np.percentile(t, 10) - np.percentile(t, 90)) if s == 1 else hit_low
        if s == 1 and buffer.detected and hit_limit < med < 0.5 * rough:
            # and above them: a read at the next block is a hit or loses a revolution, so where the host's
            # noise put these hits past what the buffer stage's few reads said of a hit, the hits here say
            # how slow one may be
            hit_limit = float(2 * np.percentile(t, 90) - np.percentile(t, 10))
        if med >= 0.5 * rough:
            missed, lost = s, t
        elif missed is not None or med > hit_limit or (buffer.detected and s > 1 and med < hit_low):
            if missed is None and buffer.detected:
                missed, o, lost = lost_below(meter, o, s, rough, 0 if med < hit_low else max(s // 4, 1))
                if missed is None:
                    return s, buffer.hit_s, o, False
            lo, hi = (missed if missed is not None else s // 2), s
            reads, ks = [lost, t], [np.full(lost.size, lo), np.full(t.size, s)]
            while hi - lo > 1:
                mid = (lo + hi) // 2
                o = below(meter, o, chain_reads, mid)
                tm = chain(meter, o, mid, chain_reads, "rotation")
                reads.append(tm)
                ks.append(np.full(tm.size, mid))
                if float(np.median(tm)) < 0.5 * rough:
                    hi = mid
                else:
                    lo = mid
            return hi, (np.concatenate(reads), np.concatenate(ks)), o, True
        s *= 2
    return None, None, o, False


def lost_below(meter: Meter, o: int, s: int, rough: float, low: int, reads: int = 3):
    """The highest stride below *s* (above *low*) whose reads lose a revolution, and the cursor: strides
    doubled from hits can step over the few strides, between the last a read-ahead serves and the first a
    miss catches, whose miss leaves the head past its sector (DiskSim's read miss and read hit overheads
    differ). The band is the first block the read-ahead had not read when the next read arrived: after a
    short host gap (the kernel's caller) a few blocks. A doubled stride faster than the hits by more than
    their spread is a caught miss past it: forward_start stops there and asks down to one block."""
    for m in range(s - 1, low, -1):
        o = below(meter, o, reads, m)
        t = chain(meter, o, m, reads, "rotation")
        if float(np.median(t)) >= 0.5 * rough:
            return m, o, t
    return None, o, np.empty(0)


def chains_at_median_gap(meter: Meter, back: np.ndarray, cursor: int, s1: int, n: int, x_rough: float,
                          rough: float):
    """A forward chain of *n* reads at a stride s1 whose reads catch their sector at nearly every host
    gap, and a block's passage x: (s1, x, the forward chain's time at the median gap, the descending
    chain *back*'s), the times from the reads that met their sector alike (:func:`cluster_median`).

    A forward read waits ``s x - g`` (g: the host's gap, part of each request's overhead as the drive
    sees it), a descending one ``T - x - g``: the spread of *back* is the gaps'. *s1* catches its sector
    at the median gap (the first caught stride judged by medians); a read whose gap and the miss's
    overhead outlast ``(s - 1) x`` loses a revolution, so s1 grows by the blocks that pass while the gap
    runs on to its 95th percentile. Where still more than one read in twenty of s1's chain loses a
    revolution (the first caught stride was judged on a few reads, of which those that change track
    catch their sector for the skew), the share lost tells which quantile of the gaps s1 clears, and
    s1 grows again by the blocks from there to the 95th percentile (twice at most): losing the largest
    gaps would leave the chain's median short of the median gap's time.

    ``T = d_back + x - d_fwd(s1) + s1 x`` weighs x by ``s1 + 1``, and s1 must clear the gap, so x is
    taken over a long stride: a descending chain at a stride k of 0.4 of a track waits ``T - k x - g``
    (no gap to clear), and ``(k - 1) x`` is its difference from *back*'s, the same gaps in both. The
    track's length for k comes from a rough x, the slope of a few forward reads at 1.5 s1."""
    b = meter.block_size_bytes
    # the gaps' whole spread: a uniform spread's 5-95 % range is 0.9 of it
    width = 1.25 * float(np.percentile(back, 95) - np.percentile(back, 5))
    mb = cluster_median(back, width, rough)
    s1 += int(math.ceil((mb - np.percentile(back, 5)) / x_rough)) + 1
    few = max(9, n // 3)
    for _ in range(3):
        s2 = s1 + max(s1 // 2, 4)
        cursor = below(meter, cursor, n, s1)
        f1 = chain(meter, cursor, s1, n, "rotation")
        cursor = below(meter, cursor, few, s2)
        m1, m2 = cluster_median(f1, width, rough), cluster_median(chain(meter, cursor, s2, few, "rotation"),
                                                                      width, rough)
        lost = float(np.mean(f1 > m1 + 0.5 * rough))
        x = (m2 - m1) / (s2 - s1)
        if lost <= 0.05 or not 0 < x <= x_rough:
            break
        s1 += int(math.ceil((np.percentile(back, 100 * min(lost, 0.5)) - np.percentile(back, 5)) / x)) + 1
    if x > 0:
        # a track's length from the slope, or from the zone's rate where that is shorter (the rate
        # holds the skews, so its block time is never below the media's)
        track = (mb + x) / min(x, x_rough)
        # x's error moves T by (s1 + 1) times itself: the stride whose difference, over the gaps' spread
        # in n reads, keeps that within a thousandth of T; at least an eighth of a track, at most 0.4
        need = (s1 + 1) * width / (math.sqrt(n) * 1e-3 * mb)
        k = int(min(max(track / 8, need), 0.4 * track, track - 2 * s1, meter.size_bytes // b // (4 * (n + 1))))
        if k >= 2:
            mk = cluster_median(chain(meter, cursor - 16 * b, -k, n, "rotation"), width, rough)
            x = (mb - mk) / (k - 1)
    return s1, x, m1, mb


@dataclass(frozen=True)
class StartPoint:
    """One start point's timing of the rotation: where [B], its period [s], its floor's reads
    ``(times, strides, caught)`` or a floor time [s] (*floor_from_media* says which), the block passage x
    [s], the host's gap [s] and the forward chain's ``(s1, d_fwd(s1), d_back, gaps' spread)`` (None where
    descending chains alone timed it)."""

    offset_bytes: int
    period_s: float
    floor: tuple | float
    floor_from_media: bool
    block_s: float
    gap_s: float
    chains: tuple | None


#: a start point no chain timed (no forward stride waits under a revolution: flash, or the strides the host's
#: jitter asks for span more than the device), and one whose x or period is not a turning disk's
NOT_TIMED, NOT_A_DISK = "not timed", "not a disk"


def time_start_point(meter: Meter, buffer: BufferMeasurement, o: int, *, chain_reads: int, rough: float,
                     rate_at) -> StartPoint | str:
    """The rotation at the start point *o* (measure_rotation's module doc): a :class:`StartPoint`, or
    NOT_TIMED or NOT_A_DISK."""
    b = meter.block_size_bytes
    try:
        back = chain(meter, o, -1, chain_reads, "rotation")
        # the host's jitter (a uniform spread's interquartile range is half of it) sets how many reads a
        # median needs
        jitter = 2 * float(np.subtract(*np.percentile(back, [75, 25])))
        n = int(np.clip(chain_reads * (jitter / 60e-6) ** 2, chain_reads, 10 * chain_reads))
        if n > chain_reads:
            back = np.concatenate((back, chain(meter, o - (chain_reads + 2) * b, -1, n - chain_reads, "rotation")))
        x_rough = b / float(rate_at(np.array([o]))[0])
        s1, near, cursor, from_media = forward_start(meter, buffer, o - (n + chain_reads + 4) * b, chain_reads,
                                                       rough)
        if s1 is None:
            # a read-ahead over the track serves every forward stride on it, or a miss's command overhead
            # past half a revolution hides the forward limit: descending chains alone
            found = descending_period(meter, cursor, rough_s=rough, x_rough_s=x_rough, width_s=1.25 * float(
                np.percentile(back, 95) - np.percentile(back, 5)))
            if found is None:
                return NOT_TIMED
            # no forward chain: x is the descending line's slope
            return StartPoint(o, found.period_s, (found.limit_times_s, found.limit_strides, found.limit_caught),
                              True, found.block_s, found.period_s - found.line_s, None)
        s1, x, m1, mb = chains_at_median_gap(meter, back, cursor, s1, n, x_rough, rough)
    except ChainDoesNotFit:
        return NOT_TIMED
    if not 0 < x < 0.5 * rough / max(s1, 1):
        return NOT_A_DISK
    period = mb + x - m1 + s1 * x
    if period < 0.5 * rough:
        # a descending read waits most of a revolution (past its command overhead), so a period under half of
        # its wait is the host's noise about a device that does not turn
        return NOT_A_DISK
    # a forward read that caught its sector took under half a revolution
    floor = (near[0], near[1], near[0] < 0.5 * rough) if from_media else near
    return StartPoint(o, period, floor, from_media, x, s1 * x - m1,
                      (s1, m1, mb, 1.25 * float(np.percentile(back, 95) - np.percentile(back, 5))))


def median_bse(periods, *, robust: bool = False) -> float:
    """The standard error [s] of the median of the start points' periods (a normal sample's: 1.2533 times
    the mean's), from their standard deviation, or (*robust*) from their scaled median absolute deviation,
    which one start point put off by the host (a block passage x off, weighed by s1 + 1) does not move."""
    p = np.asarray(periods, dtype=float)
    spread = float(median_abs_deviation(p, scale="normal")) if robust else float(p.std(ddof=1))
    return float(1.2533 * spread / np.sqrt(p.size))
