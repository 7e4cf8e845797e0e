"""Where a file system puts things: its geometry per kind and block size, and the blocks it allocates.

Geometry (:class:`FsParams`, from ``mke2fs``/``mkfs.xfs``/``mkfs.btrfs`` defaults):

- ext2/3/4: block groups of ``8 * block_bytes`` blocks (one bitmap block maps a group), each starting
  with two blocks of superblock and descriptors (the primary or a backup copy; the descriptors of
  group g in block ``1 + g * 64 // block_bytes``), its block bitmap, inode bitmap and inode table (``inodes_per_group`` inodes of
  ``inode_bytes``: one inode per 16 KiB of space, 4 KiB below 512 MiB, mke2fs.conf's inode_ratio); the journal
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
its last extent when that end is free, else the group's cursor; freed blocks are not reused (ext4,
xfs, btrfs).

ext2 and ext3 files (block-mapped: the kernel's ext4 driver serves them, with its multiblock
allocator, fs/ext4/mballoc.c) are placed by :class:`~.fs_mballoc.MballocAllocator`, which keeps
each group's free blocks and reuses freed ones; the windows it asks for:

- while the file is at most ``s_mb_stream_request`` (16) blocks long its blocks come from the
  locality group's preallocation (ext4_mb_group_or_file), a run of ``s_mb_group_prealloc`` (512)
  blocks shared by every small file in turn;
- past that, each request is normalized (ext4_mb_normalize_request) to the window of the size
  table (16 KiB .. 1 MiB, then 2, 4 and 8 MiB windows aligned to their size) that holds the file's
  new size (:func:`mballoc_window`), less the blocks below it that the file has (Linux 6.1,
  ``FsParams.used_prealloc_bounds`` True). A block-mapped file gives mballoc no left neighbour
  (ext4_ind_map_blocks sets no ``pleft``), so the goal is not tried first.
- (Linux 6.18, ``FsParams.used_prealloc_bounds`` False) each window is trimmed to start at the end
  of the file's nearest inode preallocation that still has blocks (ext4_mb_normalize_request); one
  the file used to its end is gone. The first window [0, 32) keeps the 16 blocks below the file's
  block 16 unused, so a file written from its start asks at block 64 for [32, 128), 96 blocks,
  whose lower 32 it leaves unused in turn; a file reopened at block ``s`` asks for its whole window
  and lands ``s`` blocks into it. Windows past 16 blocks are sought from the stream goal
  (s_mb_last_groups, set to the group each one lands in: ext4_mb_use_best_found).

An ext4 file (extents, delayed allocation: its blocks are allocated at write-back, the file's
size known) gets its first extent the same way (:meth:`Allocator.extent_file`): at most 16
blocks from the locality group's preallocation, else the normalized window of its size (a power
of two up to 1 MiB, then 2, 4 or 8 MiB) on a boundary of that size (a new file has no left
neighbour to aim at); its later extents follow the last one (the goal: ``pleft + 1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["FS_KINDS", "FsParams", "Allocator", "mballoc_window", "mke2fs_inode_ratio"]

FS_KINDS = ("ext2", "ext3", "ext4", "xfs", "btrfs", "jfs", "reiserfs")  # jfs, reiserfs: fs_logged.py
#: mballoc's defaults (fs/ext4/mballoc.c, ext4_mb_init): a file of at most this many blocks is
#: served from the locality group's preallocation (s_mb_stream_request), which is this long
#: (s_mb_group_prealloc).
MB_STREAM_REQUEST_BLOCKS = 16
MB_GROUP_PREALLOC_BLOCKS = 512
#: mke2fs.conf's inode_ratio [bytes per inode] by the file system's size type (misc/mke2fs.c picks
#: "small" below 512 MiB, "big" from 4 TiB, "huge" from 16 TiB; e2fsprogs' and Debian's mke2fs.conf):
#: a small file system gets four times the inodes of a default one.
MKE2FS_INODE_RATIOS = ((512 << 20, 4096), (4 << 40, 16384), (16 << 40, 32768))
MKE2FS_HUGE_INODE_RATIO = 65536


def mke2fs_inode_ratio(device_bytes: int) -> int:
    """The bytes per inode mke2fs gives a file system of *device_bytes* (:data:`MKE2FS_INODE_RATIOS`)."""
    return next((ratio for below, ratio in MKE2FS_INODE_RATIOS if device_bytes < below), MKE2FS_HUGE_INODE_RATIO)


#: Blocks mke2fs gives its first files in group 0: the root directory, lost+found's four and the
#: resize inode's double-indirect block.
ROOT_FILES_BLOCKS = 6


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
    tail_bytes: int | None = None  # reiserfs: the largest file kept in its leaf (None: tails=small's)
    #: ext2/ext3 (mballoc): whether an inode preallocation used to its end still bounds the next
    #: normalized request, so each window starts where the last ended (Linux 6.1, the VM's kernel);
    #: False: it is gone, and the window starts at the end of the nearest one with blocks the file
    #: left unused (Linux 6.18, the host's, as its ext4_mballoc_alloc tracepoint shows).
    used_prealloc_bounds: bool = False
    #: ext3/ext4: jbd2 ends a transaction at the journal's blocks over this (j_max_transaction_buffers,
    #: jbd2_journal_get_max_txn_bufs): 3 since Jan Kara's "jbd2: Increase maximum transaction size"
    #: (2024), as on Linux 6.18, the host's (blktrace of ext3 on an 8,192-block journal: size-forced
    #: commits of 2,699 log blocks); 4 before it (Linux 6.1, the VM's).
    transaction_divisor: int = 3

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
        d = self.transaction_divisor
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
            raise ValueError(f"file system: transaction_divisor = {d!r} must be an integer >= 2")
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
        """ext2/3/4: mke2fs's (lib/ext2fs/initialize.c): the device's bytes over its size type's
        inode_ratio (:func:`mke2fs_inode_ratio`), shared over the groups, at most one bitmap block's
        worth, then raised to fill the inode table's last block and cut to a multiple of 8."""
        if self.kind not in ("ext2", "ext3", "ext4"):
            return max(16, self.group_bytes // 16384)
        blocks = self.device_bytes // self.block_bytes
        inodes = blocks * self.block_bytes // mke2fs_inode_ratio(self.device_bytes)
        ipg = min(-(-inodes // self.groups), 8 * self.block_bytes)
        table = -(-ipg * self.inode_bytes // self.block_bytes)
        return max(16, table * self.block_bytes // self.inode_bytes // 8 * 8)

    # -- ext geometry (e2fsprogs misc/mke2fs.c, lib/ext2fs/initialize.c, alloc_tables.c) ----------
    @cached_property
    def group_blocks(self) -> int:
        return self.group_bytes // self.block_bytes

    @cached_property
    def ext_desc_bytes(self) -> int:
        return 64 if self.kind == "ext4" else 32  # ext4's 64bit feature doubles the descriptor

    @cached_property
    def _ext_gdt_blocks(self) -> int:
        return -(-self.groups * self.ext_desc_bytes // self.block_bytes)

    @cached_property
    def _ext_reserved_gdt_blocks(self) -> int:
        """resize_inode's reserve (calc_reserved_gdt_blocks): descriptors for 1024 times the blocks,
        at most 2^32 blocks, less those in use; at most ``block_bytes / 4``."""
        most = min(0xFFFFFFFF, self.device_bytes // self.block_bytes * 1024)
        groups = -(-most // self.group_blocks)
        per = self.block_bytes // self.ext_desc_bytes
        return max(0, min(-(-groups // per) - self._ext_gdt_blocks, self.block_bytes // 4))

    def _ext_head(self, g: int) -> int:
        """Blocks of superblock and descriptors at group ``g``'s start: groups 0, 1 and the powers of
        3, 5 and 7 carry a copy (sparse_super), the others none."""
        def power(n, b):
            while n > 1 and n % b == 0:
                n //= b
            return n == 1
        backup = g in (0, 1) or any(power(g, b) for b in (3, 5, 7))
        return 1 + self._ext_gdt_blocks + self._ext_reserved_gdt_blocks if backup else 0

    @cached_property
    def _itable_blocks(self) -> int:
        return -(-self.inodes_per_group * self.inode_bytes // self.block_bytes)

    def _flex(self, g: int) -> tuple[int, int]:
        """(first group, groups) of ``g``'s flex group: ext4 packs 16 groups' bitmaps and inode
        tables at the flex group's start (flex_bg); ext2 and ext3 keep each group's in the group."""
        if self.kind != "ext4":
            return g, 1
        first = g - g % 16
        return first, min(16, self.groups - first)

    def block_bitmap(self, g: int) -> int:
        first, _ = self._flex(g)
        return first * self.group_blocks + self._ext_head(first) + g - first

    def inode_bitmap(self, g: int) -> int:
        first, n = self._flex(g)
        return first * self.group_blocks + self._ext_head(first) + n + g - first

    def inode_table(self, g: int) -> int:
        first, n = self._flex(g)
        return first * self.group_blocks + self._ext_head(first) + 2 * n + (g - first) * self._itable_blocks

    def data_start(self, g: int) -> int:
        """The first block of group ``g`` after its metadata (xfs: after the AG's headers and first
        inode chunks; btrfs: 1 MiB in, past the superblock)."""
        if self.kind == "xfs":
            return g * self.group_blocks + 8 + 1024
        if self.kind == "btrfs":
            return (1 << 20) // self.block_bytes
        first, n = self._flex(g)
        if g == first:
            return self.inode_table(first + n - 1) + self._itable_blocks
        return g * self.group_blocks + self._ext_head(g)

    def inode_block(self, group: int, index: int) -> int:
        """The device block holding inode ``index`` of ``group`` (ext's table, xfs's chunks)."""
        per_block = self.block_bytes // self.inode_bytes
        base = group * self.group_blocks
        if self.kind == "xfs":
            # 64-inode chunks, allocated in the AG after its headers.
            chunk_blocks = 64 * self.inode_bytes // self.block_bytes
            return base + 8 + (index // 64) * chunk_blocks + (index % 64) // per_block
        return self.inode_table(group) + index // per_block

    @cached_property
    def journal_block(self) -> int:
        """The first block of the ext journal or the xfs log. xfs: inside the middle AG. ext4
        (lib/ext2fs/mkjournal.c, get_midpoint_journal_block): the first block of the middle group or
        a neighbour, whichever has the most free blocks. ext3 (block-mapped, no flex_bg): in group
        0 after the root directory, lost+found and the resize inode's block (mke2fs's first
        files), its first indirect block after 12 journal blocks left out."""
        if self.kind == "xfs":
            # mkfs.xfs: the middle AG's first free block, after its headers and btree roots (0-5).
            return self.groups // 2 * self.group_blocks + 6
        if self.kind == "ext3":
            return self.data_start(0) + ROOT_FILES_BLOCKS
        mid = max(0, (self.device_bytes // self.block_bytes) // 2 // self.group_blocks)
        lo, hi = max(mid - 1, 0), min(mid + 1, self.groups - 1)
        end = self.device_bytes // self.block_bytes  # the last group ends with the device
        free = {g: min((g + 1) * self.group_blocks, end) - self.data_start(g) for g in range(lo, hi + 1)}
        best = lo
        for g in range(lo + 1, hi + 1):
            if free[g] > free[best]:
                best = g
        return best * self.group_blocks + (self.data_start(best) - best * self.group_blocks
                                             if best == self._flex(best)[0] else self._ext_head(best))

    @cached_property
    def journal_blocks(self) -> int:
        if self.journal_bytes is not None:
            return max(256, self.journal_bytes // self.block_bytes)
        if self.kind == "xfs":  # mkfs.xfs: 64 MiB at least (xfsprogs 5.15 and later), at most 2 GiB
            return max(64 << 20, min(self.device_bytes // 64, 2 << 30)) // self.block_bytes
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


def mballoc_window(block: int, block_bytes: int) -> tuple[int, int]:
    """The normalized request (ext4_mb_normalize_request) that file block ``block`` falls in, for a
    file written a block at a time (``block + 1`` blocks long when it is allocated), less the
    blocks below it that the file then has: ``(first block, end block)``."""
    size = (block + 1) * block_bytes
    if size <= 1 << 20:
        window, start = 16 << 10, 0
        while window < size:
            window *= 2
    else:  # 2, 4 or 8 MiB windows aligned to their size
        window = 2 << 20 if size <= 4 << 20 else 4 << 20 if size <= 8 << 20 else 8 << 20
        start = block * block_bytes // window * window
    first, end = start // block_bytes, (start + window) // block_bytes
    # A window from block 0 holds the file's first half already (it has more than half its size).
    return (first if first else (end - first) // 2), end


class Allocator:
    """Bump allocation per group (see the module docstring); btrfs: data from the device's start,
    metadata from its middle (the first metadata chunk follows the first data chunks)."""

    def __init__(self, p: FsParams):
        self.p = p
        self.group_blocks = p.group_bytes // p.block_bytes
        self.total_blocks = p.device_bytes // p.block_bytes
        self.groups = p.groups
        self.cursor = [p.data_start(g) for g in range(p.groups)]
        if p.kind in FS_KINDS[:3]:
            self.cursor[0] += ROOT_FILES_BLOCKS
        self.meta_cursor = self.total_blocks // 2
        journaled = p.kind in ("ext3", "ext4", "xfs")
        self.journal_lo = p.journal_block if journaled else 0
        # ext3's block-mapped journal: past its 12 direct blocks an indirect block, then a
        # double-indirect block and an indirect block per block_bytes/4 blocks more.
        per, rest = p.block_bytes // 4, p.journal_blocks - 12
        extra = (0 if rest <= 0 else 1 if rest <= per else 2 + -(-(rest - per) // per)) if p.kind == "ext3" else 0
        self.journal_hi = self.journal_lo + p.journal_blocks + extra if journaled else 0
        self.journal_group = self.journal_lo // self.group_blocks
        self.group_prealloc = [0, 0]  # the locality group's preallocation: next block, end
        # The stream goal (s_mb_last_groups, zeroed at mount: ext4_mb_init) where files past
        # s_mb_stream_request blocks look first (ext2/ext3: fs_mballoc).
        self.stream_group = 0

    def _window_start(self, block: int) -> int:
        """The first block of the normalized window that file block ``block`` falls in
        (ext4_mb_normalize_request): 0 up to 1 MiB, else a multiple of the 2, 4 or 8 MiB window."""
        bs = self.p.block_bytes
        size = (block + 1) * bs
        if size <= 1 << 20:
            return 0
        window = 2 << 20 if size <= 4 << 20 else 4 << 20 if size <= 8 << 20 else 8 << 20
        return block * bs // window * window // bs

    def _group_end(self, g: int) -> int:
        return min((g + 1) * self.group_blocks, self.total_blocks)

    def file_goal_group(self, group: int) -> int:
        """The group a regular file's data goes to, its inode being in ``group``: with flex_bg (ext4's 16
        groups a flex group) the flex group's second, where it has one, else the inode's own. The goal is
        the second group (fs/ext4/balloc.c, ext4_inode_to_goal_block: the first holds the directories and
        every group's bitmaps and inode tables), and mballoc's first pass skips a flex group's first group
        for data (ext4_mb_good_group). Its first passes also skip a group whose bitmap is not yet loaded,
        and ext4lazyinit loads them in the background after the mount. So this is the steady state: a
        file written right after the mount can land in group 0 (docs/benchmarks.md)."""
        if self.p.kind != "ext4":
            return group
        goal = group - group % 16 + 1
        return goal if goal < self.groups else group

    def extent_file(self, group: int, n: int) -> list[tuple[int, int]]:
        """Device runs for the first ``n`` blocks of a new ext4 file (see the module docstring): a file
        past the stream request in its goal group (:meth:`file_goal_group`), a small one from the
        locality group's preallocation."""
        if n <= MB_STREAM_REQUEST_BLOCKS:
            return self._from_group_prealloc(group, n)
        group = self.file_goal_group(group)
        size = n * self.p.block_bytes
        window = 2 << 20 if size <= 4 << 20 else 4 << 20 if size <= 8 << 20 else 8 << 20
        if size <= 1 << 20:
            window = 16 << 10
            while window < size:
                window *= 2
        blocks = window // self.p.block_bytes
        take = min(n, blocks)
        first = self._aligned(group, blocks, take)
        return [(first, take)] + (self.data(group, n - take, first + take) if n > take else [])

    def _from_group_prealloc(self, group: int, n: int) -> list[tuple[int, int]]:
        out = []
        while n > 0:
            nxt, end = self.group_prealloc
            if nxt >= end:
                nxt, k = self._group_prealloc_window(group)
                end = nxt + k
            take = min(n, end - nxt)
            out.append((nxt, take))
            self.group_prealloc = [nxt + take, end]
            n -= take
        return out

    def _group_prealloc_window(self, group: int) -> tuple[int, int]:
        """The locality group's next preallocation (first block, blocks): ``s_mb_group_prealloc`` blocks
        as the allocator places data (ext4_mb_new_group_pa)."""
        (first, k), *_ = self.data(group, MB_GROUP_PREALLOC_BLOCKS, None)
        return first, k

    def _aligned(self, group: int, align: int, n: int, skip: int = 0) -> int:
        """The first block of ``n`` free blocks at an ``align``-block boundary at or after the
        cursor of ``group`` (or of the next groups), past the journal; with ``skip``: ``skip``
        blocks in from that boundary (the part of the buddy-aligned run below the file's block, left
        free, a hole), and a power-of-two request found there makes that group the stream goal
        (ext4_mb_use_best_found)."""
        g = group
        for _ in range(self.groups):
            start = -(-self.cursor[g] // align) * align
            if g == self.journal_group and start < self.journal_hi and start + skip + n > self.journal_lo:
                start = -(-self.journal_hi // align) * align
            if start + skip + n <= self._group_end(g):
                self.cursor[g] = start + skip + n
                if group == self.stream_group:
                    self.stream_group = g
                return start + skip
            g = (g + 1) % self.groups
        raise ValueError(f"file system: device_bytes = {self.p.device_bytes} is full ({self.p.kind})")

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
            if g == self.journal_group and start < self.journal_hi and start + n > self.journal_lo:
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
