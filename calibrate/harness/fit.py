"""Fitters for measured seek curves and transfer-rate profiles, separate from the models.

* :func:`fit_two_piece`: the curve of Djordjevic & Timcenko (2015) eq. (7)
  (Ruemmler & Wilkes 1994): ``a + b*sqrt(d)`` up to a knee, ``c + s*d``
  beyond (by default continuous at the knee). The knee is chosen by the
  data: a profile over candidate knees (least squares for each), then the
  fit at the best knee with statsmodels, robustly (RLM, Huber's T) or by
  WLS, giving ``params``, ``bse`` and ``conf_int()``, and residual diagnostics.
* :func:`fit_table`: the measured-table curve (means per distance, monotone
  PCHIP interpolation as :class:`diskmodel.model.TableSeek`) as the alternative.
* :func:`test_flat` / :func:`fit_flat_latency`: for flash and virtual disks,
  where latency does not grow with distance, a test that says so (the slope
  of ``latency ~ sqrt(distance)`` is not significant, or too small to be a
  mechanical seek, and the sqrt model is no better than a constant) and a flat
  latency model (mean and percentiles of latency, per-byte transfer time).
* :func:`segment_rates`: change points of a rate profile (zone boundaries),
  by optimal partitioning of log-rates into constant pieces with a penalty.

Distances are in whatever unit the caller gives (bytes for the harness,
cylinders for DiskSim's tables); ``distance_unit`` names it. Times in seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = [
    "TwoPieceFit", "TableFit", "FlatTest", "FlatLatencyModel",
    "fit_two_piece", "fit_table", "test_flat", "fit_flat_latency", "segment_rates",
    "residual_diagnostics",
]

TWO_PIECE_PARAMS = ("short_offset_s", "short_sqrt_s", "long_offset_s", "long_slope_s", "knee")


def _xy(distance, seek_time_s):
    x = np.asarray(distance, dtype=float).reshape(-1)
    y = np.asarray(seek_time_s, dtype=float).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"distance and seek_time_s must have the same length ({x.size} != {y.size})")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("distance and seek_time_s must be finite (got NaN or inf)")
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


@dataclass(frozen=True, eq=False)
class TwoPieceFit:
    """A fitted two-piece seek curve (eq. 7) with its uncertainty.

    ``params`` and ``bse`` are pandas Series named by :data:`TWO_PIECE_PARAMS`
    (the knee has no standard error: it is chosen by the profile, whose
    residual sums are in ``profile``); ``cov`` is the covariance of the four
    coefficients. ``continuous``: the long piece was constrained to meet the
    short one at the knee (``long_offset_s`` is then derived, its standard
    error by the delta method). ``results`` are the statsmodels results.
    """

    params: pd.Series
    bse: pd.Series
    cov: np.ndarray
    results: tuple
    method: str
    continuous: bool
    distance_unit: str
    diagnostics: dict
    profile: pd.DataFrame
    df_resid: float
    model: str = "two_piece"

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Confidence intervals of the four coefficients (columns ``lower``, ``upper``;
        normal approximation, as statsmodels' RLM gives)."""
        from scipy.stats import norm

        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1) (got {alpha!r})")
        z = norm.ppf(1 - alpha / 2)
        names = list(TWO_PIECE_PARAMS[:4])
        p, se = self.params[names].to_numpy(), self.bse[names].to_numpy()
        return pd.DataFrame({"lower": p - z * se, "upper": p + z * se}, index=names)

    def predict(self, distance) -> np.ndarray:
        """Seek time [s] at distances (0 at distance 0)."""
        d = np.asarray(distance, dtype=float)
        p = self.params
        short = p["short_offset_s"] + p["short_sqrt_s"] * np.sqrt(np.abs(d))
        long = p["long_offset_s"] + p["long_slope_s"] * d
        return np.where(d == 0, 0.0, np.where(d <= p["knee"], short, long))

    def predict_band(self, distance, alpha: float = 0.05):
        """(prediction, lower, upper) of the mean seek time [s]: a pointwise
        confidence band from the coefficients' covariance (normal approximation)."""
        from scipy.stats import norm

        d = np.asarray(distance, dtype=float).reshape(-1)
        z = norm.ppf(1 - alpha / 2)
        short = d <= self.params["knee"]
        grad = np.column_stack((short * 1.0, short * np.sqrt(np.abs(d)), ~short * 1.0, ~short * d))
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", grad, self.cov, grad), 0.0))
        pred = self.predict(d)
        return pred, pred - z * se, pred + z * se

    def as_seek(self, scale: float = 1.0):
        """A :class:`diskmodel.model.TwoPieceSeek` for distances in units of *scale*
        fit units (e.g. bytes per cylinder). Raises ValueError where a fitted
        coefficient is negative (the model's bounds)."""
        from diskmodel.model import TwoPieceSeek

        p = self.params
        return TwoPieceSeek(float(p["short_offset_s"]), float(p["short_sqrt_s"]) * np.sqrt(scale),
                            float(p["long_offset_s"]), float(p["long_slope_s"]) * scale,
                            float(p["knee"]) / scale)

    def to_dict(self) -> dict:
        ci = self.conf_int()
        return {
            "model": self.model, "method": self.method, "continuous": self.continuous,
            "distance_unit": self.distance_unit,
            "params": {k: float(v) for k, v in self.params.items()},
            "bse": {k: (None if not np.isfinite(v) else float(v)) for k, v in self.bse.items()},
            "conf_int_95": {k: [float(ci.loc[k, "lower"]), float(ci.loc[k, "upper"])] for k in ci.index},
            "diagnostics": self.diagnostics,
        }

    def summary(self) -> str:
        ci = self.conf_int()
        lines = [f"two-piece seek fit ({self.method}, {'continuous' if self.continuous else 'free'} at the knee), "
                 f"distance in {self.distance_unit}, knee {self.params['knee']:.6g} {self.distance_unit} (profiled)"]
        for name in TWO_PIECE_PARAMS[:4]:
            lines.append(f"  {name:16s} {self.params[name]: .6g}  se {self.bse[name]:.3g}  "
                         f"95% [{ci.loc[name, 'lower']:.6g}, {ci.loc[name, 'upper']:.6g}]")
        d = self.diagnostics
        lines.append(f"  residuals: n={d['n']} rms {d['rms_s'] * 1e3:.4f} ms, MAD {d['mad_s'] * 1e3:.4f} ms, "
                     f"Durbin-Watson {d['durbin_watson']:.2f}")
        return "\n".join(lines)


def _lstsq_rss(X, y, w):
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    r = (y - X @ coef) * sw
    return float(r @ r)


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

    x, y = _xy(distance, seek_time_s)
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
            rss = _lstsq_rss(np.column_stack((np.ones_like(xn), np.sqrt(np.minimum(xn, kn)),
                                              np.maximum(xn - kn, 0.0))), y, w)
        else:
            rss = (_lstsq_rss(np.column_stack((np.ones(s.sum()), np.sqrt(xn[s]))), y[s], w[s])
                   + _lstsq_rss(np.column_stack((np.ones((~s).sum()), xn[~s])), y[~s], w[~s]))
        rows.append((float(knee), rss))
    if not rows:
        raise ValueError("knees: no candidate knee leaves enough distances on both sides")
    profile = pd.DataFrame(rows, columns=["knee", "rss"])
    knee = float(profile.loc[profile["rss"].idxmin(), "knee"])
    s = x <= knee
    kn = knee / scale
    sw = np.sqrt(w)

    def run(X, rows):
        if method == "rlm":
            # RLM takes no weights: rows scaled by sqrt(w) (equivalent for Huber's T up to the scale).
            return sm.RLM(y[rows] * sw[rows], X * sw[rows, None], M=sm.robust.norms.HuberT()).fit()
        return sm.WLS(y[rows], X, weights=w[rows]).fit()

    # Coefficients are fitted against distance / scale (conditioning); J maps them
    # to (short_offset, short_sqrt, long_offset, long_slope) in the caller's units.
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
    p4 = J @ theta
    cov = J @ cov_t @ J.T
    params = pd.Series([*p4, knee], index=list(TWO_PIECE_PARAMS))
    bse = pd.Series([*np.sqrt(np.maximum(np.diag(cov), 0.0)), np.nan], index=list(TWO_PIECE_PARAMS))
    fit = TwoPieceFit(params, bse, cov, results, method, continuous, distance_unit, {}, profile, df_resid)
    diagnostics = residual_diagnostics(x, y - fit.predict(x))
    object.__setattr__(fit, "diagnostics", diagnostics)
    return fit


@dataclass(frozen=True, eq=False)
class TableFit:
    """The measured-table seek curve: the mean seek time per distance, with its
    spread, interpolated monotonically (PCHIP) between the points."""

    distance: np.ndarray
    mean_s: np.ndarray
    std_s: np.ndarray
    count: np.ndarray
    distance_unit: str
    diagnostics: dict = field(default_factory=dict)
    model: str = "table"

    def predict(self, distance) -> np.ndarray:
        """Seek time [s]; 0 at distance 0; the last point's value beyond the table."""
        from scipy.interpolate import PchipInterpolator

        d = np.asarray(distance, dtype=float)
        xs = np.concatenate(([0.0], self.distance))
        ys = np.concatenate(([0.0], self.mean_s))
        inside = np.clip(d, 0.0, xs[-1])
        return np.where(d == 0, 0.0, PchipInterpolator(xs, ys, extrapolate=False)(inside))

    def as_seek(self, scale: float = 1.0, reach=None):
        """A :class:`diskmodel.model.TableSeek` in units of *scale* fit units; with
        *reach*, extended flat to that distance (the last measured value). A
        negative mean (noise around a zero seek at the smallest distances)
        becomes 0, the model's bound."""
        from diskmodel.model import TableSeek

        d = self.distance / scale
        t = np.maximum(self.mean_s, 0.0)
        if reach is not None and reach > d[-1]:
            d = np.append(d, float(reach))
            t = np.append(t, t[-1])
        return TableSeek(d, t)

    def to_dict(self) -> dict:
        return {"model": self.model, "distance_unit": self.distance_unit,
                "points": int(self.distance.size), "diagnostics": self.diagnostics}


def fit_table(distance, seek_time_s, *, bins=None, distance_unit: str = "bytes") -> TableFit:
    """The measured-table curve: group samples by distance (or by *bins*, an
    array of bin edges), mean, standard deviation and count per group."""
    x, y = _xy(distance, seek_time_s)
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
    fit = TableFit(centres[order], mean[order], std[order], count[order], distance_unit)
    object.__setattr__(fit, "diagnostics", residual_diagnostics(x, y - fit.predict(x)))
    return fit


@dataclass(frozen=True)
class FlatTest:
    """Is latency flat against distance (no mechanical seek)?

    ``flat`` is True unless the slope of ``latency ~ 1 + sqrt(distance)`` is
    significant (p < *alpha*, heteroskedasticity-robust), the sqrt model beats
    a constant by AIC, and the fitted rise over the distances measured is at
    least *min_rise_s* (a mechanical full-stroke seek takes milliseconds).
    """

    flat: bool
    slope_s: float
    slope_pvalue: float
    rise_s: float
    aic_constant: float
    aic_sqrt: float
    detail: str


def test_flat(distance, latency_s, *, alpha: float = 0.001, min_rise_s: float = 1e-3) -> FlatTest:
    import statsmodels.api as sm

    x, y = _xy(distance, latency_s)
    X = sm.add_constant(np.sqrt(x), has_constant="add")
    sqrt_fit = sm.OLS(y, X).fit(cov_type="HC3")
    const_fit = sm.OLS(y, np.ones((y.size, 1))).fit()
    slope = float(sqrt_fit.params[1])
    pvalue = float(sqrt_fit.pvalues[1])
    rise = slope * float(np.sqrt(x.max()) - np.sqrt(x.min()))
    significant = pvalue < alpha and sqrt_fit.aic < const_fit.aic - 10
    flat = not (significant and rise >= min_rise_s)
    detail = (f"latency ~ sqrt(distance): slope p={pvalue:.3g}, rise over the distances measured "
              f"{rise * 1e3:.3f} ms (a mechanical seek needs >= {min_rise_s * 1e3:g} ms), "
              f"AIC sqrt {sqrt_fit.aic:.1f} vs constant {const_fit.aic:.1f}")
    return FlatTest(flat, slope, pvalue, rise, float(const_fit.aic), float(sqrt_fit.aic), detail)


test_flat.__test__ = False  # not a pytest test despite the name


@dataclass(frozen=True)
class FlatLatencyModel:
    """Latency of a device with no mechanical seek: a request of S bytes takes
    ``latency_s + S * per_byte_s`` (latency from small reads, percentiles kept)."""

    mean_s: float
    std_s: float
    p50_s: float
    p90_s: float
    p99_s: float
    per_byte_s: float
    n: int
    model: str = "flat"

    def predict(self, size_bytes) -> np.ndarray:
        return self.mean_s + np.asarray(size_bytes, dtype=float) * self.per_byte_s

    def to_dict(self) -> dict:
        return {"model": self.model, "mean_s": self.mean_s, "std_s": self.std_s, "p50_s": self.p50_s,
                "p90_s": self.p90_s, "p99_s": self.p99_s, "per_byte_s": self.per_byte_s,
                "rate_bytes_per_s": (1.0 / self.per_byte_s) if self.per_byte_s > 0 else None, "n": self.n,
                "params": {"latency_s": self.mean_s, "per_byte_s": self.per_byte_s},
                "bse": {"latency_s": self.std_s / np.sqrt(max(self.n, 1)), "per_byte_s": None}}


def fit_flat_latency(latency_s, per_byte_s: float) -> FlatLatencyModel:
    y = np.asarray(latency_s, dtype=float).reshape(-1)
    if y.size == 0 or not np.all(np.isfinite(y)):
        raise ValueError("latency_s must be a non-empty array of finite numbers")
    q = np.percentile(y, [50, 90, 99])
    return FlatLatencyModel(float(y.mean()), float(y.std(ddof=1)) if y.size > 1 else 0.0,
                            float(q[0]), float(q[1]), float(q[2]), float(per_byte_s), int(y.size))


def segment_rates(location, rate, *, penalty: float | None = None, min_size: int = 1):
    """Change points of a rate profile: optimal partition of log(rate) into
    constant pieces minimising the squared error plus *penalty* per piece
    (default ``3 * sigma^2 * log(n)``, sigma from the median absolute first
    difference). Returns a list of index arrays, one per segment, in location order.
    """
    loc = np.asarray(location, dtype=float)
    r = np.asarray(rate, dtype=float)
    if loc.shape != r.shape or loc.size == 0:
        raise ValueError("location and rate must be non-empty and of one length")
    if np.any(~np.isfinite(r)) or np.any(r <= 0):
        raise ValueError("rate must be finite and > 0")
    order = np.argsort(loc, kind="stable")
    y = np.log(r[order])
    n = y.size
    if penalty is None:
        if n > 2:
            sigma = 1.4826 * np.median(np.abs(np.diff(y) - np.median(np.diff(y)))) / np.sqrt(2)
        else:
            sigma = 0.0
        sigma = max(sigma, 1e-4)  # rates are never known better than 0.01 %
        penalty = 3.0 * sigma ** 2 * np.log(max(n, 2)) * 2
    c1 = np.concatenate(([0.0], np.cumsum(y)))
    c2 = np.concatenate(([0.0], np.cumsum(y * y)))
    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    prev = np.zeros(n + 1, dtype=int)
    for end in range(1, n + 1):
        starts = np.arange(0, end - min_size + 1)
        if starts.size == 0:
            continue
        m = end - starts
        cost = (c2[end] - c2[starts]) - (c1[end] - c1[starts]) ** 2 / m
        total = best[starts] + cost + penalty
        k = int(np.argmin(total))
        best[end] = total[k]
        prev[end] = starts[k]
    segments = []
    end = n
    while end > 0:
        start = prev[end]
        segments.append(order[start:end])
        end = start
    return segments[::-1]
