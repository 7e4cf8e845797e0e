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
    s = predict_fs_cell(kind, WORKLOADS[workload], "nolimit", "loop0", c["read_ahead_kb"])
    keep = s.op <= 1  # reads and writes (flushes are not requests)
    return tuple((int(o), int(b), int(n)) for o, b, n in zip(s.op[keep], s.offset_bytes[keep], s.size_bytes[keep]))


def _error(pred, meas) -> tuple[float, float]:
    pb, mb = sum(r[2] for r in pred), sum(r[2] for r in meas)
    return abs(pb - mb) / mb, abs(len(pred) - len(meas)) / len(meas)


@pytest.mark.parametrize("kind,workload", sorted(CELLS))
def test_bytes_and_requests_per_cell_as_blktrace_measured(kind, workload):
    bytes_err, req_err = _error(_predicted(kind, workload), CELLS[kind, workload]["requests"])
    assert bytes_err <= 0.16 and req_err <= 0.16, (bytes_err, req_err)


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
    # (DUP) and 2 superblocks; 2000 new files: 54 tree blocks twice; PostMark's larger files,
    # made and deleted unwritten: their reserved data space took a new data chunk (the chunk,
    # device, extent and free-space trees' leaves): 10 tree blocks twice.
    for workload in ("copy", "postmark_test2", "metadata_create", "postmark_test1"):
        pred, meas = _predicted("btrfs", workload), CELLS["btrfs", workload]["requests"]
        assert sorted(r[2] for r in pred) == sorted(r[2] for r in meas), workload
