"""Latency that does not grow with distance: the test that says so, and the flat model.

For flash and virtual disks, where no head moves:

* :func:`flatness_test`: is latency flat against distance? The slope of
  ``latency ~ 1 + sqrt(distance)`` must be significant
  (heteroskedasticity-robust), the sqrt model must beat a constant by AIC,
  and the rise over the distances measured must be as large as a mechanical
  seek's before latency counts as growing.
* :func:`fit_flat_latency`: a request of S bytes takes ``latency_s + S *
  per_byte_s``: the mean and percentiles of small reads' latency, with the
  per-byte time given (from the measured transfer rate).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .base import FitResult, Parameter, Parameters, frozen_array
from .seek import seek_samples

__all__ = ["FlatnessTest", "FlatLatencyFit", "flatness_test", "fit_flat_latency"]


@dataclass(frozen=True, eq=False)
class FlatnessTest(FitResult):
    """Is latency flat against distance (no mechanical seek)?

    ``flat`` is True unless the slope of ``latency ~ 1 + sqrt(distance)``
    (parameters ``offset_s`` and ``sqrt_slope_s``, HC3 covariance) is
    significant (p < *alpha*), the sqrt model beats a constant by AIC, and the
    fitted rise over the distances measured is at least *min_rise_s* (a
    mechanical full-stroke seek takes milliseconds).
    """

    parameters: Parameters
    covariance: np.ndarray
    nobs: int
    df_resid: float
    flat: bool
    slope_pvalue: float
    rise_s: float
    aic_constant: float
    aic_sqrt: float
    detail: str
    model: ClassVar[str] = "flatness_test"

    def __post_init__(self):
        object.__setattr__(self, "covariance", frozen_array("covariance", self.covariance).reshape(2, 2))

    def _summary_title(self) -> str:
        return f"flatness test: {'flat' if self.flat else 'NOT flat'}; {self.detail}"


def flatness_test(distance, latency_s, *, alpha: float = 0.001, min_rise_s: float = 1e-3) -> FlatnessTest:
    """Test whether *latency_s* grows with *distance* (see :class:`FlatnessTest`)."""
    import statsmodels.api as sm

    x, y = seek_samples(distance, latency_s, time_name="latency_s")
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
    parameters = Parameters((Parameter("offset_s", float(sqrt_fit.params[0]), unit="s"),
                             Parameter("sqrt_slope_s", slope, unit="s/sqrt(distance unit)")))
    return FlatnessTest(parameters, np.asarray(sqrt_fit.cov_params()), int(y.size), float(sqrt_fit.df_resid),
                        flat, pvalue, rise, float(const_fit.aic), float(sqrt_fit.aic), detail)


@dataclass(frozen=True, eq=False)
class FlatLatencyFit(FitResult):
    """Latency of a device with no mechanical seek: a request of S bytes takes
    ``latency_s + S * per_byte_s`` (latency from small reads, percentiles kept).

    Parameters: ``latency_s`` (the mean, standard error std / sqrt(n)) and
    ``per_byte_s`` (given, not fitted: ``vary`` False, no standard error).
    """

    mean_s: float
    std_s: float
    p50_s: float
    p90_s: float
    p99_s: float
    per_byte_s: float
    n: int
    model: ClassVar[str] = "flat"

    @property
    def parameters(self) -> Parameters:
        return Parameters((Parameter("latency_s", self.mean_s, unit="s"),
                           Parameter("per_byte_s", self.per_byte_s, unit="s/byte", vary=False)))

    @property
    def covariance(self) -> np.ndarray:
        return np.diag([self.std_s ** 2 / max(self.n, 1), np.nan])

    @property
    def nobs(self) -> int:
        return self.n

    @property
    def df_resid(self) -> float:
        return float(self.n - 1)

    def predict(self, size_bytes) -> np.ndarray:
        """Latency [s] of requests of *size_bytes*."""
        return self.mean_s + np.asarray(size_bytes, dtype=float) * self.per_byte_s

    def _summary_title(self) -> str:
        return (f"flat latency model: mean {self.mean_s * 1e6:.1f} us, p50 {self.p50_s * 1e6:.1f} us, "
                f"p90 {self.p90_s * 1e6:.1f} us, p99 {self.p99_s * 1e6:.1f} us, "
                f"{1 / self.per_byte_s / 1e6:.1f} MB/s transfer")


def fit_flat_latency(latency_s, per_byte_s: float) -> FlatLatencyFit:
    """The flat latency model of small reads' *latency_s* [s], with *per_byte_s* [s/byte] given."""
    y = np.asarray(latency_s, dtype=float).reshape(-1)
    if y.size == 0 or not np.all(np.isfinite(y)):
        raise ValueError("latency_s must be a non-empty array of finite numbers")
    q = np.percentile(y, [50, 90, 99])
    return FlatLatencyFit(float(y.mean()), float(y.std(ddof=1)) if y.size > 1 else 0.0,
                          float(q[0]), float(q[1]), float(q[2]), float(per_byte_s), int(y.size))
