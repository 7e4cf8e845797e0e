"""jfs (fs/jfs): its log, metapages and dtree directories, as requests on its device (see :mod:`.fs_logged`).

**jfs** (fs/jfs): a transaction writes log records to the log's current page (jfs_logmgr.c,
lmWriteRecord; a 4 KiB page holds 4080 bytes of records between its 8-byte header and trailer);
a page is written, one 4 KiB request, when it is full (lmNextPage), and the page in use is
written at fsync and sync (jfs_flush_journal; sync adds a sync point record, jfs_syncpt) and
when a dirty inode is written back (jfs_write_inode), which the write-back interval does: the
model writes it ``commit_interval_s`` (30 s) after its first record. Namespace operations commit
lazily (txCommit without COMMIT_SYNC: lmGroupCommit leaves the page for later). A record is a
36-byte descriptor (struct lrd, jfs_logmgr.h) after the lines it logs and their 4-byte vectors
(struct lvd); the lines each operation logs (jfs_txnmgr.c txLog, diLog, dtLog, xtLog):

- create (jfs_namei.c jfs_create): the new inode whole (four 128-byte lines, L2INODESLOTSIZE), its
  empty xtree root's header (two 16-byte lines), the directory page's entry, header and slot
  table slots (three 32-byte dtree slots, dtInsertEntry), the directory index table's slot (one
  32-byte line, add_index), the directory inode's base line (times, size), the commit record;
- delete (jfs_unlink): the directory page's three slots, the inode's base line, the directory
  inode's base line, the index slot, a map record of the freed extents (8 bytes each, LOG_UPDATEMAP,
  maplock), the commit record;
- a file's first write-back after it grew (jfs_write_inode -> jfs_commit_inode): the inode's base
  line, one 16-byte xtree line per new extent, the map record, the commit record.

The metadata pages (inode pages of 8 inodes, dtree pages, the index table's pages, the inode
map's and the block map's pages) are written in place at sync and when dirty for
``dirty_expire_s``. A dtree leaf holds 123 one-slot entries (128 slots less the header and the
4-slot table, dtree.h); it is split in two when full (dtSplitPage), so leaves fill from half.
New inodes come in extents of 32 (16 KiB, INOSPEREXT) allocated in the directory's group. A stat
of an inode not cached reads its 4 KiB inode page (diRead, read_metapage); a lookup reads the
directory's leaf pages. jfs sends no flushes (lbmStartIO: REQ_SYNC only).
"""

from __future__ import annotations

from .fs_layout import FsParams
from .fs_logged_base import SYNC, File, Logged
from .stream import Op

__all__ = ["Jfs", "JFS_LOG"]

JFS_LRD_BYTES = 36  # struct lrd
JFS_LVD_BYTES = 4  # struct lvd
JFS_PAGE_DATA_BYTES = 4096 - 8 - 8  # a log page less its header and trailer (LOGPHDRSIZE, LOGPTLRSIZE)
JFS_DT_ENTRIES = 128 - 1 - 4  # one-slot entries in a dtree leaf page
JFS_INDEX_PER_PAGE = 4096 // 8  # struct dir_table_slot
JFS_INODES_PER_PAGE = 4096 // 512
JFS_INODES_PER_EXTENT = 32


def _record(lines: int, line_bytes: int) -> int:
    return JFS_LRD_BYTES + lines * (JFS_LVD_BYTES + line_bytes)


#: Log bytes per operation (see the module docstring); ``extent``: added per extent of the operation.
JFS_LOG = {
    "create": _record(4, 128) + _record(2, 16) + _record(3, 32) + _record(1, 32) + _record(1, 128) + JFS_LRD_BYTES,
    "delete": _record(3, 32) + _record(1, 128) * 2 + _record(1, 32) + JFS_LRD_BYTES + JFS_LRD_BYTES,
    "commit_inode": _record(1, 128) + JFS_LRD_BYTES + JFS_LRD_BYTES + JFS_LRD_BYTES,
    "extent": 16 + JFS_LVD_BYTES + 8,
    "syncpt": JFS_LRD_BYTES,
}

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

    def group_of(self, d: int) -> int:
        return 0 if d == 0 else (d * 7919) % self.groups

    def group_start(self, g: int) -> int:
        return g * self.ag + (256 if g == 0 else 0)  # AG 0 begins with the aggregate's own metadata

    def allocated(self, t, start: int, n: int):
        # the block map's dmap page of the blocks (8192 blocks a page, BPERDMAP), kept in the block
        # map's file (placed before the fsck area and the log here)
        if t is not None:
            self.dirty_inplace(t, {self.log_start - 64 - 1 - b // 8192 for b in (start, start + n - 1)})

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
        self.log(t, JFS_LOG["create"])
        blocks = [self.inode_page(t, file), *self.dir_blocks(t, self.dir_pages(file)), self.imap_page(file)]
        self.dirty_inplace(t, blocks)

    def imap_page(self, f: File) -> int:
        # the inode allocation group page (IAG) of the inode: 4096 inodes each (EXTSPERIAG x 32)
        return 64 + (self.group_of(f.dir) * 64 + f.ino // 4096) % 64

    def delete(self, t, f: int):
        file = self.files.pop(f)
        self.log(t, JFS_LOG["delete"] + JFS_LOG["extent"] * len(file.runs))
        blocks = [self.inode_page(t, file), *self.dir_blocks(t, self.dir_pages(file)), self.imap_page(file)]
        self.dirty_inplace(t, blocks)
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
            self.dirty_inplace(t, [self.inode_page(t, f)])
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


