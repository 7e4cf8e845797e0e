"""Per-request service-time simulation of a drive serving one request at a time.

The expected-value model of :mod:`diskmodel.model.drive.disk` (eqs. 3-8 of
Djordjevic & Timcenko 2015) averages seek and rotation. A trace of real
requests needs their sequence: where the head is, where the platter is, what
the drive's buffer holds. This module carries that state from request to
request, after the disk model of DiskSim 4.0 (Ganger, Worthington, Patt et
al., CMU PDL; ``src/disksim_diskctlr.c``, ``disksim_diskcache.c``,
``diskmodel/mech_g1.c``), re-derived and simplified to requests issued one at
a time (queue depth 1):

* clock: request i arrives at the completion of request i-1 plus its
  inter-arrival gap; the platter turns uniformly from angle 0 at time 0, so
  the rotational phase at any moment is ``t / T_rot mod 1``;
* mechanics: the head sits on a (cylinder, surface); a move costs the seek
  time of the cylinder distance, at least the head-switch time when the
  surface changes, plus the extra write settle for writes; then the
  rotational latency until the block's angle (zones, track and cylinder skew,
  spares and slips of :mod:`diskmodel.model.simulator.mapping`) passes under the head;
  each sector takes ``T_rot / sectors_per_track``;
* controller: per-request command overheads by kind (read/write, cache
  hit/miss, after a read/after a write), completion overheads, a per-block
  bus (interface) time overlapped with the media transfer (a block goes to
  the host after it has been read, from the watermark on), and for writes
  the media write of a block only once the host has sent it;
* cache: ``buffer_segments`` segments of ``segment_size_blocks`` blocks,
  replaced least-recently-used; after a read miss the drive keeps reading
  ahead (up to ``max_read_ahead_blocks``; a segment keeps the last blocks read) until the next
  request needs the mechanism; a read whose blocks are in a segment (read
  earlier, read ahead, or written earlier when the drive allows read hits on
  write data, never in a dedicated write segment) is a hit, but one arriving
  while a fast write is being written waits for that write's access to end
  (``disk_activate_read``); a read of blocks that the read-ahead is still
  fetching waits for them; "fast write" (immediate report) completes a write
  once its data is in the buffer and writes it to the media in the
  background (at level 1 only a write appending to the previous one, or
  arriving once that one's data are on the media; another waits for them).

DiskSim's rules followed exactly (checked request by request against DiskSim
4.0 itself, ``tests/golden/disksim_service_times``; each cites its source in
the code): the read-ahead bound of ``disk_buffer_get_max_readahead`` (a
maximum read-ahead may push a request's own blocks out of its circular
segment); a running read-ahead stops only at the end of its pending sector or
move, and the next request's seek waits for that stop on top of its command
overhead (``disk_buffer_stopable_access``, ``disk_check_hda``); a read served
from a segment being read ahead carries the read-ahead on to its own limit
(``disk_buffer_set_segment``), a full hit in another segment stops it
(``disk_activate_read``), and a read whose first blocks are buffered is a
partial hit (its buffered part sent after the hit overhead, the rest read by
the mechanism); a write-through write reconnects for its completion (first
reselect overhead), and on drives with "Extra write disconnect" a write not
appending to the previous write disconnects at once (the Extradisc overheads,
the other reselect overhead) and writes no sector before min(blocks, 10) (15
for >= 45 blocks) of its blocks are buffered (``disk_buffer_block_available``).
A fast write (level 1 or 2) that does not append to the previous write,
still being written, takes its data only once that write is on the media
(``disk_buffer_stopable_access``: a write being written can be stopped only
for a write appending to it). A read miss disconnects after its command
overhead plus the read disconnect overhead and reconnects at the watermark;
when the host has taken every buffered block of a read, the drive holds the
bus ("Hold bus entire read xfer") or disconnects and reconnects
(``disk_buffer_transfer_size``); "Allow almost read hits" makes a read
starting at the block being read ahead a hit. The DEC read-ahead (scheme 4)
follows DiskSim's code (``disk_buffer_get_max_readahead``); a read-ahead
short of its "Minimum read-ahead" is not stopped (unless "Write hit stop
prefetch" and a write overlaps what it buffered). "Preseeking level" 1 and 2
empty the segment of a read whose media access ends before its completion
(``disk_release_hda``); "Set watermark by reqsize" 0 takes the watermark of
the segment; "Immed transfer partial hit" 0 makes a partial hit short of the
watermark disconnect as a miss. A request larger than its segment goes through
it as DiskSim's does (:mod:`diskmodel.model.simulator.big_transfer`): a write
takes as many blocks as the segment has room for, then holds the bus ("Hold
bus entire write xfer") or disconnects and reconnects at the "Low (write)
water mark" (``disk_buffer_transfer_size``, ``disk_request_needs_bus``); a
read's block without room (a segment ahead of the host) waits a revolution
(``disk_buffer_block_available``). With "Immediate buffer read" a read-ahead held
back while a read is sent and let go mid-track reads the sectors under the head first, and
its circular segment drops its first blocks for them
(:mod:`diskmodel.model.simulator.immediate`). A request that is no hit takes an empty segment before
a clean one, the least recently used of either, and an appending fast write taken at once joins
the segment of the write it appends to when there is room, past the segment's size too (the
segment wraps; :mod:`diskmodel.model.simulator.segments`). With these, the seven
traced drives give DiskSim's own times for every request of their traces
(``tests/golden/disksim_service_times`` holds DiskSim's, and the tests the tolerance;
``tests/golden/disksim_variants`` checks the options on variants of the
drives), run as DiskSim 4.0 exactly (``drive_parameters``' default). With
``drive_parameters(..., disksim_access_block_bug=False)`` "Read any free
blocks" makes a read's first track DiskSim's immediate access, which starts
under the head (:mod:`diskmodel.model.simulator.access_block`), as DiskSim 4.0
does once its ``g1_access_block`` takes success for success: every request of
atlas10k and ibm18es as that mended build gives it (``tests/golden/disksim_fixed``).

A fast write appending to a write still on its way to the media waits in
DiskSim's queue and is written by its own access once that one ends (a
revolution later: its first sector has just passed), and a further appending
write arriving meanwhile waits for both (``disk_buffer_stopable_access``). Such a write's data
share its segment with the blocks of the write under way not yet written: it takes as many blocks
as there is room for, then holds the bus or disconnects and reconnects at its low watermark once
its own access writes (:mod:`diskmodel.model.simulator.big_transfer`). With "Allow write
prebuffering" (or "Never disconnect") such writes are all taken at once and queued, each written
by its own access from its first block on through the segment's buffered data
(:mod:`diskmodel.model.simulator.writequeue`); with several write segments the other fast writes
too, each into a segment of its own, served first come first served.
Against the measured traces: accesses that need no seek take longer on the
real ibm18es, barracuda and atlas_III than any positioning time in their files
gives (DiskSim misses this too; ``benchmarks/trace_validation.py``).
No parameter was fitted to the traces.

Pure model code: numpy arrays in, arrays out; no I/O and no clocks. The
sequential state (head, phase, segments, read-ahead) is carried by a numba
kernel (:mod:`~diskmodel.model.simulator.kernel`, its phases in
:mod:`~diskmodel.model.simulator.read_path` and
:mod:`~diskmodel.model.simulator.write_path`), because the next request's time
depends on the previous one's and a Python loop would be two orders of magnitude
slower. The
drive is a :class:`~diskmodel.model.drive.parameters.DriveParameters`
(``DriveParameters.from_disk`` for a :class:`~diskmodel.model.drive.disk.Disk`, e.g.
a calibration's ``to_disk()``); a simulation can continue from where another
left off (``start_s``, ``start_cylinder``, ``start_head``), or take requests as
they arrive, its whole state kept between calls
(:class:`~diskmodel.model.simulator.session.DriveSession`: the kernel's carried
state is the record :data:`~diskmodel.model.simulator.inputs.CARRIED`); its
media accesses are :mod:`diskmodel.model.simulator.media_access`'s; DiskSim's files
become parameters and traces in :mod:`diskmodel.model.disksim_drives.convert`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import finite_array
from ..drive.parameters import DriveParameters
from .inputs import (OUT_ARRIVAL, OUT_HIT, OUT_LATENCY, OUT_MEDIA, OUT_ROWS, OUT_SEEK, OUT_SERVICE, check_requests,
                     kernel_inputs, new_carried)
from .kernel import _simulate
from .state import HitKind

__all__ = ["HitKind", "SimulationResult", "simulate_requests"]

@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Per-request outcome of :func:`simulate_requests` [s].

    ``service_s``: arrival to completion; ``arrival_s``; ``hit``: how the
    drive served each request, the values of :class:`HitKind` (as int8);
    ``seek_s``, ``latency_s``, ``media_s``: the mechanical parts of a media
    access (0 for hits and fast writes, whose media work happens in the
    background): the first move, the rotational wait for the first block
    (a write's from when its data are in the buffer too, so under one
    revolution), and the rest (transfer, later moves, waits for the host's
    data). ``end_s``, ``end_cylinder``, ``end_head``: the completion of
    the last request and where the head is then (to continue a simulation:
    ``simulate_requests(..., start_s=..., start_cylinder=..., start_head=...)``).
    """

    service_s: np.ndarray
    arrival_s: np.ndarray
    hit: np.ndarray
    seek_s: np.ndarray
    latency_s: np.ndarray
    media_s: np.ndarray
    end_s: float = 0.0
    end_cylinder: int = 0
    end_head: int = 0

    def to_frame(self):
        import pandas as pd
        return pd.DataFrame({name: getattr(self, name)
                             for name in ("service_s", "arrival_s", "hit", "seek_s", "latency_s", "media_s")})


def simulate_requests(params: DriveParameters, is_write, lbn, blocks, interarrival_s, *, start_s: float = 0.0,
                      start_cylinder: int = 0, start_head: int = 0) -> SimulationResult:
    """Simulate requests issued one at a time; returns each one's service time.

    Parameters
    ----------
    params : DriveParameters
    is_write : array_like of bool
    lbn, blocks : array_like of int
        First logical block and length [512-byte blocks] of each request.
    interarrival_s : array_like
        Gap [s] between the completion of request i and the arrival of
        request i+1 (the first request arrives at *start_s*; the last gap is
        unused).
    start_s, start_cylinder, start_head
        Where the simulation starts: the clock [s] (the platter's phase is
        ``t / T_rot mod 1``) and the head; the buffer starts empty.
    """
    is_write, lbn, blocks = check_requests(params, is_write, lbn, blocks)
    gap = finite_array("interarrival_s", interarrival_s, nonnegative=True).ravel()
    n = lbn.size
    if gap.size != n:
        raise ValueError("is_write, lbn, blocks and interarrival_s must have the same length")
    p = params
    if p.constant_access_s is not None:
        return _constant_access(p.constant_access_s, gap, float(start_s), start_cylinder, start_head)
    carried = new_carried(start_s, start_cylinder, start_head, p)
    k = kernel_inputs(p, int(blocks.max()) if n else 1)
    out = np.zeros((OUT_ROWS, n))
    _simulate(k.drive, k.buffer, (is_write, lbn, blocks, gap), False, out, carried)
    end = carried[0]
    return SimulationResult(out[OUT_SERVICE], out[OUT_ARRIVAL], out[OUT_HIT].astype(np.int8), out[OUT_SEEK],
                            out[OUT_LATENCY], out[OUT_MEDIA], float(end["clock_s"]), int(end["cylinder"]),
                            int(end["head"]))


def _constant_access(access_s: float, gap: np.ndarray, start_s: float, start_cylinder: int,
                     start_head: int) -> SimulationResult:
    """Every request completes *access_s* after its arrival: DiskSim's driver "Constant access
    time" (``iodriver_schedule``, src/disksim_iodriver.c, turns the request into its completion
    interrupt at once; neither bus, controller nor disk sees it, so the head stays where it is)."""
    n = gap.size
    # each request arrives its gap after the one before completed
    arrival = start_s + np.concatenate(([0.0], np.cumsum(access_s + gap[:-1]))) if n else np.empty(0)
    zeros = np.zeros(n)
    end = arrival[-1] + access_s if n else start_s
    return SimulationResult(np.full(n, access_s), arrival, np.full(n, int(HitKind.MEDIA), np.int8), zeros,
                            zeros.copy(), zeros.copy(), end, int(start_cylinder), int(start_head))
