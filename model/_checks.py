"""Input validation shared by the model modules.

Every check raises ValueError naming the offending parameter; nothing is
silently clamped.
"""
from __future__ import annotations

import math

import numpy as np


def finite_array(name: str, values, *, nonnegative: bool = False, positive: bool = False) -> np.ndarray:
    """Return *values* as a float ndarray, or raise ValueError naming *name*."""
    array = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (got NaN or inf)")
    if positive and np.any(array <= 0):
        raise ValueError(f"{name} must be > 0 (smallest given: {array.min()!r})")
    if nonnegative and np.any(array < 0):
        raise ValueError(f"{name} must be >= 0 (smallest given: {array.min()!r})")
    return array


def finite_scalar(name: str, value, *, nonnegative: bool = False, positive: bool = False) -> float:
    """Return *value* as a float, or raise ValueError naming *name*."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number (got {value!r})") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite (got {value!r})")
    if positive and number <= 0:
        raise ValueError(f"{name} must be > 0 (got {value!r})")
    if nonnegative and number < 0:
        raise ValueError(f"{name} must be >= 0 (got {value!r})")
    return number


def whole_number(name: str, value, *, minimum: int = 0) -> int:
    """Return *value* as an int >= *minimum*, or raise ValueError naming *name*."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be a whole number (got {value!r})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum} (got {value!r})")
    return int(value)
