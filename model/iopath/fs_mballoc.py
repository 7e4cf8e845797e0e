"""ext2/ext3 block allocation with free space: mballoc's buddy scans over each group's bitmap, so
freed blocks are taken again (fs/ext4/mballoc.c, the ext4 driver serving block-mapped files).

:class:`MballocAllocator` keeps each group's free blocks (a bitmap, built when the group is first
touched) and places blocks as mballoc's criteria do, in groups scanned linearly from the goal's
(ext4_mb_scan_groups_linear; block-mapped files are never scanned by the optimized lists):

- **power-of-two requests** (criterion CR_POWER2_ALIGNED, ext4_mb_simple_scan_group): the lowest
  free buddy of the smallest order at least the request's, in the first group whose largest free
  order reaches it;
- **other requests** (CR_GOAL_LEN_FAST, ext4_mb_complex_scan_group): in a group whose average free
  run (free blocks over free runs, ext4_mb_good_group) is at least the request, the free extents
  from the group's first free block, each as mb_find_extent measures it (the free buddies from
  there until the request is met or the run ends), runs shorter than the request skipped; an extent
  of exactly the request's length is taken at once, else the smallest one longer, once more than
  ``s_mb_min_to_scan`` (10) were seen or at the group's end (ext4_mb_measure_extent,
  ext4_mb_check_limits); then CR_GOAL_LEN_SLOW the same without skipping, in a group with at least
  the request's free blocks; then CR_ANY_FREE in any group with a free block, which takes the best
  extent seen when none is as long as the request (ext4_mb_try_best_found: a request longer than
  any group's free space, such as a 1 KiB-block group's whole 8192 blocks, is served in parts). The mount's first
  allocation finds every group's buddy not loaded, which the cheap criteria skip
  (ext4_mb_good_group_nolock), so it is served by CR_GOAL_LEN_SLOW;
- **an indirect block** (ext4_alloc_branch -> ext4_new_meta_blocks: one block, no data hint) and a
  directory's new block: a one-block request in the group of its goal (ext4_find_near: the block
  the previous pointer names, the file's last mapped block), so the first single free block after
  the group's first free one wins, a hole another file left;
- **file blocks** past ``s_mb_stream_request`` come from the file's inode preallocation
  (ext4_mb_use_inode_pa) while its logical range holds them, else from a new normalized window
  (:func:`~.fs_layout.mballoc_window`, trimmed at the end of the file's nearest preallocation
  that still has blocks: ext4_mb_pa_adjust_overlap) sought from the stream goal; up to it from the
  locality group's 512-block preallocation in the inode's group.

Blocks return to free space:

- a preallocation's blocks the file did not take when the file is closed
  (ext4_release_file -> ext4_discard_preallocations -> ext4_mb_release_inode_pa, at once); the
  model closes a file when the next allocation is another file's (one writer at a time), and at
  its deletion;
- a deleted file's blocks and indirect blocks (ext4_free_blocks): at once on ext2; on ext3 at the
  commit of the transaction that freed them (ext4_mb_free_metadata keeps them out of the buddy
  until jbd2's commit callback, ext4_process_freed_data), so a transaction cannot reuse them; an
  allocation that finds no free blocks while some wait so commits the transaction and scans again
  (ext4_should_retry_alloc forces the commit while s_mb_free_pending).
"""

from __future__ import annotations

import numpy as np

from .fileops import FileOps, Kind
from .fs_layout import MB_GROUP_PREALLOC_BLOCKS, MB_STREAM_REQUEST_BLOCKS, Allocator, FsParams, mballoc_window

__all__ = ["MballocAllocator", "allocating_writes"]

#: mballoc's scan limits (ext4_mb_init: s_mb_min_to_scan, s_mb_max_to_scan) and its highest buddy
#: order for 4 KiB blocks (MB_NUM_ORDERS - 1: blocksize_bits + 1).
MB_MIN_TO_SCAN = 10
MB_MAX_TO_SCAN = 200
_POWER2, _FAST, _SLOW, _ANY = 0, 1, 2, 3


class _Pa:
    """An inode preallocation: logical blocks [lstart, lstart + length) at device block pstart;
    the file took [lo, hi) of them."""

    __slots__ = ("lstart", "pstart", "length", "lo", "hi")

    def __init__(self, lstart, pstart, length, lo):
        self.lstart, self.pstart, self.length, self.lo, self.hi = lstart, pstart, length, lo, lo

    @property
    def lend(self):
        return self.lstart + self.length

    def left(self) -> int:
        return self.length - (self.hi - self.lo)


class MballocAllocator(Allocator):
    """:class:`~.fs_layout.Allocator` for ext2 and ext3 with free space (see the module docstring)."""

    def __init__(self, p: FsParams):
        super().__init__(p)
        self.max_order = min(p.block_bytes.bit_length(), self.group_blocks.bit_length() - 1)
        self._bitmaps: dict[int, np.ndarray] = {}  # group -> free blocks (True: free)
        self._nfree: dict[int, int] = {}  # group -> its free blocks (bb_free)
        self._nfrag: dict[int, int] = {}  # group -> its free runs (bb_fragments)
        self.pending: list[tuple[int, int]] = []  # ext3: freed in the running transaction
        self.on_full = None  # ext3: commits the running transaction (set by the journal)
        self.pas: dict[object, list[_Pa]] = {}
        self.open_owner = None
        self.loaded = False  # the mount's first allocation has loaded the buddies

    # -- free space -------------------------------------------------------------------------------
    def _bitmap(self, g: int) -> np.ndarray:
        f = self._bitmaps.get(g)
        if f is None:
            base = g * self.group_blocks
            f = np.zeros(self.group_blocks, bool)
            f[self.cursor[g] - base:self._group_end(g) - base] = True  # past the group's metadata
            if g == self.journal_group and self.journal_hi > self.journal_lo:
                f[max(self.journal_lo - base, 0):self.journal_hi - base] = False
            self._bitmaps[g] = f
            self._nfree[g] = int(f.sum())
            self._nfrag[g] = self._frags(f, 0, f.size)
        return f

    @staticmethod
    def _frags(f: np.ndarray, a: int, b: int) -> int:
        """Free runs of ``f`` starting in [a, b)."""
        seg = f[a:b]
        starts = int(np.count_nonzero(seg[1:] & ~seg[:-1]))
        return starts + bool(seg[0] and (a == 0 or not f[a - 1])) if seg.size else 0

    def _mark(self, start: int, n: int, free: bool):
        while n > 0:
            g = start // self.group_blocks
            rel = start - g * self.group_blocks
            k = min(n, self.group_blocks - rel)
            f = self._bitmap(g)
            was = int(np.count_nonzero(f[rel:rel + k]))
            if was == (0 if free else k):
                # the whole range turns over: its two neighbours alone decide the free runs (a freed
                # range joins a free neighbour's run; a taken one splits its run where both are free)
                d = 1 - (rel > 0 and bool(f[rel - 1])) - (rel + k < f.size and bool(f[rel + k]))
                f[rel:rel + k] = free
                self._nfrag[g] += d if free else -d
            else:
                lo, hi = max(rel - 1, 0), min(rel + k + 1, f.size)
                before = self._frags(f, lo, hi)
                f[rel:rel + k] = free
                self._nfrag[g] += self._frags(f, lo, hi) - before
            self._nfree[g] += (k - was) if free else -was
            start, n = start + k, n - k

    def release(self, runs, journaled: bool):
        """Free device runs ``[(block, count), ...]`` of a deleted file: at once, or (``journaled``)
        at the next commit (:meth:`committed`)."""
        if journaled:
            self.pending.extend(runs)
        else:
            for b, n in runs:
                self._mark(b, n, True)

    def committed(self):
        """jbd2 committed the transaction: the blocks it freed are free (ext4_process_freed_data)."""
        for b, n in self.pending:
            self._mark(b, n, True)
        self.pending.clear()

    def close(self, owner):
        """The file ``owner`` is closed (or deleted): its preallocations' untaken blocks are freed."""
        for pa in self.pas.pop(owner, ()):
            self._mark(pa.pstart, pa.lo - pa.lstart, True)
            self._mark(pa.pstart + pa.hi - pa.lstart, pa.lend - pa.hi, True)
        if self.open_owner == owner:
            self.open_owner = None

    @staticmethod
    def _runs(f: np.ndarray):
        """The free runs ``(first, end)`` of bitmap ``f`` in order, found as they are asked for."""
        i, size = 0, f.size
        while i < size:
            a = i + int(f[i:].argmax())
            if not f[a]:
                return
            rest = f[a:]
            m = int(rest.argmin())  # the first used block after a; where there is none, argmin is 0
            b = a + m if not rest[m] else size
            yield a, b
            i = b

    def _order(self, i: int, end: int) -> int:
        """The order of the free buddy at group block ``i`` of a free run ending at ``end``."""
        o = min((i & -i).bit_length() - 1 if i else self.max_order, self.max_order)
        while (1 << o) > end - i:
            o -= 1
        return o

    # -- the scans ---------------------------------------------------------------------------------
    def _simple_scan(self, g: int, order: int):
        """ext4_mb_simple_scan_group: the lowest free buddy of the smallest order >= ``order``."""
        f = self._bitmap(g)
        full = {order: f.reshape(-1, 1 << order).all(axis=1)}
        for o in range(order, self.max_order):
            full[o + 1] = full[o][0::2] & full[o][1::2]
        for o in range(order, self.max_order + 1):
            exact = full[o] if o == self.max_order else full[o] & ~np.repeat(full[o + 1], 2)
            hit = int(exact.argmax())
            if exact[hit]:
                return hit << o
        return None

    def _complex_scan(self, g: int, need: int, skip_short: bool, state: dict) -> bool:
        """ext4_mb_complex_scan_group with ext4_mb_measure_extent and ext4_mb_check_limits;
        ``state`` carries the allocation context's best extent and count across groups. Returns
        whether the search is over (an extent chosen in ``state['best']``)."""
        base = g * self.group_blocks
        for a, b in self._runs(self._bitmap(g)):
            if skip_short and b - a < need:
                continue
            i = a
            while i < b:
                length, x = 0, i
                while length < need and x < b:
                    step = 1 << self._order(x, b)
                    length, x = length + step, x + step
                state["found"] += 1
                best = state["best"]
                if length == need:
                    state["best"] = (base + i, length)
                    return True
                if best is None or (best[1] < need and length > best[1]) or (need < length < best[1]):
                    state["best"] = best = (base + i, length)
                if state["found"] > MB_MAX_TO_SCAN:
                    return True
                if best[1] >= need and state["found"] > MB_MIN_TO_SCAN:
                    return True
                i += length
                if skip_short and b - i < need:
                    break
        return state["best"] is not None and state["best"][1] >= need  # the group's end

    def _find(self, need: int, goal_group: int) -> tuple[int, int]:
        """mballoc's search for ``need`` blocks from ``goal_group`` (see the module docstring):
        ``(first block, blocks)``, marked used; fewer blocks where no free run is long enough."""
        if not self.loaded:
            self.loaded = True
            criteria = (_SLOW, _ANY)
        elif need >= 2 and need & (need - 1) == 0:
            criteria = (_POWER2, _FAST, _SLOW, _ANY)
        else:
            criteria = (_FAST, _SLOW, _ANY)
        state = {"found": 0, "best": None}
        for cr in criteria:
            for k in range(self.groups):
                g = (goal_group + k) % self.groups
                self._bitmap(g)
                free = self._nfree[g]
                if free < (1 if cr in (_FAST, _ANY) else need):  # ext4_mb_good_group
                    continue
                if cr == _POWER2:
                    rel = self._simple_scan(g, need.bit_length() - 1)
                    if rel is not None:
                        return self._take(g * self.group_blocks + rel, need)
                    continue
                if cr == _FAST and free // max(self._nfrag[g], 1) < need:
                    continue
                if self._complex_scan(g, need, cr == _FAST, state):
                    start, length = state["best"]
                    return self._take(start, min(length, need))
        if state["best"] is None:
            if self.pending and self.on_full is not None:  # ext3: the commit frees them (Journal.force_commit)
                self.on_full()
                if not self.pending:  # freed by the commit's callback (committed): scan once more
                    return self._find(need, goal_group)
            raise ValueError(f"file system: device_bytes = {self.p.device_bytes} is full ({self.p.kind})")
        start, length = state["best"]
        return self._take(start, min(length, need))

    def _take(self, start: int, n: int) -> tuple[int, int]:
        self._mark(start, n, False)
        return start, n

    # -- what the file system asks for ------------------------------------------------------------
    def meta_block(self, goal: int) -> int:
        """One block for an indirect block or a directory, near device block ``goal``."""
        return self._find(1, min(max(goal, 0), self.total_blocks - 1) // self.group_blocks)[0]

    def data(self, group: int, n: int, after: int | None) -> list[tuple[int, int]]:
        """``n`` blocks without a window (a directory's block; a large sparse file's blocks, the
        request at the goal ``after``, mballoc's last normalization case)."""
        if n == 1 and after is None:
            return [(self.meta_block(group * self.group_blocks), 1)]
        out = []
        while n > 0:
            if after is not None and after < self.total_blocks and self._bitmap(after // self.group_blocks)[
                    after % self.group_blocks]:
                g, rel = divmod(after, self.group_blocks)
                f = self._bitmap(g)
                run = int(np.argmin(f[rel:])) if not f[rel:].all() else self.group_blocks - rel
                db, k = self._take(after, min(n, run))
            else:
                db, k = self._find(n, group if after is None else after // self.group_blocks)
            out.append((db, k))
            n, after = n - k, db + k
        return out

    def _group_prealloc_window(self, group: int) -> tuple[int, int]:
        """The locality group's next preallocation: ``s_mb_group_prealloc`` blocks found by mballoc's scans."""
        return self._find(MB_GROUP_PREALLOC_BLOCKS, group)

    def block_mapped(self, group: int, block: int, n: int, after: int | None,
                     size_blocks: int = 0, owner=None) -> list[tuple[int, int]]:
        """Device runs for file blocks ``[block, block + n)`` of the block-mapped file ``owner``
        (see the module docstring). ``size_blocks``: the file's size (i_size) in blocks where it is
        larger than what is written (a sparse file): past 8 MiB mballoc does not normalize (its
        last case: the request as it is, at the goal ``after``) and uses no locality group."""
        if owner != self.open_owner:
            if self.open_owner is not None:
                self.close(self.open_owner)
            self.open_owner = owner
        if size_blocks * self.p.block_bytes > 8 << 20:
            return self.data(group, n, after)
        pas = self.pas.setdefault(owner, [])
        out = []
        while n > 0:
            if block < MB_STREAM_REQUEST_BLOCKS:
                take = min(n, MB_STREAM_REQUEST_BLOCKS - block)
                runs = self._from_group_prealloc(group, take)
            else:
                pa = next((q for q in pas if q.lstart <= block < q.lend and q.left() > 0), None)
                if pa is None:
                    pa = self._window(block, pas)
                    pas.append(pa)
                take = min(n, pa.lend - block)
                if pa.hi != block:  # a file written out of order takes its blocks from here on
                    pa.lo = block
                pa.hi = block + take
                runs = [(pa.pstart + block - pa.lstart, take)]
            for db, k in runs:
                if out and out[-1][0] + out[-1][1] == db:
                    out[-1] = (out[-1][0], out[-1][1] + k)
                else:
                    out.append((db, k))
            block += take
            n -= take
        return out

    def _window(self, block: int, pas: list[_Pa]) -> _Pa:
        """A new inode preallocation for file block ``block``: its normalized window
        (ext4_mb_normalize_request) less what the file's preallocations below it that still have
        blocks cover (Linux 6.18; 6.1, ``used_prealloc_bounds``: less the blocks the file has),
        sought from the stream goal, which moves to the group it lands in (s_mb_last_groups)."""
        first, end = mballoc_window(block, self.p.block_bytes)
        if self.p.used_prealloc_bounds:
            lo = first
        else:
            lo = self._window_start(block)
            for q in pas:
                if q.left() > 0 and q.lend <= block:
                    lo = max(lo, q.lend)
        start, got = self._find(end - lo, self.stream_group)
        self.stream_group = start // self.group_blocks
        if got <= block - lo:  # a shorter extent than asked: it starts at the file's block
            lo = block
        return _Pa(lo, start, got, block)


def allocating_writes(workload: FileOps) -> list[tuple[float, int, int, int]]:
    """The ``write()`` calls of ``workload`` as ``(time, file, offset, size)``, latest first. The
    kernel's ext4 driver serves ext2 and ext3 without delayed allocation (fs/ext4/super.c,
    ext4_set_def_opts: DELALLOC only when the file system is not mounted as ext2 or ext3), so
    ``write()`` allocates the blocks (ext4_write_begin -> ext4_get_block -> ext4_map_blocks) and
    dirties the bitmaps, descriptors, indirect blocks and inode at once, whether or not the pages
    are ever written back: a file deleted while its pages are dirty has had its blocks. The model
    places each call's blocks at its time, in the order mballoc saw them (reusing the blocks
    deleted files free); write-back finds them placed."""
    w = workload.kind == Kind.WRITE
    rows = zip(workload.time_s[w].tolist(), workload.file[w].tolist(), workload.offset_bytes[w].tolist(),
               workload.size_bytes[w].tolist())
    return sorted(((t, f, o, n) for t, f, o, n in rows if n), key=lambda r: -r[0])
