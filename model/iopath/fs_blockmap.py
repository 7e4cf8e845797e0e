"""The block map of a block-mapped ext2/ext3 file, as the ext4 driver reads and writes it: the part of
:mod:`.fs`'s file system that a loop image on ext2/ext3 repeats at every layer.

A block-mapped file (fs/ext4/indirect.c) addresses its first 12 blocks from the inode, the next
``block_bytes // 4`` through an indirect block, the next ``(block_bytes // 4) ** 2`` through a
double-indirect block and the indirect blocks it points to.

- **Reads** (ext4_ind_map_blocks -> ext4_get_branch): mapping a file block reads each block of its
  chain that is not cached, top down and one after the other (each names the next). On ext2 the
  chains of a file on the device before the workload are not cached (the harness syncs and drops
  the caches before each step; the buffers are clean); those the workload allocated are. ext3
  journals the chains: jbd2 keeps a journaled buffer until its transaction is checkpointed
  (jbd2_journal_try_to_free_buffers), so a recently written file's chains stay cached.
- **A file held open** across the drop (a loop device's image) reads no chain to read its blocks:
  ext4_map_blocks answers from the inode's extent status tree (fs/ext4/extents_status.c, filled by
  every mapping, indirect ones too) before it walks the chain, and the tree lives with the inode.
  A write into a hole still reads the chain it adds its pointer to (ext4_ind_map_blocks with
  EXT4_GET_BLOCKS_CREATE). Seen with the host's blk tracer: ext2 in a sparse image on ext2, the
  file above read after ``sync`` and ``drop_caches``; the image's device reads only the blocks the
  file's own reads map to, and /proc/fs/ext4/DEV/es_shrinker_info still lists the image's extents
  after the drop (Linux 6.18). blktrace under nested loop images shows the same at every layer.
- **Placement**: allocating file block 12 + k * (block_bytes // 4) allocates the indirect block
  (and, for k >= 1, the double-indirect block first) with it (ext4_alloc_branch); a file on the
  device before the workload had its chains placed when it was written.
- **fsync without a journal** (fs/ext4/fsync.c, ext4_fsync_nojournal): the buffers the file's
  allocations dirtied with the inode named (__ext4_handle_dirty_metadata ->
  mark_buffer_dirty_inode: the indirect blocks ext4_alloc_branch and ext4_splice_branch change)
  are written (sync_mapping_buffers), then the inode (sync_inode_metadata), then, for a file
  created since, its directory's buffers and inode (ext4_sync_parent); then the flush. The
  bitmaps and group descriptors are dirtied with no inode named and wait for write-back.
"""

from __future__ import annotations

from .fs_journal import META
from .stream import Flag, Op

__all__ = ["BlockMap", "DIRECT_BLOCKS", "DOUBLE"]

DIRECT_BLOCKS = 12  # EXT4_NDIR_BLOCKS
DOUBLE = -1  # the key of a file's double-indirect block in ``_Inode.indirect``


class BlockMap:
    """Methods of the file system (:class:`~.fs._Fs`: ``p``, ``bs``, ``alloc``, ``j``, ``files``,
    ``read_meta``, ``emit``) for a block-mapped file's chain of indirect blocks."""

    def chains(self, fb0: int, fb1: int) -> range:
        """The indirect blocks (by index k: file blocks 12 + k * per ..) that map [fb0, fb1)."""
        per = self.bs // 4
        if fb1 <= DIRECT_BLOCKS:
            return range(0)
        return range(max(fb0 - DIRECT_BLOCKS, 0) // per, (fb1 - 1 - DIRECT_BLOCKS) // per + 1)

    def place_chain(self, t, ino, k: int, dirty: bool):
        """Allocate indirect block ``k`` of ``ino`` (and the double-indirect block before the first
        ``k >= 1``) when it has none; ``dirty``: the allocation (or the pointer it adds) is written
        by the file's fsync and by write-back."""
        for key in ((DOUBLE, k) if k >= 1 else (k,)):
            blk = ino.indirect.get(key)
            if blk is None:
                blk = ino.indirect[key] = self.alloc.meta_block(self._chain_goal(ino, key))
            if dirty:
                self.j.dirty(t, blk)
                ino.buffers[blk] = None

    def chain_pieces(self, t, ino, gaps):
        """``gaps`` split where a block-mapped file's block needs a new indirect block, which is
        placed before it (ext4_alloc_branch: the indirect blocks, then the data; fs_blockmap)."""
        if self.p.kind not in ("ext2", "ext3"):
            yield from gaps
            return
        per = self.bs // 4
        for s, e in gaps:
            while s < e:
                k = (s - DIRECT_BLOCKS) // per if s >= DIRECT_BLOCKS else -1
                if k >= 0 and k not in ino.indirect:
                    self.place_chain(t, ino, k, dirty=False)
                cut = DIRECT_BLOCKS + (k + 1) * per
                yield s, min(e, cut)
                s = min(e, cut)

    def _chain_goal(self, ino, key: int) -> int:
        """Where a new block of the chain is sought (ext4_find_goal -> ext4_find_near): the block
        the pointer before its own names (the file's block 11 for the first indirect block, the
        first indirect block for the double-indirect one, indirect block k - 1 for k), else the
        block holding its pointer (the double-indirect block for k = 1), else the inode's group."""
        if key == 0:
            runs = self.map(ino, DIRECT_BLOCKS - 1, DIRECT_BLOCKS)
            if runs:
                return runs[0][0]
        elif key == DOUBLE:
            if 0 in ino.indirect:
                return ino.indirect[0]
        else:
            prev = ino.indirect.get(key - 1) if key >= 2 else ino.indirect.get(DOUBLE)
            if prev is not None:
                return prev
        return ino.group * self.alloc.group_blocks

    def read_chains(self, t, ino, fb0: int, fb1: int, reading: bool = False):
        """Read the chains that map [fb0, fb1) of a file on the device before the workload, where
        not cached and, for a read (``reading``), the file was not held open (a write into a hole
        changes the chain, so it reads it; see the module docstring): at ``t``, before the data.
        Returns when the data goes: a nanosecond later when a chain was read at ``t`` (by this call
        or an earlier one at the same instant), so that the queue does not merge them (the data's
        address is known only once the chain is read)."""
        if self.p.kind != "ext2" or not ino.chains_on_device or (reading and self.inodes_held):
            return t
        t0 = t
        if self.chain_read_at == t0:
            t = t0 + 1e-9
        for k in self.chains(fb0, fb1):
            for key in ((DOUBLE, k) if k >= 1 else (k,)):
                name = ("ind", ino.group, ino.index, key)
                if key in ino.chains_on_device and name not in self.read_meta:
                    self.read_meta.add(name)
                    self.emit(t0, Op.READ, ino.indirect[key] * self.bs, self.bs, int(Flag.META))
                    self.chain_read_at, t = t0, t0 + 1e-9
        return t

    def fsync_nojournal(self, t, ino):
        """ext2's fsync of ``ino``, before its flush (see the module docstring): the file's dirty
        indirect blocks, its inode, and for a file created since its last fsync the directory block
        of its entry (when dirty) and, in the root, the root's inode (its mtime changed)."""
        blocks = [b for b in ino.buffers if b in self.j.inplace]
        ino.buffers.clear()
        blocks.append(self.p.inode_block(ino.group, ino.index))
        if ino.new:
            ino.new = False
            entry = self.dir_block(t, ino.dir, ino.slot)
            if entry in self.j.inplace:
                blocks.append(entry)
            if ino.dir == 0:  # the root's inode (EXT4_ROOT_INO, in the table's first block)
                blocks.append(self.p.inode_table(0))
        for blk in dict.fromkeys(blocks):
            self.j.inplace.pop(blk, None)
            self.emit(t, Op.WRITE, blk * self.bs, self.bs, META)
