"""Fitting the per-kind file-system costs the model cannot derive, and checking them held out.

Three costs of a file system on a host are not in its on-disk format and
no mkfs or mount option states them: the CPU time of its code per file
operation (``FileSystem.cpu_per_file_operation_s``: path lookup, inode and
directory handling, journal bookkeeping), the time a commit costs beyond
the blocks it writes (``FileSystem.commit_overhead_s``: the cache flush and
FUA write a commit waits for, the journal thread's work) and the host's
cost per byte of file data (``FileSystem.file_data_rate_bytes_per_s``:
page-cache write-back, checksums, the block layer's per-byte work).  They are fitted
per kind on measured runs of that kind (:class:`FsCase`): PostMark runs on
a native volume (:func:`diskmodel.model.filesystems.filesystem.file_system_access_time`),
fsync-bound writes
(:func:`diskmodel.model.filesystems.filesystem.synchronous_write_time_s`) and
sequential writes (:func:`diskmodel.model.filesystems.filesystem.sequential_write_time_s`),
by least squares on log(measured / predicted time), one residual per case,
with the bounds of :data:`BOUNDS` (``scipy.optimize.least_squares``; the
result is a :class:`~diskmodel.model.fit.postmark.PostMarkFit`, the
fitting API's result of log-time least squares).

:func:`leave_one_out` checks the fit: each case is predicted from a fit on
the kind's other cases.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._checks import finite_scalar, one_of, show
from ..filesystems.filesystem import (FileSystem, PageCache, file_system_access_time, sequential_write_time_s,
                                      synchronous_write_time_s)
from ..stacks.volume_on_disk import VolumeOnDisk
from ..predictions.workload import PostMarkConfig, PostMarkCounts, as_counts
from .base import Parameter, Parameters, least_squares_covariance
from .postmark import PostMarkFit

__all__ = ["BOUNDS", "PARAMETERS", "FsCase", "SequentialWrite", "SyncWrites", "fit_file_system_costs", "leave_one_out",
           "predicted_time_s"]

#: Bounds of the fitted costs [s].
BOUNDS = {"cpu_per_file_operation_s": (0.0, 0.01), "commit_overhead_s": (0.0, 0.1),
          "file_data_rate_bytes_per_s": (1.0e6, 1.0e11)}
_SCALE = {"cpu_per_file_operation_s": 1e-5, "commit_overhead_s": 1e-3, "file_data_rate_bytes_per_s": 1e8}
_UNITS = {"cpu_per_file_operation_s": "s", "commit_overhead_s": "s", "file_data_rate_bytes_per_s": "bytes/s"}
#: Where a fit starts for a parameter the case's FileSystem leaves unset (None).
_START = {"file_data_rate_bytes_per_s": 1.0e9}
#: The parameters fitted by default.
PARAMETERS = ("cpu_per_file_operation_s", "commit_overhead_s", "file_data_rate_bytes_per_s")


@dataclass(frozen=True)
class SyncWrites:
    """fio ``--rw=randwrite --fsync=1`` over a written file: each write of *request_bytes* is followed by fsync().

    The measured time is per write [s].
    """

    request_bytes: int

    def __post_init__(self):
        finite_scalar("request_bytes", self.request_bytes, positive=True)


@dataclass(frozen=True)
class SequentialWrite:
    """fio ``--rw=write --end_fsync=1``: a new file of *file_bytes* written front to back; measured: the whole [s]."""

    file_bytes: int

    def __post_init__(self):
        finite_scalar("file_bytes", self.file_bytes, positive=True)


@dataclass(frozen=True)
class FsCase:
    """One measured (file system, workload) cell.

    Attributes
    ----------
    volume : VolumeOnDisk
        Where the file system lies.
    filesystem : FileSystem
        Its parameters (the fitted ones override theirs).
    workload : PostMarkConfig, PostMarkCounts, SyncWrites or SequentialWrite
    measured_s : float
        The measured time [s], > 0: PostMark's elapsed time, the time per
        write of SyncWrites, the whole of SequentialWrite.
    cache : PageCache
    label : str
    """

    volume: VolumeOnDisk
    filesystem: FileSystem
    workload: object
    measured_s: float
    cache: PageCache = field(default_factory=PageCache)
    label: str = ""

    def __post_init__(self):
        if not isinstance(self.volume, VolumeOnDisk):
            raise ValueError(f"volume must be a VolumeOnDisk (got {show(self.volume)})")
        if not isinstance(self.filesystem, FileSystem):
            raise ValueError(f"filesystem must be a FileSystem (got {show(self.filesystem)})")
        if not isinstance(self.workload, (PostMarkConfig, PostMarkCounts, SyncWrites, SequentialWrite)):
            raise ValueError(f"workload must be a PostMarkConfig, PostMarkCounts, SyncWrites or SequentialWrite "
                             f"(got {show(self.workload)})")
        if isinstance(self.workload, PostMarkConfig):
            object.__setattr__(self, "workload", as_counts(self.workload))  # expanded once, not per evaluation
        finite_scalar("measured_s", self.measured_s, positive=True)
        if not isinstance(self.cache, PageCache):
            raise ValueError(f"cache must be a PageCache (got {show(self.cache)})")

    @property
    def kind(self) -> str:
        return self.filesystem.kind


def predicted_time_s(case: FsCase, filesystem: FileSystem | None = None) -> float:
    """The model's time for *case* [s] (with *filesystem* instead of the case's, when given)."""
    fs = case.filesystem if filesystem is None else filesystem
    w = case.workload
    if isinstance(w, SyncWrites):
        return synchronous_write_time_s(case.volume, fs, w.request_bytes)["total_s"]
    if isinstance(w, SequentialWrite):
        return sequential_write_time_s(case.volume, fs, w.file_bytes, case.cache)["total_s"]
    return file_system_access_time(case.volume, fs, w, case.cache).details["elapsed_s"]


def _residuals(cases, names, x):
    out = []
    for case in cases:
        fs = case.filesystem.evolve(**dict(zip(names, x)))
        out.append(math.log(case.measured_s) - math.log(predicted_time_s(case, fs)))
    return np.array(out)


def _bounds(bounds) -> dict:
    """:data:`BOUNDS` with *bounds* (name -> (lower, upper)) in place of some, each checked."""
    out = dict(BOUNDS)
    for name, pair in dict(bounds or {}).items():
        one_of("bounds", name, tuple(BOUNDS))
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"bounds[{name!r}] must be a (lower, upper) pair (got {show(pair)})")
        lower = finite_scalar(f"bounds[{name!r}] lower", pair[0])
        upper = finite_scalar(f"bounds[{name!r}] upper", pair[1])
        if not lower < upper:
            raise ValueError(f"bounds[{name!r}]: lower must be below upper (got {lower!r}, {upper!r})")
        out[name] = (lower, upper)
    return out


def fit_file_system_costs(cases, *, parameters=PARAMETERS, initial=None, bounds=None) -> PostMarkFit:
    """Fit *parameters* (names of :data:`BOUNDS`) on *cases* of one kind; a :class:`PostMarkFit`.

    Residuals are log(measured / predicted time), one per case; the
    covariance is s^2 (J^T J)^-1 over the parameters off their bounds (NaN
    when no degree of freedom is left).  *initial*: starting values by name
    (default each case's own value, clipped into the bounds).  *bounds*:
    (lower, upper) by name, in place of :data:`BOUNDS` (e.g. a measured
    floor: the CPU per file operation of a disk file system is at least
    tmpfs's, which does the same VFS work without a disk).
    """
    from scipy.optimize import least_squares

    cases = list(cases)
    if not cases or not all(isinstance(c, FsCase) for c in cases):
        raise ValueError("cases must be a non-empty sequence of FsCase")
    kinds = sorted({c.kind for c in cases})
    if len(kinds) != 1:
        raise ValueError(f"cases must all be of one kind (got {', '.join(kinds)}): the costs are per kind")
    names = tuple(parameters)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"parameters must be distinct names from {sorted(BOUNDS)} (got {parameters!r})")
    for n in names:
        one_of("parameters", n, tuple(BOUNDS))
    initial = dict(initial or {})
    limits = _bounds(bounds)
    lower = np.array([limits[n][0] for n in names])
    upper = np.array([limits[n][1] for n in names])
    def start(n):
        if n in initial:
            return finite_scalar(f"initial[{n!r}]", initial[n])
        value = getattr(cases[0].filesystem, n)
        return _START[n] if value is None else value

    x0 = np.array([start(n) for n in names], dtype=float)
    x0 = np.clip(x0, lower, upper)
    solution = least_squares(lambda x: _residuals(cases, names, x), x0, bounds=(lower, upper),
                             x_scale=np.array([_SCALE[n] for n in names]), diff_step=1e-3, method="trf")
    r = solution.fun
    covariance, dof = least_squares_covariance(solution, [_SCALE[n] for n in names])
    params = Parameters(Parameter(n, float(v), float(lo), float(hi), _UNITS[n])
                        for n, v, lo, hi in zip(names, solution.x, lower, upper))
    labels = tuple(c.label or str(i) for i, c in enumerate(cases))
    return PostMarkFit(params, covariance, r, labels, float(dof), bool(solution.success), str(solution.message))


def leave_one_out(cases, *, parameters=PARAMETERS, bounds=None) -> list[dict]:
    """Each case predicted from a fit on the other cases of its kind (with *bounds*, as the fit takes them).

    Returns one dict per case: label, kind, measured_s, predicted_s (held
    out), error_pct (100 (predicted / measured - 1)) and the held-out fit's
    params.  A kind needs at least two cases.
    """
    cases = list(cases)
    out = []
    for i, case in enumerate(cases):
        rest = [c for j, c in enumerate(cases) if j != i and c.kind == case.kind]
        if not rest:
            raise ValueError(f"cases: {case.label or i} is the only case of {case.kind}; nothing to fit it from")
        fit = fit_file_system_costs(rest, parameters=parameters, bounds=bounds)
        fs = case.filesystem.evolve(**dict(fit.params))
        predicted = predicted_time_s(case, fs)
        out.append({"label": case.label, "kind": case.kind, "measured_s": case.measured_s, "predicted_s": predicted,
                    "error_pct": 100.0 * (predicted / case.measured_s - 1.0), "params": dict(fit.params)})
    return out
