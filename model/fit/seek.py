"""Fitting measured seek curves: the two-piece curve of eq. (7) and the measured table.

* :func:`fit_two_piece`: Djordjevic & Timcenko (2015) eq. (7) (Ruemmler &
  Wilkes 1994): ``a + b*sqrt(d)`` up to a knee, ``c + f*d`` beyond (by
  default continuous at the knee). The knee is chosen by the data: a profile
  over candidate knees (least squares for each), the best of those whose
  curve is a seek curve (no coefficient below 0, the long piece's offset
  included; the best of all where none is), then the fit at that knee with
  statsmodels, robustly (RLM, Huber's T) or by WLS. Its parameters
  carry the names of :class:`diskmodel.model.drive.seek.TwoPieceSeek`'s fields.
* :func:`fit_table`: the measured-table curve (means per distance, linear
  between points as :class:`diskmodel.model.TableSeek`, DiskSim's rule).

Distances are in whatever unit the caller gives (bytes for the harness,
tracks for a calibration, cylinders for DiskSim's tables); ``distance_unit``
names it, and the parameters' units say it. Times in seconds.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from ..drive.seek import TableSeek, TwoPieceSeek, table_seek_time_s, two_piece_seek_time_s
from .base import TRANSIENT, FitResult, Parameter, Parameters, frozen_array

__all__ = ["TwoPieceFit", "TableFit", "fit_two_piece", "fit_table", "residual_diagnostics", "TWO_PIECE_PARAMS"]

#: The units a seek distance is given in: the harness's bytes, a calibration's tracks, DiskSim's cylinders.
DISTANCE_UNITS = ("bytes", "tracks", "cylinders")

#: The parameters of eq. (7), named as TwoPieceSeek's fields (distances in the fit's distance_unit).
TWO_PIECE_PARAMS = tuple(f.name for f in dataclasses.fields(TwoPieceSeek))


def seek_samples(distance, seek_time_s, *, time_name: str = "seek_time_s"):
    """(distance, time) as float arrays of one length, finite, distances > 0 (ValueError naming them)."""
    x = np.asarray(distance, dtype=float).reshape(-1)
    y = np.asarray(seek_time_s, dtype=float).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"distance and {time_name} must have the same length ({x.size} != {y.size})")
    if x.size == 0:
        raise ValueError(f"distance and {time_name} must hold at least one sample (got none)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError(f"distance and {time_name} must be finite (got NaN or inf)")
    if np.any(x <= 0):
        raise ValueError("distance must be > 0 (seek time at distance 0 is 0 by definition)")
    return x, y


def residual_diagnostics(distance, residual_s) -> dict:
    """RMS, MAD, largest residual and the Durbin-Watson statistic of residuals
    ordered by distance (about 2 when they show no structure left by the model)."""
    from statsmodels.stats.stattools import durbin_watson

    order = np.argsort(distance, kind="stable")
    r = np.asarray(residual_s, dtype=float)[order]
    return {
        "n": int(r.size),
        "rms_s": float(np.sqrt(np.mean(r ** 2))) if r.size else float("nan"),
        "mad_s": float(np.median(np.abs(r - np.median(r)))) if r.size else float("nan"),
        "max_abs_s": float(np.max(np.abs(r))) if r.size else float("nan"),
        "durbin_watson": float(durbin_watson(r)) if r.size > 1 else float("nan"),
    }


def _diagnostic_lines(diagnostics: dict) -> list[str]:
    d = diagnostics
    return [f"residuals: n={d['n']} rms {d['rms_s'] * 1e3:.4f} ms, MAD {d['mad_s'] * 1e3:.4f} ms, "
            f"Durbin-Watson {d['durbin_watson']:.2f}"]


@dataclass(frozen=True, eq=False)
class TwoPieceFit(FitResult):
    """A fitted two-piece seek curve (eq. 7) with its uncertainty.

    Parameters are named as :class:`TwoPieceSeek`'s fields, in the fit's
    ``distance_unit``. The knee (``knee_cylinders``) is chosen by the
    profile, whose residual sums are in ``profile``: it has no standard error.
    ``continuous``: the long piece was constrained to meet the short one at
    the knee (``long_offset_s`` is then derived, its standard error by the
    delta method). ``results``: the statsmodels results (not kept by to_dict).
    """

    parameters: Parameters
    covariance: np.ndarray
    nobs: int
    df_resid: float
    method: str
    continuous: bool
    distance_unit: str
    distance_min: float
    distance_max: float
    diagnostics: dict
    profile: pd.DataFrame
    #: The data fitted, per distinct distance: ``distance``, ``mean_s`` and ``count`` (for plots and
    #: readers; None in a fit saved before it was kept).
    points: pd.DataFrame | None = None
    results: tuple | None = field(default=None, metadata=TRANSIENT)
    model: ClassVar[str] = "two_piece"

    def __post_init__(self):
        if self.parameters.names != TWO_PIECE_PARAMS:
            raise ValueError(f"parameters must be {TWO_PIECE_PARAMS} (got {self.parameters.names})")
        object.__setattr__(self, "covariance", frozen_array("covariance", self.covariance).reshape(5, 5))

    def predict(self, distance) -> np.ndarray:
        """Seek time [s] at distances [distance_unit] (0 at distance 0)."""
        return two_piece_seek_time_s(np.abs(np.asarray(distance, dtype=float)), **self.params.to_dict())

    def predict_band(self, distance, alpha: float = 0.05):
        """(prediction, lower, upper) of the mean seek time [s]: a pointwise
        confidence band from the coefficients' covariance (normal approximation)."""
        from scipy.stats import norm

        d = np.asarray(distance, dtype=float).reshape(-1)
        z = norm.ppf(1 - alpha / 2)
        short = d <= self.params["knee_cylinders"]
        grad = np.column_stack((short * 1.0, short * np.sqrt(np.abs(d)), ~short * 1.0, ~short * d))
        cov = self.covariance[:4, :4]
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", grad, cov, grad), 0.0))
        pred = self.predict(d)
        return pred, pred - z * se, pred + z * se

    def as_seek(self, scale: float = 1.0) -> TwoPieceSeek:
        """A :class:`TwoPieceSeek` for distances in units of *scale* fit units (e.g. bytes
        per cylinder). Raises ValueError where a fitted coefficient is negative (the model's bounds)."""
        p = self.params
        return TwoPieceSeek(float(p["short_offset_s"]), float(p["short_sqrt_s"]) * np.sqrt(scale),
                            float(p["long_offset_s"]), float(p["long_per_cylinder_s"]) * scale,
                            float(p["knee_cylinders"]) / scale)

    def _summary_title(self) -> str:
        return (f"two-piece seek fit ({self.method}, {'continuous' if self.continuous else 'free'} at the knee), "
                f"distance in {self.distance_unit}, knee {self.params['knee_cylinders']:.6g} {self.distance_unit} "
                f"(profiled)")

    def _summary_notes(self) -> list[str]:
        return _diagnostic_lines(self.diagnostics)

    def plot(self, ax=None, alpha: float = 0.05):
        """The data fitted (mean per distance), the fitted curve and its confidence band over the
        distances fitted. Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        if self.points is not None:
            ax.scatter(self.points["distance"], self.points["mean_s"] * 1e3, s=8, color="C0",
                       label="mean per distance (fitted)")
        grid = np.geomspace(self.distance_min, self.distance_max, 300)
        pred, lo, hi = self.predict_band(grid, alpha)
        ax.plot(grid, pred * 1e3, color="C1", label="two-piece fit")
        ax.fill_between(grid, lo * 1e3, hi * 1e3, color="C1", alpha=0.3, label=f"{100 * (1 - alpha):g}% band")
        ax.set_xscale("log")
        ax.set_xlabel(f"seek distance [{self.distance_unit}]")
        ax.set_ylabel("seek time [ms]")
        ax.legend(fontsize="small")
        return ax


def _lstsq_rss(X, y, w, with_coef: bool = False):
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    r = (y - X @ coef) * sw
    return (float(r @ r), coef) if with_coef else float(r @ r)


def _knee_profile(x, y, w, candidates, *, continuous, min_points, min_fraction, scale) -> pd.DataFrame:
    """Residual sum of squares of the fit at each candidate knee that leaves enough points on each side, and
    whether its curve is a seek curve (``physical``: every coefficient of eq. 7, the long piece's offset at
    distance 0 too, at least 0)."""
    rows = []
    xn = x / scale
    min_share = max(min_points, int(min_fraction * x.size))
    for knee in candidates:
        s = x <= knee
        if (np.unique(x[s]).size < min_points or np.unique(x[~s]).size < min_points
                or s.sum() < min_share or (~s).sum() < min_share):
            continue
        if continuous:
            kn = knee / scale
            rss, (a, b, c) = _lstsq_rss(np.column_stack((np.ones_like(xn), np.sqrt(np.minimum(xn, kn)),
                                                         np.maximum(xn - kn, 0.0))), y, w, with_coef=True)
            coefficients = (a, b, a + b * np.sqrt(kn) - c * kn, c)
        else:
            rs, short = _lstsq_rss(np.column_stack((np.ones(s.sum()), np.sqrt(xn[s]))), y[s], w[s], with_coef=True)
            rl, long = _lstsq_rss(np.column_stack((np.ones((~s).sum()), xn[~s])), y[~s], w[~s], with_coef=True)
            rss, coefficients = rs + rl, (*short, *long)
        rows.append((float(knee), rss, bool(np.all(np.asarray(coefficients) >= 0.0))))
    if not rows:
        raise ValueError("knees: no candidate knee leaves enough distances on both sides")
    return pd.DataFrame(rows, columns=["knee", "rss", "physical"])


def fit_two_piece(distance, seek_time_s, *, weights=None, method: str = "rlm", knees=None,
                  max_candidates: int = 80, min_points: int = 3, min_fraction: float = 0.02,
                  continuous: bool = True, distance_unit: str = "bytes") -> TwoPieceFit:
    """Fit eq. (7) with the knee chosen by the data.

    Parameters
    ----------
    distance : array_like
        Seek distances (> 0) [distance_unit].
    seek_time_s : array_like
        Seek times [s], one per distance (repeats allowed).
    weights : array_like, optional
        Inverse-variance weights (WLS); default equal.
    continuous : bool
        Constrain the long piece to meet the short one at the knee (one
        regression on ``1, sqrt(min(d, e)), max(d - e, 0)``); the seek
        curves of real drives are continuous, and the constraint steadies
        the knee. False fits the two pieces apart (eq. 7 as printed).
    method : "rlm" or "wls"
        Robust regression (Huber's T, for timing data with outliers) or
        weighted least squares for the final pieces.
    knees : array_like, optional
        Candidate knees; default up to *max_candidates* distinct distances.
        A knee must leave at least *min_points* distinct distances and
        *min_fraction* of the samples on each side.
    """
    import statsmodels.api as sm

    if distance_unit not in DISTANCE_UNITS:
        raise ValueError(f"distance_unit = {distance_unit!r} must be one of {', '.join(DISTANCE_UNITS)}")
    x, y = seek_samples(distance, seek_time_s)
    scale = float(x.max())
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
    if w.shape != x.shape or np.any(~np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be finite, > 0 and one per distance")
    if method not in ("rlm", "wls"):
        raise ValueError(f"method must be 'rlm' or 'wls' (got {method!r})")
    unique = np.unique(x)
    if unique.size < 2 * min_points:
        raise ValueError(f"distance must hold at least {2 * min_points} distinct values for a two-piece fit "
                         f"(got {unique.size})")
    if knees is None:
        inner = unique[min_points - 1:unique.size - min_points]
        if inner.size > max_candidates:
            inner = inner[np.unique(np.linspace(0, inner.size - 1, max_candidates).round().astype(int))]
        candidates = inner
    else:
        candidates = np.asarray(knees, dtype=float).reshape(-1)
    profile = _knee_profile(x, y, w, candidates, continuous=continuous, min_points=min_points,
                            min_fraction=min_fraction, scale=scale)
    # the knee of least residual among those whose curve is a seek curve, where any is: a knee far out can
    # fit a flat profile a little better with a long piece that would start below zero (atlas10k's seek
    # curve under a slow interface, in some seeds), and that is no drive's
    physical = profile[profile["physical"]]
    knee = float((physical if len(physical) else profile).sort_values("rss")["knee"].iloc[0])
    profile = profile[["knee", "rss"]]  # the profile as results and files carry it
    s = x <= knee
    xn, kn = x / scale, knee / scale
    sw = np.sqrt(w)

    def run(X, rows):
        if method == "rlm":
            # RLM takes no weights: rows scaled by sqrt(w) (equivalent for Huber's T up to the scale).
            return sm.RLM(y[rows] * sw[rows], X * sw[rows, None], M=sm.robust.norms.HuberT()).fit()
        return sm.WLS(y[rows], X, weights=w[rows]).fit()

    # Coefficients are fitted against distance / scale (conditioning); J maps them
    # to (short_offset, short_sqrt, long_offset, long_per_cylinder) in the caller's units.
    if continuous:
        X = np.column_stack((np.ones_like(xn), np.sqrt(np.minimum(xn, kn)), np.maximum(xn - kn, 0.0)))
        res = run(X, np.ones_like(x, dtype=bool))
        theta, cov_t = np.asarray(res.params), np.asarray(res.cov_params())
        J = np.array([[1.0, 0.0, 0.0],
                      [0.0, 1.0 / np.sqrt(scale), 0.0],
                      [1.0, np.sqrt(kn), -kn],
                      [0.0, 0.0, 1.0 / scale]])
        results, df_resid = (res,), float(res.df_resid)
    else:
        rs = run(sm.add_constant(np.sqrt(xn[s]), has_constant="add"), s)
        rl = run(sm.add_constant(xn[~s], has_constant="add"), ~s)
        theta = np.concatenate((np.asarray(rs.params), np.asarray(rl.params)))
        cov_t = np.zeros((4, 4))
        cov_t[:2, :2] = np.asarray(rs.cov_params())
        cov_t[2:, 2:] = np.asarray(rl.cov_params())
        J = np.diag([1.0, 1.0 / np.sqrt(scale), 1.0, 1.0 / scale])
        results, df_resid = (rs, rl), float(rs.df_resid + rl.df_resid)
    covariance = np.full((5, 5), np.nan)  # the knee is profiled: no variance
    covariance[:4, :4] = J @ cov_t @ J.T
    u = distance_unit
    units = ("s", f"s/sqrt({u})", "s", f"s/{u}", u)
    values = [*(J @ theta), knee]
    parameters = Parameters(Parameter(name, float(v), 0.0 if name == "knee_cylinders" else -np.inf, np.inf, unit)
                            for name, v, unit in zip(TWO_PIECE_PARAMS, values, units))
    residual = y - two_piece_seek_time_s(x, *values)
    points = (pd.DataFrame({"distance": x, "seek_time_s": y}).groupby("distance")["seek_time_s"]
              .agg(mean_s="mean", count="size").reset_index())
    return TwoPieceFit(parameters, covariance, int(x.size), df_resid, method, continuous, distance_unit,
                       float(x.min()), float(x.max()), residual_diagnostics(x, residual), profile,
                       points=points, results=results)


@dataclass(frozen=True, eq=False)
class TableFit(FitResult):
    """The measured-table seek curve: the mean seek time per distance, with its
    spread, interpolated linearly between the points (DiskSim's rule).

    Its parameters are the means (``mean_s[<distance>]``), their standard
    errors ``std_s / sqrt(count)`` (NaN for a single sample).
    """

    distance: np.ndarray
    mean_s: np.ndarray
    std_s: np.ndarray
    count: np.ndarray
    distance_unit: str
    diagnostics: dict
    model: ClassVar[str] = "table"

    def __post_init__(self):
        for name, dtype in (("distance", float), ("mean_s", float), ("std_s", float), ("count", np.int64)):
            object.__setattr__(self, name, frozen_array(name, getattr(self, name), dtype).reshape(-1))
        if not self.distance.size == self.mean_s.size == self.std_s.size == self.count.size:
            raise ValueError("distance, mean_s, std_s and count must have one length")

    @property
    def parameters(self) -> Parameters:
        return Parameters(Parameter(f"mean_s[{d:.6g}]", float(m), unit="s") for d, m in zip(self.distance, self.mean_s))

    @property
    def covariance(self) -> np.ndarray:
        variance = np.where(self.count > 1, self.std_s ** 2 / np.maximum(self.count, 1), np.nan)
        return np.diag(variance)

    @property
    def nobs(self) -> int:
        return int(self.count.sum())

    @property
    def df_resid(self) -> float:
        return float(self.nobs - self.distance.size)

    def predict(self, distance) -> np.ndarray:
        """Seek time [s]; 0 at distance 0; the last point's value beyond the table
        (linear between points: :func:`~diskmodel.model.drive.seek.table_seek_time_s`, DiskSim's rule)."""
        d = np.abs(np.asarray(distance, dtype=float))
        return table_seek_time_s(np.minimum(d, self.distance[-1]), self.distance, self.mean_s)

    def as_seek(self, scale: float = 1.0, reach=None) -> TableSeek:
        """A :class:`TableSeek` in units of *scale* fit units; with *reach*, extended flat
        to that distance (the last measured value). A negative mean (noise around a
        zero seek at the smallest distances) becomes 0, the model's bound."""
        d = self.distance / scale
        t = np.maximum(self.mean_s, 0.0)
        if reach is not None and reach > d[-1]:
            d = np.append(d, float(reach))
            t = np.append(t, t[-1])
        return TableSeek(d, t)

    def _summary_title(self) -> str:
        return f"measured seek table: {self.distance.size} distances [{self.distance_unit}], {self.nobs} samples"

    def _summary_notes(self) -> list[str]:
        return _diagnostic_lines(self.diagnostics)

    def plot(self, ax=None, alpha: float = 0.05):
        """The means with their intervals and the interpolated curve. Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        ci = self.conf_int(alpha)
        ax.errorbar(self.distance, self.mean_s * 1e3, yerr=(ci["upper"].to_numpy() - self.mean_s) * 1e3, fmt="o",
                    ms=3, color="C0", label="mean per distance")
        grid = np.geomspace(self.distance[0], self.distance[-1], 300)
        ax.plot(grid, self.predict(grid) * 1e3, color="C2", label="table (linear)")
        ax.set_xscale("log")
        ax.set_xlabel(f"seek distance [{self.distance_unit}]")
        ax.set_ylabel("seek time [ms]")
        ax.legend(fontsize="small")
        return ax


def fit_table(distance, seek_time_s, *, bins=None, distance_unit: str = "bytes",
              physical: bool = False) -> TableFit:
    """The measured-table curve: group samples by distance (or by *bins*, an
    array of bin edges), mean, standard deviation and count per group.

    *physical*: the means are those of the least-squares curve (weighted by the
    counts) that is non-negative and non-decreasing in distance, as a seek time
    is (a longer move never takes less time; none takes less than nothing):
    isotonic regression by pool-adjacent-violators (Barlow et al. 1972), then
    bounded below by 0, which is the constrained least-squares solution for an
    isotonic fit with a lower bound. The standard deviations stay each group's
    spread around its own mean."""
    if distance_unit not in DISTANCE_UNITS:
        raise ValueError(f"distance_unit = {distance_unit!r} must be one of {', '.join(DISTANCE_UNITS)}")
    x, y = seek_samples(distance, seek_time_s)
    if bins is None:
        keys, inverse = np.unique(x, return_inverse=True)
        centres = keys
    else:
        edges = np.asarray(bins, dtype=float)
        inverse = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)
        used = np.unique(inverse)
        remap = -np.ones(edges.size, dtype=int)
        remap[used] = np.arange(used.size)
        inverse = remap[inverse]
        centres = np.array([np.exp(np.mean(np.log(x[inverse == k]))) for k in range(used.size)])
    count = np.bincount(inverse)
    mean = np.bincount(inverse, weights=y) / count
    sq = np.bincount(inverse, weights=y * y) / count
    std = np.sqrt(np.maximum(sq - mean ** 2, 0.0) * count / np.maximum(count - 1, 1))
    order = np.argsort(centres)
    if physical:
        from scipy.optimize import isotonic_regression

        fitted = isotonic_regression(mean[order], weights=count[order].astype(float), increasing=True).x
        mean[order] = np.maximum(fitted, 0.0)
    fit = TableFit(centres[order], mean[order], std[order], count[order], distance_unit, {})
    return dataclasses.replace(fit, diagnostics=residual_diagnostics(x, y - fit.predict(x)))
