"""PostMark on native ext3 over a loop device on this machine, against the model: the check.

:func:`run_check` needs root (loop devices, mounts, cgroups) and postmark;
``benchmarks/host_postmark_check.py`` runs it and writes its artifact.
Steps:

1. **Calibrate the storage** with the harness (real O_DIRECT backend,
   :func:`diskmodel.calibrate.harness.measure.calibrate`) on a fully written scratch
   file in ``--scratch-dir`` (default /var/tmp, the same file system the
   PostMark scratch lives on).  The check is written for flash-backed
   storage: there the harness reports no mechanical seek and gives a flat
   latency model (mean latency of a 4 KiB read, and a transfer rate); a
   calibration that finds a mechanical seek stops the check.
2. **Model inputs.**  ``CalibrationResult.to_disk()`` refuses a device
   without a mechanical seek (by design), so :func:`flat_latency_disk` builds
   the :class:`diskmodel.model.Disk` from documented model objects: the flat
   latency (less one block's transfer) as ``command_overhead_s`` (paid by
   every request, sequential or not, as on flash), a constant zero
   :class:`~diskmodel.model.TableSeek`, one zone whose rate is the calibrated
   transfer rate, and a spindle so fast (one 512-byte sector per track: a
   revolution is one sector's transfer time) that the rotational terms of
   eqs. (4) and (8) are negligible against the latency.  The file system is
   read off the real one (``dumpe2fs -h``: block and inode size, journal
   size; the mount options; ``max_sectors_kb`` of the loop device for the
   largest request).  Page cache P_H (eq. 2): ``PageCache(size_bytes =
   memory limit - what the cgroup holds besides page cache)``, the latter
   measured: a thread samples the run's memory cgroup periodically
   (``CgroupSampler.period_s``) and keeps the largest ``usage - cache``
   (postmark's anonymous memory plus kernel memory: dentries, inodes,
   buffer heads), the mean over the repeats is subtracted.  Without a
   limit, the page cache is MemAvailable.
3. **Run PostMark** (real ``postmark``) on native ext3 over a loop device
   (``losetup --direct-io=on``; :mod:`diskmodel.calibrate.bench.provision`' plan and
   :class:`~diskmodel.calibrate.bench.provision.HostExecutor`), one file system for
   all cells, at each memory limit (``run_postmark``: sync and drop caches
   before each run, a fresh memory cgroup per run), ``--repeats`` times.
   Measured throughput is PostMark's bytes over the outside wall clock
   (PostMark's own clock counts whole seconds); 95 % Student-t intervals.
   The loop device's completed requests (``/sys/block/*/stat``) are
   recorded per run, for comparison with the model's request count.
4. **Predict** with :func:`diskmodel.model.predict.predict` for the same
   configuration, in two variants (and, where the model offers it, the
   pipeline what-if ``FileSystem(overlapped_writeback=True)`` of ``+cpu``):

   * ``disk only``: the calibrated disk, the file system, the page cache
     size; everything else the model's defaults (``PageCache``'s default
     memory copy rate and cost per application I/O call;
     ``cpu_per_file_operation_s`` 0);
   * ``+cpu`` (the headline): also this machine's memory path measured
     without the disk (:class:`MemoryPath`): the copy rate of ``dd`` in
     4 KiB calls on a tmpfs, and ``cpu_per_file_operation_s`` from one
     PostMark run of the same workload on that tmpfs (no disk I/O at all):
     the tmpfs wall time less the model's cache-side time, per file
     operation.

Per-cell error = predicted / measured - 1 [%]; cells are (memory limit,
read/write).  The last line printed is ``median_cell_error_pct: X``, the
median of the absolute ``+cpu`` errors (:meth:`CheckResult.median_error_pct`).

Every loop device, mount, cgroup and scratch file is torn down on success,
failure and Ctrl-C (HostExecutor, MemoryCgroup, Scratch; SIGINT/SIGTERM raise
inside ``handle_signals``).
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from diskmodel.calibrate.bench import process
from diskmodel.model import Disk
from diskmodel.model.drive.disk import flat_latency_disk
from diskmodel.model.filesystems.filesystem import FileSystem, PageCache
from diskmodel.model.predict import predict
from diskmodel.model.stacks.stack import stack_on
from diskmodel.model.predictions.workload import PostMarkConfig, expected_counts
from diskmodel.model.units import KIB, MIB, GIB

__all__ = ["CheckResult", "Cell", "CgroupSampler", "MemoryPath", "PIPELINE", "calibrate_storage",
           "disk_from_calibration", "filesystem_of", "measure_memory_path", "mem_available_bytes", "run_check"]

#: The model offers the pipeline composition (FileSystem.overlapped_writeback) as a what-if.
PIPELINE = "overlapped_writeback" in {f.name for f in dataclasses.fields(FileSystem)}


# --------------------------------------------------------------------------- model inputs

def disk_from_calibration(result, capacity_bytes: int) -> Disk:
    """The flat-latency :class:`Disk` of a calibration whose device has no mechanical seek."""
    if result.latency_model is None:
        raise ValueError("result: the calibration found a mechanical seek; use result.to_disk()")
    return flat_latency_disk(result.latency_model.mean_s, 1.0 / result.latency_model.per_byte_s, capacity_bytes,
                             block_bytes=result.block_size_bytes, provenance=result.to_disk(seek="flat").provenance)


def calibrate_storage(directory: str, size_bytes: int, budget_s: float):
    """Calibrate the storage under *directory*: a new, fully written file, read with O_DIRECT, removed after."""
    from diskmodel.calibrate.harness.device import open_backend
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.scratch import prepare_scratch

    from diskmodel.calibrate.harness import runstate

    path = Path(directory) / f"diskmodel-hostcheck-cal-{os.getpid()}.img"
    with runstate.ensure_run("host check: calibrate the storage"), prepare_scratch(path, size_bytes) as scratch:
        backend = open_backend(scratch.path)
        try:
            return calibrate(backend, budget_s=budget_s, progress=False)
        finally:
            backend.close()


def filesystem_of(executor) -> tuple[FileSystem, dict]:
    """The model's :class:`FileSystem` for the mounted ext2/3 of a HostExecutor, read off the real one."""
    out = executor.run(("dumpe2fs", "-h", executor.plan.device), "dumpe2fs -h")
    if out.returncode != 0:
        raise RuntimeError(f"dumpe2fs failed: {out.stderr}")
    text = out.stdout
    block = int(re.search(r"^Block size:\s+(\d+)", text, re.M).group(1))
    inode = int(re.search(r"^Inode size:\s+(\d+)", text, re.M).group(1))
    journal = re.search(r"^(?:Total journal size|Journal size):\s+(\d+)([kKMG])", text, re.M)
    journal_bytes = int(journal.group(1)) * {"k": KIB, "K": KIB, "M": MIB, "G": GIB}[journal.group(2)]
    from diskmodel.calibrate.bench.postmark import describe_mount
    dev, fstype, opts = describe_mount(executor.mountpoint)
    options = dict(o.split("=", 1) if "=" in o else (o, "") for o in opts.split(","))
    name = Path(os.path.realpath(executor.device)).name
    max_kb = int(Path(f"/sys/block/{name}/queue/max_sectors_kb").read_text())
    kind = "ext3" if fstype in ("ext3", "ext4") and "has_journal" in text else "ext2"
    fs = FileSystem(kind=kind, journal_mode=options.get("data", "ordered"), block_size_bytes=block,
                    inode_size_bytes=inode, commit_interval_s=float(options.get("commit", 5)),
                    journal_size_bytes=journal_bytes, atime_updates="noatime" not in options,
                    dir_index="dir_index" in text, max_request_bytes=max_kb * KIB)
    return fs, {"device": dev, "fstype": fstype, "mount_options": opts, "max_sectors_kb": max_kb}


def _block_stat(device: str) -> tuple[int, int, int, int]:
    """(read requests, bytes read, write requests, bytes written) completed by *device* so far
    (/sys/block/<dev>/stat; sectors of 512 bytes)."""
    name = Path(os.path.realpath(device)).name
    f = Path(f"/sys/block/{name}/stat").read_text().split()
    return int(f[0]), int(f[2]) * 512, int(f[4]), int(f[6]) * 512


def mem_available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * KIB
    raise RuntimeError("no MemAvailable in /proc/meminfo")


# --------------------------------------------------------------------------- what the cgroup holds

class CgroupSampler(threading.Thread):
    """Samples the memory cgroups ``diskmodel-postmark-<our pid>-*`` that run_postmark makes.

    Keeps, per cgroup, the largest ``usage - page cache`` [bytes] (v1:
    memory.usage_in_bytes - memory.stat cache; v2: memory.current -
    memory.stat file), i.e. postmark's anonymous memory plus kernel memory.
    """

    ROOTS = (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))

    def __init__(self, period_s: float = 0.1):
        super().__init__(daemon=True)
        self.period_s = period_s
        self.other_bytes: dict[str, int] = {}
        self._halt = threading.Event()

    @staticmethod
    def _other(path: Path) -> int | None:
        try:
            stat = dict(line.split() for line in (path / "memory.stat").read_text().splitlines())
            if (path / "memory.usage_in_bytes").exists():
                return int((path / "memory.usage_in_bytes").read_text()) - int(stat["cache"])
            return int((path / "memory.current").read_text()) - int(stat["file"])
        except (OSError, KeyError, ValueError):
            return None

    def run(self):
        pattern = f"diskmodel-postmark-{os.getpid()}-*"
        while not self._halt.is_set():
            for root in self.ROOTS:
                for cg in root.glob(pattern):
                    v = self._other(cg)
                    if v is not None:
                        self.other_bytes[cg.name] = max(v, self.other_bytes.get(cg.name, 0))
            self._halt.wait(self.period_s)

    def stop(self):
        self._halt.set()
        self.join(5)


# --------------------------------------------------------------------------- the check

@dataclass
class Cell:
    limit_bytes: int | None
    summary: object
    other_bytes: float | None
    cache_bytes: float
    predicted: dict = field(default_factory=dict)   # variant -> Prediction
    #: per run: (read requests, bytes read, write requests, bytes written) the loop device completed
    device_requests: tuple = ()

    def measured(self, kind: str) -> tuple[float, float, float]:
        key = f"{kind}_bytes_per_s_wall"
        lo, hi = self.summary.conf_int().loc[key, ["lower", "upper"]]
        return self.summary.params[key], lo, hi


@dataclass
class CheckResult:
    cells: list
    lines: list
    calibration: object
    disk: Disk
    filesystem: FileSystem
    memory_path: MemoryPath | None
    wall_s: float

    def rows(self, variant: str = "+cpu") -> list[dict]:
        out = []
        for c in self.cells:
            for kind in ("read", "write"):
                m, lo, hi = c.measured(kind)
                p = getattr(c.predicted[variant], f"{kind}_throughput_bytes_per_s")
                out.append({"limit_bytes": c.limit_bytes, "kind": kind, "measured": m, "ci": (lo, hi),
                            "predicted": p, "error_pct": 100.0 * (p / m - 1.0)})
        return out

    def median_error_pct(self, variant: str = "+cpu") -> float:
        return float(statistics.median(abs(r["error_pct"]) for r in self.rows(variant)))


def _fmt_limit(limit):
    return "none" if limit is None else f"{limit / MIB:.0f} MiB"


def _dd_rate(args: list[str]) -> float:
    """Bytes per second that ``dd`` reports copying [bytes/s] (its own clock)."""
    res = process.run(["dd", *args], timeout_s=600)
    if res.returncode != 0:
        raise RuntimeError(f"dd {' '.join(args)} failed (exit {res.returncode}): {res.stderr.strip()[:200]}")
    m = re.search(r"^(\d+) bytes .* copied, ([0-9.e+-]+) s", res.stderr, re.M)
    if not m:
        raise RuntimeError(f"cannot read dd's report: {res.stderr!r}")
    return int(m.group(1)) / float(m.group(2))


@dataclass(frozen=True)
class MemoryPath:
    """This machine's page-cache side, measured without a disk (on a tmpfs).

    copy_rate_bytes_per_s: R_CT of eq. (2), the mean of dd's write and read
    rates in 4 KiB calls (stdio's buffer size, so PostMark's buffered
    512-byte calls reach the kernel as such 4 KiB calls: their cost is in
    R_CT, and the model's per-call ``syscall_s`` is set to 0).
    cpu_per_file_operation_s: a PostMark run of the workload on the tmpfs,
    its wall time less the model's cache-side time (copies at R_CT), per
    file operation (create, delete, read, append).
    """

    copy_rate_bytes_per_s: float
    cpu_per_file_operation_s: float
    tmpfs_wall_s: float

    def apply(self, fs: FileSystem, cache: PageCache) -> tuple[FileSystem, PageCache]:
        return (fs.evolve(cpu_per_file_operation_s=self.cpu_per_file_operation_s),
                cache.evolve(rate_bytes_per_s=self.copy_rate_bytes_per_s, syscall_s=0.0))


def measure_memory_path(config: PostMarkConfig, disk: Disk, fs: FileSystem, layout, *, say=print) -> MemoryPath:
    """:class:`MemoryPath` of this machine, for workload *config* (a tmpfs mounted and removed here)."""
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.bench.postmark import run_postmark_once
    from diskmodel.calibrate.bench.tmpfs import tmpfs_mounted
    from diskmodel.calibrate.bench.postmark_results import RunEnvironment

    # The tmpfs is recorded before it is mounted, and the run's teardown unmounts it
    # (also after a SIGKILL, through `diskmodel cleanup`).
    with runstate.ensure_run("host check: PostMark on tmpfs") as state, \
            tmpfs_mounted(state, 4 << 30, prefix="tmpfs.", source="tmpfs") as where:
        mnt = str(where)
        f = os.path.join(mnt, "dd.bin")
        write = _dd_rate(["if=/dev/zero", f"of={f}", "bs=4096", "count=65536"])
        read = _dd_rate([f"if={f}", "of=/dev/null", "bs=4096"])
        os.unlink(f)
        rate = 0.5 * (write + read)
        env = RunEnvironment(stack="tmpfs", kernel_release=os.uname().release, file_system="tmpfs",
                             mount_options="size=4g", device="tmpfs", read_ahead_kb=None, scheduler=None,
                             backing="memory")
        run = run_postmark_once(config, mnt, environment=env, drop_page_cache=True)
    counts = expected_counts(config)
    t = counts.total
    ops = t.creates + t.deletes + t.reads + t.appends
    big = PageCache(size_bytes=float(64 * GIB), rate_bytes_per_s=rate, syscall_s=0.0)
    p = predict(stack_on(disk, layout, fs.evolve(cpu_per_file_operation_s=0.0)), counts, big)
    cache_s = p.dst_parts["cache_s"]
    cpu = (run.wall_s - cache_s) / ops
    say(f"memory path (tmpfs, no disk): dd 4 KiB calls write {write / 1e9:.2f} GB/s, read {read / 1e9:.2f} GB/s "
        f"-> R_CT {rate / 1e9:.2f} GB/s; PostMark on tmpfs {run.wall_s:.2f} s wall, model copies {cache_s:.2f} s, "
        f"{ops:.0f} file operations -> cpu_per_file_operation_s {cpu * 1e6:.2f} us")
    if cpu < 0:
        raise RuntimeError(f"the model's copy time ({cache_s:.2f} s) exceeds the tmpfs run ({run.wall_s:.2f} s): "
                           "cpu_per_file_operation_s would be negative")
    return MemoryPath(rate, cpu, run.wall_s)


def run_check(config: PostMarkConfig, *, limits, repeats: int = 2, fs_size_bytes: int = 2 * GIB,
              scratch_dir: str = "/var/tmp", calibration_bytes: int = 1 * GIB, budget_s: float = 10.0,
              with_cpu: bool = True, say=print) -> CheckResult:
    """Calibrate, run PostMark at each memory limit, predict; see the module docstring.

    SIGINT and SIGTERM raise :class:`diskmodel.calibrate.bench.host_executor.Interrupted`
    throughout, so every scratch file, loop device, mount and cgroup is removed.
    """
    from diskmodel.calibrate.bench.host_executor import handle_signals

    limits = list(limits)
    if not limits or any(x is not None and (not isinstance(x, int) or x < 16 * MIB) for x in limits):
        raise ValueError(f"limits must be a non-empty list of None or ints >= 16 MiB [bytes] (got {limits!r})")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1 (got {repeats!r})")
    with handle_signals():
        return _run_check(config, limits=limits, repeats=repeats, fs_size_bytes=fs_size_bytes,
                          scratch_dir=scratch_dir, calibration_bytes=calibration_bytes, budget_s=budget_s,
                          with_cpu=with_cpu, say=say)


def _run_check(config, *, limits, repeats, fs_size_bytes, scratch_dir, calibration_bytes, budget_s, with_cpu,
               say) -> CheckResult:
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench import postmark as P
    from diskmodel.calibrate.bench.host_executor import HostExecutor, handle_signals
    from diskmodel.calibrate.harness.scratch import prepare_scratch
    from diskmodel.model.stacks.stack import paper_stack

    t0 = time.monotonic()
    lines: list[str] = []

    def out(line=""):
        lines.append(line)
        say(line)

    out(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs; "
        "PostMark is CPU-bound when cached, so other work on the machine slows it)")
    cal = calibrate_storage(scratch_dir, calibration_bytes, budget_s)
    if cal.latency_model is None:
        raise RuntimeError("this check is written for storage without a mechanical seek; the calibration found one")
    lm = cal.latency_model
    out(f"calibration of {cal.target} ({cal.wall_time_s:.1f} s): {cal.plausibility().detail.split(' (')[0]}; "
        f"flat latency mean {lm.mean_s * 1e6:.1f} us (p50 {lm.p50_s * 1e6:.1f}, p99 {lm.p99_s * 1e6:.1f}) "
        f"per {cal.block_size_bytes}-byte read, {1e-6 / lm.per_byte_s:.0f} MB/s")
    stack = paper_stack("native", fs_size_bytes=fs_size_bytes)
    needed = L.backing_bytes_required(stack)
    disk = disk_from_calibration(cal, needed)
    layout = stack.volume
    out(f"model disk: command overhead {disk.command_overhead_s * 1e6:.1f} us, seek 0, "
        f"mean rotational latency {disk.mean_rotational_latency_s * 1e9:.0f} ns, "
        f"rate {disk.zone_rates_bytes_per_s()[0] / 1e6:.0f} MB/s")
    cfg_text = (f"{config.number_of_files} files of {config.min_file_size_bytes}-{config.max_file_size_bytes} B, "
                f"{config.transactions} transactions, read/write blocks {config.read_block_size_bytes}/"
                f"{config.write_block_size_bytes} B, buffered {config.buffered_io}, seed {config.seed}")
    out(f"workload: {cfg_text}; native ext3 of {fs_size_bytes / MIB:.0f} MiB on a loop device "
        f"(--direct-io=on) over a file in {scratch_dir}; {repeats} repeats per memory limit")

    cells: list[Cell] = []
    scratch_path = Path(scratch_dir) / f"diskmodel-hostcheck-{os.getpid()}.img"
    sampler = CgroupSampler()
    sampler.start()
    try:
        with handle_signals():
            space = None
            try:
                space = prepare_scratch(scratch_path, needed)
                plan = L.build_plan(stack, backing=space.path, queue_defaults=True)
                with HostExecutor(plan) as ex:
                    fs, fsinfo = filesystem_of(ex)
                    out(f"file system: {fsinfo['fstype']} ({fsinfo['mount_options']}) on {fsinfo['device']}, "
                        f"block {fs.block_size_bytes} B, inode {fs.inode_size_bytes} B, journal "
                        f"{fs.journal_size_bytes / MIB:.0f} MiB, commit {fs.commit_interval_s:g} s, "
                        f"max request {fs.max_request_bytes // KIB} KiB")
                    for limit in limits:
                        before = set(sampler.other_bytes)
                        stat0 = _block_stat(ex.device)
                        env = P.host_environment(stack=stack, mountpoint=ex.mountpoint, backing=space.path,
                                                 memory_limit_bytes=limit)
                        summary = P.run_postmark(config, ex.mountpoint, environment=env, repeats=repeats,
                                                 memory_limit_bytes=limit)
                        stat1 = _block_stat(ex.device)
                        time.sleep(0.2)
                        other = [v for k, v in sampler.other_bytes.items() if k not in before]
                        if limit is None:
                            other_mean, cache = None, float(mem_available_bytes())
                        else:
                            if not other:
                                raise RuntimeError(f"no sample of the run's memory cgroup (limit {limit})")
                            other_mean = float(np.mean(other))
                            cache = max(0.0, limit - other_mean)
                        cells.append(Cell(limit, summary, other_mean, cache,
                                          device_requests=tuple((b - a) / repeats for a, b in zip(stat0, stat1))))
                        walls = ", ".join(f"{r.wall_s:.1f}" for r in summary.runs)
                        out(f"  ran limit {_fmt_limit(limit)}: wall {walls} s"
                            + (f"; cgroup non-cache memory {other_mean / MIB:.1f} MiB" if other_mean else ""))
            finally:
                if space is not None:
                    space.close()
    finally:
        sampler.stop()

    memory = measure_memory_path(config, disk, fs, layout, say=out) if with_cpu else None
    counts = expected_counts(config)
    for c in cells:
        cache = PageCache(size_bytes=c.cache_bytes)
        c.predicted["disk only"] = predict(stack_on(disk, layout, fs), counts, cache)
        if memory is not None:
            fs_m, cache_m = memory.apply(fs, cache)
            c.predicted["+cpu"] = predict(stack_on(disk, layout, fs_m), counts, cache_m)
            if PIPELINE:
                c.predicted["+cpu pipeline"] = predict(stack_on(disk, layout, fs_m.evolve(overlapped_writeback=True)),
                                                       counts, cache_m)

    variants = list(cells[0].predicted)
    headline = "+cpu" if "+cpu" in variants else "disk only"
    out("")
    head = (f"{'memory limit':>12} {'page cache':>10} {'op':>5} {'measured MB/s (95% CI)':>26}"
            + "".join(f" {'pred ' + v:>16} {'err %':>7}" for v in variants))
    out(head)
    for c in cells:
        for kind in ("read", "write"):
            m, lo, hi = c.measured(kind)
            ci = f"[{lo / 1e6:.1f}, {hi / 1e6:.1f}]" if math.isfinite(lo) else "[n/a]"
            row = f"{_fmt_limit(c.limit_bytes):>12} {c.cache_bytes / MIB:>8.0f}Mi {kind:>5} {m / 1e6:>9.2f} {ci:>16}"
            for v in variants:
                p = getattr(c.predicted[v], f"{kind}_throughput_bytes_per_s")
                row += f" {p / 1e6:>16.2f} {100 * (p / m - 1):>+7.1f}"
            out(row)
    out("")
    for c in cells:
        p = c.predicted[headline]
        parts = ", ".join(f"{k} {v:.2f}" for k, v in p.dst_parts.items())
        out(f"  {_fmt_limit(c.limit_bytes)}: predicted elapsed {p.elapsed_s:.2f} s vs measured wall "
            f"{c.summary.params['wall_s']:.2f} s; P_H data {p.details['p_hit_data']:.2f}; time by part [s]: {parts}")
        if c.device_requests:
            r, rb, w, wb = c.device_requests
            io = p.io_counts
            model_requests = io.get("data_requests", math.nan) + io.get("metadata_requests", math.nan)
            out(f"      loop device per run: {r:.0f} reads ({rb / MIB:.0f} MiB), {w:.0f} writes ({wb / MIB:.0f} MiB), "
                f"{r + w:.0f} requests; the model's data + metadata requests: {model_requests:.0f}")
    result = CheckResult(cells, lines, cal, disk, fs, memory, time.monotonic() - t0)
    for v in variants:
        if v != headline:
            out(f"median_cell_error_pct ({v}): {result.median_error_pct(v):.1f}")
    out(f"wall time of the check: {result.wall_s:.0f} s; load average at the end: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    out(f"median_cell_error_pct: {result.median_error_pct(headline):.1f}")
    return result

