"""Replaying a DiskSim validation trace on a block device: O_DIRECT, one request at a time.

:func:`replay_trace` issues each request of a
:class:`~diskmodel.data.disksim.Trace` (its LBNs in 512-byte blocks) with
``preadv``/``pwritev`` on the device opened with ``O_DIRECT``, waits the
trace's gap between one completion and the next arrival, and returns the time
each request took as the caller sees it: what the trace's measured times are
compared with (``diskmodel.model.predictions.validation.disksim_demerit_s``). Writes
write zeros, so a replay destroys the device's data: only for emulated
devices, which the run created.
"""
from __future__ import annotations

import mmap
import os
import time
from typing import NamedTuple

import numpy as np

from diskmodel.calibrate.emulate.server import realtime, wait_until

__all__ = ["Replayed", "excess_parts", "replay_trace", "replay_trace_stamped"]

BLOCK_BYTES = 512


class Replayed(NamedTuple):
    """Each request's issue and completion on the host's monotonic clock [s], as the replay saw them."""

    issued_s: np.ndarray
    completed_s: np.ndarray

    @property
    def took_s(self) -> np.ndarray:
        return self.completed_s - self.issued_s


def replay_trace(device: str, trace, *, limit: int | None = None, realtime_priority: int | None = None) -> np.ndarray:
    """Each request's time [s] from issue to completion, replaying *trace* (its first *limit* requests);
    with *realtime_priority*, under SCHED_FIFO at that priority (a busy host then delays the replay's own
    wake-ups less)."""
    return replay_trace_stamped(device, trace, limit=limit, realtime_priority=realtime_priority).took_s


def replay_trace_stamped(device: str, trace, *, limit: int | None = None,
                         realtime_priority: int | None = None) -> Replayed:
    """:func:`replay_trace`, with each request's issue and completion stamps (:class:`Replayed`): set beside
    the server's stamps in the request log, they split the time the path took into its way in and out."""
    n = len(trace) if limit is None else min(int(limit), len(trace))
    if n < 1:
        raise ValueError(f"limit must leave at least one request of the trace (got {limit!r})")
    longest = int(trace.blocks[:n].max()) * BLOCK_BYTES
    buf = mmap.mmap(-1, (longest + 4095) // 4096 * 4096)  # page-aligned, as O_DIRECT needs
    issued, completed = np.empty(n), np.empty(n)
    fd = os.open(device, os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        ends = (trace.lbn[:n] + trace.blocks[:n]) * BLOCK_BYTES
        if ends.max() > size:
            i = int(np.argmax(ends > size))
            raise ValueError(f"request {i} of the trace ({trace.where(i)}) ends beyond {device} ({size} bytes)")
        with realtime(realtime_priority):
            _replay(fd, buf, trace, n, issued, completed)
    finally:
        os.close(fd)
        buf.close()
    return Replayed(issued, completed)


def _replay(fd: int, buf, trace, n: int, issued: np.ndarray, completed: np.ndarray) -> None:
    next_issue = time.monotonic()
    for i in range(n):
        view = memoryview(buf)[:int(trace.blocks[i]) * BLOCK_BYTES]
        offset = int(trace.lbn[i]) * BLOCK_BYTES
        start = wait_until(next_issue)
        if trace.is_write[i]:
            os.pwritev(fd, [view], offset)
        else:
            os.preadv(fd, [view], offset)
        done = time.monotonic()
        view.release()
        issued[i], completed[i] = start, done
        next_issue = done + float(trace.interarrival_s[i])


def excess_parts(served, stamps: Replayed) -> dict:
    """Each replayed request's excess (the time the replay saw less the simulated wait and service) split by
    the server's stamps: the kernel's way in (issue to the server's entry), the server's lateness, the way out
    (the server's return to completion) and the path's round trip the server took off the request (its way in,
    off the arrival: its entry less its arrival on the simulated clock; and its way back, off the return: the
    simulated completion less the deadline it returned at). Per request,
    excess = in + out - cost taken off + lateness.

    *served*: the request log's rows (:func:`~diskmodel.calibrate.emulate.requestlog.read_log`) of the
    replay's requests, in order, with the log's metadata in ``attrs`` (``t0_monotonic_s``); *stamps*: the
    replay's (:func:`replay_trace_stamped`). Arrays [s] keyed ``excess``, ``path_in``, ``path_out``,
    ``lateness``, ``cost_taken_off`` and ``simulated``."""
    t0 = served.attrs["t0_monotonic_s"]
    entry, arrival = served["entry_s"].to_numpy(), served["arrival_s"].to_numpy()
    done, lateness = served["done_s"].to_numpy(), served["lateness_s"].to_numpy()
    simulated = (served["wait_s"] + served["service_s"]).to_numpy()
    way_back = arrival + simulated - (done - lateness)  # the simulated completion less the deadline
    return {"excess": stamps.took_s - simulated, "path_in": entry + t0 - stamps.issued_s,
            "path_out": stamps.completed_s - (done + t0), "lateness": lateness,
            "cost_taken_off": entry - arrival + way_back, "simulated": simulated}
