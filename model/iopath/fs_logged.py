"""jfs and reiserfs: the page cache's file-level reads and write-backs, and the metadata operations,
as requests on the file system's device (the other kinds are in :mod:`.fs`).

Both allocate a file's blocks when they are first needed (no delayed allocation: jfs_get_block,
reiserfs_get_block), each file after the last one placed in its directory's group, and read or
write a file range as one request per run of contiguous blocks (the bios of :func:`.fs.data_bios`).
Their metadata is journaled differently:

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

**reiserfs** (fs/reiserfs): items live in the leaves of one S+tree (stree.c, do_balan.c): a file's
stat data (24-byte item head and 44 bytes, SD_V2_SIZE), its indirect item (a 4-byte pointer per
block) or, for a file of at most ``tail_max_bytes`` written whole, a direct item holding the data
itself (the tail: no data block; reiserfs_file_release packs it, indirect2direct), keyed by
(directory, object id) so a directory's files fill leaves in order; and directory entries (16-byte
entry heads and the name rounded up to 8 bytes) in items ordered by the name's hash, so their
leaves fill as a B-tree with random inserts that pushes to neighbours before splitting does
(:data:`~.fs_meta.RANDOM_FILL`). A leaf holds 4072 bytes (the block less its 24-byte head). Every
block a transaction changes (the leaves, the bitmap block of each allocation, the superblock
with its object id map, the root when a leaf is added) is logged once per transaction: at the
commit (``commit_interval_s`` after the transaction began, the maximum transaction age; fsync;
sync) the journal gets a description block, the blocks and a commit block (journal.c,
flush_commit_list) which ``barrier=flush`` sends with PREFLUSH and FUA. sync then starts and
commits a transaction of its own (reiserfs_sync_fs: the superblock and the root) and writes the
committed blocks in place. ``data=journal`` logs data blocks too. A file's group is its
directory's hash (bitmap.c, bmap_hash_id, never group 0, which holds the journal). A lookup
reads the leaves of the directory's entries, a stat of an uncached file the leaf of its stat
data; the first allocation in a group reads its bitmap block.
"""

from __future__ import annotations

from bisect import bisect_right

from .fileops import FileOps, Kind
from .fs_layout import FsParams
from .fs_meta import RANDOM_FILL
from .stream import Flag, Op

__all__ = ["LOGGED_KINDS", "logged_file_system", "JFS_LOG", "REISERFS_LEAF_BYTES"]

LOGGED_KINDS = ("jfs", "reiserfs")
META = int(Flag.META)
SYNC = int(Flag.SYNC)

# -- jfs -----------------------------------------------------------------------------------------
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

# -- reiserfs ------------------------------------------------------------------------------------
REISERFS_LEAF_BYTES = 4096 - 24  # BLKH_SIZE
REISERFS_IH = 24
REISERFS_SD = 44
REISERFS_DEH = 16
NAME_BYTES = 8  # a file name's length, rounded up to 8 (as fs_meta's)
REISERFS_BITMAP_BLOCKS = 4096 * 8
#: MAX_DIRECT_ITEM_LEN of a 4 KiB block (the block less its head, two item heads, a stat data and a
#: pointer): the largest file tails=small keeps in its leaf [bytes]
REISERFS_TAIL_BYTES = 4096 - 24 - 2 * 24 - 44 - 4


def _first(run) -> int:
    return run[0]


class _File:
    __slots__ = ("dir", "ino", "runs", "blocks", "tail", "grown", "key")

    def __init__(self, d: int, ino: int, key: int):
        self.dir, self.ino, self.key = d, ino, key
        self.runs: list[list[int]] = []  # [file_block, count, device_block], by file block
        self.blocks = 0
        self.tail = False
        self.grown = 0  # jfs: extents added since the inode was last committed


class _Logged:
    """The state both kinds share: files, placement, cached metadata, dirty in-place blocks."""

    def __init__(self, p: FsParams, data_bios, dirty_expire_s: float):
        self.p, self.bs, self.data_bios, self.expire = p, p.block_bytes, data_bios, dirty_expire_s
        self.total = p.device_bytes // p.block_bytes
        self.rows: list[tuple] = []
        self.latest = 0.0
        self.files: dict[int, _File] = {}
        self.read_meta: set = set()
        self.inplace: dict[int, None] = {}
        self.inplace_since = None
        self.entries: dict[int, int] = {}  # directory -> entries ever made
        self.next_key = 0
        self.cursor: dict[int, int] = {}

    def emit(self, t, op, off, size, flags=0):
        self.rows.append((t, int(op), off, size, flags))
        self.latest = max(self.latest, t)

    def read_once(self, t, key, blk: int, count: int = 1):
        if key not in self.read_meta:
            self.read_meta.add(key)
            self.emit(t, Op.READ, blk * self.bs, count * self.bs, META)

    def alloc(self, t, group: int, n: int) -> list[tuple[int, int]]:
        """``n`` blocks at the group's cursor (a file's next blocks follow its last ones while no
        other file took blocks in between)."""
        start = self.cursor.setdefault(group, self.group_start(group))
        self.cursor[group] = start + n
        if self.cursor[group] > self.total:
            raise ValueError(f"file system: device_bytes = {self.p.device_bytes} is full ({self.p.kind})")
        self.allocated(t, start, n)
        return [(start, n)]

    def dirty_inplace(self, t, blocks):
        if not self.inplace and blocks:
            self.inplace_since = t
        for b in blocks:
            self.inplace[b] = None

    def write_inplace(self, t):
        for b in sorted(self.inplace):
            self.emit(t, Op.WRITE, b * self.bs, self.bs, META)
        self.inplace.clear()
        self.inplace_since = None

    # -- data -------------------------------------------------------------------------------------
    def map(self, f: _File, fb0: int, fb1: int) -> list[tuple[int, int]]:
        out = []
        for fb, n, db in f.runs[max(bisect_right(f.runs, fb0, key=_first) - 1, 0):]:
            if fb >= fb1:
                break
            a, b = max(fb, fb0), min(fb + n, fb1)
            if a < b:
                if out and out[-1][0] + out[-1][1] == db + a - fb:
                    out[-1] = (out[-1][0], out[-1][1] + b - a)
                else:
                    out.append((db + a - fb, b - a))
        return out

    def allocate(self, t, f: _File, fb0: int, fb1: int):
        """Blocks for the file blocks of [fb0, fb1) that have none (appends, holes), each run at the
        group's cursor: a file written in order gets one run, a file written at random offsets
        gets its blocks in the order of the writes."""
        gaps, cur = [], fb0
        k = max(bisect_right(f.runs, fb0, key=_first) - 1, 0)
        for fb, n, _ in f.runs[k:]:
            if fb >= fb1:
                break
            if fb + n <= cur:
                continue
            if fb > cur:
                gaps.append((cur, fb))
            cur = max(cur, fb + n)
        if cur < fb1:
            gaps.append((cur, fb1))
        for s, e in gaps:
            (db, n), = self.alloc(t, self.group_of(f.dir), e - s)
            k = bisect_right(f.runs, s, key=_first)
            prev = f.runs[k - 1] if k else None
            if prev is not None and prev[0] + prev[1] == s and prev[2] + prev[1] == db:
                prev[1] += n
            else:
                f.runs.insert(k, [s, n, db])
                f.grown += 1
        f.blocks = max(f.blocks, fb1)

    def write_call(self, t, f: _File, off: int, size: int):
        """A ``write()``: the blocks it reaches past the file's end are allocated now
        (jfs_get_block, reiserfs_get_block from write_begin), in the order of the calls."""
        if self.tail_candidate(f, off, size):
            return
        fb0, fb1 = off // self.bs, -(-(off + size) // self.bs)
        before = self.map(f, fb0, fb1)
        self.allocate(t, f, fb0, fb1)
        if sum(n for _, n in before) < fb1 - fb0:
            self.new_blocks(t, f, fb0, fb1, {b for db, n in before for b in range(db, db + n)})

    def tail_candidate(self, f: _File, off: int, size: int) -> bool:
        return False

    def new_blocks(self, t, f: _File, fb0: int, fb1: int, old: set):
        pass

    def data(self, t, op: int, f: int, off: int, size: int, sync: bool, chunk: int):
        file = self.files[f]
        fb0, fb1 = off // self.bs, -(-(off + size) // self.bs)
        flags = SYNC if sync else 0
        if op == Op.READ:
            for db, n in self.map(file, fb0, fb1):
                self.emit(t, Op.READ, db * self.bs, n * self.bs, flags)
            return
        if self.tail_write(t, file, off, size):
            return
        self.allocate(t, file, fb0, fb1)
        self.after_write(t, file)
        # Each run a bio of its own, in file order, a nanosecond apart: the plug merges a bio only
        # into the request before it (blk_attempt_plug_merge), so runs out of address order stay apart.
        for k, (db, n) in enumerate(self.map(file, fb0, fb1)):
            self.written_back(db, n)
            self.latest = max(self.latest, self.data_bios(self.rows, t + k * 1e-9, Op.WRITE, db * self.bs,
                                                          n * self.bs, flags, chunk))

    def new_file(self, f: int, d: int) -> _File:
        n = self.entries.get(d, 0)
        self.entries[d] = n + 1
        file = _File(d, n, self.next_key)
        self.next_key += 1
        self.files[f] = file
        return file

    def due(self, t):
        if self.inplace and t >= self.inplace_since + self.expire:
            self.write_inplace(self.inplace_since + self.expire)


class _Jfs(_Logged):
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
        self.log_start = self.total - self.log_blocks
        self.log_head = 2  # the log's first two pages hold its superblock (LOGSUPER_B)
        self.page_used = 0  # bytes of records in the current log page
        self.page_since = None
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

    def after_write(self, t, f: _File):
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

    def inode_page(self, t, f: _File) -> int:
        ext = (self.group_of(f.dir), f.dir, f.ino // JFS_INODES_PER_EXTENT)
        first = self.inode_extents.get(ext)
        if first is None:
            (first, _), = self.alloc(t, ext[0], 4)
            self.inode_extents[ext] = first
        return first + f.ino % JFS_INODES_PER_EXTENT // JFS_INODES_PER_PAGE

    def dir_pages(self, f: _File) -> set:
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

    def imap_page(self, f: _File) -> int:
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

    def lookup(self, t, f: _File):
        for key in sorted(self.dir_pages(f)):
            if key[0] == "dt" and key in self.on_device:
                blk, = self.dir_blocks(t, [key])
                self.read_once(t, ("dt", blk), blk)

    def after_write_back(self, t, f: _File):
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


class _Reiserfs(_Logged):
    """reiserfs (see the module docstring)."""

    def __init__(self, p: FsParams, data_bios, dirty_expire_s: float):
        super().__init__(p, data_bios, dirty_expire_s)
        self.groups = max(1, -(-self.total // REISERFS_BITMAP_BLOCKS))
        self.journal_blocks = (p.journal_bytes or 8193 * self.bs) // self.bs - 1  # less its header block
        self.journal_first = 18  # after the superblock (block 16) and the first bitmap (17)
        self.root = self.journal_first + self.journal_blocks + 1
        self.head = 0
        self.tx: dict = {}
        self.tx_start = None
        self.committed: dict[int, None] = {}
        self.leaf_blocks: dict = {}
        self.fill: dict = {}  # (directory, "sd" | "de") -> bytes of items
        self.tail_max = REISERFS_TAIL_BYTES if p.tail_bytes is None else p.tail_bytes
        self.ordered: dict[int, None] = {}  # data blocks on the running transaction's ordered list

    def group_of(self, d: int) -> int:
        if self.groups == 1:
            return 0
        return 1 + (d * 7919) % (self.groups - 1)  # bmap_hash_id: never 0

    def group_start(self, g: int) -> int:
        return self.root + 1 if g == 0 else g * REISERFS_BITMAP_BLOCKS + 1  # past the group's bitmap

    def bitmap(self, blk: int) -> int:
        g = blk // REISERFS_BITMAP_BLOCKS
        return 17 if g == 0 else g * REISERFS_BITMAP_BLOCKS

    def allocated(self, t, start: int, n: int):
        for b in {self.bitmap(start), self.bitmap(start + n - 1)}:
            if t is not None:
                self.read_once(t, ("bitmap", b), b)
                self.log(t, b)

    def log(self, t, block):
        if self.tx_start is None:
            self.tx_start = t
        self.tx[block] = None

    def leaf(self, t, d: int, what: str, index_bytes: float) -> int:
        """The leaf holding the item at ``index_bytes`` of the directory's ``what`` items."""
        fill = 1.0 if what == "sd" else RANDOM_FILL
        k = int(index_bytes // (REISERFS_LEAF_BYTES * fill))
        key = (d, what, k)
        blk = self.leaf_blocks.get(key)
        if blk is None:
            (blk, _), = self.alloc(t, self.group_of(d), 1)
            self.leaf_blocks[key] = blk
            if t is not None:
                self.log(t, self.root)  # a new leaf: its parent (the root of a two-level tree) changes
        return blk

    def file_leaf(self, t, f: _File) -> int:
        return self.leaf(t, f.dir, "sd", f.ino * (REISERFS_IH + REISERFS_SD))

    def entry_leaf(self, t, f: _File) -> int:
        return self.leaf(t, f.dir, "de", f.ino * (REISERFS_DEH + NAME_BYTES))

    def tail_candidate(self, f: _File, off: int, size: int) -> bool:
        return f.blocks == 0 and off + size <= self.tail_max

    def new_blocks(self, t, f: _File, fb0: int, fb1: int, old: set):
        """data=ordered: the new blocks go on the running transaction's ordered list
        (reiserfs_commit_page -> reiserfs_add_ordered_list), written at its commit unless written
        back before or dropped with their file (invalidatepage_can_drop: a buffer of the running
        transaction)."""
        if self.p.journal_mode == "ordered":
            for db, n in self.map(f, fb0, fb1):
                for b in range(db, db + n):
                    if b not in old:
                        self.ordered[b] = None

    def tail_write(self, t, f: _File, off: int, size: int) -> bool:
        """A file written whole within the tail limit keeps its bytes in its leaf."""
        if self.tail_candidate(f, off, size):
            f.tail = True
            self.log(t, self.file_leaf(t, f))
            return True
        return False

    def written_back(self, db: int, n: int):
        for b in range(db, db + n):
            self.ordered.pop(b, None)

    def after_write(self, t, f: _File):
        if f.grown:
            self.log(t, self.file_leaf(t, f))  # the indirect item's new pointers
            f.grown = 0
        if self.p.journal_mode == "journal":
            for _, n, db in f.runs:
                for b in range(db, db + n):
                    self.log(t, b)

    def create(self, t, f: int, d: int):
        file = self.new_file(f, d)
        self.log(t, 16)  # the superblock: its object id map
        self.lookup(t, file)
        self.log(t, self.file_leaf(t, file))
        self.log(t, self.entry_leaf(t, file))

    def delete(self, t, f: int):
        file = self.files.pop(f)
        self.log(t, 16)
        self.log(t, self.file_leaf(t, file))
        self.log(t, self.entry_leaf(t, file))
        for _, n, db in file.runs:
            self.allocated(t, db, n)
            self.written_back(db, n)

    def stat(self, t, f: int):
        file = self.files[f]
        self.lookup(t, file)
        blk = self.file_leaf(t, file)
        if blk in self.on_device:
            self.read_once(t + 1e-9, ("leaf", blk), blk)

    def lookup(self, t, f: _File):
        blk = self.entry_leaf(t, f)
        if blk in self.on_device:
            self.read_once(t, ("leaf", blk), blk)

    def after_write_back(self, t, f: _File):
        pass

    def commit(self, t):
        """Description block, the blocks, commit block at the journal's head (flush_commit_list)."""
        if not self.tx:
            self.tx_start = None
            return
        # write_ordered_buffers: each buffer still dirty is submitted alone, a request of its own
        for k, b in enumerate(sorted(self.ordered)):
            self.emit(t + k * 1e-9, Op.WRITE, b * self.bs, self.bs, 0)
        t += len(self.ordered) * 1e-9
        self.ordered.clear()
        n = len(self.tx)
        per_desc = (self.bs - 24) // 4  # the description block's block numbers (struct reiserfs_journal_desc)
        body = n + max(1, -(-n // per_desc)) - 1 + 1
        self._journal_write(t, body, 0)
        commit_flags = int(Flag.PREFLUSH | Flag.FUA | Flag.SYNC) if self.p.barrier else SYNC
        self._journal_write(t + 1e-9, 1, commit_flags)
        for b in self.tx:
            self.committed[b] = None
        self.tx.clear()
        self.tx_start = None

    def _journal_write(self, t, blocks: int, flags: int):
        while blocks > 0:
            k = min(blocks, self.journal_blocks - self.head)
            self.emit(t, Op.WRITE, (self.journal_first + self.head) * self.bs, k * self.bs, flags)
            self.head = (self.head + k) % self.journal_blocks
            blocks -= k

    def fsync(self, t, f: int):
        self.commit(max(t, self.latest))

    def sync(self, t):
        t = max(t, self.latest)
        self.commit(t)
        self.log(t, 16)  # reiserfs_sync_fs: a transaction of its own
        self.log(t, self.root)
        self.commit(t + 2e-9)
        for b in sorted(self.committed):
            self.emit(t + 3e-9, Op.WRITE, b * self.bs, self.bs, META)
        self.committed.clear()

    def due(self, t):
        if self.tx_start is not None and t >= self.tx_start + self.p.commit_interval_s:
            self.commit(self.tx_start + self.p.commit_interval_s)


def logged_file_system(ops: FileOps, p: FsParams, data_bios, *, sync=None, dirty_expire_s: float = 30.0,
                       sparse: bool = False, workload: FileOps | None = None) -> list[tuple]:
    """The device requests ``(time, op, offset, size, flags)`` for ``ops`` on a jfs or reiserfs
    file system ``p``; ``data_bios`` builds a data run's bios (:func:`.fs.data_bios`). Files on the
    device before the workload (``ops.initial_bytes``) are placed, their metadata on the device
    and not cached. ``workload``: the operations before the page cache, whose ``write()`` calls
    allocate the blocks (None: blocks are allocated at write-back)."""
    fs = (_Jfs if p.kind == "jfs" else _Reiserfs)(p, data_bios, dirty_expire_s)
    created = set(ops.file[ops.kind == Kind.CREATE].tolist())
    for f in range(ops.initial_bytes.size):
        if f in created and ops.initial_bytes[f] == 0:
            continue
        file = fs.new_file(f, int(ops.dir_of_file[f]))
        n = -(-int(ops.initial_bytes[f]) // fs.bs)
        if p.kind == "reiserfs" and 0 < ops.initial_bytes[f] <= fs.tail_max:
            file.tail = True
        elif n and not sparse:
            fs.allocate(None, file, 0, n)
        file.grown = 0
    fs.on_device = _placed_metadata(fs)
    fs.inplace.clear()
    sync = [False] * len(ops) if sync is None else sync.tolist()
    cols = (ops.time_s.tolist(), ops.kind.tolist(), ops.file.tolist(), ops.offset_bytes.tolist(),
            ops.size_bytes.tolist(), sync, ops.chunk_bytes.tolist())
    writes = _writes(workload)
    for t, kind, f, off, size, s, chunk in zip(*cols):
        while writes and writes[-1][0] < t:
            wt, wf, woff, wsize = writes.pop()
            if wf in fs.files:
                fs.write_call(wt, fs.files[wf], woff, wsize)
        fs.due(t)
        if kind == Kind.READ:
            fs.data(t, Op.READ, f, off, size, s, chunk)
        elif kind == Kind.WRITE:
            fs.data(t, Op.WRITE, f, off, size, s, chunk)
            if p.kind == "jfs":
                fs.after_write_back(t, fs.files[f])
        elif kind == Kind.CREATE:
            fs.files.pop(f, None)
            fs.create(t, f, int(ops.dir_of_file[f]))
        elif kind == Kind.DELETE:
            fs.delete(t, f)
        elif kind == Kind.STAT:
            fs.stat(t, f)
        elif kind == Kind.FSYNC:
            fs.fsync(t, f)
        elif kind == Kind.SYNC:
            fs.sync(t)
        elif kind == Kind.CLONE:
            raise ValueError(f"file system: {p.kind} has no FICLONE (cp copies the bytes)")
    return fs.rows


def _writes(workload: FileOps | None) -> list[tuple[float, int, int, int]]:
    """The ``write()`` calls of ``workload`` as ``(time, file, offset, size)``, latest first."""
    if workload is None:
        return []
    w = workload.kind == Kind.WRITE
    rows = zip(workload.time_s[w].tolist(), workload.file[w].tolist(), workload.offset_bytes[w].tolist(),
               workload.size_bytes[w].tolist())
    return sorted(((t, f, o, n) for t, f, o, n in rows if n), key=lambda r: -r[0])


def _placed_metadata(fs) -> set:
    """The metadata blocks the files on the device before the workload have (read when needed)."""
    out = set()
    if isinstance(fs, _Reiserfs):
        for f in fs.files.values():
            out.add(fs.file_leaf(None, f))
            out.add(fs.entry_leaf(None, f))
        return out
    for f in fs.files.values():
        out.update(key for key in fs.dir_pages(f) if key[0] == "dt")
        out.add(("ip", fs.inode_page(None, f)))
    return out
