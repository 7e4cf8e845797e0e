"""DiskSim 4.0's reads and writes larger than their segment, for the per-request simulation (numba helpers).

Writes:

A write's data cross the bus into its buffer segment while the mechanism writes them to the
media; the segment holds at most ``seg_size`` blocks not yet written. DiskSim 4.0 (Ganger,
Worthington, Patt et al., CMU PDL; ``src/disksim_diskctlr.c``) runs it so:

* ``disk_request_needs_bus`` connects a write first for ``min(bcount, seg->size)`` blocks;
  ``disk_buffer_transfer_size`` then sends, each time a transfer ends, as many blocks as the
  segment has room for (``seg->size - (outblkno - seg_owner->inblkno)``: the segment's size
  less the blocks sent and not yet written), without disconnecting while there is room;
* with no room left the drive holds the bus ("Hold bus entire write xfer" 1, or "Never
  disconnect"): ``disk_buffer_request_complete`` hands the held transfer back at the end of
  every sector written, and it sends what has room then (a block a sector, the bus being the
  faster);
* or ("Hold bus entire write xfer" 0) it disconnects (``disk_reconnection_or_transfer_complete``:
  the write disconnect overhead, or the second extra-disconnect overhead for an extra write
  disconnect) and reconnects (``disk_request_needs_bus``, asked at the end of the disconnection,
  ``disk_disconnect``, and at the end of every sector written, ``disk_buffer_request_complete``)
  once the blocks sent and not yet written are at most the write's low watermark and fewer than
  the segment: ``watermark`` = ``max(1, (int) (min(seg->size, bcount) * writewater))`` with "Set
  watermark by reqsize" 1, else ``(int) (seg->size * writewater + 0.9999999999)``
  (``disk_buffer_set_segment``, ``src/disksim_diskcache.c``). The reconnection costs the reselect
  overhead (the other one after an extra write disconnect) plus the data preparation
  (``disk_check_bus``); the room is counted again when it is over.

The mechanism writes a block only once it is in the buffer (``disk_buffer_block_available``):
a block whose data come after its sector has passed waits a revolution. A write of at most a
segment into a segment of its own never runs out of room (one transfer), so this applies to writes
larger than a segment, where every transfer's blocks are known when it starts, and the media
access is run transfer by transfer, continuing where it stopped; and to a fast write appending to
a write still being written (class 1 of ``tests/golden/disksim_random/README.md``): there the
segment's owner is that write (``disk_buffer_seg_owner``), whose blocks not yet written count
against the room too, until its access ends and the segment passes to the appended write
(``disk_release_hda``, ``disk_find_new_seg_owner``: the reconnection is asked then, and at the end
of every sector the appended write's own access writes). While the owner's access writes, a held
bus sends again at the end of each of its sectors (``disk_buffer_request_complete`` re-queues
``outwait``); a disconnected write is asked only at the end of its disconnection (that access is a
background one, which asks no one). The reconnection's watermark is the appended write's own
(``max(1, (int) (bcount * writewater))`` with "Set watermark by reqsize" 1), counted from its own
next block to write (``currdiskreq->inblkno``), which only its own access moves.

Reads (``_read_through_segment``): the mechanism reads a block into the segment only while it is
less than a segment ahead of the host's next block (``disk_buffer_block_available``, asked at the
start of each sector while the read has not sent its completion: ``blkno - seg_owner->outblkno >=
seg->size`` is no room). The host takes the blocks as ``_send_read_blocks_at`` says (by the start of
a sector it holds those whose bus time is over: ``disk_buffer_update_outbuffer``); a block without
room is passed and read when its sector comes round again with room. A block's room depends on the
host's progress with blocks at least a segment earlier, whose reconnection (at the watermark, at
most a segment) waits for earlier blocks only: the access is run again from each passed block.

Not followed: a write larger than its segment appending to a write still being written (its data
taken as if the segment were its own; such requests are not in the randomised test's traces).
"""
from __future__ import annotations

from numba import njit

from .mapping import lbn_to_pbn_one
from .readahead import _block_sent
from .media_access import access_media
from .state import (INT_SEGMENT_BLOCKS, LAYOUT_FIRST_LBN, LAYOUT_SECTORS_PER_TRACK, REAL_PERIOD_S, STAT_LATENCY,
                    STAT_MEDIA, STAT_SEEK)

__all__ = []


@njit(cache=True, _nrt=False)
def _write_through_segment(drive, request, mech, host, rows, resume):
    """Write blocks *first* .. *first* + *n* - 1 through a segment of *seg_size* blocks (the rules
    in this module's docstring). The host's data start at *data0* (the drive connected, the data
    preparation over); the mechanism at *start*; a drive with an extra write disconnect writes
    no sector before *held* blocks are buffered. *reconnect_s*: reselect plus data preparation.
    Fills ``not_before[k]`` (block k's data in the buffer), ``ready[k]`` (block k on the media)
    and *stats* (first move, latency, rest); returns (media end, cylinder, head, when the host has
    sent the last block, blocks sent, connected).

    A fast write appending to a write still being written (*owner_n* > 0: that write's access
    under way writes its *owner_n* blocks at ``ready[:owner_n]``) counts that write's blocks not
    yet written against the room too (DiskSim's ``seg_owner->inblkno``); its own access has not
    started, so only the data are sent (from *sent* = 0 at *tb* = *data0*, *connected*), as long
    as they need nothing of it, and it returns then. Called again with *owner_n* 0 and that
    state, once the owner's access has ended (*t_own*: DiskSim's disk_release_hda gives the
    segment to this write, disk_find_new_seg_owner, and asks it whether it needs the bus): the
    blocks already sent are written by one access from *start*, and the rest goes on.

    The bundles: *request* (first, n, held, min_move: the least move of a write), *mech* (start,
    cyl, head), *host* (data0, watermark, hold: the drive holds the bus, disconnect_s,
    reconnect_s, bus_s), *rows* (not_before, ready, stats, scratch) and *resume* (owner_n, sent,
    tb, connected, t_own)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    first, n, held, min_move = request
    start, cyl, head = mech
    data0, watermark, hold, disconnect_s, reconnect_s, bus_s = host
    not_before, ready, stats, scratch = rows
    owner_n, sent, tb, connected, t_own = resume
    seg_size = ints[INT_SEGMENT_BLOCKS]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    written = 0           # blocks of this write on the media by tb (inblkno - first)
    o = 0                 # blocks of the owner's on the media by tb
    t_end = start
    if owner_n == 0 and sent > 0:
        for j in range(min(sent, held - 1)):
            not_before[j] = data0 + held * bus_s
        t_end, cyl, head = access_media(arrays, seek, write_seek, real, first, sent, start, cyl, head, True,
                                        not_before, ready, 0, stats, min_move, total)
    while sent < n:
        if owner_n > 0:
            while o < owner_n and ready[o] <= tb:
                o += 1
        else:
            while written < sent and ready[written] <= tb:
                written += 1
        # the segment's size less the blocks sent and not yet written (seg->size - (outblkno -
        # seg_owner->inblkno))
        room = seg_size - (sent - written) - (owner_n - o)
        if not connected:
            # disconnected, the disconnection over by tb: back (disk_request_needs_bus) once the
            # blocks of this write sent and not written are at most the watermark, with room, asked
            # at the end of the disconnection, when the segment's owner changes and at the end of
            # every sector this write's own access writes
            if owner_n == 0 and tb < t_own:
                tb = t_own
                continue
            if room <= 0 or sent - written > watermark:
                if owner_n > 0:
                    return t_end, cyl, head, tb, sent, False
                need = sent - watermark
                if need < sent - seg_size + 1:
                    need = sent - seg_size + 1
                if need >= 1 and ready[need - 1] > tb:
                    tb = ready[need - 1]
            tb += reconnect_s
            connected = True
        elif room > 0:
            c = n - sent
            if c > room:
                c = room
            for k in range(c):
                not_before[sent + k] = tb + (k + 1) * bus_s
            if owner_n == 0:
                for j in range(sent, min(sent + c, held - 1)):
                    not_before[j] = data0 + held * bus_s
                if sent == 0:
                    t_end, cyl, head = access_media(arrays, seek, write_seek, real, first, c, start, cyl, head, True,
                                                    not_before, ready, 0, stats, min_move, total)
                else:
                    # the same access going on: from the end of the last sector written
                    t_end, cyl, head = access_media(arrays, seek, write_seek, real, first + sent, c, t_end, cyl,
                                                    head, True, not_before[sent:], ready, sent, scratch, 0.0, total)
            sent += c
            tb += c * bus_s
        elif hold:
            # the held bus sends again at the end of the next sector written
            if owner_n > o:
                tb = ready[o]
            elif owner_n > 0:
                return t_end, cyl, head, tb, sent, True
            else:
                tb = ready[written]
        else:
            # disconnected (the write disconnect overhead)
            tb += disconnect_s
            connected = False
    if owner_n == 0:
        stats[STAT_MEDIA] = t_end - start - stats[STAT_SEEK] - stats[STAT_LATENCY]
    return t_end, cyl, head, tb, sent, connected


@njit(cache=True, _nrt=False)
def _read_through_segment(drive, request, rows, host, mech):
    """Hold back the blocks of a read of *n* > *seg_size* blocks from *first* that have no room in
    the segment (this module's docstring). *ready* holds the unconstrained access's block times
    (rewritten from the first block held back); the host is connected from *tb* and sends as
    ``_send_read_blocks_at`` (*water*, *hold*, *disconnect_s*, *reconnect_s*, *bus_s*), block k's
    transfer over at ``sent_at[k]`` (scratch, filled). Returns the access's (end, cylinder, head)
    and adds its delay to ``stats[STAT_MEDIA]``. The bundles: *request* (first, n), *rows* (ready,
    sent_at, stats, scratch), *host* (tb, water, hold, disconnect_s, reconnect_s, bus_s) and *mech*
    (cyl, head, t_end: where and when the unconstrained access ended)."""
    arrays, seek, write_seek, overhead, real, ints = drive
    first, n = request
    ready, sent_at, stats, scratch = rows
    tb, water, hold, disconnect_s, reconnect_s, bus_s = host
    cyl, head, t_end = mech
    seg_size = ints[INT_SEGMENT_BLOCKS]
    total = arrays[LAYOUT_FIRST_LBN][arrays[LAYOUT_FIRST_LBN].size - 1]
    period = real[REAL_PERIOD_S]
    end0 = t_end
    done = 0              # sent_at[0 .. done - 1] are final
    k = seg_size
    while k < n:
        # the host's times of blocks up to k - seg_size (they wait for ready[< k] only)
        while done <= k - seg_size:
            tb = _block_sent(ready, 0, done, n, tb, water, hold, disconnect_s, reconnect_s, bus_s)
            sent_at[done] = tb
            done += 1
        _, _, _, _, z = lbn_to_pbn_one(first + k, arrays)
        # asked at the sector's start, or at its end with "Read directly to buffer" 0, the host's
        # progress counted as at the start either way (read_direct): the same question
        asked = ready[k] - period / arrays[LAYOUT_SECTORS_PER_TRACK][z]
        if sent_at[k - seg_size] <= asked:
            k += 1
            continue
        # no room when asked: passed, read a revolution (or more) later
        while sent_at[k - seg_size] > asked:
            asked += period
        c, h, _, _, _ = lbn_to_pbn_one(first + k, arrays)
        t_end, cyl, head = access_media(arrays, seek, write_seek, real, first + k, n - k, asked, c, h, False,
                                        scratch, ready, k, scratch, 0.0, total)
        k += 1
    stats[STAT_MEDIA] += t_end - end0
    return t_end, cyl, head
