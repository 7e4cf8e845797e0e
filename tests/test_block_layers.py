"""The block layers' models (issue 14): RAID 0/1/5/6, thin volumes, loop files, block workloads.

The layers' requests are timed on flat drives (:class:`diskmodel.model.iopath.timing.FlatDrive`), on
which a request of S bytes costs its latency plus S at the drive's rate, so that every expected time
below is a sum a reader can redo by hand; the request counts are md's, dm-thin's and the loop driver's
mechanisms (:mod:`diskmodel.model.iopath`).
"""
from __future__ import annotations

import json

import pytest

from diskmodel.model.stacks.block import chunk_size
from diskmodel.model.predictions.block_workloads import FileCopy, FioJob, fio_jobs
from diskmodel.model.drive.disk import flat_latency_disk
from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.iopath.stream import Op
from diskmodel.model.iopath.timing import FlatDrive
from diskmodel.model.stacks.loop_file import LoopFile, nested_loop_files
from diskmodel.model.stacks.nodes import to_json_data
from diskmodel.model.predict import BlockPrediction, predict
from diskmodel.model.predictions.results import CopyPrediction, predict_block_job
from diskmodel.model.stacks.raid import RaidArray, mirror, stripe_split
from diskmodel.model.stacks.stack import NODE_SCHEMA, FileSystemNode, Stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.stacks.volumes import Partition, StripedVolume
from diskmodel.model.predictions import workload

CAPACITY = 10 * GIB


FAST = FlatDrive(1e-3, 100e6, CAPACITY)   # 1 ms, 100 MB/s
SLOW = FlatDrive(3e-3, 50e6, CAPACITY)    # 3 ms, 50 MB/s
DRIVES = {name: FAST for name in ("a", "c", "d", "e", "f", "g", "h")} | {"b": SLOW}


def part(disk="a", size=GIB):
    return Partition(0, size, f"/dev/{disk}1", disk)


def flat_s(drive, size):
    """One request of *size* on a flat drive, by hand: its latency plus its bytes at its rate."""
    return drive.latency_s + size / drive.bytes_per_s


CALL_S = 2e-6  # the application's time per system call between requests (model.prediction)


def timed(node, job):
    return predict_block_job(node, job, DRIVES)


def per_request(p, job) -> dict:
    """Requests each drive served (flushes aside), per request of the job."""
    t = p.timing
    count = job.size_bytes // job.block_size_bytes
    return {name: int(((t.device == k) & (t.op != Op.FLUSH)).sum()) / count for k, name in enumerate(t.devices)}


RANDWRITE = FioJob("randwrite", 4 * KIB, 256 * KIB, end_fsync=False)


# ------------------------------------------------------------------ RAID 1

def test_a_mirrored_write_goes_to_both_members_and_waits_for_the_slower():
    # O_DIRECT writes at depth 1: each is on both drives at once and done when the slower is
    p = timed(mirror((part("a"), part("b"))), RANDWRITE)
    assert per_request(p, RANDWRITE) == {"a": 1.0, "b": 1.0}
    assert p.elapsed_s == pytest.approx(64 * flat_s(SLOW, 4 * KIB) + 63 * CALL_S, rel=1e-9)


def test_stripe_split_hand_computed():
    assert stripe_split(4 * KIB, 64 * KIB, 4) == {"single": 1.0, "mean_members": 1.0, "largest_piece_bytes": 4096}
    assert stripe_split(MIB, 64 * KIB, 4)["largest_piece_bytes"] == 256 * KIB
    # 96 KiB aligned to 96 KiB over 64 KiB chunks: always two chunks, 64 + 32 KiB
    split = stripe_split(96 * KIB, 64 * KIB, 4)
    assert split["single"] == 0 and split["mean_members"] == 2 and split["largest_piece_bytes"] == 64 * KIB
    # 128 KiB chunks, 64 KiB requests: never span
    assert stripe_split(64 * KIB, 128 * KIB, 3)["single"] == 1.0


def test_a_large_read_on_raid0_is_split_over_the_members_at_once():
    # 1 MiB reads on 4 members of 64 KiB chunks: 256 KiB on each member (one request each), at once
    job = FioJob("read", MIB, 8 * MIB)
    p = timed(RaidArray("raid0", tuple(part(d) for d in "acde"), chunk_size_bytes=64 * KIB), job)
    assert per_request(p, job) == {d: 1.0 for d in "acde"}
    assert p.elapsed_s == pytest.approx(8 * flat_s(FAST, 256 * KIB) + 7 * CALL_S, rel=1e-9)


@pytest.mark.parametrize("tool, first_on_member", [("md", MIB), ("lvm", 0)])
def test_an_md_array_puts_its_data_after_its_data_offset_on_each_member(tool, first_on_member):
    # md's data start 1 MiB into each member by default (mdadm --data-offset; the superblock before), dm-stripe's
    # at the member's start: the job's first bytes are at that offset on the first member
    array = RaidArray("raid0", tuple(part(d) for d in "ac"), chunk_size_bytes=64 * KIB, tool=tool)
    assert array.size_bytes == 2 * (GIB - first_on_member)
    on_a = timed(array, FioJob("read", 64 * KIB, 256 * KIB)).streams["a"]
    reads = on_a.op == Op.READ
    assert on_a.offset_bytes[reads].tolist() == [first_on_member, first_on_member + 64 * KIB]


# ------------------------------------------------------------------ parity

@pytest.mark.parametrize("kind, members, reads, writes", [
    ("raid5", 5, 2, 2),   # read-modify-write: the old data and parity, then both
    ("raid6", 5, 2, 3),   # 3 data chunks: reconstruct-write reads the 2 untouched, writes data + P + Q
    ("raid6", 4, 1, 3),   # 2 data chunks: reconstruct-write reads the other one
])
def test_a_small_parity_write_reads_before_it_writes(kind, members, reads, writes):
    # md raid5 handle_stripe: the cheaper of read-modify-write and reconstruct-write
    p = timed(RaidArray(kind, tuple(part(d) for d in "acdef"[:members]), chunk_size_bytes=64 * KIB), RANDWRITE)
    t = p.timing
    n = 64
    assert int((t.op == Op.READ).sum()) == reads * n and int((t.op == Op.WRITE).sum()) == writes * n
    # the reads at once, then the writes at once: two flat requests per write
    assert p.elapsed_s == pytest.approx(n * 2 * flat_s(FAST, 4 * KIB) + (n - 1) * CALL_S, rel=1e-9)


def test_a_degraded_array_is_refused_naming_the_field():
    array = RaidArray("raid5", tuple(part(d) for d in "acd"), failed_members=(0,))
    with pytest.raises(ValueError, match=r"failed_members = \[0\]") as err:
        timed(array, RANDWRITE)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------ thin and loop

def test_a_thin_first_write_zeroes_its_chunk_and_commits_metadata_on_the_data_drive():
    volume = ThinVolume(part("a"), 512 * MIB, GIB, chunk_size_bytes=64 * KIB)
    # fio --size=512M --io_size=256K: 64 writes spread over 512 MiB, nearly each in a chunk of its own
    job = RANDWRITE.evolve(end_fsync=True, region_bytes=512 * MIB)
    first, again = timed(volume, job.evolve(fresh=True)), timed(volume, job)
    data = first.streams["a"]
    written = data.size_bytes[data.op == Op.WRITE]
    # each 4 KiB first write into a new 64 KiB chunk: the chunk zeroed, then the data (dm-thin schedule_zero)
    assert int((written == 64 * KIB).sum()) >= 60
    meta = first.streams[next(n for n in first.streams if n.endswith("-meta"))]
    assert (meta.op == Op.WRITE).any()
    # the metadata commits are timed on the data drive, after the pool's data area
    assert (data.offset_bytes[data.op == Op.WRITE] >= 512 * MIB).any()
    assert again.elapsed_s < first.elapsed_s


def test_each_nested_loop_layer_adds_the_host_requests_and_never_removes_any():
    # spread over 512 MiB (fio --size=512M --io_size=1M): no two writes share a page-cache page or merge in
    # a buffered image's write-back (over a 1 MiB region they would, and a buffered layer would be quicker)
    job = FioJob("randwrite", 4 * KIB, MIB, region_bytes=512 * MIB)
    base = part("a")
    elapsed = [timed(nested_loop_files(base, depth, allocation="zero_filled"), job).elapsed_s for depth in (0, 1, 2)]
    assert elapsed[0] <= elapsed[1] <= elapsed[2]


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
        RaidArray("raid0", members[:2], chunk_size_bytes=64 * KIB, tool="btrfs"),
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
    from diskmodel.model.predictions.workload import PostMarkConfig

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


@pytest.mark.slow  # several seconds: the full tier runs it
def test_what_if_tables_of_the_layers():
    from diskmodel.model.predictions.scenarios import loop_depth_table, mirror_table, raid_level_table, thin_table

    fast, slow = flat_latency_disk(1e-3, 100e6, CAPACITY), flat_latency_disk(3e-3, 50e6, CAPACITY)

    def t_random(disk, size):   # T_CO + T_rot/2 + S/R
        return disk.command_overhead_s + disk.mean_rotational_latency_s + size / disk.zone_rates_bytes_per_s()[0]

    def t_seq(disk, size):
        return disk.command_overhead_s + size / disk.zone_rates_bytes_per_s()[0]

    jobs = {k: j for k, j in fio_jobs(8 * MIB).items() if k in ("randwrite_4k", "seqread_1m")}
    mirrors = mirror_table(fast, slow, jobs, size_bytes=GIB).set_index(["layer", "job"]).throughput_bytes_per_s
    # Timed on the drives: a mirrored write completes with its slower member, by hand T_CO + T_rot/2 + S/R
    # (the simulated random positions give the expectation within sampling)
    for policy in ("least_busy", "md", "btrfs"):
        assert mirrors[(f"raid1 ({policy})", "randwrite_4k")] == pytest.approx(4096 / t_random(slow, 4096), rel=0.01)
    assert mirrors[("raid1 (least_busy)", "seqread_1m")] == pytest.approx(MIB / t_seq(fast, MIB), rel=0.01)
    levels = raid_level_table(fast, 5, jobs, size_bytes=GIB).set_index(["layer", "job"])
    assert levels.member_ios[("raid5", "randwrite_4k")] == pytest.approx(4, abs=0.01)
    assert levels.member_ios[("raid6", "randwrite_4k")] == pytest.approx(5, abs=0.01)   # 5 members: reconstruct-write
    thin = thin_table(fast, (64 * KIB,), jobs).set_index(["layer", "pass", "job"]).throughput_bytes_per_s
    assert thin[("thin, 64 KiB chunks", "first write", "randwrite_4k")] < \
        thin[("thin, 64 KiB chunks", "overwrite", "randwrite_4k")]
    # a zero-filled image is allocated: each layer adds the host file system's requests, never removes any,
    # where the random writes are spread (fio --size=512M --io_size=1M: 256 writes that seldom touch; over a
    # region of 8 MiB, a buffered image's page cache would merge them into a few long writes at the fsync)
    jobs = {k: j.evolve(region_bytes=512 * MIB, size_bytes=MIB) if not j.sequential else j for k, j in jobs.items()}
    loops = loop_depth_table(fast, (0, 1, 2), jobs).set_index(["layer", "job"]).throughput_bytes_per_s
    for job in jobs:
        assert loops[("disk", job)] >= loops[("1 loop, zero-filled", job)] >= loops[("2 loop, zero-filled", job)]


def test_fio_write_jobs_end_with_fsync_unless_told():
    job = FioJob("write", MIB, 64 * MIB)
    assert "--end_fsync=1" in job.fio_arguments("/dev/loop0")
    lazy = job.evolve(end_fsync=False)
    assert "--end_fsync=1" not in lazy.fio_arguments("/dev/loop0")
    assert "--end_fsync=1" not in FioJob("read", MIB, MIB).fio_arguments("/dev/loop0")
