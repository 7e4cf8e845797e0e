"""The I/O path's page-cache cells (calibrate/trace/fs_cells.py): a file system on a loop device, a
workload through the page cache, traced with blktrace, inside a memory cgroup or not; the model's
stream for the device held against blktrace's."""
from __future__ import annotations

import os
import sys

import pytest

from conftest import require_root, require_tools

MIB = 1 << 20


def _require_cells(*tools):
    require_root()
    require_tools("blktrace", "blkparse", "losetup", "mount", *tools)


@pytest.mark.integration
def test_a_traced_command_runs_in_the_memory_cgroup_it_is_given(tmp_path, loops):
    _require_cells()
    from diskmodel.calibrate.bench.memory_cgroup import MemoryCgroup
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.trace.record import record

    img = tmp_path / "img"
    with open(img, "wb") as fh:
        fh.truncate(16 * MIB)
    dev = loops.attach(img)
    seen = tmp_path / "cgroup"
    code = "import sys; open(sys.argv[1], 'w').write(open('/proc/self/cgroup').read())"
    with runstate.ensure_run("test cgroup record"):
        with MemoryCgroup(64 * MIB, name=f"diskmodel-test-{os.getpid()}") as cg:
            _, status = record([sys.executable, "-c", code, str(seen)], [dev], say=lambda line: None,
                               cgroup_procs=cg.procs_file)
            where = cg.path.name
    assert status == 0
    memory_lines = [line for line in seen.read_text().splitlines() if ":memory:" in line or line.startswith("0::")]
    assert any(line.endswith("/" + where) for line in memory_lines), seen.read_text()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ext4", "xfs"])
def test_buffered_writes_in_a_64mib_cgroup_reach_the_device_as_predicted(kind):
    # 32 MiB written through the cache by fio in a 64 MiB cgroup, then sync: the device receives the
    # file's bytes and its metadata; the model's stream for the device carries the same bytes.
    _require_cells("fio", f"mkfs.{kind}")
    from diskmodel.calibrate.trace.fs_cells import FS_WORKLOADS, predict_fs_cell, run_fs_cell

    w = {x.name: x for x in FS_WORKLOADS}["fio_write_1m"]
    trace, dev, ra_kb = run_fs_cell(kind, w, "cg64m")
    meas = trace.devices[dev].stream
    pred = predict_fs_cell(kind, w, "cg64m", dev, ra_kb)
    assert meas.write_bytes >= 32 * MIB
    assert abs(pred.write_bytes - meas.write_bytes) <= 0.02 * meas.write_bytes, (pred.totals(), meas.totals())
    assert abs(pred.write_requests - meas.write_requests) <= 0.3 * meas.write_requests, (pred.totals(), meas.totals())


@pytest.mark.integration
@pytest.mark.slow
def test_postmark_whose_files_outgrow_a_64mib_cgroup_writes_what_reclaims_flusher_writes():
    # PostMark test3's sizes (100-300 KiB), 400 files: about 80 MB live, more than the cgroup holds.
    # Reclaim meets dirty pages and wakes the flusher, which writes back every dirty file: nearly all
    # PostMark writes reaches the device, files deleted later included.
    _require_cells("postmark", "mkfs.ext4")
    from diskmodel.calibrate.trace.fs_cells import FS_WORKLOADS, predict_fs_cell, run_fs_cell

    w = {x.name: x for x in FS_WORKLOADS}["postmark_test3"]
    trace, dev, ra_kb = run_fs_cell("ext4", w, "cg64m")
    meas = trace.devices[dev].stream
    pred = predict_fs_cell("ext4", w, "cg64m", dev, ra_kb)
    assert meas.write_bytes > 100 * MIB
    assert abs(pred.write_bytes - meas.write_bytes) <= 0.15 * meas.write_bytes, (pred.totals(), meas.totals())


@pytest.mark.integration
@pytest.mark.slow
def test_btrfs_writes_only_the_trees_as_they_stand_when_postmark_deletes_its_files_before_the_commit():
    # PostMark test1's files, all deleted before the closing sync's commit: btrfs writes the leaves
    # of its trees as they stand then (a few, twice for DUP) and its superblocks, not a leaf per
    # inode ever created; blktrace's bytes against the model's.
    _require_cells("postmark", "mkfs.btrfs")
    from diskmodel.calibrate.trace.fs_cells import FS_WORKLOADS, predict_fs_cell, run_fs_cell

    w = {x.name: x for x in FS_WORKLOADS}["postmark_test1"]
    trace, dev, ra_kb = run_fs_cell("btrfs", w, "nolimit")
    meas = trace.devices[dev].stream
    pred = predict_fs_cell("btrfs", w, "nolimit", dev, ra_kb)
    assert meas.write_bytes < 2 * MIB, meas.totals()
    assert abs(pred.write_bytes - meas.write_bytes) <= 0.3 * meas.write_bytes, (pred.totals(), meas.totals())


@pytest.mark.integration
@pytest.mark.slow
def test_data_journal_writes_the_data_twice_as_blktrace_sees_it():
    # ext4 mounted data=journal: 32 MiB written by fio then synced go to the journal and then, at
    # the checkpoint, in place: the device receives the data twice, and the model says so.
    _require_cells("fio", "mkfs.ext4")
    from diskmodel.calibrate.trace.fs_cells import FS_WORKLOADS, predict_fs_cell, run_fs_cell

    w = {x.name: x for x in FS_WORKLOADS}["fio_write_1m"]
    opts = ("data=journal",)
    trace, dev, ra_kb = run_fs_cell("ext4", w, "nolimit", mount_options=opts)
    meas = trace.devices[dev].stream
    pred = predict_fs_cell("ext4", w, "nolimit", dev, ra_kb, mount_options=opts)
    assert meas.write_bytes >= 2 * 32 * MIB, meas.totals()
    assert abs(pred.write_bytes - meas.write_bytes) <= 0.1 * meas.write_bytes, (pred.totals(), meas.totals())
