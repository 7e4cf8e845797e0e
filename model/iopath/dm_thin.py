"""dm-thin: a thin volume's requests on the pool's data device, and the pool's metadata commits.

Mapping (drivers/md/dm-thin.c): the thin volume is cut into blocks of ``chunk_bytes`` (the pool's
block size, a multiple of 64 KiB: DATA_DEV_BLOCK_SIZE_MIN_SECTORS), and a request is split at block
boundaries (the pool target's max_io_len). A block is provisioned by its first write
(provision_block), taking the next free data block; this model allocates data blocks in order of
first write (data offset ``data_offset + data_block * chunk_bytes + offset % chunk_bytes``), which is
what dm-thin's allocator does on an empty pool (the space map hands out the lowest free block).
A write of a whole block is issued directly, on its own: a bio to an unmapped block is deferred
as a cell (thin_bio_map -> thin_defer_cell), and the pool's worker provisions the cells in sector
order and issues each whole-block write itself (process_thin_deferred_cells -> process_cell ->
provision_block -> schedule_zero -> remap_and_issue_overwrite) outside any plug (unlike
process_thin_deferred_bios), so the data device receives it before the next one exists: flagged
ALLOC, it is not merged with its neighbours, and a thin volume with small blocks sends the data
device one request per block; with ``zero_new_blocks`` (the pool's default, unless
``skip_block_zeroing``) a partial first write first zeroes the *whole* new block
(schedule_zero -> ll_zero over ``[data_block, data_block + 1)`` blocks, a dm-kcopyd job: flagged
ZERO, merged only with other zero-fills, see :mod:`.block_layer`), then the data is written.
A read of an unprovisioned block completes with zeros and no device I/O (process_bio_read_only /
zero_fill_bio). Flushes pass to the data device (remap of a REQ_PREFLUSH bio).

Metadata commits (the counted stream on the metadata device; a documented approximation): dm-thin
commits its metadata transaction on a REQ_PREFLUSH or REQ_FUA bio when the device changed in this
transaction (bio_triggers_commit) and every COMMIT_PERIOD (1 s) if anything changed
(process_deferred_bios with need_commit_due_to_time). Here "changed" means a block was provisioned
since the last commit (provisioning at the end of the stream is committed at the next 1-s tick,
as the pool's waker would). A commit writes, as 4 KiB metadata blocks: one btree leaf per group of
252 consecutive thin blocks newly mapped (a leaf holds (4096 - 32) / 16 entries, rounded down to a
multiple of 3, in persistent-data's btree), one data space-map bitmap block per group of 16320 data
blocks newly allocated (dm-space-map-common.c, ENTRIES_PER_BLOCK), then a flush, the superblock
(metadata block 0) and a flush (dm-thin-metadata.c, __commit_transaction). Shadowed blocks are placed
at increasing metadata block numbers from 1: the metadata space map's real choice is not modelled.
Discards (unmapping) are refused: not modelled yet.
The allocation order is computed vectorised (first write per block by np.unique), no Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._split import positive_int, split_periodic, strip_preflush
from .stream import Flag, Op, Stream, concat

__all__ = ["ThinResult", "dm_thin", "MIN_CHUNK_BYTES", "COMMIT_PERIOD_S"]

MIN_CHUNK_BYTES = 64 * 1024  # dm-thin.c, DATA_DEV_BLOCK_SIZE_MIN_SECTORS (128 sectors)
COMMIT_PERIOD_S = 1.0  # dm-thin.c, COMMIT_PERIOD = HZ
META_BLOCK_BYTES = 4096  # persistent-data's metadata block (THIN_METADATA_BLOCK_SIZE)
LEAF_ENTRIES = 252
BITMAP_ENTRIES = 16320


@dataclass(frozen=True)
class ThinResult:
    """``data``: the pool's data device stream (``parent`` is the input index); ``metadata``: the
    commits' writes on the metadata device (``parent`` is the flush/FUA request that forced the
    commit, -1 for a periodic commit); ``provisioned``: the thin block number of each data block in
    allocation order (the given ``provisioned`` blocks first)."""

    data: Stream
    metadata: Stream
    provisioned: np.ndarray


def _check(stream, chunk_bytes, provisioned, data_offset_bytes):
    chunk_bytes = positive_int("dm-thin", "chunk_bytes", chunk_bytes)
    if chunk_bytes % MIN_CHUNK_BYTES:
        raise ValueError(f"dm-thin: chunk_bytes = {chunk_bytes} is not a multiple of {MIN_CHUNK_BYTES} (64 KiB)")
    if isinstance(data_offset_bytes, bool) or not isinstance(data_offset_bytes, (int, np.integer)) or data_offset_bytes < 0:
        raise ValueError(f"dm-thin: data_offset_bytes = {data_offset_bytes!r} must be a non-negative integer")
    pre = np.asarray([] if provisioned is None else provisioned)
    if pre.size and (not np.issubdtype(pre.dtype, np.integer) or (pre < 0).any() or np.unique(pre).size != pre.size):
        raise ValueError(f"dm-thin: provisioned = {provisioned!r} must be distinct non-negative block numbers")
    discard = np.flatnonzero(stream.op == Op.DISCARD)
    if discard.size:
        raise ValueError(f"dm-thin: request {int(discard[0])} is a discard; thin discards are not modelled")
    back = np.flatnonzero(np.diff(stream.time_s) < 0)
    if back.size:
        i = int(back[0]) + 1
        raise ValueError(f"dm-thin: time_s[{i}] = {float(stream.time_s[i])} goes back in time; give the stream in issue order")
    return chunk_bytes, pre.astype(np.int64), int(data_offset_bytes)


def dm_thin(
    stream: Stream,
    chunk_bytes: int,
    zero_new_blocks: bool = True,
    provisioned=None,
    data_offset_bytes: int = 0,
) -> ThinResult:
    """The pool's device streams for a thin volume's ``stream`` (see the module docstring)."""
    chunk_bytes, pre, base = _check(stream, chunk_bytes, provisioned, data_offset_bytes)
    r = np.flatnonzero(stream.op != Op.FLUSH)
    idx, off, size = split_periodic(stream.offset_bytes[r], stream.size_bytes[r], chunk_bytes)
    src = r[idx]
    op = stream.op[src]
    block = off // chunk_bytes
    pos = np.arange(block.size)
    is_write = op == Op.WRITE
    # The first write piece of each block not provisioned before the stream.
    fresh = is_write & ~np.isin(block, pre)
    new_blocks, first_at = np.unique(block[fresh], return_index=True)
    first_pos = pos[fresh][first_at]
    order = np.argsort(first_pos, kind="stable")
    new_blocks, first_pos = new_blocks[order], first_pos[order]
    all_blocks = np.concatenate([pre, new_blocks])
    data_block = np.arange(all_blocks.size, dtype=np.int64)
    since = np.concatenate([np.full(pre.size, -1, np.int64), first_pos])
    sorter = np.argsort(all_blocks, kind="stable")
    found = np.searchsorted(all_blocks[sorter], block)
    found = np.minimum(found, max(all_blocks.size - 1, 0))
    mapped = all_blocks.size > 0
    hit = mapped & (all_blocks[sorter][found] == block) if mapped else np.zeros(block.size, bool)
    piece_data = np.where(hit, data_block[sorter][found] if mapped else 0, -1)
    piece_since = np.where(hit, since[sorter][found] if mapped else 0, np.iinfo(np.int64).max)
    # Reads before the block's provisioning need no I/O; writes are always mapped by then.
    keep = np.where(is_write, True, (op == Op.READ) & (pos >= piece_since))
    dev_off = base + piece_data * chunk_bytes + off % chunk_bytes
    flags = strip_preflush(stream.flags[src])
    # A provisioning write (the first write piece of a new block) is issued by the pool's worker
    # once its block is allocated (process_prepared_mapping / remap_and_issue_overwrite), on its
    # own: flagged ALLOC, which the block layer does not merge.
    flags = np.where(np.isin(pos, first_pos), flags | int(Flag.ALLOC), flags).astype(np.int16)
    pieces = Stream(stream.time_s[src][keep], op[keep], dev_off[keep], size[keep], flags[keep], src[keep])
    # Zero-fill of a new block a partial first write lands in, issued before that write.
    zero_pos = first_pos[size[first_pos] < chunk_bytes] if zero_new_blocks else first_pos[:0]
    zs = src[zero_pos]
    zeros = Stream(
        stream.time_s[zs],
        np.full(zs.size, Op.WRITE, np.int8),
        base + piece_data[zero_pos] * chunk_bytes,
        np.full(zs.size, chunk_bytes, np.int64),
        np.full(zs.size, Flag.ZERO, np.int16),
        zs,
    )
    fl = np.flatnonzero((stream.op == Op.FLUSH) | ((stream.flags & Flag.PREFLUSH) != 0))
    flushes = Stream(stream.time_s[fl], np.full(fl.size, Op.FLUSH, np.int8), np.zeros(fl.size, np.int64),
                     np.zeros(fl.size, np.int64), np.zeros(fl.size, np.int16), fl)
    # Order: by parent, and within one parent the flush, then zeroing, then the pieces.
    allp = concat([flushes, zeros, pieces])
    rank = np.concatenate([np.zeros(len(flushes)), np.ones(len(zeros)), np.full(len(pieces), 2.0)])
    data = allp.take(np.lexsort((rank, allp.parent)))
    metadata = _commits(stream, src[first_pos], new_blocks, data_block[pre.size :])
    return ThinResult(data, metadata, all_blocks)


def _commits(stream: Stream, prov_req: np.ndarray, prov_block: np.ndarray, prov_data: np.ndarray) -> Stream:
    """The metadata device's stream: one commit per flush/FUA request or 1-s tick after provisioning."""
    if prov_req.size == 0:
        return Stream.empty()
    # Event positions on one axis: request i sits at i; a tick at T after every request with time <= T.
    trig = np.flatnonzero((stream.flags & (Flag.PREFLUSH | Flag.FUA)) != 0)
    trig = np.union1d(trig, np.flatnonzero(stream.op == Op.FLUSH))
    t_end = float(stream.time_s[-1])
    ticks_t = np.arange(1, int(np.floor(t_end / COMMIT_PERIOD_S)) + 2) * COMMIT_PERIOD_S
    ticks_pos = np.searchsorted(stream.time_s, ticks_t, side="right") - 0.5
    cand_pos = np.concatenate([trig + 0.25, ticks_pos])
    cand_time = np.concatenate([stream.time_s[trig], ticks_t])
    cand_parent = np.concatenate([trig, np.full(ticks_t.size, -1, np.int64)])
    order = np.argsort(cand_pos, kind="stable")
    cand_pos, cand_time, cand_parent = cand_pos[order], cand_time[order], cand_parent[order]
    # Each provisioning belongs to the first candidate at or after it; that candidate commits.
    which = np.searchsorted(cand_pos, prov_req.astype(np.float64), side="left")
    commits = np.unique(which)
    leaves = _distinct_per(which, prov_block // LEAF_ENTRIES, commits)
    bitmaps = _distinct_per(which, prov_data // BITMAP_ENTRIES, commits)
    n_blocks = leaves + bitmaps
    c = np.repeat(np.arange(commits.size), n_blocks)
    block_no = 1 + np.arange(c.size, dtype=np.int64)
    n_all = c.size + 3 * commits.size
    commit_of = np.concatenate([c, np.repeat(np.arange(commits.size), 3)])
    step = np.concatenate([np.zeros(c.size), np.tile([1.0, 2.0, 3.0], commits.size)])
    op = np.concatenate([np.full(c.size, Op.WRITE), np.tile([Op.FLUSH, Op.WRITE, Op.FLUSH], commits.size)]).astype(np.int8)
    offset = np.concatenate([block_no * META_BLOCK_BYTES, np.zeros(3 * commits.size, np.int64)])
    size = np.concatenate([np.full(c.size, META_BLOCK_BYTES), np.tile([0, META_BLOCK_BYTES, 0], commits.size)])
    flags = np.where(op == Op.WRITE, Flag.META, Flag.NONE).astype(np.int16)
    cand = commits[commit_of]
    order = np.lexsort((np.arange(n_all), step, commit_of))
    return Stream(cand_time[cand], op, offset, size, flags, cand_parent[cand]).take(order)


def _distinct_per(group: np.ndarray, value: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """How many distinct ``value`` each of ``groups`` has."""
    pairs = np.unique(np.stack([group, value]), axis=1)
    return np.searchsorted(pairs[0], groups, side="right") - np.searchsorted(pairs[0], groups, side="left")
