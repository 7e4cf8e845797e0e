"""The result of a calibration: measurements, fits with uncertainty, verdicts.

:class:`CalibrationResult` keeps every seek sample, the rotation and zone
measurements and the checks; on construction it derives the seek curve
(the time of each read less the mean rotational wait, half a period, and the
minimum per-request overhead with a block's transfer), drops outliers, tests
whether latency is flat against distance, and fits: the two-piece curve and
the measured table where there is a mechanical seek, a flat latency model
where there is none. It offers ``params``, ``bse``, ``conf_int()``,
``summary()``, ``plot(ax=None)``, ``plot_zones(ax=None)``, ``_repr_html_``,
``to_json()``/``from_json()``, and :meth:`CalibrationResult.to_disk` to
predict with :mod:`diskmodel.model`.
"""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from diskmodel.calibrate.harness.checks import Verdict
from diskmodel.calibrate.harness.fit import (FlatLatencyModel, FlatTest, TableFit, TwoPieceFit, fit_flat_latency, fit_table,
                  fit_two_piece, test_flat)

__all__ = ["CalibrationResult", "CalibrationFileError", "JSON_FORMAT", "FORMAT_VERSION", "SCHEMA",
           "validate_calibration_dict"]

# The "format" marker and "format_version" of the JSON that to_json writes.
JSON_FORMAT = "diskmodel.calibration"
FORMAT_VERSION = 1
# Versions this diskmodel reads.
KNOWN_FORMAT_VERSIONS = (1,)
# Markers of earlier diskmodel versions (no "format_version" key): read as version 1
# when they otherwise validate (the keys and their meaning did not change).
LEGACY_FORMATS = {"diskmodel-calibration/1": 1}
# A calibration file larger than this is refused unread.
MAX_FILE_BYTES = 1 << 30


class CalibrationFileError(ValueError):
    """A calibration JSON that cannot be used: the message names the file (``source``) and the key.

    E.g. ``calibration.json: key 'size_bytes' must be a positive integer (got -1)``.
    """

    def __init__(self, source: str, message: str, key: str | None = None):
        super().__init__(f"{source}: {message}")
        self.source = source
        self.key = key


# The declared schema of a calibration JSON (format_version 1): key -> (type, constraint).
#
# type: "int", "number" (int or float, finite, never a bool), "str", "bool",
#   "object", "list", with "|null" where null is allowed; "list[T]": a list of T.
# constraint: None, "> 0", ">= 0" (of a number, or of each number in a list),
#   "non-empty" (a list), a nested schema (a dict: the keys of an object, or of
#   each object in a list), or a tuple of these.
# Cross-key rules (validate_calibration_dict): block_size_bytes divides
# size_bytes; the zones cover [0, size_bytes) in order, back to back; sample
# offsets lie in [0, size_bytes); the seek sample lists have one length, as do
# the zone sample lists; a rotation period needs overhead_s.
_CHECK_SCHEMA = {"name": ("str", None), "passed": ("bool|null", None), "detail": ("str", None)}
_ZONE_SCHEMA = {"start_byte": ("int", ">= 0"), "end_byte": ("int", "> 0"), "rate_bytes_per_s": ("number", "> 0")}
_ZONE_SAMPLES_SCHEMA = {
    "location_bytes": ("list[int]", (">= 0", "non-empty")),
    "rate_bytes_per_s": ("list[number|null]", "non-empty"),
    "read_length_bytes": ("int", "> 0"),
    "detail": ("str", None),
}
_SEEK_SAMPLES_SCHEMA = {
    "from_bytes": ("list[int]", (">= 0", "non-empty")),
    "to_bytes": ("list[int]", (">= 0", "non-empty")),
    "time_s": ("list[number]", (">= 0", "non-empty")),
    "designed": ("list[bool]", "non-empty"),
    "round": ("list[int]", (">= 0", "non-empty")),
    "design_distances_bytes": ("list[int]", (">= 0", "non-empty")),
    "baseline_s": ("number|null", None),
    "detail": ("str", None),
}
_FLAT_TEST_SCHEMA = {"flat": ("bool", None), "detail": ("str", None), "slope_pvalue": ("number|null", None),
                     "rise_s": ("number|null", None)}
SCHEMA: dict[str, tuple] = {
    "format": ("str", None),
    "format_version": ("int", "> 0"),
    "target": ("str", None),
    "kind": ("str", None),
    "size_bytes": ("int", "> 0"),
    "block_size_bytes": ("int", "> 0"),
    "budget_s": ("number", "> 0"),
    "rotation_period_s": ("number|null", "> 0"),
    "rotation_period_bse_s": ("number|null", ">= 0"),
    "rotation_period_samples_s": ("list[number|null]", None),
    "rotation_detail": ("str", None),
    "overhead_s": ("number|null", ">= 0"),
    "block_transfer_s": ("number|null", ">= 0"),
    "mechanical_seek": ("bool", None),
    "flat_test": ("object", _FLAT_TEST_SCHEMA),
    "seek_curve_table": ("list[list]", None),
    "seek_curve_spread": ("list[object]", None),
    "seek_fit": ("object", None),
    "seek_fit_table": ("object", None),
    "latency_model": ("object|null", None),
    "mean_random_seek_time_s": ("number|null", ">= 0"),
    "zones": ("list[object]", ("non-empty", _ZONE_SCHEMA)),
    "zone_samples": ("object", _ZONE_SAMPLES_SCHEMA),
    "seek_samples": ("object", _SEEK_SAMPLES_SCHEMA),
    "device_time_s": ("number", ">= 0"),
    "wall_time_s": ("number", ">= 0"),
    "reads": ("int", ">= 0"),
    "checks": ("list[object]", _CHECK_SCHEMA),
}
# Keys to_dict writes for readers that from_dict recomputes from the samples:
# type-checked where present, not required.
DERIVED_KEYS = frozenset({"mechanical_seek", "flat_test", "seek_curve_table", "seek_curve_spread", "seek_fit",
                          "seek_fit_table", "latency_model", "mean_random_seek_time_s"})
# Keys of nested objects that are derived likewise.
_DERIVED_NESTED = {"seek_samples": frozenset({"baseline_s"})}


def _shown(value) -> str:
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    if isinstance(value, str):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _wanted(type_: str, constraints: tuple) -> str:
    """How a type and constraint read in a message: 'a positive integer', 'a number >= 0 or null', ..."""
    nullable = type_.endswith("|null")
    base = type_.removesuffix("|null")
    sign = next((c for c in constraints if c in ("> 0", ">= 0")), None)
    if base == "int":
        text = {"> 0": "a positive integer", ">= 0": "an integer >= 0", None: "an integer"}[sign]
    elif base == "number":
        text = {"> 0": "a number > 0", ">= 0": "a number >= 0", None: "a finite number"}[sign]
    elif base == "str":
        text = "a string"
    elif base == "bool":
        text = "true or false"
    elif base == "object":
        text = "an object"
    elif base.startswith("list"):
        text = "a non-empty list" if "non-empty" in constraints else "a list"
        if base != "list":
            text += " of " + _plural(base[5:-1], constraints)
    else:  # pragma: no cover - the schema uses the types above only
        text = base
    return text + (" or null" if nullable else "")


def _plural(type_: str, constraints: tuple) -> str:
    """The elements of a list in a message: 'integers >= 0', 'finite numbers or nulls', 'objects'."""
    nullable = type_.endswith("|null")
    base = type_.removesuffix("|null")
    sign = next((c for c in constraints if c in ("> 0", ">= 0")), None)
    if base == "int":
        text = {"> 0": "positive integers", ">= 0": "integers >= 0", None: "integers"}[sign]
    elif base == "number":
        text = {"> 0": "numbers > 0", ">= 0": "numbers >= 0", None: "finite numbers"}[sign]
    else:
        text = {"str": "strings", "bool": "true or false values", "object": "objects", "list": "lists"}[base]
    return text + (" or nulls" if nullable else "")


def _type_ok(base: str, value) -> bool:
    if base == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if base == "number":
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and (isinstance(value, int) or math.isfinite(value)))
    if base == "str":
        return isinstance(value, str)
    if base == "bool":
        return isinstance(value, bool)
    if base == "object":
        return isinstance(value, dict)
    if base == "list":
        return isinstance(value, list)
    raise AssertionError(base)  # pragma: no cover


def _check_value(source: str, key: str, value, type_: str, constraint) -> None:
    constraints = constraint if isinstance(constraint, tuple) else (constraint,)
    nested = next((c for c in constraints if isinstance(c, dict)), None)
    words = tuple(c for c in constraints if isinstance(c, str))

    def fail(where: str, got) -> None:
        raise CalibrationFileError(source, f"key '{where}' must be {_wanted(type_, words)} (got {_shown(got)})", where)

    if value is None:
        if type_.endswith("|null"):
            return
        fail(key, value)
    base = type_.removesuffix("|null")
    if base.startswith("list"):
        if not isinstance(value, list):
            fail(key, value)
        if "non-empty" in words and not value:
            fail(key, value)
        if base == "list":
            return
        inner = base[5:-1]
        inner_base = inner.removesuffix("|null")
        for i, item in enumerate(value):
            where = f"{key}[{i}]"
            if item is None and inner.endswith("|null"):
                continue
            if item is None or not _type_ok(inner_base, item) or not _sign_ok(item, words):
                raise CalibrationFileError(
                    source, f"key '{where}' must be {_wanted(inner, words)} (got {_shown(item)})", where)
            if nested is not None:
                _check_object(source, where, item, nested)
        return
    if not _type_ok(base, value) or not _sign_ok(value, words):
        fail(key, value)
    if nested is not None:
        _check_object(source, key, value, nested)


def _sign_ok(value, words) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return True
    if "> 0" in words:
        return value > 0
    if ">= 0" in words:
        return value >= 0
    return True


def _check_object(source: str, prefix: str, data: dict, schema: dict, derived=frozenset()) -> None:
    for key, (type_, constraint) in schema.items():
        where = f"{prefix}.{key}" if prefix else key
        if key not in data:
            if key in derived or key in _DERIVED_NESTED.get(prefix, ()):
                continue
            raise CalibrationFileError(source, f"key '{where}' is missing", where)
        _check_value(source, where, data[key], type_, constraint)


def validate_calibration_dict(data, source: str = "calibration") -> int:
    """Check *data* (parsed calibration JSON) against :data:`SCHEMA` and the cross-key rules.

    Returns the format version. Raises :class:`CalibrationFileError` naming
    *source* and the first key at fault. Files of an earlier diskmodel (format
    ``diskmodel-calibration/1``, no ``format_version``) are read as version 1.
    """
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(data), "a number" if isinstance(data, (int, float)) else type(data).__name__)
        raise CalibrationFileError(source, f"must hold one JSON object (a diskmodel calibration result), "
                                           f"not {kind}")
    marker = data.get("format")
    if marker == JSON_FORMAT:
        if "format_version" not in data:
            raise CalibrationFileError(source, "key 'format_version' is missing", "format_version")
        version = data["format_version"]
        if isinstance(version, bool) or not isinstance(version, int):
            raise CalibrationFileError(source, f"key 'format_version' must be a positive integer "
                                               f"(got {_shown(version)})", "format_version")
        if version not in KNOWN_FORMAT_VERSIONS:
            raise CalibrationFileError(source, f"format_version {version} is not one this diskmodel reads "
                                               f"({', '.join(map(str, KNOWN_FORMAT_VERSIONS))}); use a newer "
                                               f"diskmodel, or calibrate again", "format_version")
        schema = SCHEMA
    elif isinstance(marker, str) and marker in LEGACY_FORMATS:
        version = LEGACY_FORMATS[marker]
        schema = {k: v for k, v in SCHEMA.items() if k != "format_version"}
    else:
        what = "no 'format' key" if "format" not in data else f"key 'format' is {_shown(marker)}"
        raise CalibrationFileError(source, f"not a diskmodel calibration result ({what}; expected "
                                           f"{JSON_FORMAT!r}, as `diskmodel calibrate --json` writes)", "format")
    _check_object(source, "", data, schema, derived=DERIVED_KEYS)

    def bad(key: str, message: str):
        raise CalibrationFileError(source, f"key '{key}' {message}", key)

    size, block = data["size_bytes"], data["block_size_bytes"]
    if size % block:
        bad("block_size_bytes", f"must divide size_bytes={size} (got {block})")
    if data["rotation_period_s"] is not None and data["overhead_s"] is None:
        bad("overhead_s", "must be a number >= 0 where rotation_period_s is given (got null)")
    zones = data["zones"]
    if zones[0]["start_byte"] != 0:
        bad("zones[0].start_byte", f"must be 0: the zones cover the device from its start "
                                   f"(got {zones[0]['start_byte']})")
    for i, z in enumerate(zones):
        if z["end_byte"] <= z["start_byte"]:
            bad(f"zones[{i}].end_byte", f"must exceed start_byte={z['start_byte']} (got {z['end_byte']})")
        if i and z["start_byte"] != zones[i - 1]["end_byte"]:
            bad(f"zones[{i}].start_byte", f"must equal the end_byte of zones[{i - 1}], "
                                          f"{zones[i - 1]['end_byte']} (got {z['start_byte']})")
    if zones[-1]["end_byte"] != size:
        bad(f"zones[{len(zones) - 1}].end_byte", f"must be size_bytes={size}: the zones cover the device to its end "
                                                 f"(got {zones[-1]['end_byte']})")
    zs = data["zone_samples"]
    if len(zs["rate_bytes_per_s"]) != len(zs["location_bytes"]):
        bad("zone_samples.rate_bytes_per_s", f"must have one entry per location ({len(zs['location_bytes'])}) "
                                             f"(got {len(zs['rate_bytes_per_s'])})")
    for i, loc in enumerate(zs["location_bytes"]):
        if loc >= size:
            bad(f"zone_samples.location_bytes[{i}]", f"must lie in [0, size_bytes={size}) (got {loc})")
    ss = data["seek_samples"]
    n = len(ss["from_bytes"])
    for key in ("to_bytes", "time_s", "designed", "round"):
        if len(ss[key]) != n:
            bad(f"seek_samples.{key}", f"must have one entry per read, as from_bytes ({n}) (got {len(ss[key])})")
    for key in ("from_bytes", "to_bytes"):
        for i, offset in enumerate(ss[key]):
            if offset >= size:
                bad(f"seek_samples.{key}[{i}]", f"must lie in [0, size_bytes={size}) (got {offset})")
    if not any(a != b for a, b in zip(ss["from_bytes"], ss["to_bytes"])):
        bad("seek_samples", "holds no read that moved the head (every to_bytes equals its from_bytes)")
    return version


def _finite(value):
    """JSON-safe: NaN and inf (e.g. an undefined standard error) become None."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _arr(values, dtype=float) -> np.ndarray:
    return np.asarray(values, dtype=dtype).reshape(-1)


@dataclass(eq=False)
class CalibrationResult:
    """A calibration's measurements, fits and verdicts (see the module doc).

    Units: bytes and seconds. ``seek_*`` arrays hold one entry per read of
    the seek stage (where the head came from, where it went, the read time,
    whether its distance was a design distance, its round).
    """

    target: str
    kind: str
    size_bytes: int
    block_size_bytes: int
    budget_s: float
    rotation_period_s: float | None
    rotation_period_bse_s: float | None
    rotation_period_samples_s: list
    overhead_s: float | None
    block_transfer_s: float | None
    rotation_detail: str
    zone_locations_bytes: np.ndarray
    zone_rates_bytes_per_s: np.ndarray
    zone_read_length_bytes: int
    zones: list
    zone_detail: str
    seek_from_bytes: np.ndarray
    seek_to_bytes: np.ndarray
    seek_time_s: np.ndarray
    seek_designed: np.ndarray
    seek_round: np.ndarray
    seek_distances_bytes: np.ndarray
    seek_detail: str
    checks: list = field(default_factory=list)
    device_time_s: float = 0.0
    wall_time_s: float = 0.0
    reads: int = 0

    # derived ---------------------------------------------------------------
    def __post_init__(self):
        self.zone_locations_bytes = _arr(self.zone_locations_bytes, np.int64)
        self.zone_rates_bytes_per_s = _arr(self.zone_rates_bytes_per_s)
        self.zones = [(int(a), int(b), float(r)) for a, b, r in self.zones]
        self.seek_from_bytes = _arr(self.seek_from_bytes, np.int64)
        self.seek_to_bytes = _arr(self.seek_to_bytes, np.int64)
        self.seek_time_s = _arr(self.seek_time_s)
        self.seek_designed = _arr(self.seek_designed, bool)
        self.seek_round = _arr(self.seek_round, np.int64)
        self.seek_distances_bytes = _arr(self.seek_distances_bytes, np.int64)
        distance = self.seek_distance_bytes
        moved = distance > 0
        d = self.seek_distances_bytes.astype(float)
        self._bins = np.concatenate(([0.0], np.sqrt(d[:-1] * d[1:]), [2.0 * self.size_bytes]))
        bin_of = np.searchsorted(self._bins, distance, side="right") - 1
        if self.rotation_period_s is not None:
            # the floor of a one-block read and the mean rotational wait (eq. 8)
            self.seek_baseline_s = float(self.overhead_s + self.rotation_period_s / 2)
        else:
            # no rotation: latency in excess of the median latency at the shortest distances
            first = moved & (bin_of == bin_of[moved].min())
            self.seek_baseline_s = float(np.median(self.seek_time_s[first]))
        seek = self.seek_time_s - self.seek_baseline_s
        keep = moved.copy()
        for k in np.unique(bin_of[moved]):
            m = moved & (bin_of == k)
            q1, q3 = np.percentile(seek[m], [25, 75])
            keep &= ~(m & (seek > q3 + 3 * (q3 - q1)))
        self.seek_kept = keep
        self.flat_test: FlatTest = test_flat(distance[keep], self.seek_time_s[keep])
        self.mechanical_seek = bool(self.rotation_period_s is not None and not self.flat_test.flat)
        self.table: TableFit = fit_table(distance[keep], seek[keep], bins=self._bins)
        self.two_piece: TwoPieceFit | None = None
        self.latency_model: FlatLatencyModel | None = None
        self.two_piece_error: str | None = None
        if self.mechanical_seek:
            # The two-piece curve is fitted against the distance in tracks, the
            # physical coordinate of a seek: a track holds rate * T_rot bytes, so
            # outer zones hold more bytes per track than inner ones.
            tracks = np.abs(self.track_of_bytes(self.seek_to_bytes) - self.track_of_bytes(self.seek_from_bytes))
            ok = keep & (tracks > 0)
            try:
                self.two_piece = fit_two_piece(tracks[ok], seek[ok], method="rlm", distance_unit="tracks")
            except ValueError as exc:
                self.two_piece_error = str(exc)
        else:
            rates = self.zone_rates_bytes_per_s
            good = np.isfinite(rates) & (rates > 0)
            per_byte = float(np.median(1.0 / rates[good])) if good.any() else float("nan")
            self.latency_model = fit_flat_latency(self.seek_time_s[keep], per_byte)

    def track_of_bytes(self, offset_bytes) -> np.ndarray:
        """Position in tracks of byte offsets [tracks]: the bytes before each offset
        divided by the bytes of a track (rate * T_rot) of the zones they lie in."""
        if self.rotation_period_s is None:
            raise ValueError("there is no rotation period, hence no tracks, on this device")
        starts = np.array([z[0] for z in self.zones] + [self.zones[-1][1]], dtype=float)
        per_track = np.array([z[2] for z in self.zones]) * self.rotation_period_s
        knots = np.concatenate(([0.0], np.cumsum(np.diff(starts) / per_track)))
        return np.interp(np.asarray(offset_bytes, dtype=float), starts, knots)

    @property
    def mean_bytes_per_track(self) -> float:
        return float(self.size_bytes / self.track_of_bytes(self.size_bytes))

    @property
    def seek_distance_bytes(self) -> np.ndarray:
        return np.abs(self.seek_to_bytes - self.seek_from_bytes)

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
        """Is a mechanical seek present, and is the result consistent about it?"""
        flat = self.flat_test
        if self.mechanical_seek:
            return Verdict("plausibility", True, f"mechanical seek present: rotation period "
                                                 f"{self.rotation_period_s * 1e3:.4f} ms; {flat.detail}")
        if self.rotation_period_s is None and flat.flat:
            return Verdict("plausibility", True,
                           "no mechanical seek curve: no rotation and latency flat against distance "
                           f"({flat.detail}); a flat latency model is given, not a two-piece fit")
        why = ("a rotation period but latency flat against distance" if flat.flat
               else "latency grows with distance but no rotation was found")
        return Verdict("plausibility", False, f"inconsistent: {why} ({flat.detail}); no two-piece fit is given")

    # statsmodels-like ------------------------------------------------------
    @property
    def params(self) -> pd.Series:
        """Rotation period, overhead and the seek model's parameters [s, bytes]."""
        values = {"rotation_period_s": self.rotation_period_s, "overhead_s": self.overhead_s}
        fit = self.seek_fit
        if isinstance(fit, TwoPieceFit):
            values.update({f"seek_{k}": float(v) for k, v in fit.params.items()})
        elif isinstance(fit, FlatLatencyModel):
            values.update({"latency_s": fit.mean_s, "per_byte_s": fit.per_byte_s})
        return pd.Series(values, dtype=float)

    @property
    def bse(self) -> pd.Series:
        values = {"rotation_period_s": self.rotation_period_bse_s, "overhead_s": None}
        fit = self.seek_fit
        if isinstance(fit, TwoPieceFit):
            values.update({f"seek_{k}": float(v) for k, v in fit.bse.items()})
        elif isinstance(fit, FlatLatencyModel):
            values.update({"latency_s": fit.std_s / math.sqrt(max(fit.n, 1)), "per_byte_s": None})
        return pd.Series(values, dtype=float)

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Normal-approximation intervals from ``params`` and ``bse`` (the seek
        coefficients from the fitted pieces' own intervals)."""
        from scipy.stats import norm

        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1) (got {alpha!r})")
        z = norm.ppf(1 - alpha / 2)
        p, s = self.params, self.bse
        out = pd.DataFrame({"lower": p - z * s, "upper": p + z * s})
        if isinstance(self.seek_fit, TwoPieceFit):
            ci = self.seek_fit.conf_int(alpha)
            for name in ci.index:
                out.loc[f"seek_{name}"] = ci.loc[name].values
        return out

    # derived quantities --------------------------------------------------------
    def seek_time_at_s(self, distance_bytes, model: str | None = None) -> np.ndarray:
        """Seek time [s] at byte distances from the chosen (or named) model (the
        two-piece curve, fitted in tracks, at the mean bytes per track)."""
        fit = self._model(model)
        d = np.asarray(distance_bytes, dtype=float)
        if isinstance(fit, FlatLatencyModel):
            return np.zeros_like(d)
        if isinstance(fit, TwoPieceFit):
            d = d / self.mean_bytes_per_track
        return np.maximum(fit.predict(d), 0.0)

    def seek_time_between_s(self, from_bytes, to_bytes, model: str | None = None) -> np.ndarray:
        """Seek time [s] between byte offsets (the two-piece curve at their distance in tracks)."""
        fit = self._model(model)
        a = np.asarray(from_bytes, dtype=float)
        b = np.asarray(to_bytes, dtype=float)
        if isinstance(fit, FlatLatencyModel):
            return np.zeros(np.broadcast(a, b).shape)
        if isinstance(fit, TwoPieceFit):
            return np.maximum(fit.predict(np.abs(self.track_of_bytes(b) - self.track_of_bytes(a))), 0.0)
        return np.maximum(fit.predict(np.abs(b - a)), 0.0)

    def _model(self, model):
        if model is None:
            return self.seek_fit
        if model == "two_piece":
            if self.two_piece is None:
                raise ValueError("model='two_piece': there is no two-piece fit "
                                 + ("(no mechanical seek)" if not self.mechanical_seek else f"({self.two_piece_error})"))
            return self.two_piece
        if model == "table":
            return self.table
        raise ValueError(f"model must be 'two_piece', 'table' or None (got {model!r})")

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
        """A :class:`diskmodel.model.Disk` for prediction: rpm from the rotation
        period, zones from the measured rates, the fitted seek, the overhead.

        The geometry is a stand-in: one surface, each zone's sectors per track
        from its rate (``rate * T_rot / sector``) and as many tracks ("cylinders")
        as fill its bytes. The two-piece curve is fitted in tracks already; the
        table (against bytes) is rescaled by the mean bytes per track. Raises ValueError where the
        device shows no mechanical seek (use ``latency_model``).
        """
        from diskmodel.model import Disk, Geometry, Zone

        knee_note = None
        if seek == "flat":
            from diskmodel.model.disk import flat_latency_disk

            model = self.latency_model
            if model is None:
                raise ValueError("seek='flat': the calibration found a mechanical seek; use seek='two_piece' or 'table'")
            return flat_latency_disk(
                model.mean_s, 1.0 / model.per_byte_s, int(self.size_bytes), block_bytes=self.block_size_bytes,
                name=name or f"calibrated {self.target}",
                provenance=f"flat latency model calibrated by diskmodel from {self.target}: mean "
                           f"{model.mean_s * 1e6:.1f} us per {self.block_size_bytes}-byte read, "
                           f"{1e-6 / model.per_byte_s:.0f} MB/s")
        if not self.mechanical_seek or self.rotation_period_s is None:
            raise ValueError("no mechanical seek was found on this device: a Disk (rotation, seek curve) "
                             "would be meaningless; use to_disk(seek='flat') for its flat latency model")
        period = self.rotation_period_s
        sector = 512 if self.block_size_bytes % 512 == 0 else self.block_size_bytes
        zones, first = [], 0
        for start, end, rate in self.zones:
            spt = max(1, int(round(rate * period / sector)))
            tracks = max(1, int(round((end - start) / (spt * sector))))
            zones.append(Zone(first, first + tracks - 1, spt))
            first += tracks
        geometry = Geometry(1, tuple(zones), sector)
        scale = self.size_bytes / geometry.cylinders
        if seek == "two_piece":
            if self.two_piece is None:
                raise ValueError(f"seek='two_piece': there is no two-piece fit ({self.two_piece_error})")
            model = self.two_piece.as_seek(1.0)  # fitted in tracks, the stand-in's cylinders
            if model.knee_cylinders >= geometry.cylinders:
                # every distance the disk has is a short seek: the same curve with the knee on the
                # last track (d <= knee takes a + b*sqrt(d)); said in the disk's estimates
                knee_note = (f"the two-piece knee was fitted at {model.knee_cylinders:.6g} tracks, beyond the "
                             f"stand-in's {geometry.cylinders} tracks: a + b*sqrt(d) covers every distance, "
                             f"and the knee is put on the last track")
                model = model.evolve(knee_cylinders=geometry.cylinders - 1)
        elif seek == "table":
            model = self.table.as_seek(scale, reach=geometry.cylinders - 1)
        else:
            raise ValueError(f"seek must be 'two_piece', 'table' or 'flat' (got {seek!r})")
        # overhead_s is the floor of a one-block read: the command overhead and the block's transfer.
        rates = np.array([z[2] for z in self.zones])
        overhead = max((self.overhead_s or 0.0) - self.block_size_bytes / float(np.median(rates)), 0.0)
        return Disk(name=name or f"calibrated {self.target}", geometry=geometry, seek=model,
                    rpm=60.0 / period, command_overhead_s=overhead,
                    provenance=f"calibrated by diskmodel from {self.target} ({self.kind}); "
                               f"{self.device_time_s:.1f} s of device time",
                    estimates=(("geometry", "one surface; tracks sized from the measured zone rates"),
                               ("seek", "two-piece fit against the distance in tracks" if seek == "two_piece" else
                                f"table against byte distance, rescaled by {scale:.0f} bytes per track"))
                    + ((("seek knee", knee_note),) if knee_note else ()))

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
        elif isinstance(fit, FlatLatencyModel):
            lines.append(f"flat latency model: mean {fit.mean_s * 1e6:.1f} us, p50 {fit.p50_s * 1e6:.1f} us, "
                         f"p90 {fit.p90_s * 1e6:.1f} us, p99 {fit.p99_s * 1e6:.1f} us, "
                         f"{1 / fit.per_byte_s / 1e6:.1f} MB/s transfer")
        else:
            lines.append(f"seek: measured table only ({self.two_piece_error})")
        rates = np.array([z[2] for z in self.zones])
        lines.append(f"zones: {len(self.zones)}, rates {rates.min() / 1e6:.2f}..{rates.max() / 1e6:.2f} MB/s "
                     f"({self.zone_detail})")
        lines.append("checks:")
        for v in self.checks:
            mark = {True: "PASS", False: "FAIL", None: "n/a "}[v.passed]
            lines.append(f"  [{mark}] {v.name}: {v.detail}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<CalibrationResult {self.target} ({self.kind}): mechanical_seek={self.mechanical_seek}, "
                f"rotation_period_s={self.rotation_period_s}, {len(self.zones)} zones, "
                f"{self.device_time_s:.1f} s device time>")

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{v:.6g}</td><td>{s:.3g}</td></tr>"
                       for (k, v), s in zip(self.params.items(), self.bse.fillna(np.nan)))
        checks = "".join(
            f"<tr><td>{html.escape(v.name)}</td><td>{ {True: 'pass', False: 'FAIL', None: 'n/a'}[v.passed]}</td>"
            f"<td>{html.escape(v.detail)}</td></tr>" for v in self.checks)
        return (f"<div><b>CalibrationResult</b> {html.escape(self.target)} ({html.escape(self.kind)}), "
                f"mechanical seek: <b>{'yes' if self.mechanical_seek else 'no'}</b>, "
                f"{self.device_time_s:.1f} s device time"
                f"<table><tr><th>param</th><th>value</th><th>se</th></tr>{rows}</table>"
                f"<table><tr><th>check</th><th>verdict</th><th>detail</th></tr>{checks}</table></div>")

    def plot(self, ax=None, *, model: str | None = None, alpha: float = 0.05):
        """Seek samples (light), means per distance with standard errors, the fit
        and its confidence band, against byte distance (log axis). Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        distance = self.seek_distance_bytes
        seek = self.seek_time_s - self.seek_baseline_s
        k = self.seek_kept
        ax.scatter(distance[k], seek[k] * 1e3, s=2, alpha=0.15, color="grey", label="pairs")
        t = self.table
        ax.errorbar(t.distance, t.mean_s * 1e3, yerr=t.std_s / np.sqrt(t.count) * 1e3, fmt="o", ms=3,
                    color="C0", label="mean per distance")
        grid = np.geomspace(max(distance[k].min(), 1), self.size_bytes, 300)
        fit = self._model(model)
        if isinstance(fit, TwoPieceFit):
            pred, lo, hi = fit.predict_band(grid / self.mean_bytes_per_track, alpha)
            ax.plot(grid, pred * 1e3, color="C1",
                    label=f"two-piece fit (knee {fit.params['knee']:.4g} tracks; at the mean track size)")
            ax.fill_between(grid, lo * 1e3, hi * 1e3, color="C1", alpha=0.3, label=f"{100 * (1 - alpha):g}% band")
        elif isinstance(fit, TableFit):
            ax.plot(grid, fit.predict(grid) * 1e3, color="C2", label="table")
        else:
            ax.axhline(0.0, color="C3", label=f"flat: latency {fit.mean_s * 1e6:.0f} us, no seek")
        ax.set_xscale("log")
        ax.set_xlabel("seek distance [bytes]")
        ax.set_ylabel("seek time [ms]")
        ax.set_title(f"{self.target}: seek curve" + ("" if self.mechanical_seek else " (no mechanical seek)"))
        ax.legend(fontsize="small")
        return ax

    def plot_zones(self, ax=None):
        """Transfer rate against location, with the zones found. Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        ax.plot(self.zone_locations_bytes / 1e9, self.zone_rates_bytes_per_s / 1e6, ".", label="measured")
        xs, ys = [], []
        for start, end, rate in self.zones:
            xs += [start / 1e9, end / 1e9]
            ys += [rate / 1e6, rate / 1e6]
        ax.plot(xs, ys, color="C1", label=f"{len(self.zones)} zones")
        ax.set_xlabel("location [GB]")
        ax.set_ylabel("transfer rate [MB/s]")
        ax.legend(fontsize="small")
        return ax

    # JSON --------------------------------------------------------------------
    def to_dict(self) -> dict:
        fit = self.seek_fit
        seek_fit = fit.to_dict()
        if isinstance(fit, TableFit):
            seek_fit["params"] = {}
            seek_fit["bse"] = {}
        return {
            "format": JSON_FORMAT, "format_version": FORMAT_VERSION,
            "target": self.target, "kind": self.kind,
            "size_bytes": self.size_bytes, "block_size_bytes": self.block_size_bytes, "budget_s": self.budget_s,
            "rotation_period_s": self.rotation_period_s,
            "rotation_period_bse_s": self.rotation_period_bse_s,
            "rotation_period_samples_s": list(self.rotation_period_samples_s),
            "rotation_detail": self.rotation_detail,
            "overhead_s": self.overhead_s, "block_transfer_s": self.block_transfer_s,
            "mechanical_seek": self.mechanical_seek,
            "flat_test": {"flat": self.flat_test.flat, "detail": self.flat_test.detail,
                          "slope_pvalue": self.flat_test.slope_pvalue, "rise_s": self.flat_test.rise_s},
            "seek_curve_table": self.seek_curve_table(),
            "seek_curve_spread": self.seek_curve_spread(),
            "seek_fit": seek_fit,
            "seek_fit_table": self.table.to_dict(),
            "latency_model": self.latency_model.to_dict() if self.latency_model is not None else None,
            "mean_random_seek_time_s": self.mean_random_seek_time_s() if self.mechanical_seek else None,
            "zones": [{"start_byte": a, "end_byte": b, "rate_bytes_per_s": r} for a, b, r in self.zones],
            "zone_samples": {"location_bytes": self.zone_locations_bytes.tolist(),
                             "rate_bytes_per_s": [None if not np.isfinite(r) else float(r)
                                                  for r in self.zone_rates_bytes_per_s],
                             "read_length_bytes": self.zone_read_length_bytes, "detail": self.zone_detail},
            "seek_samples": {"from_bytes": self.seek_from_bytes.tolist(), "to_bytes": self.seek_to_bytes.tolist(),
                             "time_s": self.seek_time_s.tolist(), "designed": self.seek_designed.tolist(),
                             "round": self.seek_round.tolist(),
                             "design_distances_bytes": self.seek_distances_bytes.tolist(),
                             "baseline_s": self.seek_baseline_s, "detail": self.seek_detail},
            "device_time_s": self.device_time_s, "wall_time_s": self.wall_time_s, "reads": self.reads,
            "checks": [v.to_dict() for v in self.checks],
        }

    def to_json(self, path: str | Path | None = None, indent: int | None = 1) -> str:
        """The result as JSON (and written to *path* if given); NaN and inf become null.

        A *path* is written atomically (a temporary file renamed over it), so a
        failure never leaves half a result; the command line checks the path
        first (:mod:`diskmodel.calibrate.harness.outputs`)."""
        text = json.dumps(_finite(self.to_dict()), indent=indent, allow_nan=False)
        if path is not None:
            from diskmodel.calibrate.harness.outputs import write_output_atomically

            write_output_atomically(path, text, kind="calibration", force=True, flag="path")
        return text

    @classmethod
    def from_json(cls, text_or_path) -> "CalibrationResult":
        """Rebuild a result from :meth:`to_json` output (a JSON string or a file path);
        the fits are recomputed from the samples (deterministically).

        The JSON is checked against :data:`SCHEMA` first: a file that is not a
        calibration result, lacks a key, or holds a value of the wrong type or
        sign raises :class:`CalibrationFileError` (a ``ValueError``) naming the
        file and the key. A path that cannot be read raises the ``OSError``."""
        import os
        import stat

        is_text = isinstance(text_or_path, str) and text_or_path.lstrip()[:1] in ("{", "[") \
            and not os.path.exists(text_or_path)
        if isinstance(text_or_path, (str, os.PathLike)) and not is_text:
            source = os.fspath(text_or_path)
            st = os.stat(source)
            if stat.S_ISDIR(st.st_mode):
                raise CalibrationFileError(source, "is a directory, not a calibration JSON file "
                                                   "(give the file `diskmodel calibrate --json` wrote)")
            if not stat.S_ISREG(st.st_mode):
                raise CalibrationFileError(source, "is not a regular file (a device, a FIFO or a socket); give "
                                                   "the JSON file `diskmodel calibrate --json` wrote")
            if st.st_size > MAX_FILE_BYTES:
                raise CalibrationFileError(source, f"is {st.st_size} bytes, too large for a calibration result")
            raw = Path(source).read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise CalibrationFileError(source, "is not a UTF-8 text file, hence not a calibration JSON") from None
        elif isinstance(text_or_path, str):
            source, text = "text_or_path (JSON text)", text_or_path
        else:
            raise TypeError(f"text_or_path must be JSON text or a path (got {type(text_or_path).__name__})")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            what = "is empty" if not text.strip() else (f"is not valid JSON ({exc.msg} at line {exc.lineno} "
                                                         f"column {exc.colno}; truncated?)")
            raise CalibrationFileError(source, what) from None
        except RecursionError:
            raise CalibrationFileError(source, "is not a calibration result (nested too deeply)") from None
        return cls.from_dict(data, source=source)

    @classmethod
    def from_dict(cls, data, *, source: str = "calibration") -> "CalibrationResult":
        """Rebuild a result from :meth:`to_dict` output, checked against :data:`SCHEMA`
        (see :func:`validate_calibration_dict`; errors name *source* and the key)."""
        validate_calibration_dict(data, source)
        z, s = data["zone_samples"], data["seek_samples"]
        period = data["rotation_period_s"]
        bse = data["rotation_period_bse_s"]
        if period is not None and bse is None:
            bse = math.nan  # an undefined standard error, written as null
        try:
            return cls(
                target=data["target"], kind=data["kind"], size_bytes=data["size_bytes"],
                block_size_bytes=data["block_size_bytes"], budget_s=data["budget_s"],
                rotation_period_s=period, rotation_period_bse_s=bse,
                rotation_period_samples_s=[math.nan if v is None else v for v in data["rotation_period_samples_s"]],
                overhead_s=data["overhead_s"],
                block_transfer_s=data["block_transfer_s"], rotation_detail=data["rotation_detail"],
                zone_locations_bytes=z["location_bytes"],
                zone_rates_bytes_per_s=[np.nan if r is None else r for r in z["rate_bytes_per_s"]],
                zone_read_length_bytes=z["read_length_bytes"],
                zones=[(q["start_byte"], q["end_byte"], q["rate_bytes_per_s"]) for q in data["zones"]],
                zone_detail=z["detail"], seek_from_bytes=s["from_bytes"], seek_to_bytes=s["to_bytes"],
                seek_time_s=s["time_s"], seek_designed=s["designed"], seek_round=s["round"],
                seek_distances_bytes=s["design_distances_bytes"], seek_detail=s["detail"],
                checks=[Verdict(c["name"], c["passed"], c["detail"]) for c in data["checks"]],
                device_time_s=data["device_time_s"], wall_time_s=data["wall_time_s"], reads=data["reads"])
        except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, FloatingPointError) as exc:
            # The schema holds, but the samples do not make a calibration (e.g. too few to fit).
            raise CalibrationFileError(source, f"the samples do not make a calibration ({exc})") from None
