"""A calibrated drive's disk holds every byte of the device, and every draw of its uncertainty holds every
byte of the point estimate's disk: the paper's layout puts its file system in the disk's last 20 GB, and the
intervals re-time the same requests on each draw.

References: the device's size the calibration recorded (the kernel's), and a fio job's rate on a 7200 rpm drive.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from diskmodel.calibrate.cli import main

GOLDEN_CALIBRATION = Path(__file__).parent / "golden" / "calibration_wd800bd_simulated.json"
BUNDLED_CALIBRATION = Path(__file__).parent.parent / "data" / "calibrations" / "wd800bd_emulated.json"


def _json(capsys, *argv) -> dict:
    assert main(["predict", "--json", *argv]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("calibration", [GOLDEN_CALIBRATION, BUNDLED_CALIBRATION], ids=["simulated", "emulated"])
def test_the_last_20_gb_of_a_calibrated_drive_take_block_workloads_with_their_intervals(capsys, calibration):
    """A calibration's draws (for the intervals) re-round its zones into whole cylinders: each must still hold
    every block of the point estimate's disk, where the paper's layout puts its last 20 GB (a draw that held
    fewer refused the random reads near the end of the disk)."""
    out = _json(capsys, "--calibration", str(calibration), "--workload", "randread_4k")
    lower, upper = out["intervals_95"]["elapsed_s"]
    assert 0 < lower < upper
    # 64 MiB of random 4 KiB reads at queue depth 1: a seek and a rotational latency each, 5-20 ms on a 7200 rpm
    # drive, so 0.2-0.8 MB/s
    assert 0.2e6 < out["throughput_bytes_per_s"] < 0.8e6


def test_the_draws_of_a_calibration_hold_the_point_estimates_disk():
    from diskmodel.calibrate.harness.results import calibration_from_json
    from diskmodel.model.fit.calibration_views import calibrated_disk
    from diskmodel.model.predictions.intervals import calibration_draws, drawn_disk

    for path in (GOLDEN_CALIBRATION, BUNDLED_CALIBRATION):
        result = calibration_from_json(path)
        point = calibrated_disk(result)
        assert point.capacity_bytes >= result.size_bytes  # the device's every byte is on the disk
        for drawn in calibration_draws(result, 40, 1):
            assert drawn_disk(point, drawn).capacity_bytes >= point.capacity_bytes
