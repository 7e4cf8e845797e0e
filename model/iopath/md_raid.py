"""md RAID 0, 1 and 10 (near 2) as request-stream transforms; RAID 5 and 6 are in md_parity.py.

Every level adds the members' ``data_offset_bytes`` (where md's data starts after the superblock;
``mdadm --examine`` prints it as "Data Offset") and sends every flush and REQ_PREFLUSH to every member
(drivers/md/md.c, md_flush_request / submit_flushes).

- RAID 0 (drivers/md/raid0.c, map_sector for equal-sized members): ``chunk = offset // chunk_bytes``,
  member ``chunk % N``, member offset ``(chunk // N) * chunk_bytes + offset % chunk_bytes``; bios are
  split at chunk boundaries (raid0_make_request), and the pieces of one plug's bios merge in the
  members' queues as dm-striped's do (:func:`.dm_striped.plug_first`, :func:`.dm_striped.plug_flushes`).
- RAID 1 (drivers/md/raid1.c): a write goes to every member at the same offset
  (raid1_write_request); a read goes to one member chosen by :func:`read_balance`.
- RAID 10, near 2 (drivers/md/raid10.c, __raid10_find_phys): chunk ``c``'s two copies occupy slots
  ``2c`` and ``2c + 1`` of the slot sequence that walks the members then the next chunk row, i.e.
  slot ``p`` is member ``p % N`` at row ``p // N``; bios are split at chunk boundaries.

Read balancing. RAID 1 (:func:`raid1_read_balance`) follows raid1.c's read_balance as of the
6.1 kernel (before choose_best_rdev), read per request in member order:

1. a read that starts where a mirror's previous read ended (``next_seq_sect``: "Don't change to
   another disk for sequential reads"), or where its head is (``dist == 0``), goes to that mirror;
2. otherwise the mirror with the fewest pending requests (the first on a tie) when any mirror is
   non-rotational (``nonrot``) or some mirror has none pending (``min_pending == 0``);
3. otherwise (every mirror busy, all rotational) the mirror whose head is nearest
   (``abs(sector - head_position)``; the first on a tie).

"Pending" on this untimed path: the requests sent to the mirror at the same issue instant before
this one (the I/O path's instants are what the timing puts in the queue at once: :mod:`diskmodel.model.iopath.timing`),
except metadata reads (``Flag.META``): the path walk waits for the directory and inode blocks
before read(2) issues the data, so they are done when the data reads are balanced;
with ``members_idle`` false every mirror counts as busy (a deep queue). An async read-ahead window
(``Flag.ASYNC``) stays pending on its mirror until the next instant that issues one: the reader
issues the next window when it reaches the mark at the start of the last one (page_cache_async_ra),
which it then waits for, so the window before is still being read (blktrace of ext2 on a mirror over
a fast and a slow drive: the third window goes to the slow mirror while the second is read from the
fast one, and the fourth follows it there as a sequential read). Every read or write sent to
a mirror moves its head to the request's end (update_head_pos). So a file read in pieces that are
not contiguous on the device (extents out of order) alternates between the mirrors whenever one
is still busy with the previous piece, whatever the mirrors' speeds.

RAID 10 (:func:`read_balance`), a simplification of raid10.c's read_balance that needs no clock:
with ``members_idle`` true the first candidate wins (an idle near copy has distance 0), else the
candidate whose head is nearest (the first on a tie); every completed read or write moves its
member's head to the request's end.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._split import device_names, route, flushes_of, positive_int, ranged, split_periodic, strip_preflush
from .dm_striped import striped_pieces
from .stream import Flag, Op, Stream

__all__ = ["md_raid0", "md_raid1", "md_raid10", "read_balance", "raid1_read_balance"]


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


def read_balance(op, offset, size, cand_dev, cand_off, n_devices: int, members_idle: bool) -> np.ndarray:
    """RAID 10's choice: the chosen candidate column for each read (0 for writes, which go to every
    candidate). ``cand_dev``/``cand_off`` are (requests x copies) arrays of each copy's member and offset."""
    if members_idle:
        return np.zeros(len(op), np.int64)
    head = [0] * n_devices
    choice = np.zeros(len(op), np.int64)
    n_copies = cand_dev.shape[1]
    ops, devs, offs, sizes = op.tolist(), cand_dev.tolist(), cand_off.tolist(), size.tolist()
    for i in range(len(ops)):
        d_row, o_row = devs[i], offs[i]
        if ops[i] != Op.READ:
            for k in range(n_copies):
                head[d_row[k]] = o_row[k] + sizes[i]
            continue
        dist = [abs(o_row[k] - head[d_row[k]]) for k in range(n_copies)]
        best = dist.index(min(dist))
        choice[i] = best
        head[d_row[best]] = o_row[best] + sizes[i]
    return choice


def raid1_read_balance(op, time_s, offset, size, n_mirrors: int, members_idle: bool = True,
                       nonrot: bool = False, done_first=None, ahead=None) -> np.ndarray:
    """The mirror each read goes to (0 for writes, which go to every mirror): raid1.c's
    read_balance as the module docstring says, ``offset`` on the members; ``done_first``: the
    reads that complete before the next request of their instant is issued (not pending);
    ``ahead``: the async read-ahead windows (pending until the next instant that issues one)."""
    n = len(op)
    choice = np.zeros(n, np.int64)
    head, next_seq = [0] * n_mirrors, [-1] * n_mirrors
    pending, instant = [0] * n_mirrors, None
    ops, times, offs, sizes = op.tolist(), time_s.tolist(), offset.tolist(), size.tolist()
    first = [False] * n if done_first is None else np.asarray(done_first, bool).tolist()
    async_ = [False] * n if ahead is None else np.asarray(ahead, bool).tolist()
    outstanding, issued = [0] * n_mirrors, [0] * n_mirrors  # async windows: of the last instant with any, of this one
    for i in range(n):
        if times[i] != instant:
            instant = times[i]
            if any(issued):
                outstanding, issued = issued, [0] * n_mirrors
            pending = [(0 if members_idle else 1) + k for k in outstanding]
        off, end = offs[i], offs[i] + sizes[i]
        if ops[i] != Op.READ:
            for k in range(n_mirrors):
                head[k] = end
                pending[k] += 1
            continue
        best = next((k for k in range(n_mirrors) if next_seq[k] == off or head[k] == off), -1)
        if best < 0:
            least = min(pending)
            if nonrot or least == 0:
                best = pending.index(least)
            else:
                dist = [abs(off - h) for h in head]
                best = dist.index(min(dist))
        choice[i] = best
        pending[best] += 0 if first[i] else 1
        issued[best] += 1 if async_[i] else 0
        head[best] = next_seq[best] = end
    return choice


def _mirrored(stream, names, cand_dev, cand_off, src, size, choice):
    """Fan writes and discards out to every copy, send each read to its chosen copy."""
    op = stream.op[src]
    n, c = cand_dev.shape
    is_read = op == Op.READ
    # (request, copy) pairs kept: every copy of a write/discard, the chosen copy of a read.
    keep = (~is_read)[:, None] | (np.arange(c)[None, :] == choice[:, None])
    row, col = np.nonzero(keep)  # row-major: copies of one request stay together, in input order
    s = src[row]
    pieces = Stream(stream.time_s[s], op[row], cand_off[row, col], size[row], strip_preflush(stream.flags[s]), s)
    dev = cand_dev[row, col]
    return route(names, [(None, flushes_of(stream)), (dev, pieces)])


def md_raid1(stream: Stream, devices: Sequence[str], data_offset_bytes: int = 0, members_idle: bool = True,
             nonrot: bool = False) -> dict[str, Stream]:
    """One stream per mirror; ``parent`` is the input index (see the module docstring for reads;
    ``nonrot``: a member is non-rotational, as a loop device over a block device is)."""
    names = device_names("md raid1", devices, 2)
    base = _data_offset("md raid1", data_offset_bytes)
    src = ranged(stream)
    n = src.size
    cand_dev = np.broadcast_to(np.arange(len(names), dtype=np.int64), (n, len(names)))
    cand_off = np.broadcast_to((stream.offset_bytes[src] + base)[:, None], (n, len(names)))
    choice = raid1_read_balance(stream.op[src], stream.time_s[src], cand_off[:, 0], stream.size_bytes[src],
                                len(names), bool(members_idle), bool(nonrot),
                                (stream.flags[src] & Flag.META) != 0,
                                ((stream.flags[src] & Flag.ASYNC) != 0) & (stream.op[src] == Op.READ))
    return _mirrored(stream, names, cand_dev, cand_off, src, stream.size_bytes[src], choice)


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
    choice = read_balance(stream.op[r[idx]], off, size, cand_dev, cand_off, n_dev, bool(members_idle))
    return _mirrored(stream, names, cand_dev, cand_off, r[idx], size, choice)
