"""What a run owns and what it built, written down before it is built.

Every diskmodel run that writes or builds something (a scratch file, loop
devices, mounts, LVM volumes, md arrays, cgroups, child processes, a VM and its
image, temporary folders) does so through a :class:`Run`:

- **Intent first.** :meth:`Run.intend` records a resource in the run's state
  file, ``<run root>/RUN-ID.json``, *before* the step that creates it runs,
  with what is needed to find it again (a loop device by its backing file's
  inode and offset, a mount by its mount point, a cgroup by its path). SIGINT
  and SIGTERM are blocked while a record is written, so a record is whole or
  absent. The undo does not trust the step to have reported back: it looks
  (``losetup -J``, ``findmnt -J``, the cgroup's folder) and removes what it finds.
- **Verified teardown.** :meth:`Run.undo` removes resources in reverse order and
  checks each one is gone; the :class:`TeardownReport` says what it checked and
  what, if anything, it left. A scratch file is never unlinked while a loop
  device still holds it, and a folder is never removed while something is
  mounted below it.
- **One owner per target.** :func:`lock_target` takes an exclusive ``flock`` on
  a lock file named after the target (its device number for a block device,
  else its real path), so that a second run on the same scratch, device or
  output is refused with the first run's PID. The kernel drops the lock when
  its holder dies, even by SIGKILL.
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
import errno
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from diskmodel.calibrate.harness import devstate

__all__ = [
    "RUN_DIR_ENV",
    "Resource",
    "Run",
    "TargetLocked",
    "TeardownReport",
    "cleanup",
    "cleanup_cli",
    "current_run",
    "ensure_run",
    "lock_target",
    "run_root",
    "signals_blocked",
    "stale_runs",
]

log = logging.getLogger(__name__)

RUN_DIR_ENV = "DISKMODEL_RUN_DIR"
STATE_FORMAT = "diskmodel.runstate"
STATE_FORMAT_VERSION = 1
_HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


# --------------------------------------------------------------------------- signals

@contextlib.contextmanager
def signals_blocked():
    """Hold SIGINT and SIGTERM (delivered on leaving) while a step and its record happen.

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
    """SIGINT and SIGTERM ignored while tearing down, so a second Ctrl-C cannot cut it short."""
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


def _process_start_ticks(pid: int) -> int | None:
    """The start time of process *pid* in clock ticks since boot (None: no such process).

    A PID together with its start time names one process: PIDs are reused.
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[19])


def process_alive(pid: int, start_ticks: int | None) -> bool:
    now = _process_start_ticks(pid)
    if now is None:
        return False
    if start_ticks is not None and now != start_ticks:
        return False
    try:  # a zombie has exited: it holds nothing but its entry
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# --------------------------------------------------------------------------- locks

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
            lock_file = run_root() / "locks" / f"{key}.lock"
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
            run = current_run()
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


# --------------------------------------------------------------------------- device state

def loops_over(details: dict) -> list[str]:
    """Loop devices whose backing (and offset, where given) match a resource's *details*."""
    return devstate.loops_over(details.get("backing"), ino=details.get("backing_ino"),
                               maj_min=details.get("backing_dev"), offset=details.get("offset"))


def _lvm_has(report: str, name: str) -> bool:
    if shutil.which("lvs") is None:
        return False
    proc = subprocess.run([report, "--reportformat", "json", "--noheadings", name], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120,
                          env=dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1"))
    return proc.returncode == 0


# --------------------------------------------------------------------------- resources

@dataclass
class Resource:
    """One thing a run creates: its kind, what finds it, and where it stands.

    state: "intended" (recorded, its step may or may not have run), "created",
    "removed" (checked gone) or "left" (teardown could not remove it).
    """

    id: int
    kind: str
    details: dict
    state: str = "intended"
    note: str = ""

    def describe(self) -> str:
        d = self.details
        text = {
            "file": lambda: f"scratch file {d.get('path')}",
            "dir": lambda: f"folder {d.get('path')}",
            "loop": lambda: (f"loop device {d.get('device') or '(not yet known)'} over {d.get('backing')} "
                             f"at offset {d.get('offset', 0)}"),
            "mount": lambda: f"mount on {d.get('mountpoint')}",
            "cgroup": lambda: f"cgroup {d.get('path')}",
            "process": lambda: f"process {d.get('pid')} ({d.get('name', '?')})",
            "pv": lambda: f"LVM physical volume {d.get('device')}",
            "vg": lambda: f"LVM volume group {d.get('name')}",
            "lv": lambda: f"LVM logical volume {d.get('name')}",
            "md": lambda: f"md array {d.get('device')}",
            "command": lambda: f"what `{d.get('undo')}` undoes",
        }.get(self.kind, lambda: f"{self.kind} {d}")
        return text()


def _run_quiet(argv: list[str]) -> tuple[int, str]:
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1"))
    return proc.returncode, (proc.stderr or proc.stdout).strip()


def _present(res: Resource) -> bool:
    """Is the resource still there? Looks, rather than trusting the record."""
    d = res.details
    if res.kind in ("file", "dir"):
        try:
            st = os.lstat(d["path"])
        except FileNotFoundError:
            return False
        return d.get("ino") is None or st.st_ino == d["ino"]
    if res.kind == "loop":
        return bool(loops_over(d))
    if res.kind == "mount":
        return devstate.mounted_at(d["mountpoint"])
    if res.kind == "cgroup":
        return os.path.isdir(d["path"])
    if res.kind == "process":
        return process_alive(int(d["pid"]), d.get("start_ticks"))
    if res.kind == "pv":
        return bool(d.get("device")) and _lvm_has("pvs", d["device"])
    if res.kind == "vg":
        return _lvm_has("vgs", d["name"])
    if res.kind == "lv":
        return _lvm_has("lvs", d["name"])
    if res.kind == "md":
        return os.path.exists(f"/sys/block/{os.path.basename(d['device'])}/md")
    if res.kind == "command":  # an undo that finds nothing by itself: present until it has run
        return not d.get("ran_ok", False)
    raise ValueError(f"unknown resource kind {res.kind!r}")


def _remove(res: Resource) -> str:
    """Try once to remove the resource; '' on success, else why not."""
    d = res.details
    if res.kind == "process":
        pid = int(d["pid"])
        if not process_alive(pid, d.get("start_ticks")):
            return ""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if d.get("group"):
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        return ""
    if res.kind == "mount":
        rc, err = _run_quiet(["umount", d["mountpoint"]])
        return "" if rc == 0 else f"umount: {err}"
    if res.kind == "loop":
        why = []
        for dev in loops_over(d):
            rc, err = _run_quiet(["losetup", "-d", dev])
            if rc:
                why.append(f"losetup -d {dev}: {err}")
        return "; ".join(why)
    if res.kind == "cgroup":
        path = Path(d["path"])
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            path.rmdir()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            return f"rmdir: {exc.strerror}"
        return ""
    if res.kind == "file":
        holders = loops_over({"backing": os.path.realpath(d["path"]), "backing_ino": d.get("ino"),
                              "backing_dev": d.get("dev")})
        if holders:
            return f"still held by {', '.join(holders)}: not unlinked"
        if d.get("ino") is None:
            # Only intended: the file may be someone else's if it predates the run.
            try:
                if os.lstat(d["path"]).st_ctime < float(d.get("not_before", 0)):
                    return "predates the run: not ours to remove"
            except FileNotFoundError:
                return ""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(d["path"])
        return ""
    if res.kind == "dir":
        below = devstate.mounts_below(d["path"])
        if below:
            return f"{', '.join(below)} still mounted below it: not removed"
        if os.path.isdir(d["path"]):
            holders = [dev["name"] for dev in devstate.loop_devices()
                       if str(dev.get("back-file") or "").startswith(d["path"].rstrip("/") + "/")]
            if holders:
                return f"files in it still back {', '.join(holders)}: not removed"
        shutil.rmtree(d["path"], ignore_errors=True)
        return ""
    if res.kind == "pv":
        rc, err = _run_quiet(["pvremove", "-ff", "-y", d["device"]])
        return "" if rc == 0 else f"pvremove: {err}"
    if res.kind == "vg":
        rc, err = _run_quiet(["vgremove", "-f", d["name"]])
        return "" if rc == 0 else f"vgremove: {err}"
    if res.kind == "lv":
        rc, err = _run_quiet(["lvremove", "-f", d["name"]])
        return "" if rc == 0 else f"lvremove: {err}"
    if res.kind == "md":
        rc, err = _run_quiet(["mdadm", "--stop", d["device"]])
        return "" if rc == 0 else f"mdadm --stop: {err}"
    if res.kind == "command":
        proc = subprocess.run(["/bin/sh", "-c", d["undo"]], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=600, env=dict(os.environ, **d.get("env", {})))
        if proc.returncode == 0:
            d["ran_ok"] = True
            return ""
        return f"{d['undo']}: exit {proc.returncode}: {proc.stderr.strip()}"
    raise ValueError(f"unknown resource kind {res.kind!r}")


def _undo_one(res: Resource, *, attempts: int = 6) -> None:
    """Remove *res* and check it is gone; sets res.state to 'removed' or 'left'."""
    why = ""
    for attempt in range(attempts):
        try:
            if not _present(res):
                res.state, res.note = "removed", ""
                return
            why = _remove(res)
        except (OSError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
            why = str(exc)
        # umount and losetup -d race with a process that was just killed; retry.
        time.sleep(0.1 * (attempt + 1))
    try:
        gone = not _present(res)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        gone, why = False, why or str(exc)
    res.state, res.note = ("removed", "") if gone else ("left", why or "still present")


@dataclass
class TeardownReport:
    """What a teardown removed and checked gone, and what it left."""

    removed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.left

    def __str__(self) -> str:
        if self.left:
            return ("teardown left behind: " + "; ".join(self.left)
                    + " (`diskmodel cleanup` retries; `--dry-run` lists)")
        if not self.removed:
            return "this run had built nothing yet"
        return f"everything this run built was torn down and checked gone ({len(self.removed)} item(s))"


# --------------------------------------------------------------------------- the run

class Run:
    """One diskmodel run's state file: what it owns, recorded before it is created."""

    def __init__(self, command: str, *, root: Path | None = None):
        self.root = root or run_root()
        self.pid = os.getpid()
        self.start_ticks = _process_start_ticks(self.pid)
        self.run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{self.pid}-{secrets.token_hex(3)}"
        self.command = command
        self.started = time.time()
        self.resources: list[Resource] = []
        self.path = self.root / f"{self.run_id}.json"
        self._work_dir: Path | None = None
        self._lock = threading.RLock()

    # -- the state file
    def _save(self) -> None:
        data = {
            "format": STATE_FORMAT, "format_version": STATE_FORMAT_VERSION,
            "run_id": self.run_id, "pid": self.pid, "start_ticks": self.start_ticks,
            "command": self.command, "started": self.started,
            "resources": [{"id": r.id, "kind": r.kind, "state": r.state, "details": r.details, "note": r.note}
                          for r in self.resources],
        }
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, json.dumps(data, indent=1).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)

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
                    _undo_one(res)
                    if res.state == "left":
                        report.left.append(f"{res.describe()}: {res.note}")
                    else:
                        report.removed.append(res.describe())
                self._save()
        return report

    def finish(self) -> TeardownReport:
        """Undo everything; remove the state file when all is checked gone."""
        report = self.undo()
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
                    there = _present(res)
                except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                    there = f"unknown ({exc})"
                say(f"  would remove {res.describe()}" if there is True else
                    f"  {res.describe()}: already gone" if there is False else f"  {res.describe()}: {there}")
            continue
        with _signals_ignored():
            for res in reversed(todo):
                _undo_one(res)
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
