"""Seed 003's copy as dd steps on the I/O path, a workload's measured pace, and the VM cells' scripts.

The references are the workloads' own bytes: a ``dd conv=fsync`` of N bytes must put N bytes on the
disk below every layer before its closing flush, and reading back a file written before the workload
must read its N bytes from the disk, whatever the layers (a buffered loop image, a thin volume).
"""
from __future__ import annotations

import numpy as np
import pytest

from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.iopath import parse_workload
from diskmodel.model.iopath.fileops import Kind
from diskmodel.model.iopath.stream import Flag, Op
from diskmodel.model.iopath.workloads_copy import dd_copy
from diskmodel.model._checks import FieldError
from diskmodel.model.iopath.workloads_pace import paced
from diskmodel.model.stacks.loop_file import LoopFile
from diskmodel.model.predict import predict
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.stacks.volumes import Partition

MIB = 1 << 20
SIZE = 4 * MIB


def _native(kind="ext3"):
    return Stack(FileSystemNode(Partition(MIB, 512 * MIB), kind=kind), (PresetDrive("wd800bd"),), "native")


def _loop(allocation):
    image = LoopFile(Partition(MIB, 512 * MIB), 384 * MIB, allocation=allocation, host_file_system="ext3",
                     direct_io=False)
    return Stack(FileSystemNode(image, kind="ext3"), (PresetDrive("wd800bd"),), "loop")


def _nested(layers: int):
    volume = Partition(MIB, 512 * MIB)
    for size in (384 * MIB, 256 * MIB, 160 * MIB)[:layers]:
        volume = LoopFile(volume, size, allocation="sparse", host_file_system="ext2", direct_io=False)
    return Stack(FileSystemNode(volume, kind="ext2"), (PresetDrive("wd800bd"),), f"{layers} loops")


def _thin():
    thin = ThinVolume(Partition(MIB, 256 * MIB), pool_size_bytes=192 * MIB, virtual_size_bytes=192 * MIB,
                      chunk_size_bytes=64 << 10, metadata_size_bytes=4 * MIB)
    return Stack(FileSystemNode(thin, kind="ext4"), (PresetDrive("wd800bd"),), "thin")


def test_dd_steps_are_the_measured_commands():
    write = parse_workload(f"dd:size={SIZE},step=write")
    kinds = write.kind.tolist()
    assert kinds[0] == Kind.CREATE and kinds[-1] == Kind.FSYNC  # conv=fsync, no closing sync
    assert kinds.count(Kind.WRITE) == 4 and int(write.size_bytes[write.kind == Kind.WRITE].sum()) == SIZE
    read = parse_workload(f"dd:size={SIZE},step=read")
    assert int(read.initial_bytes[0]) == SIZE  # on the device before the step
    assert set(read.kind.tolist()) == {Kind.READ} and int(read.size_bytes.sum()) == SIZE


def test_dd_bad_key_or_step_is_one_line():
    with pytest.raises(ValueError, match="workload dd: key 'count'"):
        parse_workload("dd:count=4")
    with pytest.raises(ValueError, match="step = 'append'"):
        dd_copy(SIZE, "append")


@pytest.mark.parametrize("stack", [_native(), _loop("sparse"), _loop("zero_filled"), _nested(2), _nested(3)],
                         ids=["native", "sparse", "zero", "2 loops", "3 loops"])
def test_dd_write_reaches_the_disk_before_its_last_flush(stack):
    p = predict(stack, f"dd:size={SIZE},step=write")
    disk = p.streams["sda"]
    data = (disk.op == Op.WRITE) & ((disk.flags & Flag.META) == 0)
    assert int(disk.size_bytes[data].sum()) >= SIZE
    flushes = np.flatnonzero((disk.op == Op.FLUSH) | ((disk.flags & Flag.PREFLUSH) != 0))
    assert flushes.size and np.flatnonzero(data).max() < flushes.max()


@pytest.mark.parametrize("stack", [_native(), _loop("sparse"), _loop("zero_filled"), _thin()],
                         ids=["native", "sparse", "zero", "thin"])
def test_reading_back_a_file_written_before_reads_it_from_the_disk(stack):
    p = predict(stack, f"dd:size={SIZE},step=read")
    disk = p.streams["sda"]
    assert int(disk.size_bytes[disk.op == Op.READ].sum()) >= SIZE


def test_paced_puts_the_workloads_end_at_the_measured_time():
    ops = parse_workload("tar:files=20,file_bytes=16k")
    out = paced(ops, 0.5)
    # the end is the last call's return (FileOps.end_s), not its issue
    assert out.app_end_s == pytest.approx(0.5) and out.time_s.max() < 0.5
    # the tool's start keeps its share before the first operation; the spacing scales alike
    from diskmodel.model.iopath.workloads_pace import PROCESS_START_S

    scale = 0.5 / (ops.app_end_s + PROCESS_START_S)
    assert out.time_s.min() == pytest.approx(PROCESS_START_S * scale)
    assert np.allclose(np.diff(out.time_s), np.diff(ops.time_s) * scale)
    assert out.time_s.max() == pytest.approx((ops.time_s.max() + PROCESS_START_S) * scale)
    order = np.argsort(ops.time_s, kind="stable")
    assert np.all(np.diff(out.time_s[order]) >= 0)
    with pytest.raises(FieldError, match=r"^app_s must be .* \(got 0\.0\)$"):
        paced(ops, 0.0)


def test_the_last_read_call_copies_its_data_after_it_arrives():
    """filemap_read copies a call's pages to the application once they are up to date, so a read's last
    call returns a copy's time after its last window completes. In the VM's log of the copy on four striped
    drives the guest's dd returned 10.4 ms after the last window completed, of a 55.6 ms pace for four
    1 MiB calls. The model had the last call return with its data."""
    from diskmodel.model.iopath.fileops import CALL_S, COPY_BYTES_PER_S

    ops = parse_workload(f"dd:size={SIZE},step=read")
    last = float(ops.time_s.max())
    assert ops.app_end_s - last == pytest.approx(CALL_S + MIB / COPY_BYTES_PER_S)
    for app_s in (None, 0.06):
        run = ops if app_s is None else paced(ops, app_s)
        timing = predict(_native(), run).timing
        copy_s = run.app_end_s - float(run.time_s.max())
        assert timing.elapsed_s == pytest.approx(float(timing.completion_s.max()) + copy_s, rel=1e-6)


def test_paced_workload_takes_at_least_its_pace():
    stack = _native()
    slow = predict(stack, paced(parse_workload(f"dd:size={SIZE},step=read"), 1.0))
    assert slow.elapsed_s >= 1.0


def test_tar_meets_the_files_in_readdir_hash_order_directory_by_directory():
    from diskmodel.model.iopath.workloads_files import readdir_order

    order = readdir_order(200, 2, "hash")
    assert sorted(order) == list(range(200))
    first_dir = [f // 100 for f in order[:100]]
    assert len(set(first_dir)) == 1  # one directory's files together
    assert order[:100] != sorted(order[:100])  # not the order they were made
    assert readdir_order(200, 2, "creation") == list(range(200))
    with pytest.raises(ValueError, match="order = 'name'"):
        parse_workload("tar:files=10,order=name")


def test_tar_in_hash_order_through_a_loop_image_reads_ahead_only_after_files_already_read():
    # In creation (disk) order the files are one sequential stream to the host's read-ahead on the
    # image. Met out of that order, a file whose neighbour before it on disk is not cached yet is read
    # on its own, and one whose neighbour was read starts a context window (page_cache_sync_ra) that
    # takes the files after it along: fewer requests than files, more than in disk order.
    stack = _loop("sparse")
    hashed = predict(stack, "tar:files=100,file_bytes=16k,order=hash").streams["sda"]
    made = predict(stack, "tar:files=100,file_bytes=16k,order=creation").streams["sda"]
    n_hashed, n_made = int((hashed.op == Op.READ).sum()), int((made.op == Op.READ).sum())
    assert n_made < 25 < 60 < n_hashed < 100
    assert int(hashed.size_bytes[hashed.op == Op.READ].sum()) == int(made.size_bytes[made.op == Op.READ].sum())


def test_a_named_workload_is_printed_with_its_definition():
    from diskmodel.model.iopath.workload_spec import describe_workload

    assert describe_workload("dd:size=4M,step=read").startswith("dd read: the 4194304 B file")
    assert "200 files of 16384 B in 2 directories" in describe_workload("tar:files=200,file_bytes=16k,dirs=2")
    assert describe_workload("fio:rw=read") == "fio:rw=read"  # its spec is its definition
    first = predict(_native(), "image:size=8M,kind=sparse").summary().splitlines()[0]
    assert first.startswith("image:size=8M,kind=sparse [image sparse: 8388608 B by truncate -s] on ")


def test_an_fio_workload_takes_io_size_and_a_read_mix_as_fio_does():
    # fio(1): io_size bytes moved within the file's size (a random job by its random map: no block twice
    # before every block once); rw=randrw reads rwmixread percent of its requests; a job that reads lays
    # its file out first.
    ops = parse_workload("fio:rw=randrw,bs=4k,size=16M,io_size=12M,rwmixread=25,seed=3")
    io = ops.take((ops.kind == Kind.READ) | (ops.kind == Kind.WRITE))
    assert io.kind[0] == Kind.WRITE and io.size_bytes[0] == 16 << 20  # the file laid out, in calls of bs
    job = io.take(np.arange(io.kind.size) >= 1)
    assert job.kind.size == 3072
    blocks = job.offset_bytes // 4096
    assert np.unique(blocks).size == 3072 and blocks.max() < 4096  # one pass, within the file
    share = float((job.kind == Kind.READ).mean())
    assert 0.22 < share < 0.28
    seq = parse_workload("fio:rw=write,bs=1M,size=4M,io_size=10M")
    writes = seq.take(seq.kind == Kind.WRITE)
    assert (writes.offset_bytes // (1 << 20)).tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]  # starts over
    with pytest.raises(ValueError, match="rwmixread = '70' applies to a mixed job"):
        parse_workload("fio:rw=read,rwmixread=70")


def test_an_fio_read_job_counts_the_job_alone_as_fio_does():
    # fio lays a read job's file out (writes it, fsyncs, drops it) and reports the job's bandwidth
    # alone. On a flat drive (1 ms a request plus 100 MB/s) 16 direct 1 MiB reads at queue depth 1 take
    # 16 x (1 ms + 10.49 ms) plus fio's calls: within 3 % of 91 MB/s; the layout's 16 MiB of writes
    # (the same again) neither add time nor bytes.
    from diskmodel.model.iopath.timing import FlatDrive
    from diskmodel.model.predictions.results import predict_stack

    flat = FlatDrive(1e-3, 100e6, 1 << 30)
    stack = _native("ext4")
    p = predict_stack(stack, "fio:rw=read,bs=1M,size=16M,direct=1", drives={"sda": flat})
    assert p.read_bytes == 16 * MIB and p.write_bytes == 0
    assert p.throughput_bytes_per_s == pytest.approx(MIB / (1e-3 + MIB / 100e6), rel=0.03)
    assert any(topic == "counted" for topic, _ in p.assumptions)
    w = predict_stack(stack, "fio:rw=write,bs=1M,size=16M,direct=1", drives={"sda": flat})
    assert w.write_bytes == 16 * MIB and not any(topic == "counted" for topic, _ in w.assumptions)
