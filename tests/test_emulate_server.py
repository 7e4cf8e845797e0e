"""Emulated drives (diskmodel.calibrate.emulate) without a device: the timing sessions, the server and the
request log (tests/test_emulate.py has bad input and, as root with nbdkit and nbdfuse, the real devices)."""
from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from _helpers import assert_one_error_line

from diskmodel.calibrate.emulate import flat_drive, read_log, summarize
from diskmodel.calibrate.emulate.requestlog import RequestRecorder
from diskmodel.calibrate.emulate.server import DriveServer
from diskmodel.calibrate.emulate.timing import FlatLatencySession
from test_emulate import diskmodel

pytestmark = pytest.mark.serial  # the emulated drive serves at its simulated times (asserted), under real-time scheduling

MiB = 1 << 20


# ---------------------------------------------------------------------------
# Sessions, server, log (no devices)
# ---------------------------------------------------------------------------

def test_flat_session_serves_in_arrival_order_with_its_latency():
    s = FlatLatencySession([0.005], total_blocks=1000, per_byte_s=1e-9, sample_bytes=4096)
    a = s.serve(False, 0, 8, 0.0)  # 4096 bytes: the sample alone
    assert (a.start_s, a.completion_s) == (0.0, 0.005)
    b = s.serve(True, 8, 16, 0.001)  # arrives while the first is served: waits for it, then 4096 extra bytes
    assert b.start_s == 0.005 and b.completion_s == pytest.approx(0.005 + 0.005 + 4096e-9)
    c = s.serve(False, 0, 1, 1.0)  # idle drive: starts at arrival
    assert c.start_s == 1.0 and c.service_s == 0.005
    with pytest.raises(ValueError, match="nondecreasing"):
        s.serve(False, 0, 1, 0.5)
    with pytest.raises(ValueError, match="beyond the drive's last block"):
        s.serve(False, 999, 2, 2.0)
    with pytest.raises(ValueError, match="blocks must be"):
        s.serve(False, 0, 0, 2.0)


@pytest.mark.slow
def test_a_mechanical_drive_is_served_by_the_whole_state_simulation_as_the_batch_simulation_times_it():
    # The emulator's session for a drive with a buffer (read-ahead, cache hits) stepped one request at a
    # time, each arriving at the last completion plus the gap, gives the batch simulation's times to the bit.
    from diskmodel.calibrate.emulate.timing import drive_parameters_of, drive_session
    from diskmodel.model.simulator.simulate import simulate_requests

    params = drive_parameters_of({"kind": "disksim", "folder": "atlas10k"})
    assert params.buffer_segments > 0
    rng = np.random.default_rng(5)
    n = 300
    is_write = rng.random(n) < 0.3
    blocks = rng.integers(1, 64, n)
    # half the reads follow the previous request, so the read-ahead serves some of them
    lbn = rng.integers(0, params.layout.total_blocks - 64 * n, n)
    follow = rng.random(n) < 0.5
    for i in range(1, n):
        if follow[i]:
            lbn[i] = lbn[i - 1] + blocks[i - 1]
    gap = rng.exponential(0.004, n)
    batch = simulate_requests(params, is_write, lbn, blocks, gap)
    session, name = drive_session(params)
    assert name == "DriveSession"
    arrival, service, hits = 0.0, [], []
    for i in range(n):
        served = session.serve(bool(is_write[i]), int(lbn[i]), int(blocks[i]), arrival)
        service.append(served.completion_s - served.arrival_s)
        hits.append(int(served.hit))
        arrival = served.completion_s + gap[i]
    np.testing.assert_array_equal(service, batch.service_s)
    np.testing.assert_array_equal(hits, batch.hit)
    assert (batch.hit != 0).any()  # the buffer was used: some requests hit


def _server(tmp_path, capacity, latency_s, backing=False):
    spec = flat_drive(latency_s, capacity).as_dict()
    path = None
    if backing:
        path = tmp_path / "backing.img"
        with open(path, "wb") as f:
            f.truncate(capacity)
    return DriveServer({**spec, "backing": str(path) if path else None, "log_path": str(tmp_path / "log.reqlog"),
                        "control_path": None})


@pytest.mark.slow
@pytest.mark.parametrize("backing", [False, True], ids=["memory", "sparse-file"])
def test_server_keeps_data_and_completes_at_the_simulated_time(tmp_path, backing):
    capacity = 8 * MiB
    server = _server(tmp_path, capacity, 0.002, backing)
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, 64 * 1024, dtype=np.uint8).tobytes()
    server.write(bytearray(data), 3 * MiB + 512)
    server.zero(4096, 3 * MiB + 512)  # the first 4 KiB become zeros
    took = []
    for _ in range(5):
        buf = bytearray(len(data))
        t = time.monotonic()
        server.read(buf, 3 * MiB + 512)
        took.append(time.monotonic() - t)
        assert bytes(buf) == bytes(4096) + data[4096:]
    server.flush()
    server.close()
    if backing:  # sparse: only the written blocks are allocated
        assert os.stat(tmp_path / "backing.img").st_blocks * 512 < 1 * MiB
    frame = read_log(tmp_path / "log.reqlog")
    assert list(frame["op"]) == [1, 3, 0, 0, 0, 0, 0, 2]
    reads = frame[frame["op"] == 0]
    assert (reads["service_s"] == 0.002).all() and (reads["lateness_s"] >= 0).all()
    # the wall clock of each call: never before the simulated service, late by what the log says
    np.testing.assert_array_less(0.002, np.array(took))
    np.testing.assert_allclose(np.array(took), 0.002 + reads["lateness_s"].to_numpy(), atol=1e-3)
    assert frame.attrs["store"] == ("file" if backing else "memory")


def test_server_takes_the_paths_fixed_and_per_byte_cost_off_each_arrival(tmp_path):
    # Once the caller has written the path's cost (a fixed part and a part per byte), a read is taken to have
    # arrived its way in (half the fixed part) before it reached the server, and the call returns its way back
    # (the other half and the bytes' part) before that arrival plus its service.
    control = tmp_path / "control.json"
    server = DriveServer({**flat_drive(0.01, 8 * MiB).as_dict(), "backing": None,
                          "log_path": str(tmp_path / "l.reqlog"), "control_path": str(control), "probe_delay_s": 0.0})
    server.read(bytearray(4096), 0)  # before the cost is known: a probe, served after probe_delay_s
    fixed, per_byte, size = 2e-3, 5e-8, 65536
    control.write_text(json.dumps({"fixed_cost_s": fixed, "path_per_byte_s": per_byte}))
    cost = fixed + per_byte * size
    way_in = fixed / 2
    t_a = time.monotonic()
    server.read(bytearray(size), 4096)
    t_b = time.monotonic()
    server.close()
    frame = read_log(tmp_path / "l.reqlog")
    assert list(frame["probe"]) == [True, False] and frame.attrs["path_per_byte_s"] == per_byte
    arrival = frame["arrival_s"].iloc[1] + server.t0
    assert t_a - way_in <= arrival <= t_b - way_in
    assert t_b - t_a >= 0.01 - cost  # returned the way back before its arrival plus the flat drive's 10 ms


@pytest.mark.slow
def test_request_log_round_trip_and_emulate_log_command(tmp_path):
    rec = RequestRecorder({"drive": "d", "timing": "t", "fixed_cost_s": 1e-4}, tmp_path / "r.reqlog")
    for i in range(100):
        rec.add(i * 0.01, i % 2, i * 4096, 4096, 0.0, 0.005, -1, (i % 10) * 1e-4, False, 0)
    rec.add(0.0, 0, 0, 4096, 0.0, 0.0, -1, 0.0, True, 0)  # a probe read: left out of the figures
    rec.close()
    frame = read_log(tmp_path / "r.reqlog")
    assert len(frame) == 101 and frame.attrs["drive"] == "d" and frame.attrs["complete"] is True
    s = summarize(frame, lateness_bound_s=5e-4)
    assert s["requests"] == 100 and s["probe_reads"] == 1 and s["by_op"] == {"read": 50, "write": 50}
    lateness = np.array([(i % 10) * 1e-4 for i in range(100)])
    assert s["lateness_p50_s"] == pytest.approx(np.percentile(lateness, 50))
    assert s["lateness_p99_s"] == pytest.approx(np.percentile(lateness, 99))
    assert s["lateness_max_s"] == pytest.approx(9e-4) and s["lateness_within_bound"] is False
    res = diskmodel("emulate-log", tmp_path / "r.reqlog", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["requests"] == 100
    res = diskmodel("emulate-log", tmp_path / "r.reqlog")
    assert res.returncode == 0 and "WARNING: lateness p99" in res.stdout and "100 requests" in res.stdout


@pytest.mark.slow
def test_request_log_is_written_as_it_goes_and_a_kill_leaves_it_readable(tmp_path):
    # The rows reach the file in chunks while the recorder is open; a copy of the file taken at any moment
    # (what a SIGKILL leaves, a last record possibly cut short) reads back as the rows written so far.
    path = tmp_path / "r.reqlog"
    rec = RequestRecorder({"drive": "d"}, path, flush_rows=10)
    rec.update_meta(fixed_cost_s=2e-4)
    for i in range(25):
        rec.add(i * 0.01, 0, i * 4096, 4096, 0.0, 0.005, 0, 1e-5, False, 0)
        if rec.due():
            rec.flush()
    data = path.read_bytes()
    frame = read_log(path)  # 20 rows in two chunks; 5 still waiting in memory
    assert list(frame["offset_bytes"]) == [i * 4096 for i in range(20)]
    assert frame.attrs["fixed_cost_s"] == 2e-4 and frame.attrs["complete"] is False
    for cut in (len(data) - 1, len(data) - 100, len(data) // 2):
        (tmp_path / "cut.reqlog").write_bytes(data[:cut])
        part = read_log(tmp_path / "cut.reqlog")
        assert list(part["offset_bytes"]) == [i * 4096 for i in range(len(part))] and part.attrs["truncated_bytes"] > 0
        assert len(part) in (0, 10, 20)
    rec.close()
    frame = read_log(path)
    assert len(frame) == 25 and frame.attrs["complete"] is True and frame.attrs["truncated_bytes"] == 0
    (tmp_path / "other.npz").write_bytes(b"PK\x03\x04 not a log")
    res = diskmodel("emulate-log", tmp_path / "other.npz")
    assert res.returncode == 2
    assert_one_error_line(res.stderr, "not an emulator request log")
    res = diskmodel("emulate-log", tmp_path)   # the line names FILE, the parameter, not only the path
    assert res.returncode == 2
    assert_one_error_line(res.stderr, "FILE '", "is a directory, where a request log (.reqlog) is expected")
