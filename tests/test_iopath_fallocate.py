"""fio's file created with fallocate(2) (model/iopath/fileops.py ``fio``, fs_extent_ops.py), against
blktrace of the real fio (tests/golden/fio_direct_randwrite_blktrace.json, see tests/golden/README.md):
random 4 KiB O_DIRECT writes to a new 16 MiB file on a fresh 1 GiB ext4, xfs and btrfs.

fio creates the job's file with fallocate(2) over its size (fallocate=native, its default), so each
write lands at its own place in one 16 MiB extent, in the job's random order. The model had no
fallocate: the writes were allocated in the order they came, one after the other on the device, so
random writes were sequential ones (each losing a revolution on a drive without a write cache), and
RAID 5's small writes cost what RAID 0's did.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.iopath import parse_workload, run
from diskmodel.model.iopath.fileops import Kind
from diskmodel.model.iopath.stream import Flag, Op
from diskmodel.model.predict import predict
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.volumes import Partition

GOLDEN = json.loads((Path(__file__).parent / "golden" / "fio_direct_randwrite_blktrace.json").read_text())
CELLS = {c["cell"]: c for c in GOLDEN["cells"]}
B = 4096
FILE_BLOCKS = 16 * (1 << 20) // B


def _data_writes(op, offset, size, flags) -> np.ndarray:
    """The device blocks of the 4 KiB data writes, in issue order."""
    keep = (op == Op.WRITE) & (size == B) & ((flags & int(Flag.META)) == 0)
    return offset[keep] // B


def _measured(kind: str) -> np.ndarray:
    r = np.asarray(CELLS[kind]["requests"], dtype=np.int64)
    return _data_writes(r[:, 0], r[:, 1], r[:, 2], r[:, 3])


def _predicted(kind: str) -> np.ndarray:
    c = CELLS[kind]
    node = FileSystemNode(kind=kind, volume=Partition(0, 1 << 30, c["device"], "sda"))
    s = run(Stack(node), parse_workload(c["workload"]))[c["device"]]
    return _data_writes(s.op, s.offset_bytes, s.size_bytes, s.flags)


@pytest.mark.parametrize("kind", ["ext4", "xfs", "btrfs"])
def test_random_direct_writes_land_in_the_fallocated_extent_in_random_order(kind):
    for blocks in (_measured(kind), _predicted(kind)):
        assert blocks.size == FILE_BLOCKS
        # one extent of the file's size, every block written once
        assert blocks.max() - blocks.min() + 1 == FILE_BLOCKS and np.unique(blocks).size == FILE_BLOCKS
        # in the job's random order: measured, 1 % of the writes follow the one before on the device;
        # the model before, every write
        assert np.mean(np.diff(blocks) == 1) < 0.05


def test_ext3_has_no_fallocate_and_fio_goes_on_without():
    # ext3's files are block-mapped: fallocate(2) is refused (EOPNOTSUPP) and fio writes the file
    # without it; the model asks nothing of the file system then (its data writes are those of a job
    # with no fallocate at all)
    node = FileSystemNode(kind="ext3", volume=Partition(0, 1 << 30, "loop0", "sda"))
    ops = parse_workload("fio:rw=randwrite,bs=4k,size=1M,direct=1")
    s = run(Stack(node), ops)["loop0"]
    without = run(Stack(node), ops.take(ops.kind != Kind.FALLOCATE))["loop0"]
    assert np.array_equal(s.offset_bytes, without.offset_bytes) and np.array_equal(s.op, without.op)


def test_raid5_small_random_writes_cost_more_than_raid0s():
    # random 4 KiB O_DIRECT writes on ext4 over four drives: RAID 5 reads the old data (or the stripe's
    # others) before it writes data and parity; RAID 0 only writes (the model before: 34.7 s and 34.5 s)
    def elapsed(level):
        members = tuple(Partition(1 << 20, 10**9, f"/dev/sd{d}1", f"sd{d}") for d in "abcd")
        node = FileSystemNode(kind="ext4", volume=RaidArray(level, members, name="/dev/md0"))
        stack = Stack(node, tuple(PresetDrive("wd800bd", name=f"sd{d}") for d in "abcd"), level)
        return predict(stack, "fio:rw=randwrite,bs=4k,size=4M,direct=1").elapsed_s

    raid0, raid5 = elapsed("raid0"), elapsed("raid5")
    assert raid5 > 1.6 * raid0, (raid0, raid5)
