"""fio jobs on a block device or a file, run with ``--output-format=json`` and parsed.

A job is the model's :class:`diskmodel.model.predictions.block_workloads.FioJob` (one
access pattern: sequential or random, read or write, one request size,
``O_DIRECT``); its own :meth:`~diskmodel.model.predictions.block_workloads.FioJob.fio_arguments`
give fio's options, to which :func:`fio_argv` adds what makes a measurement
repeatable and honest: a fixed random seed (``--randseed``, ``--randrepeat``),
the page cache of the target dropped first (``--invalidate=1``) and, for
writes, the job's own ``--end_fsync=1`` (:attr:`FioJob.end_fsync`, on by
default: fio counts the fsync in the job's time; a loop device over a
buffered image holds O_DIRECT writes in the host's page cache until then). The same text runs on the
host and in the throwaway VM (:func:`fio_words`, rendered for the guest by
:func:`fio_command`, word by word; its initramfs carries the host's ``fio``). :func:`parse_fio_json` reads fio's JSON report (fio
3.x: per job ``read``/``write`` with ``io_bytes``, ``iops``, ``runtime``
[ms] and ``clat_ns``), and :func:`run_fio` runs one job here, as a recorded
child (:func:`diskmodel.calibrate.bench.process.spawn`), optionally inside a
cgroup (:mod:`diskmodel.calibrate.bench.blkio`).

fio's report is the measurement: bytes moved over fio's runtime of the job.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from diskmodel.calibrate.bench.process import communicate_or_kill, spawn
from diskmodel.calibrate.bench.steps import Concat, sh_words
from diskmodel.model.predictions.block_workloads import FioJob

__all__ = ["FioResult", "fio_argv", "fio_command", "fio_words", "parse_fio_json", "run_fio"]


def fio_argv(job: FioJob, filename: str, *, seed: int = 1, runtime_s: float | None = None) -> list[str]:
    """fio's command line for *job* on *filename* (a block device, or a file fio lays out at the job's size).

    *runtime_s*: stop the job after that many seconds even if it has not
    moved all its bytes (None: it moves them all).
    """
    argv = ["fio", *job.fio_arguments(filename), "--numjobs=1", "--invalidate=1", f"--randseed={seed}",
            "--randrepeat=1"]
    if runtime_s is not None:
        argv.append(f"--runtime={runtime_s:g}")
    return argv


def fio_words(job: FioJob, target, *, seed: int = 1, runtime_s: float | None = None) -> tuple:
    """:func:`fio_argv` as words, *target* a word (a path, or a
    :class:`~diskmodel.calibrate.bench.steps.Ref` / :class:`~diskmodel.calibrate.bench.steps.Concat`
    to a captured one) placed as the whole value of ``--filename=``."""
    out = []
    for arg in fio_argv(job, "@FILE@", seed=seed, runtime_s=runtime_s):
        if "@FILE@" in arg:
            head, tail = arg.split("@FILE@", 1)
            parts = target.parts if isinstance(target, Concat) else (target,)
            arg = Concat(tuple(p for p in (head, *parts, tail) if p != ""))
        out.append(arg)
    return tuple(out)


def fio_command(job: FioJob, target, *, seed: int = 1, runtime_s: float | None = None) -> str:
    """:func:`fio_words` as one ``sh`` line, every word by :func:`~diskmodel.calibrate.bench.steps.sh_word`."""
    return sh_words(fio_words(job, target, seed=seed, runtime_s=runtime_s))


@dataclass(frozen=True)
class FioResult:
    """What one fio job measured.

    bytes_moved: bytes read or written [bytes]; runtime_s: fio's runtime of the
    job [s]; rate_bytes_per_s: bytes over runtime [bytes/s]; iops: requests per
    second [1/s]; mean_latency_s: mean completion latency of one request [s].
    """

    job: FioJob
    bytes_moved: int
    runtime_s: float
    rate_bytes_per_s: float
    iops: float
    mean_latency_s: float

    def as_dict(self) -> dict:
        return {"job": self.job.label, "bytes_moved": self.bytes_moved, "runtime_s": self.runtime_s,
                "rate_bytes_per_s": self.rate_bytes_per_s, "iops": self.iops,
                "mean_latency_s": self.mean_latency_s}


def parse_fio_json(text: str, job: FioJob) -> FioResult:
    """The :class:`FioResult` of fio's JSON report *text* of *job* (ValueError naming what is wrong)."""
    start = text.find("{")   # fio may print notes before the JSON object
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"fio output is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict) or not data.get("jobs"):
        raise ValueError(f"fio output holds no job: {text[-500:]!r}")
    report = data["jobs"][0]
    if report.get("error"):
        raise ValueError(f"fio job {job.label} failed with error {report['error']}")
    side = report["write" if job.is_write else "read"]
    io_bytes, runtime_ms = int(side["io_bytes"]), float(side["runtime"])
    if io_bytes <= 0 or runtime_ms <= 0:
        raise ValueError(f"fio job {job.label} moved {io_bytes} bytes in {runtime_ms} ms")
    runtime_s = runtime_ms / 1e3
    lat = side.get("clat_ns") or side.get("lat_ns") or {}
    return FioResult(job=job, bytes_moved=io_bytes, runtime_s=runtime_s, rate_bytes_per_s=io_bytes / runtime_s,
                     iops=float(side["iops"]), mean_latency_s=float(lat.get("mean", 0.0)) / 1e9)


def run_fio(job: FioJob, filename: str, *, cgroup_procs=None, runtime_s: float | None = None,
            timeout_s: float = 600.0) -> FioResult:
    """Run *job* on *filename* here; with *cgroup_procs* (a cgroup's ``cgroup.procs``, e.g.
    :attr:`~diskmodel.calibrate.bench.blkio.ThrottleCgroup.procs_file`) inside that cgroup."""
    proc = spawn(fio_argv(job, filename, runtime_s=runtime_s), name="fio", stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cgroup_procs=cgroup_procs)
    out, err = communicate_or_kill(proc, timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"fio {job.label} on {filename} exited with status {proc.returncode}: "
                           f"{(err or out).strip()[-500:]}")
    return parse_fio_json(out, job)
