"""Fitting the PostMark model's free parameters to measured throughput.

Fitters are kept apart from the model (astropy.modeling / lmfit style):
:func:`fit_lvm_mapping` fits the LVM mapping costs of Djordjevic & Timcenko
(2015), eq. (12) (MD_mapping, FB_mapping, bounded >= 0), and
:func:`fit_io_parameters` the I/O-path parameters a paper does not report
(file-data path rate, effective host transfer rate, page cache size, CPU per
file operation), both with ``scipy.optimize.least_squares`` on one log
elapsed-time ratio per measured cell (:class:`PostMarkFit`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .._checks import finite_scalar, show, whole_number
from ..filesystems.filesystem import FileSystem, PageCache
from ..predict import predict
from ..stacks.stack import stack_on
from ..stacks.volumes import Partition
from ..stacks.lvm_mapping import LvmMapping
from ..predictions.workload import PostMarkConfig, as_counts
from .base import FitResult, Parameter, Parameters, frozen_array, least_squares_covariance
from ..units import MIB


@dataclass(frozen=True)
class Case:
    """One measured configuration for fitting.

    Attributes
    ----------
    disk, layout, filesystem, workload, cache, lvm_mapping
        As for :func:`predict` (the fitted parameters override theirs).
    read_throughput_bytes_per_s, write_throughput_bytes_per_s : float or None
        Measured values [bytes/s], > 0 (None: not measured).
    label : str
    """

    disk: object
    layout: object
    workload: object
    read_throughput_bytes_per_s: float | None = None
    write_throughput_bytes_per_s: float | None = None
    filesystem: FileSystem = field(default_factory=FileSystem)
    cache: PageCache = field(default_factory=PageCache)
    lvm_mapping: LvmMapping = field(default_factory=LvmMapping)
    label: str = ""

    def __post_init__(self):
        measured = [v for v in (self.read_throughput_bytes_per_s, self.write_throughput_bytes_per_s) if v is not None]
        if not measured:
            raise ValueError("read_throughput_bytes_per_s or write_throughput_bytes_per_s must be given")
        for name in ("read_throughput_bytes_per_s", "write_throughput_bytes_per_s"):
            value = getattr(self, name)
            if value is not None:
                finite_scalar(name, value, positive=True)
        for name, kind in (("filesystem", FileSystem), ("cache", PageCache), ("lvm_mapping", LvmMapping)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be a {kind.__name__} (got {show(getattr(self, name))})")


@dataclass(frozen=True, eq=False)
class PostMarkFit(FitResult):
    """Parameters fitted by least squares on log elapsed-time ratios, one per PostMark cell.

    Attributes
    ----------
    parameters : Parameters
        Best-fit values with the fit's bounds and units.
    covariance : ndarray
        s^2 (J^T J)^-1 over the parameters off their bounds, from the
        Jacobian at the optimum (s^2 = residual sum of squares / df_resid);
        NaN for a parameter at a bound, and everywhere when there are no
        more cells than parameters (nothing is left to estimate s^2 from).
    residuals : ndarray
        log(predicted / measured throughput) per cell at the optimum: a
        cell's read and write throughput are bytes over one elapsed time, so
        the cell gives one residual, log(implied / predicted elapsed time),
        with the measured elapsed time implied by the throughput(s) given
        (the geometric mean where both are).
    cells : tuple of str
        Labels of the residuals.
    df_resid : float
        Cells less the parameters off their bounds.
    success : bool
    message : str
    """

    parameters: Parameters
    covariance: np.ndarray
    residuals: np.ndarray
    cells: tuple
    df_resid: float
    success: bool
    message: str
    model: ClassVar[str] = "postmark"

    def __post_init__(self):
        p = len(self.parameters)
        object.__setattr__(self, "covariance", frozen_array("covariance", self.covariance).reshape(p, p))
        object.__setattr__(self, "residuals", frozen_array("residuals", self.residuals).reshape(-1))
        object.__setattr__(self, "cells", tuple(self.cells))
        if len(self.cells) != self.residuals.size:
            raise ValueError(f"cells must label every residual ({self.residuals.size}; got {len(self.cells)})")

    @property
    def nobs(self) -> int:
        return int(self.residuals.size)

    def _summary_title(self) -> str:
        rms = float(np.sqrt(np.mean(self.residuals ** 2))) if self.nobs else 0.0
        return (f"least squares on log elapsed time: {self.nobs} cells, rms {rms:.3f}, "
                f"{'converged' if self.success else 'NOT converged'} ({self.message})")

    def plot(self, ax=None, alpha: float = 0.05):
        """Residuals per cell (percent); returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        pct = 100 * np.expm1(self.residuals)
        ax.bar(range(len(pct)), pct)
        ax.set_xticks(range(len(pct)))
        ax.set_xticklabels(self.cells, rotation=60, ha="right")
        ax.set_ylabel("predicted / measured throughput - 1 [%]")
        ax.axhline(0, color="k", lw=0.8)
        return ax


def _cell_residual(case, prediction) -> float:
    """log(implied / predicted elapsed time): one residual per cell, whatever it measured.

    PostMark reports bytes read and written over one elapsed time, so a cell's
    read and write throughput carry one piece of information, not two.
    """
    total = prediction.counts.total
    implied = []
    for kind, moved in (("read", total.bytes_read), ("write", total.bytes_written)):
        measured = getattr(case, f"{kind}_throughput_bytes_per_s")
        if measured is None:
            continue
        if moved <= 0:
            raise ValueError(f"cases: {case.label or 'a case'} gives {kind}_throughput_bytes_per_s={measured!r}, "
                             f"but its workload moves no {kind} bytes")
        implied.append(math.log(moved / float(measured)))
    return float(np.mean(implied)) - math.log(prediction.elapsed_s)


def _fit(cases, names, initial, bounds, apply, x_scale, units):
    from scipy.optimize import least_squares

    cases = list(cases)
    if not cases or not all(isinstance(c, Case) for c in cases):
        raise ValueError("cases must be a non-empty sequence of Case")
    counts = {}
    labels = tuple(case.label or str(i) for i, case in enumerate(cases))

    def residuals(x):
        out = []
        for case in cases:
            key = id(case.workload)
            if key not in counts:
                counts[key] = as_counts(case.workload)
            kwargs = apply(case, dict(zip(names, x)))
            p = predict(stack_on(kwargs["disk"], case.layout, kwargs["filesystem"]), counts[key], kwargs["cache"],
                        kwargs["lvm_mapping"])
            out.append(_cell_residual(case, p))
        return np.array(out)

    lower = np.array([bounds[n][0] for n in names], dtype=float)
    upper = np.array([bounds[n][1] for n in names], dtype=float)
    x0 = np.clip(np.array(initial, dtype=float), lower, upper)
    solution = least_squares(residuals, x0, bounds=(lower, upper), x_scale=np.asarray(x_scale, dtype=float),
                             diff_step=1e-3, method="trf")
    r = solution.fun
    covariance, dof = least_squares_covariance(solution, x_scale)  # a parameter at a bound is held there
    parameters = Parameters(Parameter(n, float(v), float(lo), float(hi), units[n])
                            for n, v, lo, hi in zip(names, solution.x, lower, upper))
    return PostMarkFit(parameters, covariance, r, labels, float(dof), bool(solution.success), str(solution.message))


def fit_lvm_mapping(cases, *, initial=None, bounds=None,
                    parameters=("md_mapping_s", "fb_mapping_s"), start_factors=(1.0, 30.0)) -> PostMarkFit:
    """Fit MD_mapping and FB_mapping (:class:`LvmMapping`, bounded >= 0).

    *parameters*: which coefficients of :class:`LvmMapping` to fit (default
    the paper's two, eq. 12; any distinct names of ``LvmMapping.BOUNDS``);
    *initial* their starting values (default 1e-4 s for md_mapping_s and
    request_mapping_s, 1e-5 s for fb_mapping_s).  The fit starts from
    *initial* times each of *start_factors* in turn, until every
    coefficient has moved from where it started, and keeps the best: with
    ``FileSystem(overlapped_writeback=True)`` a small mapping cost can hide
    under another pipeline stage, where the residuals do not depend on it
    and a single start would stay where it began.

    Minimises the squared log ratios of measured to predicted elapsed time,
    one per case (:class:`PostMarkFit`), with everything else held as given
    in each :class:`Case`.  Cases on native layouts carry no information about these
    parameters (complexity 0) and are rejected.
    """
    cases = list(cases)
    if any(c.layout.mapping_complexity == 0 for c in cases):
        raise ValueError("cases: every case must be on an LVM layout (a native one has no mapping cost)")
    names = tuple(parameters)
    if not names or len(set(names)) != len(names) or any(n not in LvmMapping.BOUNDS for n in names):
        raise ValueError(f"parameters must be distinct names from {sorted(LvmMapping.BOUNDS)} (got {parameters!r})")
    scale = {"md_mapping_s": 1e-4, "fb_mapping_s": 1e-5, "request_mapping_s": 1e-4}
    unknown = sorted(set(bounds or {}) - set(LvmMapping.BOUNDS))
    if unknown:
        raise ValueError(f"bounds: unknown LvmMapping parameter(s) {unknown}")
    bounds = {**LvmMapping.BOUNDS, **(bounds or {})}
    _check_bounds(bounds, names)
    if initial is None:
        initial = [scale[n] for n in names]
    else:
        if isinstance(initial, (str, bytes)) or len(initial) != len(names):
            raise ValueError(f"initial must give one value per parameter ({len(names)}; got {initial!r})")
        initial = [finite_scalar(f"initial[{name!r}]", value) for name, value in zip(names, initial)]
        _check_initial(dict(zip(names, initial)), bounds, names)

    def apply(case, values):
        return {"disk": case.disk, "filesystem": case.filesystem, "cache": case.cache,
                "lvm_mapping": case.lvm_mapping.evolve(**values)}

    factors = [finite_scalar("start_factors", f, positive=True) for f in start_factors]
    if not factors:
        raise ValueError(f"start_factors must be a non-empty sequence of finite values > 0 (got {start_factors!r})")
    fits = []
    for f in factors:
        start = [f * v for v in initial]
        fit = _fit(cases, names, start, bounds, apply, [scale[n] for n in names], _UNITS)
        fits.append(fit)
        if all(fit.params[n] != x0 for n, x0 in zip(names, start)):
            break  # every coefficient moved: not stuck on a flat stretch, no further start needed
    return min(fits, key=lambda fit: float(fit.residuals @ fit.residuals))


#: Units of every parameter these fitters fit (LvmMapping's and the I/O path's).
_UNITS = {"md_mapping_s": "s", "fb_mapping_s": "s", "request_mapping_s": "s",
          "interface_rate_bytes_per_s": "bytes/s", "page_cache_bytes": "bytes", "cpu_per_file_operation_s": "s",
          "file_data_rate_bytes_per_s": "bytes/s"}

#: Bounds of the I/O-path parameters fitted by fit_io_parameters [their units].
IO_PARAMETER_BOUNDS = {
    "interface_rate_bytes_per_s": (1.0e6, 3.0e8),   # from PIO-era hosts to SATA 3 Gb/s
    "page_cache_bytes": (0.0, 8.0 * 1024 ** 3),
    "cpu_per_file_operation_s": (0.0, 0.1),
    "file_data_rate_bytes_per_s": (1.0e5, 1.0e10),
}
_IO_SCALE = {"interface_rate_bytes_per_s": 1.0e7, "page_cache_bytes": 1.0e8, "cpu_per_file_operation_s": 1.0e-4,
             "file_data_rate_bytes_per_s": 1.0e7}
_IO_INITIAL = {"interface_rate_bytes_per_s": 2.0e7, "page_cache_bytes": 256.0 * MIB, "cpu_per_file_operation_s": 1e-4,
               "file_data_rate_bytes_per_s": 2.0e7}


#: Most page-cache starting points of fit_io_parameters (each is a whole fit).
MAX_CACHE_STARTS = 64


def _check_bounds(bounds, names):
    """Every fitted parameter's (lower, upper) finite with 0 <= lower < upper (ValueError naming it)."""
    for name in names:
        pair = bounds[name]
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"bounds[{name!r}] must be (lower, upper) (got {show(pair)})")
        lo = finite_scalar(f"bounds[{name!r}] lower", pair[0], nonnegative=True)
        hi = finite_scalar(f"bounds[{name!r}] upper", pair[1])
        if not lo < hi:
            raise ValueError(f"bounds[{name!r}] must satisfy 0 <= lower < upper (got {show(pair)})")


def _check_initial(initial, bounds, names):
    """A starting value the caller gave must lie within its bounds (it is not clamped into them;
    the default starts, and the multiples of fit_lvm_mapping's start_factors, are)."""
    for name in names:
        lo, hi = bounds[name]
        if not lo <= initial[name] <= hi:
            raise ValueError(f"initial[{name!r}] must lie within its bounds [{lo!r}, {hi!r}] "
                             f"(got {initial[name]!r})")


def _apply_io(case, values):
    disk, cache, fs = case.disk, case.cache, case.filesystem
    if "interface_rate_bytes_per_s" in values:
        disk = disk.evolve(interface_rate_bytes_per_s=values["interface_rate_bytes_per_s"])
    if "page_cache_bytes" in values:
        cache = cache.evolve(size_bytes=values["page_cache_bytes"])
    if "cpu_per_file_operation_s" in values:
        fs = fs.evolve(cpu_per_file_operation_s=values["cpu_per_file_operation_s"])
    if "file_data_rate_bytes_per_s" in values:
        fs = fs.evolve(file_data_rate_bytes_per_s=values["file_data_rate_bytes_per_s"])
    return {"disk": disk, "filesystem": fs, "cache": cache, "lvm_mapping": case.lvm_mapping}


def apply_io_parameters(disk, filesystem: FileSystem, cache: PageCache, params: dict):
    """(disk, filesystem, cache) with fitted I/O-path *params* (a dict, or a fit's ``params``) applied."""
    params = dict(params)
    unknown = set(params) - set(IO_PARAMETER_BOUNDS)
    if unknown:
        raise ValueError(f"params: unknown I/O parameter(s) {sorted(unknown)}")
    out = _apply_io(Case(disk, Partition(0, 1), PostMarkConfig(), 1.0, filesystem=filesystem, cache=cache), params)
    return out["disk"], out["filesystem"], out["cache"]


def fit_io_parameters(cases, *, parameters=("interface_rate_bytes_per_s", "page_cache_bytes"), initial=None,
                      bounds=None, cache_starts=8) -> PostMarkFit:
    """Fit I/O-path parameters a paper does not report, on native runs.

    *parameters* is any subset of :data:`IO_PARAMETER_BOUNDS`:
    ``interface_rate_bytes_per_s`` (the effective host transfer rate, T_I
    of eq. 3, for every disk I/O), ``file_data_rate_bytes_per_s`` (the
    host-side cost per byte of file data only, :class:`FileSystem`),
    ``page_cache_bytes`` (P_H of eq. 2) and ``cpu_per_file_operation_s``
    (:class:`FileSystem`).  Fit them on native
    runs, then fit LVM mapping costs with them held.

    P_H = min(1, cache / working set) is flat once the cache holds every
    case's working set, so when ``page_cache_bytes`` is fitted the fit starts
    from *cache_starts* sizes spread geometrically over its bounds (plus the
    initial value) and keeps the best; among fits equally good (cost within
    0.1 %) the smallest page cache, the least the data require.  Its ``bse``
    is nan when it is not identified.
    """
    names = tuple(parameters)
    if not names or any(n not in IO_PARAMETER_BOUNDS for n in names) or len(set(names)) != len(names):
        raise ValueError(f"parameters must be distinct names from {sorted(IO_PARAMETER_BOUNDS)} (got {parameters!r})")
    unknown = sorted((set(bounds or {}) | set(initial or {})) - set(IO_PARAMETER_BOUNDS))
    if unknown:
        raise ValueError(f"bounds/initial: unknown I/O parameter(s) {unknown}")
    bounds = {**IO_PARAMETER_BOUNDS, **(bounds or {})}
    _check_bounds(bounds, names)
    given = {name: finite_scalar(f"initial[{name!r}]", value) for name, value in (initial or {}).items()}
    _check_initial(given, bounds, [n for n in names if n in given])
    initial = {**_IO_INITIAL, **given}
    whole = whole_number("cache_starts", cache_starts, minimum=1, maximum=MAX_CACHE_STARTS,
                         maximum_is="each start is a whole least-squares fit")
    x_scale = [_IO_SCALE[n] for n in names]
    starts = [dict(initial)]
    if "page_cache_bytes" in names:
        lo, hi = bounds["page_cache_bytes"]
        starts += [{**initial, "page_cache_bytes": c} for c in np.geomspace(max(lo, 8.0 * MIB), hi, whole)]
    fits = [_fit(cases, names, [start[n] for n in names], bounds, _apply_io, x_scale, _UNITS) for start in starts]
    costs = np.array([float(f.residuals @ f.residuals) for f in fits])
    best = costs.min()
    good = [f for f, c in zip(fits, costs) if c <= best * 1.001 + 1e-12]
    return min(good, key=lambda f: f.params.get("page_cache_bytes", 0.0))
