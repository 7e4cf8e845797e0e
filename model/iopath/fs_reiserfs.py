"""reiserfs (fs/reiserfs): its S+tree leaves, tails, journal and ordered data, as requests on its device (see :mod:`.fs_logged`).

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
commit (``commit_interval_s`` after the transaction began: flush_old_commits, queued when its first
change dirtied the superblock, commits it; fsync; sync) the journal gets a description block, the
blocks and a commit block (journal.c, flush_commit_list) which ``barrier=flush`` sends with
PREFLUSH and FUA. ``data=ordered``: before the commit block, the commit writes the data blocks
allocated in the transaction that are still dirty, each a request of its own
(write_ordered_buffers), including those of files deleted in a later transaction (a deleted file's
buffers are dropped only while their transaction runs: invalidatepage_can_drop); the page cache's
later write-back finds those blocks clean. sync then starts and
commits a transaction of its own (reiserfs_sync_fs: the superblock and the root) and writes the
committed blocks in place. ``data=journal`` logs data blocks too. A file's group is its
directory's hash (bitmap.c, bmap_hash_id, never group 0, which holds the journal). A lookup
reads the leaves of the directory's entries, a stat of an uncached file the leaf of its stat
data; the first allocation in a group reads its bitmap block.
"""

from __future__ import annotations

from .fs_layout import FsParams
from .fs_logged_base import META, SYNC, File, Logged
from .fs_meta import RANDOM_FILL
from .stream import Flag, Op

__all__ = ["Reiserfs", "REISERFS_LEAF_BYTES", "REISERFS_TAIL_BYTES"]

REISERFS_LEAF_BYTES = 4096 - 24  # BLKH_SIZE
#: A transaction is ended once it holds this many blocks (journal.c, journal_begin: j_max_batch,
#: JOURNAL_MAX_BATCH_DEFAULT; mkreiserfs's 1024-block transactions)
JOURNAL_MAX_BATCH = 900
REISERFS_IH = 24
REISERFS_SD = 44
REISERFS_DEH = 16
NAME_BYTES = 8  # a file name's length, rounded up to 8 (as fs_meta's)
REISERFS_BITMAP_BLOCKS = 4096 * 8
#: MAX_DIRECT_ITEM_LEN of a 4 KiB block (the block less its head, two item heads, a stat data and a
#: pointer): the largest file tails=small keeps in its leaf [bytes]
REISERFS_TAIL_BYTES = 4096 - 24 - 2 * 24 - 44 - 4


class Reiserfs(Logged):
    """reiserfs (see the module docstring)."""

    def __init__(self, p: FsParams, data_bios, dirty_expire_s: float):
        super().__init__(p, data_bios, dirty_expire_s)
        self.groups = max(1, -(-self.total // REISERFS_BITMAP_BLOCKS))
        self.journal_blocks = (p.journal_bytes or 8193 * self.bs) // self.bs - 1  # less its header block
        self.check_journal(self.journal_blocks)
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
        self.clean: set = set()  # data blocks a commit wrote and no write() has dirtied since
        self.live: dict[int, int] = {}  # leaf -> files with an item in it
        self.freed: set = set()  # leaves freed in the running transaction
        self.items: dict[int, int] = {}  # directory -> bytes of its files' items (stat data, tails)

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
        if len(self.tx) >= JOURNAL_MAX_BATCH:
            self.commit(t)

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

    def file_leaf(self, t, f: File) -> int:
        return self.leaf(t, f.dir, "sd", f.key)

    def entry_leaf(self, t, f: File) -> int:
        return self.leaf(t, f.dir, "de", f.ino * (REISERFS_DEH + NAME_BYTES))

    def placed(self, f: File):
        """A new file's items: its stat data after the directory's items so far (object ids grow),
        one more live item in each of its two leaves."""
        f.key = self.items.get(f.dir, 0)
        self.items[f.dir] = f.key + REISERFS_IH + REISERFS_SD
        for blk in (self.file_leaf(None, f), self.entry_leaf(None, f)):
            self.live[blk] = self.live.get(blk, 0) + 1

    def tail_candidate(self, f: File, off: int, size: int) -> bool:
        return f.blocks == 0 and off + size <= self.tail_max

    def new_blocks(self, t, f: File, fb0: int, fb1: int, old: set):
        """data=ordered: the new blocks go on the running transaction's ordered list
        (reiserfs_commit_page -> reiserfs_add_ordered_list), written at its commit unless written
        back before or dropped with their file (invalidatepage_can_drop: a buffer of the running
        transaction)."""
        if self.p.journal_mode == "ordered":
            for db, n in self.map(f, fb0, fb1):
                for b in range(db, db + n):
                    if b not in old:
                        self.ordered[b] = None

    def tail_write(self, t, f: File, off: int, size: int) -> bool:
        """A file written whole within the tail limit keeps its bytes in its leaf."""
        if self.tail_candidate(f, off, size):
            # the direct item after the stat data (rounded to 8 bytes, with its item head): the
            # directory's later items move along as it grows
            grown = -(-max(f.tail, off + size) // 8) * 8 - -(-f.tail // 8) * 8 + (0 if f.tail else REISERFS_IH)
            self.items[f.dir] = self.items.get(f.dir, 0) + grown
            f.tail = max(f.tail, off + size)
            self.log(t, self.file_leaf(t, f))
            return True
        return False

    def written_back(self, db: int, n: int):
        for b in range(db, db + n):
            self.ordered.pop(b, None)

    def write_call(self, t, f: File, off: int, size: int):
        """A ``write()`` dirties the blocks it reaches again (a commit may have cleaned them)."""
        for db, n in self.map(f, off // self.bs, -(-(off + size) // self.bs)):
            self.clean.difference_update(range(db, db + n))
        super().write_call(t, f, off, size)

    def data(self, t, op: int, f: int, off: int, size: int, sync: bool, chunk: int):
        """The page cache's write-back writes only the blocks still dirty: those a commit's
        write_ordered_buffers wrote are clean (their buffers' dirty bits cleared)."""
        if op != Op.WRITE or not self.clean or self.tail_candidate(self.files[f], off, size):
            return super().data(t, op, f, off, size, sync, chunk)
        file = self.files[f]
        fb0, fb1 = off // self.bs, -(-(off + size) // self.bs)
        self.allocate(t, file, fb0, fb1)
        self.after_write(t, file)
        runs = []
        for db, n in self.map(file, fb0, fb1):
            for b in range(db, db + n):
                if b in self.clean:
                    continue
                if runs and runs[-1][0] + runs[-1][1] == b:
                    runs[-1][1] += 1
                else:
                    runs.append([b, 1])
        for k, (db, n) in enumerate(runs):
            self.written_back(db, n)
            self.latest = max(self.latest, self.data_bios(self.rows, t + k * 1e-9, Op.WRITE, db * self.bs,
                                                          n * self.bs, SYNC if sync else 0, chunk))

    def after_write(self, t, f: File):
        if f.grown:
            self.log(t, self.file_leaf(t, f))  # the indirect item's new pointers
            f.grown = 0
        if self.p.journal_mode == "journal":
            for _, n, db in f.runs:
                for b in range(db, db + n):
                    self.log(t, b)

    def create(self, t, f: int, d: int):
        file = self.new_file(f, d)
        self.placed(file)
        self.log(t, 16)  # the superblock: its object id map
        self.lookup(t, file)
        self.log(t, self.file_leaf(t, file))
        self.log(t, self.entry_leaf(t, file))

    def delete(self, t, f: int):
        file = self.files.pop(f)
        self.log(t, 16)
        for blk in (self.file_leaf(t, file), self.entry_leaf(t, file)):
            self.live[blk] = self.live.get(blk, 1) - 1
            if self.live[blk] > 0:
                self.log(t, blk)
            else:
                # An emptied leaf is freed in the balance (do_balan.c, reiserfs_invalidate_buffer ->
                # journal_mark_freed): logged if it was changed in the transaction, never written in
                # place; its bitmap block and its parent change.
                self.committed.pop(blk, None)
                self.freed.add(blk)
                self.allocated(t, blk, 1)
                self.log(t, self.root)
        for _, n, db in file.runs:
            self.allocated(t, db, n)
            self.written_back(db, n)

    def stat(self, t, f: int):
        file = self.files[f]
        self.lookup(t, file)
        blk = self.file_leaf(t, file)
        if blk in self.on_device:
            self.read_once(t + 1e-9, ("leaf", blk), blk)

    def lookup(self, t, f: File):
        blk = self.entry_leaf(t, f)
        if blk in self.on_device:
            self.read_once(t, ("leaf", blk), blk)

    def after_write_back(self, t, f: File):
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
        self.clean.update(self.ordered)
        self.ordered.clear()
        n = len(self.tx)
        per_desc = (self.bs - 24) // 4  # the description block's block numbers (struct reiserfs_journal_desc)
        body = n + max(1, -(-n // per_desc)) - 1 + 1
        self._journal_write(t, body, 0)
        commit_flags = int(Flag.PREFLUSH | Flag.FUA | Flag.SYNC) if self.p.barrier else SYNC
        self._journal_write(t + 1e-9, 1, commit_flags)
        for b in self.tx:
            if b not in self.freed:
                self.committed[b] = None
        self.freed.clear()
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


