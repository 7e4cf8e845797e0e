"""benchmarks/layers_check.py's device-bound RAID 5 vs RAID 1 orderings (the multi-disk LVM study), without a VM.

In the VM (qemu under TCG) md RAID 5's parity is computed by an emulated CPU, which bounds its writes;
layers_check therefore throttles every member of both arrays to one rate (``--vm-member-rate``) and bases
the multi-disk LVM study's orderings on those rows when they are device-bound. These tests check, on the model's side,
that members throttled as :func:`throttled_disk` makes them give the seed's orderings (RAID 5's small
writes pay a read phase before the write phase: half RAID 1's rate; its full-stripe writes spread over two
data members: twice RAID 1's), and the predicate itself on hand-picked rates, including a row the emulator
bounds (not counted as held).
"""
from __future__ import annotations

import importlib.util
import sys

import pytest

from conftest import REPO_ROOT
from diskmodel.model.predictions.block_workloads import FioJob
from diskmodel.model.drive.drives import InMemoryDrive
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.volumes import Partition
from diskmodel.model.predict import predict
from diskmodel.model.units import KIB, MIB


@pytest.fixture(scope="module")
def lc():
    """benchmarks/layers_check.py as a module (it is a script, not part of the package)."""
    path = REPO_ROOT / "benchmarks" / "layers_check.py"
    spec = importlib.util.spec_from_file_location("layers_check_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))     # its own import of _artifact
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


SMALL = FioJob("randwrite", 4 * KIB, 2 * MIB)
LARGE = FioJob("write", MIB, 4 * MIB)


def test_a_throttled_member_costs_its_fixed_cost_plus_bytes_over_the_rate(lc):
    disk = lc.throttled_disk(135e-6, 1 * MIB, "m")
    assert disk.command_overhead_s == pytest.approx(135e-6, rel=1e-9)
    assert disk.zone_rates_bytes_per_s()[0] == pytest.approx(1 * MIB, rel=1e-3)
    for bad in (dict(fixed_s=-1e-6, rate_bytes_per_s=MIB), dict(fixed_s=1e-4, rate_bytes_per_s=0.0),
                dict(fixed_s=float("nan"), rate_bytes_per_s=MIB)):
        with pytest.raises(ValueError, match="fixed_s|rate_bytes_per_s"):
            lc.throttled_disk(name="m", **bad)


@pytest.mark.parametrize("rate", [1 * MIB, 4 * MIB])
def test_the_model_predicts_seed_002s_orderings_with_every_member_throttled(lc, rate):
    mirror, parity = lc.vm_arrays(lc.throttled_disk(135e-6, rate, "throttled member"))
    small = {name: predict(s, SMALL).throughput_bytes_per_s for name, s in (("raid1", mirror), ("raid5", parity))}
    large = {name: predict(s, LARGE).throughput_bytes_per_s for name, s in (("raid1", mirror), ("raid5", parity))}
    # a 4 KiB write: RAID 1 writes both members at once; RAID 5 (3 members, reconstruct-write) reads the
    # other data page, then writes data and parity: two phases of one member request each
    assert small["raid5"] / small["raid1"] == pytest.approx(0.5, abs=0.05)
    # a 1 MiB full-stripe write: RAID 1 writes all of it to each member, RAID 5 half of it to each data
    # member (and as much parity): twice the member rate against once
    assert large["raid1"] == pytest.approx(rate, rel=0.05)
    assert large["raid5"] / large["raid1"] == pytest.approx(2.0, rel=0.05)
    measured = {"raid1": {"randwrite_4k": small["raid1"], "seqwrite_1m": large["raid1"]},
                "raid5": {"randwrite_4k": small["raid5"], "seqwrite_1m": large["raid5"]}}
    unthrottled = {k: {j: 100 * v for j, v in d.items()} for k, d in measured.items()}
    orderings = lc.parity_orderings(measured, measured, unthrottled, rate)
    assert [o["held"] for o in orderings] == [True, True]
    assert [o["model_held"] for o in orderings] == [True, True]


def test_delayed_members_cost_the_delay_per_request_and_the_model_halves_raid5s_small_writes(lc):
    # a dm-delay of 20 ms under every member: the Disk's fixed cost is the fio member's plus the delay, so a
    # 4 KiB write costs at least 135 µs + 20 ms + 4096 B / 1 MiB/s = 24.041 ms; a RAID 1's writes both
    # members at once, one member's time
    disk = lc.throttled_disk(135e-6 + 0.020, 1 * MIB, "delayed member")
    assert disk.command_overhead_s == pytest.approx(0.020135, rel=1e-9)
    mirror, parity = lc.vm_arrays(disk)
    alone = Stack(FileSystemNode(Partition(MIB, 128 * MIB), kind="ext3"), (InMemoryDrive(disk, "sda"),))
    member_s = 4096 / predict(alone, SMALL).throughput_bytes_per_s
    assert 0.024041 <= member_s < 1.02 * 0.024041
    raid1 = predict(mirror, SMALL).throughput_bytes_per_s
    assert 4096 / raid1 == pytest.approx(member_s, rel=1e-6)
    # RAID 5: the read phase, then the write phase, each one such request
    assert predict(parity, SMALL).throughput_bytes_per_s / raid1 == pytest.approx(0.5, abs=0.02)
    measured = {"raid1": {"randwrite_4k": 0.166e6, "seqwrite_1m": 1.03e6},
                "raid5": {"randwrite_4k": 0.111e6, "seqwrite_1m": 2.04e6}}
    small, large = lc.parity_orderings(measured, MODEL, UNTHROTTLED, 1 * MIB, 0.020)
    assert small["held"] and large["held"]
    assert "members throttled to 1.0 MB/s, delayed 20 ms per request (device-bound)" in small["detail"]
    assert "ratio 0.67" in small["detail"]


# rates [bytes/s]: the arrays unthrottled under TCG (the run of record) and the model's at 1 MiB/s members
UNTHROTTLED = {"raid1": {"randwrite_4k": 6.55e6, "seqwrite_1m": 568.7e6},
               "raid5": {"randwrite_4k": 3.84e6, "seqwrite_1m": 123.8e6}}
MODEL = {"raid1": {"randwrite_4k": 0.96e6, "seqwrite_1m": 1.05e6},
         "raid5": {"randwrite_4k": 0.48e6, "seqwrite_1m": 2.10e6}}


def test_device_bound_rows_decide_and_the_text_says_so(lc):
    # io.max is a token bucket per direction: RAID 5's reconstruct-write read costs no device time and
    # each member writes 2/3 of what a mirror's does, so its small writes outpace RAID 1's
    measured = {"raid1": {"randwrite_4k": 1.03e6, "seqwrite_1m": 1.05e6},
                "raid5": {"randwrite_4k": 1.42e6, "seqwrite_1m": 2.08e6}}
    small, large = lc.parity_orderings(measured, MODEL, UNTHROTTLED, 1 * MIB)
    assert (small["held"], small["model_held"], small["device_bound"]) == (False, True, True)
    assert (large["held"], large["model_held"], large["device_bound"]) == (True, True, True)
    assert "members throttled to 1.0 MB/s (device-bound)" in small["detail"]
    assert "ratio 1.38" in small["detail"] and "ratio 0.50" in small["detail"]
    assert "ratio 1.98" in large["detail"] and "ratio 2.00" in large["detail"]


def test_a_row_the_emulator_bounds_does_not_count(lc):
    # at 4 MiB/s RAID 5's small writes ran at the emulator's pace (0.96 of unthrottled): slower than
    # RAID 1's, but not because of the members
    measured = {"raid1": {"randwrite_4k": 4.02e6, "seqwrite_1m": 4.17e6},
                "raid5": {"randwrite_4k": 3.67e6, "seqwrite_1m": 8.26e6}}
    small, large = lc.parity_orderings(measured, MODEL, UNTHROTTLED, 4 * MIB)
    assert small["held"] is False and small["device_bound"] is False
    assert ("NOT device-bound: RAID 1 at 0.61 of its unthrottled rate, RAID 5 at 0.96 of its unthrottled rate"
            in small["detail"])
    assert large["held"] is True and "members throttled to 4.2 MB/s (device-bound)" in large["detail"]


def test_device_bound_is_at_most_half_the_unthrottled_rate_and_refuses_bad_rates(lc):
    assert lc.device_bound(1.0e6, 2.0e6) and not lc.device_bound(1.01e6, 2.0e6)
    with pytest.raises(ValueError, match="unthrottled_bytes_per_s"):
        lc.device_bound(1.0e6, 0.0)
    with pytest.raises(ValueError, match="throttled_bytes_per_s"):
        lc.device_bound(float("inf"), 1.0e6)


def test_btrfs_raid_and_md_raid_are_both_timed(lc):
    """btrfs RAID 0 over two regions of one device is timed through its file system's chunks, as md's is."""
    from diskmodel.model.stacks.raid import RaidArray

    from diskmodel.model.drive.disk import flat_latency_disk

    disk = flat_latency_disk(60e-6, 1e9, 4 << 30)
    btrfs = lc._stripe_on_one_device(disk, "btrfs raid0")
    assert predict(btrfs, SMALL).throughput_bytes_per_s > 0  # fio on a file in it, as the bench runs it
    two = (Partition(MIB, 256 * MIB, disk="sda"), Partition(258 * MIB, 256 * MIB, disk="sda"))
    md = Stack(FileSystemNode(RaidArray("raid0", two, chunk_size_bytes=64 * KIB), kind="ext4"),
               (InMemoryDrive(disk, "sda"),), "md raid0")
    assert predict(md, SMALL).throughput_bytes_per_s > 0