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

from diskmodel.calibrate.harness.heap import collector_paused

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


#: The shape probe (:func:`shape_probe`): its reads' size [bytes], the caller's gaps before them and the
#: server's delays (holds) it cycles through (the control's ``probe_delays_s``) [s]. The two cycles' lengths
#: are coprime, so every gap meets every hold; the gaps and holds span those of a drive's requests, from
#: back to back to a long seek's.
SHAPE_BYTES = 4096
SHAPE_GAPS_S = (0.0, 0.2e-3, 0.5e-3, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3)
SHAPE_DELAYS_S = (0.0, 0.3e-3, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3)
#: Reads of the shape probe: each gap with each hold four times (the first :data:`SHAPE_WARMUP` left out).
SHAPE_READS = 4 * len(SHAPE_GAPS_S) * len(SHAPE_DELAYS_S)
SHAPE_WARMUP = 16


def shape_probe(fd: int, span_blocks: int, *, sleep=time.sleep, monotonic=time.monotonic) -> list:
    """The shape probe's reads on *fd* (O_DIRECT; the server serving them after the delays of
    :data:`SHAPE_DELAYS_S` in turn): :data:`SHAPE_READS` of :data:`SHAPE_BYTES`, each after the next of
    :data:`SHAPE_GAPS_S`, at offsets spread over *span_blocks* 4 KiB blocks. Their stamps, as
    :func:`way_in_by_size` takes them plus the gap: ``(size, offset, issued, completed, gap)``."""
    import mmap
    import os

    buf = mmap.mmap(-1, SHAPE_BYTES)
    stamps = []
    try:
        view = memoryview(buf)
        with collector_paused():  # no collection timed as the path's
            for i in range(SHAPE_READS):
                gap = SHAPE_GAPS_S[i % len(SHAPE_GAPS_S)]
                offset = (i * 104_729 % max(span_blocks, 1)) * 4096
                if gap:
                    sleep(gap)
                t = monotonic()
                os.preadv(fd, [view], offset)
                stamps.append((SHAPE_BYTES, offset, t, monotonic(), gap))
        view.release()
    finally:
        buf.close()
    return stamps


def shape_rows(stamps, frame, t0: float) -> list:
    """The shape probe's reads joined to the server's log *frame* (its rows in order of entry, every reader's):
    ``(gap, delay, idle, way_in, held, way_back)`` each after the warm-up, where idle is the entry less the
    server's answer to the row before, held the server's delay and the way back from that deadline (the
    server sets its deadlines so, and returns late as it did here: the size probe's round trips hold its
    lateness too). LookupError naming the first read without its row."""
    entry = frame["entry_s"].to_numpy() + t0
    done = frame["done_s"].to_numpy() + t0
    delay = frame["service_s"].to_numpy()
    keys = list(zip(frame["offset_bytes"].astype(int).tolist(), frame["size_bytes"].astype(int).tolist()))
    index: dict[tuple[int, int], list[int]] = {}
    for j, key in enumerate(keys):
        index.setdefault(key, []).append(j)
    rows = []
    for i, (size, offset, issued, completed, gap) in enumerate(stamps):
        js = index.get((int(offset), int(size)), [])
        j = next((j for j in js if issued <= entry[j] <= completed), None)
        if j is None:
            raise LookupError(f"the probe read of {size} bytes at {offset} issued at {issued:.6f} s")
        js.remove(j)
        if i >= SHAPE_WARMUP and j > 0:   # the way back from the deadline: the server's lateness is part of it
            rows.append((gap, float(delay[j]), float(entry[j] - done[j - 1]), float(entry[j] - issued),
                         float(delay[j]), float(completed - entry[j] - delay[j])))
    return rows


def shape_from_log(stamps, log_path, *, ref_in_s: float, ref_back_s: float, wait_s: float = LOG_WAIT_S) -> dict:
    """The legs' tables (:func:`~diskmodel.calibrate.emulate.path_shape.shape_tables`) from the shape probe's
    *stamps* and the server's request log at *log_path*, read again until it holds each read's row, or for
    *wait_s* (RuntimeError then)."""
    from diskmodel.calibrate.emulate.path_shape import shape_tables
    from diskmodel.calibrate.emulate.requestlog import read_log

    deadline = time.monotonic() + wait_s
    while True:
        why = "cannot be read"
        try:
            frame = read_log(log_path)
            t0 = float(frame.attrs["t0_monotonic_s"])
            frame = frame[frame["probe"].astype(bool)].sort_values("entry_s", kind="stable")
            return shape_tables(shape_rows(stamps, frame, t0),
                                ref_in_s=ref_in_s, ref_back_s=ref_back_s)
        except (OSError, ValueError, KeyError) as exc:
            why = f"cannot be read ({exc})"
        except LookupError as exc:
            why = f"has no entry for {exc.args[0]}"
        if time.monotonic() >= deadline:
            raise RuntimeError(f"the emulated drive's request log {log_path} {why}, {wait_s:g} s after the shape "
                               "probe: the path's legs cannot be measured")
        time.sleep(0.1)


def write_control(path, control: dict) -> None:
    """Write the server's control file at *path* whole (a temporary file renamed over it): the server reads it
    on each probe read."""
    import json
    import os

    tmp = os.path.join(os.path.dirname(path), ".control.json.tmp")
    with open(tmp, "w") as f:
        json.dump(control, f)
    os.replace(tmp, path)


def measure_shape(device: str, capacity_bytes: int, control_path, log_path, realtime_priority: int | None,
                  measured: dict) -> dict:
    """The legs' tables of the path to *device* (:func:`shape_from_log`), each less the leg of
    :data:`SHAPE_BYTES` that *measured* (the size probe's control) gives: the server is told to hold its probe
    reads :data:`SHAPE_DELAYS_S` in turn (the control's ``probe_delays_s``), and :func:`shape_probe` reads it
    under SCHED_FIFO at *realtime_priority*, as the path then serves."""
    import os

    from diskmodel.calibrate.emulate.server import OP_READ, path_cost_table, path_in_table, path_legs_s, realtime

    ref_in, ref_back = path_legs_s(path_cost_table(measured), OP_READ, SHAPE_BYTES, path_in_table(measured))

    write_control(control_path, {"probe_delays_s": list(SHAPE_DELAYS_S)})
    fd = os.open(device, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    try:
        with realtime(realtime_priority):
            stamps = shape_probe(fd, max(capacity_bytes // 4096 - 1, 1))
    finally:
        os.close(fd)
    return shape_from_log(stamps, log_path, ref_in_s=ref_in, ref_back_s=ref_back)
