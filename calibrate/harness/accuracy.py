"""How far a calibration lies from a drive whose truth is known: the errors every truth shares.

Used by the simulated disk (:func:`diskmodel.calibrate.harness.simulated.calibration_errors`) and the
reference drives (:func:`diskmodel.calibrate.harness.reference.calibration_errors`), which add their own.
"""
from __future__ import annotations

import numpy as np

__all__ = ["common_errors", "relative_error"]


def relative_error(measured, true):
    """(measured - true) / true; None where either is None."""
    return None if measured is None or true is None else (measured - true) / true


def common_errors(result, *, rotation_period_s: float, mean_random_seek_s: float, zone_bounds_bytes,
                  zone_rates_bytes_per_s) -> dict:
    """The relative errors of *result* (a CalibrationResult) against a truth.

    ``rotation_period``; ``mean_seek_two_piece`` and ``mean_seek_table``: of the mean seek over
    uniformly random pairs of byte offsets (None where the result has no such model);
    ``zone_rate_max`` and ``zone_rate_mean``: the largest and the byte-weighted mean of
    ``|measured rate at each true zone's middle - true rate| / true rate``; and
    ``true_mean_seek_s``.
    """
    out = {"rotation_period": relative_error(result.rotation_period_s, rotation_period_s)}
    for model in ("two_piece", "table"):
        try:
            out[f"mean_seek_{model}"] = relative_error(result.mean_random_seek_time_s(model), mean_random_seek_s)
        except ValueError:
            out[f"mean_seek_{model}"] = None
    bounds = np.asarray(zone_bounds_bytes)
    true_rates = np.asarray(zone_rates_bytes_per_s, dtype=float)
    err = np.abs(result.rate_at_bytes((bounds[:, 0] + bounds[:, 1]) // 2) - true_rates) / true_rates
    weight = (bounds[:, 1] - bounds[:, 0]).astype(float)
    out["zone_rate_max"] = float(err.max())
    out["zone_rate_mean"] = float(np.dot(err, weight) / weight.sum())
    out["true_mean_seek_s"] = mean_random_seek_s
    return out
