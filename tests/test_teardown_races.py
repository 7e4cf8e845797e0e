"""Teardown races: what a step's child makes after an interrupt, and locks on reused inode numbers.

* An interrupt that lands while a step's child (``losetup --find --show``) is
  being started, or just before its caller waits for it: the child must be
  killed, and its process group waited for, before the teardown looks for what
  it makes; else the teardown passes the record as removed and the child makes
  its loop device a moment later, found by no record.
* The same, end to end: SIGINT delivered in ``diskmodel bench`` of a nested
  loop file as each of its three ``losetup --find`` children is started.
* An inode lock held for a file that is gone does not refuse the new file
  that got the freed inode number.
* ``diskmodel cleanup`` kills what a run killed by SIGKILL had started before
  its record named it (found by the run's ID in the environment).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import require_root, require_tools
from _faults import DISKMODEL, run_folders as _run_folders
from test_faults import _diskmodel_mounts, _env, _layer_stack_file, _stop


@pytest.mark.parametrize("when", ["while the child starts", "before the caller waits for it"])
def test_an_interrupt_around_a_steps_start_kills_the_child_before_the_teardown_looks(tmp_path, monkeypatch, when):
    """SIGINT that lands while ``losetup --find --show`` is being started: blocked while the child is forked
    and recorded, it is delivered as the signals are unblocked, before the caller holds the child (or just
    after, before it waits). The child must be killed (its group waited for) before the teardown looks
    for what it makes: else the teardown finds nothing, passes the record as removed, and the child makes
    its device a moment later (a loop device left over the scratch, found by no record). Here the step's
    child makes its folder as soon as the teardown has looked for it."""
    import time

    from diskmodel.calibrate.bench import host_executor as X
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.harness import resources, runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    made, looked = tmp_path / "made-by-the-step", tmp_path / "the-teardown-looked"
    plan = L.StackPlan(name="native", fs_type="ext3", fs_size_bytes=8 << 20, backing="/dev/null", regions=(),
                       steps=(L.Step("a step that makes its folder late",
                                     ("sh", "-c", f"while [ ! -e {looked} ]; do sleep 0.01; done; mkdir {made}"),
                                     resource=("dir", (("path", str(made)),))),),
                       device="/dev/null", mount_var="V1")
    real_present = resources.present

    def present(res, **kwargs):   # the first look for the step's folder lets its child go on (if it lives)
        there = real_present(res, **kwargs)
        if res.details.get("path") == str(made) and not looked.exists():
            looked.touch()
            time.sleep(0.5)
        return there
    monkeypatch.setattr(resources, "present", present)
    if when == "while the child starts":
        real_popen = subprocess.Popen

        class Popen(real_popen):   # the signal comes while spawn() holds the signals blocked
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                argv = args[0] if args else kwargs.get("args")
                if list(argv)[:2] == ["sh", "-c"] and str(looked) in list(argv)[2]:  # the step's child alone
                    os.kill(os.getpid(), signal.SIGINT)
        monkeypatch.setattr(subprocess, "Popen", Popen)
    else:
        real_wait = X.communicate_or_kill

        def interrupted_first(proc, timeout_s):   # the signal comes before the caller waits for its child
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)
            return real_wait(proc, timeout_s)
        monkeypatch.setattr(X, "communicate_or_kill", interrupted_first)
    with pytest.raises(X.Interrupted):
        with X.handle_signals(), runstate.ensure_run("test") as run:
            X.HostExecutor(plan).build()
    monkeypatch.undo()
    assert looked.exists()
    assert not made.exists(), "the step's child outlived the teardown's look and made what it had looked for"
    processes = [r for r in run.resources if r.kind == "process"]
    assert processes and all(r.state == "removed" for r in processes)
    assert not _alive(processes)
    assert list((tmp_path / "run").glob("*.json")) == []


def _alive(records) -> list[int]:
    from diskmodel.calibrate.harness.resources import process_alive

    return [r.details["pid"] for r in records if process_alive(r.details["pid"], r.details.get("start_ticks"))]


# Loaded by the bench child alone (PYTHONPATH): SIGINT to itself right after the Nth `losetup --find` child
# has been started, while spawn() still holds the signals blocked (delivered as they are unblocked).
_SIGINT_AT_LOSETUP = '''
import os, signal, subprocess
_n, _seen, _Popen = int(os.environ["DISKMODEL_TEST_LOSETUP_N"]), [0], subprocess.Popen

class _Popen(_Popen):
    def __init__(self, args, *a, **kw):
        super().__init__(args, *a, **kw)
        if isinstance(args, (list, tuple)) and args and os.path.basename(str(args[0])) == "losetup" \\
                and "--find" in args:
            _seen[0] += 1
            if _seen[0] == _n:
                os.kill(os.getpid(), signal.SIGINT)
subprocess.Popen = _Popen
'''


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3])
def test_sigint_as_each_losetup_of_a_loop_file_bench_starts_leaves_nothing(tmp_path, n):
    """The layer bench of a nested loop file (three ``losetup --find``: the scratch's region, then each
    image), SIGINT delivered as the Nth losetup is started: the run ends with 130 and nothing is left, the
    loop device of that step included (tests/test_faults.py's unit test of the same window says why)."""
    require_root()
    require_tools("losetup", "mount", "mkfs.ext4", "fio")
    stack_file = _layer_stack_file(tmp_path, "loop_file")
    run_dir, scratch, hook = tmp_path / "run", tmp_path / "scratch.img", tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SIGINT_AT_LOSETUP)
    env = dict(_env(run_dir), DISKMODEL_TEST_LOSETUP_N=str(n), PYTHONPATH=str(hook))
    proc = subprocess.Popen([DISKMODEL, "bench", "--stack", str(stack_file), "--workload", "seqwrite_1m",
                             "--size", "24M", "--scratch", str(scratch)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        _stop(proc)
    assert proc.returncode == 128 + signal.SIGINT, err[-2000:]
    assert "torn down and checked gone" in err, err[-2000:]
    # the images' loop devices are over files in the run's own folder, the first over the scratch
    loops = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    assert [ln for ln in loops.splitlines() if str(tmp_path) in ln or f"-{proc.pid}-" in ln] == []
    assert [m for m in _diskmodel_mounts() if f"-{proc.pid}-" in m] == []
    assert _run_folders(proc.pid) == []
    assert list(run_dir.glob("*.json")) == [] and not scratch.exists()


@pytest.mark.parametrize("holder_file", ["gone", "the same"])
def test_an_inode_lock_held_for_a_file_that_is_gone_does_not_refuse_the_file_that_reused_its_number(
        tmp_path, holder_file):
    """A run's teardown unlinks its scratch while it still holds the scratch's inode lock; the kernel gives
    the freed inode number to the next new file at once (a concurrent run's new scratch), which that lock
    must not refuse. A holder whose recorded file is this very file still refuses it."""
    from diskmodel.calibrate.harness import locks

    target = tmp_path / "new-scratch.img"
    target.write_bytes(b"x")
    key = next(k for k in locks._lock_keys(target) if k.startswith("ino-"))
    recorded = tmp_path / "unlinked-scratch.img" if holder_file == "gone" else target
    lock_file = locks.lock_dir() / f"{key}.lock"
    record = json.dumps({"pid": 1, "purpose": "scratch", "path": str(recorded)})
    # the holder, as lock_target's _take leaves it: the lock file flocked, its record written
    holder = subprocess.Popen(
        [sys.executable, "-S", "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock_file)!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
         f"fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); os.pwrite(fd, {record.encode()!r}, 0)\n"
         "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        if holder_file == "gone":
            with locks.lock_target(target, purpose="the new scratch"):
                pass
        else:
            with pytest.raises(locks.TargetLocked, match="in use by another diskmodel run"):
                with locks.lock_target(target, purpose="the new scratch"):
                    pass
    finally:
        _stop(holder)
        locks.sweep()


def test_cleanup_kills_what_a_killed_run_started_before_its_record_named_it(tmp_path, monkeypatch):
    """A child may run, and start its own, while its record is still being made durable (fsync under load):
    a SIGKILL then leaves a state file without it. Every child carries the run's ID in its environment, and
    ``diskmodel cleanup`` kills the live processes that carry a dead run's ID; it also removes the temporary
    state file such a run left, and keeps one of a live process."""
    import time

    from diskmodel.calibrate.harness import resources, runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    run_id = f"20260101T000000-{dead.pid}-abcdef"
    state = {"format": runstate.STATE_FORMAT, "format_version": 1, "run_id": run_id, "pid": dead.pid,
             "start_ticks": 1, "command": "postmark", "started": 0, "resources": []}
    root = runstate.run_root()
    (root / f"{run_id}.json").write_text(json.dumps(state))
    (root / f"{run_id}.json").chmod(0o600)
    cut_short = root / f".{run_id}.json.x1y2z3.tmp"     # the record the SIGKILL cut short
    cut_short.write_text(json.dumps(state)[:40])
    live_tmp = root / f".20260101T000000-{os.getpid()}-abcdef.json.q.tmp"
    live_tmp.write_text("{")
    stray = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True,
                             env=dict(os.environ, **{resources.RUN_ID_ENV: run_id}))
    try:
        time.sleep(0.3)
        assert len(resources.processes_of_run(run_id)) == 2   # sh and its sleep
        lines = []
        assert runstate.cleanup(say=lines.append), lines
        assert resources.processes_of_run(run_id) == [], lines
        assert any("killed 2 process(es) the run had started" in line for line in lines), lines
        assert not (root / f"{run_id}.json").exists() and not cut_short.exists()
        assert live_tmp.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(stray.pid, signal.SIGKILL)
        stray.wait()
