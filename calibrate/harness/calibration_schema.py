"""The declared schema of a calibration file, as pydantic v2 models (the library every JSON of diskmodel is
read with; :mod:`diskmodel.model.stacks.schema` reads stacks with it).

:class:`CalibrationV3` is the current version's object (``format_version`` 3);
:class:`CalibrationV2` holds the keys versions 1 and 2 share.  Each key's type
says what it must be in words (``a positive integer``, ``a number >= 0 or
null``, ``a non-empty list of integers >= 0``), which is what an error says:
:func:`first_error` gives the first one as (key path, message), e.g.
``('zones[0].rate_bytes_per_s', "must be a number > 0 (got 'fast')")``.

A "number" is an int or a finite float, never a bool; an "integer" is an int,
never a bool or a float.  Keys a reader does not know are kept (readers of
later versions may add some); the derived keys (:data:`DERIVED_KEYS`) may be
left out, as reading recomputes them from the samples.
"""
from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional

import annotated_types as at
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, WrapValidator
from pydantic_core import PydanticCustomError

__all__ = ["CalibrationV2", "CalibrationV3", "DERIVED_KEYS", "first_error", "shown"]


def shown(value) -> str:
    """*value* as an error line quotes it: JSON, a string in quotes, at most 60 characters."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    if isinstance(value, str):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _words(wanted: str) -> WrapValidator:
    """A validator that turns a failure of the value itself (not of an item inside it) into 'must be *wanted*'."""
    def check(value, handler):
        try:
            return handler(value)
        except ValidationError as exc:
            if any(error["loc"] for error in exc.errors()):
                raise  # an item or key inside the value: its own error, at its own path
            raise PydanticCustomError("wanted", "must be {wanted}", {"wanted": wanted}) from None

    return WrapValidator(check)


class _Type:
    """A JSON type with its constraint: its pydantic annotation and how one (and several) read in words."""

    def __init__(self, annotation, one: str, many: str):
        self.annotation, self.one, self.many = annotation, one, many

    def field(self):
        return Annotated[self.annotation, _words(self.one)]

    def or_null(self):
        return Annotated[Optional[self.annotation], _words(f"{self.one} or null")]

    def null_items(self) -> "_Type":
        return _Type(Optional[self.annotation], f"{self.one} or null", f"{self.many} or nulls")

    def list(self, *, non_empty: bool = False):
        item = Annotated[self.annotation, _words(self.one)]
        what = ("a non-empty list of " if non_empty else "a list of ") + self.many
        return Annotated[list[item], Field(min_length=1 if non_empty else 0), _words(what)]


_INT = Annotated[int, Strict()]
_NUMBER = Annotated[float, Strict(), Field(allow_inf_nan=False)]
INTEGER = _Type(_INT, "an integer", "integers")
POSITIVE_INTEGER = _Type(Annotated[_INT, at.Gt(0)], "a positive integer", "positive integers")
COUNT = _Type(Annotated[_INT, at.Ge(0)], "an integer >= 0", "integers >= 0")
NUMBER = _Type(_NUMBER, "a finite number", "finite numbers")
POSITIVE = _Type(Annotated[_NUMBER, at.Gt(0)], "a number > 0", "numbers > 0")
NONNEGATIVE = _Type(Annotated[_NUMBER, at.Ge(0)], "a number >= 0", "numbers >= 0")
SECONDS = _Type(Annotated[_NUMBER, at.Ge(0)], "a finite number of seconds >= 0", "finite numbers of seconds >= 0")
TEXT = _Type(Annotated[str, Strict()], "a string", "strings")
FLAG = _Type(Annotated[bool, Strict()], "true or false", "true or false values")
OBJECT = _Type(Annotated[dict[str, Any], Strict()], "an object", "objects")
LIST = _Type(Annotated[list, Strict()], "a list", "lists")


class _Object(BaseModel):
    """An object of the calibration file: its declared keys checked, others kept."""

    model_config = ConfigDict(extra="allow")


def _object(model, wanted: str = "an object"):
    return Annotated[model, _words(wanted)]


class Check(_Object):
    name: TEXT.field()
    passed: FLAG.or_null()
    detail: TEXT.field()


class Zone(_Object):
    start_byte: COUNT.field()
    end_byte: POSITIVE_INTEGER.field()
    rate_bytes_per_s: POSITIVE.field()


class ZoneSamples(_Object):
    location_bytes: COUNT.list(non_empty=True)
    rate_bytes_per_s: NUMBER.null_items().list(non_empty=True)
    read_length_bytes: POSITIVE_INTEGER.field()
    detail: TEXT.field()


class SeekSamples(_Object):
    from_bytes: COUNT.list(non_empty=True)
    to_bytes: COUNT.list(non_empty=True)
    time_s: NONNEGATIVE.list(non_empty=True)
    designed: FLAG.list(non_empty=True)
    round: COUNT.list(non_empty=True)
    design_distances_bytes: COUNT.list(non_empty=True)
    baseline_s: NUMBER.or_null() = None  # derived: reading recomputes it
    detail: TEXT.field()


class FlatTest(_Object):
    flat: FLAG.field()
    detail: TEXT.field()
    slope_pvalue: NUMBER.or_null()
    rise_s: NUMBER.or_null()


class ReadAhead(_Object):
    detected: FLAG.or_null()
    segment_bytes: POSITIVE_INTEGER.or_null()
    segments: POSITIVE_INTEGER.or_null()


class Status(_Object):
    status: Annotated[Literal["measured", "estimated", "not visible"],
                      _words("'measured', 'estimated' or 'not visible'")]
    detail: TEXT.field()


# Keys to_dict writes for readers that reading recomputes from the samples: checked where present, not required.
DERIVED_KEYS = frozenset({"model", "mechanical_seek", "flat_test", "seek_curve_table", "seek_curve_spread",
                          "seek_fit", "seek_fit_table", "latency_model", "mean_random_seek_time_s"})


class CalibrationV2(_Object):
    """The keys of a calibration file of format_version 1 and 2 (1 writes no ``format_version``)."""

    format: TEXT.field()
    model: TEXT.field() = None
    target: TEXT.field()
    kind: TEXT.field()
    size_bytes: POSITIVE_INTEGER.field()
    block_size_bytes: POSITIVE_INTEGER.field()
    budget_s: POSITIVE.field()
    rotation_period_s: POSITIVE.or_null()
    rotation_period_bse_s: NONNEGATIVE.or_null()
    rotation_period_samples_s: NUMBER.null_items().list()
    rotation_detail: TEXT.field()
    overhead_s: NONNEGATIVE.or_null()
    block_transfer_s: NONNEGATIVE.or_null()
    mechanical_seek: FLAG.field() = None
    flat_test: _object(FlatTest) = None
    seek_curve_table: LIST.list() = None
    seek_curve_spread: OBJECT.list() = None
    seek_fit: OBJECT.field() = None
    seek_fit_table: OBJECT.field() = None
    latency_model: OBJECT.or_null() = None
    mean_random_seek_time_s: NONNEGATIVE.or_null() = None
    zones: Annotated[list[_object(Zone)], Field(min_length=1), _words("a non-empty list of objects")]
    zone_samples: _object(ZoneSamples)
    seek_samples: _object(SeekSamples)
    device_time_s: NONNEGATIVE.field()
    wall_time_s: NONNEGATIVE.field()
    reads: COUNT.field()
    checks: Annotated[list[_object(Check)], _words("a list of objects")]


class CalibrationV3(CalibrationV2):
    """The keys of a calibration file of format_version 3, the one written now."""

    format_version: POSITIVE_INTEGER.field()
    head_switch_s: NONNEGATIVE.or_null()
    track_skew_fraction: NONNEGATIVE.or_null()
    cylinder_skew_fraction: NONNEGATIVE.or_null()
    surfaces: POSITIVE_INTEGER.or_null()
    read_ahead: _object(ReadAhead)
    command_overhead_s: NONNEGATIVE.or_null()
    write_cache: FLAG.or_null()
    write_service_s: NONNEGATIVE.or_null()
    detail: Annotated[dict[str, _object(Status)], _words("an object")]
    one_cylinder_seek_s: NONNEGATIVE.or_null() = None  # absent from the files written before it was measured


def _path(loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def first_error(exc: ValidationError) -> tuple[str, str]:
    """(key path, what is wrong with the value there) of the first error of *exc*."""
    error = exc.errors(include_url=False)[0]
    key = _path(error["loc"])
    if error["type"] == "missing":
        return key, "is missing"
    if error["type"] == "extra_forbidden":
        return key, "is not a key this object may hold"
    if error["type"] == "wanted":
        return key, f"must be {error['ctx']['wanted']} (got {shown(error['input'])})"
    return key, f"{error['msg']} (got {shown(error['input'])})"  # pragma: no cover - every key has its words
