"""A signal at a chosen phase of a real ``diskmodel`` run, then a look at the system: the fault matrix.

Used by tests/test_faults.py (each cell :data:`REPEATS` times, default 1) and
by benchmarks/faults_check.py (each cell 20 times). A cell is (subcommand,
phase, signal):

- ``postmark`` on a native ext3 stack over a new scratch file; phases: the
  scratch fill, ``losetup``, ``mkfs.ext3``, ``mount``, PostMark running;
- ``bench`` on a host stack (ext4 over a loop device holding an image file
  under a loop device, throttled by a blkio cgroup where cgroup v1 has one);
  phases: ``losetup``, ``mkfs.ext4``, ``mount``, the fio workload running;
- ``calibrate`` of a written regular file, with ``--json OUT``; phases: the
  first read (the probe), a read in the middle of the stages, the JSON
  output's temporary file written and fsynced but not yet renamed;
- ``emulate`` of a flat drive (nbdkit serving it, nbdfuse exposing it as a
  file, a direct-I/O loop device over that file; the path's cost measured
  with tests/_helpers.py's ``SHORT_PROBE_READS``); phases: nbdkit started,
  nbdfuse started, ``losetup``, serving, and ``calibrate`` of the emulated
  device (the calibrate is signalled at its first read, then the emulate is
  stopped with SIGINT), and ``realtime``: serving with the kernel threads on
  the loop devices' way under SCHED_FIFO (``--kernel-threads-realtime``, at
  :data:`KTHREAD_PRIORITY`), each of which must be back at the policy and
  priority a snapshot taken before the run shows; signals SIGINT and SIGKILL
  (:data:`CELL_SIGNALS`);
- ``postmark_memory``: ``postmark`` as above with ``--memory-limit`` (PostMark
  in a memory cgroup of the run's); phase: PostMark running in it;
- ``postmark_emulate``: ``postmark --emulate`` of the same flat drive (the
  run serves it itself, then builds the native ext3 stack on it); phases:
  nbdkit started, nbdfuse started, the emulated device's ``losetup``,
  ``mkfs.ext3``, PostMark running;
- ``bench_emulate``: ``bench --emulate`` of that drive, a loop-file stack on
  it; phases: nbdkit started, the stack's first ``losetup``, ``mkfs.ext4``,
  the fio workload running;
- ``trace``: ``trace record`` of a loop device the trial attaches (and
  detaches), the traced command a sleep; phases: the run's own debugfs
  mounted, its own tracefs mounted (the route a kernel in lockdown takes,
  where blktrace may not read debugfs), the traced command running (the blk
  tracer's settings changed). Besides the common checks, the device's
  ``trace/enable`` must be back at 0 and no trace output left.

A phase is caught deterministically: a wrapper first on PATH runs the real
tool and then touches a mark file and sleeps (the window after the tool has
done its work and before the run has heard back); PostMark, fio, nbdkit and
nbdfuse are seen in the run's state file; the scratch fill's first write,
calibrate's reads and fsync are paused the same way by a ``sitecustomize``
module put on PYTHONPATH for the child alone.

SIGINT, SIGTERM, SIGHUP and SIGQUIT must end the run with status 128+N, the
line ``diskmodel: error: interrupted by SIGNAME; the run did not finish`` and
(where something was built) the teardown's report; SIGKILL leaves a state
file that ``diskmodel cleanup`` must undo. Either way nothing may be left:
looked for in ``losetup``, /proc/mounts, the cgroup folders, the run's
folders, the state folder, the scratch, the output, and every process whose
environment carries the trial's mark (every descendant of the run inherits it).
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _helpers import short_probe_env
# what a run can leave on the system, looked at (some of these names are the test modules', taken from here)
from _leftovers import (KTHREAD_PRIORITY, cgroups_of, has_process, kernel_threads, loops_over, mounts_of,
                        processes_marked, run_folders, state, threads_not_back)

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))
CAUGHT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
ALL_SIGNALS = (*CAUGHT_SIGNALS, signal.SIGKILL)
PHASES = {
    "postmark": ("fill", "losetup", "mkfs", "mount", "postmark"),
    "bench": ("losetup", "mkfs", "mount", "workload"),
    "calibrate": ("probe", "measure", "write"),
    "emulate": ("nbdkit", "nbdfuse", "losetup", "serve", "calibrate", "realtime"),
    "postmark_memory": ("postmark",),
    "postmark_emulate": ("nbdkit", "nbdfuse", "losetup", "mkfs", "postmark"),
    "bench_emulate": ("nbdkit", "losetup", "mkfs", "workload"),
    "trace": ("debugfs", "tracefs", "command"),
}
#: The signals each subcommand's cells deliver (the emulated drive: SIGINT, and SIGKILL then cleanup).
CELL_SIGNALS = {"postmark": ALL_SIGNALS, "bench": ALL_SIGNALS, "calibrate": ALL_SIGNALS,
                "emulate": (signal.SIGINT, signal.SIGKILL), "postmark_emulate": ALL_SIGNALS,
                "postmark_memory": ALL_SIGNALS, "bench_emulate": ALL_SIGNALS, "trace": ALL_SIGNALS}
TOOLS = {
    "postmark": ("postmark", "losetup", "mkfs.ext3", "mount", "umount", "findmnt"),
    "bench": ("fio", "losetup", "mkfs.ext4", "mount", "umount", "findmnt", "truncate", "blockdev"),
    "calibrate": (),
    "emulate": ("nbdkit", "nbdfuse", "fusermount3", "losetup"),
    "postmark_memory": ("postmark", "losetup", "mkfs.ext3", "mount", "umount", "findmnt"),
    "postmark_emulate": ("nbdkit", "nbdfuse", "fusermount3", "postmark", "losetup", "mkfs.ext3", "mount", "umount",
                         "findmnt"),
    "bench_emulate": ("nbdkit", "nbdfuse", "fusermount3", "fio", "losetup", "mkfs.ext4", "mount", "umount",
                      "findmnt", "truncate", "blockdev"),
    "trace": ("blktrace", "blkparse", "losetup", "mount", "umount"),
}
#: The subcommands whose run serves an emulated drive (nbdkit, nbdfuse, FUSE): they need /dev/fuse and nbdkit's
#: Python plugin.
EMULATING = ("emulate", "postmark_emulate", "bench_emulate")
REPEATS_ENV = "DISKMODEL_FAULT_REPEATS"
PHASE_TIMEOUT_S = 120.0
EXIT_TIMEOUT_S = 120.0
_WRAPPED = {("postmark", "losetup"): ("losetup", "--find"), ("postmark", "mkfs"): ("mkfs.ext3", "-q"),
            ("postmark", "mount"): ("mount", "-t"), ("bench", "losetup"): ("losetup", "--find"),
            ("bench", "mkfs"): ("mkfs.ext4", "-q"), ("bench", "mount"): ("mount", "-t"),
            ("emulate", "losetup"): ("losetup", "--find"), ("postmark_emulate", "losetup"): ("losetup", "--find"),
            ("postmark_emulate", "mkfs"): ("mkfs.ext3", "-q"), ("bench_emulate", "losetup"): ("losetup", "--find"),
            ("bench_emulate", "mkfs"): ("mkfs.ext4", "-q"), ("trace", "debugfs"): ("mount", "debugfs"),
            ("trace", "tracefs"): ("mount", "tracefs")}
# The traced command: says it runs (the mark), then sleeps until the signal ends it.
TRACED_COMMAND = ["/bin/sh", "-c", 'touch "$DISKMODEL_TEST_MARK"; exec sleep 60']
# 500 files: PostMark's file count is a random walk over its transactions (create or delete, even odds), and
# one that reaches zero ends the run with "out of files!" before a slow host has delivered the signal
POSTMARK_RUN = ["--layout", "native", "--workload", "test1", "--size", "16M", "--files", "500",
                "--transactions", "200000", "--max-size", "8000", "--quiet"]
MIB = 1 << 20


def repeats() -> int:
    """How many times each cell runs: $DISKMODEL_FAULT_REPEATS (a whole number >= 1), default 1."""
    text = os.environ.get(REPEATS_ENV, "1")
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{REPEATS_ENV} must be a whole number >= 1 (got {text!r})")
    return value


def wait_until(cond, timeout_s: float, what: str, proc: subprocess.Popen | None = None, poll_s: float = 0.02):
    """Poll *cond* until it is true and return it; AssertionError naming *what* on a timeout or an early exit."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        value = cond()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended (status {proc.returncode}) before {what}")
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


# ---------------------------------------------------------------- the system, looked at (tests/_leftovers.py)

def left_behind(trial: "Trial", pid: int) -> list[str]:
    """What the run left on the system (empty: nothing)."""
    left = [f"loop device {ln}" for ln in loops_over(trial.folder)]
    # a loop device over a device the run made (the stack's partition over the emulated drive's loop device),
    # where that device is still the run's: a device the run detached may since serve another run (a cell
    # beside this one, another user of the host) under the same name, and the loop devices over it are theirs
    listing = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    backing = dict(ln.split(None, 1) for ln in listing.splitlines() if len(ln.split(None, 1)) == 2)

    def the_runs(device: str, depth: int = 0) -> bool:
        file = backing.get(device, "")
        return (str(trial.folder) in file or ("/diskmodel-run-" in file and f"-{pid}-" in file)
                or (file in backing and depth < 8 and the_runs(file, depth + 1)))

    left += [f"loop device {name} {file}" for name, file in backing.items()
             if file in trial.devices_seen and the_runs(file)]
    left += [f"mount {ln}" for ln in mounts_of(trial.folder, pid)]
    left += [f"cgroup {p}" for p in cgroups_of(pid)]
    left += [f"run folder {p}" for p in run_folders(pid)]
    left += [f"state file {p}" for p in trial.run_dir.glob("*.json")]
    left += [f"process {p}" for p in processes_marked(trial.mark) + processes_marked(trial.reader_mark)]
    if trial.tmp.exists():
        left += [f"temporary file {p}" for p in trial.tmp.iterdir()]
    if trial.subcommand == "trace":
        left += [f"output {p}" for p in trial.folder.glob("out.npz*")]
        if trial.traced_enable not in (None, "0"):
            left.append(f"tracing of the traced device left on (trace/enable {trial.traced_enable})")
    if trial.subcommand in ("postmark", "postmark_memory", "bench") and trial.scratch.exists():
        left.append(f"scratch {trial.scratch}")
    if trial.threads_before is not None:
        left += threads_not_back(trial.threads_before, kernel_threads())
    if trial.subcommand == "calibrate":
        left += [f"output {p}" for p in trial.folder.glob("*out.json*")]
        if not trial.target.exists():
            left.append(f"the calibrated file {trial.target} is gone")
    return left


# ---------------------------------------------------------------- catching a phase

def wrapper_dir(folder: Path, tool: str, when: str) -> Path:
    """A folder holding a *tool* that runs the real one, then (when its arguments
    contain *when*) touches $DISKMODEL_TEST_MARK and sleeps: the signal's window."""
    real = shutil.which(tool)
    if real is None:
        raise FileNotFoundError(f"{tool} is not installed")
    wrap = folder / f"wrap-{tool}"
    wrap.mkdir()
    script = wrap / tool
    script.write_text(f"""#!/bin/sh
{real} "$@"
rc=$?
case " $* " in
  *" {when} "*) [ "$rc" = 0 ] && touch "$DISKMODEL_TEST_MARK" && sleep 60 ;;
esac
exit $rc
""")
    script.chmod(0o755)
    return wrap


# Loaded by the child alone (PYTHONPATH): pauses after the first write to a file of that name (the scratch
# fill), after the Nth read, or after the fsync of the output's temporary file, touching the mark first.
_SITECUSTOMIZE = '''
import os, time
_phase = os.environ.get("DISKMODEL_TEST_PAUSE", "")
_mark = os.environ.get("DISKMODEL_TEST_MARK", "")

def _pause():
    open(_mark, "w").close()
    time.sleep(60)

if _phase.startswith("write:"):
    _name, _write = _phase[6:], os.write

    def _paused_write(fd, data):
        out = _write(fd, data)
        try:
            mine = os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == _name
        except OSError:
            mine = False
        if mine and not os.path.exists(_mark):
            _pause()
        return out
    os.write = _paused_write
elif _phase.startswith("read:"):
    _n, _count, _preadv = int(_phase[5:]), [0], os.preadv

    def _counted_preadv(*args, **kwargs):
        out = _preadv(*args, **kwargs)
        _count[0] += 1
        if _count[0] == _n:
            _pause()
        return out
    os.preadv = _counted_preadv
elif _phase == "fsync:output":
    _fsync = os.fsync

    def _paused_fsync(fd):
        _fsync(fd)
        try:
            name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        except (OSError, TypeError):
            return
        if name.startswith(".out.json.") and name.endswith(".tmp"):
            _pause()
    os.fsync = _paused_fsync
'''

_CALIBRATE_PAUSE = {"probe": "read:1", "measure": "read:300", "write": "fsync:output"}


_FLAT_CALIBRATION: list[Path] = []


def flat_calibration() -> Path:
    """A calibration JSON of a flat (flash-like) 64 MiB drive with a 1 ms latency, made once per process:
    the drive the emulate cells serve (a flat drive needs no simulator compiled)."""
    if not _FLAT_CALIBRATION:
        from diskmodel.calibrate.harness.measure import calibrate
        from diskmodel.calibrate.harness.results import calibration_to_json

        from _helpers import FlatBackend as Flat

        folder = Path(tempfile.mkdtemp(prefix="diskmodel-faults-cal-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "flat.json"
        calibration_to_json(calibrate(Flat(), budget_s=5.0, progress=False), path)
        _FLAT_CALIBRATION.append(path)
    return _FLAT_CALIBRATION[0]


def _bench_stack(folder: Path, size_bytes: int = 96 * MIB) -> Path:
    from diskmodel.model.stacks.loop_file import nested_loop_files
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    stack = Stack(FileSystemNode(nested_loop_files(Partition(MIB, size_bytes), 1), kind="ext3"))
    path = folder / "stack.json"
    path.write_text(stack.to_json())
    return path


def _blkio_v1() -> bool:
    return Path("/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device").exists()


class Trial:
    """One run of *subcommand*, caught at *phase*, in a folder of its own."""

    def __init__(self, folder: Path, subcommand: str, phase: str) -> None:
        if phase not in PHASES[subcommand]:
            raise ValueError(f"phase {phase!r} is not one of {subcommand}'s {PHASES[subcommand]}")
        folder.mkdir(parents=True)
        self.folder, self.subcommand, self.phase = folder, subcommand, phase
        self.run_dir, self.mark = folder / "run", folder / "mark"
        self.scratch, self.target, self.output = folder / "scratch.img", folder / "disk.img", folder / "out.json"
        self.tmp, self.reader_mark = folder / "tmp", folder / "mark-reader"
        self.reader: subprocess.Popen | None = None
        self.threads_before: dict | None = None   # the kernel threads before a ``realtime`` run
        self.threads_changed = 0                  # how many it had under SCHED_FIFO while serving
        self.devices_seen: set[str] = set()       # the loop devices the run's state named when it was signalled
        self.traced: str | None = None            # the loop device a ``trace`` trial attached
        self.traced_enable: str | None = None     # its trace/enable once the run ended
        self._files: list = []
        self.proc: subprocess.Popen | None = None

    def _pause_in(self, env: dict, pause: str) -> None:
        """Have the child pause at *pause* (see :data:`_SITECUSTOMIZE`)."""
        folder = self.folder / "pause"
        folder.mkdir(exist_ok=True)
        (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        env["PYTHONPATH"] = f"{folder}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(folder)
        env["DISKMODEL_TEST_PAUSE"] = pause

    def _argv_env(self) -> tuple[list[str], dict]:
        env = dict(os.environ, DISKMODEL_RUN_DIR=str(self.run_dir), DISKMODEL_TEST_MARK=str(self.mark))
        env.pop("DISKMODEL_DEBUG", None)
        wrapped = _WRAPPED.get((self.subcommand, self.phase))
        if wrapped is not None:
            env["PATH"] = f"{wrapper_dir(self.folder, *wrapped)}:{env['PATH']}"
        if self.subcommand in ("postmark", "postmark_memory"):
            if self.phase == "fill":   # paused after the fill's first write
                self._pause_in(env, f"write:{self.scratch.name}")
            memory = ["--memory-limit", "256M"] if self.subcommand == "postmark_memory" else []
            return [DISKMODEL, "postmark", *POSTMARK_RUN, *memory, "--scratch", str(self.scratch)], env
        if self.subcommand == "bench":
            slow = ["--slow", "sda=4M"] if _blkio_v1() else []  # a throttle cgroup, and fio slow enough to catch
            return [DISKMODEL, "bench", "--stack", str(_bench_stack(self.folder)), "--workload", "seqwrite_1m",
                    "--size", "24M", "--scratch", str(self.scratch), *slow], env
        if self.subcommand in EMULATING:
            # its run folder (the FUSE mount, the drive's backing) in the trial's folder
            env["TMPDIR"] = str(self.tmp)
            self.tmp.mkdir()
            # the path's cost measured with a few reads: a cell checks the teardown, not the timing
            env = short_probe_env(env, self.folder / "short-probe")
        if self.subcommand == "emulate":
            rt = ["--kernel-threads-realtime", str(KTHREAD_PRIORITY)] if self.phase == "realtime" else []
            return [DISKMODEL, "emulate", str(flat_calibration()), "--json", "--no-realtime", *rt], env
        if self.subcommand == "postmark_emulate":
            return [DISKMODEL, "postmark", "--emulate", str(flat_calibration()), *POSTMARK_RUN], env
        if self.subcommand == "bench_emulate":   # the flat drive holds 64 MiB: a 48 MiB partition
            return [DISKMODEL, "bench", "--emulate", str(flat_calibration()), "--stack",
                    str(_bench_stack(self.folder, 48 * MIB)), "--workload", "seqwrite_1m", "--size", "24M"], env
        if self.subcommand == "trace":
            image = self.folder / "traced.img"
            with open(image, "wb") as f:
                f.truncate(16 * MIB)
            self.traced = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                                         check=True).stdout.strip()
            return [DISKMODEL, "trace", "record", "--device", self.traced, "--output", str(self.folder / "out.npz"),
                    "--", *TRACED_COMMAND], env
        with open(self.target, "wb") as f:
            f.write(os.urandom(32 * MIB))
            os.fsync(f.fileno())
        self._pause_in(env, _CALIBRATE_PAUSE[self.phase])
        # a budget the loaded host's slower reads do not find too small (the run refuses one it estimates is)
        return [DISKMODEL, "calibrate", str(self.target), "--budget-s", "8", "--json", str(self.output),
                "--no-progress"], env

    def start(self) -> "Trial":
        argv, env = self._argv_env()
        if self.phase == "realtime":
            self.threads_before = kernel_threads()
        self._files += [open(self.folder / "stdout", "wb"), open(self.folder / "stderr", "wb")]
        self.proc = subprocess.Popen(argv, env=env, stdout=self._files[0], stderr=self._files[1],
                                     stdin=subprocess.DEVNULL)
        return self

    def wait_for_phase(self) -> None:
        proc, what = self.proc, f"phase {self.phase} of {self.subcommand}"
        if self.subcommand == "postmark" and self.phase == "fill":
            wait_until(lambda: self.scratch.exists() and self.scratch.stat().st_size > 0, PHASE_TIMEOUT_S, what, proc)
        elif self.subcommand == "postmark" and self.phase == "postmark":
            wait_until(lambda: has_process(self.run_dir, "postmark"), PHASE_TIMEOUT_S, what, proc)
        elif self.subcommand in ("postmark_emulate", "postmark_memory") and self.phase == "postmark":
            wait_until(lambda: has_process(self.run_dir, "postmark"), PHASE_TIMEOUT_S, what, proc)
        elif self.subcommand in ("bench", "bench_emulate") and self.phase == "workload":
            # fio recorded in the run (started as itself, or by the workload's shell), and running
            wait_until(lambda: has_process(self.run_dir, "fio") or has_process(self.run_dir, "workloads on"),
                       PHASE_TIMEOUT_S, what, proc)
            wait_until(lambda: any(p.endswith(" fio") for p in processes_marked(self.mark)), PHASE_TIMEOUT_S,
                       "fio to start", proc)
        elif self.subcommand in EMULATING and self.phase in ("nbdkit", "nbdfuse"):
            wait_until(lambda: has_process(self.run_dir, self.phase), PHASE_TIMEOUT_S, what, proc)
        elif self.subcommand == "emulate" and self.phase in ("serve", "calibrate", "realtime"):
            wait_until(self.emulated_device, PHASE_TIMEOUT_S, what, proc)
            if self.phase == "realtime":   # changed before the drives were served
                self.threads_changed = sum(v[1:] == (os.SCHED_FIFO, KTHREAD_PRIORITY) and
                                           self.threads_before.get(k, v)[1:] != v[1:]
                                           for k, v in kernel_threads().items())
        else:
            wait_until(self.mark.exists, PHASE_TIMEOUT_S, what, proc)

    def emulated_device(self) -> str | None:
        """The device an emulate run serves, once it has said so on its standard output (None before)."""
        for line in (self.folder / "stdout").read_text(errors="replace").splitlines():
            if line.startswith("{") and line.endswith("}"):
                with contextlib.suppress(ValueError, KeyError, IndexError):
                    return json.loads(line)["devices"][0]["path"]
        return None

    def stderr(self, name: str = "stderr") -> str:
        path = self.folder / name
        return path.read_text(errors="replace") if path.exists() else ""

    def start_reader(self) -> subprocess.Popen:
        """``diskmodel calibrate`` of the emulated device, paused after its first read (at :attr:`reader_mark`)."""
        env = dict(os.environ, DISKMODEL_RUN_DIR=str(self.run_dir), DISKMODEL_TEST_MARK=str(self.reader_mark),
                   TMPDIR=str(self.tmp))
        env.pop("DISKMODEL_DEBUG", None)
        self._pause_in(env, "read:1")
        self._files += [open(self.folder / "reader.stdout", "wb"), open(self.folder / "reader.stderr", "wb")]
        self.reader = subprocess.Popen([DISKMODEL, "calibrate", self.emulated_device(), "--budget-s", "2",
                                        "--no-progress"], env=env, stdout=self._files[-2], stderr=self._files[-1],
                                       stdin=subprocess.DEVNULL)
        return self.reader

    def stop(self) -> None:
        """Kill the run if it still runs (a failed trial), and close its output files."""
        for proc in (self.reader, self.proc):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        for f in self._files:
            f.close()

    def detach_traced(self) -> None:
        """Read the traced device's trace/enable (the run's teardown must have put it back), then detach it."""
        if self.traced is None:
            return
        with contextlib.suppress(OSError):
            self.traced_enable = Path(f"/sys/class/block/{Path(self.traced).name}/trace/enable").read_text().strip()
        subprocess.run(["losetup", "-d", self.traced], capture_output=True)
        self.traced = None


def cleanup(run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([DISKMODEL, "cleanup"], env=dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir)),
                          capture_output=True, text=True, timeout=300)


def run_cell(folder: Path, subcommand: str, phase: str, signum: int) -> list[str]:
    """One trial of a cell: what went wrong (empty: the run said so and left nothing)."""
    trial = Trial(folder, subcommand, phase)
    name = signal.Signals(signum).name
    problems: list[str] = []
    reader = None
    try:
        trial.start()
        trial.wait_for_phase()
        if subcommand == "emulate" and phase == "calibrate":
            reader = trial.start_reader()
            wait_until(trial.reader_mark.exists, PHASE_TIMEOUT_S, "the calibrate of the emulated device to read",
                       reader)
        target = reader if reader is not None else trial.proc
        trial.devices_seen = {str(r["details"].get(k)) for r in state(trial.run_dir) if r["kind"] == "loop"
                              for k in ("device", "backing") if str(r["details"].get(k, "")).startswith("/dev/")}
        target.send_signal(signum)
        try:
            target.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            problems.append(f"still running {EXIT_TIMEOUT_S:g} s after {name}")
        if reader is not None and not problems:   # then the emulate's normal end
            trial.proc.send_signal(signal.SIGINT)
            try:
                trial.proc.wait(timeout=EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                problems.append(f"emulate still running {EXIT_TIMEOUT_S:g} s after SIGINT")
    except (AssertionError, OSError) as exc:
        problems.append(str(exc))
    finally:
        trial.stop()
    pid, err = trial.proc.pid if trial.proc else -1, trial.stderr() if trial.proc else ""
    if reader is not None:
        err = f"{err}\n[calibrate of the emulated device]\n{trial.stderr('reader.stderr')}"
    if problems:
        trial.detach_traced()
        return problems + [f"stderr: {err[-1500:]}"]
    problems += _said(trial, target, signum, err)
    if signum == signal.SIGKILL:
        problems += _after_sigkill(trial)
    trial.detach_traced()   # after cleanup: a SIGKILLed recording's settings are cleanup's to put back
    problems += [f"left behind: {x}" for x in left_behind(trial, pid)]
    if problems:
        problems.append(f"stderr: {err[-1500:]}")
    return problems


def _said(trial: Trial, target: subprocess.Popen, signum: int, err: str) -> list[str]:
    """What is wrong with the exit status and the lines of the signalled run (and of the emulate around a reader)."""
    problems = []
    if "Traceback" in err:
        problems.append("a traceback")
    if trial.phase == "realtime" and trial.threads_changed == 0:
        already = sum(v[1] == os.SCHED_FIFO for v in trial.threads_before.values())
        problems.append(f"no kernel thread was under SCHED_FIFO {KTHREAD_PRIORITY} while the run served "
                        f"({already} of the {len(trial.threads_before)} were under SCHED_FIFO before it)")
    if trial.subcommand == "emulate" and trial.phase in ("serve", "calibrate", "realtime"):
        # SIGINT while serving is the normal end of an emulate run: status 0 and its results
        if trial.proc.returncode != 0 and not (trial.phase != "calibrate" and signum == signal.SIGKILL):
            problems.append(f"emulate exit status {trial.proc.returncode}, not 0")
        if trial.phase != "calibrate":
            return problems
    if signum == signal.SIGKILL:
        return problems
    name = signal.Signals(signum).name
    line = f"diskmodel: error: interrupted by {name}; the run did not finish"
    if target.returncode != 128 + signum:
        problems.append(f"exit status {target.returncode}, not {128 + signum}")
    if line not in err.splitlines():
        problems.append(f"no line {line!r}")
    if trial.subcommand in ("postmark", "postmark_memory", "bench", *EMULATING, "trace") \
            and trial.phase != "calibrate" \
            and "torn down and checked gone" not in err:
        problems.append("no teardown report")
    return problems


def _after_sigkill(trial: Trial) -> list[str]:
    """``diskmodel cleanup`` after a SIGKILL; what went wrong (what it left is :func:`left_behind`'s to say:
    the state file it removes only when everything it lists is checked gone)."""
    problems = []
    # The tools the run started die with it (PR_SET_PDEATHSIG); what they started (a wrapper's sleep) is
    # killed by cleanup, by its recorded process group.
    servers = (" postmark", " fio", " nbdkit", " nbdfuse", " blktrace")
    try:
        wait_until(lambda: not [p for p in processes_marked(trial.mark) if p.endswith(servers)],
                   10, "postmark, fio, nbdkit or nbdfuse to die with the run")
    except AssertionError as exc:
        problems.append(str(exc))
    res = cleanup(trial.run_dir)
    if res.returncode != 0:
        problems.append(f"cleanup failed ({res.returncode}): {res.stdout[-800:]} {res.stderr[-800:]}")
    return problems
