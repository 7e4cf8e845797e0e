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
  A teardown never depends on writing the state file: a record that cannot
  be saved (a full file system) is said in the report, and the teardown goes on.
- **One owner per target.** :func:`diskmodel.calibrate.harness.locks.lock_target`
  refuses a second run on the same scratch, device or output, naming the
  first run's PID; its locks do not depend on the run root.
- **After SIGKILL.** The state file of a run that died stays behind;
  :func:`stale_runs` finds it (the PID is gone, or belongs to another process
  by its start time) and ``diskmodel cleanup`` (:func:`cleanup`) undoes what it
  lists, holding the locks of the targets it names (so it never touches what
  a live run holds). It first kills every live process that carries the dead
  run's ID in its environment (each child a run starts does, and passes it on:
  one the SIGKILL caught before its record was durable is found too), and it
  removes the temporary state file a record cut short left. A new run that
  sees one says so and names ``diskmodel cleanup``.
- **Only our own records.** A state file is acted on only when it is a
  regular file owned by the running user in a folder no one else may write,
  and its fields have the types written here; any other is reported once, in
  one line, and skipped.

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

from diskmodel.calibrate.harness import locks
from diskmodel.calibrate.harness.interrupts import (HANDLED_SIGNALS as _HANDLED_SIGNALS, during_teardown,
                                                    held as _held)
from diskmodel.calibrate.harness.outputs import replace_file_atomically, write_fully
from diskmodel.calibrate.harness.resources import (Resource, TeardownReport, identity_at_creation,
                                                   kill_processes_of_run, kill_strays_of_run, present, process_alive,
                                                   process_start_ticks, processes_of_run, undo_one)

__all__ = ["RUN_DIR_ENV", "Run", "cleanup", "cleanup_cli", "current_run", "ensure_run", "run_root", "signals_blocked",
           "stale_runs"]

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
    # held(): a signal the kernel gave another thread of the process still waits for the end
    with _held():
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED_SIGNALS)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


# --------------------------------------------------------------------------- the root

def run_root() -> Path:
    """The folder of state files (created 0700; one that is not ours alone is refused)."""
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
    _check_folder(root)
    return root


def _check_folder(root: Path) -> None:
    """Refuse a run state folder that others made or may write to.

    ``diskmodel cleanup`` acts on the records in it with the rights of whoever
    runs it (root, for loop devices and mounts): a record another user could
    plant there would have root remove what that user names.
    """
    st = os.lstat(root)
    uid = os.geteuid()
    # A folder someone else made (or a symlink planted in /tmp) is not ours to trust.
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
        raise RuntimeError(f"run state folder {root} is not a directory owned by uid {uid}; "
                           f"remove it or set {RUN_DIR_ENV}")
    if st.st_mode & 0o022:
        raise RuntimeError(f"run state folder {root} may be written by other users "
                           f"(mode {stat.filemode(st.st_mode)}), so its records cannot be trusted: "
                           f"`chmod 700 {root}` if every file in it is yours, or set {RUN_DIR_ENV}")


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
        try:
            self._write()
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or str(exc), str(self.path)) from exc

    def _write(self) -> None:
        # What is removed is left out: the file is what a cleanup after a SIGKILL must find. Written whole
        # at every change, a record of every process a long run had started and reaped made each start
        # slower as the run went on (37 ms a save at 3,000 records), inside the tools' timed steps.
        data = {
            "format": STATE_FORMAT, "format_version": STATE_FORMAT_VERSION,
            "run_id": self.run_id, "pid": self.pid, "start_ticks": self.start_ticks,
            "command": self.command, "started": self.started,
            "resources": [{"id": r.id, "kind": r.kind, "state": r.state, "details": r.details, "note": r.note}
                          for r in self.resources if r.state != "removed"],
        }
        text = json.dumps(data, indent=1).encode()
        # Whole or absent: a reader (cleanup, a killed run's successor) never sees half a record.
        if self.path.exists():
            replace_file_atomically(self.path, text)   # keeps the file's mode, 0600
            return
        # The first record: 0600 from the start, whatever the umask (readers refuse one others may write).
        fd, tmp = tempfile.mkstemp(prefix=f".{self.run_id}.", suffix=".tmp", dir=self.root)
        try:
            try:
                write_fully(fd, text)
            finally:
                os.close(fd)
            os.rename(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

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
            try:
                self._save()
            except BaseException:
                self.resources.remove(res)   # not recorded, so its step is not run
                raise
        return res

    def created(self, res: Resource, **details) -> None:
        """The step that creates *res* succeeded; add what it reported (a device) and its identity."""
        details = identity_at_creation(res, details)
        with self._lock, signals_blocked():
            res.details.update(details)
            res.state = "created"
            self._save()

    def absent(self, res: Resource) -> None:
        """*res* was never created (its step failed before creating it)."""
        with self._lock, signals_blocked():
            res.state = "removed"
            self._save()

    def release(self, res: Resource) -> None:
        """*res* is handed to the user (a scratch file kept on request): no teardown removes it."""
        with self._lock, signals_blocked():
            res.state = "kept"
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
        with self._lock, during_teardown():
            for res in reversed(chosen):
                if res.state in ("intended", "created", "left"):
                    undo_one(res)
                    if res.state == "left":
                        report.left.append(f"{res.describe()}: {res.note}")
                    else:
                        report.removed.append(res.describe())
                        self._undone.append(res.describe())
                try:
                    self._save()
                except OSError as exc:
                    # The teardown goes on: what it removes is checked by looking, not by the record.
                    report.unsaved = f"{exc.filename}: {exc.strerror}"
        return report

    def finish(self, *, deliver: bool = True) -> TeardownReport:
        """Undo everything; remove the state file when all is checked gone.

        A signal that arrives meanwhile waits for the end (:class:`~diskmodel.calibrate.harness.interrupts.during_teardown`),
        and is then delivered, or with ``deliver=False`` dropped (a run ending with an exception already).
        """
        earlier = list(self._undone)
        with during_teardown(deliver=deliver):
            # first what left the group it was recorded in: it may hold what undo removes
            strays = kill_strays_of_run(self.run_id, self.resources)
            report = self.undo()
            report.removed[:0] = earlier + strays   # and what was torn down earlier (a scratch whose fill stopped)
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
    start_ticks: int | None = None
    live_threads: frozenset = frozenset()   # (pid, start ticks) of threads a live run's records name

    def open_resources(self) -> list[Resource]:
        return [r for r in self.resources if r.state in ("intended", "created", "left")]


class StateSkipped(Exception):
    """A state file that is not acted on; the message is its one-line reason."""


_STATES = ("intended", "created", "removed", "left", "kept")
_reported: set[str] = set()   # state files this process has already said it skips


def _read_own(path: Path) -> bytes:
    """The bytes of *path* if it is a regular file of ours that no one else may write (else StateSkipped)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise StateSkipped("a symbolic link" if os.path.islink(path) else f"cannot open it ({exc.strerror})") \
            from None
    try:
        st = os.fstat(fd)
        uid = os.geteuid()
        if not stat.S_ISREG(st.st_mode):
            raise StateSkipped("not a regular file")
        if st.st_uid != uid:
            raise StateSkipped(f"owned by uid {st.st_uid}, not by uid {uid} who runs diskmodel")
        if st.st_mode & 0o022:
            raise StateSkipped(f"other users may write it (mode {stat.filemode(st.st_mode)})")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _field(obj: dict, key: str, types: tuple, where: str = ""):
    if key not in obj:
        raise StateSkipped(f"{where}field {key!r} is missing")
    value = obj[key]
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        raise StateSkipped(f"{where}field {key!r} is {json.dumps(value)[:40]}, "
                           f"not {' or '.join(t.__name__ for t in types)}")
    return value


def _parse_state(path: Path) -> tuple[dict, list[Resource]]:
    """The fields of a state file, checked against what :meth:`Run._write` writes (else StateSkipped)."""
    try:
        data = json.loads(_read_own(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise StateSkipped(f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StateSkipped("not a JSON object")
    if data.get("format") != STATE_FORMAT:
        raise StateSkipped(f"field 'format' is not {STATE_FORMAT!r}")
    _field(data, "run_id", (str,))
    if _field(data, "pid", (int,)) <= 0:
        raise StateSkipped(f"field 'pid' is {data['pid']}, not a process ID")
    if "start_ticks" in data:
        _field(data, "start_ticks", (int, type(None)))
    _field(data, "command", (str,))
    resources = []
    for i, r in enumerate(_field(data, "resources", (list,))):
        where = f"resource {i}: "
        if not isinstance(r, dict):
            raise StateSkipped(f"{where}not a JSON object")
        if _field(r, "state", (str,), where) not in _STATES:
            raise StateSkipped(f"{where}field 'state' is {json.dumps(r['state'])[:40]}, not one of {_STATES}")
        resources.append(Resource(_field(r, "id", (int,), where), _field(r, "kind", (str,), where),
                                  _field(r, "details", (dict,), where), r["state"],
                                  _field(r, "note", (str,), where) if "note" in r else ""))
    return data, resources


def _scan(root: Path) -> tuple[list[StaleRun], list[str]]:
    """The dead runs whose state files are in *root*, and one line for each state file skipped."""
    _check_folder(root)
    stale, skipped, live = [], [], set()
    for path in sorted(root.glob("*.json")):
        try:
            data, resources = _parse_state(path)
        except StateSkipped as exc:
            skipped.append(f"run state file {path} skipped: {exc}; not acted on (remove it by hand "
                           "once you know no run of yours wrote it)")
            continue
        if process_alive(data["pid"], data.get("start_ticks")):
            live.update((r.details.get("pid"), r.details.get("start_ticks")) for r in resources
                        if r.kind == "sched" and r.state in ("intended", "created", "left"))
            continue
        stale.append(StaleRun(path, data["run_id"], data["pid"], data["command"], resources,
                              data.get("start_ticks")))
    for run in stale:
        run.live_threads = frozenset(live)
    return stale, skipped


def stale_runs(root: Path | None = None) -> list[StaleRun]:
    """Runs whose state file remains but whose process is gone (killed, e.g. by SIGKILL).

    A state file that is not ours or not well formed is skipped, and said once (a warning).
    """
    stale, skipped = _scan(root or run_root())
    for line in skipped:
        if line not in _reported:
            _reported.add(line)
            log.warning("%s", line)
    return stale


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


def _targets(run: StaleRun) -> list[str]:
    """The scratch files and loop backings a dead run's records name: what a live run would lock."""
    found = []
    for res in run.open_resources():
        target = res.details.get("path") if res.kind == "file" else res.details.get("backing")
        if res.kind in ("file", "loop") and isinstance(target, str) and target.startswith("/") \
                and "$" not in target and target not in found:
            found.append(target)
    return found


def _save_left(run: StaleRun, say: Callable[[str], object]) -> None:
    data = {"format": STATE_FORMAT, "format_version": STATE_FORMAT_VERSION, "run_id": run.run_id,
            "pid": run.pid, "start_ticks": run.start_ticks, "command": run.command,
            "resources": [{"id": r.id, "kind": r.kind, "state": r.state, "details": r.details, "note": r.note}
                          for r in run.resources]}
    try:
        replace_file_atomically(run.path, json.dumps(data, indent=1).encode())
    except OSError as exc:
        say(f"  could not update {run.path} ({exc.strerror}); it still lists what was removed")


def _clean_one(run: StaleRun, *, dry_run: bool, say: Callable[[str], object]) -> bool:
    todo = run.open_resources()
    say(f"run {run.run_id} (pid {run.pid}, dead: {run.command}): {len(todo)} item(s)")
    with contextlib.ExitStack() as held:
        # What a live run holds (the same scratch, made again at that path) is never touched.
        try:
            for target in _targets(run):
                held.enter_context(locks.lock_target(target, purpose=f"diskmodel cleanup of run {run.run_id}"))
        except locks.TargetLocked as exc:
            say(f"  left for now: {exc}; run `diskmodel cleanup` again when it has ended")
            return False
        if dry_run:
            stray = processes_of_run(run.run_id)
            if stray:
                say(f"  would kill {len(stray)} process(es) the run started: {', '.join(map(str, stray))}")
            for res in reversed(todo):
                try:
                    there = present(res, foreign=True)
                except (OSError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
                    there = f"unknown ({exc})"
                say(f"  would remove {res.describe()}" if there is True else
                    f"  {res.describe()}: already gone" if there is False else f"  {res.describe()}: {there}")
            return True
        # A Ctrl-C ends the cleanup once this run's things are gone and its record says so.
        with during_teardown():
            # First what the run started, recorded or not (a child whose record a SIGKILL cut short, and its
            # own children): one of them may hold what a record names.
            killed, alive = kill_processes_of_run(run.run_id)
            if killed:
                say(f"  killed {len(killed)} process(es) the run had started: {', '.join(map(str, killed))}"
                    + (f" ({', '.join(map(str, alive))} still there)" if alive else ""))
            for res in reversed(todo):
                if res.kind == "sched" and (res.details.get("pid"), res.details.get("start_ticks")) in run.live_threads:
                    res.state = "removed"   # a live run changed it too and puts it back to what it had
                    say(f"  {res.describe()}: a live run changed it too, and puts it back when it ends")
                    continue
                # a loop device's or mount's name may be another's by now: say it was gone, not "removed"
                gone = res.kind in ("loop", "mount") and present(res, foreign=True) is False
                undo_one(res, foreign=True)
                done = f"  {res.describe()}: already gone" if gone else f"  removed {res.describe()}"
                say(done if res.state == "removed" else f"  could not remove {res.describe()}: {res.note}")
            if alive or any(r.state != "removed" for r in todo):
                _save_left(run, say)
                return False
            run.path.unlink(missing_ok=True)
            return True


def _sweep_temporaries(root: Path) -> None:
    """Remove the temporary state files (``.RUN-ID.*.tmp``) of runs whose process is gone: a run killed while
    it wrote a record leaves one beside its state file (which holds the record before it)."""
    for tmp in root.glob(".*.tmp"):
        try:
            pid = int(tmp.name[1:].split(".", 1)[0].split("-")[1])
        except (IndexError, ValueError):
            continue
        if process_start_ticks(pid) is None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def cleanup(*, dry_run: bool = False, say: Callable[[str], object] = print) -> bool:
    """Remove what dead runs left, in reverse order of creation; True when nothing is left.

    Only state files of ours are acted on (any other is named, in one line, and
    skipped), and nothing a live run holds the lock of is touched.
    """
    stale, skipped = _scan(run_root())
    for line in skipped:
        say(line)
    ok = not skipped
    if not stale and not skipped:
        say("diskmodel cleanup: no run left anything behind")
    for run in stale:
        ok = _clean_one(run, dry_run=dry_run, say=say) and ok
    if not dry_run:
        _sweep_temporaries(run_root())
        locks.sweep()
        legacy = run_root() / "locks"   # where earlier versions kept their lock files
        if legacy.is_dir() and not legacy.is_symlink():
            locks.sweep(legacy)
            with contextlib.suppress(OSError):
                legacy.rmdir()
    return ok


def cleanup_cli(*, dry_run: bool) -> int:
    return 0 if cleanup(dry_run=dry_run) else 1


# --------------------------------------------------------------------------- the current run

_current: Run | None = None


def current_run() -> Run | None:
    return _current


locks.run_id_source = lambda: _current.run_id if _current is not None else None


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
    try:
        run.start()
    except BaseException:
        with contextlib.suppress(OSError):   # it has built nothing: its record goes with it
            run.path.unlink()
        raise
    _current = run
    try:
        yield run
    except BaseException as exc:
        report = run.finish(deliver=False)   # the exception ends the run: a signal meanwhile does not replace it
        with contextlib.suppress(AttributeError, TypeError):
            exc.teardown_report = str(report)
        if isinstance(exc, Exception) and (report.left or report.unsaved):
            # The one line the command line prints names what was left and what removes it.
            why = f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) and exc.filename else exc
            raise RuntimeError(f"{why}; {report}") from exc
        if not report.complete:
            log.error("%s", report)
        raise
    else:
        report = run.finish()
        if not report.complete:
            raise RuntimeError(str(report))
    finally:
        _current = None
