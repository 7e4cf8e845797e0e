"""The block layers' models (issue 14): RAID 0/1/5/6, thin volumes, loop files, block workloads.

Hand-computed cases use flat-latency disks (:func:`diskmodel.model.disk.flat_latency_disk`), on which a
random request of S bytes costs T_CO + T_rot/2 + S / R and a sequential one T_CO + S / R, so that every
expected time below is a sum a reader can redo by hand.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings, strategies as st

from diskmodel.model.block import BlockEnv, BlockRequests, block_time_of, chunk_size
from diskmodel.model.block_workloads import FileCopy, FioJob, fio_jobs
from diskmodel.model.disk import flat_latency_disk
from diskmodel.model.drives import PresetDrive
from diskmodel.model.loop_file import LoopFile, nested_loop_files
from diskmodel.model.nodes import to_json_data
from diskmodel.model.predict import BlockPrediction, CopyPrediction, predict
from diskmodel.model.raid import RaidArray, mirror, stripe_split
from diskmodel.model.stack import NODE_SCHEMA, FileSystemNode, Stack
from diskmodel.model.thin import MAPPINGS_PER_METADATA_BLOCK, ThinVolume
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.volumes import Partition, StripedVolume
from diskmodel.model import workload

CAPACITY = 10 * GIB


def flat(latency_s, rate):
    return flat_latency_disk(latency_s, rate, CAPACITY)


FAST = flat(1e-3, 100e6)   # 1 ms, 100 MB/s
SLOW = flat(3e-3, 50e6)    # 3 ms, 50 MB/s
ENV = BlockEnv({name: FAST for name in ("a", "c", "d", "e", "f", "g", "h")} | {"b": SLOW})


def part(disk="a", size=GIB):
    return Partition(0, size, f"/dev/{disk}1", disk)


def t_random(disk, size):
    """A random request of *size* on a flat disk, by hand: T_CO + T_rot/2 + S/R."""
    rate = disk.zone_rates_bytes_per_s()[0]
    return disk.command_overhead_s + disk.mean_rotational_latency_s + size / rate


def t_seq(disk, size):
    return disk.command_overhead_s + size / disk.zone_rates_bytes_per_s()[0]


def cost(node, size, **kw):
    return block_time_of(node, BlockRequests(size, **kw), ENV)


# ------------------------------------------------------------------ RAID 1

def test_mirror_hand_computed_unequal_members():
    m = mirror((part("a"), part("b")), read_policy="least_busy")
    assert cost(m, 4096, is_write=True).time_s == pytest.approx(t_random(SLOW, 4096))   # the slower member
    assert cost(m, 4096, is_write=True).member_ios == pytest.approx(2)
    assert cost(m, 4096).time_s == pytest.approx(t_random(FAST, 4096))                  # the faster member
    md = m.evolve(read_policy="md")
    assert cost(md, MIB, sequential=True).time_s == pytest.approx(t_seq(FAST, MIB))     # stays on members[0]
    assert cost(md, 4096).time_s == pytest.approx((t_random(FAST, 4096) + t_random(SLOW, 4096)) / 2)
    btrfs = m.evolve(read_policy="btrfs")
    assert cost(btrfs, MIB, sequential=True).time_s == pytest.approx((t_seq(FAST, MIB) + t_seq(SLOW, MIB)) / 2)
    # one reader whose pid chose the slow mirror reads at its pace alone
    assert cost(btrfs.evolve(read_member=1), MIB, sequential=True).time_s == pytest.approx(t_seq(SLOW, MIB))
    with pytest.raises(ValueError, match="read_member"):
        btrfs.evolve(read_policy="md", read_member=0)
    # least busy at depth 4: throughput is the sum of the members'
    deep = cost(m, 4096, queue_depth=4)
    assert deep.iops == pytest.approx(1 / t_random(FAST, 4096) + 1 / t_random(SLOW, 4096))
    # degraded: the survivor alone
    assert cost(m.evolve(failed_members=(0,)), 4096).time_s == pytest.approx(t_random(SLOW, 4096))


# ------------------------------------------------------------------ striping

def test_stripe_split_hand_computed():
    assert stripe_split(4 * KIB, 64 * KIB, 4) == {"single": 1.0, "mean_members": 1.0, "largest_piece_bytes": 4096}
    assert stripe_split(MIB, 64 * KIB, 4)["largest_piece_bytes"] == 256 * KIB
    # 96 KiB aligned to 96 KiB over 64 KiB chunks: always two chunks, 64 + 32 KiB
    split = stripe_split(96 * KIB, 64 * KIB, 4)
    assert split["single"] == 0 and split["mean_members"] == 2 and split["largest_piece_bytes"] == 64 * KIB
    # 128 KiB chunks, 64 KiB requests: never span
    assert stripe_split(64 * KIB, 128 * KIB, 3)["single"] == 1.0


def test_raid0_and_lvm_striped_hand_computed():
    members = tuple(part(d) for d in "acde")
    r0 = RaidArray("raid0", members, chunk_size_bytes=64 * KIB)
    assert r0.size_bytes == 4 * GIB
    one_mib = cost(r0, MIB)
    assert one_mib.time_s == pytest.approx(t_random(FAST, 256 * KIB))  # four 256 KiB pieces at once
    assert one_mib.member_ios == pytest.approx(4)
    assert cost(r0, 4096).time_s == pytest.approx(t_random(FAST, 4096))
    # the LVM striped volume is the same RAID 0 over its PVs (its data starts pe_start into each)
    lvm = StripedVolume(members, stripe_size_bytes=64 * KIB)
    assert cost(lvm, MIB).time_s == pytest.approx(one_mib.time_s)


# ------------------------------------------------------------------ RAID 5 / 6

def test_raid5_small_write_is_read_modify_write():
    r5 = RaidArray("raid5", tuple(part(d) for d in "acdef"), chunk_size_bytes=64 * KIB)  # d = 4
    small = cost(r5, 4096, is_write=True)
    assert small.member_ios == pytest.approx(4)                                            # 2 reads, then 2 writes
    assert small.time_s == pytest.approx(2 * t_random(FAST, 4096))
    assert cost(r5, 4096).time_s == pytest.approx(t_random(FAST, 4096))     # parity free on reads
    assert cost(r5, 4096).member_ios == pytest.approx(1)
    full = cost(r5, 256 * KIB, is_write=True)                               # one whole row: no reads
    assert full.member_ios == pytest.approx(5)
    assert full.time_s == pytest.approx(t_random(FAST, 64 * KIB))
    assert r5.size_bytes == 4 * GIB


def test_raid6_small_write_six_ios_and_narrow_arrays_reconstruct():
    r6 = RaidArray("raid6", tuple(part(d) for d in "acdefgh"), chunk_size_bytes=64 * KIB)  # d = 5
    small = cost(r6, 4096, is_write=True)
    assert small.member_ios == pytest.approx(6) and small.time_s == pytest.approx(2 * t_random(FAST, 4096))
    # 3-member RAID 5: reconstruct-write (read the other data chunk) is cheaper: 1 read + 2 writes
    narrow = RaidArray("raid5", (part("a"), part("c"), part("d")), chunk_size_bytes=64 * KIB)
    assert cost(narrow, 4096, is_write=True).member_ios == pytest.approx(3)


def test_raid5_degraded_read_rebuilds_from_survivors():
    r5 = RaidArray("raid5", tuple(part(d) for d in "acdef"), chunk_size_bytes=64 * KIB, failed_members=(2,))
    read = cost(r5, 4096)
    # a fifth of the reads land on the failed member and read the 4 survivors: 4/5 * 1 + 1/5 * 4
    assert read.member_ios == pytest.approx(1.6)
    assert read.time_s == pytest.approx(t_random(FAST, 4096))


# ------------------------------------------------------------------ thin

def test_thin_first_write_and_overwrite_hand_computed():
    thin = ThinVolume(part("a"), pool_size_bytes=512 * MIB, virtual_size_bytes=2 * GIB, chunk_size_bytes=64 * KIB)
    over = cost(thin, 4096, is_write=True)
    assert over.time_s == pytest.approx(t_random(FAST, 4096))
    first = cost(thin, 4096, is_write=True, fresh=True)
    # the write, the zeroing of its 64 KiB chunk, a B-tree leaf and a space-map block
    assert first.time_s == pytest.approx(t_random(FAST, 4096) + t_random(FAST, 64 * KIB) + 2 * t_random(FAST, 4096))
    seq = cost(thin, MIB, is_write=True, sequential=True, fresh=True)   # 16 whole chunks: no zeroing
    assert seq.time_s == pytest.approx(t_seq(FAST, MIB) + 2 * 16 / MAPPINGS_PER_METADATA_BLOCK * t_random(FAST, 4096))
    # a random 1 MiB first write: 16 whole chunks sharing one leaf and one space-map block
    assert cost(thin, MIB, is_write=True, fresh=True).time_s == pytest.approx(
        t_random(FAST, MIB) + 2 * t_random(FAST, 4096))
    assert cost(thin, 4096, fresh=True).time_s == 0.0                    # an unwritten chunk reads as zeros
    assert thin.size_bytes == 2 * GIB and thin.free_bytes == 512 * MIB


# ------------------------------------------------------------------ loop files

def test_loop_file_layers_hand_computed():
    base = part("a")
    one = LoopFile(base, 512 * MIB, allocation="zero_filled", copy_rate_bytes_per_s=1e9, request_overhead_s=1e-5)
    two = LoopFile(one, 256 * MIB, allocation="zero_filled", copy_rate_bytes_per_s=1e9, request_overhead_s=1e-5)
    layer = 1e-5 + MIB / 1e9
    assert cost(one, MIB, sequential=True).time_s == pytest.approx(t_seq(FAST, MIB) + layer)
    assert cost(two, MIB, sequential=True).time_s == pytest.approx(t_seq(FAST, MIB) + 2 * layer)
    assert two.depth == 2
    # zero-filled: a first write costs nothing more; sparse on ext2, allocating 1 MiB at once: one in-place
    # metadata write per MiB
    assert cost(one, MIB, sequential=True, is_write=True, fresh=True).time_s == pytest.approx(
        t_seq(FAST, MIB) + layer)
    sparse = one.evolve(allocation="sparse", host_file_system="ext2", allocation_unit_bytes=MIB)
    assert cost(sparse, MIB, sequential=True, is_write=True, fresh=True).time_s == pytest.approx(
        t_seq(FAST, MIB) + layer + t_random(FAST, 12 * KIB))
    journaled = sparse.evolve(host_file_system="ext4")       # and appended to the journal first
    assert cost(journaled, MIB, sequential=True, is_write=True, fresh=True).time_s == pytest.approx(
        t_seq(FAST, MIB) + layer + t_random(FAST, 12 * KIB) + t_seq(FAST, 12 * KIB))
    # fragmented: 512 extents of 1 MiB, every 1 MiB request crosses into the next and positions again
    fragmented = one.evolve(extent_count=512)
    assert cost(fragmented, MIB, sequential=True).time_s == pytest.approx(
        t_seq(FAST, MIB) + layer + (t_random(FAST, MIB) - t_seq(FAST, MIB)))
    direct = one.evolve(direct_io=True)
    assert cost(direct, MIB, sequential=True).time_s == pytest.approx(t_seq(FAST, MIB) + 1e-5)
    # buffered sequential 4 KiB reads: one 128 KiB host read-ahead per 32 requests
    small = cost(one, 4096, sequential=True)
    assert small.time_s == pytest.approx(t_seq(FAST, 128 * KIB) / 32 + 1e-5 + 4096 / 1e9)
    # two windows in flight: the disk's command overhead overlaps the other window's transfer
    assert small.rate_bytes_per_s == pytest.approx(4096 / ((128 * KIB / 100e6) / 32 + 1e-5 + 4096 / 1e9))
    assert cost(direct, 4096, sequential=True).time_s == pytest.approx(t_seq(FAST, 4096) + 1e-5)
    # buffered writes go out at the flusher's depth (128): the disk's fixed cost overlaps the other requests'
    # transfers, so the stream runs at the transfer; direct I/O keeps fio's depth 1
    assert cost(one, MIB, sequential=True, is_write=True).rate_bytes_per_s == pytest.approx(
        MIB / (MIB / 100e6 + layer))
    assert cost(direct, MIB, sequential=True, is_write=True).rate_bytes_per_s == pytest.approx(
        MIB / (t_seq(FAST, MIB) + 1e-5))
    # the copy from cached pages on a read at its own rate
    assert cost(one.evolve(read_copy_rate_bytes_per_s=4e9), MIB, sequential=True).time_s == pytest.approx(
        t_seq(FAST, MIB) + 1e-5 + MIB / 4e9)
    # a 64 MiB write stream, 16 MiB of it absorbed by the host's page cache (the copy alone)
    absorbing = one.evolve(dirty_limit_bytes=16 * MIB)
    stream = cost(absorbing, MIB, sequential=True, is_write=True, stream_bytes=64 * MIB)
    assert stream.time_s == pytest.approx(0.25 * layer + 0.75 * (t_seq(FAST, MIB) + layer))
    assert cost(absorbing, MIB, sequential=True, is_write=True).time_s == pytest.approx(t_seq(FAST, MIB) + layer)


# ------------------------------------------------------------------ properties

disks = st.builds(flat, st.floats(5e-4, 2e-2), st.floats(2e7, 2e9))
sizes = st.sampled_from([4 * KIB, 64 * KIB, 256 * KIB, MIB])


@settings(max_examples=40, deadline=None)
@given(disks, disks, sizes, st.booleans(), st.sampled_from(["least_busy", "md", "btrfs"]))
def test_mirror_write_never_faster_than_fastest_member(a, b, size, sequential, policy):
    env = BlockEnv({"a": a, "b": b})
    m = mirror((part("a"), part("b")), read_policy=policy)
    request = BlockRequests(size, is_write=True, sequential=sequential)
    members = [block_time_of(p, request, env).time_s for p in (part("a"), part("b"))]
    assert block_time_of(m, request, env).time_s >= min(members) - 1e-15
    assert block_time_of(m, request, env).time_s == pytest.approx(max(members))


@settings(max_examples=40, deadline=None)
@given(disks, st.integers(2, 8), st.sampled_from([4 * KIB, 64 * KIB, 512 * KIB]), st.integers(0, 3))
def test_striping_never_slower_than_one_member_on_large_reads(disk, n, chunk, extra):
    env = BlockEnv({f"d{i}": disk for i in range(n)})
    members = tuple(Partition(0, GIB, "", f"d{i}") for i in range(n))
    size = n * chunk * 2 ** extra
    for sequential in (False, True):
        request = BlockRequests(size, sequential=sequential)
        striped = block_time_of(RaidArray("raid0", members, chunk_size_bytes=chunk), request, env).time_s
        assert striped <= block_time_of(members[0], request, env).time_s + 1e-15


@settings(max_examples=30, deadline=None)
@given(disks, st.integers(0, 3), sizes, st.booleans(), st.booleans(), st.sampled_from(["sparse", "zero_filled"]),
       st.sampled_from([None, 8 * MIB]))
def test_more_nested_loop_layers_never_faster(disk, depth, size, is_write, sequential, allocation, dirty):
    # Two exceptions on the first layer only, where a buffered loop device beats its bare host: small
    # sequential reads served by the host's read-ahead, and writes absorbed by the host's page cache.
    assume(depth > 0 or not (sequential and not is_write and size < 128 * KIB))
    assume(depth > 0 or dirty is None)
    env = BlockEnv({"a": disk})
    request = BlockRequests(size, is_write=is_write, sequential=sequential, fresh=is_write, stream_bytes=64 * MIB)
    shallow = nested_loop_files(part("a"), depth, allocation=allocation, dirty_limit_bytes=dirty)
    deeper = nested_loop_files(part("a"), depth + 1, allocation=allocation, dirty_limit_bytes=dirty)
    assert block_time_of(deeper, request, env).time_s >= block_time_of(shallow, request, env).time_s


@settings(max_examples=30, deadline=None)
@given(disks, sizes, st.booleans(), st.sampled_from([64 * KIB, 256 * KIB, MIB]), st.booleans())
def test_thin_overwrite_never_slower_than_first_write(disk, size, sequential, chunk, zero):
    env = BlockEnv({"a": disk})
    thin = ThinVolume(part("a"), 512 * MIB, GIB, chunk_size_bytes=chunk, zero_new_chunks=zero)
    request = BlockRequests(size, is_write=True, sequential=sequential)
    assert block_time_of(thin, request, env).time_s <= block_time_of(thin, request.evolve(fresh=True), env).time_s


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("make, field", [
    (lambda: RaidArray("raid5", (part("a"), part("c"))), "members: RAID 5 needs at least 3"),
    (lambda: RaidArray("raid6", (part("a"), part("c"), part("d"))), "members: RAID 6 needs at least 4"),
    (lambda: RaidArray("raid0", (part("a"), part("c")), chunk_size_bytes=48 * KIB), "chunk_size_bytes"),
    (lambda: RaidArray("raid0", (part("a"), part("c")), chunk_size_bytes=2048), "chunk_size_bytes"),
    (lambda: RaidArray("raid1", (part("a"), part("c")), array_size_bytes=2 * GIB), "array_size_bytes"),
    (lambda: RaidArray("raid5", tuple(part(d) for d in "acd"), failed_members=(0, 1)), "failed_members"),
    (lambda: ThinVolume(part("a"), pool_size_bytes=MIB, virtual_size_bytes=GIB), "smaller than its metadata"),
    (lambda: ThinVolume(part("a"), 512 * MIB, GIB, chunk_size_bytes=96 * KIB), "chunk_size_bytes"),
    (lambda: ThinVolume(part("a", size=64 * MIB), 512 * MIB, GIB), "does not fit data"),
    (lambda: LoopFile(part("a", size=64 * MIB), 128 * MIB), "image_size_bytes"),
    (lambda: LoopFile(part("a"), MIB, allocation="dense"), "allocation"),
    (lambda: FioJob("trim"), "rw"),
])
def test_bad_layers_refused_naming_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_chunk_size_rule():
    assert chunk_size("chunk_size_bytes", 4096) == 4096
    for bad in (0, 2048, 3 * 4096, 4096.5, True):
        with pytest.raises(ValueError, match="chunk_size_bytes"):
            chunk_size("chunk_size_bytes", bad)


def test_stack_json_names_the_node_of_a_bad_layer():
    stack = Stack(FileSystemNode(RaidArray("raid5", tuple(part(d) for d in "acd")), kind="ext4"),
                  tuple(PresetDrive("wd800bd", d) for d in "acd"))
    data = json.loads(stack.to_json())
    data["file_system"]["volume"]["members"].pop()
    with pytest.raises(ValueError, match=r"file_system.volume \(raid5\): members: RAID 5 needs at least 3"):
        Stack.from_json_data(data)


# ------------------------------------------------------------------ JSON and predict

def layered_nodes():
    members = tuple(part(d) for d in "acde")
    return [
        mirror((part("a"), part("b")), read_policy="least_busy", failed_members=(1,)),
        RaidArray("raid0", members[:2], chunk_size_bytes=128 * KIB, tool="btrfs"),
        RaidArray("raid5", members, chunk_size_bytes=64 * KIB, tool="lvm", array_size_bytes=GIB),
        RaidArray("raid6", members),
        ThinVolume(members[0], 512 * MIB, 2 * GIB, used_bytes=MIB, zero_new_chunks=False),
        nested_loop_files(part("a"), 3, allocation="zero_filled", extent_count=7),
        ThinVolume(mirror(members[:2]), 256 * MIB, GIB),
    ]


@pytest.mark.parametrize("node", layered_nodes(), ids=lambda n: type(n).__name__)
def test_json_round_trip_of_each_node_type(node):
    data = json.loads(json.dumps(to_json_data(node)))
    assert NODE_SCHEMA.read(data) == node


@pytest.mark.slow  # several seconds: the full tier runs it
def test_predict_block_workloads_on_a_stack_read_from_json():
    volume = ThinVolume(mirror((part("a"), part("b"))), 256 * MIB, GIB)
    stack = Stack(FileSystemNode(volume, kind="ext4"), (PresetDrive("wd800bd", "a"), PresetDrive("hp97560", "b")))
    again = Stack.from_json(stack.to_json())
    assert again == stack
    job = fio_jobs()["randwrite_4k"]
    p = predict(again, job)
    assert isinstance(p, BlockPrediction)
    # every request of the job timed on the drives below the thin pool and its mirror
    assert p.elapsed_s >= p.timed.timing.device_frame()["busy_s"].max() > 0
    assert p.iops == pytest.approx(job.expected_counts()["requests"] / p.elapsed_s)
    copy = predict(again, FileCopy(file_sizes_bytes=(MIB, 5 * MIB), repeats=2))
    assert isinstance(copy, CopyPrediction) and len(copy.rows) == 2
    assert copy.rows[1]["write_s"] > copy.rows[0]["write_s"] > 0
    from diskmodel.model.workload import PostMarkConfig

    timed = predict(again, PostMarkConfig(number_of_files=100, transactions=200))  # on the I/O path
    assert set(timed.timing.devices) == {"a", "b"}


def test_block_workloads_join_workload_and_count():
    assert workload.FioJob is FioJob and workload.FileCopy is FileCopy and workload.fio_jobs is fio_jobs
    jobs = fio_jobs(8 * MIB)
    assert sorted(jobs) == sorted(f"{p}{rw}_{bs}" for p in ("seq", "rand") for rw in ("read", "write")
                                  for bs in ("4k", "1m"))
    assert jobs["seqread_4k"].expected_counts() == {"requests": 2048.0, "bytes_read": 8 * MIB, "bytes_written": 0.0}
    assert "--rw=randwrite" in jobs["randwrite_1m"].fio_arguments("/dev/loop0")
    counts = FileCopy().expected_counts("ext3")
    assert [c["size_bytes"] for c in counts] == [s * MIB for s in (1, 5, 10, 25, 50)]
    # 50 MiB: 100 write-back requests of 512 KiB, 400 read-ahead windows, (4 + 13 indirect) blocks journaled twice
    assert counts[-1]["data_write_requests"] == 100 and counts[-1]["data_read_requests"] == 400
    assert counts[-1]["metadata_writes"] == 34
    assert FileCopy().expected_counts("ext2")[-1]["metadata_writes"] == 17


def test_linear_volume_over_two_disks_averages_by_extents():
    from diskmodel.model.volumes import LinearVolume

    lv = LinearVolume((part("a"), part("b", size=GIB // 2)))
    share = 255 / (255 + 127)   # whole 4 MiB extents after the 1 MiB PE start: 1023 // 4 and 511 // 4
    assert cost(lv, 4096).time_s == pytest.approx(share * t_random(FAST, 4096) + (1 - share) * t_random(SLOW, 4096))


@pytest.mark.slow  # several seconds: the full tier runs it
def test_what_if_tables_of_the_layers():
    from diskmodel.model.scenarios import loop_depth_table, mirror_table, raid_level_table, thin_table

    jobs = {k: j for k, j in fio_jobs(8 * MIB).items() if k in ("randwrite_4k", "seqread_1m")}
    mirrors = mirror_table(FAST, SLOW, jobs, size_bytes=GIB).set_index(["layer", "job"]).throughput_bytes_per_s
    # Timed on the drives: a mirrored write completes with its slower member, by hand T_CO + T_rot/2 + S/R
    # (the simulated random positions give the expectation within sampling)
    for policy in ("least_busy", "md", "btrfs"):
        assert mirrors[(f"raid1 ({policy})", "randwrite_4k")] == pytest.approx(4096 / t_random(SLOW, 4096), rel=0.01)
    assert mirrors[("raid1 (least_busy)", "seqread_1m")] == pytest.approx(MIB / t_seq(FAST, MIB), rel=0.01)
    levels = raid_level_table(FAST, 5, jobs, size_bytes=GIB).set_index(["layer", "job"])
    assert levels.member_ios[("raid5", "randwrite_4k")] == pytest.approx(4, abs=0.01)
    assert levels.member_ios[("raid6", "randwrite_4k")] == pytest.approx(5, abs=0.01)   # 5 members: reconstruct-write
    thin = thin_table(FAST, (64 * KIB,), jobs).set_index(["layer", "pass", "job"]).throughput_bytes_per_s
    assert thin[("thin, 64 KiB chunks", "first write", "randwrite_4k")] < \
        thin[("thin, 64 KiB chunks", "overwrite", "randwrite_4k")]
    loops = loop_depth_table(FAST, (0, 1, 2), jobs).set_index(["layer", "job"]).throughput_bytes_per_s
    # a zero-filled image is allocated: each layer adds the host file system's requests, never removes any
    for job in jobs:
        assert loops[("disk", job)] >= loops[("1 loop, zero-filled", job)] >= loops[("2 loop, zero-filled", job)]


def test_sequential_requests_in_flight_overlap_the_fixed_cost():
    # q requests in flight: the interval is a q-th of one's time, down to its transfer (1 MiB at 100 MB/s)
    alone, deep = cost(part("a"), MIB, sequential=True), cost(part("a"), MIB, sequential=True, queue_depth=4)
    assert deep.time_s == pytest.approx(alone.time_s) == pytest.approx(t_seq(FAST, MIB))
    assert deep.interval_s == pytest.approx(MIB / 100e6)
    small = cost(part("a"), 4096, sequential=True, queue_depth=4)     # overhead-bound: a quarter of one's time
    assert small.interval_s == pytest.approx(t_seq(FAST, 4096) / 4)


def test_fio_write_jobs_end_with_fsync_unless_told():
    job = FioJob("write", MIB, 64 * MIB)
    assert job.requests().stream_bytes is None and "--end_fsync=1" in job.fio_arguments("/dev/loop0")
    lazy = job.evolve(end_fsync=False)
    assert lazy.requests().stream_bytes == 64 * MIB and "--end_fsync=1" not in lazy.fio_arguments("/dev/loop0")
    assert "--end_fsync=1" not in FioJob("read", MIB, MIB).fio_arguments("/dev/loop0")
