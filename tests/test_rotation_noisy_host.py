"""The rotation of a drive that reads ahead, on a host whose reads carry 150 µs of noise (the emulator's
lateness p99 through the kernel in a bad run). At the next block a drive that reads ahead gives a hit or
loses a revolution, so the forward chains' hits set how slow a hit may be; before, the buffer stage's five
reads set it, the noise put every hit past it, each start point's forward chain was taken for caught misses
with a negative block passage, and 18 of 24 calibrations (atlas10k, cheetah4LP, ibm18es, barracuda, seeds
0-5) found no rotation. The reference is the drive's own parameters (drive_truth)."""
from __future__ import annotations

import pytest

NOISY = dict(host_gap_s=20e-6, host_gap_jitter_s=20e-6, path_early_s=60e-6, path_early_jitter_s=60e-6,
             noise_s=150e-6)


@pytest.mark.parametrize("drive", ["atlas10k", "ibm18es", "barracuda"])
def test_the_rotation_is_found_through_a_noisy_host(drive):
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth, emulation_errors
    from diskmodel.calibrate.harness.measure import calibrate

    params = drive_parameters_of(resolve_drive(drive).timing)
    truth = drive_truth(params)
    for seed in range(4):
        result = calibrate(ParametersDisk(params, seed=seed, **NOISY), budget_s=120.0, seed=seed, progress=False)
        rows = {r["quantity"]: r for r in emulation_errors(truth, result)}
        assert rows["rotation_period_s"]["passed"], (seed, result.rotation_detail)
        assert rows["mean_seek_s"]["passed"], (seed, rows["mean_seek_s"])
