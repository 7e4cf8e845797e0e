"""Zones of a transfer-rate profile: change points by optimal partitioning.

:func:`fit_zones` splits log(rate), in location order, into constant pieces
minimising the squared error plus a penalty per piece (optimal partitioning,
Jackson et al. 2005: exact, O(n^2), fine for the few hundred locations a
calibration measures). The penalty proposes the change points; a test keeps
them: two neighbouring pieces that do not differ significantly (Bonferroni-
corrected over the places the change point could have been put between the
two pieces' outer ends) are merged, the least significant pair first, until
every remaining change is significant. A rate measured through a host has a
noise that is neither Gaussian nor of one spread: a long read's rate is
quantised by the track changes it crosses (a few discrete values, runs of
equal ones by chance), and a read delayed by the host is slower by any amount
(a heavy one-sided tail). The penalty, which assumes Gaussian noise of one
spread, proposes pieces such noise makes (two neighbouring delayed locations,
a run of one quantised value). Where two pieces' values interleave, the test
is by ranks (Mann-Whitney U), which asks only that one piece's rates lie above
the other's more often than chance allows, whatever the noise's shape; where
they do not interleave, ranks cannot confirm a piece of a few points at all,
and the step is weighed against the pieces' spread: by Welch's test on
medians (robust spreads, at least the profile's noise), and by Yuen's test on
trimmed means (Yuen 1974), the smaller p-value doubled. The median of a few
quantised values jumps by a quantum with one value more or fewer, and their
robust spread is that of the two clusters, so a zone's step between two pieces
of such values can fail the medians' test and pass the trimmed means'. With
*monotone*, the rate is taken to fall with location, as a zoned drive's does
inwards: a piece of a few points inside the profile above or below both its
neighbours is no zone. With *min_step_rate*, two neighbouring zones' rates
differ by at least that much: a zone holds at least one sector a track more
than the next inwards, so its rate is higher by at least one sector a
revolution, less what the track changes and the path take of it. Many
locations make a step far below that significant when the path's pace drifts
during the run; such a step is no zone's, and its pieces are merged first.
Each piece is a zone; its rate, the exponential of the piece's mean log-rate,
is a parameter of the result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.stats import median_abs_deviation

from .base import FitResult, Parameter, Parameters, frozen_array

__all__ = ["ZoneFit", "fit_zones"]

#: The fewest points a piece inside the profile shows its own spread with, in the merge test.
OWN_SPREAD_MIN = 5
#: The proposal's penalty per piece, in sigma^2 log(n) (fit_zones' default): the Schwarz criterion's for
#: a change of mean in noise of known spread (Yao 1988). The merge test, not the penalty, decides which
#: change points stand, so the penalty only has to propose every zone a profile of a few locations per
#: zone can show (at three times as much, a narrow zone whose step is a few noise spreads was never proposed).
PENALTY_LOG_N = 2.0
#: The share of each end of a piece trimmed in Yuen's test (Wilcox's usual 20 %).
YUEN_TRIM = 0.2


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


def _welch_p(left: np.ndarray, right: np.ndarray, floor: float, known=(None, None)) -> float:
    """Two-sided p-value of Welch's test that *left* and *right* have one level: each piece's level
    its median and its spread robust (the normalised median absolute deviation: a delayed read
    among a few does not hide the step), or *floor* where that is larger; where *known* gives a
    spread for a piece too small to show its own, that one in place of an own spread beyond *floor*.
    A spread from *floor* or *known* is taken as known: no degrees of freedom lost;
    Welch-Satterthwaite for the rest."""
    from scipy import stats

    v, inv_df = [], []
    for piece, sure in zip((left, right), known):
        own = float(median_abs_deviation(piece, scale="normal")) ** 2 if piece.size > 1 else 0.0
        if sure is not None:  # the given spread, whatever the piece's own few points show
            v.append(max(sure, floor) ** 2 / piece.size)
            inv_df.append(0.0)
            continue
        v.append(max(own, floor ** 2) / piece.size)
        inv_df.append(1.0 / (piece.size - 1) if own > floor ** 2 else 0.0)
    se2 = v[0] + v[1]
    t = abs(float(np.median(left) - np.median(right))) / np.sqrt(se2)
    denominator = v[0] ** 2 * inv_df[0] + v[1] ** 2 * inv_df[1]
    if denominator == 0.0:
        return float(2.0 * stats.norm.sf(t))
    return float(2.0 * stats.t.sf(t, se2 ** 2 / denominator))


def _yuen_p(left: np.ndarray, right: np.ndarray, floor: float, trim: float = YUEN_TRIM) -> float:
    """Two-sided p-value of Yuen's test (Yuen 1974) that *left* and *right* have one trimmed mean:
    Welch's test on the means of each piece's middle values (*trim* of each end cut), each piece's
    spread its winsorised variance, or *floor* where that is larger. The trimming keeps a host's
    delays (a one-sided tail) out of the means; unlike ranks, the means weigh how far the values
    lie apart, which a rate quantised to a few values by the track changes a read crosses needs
    (the ranks of two pieces of such values tie and overlap even across a zone's step)."""
    from scipy import stats

    d, h = [], []
    for piece in (left, right):
        x = np.sort(piece)
        g = int(trim * x.size)
        w = np.clip(x, x[g], x[x.size - 1 - g])
        hk = x.size - 2 * g
        var = max(float(np.var(w, ddof=1)) if x.size > 1 else 0.0, floor ** 2)
        d.append((x.size - 1) * var / (hk * max(hk - 1, 1)))
        h.append(hk)
    mean = [float(np.sort(p)[int(trim * p.size):p.size - int(trim * p.size)].mean()) for p in (left, right)]
    t = abs(mean[0] - mean[1]) / np.sqrt(d[0] + d[1])
    df = (d[0] + d[1]) ** 2 / sum(dk ** 2 / max(hk - 1, 1) for dk, hk in zip(d, h))
    return float(2.0 * stats.t.sf(t, df))


def _pair_p(left: np.ndarray, right: np.ndarray, floor: float, known=(None, None)) -> float:
    """The p-value of a change between two neighbouring pieces: by ranks (Mann-Whitney, two-sided)
    where their values interleave, as noise of any shape lets them; where every value of one lies
    beyond every value of the other, the ranks say no more than the pieces' sizes do, and the size
    of the step against the pieces' spread decides: where a piece is too small to show its own
    (*known* gives one), by Welch's test on medians; else by that and by Yuen's on trimmed means,
    the smaller p-value doubled (Bonferroni over the two: the medians' test is the stronger on a few
    points of one level, the trimmed means' on quantised values, whose median jumps by a quantum
    with one value more or fewer)."""
    from scipy import stats

    if left.max() < right.min() or right.max() < left.min():
        if known[0] is not None or known[1] is not None:
            return _welch_p(left, right, floor, known)
        return min(1.0, 2.0 * min(_welch_p(left, right, floor), _yuen_p(left, right, floor)))
    return float(stats.mannwhitneyu(left, right, alternative="two-sided").pvalue)


def _merge_insignificant(y: np.ndarray, starts: list[int], alpha: float, floor: float, sure_ends: int = 0,
                         small: int = 0, tail: float = 0.0, monotone: bool = False,
                         min_step_rate: float = 0.0) -> list[int]:
    """The change points (*starts*: each piece's first index into *y*, the first 0) that survive
    the merge test of the module doc: while the least significant neighbouring pair's p-value,
    times the places its change point could lie between the pair's outer ends, exceeds *alpha*,
    that pair is merged and the test is made again. A first or last piece of at most *sure_ends*
    points has its rates confirmed by the caller: its spread is *floor*; any other piece of at most
    *small* points, too few to show its own spread, has *tail*'s (where larger than *floor*) if its
    points disagree beyond *floor*. *monotone*: the rate falls from piece to piece (a zoned drive's
    does, inwards), so a piece of fewer than OWN_SPREAD_MIN points inside the profile whose level lies
    beyond both its neighbours' (a few neighbours that each strayed alike: one repeat of each delayed,
    or one track change more) is merged into the nearer first, whatever the test says. Before either,
    the neighbouring pair whose median rates (exp of *y*) lie closest is merged while they lie closer
    than *min_step_rate*: no two zones of a drive are that close."""

    def spread(a, b):
        if (a == 0 or b == n) and b - a <= sure_ends:
            return floor
        if b - a <= small:
            own = float(median_abs_deviation(y[a:b], scale="normal")) if b - a > 1 else 0.0
            return tail if own > floor else floor
        return None

    n = y.size
    starts = list(starts)
    while len(starts) > 1:
        edges = starts + [n]
        if min_step_rate > 0:
            gaps = np.abs(np.diff([np.exp(np.median(y[a:b])) for a, b in zip(edges[:-1], edges[1:])]))
            k = int(np.argmin(gaps))
            if gaps[k] < min_step_rate:
                del starts[k + 1]
                continue
        p = [_pair_p(y[a:b], y[b:c], floor, (spread(a, b), spread(b, c))) * (c - a - 1)
             for a, b, c in zip(edges[:-2], edges[1:-1], edges[2:])]
        if monotone:
            # a piece of a few points inside the profile whose level lies beyond both neighbours' is no
            # zone of a zoned drive (its rate falls from zone to zone inwards): it goes, into the nearer
            level = [float(np.median(y[a:b])) for a, b in zip(edges[:-1], edges[1:])]
            for k in range(1, len(level) - 1):
                if edges[k + 1] - edges[k] < OWN_SPREAD_MIN and \
                        (level[k] - level[k - 1]) * (level[k] - level[k + 1]) > 0:
                    near = k - 1 if abs(level[k] - level[k - 1]) <= abs(level[k] - level[k + 1]) else k
                    p[near] = np.inf
        j = int(np.argmax(p))
        if p[j] <= alpha:
            break
        del starts[j + 1]
    return starts


def fit_zones(location, rate, *, penalty: float | None = None, min_size: int = 1,
              noise_sigma: float | None = None, ends_single: bool = False, alpha: float = 0.05,
              tail_sigma: float | None = None, monotone: bool = False, min_step_rate: float = 0.0) -> ZoneFit:
    """Change points of a rate profile: the optimal partition of log(rate) (in
    location order) into constant pieces of at least *min_size* points, minimising
    the squared error plus *penalty* per piece (default ``PENALTY_LOG_N * sigma^2 * log(n)``,
    sigma from the median absolute first difference, or *noise_sigma* where that is
    larger: the noise of one point's log-rate known otherwise, e.g. from repeats at
    one location; the median of first differences misses a noise that is zero at most
    points and large at a few, as a rate quantised by the track changes a read crosses).
    *ends_single*: the first and the last piece may hold fewer than *min_size* points, and one of at
    most *min_size* points is taken as confirmed by the caller (measured again): its spread in the
    merge test is the profile's noise, not its own few points'.
    *alpha*: the family-wise level of the merge test (module doc) a change point must pass.
    *tail_sigma*: how far a single point strays from its neighbours where it does (the spikes the
    caller dropped: a host's delays); a piece of at most *min_size* points inside the profile, too
    few to show its own spread, is tested against this one (by default its own, with its few degrees
    of freedom).
    *monotone*: the profile's rate does not rise with location (zoned recording: fewer sectors per
    track inwards): a piece of fewer than OWN_SPREAD_MIN points inside it above or below both its
    neighbours is merged into the nearer (:func:`_merge_insignificant`).
    *min_step_rate*: the least difference [in *rate*'s units] between two neighbouring zones' rates
    (their pieces' median rates); two pieces closer than that are merged first, the closest pair
    first, whatever the test says (module doc)."""
    loc = np.asarray(location, dtype=float).reshape(-1)
    r = np.asarray(rate, dtype=float).reshape(-1)
    if loc.shape != r.shape or loc.size == 0:
        raise ValueError("location and rate must be non-empty and of one length")
    if np.any(~np.isfinite(r)) or np.any(r <= 0):
        raise ValueError("rate must be finite and > 0")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1) (got {alpha!r})")
    if not (np.isfinite(min_step_rate) and min_step_rate >= 0):
        raise ValueError(f"min_step_rate must be a finite number >= 0 (got {min_step_rate!r})")
    order = np.argsort(loc, kind="stable")
    y = np.log(r[order])
    n = y.size
    # the noise of one point's log-rate: the penalty's scale and the merge test's floor
    sigma = median_abs_deviation(np.diff(y), scale="normal") / np.sqrt(2) if n > 2 else 0.0
    if noise_sigma is not None:
        if not np.isfinite(noise_sigma) or noise_sigma < 0:
            raise ValueError(f"noise_sigma must be a finite number >= 0 (got {noise_sigma!r})")
        sigma = max(sigma, float(noise_sigma))
    sigma = max(sigma, 1e-4)  # rates are never known better than 0.01 %
    if penalty is None:
        penalty = PENALTY_LOG_N * sigma ** 2 * np.log(max(n, 2))
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
    if tail_sigma is not None and (not np.isfinite(tail_sigma) or tail_sigma < 0):
        raise ValueError(f"tail_sigma must be a finite number >= 0 (got {tail_sigma!r})")
    starts = _merge_insignificant(y, starts[::-1], alpha, sigma, min_size if ends_single else 0,
                                  min_size if tail_sigma is not None else 0, float(tail_sigma or 0.0),
                                  bool(monotone), float(min_step_rate))
    segments = tuple(order[a:b] for a, b in zip(starts, starts[1:] + [n]))
    return ZoneFit(loc, r, segments, float(penalty), float(alpha))
