"""model/filesystems/kinds.py and the kinds of FileSystem: defaults, options, bad input, what each parameter does."""
from __future__ import annotations

import dataclasses
import math

import pytest

from diskmodel.model.drive.disk import flat_latency_disk
from diskmodel.model.filesystems.filesystem import (FileSystem, PageCache, file_system_access_time,
                                                    sequential_write_time_s, synchronous_write_time_s)
from diskmodel.model.fit.filesystems import (FsCase, SequentialWrite, SyncWrites, fit_file_system_costs,
                                             leave_one_out, predicted_time_s)
from diskmodel.model.filesystems.kinds import DEFAULTS, KINDS, mkfs_journal_bytes, parameters_from_options
from diskmodel.model.stacks.stack import FileSystemNode, Stack, paper_stack
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.stacks.volume_on_disk import VolumeOnDisk
from diskmodel.model.stacks.volumes import Partition
from diskmodel.model.predictions.workload import PostMarkConfig, expected_counts


@pytest.fixture(scope="module")
def flash():
    """A flat-latency disk like this host's storage: 70 us per request, 700 MB/s."""
    return VolumeOnDisk(flat_latency_disk(70e-6, 700e6, 2 * GIB, block_bytes=4096), Partition(MIB, GIB))


@pytest.fixture(scope="module")
def small_files():
    return expected_counts(PostMarkConfig(number_of_files=1000, transactions=4000, min_file_size_bytes=1,
                                          max_file_size_bytes=1024))


# ------------------------------------------------------------------ defaults

def test_defaults_follow_todays_mkfs_and_mount():
    xfs, btrfs, ext4 = FileSystem(kind="xfs"), FileSystem(kind="btrfs"), FileSystem(kind="ext4")
    assert (xfs.inode_size_bytes, xfs.allocation_groups, xfs.journal_size_bytes, xfs.journal_mode) == (
        512, 4, 64 * MIB, "metadata")                                     # mkfs.xfs 6.1 on 1-16 GiB
    assert (btrfs.metadata_node_bytes, btrfs.metadata_copies, btrfs.inline_data_max_bytes,
            btrfs.commit_interval_s, btrfs.data_checksums) == (16 * KIB, 2, 2048, 30.0, True)  # btrfs-progs 6.2
    assert (ext4.extents, ext4.delayed_allocation, ext4.commit_interval_s, ext4.inode_size_bytes) == (
        True, True, 5.0, 256)                                             # mke2fs.conf, JBD2
    # ext2/ext3 keep the model's defaults of the paper's era (the golden predictions depend on them)
    assert FileSystem() == FileSystem(kind="ext3", journal_mode="ordered", inode_size_bytes=256,
                                      commit_interval_s=5.0, journal_size_bytes=128 * MIB)
    assert not FileSystem(kind="ext2").journaled and FileSystem(kind="btrfs").journaled
    assert set(DEFAULTS) == set(KINDS)


def test_mkfs_journal_sizes_follow_e2fsprogs_and_xfsprogs():
    assert mkfs_journal_bytes("ext4", 20 * 10**9) == 128 * MIB             # the paper's 20 GB
    assert mkfs_journal_bytes("ext4", GIB) == 32 * MIB                      # 262144 blocks: 8192 blocks
    assert mkfs_journal_bytes("ext4", 100 * MIB) == 4 * MIB
    assert mkfs_journal_bytes("xfs", GIB) == 64 * MIB                       # mkfs.xfs -N: 16384 log blocks
    assert mkfs_journal_bytes("btrfs", GIB) == GIB // 10


# ------------------------------------------------------------------ options

@pytest.mark.parametrize("kind, mkfs, mount, expected", [
    ("ext4", ("-b", "1024", "-I", "128", "-J", "size=64", "-O", "^extent,^dir_index"), ("data=writeback", "commit=15"),
     {"block_size_bytes": 1024, "inode_size_bytes": 128, "journal_size_bytes": 64 * MIB, "extents": False,
      "dir_index": False, "journal_mode": "writeback", "commit_interval_s": 15.0}),
    ("ext4", ("-O", "^has_journal"), ("nodelalloc", "noatime"),
     {"journal_mode": "none", "delayed_allocation": False, "atime_updates": False}),
    ("ext4", (), ("data=journal",), {"journal_mode": "journal", "delayed_allocation": False}),
    ("xfs", ("-b", "size=4096", "-i", "size=1024", "-l", "size=128m", "-d", "agcount=8"), ("logbsize=256k",),
     {"block_size_bytes": 4096, "inode_size_bytes": 1024, "journal_size_bytes": 128 * MIB, "allocation_groups": 8}),
    ("btrfs", ("--nodesize", "65536", "-m", "single", "-s", "4096"), ("commit=60", "max_inline=0", "nodatacow"),
     {"metadata_node_bytes": 65536, "metadata_copies": 1, "block_size_bytes": 4096, "commit_interval_s": 60.0,
      "inline_data_max_bytes": 0, "copy_on_write": False, "data_checksums": False}),
])
def test_options_set_the_parameters_they_name(kind, mkfs, mount, expected):
    assert parameters_from_options(kind, mkfs, mount) == expected
    node = FileSystemNode(Partition(MIB, GIB), kind=kind, mkfs_options=mkfs, mount_options=mount)
    assert {name: getattr(node.parameters, name) for name in expected} == expected


@pytest.mark.parametrize("kind, mkfs, mount, message", [
    ("xfs", (), ("data=journal",), r"^mount_options: data=journal is not a mount option of xfs$"),
    ("btrfs", (), ("data=ordered",), r"^mount_options: data=ordered is not a mount option of btrfs$"),
    ("ext2", (), ("commit=5",), r"^mount_options: commit=5 is not a mount option of ext2$"),
    ("ext3", (), ("nodelalloc",), r"^mount_options: nodelalloc is not a mount option of ext3$"),
    ("ext4", ("--nodesize", "16384"), (), r"^mkfs_options: --nodesize is not an option of mkfs.ext4$"),
    ("xfs", ("-J", "size=64"), (), r"^mkfs_options: -J is not an option of mkfs.xfs$"),
    ("ext4", ("-b", "8192"), (), r"block_size_bytes must be one of 1024, 2048, 4096 for ext4 \(got 8192\)"),
    ("btrfs", ("-s", "16384"), (), r"block_size_bytes: btrfs has only 4096 \(got 16384\)"),
    ("xfs", ("-b", "size=512"), (), r"block_size_bytes must be one of 1024, .* for xfs \(got 512\)"),
    ("ext3", ("-O", "extent"), (), r"extents: ext3 has only False \(got True\)"),
    ("ext3", ("-O", "^has_journal"), (), r"makes no ext3"),
    ("btrfs", ("-m", "raid1"), (), r"--metadata raid1 needs several devices"),
])
def test_an_option_the_kind_does_not_have_is_refused_naming_it_and_the_kind(kind, mkfs, mount, message):
    with pytest.raises(ValueError, match=message) as info:
        FileSystemNode(Partition(MIB, GIB), kind=kind, mkfs_options=mkfs, mount_options=mount)
    assert "\n" not in str(info.value)


def test_contradicting_parameters_and_a_bad_stack_file_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^mkfs_options set allocation_groups to 8, which contradicts "
                                         r"parameters.allocation_groups 4$"):
        FileSystemNode(Partition(MIB, GIB), kind="xfs", parameters=FileSystem(kind="xfs"),
                       mkfs_options=("-d", "agcount=8"))
    text = paper_stack("native", fs_size_bytes=GIB, kind="xfs").to_json().replace('"metadata"', '"journal"')
    with pytest.raises(ValueError, match=r"journal_mode: xfs has only 'metadata' \(got 'journal'\)"):
        Stack.from_json(text)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_round_trips_through_json_and_predicts(kind):
    stack = paper_stack("native", fs_size_bytes=GIB, kind=kind)
    assert Stack.from_json(stack.to_json()) == stack


# ------------------------------------------------------------------ what each parameter does

def test_extents_leave_no_indirect_block_to_write(flash):
    big = expected_counts(PostMarkConfig(number_of_files=300, transactions=1000, min_file_size_bytes=100 * KIB,
                                         max_file_size_bytes=300 * KIB))
    with_map = file_system_access_time(flash, FileSystem(kind="ext4", extents=False), big)
    with_extents = file_system_access_time(flash, FileSystem(kind="ext4"), big)
    assert with_extents.terms["T_MO"] < 0.5 * with_map.terms["T_MO"]


def test_btrfs_inline_files_write_no_data_blocks_and_dup_doubles_the_commits(flash, small_files):
    inline = file_system_access_time(flash, FileSystem(kind="btrfs"), small_files)
    out_of_line = file_system_access_time(flash, FileSystem(kind="btrfs", inline_data_max_bytes=0), small_files)
    assert inline.io_counts["data_block_ios"] == 0.0 < out_of_line.io_counts["data_block_ios"]
    single = file_system_access_time(flash, FileSystem(kind="btrfs", metadata_copies=1), small_files)
    # the same commits, each tree block written twice (less the superblocks, written once)
    ratio = inline.io_counts["metadata_ios"] / single.io_counts["metadata_ios"]
    assert 1.8 < ratio <= 2.0
    # copy-on-write: no metadata block is written in place
    assert inline.terms["T_DO"] == pytest.approx(inline.parts["T_DO"]["cache_s"])


def test_delayed_allocation_writes_the_transactions_creates_sequentially(flash):
    counts = expected_counts(PostMarkConfig(number_of_files=500, transactions=4000, min_file_size_bytes=4 * KIB,
                                            max_file_size_bytes=64 * KIB))
    delayed = file_system_access_time(flash, FileSystem(kind="ext4"), counts)
    in_place = file_system_access_time(flash, FileSystem(kind="ext4", delayed_allocation=False), counts)
    assert delayed.io_counts["data_requests"] < in_place.io_counts["data_requests"]


def test_synchronous_writes_cost_a_commit_per_write(flash):
    """fsync of a 4 KiB overwrite: ext2 one inode write; ext3/4 two journal writes; xfs one log write;
    btrfs 2 x DUP log leaves + the superblock: 1 + 1, 1 + 2, 1 + 1 and 1 + 5 requests of 70 us (+ transfer)."""
    per_request = 70e-6
    requests = {"ext2": 2, "ext3": 3, "ext4": 3, "xfs": 2, "btrfs": 6}
    for kind, n in requests.items():
        t = synchronous_write_time_s(flash, FileSystem(kind=kind), 4096)
        assert t["total_s"] == pytest.approx(n * per_request, rel=0.4), kind
        assert t["data_s"] + t["journal_s"] + t["overhead_s"] == pytest.approx(t["total_s"])
    slow = synchronous_write_time_s(flash, FileSystem(kind="ext4", commit_overhead_s=1e-3), 4096)
    assert slow["total_s"] == pytest.approx(synchronous_write_time_s(flash, FileSystem(kind="ext4"), 4096)["total_s"]
                                            + 1e-3)


def test_sequential_write_is_the_transfer_plus_the_copy(flash):
    t = sequential_write_time_s(flash, FileSystem(kind="xfs"), 256 * MIB, PageCache(rate_bytes_per_s=2e9))
    assert t["copy_s"] == pytest.approx(256 * MIB / 2e9)
    # the transfer, and a command overhead (the flat latency less a block's transfer) per 512 KiB request
    assert t["data_s"] == pytest.approx(256 * MIB / 700e6 + 512 * (70e-6 - 4096 / 700e6), rel=0.01)
    assert sequential_write_time_s(flash, FileSystem(kind="xfs", file_data_rate_bytes_per_s=1e9), 256 * MIB)[
        "data_s"] == pytest.approx(t["data_s"] + 256 * MIB / 1e9)


# ------------------------------------------------------------------ fitting

@pytest.mark.slow  # several seconds: the full tier runs it
def test_the_fit_recovers_the_costs_it_was_made_with(flash, small_files):
    truth = {"cpu_per_file_operation_s": 40e-6, "commit_overhead_s": 2e-3, "file_data_rate_bytes_per_s": 4e8}
    base = FileSystem(kind="ext4", cpu_per_file_operation_s=10e-6)
    true_fs = base.evolve(**truth)
    workloads = [small_files,
                 expected_counts(PostMarkConfig(number_of_files=300, transactions=1000, min_file_size_bytes=KIB,
                                                max_file_size_bytes=100 * KIB)),
                 SyncWrites(4096), SyncWrites(65536), SequentialWrite(64 * MIB)]
    cases = []
    for w in workloads:
        made = FsCase(flash, true_fs, w, 1.0)
        cases.append(FsCase(flash, base, w, predicted_time_s(made), label=type(w).__name__))
    fit = fit_file_system_costs(cases)
    for name, value in truth.items():
        assert fit.params[name] == pytest.approx(value, rel=0.02), name
    assert float(abs(fit.residuals).max()) < 1e-3
    held = leave_one_out(cases[:4], parameters=("cpu_per_file_operation_s", "commit_overhead_s"))
    assert [round(h["error_pct"]) for h in held if h["label"] == "SyncWrites"] != []
    assert all(math.isfinite(h["error_pct"]) for h in held)


def test_a_floor_on_the_cpu_per_operation_holds_it_and_the_others_refit(flash, small_files):
    """Cases made with 5 us per operation, fitted with a floor of 20 us: the CPU sits on the floor, held
    there (no variance, no degree of freedom), and the leave-one-out fits keep it there too."""
    truth = FileSystem(kind="ext4", cpu_per_file_operation_s=5e-6, commit_overhead_s=1e-3,
                       file_data_rate_bytes_per_s=5e8)
    workloads = [small_files, SyncWrites(4096), SyncWrites(65536), SequentialWrite(64 * MIB)]
    cases = [FsCase(flash, truth, w, predicted_time_s(FsCase(flash, truth, w, 1.0))) for w in workloads]
    floor = {"cpu_per_file_operation_s": (20e-6, 0.01)}
    fit = fit_file_system_costs(cases, bounds=floor)
    assert fit.params["cpu_per_file_operation_s"] == pytest.approx(20e-6)
    assert math.isnan(fit.bse["cpu_per_file_operation_s"]) and fit.df_resid == 2
    assert fit_file_system_costs(cases).params["cpu_per_file_operation_s"] == pytest.approx(5e-6, rel=0.02)
    assert all(h["params"]["cpu_per_file_operation_s"] >= 20e-6 for h in leave_one_out(cases, bounds=floor))
    for bad, match in (({"cpu": (0, 1)}, "bounds must be one of"),
                       ({"commit_overhead_s": (1.0, 0.5)}, r"bounds\['commit_overhead_s'\]: lower must be below"),
                       ({"commit_overhead_s": 3}, "must be a .lower, upper. pair"),
                       ({"commit_overhead_s": (0, float("nan"))}, "upper")):
        with pytest.raises(ValueError, match=match):
            fit_file_system_costs(cases, bounds=bad)


def test_the_fit_refuses_cases_of_several_kinds(flash):
    cases = [FsCase(flash, FileSystem(kind=k), SyncWrites(4096), 1e-3) for k in ("ext4", "xfs")]
    with pytest.raises(ValueError, match="cases must all be of one kind"):
        fit_file_system_costs(cases)
    with pytest.raises(ValueError, match="measured_s must be > 0"):
        FsCase(flash, FileSystem(), SyncWrites(4096), 0.0)


def test_every_field_of_every_kind_is_validated():
    names = {f.name for f in dataclasses.fields(FileSystem)}
    assert set(DEFAULTS["xfs"]) <= names
    with pytest.raises(ValueError, match="commit_overhead_s"):
        FileSystem(commit_overhead_s=-1.0)
    with pytest.raises(ValueError, match="metadata_node_bytes"):
        FileSystem(kind="ext4", metadata_node_bytes=16384)
