"""Predict PostMark throughput on a disk, layout and file system, and fit the
model's free parameters to measurements.

:func:`predict` evaluates Djordjevic & Timcenko (2015) eqs. (1)-(12) for a
PostMark run: T_FSA (eq. 1, :mod:`diskmodel.model.filesystem`) plus, on an
LVM layout, T_LVM_MO (eqs. 10-12, :mod:`diskmodel.model.volumes`), and
reports read and write throughput the way PostMark does (bytes read and
written divided by the whole run's elapsed time).

Fitters are separate from the model (astropy.modeling / lmfit style):
:func:`fit_lvm_mapping` fits MD_mapping and FB_mapping (bounded >= 0) and
:func:`fit_io_parameters` the I/O path parameters a paper does not report
(file-data path rate, effective host transfer rate, page cache size,
CPU per file operation), both with
``scipy.optimize.least_squares`` on log throughput ratios, returning a
:class:`FitResult` with params, bse, conf_int(), summary(), plot() and
_repr_html_.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._checks import finite_scalar, show, whole_number
from .filesystem import FileSystem, PageCache, file_system_access_time
from .volumes import LvmMapping, Partition, lvm_mapping_overhead_s, mapping_complexity
from .workload import PostMarkConfig, PostMarkCounts, as_counts

KIB = 1024
MIB = 1024 * 1024


def format_postmark_rate(bytes_per_s: float) -> str:
    """A rate as PostMark 1.5 prints it: "2.99 megabytes per second".

    PostMark's ``scalef``: megabytes (2^20 bytes) above one megabyte, else
    kilobytes (2^10), two decimals.
    """
    value = finite_scalar("bytes_per_s", bytes_per_s, nonnegative=True)
    if value / MIB > 1:
        return f"{value / MIB:.2f} megabytes per second"
    return f"{value / KIB:.2f} kilobytes per second"


@dataclass(frozen=True)
class Prediction:
    """Predicted PostMark results and their breakdown by equation term.

    Attributes
    ----------
    read_throughput_bytes_per_s, write_throughput_bytes_per_s : float
        Bytes read / written over the whole run's elapsed time, as PostMark
        reports them [bytes/s].
    elapsed_s : float
        T_LVM_AT = T_FSA + T_LVM_MO (eq. 10), or T_FSA natively [s]; with
        ``FileSystem.overlapped_writeback`` the busiest pipeline stage
        instead (``details["stages"]``).
    terms : dict
        T_DO, T_MO, T_FL, T_DFA, T_J (eq. 1), T_LVM_MO (eq. 10) [s] as busy
        times, and T_overlap (<= 0): the time hidden by the overlap of
        asynchronous write-back with the application and of the stages with
        each other (0 in the serial model).  They sum to elapsed_s.
    lvm_parts : dict
        T_LVM_MO split: mechanistic_s (the extent map's effect on seeks and
        zone rates, against a native partition at the first PV), md_mapping_s
        and fb_mapping_s (the empirical MD_mapping and FB_mapping costs) and
        request_mapping_s (the per-request cost, :class:`LvmMapping`) [s].
    dst_parts : dict
        seek_s, rotation_s, transfer_s, overhead_s (T_DST's other terms) and
        cache_s (eq. 2 hits and copies) over all terms [s].
    term_parts : dict of dict
        The same per term of eq. (1).
    io_counts, details : dict
        From :class:`diskmodel.model.filesystem.FsaResult`.
    counts : PostMarkCounts
    """

    read_throughput_bytes_per_s: float
    write_throughput_bytes_per_s: float
    elapsed_s: float
    terms: dict
    lvm_parts: dict
    dst_parts: dict
    term_parts: dict
    io_counts: dict
    details: dict
    counts: PostMarkCounts = field(repr=False)

    def postmark_units(self) -> dict:
        """Read and write throughput as PostMark prints them."""
        return {"read": format_postmark_rate(self.read_throughput_bytes_per_s),
                "write": format_postmark_rate(self.write_throughput_bytes_per_s)}

    def to_frame(self):
        """A pandas DataFrame: one row per quantity (value, unit)."""
        import pandas as pd

        rows = [("read_throughput", self.read_throughput_bytes_per_s, "bytes/s"),
                ("write_throughput", self.write_throughput_bytes_per_s, "bytes/s"),
                ("elapsed", self.elapsed_s, "s")]
        rows += [(name, value, "s") for name, value in self.terms.items()]
        rows += [(f"T_LVM_MO.{name}", value, "s") for name, value in self.lvm_parts.items()]
        rows += [(f"T_DST.{name}", value, "s") for name, value in self.dst_parts.items()]
        frame = pd.DataFrame(rows, columns=["quantity", "value", "unit"]).set_index("quantity")
        return frame

    def _repr_html_(self):
        units = self.postmark_units()
        head = (f"<p><b>PostMark prediction</b>: read {units['read']}, write {units['write']}, "
                f"elapsed {self.elapsed_s:.1f} s</p>")
        return head + self.to_frame()._repr_html_()


def _native_twin(layout):
    """A native partition at the layout's first physical byte with its size."""
    start = int(layout.segment_table()["physical_start_bytes"][0])
    return Partition(start, int(layout.size_bytes), "native twin")


def predict(disk, layout, filesystem: FileSystem | None = None, workload=None, cache: PageCache | None = None,
            lvm_mapping: LvmMapping | None = None) -> Prediction:
    """PostMark read/write throughput and the eq. (1)/(10) breakdown.

    Parameters
    ----------
    disk : Disk
    layout : Partition, LinearVolume or StripedVolume
    filesystem : FileSystem
        Default ``FileSystem()`` (ext3, ordered, 4 KiB blocks).
    workload : PostMarkConfig or PostMarkCounts
        Default ``PostMarkConfig()`` (PostMark's defaults).
    cache : PageCache
        Default ``PageCache()``.
    lvm_mapping : LvmMapping
        Empirical MD_mapping/FB_mapping costs; default zero (mechanistic part only).
        Ignored (no cost) on a native partition.
    """
    filesystem = FileSystem() if filesystem is None else filesystem
    workload = PostMarkConfig() if workload is None else workload
    cache = PageCache() if cache is None else cache
    lvm_mapping = LvmMapping() if lvm_mapping is None else lvm_mapping
    if not isinstance(lvm_mapping, LvmMapping):
        raise ValueError(f"lvm_mapping must be an LvmMapping (got {type(lvm_mapping).__name__})")
    counts = as_counts(workload)

    complexity = mapping_complexity(layout)

    def empirical(result):
        md, fb = lvm_mapping_overhead_s(layout, result.io_counts["metadata_ios"],
                                        result.io_counts["data_block_ios"], lvm_mapping)
        rq = complexity * lvm_mapping.request_mapping_s * result.io_counts["data_requests"]
        return float(md) + float(fb) + float(rq)

    if layout.n_disks > 1:
        # The file-system model runs on one drive's geometry; spreading a run over
        # several drives (and their parallelism) is not modelled, so refuse it.
        raise ValueError(f"layout spans {layout.n_disks} disks: predict() models one disk; use "
                         "diskmodel.model.scenarios for striping over independent disks")
    is_lvm = mapping_complexity(layout) > 0
    result = file_system_access_time(disk, layout, filesystem, counts, cache,
                                     _extra_time_s=empirical if is_lvm else None)
    md, fb = lvm_mapping_overhead_s(layout, result.io_counts["metadata_ios"], result.io_counts["data_block_ios"],
                                    lvm_mapping)
    md, fb = float(md), float(fb)
    rq = float(complexity * lvm_mapping.request_mapping_s * result.io_counts["data_requests"])
    mechanistic = 0.0
    fsa_terms = dict(result.terms)
    if is_lvm:
        twin = file_system_access_time(disk, _native_twin(layout), filesystem, counts, cache)
        mechanistic = result.total_s - twin.total_s
        # T_FSA proper is the native twin's; the extent map's effect is reported in T_LVM_MO.
        fsa_terms = dict(twin.terms)
    lvm_total = mechanistic + md + fb + rq
    busy = sum(fsa_terms.values()) + lvm_total
    if filesystem.overlapped_writeback:
        # pipeline: the fixed point max(application, media, link + MD/FB mapping costs)
        elapsed = float(result.details["elapsed_s"])
    else:
        elapsed = busy
    terms = {**fsa_terms, "T_LVM_MO": lvm_total, "T_overlap": elapsed - busy}
    details = dict(result.details)
    details["stages"] = result.stage_times(md + fb + rq)
    total = counts.total
    return Prediction(
        read_throughput_bytes_per_s=total.bytes_read / elapsed,
        write_throughput_bytes_per_s=total.bytes_written / elapsed,
        elapsed_s=elapsed, terms=terms,
        lvm_parts={"mechanistic_s": mechanistic, "md_mapping_s": md, "fb_mapping_s": fb,
                   "request_mapping_s": rq},
        dst_parts=result.dst_breakdown(), term_parts=result.parts, io_counts=result.io_counts,
        details=details, counts=counts)


# --------------------------------------------------------------------------
# Fitting

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


@dataclass(frozen=True)
class FitResult:
    """Parameters fitted by least squares on log(predicted/measured) throughput.

    Attributes
    ----------
    names : tuple of str
    params : dict
        Best-fit values.
    bse : dict
        Standard errors from the Jacobian at the optimum (covariance
        s^2 (J^T J)^-1, s^2 = residual sum of squares / max(1, n - p));
        nan where a parameter sits at a bound or is not identified.
    bounds : dict
        (lower, upper) per parameter.
    residuals : ndarray
        log(predicted / measured) per measured cell at the optimum.
    cells : list of str
        Labels of the residuals.
    success : bool
    message : str
    """

    names: tuple
    params: dict
    bse: dict
    bounds: dict
    residuals: np.ndarray
    cells: list
    success: bool
    message: str

    def conf_int(self, alpha: float = 0.05) -> dict:
        """Normal-approximation confidence intervals {name: (low, high)}."""
        from scipy.stats import norm

        alpha = finite_scalar("alpha", alpha, positive=True)
        if alpha >= 1:
            raise ValueError(f"alpha must lie in (0, 1) (got {alpha!r})")
        z = float(norm.ppf(1 - alpha / 2))
        return {n: (self.params[n] - z * self.bse[n], self.params[n] + z * self.bse[n]) for n in self.names}

    def to_frame(self):
        import pandas as pd

        ci = self.conf_int()
        return pd.DataFrame({"value": [self.params[n] for n in self.names],
                             "bse": [self.bse[n] for n in self.names],
                             "ci_low": [ci[n][0] for n in self.names], "ci_high": [ci[n][1] for n in self.names],
                             "lower_bound": [self.bounds[n][0] for n in self.names],
                             "upper_bound": [self.bounds[n][1] for n in self.names]},
                            index=list(self.names))

    def summary(self) -> str:
        lines = [f"least squares on log throughput: {len(self.residuals)} cells, "
                 f"rms {float(np.sqrt(np.mean(self.residuals ** 2))) if len(self.residuals) else 0:.3f}, "
                 f"{'converged' if self.success else 'NOT converged'} ({self.message})"]
        lines.append(self.to_frame().to_string())
        return "\n".join(lines)

    def _repr_html_(self):
        return f"<pre>{self.summary()}</pre>"

    def plot(self, ax=None):
        """Residuals per cell (percent); returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        pct = 100 * np.expm1(self.residuals)
        ax.bar(range(len(pct)), pct)
        ax.set_xticks(range(len(pct)))
        ax.set_xticklabels(self.cells, rotation=60, ha="right")
        ax.set_ylabel("predicted / measured - 1 [%]")
        ax.axhline(0, color="k", lw=0.8)
        return ax


def _fit(cases, names, initial, bounds, apply, x_scale):
    from scipy.optimize import least_squares

    cases = list(cases)
    if not cases or not all(isinstance(c, Case) for c in cases):
        raise ValueError("cases must be a non-empty sequence of Case")
    counts = {}
    labels = []
    for i, case in enumerate(cases):
        for kind in ("read", "write"):
            if getattr(case, f"{kind}_throughput_bytes_per_s") is not None:
                labels.append(f"{case.label or i}:{kind}")

    def residuals(x):
        out = []
        for i, case in enumerate(cases):
            key = id(case.workload)
            if key not in counts:
                counts[key] = as_counts(case.workload)
            kwargs = apply(case, dict(zip(names, x)))
            p = predict(kwargs["disk"], case.layout, kwargs["filesystem"], counts[key], kwargs["cache"],
                        kwargs["lvm_mapping"])
            for kind, predicted in (("read", p.read_throughput_bytes_per_s), ("write", p.write_throughput_bytes_per_s)):
                measured = getattr(case, f"{kind}_throughput_bytes_per_s")
                if measured is not None:
                    out.append(math.log(predicted / float(measured)))
        return np.array(out)

    lower = np.array([bounds[n][0] for n in names], dtype=float)
    upper = np.array([bounds[n][1] for n in names], dtype=float)
    x0 = np.clip(np.array(initial, dtype=float), lower, upper)
    solution = least_squares(residuals, x0, bounds=(lower, upper), x_scale=np.asarray(x_scale, dtype=float),
                             diff_step=1e-3, method="trf")
    r = solution.fun
    J = solution.jac
    dof = max(1, len(r) - len(names))
    s2 = float(r @ r) / dof
    bse = {}
    try:
        cov = np.linalg.pinv(J.T @ J) * s2
        for i, n in enumerate(names):
            at_bound = solution.active_mask[i] != 0
            bse[n] = float(np.sqrt(cov[i, i])) if (not at_bound and cov[i, i] > 0) else float("nan")
    except np.linalg.LinAlgError:  # pragma: no cover
        bse = {n: float("nan") for n in names}
    return FitResult(tuple(names), dict(zip(names, map(float, solution.x))), bse,
                     {n: tuple(bounds[n]) for n in names}, r, labels, bool(solution.success),
                     str(solution.message))


def fit_lvm_mapping(cases, *, initial=None, bounds=None,
                    parameters=("md_mapping_s", "fb_mapping_s"), start_factors=(1.0, 30.0)) -> FitResult:
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

    Minimises the squared log ratios of predicted to measured throughput over
    the cases' measured cells with everything else held as given in each
    :class:`Case`.  Cases on native layouts carry no information about these
    parameters (complexity 0) and are rejected.
    """
    cases = list(cases)
    if any(mapping_complexity(c.layout) == 0 for c in cases):
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
        fit = _fit(cases, names, start, bounds, apply, x_scale=[scale[n] for n in names])
        fits.append(fit)
        if all(fit.params[n] != x0 for n, x0 in zip(names, start)):
            break  # every coefficient moved: not stuck on a flat stretch, no further start needed
    return min(fits, key=lambda fit: float(fit.residuals @ fit.residuals))


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
    """(disk, filesystem, cache) with fitted I/O-path *params* applied."""
    unknown = set(params) - set(IO_PARAMETER_BOUNDS)
    if unknown:
        raise ValueError(f"params: unknown I/O parameter(s) {sorted(unknown)}")
    out = _apply_io(Case(disk, Partition(0, 1), PostMarkConfig(), 1.0, filesystem=filesystem, cache=cache), params)
    return out["disk"], out["filesystem"], out["cache"]


def fit_io_parameters(cases, *, parameters=("interface_rate_bytes_per_s", "page_cache_bytes"), initial=None,
                      bounds=None, cache_starts=8) -> FitResult:
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
    fits = [_fit(cases, names, [start[n] for n in names], bounds, _apply_io, x_scale) for start in starts]
    costs = np.array([float(f.residuals @ f.residuals) for f in fits])
    best = costs.min()
    good = [f for f, c in zip(fits, costs) if c <= best * 1.001 + 1e-12]
    return min(good, key=lambda f: f.params.get("page_cache_bytes", 0.0))
