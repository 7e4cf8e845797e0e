"""What the simulation kernel (:func:`diskmodel.model.simulator.kernel._simulate`) is given: the checked
requests, the drive's numbers as the kernel's arrays, its working arrays, and the state it carries
from one request to the next (:data:`CARRIED`), shared by the whole-trace simulation
(:func:`~diskmodel.model.simulator.simulate.simulate_requests`) and the stepped one
(:class:`~diskmodel.model.simulator.session.DriveSession`).

Pure model code: numpy arrays and records, no I/O.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from .._checks import finite_scalar, show, whole_number
from .mapping import G4ZoneLayout
from ..drive.parameters import DriveParameters
from .state import (INT_ALMOST_READ_HITS, INT_CACHING, INT_COMBINE_SEQ_WRITES, INT_EXTRA_WRITE_DISCONNECT,
                    INT_FAST_WRITE_LEVEL, INT_HITS_ON_WRITES, INT_HOLD_BUS_READ, INT_HOLD_BUS_WRITE,
                    INT_IMMEDIATE_PARTIAL_HIT, INT_MAX_READ_AHEAD, INT_MIN_READ_AHEAD, INT_NEVER_DISCONNECT,
                    INT_PRESEEKING_LEVEL, INT_READ_AHEAD_ON_IDLE_HIT, INT_READ_AHEAD_OVER_REQUEST,
                    INT_READ_AHEAD_SCHEME, INT_READ_ANY_FREE, INT_SCHEDULING_POLICY, INT_SEGMENTS, INT_SEGMENT_BLOCKS,
                    INT_SEPARATE_WRITE_SEGMENT, INT_SLOTS, INT_SNEAKY_FULL_HITS, INT_SNEAKY_PARTIAL_HITS,
                    INT_STOP_IN_SECTOR, INT_WATERMARK_BY_REQUEST, INT_WRITES_QUEUE, INT_WRITE_HIT_STOPS_READ_AHEAD,
                    INT_WRITE_SEGMENTS, REAL_ANSWER_DOWN_S, REAL_BUS_READ_BLOCK_S, REAL_BUS_WRITE_BLOCK_S,
                    REAL_DATA_PREP_S, REAL_FINAL_RECONNECT_S, REAL_HEAD_SWITCH_S, REAL_HOST_DOWN_S,
                    REAL_HOST_TURNAROUND_S, REAL_IMMEDIATE_MODE, REAL_IMMEDIATE_READ, REAL_IMMEDIATE_READ_G4,
                    REAL_IMMEDIATE_WRITE_G4, REAL_MIN_WRITE_SEEK_S, REAL_OTHER_RESELECT_S, REAL_PERIOD_S,
                    REAL_READ_DIRECT, REAL_READ_DISCONNECTS, REAL_READ_DISCONNECT_S, REAL_READ_DONE_S,
                    REAL_READ_WATERMARK, REAL_RESELECT_S, REAL_SEGMENT_WATERMARK, REAL_SLOTS, REAL_WRITE_DISCONNECT_S,
                    REAL_WRITE_DONE_S, REAL_WRITE_SETTLE_S, REAL_WRITE_WATERMARK, REAL_XD_COMMAND_S,
                    REAL_XD_DISCONNECT_S, REAL_XD_INTER_S, REAL_XD_SECOND_DISCONNECT_S, REAL_XD_SEEK_DELTA_S, SEG_ROWS,
                    WORK_READ_WATERMARK, WORK_ROWS, WORK_WRITE_WATERMARK, WQS_G4, WQS_IMMEDIATE_WRITE, WQS_POLICY,
                    WQ_ROWS, WQ_STATE)

#: The rows of the kernel's output, one column per request: service time (arrival to completion),
#: arrival (when the drive takes it), how it was served (HitKind), seek, rotational latency, rest of
#: the media access, completion [s]
OUT_SERVICE, OUT_ARRIVAL, OUT_HIT, OUT_SEEK, OUT_LATENCY, OUT_MEDIA, OUT_COMPLETION = range(7)
OUT_ROWS = 7

#: The state the kernel carries from one request to the next, beyond its arrays (a numpy record;
#: the kernel reads it on entry and writes it back on return, so a simulation continues exactly
#: where the last call left it). Times in seconds of simulated time.
CARRIED = np.dtype([
    ("clock_s", np.float64),            # the last request's completion (the start before any)
    ("bus_free_s", np.float64),         # when the disk's bus is free for the next request (_host_path_s)
    ("cylinder", np.int64),             # where the head is once the last request's work is known
    ("head", np.int64),
    ("mechanism_free_s", np.float64),   # when the mechanism ends its current (background) work
    ("read_ahead_active", np.bool_),    # a read-ahead is running (its blocks below)
    ("read_ahead_segment", np.int64),   # its segment (-1: none yet)
    ("read_ahead_first", np.int64),     # its first block
    ("read_ahead_count", np.int64),     # its blocks, done at the kernel's pf_ready times
    ("read_ahead_done", np.int64),      # of them in the segment at the last arrival
    ("read_ahead_cylinder", np.int64),  # the head when it started
    ("read_ahead_head", np.int64),
    ("read_ahead_start_s", np.float64),  # and when
    ("read_ahead_minimum", np.int64),   # the block it cannot be stopped before (DiskSim's minreadaheadblkno)
    ("previous_write", np.int64),       # 1 when the last request was a write
    ("previous_end", np.int64),         # the block after the last request's (-1 before any)
    ("previous_blocks", np.int64),      # the last request's blocks
    ("dirty_until_s", np.float64),      # when the last fast write's data are on the media
    ("queued_until_s", np.float64),     # when an appended fast write's own access starts
    ("emptied_segment", np.int64),      # the segment a preseeking read leaves empty at the next arrival (-1)
    ("requests", np.int64),             # requests served
], align=True)


def new_carried(start_s, start_cylinder, start_head, params: DriveParameters) -> np.ndarray:
    """The kernel's carried state (:data:`CARRIED`, one record) before any request: the clock at
    *start_s*, the head at (*start_cylinder*, *start_head*), the buffer empty and idle."""
    carried = np.zeros(1, CARRIED)
    record = carried[0]
    record["clock_s"] = finite_scalar("start_s", start_s, nonnegative=True)
    record["bus_free_s"] = record["clock_s"]
    record["cylinder"] = whole_number("start_cylinder", start_cylinder,
                                      maximum=int(params.layout.last_cylinder.max()))
    record["head"] = whole_number("start_head", start_head, maximum=params.layout.surfaces - 1)
    record["read_ahead_segment"] = -1
    record["previous_end"] = -1
    record["emptied_segment"] = -1
    return carried


def check_requests(params: DriveParameters, is_write, lbn, blocks, first_index: int = 0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """*is_write*, *lbn*, *blocks* as the kernel takes them (bool, int64, int64 flat arrays), or
    ValueError naming the parameter and the value (a request by its index plus *first_index*). The
    range checks are done before any sum, so a huge value cannot wrap round."""
    if not isinstance(params, DriveParameters):
        raise ValueError(f"params must be DriveParameters (got {type(params).__name__})")
    is_write = np.asarray(is_write)
    if is_write.dtype.kind != "b":
        raise ValueError(f"is_write must hold True or False (got {show(is_write)})")
    is_write = is_write.ravel()
    lbn = np.asarray(lbn)
    blocks = np.asarray(blocks)
    for name, array in (("lbn", lbn), ("blocks", blocks)):
        if array.dtype.kind not in "iu":
            raise ValueError(f"{name} must hold whole numbers as integers (got {show(array)})")
    lbn = lbn.ravel()
    blocks = blocks.ravel()
    n = lbn.size
    if not (is_write.size == blocks.size == n):
        raise ValueError("is_write, lbn and blocks must have the same length")
    total = params.layout.total_blocks
    if n and lbn.min() < 0:
        raise ValueError(f"lbn must be >= 0 (got {show(lbn.min())})")
    if n and blocks.min() < 1:
        raise ValueError(f"blocks must be >= 1 (got {show(blocks.min())})")
    # compared before any sum (both now within 0 .. total), so lbn + blocks cannot overflow
    if n and (lbn.max() >= total or blocks.max() > total):
        i = int(np.flatnonzero((lbn >= total) | (blocks > total))[0])
        raise ValueError(f"request {first_index + i}: lbn {int(lbn[i])} + blocks {int(blocks[i])} ends beyond the last "
                         f"block ({total})")
    lbn = lbn.astype(np.int64)
    blocks = blocks.astype(np.int64)
    beyond = np.flatnonzero(lbn > total - blocks)
    if beyond.size:
        i = int(beyond[0])
        raise ValueError(f"request {first_index + i}: lbn {int(lbn[i])} + blocks {int(blocks[i])} ends beyond the last "
                         f"block ({total})")
    if n and _writes_queue(params) and params.buffer_segments:
        big = np.flatnonzero(is_write & (blocks > params.segment_size_blocks))
        if big.size:
            i = int(big[0])
            raise ValueError(f"request {first_index + i}: a write of {int(blocks[i])} blocks, larger than a segment "
                             f"({params.segment_size_blocks}), is not simulated with queued fast writes "
                             "(write_prebuffering or never_disconnect): DiskSim 4.0 fails once queued writes "
                             "outgrow a segment")
    if n and params.controller_delay_s and params.buffer_segments and params.constant_access_s is None:
        big = np.flatnonzero(~is_write & (blocks > params.segment_size_blocks))
        if big.size:
            i = int(big[0])
            raise ValueError(f"request {first_index + i}: a read of {int(blocks[i])} blocks, larger than a segment "
                             f"({params.segment_size_blocks}), is not simulated with a controller delay "
                             f"(controller_delay_s {params.controller_delay_s!r}): DiskSim 4.0's disconnections "
                             "and reconnections inside such a read overlap its controller's messages "
                             "differently (tests/golden/disksim_variants/README.md)")
    return is_write, lbn, blocks


class KernelInputs(NamedTuple):
    """The drive as the kernel takes it, and the kernel's working arrays (made here: the kernel runs
    without numba's reference counting, which cannot allocate). The working arrays carry the
    buffer's state between calls (segments, block times, the prebuffered writes' queue), so a
    stepped simulation keeps them."""

    arrays: tuple          # the layout's (DriveParameters.layout.kernel_arrays)
    seek: np.ndarray
    write_seek: np.ndarray
    overhead: np.ndarray
    real: np.ndarray
    ints: np.ndarray
    segments: np.ndarray   # first block, end, holds written data, read-ahead limit
    seg_used: np.ndarray   # last use (LRU order)
    work: np.ndarray       # ready, not_before, stats, scratch, watermarks, sent_at, write watermarks, chunk_end
    pf_ready: np.ndarray   # the read-ahead's block times
    wq: np.ndarray         # the prebuffered writes' queue (diskmodel.model.simulator.writequeue)

    @property
    def drive(self) -> tuple:
        """The drive's arrays as the kernel takes them: (arrays, seek, write_seek, overhead, real, ints)."""
        return (self.arrays, self.seek, self.write_seek, self.overhead, self.real, self.ints)

    @property
    def buffer(self) -> tuple:
        """The working arrays as the kernel takes them: (segments, seg_used, work, pf_ready, wq)."""
        return (self.segments, self.seg_used, self.work, self.pf_ready, self.wq)


def kernel_inputs(p: DriveParameters, longest: int) -> KernelInputs:
    """The kernel's inputs for requests of at most *longest* blocks (the working arrays' sizes
    follow from it, and with them the read-ahead's and the write queue's room)."""
    # the path between the driver and the disk (pass-thru controller, the disk's bus), added to
    # the disk's own overheads where DiskSim passes a message (_host_path_s; 0.0 adds nothing)
    down, reconnect, answered, up = _host_path_s(p.bus_arbitration_s, p.controller_delay_s)
    real = np.zeros(REAL_SLOTS)
    real[REAL_PERIOD_S] = 60.0 / p.rpm
    real[REAL_HEAD_SWITCH_S] = p.head_switch_s
    real[REAL_WRITE_SETTLE_S] = p.write_settle_s
    real[REAL_READ_DONE_S] = p.read_completion_s + up
    real[REAL_WRITE_DONE_S] = p.write_completion_s + up
    real[REAL_DATA_PREP_S] = p.data_preparation_s + answered
    real[REAL_RESELECT_S] = p.reselect_s + reconnect
    real[REAL_BUS_READ_BLOCK_S] = p.bus_read_block_s
    real[REAL_BUS_WRITE_BLOCK_S] = p.bus_write_block_s
    real[REAL_READ_WATERMARK] = p.read_watermark
    real[REAL_MIN_WRITE_SEEK_S] = p.minimum_write_seek_s
    real[REAL_WRITE_DISCONNECT_S] = p.write_disconnect_s + answered
    real[REAL_OTHER_RESELECT_S] = p.other_reselect_s + reconnect
    real[REAL_XD_COMMAND_S] = p.extra_disconnect_command_s
    real[REAL_XD_DISCONNECT_S] = p.extra_disconnect_s + answered
    real[REAL_XD_INTER_S] = p.extra_inter_disconnect_s
    real[REAL_XD_SECOND_DISCONNECT_S] = p.extra_second_disconnect_s + answered
    real[REAL_XD_SEEK_DELTA_S] = p.extra_disconnect_seek_delta_s
    for previous in range(REAL_READ_DISCONNECTS):  # after a read, after a write
        real[REAL_READ_DISCONNECT_S + previous] = p.read_disconnect_s[previous] + answered
    real[REAL_SEGMENT_WATERMARK] = _segment_watermark(p)
    real[REAL_WRITE_WATERMARK] = _write_watermark(p)
    real[REAL_IMMEDIATE_READ] = float(p.immediate_read)
    real[REAL_IMMEDIATE_MODE] = float(_immediate_mode(p))
    real[REAL_HOST_DOWN_S] = down + p.per_request_overhead_s
    real[REAL_FINAL_RECONNECT_S] = answered
    real[REAL_ANSWER_DOWN_S] = p.controller_delay_s
    real[REAL_HOST_TURNAROUND_S] = p.host_turnaround_s or 0.0
    real[REAL_READ_DIRECT] = float(p.read_direct_to_buffer)
    real[REAL_IMMEDIATE_WRITE_G4] = float(_immediate_write_g4(p))
    real[REAL_IMMEDIATE_READ_G4] = float(_immediate_read_g4(p))
    ints = np.zeros(INT_SLOTS, np.int64)
    ints[INT_SEGMENTS] = p.buffer_segments
    ints[INT_SEGMENT_BLOCKS] = p.segment_size_blocks
    ints[INT_MAX_READ_AHEAD] = p.max_read_ahead_blocks
    ints[INT_READ_AHEAD_OVER_REQUEST] = p.read_ahead_over_requested
    ints[INT_READ_AHEAD_ON_IDLE_HIT] = p.read_ahead_on_idle_hit
    ints[INT_FAST_WRITE_LEVEL] = p.fast_write_level
    ints[INT_HITS_ON_WRITES] = p.read_hits_on_write_data
    ints[INT_SEPARATE_WRITE_SEGMENT] = p.separate_write_segment
    ints[INT_READ_AHEAD_SCHEME] = p.read_ahead_scheme
    ints[INT_READ_ANY_FREE] = p.read_any_free_blocks and not p.immediate_access_under_head
    ints[INT_STOP_IN_SECTOR] = p.stop_read_ahead_in_sector
    ints[INT_EXTRA_WRITE_DISCONNECT] = p.extra_write_disconnect
    ints[INT_HOLD_BUS_READ] = p.hold_bus_read
    ints[INT_ALMOST_READ_HITS] = p.almost_read_hits
    ints[INT_NEVER_DISCONNECT] = p.never_disconnect
    ints[INT_MIN_READ_AHEAD] = p.min_read_ahead_blocks
    ints[INT_PRESEEKING_LEVEL] = p.preseeking_level
    ints[INT_WATERMARK_BY_REQUEST] = p.watermark_by_request_size
    ints[INT_IMMEDIATE_PARTIAL_HIT] = p.immediate_partial_hit_transfer
    ints[INT_WRITE_HIT_STOPS_READ_AHEAD] = p.write_hit_stops_read_ahead
    ints[INT_SNEAKY_FULL_HITS] = p.sneaky_full_read_hits
    ints[INT_SNEAKY_PARTIAL_HITS] = p.sneaky_partial_read_hits
    ints[INT_WRITES_QUEUE] = _writes_queue(p)
    ints[INT_HOLD_BUS_WRITE] = p.hold_bus_write
    ints[INT_CACHING] = p.caching
    ints[INT_WRITE_SEGMENTS] = p.write_segments
    ints[INT_COMBINE_SEQ_WRITES] = p.combine_seq_writes
    ints[INT_SCHEDULING_POLICY] = p.queue_scheduling_policy
    # the kernel's working arrays, made here: the kernel runs without numba's reference counting
    # (_nrt=False, see _simulate), which cannot allocate
    # first block, end, holds written data, read-ahead limit
    segments = np.zeros((SEG_ROWS, p.buffer_segments), np.int64)
    # last use (LRU order); never used: before any use (DiskSim's segment list starts with them)
    seg_used = np.full(p.buffer_segments, -np.inf)
    # ready, not_before, stats, scratch, watermarks, sent_at, write watermarks, chunk_end
    work = np.zeros((WORK_ROWS, max(longest + 1, 3)))
    # the kernel reads the watermark of min(segment, request) blocks (of the request without a buffer)
    reachable = min(longest, p.segment_size_blocks) if p.buffer_segments else longest
    work[WORK_READ_WATERMARK, :reachable + 1] = _request_watermarks(float(p.read_watermark), reachable)
    work[WORK_WRITE_WATERMARK, :reachable + 1] = _request_watermarks(float(p.write_watermark_fraction), reachable)
    # the read-ahead's block times: its limit, 3 tracks (schemes 1, 2, 4) and a request
    pf_ready = np.zeros(max(p.max_read_ahead_blocks, p.segment_size_blocks)
                        + 3 * max(int(p.layout.sectors_per_track.max()), 1) + longest + 2)
    # the prebuffered writes' queue: its writes and their blocks, at most a segment's beyond the
    # write under way plus a request (diskmodel.model.simulator.writequeue)
    wq = np.zeros((WQ_ROWS, max(2 * p.segment_size_blocks + longest + 2, 12 if p.queue_scheduling_policy != 1 else 0)
                   if _writes_queue(p) else 1))
    if _writes_queue(p):
        wq[WQ_STATE, WQS_POLICY] = p.queue_scheduling_policy
        wq[WQ_STATE, WQS_IMMEDIATE_WRITE] = float(p.immediate_write)
        wq[WQ_STATE, WQS_G4] = float(isinstance(p.layout, G4ZoneLayout))
    return KernelInputs(p.layout.kernel_arrays(), p.seek_by_distance_s, p.write_seek_by_distance_s,
                        p.command_overhead_s, real, ints, segments, seg_used, work, pf_ready, wq)


def _immediate_write_g4(p):
    """Whether a write's tracks are DiskSim's zero-latency accesses that start under the head
    ("Immediate buffer write" on a g4 layout, ``real[REAL_IMMEDIATE_WRITE_G4]``:
    :func:`diskmodel.model.simulator.access_block.immediate_write_track`; on g1 and g2 layouts
    DiskSim 4.0's ``g1_access_block`` never starts one there)."""
    return bool(p.immediate_write and isinstance(p.layout, G4ZoneLayout))


def _immediate_read_g4(p):
    """Whether a read's tracks are DiskSim's zero-latency accesses that start under the head
    ("Immediate buffer read" on a g4 layout, ``real[REAL_IMMEDIATE_READ_G4]``:
    :func:`diskmodel.model.simulator.access_block.immediate_read_run`, mode 2; on g1 and g2 layouts
    DiskSim 4.0's ``g1_access_block`` never starts one there)."""
    return bool(p.immediate_read and isinstance(p.layout, G4ZoneLayout))


def _immediate_mode(p):
    """Which read accesses are DiskSim's immediate ones that start under the head
    (diskmodel.model.simulator.access_block): 0 none (DiskSim 4.0's code), 1 a read's first
    track ("Read any free blocks")."""
    return int(p.immediate_access_under_head and p.read_any_free_blocks)


def _writes_queue(p):
    """Whether a fast write is taken at once while writes are on their way to the media, and queued
    behind them (diskmodel.model.simulator.writequeue): DiskSim's disk_write_arrive takes it with
    "Allow write prebuffering" or "Never disconnect"."""
    return bool(p.fast_write_level) and (p.write_prebuffering or p.never_disconnect)


@functools.lru_cache(maxsize=64)
def _request_watermarks(fraction: float, longest: int) -> np.ndarray:
    """DiskSim's read watermark of a request of m = 0..*longest* blocks [blocks] (read-only).

    Cached: a drive asks for the same table on every call (a simulated disk's reads come one
    call at a time), and the exact arithmetic is a Python loop.

    ``(int) (min(seg->size, bcount) * readwater)`` (``disk_buffer_set_segment``), as DiskSim
    4.0 computes it on x87: the product of the double and the whole number is exact there
    before the truncation (0.3 x 20 is 5.99999999999999977796..., so 5, where a double
    product rounds to 6.0 first).
    """
    exact = Fraction(fraction)
    table = np.array([math.floor(exact * m) for m in range(longest + 1)], dtype=float)
    table.setflags(write=False)
    return table


def _segment_watermark(p, fraction=None):
    """DiskSim's read watermark of a segment ("Set watermark by reqsize" 0) [blocks]:
    ``(int) (seg->size * readwater + 0.9999999999)``, exactly as above (of *fraction*, the
    write's low watermark, instead of the read's when given)."""
    fraction = p.read_watermark if fraction is None else fraction
    return float(math.floor(Fraction(p.segment_size_blocks) * Fraction(float(fraction))
                            + Fraction(0.9999999999)))


def _write_watermark(p):
    """DiskSim's low watermark of a write larger than its segment [blocks]: of the segment,
    ``max(1, (int) (min(seg->size, bcount) * writewater))`` with "Set watermark by reqsize" 1,
    else rounded up as :func:`_segment_watermark` (``disk_buffer_set_segment``,
    ``src/disksim_diskcache.c``); only such writes read it (diskmodel.model.simulator.big_transfer)."""
    if not p.watermark_by_request_size:
        return _segment_watermark(p, p.write_watermark_fraction)
    return float(max(1, math.floor(Fraction(float(p.write_watermark_fraction)) * p.segment_size_blocks)))


def _host_path_s(arbitration_s: float, controller_s: float) -> tuple[float, float, float, float]:
    """What the path from the driver to the disk adds [s]: (before the disk has a request, each
    reconnection, each message the disk sends up and the driver answers: a disconnection, a
    ready-to-transfer or reconnection before data, the completion).

    DiskSim 4.0 passes every message through the pass-thru controller, PASSTHRU_DELAY x "Scale
    for delays" each (``controller_passthru_event_arrive``, src/disksim_ctlrdumb.c), and waits the
    bus's "Arbitration time" at each acquisition of the disk's bus (``bus_ownership_get``,
    src/disksim_bus.c): the controller's for the request down, the disk's for each reconnection
    (``disk_send_event_up_path``, src/disksim_diskctlr.c); a disk that holds the bus sends without
    one. So: a request reaches the disk after arbitration plus one delay; a disconnection is over
    (the bus free again) after its overhead plus two delays (DISCONNECT up, the driver's
    IO_INTERRUPT_COMPLETE down); data flow after the data preparation plus two delays
    (READY_TO_TRANSFER or RECONNECT up, the answer down); a reconnection waits the arbitration;
    the completion takes one delay up; a write's final reconnection (FINAL_WRITE_RECONNECTION_1,
    ``disk_request_needs_bus``) sends RECONNECT and waits the answer before its completion.
    The disk keeps its bus until the driver's answer to the completion has come down (one delay
    after the completion): a request arriving earlier waits for it (``bus_ownership_release``),
    then for the arbitration.
    """
    return (arbitration_s + controller_s, arbitration_s, 2.0 * controller_s, controller_s)
