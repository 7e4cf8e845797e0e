"""Calibration recovers drives it was not built with (issue #10): the reference family.

Each reference drive (diskmodel.calibrate.harness.reference: its own simulator, written
independently of diskmodel.model) is calibrated once within 120 s of device time; the
figures must meet the issue's targets against the drive's truth. A calibrated Disk replays
a random trace like the drive; writes happen only with --destroy-data-on naming the target."""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from diskmodel.calibrate import cli
from diskmodel.calibrate.harness.measure import calibrate
from diskmodel.calibrate.harness.reference import FAMILY, calibration_errors, reference_drive, truth

_RUNS = {}


def run(name: str):
    """The drive (seed 1) and its calibration (with writes: the drive writes nothing real), once."""
    if name not in _RUNS:
        drive = reference_drive(name, seed=1)
        _RUNS[name] = drive, calibrate(drive, budget_s=120.0, seed=1, progress=False, writer=drive)
    return _RUNS[name]


@pytest.mark.parametrize("name", list(FAMILY))
def test_recovery_of_the_reference_family(name):
    drive, result = run(name)
    t = truth(drive)
    e = calibration_errors(drive, result)
    assert result.device_time_s <= 120.0
    assert abs(e["rotation_period"]) <= 0.005, e
    assert abs(e["mean_seek_two_piece"]) <= 0.03 and abs(e["mean_seek_table"]) <= 0.03, e
    assert e["zone_rate_max"] <= 0.03, e
    # the buffer: read-ahead found right, its segment within 10 %, its segments counted
    assert e["read_ahead_detected_right"], (result.read_ahead, t["read_ahead"])
    if t["read_ahead"]["detected"]:
        assert abs(e["segment_size"]) <= 0.10 and e["segments_right"], (result.read_ahead, t["read_ahead"])
    assert abs(e["track_skew_rev"]) <= 0.02, e
    status = {p.name: p.status for p in result.parameter_status}
    if name in ("desktop_7200", "server_15k", "legacy_3600"):  # head switches a calibration sees
        assert abs(e["head_switch"]) <= 0.10, e
        assert result.surfaces == t["surfaces"] and status["surfaces"] == "measured"
    if t["surfaces"] is None or t["surfaces"] == 1:  # serpentine, one surface: not visible, and said so
        assert result.surfaces is None and status["surfaces"] == "not visible"
        assert result.head_switch_s is None and status["head_switch_s"] == "not visible"
    assert result.write_cache == t["write_cache"] and status["write_cache"] == "measured"
    assert result.command_overhead_s == pytest.approx(t["command_overhead_s"], abs=30e-6)


def test_the_calibrated_disk_replays_a_trace_like_the_drive():
    """Round trip: to_disk() carries surfaces, skews, head switch, overhead and read-ahead, and
    the per-request simulation from it serves a random trace like the drive (CDF demerit)."""
    from diskmodel.model.drive_parameters import DriveParameters
    from diskmodel.model.simulate import simulate_requests
    from diskmodel.model.validation import demerit_s

    drive, result = run("desktop_7200")
    disk = result.to_disk(seek="table")
    assert disk.geometry.surfaces == 4 and disk.head_switch_s == pytest.approx(1e-3, rel=0.1)
    assert disk.drive_cache is not None and disk.drive_cache.segments == 1
    zone = disk.geometry.zones[0]
    assert zone.track_skew_sectors / zone.sectors_per_track == pytest.approx(0.14, abs=0.02)
    rng = np.random.default_rng(5)
    n, blocks = 3000, 8
    lbn = rng.integers(0, min(drive.size_bytes, disk.capacity_bytes) // 512 - blocks, n)
    replay = reference_drive("desktop_7200", seed=2)
    measured = replay.read_many(lbn * 512, blocks * 512)
    gap = replay.spec.host_gap_s + replay.spec.host_gap_jitter_s / 2
    simulated = simulate_requests(DriveParameters.from_disk(disk), np.zeros(n, dtype=bool), lbn,
                                  np.full(n, blocks), np.full(n, gap)).service_s
    assert demerit_s(measured, simulated) <= 0.10 * measured.mean()


# ---------------------------------------------------------------------------
# Writes only with --destroy-data-on naming the target
# ---------------------------------------------------------------------------

@pytest.fixture
def own_file(tmp_path):
    path = tmp_path / "target.bin"
    path.write_bytes(np.random.default_rng(3).integers(0, 256, 16 << 20, dtype=np.uint8).tobytes())
    return path


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_nothing_is_written_without_destroy_data_on(own_file, tmp_path, capsys):
    before, mtime = _digest(own_file), os.stat(own_file).st_mtime_ns
    out = tmp_path / "r.json"
    assert cli.main(["calibrate", str(own_file), "--budget-s", "4", "--json", str(out), "--no-progress"]) == 0
    assert _digest(own_file) == before and os.stat(own_file).st_mtime_ns == mtime
    data = json.loads(out.read_text())
    assert data["write_cache"] is None and data["detail"]["write_cache"]["status"] == "not visible"
    # a flag naming anything but the target is refused, in one line, before any read
    other = tmp_path / "other.bin"
    other.write_bytes(b"\0" * 4096)
    assert cli.main(["calibrate", str(own_file), "--destroy-data-on", str(other), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not name the target" in err[0] and "refusing to write" in err[0]
    assert _digest(own_file) == before and other.read_bytes() == b"\0" * 4096
    assert cli.main(["calibrate", "--simulated", "wd800bd", "--destroy-data-on", "wd800bd"]) == 2
    assert "has no writes" in capsys.readouterr().err


def test_destroy_data_on_the_target_writes_it(own_file, tmp_path):
    before = _digest(own_file)
    out = tmp_path / "w.json"
    link = tmp_path / "link.bin"
    link.symlink_to(own_file)  # the same file by another name is the target
    assert cli.main(["calibrate", str(own_file), "--destroy-data-on", str(link), "--budget-s", "4",
                     "--json", str(out), "--no-progress"]) == 0
    assert _digest(own_file) != before  # zeros over random blocks
    data = json.loads(out.read_text())
    assert isinstance(data["write_cache"], bool) and data["write_service_s"] > 0
    assert data["detail"]["write_cache"]["status"] == "measured"
