"""Emulated drives (diskmodel.calibrate.emulate, `diskmodel emulate`): bad input, and, as root with nbdkit
and nbdfuse, real devices: data kept through a file system, O_DIRECT reads timed, teardown after SIGINT at random points and after SIGKILL plus cleanup
(tests/test_emulate_server.py has the timing sessions, the server and the request log)."""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import require_root, require_tools, skip_or_fail, wait_for
from _helpers import SHORT_PROBE_READS, assert_one_error_line, short_probe_env

from diskmodel.calibrate.emulate import flat_drive, read_log

pytestmark = pytest.mark.serial  # the emulated drive serves at its simulated times (asserted), under real-time scheduling

MiB = 1 << 20


def diskmodel(*args, env=None, timeout=600, **kw):
    return subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, **kw)


def require_emulation():
    require_root()
    require_tools("nbdkit", "nbdfuse", "fusermount3", "losetup", "mkfs.ext4", "mount", "umount")
    if not os.path.exists("/dev/fuse"):
        skip_or_fail("/dev/fuse is missing (modprobe fuse)")
    proc = subprocess.run(["nbdkit", "--dump-plugin", "python"], capture_output=True)
    if proc.returncode:
        skip_or_fail("nbdkit's Python plugin is missing (Debian package nbdkit-plugin-python)")


# ---------------------------------------------------------------------------
# Bad input: one line each, nothing left behind
# ---------------------------------------------------------------------------

@pytest.fixture
def isolated(tmp_path):
    """An environment whose run state and temporary files are the test's own, to check nothing is left; its
    emulated drives measure their path's cost with :data:`_helpers.SHORT_PROBE_READS` reads."""
    run_dir, tmp = tmp_path / "run", tmp_path / "tmp"
    run_dir.mkdir()
    tmp.mkdir()
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir), TMPDIR=str(tmp))
    # the emulated drives' path cost measured with a few reads: these tests check what a run says and leaves
    return short_probe_env(env, tmp_path / "short-probe"), run_dir, tmp


@pytest.fixture
def short_probe(monkeypatch):
    """Emulated drives started in this process measure their path's cost with a few reads
    (:data:`_helpers.SHORT_PROBE_READS`): for a test of what a drive keeps and runs, not of its timing."""
    from diskmodel.calibrate.emulate import devices

    monkeypatch.setattr(devices, "PROBE_READS", SHORT_PROBE_READS)


def assert_nothing_left(run_dir: Path, tmp: Path) -> None:
    assert not list(run_dir.glob("*.json")), [p.read_text() for p in run_dir.glob("*.json")]
    assert not [p for p in tmp.iterdir()], list(tmp.iterdir())
    tag = str(tmp)
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if tag in line]
    assert not mounts, mounts
    loops = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    assert tag not in loops, loops
    procs = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if tag in cmd and ("nbdkit" in cmd or "nbdfuse" in cmd):
                procs.append(cmd)
    assert not procs, procs


@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", [
    (["no-such-drive"], "DRIVE 'no-such-drive' is not a folder"),
    (["x" * 300], "DRIVE 'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx': File name too long"),
    (["atlas10k", "--for-s", "0"], "--for-s"),
    (["atlas10k", "--for-s", "-1"], "--for-s"),
    (["hp97560", "--realtime-priority", "0"], "--realtime-priority must be a whole number from 1 to 99 (got 0)"),
    (["hp97560", "--no-realtime", "--realtime-priority", "5"], "--no-realtime and --realtime-priority exclude"),
])
def test_bad_drive_or_duration_is_one_line(isolated, args, fragment):
    env, run_dir, tmp = isolated
    res = diskmodel("emulate", *args, env=env)
    assert res.returncode == 2
    assert_one_error_line(res.stderr, fragment)
    assert res.stdout == ""
    assert_nothing_left(run_dir, tmp)


def test_a_drive_name_the_kernel_cannot_look_up_is_refused_naming_the_flag_and_a_short_value():
    """--emulate DRIVE of postmark, bench and experiment: a name whose lookup fails with an error other than
    "no such file" (ENAMETOOLONG) is one line naming the flag, with the value shortened, not the system's
    error echoing the whole value."""
    from diskmodel.calibrate.emulate.workloads import drive_for_flag

    with pytest.raises(ValueError) as err:
        drive_for_flag("x" * 300)
    assert str(err.value) == "--emulate DRIVE 'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx': File name too long"


@pytest.mark.slow
def test_calibration_json_that_does_not_parse_is_one_line(isolated, tmp_path):
    env, run_dir, tmp = isolated
    bad = tmp_path / "cal.json"
    bad.write_text('{"format": "diskmodel.calibration", ')
    res = diskmodel("emulate", bad, env=env)
    assert res.returncode == 2
    assert_one_error_line(res.stderr, str(bad))
    assert_nothing_left(run_dir, tmp)


@pytest.mark.slow
def test_missing_nbdkit_names_its_debian_package(isolated, tmp_path):
    require_root()
    env, run_dir, tmp = isolated
    empty = tmp_path / "bin"
    empty.mkdir()
    res = diskmodel("emulate", "hp97560", env=dict(env, PATH=str(empty)))
    assert res.returncode == 1
    assert_one_error_line(res.stderr, "nbdkit is not installed (Debian package nbdkit)")
    assert_nothing_left(run_dir, tmp)


@pytest.mark.slow
def test_missing_nbdfuse_names_its_debian_package(isolated, tmp_path):
    require_root()
    require_tools("nbdkit")
    env, run_dir, tmp = isolated
    only_nbdkit = tmp_path / "bin"
    only_nbdkit.mkdir()
    (only_nbdkit / "nbdkit").symlink_to(subprocess.run(["which", "nbdkit"], capture_output=True, text=True)
                                        .stdout.strip())
    res = diskmodel("emulate", "hp97560", env=dict(env, PATH=str(only_nbdkit)))
    assert res.returncode == 1
    assert_one_error_line(res.stderr, "nbdfuse is not installed (Debian package libnbd-bin)")
    assert_nothing_left(run_dir, tmp)


@pytest.mark.slow
def test_missing_dev_fuse_names_the_module_and_package(monkeypatch, tmp_path):
    from diskmodel.calibrate.emulate import devices

    require_emulation()
    monkeypatch.setattr(devices, "FUSE_DEVICE", str(tmp_path / "no-fuse"))
    with pytest.raises(RuntimeError, match=r"no-fuse is missing: the kernel's fuse module is not loaded "
                                           r"\(modprobe fuse; Debian package fuse3\)"):
        devices.check_tools()


@pytest.mark.integration
@pytest.mark.slow
def test_backing_file_system_filling_up_under_the_written_data_is_one_line(isolated, tmp_path):
    # The check at start passes (the file system has the reserve free); then another file takes all of it
    # but a few MiB (as another program's data would), and the data written through the drive fill the
    # rest: the writes fail (ENOSPC), the run ends with one line naming the failed requests and the full
    # file system. (Filling the whole reserve through the drive would take minutes at its transfer rate.)
    require_emulation()
    env, run_dir, tmp = isolated
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300m", "diskmodel-test-small", str(small)], check=True)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "diskmodel.calibrate.cli", "emulate", "hp97560", "--json",
                                 "--backing-dir", str(small), "--lateness-bound-s", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        try:
            device = json.loads(proc.stdout.readline())["devices"][0]["path"]
            vfs = os.statvfs(small)
            headroom = 6 * MiB
            filler = os.open(small / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(filler, 0, vfs.f_bavail * vfs.f_frsize - headroom)
            finally:
                os.close(filler)
            chunk = np.random.default_rng(1).integers(0, 256, 4 * MiB, dtype=np.uint8).tobytes()
            buf = mmap.mmap(-1, len(chunk))
            buf.write(chunk)
            fd = os.open(device, os.O_WRONLY | os.O_DIRECT)
            failed = None
            try:
                for i in range(100):  # 400 MiB, far more than the headroom
                    try:
                        os.pwritev(fd, [buf], i * len(chunk))
                    except OSError as exc:
                        failed = exc
                        break
            finally:
                os.close(fd)
            assert failed is not None and failed.errno in (28, 5), failed
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
    finally:
        subprocess.run(["umount", str(small)], check=True)
    assert proc.returncode == 1, err
    assert_one_error_line(err, "request(s) failed (errno [28])")
    assert str(small) in err.strip().splitlines()[-1]
    assert_nothing_left(run_dir, tmp)


@pytest.mark.integration
@pytest.mark.slow
def test_backing_dir_on_a_too_small_file_system_is_one_line(isolated, tmp_path):
    require_root()
    env, run_dir, tmp = isolated
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "diskmodel-test-small", str(small)], check=True)
    try:
        res = diskmodel("emulate", "hp97560", "--backing-dir", small, env=env)
    finally:
        subprocess.run(["umount", str(small)], check=True)
    assert res.returncode == 2
    assert_one_error_line(res.stderr, f"--backing-dir {small}: its file system has")
    assert_nothing_left(run_dir, tmp)


# ---------------------------------------------------------------------------
# Real devices (root, nbdkit, nbdfuse, /dev/fuse)
# ---------------------------------------------------------------------------

def _drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.integration
@pytest.mark.slow
def test_data_written_through_a_file_system_reads_back_after_dropping_caches(tmp_path, short_probe):
    from diskmodel.calibrate.emulate import emulated_drives

    require_emulation()
    said = []
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    rng = np.random.default_rng(7)
    with emulated_drives([flat_drive(50e-6, 256 * MiB, name="flat 50 us")], say=said.append) as devices:
        dev = devices[0].path
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        subprocess.run(["mount", dev, str(mnt)], check=True)
        sums = {}
        for i in range(6):
            f = mnt / f"f{i}"
            f.write_bytes(rng.integers(0, 256, int(rng.integers(1, 9 * MiB)), dtype=np.uint8).tobytes())
            sums[f.name] = _sha256(f)
        _drop_caches()
        assert {f.name: _sha256(f) for f in mnt.iterdir() if f.is_file()} == sums
        subprocess.run(["umount", str(mnt)], check=True)
        _drop_caches()
        subprocess.run(["mount", "-o", "ro", dev, str(mnt)], check=True)
        assert {name: _sha256(mnt / name) for name in sums} == sums
        # left mounted on purpose: the teardown must name the mount and unmount it before the device goes
    assert any(str(mnt) in line and "still mounted" in line for line in said), said
    assert str(mnt) not in Path("/proc/mounts").read_text()
    summary = devices[0].summary
    assert summary["by_op"].get("write", 0) > 0 and summary["by_op"].get("read", 0) > 0
    assert summary["errors"] == 0


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.integration
def test_every_thread_of_the_emulated_path_runs_real_time_by_default(tmp_path, short_probe):
    """nbdkit's and nbdfuse's threads, as the kernel reports their policy, once a request has been served
    (nbdkit starts some threads before the plugin loads and some per connection)."""
    from diskmodel.calibrate.emulate import emulated_drives
    from diskmodel.calibrate.emulate.devices import DEFAULT_REALTIME_PRIORITY

    require_emulation()
    with emulated_drives([flat_drive(1e-4, 32 * MiB)]) as devices:
        fd = os.open(devices[0].path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        try:
            os.preadv(fd, [buf], 0)
        finally:
            os.close(fd)
            buf.close()
        seen = {}
        for name, proc in devices[0]._processes:  # noqa: SLF001 - the processes that serve the device
            for tid in os.listdir(f"/proc/{proc.pid}/task"):
                seen[f"{name} thread {tid}"] = (os.sched_getscheduler(int(tid)),
                                                os.sched_getparam(int(tid)).sched_priority)
    assert len(seen) >= 4
    assert {k: v for k, v in seen.items() if v != (os.SCHED_FIFO, DEFAULT_REALTIME_PRIORITY)} == {}


def test_realtime_that_cannot_be_had_is_one_note_and_the_normal_policy(monkeypatch):
    from diskmodel.calibrate.emulate.devices import realtime_or_note

    def refused(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refused)
    said = []
    assert realtime_or_note(40, said.append) is None
    assert len(said) == 1 and "SCHED_FIFO 40" in said[0] and "Operation not permitted" in said[0]
    assert realtime_or_note(None, said.append) is None and len(said) == 1


@pytest.mark.slow  # serves a drive as a real device (root, nbdkit)
def test_odirect_reads_take_the_flat_models_time(tmp_path):
    from diskmodel.calibrate.emulate import emulated_drives

    require_emulation()
    latency, n, slack = 5e-3, 20, 2e-3
    with emulated_drives([flat_drive(latency, 32 * MiB)], log_dir=tmp_path) as devices:
        fd = os.open(devices[0].path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        took = []
        try:
            for i in range(n):
                t = time.monotonic()
                os.preadv(fd, [buf], (i * 37 + 5) * 4096)
                took.append(time.monotonic() - t)
        finally:
            os.close(fd)
    took = np.array(took)
    frame = read_log(devices[0].log_path)
    served = frame[~frame["probe"]]
    assert len(served) == n and (served["service_s"] == latency).all()
    assert (served["lateness_s"] >= 0).all()
    assert devices[0].summary["lateness_p99_s"] == pytest.approx(np.percentile(served["lateness_s"], 99))
    # the time a reader sees: never shorter than the model's less the fixed cost taken off (the path takes at
    # least that), and the model's within the path's cost not taken off and the host's noise: other processes
    # only add to it, so the test asks that of the lower quartile (a busy shared host delays reads by ms)
    fixed = devices[0].fixed_cost_s
    assert (took > latency - fixed - 0.2e-3).all(), (fixed, took)
    assert np.percentile(took, 25) < latency + slack, (fixed, took)


def _start_emulate(cal: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "diskmodel.calibrate.cli", "emulate", str(cal), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.fixture(scope="module")
def flat_calibration(tmp_path_factory):
    """A calibration JSON of a flat (flash-like) 64 MiB device with a 1 ms latency."""
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.results import calibration_to_json

    from _helpers import FlatBackend as Flat

    path = tmp_path_factory.mktemp("cal") / "flat.json"
    calibration_to_json(calibrate(Flat(), budget_s=5.0, progress=False), path)
    return path


@pytest.mark.integration
@pytest.mark.slow
def test_sigint_at_random_points_leaves_nothing(isolated, flat_calibration):
    require_emulation()
    env, run_dir, tmp = isolated
    rng = random.Random(11)
    for delay in [rng.uniform(0.0, 3.0) for _ in range(4)] + [None]:
        proc = _start_emulate(flat_calibration, env)
        if delay is None:  # once it serves: the normal end, exit status 0 and the run's JSON
            line = proc.stdout.readline()
            assert json.loads(line)["devices"][0]["path"].startswith("/dev/loop"), line
        else:  # a random point of the set-up: from the run's start (its state file) on
            wait_for(lambda: list(run_dir.glob("*.json")) or proc.poll() is not None, 120, "the run to start")
            time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        # 0: stopped while serving; 130: interrupted; -SIGINT: the signal landed as the interpreter exited
        assert proc.returncode in (0, 128 + signal.SIGINT, -signal.SIGINT), (delay, proc.returncode, err)
        if delay is None:
            assert proc.returncode == 0, err
            result = json.loads(out.strip().splitlines()[-1])
            assert "lateness_p99_s" in result["devices"][0]
            # the short probe took (isolated's short_probe_env): the reads before the drive served, the
            # probe's and those of the kernel's look at a new device
            from diskmodel.calibrate.emulate.devices import PROBE_READS

            assert SHORT_PROBE_READS <= result["devices"][0]["probe_reads"] < PROBE_READS, result
        assert "Traceback" not in err, err
        assert_nothing_left(run_dir, tmp)


@pytest.mark.integration
@pytest.mark.slow
def test_sigkill_then_cleanup_leaves_nothing(isolated, flat_calibration):
    require_emulation()
    env, run_dir, tmp = isolated
    proc = _start_emulate(flat_calibration, env)
    line = proc.stdout.readline()
    device = json.loads(line)["devices"][0]["path"]
    proc.kill()
    proc.communicate(timeout=60)
    # left behind: the loop device and the FUSE mount (nbdkit and nbdfuse die with their parent)
    loops = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    assert device in loops and str(tmp) in loops
    assert str(tmp) in Path("/proc/mounts").read_text()
    res = diskmodel("cleanup", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    wait_for(lambda: str(tmp) not in Path("/proc/mounts").read_text(), 10, "the FUSE mount to go")
    assert_nothing_left(run_dir, tmp)


@pytest.mark.integration
@pytest.mark.slow
def test_short_trace_replay_takes_the_simulated_times(tmp_path):
    """A DiskSim-format trace (reads and writes, gaps between one completion and the next arrival) replayed
    with O_DIRECT on an emulated drive: each request takes the simulated time the request log holds."""
    from diskmodel.calibrate.emulate import emulated_drives
    from diskmodel.calibrate.emulate.replay import replay_trace
    from diskmodel.data.disksim import Trace

    require_emulation()
    rng = np.random.default_rng(2)
    n = 40
    trace = Trace(None, rng.random(n) < 0.4, np.array(["Miss"] * n), rng.integers(0, 60000, n) * 8,
                  rng.integers(1, 17, n) * 8, np.full(n, 3e-3), rng.uniform(0, 2e-3, n), np.arange(1, n + 1))
    with emulated_drives([flat_drive([2e-3, 4e-3], 256 * MiB, per_byte_s=1e-8)], log_dir=tmp_path) as devices:
        took = replay_trace(devices[0].path, trace)
    frame = read_log(devices[0].log_path)
    served = frame[~frame["probe"]]
    assert len(served) == n
    assert list(served["offset_bytes"]) == list(trace.lbn * 512)
    assert list(served["op"]) == [1 if w else 0 for w in trace.is_write]
    simulated = served["service_s"].to_numpy()
    assert set(np.round(simulated - (trace.blocks * 512 - 512) * 1e-8, 9)) <= {2e-3, 4e-3}
    # what the replay saw: the simulated time less at most the fixed cost taken off, and within the path's
    # cost not taken off and the host's noise for a quarter of the requests at least (see the O_DIRECT test)
    fixed = devices[0].fixed_cost_s
    np.testing.assert_array_less(simulated - fixed - 0.2e-3, took)
    assert np.percentile(took - simulated, 25) < 2e-3, (fixed, took - simulated)


@pytest.mark.integration
@pytest.mark.slow
def test_a_server_that_dies_ends_the_run_in_one_line_and_leaves_nothing(isolated, flat_calibration):
    require_emulation()
    env, run_dir, tmp = isolated
    proc = _start_emulate(flat_calibration, env)
    json.loads(proc.stdout.readline())
    state = json.loads(next(run_dir.glob("*.json")).read_text())
    nbdkit = next(r["details"]["pid"] for r in state["resources"]
                  if r["kind"] == "process" and r["details"]["name"] == "nbdkit")
    os.kill(nbdkit, signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert_one_error_line(err, "nbdkit serving calibration flat.json")
    assert_nothing_left(run_dir, tmp)


@pytest.mark.integration
@pytest.mark.slow
def test_sigkill_with_a_file_system_mounted_then_cleanup_unmounts_it_and_the_log_holds_the_requests(
        isolated, flat_calibration, tmp_path):
    from diskmodel.calibrate.emulate.requestlog import FLUSH_S

    require_emulation()
    env, run_dir, tmp = isolated
    logs, mnt = tmp_path / "logs", tmp_path / "mnt"
    logs.mkdir()
    mnt.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "diskmodel.calibrate.cli", "emulate", str(flat_calibration),
                             "--json", "--log-dir", str(logs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        device = json.loads(proc.stdout.readline())["devices"][0]["path"]
        subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True, capture_output=True)
        subprocess.run(["mount", device, str(mnt)], check=True)
        (mnt / "f").write_bytes(b"x" * 100000)
        os.sync()
        offsets = [(i * 517 + 3) * 4096 for i in range(30)]  # within its 64 MiB
        fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        try:
            for offset in offsets:
                os.preadv(fd, [buf], offset)
        finally:
            os.close(fd)
        time.sleep(4 * FLUSH_S)  # the drive idle: the rows still waiting are written
        proc.kill()
        proc.communicate(timeout=60)
        frame = read_log(next(logs.glob("*.reqlog")))  # nbdkit may have closed it on its way out, or not
        reads = frame[(frame["op"] == 0) & ~frame["probe"]]
        assert list(reads["offset_bytes"])[-len(offsets):] == offsets
        assert (frame["op"] == 1).sum() > 0  # mkfs's and the file's writes
        res = diskmodel("cleanup", env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"on {mnt}" in res.stdout and "unmounted first" in res.stdout, res.stdout
        assert str(mnt) not in Path("/proc/mounts").read_text()
        assert_nothing_left(run_dir, tmp)
    finally:
        if proc.poll() is None:
            proc.kill()
        if str(mnt) in Path("/proc/mounts").read_text():
            subprocess.run(["umount", "-l", str(mnt)])
        diskmodel("cleanup", env=env)  # after a failed assertion: the device, its FUSE mount and processes


@pytest.mark.slow
@pytest.mark.integration
def test_a_device_left_open_at_teardown_names_who_holds_it_and_cleanup_ends_it_once_closed(tmp_path):
    """A descriptor still open on the emulated device when the block ends (an error's traceback holding a
    backend, as in a notebook) keeps the loop device: the teardown names the process holding it, ends nbdfuse
    rather than waiting for it (it waited 20 s in vain, and nbdkit 20 s more), and once that process has
    gone, `diskmodel cleanup` removes what was left."""
    require_emulation()
    script = textwrap.dedent(f"""
        import os
        from diskmodel.calibrate.emulate import emulated_drives
        from diskmodel.calibrate.emulate.drives import flat_drive
        from diskmodel.calibrate.harness import resources
        resources.UNDO_RETRY_S = 1.0  # what is tested is the report, not the teardown's patience
        held = []
        try:
            with emulated_drives([flat_drive(1e-4, {32 * MiB})]) as devices:
                held.append(os.open(devices[0].path, os.O_RDONLY))
                raise ValueError("the user's error")
        except Exception as exc:  # the teardown's report, raised from the user's error
            print(os.getpid(), exc, "|", exc.__cause__)
    """)
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env=short_probe_env(dict(os.environ), tmp_path / "site"))
    assert ran.returncode == 0, ran.stderr
    pid, said = ran.stdout.split(" ", 1)
    assert "the user's error" in said and f"is open in process {pid} (python" in said, said
    run_folder = Path(re.search(r"over (\S+/diskmodel-run-[^/\s]+)/", said).group(1))
    done = subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", "cleanup"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert str(run_folder) not in Path("/proc/mounts").read_text()
    assert not run_folder.exists()
