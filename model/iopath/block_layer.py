"""The block layer's own reshaping of a device's stream: splitting and merging.

Splitting (block/blk-merge.c, bio_split_rw / get_max_io_size): a read or write larger than the
queue's ``max_sectors_kb`` is cut into pieces of that size from its start, and with a chunk size
(``chunk_sectors``, set by md and zoned devices) it is first cut at every chunk boundary
(blk_chunk_sectors_left). Discards are split only when ``max_discard_bytes`` is given
(bio_split_discard, the queue's max_discard_sectors). Flushes pass unchanged.

Merging (block/blk-merge.c, blk_attempt_plug_merge, elv_merge / blk_mq_sched_try_merge): requests
of the same operation issued within one plug or queue window merge when one ends where the other
starts (a back merge or a front merge), as long as the result stays within ``max_sectors_kb``
(ll_back_merge_fn / ll_front_merge_fn). Requests carrying REQ_FUA or REQ_PREFLUSH never merge
(REQ_NOMERGE_FLAGS), and neither do flushes or discards here (discard merging is left out), nor
a dm-thin pool's provisioning writes (``Flag.ALLOC``: the pool's worker issues each on its own
once its block is allocated, outside any plug, :mod:`.dm_thin`). A pool's zero-fills
(``Flag.ZERO``) are issued by dm-kcopyd's thread, whose do_work runs its queued jobs under one
plug of its own: they merge with each other (new blocks are allocated in order, so a batch's
zero-fills are contiguous), never with the writes of the task that sent the volume its bios.
A window is the interval ``[k * window_s, (k + 1) * window_s)`` of issue time (with ``window_s = 0``,
consecutive requests issued at the same instant: one plug). Within a window requests are merged in address
order, as the elevator's sorted queue meets them, greedily from the lowest address up to the size
limit. The queue's max_segments limit is not modelled.
"""

from __future__ import annotations

import numpy as np

from ._split import positive_int, split_max, split_periodic
from .stream import Flag, Op, Stream, concat

__all__ = ["split", "merge"]


def split(stream: Stream, max_sectors_kb: int, chunk_bytes: int | None = None, max_discard_bytes: int | None = None) -> Stream:
    """``stream`` as the device receives it after the block layer's splits; ``parent`` is the input index."""
    max_bytes = positive_int("block layer", "max_sectors_kb", max_sectors_kb) * 1024
    rw = np.flatnonzero((stream.op == Op.READ) | (stream.op == Op.WRITE))
    off, size, src = stream.offset_bytes[rw], stream.size_bytes[rw], rw
    if chunk_bytes is not None:
        chunk_bytes = positive_int("block layer", "chunk_bytes", chunk_bytes)
        idx, off, size = split_periodic(off, size, chunk_bytes)
        src = src[idx]
    idx, off, size = split_max(off, size, max_bytes)
    src = src[idx]
    parts = [Stream(stream.time_s[src], stream.op[src], off, size, stream.flags[src], src)]
    disc = np.flatnonzero(stream.op == Op.DISCARD)
    if max_discard_bytes is not None:
        max_discard = positive_int("block layer", "max_discard_bytes", max_discard_bytes)
        idx, doff, dsize = split_max(stream.offset_bytes[disc], stream.size_bytes[disc], max_discard)
        d = disc[idx]
        parts.append(Stream(stream.time_s[d], stream.op[d], doff, dsize, stream.flags[d], d))
    else:
        parts.append(stream.take(disc).replace(parent=disc))
    fl = np.flatnonzero(stream.op == Op.FLUSH)
    parts.append(stream.take(fl).replace(parent=fl))
    out = concat(parts)
    return out.take(np.argsort(out.parent, kind="stable"))


def _windows(time_s: np.ndarray, window_s: float) -> np.ndarray:
    if window_s > 0:
        return np.floor(time_s / window_s).astype(np.int64)
    # Runs of one issue instant: a stream in issue order has equal times next to each other.
    change = np.ones(time_s.size, bool)
    change[1:] = time_s[1:] != time_s[:-1]
    return np.cumsum(change) - 1


def merge(stream: Stream, max_sectors_kb: int, window_s: float = 0.0) -> Stream:
    """``stream`` after merging (see the module docstring). Each output request's ``parent`` is the
    input index of its earliest member, ``time_s`` that member's time, ``flags`` the members' union;
    the output is ordered by ``parent``."""
    max_bytes = positive_int("block layer", "max_sectors_kb", max_sectors_kb) * 1024
    if isinstance(window_s, bool) or not isinstance(window_s, (int, float, np.floating)) or not np.isfinite(window_s) or window_s < 0:
        raise ValueError(f"block layer: window_s = {window_s!r} must be a finite number >= 0")
    n = len(stream)
    nomerge = (stream.flags & (Flag.FUA | Flag.PREFLUSH | Flag.ALLOC)) != 0
    can = np.flatnonzero(((stream.op == Op.READ) | (stream.op == Op.WRITE)) & ~nomerge)
    win = _windows(stream.time_s, float(window_s))[can]
    op = stream.op[can]
    off = stream.offset_bytes[can]
    # The issuing task: dm-kcopyd's zero-fills are plugged apart from everything else.
    issuer = ((stream.flags[can] & Flag.ZERO) != 0).astype(np.int8)
    order = np.lexsort((can, off, issuer, op, win))
    c, w, o, s_off, who = can[order], win[order], op[order], off[order], issuer[order]
    size = stream.size_bytes[c]
    cont = np.zeros(c.size, bool)
    cont[1:] = (w[1:] == w[:-1]) & (o[1:] == o[:-1]) & (who[1:] == who[:-1]) & (s_off[1:] == s_off[:-1] + size[:-1])
    cont &= size <= max_bytes
    cont[1:] &= size[:-1] <= max_bytes
    run = np.cumsum(~cont) - 1
    # Greedy cut of each run at max_bytes: new output request where the running total would exceed it.
    start = _greedy_starts(run, size, max_bytes)
    out_id = np.cumsum(start) - 1
    n_out = int(out_id[-1]) + 1 if out_id.size else 0
    m_off = np.full(n_out, np.iinfo(np.int64).max)
    np.minimum.at(m_off, out_id, s_off)
    m_size = np.bincount(out_id, weights=size, minlength=n_out).astype(np.int64)
    m_parent = np.full(n_out, np.iinfo(np.int64).max)
    np.minimum.at(m_parent, out_id, c)
    m_flags = np.zeros(n_out, np.int16)
    np.bitwise_or.at(m_flags, out_id, stream.flags[c])
    merged = Stream(stream.time_s[m_parent], stream.op[m_parent], m_off, m_size, m_flags, m_parent)
    rest_mask = np.ones(n, bool)
    rest_mask[can] = False
    rest = np.flatnonzero(rest_mask)
    out = concat([merged, stream.take(rest).replace(parent=rest)])
    return out.take(np.argsort(out.parent, kind="stable"))


def _greedy_starts(run: np.ndarray, size: np.ndarray, max_bytes: int) -> np.ndarray:
    """True where a merged request starts: at each run's start, and inside a run wherever adding the
    next member would pass ``max_bytes``. Runs within the limit are done vectorised; longer runs
    take one Python step per output request (a binary search on the running total)."""
    start = np.ones(run.size, bool)
    if run.size == 0:
        return start
    start[1:] = run[1:] != run[:-1]
    first = np.flatnonzero(start)
    total = np.add.reduceat(size, first)
    cum = np.cumsum(size)
    for r in np.flatnonzero(total > max_bytes):
        j = int(first[r])
        end = int(first[r + 1]) if r + 1 < first.size else run.size
        while j < end:
            before = int(cum[j - 1]) if j else 0
            k = int(np.searchsorted(cum[j:end], before + max_bytes, side="right")) + j
            k = max(k, j + 1)
            if k < end:
                start[k] = True
            j = k
    return start
