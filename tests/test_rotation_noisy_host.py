"""The rotation of a drive that reads ahead, on a host whose reads carry 150 µs of noise (the emulator's
lateness p99 through the kernel in a bad run). The reference is the drive's own parameters (drive_truth).

Two mechanisms, each checked here:
- At the next block a drive that reads ahead gives a hit or loses a revolution, so where the noise put
  the stride-1 forward chain's hits past the bound the buffer stage's five reads set for a hit, those hits
  set it; before, each start point's forward chain was taken for caught misses with a negative block
  passage, and 18 of 24 calibrations (atlas10k, cheetah4LP, ibm18es, barracuda, seeds 0-5) found no
  rotation.
- Where the median period's standard error over the first start points is above 0.2 % of it, more start
  points are timed (up to half the rotation's share of the budget); on a quiet host none are."""
from __future__ import annotations

import pytest

NOISY = dict(host_gap_s=20e-6, host_gap_jitter_s=20e-6, path_early_s=60e-6, path_early_jitter_s=60e-6,
             noise_s=150e-6)


def _calibrate(drive, seed, **noise):
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth, emulation_errors
    from diskmodel.calibrate.harness.measure import calibrate

    params = drive_parameters_of(resolve_drive(drive).timing)
    result = calibrate(ParametersDisk(params, seed=seed, **noise), budget_s=120.0, seed=seed, progress=False)
    return result, {r["quantity"]: r for r in emulation_errors(drive_truth(params), result)}


@pytest.mark.parametrize("drive", ["atlas10k", "ibm18es", "barracuda"])
def test_the_rotation_is_found_through_a_noisy_host(drive):
    for seed in range(4):
        result, rows = _calibrate(drive, seed, **NOISY)
        assert rows["rotation_period_s"]["passed"], (seed, rows["rotation_period_s"], result.rotation_detail)
        assert rows["mean_seek_s"]["passed"], (seed, rows["mean_seek_s"])


def test_more_start_points_only_where_the_period_is_imprecise():
    """atlas10k at seed 0: with 150 µs of noise the first round's median period was 0.63 % off (target
    0.5 %); more start points bring it within 0.3 %. Without noise, six start points and no more."""
    noisy, rows = _calibrate("atlas10k", 0, **NOISY)
    assert "for the period's precision" in noisy.rotation_detail, noisy.rotation_detail
    assert abs(rows["rotation_period_s"]["error"]) <= 0.003, rows["rotation_period_s"]
    quiet, rows = _calibrate("atlas10k", 0)
    assert "for the period's precision" not in quiet.rotation_detail, quiet.rotation_detail
    assert len(quiet.rotation_period_samples_s) == 6 and rows["rotation_period_s"]["passed"]
