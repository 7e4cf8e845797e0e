"""An immediate (zero-latency) read access that starts under the head, for the per-request simulation.

numba helpers of :func:`diskmodel.model.simulator.media_access.access_media` and
:func:`diskmodel.model.simulator.simulate.simulate_requests`'s kernel, after DiskSim's design as its
manual and DiskSim 3.0 define it and as DiskSim 4.0's code does once the test of
``g1_access_block`` (``diskmodel/mech_g1.c``) takes the layout's success value for success
(4.0 tests the conversion's result for a negative value, and its success value is negative, so
4.0 always starts at the first wanted sector: ``DriveParameters.immediate_access_under_head``
False reproduces that).

A read access is *immediate* on a track where DiskSim's ``disk_buffer_seekdone`` calls
``dm_latency`` and ``dm_access_block`` with ``immed`` set; followed here: with "Read any free
blocks", the first track of a read that does not start at the track's first block (the one
case checked against the mended build: tests/golden/disksim_fixed), and with "Immediate buffer
read" on a g4 layout every track of a read (DiskSim 4.0's own code: ``g4_atop`` finds the sector
under the head; :func:`immediate_read_run`, mode 2). DiskSim's access there runs from the wanted block's
sector to the track's end (its length is the track's block count, its end clipped to the last
sector). When the head lands strictly inside that span, the access starts at the next sector
boundary under the head, reads to the end of the track, and wraps round to the track's first
sector (``dm_latency_g1``, ``g1_access_block``). The blocks it wants from that boundary on are
read first but reach the segment (``seg->endblkno``, which the host follows) only when the
blocks before them have been read on the way round (``disk_buffer_sector_done``: ``immedstart``,
``immedend``); with "Read any free blocks" the track's blocks before the first wanted one, read
on the way round, join the segment (``disk_buffer_sector_done``: ``seg->startblkno =
currblkno``). A head landing before the wanted sector, or within the track's last sector, waits
for the wanted sector as without it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .mapping import lbn_to_pbn_one, track_first_lbn, track_last_from
from .state import LAYOUT_SECTORS_PER_TRACK

__all__ = []

#: A head this close to a sector boundary [sectors] is on it (rounding of the phase)
_EPS_SECTOR = 1e-6
#: As media_access._EPS_REV: an angle this close below a full turn is reached
_EPS_REV = 1e-7
#: A write's head this close past its wanted sector's start [sectors] is at it (immediate_write_track)
_AT_SECTOR = 1e-3


@njit(cache=True, _nrt=False)
def _track_span(arrays, x, c, h, s, z, total):
    """Block *x*'s track (at sector *s*): its first block, its last, and the last sector of a
    zero-latency access from *s* (the track's block count from *s*, at most the track's last sector:
    ``dm_latency_g1``, ``g1_access_block``)."""
    first = track_first_lbn(arrays, x, 0)
    last, _ = track_last_from(arrays, x, c, h, s, z, total)
    end = s + last - first
    if end > arrays[LAYOUT_SECTORS_PER_TRACK][z] - 1:
        end = arrays[LAYOUT_SECTORS_PER_TRACK][z] - 1
    return first, last, end


@njit(cache=True, _nrt=False)
def _immediate_track(arrays, mode, x, c, h, s, z, total):
    """Whether the access of block *x* (cylinder c, head h, sector s, zone z) on its track is
    immediate, and DiskSim's span there: (first wanted sector s, last sector of the span, the
    track's first and last blocks), or (-1, -1, 0, 0). *mode*: 0 none, 1 "Read any free blocks"
    (a read's first track, unless it starts at the track's first block: ``disk_buffer_seekdone``;
    the caller asks for the first track only), 2 "Immediate buffer read" on a g4 layout (every
    track a read's access reaches: ``disk_buffer_seekdone`` passes ``currdisk->immed``). The span's
    length is the track's block count from s, its end at most the track's last sector
    (``dm_latency_g1``, ``g1_access_block``); an access of one sector is never started under the
    head (their "corner case")."""
    if mode == 0:
        return -1, -1, 0, 0
    first, last, end = _track_span(arrays, x, c, h, s, z, total)
    if (mode == 1 and first == x) or end <= s:
        return -1, -1, 0, 0
    return s, end, first, last


@njit(cache=True, _nrt=False)
def _head_sectors(period, s, a, spt, t):
    """Where the head is at *t* on the track whose sector *s* starts at angle *a* [rev]: sectors
    from the track's sector 0, in [0, spt)."""
    phase = t / period
    phase -= np.floor(phase)
    u = phase - (a - s / spt)
    u -= np.floor(u)
    return u * spt


@njit(cache=True, _nrt=False)
def _start_under_head(arrays, period, s, end, a, z, t):
    """The sector where an immediate access of the span (*s* .. *end*; sector s at angle *a*
    [rev]) starts when the head lands at *t*: the next sector boundary under the head when it
    lands strictly inside the span (``g1_access_block``: the head's angle from the track's
    sector 0 rounded up to a sector), else -1 (the access waits for sector s)."""
    u = _head_sectors(period, s, a, arrays[LAYOUT_SECTORS_PER_TRACK][z], t)
    if u <= s + _EPS_SECTOR or u >= end - _EPS_SECTOR:
        return -1
    return int(np.ceil(u - _EPS_SECTOR))


@njit(cache=True, _nrt=False)
def _sector_start(arrays, period, x, s, sb, last, a, spt, t):
    """Where an access under the head starts: (the time at or after *t* when sector *sb* of the
    track begins [s], the track's first block at or after sector *sb*), for block *x* at sector *s*
    and angle *a* [rev] and the track's last block *last* (a slip only pushes blocks to later
    sectors, so the block is at most sb - s blocks after x)."""
    a_b = a + (sb - s) / spt
    a_b -= np.floor(a_b)
    phase = t / period
    d = a_b - (phase - np.floor(phase))
    d -= np.floor(d)
    if d > 1.0 - _EPS_REV:
        d = 0.0
    lo = x + 1
    hi = x + sb - s
    if hi > last + 1:
        hi = last + 1
    if hi <= last:
        _, _, sm, _, _ = lbn_to_pbn_one(hi, arrays)
        if sm == sb:
            lo = hi             # no slip between: the block sb - s after x (sectors rise with blocks)
    while lo < hi:
        mid = (lo + hi) // 2
        _, _, sm, _, _ = lbn_to_pbn_one(mid, arrays)
        if sm >= sb:
            hi = mid
        else:
            lo = mid + 1
    return t + d * period, lo


@njit(cache=True, _nrt=False)
def immediate_read_run(arrays, period, mode, x, run, c, h, s, a, z, t, ready, at, total):
    """Read the *run* blocks from *x* on one track (the head there at *t*) as DiskSim's immediate
    access does, if the head lands inside its span: fills ``ready[at + j]``, when block x + j is
    in the segment (the blocks read before the way round with the last block before them), and
    returns when the access is done with the track (its last block in the segment); -1.0 when
    the access is not immediate or the head lands outside, for the caller's ordinary read.
    *mode* as :func:`_immediate_track`. In mode 2 (a g4 layout, where ``g1_access_block``'s
    ``g4_atop`` finds the sector under the head) a head at its wanted sector's start (within
    ``_AT_SECTOR``: an access following on from the one before, as the read-ahead after its read)
    reads as the ordinary read, and a step is DiskSim's fixed-point sector time (:func:`_step_s`),
    as for :func:`immediate_write_track`; the run read from the head's sector is the wanted blocks
    from there (``disk_buffer_sector_done``: ``currblkno > firstblkno`` before ``lastblkno``, the
    read's end or the read-ahead's limit on the track; a read's ``inblkno`` is its first block)."""
    near = _AT_SECTOR if mode == 2 else _EPS_SECTOR
    if _head_sectors(period, s, a, arrays[LAYOUT_SECTORS_PER_TRACK][z], t) <= s + near:
        return -1.0             # before the wanted sector (the common case; the span's bounds not needed)
    s0, end, first, last = _immediate_track(arrays, mode, x, c, h, s, z, total)
    if s0 < 0:
        return -1.0
    sb = _start_under_head(arrays, period, s0, end, a, z, t)
    if sb < 0:
        return -1.0
    spt = arrays[LAYOUT_SECTORS_PER_TRACK][z]
    sector_s = _step_s(period, spt) if mode == 2 else period / spt
    t_b, x_b = _sector_start(arrays, period, x, s, sb, last, a, spt, t)
    # From there DiskSim steps block by block, one sector time each (disk_buffer_sector_done:
    # curr->blkno++, and from the track's last block to its first), so the unmapped sectors it
    # passes (slips, spares after the last block) take no time on the way.
    under = run                  # the first of the run's blocks read before the way round
    for j in range(run):
        if x + j >= x_b:
            steps = x + j - x_b
            if under == run:
                under = j
        else:
            steps = last + 1 - x_b + x + j - first
        ready[at + j] = t_b + (steps + 1) * sector_s
    if 0 < under < run:
        for j in range(under, run):
            ready[at + j] = ready[at + under - 1]
    return ready[at + run - 1]


@njit(cache=True, _nrt=False)
def kept_track_front(arrays, period, mode, first, t_land, total):
    """With "Read any free blocks", the block from which a read miss starting at *first* keeps
    its track in the segment when its immediate access (head landing at *t_land*) wraps round:
    the track's first block (``disk_buffer_sector_done`` sets ``seg->startblkno`` to the blocks
    read before the wanted one); *first* itself when the head lands outside."""
    c, h, s, a, z = lbn_to_pbn_one(first, arrays)
    if _head_sectors(period, s, a, arrays[LAYOUT_SECTORS_PER_TRACK][z], t_land) <= s + _EPS_SECTOR:
        return first
    s0, end, _, _ = _immediate_track(arrays, mode, first, c, h, s, z, total)
    if s0 < 0 or _start_under_head(arrays, period, s0, end, a, z, t_land) < 0:
        return first
    return track_first_lbn(arrays, first, 0)


@njit(cache=True, _nrt=False)
def _step_s(period, spt):
    """DiskSim's time [s] of one step of ``disk_buffer_sector_done`` on a g4 track of *spt* sectors:
    ``dm_xfertime_g1`` of one sector, ``dm_rottime_g1`` of the sector width (``g4_sector_width``,
    ``dm_angle_dtoi(1.0 / spt)``) in DiskSim's fixed point: the angle's low 12 bits dropped, times
    the period in picoseconds (``dm_time_dtoi``), over 2^20. A hair under the sector's time
    (2.710 us for 2.713 on G4_4TB's 3072-sector tracks), which adds up over a revolution of
    steps."""
    sw = np.int64(4294967296.0 / spt)
    rot_ps = np.int64(period * 1e12)
    return np.float64(((sw >> 12) * rot_ps) >> 20) * 1e-12


@njit(cache=True, _nrt=False)
def immediate_write_track(arrays, period, x, m, c, h, s, a, z, t, not_before, nb0, ready, k0, total):
    """Write the *m* blocks from *x* on one track (block x + j's data in the buffer from
    ``not_before[nb0 + j]``; fills ``ready[k0 + j]``, when it is done), the head on the track at
    *t*, as DiskSim 4.0 writes with "Immediate buffer write" on a g4 layout; returns when the access
    is done with the track, or -1.0 when the head does not land inside the span of a wanted block
    not yet at the span's end (the caller's ordinary write gives DiskSim's times there).

    ``disk_buffer_seekdone`` calls ``dm_latency`` and ``dm_access_block`` with ``immed`` on every
    track of the write, its span from the first wanted block's sector over the track's block
    count (clipped to the last sector). On a g4 layout ``g1_access_block``'s conversion succeeds
    (``g4_atop`` returns the block, not 4.0's negative ``DM_OK`` slip of g1 layouts), so a head
    landing strictly inside the span starts at the next sector boundary
    (:func:`_start_under_head`). From there ``disk_buffer_sector_done`` steps block by block, a
    sector time each (from the track's last block to its first), a block's sector counting only
    if its data are in the buffer when the sector starts (``disk_buffer_block_available``: from
    the next block to write, ``inblkno``, to ``seg->endblkno``): the next block to write is
    written; another one past it starts a run (``immedstart``, ``immedend``), the following one
    extends it, one further on starts it afresh (the run before is forgotten and written again
    when its blocks come round); when the next block to write reaches the run, the run joins it
    (``firstblkno = immedend``), its blocks done then."""
    if _head_sectors(period, s, a, arrays[LAYOUT_SECTORS_PER_TRACK][z], t) <= s + _AT_SECTOR:
        # before the wanted sector, or at its start: the ordinary write (a queued write's access
        # following on from the one before starts a hair past its sector,
        # writequeue._chain, where DiskSim's times at 1 are those of the ordinary write:
        # tests/test_disksim_random.py's several write segments)
        return -1.0
    first, last, end = _track_span(arrays, x, c, h, s, z, total)
    spt = arrays[LAYOUT_SECTORS_PER_TRACK][z]
    if end <= s:
        return -1.0
    sb = _start_under_head(arrays, period, s, end, a, z, t)
    if sb < 0:
        return -1.0
    _, _, s_m, _, _ = lbn_to_pbn_one(x + m - 1, arrays)
    if sb > s_m:
        return -1.0             # past the wanted blocks: they are written as they come round
    sector_s = _step_s(period, spt)
    t_b, q = _sector_start(arrays, period, x, s, sb, last, a, spt, t)
    end_b = x + m
    nxt = x                 # inblkno: the next block to write
    run_s = -1              # immedstart (-1: none), immedend
    run_e = -1
    t0 = t_b
    while True:
        t1 = t0 + sector_s
        if nxt <= q < end_b and not_before[nb0 + q - x] <= t0:
            if q == nxt:
                ready[k0 + q - x] = t1
                nxt += 1
                if nxt == run_s:
                    for j in range(run_s, run_e):
                        ready[k0 + j - x] = t1
                    nxt = run_e
                    run_s = -1
                    run_e = -1
                if nxt >= end_b:
                    return t1
            elif run_s < 0 or q > run_e:
                run_s = q
                run_e = q + 1
            elif q == run_e:
                run_e += 1
        t0 = t1
        q = first if q >= last else q + 1
