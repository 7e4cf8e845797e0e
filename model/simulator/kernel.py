"""The simulation kernel: the request loop of :func:`diskmodel.model.simulator.simulate.simulate_requests`
and :class:`~diskmodel.model.simulator.session.DriveSession` (numba), after DiskSim 4.0's disk model
(``src/disksim_diskctlr.c``, ``disksim_diskcache.c``; the rules it follows are listed in
:mod:`diskmodel.model.simulator.simulate`). Each request goes through named phases: what the drive
did in the background by its arrival (:func:`_catch_up`), then the read path
(:mod:`~diskmodel.model.simulator.read_path`) or the write path
(:mod:`~diskmodel.model.simulator.write_path`), each split by case. Every phase reads and writes the
carried state in its record (:data:`~diskmodel.model.simulator.inputs.CARRIED`) and the arrays' slots
by their names (:mod:`~diskmodel.model.simulator.state`).

Pure model code: arrays in, arrays out; no I/O and no clocks.
"""
from __future__ import annotations

from numba import njit

from .immediate import _immediate_front
from .inputs import OUT_ARRIVAL, OUT_COMPLETION, OUT_HIT, OUT_LATENCY, OUT_MEDIA, OUT_SEEK, OUT_SERVICE
from .mapping import lbn_to_pbn_one
from .nocache import _forget_buffered
from .readahead import _segment_end_at
from .state import (INT_CACHING, INT_SEGMENTS, INT_SEGMENT_BLOCKS, LAYOUT_FIRST_LBN, REAL_ANSWER_DOWN_S,
                    REAL_HOST_DOWN_S, REAL_HOST_TURNAROUND_S, REAL_IMMEDIATE_READ, SEG_END, SEG_START, STAT_LATENCY,
                    STAT_MEDIA, STAT_SEEK, WORK_STATS)
from .read_path import _serve_read
from .write_path import _serve_write


# _nrt=False (here and in the helpers it calls): numba's reference counting of the arrays that
# every helper call and every inlined lbn_to_pbn_one unpack from the layout's tuple took most of
# the run time (atomic increments and decrements); nothing here allocates, the caller owns the arrays.
# The phases (here, read_path.py and write_path.py) are each called once per loop and inlined into it
# at numba's IR level (inline="always"): compiled as functions of their own, each one typed, lowered
# and optimised with its callees again, the cold compile took markedly longer.
@njit(cache=True, _nrt=False)
def _simulate(drive, buf, requests, absolute, out, carried):
    """The request loop. *drive*: the drive's arrays (:attr:`KernelInputs.drive
    <diskmodel.model.simulator.inputs.KernelInputs.drive>`); *buf*: the working arrays of the caller
    (:attr:`~diskmodel.model.simulator.inputs.KernelInputs.buffer`: the segments, their last use, the
    per-block rows, the read-ahead's block times and the prebuffered writes' queue; zeroed before the
    first call, kept between calls); *requests*: (is_write, lbn, blocks, times); *carried* (one record
    of :data:`~diskmodel.model.simulator.inputs.CARRIED`) holds the state carried from request to
    request on entry and on return, and the phases below read and write it there, so a call
    continues where the last one ended. *times*: with *absolute*, each request's arrival [s] (served
    once the last one has completed); else the gap after each request's completion before the next
    one arrives (the first arriving at the carried clock). *out*: rows OUT_SERVICE .. OUT_COMPLETION
    per request."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    is_write, lbn, blocks, times = requests
    stats = work[WORK_STATS]
    c = carried[0]
    t = c.clock_s
    # a request's way down to the disk (inputs._host_path_s) and the disk's "Per-request overhead
    # time" before its controller takes it (disk_event_arrive: DEVICE_OVERHEAD_COMPLETE, then
    # disk_request_arrive): the buffer's state, hits and holds are those of that moment
    host_down = real[REAL_HOST_DOWN_S]
    # the disk holds its bus until the driver's answer to the completion comes down through the
    # controller; a request arriving before waits for the bus (inputs._host_path_s)
    answer_down = real[REAL_ANSWER_DOWN_S]
    turnaround = real[REAL_HOST_TURNAROUND_S]
    for i in range(lbn.size):
        if absolute:
            # queue depth 1: a request arriving before the last one completed waits for it, and the
            # host dispatches it once it has taken that completion (DriveParameters.host_turnaround_s)
            if times[i] > t:
                t = times[i]
            elif c.requests + i > 0:
                t = t + turnaround
        elif i > 0:
            t = t + times[i - 1]
        # at the disk: after the controller and the disk's bus (inputs._host_path_s)
        arrival = max(t, c.bus_free_s) + host_down
        first = lbn[i]
        n = blocks[i]
        w = 1 if is_write[i] else 0
        stats[STAT_SEEK] = 0.0
        stats[STAT_LATENCY] = 0.0
        stats[STAT_MEDIA] = 0.0
        _catch_up(drive, buf, c, arrival)
        if w == 0:
            done, hit = _serve_read(drive, buf, c, first, n, arrival)
        else:
            done, hit = _serve_write(drive, buf, c, first, n, arrival)
        out[OUT_SERVICE, i] = done - t
        out[OUT_ARRIVAL, i] = t
        out[OUT_HIT, i] = hit.value
        out[OUT_SEEK, i] = stats[STAT_SEEK]
        out[OUT_LATENCY, i] = stats[STAT_LATENCY]
        out[OUT_MEDIA, i] = stats[STAT_MEDIA]
        out[OUT_COMPLETION, i] = done
        c.previous_write = w
        c.previous_end = first + n
        c.previous_blocks = n
        t = done
        c.bus_free_s = done + answer_down
    c.clock_s = t
    c.requests += lbn.size


@njit(cache=True, _nrt=False, inline="always")
def _catch_up(drive, buf, c, arrival):
    """What the drive has done in the background by the *arrival* of a request: the read-ahead's
    blocks read by then (its end, when it is over), a preseeking read's segment emptied, and
    without caching, the buffer forgotten."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    caching = ints[INT_CACHING]        # "Enable caching in buffer" (diskmodel.model.simulator.nocache)
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    if c.read_ahead_active:
        # blocks done by now: pf_ready rises along the read-ahead, so a binary search
        k = c.read_ahead_done
        hi = c.read_ahead_count
        while k < hi:
            mid = (k + hi) // 2
            if pf_ready[mid] <= arrival:
                k = mid + 1
            else:
                hi = mid
        if k > c.read_ahead_done:
            c.read_ahead_done = k
            _segment_end_at(seg_start, seg_end, c.read_ahead_segment, c.read_ahead_first + k, seg_size)
        if real[REAL_IMMEDIATE_READ] != 0.0:
            # blocks read ahead of the front ("Immediate buffer read") push the circular
            # segment's first blocks out (disk_buffer_segment_wrap to immedend)
            front = _immediate_front(arrays, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done,
                                     pf_ready, arrival, total)
            if front - seg_start[c.read_ahead_segment] > seg_size:
                seg_start[c.read_ahead_segment] = front - seg_size
        if c.read_ahead_done >= c.read_ahead_count:
            c.read_ahead_active = False
            c.mechanism_free_s = pf_ready[c.read_ahead_count - 1]
            c.cylinder, c.head, _, _, _ = lbn_to_pbn_one(c.read_ahead_first + c.read_ahead_count - 1, arrays)
    if c.emptied_segment >= 0:
        # DiskSim's disk_release_hda with preseeking sets the read's segment's state to the
        # truth value of its caching test, 1, which is BUFFER_EMPTY: its blocks are no longer
        # hits, and disk_buffer_select_read_segment takes an empty segment before a clean one
        # (the least recently used first: the segment list is in LRU order)
        seg_end[c.emptied_segment] = seg_start[c.emptied_segment]
        c.emptied_segment = -1
    if not caching:
        _forget_buffered(seg_start, seg_end, nseg)
