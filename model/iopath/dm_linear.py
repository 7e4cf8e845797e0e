"""dm-linear: a table of segments, each mapping a range of the mapped device onto a range of a device.

A request crossing a segment boundary is split there (device-mapper splits a bio at each target's
end: drivers/md/dm.c, __split_and_process_bio / max_io_len_target_boundary), and each piece is
remapped to ``device_offset + (offset - start)`` (drivers/md/dm-linear.c, linear_map_sector).

Flushes: each member device gets one empty flush per flush or REQ_PREFLUSH request. device-mapper
sends an empty flush to every target (dm.c, __send_empty_flush); since Linux 6.10 a table of only
linear/striped targets sends one per device (flush_bypasses_map), which this model follows.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._split import flushes_of, route, ranged, split_at, strip_preflush
from .stream import Stream

__all__ = ["Segment", "dm_linear"]

#: One table line: the mapped device's ``start`` and ``length`` (bytes), the ``device`` name and the
#: byte offset on it.
Segment = tuple[int, int, str, int]


def _table(segments: Sequence[Segment]):
    if not segments:
        raise ValueError("dm-linear: segments is empty (a table needs at least one segment)")
    starts, lengths, devs, dev_offs = [], [], [], []
    expect = 0
    for i, seg in enumerate(segments):
        if len(seg) != 4:
            raise ValueError(f"dm-linear: segments[{i}] = {seg!r} is not (start, length, device, device_offset)")
        start, length, dev, dev_off = seg
        for name, v in (("start", start), ("length", length), ("device_offset", dev_off)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"dm-linear: segments[{i}] {name} = {v!r} must be a non-negative integer")
        if length == 0:
            raise ValueError(f"dm-linear: segments[{i}] length = 0 must be positive")
        if start != expect:
            # dm-table.c, dm_table_complete -> the targets must cover the device from 0 without gaps.
            raise ValueError(f"dm-linear: segments[{i}] start = {start} leaves a gap or overlap (expected {expect})")
        expect = start + length
        starts.append(start)
        lengths.append(length)
        devs.append(str(dev))
        dev_offs.append(dev_off)
    return np.array(starts, np.int64), np.array(lengths, np.int64), devs, np.array(dev_offs, np.int64)


def dm_linear(stream: Stream, segments: Sequence[Segment]) -> dict[str, Stream]:
    """One stream per device named in ``segments`` (in first-named order); ``parent`` is the input
    index. A request past the table's end raises ValueError naming it."""
    starts, lengths, devs, dev_offs = _table(segments)
    size_bytes = int(starts[-1] + lengths[-1])
    names = list(dict.fromkeys(devs))
    dev_no = np.array([names.index(d) for d in devs], np.int64)
    r = ranged(stream)
    past = stream.end_bytes[r] > size_bytes
    if past.any():
        i = int(r[np.flatnonzero(past)[0]])
        raise ValueError(f"dm-linear: request {i} ends at byte {int(stream.end_bytes[i])}, past the table's {size_bytes}")
    idx, off, size = split_at(stream.offset_bytes[r], stream.size_bytes[r], starts[1:])
    seg = np.searchsorted(starts, off, side="right") - 1
    src = r[idx]
    pieces = Stream(
        stream.time_s[src],
        stream.op[src],
        dev_offs[seg] + (off - starts[seg]),
        size,
        strip_preflush(stream.flags[src]),
        src,
    )
    return route(names, [(None, flushes_of(stream)), (dev_no[seg], pieces)])
