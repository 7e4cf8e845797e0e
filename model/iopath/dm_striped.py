"""dm-striped: a request split at chunk boundaries and spread round-robin over N devices.

drivers/md/dm-stripe.c, stripe_map_sector: ``chunk = offset // chunk_bytes``, device
``chunk % N``, device offset ``device_offset + (chunk // N) * chunk_bytes + offset % chunk_bytes``;
dm-stripe sets the target's max_io_len to the chunk, so device-mapper splits every bio at the chunk
boundaries (dm.c, max_io_len). Flushes go to every device (stripe_map: a flush is sent to each of
the N stripes through num_flush_bios = N).

One plug (:func:`plug_times`). The file system's write-back submits the bios of one run of
dirty pages inside one plug (ext4_writepages, write_cache_pages: blk_start_plug ..
blk_finish_plug); the I/O path issues those bios a nanosecond apart (a full bio takes no more
merges on the file system's own device: :mod:`.fs`). Below a stripe their pieces meet again: each
clone reaches its member's queue through the same task's plug, and blk_attempt_plug_merge
(block/blk-merge.c) looks through a plug holding several queues for the member's own latest
request and merges the piece into it when they are contiguous (up to the member's
max_sectors_kb). So the pieces of one plug's bios are given the plug's first instant: the
member's queue merges them (:func:`.block_layer.merge`) and the application waits for them
together, as fsync waits for the whole run (filemap_write_and_wait_range) rather than bio by bio.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._split import device_names, route, flushes_of, positive_int, ranged, split_periodic, strip_preflush
from .stream import Flag, Op, Stream

__all__ = ["dm_striped", "stripe_map", "plug_first", "plug_times", "PLUG_GAP_S"]

#: Issue instants at most this far apart belong to one plug: the file system's write-back places
#: the full bios of one run a nanosecond apart (:mod:`.fs`, emit_data); a workload's own calls are
#: microseconds apart or more.
PLUG_GAP_S = 1e-8
#: Requests that end a plug's run: metadata (the journal's blocks, written after the data they
#: commit), FUA and PREFLUSH writes (ordered against what came before), a dm-thin provisioning write.
_OWN_INSTANT = int(Flag.META | Flag.FUA | Flag.PREFLUSH | Flag.ALLOC)


def plug_first(stream: Stream) -> np.ndarray:
    """Each request's plug, as the index of the plug's first request (see the module docstring): a
    run, in stream order, of reads or of writes with no flag of ``_OWN_INSTANT``, each issued at
    most :data:`PLUG_GAP_S` after the one before; any other request is a plug of its own."""
    t = stream.time_s
    plain = ((stream.op == Op.READ) | (stream.op == Op.WRITE)) & ((stream.flags & _OWN_INSTANT) == 0)
    cont = np.zeros(t.size, bool)
    cont[1:] = plain[1:] & plain[:-1] & (stream.op[1:] == stream.op[:-1]) & (t[1:] - t[:-1] >= 0) \
        & (t[1:] - t[:-1] <= PLUG_GAP_S)
    first = np.flatnonzero(~cont)
    return first[np.cumsum(~cont) - 1]


def plug_times(stream: Stream) -> np.ndarray:
    """Each request's issue time, the first instant of its plug (:func:`plug_first`)."""
    return stream.time_s[plug_first(stream)]


def stripe_map(off: np.ndarray, chunk_bytes: int, n_devices: int):
    """(device number, device offset) of each byte address ``off`` (no device offset added)."""
    chunk = off // chunk_bytes
    return chunk % n_devices, (chunk // n_devices) * chunk_bytes + off % chunk_bytes


def _offsets(layer: str, device_offset_bytes, n: int) -> np.ndarray:
    vals = np.broadcast_to(np.asarray(device_offset_bytes), (n,)) if np.ndim(device_offset_bytes) == 0 else np.asarray(device_offset_bytes)
    if vals.shape != (n,) or not np.issubdtype(vals.dtype, np.integer) or (vals < 0).any():
        raise ValueError(f"{layer}: device_offset_bytes = {device_offset_bytes!r} must be one non-negative integer or one per device")
    return vals.astype(np.int64)


def striped_pieces(layer: str, stream: Stream, devices: Sequence[str], chunk_bytes: int, device_offset_bytes=0):
    """The chunk pieces of the ranged requests: (names, device number per piece, piece stream)."""
    names = device_names(layer, devices, 1)
    chunk_bytes = positive_int(layer, "chunk_bytes", chunk_bytes)
    offs = _offsets(layer, device_offset_bytes, len(names))
    r = ranged(stream)
    idx, off, size = split_periodic(stream.offset_bytes[r], stream.size_bytes[r], chunk_bytes)
    dev, dev_off = stripe_map(off, chunk_bytes, len(names))
    src = r[idx]
    pieces = Stream(plug_times(stream)[src], stream.op[src], dev_off + offs[dev], size, strip_preflush(stream.flags[src]),
                    src)
    return names, dev, pieces


def dm_striped(stream: Stream, devices: Sequence[str], chunk_bytes: int, device_offset_bytes=0) -> dict[str, Stream]:
    """One stream per device of ``devices``; ``parent`` is the input index."""
    names, dev, pieces = striped_pieces("dm-striped", stream, devices, chunk_bytes, device_offset_bytes)
    return route(names, [(None, flushes_of(stream)), (dev, pieces)])
