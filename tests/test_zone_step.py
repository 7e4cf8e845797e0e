"""The least step between two zones' rates (``ZONE_STEP_SECTORS_A_REV``): a step far below a sector a
revolution is the path's, not the drive's; every zone step of the bundled DiskSim drives stays."""
import sys
from pathlib import Path

import numpy as np
import pytest

from diskmodel.calibrate.harness.drive_truth import drive_truth
from diskmodel.calibrate.harness.stages import zone_step_bytes_per_s, zones_from_profile
from diskmodel.model.fit import fit_zones

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def _flat_with_a_drift_step(seed: int):
    """atlas10k's sustained rate (its interface's, 5.17 MB/s, one zone) at 200 locations, 0.05 % noise, and
    the second half 0.15 % slower: the shape of the profile through the kernel that gave two zones."""
    rng = np.random.default_rng(seed)
    loc = np.linspace(0.0, 9.1e9, 200)
    rate = 5.17e6 * np.exp(rng.normal(0.0, 5e-4, loc.size))
    rate[100:] *= 1 - 1.5e-3
    return loc, rate


@pytest.mark.parametrize("seed", range(3))
def test_a_drift_step_is_no_zone(seed):
    loc, rate = _flat_with_a_drift_step(seed)
    period_s = 60.0 / 10025
    # the test alone keeps the step: 100 locations a side make 0.15 % significant
    assert len(zones_from_profile(loc, rate, 9_184_760_832, 512)) == 2
    zones = zones_from_profile(loc, rate, 9_184_760_832, 512, rotation_period_s=period_s)
    assert len(zones) == 1
    # a quarter sector a revolution at 10025 rpm: 21.4 kB/s, 0.41 % of the rate
    assert zone_step_bytes_per_s(period_s) == pytest.approx(0.25 * 512 / period_s)


@pytest.mark.parametrize("drive", ["hp_c2247a", "hp_c2490a", "wd800bd"])
def test_every_zone_step_of_a_bundled_drive_stays(drive):
    """The zones' sustained rates as :func:`drive_truth` derives them from the DiskSim layout (sectors per
    track, skews, head switch), at 200 locations evenly over the drive with 0.1 % noise: each zone is found,
    and each boundary within 1 % of the capacity."""
    import _emulation_calibration as ec

    truth = drive_truth(ec._params(drive))
    bounds = np.asarray(truth["rate_zone_bounds_bytes"], dtype=float)
    rates = np.asarray(truth["zone_rates_bytes_per_s"], dtype=float)
    starts = np.asarray(truth["zone_bounds_bytes"], dtype=float)[:, 0]
    rng = np.random.default_rng(1)
    loc = (np.arange(200) + 0.5) * truth["capacity_bytes"] / 200
    rate = rates[np.searchsorted(starts, loc, side="right") - 1] * np.exp(rng.normal(0.0, 1e-3, loc.size))
    zones = zones_from_profile(loc, rate, truth["capacity_bytes"], 512, rotation_period_s=truth["rotation_period_s"])
    assert len(zones) == truth["zones"]
    found = np.array([z[0] for z in zones[1:]])
    assert np.max(np.abs(found - bounds[1:, 0]), initial=0.0) < 0.01 * truth["capacity_bytes"]


def test_min_step_rate_is_validated():
    with pytest.raises(ValueError, match="min_step_rate"):
        fit_zones([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], min_step_rate=-1.0)
