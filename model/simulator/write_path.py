"""The write path of the simulation kernel (:mod:`diskmodel.model.simulator.kernel`), by case: a fast
write reported once its data are in the buffer (:func:`_fast_write`, appending to a write still on
its way to the media: :func:`_join_writing`), or a write reported once on the media
(:func:`_write_through`); then its segment (:func:`_keep_write`), after DiskSim 4.0's
``disk_write_arrive`` and ``disk_buffer_select_write_segment`` (``src/disksim_diskctlr.c``,
``src/disksim_diskcache.c``).

Pure model code (numba), no I/O.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .big_transfer import _write_through_segment
from .mapping import lbn_to_pbn_one
from .media_access import _EPS_REV, access_media, move_time_s, wait_for_angle
from .readahead import _invalidate, _read_to_minimum, _segment_end_at, _stop_read_ahead
from .segments import _appended_segment, _extra_disconnect_segment, _room_to_append, _write_segment
from .state import (HitKind, INT_COMBINE_SEQ_WRITES, INT_EXTRA_WRITE_DISCONNECT, INT_FAST_WRITE_LEVEL,
                    INT_HITS_ON_WRITES, INT_HOLD_BUS_WRITE, INT_NEVER_DISCONNECT, INT_SEGMENTS, INT_SEGMENT_BLOCKS,
                    INT_SEPARATE_WRITE_SEGMENT, INT_STOP_IN_SECTOR, INT_WATERMARK_BY_REQUEST, INT_WRITES_QUEUE,
                    INT_WRITE_HIT_STOPS_READ_AHEAD, INT_WRITE_SEGMENTS, LAYOUT_FIRST_LBN, LAYOUT_SECTORS_PER_TRACK,
                    OVH_HIT, OVH_MISS, OVH_WRITE, REAL_BUS_WRITE_BLOCK_S, REAL_DATA_PREP_S, REAL_FINAL_RECONNECT_S,
                    REAL_HEAD_SWITCH_S, REAL_MIN_WRITE_SEEK_S, REAL_OTHER_RESELECT_S, REAL_PERIOD_S, REAL_RESELECT_S,
                    REAL_WRITE_DISCONNECT_S, REAL_WRITE_DONE_S, REAL_WRITE_SETTLE_S, REAL_WRITE_WATERMARK,
                    REAL_XD_COMMAND_S, REAL_XD_DISCONNECT_S, REAL_XD_INTER_S, REAL_XD_SECOND_DISCONNECT_S,
                    REAL_XD_SEEK_DELTA_S, SEG_END, SEG_MAX_READ_AHEAD, SEG_START, SEG_WRITE, WORK_NOT_BEFORE,
                    WORK_READY, WORK_SCRATCH, WORK_STATS, WORK_WRITE_WATERMARK)
from .writequeue import _combines, _prebuffered, _prebuffered_new, _start_chain


@njit(cache=True, _nrt=False, inline="always")
def _written_on(drive, last_written, first, count, t0, data_at):
    """When an access that has written block *last_written* at *t0* has gone on to write the
    blocks *first* .. of a write appended to it, as DiskSim's disk_buffer_sector_done does
    (src/disksim_diskctlr.c: a write access writes up to min(seg->endblkno, next), the end of the
    buffered data or of the track): the next sectors, each while its data (the k-th at
    ``data_at[k]``) are in the buffer when the head reaches it. At the end of a track
    with the next block's data buffered the access is not done (disk_buffer_request_complete: a
    background write is done when it has written all its segment's data, seg->endblkno) and
    moves on to the next track (disk_initiate_seek). Returns (time, cylinder, head) at its end."""
    arrays, seek, write_seek, overhead, real, ints = drive
    c0, h0, _, a0, z0 = lbn_to_pbn_one(last_written, arrays)
    sector_s = real[REAL_PERIOD_S] / arrays[LAYOUT_SECTORS_PER_TRACK][z0]
    t = t0
    angle = a0
    for k in range(count):
        if data_at[k] > t:
            break
        c, h, _, a, z = lbn_to_pbn_one(first + k, arrays)
        if c != c0 or h != h0:
            t += move_time_s(c0, h0, c, h, seek, write_seek, real[REAL_HEAD_SWITCH_S], real[REAL_WRITE_SETTLE_S], True)
            c0 = c
            h0 = h
            sector_s = real[REAL_PERIOD_S] / arrays[LAYOUT_SECTORS_PER_TRACK][z]
            t = wait_for_angle(t, a, real[REAL_PERIOD_S]) + sector_s
            angle = a
            continue
        step = a - angle
        step -= np.floor(step)
        if abs(step * arrays[LAYOUT_SECTORS_PER_TRACK][z0] - 1.0) > 1e-6:
            break
        angle = a
        t += sector_s
    return t, c0, h0


@njit(cache=True, _nrt=False, inline="always")
def _serve_write(drive, buf, c, first, n, arrival):
    """A write of *n* blocks from *first* arriving at the disk at *arrival*: the read-ahead
    stopped, then a fast write or a write-through, then its segment. Returns (completion,
    HitKind)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    min_write_seek = real[REAL_MIN_WRITE_SEEK_S]
    xd_command = real[REAL_XD_COMMAND_S]
    xd_seek_delta = real[REAL_XD_SEEK_DELTA_S]
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    fast_level = ints[INT_FAST_WRITE_LEVEL]
    hits_on_writes = ints[INT_HITS_ON_WRITES]
    separate_w = ints[INT_SEPARATE_WRITE_SEGMENT]
    stop_in_sector = ints[INT_STOP_IN_SECTOR]
    extra_disc = ints[INT_EXTRA_WRITE_DISCONNECT]
    never_disc = ints[INT_NEVER_DISCONNECT]
    write_hit_stop = ints[INT_WRITE_HIT_STOPS_READ_AHEAD]
    prebuffer = ints[INT_WRITES_QUEUE]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    seg_write = segments[SEG_WRITE]
    # each segment's read-ahead limit (readahead._kept_read_ahead_limit)
    seg_max_ra = segments[SEG_MAX_READ_AHEAD]
    wseg = nseg - 1 if separate_w else -1
    scratch = work[WORK_SCRATCH]
    last = first + n
    # the segment a read-ahead is still filling at the arrival (BUFFER_READING in DiskSim)
    reading = c.read_ahead_segment if c.read_ahead_active else -1
    fast = fast_level >= 1
    # DiskSim waives the minimum only for a write stream still being
    # written at the moment the next write arrives: never one at a time.
    min_move = min_write_seek
    ovh = overhead[OVH_WRITE, OVH_HIT if fast else OVH_MISS, c.previous_write]
    # (a drive that never disconnects has no extra write disconnect: disk_buffer_select_segment)
    extra = not fast and extra_disc and not never_disc and c.previous_write == 1 and nseg > 0 \
        and first != c.previous_end
    if extra and wseg < 0 and nseg > 1:
        # without a dedicated write segment, only when it takes the previous write's segment
        extra = _extra_disconnect_segment(seg_start, seg_end, seg_write, seg_used, nseg, first, last,
                                          reading, hits_on_writes, prebuffer)
    # the mechanism waits for the command overhead (DiskSim's overhead_done)
    mech_ovh = xd_command + xd_seek_delta if extra else ovh
    # A drive with extra write disconnects writes no sector before the buffer holds
    # min(blocks, 10) of the request's blocks (15 for 45 blocks or more): DiskSim's
    # disk_buffer_block_available (src/disksim_diskcache.c).
    held = 1
    if extra_disc:
        held = min(n, 10) if n < 45 else 15
    ra_held = 0.0
    if c.read_ahead_active and write_hit_stop and c.read_ahead_first + c.read_ahead_done < c.read_ahead_minimum:
        # "Write hit stop prefetch": a write overlapping the blocks the read-ahead has
        # buffered takes its minimum away (disk_buffer_stopable_access; disk_buffer_overlap)
        have = c.read_ahead_first + c.read_ahead_done
        seg_first = seg_start[c.read_ahead_segment]
        if (seg_first <= first < have) or (seg_first < last <= have) or (first <= seg_first and last >= have):
            c.read_ahead_minimum = have
            seg_max_ra[c.read_ahead_segment] = have
    if c.read_ahead_active and c.read_ahead_first + c.read_ahead_done < c.read_ahead_minimum and not prebuffer:
        # the write's segment is chosen once the read-ahead has stopped, clean by then
        # (disk_activate_write drops the choice made at the arrival: segments)
        reading = -1
    if c.read_ahead_active and c.read_ahead_first + c.read_ahead_done < c.read_ahead_minimum:
        # as for a read miss: the read-ahead goes on to its minimum first
        c.read_ahead_active = False
        stop, c.cylinder, c.head, c.read_ahead_first, c.read_ahead_count = _read_to_minimum(
            arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, pf_ready,
            c.read_ahead_start_s, c.read_ahead_cylinder,
            c.read_ahead_head, c.read_ahead_minimum, scratch, total)
        _segment_end_at(seg_start, seg_end, c.read_ahead_segment, c.read_ahead_minimum, seg_size)
        seg_max_ra[c.read_ahead_segment] = c.read_ahead_minimum
        c.mechanism_free_s = max(arrival + mech_ovh, stop)
        ra_held = stop
    elif c.read_ahead_active:
        # a write stops the read-ahead, and waits for the stop on top of its overhead (as a read miss)
        c.read_ahead_active = False
        stop, c.cylinder, c.head = _stop_read_ahead(arrays, seek, write_seek, real, c.read_ahead_first,
                                                    c.read_ahead_done, pf_ready,
                                           c.read_ahead_start_s, c.read_ahead_cylinder, c.read_ahead_head, arrival,
                                           stop_in_sector)
        c.mechanism_free_s = arrival + mech_ovh + max(stop - arrival, 0.0)
    start = max(c.mechanism_free_s, arrival + mech_ovh)
    plan = (start, ovh, held, ra_held, min_move, extra)
    if fast:
        done, joined = _fast_write(drive, buf, c, first, n, arrival, plan)
        hit = HitKind.FAST_WRITE
    else:
        done = _write_through(drive, buf, c, first, n, arrival, plan)
        joined = False
        hit = HitKind.MEDIA
    _keep_write(drive, buf, c, first, n, arrival, reading, joined)
    return done, hit


@njit(cache=True, _nrt=False, inline="always")
def _fast_write(drive, buf, c, first, n, arrival, plan):
    """A fast write (immediate report): done once its data are in the buffer, written in the
    background; *plan*: (the mechanism's start, the command overhead, the blocks held before
    writing, when a held read-ahead ends, the least move, extra disconnect). Returns
    (completion, whether it joined the segment of the write it appends to)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    write_done = real[REAL_WRITE_DONE_S]
    data_prep = real[REAL_DATA_PREP_S]
    reselect = real[REAL_RESELECT_S]
    bus_w = real[REAL_BUS_WRITE_BLOCK_S]
    write_disc = real[REAL_WRITE_DISCONNECT_S]
    write_water = int(real[REAL_WRITE_WATERMARK])
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    never_disc = ints[INT_NEVER_DISCONNECT]
    prebuffer = ints[INT_WRITES_QUEUE]
    hold_write = ints[INT_HOLD_BUS_WRITE] or never_disc
    write_segments = ints[INT_WRITE_SEGMENTS]
    # "Combine seq writes" (diskmodel.model.simulator.writequeue._combines)
    combine = ints[INT_COMBINE_SEQ_WRITES]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    ready = work[WORK_READY]
    not_before = work[WORK_NOT_BEFORE]
    scratch = work[WORK_SCRATCH]
    start, ovh, held, ra_held, min_move, extra = plan
    joined = False
    # the host sends the data after the command overhead. At either level a write that
    # does not append to the previous write, whose data are still being written, cannot
    # stop that write (disk_buffer_stopable_access wants BUFFER_APPEND), so it disconnects
    # and takes its data only once they are on the media, reconnecting with the reselect
    # and data preparation overheads (disk_bus_ownership_grant in src/disksim_diskctlr.c).
    # Likewise after a read-ahead short of its minimum (disk_write_arrive's disconnection:
    # write hit overhead plus write disconnect overhead).
    # Taken at once, the data follow the command overhead and the data preparation
    # (disk_write_arrive's READY_TO_TRANSFER, at either fast-write level).
    cmd_done = arrival + ovh
    data0 = cmd_done + data_prep
    # An appending write is refused too while the write it appends to still waits in the
    # queue for its own access (disk_buffer_stopable_access: ioqueue_show_next_request is
    # that earlier write, not this one).
    # With "Allow write prebuffering" it is taken at once and queued behind the writes
    # still on their way to the media, if the segment has room (_prebuffered).
    taken = False
    appended_q = False    # its data limited by the room the write it appends to leaves
    sent_q = n            # blocks sent before this write's own access (all, unless appended)
    tb_q = data0
    connected_q = True
    t_own = 0.0           # when the access of the write it appends to ends
    water_w = write_water
    if prebuffer and c.dirty_until_s > arrival and _combines(combine, first, c.previous_end):
        taken, t_end, cyl_q, head_q = _prebuffered(arrays, seek, write_seek, real, wq, first, n, data0,
                                                   bus_w, seg_size, arrival, scratch, total)
        joined = taken
    if prebuffer and write_segments > 1 and c.dirty_until_s > arrival and not taken:
        # with several write segments, into a segment of its own (_prebuffered_new)
        taken, t_end, cyl_q, head_q = _prebuffered_new(arrays, seek, write_seek, real, wq, first, n,
                                                       data0, bus_w, write_segments, arrival, scratch,
                                                       total)
    if taken:
        c.cylinder = cyl_q
        c.head = head_q
    elif c.dirty_until_s > arrival and (not _combines(combine, first, c.previous_end) or arrival < c.queued_until_s
                                  or prebuffer or (
            c.previous_write == 1 and nseg > 0
            and not _room_to_append(ready, c.previous_end - c.previous_blocks, c.previous_blocks, first, arrival,
                                    seg_size))):
        # (disk_write_arrive disconnects it after its overhead and the write disconnect
        # overhead; it reconnects once that write's access has ended, as after a read-ahead)
        data0 = max(cmd_done + write_disc, c.dirty_until_s) + reselect + data_prep
        c.queued_until_s = 0.0
    elif c.dirty_until_s > arrival:
        joined = True
        start, appended_q, water_w, tb_q, sent_q, connected_q, t_own = _join_writing(
            drive, buf, c, first, n, arrival, (start, data0, held, min_move))
    else:
        c.queued_until_s = 0.0
    if ra_held > 0.0 and not prebuffer:
        data0 = max(cmd_done + write_disc, ra_held) + reselect + data_prep
    if nseg > 0 and n > seg_size:
        # larger than its segment: sent as the segment has room (big_transfer);
        # never with queued writes (simulate_requests refuses it: DiskSim 4.0 fails there)
        t_end, c.cylinder, c.head, tb, _, _ = _write_through_segment(
            drive, (first, n, held, min_move), (start, c.cylinder, c.head),
            (data0, write_water, hold_write, write_disc, reselect + data_prep, bus_w), (not_before, ready, scratch,
                                                                                        scratch),
            (0, 0, data0, True, 0.0))
        done = tb + write_done
    elif appended_q and (sent_q < n or tb_q != data0 + n * bus_w):
        # an appended write short of room: its data as the accesses make room
        t_end, c.cylinder, c.head, tb, _, _ = _write_through_segment(
            drive, (first, n, held, min_move), (start, c.cylinder, c.head),
            (data0, water_w, hold_write, write_disc, reselect + data_prep, bus_w), (not_before, ready, scratch,
                                                                                    scratch),
            (0, sent_q, tb_q, connected_q, t_own))
        done = tb + write_done
    else:
        done = data0 + n * bus_w + write_done
        if not taken:
            for k in range(n):
                not_before[k] = data0 + (max(k, held - 1) + 1) * bus_w
            if prebuffer:
                _start_chain(wq, first, n, data0, start, c.cylinder, c.head, min_move)
            t_end, c.cylinder, c.head = access_media(arrays, seek, write_seek, real, first, n, start, c.cylinder,
                                            c.head, True, not_before, ready, 0, scratch, min_move, total)
    c.mechanism_free_s = t_end
    c.dirty_until_s = t_end
    return done, joined


@njit(cache=True, _nrt=False, inline="always")
def _join_writing(drive, buf, c, first, n, arrival, plan):
    """A fast write appending to the write still on its way to the media, taken at once: it waits
    in DiskSim's queue for its own access. *plan*: (the mechanism's start, when its data
    start, the blocks held before writing, the least move). Returns (start, whether its data
    are limited by the room left, the watermark, when its sent blocks are sent, how many,
    whether still connected, when the access it appends to ends)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    data_prep = real[REAL_DATA_PREP_S]
    reselect = real[REAL_RESELECT_S]
    bus_w = real[REAL_BUS_WRITE_BLOCK_S]
    write_disc = real[REAL_WRITE_DISCONNECT_S]
    write_water = int(real[REAL_WRITE_WATERMARK])
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    never_disc = ints[INT_NEVER_DISCONNECT]
    by_request = ints[INT_WATERMARK_BY_REQUEST]
    hold_write = ints[INT_HOLD_BUS_WRITE] or never_disc
    ready = work[WORK_READY]
    not_before = work[WORK_NOT_BEFORE]
    scratch = work[WORK_SCRATCH]
    # the low (write) watermark of a write of m blocks ("Set watermark by reqsize")
    write_water_of = work[WORK_WRITE_WATERMARK]
    start, data0, held, min_move = plan
    appended_q = False
    sent_q = n
    tb_q = data0
    connected_q = True
    t_own = 0.0
    water_w = write_water
    # An appending write taken while the previous write is on its way to the media is
    # not added to that access: it waits in the queue, and once that access ends
    # (disk_release_hda, disk_find_new_seg_owner) a new access starts at the block
    # that has just passed under the head: a revolution (disk_buffer_seekdone's
    # latency from the integer time dm_time_dtoi, past the sector's start).
    if start <= c.dirty_until_s:
        start = c.dirty_until_s + 2.0 * _EPS_REV * real[REAL_PERIOD_S]
    # It takes as many blocks as the segment has room for, the blocks of the write
    # under way not yet written counting against it (disk_buffer_transfer_size:
    # seg->size - (outblkno - seg_owner->inblkno)), then holds the bus or disconnects
    # (big_transfer; that write's block times are still in ready).
    if c.previous_write == 1 and nseg > 0 and n <= seg_size:
        appended_q = True
        if by_request:
            water_w = max(1, int(write_water_of[n]))
        _, _, _, tb_q, sent_q, connected_q = _write_through_segment(
            drive, (first, n, held, min_move), (start, c.cylinder, c.head),
            (data0, water_w, hold_write, write_disc, reselect + data_prep, bus_w), (not_before, ready, scratch,
                                                                                    scratch),
            (c.previous_blocks, 0, data0, True, 0.0))
    else:
        for k in range(n):
            not_before[k] = data0 + (k + 1) * bus_w
    # Until then the access under way goes on writing the appended blocks that it
    # meets on its track with their data in the buffer (disk_buffer_sector_done:
    # up to min(seg->endblkno, next)), the write stays queued meanwhile.
    t_on, c_on, h_on = _written_on(drive, c.previous_end - 1, first, sent_q, c.dirty_until_s, not_before)
    t_own = t_on
    c.queued_until_s = max(start, t_on)
    if c_on != c.cylinder or h_on != c.head:
        # it went on to the next track: the queued write's own access starts there,
        # once that access ends, and its first block has passed (a revolution)
        start = max(start, t_on)
        c.cylinder = c_on
        c.head = h_on
    return start, appended_q, water_w, tb_q, sent_q, connected_q, t_own


@njit(cache=True, _nrt=False, inline="always")
def _write_through(drive, buf, c, first, n, arrival, plan):
    """A write reported once on the media (DiskSim's write that is not a fast write); *plan* as
    for :func:`_fast_write`. Returns its completion."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    write_done = real[REAL_WRITE_DONE_S]
    data_prep = real[REAL_DATA_PREP_S]
    reselect = real[REAL_RESELECT_S]
    bus_w = real[REAL_BUS_WRITE_BLOCK_S]
    write_disc = real[REAL_WRITE_DISCONNECT_S]
    reselect_other = real[REAL_OTHER_RESELECT_S]
    xd_command = real[REAL_XD_COMMAND_S]
    xd_disc1 = real[REAL_XD_DISCONNECT_S]
    xd_inter = real[REAL_XD_INTER_S]
    xd_disc2 = real[REAL_XD_SECOND_DISCONNECT_S]
    write_water = int(real[REAL_WRITE_WATERMARK])
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    never_disc = ints[INT_NEVER_DISCONNECT]
    hold_write = ints[INT_HOLD_BUS_WRITE] or never_disc
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    ready = work[WORK_READY]
    not_before = work[WORK_NOT_BEFORE]
    stats = work[WORK_STATS]
    scratch = work[WORK_SCRATCH]
    # a write's final RECONNECT up and the answer down (inputs._host_path_s)
    final_reconnect = real[REAL_FINAL_RECONNECT_S]
    start, ovh, held, ra_held, min_move, extra = plan
    # DiskSim's write that is not reported at once (disk_write_arrive, disk_reconnection_
    # or_transfer_complete, disk_bus_ownership_grant in src/disksim_diskctlr.c): the
    # mechanism starts at the command overhead; the host's data flow from the overhead
    # plus the data preparation, one bus block time each; after the data the drive
    # disconnects; once the last sector is written and the disconnection is over, it
    # reconnects (first reselect overhead) and sends the completion. A write after a write
    # that does not append to it suffers DiskSim's "extra write disconnect" when the drive
    # has one (disk_buffer_select_segment, src/disksim_diskcache.c: the write segment is
    # the most recently used one, its last access a write, the request not at its end):
    # the mechanism starts after the extra-disconnect command overhead and seek delta;
    # the drive disconnects, waits the inter-disconnect delay, reconnects (first reselect,
    # data preparation) for the data, disconnects again (second disconnect overhead),
    # and reconnects for the completion with the other reselect overhead.
    if extra:
        data0 = arrival + xd_command + xd_disc1 + xd_inter + reselect + data_prep
        disconnect = xd_disc2
        reconnect = reselect_other
    else:
        data0 = arrival + ovh + data_prep
        disconnect = write_disc
        reconnect = reselect
    if nseg > 0 and n > seg_size:
        # larger than its segment: sent as the segment has room (big_transfer)
        t_end, c.cylinder, c.head, tb, _, _ = _write_through_segment(
            drive, (first, n, held, min_move), (start, c.cylinder, c.head),
            (data0, write_water, hold_write, disconnect, reconnect + data_prep, bus_w), (not_before, ready, stats,
                                                                                         scratch),
            (0, 0, data0, True, 0.0))
    else:
        for k in range(n):
            not_before[k] = data0 + (max(k, held - 1) + 1) * bus_w
        t_end, c.cylinder, c.head = access_media(arrays, seek, write_seek, real, first, n, start, c.cylinder, c.head,
                                        True, not_before, ready, 0, stats, min_move, total)
        tb = data0 + n * bus_w
    c.mechanism_free_s = t_end
    done = max(t_end, tb + disconnect) + reconnect + final_reconnect + write_done
    return done


@njit(cache=True, _nrt=False, inline="always")
def _keep_write(drive, buf, c, first, n, arrival, reading, joined):
    """A write's blocks into its segment (the dedicated write segment, the segment of the write
    it joined, or a clean or empty one), emptying the clean segments holding some of them."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    hits_on_writes = ints[INT_HITS_ON_WRITES]
    separate_w = ints[INT_SEPARATE_WRITE_SEGMENT]
    prebuffer = ints[INT_WRITES_QUEUE]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    seg_write = segments[SEG_WRITE]
    # each segment's read-ahead limit (readahead._kept_read_ahead_limit)
    seg_max_ra = segments[SEG_MAX_READ_AHEAD]
    wseg = nseg - 1 if separate_w else -1
    last = first + n
    # (a write appending with room, taken at once: past the segment's size the segment wraps,
    # disk_buffer_segment_wrap; one not taken at once is given a segment when the write it
    # appends to is on the media, a clean segment then: segments)
    append = _appended_segment(seg_start, seg_end, seg_write, nseg, first) if joined else -1
    s = wseg
    if s < 0:
        # a clean segment holding some of the write's blocks first, else an empty or clean one
        # (_write_segment). Above all, a write appending to a fast write still being written
        # joins that write's segment (BUFFER_APPEND, value 6 or 7, "Combine seq writes" 1 on
        # every bundled drive); it does not take a segment of its own. Without combining (0) it
        # waited for that write's access (never joined), takes a segment as any write and
        # starts it afresh (BUFFER_NOMATCH: disk_buffer_attempt_seg_ownership; _combines)
        s = _write_segment(seg_start, seg_end, seg_write, seg_used, nseg, first, last, reading,
                           hits_on_writes, prebuffer, append)
    if s >= 0:
        if s == append:
            _segment_end_at(seg_start, seg_end, s, last, seg_size)
        else:
            seg_start[s] = first
            seg_max_ra[s] = 0
            # (a write larger than the segment leaves its last blocks: disk_buffer_segment_wrap)
            _segment_end_at(seg_start, seg_end, s, last, seg_size)
        seg_write[s] = 1
        seg_used[s] = arrival
        # the write empties the other clean segments holding some of its blocks, not one
        # still being read ahead (disk_buffer_set_segment: "clear out clean, non-active,
        # overlapping segments if write"; that one is BUFFER_READING when the write arrives)
        _invalidate(seg_start, seg_end, nseg, first, last, s, reading)
