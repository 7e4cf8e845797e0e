"""When the read-ahead windows of the copy's read step (dd, 1 MiB calls) reach the drives, against the
requests the emulated drives logged in the VM under the same stacks (tests/golden/vm_copy_streams.json,
see tests/golden/README.md), and the read-ahead each device gets (``read_ahead_kb`` as Linux 6.1 set it
in the VM, beside ``model.iopath.read_ahead``).

The kernel's rules (mm/readahead.c, ondemand_readahead; mm/filemap.c, filemap_get_pages): the first
window of a call as large as the device's read-ahead would hit its own mark, so the mark goes to its
middle, and the second window is issued once the reader has copied half the first; every later window
is marked at its first page and goes out when the reader's call starts, before it waits for that
page, so the drive finds it queued. A call waits only for the window that holds its pages."""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np
import pytest

from diskmodel.calibrate.bench import stacks_vm as V
from diskmodel.model.iopath import parse_workload
from diskmodel.model.iopath.read_ahead import device_read_ahead_kb
from diskmodel.model.predict import predict

GOLDEN = json.loads((Path(__file__).parent / "golden" / "vm_copy_streams.json").read_text())
CELLS = {c["label"]: c for c in GOLDEN["cells"]}
DATA_BYTES = 64 << 10
SIZE = 4 << 20


@functools.lru_cache(maxsize=None)
def _stacks(group):
    return {c.label: c.stack for c in V.GROUPS[group]()[1]}


def _logged_gaps(label):
    """Per repeat and drive: each data read's arrival less the completion of the one before on that
    drive [s]."""
    out = []
    for r in CELLS[label]["repeats"]:
        for q in r["read"]["devices"].values():
            big = [x for x in q if x[0] == "R" and x[1] >= DATA_BYTES]
            out.append([b[3] - a[4] for a, b in zip(big, big[1:])])
    return out


def _model_gaps(label, call_s):
    """The model's gaps as :func:`_logged_gaps`, the four calls ``call_s`` apart (the first at 0)."""
    ops = parse_workload(f"dd:size={SIZE},step=read", sync_at_end=False)
    ops = dataclasses.replace(ops, time_s=np.arange(len(ops)) * call_s)
    t = predict(_stacks(CELLS[label]["group"])[label], ops).timing
    out = []
    for k in range(len(t.devices)):
        m = (t.device == k) & (t.op == 0) & (t.size_bytes >= DATA_BYTES)
        a, d = t.arrival_s[m], t.completion_s[m]
        out.append((a[1:] - d[:-1]).tolist())
    return out


#: The model's reader: a 1 MiB call every 8 ms, about the copy of a call after the first in the logged
#: guest (whose first call also faults its buffer in, and so copies slower). Calls no slower than a
#: window's service keep the drive busy.
CALL_S = 8e-3


def test_the_second_window_waits_for_half_a_call_and_the_next_ones_are_queued():
    """One drive, read_ahead_kb 128: each call is a 1 MiB window. Logged, in every repeat, the second
    window reaches the drive 5-25 ms after the first completed (the reader copying half of it in the
    guest), the third sooner than that. The model sends the second window half a call after the first
    completed and the third as the drive finishes the second. Where the reader waited for each async
    window where it was issued, the second came at once and the third a call late."""
    logged = _logged_gaps("ext4, 1 drive")
    assert all(g[0] > 4e-3 and g[1] < g[0] for g in logged), logged
    (model,) = _model_gaps("ext4, 1 drive", CALL_S)
    assert model[0] == pytest.approx(CALL_S / 2, abs=1e-4) and model[1] < 1e-4, model


@pytest.mark.parametrize("label", ["ext4, striped over 2 drives, 64 KiB", "ext4, striped over 4 drives, 64 KiB"])
def test_striped_members_see_the_same_pattern(label):
    """Striped at 64 KiB (read_ahead_kb 128 over two stripes, 512 over four: at most the call): on
    every member the second window comes after a pause, the third sooner (logged in every repeat);
    so on the model's members."""
    logged = _logged_gaps(label)
    assert all(g[0] > 4e-3 and g[1] < g[0] for g in logged), logged
    for gaps in _model_gaps(label, CALL_S):
        # the second window goes out half a call after the last member finished the first; the third
        # is queued on each member before it finished the second
        assert gaps[0] >= CALL_S / 2 - 1e-4 and gaps[1] < 1e-4, gaps


def _windows(gaps, apart_s=5e-3):
    """The gaps between windows: a member's pieces less than *apart_s* apart belong to one window."""
    return [g for g in gaps if g >= apart_s]


def test_a_two_mib_read_ahead_sends_two_calls_at_once():
    """Striped over four at 256 KiB: the device's read-ahead is 2 MiB (twice its 1 MiB stripe), so the
    first window covers two calls, and it reaches each member at once (logged as two pieces back to
    back; the model merges them); the next window goes out when the second call reaches its mark, a
    call's copy after the first window completed. Logged on every member and repeat: two windows, the
    second after a pause; so in the model, the pause a call. With the 128 KiB read-ahead of every
    device the model gave before, each call was a window of its own, half a call apart at first."""
    label = "ext4, striped over 4 drives, 256 KiB"
    logged = _logged_gaps(label)
    assert all(len(_windows(g)) == 1 and g[0] < 2e-3 for g in logged), logged
    for gaps in _model_gaps(label, CALL_S):
        # a call after the last member finished the first window
        assert len(_windows(gaps)) == 1 and _windows(gaps)[0] >= CALL_S - 1e-4, gaps


#: ``read_ahead_kb`` of the file system's device as the VM's Linux 6.1 set it (cat
#: /sys/block/*/queue/read_ahead_kb after the stack's build; docs/benchmarks.md, "The devices' read-ahead").
MEASURED_READ_AHEAD_KB = {
    "ext4, striped over 4 drives, 64 KiB": 512,
    "ext4, striped over 4 drives, 256 KiB": 2048,
    "ext4, striped over 5 drives, 4 KiB": 128,
    "ext4, RAID 5 over 4 drives, 64 KiB": 384,
    "ext4, RAID 6 over 4 drives, 64 KiB": 256,
    "ext4, thin volume, 64 KiB pool chunk": 128,
    "ext4, thin volume, 1 MiB pool chunk": 2048,
    "ext4, thin volume, 8 MiB pool chunk": 16384,
    "ext4, 1 drive": 128,
}


@pytest.mark.parametrize("label", sorted(MEASURED_READ_AHEAD_KB))
def test_each_device_gets_the_read_ahead_the_kernel_gave_it(label):
    assert device_read_ahead_kb(_stacks("002")[label].volume) == MEASURED_READ_AHEAD_KB[label]


def test_a_read_call_does_not_wait_for_the_windows_beyond_it():
    """A flat drive and a slow reader: the four calls are 50 ms apart and a window takes 21 ms, so the
    drive is idle when each call comes and the run is the reader's time plus its wait for the first
    window. Waiting for each async window where it was issued added every window's time."""
    from diskmodel.model.drive.disk import flat_latency_disk
    from diskmodel.model.drive.drives import InMemoryDrive
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    drive = InMemoryDrive(flat_latency_disk(1e-3, 50e6, 10**10), "vdb")
    stack = Stack(FileSystemNode(Partition(1 << 20, 256 << 20, disk="vdb"), kind="ext2"), (drive,), "flat")
    ops = parse_workload(f"dd:size={SIZE},step=read", sync_at_end=False)
    p = predict(stack, dataclasses.replace(ops, time_s=np.arange(len(ops)) * 0.05))
    window_s = 1e-3 + (1 << 20) / 50e6
    assert p.timing.op_wait_s[1:].max() < 1e-9
    first = p.timing.op_wait_s[0]
    assert window_s <= first < 2 * window_s
    assert p.elapsed_s == pytest.approx(0.15 + first, abs=1e-9)
