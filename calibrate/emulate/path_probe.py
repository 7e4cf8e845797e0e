"""The path's two legs, measured: how much of an emulated request's round trip comes before the server
sees it (the way in) and how much after it returns (the way back), by request size.

The probe of :mod:`~diskmodel.calibrate.emulate.devices` times whole round trips of O_DIRECT reads
(issue to completion, on the monotonic clock). The server stamps each request's entry and return on the
same clock (:mod:`~diskmodel.calibrate.emulate.requestlog`: ``entry_s`` and ``done_s`` from
``t0_monotonic_s``), so each probe read's way in is its entry less its issue. The two legs matter apart:
the drive must see a request when its caller issued it, not earlier by the part of the path still ahead
of it (:func:`~diskmodel.calibrate.emulate.server.path_legs_s`). A long read's way in is not a short
one's: the loop device, FUSE, nbdfuse and nbdkit each set up a buffer of the request's length before the
server's call (pages pinned and allocated), so both legs grow with the bytes.
"""
from __future__ import annotations

import statistics
import time

__all__ = ["LOG_WAIT_S", "way_in_by_size"]

#: How long the probe waits for the server's log to hold the probe reads' rows (the log is written at
#: least every requestlog.FLUSH_S) [s].
LOG_WAIT_S = 10.0


def _probe_rows(log_path, count: int, wait_s: float):
    from diskmodel.calibrate.emulate.requestlog import read_log

    deadline = time.monotonic() + wait_s
    while True:
        try:
            frame = read_log(log_path)
        except (OSError, ValueError):
            frame = None
        if frame is not None and "entry_s" in frame:
            rows = frame[frame["probe"].astype(bool)]
            if len(rows) >= count:
                return rows, float(frame.attrs["t0_monotonic_s"])
        if time.monotonic() >= deadline:
            held = 0 if frame is None else int(frame["probe"].astype(bool).sum())
            raise RuntimeError(f"the emulated drive's request log {log_path} holds {held} of the {count} probe reads "
                               f"{wait_s:g} s after they completed: the path's legs cannot be measured")
        time.sleep(0.1)


def way_in_by_size(stamps, log_path, *, wait_s: float = LOG_WAIT_S) -> list[list]:
    """Each probed size's way in [s], ``[[bytes, s], ...]`` by size: the median, over its reads after the
    first quarter (which warm the path up, as for the round trip), of the server's entry less the read's
    issue. *stamps*: the probe's reads in order, ``(size_bytes, offset_bytes, issued_s, completed_s)`` on
    the monotonic clock; *log_path*: the server's request log, whose probe rows are matched to them by
    offset and size, in order. RuntimeError where the log does not hold them all."""
    rows, t0 = _probe_rows(log_path, len(stamps), wait_s)
    waiting: dict[tuple[int, int], list[float]] = {}
    for off, size, entry in zip(rows["offset_bytes"], rows["size_bytes"], rows["entry_s"]):
        waiting.setdefault((int(off), int(size)), []).append(t0 + float(entry))
    legs: dict[int, list[float]] = {}
    for size, offset, issued, completed in stamps:
        entries = waiting.get((int(offset), int(size)), [])
        match = next((e for e in entries if issued <= e <= completed), None)
        if match is None:
            raise RuntimeError(f"the emulated drive's request log has no entry for the probe read of {size} bytes "
                               f"at {offset} issued at {issued:.6f} s: the path's legs cannot be measured")
        entries.remove(match)
        legs.setdefault(int(size), []).append(match - issued)
    return [[n, statistics.median(seen[len(seen) // 4:])] for n, seen in sorted(legs.items())]
