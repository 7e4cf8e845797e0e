"""What a run owns and what it built, written down before it is built.

Every diskmodel run that writes or builds something (a scratch file, loop
devices, mounts, LVM volumes, md arrays, cgroups, child processes, a VM and its
image, temporary folders) does so through a :class:`Run`:

- **Intent first.** :meth:`Run.intend` records a resource in the run's state
  file, ``<run root>/RUN-ID.json``, *before* the step that creates it runs,
  with what is needed to find it again (a loop device by its backing file's
  inode and offset, a mount by its mount point, a cgroup by its path). The
  signals that end a run (SIGINT, SIGTERM, SIGHUP, SIGQUIT:
  :mod:`diskmodel.calibrate.harness.interrupts`) are blocked while a record is
  written, so a record is whole or absent. The undo does not trust the step to have reported back: it looks
  (``losetup -J``, ``findmnt -J``, the cgroup's folder) and removes what it finds.
- **Verified teardown.** :meth:`Run.undo` removes resources in reverse order and
  checks each one is gone; the
  :class:`~diskmodel.calibrate.harness.resources.TeardownReport` says what it
  checked and what, if anything, it left (how each kind of resource is found,
  removed and checked: :mod:`diskmodel.calibrate.harness.resources`).
- **One owner per target.** :func:`diskmodel.calibrate.harness.locks.lock_target`
  refuses a second run on the same scratch, device or output, naming the
  first run's PID; its lock files live in the run root.
- **After SIGKILL.** The state file of a run that died stays behind;
  :func:`stale_runs` finds it (the PID is gone, or belongs to another process
  by its start time) and ``diskmodel cleanup`` (:func:`cleanup`) undoes what it
  lists. A new run that sees one says so and names ``diskmodel cleanup``.

The run root is ``/run/diskmodel`` for root, else ``$XDG_RUNTIME_DIR/diskmodel``
(else ``/tmp/diskmodel-UID``); ``DISKMODEL_RUN_DIR`` overrides it. Each run
also has a folder of its own for temporary files, :meth:`Run.work_dir`, made
with a unique name in the system's temporary directory and removed by its
teardown.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from diskmodel.calibrate.harness.interrupts import HANDLED_SIGNALS as _HANDLED_SIGNALS
from diskmodel.calibrate.harness.outputs import replace_file_atomically
from diskmodel.calibrate.harness.resources import (Resource, TeardownReport, present, process_alive,
                                                   process_start_ticks, undo_one)

__all__ = [
    "RUN_DIR_ENV",
    "Run",
    "cleanup",
    "cleanup_cli",
    "current_run",
    "ensure_run",
    "run_root",
    "signals_blocked",
    "stale_runs",
]

log = logging.getLogger(__name__)

RUN_DIR_ENV = "DISKMODEL_RUN_DIR"
STATE_FORMAT = "diskmodel.runstate"
STATE_FORMAT_VERSION = 1


# --------------------------------------------------------------------------- signals

@contextlib.contextmanager
def signals_blocked():
    """Hold SIGINT, SIGTERM, SIGHUP and SIGQUIT (delivered on leaving) while a step and its record happen.

    Only the main thread receives Python's signal handlers; elsewhere this is
    a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def _signals_ignored():
    """SIGINT, SIGTERM, SIGHUP and SIGQUIT ignored while tearing down, so a second Ctrl-C cannot cut it short."""
    old = {}
    if threading.current_thread() is threading.main_thread():
        for sig in _HANDLED_SIGNALS:
            old[sig] = signal.signal(sig, signal.SIG_IGN)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


# --------------------------------------------------------------------------- the root

def run_root() -> Path:
    """The folder of state files and lock files (created 0700, owned by us)."""
    env = os.environ.get(RUN_DIR_ENV)
    if env:
        root = Path(env)
    elif os.geteuid() == 0:
        root = Path("/run/diskmodel")
    elif os.environ.get("XDG_RUNTIME_DIR"):
        root = Path(os.environ["XDG_RUNTIME_DIR"]) / "diskmodel"
    else:
        root = Path(tempfile.gettempdir()) / f"diskmodel-{os.geteuid()}"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(root)
    # A folder someone else made (or a symlink planted in /tmp) is not ours to trust.
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise RuntimeError(f"run state folder {root} is not a directory owned by uid {os.geteuid()}; "
                           f"remove it or set {RUN_DIR_ENV}")
    (root / "locks").mkdir(mode=0o700, exist_ok=True)
    return root


# --------------------------------------------------------------------------- the run

class Run:
    """One diskmodel run's state file: what it owns, recorded before it is created."""

    def __init__(self, command: str, *, root: Path | None = None):
        self.root = root or run_root()
        self.pid = os.getpid()
        self.start_ticks = process_start_ticks(self.pid)
        self.run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{self.pid}-{secrets.token_hex(3)}"
        self.command = command
        self.started = time.time()
        self.resources: list[Resource] = []
        self.path = self.root / f"{self.run_id}.json"
        self._work_dir: Path | None = None
        self._lock = threading.RLock()
        self._undone: list[str] = []   # what earlier undo() calls removed (a scratch file), for finish()

    # -- the state file
    def _save(self) -> None:
        data = {
            "format": STATE_FORMAT, "format_version": STATE_FORMAT_VERSION,
            "run_id": self.run_id, "pid": self.pid, "start_ticks": self.start_ticks,
            "command": self.command, "started": self.started,
            "resources": [{"id": r.id, "kind": r.kind, "state": r.state, "details": r.details, "note": r.note}
                          for r in self.resources],
        }
        # Whole or absent: a reader (cleanup, a killed run's successor) never sees half a record.
        replace_file_atomically(self.path, json.dumps(data, indent=1).encode())

    def start(self) -> "Run":
        with signals_blocked():
            self._save()
        stale = stale_runs(self.root)
        if stale:
            items = sum(len(s.open_resources()) for s in stale)
            log.warning("%d earlier run(s) died and left %d thing(s) behind (%s); "
                        "`diskmodel cleanup` removes them (`--dry-run` lists them)",
                        len(stale), items, ", ".join(s.run_id for s in stale))
        return self

    # -- recording
    def intend(self, kind: str, **details) -> Resource:
        """Record that *kind* is about to be created (call before the step runs)."""
        with self._lock, signals_blocked():
            res = Resource(len(self.resources), kind, dict(details))
            self.resources.append(res)
            self._save()
        return res

    def created(self, res: Resource, **details) -> None:
        """The step that creates *res* succeeded; add what it reported (a device name)."""
        with self._lock, signals_blocked():
            res.details.update(details)
            res.state = "created"
            self._save()

    def absent(self, res: Resource) -> None:
        """*res* was never created (its step failed before creating it)."""
        with self._lock, signals_blocked():
            res.state = "removed"
            self._save()

    def work_dir(self) -> Path:
        """The run's own folder for temporary files (unique name, removed by teardown)."""
        with self._lock:
            if self._work_dir is None:
                path = Path(tempfile.gettempdir()) / f"diskmodel-run-{self.run_id}"
                res = self.intend("dir", path=str(path))
                os.mkdir(path, 0o700)
                self.created(res, ino=os.lstat(path).st_ino)
                self._work_dir = path
            return self._work_dir

    def temp_dir(self, prefix: str) -> Path:
        """A new folder with a unique name inside :meth:`work_dir`."""
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.work_dir()))

    # -- teardown
    def undo(self, resources: Iterable[Resource] | None = None) -> TeardownReport:
        """Remove *resources* (default: all of this run's) in reverse order, checking each is gone."""
        chosen = list(self.resources if resources is None else resources)
        report = TeardownReport()
        with self._lock, _signals_ignored():
            for res in reversed(chosen):
                if res.state in ("intended", "created", "left"):
                    undo_one(res)
                    if res.state == "left":
                        report.left.append(f"{res.describe()}: {res.note}")
                    else:
                        report.removed.append(res.describe())
                        self._undone.append(res.describe())
                self._save()
        return report

    def finish(self) -> TeardownReport:
        """Undo everything; remove the state file when all is checked gone."""
        earlier = list(self._undone)
        report = self.undo()
        # The report names what was torn down earlier in the run too (a scratch file removed when its
        # fill was interrupted), not only what this last undo found.
        report.removed[:0] = earlier
        if report.complete:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        return report


@dataclass
class StaleRun:
    """The state file of a run whose process is gone."""

    path: Path
    run_id: str
    pid: int
    command: str
    resources: list[Resource]

    def open_resources(self) -> list[Resource]:
        return [r for r in self.resources if r.state in ("intended", "created", "left")]


def _read_state(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        return None
    return data


def stale_runs(root: Path | None = None) -> list[StaleRun]:
    """Runs whose state file remains but whose process is gone (killed, e.g. by SIGKILL)."""
    root = root or run_root()
    out = []
    for path in sorted(root.glob("*.json")):
        data = _read_state(path)
        if data is None or process_alive(int(data["pid"]), data.get("start_ticks")):
            continue
        resources = [Resource(r["id"], r["kind"], r["details"], r["state"], r.get("note", ""))
                     for r in data.get("resources", [])]
        out.append(StaleRun(path, data["run_id"], int(data["pid"]), data.get("command", ""), resources))
    return out


def stale_holders_of(path: str | os.PathLike) -> list[str]:
    """Run IDs of dead runs whose records mention *path* (as a file, a backing or a device)."""
    real = os.path.realpath(os.fspath(path))
    found = []
    for run in stale_runs():
        for res in run.open_resources():
            d = res.details
            if real in (d.get("path"), d.get("backing"), d.get("device")):
                found.append(run.run_id)
                break
    return found


def cleanup(*, dry_run: bool = False, say: Callable[[str], object] = print) -> bool:
    """Remove what dead runs left, in reverse order of creation; True when nothing is left."""
    ok = True
    stale = stale_runs()
    if not stale:
        say("diskmodel cleanup: no run left anything behind")
        return True
    for run in stale:
        todo = run.open_resources()
        say(f"run {run.run_id} (pid {run.pid}, dead: {run.command}): {len(todo)} item(s)")
        if dry_run:
            for res in reversed(todo):
                try:
                    there = present(res)
                except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                    there = f"unknown ({exc})"
                say(f"  would remove {res.describe()}" if there is True else
                    f"  {res.describe()}: already gone" if there is False else f"  {res.describe()}: {there}")
            continue
        with _signals_ignored():
            for res in reversed(todo):
                undo_one(res)
                say(f"  removed {res.describe()}" if res.state == "removed"
                    else f"  could not remove {res.describe()}: {res.note}")
        left = [r for r in todo if r.state != "removed"]
        if left:
            ok = False
            data = _read_state(run.path) or {}
            data["resources"] = [{"id": r.id, "kind": r.kind, "state": r.state, "details": r.details,
                                  "note": r.note} for r in run.resources]
            run.path.write_text(json.dumps(data, indent=1))
        else:
            run.path.unlink(missing_ok=True)
    return ok


def cleanup_cli(*, dry_run: bool) -> int:
    return 0 if cleanup(dry_run=dry_run) else 1


# --------------------------------------------------------------------------- the current run

_current: Run | None = None


def current_run() -> Run | None:
    return _current


@contextlib.contextmanager
def ensure_run(command: str | None = None) -> Iterator[Run]:
    """The run in progress, or a new one that is torn down (and checked) on leaving.

    On an exception the teardown's report is attached to it as
    ``teardown_report`` (a str), so that the command line can say exactly
    what was removed or left.
    """
    global _current
    if _current is not None:
        yield _current
        return
    run = Run(command or " ".join(sys.argv))
    run.start()
    _current = run
    try:
        yield run
    except BaseException as exc:
        report = run.finish()
        with contextlib.suppress(AttributeError, TypeError):
            exc.teardown_report = str(report)
        if not report.complete:
            log.error("%s", report)
        raise
    else:
        report = run.finish()
        if not report.complete:
            raise RuntimeError(str(report))
    finally:
        _current = None
