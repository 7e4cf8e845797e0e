"""Vectorised splitting and assembly shared by the block layers (numpy only).

The split functions take the byte ranges of the ranged requests (reads, writes, discards) and return,
per piece, the index of the request it came from plus its offset and size; pieces of one request come
out in address order, requests in input order.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .stream import Flag, Op, Stream, concat

__all__ = [
    "split_periodic",
    "split_at",
    "split_max",
    "ranged",
    "flushes_of",
    "strip_preflush",
    "positive_int",
    "device_names",
    "route",
]


def positive_int(layer: str, name: str, value) -> int:
    """``value`` as an int > 0, or one ValueError line naming the layer's parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{layer}: {name} = {value!r} must be a positive integer")
    return int(value)


def device_names(layer: str, devices, minimum: int) -> list[str]:
    """The member device names (distinct strings), at least ``minimum`` of them."""
    names = [str(d) for d in devices]
    if len(names) < minimum:
        raise ValueError(f"{layer}: devices = {names!r} needs at least {minimum} devices")
    if len(set(names)) != len(names):
        raise ValueError(f"{layer}: devices = {names!r} names a device twice")
    return names


def _pieces(n: np.ndarray):
    """Per piece: the request index and the piece's number within its request."""
    idx = np.repeat(np.arange(n.size, dtype=np.int64), n)
    k = np.arange(idx.size, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    return idx, k


def split_periodic(off: np.ndarray, size: np.ndarray, unit: int):
    """Split each range at the multiples of ``unit`` (boundaries anchored at address 0)."""
    first = off // unit
    last = (off + size - 1) // unit
    idx, k = _pieces(last - first + 1)
    start = np.maximum(off[idx], (first[idx] + k) * unit)
    end = np.minimum(off[idx] + size[idx], (first[idx] + k + 1) * unit)
    return idx, start, end - start


def split_at(off: np.ndarray, size: np.ndarray, bounds: np.ndarray):
    """Split each range at the sorted addresses ``bounds`` that fall strictly inside it."""
    end = off + size
    lo = np.searchsorted(bounds, off, side="right")
    hi = np.searchsorted(bounds, end, side="left")
    idx, k = _pieces(np.maximum(hi - lo, 0) + 1)
    n_cut = bounds.size
    at = lo[idx] + k  # the bound after this piece's start
    start = np.where(k == 0, off[idx], bounds[np.clip(at - 1, 0, max(n_cut - 1, 0))] if n_cut else 0)
    is_last = at >= hi[idx]
    stop = np.where(is_last, end[idx], bounds[np.clip(at, 0, max(n_cut - 1, 0))] if n_cut else 0)
    return idx, start, stop - start


def split_max(off: np.ndarray, size: np.ndarray, max_bytes: int):
    """Split each range into pieces of ``max_bytes`` counted from its own start (the last shorter)."""
    idx, k = _pieces((size + max_bytes - 1) // max_bytes)
    start = off[idx] + k * max_bytes
    return idx, start, np.minimum(max_bytes, off[idx] + size[idx] - start)


def ranged(stream: Stream) -> np.ndarray:
    """Indices of the requests that carry a byte range (everything but flushes)."""
    return np.flatnonzero(stream.op != Op.FLUSH)


def flushes_of(stream: Stream) -> Stream:
    """An empty flush for every flush request and every request carrying REQ_PREFLUSH: a stacking
    driver sends such a flush to each member before the data (block/blk-flush.c's flush sequence;
    md_flush_request in drivers/md/md.c; __send_empty_flush in drivers/md/dm.c)."""
    i = np.flatnonzero((stream.op == Op.FLUSH) | ((stream.flags & Flag.PREFLUSH) != 0))
    n = i.size
    return Stream(
        stream.time_s[i],
        np.full(n, Op.FLUSH, np.int8),
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
        stream.flags[i] & (Flag.SYNC | Flag.META),
        i,
    )


def strip_preflush(flags: np.ndarray) -> np.ndarray:
    """The flags of a request's data part once its preflush went out as a separate flush."""
    return (flags & ~np.int16(Flag.PREFLUSH)).astype(np.int16)


def route(names: Sequence[str], parts: Sequence[tuple[np.ndarray | None, Stream]]) -> dict[str, Stream]:
    """One stream per device from ``(device number per request, stream)`` parts (``None``: every
    device gets the part, as flushes). Each device's stream is ordered by parent (the input order),
    then by part, then as within the part; parentless requests go last, by time. One sort for all
    devices instead of a mask per device."""
    n_dev = len(names)
    devs, streams, ranks = [], [], []
    for rank, (dev, s) in enumerate(parts):
        if dev is None:
            dev = np.repeat(np.arange(n_dev, dtype=np.int64), len(s))
            s = s.take(np.tile(np.arange(len(s)), n_dev))
        devs.append(np.asarray(dev, np.int64))
        streams.append(s)
        ranks.append(np.full(len(s), rank, np.int64))
    s = concat(streams)
    dev = np.concatenate(devs) if devs else np.zeros(0, np.int64)
    rank = np.concatenate(ranks) if ranks else np.zeros(0, np.int64)
    n_rank = len(parts)
    top = int(s.parent.max()) + 1 if len(s) else 0
    if len(s) and s.parent.min() >= 0 and (n_dev + 1) * (top + 1) * n_rank < 2**62:
        # One stable sort of a combined key: far faster than np.lexsort on large streams.
        order = np.argsort((dev * (top + 1) + s.parent) * n_rank + rank, kind="stable")
    else:
        key = np.where(s.parent < 0, np.iinfo(np.int64).max, s.parent)
        late = np.where(s.parent < 0, s.time_s, 0.0)
        order = np.lexsort((rank, late, key, dev))
    s = s.take(order)
    cuts = np.searchsorted(dev[order], np.arange(n_dev + 1))
    return {name: s.take(slice(cuts[j], cuts[j + 1])) for j, name in enumerate(names)}
