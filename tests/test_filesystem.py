"""model/filesystems/filesystem.py: eq. (1) T_FSA = T_DO + T_MO + T_FL + T_DFA + T_J."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from diskmodel.model.filesystems.filesystem import FileSystem, PageCache, file_system_access_time
from diskmodel.model.filesystems.terms import TERMS, distinct_blocks
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.stacks.stack import paper_stack
from diskmodel.model.stacks.volume_on_disk import VolumeOnDisk
from diskmodel.model.units import GB
from diskmodel.model.units import MIB
from diskmodel.model.predictions.workload import PostMarkConfig, expected_counts, postmark_preset


@pytest.fixture(scope="module")
def disk():
    return load_preset("wd800bd")


def paper_volume(name, disk, **options):
    """The paper's stack *name* on *disk*: its volume placed on the disk."""
    return VolumeOnDisk(disk, paper_stack(name, disk=disk, **options).volume)


@pytest.fixture(scope="module")
def native(disk):
    return paper_volume("native", disk)


@pytest.fixture(scope="module")
def small_counts():
    return expected_counts(PostMarkConfig(number_of_files=2000, transactions=5000,
                                          min_file_size_bytes=1024, max_file_size_bytes=64 * 1024))


def test_distinct_blocks_golden():
    assert distinct_blocks(100, 100) == pytest.approx(100 * (1 - math.exp(-1)))
    assert distinct_blocks(1e9, 50) == pytest.approx(50)
    assert distinct_blocks(1, 1e9) == pytest.approx(1, rel=1e-6)


def test_terms_add_up_and_are_nonnegative(disk, native, small_counts):
    r = file_system_access_time(native, FileSystem(), small_counts, PageCache())
    assert set(r.terms) == set(TERMS)
    assert all(v >= 0 for v in r.terms.values())
    assert r.total_s == pytest.approx(sum(r.terms.values()))
    assert sum(r.dst_breakdown().values()) == pytest.approx(r.total_s)
    # the elapsed time the commits were counted with is the one computed (fixed point)
    assert r.details["elapsed_s"] == pytest.approx(r.total_s, rel=1e-6)
    assert r.io_counts["commits"] == pytest.approx(r.total_s / 5.0, rel=1e-6)


def test_ext2_has_no_journal_time_and_data_journaling_costs_more(disk, native, small_counts):
    ext2 = file_system_access_time(native, FileSystem(kind="ext2"), small_counts)
    ordered = file_system_access_time(native, FileSystem(), small_counts)
    journal = file_system_access_time(native, FileSystem(journal_mode="journal"), small_counts)
    assert ext2.terms["T_J"] == 0.0 and ext2.io_counts["commits"] == 0.0
    assert ordered.terms["T_J"] > 0.0
    assert journal.terms["T_J"] > 2 * ordered.terms["T_J"]
    assert journal.total_s > ordered.total_s


def test_more_cache_is_never_slower(disk, native):
    counts = expected_counts(postmark_preset("test1"))
    times = [file_system_access_time(native, FileSystem(), counts, PageCache(size_bytes=c * MIB)).total_s
             for c in (16, 64, 128, 256, 1024)]
    assert all(a >= b - 1e-9 for a, b in zip(times, times[1:]))
    assert times[0] > 1.5 * times[-1]


def test_data_access_dominates_tests_1_and_3(disk, native):
    """Section 4.2.1 and 4.2.3: "T_DFA will be dominant" in Tests 1 and 3.

    (The paper expects T_DO + T_MO to dominate Test 2; this model does not:
    directory, inode and bitmap blocks of 30,000 small files coalesce in the
    cache between commits, see the module docstring.)
    """
    for name in ("test1", "test3"):
        r = file_system_access_time(native, FileSystem(), expected_counts(postmark_preset(name)),
                                    PageCache(size_bytes=128 * MIB))
        assert r.terms["T_DFA"] == max(r.terms.values())
        assert r.terms["T_DFA"] > 0.5 * r.total_s


def test_reusing_freed_space_makes_creates_random_writes(disk, native, small_counts):
    reuse = file_system_access_time(native, FileSystem(write_reorder_depth=1), small_counts)
    fresh = file_system_access_time(native, FileSystem(write_reorder_depth=1, reuse_freed_space=False),
                                    small_counts)
    assert reuse.parts["T_DFA"]["rotation_s"] > fresh.parts["T_DFA"]["rotation_s"]
    assert reuse.terms["T_DFA"] > fresh.terms["T_DFA"]


def test_cpu_per_operation_is_charged_to_directory_operations(disk, native, small_counts):
    base = file_system_access_time(native, FileSystem(), small_counts)
    cpu = file_system_access_time(native, FileSystem(cpu_per_file_operation_s=1e-4), small_counts)
    ops = small_counts.total.creates + small_counts.total.deletes + small_counts.total.reads + small_counts.total.appends
    assert cpu.terms["T_DO"] - base.terms["T_DO"] == pytest.approx(1e-4 * ops, rel=0.05)


def test_journal_far_away_costs_seeks_through_the_extent_map(disk, small_counts):
    fs = FileSystem(journal_offset_fraction=0.9)
    near = file_system_access_time(paper_volume("lvm2", disk), fs, small_counts)
    far = file_system_access_time(paper_volume("lvm2", disk, pv_gap_bytes=40 * GB), fs, small_counts)
    # the journal (at 90 % of the LV) is on /dev/sda4, the files at the start on
    # /dev/sda3: moving sda3 40 GB away lengthens every commit's seeks
    assert far.parts["T_J"]["seek_s"] > 1.5 * near.parts["T_J"]["seek_s"]


@settings(max_examples=15, deadline=None)
@given(files=st.integers(100, 3000), tx=st.integers(10, 3000), high_kib=st.integers(1, 200),
       cache_mib=st.integers(0, 512), kind=st.sampled_from(["ext2", "ext3", "ext4", "xfs", "btrfs"]),
       mode=st.sampled_from(["ordered", "writeback", "journal"]), block=st.sampled_from([1024, 4096]))
def test_any_workload_gives_positive_finite_times(files, tx, high_kib, cache_mib, kind, mode, block):
    disk = load_preset("wd800bd")
    layout = paper_volume("lvm1", disk)
    cfg = PostMarkConfig(number_of_files=files, transactions=tx, min_file_size_bytes=1,
                         max_file_size_bytes=high_kib * 1024)
    # the journal modes are ext3's and ext4's; the other kinds have their one mode (their default)
    fs = FileSystem(kind=kind, journal_mode=mode if kind in ("ext3", "ext4") else None,
                    block_size_bytes=4096 if kind == "btrfs" else block)
    r = file_system_access_time(layout, fs, cfg, PageCache(size_bytes=cache_mib * MIB))
    assert np.isfinite(r.total_s) and r.total_s > 0
    assert all(v >= 0 for v in r.terms.values())
    assert all(v >= 0 for v in r.dst_breakdown().values())


@pytest.mark.parametrize("kwargs, name", [
    ({"kind": "ntfs"}, "kind"), ({"journal_mode": "data"}, "journal_mode"),
    ({"block_size_bytes": 3000}, "block_size_bytes"), ({"inode_size_bytes": 100}, "inode_size_bytes"),
    ({"commit_interval_s": 0}, "commit_interval_s"), ({"writeback_interval_s": float("inf")}, "writeback_interval_s"),
    ({"journal_offset_fraction": 1.0}, "journal_offset_fraction"), ({"atime_updates": "yes"}, "atime_updates"),
    ({"allocation_spread": 0.5}, "allocation_spread"), ({"max_request_bytes": 100}, "max_request_bytes"),
    ({"write_reorder_depth": 0}, "write_reorder_depth"), ({"reuse_freed_space": 1}, "reuse_freed_space"),
    ({"cpu_per_file_operation_s": -1e-6}, "cpu_per_file_operation_s"),
])
def test_bad_file_system_names_the_field(kwargs, name):
    with pytest.raises(ValueError, match=name):
        FileSystem(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    ({"size_bytes": -1}, "size_bytes"), ({"rate_bytes_per_s": 0}, "rate_bytes_per_s"),
    ({"syscall_s": float("nan")}, "syscall_s"),
])
def test_bad_page_cache_names_the_field(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PageCache(**kwargs)


def test_bad_arguments(disk, native):
    with pytest.raises(ValueError, match="volume must be a VolumeOnDisk"):
        file_system_access_time(native.volume, FileSystem(), PostMarkConfig())
    with pytest.raises(ValueError, match="workload"):
        file_system_access_time(native, FileSystem(), workload={"files": 3})
    with pytest.raises(ValueError, match="fs"):
        file_system_access_time(native, "ext3", PostMarkConfig())
    with pytest.raises(ValueError, match="cache"):
        file_system_access_time(native, FileSystem(), PostMarkConfig(), cache=128)


def test_pipeline_stages_account_for_every_disk_and_cache_second(disk, native, small_counts):
    """overlapped_writeback: stages partition the busy time; elapsed is the busiest stage (fixed point)."""
    slow = disk.evolve(interface_rate_bytes_per_s=4e6)
    r = file_system_access_time(native.evolve(disk=slow), FileSystem(overlapped_writeback=True), small_counts)
    st = r.stages
    assert sum(st.values()) == pytest.approx(r.total_s, rel=1e-9)
    assert st["cpu_s"] == pytest.approx(sum(r.parts[t]["cache_s"] for t in TERMS), rel=1e-9)
    stages = r.stage_times()
    assert r.pipeline_s() == pytest.approx(max(stages.values()))
    assert r.details["elapsed_s"] == pytest.approx(r.pipeline_s(), rel=1e-6)
    assert r.io_counts["commits"] == pytest.approx(r.details["elapsed_s"] / 5.0, rel=1e-6)
    # at 4 MB/s the host link is the bottleneck: the write-back link time equals
    # the bytes written at block granularity (data, metadata, journal) / rate
    assert stages["link_s"] == max(stages.values())
    assert r.pipeline_s() < r.total_s
    assert r.pipeline_s(10.0) == pytest.approx(stages["link_s"] + 10.0)
    # the serial model on the same input sums the terms instead
    serial = file_system_access_time(native.evolve(disk=slow), FileSystem(), small_counts)
    assert serial.details["elapsed_s"] == pytest.approx(serial.total_s, rel=1e-6)
    assert serial.details["elapsed_s"] > r.details["elapsed_s"]


def test_pipeline_golden_test1_link_bound(disk, native):
    """Hand check: Test 1 with every read cached, at a 4.5 MB/s host link.

    The link carries data blocks (510,579 of 4 KiB: whole-block creates,
    appends rewriting their tail block) plus metadata (home write-back and
    journal); media and application are far below it.
    """
    counts = expected_counts(postmark_preset("test1"))
    r = file_system_access_time(native.evolve(disk=disk.evolve(interface_rate_bytes_per_s=4.5e6)),
                                FileSystem(overlapped_writeback=True), counts, PageCache(size_bytes=1536 * MIB))
    assert r.details["p_hit_data"] == 1.0
    assert r.stages["read_media_s"] == 0.0 and r.stages["read_link_s"] == 0.0
    assert r.io_counts["data_block_ios"] == pytest.approx(510579, rel=1e-4)
    data_link = r.io_counts["data_block_ios"] * 4096 / 4.5e6
    assert data_link == pytest.approx(464.7, rel=1e-3)
    stages = r.stage_times()
    assert stages["link_s"] > data_link
    assert stages["media_s"] < 0.3 * stages["link_s"] and stages["application_s"] < 0.05 * stages["link_s"]
    assert r.details["elapsed_s"] == pytest.approx(stages["link_s"], rel=1e-6)
    assert 520 < r.details["elapsed_s"] < 580   # the paper measured 548 s (Table 4 and the volumes)


def test_file_data_rate_golden_test1_charges_file_data_only(disk, native):
    """Hand check: Test 1 at the spec link (150 MB/s) with a 4.5 MB/s file-data path.

    The 510,579 data blocks cost 4096 B * (1/150e6 + 1/4.5e6) each on the
    link (464.7 s + 13.9 s); metadata and journal blocks only their T_I at
    150 MB/s, a few seconds; so the run is link-bound at about 480 s.
    """
    counts = expected_counts(postmark_preset("test1"))
    fs = FileSystem(overlapped_writeback=True, file_data_rate_bytes_per_s=4.5e6)
    r = file_system_access_time(native, fs, counts, PageCache(size_bytes=1536 * MIB))
    assert disk.interface_rate_bytes_per_s == 150e6
    data_bytes = r.io_counts["data_block_ios"] * 4096
    assert r.io_counts["data_block_ios"] == pytest.approx(510579, rel=1e-4)
    data_link = data_bytes / 4.5e6 + data_bytes / 150e6
    assert data_link == pytest.approx(478.6, rel=1e-3)
    stages = r.stage_times()
    metadata_link = stages["link_s"] - data_link
    assert 0 < metadata_link < 5.0          # journal and home metadata at 150 MB/s, not 4.5 MB/s
    assert r.details["elapsed_s"] == pytest.approx(stages["link_s"], rel=1e-6)
    # without the file-data cost the same run is media-bound and far faster
    fast = file_system_access_time(native, FileSystem(overlapped_writeback=True), counts,
                                   PageCache(size_bytes=1536 * MIB))
    assert fast.details["elapsed_s"] < 0.5 * r.details["elapsed_s"]
    # the per-byte cost lands in T_DFA, exactly once per file-data byte
    added = r.parts["T_DFA"]["overhead_s"] - fast.parts["T_DFA"]["overhead_s"]
    assert added == pytest.approx(data_bytes / 4.5e6, rel=1e-6)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_file_data_rate_refuses_bad_values(bad):
    with pytest.raises(ValueError, match="file_data_rate_bytes_per_s"):
        FileSystem(file_data_rate_bytes_per_s=bad)
