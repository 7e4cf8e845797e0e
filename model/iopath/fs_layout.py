"""Where a file system puts things: its geometry per kind and block size, and the blocks it allocates.

Geometry (:class:`FsParams`, from ``mke2fs``/``mkfs.xfs``/``mkfs.btrfs`` defaults):

- ext2/3/4: block groups of ``8 * block_bytes`` blocks (one bitmap block maps a group), each starting
  with two blocks of superblock and descriptors (the primary or a backup copy; the descriptors of
  group g in block ``1 + g * 64 // block_bytes``), its block bitmap, inode bitmap and inode table (``inodes_per_group`` inodes of
  ``inode_bytes``: one inode per 16 KiB of space, mke2fs.conf's inode_ratio); the journal
  (``journal_bytes``) in the middle group (ext2fs_mkjournal's goal). ext4 reads
  ``inode_readahead_blks`` (32) inode-table blocks when it reads an inode from the device.
- xfs: ``ag_count`` allocation groups (4 for a device below 4 TiB: mkfs.xfs's calc_default_ag_geometry),
  each starting with its superblock, AGF, AGI, the inode, free-space (by block and by size) and
  refcount btree roots (blocks 0-7), inode chunks of 64 in the directory's AG, its log inside the middle AG, ``log_buffer_bytes``
  (logbsize, 32 KiB) per log write.
- btrfs: one data area and one metadata area (the chunks the allocator fills from the start),
  ``node_bytes`` (16 KiB) tree blocks, metadata duplicated (the DUP profile, mkfs.btrfs's default on
  one device), superblock copies at 64 KiB, 64 MiB and 256 GiB where the device reaches them.

:class:`Allocator` hands out blocks: each directory's files go to one group (directories spread
over the groups, as Orlov's allocator spreads top-level directories), a file's next blocks follow
its last extent when that end is free, else the group's cursor; freed blocks are not reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["FS_KINDS", "FsParams", "Allocator"]

FS_KINDS = ("ext2", "ext3", "ext4", "xfs", "btrfs")


@dataclass(frozen=True)
class FsParams:
    """A file system's kind and the settings the I/O path depends on."""

    kind: str
    device_bytes: int
    block_bytes: int = 4096
    inode_bytes: int = 256
    journal_mode: str = "ordered"  # ext3/ext4 data=: ordered, writeback, journal
    commit_interval_s: float = 5.0
    journal_bytes: int | None = None  # None: mke2fs's default for the size (ext2fs_default_journal_size)
    barrier: bool = True
    inode_readahead_blocks: int = 32
    ag_count: int = 4
    log_buffer_bytes: int = 32 << 10
    node_bytes: int = 16 << 10
    metadata_copies: int = 2

    def __post_init__(self):
        if self.kind not in FS_KINDS:
            raise ValueError(f"file system: kind = {self.kind!r} must be one of {', '.join(FS_KINDS)}")
        if self.block_bytes not in (1024, 2048, 4096, 65536) or (self.kind == "xfs" and self.block_bytes < 512):
            raise ValueError(f"file system: block_size_bytes = {self.block_bytes!r} must be 1024, 2048 or 4096")
        if self.journal_mode not in ("ordered", "writeback", "journal"):
            raise ValueError(f"file system: journal_mode = {self.journal_mode!r} must be ordered, writeback or journal")
        if self.journal_mode == "journal" and self.kind not in ("ext3", "ext4"):
            raise ValueError(f"file system: journal_mode = 'journal' needs ext3 or ext4, not {self.kind}")
        if not isinstance(self.device_bytes, (int, np.integer)) or self.device_bytes < (16 << 20):
            raise ValueError(f"file system: device_bytes = {self.device_bytes!r} must be an integer >= 16 MiB")
        if not np.isfinite(self.commit_interval_s) or self.commit_interval_s <= 0:
            raise ValueError(f"file system: commit_interval_s = {self.commit_interval_s!r} must be > 0")

    @property
    def journaled(self) -> bool:
        return self.kind in ("ext3", "ext4")

    @cached_property
    def group_bytes(self) -> int:
        if self.kind == "xfs":
            return max(self.device_bytes // self.ag_count, 16 << 20)
        if self.kind == "btrfs":
            return self.device_bytes
        return 8 * self.block_bytes * self.block_bytes

    @cached_property
    def groups(self) -> int:
        return max(1, -(-self.device_bytes // self.group_bytes))

    @cached_property
    def inodes_per_group(self) -> int:
        return max(16, self.group_bytes // 16384)

    @cached_property
    def metadata_head_blocks(self) -> int:
        """Blocks at each group's start before its data: bitmaps and inode table (ext), headers and
        the first inode chunks (xfs)."""
        if self.kind == "xfs":
            return 8 + 1024
        return 4 + -(-self.inodes_per_group * self.inode_bytes // self.block_bytes)

    def inode_block(self, group: int, index: int) -> int:
        """The device block holding inode ``index`` of ``group`` (ext's table, xfs's chunks)."""
        per_block = self.block_bytes // self.inode_bytes
        base = group * (self.group_bytes // self.block_bytes)
        if self.kind == "xfs":
            # 64-inode chunks, allocated in the AG after its headers.
            chunk_blocks = 64 * self.inode_bytes // self.block_bytes
            return base + 8 + (index // 64) * chunk_blocks + (index % 64) // per_block
        return base + 4 + index // per_block

    @cached_property
    def journal_block(self) -> int:
        """The first block of the ext journal or the xfs log (the middle group)."""
        mid = self.groups // 2
        return mid * (self.group_bytes // self.block_bytes) + self.metadata_head_blocks

    @cached_property
    def journal_blocks(self) -> int:
        if self.kind == "xfs":
            return max(256, min(self.device_bytes // 64, 2 << 30) // self.block_bytes)
        if self.journal_bytes is not None:
            return max(256, self.journal_bytes // self.block_bytes)
        # e2fsprogs lib/ext2fs/mkjournal.c, ext2fs_default_journal_size: journal blocks by fs blocks.
        n = self.device_bytes // self.block_bytes
        for limit, blocks in ((32768, 1024), (256 << 10, 4096), (512 << 10, 8192), (4096 << 10, 16384),
                              (8192 << 10, 32768), (16384 << 10, 65536), (32768 << 10, 131072)):
            if n < limit:
                return blocks
        return 262144

    def superblocks(self) -> list[int]:
        """btrfs's superblock copies (byte offsets) inside the device."""
        return [o for o in (64 << 10, 64 << 20, 256 << 30) if o + 4096 <= self.device_bytes]


class Allocator:
    """Bump allocation per group (see the module docstring); btrfs: data from the device's start,
    metadata from its middle (the first metadata chunk follows the first data chunks)."""

    def __init__(self, p: FsParams):
        self.p = p
        self.group_blocks = p.group_bytes // p.block_bytes
        self.total_blocks = p.device_bytes // p.block_bytes
        self.groups = p.groups
        head = p.metadata_head_blocks if p.kind != "btrfs" else (1 << 20) // p.block_bytes
        self.cursor = [g * self.group_blocks + head for g in range(p.groups)]
        self.meta_cursor = self.total_blocks // 2
        self.journal_lo = p.journal_block
        self.journal_hi = p.journal_block + p.journal_blocks

    def group_of_dir(self, d: int) -> int:
        # Orlov: top-level directories spread over the groups; xfs: directories rotor over the AGs.
        return (d * 7919) % self.groups if self.p.kind != "btrfs" else 0

    def data(self, group: int, n: int, after: int | None) -> list[tuple[int, int]]:
        """``n`` blocks for a file in ``group``, following block ``after`` when it is the cursor:
        ``[(device_block, count), ...]``."""
        out = []
        g = group
        groups = self.groups
        for _ in range(groups):
            start = self.cursor[g]
            end = min((g + 1) * self.group_blocks, self.total_blocks)
            if g == groups // 2 and self.p.kind != "btrfs" and start < self.journal_hi and start + n > self.journal_lo:
                start = self.cursor[g] = max(start, self.journal_hi)
            take = min(n, end - start)
            if take > 0:
                out.append((start, take))
                self.cursor[g] = start + take
                n -= take
            if n == 0:
                return out
            g = (g + 1) % groups
        raise ValueError(f"file system: device_bytes = {self.p.device_bytes} is full ({self.p.kind})")

    def metadata(self, n: int) -> int:
        """``n`` contiguous blocks of btrfs metadata; the first block."""
        start = self.meta_cursor
        self.meta_cursor += n
        if self.meta_cursor > self.total_blocks:
            raise ValueError(f"file system: device_bytes = {self.p.device_bytes} is full (btrfs metadata)")
        return start
