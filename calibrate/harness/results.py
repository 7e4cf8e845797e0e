"""The calibration file: its JSON format, declared schema, validation, reading and writing.

A calibration result (:class:`diskmodel.model.fit.CalibrationResult`, made by
:func:`diskmodel.model.fit.fit_calibration`) is written as one JSON object:
the ``format`` marker and ``format_version``, then the keys of
:meth:`CalibrationResult.to_dict` (measurements, and derived keys for
readers), checked against :data:`SCHEMA` when read. Reading fits the
measurements again (deterministically): the derived keys are never trusted.

Versions: 3 (written now), 2 and 1 (read). Version 3 adds the drive's
figures: ``head_switch_s``, ``track_skew_fraction`` and
``cylinder_skew_fraction`` (of a revolution), ``surfaces``, ``read_ahead``
(``{"detected", "segment_bytes", "segments"}``), ``command_overhead_s``,
``write_cache`` and ``write_service_s`` (null unless the calibration wrote), each
null where the timing does not show it, and ``detail``: for each figure and
the rotation period, ``{"status": "measured" | "estimated" | "not visible",
"detail": why}``. A file of version 1 or 2 reads with those figures not
visible (and says so). Versions 1 and 2 hold the same measurements;
version 2 adds the key ``model`` ("calibration", as every fit result's
``to_dict()`` names its class), and its derived fit objects (``seek_fit``,
``seek_fit_table``, ``latency_model``, ``flat_test``) are the fit results'
``to_dict()``, whose two-piece parameters carry TwoPieceSeek's names
(``long_per_cylinder_s``, ``knee_cylinders``; version 1 wrote
``long_slope_s``, ``knee``). Files of an earlier diskmodel with the marker
``diskmodel-calibration/1`` and no ``format_version`` read as version 1.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from diskmodel.calibrate.harness import outputs
from diskmodel.calibrate.harness.outputs import parse_input_json, read_input_bytes
from diskmodel.model.fit import CalibrationResult

__all__ = ["CalibrationFileError", "JSON_FORMAT", "FORMAT_VERSION", "SCHEMA", "SCHEMA_V3", "validate_calibration_dict",
           "calibration_to_dict", "calibration_to_json", "calibration_from_dict", "calibration_from_json"]

# The "format" marker and "format_version" of the JSON that calibration_to_json writes.
JSON_FORMAT = outputs.format_marker("calibration")
FORMAT_VERSION = outputs.FORMAT_VERSIONS["calibration"]
# Versions this diskmodel reads.
KNOWN_FORMAT_VERSIONS = (1, 2, 3)
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


# The declared schema of a calibration JSON (format_version 3; 1 and 2 lack SCHEMA_V3's keys):
# key -> (type, constraint).
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
    "model": ("str", None),
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
# The keys version 3 adds (required there; absent from versions 1 and 2).
_READ_AHEAD_SCHEMA = {"detected": ("bool|null", None), "segment_bytes": ("int|null", "> 0"),
                      "segments": ("int|null", "> 0")}
SCHEMA_V3: dict[str, tuple] = {
    "head_switch_s": ("number|null", ">= 0"),
    "track_skew_fraction": ("number|null", ">= 0"),
    "cylinder_skew_fraction": ("number|null", ">= 0"),
    "surfaces": ("int|null", "> 0"),
    "read_ahead": ("object", _READ_AHEAD_SCHEMA),
    "command_overhead_s": ("number|null", ">= 0"),
    "write_cache": ("bool|null", None),
    "write_service_s": ("number|null", ">= 0"),
    "detail": ("object", None),
}
_STATUS_SCHEMA = {"status": ("str", None), "detail": ("str", None)}
SCHEMA.update(SCHEMA_V3)  # the current version's keys: all of them
# Keys to_dict writes for readers that reading recomputes from the samples:
# type-checked where present, not required.
DERIVED_KEYS = frozenset({"model", "mechanical_seek", "flat_test", "seek_curve_table", "seek_curve_spread",
                          "seek_fit", "seek_fit_table", "latency_model", "mean_random_seek_time_s"})
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


_NUMBER_WORDS = {  # (singular, plural) by base type and sign
    "int": {"> 0": ("a positive integer", "positive integers"), ">= 0": ("an integer >= 0", "integers >= 0"),
            None: ("an integer", "integers")},
    "number": {"> 0": ("a number > 0", "numbers > 0"), ">= 0": ("a number >= 0", "numbers >= 0"),
               None: ("a finite number", "finite numbers")},
}
_OTHER_WORDS = {"str": ("a string", "strings"), "bool": ("true or false", "true or false values"),
                "object": ("an object", "objects"), "list": ("a list", "lists")}


def _wanted(type_: str, constraints: tuple, plural: bool = False) -> str:
    """How a type and constraint read in a message: 'a positive integer', 'a number >= 0 or null',
    'a non-empty list of integers >= 0', or with *plural* the elements of a list: 'finite numbers or nulls'."""
    nullable = type_.endswith("|null")
    base = type_.removesuffix("|null")
    sign = next((c for c in constraints if c in ("> 0", ">= 0")), None)
    if base in _NUMBER_WORDS:
        text = _NUMBER_WORDS[base][sign][plural]
    elif base.startswith("list[") and not plural:
        text = ("a non-empty list" if "non-empty" in constraints else "a list") + " of " + \
            _wanted(base[5:-1], constraints, plural=True)
    elif base == "list" and not plural and "non-empty" in constraints:
        text = "a non-empty list"
    else:
        text = _OTHER_WORDS[base][plural]
    return text + ((" or nulls" if plural else " or null") if nullable else "")


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
    if version < 3:
        schema = {k: v for k, v in schema.items() if k not in SCHEMA_V3}
    _check_object(source, "", data, schema, derived=DERIVED_KEYS)
    if version >= 3:
        for name, entry in data["detail"].items():
            _check_value(source, f"detail.{name}", entry, "object", _STATUS_SCHEMA)
            if entry["status"] not in ("measured", "estimated", "not visible"):
                raise CalibrationFileError(source, f"key 'detail.{name}.status' must be 'measured', 'estimated' "
                                                   f"or 'not visible' (got {_shown(entry['status'])})",
                                           f"detail.{name}.status")

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



def calibration_to_dict(result: CalibrationResult) -> dict:
    """The JSON object of a calibration file: the format marker and version, then ``result.to_dict()``."""
    return outputs.mark(result.to_dict(), "calibration")


def calibration_to_json(result: CalibrationResult, path: str | Path | None = None, indent: int | None = 1) -> str:
    """The calibration file's text (and written to *path* if given); NaN and inf are null.

    A *path* is written atomically (a temporary file renamed over it), so a
    failure never leaves half a result; the command line checks the path
    first (:mod:`diskmodel.calibrate.harness.outputs`)."""
    text = json.dumps(calibration_to_dict(result), indent=indent, allow_nan=False)
    if path is not None:
        outputs.write_output_atomically(path, text, kind="calibration", force=True, flag="path")
    return text


def calibration_from_dict(data, *, source: str = "calibration") -> CalibrationResult:
    """The result a parsed calibration file holds, its measurements fitted again.

    Checked against :data:`SCHEMA` first (:func:`validate_calibration_dict`; errors
    name *source* and the key); samples that do not make a calibration (e.g. too
    few to fit) raise :class:`CalibrationFileError` too."""
    validate_calibration_dict(data, source)
    try:
        return CalibrationResult.from_dict(data)
    except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, FloatingPointError) as exc:
        # The schema holds, but the samples do not make a calibration (e.g. too few to fit).
        raise CalibrationFileError(source, f"the samples do not make a calibration ({exc})") from None


def calibration_from_json(text_or_path) -> CalibrationResult:
    """The result in a calibration file (a path) or its text (JSON).

    A file that is not a calibration result, lacks a key, or holds a value of
    the wrong type or sign raises :class:`CalibrationFileError` (a
    ``ValueError``) naming the file and the key. A path that cannot be read
    raises the ``OSError``."""
    is_text = isinstance(text_or_path, str) and text_or_path.lstrip()[:1] in ("{", "[") \
        and not os.path.exists(text_or_path)
    if isinstance(text_or_path, (str, os.PathLike)) and not is_text:
        source = os.fspath(text_or_path)
        text = read_input_bytes(source, what="a calibration JSON file", max_bytes=MAX_FILE_BYTES,
                                error=CalibrationFileError,
                                hint="give the JSON file `diskmodel calibrate --json` wrote")
    elif isinstance(text_or_path, str):
        source, text = "text_or_path (JSON text)", text_or_path
    else:
        raise TypeError(f"text_or_path must be JSON text or a path (got {type(text_or_path).__name__})")
    data = parse_input_json(text, source, what="a calibration result", error=CalibrationFileError)
    return calibration_from_dict(data, source=source)
