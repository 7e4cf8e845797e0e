"""Input validation shared by the model modules.

Every check raises ValueError (a :class:`FieldError`, which carries the
parameter's name apart) with a one-line message naming the offending
parameter and the value given; nothing is silently clamped or converted.
A number is an int or float (or a numpy integer or float); a bool, a string
or anything else is refused where a number goes, even where ``float()``
would turn it into one.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import reprlib

import numpy as np

_SHORT = reprlib.Repr()
_SHORT.maxlist = _SHORT.maxtuple = 4
_SHORT.maxstring = _SHORT.maxother = 40


class FieldError(ValueError):
    """A ValueError about one named input: ``field`` names it, ``problem`` says what is wrong with its value.

    Its text is the field and the problem (``budget_s must be > 0 (got -1)``); a caller that set the field
    from something of its own (a command-line flag) names that instead, from the attributes.
    """

    def __init__(self, field: str, problem: str, sep: str = " "):
        super().__init__(f"{field}{sep}{problem}")
        self.field, self.problem, self.sep = field, problem, sep


def show(value) -> str:
    """A short one-line repr of *value* for an error message (numpy scalars as Python numbers)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return show(value.item())
        if value.size == 0:
            return "an empty array"
        text = np.array2string(value.ravel()[:4], separator=", ", threshold=4)
        return f"array of {value.size} values {text[:-1]}{', ...' if value.size > 4 else ''}]"
    return _SHORT.repr(value).replace("\n", " ")


def _is_number(value) -> bool:
    """True for a real number (int, float, numpy int/float, 0-d numeric array); False for bool and str."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "iuf"
    return isinstance(value, numbers.Real)


def finite_array(name: str, values, *, nonnegative: bool = False, positive: bool = False, whole: bool = False,
                 maximum=None, maximum_is: str = "", nonempty: bool = False) -> np.ndarray:
    """Return *values* as a float ndarray, or raise ValueError naming *name*.

    Refuses booleans, strings and other non-numbers, NaN and inf; with
    *nonempty* an empty array; with *whole* values that are not whole
    numbers; with *positive* / *nonnegative* values <= 0 / < 0; with
    *maximum* values above it (*maximum_is* says what the bound is).

    A float ndarray or a Python float/int that passes is checked by its minimum and maximum alone (a NaN
    reaches both, an infinity one of them), since the model's inner loops call this on every evaluation;
    anything else, and every failure, goes through the full check that names the problem.
    """
    if not whole:
        kind = type(values)
        if kind is np.ndarray and values.dtype == np.float64 and values.size:
            lo, hi = values.min(), values.max()
        elif kind is float or kind is int:
            lo = hi = float(values)
        else:
            lo = hi = math.nan
        if (math.isfinite(lo) and math.isfinite(hi) and not (positive and lo <= 0)
                and not (nonnegative and lo < 0) and not (maximum is not None and hi > maximum)):
            return np.array(values, dtype=float)
    return _checked_array(name, values, nonnegative=nonnegative, positive=positive, whole=whole,
                          maximum=maximum, maximum_is=maximum_is, nonempty=nonempty)


def _checked_array(name, values, *, nonnegative, positive, whole, maximum, maximum_is, nonempty) -> np.ndarray:
    """:func:`finite_array`'s full check, each refusal naming *name* and the problem."""
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError):
        raise FieldError(name, f"must be numbers (got {show(values)})") from None
    kind = raw.dtype.kind
    if kind == "O" and all(_is_number(item) for item in raw.ravel()):
        kind = "f"
    if kind not in "iuf":
        what = {"b": "booleans", "U": "strings", "S": "bytes", "c": "complex numbers"}.get(kind, "not numbers")
        raise FieldError(name, f"must be numbers (got {what}: {show(values)})")
    array = raw.astype(float)
    if nonempty and array.size == 0:
        raise FieldError(name, f"must not be empty (got {show(values)})")
    finite = np.isfinite(array)
    if not np.all(finite):
        raise FieldError(name, f"must be finite (got {array[~finite].flat[0]!r})")
    if array.size == 0:
        return array
    if positive and np.any(array <= 0):
        raise FieldError(name, f"must be > 0 (got {show(array.min())})")
    if nonnegative and np.any(array < 0):
        raise FieldError(name, f"must be >= 0 (got {show(array.min())})")
    if whole:
        fractional = array != np.floor(array)
        if np.any(fractional):
            raise FieldError(name, f"must be whole numbers (got {show(array[fractional].flat[0])})")
    if maximum is not None and np.any(array > maximum):
        note = f" ({maximum_is})" if maximum_is else ""
        raise FieldError(name, f"must be <= {show(maximum)}{note} (got {show(array.max())})")
    return array


def finite_scalar(name: str, value, *, nonnegative: bool = False, positive: bool = False,
                  maximum=None, maximum_is: str = "") -> float:
    """Return *value* as a float, or raise ValueError naming *name*.

    Refuses bool, str and anything else that is not a real number, NaN and
    inf, and (as asked) values <= 0, < 0 or above *maximum*.
    """
    if not _is_number(value):
        raise FieldError(name, f"must be a number (got {show(value)})")
    number = float(value)
    if not math.isfinite(number):
        raise FieldError(name, f"must be finite (got {show(value)})")
    if positive and number <= 0:
        raise FieldError(name, f"must be > 0 (got {show(value)})")
    if nonnegative and number < 0:
        raise FieldError(name, f"must be >= 0 (got {show(value)})")
    if maximum is not None and number > maximum:
        note = f" ({maximum_is})" if maximum_is else ""
        raise FieldError(name, f"must be <= {show(maximum)}{note} (got {show(value)})")
    return number


def positive_rate(name: str, value) -> float:
    """Return *value* as a float > 0, +inf allowed (a rate with no limit), or raise ValueError naming *name*."""
    if not _is_number(value):
        raise FieldError(name, f"must be a number (got {show(value)})")
    number = float(value)
    if math.isnan(number) or not number > 0:
        raise FieldError(name, f"must be > 0 (got {show(value)})")
    return number


def whole_number(name: str, value, *, minimum: int = 0, maximum: int | None = None, maximum_is: str = "") -> int:
    """Return *value* as an int in [*minimum*, *maximum*], or raise ValueError naming *name*.

    An int (or numpy integer) is taken as is, a float only when it is a
    whole number; bool, str and fractional values are refused.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise FieldError(name, f"must be a whole number (got {show(value)})")
    if value < minimum:
        raise FieldError(name, f"must be >= {minimum} (got {show(value)})")
    if maximum is not None and value > maximum:
        note = f" ({maximum_is})" if maximum_is else ""
        raise FieldError(name, f"must be <= {show(maximum)}{note} (got {show(value)})")
    return int(value)


def flag(name: str, value) -> bool:
    """Return *value* if it is True or False (or a numpy bool), else raise ValueError naming *name*."""
    if not isinstance(value, (bool, np.bool_)):
        raise FieldError(name, f"must be True or False (got {show(value)})")
    return bool(value)


def one_of(name: str, value, choices: tuple):
    """Return *value* if it is one of *choices* (bool never matches a number), else raise ValueError."""
    if isinstance(value, (bool, np.bool_)) and not any(isinstance(c, bool) for c in choices):
        raise FieldError(name, f"must be one of {', '.join(map(repr, choices))} (got {show(value)})")
    try:
        found = value in choices
    except (TypeError, ValueError):  # e.g. an array
        found = False
    if not found:
        raise FieldError(name, f"must be one of {', '.join(map(repr, choices))} (got {show(value)})")
    return value


def evolve(obj, changes: dict):
    """``dataclasses.replace(obj, **changes)``, refusing unknown field names with ValueError.

    The replaced object is validated again by its ``__post_init__``.
    """
    names = {f.name for f in dataclasses.fields(obj) if f.init}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise ValueError(f"unknown {type(obj).__name__} field(s): {', '.join(unknown)} "
                         f"(fields: {', '.join(sorted(names))})")
    return dataclasses.replace(obj, **changes)
