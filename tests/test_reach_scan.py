"""The read-ahead's mean reach, scanned block by block (calibrate/harness/reach_scan.py), against the reach
DiskSim's read-ahead has on the bundled drives (``drive_truth``: scheme 4 reads to the end of the read's track,
so atlas10k's reach is anywhere between none and a track; cheetah4LP's and ibm18es' is a fixed count)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from diskmodel.calibrate.harness.buffer_probe import measure_buffer, size_buffer
from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth
from diskmodel.calibrate.harness.meter import Meter
from diskmodel.calibrate.harness.reach_scan import PACE_HITS, TAIL_CUT, mean_reach, reach_end, scan_reach, scan_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_mean_reach_leaves_out_scans_that_ran_into_a_second_read_ahead():
    rng = np.random.default_rng(0)
    # a reach to the track's end: uniform over a track of 300 blocks; 5 % of the scans went on a track more
    uniform = rng.uniform(0, 300, 400)
    went_on = rng.random(400) < 0.05
    got = mean_reach(np.where(went_on, uniform + 300, uniform))
    clean = uniform[~went_on].mean()
    assert got[0] == pytest.approx(clean, rel=0.02)
    assert np.mean(np.where(went_on, uniform + 300, uniform)) > 1.05 * clean  # what the plain mean gives
    # a fixed reach of 282 blocks, read to within a stride of 45; 5 % went on into a second one
    fixed = 282 + rng.uniform(-22, 22, 400)
    got = mean_reach(np.where(went_on, fixed + 282, fixed))
    assert got[0] == pytest.approx(282, rel=0.01)
    assert TAIL_CUT * np.percentile(fixed, 90) < 2 * 282 - 22
    assert mean_reach([5.0]) is None


def test_a_lone_slow_read_does_not_end_a_scan():
    strides = [3, 48, 93, 138, 183, 228, 273, 318]
    # a hit the host delayed (at 93), then hits up to 273, then the miss and a read paced by the media
    assert reach_end(strides, [0, 0, 1, 0, 0, 0, 1, 1]) == pytest.approx(0.5 * (228 + 273 - 1))
    # the first read already a miss
    assert reach_end(strides, [1, 1, 1, 1, 1, 1, 1, 1]) == pytest.approx(0.5 * (3 - 1))
    # slow reads never two in a row: not ended within the strides read
    assert reach_end(strides, [1, 0, 1, 0, 1, 0, 0, 1]) is None


def test_a_scans_step_lets_the_media_outpace_a_hit():
    # atlas10k through the kernel: a hit 0.28 ms, a block passes in 18 us (334 sectors a 5.985 ms track)
    step = scan_step(612, 2.8e-4, 5.985e-3 / 334)
    assert step * 5.985e-3 / 334 >= PACE_HITS * 2.8e-4
    assert step < 612 // 4  # still a few strides within the mean reach's twice
    assert scan_step(1128, 1.7e-4, 5.98e-3 / 195) == 1128 // 24  # cheetah4LP: the cap's share is longer


def _buffer_stage(drive: str, seed: int):
    import _emulation_calibration as ec

    params = ec._params(drive)
    truth = drive_truth(params)
    starts = np.asarray(truth["zone_bounds_bytes"])[:, 0]
    rates = np.asarray(truth["zone_rates_bytes_per_s"])

    def rate_at(o):
        return rates[np.searchsorted(starts, np.asarray(o), side="right") - 1]

    meter = Meter(ParametersDisk(params, seed=seed))
    rng = np.random.default_rng(seed)
    found = size_buffer(meter, rng, measure_buffer(meter, rng), rate_at)
    block_s = truth["rotation_period_s"] / float(np.max(params.layout.sectors_per_track))
    used = meter.used_s
    scanned = scan_reach(meter, rng, found, rate_at, max_s=10.0, block_s=block_s)
    return truth["segment_bytes"], found.segment_bytes, scanned, meter.used_s - used


@pytest.mark.parametrize("drive,seeds", [("atlas10k", range(4)), ("cheetah4LP", [0]), ("ibm18es", [0])])
def test_scanned_reach_is_the_drives(drive, seeds):
    """Within the 10 % the issue asks of the segment, at every seed, in at most 10 s of device time; on atlas10k,
    whose reach runs to the track's end, the bisection alone is 14 % off at seed 2."""
    for seed in seeds:
        truth, bisected, scanned, spent_s = _buffer_stage(drive, seed)
        assert scanned.segment_bytes == pytest.approx(truth, rel=0.10), (seed, bisected, scanned.detail)
        assert spent_s <= 10.0 + 0.5
        if drive == "atlas10k" and seed == 2:
            assert abs(bisected / truth - 1) > 0.10
