"""Fast writes queued behind one another in a write segment, as DiskSim 4.0 writes them (numba helpers
of :func:`diskmodel.model.simulate._simulate`).

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
minimum move, the number of writes; rows 4-5: the data and done times of the chain's blocks; row 6:
each queued write's segment, a label).
"""
from __future__ import annotations

from numba import njit

from .disksim_mapping import lbn_to_pbn_one
from .media_access import _EPS_REV, access_media


@njit(cache=True, _nrt=False)
def _start_chain(wq, first, n, data0, start, cyl, head, min_move):
    """A write whose access starts afresh: the chain holds it alone."""
    wq[0, 0] = first
    wq[1, 0] = n
    wq[2, 0] = data0
    wq[3, 0] = start
    wq[3, 1] = cyl
    wq[3, 2] = head
    wq[3, 3] = min_move
    wq[3, 4] = 1
    wq[6, 0] = 0.0


@njit(cache=True, _nrt=False)
def _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total):
    """Write the chain's accesses one after another from the first one still under way; drop those
    ending by *arrival* (the data arriving from then on cannot extend them). Returns (end of the last
    access, cylinder, head, the block the first access still under way writes next at *arrival*)."""
    qn = int(wq[3, 4])
    chain_end = int(wq[0, qn - 1] + wq[1, qn - 1])
    not_before = wq[4]
    ready = wq[5]
    start = wq[3, 0]
    cyl = int(wq[3, 1])
    head = int(wq[3, 2])
    min_move = wq[3, 3]
    j = 0
    t_end = start
    inblkno = int(wq[0, 0])
    while j < qn:
        f = int(wq[0, j])
        # the access goes on through the later writes of its own segment only (disk_buffer_sector_done:
        # up to seg->endblkno); one segment, the whole chain
        last_e = j
        while last_e + 1 < qn and wq[6, last_e + 1] == wq[6, j]:
            last_e += 1
        count = chain_end - f if last_e == qn - 1 else int(wq[0, last_e] + wq[1, last_e]) - f
        k = 0
        for e in range(j, last_e + 1):
            for b in range(int(wq[1, e])):
                not_before[k] = wq[2, e] + (b + 1) * bus_s
                k += 1
        own = int(wq[1, j])
        t_end, _, _ = access_media(arrays, seek, write_seek, real, f, count, start, cyl, head, True,
                                   not_before, ready, 0, scratch, min_move, total)
        # past its own blocks the access goes on while the next block's data are in the buffer
        written = count
        for k in range(own, count):
            if not_before[k] > ready[k - 1]:
                written = k
                break
        t_end = ready[written - 1]
        cyl, head, _, _, _ = lbn_to_pbn_one(f + written - 1, arrays)
        if j == 0:
            inblkno = f
            for k in range(written):
                if ready[k] <= arrival:
                    inblkno = f + k + 1
        label = wq[6, j]
        if t_end <= arrival and j < qn - 1:
            # over before the arrival: final; the next write's access is now the first under way
            for e in range(j + 1, qn):
                wq[0, e - j - 1] = wq[0, e]
                wq[1, e - j - 1] = wq[1, e]
                wq[2, e - j - 1] = wq[2, e]
                wq[6, e - j - 1] = wq[6, e]
            qn -= j + 1
            j = -1
            wq[3, 4] = qn
        # the next write's access starts once this one ends, at its own first block (just passed
        # when the chain is sequential: disk_buffer_seekdone's latency past the sector's start)
        start = t_end + 2.0 * _EPS_REV * real[0]
        if j + 1 < qn and wq[6, j + 1] != label:
            start = t_end
        if j + 1 < qn and wq[2, j + 1] > start:
            # and not before that write's command overhead is over (disk_write_arrive's
            # overhead_done, which is its data0 here)
            start = wq[2, j + 1]
        if j == -1:
            wq[3, 0] = start
            wq[3, 1] = cyl
            wq[3, 2] = head
            wq[3, 3] = min_move
        j += 1
    return t_end, cyl, head, inblkno


@njit(cache=True, _nrt=False)
def _prebuffered(arrays, seek, write_seek, real, wq, first, n, data0, bus_s, seg_size, arrival, scratch, total):
    """A fast write appending to the chain while its accesses are not over: taken at once when the
    segment has room for it (``seg->size > blkno - owner->inblkno``, the owner being the write whose
    access is under way), queued behind the chain. Returns (taken, end of the chain's last access,
    cylinder, head); not taken, the chain is left as it was."""
    t_end, cyl, head, inblkno = _run_chain(arrays, seek, write_seek, real, wq, bus_s, arrival, scratch, total)
    qn = int(wq[3, 4])
    # the segment's first write still queued (its owner); the first access under way when the chain
    # is one segment
    own = qn - 1
    while own > 0 and wq[6, own - 1] == wq[6, qn - 1]:
        own -= 1
    if own > 0:
        inblkno = int(wq[0, own])
    if not seg_size > first - inblkno or qn >= wq.shape[1] \
            or int(wq[0, qn - 1] + wq[1, qn - 1]) - int(wq[0, own]) + n > wq.shape[1] \
            or (own > 0 and first != int(wq[0, qn - 1] + wq[1, qn - 1])):
        return False, t_end, cyl, head
    wq[0, qn] = first
    wq[1, qn] = n
    wq[2, qn] = data0
    wq[6, qn] = wq[6, qn - 1]
    wq[3, 4] = qn + 1
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
    qn = int(wq[3, 4])
    dirty = 1
    for e in range(qn):
        if e > 0 and wq[6, e] != wq[6, e - 1]:
            dirty += 1
        if first < wq[0, e] + wq[1, e] and wq[0, e] < first + n:
            return False, t_end, cyl, head
    if dirty >= write_segments or qn >= wq.shape[1] or n > wq.shape[1]:
        return False, t_end, cyl, head
    wq[0, qn] = first
    wq[1, qn] = n
    wq[2, qn] = data0
    wq[6, qn] = wq[6, qn - 1] + 1.0
    wq[3, 4] = qn + 1
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
