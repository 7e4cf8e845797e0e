"""A tmpfs of the run's own: the application's time with no device under it.

The pace of a workload (its process starts, system calls, copies and file operations on this machine, now)
is measured on a tmpfs, where fsync returns at once and every read is a page-cache hit. The mount is
recorded in the run before it is made, marked absent if ``mount`` refuses it, and unmounted on every exit
path (``diskmodel cleanup`` removes it after a SIGKILL).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from diskmodel.calibrate.bench import process

__all__ = ["tmpfs_mounted"]


@contextlib.contextmanager
def tmpfs_mounted(run, size_bytes: int, *, prefix: str = "pace-", source: str = "diskmodel-pace"):
    """Yields the folder of a tmpfs of *size_bytes* mounted in a fresh temporary folder of *run* (a
    :mod:`~diskmodel.calibrate.harness.runstate` run). RuntimeError where it cannot be mounted, or where its
    teardown leaves anything behind (not raised over an error of the body, which propagates)."""
    where = run.temp_dir(prefix)
    res = run.intend("mount", mountpoint=str(where))
    try:
        done = process.run(["mount", "-t", "tmpfs", "-o", f"size={int(size_bytes)},nosuid,nodev", source,
                            str(where)], timeout_s=60)
        if done.returncode != 0:
            run.absent(res)
            why = (done.stderr.strip().splitlines() or [f"mount exited with status {done.returncode}"])[0]
            raise RuntimeError(f"tmpfs cannot be mounted on {where}: {why[:200]}")
        run.created(res)
        yield Path(where)
    finally:
        report = run.undo([res])
    if report.left:
        raise RuntimeError(f"tmpfs on {where}: teardown left {'; '.join(report.left)}")
