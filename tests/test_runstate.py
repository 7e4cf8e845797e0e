"""The run state: whose records cleanup acts on, what it may touch, locks that hold, teardown without state.

Each test sets up what a fault probe found (a record planted by another user,
a state file without its ``pid``, a live run's scratch at a dead run's path,
two runs on one file with their own run folders, lock files piling up, a
state file that cannot be written during the teardown) and checks the result
by looking at the system: the files, the processes, the real ``diskmodel``
command line's output and exit status.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import require_root, require_tools, wait_for
from _helpers import assert_one_error_line
from test_faults import DISKMODEL, SMALL_RUN, _assert_nothing_left, _loops_over, _stop, _wrapper_dir

NOBODY = 65534
#: A PostMark run on a 16 MiB native ext file system that finishes in seconds.
QUICK_RUN = ["--layout", "native", "--workload", "test1", "--size", "16M", "--files", "50",
             "--transactions", "500", "--max-size", "8000", "--quiet"]


def _diskmodel(args: list[str], run_dir: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([DISKMODEL, *args], env=dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir)),
                          capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


def _record(run_id: str, pid: int, resources: list[dict], **extra) -> dict:
    return {"format": "diskmodel.runstate", "format_version": 1, "run_id": run_id, "pid": pid,
            "start_ticks": 1, "command": "postmark", "started": 0, "resources": resources, **extra}


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _as_nobody() -> None:
    os.setgid(NOBODY)
    os.setuid(NOBODY)


# ---------------------------------------------------------------- records planted by another user

@pytest.fixture
def shared_tmp():
    """A folder in /tmp that user nobody can reach (pytest's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="diskmodel-test-runstate-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _plant_as_nobody(run_dir: Path, victim: Path, proof: Path) -> Path:
    """A state file written by user nobody: a dead run that 'made' *victim* (root's) and a command."""
    state = _record("planted", _dead_pid(), [
        {"id": 0, "kind": "dir", "state": "created", "details": {"path": str(victim)}},
        {"id": 1, "kind": "command", "state": "created", "details": {"undo": f"touch {proof}"}}])
    path = run_dir / "planted.json"
    # coreutils' tee, not this venv's python: nobody may not reach an interpreter under /root
    subprocess.run(["tee", str(path)], input=json.dumps(state), text=True, stdout=subprocess.DEVNULL,
                   preexec_fn=_as_nobody, check=True)
    assert path.stat().st_uid == NOBODY
    return path


@pytest.mark.integration
@pytest.mark.slow
def test_cleanup_never_acts_on_a_record_another_user_planted(shared_tmp):
    require_root()
    run_dir, victim, proof = shared_tmp / "run", shared_tmp / "roots-data", shared_tmp / "ran-as-root"
    run_dir.mkdir()
    run_dir.chmod(0o1777)        # root's, but anyone may write into it
    victim.mkdir()
    _plant_as_nobody(run_dir, victim, proof)

    # A run folder others may write to is refused, in one line, before any record is read.
    res = _diskmodel(["cleanup"], run_dir)
    assert res.returncode == 1, res.stdout + res.stderr
    assert_one_error_line(res.stderr, f"run state folder {run_dir} may be written by other users")
    assert not proof.exists() and victim.is_dir()

    # In a folder of root's alone, a state file root does not own is named, in one line, and skipped.
    run_dir.chmod(0o700)
    res = _diskmodel(["cleanup"], run_dir)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stdout.splitlines() if "planted.json" in ln]
    assert len(lines) == 1 and f"owned by uid {NOBODY}, not by uid 0" in lines[0], res.stdout
    assert not proof.exists() and victim.is_dir()
    # A new run folder is made 0700.
    fresh = shared_tmp / "fresh" / "run"
    assert _diskmodel(["cleanup"], fresh).returncode == 0
    assert fresh.stat().st_mode & 0o777 == 0o700


# ---------------------------------------------------------------- a malformed state file

@pytest.mark.parametrize("damage", [
    pytest.param(lambda s: s.pop("pid"), id="no-pid"),
    pytest.param(lambda s: s.update(pid="12"), id="pid-a-string"),
    pytest.param(lambda s: s.update(resources=[{"id": 0, "kind": "dir", "state": "created"}]), id="no-details"),
    pytest.param(lambda s: s.update(resources={"0": {}}), id="resources-not-a-list"),
])
def test_a_malformed_state_file_is_named_once_and_skipped(tmp_path, monkeypatch, caplog, damage):
    from diskmodel.calibrate.harness import runstate

    run_dir = tmp_path / "run"
    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(run_dir))
    leftover = tmp_path / "left-by-a-dead-run"
    leftover.mkdir()
    bad = _record("bad", _dead_pid(), [])
    damage(bad)
    runstate.run_root()
    (run_dir / "bad.json").write_text(json.dumps(bad))
    good = _record("good", _dead_pid(), [{"id": 0, "kind": "dir", "state": "created",
                                          "details": {"path": str(leftover)}}])
    (run_dir / "good.json").write_text(json.dumps(good))
    runstate._reported.clear()
    with caplog.at_level("WARNING"):
        for _ in range(3):
            with runstate.ensure_run("test"):
                pass
    named = [r.getMessage() for r in caplog.records if "bad.json" in r.getMessage()]
    assert len(named) == 1 and "\n" not in named[0], named
    said = []
    assert not runstate.cleanup(say=said.append)     # the bad file is left, and said so
    assert not leftover.exists()                      # the good one was cleaned up all the same
    assert len([s for s in said if "bad.json" in s]) == 1, said
    assert sorted(p.name for p in run_dir.glob("*.json")) == ["bad.json"]


@pytest.mark.integration
@pytest.mark.slow
def test_a_state_file_without_pid_blocks_neither_postmark_nor_cleanup(tmp_path):
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount", "findmnt")
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    bad = _record("no-pid", 1, [])
    del bad["pid"]
    (run_dir / "no-pid.json").write_text(json.dumps(bad))
    for attempt in range(2):
        scratch = tmp_path / f"scratch{attempt}.img"
        proc = subprocess.Popen([DISKMODEL, "postmark", *QUICK_RUN, "--scratch", str(scratch)],
                                env=dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert err.count("no-pid.json") == 1 and "field 'pid' is missing" in err, err[-3000:]
        assert sorted(p.name for p in run_dir.glob("*.json")) == ["no-pid.json"]
        assert _loops_over(tmp_path) == [] and not scratch.exists()
    res = _diskmodel(["cleanup"], run_dir)
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert res.stdout.count("no-pid.json") == 1, res.stdout


# ---------------------------------------------------------------- a dead run's loop name, attached by another

@pytest.mark.slow
@pytest.mark.integration
def test_cleanup_says_a_dead_runs_loop_device_was_gone_when_its_name_is_another_attachment_now(tmp_path):
    """A dead run's loop device whose name another attachment holds now (its disk sequence number differs):
    ``cleanup`` leaves that attachment alone and says the dead run's device was already gone, not "removed"
    (which read as if it had detached another run's device)."""
    require_root()
    require_tools("losetup")
    image = tmp_path / "other.img"
    image.write_bytes(bytes(1 << 20))
    device = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        seq = int(Path(f"/sys/block/{os.path.basename(device)}/diskseq").read_text())
        run_dir = tmp_path / "run"
        run_dir.mkdir(mode=0o700)
        gone = tmp_path / "dead-run" / "nbd"
        state = _record("dead-loop", _dead_pid(), [{"id": 0, "kind": "loop", "state": "created", "details": {
            "device": device, "backing": str(gone), "offset_bytes": 0, "diskseq": seq - 1}}])
        (run_dir / "dead-loop.json").write_text(json.dumps(state))
        res = _diskmodel(["cleanup"], run_dir)
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"  loop device {device} over {gone} at offset 0 bytes: already gone" in res.stdout.splitlines(), \
            res.stdout
        assert "removed loop device" not in res.stdout, res.stdout
        assert str(image) in subprocess.run(["losetup", "--list", "--noheadings", "-O", "BACK-FILE", device],
                                            capture_output=True, text=True).stdout
        assert list(run_dir.glob("*.json")) == []
    finally:
        subprocess.run(["losetup", "-d", device], capture_output=True)


# ---------------------------------------------------------------- a live run's scratch at a dead run's path

_RUN_ON_SCRATCH = """
import sys, time
from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.harness.locks import lock_target
from diskmodel.calibrate.harness.scratch import prepare_scratch
path, size = sys.argv[1], int(sys.argv[2])
with lock_target(path, purpose="test scratch"), runstate.ensure_run("test"), prepare_scratch(path, size):
    print("ready", flush=True)
    time.sleep(120)
"""


def _start_run_on(path: Path, size_bytes: int, run_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _RUN_ON_SCRATCH, str(path), str(size_bytes)],
                            env=dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir)), stdout=subprocess.PIPE,
                            text=True)


@pytest.mark.integration
@pytest.mark.slow
def test_cleanup_never_removes_a_live_runs_scratch_at_a_dead_runs_path(tmp_path):
    run_dir, scratch = tmp_path / "run", tmp_path / "scratch.img"
    # The first run is killed while it fills its scratch; the user removes the scratch by hand.
    first = _start_run_on(scratch, 1 << 30, run_dir)
    try:
        wait_for(lambda: scratch.exists() and scratch.stat().st_size > 0, 60, "the first run's fill")
        first.kill()
        first.wait()
    finally:
        _stop(first)
    (dead_record,) = run_dir.glob("*.json")
    scratch.unlink()
    # A second run makes its scratch at the same path and is running.
    second = _start_run_on(scratch, 1 << 20, run_dir)
    try:
        assert second.stdout.readline().strip() == "ready"
        live = scratch.stat()
        data = scratch.read_bytes()
        # The new file got the dead run's inode number (the file system chose so in the probe;
        # here the record is given the new inode, as reuse would have made it).
        state = json.loads(dead_record.read_text())
        (file_res,) = [r for r in state["resources"] if r["kind"] == "file"]
        file_res["details"].update(ino=live.st_ino, dev=f"{os.major(live.st_dev)}:{os.minor(live.st_dev)}")
        dead_record.write_text(json.dumps(state))

        res = _diskmodel(["cleanup"], run_dir)
        assert res.returncode != 0, res.stdout + res.stderr   # the dead run's record stays: its path is busy
        assert f"pid {second.pid}" in res.stdout, res.stdout
        assert scratch.stat().st_ino == live.st_ino and scratch.read_bytes() == data
        assert second.poll() is None
    finally:
        _stop(second)
    # With the second run gone too (killed), its lock is free: what tells the two files apart is the tag.
    dry = _diskmodel(["cleanup", "--dry-run"], run_dir)
    lines = dry.stdout.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith(f"run {dead_record.stem} "))
    assert lines[header + 1] == f"  scratch file {scratch}: already gone", dry.stdout
    assert _diskmodel(["cleanup"], run_dir).returncode == 0
    assert not scratch.exists() and list(run_dir.glob("*.json")) == []


# ---------------------------------------------------------------- locks that hold across run folders

_HOLD = ("import sys, time; from diskmodel.calibrate.harness.locks import lock_target\n"
         "with lock_target(sys.argv[1], purpose='test'):\n"
         "    print('held', flush=True); time.sleep(60)")


def test_a_lock_holds_across_run_folders_and_leaves_no_lock_file(tmp_path, monkeypatch):
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.locks import TargetLocked, lock_target

    target = tmp_path / "target.img"
    target.write_bytes(b"x")
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(target)], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, DISKMODEL_RUN_DIR=str(tmp_path / "run-a")))
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run-b"))
        with pytest.raises(TargetLocked, match=f"pid {holder.pid}"):
            with lock_target(target, purpose="second"):
                pass
        # A hard link is the same file.
        os.link(target, tmp_path / "link.img")
        with pytest.raises(TargetLocked, match=f"pid {holder.pid}"):
            with lock_target(tmp_path / "link.img", purpose="second"):
                pass
        from diskmodel.calibrate.harness.locks import lock_dir
        held = {p for p in lock_dir().iterdir() if str(target) in p.read_text()}
        assert held   # by path, and by inode
        holder.kill()
        holder.wait()
    finally:
        _stop(holder)
    # The killed holder's lock files remain until the next taker, which removes them on release.
    with lock_target(target, purpose="after the holder died"):
        pass
    assert not any(p.exists() for p in held)
    assert not any(p.suffix == ".lock" for p in tmp_path.rglob("*"))


def test_cleanup_removes_the_lock_files_of_killed_runs(tmp_path, monkeypatch):
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.locks import _lock_keys, lock_dir

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    target = tmp_path / "target.img"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        # this target's lock files only: the folder is the user's, and a test beside this one may hold
        # a lock of its own there meanwhile
        left = {lock_dir() / f"{key}.lock" for key in _lock_keys(target)}
        assert all(p.exists() for p in left)
        holder.kill()
        holder.wait()
    finally:
        _stop(holder)
    legacy = runstate.run_root() / "locks"     # where earlier versions kept one lock file per target
    legacy.mkdir()
    (legacy / "path-0123.lock").write_text("")
    assert runstate.cleanup(say=lambda _: None)
    assert not any(p.exists() for p in left)
    assert not legacy.exists()


@pytest.mark.integration
@pytest.mark.slow
def test_two_runs_on_one_scratch_with_their_own_run_folders_exactly_one_runs(tmp_path):
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount", "findmnt")
    run_a, run_b, mark, scratch = tmp_path / "run-a", tmp_path / "run-b", tmp_path / "mark", tmp_path / "s.img"
    wrap = _wrapper_dir(tmp_path, "losetup", "--find")
    first = subprocess.Popen([DISKMODEL, "postmark", *SMALL_RUN, "--scratch", str(scratch)],
                             env=dict(os.environ, DISKMODEL_RUN_DIR=str(run_a), PATH=f"{wrap}:{os.environ['PATH']}",
                                      DISKMODEL_TEST_MARK=str(mark)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(mark.exists, 60, "the first run to attach its loop device")
        loops_before = _loops_over(tmp_path)
        second = _diskmodel(["postmark", *SMALL_RUN, "--scratch", str(scratch), "--destroy-data-on", str(scratch)],
                            run_b, timeout=120)
        assert second.returncode != 0
        assert_one_error_line(second.stderr, f"pid {first.pid}")
        assert _loops_over(tmp_path) == loops_before
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    finally:
        _stop(first)
    _assert_nothing_left(tmp_path, run_a, first.pid, scratch)
    assert list(run_b.glob("*.json")) == []


# ---------------------------------------------------------------- a state file that cannot be written

def test_the_teardown_goes_on_when_the_state_file_cannot_be_written(tmp_path, monkeypatch):
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.scratch import prepare_scratch

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    real_replace = runstate.replace_file_atomically
    full = {"now": False}

    def replace(path, data):
        if full["now"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"{path}.tmp")
        real_replace(path, data)

    monkeypatch.setattr(runstate, "replace_file_atomically", replace)
    scratch = tmp_path / "scratch.img"
    with pytest.raises((OSError, RuntimeError)) as caught:
        with runstate.ensure_run("test") as run:
            work = run.temp_dir("t-")
            space = prepare_scratch(scratch, 1 << 20)
            state_file = run.path
            full["now"] = True
            try:
                run.intend("dir", path=str(work / "more"))   # fails: the run folder is full
            finally:
                space.close()
    message = str(caught.value)
    assert not scratch.exists() and not work.exists() and not run.work_dir().exists()
    assert str(state_file) in message and "No space left on device" in message, message
    assert "\n" not in message


@pytest.mark.integration
@pytest.mark.slow
def test_a_teardown_that_leaves_something_with_no_state_written_names_it_and_cleanup(tmp_path, monkeypatch):
    require_root()
    from diskmodel.calibrate.harness import resources, runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    # the folder with a mount below it is retried this long before the teardown names it, not 10 s
    monkeypatch.setattr(resources, "UNDO_RETRY_S", 0.3)
    real_replace = runstate.replace_file_atomically
    full = {"now": False}

    def replace(path, data):
        if full["now"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"{path}.tmp")
        real_replace(path, data)

    monkeypatch.setattr(runstate, "replace_file_atomically", replace)
    mnt = None
    try:
        with pytest.raises(RuntimeError) as caught:
            with runstate.ensure_run("test") as run:
                # Mounted by hand, unrecorded: the run's folder cannot be removed while it is there.
                mnt = run.temp_dir("m-")
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(mnt)], check=True)
                full["now"] = True
                run.intend("dir", path=str(mnt / "more"))
        message = str(caught.value)
        assert "No space left on device" in message and f"folder {run.work_dir()}" in message, message
        assert "still mounted below it" in message and "diskmodel cleanup" in message, message
    finally:
        if mnt is not None:
            subprocess.run(["umount", str(mnt)], check=False)
        shutil.rmtree(tmp_path / "run", ignore_errors=True)
        if mnt is not None:
            shutil.rmtree(mnt.parent, ignore_errors=True)


@pytest.mark.integration
@pytest.mark.slow
def test_a_run_whose_run_folder_fills_up_tears_everything_down(tmp_path):
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount", "findmnt")
    run_dir, mark, go, scratch = tmp_path / "run", tmp_path / "mark", tmp_path / "go", tmp_path / "scratch.img"
    run_dir.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(run_dir)], check=True)
    try:
        # losetup runs, then waits until the run folder is full.
        wrap = tmp_path / "wrap"
        wrap.mkdir()
        (wrap / "losetup").write_text(f"""#!/bin/sh
{shutil.which("losetup")} "$@"
rc=$?
case " $* " in
  *" --find "*) touch "{mark}"; while [ ! -e "{go}" ]; do sleep 0.05; done ;;
esac
exit $rc
""")
        (wrap / "losetup").chmod(0o755)
        proc = subprocess.Popen([DISKMODEL, "postmark", *QUICK_RUN, "--scratch", str(scratch)],
                                env=dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir),
                                         PATH=f"{wrap}:{os.environ['PATH']}"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(mark.exists, 120, "losetup to attach the loop device")
            fd = os.open(run_dir / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                with pytest.raises(OSError) as full:
                    while True:
                        os.write(fd, b"\0" * 4096)
            finally:
                os.close(fd)
            assert full.value.errno == errno.ENOSPC
            go.touch()
            _, err = proc.communicate(timeout=120)
        finally:
            _stop(proc)
        assert proc.returncode == 1, err[-3000:]
        line = assert_one_error_line(err, "No space left on device")
        assert str(run_dir) in line and "torn down and checked gone" in line, line
        (run_dir / "filler").unlink()
        _assert_nothing_left(tmp_path, run_dir, proc.pid, scratch)
    finally:
        # Whatever a failed check left is removed while its record is still there.
        (run_dir / "filler").unlink(missing_ok=True)
        _diskmodel(["cleanup"], run_dir)
        subprocess.run(["umount", str(run_dir)], check=False)


# ---------------------------------------------------------------- a loop device whose backing file's mount went away

@pytest.mark.integration
@pytest.mark.slow
def test_a_loop_device_is_detached_after_its_backing_files_mount_is_lazily_detached(tmp_path, monkeypatch):
    """An emulated drive's loop device is backed by nbdfuse's file; when nbdfuse exits first (a SIGINT to the
    whole process group reaches it too), libfuse detaches its mount lazily and the kernel then shows the loop's
    backing file from that mount's root (``/nbd``). The run's record found its loop device by the backing
    path, so teardown took the device for gone and left it attached. Here a tmpfs stands for the FUSE mount:
    the device must be detached all the same, and found by the attachment it had at creation."""
    require_root()
    require_tools("losetup", "mount", "umount")
    from diskmodel.calibrate.harness import devstate, runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    where = tmp_path / "fs"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], check=True)
    device = None
    try:
        with open(where / "img", "wb") as fh:
            fh.truncate(8 << 20)
        with runstate.ensure_run("test") as run:
            res = run.intend("loop", backing=os.path.realpath(where / "img"), offset_bytes=0)
            device = subprocess.run(["losetup", "--find", "--show", str(where / "img")], check=True,
                                    capture_output=True, text=True).stdout.strip()
            run.created(res, device=device)
            subprocess.run(["umount", "-l", str(where)], check=True)
            assert devstate.loop_device(device)["back-file"] == "/img"   # what the kernel shows now
        attached = Path("/sys/block", os.path.basename(device), "loop")   # there while the device is bound
        assert not attached.is_dir(), f"{device} was left attached"
    finally:
        if device and Path("/sys/block", os.path.basename(device), "loop").is_dir():
            subprocess.run(["losetup", "-d", device])
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


# A child that starts a grandchild in a session of its own (as fio starts each job: setsid(2) in backend.c's
# thread_main), writes the grandchild's pid to argv[1] and exits; the grandchild sleeps.
_ESCAPER = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    open(sys.argv[1], 'w').write(str(os.getpid()))\n"
            "    time.sleep(60)\n"
            "    os._exit(0)\n")


def test_a_process_that_left_its_recorded_group_is_killed_by_the_teardown(tmp_path, monkeypatch):
    """Killing a recorded child's process group misses what it started in a session of its own (fio's job
    processes: a bench run's SIGINT left one waiting forever on its killed parent): the run's end kills
    every process that carries the run's ID and is in no recorded group."""
    from diskmodel.calibrate.bench.process import reaped, spawn
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.resources import process_alive

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    pidfile = tmp_path / "grandchild.pid"
    grandchild = None
    try:
        with runstate.ensure_run("test"):
            child = spawn([sys.executable, "-c", _ESCAPER, str(pidfile)], name="escaper")
            child.wait()
            reaped(child)
            wait_for(lambda: pidfile.exists() and pidfile.read_text(), 10, "the grandchild to start")
            grandchild = int(pidfile.read_text())
            assert process_alive(grandchild, None)
        wait_for(lambda: not process_alive(grandchild, None), 5, "the grandchild to be killed")
    finally:
        if grandchild is not None and process_alive(grandchild, None):
            os.kill(grandchild, signal.SIGKILL)
