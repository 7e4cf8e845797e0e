"""DiskSim 4.0's "Immediate buffer read" (zero-latency reads) for the per-request simulation.

numba helpers of :func:`diskmodel.model.simulator.simulate.simulate_requests`'s kernel. Where DiskSim 4.0
acts on "Immediate buffer read" = 1:

* not when an access reaches its track: ``disk_buffer_seekdone`` asks ``dm_access_block``
  (``g1_access_block``, ``diskmodel/mech_g1.c``) for the sector under the head, but that
  function takes ``dm_convert_atop``'s result ``rv < 0`` for a failure, and ``DM_OK`` is -3
  (``diskmodel/include/diskmodel/dm.h``), so it always returns the access's first sector: the
  head waits for the first block as without the key (DiskSim's own times on plain read misses
  are the same at 0 and 1);
* but sector by sector (``disk_buffer_sector_done``, ``src/disksim_diskctlr.c``): a sector
  that passes with a block the access wants beyond the next one it needs (``currblkno >
  firstblkno``, before ``lastblkno``: the read-ahead's limit or the end of the track) is read
  at once (``immedstart``, ``immedend``), and the following sectors with it; when the next
  block needed comes round and is read, the blocks read ahead of it join the segment
  (``firstblkno`` jumps from ``immedstart`` to ``immedend``). Meanwhile the circular segment
  drops its first blocks for them (``disk_buffer_segment_wrap`` to ``immedend``). One request
  at a time only a read-ahead held back while the read that owns its segment is sent
  (``disk_buffer_block_available``, class 2 of tests/golden/disksim_random/README.md) leaves
  such sectors passing: once it is let go mid-track, the sectors under the head are read
  first.

The read-ahead's block times (``pf_ready``) are when each block is in the segment (DiskSim's
``seg->endblkno`` passes it): the blocks read ahead of the front share the time of the front's
last block on the track; such a run of equal times, ending the track's part of the read-ahead,
is how :func:`_immediate_front` finds them again. Pure functions of arrays.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .mapping import lbn_to_pbn_one, steps_over_unmapped_sectors, track_end_lbn
from .read_direct import _ask_delay_s, _host_progress
from .media_access import access_media
from .state import LAYOUT_SECTORS_PER_TRACK, REAL_PERIOD_S, REAL_READ_DIRECT, REAL_READ_DONE_S

__all__ = []

#: A time this close past a sector's end [sectors] counts as at it (rounding)
_EPS_SECTOR = 1e-6


@njit(cache=True, _nrt=False)
def _front_after_swap(arrays, seek, write_seek, real, pf_base, pf_count, pf_done, pf_ready, arrival, first, seg_size,
                      done, scratch, total):
    """A held read-ahead with a run read ahead of its front (:func:`_immediate_front`) taken over by a
    read arriving at *arrival* for blocks *first* ..: returns one past the run's last block read
    (at least the front), and re-times in *pf_ready* the run's blocks the new read's hold forbids.

    A hit on the read-ahead's segment takes the access over as it is
    (``disk_buffer_attempt_access_swap``, ``src/disksim_diskcache.c``): the pending sector event
    stays queued. With "Read directly to buffer" 1 DiskSim asks ``disk_buffer_block_available`` about
    a sector when it starts (``disk_buffer_sector_done``, ``src/disksim_diskctlr.c``): the run's
    sectors started by the arrival were asked under the hold of the read before and are read, the
    one under the head at its end (``immedend``; the circular segment wraps to it,
    ``disk_buffer_segment_wrap``, which the caller applies). At 0 it asks when the sector ends
    (:mod:`~diskmodel.model.simulator.read_direct`): the sectors ended by the arrival are read, the one
    under the head is asked under the new read's hold. A later one is asked under the new
    read's hold (a block at or past its *first* plus *seg_size* may not be read,
    :func:`~diskmodel.model.simulator.readahead._hold_read_ahead`) and, forbidden, ends the run. Its
    blocks from there are read by the front, one sector after the other from the run's first block
    read (the front jumps over the blocks read, ``firstblkno = immedend``), and on through the
    read-ahead; the new read's own hold then applies to them. Once the new read has sent its
    completion (*done* less the read completion overhead: ``disk_request_complete`` marks it
    COMPLETION_SENT at the end of its transfer), the sectors still passing before the front comes
    round start a run again (at the first one asked then). The run computed at the previous read's completion
    (:func:`_hold_immediate`) assumed that read's hold lifted for good. Not followed: the new
    read's hold is taken as at its arrival (the host's progress during its transfer, which lets
    more blocks be read, is not counted).
    E.g. atlas10k (bus 5x slower than the media), 111-block sequential reads 30-300 us apart:
    the head reads two sectors of a run between one read's completion and the next one's
    arrival, the second ending after the arrival, and the segment's first blocks are dropped;
    40-block reads back to back: the next read arrives at the completion, before the run's first
    sector, and no block is read ahead of the front (tests/test_disksim_buffer_options.py,
    ``test_a_hit_taking_over_a_held_read_ahead_ends_its_run_ahead_of_the_front``)."""
    front = pf_base + pf_done
    lo, te, jump, first_read, sector_s = _run_of(arrays, real, pf_base, pf_count, pf_done, pf_ready, total)
    if lo < 0:
        return front
    # the run's sectors started by the arrival (the one under the head included), then those the
    # new read's hold allows
    read = int(np.ceil((arrival - first_read) / sector_s - _EPS_SECTOR))
    if real[REAL_READ_DIRECT] != 0.0:
        read += 1
    if read < 0:
        read = 0
    if read > te - lo:
        read = te - lo
    while lo + 1 + read <= te and pf_base + lo + 1 + read < first + seg_size:
        read += 1
    if lo + 1 + read <= te:
        k = lo + 1 + read
        # once the new read has sent its completion, the sectors passing before the front comes
        # round start a run again (at the first starting then), to the end of the track
        r = k
        delay = _ask_delay_s(real, sector_s)
        sent_done = done - real[REAL_READ_DONE_S]
        while r <= te and first_read + (r - lo - 2) * sector_s + delay < sent_done * (1.0 - 1e-12):
            r += 1
        for j in range(k, r):
            pf_ready[j] = jump + (j - lo) * sector_s
        t_run = pf_ready[r - 1] if r > lo + 1 else jump
        for j in range(r, te + 1):
            pf_ready[j] = t_run
        if te + 1 < pf_count:
            c, h, _, _, _ = lbn_to_pbn_one(pf_base + te, arrays)
            access_media(arrays, seek, write_seek, real, pf_base + te + 1, pf_count - te - 1, t_run, c, h, False,
                         pf_ready, pf_ready, te + 1, scratch, 0.0, total)
    if read < 2:
        # the run's first block moves immedend only: the segment wraps as the next one is read
        return front
    return pf_base + lo + 1 + read


@njit(cache=True, _nrt=False)
def _run_of(arrays, real, pf_base, pf_count, pf_done, pf_ready, total):
    """The run read ahead of a held read-ahead's front on its track (:func:`_immediate_front`):
    (lo, te, jump, first_read, sector_s): blocks lo + 1 .. te (indices of *pf_ready*) were read
    ahead of the front, whose last block on the track, lo, is read at *jump*; the run's first
    block was read at *first_read*. lo is -1 without a run."""
    if pf_done >= pf_count:
        return -1, 0, 0.0, 0.0, 0.0
    front = pf_base + pf_done
    end = track_end_lbn(arrays, front, total)
    if end > pf_base + pf_count:
        end = pf_base + pf_count
    te = end - 1 - pf_base
    if te <= pf_done:
        return -1, 0, 0.0, 0.0, 0.0
    jump = pf_ready[te]
    lo = pf_done
    hi = te
    while lo < hi:
        mid = (lo + hi) // 2
        if pf_ready[mid] >= jump:
            hi = mid
        else:
            lo = mid + 1
    if lo >= te:
        return -1, 0, 0.0, 0.0, 0.0
    _, _, _, _, z = lbn_to_pbn_one(front, arrays)
    sector_s = real[REAL_PERIOD_S] / arrays[LAYOUT_SECTORS_PER_TRACK][z]
    return lo, te, jump, jump - real[REAL_PERIOD_S] + sector_s, sector_s


@njit(cache=True, _nrt=False)
def _immediate_front(arrays, real, pf_base, pf_count, pf_done, pf_ready, arrival, total):
    """One past the highest block a held read-ahead has read by *arrival*, its blocks read
    ahead of the front included (:func:`_hold_immediate`); at least the front,
    ``pf_base + pf_done``. The circular segment keeps the last ``seg_size`` blocks below it
    (``disk_buffer_segment_wrap`` to ``immedend``).

    The blocks read ahead of the front on the track of the front's next block are the run of
    equal times ending that track's part of the read-ahead: the first of them was read a
    revolution before the time they share, the others one sector after the other. The
    segment wraps from the run's second block on (``disk_buffer_sector_done`` wraps it when
    it extends the run, not when it starts it).
    """
    front = pf_base + pf_done
    lo, te, jump, first_read, sector_s = _run_of(arrays, real, pf_base, pf_count, pf_done, pf_ready, total)
    if lo < 0 or arrival < first_read:
        return front
    # blocks lo + 1 .. te were read ahead of the front (lo: the front's last on the track)
    read = int(np.floor((arrival - first_read) / sector_s + _EPS_SECTOR)) + 1
    if read > te - lo:
        read = te - lo
    if read < 2:
        # the run's first block moves immedend only: the segment wraps as the next one is read
        return front
    return pf_base + lo + 1 + read


@njit(cache=True, _nrt=False)
def _hold_immediate(arrays, seek, write_seek, real, pf_base, pf_count, pf_ready, k, t_ask, first, n, seg_size,
                    sent_at, done, scratch, total, chunk_end):
    """A held read-ahead block *k* (its sector starting at *t_ask*) with "Immediate buffer read".

    The head passes the track's sectors one by one (``disk_buffer_sector_done``); a block
    may be read when its sector starts once the owner has sent its completion (*done*: the end
    of its transfer, before the read completion overhead, as
    :func:`~diskmodel.model.simulator.readahead._hold_read_ahead` counts it), or
    less than a segment past the owner's next block for the host (``sent_at``, as
    :func:`~diskmodel.model.simulator.readahead._hold_read_ahead` counts it;
    ``disk_buffer_block_available``, asked at the sector's start with "Read directly to
    buffer" 1, at its end with 0: :mod:`~diskmodel.model.simulator.read_direct`). The first sector
    after block k that may be read starts a run read ahead of the front (``immedstart``, ``immedend``), each next one extends it, and one after a
    sector that may not be read starts it again; when block k comes round and may be read,
    the front is read up to the run, which joins it (``firstblkno = immedend``), and the
    access goes on from the run's end (without a run, from block k when it may be read).
    Rewrites ``pf_ready`` from k on; returns the index of the next block to check for a
    hold, or -1 (``pf_ready`` untouched) when the run does not reach the end of the track's
    part of the read-ahead (not followed) or the track has slipped or unmapped sectors there.
    """
    period = real[REAL_PERIOD_S]
    lbn = pf_base + k
    c, h, s, _, z = lbn_to_pbn_one(lbn, arrays)
    sector_s = period / arrays[LAYOUT_SECTORS_PER_TRACK][z]
    end = track_end_lbn(arrays, lbn, total)
    if end > pf_base + pf_count:
        end = pf_base + pf_count
    if end - lbn < 2 or steps_over_unmapped_sectors(arrays):
        return -1
    _, _, s_end, _, _ = lbn_to_pbn_one(end - 1, arrays)
    if s_end - s != end - 1 - lbn:
        return -1
    # asked at the sector's start, or its end with "Read directly to buffer" 0 (read_direct)
    delay = _ask_delay_s(real, sector_s)
    run_first = -1
    run_end = -1
    sent = 0
    t_pass = t_ask
    while True:
        if t_pass > t_ask:
            sent = _host_progress(sent_at, chunk_end, n, sent, t_pass, t_pass + delay)
            if t_pass + delay >= done or lbn - (first + sent) < seg_size:
                break
        for j in range(lbn + 1, end):
            t_j = t_pass + (j - lbn) * sector_s
            sent = _host_progress(sent_at, chunk_end, n, sent, t_j, t_j + delay)
            if run_first <= j < run_end:
                continue
            if t_j + delay >= done or j - (first + sent) < seg_size:
                if j == run_end:
                    run_end += 1
                elif run_first < 0 or j > run_end:
                    run_first = j
                    run_end = j + 1
        t_pass += period
    if run_first < 0:
        # nothing read ahead: block k is read when it comes round and may be read
        access_media(arrays, seek, write_seek, real, lbn, pf_count - k, t_pass, c, h, False, pf_ready, pf_ready, k,
                     scratch, 0.0, total)
        return k + 1
    if run_end != end:
        return -1
    for j in range(run_first - lbn):
        pf_ready[k + j] = t_pass + (j + 1) * sector_s
    jump = pf_ready[k + run_first - lbn - 1]
    for j in range(run_first - pf_base, end - pf_base):
        pf_ready[j] = jump
    nxt = end - pf_base
    if nxt < pf_count:
        access_media(arrays, seek, write_seek, real, end, pf_count - nxt, jump, c, h, False, pf_ready, pf_ready, nxt,
                     scratch, 0.0, total)
    return nxt
