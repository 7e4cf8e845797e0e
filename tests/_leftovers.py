"""What a run can leave on the system, looked at: loop devices over a folder, mounts, cgroups, the run's
folders and state files, the processes carrying a trial's mark, and the kernel threads' scheduling (the
fault matrix's checks, tests/_faults.py)."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

#: The SCHED_FIFO priority the ``realtime`` cells put kernel threads at: one no other run uses, so that
#: a thread found there afterwards was left by the trial's run.
KTHREAD_PRIORITY = 37
KTHREAD_PREFIXES = ("ksoftirqd/", "kworker/u")


def loops_over(folder: Path) -> list[str]:
    out = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if str(folder) in ln]


def mounts_of(folder: Path, pid: int) -> list[str]:
    return [ln for ln in Path("/proc/mounts").read_text().splitlines()
            if str(folder) in ln or ("/diskmodel-run-" in ln and f"-{pid}-" in ln)]


def cgroups_of(pid: int) -> list[Path]:
    found = []
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/unified"),
                 Path("/sys/fs/cgroup/blkio")):
        found += list(root.glob(f"diskmodel-*-{pid}-*"))
    return found


def run_folders(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"diskmodel-run-*-{pid}-*"))


def processes_marked(mark: Path) -> list[str]:
    """Live processes whose environment holds this trial's mark (every descendant of the run does)."""
    needle = f"DISKMODEL_TEST_MARK={mark}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if needle not in (d / "environ").read_bytes().split(b"\0"):
                continue
            if (d / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            found.append(f"{d.name} {(d / 'comm').read_text().strip()}")
        except OSError:
            pass
    return found


def state(run_dir: Path) -> list[dict]:
    out = []
    for path in run_dir.glob("*.json"):
        try:
            out += json.loads(path.read_text())["resources"]
        except (OSError, ValueError, KeyError):
            pass
    return out


def has_process(run_dir: Path, name_prefix: str) -> bool:
    return any(r["kind"] == "process" and r["state"] == "created"
               and str(r["details"].get("name", "")).startswith(name_prefix) for r in state(run_dir))


def kernel_threads() -> dict[tuple[int, int], tuple[str, int, int]]:
    """{(pid, start ticks): (name, policy, priority)} of the kernel threads (children of kthreadd) whose name
    starts with one of :data:`KTHREAD_PREFIXES`, read from /proc and sched_getscheduler(2)."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            text = (d / "stat").read_text()
            name, fields = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
            if fields[1] == "2" and name.startswith(KTHREAD_PREFIXES):
                found[(int(d.name), int(fields[19]))] = (name, os.sched_getscheduler(int(d.name)),
                                                         os.sched_getparam(int(d.name)).sched_priority)
        except (OSError, ValueError, IndexError):
            continue
    return found


def threads_not_back(before: dict, after: dict) -> list[str]:
    """The kernel threads the run left changed: one still under SCHED_FIFO at :data:`KTHREAD_PRIORITY` that
    was not before, or one whose policy or priority differs from *before* where no other run explains it
    (another run's change is under SCHED_FIFO at another priority, before or after)."""
    theirs = lambda v: v[1] == os.SCHED_FIFO and v[2] != KTHREAD_PRIORITY   # noqa: E731
    left = []
    for key, now in after.items():
        was = before.get(key)
        if now[1:] == (os.SCHED_FIFO, KTHREAD_PRIORITY) and (was is None or was[1:] != now[1:]):
            left.append(f"kernel thread {key[0]} ({now[0]}) still under SCHED_FIFO {KTHREAD_PRIORITY}")
        elif was is not None and was[1:] != now[1:] and not theirs(was) and not theirs(now):
            left.append(f"kernel thread {key[0]} ({now[0]}) at policy {now[1]} priority {now[2]}, "
                        f"not {was[1]} {was[2]} as before the run")
    return left
