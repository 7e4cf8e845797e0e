"""DiskSim 4.0's "Read directly to buffer": when a read sector's room in the buffer is asked.

numba helper of :func:`diskmodel.model.simulate.simulate_requests`'s kernel (``real[27]``: the
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
sent, :func:`~diskmodel.model.disksim_readahead._hold_read_ahead` and
:mod:`~diskmodel.model.disksim_immediate`; a read larger than its segment,
:func:`~diskmodel.model.disksim_big_transfer._read_through_segment`), the question about a
sector starting at *t* is asked at *t* + :func:`_ask_delay_s` and a sector not allowed is passed either
way (read a revolution later, from its start). DiskSim's other reader of the key,
``disk_get_remapped_sector``, runs only next to a remapped sector, where DiskSim 4.0 fails at
either value (``disksim_support``). Writes ask at the sector's start whatever the key.
"""
from __future__ import annotations

from numba import njit

__all__ = []


@njit(cache=True, _nrt=False)
def _ask_delay_s(real, sector_s):
    """How long after a read sector's start DiskSim asks whether it may go into the buffer: 0
    with "Read directly to buffer" 1, the sector's time with 0 (this module's docstring)."""
    return 0.0 if real[27] != 0.0 else sector_s
