"""Intervals of a timed prediction: a calibration's uncertainty carried through the drives' simulations.

A calibrated drive's parameters are estimates: the rotation period has its standard error, and the
seek fit (the two-piece curve of eq. 7, or a flat device's latency model) its covariance
(:attr:`diskmodel.model.fit.calibration.CalibrationResult.covariance`). :func:`calibration_draws`
draws parameter sets from the normal distribution with that mean and covariance (seeded; the
parameters without a variance, the overhead, a minimum, and the profiled knee, held at their
estimates; a draw beyond a parameter's bounds is held at the bound), and :func:`drawn_disk` makes each
a Disk, keeping what the calibration did not measure of the Disk in use (a buffer or an interface
completed from a preset). The prediction is then timed again with each draw
(:func:`diskmodel.model.predictions.results.predict_stack`'s ``calibrations``), and
:func:`conf_int` gives the interval of each figure from the spread of the re-timed figures around
the point prediction: ``point +- t(1 - alpha/2, n - 1) * sd(draws)`` with n the number of draws
(the draws' sample standard deviation, Student's t for its few degrees of freedom).

Pure model code: no I/O, no clocks.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["calibration_draws", "drawn_disk", "conf_int", "DEFAULT_DRAWS"]

#: Re-timings per prediction: enough for a standard deviation, few enough to stay quick.
DEFAULT_DRAWS = 8


def calibration_draws(result, draws: int = DEFAULT_DRAWS, seed: int = 0) -> list:
    """``draws`` calibration results whose fitted parameters are drawn from ``result``'s estimates and
    covariance (see the module docstring)."""
    from ..fit.base import Parameters
    from ..fit.latency import FlatLatencyFit

    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 2:
        raise ValueError(f"draws = {draws!r} must be an integer >= 2")
    names = list(result.params.index)
    mean = np.asarray(result.params, float)
    cov = np.asarray(result.covariance, float)
    var = np.diag(cov)
    free = np.flatnonzero(np.isfinite(var) & (var > 0) & np.isfinite(mean))
    rng = np.random.default_rng(seed)
    sub = cov[np.ix_(free, free)]
    sample = (rng.multivariate_normal(mean[free], np.where(np.isfinite(sub), sub, 0.0), size=int(draws),
                                      method="eigh") if free.size else np.empty((int(draws), 0)))
    params = result.parameters
    lower = np.array([params[n].lower for n in names], float)
    upper = np.array([params[n].upper for n in names], float)
    out = []
    fit = result.seek_fit
    # A device without a mechanical seek is timed by its flat latency model even where a two-piece fit was
    # made too (calibrate.stacks.disk_of): its mean latency is drawn from its standard error then.
    flat = result.latency_model if not result.mechanical_seek else None
    flat_means = (rng.normal(flat.mean_s, flat.std_s / np.sqrt(max(flat.n, 1)), size=int(draws))
                  if flat is not None and not isinstance(fit, FlatLatencyFit) else None)
    for k, row in enumerate(sample):
        values = mean.copy()
        values[free] = np.clip(row, lower[free], upper[free])
        drawn = dict(zip(names, values.tolist()))
        changes = {}
        if "rotation_period_s" in drawn and result.rotation_period_s is not None:
            changes["rotation_period_s"] = drawn["rotation_period_s"]
        seek_names = [n for n in names if n not in ("rotation_period_s", "overhead_s")]
        if isinstance(fit, FlatLatencyFit):  # its one varying parameter is the mean latency
            changes["latency_model"] = dataclasses.replace(fit, mean_s=drawn["latency_s"])
        elif flat_means is not None:
            changes["latency_model"] = dataclasses.replace(flat, mean_s=float(flat_means[k]))
        elif seek_names and fit is not None and hasattr(fit, "parameters"):
            inner = Parameters([p.evolve(value=drawn[f"seek_{p.name}"] if f"seek_{p.name}" in drawn else drawn[p.name])
                                for p in fit.parameters.values()])
            field = "two_piece" if fit is result.two_piece else "latency_model"
            changes[field] = dataclasses.replace(fit, parameters=inner)
        out.append(dataclasses.replace(result, **changes))
    return out


def drawn_disk(base, drawn_result, seek: str = "two_piece"):
    """``base`` (the Disk in use for the calibrated drive) with the rotation, zones and seek curve of
    ``drawn_result`` (a draw of :func:`calibration_draws`); its buffer, interface and name kept."""
    from ..fit.calibration_views import calibrated_disk

    # every request of the point's fits; the buffer is base's, so the draw's segment is not sized
    d = calibrated_disk(drawn_result, seek=seek, covers=base.capacity_bytes, size_segment=False)
    if seek == "flat":
        return dataclasses.replace(base, rpm=d.rpm, seek=d.seek, geometry=d.geometry,
                                   command_overhead_s=d.command_overhead_s)
    return dataclasses.replace(base, rpm=d.rpm, seek=d.seek, geometry=d.geometry)


def conf_int(point: dict, draws: list[dict], alpha: float = 0.05):
    """A pandas DataFrame, one row per figure of ``point`` (``{name: value}``): ``lower`` and ``upper``
    (the module docstring), ``estimate`` and ``draws_sd``."""
    import pandas as pd
    from scipy import stats

    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"alpha = {alpha!r} must be a number in (0, 1)")
    n = len(draws)
    t = float(stats.t.ppf(1 - alpha / 2, n - 1))
    rows = []
    for name, value in point.items():
        sd = float(np.std([d[name] for d in draws], ddof=1))
        rows.append({"quantity": name, "estimate": value, "lower": value - t * sd, "upper": value + t * sd,
                     "draws_sd": sd})
    return pd.DataFrame(rows).set_index("quantity")
