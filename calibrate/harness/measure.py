"""A calibration: the probe, the stages, the fits and the checks, within a budget of device time.

:func:`calibrate` measures a device through any backend
(:mod:`diskmodel.calibrate.harness.backend`): a probe of a few reads prices a
read, then the stages measure through one :class:`~diskmodel.calibrate.harness.meter.Meter`:
the drive's buffer first (:mod:`diskmodel.calibrate.harness.mechanics`: is there
read-ahead?), the zones (:mod:`diskmodel.calibrate.harness.stages`), the
rotation with patterns no buffer serves, then, where the budget pays, the
buffer's segments and the track changes (skews, surfaces, head switch,
command overhead), and the seek curve; with a ``writer`` (only where the user
named the target twice: ``--destroy-data-on``) the writes
(:mod:`diskmodel.calibrate.harness.writes`). It checks, fits
(:func:`diskmodel.model.fit.fit_calibration`), and returns a
:class:`diskmodel.model.fit.CalibrationResult`.

The budget is a hard cap: the Meter prices every batch of reads from the
reads so far and never starts one the budget cannot pay for
(:class:`~diskmodel.calibrate.harness.meter.BudgetExhausted`); each stage has
a minimum (counted by :func:`~diskmodel.calibrate.harness.stages.minimum_reads`),
and a budget too small for the minimums is refused with
:class:`BudgetTooSmall`, up front after a probe of a few reads where it can
be seen then. A backend's read that fails, or returns anything but a finite
time >= 0, stops the calibration with
:class:`~diskmodel.calibrate.harness.backend.BackendReadError`.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from diskmodel.calibrate.harness.backend import check_backend
from diskmodel.calibrate.harness.meter import BudgetExhausted, ChainDoesNotFit, Meter
from diskmodel.calibrate.harness.mechanics import (measure_buffer, measure_rotation, measure_tracks,
                                                   size_buffer)
from diskmodel.calibrate.harness.reach_scan import scan_reach
from diskmodel.calibrate.harness.writes import WRITE_COUNT, WriteMeasurement, measure_writes
from diskmodel.calibrate.harness.zone_skews import dequantised_zones
from diskmodel.model._checks import FieldError
from diskmodel.calibrate.harness.stages import (PROBE_READS, ROTATION_MIN_STARTS, SEEK_MIN_ROUNDS,
                                                ZONE_MIN_LOCATIONS, ZONE_MIN_TRANSFER_S, measure_seek,
                                                measure_zones, minimum_reads, zone_rate_at)

__all__ = ["BudgetTooSmall", "calibrate", "WALL_TIME_MULTIPLE", "FIT_ALLOWANCE_S"]

# Wall time. The budget is device time. On a backend without a virtual clock the
# Meter charges the budget at least the wall time since the start, so there the
# measurement also ends within budget_s of wall time. A virtual clock (a
# simulation) has no such tie to the wall clock: a slow simulator could take any
# wall time for its device time. So on every backend the Meter starts no read
# once WALL_TIME_MULTIPLE x budget_s of wall time has passed (priced like the
# device time): 2, because a simulation normally runs far faster than its
# virtual clock (the presets ~50x) and a real backend's host overhead is charged
# already, so the cap bites only on a backend more than twice as slow as the
# device it models, while a run's wall time stays predictable from its budget.
# The fitting and the checks after the measurement take a few seconds more
# (FIT_ALLOWANCE_S: what the stated bound allows for them; they are not cut off).
WALL_TIME_MULTIPLE = 2.0
FIT_ALLOWANCE_S = 10.0
# Reads the track changes take (mechanics.measure_tracks: four chains of 121, a bisection of 24 x 16)
TRACK_READS = 4 * 121 + 24 * 16
#: The most of the budget the read-ahead's reach scans take (:mod:`~diskmodel.calibrate.harness.reach_scan`):
#: about 240 places of 55 ms on a drive whose reach runs to its track's end (atlas10k), 8 on one of a fixed reach.
REACH_SHARE = 0.12


def _round_up(x: float) -> float:
    """*x* rounded up to two significant digits (a minimum one may quote)."""
    if not math.isfinite(x) or x <= 0:
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return float(f"{math.ceil(x / step * (1 - 1e-12)) * step:.2g}")


class BudgetTooSmall(ValueError):
    """The budget cannot pay for one calibration of this device.

    ``budget_s`` is the budget given, ``minimum_s`` the device time one
    calibration needs at least (estimated from the reads timed so far, rounded
    up to two digits); ``reads`` and ``per_read_s`` are what the estimate is
    made of (the minimum read count, the time of one read)."""

    def __init__(self, budget_s: float, minimum_s: float, *, reads: int | None = None,
                 per_read_s: float | None = None, long_reads: int = 0, why: str = ""):
        self.budget_s = budget_s
        self.minimum_s = _round_up(float(minimum_s))
        self.reads = reads
        self.per_read_s = per_read_s
        parts = []
        if reads is not None and per_read_s is not None:
            made = f"{reads} reads of about {per_read_s:.2g} s each"
            if long_reads:
                made += f", {long_reads} of them also transferring for >= {ZONE_MIN_TRANSFER_S:g} s"
            parts.append(made)
        if why:
            parts.append(why)
        made = f" ({'; '.join(parts)})" if parts else ""
        super().__init__(f"budget_s={budget_s:g} is too small: one calibration needs at least "
                         f"~{self.minimum_s:g} s of device time on this device{made}; "
                         f"raise it to at least {self.minimum_s:g}")

    def __reduce__(self):
        return (_budget_too_small, (self.__class__, self.args, self.__dict__))


def _budget_too_small(cls, args, state):
    exc = Exception.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


def _check_budget(budget_s) -> float:
    """*budget_s* as a float, or ValueError naming it (before any read)."""
    if isinstance(budget_s, (bool, np.bool_)) or not isinstance(budget_s, (int, float, np.integer, np.floating)):
        raise FieldError("budget_s", f"must be a number of seconds > 0 (got {budget_s!r} of type "
                                     f"{type(budget_s).__name__})")
    budget = float(budget_s)
    if not math.isfinite(budget) or budget <= 0:
        raise FieldError("budget_s", f"must be a finite number of seconds > 0 (got {budget_s!r})")
    return budget


_STAGES = ("probe", "buffer", "zones", "rotation", "seek")
_STAGE_MINIMUM = {"buffer": "its test for read-ahead", "rotation": f"{ROTATION_MIN_STARTS} start points",
                  "zones": f"{ZONE_MIN_LOCATIONS} locations", "seek": f"{SEEK_MIN_ROUNDS} rounds"}


def _minimum_cost_s(counts: dict, per_read_s: float, stages) -> float:
    """Device time the minimum reads of *stages* take at *per_read_s* a read (and the long reads' transfers)."""
    return sum(counts[st][0] * per_read_s + counts[st][1] * ZONE_MIN_TRANSFER_S for st in stages)


def _probe(meter: Meter) -> tuple[list, list]:
    """Up to PROBE_READS one-block reads spread over the device (bit-reversed
    order), one at a time while the budget pays for them: their charged costs
    and wall times [s]."""
    b = meter.block_size_bytes
    bits = max(1, int(math.ceil(math.log2(PROBE_READS))))
    cells = [c for c in (int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits)) if c < PROBE_READS]
    offsets = meter.align((np.asarray(cells) + 0.5) / PROBE_READS * max(meter.size_bytes - b, 0))
    costs, walls = [], []
    for o in offsets.tolist():
        before, wall0 = meter.used_s, time.perf_counter()
        try:
            meter.read(o, b, tag="probe")
        except BudgetExhausted:
            break
        costs.append(meter.used_s - before)
        walls.append(time.perf_counter() - wall0)
    return costs, walls


def _progress_bar(total_s: float, enabled):
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=round(total_s, 3), unit="s", desc="calibrate (device time)",
                bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}]")


def calibrate(backend, *, budget_s: float = 120.0, seed: int = 0, progress=None, path=None,
              kind: str | None = None, fractions=(0.15, 0.30, 0.55), writer=None):
    """Measure rotation, zones and the seek curve of *backend*, fit, check.

    Parameters
    ----------
    backend : a backend (see module doc)
    budget_s : float
        Device time to spend [s], a hard cap: no read is started that the rest
        of the budget cannot pay for (priced from the reads so far; only the
        first read of all is unpriced). On a backend without a virtual clock the
        budget is charged at least the wall time, so the measurement there also
        takes at most budget_s of wall time; on any backend it stops at
        ``WALL_TIME_MULTIPLE`` (2) x budget_s of wall time, and the whole call
        takes at most ``WALL_TIME_MULTIPLE x budget_s + FIT_ALLOWANCE_S`` (the
        fits and checks after the measurement: seconds).
        A number > 0, finite (else ValueError before any read).
    seed : int
        Seed of the design's random choices.
    progress : bool or None
        tqdm progress bar; None: only on a terminal.
    path : str, optional
        The device or file measured (for the reads-reached-device and
        written-data checks of a real target).
    kind : "device", "simulated" or "custom"; default from the backend's type.
    fractions : tuple of three floats
        Shares of the budget: rotation (on a noisy host its period may take up to half of it; the rest is the
        buffer's size and the tracks'), zones and the seek curve.
    writer : None (the default: read-only, nothing is written), or what writes the target
        (:func:`diskmodel.calibrate.harness.writes.writer_for`): then, after the
        reads, ``WRITE_COUNT`` one-block writes of zeros at random offsets time the
        writes and find whether a write cache is on. DESTROYS the data there.

    Notes
    -----
    The floor of a one-block read (command overhead and transfer), which is taken out of every seek pair
    with half a revolution, is known to within the time one block takes to pass under the head: use the
    device's smallest block (its logical sector) for the best seek times. A drive that reads ahead needs
    no change of settings: the buffer is found first, and the rotation and the seek pairs use patterns it
    cannot serve (reads below the last one). A drive that buffers whole tracks, the blocks before a read
    too, is not covered: its descending chains would be hits.

    Each stage has a minimum (the read-ahead test, 16 zone locations, 3 start
    points of the rotation, 3 rounds of seek pairs: the ``*_MIN_*`` constants, counted by
    :func:`minimum_reads`); a stage gets its share of the budget, or its minimum
    where that is more, and leaves the later stages' minimums (priced by the
    probe) paid for. A budget too small for the minimums is refused:

    * up front, after a probe of up to ``PROBE_READS`` (8) one-block reads
      (charged to the budget) that prices a read: :class:`BudgetTooSmall` with
      the minimum, where the minimum reads at that price exceed the budget;
    * during the measurement, where the reads turned out dearer than the probe
      said and a stage cannot reach its minimum within the budget (the budget is
      still not overrun): :class:`BudgetTooSmall`, with the minimum estimated
      from the reads made. Beyond its minimum a stage stops where the budget
      runs out and its detail says so.

    A read that fails or returns anything but a finite time >= 0 stops the
    calibration with :class:`BackendReadError` naming its offset.

    Returns
    -------
    CalibrationResult
    """
    from diskmodel.calibrate.harness import checks as chk
    from diskmodel.model.fit import CalibrationMeasurements, fit_calibration

    budget = _check_budget(budget_s)
    if len(fractions) != 3 or any(f <= 0 for f in fractions):
        raise ValueError(f"fractions must be three shares > 0 (got {fractions!r})")
    total = sum(fractions)
    f_rot, f_zone, f_seek = (f / total for f in fractions)
    if kind is None:
        from diskmodel.calibrate.harness.simulated import SimulatedDisk

        kind = "simulated" if isinstance(backend, SimulatedDisk) else (
            "device" if type(backend).__name__ == "DirectBackend" else "custom")
    if path is None and kind == "device":
        path = getattr(backend, "path", None)
    check_backend(backend)
    rng = np.random.default_rng(seed)
    counts = minimum_reads(backend.size_bytes, backend.block_size_bytes)
    n_min = sum(c[0] for c in counts.values())
    n_long = sum(c[1] for c in counts.values())
    stat_before = chk.read_device_stat(path) if path is not None else None
    bar = _progress_bar(budget, progress)
    meter = Meter(backend, progress=bar, budget_s=budget, wall_limit_s=WALL_TIME_MULTIPLE * budget)
    wall0 = time.perf_counter()
    try:
        # The probe: what one read costs here, and whether the minimums fit the budget. A budget is
        # refused up front only where even the probe's fastest read, times the minimum read count,
        # is more than it (the count is an upper one: the rotation stage's search for the drop ends
        # early on a disk, and most seek pairs are short); the stages are planned with a typical
        # (the median) read, so that each leaves the later ones' minimums paid for.
        typical = _probe_within_budget(meter, budget, n_min, n_long)
        stage, stage_reads = "buffer", meter.reads
        try:
            buffer = measure_buffer(meter, rng)
            stage, stage_reads = "zones", meter.reads
            later = _minimum_cost_s(counts, typical, ("rotation", "seek"))
            zones = measure_zones(meter, rng, budget_s=min(f_zone * budget, max(meter.remaining_s - later, 0.0)),
                                  rotation_period_s=buffer.rough_period_s)

            def rate_at(o):
                return zone_rate_at(zones.zones, o)

            stage, stage_reads = "rotation", meter.reads
            est = meter.cost_estimate(meter.block_size_bytes, "zones")  # dearer than the probe said?
            later = _minimum_cost_s(counts, max(typical, est[0] if est is not None else 0.0), ("seek",))
            share = min(f_rot * budget, max(meter.remaining_s - later, 0.0))
            used0 = meter.used_s
            rotation = measure_rotation(meter, rng, budget_s=0.3 * share, buffer=buffer, rate_at=rate_at,
                                        precision_until_s=0.5 * share)
            # beyond the minimums: the buffer's size and the track changes, where the budget pays
            buffer, tracks = _beyond_minimum(meter, rng, buffer, rotation, rate_at, used0 + share, later)
            zones = _without_the_quantum(zones, meter, rotation, tracks, buffer.detected)
            stage, stage_reads = "seek", meter.reads
            period = rotation.period_s
            seek_budget = max(meter.remaining_s, 0.0)
            if writer is not None:  # room for the writes and their reads (and the wall time they take)
                price = max(typical, est[0] if est else 0.0)
                seek_budget = max(seek_budget - max(8 * WRITE_COUNT * price, 0.05 * budget), 0.0)
            seek = measure_seek(meter, rng, budget_s=seek_budget, backward=buffer.detected,
                                bytes_per_track_at=None if period is None else (lambda o: rate_at(o) * period))
        except BudgetExhausted as exc:
            raise _refusal_after(exc, meter, stage, stage_reads, counts, typical, budget, n_min, n_long) from None
    finally:
        if bar is not None:
            bar.close()
    writes = None
    if writer is not None:
        try:
            writes = measure_writes(meter, rng, writer)
        except BudgetExhausted:
            writes = WriteMeasurement(None, None, "not measured: the budget ran out before the writes")
    verdicts = _run_checks(backend, kind, path, stat_before, meter, seek)
    return fit_calibration(CalibrationMeasurements(
        target=str(path) if path is not None else type(backend).__name__, kind=kind,
        size_bytes=meter.size_bytes, block_size_bytes=meter.block_size_bytes, budget_s=budget,
        rotation_period_s=rotation.period_s, rotation_period_bse_s=rotation.period_bse_s,
        rotation_period_samples_s=list(rotation.period_samples_s),
        overhead_s=_media_floor(rotation, tracks),
        block_transfer_s=rotation.block_transfer_s, rotation_detail=rotation.detail,
        zone_locations_bytes=zones.locations_bytes, zone_rates_bytes_per_s=zones.rates_bytes_per_s,
        zone_read_length_bytes=zones.read_length_bytes, zones=zones.zones, zone_detail=zones.detail,
        seek_from_bytes=seek.from_bytes, seek_to_bytes=seek.to_bytes, seek_time_s=seek.time_s,
        seek_designed=seek.designed, seek_round=seek.round, seek_distances_bytes=seek.distances_bytes,
        seek_detail=seek.detail, checks=tuple(verdicts), device_time_s=float(meter.spent_s),
        wall_time_s=float(time.perf_counter() - wall0), reads=int(meter.reads),
        **_drive_figures(buffer, rotation, tracks, writes)))


def _probe_within_budget(meter, budget, n_min, n_long) -> float:
    """Probe what a read costs (:func:`_probe`); refuse the budget where even the fastest probe read,
    times the minimum read count, exceeds it. Returns the typical (median) probe read's cost [s]."""
    costs, walls = _probe(meter)
    fastest, typical = float(np.min(costs)), float(np.median(costs))
    rest = n_min - len(costs)
    need = meter.used_s + rest * fastest + n_long * ZONE_MIN_TRANSFER_S
    why = ""
    if meter.virtual:  # a simulation's wall time, against WALL_TIME_MULTIPLE x budget_s
        need_wall = (meter.wall_s + rest * float(np.min(walls))) / WALL_TIME_MULTIPLE
        if need_wall > need:
            need = need_wall
            why = (f"this backend takes about {np.min(walls):.2g} s of wall time a read, and a "
                   f"calibration stops at {WALL_TIME_MULTIPLE:g} x budget_s of wall time")
    if len(costs) < PROBE_READS or need > budget:
        raise BudgetTooSmall(budget, need, reads=n_min, per_read_s=fastest, long_reads=n_long, why=why)
    return typical


def _refusal_after(exc, meter, stage, stage_reads, counts, typical, budget, n_min, n_long):
    """The :class:`BudgetTooSmall` for a stage that ran out of budget before its minimum (*exc*)."""
    # The reads were dearer than the probe said. The minimum: the budget (it did not
    # do), and the rest of this stage's minimum and the later stages' minimums at this
    # stage's price (where that is more than the probe's).
    est = meter.cost_estimate(meter.block_size_bytes, stage)
    price = max(est[0], typical) if est is not None else typical
    after = _STAGES[_STAGES.index(stage) + 1:]
    short = max(counts[stage][0] - (meter.reads - stage_reads), exc.reads)
    rest_s = short * price + _minimum_cost_s(counts, price, after)
    need = max(meter.used_s, budget) + rest_s
    if exc.limit == "wall time" and meter.reads:
        per_wall = meter.wall_s / meter.reads
        need = max(budget * (meter.wall_s + (short + sum(counts[st][0] for st in after)) * per_wall)
                   / meter.wall_limit_s, budget + short * price)
    return BudgetTooSmall(budget, need, reads=n_min, per_read_s=price, long_reads=n_long,
                          why=f"the {stage} stage reached the {exc.limit} limit before its minimum of "
                              f"{_STAGE_MINIMUM[stage]}")


def _run_checks(backend, kind, path, stat_before, meter, seek):
    """The run's verdicts: reads reached the device, written data, timer, queue depth, repeatability."""
    from diskmodel.calibrate.harness import checks as chk

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
    return verdicts


def _without_the_quantum(zones, meter: Meter, rotation, tracks, reads_ahead: bool):
    """The zone reads again, now that the skews are known: each less the track changes it crossed
    (:func:`~diskmodel.calibrate.harness.zone_skews.dequantised_zones`)."""
    return dequantised_zones(zones, size_bytes=meter.size_bytes, block_size_bytes=meter.block_size_bytes,
                             period_s=rotation.period_s, track_skew_rev=tracks.track_skew.value,
                             cylinder_skew_rev=tracks.cylinder_skew.value, surfaces=tracks.surfaces.value,
                             reads_ahead=reads_ahead)


def _media_floor(rotation, tracks):
    """The floor of a one-block read from the media: the command overhead and a block's passage."""
    if rotation.period_s is None:
        return None
    overhead = tracks.command_overhead.value
    if overhead is None:
        return rotation.overhead_s
    return overhead + rotation.block_transfer_s


def _beyond_minimum(meter: Meter, rng, buffer, rotation, rate_at, until_s: float, later_s: float):
    """The buffer's segment size and count, and the track changes, while the budget (up to
    *until_s* of it used, and *later_s* left for the later stages) pays; what it cannot pay
    for is not visible, and says so."""
    from diskmodel.calibrate.harness.mechanics import NOT_VISIBLE, Quantity, TrackMeasurement

    tracks = None
    why = "the budget ran out before it was measured"
    try:
        if buffer.detected and meter.used_s < until_s:
            buffer = size_buffer(meter, rng, buffer, rate_at)
        # the track changes take about TRACK_READS reads of under a revolution each
        cost = TRACK_READS * 0.7 * (rotation.period_s or 0.0)
        if (rotation.period_s is not None and meter.used_s < until_s
                and meter.remaining_s - later_s > 1.5 * cost):
            tracks = measure_tracks(meter, rng, rotation, buffer, reserve_s=later_s)
        # the read-ahead's mean reach, block by block (the bisection's verdicts are coin tosses where the
        # reach runs to the track's end), from the seek stage's share where the rotation's is spent
        buffer = scan_reach(meter, rng, buffer, rate_at,
                            max_s=min(REACH_SHARE * meter.budget_s, meter.remaining_s - later_s),
                            block_s=rotation.block_transfer_s)
    except BudgetExhausted:
        pass
    except ChainDoesNotFit as exc:  # a third of a track's stride (from the block passage) longer than the device
        why = f"not measurable here: {exc}"
    if tracks is None:
        if rotation.period_s is None:
            why = "no rotation: no tracks"
        missing = Quantity(None, NOT_VISIBLE, why)
        overhead = (Quantity(None, NOT_VISIBLE, "no rotation: a flat latency model holds the per-request time")
                    if rotation.period_s is None else missing)
        tracks = TrackMeasurement(missing, missing, missing, missing, overhead, [], why)
    return buffer, tracks


def _drive_figures(buffer, rotation, tracks, writes) -> dict:
    """The drive's figures of a calibration (CalibrationMeasurements' keywords), each with its status."""
    from diskmodel.model.fit.calibration import ParameterStatus

    status = [ParameterStatus("rotation_period_s", "measured" if rotation.period_s is not None else "not visible",
                              rotation.detail)]
    if not buffer.detected:
        ra = (False, None, None)
        status.append(ParameterStatus("read_ahead", "measured", buffer.detail))
    else:
        ra = (True, buffer.segment_bytes, buffer.segments)
        sized = buffer.segment_bytes is not None and buffer.segments is not None
        status.append(ParameterStatus("read_ahead", "measured" if sized else "estimated", buffer.detail))
    figures = {"read_ahead": ra}
    drive = (("head_switch_s", tracks.head_switch), ("track_skew_fraction", tracks.track_skew),
             ("cylinder_skew_fraction", tracks.cylinder_skew), ("surfaces", tracks.surfaces),
             ("command_overhead_s", tracks.command_overhead))
    if tracks.one_cylinder is not None:  # looked for where head and cylinder switches were told apart
        drive += (("one_cylinder_seek_s", tracks.one_cylinder),)
    for key, q in drive:
        figures[key] = q.value
        status.append(ParameterStatus(key, q.status, q.detail))
    if writes is None:
        status.append(ParameterStatus("write_cache", "not visible", "not measured: the calibration was read-only "
                                                                    "(writes only with --destroy-data-on)"))
    else:
        figures["write_cache"], figures["write_service_s"] = writes.write_cache, writes.median_write_s
        status.append(ParameterStatus("write_cache", "not visible" if writes.write_cache is None else "measured",
                                      writes.detail))
    figures["parameter_status"] = tuple(status)
    return figures
