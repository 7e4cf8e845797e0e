"""Validity checks of a measurement, each a :class:`Verdict`.

A verdict's ``passed`` is True (the check passed), False (it failed: the
measurement should not be trusted as it stands) or None (the check could not be
made here; ``detail`` says why). The calibration run collects them into its
result's ``checks``.

- :func:`reads_reached_device`: the block layer's counters
  (``/sys/block/<dev>/stat``) moved by at least as many reads as were issued.
  Take :func:`read_device_stat` before and after the reads.
- :func:`written_data`: the target holds written data, not holes or
  fallocated-but-unwritten extents (which read as zeros without I/O).
- :func:`timer_resolution`: the clock resolves far finer than the latencies measured.
- :func:`queue_depth_one`: the backend issues one request at a time.
- :func:`repeatability`: repeats of the same measurement agree (coefficient of variation).
"""
from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from diskmodel.calibrate.harness import devstate
from diskmodel.model.fit.calibration import Verdict  # the record of a check, kept with the result it checks

__all__ = [
    "DeviceStat",
    "stat_path_for",
    "read_device_stat",
    "reads_reached_device",
    "written_data",
    "timer_resolution",
    "queue_depth_one",
    "repeatability",
]

SECTOR_BYTES = 512


@dataclass(frozen=True)
class DeviceStat:
    """Counters of one block device from /sys/class/block/<name>/stat (see Documentation/block/stat.rst)."""

    device: str  # kernel name whose counters these are
    stat_path: str
    reads_completed: int
    reads_merged: int
    sectors_read: int  # 512-byte sectors, whatever the device's block size
    read_ticks_ms: int
    in_flight: int


def _devnum_name(major: int, minor: int) -> str | None:
    link = Path(f"/sys/dev/block/{major}:{minor}")
    return link.resolve().name if link.exists() else None


def stat_path_for(path: str | os.PathLike) -> Path | None:
    """The stat file whose counters a read of PATH moves, or None where there is none.

    A block device (a loop device included): its own counters. A regular file:
    the block device holding its file system (None for file systems with no
    block device, e.g. tmpfs, overlay on an anonymous device, network file systems).
    """
    st = os.stat(path)
    if stat.S_ISBLK(st.st_mode):
        name = _devnum_name(os.major(st.st_rdev), os.minor(st.st_rdev))
    elif stat.S_ISREG(st.st_mode):
        name = _devnum_name(os.major(st.st_dev), os.minor(st.st_dev))
    else:
        raise ValueError(f"path {os.fspath(path)!r} is neither a block device nor a regular file")
    if name is None:
        return None
    p = Path("/sys/class/block") / name / "stat"
    return p if p.is_file() else None


def read_device_stat(path: str | os.PathLike) -> DeviceStat | None:
    """Snapshot the counters behind PATH (see :func:`stat_path_for`); None where none exist."""
    p = stat_path_for(path)
    if p is None:
        return None
    try:
        fields = [int(x) for x in p.read_text().split()]
    except (OSError, ValueError):
        return None
    if len(fields) < 9:
        return None
    return DeviceStat(p.parent.name, str(p), fields[0], fields[1], fields[2], fields[3], fields[8])


def reads_reached_device(
    stat_before: DeviceStat | None,
    stat_after: DeviceStat | None,
    expected_reads: int,
    expected_bytes: int | None = None,
) -> Verdict:
    """Did at least EXPECTED_READS reads (and EXPECTED_BYTES) reach the block layer?

    Counters can only over-count here (other processes share the device; a
    large request may be split), so the check passes when the counters moved by
    at least what was issued. Where there are no counters (no block device under
    a file system, or no stat snapshot) the verdict is None ("unknown"). On a
    virtual machine the counters are the guest's: they show that requests left
    the guest, not that the host's storage served them (the host may cache).
    """
    name = "reads_reached_device"
    if expected_reads < 0:
        raise ValueError(f"expected_reads must be >= 0, not {expected_reads}")
    if expected_bytes is not None and expected_bytes < 0:
        raise ValueError(f"expected_bytes must be >= 0, not {expected_bytes}")
    if stat_before is None or stat_after is None:
        return Verdict(name, None, "unknown: no block-layer counters for this target (no /sys/block/<dev>/stat)")
    if stat_before.stat_path != stat_after.stat_path:
        raise ValueError(
            f"stat_before ({stat_before.stat_path}) and stat_after ({stat_after.stat_path}) are of different devices"
        )
    reads = stat_after.reads_completed - stat_before.reads_completed
    merged = stat_after.reads_merged - stat_before.reads_merged
    sectors = stat_after.sectors_read - stat_before.sectors_read
    detail = (
        f"{stat_after.device}: {reads} reads completed (+{merged} merged), {sectors * SECTOR_BYTES} bytes "
        f"for {expected_reads} reads issued"
        + (f" of {expected_bytes} bytes" if expected_bytes is not None else "")
    )
    ok = reads + merged >= expected_reads and (expected_bytes is None or sectors * SECTOR_BYTES >= expected_bytes)
    if not ok:
        detail += "; fewer than issued: reads were served above the block layer (page cache, holes?)"
    return Verdict(name, ok, detail)


def written_data(path: str | os.PathLike) -> Verdict:
    """Is every byte of PATH written data (no holes, no fallocated-but-unwritten extents)?

    Regular files are checked with SEEK_HOLE/SEEK_DATA and FIEMAP; a loop
    device through its backing file. Other block devices cannot be checked
    (thin provisioning and discarded blocks may also read as zeros without I/O):
    the verdict is None.
    """
    from diskmodel.calibrate.harness.device import HOLES_EXPLANATION, unwritten_regions

    name = "written_data"
    path = os.fspath(path)
    st = os.stat(path)
    target = path
    if stat.S_ISBLK(st.st_mode):
        loop = devstate.loop_device(path)
        backing = (loop["back-file"] or None) if loop else None
        if backing is None:
            return Verdict(name, None, f"unknown: {path} is a block device; holes cannot be detected on it")
        if not os.path.isfile(backing):
            return Verdict(name, None, f"unknown: loop backing file {backing} is not reachable from here")
        target = backing
    elif not stat.S_ISREG(st.st_mode):
        raise ValueError(f"path {path!r} is neither a block device nor a regular file")
    regions = unwritten_regions(target)
    if not regions:
        return Verdict(name, True, f"{target}: every byte is written data (no holes, no unwritten extents)")
    total = sum(r.length_bytes for r in regions)
    return Verdict(
        name,
        False,
        f"{target}: {len(regions)} unwritten region(s), {total} bytes, first at byte {regions[0].start_bytes}: "
        + HOLES_EXPLANATION,
    )


def timer_resolution(required_s: float = 1e-6, samples: int = 2001) -> Verdict:
    """Is the monotonic clock fine enough (resolution and read cost at most REQUIRED_S)?

    Reports clock_getres(CLOCK_MONOTONIC), the smallest nonzero step seen and the
    median cost of a perf_counter_ns() pair (the overhead the device backend subtracts).
    """
    if not (np.isfinite(required_s) and required_s > 0):
        raise ValueError(f"required_s must be a positive finite number, not {required_s}")
    if samples < 3:
        raise ValueError(f"samples must be >= 3, not {samples}")
    res_s = time.clock_getres(time.CLOCK_MONOTONIC)
    clock = time.perf_counter_ns
    deltas = np.empty(samples, dtype=np.int64)
    for i in range(samples):
        t0 = clock()
        t1 = clock()
        while t1 == t0:
            t1 = clock()
        deltas[i] = t1 - t0
    step_ns = int(deltas.min())
    cost_ns = int(np.median(deltas))
    worst_s = max(res_s, step_ns * 1e-9, cost_ns * 1e-9)
    ok = worst_s <= required_s
    return Verdict(
        "timer_resolution",
        ok,
        f"CLOCK_MONOTONIC resolution {res_s * 1e9:.0f} ns, smallest step seen {step_ns} ns, "
        f"clock pair cost {cost_ns} ns (subtracted); required <= {required_s * 1e9:.0f} ns",
    )


def queue_depth_one(backend: Any) -> Verdict:
    """Does BACKEND issue one request at a time?

    The device backend (:class:`diskmodel.calibrate.harness.device.DirectBackend`) does
    by construction: each read is a synchronous ``os.preadv`` on one thread,
    and the next is issued only after it returned; it declares ``queue_depth = 1``.
    Simulated backends serve one request at a time too. A backend that does not
    declare ``queue_depth`` gets None (unknown).
    """
    depth = getattr(backend, "queue_depth", None)
    kind = type(backend).__name__
    if depth is None:
        return Verdict("queue_depth_one", None, f"unknown: {kind} does not declare queue_depth")
    if depth == 1:
        return Verdict("queue_depth_one", True, f"{kind} issues one synchronous request at a time (queue depth 1)")
    return Verdict("queue_depth_one", False, f"{kind} declares queue_depth={depth}; latencies overlap")


def repeatability(samples_by_repeat: Sequence[Sequence[float]] | np.ndarray, max_cv: float = 0.10) -> Verdict:
    """Do repeats of the same measurement agree?

    SAMPLES_BY_REPEAT holds one sequence of timings [s] per repeat, each over
    the same points. The coefficient of variation (std/mean, ddof=1) of the
    repeats' medians must be at most MAX_CV. Where every repeat has the same
    length, the median over points of the per-point CV across repeats is
    reported too.
    """
    if not (np.isfinite(max_cv) and max_cv > 0):
        raise ValueError(f"max_cv must be a positive finite number, not {max_cv}")
    repeats = [np.asarray(r, dtype=np.float64).reshape(-1) for r in samples_by_repeat]
    if len(repeats) < 2:
        raise ValueError(f"samples_by_repeat must hold at least 2 repeats, not {len(repeats)}")
    for i, r in enumerate(repeats):
        if r.size == 0:
            raise ValueError(f"samples_by_repeat[{i}] is empty")
        if not np.all(np.isfinite(r)):
            raise ValueError(f"samples_by_repeat[{i}] holds NaN or inf")
    medians = np.array([np.median(r) for r in repeats])
    mean = medians.mean()
    cv = float(medians.std(ddof=1) / mean) if mean > 0 else float("inf")
    # the verdict's figure and its requirement side by side; the per-point CV (how much single
    # timings scatter, which rotation alone makes large) is shown apart, as information only
    detail = (f"{len(repeats)} repeats, medians {np.round(medians * 1e6, 2).tolist()} us, "
              f"CV of medians {cv:.3f} (required <= {max_cv})")
    if len({r.size for r in repeats}) == 1:
        grid = np.vstack(repeats)
        col_mean = grid.mean(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            point_cv = grid.std(axis=0, ddof=1) / col_mean
        detail += f"; median per-point CV {float(np.nanmedian(point_cv)):.3f} (not judged: single timings)"
    ok = cv <= max_cv
    return Verdict("repeatability", ok, detail)
