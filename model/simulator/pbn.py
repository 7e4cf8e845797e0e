"""The block mapping as numba kernels: a logical block's (cylinder, head, sector, angle, zone) and
its track's bounds, for the layouts of :mod:`diskmodel.model.simulator.mapping` (their
``kernel_arrays`` tuple, compiled once per layout kind: g1, g4, g2), after DiskSim 4.0's
``diskmodel/layout_g1.c``, ``layout_g4.c`` and ``layout_g2.c``.

Pure model code, no I/O.
"""
from __future__ import annotations


import numpy as np
from numba import njit
from numba.extending import overload

from .g2 import g2_lbn_to_pbn_one
from .g4 import _row_of as _zone_of  # one binary search over first blocks, g1 zones and g4 rows alike
from .g4 import g4_lbn_to_pbn_one
from .state import (LAYOUT_FIRST_LBN, LAYOUT_SECTORS_PER_TRACK, LAYOUT_SHAPE, LAYOUT_TABLE_A, LAYOUT_TABLE_B,
                    LAYOUT_TABLE_C, SHAPE_MAPPING_SCHEME, SHAPE_RANGESIZE, SHAPE_SPARING_SCHEME, SHAPE_SURFACES)


def lbn_to_pbn_one(lbn, arrays):
    """One block: (cylinder, head, sector, angle_rev, zone). Numba kernel (for njit code).

    *arrays*: :meth:`ZoneLayout.kernel_arrays` (a g4 layout's "zone" is its
    leaf range). Which layout is chosen when the caller is compiled, by the
    length of *arrays* (a run-time test made the g1 mapping about 1.7 times slower).
    """
    raise NotImplementedError("lbn_to_pbn_one is for numba-compiled code; use ZoneLayout.lbn_to_pbn")


# Compiled once per layout kind, not inlined at numba's IR level (inline="always" typed and
# lowered the whole g1 mapping again at each of its ~45 call sites, multiplying the kernel's
# compile time). The g1 mapping is inlined by LLVM (forceinline: a plain call
# made the simulation a quarter slower); g4 and g2 call their kernel (forceinline, which the
# functions compiled from it inherit, would inline g4_lbn_to_pbn_one at every site too).
# _nrt=False: allocates nothing (see _map_many).
@overload(lbn_to_pbn_one, jit_options={"_nrt": False, "forceinline": True})
def _lbn_to_pbn_one_g1(lbn, arrays):
    if len(arrays) != _G4_TUPLE and len(arrays) != _G2_TUPLE:
        return _g1_lbn_to_pbn_one
    return None


@overload(lbn_to_pbn_one, jit_options={"_nrt": False})
def _lbn_to_pbn_one_g4_g2(lbn, arrays):
    if len(arrays) == _G4_TUPLE:
        def g4(lbn, arrays):
            return g4_lbn_to_pbn_one(lbn, arrays[LAYOUT_FIRST_LBN], arrays[LAYOUT_TABLE_A], arrays[LAYOUT_TABLE_B],
                                     arrays[LAYOUT_TABLE_C])
        return g4
    if len(arrays) == _G2_TUPLE:
        def g2(lbn, arrays):
            return g2_lbn_to_pbn_one(lbn, arrays[LAYOUT_TABLE_A], arrays[LAYOUT_TABLE_B], arrays[LAYOUT_TABLE_C])
        return g2
    return None


_G4_TUPLE = 16
_G2_TUPLE = 17


def steps_over_unmapped_sectors(arrays):
    """Whether the media pass a track's unmapped sectors in no time (a g2 layout). For njit code.

    DiskSim's controller reads and writes a track one block a sector time
    (``disk_buffer_sector_done``, src/disksim_diskctlr.c: ``curr->blkno++`` and
    one ``dm_xfertime`` of a sector per step), so the sectors of a g2 track
    that no extent maps (``ptol`` gives ``DM_NX``) cost nothing: DiskSim 4.0's
    own times on the odd g2 map of tests/golden/disksim_g2 (a write over 3
    unmapped sectors took 3 sector times less than the platter's turn would;
    a 2-block read over them 0.105 ms less, the rest hidden behind the bus).
    A constant when the caller is compiled (by the length of *arrays*, as
    :func:`lbn_to_pbn_one`): g1 and g4 layouts keep their code and speed, and
    g1's slipped sectors keep their time (whether DiskSim passes those in no
    time too was not checked).
    """
    raise NotImplementedError("steps_over_unmapped_sectors is for numba-compiled code")


@overload(steps_over_unmapped_sectors, jit_options={"_nrt": False})
def _steps_over_unmapped_sectors_for(arrays):
    flag = len(arrays) == _G2_TUPLE

    def constant(arrays):
        return flag
    return constant


def _g1_lbn_to_pbn_one(lbn, arrays):
    # compiled as lbn_to_pbn_one's implementation for g1 tuples
    (first_lbn, first_cyl, spt_a, dead, spares, first_off, tskew, cskew, sp_ptr, sp_val, misc,
     df_ptr, df_val) = arrays
    surfaces = misc[SHAPE_SURFACES]
    scheme = misc[SHAPE_SPARING_SCHEME]
    mapping = misc[SHAPE_MAPPING_SCHEME]
    rangesize = misc[SHAPE_RANGESIZE]
    z = _zone_of(lbn, first_lbn)
    spt = spt_a[z]
    l = lbn - first_lbn[z] + dead[z]
    s0 = sp_ptr[z]
    s1 = sp_ptr[z + 1]
    d0 = df_ptr[z]
    d1 = df_ptr[z + 1]
    per_cyl = spt * surfaces
    if scheme == 1:
        track = l // spt
        for i in range(s0, s1):
            if sp_val[i] <= track:
                track += 1
        for i in range(d0, d1):
            # g1_ltop_trackspare: the defective track's blocks move to the remap track
            if df_val[i, 0] == track:
                track = df_val[i, 1]
                break
        cyl_in_zone = track // surfaces
        head = track % surfaces
        sector = l % spt
    elif scheme == 3:
        # g1_ltop_sectpertrackspare: spares at the end of every track
        lbn_per_track = spt - spares[z]
        track = l // lbn_per_track
        l = l % lbn_per_track
        first_on_track = track * spt
        for i in range(s0, s1):
            if sp_val[i] >= first_on_track and sp_val[i] - first_on_track <= l:
                l += 1
        at = first_on_track + l
        for i in range(d0, d1):
            # g1_ltop_sectpertrackspare: every match moves the block (the last wins)
            if df_val[i, 0] == at:
                track = df_val[i, 1] // spt
                l = df_val[i, 1] % spt
        cyl_in_zone = track // surfaces
        head = track % surfaces
        sector = l
    elif scheme == 2 or scheme == 4 or scheme == 5 or scheme == 6 or scheme == 7:
        lbn_per_cyl = per_cyl - spares[z]
        cyl_in_zone = l // lbn_per_cyl
        l = l % lbn_per_cyl
        first_on_cyl = cyl_in_zone * per_cyl
        slips = 0
        to_end = scheme == 4 or scheme == 6 or scheme == 7
        for i in range(s0, s1):
            s = sp_val[i]
            if (to_end and s // per_cyl < cyl_in_zone) or (s >= first_on_cyl and s - first_on_cyl <= l + slips):
                slips += 1
        l += slips
        moved = False
        for i in range(d0, d1):
            # g1_ltop_sectpercylspare: the first defect remapped elsewhere moves the block
            if df_val[i, 0] == first_on_cyl + l and df_val[i, 1] != df_val[i, 0]:
                cyl_in_zone = df_val[i, 1] // per_cyl
                l = df_val[i, 1] % per_cyl
                moved = True
                break
        if not moved:
            cyl_in_zone += l // lbn_per_cyl
            l = l % lbn_per_cyl
        head = l // spt
        sector = l % spt
    elif scheme == 8:
        per_range = per_cyl * rangesize
        lbn_per_range = per_range - spares[z]
        rangeno = l // lbn_per_range
        l = l % lbn_per_range
        first_in_range = rangeno * per_range
        slips = 0
        for i in range(s0, s1):
            s = sp_val[i]
            if s >= first_in_range and s - first_in_range <= l + slips:
                slips += 1
        l += slips
        for i in range(d0, d1):
            # g1_ltop_sectperrangespare: moved within the range
            if df_val[i, 0] == first_in_range + l and df_val[i, 1] != df_val[i, 0]:
                l = df_val[i, 1] % per_range
                break
        cyl_in_zone = rangeno * rangesize + l // per_cyl
        head = (l % per_cyl) // spt
        sector = l % spt
    elif scheme == 9 or scheme == 10:
        slips = 0
        for i in range(s0, s1):
            if sp_val[i] <= l + slips:
                slips += 1
        l += slips
        for i in range(d0, d1):
            # g1_ltop_sectperzonespare: moved within the zone
            if df_val[i, 0] == l and df_val[i, 1] != df_val[i, 0]:
                l = df_val[i, 1]
                break
        cyl_in_zone = l // per_cyl
        head = (l % per_cyl) // spt
        sector = l % spt
    else:
        cyl_in_zone = l // per_cyl
        head = (l // spt) % surfaces
        sector = l % spt
    cylinder = first_cyl[z] + cyl_in_zone
    logical_head = head
    if (mapping == 1 and cyl_in_zone % 2 == 1) or (mapping == 2 and cylinder % 2 == 1):
        head = surfaces - head - 1
    # angle (g1_map_pbn_skew): the logical track index counts the switches
    switches = logical_head + (surfaces - 1) * cyl_in_zone
    offset = first_off[z] + switches * tskew[z] + cyl_in_zone * cskew[z] + sector
    if scheme == 2 or scheme == 3 or scheme == 4 or scheme == 5 or scheme == 6:
        # g1_map_pbn_skew: slips before the track (scheme 3) or cylinder push the skew on,
        # for the per-cylinder and per-track schemes only (issectpercyl: not 7, "at end")
        cutoff = (cyl_in_zone * surfaces + (logical_head if scheme == 3 else 0)) * spt
        for i in range(s0, s1):
            if sp_val[i] < cutoff:
                offset += 1
    # offset mod spt without a float modulo (numba's calls fmod, a tenth of the simulation's time)
    turns = offset / spt
    angle = turns - np.floor(turns)
    return cylinder, head, sector, angle, z


# _nrt=False: allocates nothing; numba's reference counting of the unpacked layout arrays costs
# more than the mapping itself
@njit(cache=True, _nrt=False)
def _map_many(lbn, arrays, cylinder, head, sector, angle, zone):
    for i in range(lbn.size):
        c, h, s, a, z = lbn_to_pbn_one(lbn[i], arrays)
        cylinder[i] = c
        head[i] = h
        sector[i] = s
        angle[i] = a
        zone[i] = z


# ---------------------------------------------------------------------------
# Track and cylinder boundaries (numba kernels of the per-request simulation)
# ---------------------------------------------------------------------------
# (_nrt=False, as _map_many: no allocation, and numba's reference counting of the layout's
# arrays on every call took most of the simulation's time)

@njit(cache=True, _nrt=False)
def _same_track(arrays, lbn, cyl, head):
    c, h, _, _, _ = lbn_to_pbn_one(lbn, arrays)
    return c == cyl and h == head


@njit(cache=True, _nrt=False)
def track_last_from(arrays, lbn, c, h, s, z, total):
    """(last block, its sector) on the track (c, h) holding *lbn*, whose sector
    *s* and zone *z* are known.

    The block ``spt - 1 - s`` later is the track's last when it lies on the same
    track (no slip or spare between: its sector is then spt - 1); otherwise a
    binary search (slips only push blocks later).
    """
    hi = lbn + arrays[LAYOUT_SECTORS_PER_TRACK][z] - 1 - s
    if hi > total - 1:
        hi = total - 1
    if hi == lbn:
        return lbn, s
    c2, h2, s2, _, _ = lbn_to_pbn_one(hi, arrays)
    if c2 == c and h2 == h:
        return hi, s2
    hi -= 1
    lo = lbn
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _same_track(arrays, mid, c, h):
            lo = mid
        else:
            hi = mid - 1
    _, _, s2, _, _ = lbn_to_pbn_one(lo, arrays)
    return lo, s2


@njit(cache=True, _nrt=False)
def track_last_lbn(arrays, lbn, total):
    """The last block on the track holding *lbn*."""
    c, h, s, _, z = lbn_to_pbn_one(lbn, arrays)
    last, _ = track_last_from(arrays, lbn, c, h, s, z, total)
    return last


@njit(cache=True, _nrt=False)
def track_first_lbn(arrays, lbn, lowest):
    """The first block >= *lowest* on the track holding *lbn*.

    The block *sector* earlier is the track's first when it lies on the same
    track at sector 0 (no slip between); otherwise a binary search.
    """
    c, h, s, _, _ = lbn_to_pbn_one(lbn, arrays)
    guess = lbn - s
    if guess < lowest:
        guess = lowest
    c2, h2, s2, _, _ = lbn_to_pbn_one(guess, arrays)
    if c2 == c and h2 == h and (guess == lowest or s2 == 0):
        return guess
    lo = guess
    hi = lbn
    while lo < hi:
        mid = (lo + hi) // 2
        if _same_track(arrays, mid, c, h):
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, _nrt=False)
def track_end_lbn(arrays, lbn, total):
    """One past the last block on the track holding *lbn*."""
    return track_last_lbn(arrays, lbn, total) + 1


@njit(cache=True, _nrt=False)
def cylinder_end_lbn(arrays, lbn, total):
    """One past the last block on the cylinder holding *lbn*."""
    c, _, _, _, z = lbn_to_pbn_one(lbn, arrays)
    hi = lbn + arrays[LAYOUT_SECTORS_PER_TRACK][z] * arrays[LAYOUT_SHAPE][SHAPE_SURFACES]
    if hi > total - 1:
        hi = total - 1
    lo = lbn
    while lo < hi:
        mid = (lo + hi + 1) // 2
        c2, _, _, _, _ = lbn_to_pbn_one(mid, arrays)
        if c2 == c:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1
