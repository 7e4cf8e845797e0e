"""Comparing predicted with measured service times: the demerit, two ways.

Ruemmler & Wilkes (1994) and DiskSim's validation suite judge a disk model by
the *demerit*: the root mean square of the horizontal distance between the
measured and the predicted cumulative distribution functions of the service
time, over the probability levels 0.0001, 0.0002, ..., 1. Two ways of taking
that distance are here:

* :func:`disksim_demerit_s`, DiskSim's own method, the one its published
  demerits were computed with and so the one our figures are compared with
  (:attr:`TraceValidation.demerit_s`, ``ratio_to_reference``). DiskSim does not
  keep the samples: it counts them into the buckets its ``statdefs`` file gives
  the "Physical access time" and "Trace access time" statistics
  (:data:`DISKSIM_ACCESS_TIME_BINS`: 1750 buckets about 1 % wide, 1 us up to
  0.1 ms), prints the cumulative fraction at each bucket's upper edge, and its
  ``rms`` tool interpolates linearly between those printed points. Here the
  same integer bucket arithmetic, the same printed rounding and the same
  interpolation are reproduced (src/disksim_stat.c, src/rms.c);
  tests/test_disksim_demerit.py checks them against DiskSim 4.0's output.
* :func:`quantile_demerit_s`, on exact empirical quantiles: at each level p the
  distance is ``Q_measured(p) - Q_predicted(p)``, with ``Q(p)`` the smallest
  sample x such that the empirical CDF at x reaches p (the ``ceil(p n)``-th
  smallest value). No binning; this was the demerit reported here first.

The two differ by a few percent on the same samples (buckets about 1 % of
the time wide, interpolation inside a bucket), so a figure of one kind is not
compared with a figure of the other. The binned method was adopted for the
comparison after the exact-quantile figures had been seen, because DiskSim's
published figures are binned: like is compared with like. Pure numpy.
"""
from __future__ import annotations

import functools
import html
from dataclasses import dataclass, field

import numpy as np

from .._checks import finite_array, finite_scalar

#: Most probability levels of probability_levels (a step of 1e-7): each level is
#: a quantile of both samples, and DiskSim's demerit uses 1e-4.
MAX_LEVELS = 10**7

#: rms.c's RMS_INCR: the step between the probability levels of compute_rms.
DISKSIM_RMS_STEP = 0.0001

#: x87's 64-bit significand holds value * scale exactly (53 + 10 bits) for a
#: scale below 2**10: DiskSim's 32-bit build truncates that exact product.
_MAX_EXACT_SCALE = 2**10 - 1
_INT32_LIMIT = 2**31

__all__ = ["DISKSIM_ACCESS_TIME_BINS", "DISKSIM_RMS_STEP", "DiskSimBins", "TraceValidation", "disksim_binned_cdf",
           "disksim_bucket_counts", "disksim_demerit_ms", "disksim_demerit_s", "disksim_rms_ms",
           "empirical_quantiles", "mean_error_percent", "probability_levels", "quantile_demerit_s"]


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


def quantile_demerit_s(measured_s, predicted_s, step: float = 1e-4) -> float:
    """RMS horizontal distance [s] between the measured and predicted CDFs, on exact empirical quantiles.

    Not DiskSim's figure (see :func:`disksim_demerit_s` and the module docstring).
    """
    levels = probability_levels(step)
    difference = empirical_quantiles(measured_s, levels) - empirical_quantiles(predicted_s, levels)
    return float(np.sqrt(np.mean(difference ** 2)))


# ---------------------------------------------------------------------------
# DiskSim's binned demerit: src/disksim_stat.c and src/rms.c of DiskSim 4.0
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class DiskSimBins:
    """A "large" distribution of DiskSim's ``statdefs`` file, growing buckets, no "equals" buckets.

    The statdefs entry reads ``Distribution size: buckets``, ``Scale/Equals:
    scale/0`` and ``Start start  step step  grow grow``. DiskSim
    (``stat_get_large_dist``) puts bucket i's lower edge, in integer units of
    1/scale ms, at ``starts[i]``: ``starts[0] = start``, ``starts[i+1] =
    starts[i] + step + (int)(|starts[i]| * grow / 100.0)``; the printed
    ``bucketno`` of ``stat_print_large_dist`` follows the same rule. Only the
    growing rule (grow >= 1) and Equals 0 are described: they are what the
    access-time statistics use.
    """

    buckets: int
    scale_per_ms: int
    start: int
    step: int
    grow_pct: int

    def __post_init__(self):
        for name in ("buckets", "scale_per_ms", "start", "step", "grow_pct"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be an int (got {value!r})")
        if self.buckets < 2:
            raise ValueError(f"buckets must be >= 2 (got {self.buckets!r})")
        if not 1 <= self.scale_per_ms <= _MAX_EXACT_SCALE:
            raise ValueError(f"scale_per_ms must lie in [1, {_MAX_EXACT_SCALE}] (got {self.scale_per_ms!r})")
        if self.start < 0:
            raise ValueError(f"start must be >= 0 (got {self.start!r})")
        if self.step < 1:
            raise ValueError(f"step must be >= 1 (got {self.step!r})")
        if self.grow_pct < 1:
            raise ValueError(f"grow_pct must be >= 1 (stat_update's grow = 0 rule is not described; "
                             f"got {self.grow_pct!r})")
        _bucket_starts(self)         # refuses buckets whose starts overflow DiskSim's 32-bit int

    def starts(self) -> np.ndarray:
        """Each bucket's lower edge [1/scale ms] (int64; DiskSim's ``largediststarts``)."""
        return _bucket_starts(self).copy()

    def printed_edges_ms(self) -> np.ndarray:
        """The first column of DiskSim's printed distribution, read back as rms reads it [ms].

        ``stat_print_large_dist`` prints ``bucketno / scale`` with ``%6.3f``
        (``%4d`` where scale is 1); rms reads it with ``%lf``.
        """
        starts = _bucket_starts(self)
        if self.scale_per_ms == 1:
            return starts.astype(float)
        return np.array([float(f"{value:.3f}") for value in starts / float(self.scale_per_ms)])


@functools.lru_cache(maxsize=8)
def _bucket_starts(bins: DiskSimBins) -> np.ndarray:
    # a recurrence: each start depends on the last (stat_get_large_dist);
    # |start| * grow / 100.0 truncated is floor division for the int operands
    starts = np.empty(bins.buckets, dtype=np.int64)
    value = bins.start
    for i in range(bins.buckets):
        if abs(value) * bins.grow_pct >= _INT32_LIMIT:
            raise ValueError(f"buckets {bins.buckets} overflow DiskSim's int (bucket {i} starts at {value})")
        starts[i] = value
        value += bins.step + abs(value) * bins.grow_pct // 100
    starts.setflags(write=False)
    return starts


#: "Physical access time" and "Trace access time" in DiskSim 4.0's
#: valid/statdefs: ``Distribution size: 1750``, ``Scale/Equals: 1000/0``,
#: ``Start 0  step 1  grow 1`` (buckets of 1 us up to 0.1 ms, then 1 % wide).
DISKSIM_ACCESS_TIME_BINS = DiskSimBins(buckets=1750, scale_per_ms=1000, start=0, step=1, grow_pct=1)


def _scaled_ints(name: str, values_ms: np.ndarray, scale: int) -> np.ndarray:
    """``(int)(value * scale)`` as DiskSim's 32-bit x87 build computes it (stat_update).

    The x87 product of a double and an int below 2**10 is exact (64-bit
    significand), and the conversion truncates it: so the result is the floor
    of the exact product, which is computed here in integers from the double's
    significand and exponent (a float64 product could round up onto the next
    integer).
    """
    too_big = values_ms * scale >= 2.0 * _INT32_LIMIT
    if np.any(too_big):
        raise ValueError(f"{name} must be below {_INT32_LIMIT / scale:g} ms (DiskSim's scaled int; got "
                         f"{float(values_ms[too_big][0])!r} ms)")
    fraction, exponent = np.frexp(values_ms)
    significand = np.ldexp(fraction, 53).astype(np.int64)   # exact: value = significand * 2**(exponent - 53)
    product = significand * scale                             # exact in int64: < 2**63
    # value < 2**32 ms, so exponent <= 32 and the shift is a division by a
    # power of two; a right shift of a non-negative int is its floor (and 0
    # once the shift reaches 63)
    shift = np.minimum(53 - exponent.astype(np.int64), 63)
    scaled = np.right_shift(product, shift)
    over = scaled >= _INT32_LIMIT
    if np.any(over):
        raise ValueError(f"{name} must be below {_INT32_LIMIT / scale:g} ms (DiskSim's scaled int; got "
                         f"{float(values_ms[over][0])!r} ms)")
    return scaled


def _bucket_counts(name: str, values_ms, bins: DiskSimBins) -> np.ndarray:
    # >= 0: a negative value would go to bucket 0, and rms.c would then read
    # before its arrays (compute_rms looks at the point before the first y >= p)
    values = finite_array(name, values_ms, nonnegative=True, nonempty=True).ravel()
    scaled = _scaled_ints(name, values, bins.scale_per_ms)
    starts = _bucket_starts(bins)
    # stat_update's binary search over largediststarts: the first start above the int
    bucket = np.minimum(np.searchsorted(starts, scaled, side="right"), bins.buckets - 1)
    bucket = np.where(scaled < bins.start, 0, bucket)
    return np.bincount(bucket, minlength=bins.buckets)


def _binned_cdf(name: str, values_ms, bins: DiskSimBins) -> tuple[np.ndarray, np.ndarray]:
    counts = _bucket_counts(name, values_ms, bins)
    density = counts / float(counts.sum())
    # "%f" keeps 6 decimals (correctly rounded, as Python's formatting), and rms reads that back
    cumulative = np.array([float(f"{value:f}") for value in np.cumsum(density)])
    if cumulative[0] > 0.0:
        # only where start > 0: compute_rms would read before its arrays
        raise ValueError(f"{name} must not lie below the first bucket's start ({bins.start} / {bins.scale_per_ms} "
                         f"ms; got {counts[0]} values there)")
    reached = np.flatnonzero(cumulative >= 1.0)
    if reached.size == 0:
        raise ValueError(f"{name}: the printed distribution of {counts.sum()} values never reads 1.000000")
    end = int(reached[0]) + 1
    return bins.printed_edges_ms()[:end], cumulative[:end]


def disksim_bucket_counts(values_ms, bins: DiskSimBins = DISKSIM_ACCESS_TIME_BINS) -> np.ndarray:
    """How many of *values_ms* DiskSim counts into each bucket (``stat_update``, src/disksim_stat.c).

    *values_ms* [ms] (DiskSim's unit), >= 0. A value is scaled to an int,
    ``(int)(value * scale)`` (truncated), and goes to bucket ``i + 1`` where
    ``starts[i] <= int < starts[i + 1]``; the last bucket takes everything from
    ``starts[buckets - 2]`` up (open-ended) and bucket 0 what lies below
    ``start``. The printed row of bucket i shows ``starts[i] / scale`` and the
    cumulative fraction up to bucket i: the fraction of values whose scaled int
    lies below ``starts[i]``.
    """
    return _bucket_counts("values_ms", values_ms, bins)


def disksim_binned_cdf(values_ms, bins: DiskSimBins = DISKSIM_ACCESS_TIME_BINS) -> tuple[np.ndarray, np.ndarray]:
    """The points of DiskSim's printed distribution that ``rms`` reads: (edges [ms], cumulative fractions).

    ``stat_print_large_dist`` (src/disksim_stat.c) prints, for each bucket,
    ``bucketno / scale``, the count, the density ``count / n`` and the running
    sum of the densities (a double, added in bucket order), each with ``%f``;
    ``get_line`` (src/rms.c) reads the first and the fourth column back and
    stops after the first row whose cumulative fraction reads >= 1.0. Both
    arrays end at that row.
    """
    return _binned_cdf("values_ms", values_ms, bins)


def _interpolated_levels_ms(edges_ms: np.ndarray, cumulative: np.ndarray, levels: np.ndarray) -> np.ndarray:
    # compute_rms: the first printed point with y >= p, and linear interpolation
    # from the point before it (y is non-decreasing, so searchsorted's left side)
    upper = np.searchsorted(cumulative, levels, side="left")
    lower = upper - 1
    fraction = (levels - cumulative[lower]) / (cumulative[upper] - cumulative[lower])
    return edges_ms[lower] + fraction * (edges_ms[upper] - edges_ms[lower])


@functools.lru_cache(maxsize=1)
def _rms_levels() -> np.ndarray:
    # compute_rms: pnt = RMS_INCR, then pnt += RMS_INCR while pnt <= 1.0, in
    # double (a running sum, so cumsum, not k * step: 10000 levels, the last
    # 0.9999999999999062)
    levels = np.cumsum(np.full(int(round(1.0 / DISKSIM_RMS_STEP)) + 2, DISKSIM_RMS_STEP))
    levels = levels[levels <= 1.0]
    levels.setflags(write=False)
    return levels


def disksim_rms_ms(measured_ms, predicted_ms, bins: DiskSimBins = DISKSIM_ACCESS_TIME_BINS) -> float:
    """DiskSim's demerit [ms] of two samples [ms]: ``compute_rms`` (src/rms.c) on their printed distributions.

    Each sample is binned and printed as DiskSim does (:func:`disksim_binned_cdf`);
    at the levels p = 0.0001, 0.0002, ... (a running double sum, while p <= 1)
    each printed CDF is inverted by linear interpolation between the printed
    point before the first one reaching p and that one, and the result is the
    root mean square of the differences. The first printed point is bucket 0,
    which holds no value >= start (cumulative 0), so every level has a point
    below it; values below start are refused.
    """
    return _rms_ms(("measured_ms", measured_ms), ("predicted_ms", predicted_ms), bins)


def _rms_ms(measured: tuple, predicted: tuple, bins: DiskSimBins) -> float:
    measured_edges, measured_cdf = _binned_cdf(*measured, bins)
    predicted_edges, predicted_cdf = _binned_cdf(*predicted, bins)
    levels = _rms_levels()
    difference = (_interpolated_levels_ms(measured_edges, measured_cdf, levels)
                  - _interpolated_levels_ms(predicted_edges, predicted_cdf, levels))
    return float(np.sqrt(np.sum(difference * difference) / levels.size))


def disksim_demerit_ms(measured_ms, predicted_ms) -> float:
    """DiskSim's demerit [ms] of service times [ms], on its access-time buckets (:data:`DISKSIM_ACCESS_TIME_BINS`)."""
    return disksim_rms_ms(measured_ms, predicted_ms, DISKSIM_ACCESS_TIME_BINS)


def disksim_demerit_s(measured_s, predicted_s) -> float:
    """DiskSim's demerit [s]: ``rms`` (src/rms.c) on the binned distributions DiskSim prints.

    The samples [s] are turned into DiskSim's unit (ms, ``value_s * 1e3``),
    counted into the "Physical access time" / "Trace access time" buckets of
    DiskSim 4.0's valid/statdefs (``stat_update``, src/disksim_stat.c),
    printed as ``stat_print_large_dist`` prints them and compared as
    ``compute_rms`` compares them; see :func:`disksim_rms_ms`. A value lying on
    a bucket edge to the last bit (a trace's whole microseconds) falls on the
    side its double's rounding puts it: the ms double DiskSim parses from a
    trace and ``value_s * 1e3`` may differ in that last bit. Times of 2**31 us
    (about 36 minutes) and more are refused: DiskSim's scaled int overflows.
    """
    measured = finite_array("measured_s", measured_s, nonnegative=True, nonempty=True)
    predicted = finite_array("predicted_s", predicted_s, nonnegative=True, nonempty=True)
    demerit_ms = _rms_ms(("measured_s", measured * 1e3), ("predicted_s", predicted * 1e3), DISKSIM_ACCESS_TIME_BINS)
    return demerit_ms * 1e-3


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

    Notes
    -----
    ``demerit_s`` / ``demerit_ms`` are DiskSim's binned demerit
    (:func:`disksim_demerit_s`), the figure DiskSim published and the one
    ``ratio_to_reference`` compares; ``quantile_demerit_s`` /
    ``quantile_demerit_ms`` the exact-quantile one (:func:`quantile_demerit_s`).
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
        """DiskSim's binned demerit [s] (:func:`disksim_demerit_s`)."""
        return disksim_demerit_s(self.measured_s, self.predicted_s)

    @property
    def demerit_ms(self) -> float:
        return self.demerit_s * 1e3

    @property
    def quantile_demerit_s(self) -> float:
        """The demerit on exact empirical quantiles [s] (:func:`quantile_demerit_s`)."""
        return quantile_demerit_s(self.measured_s, self.predicted_s)

    @property
    def quantile_demerit_ms(self) -> float:
        return self.quantile_demerit_s * 1e3

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
        """DiskSim's binned demerit of ours over the reference (DiskSim's published figure, binned too)."""
        if self.reference_demerit_s is None:
            return None
        return self.demerit_s / self.reference_demerit_s

    def as_dict(self) -> dict:
        """The figures of the ``validate-trace --json`` output (times in ms)."""
        out = {
            "disk": self.disk, "requests": self.requests,
            "demerit_ms": round(self.demerit_ms, 6),
            "demerit_pct_of_mean": round(self.demerit_pct_of_mean, 4),
            "quantile_demerit_ms": round(self.quantile_demerit_ms, 6),
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
            f"  demerit (DiskSim's bins) {self.demerit_ms:.3f} ms  ({self.demerit_pct_of_mean:.2f} % of the mean)",
            f"  exact-quantile demerit   {self.quantile_demerit_ms:.3f} ms",
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
