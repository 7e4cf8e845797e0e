"""The metadata a file system reads, and where btrfs's items go: the part of :mod:`.fs`'s file system
that follows what the mount read, a lookup's directory blocks, ext's inode-table read-ahead and
mballoc's bitmap read-ahead, xfs's inode clusters and free-space btrees, and btrfs's fs-tree leaves
(their sizes in items, fs/btrfs/ctree.h)."""

from __future__ import annotations

import math
import zlib

from .stream import Flag, Op

__all__ = ["MetadataReads", "BTRFS_LEAF_HEADER_BYTES", "NAME_BYTES", "RANDOM_FILL"]

FIRST_INODE = 11  # ext's reserved inodes come first in group 0 (EXT4_GOOD_OLD_FIRST_INO)
# btrfs's fs tree (fs/btrfs/ctree.h, include/uapi/linux/btrfs_tree.h): a leaf less its 101-byte header
# holds items with a 25-byte header each: a file's inode item (160 bytes) and inode ref (10 bytes and
# the name), an entry's directory item and directory index item (30 bytes and the name each).
BTRFS_LEAF_HEADER_BYTES = 101
BTRFS_ITEM_BYTES = 25
BTRFS_INODE_BYTES = 2 * BTRFS_ITEM_BYTES + 160 + 10
BTRFS_ENTRY_BYTES = BTRFS_ITEM_BYTES + 30
NAME_BYTES = 8  # a file name's length (as fs.py's directory entries assume)
# Directory items are keyed by the name's hash: they fill their leaves in random order. A plain
# B-tree's leaves would be ln 2 full (Yao, "On random 2-3 trees", 1978), but btrfs makes room in a
# full leaf by pushing items to its neighbours before it splits one (fs/btrfs/ctree.c, split_leaf:
# push_leaf_right, then push_leaf_left, then a split at the middle): inserting 2,000-10,000
# random keys that way fills the leaves 0.86 on average (tests/test_iopath_btrfs_fill.py simulates
# it).
# Index items (a counter's order) fill theirs whole.
RANDOM_FILL = 0.86


class MetadataReads:
    """Methods of the file system (:class:`~.fs._Fs`: ``p``, ``alloc``, ``j``, ``files``, ``dirs``,
    ``entries``, ``read_meta``, ``emit`` and ``meta``) for its metadata reads and btrfs's leaves."""

    inodes_held = False  # the files are held open across drop_caches (hold_inodes)

    def mounted(self, caches_dropped: bool = False):
        """What the mount read before the workload (ext: fs/ext4/super.c, ext4_fill_super): the group
        descriptors (ext4_group_desc_init), and the root directory's inode (ext4_iget of
        EXT4_ROOT_INO, in group 0's first table block) with its read-ahead window. Directories
        with blocks on the device are not cached.

        ``caches_dropped`` (the workload starts after ``sync`` and ``drop_caches``, not on a fresh
        mount): drop_caches frees every clean page no one holds (fs/drop_caches.c,
        drop_pagecache_sb -> invalidate_mapping_pages; a buffer with a reference is busy,
        fs/buffer.c, try_to_free_buffers). The super block holds its group descriptors' buffers
        for the mount's lifetime (ext4_group_desc_init, sb_bread_unmovable), and the root's inode
        stays in memory (its dentry is the mount's root), but on ext2 nothing holds the root's
        table block and its read-ahead window: the next inode read in that block reads them again
        (__ext4_get_inode_loc). On ext3/ext4 jbd2 holds a journaled buffer until its transaction
        is checkpointed (jbd2_journal_add_journal_head takes a reference), so the blocks the
        harness's steps just changed, the root's table block among them, stay cached.

        ``caches_dropped`` also means the mount has allocated before (the harness's earlier steps:
        the previous copy written, removed and synced), so mballoc's read-ahead of the block bitmaps
        is done: ext4_mb_prefetch (fs/ext4/mballoc.c) skips a group whose bitmap it read once since
        the mount (EXT4_MB_GRP_TEST_AND_SET_READ) or whose buddy is set up (EXT4_MB_GRP_NEED_INIT
        cleared); drop_caches resets neither, it only drops the bitmap buffers, which the
        allocation then reads again for the groups it allocates in (ext4_mb_load_buddy)."""
        self.dirs_on_device = {d for d, blocks in self.dirs.items() if blocks}
        if self.p.kind == "xfs":
            # Inode chunks on the device: the root's (AG 0's first) and those of the files there.
            # The AG headers were read (the per-AG reservations, xfs_ag_resv_init).
            self.xfs_chunks_on_device = {(0, 0)} | {(i.group, i.index // 64) for i in self.files.values()}
            self.read_meta.update(g * self.alloc.group_blocks for g in range(self.p.groups))
        if self.p.kind not in ("ext2", "ext3", "ext4"):
            return
        self.dirs_on_device.add(0)  # the root's first block, written by mke2fs
        self.read_meta.update(self.descriptor(g) for g in range(self.p.groups))
        self.prefetched = self.prefetched or caches_dropped
        if caches_dropped and self.p.kind == "ext2":
            return
        root = self.p.inode_table(0)
        self.read_meta.add(("iblk", root))
        self.read_meta.update(("iblk", n) for n in self.ext_readahead_window(0, root))

    def hold_inodes(self):
        """The files stay open across a ``drop_caches`` (a loop device holds its image): their inodes
        stay in memory, so a stat reads nothing and a read walks no block map (the extent status tree:
        :mod:`.fs_blockmap`), but without a journal nothing holds the inode-table blocks, which it frees
        (fs/drop_caches.c; see :meth:`mounted`): none of them is cached when the workload starts, and
        an access-time update reads its block (:meth:`atime_update`)."""
        self.inodes_held = True
        if not self.p.journaled:
            self.read_meta = {k for k in self.read_meta if not (isinstance(k, tuple) and k[0] == "iblk")}

    def atime_update(self, t, ino):
        """A read's access-time update where the file's inode stayed in memory and its table block
        did not (:meth:`hold_inodes`). The image was written since it was last read (the workload's
        earlier steps wrote through it; a read above updates its own file's access time, and that
        inode's write-back writes the image), so relatime updates the access time (fs/inode.c,
        relatime_need_update: atime older than mtime), and the inode's change reads its table block
        with its read-ahead window (touch_atime -> ext4_dirty_inode -> ext4_reserve_inode_write ->
        __ext4_get_inode_loc), once, after the read (filemap_read calls file_accessed when its copy
        is done): each loop layer's worker waits for it before its next request. A journal holds
        the block (see :meth:`mounted`)."""
        if self.inodes_held and self.p.kind in ("ext2", "ext3", "ext4") and not self.p.journaled:
            self.ext_inode_read(t, ino)

    def lookup(self, t, d: int):
        """A name's lookup in directory ``d`` (a stat, a create's check that the name is new): the
        first one reads the directory's blocks that are on the device, one by one as it needs them
        (ext4_bread, xfs_da_read_buf): separate requests, a nanosecond apart so the queue's merge of
        one instant leaves them apart. A directory made by the workload is cached."""
        if ("dir", d) in self.read_meta:
            return
        self.read_meta.add(("dir", d))
        if d not in self.dirs_on_device:
            return
        for k, b in enumerate(self.dir_blocks(d)):
            self.emit(t + k * 1e-9, Op.READ, b * self.bs, self.bs, int(Flag.META))

    def read_meta_block(self, t, key, blk: int, count: int):
        if key in self.read_meta:
            return
        self.read_meta.add(key)
        self.emit(t, Op.READ, blk * self.bs, count * self.bs, int(Flag.META))

    def ext_inode_read(self, t, ino):
        """Read an inode's table block (fs/ext4/inode.c, __ext4_get_inode_loc; the ext4 driver
        mounts ext2 and ext3 too): the block itself as a metadata read, and ahead of it the table
        blocks ``b .. b + inode_readahead_blocks`` (both ends included, ``b`` the block rounded down
        to that many, not before the table, not past the inodes in use where the group counts them:
        ext4's group descriptor checksums) that are not read yet, as plain reads apart from it.
        The window goes first, the block a nanosecond after it: __ext4_get_inode_loc submits the
        read-ahead before the block (blktrace issues them in that order at every loop layer), and a
        loop worker below reads them in that order, so its image's page cache sees the block as a
        lone read behind the window, not as the start of a sequential stream."""
        blk = self.p.inode_block(ino.group, ino.index)
        if ("iblk", blk) in self.read_meta:
            return
        self.read_meta.add(("iblk", blk))
        self.emit(t + 1e-9, Op.READ, blk * self.bs, self.bs, int(Flag.META))
        run = None
        for n in self.ext_readahead_window(ino.group, blk):
            if n != blk and ("iblk", n) not in self.read_meta:
                self.read_meta.add(("iblk", n))
                if run is not None and run[1] == n:
                    run[1] += 1
                    continue
                if run is not None:
                    self.emit(t, Op.READ, run[0] * self.bs, (run[1] - run[0]) * self.bs, 0)
                run = [n, n + 1]
            elif run is not None:
                self.emit(t, Op.READ, run[0] * self.bs, (run[1] - run[0]) * self.bs, 0)
                run = None
        if run is not None:
            self.emit(t, Op.READ, run[0] * self.bs, (run[1] - run[0]) * self.bs, 0)

    def new_inode_block(self, t, ino):
        """The table block of an inode being created (ext4_mark_inode_dirty -> ext4_get_inode_loc):
        read as :meth:`ext_inode_read` does when it is not cached and another inode of the block is
        in use (the reserved inodes of group 0's first block, or the workload's); a block whose
        other inodes are all free is zeroed in memory, not read (__ext4_get_inode_loc)."""
        blk = self.p.inode_block(ino.group, ino.index)
        if ("iblk", blk) in self.read_meta:
            return
        reserved = ino.group == 0 and blk == self.p.inode_table(0)
        if reserved or self.live_in_block.get(blk, 0) > 1:
            self.ext_inode_read(t, ino)
        else:
            self.read_meta.add(("iblk", blk))

    def ext_readahead_window(self, g: int, blk: int) -> range:
        """The inode-table blocks __ext4_get_inode_loc reads with table block ``blk`` of group ``g``
        (see :meth:`ext_inode_read`)."""
        ra = self.p.inode_readahead_blocks
        if ra <= 1:
            return range(0)
        table = self.p.inode_table(g)
        b = max(blk - blk % ra, table)
        end = b + ra
        if self.p.kind == "ext4":
            used = self.next_ino[g] + (FIRST_INODE if g == 0 else 0)
            end = min(end, table + used // (self.bs // self.p.inode_bytes))
        return range(b, end + 1)

    def alloc_bitmap(self, t, blk: int):
        """Dirty the bitmap (ext) or AGF (xfs) of a block being allocated. ext: the mount's first
        allocation finds mballoc's buddy cache cold and, past the goal's group, reads ahead the
        block bitmaps of the next groups (fs/ext4/mballoc.c, ext4_mb_regular_allocator ->
        ext4_mb_prefetch: ``s_mb_prefetch`` groups, 32 without flex_bg, a flex group's worth with
        it), those whose bitmap is on the device (ext4: not BLOCK_UNINIT: groups holding blocks,
        the journal's and the last one, as mke2fs leaves them)."""
        self.meta(t, self.bitmap(blk))
        if self.p.kind not in ("ext2", "ext3", "ext4") or self.prefetched:
            return
        self.prefetched = True
        g = blk // self.alloc.group_blocks
        nr = min(32, self.p.groups) if self.p.kind != "ext4" else 16 - g % 16
        for h in range(g + 1, min(g + nr, self.p.groups)):
            on_device = (self.p.kind != "ext4" or h in (0, self.alloc.journal_group, self.p.groups - 1)
                         or self.alloc.cursor[h] > self.p.data_start(h))
            if on_device and self.bitmap(h * self.alloc.group_blocks) not in self.read_meta:
                b = self.bitmap(h * self.alloc.group_blocks)
                self.read_meta.add(b)
                self.emit(t, Op.READ, b * self.bs, self.bs, int(Flag.META))

    def dirty_inode(self, t, ino):
        """Log the inode. xfs pins the inode's cluster buffer when it logs an inode
        (xfs_trans_log_inode -> xfs_imap_to_bp): a cluster of inodes on the device, not cached,
        is read; a chunk allocated since the mount is made in memory (xfs_ialloc_inode_init)."""
        if self.p.kind == "xfs" and (ino.group, ino.index // 64) in self.xfs_chunks_on_device:
            self.xfs_cluster_read(self.latest if t is None else t, ino)
        self.j.dirty(t, self.inode_block(ino), "inode")

    def xfs_cluster_read(self, t, ino):
        """Read the inode's cluster: 8 KiB of 256-byte inodes, scaled by the inode size on v5 file
        systems (fs/xfs/xfs_mount.c, xfs_set_inoalignment / inode_cluster_size)."""
        cluster = max(1, 8192 * self.p.inode_bytes // 256 // self.bs)
        blk = self.p.inode_block(ino.group, ino.index)
        first = blk - blk % cluster
        self.read_meta_block(t, ("ino", first), first, cluster)

    def xfs_free_space(self, t, g: int):
        """Change AG ``g``'s free space: its AGF, its free list (the AGFL, a sector of the AG's first
        block, read at the first fix-up: xfs_alloc_fix_freelist) and the roots of its free-space
        btrees by block and by size (blocks 1 and 2: XFS_BNO_BLOCK, XFS_CNT_BLOCK)."""
        base = g * self.alloc.group_blocks
        self.meta(t, base)
        if ("agfl", g) not in self.read_meta:
            self.read_meta.add(("agfl", g))
            self.emit(t, Op.READ, base * self.bs + 3 * 512, 512, int(Flag.META))
        # Read one after the other (xfs_btree_read_buf_block waits): apart, not merged.
        self.meta(t + 1e-9, base + 2)
        self.meta(t + 2e-9, base + 1)

    def btrfs_per_leaf(self) -> tuple[int, int]:
        """(files' inode items, directory entries) a btrfs leaf holds (see BTRFS_LEAF_HEADER_BYTES)."""
        room = self.p.node_bytes - BTRFS_LEAF_HEADER_BYTES
        return room // (BTRFS_INODE_BYTES + NAME_BYTES), room // (BTRFS_ENTRY_BYTES + NAME_BYTES)

    def btrfs_live_leaves(self) -> dict:
        """Leaves each btrfs tree's live items fill: the fs tree's inode, directory (RANDOM_FILL
        full) and directory index items, in bytes (see BTRFS_LEAF_HEADER_BYTES); extent items 100 a
        leaf, checksums one leaf per 4096 blocks."""
        files = self.files.values()
        extents = sum(len(ino.extents) for ino in files)
        blocks = sum(ino.blocks for ino in files)
        n = len(self.files)
        entry = BTRFS_ENTRY_BYTES + NAME_BYTES
        fs_bytes = n * (BTRFS_INODE_BYTES + NAME_BYTES) + n * entry / RANDOM_FILL + n * entry
        return {"fs": math.ceil(fs_bytes / (self.p.node_bytes - BTRFS_LEAF_HEADER_BYTES)),
                "ext": -(-extents // 100), "csum": -(-blocks // 4096)}

    def btrfs_dir_item_leaf(self, d: int, slot: int):
        """The fs-tree leaf holding the directory item of entry ``slot`` of ``d``: one of the leaves
        the directory's entries fill (RANDOM_FILL full), picked by a hash of the entry."""
        leaves = max(1, math.ceil(self.entries.get(d, 0) / (self.btrfs_per_leaf()[1] * RANDOM_FILL)))
        return ("fs", ("hash", d, (slot + 1) * 2654435761 % (1 << 32) % leaves))

    def btrfs_read_leaf(self, t, key):
        """Read a btrfs leaf not cached: 16 KiB in the metadata area, placed by a hash of its key."""
        blk = self.alloc.total_blocks // 2 + zlib.crc32(repr(key).encode()) % 1000 * (self.p.node_bytes // self.bs)
        self.read_meta_block(t, key, blk, self.p.node_bytes // self.bs)


#: mkfs.btrfs's first data chunk (``Data, single: 8.00MiB``: btrfs-progs mkfs/main.c).
BTRFS_FIRST_DATA_CHUNK_BYTES = 8 << 20
#: btrfs's data chunks: stripes of at most 1 GiB, at most a tenth of the device
#: (fs/btrfs/volumes.c, init_alloc_chunk_ctl_policy_regular).
BTRFS_DATA_STRIPE_BYTES = 1 << 30
BTRFS_INLINE_MAX_BYTES = 2048  # max_inline's default: a file this small is kept in its leaf


def btrfs_data_chunks(workload, block_bytes: int, device_bytes: int) -> list[float]:
    """When btrfs allocates a data chunk during ``workload`` (the file operations before the page
    cache): a ``write()`` reserves the data space of its pages (btrfs_check_data_free_space) and,
    when the data chunks cannot hold the reserved and used space, a new chunk is allocated at once
    (btrfs_async_reclaim_data_space -> ALLOC_CHUNK_FORCE) rather than written back. Counted: the
    files of more than ``BTRFS_INLINE_MAX_BYTES`` (smaller ones go inline, in their leaf), in whole
    blocks, as long as they live; the chunks the files on the device at the start needed exist."""
    chunk = min(BTRFS_DATA_STRIPE_BYTES, device_bytes // 10)
    sizes = {f: int(n) for f, n in enumerate(workload.initial_bytes.tolist()) if n}

    def held(n: int) -> int:
        return -(-n // block_bytes) * block_bytes if n > BTRFS_INLINE_MAX_BYTES else 0

    total = sum(held(n) for n in sizes.values())
    capacity = BTRFS_FIRST_DATA_CHUNK_BYTES
    while capacity < total:
        capacity += chunk
    times = []
    for t, kind, f, off, size in zip(workload.time_s.tolist(), workload.kind.tolist(), workload.file.tolist(),
                                     workload.offset_bytes.tolist(), workload.size_bytes.tolist()):
        if kind == 1:  # Kind.WRITE
            old = sizes.get(f, 0)
            new = max(old, off + size)
            if new != old:
                sizes[f] = new
                total += held(new) - held(old)
                while total > capacity:
                    capacity += chunk
                    times.append(t)
        elif kind in (0, 3):  # Kind.CREATE, Kind.DELETE: a new file (or one made again) starts empty
            total -= held(sizes.pop(f, 0))
    return times
