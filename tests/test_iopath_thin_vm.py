"""dm-thin's provisioning writes as the disk under the pool receives them, against blktrace in the VM.

``tests/golden/iopath_thin_provisioning_vm.txt`` (README there): a thin volume at 64 KiB and at
128 KiB pool chunks on dm-linear slices of the VM's virtio disk, fio's O_DIRECT 1 MiB writes on the
raw volume and a 32 MiB file written by ``dd conv=fsync`` on ext4 over it; the thin volume's queued
bios (Q) and the disk's issued requests (D). ext4's write-back sends the volume 2 MiB bios; dm-thin
cuts them at its chunk, and the pool's worker provisions each new chunk and issues the whole-chunk
write itself (process_thin_deferred_cells -> process_cell -> provision_block -> schedule_zero ->
remap_and_issue_overwrite), outside any plug: the disk receives one request per chunk, none merged
with its neighbour although they are contiguous and issued back to back. The model
(:mod:`diskmodel.model.iopath.dm_thin`, ``Flag.ALLOC``; :mod:`~diskmodel.model.iopath.block_layer`)
predicts the disk's writes from the volume's measured bios; a model that let the block layer merge
the provisioning writes (as the emulated drives' logs behind qemu suggested) fails here.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from diskmodel.calibrate.trace.blkparse import parse_blkparse_text
from diskmodel.model import iopath
from diskmodel.model.iopath import Flag, Op

GOLDEN = Path(__file__).parent / "golden" / "iopath_thin_provisioning_vm.txt"
MIB = 1 << 20
DATA_START_BYTES = MIB  # the pool's data device: dm-linear over the disk from 1 MiB
DATA_BYTES = 160 * MIB
KIB = 1024


def _cells():
    text = GOLDEN.read_text()
    queue = dict(re.findall(r"^@@Q vda (\S+) (.*)$", text, re.M))
    out = {}
    for block in re.split(r"^@@CELL ", text, flags=re.M)[1:]:
        name = block.split("\n", 1)[0]
        maps = dict(re.findall(r"^@@MAP (\S+) (\S+)$", block, re.M))
        events = [line for line in block.splitlines() if re.match(r"^\s*\d+,\d+\s", line)]
        trace = parse_blkparse_text(events, f"{GOLDEN.name} {name}", maps)
        out[name] = (trace.devices["top"].stream, trace.devices["vda"].stream)
    return int(queue["max_sectors_kb"]), out


def _disk_writes(top, chunk_bytes, max_kb, keep_alloc=True):
    data = iopath.dm_thin(top, chunk_bytes).data
    if not keep_alloc:  # the alternative: provisioning writes merge like any other
        data = data.replace(flags=(data.flags & ~np.int16(Flag.ALLOC)).astype(np.int16))
    disk = data.replace(offset_bytes=data.offset_bytes + DATA_START_BYTES)
    disk = iopath.merge(iopath.split(disk, max_kb), max_kb)
    return disk.take(disk.op == Op.WRITE)


def _data_region_writes(vda):
    w = vda.take((vda.op == Op.WRITE) & (vda.offset_bytes >= DATA_START_BYTES)
                 & (vda.offset_bytes < DATA_START_BYTES + DATA_BYTES))
    return w


def test_direct_1m_writes_reach_the_disk_one_chunk_each():
    max_kb, cells = _cells()
    top, vda = cells["fio_direct_1m_64k"]
    measured = _data_region_writes(vda)
    predicted = _disk_writes(top, 64 * KIB, max_kb)
    assert Counter(measured.size_bytes.tolist()) == {64 * KIB: 128}
    assert Counter(predicted.size_bytes.tolist()) == {64 * KIB: 128}


@pytest.mark.parametrize("cell, chunk_kib", [("ext4_dd32_64k", 64), ("ext4_dd32_128k", 128)])
def test_write_back_provisioning_writes_are_not_merged_on_the_disk(cell, chunk_kib):
    max_kb, cells = _cells()
    top, vda = cells[cell]
    chunk = chunk_kib * KIB
    measured = _data_region_writes(vda)
    predicted = _disk_writes(top, chunk, max_kb)
    big_m = measured.size_bytes[measured.size_bytes >= 32 * KIB]
    big_p = predicted.size_bytes[predicted.size_bytes >= 32 * KIB]
    # The file's 32 MiB reach the disk in pieces of at most one chunk, measured and predicted.
    assert big_m.max() == chunk and big_p.max() == chunk
    assert big_m.sum() >= 32 * MIB
    assert abs(big_p.size - big_m.size) <= 0.02 * big_m.size
    assert abs(int(big_p.sum()) - int(big_m.sum())) <= 0.02 * big_m.sum()
    # Merged in the block layer, the same writes would come to the disk as max_sectors_kb requests.
    merged = _disk_writes(top, chunk, max_kb, keep_alloc=False)
    big_merged = merged.size_bytes[merged.size_bytes >= 32 * KIB]
    assert big_merged.size < big_m.size / 4
