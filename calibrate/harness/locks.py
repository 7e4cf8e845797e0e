"""One owner per target: an exclusive lock on a scratch, a device or an output, for one run.

:func:`lock_target` takes exclusive ``flock`` locks on lock files in one
folder per user, :func:`lock_dir` (``/run/lock/diskmodel`` for root), never
in a run's state folder: two runs with different ``DISKMODEL_RUN_DIR`` on one
target still exclude each other. A target has up to two locks:

- by its real path (a file that does not exist yet, an output that is
  replaced by rename, every spelling of one path);
- by what it is, when it exists: a block device by its device number (every
  spelling of ``/dev/loop0``), a regular file by its file system and inode
  (a hard link, a bind mount).

A second run on the same target is refused with :class:`TargetLocked`,
naming the first run's PID. The kernel drops a lock when its holder dies,
even by SIGKILL. A holder unlinks its lock files before it lets go of them, so
they do not pile up; a lock file whose holder was killed is reused by the next
run on that target and removed by :func:`sweep` (``diskmodel cleanup``).
Removing a lock file safely needs one rule (as in ``flock(1)`` users' lock
directories): a taker checks, once it holds the lock, that the path still
names the file it locked, and starts again when it does not.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["TargetLocked", "lock_dir", "lock_target", "sweep"]

#: Who asks for the run ID written into a lock record (set by runstate, which imports this module).
run_id_source: Callable[[], str | None] = lambda: None


class TargetLocked(RuntimeError):
    """Another live run holds the target; nothing has been written."""


def lock_dir() -> Path:
    """The folder of lock files: one per user, the same whatever the run's state folder.

    ``/run/lock/diskmodel`` for root, ``/run/lock/diskmodel-UID`` for another
    user (``/run/lock`` is world-writable, so a folder there that is not a
    directory of ours, writable by us alone, is refused rather than trusted).
    """
    base = Path("/run/lock") if os.path.isdir("/run/lock") else Path(tempfile.gettempdir())
    uid = os.geteuid()
    folder = base / ("diskmodel" if uid == 0 else f"diskmodel-{uid}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        raise RuntimeError(f"lock folder {folder} is not a directory owned by uid {uid} that only it can "
                           f"open (mode {stat.filemode(st.st_mode)}); remove it")
    return folder


def _lock_keys(path: str | os.PathLike) -> list[str]:
    """The names of a target's locks: by real path, and by what it is when it exists."""
    real = os.path.realpath(os.fspath(path))
    keys = ["path-" + hashlib.sha256(real.encode()).hexdigest()[:40]]
    try:
        st = os.stat(real)
    except OSError:
        return keys
    if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
        # Every spelling of a device (/dev/loop0, /dev/block/7:0, a by-id link) is one lock.
        keys.append(f"dev-{os.major(st.st_rdev)}-{os.minor(st.st_rdev)}")
    elif stat.S_ISREG(st.st_mode):
        keys.append(f"ino-{os.major(st.st_dev)}-{os.minor(st.st_dev)}-{st.st_ino}")
    return keys


def _same_file(fd: int, path: Path) -> bool:
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _names_another_file(holder: dict, key: str) -> bool:
    """Does an inode lock's holder hold it for a file that is gone? The kernel reuses a freed inode number
    at once: a run that unlinks its scratch while it still holds the scratch's inode lock (its teardown)
    would otherwise refuse a new file that got that number, which it never locked."""
    if not key.startswith("ino-"):
        return False
    try:
        st = os.stat(str(holder.get("path")))
    except (OSError, ValueError):
        return True
    return key != f"ino-{os.major(st.st_dev)}-{os.minor(st.st_dev)}-{st.st_ino}"


def _take(lock_file: Path, shown: str, record: dict) -> int | None:
    """Lock *lock_file* (made if absent); the open descriptor, or TargetLocked naming the holder (None: the
    holder's inode lock is about a file that is gone, see :func:`_names_another_file`)."""
    while True:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not _same_file(fd, lock_file):   # its holder was removing it (a release, a sweep): again
                os.close(fd)
                continue
            holder = {}
            with contextlib.suppress(OSError, ValueError):
                holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
            os.close(fd)
            if not isinstance(holder, dict):
                holder = {}
            if _names_another_file(holder, lock_file.name.removesuffix(".lock")):
                return None
            run_id = holder.get("run_id")
            raise TargetLocked(
                f"{shown} is in use by another diskmodel run (pid {holder.get('pid', 'unknown')}, "
                f"{holder.get('purpose', 'a run')}{', run ' + str(run_id) if run_id else ''}); "
                "wait for it to end, or stop it") from None
        except BaseException:
            os.close(fd)
            raise
        # Its last holder may have unlinked it between our open and our flock: then start again.
        if not _same_file(fd, lock_file):
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
        except BaseException:
            _release(lock_file, fd)
            raise
        return fd


def _release(lock_file: Path, fd: int) -> None:
    # Unlinked while still held: a taker that opened it meanwhile sees it gone and starts again.
    with contextlib.suppress(OSError):
        if _same_file(fd, lock_file):
            os.unlink(lock_file)
    os.close(fd)


_held_locks: dict[str, int] = {}   # key -> fd, for locks this process holds
_held_lock = threading.Lock()


@contextlib.contextmanager
def lock_target(path: str | os.PathLike, *, purpose: str) -> Iterator[None]:
    """Hold exclusive locks on *path* (a scratch, a device, an output) for this run.

    Refuses with :class:`TargetLocked`, naming the holder's PID, when another
    process holds one of them. Taking a lock this process already holds is
    allowed (the outer holder releases it).
    """
    folder = lock_dir()
    record = {"pid": os.getpid(), "purpose": purpose, "path": os.path.realpath(os.fspath(path)),
              "run_id": run_id_source()}
    taken: list[str] = []
    with _held_lock:
        try:
            for key in _lock_keys(path):
                if key not in _held_locks:
                    fd = _take(folder / f"{key}.lock", os.fspath(path), record)
                    if fd is not None:
                        _held_locks[key] = fd
                        taken.append(key)
        except BaseException:
            for key in taken:
                _release(folder / f"{key}.lock", _held_locks.pop(key))
            raise
    try:
        yield
    finally:
        with _held_lock:
            for key in reversed(taken):
                _release(folder / f"{key}.lock", _held_locks.pop(key))


def sweep(folder: Path | None = None) -> int:
    """Remove the lock files in *folder* (default :func:`lock_dir`) that no process holds (left by
    killed runs); how many were removed."""
    folder = folder or lock_dir()
    removed = 0
    for lock_file in folder.glob("*.lock"):
        try:
            fd = os.open(lock_file, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)   # a live run holds it
            continue
        if _same_file(fd, lock_file):
            with contextlib.suppress(OSError):   # a run refused meanwhile names who held it
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps({"pid": os.getpid(), "purpose": "diskmodel cleanup"}).encode(), 0)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_file)
                removed += 1
        os.close(fd)
    return removed
