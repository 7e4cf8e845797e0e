"""Members on one device, and btrfs's data path.

Hand-computed cases on flat drives (a request of S bytes costs its latency + S / R): members that are
partitions of one disk send their pieces to the one drive, which serves them one after the other, so
striping over them is never faster than the disk itself; a btrfs array is refused by the timed path.  The integration test checks that the bench's reads come from the device,
not from the page cache the write left: the scratch regions' counters show the job's bytes read.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from conftest import require_root, require_tools
from diskmodel.model.predictions.block_workloads import FioJob
from diskmodel.model.drive.disk import flat_latency_disk
from diskmodel.model.iopath.timing import FlatDrive
from diskmodel.model.predictions.results import predict_block_job
from diskmodel.model.drive.drives import InMemoryDrive
from diskmodel.model.stacks.loop_file import nested_loop_files
from diskmodel.model.stacks.nodes import to_json_data
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import NODE_SCHEMA, FileSystemNode, Stack
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.stacks.volumes import Partition

FAST = FlatDrive(1e-3, 100e6, 10 * GIB)      # 1 ms, 100 MB/s
DRIVES = {"a": FAST, "b": FAST}
CALL_S = 2e-6  # the application's time per system call between requests (model.prediction)


def flat_s(size):
    """One request of *size* on the flat drive, by hand: its latency plus its bytes at its rate."""
    return FAST.latency_s + size / FAST.bytes_per_s


def regions(n, disk="a"):
    """n partitions of one disk, one after the other."""
    return tuple(Partition(i * GIB, GIB, disk=disk) for i in range(n))


def test_striping_over_one_disk_serves_both_pieces_on_it_one_after_the_other_hand_computed():
    # 1 MiB aligned on a 64 KiB chunk over 2 members: 512 KiB on each; on one drive the pieces queue
    one = RaidArray("raid0", regions(2), chunk_size_bytes=64 * KIB)
    two = RaidArray("raid0", (Partition(0, GIB, disk="a"), Partition(0, GIB, disk="b")), chunk_size_bytes=64 * KIB)
    job = FioJob("read", MIB, 8 * MIB)
    shared, apart = predict_block_job(one, job, DRIVES), predict_block_job(two, job, DRIVES)
    assert shared.elapsed_s == pytest.approx(8 * 2 * flat_s(MIB // 2) + 7 * CALL_S)
    assert apart.elapsed_s == pytest.approx(8 * flat_s(MIB // 2) + 7 * CALL_S)
    assert len(shared.timing.op) == len(apart.timing.op) == 16


def test_mirror_write_on_one_disk_writes_both_copies_through_it_hand_computed():
    job = FioJob("write", MIB, 8 * MIB, end_fsync=False)
    p = predict_block_job(RaidArray("raid1", regions(2)), job, DRIVES)
    assert p.elapsed_s == pytest.approx(8 * 2 * flat_s(MIB) + 7 * CALL_S)


def test_a_btrfs_array_alone_is_refused_on_the_timed_path_naming_the_tool():
    # fio on a raw device: a btrfs array has none, it is its file system's own
    members = (Partition(0, GIB, disk="a"), Partition(0, GIB, disk="b"))
    array = RaidArray("raid0", members, chunk_size_bytes=64 * KIB, tool="btrfs")
    with pytest.raises(ValueError, match=r"^device \(raid\): tool = 'btrfs'") as err:
        predict_block_job(array, FioJob("read", MIB, 8 * MIB), DRIVES)
    assert "\n" not in str(err.value) and "btrfs file system" in str(err.value)
    assert NODE_SCHEMA.read(to_json_data(array)) == array


def test_a_btrfs_chunk_other_than_its_stripe_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="chunk_size_bytes: btrfs stripes its chunks in 65536 bytes"):
        RaidArray("raid0", regions(2), chunk_size_bytes=128 * KIB, tool="btrfs")


@pytest.mark.parametrize("fields, fragment", [
    ({"tool": "md", "data_offset_bytes": 4 * KIB}, "data_offset_bytes must be >= 8192 (got 4096)"),
    ({"tool": "md", "data_offset_bytes": 10 * KIB}, "data_offset_bytes must be a multiple of 4096 (got 10240)"),
    ({"tool": "lvm", "data_offset_bytes": MIB}, "data_offset_bytes: an array built by lvm has its metadata elsewhere"),
    ({"tool": "md", "data_offset_bytes": GIB}, "smallest member (1073741824 bytes) holds no whole 524288 bytes"),
])
def test_a_data_offset_md_cannot_have_is_refused_in_one_line(fields, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as err:
        RaidArray("raid0", regions(2), **fields)
    assert "\n" not in str(err.value)


def test_an_md_data_offset_goes_through_the_stack_json():
    array = RaidArray("raid1", regions(2), data_offset_bytes=8 * MIB)
    assert NODE_SCHEMA.read(to_json_data(array)) == array and array.size_bytes == GIB - 8 * MIB


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 4), st.sampled_from([4 * KIB, 64 * KIB, 512 * KIB]), st.sampled_from([4 * KIB, 256 * KIB, MIB]),
       st.booleans())
def test_striping_over_one_disk_never_faster_than_the_disk(n, chunk, size, is_write):
    array = RaidArray("raid0", regions(n), chunk_size_bytes=chunk)
    job = FioJob("randwrite" if is_write else "randread", size, 16 * size, end_fsync=False)
    striped = predict_block_job(array, job, DRIVES)
    alone = predict_block_job(regions(1)[0], job, DRIVES)
    assert striped.elapsed_s >= alone.elapsed_s * (1 - 1e-9)


@pytest.mark.integration
@pytest.mark.slow
def test_a_read_after_a_write_through_a_loop_layer_comes_from_the_device(tmp_path, monkeypatch):
    """The bench syncs and drops the page cache before each fio job: the read of what the write just put
    in the image's page cache must show on the scratch region's counters (64 MiB read), not from memory."""
    require_root()
    require_tools("losetup", "mkfs.ext4", "fio")
    from diskmodel.calibrate.bench.layers_bench import measure_stack
    from diskmodel.calibrate.harness import runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    node = nested_loop_files(Partition(MIB, 256 * MIB), 1)
    stack = Stack(FileSystemNode(node, kind="ext3"), (InMemoryDrive(flat_latency_disk(1e-3, 100e6, 10 * GIB), "sda"),))
    size = 32 * MIB
    write, read = measure_stack(stack, [FioJob("write", MIB, size, fresh=True), FioJob("read", MIB, size)],
                                scratch=tmp_path / "s.img")
    assert read.details["disk_sectors"]["sda"]["read"] * 512 >= size
    assert write.details["disk_sectors"]["sda"]["written"] * 512 >= size
    assert not (tmp_path / "s.img").exists()
