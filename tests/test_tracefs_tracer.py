"""The kernel's one blk tracer shared by recordings, cleanups and other readers (tracefs route).

A kernel in lockdown refuses blktrace's debugfs files, so ``trace record`` reads the same events
through tracefs's ``blk`` tracer, of which the machine has one. These tests run real recordings
(:class:`~diskmodel.calibrate.trace.ftrace_blk.BlkTracer`) on loop devices in child processes, and
check them against what the kernel's tracefs files read: the tracer is taken by one recording at a
time, a cleanup never ends a live recording, and a refusal by the kernel is one line with
everything put back.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_root, require_tools

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: A recording of three O_DIRECT 64 KiB writes to DEV, holding the tracer HOLD_S more seconds; it prints
#: when the tracer was its own (seconds after it asked) and how many records the trace holds.
RECORDING = """
import mmap, os, sys, time
from pathlib import Path
from diskmodel.calibrate.bench import process
from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.trace import ftrace_blk
from diskmodel.calibrate.trace.record import resolve_devices

dev, hold_s, out = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
try:
    with runstate.ensure_run("tracer test") as run:
        t0 = time.monotonic()
        with ftrace_blk.BlkTracer(run, resolve_devices([dev]), out, process.run) as tracer:
            print(f"started {time.monotonic() - t0:.3f}", flush=True)
            fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, 65536)
            for k in range(3):
                os.pwrite(fd, buf, k * 65536)
            os.close(fd)
            time.sleep(hold_s)
            tracer.stop_and_write("t")
except RuntimeError as exc:
    print(f"refused: {exc}", flush=True)
    sys.exit(3)
print("records", sum(p.stat().st_size for p in out.glob("t.blktrace.*")) // 48, flush=True)
"""

#: Holds the tracer's lock (as a recording would) for argv[1] seconds.
HOLDER = """
import sys, time
from diskmodel.calibrate.harness import locks
from diskmodel.calibrate.trace.ftrace_blk import TRACER_LOCK
with locks.lock_target(TRACER_LOCK, purpose="a test holding the tracer"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def _start(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _device(tmp_path, loops) -> str:
    require_root()
    require_tools("losetup")
    img = tmp_path / "img"
    with open(img, "wb") as fh:
        fh.truncate(8 << 20)
    return loops.attach(img, direct_io=True)


@pytest.fixture
def tracefs(tmp_path):
    """tracefs mounted at a folder of the test's own (the kernel's one tracer, seen through it)."""
    where = tmp_path / "tracefs"
    where.mkdir()
    subprocess.run(["mount", "-t", "tracefs", "tracefs", str(where)], check=True, capture_output=True)
    yield where
    subprocess.run(["umount", str(where)], check=True, capture_output=True)


def _enable(dev: str) -> Path:
    return Path("/sys/class/block", os.path.basename(dev), "trace", "enable")


def test_a_recording_waits_while_another_process_holds_the_tracer(tmp_path, loops):
    """Two recordings side by side both read ``nop`` and both took the tracer; the second's trace_pipe
    was then refused (EBUSY) in its reader thread. Now the tracer's lock is held from the look to the
    restore: a recording asked for while another holds it starts only once it is let go."""
    dev = _device(tmp_path, loops)
    holder = _start(HOLDER, "3")
    assert holder.stdout.readline().strip() == "held"
    out = tmp_path / "rec"
    out.mkdir()
    try:
        rec = _start(RECORDING, dev, "0", str(out))
        stdout, stderr = rec.communicate(timeout=120)
    finally:
        holder.communicate(timeout=30)
    assert rec.returncode == 0, stdout + stderr
    lines = stdout.split("\n")
    waited_s = float(lines[0].split()[1])
    assert 2.0 <= waited_s < 60.0, stdout
    assert int(lines[1].split()[1]) >= 3 * 3, stdout   # each write queued, issued and completed


def test_a_cleanup_leaves_a_live_recordings_tracer_alone(tmp_path, loops, tracefs):
    """A dead run's tracer record, restored by ``diskmodel cleanup`` while another run records on the same
    device, used to switch that device's tracing off (and current_tracer back to nop) under it."""
    from diskmodel.calibrate.trace.ftrace_blk import restore, still_set

    dev = _device(tmp_path, loops)
    out = tmp_path / "rec"
    out.mkdir()
    rec = _start(RECORDING, dev, "14", str(out))
    first = rec.stdout.readline()
    assert first.startswith("started"), first + rec.stderr.read()
    dead_runs_record = {"enable": [str(_enable(dev))],
                        "restore": {"/sys/kernel/tracing/current_tracer": "nop",
                                    "/sys/kernel/tracing/options/bin": "0"},
                        "tracefs": str(tracefs)}
    try:
        t0 = time.monotonic()
        assert still_set(dead_runs_record) is False
        assert restore(dead_runs_record) == ""
        assert time.monotonic() - t0 < 13.0        # decided within the restores' wait, not after the recording
        assert _enable(dev).read_text().strip() == "1"
        assert (tracefs / "current_tracer").read_text().strip() == "blk"
        stdout, stderr = rec.communicate(timeout=120)
        assert rec.returncode == 0, first + stdout + stderr
        assert int(stdout.split()[1]) >= 9, stdout
    finally:
        if rec.poll() is None:   # a failed check above leaves no recording behind
            rec.terminate()   # SIGTERM: its teardown puts the tracer back
            rec.communicate(timeout=60)
    assert _enable(dev).read_text().strip() == "0"
    assert (tracefs / "current_tracer").read_text().strip() == "nop"


def test_a_tracer_the_kernel_refuses_is_one_line_and_every_setting_is_put_back(tmp_path, loops, tracefs):
    """Another reader of trace_pipe makes the kernel refuse a change of tracer (EBUSY): the recording says
    so in one line naming the setting, and puts back what it had changed."""
    dev = _device(tmp_path, loops)
    size_before = (tracefs / "buffer_size_kb").read_text()
    out = tmp_path / "rec"
    out.mkdir()
    reader = os.open(tracefs / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        rec = _start(RECORDING, dev, "0", str(out))
        stdout, stderr = rec.communicate(timeout=120)
    finally:
        os.close(reader)
    assert rec.returncode == 3, stdout + stderr
    assert stdout.strip().count("\n") == 0 and not stderr.strip(), stdout + stderr
    assert "current_tracer = 'blk' refused (Device or resource busy)" in stdout, stdout
    assert (tracefs / "current_tracer").read_text().strip() == "nop"
    assert (tracefs / "buffer_size_kb").read_text() == size_before
    assert _enable(dev).read_text().strip() == "0"
