"""A signal that lands while a run tears something down: it waits for the teardown, and is not lost.

A teardown runs at a run's end, and also in the middle of a job (a step's
scratch removed, an emulated drive stopped). Each test sends a real signal to
this process at a point inside a real teardown (``Run.undo`` removing real
folders) and checks, by looking at the folders and at what is raised:

* the teardown is never cut short: every folder is gone;
* a Ctrl-C during a teardown in the middle of a job ends the job once the
  teardown is done (it used to be ignored there, and the job ran on);
* a run that is ending with an error keeps its error;
* a second Ctrl-C during the teardown an interrupt started is dropped;
* a program the teardown starts is not killed by the terminal's Ctrl-C;
* ``diskmodel cleanup``, interrupted, settles the dead run's record first.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from diskmodel.calibrate.harness import interrupts, resources, runstate


def _dir_resource(run, path):
    res = run.intend("dir", path=str(path))
    os.mkdir(path, 0o700)
    run.created(res, ino=os.lstat(path).st_ino)
    return res


def _signal_at_first_undo(monkeypatch, signum=signal.SIGINT, count=1):
    """Send *signum* to this process as the teardown starts on its first resource(s); return the calls."""
    real = resources.undo_one
    calls = []

    def undo_one(res, **kw):
        calls.append(res.describe())
        if len(calls) <= count:
            os.kill(os.getpid(), signum)
            time.sleep(0.01)   # the handler runs in this thread at once, were it able to
        return real(res, **kw)

    monkeypatch.setattr(runstate, "undo_one", undo_one)
    return calls


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    return tmp_path


def test_a_ctrl_c_during_a_steps_teardown_ends_the_job_once_the_teardown_is_done(run_dir, monkeypatch):
    folders = [run_dir / f"step{i}" for i in range(3)]
    after_the_step = []
    with pytest.raises(interrupts.Interrupted, match="SIGINT"):
        with interrupts.handle_signals(), runstate.ensure_run("test") as run:
            made = [_dir_resource(run, f) for f in folders]
            calls = _signal_at_first_undo(monkeypatch)
            run.undo(made)   # a step's things removed in the middle of the job
            after_the_step.append("the job ran on")
    assert len(calls) == 3, calls                    # the step's whole teardown ran
    assert not any(f.exists() for f in folders)
    assert after_the_step == []                       # and then the job ended


def test_a_run_ending_with_an_error_keeps_it_when_a_signal_lands_in_its_teardown(run_dir, monkeypatch):
    folders = [run_dir / f"made{i}" for i in range(2)]
    with pytest.raises(ValueError, match="the run's own error") as caught:
        with interrupts.handle_signals(), runstate.ensure_run("test") as run:
            for f in folders:
                _dir_resource(run, f)
            _signal_at_first_undo(monkeypatch, signal.SIGTERM)
            raise ValueError("the run's own error")
    assert not any(f.exists() for f in folders)
    assert "torn down and checked gone (2 item(s))" in caught.value.teardown_report


def test_a_second_ctrl_c_during_an_interrupts_teardown_is_dropped(run_dir, monkeypatch):
    folders = [run_dir / f"made{i}" for i in range(3)]
    with pytest.raises(interrupts.Interrupted) as caught:
        with interrupts.handle_signals(), runstate.ensure_run("test") as run:
            for f in folders:
                _dir_resource(run, f)
            calls = _signal_at_first_undo(monkeypatch, count=2)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    assert caught.value.signum == signal.SIGTERM     # the first signal's, carrying its teardown's report
    assert "torn down and checked gone (3 item(s))" in caught.value.teardown_report
    assert len(calls) == 3 and not any(f.exists() for f in folders)


@pytest.mark.parametrize("block, sig", [(runstate.signals_blocked, signal.SIGINT),
                                        (interrupts.during_teardown, signal.SIGQUIT)],
                         ids=["a step and its record", "a teardown"])
def test_a_signal_another_thread_takes_waits_for_the_blocks_end(block, sig):
    """The kernel gives a signal sent to the process to any thread that does not block it (a progress bar's
    monitor thread, a fit in the background); Python then runs the handler in the main thread at once.
    Inside ``signals_blocked`` (a step's child started and recorded) and inside a teardown it must still wait
    for the block's end, then end the job."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    reached_the_end = False
    try:
        with pytest.raises(interrupts.Interrupted, match=sig.name):
            with interrupts.handle_signals():
                with block():
                    signal.pthread_kill(other.ident, sig)
                    for _ in range(50):   # many points where a handler runs in the main thread
                        time.sleep(0.002)
                    reached_the_end = True
    finally:
        stop.set()
        other.join()
    assert reached_the_end


def test_outside_the_command_lines_handlers_a_ctrl_c_is_python_s_own_after_the_teardown():
    """A notebook's run has no handle_signals: SIGINT is Python's KeyboardInterrupt, raised after the teardown."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)   # Python's own, as in a notebook
    try:
        reached_the_end = False
        with pytest.raises(KeyboardInterrupt):
            with interrupts.during_teardown():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)
                reached_the_end = True
        assert reached_the_end
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_program_the_teardown_starts_is_not_killed_by_the_terminals_ctrl_c():
    """The terminal sends Ctrl-C to the whole foreground process group, so to ``umount`` or ``losetup -d``
    half way through too: the programs a teardown starts inherit the signals blocked."""
    script = ["sh", "-c", "kill -INT $$; kill -TERM $$; echo alive"]
    with interrupts.during_teardown(deliver=False):
        inside = subprocess.run(script, capture_output=True, text=True, timeout=30)
    outside = subprocess.run(script, capture_output=True, text=True, timeout=30)
    assert (inside.returncode, inside.stdout) == (0, "alive\n")
    assert outside.returncode == -signal.SIGINT      # the same program, started elsewhere, dies
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) & set(interrupts.HANDLED_SIGNALS) == set()


def test_a_ctrl_c_during_cleanup_ends_it_after_the_dead_runs_record_is_settled(run_dir, monkeypatch):
    """``diskmodel cleanup`` of a dead run: a signal while it removes the run's things ends the cleanup, but
    only after the run's state file is settled (removed, all being gone): a delivered signal must not skip it
    and leave a record of things already removed."""
    import json

    root = run_dir / "run"
    root.mkdir(mode=0o700)
    folders = [run_dir / f"left{i}" for i in range(2)]
    for f in folders:
        f.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    record = {"format": "diskmodel.runstate", "format_version": 1, "run_id": "deadrun", "pid": dead.pid,
              "start_ticks": 1, "command": "postmark", "started": 0,
              "resources": [{"id": k, "kind": "dir", "state": "created", "details": {"path": str(f)}}
                            for k, f in enumerate(folders)]}
    (root / "deadrun.json").write_text(json.dumps(record))
    calls = _signal_at_first_undo(monkeypatch)
    said = []
    with pytest.raises(interrupts.Interrupted, match="SIGINT"):
        with interrupts.handle_signals():
            runstate.cleanup(say=said.append)
    assert len(calls) == 2 and not any(f.exists() for f in folders), said
    assert not (root / "deadrun.json").exists(), said
