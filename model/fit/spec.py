"""Seek coefficients from a drive's spec sheet.

A spec sheet gives three seek times: track-to-track, full stroke and the
average (the mean over uniformly random pairs of cylinders). Eq. (7) has
five parameters; two more conditions make them determined: the curve and
its slope are continuous at the knee (a drive's arm accelerates, then
coasts; its seek time has no jump and no kink there). For a knee e the four
coefficients follow from linear equations,

    a + b = t_track,   c + f (C - 1) = t_full,
    f = b / (2 sqrt(e)),   a + b sqrt(e) = c + f e,

and e is the root of mean seek(e) = t_mean (brentq). This is how the WD800BD
preset's coefficients were derived (``diskmodel.data.presets``, its
``estimates``).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from .._checks import finite_scalar, whole_number
from ..drive.seek import TwoPieceSeek, random_pair_distance_pmf, two_piece_seek_time_s

__all__ = ["solve_two_piece_seek_from_spec"]


def _coefficients(knee_cylinders, track_to_track_s, full_stroke_s, full_stroke_cylinders):
    """(a, b, c, f) of eq. (7) for a knee, continuous in value and slope there."""
    root = math.sqrt(knee_cylinders)
    system = np.array([[1.0, 1.0, 0.0, 0.0],
                       [0.0, 0.0, 1.0, float(full_stroke_cylinders)],
                       [0.0, 1.0 / (2.0 * root), 0.0, -1.0],
                       [1.0, root, -1.0, -float(knee_cylinders)]])
    return np.linalg.solve(system, [track_to_track_s, full_stroke_s, 0.0, 0.0])


def solve_two_piece_seek_from_spec(track_to_track_s: float, full_stroke_s: float, mean_seek_s: float,
                                   cylinders: int) -> TwoPieceSeek:
    """The :class:`TwoPieceSeek` with the spec's three seek times, continuous in value and
    slope at its knee (see the module doc).

    Parameters
    ----------
    track_to_track_s : float
        Seek time over one cylinder [s].
    full_stroke_s : float
        Seek time over ``cylinders - 1`` cylinders [s].
    mean_seek_s : float
        Mean seek time over uniformly random pairs of the *cylinders* (a pair
        on one cylinder counts, with no seek) [s].
    cylinders : int
        Cylinders of the drive (>= 3).

    Notes
    -----
    The knee is returned as solved (not a whole number of cylinders). Raises
    ValueError where no knee in (1, cylinders - 1) gives the mean, or the
    solution has a negative coefficient.
    """
    t1 = finite_scalar("track_to_track_s", track_to_track_s, positive=True)
    tf = finite_scalar("full_stroke_s", full_stroke_s, positive=True)
    tm = finite_scalar("mean_seek_s", mean_seek_s, positive=True)
    n = whole_number("cylinders", cylinders, minimum=3)
    if not t1 < tm < tf:
        raise ValueError(f"mean_seek_s must lie between track_to_track_s and full_stroke_s "
                         f"(got {t1!r} < {tm!r} < {tf!r} not holding)")

    distance, probability = random_pair_distance_pmf(n)

    def excess(knee):
        # the mean of eq. (7) over random pairs; coefficients may be negative away from the root
        times = two_piece_seek_time_s(distance, *_coefficients(knee, t1, tf, n - 1), knee)
        return float(np.dot(times, probability)) - tm

    low, high = 1.0 + 1e-9, float(n - 1) - 1e-9
    at_low, at_high = excess(low), excess(high)
    if at_low * at_high > 0:
        raise ValueError(f"mean_seek_s={tm!r}: no knee in (1, {n - 1}) gives it; the curves continuous at a knee "
                         f"give {at_low + tm:.6g}..{at_high + tm:.6g} s with these track-to-track and full-stroke "
                         f"times")
    knee = brentq(excess, low, high, xtol=1e-9, rtol=1e-14)
    try:
        return TwoPieceSeek(*_coefficients(knee, t1, tf, n - 1), knee)
    except ValueError as exc:
        raise ValueError(f"the spec (track_to_track_s={t1!r}, full_stroke_s={tf!r}, mean_seek_s={tm!r}) solves "
                         f"to a negative coefficient: {exc}") from None

