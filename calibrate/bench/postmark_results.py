"""PostMark runs, where they ran, and their summary over repeats (means and Student-t CIs)."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from diskmodel.calibrate.bench.postmark_text import PostMarkReport

__all__ = ["COARSE_RUN_S", "RunEnvironment", "PostMarkRun", "PostMarkSummary", "summarize", "to_json"]

#: Runs shorter than this by the outside clock are flagged coarse: PostMark's
#: own clock has a resolution of one second [s].
COARSE_RUN_S = 10.0


@dataclass(frozen=True)
class RunEnvironment:
    """Where a PostMark run ran: what the numbers depend on besides the workload.

    stack: the short name of the storage stack
    (:attr:`diskmodel.model.stacks.stack.Stack.short_name`, e.g. "lvm2"), and
    stack_description its tree (:meth:`~diskmodel.model.stacks.stack.Stack.describe`).
    emulated: True when the run was inside a VM under TCG (software
    emulation): then its timings measure the emulator, not the storage.
    """

    stack: str
    kernel_release: str
    file_system: str
    mount_options: str
    device: str
    read_ahead_kb: int | None
    scheduler: str | None
    backing: str
    backing_device: str | None = None
    backing_read_ahead_kb: int | None = None
    backing_scheduler: str | None = None
    memory_limit_bytes: int | None = None
    cgroup_version: int | None = None
    caches_dropped: bool = True
    emulated: bool = False
    accelerator: str = "host"
    stack_description: str = ""

    @property
    def note(self) -> str:
        if self.emulated:
            return ("timings measure an emulator: this run was inside a qemu VM under TCG "
                    "(software CPU emulation), not the storage's speed")
        return ""


@dataclass(frozen=True)
class PostMarkRun:
    """One PostMark run: its report, the outside wall time [s], and where it ran.

    coarse: wall_s < COARSE_RUN_S, so PostMark's whole-second timings are rough.
    Throughputs ``*_wall`` divide PostMark's data by wall_s [bytes/s].
    """

    report: PostMarkReport
    wall_s: float
    environment: RunEnvironment
    config: Any = field(repr=False)
    cgroup_peak_bytes: int | None = None

    @property
    def coarse(self) -> bool:
        return self.wall_s < COARSE_RUN_S

    @property
    def read_bytes_per_s_wall(self) -> float:
        return self.report.read_bytes / self.wall_s

    @property
    def write_bytes_per_s_wall(self) -> float:
        return self.report.written_bytes / self.wall_s

    @property
    def transactions_per_s_wall(self) -> float:
        return self.report.transactions / self.wall_s

    def to_dict(self) -> dict:
        return {
            "wall_s": self.wall_s,
            "coarse": self.coarse,
            "read_bytes_per_s_wall": self.read_bytes_per_s_wall,
            "write_bytes_per_s_wall": self.write_bytes_per_s_wall,
            "transactions_per_s_wall": self.transactions_per_s_wall,
            "cgroup_peak_bytes": self.cgroup_peak_bytes,
            "report": self.report.to_dict(),
            "raw_report": self.report.raw,
        }


_METRICS = (
    ("elapsed_s", lambda r: r.report.elapsed_s, "s"),
    ("wall_s", lambda r: r.wall_s, "s"),
    ("transactions_per_s", lambda r: r.report.transactions_per_s, "1/s"),
    ("read_bytes_per_s", lambda r: r.report.read_bytes_per_s, "bytes/s"),
    ("write_bytes_per_s", lambda r: r.report.write_bytes_per_s, "bytes/s"),
    ("read_bytes_per_s_wall", lambda r: r.read_bytes_per_s_wall, "bytes/s"),
    ("write_bytes_per_s_wall", lambda r: r.write_bytes_per_s_wall, "bytes/s"),
)


@dataclass(frozen=True)
class PostMarkSummary:
    """N PostMark runs: per-metric mean, sample standard deviation and Student-t CI.

    As the fit results of :mod:`diskmodel.model.fit.base` (though nothing is
    fitted): ``params`` (pandas Series, metric -> mean), ``bse`` (metric ->
    standard error of the mean, NaN with fewer than two runs) and
    ``conf_int(alpha)`` (a DataFrame indexed by metric with columns ``lower``
    and ``upper``: the Student-t interval, NaN with fewer than two runs).
    Metrics: elapsed_s and wall_s [s], transactions_per_s [1/s], read/write
    bytes per second by PostMark's clock and by the outside (``_wall``) clock.
    """

    runs: tuple[PostMarkRun, ...]

    def _values(self, name: str) -> np.ndarray:
        fn = dict((m, f) for m, f, _ in _METRICS)[name]
        return np.array([fn(r) for r in self.runs], dtype=float)

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def params(self):
        import pandas as pd

        return pd.Series({m: float(np.mean(self._values(m))) for m, _, _ in _METRICS}, name="mean")

    @property
    def bse(self):
        import pandas as pd

        if self.n < 2:
            return pd.Series({m: math.nan for m, _, _ in _METRICS}, name="bse")
        return pd.Series({m: float(np.std(self._values(m), ddof=1) / math.sqrt(self.n)) for m, _, _ in _METRICS},
                         name="bse")

    def conf_int(self, alpha: float = 0.05):
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        import pandas as pd
        from scipy import stats

        params, bse = self.params, self.bse
        rows = {}
        for m, _, _ in _METRICS:
            mean, se = params[m], bse[m]
            if self.n < 2 or not math.isfinite(se):
                rows[m] = (math.nan, math.nan)
            elif se == 0:
                rows[m] = (mean, mean)
            else:
                lo, hi = stats.t.interval(1 - alpha, self.n - 1, loc=mean, scale=se)
                rows[m] = (float(lo), float(hi))
        return pd.DataFrame.from_dict(rows, orient="index", columns=["lower", "upper"])

    @property
    def coarse(self) -> bool:
        return any(r.coarse for r in self.runs)

    @property
    def environment(self) -> RunEnvironment:
        return self.runs[0].environment

    def summary(self) -> str:
        env = self.environment
        ci, params = self.conf_int(), self.params
        lines = [
            f"PostMark, {self.n} run(s), stack {env.stack}, {env.file_system} ({env.mount_options}) on {env.device}",
            f"kernel {env.kernel_release}; read_ahead_kb {env.read_ahead_kb}; scheduler {env.scheduler}; "
            f"backing {env.backing} ({env.backing_device}, scheduler {env.backing_scheduler})",
            f"memory limit: {env.memory_limit_bytes if env.memory_limit_bytes else 'none'}"
            + (f" (cgroup v{env.cgroup_version})" if env.memory_limit_bytes else "")
            + f"; caches dropped before each run: {env.caches_dropped}",
        ]
        if env.emulated:
            lines.append(f"NOTE: {env.note}")
        if self.coarse:
            lines.append(f"NOTE: run(s) shorter than {COARSE_RUN_S:g} s: PostMark's 1-s clock makes its "
                         "own rates coarse; prefer the *_wall figures")
        lines.append(f"{'metric':<24}{'mean':>14}{'95% CI low':>14}{'95% CI high':>14}  unit")
        for m, _, unit in _METRICS:
            mean = params[m]
            lo, hi = ci.loc[m, "lower"], ci.loc[m, "upper"]
            scale, u = (1e6, "MB/s") if unit == "bytes/s" else (1, unit)
            lines.append(f"{m:<24}{mean / scale:>14.4g}{lo / scale:>14.4g}{hi / scale:>14.4g}  {u}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html
        return f"<pre>{html.escape(self.summary())}</pre>"

    def to_dict(self) -> dict:
        cfg = self.runs[0].config
        return {
            "environment": dataclasses.asdict(self.environment) | {"note": self.environment.note},
            "config": dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(vars(cfg)),
            "n": self.n,
            "coarse": self.coarse,
            "mean": self.params.to_dict(),
            "bse": self.bse.to_dict(),
            "conf_int_95": {k: [row.lower, row.upper] for k, row in self.conf_int().iterrows()},
            "runs": [r.to_dict() for r in self.runs],
        }


def summarize(runs: Sequence[PostMarkRun]) -> PostMarkSummary:
    if not runs:
        raise ValueError("runs must not be empty")
    return PostMarkSummary(tuple(runs))


def _nan_to_none(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nan_to_none(v) for v in obj]
    return obj


def to_json(summary: PostMarkSummary) -> str:
    """The summary as JSON (NaN, e.g. the CI of a single run, becomes null)."""
    import json
    return json.dumps(_nan_to_none(summary.to_dict()), indent=2, allow_nan=False) + "\n"
