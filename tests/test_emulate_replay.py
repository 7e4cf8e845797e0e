"""A trace replayed through the kernel on an emulated drive: the excess the replay sees over the simulated time,
split with the server's stamps (diskmodel.calibrate.emulate.replay), and the kernel threads put back on a signal."""
from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from conftest import require_root, skip_or_fail, wait_for
from test_emulate import require_emulation

from diskmodel.calibrate.emulate.replay import (Replayed, excess_parts, locked_memory, median_of_repeats,
                                                without_largest_excess)
from diskmodel.calibrate.emulate.requestlog import COLUMNS, RequestRecorder, read_log, summarize
from diskmodel.calibrate.harness.heap import CollectorWatch

pytestmark = pytest.mark.serial  # kernel threads' real-time scheduling, host-wide; replays held to the simulated times


def test_excess_parts_add_up_to_the_excess_from_independent_stamps():
    """Hand-made stamps: issued at 10.000 s, the server enters 0.3 ms later (its clock started at 9 s), the path's
    cost taken off is 0.5 ms, the simulated wait + service 4 ms, the server returns 0.02 ms late and the
    completion is seen 0.25 ms later: excess = 0.3 + 0.25 - 0.5 + 0.02 = 0.07 ms."""
    t0, issued = 9.0, np.array([10.0, 11.0])
    entry = issued + 0.3e-3 - t0
    arrival = entry - 0.5e-3
    wait, service = np.array([0.0, 1e-3]), np.array([4e-3, 3e-3])
    done = arrival + wait + service + 0.02e-3
    served = pd.DataFrame({"arrival_s": arrival, "wait_s": wait, "service_s": service, "lateness_s": [0.02e-3] * 2,
                           "entry_s": entry, "done_s": done, "size_bytes": [4096, 4096]})
    served.attrs["t0_monotonic_s"] = t0
    parts = excess_parts(served, Replayed(issued, done + t0 + 0.25e-3))
    np.testing.assert_allclose(parts["excess"], 0.07e-3, atol=1e-9)
    np.testing.assert_allclose(parts["path_in"], 0.3e-3, atol=1e-9)
    np.testing.assert_allclose(parts["path_out"], 0.25e-3, atol=1e-9)
    np.testing.assert_allclose(parts["cost_taken_off"], 0.5e-3, atol=1e-9)


def test_each_requests_median_over_the_replays():
    """Three replays of four requests, a stall in a different request of each: every request's median is its
    unstalled time; two replays give the mean of the two; a ragged or empty input is refused."""
    clean = np.array([5e-3, 6e-3, 7e-3, 8e-3])
    took = np.vstack([clean, clean, clean])
    took[0, 1] += 40e-3
    took[1, 2] += 30e-3
    took[2, 3] += 20e-3
    np.testing.assert_array_equal(median_of_repeats(took), clean)
    np.testing.assert_allclose(median_of_repeats(took[:2]), clean + [0, 20e-3, 15e-3, 0], rtol=1e-12)
    np.testing.assert_array_equal(median_of_repeats([clean]), clean)
    for bad in ([], [[1.0, 2.0], [1.0]], [[np.nan]]):
        with pytest.raises(ValueError, match="took_by_repeat"):
            median_of_repeats(bad)


def test_the_largest_excesses_are_given_their_simulated_time():
    """Ten requests, excesses 0..9 ms: the top 20 % (the two largest) take their simulated time, the others
    keep theirs; a fraction too small for one request still takes out the largest."""
    simulated = np.full(10, 4e-3)
    took = simulated + np.arange(10) * 1e-3
    out = without_largest_excess(took, simulated, 0.2)
    np.testing.assert_array_equal(out, np.r_[took[:8], simulated[8:]])
    np.testing.assert_array_equal(without_largest_excess(took, simulated, 1e-3), np.r_[took[:9], simulated[9:]])
    with pytest.raises(ValueError, match="fraction"):
        without_largest_excess(took, simulated, 0.0)


def _locked_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmLck:"))


def test_the_replays_memory_is_locked_inside_and_unlocked_after():
    """mlockall inside (the process's pages counted in VmLck, proc(5)), munlockall after; not asked, nothing.
    A system call, no tool: root only for its lock limit (RLIMIT_MEMLOCK does not bind it)."""
    if os.geteuid() != 0:
        skip_or_fail("needs root (the process's pages exceed an unprivileged RLIMIT_MEMLOCK)")
    with locked_memory(False) as locked:
        assert not locked and _locked_kb() == 0
    with locked_memory() as locked:
        assert locked and _locked_kb() > 1000
    assert _locked_kb() == 0


def test_a_log_without_the_server_stamps_reads_them_as_nan(tmp_path):
    """A log of the format's first ten columns (written before the stamps were logged) still reads."""
    path = tmp_path / "old.reqlog"
    recorder = RequestRecorder({"drive": "d"}, path)
    old = np.dtype([(name, recorder.dtype[name]) for name in list(COLUMNS)[:10]])
    rows = np.zeros(3, old)
    rows["size_bytes"] = 4096
    recorder.write_rows(rows)
    recorder.close()
    frame = read_log(path)
    assert len(frame) == 3 and list(frame["size_bytes"]) == [4096] * 3
    assert frame["entry_s"].isna().all() and frame["done_s"].isna().all()


@pytest.mark.integration
@pytest.mark.slow
# soak: beside the full suite it failed in both lone-clone runs of 2026-12-05 (median excess 0.29 ms, its 10th-90th
# percentiles 0.02-3.0 ms; then 0.23 ms, 0.17-0.34 ms: every request late by a like amount), and passed alone and
# beside CPU loops, a file written and synced in a loop, and a second emulated drive calibrating at SCHED_FIFO 30;
# cause not found. The short replay that CI keeps: tests/test_emulate.py::test_short_trace_replay_takes_the_simulated_times
@pytest.mark.soak
def test_a_short_disksim_trace_replay_sees_the_simulated_times_within_the_paths_noise(tmp_path):
    """hp_c2490a's first requests replayed (O_DIRECT, queue depth 1, the trace's gaps) with the path's kernel
    threads and the replay under SCHED_FIFO: the server's and the replay's stamps share the host's clock (every
    request enters the server after it was issued and completes after the server returned it); each request's
    excess is its parts' sum; no collection of the cyclic collector runs in the replay's loop (even with a
    threshold of one object), and the server's process froze its set-up's objects out of its own; the median excess is within 0.15 ms of zero (the path's cost is taken off: without
    it the median would be the whole round trip) and nine in ten within 1.5 ms."""
    from diskmodel.calibrate.emulate import emulated_drives
    from diskmodel.calibrate.emulate.kthreads import kernel_threads_realtime
    from diskmodel.calibrate.emulate.replay import replay_trace_stamped
    from diskmodel.data.disksim import disksim_drive_folder, read_drive_folder

    require_emulation()
    trace = read_drive_folder(disksim_drive_folder("hp_c2490a")).read_trace().head(150)
    with kernel_threads_realtime(40), \
            emulated_drives([str(disksim_drive_folder("hp_c2490a"))], log_dir=tmp_path, realtime_priority=40) as devs:
        # a collection after every allocation of a tracked object, were the collector on during the replay
        threshold = gc.get_threshold()
        gc.set_threshold(1)
        watch = CollectorWatch()
        try:
            stamps = replay_trace_stamped(devs[0].path, trace, realtime_priority=40)
        finally:
            watch.close()
            gc.set_threshold(*threshold)
    during = [t for t in watch.started_s if stamps.issued_s[0] <= t <= stamps.completed_s[-1]]
    assert watch.collections[0] > 0 and not during, (watch.summary(), during[:3])
    frame = read_log(devs[0].log_path)
    # the server's process froze its set-up's objects out of its collections, and counted those that ran
    collector = summarize(frame)["collector"]
    assert collector["frozen_objects"] > 10_000, collector
    assert sum(collector["collections_by_generation"]) >= 0 and collector["longest_s"] < 5e-3, collector
    served = frame[~frame["probe"]]
    assert list(served["offset_bytes"]) == list(trace.lbn * 512)
    served.attrs.update(frame.attrs)
    parts = excess_parts(served, stamps)
    assert (parts["path_in"] > 0).all() and (parts["path_out"] > 0).all(), parts
    np.testing.assert_allclose(parts["excess"], parts["path_in"] + parts["path_out"] - parts["cost_taken_off"]
                               + parts["lateness"], atol=1e-6)
    assert np.median(parts["cost_taken_off"]) > 50e-6  # the probe found a round trip to take off
    excess = parts["excess"]
    assert abs(np.median(excess)) < 0.15e-3, (np.percentile(excess, [10, 50, 90]),
                                              {k: float(np.median(parts[k])) for k in ("path_in", "path_out",
                                                                                      "cost_taken_off", "lateness")})
    assert np.percentile(excess, 90) < 1.5e-3, np.percentile(excess, [10, 50, 90])


_HOLD = """
import sys, time
from diskmodel.calibrate.emulate.kthreads import kernel_threads_realtime
with kernel_threads_realtime(9, ("ksoftirqd/",)):
    print("inside", flush=True)
    time.sleep(60)
"""


@pytest.mark.slow  # changes the kernel's threads' policy for a moment (root)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_puts_the_kernel_threads_back(sig):
    from diskmodel.calibrate.emulate.kthreads import _kernel_threads

    require_root()
    softirq = _kernel_threads(("ksoftirqd/",))
    before = {pid: (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority) for pid in softirq}
    if all(policy == os.SCHED_FIFO for policy, _ in before.values()):
        pytest.skip("every softirq thread runs real-time already (another run's): nothing would change")
    proc = subprocess.Popen([sys.executable, "-c", _HOLD], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "inside"
        assert all(os.sched_getparam(pid).sched_priority == 9 for pid, (policy, _) in before.items()
                   if policy != os.SCHED_FIFO)
        proc.send_signal(sig)
        wait_for(lambda: proc.poll() is not None, 20, "the process to end")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    after = {pid: (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority) for pid in softirq}
    assert after == before
    assert proc.returncode != 0  # interrupted, not finished


def test_the_path_cost_is_read_between_the_probed_sizes_and_on_the_last_line_beyond():
    from diskmodel.calibrate.emulate.server import path_cost_s, path_cost_table

    table = path_cost_table({"fixed_cost_s": 0.4e-3, "path_cost_by_size": [[65536, 0.7e-3], [4096, 0.5e-3],
                                                                           [16384, 0.6e-3]]})
    assert [n for n, _ in table] == [4096, 16384, 65536]
    assert path_cost_s(table, 4096) == pytest.approx(0.5e-3)
    assert path_cost_s(table, 10240) == pytest.approx(0.55e-3)      # halfway from 4 to 16 KiB
    assert path_cost_s(table, 40960) == pytest.approx(0.65e-3)      # halfway from 16 to 64 KiB
    assert path_cost_s(table, 114688) == pytest.approx(0.8e-3)      # 48 KiB past the largest: its line's slope
    assert path_cost_s(table, 0) == pytest.approx(0.5e-3 - 4096 * 0.1e-3 / 12288)
    line = path_cost_table({"fixed_cost_s": 0.3e-3, "path_per_byte_s": 1e-9})
    assert path_cost_s(line, 8192) == pytest.approx(0.3e-3 + 8192e-9)
    with pytest.raises(ValueError, match="path_cost_by_size"):
        path_cost_table({"fixed_cost_s": 0.0, "path_cost_by_size": [[4096, 1e-4]]})


def test_the_server_takes_each_sizes_path_cost_off_its_arrival(tmp_path):
    import json

    from diskmodel.calibrate.emulate import flat_drive
    from diskmodel.calibrate.emulate.server import DriveServer

    spec = {**flat_drive(1e-3, 1 << 20).as_dict(), "backing": None}
    control = tmp_path / "control.json"
    control.write_text(json.dumps({"fixed_cost_s": 0.2e-3, "path_cost_by_size": [[4096, 0.3e-3], [65536, 0.6e-3]]}))
    server = DriveServer({**spec, "log_path": str(tmp_path / "l.reqlog"), "control_path": str(control)})
    time.sleep(0.01)  # an arrival is never before the server started
    server.read(bytearray(4096), 0)
    server.read(bytearray(34816), 8192)
    server.close()
    frame = read_log(tmp_path / "l.reqlog")
    # a read's way in is half the cost of no bytes (0.28 ms, on the line through 4 and 64 KiB), its way back
    # the rest: the round trip taken off is each size's cost
    way_in = frame["entry_s"] - frame["arrival_s"]
    np.testing.assert_allclose(way_in, [0.14e-3, 0.14e-3], atol=1e-12)
    way_back = frame["arrival_s"] + frame["wait_s"] + frame["service_s"] - (frame["done_s"] - frame["lateness_s"])
    np.testing.assert_allclose(way_in + way_back, [0.3e-3, 0.45e-3], atol=1e-9)
    assert frame.attrs["path_cost_by_size"] == [[4096, 0.3e-3], [65536, 0.6e-3]]


def test_path_legs_put_the_bytes_on_the_leg_that_carries_them():
    from diskmodel.calibrate.emulate.server import (OP_FLUSH, OP_READ, OP_WRITE, path_cost_table, path_in_table,
                                                    path_legs_s)

    table = path_cost_table({"fixed_cost_s": 0.4e-3, "path_per_byte_s": 1e-8})
    # the way in not measured: the bare cost split in half, the bytes on the leg that carries them
    assert path_legs_s(table, OP_READ, 65536) == pytest.approx((0.2e-3, 0.2e-3 + 65536e-8))
    assert path_legs_s(table, OP_WRITE, 65536) == pytest.approx((0.2e-3 + 65536e-8, 0.2e-3))
    assert path_legs_s(table, OP_FLUSH, 0) == pytest.approx((0.2e-3, 0.2e-3))
    # measured on reads: 0.1 ms in for no bytes, and a quarter of the bytes' cost on the way in too
    way_in = path_in_table({"path_in_by_size": [[0, 0.1e-3], [65536, 0.1e-3 + 65536e-8 / 4]]})
    assert path_legs_s(table, OP_READ, 65536, way_in) == pytest.approx((0.1e-3 + 65536e-8 / 4, 0.3e-3 + 0.75 * 65536e-8))
    # a write swaps the bytes' parts: three quarters in, one quarter back
    assert path_legs_s(table, OP_WRITE, 65536, way_in) == pytest.approx((0.1e-3 + 0.75 * 65536e-8, 0.3e-3 + 65536e-8 / 4))
    assert path_legs_s(table, OP_FLUSH, 0, way_in) == pytest.approx((0.1e-3, 0.3e-3))


def test_a_long_read_after_a_short_one_at_queue_depth_1_is_not_held_for_its_own_way_back(tmp_path):
    # A caller at queue depth 1 behind a path whose legs both grow with a read's bytes (as the probe measures
    # them: buffers set up on the way in, the data copied on the way back), slept by the caller as the path
    # would take them, sees each read take the flat drive's 10 ms, and the drive sees each request the
    # caller's own time after the last completed: never queued behind it. Taking the whole round trip off the
    # arrival had the 64 KiB reads arrive before the 512-byte reads before them had completed, held in the
    # drive's queue for the difference of their ways back; taking the bytes' part off the way back alone
    # had them arrive late by the difference of their ways in.
    import json

    from diskmodel.calibrate.emulate import flat_drive
    from diskmodel.calibrate.emulate.server import DriveServer

    service = 10e-3
    spec = {**flat_drive(service, 1 << 20).as_dict(), "backing": None}
    control = tmp_path / "control.json"
    long_bytes = 65536

    def way_in(n):
        return 0.3e-3 + 1.0e-3 * n / long_bytes

    def way_back(n):
        return 0.3e-3 + 1.5e-3 * n / long_bytes

    control.write_text(json.dumps({"fixed_cost_s": 0.6e-3, "path_per_byte_s": 2.5e-3 / long_bytes,
                                   "path_in_by_size": [[0, way_in(0)], [long_bytes, way_in(long_bytes)]]}))
    server = DriveServer({**spec, "log_path": str(tmp_path / "l.reqlog"), "control_path": str(control)})
    time.sleep(0.01)
    took = []
    for size in (512, long_bytes) * 6:
        t = time.monotonic()
        time.sleep(way_in(size))
        server.read(bytearray(size), 0)
        time.sleep(way_back(size))
        took.append(time.monotonic() - t)
    server.close()
    frame = read_log(tmp_path / "l.reqlog")
    assert frame.attrs["path_legs"] == "measured"
    assert frame["wait_s"].max() < 0.1e-3, frame["wait_s"].tolist()
    gap = frame["arrival_s"].to_numpy()[1:] - (frame["arrival_s"] + frame["wait_s"] + frame["service_s"]).to_numpy()[:-1]
    assert np.all(gap > -0.1e-3) and np.median(gap) < 0.5e-3, gap  # the caller's own time, a sleep's lateness
    # a sleep may wake late, never early: each read took the drive's 10 ms and at most the sleeps' lateness
    assert min(took) > service - 0.05e-3
    assert np.median(took[1::2]) < service + 1e-3, took


def test_each_probe_reads_way_in_is_its_entry_in_the_servers_log_less_its_issue(tmp_path):
    from diskmodel.calibrate.emulate.path_probe import way_in_by_size

    rec = RequestRecorder({"drive": "d", "timing": "t", "fixed_cost_s": None, "t0_monotonic_s": 100.0},
                          tmp_path / "r.reqlog")
    stamps = []
    for i in range(16):
        size, offset = (512, 65536)[i % 2], 4096 * i
        issued = 100.0 + 0.03 * i
        way_in = (0.2e-3 if size == 512 else 0.5e-3) + (1e-3 if i < 2 else 0.0)  # the first quarter: warm-up
        entry = issued + way_in
        rec.add(entry - 100.0, 0, offset, size, 0.0, 5e-3, -1, 0.0, True, 0, entry - 100.0, entry + 5e-3 - 100.0)
        stamps.append((size, offset, issued, entry + 5.4e-3))
    rec.add(1.0, 0, 0, 512, 0.0, 5e-3, -1, 0.0, True, 0, 1.0, 1.005)  # a read of someone else's (udev's): unmatched
    rec.close()
    assert way_in_by_size(stamps, tmp_path / "r.reqlog") == [[512, pytest.approx(0.2e-3)],
                                                             [65536, pytest.approx(0.5e-3)]]
    with pytest.raises(RuntimeError, match="no entry for the probe read of 512 bytes at 999"):
        way_in_by_size(stamps + [(512, 999, 200.0, 200.1)], tmp_path / "r.reqlog", wait_s=0.0)
