"""What mke2fs writes before a workload (model/iopath/fs_mkfs.py), its journal's size and place
(model/iopath/path.py fs_params_of, fs_layout.FsParams.journal_block), and the thin-volume chunks those
writes provisioned. References: e2fsprogs 1.47.0's mke2fs, read back with debugfs (the integration
test runs them; the fast tests hold the figures it printed on this host, Debian 12's mke2fs 1.47.0)."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from diskmodel.calibrate.bench.stacks_vm import MKFS_OPTIONS
from diskmodel.model.iopath import parse_workload
from diskmodel.model.iopath.fs_mkfs import mkfs_written
from diskmodel.model.iopath.path import fs_params_of, run
from diskmodel.model.iopath.stream import Flag, Op
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.stacks.volumes import Partition
from diskmodel.calibrate.emulate.drives import model_drive

MIB = 1 << 20
#: debugfs "stat <8>" of mke2fs 1.47.0's ext4 with MKFS_OPTIONS: (device MiB) -> (journal's first block, blocks)
MKE2FS_JOURNAL = {192: (3107, 4096), 256: (32801, 4096)}
#: dumpe2fs -h of mke2fs 1.47.0's file systems made with MKFS_OPTIONS: (kind, bytes) -> inodes per group (one inode
#: per 4 KiB below 512 MiB, mke2fs.conf's "small" type; per 16 KiB above, filling the inode table's last block)
MKE2FS_INODES_PER_GROUP = {("ext4", 20 * MIB): 5120, ("ext4", 192 * MIB): 24576, ("ext4", 256 * MIB): 32768,
                           ("ext3", 300 * MIB): 25600, ("ext4", 600 * MIB): 7680, ("ext2", 2_000_000_000): 8144}


@pytest.mark.parametrize("kind, size", sorted(MKE2FS_INODES_PER_GROUP))
def test_inodes_per_group_are_mke2fs(kind, size):
    from diskmodel.model.iopath.fs_layout import FsParams

    assert FsParams(kind=kind, device_bytes=size).inodes_per_group == MKE2FS_INODES_PER_GROUP[(kind, size)]


def _params(mib: int):
    node = FileSystemNode(Partition(MIB, mib * MIB), kind="ext4", mkfs_options=MKFS_OPTIONS)
    return fs_params_of(node, mib * MIB)


@pytest.mark.parametrize("mib", sorted(MKE2FS_JOURNAL))
def test_the_journal_has_mke2fs_size_and_group_for_the_device(mib):
    p = _params(mib)
    first, blocks = MKE2FS_JOURNAL[mib]
    # 16 MiB (ext2fs_default_journal_size for under 256 Ki blocks), not the node's default 128 MiB
    assert p.journal_blocks == blocks
    # get_midpoint_journal_block: group 0 of a 192 MiB file system (its second group is half a group,
    # with fewer free blocks), group 1 of a 256 MiB one
    assert p.journal_block // p.group_blocks == first // p.group_blocks


def test_mkfs_wrote_the_heads_bitmaps_inode_tables_and_whole_journal():
    p = _params(192)
    runs = mkfs_written(p, MKFS_OPTIONS)
    starts = {off // p.block_bytes: size // p.block_bytes for off, size in runs}
    assert starts[p.journal_block] == p.journal_blocks  # lazy_journal_init=0: zeroed in full
    assert starts[p.inode_table(0)] >= p.inodes_per_group * p.inode_bytes // p.block_bytes
    assert 0 in starts and p.group_blocks in starts  # superblock copies in groups 0 and 1
    # without lazy_itable_init=0, ext4's inode tables are left to the kernel's ext4lazyinit
    lazy = mkfs_written(p, ("-b", "4096"))
    assert p.inode_table(0) * p.block_bytes not in {off for off, _ in lazy}


def test_a_thin_chunk_under_mkfs_writes_is_provisioned_before_the_workload():
    # The multi-disk LVM study's thin volume with 8 MiB chunks: the chunks mkfs zeroed the journal in are
    # mapped when the copy starts, so the file's write zero-fills only chunks that nothing wrote before.
    chunk = 8 * MIB
    thin = ThinVolume(Partition(MIB, 256 * MIB, disk="vdb"), pool_size_bytes=192 * MIB, virtual_size_bytes=192 * MIB,
                      chunk_size_bytes=chunk, metadata_size_bytes=4 * MIB)
    stack = Stack(FileSystemNode(thin, kind="ext4", mkfs_options=MKFS_OPTIONS), (model_drive("wd800bd", name="vdb"),),
                  "thin")
    p = fs_params_of(stack.file_system, 192 * MIB)
    made = {b for off, size in mkfs_written(p, MKFS_OPTIONS) for b in range(off // chunk, -(-(off + size) // chunk))}
    streams = run(stack, parse_workload(f"dd:size={4 * MIB},step=write", sync_at_end=False))
    volume, pool = streams["volume"], streams["volume-pool"]
    writes = volume.take((volume.op == Op.WRITE) & ((volume.flags & Flag.META) == 0))
    touched = set(np.unique(writes.offset_bytes // chunk).tolist())
    assert touched & made, "the file starts in a chunk mkfs wrote (after the journal)"
    zeroed = pool.take((pool.flags & Flag.ZERO) != 0)
    # each zero-fill is issued for the volume's write that provisions its chunk (its parent): none lies in a
    # chunk mkfs wrote, and each chunk the file reaches that mkfs left unwritten is zero-filled once
    provisioning = volume.offset_bytes[zeroed.parent] // chunk
    assert not set(provisioning.tolist()) & made
    assert sorted(set(provisioning.tolist())) == sorted(touched - made)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("mib", sorted(MKE2FS_JOURNAL))
def test_mke2fs_places_and_sizes_the_journal_as_the_model(tmp_path, mib):
    if not (shutil.which("mkfs.ext4") and shutil.which("debugfs")):
        pytest.skip("mkfs.ext4 and debugfs (e2fsprogs) are needed")
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(mib * MIB)
    subprocess.run(["mkfs.ext4", "-q", "-F", *MKFS_OPTIONS, str(image)], check=True, capture_output=True)
    out = subprocess.run(["debugfs", "-R", "stat <8>", str(image)], check=True, capture_output=True, text=True).stdout
    first, last = map(int, re.search(r"\(0-\d+\):(\d+)-(\d+)", out).groups())
    p = _params(mib)
    assert last - first + 1 == p.journal_blocks
    assert first // p.group_blocks == p.journal_block // p.group_blocks


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("kind, size", sorted(MKE2FS_INODES_PER_GROUP))
def test_mke2fs_gives_the_models_inodes_per_group(tmp_path, kind, size):
    from conftest import skip_or_fail

    from diskmodel.model.iopath.fs_layout import FsParams

    if not (shutil.which(f"mkfs.{kind}") and shutil.which("dumpe2fs")):
        skip_or_fail(f"mkfs.{kind} and dumpe2fs (e2fsprogs) are needed")
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(size)
    subprocess.run([f"mkfs.{kind}", "-q", "-F", *MKFS_OPTIONS, str(image)], check=True, capture_output=True)
    out = subprocess.run(["dumpe2fs", "-h", str(image)], check=True, capture_output=True, text=True).stdout
    measured = int(re.search(r"^Inodes per group:\s+(\d+)$", out, re.M).group(1))
    assert measured == FsParams(kind=kind, device_bytes=size).inodes_per_group == MKE2FS_INODES_PER_GROUP[(kind, size)]


def _model_file_start(size: int) -> int:
    """Where the model's I/O path puts a new 4 MiB file's data, in bytes from the file system's start."""
    stack = Stack(FileSystemNode(Partition(MIB, size, disk="vdb"), kind="ext4", mkfs_options=MKFS_OPTIONS),
                  (model_drive("wd800bd", name="vdb"),), "goal")
    drive = run(stack, parse_workload(f"dd:size={4 * MIB},step=write", sync_at_end=False))["vdb"]
    data = drive.take((drive.op == Op.WRITE) & ((drive.flags & Flag.META) == 0))
    return int(data.offset_bytes.min()) - MIB


def test_an_ext4_files_data_goes_to_its_flex_groups_second_group():
    # ext4_inode_to_goal_block: a regular file's goal is the flex group's second group, and mballoc's first
    # pass skips a flex group's first for data. The emulated drives' logs in the VM (Linux 6.1) show the copy's
    # file 2 MiB into group 1 on the volume striped over two drives (a 504 MiB ext4: 67.0 MiB on each drive),
    # and after the journal that fills group 1's first 16 MiB on one drive (a 256 MiB ext4: 147.0 MiB on the
    # drive, its partition 1 MiB in), in every repeat
    assert _model_file_start(504 * MIB) == 130 * MIB
    assert _model_file_start(256 * MIB) == 146 * MIB
    # a file system of one group has no second: the file stays in group 0, after the inode tables
    assert _model_file_start(96 * MIB) < 32 * MIB


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("mib", (192, 256, 504, 2000))
def test_the_kernel_puts_a_new_files_data_where_the_model_does(tmp_path, loops, mib):
    from pathlib import Path

    from conftest import require_tools

    from test_blktrace import _extents

    require_tools("filefrag", "dd")
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(mib * MIB)
    subprocess.run(["mkfs.ext4", "-q", "-F", *MKFS_OPTIONS, str(image)], check=True, capture_output=True)
    device = loops.attach(image)
    mount_point = loops.mount(device, tmp_path / "mnt")
    # every group's buddy loaded, as ext4lazyinit's prefetch leaves them a moment after the mount (mballoc's
    # first passes skip a group not yet loaded, but never a flex group's first: a dd right after the mount
    # can land in group 0)
    Path("/proc/fs/ext4", Path(device).name, "mb_groups").read_text()
    target = mount_point / "diskmodel-copy.dat"
    subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1048576", "count=4", "conv=fsync"], check=True,
                   capture_output=True)
    first = min(disk for _, _, disk in _extents(target))
    assert first == _model_file_start(mib * MIB)
