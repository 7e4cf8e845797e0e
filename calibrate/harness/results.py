"""The calibration file: its JSON format, declared schema, validation, reading and writing.

A calibration result (:class:`diskmodel.model.fit.CalibrationResult`, made by
:func:`diskmodel.model.fit.fit_calibration`) is written as one JSON object:
the ``format`` marker and ``format_version``, then the keys of
:meth:`CalibrationResult.to_dict` (measurements, and derived keys for
readers), checked against the pydantic models of
:mod:`diskmodel.calibrate.harness.calibration_schema` when read. Reading fits the
measurements again (deterministically): the derived keys are never trusted.

Versions: 3 (written now), 2 and 1 (read). Version 3 adds the drive's
figures: ``head_switch_s``, ``track_skew_fraction`` and
``cylinder_skew_fraction`` (of a revolution), ``surfaces``, ``read_ahead``
(``{"detected", "segment_bytes", "segments"}``), ``command_overhead_s``,
``write_cache`` and ``write_service_s`` (null unless the calibration wrote), each
null where the timing does not show it, and ``detail``: for each figure and
the rotation period, ``{"status": "measured" | "estimated" | "not visible",
"detail": why}``. ``one_cylinder_seek_s`` (the least read after a cylinder
switch that catches its sector, less the same-track floor) is present only where
it was measured: a version 3 file without it reads as not measured. A file of
version 1 or 2 reads with those figures not visible (and says so). Versions 1 and 2 hold the same measurements;
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
import os
from pathlib import Path

from pydantic import ValidationError

from diskmodel.calibrate.harness import outputs
from diskmodel.calibrate.harness.calibration_schema import CalibrationV2, CalibrationV3, first_error, shown
from diskmodel.calibrate.harness.outputs import parse_input_json, read_input_bytes
from diskmodel.model.fit import CalibrationResult

__all__ = ["CalibrationFileError", "JSON_FORMAT", "FORMAT_VERSION", "SCHEMA", "validate_calibration_dict",
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


# The declared schema: pydantic models of the keys of each version (calibration_schema), and the keys
# of the current version. Cross-key rules (validate_calibration_dict): block_size_bytes divides
# size_bytes; the zones cover [0, size_bytes) in order, back to back; sample offsets lie in
# [0, size_bytes); the seek sample lists have one length, as do the zone sample lists; a rotation
# period needs overhead_s.
SCHEMA = CalibrationV3.model_fields
_SCHEMA_OF_VERSION = {1: CalibrationV2, 2: CalibrationV2, 3: CalibrationV3}
_shown = shown


def validate_calibration_dict(data, source: str = "calibration") -> int:
    """Check *data* (parsed calibration JSON) against its version's schema (:mod:`.calibration_schema`) and
    the cross-key rules.

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
    elif isinstance(marker, str) and marker in LEGACY_FORMATS:
        version = LEGACY_FORMATS[marker]
    else:
        what = "no 'format' key" if "format" not in data else f"key 'format' is {_shown(marker)}"
        raise CalibrationFileError(source, f"not a diskmodel calibration result ({what}; expected "
                                           f"{JSON_FORMAT!r}, as `diskmodel calibrate --json` writes)", "format")
    try:
        _SCHEMA_OF_VERSION[version].model_validate(data)
    except ValidationError as exc:
        key, problem = first_error(exc)
        raise CalibrationFileError(source, f"key '{key}' {problem}", key) from None

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

    Checked against the schema first (:func:`validate_calibration_dict`; errors
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
