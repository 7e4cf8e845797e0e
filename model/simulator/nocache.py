"""DiskSim 4.0's buffer with caching off ("Enable caching in buffer" = 0): a numba helper of
:func:`diskmodel.model.simulator.kernel._simulate`.

Without caching DiskSim's segments still stage every transfer (the watermarks, the segment size and
the bus rules act as with caching), but they keep nothing for later requests
(``src/disksim_diskcache.c``, ``src/disksim_diskctlr.c``, DiskSim 4.0, Ganger, Worthington, Patt et
al., CMU PDL):

* ``disk_buffer_check_read_segments`` returns ``BUFFER_NOMATCH`` at once: no read is a hit;
* a read's segment becomes ``BUFFER_EMPTY`` once its completion is received
  (``disk_reconnection_or_transfer_complete``: ``else if(!currdisk->enablecache)``, or
  ``disk_release_hda`` for a segment with no request left: ``enablecache || seg_next`` is false);
* a written segment with nothing left to write becomes ``BUFFER_EMPTY`` too (``disk_release_hda``:
  ``clean = enablecache && readhitsonwritedata``);
* ``disk_postpass_perdisk`` stops DiskSim with read-ahead, fast writes or "Read any free blocks"
  (so no media work goes on after a completion, and nothing can be hit later).

One request at a time every segment is therefore empty when the next request arrives, which
:func:`_forget_buffered` makes so.
"""
from __future__ import annotations

from numba import njit

__all__ = []


@njit(cache=True, _nrt=False)
def _forget_buffered(seg_start, seg_end, nseg):
    """Empty every segment (at a request's arrival, without caching: see the module's docstring).

    Which empty segment the next request takes does not matter: each holds nothing."""
    for j in range(nseg):
        seg_end[j] = seg_start[j]
