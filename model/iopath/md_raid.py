"""md RAID 0, 1 and 10 (near 2) as request-stream transforms; RAID 5 and 6 are in md_parity.py.

Every level adds the members' ``data_offset_bytes`` (where md's data starts after the superblock;
``mdadm --examine`` prints it as "Data Offset") and sends every flush and REQ_PREFLUSH to every member
(drivers/md/md.c, md_flush_request / submit_flushes).

- RAID 0 (drivers/md/raid0.c, map_sector for equal-sized members): ``chunk = offset // chunk_bytes``,
  member ``chunk % N``, member offset ``(chunk // N) * chunk_bytes + offset % chunk_bytes``; bios are
  split at chunk boundaries (raid0_make_request).
- RAID 1 (drivers/md/raid1.c): a write goes to every member at the same offset
  (raid1_write_request); a read goes to one member chosen by :func:`read_balance`.
- RAID 10, near 2 (drivers/md/raid10.c, __raid10_find_phys): chunk ``c``'s two copies occupy slots
  ``2c`` and ``2c + 1`` of the slot sequence that walks the members then the next chunk row, i.e.
  slot ``p`` is member ``p % N`` at row ``p // N``; bios are split at chunk boundaries.

Read balancing (:func:`read_balance`), a simplification of raid1.c's read_balance (choose_best_rdev
since 6.9) and raid10.c's read_balance that needs no clock:

1. RAID 1 only: a read that starts where the previous read sent to a mirror ended stays on that
   mirror (``next_seq_sect``: "Don't change to another disk for sequential reads");
2. with ``members_idle`` true (queue depth 1: no member has a request pending), the first
   candidate wins: raid1 takes the least-pending mirror (the first with 0 pending) when any mirror
   is idle, and raid10's near layout gives an idle copy distance 0;
3. with ``members_idle`` false (every member busy, a deep queue), the candidate whose head is
   nearest wins (``abs(sector - head_position)``; the first on a tie); every completed read or write
   moves its member's head to the request's end (update_head_pos).

Rule 2 needs no loop: it sends every read to the first candidate (no other mirror ever gets the read
that rule 1 would need). Rule 3 is a per-request Python loop: each choice depends on the heads the
previous requests left.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._split import device_names, route, flushes_of, positive_int, ranged, split_periodic, strip_preflush
from .dm_striped import striped_pieces
from .stream import Op, Stream

__all__ = ["md_raid0", "md_raid1", "md_raid10", "read_balance"]


def _data_offset(layer: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{layer}: data_offset_bytes = {value!r} must be a non-negative integer")
    return int(value)


def md_raid0(stream: Stream, devices: Sequence[str], chunk_bytes: int, data_offset_bytes: int = 0) -> dict[str, Stream]:
    """One stream per member; ``parent`` is the input index."""
    names, dev, pieces = striped_pieces(
        "md raid0", stream, devices, chunk_bytes, _data_offset("md raid0", data_offset_bytes)
    )
    if len(names) < 2:
        raise ValueError(f"md raid0: devices = {names!r} needs at least 2 devices")
    return route(names, [(None, flushes_of(stream)), (dev, pieces)])


def read_balance(op, offset, size, cand_dev, cand_off, n_devices: int, members_idle: bool, sequential: bool) -> np.ndarray:
    """The chosen candidate column for each read (0 for writes, which go to every candidate).

    ``cand_dev``/``cand_off`` are (requests x copies) arrays of each copy's member and offset.
    """
    if members_idle:
        # Only a read continuing a mirror's previous read leaves the first candidate, and a mirror
        # other than the first only gets reads that way: so every read goes to the first candidate.
        return np.zeros(len(op), np.int64)
    head = [0] * n_devices
    next_seq = [-1] * n_devices
    choice = np.zeros(len(op), np.int64)
    n_copies = cand_dev.shape[1]
    ops = op.tolist()
    devs = cand_dev.tolist()
    offs = cand_off.tolist()
    sizes = size.tolist()
    for i in range(len(ops)):
        d_row, o_row = devs[i], offs[i]
        if ops[i] != Op.READ:
            for k in range(n_copies):
                head[d_row[k]] = o_row[k] + sizes[i]
            continue
        best = -1
        if sequential:
            for k in range(n_copies):
                if next_seq[d_row[k]] == o_row[k]:
                    best = k
                    break
        if best < 0:
            dist = [abs(o_row[k] - head[d_row[k]]) for k in range(n_copies)]
            best = dist.index(min(dist))
        choice[i] = best
        d = d_row[best]
        head[d] = next_seq[d] = o_row[best] + sizes[i]
    return choice


def _mirrored(layer, stream, names, cand_dev, cand_off, src, size, members_idle, sequential):
    """Fan writes and discards out to every copy, send each read to its balanced copy."""
    op = stream.op[src]
    choice = read_balance(op, stream.offset_bytes[src], size, cand_dev, cand_off, len(names), members_idle, sequential)
    n, c = cand_dev.shape
    is_read = op == Op.READ
    # (request, copy) pairs kept: every copy of a write/discard, the chosen copy of a read.
    keep = (~is_read)[:, None] | (np.arange(c)[None, :] == choice[:, None])
    row, col = np.nonzero(keep)  # row-major: copies of one request stay together, in input order
    s = src[row]
    pieces = Stream(stream.time_s[s], op[row], cand_off[row, col], size[row], strip_preflush(stream.flags[s]), s)
    dev = cand_dev[row, col]
    return route(names, [(None, flushes_of(stream)), (dev, pieces)])


def md_raid1(stream: Stream, devices: Sequence[str], data_offset_bytes: int = 0, members_idle: bool = True) -> dict[str, Stream]:
    """One stream per mirror; ``parent`` is the input index (see the module docstring for reads)."""
    names = device_names("md raid1", devices, 2)
    base = _data_offset("md raid1", data_offset_bytes)
    src = ranged(stream)
    n = src.size
    cand_dev = np.broadcast_to(np.arange(len(names), dtype=np.int64), (n, len(names)))
    cand_off = np.broadcast_to((stream.offset_bytes[src] + base)[:, None], (n, len(names)))
    return _mirrored(
        "md raid1", stream, names, cand_dev, cand_off, src, stream.size_bytes[src], bool(members_idle), True
    )


def md_raid10(
    stream: Stream, devices: Sequence[str], chunk_bytes: int, data_offset_bytes: int = 0, members_idle: bool = True
) -> dict[str, Stream]:
    """RAID 10 in md's default near-2 layout; one stream per member, ``parent`` the input index."""
    names = device_names("md raid10", devices, 2)
    chunk_bytes = positive_int("md raid10", "chunk_bytes", chunk_bytes)
    base = _data_offset("md raid10", data_offset_bytes)
    r = ranged(stream)
    idx, off, size = split_periodic(stream.offset_bytes[r], stream.size_bytes[r], chunk_bytes)
    n_dev = len(names)
    slot = (off // chunk_bytes * 2)[:, None] + np.arange(2)[None, :]
    cand_dev = slot % n_dev
    cand_off = base + (slot // n_dev) * chunk_bytes + (off % chunk_bytes)[:, None]
    # The pieces stand in for the requests from here on: index them through r[idx].
    return _mirrored("md raid10", stream, names, cand_dev, cand_off, r[idx], size, bool(members_idle), False)
