"""Members on one device, and btrfs's data path (issue 14, revised after layers_check's 29.0 % run).

Hand-computed cases on flat-latency disks (a sequential request of S bytes costs T_CO + S / R): members
that are partitions of one disk are served together as one request of their summed size, so striping
over them is never faster than the disk itself; btrfs's data path adds its fixed and per-byte costs in
series with the members' I/O.  The integration test checks that the bench's reads come from the device,
not from the page cache the write left: the scratch regions' counters show the job's bytes read.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from conftest import require_root, require_tools
from diskmodel.model.block import BlockEnv, BlockRequests, block_time_of
from diskmodel.model.block_workloads import FioJob
from diskmodel.model.disk import flat_latency_disk
from diskmodel.model.drives import InMemoryDrive
from diskmodel.model.loop_file import nested_loop_files
from diskmodel.model.nodes import to_json_data
from diskmodel.model.raid import RaidArray
from diskmodel.model.stack import NODE_SCHEMA, FileSystemNode, Stack
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.volumes import Partition

FAST = flat_latency_disk(1e-3, 100e6, 10 * GIB)      # T_CO 1 ms, R 100 MB/s
ENV = BlockEnv({"a": FAST, "b": FAST})


def t_seq(size):
    return FAST.command_overhead_s + size / FAST.zone_rates_bytes_per_s()[0]


def regions(n, disk="a"):
    """n partitions of one disk, one after the other."""
    return tuple(Partition(i * GIB, GIB, disk=disk) for i in range(n))


def test_striping_over_one_disk_is_one_request_of_the_whole_size_hand_computed():
    # 1 MiB aligned on a 64 KiB chunk over 2 members: 512 KiB on each, always
    one = RaidArray("raid0", regions(2), chunk_size_bytes=64 * KIB)
    two = RaidArray("raid0", (Partition(0, GIB, disk="a"), Partition(0, GIB, disk="b")), chunk_size_bytes=64 * KIB)
    shared = block_time_of(one, BlockRequests(MIB, sequential=True), ENV)
    apart = block_time_of(two, BlockRequests(MIB, sequential=True), ENV)
    assert shared.time_s == pytest.approx(t_seq(MIB))          # 1 ms + 10.49 ms
    assert apart.time_s == pytest.approx(t_seq(MIB // 2))      # 1 ms + 5.24 ms
    assert shared.member_ios == apart.member_ios == 2


def test_mirror_write_on_one_disk_writes_both_copies_through_it_hand_computed():
    array = RaidArray("raid1", regions(2))
    t = block_time_of(array, BlockRequests(MIB, is_write=True, sequential=True), ENV)
    assert t.time_s == pytest.approx(t_seq(2 * MIB))           # 1 ms + 20.97 ms


def test_btrfs_data_path_adds_its_costs_in_series_hand_computed():
    members = (Partition(0, GIB, disk="a"), Partition(0, GIB, disk="b"))
    costs = {"fs_write_request_s": 100e-6, "fs_write_s_per_byte": 2e-9, "fs_read_request_s": 10e-6,
             "fs_read_s_per_byte": 0.5e-9}
    array = RaidArray("raid0", members, chunk_size_bytes=64 * KIB, tool="btrfs", **costs)
    bare = array.evolve(**{k: 0.0 for k in costs})
    write = BlockRequests(MIB, is_write=True, sequential=True)
    read = BlockRequests(4 * KIB)
    assert block_time_of(array, write, ENV).time_s == pytest.approx(
        block_time_of(bare, write, ENV).time_s + 100e-6 + MIB * 2e-9)      # + 0.1 ms + 2.10 ms
    t = block_time_of(array, read, ENV)
    assert t.time_s == pytest.approx(block_time_of(bare, read, ENV).time_s + 10e-6 + 4096 * 0.5e-9)
    assert t.parts["btrfs_data_path_s"] == pytest.approx(10e-6 + 4096 * 0.5e-9)
    assert NODE_SCHEMA.read(to_json_data(array)) == array


@pytest.mark.parametrize("fields, message", [
    ({"tool": "md", "fs_write_s_per_byte": 1e-9}, "fs_write_s_per_byte"),
    ({"tool": "btrfs", "fs_read_request_s": -1.0}, "fs_read_request_s"),
])
def test_data_path_costs_refused_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        RaidArray("raid0", regions(2), chunk_size_bytes=64 * KIB, **fields)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.sampled_from([4 * KIB, 64 * KIB, 512 * KIB]), st.sampled_from([4 * KIB, 256 * KIB,
                                                                                            MIB, 4 * MIB]),
       st.booleans(), st.booleans())
def test_striping_over_one_disk_never_faster_than_the_disk(n, chunk, size, sequential, is_write):
    array = RaidArray("raid0", regions(n), chunk_size_bytes=chunk)
    requests = BlockRequests(size, is_write=is_write, sequential=sequential)
    striped = block_time_of(array, requests, ENV)
    alone = block_time_of(regions(1)[0], requests, ENV)
    assert striped.time_s >= alone.time_s * (1 - 1e-9)
    assert striped.rate_bytes_per_s <= alone.rate_bytes_per_s * (1 + 1e-9)


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
    stack = Stack(FileSystemNode(node, kind="ext3"), (InMemoryDrive(FAST, "sda"),))
    size = 32 * MIB
    write, read = measure_stack(stack, [FioJob("write", MIB, size, fresh=True), FioJob("read", MIB, size)],
                                scratch=tmp_path / "s.img")
    assert read.details["disk_sectors"]["sda"]["read"] * 512 >= size
    assert write.details["disk_sectors"]["sda"]["written"] * 512 >= size
    assert not (tmp_path / "s.img").exists()
