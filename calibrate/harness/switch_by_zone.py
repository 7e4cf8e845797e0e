"""The head switch as a mean over zones: at each start point its limit less the same-track floor there.

A drive that reads ahead stops the read-ahead at the end of the sector under
the head when a new read arrives, and only then counts the read's command
overhead (DiskSim's ``disk_buffer_stopable_access`` and ``disk_check_hda``
with "Stop prefetch in sector" 0, as
:func:`diskmodel.model.simulator.readahead._stop_read_ahead` and the read path
model it). The read's move therefore starts on a sector boundary, and the
sectors of a zone's tracks line up (a skew is a whole number of sectors). So
in one zone, of sector time x, a descending read after a head switch catches
its sector when a whole number of sectors covers the overhead and the switch,
and a same-track read when a whole number covers the overhead: their limits
differ by the head switch rounded to whole sectors, down or up by where the
overhead falls between two sectors: a switch of a few sectors (the IBM
Ultrastar 18ES's is 2.9) measured in one zone is off by up to a third of
itself (docs/benchmarks.md has the figures).

Zones of other sector times round differently, so the mean over zones of
each zone's difference is the head switch. As DIXtrac (Schindler & Ganger
1999) measures a switch at several places, the limit is found at each of the
rotation stage's start points (:func:`limit_at_start`: the stride bisected to
the two neighbouring strides where reads after the switch go from mostly
catching their sector to mostly losing a revolution), and
:func:`mean_over_zones` takes the differences with the floor found at the
same start points.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

from diskmodel.calibrate.harness.meter import BudgetExhausted, ChainDoesNotFit, chain

__all__ = ["StartReads", "descending_after_switch", "limit_at_start", "mean_over_zones", "stride_limit"]


def stride_limit(times_s, caught, period_s: float, offsets_s) -> float | None:
    """Where the reads of one start point go from losing a revolution to catching their sector [s]:
    on the strides' common line (the median of each read's time less its offset, the missed ones less
    *period_s* too, over the two strides about the limit; plus each stride's offset), the line's value at which the share of reads that
    caught their sector, made nondecreasing along the line (isotonic regression weighted by the
    reads), passes a half, interpolated linearly between two strides. None where no read caught its
    sector or none lost a revolution, or where the limit lies beyond the strides read.

    The host's gap before each read varies, so a stride near the limit catches its sector in some of
    its reads: its share places the limit between strides. The reads' own times are not used beyond
    the line (each also carries noise the drive never saw); where every stride's reads are alike,
    the limit is midway between the last stride that lost a revolution and the first that did not."""
    t = np.asarray(times_s, dtype=float).ravel()
    ok = np.asarray(caught, dtype=bool).ravel()
    off = np.asarray(offsets_s, dtype=float).ravel()
    if not (t.size == ok.size == off.size):
        raise ValueError(f"times_s, caught and offsets_s must be alike in length (got {t.size}, {ok.size}, {off.size})")
    if ok.all() or not ok.any():
        return None
    lines, inverse, counts = np.unique(off, return_inverse=True, return_counts=True)
    share = np.bincount(inverse, weights=ok.astype(float)) / counts
    fitted = isotonic_regression(share, weights=counts.astype(float)).x
    above = np.flatnonzero(fitted >= 0.5)
    if above.size == 0 or above[0] == 0:
        return None  # the limit lies beyond the strides read
    i = int(above[0])
    # the line's level from the two strides about the limit alone: far from it a read's time holds more or
    # less of the host's path (a read queued behind a long one is timed from its submission)
    near = (inverse == i - 1) | (inverse == i)
    level = float(np.median(np.where(ok, t, t - period_s)[near] - off[near]))
    v = level + lines
    lo, hi = fitted[i - 1], fitted[i]
    if hi == 0.5 or hi - lo <= 0:
        return float(v[i]) if hi == 0.5 else float(0.5 * (v[i - 1] + v[i]))
    if lo == 0.0 and hi == 1.0:
        return float(0.5 * (v[i - 1] + v[i]))
    return float(v[i - 1] + (v[i] - v[i - 1]) * (0.5 - lo) / (hi - lo))


@dataclass(frozen=True)
class StartReads:
    """The reads after the switch at one start point: their times [s], whether each caught its sector,
    each one's offset on its stride's line (``-k x`` for a stride of k blocks back) [s], whether
    the strides read bracket the limit (a stride where most caught their sector next to one where
    most lost a revolution), and the revolution [s] (what a read that lost one took more)."""

    times_s: np.ndarray
    caught: np.ndarray
    offsets_s: np.ndarray
    bracketed: bool
    period_s: float

    @property
    def limit_s(self) -> float | None:
        """The limit between the reads that caught their sector and those that lost a revolution
        (:func:`~diskmodel.calibrate.harness.head_switch.line_limit`), where the strides bracket it."""
        if not self.bracketed:
            return None
        return stride_limit(self.times_s, self.caught, self.period_s, self.offsets_s)


def descending_after_switch(meter, cursor: list, k: int, reads: int, *, block_s: float, period_s: float,
                            gap_s: float, kind_s: float, tol_s: float):
    """One descending chain of *reads* reads *k* blocks apart from ``cursor[0]`` (wrapped to the device's
    end where it would run off its start; the cursor moved on below it): the times [s], and which reads
    came after the track change whose excess wait is *kind_s* (within *tol_s*, or a revolution more)."""
    b = meter.block_size_bytes
    o = cursor[0]
    if o - (reads + 2) * k * b < 0:
        o = cursor[0] = meter.size_bytes - b
    t = chain(meter, o, -k, reads, "tracks")
    cursor[0] = o - (reads + 3) * k * b
    r = t + k * block_s - (period_s - gap_s)  # 0 for no track change, -kind for ours, + period if missed
    ours = np.abs((r + kind_s + 0.5 * period_s) % period_s - 0.5 * period_s) < tol_s
    return t, ours


def limit_at_start(meter, *, start_bytes: int, block_s: float, strides_s: tuple, period_s: float, gap_s: float,
                   kind_s: float, tol_s: float, reads: int = 15, steps: int = 10) -> StartReads:
    """Descending chains at *start_bytes* (a zone of block passage *block_s* [s]), their stride bisected
    between *strides_s* (low, high) [s] worth of blocks, a block wider each side (at most *steps*
    chains), to two neighbouring strides that bracket the limit, then one more chain at each of the
    two. The reads after the switch are those whose excess wait lies within *tol_s* of *kind_s* (or a
    revolution more); a read caught its sector where it took under half a revolution."""
    cursor = [int(start_bytes)]
    got: list = []
    share_at: dict = {}

    def read_at(k: int):
        t, ours = descending_after_switch(meter, cursor, k, reads, block_s=block_s, period_s=period_s,
                                          gap_s=gap_s, kind_s=kind_s, tol_s=tol_s)
        got.append((t[ours], np.full(int(ours.sum()), -k * block_s)))
        if ours.any():
            share_at[k] = share_at.get(k, ()) + tuple((t[ours] > 0.5 * period_s).tolist())

    def missed_mostly(k: int) -> bool:
        return float(np.mean(share_at[k])) > 0.5

    # a longer stride back leaves less time before the sector: more reads lose a revolution
    k_lo, k_hi = max(1, int(strides_s[0] / block_s) - 1), int(np.ceil(strides_s[1] / block_s)) + 1
    try:
        for _ in range(steps):
            if k_hi - k_lo <= 1:
                break
            mid = (k_lo + k_hi) // 2
            read_at(mid)
            if mid not in share_at:
                continue
            if missed_mostly(mid):
                k_hi = mid
            else:
                k_lo = mid
        for k in (k_lo, k_hi):
            read_at(k)
        # the limit beyond the strides read (the start point's zone is not the bisection's): a stride on
        for _ in range(3):
            if k_hi in share_at and not missed_mostly(k_hi):
                k_lo, k_hi = k_hi, k_hi + 1
                read_at(k_hi)
            elif k_lo in share_at and missed_mostly(k_lo) and k_lo > 1:
                k_lo, k_hi = k_lo - 1, k_lo
                read_at(k_lo)
            else:
                break
    except (BudgetExhausted, ChainDoesNotFit):
        pass
    times = np.concatenate([g[0] for g in got]) if got else np.empty(0)
    offsets = np.concatenate([g[1] for g in got]) if got else np.empty(0)
    caught = times < 0.5 * period_s
    bracketed = (k_hi - k_lo == 1 and k_lo in share_at and k_hi in share_at and missed_mostly(k_hi)
                 and not missed_mostly(k_lo))
    return StartReads(times, caught, offsets, bool(bracketed), float(period_s))


def mean_over_zones(limits_s, floors_s, block_s) -> tuple[float | None, list]:
    """The mean of ``limit - floor`` over the start points where both were found (None elsewhere),
    less those farther than the largest sector time (*block_s*, one per start point) from the
    differences' median: one zone's difference is the switch rounded to a whole sector, down or up, so
    a difference farther off is a limit or a floor the noise put off. Returns (the mean or None,
    the differences kept)."""
    d = np.array([lim - flo for lim, flo in zip(limits_s, floors_s) if lim is not None and flo is not None])
    if d.size == 0:
        return None, []
    x_top = float(np.max(block_s))
    kept = d[np.abs(d - np.median(d)) <= x_top]
    if kept.size == 0:
        return None, []
    return float(kept.mean()), kept.tolist()
