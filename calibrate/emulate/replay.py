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

import contextlib
import ctypes
import mmap
import os
import time
from typing import NamedTuple

import numpy as np

from diskmodel.calibrate.emulate.server import realtime, wait_until
from diskmodel.calibrate.harness.heap import collector_paused

__all__ = ["Replayed", "excess_parts", "locked_memory", "median_of_repeats", "replay_trace", "replay_trace_stamped",
           "without_largest_excess"]

BLOCK_BYTES = 512
#: mlockall(2)'s flags: the pages mapped now and those mapped later
_MCL_CURRENT, _MCL_FUTURE = 1, 2


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


def replay_trace_stamped(device: str, trace, *, limit: int | None = None, realtime_priority: int | None = None,
                         lock_memory: bool = True, cpu: int | None = None) -> Replayed:
    """:func:`replay_trace`, with each request's issue and completion stamps (:class:`Replayed`): set beside
    the server's stamps in the request log, they split the time the path took into its way in and out.

    Nothing the loop touches faults during the replay: the one page-aligned buffer every request reuses and the
    stamp arrays are written once before it, and with *lock_memory* the process's pages are locked
    (:func:`locked_memory`) for the replay, so that a host reclaiming memory does not page its code out under
    it. *cpu*: the replay runs on that CPU alone (``sched_setaffinity``), its affinity put back after."""
    n = len(trace) if limit is None else min(int(limit), len(trace))
    if n < 1:
        raise ValueError(f"limit must leave at least one request of the trace (got {limit!r})")
    if cpu is not None and int(cpu) not in os.sched_getaffinity(0):
        raise ValueError(f"cpu must be one of this process's CPUs {sorted(os.sched_getaffinity(0))} (got {cpu!r})")
    longest = int(trace.blocks[:n].max()) * BLOCK_BYTES
    buf = mmap.mmap(-1, (longest + 4095) // 4096 * 4096)  # page-aligned, as O_DIRECT needs
    buf.write(bytes(len(buf)))  # its pages faulted in now, not by the first requests' copies
    issued, completed = np.empty(n), np.empty(n)
    issued.fill(0.0)  # the stamps' pages too
    completed.fill(0.0)
    fd = os.open(device, os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        ends = (trace.lbn[:n] + trace.blocks[:n]) * BLOCK_BYTES
        if ends.max() > size:
            i = int(np.argmax(ends > size))
            raise ValueError(f"request {i} of the trace ({trace.where(i)}) ends beyond {device} ({size} bytes)")
        # the collector off: a full collection between a request's stamp and its call would be timed as the drive's
        with _on_cpu(cpu), locked_memory(lock_memory), realtime(realtime_priority), collector_paused():
            _replay(fd, buf, trace, n, issued, completed)
    finally:
        os.close(fd)
        buf.close()
    return Replayed(issued, completed)


@contextlib.contextmanager
def _on_cpu(cpu: int | None):
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(cpu)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def locked_memory(lock: bool = True):
    """The process's pages locked in memory inside (``mlockall(MCL_CURRENT | MCL_FUTURE)``, mlockall(2)), unlocked
    after; yields whether they were locked (the call may be refused: no CAP_IPC_LOCK and a small
    RLIMIT_MEMLOCK, or too little memory), and the replay then runs as it would without."""
    if not lock:
        yield False
        return
    libc = ctypes.CDLL(None, use_errno=True)
    locked = libc.mlockall(_MCL_CURRENT | _MCL_FUTURE) == 0
    try:
        yield locked
    finally:
        if locked:
            libc.munlockall()


def median_of_repeats(took_by_repeat) -> np.ndarray:
    """Each request's median time [s] over the replays of one trace (one row per replay, one column per
    request; an even count of replays gives the mean of the middle two). A host stall delays the requests it
    meets; one that rarely meets the same request in two replays drops out of each request's median, while
    the drive's own times, which every replay reproduces, stay."""
    try:
        took = np.asarray(took_by_repeat, dtype=float)
    except ValueError:
        raise ValueError("took_by_repeat must be one row of request times per replay, each as long (got rows of "
                         f"{sorted({len(t) for t in took_by_repeat})} requests)") from None
    if took.ndim != 2 or took.shape[0] < 1 or took.shape[1] < 1:
        raise ValueError(f"took_by_repeat must be one row of request times per replay (got shape {took.shape})")
    if not np.isfinite(took).all():
        raise ValueError("took_by_repeat must be finite")
    return np.median(took, axis=0)


def without_largest_excess(took_s, simulated_s, fraction: float) -> np.ndarray:
    """*took_s* with the requests of the largest excess over *simulated_s* (the top *fraction* of them,
    at least one) given their simulated time: what the replay would have seen had the host not delayed
    them, to tell how much of a demerit those requests make."""
    took, simulated = np.asarray(took_s, dtype=float), np.asarray(simulated_s, dtype=float)
    if took.shape != simulated.shape or took.ndim != 1 or not len(took):
        raise ValueError(f"took_s and simulated_s must be equal-length 1-d arrays (got {took.shape}, "
                         f"{simulated.shape})")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1] (got {fraction!r})")
    out = took.copy()
    worst = np.argsort(took - simulated, kind="stable")[-max(int(len(took) * fraction), 1):]
    out[worst] = simulated[worst]
    return out


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
