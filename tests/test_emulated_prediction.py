"""A prediction of a run on an emulated drive is given the drive the emulator serves: the same Disk whose
DriveParameters time every request (calibrate.emulate.timing.served_disk), not the preset's catalogue entry."""
from __future__ import annotations

import dataclasses

import pytest


def _assert_same(a, b, where="parameters"):
    """Field by field (records of numpy arrays and numbers; DriveParameters has no array-aware ==)."""
    import numpy as np

    if dataclasses.is_dataclass(a) or hasattr(a, "_fields"):
        names = [f.name for f in dataclasses.fields(a)] if dataclasses.is_dataclass(a) else a._fields
        for name in names:
            _assert_same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), where


def test_the_model_drive_of_an_emulated_preset_is_the_disk_the_emulator_times_requests_with():
    from diskmodel.calibrate.emulate.drives import model_drive, resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of
    from diskmodel.model.drive.parameters import DriveParameters
    from diskmodel.model.drive.presets import load_preset

    node = model_drive("wd800bd", name="vdb")
    assert node.name == "vdb"
    served = drive_parameters_of(resolve_drive("wd800bd").timing)
    _assert_same(DriveParameters.from_disk(node.disk), served)
    # the catalogue's WD800BD has a read-ahead buffer; the emulated one is served without it
    assert load_preset("wd800bd").drive_cache is not None and node.disk.drive_cache is None
    _assert_same(dataclasses.replace(load_preset("wd800bd"), drive_cache=None), node.disk, "disk")


def test_a_sequential_read_on_the_emulated_drive_is_predicted_without_the_buffers_read_ahead():
    """dd reading back a 4 MiB file at the kernel's read-ahead: with the drive's buffer the next request is
    already in it; without, each request waits for the platter. The emulated drive is the second."""
    from diskmodel.calibrate.emulate.drives import model_drive
    from diskmodel.model.drive.drives import PresetDrive
    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.predict import predict
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    mib = 1 << 20
    ops = parse_workload(f"dd:size={4 * mib},step=read")

    def rate(drive):
        stack = Stack(FileSystemNode(Partition(mib, 256 * mib, disk="vdb"), kind="ext4"), (drive,), "one disk")
        return 4 * mib / predict(stack, ops).elapsed_s

    assert rate(model_drive("wd800bd", name="vdb")) < 0.95 * rate(PresetDrive("wd800bd", name="vdb"))


def test_an_unknown_emulated_drive_is_named():
    from diskmodel.calibrate.emulate.drives import model_drive

    with pytest.raises(ValueError, match="DRIVE 'no-such-drive'"):
        model_drive("no-such-drive")


def test_the_bundled_calibration_of_the_emulated_wd800bd_finds_the_drives_rotation():
    """data/calibrations/wd800bd_emulated.json, measured through the kernel on the emulated WD800BD, against
    the served drive's own rotation period (the issue's 0.5 %), and a name not bundled is refused by name."""
    from diskmodel.calibrate.emulate.drives import model_drive
    from diskmodel.calibrate.harness.results import calibration_from_json
    from diskmodel.data.calibrations import BUNDLED_CALIBRATIONS, bundled_calibration

    assert "wd800bd_emulated" in BUNDLED_CALIBRATIONS
    result = calibration_from_json(bundled_calibration("wd800bd_emulated"))
    served = model_drive("wd800bd").disk
    assert result.mechanical_seek
    assert result.rotation_period_s == pytest.approx(60.0 / served.rpm, rel=0.005)
    with pytest.raises(ValueError, match="calibration 'nope' is not bundled"):
        bundled_calibration("nope")
