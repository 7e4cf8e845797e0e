"""dm-striped: a request split at chunk boundaries and spread round-robin over N devices.

drivers/md/dm-stripe.c, stripe_map_sector: ``chunk = offset // chunk_bytes``, device
``chunk % N``, device offset ``device_offset + (chunk // N) * chunk_bytes + offset % chunk_bytes``;
dm-stripe sets the target's max_io_len to the chunk, so device-mapper splits every bio at the chunk
boundaries (dm.c, max_io_len). Flushes go to every device (stripe_map: a flush is sent to each of
the N stripes through num_flush_bios = N).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._split import device_names, route, flushes_of, positive_int, ranged, split_periodic, strip_preflush
from .stream import Stream

__all__ = ["dm_striped", "stripe_map"]


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
    pieces = Stream(stream.time_s[src], stream.op[src], dev_off + offs[dev], size, strip_preflush(stream.flags[src]), src)
    return names, dev, pieces


def dm_striped(stream: Stream, devices: Sequence[str], chunk_bytes: int, device_offset_bytes=0) -> dict[str, Stream]:
    """One stream per device of ``devices``; ``parent`` is the input index."""
    names, dev, pieces = striped_pieces("dm-striped", stream, devices, chunk_bytes, device_offset_bytes)
    return route(names, [(None, flushes_of(stream)), (dev, pieces)])
