"""A drive's queue limit ``max_sectors_kb`` and the multi-disk LVM study's thin-pool finding.

The multi-disk LVM study (its testbed: Linux 3.17, five drives, a thin pool whose data is a RAID 0
striped LV with 128 KB stripes, its Figure 11) found data writes on a thin volume more than twice
slower once the pool's allocation unit (chunk) is 1 MB or more, and recommends chunks up to 512 KB.

The mechanism: dm-thin provisions a new chunk with the first bio written to it, and zero-fills the
whole chunk first unless that bio covers it (drivers/md/dm-thin.c: process_cell -> provision_block ->
io_overwrites_block, else schedule_zero). On the study's kernel a file system built each bio under its
queue's ``max_sectors_kb`` (bio_add_page, queue_max_sectors), which a dm device stacks from its drives
(blk_stack_limits); on Linux 6.1 device-mapper cuts dm-thin's bios at it (dm.c, __max_io_len). The model
takes a thin volume's bios at that limit. Before Linux 4.3 a disk's default was
BLK_DEF_MAX_SECTORS = 1024 sectors (512 KiB); commit d2be537c3ba3 ("block: bump BLK_DEF_MAX_SECTORS to
2560") made it 1280 KiB. So on the study's kernel no bio covers a 1 MiB chunk and every new chunk is
zero-filled; on Linux 6.1 (the emulated drives' guest) that starts at 2 MiB.

The references: the kernel's rule (a chunk larger than the limit is zero-filled whole; one no larger
is not) for the zero-fill writes in the I/O path's streams, and the study's ordering (slower from
1 MB on) for the write speed. The drives are the study's as the VM cells model them (stacks_vm's
group 002: wd800bd as the emulator serves it), each with the field set.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from diskmodel.calibrate.bench.stacks_vm import (GUEST_DISKS, MKFS_OPTIONS, PART_BYTES, PART_START, THIN_SERIES_CHUNKS,
                                                 THIN_SERIES_FILE_BYTES)
from diskmodel.calibrate.emulate.drives import model_drive
from diskmodel.model.drive.drives import DEFAULT_MAX_SECTORS_KB, PresetDrive
from diskmodel.model.iopath.path import drive_limits, max_sectors_kb
from diskmodel.model.iopath.stream import Flag
from diskmodel.model.predictions.block_workloads import FileCopy
from diskmodel.model.predictions.results import predict_copy
from diskmodel.model.stacks.stack import FileSystemNode, Stack, paper_stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.stacks.volumes import Partition, StripedVolume

MIB = 1 << 20
KIB = 1 << 10
#: The study's Figure 11: the pool's data striped over five drives in 128 KiB stripes.
STRIPE_BYTES = 128 * KIB
POOL_BYTES = 1024 * MIB
#: The kernels' default limits: Linux 3.17's (the study's) and 6.1's (the emulated drives' guest) [KiB].
OLD_KB, NEW_KB = 512, 1280


def _testbed(chunk: int, limit_kb: int, disks=GUEST_DISKS) -> Stack:
    """ext4 on a thin volume whose pool's data is striped over *disks* in 128 KiB stripes
    (one drive: its partition), each drive with queue limit *limit_kb*."""
    parts = tuple(Partition(PART_START, PART_BYTES, disk=d) for d in disks)
    data = StripedVolume(parts, stripe_size_bytes=STRIPE_BYTES) if len(parts) > 1 else parts[0]
    pool = POOL_BYTES if len(parts) > 1 else 192 * MIB
    thin = ThinVolume(data, pool_size_bytes=pool, virtual_size_bytes=pool, chunk_size_bytes=chunk,
                      metadata_size_bytes=8 * MIB if len(parts) > 1 else 4 * MIB)
    drives = tuple(model_drive("wd800bd", name=d, max_sectors_kb=limit_kb) for d in disks)
    return Stack(FileSystemNode(thin, kind="ext4", mkfs_options=MKFS_OPTIONS), drives, "thin")


def _series(limit_kb: int, disks=GUEST_DISKS) -> dict:
    """{chunk: (write speed [bytes/s], zero-filled bytes on the pool's data device, chunks zero-filled)}
    of the thin series' copy (a 32 MiB file) at every chunk of the study's Figure 11."""
    out = {}
    for chunk in THIN_SERIES_CHUNKS:
        p = predict_copy(_testbed(chunk, limit_kb, disks), FileCopy(file_sizes_bytes=(THIN_SERIES_FILE_BYTES,),
                                                                    repeats=1))
        write = p.timed[0][0]
        pool = write.streams["volume-pool"]
        zero = (pool.flags & Flag.ZERO) != 0
        chunks = np.unique(pool.offset_bytes[zero] // chunk).size
        out[chunk] = (p.rows[0]["write_bytes_per_s"], int(pool.size_bytes[zero].sum()), chunks)
    return out


@pytest.fixture(scope="module")
def five_drives():
    return {kb: _series(kb) for kb in (OLD_KB, NEW_KB)}


@pytest.mark.parametrize("limit_kb", [OLD_KB, NEW_KB])
def test_every_new_chunk_larger_than_the_drives_limit_is_zero_filled_whole_and_no_other(five_drives, limit_kb):
    """io_overwrites_block: a chunk no larger than the largest bio is provisioned by a bio covering
    it (no zero-fill); a larger one is zeroed whole first, once per chunk of the file."""
    for chunk, (_, zero_bytes, chunks) in five_drives[limit_kb].items():
        if chunk <= limit_kb * KIB:
            assert (zero_bytes, chunks) == (0, 0), (limit_kb, chunk)
        else:
            assert zero_bytes == THIN_SERIES_FILE_BYTES, (limit_kb, chunk, zero_bytes)
            assert chunks == THIN_SERIES_FILE_BYTES // chunk, (limit_kb, chunk, chunks)


def test_on_the_studys_striped_pool_the_slowest_chunk_moves_from_1_mib_to_2_mib(five_drives):
    """With Linux 3.17's limit the first zero-filled chunk, 1 MiB, writes slowest of the chunks from
    128 KiB up and well below 512 KiB; with 6.1's the 1 MiB chunk writes as 512 KiB does and the dip
    is at 2 MiB. Over five drives that have no write cache the drives' time follows their requests
    more than their bytes: a chunk's zero-fill is one large write striped over all five, so the dip
    is less than the study's halving, and from 2 MiB on larger chunks let more of the data writes merge
    (fewer first writes of a chunk, issued alone), which outweighs the zeroing."""
    old, new = ({c: v[0] for c, v in five_drives[kb].items()} for kb in (OLD_KB, NEW_KB))
    above_64k = [c for c in THIN_SERIES_CHUNKS if c >= 128 * KIB]
    assert min(above_64k, key=old.get) == MIB
    assert old[MIB] < 0.8 * old[512 * KIB]
    assert min(above_64k, key=new.get) == 2 * MIB
    assert new[2 * MIB] < 0.9 * new[MIB]
    assert new[MIB] > 0.95 * new[512 * KIB]
    # below the limit the field changes nothing
    for chunk in THIN_SERIES_CHUNKS[:4]:
        assert old[chunk] == pytest.approx(new[chunk], rel=1e-12), chunk


def test_on_one_drive_every_chunk_from_the_first_zero_filled_one_writes_at_well_under_the_chunk_before():
    """The VM's thin series' layout (one drive): with Linux 3.17's limit every chunk from 1 MiB on
    writes at well under 512 KiB's speed (the study's finding, and its 512 KB advice), with 6.1's
    from 2 MiB on, under 1 MiB's, which is faster than 512 KiB."""
    one = GUEST_DISKS[:1]
    old, new = ({c: v[0] for c, v in _series(kb, one).items()} for kb in (OLD_KB, NEW_KB))
    for chunk in THIN_SERIES_CHUNKS:
        if chunk >= MIB:
            assert old[chunk] < 0.6 * old[512 * KIB], chunk
        if chunk >= 2 * MIB:
            assert new[chunk] < 0.6 * new[MIB], chunk
    assert new[MIB] > new[512 * KIB]


# ------------------------------------------------------------------ the field

def test_the_drives_limit_is_a_field_of_every_drive_node_with_the_kernels_default():
    assert DEFAULT_MAX_SECTORS_KB == 1280  # BLK_DEF_MAX_SECTORS, 2560 sectors of 512 bytes
    assert PresetDrive("wd800bd").max_sectors_kb == 1280
    assert model_drive("wd800bd", name="vdb").max_sectors_kb == 1280
    stack = paper_stack("native", disk=PresetDrive("wd800bd", max_sectors_kb=OLD_KB))
    data = json.loads(stack.to_json())
    assert data["disks"][0]["max_sectors_kb"] == OLD_KB
    assert Stack.from_json(stack.to_json()).disks[0].max_sectors_kb == OLD_KB
    assert "max_sectors_kb 512" in stack.describe()
    # the default is not written: a stack file written before the field reads back the same
    assert "max_sectors_kb" not in json.loads(paper_stack("native").to_json())["disks"][0]


@pytest.mark.parametrize("value, shown", [(0, "0"), (3, "3"), (2.5, "2.5"), ("512", "'512'"), (True, "True")])
def test_a_bad_limit_is_one_line_naming_the_field_and_the_value(value, shown):
    data = json.loads(paper_stack("native").to_json())
    data["disks"][0]["max_sectors_kb"] = value
    with pytest.raises(ValueError) as err:
        Stack.from_json_data(data)
    text = str(err.value)
    assert "\n" not in text and "max_sectors_kb" in text and shown in text, text


def test_a_partition_takes_its_drives_limit_and_a_dm_device_the_smallest_of_its_drives():
    """blk_stack_limits: an md or dm device's max_sectors is the smallest of its members'; a partition
    is its disk's queue."""
    drives = tuple(PresetDrive("wd800bd", name=d, max_sectors_kb=kb)
                   for d, kb in zip(GUEST_DISKS[:3], (NEW_KB, OLD_KB, 2048)))
    parts = tuple(Partition(PART_START, PART_BYTES, disk=d.name) for d in drives)
    striped = StripedVolume(parts, stripe_size_bytes=STRIPE_BYTES)
    thin = ThinVolume(striped, pool_size_bytes=POOL_BYTES // 2, virtual_size_bytes=POOL_BYTES // 2,
                      chunk_size_bytes=MIB, metadata_size_bytes=4 * MIB)
    stack = Stack(FileSystemNode(thin, kind="ext4"), drives)
    limits = drive_limits(stack)
    assert [max_sectors_kb(p, limits) for p in parts] == [NEW_KB, OLD_KB, 2048]
    assert max_sectors_kb(striped, limits) == max_sectors_kb(thin, limits) == OLD_KB
    assert max_sectors_kb(thin) == DEFAULT_MAX_SECTORS_KB  # no drives given: the kernel's default


# ------------------------------------------------------------------ the VM's build

def test_the_build_sets_each_partitions_device_to_its_drives_limit_before_the_volumes_over_it():
    """In the VM a partition is a loop device over its drive, whose queue limits are its own (loop
    stacks none from its backing); the build sets the drive's limit on it, as an argument of a fixed
    script, before pvcreate (dm stacks its members' limits at table load), and checks it read back.
    A drive at the default adds no step: the scripts of every other stack are unchanged."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.provision import _SET_MAX_SECTORS

    stack = _testbed(MIB, OLD_KB)
    plan = L.build_plan(stack, backing="/dev/vdb", disk_backings={d: f"/dev/{d}" for d in GUEST_DISKS})
    argvs = [s.argv for s in plan.steps]
    sets = [i for i, a in enumerate(argvs) if a[:3] == ("sh", "-c", _SET_MAX_SECTORS)]
    loops = [i for i, a in enumerate(argvs) if a[:1] == ("losetup",)]
    assert [i - 1 for i in sets] == loops and len(sets) == len(GUEST_DISKS)
    assert all(argvs[i][4] == str(OLD_KB) and plan.steps[i].expect == str(OLD_KB) for i in sets)
    assert [argvs[i][3] for i in sets] == [plan.steps[i].capture and L.Ref(plan.steps[i].capture) for i in loops]
    first_pv = next(i for i, a in enumerate(argvs) if a[:1] == ("pvcreate",))
    assert max(sets) < first_pv
    default = L.build_plan(_testbed(MIB, NEW_KB), backing="/dev/vdb",
                           disk_backings={d: f"/dev/{d}" for d in GUEST_DISKS})
    assert not any(a[:3] == ("sh", "-c", _SET_MAX_SECTORS) for a in (s.argv for s in default.steps))
