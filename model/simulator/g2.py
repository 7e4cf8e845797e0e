"""LBN -> PBN mapping of DiskSim's extent-map g2 layout (``dm_layout_g2``).

DiskSim 4.0's g2 layout (Ganger et al., DiskSim 4.0, ``diskmodel/layout_g2.c``
and ``layout_g2_load.c``) reads the mapping from a raw "Layout Map File": one
*extent* a line, ``blocks`` consecutive logical blocks from ``lbn`` on
consecutive sectors of one track from (cylinder, head, sector), listed in
block order (``ltop`` binary-searches them), and a list of zones (cylinders,
blocks, sectors per track, skews). Re-derived here:

* a block's PBN: its extent's track, the extent's first sector plus the
  block's offset in the extent (``ltop``); its zone: the zone holding its
  cylinder (``find_zone_pbn``, which ``st_pbn``, ``sector_width`` and
  ``pbn_skew_new`` use);
* a sector's width: ``2^32 / spt`` of a revolution, truncated
  (``layout_g2_zone.modspec``, "Blocks per track"); skews in sectors are
  ``(int)skew * width``, in revolutions ``dm_angle_dtoi(skew)``;
* a block's angle, DiskSim's ``pbn_skew_new`` (the layout's ``dm_pbn_skew``):
  its cylinder's skew, plus one cylinder-switch skew for each change of
  cylinder and one track-switch skew for each change of head met walking the
  extents in block order from the cylinder's first extent to the track's
  first extent (the skews of the PBN's zone), plus ``sector * width``.
  A cylinder's skew is what ``precompute_skews`` leaves, followed as it
  runs, quirks included: walking the extents in block order, a cylinder met
  for the first time that is its zone's first (``cyllow``) gets the zone
  skew, any other passes its own skew on to the next cylinder; each extent
  adds, to the *next* cylinder's skew, the cylinder-switch skew where the next
  extent is on another cylinder, else the track-switch skew where it is on
  another head (the last extent is compared with DiskSim's zeroed spare
  entry: cylinder 0, head 0). So a zone's first cylinder starts at the zone
  skew but the next one does not carry it; cylinder 0 keeps 0 (its first
  extent is preset, so it is never "met"); the zone walked is advanced at
  most once per new cylinder (``z++``). All in DiskSim's fixed point
  (``dm_angle_t``: 2^32 to a turn, wrapping).

``ptoa`` (which sets ``*start`` twice) is not used by DiskSim's controller or
mechanics (mech_g1.c calls ``dm_pbn_skew``), so it plays no part here.
:func:`g2_tables` does the walks once; :func:`g2_lbn_to_pbn_one` (a numba
kernel shared with :mod:`diskmodel.model.simulator.simulate` through
:class:`~diskmodel.model.simulator.mapping.G2ZoneLayout`) is then one binary
search. Pure numpy and numba; no I/O.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .g4 import _row_of, angle_dtoi

__all__ = ["G2_EXTENT_FIELDS", "g2_cylinder_skews", "g2_lbn_to_pbn_one", "g2_tables", "g2_zone_angles"]

#: Columns of the kernel's extent table: cylinder, head, first sector, zone
#: (by cylinder), angle of the first sector [2^-32 rev]
G2_EXTENT_FIELDS = ("cyl", "head", "sector", "zone", "angle")
_TURN = 1 << 32
_MASK = _TURN - 1


def g2_zone_angles(spt, skews, units) -> tuple[np.ndarray, np.ndarray]:
    """(sector width, (n, 3) skews: zone, track switch, cylinder switch) in ``dm_angle_t`` (int64).

    *spt*: blocks per track of each zone; *skews*: (n, 3) as written; *units*:
    "sectors" or "revolutions" per zone, or per value ((n, 3): the unit DiskSim's loader had
    when it reached each skew, ``layout_g2_zone.modspec``).
    """
    spt = np.asarray(spt, dtype=np.int64)
    if np.any(spt < 1):
        raise ValueError(f"blocks per track must be >= 1 (got {spt.min()})")
    width = _TURN // spt
    skews = np.asarray(skews, dtype=float).reshape(-1, 3)
    # (int)d * sector_width: C truncates toward zero, the product wraps in 32 bits
    in_sectors = (np.trunc(skews).astype(np.int64) * width[:, None]) & _MASK
    in_turns = angle_dtoi(skews)
    revolutions = np.asarray(units, dtype=object) == "revolutions"
    if revolutions.ndim == 1:
        revolutions = revolutions[:, None]
    return width, np.where(revolutions, in_turns, in_sectors).astype(np.int64)


def g2_cylinder_skews(extents, zone_cylinders, skews, cylinders: int) -> tuple[np.ndarray, np.ndarray]:
    """DiskSim's ``precompute_skews`` (layout_g2_load.c): (skew of each cylinder
    [dm_angle_t], index of each cylinder's first extent, -1 for none).

    *extents*: (n, >= 3) rows (lbn, cylinder, head, ...) in block order;
    *zone_cylinders*: (z, 2) first and last cylinder per zone; *skews*: the
    zones' (zone, track switch, cylinder switch) angles; *cylinders*: the
    disk's (``dm_cyls``). One more entry than *cylinders* is kept, as
    DiskSim writes one past its last cylinder.
    """
    cyl = np.asarray(extents)[:, 1].tolist()
    head = np.asarray(extents)[:, 2].tolist()
    low = [int(v) for v in np.asarray(zone_cylinders)[:, 0]]
    high = [int(v) for v in np.asarray(zone_cylinders)[:, 1]]
    zskew, hsskew, csskew = (np.asarray(skews)[:, k].tolist() for k in range(3))
    size = max(cylinders, max(cyl) + 1) + 1
    skew = [0] * size
    first = [-1] * size
    first[0] = 0
    z = 0
    n = len(cyl)
    for i in range(n):
        c = cyl[i]
        if first[c] == -1:
            first[c] = i
            if high[z] < c:
                z += 1
                if z >= len(low):
                    raise ValueError(f"cylinder {c} (extent {i}) lies past the last zone as DiskSim's "
                                     "precompute_skews walks them")
            if c == low[z]:
                skew[c] = zskew[z]
            else:
                skew[c + 1] = skew[c]
        # the entry past the last is DiskSim's zeroed spare one: cylinder 0, head 0
        c2, h2 = (cyl[i + 1], head[i + 1]) if i + 1 < n else (0, 0)
        if c2 != c:
            skew[c + 1] = (skew[c + 1] + csskew[z]) & _MASK
        elif h2 != head[i]:
            skew[c + 1] = (skew[c + 1] + hsskew[z]) & _MASK
    return np.array(skew, dtype=np.int64), np.array(first, dtype=np.int64)


def g2_tables(extents, zone_cylinders, spt, skews, units, cylinders: int):
    """The kernel's tables of a g2 layout: (first blocks (n + 1: the extents'
    and the end), extents (n, 5) :data:`G2_EXTENT_FIELDS`, sector width per
    zone, (cylinders, heads) angle of sector 0 of each track as DiskSim's
    ``pbn_skew_new`` gives it, -1 where DiskSim has none: no extent there).

    *extents*: (n, 5) rows (lbn, cylinder, head, sector, blocks) in block
    order without gap (as :class:`~diskmodel.data.disksim.model_file.G2Layout`
    holds them); *zone_cylinders* (z, 2), *spt*, *skews* (z, 3) and *units*
    of the zones.
    """
    extents = np.asarray(extents, dtype=np.int64).reshape(-1, 5)
    if not extents.size:
        raise ValueError("a g2 layout needs at least one extent")
    if extents[0, 0] != 0 or np.any(extents[1:, 0] != extents[:-1, 0] + extents[:-1, 4]):
        raise ValueError("g2 extents must cover blocks 0.. in order without gap or overlap")
    zone_cylinders = np.asarray(zone_cylinders, dtype=np.int64).reshape(-1, 2)
    width, angles = g2_zone_angles(spt, skews, units)
    cyl, head = extents[:, 1], extents[:, 2]
    zone = np.searchsorted(zone_cylinders[:, 0], cyl, side="right") - 1
    if np.any(zone < 0) or np.any(cyl > zone_cylinders[np.maximum(zone, 0), 1]):
        raise ValueError("every extent's cylinder must lie in a zone (DiskSim's find_zone_pbn)")
    # every extent's cylinder is met, so first[cyl] >= 0 (cylinder 0's is preset to 0)
    cyl_skew, first = g2_cylinder_skews(extents, zone_cylinders, angles, cylinders)
    heads = int(head.max()) + 1
    # pbn_skew_new: switches met from the cylinder's first extent to the track's first extent
    cyl_changes = np.concatenate(([0], np.cumsum(cyl[1:] != cyl[:-1])))
    head_changes = np.concatenate(([0], np.cumsum(head[1:] != head[:-1])))
    track = cyl * heads + head
    _, track_first = np.unique(track, return_index=True)
    k = np.zeros(track.size, np.int64)
    k[:] = track_first[np.searchsorted(np.unique(track), track)]
    f = first[cyl]
    track_angle = (cyl_skew[cyl] + (cyl_changes[k] - cyl_changes[f]) * angles[zone, 2]
                   + (head_changes[k] - head_changes[f]) * angles[zone, 1]) & _MASK
    rows = np.column_stack((cyl, head, extents[:, 3], zone,
                            (track_angle + extents[:, 3] * width[zone]) & _MASK)).astype(np.int64)
    table = np.full((int(cyl.max()) + 1, heads), -1, np.int64)
    table[cyl, head] = track_angle
    first_lbn = np.append(extents[:, 0], extents[-1, 0] + extents[-1, 4]).astype(np.int64)
    return first_lbn, rows, width.astype(np.int64), table


@njit(cache=True)
def g2_lbn_to_pbn_one(lbn, first_lbn, rows, width):
    """One block: (cylinder, head, sector, angle_rev, zone). Numba kernel.

    *first_lbn*, *rows*, *width*: :func:`g2_tables`. DiskSim's ``ltop`` (the
    extent holding the block) and ``pbn_skew_new`` (its angle).
    """
    e = _row_of(lbn, first_lbn)
    offset = lbn - first_lbn[e]
    z = rows[e, 3]
    a = (rows[e, 4] + offset * width[z]) & _MASK
    return rows[e, 0], rows[e, 1], rows[e, 2] + offset, a / _TURN, z
