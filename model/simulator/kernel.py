"""The simulation kernel: the request loop of :func:`diskmodel.model.simulator.simulate.simulate_requests`
and :class:`~diskmodel.model.simulator.session.DriveSession` (numba), after DiskSim 4.0's disk model
(``src/disksim_diskctlr.c``, ``disksim_diskcache.c``; the rules it follows are listed in
:mod:`diskmodel.model.simulator.simulate`). Its arrays' slots are named in
:mod:`diskmodel.model.simulator.state`.

Pure model code: arrays in, arrays out; no I/O and no clocks.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .access_block import kept_track_front
from .big_transfer import _read_through_segment, _write_through_segment
from .immediate import _front_after_swap, _immediate_front
from .inputs import OUT_ARRIVAL, OUT_COMPLETION, OUT_HIT, OUT_LATENCY, OUT_MEDIA, OUT_SEEK, OUT_SERVICE
from .mapping import lbn_to_pbn_one, track_first_lbn
from .media_access import _EPS_REV, access_media, move_time_s, wait_for_angle
from .nocache import _forget_buffered
from .readahead import (_extend_read_ahead, _hit_once_minimum_read, _hold_read_ahead, _idle_hit_read_ahead,
                        _invalidate, _kept_read_ahead_limit, _minimum_covers, _minimum_end,
                        _partial_hit_waits, _read_ahead_limit, _read_to_minimum, _segment_end_at,
                        _send_read_blocks_at, _sent_back_to_back, _stop_read_ahead)
from .segments import (_appended_segment, _extra_disconnect_segment, _replacement, _room_to_append,
                       _write_segment)
from .state import (HitKind, INT_ALMOST_READ_HITS, INT_CACHING, INT_COMBINE_SEQ_WRITES, INT_EXTRA_WRITE_DISCONNECT,
                    INT_FAST_WRITE_LEVEL, INT_HITS_ON_WRITES, INT_HOLD_BUS_READ, INT_HOLD_BUS_WRITE,
                    INT_IMMEDIATE_PARTIAL_HIT, INT_MAX_READ_AHEAD, INT_MIN_READ_AHEAD, INT_NEVER_DISCONNECT,
                    INT_PRESEEKING_LEVEL, INT_READ_AHEAD_ON_IDLE_HIT, INT_READ_AHEAD_OVER_REQUEST,
                    INT_READ_AHEAD_SCHEME, INT_READ_ANY_FREE, INT_SCHEDULING_POLICY, INT_SEGMENTS, INT_SEGMENT_BLOCKS,
                    INT_SEPARATE_WRITE_SEGMENT, INT_SNEAKY_FULL_HITS, INT_SNEAKY_PARTIAL_HITS, INT_STOP_IN_SECTOR,
                    INT_WATERMARK_BY_REQUEST, INT_WRITES_QUEUE, INT_WRITE_HIT_STOPS_READ_AHEAD, INT_WRITE_SEGMENTS,
                    LAYOUT_FIRST_LBN, LAYOUT_SECTORS_PER_TRACK, OVH_HIT, OVH_MISS, OVH_READ, OVH_WRITE,
                    REAL_ANSWER_DOWN_S, REAL_BUS_READ_BLOCK_S, REAL_BUS_WRITE_BLOCK_S, REAL_DATA_PREP_S,
                    REAL_FINAL_RECONNECT_S, REAL_HEAD_SWITCH_S, REAL_HOST_DOWN_S, REAL_IMMEDIATE_MODE,
                    REAL_IMMEDIATE_READ, REAL_MIN_WRITE_SEEK_S, REAL_OTHER_RESELECT_S, REAL_PERIOD_S,
                    REAL_READ_DISCONNECTS, REAL_READ_DISCONNECT_S, REAL_READ_DONE_S, REAL_RESELECT_S,
                    REAL_SEGMENT_WATERMARK, REAL_WRITE_DISCONNECT_S, REAL_WRITE_DONE_S, REAL_WRITE_SETTLE_S,
                    REAL_WRITE_WATERMARK, REAL_XD_COMMAND_S, REAL_XD_DISCONNECT_S, REAL_XD_INTER_S,
                    REAL_XD_SECOND_DISCONNECT_S, REAL_XD_SEEK_DELTA_S, SEG_END, SEG_MAX_READ_AHEAD, SEG_START,
                    SEG_WRITE, STAT_LATENCY, STAT_MEDIA, STAT_SEEK, WORK_CHUNK_END, WORK_NOT_BEFORE, WORK_READY,
                    WORK_READ_WATERMARK, WORK_SCRATCH, WORK_SENT_AT, WORK_STATS, WORK_WRITE_WATERMARK)
from .writequeue import (_combines, _prebuffered, _prebuffered_new, _read_ahead_stop_after_read, _read_slot,
                         _resume_after_read, _start_chain)


@njit(cache=True, _nrt=False)
def _written_on(arrays, seek, write_seek, real, last_written, first, count, t0, data_at):
    """When an access that has written block *last_written* at *t0* has gone on to write the
    blocks *first* .. of a write appended to it, as DiskSim's disk_buffer_sector_done does
    (src/disksim_diskctlr.c: a write access writes up to min(seg->endblkno, next), the end of the
    buffered data or of the track): the next sectors, each while its data (the k-th at
    ``data_at[k]``) are in the buffer when the head reaches it. At the end of a track
    with the next block's data buffered the access is not done (disk_buffer_request_complete: a
    background write is done when it has written all its segment's data, seg->endblkno) and
    moves on to the next track (disk_initiate_seek). Returns (time, cylinder, head) at its end."""
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


# _nrt=False (here and in the helpers it calls): numba's reference counting of the arrays that
# every helper call and every inlined lbn_to_pbn_one unpack from the layout's tuple took ~60 % of
# the run time (atomic increments and decrements); nothing here allocates, the caller owns the arrays.
@njit(cache=True, _nrt=False)
def _simulate(arrays, seek, write_seek, overhead, real, ints, is_write, lbn, blocks, times, absolute, out, carried,
              segments, seg_used, work, pf_ready, wq):
    """The request loop; *carried* (one record of simulate_inputs.CARRIED) holds the state carried
    from request to request on entry and on return, so a call continues where the last one ended;
    the segments (first block, end, written; last use), ready, not_before, stats, scratch and the
    read-ahead's block times are working arrays of the caller (zeroed before the first call, kept
    between calls); *wq* the prebuffered writes' queue (diskmodel.model.simulator.writequeue).
    *times*: with *absolute*, each request's arrival [s] (served once the last one has completed);
    else the gap after each request's completion before the next one arrives (the first arriving at
    the carried clock). *out*: rows OUT_SERVICE .. OUT_COMPLETION per request."""
    period = real[REAL_PERIOD_S]
    read_done = real[REAL_READ_DONE_S]
    write_done = real[REAL_WRITE_DONE_S]
    data_prep = real[REAL_DATA_PREP_S]
    reselect = real[REAL_RESELECT_S]
    bus_r = real[REAL_BUS_READ_BLOCK_S]
    bus_w = real[REAL_BUS_WRITE_BLOCK_S]
    min_write_seek = real[REAL_MIN_WRITE_SEEK_S]
    write_disc = real[REAL_WRITE_DISCONNECT_S]
    reselect_other = real[REAL_OTHER_RESELECT_S]
    xd_command = real[REAL_XD_COMMAND_S]
    xd_disc1 = real[REAL_XD_DISCONNECT_S]
    xd_inter = real[REAL_XD_INTER_S]
    xd_disc2 = real[REAL_XD_SECOND_DISCONNECT_S]
    xd_seek_delta = real[REAL_XD_SEEK_DELTA_S]
    read_disc = real[REAL_READ_DISCONNECT_S:REAL_READ_DISCONNECT_S + REAL_READ_DISCONNECTS]
    seg_water = int(real[REAL_SEGMENT_WATERMARK])
    write_water = int(real[REAL_WRITE_WATERMARK])
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    max_ra = ints[INT_MAX_READ_AHEAD]
    ra_over = ints[INT_READ_AHEAD_OVER_REQUEST]
    ra_idle_hit = ints[INT_READ_AHEAD_ON_IDLE_HIT]
    fast_level = ints[INT_FAST_WRITE_LEVEL]
    hits_on_writes = ints[INT_HITS_ON_WRITES]
    separate_w = ints[INT_SEPARATE_WRITE_SEGMENT]
    scheme = ints[INT_READ_AHEAD_SCHEME]
    any_free = ints[INT_READ_ANY_FREE]
    stop_in_sector = ints[INT_STOP_IN_SECTOR]
    extra_disc = ints[INT_EXTRA_WRITE_DISCONNECT]
    never_disc = ints[INT_NEVER_DISCONNECT]
    min_ra = ints[INT_MIN_READ_AHEAD]
    preseek = ints[INT_PRESEEKING_LEVEL]
    by_request = ints[INT_WATERMARK_BY_REQUEST]
    immed_partial = ints[INT_IMMEDIATE_PARTIAL_HIT]
    write_hit_stop = ints[INT_WRITE_HIT_STOPS_READ_AHEAD]
    sneaky_full = ints[INT_SNEAKY_FULL_HITS]
    sneaky_partial = ints[INT_SNEAKY_PARTIAL_HITS]
    prebuffer = ints[INT_WRITES_QUEUE]
    # a drive that never disconnects holds the bus for a write too (disk_buffer_transfer_size)
    hold_write = ints[INT_HOLD_BUS_WRITE] or never_disc
    write_segments = ints[INT_WRITE_SEGMENTS]
    combine = ints[INT_COMBINE_SEQ_WRITES]        # "Combine seq writes" (diskmodel.model.simulator.writequeue._combines)
    sched_sptf = ints[INT_SCHEDULING_POLICY] != 1 and prebuffer   # a scheduling policy reordering the queue (disksim_writequeue)
    read_first = False
    # a drive that never disconnects holds the bus (disk_buffer_transfer_size)
    hold_read = ints[INT_HOLD_BUS_READ] or never_disc
    almost = ints[INT_ALMOST_READ_HITS]
    caching = ints[INT_CACHING]        # "Enable caching in buffer" (diskmodel.model.simulator.nocache)
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    seg_write = segments[SEG_WRITE]
    seg_max_ra = segments[SEG_MAX_READ_AHEAD]  # each segment's read-ahead limit (disksim_readahead._kept_read_ahead_limit)
    wseg = nseg - 1 if separate_w else -1
    ready = work[WORK_READY]
    not_before = work[WORK_NOT_BEFORE]
    stats = work[WORK_STATS]
    scratch = work[WORK_SCRATCH]
    water_of = work[WORK_READ_WATERMARK]        # the watermark of a request of m blocks ("Set watermark by reqsize")
    sent_at = work[WORK_SENT_AT]         # when the host has block j of the read being served (_hold_read_ahead)
    write_water_of = work[WORK_WRITE_WATERMARK]  # the low (write) watermark of a write of m blocks ("Set watermark by reqsize")
    chunk_end = work[WORK_CHUNK_END]       # when the transfer carrying block j of the read being served ends (_send_read_blocks_at)
    # the read-ahead: blocks pf_base .. pf_base + pf_count - 1, done at pf_ready[j]
    pf_size = pf_ready.size

    # the state carried from the last request (simulate_inputs.CARRIED), in locals while the loop runs
    c = carried[0]
    cyl = c.cylinder
    head = c.head
    mech_free = c.mechanism_free_s  # when the mechanism finishes its current (background) work
    pf_active = c.read_ahead_active
    pf_seg = c.read_ahead_segment
    pf_base = c.read_ahead_first
    pf_count = c.read_ahead_count
    pf_done = c.read_ahead_done     # blocks of the read-ahead already in the segment
    pf_cyl = c.read_ahead_cylinder  # head position when the read-ahead started
    pf_head = c.read_ahead_head
    pf_start = c.read_ahead_start_s  # and when
    pf_min = c.read_ahead_minimum   # the read-ahead cannot be stopped before this block (DiskSim's minreadaheadblkno)
    prev_write = c.previous_write
    prev_end = c.previous_end
    prev_blocks = c.previous_blocks
    dirty_end = c.dirty_until_s     # when the last fast write's data are on the media
    queued_until = c.queued_until_s  # an appended fast write waits in DiskSim's queue until its own access starts
    emptied = c.emptied_segment     # the segment a preseeking read leaves empty (applied at the next arrival)
    t = c.clock_s
    # a request's way down to the disk (simulate_inputs._host_path_s) and the disk's "Per-request
    # overhead time" before its controller takes it (disk_event_arrive: DEVICE_OVERHEAD_COMPLETE, then
    # disk_request_arrive): the buffer's state, hits and holds are those of that moment
    host_down = real[REAL_HOST_DOWN_S]
    final_reconnect = real[REAL_FINAL_RECONNECT_S]  # a write's final RECONNECT up and the answer down (simulate_inputs._host_path_s)
    # the disk holds its bus until the driver's answer to the completion comes down through the
    # controller (real[REAL_ANSWER_DOWN_S] after it); a request arriving before waits for the bus (simulate_inputs._host_path_s)
    answer_down = real[REAL_ANSWER_DOWN_S]
    bus_free = c.bus_free_s

    for i in range(lbn.size):
        if absolute:
            # queue depth 1: a request arriving before the last one completed waits for it
            if times[i] > t:
                t = times[i]
        elif i > 0:
            t = t + times[i - 1]
        # at the disk: after the controller and the disk's bus (simulate_inputs._host_path_s)
        arrival = max(t, bus_free) + host_down
        first = lbn[i]
        n = blocks[i]
        last = first + n
        w = 1 if is_write[i] else 0
        stats[STAT_SEEK] = 0.0
        stats[STAT_LATENCY] = 0.0
        stats[STAT_MEDIA] = 0.0
        hit = HitKind.MEDIA

        # --- background read-ahead: what it has read by the arrival
        if pf_active:
            # blocks done by now: pf_ready rises along the read-ahead, so a binary search
            k = pf_done
            hi = pf_count
            while k < hi:
                mid = (k + hi) // 2
                if pf_ready[mid] <= arrival:
                    k = mid + 1
                else:
                    hi = mid
            if k > pf_done:
                pf_done = k
                _segment_end_at(seg_start, seg_end, pf_seg, pf_base + k, seg_size)
            if real[REAL_IMMEDIATE_READ] != 0.0:
                # blocks read ahead of the front ("Immediate buffer read") push the circular
                # segment's first blocks out (disk_buffer_segment_wrap to immedend)
                front = _immediate_front(arrays, real, pf_base, pf_count, pf_done, pf_ready, arrival, total)
                if front - seg_start[pf_seg] > seg_size:
                    seg_start[pf_seg] = front - seg_size
            if pf_done >= pf_count:
                pf_active = False
                mech_free = pf_ready[pf_count - 1]
                cyl, head, _, _, _ = lbn_to_pbn_one(pf_base + pf_count - 1, arrays)
        if emptied >= 0:
            # DiskSim's disk_release_hda with preseeking sets the read's segment's state to the
            # truth value of its caching test, 1, which is BUFFER_EMPTY: its blocks are no longer
            # hits, and disk_buffer_select_read_segment takes an empty segment before a clean one
            # (the least recently used first: the segment list is in LRU order)
            seg_end[emptied] = seg_start[emptied]
            emptied = -1
        if not caching:
            _forget_buffered(seg_start, seg_end, nseg)

        if w == 0:
            own = -1          # the segment of this read (it holds the mechanism: "Preseeking level")
            # the watermark: blocks buffered before the bus (re)connects, a fraction of the whole
            # request ("Set watermark by reqsize" 1) or of the segment, rounded up (0), at least one
            # (disk_buffer_set_segment; DiskSim reconnects on a buffered block at the least)
            if by_request:
                water = int(water_of[min(seg_size, n) if nseg > 0 else n])
            else:
                water = seg_water
            if water < 1:
                water = 1
            s = -1
            # of the segments holding every block, the one being read ahead, else the least recently
            # used (disk_buffer_select_read_segment: a reading segment ranks above a clean one, and
            # of equals the first in its list, which is in LRU order)
            # (never the dedicated write segment: disk_buffer_check_read_segments and
            # disk_buffer_select_read_segment only look there for collisions with dirty data)
            for j in range(nseg):
                if seg_end[j] > seg_start[j] and seg_start[j] <= first and last <= seg_end[j]:
                    if j != wseg and (seg_write[j] == 0 or hits_on_writes):
                        if pf_active and j == pf_seg:
                            s = j
                            break
                        if s < 0 or seg_used[j] < seg_used[s]:
                            s = j
            if s >= 0:
                # full hit
                hit = HitKind.CACHE_HIT
                tb = arrival + overhead[OVH_READ, OVH_HIT, prev_write] + data_prep + n * bus_r
                if dirty_end > arrival and not sneaky_full:
                    # the mechanism is still writing a fast write, an access a read cannot stop
                    # (disk_buffer_stopable_access): disk_read_arrive disconnects the read as a
                    # miss (read miss overhead and read disconnect), disk_activate_read drops its
                    # segment while the hda is taken, and once the write's access ends
                    # disk_get_effectivehda selects the segment again, a hit now: the read
                    # reconnects (reselect) and sends its blocks (src/disksim_diskctlr.c).
                    # "Allow sneaky full read hits" serves it at once instead (disk_read_arrive).
                    tb = max(arrival + overhead[OVH_READ, OVH_MISS, prev_write] + read_disc[prev_write], dirty_end) \
                        + reselect + data_prep + n * bus_r
                done = tb + read_done
                seg_used[s] = arrival
                own = s
                _sent_back_to_back(sent_at, n, arrival + overhead[OVH_READ, OVH_HIT, prev_write] + data_prep, bus_r, chunk_end)
                if pf_active and s != pf_seg and pf_base + pf_done < pf_min and not sneaky_full:
                    # a hit in another segment cannot stop a read-ahead short of its minimum
                    # (disk_buffer_stopable_access): disk_read_arrive disconnects it as a miss, the
                    # read-ahead reads on to its minimum and ends there, and the hit reconnects then
                    # (disk_get_effectivehda, disk_check_hda_pending): disksim_readahead._hit_once_minimum_read
                    pf_active = False
                    mech_free, cyl, head, pf_base, pf_count, tb = _hit_once_minimum_read(
                        arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                        pf_head, pf_min, pf_seg, seg_start, seg_end, seg_max_ra, seg_size, arrival, n,
                        overhead[OVH_READ, OVH_MISS, prev_write], read_disc[prev_write], reselect + data_prep, bus_r, sent_at,
                        scratch, total, chunk_end)
                    done = tb + read_done
                if pf_active and s != pf_seg and pf_base + pf_done >= pf_min:
                    # a hit in another segment stops the read-ahead (disk_activate_read:
                    # disk_buffer_stop_access when the hit's segment is not the hda's)
                    pf_active = False
                    mech_free, cyl, head = _stop_read_ahead(arrays, seek, write_seek, real, pf_base, pf_done,
                                                            pf_ready, pf_start, pf_cyl, pf_head, arrival,
                                                            stop_in_sector)
                if pf_active and s == pf_seg:
                    if real[REAL_IMMEDIATE_READ] != 0.0:
                        # taken over, the held read-ahead reads the run's sector under the head, and
                        # no further run's sector this read's hold forbids (disksim_immediate._front_after_swap)
                        front = _front_after_swap(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready,
                                                  arrival, first, seg_size, done, scratch, total)
                        if front - seg_start[s] > seg_size:
                            seg_start[s] = front - seg_size
                    limit = _read_ahead_limit(arrays, scheme, first, last, seg_start[s], max_ra, seg_size, ra_over,
                                              total, min_ra)
                    limit = _kept_read_ahead_limit(seg_max_ra, s, limit, False)
                    pf_base, pf_count, pf_done, pf_start, pf_cyl, pf_head = _extend_read_ahead(
                        arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                        pf_head, limit, scratch, total)
                    pf_min = max(pf_min, _minimum_end(arrays, scheme, last, min_ra, total))
                    _hold_read_ahead(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, first, n,
                                     seg_size, sent_at, done, scratch, total, arrival, chunk_end)
                elif ra_idle_hit and not pf_active:
                    # the mechanism starts after the read MISS overhead (disk_check_hda's delay;
                    # DiskSim's seek of such a read-ahead ends at the arrival plus it)
                    pf_active, pf_base, pf_count, pf_done, pf_min, pf_start, pf_cyl, pf_head = _idle_hit_read_ahead(
                        arrays, seek, write_seek, real, scheme, first, last, n, s, seg_start, seg_end, seg_max_ra,
                        max_ra, seg_size, ra_over, total, min_ra, max(mech_free, arrival + overhead[OVH_READ, OVH_MISS, prev_write]),
                        cyl, head, not_before, pf_ready, scratch, sent_at, done, arrival, pf_base, pf_count, pf_done,
                        pf_min, pf_start, pf_cyl, pf_head, chunk_end)
                    if pf_active:
                        pf_seg = s
            elif pf_active and seg_start[pf_seg] <= first and (first < pf_base + pf_done
                                                                  or (almost and first == pf_base + pf_done)):
                # the read-ahead has fetched the first block and is fetching the rest: wait for them
                # (DiskSim's partial hit on a segment being read, disk_buffer_select_read_segment, which
                # carries the read-ahead on past the request's end: _extend_read_ahead).
                # A request starting at the very block being read ahead is such a hit only with
                # DiskSim's "Allow almost read hits" (disk_buffer_check_segments), else a miss.
                hit = HitKind.READ_AHEAD_HIT
                own = pf_seg
                have = pf_base + pf_done - first        # of its blocks buffered at the arrival
                limit = _read_ahead_limit(arrays, scheme, first, last, seg_start[pf_seg], max_ra, seg_size,
                                          ra_over, total, min_ra)
                limit = _kept_read_ahead_limit(seg_max_ra, pf_seg, limit, False)
                pf_base, pf_count, pf_done, pf_start, pf_cyl, pf_head = _extend_read_ahead(
                    arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                    pf_head, max(limit, last), scratch, total, last)
                pf_min = max(pf_min, _minimum_end(arrays, scheme, last, min_ra, total))
                w0 = water if water < n else n
                if immed_partial or have >= w0:
                    # connected from the hit overhead ("Immed transfer partial hit" 1, or the
                    # watermark's blocks are there)
                    tb = arrival + overhead[OVH_READ, OVH_HIT, prev_write] + data_prep
                else:
                    # "Immed transfer partial hit" 0 short of the watermark: it disconnects as a miss
                    # (disk_read_arrive) and reconnects once the watermark's blocks are buffered
                    tb = max(arrival + overhead[OVH_READ, OVH_MISS, prev_write] + read_disc[prev_write],
                             pf_ready[first - pf_base + w0 - 1]) + reselect + data_prep
                tb = _send_read_blocks_at(pf_ready, first - pf_base, n, tb, water, hold_read, read_disc[prev_write],
                                          reselect + data_prep, bus_r, sent_at, 0, chunk_end)
                done = tb + read_done
                _hold_read_ahead(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, first, n,
                                 seg_size, sent_at, done, scratch, total, arrival, chunk_end)
                pf_done = last - pf_base
                _segment_end_at(seg_start, seg_end, pf_seg, last, seg_size)
                seg_used[pf_seg] = arrival
                if pf_done >= pf_count:
                    pf_active = False
                    mech_free = pf_ready[pf_count - 1]
                    cyl, head, _, _, _ = lbn_to_pbn_one(pf_base + pf_count - 1, arrays)
            elif _minimum_covers(pf_active, pf_base, pf_done, pf_min, seg_start, pf_seg, seg_size, first,
                                   last):
                # a miss at its arrival whose blocks the read-ahead, short of its minimum, reads
                # before it can stop: it waits, disconnected, and is a hit when the read-ahead ends
                # (disksim_readahead._minimum_covers)
                hit = HitKind.READ_AHEAD_HIT
                pf_active = False
                # its kept limit falls to the minimum as for a miss; the hit raises it again
                # (_idle_hit_read_ahead)
                mech_free, cyl, head, pf_base, pf_count, tb = _hit_once_minimum_read(
                    arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                    pf_head, pf_min, pf_seg, seg_start, seg_end, seg_max_ra, seg_size, arrival, n,
                    overhead[OVH_READ, OVH_MISS, prev_write], read_disc[prev_write], reselect + data_prep, bus_r, sent_at,
                    scratch, total, chunk_end)
                s = pf_seg
                own = s
                seg_used[s] = arrival
                done = tb + read_done
                if ra_idle_hit:
                    # disk_check_hda_pending reads ahead from the segment's end as for a hit
                    pf_active, pf_base, pf_count, pf_done, pf_min, pf_start, pf_cyl, pf_head = _idle_hit_read_ahead(
                        arrays, seek, write_seek, real, scheme, first, last, n, s, seg_start, seg_end, seg_max_ra,
                        max_ra, seg_size, ra_over, total, min_ra, max(mech_free, arrival + overhead[OVH_READ, OVH_MISS, prev_write]),
                        cyl, head, not_before, pf_ready, scratch, sent_at, done, arrival, pf_base, pf_count, pf_done,
                        pf_min, pf_start, pf_cyl, pf_head, chunk_end)
            else:
                # miss: stop the read-ahead, move, read
                ovh = overhead[OVH_READ, OVH_MISS, prev_write]
                # the read-ahead's segment ranks last for the miss when the read-ahead stops at the
                # arrival; short of its minimum the segment is chosen once it has stopped, clean
                # (disksim_segments)
                reading = pf_seg if pf_active and pf_base + pf_done >= pf_min else -1
                minimum_end = 0.0  # when a read-ahead short of its minimum ends (_partial_hit_waits)
                if pf_active and pf_base + pf_done < pf_min:
                    # short of its minimum the read-ahead cannot be stopped: it reads on to the minimum
                    # and ends there; the seek waits for it and for the overhead (disk_check_hda)
                    pf_active = False
                    stop, cyl, head, pf_base, pf_count = _read_to_minimum(
                        arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                        pf_head, pf_min, scratch, total)
                    _segment_end_at(seg_start, seg_end, pf_seg, pf_min, seg_size)
                    # (its kept limit falls to the minimum: disk_buffer_stopable_access)
                    seg_max_ra[pf_seg] = pf_min
                    start = max(arrival + ovh, stop)
                    minimum_end = stop
                elif pf_active:
                    pf_active = False
                    stop, cyl, head = _stop_read_ahead(arrays, seek, write_seek, real, pf_base, pf_done, pf_ready,
                                                       pf_start, pf_cyl, pf_head, arrival, stop_in_sector)
                    # DiskSim's disk_check_hda delays the seek by the command overhead AND by the time
                    # to the read-ahead's stop, both counted from the arrival (the two add up)
                    start = arrival + ovh + max(stop - arrival, 0.0)
                else:
                    start = max(arrival + ovh, mech_free)
                    if sched_sptf and dirty_end > arrival:
                        # policy 21: the read competes with the queued writes (disksim_writequeue._read_slot)
                        read_first, t_q, cyl_q, head_q = _read_slot(arrays, seek, write_seek, real, wq, bus_w,
                                                                     arrival, first, n, scratch, total)
                        if read_first:
                            start = max(arrival + ovh, t_q)
                            cyl = cyl_q
                            head = head_q
                # A partial hit (DiskSim's BUFFER_PARTIAL, disk_buffer_select_read_segment in
                # src/disksim_diskcache.c): the first blocks are in a segment (not the dedicated write
                # segment; written data only where reads may hit on them). They go to the host at once,
                # after the read hit overhead; the mechanism reads the rest into that segment.
                s = -1
                buffered = 0
                # (of several, the least recently used: disk_buffer_select_read_segment's first of
                # equal value in its LRU list)
                for j in range(nseg):
                    if j != wseg and seg_end[j] > seg_start[j] and seg_start[j] <= first < seg_end[j] \
                            and (seg_write[j] == 0 or hits_on_writes):
                        if s < 0 or seg_used[j] < seg_used[s]:
                            s = j
                            buffered = seg_end[j] - first
                kept = seg_start[s] if s >= 0 else first
                t_end, cyl, head = access_media(arrays, seek, write_seek, real, first + buffered, n - buffered,
                                                start, cyl, head, False, not_before, ready, 0, stats, 0.0, total)
                busy = _partial_hit_waits(dirty_end, minimum_end, sneaky_partial, s == pf_seg)
                if buffered > 0 and busy > arrival and buffered >= min(water, n):
                    # arriving while a fast write is being written, it disconnects as a miss and
                    # becomes a partial hit when the write's access ends (as a full hit above);
                    # likewise while a read-ahead goes on to its minimum
                    # (disksim_readahead._partial_hit_waits). Reconnected by disk_check_bus, it
                    # needs the watermark's blocks whatever "Immed transfer partial hit" says
                    # (disk_request_needs_bus with check_watermark): short of them it waits, below
                    tb = max(arrival + ovh + read_disc[prev_write], busy) + reselect + data_prep \
                        + buffered * bus_r
                elif buffered > 0 and busy <= arrival and (immed_partial or buffered >= min(water, n)):
                    # the partial hit is connected from its hit overhead and sends the buffered part
                    tb = arrival + overhead[OVH_READ, OVH_HIT, prev_write] + data_prep + buffered * bus_r
                elif buffered > 0:
                    # "Immed transfer partial hit" 0, or waiting for the mechanism as above, fewer
                    # blocks buffered than the watermark: it disconnects as a miss and reconnects once
                    # the watermark's blocks are there
                    tb = max(arrival + ovh + read_disc[prev_write], ready[min(water, n) - buffered - 1]) \
                        + reselect + data_prep + buffered * bus_r
                elif never_disc:
                    # "Never disconnect": the miss keeps the bus from its overhead on (disk_read_arrive)
                    tb = arrival + ovh + data_prep
                else:
                    # a miss disconnects after its command overhead and the read disconnect overhead
                    # (disk_read_arrive), and reconnects once the watermark's blocks (or all of them)
                    # are buffered and the disconnection is over (disk_request_needs_bus)
                    w0 = water if water < n else n
                    tb = max(arrival + ovh + read_disc[prev_write], ready[w0 - 1]) + reselect + data_prep
                _sent_back_to_back(sent_at, buffered, tb - buffered * bus_r, bus_r, chunk_end)
                if buffered == 0 and nseg > 0 and n > seg_size:
                    # larger than its segment: a block is read only with room for it (disksim_big_transfer)
                    t_end, cyl, head = _read_through_segment(
                        arrays, seek, write_seek, real, first, n, ready, not_before, tb, water, hold_read,
                        read_disc[prev_write], reselect + data_prep, bus_r, seg_size, stats, scratch, total, cyl,
                        head, t_end)
                tb = _send_read_blocks_at(ready, 0, n - buffered, tb, water, hold_read, read_disc[prev_write],
                                          reselect + data_prep, bus_r, sent_at, buffered, chunk_end)
                done = tb + read_done
                mech_free = t_end
                if s < 0:
                    s = _replacement(seg_start, seg_end, seg_write, seg_used, nseg, wseg, reading, hits_on_writes)
            if hit == HitKind.MEDIA and s >= 0:
                # the miss's blocks, and what the read-ahead adds, go to segment s (none without a buffer)
                seg_start[s] = first
                if buffered > 0:
                    seg_start[s] = kept if last - kept <= seg_size else last - seg_size
                elif real[REAL_IMMEDIATE_MODE] != 0.0:
                    # an immediate access wrapping round keeps the track's front (disksim_access_block)
                    seg_start[s] = kept_track_front(arrays, period, int(real[REAL_IMMEDIATE_MODE]), first, start + stats[STAT_SEEK], total)
                elif any_free and stats[STAT_LATENCY] > 0.0:
                    # sectors of the track passing under the head before the first one
                    _, _, _, _, z0 = lbn_to_pbn_one(first, arrays)
                    passed = int(stats[STAT_LATENCY] / (period / arrays[LAYOUT_SECTORS_PER_TRACK][z0]))
                    lowest = first - passed
                    if lowest < 0:
                        lowest = 0
                    x = track_first_lbn(arrays, first, lowest)
                    if last - x <= seg_size:
                        seg_start[s] = x
                # (a read larger than the segment leaves its last blocks: disk_buffer_segment_wrap)
                _segment_end_at(seg_start, seg_end, s, last, seg_size)
                seg_used[s] = arrival
                seg_write[s] = 0
                own = s
                # (a read leaves other segments holding its blocks as they are: DiskSim's
                # disk_buffer_set_segment empties overlapping segments for writes only)
                # DiskSim computes it when the segment is set (disk_buffer_set_segment): a miss's
                # segment starts at its first block, a partial hit's where it started
                limit = _read_ahead_limit(arrays, scheme, first, last, kept, max_ra, seg_size, ra_over, total,
                                          min_ra)
                limit = _kept_read_ahead_limit(seg_max_ra, s, limit, buffered == 0)
                count = limit - last
                if count > pf_size:
                    count = pf_size
                if count > 0:
                    pf_cyl = cyl
                    pf_head = head
                    pf_start = t_end
                    access_media(arrays, seek, write_seek, real, last, count, t_end, cyl, head, False,
                                 not_before, pf_ready, 0, scratch, 0.0, total)
                    pf_active = True
                    pf_seg = s
                    pf_base = last
                    pf_count = count
                    pf_done = 0
                    pf_min = _minimum_end(arrays, scheme, last, min_ra, total)
                    _hold_read_ahead(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, first, n,
                                     seg_size, sent_at, done, scratch, total, arrival, chunk_end)
            if read_first:
                # the writes it went before resume once its completion is received, its read-ahead
                # stopping there (disk_check_prefetch_swap; disksim_writequeue._resume_after_read)
                read_first = False
                t_q = max(done, mech_free)
                if pf_active:
                    while pf_done < pf_count and pf_ready[pf_done] <= done:
                        pf_done += 1
                    _segment_end_at(seg_start, seg_end, pf_seg, pf_base + pf_done, seg_size)
                    pf_active = False
                    t_q, cyl, head = _read_ahead_stop_after_read(arrays, seek, write_seek, real, pf_base, pf_count,
                                                                 pf_done, pf_ready, pf_start, pf_cyl, pf_head, done,
                                                                 stop_in_sector)
                mech_free, cyl, head = _resume_after_read(arrays, seek, write_seek, real, wq, bus_w, t_q, cyl, head,
                                                          scratch, total)
                dirty_end = mech_free
            if preseek and own >= 0:
                # "Preseeking level" 1 or 2: a read whose media access (its read-ahead included) ends
                # before the host has its completion gives up the mechanism (disk_release_hda, at
                # either level once the completion is sent), which leaves its segment empty
                # (applied at the next arrival, after the read-ahead's bookkeeping)
                if (pf_ready[pf_count - 1] if pf_active else mech_free) <= done:
                    emptied = own
        else:
            # the segment a read-ahead is still filling at the arrival (BUFFER_READING in DiskSim)
            reading = pf_seg if pf_active else -1
            fast = fast_level >= 1
            # DiskSim waives the minimum only for a write stream still being
            # written at the moment the next write arrives: never one at a time.
            min_move = min_write_seek
            ovh = overhead[OVH_WRITE, OVH_HIT if fast else OVH_MISS, prev_write]
            # (a drive that never disconnects has no extra write disconnect: disk_buffer_select_segment)
            extra = not fast and extra_disc and not never_disc and prev_write == 1 and nseg > 0 \
                and first != prev_end
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
            joined = False            # taken at once into the segment of the write it appends to
            if pf_active and write_hit_stop and pf_base + pf_done < pf_min:
                # "Write hit stop prefetch": a write overlapping the blocks the read-ahead has
                # buffered takes its minimum away (disk_buffer_stopable_access; disk_buffer_overlap)
                have = pf_base + pf_done
                seg_first = seg_start[pf_seg]
                if (seg_first <= first < have) or (seg_first < last <= have) or (first <= seg_first and last >= have):
                    pf_min = have
                    seg_max_ra[pf_seg] = have
            if pf_active and pf_base + pf_done < pf_min and not prebuffer:
                # the write's segment is chosen once the read-ahead has stopped, clean by then
                # (disk_activate_write drops the choice made at the arrival: disksim_segments)
                reading = -1
            if pf_active and pf_base + pf_done < pf_min:
                # as for a read miss: the read-ahead goes on to its minimum first
                pf_active = False
                stop, cyl, head, pf_base, pf_count = _read_to_minimum(
                    arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, pf_start, pf_cyl,
                    pf_head, pf_min, scratch, total)
                _segment_end_at(seg_start, seg_end, pf_seg, pf_min, seg_size)
                seg_max_ra[pf_seg] = pf_min
                mech_free = max(arrival + mech_ovh, stop)
                ra_held = stop
            elif pf_active:
                # a write stops the read-ahead, and waits for the stop on top of its overhead (as a read miss)
                pf_active = False
                stop, cyl, head = _stop_read_ahead(arrays, seek, write_seek, real, pf_base, pf_done, pf_ready,
                                                   pf_start, pf_cyl, pf_head, arrival, stop_in_sector)
                mech_free = arrival + mech_ovh + max(stop - arrival, 0.0)
            start = max(mech_free, arrival + mech_ovh)
            if fast:
                hit = HitKind.FAST_WRITE
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
                if prebuffer and dirty_end > arrival and _combines(combine, first, prev_end):
                    taken, t_end, cyl_q, head_q = _prebuffered(arrays, seek, write_seek, real, wq, first, n, data0,
                                                               bus_w, seg_size, arrival, scratch, total)
                    joined = taken
                if prebuffer and write_segments > 1 and dirty_end > arrival and not taken:
                    # with several write segments, into a segment of its own (_prebuffered_new)
                    taken, t_end, cyl_q, head_q = _prebuffered_new(arrays, seek, write_seek, real, wq, first, n,
                                                                   data0, bus_w, write_segments, arrival, scratch,
                                                                   total)
                if taken:
                    cyl = cyl_q
                    head = head_q
                elif dirty_end > arrival and (not _combines(combine, first, prev_end) or arrival < queued_until
                                              or prebuffer or (
                        prev_write == 1 and nseg > 0
                        and not _room_to_append(ready, prev_end - prev_blocks, prev_blocks, first, arrival,
                                                seg_size))):
                    # (disk_write_arrive disconnects it after its overhead and the write disconnect
                    # overhead; it reconnects once that write's access has ended, as after a read-ahead)
                    data0 = max(cmd_done + write_disc, dirty_end) + reselect + data_prep
                    queued_until = 0.0
                elif dirty_end > arrival:
                    joined = True
                    # An appending write taken while the previous write is on its way to the media is
                    # not added to that access: it waits in the queue, and once that access ends
                    # (disk_release_hda, disk_find_new_seg_owner) a new access starts at the block
                    # that has just passed under the head: a revolution (disk_buffer_seekdone's
                    # latency from the integer time dm_time_dtoi, past the sector's start).
                    if start <= dirty_end:
                        start = dirty_end + 2.0 * _EPS_REV * real[REAL_PERIOD_S]
                    # It takes as many blocks as the segment has room for, the blocks of the write
                    # under way not yet written counting against it (disk_buffer_transfer_size:
                    # seg->size - (outblkno - seg_owner->inblkno)), then holds the bus or disconnects
                    # (disksim_big_transfer; that write's block times are still in ready).
                    if prev_write == 1 and nseg > 0 and n <= seg_size:
                        appended_q = True
                        if by_request:
                            water_w = max(1, int(write_water_of[n]))
                        _, _, _, tb_q, sent_q, connected_q = _write_through_segment(
                            arrays, seek, write_seek, real, first, n, start, cyl, head, data0, held, seg_size,
                            water_w, hold_write, write_disc, reselect + data_prep, bus_w, not_before, ready,
                            scratch, scratch, min_move, total, prev_blocks, 0, data0, True, 0.0)
                    else:
                        for k in range(n):
                            not_before[k] = data0 + (k + 1) * bus_w
                    # Until then the access under way goes on writing the appended blocks that it
                    # meets on its track with their data in the buffer (disk_buffer_sector_done:
                    # up to min(seg->endblkno, next)), the write stays queued meanwhile.
                    t_on, c_on, h_on = _written_on(arrays, seek, write_seek, real, prev_end - 1, first, sent_q,
                                                   dirty_end, not_before)
                    t_own = t_on
                    queued_until = max(start, t_on)
                    if c_on != cyl or h_on != head:
                        # it went on to the next track: the queued write's own access starts there,
                        # once that access ends, and its first block has passed (a revolution)
                        start = max(start, t_on)
                        cyl = c_on
                        head = h_on
                else:
                    queued_until = 0.0
                if ra_held > 0.0 and not prebuffer:
                    data0 = max(cmd_done + write_disc, ra_held) + reselect + data_prep
                if nseg > 0 and n > seg_size:
                    # larger than its segment: sent as the segment has room (disksim_big_transfer);
                    # never with queued writes (simulate_requests refuses it: DiskSim 4.0 fails there)
                    t_end, cyl, head, tb, _, _ = _write_through_segment(
                        arrays, seek, write_seek, real, first, n, start, cyl, head, data0, held, seg_size,
                        write_water, hold_write, write_disc, reselect + data_prep, bus_w, not_before, ready,
                        scratch, scratch, min_move, total, 0, 0, data0, True, 0.0)
                    done = tb + write_done
                elif appended_q and (sent_q < n or tb_q != data0 + n * bus_w):
                    # an appended write short of room: its data as the accesses make room
                    t_end, cyl, head, tb, _, _ = _write_through_segment(
                        arrays, seek, write_seek, real, first, n, start, cyl, head, data0, held, seg_size,
                        water_w, hold_write, write_disc, reselect + data_prep, bus_w, not_before, ready,
                        scratch, scratch, min_move, total, 0, sent_q, tb_q, connected_q, t_own)
                    done = tb + write_done
                else:
                    done = data0 + n * bus_w + write_done
                    if not taken:
                        for k in range(n):
                            not_before[k] = data0 + (max(k, held - 1) + 1) * bus_w
                        if prebuffer:
                            _start_chain(wq, first, n, data0, start, cyl, head, min_move)
                        t_end, cyl, head = access_media(arrays, seek, write_seek, real, first, n, start, cyl,
                                                        head, True, not_before, ready, 0, scratch, min_move, total)
                mech_free = t_end
                dirty_end = t_end
            else:
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
                    # larger than its segment: sent as the segment has room (disksim_big_transfer)
                    t_end, cyl, head, tb, _, _ = _write_through_segment(
                        arrays, seek, write_seek, real, first, n, start, cyl, head, data0, held, seg_size,
                        write_water, hold_write, disconnect, reconnect + data_prep, bus_w, not_before, ready,
                        stats, scratch, min_move, total, 0, 0, data0, True, 0.0)
                else:
                    for k in range(n):
                        not_before[k] = data0 + (max(k, held - 1) + 1) * bus_w
                    t_end, cyl, head = access_media(arrays, seek, write_seek, real, first, n, start, cyl, head,
                                                    True, not_before, ready, 0, stats, min_move, total)
                    tb = data0 + n * bus_w
                mech_free = t_end
                done = max(t_end, tb + disconnect) + reconnect + final_reconnect + write_done
            # (a write appending with room, taken at once: past the segment's size the segment wraps,
            # disk_buffer_segment_wrap; one not taken at once is given a segment when the write it
            # appends to is on the media, a clean segment then: disksim_segments)
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
        out[OUT_SERVICE, i] = done - t
        out[OUT_ARRIVAL, i] = t
        out[OUT_HIT, i] = hit.value
        out[OUT_SEEK, i] = stats[STAT_SEEK]
        out[OUT_LATENCY, i] = stats[STAT_LATENCY]
        out[OUT_MEDIA, i] = stats[STAT_MEDIA]
        out[OUT_COMPLETION, i] = done
        prev_write = w
        prev_end = last
        prev_blocks = n
        t = done
        bus_free = done + answer_down
    c.clock_s = t
    c.bus_free_s = bus_free
    c.cylinder = cyl
    c.head = head
    c.mechanism_free_s = mech_free
    c.read_ahead_active = pf_active
    c.read_ahead_segment = pf_seg
    c.read_ahead_first = pf_base
    c.read_ahead_count = pf_count
    c.read_ahead_done = pf_done
    c.read_ahead_cylinder = pf_cyl
    c.read_ahead_head = pf_head
    c.read_ahead_start_s = pf_start
    c.read_ahead_minimum = pf_min
    c.previous_write = prev_write
    c.previous_end = prev_end
    c.previous_blocks = prev_blocks
    c.dirty_until_s = dirty_end
    c.queued_until_s = queued_until
    c.emptied_segment = emptied
    c.requests += lbn.size
