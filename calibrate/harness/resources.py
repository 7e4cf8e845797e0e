"""What a run creates, how to find it again, remove it and check that it is gone.

A :class:`Resource` is one thing a :class:`~diskmodel.calibrate.harness.runstate.Run`
creates: a scratch file, a folder, a loop device, a mount, a cgroup, a child
process, an LVM volume, an md array, a device-mapper device, or the devices
of a btrfs the kernel scanned, or a thread's scheduling policy the run changed
(:mod:`~diskmodel.calibrate.harness.sched`). Every kind is typed: nothing here runs a
command string from a record (a state file naming the old "command" kind is
refused, not run).
:func:`present` looks for it (``losetup -J`` and ``findmnt -J`` through
:mod:`~diskmodel.calibrate.harness.devstate`, the cgroup's folder, the
process's start time), never trusting the record alone; :func:`undo_one`
removes it and checks that it is gone, and a :class:`TeardownReport` says
what a teardown removed and what it left. A scratch file is never unlinked
while a loop device still holds it, and a folder is never removed while
something is mounted below it.
"""
from __future__ import annotations

import contextlib
import errno
import itertools
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from diskmodel.calibrate.harness import devstate, pmqos, sched

__all__ = ["RUN_ID_ENV", "TAG_XATTR", "Resource", "TeardownReport", "kill_processes_of_run", "kill_strays_of_run",
           "loops_over", "process_group", "present", "process_alive", "process_start_ticks", "processes_of_run",
           "undo_one"]

#: The extended attribute that ties a scratch file to the record of the run that made it.
TAG_XATTR = "user.diskmodel.run"


def process_start_ticks(pid: int) -> int | None:
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
    now = process_start_ticks(pid)
    if now is None:
        return False
    if start_ticks is not None and now != start_ticks:
        return False
    try:  # a zombie has exited: it holds nothing but its entry
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"



def live_group_members(pgid: int) -> list[int]:
    """The processes of process group *pgid* that have not exited (zombies left out)."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


#: The variable every child a run starts carries (and passes on to its own children): the run's ID. What a
#: run killed by SIGKILL had started before its record named it is found by it (:func:`processes_of_run`).
RUN_ID_ENV = "DISKMODEL_RUN_ID"


def processes_of_run(run_id: str) -> list[int]:
    """The live processes of this user whose environment names run *run_id* (zombies left out)."""
    needle, uid = f"{RUN_ID_ENV}={run_id}".encode(), os.geteuid()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != uid or needle not in Path(entry.path, "environ").read_bytes().split(b"\0"):
                continue
            if Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def process_group(pid: int) -> int | None:
    """The process group of *pid* (None when it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def kill_processes_of_run(run_id: str, wait_s: float = 30.0, spare_groups=()) -> tuple[list[int], list[int]]:
    """SIGKILL :func:`processes_of_run` (but those in a process group of *spare_groups*) and wait up to
    *wait_s* for them to be gone: (killed, still there)."""
    spare = set(spare_groups)
    killed = [pid for pid in processes_of_run(run_id) if not spare or process_group(pid) not in spare]
    deadline = time.monotonic() + wait_s
    left = killed
    while left:
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
        left = [pid for pid in processes_of_run(run_id) if pid in killed]
    return killed, left


def kill_strays_of_run(run_id: str, resources) -> list[str]:
    """Kill what run *run_id* started that has left the process group it was recorded in (found, as
    ``diskmodel cleanup`` finds it, by the run's ID in its environment); the processes killed, described.

    fio's job processes call setsid(2) (fio's backend.c, thread_main), so killing fio's recorded group
    leaves them running, and one that its killed parent had not yet released waits for it forever. The
    recorded groups (*resources* of kind ``process``) and the caller's own are left to the teardown.
    """
    groups = {r.details.get("pid") for r in resources
              if r.kind == "process" and r.state in ("intended", "created", "left")}
    killed, alive = kill_processes_of_run(run_id, wait_s=10.0, spare_groups=groups | {os.getpgrp()})
    return [f"process {pid} (left the process group the run recorded)" for pid in killed if pid not in alive]


def _orphaned_members(d: dict) -> list[int]:
    """The live members of a recorded process group whose leader is gone.

    A run killed by SIGKILL takes the leader with it (PR_SET_PDEATHSIG), not
    what the leader started (a shell's fio, a wrapper's sleep): those stay in
    the group. While any member lives the group's number stays allocated and
    no new process can take it (the kernel frees a PID only when no process
    uses it as its PID, process group or session: ``free_pid`` in
    kernel/pid.c), so members found under the number while no process has
    it, or while the leader's zombie has it, are this run's.
    """
    pid = int(d["pid"])
    if not d.get("group"):
        return []
    ticks = process_start_ticks(pid)   # None: no process has the number (or its zombie was just reaped)
    if ticks is not None and ticks != d.get("start_ticks"):
        return []   # the number is another process's now: the group is long gone
    return live_group_members(pid)


#: How long a teardown waits for a killed process group to be gone [s]: a member inside a system call
#: (mount(2) of btrfs, a loop ioctl) takes its SIGKILL only when the call returns, and what the call
#: makes (a mount, a loop device) exists only then.
GROUP_EXIT_WAIT_S = 30.0


def identity_at_creation(res: "Resource", details: dict) -> dict:
    """*details* that the step creating *res* reported, with what finds the thing again: a loop device's
    attachment (its disk sequence number, :func:`~diskmodel.calibrate.harness.devstate.loop_attachment`),
    whatever becomes of its backing file's path."""
    device = details.get("device") or res.details.get("device")
    if res.kind == "loop" and device and "diskseq" not in details:
        attachment = devstate.loop_attachment(str(device))
        if attachment is not None:
            return {**details, "diskseq": attachment}
    return details


def loops_over(details: dict) -> list[str]:
    """The loop devices a loop resource's *details* name: its device while the attachment recorded at its
    creation (``diskseq``: :func:`~diskmodel.calibrate.harness.devstate.loop_attachment`) is still there;
    else, for a record made before the device was known, those whose backing (and offset, where given)
    match."""
    device, attachment = details.get("device"), details.get("diskseq")
    if device and attachment is not None:
        return [device] if devstate.loop_attachment(device) == attachment else []
    return devstate.loops_over(details.get("backing"), ino=details.get("backing_ino"),
                               maj_min=details.get("backing_dev"), offset_bytes=details.get("offset_bytes"))


def _lvm_has(report: str, name: str) -> bool:
    if shutil.which("lvs") is None:
        return False
    proc = subprocess.run([report, "--reportformat", "json", "--noheadings", name], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120,
                          env=dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1"))
    return proc.returncode == 0



@dataclass
class Resource:
    """One thing a run creates: its kind, what finds it, and where it stands.

    state: "intended" (recorded, its step may or may not have run), "created",
    "removed" (checked gone), "left" (teardown could not remove it) or "kept" (handed to the user:
    a scratch file kept with ``--keep``; no teardown removes it).
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
                             f"at offset {d.get('offset_bytes', 0)} bytes"
                             + (f" (a file system still mounted on it was unmounted first: "
                                f"{', '.join(d['unmounted'])})" if d.get("unmounted") else "")),
            "mount": lambda: f"mount on {d.get('mountpoint')}",
            "cgroup": lambda: f"cgroup {d.get('path')}",
            "process": lambda: f"process {d.get('pid')} ({d.get('name', '?')})",
            "pv": lambda: f"LVM physical volume {d.get('device')}",
            "vg": lambda: f"LVM volume group {d.get('name')}",
            "lv": lambda: f"LVM logical volume {d.get('name')}",
            "md": lambda: f"md array {d.get('device')}",
            "dm": lambda: f"device-mapper device {d.get('name')}",
            "btrfs": lambda: f"btrfs devices the kernel scanned: {', '.join(map(str, d.get('devices') or ()))}",
            "blktracer": lambda: f"tracefs blk tracer on {', '.join(d.get('enable') or ())}",
            "sched": lambda: sched.describe(d),
            "pmqos": lambda: pmqos.describe(d),
        }.get(self.kind, lambda: f"{self.kind} {d}")
        return text()


#: Why a record of the old "command" kind is not undone: its undo was shell text, which a planted
#: state file could make root run.
_REFUSED_COMMAND = ('resource kind "command" (a shell command to run) is refused: nothing was run; '
                    "remove what it made by hand, then the state file")


def _run_quiet(argv: list[str]) -> tuple[int, str]:
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1"))
    return proc.returncode, (proc.stderr or proc.stdout).strip()


def _dev_of(st: os.stat_result) -> str:
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def file_is_ours(d: dict, *, foreign: bool = False) -> bool:
    """Is the file at the record's path the one the record's run created?

    A path and an inode number do not say so: after a run is killed, its
    scratch removed by hand and a new one made at that path, the new file
    may get the same inode. A record made by
    :func:`~diskmodel.calibrate.harness.scratch.prepare_scratch` carries a
    random tag that the run writes into the file's ``user.diskmodel.run``
    extended attribute as soon as it has created it: an attribute belongs to
    the inode, so it names this file and no later one, and it survives the
    data written over the file (a file system made on it). ext4, XFS, btrfs
    and tmpfs (Linux 6.6 on) keep user attributes. A file without the tag is
    this run's own only if the file system refused the tag and the run that
    asks is the one that made it (not *foreign*, the cleanup of a dead run):
    otherwise nothing proves it, and RuntimeError says so.
    """
    path = d["path"]
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if "tag" not in d:   # recorded by hand (Run.intend): device and inode are all there is
        return d.get("ino") is None or (st.st_ino == d["ino"] and d.get("dev") in (None, _dev_of(st)))
    try:
        have = os.getxattr(path, TAG_XATTR, follow_symlinks=False).decode(errors="replace")
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.ENOTSUP):
            raise
        have = None
    if have is not None:
        return have == d["tag"]
    if d.get("tagged"):
        return False   # ours carried the tag and this one does not: another file at that path
    if not foreign and d.get("ino") == st.st_ino and d.get("dev") == _dev_of(st):
        return True
    raise RuntimeError(f"{path} carries no {TAG_XATTR} tag, so nothing shows it is the file this run made "
                       "(its file system keeps no user extended attributes, or the run died before tagging "
                       "it): not removed; remove it by hand if it is")


def present(res: Resource, *, foreign: bool = False) -> bool:
    """Is the resource still there? Looks, rather than trusting the record.

    *foreign*: asked on behalf of a run that is gone (``diskmodel cleanup``).
    """
    d = res.details
    if res.kind == "file":
        return file_is_ours(d, foreign=foreign)
    if res.kind == "dir":
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
        return process_alive(int(d["pid"]), d.get("start_ticks")) or bool(_orphaned_members(d))
    if res.kind == "pv":
        return bool(d.get("device")) and _lvm_has("pvs", d["device"])
    if res.kind == "vg":
        return _lvm_has("vgs", d["name"])
    if res.kind == "lv":
        return _lvm_has("lvs", d["name"])
    if res.kind == "md":
        return os.path.exists(f"/sys/block/{os.path.basename(d['device'])}/md")
    if res.kind == "dm":
        return os.path.exists(f"/dev/mapper/{d['name']}")
    if res.kind == "blktracer":
        from diskmodel.calibrate.trace.ftrace_blk import still_set
        return still_set(d)
    if res.kind == "sched":
        return sched.present(d)
    if res.kind == "pmqos":
        return pmqos.present(d)
    if res.kind == "btrfs":  # the kernel's list of scanned devices cannot be read: present until forgotten
        return not d.get("forgotten", False)
    if res.kind == "command":
        raise RuntimeError(_REFUSED_COMMAND)
    raise ValueError(f"unknown resource kind {res.kind!r}")


def _remove(res: Resource, foreign: bool) -> str:
    """Try once to remove the resource; '' on success, else why not."""
    d = res.details
    if res.kind == "process":
        pid = int(d["pid"])
        if not process_alive(pid, d.get("start_ticks")) and not _orphaned_members(d):
            return ""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if d.get("group"):
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        # The leader was alive, so the group is this run's: wait until every member has exited,
        # or the resources made after this one would be checked before what the members make
        # (a SIGINT during `sh -c 'mount ...'` killed the sh at once, and the mount, still in
        # mount(2), mounted after its mount point had been found empty and passed as removed).
        deadline = time.monotonic() + (GROUP_EXIT_WAIT_S if d.get("group") else 0.0)
        while True:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            members = live_group_members(pid) if d.get("group") else []
            if not members or time.monotonic() > deadline:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            time.sleep(0.05)
        if members:
            return (f"process group {pid}: {', '.join(map(str, members))} still running "
                    f"{GROUP_EXIT_WAIT_S:g} s after SIGKILL")
        return ""
    if res.kind == "blktracer":
        from diskmodel.calibrate.trace.ftrace_blk import restore
        return restore(d)
    if res.kind == "sched":
        return sched.restore(d)
    if res.kind == "pmqos":
        return pmqos.restore(d)
    if res.kind == "mount":
        rc, err = _run_quiet(["umount", d["mountpoint"]])
        return "" if rc == 0 else f"umount: {err}"
    if res.kind == "loop":
        why = []
        for dev in loops_over(d):
            if d.get("unmount_users"):
                why += _unmount_users(res, dev)
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
        if not file_is_ours(d, foreign=foreign):
            return ""
        holders = loops_over({"backing": os.path.realpath(d["path"]), "backing_ino": d.get("ino"),
                              "backing_dev": d.get("dev")})
        if holders:
            return f"still held by {', '.join(holders)}: not unlinked"
        if d.get("ino") is None and "tag" not in d:
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
    if res.kind == "dm":
        rc, err = _run_quiet(["dmsetup", "remove", d["name"]])
        return "" if rc == 0 else f"dmsetup remove: {err}"
    if res.kind == "btrfs":
        # fails when a device is already gone (its loop detached): then there is nothing to forget
        _run_quiet(["btrfs", "device", "scan", "--forget", *map(str, d["devices"])])
        d["forgotten"] = True
        return ""
    if res.kind == "command":
        raise RuntimeError(_REFUSED_COMMAND)
    raise ValueError(f"unknown resource kind {res.kind!r}")


def _unmount_users(res: Resource, device: str) -> list[str]:
    """Unmount the file systems mounted on *device* or its partitions (a loop device the tool serves, on which
    a user mounted a file system), naming each in the record so that the teardown's report names it."""
    try:
        uses = devstate.block_uses(devstate.block_device(device))
    except (devstate.DeviceStateError, OSError):
        return []
    why = []
    for use in uses:
        if use.kind == "mount" and use.target:
            res.details.setdefault("unmounted", []).append(f"{use.path} on {use.target}")
            rc, err = _run_quiet(["umount", use.target])
            if rc:
                why.append(f"umount {use.target} (still mounted on {use.path}): {err}")
    return why


#: How long :func:`undo_one` retries a removal that has not taken yet [s]: ``losetup -d`` of a device still
#: open only marks it to go at its last close (the kernel's autoclear, ``loop_clr_fd`` in
#: drivers/block/loop.c), and ``umount`` fails with EBUSY while that device still holds a file in it;
#: a process just killed (a fio job inside a write) closes them only when it has exited.
UNDO_RETRY_S = 10.0


def undo_one(res: Resource, *, retry_s: float | None = None, foreign: bool = False) -> None:
    """Remove *res* and check it is gone, retrying for up to *retry_s* (default :data:`UNDO_RETRY_S`);
    sets res.state to 'removed' or 'left'.

    *foreign*: on behalf of a run that is gone (``diskmodel cleanup``).
    """
    if res.kind == "command":
        res.state, res.note = "left", _REFUSED_COMMAND
        return
    why = ""
    deadline = time.monotonic() + (UNDO_RETRY_S if retry_s is None else retry_s)
    for attempt in itertools.count():
        try:
            if not present(res, foreign=foreign):
                res.state, res.note = "removed", ""
                return
            why = _remove(res, foreign)
        except (OSError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
            why = str(exc)
        if time.monotonic() > deadline:
            break
        # umount and losetup -d race with a process that was just killed; retry.
        time.sleep(min(0.1 * (attempt + 1), 1.0))
    try:
        gone = not present(res, foreign=foreign)
    except (OSError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
        gone, why = False, why or str(exc)
    res.state, res.note = ("removed", "") if gone else ("left", why or "still present")
    if not gone and res.kind == "loop":
        holders = [f"{dev} is open in {who}" for dev in loops_over(res.details) for who in _holders(dev)]
        if holders:
            res.note += f" ({'; '.join(holders)}: it detaches at its last close)"


def _holders(device: str) -> list[str]:
    """The processes with *device* open, ``"process PID (NAME)"`` each, from their descriptors in /proc: a
    loop device a process still holds cannot go (``losetup -d`` only marks it to, at its last close), and the
    one thing that can end that is closing it, so the teardown's report names who to close it in."""
    found = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(_link(fd) == device for fd in fd_dir.iterdir()):
                name = (fd_dir.parent / "comm").read_text().strip()
                found.append(f"process {fd_dir.parent.name} ({name})")
        except OSError:   # a process gone meanwhile, or one not ours to read
            continue
    return found


def _link(fd: Path) -> str:
    """Where descriptor *fd* (``/proc/PID/fd/N``) points, '' where it closed since it was listed (the listing's
    own descriptor among them: a process's other descriptors are still looked at)."""
    try:
        return os.readlink(fd)
    except OSError:
        return ""


@dataclass
class TeardownReport:
    """What a teardown removed and checked gone, and what it left."""

    removed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    unsaved: str = ""   # why the run state file could not be updated during the teardown, if it could not

    def _unsaved(self) -> str:
        return f"; the run state file could not be updated ({self.unsaved})" if self.unsaved else ""

    @property
    def complete(self) -> bool:
        return not self.left

    def __str__(self) -> str:
        if self.left:
            return ("teardown left behind: " + "; ".join(self.left) + self._unsaved()
                    + " (`diskmodel cleanup` retries; `--dry-run` lists)")
        if not self.removed:
            return "this run had built nothing yet" + self._unsaved()
        return (f"everything this run built was torn down and checked gone ({len(self.removed)} item(s))"
                + self._unsaved())

