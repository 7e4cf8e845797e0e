"""The stages of a calibration, each a function of a :class:`~diskmodel.calibrate.harness.meter.Meter`.

The drive's buffer, rotation and track changes are measured in
:mod:`diskmodel.calibrate.harness.mechanics` (with patterns no buffer can
serve); here are the zones and the seek curve:

* :func:`measure_zones`: zcav-like transfer rates at locations spread over the
  whole device (visited in bit-reversed order, so that any prefix is spread):
  a read of L bytes and a read of one block, each issued right after a read of
  the block after its first (so that both wait the same, almost full,
  revolution, and neither is in a buffer that reads ahead), differ by the
  transfer of L - 1 block and the skews of the track changes the long read
  crosses: its rate is the sustained rate (the media rate less the skews),
  quantised by one skew more or fewer, so the long reads of a location's
  repeats are contiguous (their mean counts the changes of their union);
  repeats, each at fresh blocks, until they agree within a revolution over
  the read (more is an outlier). Zone boundaries by change-point detection
  (:func:`diskmodel.model.fit.fit_zones`, whose merge test keeps only the
  changes the profile's own noise cannot make), after dropping spikes (a
  location far from both neighbours); a first or last zone of few locations
  is measured again and must show itself twice.
* :func:`measure_seek`: timed pairs of reads at chosen distances (geometric
  from a few blocks to the whole device), each pair from a start point drawn
  uniformly over the device, in random order, in rounds repeated until the
  budget is spent. Where the drive reads ahead every pair goes backwards (a
  forward pair within a segment is a buffer hit, not a seek); each round
  shifts its pairs' targets by a further quarter of a track, so that a
  distance's pairs meet the platter at evenly spread angles and their mean
  rotational wait is half a revolution also at short distances. Every read is
  kept with where it came from.

Each stage has a minimum (the ``*_MIN_*`` constants below, which
:func:`minimum_reads` counts): before it, a :class:`BudgetExhausted` from the
meter is passed on; beyond it, the stage stops where the budget runs out and
its detail says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import median_abs_deviation

from diskmodel.calibrate.harness.meter import BudgetExhausted, Meter
from diskmodel.model.units import MIB

__all__ = [
    "ZoneMeasurement", "SeekMeasurement", "measure_zones", "zones_from_profile", "repeat_noise", "zone_rate_at", "measure_seek", "seek_distances", "minimum_reads",
    "PROBE_READS", "BUFFER_MIN_READS", "ROTATION_MIN_STARTS", "ROTATION_CHAIN_READS", "ZONE_MIN_LOCATIONS", "ZONE_MIN_TRANSFER_S", "SEEK_MIN_ROUNDS",
]


# ---------------------------------------------------------------------------
# The stages' minimums: used by the stages themselves (as their defaults) and
# by minimum_reads(), which prices the smallest calibration. One place only.
# ---------------------------------------------------------------------------

PROBE_READS = 8                   # one-block reads spread over the device, timed before the stages
BUFFER_MIN_READS = 25             # the read-ahead test: 5 locations, 5 reads each
ROTATION_MIN_STARTS = 3           # start points of the rotation chains, whatever the budget
ROTATION_CHAIN_READS = 9          # timed reads of a rotation chain (after one untimed)
ROTATION_FORWARD_CHAINS = 6       # forward chains of a start point (the search for the stride, two timed)
ZONE_PILOT_REPEATS = 3            # pairs of the pilot rate near the start
ZONE_PILOT_TRIES_AT_CAP = 3       # rounds of the pilot at its longest read before the rate counts as unmeasurable
ZONE_MIN_LOCATIONS = 16           # zcav locations, whatever the budget
ZONE_REPEATS = 2                  # pairs (one block, long read) per location
ZONE_MIN_TRANSFER_S = 0.02        # a zone read is long enough to transfer for at least this long
ZONE_END_CONFIRMED = 2            # locations of an end zone measured again (the zone fit's min_size)
ZONE_END_STRETCH = 4              # an end zone's location is measured again over this many times its stretch
ZONES_MONOTONE = True             # a zoned drive's rate falls inwards: no narrow zone beyond both neighbours
#: The least step between two neighbouring zones' rates, in 512-byte sectors a revolution. A zone holds at
#: least one sector a track more than the next inwards: a sector a revolution of rate, less the share of
#: each track's time its track change takes (at most a revolution: half of it) and the share the path's
#: costs take of a long read's time (at most half: half again).
ZONE_STEP_SECTORS_A_REV = 0.25
SECTOR_BYTES = 512                # the smallest sector a drive has: the least step's unit
SEEK_DISTANCES = 48               # design distances of the seek curve
SEEK_MIN_ROUNDS = 3               # rounds of one pair per distance, whatever the budget


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
             max_repeats: int = 5, baselines: int | None = None) -> np.ndarray:
    """Rates from *repeats* pairs of reads at and next to *o*; while the spread of the rates
    exceeds *agree* (relative; an outlier, e.g. an interrupt), one more pair, up
    to *max_repeats* (the median then rejects the outlier). Returns *repeats*
    values: the median of all pairs in place of the outlying ones. *baselines*: time the
    one-block read of only the first this many pairs, and take their median for the rest
    (its time, about a revolution, is the same all along one location)."""
    b = meter.block_size_bytes
    rates = []
    # Each pair at fresh blocks, every read below every read before it (wrapping round to the
    # device's end). The long reads of successive pairs are contiguous (6 blocks apart, with the
    # one-block pair between them): a long read crosses a whole number of track changes, one
    # more or fewer by where it starts, so one read's rate is quantised by a track change's
    # skew; over contiguous reads the count is that of their union, within one, and their mean
    # rate is the sustained rate to within one skew over all of them.
    step = length + 6 * b
    room = max(meter.size_bytes - length - 2 * b, b)
    smalls = []
    for j in range(max_repeats):
        if baselines is None or j < baselines:
            small_at = (o - j * step) % room // b * b
            # two calls, as the long read below follows its one-block read: the caller's own time between
            # them is then the same, and so is the angle the head has turned when each is issued (a drive
            # without read-ahead waits the rest of a revolution for the block just behind it)
            meter.read(small_at + b, b, tag="zones")
            smalls.append(meter.read(small_at, b, tag="zones"))
            small = smalls[-1]
        else:
            small = float(np.median(smalls))
        at = (o - j * step - 2 * b - length) % room // b * b
        meter.read(at + b, b, tag="zones")
        big = meter.read(at, length, tag="zones")
        rates.append((length - b) / (big - small) if big > small else np.nan)
        if len(rates) < repeats:
            continue
        r = np.asarray(rates)
        good = r[np.isfinite(r)]
        spread = (good.max() - good.min()) / np.median(good) if good.size >= 2 else np.inf
        if spread <= agree or len(rates) >= max_repeats:
            break
        if not (meter.can_afford(3, b, "zones") and meter.can_afford(1, length, "zones")):
            break  # one more pair, only to reject an outlier, where the budget still pays for it
    r = np.asarray(rates)
    if len(rates) > repeats and np.isfinite(r).any():
        med = float(np.nanmedian(r))
        r = r[np.argsort(np.abs(np.nan_to_num(r, nan=np.inf) - med))][:repeats]
    return r[:repeats]


def _trimmed_mean(values) -> float:
    """The mean of the middle 80 % of *values*: robust to an outlier, and unbiased where a long
    read's rate takes one of two values (it crossed one track change more or fewer), as a
    median of such values is not."""
    v = np.sort(np.asarray(values, dtype=float))
    cut = int(0.1 * v.size)
    return float(v[cut:v.size - cut].mean())


def _without_outliers(loc: np.ndarray, rate: np.ndarray, k: float = 6.0):
    """The profile without its spikes: a location whose rate lies more than *k* robust standard
    deviations (of the profile's noise, from its first differences) above both neighbours, or
    below both: a read delayed by an interrupt, where a zone's step is shared by the locations
    on one side of it (a zone of one location is dropped too: no fit could tell it from a spike).
    Returns the locations and rates kept, and the root mean square of the spikes' log-rate from
    the mean of their neighbours' (None without a spike): how far a host's delay takes a rate."""
    order = np.argsort(loc)
    loc, rate = loc[order], rate[order]
    if rate.size < 3:
        return loc, rate, None
    y = np.log(rate)
    d = np.diff(y)
    scale = max(float(median_abs_deviation(d, scale="normal")) / np.sqrt(2), 1e-4)
    left = np.r_[0.0, d]     # y[i] - y[i - 1]
    right = np.r_[-d, 0.0]   # y[i] - y[i + 1]
    spike = (np.abs(left) > k * scale) & (np.abs(right) > k * scale) & (np.sign(left) == np.sign(right))
    tail = float(np.sqrt(np.mean(((left + right) / 2)[spike] ** 2))) if spike.any() else None
    return loc[~spike], rate[~spike], tail


def repeat_noise(repeats_rates) -> float | None:
    """The noise [log-rate] of a location's rate (the mean of its repeats), from how its repeats
    disagree: the pooled variance of log-rate within a location, over the repeats per location,
    without the 5 % most scattered locations (an interrupt's delay); None with no location of two
    repeats. Unlike the profile's first differences it holds no zone step, and it sees the
    quantisation of a long read's rate by the track changes it crosses, one more or fewer (a
    cylinder switch loses more than a head switch), which leaves most neighbours equal."""
    r = np.asarray(repeats_rates, dtype=float)
    if r.ndim != 2:
        return None
    y = np.where(np.isfinite(r) & (r > 0), np.log(np.where(r > 0, r, 1.0)), np.nan)
    count = np.sum(np.isfinite(y), axis=1)
    y = y[count >= 2]
    if y.shape[0] == 0:
        return None
    var = np.nanvar(y, axis=1, ddof=1) / np.sum(np.isfinite(y), axis=1)
    var = np.sort(var)[:max(1, int(math.ceil(0.95 * var.size)))]
    return float(np.sqrt(var.mean()))


def _halves(rates: np.ndarray) -> np.ndarray:
    """Each location's contiguous repeats as two: the rate of each half's union (bytes over time,
    the harmonic mean). Contiguous reads share out the track changes of their stretch, so a union's
    rate is steadier than its reads' spread says; two halves disagree as unions do."""
    r = np.asarray(rates, dtype=float)
    if r.ndim != 2 or r.shape[1] <= 2:
        return r
    h = r.shape[1] // 2

    def union(part):
        return np.sum(np.isfinite(part), axis=1) / np.nansum(1.0 / part, axis=1)

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.column_stack((union(r[:, :h]), union(r[:, h:])))


def _lone_ends(locs: np.ndarray, zones: list) -> np.ndarray:
    """Indices (into *locs*) of the locations of the first or the last zone where that zone holds no
    more than ZONE_END_CONFIRMED. A zone inside the profile needs more locations than a cluster of
    delayed reads fills, but one at either end may hold fewer (the innermost zone can be narrower
    than the locations' spacing), so reads the host delayed there (or that crossed one track change
    more than most) make a zone as well as a spike. Such a zone must be seen twice: each location is
    measured again at fresh blocks beside it, and of its two rates the one nearer its nearest
    neighbour's stands (a zone is far from it in both); the zone fit then takes such an end zone's
    rates as confirmed (``fit_zones(ends_single=True)``)."""
    if len(zones) < 2:
        return np.array([], dtype=int)
    out = []
    for start, end, _ in (zones[0], zones[-1]):
        inside = np.flatnonzero((locs >= start) & (locs < end))
        if inside.size <= ZONE_END_CONFIRMED:
            out.extend(int(i) for i in inside)
    return np.array(out, dtype=int)


def zone_step_bytes_per_s(rotation_period_s: float | None) -> float:
    """The least step between two neighbouring zones' rates [bytes/s] (ZONE_STEP_SECTORS_A_REV), 0 where
    the revolution is unknown."""
    if not rotation_period_s or not math.isfinite(rotation_period_s) or rotation_period_s <= 0:
        return 0.0
    return ZONE_STEP_SECTORS_A_REV * SECTOR_BYTES / float(rotation_period_s)


def zones_from_profile(locations, rates, size_bytes: int, block_size_bytes: int, noise_sigma=None,
                       rotation_period_s: float | None = None) -> list:
    """Zones covering [0, size_bytes) from a rate profile by change-point detection:
    boundaries halfway between the last location of a segment and the first of the next.
    *noise_sigma*: a location's log-rate noise as its repeats' spread bounds it (:func:`repeat_noise`).
    *rotation_period_s*, where known (roughly is enough): no two neighbouring zones' rates lie closer
    than ZONE_STEP_SECTORS_A_REV sectors a revolution (a step the path's drift during the run makes).
    A zone of a few locations whose rate lies beyond both its neighbours' is none (the rate of a
    zoned drive falls inwards: ZONES_MONOTONE)."""
    from diskmodel.model.fit import fit_zones

    loc = np.asarray(locations, dtype=float)
    rate = np.asarray(rates, dtype=float)
    ok = np.isfinite(rate) & (rate > 0)
    loc, rate = loc[ok], rate[ok]
    if loc.size == 0:
        raise ValueError("rates: no valid transfer rate was measured")
    loc, rate, tail = _without_outliers(loc, rate)
    if noise_sigma is not None and loc.size > 2:
        # A location's noise lies between what its neighbours say (the median first difference:
        # blind to a noise that is zero at most locations and large at a few) and what its repeats
        # say (blind to their anti-correlation: contiguous repeats share out the track changes, so
        # their mean is steadier than their spread); the geometric mean of the two bounds.
        d = np.diff(np.log(rate[np.argsort(loc)]))
        neighbours = float(median_abs_deviation(d, scale="normal")) / np.sqrt(2)
        noise_sigma = math.sqrt(noise_sigma * max(neighbours, 1e-4))
    segments = fit_zones(loc, rate, noise_sigma=noise_sigma, min_size=ZONE_END_CONFIRMED, ends_single=True,
                         tail_sigma=tail or 0.0, monotone=ZONES_MONOTONE,
                         min_step_rate=zone_step_bytes_per_s(rotation_period_s)).segments
    zones = []
    start = 0
    for i, seg in enumerate(segments):
        if i + 1 < len(segments):
            end = int((loc[seg].max() + loc[segments[i + 1]].min()) / 2) // block_size_bytes * block_size_bytes
        else:
            end = size_bytes
        zones.append((start, end, _trimmed_mean(rate[seg])))
        start = end
    return [z for z in zones if z[1] > z[0]]


def measure_zones(meter: Meter, rng: np.random.Generator, *, budget_s: float,
                  rotation_period_s: float | None, repeats: int = ZONE_REPEATS,
                  min_locations: int = ZONE_MIN_LOCATIONS, max_locations: int = 512) -> ZoneMeasurement:
    """zcav-like transfer rates at locations spread over the device, and zone boundaries.

    At least *min_locations* locations, more while *budget_s* lasts. Where the
    meter's budget runs out (:class:`BudgetExhausted`) beyond them, the location
    under way is dropped and the detail says so; before them, the exception is
    passed on. The calibration reads the pairs again once the skews are known, each
    less the track changes it crossed (:mod:`~diskmodel.calibrate.harness.zone_skews`)."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    spent0, reads0 = meter.used_s, meter.reads
    # Pilot: the rate near the start, from reads long enough to stand out of the
    # latency noise (doubled until they do, up to an eighth of the device).
    # No timed read longer than the largest request the kernel sends the device whole: a longer one
    # reaches the drive as several commands, and a drive without read-ahead loses up to a revolution
    # between each two (the next one arrives after the head has passed its first sector).
    whole = getattr(meter.backend, "max_request_bytes", None)
    whole = max(int(whole) // b * b, 2 * b) if whole else size
    pilot_len = max(2 * b, min(MIB, size // 16, whole) // b * b)
    tries_at_cap = 0
    while True:
        trials = _rate_at(meter, 0, pilot_len, ZONE_PILOT_REPEATS)
        good = trials[np.isfinite(trials)]
        if good.size >= 2:
            pilot = float(np.median(good))
            break
        if 2 * pilot_len <= min(size // 8, whole):
            pilot_len *= 2
            continue
        # At the longest read: a host's hiccup on a one-block read can hide a fast device's transfer in one
        # round, so another round is tried before the device counts as cached or untimed.
        tries_at_cap += 1
        if tries_at_cap >= ZONE_PILOT_TRIES_AT_CAP:
            raise ValueError(f"could not measure a transfer rate: reading {pilot_len} bytes took no longer "
                             "than reading one block (is the target cached, or are its reads not timed?)")
    # A read long enough that a revolution of difference in waiting, or the host's
    # jitter, is small against its transfer time.
    target_s = max(ZONE_MIN_TRANSFER_S, 10 * (rotation_period_s or 0.0))
    length = int(min(max(pilot * target_s, 8 * b), size // 8)) // b * b
    length = max(length, 2 * b)
    if length > whole:
        # reads of one request each, and as many more pairs per location as bring its contiguous
        # transfer back to target_s: their union crosses the track changes of the whole stretch,
        # within one, as one long read would
        repeats = max(repeats, int(math.ceil(length / whole)) * repeats)
        length = whole
    baselines = None if repeats <= ZONE_REPEATS else ZONE_REPEATS + 1
    per_read_s = length / pilot
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
    # Pairs whose rates differ by less than a revolution over the read agree: a read's rate is
    # quantised by the skews of the track changes it crosses (each under a revolution), and
    # only a larger difference (an interrupt, a retry) is an outlier that needs another pair.
    agree = max(0.005, rotation_period_s / per_read_s) if rotation_period_s else 0.005
    for n, i in enumerate(order):
        if n >= min_locations and meter.used_s - spent0 > budget_s:
            break
        try:
            rates[i] = _rate_at(meter, int(locs[i]), length, repeats, agree=agree, max_repeats=repeats + 3,
                                baselines=baselines)
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
    # a location's rate: its bytes over its time, the contiguous reads' union (their harmonic mean)
    rate = np.sum(np.isfinite(rates), axis=1) / np.nansum(1.0 / rates, axis=1)
    noise = repeat_noise(_halves(rates))
    zones = zones_from_profile(locs, rate, size, b, noise_sigma=noise, rotation_period_s=rotation_period_s)
    again = _lone_ends(locs, zones)
    # measured again over ZONE_END_STRETCH times the stretch: one track change more or fewer than the
    # stretch's share then moves its rate that many times less, so a zone made by the first stretch's
    # quantisation (two neighbours that each crossed one change fewer) does not show itself twice
    more_repeats = ZONE_END_STRETCH * repeats
    # each is judged against the nearest location outside its zone: the other location of a zone of two
    # is as suspect as itself (two neighbours that each crossed a track change more confirm each other)
    outside = np.setdiff1d(np.arange(locs.size), again)
    if again.size and outside.size and meter.can_afford(2 * more_repeats * again.size, b, "zones") \
            and meter.can_afford(more_repeats * again.size, length, "zones"):
        step = length + 6 * b
        for i in again:
            # fresh blocks beside the first stretch, inside the device: below it, or above it at the start
            o = (int(locs[i]) - repeats * step if int(locs[i]) >= (repeats + more_repeats) * step
                 else int(locs[i]) + (more_repeats + 1) * step)
            more = _rate_at(meter, o, length, more_repeats, agree=agree, max_repeats=more_repeats,
                            baselines=baselines)
            more = more[np.isfinite(more)]
            if more.size:
                # the stretch's union less its one pair farthest from the pairs' median: a single read the
                # host delayed would otherwise decide the zone (a revolution over the read is taken as
                # agreement, and is several track changes' skew)
                if more.size > 2:
                    more = np.delete(more, np.argmax(np.abs(np.log(more / np.median(more)))))
                again_rate = more.size / np.sum(1.0 / more)
                nearest = rate[outside[np.argmin(np.abs(locs[outside] - locs[i]))]]
                rate[i] = min((rate[i], again_rate), key=lambda r: abs(math.log(r / nearest)))
        zones = zones_from_profile(locs, rate, size, b, noise_sigma=noise, rotation_period_s=rotation_period_s)
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
                 max_rounds: int = 200, min_rounds: int = SEEK_MIN_ROUNDS, backward: bool = False,
                 bytes_per_track_at=None) -> SeekMeasurement:
    """Timed pairs of reads at design distances, in random order, repeated in rounds.

    *backward*: every pair reads its higher block first (where the drive reads
    ahead). *bytes_per_track_at* (offsets -> bytes): with it, round r shifts its
    targets by (r mod 4) / 4 of a track (see module doc).

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
        if bytes_per_track_at is not None:
            quarter = (r % 4) / 4 * np.asarray(bytes_per_track_at(start), dtype=float)
            d = np.clip(meter.align(d + quarter), b, size - b)
            start = np.minimum(start, size - b - d)
        forward = rng.random(d.size) < 0.5 if not backward else np.zeros(d.size, dtype=bool)
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

    ``{"probe" | "buffer" | "rotation" | "zones" | "seek": (reads, long reads among them)}``
    from the stages' minimums (``PROBE_READS``, ``BUFFER_MIN_READS``,
    ``ROTATION_MIN_STARTS``, ``ZONE_MIN_LOCATIONS``, ``SEEK_MIN_ROUNDS`` ...), the
    constants the stages themselves use. The rotation stage is counted as on a
    disk (on flash it makes none): its start points, each a descending chain and
    its forward chains. A long read (a zone read) transfers for at least
    ``ZONE_MIN_TRANSFER_S`` on top of its latency.
    """
    b = int(block_size_bytes)
    rotation = ROTATION_MIN_STARTS * (ROTATION_CHAIN_READS + 1) * (1 + ROTATION_FORWARD_CHAINS)
    # each zone pair: the block after the first and the first, twice (one block, then long)
    zones = 4 * (ZONE_PILOT_REPEATS + ZONE_MIN_LOCATIONS * ZONE_REPEATS)
    seek = SEEK_MIN_ROUNDS * 2 * int(seek_distances(int(size_bytes), b, SEEK_DISTANCES).size)
    return {"probe": (PROBE_READS, 0), "buffer": (BUFFER_MIN_READS, 0), "rotation": (rotation, 0),
            "zones": (zones, ZONE_MIN_LOCATIONS * ZONE_REPEATS), "seek": (seek, 0)}
