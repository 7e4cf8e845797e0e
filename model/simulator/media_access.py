"""The media part of serving a request: moving the head, waiting for the
platter, passing sectors under the head (numba kernels).

After DiskSim 4.0's ``diskmodel/mech_g1.c`` (``dm_seek_time_g1``,
``dm_latency_g1``, ``dm_acctime_g1``), re-derived for requests served one at
a time: the platter turns uniformly from angle 0 at time 0; a move costs the
seek of its cylinder distance, at least the head switch when the surface
changes, plus the write settle before a write; a run of blocks on one track
passes under the head in (last sector - first sector + 1) sector times.
Used by :mod:`diskmodel.model.simulator.simulate`; times in seconds, angles in
revolutions.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .access_block import immediate_read_run, immediate_write_track
from .mapping import lbn_to_pbn_one, steps_over_unmapped_sectors, track_last_from
from .state import (LAYOUT_SECTORS_PER_TRACK, REAL_HEAD_SWITCH_S, REAL_IMMEDIATE_MODE, REAL_IMMEDIATE_READ_G4,
                    REAL_IMMEDIATE_WRITE_G4, REAL_PERIOD_S, REAL_WRITE_SETTLE_S, STAT_LATENCY, STAT_MEDIA, STAT_SEEK)

__all__ = ["access_media", "move_time_s", "wait_for_angle"]

# The kernels run without numba's reference counting (_nrt=False): they allocate nothing, and
# counting the references of the layout's arrays on every call took most of the simulation's
# time (diskmodel.model.simulator.kernel._simulate).

#: An angle this close below a full turn counts as reached: rounding in the
#: phase must not cost a spurious revolution.
_EPS_REV = 1e-7


@njit(cache=True, _nrt=False)
def wait_for_angle(t, angle, period):
    """Time at or after *t* when the platter reaches *angle* [rev]."""
    phase = t / period
    phase -= np.floor(phase)
    d = angle - phase
    d -= np.floor(d)
    if d > 1.0 - _EPS_REV:
        d = 0.0
    return t + d * period


@njit(cache=True, _nrt=False)
def _late_write_on_short_track(arrays, x, c, h, s, a, z, t, t_ready, t_start, period, sector_time, total):
    """(when block *x* of a write is written, the time its track's blocks take to come round
    or 0.0), its data late (ready at *t_ready*, the head on its track at *t*), on a g1 track whose
    last sectors map no block (spares at the track's end, as sparing scheme 8's); *t_start* and
    0.0 on any other track.

    DiskSim 4.0 steps through a track one block a sector time (``disk_buffer_sector_done``,
    src/disksim_diskctlr.c: ``curr->blkno++``, back to the track's first block after its last,
    one ``dm_xfertime`` of a sector each) and writes a block only if its data are in the buffer
    (``disk_buffer_block_available``), so a block whose data come too late comes round again after
    the track's blocks, not after a revolution: the spare sectors pass in no time, and from then on
    the steps, not the platter's angle, say when each block is under the head. cheetah4LP's
    track (5151, 7) holds 47 blocks of 155 sectors: a queued write starting under the head there
    waited 47 sector times in DiskSim (1.81 ms), a revolution (5.99 ms) in the simulation
    (tests/golden/disksim_variants cheetah4LP_queued_writes, request 394). Tracks with slips
    inside are left as they were (not checked)."""
    t_head = wait_for_angle(t, a, period)
    if t_ready <= t_head:
        return t_start, 0.0
    last, s_last = track_last_from(arrays, x, c, h, s, z, total)
    if s_last >= arrays[LAYOUT_SECTORS_PER_TRACK][z] - 1 or last - x != s_last - s or x - s < 0:
        return t_start, 0.0
    c0, h0, s0, _, _ = lbn_to_pbn_one(x - s, arrays)
    if c0 != c or h0 != h or s0 != 0:
        return t_start, 0.0
    cycle = (s_last + 1) * sector_time
    return t_head + np.ceil((t_ready - t_head) / cycle) * cycle, cycle


@njit(cache=True, _nrt=False)
def move_time_s(cyl, head, to_cyl, to_head, seek, write_seek, head_switch, write_settle, is_write):
    """Time [s] to move the head to (to_cyl, to_head): the seek of the distance, at
    least the head switch when the surface changes, plus the write settle for a
    write that moves (a negative settle never makes a move cost < 0)."""
    distance = abs(to_cyl - cyl)
    if is_write:
        s = write_seek[distance]
    else:
        s = seek[distance]
    if to_head != head and head_switch > s:
        s = head_switch
    if s > 0.0 and is_write:
        s += write_settle
        if s < 0.0:
            s = 0.0
    return s


@njit(cache=True, _nrt=False)
def access_media(arrays, seek, write_seek, real, start_lbn, count, t, cyl, head, is_write, not_before, ready,
                 offset, stats, min_first_move, total):
    """Read or write *count* blocks from *start_lbn*, starting to move at *t*.

    Works track run by track run: a run of blocks on one track passes under
    the head in (last sector - first sector + 1) sector times (slipped
    sectors included; a g2 track's unmapped sectors not, as DiskSim steps a
    block a sector time there: ``steps_over_unmapped_sectors``). Fills ready[offset + k] with the time block k is
    done; returns (t_end, cyl, head). stats: first move, first rotational
    latency (for a write, from when both the head and the first block's
    data are ready: under one revolution), rest.
    A write waits, sector by sector, for its data (*not_before*); a sector
    whose data come too late costs a revolution.
    A read's first track is DiskSim's immediate access when ``real[REAL_IMMEDIATE_MODE]`` is 1
    ("Read any free blocks" with the mended ``g1_access_block``:
    :mod:`diskmodel.model.simulator.access_block`), and each track of a read is when
    ``real[REAL_IMMEDIATE_READ_G4]`` is 1 ("Immediate buffer read" on a g4 layout:
    :func:`~diskmodel.model.simulator.access_block.immediate_read_run`, mode 2); each track of a
    write is when ``real[REAL_IMMEDIATE_WRITE_G4]`` is 1 ("Immediate buffer write" on a g4 layout:
    :func:`~diskmodel.model.simulator.access_block.immediate_write_track`).
    """
    period = real[REAL_PERIOD_S]
    immediate = int(real[REAL_IMMEDIATE_MODE]) if real.size > REAL_IMMEDIATE_MODE else 0
    immediate_write = real.size > REAL_IMMEDIATE_WRITE_G4 and real[REAL_IMMEDIATE_WRITE_G4] != 0.0
    immediate_read_g4 = real.size > REAL_IMMEDIATE_READ_G4 and real[REAL_IMMEDIATE_READ_G4] != 0.0
    head_switch = real[REAL_HEAD_SWITCH_S]
    write_settle = real[REAL_WRITE_SETTLE_S]
    t_begin = t
    k = 0
    first_run = True
    step_over = steps_over_unmapped_sectors(arrays)
    written_on_track = False
    cycle = 0.0     # a write's blocks come round after this on a short track (_late_write_on_short_track)
    while k < count:
        x = start_lbn + k
        c, h, s, a, z = lbn_to_pbn_one(x, arrays)
        sector_time = period / arrays[LAYOUT_SECTORS_PER_TRACK][z]
        if first_run or c != cyl or h != head:
            move = move_time_s(cyl, head, c, h, seek, write_seek, head_switch, write_settle, is_write)
            if first_run and move < min_first_move:
                move = min_first_move
            t += move
            if first_run:
                stats[STAT_SEEK] = t - t_begin
            cyl = c
            head = h
            written_on_track = False
            cycle = 0.0
        if is_write:
            if immediate_write and not written_on_track:
                # a zero-latency write landing inside its span starts under the head
                last, _ = track_last_from(arrays, x, c, h, s, z, total)
                if last > start_lbn + count - 1:
                    last = start_lbn + count - 1
                t_imm = immediate_write_track(arrays, period, x, last - x + 1, c, h, s, a, z, t, not_before, k, ready,
                                              offset + k, total)
                if t_imm >= 0.0:
                    if first_run:
                        stats[STAT_LATENCY] = 0.0      # no wait for a first block, as the immediate read
                    t = t_imm
                    k += last - x + 1
                    written_on_track = True
                    first_run = False
                    continue
            # block by block: each sector needs its data
            t_ready = t
            if not_before[k] > t_ready:
                t_ready = not_before[k]
            if cycle > 0.0:
                # on a short track once round: DiskSim's steps, one block a sector time, not the platter's
                # angle (_late_write_on_short_track)
                t_start = t
                if t_ready > t:
                    t_start = t + np.ceil((t_ready - t) / cycle) * cycle
            elif step_over and written_on_track:
                # g2: DiskSim writes the track's next block one sector time on, its unmapped
                # sectors skipped (steps_over_unmapped_sectors): the head's angle now, not the block's
                phase = t / period
                t_start = wait_for_angle(t_ready, phase - np.floor(phase), period)
            else:
                t_start = wait_for_angle(t_ready, a, period)
                if t_ready > t and not step_over:
                    t_start, cycle = _late_write_on_short_track(arrays, x, c, h, s, a, z, t, t_ready, t_start, period,
                                                                sector_time, total)
            if first_run:
                # the rotational wait only; a wait for the host's data is in the rest (media)
                stats[STAT_LATENCY] = t_start - t_ready
            t = t_start + sector_time
            ready[offset + k] = t
            written_on_track = True
            k += 1
            first_run = False
            continue
        last, s_last = track_last_from(arrays, x, c, h, s, z, total)
        if last > start_lbn + count - 1:
            last = start_lbn + count - 1
            _, _, s_last, _, _ = lbn_to_pbn_one(last, arrays)
        run = last - x + 1
        mode = 0
        if immediate == 1 and first_run:
            mode = 1
        elif immediate_read_g4:
            mode = 2        # every track the read reaches (each a new track: a run ends at its track's end)
        if mode != 0:
            # an immediate access landing inside its span starts under the head
            t_imm = immediate_read_run(arrays, period, mode, x, run, c, h, s, a, z, t, ready, offset + k, total)
            if t_imm >= 0.0:
                if first_run:
                    stats[STAT_LATENCY] = 0.0  # no wait for a first block: the wait for the boundary is in the rest
                t = t_imm
                k += run
                first_run = False
                continue
        t_start = wait_for_angle(t, a, period)
        if first_run:
            stats[STAT_LATENCY] = t_start - t
        span = s_last - s + 1 if run > 1 else 1
        if step_over:
            # g2: one sector time a block, the track's unmapped sectors skipped (steps_over_unmapped_sectors)
            span = run
        for j in range(run - 1):
            ready[offset + k + j] = t_start + (j + 1) * sector_time
        t = t_start + span * sector_time
        ready[offset + k + run - 1] = t
        k += run
        first_run = False
    stats[STAT_MEDIA] = t - t_begin - stats[STAT_SEEK] - stats[STAT_LATENCY]
    return t, cyl, head

