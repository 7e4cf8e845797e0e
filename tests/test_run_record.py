"""The run's record of what it made (diskmodel.calibrate.harness.runstate): a teardown that cannot remove
something keeps the record and says so, a new run names ``diskmodel cleanup`` for a dead run's things, a
file a loop device holds is not unlinked, and a target's lock names its holder and dies with it
(tests/test_faults.py delivers signals to whole runs)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import require_root, require_tools


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_a_teardown_that_cannot_remove_something_says_so_and_keeps_the_record(tmp_path, monkeypatch):
    from diskmodel.calibrate.harness import resources, runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    monkeypatch.setattr(resources, "UNDO_RETRY_S", 0.3)   # what cannot be removed is retried this long
    run = runstate.Run("test").start()
    keep = tmp_path / "stays"
    keep.mkdir()
    (keep / "a file").write_text("x")   # a "cgroup" folder that rmdir cannot remove
    ok = run.intend("dir", path=str(tmp_path / "gone-already"))
    run.created(ok)
    bad = run.intend("cgroup", path=str(keep))
    run.created(bad)
    report = run.finish()
    assert not report.complete
    assert "left behind" in str(report) and "rmdir: Directory not empty" in str(report)
    assert run.path.exists()            # the record stays for `diskmodel cleanup`


def test_a_new_run_names_diskmodel_cleanup_when_a_dead_run_left_things(tmp_path, monkeypatch, caplog):
    from diskmodel.calibrate.harness import runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    leftover = tmp_path / "left-by-a-dead-run"
    leftover.mkdir()
    state = {"format": runstate.STATE_FORMAT, "format_version": 1, "run_id": "dead-run", "pid": dead.pid,
             "start_ticks": 1, "command": "postmark", "started": 0,
             "resources": [{"id": 0, "kind": "dir", "state": "created", "details": {"path": str(leftover)}}]}
    (runstate.run_root() / "dead-run.json").write_text(json.dumps(state))
    with caplog.at_level("WARNING"):
        run = runstate.Run("test").start()
    assert "diskmodel cleanup" in caplog.text and "dead-run" in caplog.text
    run.finish()
    assert [s.run_id for s in runstate.stale_runs()] == ["dead-run"]
    assert runstate.cleanup(say=lambda _: None)
    assert not leftover.exists() and runstate.stale_runs() == []


@pytest.mark.integration
@pytest.mark.slow
def test_a_file_is_not_unlinked_while_a_loop_device_holds_it(tmp_path, monkeypatch):
    require_root()
    require_tools("losetup")
    from diskmodel.calibrate.harness import resources, runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    monkeypatch.setattr(resources, "UNDO_RETRY_S", 0.3)   # the held file is retried this long, not 10 s
    path = tmp_path / "held.img"
    with runstate.ensure_run("test") as run:
        res = run.intend("file", path=str(path))
        path.write_bytes(os.urandom(1 << 20))
        st = path.stat()
        run.created(res, ino=st.st_ino, dev=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
        dev = subprocess.check_output(["losetup", "--find", "--show", str(path)], text=True).strip()
        try:
            report = run.undo([res])
            assert report.left and "still held by" in report.left[0]
            assert path.exists()
        finally:
            subprocess.run(["losetup", "-d", dev], check=True)
    assert not path.exists()


def test_the_lock_names_the_holders_pid_and_dies_with_it(tmp_path, monkeypatch):
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.locks import TargetLocked, lock_target

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    target = tmp_path / "target.img"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from diskmodel.calibrate.harness.locks import lock_target\n"
         f"with lock_target({str(target)!r}, purpose='test'):\n"
         "    print('held', flush=True); time.sleep(60)"],
        env=dict(os.environ), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TargetLocked, match=f"pid {holder.pid}"):
            with lock_target(tmp_path / "." / "target.img", purpose="second"):
                pass
        holder.kill()
        holder.wait()
        with lock_target(target, purpose="after the holder died"):
            pass
    finally:
        _stop(holder)


def test_the_record_file_holds_what_is_open_not_every_process_the_run_has_reaped(tmp_path, monkeypatch):
    """The file is rewritten whole at each change; what is removed leaves it, so a long run's saves (two for each
    process it starts, inside the tools' timed steps) stay as short as its first. What is open stays, with its
    id, for a cleanup after a SIGKILL to find."""
    from diskmodel.calibrate.harness import runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    run = runstate.Run("test").start()
    try:
        for k in range(120):  # each change is fsynced: a few ms each
            run.absent(run.intend("process", pid=10**6 + k))
        held = tmp_path / "held"
        open_one = run.intend("dir", path=str(held))
        held.mkdir()
        run.created(open_one)
        saved = json.loads(run.path.read_text())["resources"]
        assert [(r["id"], r["kind"], r["state"]) for r in saved] == [(120, "dir", "created")]
        assert len(run.resources) == 121 and run.path.stat().st_size < 2000
    finally:
        run.finish()
