"""Measurements of a device through any backend, within a budget of device time.

A backend is any object with ``size_bytes``, ``block_size_bytes`` and
``read(offset_bytes, length_bytes) -> seconds`` (optionally the vectorised
``read_many(offsets, length_bytes) -> ndarray`` and ``device_time_s``):
the real O_DIRECT backend (:mod:`diskmodel.calibrate.device`), the simulated
disk (:mod:`diskmodel.calibrate.simulated`) or a user's own
(:func:`backend_from_spec`, ``--backend MODULE:FACTORY``).

The measurements, each a function of a :class:`Meter`:

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
  (:func:`diskmodel.calibrate.fit.segment_rates`).
* :func:`measure_seek`: timed pairs of reads at chosen distances (geometric
  from a few blocks to the whole device), each pair from a start point drawn
  uniformly over the device, in random order, in rounds repeated until the
  budget is spent. Every read is kept with where it came from.

:func:`calibrate` runs them all, fits, checks, and returns a
:class:`diskmodel.calibrate.results.CalibrationResult`.
"""
from __future__ import annotations

import importlib
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "BackendProtocolError", "Meter", "RotationMeasurement", "ZoneMeasurement", "SeekMeasurement",
    "check_backend", "backend_from_spec", "measure_rotation", "refine_rotation", "measure_zones",
    "measure_seek", "zones_from_profile", "seek_distances", "calibrate",
]

MIB = 1 << 20


class BackendProtocolError(ValueError):
    """An object is not a backend: the message says which part of the protocol it misses."""


def check_backend(backend) -> None:
    """Raise :class:`BackendProtocolError` unless *backend* follows the protocol."""
    name = type(backend).__name__
    for attr in ("size_bytes", "block_size_bytes"):
        if not hasattr(backend, attr):
            raise BackendProtocolError(f"backend {name} has no attribute {attr!r} (a backend needs size_bytes, "
                                       "block_size_bytes and read(offset_bytes, length_bytes) -> seconds)")
        value = getattr(backend, attr)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise BackendProtocolError(f"backend {name}.{attr} must be a positive int (got {value!r})")
    if backend.size_bytes % backend.block_size_bytes:
        raise BackendProtocolError(f"backend {name}: size_bytes={backend.size_bytes} is not a multiple of "
                                   f"block_size_bytes={backend.block_size_bytes}")
    if not callable(getattr(backend, "read", None)):
        raise BackendProtocolError(f"backend {name} has no method read(offset_bytes, length_bytes) -> seconds")
    if hasattr(backend, "read_many") and not callable(backend.read_many):
        raise BackendProtocolError(f"backend {name}.read_many is not callable")


def backend_from_spec(spec: str):
    """Import MODULE and call FACTORY() for a ``MODULE:FACTORY`` spec; check the result."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise BackendProtocolError(f"backend must be given as MODULE:FACTORY (got {spec!r})")
    module_name, factory_name = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendProtocolError(f"backend {spec!r}: cannot import module {module_name!r} "
                                   f"from the Python path ({exc})") from None
    factory = module
    for part in factory_name.split("."):
        if not hasattr(factory, part):
            raise BackendProtocolError(f"backend {spec!r}: module {module_name!r} has no {factory_name!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise BackendProtocolError(f"backend {spec!r}: {factory_name!r} is not callable")
    backend = factory()
    check_backend(backend)
    return backend


class Meter:
    """Issues reads to a backend and accounts for the device time they take.

    Device time (``spent_s``) is the backend's own ``device_time_s`` where it has
    one (the virtual clock of a simulation), else the sum of the returned read
    times. The budget is charged ``used_s``: the device time, and for backends
    without a virtual clock at least the wall time (a bounded duration).
    """

    def __init__(self, backend, *, progress=None):
        check_backend(backend)
        self.backend = backend
        self.size_bytes = int(backend.size_bytes)
        self.block_size_bytes = int(backend.block_size_bytes)
        self.reads = 0
        self.bytes_read = 0
        self._sum_s = 0.0
        self._start_device = getattr(backend, "device_time_s", None)
        self.virtual = self._start_device is not None
        self.progress = progress
        self.wall_start = time.perf_counter()

    @property
    def used_s(self) -> float:
        """What the budget is charged: the device time, and for a backend without a
        virtual clock at least the wall time since the start (so that host overheads
        cannot stretch a run on real storage beyond its budget)."""
        if self.virtual:
            return self.spent_s
        return max(self.spent_s, time.perf_counter() - self.wall_start)

    @property
    def spent_s(self) -> float:
        now = getattr(self.backend, "device_time_s", None)
        if now is not None and self._start_device is not None:
            return float(now - self._start_device)
        return self._sum_s

    def read_many(self, offsets, length_bytes: int) -> np.ndarray:
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        before = self.used_s
        if hasattr(self.backend, "read_many"):
            t = np.asarray(self.backend.read_many(offsets, int(length_bytes)), dtype=float)
        else:
            t = np.array([float(self.backend.read(int(o), int(length_bytes))) for o in offsets.tolist()])
        if t.shape != offsets.shape:
            raise BackendProtocolError(f"backend returned {t.size} times for {offsets.size} reads")
        if not np.all(np.isfinite(t)):
            raise BackendProtocolError("backend returned a non-finite read time")
        self.reads += offsets.size
        self.bytes_read += offsets.size * int(length_bytes)
        self._sum_s += float(t.sum())
        if self.progress is not None:
            self.progress.update(self.used_s - before)
        return t

    def read(self, offset: int, length_bytes: int) -> float:
        return float(self.read_many([offset], length_bytes)[0])

    def align(self, offsets) -> np.ndarray:
        b = self.block_size_bytes
        return (np.asarray(offsets, dtype=np.int64) // b) * b


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


def measure_rotation(meter: Meter, rng: np.random.Generator, *, budget_s: float, starts: int = 8,
                     repeats: int = 3, max_stride_bytes: int = 8 * MIB, min_drop_s: float = 1e-3,
                     guard_s: float = 100e-6, misfit_s: float = 50e-6) -> RotationMeasurement:
    """Rotation period from the sawtooth of read-after-read times (see module doc)."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    max_stride = max(1, min(max_stride_bytes, size // 16) // b)
    spent0 = meter.used_s
    reads0 = meter.reads
    # Start points spread over the device; a second set (interleaved) is used only
    # where too few of the first gave a clean sawtooth.
    n_points = 2 * starts
    grid = (np.arange(n_points) + rng.uniform(0.1, 0.9, n_points)) / n_points
    order = np.concatenate((np.arange(0, n_points, 2), np.arange(1, n_points, 2)))
    points = meter.align(grid[order] * max(size - (2 * max_stride + 2) * b, b))
    min_starts = 4

    def pair(o: int, s: int) -> float:
        offs = np.tile(np.array([o, o + s * b], dtype=np.int64), repeats + 1)
        t = meter.read_many(offs, b)
        return float(np.median(t[3::2]))

    periods, overheads, transfers, raw = [], [], [], []
    drops = no_drops = attempted = 0
    for o in points.tolist():
        over = meter.used_s - spent0 > budget_s
        if attempted >= min_starts and (over or (attempted >= starts and len(periods) >= (starts + 1) // 2)):
            break
        if attempted >= starts and no_drops > drops:
            break  # the second set is for sawtooths spoilt by track crossings, not for flash
        attempted += 1
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
            no_drops += 1
            continue
        drops += 1
        while s_hi - s_lo > 1:
            mid = (s_lo + s_hi) // 2
            if d(mid) > 0.5 * (d(s_lo) + d(s_hi)):
                s_lo = mid
            else:
                s_hi = mid
        k = max(2, s_hi // 2)
        if s_hi + k > max_stride:
            continue
        x0 = (d(s_hi + k) - d(s_hi)) / k
        if not 0 < x0 < 0.25 * d0:
            continue
        # Near the drop, whether the sector is caught depends on the host's gap of
        # that read: the reads caught there are those with a short gap, which biases
        # both sides. Step away from the drop by guard_s worth of strides each side.
        m = int(min(max(1, math.ceil(guard_s / x0)), 256))
        s_a, s_b = max(0, s_lo - m), s_hi + m
        q = max(m, s_b // 2)
        if s_b + 4 * q > max_stride:
            continue
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
            continue
        periods.append(period)
        overheads.append(d(s_hi) - 0.5 * x)
        transfers.append(x)
        raw.append((o, ss.tolist(), miss.tolist(), dd.tolist(), d(s_hi)))
    used = meter.used_s - spent0
    points = points[:attempted].tolist()
    if drops <= no_drops or len(periods) < 2:
        why = (f"no rotation: the read-after-read time showed no drop of >= {min_drop_s * 1e3:g} ms against "
               f"stride at {no_drops} of {attempted} start points (strides up to {max_stride * b} bytes)")
        if drops > no_drops:
            why = (f"no rotation period: a drop showed at {drops} of {attempted} start points, but only "
                   f"{len(periods)} gave a clean sawtooth (budget or track crossings)")
        return RotationMeasurement(None, None, periods, None, None, points, why, meter.reads - reads0)
    return _rotation_from(periods, overheads, transfers, raw, points, attempted, used, meter.reads - reads0,
                          "block transfer time from the common slope of the sawtooth")


def _rotation_from(periods, overheads, transfers, raw, points, starts, used, reads, how):
    p = np.asarray(periods)
    period = float(np.median(p))
    bse = float(1.2533 * p.std(ddof=1) / np.sqrt(p.size))
    return RotationMeasurement(
        period, bse, p.tolist(), float(np.median(overheads)), float(np.median(transfers)), points,
        f"clean sawtooth at {len(periods)} of {starts} start points: period {period * 1e3:.4f} ms "
        f"({60 / period:.1f} rpm), spread {p.std(ddof=1) * 1e6:.2f} us ({how}); {used:.2f} s of budget",
        reads, list(transfers), raw, used)


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
                          "block transfer time from the zone rate at each start point")


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
        small = meter.read_many([o, o], b)[1]
        big = meter.read(o, length)
        rates.append((length - b) / (big - small) if big > small else np.nan)
        if len(rates) < repeats:
            continue
        r = np.asarray(rates)
        good = r[np.isfinite(r)]
        spread = (good.max() - good.min()) / np.median(good) if good.size >= 2 else np.inf
        if spread <= agree or len(rates) >= max_repeats:
            break
    r = np.asarray(rates)
    if len(rates) > repeats and np.isfinite(r).any():
        med = float(np.nanmedian(r))
        r = r[np.argsort(np.abs(np.nan_to_num(r, nan=np.inf) - med))][:repeats]
    return r[:repeats]


def zones_from_profile(locations, rates, size_bytes: int, block_size_bytes: int) -> list:
    """Zones covering [0, size_bytes) from a rate profile by change-point detection:
    boundaries halfway between the last location of a segment and the first of the next."""
    from .fit import segment_rates

    loc = np.asarray(locations, dtype=float)
    rate = np.asarray(rates, dtype=float)
    ok = np.isfinite(rate) & (rate > 0)
    loc, rate = loc[ok], rate[ok]
    if loc.size == 0:
        raise ValueError("rates: no valid transfer rate was measured")
    segments = segment_rates(loc, rate)
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
                  rotation_period_s: float | None, repeats: int = 2, min_locations: int = 16,
                  max_locations: int = 512) -> ZoneMeasurement:
    """zcav-like transfer rates at locations spread over the device, and zone boundaries."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    spent0, reads0 = meter.used_s, meter.reads
    # Pilot: the rate near the start, from reads long enough to stand out of the
    # latency noise (doubled until they do, up to an eighth of the device).
    pilot_len = max(2 * b, min(MIB, size // 16) // b * b)
    while True:
        trials = _rate_at(meter, 0, pilot_len, 3)
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
    target_s = max(0.02, 5 * (rotation_period_s or 0.0))
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
    for n, i in enumerate(order):
        if n >= min_locations and meter.used_s - spent0 > budget_s:
            break
        rates[i] = _rate_at(meter, int(locs[i]), length, repeats)
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
        f"{meter.used_s - spent0:.2f} s of budget", meter.reads - reads0)


def _profile_rate(zones, offsets) -> np.ndarray:
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


def measure_seek(meter: Meter, rng: np.random.Generator, *, budget_s: float, count: int = 48,
                 max_rounds: int = 200, min_rounds: int = 3) -> SeekMeasurement:
    """Timed pairs of reads at design distances, in random order, repeated in rounds."""
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
        t = meter.read_many(offs, b)
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
        f"{sum(x.size for x in times)} reads; {meter.used_s - spent0:.2f} s of budget")


# ---------------------------------------------------------------------------
# The whole calibration
# ---------------------------------------------------------------------------

def _progress_bar(total_s: float, enabled):
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=round(total_s, 3), unit="s", desc="calibrate (device time)",
                bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}]")


def calibrate(backend, *, budget_s: float = 120.0, seed: int = 0, progress=None, path=None,
              kind: str | None = None, fractions=(0.08, 0.37, 0.55)):
    """Measure rotation, zones and the seek curve of *backend*, fit, check.

    Parameters
    ----------
    backend : a backend (see module doc)
    budget_s : float
        Device time to spend [s] (the run may overshoot by one batch of reads).
    seed : int
        Seed of the design's random choices.
    progress : bool or None
        tqdm progress bar; None: only on a terminal.
    path : str, optional
        The device or file measured (for the reads-reached-device and
        written-data checks of a real target).
    kind : "device", "simulated" or "custom"; default from the backend's type.
    fractions : (rotation, zones, seek)
        Shares of the budget.

    Notes
    -----
    The floor of a one-block read (command overhead and transfer), which is
    taken out of every seek pair with half a revolution, is known to within
    the time one block takes to pass under the head: use the device's
    smallest block (its logical sector) for the best seek times. A drive
    whose read cache serves an immediate re-read of the same block shows no
    sawtooth (disable its read cache, as DIXtrac does, to measure rotation).

    Returns
    -------
    CalibrationResult
    """
    from . import checks as chk
    from .results import CalibrationResult

    budget = float(budget_s)
    if not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget_s must be a finite number > 0 (got {budget_s!r})")
    if len(fractions) != 3 or any(f <= 0 for f in fractions):
        raise ValueError(f"fractions must be three shares > 0 (got {fractions!r})")
    total = sum(fractions)
    f_rot, f_zone, f_seek = (f / total for f in fractions)
    if kind is None:
        from .simulated import SimulatedDisk

        kind = "simulated" if isinstance(backend, SimulatedDisk) else (
            "device" if type(backend).__name__ == "DirectBackend" else "custom")
    if path is None and kind == "device":
        path = getattr(backend, "path", None)
    rng = np.random.default_rng(seed)
    bar = _progress_bar(budget, progress)
    meter = Meter(backend, progress=bar)
    wall0 = time.perf_counter()
    stat_before = chk.read_device_stat(path) if path is not None else None
    try:
        rotation = measure_rotation(meter, rng, budget_s=f_rot * budget)
        zones = measure_zones(meter, rng, budget_s=f_zone * budget, rotation_period_s=rotation.period_s)
        rotation = refine_rotation(rotation, meter.block_size_bytes,
                                   lambda o: _profile_rate(zones.zones, o))
        seek = measure_seek(meter, rng, budget_s=max(budget - meter.used_s, 0.0))
    finally:
        if bar is not None:
            bar.close()
    stat_after = chk.read_device_stat(path) if path is not None else None
    verdicts = []
    if kind == "simulated":
        verdicts.append(chk.Verdict("reads_reached_device", True,
                                    f"simulated: every one of the {meter.reads} reads was served by the model"))
        verdicts.append(chk.Verdict("written_data", True, "simulated: every block holds data"))
        verdicts.append(chk.Verdict("timer_resolution", True, "simulated: virtual clock, exact"))
    else:
        if path is not None:
            verdicts.append(chk.reads_reached_device(stat_before, stat_after, meter.reads, meter.bytes_read))
            verdicts.append(chk.written_data(path))
        else:
            verdicts.append(chk.Verdict("reads_reached_device", None,
                                        f"unknown: a {kind} backend has no block-layer counters to read"))
            verdicts.append(chk.Verdict("written_data", None,
                                        f"unknown: a {kind} backend gives no path to check for holes"))
        verdicts.append(chk.timer_resolution())
    verdicts.append(chk.queue_depth_one(backend))
    # Repeats: the rounds of seek pairs, pooled into at most 8 groups of equal size.
    groups = min(seek.rounds, 8)
    per = seek.rounds // groups if groups else 0
    by_round = [seek.time_s[seek.designed & (seek.round >= g * per) & (seek.round < (g + 1) * per)]
                for g in range(groups)]
    if len(by_round) >= 2:
        verdicts.append(chk.repeatability(by_round))
    else:
        verdicts.append(chk.Verdict("repeatability", None, "unknown: fewer than two rounds of seek pairs"))
    result = CalibrationResult(
        target=str(path) if path is not None else type(backend).__name__, kind=kind,
        size_bytes=meter.size_bytes, block_size_bytes=meter.block_size_bytes, budget_s=budget,
        rotation_period_s=rotation.period_s, rotation_period_bse_s=rotation.period_bse_s,
        rotation_period_samples_s=list(rotation.period_samples_s), overhead_s=rotation.overhead_s,
        block_transfer_s=rotation.block_transfer_s, rotation_detail=rotation.detail,
        zone_locations_bytes=zones.locations_bytes, zone_rates_bytes_per_s=zones.rates_bytes_per_s,
        zone_read_length_bytes=zones.read_length_bytes, zones=zones.zones, zone_detail=zones.detail,
        seek_from_bytes=seek.from_bytes, seek_to_bytes=seek.to_bytes, seek_time_s=seek.time_s,
        seek_designed=seek.designed, seek_round=seek.round, seek_distances_bytes=seek.distances_bytes,
        seek_detail=seek.detail, checks=verdicts, device_time_s=float(meter.spent_s),
        wall_time_s=float(time.perf_counter() - wall0), reads=int(meter.reads))
    result.checks.append(result.plausibility())
    result.wall_time_s = float(time.perf_counter() - wall0)
    return result
