"""One member made measurably slower: a throwaway cgroup v1 blkio throttle on chosen block devices.

A RAID 1 over a new and an old disk (Dagenais) needs members of unequal
speed; on one flash-backed host every loop device is equally fast, so one is
slowed down by the block cgroup's throttle: ``blkio.throttle.read_bps_device``,
``write_bps_device``, ``read_iops_device`` and ``write_iops_device``
(cgroup v1, ``/sys/fs/cgroup/blkio``; Documentation/admin-guide/cgroup-v1/blkio-controller.rst),
one line ``MAJ:MIN VALUE`` each.  The limit applies to the I/O that processes
in the cgroup submit to that device, directly or through a layer that clones
their requests onto it (a btrfs or md mirror, a loop device with direct I/O),
so the benchmark process is started inside it (:meth:`ThrottleCgroup.prefix`).

The cgroup is recorded in the run's state file before it is made
(kind ``cgroup``: :mod:`diskmodel.calibrate.harness.resources` kills what is
in it and removes it on every exit path, and ``diskmodel cleanup`` after a
SIGKILL).
"""
from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from diskmodel.calibrate.harness import runstate

__all__ = ["BLKIO_ROOT", "Throttle", "ThrottleCgroup", "blkio_available", "device_number"]

BLKIO_ROOT = Path("/sys/fs/cgroup/blkio")
PREFIX = "diskmodel-blkio-"
_FILES = {"read_bytes_per_s": "blkio.throttle.read_bps_device", "write_bytes_per_s": "blkio.throttle.write_bps_device",
          "read_iops": "blkio.throttle.read_iops_device", "write_iops": "blkio.throttle.write_iops_device"}


def blkio_available() -> tuple[bool, str]:
    """Whether cgroup v1 blkio throttling is here, and why not."""
    if not (BLKIO_ROOT / "blkio.throttle.read_bps_device").exists():
        return False, f"no cgroup v1 blkio throttle ({BLKIO_ROOT}/blkio.throttle.read_bps_device is missing)"
    return True, f"cgroup v1 blkio at {BLKIO_ROOT}"


def device_number(path: str) -> str:
    """``MAJ:MIN`` of block device *path* (ValueError when it is not one)."""
    st = os.stat(path)
    if not stat.S_ISBLK(st.st_mode):
        raise ValueError(f"{path} is not a block device")
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


@dataclass(frozen=True)
class Throttle:
    """Limits on one block device; None leaves a direction unlimited.

    read_bytes_per_s, write_bytes_per_s [bytes/s]; read_iops, write_iops [1/s].
    """

    device: str
    read_bytes_per_s: int | None = None
    write_bytes_per_s: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None

    def __post_init__(self):
        for name in _FILES:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"{name} must be a positive int or None (got {value!r})")
        if all(getattr(self, name) is None for name in _FILES):
            raise ValueError(f"a throttle on {self.device} needs at least one limit")

    def as_dict(self) -> dict:
        return {"device": self.device, **{name: getattr(self, name) for name in _FILES}}


class ThrottleCgroup:
    """A throwaway blkio cgroup with *throttles*; made on entering, removed (and checked) on leaving."""

    def __init__(self, throttles: list[Throttle] | tuple[Throttle, ...], *, name: str | None = None):
        self.throttles = tuple(throttles)
        if not self.throttles:
            raise ValueError("throttles must name at least one device")
        ok, why = blkio_available()
        if not ok:
            raise RuntimeError(why)
        self.path = BLKIO_ROOT / (name or f"{PREFIX}{os.getpid()}-{time.monotonic_ns()}")
        self._resource = None

    def create(self) -> "ThrottleCgroup":
        run = runstate.current_run()
        if run is None:
            raise RuntimeError("a throttle cgroup is made inside a run (runstate.ensure_run), so that it is recorded")
        self._resource = run.intend("cgroup", path=str(self.path))
        self.path.mkdir()
        run.created(self._resource)
        for throttle in self.throttles:
            number = device_number(throttle.device)
            for name, file in _FILES.items():
                value = getattr(throttle, name)
                if value is not None:
                    (self.path / file).write_text(f"{number} {value}\n")
                    got = (self.path / file).read_text().split()
                    if got[-2:] != [number, str(value)]:
                        raise RuntimeError(f"{self.path / file} took {got!r} instead of {number} {value}")
        return self

    @property
    def procs_file(self) -> Path:
        """The cgroup's ``cgroup.procs``: pass it as ``spawn(..., cgroup_procs=)`` to run a child inside it."""
        return self.path / "cgroup.procs"

    def remove(self) -> None:
        """Remove the cgroup (killing what is left in it) and check it is gone. Idempotent."""
        run, res = runstate.current_run(), self._resource
        if run is not None and res is not None:
            report = run.undo([res])
            if report.left:
                raise RuntimeError("; ".join(report.left))
            self._resource = None

    def __enter__(self) -> "ThrottleCgroup":
        try:
            return self.create()
        except BaseException:
            self.remove()
            raise

    def __exit__(self, *exc) -> None:
        self.remove()
