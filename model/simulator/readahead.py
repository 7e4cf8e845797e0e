"""DiskSim 4.0's buffer cache for the per-request simulation: read-ahead and bus transfer.

numba helpers of :func:`diskmodel.model.simulator.simulate.simulate_requests`'s
kernel, each after the DiskSim function it cites (``src/disksim_diskcache.c``,
``src/disksim_diskctlr.c``, DiskSim 4.0, Ganger, Worthington, Patt et al.,
CMU PDL): how far a read-ahead goes, where and when a running one stops,
carrying one on for a hit, the segments' replacement, and how a read's
blocks cross the bus (holding it, or disconnecting and reconnecting at the
watermark). Pure functions of arrays.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .immediate import _hold_immediate
from .mapping import cylinder_end_lbn, lbn_to_pbn_one, track_end_lbn, track_first_lbn
from .read_direct import _ask_delay_s, _host_progress
from .media_access import access_media, move_time_s
from .state import (INT_MAX_READ_AHEAD, INT_MIN_READ_AHEAD, INT_READ_AHEAD_OVER_REQUEST, INT_READ_AHEAD_SCHEME,
                    INT_SEGMENT_BLOCKS, LAYOUT_FIRST_LBN, LAYOUT_SECTORS_PER_TRACK, OVH_MISS, OVH_READ,
                    REAL_BUS_READ_BLOCK_S, REAL_DATA_PREP_S, REAL_HEAD_SWITCH_S, REAL_IMMEDIATE_READ,
                    REAL_IMMEDIATE_READ_G4, REAL_PERIOD_S, REAL_READ_DISCONNECT_S, REAL_READ_DONE_S, REAL_RESELECT_S,
                    REAL_WRITE_SETTLE_S, SEG_END, SEG_MAX_READ_AHEAD, SEG_START, WORK_CHUNK_END, WORK_NOT_BEFORE,
                    WORK_SCRATCH, WORK_SENT_AT)

__all__ = []

# The kernels run without numba's reference counting (_nrt=False): they allocate nothing, and
# counting the references of the layout's arrays on every call took most of the simulation's
# time (diskmodel.model.simulator.kernel._simulate).


@njit(cache=True, _nrt=False)
def _read_ahead_limit(arrays, scheme, first, last, seg_first, max_ra, seg_size, keep, total, min_ra):
    """One past the last block the drive reads ahead after reading [first, last).

    DiskSim's ``disk_buffer_get_max_readahead`` (``src/disksim_diskcache.c``):
    a maximum read-ahead > 0 bounds it at ``last + max_ra`` whatever the
    segment size (the segment is circular, ``disk_buffer_segment_wrap``: it
    keeps the last ``seg_size`` blocks read, so a read-ahead longer than the
    room left pushes the request's own blocks out). Only without a maximum
    does "Read-ahead over requested" act: with *keep* 0 (over requested = 0,
    DiskSim's ``keeprequestdata`` 1) the read-ahead stops when the segment
    is full, keeping the request's blocks, unless that leaves less than the
    minimum read-ahead *min_ra* (then ``last + min_ra``); else it reads a
    segment's worth.
    Scheme 4 (DEC) reads to the end of the track holding block *last*, and
    one track's worth of blocks (those per track of *first*'s zone) further
    when the segment starts before that track (*seg_first*: the segment's
    first block when DiskSim asks, the request's first for a miss), with no
    other bound: DiskSim's code, not its manual (which says a read-ahead
    follows only a detected sequential stream).
    """
    if scheme == 0 or last >= total:
        return last
    if scheme == 1:
        limit = track_end_lbn(arrays, last - 1, total)
    elif scheme == 2:
        limit = cylinder_end_lbn(arrays, last - 1, total)
    elif scheme == 4:
        limit = track_end_lbn(arrays, last, total)
        if seg_first < track_first_lbn(arrays, last, 0):
            _, _, _, _, z = lbn_to_pbn_one(first, arrays)
            limit += arrays[LAYOUT_SECTORS_PER_TRACK][z]
    else:
        limit = last + (max_ra if max_ra > 0 else seg_size)
    if scheme != 4:
        if max_ra > 0:
            if limit > last + max_ra:
                limit = last + max_ra
        elif keep == 0:
            if last - first >= seg_size or seg_size - (last - first) < min_ra:
                limit = last + min_ra
            elif limit > first + seg_size:
                limit = first + seg_size
        elif limit > last + seg_size:
            limit = last + seg_size
    if limit > total:
        limit = total
    return limit


@njit(cache=True, _nrt=False)
def _minimum_end(arrays, scheme, last, min_ra, total):
    """One past the last block a read-ahead after a read ending at *last* reads before it can be
    stopped (DiskSim's ``seg->minreadaheadblkno``: ``last`` + "Minimum read-ahead (blks)",
    ``disk_buffer_set_segment``, ``src/disksim_diskcache.c``).

    With "Buffer continuous read" 1 or 2 the read-ahead ends at the end of the track (cylinder)
    of the read's last block whatever its minimum: ``disk_initiate_seek``
    (``src/disksim_diskctlr.c``) refuses a background read's move to another track (cylinder),
    and ``disk_buffer_sector_done`` then releases the hda (``disk_release_hda``) with the
    segment short of its minimum. So a request arriving after that waits for nothing.
    """
    end = min(last + min_ra, total)
    if scheme == 1:
        end = min(end, track_end_lbn(arrays, last - 1, total))
    elif scheme == 2:
        end = min(end, cylinder_end_lbn(arrays, last - 1, total))
    return end


@njit(cache=True, _nrt=False)
def _invalidate(seg_start, seg_end, nseg, first, last, keep, keep_too):
    for i in range(nseg):
        if i != keep and i != keep_too and seg_start[i] < last and first < seg_end[i]:
            seg_start[i] = 0
            seg_end[i] = 0


@njit(cache=True, _nrt=False)
def _stop_read_ahead(arrays, seek, write_seek, real, pf_base, pf_done, pf_ready, pf_start, pf_cyl, pf_head, arrival,
                     in_sector):
    """When a read-ahead still running at *arrival* stops, and where it leaves the head.

    DiskSim stops a read-ahead only between two of its events
    (``disk_buffer_stopable_access``, ``src/disksim_diskctlr.c``, with
    "Stop prefetch in sector" 0 or during a seek): the pending event is
    taken off the queue and its time, ``disk_seek_stoptime``, is when the
    mechanism is free. The pending event is the move to the next track when
    that move is still under way (``DEVICE_BUFFER_SEEKDONE``: the head ends
    on the new track), else the end of the sector being read (or waited
    for) next (``DEVICE_BUFFER_SECTOR_DONE``); with *in_sector* ("Stop
    prefetch in sector" 1) a sector is left at once, at *arrival*. Returns
    (stop time, cylinder, head); the blocks whose sector ended by *arrival*
    are in the segment.
    """
    k = pf_done
    cyl, head, _, _, _ = lbn_to_pbn_one(pf_base + k, arrays)
    if k > 0:
        from_cyl, from_head, _, _, _ = lbn_to_pbn_one(pf_base + k - 1, arrays)
        t0 = pf_ready[k - 1]
    else:
        from_cyl = pf_cyl
        from_head = pf_head
        t0 = pf_start
    if k == 0 or from_cyl != cyl or from_head != head:
        move_end = t0 + move_time_s(from_cyl, from_head, cyl, head, seek, write_seek, real[REAL_HEAD_SWITCH_S],
                                    real[REAL_WRITE_SETTLE_S], False)
        if arrival < move_end:
            return move_end, cyl, head
    if in_sector:
        return arrival, cyl, head
    if from_cyl == cyl and from_head == head:
        # a gap on the track (a block held back, _hold_read_ahead): the head passes the
        # sectors one by one, each a pending event, and stops at the end of the one under it.
        # Before the first block, only a gap of a revolution or more is a held block: a shorter
        # one is the rotational latency of a new access, a single event (disk_buffer_seekdone)
        _, _, _, _, z = lbn_to_pbn_one(pf_base + k, arrays)
        sector_s = real[REAL_PERIOD_S] / arrays[LAYOUT_SECTORS_PER_TRACK][z]
        if (k > 0 or pf_ready[k] - sector_s - t0 >= real[REAL_PERIOD_S] * (1.0 - 1e-9)) \
                and arrival < pf_ready[k] - sector_s and t0 <= arrival:
            return t0 + np.ceil((arrival - t0) / sector_s) * sector_s, cyl, head
    return pf_ready[k], cyl, head


@njit(cache=True, _nrt=False)
def _extend_read_ahead(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                       pf_head, limit, scratch, total, own_end=0):
    """A running read-ahead carried on to *limit*: a read served from its segment raises the
    segment's ``maxreadaheadblkno`` to its own read-ahead limit (DiskSim's
    ``disk_buffer_set_segment``, ``src/disksim_diskcache.c``), and the read-ahead goes on
    from its last block. Returns (pf_base, pf_count, pf_done, pf_start, pf_cyl, pf_head):
    when *pf_ready* is full, the blocks already read are dropped from its front.

    The blocks up to *own_end* (the end of the read that took the access over) are read as that
    read's: on a track the access reaches for them, a zero-latency access's ``lastblkno`` is the
    read's end (``disk_buffer_sector_done``, foreground), so the blocks past it passing before the
    way round are not read then ("Immediate buffer read" on a g4 layout,
    :func:`~diskmodel.model.simulator.access_block.immediate_read_run`); the read-ahead goes on from
    the read's end once its blocks are in."""
    extra = limit - (pf_base + pf_count)
    if extra <= 0:
        return pf_base, pf_count, pf_done, pf_start, pf_cyl, pf_head
    if pf_count + extra > pf_ready.size and pf_done > 0:
        pf_start = pf_ready[pf_done - 1]
        pf_cyl, pf_head, _, _, _ = lbn_to_pbn_one(pf_base + pf_done - 1, arrays)
        for j in range(pf_count - pf_done):
            pf_ready[j] = pf_ready[pf_done + j]
        pf_base += pf_done
        pf_count -= pf_done
        pf_done = 0
    if pf_count + extra > pf_ready.size:
        extra = pf_ready.size - pf_count
    if extra > 0:
        cyl, head, _, _, _ = lbn_to_pbn_one(pf_base + pf_count - 1, arrays)
        # (only where it matters: elsewhere one access, as before)
        own = (own_end - (pf_base + pf_count) if real.size > REAL_IMMEDIATE_READ_G4
                and real[REAL_IMMEDIATE_READ_G4] != 0.0 else 0)
        if own > extra:
            own = extra
        t_own = pf_ready[pf_count - 1]
        if own > 0:
            t_own, cyl, head = access_media(arrays, seek, write_seek, real, pf_base + pf_count, own, t_own, cyl,
                                            head, False, pf_ready, pf_ready, pf_count, scratch, 0.0, total)
        else:
            own = 0
        if extra > own:
            access_media(arrays, seek, write_seek, real, pf_base + pf_count + own, extra - own, t_own, cyl, head,
                         False, pf_ready, pf_ready, pf_count + own, scratch, 0.0, total)
        pf_count += extra
    return pf_base, pf_count, pf_done, pf_start, pf_cyl, pf_head


@njit(cache=True, _nrt=False)
def _block_sent(ready, offset, k, count, tb, water, hold, disconnect_s, reconnect_s, bus_s):
    """When the host has block k of *count* (buffered at ``ready[offset + k]``), the bus free at
    *tb*: at once if buffered; else holding the bus, as it is buffered; else disconnected and
    back once the watermark's blocks from k are buffered (disk_buffer_transfer_size,
    disk_request_needs_bus)."""
    j = offset + k
    if j >= 0 and ready[j] > tb:
        if hold:
            tb = ready[j]
        else:
            last = k + water
            if last > count:
                last = count
            tb = max(tb + disconnect_s, ready[offset + last - 1]) + reconnect_s
    return tb + bus_s


@njit(cache=True, _nrt=False)
def _send_read_blocks_at(ready, offset, count, tb, water, hold, disconnect_s, reconnect_s, bus_s, sent_at, at,
                         chunk_end):
    """When the host has the last of *count* read blocks; the bus is the drive's from *tb* [s];
    when it has block k goes to ``sent_at[at + k]``, and when the transfer carrying it ends to
    ``chunk_end[at + k]`` (nothing written when *at* < 0).

    Block k is in the buffer from ``ready[offset + k]`` (already there when
    ``offset + k < 0``). DiskSim's ``disk_buffer_transfer_size``
    (``src/disksim_diskctlr.c``) sends what the buffer holds; when the host
    has taken it all before the next block is read, the drive either holds
    the bus and sends each block as it is read (*hold*: "Hold bus entire
    read xfer"), or disconnects (*disconnect_s*, the
    read disconnect overhead) and reconnects (*reconnect_s*: first reselect
    plus data preparation) once *water* more blocks, or the rest of the
    request, are buffered and the disconnection is over
    (``disk_request_needs_bus``, ``disk_check_bus``; :func:`_block_sent`). A transfer carries the
    blocks buffered when it starts (``disk_buffer_transfer_size``: ``min(seg->endblkno, ...) -
    outblkno``); the next one starts at its end, or once the next block is buffered.
    """
    t_chunk = tb          # when the current transfer started
    k0 = 0                # its first block
    for k in range(count):
        t_prev = tb
        tb = _block_sent(ready, offset, k, count, tb, water, hold, disconnect_s, reconnect_s, bus_s)
        if k == 0 or (offset + k >= 0 and ready[offset + k] > t_chunk):
            # not buffered when the transfer started: a new one
            if at >= 0:
                for m in range(k0, k):
                    chunk_end[at + m] = t_prev
            k0 = k
            t_chunk = tb - bus_s
        if at >= 0:
            sent_at[at + k] = tb
    if at >= 0:
        for m in range(k0, count):
            chunk_end[at + m] = tb
    return tb


@njit(cache=True, _nrt=False)
def _sent_back_to_back(sent_at, count, t0, bus_s, chunk_end):
    """``sent_at[j]``: when the host has block j of *count* blocks sent one after the other from *t0*,
    in one transfer (ending at ``chunk_end[j]``)."""
    for j in range(count):
        sent_at[j] = t0 + (j + 1) * bus_s
        chunk_end[j] = t0 + count * bus_s


@njit(cache=True, _nrt=False)
def _segment_end_at(seg_start, seg_end, seg, end, seg_size):
    """Segment *seg* now ends at block *end* and keeps its last *seg_size* blocks: the segment is
    circular (``disk_buffer_segment_wrap``, ``src/disksim_diskcache.c``)."""
    seg_end[seg] = end
    if end - seg_start[seg] > seg_size:
        seg_start[seg] = end - seg_size


@njit(cache=True, _nrt=False)
def _read_to_minimum(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                     pf_head, pf_min, scratch, total):
    """A read-ahead short of its minimum when a request arrives: it cannot be stopped
    (``disk_buffer_stopable_access``, ``src/disksim_diskctlr.c``, which lowers its limit to the
    minimum, ``minreadaheadblkno``), reads on to block *pf_min* and ends there. Returns (end
    time, cylinder, head, pf_base, pf_count)."""
    pf_base, pf_count, pf_done, pf_start, pf_cyl, pf_head = _extend_read_ahead(
        arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl, pf_head, pf_min,
        scratch, total)
    cyl, head, _, _, _ = lbn_to_pbn_one(pf_min - 1, arrays)
    return pf_ready[pf_min - pf_base - 1], cyl, head, pf_base, pf_count


@njit(cache=True, _nrt=False)
def _asked_before_owner(t_ask, arrival):
    """Whether DiskSim asked about a read-ahead sector (at *t_ask*, the end of the sector before:
    ``disk_buffer_sector_done`` with "Read directly to buffer" 1, every bundled drive's value; at 0
    at the sector's own end, :mod:`~diskmodel.model.simulator.read_direct`) before the read arriving at
    *arrival* took the segment over (``disk_buffer_attempt_access_swap``, ``src/disksim_diskctlr.c``).
    Such a sector, under the head at the arrival, is not held by the new read's progress: the
    answer was the read before's, and ``disk_buffer_block_available`` is not asked again.
    atlas_III (64-block segments), sequential 64-block reads 2311212 .. 2311468 after a miss:
    the fourth, a full hit arriving while 2311468 is under the head, lets it be read (the segment
    drops 2311404 for it) and holds 2311469 a revolution; the fifth is a partial hit (DiskSim
    7.667 ms). With "Read directly to buffer" 0 DiskSim asks about 2311468 at its end, after the
    arrival: it is held as well and the fifth finds nothing of its own (7.740 ms)."""
    return t_ask < arrival


@njit(cache=True, _nrt=False)
def _hold_read_ahead(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, first, n, seg_size,
                     sent_at, done, scratch, total, arrival, chunk_end):
    """A read-ahead held back while the read that owns its segment is sent to the host.

    DiskSim's ``disk_buffer_block_available`` (``src/disksim_diskcache.c``), asked by
    ``disk_buffer_sector_done`` at the end of each sector about the next sector ("Read directly to
    buffer" 1; about the sector just passed at 0, :mod:`~diskmodel.model.simulator.read_direct`):
    until the segment's owner (the read being served: a hit, a hit on blocks being read
    ahead, or a miss whose own access reads on ahead) has sent its completion (*done* less
    the read completion overhead: ``disk_request_complete`` marks it sent at the end of the
    transfer), no block at or past the owner's next block for the host plus the segment size
    is read; the question about a sector is asked at the end of the sector before it (a
    block whose sector starts before that moment is held though it ends after it), or at its
    own end ("Read directly to buffer" 0), the host's progress counted as at its start, plus a
    transfer ended by then (:func:`~diskmodel.model.simulator.read_direct._host_progress`). The
    host has block j of *first* .. from ``sent_at[j]``, its transfer over at ``chunk_end[j]``;
    the owner's next block is counted as ``disk_buffer_update_outbuffer`` left it at the end of
    the sector before. The head passes
    a held block, and reads it (and on from it) when it comes round with the block
    available: a revolution later, or more. *pf_ready* is rewritten from there; a block
    after it may be held again. The read owns the segment from its *arrival* on
    (``disk_buffer_attempt_access_swap`` in ``disk_activate_read``): a sector asked about before
    it, the one under the head then, was asked for the read before, whose own hold (or sent
    completion) decided it, and is read (:func:`_asked_before_owner`).
    """
    period = real[REAL_PERIOD_S]
    # the owner holds the read-ahead until it has sent its completion: the end of its transfer,
    # before the completion overhead (disk_request_complete sets COMPLETION_SENT)
    sent_done = done - real[REAL_READ_DONE_S]
    sent = 0
    k = max(first + seg_size - pf_base, pf_done)
    while k < pf_count:
        lbn = pf_base + k
        c, h, _, _, z = lbn_to_pbn_one(lbn, arrays)
        sector_s = period / arrays[LAYOUT_SECTORS_PER_TRACK][z]
        # DiskSim asks about a sector at the end of the one before, or at its own end with "Read
        # directly to buffer" 0 (disk_buffer_sector_done; read_direct), counting the
        # host's progress as at the sector's start
        t_start = pf_ready[k] - sector_s
        delay = _ask_delay_s(real, sector_s)
        t_ask = t_start + delay
        if t_ask >= sent_done:
            return
        if _asked_before_owner(t_ask, arrival):
            k += 1
            continue
        sent = _host_progress(sent_at, chunk_end, n, sent, t_start, t_ask)
        if lbn - (first + sent) >= seg_size and real[REAL_IMMEDIATE_READ] != 0.0:
            # "Immediate buffer read": the sectors after it that may be read are read first
            nxt = _hold_immediate(arrays, seek, write_seek, real, pf_base, pf_count, pf_ready, k, t_start, first, n,
                                  seg_size, sent_at, sent_done, scratch, total, chunk_end)
            if nxt >= 0:
                k = nxt
                continue
        if lbn - (first + sent) >= seg_size:
            # the sector passes unread; the next passes, a revolution apart, until one is allowed
            t_start += period
            while t_start + delay < sent_done:
                sent = _host_progress(sent_at, chunk_end, n, sent, t_start, t_start + delay)
                if lbn - (first + sent) < seg_size:
                    break
                t_start += period
            access_media(arrays, seek, write_seek, real, lbn, pf_count - k, t_start, c, h, False, pf_ready,
                         pf_ready, k, scratch, 0.0, total)
        k += 1


@njit(cache=True, _nrt=False)
def _kept_read_ahead_limit(seg_max_ra, s, limit, fresh):
    """The read-ahead limit of segment *s* after a read set on it whose own limit is *limit*
    (:func:`_read_ahead_limit`): DiskSim keeps it in the segment (``seg->maxreadaheadblkno``), resets
    it for a request that is no hit (*fresh*: ``BUFFER_NOMATCH``, a write's too, -1) and else raises
    it to the request's limit, never lowers it (``disk_buffer_set_segment``, and
    ``disk_check_hda_pending`` for a hit starting a read-ahead on an idle segment, "Read-ahead on
    idle hit": ``max(seg->maxreadaheadblkno, disk_buffer_get_max_readahead(...))``,
    ``src/disksim_diskcache.c``, ``src/disksim_diskctlr.c``). So a hit on a segment whose earlier
    read-ahead was stopped short reads ahead to the earlier limit when that is further, e.g. the DEC
    scheme's extra track of a read whose segment then started on an earlier track. A request
    arriving while the read-ahead is short of its minimum lowers the kept limit to the minimum
    (``disk_buffer_stopable_access``: ``seg->maxreadaheadblkno = seg->minreadaheadblkno``), a write
    overlapping its blocks with "Write hit stop prefetch" to its end (the kernel sets those)."""
    if fresh or limit > seg_max_ra[s]:
        seg_max_ra[s] = limit
    return seg_max_ra[s]


@njit(cache=True, _nrt=False)
def _minimum_covers(pf_active, pf_base, pf_done, pf_min, seg_start, pf_seg, seg_size, first, last):
    """Whether a read that is a miss at its arrival (its first block not yet read ahead) finds
    all its blocks in the read-ahead's segment once the read-ahead has gone on to its minimum.

    DiskSim 4.0 (``src/disksim_diskcache.c``, ``disk_buffer_select_read_segment``): a request
    starting at or past the block being read ahead is BUFFER_NOMATCH (without "Allow almost
    read hits"), and a read-ahead short of its minimum cannot be stopped
    (``disk_buffer_stopable_access``, ``src/disksim_diskctlr.c``, which lowers its limit to the
    minimum): ``disk_activate_read`` drops the request's segment and it waits in the queue.
    When the read-ahead ends at the minimum, ``disk_get_effectivehda`` selects a segment for
    it again, and that segment (clean now) holds every block: BUFFER_WHOLE, a hit
    (:func:`_hit_after_minimum`). The mechanism reads nothing for it. (*pf_seg* is the
    read-ahead's segment, looked at only while it is active; a minimum beyond the segment's
    *seg_size* pushes its first blocks out.)
    """
    if not pf_active or pf_base + pf_done >= pf_min or last > pf_min:
        return False
    # the segment is circular: reading on to the minimum, it keeps the last seg_size blocks only
    # (disk_buffer_segment_wrap; _segment_end_at)
    return max(seg_start[pf_seg], pf_min - seg_size) <= first


@njit(cache=True, _nrt=False)
def _hit_after_minimum(arrival, stop, n, miss_overhead_s, disconnect_s, reconnect_s, bus_s):
    """When the host has the last block of a read served as in :func:`_minimum_covers`.

    ``disk_read_arrive`` (``src/disksim_diskctlr.c``) disconnects the BUFFER_NOMATCH read
    after the read miss command overhead and the read disconnect overhead; the read-ahead
    ends at *stop*; ``disk_check_hda_pending`` then finds the request's blocks in its segment
    and ``disk_check_bus`` reconnects it (*reconnect_s*: reselection plus data preparation):
    its *n* blocks cross the bus back to back."""
    return max(arrival + miss_overhead_s + disconnect_s, stop) + reconnect_s + n * bus_s


@njit(cache=True, _nrt=False)
def _hit_once_minimum_read(drive, buf, c, n, arrival):
    """A read hit that waits, disconnected, for a read-ahead short of its minimum (a read the
    read-ahead itself covers, :func:`_minimum_covers`, or a full hit in another segment, which
    cannot stop it: ``disk_buffer_stopable_access``, ``src/disksim_diskctlr.c``).

    The read-ahead reads on to *pf_min* and ends there (:func:`_read_to_minimum`); its segment
    ends there and keeps the minimum as its read-ahead limit (``disk_buffer_stopable_access``
    lowers ``seg->maxreadaheadblkno`` to it: the read before has completed); the hit's *n*
    blocks reach the host as in :func:`_hit_after_minimum`, back to back (*sent_at*).

    Returns (mechanism free at, cylinder, head, pf_base, pf_count, when the host has the last
    block). The read-ahead is the carried record *c*'s; the hit waits as a read miss (the read
    miss overhead and read disconnect after the last request's kind, then the reselect and data
    preparation, its blocks at the bus's read block time)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    (pf_base, pf_count, pf_done,
     pf_start) = c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, c.read_ahead_start_s
    (pf_cyl, pf_head, pf_min,
     pf_seg) = c.read_ahead_cylinder, c.read_ahead_head, c.read_ahead_minimum, c.read_ahead_segment
    seg_start, seg_end, seg_max_ra = segments[SEG_START], segments[SEG_END], segments[SEG_MAX_READ_AHEAD]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    miss_overhead_s = overhead[OVH_READ, OVH_MISS, c.previous_write]
    disconnect_s = real[REAL_READ_DISCONNECT_S + c.previous_write]
    reconnect_s = real[REAL_RESELECT_S] + real[REAL_DATA_PREP_S]
    bus_s = real[REAL_BUS_READ_BLOCK_S]
    sent_at, scratch, chunk_end = work[WORK_SENT_AT], work[WORK_SCRATCH], work[WORK_CHUNK_END]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    stop, cyl, head, pf_base, pf_count = _read_to_minimum(
        arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl, pf_head, pf_min,
        scratch, total)
    _segment_end_at(seg_start, seg_end, pf_seg, pf_min, seg_size)
    seg_max_ra[pf_seg] = pf_min
    tb = _hit_after_minimum(arrival, stop, n, miss_overhead_s, disconnect_s, reconnect_s, bus_s)
    _sent_back_to_back(sent_at, n, tb - n * bus_s, bus_s, chunk_end)
    return stop, cyl, head, pf_base, pf_count, tb


@njit(cache=True, _nrt=False)
def _partial_hit_waits(dirty_end, held, sneaky_partial, on_read_ahead):
    """Until when a partial hit (its first blocks buffered, found at its arrival or once a
    read-ahead has gone on to its minimum) waits, disconnected, for the mechanism; at most
    its arrival means not at all.

    ``disk_read_arrive`` (``src/disksim_diskctlr.c``) connects a BUFFER_PARTIAL read at once
    only while the access under way can be stopped (``disk_buffer_stopable_access``) or with
    "Allow sneaky partial read hits"; else it disconnects after the read miss overhead, and
    ``disk_activate_read`` drops its segment while the hda is taken. It waits for the fast
    write being written (until *dirty_end*), or for a read-ahead short of its minimum (until
    *held*, when that ends: ``disk_get_effectivehda`` then selects its segment again,
    BUFFER_PARTIAL, and ``disk_check_hda_pending`` reconnects it). A read starting at the
    block being read ahead (*on_read_ahead*, the read-ahead's own segment) is BUFFER_NOMATCH
    at its arrival: sneaky partial hits do not serve it either.
    """
    wait = 0.0
    if not sneaky_partial:
        wait = max(dirty_end, held)
    elif on_read_ahead:
        wait = held
    return wait


@njit(cache=True, _nrt=False)
def _idle_hit_read_ahead(drive, buf, c, first, n, s, done, arrival):
    """A read hit on segment *s* while the mechanism is idle, with "Read-ahead on idle hit":
    the drive reads ahead from the segment's end (``disk_check_hda_pending``,
    ``src/disksim_diskctlr.c``: the hit takes the hda; with ``readaheadifidle`` it seeks when the
    segment ends before ``max(seg->maxreadaheadblkno, disk_buffer_get_max_readahead(...))``, the
    limit kept in the segment, :func:`_kept_read_ahead_limit`), at most a read-ahead buffer's
    (*pf_ready*) worth, the mechanism starting at *start* from (*cyl*, *head*). A hit on written
    data too: it reads ahead from the end of whatever segment the hit took. The read-ahead is held
    back while the hit is sent (:func:`_hold_read_ahead`).

    Returns (started, pf_base, pf_count, pf_done, pf_min, pf_start, pf_cyl, pf_head): the
    read-ahead's state, the carried record *c*'s when nothing is left to read ahead. The mechanism
    starts once it is free and the read miss overhead is over (disk_check_hda's delay)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    scheme, max_ra, seg_size = ints[INT_READ_AHEAD_SCHEME], ints[INT_MAX_READ_AHEAD], ints[INT_SEGMENT_BLOCKS]
    ra_over, min_ra = ints[INT_READ_AHEAD_OVER_REQUEST], ints[INT_MIN_READ_AHEAD]
    seg_start, seg_end, seg_max_ra = segments[SEG_START], segments[SEG_END], segments[SEG_MAX_READ_AHEAD]
    not_before, scratch = work[WORK_NOT_BEFORE], work[WORK_SCRATCH]
    sent_at, chunk_end = work[WORK_SENT_AT], work[WORK_CHUNK_END]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    last = first + n
    start = max(c.mechanism_free_s, arrival + overhead[OVH_READ, OVH_MISS, c.previous_write])
    cyl, head = c.cylinder, c.head
    pf_base, pf_count, pf_done, pf_min = c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, c.read_ahead_minimum
    pf_start, pf_cyl, pf_head = c.read_ahead_start_s, c.read_ahead_cylinder, c.read_ahead_head
    limit = _read_ahead_limit(arrays, scheme, first, last, seg_start[s], max_ra, seg_size, ra_over, total, min_ra)
    limit = _kept_read_ahead_limit(seg_max_ra, s, limit, False)
    count = limit - seg_end[s]
    if count > pf_ready.size:
        count = pf_ready.size
    if count <= 0:
        return False, pf_base, pf_count, pf_done, pf_min, pf_start, pf_cyl, pf_head
    access_media(arrays, seek, write_seek, real, seg_end[s], count, start, cyl, head, False, not_before, pf_ready, 0,
                 scratch, 0.0, total)
    base = seg_end[s]
    _hold_read_ahead(arrays, seek, write_seek, real, base, count, 0, pf_ready, first, n, seg_size, sent_at, done,
                     scratch, total, arrival, chunk_end)
    return True, base, count, 0, _minimum_end(arrays, scheme, last, min_ra, total), start, cyl, head
