"""loop: a block device backed by a file, in direct-I/O mode.

With direct I/O (``losetup --direct-io=on``; drivers/block/loop.c, lo_rw_aio with IOCB_DIRECT) a
request becomes one read or write of the backing file at the same file offset, of the same size, and
the file system sends it to the disk where the file's extent lies: this layer maps each request
through the file's extent map (``[(file_offset, length, disk_offset), ...]``, what ``filefrag -v``
prints), splitting it at extent boundaries.

What the host file system must handle itself goes to the ``file`` stream, in file offsets:

- writes into a hole of a sparse image: the file system allocates there (where is its decision, and
  its cost is the file-system layer's); the first write to each ``block_bytes`` block of a hole is
  flagged ALLOC, and ``allocated`` lists the newly allocated ranges;
- reads of a hole after part of it was written (the data's place is the file system's);
- flushes (loop.c, lo_req_flush: vfs_fsync of the backing file) and discards (lo_fallocate with
  FALLOC_FL_PUNCH_HOLE).

A read of a hole never written returns zeros without device I/O.

Buffered loop (direct I/O off) caches the image's pages a second time in the host's page cache and
writes them back later; the I/O path (:mod:`.path`, ``_loop``) passes its requests through the host's
page cache and file system, in the order :func:`worker_order` gives them: this module's
:func:`loop` refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._split import positive_int, split_at, split_periodic
from .stream import Flag, Op, Stream, concat

__all__ = ["LoopResult", "loop", "worker_order"]

#: How far apart [s] the loop worker's reads of one instant reach the host: apart enough that the
#: host's queue, which merges only within an instant, keeps them apart; well inside one instant of
#: the timing (:data:`.stream.INSTANT_S`), so the application still waits for them.
WORKER_STEP_S = 1e-8
#: How long after a loop worker's read of its image the host's async read-ahead window on the image
#: goes out [s] (:class:`~diskmodel.model.iopath.pagecache.CacheParams` ``async_delay_s``): within
#: the timing's instant, so the read the application waits for waits for the window too, as the
#: application waits for its own async windows where they are issued (a buffered reader is a reader,
#: the loop worker as any other; without it the image's windows ran beside the application and a
#: loop file read faster than the device under it). Nested layers add theirs up: ten of them stay
#: within the instant.
WORKER_ASYNC_S = 1e-7


def worker_order(time_s: np.ndarray, is_read: np.ndarray) -> np.ndarray:
    """The times at which a buffered loop device's requests (``time_s``, sorted) reach the host's
    page cache: its reads one after the other, at least ``WORKER_STEP_S`` apart.

    The loop worker serves its requests one at a time (drivers/block/loop.c, loop_process_work
    takes the queued commands in order); Linux 6.1 (the VM's kernel) reads a buffered request with
    one synchronous ``vfs_iter_read`` per bio_vec (lo_read_simple), and a buffered read through
    ``read_iter`` returns only once its folios are read, so the host's I/O for one read is issued
    and waited for before the next read's and never merges with it (an emulated drive under the
    host's kernel serves them one by one, none queued behind another). Writes only dirty the
    host's page cache (lo_write_simple); its write-back is the host's and keeps their instant.
    """
    t = np.asarray(time_s, float)
    r = np.asarray(is_read, bool)
    if not r.any():
        return t
    # one after the other: each read at its own time or a step after the read before it, whichever is
    # later (t'_i = max(t_i, t'_{i-1} + step) = i step + max_{j <= i} (t_j - j step)), so that reads of
    # nearby instants (an upper worker's reads, a step apart) cannot land on one instant and merge
    steps = np.arange(int(r.sum())) * WORKER_STEP_S
    out = t.copy()
    out[r] = steps + np.maximum.accumulate(t[r] - steps)
    return out


@dataclass(frozen=True)
class LoopResult:
    """``device``: requests on the disk under the file (disk offsets); ``file``: requests the host file
    system handles (file offsets); ``allocated``: (n x 2) array of newly allocated (file_offset, length)
    ranges. ``parent`` in both streams is the input index."""

    device: Stream
    file: Stream
    allocated: np.ndarray


def _extents(extents, file_bytes: int):
    rows = []
    for i, ext in enumerate(extents):
        if len(ext) != 3:
            raise ValueError(f"loop: extents[{i}] = {ext!r} is not (file_offset, length, disk_offset)")
        for name, v in zip(("file_offset", "length", "disk_offset"), ext):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"loop: extents[{i}] {name} = {v!r} must be a non-negative integer")
        if ext[1] == 0:
            raise ValueError(f"loop: extents[{i}] length = 0 must be positive")
        rows.append(tuple(int(v) for v in ext))
    rows.sort()
    for i in range(1, len(rows)):
        if rows[i][0] < rows[i - 1][0] + rows[i - 1][1]:
            raise ValueError(f"loop: extents overlap at file_offset {rows[i][0]}")
    if rows and rows[-1][0] + rows[-1][1] > file_bytes:
        raise ValueError(f"loop: an extent ends at {rows[-1][0] + rows[-1][1]}, past file_bytes {file_bytes}")
    arr = np.array(rows, np.int64).reshape(-1, 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def loop(
    stream: Stream,
    file_bytes: int,
    extents: Sequence[tuple[int, int, int]],
    direct_io: bool = True,
    block_bytes: int = 4096,
) -> LoopResult:
    """The streams a loop device over a ``file_bytes`` file with ``extents`` passes down."""
    if not direct_io:
        raise ValueError("loop: direct_io = False: buffered loop needs the page-cache layer, not modelled here")
    file_bytes = positive_int("loop", "file_bytes", file_bytes)
    block_bytes = positive_int("loop", "block_bytes", block_bytes)
    f_off, f_len, d_off = _extents(extents, file_bytes)
    data = np.flatnonzero((stream.op == Op.READ) | (stream.op == Op.WRITE))
    past = stream.end_bytes[data] > file_bytes
    if past.any():
        i = int(data[np.flatnonzero(past)[0]])
        raise ValueError(f"loop: request {i} ends at byte {int(stream.end_bytes[i])}, past the image's file_bytes {file_bytes}")
    bounds = np.unique(np.concatenate([f_off, f_off + f_len]))
    idx, off, size = split_at(stream.offset_bytes[data], stream.size_bytes[data], bounds)
    src = data[idx]
    ext = np.searchsorted(f_off, off, side="right") - 1
    inside = (ext >= 0) & (off < f_off[np.maximum(ext, 0)] + f_len[np.maximum(ext, 0)]) if f_off.size else np.zeros(off.size, bool)
    e = np.maximum(ext, 0)
    device = Stream(
        stream.time_s[src][inside],
        stream.op[src][inside],
        (d_off[e] + off - f_off[e])[inside] if f_off.size else off[inside],
        size[inside],
        stream.flags[src][inside],
        src[inside],
    )
    hole = np.flatnonzero(~inside)
    hole_file, allocated = _holes(stream, src[hole], off[hole], size[hole], block_bytes)
    other = np.flatnonzero((stream.op == Op.FLUSH) | (stream.op == Op.DISCARD))
    passed = stream.take(other).replace(parent=other)
    file = concat([passed, hole_file])
    file = file.take(np.argsort(file.parent, kind="stable"))
    return LoopResult(device, file, allocated)


def _holes(stream: Stream, src, off, size, block_bytes):
    """The file stream of the pieces in holes, and the ranges their first writes allocate."""
    op = stream.op[src]
    # Per block of each hole piece: the first write decides allocation.
    bidx, boff, _ = split_periodic(off, size, block_bytes)
    blk = boff // block_bytes
    bpos = np.arange(blk.size)
    wr = op[bidx] == Op.WRITE
    blocks, first = np.unique(blk[wr], return_index=True)
    first_pos = bpos[wr][first]
    # Per block piece: where its block was first written (none: never).
    at = np.searchsorted(blocks, blk)
    at = np.minimum(at, max(blocks.size - 1, 0))
    known = (blocks.size > 0) & (blocks[at] == blk) if blocks.size else np.zeros(blk.size, bool)
    since = np.where(known, first_pos[at] if blocks.size else 0, np.iinfo(np.int64).max)
    is_first = wr & (bpos == since)
    reaches = (~wr & (bpos > since)) | wr  # reads after allocation, and every write
    piece_alloc = np.zeros(src.size, bool)
    np.logical_or.at(piece_alloc, bidx, is_first)
    piece_keep = np.zeros(src.size, bool)
    np.logical_or.at(piece_keep, bidx, reaches)
    flags = stream.flags[src] | np.where(piece_alloc, Flag.ALLOC, Flag.NONE).astype(np.int16)
    k = piece_keep
    hole_file = Stream(stream.time_s[src][k], op[k], off[k], size[k], flags[k], src[k])
    # Allocated ranges: consecutive allocated blocks merged.
    nb = np.sort(blocks)
    if nb.size == 0:
        return hole_file, np.zeros((0, 2), np.int64)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(nb) != 1]))
    ends = np.concatenate([starts[1:], [nb.size]])
    allocated = np.stack([nb[starts] * block_bytes, (ends - starts) * block_bytes], axis=1).astype(np.int64)
    return hole_file, allocated
