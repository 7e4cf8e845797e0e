"""jfs (fs/jfs): its log, metapages and dtree directories, as requests on its device (see :mod:`.fs_logged`).

**jfs** (fs/jfs): a transaction writes log records to the log's current page (jfs_logmgr.c,
lmWriteRecord; a 4 KiB page holds 4080 bytes of records between its 8-byte header and trailer);
a page is written, one 4 KiB request, when it is full (lmNextPage), and the page in use is
written at fsync and sync (jfs_flush_journal; sync adds a sync point record, jfs_syncpt) and
when a dirty inode is written back (jfs_write_inode), which the write-back interval does: the
model writes it ``commit_interval_s`` (30 s) after its first record. Namespace operations commit
lazily (txCommit without COMMIT_SYNC: lmGroupCommit leaves the page for later). A record is a
36-byte descriptor (struct lrd, jfs_logmgr.h) after the lines it logs and their 4-byte vectors
(struct lvd); the lines each operation logs (jfs_txnmgr.c txLog, diLog, dtLog, xtLog, dataLog; the
records as jfs's log read back shows them, tests/golden/jfs_log_creates.json):

- create (jfs_namei.c jfs_create): the new inode's base line (one 128-byte line, diWrite), its empty
  xtree root's header (one line of two 16-byte slots, xtLog), the directory leaf's header, the new
  entry's slot and the stbl from the entry's index to its end (one line, dtInsertEntry), the
  directory table's new slot (a 16-byte line, add_index), the directory inode's base line, the
  commit record. The directory table keeps each entry's stbl index, so every entry the insert moves
  up the stbl has its table slot logged again (one 16-byte line each, dtInsertEntry -> modify_index):
  where a name lands in its leaf decides much of the log. A full leaf is split in two
  (dtSplitPage): both pages logged whole, the moved entries' table slots, the parent's router;
- delete (jfs_unlink): the leaf's header, the freed slot and the stbl from the entry's index on
  (dtDeleteEntry), the table's freed slot and those of the entries moved down (free_index,
  modify_index), the two inodes' base lines, the freed extents' LOG_UPDATEMAP (a 16-byte xad line
  each), the commit record; an emptied leaf is freed (LOG_NOREDOPAGE, dtDeleteUp);
- a file's first write-back after it grew (jfs_write_inode -> jfs_commit_inode): the inode's base
  line, the xtree root's header and new xads, the commit record.

A directory's leaves are kept as the sorted names of their entries (:class:`Dtree`); the files are
named as the workloads name them (:func:`file_name`).

The metadata pages (inode pages of 8 inodes, dtree pages, the index table's pages, the inode
map's and the block map's pages) are written in place at sync and when dirty for
``dirty_expire_s``; and every :data:`JFS_LOGSYNC_PAGES` log pages the log's sync point is moved
on (lmLog -> lmLogSync, ``LOGSYNC_DELTA``: an eighth of the log, at most 128 pages): the dirty
pages of the aggregate's own inodes (write_special_inodes: the inode map's file, whose pages
hold the inode pages and the IAGs, and the block map's) are written then, with a sync point
record; a directory's pages are its own inode's and wait for write-back. A dtree leaf holds 123 one-slot entries (128 slots less the header and the
4-slot table, dtree.h); it is split in two when full (dtSplitPage), so leaves fill from half.
New inodes come in extents of 32 (16 KiB, INOSPEREXT) allocated in the directory's group. A stat
of an inode not cached reads its 4 KiB inode page (diRead, read_metapage); a lookup reads the
directory's leaf pages. jfs sends no flushes (lbmStartIO: REQ_SYNC only).
"""

from __future__ import annotations

import bisect

from .fs_layout import FsParams
from .fs_logged_base import META, SYNC, File, Logged
from .stream import Op

__all__ = ["Jfs", "JFS_LOG"]

JFS_LRD_BYTES = 36  # struct lrd
JFS_LVD_BYTES = 4  # struct lvd
JFS_PAGE_DATA_BYTES = 4096 - 8 - 8  # a log page less its header and trailer (LOGPHDRSIZE, LOGPTLRSIZE)
JFS_DT_SLOT = 32  # a dtree slot (DTSLOTSIZE)
JFS_DT_STBL_PER_SLOT = 32  # one-byte stbl entries a slot holds
JFS_DT_ENTRIES = 128 - 1 - 4  # one-slot entries in a dtree leaf page
JFS_DT_ROOT_ENTRIES = 9 - 1  # one-slot entries in the in-inode root (DTROOTMAXSLOT less its header)
JFS_INDEX_LINE = 16  # a directory table line (lock_index: two 8-byte dir_table_slots, L2DATASLOTSIZE)
JFS_INDEX_PER_PAGE = 4096 // 8  # struct dir_table_slot
JFS_INODES_PER_PAGE = 4096 // 512
JFS_INODES_PER_EXTENT = 32
JFS_XAD = 16  # an xtree slot (XTSLOTSIZE)
JFS_LOGSYNC_MAX_PAGES = 128  # LOGSYNC_DELTA's cap (128 * LOGPSIZE)


def _record(*lines: int) -> int:
    """A log record whose lines are of ``lines`` bytes each: the lrd and a 4-byte lvd per line
    (lmWriteRecord)."""
    return JFS_LRD_BYTES + sum(JFS_LVD_BYTES + n for n in lines)


def _stbl_slots(entries: int, index: int) -> int:
    """Slots of a leaf's stbl from the one holding ``index`` to its last entry: one line
    (dtInsertEntry, dtDeleteEntry: ``lv->length = ((nextindex - 1) >> L2DTSLOTSIZE) - n + 1``)."""
    return max(1, (max(entries, 1) - 1) // JFS_DT_STBL_PER_SLOT - index // JFS_DT_STBL_PER_SLOT + 1)


def _index_record(lines: int) -> int:
    """A LOG_DATA record of the directory table: one 16-byte line per slot changed."""
    return _record(*[JFS_INDEX_LINE] * lines) if lines else 0


def _page_record(entries: int) -> int:
    """A dtree page logged whole (dtLog, tlckNEW): its header, entries and stbl as one line."""
    return _record(JFS_DT_SLOT * (1 + entries + -(-entries // JFS_DT_STBL_PER_SLOT)))


#: Log bytes per operation, the parts that do not depend on the entry's place in its leaf (see the
#: module docstring); ``extent``: per extent of the operation.
JFS_LOG = {
    # the new inode's xtree root header (one line of two slots), the directory table's new slot,
    # the two inodes' base lines, the commit record (the dtree record: :meth:`Jfs.dtree_insert`)
    "create": _record(2 * JFS_XAD) + _index_record(1) + 2 * _record(128) + JFS_LRD_BYTES,
    # the two inodes' base lines, the commit record (the dtree and directory table records:
    # :meth:`Jfs.dtree_delete`; the freed extents' LOG_UPDATEMAP: ``free_extents``)
    "delete": 2 * _record(128) + JFS_LRD_BYTES,
    "free_extents": JFS_LRD_BYTES + JFS_LVD_BYTES,
    # jfs_commit_inode: the inode's base line, the xtree root's header and new xads, the commit
    "commit_inode": _record(128) + _record(2 * JFS_XAD) + JFS_LVD_BYTES + JFS_LRD_BYTES,
    "extent": JFS_XAD,
    "syncpt": JFS_LRD_BYTES,
}


def file_name(f: int) -> str:
    """The name of file ``f`` as the workloads make them (``f0``, ``f1``, ...: the metadata
    workloads' loops); a dtree keeps a leaf's entries in the names' order."""
    return f"f{f}"


class Dtree:
    """A directory's dtree leaves, each the sorted names of its entries (jfs_dtree.c): the root in
    the inode holds :data:`JFS_DT_ROOT_ENTRIES`; when it overflows its entries move to a leaf page
    (dtSplitRoot); a full leaf is split in two (dtSplitPage), the upper half to a new page."""

    def __init__(self):
        self.leaves: list[list[str]] = [[]]
        self.in_root = True

    def find(self, name: str) -> int:
        firsts = [leaf[0] for leaf in self.leaves[1:]]
        return bisect.bisect_right(firsts, name)

    def insert(self, name: str) -> tuple[int, int, int, list[int]]:
        """Insert ``name``: (its stbl index, the leaf's entries after the insert, entries that moved
        after it, the entries of each page a split logged whole)."""
        i = self.find(name)
        leaf = self.leaves[i]
        split: list[int] = []
        if self.in_root and len(leaf) >= JFS_DT_ROOT_ENTRIES:
            self.in_root = False
            split = [len(leaf)]
        elif not self.in_root and len(leaf) >= JFS_DT_ENTRIES:
            half = len(leaf) // 2
            self.leaves.insert(i + 1, leaf[half:])
            del leaf[half:]
            split = [half, len(self.leaves[i + 1])]
            if name > self.leaves[i + 1][0]:
                i, leaf = i + 1, self.leaves[i + 1]
        pos = bisect.bisect_left(leaf, name)
        leaf.insert(pos, name)
        return pos, len(leaf), len(leaf) - 1 - pos, split

    def delete(self, name: str) -> tuple[int, int, int, bool]:
        """Remove ``name``: (its stbl index, the leaf's entries before, entries that moved, whether
        its page emptied and was freed)."""
        i = self.find(name)
        leaf = self.leaves[i]
        pos = bisect.bisect_left(leaf, name)
        if pos >= len(leaf) or leaf[pos] != name:
            return 0, 1, 0, False
        n = len(leaf)
        del leaf[pos]
        freed = not leaf and len(self.leaves) > 1
        if freed:
            del self.leaves[i]
        return pos, n, n - 1 - pos, freed


class Jfs(Logged):
    """jfs (see the module docstring)."""

    def __init__(self, p: FsParams, data_bios, dirty_expire_s: float):
        super().__init__(p, data_bios, dirty_expire_s)
        # mkfs.jfs: allocation groups of a power of two blocks, at most 128 of them, at least 32 MiB
        # (jfs_dmap.c, dbInit/dbGetL2AGSize); the inline log at the device's end.
        ag = 8192
        while self.total // ag > 128:
            ag *= 2
        self.ag, self.groups = ag, max(1, self.total // ag)
        self.log_blocks = (p.journal_bytes or min(128 << 20, p.device_bytes // 256)) // self.bs
        self.check_journal(self.log_blocks)
        self.log_start = self.total - self.log_blocks
        self.log_head = 2  # the log's first two pages hold its superblock (LOGSUPER_B)
        self.page_used = 0  # bytes of records in the current log page
        self.page_since = None
        self.last_log_s = -1.0  # when the last log page was written
        self.inode_extents: dict[tuple, int] = {}  # (group, directory, extent number) -> first block
        self.meta_blocks: dict[tuple, int] = {}  # a directory's page ("dt"/"ix", directory, number) -> block
        self.dtrees: dict[int, Dtree] = {}  # directory -> its leaves
        self.special: set[int] = set()  # dirty in-place blocks of the inode map's and block map's files
        self.logsync_pages = min(self.log_blocks // 8, JFS_LOGSYNC_MAX_PAGES)  # LOGSYNC_DELTA
        self.since_logsync = 0  # log pages written since the last sync point

    def group_of(self, d: int) -> int:
        return 0 if d == 0 else (d * 7919) % self.groups

    def group_start(self, g: int) -> int:
        return g * self.ag + (256 if g == 0 else 0)  # AG 0 begins with the aggregate's own metadata

    def allocated(self, t, start: int, n: int):
        # the block map's dmap page of the blocks (8192 blocks a page, BPERDMAP), kept in the block
        # map's file (placed before the fsck area and the log here)
        if t is not None:
            self.dirty_special(t, {self.log_start - 64 - 1 - b // 8192 for b in (start, start + n - 1)})

    def tail_write(self, t, f, off, size) -> bool:
        return False

    def after_write(self, t, f: File):
        pass

    def written_back(self, db: int, n: int):
        pass

    def log(self, t, nbytes: int):
        """Records of ``nbytes`` into the log: each page they fill is written."""
        if self.page_since is None:
            self.page_since = t
        self.page_used += nbytes
        while self.page_used >= JFS_PAGE_DATA_BYTES:
            self.page_used -= JFS_PAGE_DATA_BYTES
            self.write_log_page(t)
            self.page_since = t if self.page_used else None

    def write_log_page(self, t):
        # each page a bio of its own, submitted outside any plug (lbmStartIO): never merged with
        # the next page, which is issued a nanosecond later at the earliest
        t = max(t, self.last_log_s + 1e-9)
        self.last_log_s = t
        self.emit(t, Op.WRITE, (self.log_start + self.log_head) * self.bs, self.bs, SYNC)
        self.log_head += 1
        if self.log_head >= self.log_blocks:
            self.log_head = 2
        self.since_logsync += 1
        if self.since_logsync >= self.logsync_pages:
            self.logsync(t)

    def dirty_special(self, t, blocks):
        """In-place blocks of the aggregate's own inodes (the inode map's, the block map's)."""
        self.dirty_inplace(t, blocks)
        self.special.update(blocks)

    def logsync(self, t):
        """lmLogSync: the special inodes' dirty pages written (filemap_flush), a sync point record."""
        self.since_logsync = 0
        for b in sorted(self.special & set(self.inplace)):
            self.emit(t + 1e-9, Op.WRITE, b * self.bs, self.bs, META)
            del self.inplace[b]
        self.special.clear()
        if not self.inplace:
            self.inplace_since = None
        self.page_used += JFS_LOG["syncpt"]

    def flush_log(self, t):
        """The current page written as it is (jfs_flush_journal); the next record starts a page."""
        if self.page_used:
            self.write_log_page(t)
            self.page_used = 0
        self.page_since = None

    def inode_page(self, t, f: File) -> int:
        ext = (self.group_of(f.dir), f.dir, f.ino // JFS_INODES_PER_EXTENT)
        first = self.inode_extents.get(ext)
        if first is None:
            (first, _), = self.alloc(t, ext[0], 4)
            self.inode_extents[ext] = first
        return first + f.ino % JFS_INODES_PER_EXTENT // JFS_INODES_PER_PAGE

    def dir_pages(self, f: File) -> set:
        """The directory's leaf page of the entry and its index table page (in-place keys: the
        directory's blocks, placed with its files)."""
        d = f.dir
        leaf = f.ino // max(1, JFS_DT_ENTRIES // 2)
        return {("dt", d, leaf), ("ix", d, f.ino // JFS_INDEX_PER_PAGE)}

    def dir_blocks(self, t, keys) -> list[int]:
        out = []
        for key in keys:
            blk = self.meta_blocks.get(key)
            if blk is None:
                (blk, _), = self.alloc(t, self.group_of(key[1]), 1)
                self.meta_blocks[key] = blk
            out.append(blk)
        return out

    def create(self, t, f: int, d: int):
        file = self.new_file(f, d)
        self.log(t, JFS_LOG["create"] + self.dtree_insert(d, f))
        self.dirty_special(t, [self.inode_page(t, file), self.imap_page(file)])
        self.dirty_inplace(t, self.dir_blocks(t, self.dir_pages(file)))

    def placed(self, file: File):
        """A file on the device before the workload: its entry in its directory's leaves, unlogged."""
        super().placed(file)
        self.dtrees.setdefault(file.dir, Dtree()).insert(file_name(next(reversed(self.files))))

    def dtree_insert(self, d: int, f: int) -> int:
        """Log bytes of the directory's side of a create: the leaf's header, the new entry's slot and
        the stbl from its index on (dtInsertEntry); the directory table slots of the entries the
        insert moved up the stbl, one line each (modify_index); a split logs both pages whole and
        the table slots of the entries that moved to the new page (dtSplitPage, dtMoveEntry), and
        the parent's new router entry (dtInsertEntry on the parent)."""
        pos, n, moved, split = self.dtrees.setdefault(d, Dtree()).insert(file_name(f))
        nbytes = _record(JFS_DT_SLOT, JFS_DT_SLOT, JFS_DT_SLOT * _stbl_slots(n, pos)) + _index_record(moved)
        if split:
            nbytes += sum(_page_record(k) for k in split) + _index_record(split[-1])
            nbytes += _record(JFS_DT_SLOT, JFS_DT_SLOT, JFS_DT_SLOT)
        return nbytes

    def dtree_delete(self, d: int, f: int) -> int:
        """Log bytes of the directory's side of a delete: the leaf's header, the freed slot and the
        stbl from the entry's index on (dtDeleteEntry); the directory table's freed slot and those of
        the entries moved down the stbl (free_index, modify_index); an emptied page freed
        (LOG_NOREDOPAGE) and its router deleted from the parent (dtDeleteUp)."""
        pos, n, moved, freed = self.dtrees.setdefault(d, Dtree()).delete(file_name(f))
        nbytes = _record(JFS_DT_SLOT, JFS_DT_SLOT, JFS_DT_SLOT * _stbl_slots(n, pos)) + _index_record(1 + moved)
        if freed:
            nbytes += JFS_LRD_BYTES + _record(JFS_DT_SLOT, JFS_DT_SLOT, JFS_DT_SLOT)
        return nbytes

    def imap_page(self, f: File) -> int:
        # the inode allocation group page (IAG) of the inode: 4096 inodes each (EXTSPERIAG x 32)
        return 64 + (self.group_of(f.dir) * 64 + f.ino // 4096) % 64

    def delete(self, t, f: int):
        file = self.files.pop(f)
        freed = JFS_LOG["free_extents"] + JFS_LOG["extent"] * len(file.runs) if file.runs else 0
        self.log(t, JFS_LOG["delete"] + self.dtree_delete(file.dir, f) + freed)
        self.dirty_special(t, [self.inode_page(t, file), self.imap_page(file)])
        self.dirty_inplace(t, self.dir_blocks(t, self.dir_pages(file)))
        for _, n, db in file.runs:
            self.allocated(t, db, n)

    def stat(self, t, f: int):
        file = self.files[f]
        self.lookup(t, file)
        page = self.inode_page(t, file)
        if ("ip", page) in self.on_device:
            self.read_once(t + 1e-9, ("ip", page), page)

    def lookup(self, t, f: File):
        for key in sorted(self.dir_pages(f)):
            if key[0] == "dt" and key in self.on_device:
                blk, = self.dir_blocks(t, [key])
                self.read_once(t, ("dt", blk), blk)

    def after_write_back(self, t, f: File):
        if f.grown:
            self.log(t, JFS_LOG["commit_inode"] + JFS_LOG["extent"] * f.grown)
            self.dirty_special(t, [self.inode_page(t, f)])
            f.grown = 0

    def fsync(self, t, f: int):
        t = max(t, self.latest)
        file = self.files.get(f)
        if file is not None:
            self.after_write_back(t, file)
        self.flush_log(t)

    def sync(self, t):
        t = max(t, self.latest)
        for file in self.files.values():
            self.after_write_back(t, file)
        self.flush_log(t)
        self.write_inplace(t)
        self.log(t, JFS_LOG["syncpt"])
        self.flush_log(t)

    def due(self, t):
        if self.page_since is not None and t >= self.page_since + self.p.commit_interval_s:
            self.flush_log(self.page_since + self.p.commit_interval_s)
        super().due(t)


