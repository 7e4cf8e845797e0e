"""Zones of a transfer-rate profile: change points by optimal partitioning.

:func:`fit_zones` splits log(rate), in location order, into constant pieces
minimising the squared error plus a penalty per piece (optimal partitioning,
Jackson et al. 2005: exact, O(n^2), fine for the few hundred locations a
calibration measures). The penalty proposes the change points; a test keeps
them: two neighbouring pieces whose log-rates do not differ significantly by a
rank test (Mann-Whitney U, two-sided; Bonferroni-corrected over the places the
change point could have been put between the two pieces' outer ends) are
merged, the least significant pair first, until every remaining change is
significant. A rate measured through a host has a noise that is neither
Gaussian nor of one spread: a long read's rate is quantised by the track
changes it crosses (a few discrete values, runs of equal ones by chance), and
a read delayed by the host is slower by any amount (a heavy one-sided tail).
The penalty, which assumes Gaussian noise of one spread, proposes pieces such
noise makes (two neighbouring delayed locations, a run of one quantised
value); a rank test asks only that one piece's rates lie above the other's
more often than chance allows, whatever the noise's shape. Its price: a zone
of very few locations cannot be told from chance (with four against nine, all
of them apart, the corrected p-value is 0.034). Each piece is a zone; its
rate, the exponential of the piece's mean log-rate, is a parameter of the
result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .base import FitResult, Parameter, Parameters, frozen_array

__all__ = ["ZoneFit", "fit_zones"]


@dataclass(frozen=True, eq=False)
class ZoneFit(FitResult):
    """The zones found in a rate profile.

    ``segments``: one index array (into *location* and *rate* as given) per
    zone, in location order. Parameters ``rate_bytes_per_s[k]``: the zone's
    geometric mean rate, its standard error by the delta method from the
    spread of log-rate within the zone (NaN for a zone of one location).
    """

    location: np.ndarray
    rate: np.ndarray
    segments: tuple[np.ndarray, ...]
    penalty: float
    alpha: float = 0.05
    model: ClassVar[str] = "zones"

    def __post_init__(self):
        object.__setattr__(self, "location", frozen_array("location", self.location).reshape(-1))
        object.__setattr__(self, "rate", frozen_array("rate", self.rate).reshape(-1))
        object.__setattr__(self, "segments", tuple(frozen_array("segments", s, np.int64).reshape(-1)
                                                   for s in self.segments))

    def _log_stats(self):
        logs = [np.log(self.rate[s]) for s in self.segments]
        mean = np.array([v.mean() for v in logs])
        se = np.array([v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else np.nan for v in logs])
        return mean, se

    @property
    def parameters(self) -> Parameters:
        mean, _ = self._log_stats()
        return Parameters(Parameter(f"rate_bytes_per_s[{k}]", float(np.exp(m)), 0.0, np.inf, "bytes/s")
                          for k, m in enumerate(mean))

    @property
    def covariance(self) -> np.ndarray:
        mean, se = self._log_stats()
        return np.diag((np.exp(mean) * se) ** 2)

    @property
    def nobs(self) -> int:
        return int(self.rate.size)

    @property
    def df_resid(self) -> float:
        return float(self.rate.size - len(self.segments))

    def _summary_title(self) -> str:
        return (f"zones: {len(self.segments)} found in {self.nobs} locations (penalty {self.penalty:.3g}, "
                f"change points kept at family-wise level {self.alpha:g})")

    def plot(self, ax=None, alpha: float = 0.05):
        """Rate against location, with the zones' rates. Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        ax.plot(self.location, self.rate, ".", label="measured")
        for k, (s, rate) in enumerate(zip(self.segments, self.params)):
            ax.hlines(rate, self.location[s].min(), self.location[s].max(), color="C1",
                      label=f"{len(self.segments)} zones" if k == 0 else None)
        ax.set_xlabel("location")
        ax.set_ylabel("rate [bytes/s]")
        ax.legend(fontsize="small")
        return ax


def _merge_insignificant(y: np.ndarray, starts: list[int], alpha: float) -> list[int]:
    """The change points (*starts*: each piece's first index into *y*, the first 0) that survive
    the merge test of the module doc: while the least significant neighbouring pair's p-value
    (Mann-Whitney, two-sided), times the places its change point could lie between the pair's
    outer ends, exceeds *alpha*, that pair is merged and the test is made again."""
    from scipy import stats

    n = y.size
    starts = list(starts)
    while len(starts) > 1:
        edges = starts + [n]
        p = np.array([stats.mannwhitneyu(y[a:b], y[b:c], alternative="two-sided").pvalue * (c - a - 1)
                      for a, b, c in zip(edges[:-2], edges[1:-1], edges[2:])])
        j = int(np.argmax(p))
        if p[j] <= alpha:
            break
        del starts[j + 1]
    return starts


def fit_zones(location, rate, *, penalty: float | None = None, min_size: int = 1,
              noise_sigma: float | None = None, ends_single: bool = False, alpha: float = 0.05) -> ZoneFit:
    """Change points of a rate profile: the optimal partition of log(rate) (in
    location order) into constant pieces of at least *min_size* points, minimising
    the squared error plus *penalty* per piece (default ``6 * sigma^2 * log(n)``,
    sigma from the median absolute first difference, or *noise_sigma* where that is
    larger: the noise of one point's log-rate known otherwise, e.g. from repeats at
    one location; the median of first differences misses a noise that is zero at most
    points and large at a few, as a rate quantised by the track changes a read crosses).
    *ends_single*: the first and the last piece may hold fewer than *min_size* points.
    *alpha*: the family-wise level of the merge test (module doc) a change point must pass."""
    loc = np.asarray(location, dtype=float).reshape(-1)
    r = np.asarray(rate, dtype=float).reshape(-1)
    if loc.shape != r.shape or loc.size == 0:
        raise ValueError("location and rate must be non-empty and of one length")
    if np.any(~np.isfinite(r)) or np.any(r <= 0):
        raise ValueError("rate must be finite and > 0")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1) (got {alpha!r})")
    order = np.argsort(loc, kind="stable")
    y = np.log(r[order])
    n = y.size
    if penalty is None:
        if n > 2:
            sigma = 1.4826 * np.median(np.abs(np.diff(y) - np.median(np.diff(y)))) / np.sqrt(2)
        else:
            sigma = 0.0
        if noise_sigma is not None:
            if not np.isfinite(noise_sigma) or noise_sigma < 0:
                raise ValueError(f"noise_sigma must be a finite number >= 0 (got {noise_sigma!r})")
            sigma = max(sigma, float(noise_sigma))
        sigma = max(sigma, 1e-4)  # rates are never known better than 0.01 %
        penalty = 3.0 * sigma ** 2 * np.log(max(n, 2)) * 2
    c1 = np.concatenate(([0.0], np.cumsum(y)))
    c2 = np.concatenate(([0.0], np.cumsum(y * y)))
    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    prev = np.zeros(n + 1, dtype=int)
    for end in range(1, n + 1):
        # a piece at either end of the profile may be shorter than min_size (with ends_single):
        # the innermost or outermost zone can be narrower than the spacing of the locations
        starts = np.arange(0, end) if ends_single and end == n else np.arange(0, end - min_size + 1)
        if ends_single and end < n and end < min_size:
            starts = np.arange(0, 1)
        if starts.size == 0:
            continue
        m = end - starts
        cost = (c2[end] - c2[starts]) - (c1[end] - c1[starts]) ** 2 / m
        total = best[starts] + cost + penalty
        k = int(np.argmin(total))
        best[end] = total[k]
        prev[end] = starts[k]
    starts = []
    end = n
    while end > 0:
        end = int(prev[end])
        starts.append(end)
    starts = _merge_insignificant(y, starts[::-1], alpha)
    segments = tuple(order[a:b] for a, b in zip(starts, starts[1:] + [n]))
    return ZoneFit(loc, r, segments, float(penalty), float(alpha))
