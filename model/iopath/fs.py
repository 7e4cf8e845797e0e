"""A file system: the page cache's file-level reads and write-backs, and the metadata operations,
as requests on the file system's device.

Data: a file's blocks are allocated when its pages are first written back (delayed allocation:
ext4, xfs and btrfs allocate at write-back; ext2/ext3 allocate at ``write()``, also for a file
deleted before its pages are written back, see :func:`~.fs_mballoc.allocating_writes`), from the group of the file's directory
(:mod:`.fs_layout`). A read or write of a
file range becomes one request per run of contiguous device blocks, whole blocks of
``block_bytes``. btrfs copies on write: every write-back goes to newly allocated blocks, and a
file of at most 2048 bytes written whole is stored inline in its tree leaf (``max_inline``'s
default), with no data block. ``data=journal`` (ext3/ext4) sends data blocks through the journal
and writes them in place at the checkpoint: data is written twice.

Metadata blocks each operation changes (fs/ext4/ialloc.c, namei.c, balloc.c, extents.c;
fs/xfs/libxfs; fs/btrfs/inode.c):

- ext2/3/4: create: the inode's table block, the group's inode bitmap, the directory block of the
  new entry (a new directory block every ``block_bytes // 16`` entries, taking a data block; the root
  directory, number 0, starts in the block mke2fs gave it; a directory outgrowing its first block
  becomes a hashed tree, dir_index: two new blocks at once), the
  group descriptor block; allocation: the block bitmap, the descriptor, the inode (ext4: extents in
  the inode; ext2/ext3: one indirect block per ``block_bytes // 4`` blocks past the first 12);
  delete: the inode, both bitmaps, the directory block, the descriptor, the superblock (ext3/ext4:
  the orphan list's head); the file's indirect blocks are forgotten, not written (jbd2 logs a
  revoke record for each).
- xfs: create: the inode (logged whole), the directory block, the AGI and the inode btree block;
  allocation: the inode, the AGF and the two free-space btree blocks; delete: all of these.
- btrfs: the fs-tree leaves (:meth:`_Fs.btrfs_per_leaf`) of the inode's items, of the entry's
  directory item (the leaf its name's hash falls in) and of its directory index item; the extent
  tree leaf of each new extent (100 per leaf) and the checksum tree leaf of its blocks (4 bytes per
  block).

Reads of metadata: an inode not cached (a ``STAT`` from the cache) reads its inode-table block; ext
reads ``inode_readahead_blocks`` table blocks at once (aligned), xfs its inode cluster (8 KiB
scaled by the inode size: 16 KiB of 512-byte inodes),
btrfs the leaves of the name's directory item and of the inode; a directory's blocks are read at
the first lookup in it (a stat, a create's check that the name is new).

A clone (cp's FICLONE, granted by xfs and btrfs) shares the source's blocks: only extent references
change. fsync and sync commit (:mod:`.fs_journal`); ext2's fsync writes the inode's block and flushes.
"""

from __future__ import annotations

from bisect import bisect_right, insort
import heapq
from dataclasses import dataclass

import numpy as np

from .fileops import FileOps, Kind
from .fs_blockmap import BlockMap
from .fs_extent_ops import ExtentOps
from .fs_journal import Journal
from .fs_layout import Allocator, FsParams
from .fs_logged import LOGGED_KINDS, logged_file_system
from .fs_mballoc import MballocAllocator, allocating_writes
from .fs_meta import MetadataReads, btrfs_data_chunks
from .stream import Flag, Op, Stream

__all__ = ["FsResult", "file_system"]

INLINE_MAX_BYTES = 2048  # btrfs max_inline's default
# Write-back builds bios of at most BIO_MAX_VECS (256) pages, which the queue does not merge past
# max_sectors_kb; read-ahead's bios carry large folios and reach the queue's limit. A bio of
# folios made by small writes is held to MAX_SEGMENTS folios (the queue's max_segments, 128 on
# loop and SCSI disks): 512 KiB of 4 KiB folios.
BIO_MAX_BYTES = 256 * 4096
MAX_SEGMENTS = 128
# A directory entry of a name of up to 8 bytes: ext's 8 bytes of header and the name, rounded to 4
# (ext4_dir_entry_2); xfs's inode number, name length, name, file type and tag, rounded to 8
# (xfs_dir2_data_entsize).
DIRENT_BYTES = {"xfs": 24}
EXT_DIRENT_BYTES = 16


def data_bios(rows: list, t, op, off, size, flags, chunk: int) -> float:
    """Append a data run to ``rows`` as the bios write-back builds (see BIO_MAX_BYTES), for folios
    of about the size of the ``chunk``-byte write calls that dirtied them; the last issue time."""
    folio = 1 << max(12, min(int(chunk), 1 << 21).bit_length() - 1)
    most = min(BIO_MAX_BYTES, MAX_SEGMENTS * folio)
    latest = t
    for k, o in enumerate(range(off, off + size, most)):
        n = min(most, off + size - o)
        # A full bio takes no more merges (its segments or the request size are used up): it is
        # issued a nanosecond apart, so the queue's merge of one instant leaves it alone.
        rows.append((t + (k + 1) * 1e-9 if n == most else t, int(op), o, n, flags))
        latest = max(latest, rows[-1][0])
    return latest


def _first(extent) -> int:
    """An extent's first file block (the sort key of ``_Inode.extents``)."""
    return extent[0]


def _resort(extents: list, sorted_upto: int) -> None:
    """Sort ``extents`` (disjoint, so by first file block) whose first ``sorted_upto`` are sorted:
    the others put in place one by one."""
    new = sorted(extents[sorted_upto:])
    if not new:
        return
    del extents[sorted_upto:]
    if not extents or new[0][0] > extents[-1][0]:
        extents.extend(new)
        return
    for extent in new:
        insort(extents, extent, key=_first)


@dataclass(frozen=True)
class FsResult:
    """``stream``: the requests on the file system's device, in issue order (``parent`` -1)."""

    stream: Stream
    data_write_bytes: int
    metadata_write_bytes: int
    #: instants of the journal commits a full transaction or a full file system forced (ext3/ext4)
    forced_commits_s: tuple = ()


class _Inode:
    __slots__ = ("group", "index", "extents", "blocks", "dir", "inline", "indirect", "slot", "buffers", "new",
                 "chains_on_device", "size_blocks", "prealloc")

    def __init__(self, group: int, index: int, d: int):
        self.group, self.index, self.dir = group, index, d
        self.slot = 0
        self.extents: list[list[int]] = []  # [file_block, count, device_block], by file_block
        self.blocks = 0
        self.inline = False
        self.indirect: dict[int, int] = {}  # block-mapped: indirect block index (fs_blockmap.DOUBLE) -> block
        self.buffers: dict[int, None] = {}  # metadata blocks dirtied with the inode named (fs_blockmap)
        self.new = False  # created by the workload and not fsynced since (ext4's EXT4_STATE_NEWENTRY)
        self.chains_on_device: set = set()  # indirect blocks written before the workload (fs_blockmap)
        self.size_blocks = 0  # a file on the device before the workload: its size (i_size) [blocks]
        self.prealloc: list[tuple[int, int]] = []  # btrfs: file block ranges fallocated and not written since


class _Fs(MetadataReads, BlockMap, ExtentOps):
    def __init__(self, p: FsParams, dirty_expire_s: float):
        self.p, self.bs = p, p.block_bytes
        self.alloc = MballocAllocator(p) if p.kind in ("ext2", "ext3") else Allocator(p)
        self.rows: list[tuple] = []
        self.latest = 0.0  # the latest issue time of a request emitted so far
        self.j = Journal(p, self.alloc, self.emit, dirty_expire_s)
        if p.kind == "btrfs":
            self.j.live_leaves = self.btrfs_live_leaves
        self.files: dict[int, _Inode] = {}
        self.next_ino = [0] * p.groups
        self.free_ino: list[list[int]] = [[] for _ in range(p.groups)]
        self.dirs: dict[int, list[int]] = {}  # directory -> its blocks
        self.entries: dict[int, int] = {}  # directory -> slots ever used
        self.free_slots: dict[int, list[int]] = {}
        self.read_meta: set = set()
        self.live_in_block: dict[int, int] = {}  # ext: inode-table block -> its files' inodes in use
        self.dirs_on_device: set = set()
        self.xfs_chunks_on_device: set = set()
        self.prefetched = False  # ext: mballoc's read-ahead of block bitmaps done (alloc_bitmap)
        self.chain_read_at = None  # ext2: the instant of the last block-map read (fs_blockmap)

    def emit(self, t, op, off, size, flags=0):
        self.rows.append((t, int(op), off, size, flags))
        self.latest = max(self.latest, t)

    def emit_data(self, t, op, off, size, flags, chunk: int):
        self.latest = max(self.latest, data_bios(self.rows, t, op, off, size, flags, chunk))

    # -- placement --------------------------------------------------------------------------------
    def new_inode(self, f: int, d: int) -> _Inode:
        g = self.alloc.group_of_dir(d)
        free = self.free_ino[g]
        if free and self.p.kind != "btrfs":  # ext and xfs take the lowest free inode; btrfs never reuses one
            index = heapq.heappop(free)
        else:
            index = self.next_ino[g]
            self.next_ino[g] += 1
        ino = _Inode(g, index, d)
        self.files[f] = ino
        if self.p.kind in ("ext2", "ext3", "ext4"):
            blk = self.p.inode_block(g, index)
            self.live_in_block[blk] = self.live_in_block.get(blk, 0) + 1
        return ino

    def free_inode(self, ino: _Inode):
        if self.p.kind in ("ext2", "ext3", "ext4"):
            self.live_in_block[self.p.inode_block(ino.group, ino.index)] -= 1
        heapq.heappush(self.free_ino[ino.group], ino.index)
        heapq.heappush(self.free_slots.setdefault(ino.dir, []), ino.slot)

    def inode_block(self, ino: _Inode):
        """The inode's journal item: its table block (ext), the inode itself (xfs logs inodes, not
        their buffers), its fs-tree leaf (btrfs)."""
        if self.p.kind == "btrfs":
            return ("fs", ("inode", ino.group, ino.index // self.btrfs_per_leaf()[0]))
        blk = self.p.inode_block(ino.group, ino.index)
        return ("xino", blk, ino.index) if self.p.kind == "xfs" else blk

    def meta(self, t, blk: int):
        """Dirty a metadata block that is on the device already (a bitmap, a descriptor, an AG
        header or btree block), reading it first when it is not cached (ext4_read_block_bitmap,
        xfs_read_agf...)."""
        if blk not in self.read_meta:
            self.read_meta.add(blk)
            self.emit(t, Op.READ, blk * self.bs, self.bs, int(Flag.META))
        self.j.dirty(t, blk)

    def dir_blocks(self, d: int) -> list[int]:
        """The blocks of directory ``d``: directory 0 is the root, whose first block mke2fs wrote
        (ext: the first data block of group 0); other directories start empty."""
        blocks = self.dirs.get(d)
        if blocks is None:
            blocks = self.dirs[d] = [self.p.data_start(0)] if d == 0 and self.p.kind in ("ext2", "ext3", "ext4") else []
        return blocks

    def dir_block(self, t, d: int, slot: int):
        """The directory block holding entry ``slot`` of ``d``, allocating the block when new."""
        if self.p.kind == "btrfs":  # the directory index item's leaf
            return ("fs", ("index", d, slot // self.btrfs_per_leaf()[1]))
        blocks = self.dir_blocks(d)
        per = self.bs // DIRENT_BYTES.get(self.p.kind, EXT_DIRENT_BYTES)
        k = slot // per
        if self.p.kind != "xfs" and (k or len(blocks) > 1):
            # mke2fs's dir_index: a directory outgrowing its first block becomes a hashed tree
            # whose first block is the index root, the entries moved to two new leaf blocks at once
            # (fs/ext4/namei.c, make_indexed_dir: ext4_append, then do_split's ext4_append).
            k += 1
        while len(blocks) <= k:
            (blk, _), = self.alloc.data(self.alloc.group_of_dir(d), 1, None)
            blocks.append(blk)
            if t is not None:  # a new block is written whole (ext4_append)
                self.alloc_bitmap(t, blk)
                self.j.dirty(t, blk)
        return blocks[k]

    def dirent_chunk(self, slot: int) -> int:
        """The 128-byte chunk of its directory block that entry ``slot`` is in (what xfs logs)."""
        size = DIRENT_BYTES.get(self.p.kind, EXT_DIRENT_BYTES)
        return slot % (self.bs // size) * size // 128

    def new_slot(self, d: int) -> int:
        """The entry's place: the first freed one (ext reuses a deleted entry's space; btrfs's
        directory index only grows)."""
        free = self.free_slots.get(d)
        if free and self.p.kind != "btrfs":
            return heapq.heappop(free)
        n = self.entries.get(d, 0)
        self.entries[d] = n + 1
        return n

    def bitmap(self, blk: int) -> int:
        """The block bitmap of ``blk``'s group (ext), the AGF (xfs: in the AG's first block, with
        the superblock copy, the AGI and the AGFL, one sector each: fs/xfs/libxfs/xfs_format.h)."""
        g = blk // self.alloc.group_blocks
        if self.p.kind == "xfs":
            return g * self.alloc.group_blocks
        return self.p.block_bitmap(g)

    def inode_bitmap(self, g: int) -> int:
        """The inode bitmap (ext), the free inode btree's root (xfs: XFS_FIBT_BLOCK, block 4, read
        before the inode btree's, block 3, as xfs_dialloc looks for a free inode)."""
        if self.p.kind == "xfs":
            return g * self.alloc.group_blocks + 4
        return self.p.inode_bitmap(g)

    def descriptor(self, g: int) -> int:
        if self.p.kind == "xfs":
            return g * self.alloc.group_blocks + 3  # the inode btree's root (the AGI is in block 0)
        return 1 + g * self.p.ext_desc_bytes // self.bs

    def map(self, ino: _Inode, fb0: int, fb1: int):
        """Device runs ``(device_block, count)`` of file blocks [fb0, fb1) that are allocated."""
        runs = []
        ext = ino.extents
        # extents are sorted by file block and disjoint: start at the last one beginning at or before fb0
        for k in range(max(bisect_right(ext, fb0, key=_first) - 1, 0), len(ext)):
            fb, n, db = ext[k]
            if fb >= fb1:
                break
            a, b = max(fb, fb0), min(fb + n, fb1)
            if a < b:
                if runs and runs[-1][0] + runs[-1][1] == db + a - fb:
                    runs[-1][1] += b - a
                else:
                    runs.append([db + a - fb, b - a])
        return runs

    def allocate(self, t, ino: _Inode, fb0: int, fb1: int):
        """Allocate the unallocated file blocks of [fb0, fb1), dirtying the allocation's metadata."""
        gaps = []
        cur = fb0
        ext = ino.extents
        for k in range(max(bisect_right(ext, fb0, key=_first) - 1, 0), len(ext)):  # sorted by file block
            fb, n, _ = ext[k]
            if fb + n <= cur:
                continue
            if fb >= fb1:
                break
            if fb > cur:
                gaps.append((cur, fb))
            cur = fb + n
            if cur >= fb1:
                break
        if cur < fb1:
            gaps.append((cur, fb1))
        if not gaps:
            return
        sorted_upto = len(ino.extents)
        for s, e in self.chain_pieces(t, ino, gaps):
            last = ino.extents[-1] if ino.extents else None
            after = last[2] + last[1] if last and last[0] + last[1] == s else None
            kind = self.p.kind
            runs = (self.alloc.block_mapped(ino.group, s, e - s, after, ino.size_blocks, owner=ino)
                    if kind in ("ext2", "ext3")
                    else self.alloc.extent_file(ino.group, e - s) if kind == "ext4" and not ino.extents
                    else self.alloc.data(ino.group, e - s, after))
            for db, n in runs:
                if last is not None and last[0] + last[1] == s and last[2] + last[1] == db:
                    last[1] += n
                else:
                    last = [s, n, db]
                    ino.extents.append(last)
                self._alloc_meta(t, ino, db, n, s)
                s += n
        _resort(ino.extents, sorted_upto)
        ino.blocks += sum(e - s for s, e in gaps)

    def _alloc_meta(self, t, ino: _Inode, db: int, n: int, fb: int):
        kind = self.p.kind
        if kind == "btrfs":
            self.j.dirty(t, ("ext", db // 100))
            for c in range(db // (self.bs // 4 * 4), (db + n - 1) // (self.bs // 4 * 4) + 1):
                self.j.dirty(t, ("csum", c))
            return
        g = db // self.alloc.group_blocks
        if kind == "xfs":
            self.xfs_free_space(t, g)
            self.dirty_inode(t, ino)
            return
        self.alloc_bitmap(t, db)
        self.meta(t, self.descriptor(g))
        self.dirty_inode(t, ino)
        if kind in ("ext2", "ext3"):  # the block map of file blocks [fb, fb + n) (fs_blockmap)
            for k in self.chains(fb, fb + n):
                self.place_chain(t, ino, k, dirty=True)

    # -- operations -------------------------------------------------------------------------------
    def create(self, t, f: int, d: int):
        kind = self.p.kind
        if kind in ("ext2", "ext3", "ext4"):  # (an xfs directory of few entries is in its inode)
            self.lookup(t, d)
        ino = self.new_inode(f, d)
        ino.new = True
        ino.slot = self.new_slot(d)
        if kind in ("ext2", "ext3", "ext4"):  # after ext4_new_inode read the inode bitmap: apart from it
            self.new_inode_block(t + 2e-9, ino)
        if kind == "xfs" and ino.index % 64 == 0 and (ino.group, ino.index // 64) not in self.xfs_chunks_on_device:
            self.xfs_free_space(t, ino.group)  # a new inode chunk's blocks (xfs_ialloc_ag_alloc)
        self.dirty_inode(t, ino)
        self.j.dirty(t, self.dir_block(t, d, ino.slot), region=self.dirent_chunk(ino.slot))
        if kind == "btrfs":
            self.j.dirty(t, self.btrfs_dir_item_leaf(d, ino.slot))
            return
        self.meta(t, self.inode_bitmap(ino.group))
        self.meta(t + 1e-9, self.descriptor(ino.group))

    def delete(self, t, f: int):
        ino = self.files.pop(f)
        self.free_inode(ino)
        self.dirty_inode(t, ino)
        self.j.dirty(t, self.dir_block(t, ino.dir, ino.slot), region=self.dirent_chunk(ino.slot))
        if self.p.kind == "btrfs":
            # The unlink finds the directory index item too (btrfs_del_dir_entries_in_log aside,
            # __btrfs_unlink_inode -> btrfs_delete_one_dir_name of both items).
            self.j.dirty(t, self.btrfs_dir_item_leaf(ino.dir, ino.slot))
            if self.inode_block(ino) in self.read_meta:  # read from the device, not made by the workload
                self.btrfs_read_leaf(t, self.dir_block(t, ino.dir, ino.slot))
            for _, n, db in ino.extents:
                self.j.dirty(t, ("ext", db // 100))
            return
        if self.p.journaled:
            # The unlink puts the inode on the orphan list, whose head is in the superblock
            # (fs/ext4/orphan.c, ext4_orphan_add: s_last_orphan, journaled with the superblock's
            # buffer; without a journal there is no orphan list).
            self.j.dirty(t, 0)
        self.meta(t, self.inode_bitmap(ino.group))
        self.meta(t, self.descriptor(ino.group))
        for blk in ino.indirect.values():  # freed with the file: forgotten, not written
            self.j.forget(t, blk)
            self.meta(t, self.bitmap(blk))
        if self.p.kind in ("ext2", "ext3"):  # the blocks return to free space (fs_mballoc)
            self.alloc.close(ino)
            self.alloc.release([(db, n) for _, n, db in ino.extents] + [(b, 1) for b in ino.indirect.values()],
                               journaled=self.p.journaled)
        for _, n, db in ino.extents:
            if self.p.kind == "xfs":
                self.xfs_free_space(t, db // self.alloc.group_blocks)
            else:
                self.meta(t, self.bitmap(db))

    def stat(self, t, f: int):
        if self.inodes_held:  # an open file (a loop device's image): its inode and name need no lookup
            return
        ino = self.files[f]
        kind = self.p.kind
        if kind == "btrfs":
            # The name's directory item (the leaf its hash falls in), then the inode's leaf.
            self.btrfs_read_leaf(t, self.btrfs_dir_item_leaf(ino.dir, ino.slot))
            self.btrfs_read_leaf(t + 1e-9, self.inode_block(ino))
            return
        self.lookup(t, ino.dir)
        if kind == "xfs":
            self.xfs_cluster_read(t, ino)
        else:
            self.ext_inode_read(t, ino)

    def data(self, t, op: int, f: int, off: int, size: int, sync: bool, chunk: int = BIO_MAX_BYTES):
        ino = self.files[f]
        fb0, fb1 = off // self.bs, -(-(off + size) // self.bs)
        flags = int(Flag.SYNC) if sync else 0
        t = self.read_chains(t, ino, fb0, fb1, op == Op.READ)
        if op == Op.READ:
            for db, n in self.map(ino, fb0, fb1):
                self.emit(t, Op.READ, db * self.bs, n * self.bs, flags)
            self.atime_update(t, ino)
            return
        kind = self.p.kind
        if kind == "btrfs" and self.in_prealloc(ino, fb0, fb1):
            # a first write into a prealloc extent goes in place (run_delalloc_nocow): the file extent
            # item changes from prealloc to regular
            self.j.dirty(t, self.inode_block(ino))
            for db, n in self.map(ino, fb0, fb1):
                self.emit_data(t, Op.WRITE, db * self.bs, n * self.bs, flags, chunk)
            return
        if kind == "btrfs":
            if off == 0 and size <= INLINE_MAX_BYTES and not ino.extents:
                ino.inline = True
                self.j.dirty(t, self.inode_block(ino))
                return
            for ext in ino.extents:  # copy on write: the old blocks are freed, new ones written
                self.j.dirty(t, ("ext", ext[2] // 100))
            keep = [e for e in ino.extents if e[0] + e[1] <= fb0 or e[0] >= fb1]
            cut = [e for e in ino.extents if not (e[0] + e[1] <= fb0 or e[0] >= fb1)]
            for fb, n, db in cut:  # the parts outside [fb0, fb1) stay where they are
                if fb < fb0:
                    keep.append([fb, fb0 - fb, db])
                if fb + n > fb1:
                    keep.append([fb1, fb + n - fb1, db + fb1 - fb])
            ino.extents = sorted(keep)
            self.j.dirty(t, self.inode_block(ino))
        self.allocate(t, ino, fb0, fb1)
        if kind != "btrfs":
            self.dirty_inode(t, ino)
        if self.p.journal_mode == "journal" and self.p.journaled:
            for db, n in self.map(ino, fb0, fb1):
                for b in range(db, db + n):
                    self.j.dirty(t, b, "data")
            return
        for db, n in self.map(ino, fb0, fb1):
            self.emit_data(t, Op.WRITE, db * self.bs, n * self.bs, flags, chunk)

    def fsync(self, t, f: int):
        # The commit (ext3/4 ordered: jbd2 waits for the file's data; ext2: the inode, then the
        # flush) goes out after the data bios issued for it, which emit_data may have placed a few
        # nanoseconds after t: a flush below (a loop image's fsync) must find that data written.
        t = max(t, self.latest)
        if self.p.kind == "ext2":
            ino = self.files.get(f)
            if ino is not None:
                self.fsync_nojournal(t, ino)
            if self.p.barrier:
                self.emit(t, Op.FLUSH, 0, 0, int(Flag.PREFLUSH | Flag.SYNC))
            return
        self.j.commit(t, flush_if_empty=True)

    def sync(self, t):
        t = max(t, self.latest)  # after the data, as fsync's commit
        self.j.commit(t)
        if self.p.kind != "xfs":
            self.j.write_inplace(t)
        if self.p.kind == "ext2" and self.p.barrier:  # ext4_sync_fs without a journal: a flush
            self.emit(t, Op.FLUSH, 0, 0, int(Flag.PREFLUSH | Flag.SYNC))


def file_system(ops: FileOps, p: FsParams, *, sync: np.ndarray | None = None, dirty_expire_s: float = 30.0,
                sparse: bool = False, allocated=(), workload: FileOps | None = None,
                caches_dropped: bool = False, flusher: np.ndarray | None = None,
                inodes_held: bool = False) -> FsResult:
    """The device requests for ``ops`` (a :class:`~.pagecache.CacheResult`'s ops) on ``p``. Files on
    the device before the workload (``ops.initial_bytes``) are allocated, or holes when ``sparse``
    (a sparse loop image: its blocks are allocated by their first write) except the ranges
    ``allocated`` names, ``(file, offset_bytes, size_bytes)``: written before the workload.
    ``workload``: the operations before the page cache, whose ``write()`` calls reserve btrfs's
    data space (:func:`~.fs_meta.btrfs_data_chunks`; None: not followed). ``caches_dropped``: the
    workload starts after ``sync`` and ``drop_caches``, not on a fresh mount (:meth:`~.fs_meta.MetadataReads.mounted`).
    ``inodes_held``: the files are held open (a loop device's image) across a ``drop_caches``
    (:meth:`~.fs_meta.MetadataReads.hold_inodes`)."""
    if p.kind in LOGGED_KINDS:  # jfs and reiserfs (fs_logged.py)
        rows = logged_file_system(ops, p, data_bios, sync=sync, dirty_expire_s=dirty_expire_s, sparse=sparse,
                                  workload=workload)
        return _result(rows)
    fs = _Fs(p, dirty_expire_s)
    created = set(ops.file[ops.kind == Kind.CREATE].tolist())
    for f in range(ops.initial_bytes.size):
        # Files on the device before the workload: placed, nothing written.
        if f in created and ops.initial_bytes[f] == 0:
            continue
        ino = fs.new_inode(f, int(ops.dir_of_file[f]))
        ino.slot = fs.new_slot(ino.dir)
        fs.dir_block(None, ino.dir, ino.slot)
        n = ino.size_blocks = -(-int(ops.initial_bytes[f]) // fs.bs)
        if n and not sparse:
            # placed as their writer's allocation placed them
            pieces = fs.chain_pieces(None, ino, [(0, n)]) if p.kind in ("ext2", "ext3") else [(0, n)]
            for s, e in pieces:
                runs = (fs.alloc.block_mapped(ino.group, s, e - s, None, owner=ino) if p.kind in ("ext2", "ext3")
                        else fs.alloc.extent_file(ino.group, n) if p.kind == "ext4"
                        else fs.alloc.data(ino.group, n, None))
                for db, k in runs:
                    ino.extents.append([ino.blocks, k, db])
                    ino.blocks += k
    cold = set(fs.read_meta)
    for f, off, size in sorted(allocated, key=lambda r: r[1]):
        if f in fs.files:
            fs.allocate(0.0, fs.files[f], off // fs.bs, -(-(off + size) // fs.bs))
    if allocated:  # allocated before the workload: its metadata is on the device already
        fs.rows.clear()
        fs.j.tx.clear()
        fs.j.inplace.clear()
        fs.j.start = fs.j.inplace_since = None
        if p.kind == "ext2":  # and not cached after the cache drop (fs_blockmap: a journal holds them)
            # the buffers only: mballoc's read-ahead that the allocation before did stays done, as the
            # cache drop leaves the groups' "read once" marks (fs_meta.MetadataReads.mounted)
            fs.read_meta = cold
    for ino in fs.files.values():
        ino.chains_on_device = set(ino.indirect)
        ino.buffers.clear()
    fs.mounted(caches_dropped)
    if inodes_held:
        fs.hold_inodes()
    sync = np.zeros(len(ops), bool) if sync is None else sync
    # A new data chunk changes the chunk tree (its item), the device tree (its device extent), the
    # extent tree (its block group item) and the free-space tree (btrfs_make_block_group and
    # btrfs_create_pending_block_groups, in the transaction that allocates it).
    chunks = btrfs_data_chunks(workload, fs.bs, p.device_bytes) if p.kind == "btrfs" and workload is not None else []
    chunks.reverse()
    writes = allocating_writes(workload) if p.kind in ("ext2", "ext3") and workload is not None else []
    flusher = np.zeros(len(ops), bool) if flusher is None or p.kind not in ("ext2", "ext3", "ext4") else flusher
    flushed_at = None
    cols = (ops.time_s.tolist(), ops.kind.tolist(), ops.file.tolist(), ops.offset_bytes.tolist(),
            ops.size_bytes.tolist(), sync.tolist(), ops.chunk_bytes.tolist(), flusher.tolist())
    for t, kind, f, off, size, s, chunk, flush in zip(*cols):
        while chunks and chunks[-1] <= t:
            k, when = len(chunks), chunks.pop()
            for tree in ("chunk", "dev", "bg", "bgfree"):
                fs.j.dirty(when, (tree, k))
        while writes and writes[-1][0] < t:
            wt, wf, woff, wsize = writes.pop()
            if wf in fs.files:  # write() allocates (see allocating_writes)
                fs.j.due(wt)
                fs.allocate(wt, fs.files[wf], woff // fs.bs, -(-(woff + wsize) // fs.bs))
        fs.j.due(t)
        if flush and int(t * 1e6) != flushed_at:  # the block device's dirty buffers go too
            flushed_at = int(t * 1e6)
            fs.j.write_inplace(t)
        if kind == Kind.READ:
            fs.data(t, Op.READ, f, off, size, s)
        elif kind == Kind.WRITE:
            fs.data(t, Op.WRITE, f, off, size, s, chunk)
        elif kind == Kind.CREATE:
            if f in fs.files:
                fs.free_inode(fs.files.pop(f))
            fs.create(t, f, int(ops.dir_of_file[f]))
        elif kind == Kind.DELETE:
            fs.delete(t, f)
        elif kind == Kind.STAT:
            fs.stat(t, f)
        elif kind == Kind.FSYNC:
            fs.fsync(t, f)
        elif kind in (Kind.SYNC, Kind.SYNC_ALL):
            fs.sync(t)
        elif kind == Kind.CLONE:
            fs.clone(t, f, off)
        elif kind == Kind.FALLOCATE:
            fs.fallocate(t, f, off, size)
    return _result(fs.rows, tuple(fs.j.forced_s))


def _result(rows: list, forced_commits_s: tuple = ()) -> FsResult:
    cols = list(zip(*rows)) if rows else [[]] * 5
    t, op, off, size, flags = (np.asarray(c) for c in cols)
    stream = Stream.from_arrays(time_s=np.asarray(t, float), op=np.asarray(op, np.int8), offset_bytes=np.asarray(off, np.int64),
                                size_bytes=np.asarray(size, np.int64), flags=np.asarray(flags, np.int16))
    meta = (stream.flags & Flag.META) != 0
    w = stream.op == Op.WRITE
    return FsResult(stream, int(stream.size_bytes[w & ~meta].sum()), int(stream.size_bytes[w & meta].sum()),
                    forced_commits_s)
