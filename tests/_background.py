"""The test session's background jobs: the documentation's build and the bounds-checked compile.

Each job runs in a folder of its own under the session's background folder, through this file run as a
program (``python _background.py STATUS COMMAND...``): it runs COMMAND and, once COMMAND has ended,
writes its exit status to STATUS (a temporary name, then renamed, so a reader never sees half of it).
Whoever reads the result polls for that file rather than waiting for a child: under pytest-xdist the
worker that started a job need not be the one whose test reads it, and a worker may end (the scheduler
shuts it down when it has no work left) while the job still runs for the other. The process that made
the background folder (the xdist controller, or pytest itself when it runs the tests alone) stops what
still runs at its end (:func:`stop_job`).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
STATUS = "status"
PID = "pid"


def claim(folder: Path, name: str) -> Path | None:
    """The folder of job *name* under *folder*, made now; None when another process made it first (the
    other pytest-xdist worker, which collected the same tests, starts the job, once)."""
    try:
        (folder / name).mkdir()
    except FileExistsError:
        return None
    return folder / name


def start(job: Path, command: list[str], *, stdout, stderr, env=None, cwd=None) -> subprocess.Popen:
    """Run *command* in a process group of its own through the status-writing runner, its pid in
    ``job/pid``."""
    proc = subprocess.Popen([sys.executable, str(HERE), str(job / STATUS), *command], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, process_group=0)
    (job / PID).write_text(str(proc.pid))
    return proc


def result(job: Path, timeout_s: float) -> int:
    """The exit status of the job in *job*, once it has ended; TimeoutError after *timeout_s*."""
    deadline = time.monotonic() + timeout_s
    while not (job / STATUS).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the background job in {job} did not end within {timeout_s} s")
        time.sleep(0.2)
    return int((job / STATUS).read_text())


def _reap(pid: int) -> None:
    """Collect *pid*'s exit status when it is this process's child (pytest run alone), so that it
    does not linger as a zombie that still has a /proc entry."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        _reap(pid)
        if not Path(f"/proc/{pid}").exists():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def descendants(pid: int) -> list[int]:
    """The processes under *pid*, children first (from /proc's parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):   # gone meanwhile
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(0), [])
        found += below
        todo += below
    return found


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def stop_job(job: Path, *, interrupt_sessions: bool = False) -> None:
    """Stop the job in *job* if it still runs (the run was cut short). With *interrupt_sessions*, the
    processes below it that lead sessions of their own (the documentation's notebook kernels) get SIGINT
    first, as an interrupted cell in Jupyter does: the cell's ``with`` blocks tear down what it built (an
    emulated drive's loop device and mount), which a kernel that merely loses its parent would not
    (ipykernel's parent poller exits at once); once nothing runs below them (a minute at most), the
    job's process group gets SIGTERM, then SIGKILL after a minute."""
    if not (job / PID).exists():
        return
    pid = int((job / PID).read_text())
    if (job / STATUS).exists() or _gone(pid, 0):
        _reap(pid)
        return
    if interrupt_sessions:
        kernels = [p for p in descendants(pid) if _session_of(p) == p]
        for kernel in kernels:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(kernel, signal.SIGINT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(descendants(kernel) for kernel in kernels):
            time.sleep(0.2)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        if _gone(pid, 60) and _group_gone(pid, 60):
            break


def _group_gone(pgid: int, timeout_s: float) -> bool:
    """Whether every process of group *pgid* has ended (a zombie counts as ended: its parent, init here,
    collects it) within *timeout_s*."""
    deadline = time.monotonic() + timeout_s
    while True:
        members = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):   # gone meanwhile
                    continue
                if fields[0] != "Z" and int(fields[2]) == pgid:
                    members.append(int(entry.name))
        if not members:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def main(argv: list[str]) -> int:
    status, *command = argv
    code = subprocess.run(command, stdin=subprocess.DEVNULL).returncode
    partial = Path(status + ".partial")
    partial.write_text(str(code))
    os.replace(partial, status)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
