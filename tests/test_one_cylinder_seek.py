"""The one-cylinder seek timed as a head switch is: the least read just past a cylinder switch that still
catches its sector, less the same-track floor (calibrate/harness/head_switch.py, one_cylinder_limit).

The seek stage's pairs meet a uniform rotational wait and leave a mean at one cylinder a few tenths of a
millisecond either way; the two-piece fit of hp_c2247a gave 3.46 ms against the drive's 4.14 ms. With the
0.65 ms write settle, the drive's switch outlasts its 4.17 ms cylinder skew on a sequential write and loses
a revolution per cylinder, the calibrated one did not: fio's 1 MiB writes came out 5.9 % short. The
references are the DiskSim drives' own seek curves at one cylinder, read apart from the harness.
"""
from __future__ import annotations

import numpy as np
import pytest


def _calibrated(drive: str, seed: int = 0):
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk
    from diskmodel.calibrate.harness.measure import calibrate

    params = drive_parameters_of(resolve_drive(drive).timing)
    return params, calibrate(ParametersDisk(params, seed=seed), budget_s=120.0, seed=seed, progress=False)


def test_hp_c2247a_one_cylinder_seek_and_the_disk_made_from_it():
    """hp_c2247a, seed 0: the one-cylinder seek within 3 % of the drive's 4.14 ms, said measured. The
    Disk with the table seek takes it at one cylinder (DiskSim's single-cylinder seek time beside its
    curve), or half a sector inside the measured cylinder skew where it reaches past it, as a drive's
    format makes a cylinder switch; eq. 7's curve stays as fitted. The JSON keeps the figure, and a
    file written before it was measured reads as not measured."""
    from diskmodel.model.fit.calibration import CalibrationResult

    params, result = _calibrated("hp_c2247a")
    one = float(params.seek_by_distance_s[1])
    assert result.one_cylinder_seek_s == pytest.approx(one, rel=0.03)
    assert {s.name: s.status for s in result.parameter_status}["one_cylinder_seek_s"] == "measured"
    disk = result.to_disk(seek="table")
    period = 60.0 / disk.rpm
    skew_bound = min((z.cylinder_skew_sectors - 0.5) * period / z.sectors_per_track for z in disk.geometry.zones)
    taken = float(disk.seek.seek_time_s(np.array([1.0]))[0])
    assert taken == pytest.approx(min(result.one_cylinder_seek_s, skew_bound), rel=1e-9)
    assert taken > 4.0e-3  # the table's own mean there: 3.8 ms
    fitted = result.to_disk()  # eq. 7 has no single-cylinder term: its curve as fitted
    assert float(fitted.seek.seek_time_s(np.array([1.0]))[0]) < 3.8e-3
    assert any(name == "seek one cylinder" and "measured by the reads after a cylinder switch" in text
               for name, text in disk.estimates)
    data = result.to_dict()
    assert CalibrationResult.from_dict(data).one_cylinder_seek_s == result.one_cylinder_seek_s
    del data["one_cylinder_seek_s"]
    assert CalibrationResult.from_dict(data).one_cylinder_seek_s is None


@pytest.mark.slow
@pytest.mark.parametrize("drive", ["cheetah4LP", "ibm18es", "atlas10k", "barracuda", "atlas_III"])
def test_one_cylinder_seek_of_the_other_drives(drive):
    """Five more DiskSim drives at seeds 0 and 1: within 5 % of the drive's seek at one cylinder (the
    first version of this check, on the simulated backend: -3.2 to +2.1 %)."""
    for seed in (0, 1):
        params, result = _calibrated(drive, seed)
        assert result.one_cylinder_seek_s == pytest.approx(float(params.seek_by_distance_s[1]), rel=0.05), seed
