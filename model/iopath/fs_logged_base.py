"""What jfs and reiserfs share in the I/O path: their files, block placement, cached metadata and
in-place metadata write-back (the kinds: :mod:`.fs_jfs`, :mod:`.fs_reiserfs`; the driver: :mod:`.fs_logged`)."""

from __future__ import annotations

from bisect import bisect_right

from .fs_layout import FsParams
from .stream import Flag, Op

__all__ = ["LOGGED_KINDS", "META", "SYNC", "Logged", "File"]

LOGGED_KINDS = ("jfs", "reiserfs")
META = int(Flag.META)
SYNC = int(Flag.SYNC)


def _first(run) -> int:
    return run[0]


class File:
    __slots__ = ("dir", "ino", "runs", "blocks", "tail", "grown", "key")  # tail: bytes kept in a leaf

    def __init__(self, d: int, ino: int, key: int):
        self.dir, self.ino, self.key = d, ino, key
        self.runs: list[list[int]] = []  # [file_block, count, device_block], by file block
        self.blocks = 0
        self.tail = 0
        self.grown = 0  # jfs: extents added since the inode was last committed


class Logged:
    """The state both kinds share: files, placement, cached metadata, dirty in-place blocks."""

    def __init__(self, p: FsParams, data_bios, dirty_expire_s: float):
        self.p, self.bs, self.data_bios, self.expire = p, p.block_bytes, data_bios, dirty_expire_s
        self.total = p.device_bytes // p.block_bytes
        self.rows: list[tuple] = []
        self.latest = 0.0
        self.files: dict[int, File] = {}
        self.read_meta: set = set()
        self.inplace: dict[int, None] = {}
        self.inplace_since = None
        self.entries: dict[int, int] = {}  # directory -> entries ever made
        self.next_key = 0
        self.cursor: dict[int, int] = {}

    def check_journal(self, blocks: int):
        """Refuse a journal (log) that leaves less than half the device to the rest."""
        if blocks * 2 > self.total:
            raise ValueError(f"file system: journal_size_bytes = {self.p.journal_bytes or blocks * self.bs} leaves "
                             f"too little of a {self.p.device_bytes}-byte device: give at most half of it")

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
    def map(self, f: File, fb0: int, fb1: int) -> list[tuple[int, int]]:
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

    def allocate(self, t, f: File, fb0: int, fb1: int):
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

    def write_call(self, t, f: File, off: int, size: int):
        """A ``write()``: the blocks it reaches past the file's end are allocated now
        (jfs_get_block, reiserfs_get_block from write_begin), in the order of the calls."""
        if self.tail_write(t, f, off, size):
            return
        fb0, fb1 = off // self.bs, -(-(off + size) // self.bs)
        before = self.map(f, fb0, fb1)
        self.allocate(t, f, fb0, fb1)
        if sum(n for _, n in before) < fb1 - fb0:
            self.new_blocks(t, f, fb0, fb1, {b for db, n in before for b in range(db, db + n)})

    def tail_candidate(self, f: File, off: int, size: int) -> bool:
        return False

    def new_blocks(self, t, f: File, fb0: int, fb1: int, old: set):
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

    def new_file(self, f: int, d: int) -> File:
        n = self.entries.get(d, 0)
        self.entries[d] = n + 1
        file = File(d, n, self.next_key)
        self.next_key += 1
        self.files[f] = file
        return file

    def placed(self, f: File):
        """A file's place among the metadata (reiserfs counts a leaf's items)."""

    def due(self, t):
        if self.inplace and t >= self.inplace_since + self.expire:
            self.write_inplace(self.inplace_since + self.expire)


