"""The read path of the simulation kernel (:mod:`diskmodel.model.simulator.kernel`), by case: every
block in a segment (:func:`_read_full_hit`), blocks the running read-ahead is fetching
(:func:`_read_ahead_hit`), blocks a read-ahead short of its minimum reads before it can stop
(:func:`_read_minimum_hit`), and a miss or partial hit (:func:`_read_miss`, :func:`_keep_read`),
after DiskSim 4.0's ``disk_read_arrive`` and ``disk_buffer_select_read_segment``
(``src/disksim_diskctlr.c``, ``src/disksim_diskcache.c``).

Pure model code (numba), no I/O.
"""
from __future__ import annotations

from numba import njit

from .access_block import kept_track_front
from .big_transfer import _read_through_segment
from .immediate import _front_after_swap
from .mapping import lbn_to_pbn_one, track_first_lbn
from .media_access import access_media
from .readahead import (_extend_read_ahead, _hit_once_minimum_read, _hold_read_ahead, _idle_hit_read_ahead,
                        _kept_read_ahead_limit, _minimum_covers, _minimum_end, _partial_hit_waits, _read_ahead_limit,
                        _read_to_minimum, _segment_end_at, _send_read_blocks_at, _sent_back_to_back,
                        _stop_read_ahead)
from .segments import _replacement
from .state import (HitKind, INT_ALMOST_READ_HITS, INT_HITS_ON_WRITES, INT_HOLD_BUS_READ, INT_IMMEDIATE_PARTIAL_HIT,
                    INT_MAX_READ_AHEAD, INT_MIN_READ_AHEAD, INT_NEVER_DISCONNECT, INT_PRESEEKING_LEVEL,
                    INT_READ_AHEAD_ON_IDLE_HIT, INT_READ_AHEAD_OVER_REQUEST, INT_READ_AHEAD_SCHEME,
                    INT_READ_ANY_FREE, INT_SCHEDULING_POLICY, INT_SEGMENTS, INT_SEGMENT_BLOCKS,
                    INT_SEPARATE_WRITE_SEGMENT, INT_SNEAKY_FULL_HITS, INT_SNEAKY_PARTIAL_HITS, INT_STOP_IN_SECTOR,
                    INT_WATERMARK_BY_REQUEST, INT_WRITES_QUEUE, LAYOUT_FIRST_LBN, LAYOUT_SECTORS_PER_TRACK, OVH_HIT,
                    OVH_MISS, OVH_READ, REAL_BUS_READ_BLOCK_S, REAL_BUS_WRITE_BLOCK_S, REAL_DATA_PREP_S,
                    REAL_IMMEDIATE_MODE, REAL_IMMEDIATE_READ, REAL_PERIOD_S, REAL_READ_DISCONNECTS,
                    REAL_READ_DISCONNECT_S, REAL_READ_DONE_S, REAL_RESELECT_S, REAL_SEGMENT_WATERMARK, SEG_END,
                    SEG_MAX_READ_AHEAD, SEG_START, SEG_WRITE, STAT_LATENCY, STAT_SEEK, WORK_CHUNK_END,
                    WORK_NOT_BEFORE, WORK_READY, WORK_READ_WATERMARK, WORK_SCRATCH, WORK_SENT_AT, WORK_STATS)
from .writequeue import _read_ahead_stop_after_read, _read_slot, _resume_after_read


@njit(cache=True, _nrt=False, inline="always")
def _serve_read(drive, buf, c, first, n, arrival):
    """A read of *n* blocks from *first* arriving at the disk at *arrival*, by case: every block
    in a segment, blocks being read ahead, blocks a read-ahead short of its minimum reads, or a
    miss. Returns (completion, HitKind)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    seg_water = int(real[REAL_SEGMENT_WATERMARK])
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    hits_on_writes = ints[INT_HITS_ON_WRITES]
    separate_w = ints[INT_SEPARATE_WRITE_SEGMENT]
    preseek = ints[INT_PRESEEKING_LEVEL]
    by_request = ints[INT_WATERMARK_BY_REQUEST]
    almost = ints[INT_ALMOST_READ_HITS]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    seg_write = segments[SEG_WRITE]
    wseg = nseg - 1 if separate_w else -1
    water_of = work[WORK_READ_WATERMARK]        # the watermark of a request of m blocks ("Set watermark by reqsize")
    last = first + n
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
                if c.read_ahead_active and j == c.read_ahead_segment:
                    s = j
                    break
                if s < 0 or seg_used[j] < seg_used[s]:
                    s = j
    hit = HitKind.MEDIA
    read_first = False
    if s >= 0:
        # every block in a segment
        hit = HitKind.CACHE_HIT
        own = s
        done = _read_full_hit(drive, buf, c, first, n, arrival, s)
    elif (c.read_ahead_active and seg_start[c.read_ahead_segment] <= first
          and (first < c.read_ahead_first + c.read_ahead_done
               or (almost and first == c.read_ahead_first + c.read_ahead_done))):
        hit = HitKind.READ_AHEAD_HIT
        own = c.read_ahead_segment
        done = _read_ahead_hit(drive, buf, c, first, n, arrival, water)
    elif _minimum_covers(c.read_ahead_active, c.read_ahead_first, c.read_ahead_done, c.read_ahead_minimum, seg_start,
                         c.read_ahead_segment, seg_size, first,
                           last):
        hit = HitKind.READ_AHEAD_HIT
        done, own = _read_minimum_hit(drive, buf, c, first, n, arrival)
    else:
        done, own, read_first = _read_miss(drive, buf, c, first, n, arrival, water)
    if read_first:
        _resume_queued_writes(drive, buf, c, done)
    if preseek and own >= 0:
        # "Preseeking level" 1 or 2: a read whose media access (its read-ahead included) ends
        # before the host has its completion gives up the mechanism (disk_release_hda, at
        # either level once the completion is sent), which leaves its segment empty
        # (applied at the next arrival, after the read-ahead's bookkeeping)
        if (pf_ready[c.read_ahead_count - 1] if c.read_ahead_active else c.mechanism_free_s) <= done:
            c.emptied_segment = own
    return done, hit


@njit(cache=True, _nrt=False, inline="always")
def _read_full_hit(drive, buf, c, first, n, arrival, s):
    """A read whose blocks are all in segment *s* (a full hit). Returns its completion."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    read_done = real[REAL_READ_DONE_S]
    data_prep = real[REAL_DATA_PREP_S]
    reselect = real[REAL_RESELECT_S]
    bus_r = real[REAL_BUS_READ_BLOCK_S]
    read_disc = real[REAL_READ_DISCONNECT_S:REAL_READ_DISCONNECT_S + REAL_READ_DISCONNECTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    max_ra = ints[INT_MAX_READ_AHEAD]
    ra_over = ints[INT_READ_AHEAD_OVER_REQUEST]
    ra_idle_hit = ints[INT_READ_AHEAD_ON_IDLE_HIT]
    scheme = ints[INT_READ_AHEAD_SCHEME]
    stop_in_sector = ints[INT_STOP_IN_SECTOR]
    min_ra = ints[INT_MIN_READ_AHEAD]
    sneaky_full = ints[INT_SNEAKY_FULL_HITS]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    # each segment's read-ahead limit (readahead._kept_read_ahead_limit)
    seg_max_ra = segments[SEG_MAX_READ_AHEAD]
    scratch = work[WORK_SCRATCH]
    sent_at = work[WORK_SENT_AT]         # when the host has block j of the read being served (_hold_read_ahead)
    # when the transfer carrying block j of the read being served ends (_send_read_blocks_at)
    chunk_end = work[WORK_CHUNK_END]
    last = first + n
    tb = arrival + overhead[OVH_READ, OVH_HIT, c.previous_write] + data_prep + n * bus_r
    if c.dirty_until_s > arrival and not sneaky_full:
        # the mechanism is still writing a fast write, an access a read cannot stop
        # (disk_buffer_stopable_access): disk_read_arrive disconnects the read as a
        # miss (read miss overhead and read disconnect), disk_activate_read drops its
        # segment while the hda is taken, and once the write's access ends
        # disk_get_effectivehda selects the segment again, a hit now: the read
        # reconnects (reselect) and sends its blocks (src/disksim_diskctlr.c).
        # "Allow sneaky full read hits" serves it at once instead (disk_read_arrive).
        tb = max(arrival + overhead[OVH_READ, OVH_MISS, c.previous_write] + read_disc[c.previous_write],
                 c.dirty_until_s) \
            + reselect + data_prep + n * bus_r
    done = tb + read_done
    seg_used[s] = arrival
    _sent_back_to_back(sent_at, n, arrival + overhead[OVH_READ, OVH_HIT, c.previous_write] + data_prep, bus_r,
                       chunk_end)
    if (c.read_ahead_active and s != c.read_ahead_segment
         and c.read_ahead_first + c.read_ahead_done < c.read_ahead_minimum and not sneaky_full):
        # a hit in another segment cannot stop a read-ahead short of its minimum
        # (disk_buffer_stopable_access): disk_read_arrive disconnects it as a miss, the
        # read-ahead reads on to its minimum and ends there, and the hit reconnects then
        # (disk_get_effectivehda, disk_check_hda_pending): readahead._hit_once_minimum_read
        c.read_ahead_active = False
        (c.mechanism_free_s, c.cylinder, c.head, c.read_ahead_first, c.read_ahead_count,
         tb) = _hit_once_minimum_read(drive, buf, c, n, arrival)
        done = tb + read_done
    if (c.read_ahead_active and s != c.read_ahead_segment
         and c.read_ahead_first + c.read_ahead_done >= c.read_ahead_minimum):
        # a hit in another segment stops the read-ahead (disk_activate_read:
        # disk_buffer_stop_access when the hit's segment is not the hda's)
        c.read_ahead_active = False
        c.mechanism_free_s, c.cylinder, c.head = _stop_read_ahead(arrays, seek, write_seek, real, c.read_ahead_first,
                                                                  c.read_ahead_done,
                                                pf_ready, c.read_ahead_start_s, c.read_ahead_cylinder,
                                                c.read_ahead_head, arrival,
                                                stop_in_sector)
    if c.read_ahead_active and s == c.read_ahead_segment:
        if real[REAL_IMMEDIATE_READ] != 0.0:
            # taken over, the held read-ahead reads the run's sector under the head, and
            # no further run's sector this read's hold forbids (immediate._front_after_swap)
            front = _front_after_swap(arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count,
                                      c.read_ahead_done, pf_ready,
                                      arrival, first, seg_size, done, scratch, total)
            if front - seg_start[s] > seg_size:
                seg_start[s] = front - seg_size
        limit = _read_ahead_limit(arrays, scheme, first, last, seg_start[s], max_ra, seg_size, ra_over,
                                  total, min_ra)
        limit = _kept_read_ahead_limit(seg_max_ra, s, limit, False)
        (c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, c.read_ahead_start_s, c.read_ahead_cylinder,
         c.read_ahead_head) = _extend_read_ahead(
            arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, pf_ready,
            c.read_ahead_start_s, c.read_ahead_cylinder,
            c.read_ahead_head, limit, scratch, total)
        c.read_ahead_minimum = max(c.read_ahead_minimum, _minimum_end(arrays, scheme, last, min_ra, total))
        _hold_read_ahead(arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done,
                         pf_ready, first, n,
                         seg_size, sent_at, done, scratch, total, arrival, chunk_end)
    elif ra_idle_hit and not c.read_ahead_active:
        # the mechanism starts after the read MISS overhead (disk_check_hda's delay;
        # DiskSim's seek of such a read-ahead ends at the arrival plus it)
        (c.read_ahead_active, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, c.read_ahead_minimum,
         c.read_ahead_start_s, c.read_ahead_cylinder, c.read_ahead_head) = _idle_hit_read_ahead(
            drive, buf, c, first, n, s, done, arrival)
        if c.read_ahead_active:
            c.read_ahead_segment = s
    return done


@njit(cache=True, _nrt=False, inline="always")
def _read_ahead_hit(drive, buf, c, first, n, arrival, water):
    """A read whose first block the running read-ahead has fetched and whose others it is
    fetching (DiskSim's partial hit on a segment being read). Returns its completion."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    read_done = real[REAL_READ_DONE_S]
    data_prep = real[REAL_DATA_PREP_S]
    reselect = real[REAL_RESELECT_S]
    bus_r = real[REAL_BUS_READ_BLOCK_S]
    read_disc = real[REAL_READ_DISCONNECT_S:REAL_READ_DISCONNECT_S + REAL_READ_DISCONNECTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    max_ra = ints[INT_MAX_READ_AHEAD]
    ra_over = ints[INT_READ_AHEAD_OVER_REQUEST]
    scheme = ints[INT_READ_AHEAD_SCHEME]
    never_disc = ints[INT_NEVER_DISCONNECT]
    min_ra = ints[INT_MIN_READ_AHEAD]
    immed_partial = ints[INT_IMMEDIATE_PARTIAL_HIT]
    hold_read = ints[INT_HOLD_BUS_READ] or never_disc
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    # each segment's read-ahead limit (readahead._kept_read_ahead_limit)
    seg_max_ra = segments[SEG_MAX_READ_AHEAD]
    scratch = work[WORK_SCRATCH]
    sent_at = work[WORK_SENT_AT]         # when the host has block j of the read being served (_hold_read_ahead)
    # when the transfer carrying block j of the read being served ends (_send_read_blocks_at)
    chunk_end = work[WORK_CHUNK_END]
    last = first + n
    # the read-ahead has fetched the first block and is fetching the rest: wait for them
    # (DiskSim's partial hit on a segment being read, disk_buffer_select_read_segment, which
    # carries the read-ahead on past the request's end: _extend_read_ahead).
    # A request starting at the very block being read ahead is such a hit only with
    # DiskSim's "Allow almost read hits" (disk_buffer_check_segments), else a miss.
    have = c.read_ahead_first + c.read_ahead_done - first        # of its blocks buffered at the arrival
    limit = _read_ahead_limit(arrays, scheme, first, last, seg_start[c.read_ahead_segment], max_ra, seg_size,
                              ra_over, total, min_ra)
    limit = _kept_read_ahead_limit(seg_max_ra, c.read_ahead_segment, limit, False)
    (c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, c.read_ahead_start_s, c.read_ahead_cylinder,
     c.read_ahead_head) = _extend_read_ahead(
        arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, pf_ready,
        c.read_ahead_start_s, c.read_ahead_cylinder,
        c.read_ahead_head, max(limit, last), scratch, total, last)
    c.read_ahead_minimum = max(c.read_ahead_minimum, _minimum_end(arrays, scheme, last, min_ra, total))
    w0 = water if water < n else n
    if immed_partial or have >= w0:
        # connected from the hit overhead ("Immed transfer partial hit" 1, or the
        # watermark's blocks are there)
        tb = arrival + overhead[OVH_READ, OVH_HIT, c.previous_write] + data_prep
    else:
        # "Immed transfer partial hit" 0 short of the watermark: it disconnects as a miss
        # (disk_read_arrive) and reconnects once the watermark's blocks are buffered
        tb = max(arrival + overhead[OVH_READ, OVH_MISS, c.previous_write] + read_disc[c.previous_write],
                 pf_ready[first - c.read_ahead_first + w0 - 1]) + reselect + data_prep
    tb = _send_read_blocks_at(pf_ready, first - c.read_ahead_first, n, tb, water, hold_read,
                              read_disc[c.previous_write],
                              reselect + data_prep, bus_r, sent_at, 0, chunk_end)
    done = tb + read_done
    _hold_read_ahead(arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done,
                     pf_ready, first, n,
                     seg_size, sent_at, done, scratch, total, arrival, chunk_end)
    c.read_ahead_done = last - c.read_ahead_first
    _segment_end_at(seg_start, seg_end, c.read_ahead_segment, last, seg_size)
    seg_used[c.read_ahead_segment] = arrival
    if c.read_ahead_done >= c.read_ahead_count:
        c.read_ahead_active = False
        c.mechanism_free_s = pf_ready[c.read_ahead_count - 1]
        c.cylinder, c.head, _, _, _ = lbn_to_pbn_one(c.read_ahead_first + c.read_ahead_count - 1, arrays)
    return done


@njit(cache=True, _nrt=False, inline="always")
def _read_minimum_hit(drive, buf, c, first, n, arrival):
    """A read the read-ahead, short of its minimum, reads before it can stop. Returns (completion,
    its segment)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    read_done = real[REAL_READ_DONE_S]
    ra_idle_hit = ints[INT_READ_AHEAD_ON_IDLE_HIT]
    # a miss at its arrival whose blocks the read-ahead, short of its minimum, reads
    # before it can stop: it waits, disconnected, and is a hit when the read-ahead ends
    # (readahead._minimum_covers)
    c.read_ahead_active = False
    # its kept limit falls to the minimum as for a miss; the hit raises it again
    # (_idle_hit_read_ahead)
    c.mechanism_free_s, c.cylinder, c.head, c.read_ahead_first, c.read_ahead_count, tb = _hit_once_minimum_read(drive,
            buf, c, n, arrival)
    s = c.read_ahead_segment
    own = s
    seg_used[s] = arrival
    done = tb + read_done
    if ra_idle_hit:
        # disk_check_hda_pending reads ahead from the segment's end as for a hit
        (c.read_ahead_active, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, c.read_ahead_minimum,
         c.read_ahead_start_s, c.read_ahead_cylinder, c.read_ahead_head) = _idle_hit_read_ahead(
            drive, buf, c, first, n, s, done, arrival)
    return done, own


@njit(cache=True, _nrt=False, inline="always")
def _read_miss(drive, buf, c, first, n, arrival, water):
    """A read miss, or a partial hit whose first blocks are in a segment: the read-ahead stopped,
    the mechanism moves and reads. Returns (completion, its segment or -1, whether it went
    before queued writes)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    read_done = real[REAL_READ_DONE_S]
    data_prep = real[REAL_DATA_PREP_S]
    reselect = real[REAL_RESELECT_S]
    bus_r = real[REAL_BUS_READ_BLOCK_S]
    bus_w = real[REAL_BUS_WRITE_BLOCK_S]
    read_disc = real[REAL_READ_DISCONNECT_S:REAL_READ_DISCONNECT_S + REAL_READ_DISCONNECTS]
    nseg = ints[INT_SEGMENTS]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    hits_on_writes = ints[INT_HITS_ON_WRITES]
    separate_w = ints[INT_SEPARATE_WRITE_SEGMENT]
    stop_in_sector = ints[INT_STOP_IN_SECTOR]
    never_disc = ints[INT_NEVER_DISCONNECT]
    immed_partial = ints[INT_IMMEDIATE_PARTIAL_HIT]
    sneaky_partial = ints[INT_SNEAKY_PARTIAL_HITS]
    prebuffer = ints[INT_WRITES_QUEUE]
    # a scheduling policy reordering the queue (writequeue)
    sched_sptf = ints[INT_SCHEDULING_POLICY] != 1 and prebuffer
    hold_read = ints[INT_HOLD_BUS_READ] or never_disc
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    seg_write = segments[SEG_WRITE]
    # each segment's read-ahead limit (readahead._kept_read_ahead_limit)
    seg_max_ra = segments[SEG_MAX_READ_AHEAD]
    wseg = nseg - 1 if separate_w else -1
    ready = work[WORK_READY]
    not_before = work[WORK_NOT_BEFORE]
    stats = work[WORK_STATS]
    scratch = work[WORK_SCRATCH]
    sent_at = work[WORK_SENT_AT]         # when the host has block j of the read being served (_hold_read_ahead)
    # when the transfer carrying block j of the read being served ends (_send_read_blocks_at)
    chunk_end = work[WORK_CHUNK_END]
    read_first = False
    # miss: stop the read-ahead, move, read
    ovh = overhead[OVH_READ, OVH_MISS, c.previous_write]
    # the read-ahead's segment ranks last for the miss when the read-ahead stops at the
    # arrival; short of its minimum the segment is chosen once it has stopped, clean
    # (segments)
    reading = (c.read_ahead_segment if c.read_ahead_active
                and c.read_ahead_first + c.read_ahead_done >= c.read_ahead_minimum else -1)
    minimum_end = 0.0  # when a read-ahead short of its minimum ends (_partial_hit_waits)
    if c.read_ahead_active and c.read_ahead_first + c.read_ahead_done < c.read_ahead_minimum:
        # short of its minimum the read-ahead cannot be stopped: it reads on to the minimum
        # and ends there; the seek waits for it and for the overhead (disk_check_hda)
        c.read_ahead_active = False
        stop, c.cylinder, c.head, c.read_ahead_first, c.read_ahead_count = _read_to_minimum(
            arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done, pf_ready,
            c.read_ahead_start_s, c.read_ahead_cylinder,
            c.read_ahead_head, c.read_ahead_minimum, scratch, total)
        _segment_end_at(seg_start, seg_end, c.read_ahead_segment, c.read_ahead_minimum, seg_size)
        # (its kept limit falls to the minimum: disk_buffer_stopable_access)
        seg_max_ra[c.read_ahead_segment] = c.read_ahead_minimum
        start = max(arrival + ovh, stop)
        minimum_end = stop
    elif c.read_ahead_active:
        c.read_ahead_active = False
        stop, c.cylinder, c.head = _stop_read_ahead(arrays, seek, write_seek, real, c.read_ahead_first,
                                                    c.read_ahead_done, pf_ready,
                                           c.read_ahead_start_s, c.read_ahead_cylinder, c.read_ahead_head, arrival,
                                           stop_in_sector)
        # DiskSim's disk_check_hda delays the seek by the command overhead AND by the time
        # to the read-ahead's stop, both counted from the arrival (the two add up)
        start = arrival + ovh + max(stop - arrival, 0.0)
    else:
        start = max(arrival + ovh, c.mechanism_free_s)
        if sched_sptf and c.dirty_until_s > arrival:
            # policy 21: the read competes with the queued writes (writequeue._read_slot)
            read_first, t_q, cyl_q, head_q = _read_slot(arrays, seek, write_seek, real, wq, bus_w,
                                                         arrival, first, n, scratch, total)
            if read_first:
                start = max(arrival + ovh, t_q)
                c.cylinder = cyl_q
                c.head = head_q
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
    t_end, c.cylinder, c.head = access_media(arrays, seek, write_seek, real, first + buffered, n - buffered,
                                    start, c.cylinder, c.head, False, not_before, ready, 0, stats, 0.0, total)
    busy = _partial_hit_waits(c.dirty_until_s, minimum_end, sneaky_partial, s == c.read_ahead_segment)
    if buffered > 0 and busy > arrival and buffered >= min(water, n):
        # arriving while a fast write is being written, it disconnects as a miss and
        # becomes a partial hit when the write's access ends (as a full hit above);
        # likewise while a read-ahead goes on to its minimum
        # (readahead._partial_hit_waits). Reconnected by disk_check_bus, it
        # needs the watermark's blocks whatever "Immed transfer partial hit" says
        # (disk_request_needs_bus with check_watermark): short of them it waits, below
        tb = max(arrival + ovh + read_disc[c.previous_write], busy) + reselect + data_prep \
            + buffered * bus_r
    elif buffered > 0 and busy <= arrival and (immed_partial or buffered >= min(water, n)):
        # the partial hit is connected from its hit overhead and sends the buffered part
        tb = arrival + overhead[OVH_READ, OVH_HIT, c.previous_write] + data_prep + buffered * bus_r
    elif buffered > 0:
        # "Immed transfer partial hit" 0, or waiting for the mechanism as above, fewer
        # blocks buffered than the watermark: it disconnects as a miss and reconnects once
        # the watermark's blocks are there
        tb = max(arrival + ovh + read_disc[c.previous_write], ready[min(water, n) - buffered - 1]) \
            + reselect + data_prep + buffered * bus_r
    elif never_disc:
        # "Never disconnect": the miss keeps the bus from its overhead on (disk_read_arrive)
        tb = arrival + ovh + data_prep
    else:
        # a miss disconnects after its command overhead and the read disconnect overhead
        # (disk_read_arrive), and reconnects once the watermark's blocks (or all of them)
        # are buffered and the disconnection is over (disk_request_needs_bus)
        w0 = water if water < n else n
        tb = max(arrival + ovh + read_disc[c.previous_write], ready[w0 - 1]) + reselect + data_prep
    _sent_back_to_back(sent_at, buffered, tb - buffered * bus_r, bus_r, chunk_end)
    if buffered == 0 and nseg > 0 and n > seg_size:
        # larger than its segment: a block is read only with room for it (big_transfer)
        t_end, c.cylinder, c.head = _read_through_segment(
            drive, (first, n), (ready, not_before, stats, scratch),
            (tb, water, hold_read, read_disc[c.previous_write], reselect + data_prep, bus_r), (c.cylinder, c.head,
                    t_end))
    tb = _send_read_blocks_at(ready, 0, n - buffered, tb, water, hold_read, read_disc[c.previous_write],
                              reselect + data_prep, bus_r, sent_at, buffered, chunk_end)
    done = tb + read_done
    c.mechanism_free_s = t_end
    if s < 0:
        s = _replacement(seg_start, seg_end, seg_write, seg_used, nseg, wseg, reading, hits_on_writes)
    own = -1
    if s >= 0:
        own = _keep_read(drive, buf, c, first, n, arrival, s, (buffered, kept, start, t_end, done))
    return done, own, read_first


@njit(cache=True, _nrt=False, inline="always")
def _keep_read(drive, buf, c, first, n, arrival, s, at):
    """A read miss's blocks into segment *s*, and the read-ahead after them; *at*: (blocks already
    buffered, the segment's first block before, the mechanism's start, its end, the completion).
    Returns *s*."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    period = real[REAL_PERIOD_S]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    max_ra = ints[INT_MAX_READ_AHEAD]
    ra_over = ints[INT_READ_AHEAD_OVER_REQUEST]
    scheme = ints[INT_READ_AHEAD_SCHEME]
    any_free = ints[INT_READ_ANY_FREE]
    min_ra = ints[INT_MIN_READ_AHEAD]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    seg_write = segments[SEG_WRITE]
    # each segment's read-ahead limit (readahead._kept_read_ahead_limit)
    seg_max_ra = segments[SEG_MAX_READ_AHEAD]
    not_before = work[WORK_NOT_BEFORE]
    stats = work[WORK_STATS]
    scratch = work[WORK_SCRATCH]
    sent_at = work[WORK_SENT_AT]         # when the host has block j of the read being served (_hold_read_ahead)
    # when the transfer carrying block j of the read being served ends (_send_read_blocks_at)
    chunk_end = work[WORK_CHUNK_END]
    pf_size = pf_ready.size
    last = first + n
    buffered, kept, start, t_end, done = at
    # the miss's blocks, and what the read-ahead adds, go to segment s (none without a buffer)
    seg_start[s] = first
    if buffered > 0:
        seg_start[s] = kept if last - kept <= seg_size else last - seg_size
    elif real[REAL_IMMEDIATE_MODE] != 0.0:
        # an immediate access wrapping round keeps the track's front (access_block)
        seg_start[s] = kept_track_front(arrays, period, int(real[REAL_IMMEDIATE_MODE]), first,
                                        start + stats[STAT_SEEK], total)
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
        c.read_ahead_cylinder = c.cylinder
        c.read_ahead_head = c.head
        c.read_ahead_start_s = t_end
        access_media(arrays, seek, write_seek, real, last, count, t_end, c.cylinder, c.head, False,
                     not_before, pf_ready, 0, scratch, 0.0, total)
        c.read_ahead_active = True
        c.read_ahead_segment = s
        c.read_ahead_first = last
        c.read_ahead_count = count
        c.read_ahead_done = 0
        c.read_ahead_minimum = _minimum_end(arrays, scheme, last, min_ra, total)
        _hold_read_ahead(arrays, seek, write_seek, real, c.read_ahead_first, c.read_ahead_count, c.read_ahead_done,
                         pf_ready, first, n,
                         seg_size, sent_at, done, scratch, total, arrival, chunk_end)
    return own


@njit(cache=True, _nrt=False, inline="always")
def _resume_queued_writes(drive, buf, c, done):
    """The queued writes a read went before resume once its completion (*done*) is received."""
    arrays, seek, write_seek, overhead, real, ints = drive
    segments, seg_used, work, pf_ready, wq = buf
    bus_w = real[REAL_BUS_WRITE_BLOCK_S]
    seg_size = ints[INT_SEGMENT_BLOCKS]
    stop_in_sector = ints[INT_STOP_IN_SECTOR]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    seg_start = segments[SEG_START]
    seg_end = segments[SEG_END]
    scratch = work[WORK_SCRATCH]
    # the writes it went before resume once its completion is received, its read-ahead
    # stopping there (disk_check_prefetch_swap; writequeue._resume_after_read)
    t_q = max(done, c.mechanism_free_s)
    if c.read_ahead_active:
        while c.read_ahead_done < c.read_ahead_count and pf_ready[c.read_ahead_done] <= done:
            c.read_ahead_done += 1
        _segment_end_at(seg_start, seg_end, c.read_ahead_segment, c.read_ahead_first + c.read_ahead_done, seg_size)
        c.read_ahead_active = False
        t_q, c.cylinder, c.head = _read_ahead_stop_after_read(arrays, seek, write_seek, real, c.read_ahead_first,
                                                              c.read_ahead_count,
                                                     c.read_ahead_done, pf_ready, c.read_ahead_start_s,
                                                     c.read_ahead_cylinder, c.read_ahead_head, done,
                                                     stop_in_sector)
    c.mechanism_free_s, c.cylinder, c.head = _resume_after_read(arrays, seek, write_seek, real, wq, bus_w, t_q,
                                                                c.cylinder, c.head,
                                              scratch, total)
    c.dirty_until_s = c.mechanism_free_s
