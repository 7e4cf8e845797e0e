"""Buffered loop layers (model/iopath/path.py ``_loop``, fs_blockmap.py, timing.py) against the requests
an emulated drive served under Dagenais' nested loop files (tests/golden/loop_requests_wd800bd.json,
see tests/golden/README.md), and the mechanisms worked out by hand."""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from diskmodel.model.iopath import Flag, Op
from diskmodel.model.iopath.fileops import FileOps, Kind
from diskmodel.model.iopath.fs import file_system
from diskmodel.model.iopath.fs_layout import FsParams
from diskmodel.model.iopath.pagecache import page_cache
from diskmodel.model.iopath.timing import FlatDrive, time_streams

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

GOLDEN = json.loads((Path(__file__).parent / "golden" / "loop_requests_wd800bd.json").read_text())
CELLS = {c["stack"]: c for c in GOLDEN["cells"]}
B = 4096
R, W, F = int(Op.READ), int(Op.WRITE), int(Op.FLUSH)


def _measured(stack: str) -> tuple[float, float]:
    """Requests (flushes aside) and the drive's busy time [s] over the four dd steps, each the mean of
    its repeats."""
    steps: dict = {}
    for span in CELLS[stack]["spans"]:
        rows = [r for r in span["requests"] if r[0] != F]
        steps.setdefault(span["step"], []).append((len(rows), sum(r[4] for r in rows)))
    n, busy = np.sum([np.mean(v, axis=0) for v in steps.values()], axis=0)
    return float(n), float(busy)


@lru_cache(maxsize=None)
def _predicted(stack: str) -> tuple[float, float]:
    from stacks_check import model_stack

    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.predict import predict

    n = busy = 0.0
    for step in dict.fromkeys(s["step"] for s in CELLS[stack]["spans"]):
        t = predict(model_stack(stack, "wd800bd"), parse_workload(step, sync_at_end=False)).timing
        keep = t.op != F
        n += int(keep.sum())
        busy += float((t.completion_s - t.start_s)[keep].sum())
    return n, busy


@pytest.mark.parametrize("stack", ["ext2, 1 loop layer", "ext2, 2 loop layers", "ext2, 3 loop layers"])
def test_nested_loop_files_send_the_drive_what_the_emulated_drive_served(stack):
    """Seed 003's copy (dd of 1 and 4 MiB with conv=fsync, read back after a cache drop) on ext2 over
    1-3 sparse loop images: the drive's requests and its busy time within a fifth of what the emulated
    drive served (the same simulation times both)."""
    (mn, mb), (pn, pb) = _measured(stack), _predicted(stack)
    # requests within a fifth; a quarter while the model read the held-open images' block maps after the drop
    # (2 and 3 layers: +24 and +21 %); a fifth again once they were not (fs_blockmap: -4.8, +1.6, -1.7 %)
    assert abs(pn - mn) / mn <= 0.2, (pn, mn)
    assert abs(pb - mb) / mb <= 0.2, (pb, mb)


def test_each_loop_layer_adds_requests_as_measured():
    """Each nested image adds requests (its host's block map, fsync and serial reads), as measured."""
    stacks = ["ext2, no loop layer", "ext2, 1 loop layer", "ext2, 2 loop layers", "ext2, 3 loop layers"]
    measured = [_measured(s)[0] for s in stacks]
    predicted = [_predicted(s)[0] for s in stacks]
    assert measured == sorted(measured) and predicted == sorted(predicted)
    assert predicted[-1] - predicted[0] >= 0.6 * (measured[-1] - measured[0]), (predicted, measured)


def _ops(rows, initial) -> FileOps:
    cols = list(zip(*[tuple(r) + (r[4], False) for r in rows]))
    dt = (np.float64, np.int8, np.int64, np.int64, np.int64, np.int64, bool)
    return FileOps(*(np.asarray(c, d) for c, d in zip(cols, dt)), np.zeros(len(initial), np.int64),
                   np.asarray(initial, np.int64))


def _stream(kind, o):
    r = page_cache(o)
    return file_system(r.ops, FsParams(kind, 1 << 30), sync=r.sync).stream


def test_ext2_reads_a_files_indirect_block_before_its_blocks_past_the_twelfth():
    """A 1 MiB ext2 file on the device (after a cache drop) read at block 100: its indirect block
    first (a metadata read of its own), then the data; ext3's journal keeps it cached."""
    o = _ops([(0, Kind.STAT, 0, 0, 0), (0.001, Kind.READ, 0, 100 * B, B)], initial=(1 << 20,))
    s = _stream("ext2", o)
    data = np.flatnonzero((s.op == R) & ((s.flags & Flag.META) == 0))
    t0 = s.time_s[data[0]]
    chain = np.flatnonzero((s.op == R) & ((s.flags & Flag.META) != 0) & (s.time_s < t0) & (s.time_s > t0 - 2e-9))
    assert chain.size == 1 and chain[0] < data[0] and s.size_bytes[chain[0]] == B
    s3 = _stream("ext3", o)
    assert int(((s3.op == R) & ((s3.flags & Flag.META) != 0)).sum()) == int(((s.op == R) & ((s.flags & Flag.META) != 0)).sum()) - 1


def test_ext2_fsync_of_a_new_file_writes_its_indirect_block_inode_and_directory_then_flushes():
    """ext4_fsync_nojournal: sync_mapping_buffers (the indirect block), the inode, the parent's
    entry block and inode (ext4_sync_parent; the root's inode shares the file's table block), then
    the flush."""
    o = _ops([(0, Kind.CREATE, 0, 0, 0), (0, Kind.WRITE, 0, 0, 64 * B), (0.01, Kind.FSYNC, 0, 0, 0)], initial=(0,))
    s = _stream("ext2", o)
    meta_w = np.flatnonzero((s.op == W) & ((s.flags & Flag.META) != 0))
    flush = np.flatnonzero(s.op == F)
    assert meta_w.size == 3 and flush.size == 1 and meta_w.max() < flush[0]


def test_a_loop_devices_reads_reach_its_host_unmerged_and_waited():
    """Two contiguous reads the loop device gets at one instant reach the host ten nanoseconds apart
    (the loop worker serves one at a time), and the application waits for both (an instant is
    INSTANT_S wide)."""
    from stacks_check import model_stack

    from diskmodel.model.iopath.path import run

    stack = model_stack("ext2, 1 loop layer", "wd800bd")
    o = _ops([(0, Kind.STAT, 0, 0, 0), (0.001, Kind.READ, 0, 0, 128 * 1024), (0.001, Kind.READ, 0, 128 * 1024, 128 * 1024)],
             initial=(1 << 20,))
    streams = run(stack, o)
    host = streams["sda"]
    data = (host.op == R) & ((host.flags & Flag.META) == 0) & (host.time_s >= 0.001)
    assert len(np.unique(host.time_s[data])) >= 2
    top = next(iter(streams.values()))
    drive = FlatDrive(0.005, 50e6, 80 * 10**9)
    t = time_streams({"sda": host}, {"sda": drive}, np.unique(top.time_s[top.op == R]))
    assert t.waited[np.flatnonzero(data)].all()


def test_the_block_bitmap_read_ahead_is_once_a_mount_not_once_a_step():
    """mballoc reads ahead the block bitmaps of the groups after the goal's at the mount's first
    allocation (fs/ext4/mballoc.c, ext4_mb_prefetch), once a mount: a group read or set up is
    skipped after, and drop_caches resets neither. In the emulated drive's log the first dd write
    after the mount reads groups 1-3's bitmaps; the later ones, each after drop_caches, read
    nothing past group 0 (the file's). The model's dd write step (a mounted file system that
    allocated before, caches dropped) reads nothing past group 0 either."""
    from stacks_check import PART_START, model_stack

    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.iopath.path import run

    group0_end = PART_START + 8 * B * B  # a group: the blocks one bitmap block maps
    writes = [s for s in CELLS["ext2, no loop layer"]["spans"] if s["step"].endswith("step=write")]
    beyond = [sorted(r[1] for r in s["requests"] if r[0] == R and r[1] >= group0_end) for s in writes]
    assert len(beyond[0]) == 3 and not any(beyond[1:]), beyond
    for step in dict.fromkeys(s["step"] for s in writes):
        s = next(iter(run(model_stack("ext2, no loop layer", "wd800bd"),
                          parse_workload(step, sync_at_end=False)).values()))
        assert not ((s.op == R) & (s.offset_bytes >= group0_end)).any(), (step, s.offset_bytes[s.op == R])


TOOLS = {c["stack"]: c for c in json.loads((Path(__file__).parent / "golden" / "tool_requests_wd800bd.json")
                                           .read_text())["cells"]}


@pytest.mark.parametrize("stack", ["ext2, 1 loop layer", "ext2, 2 loop layers", "ext2, 3 loop layers"])
def test_a_loop_images_host_has_read_ahead_its_bitmaps_before_the_workload(stack):
    """The host file system of a loop image allocated when the image was written (the mkfs above it fills
    the sparse image's holes), so mballoc's read-ahead of the block bitmaps is done before any workload,
    and a cache drop leaves it done (see the test above). In the emulated drive's log (three repeats of
    each tool workload: images, tar, bonnie++'s file phases) the partition's ext2 never reads the bitmaps of
    its groups 2 and 3, where nothing is allocated; the model's images, sparse and zero-filled, which fill
    holes of every image below them, read neither."""
    from stacks_check import PART_BYTES, PART_START, model_stack

    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.iopath.path import run

    p = FsParams("ext2", PART_BYTES)
    unused = {PART_START + p.block_bitmap(g) * B for g in (2, 3)}
    spans = TOOLS[stack]["spans"]
    assert len(spans) == 12 and not [r for s in spans for r in s["requests"] if r[0] == R and r[1] in unused]
    for step in ("image:size=32M,kind=sparse", "image:size=32M"):
        s = run(model_stack(stack, "wd800bd"), parse_workload(step))["sda"]
        assert not np.isin(s.offset_bytes[s.op == R], list(unused)).any(), (step, s.offset_bytes[s.op == R] // B)
