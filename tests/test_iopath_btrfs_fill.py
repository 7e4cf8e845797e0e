"""Where model/iopath/fs_meta.py's RANDOM_FILL comes from: leaves of hash-keyed btrfs items filled the
way fs/btrfs/ctree.c fills them. A full leaf first pushes items to its right neighbour
(__push_leaf_right: the items at and after the insertion slot, as many as the neighbour holds, and
not over half its free space when the new item would go along), then to its left one
(__push_leaf_left: the items before the slot), and only then splits in the middle (split_leaf).
Items of one size: a leaf holds ``cap`` of them."""

from __future__ import annotations

import bisect
import random
import statistics

from diskmodel.model.iopath.fs_meta import RANDOM_FILL


def _push_right(n: int, s: int, free: int) -> int:
    """Items __push_leaf_right moves from a full leaf of ``n`` (the new item's slot ``s``) to a
    neighbour with room for ``free``: from the end, not past the slot once one moved, never item 0."""
    push, space = 0, (1 if s >= n else 0)
    for i in range(n - 1, 0, -1):
        if push and (s > i or (s == i and 2 * space > free)):
            break
        space += s == i
        if 1 + space > free:
            break
        push, space = push + 1, space + 1
    return push


def _push_left(n: int, s: int, free: int) -> int:
    """Items __push_leaf_left moves to the left neighbour: from the start, not past the slot once one
    moved, never the last."""
    push = space = 0
    for i in range(n - 1):
        if push and (s < i or (s == i and 2 * space > free)):
            break
        space += s == i
        if 1 + space > free:
            break
        push, space = push + 1, space + 1
    return push


def _fill(n: int, cap: int, seed: int) -> float:
    rnd = random.Random(seed)
    leaves: list[list[float]] = [[]]
    for key in (rnd.random() for _ in range(n)):
        i = bisect.bisect_left([leaf[-1] for leaf in leaves[:-1]], key)
        leaf = leaves[i]
        s = bisect.bisect_left(leaf, key)
        if len(leaf) == cap and i + 1 < len(leaves) and len(leaves[i + 1]) < cap:
            k = _push_right(cap, s, cap - len(leaves[i + 1]))
            if k:
                leaves[i + 1][0:0] = leaf[cap - k:]
                del leaf[cap - k:]
                if s >= len(leaf):
                    i, s = i + 1, s - len(leaf)
                    leaf = leaves[i]
        if len(leaf) == cap and i > 0 and len(leaves[i - 1]) < cap:
            k = _push_left(cap, s, cap - len(leaves[i - 1]))
            if k:
                before = len(leaves[i - 1])
                leaves[i - 1].extend(leaf[:k])
                del leaf[:k]
                if s < k:
                    i, s = i - 1, before + s
                    leaf = leaves[i]
                else:
                    s -= k
        if len(leaf) == cap:  # split_leaf: in the middle
            mid = (cap + 1) // 2
            leaves.insert(i + 1, leaf[mid:])
            del leaf[mid:]
            if s >= mid:
                leaf, s = leaves[i + 1], s - mid
        leaf.insert(s, key)
        assert len(leaf) <= cap
    return n / (len(leaves) * cap)


def test_hash_keyed_leaves_fill_as_random_fill_says():
    # 258 directory items of an 8-byte name a leaf (fs_meta: 16,283 bytes of 63-byte items).
    fills = [_fill(n, 258, seed) for n in (2000, 5000, 10000) for seed in range(4)]
    assert abs(statistics.mean(fills) - RANDOM_FILL) < 0.03, statistics.mean(fills)
    # Well above a B-tree's ln 2 (0.69): the pushes are what fill the leaves.
    assert min(fills) > 0.75, min(fills)
