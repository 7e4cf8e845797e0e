"""diskmodel.calibrate.trace: blkparse's output read into request streams, traces recorded with the
real blktrace (or the kernel's blk tracer under lockdown) on loop devices, and the I/O path's
loop direct-I/O pass-through held against the measured trace."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require_root, require_tools
from _helpers import assert_one_error_line

from diskmodel.calibrate.trace import load_trace, parse_blkparse_text, save_trace
from diskmodel.calibrate.trace.ftrace_blk import split_binary
from diskmodel.model.iopath import Flag, Op, loop

# blkparse's default output, as blkparse 1.3 prints it for a loop device (the lines of a real trace,
# with a metadata read, a preflush+FUA write, an empty flush and its completion, a discard), then
# the summary blkparse prints at the end.
SAMPLE = """\
  7,0    1        1     0.000000000 15304  Q  WS 0 + 128 [dd]
  7,0    1        2     0.000050745 15304  G  WS 0 + 128 [dd]
  7,0    1        5     0.000057668 15304  D  WS 0 + 128 [dd]
  7,0    1        6     0.000895429    22  C  WS 0 + 128 [0]
  7,0    1        7     0.000924483    44  D  FN [kworker/1:1H]
  7,0    1        8     0.001711920    22  C  FN 0 [0]
  7,0    1        9     0.001725746    22  C  WS 0 [0]
  7,0    0        1     0.002000000   700  D  RM 2048 + 8 [ls]
  7,0    0        2     0.002500000    22  C  RM 2048 + 8 [0]
  7,0    0        3     0.003000000   701  D FWFS 4096 + 16 [jbd2/loop0-8]
  7,0    1       10     0.003500000   702  D   D 8192 + 2048 [fstrim]
  7,0    0        4     0.004000000    22  C FWFS 4096 + 16 [0]
  7,1    0        1     0.005000000   703  D   R 0 + 8 [cat]
  9,0    0        5     0.006000000   704  Q   W 16 + 8 [fio]
  9,0    0        6     0.006000000   704  X   W 16 / 20 [fio]
CPU0 (7,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,       64KiB
Total (7,0):
"""


def test_blkparse_text_gives_each_devices_issues_with_ops_flags_and_completions():
    trace = parse_blkparse_text(SAMPLE.splitlines(), "sample", {"7,0": "loop0"})
    assert list(trace.devices) == ["loop0", "7,1", "9,0"]
    dev = trace.devices["loop0"]
    s = dev.stream
    assert s.op.tolist() == [Op.WRITE, Op.FLUSH, Op.READ, Op.WRITE, Op.DISCARD]
    assert s.offset_bytes.tolist() == [0, 0, 2048 * 512, 4096 * 512, 8192 * 512]
    assert s.size_bytes.tolist() == [65536, 0, 4096, 8192, 2048 * 512]
    assert s.flags.tolist() == [Flag.SYNC, 0, Flag.META, Flag.PREFLUSH | Flag.FUA | Flag.SYNC, 0]
    np.testing.assert_allclose(s.time_s, [0.000057668, 0.000924483, 0.002, 0.003, 0.0035])
    # Completions pair with their issue (same op and range); the discard never completed.
    np.testing.assert_allclose(dev.complete_s[:4], [0.000895429, 0.001711920, 0.0025, 0.004])
    assert np.isnan(dev.complete_s[4])
    assert trace.devices["7,1"].stream.totals() == {"read_bytes": 4096, "write_bytes": 0, "read_requests": 1,
                                                    "write_requests": 0}
    # a bio-based device (md, dm) has no D: its queued bios are what it received
    md = trace.devices["9,0"].stream
    assert (md.op.tolist(), md.offset_bytes.tolist(), md.size_bytes.tolist()) == ([Op.WRITE], [16 * 512], [4096])


def test_a_trace_with_no_event_is_empty_not_an_error():
    # blkparse's whole output for a trace in which nothing happened
    text = "\nThroughput (R/W): 0KiB/s / 0KiB/s\nEvents (loop0): 0 entries\nSkips: 0 forward (0 -   0.0%)\n"
    assert parse_blkparse_text(text.splitlines(), "empty").devices == {}


def test_trace_file_round_trip_keeps_every_field(tmp_path):
    trace = parse_blkparse_text(SAMPLE.splitlines(), "sample")
    path = save_trace(trace, tmp_path / "t.npz")
    back = load_trace(path)
    assert list(back.devices) == list(trace.devices)
    for name, dev in trace.devices.items():
        for f in ("time_s", "op", "offset_bytes", "size_bytes", "flags"):
            np.testing.assert_array_equal(getattr(back.devices[name].stream, f), getattr(dev.stream, f))
        np.testing.assert_array_equal(back.devices[name].complete_s, dev.complete_s)
    # blkparse's own text loads the same way
    text = tmp_path / "t.txt"
    text.write_text(SAMPLE)
    assert load_trace(text).totals() == trace.totals()


def _cli(*args, check=False):
    return subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", *args], capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("line, fragment", [
    ("  7,0    1        5     0.000057668 15304  D  WS 0 + 128 [dd]\nnot a trace line\n", "line 2"),
    ("  7,0    1        5     0.000057668 15304  D  WQ 0 + 128 [dd]\n", "line 1: RWBS 'WQ'"),
    ("  7,0    1        5     0.000057668 15304  Z  WS 0 + 128 [dd]\n", "line 1: action 'Z'"),
    ("  7,0    1        5     0.000057668 15304  D  WS [dd]\n", "line 1: a write issue with no"),
])
def test_a_trace_that_does_not_parse_is_one_line_naming_the_file_and_the_line(tmp_path, line, fragment):
    bad = tmp_path / "bad.txt"
    bad.write_text(line)
    stack = tmp_path / "stack.json"
    from diskmodel.model.stacks.stack import paper_stack
    stack.write_text(paper_stack("native").to_json())
    res = _cli("replay", str(bad), "--stack", str(stack))
    assert res.returncode == 2
    msg = assert_one_error_line(res.stderr, fragment)
    assert str(bad) in msg


@pytest.mark.slow
def test_missing_blktrace_is_one_line_naming_the_debian_package(tmp_path):
    # A PATH with blkparse (/usr/bin) but not blktrace (/usr/sbin).
    env = dict(os.environ, PATH="/usr/bin")
    res = subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", "trace", "record", "--device", "/dev/null",
                          "--output", str(tmp_path / "t.npz"), "--", "true"], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode != 0
    assert_one_error_line(res.stderr, "install the Debian package blktrace")
    assert not (tmp_path / "t.npz").exists()


def test_tracefs_binary_records_become_blktrace_files_per_cpu():
    # Two blk_io_trace records (magic | version 7) behind ftrace's 16-byte headers, on CPUs 1 and 0.
    def entry(cpu, sector, nbytes):
        head = struct.pack("<IIQ", 1234, cpu, 99)
        rec = struct.pack("<IIQQIIIIIHH", 0x65617407, 0, 5, sector, nbytes, 0x1, 1234, 7 << 20, cpu, 0, 0)
        return head + rec
    parts = split_binary(entry(1, 8, 4096) + entry(0, 16, 512) + entry(1, 24, 512))
    assert sorted(parts) == [0, 1]
    assert len(parts[1]) == 2 * 48 and len(parts[0]) == 48
    # sequence numbers counted again per CPU, from 1
    assert [struct.unpack_from("<I", parts[1], k * 48 + 4)[0] for k in range(2)] == [1, 2]
    with pytest.raises(ValueError, match="no blk_io_trace magic"):
        split_binary(b"\0" * 64)


def test_a_planted_tracer_record_makes_teardown_write_nothing_outside_the_tracer_settings(tmp_path):
    from diskmodel.calibrate.harness.resources import Resource, undo_one

    victim = tmp_path / "victim"
    victim.write_text("1")
    planted = {"enable": [str(victim)], "restore": {str(victim): "nop", "/sys/kernel/tracing/current_tracer": "x; rm"}}
    undo_one(Resource(0, "blktracer", planted))
    assert victim.read_text() == "1"
    from diskmodel.calibrate.trace.ftrace_blk import restore
    assert restore(planted).count("not a tracefs blk setting") == 3


def test_the_ring_buffer_size_to_restore_is_read_also_before_the_kernel_has_expanded_it():
    # A freshly booted kernel (6.x) reads "7 (expanded: 1408)" until a tracer first uses the buffer;
    # recording that text made the restore refuse it as a planted value and the recording fail.
    from diskmodel.calibrate.trace.ftrace_blk import _SETTINGS, _VALUES, buffer_kb_to_restore

    assert buffer_kb_to_restore("7 (expanded: 1408)") == "1408"
    assert buffer_kb_to_restore("16387\n") == "16387"
    assert _SETTINGS.match("/sys/kernel/tracing/buffer_size_kb") and _VALUES.match(buffer_kb_to_restore("7 (expanded: 1408)"))
    with pytest.raises(RuntimeError, match="buffer_size_kb reads 'x'"):
        buffer_kb_to_restore("x")


def test_replay_maps_the_trace_through_lvm_onto_the_disk():
    from diskmodel.calibrate.trace.replay import volume_streams
    from diskmodel.model.iopath import Stream
    from diskmodel.model.stacks.stack import paper_stack

    stack = paper_stack("lvm2")
    vol = stack.volume
    table = vol.segment_table()
    # one request inside each segment, 4 KiB from its start
    offs = table["logical_start_bytes"] + 4096
    s = Stream.from_arrays(time_s=np.arange(offs.size, dtype=float), op=np.full(offs.size, Op.WRITE),
                           offset_bytes=offs, size_bytes=np.full(offs.size, 4096))
    out = volume_streams(vol, s)
    disk = out[vol.physical_volumes[0].disk]
    np.testing.assert_array_equal(np.sort(disk.offset_bytes), np.sort(table["physical_start_bytes"] + 4096))


# --------------------------------------------------------------------------- real traces

def _require_tracing():
    require_root()
    require_tools("blktrace", "blkparse", "losetup", "dd", "fio", "filefrag", "mkfs.ext4")


@pytest.mark.integration
@pytest.mark.slow
def test_trace_record_measures_exactly_the_requests_dd_sends_to_a_loop_device(tmp_path, loops):
    _require_tracing()
    img = tmp_path / "img"
    with open(img, "wb") as fh:
        fh.truncate(32 << 20)
    dev = loops.attach(img, direct_io=True)
    out = tmp_path / "t.npz"
    res = _cli("trace", "record", "--device", dev, "--output", str(out), "--json", "--",
               "dd", "if=/dev/zero", f"of={dev}", "bs=64k", "count=5", "seek=3", "oflag=direct")
    assert res.returncode == 0, res.stderr
    trace = load_trace(out)
    s = trace.devices[os.path.basename(dev)].stream
    w = s.take(s.op == Op.WRITE)
    assert w.offset_bytes.tolist() == [(3 + k) * 65536 for k in range(5)]
    assert w.size_bytes.tolist() == [65536] * 5
    assert s.read_requests == 0
    assert np.isfinite(trace.devices[os.path.basename(dev)].complete_s).all()
    # the tracer settings are back as they were
    assert not Path("/sys/class/block", os.path.basename(dev), "trace", "enable").read_text().strip() == "1"


def _extents(path: Path) -> list[tuple[int, int, int]]:
    """(file_offset, length, disk_offset) bytes of *path*'s extents, from ``filefrag -v -b512``."""
    text = subprocess.run(["filefrag", "-v", "-b512", str(path)], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in text.splitlines():
        parts = line.replace(":", " ").replace("..", " ").split()
        if len(parts) >= 6 and parts[0].isdigit():
            logical, _, physical, _, length = (int(parts[k]) for k in (1, 2, 3, 4, 5))
            rows.append((logical * 512, length * 512, physical * 512))
    return rows


@pytest.mark.integration
@pytest.mark.slow
def test_loop_direct_io_passes_each_request_through_to_where_the_file_lies(tmp_path, loops):
    """A direct-I/O loop device over a file in ext4 (itself on a loop device): fio's O_DIRECT random
    writes and reads on the inner loop reach the outer device one for one, mapped through the
    image's extents, as model/iopath's loop layer predicts."""
    _require_tracing()
    outer_img = tmp_path / "outer"
    with open(outer_img, "wb") as fh:
        fh.truncate(256 << 20)
    outer = loops.attach(outer_img, direct_io=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", outer], check=True, capture_output=True)
    mnt = loops.mount(outer, tmp_path / "mnt")
    image = mnt / "image"
    # zero-filled, so its extents are written and an overwrite needs no allocation
    subprocess.run(["dd", "if=/dev/zero", f"of={image}", "bs=1M", "count=64", "conv=fsync"], check=True,
                   capture_output=True)
    inner = loops.attach(image, direct_io=True)
    assert Path(f"/sys/block/{os.path.basename(inner)}/loop/dio").read_text().strip() == "1"
    out = tmp_path / "t.npz"
    res = _cli("trace", "record", "--device", inner, "--device", outer, "--output", str(out), "--",
               "fio", "--name=w", f"--filename={inner}", "--direct=1", "--rw=randrw", "--bs=4k",
               "--size=64M", "--io_size=2M", "--ioengine=psync", "--randseed=7", "--output=/dev/null")
    assert res.returncode == 0, res.stderr
    trace = load_trace(out)
    measured_inner = trace.devices[os.path.basename(inner)].stream
    measured_outer = trace.devices[os.path.basename(outer)].stream
    extents = _extents(image)
    predicted = loop(measured_inner, 64 << 20, extents)
    assert len(predicted.file) == 0  # no hole: nothing is left to the host file system
    # What the outer device saw inside the image's extents is the prediction, request for request;
    # the rest is ext4's own (journal and inode writes for the image's mtime).
    starts = np.array([e[2] for e in extents])
    ends = starts + np.array([e[1] for e in extents])
    inside = ((measured_outer.offset_bytes[:, None] >= starts) & (measured_outer.end_bytes[:, None] <= ends)).any(1)
    data = measured_outer.take(inside & (measured_outer.op != Op.FLUSH))
    key = lambda s: sorted(zip(s.op.tolist(), s.offset_bytes.tolist(), s.size_bytes.tolist()))  # noqa: E731
    assert len(predicted.device) == measured_inner.read_requests + measured_inner.write_requests > 400
    assert key(data) == key(predicted.device)


# --------------------------------------------------------------------------- md and dm, in the VM

def _key(s):
    return sorted(zip(s.op.tolist(), s.offset_bytes.tolist(), s.size_bytes.tolist()))


@pytest.fixture(scope="module")
def vm_small_writes():
    """One VM run: 4 KiB random O_DIRECT writes (queue depth 1) on md RAID 1, 5, 6 and a thin volume,
    each traced with blktrace on the array and its members: {stack: (top stream, BlockTrace, layer)}."""
    require_root()
    require_tools("qemu-system-x86_64", "blktrace", "blkparse", "mdadm", "dmsetup", "fio")
    from diskmodel.calibrate.bench.vm import run_script_in_vm, vm_available
    from diskmodel.calibrate.trace.matrix import WORKLOADS
    from diskmodel.calibrate.trace.vm_cells import SCRATCH_BYTES, VM_STACKS, guest_script, parse_guest_output

    ok, why = vm_available()
    if not ok:
        from conftest import skip_or_fail
        skip_or_fail(f"no VM: {why}")
    w = next(x for x in WORKLOADS if x.name == "randwrite_4k_qd1")
    stacks = ("md_raid1", "md_raid5", "md_raid6", "thin")
    res = run_script_in_vm(guest_script([(s, w) for s in stacks]), scratch_disk_bytes=SCRATCH_BYTES,
                           memory_bytes=1 << 30, timeout_s=1500)
    assert res.returncode == 0, res.output[-2000:]
    return {s: (top, trace, VM_STACKS[s]()[2]) for s, _, top, trace, _ in parse_guest_output(res.output)}


def _data_region(s, data_offset):
    """The requests in md's data area (md's own superblock writes sit before its data offset)."""
    return s.take((s.offset_bytes >= data_offset) & (s.op != Op.FLUSH))


@pytest.mark.integration
@pytest.mark.slow
def test_raid1_writes_every_byte_to_both_mirrors_as_predicted(vm_small_writes):
    from diskmodel.calibrate.trace.matrix import predict

    top, trace, layer = vm_small_writes["md_raid1"]
    predicted = predict(layer, top)
    off = layer.params["data_offset_bytes"]
    for member in layer.devices:
        measured = _data_region(trace.devices[member].stream, off)
        assert measured.write_bytes == top.write_bytes == 256 * 4096
        assert _key(measured) == _key(predicted[member])
    # the array's own stream is what fio logged
    assert _key(trace.devices["top"].stream.take(trace.devices["top"].stream.op == Op.WRITE)) == _key(top)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("stack", ["md_raid5", "md_raid6"])
def test_parity_small_writes_read_what_the_stripe_arithmetic_says(vm_small_writes, stack):
    """A 4 KiB write on RAID 5 (3 members) or RAID 6 (4 members) reads the stripe's other data page
    (reconstruct-write) and writes the data page and the parities: the reads on each member are the
    prediction's, request for request, but for writes whose stripe md still had cached."""
    from diskmodel.calibrate.trace.matrix import predict

    top, trace, layer = vm_small_writes[stack]
    predicted = predict(layer, top)
    off = layer.params["data_offset_bytes"]
    pred_reads = sum(p.read_requests for p in predicted.values())
    meas_reads = sum(_data_region(trace.devices[m].stream, off).read_requests for m in layer.devices)
    assert pred_reads == top.write_requests > 0  # one read per small write: the other data page
    assert abs(meas_reads - pred_reads) <= 0.05 * pred_reads, (meas_reads, pred_reads)
    parities = 1 if stack == "md_raid5" else 2
    meas_writes = sum(_data_region(trace.devices[m].stream, off).write_bytes for m in layer.devices)
    assert meas_writes == (1 + parities) * top.write_bytes
    common = 0
    for m in layer.devices:
        meas = _data_region(trace.devices[m].stream, off)
        common += len(set(_key(meas.take(meas.op == Op.READ))) & set(_key(predicted[m].take(predicted[m].op == Op.READ))))
    assert common >= 0.95 * pred_reads


@pytest.mark.integration
@pytest.mark.slow
def test_thin_pool_zeroes_each_new_block_a_small_write_lands_in(vm_small_writes):
    from diskmodel.calibrate.trace.matrix import predict

    top, trace, layer = vm_small_writes["thin"]
    predicted = predict(layer, top)
    data = trace.devices["m0"].stream
    pred = predicted["m0"]
    zeros = int(np.count_nonzero((pred.flags & Flag.ZERO) != 0))
    blocks = np.unique(top.offset_bytes // layer.params["chunk_bytes"]).size
    assert zeros == blocks > 100  # every first write is 4 KiB of a 64 KiB block
    assert data.write_bytes == pred.write_bytes == top.write_bytes + zeros * layer.params["chunk_bytes"]


def test_fio_iolog_is_the_workloads_top_stream_and_raid5_writes_become_page_bios():
    from diskmodel.calibrate.trace.matrix import Layer, as_bios, predict, read_fio_iolog

    text = ("fio version 3 iolog\n27 /dev/md0 add\n148 /dev/md0 open\n153 /dev/md0 write 0 131072\n"
            "160 /dev/md0 read 65536 8192\n170 /dev/md0 close\n")
    top = read_fio_iolog(text)
    assert (top.op.tolist(), top.offset_bytes.tolist(), top.size_bytes.tolist()) == ([Op.WRITE, Op.READ],
                                                                                       [0, 65536], [131072, 8192])
    with pytest.raises(ValueError, match="line 2"):
        read_fio_iolog("fio version 3 iolog\n153 /dev/md0 write 0\n")
    layer = Layer("raid5", ("m0", "m1", "m2"), {"chunk_bytes": 65536, "data_offset_bytes": 0})
    bios = as_bios(layer, top, predict(layer, top))
    # a full-stripe write: 16 pages on each data member and the parity member, one 4 KiB bio each;
    # the read (chunk-aligned) stays one bio of 8 KiB
    writes = [b.take(b.op == Op.WRITE) for b in bios.values()]
    assert sorted(len(w) for w in writes) == [16, 16, 16] and all((w.size_bytes == 4096).all() for w in writes)
    reads = [b.take(b.op == Op.READ) for b in bios.values()]
    assert sorted(r.size_bytes.tolist() for r in reads if len(r)) == [[8192]]


def _debugfs_mounts() -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if line.split()[2] == "debugfs"]


def _record_late_writes(dev: str, out: Path, wait_s: float, count: int) -> subprocess.Popen:
    """``trace record`` of *count* O_DIRECT 64 KiB writes to *dev*, made *wait_s* after the command starts."""
    writes = ("import mmap, os, time\n"
              f"time.sleep({wait_s})\n"
              f"fd = os.open({dev!r}, os.O_WRONLY | os.O_DIRECT)\n"
              "buf = mmap.mmap(-1, 65536)\n"
              f"for k in range({count}):\n"
              "    os.pwrite(fd, buf, k * 65536)\n"
              "os.close(fd)\n")
    return subprocess.Popen([sys.executable, "-m", "diskmodel.calibrate.cli", "trace", "record", "--device", dev,
                             "--output", str(out), "--", sys.executable, "-c", writes],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.integration
@pytest.mark.slow
def test_a_trace_that_ends_first_leaves_a_concurrent_trace_its_debugfs(tmp_path, loops):
    """Two recordings overlap, the one started first ending first. Each reads debugfs where it found it or
    where it mounted an instance of its own, inside its work folder: the system's ``/sys/kernel/debug`` is
    never mounted by a run (before, the run that mounted it there unmounted it at its end, whoever still
    traced through it), and both traces hold exactly their writes."""
    import time

    _require_tracing()
    before = _debugfs_mounts()
    devs = []
    for name in ("a", "b"):
        img = tmp_path / name
        with open(img, "wb") as fh:
            fh.truncate(8 << 20)
        devs.append(loops.attach(img, direct_io=True))
    first = _record_late_writes(devs[0], tmp_path / "a.npz", 3.0, 2)
    time.sleep(1.5)  # the first is tracing by now; the second traces on after the first has ended
    second = _record_late_writes(devs[1], tmp_path / "b.npz", 6.0, 5)
    time.sleep(1.5)
    during = _debugfs_mounts()
    _, err_a = first.communicate(timeout=120)
    _, err_b = second.communicate(timeout=120)
    assert first.returncode == 0, err_a
    assert second.returncode == 0, err_b
    for dev, out, count in ((devs[0], "a.npz", 2), (devs[1], "b.npz", 5)):
        s = load_trace(tmp_path / out).devices[os.path.basename(dev)].stream
        assert s.take(s.op == Op.WRITE).offset_bytes.tolist() == [k * 65536 for k in range(count)]
    if "/sys/kernel/debug" not in before:
        assert "/sys/kernel/debug" not in during
    assert _debugfs_mounts() == before


def test_trace_record_refuses_an_output_that_is_no_regular_file_before_tracing(tmp_path):
    """--output and --blkparse-text are checked before anything runs: a FIFO hung the run (blkparse
    writing into it), a device node was replaced by the trace, a directory failed after the trace."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.cli.trace import _output_file

    os.mkfifo(tmp_path / "fifo")
    for given, what in ((tmp_path / "fifo", "not a regular file"), (tmp_path, "is a directory"),
                        (tmp_path / "none" / "t.npz", "does not exist")):
        with pytest.raises(UsageError, match=what) as err:
            _output_file("--blkparse-text", str(given))
        assert str(err.value).startswith("--blkparse-text '")
    assert _output_file("--output", str(tmp_path / "t.npz")) == tmp_path / "t.npz"
