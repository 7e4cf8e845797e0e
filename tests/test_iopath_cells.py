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
@pytest.mark.slow
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


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("direct_io", [False, True], ids=["buffered", "direct_io"])
def test_a_buffered_loop_serves_reads_from_the_hosts_cache_where_direct_io_reaches_the_device(tmp_path, loops,
                                                                                             direct_io):
    # ext4 in an image on ext4 on a traced host loop device. fio lays its file out (written and
    # fsynced: the loop device's flush fsyncs the image, so it reaches the host device), then reads
    # it with O_DIRECT. A buffered loop device reads the image through the host's page cache, which
    # still holds the pages it wrote (cached twice: double caching): no read reaches the host
    # device. With direct I/O every read does. blktrace on the host device against the model.
    _require_cells("fio", "mkfs.ext4")
    import subprocess

    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.trace.record import record
    from diskmodel.model.iopath import parse_workload, run
    from diskmodel.model.stacks.loop_file import LoopFile
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    mkfs = ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]
    host_img = tmp_path / "host"
    with open(host_img, "wb") as fh:
        fh.truncate(1 << 30)
    host = loops.attach(host_img)
    subprocess.run(mkfs + [host], check=True, capture_output=True)
    outer = loops.mount(host, tmp_path / "outer")
    image = outer / "image"
    with open(image, "wb") as fh:
        fh.truncate(256 * MIB)
    inner = loops.attach(image, direct_io=direct_io)
    subprocess.run(mkfs + [inner], check=True, capture_output=True)
    mnt = loops.mount(inner, tmp_path / "inner")
    subprocess.run(["sync"], check=True)
    argv = ["fio", "--name=j", f"--filename={mnt / 'f'}", "--rw=read", "--bs=1M", "--size=16M", "--direct=1",
            "--ioengine=psync", "--output=/dev/null", "--eta=never"]
    with runstate.ensure_run("test loop double caching"):
        trace, status = record(argv, [host], say=lambda line: None)
    assert status == 0
    name = os.path.basename(host)
    meas = trace.devices[name].stream
    loop = LoopFile(Partition(0, 1 << 30, name, "sda"), 256 * MIB, allocation="sparse", host_file_system="ext4",
                    direct_io=direct_io, name=os.path.basename(inner))
    pred = run(Stack(FileSystemNode(kind="ext4", volume=loop)), parse_workload("fio:rw=read,bs=1M,size=16M,direct=1"))[name]
    assert meas.write_bytes >= 16 * MIB and pred.write_bytes >= 16 * MIB, (pred.totals(), meas.totals())
    if direct_io:
        assert meas.read_bytes >= 16 * MIB, meas.totals()
        assert abs(pred.read_bytes - meas.read_bytes) <= 0.1 * meas.read_bytes, (pred.totals(), meas.totals())
    else:
        assert meas.read_bytes < MIB and pred.read_bytes < MIB, (pred.totals(), meas.totals())


@pytest.mark.integration
@pytest.mark.slow
def test_sigterm_during_a_page_cache_cell_tears_the_cell_down():
    # The cell's loop device, mounts, memory cgroup and tracer are recorded in its run; SIGTERM
    # while the traced command runs (inside the cgroup) ends the run with its teardown.
    _require_cells("postmark", "mkfs.ext4")
    import signal
    import subprocess
    import time
    from pathlib import Path

    from conftest import wait_for

    code = ("from diskmodel.calibrate.trace.fs_cells import FS_WORKLOADS, run_fs_cell; "
            "run_fs_cell('ext4', {w.name: w for w in FS_WORKLOADS}['postmark_test3'], 'cg64m')")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    cgroup = Path(f"/sys/fs/cgroup/memory/diskmodel-iopath-{child.pid}")
    try:
        wait_for(lambda: cgroup.is_dir() or child.poll() is not None, 120, "the cell's memory cgroup")
        assert child.poll() is None, child.stderr.read()
        time.sleep(1.0)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "SIGTERM" in err
    assert not cgroup.exists()
    marker = f"-{child.pid}-"
    loops_left = subprocess.run(["losetup", "-l", "-n", "-O", "BACK-FILE"], capture_output=True, text=True).stdout
    assert not [line for line in loops_left.splitlines() if marker in line and "fscell-" in line]
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if marker in line]
