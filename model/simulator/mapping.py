"""LBN -> PBN mapping with spare sectors, slips and defects (DiskSim's g1 layout; kernels shared with g4).

:class:`diskmodel.model.Geometry` lays blocks out track by track with no
spares. Real drives reserve spare sectors or tracks and *slip* defective ones,
which shifts every later block of the zone (and, for some schemes, the skew).
This module follows the mapping of DiskSim's ``dm_layout_g1`` (Ganger et al.,
DiskSim 4.0, diskmodel/layout_g1.c, functions ``g1_ltop_*`` and
``g1_map_pbn_skew``), re-derived here:

* every sparing scheme of DiskSim's ``layout_g1.h``: 0 (none), 1 (spare
  tracks at the end of each zone, slips are track numbers), 2/4/5/6/7 (spare
  sectors per cylinder; 4, 6 and 7 "slip to end": a slip in an earlier
  cylinder moves later blocks by one), 3 (spare sectors per track,
  ``g1_ltop_sectpertrackspare``), 8 (spare sectors per range of ``rangesize``
  cylinders), 9/10 (spare sectors per zone); slips are sector numbers within
  the zone (tracks for scheme 1), counted in the order the file lists them
  (whether a slip counts can depend on those counted before it);
* mapping schemes 0 (head order 0..S-1 on every cylinder), 1 (reversed on
  every odd cylinder of a zone), 2 (reversed on every odd cylinder);
* "Empty space at zone front" [sectors] skipped before the first block;
* the angle of a block: offset of the zone's first block + one track skew per
  track switch + one cylinder skew per cylinder switch (+ one sector per slip
  in earlier cylinders for schemes 2, 4, 5 and 6, in earlier tracks for
  scheme 3: DiskSim's ``issectpercyl``, which leaves out 7) + its sector, in
  revolutions;
* defects remapped elsewhere (a zone's ``defects`` list of (defect, remap)
  pairs, in the units of its slips), looked up after the slips as each
  ``g1_ltop_*`` does: scheme 1 moves the track, 3 the sector to the remap's
  track and sector (the last match wins), 2/4-7 to the remap's cylinder,
  head and sector in the zone (the first match whose remap differs), 8
  within the range, 9/10 within the zone; the block's angle is then the
  remap's (``g1_map_pbn_skew`` of the new PBN). A defect remapped to itself
  is a slipped defect: nothing moves. Scheme 0 ignores defects, as
  ``g1_ltop_nosparing`` does.

DiskSim's g4 layout (:mod:`diskmodel.model.simulator.g4`) compiles into the same
kernel arrays as a :class:`G4ZoneLayout`, one "zone" per leaf range of its
tree, and its g2 layout (:mod:`diskmodel.model.simulator.g2`, an extent map) as a
:class:`G2ZoneLayout`, so the kernels below serve all three.

Everything is pure numpy (with numba kernels shared with the per-request
simulation, :mod:`diskmodel.model.simulator.simulate`); no I/O. DiskSim's files become
a :class:`ZoneLayout` in :func:`diskmodel.model.disksim_drives.convert.zone_layout`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import evolve as _evolve
from .._checks import finite_array, one_of, show, whole_number
from .g2 import G2_EXTENT_FIELDS, g2_tables
from .g4 import G4_ROW_FIELDS, g4_mapped_blocks, g4_remap_table, g4_row_cylinders, g4_rows, g4_slip_table

# the kernels, kept importable from here (ZoneLayout's methods call _map_many)
from .pbn import (_map_many, cylinder_end_lbn, lbn_to_pbn_one, steps_over_unmapped_sectors,  # noqa: F401
                  track_end_lbn, track_first_lbn, track_last_from, track_last_lbn)

SUPPORTED_SPARING = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
_SLIP_TO_END = (4, 6, 7)
_PER_CYLINDER = (2, 4, 5, 6, 7)


@dataclass(frozen=True, eq=False)
class ZoneLayout:
    """Zones of a g1 layout as arrays (one entry per zone) [cylinders, sectors].

    Attributes
    ----------
    surfaces : int
    first_cylinder, last_cylinder, sectors_per_track : int arrays
    first_block_offset_sectors, track_skew_sectors, cylinder_skew_sectors : float arrays
    empty_space_sectors, spares : int arrays
    slips : tuple of int arrays (one per zone; sector or track numbers in the zone), or () for none
    sparing_scheme, mapping_scheme, rangesize : int
    block_count : int
        Blocks the drive exports (may be fewer than the zones could hold).
    defects : tuple of (k, 2) int arrays (one per zone: defect, remap; units of the slips), or () for none
    """

    surfaces: int
    first_cylinder: np.ndarray
    last_cylinder: np.ndarray
    sectors_per_track: np.ndarray
    first_block_offset_sectors: np.ndarray
    track_skew_sectors: np.ndarray
    cylinder_skew_sectors: np.ndarray
    empty_space_sectors: np.ndarray
    spares: np.ndarray
    slips: tuple
    sparing_scheme: int = 0
    mapping_scheme: int = 0
    rangesize: int = 1
    block_count: int | None = None
    defects: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "surfaces", whole_number("surfaces", self.surfaces, minimum=1))
        object.__setattr__(self, "sparing_scheme", one_of(
            "sparing_scheme", whole_number("sparing_scheme", self.sparing_scheme), SUPPORTED_SPARING))
        object.__setattr__(self, "mapping_scheme", whole_number("mapping_scheme", self.mapping_scheme, maximum=2))
        object.__setattr__(self, "rangesize", whole_number("rangesize", self.rangesize, minimum=1))
        n = len(np.atleast_1d(self.first_cylinder))
        for name in ("first_cylinder", "last_cylinder", "sectors_per_track", "empty_space_sectors", "spares"):
            array = finite_array(name, getattr(self, name), whole=True, nonnegative=True).astype(np.int64)
            if array.shape != (n,):
                raise ValueError(f"{name} must hold one value per zone ({n}; got shape {array.shape})")
            object.__setattr__(self, name, array)
        for name in ("first_block_offset_sectors", "track_skew_sectors", "cylinder_skew_sectors"):
            array = finite_array(name, getattr(self, name))
            if array.shape != (n,):
                raise ValueError(f"{name} must hold one value per zone ({n}; got shape {array.shape})")
            object.__setattr__(self, name, array)
        if np.any(self.sectors_per_track < 1):
            raise ValueError(f"sectors_per_track must be >= 1 in every zone (got {self.sectors_per_track.min()})")
        if np.any(self.last_cylinder < self.first_cylinder):
            zone = int(np.flatnonzero(self.last_cylinder < self.first_cylinder)[0])
            raise ValueError(f"last_cylinder must be >= first_cylinder in every zone (zone {zone}: "
                             f"{self.first_cylinder[zone]} .. {self.last_cylinder[zone]})")
        if len(self.slips) not in (0, n):
            raise ValueError(f"slips must hold one array per zone ({n}) or none (got {len(self.slips)})")
        slips = tuple(finite_array(f"slips[{index}]", s, whole=True, nonnegative=True).astype(np.int64)
                      for index, s in enumerate(self.slips))
        # kept in the file's order: DiskSim's g1_ltop_* count slips in list order, and where
        # a slip counts can depend on those counted before it (atlas_III lists one zone's out of order)
        object.__setattr__(self, "slips", slips)
        if len(self.defects) not in (0, n):
            raise ValueError(f"defects must hold one array per zone ({n}) or none (got {len(self.defects)})")
        defects = tuple(finite_array(f"defects[{index}]", np.reshape(d, (-1, 2)), whole=True,
                                     nonnegative=True).astype(np.int64).reshape(-1, 2)
                        for index, d in enumerate(self.defects))
        object.__setattr__(self, "defects", defects)
        if self.block_count is not None:
            object.__setattr__(self, "block_count", whole_number("block_count", self.block_count, minimum=1))
        zone_blocks = self.blocks_per_zone()
        first_lbn = np.concatenate(([0], np.cumsum(zone_blocks)))
        object.__setattr__(self, "_first_lbn", first_lbn)
        object.__setattr__(self, "_slip_pointer", _pointer(slips, n))
        object.__setattr__(self, "_slip_values", np.concatenate(slips + (np.zeros(0, np.int64),)).astype(np.int64))
        object.__setattr__(self, "_defect_pointer", _pointer(defects, n))
        object.__setattr__(self, "_defect_values",
                           np.concatenate(defects + (np.zeros((0, 2), np.int64),)).astype(np.int64))
        total = int(first_lbn[-1]) if self.block_count is None else int(self.block_count)
        if total > first_lbn[-1]:
            raise ValueError(f"block_count {total} exceeds what the zones hold ({int(first_lbn[-1])})")
        object.__setattr__(self, "_total", total)

    def evolve(self, **changes) -> "ZoneLayout":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    # -- sizes
    def blocks_per_zone(self) -> np.ndarray:
        """Logical blocks each zone holds (DiskSim's ``blksinband``)."""
        cylinders = self.last_cylinder - self.first_cylinder + 1
        blocks = cylinders * self.sectors_per_track * self.surfaces - self.empty_space_sectors
        nslips = np.diff(_pointer(self.slips, cylinders.size))
        scheme = self.sparing_scheme
        if scheme == 1:
            blocks = blocks - self.spares * self.sectors_per_track
        elif scheme == 3:
            blocks = blocks - self.spares * cylinders * self.surfaces
        elif scheme == 7:
            blocks = blocks - nslips
        elif scheme == 9:
            blocks = blocks - self.spares
        elif scheme == 10:
            blocks = blocks - self.spares - nslips
        elif scheme in (2, 5):
            blocks = blocks - self.spares * cylinders
        elif scheme in (4, 6):
            blocks = blocks - self.spares * cylinders - nslips
        elif scheme == 8:
            blocks = blocks - self.spares * (cylinders // self.rangesize)
        return blocks

    @property
    def zone_capacity_blocks(self) -> int:
        return int(self._first_lbn[-1])

    @property
    def total_blocks(self) -> int:
        return self._total

    @property
    def zone_first_lbn(self) -> np.ndarray:
        return self._first_lbn[:-1].copy()

    def kernel_arrays(self):
        """The tuple of arrays the numba kernels take (see :func:`lbn_to_pbn_one`).

        Element 0 holds each zone's first block (and the blocks the zones
        hold), 2 each zone's sectors per track, 10 (surfaces, sparing scheme,
        mapping scheme, rangesize); 11 and 12 the defects. A g4 layout's
        tuple has three more elements, its tables, a g2 layout's four: the
        kernels are compiled for each length, so a g1 layout pays nothing for
        the others' code.
        """
        return (self._first_lbn, self.first_cylinder, self.sectors_per_track, self.empty_space_sectors,
                self.spares, self.first_block_offset_sectors, self.track_skew_sectors,
                self.cylinder_skew_sectors, self._slip_pointer, self._slip_values,
                np.array([self.surfaces, self.sparing_scheme, self.mapping_scheme, self.rangesize], dtype=np.int64),
                self._defect_pointer, self._defect_values, *self._g4_tables())

    def _g4_tables(self) -> tuple:
        return ()

    # -- mapping
    def lbn_to_pbn(self, lbn):
        """(cylinder, head, sector, angle_rev, zone) for logical blocks (vectorised).

        ``angle_rev`` is where the block starts, as a fraction of a revolution.
        """
        lbn = np.asarray(lbn)
        if lbn.dtype.kind not in "iu":
            raise ValueError("lbn must hold whole numbers")
        flat = lbn.astype(np.int64).ravel()
        if flat.size and (flat.min() < 0 or flat.max() >= self._total):
            raise ValueError(f"lbn must lie in [0, {self._total}) (got {flat.min()} .. {flat.max()})")
        cylinder = np.empty(flat.size, np.int64)
        head = np.empty(flat.size, np.int64)
        sector = np.empty(flat.size, np.int64)
        angle = np.empty(flat.size, float)
        zone = np.empty(flat.size, np.int64)
        _map_many(flat, self.kernel_arrays(), cylinder, head, sector, angle, zone)
        shape = lbn.shape
        return (cylinder.reshape(shape), head.reshape(shape), sector.reshape(shape),
                angle.reshape(shape), zone.reshape(shape))


def _pointer(per_zone, n) -> np.ndarray:
    """Start of each zone's entries in the concatenated arrays (and their count)."""
    sizes = [len(a) for a in per_zone] if per_zone else [0] * n
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


@dataclass(frozen=True, eq=False)
class G4ZoneLayout(ZoneLayout):
    """DiskSim's g4 layout for the kernels: one "zone" per leaf range of its tree.

    Build with :meth:`from_tables`. Each zone is a row of
    :func:`~diskmodel.model.simulator.g4.g4_rows` (one head, a run of
    cylinders, its track pattern's sectors per track); the g1 fields hold
    what the simulation reads of a zone (cylinders spanned, sectors per
    track) and zeros elsewhere. ``g4_rows``, ``g4_slips``, ``g4_remaps``:
    the tables of :mod:`~diskmodel.model.simulator.g4`.
    """

    g4_rows: np.ndarray | None = None
    g4_slips: np.ndarray | None = None
    g4_remaps: np.ndarray | None = None

    @classmethod
    def from_tables(cls, surfaces, tp, idx, child_types, slips, remaps, block_count) -> "G4ZoneLayout":
        """From a ``dm_layout_g4``'s tables (as
        :class:`~diskmodel.data.disksim.model_file.G4Layout` holds them) and the
        drive's surfaces and block count."""
        rows = g4_rows(tp, idx, child_types)
        slip_table = g4_slip_table(slips)
        first, last = g4_row_cylinders(rows)
        zeros = np.zeros(rows.shape[0])
        return cls(surfaces=surfaces, first_cylinder=first, last_cylinder=last, sectors_per_track=rows[:, 7],
                   first_block_offset_sectors=zeros, track_skew_sectors=zeros, cylinder_skew_sectors=zeros,
                   empty_space_sectors=zeros.astype(np.int64), spares=zeros.astype(np.int64), slips=(),
                   block_count=g4_mapped_blocks(rows, slip_table, block_count), g4_rows=rows,
                   g4_slips=slip_table, g4_remaps=g4_remap_table(remaps))

    def __post_init__(self):
        for name, width in (("g4_rows", len(G4_ROW_FIELDS)), ("g4_slips", 2), ("g4_remaps", 5)):
            array = np.asarray(getattr(self, name))
            if array.dtype.kind != "i" or array.ndim != 2 or array.shape[1] != width:
                raise ValueError(f"{name} must be an int array of {width} columns (got {show(array)})")
            object.__setattr__(self, name, np.ascontiguousarray(array, dtype=np.int64))
        if self.g4_rows.shape[0] != np.size(self.first_cylinder):
            raise ValueError(f"g4_rows must hold one row per zone ({np.size(self.first_cylinder)}; "
                             f"got {self.g4_rows.shape[0]})")
        if self.sparing_scheme or self.mapping_scheme or self.slips or self.defects:
            raise ValueError("a G4ZoneLayout takes its slips and remaps in g4_slips and g4_remaps "
                             "(g1 sparing, mapping, slips and defects must be left out)")
        super().__post_init__()
        if np.any(self._first_lbn[:-1] != self.g4_rows[:, 0]):
            raise ValueError("g4_rows must cover the blocks in order without a gap")

    def blocks_per_zone(self) -> np.ndarray:
        """Blocks each leaf range holds (before slips)."""
        return self.g4_rows[:, 4].copy()

    def _g4_tables(self) -> tuple:
        return self.g4_rows, self.g4_slips, self.g4_remaps


@dataclass(frozen=True, eq=False)
class G2ZoneLayout(ZoneLayout):
    """DiskSim's g2 layout for the kernels: its zones, and its extent map.

    Build with :meth:`from_map`. The g1 fields hold what the simulation reads
    of a zone (cylinders, sectors per track) and zeros elsewhere; a block's
    zone is the zone of its cylinder (DiskSim's ``find_zone_pbn``).
    ``g2_first_lbn``, ``g2_extents``, ``g2_width``, ``g2_track_angle``: the
    tables of :func:`~diskmodel.model.simulator.g2.g2_tables`.
    """

    g2_first_lbn: np.ndarray | None = None
    g2_extents: np.ndarray | None = None
    g2_width: np.ndarray | None = None
    g2_track_angle: np.ndarray | None = None

    @classmethod
    def from_map(cls, surfaces, zone_cylinders, sectors_per_track, skews, units, extents, cylinders,
                 block_count) -> "G2ZoneLayout":
        """From a ``dm_layout_g2``'s zones ((z, 2) cylinders, spt, (z, 3) skews as
        written, their units) and extents ((n, 5): lbn, cylinder, head, sector,
        blocks), the disk's cylinders and block count (as
        :class:`~diskmodel.data.disksim.model_file.G2Layout` holds them)."""
        first_lbn, rows, width, track_angle = g2_tables(extents, zone_cylinders, sectors_per_track, skews, units,
                                                        cylinders)
        zone_cylinders = np.asarray(zone_cylinders, dtype=np.int64).reshape(-1, 2)
        zeros = np.zeros(zone_cylinders.shape[0])
        return cls(surfaces=surfaces, first_cylinder=zone_cylinders[:, 0], last_cylinder=zone_cylinders[:, 1],
                   sectors_per_track=sectors_per_track, first_block_offset_sectors=zeros,
                   track_skew_sectors=zeros, cylinder_skew_sectors=zeros,
                   empty_space_sectors=zeros.astype(np.int64), spares=zeros.astype(np.int64), slips=(),
                   block_count=min(int(block_count), int(first_lbn[-1])), g2_first_lbn=first_lbn,
                   g2_extents=rows, g2_width=width, g2_track_angle=track_angle)

    def __post_init__(self):
        for name, ndim in (("g2_first_lbn", 1), ("g2_extents", 2), ("g2_width", 1), ("g2_track_angle", 2)):
            array = np.asarray(getattr(self, name))
            if array.dtype.kind != "i" or array.ndim != ndim:
                raise ValueError(f"{name} must be a {ndim}-d int array (got {show(array)})")
            object.__setattr__(self, name, np.ascontiguousarray(array, dtype=np.int64))
        if self.g2_extents.shape != (self.g2_first_lbn.size - 1, len(G2_EXTENT_FIELDS)):
            raise ValueError(f"g2_extents must hold {len(G2_EXTENT_FIELDS)} columns and one row per extent "
                             f"({self.g2_first_lbn.size - 1}; got shape {self.g2_extents.shape})")
        if self.sparing_scheme or self.mapping_scheme or self.slips or self.defects:
            raise ValueError("a G2ZoneLayout takes its mapping from its extents "
                             "(g1 sparing, mapping, slips and defects must be left out)")
        if self.g2_width.size != np.size(self.first_cylinder):
            raise ValueError(f"g2_width must hold one value per zone ({np.size(self.first_cylinder)}; "
                             f"got {self.g2_width.size})")
        if self.g2_extents.size and (self.g2_extents[:, 3].min() < 0
                                     or self.g2_extents[:, 3].max() >= self.g2_width.size):
            raise ValueError("g2_extents' zone column must name a zone")
        super().__post_init__()

    def blocks_per_zone(self) -> np.ndarray:
        """Blocks the extents put on each zone's cylinders."""
        blocks = np.diff(self.g2_first_lbn)
        return np.bincount(self.g2_extents[:, 3], weights=blocks,
                           minlength=np.size(self.first_cylinder)).astype(np.int64)

    def _g4_tables(self) -> tuple:
        # one element more than a g4 layout's tables: the kernels tell them apart by length
        return self.g2_first_lbn, self.g2_extents, self.g2_width, self.g2_track_angle
