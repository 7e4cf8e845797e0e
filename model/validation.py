"""Comparing predicted with measured service times: DiskSim's demerit figure.

Ruemmler & Wilkes (1994) and DiskSim's validation suite judge a disk model by
the *demerit*: the root mean square of the horizontal distance between the
measured and the predicted cumulative distribution functions of the service
time. Here it is computed on exact empirical quantiles: at each probability
level p = 0.0001, 0.0002, ..., 1 the distance is ``Q_measured(p) -
Q_predicted(p)``, with ``Q(p)`` the smallest sample x such that the empirical
CDF at x reaches p (the ``ceil(p n)``-th smallest value). Pure numpy.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from ._checks import finite_array, finite_scalar

#: Most probability levels of probability_levels (a step of 1e-7): each level is
#: a quantile of both samples, and DiskSim's demerit uses 1e-4.
MAX_LEVELS = 10**7

__all__ = ["TraceValidation", "demerit_s", "empirical_quantiles", "mean_error_percent", "probability_levels"]


def probability_levels(step: float = 1e-4) -> np.ndarray:
    """The levels step, 2 step, ..., 1 [dimensionless] (exact multiples of *step*)."""
    step = finite_scalar("step", step, positive=True, maximum=1.0)
    count = int(round(1.0 / step))
    if count > MAX_LEVELS:
        raise ValueError(f"step must be >= {1 / MAX_LEVELS:g} (at most {MAX_LEVELS} levels; got {step!r})")
    if count < 1 or abs(count * step - 1.0) > 1e-9:
        raise ValueError(f"step must divide 1 (got {step!r})")
    return np.arange(1, count + 1) / count


def empirical_quantiles(samples, levels) -> np.ndarray:
    """Exact empirical quantiles: the ceil(p n)-th smallest sample for each level p."""
    values = np.sort(finite_array("samples", samples).ravel())
    if values.size == 0:
        raise ValueError("samples must not be empty")
    levels = finite_array("levels", levels)
    if np.any((levels <= 0) | (levels > 1)):
        raise ValueError("levels must lie in (0, 1]")
    # ceil with a guard against p*n landing a hair above an integer
    rank = np.ceil(levels * values.size - 1e-9).astype(np.int64)
    return values[np.clip(rank, 1, values.size) - 1]


def demerit_s(measured_s, predicted_s, step: float = 1e-4) -> float:
    """RMS horizontal distance [s] between the measured and predicted CDFs."""
    levels = probability_levels(step)
    difference = empirical_quantiles(measured_s, levels) - empirical_quantiles(predicted_s, levels)
    return float(np.sqrt(np.mean(difference ** 2)))


def mean_error_percent(measured_s, predicted_s) -> float:
    """(mean predicted - mean measured) / mean measured [%]."""
    measured = finite_array("measured_s", measured_s, nonnegative=True, nonempty=True)
    predicted = finite_array("predicted_s", predicted_s, nonnegative=True, nonempty=True)
    if measured.mean() == 0:
        raise ValueError("measured_s must not be all zero (the error is relative to its mean)")
    return float((predicted.mean() - measured.mean()) / measured.mean() * 100.0)


@dataclass(frozen=True, eq=False)
class TraceValidation:
    """Measured against predicted service times of one trace.

    Attributes
    ----------
    disk : str
    measured_s, predicted_s : ndarray
        Per-request service times [s].
    details : dict of arrays
        Extra per-request columns (is_write, lbn, blocks, hit, ...).
    reference_demerit_s : float or None
        A published demerit to compare with (DiskSim's), [s].
    """

    disk: str
    measured_s: np.ndarray
    predicted_s: np.ndarray
    details: dict = field(default_factory=dict)
    reference_demerit_s: float | None = None

    def __post_init__(self):
        measured = finite_array("measured_s", self.measured_s, nonnegative=True).ravel()
        predicted = finite_array("predicted_s", self.predicted_s, nonnegative=True).ravel()
        if measured.shape != predicted.shape or measured.size == 0:
            raise ValueError("measured_s and predicted_s must be non-empty and of equal length")
        object.__setattr__(self, "measured_s", measured)
        object.__setattr__(self, "predicted_s", predicted)
        if self.reference_demerit_s is not None:
            finite_scalar("reference_demerit_s", self.reference_demerit_s, nonnegative=True)

    @property
    def requests(self) -> int:
        return int(self.measured_s.size)

    @property
    def demerit_s(self) -> float:
        return demerit_s(self.measured_s, self.predicted_s)

    @property
    def demerit_ms(self) -> float:
        return self.demerit_s * 1e3

    @property
    def mean_measured_s(self) -> float:
        return float(self.measured_s.mean())

    @property
    def mean_predicted_s(self) -> float:
        return float(self.predicted_s.mean())

    @property
    def demerit_pct_of_mean(self) -> float:
        """Demerit as a percentage of the measured mean service time [%]."""
        return self.demerit_s / self.mean_measured_s * 100.0

    @property
    def mean_error_pct(self) -> float:
        return mean_error_percent(self.measured_s, self.predicted_s)

    @property
    def ratio_to_reference(self) -> float | None:
        if self.reference_demerit_s is None:
            return None
        return self.demerit_s / self.reference_demerit_s

    def as_dict(self) -> dict:
        """The figures of the ``validate-trace --json`` output (times in ms)."""
        out = {
            "disk": self.disk, "requests": self.requests,
            "demerit_ms": round(self.demerit_ms, 6),
            "demerit_pct_of_mean": round(self.demerit_pct_of_mean, 4),
            "mean_measured_ms": round(self.mean_measured_s * 1e3, 6),
            "mean_predicted_ms": round(self.mean_predicted_s * 1e3, 6),
            "mean_error_pct": round(self.mean_error_pct, 4),
        }
        if self.reference_demerit_s is not None:
            out["disksim_demerit_ms"] = round(self.reference_demerit_s * 1e3, 6)
            out["ratio_to_disksim"] = round(self.ratio_to_reference, 4)
        return out

    def to_frame(self):
        """Per-request frame: measured, predicted, residual [ms] and the details."""
        import pandas as pd
        frame = pd.DataFrame({
            "measured_ms": self.measured_s * 1e3,
            "predicted_ms": self.predicted_s * 1e3,
            "residual_ms": (self.predicted_s - self.measured_s) * 1e3,
        })
        for name, values in self.details.items():
            frame[name] = np.asarray(values)
        return frame

    def summary(self) -> str:
        lines = [
            f"Trace validation: {self.disk}",
            f"  requests                 {self.requests}",
            f"  mean measured            {self.mean_measured_s * 1e3:.3f} ms",
            f"  mean predicted           {self.mean_predicted_s * 1e3:.3f} ms  ({self.mean_error_pct:+.2f} %)",
            f"  demerit                  {self.demerit_ms:.3f} ms  ({self.demerit_pct_of_mean:.2f} % of the mean)",
        ]
        if self.reference_demerit_s is not None:
            lines.append(f"  DiskSim's demerit        {self.reference_demerit_s * 1e3:.3f} ms  "
                         f"(ratio {self.ratio_to_reference:.2f})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                       for k, v in self.as_dict().items())
        return f"<table><caption>Trace validation: {html.escape(self.disk)}</caption>{rows}</table>"

    def plot(self, ax=None):
        """Measured and predicted service-time CDFs [ms]; returns the Axes."""
        import matplotlib.pyplot as plt
        if ax is None:
            _, ax = plt.subplots()
        levels = np.arange(1, self.requests + 1) / self.requests
        ax.step(np.sort(self.measured_s) * 1e3, levels, where="post", label="measured")
        ax.step(np.sort(self.predicted_s) * 1e3, levels, where="post", label="predicted")
        ax.set_xlabel("service time [ms]")
        ax.set_ylabel("cumulative fraction of requests")
        ax.set_title(f"{self.disk}: demerit {self.demerit_ms:.3f} ms ({self.demerit_pct_of_mean:.1f} % of mean)")
        ax.legend()
        return ax
