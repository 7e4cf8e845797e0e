"""What mke2fs writes on a device before any workload: the blocks a thin volume has provisioned, and
a chunk of which holds any of them, when the workload starts.

mke2fs (e2fsprogs misc/mke2fs.c, lib/ext2fs/closefs.c, alloc_tables.c, mkjournal.c) writes:

- each group's head that carries a superblock copy (the superblock, the group descriptors and the
  resize inode's reserved descriptor blocks: groups 0, 1 and the powers of 3, 5 and 7 with
  sparse_super; :meth:`~.fs_layout.FsParams._ext_head`), and every group's block and inode bitmaps
  (ext2fs_close2 -> write_bitmaps);
- the inode tables, zeroed (write_inode_tables -> ext2fs_zero_blocks2), unless they are left to the
  kernel's ext4lazyinit: ``lazy_itable_init`` holds only with a group-descriptor checksum (ext4's
  uninit_bg or metadata_csum; never ext2 or ext3), and is on by default where the kernel can zero
  them later, so ext4 writes them only with ``-E lazy_itable_init=0``;
- the journal, zeroed in full (ext2fs_add_journal_inode3 without EXT2_MKJOURNAL_LAZYINIT) unless
  ``-E lazy_journal_init=1``, when only its superblock is written;
- the root directory and lost+found (:data:`~.fs_layout.ROOT_FILES_BLOCKS` blocks at group 0's
  first data block).

Only ext2, ext3 and ext4 are described here; for the other kinds the path infers what was written
from the workload's own stream (its metadata writes and its reads before writes).
"""
from __future__ import annotations

from .fs_layout import ROOT_FILES_BLOCKS, FsParams

__all__ = ["mkfs_written", "MKFS_KINDS"]

#: The kinds whose mkfs writes :func:`mkfs_written` describes.
MKFS_KINDS = ("ext2", "ext3", "ext4")


def _extended(mkfs_options) -> dict[str, str]:
    """mke2fs's ``-E`` settings in *mkfs_options* (``key=value`` or ``key``, comma-separated)."""
    out: dict[str, str] = {}
    opts = list(mkfs_options)
    for i, opt in enumerate(opts):
        if opt == "-E" and i + 1 < len(opts):
            for item in opts[i + 1].split(","):
                key, _, value = item.partition("=")
                out[key.strip()] = value.strip() or "1"
    return out


def mkfs_written(p: FsParams, mkfs_options=()) -> list[tuple[int, int]]:
    """The byte ranges ``(offset, size)`` of the device that mke2fs wrote for the file system *p*
    made with *mkfs_options* (see the module docstring); ValueError for a kind not in
    :data:`MKFS_KINDS`."""
    if p.kind not in MKFS_KINDS:
        raise ValueError(f"file system: kind = {p.kind!r}: mkfs's writes are known for {', '.join(MKFS_KINDS)}")
    ext = _extended(mkfs_options)
    bb, gb = p.block_bytes, p.group_blocks
    runs: list[tuple[int, int]] = []  # (first block, blocks)
    itables = p.kind != "ext4" or ext.get("lazy_itable_init") == "0"
    for g in range(p.groups):
        head = p._ext_head(g)
        if head:
            runs.append((g * gb, head))
        runs += [(p.block_bitmap(g), 1), (p.inode_bitmap(g), 1)]
        if itables:
            runs.append((p.inode_table(g), p._itable_blocks))
    runs.append((p.data_start(0), ROOT_FILES_BLOCKS))
    if p.kind in ("ext3", "ext4"):
        runs.append((p.journal_block, 1 if ext.get("lazy_journal_init", "0") != "0" else p.journal_blocks))
    end = p.device_bytes
    return [(b * bb, min(n * bb, end - b * bb)) for b, n in sorted(runs) if b * bb < end]
