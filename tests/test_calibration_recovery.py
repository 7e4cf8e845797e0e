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

from _helpers import keep_first_of_each
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


@pytest.mark.parametrize("name", keep_first_of_each(list(FAMILY), lambda name: "family", list(FAMILY), tier="slow"))
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
    if name in ("desktop_7200", "server_15k", "legacy_3600", "nas_5900"):  # head switches a calibration sees
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
    from diskmodel.model.drive.parameters import DriveParameters
    from diskmodel.model.simulator.simulate import simulate_requests
    from diskmodel.model.predictions.validation import quantile_demerit_s

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
    assert quantile_demerit_s(measured, simulated) <= 0.10 * measured.mean()


# ---------------------------------------------------------------------------
# Head and cylinder switches whose skews lie within the host's jitter: told apart by position
# ---------------------------------------------------------------------------

def _close_skews(surfaces, track_skew, cylinder_skew, **changes):
    """nas_5900 (host gap jitter 200 us, 1 % outliers) with other surfaces and skews: a drive
    the harness was not tuned on, whose two skews differ by less than the jitter."""
    from dataclasses import replace

    from diskmodel.calibrate.harness.reference import Layout

    base = FAMILY["nas_5900"]
    layout = Layout(base.layout.zones, surfaces, 512, "conventional", track_skew, cylinder_skew)
    return replace(base, name=f"close_{surfaces}", layout=layout, **changes)


@pytest.mark.parametrize("spec, seed", [
    pytest.param(FAMILY["nas_5900"], 0, id="nas_5900-0"),
    pytest.param(FAMILY["nas_5900"], 2, id="nas_5900-2", marks=pytest.mark.slow),
    pytest.param(_close_skews(6, 0.16, 0.145, head_switch_s=1.4e-3), 0, id="six_surfaces", marks=pytest.mark.slow),
    pytest.param(_close_skews(3, 0.15, 0.14), 0, id="three_surfaces"),
    pytest.param(_close_skews(2, 0.10, 0.12, head_switch_s=1.0e-3, seek_single_s=0.8e-3), 0, id="two_surfaces",
                 marks=pytest.mark.slow),
])
def test_head_switch_told_from_cylinder_switches_by_position(spec, seed):
    """Where head and cylinder switches wait within the host's jitter of each other (a one-cylinder
    seek faster than the head switch), the reads after a head switch are told by their position
    below a cylinder switch, not by their wait: the head switch within 10 % (by their wait, the
    faster of the two: -17 % on nas_5900 seed 2, -19 % with six surfaces, -21 % and 14 surfaces
    with two; nas_5900 seed 0 not visible)."""
    from diskmodel.calibrate.harness.reference import ReferenceDrive

    drive = ReferenceDrive(spec, seed=seed)
    result = calibrate(drive, budget_s=120.0, seed=seed, progress=False)
    e = calibration_errors(drive, result)
    status = {p.name: p for p in result.parameter_status}
    assert result.surfaces == spec.layout.surfaces and status["surfaces"].status == "measured"
    assert abs(e["head_switch"]) <= 0.10, (e["head_switch"], status["head_switch_s"].detail)
    # the drive reads ahead: the same-track floor is a buffer hit's, so estimated, and says how
    assert status["head_switch_s"].status == "estimated"
    assert "told by position" in status["head_switch_s"].detail
    assert result.device_time_s <= 120.0


def test_periodic_kind_counts_tracks_not_changes():
    """Every 8th track change waits 200 us less, under 200 us of jitter; an outlier hides one change
    and adds an odd wait in each chain: the period is 8 (not a divisor or a multiple of it), and
    the cylinder switches are those every 8th track. Without the difference, no period."""
    from diskmodel.calibrate.harness.head_switch import periodic_kind

    rng = np.random.default_rng(4)
    chains, cylinders = [], []
    for c in range(4):
        dev = rng.uniform(-100e-6, 100e-6, 120)
        steps = np.arange(1 + c % 3, 120, 3)  # a track change every third step
        cyl = (np.arange(steps.size) + c) % 8 == 0
        dev[steps] = np.where(cyl, 1.3e-3, 1.5e-3) + rng.uniform(-100e-6, 100e-6, steps.size)
        dev[steps[17]] = 4.1e-3  # an outlier on a track change: not in the band
        dev[steps[17] + 1] = 7.9e-3
        chains.append(dev)
        cylinders.append(set(steps[cyl].tolist()) - {int(steps[17])})
    found = periodic_kind(chains, 0.6e-3, (1.1e-3, 1.7e-3), 0.1e-3, [1 / 3] * 4)
    assert found is not None and found.surfaces == 8 and found.t > 6
    assert found.head_s == pytest.approx(1.5e-3, abs=80e-6) and found.cylinder_s == pytest.approx(1.3e-3, abs=80e-6)
    for steps, truth_steps in zip(found.cylinder_steps, cylinders):
        assert set(steps) <= truth_steps and len(steps) >= len(truth_steps) - 2
    # the same changes all waiting alike, under 400 us of jitter: no period shows, though the search
    # over phases finds t >= 6 and 100 us in such noise at some period (the shuffles tell)
    for dev in chains:
        band = (dev > 1.1e-3) & (dev < 1.7e-3)
        dev[band] = rng.uniform(1.3e-3, 1.7e-3, int(band.sum()))
    assert periodic_kind(chains, 0.6e-3, (1.1e-3, 1.8e-3), 0.1e-3, [1 / 3] * 4) is None


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
