"""Fast writes queued behind one another in a write segment, as DiskSim 4.0 writes them (numba helpers
of :func:`diskmodel.model.simulator.kernel._simulate`).

With "Allow write prebuffering" = 1 DiskSim takes a write's data at once even while the mechanism is
busy (``disk_write_arrive``: ``writeprebuffering ||`` skips ``disk_buffer_stopable_access``); a fast
write appending to the data of the dirty segment (``disk_buffer_select_write_segment``: BUFFER_APPEND,
``seg->size > blkno - owner->inblkno``) then waits in DiskSim's queue (FCFS) for its own media access.
How those accesses write, followed here (``src/disksim_diskctlr.c``):

* an access writes from its own first block (``currdiskreq->inblkno``) on, and once its own blocks are
  written goes on through every block of the segment whose data are in the buffer
  (``disk_buffer_sector_done``: up to ``min(seg->endblkno, next)``, track after track), ending at the
  first block whose data have not arrived when the previous one is written
  (``disk_buffer_request_complete``, a background write: ``seg->endblkno == currdiskreq->inblkno``);
* then the next write in the queue gets its own access (``disk_release_hda``,
  ``disk_find_new_seg_owner``), again from its own first block, which the previous access has
  usually written already: a revolution; a read or a non-appending write waits for the whole queue.

With more than one write segment ("Maximum number of write segments") DiskSim takes a fast write that
does not append (or appends past its segment's room) at once too, into a segment of its own, while
fewer segments than that hold data not yet written (``disk_buffer_select_write_segment``: an empty
or clean segment, values 2-4, while ``numdirty < numwritesegs``; not one overlapping a dirty
segment, BUFFER_COLLISION), and queues it (:func:`_prebuffered_new`). Served first come first
served (scheduling policy 1), each queued write's access writes on through the buffered data of
its own segment only.

The chain is kept in ``wq`` (rows 0-2: each queued write's first block, blocks, the time its data start
to arrive; row 3: the first access still under way: its start, cylinder and head before it, its
minimum move, the number of writes, then (columns 5-7, set once by ``simulate_requests``) the
scheduling policy (:data:`SPTF`, else first come first served), "Immediate buffer write" and whether
the layout is g4 (policy 21's estimate differs there); rows 4-5:
the data and done times of the chain's blocks; row 6: each queued write's segment, a label; row 7: when
each queued write entered DiskSim's queue, its arrival).

Other policies (:func:`_pick_next`, :data:`diskmodel.model.disksim_drives.honoured.PREBUFFERING_POLICIES`):
each time an access ends the queue's choice is taken the same way, by block number from the last
request given the mechanism for ELEVATOR_LBN, CYCLE_LBN, SSTF_LBN and VSCAN_LBN (:func:`_lbn_pick`),
by the positioning-time estimate below for SPTF_OPT, SPCTF_OPT, ASPTF_OPT, ASPCTF_OPT, PRI_ASPTF_OPT
and PRI_ASPCTF_OPT, which choose alike here (DiskSim's own times identical on three hand-shaped
traces); ``wq[WQ_STATE, WQS_READ_FIRST:WQS_READ_BLOCKS + 1]`` keep the first block and size of a read
that went before the queued writes
(the last request given the mechanism when they resume).

Scheduling policy 21 (PRI_ASPCTF_OPT, maxtor300g's; :func:`_sptf_pick`): each time an access ends
DiskSim's ``disk_get_effectivehda`` asks ``ioqueue_show_next_request``, which takes the queued request
of least estimated positioning time (``ioqueue_get_request_from_opt_sptf_queue(queue, TRUE, 3, TRUE)``,
``disk_buffer_estimate_servtime``): the seek from the head's cylinder and surface plus the rotational
latency from the head's angle then to the first sector, for a zero-latency ("Immediate buffer
write/read") access landing inside its span on the track plus the sectors of the track outside the
span (``dm_latency_g1`` with DiskSim 4.0's ``g1_access_block``, which returns the first sector). Ageing
is off ("Timeout time/weight" 0); a queued write's blocks are in a dirty segment, no cache hit
(``disk_buffer_check_write_segments``: BUFFER_COLLISION), so the estimate is mechanical. Ties go to the
request first in the queue's order, ascending cylinder, surface, block (``ioqueue_insert_ordered_to_queue``;
here: the lower first block). A read miss arriving while writes are queued competes with them
(:func:`_read_slot`): once chosen it is served from the end of the access before it, and the queued
writes resume when its completion is received (``disk_check_prefetch_swap``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .mapping import lbn_to_pbn_one, track_last_from
from .readahead import _stop_read_ahead
from .media_access import _EPS_REV, access_media, move_time_s, wait_for_angle
from .state import (LAYOUT_SECTORS_PER_TRACK, REAL_HEAD_SWITCH_S, REAL_IMMEDIATE_READ, REAL_PERIOD_S,
                    REAL_WRITE_SETTLE_S, WQS_CYLINDER, WQS_G4, WQS_HEAD, WQS_IMMEDIATE_WRITE, WQS_MIN_MOVE,
                    WQS_POLICY, WQS_READ_BLOCKS, WQS_READ_FIRST, WQS_START, WQS_WRITES, WQ_BLOCKS, WQ_BLOCK_DATA,
                    WQ_BLOCK_DONE, WQ_DATA_START, WQ_FIRST, WQ_QUEUED_AT, WQ_SEGMENT, WQ_STATE)

#: ``wq[WQ_STATE, WQS_POLICY]``: DiskSim's Scheduling policy 21, PRI_ASPCTF_OPT (else 0, first come first served)
SPTF = 21.0
#: ``wq[WQ_STATE, WQS_POLICY]``: Scheduling policy 1, first come first served (every other policy reorders the queue)
FCFS = 1.0
#: The policies choosing by DiskSim's positioning-time estimate, which choose alike here
#: (:func:`_pick_next`): SPTF_OPT, SPCTF_OPT, ASPTF_OPT, ASPCTF_OPT, PRI_ASPTF_OPT, PRI_ASPCTF_OPT
SPTF_FAMILY = (8.0, 9.0, 14.0, 15.0, 20.0, 21.0)
#: The LBN-ordered policies followed: ELEVATOR_LBN, CYCLE_LBN, SSTF_LBN, VSCAN_LBN (:func:`_lbn_pick`)
ELEVATOR_LBN = 2.0
CYCLE_LBN = 3.0
SSTF_LBN = 4.0
VSCAN_LBN = 17.0


@njit(cache=True, _nrt=False)
def _positioning_estimate_s(arrays, seek, write_seek, real, lbn, n, t, cyl, head, is_write, immed, total, g4):
    """DiskSim's estimate of the positioning time of an access to *n* blocks from *lbn* with the head at
    (*cyl*, *head*) at time *t* (``disk_buffer_estimate_servtime``, no cache hit: ``dm_acctime`` less
    ``dm_xfertime`` of the blocks on the first track): the move (``dm_seek_time``: the write seek and
    settle for a write), the latency from the head's angle after it to the first sector, and, for a
    zero-latency access (*immed*) whose head lands strictly inside its span on the track (the first
    sector to the last, at most the track's last sector): on a g1 layout the latency to the first
    sector plus the track's sectors outside the span (``dm_latency_g1``'s ``addtolatency``; DiskSim
    4.0's ``g1_access_block`` returns the first sector there); on a g4 layout (*g4*) the latency to the
    next sector boundary plus one sector (``g1_access_block`` finds the boundary, ``g4_sector_width``
    ignores its count)."""
    period = real[REAL_PERIOD_S]
    c, h, s, a, z = lbn_to_pbn_one(lbn, arrays)
    t1 = t + move_time_s(cyl, head, c, h, seek, write_seek, real[REAL_HEAD_SWITCH_S], real[REAL_WRITE_SETTLE_S],
                         is_write)
    est = wait_for_angle(t1, a, period) - t
    if immed:
        spt = arrays[LAYOUT_SECTORS_PER_TRACK][z]
        last, _ = track_last_from(arrays, lbn, c, h, s, z, total)
        ln = last - lbn + 1
        if n < ln:
            ln = n
        e = s + ln - 1
        if e > spt - 1:
            e = spt - 1
        if e != s:
            end = a + (e - s) / spt
            end -= np.floor(end)
            theta = t1 / period
            theta -= np.floor(theta)
            inside = (a < theta < end) if a < end else (theta > a or theta < end)
            if inside and ln != spt and g4:
                # g4: g1_access_block finds the next sector boundary under the head, and
                # g4_sector_width ignores its count: addtolatency is one sector (DiskSim's own
                # estimate, printed: 1.797 us to the boundary + 6.408 us, maxtor300g)
                d = (theta - a) * spt
                d = np.ceil(d - 1e-9) - d
                est = (t1 - t) + (d + 1.0) * period / spt
            elif inside and ln != spt:
                # g1: g1_access_block returns the first sector (DiskSim 4.0's convert_atop test),
                # g1_get_sector_width the track's sectors outside the span
                est += (spt - ln) * period / spt
    return est


@njit(cache=True, _nrt=False)
def _sptf_pick(arrays, seek, write_seek, real, wq, lo, qn, t, cyl, head, total):
    """The queued write (row lo..qn-1 of *wq*) DiskSim's policy 21 serves next when the mechanism is
    free at *t* at (*cyl*, *head*): the least estimate of those queued by *t* (the earliest queued when
    none is), ties to the lower first block (:func:`_positioning_estimate_s`). Returns (row, estimate)."""
    best = -1
    best_est = 1e300
    immed = wq[WQ_STATE, WQS_IMMEDIATE_WRITE] != 0.0
    for e in range(lo, qn):
        if wq[WQ_QUEUED_AT, e] > t:
            continue
        est = _positioning_estimate_s(arrays, seek, write_seek, real, int(wq[WQ_FIRST, e]), int(wq[WQ_BLOCKS, e]), t,
                                      cyl, head,
                                      True, immed, total, wq[WQ_STATE, WQS_G4] != 0.0)
        if est < best_est or (est == best_est and wq[WQ_FIRST, e] < wq[WQ_FIRST, best]):
            best = e
            best_est = est
    if best < 0:
        best = lo
        for e in range(lo + 1, qn):
            if wq[WQ_QUEUED_AT, e] < wq[WQ_QUEUED_AT, best]:
                best = e
    return best, best_est


@njit(cache=True, _nrt=False)
def _lbn_pick(wq, lo, qn, t, last_lbn, last_n, rlbn, rq, r_on):
    """The request an LBN-ordered policy serves next at *t* (``ioqueue_show_next_request``): of the
    queued writes (rows lo..qn-1 of *wq*) queued by *t* and, when *r_on*, the read from *rlbn* queued
    at *rq*; the last request given the mechanism started at *last_lbn* with *last_n* blocks.
    Returns the row, -1 for the read, -2 when none is queued by *t*.

    DiskSim keeps these queues in block order (``ioqueue_insert_ordered_to_queue``; the LBN
    policies map every request to cylinder 0, surface 0, ``MAP_NONE``, in ``ioqueue_add_new_request``),
    equal blocks in arrival order. Its ``lastblkno`` is set when a request is given the mechanism
    (``ioqueue_get_specific_request_from_subqueue``): its first block for ELEVATOR_LBN and CYCLE_LBN,
    one past its last for SSTF_LBN and VSCAN_LBN. The disk only ever shows the queue's choice
    (``ioqueue_show_next_request`` restores ``queue->dir``; ``ioqueue_get_next_request``, which would
    turn it, is never called by the disk), so the direction stays ASC, its initial value:

    * ELEVATOR_LBN (``ioqueue_get_request_from_lbn_vscan_queue(queue, numblocks)``): the lowest
      block at or above ``lastblkno`` (``top``); none, the highest below (``bottom``), whose distance
      is raised by the drive's block count;
    * CYCLE_LBN (``ioqueue_get_request_from_lbn_scan_queue``): the lowest block at or above
      ``lastblkno``, else the lowest of all (the list wraps);
    * SSTF_LBN (``..._lbn_vscan_queue(queue, 0)``) and VSCAN_LBN (the same call with
      ``queue->vscan_cyls``, which DiskSim 4.0 never sets: 0): the nearer of ``top`` and ``bottom``,
      a tie to ``top`` (``queue->sstfupdown`` starts at 0; DiskSim turns it at each tie shown, which
      is not followed)."""
    policy = wq[WQ_STATE, WQS_POLICY]
    last = last_lbn if policy == ELEVATOR_LBN or policy == CYCLE_LBN else last_lbn + last_n
    top = -2
    bottom = -2
    low = -2
    top_b = 0.0
    top_a = 0.0
    bottom_b = 0.0
    bottom_a = 0.0
    low_b = 0.0
    low_a = 0.0
    for e in range(lo - 1, qn):
        if e == lo - 1:
            if not r_on:
                continue
            b = float(rlbn)
            a = rq
            idx = -1
        else:
            if wq[WQ_QUEUED_AT, e] > t:
                continue
            b = wq[WQ_FIRST, e]
            a = wq[WQ_QUEUED_AT, e]
            idx = e
        if b >= last:
            if top == -2 or b < top_b or (b == top_b and a < top_a):
                top = idx
                top_b = b
                top_a = a
        elif bottom == -2 or b > bottom_b or (b == bottom_b and a < bottom_a):
            bottom = idx
            bottom_b = b
            bottom_a = a
        if low == -2 or b < low_b or (b == low_b and a < low_a):
            low = idx
            low_b = b
            low_a = a
    if top == -2:
        return low if policy == CYCLE_LBN else bottom
    if bottom == -2 or policy == ELEVATOR_LBN or policy == CYCLE_LBN:
        return top
    # SSTF_LBN, VSCAN_LBN: the nearer (ASC: bottom's distance raised by 0)
    if last - bottom_b < top_b - last:
        return bottom
    return top


@njit(cache=True, _nrt=False)
def _pick_next(arrays, seek, write_seek, real, wq, lo, qn, t, cyl, head, total, last_lbn, last_n, rlbn, rn, rq,
               r_on, immed_read):
    """The request the queue's scheduling policy (``wq[WQ_STATE, WQS_POLICY]``) serves next when the mechanism is free
    at *t* at (*cyl*, *head*): a queued write (rows lo..qn-1, queued by *t*; the earliest queued when
    none is) or, when *r_on*, the read miss of *rn* blocks from *rlbn* queued at *rq*. Returns (the
    row, whether the read goes first).

    The positioning-time policies (:data:`SPTF_FAMILY`; :func:`_sptf_pick`) all call
    ``ioqueue_get_request_from_opt_sptf_queue`` with ``posonly``; they differ by ``checkcache``
    (9, 15, 21 count a cache hit's constant time: a queued write collides with its dirty segment and
    a read miss has no hit, so it does not act on the requests compared here) and by ageing
    (``ageweight`` 2, policies 14-15: ``age * weight``, "Timeout time/weight", which check_honoured
    holds at 0; 3, policies 20-21: only for TIME_CRITICAL or TIME_LIMITED requests, which a
    validate trace never makes, ``iotrace_validate_get_ioreq_event``: ``flags = val & READ``).
    The LBN-ordered ones: :func:`_lbn_pick`."""
    if wq[WQ_STATE, WQS_POLICY] == ELEVATOR_LBN or wq[WQ_STATE, WQS_POLICY] == CYCLE_LBN or wq[WQ_STATE,
            WQS_POLICY] == SSTF_LBN or wq[WQ_STATE, WQS_POLICY] == VSCAN_LBN:
        nxt = _lbn_pick(wq, lo, qn, t, last_lbn, last_n, rlbn, rq, r_on)
        if nxt == -1:
            return lo, True
        if nxt >= 0:
            return nxt, False
        # none queued by t: the first to arrive gets the idle mechanism
        nxt = lo
        for e in range(lo + 1, qn):
            if wq[WQ_QUEUED_AT, e] < wq[WQ_QUEUED_AT, nxt]:
                nxt = e
        return nxt, False
    nxt, est = _sptf_pick(arrays, seek, write_seek, real, wq, lo, qn, t, cyl, head, total)
    if r_on:
        r_est = _positioning_estimate_s(arrays, seek, write_seek, real, rlbn, rn, t, cyl, head,
                                        False, immed_read, total, wq[WQ_STATE, WQS_G4] != 0.0)
        if r_est < est or (r_est == est and rlbn < wq[WQ_FIRST, nxt]) or wq[WQ_QUEUED_AT, nxt] > t:
            return nxt, True
    return nxt, False


@njit(cache=True, _nrt=False)
def _move_row(wq, frm, to):
    """Move queued write *frm* to row *to* (< frm), the rows between one on."""
    for r in (WQ_FIRST, WQ_BLOCKS, WQ_DATA_START, WQ_SEGMENT, WQ_QUEUED_AT):
        v = wq[r, frm]
        for e in range(frm, to, -1):
            wq[r, e] = wq[r, e - 1]
        wq[r, to] = v


@njit(cache=True, _nrt=False)
def _start_chain(wq, first, n, data0, start, cyl, head, min_move):
    """A write whose access starts afresh: the chain holds it alone (queued since *start*, its
    access's start, as far as the scheduler is concerned)."""
    wq[WQ_FIRST, 0] = first
    wq[WQ_BLOCKS, 0] = n
    wq[WQ_DATA_START, 0] = data0
    wq[WQ_STATE, WQS_START] = start
    wq[WQ_STATE, WQS_CYLINDER] = cyl
    wq[WQ_STATE, WQS_HEAD] = head
    wq[WQ_STATE, WQS_MIN_MOVE] = min_move
    wq[WQ_STATE, WQS_WRITES] = 1
    wq[WQ_SEGMENT, 0] = 0.0
    if wq.shape[0] > WQ_QUEUED_AT:
        wq[WQ_QUEUED_AT, 0] = start


@njit(cache=True, _nrt=False)
def _write_access(arrays, seek, write_seek, real, f, count, own, start, cyl, head, not_before, ready, scratch,
                  min_move, total):
    """One access of the queued writes from block *f*: its *own* blocks and up to *count* in all, the
    data of block k in the buffer at ``not_before[k]``. Past its own blocks the access goes on while
    the next block's data are in the buffer (disk_buffer_sector_done). Returns (its end, the head's
    cylinder and head then, the blocks written)."""
    access_media(arrays, seek, write_seek, real, f, count, start, cyl, head, True, not_before, ready, 0, scratch,
                 min_move, total)
    written = count
    for k in range(own, count):
        if not_before[k] > ready[k - 1]:
            written = k
            break
    cyl, head, _, _, _ = lbn_to_pbn_one(f + written - 1, arrays)
    return ready[written - 1], cyl, head, written


@njit(cache=True, _nrt=False)
def _next_block_at(f, written, ready, arrival):
    """The block an access from *f* writes next at *arrival* (DiskSim's ``inblkno`` of the segment's
    owner): one past the last block it has written by then."""
    inblkno = f
    for k in range(written):
        if ready[k] <= arrival:
            inblkno = f + k + 1
    return inblkno


@njit(cache=True, _nrt=False)
def _drop_rows(wq, done, qn):
    """Drop the first *done* of the *qn* queued writes (their accesses are final); returns how many
    are left."""
    for e in range(done, qn):
        for r in (WQ_FIRST, WQ_BLOCKS, WQ_DATA_START, WQ_SEGMENT, WQ_QUEUED_AT):
            wq[r, e - done] = wq[r, e]
    return qn - done


@njit(cache=True, _nrt=False)
def _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total):
    """Write the chain's accesses one after another from the first one still under way; drop those
    ending by *arrival* (the data arriving from then on cannot extend them). Returns (end of the last
    access, cylinder, head, the block the first access still under way writes next at *arrival*)."""
    t_end, cyl, head, inblkno, _ = _chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total,
                                          -1, 0, 0.0, False)
    return t_end, cyl, head, inblkno


@njit(cache=True, _nrt=False)
def _chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total, rlbn, rn, rq, immed_read):
    """:func:`_run_chain`, and with policy 21 a read miss of *rn* blocks from *rlbn* queued at *rq*
    competing with the queued writes (*rlbn* < 0: none). Returns (end of the last access, cylinder,
    head, the block the first access still under way writes next at *arrival*, whether the read was
    chosen); when it was: the time it was chosen, the head's cylinder and head then, and the accesses
    before it are dropped (the queued writes left wait for it)."""
    # a policy reordering the queue (_pick_next)
    sptf = wq.shape[1] > WQS_IMMEDIATE_WRITE and wq[WQ_STATE, WQS_POLICY] != FCFS
    qn = int(wq[WQ_STATE, WQS_WRITES])
    chain_end = int(wq[WQ_FIRST, qn - 1] + wq[WQ_BLOCKS, qn - 1])
    not_before = wq[WQ_BLOCK_DATA]
    ready = wq[WQ_BLOCK_DONE]
    start = wq[WQ_STATE, WQS_START]
    cyl = int(wq[WQ_STATE, WQS_CYLINDER])
    head = int(wq[WQ_STATE, WQS_HEAD])
    min_move = wq[WQ_STATE, WQS_MIN_MOVE]
    j = 0
    t_end = start
    inblkno = int(wq[WQ_FIRST, 0])
    while j < qn:
        f = int(wq[WQ_FIRST, j])
        if sptf:
            # the queued writes of its segment following on from its blocks, in block order
            # (the scheduler may have taken them out of their arrival order)
            k = 0
            at = f
            found = True
            while found:
                found = False
                for e in range(j, qn):
                    if wq[WQ_SEGMENT, e] == wq[WQ_SEGMENT, j] and int(wq[WQ_FIRST, e]) == at and k + int(wq[WQ_BLOCKS,
                            e]) <= not_before.size:
                        for b in range(int(wq[WQ_BLOCKS, e])):
                            not_before[k] = wq[WQ_DATA_START, e] + (b + 1) * bus_s
                            k += 1
                        at += int(wq[WQ_BLOCKS, e])
                        found = True
                        break
            count = k
        else:
            # the access goes on through the later writes of its own segment only
            # (disk_buffer_sector_done: up to seg->endblkno); one segment, the whole chain
            last_e = j
            while last_e + 1 < qn and wq[WQ_SEGMENT, last_e + 1] == wq[WQ_SEGMENT, j]:
                last_e += 1
            count = chain_end - f if last_e == qn - 1 else int(wq[WQ_FIRST, last_e] + wq[WQ_BLOCKS, last_e]) - f
            k = 0
            for e in range(j, last_e + 1):
                for b in range(int(wq[WQ_BLOCKS, e])):
                    not_before[k] = wq[WQ_DATA_START, e] + (b + 1) * bus_s
                    k += 1
        t_end, cyl, head, written = _write_access(arrays, seek, write_seek, real, f, count, int(wq[WQ_BLOCKS, j]),
                                                  start,
                                                  cyl, head, not_before, ready, scratch, min_move, total)
        if j == 0:
            inblkno = _next_block_at(f, written, ready, arrival)
        label = wq[WQ_SEGMENT, j]
        if sptf and j + 1 < qn:
            # the next access: the policy's choice at this end (the read, if it wins, takes it); the
            # last request given the mechanism is this write (ioqueue_get_specific_request's lastblkno)
            nxt, read_wins = _pick_next(arrays, seek, write_seek, real, wq, j + 1, qn, t_end, cyl, head, total,
                                        f, int(wq[WQ_BLOCKS, j]), rlbn, rn, rq, rlbn >= 0 and rq <= t_end, immed_read)
            if read_wins:
                wq[WQ_STATE, WQS_WRITES] = _drop_rows(wq, j + 1, qn)
                # (the read is the last request given the mechanism when the writes resume)
                wq[WQ_STATE, WQS_READ_FIRST] = rlbn
                wq[WQ_STATE, WQS_READ_BLOCKS] = rn
                return t_end, cyl, head, inblkno, True
            if nxt != j + 1:
                _move_row(wq, nxt, j + 1)
        if t_end <= arrival and j < qn - 1:
            # over before the arrival: final; the next write's access is now the first under way
            qn = _drop_rows(wq, j + 1, qn)
            j = -1
            wq[WQ_STATE, WQS_WRITES] = qn
        # the next write's access starts once this one ends, at its own first block (just passed
        # when the chain is sequential: disk_buffer_seekdone's latency past the sector's start)
        start = t_end + 2.0 * _EPS_REV * real[REAL_PERIOD_S]
        if j + 1 < qn and wq[WQ_SEGMENT, j + 1] != label:
            start = t_end
        if j + 1 < qn and wq[WQ_DATA_START, j + 1] > start:
            # and not before that write's command overhead is over (disk_write_arrive's
            # overhead_done, which is its data0 here)
            start = wq[WQ_DATA_START, j + 1]
        if j == -1:
            wq[WQ_STATE, WQS_START] = start
            wq[WQ_STATE, WQS_CYLINDER] = cyl
            wq[WQ_STATE, WQS_HEAD] = head
            wq[WQ_STATE, WQS_MIN_MOVE] = min_move
        j += 1
    return t_end, cyl, head, inblkno, False


@njit(cache=True, _nrt=False)
def _prebuffered(arrays, seek, write_seek, real, wq, first, n, data0, bus_s, seg_size, arrival, scratch, total):
    """A fast write appending to the chain while its accesses are not over: taken at once when the
    segment has room for it (``seg->size > blkno - owner->inblkno``, the owner being the write whose
    access is under way), queued behind the chain. Returns (taken, end of the chain's last access,
    cylinder, head); not taken, the chain is left as it was."""
    t_end, cyl, head, inblkno = _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total)
    qn = int(wq[WQ_STATE, WQS_WRITES])
    if wq.shape[1] > WQS_IMMEDIATE_WRITE and wq[WQ_STATE, WQS_POLICY] != FCFS:
        # rows out of arrival order: the write it appends to is the last queued; the segment's owner
        # the access under way if it is that segment's, else its queued write of the lowest block
        last = 0
        for e in range(1, qn):
            if wq[WQ_QUEUED_AT, e] > wq[WQ_QUEUED_AT, last]:
                last = e
        label = wq[WQ_SEGMENT, last]
        low = int(wq[WQ_FIRST, last])
        for e in range(qn):
            if wq[WQ_SEGMENT, e] == label and wq[WQ_FIRST, e] < low:
                low = int(wq[WQ_FIRST, e])
        if wq[WQ_SEGMENT, 0] != label:
            inblkno = low
        if first != int(wq[WQ_FIRST, last] + wq[WQ_BLOCKS,
                                                last]) or not seg_size > first - inblkno or qn >= wq.shape[1] \
                or first + n - low > wq.shape[1]:
            return False, t_end, cyl, head
        wq[WQ_FIRST, qn] = first
        wq[WQ_BLOCKS, qn] = n
        wq[WQ_DATA_START, qn] = data0
        wq[WQ_SEGMENT, qn] = label
        wq[WQ_QUEUED_AT, qn] = arrival
        wq[WQ_STATE, WQS_WRITES] = qn + 1
        t_end, cyl, head, _ = _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total)
        return True, t_end, cyl, head
    # the segment's first write still queued (its owner); the first access under way when the chain
    # is one segment
    own = qn - 1
    while own > 0 and wq[WQ_SEGMENT, own - 1] == wq[WQ_SEGMENT, qn - 1]:
        own -= 1
    if own > 0:
        inblkno = int(wq[WQ_FIRST, own])
    if not seg_size > first - inblkno or qn >= wq.shape[1] \
            or int(wq[WQ_FIRST, qn - 1] + wq[WQ_BLOCKS, qn - 1]) - int(wq[WQ_FIRST, own]) + n > wq.shape[1] \
            or (own > 0 and first != int(wq[WQ_FIRST, qn - 1] + wq[WQ_BLOCKS, qn - 1])):
        return False, t_end, cyl, head
    wq[WQ_FIRST, qn] = first
    wq[WQ_BLOCKS, qn] = n
    wq[WQ_DATA_START, qn] = data0
    wq[WQ_SEGMENT, qn] = wq[WQ_SEGMENT, qn - 1]
    wq[WQ_QUEUED_AT, qn] = arrival
    wq[WQ_STATE, WQS_WRITES] = qn + 1
    t_end, cyl, head, _ = _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total)
    return True, t_end, cyl, head


@njit(cache=True, _nrt=False)
def _prebuffered_new(arrays, seek, write_seek, real, wq, first, n, data0, bus_s, write_segments, arrival, scratch,
                     total):
    """A fast write taken at once into a segment of its own while writes are on their way to the media
    (``disk_buffer_select_write_segment`` with several write segments: an empty or clean segment while
    fewer than *write_segments* hold data not yet written; none when it overlaps a queued write's
    blocks, BUFFER_COLLISION), queued behind the chain, first come first served. Returns (taken, end
    of the chain's last access, cylinder, head); not taken, the chain is left as it was."""
    t_end, cyl, head, _ = _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total)
    qn = int(wq[WQ_STATE, WQS_WRITES])
    dirty = 1
    top = wq[WQ_SEGMENT, 0]
    for e in range(qn):
        if e > 0 and wq[WQ_SEGMENT, e] != wq[WQ_SEGMENT, e - 1]:
            dirty += 1
        if wq[WQ_SEGMENT, e] > top:
            top = wq[WQ_SEGMENT, e]
        if first < wq[WQ_FIRST, e] + wq[WQ_BLOCKS, e] and wq[WQ_FIRST, e] < first + n:
            return False, t_end, cyl, head
    if wq.shape[1] > WQS_IMMEDIATE_WRITE and wq[WQ_STATE, WQS_POLICY] != FCFS:
        # rows out of arrival order: the segments holding queued writes, counted by label
        dirty = 0
        for e in range(qn):
            seen = False
            for d in range(e):
                if wq[WQ_SEGMENT, d] == wq[WQ_SEGMENT, e]:
                    seen = True
                    break
            if not seen:
                dirty += 1
    if dirty >= write_segments or qn >= wq.shape[1] or n > wq.shape[1]:
        return False, t_end, cyl, head
    wq[WQ_FIRST, qn] = first
    wq[WQ_BLOCKS, qn] = n
    wq[WQ_DATA_START, qn] = data0
    wq[WQ_SEGMENT, qn] = top + 1.0
    wq[WQ_QUEUED_AT, qn] = arrival
    wq[WQ_STATE, WQS_WRITES] = qn + 1
    t_end, cyl, head, _ = _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total)
    return True, t_end, cyl, head


@njit(cache=True, _nrt=False)
def _combines(combine, first, prev_end):
    """Whether a fast write starting at block *first*, arriving while the write that ended at
    *prev_end* is still on its way to the media, joins that write's segment: it appends to it and
    the drive combines sequential writes ("Combine seq writes" 1). DiskSim takes BUFFER_APPEND (and
    BUFFER_PREPEND) in ``disk_buffer_select_write_segment`` only with ``writecomb``, and
    ``disk_buffer_check_write_segments`` returns BUFFER_NOMATCH at once without it
    (``src/disksim_diskcache.c``); without BUFFER_APPEND the write cannot stop the access under way
    (``disk_buffer_stopable_access``), nor, with one write segment, be prebuffered into it: it
    waits, as a write that does not append (``disk_write_arrive``'s disconnection)."""
    return combine != 0 and first == prev_end


@njit(cache=True, _nrt=False)
def _read_slot(arrays, seek, write_seek, real, wq, bus_s, arrival, rlbn, rn, scratch, total):
    """Policy 21: a read miss of *rn* blocks from *rlbn* arriving at *arrival* while writes are queued
    (DiskSim queues it with them, ``disk_request_arrive``) is served at the first end of an access where
    its estimate is the least (:func:`_chain`). Returns (chosen, when, cylinder, head): chosen, the
    accesses before are final and the writes left wait (:func:`_resume_after_read`); else the end of
    the chain's last access, where the read is served as first come first served."""
    t, cyl, head, _, won = _chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total, rlbn, rn,
                                  arrival, real[REAL_IMMEDIATE_READ] != 0.0)
    return won, t, cyl, head


@njit(cache=True, _nrt=False)
def _resume_after_read(arrays, seek, write_seek, real, wq, bus_s, t, cyl, head, scratch, total):
    """The queued writes a read went before resume at *t* (its completion received:
    ``disk_check_prefetch_swap``) from (*cyl*, *head*), policy 21 choosing the first. Returns (end of
    the chain's last access, cylinder, head)."""
    qn = int(wq[WQ_STATE, WQS_WRITES])
    nxt, _ = _pick_next(arrays, seek, write_seek, real, wq, 0, qn, t, cyl, head, total, int(wq[WQ_STATE,
            WQS_READ_FIRST]), int(wq[WQ_STATE, WQS_READ_BLOCKS]),
                        -1, 0, 0.0, False, False)
    if nxt != 0:
        _move_row(wq, nxt, 0)
    start = t
    if wq[WQ_DATA_START, 0] > start:
        start = wq[WQ_DATA_START, 0]
    wq[WQ_STATE, WQS_START] = start
    wq[WQ_STATE, WQS_CYLINDER] = cyl
    wq[WQ_STATE, WQS_HEAD] = head
    wq[WQ_STATE, WQS_MIN_MOVE] = 0.0
    t_end, cyl, head, _ = _run_chain(arrays, seek, write_seek, real, wq, bus_s, t, scratch, total)
    return t_end, cyl, head


@njit(cache=True, _nrt=False)
def _read_ahead_stop_after_read(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                                pf_head, done, in_sector):
    """When the read-ahead of a read that went before queued writes gives the mechanism back, its
    completion received at *done*, *pf_done* of its *pf_count* blocks read by then. DiskSim decides
    in ``disk_completion`` (COMPLETION_RECEIVED; "Preseeking level" 0): the read's access over (all
    its blocks read: ``disk_buffer_request_complete`` set it to NULL_EVENT, ``disk_release_hda``
    kept the mechanism for the read), ``disk_release_hda`` gives it to the queue's choice at once
    (``disk_check_hda``, no delay): at *done* (the last block's end is not later: pf_done counts
    the blocks read by *done*); else ``disk_check_prefetch_swap`` activates the choice, which stops
    the read-ahead at its pending event (``disk_buffer_stopable_access``; ``disk_check_hda`` delays
    the seek by ``disk_seek_stoptime``: :func:`~diskmodel.model.simulator.readahead._stop_read_ahead`).
    Checked on an instrumented DiskSim 4.0 (the delay of the next write's ``disk_initiate_seek``
    after ``disk_completion``; tests/golden/disksim_random/README.md, Session 9). Returns (time,
    cylinder, head)."""
    if pf_done >= pf_count:
        cyl, head, _, _, _ = lbn_to_pbn_one(pf_base + pf_count - 1, arrays)
        return max(done, pf_ready[pf_count - 1]), cyl, head
    return _stop_read_ahead(arrays, seek, write_seek, real, pf_base, pf_done, pf_ready, pf_start, pf_cyl, pf_head,
                            done, in_sector)
