"""dm-striped: a request split at chunk boundaries and spread round-robin over N devices.

drivers/md/dm-stripe.c, stripe_map_sector: ``chunk = offset // chunk_bytes``, device
``chunk % N``, device offset ``device_offset + (chunk // N) * chunk_bytes + offset % chunk_bytes``;
dm-stripe sets the target's max_io_len to the chunk, so device-mapper splits every bio at the chunk
boundaries (dm.c, max_io_len). Flushes go to every device (stripe_map: a flush is sent to each of
the N stripes through num_flush_bios = N).

One plug (:func:`plug_first`, :func:`plug_flushes`). The file system's write-back submits the bios of one run of
dirty pages inside one plug (ext4_writepages, write_cache_pages: blk_start_plug ..
blk_finish_plug); the I/O path issues those bios a nanosecond apart (a full bio takes no more
merges on the file system's own device: :mod:`.fs`). Below a stripe their pieces meet again: each
clone reaches its member's queue through the same task's plug, and blk_attempt_plug_merge
(block/blk-merge.c) looks through a plug holding several queues for the member's own latest
request and merges the piece into it when they are contiguous (up to the member's
max_sectors_kb). So the pieces of one plug's bios are given the plug's first instant: the
member's queue merges them (:func:`.block_layer.merge`) and the application waits for them
together, as fsync waits for the whole run (filemap_write_and_wait_range) rather than bio by bio;
except where the plug was flushed between them (:func:`plug_flushes`: chunks of 128 KiB or more).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._split import device_names, route, flushes_of, positive_int, ranged, split_periodic, strip_preflush
from .stream import Flag, Op, Stream

__all__ = ["dm_striped", "stripe_map", "plug_first", "plug_flushes", "PLUG_GAP_S", "PLUG_FLUSH_BYTES"]

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


#: block/blk-mq.c, blk_add_rq_to_plug: a request that cannot merge into the plug finds the one added
#: last at least this large (BLK_PLUG_FLUSH_SIZE) and flushes the plug first.
PLUG_FLUSH_BYTES = 128 * 1024


def plug_flushes(plug: np.ndarray, dev: np.ndarray, off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per piece (in submission order, *plug* its plug's first request), how many times its plug was
    flushed before it went in. A piece merges into its member's request in the plug where it follows
    it (blk_attempt_plug_merge); any other piece makes a new request, and flushes the plug first where
    the request added last holds :data:`PLUG_FLUSH_BYTES` or more, which go to their queues and take no
    more merges in the plug. So chunks of at least 128 KiB spread over several members reach each member
    one request per chunk, while smaller chunks merge into one request per member (blktrace and the
    emulated drives' logs in the VM: 256 KiB and 64 KiB stripes)."""
    out = np.zeros(plug.size, np.int64)
    current, ends, last, last_bytes, k = None, {}, None, 0, 0
    for i, (p, d, o, n) in enumerate(zip(plug.tolist(), dev.tolist(), off.tolist(), size.tolist())):
        if p != current:
            current, ends, last, last_bytes, k = p, {}, None, 0, 0
        if ends.get(d) == o:
            ends[d] = o + n
            last_bytes += n if d == last else 0
        else:
            if last is not None and last_bytes >= PLUG_FLUSH_BYTES:
                k, ends = k + 1, {}
            ends[d], last, last_bytes = o + n, d, n
        out[i] = k
    return out


def _after_flush(plug: np.ndarray, dev: np.ndarray, flushes: np.ndarray) -> np.ndarray:
    """0 for the pieces that merge at their plug's instant, 1 for those that merge a nanosecond after it
    (the member's queue merges only within an instant: :func:`.block_layer.merge`). Where a plug was
    flushed, each member's first piece went to its idle drive alone, and its later pieces, arriving
    while that one is served, merged with each other in the scheduler (blk_mq_sched_bio_merge): the
    emulated drives' logs in the VM show a 256 KiB stripe's 1 MiB of write-back per member as 256 KiB
    and 768 KiB, and its 2 MiB read-ahead window as two 256 KiB reads per member."""
    flushed = np.zeros(plug.size, bool)
    if flushes.any():
        hit = np.unique(plug[flushes > 0])
        flushed = np.isin(plug, hit)
    key = plug * (int(dev.max()) + 1 if dev.size else 1) + dev
    _, first_of = np.unique(key, return_index=True)
    later = np.ones(plug.size, bool)
    later[first_of] = False
    return (flushed & later).astype(np.int64)


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
    first = plug_first(stream)[src]
    at = stream.time_s[first] + _after_flush(first, dev, plug_flushes(first, dev, dev_off, size)) * 1e-9
    pieces = Stream(at, stream.op[src], dev_off + offs[dev], size, strip_preflush(stream.flags[src]), src)
    return names, dev, pieces


def dm_striped(stream: Stream, devices: Sequence[str], chunk_bytes: int, device_offset_bytes=0) -> dict[str, Stream]:
    """One stream per device of ``devices``; ``parent`` is the input index."""
    names, dev, pieces = striped_pieces("dm-striped", stream, devices, chunk_bytes, device_offset_bytes)
    return route(names, [(None, flushes_of(stream)), (dev, pieces)])
