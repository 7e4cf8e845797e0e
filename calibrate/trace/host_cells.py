"""The host's cells of the I/O path's check: loop files (zero-filled, sparse, nested two deep) on
loop devices, traced while an O_DIRECT fio job runs on the top device. (The partition cell runs in
the VM: this host's kernel reads no MBR partition table, CONFIG_MSDOS_PARTITION being unset.)

Each cell builds its stack afresh in the run (every loop device, mount and file recorded before it is
made, torn down by the run), records the traced device with :func:`.record.record` while fio runs,
and returns fio's iolog (the workload's top stream) with the measured trace. The image files live in
the run's own folder; a loop device is made with direct I/O on (``losetup --direct-io=on``), so a
request passes through to the file system under it (model/iopath's loop layer).
"""
from __future__ import annotations

import os
from pathlib import Path

from diskmodel.calibrate.bench import process
from diskmodel.calibrate.harness import devstate

from .matrix import Layer, Workload, fio_argv, read_fio_iolog
from .record import record

__all__ = ["HOST_STACKS", "run_host_cell", "file_extents"]

MIB = 1 << 20
TOP_BYTES = 32 * MIB


def _run(argv, input: str | None = None) -> str:
    proc = process.run(argv, timeout_s=300, input=input)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[:200]}")
    return proc.stdout


def _image(path: Path, size_bytes: int, zero: bool) -> Path:
    if zero:
        _run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={size_bytes // MIB}", "conv=fsync"])
    else:
        with open(path, "wb") as fh:
            fh.truncate(size_bytes)
    return path


def _loop(run, backing: Path, partscan: bool = False) -> str:
    st = os.stat(backing)
    res = run.intend("loop", backing=str(backing), backing_ino=st.st_ino,
                     backing_dev=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", offset_bytes=0)
    try:
        dev = _run(["losetup", "--direct-io=on", "--show", "-f", *(["-P"] if partscan else []), str(backing)]).strip()
    except BaseException:
        if not devstate.loops_over(str(backing)):
            run.absent(res)
        raise
    run.created(res, device=dev)
    dio = Path(f"/sys/block/{os.path.basename(dev)}/loop/dio").read_text().strip()
    if dio != "1":
        raise RuntimeError(f"{dev} over {backing}: the kernel refused direct I/O (loop/dio = {dio})")
    return dev


def _fs(run, dev: str, where: Path) -> Path:
    # Inode tables and journal written now, not by ext4lazyinit in the background of a trace.
    _run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev])
    where.mkdir()
    res = run.intend("mount", mountpoint=str(where))
    _run(["mount", dev, str(where)])
    run.created(res)
    return where


def file_extents(path: Path) -> list[tuple[int, int, int]]:
    """(file_offset, length, device_offset) bytes of *path*'s extents, from ``filefrag -v -b512``."""
    rows = []
    for line in _run(["filefrag", "-v", "-b512", str(path)]).splitlines():
        parts = line.replace(":", " ").replace("..", " ").split()
        if len(parts) >= 6 and parts[0].isdigit():
            logical, physical, length = int(parts[1]), int(parts[3]), int(parts[5])
            rows.append((logical * 512, length * 512, physical * 512))
    return rows


def _loops(run, folder: Path, depth: int, zero: bool):
    """*depth* loop files nested in ext4 on a loop device; the top device, the traced one, the layer."""
    outer = _loop(run, _image(folder / "outer", 320 * MIB, zero=False))
    dev, images = outer, []
    sizes = [TOP_BYTES + 8 * MIB * (depth - 1 - k) for k in range(depth)]  # each image holds the next
    for k in range(depth):
        mnt = _fs(run, dev, folder / f"mnt{k}")
        size = sizes[k] + (0 if k == depth - 1 else 64 * MIB)
        img = _image(mnt / "image", size, zero=zero or k < depth - 1)
        images.insert(0, (size, file_extents(img)))
        dev = _loop(run, img)
    return dev, outer, Layer("loop", (os.path.basename(outer),), {"images": images})


#: stack name -> builder(run, folder) -> (top device, traced device, layer).
HOST_STACKS = {
    "loop_zero_filled": lambda run, folder: _loops(run, folder, 1, True),
    "loop_sparse": lambda run, folder: _loops(run, folder, 1, False),
    "loop_nested": lambda run, folder: _loops(run, folder, 2, True),
}


def run_host_cell(stack: str, w: Workload):
    """(top stream, BlockTrace, layer, the largest request the traced device takes [KiB]) of one host cell."""
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.interrupts import handle_signals

    with handle_signals(), runstate.ensure_run(f"iopath check cell {stack}/{w.name}") as run:
        folder = run.temp_dir("cell-")
        top, traced, layer = HOST_STACKS[stack](run, folder)
        iolog = folder / "iolog"
        trace, status = record(fio_argv(w, top, TOP_BYTES, str(iolog)), [traced], say=lambda line: None)
        if status != 0:
            raise RuntimeError(f"fio failed on {stack}/{w.name} (exit {status})")
        queue = Path(f"/sys/block/{os.path.basename(traced)}/queue")
        # A request is split at max_sectors_kb and at max_segments segments (block/blk-merge.c,
        # bio_split_rw): fio's O_DIRECT buffer is user memory, whose pages are in general not
        # physically contiguous, so each 4 KiB page is a segment of its own.
        max_kb = min(int((queue / "max_sectors_kb").read_text()), int((queue / "max_segments").read_text()) * 4)
        top_stream = read_fio_iolog(iolog.read_text(), str(iolog))
        # run's teardown removes the stack; the layer names the traced device by its kernel name
    return top_stream, trace, layer, max_kb
