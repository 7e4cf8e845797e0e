"""What a file system writes to make its metadata durable: the ext journal (jbd2), the xfs log and
btrfs's transaction commit, and the in-place metadata write-back after them.

Each is a :class:`Journal` that collects the metadata blocks dirtied by operations (a set: a
block dirtied twice in one transaction is written once) and, at a commit, appends the requests:

- **jbd2** (fs/jbd2/commit.c, ext3/ext4): descriptor blocks (:func:`jbd2_tags_per_descriptor`: 506 a
  4 KiB block on ext3, whose journal has neither checksums nor the 64bit feature, 253 on ext4, whose
  metadata_csum gives it 16-byte v3 tags), the journaled blocks, then the commit block, in order at the
  journal's head (circular); with barriers the commit block carries ``PREFLUSH | FUA``.
  ``data=journal`` journals data blocks too. A commit happens ``commit_interval_s`` after the
  transaction's first change (the ``commit=`` mount option), at fsync and at sync, when it holds a
  third of the journal's blocks (``FsParams.transaction_divisor``), and when an allocation finds the file
  system full while the transaction freed blocks (:meth:`Journal.force_commit`). Committed blocks
  are dirty in the block device's cache and written in place by write-back when they have been
  dirty ``dirty_expire_s``, at sync, or when the journal is three quarters full (checkpoint).
  ext2 has no journal: its metadata is dirty in place at once.
- **xfs** (fs/xfs/xfs_log_cil.c, delayed logging): a checkpoint logs each dirty inode's core
  (the 176-byte xfs_log_dinode, the 56-byte inode log format and two 12-byte op headers: 256 bytes) and each dirty buffer's changed regions (a 64-byte header and
  each 128-byte chunk changed, XFS_BLF_CHUNK: one for a header or btree block, one per chunk
  its new or removed entries fall in for a directory block); the log is written in
  ``log_buffer_bytes`` iclogs, each rounded up to 512 bytes, with ``PREFLUSH | FUA``. The log is
  forced at fsync, sync and every 30 s (xfssyncd_centisecs, the log worker). Logged metadata is
  written in place when the AIL is pushed: when the log is three quarters used.
- **btrfs** (fs/btrfs/transaction.c, disk-io.c): a commit every 30 s (``commit=``), at fsync and at
  sync writes the tree blocks changed in the transaction to new places, ``metadata_copies`` times
  (DUP), in two passes (see :meth:`Journal._btrfs`); then an empty flush, then the superblock
  copies, the first with FUA (write_all_supers).
"""

from __future__ import annotations

from .fs_layout import Allocator, FsParams
from .stream import Flag, Op

__all__ = ["Journal", "META", "COMMIT", "jbd2_tags_per_descriptor", "jbd2_revokes_per_block"]

META = int(Flag.META | Flag.SYNC)
COMMIT = int(Flag.META | Flag.SYNC | Flag.PREFLUSH | Flag.FUA)

#: jbd2's on-disk sizes [bytes] (include/linux/jbd2.h): a block's header (journal_header_t), the
#: journal's UUID after a descriptor's first tag, the checksum tail of a descriptor or revoke block
#: (jbd2_journal_block_tail, with checksums v2 or v3) and a revoke block's header.
JBD2_HEADER_BYTES, JBD2_UUID_BYTES, JBD2_TAIL_BYTES, JBD2_REVOKE_HEADER_BYTES = 12, 16, 4, 16


def _jbd2_features(kind: str) -> tuple[bool, bool]:
    """(checksums v3, 64bit) of the journal mke2fs makes: ext4's defaults (mke2fs.conf) hold
    metadata_csum, which gives the journal v3 checksums (ext4_set_journal_csum_feature_set), and 64bit;
    ext3's hold neither."""
    return (kind == "ext4", kind == "ext4")


def jbd2_tags_per_descriptor(kind: str, block_bytes: int) -> int:
    """Blocks one descriptor block describes (fs/jbd2/commit.c, jbd2_journal_commit_transaction: a tag
    each, the UUID after the first, and the descriptor is written once less than ``tag + 16 + tail``
    bytes are left). A tag is 16 bytes with v3 checksums (journal_block_tag3_t), else 8, or 12 with
    64bit (journal_tag_bytes): 506 a 4 KiB block on ext3, 253 on ext4."""
    csum3, wide = _jbd2_features(kind)
    tag = 16 if csum3 else (12 if wide else 8)
    tail = JBD2_TAIL_BYTES if csum3 else 0
    space = block_bytes - JBD2_HEADER_BYTES - JBD2_UUID_BYTES
    # a tag follows the k-th while the space left after k is at least tag + 16 + tail
    return (space - (tag + 16 + tail)) // tag + 1


def jbd2_revokes_per_block(kind: str, block_bytes: int) -> int:
    """Revoke records a revoke block holds (fs/jbd2/revoke.c, write_one_revoke_record): 4 bytes each,
    8 with 64bit, after the block's header and before the checksum tail."""
    csum3, wide = _jbd2_features(kind)
    return (block_bytes - JBD2_REVOKE_HEADER_BYTES - (JBD2_TAIL_BYTES if csum3 else 0)) // (8 if wide else 4)


class Journal:
    """The running transaction and the metadata waiting to be written in place."""

    def __init__(self, p: FsParams, alloc: Allocator, emit, dirty_expire_s: float):
        self.p, self.alloc, self.emit, self.expire = p, alloc, emit, dirty_expire_s
        self.bs = p.block_bytes
        self.tx: dict = {}  # block (or btrfs leaf key) -> "inode" | "buffer" | "data"
        self.start = None  # time of the running transaction's first change
        self.inplace: dict[int, None] = {}  # blocks waiting for in-place write-back
        self.inplace_since = None
        # Journal/log position in blocks; jbd2 starts at j_first, past the journal's superblock.
        self.head = 1 if p.kind in ("ext3", "ext4") else 0
        self.used = 0  # journal/log blocks since the last checkpoint
        # jbd2 found the journal empty at mount (journal_reset: s_start 0 sets JBD2_FLUSHED): the
        # first commit writes the journal's superblock first (jbd2_journal_commit_transaction ->
        # jbd2_journal_update_sb_log_tail).
        self.sb_pending = p.kind in ("ext3", "ext4")
        self.dev_stats_pending = p.kind == "btrfs"  # see _btrfs
        self.revokes = 0  # jbd2: revoke records of the running transaction (forget)
        self.regions: dict = {}  # xfs: buffer -> the 128-byte chunks changed in it (dirty's region)
        self.live_leaves = None  # btrfs: () -> {tree: leaves its live items fill}, set by the file system
        # jbd2 holds a transaction to a share of the journal (j_max_transaction_buffers,
        # FsParams.transaction_divisor); a handle that would take it past starts the commit
        # (add_transaction_credits -> wait_transaction_locked -> jbd2_log_start_commit).
        # A transaction's credits start at the descriptor and commit blocks it may need
        # (jbd2_get_transaction: jbd2_descriptor_blocks_per_trans, one block more than the descriptors of
        # a full transaction), so its buffers end that much sooner.
        self.max_buffers = None
        if p.kind in ("ext3", "ext4"):
            limit = p.journal_blocks // p.transaction_divisor
            self.max_buffers = limit - 1 - -(-limit // jbd2_tags_per_descriptor(p.kind, self.bs))
        self.now = 0.0  # the latest instant the file system reached (due: before every operation)
        self.forced_s: list[float] = []  # commits a full transaction or a full file system forced
        if p.kind == "ext3" and hasattr(alloc, "on_full"):
            alloc.on_full = self.force_commit
        if p.kind == "btrfs":
            self.interval = 30.0
        elif p.kind == "xfs":
            self.interval = 30.0
        else:
            self.interval = p.commit_interval_s

    # -- collecting -------------------------------------------------------------------------------
    def dirty(self, t: float, block, what: str = "buffer", region: int | None = None):
        """``region``: which 128-byte chunk of the buffer the change is in, where changes spread
        over it (an xfs directory block's entries); None: its first."""
        if self.p.kind == "ext2":
            self._inplace(t, [block])
            return
        if self.start is None:
            self.start = t
        self.tx.setdefault(block, what)
        if self.p.kind == "xfs" and region is not None:
            self.regions.setdefault(block, set()).add(region)
        if self.max_buffers is not None and len(self.tx) >= self.max_buffers:
            self.forced_s.append(t)
            self.commit(t)

    def forget(self, t: float, block):
        """A freed metadata block (an ext2/ext3 file's indirect block at its deletion): its dirty
        buffer is dropped unwritten, from the running transaction and from the blocks waiting for
        their checkpoint (fs/ext4/ext4_jbd2.c, __ext4_forget: bforget without a journal; jbd2:
        jbd2_journal_revoke -> jbd2_journal_forget, which clears a checkpointed buffer's dirty
        bit), and jbd2 logs a revoke record for it at the next commit."""
        self.tx.pop(block, None)
        self.inplace.pop(block, None)
        if self.p.kind in ("ext3", "ext4"):
            if self.start is None:
                self.start = t
            self.revokes += 1

    def _inplace(self, t, blocks):
        if not self.inplace and blocks:
            self.inplace_since = t
        for b in blocks:
            self.inplace[b] = None

    def force_commit(self):
        """Commit now (at the latest instant the file system reached): an allocation found the file
        system full while the running transaction freed blocks (ext4_should_retry_alloc ->
        jbd2_journal_force_commit_nested, while s_mb_free_pending), so that they are free again."""
        self.forced_s.append(self.now)
        self.commit(self.now)

    # -- timers -----------------------------------------------------------------------------------
    def due(self, t: float):
        """Commits and write-backs whose time came before ``t``."""
        if t > self.now:
            self.now = t
        if self.start is not None and t >= self.start + self.interval:
            self.commit(self.start + self.interval)
        if self.inplace and self.p.kind != "xfs" and t >= self.inplace_since + self.expire:
            self.write_inplace(self.inplace_since + self.expire, 0)

    def write_inplace(self, t, flags=0):
        for b in sorted(self.inplace):
            self.emit(t, Op.WRITE, b * self.bs, self.bs, int(Flag.META) | flags)
        self.inplace.clear()
        self.inplace_since = None
        self.used = 0

    # -- commits ----------------------------------------------------------------------------------
    def commit(self, t: float, flush_if_empty: bool = False):
        if not self.tx and not self.revokes:
            if flush_if_empty and self.p.barrier:
                self.emit(t, Op.FLUSH, 0, 0, int(Flag.PREFLUSH | Flag.SYNC))
            self.start = None
            return
        kind = self.p.kind
        if kind in ("ext3", "ext4"):
            self._jbd2(t)
            if hasattr(self.alloc, "committed"):  # the blocks the transaction freed (fs_mballoc)
                self.alloc.committed()
        elif kind == "xfs":
            self._xfs(t)
        else:
            self._btrfs(t)
        self.tx.clear()
        self.regions.clear()
        self.revokes = 0
        self.start = None

    def _log_write(self, t, blocks: int, flags: int):
        """``blocks`` at the journal's head, split where it wraps; returns nothing."""
        jb, jn = self.p.journal_block, self.p.journal_blocks
        while blocks > 0:
            n = min(blocks, jn - self.head)
            where, n = self._journal_run(self.head, n)
            self.emit(t, Op.WRITE, (jb + where) * self.bs, n * self.bs, flags)
            self.head = (self.head + n) % jn
            blocks -= n
            self.used += n

    def _journal_run(self, h: int, n: int) -> tuple[int, int]:
        """Where journal block ``h`` is (from the journal's first block) and how many of the ``n``
        from it follow on. ext3's journal is a block-mapped file that mke2fs wrote in order, its
        indirect blocks among its data: 12 direct blocks, the indirect block, ``block_bytes / 4``
        blocks, the double-indirect block, then an indirect block before each ``block_bytes / 4``."""
        if self.p.kind != "ext3" or h < 12:
            return h, min(n, 12 - h) if self.p.kind == "ext3" else n
        per = self.bs // 4
        if h < 12 + per:
            return h + 1, min(n, 12 + per - h)
        k = (h - 12 - per) // per
        return h + 3 + k, min(n, 12 + per + (k + 1) * per - h)

    def _jbd2(self, t):
        if self.sb_pending:
            self.sb_pending = False
            self.emit(t, Op.WRITE, self.p.journal_block * self.bs, self.bs, META)
            t += 1e-9  # waited for (a request of its own, not merged with the log's next block)
        n = len(self.tx)
        desc = -(-n // jbd2_tags_per_descriptor(self.p.kind, self.bs))
        # revoke blocks first (jbd2_journal_write_revoke_records)
        revoke = -(-self.revokes // jbd2_revokes_per_block(self.p.kind, self.bs))
        self._log_write(t, revoke + desc + n, META)
        self._log_write(t, 1, COMMIT if self.p.barrier else META)
        self._inplace(t, [b for b in self.tx])
        if self.used > 3 * self.p.journal_blocks // 4:
            self.write_inplace(t)

    def _xfs(self, t):
        inode_item = 176 + 56 + 2 * 12
        size = sum(inode_item if w == "inode" else 64 + 128 * len(self.regions.get(b, (0,)))
                   for b, w in self.tx.items())
        buf = self.p.log_buffer_bytes
        while size > 0:
            n = min(size, buf)
            n = -(-n // 512) * 512
            blocks = -(-n // self.bs)
            jb, jn = self.p.journal_block, self.p.journal_blocks
            off = (jb + self.head) * self.bs
            self.emit(t, Op.WRITE, off, n, COMMIT if self.p.barrier else META)
            self.head = (self.head + blocks) % jn
            self.used += blocks
            size -= buf
        self._inplace(t, [b if isinstance(b, int) else b[1] for b in self.tx])
        if self.used > 3 * self.p.journal_blocks // 4:
            self.write_inplace(t)

    def _btrfs_nodes(self, n: int, held) -> int:
        """Tree blocks a tree writes for ``n`` changed leaves when its live items fill ``held``
        leaves (None: a tree whose size is not followed, one leaf): the leaves, no more than
        ``held`` (a leaf filled and emptied again inside the transaction is freed before it is ever
        written: fs/btrfs/ctree.c, btrfs_del_leaf -> btrfs_free_tree_block), and above them the
        root when the tree has more than one leaf (a tree of one leaf has that leaf as its root),
        and a level of parents (BTRFS_NODEPTRS_PER_BLOCK: node_bytes less the header, 33 bytes a
        pointer) when it has more leaves than one node points to."""
        if held is None or held <= 1:
            return 1 if n else 0
        n = min(n, held)
        fanout = (self.p.node_bytes - 101) // 33
        return n + 1 + (min(n, -(-held // fanout)) if held > fanout else 0)

    def _btrfs(self, t):
        """Two passes (sync(2): sync_inodes_sb, then sync_fs): first the write-back of the btree
        inode writes the blocks the operations changed (btree_writepages, WB_SYNC_ALL): the fs
        tree's, the checksum tree's, and those a new chunk changed (the chunk tree, the device
        tree, the block group's item and free space). Then the commit changes blocks of its own,
        COWed again where the first pass wrote them (a block written is never changed in place):
        the fs-tree leaf of the directories' inodes (their delayed items: btrfs_run_delayed_items),
        the extent tree's leaves (the delayed references of the transaction's extents,
        btrfs_run_delayed_refs), the free-space tree's leaf, the device tree's leaf at the first
        commit after the mount (the device statistics the mount loaded, btrfs_run_dev_stats), and
        the root tree's leaf (the trees' new roots: commit_cowonly_roots)."""
        by_tree: dict = {}
        for k in self.tx:
            by_tree[k[0]] = by_tree.get(k[0], 0) + 1
        live = self.live_leaves() if self.live_leaves is not None else {}
        nodes = sum(self._btrfs_nodes(n, live.get(tree)) for tree, n in by_tree.items() if tree != "ext")
        nodes += 1 + self._btrfs_nodes(by_tree.get("ext", 1), live.get("ext")) + 1
        if self.dev_stats_pending:
            self.dev_stats_pending = False
            nodes += 1
        if "fs" in by_tree:
            nodes += self._btrfs_nodes(1, live.get("fs"))
        per = self.p.node_bytes // self.bs
        # Each tree block goes out as a bio of its own (fs/btrfs/extent_io.c, write_one_eb), the
        # blocks in no order the queue could merge: one request per node and copy.
        k = 0
        for copy in range(max(1, self.p.metadata_copies)):
            first = self.alloc.metadata(nodes * per)
            for i in range(nodes):
                self.emit(t + k * 1e-9, Op.WRITE, (first + i * per) * self.bs, self.p.node_bytes, META)
                k += 1
        t_end = t + k * 1e-9
        if self.p.barrier:
            self.emit(t_end, Op.FLUSH, 0, 0, int(Flag.PREFLUSH | Flag.SYNC))
        for i, off in enumerate(self.p.superblocks()):
            fua = int(Flag.FUA) if i == 0 and self.p.barrier else 0
            self.emit(t_end, Op.WRITE, off, 4096, META | fua)
