"""Faults: a signal at every phase of postmark, bench and calibrate, two runs on one scratch.

The fault matrix (tests/_faults.py) delivers SIGINT, SIGTERM, SIGHUP, SIGQUIT
and SIGKILL (then ``diskmodel cleanup``) at each phase of ``postmark``,
``bench`` and ``calibrate``, and SIGINT and SIGKILL at each phase of
``emulate`` (nbdkit, nbdfuse, the loop device, serving, a calibrate reading
the emulated device), each cell $DISKMODEL_FAULT_REPEATS times
(default 1; benchmarks/faults_check.py runs it 20 times a cell). A wrapper
placed first on PATH runs the real ``losetup`` (``mkfs``, ``mount``) and then
pauses, so that a signal lands deterministically after the tool has done its
work and before the run has heard back: the window in which a run that
records its undo only after a step returns leaks what the step built.

Each test runs the real ``diskmodel`` command line in a child process with a
run-state folder of its own (``DISKMODEL_RUN_DIR``), and checks afterwards, by
looking at the system (``losetup``, ``/proc/mounts``, cgroups, processes,
files), that nothing is left.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import _faults
from conftest import require_root, require_tools, skip_or_fail, wait_for
from _faults import DISKMODEL, loops_over as _loops_over, run_folders as _run_folders
from _helpers import one_in_turn

SMALL_RUN = _faults.POSTMARK_RUN


def _diskmodel_mounts() -> list[str]:
    return [ln for ln in Path("/proc/mounts").read_text().splitlines() if "/diskmodel-run-" in ln.split()[1]]


def _cgroups_of(pid: int) -> list[Path]:
    return [p for p in _faults.cgroups_of(pid) if p.name.startswith("diskmodel-postmark-")]


def _assert_nothing_left(tmp: Path, run_dir: Path, pid: int, scratch: Path | None = None) -> None:
    assert _loops_over(tmp) == []
    assert [m for m in _diskmodel_mounts() if f"-{pid}-" in m] == []
    assert _cgroups_of(pid) == []
    assert _run_folders(pid) == []
    assert list(run_dir.glob("*.json")) == [], [p.read_text() for p in run_dir.glob("*.json")]
    if scratch is not None:
        assert not scratch.exists()


def _wrapper_dir(tmp: Path, tool: str, when: str) -> Path:
    return _faults.wrapper_dir(tmp, tool, when)


def _env(run_dir: Path, wrap: Path | None = None, mark: Path | None = None) -> dict:
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir))
    if wrap is not None:
        env["PATH"] = f"{wrap}:{env['PATH']}"
    if mark is not None:
        env["DISKMODEL_TEST_MARK"] = str(mark)
    return env


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.fixture
def host_tools():
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount", "findmnt")


# ---------------------------------------------------------------- the fault matrix

def _require_cell(subcommand: str) -> None:
    if subcommand != "calibrate":
        require_root()
    require_tools(*_faults.TOOLS[subcommand])
    if subcommand in _faults.EMULATING:
        if not os.path.exists("/dev/fuse"):
            skip_or_fail("/dev/fuse is missing (modprobe fuse)")
        if subprocess.run(["nbdkit", "--dump-plugin", "python"], capture_output=True).returncode:
            skip_or_fail("nbdkit's Python plugin is missing (Debian package nbdkit-plugin-python)")


_CELLS = [pytest.param(sub, phase, sig, id=f"{sub}-{phase}-{sig.name}")
          for sub, phases in _faults.PHASES.items() for phase in phases for sig in _faults.CELL_SIGNALS[sub]]


#: Cells run at a time, as benchmarks/faults_check.py --jobs 2 runs them (its realtime cells one at a time): a
#: cell mostly waits (a wrapper's pause, a teardown's checks), and another cell's start-up fills the wait.
MATRIX_JOBS = 2


def _run_trials(folder: Path, subcommand: str, phase: str, signum: int) -> list[str]:
    failures = []
    for trial in range(_faults.repeats()):
        problems = _faults.run_cell(folder / f"t{trial}", subcommand, phase, signum)
        if problems:
            failures.append(f"trial {trial}: " + "\n  ".join(problems))
    return failures


class _MatrixCells:
    """The cells of the matrix tests that come next in the session, run :data:`MATRIX_JOBS` at a time from the
    first one's start; each test then takes its own cell's result. Only a run of consecutive matrix tests is
    started ahead (no other test runs beside a cell), and only cells whose tools are there (a test that
    skips or fails for a missing tool starts nothing)."""

    def __init__(self, tmp_path_factory) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(MATRIX_JOBS)
        self.realtime = threading.Lock()   # the realtime cells one at a time: each checks the kernel threads
        self.factory, self.futures = tmp_path_factory, {}

    def _cell(self, folder: Path, subcommand: str, phase: str, signum: int) -> list[str]:
        with self.realtime if phase == "realtime" else contextlib.nullcontext():
            return _run_trials(folder, subcommand, phase, signum)

    def result(self, item) -> list[str]:
        if item.nodeid not in self.futures:
            items = item.session.items
            for later in items[items.index(item):]:
                if getattr(later, "originalname", None) != item.originalname:
                    break
                params = later.callspec.params
                try:
                    _require_cell(params["subcommand"])
                except (pytest.skip.Exception, pytest.fail.Exception):
                    continue
                if params["subcommand"] in _faults.EMULATING:
                    _faults.flat_calibration()   # made once, here, not by two cells at once
                folder = self.factory.mktemp("cell")
                self.futures[later.nodeid] = self.pool.submit(self._cell, folder, params["subcommand"],
                                                              params["phase"], params["signum"])
        return self.futures.pop(item.nodeid).result()


@pytest.fixture(scope="module")
def matrix_cells(tmp_path_factory):
    cells = _MatrixCells(tmp_path_factory)
    yield cells
    cells.pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.integration
@pytest.mark.slow
# CI runs SIGKILL and one caught signal at each phase, the caught signal taken in turn (one handler
# tears down on all four: test_every_subcommand_turns_the_four_signals_into_one_line_and_128_plus_n);
# `pytest -m soak` runs the others
@pytest.mark.parametrize("subcommand, phase, signum", one_in_turn(_CELLS, lambda v: v[:2],
                                                                  lambda v: v[2] in _faults.CAUGHT_SIGNALS))
def test_a_signal_at_each_phase_of_each_subcommand_leaves_nothing(request, matrix_cells, subcommand, phase, signum):
    """SIGINT, SIGTERM, SIGHUP, SIGQUIT (torn down by the run) and SIGKILL (then ``diskmodel cleanup``) at
    each phase of postmark, bench and calibrate, and SIGINT and SIGKILL at each phase of an emulated drive:
    $DISKMODEL_FAULT_REPEATS times (benchmarks/faults_check.py runs the matrix 20 times a cell); the cells
    :data:`MATRIX_JOBS` at a time (:class:`_MatrixCells`)."""
    _require_cell(subcommand)
    failures = matrix_cells.result(request.node)
    assert failures == [], "\n".join(failures)


def test_the_repeat_count_is_checked(monkeypatch):
    monkeypatch.setenv(_faults.REPEATS_ENV, "twenty")
    with pytest.raises(ValueError, match="DISKMODEL_FAULT_REPEATS must be a whole number >= 1 .got 'twenty'."):
        _faults.repeats()
    monkeypatch.delenv(_faults.REPEATS_ENV)
    assert _faults.repeats() == 1


# ---------------------------------------------------------------- every subcommand, by the command line

# The smallest command line each subcommand parses; a new subcommand needs its line here.
SUBCOMMAND_ARGV = {
    "experiment": ["experiment"], "calibrate": ["calibrate", "--simulated", "hp97560"],
    "predict": ["predict", "--layout", "native", "--workload", "test1"], "probe": ["probe"],
    "postmark": ["postmark", "--layout", "native", "--workload", "test1"], "validate-trace": ["validate-trace"],
    "bench": ["bench", "--stack", "x.json", "--workload", "seqwrite_1m"], "cleanup": ["cleanup"],
    "emulate": ["emulate", "hp97560"], "emulate-log": ["emulate-log", "x.npz"],
    "iopath": ["iopath", "--stack", "native", "--workload", "postmark:test1"], "stack-schema": ["stack-schema"],
    "trace": ["trace", "record", "--", "true"], "replay": ["replay", "--stack", "x.json", "x.npz"],
}

# Run in a child: every subcommand's handler replaced by one that signals its own process and waits;
# main() must turn each of the four signals into the one line and 128+N, and put the handlers back.
_EVERY_SUBCOMMAND = """
import json, os, signal, sys, time
from diskmodel.calibrate import cli
argvs, real_build = json.loads(sys.argv[1]), cli.build_parser

def signal_myself(args):
    os.kill(os.getpid(), int(os.environ["DISKMODEL_TEST_SIGNAL"]))
    time.sleep(30)
    return 0

def replace_handlers(parser):  # nested subcommands too (trace record): theirs are their own defaults
    for action in (parser._subparsers._group_actions if parser._subparsers else []):
        for sub in action.choices.values():
            sub.set_defaults(handler=signal_myself)
            replace_handlers(sub)

def build():
    parser = real_build()
    replace_handlers(parser)
    print(json.dumps({"subcommands": [n for a in parser._subparsers._group_actions for n in a.choices]}),
          flush=True)
    return parser

cli.build_parser = build
for name, argv in argvs.items():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        before = signal.getsignal(sig)
        os.environ["DISKMODEL_TEST_SIGNAL"] = str(int(sig))
        code = cli.main(argv)
        print(json.dumps({"name": name, "signal": sig.name, "code": code,
                          "restored": signal.getsignal(sig) == before}), flush=True)
"""


def test_every_subcommand_turns_the_four_signals_into_one_line_and_128_plus_n():
    res = subprocess.run([sys.executable, "-c", _EVERY_SUBCOMMAND, json.dumps(SUBCOMMAND_ARGV)],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ, DISKMODEL_DEBUG=""))
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    parsed = next((r["subcommands"] for r in rows if "subcommands" in r), None)
    assert parsed is not None, res.stdout + res.stderr
    assert sorted(parsed) == sorted(SUBCOMMAND_ARGV), "give SUBCOMMAND_ARGV a command line for each subcommand"
    got = {(r["name"], r["signal"]): (r["code"], r["restored"]) for r in rows if "code" in r}
    want = {(name, sig.name): (128 + sig, True) for name in SUBCOMMAND_ARGV for sig in _faults.CAUGHT_SIGNALS}
    assert got == want, res.stderr[-3000:]
    lines = res.stderr.splitlines()
    for sig in _faults.CAUGHT_SIGNALS:
        line = f"diskmodel: error: interrupted by {sig.name}; the run did not finish"
        assert lines.count(line) == len(SUBCOMMAND_ARGV), res.stderr[-3000:]
    assert "Traceback" not in res.stderr


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_an_experiment_says_so(tmp_path, signum):
    """`experiment --device FILE` paused in its calibration's reads (tests/_faults.py's sitecustomize)."""
    trial = _faults.Trial(tmp_path / "t", "calibrate", "probe")
    argv, env = trial._argv_env()
    out = tmp_path / "report"
    proc = subprocess.Popen([DISKMODEL, "experiment", "--device", str(trial.target), "--budget-s", "2",
                             "--out", str(out), "--no-progress"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _faults.wait_until(trial.mark.exists, 120, "the experiment's calibration to read", proc)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        _stop(proc)
    assert proc.returncode == 128 + signum, err[-2000:]
    assert f"diskmodel: error: interrupted by {signum.name}; the run did not finish" in err.splitlines()
    assert "Traceback" not in err
    assert _faults.processes_marked(trial.mark) == []
    assert not (out / "summary.txt").exists() and not (out / "report.json").exists()


# ---------------------------------------------------------------- SIGKILL in a VM, then cleanup

def _state(run_dir: Path) -> list[dict]:
    return _faults.state(run_dir)


def _has(run_dir: Path, kind: str, state: str = "created", name: str | None = None) -> bool:
    return any(r["kind"] == kind and r["state"] == state and (name is None or r["details"].get("name") == name)
               for r in _state(run_dir))


def _cleanup(run_dir: Path) -> subprocess.CompletedProcess:
    return _faults.cleanup(run_dir)


@pytest.mark.integration
@pytest.mark.slow
def test_sigkill_during_a_vm_run_then_cleanup_leaves_nothing(tmp_path):
    require_tools("qemu-system-x86_64", "postmark", "lvm", "busybox")
    from diskmodel.calibrate.bench.vm import vm_available
    ok, why = vm_available()
    if not ok:
        skip_or_fail(f"the throwaway VM cannot run here: {why}")
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([DISKMODEL, "postmark", "--layout", "lvm2", "--workload", "test1", "--vm",
                             "--size", "64M", "--files", "50", "--transactions", "2000000", "--quiet"],
                            env=_env(run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: _has(run_dir, "process", name="qemu"), 300, "qemu to start")
        qemu = [r["details"]["pid"] for r in _state(run_dir) if r["details"].get("name") == "qemu"]
        folders = [r["details"]["path"] for r in _state(run_dir) if r["kind"] == "dir"]
        assert folders and all(Path(f).exists() for f in folders)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        _stop(proc)
    # qemu dies with its parent.
    wait_for(lambda: not Path(f"/proc/{qemu[0]}").exists()
              or "qemu" not in Path(f"/proc/{qemu[0]}/comm").read_text(), 30, "qemu to die")
    res = _cleanup(run_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not any(Path(f).exists() for f in folders)
    assert list(run_dir.glob("*.json")) == []


# ---------------------------------------------------------------- one owner per scratch

@pytest.mark.integration
@pytest.mark.slow
def test_two_runs_on_one_scratch_exactly_one_runs_the_other_names_its_pid(tmp_path, host_tools):
    run_dir, mark, scratch = tmp_path / "run", tmp_path / "mark", tmp_path / "scratch.img"
    wrap = _wrapper_dir(tmp_path, "losetup", "--find")
    first = subprocess.Popen([DISKMODEL, "postmark", *SMALL_RUN, "--scratch", str(scratch)],
                             env=_env(run_dir, wrap, mark), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        wait_for(mark.exists, 60, "the first run to attach its loop device")
        loops_before = _loops_over(tmp_path)
        # The second run confirms the overwrite, as the first's busy message would advise.
        second = subprocess.run([DISKMODEL, "postmark", *SMALL_RUN, "--scratch", str(scratch),
                                 "--destroy-data-on", str(scratch)],
                                env=_env(run_dir), capture_output=True, text=True, timeout=60)
        assert second.returncode != 0
        assert f"pid {first.pid}" in second.stderr, second.stderr
        assert _loops_over(tmp_path) == loops_before      # the second built nothing
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    finally:
        _stop(first)
    _assert_nothing_left(tmp_path, run_dir, first.pid, scratch)


# ---------------------------------------------------------------- the block layers' provisioners (issue 14)

def _layer_stack_file(tmp: Path, layer: str) -> Path:
    from diskmodel.model.drive.drives import PresetDrive
    from diskmodel.model.stacks.loop_file import nested_loop_files
    from diskmodel.model.stacks.raid import RaidArray
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    mib = 1 << 20
    if layer == "loop_file":
        stack = Stack(FileSystemNode(nested_loop_files(Partition(mib, 192 * mib), 2), kind="ext3"))
    else:
        members = (Partition(mib, 160 * mib), Partition(mib, 160 * mib, disk="sdb"))
        stack = Stack(FileSystemNode(RaidArray("raid1", members, tool="btrfs"), kind="btrfs"),
                      (PresetDrive("wd800bd"), PresetDrive("wd800bd", "sdb")))
    path = tmp / f"{layer}.json"
    path.write_text(stack.to_json())
    return path


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("layer, tools", [("loop_file", ("mkfs.ext4", "fio")), ("btrfs_raid1", ("mkfs.btrfs", "fio"))])
def test_sigint_at_random_points_of_a_layer_bench_leaves_nothing(tmp_path, layer, tools):
    """SIGINT at random moments of `diskmodel bench` (building, throttling a member, running fio)."""
    import random
    import time

    require_root()
    require_tools("losetup", "mount", *tools)
    stack_file = _layer_stack_file(tmp_path, layer)
    slow = ["--slow", "sdb=8M"] if layer == "btrfs_raid1" else []
    rng = random.Random(f"issue 14 {layer}")
    interrupted = 0
    for trial in range(2):
        trial_dir = tmp_path / f"t{trial}"
        trial_dir.mkdir()
        run_dir, scratch = trial_dir / "run", trial_dir / "scratch.img"
        proc = subprocess.Popen([DISKMODEL, "bench", "--stack", str(stack_file), "--workload", "seqwrite_1m",
                                 "--size", "24M", "--scratch", str(scratch), *slow],
                                env=_env(run_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # a random moment after the run has started (its record exists): building, throttling, fio
            wait_for(lambda: list(run_dir.glob("*.json")) if run_dir.exists() else None, 60, "the run to start")
            time.sleep(rng.uniform(0.0, 3.0))
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            _stop(proc)
        interrupted += proc.returncode == 128 + signal.SIGINT
        assert proc.returncode in (0, 128 + signal.SIGINT), err[-2000:]
        _assert_nothing_left(trial_dir, run_dir, proc.pid, scratch)
        assert not list(Path("/sys/fs/cgroup/blkio").glob(f"diskmodel-blkio-{proc.pid}-*"))
        mounts = Path("/proc/mounts").read_text().splitlines()
        assert not [m for m in mounts if str(trial_dir) in m or ("diskmodel-run-" in m and f"-{proc.pid}-" in m)]
    assert interrupted >= 1, "the signal came after the runs had ended: nothing was interrupted"


@pytest.mark.integration
@pytest.mark.slow
def test_a_killed_process_group_is_waited_for_until_its_last_member_has_exited(tmp_path):
    """A member inside a system call takes its SIGKILL only when the call returns, after its leader has died.

    Here the member is dd reading with O_DIRECT from a loop device throttled to 64 KiB/s (an uninterruptible
    wait of about 2 s); in `diskmodel bench` it was mount(2) of btrfs, whose mount appeared after teardown
    had found the mount point empty.  The teardown must not pass the group as removed while dd still runs.
    """
    import time

    from diskmodel.calibrate.harness import resources

    require_root()
    require_tools("losetup", "dd")
    blkio = Path("/sys/fs/cgroup/blkio")
    if not (blkio / "blkio.throttle.read_bps_device").exists():
        skip_or_fail("no cgroup v1 blkio throttle")
    image = tmp_path / "slow.img"
    with open(image, "wb") as f:
        f.write(os.urandom(1 << 20))
    loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(image)], capture_output=True,
                          text=True, check=True).stdout.strip()
    group = blkio / f"diskmodel-test-{os.getpid()}"
    leader = None
    try:
        group.mkdir()
        rdev = os.stat(loop).st_rdev
        (group / "blkio.throttle.read_bps_device").write_text(f"{os.major(rdev)}:{os.minor(rdev)} 65536\n")
        # `; true` keeps sh as the group's leader, dd its child (no exec)
        leader = subprocess.Popen(["/bin/sh", "-c", f'echo $$ > {group}/cgroup.procs; '
                                   f'dd if={loop} of=/dev/null bs=128k count=1 iflag=direct 2>/dev/null; true'],
                                  start_new_session=True)

        def dd_waiting():
            for pid in resources.live_group_members(leader.pid):
                with contextlib.suppress(OSError):
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    if "(dd)" in stat and stat.rsplit(")", 1)[1].split()[0] == "D":
                        return pid
            return None

        dd = wait_for(dd_waiting, 10, "dd to wait on the throttled device")
        res = resources.Resource(0, "process", {"pid": leader.pid, "group": True,
                                                "start_ticks": resources.process_start_ticks(leader.pid)})
        resources.undo_one(res)
        assert res.state == "removed", res.note
        assert resources.live_group_members(leader.pid) == []
        with contextlib.suppress(FileNotFoundError):  # gone, or a zombie that holds nothing
            assert Path(f"/proc/{dd}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    finally:
        if leader is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(leader.pid, signal.SIGKILL)
            leader.wait()
        deadline = time.monotonic() + 10
        while group.exists() and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                group.rmdir()
            time.sleep(0.1)
        subprocess.run(["losetup", "-d", loop], check=False)



@pytest.mark.integration
@pytest.mark.slow
def test_sigint_while_nbdfuse_is_still_starting_leaves_no_fuse_mount(tmp_path):
    """A run stopped while nbdfuse is still starting: a look for its mount then finds none, and nbdfuse may
    mount a moment later. The teardown ends nbdfuse first and looks for its mount after. Before, it looked,
    found nothing, waited for nbdfuse to exit on its own (it does not: its mount was never taken down) and
    left the FUSE mount behind (seen once in the fault matrix, emulate at its nbdfuse phase, SIGINT)."""
    require_root()
    require_tools("nbdkit", "nbdfuse")
    import shutil

    wrap = tmp_path / "wrap"
    wrap.mkdir()
    real = shutil.which("nbdfuse")
    # says it is starting (the mark), then takes a second before it runs the real nbdfuse, deaf to SIGINT
    (wrap / "nbdfuse").write_text(f'#!/bin/sh\ntouch "$DISKMODEL_TEST_MARK"\ntrap "" INT\nsleep 1\nexec {real} "$@"\n')
    (wrap / "nbdfuse").chmod(0o755)
    mark, run_dir, tmp = tmp_path / "mark", tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir), DISKMODEL_TEST_MARK=str(mark), TMPDIR=str(tmp),
               PATH=f"{wrap}:{os.environ['PATH']}")
    env.pop("DISKMODEL_DEBUG", None)
    proc = subprocess.Popen([DISKMODEL, "emulate", str(_faults.flat_calibration()), "--json", "--no-realtime"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _faults.wait_until(mark.exists, 60, "nbdfuse to start", proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(2.0)   # past the wrapper's second: a nbdfuse that outlived the teardown would have mounted by now
    mounts = [ln for ln in Path("/proc/mounts").read_text().splitlines() if str(tmp_path) in ln]
    assert mounts == [], mounts
    assert "left behind" not in err.decode(), err.decode()
    assert not list(run_dir.glob("*.json")), "the run's state file was left"


@pytest.mark.integration
@pytest.mark.slow
def test_the_leak_check_tells_a_runs_device_from_another_attached_under_its_name_since(tmp_path):
    """A loop device over a device the run made is the run's leak while that device is still the run's (its
    backing file in the trial's folder), and another's once the name serves another file (a cell beside it)."""
    require_root()
    require_tools("losetup")
    trial = _faults.Trial(tmp_path / "t", "calibrate", "probe")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    attached = []

    def attach(backing: str) -> str:
        attached.append(subprocess.run(["losetup", "--find", "--show", backing], capture_output=True, text=True,
                                       check=True).stdout.strip())
        return attached[-1]

    try:
        for folder in (trial.folder, elsewhere):
            image = folder / "drive.img"
            image.write_bytes(b"\0" * (4 << 20))
            under = attach(str(image))
            over = attach(under)
            trial.devices_seen = {under}
            left = [x for x in _faults.left_behind(trial, -1) if "loop device" in x]
            want = [f"loop device {under} ", f"loop device {over} {under}"] if folder == trial.folder else []
            assert [x for x in want if not any(line.startswith(x) for line in left)] == [], left
            if folder == elsewhere:
                assert left == [], left
            for device in reversed(attached):
                subprocess.run(["losetup", "-d", device], check=True)
            attached.clear()
    finally:
        for device in reversed(attached):
            subprocess.run(["losetup", "-d", device], check=False)
