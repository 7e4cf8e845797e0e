"""The model's per-drive request streams of the copy's steps (dd write with fsync, dd read of the file
not cached) against the streams the emulated drives logged under the same stacks in the VM
(tests/golden/vm_copy_streams.json, see tests/golden/README.md): striping (dm-stripe) over 2 and 4
drives at 64 and 256 KiB chunks, md RAID 5 and 6 over 4, md RAID 1 over 2, one drive.

What is compared is what the splitting layers decide: which drive receives how many bytes of the
file, in how many requests, and which mirror serves a RAID 1 read. Offsets differ (ext4 places the
file where its allocator chooses on the guest, the model where fs_layout chooses), so they are not
compared."""
from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

import pytest

from diskmodel.calibrate.bench import stacks_vm as V
from diskmodel.model.iopath import parse_workload
from diskmodel.model.iopath.path import run

GOLDEN = json.loads((Path(__file__).parent / "golden" / "vm_copy_streams.json").read_text())
CELLS = {c["label"]: c for c in GOLDEN["cells"]}
#: A file's data requests: the copy's file is read and written in pieces of at least a chunk; the
#: smaller requests are metadata (inode, bitmaps, journal).
DATA_BYTES = 64 << 10
SIZE = 4 << 20


@functools.lru_cache(maxsize=None)
def _group(name):
    return {c.label: c.stack for c in V.GROUPS[name]()[1]}


def _stack(label):
    return _group(CELLS[label]["group"])[label]


@functools.lru_cache(maxsize=None)
def _model(label, step):
    """Per drive: the sizes of the model's data requests in the step."""
    stack = _stack(label)
    streams = run(stack, parse_workload(f"dd:size={SIZE},step={step}", sync_at_end=False))
    out = {}
    for d in stack.disks:
        s = streams.get(d.name)
        out[d.name] = [] if s is None else [int(x) for x, o in zip(s.size_bytes, s.op) if o <= 1 and x >= DATA_BYTES]
    return out


def _logged(label, step):
    """Per drive and repeat: the sizes of the logged data requests of the step."""
    stack = _stack(label)
    return {d.name: [[size for op, size, *_ in r[step]["devices"].get(d.name, []) if op in "RW" and size >= DATA_BYTES]
                     for r in CELLS[label]["repeats"]]
            for d in stack.disks}


SPLIT = ["ext4, striped over 2 drives, 64 KiB", "ext4, striped over 4 drives, 64 KiB",
         "ext4, striped over 4 drives, 256 KiB", "ext4, LVM striped over two disks",
         "ext4, RAID 5 over 4 drives, 64 KiB", "ext4, RAID 6 over 4 drives, 64 KiB"]


def test_the_golden_holds_the_cells_and_every_repeat_read_the_whole_file():
    assert set(SPLIT) <= set(CELLS) and "ext4, RAID 1 over two disks" in CELLS
    for label in CELLS:
        for sizes in zip(*_logged(label, "read").values()):
            assert sum(sum(s) for s in sizes) == SIZE, label


@pytest.mark.parametrize("label", SPLIT)
def test_each_drive_reads_its_share_of_the_file_as_logged(label):
    model, logged = _model(label, "read"), _logged(label, "read")
    for dev in model:
        # the bytes each drive reads follow from the chunk map alone (dm-stripe, md raid5/6)
        assert sum(model[dev]) == pytest.approx(statistics.median(sum(r) for r in logged[dev]), abs=DATA_BYTES), dev


@pytest.mark.parametrize("label", SPLIT[:5])
def test_each_drive_reads_in_as_many_requests_as_logged(label):
    """dd's 1 MiB reads are read ahead in windows of the call's size (the queue's io_pages allows it);
    each window's chunk pieces on one drive are contiguous there and merge into one request."""
    model, logged = _model(label, "read"), _logged(label, "read")
    for dev in model:
        assert abs(len(model[dev]) - statistics.median(len(r) for r in logged[dev])) <= 1, dev


def test_raid1_reads_the_file_from_one_mirror():
    """raid1.c read_balance: a read continuing the last one stays on its mirror (next_seq_sect), and
    an idle array's first read goes to the first mirror."""
    model, logged = _model("ext4, RAID 1 over two disks", "read"), _logged("ext4, RAID 1 over two disks", "read")
    assert all(sum(r) == SIZE for r in logged["vdb"]) and all(not r for r in logged["vdc"])
    assert sum(model["vdb"]) == SIZE and model["vdc"] == []


@pytest.mark.parametrize("label", ["ext4, striped over 4 drives, 64 KiB", "ext4, striped over 2 drives, 64 KiB"])
def test_the_fsync_write_back_reaches_each_member_merged(label):
    """The write-back of one fsync submits its bios in one plug; each member's pieces of the file
    merge there (dm_striped.plug_first). Logged: every repeat, one or two requests per member (the
    member's share up to its max_sectors_kb); the model issued 4 (one per 1 MiB bio) before."""
    model, logged = _model(label, "write"), _logged(label, "write")
    for dev in model:
        most = max(len(r) for r in logged[dev])  # every repeat: one or two requests of the drive's share
        assert most <= 2 and len(model[dev]) <= most, dev


def test_raid5_reads_only_at_the_ends_of_the_write_back_run():
    """md handles the stripe_heads of one plug together (raid5_unplug): the write-back's 1 MiB bios,
    each a partial stripe at its ends, make full stripes of the run and only its ends read old data
    or parity. Logged: 136-208 KiB of reads of 32 KiB or more per step (the run's ends and the
    journal's); costed bio by bio the model read 512 KiB (a read-modify-write at every bio's ends)."""
    label = "ext4, RAID 5 over 4 drives, 64 KiB"
    stack = _stack(label)
    streams = run(stack, parse_workload(f"dd:size={SIZE},step=write", sync_at_end=False))
    model = sum(int(x) for d in stack.disks for x, o in zip(streams[d.name].size_bytes, streams[d.name].op)
                if o == 0 and x >= 32 << 10)
    logged = [sum(size for reqs in r["write"]["devices"].values() for op, size, *_ in reqs
                  if op == "R" and size >= 32 << 10) for r in CELLS[label]["repeats"]]
    assert min(logged) - DATA_BYTES <= model <= max(logged) + DATA_BYTES


def test_chunks_of_128_kib_or_more_flush_the_plug_between_members():
    """blk_add_rq_to_plug flushes the plug when a new request finds the one added last at 128 KiB or more
    (BLK_PLUG_FLUSH_SIZE): over a 256 KiB stripe the write-back's 1 MiB per member does not merge in the
    plug; the member's first chunk goes to its idle drive alone and the rest merge in its scheduler while
    it is served. Logged in the VM, a member's share came as 256 + 768 KiB, or whole, or as four chunks
    one after the other; never as the 1024 KiB the model gave every member before, nor in more pieces
    than four. Over a 64 KiB stripe nothing flushes: one request per member (test above)."""
    label = "ext4, striped over 4 drives, 256 KiB"
    logged = _logged(label, "write")
    assert any(r == [256 << 10, 768 << 10] for reps in logged.values() for r in reps), logged
    assert all(sum(r) == 1 << 20 and len(r) <= 4 for reps in logged.values() for r in reps), logged
    assert all(m == [256 << 10, 768 << 10] for m in _model(label, "write").values()), _model(label, "write")
    # the read-ahead window of 2 MiB (twice the 1 MiB stripe): two chunks per member, apart, as logged
    assert all(m == [256 << 10] * 4 for m in _model(label, "read").values()), _model(label, "read")
    assert all(r == [256 << 10] * 4 for reps in _logged(label, "read").values() for r in reps)


def test_plug_flushes_count_the_flushes_before_each_piece():
    import numpy as np

    from diskmodel.model.iopath.dm_striped import plug_flushes

    # one plug, four members, two rounds of 64 KiB chunks: every piece merges into its member's request
    plug, dev = np.zeros(8, np.int64), np.tile(np.arange(4), 2)
    off, size = np.repeat([0, 64 << 10], 4), np.full(8, 64 << 10)
    assert plug_flushes(plug, dev, off, size).tolist() == [0] * 8
    # 256 KiB chunks: each new member's request finds the last one at 256 KiB and flushes the plug
    off, size = np.repeat([0, 256 << 10], 4), np.full(8, 256 << 10)
    assert plug_flushes(plug, dev, off, size).tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    # a second plug starts with none
    assert plug_flushes(np.r_[plug[:4], np.full(4, 4)], dev, off, size).tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
