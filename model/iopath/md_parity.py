"""md RAID 5 and RAID 6: parity placement and the reads and writes a write costs.

Layout: md's default left-symmetric (drivers/md/raid5.c, raid5_compute_sector). With N members and
D data members (N - 1 for RAID 5, N - 2 for RAID 6), ``chunk = offset // chunk_bytes``, stripe
``s = chunk // D``, logical data member ``l = chunk % D``:
- RAID 5: parity on ``pd = D - s % N``, data on ``(pd + 1 + l) % N``;
- RAID 6: P on ``pd = N - 1 - s % N``, Q on ``(pd + 1) % N``, data on ``(pd + 2 + l) % N``;
and the member offset is ``data_offset + s * chunk_bytes + offset % chunk_bytes``.

Reads pass straight to the member holding the data, split at chunk boundaries (raid5.c,
raid5_read_one_chunk / chunk_aligned_read; the array is assumed healthy, not degraded).

Writes work in md's stripe unit, one page of ``STRIPE_SIZE`` (4 KiB) per member at the same member
offset (a ``stripe_head``). For each stripe_head a write touches, md's handle_stripe_dirtying counts
the pages it would read for each strategy:
- read-modify-write: every written data page plus P (and Q), ``rmw = written + parities``;
- reconstruct-write: every data page not wholly overwritten (R5_OVERWRITE), ``rcw = D - overwritten``;
and reads for rmw when ``rmw < rcw`` (or ``rmw == rcw`` with ``rmw_level = "prefer"``), else for rcw;
a full-stripe write has ``rcw = 0`` and reads nothing. Then it writes every written data page (a
partly written page is written whole, after it was read) and P (and Q). RAID 6 supports rmw when the
CPU's raid6 code has xor_syndrome (raid5.c, setup_conf, since Linux 4.1; true for x86's SSE2/AVX2
code), so ``rmw_level`` defaults to "enable" for both levels, as md's default PARITY_ENABLE_RMW.

The writes of one plug are handled together. raid5_make_request adds each bio's pages to its
stripe_heads and holds the stripe_heads on the task's plug (release_stripe_plug) until the plug is
released (raid5_unplug): a stripe_head that two bios of one write-back run write in part sees both
before handle_stripe costs it, so the run's whole stripes are full-stripe writes and only its ends
read. The plug is the file system's write-back run (:func:`.dm_striped.plug_first`: bios issued a
nanosecond apart); the run's stripe_heads are costed as one request's, issued at the run's first
instant.

The pages of one request (one plug's run) that are adjacent on one member come out as one request
(md's per-page bios merged in the member's queue); merging across requests and splitting at the
member's max_sectors_kb are the block layer's job (block_layer.merge and split). The member's
max_segments is not modelled: each stripe page is a segment of its own, so the kernel stops a
member's request at max_segments pages (512 KiB of 4 KiB pages on loop and virtio devices), where
the model lets it grow to max_sectors_kb; the bytes and their order on the member are the same.

Left out (said here so no one mistakes this for the full md): the stripe cache across plugs, so two
plugs that touch the same stripe_head are costed separately, each reading what it needs (md may find
pages already up to date in the cache), and the raid5 write-back journal and PPL. Discards are
refused: raid456 accepts discards only with the module parameter devices_handle_discard_safely
(default N), so md does not advertise discard support.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._split import device_names, route, flushes_of, positive_int, split_periodic, strip_preflush
from .dm_striped import plug_first
from .stream import Flag, Op, Stream

__all__ = ["md_raid5", "md_raid6", "STRIPE_SIZE"]

#: md's stripe unit: one page (raid5.h, DEFAULT_STRIPE_SIZE = 4096).
STRIPE_SIZE = 4096
_RMW_LEVELS = ("disable", "enable", "prefer")


def _members(level: int, stripe: np.ndarray, logical: np.ndarray, n: int):
    """Physical member of each logical column (0..D-1 data, D = P, D+1 = Q) of stripe ``stripe``.
    ``stripe`` and ``logical`` broadcast together."""
    if level == 5:
        pd = (n - 1) - stripe % n
        data = (pd + 1 + logical) % n
        return np.where(logical < n - 1, data, pd)
    pd = n - 1 - stripe % n
    data = (pd + 2 + logical) % n
    return np.where(logical < n - 2, data, np.where(logical == n - 2, pd, (pd + 1) % n))


def _check(layer, devices, chunk_bytes, data_offset_bytes, rmw_level, level):
    names = device_names(layer, devices, 3 if level == 5 else 4)
    chunk_bytes = positive_int(layer, "chunk_bytes", chunk_bytes)
    if chunk_bytes % STRIPE_SIZE:
        raise ValueError(f"{layer}: chunk_bytes = {chunk_bytes} is not a multiple of md's {STRIPE_SIZE}-byte stripe unit")
    if isinstance(data_offset_bytes, bool) or not isinstance(data_offset_bytes, (int, np.integer)) or data_offset_bytes < 0:
        raise ValueError(f"{layer}: data_offset_bytes = {data_offset_bytes!r} must be a non-negative integer")
    if rmw_level not in _RMW_LEVELS:
        raise ValueError(f"{layer}: rmw_level = {rmw_level!r} must be one of {', '.join(_RMW_LEVELS)}")
    return names, chunk_bytes, int(data_offset_bytes)


def _reads(stream, r, n, level, chunk_bytes, base):
    """Member reads of the array's reads: (member per piece, piece stream)."""
    d = n - (1 if level == 5 else 2)
    idx, off, size = split_periodic(stream.offset_bytes[r], stream.size_bytes[r], chunk_bytes)
    chunk = off // chunk_bytes
    stripe = chunk // d
    dev = _members(level, stripe, chunk % d, n)
    src = r[idx]
    pieces = Stream(stream.time_s[src], stream.op[src], base + stripe * chunk_bytes + off % chunk_bytes, size,
                    strip_preflush(stream.flags[src]), src)
    return dev, pieces


def stripe_plan(stream: Stream, w: np.ndarray, n: int, level: int, chunk_bytes: int, rmw_level: str,
                batch: np.ndarray | None = None):
    """The stripe_heads the writes ``w`` (indices into ``stream``) touch and what each costs.

    ``batch``: per request of ``stream``, the index of the request its stripe_heads are handled
    with (the first of its plug: :func:`.dm_striped.plug_first`); None: each request alone.
    Returns ``(src, stripe, row, read, write)``: per stripe_head the writing request's index (its
    batch's), the stripe number, the page row within the chunk, and boolean (stripe_heads x columns)
    matrices of the pages read and written, columns 0..D-1 data then P (and Q).
    """
    n_par = 1 if level == 5 else 2
    d = n - n_par
    idx, off, size = split_periodic(stream.offset_bytes[w], stream.size_bytes[w], STRIPE_SIZE)
    chunk = off // chunk_bytes
    stripe = chunk // d
    logical = chunk % d
    row = (off % chunk_bytes) // STRIPE_SIZE
    full = size == STRIPE_SIZE
    rows_per_chunk = chunk_bytes // STRIPE_SIZE
    key = stripe * rows_per_chunk + row  # the stripe_head's page row across the array
    req = w[idx] if batch is None else batch[w[idx]]
    order = _sort_pairs(req, key)
    req, key, logical, full = req[order], key[order], logical[order], full[order]
    new = np.ones(req.size, bool)
    new[1:] = (req[1:] != req[:-1]) | (key[1:] != key[:-1])
    g = np.cumsum(new) - 1
    n_groups = int(g[-1]) + 1 if g.size else 0
    written = np.zeros((n_groups, d), bool)
    overwritten = np.zeros((n_groups, d), bool)
    written[g, logical] = True
    overwritten[g, logical] = full
    rmw = written.sum(axis=1) + n_par
    rcw = d - overwritten.sum(axis=1)
    if rmw_level == "disable":
        use_rmw = np.zeros(n_groups, bool)
    else:
        use_rmw = (rmw < rcw) | ((rmw == rcw) & (rmw_level == "prefer"))
    parity = np.ones((n_groups, n_par), bool)
    read = np.concatenate(
        [np.where(use_rmw[:, None], written, ~overwritten), np.where(use_rmw[:, None], parity, False)], axis=1
    )
    write = np.concatenate([written, parity], axis=1)
    first = np.flatnonzero(new)
    return req[first], key[first] // rows_per_chunk, key[first] % rows_per_chunk, read, write


def _sort_pairs(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """The order sorting by (major, minor), both non-negative: one stable sort of a combined key
    when it fits in int64 (far faster than np.lexsort), else np.lexsort."""
    if major.size == 0:
        return np.zeros(0, np.int64)
    span = int(minor.max()) + 1
    if int(major.max()) < (2**62) // span:
        return np.argsort(major * span + minor, kind="stable")
    return np.lexsort((minor, major))


def _pages(stream, plan, matrix, op, n, level, chunk_bytes, base, flags):
    """The pages ``matrix`` marks, as requests: one request's pages that are adjacent on one member
    are coalesced (md submits a bio per page and the member's queue merges a request's run of them;
    merging across requests and splitting at the member's max_sectors_kb are block_layer's)."""
    src, stripe, row, _, _ = plan
    gi, col = np.nonzero(matrix)
    s = src[gi]
    dev = _members(level, stripe[gi], col, n)
    off = base + stripe[gi] * chunk_bytes + row[gi] * STRIPE_SIZE
    # np.nonzero walks the stripe_heads in (request, address) order, so a stable sort on
    # (request, member) leaves each member's pages of a request in address order.
    order = np.argsort(s * n + dev, kind="stable")
    s, dev, off = s[order], dev[order], off[order]
    start = np.ones(s.size, bool)
    start[1:] = (s[1:] != s[:-1]) | (dev[1:] != dev[:-1]) | (off[1:] != off[:-1] + STRIPE_SIZE)
    first = np.flatnonzero(start)
    size = np.diff(np.append(first, s.size)) * STRIPE_SIZE
    s, dev, off = s[first], dev[first], off[first]
    pieces = Stream(stream.time_s[s], np.full(s.size, op, np.int8), off, size.astype(np.int64), flags[s], s)
    return dev, pieces


def _md_parity(level, stream, devices, chunk_bytes, data_offset_bytes, rmw_level):
    layer = f"md raid{level}"
    names, chunk_bytes, base = _check(layer, devices, chunk_bytes, data_offset_bytes, rmw_level, level)
    n = len(names)
    discard = np.flatnonzero(stream.op == Op.DISCARD)
    if discard.size:
        raise ValueError(
            f"{layer}: request {int(discard[0])} is a discard, which raid456 refuses unless its module "
            "parameter devices_handle_discard_safely is set"
        )
    reads = np.flatnonzero(stream.op == Op.READ)
    writes = np.flatnonzero(stream.op == Op.WRITE)
    read_dev, read_pieces = _reads(stream, reads, n, level, chunk_bytes, base)
    plan = stripe_plan(stream, writes, n, level, chunk_bytes, rmw_level, plug_first(stream))
    keep = (stream.flags & (Flag.SYNC | Flag.META)).astype(np.int16)
    pre_dev, pre_reads = _pages(stream, plan, plan[3], Op.READ, n, level, chunk_bytes, base, keep)
    wr_dev, wr_pages = _pages(stream, plan, plan[4], Op.WRITE, n, level, chunk_bytes, base, strip_preflush(stream.flags))
    # Per request: its flush, then the reads a write needs, then the writes (they wait for the reads).
    return route(names, [(None, flushes_of(stream)), (read_dev, read_pieces), (pre_dev, pre_reads), (wr_dev, wr_pages)])


def md_raid5(
    stream: Stream, devices: Sequence[str], chunk_bytes: int, data_offset_bytes: int = 0, rmw_level: str = "enable"
) -> dict[str, Stream]:
    """One stream per member of a healthy left-symmetric RAID 5; ``parent`` is the input index."""
    return _md_parity(5, stream, devices, chunk_bytes, data_offset_bytes, rmw_level)


def md_raid6(
    stream: Stream, devices: Sequence[str], chunk_bytes: int, data_offset_bytes: int = 0, rmw_level: str = "enable"
) -> dict[str, Stream]:
    """One stream per member of a healthy left-symmetric RAID 6; ``parent`` is the input index."""
    return _md_parity(6, stream, devices, chunk_bytes, data_offset_bytes, rmw_level)
