"""A thread's scheduling policy as a run's recorded change (diskmodel.calibrate.harness.sched): the kernel
threads a run put under SCHED_FIFO are back after a SIGKILL and ``diskmodel cleanup``, and the undo touches
only the same thread (same start time) still at the policy the run set, and none a live run changed too.

Each is checked by sched_getscheduler(2) on the threads themselves, against a snapshot taken before."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_root
from _faults import KTHREAD_PRIORITY, kernel_threads, threads_not_back

from diskmodel.calibrate.harness import runstate, sched
from diskmodel.calibrate.harness.resources import Resource, undo_one

pytestmark = pytest.mark.serial  # kernel threads' real-time scheduling, host-wide

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))

_HOLD = f"""
import time
from diskmodel.calibrate.emulate.kthreads import kernel_threads_realtime
with kernel_threads_realtime({KTHREAD_PRIORITY}, ("ksoftirqd/",)) as changed:
    print(changed(), flush=True)
    time.sleep(120)
"""


def _fifo_37(snapshot: dict) -> dict:
    return {k: v for k, v in snapshot.items() if v[1:] == (os.SCHED_FIFO, KTHREAD_PRIORITY)}


@pytest.mark.slow  # changes the kernel's threads' policy (root)
def test_kernel_threads_a_sigkilled_run_left_real_time_are_put_back_by_cleanup(tmp_path):
    require_root()
    before = kernel_threads()
    softirq = {k for k, v in before.items() if v[0].startswith("ksoftirqd/") and v[1] != os.SCHED_FIFO}
    if not softirq:
        pytest.skip("every softirq thread runs real-time already (another run's): nothing would change")
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(tmp_path / "run"))
    proc = subprocess.Popen([sys.executable, "-c", _HOLD], stdout=subprocess.PIPE, text=True, env=env)
    try:
        changed = int(proc.stdout.readline())
        inside = kernel_threads()
    finally:
        proc.kill()
        proc.wait()
    assert changed == len(softirq)
    assert set(_fifo_37(inside)) >= softirq
    assert set(_fifo_37(kernel_threads())) >= softirq  # SIGKILL ran no teardown: still real-time
    out = subprocess.run([DISKMODEL, "cleanup"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count(f"removed SCHED_FIFO {KTHREAD_PRIORITY} set on thread") == len(softirq), out.stdout
    assert threads_not_back(before, kernel_threads()) == []
    assert list((tmp_path / "run").glob("*.json")) == []


@pytest.fixture
def fifo_sleeper():
    """A `sleep` under SCHED_FIFO at KTHREAD_PRIORITY, with the record of that change (it had SCHED_OTHER 0)."""
    require_root()
    proc = subprocess.Popen(["sleep", "120"])
    try:
        details = sched.details_of(proc.pid, "SCHED_FIFO", KTHREAD_PRIORITY, "sleep")
        assert details["policy"] == "SCHED_OTHER" and details["priority"] == 0
        os.sched_setscheduler(proc.pid, os.SCHED_FIFO, os.sched_param(KTHREAD_PRIORITY))
        yield proc.pid, details
    finally:
        proc.kill()
        proc.wait()


def _now(pid: int) -> tuple[int, int]:
    return os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority


@pytest.mark.slow  # sets a process's policy (root)
def test_the_undo_puts_back_only_the_same_thread_still_at_the_policy_set(fifo_sleeper):
    pid, details = fifo_sleeper
    other = Resource(0, "sched", dict(details, start_ticks=details["start_ticks"] + 1))   # a reused pid
    undo_one(other, retry_s=0, foreign=True)
    assert other.state == "removed" and _now(pid) == (os.SCHED_FIFO, KTHREAD_PRIORITY)
    os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(KTHREAD_PRIORITY + 1))   # changed since
    res = Resource(1, "sched", dict(details))
    undo_one(res, retry_s=0, foreign=True)
    assert res.state == "removed" and _now(pid) == (os.SCHED_FIFO, KTHREAD_PRIORITY + 1)
    os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(KTHREAD_PRIORITY))
    res = Resource(2, "sched", dict(details))
    undo_one(res, retry_s=0, foreign=True)
    assert res.state == "removed" and _now(pid) == (os.SCHED_OTHER, 0)


def _state_file(root: Path, run_id: str, pid: int, start_ticks, details: dict) -> None:
    path = root / f"{run_id}.json"
    path.write_text(json.dumps({"format": "diskmodel.runstate", "format_version": 1, "run_id": run_id,
                                "pid": pid, "start_ticks": start_ticks, "command": "test", "started": 0,
                                "resources": [{"id": 0, "kind": "sched", "state": "created",
                                               "details": details, "note": ""}]}))
    path.chmod(0o600)


@pytest.mark.slow  # sets a process's policy (root)
def test_cleanup_leaves_a_thread_a_live_run_changed_too(fifo_sleeper, tmp_path, monkeypatch):
    pid, details = fifo_sleeper
    root = tmp_path / "run"
    root.mkdir(mode=0o700)
    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(root))
    dead = subprocess.Popen(["true"])
    dead.wait()
    _state_file(root, "dead", dead.pid, None, details)
    _state_file(root, "live", os.getpid(), runstate.process_start_ticks(os.getpid()), details)
    said = []
    assert runstate.cleanup(say=said.append)
    assert _now(pid) == (os.SCHED_FIFO, KTHREAD_PRIORITY)
    assert any("a live run changed it too" in line for line in said), said
    (root / "live.json").unlink()
    _state_file(root, "dead", dead.pid, None, details)
    assert runstate.cleanup(say=said.append)
    assert _now(pid) == (os.SCHED_OTHER, 0)


def test_a_malformed_sched_record_is_refused_naming_its_field_and_nothing_is_touched(monkeypatch):
    called = []
    monkeypatch.setattr(os, "sched_setscheduler", lambda *a: called.append(a))
    for bad, field in (({"policy": "SCHED_DEADLINE"}, "'policy'"), ({"pid": "1; reboot"}, "'pid'"),
                       ({"set_priority": 1000}, "priority above 99"), ({"start_ticks": True}, "'start_ticks'")):
        details = {"pid": os.getpid(), "start_ticks": 1, "name": "x", "policy": "SCHED_OTHER", "priority": 0,
                   "set_policy": "SCHED_FIFO", "set_priority": 37, **bad}
        res = Resource(0, "sched", details)
        undo_one(res, retry_s=0, foreign=True)
        assert res.state == "left" and field in res.note, (bad, res.note)
    assert called == []


def test_a_sched_record_of_a_thread_that_ended_is_done(monkeypatch):
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(os, "sched_setscheduler", lambda *a: pytest.fail("a setscheduler for a gone thread"))
    res = Resource(0, "sched", {"pid": dead.pid, "start_ticks": 5, "name": "true", "policy": "SCHED_OTHER",
                                "priority": 0, "set_policy": "SCHED_FIFO", "set_priority": 37})
    undo_one(res, retry_s=0, foreign=True)
    assert res.state == "removed"
    assert sched.details_of(dead.pid, "SCHED_FIFO", 37) is None
