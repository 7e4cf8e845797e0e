"""The stages of a calibration, each a function of a :class:`~diskmodel.calibrate.harness.meter.Meter`.

* :func:`measure_rotation`: the rotation period and the minimum per-request
  time from the sawtooth of read-after-read times against a forward stride
  (Skippy, Talagala et al. 2000). Reading block ``o`` then ``o + s`` takes
  ``s x - g + T_rot`` while the second block has already passed when the
  drive is ready, and ``s x - g`` once it has not (x: the time a block takes
  to pass under the head, g: the host's gap between the reads). The stride
  of the drop is found by doubling and bisection; then, a guard away from it
  on both sides (where the host's jitter cannot decide the branch), one
  regression ``d(s) = a + x s + T_rot [miss]`` gives T_rot whatever g and the
  command overhead are. A start point whose strides crossed onto another
  track (a broken line) is dropped; the period is the median over start
  points spread over the device, and is refined with x from the measured
  zone rate where that is the media rate (:func:`refine_rotation`). Where no
  drop appears (flash), there is no rotation.
* :func:`measure_zones`: zcav-like transfer rates at locations spread over the
  whole device (visited in bit-reversed order, so that any prefix is spread):
  a read of L bytes and of one block, each issued right after a read of the
  same first block (so that both wait the same, almost full, revolution),
  differ by the transfer of L - 1 block; repeats until they agree. Zone
  boundaries by change-point detection
  (:func:`diskmodel.model.fit.fit_zones`).
* :func:`measure_seek`: timed pairs of reads at chosen distances (geometric
  from a few blocks to the whole device), each pair from a start point drawn
  uniformly over the device, in random order, in rounds repeated until the
  budget is spent. Every read is kept with where it came from.

Each stage has a minimum (the ``*_MIN_*`` constants below, which
:func:`minimum_reads` counts): before it, a :class:`BudgetExhausted` from the
meter is passed on; beyond it, the stage stops where the budget runs out and
its detail says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from diskmodel.calibrate.harness.meter import BudgetExhausted, Meter
from diskmodel.model.units import MIB

__all__ = [
    "RotationMeasurement", "ZoneMeasurement", "SeekMeasurement", "measure_rotation", "refine_rotation",
    "measure_zones", "zones_from_profile", "zone_rate_at", "measure_seek", "seek_distances", "minimum_reads",
    "PROBE_READS", "ROTATION_MIN_STARTS", "ZONE_MIN_LOCATIONS", "ZONE_MIN_TRANSFER_S", "SEEK_MIN_ROUNDS",
]


# ---------------------------------------------------------------------------
# The stages' minimums: used by the stages themselves (as their defaults) and
# by minimum_reads(), which prices the smallest calibration. One place only.
# ---------------------------------------------------------------------------

PROBE_READS = 8                   # one-block reads spread over the device, timed before the stages
ROTATION_MIN_STARTS = 4           # start points of the sawtooth, whatever the budget
ROTATION_REPEATS = 3              # timed repeats of each read-after-read pair (after one untimed)
ROTATION_MAX_STRIDE_BYTES = 8 * MIB
ZONE_PILOT_REPEATS = 3            # pairs of the pilot rate near the start
ZONE_MIN_LOCATIONS = 16           # zcav locations, whatever the budget
ZONE_REPEATS = 2                  # pairs (one block, long read) per location
ZONE_MIN_TRANSFER_S = 0.02        # a zone read is long enough to transfer for at least this long
SEEK_DISTANCES = 48               # design distances of the seek curve
SEEK_MIN_ROUNDS = 3               # rounds of one pair per distance, whatever the budget


# ---------------------------------------------------------------------------
# Rotation period and minimum overhead
# ---------------------------------------------------------------------------

@dataclass
class RotationMeasurement:
    """Rotation period [s] (None where no rotation shows), its spread over the
    start points, the minimum time of a one-block read [s] (command overhead and
    the block's transfer: the sawtooth's floor) and the time a block takes to
    pass under the head [s]."""

    period_s: float | None
    period_bse_s: float | None
    period_samples_s: list
    overhead_s: float | None
    block_transfer_s: float | None
    starts_bytes: list
    detail: str
    reads: int = 0
    transfer_samples_s: list = field(default_factory=list)
    raw: list = field(default_factory=list)  # (start, strides, miss flags, times, d(s_hi)) per start point
    used_s: float = 0.0
    stopped: str = ""  # where the budget cut the stage short beyond its minimum ("" where it did not)


def _max_stride_blocks(size_bytes: int, block_size_bytes: int, max_stride_bytes: int) -> int:
    """The longest stride of the rotation stage [blocks]."""
    return max(1, min(max_stride_bytes, size_bytes // 16) // block_size_bytes)


def measure_rotation(meter: Meter, rng: np.random.Generator, *, budget_s: float, starts: int = 8,
                     repeats: int = ROTATION_REPEATS, max_stride_bytes: int = ROTATION_MAX_STRIDE_BYTES,
                     min_drop_s: float = 1e-3, guard_s: float = 100e-6, misfit_s: float = 50e-6,
                     min_starts: int = ROTATION_MIN_STARTS) -> RotationMeasurement:
    """Rotation period from the sawtooth of read-after-read times (see module doc).

    At least *min_starts* start points, more while *budget_s* lasts. Where the
    meter's budget runs out (:class:`BudgetExhausted`) beyond them, the start
    point under way is dropped and the detail says so; before them, the
    exception is passed on."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    max_stride = _max_stride_blocks(size, b, max_stride_bytes)
    spent0 = meter.used_s
    reads0 = meter.reads
    # Start points spread over the device; a second set (interleaved) is used only
    # where too few of the first gave a clean sawtooth.
    n_points = 2 * starts
    grid = (np.arange(n_points) + rng.uniform(0.1, 0.9, n_points)) / n_points
    order = np.concatenate((np.arange(0, n_points, 2), np.arange(1, n_points, 2)))
    points = meter.align(grid[order] * max(size - (2 * max_stride + 2) * b, b))

    def pair(o: int, s: int) -> float:
        offs = np.tile(np.array([o, o + s * b], dtype=np.int64), repeats + 1)
        t = meter.read_many(offs, b, tag="rotation")
        return float(np.median(t[3::2]))

    def sawtooth(o: int):
        """(whether a drop showed, (period, overhead, transfer, raw) or None) at start point *o*."""
        d0 = pair(o, 0)
        cache = {0: d0}

        def d(s):
            if s not in cache:
                cache[s] = pair(o, s)
            return cache[s]

        s_lo, s_hi = 0, None
        s = 1
        while s <= max_stride:
            if d(s) < 0.5 * d0 and d0 - d(s) > min_drop_s:
                s_hi = s
                break
            s_lo = s
            s *= 2
        if s_hi is None:
            return False, None
        while s_hi - s_lo > 1:
            mid = (s_lo + s_hi) // 2
            if d(mid) > 0.5 * (d(s_lo) + d(s_hi)):
                s_lo = mid
            else:
                s_hi = mid
        k = max(2, s_hi // 2)
        if s_hi + k > max_stride:
            return True, None
        x0 = (d(s_hi + k) - d(s_hi)) / k
        if not 0 < x0 < 0.25 * d0:
            return True, None
        # Near the drop, whether the sector is caught depends on the host's gap of
        # that read: the reads caught there are those with a short gap, which biases
        # both sides. Step away from the drop by guard_s worth of strides each side.
        m = int(min(max(1, math.ceil(guard_s / x0)), 256))
        s_a, s_b = max(0, s_lo - m), s_hi + m
        q = max(m, s_b // 2)
        if s_b + 4 * q > max_stride:
            return True, None
        # Both branches, a guard away from the drop: d(s) = a + x s + T_rot [miss].
        # One regression with a common slope over the whole span (the high branch
        # spans 4q strides, so that the slope is well determined).
        low = sorted({s_a, s_a // 2, 0})
        high = [s_b + j * q for j in range(5)]
        ss = np.array(low + high, dtype=float)
        miss = np.array([1.0] * len(low) + [0.0] * len(high))
        dd = np.array([d(int(v)) for v in ss])
        X = np.column_stack((np.ones_like(ss), ss, miss))
        coef, *_ = np.linalg.lstsq(X, dd, rcond=None)
        x, period = float(coef[1]), float(coef[2])
        # A stride that crossed onto another track (skew, head switch) breaks the
        # straight line: such a start point is dropped.
        if not 0 < x < 0.25 * d0 or np.max(np.abs(dd - X @ coef)) > misfit_s:
            return True, None
        return True, (period, d(s_hi) - 0.5 * x, x, (o, ss.tolist(), miss.tolist(), dd.tolist(), d(s_hi)))

    periods, overheads, transfers, raw = [], [], [], []
    drops = no_drops = attempted = 0
    stopped = ""
    for o in points.tolist():
        over = meter.used_s - spent0 > budget_s
        if attempted >= min_starts and (over or (attempted >= starts and len(periods) >= (starts + 1) // 2)):
            break
        if attempted >= starts and no_drops > drops:
            break  # the second set is for sawtooths spoilt by track crossings, not for flash
        try:
            dropped, sample = sawtooth(o)
        except BudgetExhausted as exc:
            if attempted < min_starts:
                raise
            stopped = f"; stopped at start point {attempted + 1}: the {exc.limit} ran out"
            break
        attempted += 1
        if not dropped:
            no_drops += 1
            continue
        drops += 1
        if sample is not None:
            periods.append(sample[0])
            overheads.append(sample[1])
            transfers.append(sample[2])
            raw.append(sample[3])
    used = meter.used_s - spent0
    points = points[:attempted].tolist()
    if drops <= no_drops or len(periods) < 2:
        why = (f"no rotation: the read-after-read time showed no drop of >= {min_drop_s * 1e3:g} ms against "
               f"stride at {no_drops} of {attempted} start points (strides up to {max_stride * b} bytes)")
        if drops > no_drops:
            why = (f"no rotation period: a drop showed at {drops} of {attempted} start points, but only "
                   f"{len(periods)} gave a clean sawtooth (budget or track crossings)")
        return RotationMeasurement(None, None, periods, None, None, points, why + stopped, meter.reads - reads0,
                                   used_s=used, stopped=stopped)
    return _rotation_from(periods, overheads, transfers, raw, points, attempted, used, meter.reads - reads0,
                          "block transfer time from the common slope of the sawtooth", stopped)


def _rotation_from(periods, overheads, transfers, raw, points, starts, used, reads, how, stopped=""):
    p = np.asarray(periods)
    period = float(np.median(p))
    bse = float(1.2533 * p.std(ddof=1) / np.sqrt(p.size))
    return RotationMeasurement(
        period, bse, p.tolist(), float(np.median(overheads)), float(np.median(transfers)), points,
        f"clean sawtooth at {len(periods)} of {starts} start points: period {period * 1e3:.4f} ms "
        f"({60 / period:.1f} rpm), spread {p.std(ddof=1) * 1e6:.2f} us ({how}); {used:.2f} s of budget{stopped}",
        reads, list(transfers), raw, used, stopped)


def refine_rotation(rotation: RotationMeasurement, block_size_bytes: int, rate_at) -> RotationMeasurement:
    """The period again, with each start point's block transfer time from the
    measured transfer rate there (``rate_at(offsets) -> bytes/s``), far more
    precise than the sawtooth's own slope."""
    if rotation.period_s is None or not rotation.raw:
        return rotation
    o = np.array([r[0] for r in rotation.raw])
    x = block_size_bytes / np.asarray(rate_at(o), dtype=float)
    slope = np.asarray(rotation.transfer_samples_s, dtype=float)
    # Only where the rate is the media rate: a slower interface makes a block's read
    # longer than its sector's passage under the head, and the slope is then the truth.
    x = np.where(np.abs(slope / x - 1) < 0.25, x, slope)
    periods = []
    for (_, ss, miss, dd, _), xi in zip(rotation.raw, x):
        ss, miss, dd = np.asarray(ss), np.asarray(miss, dtype=bool), np.asarray(dd)
        r = dd - xi * ss
        periods.append(float(r[miss].mean() - r[~miss].mean()))
    overheads = [dh - 0.5 * xi for (*_, dh), xi in zip(rotation.raw, x)]
    return _rotation_from(periods, overheads, x.tolist(), rotation.raw, rotation.starts_bytes,
                          len(rotation.starts_bytes), rotation.used_s, rotation.reads,
                          "block transfer time from the zone rate at each start point", rotation.stopped)


# ---------------------------------------------------------------------------
# Zone transfer rates
# ---------------------------------------------------------------------------

@dataclass
class ZoneMeasurement:
    """Transfer rates [bytes/s] at locations [bytes], the read length used, and
    the zones found: (start_byte, end_byte, rate_bytes_per_s) covering the device."""

    locations_bytes: np.ndarray
    rates_bytes_per_s: np.ndarray
    read_length_bytes: int
    zones: list
    repeats_rates: np.ndarray  # (locations, repeats)
    detail: str
    reads: int = 0


def _rate_at(meter: Meter, o: int, length: int, repeats: int, agree: float = 0.005,
             max_repeats: int = 5) -> np.ndarray:
    """Rates from *repeats* pairs of reads at *o*; while the spread of the rates
    exceeds *agree* (relative; an outlier, e.g. an interrupt), one more pair, up
    to *max_repeats* (the median then rejects the outlier). Returns *repeats*
    values: the median of all pairs in place of the outlying ones."""
    b = meter.block_size_bytes
    rates = []
    while True:
        small = meter.read_many([o, o], b, tag="zones")[1]
        big = meter.read(o, length, tag="zones")
        rates.append((length - b) / (big - small) if big > small else np.nan)
        if len(rates) < repeats:
            continue
        r = np.asarray(rates)
        good = r[np.isfinite(r)]
        spread = (good.max() - good.min()) / np.median(good) if good.size >= 2 else np.inf
        if spread <= agree or len(rates) >= max_repeats:
            break
        if not (meter.can_afford(2, b, "zones") and meter.can_afford(1, length, "zones")):
            break  # one more pair, only to reject an outlier, where the budget still pays for it
    r = np.asarray(rates)
    if len(rates) > repeats and np.isfinite(r).any():
        med = float(np.nanmedian(r))
        r = r[np.argsort(np.abs(np.nan_to_num(r, nan=np.inf) - med))][:repeats]
    return r[:repeats]


def zones_from_profile(locations, rates, size_bytes: int, block_size_bytes: int) -> list:
    """Zones covering [0, size_bytes) from a rate profile by change-point detection:
    boundaries halfway between the last location of a segment and the first of the next."""
    from diskmodel.model.fit import fit_zones

    loc = np.asarray(locations, dtype=float)
    rate = np.asarray(rates, dtype=float)
    ok = np.isfinite(rate) & (rate > 0)
    loc, rate = loc[ok], rate[ok]
    if loc.size == 0:
        raise ValueError("rates: no valid transfer rate was measured")
    segments = fit_zones(loc, rate).segments
    zones = []
    start = 0
    for i, seg in enumerate(segments):
        if i + 1 < len(segments):
            end = int((loc[seg].max() + loc[segments[i + 1]].min()) / 2) // block_size_bytes * block_size_bytes
        else:
            end = size_bytes
        zones.append((start, end, float(np.median(rate[seg]))))
        start = end
    return [z for z in zones if z[1] > z[0]]


def measure_zones(meter: Meter, rng: np.random.Generator, *, budget_s: float,
                  rotation_period_s: float | None, repeats: int = ZONE_REPEATS,
                  min_locations: int = ZONE_MIN_LOCATIONS, max_locations: int = 512) -> ZoneMeasurement:
    """zcav-like transfer rates at locations spread over the device, and zone boundaries.

    At least *min_locations* locations, more while *budget_s* lasts. Where the
    meter's budget runs out (:class:`BudgetExhausted`) beyond them, the location
    under way is dropped and the detail says so; before them, the exception is
    passed on."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    spent0, reads0 = meter.used_s, meter.reads
    # Pilot: the rate near the start, from reads long enough to stand out of the
    # latency noise (doubled until they do, up to an eighth of the device).
    pilot_len = max(2 * b, min(MIB, size // 16) // b * b)
    while True:
        trials = _rate_at(meter, 0, pilot_len, ZONE_PILOT_REPEATS)
        good = trials[np.isfinite(trials)]
        if good.size >= 2:
            pilot = float(np.median(good))
            break
        if 2 * pilot_len > size // 8:
            raise ValueError(f"could not measure a transfer rate: reading {pilot_len} bytes took no longer "
                             "than reading one block (is the target cached, or are its reads not timed?)")
        pilot_len *= 2
    # A read long enough that a revolution of difference in waiting, or the host's
    # jitter, is small against its transfer time.
    target_s = max(ZONE_MIN_TRANSFER_S, 5 * (rotation_period_s or 0.0))
    length = int(min(max(pilot * target_s, 8 * b), size // 8)) // b * b
    length = max(length, 2 * b)
    # A grid of max_locations cells visited in bit-reversed (van der Corput) order:
    # whenever the budget runs out, the locations measured are spread evenly.
    k = int(min(max_locations, max(size // length, 1)))
    bits = max(1, int(math.ceil(math.log2(k))))
    order = [int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits)]
    order = [i for i in order if i < k]
    locs = meter.align((np.arange(k) + rng.uniform(0.05, 0.95, k)) / k * (size - length))
    rates = np.full((k, repeats), np.nan)
    done = np.zeros(k, dtype=bool)
    stopped = ""
    for n, i in enumerate(order):
        if n >= min_locations and meter.used_s - spent0 > budget_s:
            break
        try:
            rates[i] = _rate_at(meter, int(locs[i]), length, repeats)
        except BudgetExhausted as exc:
            if n < min_locations:
                raise
            stopped = f"; stopped at location {n + 1}: the {exc.limit} ran out"
            break
        done[i] = True
    locs, rates = locs[done], rates[done]
    if np.all(np.isnan(rates)):
        raise ValueError("could not measure a transfer rate at any location: reading more took no longer "
                         "than reading one block")
    done = int(done.sum())
    valid = ~np.all(np.isnan(rates), axis=1)
    locs, rates = locs[valid], rates[valid]
    rate = np.nanmedian(rates, axis=1)
    zones = zones_from_profile(locs, rate, size, b)
    return ZoneMeasurement(
        locs, rate, length, zones, rates,
        f"{done} locations, reads of {length} bytes, {repeats} repeats each; {len(zones)} zones; "
        f"{meter.used_s - spent0:.2f} s of budget{stopped}", meter.reads - reads0)


def zone_rate_at(zones, offsets) -> np.ndarray:
    """The transfer rate [bytes/s] of the zone of each of *offsets* [bytes] (zones as :class:`ZoneMeasurement` has them)."""
    starts = np.array([z[0] for z in zones])
    rates = np.array([z[2] for z in zones])
    return rates[np.clip(np.searchsorted(starts, offsets, side="right") - 1, 0, len(zones) - 1)]


# ---------------------------------------------------------------------------
# Seek curve
# ---------------------------------------------------------------------------

@dataclass
class SeekMeasurement:
    """Every read of the seek stage: where the head came from and went to [bytes],
    its time [s], whether its distance was one of the design's, and its round."""

    from_bytes: np.ndarray
    to_bytes: np.ndarray
    time_s: np.ndarray
    designed: np.ndarray
    round: np.ndarray
    distances_bytes: np.ndarray
    read_length_bytes: int
    rounds: int
    detail: str

    @property
    def distance_bytes(self) -> np.ndarray:
        return np.abs(self.to_bytes - self.from_bytes)


def seek_distances(size_bytes: int, block_size_bytes: int, count: int = 48) -> np.ndarray:
    """Design distances [bytes]: geometric from 8 blocks to the whole device."""
    b = block_size_bytes
    top = size_bytes - b
    low = min(8 * b, top)
    d = np.unique((np.geomspace(low, top, count) // b * b).astype(np.int64))
    return d[d > 0]


def measure_seek(meter: Meter, rng: np.random.Generator, *, budget_s: float, count: int = SEEK_DISTANCES,
                 max_rounds: int = 200, min_rounds: int = SEEK_MIN_ROUNDS) -> SeekMeasurement:
    """Timed pairs of reads at design distances, in random order, repeated in rounds.

    At least *min_rounds* rounds, more while *budget_s* lasts. Where the meter's
    budget runs out (:class:`BudgetExhausted`) beyond them, the round under way
    is dropped and the detail says so; before them, the exception is passed on."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    distances = seek_distances(size, b, count)
    spent0 = meter.used_s
    froms, tos, times, designed, rounds = [], [], [], [], []
    last = getattr(meter, "_last_offset", 0)
    r = 0
    # Each pair's distance is jittered within half the spacing of the design (so it
    # stays in its distance bin): a fixed distance would fix the angle between the
    # two sectors, and with it the rotational wait, at some distances.
    spacing = float(np.median(np.diff(np.log(distances)))) if distances.size > 1 else 0.0
    half = 0.45 * spacing
    round_s = 0.0
    stopped = ""
    while r < max_rounds and (r < min_rounds or meter.used_s - spent0 + round_s <= budget_s):
        before = meter.used_s
        order = rng.permutation(distances.size)
        d = distances[order] * np.exp(rng.uniform(-half, half, distances.size))
        d = np.clip(meter.align(d), b, size - b)
        start = meter.align(rng.uniform(0, 1, d.size) * (size - b - d + 1))
        start = np.minimum(start, size - b - d)
        forward = rng.random(d.size) < 0.5
        first = np.where(forward, start, start + d)
        second = np.where(forward, start + d, start)
        offs = np.column_stack((first, second)).reshape(-1)
        try:
            t = meter.read_many(offs, b, tag="seek")
        except BudgetExhausted as exc:
            if r < min_rounds:
                raise
            stopped = f"; stopped before round {r + 1}: the {exc.limit} ran out"
            break
        prev = np.concatenate(([last], offs[:-1]))
        froms.append(prev)
        tos.append(offs)
        times.append(t)
        designed.append(np.tile([False, True], d.size))
        rounds.append(np.full(offs.size, r))
        last = int(offs[-1])
        round_s = meter.used_s - before
        r += 1
    meter._last_offset = last
    return SeekMeasurement(
        np.concatenate(froms), np.concatenate(tos), np.concatenate(times), np.concatenate(designed),
        np.concatenate(rounds), distances, b, r,
        f"{r} rounds of {distances.size} distances ({distances[0]} .. {distances[-1]} bytes), "
        f"{sum(x.size for x in times)} reads; {meter.used_s - spent0:.2f} s of budget{stopped}")


def minimum_reads(size_bytes: int, block_size_bytes: int) -> dict:
    """The reads one calibration of a device makes at least, by stage.

    ``{"probe" | "rotation" | "zones" | "seek": (reads, long reads among them)}``
    from the stages' minimums (``PROBE_READS``, ``ROTATION_MIN_STARTS``,
    ``ZONE_MIN_LOCATIONS``, ``SEEK_MIN_ROUNDS`` ...), the constants the stages
    themselves use. The rotation stage's search for the drop is counted as where
    none shows: stride 0, then 1, 2, 4 .. the longest stride. A long read (a
    zone read) transfers for at least ``ZONE_MIN_TRANSFER_S`` on top of its latency.
    """
    b = int(block_size_bytes)
    strides = _max_stride_blocks(int(size_bytes), b, ROTATION_MAX_STRIDE_BYTES)
    pairs = 2 + int(math.floor(math.log2(strides)))
    rotation = ROTATION_MIN_STARTS * pairs * 2 * (ROTATION_REPEATS + 1)
    # each zone pair: the first block twice, then the long read from it
    zones = 3 * (ZONE_PILOT_REPEATS + ZONE_MIN_LOCATIONS * ZONE_REPEATS)
    seek = SEEK_MIN_ROUNDS * 2 * int(seek_distances(int(size_bytes), b, SEEK_DISTANCES).size)
    return {"probe": (PROBE_READS, 0), "rotation": (rotation, 0),
            "zones": (zones, ZONE_MIN_LOCATIONS * ZONE_REPEATS), "seek": (seek, 0)}
