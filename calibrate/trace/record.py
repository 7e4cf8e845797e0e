"""Record what reaches each block device while a command runs: blktrace, then blkparse.

:func:`record` runs ``blktrace -d DEV ...`` (Debian package blktrace) on the devices, runs the
command (an argument vector, never a shell), stops blktrace with SIGINT and reads its per-CPU files
with ``blkparse``, whose text :mod:`.blkparse` reads into one request stream per device.

blktrace reads the kernel's per-CPU relay files under debugfs (``/sys/kernel/debug/block/DEV``),
or, when debugfs is not mounted there, under an instance the run mounts in its own work folder
(recorded, so teardown unmounts it; ``blktrace -r``). A kernel in
lockdown refuses those files to every process ("Lockdown: blktrace: debugfs access is restricted",
security/lockdown); the same kernel events are then read through tracefs, the kernel's ``blk``
tracer with its binary output (kernel/trace/blktrace.c, blk_tracer_print_binary), which writes each
``struct blk_io_trace`` after a 16-byte ftrace header; :mod:`.ftrace_blk` turns them back into
blktrace's per-CPU files, so blkparse reads them as it reads blktrace's own. The route taken is said
on stderr, never silently.
"""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from diskmodel.calibrate.bench import process
from diskmodel.calibrate.harness import devstate, runstate

from .blkparse import BlockTrace, read_blkparse
from . import ftrace_blk

__all__ = ["TraceDevice", "resolve_devices", "record", "missing_tools", "DEBUGFS"]

DEBUGFS = Path("/sys/kernel/debug")
#: How long blktrace may take to open its files before the recording gives up [s].
START_TIMEOUT_S = 15.0
#: Completions of the command's last requests arrive after it exits: wait this long for them [s].
DRAIN_S = 0.3


class TraceDevice:
    """A block device to trace: its path as given, its name in the trace, major and minor."""

    def __init__(self, given: str, name: str, major: int, minor: int):
        self.given, self.name, self.major, self.minor = given, name, major, minor

    @property
    def kernel_name(self) -> str:
        return os.path.basename(os.path.realpath(self.given))

    @property
    def numbers(self) -> str:
        return f"{self.major},{self.minor}"


def missing_tools() -> str | None:
    """The one line to print when blktrace or blkparse is missing, else None."""
    for tool in ("blktrace", "blkparse"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: install the Debian package blktrace (`apt-get install blktrace`)"
    return None


def resolve_devices(devices) -> list[TraceDevice]:
    """The block devices *devices* (paths); ValueError naming the first that is not one."""
    out, seen = [], set()
    for given in devices:
        try:
            st = os.stat(given)
        except OSError as exc:
            raise ValueError(f"--device {given}: {exc.strerror}") from None
        if not stat.S_ISBLK(st.st_mode):
            raise ValueError(f"--device {given}: not a block device")
        key = (os.major(st.st_rdev), os.minor(st.st_rdev))
        if key in seen:
            raise ValueError(f"--device {given}: names a device given before")
        seen.add(key)
        out.append(TraceDevice(given, os.path.basename(given), *key))
    if not out:
        raise ValueError("--device: no device to trace")
    return out


def _debugfs_for(run) -> Path:
    """Where blktrace finds debugfs for this run: the system's (``/sys/kernel/debug``) when it is mounted,
    else an instance of this run's own, mounted in its work folder and recorded, so that teardown unmounts
    it. debugfs has one superblock however often it is mounted, so a mount of one's own shows the same
    files; mounting the system's place instead, and unmounting it at the end, would pull it from under a
    concurrent trace that found it mounted."""
    if (DEBUGFS / "block").is_dir():
        return DEBUGFS
    mountpoint = run.temp_dir("debugfs-")
    res = run.intend("mount", mountpoint=str(mountpoint), source="debugfs")
    proc = process.run(["mount", "-t", "debugfs", "-o", "nosuid,nodev,noexec", "debugfs", str(mountpoint)],
                       timeout_s=60)
    if proc.returncode != 0 or not devstate.mounted_at(str(mountpoint)):
        run.absent(res)
        raise RuntimeError(f"debugfs cannot be mounted on {mountpoint} "
                           f"({(proc.stderr or '').strip() or 'mount failed'}): blktrace reads the kernel's trace "
                           "through it")
    run.created(res)
    return mountpoint


def _start_blktrace(devices: list[TraceDevice], out_dir: Path, debugfs: Path = DEBUGFS):
    """blktrace running on *devices* (its relay files under *debugfs*), or (None, why) when it could not
    open the kernel's files."""
    argv = ["blktrace", "-r", str(debugfs), "-D", str(out_dir)]
    for d in devices:
        argv += ["-d", d.given]
    proc = process.spawn(argv, name="blktrace", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    want = [d.kernel_name for d in devices]
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            process.reaped(proc)
            return None, out.strip().splitlines()[0] if out.strip() else f"blktrace exited with {proc.returncode}"
        if all(any(out_dir.glob(f"{name}.blktrace.*")) for name in want):
            # Its files exist once every per-CPU thread has opened its relay file.
            time.sleep(0.2)
            if proc.poll() is None:
                return proc, ""
        time.sleep(0.05)
    process.communicate_or_kill(proc, 0.01) if proc.poll() is None else None
    raise RuntimeError(f"blktrace did not start tracing {', '.join(d.given for d in devices)} within {START_TIMEOUT_S:g} s")


def _stop_blktrace(proc) -> None:
    with_err = proc.poll()
    if with_err is None:
        os.kill(proc.pid, signal.SIGINT)
    out, _ = process.communicate_or_kill(proc, 60)
    if proc.returncode not in (0, -signal.SIGINT):
        raise RuntimeError(f"blktrace failed (exit {proc.returncode}): {(out or '').strip()[:200]}")


def _run_command(argv, timeout_s: float | None, cgroup_procs=None) -> int:
    child = process.spawn(list(argv), name=os.path.basename(argv[0]), stdin=subprocess.DEVNULL,
                          stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno(), cgroup_procs=cgroup_procs)
    process.communicate_or_kill(child, timeout_s)
    return child.returncode


def _blkparse(out_dir: Path, inputs: list[str], text_path: Path) -> None:
    argv = ["blkparse", "-D", str(out_dir), "-o", str(text_path)]
    for name in inputs:
        argv += ["-i", name]
    proc = process.run(argv, timeout_s=600)
    if proc.returncode != 0:
        raise RuntimeError(f"blkparse failed (exit {proc.returncode}): {(proc.stderr or '').strip()[:200]}")


def record(argv, devices, *, timeout_s: float | None = None, say=None, text_copy: Path | None = None,
           cgroup_procs=None):
    """Trace *devices* (paths) while the command *argv* runs: ``(BlockTrace, exit status)``.

    *text_copy*: where to keep blkparse's text too. *say*: where the route taken is told (stderr).
    *cgroup_procs*: a cgroup's ``cgroup.procs`` file to run the command in (a memory limit).
    """
    say = say or (lambda line: print(f"diskmodel: {line}", file=sys.stderr))
    why = missing_tools()
    if why:
        raise RuntimeError(why)
    if not argv:
        raise ValueError("COMMAND: give the command to run after --")
    if shutil.which(argv[0]) is None and not os.path.isfile(argv[0]):
        raise ValueError(f"COMMAND: {argv[0]!r} is not a program on PATH")
    devs = resolve_devices(devices)
    with runstate.ensure_run("trace record") as run:
        out_dir = run.temp_dir("blktrace-")
        bt, refused = _start_blktrace(devs, out_dir, _debugfs_for(run))
        names = {d.numbers: d.name for d in devs}
        if bt is None:
            if "Operation not permitted" not in refused and "Permission denied" not in refused:
                raise RuntimeError(f"blktrace could not trace: {refused}")
            say(f"blktrace cannot read debugfs here ({refused.strip()}; the kernel is in lockdown): "
                "reading the same kernel events through tracefs's blk tracer")
            with ftrace_blk.BlkTracer(run, devs, out_dir, process.run) as tracer:
                status = _run_command(argv, timeout_s, cgroup_procs)
                time.sleep(DRAIN_S)
                inputs = tracer.stop_and_write("trace")
        else:
            try:
                status = _run_command(argv, timeout_s, cgroup_procs)
                time.sleep(DRAIN_S)
            finally:
                _stop_blktrace(bt)
            inputs = [d.kernel_name for d in devs]
        text_path = text_copy or out_dir / "blkparse.txt"
        _blkparse(out_dir, inputs, text_path)
        trace = read_blkparse(text_path, names)
    for d in devs:  # a device with no request in the trace is still reported, with none
        if d.name not in trace.devices:
            from .blkparse import DeviceTrace
            import numpy as np
            from diskmodel.model.iopath import Stream

            trace.devices[d.name] = DeviceTrace(d.name, Stream.empty(), np.zeros(0))
    return trace, status
