"""What a calibration should find on a drive the emulator serves, and a backend that reads it without the kernel.

The emulator (:mod:`diskmodel.calibrate.emulate`) times every request with the
per-request simulation of a :class:`~diskmodel.model.drive.parameters.DriveParameters`
(``diskmodel.calibrate.emulate.timing.drive_parameters_of``), its buffer on.
:func:`drive_truth` reads the quantities a calibration reports off those
parameters, computed independently of the harness: the rotation period
(``60 / rpm``), the zones and their sustained rates (from the layout's sectors
per track, skews, surfaces, the head switch and the one-cylinder seek), the
mean positioning time over random pairs of blocks (the layout's mapping and the
tabulated seek curve), the head switch, the skews [rev] and the read-ahead
segment (the blocks a read-ahead brings in after a one-block read). :func:`emulation_errors` compares a
:class:`~diskmodel.model.fit.CalibrationResult` with it.

:class:`ParametersDisk` is the same simulation as a calibration backend on a
virtual clock (as :class:`~diskmodel.calibrate.harness.simulated.SimulatedDisk`,
but over the emulator's parameters with the drive's buffer on, and host gaps
and timer noise like the emulated path's), for fast checks of the harness
against the drives the emulator serves.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from diskmodel.calibrate.harness.backend import check_length, check_offsets

__all__ = ["ParametersDisk", "drive_truth", "emulation_errors", "TARGETS"]

SECTOR_BYTES = 512

#: The issue's targets: relative errors (rotation, mean seek, zone rates, head switch, segment),
#: skews [rev] and zone boundaries [fraction of the capacity].
#: Sustained rates closer than this (relative) are one zone to a calibration.
RATE_RESOLUTION = 1e-3

TARGETS = {"rotation_period": 0.005, "mean_seek": 0.03, "zone_rate": 0.03, "zone_boundary": 0.01,
           "head_switch": 0.10, "skew_rev": 0.02, "segment": 0.10}


def _lost_s(move_s: float, skew_s: float, period_s: float) -> float:
    """Time a sequential transfer loses at a track change: the skew, plus whole revolutions while
    the skew is shorter than the move [s]."""
    skew_s %= period_s
    return skew_s + period_s * max(0, math.ceil((move_s - skew_s) / period_s - 1e-9))


def _zone_bounds_bytes(layout) -> np.ndarray:
    """Each zone's [first, end) byte, within the drive's capacity: a DiskSim model may describe more
    of the media than its ``Number of blocks`` exposes (maxtor300g's map runs past its last block), and
    a zone that starts past the capacity is none of the device's."""
    total = int(layout.total_blocks)
    first = np.asarray(layout.zone_first_lbn, dtype=np.int64)
    end = np.minimum(np.r_[first[1:], total], total)
    return np.stack([first, end], axis=1) * SECTOR_BYTES


def _read_ahead_reach_blocks(params, seed: int = 12345, samples: int = 4000) -> float:
    """The blocks a read-ahead brings into the segment after a one-block read, what a calibration's
    segment probe sees (and what a calibrated Disk takes as both its segment and its read-ahead):
    DiskSim's ``disk_buffer_get_max_readahead`` (src/disksim_diskcache.c) bounds it by the maximum
    read-ahead where there is one, and the circular segment keeps at most a segment's worth
    (``disk_buffer_segment_wrap``). Where the segment is larger than the maximum read-ahead, the rest
    of it holds only a longer request's own blocks, which no one-block probe shows. Scheme 4 (DEC)
    reads to the end of the track holding the read's last block, and a track further only where the
    segment starts before that track (:mod:`diskmodel.model.simulator.readahead`'s limit): after a
    one-block read, which starts its segment, to the end of its own track. That reach depends on where
    the block lies on its track; its mean over *samples* blocks drawn at random over the drive (each
    bounded by the segment) is the truth."""
    seg = int(params.segment_size_blocks)
    ra = int(params.max_read_ahead_blocks)
    if int(params.read_ahead_scheme) != 4:
        return min(ra, seg) if ra > 0 else seg
    from diskmodel.model.simulator.pbn import track_end_lbn

    arrays, total = params.layout.kernel_arrays(), int(params.layout.total_blocks)
    lbns = np.random.default_rng(seed).integers(0, total - 1, samples)
    return float(np.mean([min(track_end_lbn(arrays, int(lbn), total) - int(lbn) - 1, seg) for lbn in lbns]))


def drive_truth(params, *, samples: int = 200_000, seed: int = 12345) -> dict:
    """The quantities a calibration of the emulated *params* should find (see the module doc).

    Refused (ValueError) for a g4 layout (DiskSim's ``dm_layout_g4``, maxtor300g's): its map gives
    each surface of a cylinder range its own sectors per track and skews, so its entries are not
    zones a sequential transfer sees, and the zone, skew and head-switch truths derived here from
    entries would be wrong."""
    from diskmodel.model.simulator.mapping import G4ZoneLayout

    layout = params.layout
    if isinstance(layout, G4ZoneLayout):
        raise ValueError(f"drive truth: {params.name}'s layout is a g4 map (each surface its own sectors per "
                         "track); its zones and skews as a calibration sees them are not derived")
    period = 60.0 / float(params.rpm)
    surfaces = int(layout.surfaces)
    seek = np.asarray(params.seek_by_distance_s, dtype=float)
    one_cylinder_s = max(float(seek[1]) if seek.size > 1 else 0.0, params.head_switch_s if surfaces > 1 else 0.0)
    spt = np.asarray(layout.sectors_per_track, dtype=float)
    track_skew = np.asarray(layout.track_skew_sectors, dtype=float)
    cylinder_skew = np.asarray(layout.cylinder_skew_sectors, dtype=float)
    rates = []
    for n, ts, cs in zip(spt, track_skew, cylinder_skew):
        sector_s = period / n
        per_cylinder_s = (surfaces * period + (surfaces - 1) * _lost_s(params.head_switch_s, ts * sector_s, period)
                          + _lost_s(one_cylinder_s, cs * sector_s, period))
        rates.append(surfaces * n * SECTOR_BYTES / per_cylinder_s)
    rates = np.array(rates)
    if params.bus_read_block_s > 0:  # the interface, where it is slower than the media
        rates = np.minimum(rates, SECTOR_BYTES / params.bus_read_block_s)
    bounds = _zone_bounds_bytes(layout)
    inside = bounds[:, 0] < bounds[:, 1]   # zones past the capacity: none of the device's
    bounds, rates, spt = bounds[inside], rates[inside], spt[inside]
    track_skew, cylinder_skew = track_skew[inside], cylinder_skew[inside]
    # Zones a transfer rate can tell apart: neighbours whose sustained rates agree within
    # RATE_RESOLUTION (the same sectors per track, or both held to the interface's rate) are one.
    distinct = [0] + [i for i in range(1, rates.size)
                      if abs(rates[i] - rates[i - 1]) > RATE_RESOLUTION * rates[i - 1]]
    rate_bounds = np.stack([bounds[distinct, 0], np.r_[bounds[distinct[1:], 0], bounds[-1, 1]]], axis=1)
    weight = (bounds[:, 1] - bounds[:, 0]).astype(float)
    rng = np.random.default_rng(seed)
    total = int(layout.total_blocks)
    c0, h0 = layout.lbn_to_pbn(rng.integers(0, total, samples))[:2]
    c1, h1 = layout.lbn_to_pbn(rng.integers(0, total, samples))[:2]
    distance = np.abs(c1 - c0)
    moves = np.where(distance > 0, seek[np.minimum(distance, seek.size - 1)],
                     np.where(h1 != h0, params.head_switch_s, 0.0))

    def weighted_median(values):
        order = np.argsort(values)
        cum = np.cumsum(weight[order])
        return float(values[order][np.searchsorted(cum, cum[-1] / 2)])

    read_ahead = bool(params.caching and params.max_read_ahead_blocks > 0 and params.buffer_segments > 0)
    return {
        "name": params.name,
        "capacity_bytes": total * SECTOR_BYTES,
        "rotation_period_s": period,
        "mean_random_seek_s": float(moves.mean()),
        "zone_bounds_bytes": bounds,
        "zone_rates_bytes_per_s": rates,
        "zones": int(rate_bounds.shape[0]),
        "rate_zone_bounds_bytes": rate_bounds,
        "head_switch_s": float(params.head_switch_s) if surfaces > 1 else None,
        # the skew [rev] of the track change a sequential transfer meets most often: the
        # byte-weighted median of the zones' skews
        "track_skew_rev": weighted_median(track_skew / spt) if surfaces > 1 else None,
        "cylinder_skew_rev": weighted_median(cylinder_skew / spt),
        "surfaces": surfaces,
        "read_ahead": read_ahead,
        "segment_bytes": int(round(_read_ahead_reach_blocks(params, seed) * SECTOR_BYTES)) if read_ahead else None,
        "segments": int(params.buffer_segments) if read_ahead else None,
    }


def _boundary_error(result_zones, true_bounds: np.ndarray, capacity: int) -> float | None:
    """The largest distance from a true zone boundary to the nearest boundary found, as a fraction
    of the capacity; None where the counts differ (each boundary then has no partner)."""
    found = np.array([z[0] for z in result_zones[1:]], dtype=float)
    true = true_bounds[1:, 0].astype(float)
    if found.size != true.size:
        return None
    if found.size == 0:
        return 0.0
    return float(np.max(np.abs(np.sort(found) - true)) / capacity)


def _rel(measured, true):
    return None if measured is None or true is None else (measured - true) / true


def emulation_errors(truth: dict, result) -> list[dict]:
    """One row per quantity: ``quantity``, ``truth``, ``estimate``, ``error`` (relative, or [rev] for
    skews, or a fraction of the capacity for boundaries), ``target`` and ``passed`` (False where the
    calibration reported the quantity not measured; None where the drive has no such quantity)."""
    rows = []

    def row(quantity, true, estimate, error, target):
        passed = None if true is None else (error is not None and abs(error) <= target)
        rows.append({"quantity": quantity, "truth": true, "estimate": estimate, "error": error,
                     "target": target, "passed": passed})

    row("rotation_period_s", truth["rotation_period_s"], result.rotation_period_s,
        _rel(result.rotation_period_s, truth["rotation_period_s"]), TARGETS["rotation_period"])
    try:
        mean_seek = result.mean_random_seek_time_s("table")
    except ValueError:
        mean_seek = None
    row("mean_seek_s", truth["mean_random_seek_s"], mean_seek, _rel(mean_seek, truth["mean_random_seek_s"]),
        TARGETS["mean_seek"])
    bounds = np.asarray(truth["zone_bounds_bytes"])
    true_rates = np.asarray(truth["zone_rates_bytes_per_s"])
    found = result.rate_at_bytes((bounds[:, 0] + bounds[:, 1]) // 2)
    err = (found - true_rates) / true_rates
    worst = int(np.argmax(np.abs(err)))
    row("zone_rate_worst_bytes_per_s", float(true_rates[worst]), float(found[worst]), float(err[worst]),
        TARGETS["zone_rate"])
    row("zone_count", truth["zones"], len(result.zones), (len(result.zones) - truth["zones"]) / truth["zones"], 0.0)
    row("zone_boundaries", truth["zones"] - 1, len(result.zones) - 1,
        _boundary_error(result.zones, np.asarray(truth["rate_zone_bounds_bytes"]), truth["capacity_bytes"]),
        TARGETS["zone_boundary"])
    row("head_switch_s", truth["head_switch_s"], result.head_switch_s,
        _rel(result.head_switch_s, truth["head_switch_s"]), TARGETS["head_switch"])
    for key, measured in (("track_skew_rev", result.track_skew_fraction),
                          ("cylinder_skew_rev", result.cylinder_skew_fraction)):
        row(key, truth[key], measured, None if measured is None or truth[key] is None else measured - truth[key],
            TARGETS["skew_rev"])
    ra = result.read_ahead
    row("read_ahead", truth["read_ahead"], ra[0], 0.0 if ra[0] == truth["read_ahead"] else 1.0, 0.0)
    if truth["read_ahead"]:
        row("segment_bytes", truth["segment_bytes"], ra[1], _rel(ra[1], truth["segment_bytes"]), TARGETS["segment"])
    return rows


class ParametersDisk:
    """The emulator's timing on a virtual clock, as a calibration backend (queue depth 1).

    Parameters
    ----------
    params : DriveParameters
        The drive (its buffer as the parameters have it: on, as the emulator serves it).
    host_gap_s, host_gap_jitter_s : float
        Time between a read's completion and the next read's arrival [s]:
        ``host_gap_s + U(0, host_gap_jitter_s)`` (the path through loop, FUSE and NBD).
    noise_s : float
        Standard deviation of the Gaussian noise on each returned time [s] (the emulator's
        lateness); a returned time is never below 0.
    seed : int
        Seed of the noise and the gaps.
    path_early_s, path_early_jitter_s : float
        How much earlier than the path took the emulator takes each request to have reached the drive
        [s]: ``path_early_s + U(-path_early_jitter_s, path_early_jitter_s)`` (the emulator takes the
        path's cost, measured at start with the path idle, off each arrival, and a busy path is faster).
        0 (the default): the drive sees each host gap whole. Above 0, as through the kernel: a read
        reaches the drive the host gap less this after the last one completed, and waits for it where
        that is earlier (most reads queue: the drive sees no gap), and the host times it from its
        submission, a host gap after the last completion (the time the drive took less the gap).
    host_tail_share, host_tail_s : float
        The share of host gaps drawn instead log-uniform over ``host_tail_s`` (low, high) [s]: a host
        that now and then runs something else between two reads.
    call_gap_s : float
        The caller's own time before the first read of each call, on top of its host gap [s]: a harness
        that issues reads one call at a time spends more between two calls than between two reads of one
        call (default 0).
    max_request_bytes : int or None
        The largest request the drive gets (None: any read is one request). A longer read
        is served as requests of at most this many bytes, in order, each a host gap after the
        one before completes, as the kernel splits a read for a block device
        (:func:`diskmodel.calibrate.harness.device.max_request_bytes`).
    """

    queue_depth = 1

    def __init__(self, params, *, host_gap_s: float = 60e-6, host_gap_jitter_s: float = 40e-6,
                 noise_s: float = 20e-6, seed: int = 0, max_request_bytes: int | None = None,
                 path_early_s: float = 0.0, path_early_jitter_s: float = 0.0, host_tail_share: float = 0.0,
                 host_tail_s: tuple = (0.1e-3, 4.5e-3), call_gap_s: float = 0.0):
        from diskmodel.model.simulator.session import DriveSession

        for name, value in (("host_gap_s", host_gap_s), ("host_gap_jitter_s", host_gap_jitter_s),
                            ("noise_s", noise_s), ("path_early_s", path_early_s),
                            ("path_early_jitter_s", path_early_jitter_s), ("call_gap_s", call_gap_s)):
            if not math.isfinite(float(value)) or float(value) < 0:
                raise ValueError(f"{name} must be a finite number >= 0 (got {value!r})")
        if max_request_bytes is not None and (isinstance(max_request_bytes, bool) or int(max_request_bytes) < SECTOR_BYTES
                                              or int(max_request_bytes) % SECTOR_BYTES):
            raise ValueError(f"max_request_bytes must be a whole number of {SECTOR_BYTES}-byte blocks "
                             f"(got {max_request_bytes!r})")
        self.max_request_bytes = None if max_request_bytes is None else int(max_request_bytes)
        self.params = params
        self.block_size_bytes = SECTOR_BYTES
        self.size_bytes = int(params.layout.total_blocks) * SECTOR_BYTES
        self.host_gap_s, self.host_gap_jitter_s, self.noise_s = float(host_gap_s), float(host_gap_jitter_s), \
            float(noise_s)
        if not 0.0 <= float(host_tail_share) <= 1.0:
            raise ValueError(f"host_tail_share must be within 0..1 (got {host_tail_share!r})")
        if not 0 < host_tail_s[0] <= host_tail_s[1]:
            raise ValueError(f"host_tail_s must be (low, high) with 0 < low <= high (got {host_tail_s!r})")
        self.path_early_s, self.path_early_jitter_s = float(path_early_s), float(path_early_jitter_s)
        self.host_tail_share, self.host_tail_s = float(host_tail_share), (float(host_tail_s[0]),
                                                                           float(host_tail_s[1]))
        self.call_gap_s = float(call_gap_s)
        self._last_arrival_s = 0.0
        self._rng = np.random.default_rng(seed)
        # Compile the simulation now (numba), on a session thrown away, so that the calibration's
        # probe, which prices its budget from the wall time of its reads, times the drive, not the compiler.
        DriveSession(params).serve(False, 0, 1, 0.0)
        self._session = DriveSession(params)
        self._clock_s = 0.0
        self.reads = 0

    @property
    def device_time_s(self) -> float:
        """Virtual time spent so far (service and host gaps) [s]."""
        return self._clock_s

    def idle(self, seconds: float) -> None:
        """Let the clock run on *seconds* [s] with no request (the drive reads ahead meanwhile)."""
        self._clock_s += float(seconds)

    def read(self, offset_bytes: int, length_bytes: int) -> float:
        """Read LENGTH_BYTES at OFFSET_BYTES; the time it took [s]."""
        try:
            offset = operator.index(offset_bytes)
        except TypeError:
            raise ValueError(f"offset_bytes must be an integer (got {offset_bytes!r})") from None
        return float(self.read_many(np.array([offset], dtype=np.int64), length_bytes)[0])

    def read_many(self, offsets, length_bytes: int) -> np.ndarray:
        """Read LENGTH_BYTES at each offset in turn, each issued a host gap after the last completes [s each]."""
        length = check_length(length_bytes, self.block_size_bytes, self.size_bytes)
        offs = check_offsets(offsets, length, self.block_size_bytes, self.size_bytes)
        n = offs.size
        rng = self._rng
        gap = self.host_gap_s + rng.uniform(0.0, self.host_gap_jitter_s, n)
        noise = rng.normal(0.0, self.noise_s, n)
        if self.host_tail_share > 0:
            lo, hi = np.log(self.host_tail_s)
            gap = np.where(rng.random(n) < self.host_tail_share, np.exp(rng.uniform(lo, hi, n)), gap)
        if n:
            gap[0] += self.call_gap_s
        early = np.zeros(n)
        if self.path_early_s > 0 or self.path_early_jitter_s > 0:
            early = self.path_early_s + rng.uniform(-self.path_early_jitter_s, self.path_early_jitter_s, n)
        return self._through_the_path(offs, length, gap, early, noise)

    def _through_the_path(self, offs, length, gap, early, noise) -> np.ndarray:
        """*offs* read as through the emulator: each reaches the drive ``gap - early`` after the last
        completed (waiting for it where that is earlier), timed from the host's submission, ``gap``
        after the last completion. With ``early`` zero (no emulator's early reply), every read and each
        piece of it reaches the drive ``gap`` after the last completion."""
        out = np.empty(offs.size)
        blocks = length // SECTOR_BYTES
        piece = blocks if self.max_request_bytes is None else self.max_request_bytes // SECTOR_BYTES
        for i, o in enumerate(offs.tolist()):
            first = o // SECTOR_BYTES
            submitted = self._clock_s + gap[i]
            for at in range(first, first + blocks, piece):
                arrival = max(self._clock_s + gap[i] - early[i], self._last_arrival_s)
                self._last_arrival_s = arrival
                self._clock_s = self._session.serve(False, at, min(piece, first + blocks - at), arrival).completion_s
            out[i] = self._clock_s - submitted
        self.reads += offs.size
        return np.maximum(out + noise, 0.0)

    def close(self) -> None:
        """Nothing to release."""
