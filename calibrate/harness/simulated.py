"""A simulated hard disk: the calibration backend for tests, teaching and demos.

:class:`SimulatedDisk` serves reads from a :class:`diskmodel.model.Disk` (a
preset, or a DiskSim drive) on a virtual clock. It is a backend over the one
per-request simulation, :func:`diskmodel.model.simulator.simulate.simulate_requests`
(the drive is ``DriveParameters.from_disk(disk)``), which carries the
mechanics a calibration has to see through:

- the platter turns all the time, also while the host thinks between two
  requests, and a read waits until its first sector (zones, track and
  cylinder skews) comes under the head;
- a read first pays the command overhead, then the seek from the head's
  current cylinder (with settle), or a head switch where only the surface
  changes; a transfer crossing a track boundary pays the head switch or the
  one-cylinder seek, which the skew hides when it covers them (as a drive's
  formatter chooses it, and as the presets derive it);
- sectors pass under the head at the zone's rate, and go to the host over
  the interface, one sector's bus time each, overlapped with the media;
- the drive's buffer is off by default (``drive_cache=False``): a
  calibration reads with the read cache disabled, as DIXtrac does through
  the SCSI caching mode page, so repeated reads reach the media;
- between two reads the host thinks ``host_think_s`` plus a uniform jitter;
- each returned time carries Gaussian noise and, rarely, an outlier
  (an exponential delay, like an interrupt or a retry), from a seeded RNG;
  a returned time is never below 0 (as no timer's is).

The backend protocol is the one of :mod:`diskmodel.calibrate.harness.device`:
``size_bytes``, ``block_size_bytes``, ``read(offset_bytes, length_bytes) ->
seconds`` and the vectorised ``read_many(offsets, length_bytes) -> ndarray``.
``device_time_s`` is the virtual time spent (service and think time).
"""
from __future__ import annotations

import math
import operator
from pathlib import Path

import numpy as np

from diskmodel.model import Disk, Geometry, load_preset
from diskmodel.model.drive.parameters import DriveParameters
from diskmodel.model.simulator.simulate import simulate_requests

from diskmodel.calibrate.harness.accuracy import common_errors
from diskmodel.calibrate.harness.backend import check_length, check_offsets

__all__ = ["SimulatedDisk", "simulated_disk", "disk_from_name", "calibration_errors"]


def _time_lost_s(move_s: float, skew_s: float, period_s: float) -> float:
    """Time a sequential transfer loses at a track change: the skew, plus whole
    revolutions while the skew is shorter than the move [s]."""
    skew_s %= period_s
    return skew_s + period_s * max(0, math.ceil((move_s - skew_s) / period_s - 1e-9))


def _nonnegative(name: str, value) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} must be a finite number >= 0 (got {value!r})")
    return number


class SimulatedDisk:
    """A hard disk on a virtual clock, read one request at a time.

    Parameters
    ----------
    disk : Disk
        The drive simulated.
    block_size_bytes : int, optional
        Alignment of offsets and lengths [bytes]; default the sector size.
    noise_s : float
        Standard deviation of the Gaussian noise on each returned time [s].
    outlier_probability : float
        Probability that a returned time carries an outlier.
    outlier_scale_s : float
        Mean of the exponential delay of an outlier [s].
    host_think_s, host_think_jitter_s : float
        Host time between the end of a read and the issue of the next [s]:
        ``host_think_s + U(0, host_think_jitter_s)``. The platter turns meanwhile.
    seed : int
        Seed of the random generator (noise, outliers, think jitter).
    drive_cache : bool
        Simulate the disk's buffer (``disk.drive_cache``: read-ahead, hits);
        default off, as a calibration reads with the read cache disabled.
    """

    queue_depth = 1

    def __init__(self, disk: Disk, *, block_size_bytes: int | None = None, noise_s: float = 5e-6,
                 outlier_probability: float = 1e-3, outlier_scale_s: float = 2e-3,
                 host_think_s: float = 20e-6, host_think_jitter_s: float = 20e-6, seed: int = 0,
                 drive_cache: bool = False):
        if not isinstance(disk, Disk):
            raise ValueError(f"disk must be a diskmodel.model.Disk (got {type(disk).__name__})")
        self.disk = disk
        geometry: Geometry = disk.geometry
        self.geometry = geometry
        sector = geometry.sector_size_bytes
        block = sector if block_size_bytes is None else operator.index(block_size_bytes)
        if block <= 0 or block % sector:
            raise ValueError(f"block_size_bytes must be a positive multiple of the sector size {sector} "
                             f"(got {block_size_bytes!r})")
        self.block_size_bytes = int(block)
        self.size_bytes = int(geometry.capacity_bytes // block * block)
        self.noise_s = _nonnegative("noise_s", noise_s)
        self.outlier_probability = _nonnegative("outlier_probability", outlier_probability)
        if self.outlier_probability > 1:
            raise ValueError(f"outlier_probability must lie in [0, 1] (got {outlier_probability!r})")
        self.outlier_scale_s = _nonnegative("outlier_scale_s", outlier_scale_s)
        self.host_think_s = _nonnegative("host_think_s", host_think_s)
        self.host_think_jitter_s = _nonnegative("host_think_jitter_s", host_think_jitter_s)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self.rotation_period_s = disk.rotation_period_s
        if drive_cache not in (True, False):
            raise ValueError(f"drive_cache must be True or False (got {drive_cache!r})")
        self.params = DriveParameters.from_disk(disk if drive_cache else disk.evolve(drive_cache=None))
        self._clock_s = 0.0
        self._cylinder = 0
        self._head = 0
        self.reads = 0
        # Compile the simulation now (numba; the first time after an install it takes tens of
        # seconds), so that a calibration's first timed reads, which price its budget from their
        # wall time, measure the drive and not the compiler. The result is thrown away.
        simulate_requests(self.params, np.zeros(1, dtype=bool), np.zeros(1, dtype=np.int64),
                          np.ones(1, dtype=np.int64), np.zeros(1))

    # -- truth, for tests and benchmarks --------------------------------------
    def zone_rates_bytes_per_s(self) -> np.ndarray:
        """Sustained sequential transfer rate of each zone [bytes/s]: what a long
        read sees, the media rate slowed by what each track change loses (the
        skew, plus a revolution when the skew does not cover the head switch or
        the one-cylinder move), or the interface rate where that is slower."""
        disk, params = self.disk, self.params
        period = disk.rotation_period_s
        surfaces = self.geometry.surfaces
        cylinder_move_s = max(float(params.seek_by_distance_s[1]) if params.seek_by_distance_s.size > 1 else 0.0,
                              disk.head_switch_s if surfaces > 1 else 0.0)
        rates = []
        for zone in self.geometry.zones:
            sector_s = period / zone.sectors_per_track
            lost_track = _time_lost_s(disk.head_switch_s, zone.track_skew_sectors * sector_s, period)
            lost_cylinder = _time_lost_s(cylinder_move_s, zone.cylinder_skew_sectors * sector_s, period)
            per_cylinder_s = surfaces * period + (surfaces - 1) * lost_track + lost_cylinder
            rates.append(surfaces * zone.sectors_per_track * self.geometry.sector_size_bytes / per_cylinder_s)
        return np.minimum(np.array(rates), disk.interface_rate_bytes_per_s)

    def media_rates_bytes_per_s(self) -> np.ndarray:
        """Transfer rate within one track of each zone [bytes/s]: a sector per
        ``T_rot / sectors_per_track``, or the interface rate where that is slower."""
        return np.minimum(self.disk.zone_rates_bytes_per_s(), self.disk.interface_rate_bytes_per_s)

    def rate_at_bytes(self, offset_bytes) -> np.ndarray:
        """Sustained transfer rate at byte offsets [bytes/s] (:meth:`zone_rates_bytes_per_s`)."""
        zone = self.geometry.zone_index_of_lba(np.asarray(offset_bytes) // self.geometry.sector_size_bytes)
        return self.zone_rates_bytes_per_s()[zone]

    def positioning_time_s(self, from_offset_bytes, to_offset_bytes) -> np.ndarray:
        """Seek (with settle) or head switch between two byte offsets [s]: what a
        calibration calls the seek time of a pair."""
        sector = self.geometry.sector_size_bytes
        c0, h0, _ = self.geometry.lba_to_chs(np.asarray(from_offset_bytes) // sector)
        c1, h1, _ = self.geometry.lba_to_chs(np.asarray(to_offset_bytes) // sector)
        return self._positioning(c0, h0, c1, h1)

    def mean_random_seek_time_s(self, samples: int = 400_000, seed: int = 12345) -> float:
        """Mean positioning time between uniformly random pairs of byte offsets [s]."""
        rng = np.random.default_rng(seed)
        a = rng.integers(0, self.size_bytes, samples)
        b = rng.integers(0, self.size_bytes, samples)
        return float(self.positioning_time_s(a, b).mean())

    def _positioning(self, c0, h0, c1, h1) -> np.ndarray:
        distance = np.abs(np.asarray(c1) - np.asarray(c0))
        seek = self.disk.seek_time_s(distance) + self.disk.settle_s
        switch = np.where(np.asarray(h1) != np.asarray(h0), self.disk.head_switch_s, 0.0)
        return np.where(distance > 0, seek, switch)

    # -- the backend protocol --------------------------------------------------
    @property
    def device_time_s(self) -> float:
        """Virtual time spent so far (service and host think time) [s]."""
        return self._clock_s

    def _check_length(self, length_bytes) -> int:
        return check_length(length_bytes, self.block_size_bytes, self.size_bytes)

    def read(self, offset_bytes: int, length_bytes: int) -> float:
        """Read LENGTH_BYTES at OFFSET_BYTES; return the time it took [s]."""
        try:
            offset = operator.index(offset_bytes)
        except TypeError:
            raise ValueError(f"offset_bytes must be an integer (got {offset_bytes!r})") from None
        return float(self.read_many(np.array([offset], dtype=np.int64), length_bytes)[0])

    def read_many(self, offsets, length_bytes: int) -> np.ndarray:
        """Read LENGTH_BYTES at each offset in turn (queue depth 1); seconds per read [s]."""
        length = self._check_length(length_bytes)
        offs = check_offsets(offsets, length, self.block_size_bytes, self.size_bytes)
        if offs.size == 0:
            return np.empty(0, dtype=np.float64)
        n = offs.size
        sector = self.geometry.sector_size_bytes
        rng = self._rng
        think = self.host_think_s + rng.uniform(0.0, self.host_think_jitter_s, n)
        noise = rng.normal(0.0, self.noise_s, n)
        outlier = rng.random(n) < self.outlier_probability
        noise[outlier] += rng.exponential(self.outlier_scale_s, int(outlier.sum()))
        # the host thinks before each read: the first arrives think[0] after the clock,
        # read i + 1 think[i + 1] after read i completes
        result = simulate_requests(self.params, np.zeros(n, dtype=bool), offs // sector,
                                   np.full(n, length // sector, dtype=np.int64), np.append(think[1:], 0.0),
                                   start_s=self._clock_s + think[0], start_cylinder=self._cylinder,
                                   start_head=self._head)
        out = result.service_s
        self._clock_s = result.end_s
        self._cylinder = result.end_cylinder
        self._head = result.end_head
        self.reads += n
        # A timer never reads less than zero: the noise cannot take a read's time
        # below 0 (a read caught at once, with little overhead, takes microseconds).
        return np.maximum(out + noise, 0.0)

    def close(self) -> None:
        """Nothing to release (for symmetry with the device backend)."""

    def __repr__(self) -> str:
        return (f"SimulatedDisk({self.disk.name!r}, size_bytes={self.size_bytes}, "
                f"block_size_bytes={self.block_size_bytes}, device_time_s={self._clock_s:.3f})")


# ---------------------------------------------------------------------------
# Drives by name or folder
# ---------------------------------------------------------------------------

def disk_from_name(name: str | Path) -> Disk:
    """A preset name (``load_preset``) or a DiskSim drive folder as a :class:`Disk`."""
    path = Path(name)
    if path.is_dir():
        from diskmodel.model.disksim_drives.convert import load_disksim_drive

        drive = load_disksim_drive(path)
        if drive.disk is None:
            raise ValueError(f"preset {name!r}: diskmodel.model.disksim_drives.convert gives no Disk for this drive")
        return drive.disk
    try:
        return load_preset(str(name))
    except ValueError as exc:
        raise ValueError(f"preset must be a preset name or a DiskSim drive folder: {exc}") from None


def simulated_disk(name: str | Path, **options) -> SimulatedDisk:
    """A :class:`SimulatedDisk` of a preset name or a DiskSim drive folder."""
    return SimulatedDisk(disk_from_name(name), **options)


def calibration_errors(sim: SimulatedDisk, result) -> dict:
    """Relative errors of a calibration against the simulated truth
    (:func:`diskmodel.calibrate.harness.accuracy.common_errors`; the zones cut at the disk's end)."""
    bounds = sim.geometry.zone_bounds_bytes()
    bounds[:, 1] = np.minimum(bounds[:, 1], sim.size_bytes)
    return common_errors(result, rotation_period_s=sim.rotation_period_s,
                         mean_random_seek_s=sim.mean_random_seek_time_s(), zone_bounds_bytes=bounds,
                         zone_rates_bytes_per_s=sim.zone_rates_bytes_per_s())
