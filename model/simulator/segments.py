"""DiskSim 4.0's choice of a buffer segment for a request that is not a hit: numba helpers of
:func:`diskmodel.model.simulator.kernel._simulate`.

``disk_buffer_select_read_segment`` and ``disk_buffer_select_write_segment``
(``src/disksim_diskcache.c``, DiskSim 4.0, Ganger, Worthington, Patt et al., CMU PDL) give every
segment a value and take the first segment of the highest value in the disk's segment list, which
``disk_buffer_set_segment`` keeps in LRU order (a segment is moved to the end when a request is set
on it; ``LRU_at_seg_list_head`` 0). For a request that is not a hit:

* 3: a segment in state ``BUFFER_EMPTY`` ("doesn't trash other data"; for a write only while
  ``numdirty < numwritesegs``);
* 2: a ``BUFFER_CLEAN`` segment no request is using;
* 1: the ``BUFFER_READING`` segment of a read-ahead no request waits for, if it can be stopped;
* none (-1): a segment holding data not yet written (``BUFFER_DIRTY``, ``BUFFER_WRITING``).

So an empty segment is taken before a clean one whatever their last use, the least recently used
of either first. What DiskSim calls empty, in the simulation's segment arrays:

* a segment never used (every segment starts ``BUFFER_EMPTY``: ``disk_initialize``);
* a segment holding no blocks: a clean segment overlapping a write (``disk_buffer_set_segment``:
  "clear out clean, non-active, overlapping segments if write"; ``_invalidate``), a read's segment
  given up with "Preseeking level" (``disk_release_hda``), every segment without caching
  (``nocache``);
* a written segment once its data are on the media, on a drive without "Allow read hits on write
  data" (``disk_release_hda``: ``BUFFER_CLEAN`` only if ``enablecache && readhitsonwritedata``,
  else ``BUFFER_EMPTY``).

DiskSim selects at the arrival only when the request can be started at once (no access under way,
or a read-ahead ``disk_buffer_stopable_access`` stops); else ``disk_activate_read`` /
``disk_activate_write`` drop the choice while the access is under way and the segment is selected
again when the mechanism is free, the read-ahead's or written segment clean by then. The kernel
passes the read-ahead's segment as *reading* only in the first case.
"""
from __future__ import annotations

from numba import njit

__all__ = []


@njit(cache=True, _nrt=False)
def _replacement(seg_start, seg_end, seg_write, seg_used, nseg, skip, reading, hits_on_writes):
    """The segment a read miss or a write that does not append takes (see the module's docstring):
    an empty one (value 3), else a clean one (2), else the read-ahead's segment *reading* (1: it
    can be stopped), the least recently used of equals (*seg_used*, the last use; of equal last
    uses the first index, as the segment list holds the never used ones in a fixed order).
    *skip*: a segment the request may not take (a read: the dedicated write segment), or -1.
    Returns -1 when there is none."""
    best = -1
    best_value = 0
    for j in range(nseg):
        if j == skip:
            continue
        if j == reading:
            value = 1
        elif seg_end[j] <= seg_start[j] or (seg_write[j] == 1 and not hits_on_writes):
            value = 3
        else:
            value = 2
        if value > best_value or (value == best_value and seg_used[j] < seg_used[best]):
            best = j
            best_value = value
    return best


@njit(cache=True, _nrt=False)
def _appended_segment(seg_start, seg_end, seg_write, nseg, first):
    """The segment a fast write starting at block *first* joins (``BUFFER_APPEND``, value 7 or 6
    in ``disk_buffer_select_write_segment``): the written segment ending at *first*. The kernel asks
    only for a write taken at once while the write it appends to is on its way to the media (the
    segment ``BUFFER_WRITING`` or ``BUFFER_DIRTY``) with room (:func:`_room_to_append`); -1 if
    none."""
    for j in range(nseg):
        if seg_write[j] == 1 and seg_start[j] < seg_end[j] == first:
            return j
    return -1


@njit(cache=True, _nrt=False)
def _room_to_append(ready, prev_first, prev_blocks, first, arrival, seg_size):
    """DiskSim's room test of an appending write (``disk_buffer_select_write_segment`` and
    ``disk_buffer_check_write_segments``: ``seg->size > blkno - seg_owner->inblkno``): the blocks
    from the first one the write under way has not yet written up to *first* are fewer than the
    segment holds. The write under way is the previous request, blocks *prev_first* ..
    *prev_first* + *prev_blocks* - 1, its own access writing block k at ``ready[k]``
    (``disk_buffer_sector_done`` moves its ``inblkno`` on at each sector's end). Without room the
    write is no append: it waits, as a write elsewhere, until that access ends."""
    written = 0
    while written < prev_blocks and ready[written] <= arrival:
        written += 1
    return first - (prev_first + written) < seg_size


@njit(cache=True, _nrt=False)
def _write_segment(seg_start, seg_end, seg_write, seg_used, nseg, first, last, reading, hits_on_writes,
                   prebuffer, append):
    """The segment a write takes on a drive without a dedicated write segment
    (``disk_buffer_select_write_segment``): the segment *append* of the fast write it joins if any
    (``BUFFER_APPEND``, value 6 or 7: :func:`_appended_segment`), else a clean segment holding some
    of blocks *first* .. *last* - 1 (value 4, above an empty or other clean one), the least recently
    used of them, else :func:`_replacement`'s. A written segment counts as clean once its data are on
    the media where reads may hit on written data (with write prebuffering others may still be
    dirty: left out); a segment still being read ahead (*reading*) ranks last, value 1: the write
    does not take it while another is free, and it keeps its blocks, read-ahead stopped. Without
    "Combine seq writes" a write never joins (*append* -1: disk_buffer_attempt_seg_ownership's
    BUFFER_NOMATCH). -1 if there is none."""
    if append >= 0:
        return append
    s = -1
    for j in range(nseg):
        if j != reading and (seg_write[j] == 0 or (hits_on_writes and not prebuffer)) \
                and seg_end[j] > seg_start[j] and seg_start[j] < last and first < seg_end[j]:
            if s < 0 or seg_used[j] < seg_used[s]:
                s = j
    if s < 0:
        s = _replacement(seg_start, seg_end, seg_write, seg_used, nseg, -1, reading, hits_on_writes)
    return s


@njit(cache=True, _nrt=False)
def _extra_disconnect_segment(seg_start, seg_end, seg_write, seg_used, nseg, first, last, reading,
                              hits_on_writes, prebuffer):
    """Whether a write-through write after a write suffers DiskSim's extra write disconnect on a
    drive without a dedicated write segment (``disk_buffer_select_segment``,
    ``src/disksim_diskcache.c``): only when the segment it selects (:func:`_write_segment`) is the
    most recently used one (the end of DiskSim's LRU list, ``!seg->next``), that is the previous
    write's, and the write does not start at that segment's end. A write taking another segment (the
    least recently used of equal value, e.g. any write not overlapping the previous one on a drive of
    several segments) connects as after a read."""
    s = _write_segment(seg_start, seg_end, seg_write, seg_used, nseg, first, last, reading, hits_on_writes,
                       prebuffer, -1)
    if s < 0:
        return False
    for j in range(nseg):
        if seg_used[j] > seg_used[s]:
            return False
    return first != seg_end[s]
