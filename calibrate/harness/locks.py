"""One owner per target: an exclusive lock on a scratch, a device or an output, for one run.

:func:`lock_target` takes an exclusive ``flock`` on a lock file in the run
root (:func:`diskmodel.calibrate.harness.runstate.run_root`) named after the
target: its device number for a block device, else its real path. A second
run on the same target is refused with :class:`TargetLocked`, naming the first
run's PID. The kernel drops the lock when its holder dies, even by SIGKILL.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import threading
from typing import Iterator

from diskmodel.calibrate.harness import runstate

__all__ = ["TargetLocked", "lock_target"]


class TargetLocked(RuntimeError):
    """Another live run holds the target; nothing has been written."""


def _lock_key(path: str | os.PathLike) -> str:
    real = os.path.realpath(os.fspath(path))
    try:
        st = os.stat(real)
    except OSError:
        st = None
    if st is not None and (stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode)):
        # Every spelling of a device (/dev/loop0, /dev/block/7:0, a by-id link) is one lock.
        return f"dev-{os.major(st.st_rdev)}-{os.minor(st.st_rdev)}"
    return "path-" + hashlib.sha256(real.encode()).hexdigest()[:40]


_held_locks: dict[str, int] = {}   # key -> fd, for locks this process holds
_held_lock = threading.Lock()


@contextlib.contextmanager
def lock_target(path: str | os.PathLike, *, purpose: str) -> Iterator[None]:
    """Hold an exclusive lock on *path* (a scratch, a device, an output) for this run.

    Refuses with :class:`TargetLocked`, naming the holder's PID, when another
    process holds it. Taking a lock this process already holds is allowed
    (the outer holder releases it).
    """
    key = _lock_key(path)
    with _held_lock:
        if key in _held_locks:
            reentrant = True
        else:
            reentrant = False
            lock_file = runstate.run_root() / "locks" / f"{key}.lock"
            fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = {}
                with contextlib.suppress(OSError, ValueError):
                    holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
                os.close(fd)
                pid = holder.get("pid", "unknown")
                what = holder.get("purpose", "a run")
                raise TargetLocked(
                    f"{os.fspath(path)} is in use by another diskmodel run (pid {pid}, {what}"
                    f"{', run ' + holder['run_id'] if holder.get('run_id') else ''}); "
                    "wait for it to end, or stop it") from None
            except BaseException:
                os.close(fd)
                raise
            run = runstate.current_run()
            record = {"pid": os.getpid(), "purpose": purpose, "path": os.path.realpath(os.fspath(path)),
                      "run_id": run.run_id if run else None}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            _held_locks[key] = fd
    try:
        yield
    finally:
        if not reentrant:
            with _held_lock:
                fd = _held_locks.pop(key)
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                os.close(fd)

