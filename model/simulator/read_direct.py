"""DiskSim 4.0's "Read directly to buffer": when a read sector's room in the buffer is asked.

numba helper of :func:`diskmodel.model.simulator.simulate.simulate_requests`'s kernel (``real[REAL_READ_DIRECT]``: the
key's value). ``disk_buffer_sector_done`` (``src/disksim_diskctlr.c``) runs once a sector, at
the end of the sector just passed, and asks ``disk_buffer_block_available``
(``src/disksim_diskcache.c``) whether a read's sector may go into the buffer:

* with the key 1, at the end of the sector before it (the sector's start), about the next
  sector (``curr->bcount = 2`` when not, for the coming event);
* with the key 0 (a separate sector buffer: the data reach the buffer once read), at the end of
  the sector itself, about the sector just passed (``currblkno``; the same function's first
  test, before the event's ``disk_buffer_update_outbuffer``: the host's progress counts as
  the event before, at the sector's start, left it).

Where the answer depends on when it is asked (a read-ahead held while its segment's owner is
sent, :func:`~diskmodel.model.simulator.readahead._hold_read_ahead` and
:mod:`~diskmodel.model.simulator.immediate`; a read larger than its segment,
:func:`~diskmodel.model.simulator.big_transfer._read_through_segment`), the question about a
sector starting at *t* is asked at *t* + :func:`_ask_delay_s` and a sector not allowed is passed either
way (read a revolution later, from its start). DiskSim's other reader of the key,
``disk_get_remapped_sector``, runs only next to a remapped sector, where DiskSim 4.0 fails at
either value (``disksim_support``). Writes ask at the sector's start whatever the key.

What the host has taken of the segment's owner (``seg_owner->outblkno``) when a sector is asked
about is :func:`_host_progress`: ``disk_buffer_update_outbuffer`` counts the blocks whose bus time
is over at each sector's event, and a transfer's end (``disk_buffer_transfer_size``: ``outblkno +=
seg->outbcount``) adds its blocks at once. With the key 0 the question comes before the sector
end's ``disk_buffer_update_outbuffer``, so the host's progress is the one counted at the sector's
start, plus the blocks of a transfer that ended while the sector passed.
"""
from __future__ import annotations

from numba import njit
from .state import REAL_READ_DIRECT

__all__ = []


@njit(cache=True, _nrt=False)
def _ask_delay_s(real, sector_s):
    """How long after a read sector's start DiskSim asks whether it may go into the buffer: 0
    with "Read directly to buffer" 1, the sector's time with 0 (this module's docstring)."""
    return 0.0 if real[REAL_READ_DIRECT] != 0.0 else sector_s


@njit(cache=True, _nrt=False)
def _host_progress(sent_at, chunk_end, n, sent, t_start, t_ask):
    """How many blocks of the segment's owner (*n* blocks, block j sent at ``sent_at[j]``, its
    transfer ending at ``chunk_end[j]``) the host has when DiskSim asks at *t_ask* about a sector
    starting at *t_start* (:func:`_ask_delay_s`), counting on from *sent*: those sent by the
    sector's start (``disk_buffer_update_outbuffer`` at the event there) and those of a transfer
    that ended by the question (``disk_buffer_transfer_size`` moves ``outblkno`` to the
    transfer's end; asked at the sector's start with "Read directly to buffer" 1, the same).
    cheetah4LP with 26-block segments at 0: a 16-block read takes over the read-ahead with 9 of
    its blocks read, sends them as one transfer ending at 30.1972 ms while the sector of the
    segment's block 26 past the read's next one passes (30.1715-30.2101): asked at its end, the
    block is read (DiskSim's segment 6965868-6965894), at 1 it is held."""
    while sent < n and (sent_at[sent] <= t_start or chunk_end[sent] <= t_ask):
        sent += 1
    return sent
