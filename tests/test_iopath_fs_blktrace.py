"""The file systems' request models (model/iopath/fs*.py) against measured blktrace streams: page-cache
cells of benchmarks/iopath_check.py (tests/golden/iopath_fs_blktrace.json, see tests/golden/README.md)
predicted by the whole I/O path, as the benchmark predicts them."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from diskmodel.calibrate.trace.fs_cells import FS_WORKLOADS, predict_fs_cell

GOLDEN = json.loads((Path(__file__).parent / "golden" / "iopath_fs_blktrace.json").read_text())
CELLS = {(c["file_system"], c["workload"]): c for c in GOLDEN["cells"]}
WORKLOADS = {w.name: w for w in FS_WORKLOADS}
B = 4096


@lru_cache(maxsize=None)
def _predicted(kind: str, workload: str):
    c = CELLS[kind, workload]
    s = predict_fs_cell(kind, WORKLOADS[workload], c.get("memory", "nolimit"), "loop0", c["read_ahead_kb"])
    keep = s.op <= 1  # reads and writes (flushes are not requests)
    return tuple((int(o), int(b), int(n)) for o, b, n in zip(s.op[keep], s.offset_bytes[keep], s.size_bytes[keep]))


def _error(pred, meas) -> tuple[float, float]:
    pb, mb = sum(r[2] for r in pred), sum(r[2] for r in meas)
    return abs(pb - mb) / mb, abs(len(pred) - len(meas)) / len(meas)


@pytest.mark.parametrize("kind,workload", sorted(CELLS))
def test_bytes_and_requests_per_cell_as_blktrace_measured(kind, workload):
    bytes_err, req_err = _error(_predicted(kind, workload), CELLS[kind, workload]["requests"])
    assert bytes_err <= 0.16 and req_err <= 0.16, (bytes_err, req_err)


def _writes(reqs) -> set[int]:
    return {b // B + k for op, b, n in reqs if op == 1 for k in range(n // B)}


@pytest.mark.parametrize("kind", ["ext2", "ext3"])
def test_ext_write_allocates_for_files_deleted_before_write_back(kind):
    # No delayed allocation for ext2/ext3 under the ext4 driver: PostMark's files, deleted before
    # their pages are written back, had blocks, so the block bitmaps of the groups they were placed in
    # are written at the sync. mballoc's stream goal moves on to the next group whenever the goal
    # group's average free run is shorter than a file's third window (96 blocks:
    # ext4_mb_good_group's CR_GOAL_LEN_FAST test), so PostMark's churn walks it over every group:
    # blktrace shows all eight groups' bitmaps written (the model before followed the goal only
    # when a group was full, and wrote three).
    pred, meas = _predicted(kind, "postmark_test3"), CELLS[kind, "postmark_test3"]["requests"]
    group = 32768
    bitmaps = lambda reqs: {b for b in _writes(reqs) if b >= group and b % group in (0, 65)}  # noqa: E731
    assert len(bitmaps(meas)) == 7 and bitmaps(pred) == bitmaps(meas), (bitmaps(pred), bitmaps(meas))


def test_ext3_unlink_writes_the_superblock_s_orphan_list():
    # ext4_orphan_add: the unlink of a file puts its inode on the orphan list, whose head is in the
    # superblock: block 0 is journaled and written back with the descriptors (one request, 0-1).
    for workload in ("postmark_test1", "postmark_test3"):
        pred, meas = _predicted("ext3", workload), CELLS["ext3", workload]["requests"]
        assert [1, 0, 2 * B] in meas and (1, 0, 2 * B) in pred, workload
    assert 0 not in _writes(_predicted("ext2", "postmark_test3"))  # no journal, no orphan list


def test_btrfs_stat_reads_the_leaves_of_a_pushed_tree():
    # 2,000 stats read each name's directory-item leaf and each inode's leaf: 36 leaves measured.
    # Hash-keyed leaves fuller than a B-tree's ln 2 (btrfs pushes items to the neighbours before a
    # split): within 10 % of the measured count.
    pred, meas = _predicted("btrfs", "metadata_stat"), CELLS["btrfs", "metadata_stat"]["requests"]
    assert abs(len(pred) - len(meas)) <= 0.1 * len(meas), (len(pred), len(meas))


def test_ext4_stat_reads_the_inode_table_past_the_mount_s_window():
    # The mount read the root inode's window (145-177); the stats read the rest of the table in use
    # (178-270) as blktrace shows it: each window's first block, and the others as one request
    # (issued first: the order inside a window is left out).
    table = lambda reqs: sorted((b // B, n // B) for op, b, n in reqs if op == 0 and b // B < 4241)  # noqa: E731
    assert table(_predicted("ext4", "metadata_stat")) == table(CELLS["ext4", "metadata_stat"]["requests"])


def test_ext2_create_reads_the_directory_and_mballoc_s_bitmaps():
    # The root directory's block, the inode bitmap, group 0's block bitmap and mballoc's read-ahead
    # of the other seven groups' bitmaps: the same blocks blktrace shows, in the same order.
    reads = lambda reqs: [b // B for op, b, n in reqs if op == 0]  # noqa: E731
    assert reads(_predicted("ext2", "metadata_create")) == reads(CELLS["ext2", "metadata_create"]["requests"])


def test_btrfs_commits_write_the_measured_tree_blocks():
    # A clone into a one-leaf fs tree, and 3000 small files made and deleted: 6 tree blocks twice
    # (DUP) and 2 superblocks; PostMark's larger files, made and deleted unwritten: their reserved
    # data space took a new data chunk (the chunk, device, extent and free-space trees' leaves): 10
    # tree blocks twice.
    for workload in ("copy", "postmark_test2", "postmark_test1"):
        pred, meas = _predicted("btrfs", workload), CELLS["btrfs", workload]["requests"]
        assert sorted(r[2] for r in pred) == sorted(r[2] for r in meas), workload
    # 2000 new files: 54 tree blocks twice; the model's leaves (as full as the stats read them)
    # within two tree blocks of that.
    tree = lambda reqs: sum(1 for op, b, n in reqs if op == 1 and n == 16384)  # noqa: E731
    pred, meas = _predicted("btrfs", "metadata_create"), CELLS["btrfs", "metadata_create"]["requests"]
    assert abs(tree(pred) - tree(meas)) <= 4, (tree(pred), tree(meas))


def test_xfs_log_carries_the_directory_chunks_each_entry_changed():
    # A checkpoint logs each 128-byte chunk of a directory block that an entry went into or left
    # (XFS_BLF_CHUNK), not one chunk a buffer: 2,000 creates' log within 8 % of the log bytes
    # blktrace measured, PostMark test1's (whose deletes also change the AGI's unlinked lists, not
    # followed) within 15 %.
    from diskmodel.model.iopath.fs_layout import FsParams

    p = FsParams("xfs", 1 << 30)
    lo, hi = p.journal_block * B, (p.journal_block + p.journal_blocks) * B
    log = lambda reqs: sum(n for op, b, n in reqs if op == 1 and lo <= b < hi)  # noqa: E731
    for workload, within in (("metadata_create", 0.08), ("postmark_test1", 0.15)):
        pred, meas = log(_predicted("xfs", workload)), log(CELLS["xfs", workload]["requests"])
        assert abs(pred - meas) <= within * meas, (workload, pred, meas)


def test_cgroup_reads_windows_of_separate_calls_and_writes_back_file_by_file():
    # PostMark test3 in a 64 MiB cgroup on btrfs: the files read again after reclaim, in 4 KiB
    # calls, go out as read-ahead windows of 4, 16 and 64 pages, each issued by another call; the
    # reclaim's write-back writes one file after another, a request per file. blktrace: 1,863
    # requests. The queue merged both before (584 predicted).
    pred, meas = _predicted("btrfs", "postmark_test3"), CELLS["btrfs", "postmark_test3"]["requests"]
    assert abs(len(pred) - len(meas)) <= 0.1 * len(meas), (len(pred), len(meas))
    reads = lambda reqs: sorted(n // B for op, b, n in reqs if op == 0 and n > B)  # noqa: E731
    small = lambda r: sum(1 for n in r if n <= 16) / len(r)  # noqa: E731
    assert abs(small(reads(pred)) - small(reads(meas))) <= 0.1, (small(reads(pred)), small(reads(meas)))


def test_ext3_journal_skips_its_own_indirect_block():
    # mke2fs writes ext3's journal as a block-mapped file, its indirect block after its 12 direct
    # blocks: blktrace of PostMark test3's commits shows the log at 586 (11 blocks, after the
    # journal superblock at 585) and on at 598, past block 597 (the model before wrote 586+43).
    pred, meas = _predicted("ext3", "postmark_test3"), CELLS["ext3", "postmark_test3"]["requests"]
    first = {(b // B, n // B) for op, b, n in meas if op == 1 and 585 <= b // B < 700}
    assert {(586, 11), (598, 32)} <= first
    assert {(b // B, n // B) for op, b, n in pred if op == 1 and 585 <= b // B < 700} == first
