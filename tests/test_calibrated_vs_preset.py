"""The shipped calibration of the emulated WD800BD predicts as the drive the emulator serves does.

The reference is the served drive itself (``model_drive``: the Disk that timed every read the
calibration made); benchmarks/calibrated_vs_preset.py does the same over more workloads and drives.
"""
from __future__ import annotations

import numpy as np
import pytest

MIB = 1 << 20


@pytest.fixture(scope="module")
def disks():
    from diskmodel.calibrate.emulate.drives import model_drive
    from diskmodel.calibrate.harness.results import calibration_from_json
    from diskmodel.data.calibrations import bundled_calibration

    return model_drive("wd800bd").disk, calibration_from_json(bundled_calibration("wd800bd_emulated")).to_disk()


def _elapsed_s(disk, job) -> float:
    from diskmodel.model.drive.drives import InMemoryDrive
    from diskmodel.model.predict import predict
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    # the paper's test area (Tables 1-3): after the system's 59 GB
    part = Partition(59 * 10**9 // MIB * MIB, 1024 * MIB, disk="sda")
    stack = Stack(FileSystemNode(part, kind="ext4"), (InMemoryDrive(disk, "sda"),), "one disk")
    return predict(stack, job).elapsed_s


def test_every_switch_of_the_calibrated_disk_ends_inside_its_skew(disks):
    """A one-cylinder seek outlasting the cylinder skew, or a head switch the track skew, would cost a
    revolution at every such switch of a sequential transfer; the served drive's format has none. The
    calibrated disk's table seek too (its means at one cylinder came out 0.06-0.16 ms past the skew)."""
    from diskmodel.calibrate.harness.results import calibration_from_json
    from diskmodel.data.calibrations import bundled_calibration

    served, calibrated = disks
    table = calibration_from_json(bundled_calibration("wd800bd_emulated")).to_disk(seek="table")
    for disk in (served, calibrated, table):
        period = 60.0 / disk.rpm
        one_cylinder = float(disk.seek.seek_time_s(np.array([1.0]))[0])
        for z in disk.geometry.zones:
            sector = period / z.sectors_per_track
            assert one_cylinder <= z.cylinder_skew_sectors * sector
            assert disk.head_switch_s <= z.track_skew_sectors * sector


@pytest.mark.parametrize("rw, block_bytes, size_bytes", [("read", MIB, 128 * MIB), ("write", MIB, 128 * MIB),
                                                         ("randread", 4096, 4 * MIB)])
def test_calibrated_drive_times_fio_as_the_served_drive_within_5_percent(disks, rw, block_bytes, size_bytes):
    from diskmodel.model.predictions.block_workloads import FioJob

    from diskmodel.calibrate.harness.results import calibration_from_json
    from diskmodel.data.calibrations import bundled_calibration

    served, calibrated = disks
    table = calibration_from_json(bundled_calibration("wd800bd_emulated")).to_disk(seek="table")
    job = FioJob(rw, block_bytes, size_bytes)
    assert _elapsed_s(calibrated, job) == pytest.approx(_elapsed_s(served, job), rel=0.05)
    assert _elapsed_s(table, job) == pytest.approx(_elapsed_s(served, job), rel=0.05)


def test_a_write_cache_a_calibration_cannot_see_is_said_and_taken_only_from_a_named_source(disks):
    import dataclasses

    from diskmodel.model.drive.cache import DriveCache
    from diskmodel.model.fit.calibration_views import write_cache_from

    served, calibrated = disks
    assert "write cache" in dict(calibrated.estimates)  # the shipped calibration only read
    # no buffer measured: nothing to put a write policy into, and the estimate stays
    assert write_cache_from(calibrated, served, "x") is calibrated
    buffered = dataclasses.replace(calibrated, drive_cache=DriveCache(4, 65536, read_ahead_bytes=65536),
                                   cache_size_bytes=4 * 65536)
    source = dataclasses.replace(served, drive_cache=DriveCache(8, 131072, write_back=True, fast_write_level=1),
                                 cache_size_bytes=8 * 131072)
    taken = write_cache_from(buffered, source, "the drive's spec sheet")
    assert taken.drive_cache.write_back and taken.drive_cache.fast_write_level == 1
    assert taken.drive_cache.segments == 4  # the measured buffer kept
    assert dict(taken.estimates)["write cache"].endswith("from the drive's spec sheet")
