"""A partition: the disk sees the partition's requests shifted by the partition's start.

The kernel's partition remapping (block/blk-core.c, blk_partition_remap) adds the partition's start
sector to every bio and fails a bio past the partition's end (bio_check_eod). Flushes carry no range
and pass through unchanged.
"""

from __future__ import annotations

import numpy as np

from ._split import positive_int
from .stream import Op, Stream

__all__ = ["partition"]


def partition(stream: Stream, start_bytes: int, length_bytes: int) -> Stream:
    """The disk's stream for ``stream`` issued to a partition of ``length_bytes`` at ``start_bytes``.

    Each output request's ``parent`` is its input index. A request reaching past the partition's end
    raises ValueError naming it (the kernel fails such a bio rather than clamping it).
    """
    if isinstance(start_bytes, bool) or not isinstance(start_bytes, (int, np.integer)) or start_bytes < 0:
        raise ValueError(f"partition: start_bytes = {start_bytes!r} must be a non-negative integer")
    length_bytes = positive_int("partition", "length_bytes", length_bytes)
    has_range = stream.op != Op.FLUSH
    past = has_range & (stream.end_bytes > length_bytes)
    if past.any():
        i = int(np.flatnonzero(past)[0])
        raise ValueError(
            f"partition: request {i} (offset_bytes {int(stream.offset_bytes[i])}, size_bytes "
            f"{int(stream.size_bytes[i])}) ends past the partition's length_bytes {length_bytes}"
        )
    return Stream(
        stream.time_s,
        stream.op,
        np.where(has_range, stream.offset_bytes + int(start_bytes), 0),
        stream.size_bytes,
        stream.flags,
        np.arange(len(stream), dtype=np.int64),
    )
