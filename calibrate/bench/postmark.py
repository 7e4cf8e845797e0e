"""Run the real PostMark benchmark and parse its report.

PostMark (Katcher 1997, NetApp TR3022; Debian package ``postmark``, v1.51)
is the benchmark of Djordjevic & Timcenko (2015), section 4.2. This module

- writes a PostMark command file from a
  :class:`diskmodel.model.workload.PostMarkConfig` (:func:`command_file`),
- runs ``postmark`` on it, after ``sync`` and dropping the page cache, optionally
  inside a memory cgroup (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``)
  that stands in for a smaller machine's RAM (:func:`run_postmark`),
- times each run from outside with a monotonic clock, since PostMark's own clock
  counts whole seconds, and flags runs shorter than :data:`COARSE_RUN_S` as coarse,
- parses the verbose report into a :class:`PostMarkReport`
  (:func:`parse_report`) and summarises repeats with means and Student-t 95%
  confidence intervals (:class:`PostMarkSummary`).

PostMark's units: "kilobytes" are 2**10 bytes and "megabytes" 2**20 bytes
(checked: a run its terse report puts at 6253613 bytes read, its verbose report
prints as "5.96 megabytes read"; 6253613 / 2**20 = 5.964). Its data amounts
are printed with two decimals, so the bytes recovered from a verbose report
are uncertain by half a unit of the last decimal (:attr:`DataAmount.resolution_bytes`).

PostMark exits with status 0 even when it could not create or delete its
files; this module treats every ``Error:`` line of its output as a failure.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import platform
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from diskmodel.calibrate.bench.process import communicate_or_kill, spawn

__all__ = [
    "COARSE_RUN_S",
    "UNIT_BYTES",
    "PostMarkError",
    "DataAmount",
    "PostMarkReport",
    "RunEnvironment",
    "PostMarkRun",
    "PostMarkSummary",
    "MemoryCgroup",
    "command_file",
    "parse_report",
    "parse_echoed_config",
    "check_echoed_config",
    "drop_caches",
    "run_postmark_once",
    "run_postmark",
    "summarize",
    "describe_mount",
    "host_environment",
    "guest_body",
    "parse_guest_output",
    "run_on_layout",
    "to_json",
]

#: Runs shorter than this by the outside clock are flagged coarse: PostMark's
#: own clock has a resolution of one second [s].
COARSE_RUN_S = 10.0

#: Bytes of each unit PostMark prints (2**10 and 2**20, verified against its terse report).
UNIT_BYTES: dict[str, int] = {"bytes": 1, "kilobytes": 1 << 10, "megabytes": 1 << 20}


class PostMarkError(RuntimeError):
    """PostMark failed, printed ``Error:`` lines, or its report could not be parsed."""


# ---------------------------------------------------------------------------
# command file
# ---------------------------------------------------------------------------

_INT_FIELDS = (
    "number_of_files", "min_file_size_bytes", "max_file_size_bytes", "transactions",
    "subdirectories", "read_block_size_bytes", "write_block_size_bytes", "read_bias",
    "create_bias", "seed",
)


def _check_config(config: Any) -> None:
    for name in _INT_FIELDS:
        value = getattr(config, name)
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise ValueError(f"{name} must be an int, got {value!r}")
    positive = ("number_of_files", "transactions", "read_block_size_bytes", "write_block_size_bytes")
    for name in positive:
        if getattr(config, name) <= 0:
            raise ValueError(f"{name} must be > 0, got {getattr(config, name)}")
    if config.min_file_size_bytes <= 0:
        raise ValueError(f"min_file_size_bytes must be > 0, got {config.min_file_size_bytes}")
    if config.max_file_size_bytes < config.min_file_size_bytes:
        raise ValueError(
            f"max_file_size_bytes ({config.max_file_size_bytes}) must be >= "
            f"min_file_size_bytes ({config.min_file_size_bytes})")
    if config.subdirectories < 0:
        raise ValueError(f"subdirectories must be >= 0, got {config.subdirectories}")
    for name in ("read_bias", "create_bias"):
        if not 0 <= getattr(config, name) <= 10:
            raise ValueError(f"{name} must be in 0..10, got {getattr(config, name)}")
    if not isinstance(config.buffered_io, bool):
        raise ValueError(f"buffered_io must be a bool, got {config.buffered_io!r}")
    if config.seed < 0 or config.seed > 2**31 - 1:
        raise ValueError(f"seed must be in 0..2**31-1, got {config.seed}")


def command_file(config: Any, location: str | os.PathLike) -> str:
    """The PostMark 1.5 command file running *config* in directory *location*.

    Every setting is written out except ``set subdirectories 0``, which
    PostMark 1.51 rejects (0 is its default); ``show``
    makes PostMark echo the configuration it accepted, which
    :func:`check_echoed_config` compares with *config*.
    """
    _check_config(config)
    location = os.fspath(location)
    if not location or any(c.isspace() for c in location):
        raise ValueError(f"location must be a non-empty path without whitespace (PostMark splits on it); got {location!r}")
    lines = [
        f"set location {location}",
        f"set size {config.min_file_size_bytes} {config.max_file_size_bytes}",
        f"set number {config.number_of_files}",
        f"set transactions {config.transactions}",
        f"set read {config.read_block_size_bytes}",
        f"set write {config.write_block_size_bytes}",
        f"set buffering {'true' if config.buffered_io else 'false'}",
        f"set bias read {config.read_bias}",
        f"set bias create {config.create_bias}",
        f"set seed {config.seed}",
    ]
    if config.subdirectories > 0:
        # PostMark rejects "set subdirectories 0" ("invalid number of
        # subdirectories"); 0 is its default, so it is left unsaid.
        lines.append(f"set subdirectories {config.subdirectories}")
    lines += [
        "set report verbose",
        "show",
        "run",
        "quit",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# report parsing
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class DataAmount:
    """An amount as PostMark prints it, and in bytes.

    value and unit: as printed ("5.96", "megabytes"). bytes: value * unit [bytes].
    resolution_bytes: half a unit of the last printed decimal [bytes].
    """

    value: float
    unit: str
    bytes: float
    resolution_bytes: float

    @classmethod
    def parse(cls, number: str, unit: str) -> "DataAmount":
        if unit not in UNIT_BYTES:
            raise PostMarkError(f"unknown PostMark unit {unit!r}")
        decimals = len(number.split(".", 1)[1]) if "." in number else 0
        scale = UNIT_BYTES[unit]
        value = float(number)
        return cls(value, unit, value * scale, 0.5 * 10.0 ** (-decimals) * scale)


@dataclass(frozen=True)
class PostMarkReport:
    """PostMark's verbose report, as numbers.

    Times are PostMark's, in whole seconds [s]; rates ``*_per_s`` are PostMark's
    integer divisions by them [1/s]. transactions = files created and deleted
    during the transaction phase (each transaction does one create or delete,
    plus one read or append). Data amounts and rates keep PostMark's printed
    value and unit next to bytes [bytes, bytes/s]; PostMark divides data by the
    total time, creation and deletion phases included.
    """

    elapsed_s: float
    transaction_time_s: float
    transactions_per_s: float
    files_created: int
    files_created_per_s: float
    files_created_alone: int
    files_created_mixed: int
    files_read: int
    files_read_per_s: float
    files_appended: int
    files_appended_per_s: float
    files_deleted: int
    files_deleted_per_s: float
    files_deleted_alone: int
    files_deleted_mixed: int
    data_read: DataAmount
    data_written: DataAmount
    read_rate: DataAmount
    write_rate: DataAmount
    raw: str = field(repr=False, compare=False, default="")

    @property
    def transactions(self) -> int:
        return self.files_created_mixed + self.files_deleted_mixed

    @property
    def read_bytes(self) -> float:
        return self.data_read.bytes

    @property
    def written_bytes(self) -> float:
        return self.data_written.bytes

    @property
    def read_bytes_per_s(self) -> float:
        """PostMark's read throughput [bytes/s] (its data / its whole seconds)."""
        return self.read_rate.bytes

    @property
    def write_bytes_per_s(self) -> float:
        return self.write_rate.bytes

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("raw")
        d["transactions"] = self.transactions
        return d


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_UNIT = r"(bytes|kilobytes|megabytes)"
_PATTERNS = {
    "time": re.compile(rf"^\s*{_NUM} seconds total\s*$", re.M),
    "ttime": re.compile(rf"^\s*{_NUM} seconds of transactions \({_NUM} per second\)\s*$", re.M),
    "created": re.compile(rf"^\s*{_NUM} created \({_NUM} per second\)\s*$", re.M),
    "created_alone": re.compile(rf"^\s*Creation alone: {_NUM} files \({_NUM} per second\)\s*$", re.M),
    "mixed": re.compile(rf"^\s*Mixed with transactions: {_NUM} files \({_NUM} per second\)\s*$", re.M),
    "read": re.compile(rf"^\s*{_NUM} read \({_NUM} per second\)\s*$", re.M),
    "appended": re.compile(rf"^\s*{_NUM} appended \({_NUM} per second\)\s*$", re.M),
    "deleted": re.compile(rf"^\s*{_NUM} deleted \({_NUM} per second\)\s*$", re.M),
    "deleted_alone": re.compile(rf"^\s*Deletion alone: {_NUM} files \({_NUM} per second\)\s*$", re.M),
    "data_read": re.compile(rf"^\s*{_NUM} {_UNIT} read \({_NUM} {_UNIT} per second\)\s*$", re.M),
    "data_written": re.compile(rf"^\s*{_NUM} {_UNIT} written \({_NUM} {_UNIT} per second\)\s*$", re.M),
}


def _errors(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines()
            if ln.strip().startswith("Error:") or "out of files" in ln]


def parse_report(text: str) -> PostMarkReport:
    """Parse PostMark's verbose report (the output of ``set report verbose``; ``run``).

    Raises PostMarkError when PostMark printed ``Error:`` lines or a field is missing.
    """
    errs = _errors(text)
    if errs:
        more = f" (and {len(errs) - 3} more)" if len(errs) > 3 else ""
        raise PostMarkError("PostMark reported errors: " + "; ".join(errs[:3]) + more)
    start = text.rfind("\nTime:")
    if start < 0 and not text.startswith("Time:"):
        raise PostMarkError("no verbose PostMark report ('Time:' section) in the output")
    body = text[start:]

    def one(key: str) -> tuple[str, ...]:
        m = _PATTERNS[key].search(body)
        if not m:
            raise PostMarkError(f"PostMark report lacks its {key!r} line")
        return m.groups()

    mixed = _PATTERNS["mixed"].findall(body)
    if len(mixed) != 2:
        raise PostMarkError(f"expected 2 'Mixed with transactions' lines, found {len(mixed)}")
    t_total = one("time")
    t_trans, tps = one("ttime")
    created, created_ps = one("created")
    c_alone, _ = one("created_alone")
    read, read_ps = one("read")
    app, app_ps = one("appended")
    deleted, deleted_ps = one("deleted")
    d_alone, _ = one("deleted_alone")
    dr = one("data_read")
    dw = one("data_written")
    return PostMarkReport(
        elapsed_s=float(t_total[0]),
        transaction_time_s=float(t_trans),
        transactions_per_s=float(tps),
        files_created=int(created), files_created_per_s=float(created_ps),
        files_created_alone=int(c_alone), files_created_mixed=int(mixed[0][0]),
        files_read=int(read), files_read_per_s=float(read_ps),
        files_appended=int(app), files_appended_per_s=float(app_ps),
        files_deleted=int(deleted), files_deleted_per_s=float(deleted_ps),
        files_deleted_alone=int(d_alone), files_deleted_mixed=int(mixed[1][0]),
        data_read=DataAmount.parse(dr[0], dr[1]),
        data_written=DataAmount.parse(dw[0], dw[1]),
        read_rate=DataAmount.parse(dr[2], dr[3]),
        write_rate=DataAmount.parse(dw[2], dw[3]),
        raw=text,
    )


_ECHO = {
    "number_of_files": re.compile(r"The base number of files is (\d+)"),
    "transactions": re.compile(r"^Transactions: (\d+)", re.M),
    "subdirectories": re.compile(r"(\d+) subdirector"),
    "read_bias": re.compile(r"Biases are: read/append=(-?\d+)"),
    "create_bias": re.compile(r"create/delete=(-?\d+)"),
    "seed": re.compile(r"Random number generator seed is (\d+)"),
}


def parse_echoed_config(text: str) -> dict[str, Any]:
    """The settings PostMark echoed in reply to ``show``."""
    out: dict[str, Any] = {}
    for key, rx in _ECHO.items():
        m = rx.search(text)
        if m:
            out[key] = int(m.group(1))
    if "subdirectories" not in out and "The base number of files" in text:
        out["subdirectories"] = 0
    m = re.search(r"(U|Not u)sing Unix buffered file I/O", text)
    if m:
        out["buffered_io"] = m.group(1) == "U"
    return out


def check_echoed_config(config: Any, text: str) -> None:
    """Raise PostMarkError if PostMark echoed settings that differ from *config*."""
    echoed = parse_echoed_config(text)
    if "number_of_files" not in echoed:
        raise PostMarkError("PostMark did not echo its configuration (no 'show' output)")
    wrong = {k: (v, getattr(config, k)) for k, v in echoed.items() if v != getattr(config, k)}
    if wrong:
        raise PostMarkError("PostMark did not take these settings (echoed vs wanted): "
                            + ", ".join(f"{k}: {a} vs {b}" for k, (a, b) in wrong.items()))


# ---------------------------------------------------------------------------
# environment of a run
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RunEnvironment:
    """Where a PostMark run ran: what the numbers depend on besides the workload.

    emulated: True when the run was inside a VM under TCG (software
    emulation): then its timings measure the emulator, not the storage.
    """

    layout: str
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

    @property
    def note(self) -> str:
        if self.emulated:
            return ("timings measure an emulator: this run was inside a qemu VM under TCG "
                    "(software CPU emulation), not the storage's speed")
        return ""


def _sysfs_queue(dev_name: str) -> tuple[int | None, str | None]:
    q = Path("/sys/class/block") / dev_name / "queue"
    if not q.exists():
        # a partition: the queue is its parent's
        parent = (Path("/sys/class/block") / dev_name).resolve().parent
        q = parent / "queue"
    ra = sched = None
    try:
        ra = int((q / "read_ahead_kb").read_text())
    except (OSError, ValueError):
        pass
    try:
        raw = (q / "scheduler").read_text().strip()
        m = re.search(r"\[([^\]]+)\]", raw)
        sched = m.group(1) if m else raw
    except OSError:
        pass
    return ra, sched


def describe_mount(mountpoint: str | os.PathLike) -> tuple[str, str, str]:
    """(device, file-system type, mount options) of *mountpoint*, from /proc/mounts."""
    mp = os.path.realpath(os.fspath(mountpoint))
    found = None
    for line in Path("/proc/mounts").read_text().splitlines():
        dev, where, fstype, opts = line.split()[:4]
        if where.replace("\\040", " ") == mp:
            found = (dev, fstype, opts)
    if found is None:
        raise ValueError(f"mountpoint {mp} is not mounted")
    return found


def host_environment(*, layout: str, mountpoint: str, backing: str,
                     memory_limit_bytes: int | None, caches_dropped: bool = True) -> RunEnvironment:
    """The :class:`RunEnvironment` of a run on this machine at *mountpoint*."""
    dev, fstype, opts = describe_mount(mountpoint)
    try:
        rdev = os.stat(dev).st_rdev
        name = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}").resolve().name
    except OSError:
        name = os.path.basename(os.path.realpath(dev))
    ra, sched = _sysfs_queue(name)
    dev = f"{dev} ({name})" if name != os.path.basename(dev) else dev
    bdev = bra = bsched = None
    try:
        st = os.stat(backing)
        import stat as _stat
        rdev = st.st_rdev if _stat.S_ISBLK(st.st_mode) else st.st_dev
        link = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
        if link.exists():
            bdev = link.resolve().name
            bra, bsched = _sysfs_queue(bdev)
    except OSError:
        pass
    cg = None
    if memory_limit_bytes is not None:
        cg = MemoryCgroup.detect_version()
    return RunEnvironment(
        layout=layout, kernel_release=platform.release(), file_system=fstype, mount_options=opts,
        device=dev, read_ahead_kb=ra, scheduler=sched, backing=backing, backing_device=bdev,
        backing_read_ahead_kb=bra, backing_scheduler=bsched, memory_limit_bytes=memory_limit_bytes,
        cgroup_version=cg, caches_dropped=caches_dropped, emulated=False, accelerator="host",
    )


# ---------------------------------------------------------------------------
# cache control
# ---------------------------------------------------------------------------

def drop_caches() -> None:
    """``sync``, then drop the page cache, dentries and inodes (/proc/sys/vm/drop_caches = 3)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
    except OSError as exc:
        raise PermissionError(f"cannot drop caches (/proc/sys/vm/drop_caches): {exc}; run as root") from exc


class MemoryCgroup:
    """A throwaway memory cgroup with a hard limit, v2 or v1, whichever this machine has.

    v2: a unified hierarchy whose cgroup.controllers lists ``memory``
    (/sys/fs/cgroup or /sys/fs/cgroup/unified); limit in ``memory.max``.
    v1: /sys/fs/cgroup/memory; limit in ``memory.limit_in_bytes``.
    The cgroup is made on entering and removed on leaving (and by
    :meth:`remove`, which may be called again).
    """

    V2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
    V1_ROOT = Path("/sys/fs/cgroup/memory")
    PREFIX = "diskmodel-postmark-"

    def __init__(self, limit_bytes: int, *, name: str | None = None):
        if not isinstance(limit_bytes, int) or isinstance(limit_bytes, bool) or limit_bytes <= 0:
            raise ValueError(f"memory_limit_bytes must be a positive int, got {limit_bytes!r}")
        if limit_bytes < 16 * (1 << 20):
            raise ValueError(f"memory_limit_bytes must be >= 16 MiB for postmark to run; got {limit_bytes}")
        self.limit_bytes = limit_bytes
        self.version, self.root = self._detect()
        self.path = self.root / (name or f"{self.PREFIX}{os.getpid()}-{time.monotonic_ns()}")

    @classmethod
    def _detect(cls) -> tuple[int, Path]:
        for root in cls.V2_ROOTS:
            ctl = root / "cgroup.controllers"
            try:
                if "memory" in ctl.read_text().split():
                    return 2, root
            except OSError:
                continue
        if (cls.V1_ROOT / "memory.limit_in_bytes").exists():
            return 1, cls.V1_ROOT
        raise RuntimeError("no memory cgroup controller: neither cgroup v2 with 'memory' in "
                           "cgroup.controllers nor /sys/fs/cgroup/memory (v1) is available")

    @classmethod
    def detect_version(cls) -> int:
        return cls._detect()[0]

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def create(self) -> "MemoryCgroup":
        from diskmodel.calibrate.harness import runstate
        run = runstate.current_run()
        self._resource = run.intend("cgroup", path=str(self.path)) if run is not None else None
        if self.version == 2:
            sub = self.root / "cgroup.subtree_control"
            if "memory" not in sub.read_text().split():
                sub.write_text("+memory")
            self.path.mkdir()
            (self.path / "memory.max").write_text(str(self.limit_bytes))
            try:
                (self.path / "memory.swap.max").write_text("0")
            except OSError:
                pass
        else:
            self.path.mkdir()
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
            got = int((self.path / "memory.limit_in_bytes").read_text())
            if abs(got - self.limit_bytes) > 4096:
                self.remove()
                raise RuntimeError(f"cgroup v1 took limit {got} instead of {self.limit_bytes}")
        return self

    def oom_kills(self) -> int:
        try:
            if self.version == 2:
                for line in (self.path / "memory.events").read_text().splitlines():
                    k, v = line.split()
                    if k == "oom_kill":
                        return int(v)
            else:
                for line in (self.path / "memory.oom_control").read_text().splitlines():
                    k, v = line.split()
                    if k == "oom_kill":
                        return int(v)
        except OSError:
            pass
        return 0

    def peak_bytes(self) -> int | None:
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            try:
                return int((self.path / name).read_text())
            except (OSError, ValueError):
                continue
        return None

    def _removed(self) -> None:
        from diskmodel.calibrate.harness import runstate
        run, res = runstate.current_run(), getattr(self, "_resource", None)
        if run is not None and res is not None:
            run.absent(res)

    def remove(self) -> None:
        """Remove the cgroup (its processes must have exited). Idempotent."""
        for attempt in range(50):
            try:
                self.path.rmdir()
                self._removed()
                return
            except FileNotFoundError:
                self._removed()
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                time.sleep(0.1)
        raise RuntimeError(f"cannot remove cgroup {self.path}: still busy")

    def __enter__(self) -> "MemoryCgroup":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.remove()


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------

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

    params: metric -> mean. bse: metric -> standard error of the mean.
    conf_int(alpha): metric -> (low, high), NaN with fewer than two runs.
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
    def params(self) -> dict[str, float]:
        return {m: float(np.mean(self._values(m))) for m, _, _ in _METRICS}

    @property
    def bse(self) -> dict[str, float]:
        if self.n < 2:
            return {m: math.nan for m, _, _ in _METRICS}
        return {m: float(np.std(self._values(m), ddof=1) / math.sqrt(self.n)) for m, _, _ in _METRICS}

    def conf_int(self, alpha: float = 0.05) -> dict[str, tuple[float, float]]:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        from scipy import stats
        out = {}
        for m, _, _ in _METRICS:
            mean, se = self.params[m], self.bse[m]
            if self.n < 2 or not math.isfinite(se):
                out[m] = (math.nan, math.nan)
            elif se == 0:
                out[m] = (mean, mean)
            else:
                lo, hi = stats.t.interval(1 - alpha, self.n - 1, loc=mean, scale=se)
                out[m] = (float(lo), float(hi))
        return out

    @property
    def coarse(self) -> bool:
        return any(r.coarse for r in self.runs)

    @property
    def environment(self) -> RunEnvironment:
        return self.runs[0].environment

    def summary(self) -> str:
        env = self.environment
        ci = self.conf_int()
        lines = [
            f"PostMark, {self.n} run(s), layout {env.layout}, {env.file_system} ({env.mount_options}) on {env.device}",
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
            mean = self.params[m]
            lo, hi = ci[m]
            scale, u = (1 << 20, "MiB/s") if unit == "bytes/s" else (1, unit)
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
            "mean": self.params,
            "bse": self.bse,
            "conf_int_95": {k: list(v) for k, v in self.conf_int().items()},
            "runs": [r.to_dict() for r in self.runs],
        }


def summarize(runs: Sequence[PostMarkRun]) -> PostMarkSummary:
    if not runs:
        raise ValueError("runs must not be empty")
    return PostMarkSummary(tuple(runs))


def run_postmark_once(
    config: Any,
    location: str | os.PathLike,
    *,
    environment: RunEnvironment,
    memory_limit_bytes: int | None = None,
    drop_page_cache: bool = True,
    postmark: str = "postmark",
    timeout_s: float | None = None,
    clean_location: bool = True,
) -> PostMarkRun:
    """Run PostMark once in *location* and parse its report.

    Before the run: ``sync`` and drop caches (unless drop_page_cache is False).
    With memory_limit_bytes, postmark runs inside a fresh memory cgroup that is
    removed afterwards. PostMark runs in its own session; if this function is
    interrupted (KeyboardInterrupt, a signal turned into an exception, a
    timeout), the whole process group is killed before the exception goes on.
    """
    location = os.fspath(location)
    if not os.path.isdir(location):
        raise ValueError(f"location {location!r} is not a directory")
    text = command_file(config, location)
    from diskmodel.calibrate.harness import runstate
    run = runstate.current_run()
    parent = run.work_dir() if run is not None else None
    with tempfile.TemporaryDirectory(prefix="diskmodel-postmark-", dir=parent) as tmp:
        cfg = Path(tmp) / "postmark.cfg"
        cfg.write_text(text)
        if drop_page_cache:
            drop_caches()
        cgroup = MemoryCgroup(memory_limit_bytes) if memory_limit_bytes is not None else None
        if cgroup is not None:
            cgroup.create()
        try:
            if cgroup is not None:
                argv = ["/bin/sh", "-c", 'echo $$ > "$1" && exec "$2" "$3"', "sh",
                        str(cgroup.procs_file), postmark, str(cfg)]
            else:
                argv = [postmark, str(cfg)]
            t0 = time.monotonic()
            proc = spawn(argv, name="postmark", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, cwd=tmp)
            out, _ = communicate_or_kill(proc, timeout_s)
            wall = time.monotonic() - t0
            oom = cgroup.oom_kills() if cgroup is not None else 0
            peak = cgroup.peak_bytes() if cgroup is not None else None
        finally:
            if cgroup is not None:
                cgroup.remove()
    if proc.returncode != 0:
        why = f" ({oom} OOM kill(s) in its memory cgroup: raise memory_limit_bytes)" if oom else ""
        raise PostMarkError(f"postmark exited with status {proc.returncode}{why}:\n{out[-2000:]}")
    if oom:
        raise PostMarkError(f"the OOM killer fired {oom} time(s) in the run's memory cgroup; raise memory_limit_bytes")
    check_echoed_config(config, out)
    report = parse_report(out)
    if clean_location:
        leftovers = [p for p in os.listdir(location) if p != "lost+found"]
        if leftovers:
            raise PostMarkError(f"PostMark left {len(leftovers)} entries in {location}, e.g. {leftovers[:3]}")
    return PostMarkRun(report=report, wall_s=wall, environment=environment, config=config,
                       cgroup_peak_bytes=peak)


def run_postmark(
    config: Any,
    location: str | os.PathLike,
    *,
    environment: RunEnvironment,
    repeats: int = 1,
    memory_limit_bytes: int | None = None,
    drop_page_cache: bool = True,
    postmark: str = "postmark",
    timeout_s: float | None = None,
    progress: bool = False,
) -> PostMarkSummary:
    """Run PostMark *repeats* times in *location*; mean and 95% CI of each metric.

    See :func:`run_postmark_once` for cache control and the memory limit.
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    it = range(repeats)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc="postmark", unit="run")
    runs = [run_postmark_once(config, location, environment=environment,
                              memory_limit_bytes=memory_limit_bytes, drop_page_cache=drop_page_cache,
                              postmark=postmark, timeout_s=timeout_s) for _ in it]
    return summarize(runs)


# ---------------------------------------------------------------------------
# the same runs inside a guest (one shell script; see calibrate.layouts)
# ---------------------------------------------------------------------------

_MARK = "DISKMODEL_PM"


def guest_body(config: Any, *, repeats: int = 1, memory_limit_bytes: int | None = None,
               drop_page_cache: bool = True, mount_var: str = "DISKMODEL_MNT",
               device_expr: str = '"$DISKMODEL_DEV0"') -> str:
    """Shell (busybox ash) that runs PostMark *repeats* times in ``"$<mount_var>"``.

    To be passed as the body of :meth:`LayoutPlan.render_script`. It prints the
    environment (kernel, /proc/mounts line, queue settings of the file
    system's device) and, per run, PostMark's output between markers with the
    outside time from /proc/uptime (10 ms resolution). Cache control and the
    memory cgroup mirror :func:`run_postmark_once`: ``sync`` and drop caches
    before each run; with a limit, a cgroup (v2 memory.max, else v1
    memory.limit_in_bytes) made for the run and removed after it.
    :func:`parse_guest_output` reads what it prints.
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    if memory_limit_bytes is not None:
        if not isinstance(memory_limit_bytes, int) or memory_limit_bytes < 16 * (1 << 20):
            raise ValueError(f"memory_limit_bytes must be an int >= 16 MiB, got {memory_limit_bytes!r}")
    # The command file's location is expanded by the unquoted here-document.
    cfg_text = command_file(config, f"${mount_var}")
    limit = "" if memory_limit_bytes is None else str(memory_limit_bytes)
    return f"""set +e
pmdir=$(mktemp -d "${{TMPDIR:-/tmp}}/diskmodel-postmark.XXXXXX") || exit 1
DISKMODEL_UNDO="rm -rf '$pmdir';
$DISKMODEL_UNDO"
pmcfg="$pmdir/postmark.cfg"
cat > "$pmcfg" <<DISKMODEL_CFG_EOF
{cfg_text}DISKMODEL_CFG_EOF
diskmodel_queue() {{  # sysfs queue directory of block device $1 (by its major:minor)
  q=/sys/dev/block/$(($(printf '0x%s' "$(stat -L -c %t "$1")"))):$(($(printf '0x%s' "$(stat -L -c %T "$1")")))
  [ -d "$q/queue" ] || q="$q/.."
  echo "$q/queue"
}}
fsdev=$(readlink -f {device_expr})
fsq=$(diskmodel_queue "$fsdev")
echo "{_MARK} KERNEL $(uname -r)"
echo "{_MARK} DEVICE $fsdev $(basename "$(readlink -f "$fsq/..")")"
echo "{_MARK} MOUNT $(grep " ${mount_var} " /proc/mounts)"
echo "{_MARK} READ_AHEAD_KB $(cat "$fsq/read_ahead_kb" 2>/dev/null)"
echo "{_MARK} SCHEDULER $(cat "$fsq/scheduler" 2>/dev/null)"
bq=$(diskmodel_queue "$DISKMODEL_SCRATCH")
echo "{_MARK} BACKING $DISKMODEL_SCRATCH $(cat "$bq/read_ahead_kb" 2>/dev/null) $(cat "$bq/scheduler" 2>/dev/null)"
limit='{limit}'
cgv=''
if [ -n "$limit" ]; then
  if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    cgv=2; cgroot=/sys/fs/cgroup
    grep -qw memory $cgroot/cgroup.subtree_control || echo +memory > $cgroot/cgroup.subtree_control || exit 1
  elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cgv=1; cgroot=/sys/fs/cgroup/memory
  else
    echo "{_MARK} ERROR no memory cgroup controller in the guest" ; exit 1
  fi
  echo "{_MARK} CGROUP $cgv"
fi
i=1
while [ $i -le {repeats} ]; do
  {"sync; echo 3 > /proc/sys/vm/drop_caches || exit 1" if drop_page_cache else ":"}
  cg=''
  if [ -n "$limit" ]; then
    cg=$cgroot/diskmodel-postmark-$$-$i
    mkdir "$cg" || exit 1
    DISKMODEL_UNDO="rmdir '$cg' 2>/dev/null;
$DISKMODEL_UNDO"
    if [ "$cgv" = 2 ]; then echo "$limit" > "$cg/memory.max"; echo 0 > "$cg/memory.swap.max" 2>/dev/null
    else echo "$limit" > "$cg/memory.limit_in_bytes"; fi
  fi
  echo "{_MARK} BEGIN $i"
  t0=$(cut -d' ' -f1 /proc/uptime)
  if [ -n "$cg" ]; then
    sh -c 'echo $$ > "$1/cgroup.procs" && exec postmark "$2"' sh "$cg" "$pmcfg" 2>&1
  else
    postmark "$pmcfg" 2>&1
  fi
  rc=$?
  t1=$(cut -d' ' -f1 /proc/uptime)
  oom=0
  if [ -n "$cg" ]; then
    if [ "$cgv" = 2 ]; then oom=$(awk '$1=="oom_kill"{{print $2}}' "$cg/memory.events")
    else oom=$(awk '$1=="oom_kill"{{print $2}}' "$cg/memory.oom_control"); fi
    rmdir "$cg"
  fi
  echo "{_MARK} END $i $rc $t0 $t1 ${{oom:-0}}"
  [ "$rc" = 0 ] || exit "$rc"
  left=$(ls -A "${mount_var}" | grep -v '^lost+found$' | wc -l)
  [ "$left" = 0 ] || {{ echo "{_MARK} ERROR postmark left $left entries"; exit 1; }}
  i=$((i + 1))
done
exit 0
"""


def parse_guest_output(output: str, config: Any, *, layout: str, accelerator: str,
                       kernel_release: str | None = None, memory_limit_bytes: int | None = None,
                       drop_page_cache: bool = True, backing: str | None = None) -> PostMarkSummary:
    """The :class:`PostMarkSummary` of what :func:`guest_body` printed.

    accelerator: "tcg" (emulated: the summary says the timings measure an
    emulator) or "kvm".
    """
    text = output.replace("\r", "")
    info: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith(_MARK + " ") and line.split()[1] not in ("BEGIN", "END"):
            parts = line.split(" ", 2)
            info[parts[1]] = parts[2] if len(parts) > 2 else ""
    if "ERROR" in info:
        raise PostMarkError(f"guest: {info['ERROR']}")
    mount = info.get("MOUNT", "").split()
    if len(mount) < 4:
        raise PostMarkError("guest output lacks the mount line (the layout was not built?):\n" + text[-2000:])
    sched_raw = info.get("SCHEDULER", "")
    m = re.search(r"\[([^\]]+)\]", sched_raw)
    sched = m.group(1) if m else (sched_raw or None)
    b = info.get("BACKING", "").split(" ", 2)
    bsched = None
    if len(b) == 3:
        mm = re.search(r"\[([^\]]+)\]", b[2])
        bsched = mm.group(1) if mm else b[2]
    ra = info.get("READ_AHEAD_KB", "").strip()
    env = RunEnvironment(
        layout=layout, kernel_release=kernel_release or info.get("KERNEL", ""),
        file_system=mount[2], mount_options=mount[3],
        device=(lambda d: f"{d[0]} ({d[1]})" if len(d) == 2 and os.path.basename(d[0]) != d[1] else d[0])(
            info.get("DEVICE", mount[0]).split()),
        read_ahead_kb=int(ra) if ra.isdigit() else None, scheduler=sched,
        backing=backing or (b[0] if b and b[0] else "guest scratch disk"),
        backing_device=os.path.basename(b[0]) if b and b[0] else None,
        backing_read_ahead_kb=int(b[1]) if len(b) > 1 and b[1].isdigit() else None,
        backing_scheduler=bsched, memory_limit_bytes=memory_limit_bytes,
        cgroup_version=int(info["CGROUP"]) if info.get("CGROUP", "").isdigit() else None,
        caches_dropped=drop_page_cache, emulated=accelerator == "tcg", accelerator=accelerator,
    )
    runs = []
    for m in re.finditer(rf"^{_MARK} BEGIN (\d+)\n(.*?)^{_MARK} END (\d+) (-?\d+) ([0-9.]+) ([0-9.]+) (\d+)$",
                         text, re.S | re.M):
        i, body, j, rc, t0, t1, oom = m.groups()
        if i != j:
            raise PostMarkError(f"guest output: run {i} ended as run {j}")
        if int(rc) != 0 or int(oom):
            why = f" ({oom} OOM kill(s) in its memory cgroup)" if int(oom) else ""
            raise PostMarkError(f"guest: postmark run {i} exited with status {rc}{why}:\n{body[-2000:]}")
        check_echoed_config(config, body)
        report = parse_report(body)
        runs.append(PostMarkRun(report=report, wall_s=float(t1) - float(t0), environment=env, config=config))
    if not runs:
        raise PostMarkError("guest output holds no completed PostMark run:\n" + text[-2000:])
    return summarize(runs)


# ---------------------------------------------------------------------------
# one call: build a layout, run PostMark on it, tear it down
# ---------------------------------------------------------------------------

def run_on_layout(
    layout: str,
    config: Any,
    *,
    fs_size_bytes: int,
    scratch: str | os.PathLike | None = None,
    vm: bool = False,
    fs_type: str = "ext3",
    mount_options: Sequence[str] = (),
    repeats: int = 1,
    memory_limit_bytes: int | None = None,
    drop_page_cache: bool = True,
    destroy_data_on: str | os.PathLike | None = None,
    keep: bool = False,
    vm_memory_bytes: int = 1 << 30,
    vm_timeout_s: float = 3600.0,
    vm_accelerator: str = "tcg",
) -> PostMarkSummary:
    """Build *layout* ("native", "lvm1", "lvm2"), run PostMark *repeats* times on it, tear it down.

    On the host (vm False): *scratch* is a new file (created, filled with
    data, removed afterwards unless *keep*) or an existing file or block device
    that *destroy_data_on* names again; busy devices are refused before any
    write (:func:`diskmodel.calibrate.harness.scratch.prepare_scratch`). LVM layouts need
    device-mapper (:class:`~diskmodel.calibrate.bench.provision.LayoutUnavailable` says
    to use vm=True). With vm=True the same plan runs as one script in a
    throwaway qemu VM (:func:`diskmodel.calibrate.bench.vm.run_script_in_vm`) whose
    scratch disk has the size the layout needs; *scratch* must then be None.
    *vm_accelerator* is "tcg" (emulation; every report says its timings
    measure the emulator) or "kvm" (where KVM works; never chosen on its own).
    SIGINT and SIGTERM tear everything down and raise
    :class:`~diskmodel.calibrate.bench.provision.Interrupted` (a KeyboardInterrupt).
    """
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.harness import runstate

    needed = L.backing_bytes_required(layout, fs_size_bytes)
    if not vm and scratch is None:
        raise ValueError("scratch must name a new file or a block device (or pass vm=True)")
    if vm and (scratch is not None or destroy_data_on is not None):
        raise ValueError("scratch and destroy_data_on do not apply with vm=True (the VM has its own scratch disk)")
    # One run, one record: every resource below is written down before it is created, and the
    # scratch is locked for the whole run, so a second run on it is refused with this one's PID.
    with L.handle_signals(), \
            (contextlib.nullcontext() if vm else runstate.lock_target(scratch, purpose=f"postmark {layout} scratch")), \
            runstate.ensure_run(f"postmark {layout} {'in a VM' if vm else scratch}"):
        return _run_on_layout_locked(
            layout, config, fs_size_bytes=fs_size_bytes, scratch=scratch, vm=vm, fs_type=fs_type,
            mount_options=mount_options, repeats=repeats, memory_limit_bytes=memory_limit_bytes,
            drop_page_cache=drop_page_cache, destroy_data_on=destroy_data_on, keep=keep,
            vm_memory_bytes=vm_memory_bytes, vm_timeout_s=vm_timeout_s, vm_accelerator=vm_accelerator,
            needed=needed)


def _run_on_layout_locked(layout, config, *, fs_size_bytes, scratch, vm, fs_type, mount_options, repeats,
                          memory_limit_bytes, drop_page_cache, destroy_data_on, keep, vm_memory_bytes,
                          vm_timeout_s, vm_accelerator, needed) -> PostMarkSummary:
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.harness import runstate

    if vm:
        from diskmodel.calibrate.bench.vm import SCRATCH_DEVICE, run_script_in_vm
        plan = L.build_plan(layout, backing=SCRATCH_DEVICE, fs_size_bytes=fs_size_bytes, fs_type=fs_type,
                            mount_options=mount_options)
        body = guest_body(config, repeats=repeats, memory_limit_bytes=memory_limit_bytes,
                          drop_page_cache=drop_page_cache, mount_var=plan.mount_var, device_expr=plan.device_expr)
        L.log.info("plan (in the VM):\n%s", plan.describe())
        result = run_script_in_vm(plan.render_script(body), scratch_disk_bytes=needed,
                                  memory_bytes=vm_memory_bytes, timeout_s=vm_timeout_s,
                                  accelerator=vm_accelerator)
        if result.returncode != 0:
            raise PostMarkError(f"the VM script failed with status {result.returncode}:\n{result.output[-3000:]}")
        return parse_guest_output(result.output, config, layout=layout, accelerator=result.accelerator,
                                  kernel_release=result.kernel_release, memory_limit_bytes=memory_limit_bytes,
                                  drop_page_cache=drop_page_cache, backing=f"{SCRATCH_DEVICE} (VM scratch disk)")

    from diskmodel.calibrate.harness.scratch import prepare_scratch
    L.require_device_mapper(layout)
    L.build_plan(layout, backing=os.fspath(scratch), fs_size_bytes=fs_size_bytes, fs_type=fs_type,
                 mount_options=mount_options)  # validates everything before the scratch is touched
    run = runstate.current_run()
    space = None
    try:
        space = prepare_scratch(scratch, needed, destroy_data_on=destroy_data_on, keep=keep)
        plan = L.build_plan(layout, backing=space.path, fs_size_bytes=fs_size_bytes, fs_type=fs_type,
                            mount_options=mount_options, mount_dir=str(run.work_dir() / "mnt"))
        L.log.info("plan:\n%s", plan.describe())
        with L.HostExecutor(plan) as ex:
            env = host_environment(layout=layout, mountpoint=ex.mountpoint, backing=space.path,
                                   memory_limit_bytes=memory_limit_bytes, caches_dropped=drop_page_cache)
            return run_postmark(config, ex.mountpoint, environment=env, repeats=repeats,
                                memory_limit_bytes=memory_limit_bytes, drop_page_cache=drop_page_cache)
    finally:
        if space is not None:
            space.close()


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
