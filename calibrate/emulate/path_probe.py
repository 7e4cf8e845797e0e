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


def _read_probe_rows(log_path):
    """The probe rows of the server's log and its ``t0_monotonic_s``; None where the log cannot be read yet."""
    from diskmodel.calibrate.emulate.requestlog import read_log

    try:
        frame = read_log(log_path)
    except (OSError, ValueError):
        return None
    if "entry_s" not in frame or "t0_monotonic_s" not in frame.attrs:
        return None
    return frame[frame["probe"].astype(bool)], float(frame.attrs["t0_monotonic_s"])


def _match(stamps, rows, t0):
    """Each probe read's way in, by size, and the first read without an entry (None where all have one)."""
    waiting: dict[tuple[int, int], list[float]] = {}
    for off, size, entry in zip(rows["offset_bytes"], rows["size_bytes"], rows["entry_s"]):
        waiting.setdefault((int(off), int(size)), []).append(t0 + float(entry))
    legs: dict[int, list[float]] = {}
    for stamp in stamps:
        size, offset, issued, completed = stamp
        entries = waiting.get((int(offset), int(size)), [])
        match = next((e for e in entries if issued <= e <= completed), None)
        if match is None:
            return legs, stamp
        entries.remove(match)
        legs.setdefault(int(size), []).append(match - issued)
    return legs, None


def way_in_by_size(stamps, log_path, *, wait_s: float = LOG_WAIT_S) -> list[list]:
    """Each probed size's way in [s], ``[[bytes, s], ...]`` by size: the median, over its reads after the
    first quarter (which warm the path up, as for the round trip), of the server's entry less the read's
    issue. *stamps*: the probe's reads in order, ``(size_bytes, offset_bytes, issued_s, completed_s)`` on
    the monotonic clock; *log_path*: the server's request log, whose probe rows (other readers' too, such
    as udev's) are matched to them by offset and size, in order; the log is read again until each read has
    its row, or for *wait_s*. RuntimeError where it does not hold them all."""
    deadline = time.monotonic() + wait_s
    while True:
        read = _read_probe_rows(log_path)
        missing = stamps[0] if stamps else None
        if read is not None:
            legs, missing = _match(stamps, *read)
            if missing is None:
                return [[n, statistics.median(seen[len(seen) // 4:])] for n, seen in sorted(legs.items())]
        if time.monotonic() >= deadline:
            size, offset, issued, _ = missing
            raise RuntimeError(f"the emulated drive's request log {log_path} has no entry for the probe read of "
                               f"{size} bytes at {offset} issued at {issued:.6f} s, {wait_s:g} s after the probe: "
                               "the path's legs cannot be measured")
        time.sleep(0.1)
