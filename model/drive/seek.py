"""Seek time as a function of distance (Djordjevic & Timcenko 2015, eq. 7).

Two curves:

* :class:`TwoPieceSeek`, eq. (7) after Ruemmler & Wilkes (1994):
  ``0`` at d = 0, ``a + b*sqrt(d)`` for 0 < d <= e (acceleration-limited),
  ``c + f*d`` beyond the knee e (coast at full speed).
* :class:`TableSeek`, a measured curve (DiskSim's ``.seek`` files, or the
  harness's own measurements), interpolated linearly between measured points,
  DiskSim 4.0's rule (``dm_mech_g1_seek_extracted`` in
  ``diskmodel/mech_g1_seektime.c``), so that a measured table means the same
  thing to the fitters, the DiskSim reader and the simulators.

Each formula is written once, as a numba scalar kernel
(:func:`two_piece_seek_one`, :func:`table_seek_one`) that the vectorised
functions and the per-request simulation both call.
Distances are in cylinders, times in seconds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._checks import evolve as _evolve
from .._checks import finite_array, finite_scalar, whole_number


@njit(cache=True)
def two_piece_seek_one(d, a, b, c, f, knee):
    """Eq. (7) at one distance *d* [cylinders]: 0 at 0, ``a + b*sqrt(d)`` for
    d <= knee, ``c + f*d`` beyond [s]. Numba kernel."""
    if d == 0.0:
        return 0.0
    if d <= knee:
        return a + b * np.sqrt(d)
    return c + f * d


@njit(cache=True)
def _two_piece_many(distance, a, b, c, f, knee, out):
    for i in range(distance.size):
        out[i] = two_piece_seek_one(distance[i], a, b, c, f, knee)


def two_piece_seek_time_s(distance_cylinders, short_offset_s, short_sqrt_s,
                          long_offset_s, long_per_cylinder_s, knee_cylinders):
    """Seek time [s] of eq. (7) for distances [cylinders] (vectorised :func:`two_piece_seek_one`).

    Parameters
    ----------
    distance_cylinders : array_like
        Seek distances [cylinders], >= 0.
    short_offset_s, short_sqrt_s : float
        a [s] and b [s / sqrt(cylinder)] of the short-seek branch a + b*sqrt(d).
    long_offset_s, long_per_cylinder_s : float
        c [s] and the slope [s / cylinder] of the long-seek branch.
    knee_cylinders : float
        e [cylinders]: the last distance served by the short branch.
    """
    distance = finite_array("distance_cylinders", distance_cylinders, nonnegative=True)
    out = np.empty(distance.size)
    _two_piece_many(np.ascontiguousarray(distance, dtype=float).ravel(), float(short_offset_s),
                    float(short_sqrt_s), float(long_offset_s), float(long_per_cylinder_s),
                    float(knee_cylinders), out)
    return out.reshape(distance.shape) if distance.ndim else float(out[0])


@njit(cache=True)
def table_seek_one(d, table_distance, table_time):
    """A measured seek table at one distance *d* [cylinders] [s]. Numba kernel.

    DiskSim 4.0's rule (``dm_mech_g1_seek_extracted``): 0 at distance 0, the
    listed time at a listed distance, linear interpolation between the two
    listed points around *d*, and linear extrapolation from the last two
    points beyond the table. Below the first point the line runs from (0, 0)
    (DiskSim's tables start at distance 1 and its distances are whole).
    """
    if d == 0.0:
        return 0.0
    n = table_distance.size
    if d <= table_distance[0]:
        return table_time[0] * d / table_distance[0]
    lo = 0
    hi = n - 1
    if d < table_distance[n - 1]:
        # binary search: table_distance[lo] < d <= table_distance[hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if table_distance[mid] < d:
                lo = mid
            else:
                hi = mid
    else:
        lo = n - 2
    x0 = table_distance[lo]
    x1 = table_distance[hi]
    if d == x1:
        return table_time[hi]
    return table_time[lo] + (d - x0) * (table_time[hi] - table_time[lo]) / (x1 - x0)


@njit(cache=True)
def _table_many(distance, table_distance, table_time, out):
    for i in range(distance.size):
        out[i] = table_seek_one(distance[i], table_distance, table_time)


def table_seek_time_s(distance_cylinders, table_distance_cylinders, table_time_s):
    """A measured seek table at distances [cylinders] [s] (vectorised :func:`table_seek_one`,
    extrapolating linearly beyond the last point as DiskSim does)."""
    distance = finite_array("distance_cylinders", distance_cylinders, nonnegative=True)
    out = np.empty(distance.size)
    _table_many(np.ascontiguousarray(distance, dtype=float).ravel(),
                np.ascontiguousarray(table_distance_cylinders, dtype=float),
                np.ascontiguousarray(table_time_s, dtype=float), out)
    return out.reshape(distance.shape) if distance.ndim else float(out[0])


@dataclass(frozen=True)
class TwoPieceSeek:
    """Eq. (7) with its five device parameters.

    Bounds: every coefficient >= 0, knee_cylinders > 0 (and, when attached to a
    disk, below its number of cylinders).
    """

    short_offset_s: float
    short_sqrt_s: float
    long_offset_s: float
    long_per_cylinder_s: float
    knee_cylinders: float

    def __post_init__(self):
        for field in ("short_offset_s", "short_sqrt_s", "long_offset_s", "long_per_cylinder_s"):
            finite_scalar(field, getattr(self, field), nonnegative=True)
        finite_scalar("knee_cylinders", self.knee_cylinders, positive=True)

    @property
    def max_distance_cylinders(self) -> float:
        return float("inf")

    def seek_time_s(self, distance_cylinders):
        """Seek time [s] for distances [cylinders] (vectorised)."""
        return two_piece_seek_time_s(
            distance_cylinders, self.short_offset_s, self.short_sqrt_s,
            self.long_offset_s, self.long_per_cylinder_s, self.knee_cylinders)

    def evolve(self, **changes) -> "TwoPieceSeek":
        """A copy with some coefficients changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    def describe(self) -> str:
        return (f"{self.short_offset_s * 1e3:.3f} + {self.short_sqrt_s * 1e3:.4f}*sqrt(d) ms "
                f"for d <= {self.knee_cylinders:g}, "
                f"{self.long_offset_s * 1e3:.3f} + {self.long_per_cylinder_s * 1e3:.6f}*d ms beyond")


@dataclass(frozen=True, eq=False)
class TableSeek:
    """A measured seek curve, linear between points (:func:`table_seek_one`, DiskSim's rule).

    ``distance_cylinders`` must be strictly increasing and positive; the point
    (0, 0) is implied. A distance beyond the last measured point raises
    ValueError rather than extrapolating (:func:`table_seek_time_s` extends a
    table as DiskSim does).
    """

    distance_cylinders: np.ndarray
    seek_time_s_at_distance: np.ndarray

    def __post_init__(self):
        distance = finite_array("distance_cylinders", self.distance_cylinders, positive=True)
        times = finite_array("seek_time_s_at_distance", self.seek_time_s_at_distance, nonnegative=True)
        if distance.ndim != 1 or distance.shape != times.shape or distance.size < 2:
            raise ValueError("distance_cylinders and seek_time_s_at_distance must be 1-D, "
                             "of equal length, with at least two points")
        if np.any(np.diff(distance) <= 0):
            raise ValueError("distance_cylinders must be strictly increasing")
        object.__setattr__(self, "distance_cylinders", distance)
        object.__setattr__(self, "seek_time_s_at_distance", times)

    @property
    def max_distance_cylinders(self) -> float:
        return float(self.distance_cylinders[-1])

    def seek_time_s(self, distance_cylinders):
        """Seek time [s] for distances [cylinders] (vectorised)."""
        distance = finite_array("distance_cylinders", distance_cylinders, nonnegative=True)
        if distance.size and distance.max() > self.distance_cylinders[-1]:
            raise ValueError(f"distance_cylinders {distance.max():g} lies beyond the measured "
                             f"table (last point {self.distance_cylinders[-1]:g})")
        return table_seek_time_s(distance, self.distance_cylinders, self.seek_time_s_at_distance)

    def evolve(self, **changes) -> "TableSeek":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    def describe(self) -> str:
        return (f"measured table of {self.distance_cylinders.size} points up to "
                f"{self.distance_cylinders[-1]:g} cylinders")


def random_pair_distance_pmf(cylinders: int):
    """Distances and probabilities of ``|X - Y|`` for X, Y uniform on 0..cylinders-1.

    P(0) = 1/C, P(d) = 2 (C - d) / C^2 for 0 < d < C.
    """
    cylinders = whole_number("cylinders", cylinders, minimum=1)
    distance = np.arange(cylinders, dtype=float)
    probability = 2.0 * (cylinders - distance) / float(cylinders) ** 2
    probability[0] = 1.0 / cylinders
    return distance, probability


def mean_random_seek_time_s(seek, cylinders: int) -> float:
    """Expected seek time [s] between two uniformly random cylinders of a span of *cylinders* (>= 1)."""
    if not callable(getattr(seek, "seek_time_s", None)):
        raise ValueError(f"seek must be a seek model or Disk with seek_time_s (got {type(seek).__name__})")
    distance, probability = random_pair_distance_pmf(cylinders)
    return float(np.dot(seek.seek_time_s(distance), probability))
