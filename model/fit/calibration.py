"""A calibration's fits: from the harness's measurements to a frozen result.

:class:`CalibrationMeasurements` holds what the harness measured (every seek
sample, the rotation and zone measurements, the checks it made).
:func:`fit_calibration` derives the seek curve (the time of each read less the
mean rotational wait, half a period, and the minimum per-request overhead
with a block's transfer), drops outliers, tests whether latency is flat
against distance, and fits: the two-piece curve and the measured table (the
bin means as a non-negative, non-decreasing curve) where there is a mechanical seek, a flat latency model where there is none; it adds
the ``plausibility`` check, which says whether that picture holds together.

:class:`CalibrationResult` is the frozen outcome: the measurements' fields,
the fits, ``params``, ``bse``, ``conf_int()`` and the rest of
:class:`~diskmodel.model.fit.base.FitResult`, ``summary()``, ``plot()``,
``plot_zones()``, and :meth:`CalibrationResult.to_disk` to predict with
:mod:`diskmodel.model`. Its file format (schema, versions, reading and
writing) is :mod:`diskmodel.calibrate.harness.results`.
"""
from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._checks import evolve as _evolve, show, whole_number
from .base import FitResult, Parameter, Parameters, frozen_array, json_safe
from .interface import interface_limit
from .latency import FlatLatencyFit, FlatnessTest, fit_flat_latency, flatness_test
from .seek import TableFit, TwoPieceFit, fit_table, fit_two_piece

__all__ = ["Verdict", "ParameterStatus", "STATUSES", "CalibrationMeasurements", "CalibrationResult",
           "fit_calibration", "PLAUSIBILITY"]

#: The name of the check fit_calibration derives from the fits (any check of that name measured is replaced).
PLAUSIBILITY = "plausibility"
#: Seek pairs closer than this [tracks] are left out of the seek curve's fits (see fit_calibration).
SHORTEST_SEEK_TRACKS = 2.0


@dataclass(frozen=True)
class Verdict:
    """A check of a measurement: ``passed`` True, False (do not trust the measurement as it
    stands) or None (the check could not be made here; ``detail`` says why)."""

    name: str
    passed: bool | None
    detail: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not isinstance(self.detail, str):
            raise ValueError(f"name and detail must be strings (got {show(self.name)}, {show(self.detail)})")
        if self.passed is not None and not isinstance(self.passed, (bool, np.bool_)):
            raise ValueError(f"passed must be True, False or None (got {show(self.passed)})")

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


#: How a calibrated figure was obtained.
STATUSES = ("measured", "estimated", "not visible")


@dataclass(frozen=True)
class ParameterStatus:
    """How one figure of a calibration was obtained: ``status`` one of :data:`STATUSES`, and why."""

    name: str
    status: str
    detail: str

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status of {self.name} must be one of {', '.join(STATUSES)} (got {show(self.status)})")

    def to_dict(self) -> dict:
        return {"status": self.status, "detail": self.detail}


@dataclass(frozen=True, eq=False)
class CalibrationMeasurements:
    """What a calibration measured. Units: bytes and seconds.

    ``seek_*`` arrays hold one entry per read of the seek stage (where the
    head came from, where it went, the read time, whether its distance was a
    design distance, its round); ``zones`` are (start_byte, end_byte,
    rate_bytes_per_s) covering the device; ``checks`` are :class:`Verdict`.
    """

    target: str
    kind: str
    size_bytes: int
    block_size_bytes: int
    budget_s: float
    rotation_period_s: float | None
    rotation_period_bse_s: float | None
    rotation_period_samples_s: tuple
    overhead_s: float | None
    block_transfer_s: float | None
    rotation_detail: str
    zone_locations_bytes: np.ndarray
    zone_rates_bytes_per_s: np.ndarray
    zone_read_length_bytes: int
    zones: tuple
    zone_detail: str
    seek_from_bytes: np.ndarray
    seek_to_bytes: np.ndarray
    seek_time_s: np.ndarray
    seek_designed: np.ndarray
    seek_round: np.ndarray
    seek_distances_bytes: np.ndarray
    seek_detail: str
    checks: tuple = ()
    device_time_s: float = 0.0
    wall_time_s: float = 0.0
    reads: int = 0
    head_switch_s: float | None = None
    one_cylinder_seek_s: float | None = None
    track_skew_fraction: float | None = None
    cylinder_skew_fraction: float | None = None
    surfaces: int | None = None
    read_ahead: tuple = (None, None, None)
    command_overhead_s: float | None = None
    write_cache: bool | None = None
    write_service_s: float | None = None
    parameter_status: tuple = ()

    def __post_init__(self):
        set_ = object.__setattr__
        if len(self.read_ahead) != 3:
            raise ValueError(f"read_ahead must be (detected, segment_bytes, segments) (got {show(self.read_ahead)})")
        set_(self, "read_ahead", tuple(self.read_ahead))
        set_(self, "parameter_status", tuple(ParameterStatus(*p) if not isinstance(p, ParameterStatus) else p
                                             for p in self.parameter_status))
        for name in ("size_bytes", "block_size_bytes") + (("surfaces",) if self.surfaces is not None else ()):
            whole_number(name, getattr(self, name), minimum=1)
        for name in ("head_switch_s", "one_cylinder_seek_s", "command_overhead_s", "write_service_s"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0 or None (got {show(v)})")
        for name, dtype in (("zone_locations_bytes", np.int64), ("zone_rates_bytes_per_s", float),
                            ("seek_from_bytes", np.int64), ("seek_to_bytes", np.int64), ("seek_time_s", float),
                            ("seek_designed", bool), ("seek_round", np.int64), ("seek_distances_bytes", np.int64)):
            set_(self, name, frozen_array(name, getattr(self, name), dtype).reshape(-1))
        n = self.seek_from_bytes.size
        for name in ("seek_to_bytes", "seek_time_s", "seek_designed", "seek_round"):
            if getattr(self, name).size != n:
                raise ValueError(f"{name} must have one entry per read, as seek_from_bytes ({n}) "
                                 f"(got {getattr(self, name).size})")
        if self.zone_rates_bytes_per_s.size != self.zone_locations_bytes.size:
            raise ValueError(f"zone_rates_bytes_per_s must have one entry per location "
                             f"({self.zone_locations_bytes.size}) (got {self.zone_rates_bytes_per_s.size})")
        set_(self, "zones", tuple((int(a), int(b), float(r)) for a, b, r in self.zones))
        if not self.zones:
            raise ValueError("zones must not be empty")
        set_(self, "rotation_period_samples_s", tuple(float(v) for v in self.rotation_period_samples_s))
        set_(self, "checks", tuple(self.checks))
        for check in self.checks:
            if not isinstance(check, Verdict):
                raise ValueError(f"checks must be Verdict objects (got {show(check)})")

    def evolve(self, **changes) -> "CalibrationMeasurements":
        return _evolve(self, changes)

    @property
    def seek_distance_bytes(self) -> np.ndarray:
        return np.abs(self.seek_to_bytes - self.seek_from_bytes)

    def track_of_bytes(self, offset_bytes) -> np.ndarray:
        """Position in tracks of byte offsets [tracks]: the bytes before each offset divided by the bytes of a
        track (rate * T_rot) of the zones they lie in; the media's where the interface limits (fit/interface.py)."""
        if self.rotation_period_s is None:
            raise ValueError("there is no rotation period, hence no tracks, on this device")
        if (limit := interface_limit(self)) is not None:
            return np.asarray(offset_bytes, dtype=float) / limit.track_bytes(self.rotation_period_s)
        starts = np.array([z[0] for z in self.zones] + [self.zones[-1][1]], dtype=float)
        per_track = np.array([z[2] for z in self.zones]) * self.rotation_period_s
        knots = np.concatenate(([0.0], np.cumsum(np.diff(starts) / per_track)))
        return np.interp(np.asarray(offset_bytes, dtype=float), starts, knots)


def _plausibility(rotation_period_s, flat: FlatnessTest) -> Verdict:
    """Is a mechanical seek present, and are the rotation and the seek curve consistent about it?"""
    if rotation_period_s is not None and not flat.flat:
        return Verdict(PLAUSIBILITY, True, f"mechanical seek present: rotation period "
                                           f"{rotation_period_s * 1e3:.4f} ms; {flat.detail}")
    if rotation_period_s is None and flat.flat:
        return Verdict(PLAUSIBILITY, True,
                       "no mechanical seek curve: no rotation and latency flat against distance "
                       f"({flat.detail}); a flat latency model is given, not a two-piece fit")
    why = ("a rotation period but latency flat against distance" if flat.flat
           else "latency grows with distance but no rotation was found")
    return Verdict(PLAUSIBILITY, False, f"inconsistent: {why} ({flat.detail}); no two-piece fit is given")


def fit_calibration(measurements: CalibrationMeasurements) -> "CalibrationResult":
    """Fit a calibration's measurements (see the module doc)."""
    if not isinstance(measurements, CalibrationMeasurements):
        raise ValueError(f"measurements must be CalibrationMeasurements (got {show(measurements)})")
    m = measurements
    distance = m.seek_distance_bytes
    moved = distance > 0
    if not moved.any():
        raise ValueError("seek_to_bytes: no read moved the head (every one equals its seek_from_bytes)")
    d = m.seek_distances_bytes.astype(float)
    bins = np.concatenate(([0.0], np.sqrt(d[:-1] * d[1:]), [2.0 * m.size_bytes]))
    bin_of = np.searchsorted(bins, distance, side="right") - 1
    if m.rotation_period_s is not None:
        # the floor of a one-block read and the mean rotational wait (eq. 8)
        baseline = float(m.overhead_s + m.rotation_period_s / 2)
    else:
        # no rotation: latency in excess of the median latency at the shortest distances
        baseline = float(np.median(m.seek_time_s[moved & (bin_of == bin_of[moved].min())]))
    seek = m.seek_time_s - baseline
    keep = moved.copy()
    for k in np.unique(bin_of[moved]):
        in_bin = moved & (bin_of == k)
        q1, q3 = np.percentile(seek[in_bin], [25, 75])
        keep &= ~(in_bin & (seek > q3 + 3 * (q3 - q1)))
    flat = flatness_test(distance[keep], m.seek_time_s[keep])
    if m.rotation_period_s is not None and not flat.flat:
        # Within two tracks a pair's positioning is none or a head switch (measured on its own),
        # and its rotational wait is set by the geometry, not spread over a revolution: such
        # pairs say nothing of the seek curve and are left out of its fits.
        tracks = np.abs(m.track_of_bytes(m.seek_to_bytes) - m.track_of_bytes(m.seek_from_bytes))
        keep &= tracks >= SHORTEST_SEEK_TRACKS
    # a mechanical seek's table is a physical seek curve: non-negative and non-decreasing in distance
    # (the means of short distances, where a uniform rotational wait is only approached, may fall
    # below 0 by chance)
    mechanical = m.rotation_period_s is not None and not flat.flat
    fits = {"table": fit_table(distance[keep], seek[keep], bins=bins, physical=mechanical)}
    if m.rotation_period_s is not None and not flat.flat:
        # The two-piece curve is fitted against the distance in tracks, the
        # physical coordinate of a seek: a track holds rate * T_rot bytes, so
        # outer zones hold more bytes per track than inner ones.
        ok = keep & (tracks > 0)
        try:
            fits["two_piece"] = fit_two_piece(tracks[ok], seek[ok], method="rlm", distance_unit="tracks")
        except ValueError as exc:
            fits["two_piece_error"] = str(exc)
    else:
        rates = m.zone_rates_bytes_per_s
        good = np.isfinite(rates) & (rates > 0)
        per_byte = float(np.median(1.0 / rates[good])) if good.any() else float("nan")
        fits["latency_model"] = fit_flat_latency(m.seek_time_s[keep], per_byte)
    checks = tuple(c for c in m.checks if c.name != PLAUSIBILITY) + (_plausibility(m.rotation_period_s, flat),)
    measured = {f.name: getattr(m, f.name) for f in dataclasses.fields(CalibrationMeasurements)}
    return CalibrationResult(**{**measured, "checks": checks}, seek_baseline_s=baseline, seek_kept=keep,
                             flat_test=flat, **fits)


#: The drive's figures a calibration file of format 3 holds (each null where not visible).
DRIVE_FIGURES = ("head_switch_s", "one_cylinder_seek_s", "track_skew_fraction", "cylinder_skew_fraction", "surfaces",
                 "read_ahead", "command_overhead_s", "write_cache")


def _drive_figures(data: dict) -> dict:
    """The drive's figures of a :meth:`CalibrationResult.to_dict` output; those of a file of
    an earlier format (which has none) are not visible, and say so."""
    if "read_ahead" not in data:
        why = "not measured: calibrated by a diskmodel that wrote calibration format 1 or 2"
        return {"parameter_status": tuple(ParameterStatus(k, "not visible", why) for k in DRIVE_FIGURES)}
    ra = data["read_ahead"]
    return {**{k: data[k] for k in ("head_switch_s", "track_skew_fraction", "cylinder_skew_fraction", "surfaces",
                                   "command_overhead_s", "write_cache", "write_service_s")},
            "one_cylinder_seek_s": data.get("one_cylinder_seek_s"),  # absent before it was measured
            "read_ahead": (ra["detected"], ra["segment_bytes"], ra["segments"]),
            "parameter_status": tuple(ParameterStatus(k, v["status"], v["detail"])
                                      for k, v in data.get("detail", {}).items())}


@dataclass(frozen=True, eq=False, kw_only=True)
class CalibrationResult(CalibrationMeasurements, FitResult):
    """A calibration's measurements, fits and checks (see the module doc); made by
    :func:`fit_calibration`. ``evolve(**changes)`` changes measurements and fits again."""

    seek_baseline_s: float
    seek_kept: np.ndarray
    flat_test: FlatnessTest
    table: TableFit
    two_piece: TwoPieceFit | None = None
    two_piece_error: str | None = None
    latency_model: FlatLatencyFit | None = None
    model: ClassVar[str] = "calibration"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "seek_kept", frozen_array("seek_kept", self.seek_kept, bool).reshape(-1))
        if self.seek_kept.size != self.seek_time_s.size:
            raise ValueError(f"seek_kept must have one entry per read ({self.seek_time_s.size}) "
                             f"(got {self.seek_kept.size})")

    @property
    def measurements(self) -> CalibrationMeasurements:
        """The measurements alone (without the derived plausibility check)."""
        measured = {f.name: getattr(self, f.name) for f in dataclasses.fields(CalibrationMeasurements)}
        measured["checks"] = tuple(c for c in self.checks if c.name != PLAUSIBILITY)
        return CalibrationMeasurements(**measured)

    def evolve(self, **changes) -> "CalibrationResult":
        """The result of fitting the measurements with *changes* (names of measurement fields)."""
        return fit_calibration(self.measurements.evolve(**changes))

    @property
    def mechanical_seek(self) -> bool:
        return bool(self.rotation_period_s is not None and not self.flat_test.flat)

    @property
    def mean_bytes_per_track(self) -> float:
        return float(self.size_bytes / self.track_of_bytes(self.size_bytes))

    @property
    def seek_fit(self):
        """The chosen seek model: the two-piece fit, the flat latency model where
        there is no mechanical seek, or the table where the two-piece fit failed."""
        if self.two_piece is not None:
            return self.two_piece
        if self.latency_model is not None:
            return self.latency_model
        return self.table

    def plausibility(self) -> Verdict:
        """The plausibility check fit_calibration added to ``checks``."""
        return next(c for c in self.checks if c.name == PLAUSIBILITY)

    # FitResult ---------------------------------------------------------------
    @property
    def parameters(self) -> Parameters:
        """Rotation period, overhead and the chosen seek model's parameters (``seek_`` + the
        two-piece fit's names, in tracks; or the flat model's ``latency_s``, ``per_byte_s``)."""
        def value(v):
            return math.nan if v is None else float(v)

        ps = [Parameter("rotation_period_s", value(self.rotation_period_s), 0.0, math.inf, "s"),
              Parameter("overhead_s", value(self.overhead_s), 0.0, math.inf, "s")]
        fit = self.seek_fit
        if isinstance(fit, TwoPieceFit):
            ps += [p.evolve(name=f"seek_{p.name}") for p in fit.parameters.values()]
        elif isinstance(fit, FlatLatencyFit):
            ps += list(fit.parameters.values())
        return Parameters(ps)

    @property
    def covariance(self) -> np.ndarray:
        """Block diagonal: the rotation period's variance, none for the overhead (a minimum), the seek fit's."""
        fit = self.seek_fit
        seek = fit.covariance if isinstance(fit, (TwoPieceFit, FlatLatencyFit)) else np.zeros((0, 0))
        bse = self.rotation_period_bse_s
        out = np.zeros((2 + len(seek), 2 + len(seek)))
        out[0, 0] = math.nan if bse is None else bse ** 2
        out[1, 1] = math.nan
        out[2:, 2:] = seek
        return out

    @property
    def nobs(self) -> int:
        """The seek samples the chosen seek model was fitted to."""
        return self.seek_fit.nobs

    @property
    def df_resid(self) -> float:
        return self.seek_fit.df_resid

    # derived quantities --------------------------------------------------------
    def _model(self, model):
        if model is None:
            return self.seek_fit
        if model == "two_piece":
            if self.two_piece is None:
                why = "no mechanical seek" if not self.mechanical_seek else self.two_piece_error
                raise ValueError(f"model='two_piece': there is no two-piece fit ({why})")
            return self.two_piece
        if model == "table":
            return self.table
        raise ValueError(f"model must be 'two_piece', 'table' or None (got {model!r})")

    def seek_time_at_s(self, distance_bytes, model: str | None = None) -> np.ndarray:
        """Seek time [s] at byte distances from the chosen (or named) model (the
        two-piece curve, fitted in tracks, at the mean bytes per track)."""
        fit = self._model(model)
        d = np.asarray(distance_bytes, dtype=float)
        if isinstance(fit, FlatLatencyFit):
            return np.zeros_like(d)
        if isinstance(fit, TwoPieceFit):
            d = d / self.mean_bytes_per_track
        return np.maximum(fit.predict(d), 0.0)

    def seek_time_between_s(self, from_bytes, to_bytes, model: str | None = None) -> np.ndarray:
        """Seek time [s] between byte offsets (the two-piece curve at their distance in tracks)."""
        fit = self._model(model)
        a = np.asarray(from_bytes, dtype=float)
        b = np.asarray(to_bytes, dtype=float)
        if isinstance(fit, FlatLatencyFit):
            return np.zeros(np.broadcast(a, b).shape)
        if isinstance(fit, TwoPieceFit):
            return np.maximum(fit.predict(np.abs(self.track_of_bytes(b) - self.track_of_bytes(a))), 0.0)
        return np.maximum(fit.predict(np.abs(b - a)), 0.0)

    def mean_random_seek_time_s(self, model: str | None = None, samples: int = 400_000, seed: int = 12345) -> float:
        """Mean seek time [s] between uniformly random pairs of byte offsets."""
        rng = np.random.default_rng(seed)
        a = rng.integers(0, self.size_bytes, samples)
        b = rng.integers(0, self.size_bytes, samples)
        return float(self.seek_time_between_s(a, b, model).mean())

    def rate_at_bytes(self, offset_bytes) -> np.ndarray:
        """Transfer rate [bytes/s] of the zone holding each byte offset."""
        offset = np.asarray(offset_bytes)
        if np.any(offset < 0) or np.any(offset >= self.size_bytes):
            raise ValueError(f"offset_bytes must lie in [0, {self.size_bytes})")
        starts = np.array([z[0] for z in self.zones])
        rates = np.array([z[2] for z in self.zones])
        return rates[np.searchsorted(starts, offset, side="right") - 1]

    def partition_rates(self, partitions) -> list[dict]:
        """Rate at each partition's start and middle; *partitions* are objects or
        dicts with ``name``, ``start_bytes``, ``size_bytes``."""
        out = []
        for p in partitions:
            get = (lambda k: p[k]) if isinstance(p, dict) else (lambda k: getattr(p, k))
            start, size = int(get("start_bytes")), int(get("size_bytes"))
            mid = min(start + size // 2, self.size_bytes - 1)
            out.append({"name": get("name"), "start_byte": start, "size_bytes": size,
                        "rate_at_start_bytes_per_s": float(self.rate_at_bytes(min(start, self.size_bytes - 1))),
                        "rate_at_middle_bytes_per_s": float(self.rate_at_bytes(mid))})
        return out

    def seek_curve_table(self) -> list[list[float]]:
        """[[distance_bytes, seek_time_s], ...]: the mean seek time per distance bin."""
        t = self.table
        return [[float(d), float(m)] for d, m in zip(t.distance, t.mean_s)]

    def seek_curve_spread(self) -> list[dict]:
        t = self.table
        return [{"distance_bytes": float(d), "seek_time_s": float(m), "std_s": float(s), "n": int(n)}
                for d, m, s, n in zip(t.distance, t.mean_s, t.std_s, t.count)]

    def to_disk(self, seek: str = "two_piece", name: str | None = None):
        """A :class:`diskmodel.model.Disk` for prediction (see
        :func:`diskmodel.model.fit.calibration_views.calibrated_disk`)."""
        from .calibration_views import calibrated_disk

        return calibrated_disk(self, seek, name)

    # reporting -------------------------------------------------------------
    def summary(self) -> str:
        lines = [f"calibration of {self.target} ({self.kind}): {self.size_bytes} bytes, "
                 f"block {self.block_size_bytes} bytes; {self.device_time_s:.2f} s of device time, "
                 f"{self.wall_time_s:.2f} s wall, {self.reads} reads"]
        if self.rotation_period_s is not None:
            lines.append(f"rotation period {self.rotation_period_s * 1e3:.4f} ms "
                         f"(se {self.rotation_period_bse_s * 1e6:.2f} us, {60 / self.rotation_period_s:.1f} rpm); "
                         f"minimum one-block read {self.overhead_s * 1e3:.4f} ms (command overhead and transfer)")
        else:
            lines.append(f"rotation: none found ({self.rotation_detail})")
        lines.append(f"mechanical seek: {'yes' if self.mechanical_seek else 'NO'}")
        fit = self.seek_fit
        if isinstance(fit, TwoPieceFit):
            lines.append(fit.summary())
            lines.append(f"mean seek over random pairs: {self.mean_random_seek_time_s() * 1e3:.3f} ms "
                         f"(table model {self.mean_random_seek_time_s('table') * 1e3:.3f} ms)")
        elif isinstance(fit, FlatLatencyFit):
            lines.append(fit._summary_title())
        else:
            lines.append(f"seek: measured table only ({self.two_piece_error})")
        lines += self._drive_lines()
        rates = np.array([z[2] for z in self.zones])
        lines.append(f"zones: {len(self.zones)}, rates {rates.min() / 1e6:.2f}..{rates.max() / 1e6:.2f} MB/s "
                     f"({self.zone_detail})")
        lines.append("checks:")
        for v in self.checks:
            mark = {True: "PASS", False: "FAIL", None: "n/a "}[v.passed]
            lines.append(f"  [{mark}] {v.name}: {v.detail}")
        return "\n".join(lines)

    def _drive_lines(self) -> list:
        """The drive's figures, each with how it was obtained."""
        status = {p.name: p for p in self.parameter_status}
        ra = self.read_ahead
        shown = {
            "read_ahead": ("not measured" if ra[0] is None else "none" if not ra[0] else
                           f"yes, {'?' if ra[2] is None else ra[2]} segment(s) of "
                           f"{'?' if ra[1] is None else ra[1]} bytes"),
            **{k: None if getattr(self, k) is None else f"{getattr(self, k) * 1e3:.4f} ms"
               for k in ("head_switch_s", "one_cylinder_seek_s")},
            **{k: None if getattr(self, k) is None else f"{getattr(self, k):.4f} rev"
               for k in ("track_skew_fraction", "cylinder_skew_fraction")},
            "surfaces": None if self.surfaces is None else str(self.surfaces),
            "command_overhead_s": (None if self.command_overhead_s is None
                                   else f"{self.command_overhead_s * 1e6:.1f} us"),
            "write_cache": (None if self.write_cache is None else
                            f"{'on' if self.write_cache else 'off'} (a write takes {self.write_service_s * 1e6:.1f} us)"),
        }
        lines = []
        for name, text in shown.items():
            p = status.get(name)
            how = f" [{p.status}]" if p is not None else ""
            lines.append(f"{name}: {text if text is not None else 'null'}{how}"
                         + (f" ({p.detail})" if p is not None and text is None else ""))
        return lines

    def _summary_title(self) -> str:
        return (f"calibration of {self.target} ({self.kind}), mechanical seek: "
                f"{'yes' if self.mechanical_seek else 'no'}, {self.device_time_s:.1f} s device time")

    def __repr__(self) -> str:
        return (f"<CalibrationResult {self.target} ({self.kind}): mechanical_seek={self.mechanical_seek}, "
                f"rotation_period_s={self.rotation_period_s}, {len(self.zones)} zones, "
                f"{self.device_time_s:.1f} s device time>")

    def _repr_html_(self) -> str:
        checks = "".join(
            f"<tr><td>{html.escape(v.name)}</td><td>{ {True: 'pass', False: 'FAIL', None: 'n/a'}[v.passed]}</td>"
            f"<td>{html.escape(v.detail)}</td></tr>" for v in self.checks)
        return (super()._repr_html_()
                + f"<table><tr><th>check</th><th>verdict</th><th>detail</th></tr>{checks}</table>")

    def plot(self, ax=None, *, model: str | None = None, alpha: float = 0.05):
        """Seek samples (light), means per distance with standard errors, the fit
        and its confidence band, against byte distance (log axis). Returns the Axes."""
        from .calibration_views import plot_seek_calibration

        return plot_seek_calibration(self, ax, model=model, alpha=alpha)

    def plot_zones(self, ax=None):
        """Transfer rate against location, with the zones found. Returns the Axes."""
        from .calibration_views import plot_zone_calibration

        return plot_zone_calibration(self, ax)

    # dict ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The measurements and, for readers, the fits (JSON-safe). :meth:`from_dict` reads the
        measurements back and fits them again; the file format is diskmodel.calibrate.harness.results."""
        return json_safe({
            "model": self.model, "target": self.target, "kind": self.kind,
            "size_bytes": self.size_bytes, "block_size_bytes": self.block_size_bytes, "budget_s": self.budget_s,
            "rotation_period_s": self.rotation_period_s,
            "rotation_period_bse_s": self.rotation_period_bse_s,
            "rotation_period_samples_s": list(self.rotation_period_samples_s),
            "rotation_detail": self.rotation_detail,
            "overhead_s": self.overhead_s, "block_transfer_s": self.block_transfer_s,
            "mechanical_seek": self.mechanical_seek,
            "flat_test": self.flat_test.to_dict(),
            "seek_curve_table": self.seek_curve_table(),
            "seek_curve_spread": self.seek_curve_spread(),
            "seek_fit": self.seek_fit.to_dict(),
            "seek_fit_table": self.table.to_dict(),
            "latency_model": self.latency_model.to_dict() if self.latency_model is not None else None,
            "mean_random_seek_time_s": self.mean_random_seek_time_s() if self.mechanical_seek else None,
            "zones": [{"start_byte": a, "end_byte": b, "rate_bytes_per_s": r} for a, b, r in self.zones],
            "zone_samples": {"location_bytes": self.zone_locations_bytes,
                             "rate_bytes_per_s": self.zone_rates_bytes_per_s,
                             "read_length_bytes": self.zone_read_length_bytes, "detail": self.zone_detail},
            "seek_samples": {"from_bytes": self.seek_from_bytes, "to_bytes": self.seek_to_bytes,
                             "time_s": self.seek_time_s, "designed": self.seek_designed, "round": self.seek_round,
                             "design_distances_bytes": self.seek_distances_bytes,
                             "baseline_s": self.seek_baseline_s, "detail": self.seek_detail},
            "device_time_s": self.device_time_s, "wall_time_s": self.wall_time_s, "reads": self.reads,
            "checks": [v.to_dict() for v in self.checks],
            "head_switch_s": self.head_switch_s, "track_skew_fraction": self.track_skew_fraction,
            # only where measured: a file written before the figure was reads alike
            **({} if self.one_cylinder_seek_s is None else {"one_cylinder_seek_s": self.one_cylinder_seek_s}),
            "cylinder_skew_fraction": self.cylinder_skew_fraction, "surfaces": self.surfaces,
            "read_ahead": {"detected": self.read_ahead[0], "segment_bytes": self.read_ahead[1],
                           "segments": self.read_ahead[2]},
            "command_overhead_s": self.command_overhead_s,
            "write_cache": self.write_cache, "write_service_s": self.write_service_s,
            "detail": {p.name: p.to_dict() for p in self.parameter_status},
        })

    @classmethod
    def from_dict(cls, data: dict) -> "CalibrationResult":
        """Fit the measurements of a :meth:`to_dict` output again (deterministically; the
        derived keys are not read). A null standard error of the rotation period is NaN."""
        z, s = data["zone_samples"], data["seek_samples"]
        period, bse = data["rotation_period_s"], data["rotation_period_bse_s"]

        def nan_for_none(values):
            return [math.nan if v is None else v for v in values]

        return fit_calibration(CalibrationMeasurements(
            target=data["target"], kind=data["kind"], size_bytes=data["size_bytes"],
            block_size_bytes=data["block_size_bytes"], budget_s=data["budget_s"],
            rotation_period_s=period, rotation_period_bse_s=math.nan if period is not None and bse is None else bse,
            rotation_period_samples_s=nan_for_none(data["rotation_period_samples_s"]),
            overhead_s=data["overhead_s"], block_transfer_s=data["block_transfer_s"],
            rotation_detail=data["rotation_detail"],
            zone_locations_bytes=z["location_bytes"], zone_rates_bytes_per_s=nan_for_none(z["rate_bytes_per_s"]),
            zone_read_length_bytes=z["read_length_bytes"],
            zones=[(q["start_byte"], q["end_byte"], q["rate_bytes_per_s"]) for q in data["zones"]],
            zone_detail=z["detail"], seek_from_bytes=s["from_bytes"], seek_to_bytes=s["to_bytes"],
            seek_time_s=s["time_s"], seek_designed=s["designed"], seek_round=s["round"],
            seek_distances_bytes=s["design_distances_bytes"], seek_detail=s["detail"],
            checks=[Verdict(c["name"], c["passed"], c["detail"]) for c in data["checks"]],
            device_time_s=data["device_time_s"], wall_time_s=data["wall_time_s"], reads=data["reads"],
            **_drive_figures(data)))
