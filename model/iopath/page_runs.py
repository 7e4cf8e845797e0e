"""A set of page numbers as runs: the page cache's record of a file's cached and dirty pages
(:mod:`.pagecache`)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

__all__ = ["Pages"]


class Pages:
    """A set of pages as sorted, disjoint, non-touching runs ``[start, end)``: its cost follows the
    number of runs, not the file's size."""

    __slots__ = ("s", "e", "n")

    def __init__(self):
        self.s, self.e, self.n = [], [], 0

    def __bool__(self) -> bool:
        return self.n > 0

    def copy(self) -> "Pages":
        out = Pages()
        out.s, out.e, out.n = list(self.s), list(self.e), self.n
        return out

    def has(self, p: int) -> bool:
        i = bisect_right(self.s, p) - 1
        return i >= 0 and self.e[i] > p

    def runs(self, lo: int = 0, hi: int | None = None) -> list:
        """The runs within ``[lo, hi)`` (``hi`` None: no upper bound), lowest first."""
        if hi is not None and hi <= lo:
            return []
        i = bisect_right(self.e, lo)
        out = []
        s, e = self.s, self.e
        while i < len(s) and (hi is None or s[i] < hi):
            out.append((max(s[i], lo), e[i] if hi is None else min(e[i], hi)))
            i += 1
        return out

    def before(self, p: int, limit: int) -> tuple[int, bool]:
        """How many pages of the set lie right before page ``p`` without a gap (at most ``limit``), and
        whether they reach page 0 (page_cache_prev_miss found no hole within ``limit``)."""
        i = bisect_right(self.s, p - 1) - 1
        if i < 0 or self.e[i] < p:
            return 0, False
        n = p - self.s[i]
        return min(n, limit), n <= limit and self.s[i] == 0

    def missing(self, a: int, b: int) -> list:
        """The runs of ``[a, b)`` not in the set, lowest first."""
        out, cur = [], a
        for s, e in self.runs(a, b):
            if s > cur:
                out.append((cur, s))
            cur = e
        if cur < b:
            out.append((cur, b))
        return out

    def add(self, a: int, b: int) -> int:
        """Add ``[a, b)``; the number of pages newly in the set."""
        if b <= a:
            return 0
        i, j = bisect_left(self.e, a), bisect_right(self.s, b)
        old = sum(self.e[k] - self.s[k] for k in range(i, j))
        ns = min(a, self.s[i]) if i < j else a
        ne = max(b, self.e[j - 1]) if i < j else b
        self.s[i:j], self.e[i:j] = [ns], [ne]
        added = (ne - ns) - old
        self.n += added
        return added

    def remove(self, a: int, b: int) -> int:
        """Take ``[a, b)`` out; the number of pages that were in the set."""
        if b <= a:
            return 0
        i, j = bisect_right(self.e, a), bisect_left(self.s, b)
        if i >= j:
            return 0
        keep_s, keep_e, gone = [], [], 0
        for k in range(i, j):
            s, e = self.s[k], self.e[k]
            gone += min(e, b) - max(s, a)
            if s < a:
                keep_s.append(s)
                keep_e.append(a)
            if e > b:
                keep_s.append(b)
                keep_e.append(e)
        self.s[i:j], self.e[i:j] = keep_s, keep_e
        self.n -= gone
        return gone
