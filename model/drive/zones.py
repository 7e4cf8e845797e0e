"""Disk geometry: surfaces, cylinders and zones (zoned bit recording).

The media transfer rate R_T of eq. (6) (Djordjevic & Timcenko 2015) depends on
the zone: a track of ``sectors_per_track`` sectors passes under the head once
per revolution, so ``R_T = sectors_per_track * sector_size / T_rot``.

Logical blocks (LBAs) are laid out track by track: sector, then surface
(head), then cylinder, zone after zone from the outer edge inward. Track and
cylinder skews shift the angular position of each track's first sector so
that a sequential transfer does not lose a revolution at a head or cylinder
switch. Spare sectors and slipped defects are not modelled here; the DiskSim
readers (:mod:`diskmodel.data.disksim`) keep those where a drive lists them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import evolve as _evolve
from .._checks import finite_array, finite_scalar, show, whole_number


#: Most cylinders a Geometry may have.  The expected seek between random
#: cylinders (seek.random_pair_distance_pmf, the layouts' distance pmfs) uses
#: dense float64 vectors over the cylinders, 256 MiB each at this limit, and
#: their convolution takes many seconds; beyond it memory runs out.  Real
#: drives have far fewer (DiskSim's 4 TB drive: 303,104; a one-surface
#: stand-in of a 36 TB drive with 2.5 MB tracks: about 1.5e7).
MAX_CYLINDERS = 2**25


def _indices(name: str, values) -> np.ndarray:
    """Whole-number indices as int64 (ValueError naming *name* for fractions, NaN, bool, str)."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        array = finite_array(name, array, whole=True).astype(np.int64)
    return array


@dataclass(frozen=True)
class Zone:
    """A band of cylinders with the same number of sectors per track.

    Attributes
    ----------
    first_cylinder, last_cylinder : int
        Inclusive cylinder range of the zone [cylinders].
    sectors_per_track : int
        Sectors on each track of the zone [sectors].
    track_skew_sectors, cylinder_skew_sectors : int
        Angular shift of a track's first sector after a head switch, and after
        a cylinder switch [sectors].
    """

    first_cylinder: int
    last_cylinder: int
    sectors_per_track: int
    track_skew_sectors: int = 0
    cylinder_skew_sectors: int = 0

    def __post_init__(self):
        first = whole_number("first_cylinder", self.first_cylinder)
        object.__setattr__(self, "first_cylinder", first)
        object.__setattr__(self, "last_cylinder", whole_number(
            "last_cylinder", self.last_cylinder, minimum=first, maximum=MAX_CYLINDERS - 1,
            maximum_is="MAX_CYLINDERS - 1: distance vectors are dense over the cylinders"))
        object.__setattr__(self, "sectors_per_track", whole_number("sectors_per_track", self.sectors_per_track,
                                                                   minimum=1))
        object.__setattr__(self, "track_skew_sectors", whole_number("track_skew_sectors", self.track_skew_sectors))
        object.__setattr__(self, "cylinder_skew_sectors", whole_number("cylinder_skew_sectors",
                                                                       self.cylinder_skew_sectors))

    @property
    def cylinders(self) -> int:
        return self.last_cylinder - self.first_cylinder + 1


@dataclass(frozen=True, eq=False)
class Geometry:
    """Surfaces and zones of a disk; maps LBAs to (cylinder, head, sector).

    Zones must start at cylinder 0 and follow each other with no gap or
    overlap.
    """

    surfaces: int
    zones: tuple[Zone, ...]
    sector_size_bytes: int = 512

    def __post_init__(self):
        object.__setattr__(self, "surfaces", whole_number("surfaces", self.surfaces, minimum=1))
        object.__setattr__(self, "sector_size_bytes", whole_number("sector_size_bytes", self.sector_size_bytes,
                                                                   minimum=1))
        if isinstance(self.zones, (str, bytes)) or not hasattr(self.zones, "__iter__"):
            raise ValueError(f"zones must be a sequence of Zone (got {show(self.zones)})")
        zones = tuple(self.zones)
        if not zones:
            raise ValueError("zones must list at least one zone")
        for index, zone in enumerate(zones):
            if not isinstance(zone, Zone):
                raise ValueError(f"zones[{index}] must be a Zone (got {show(zone)})")
        if zones[0].first_cylinder != 0:
            raise ValueError(f"zones must start at cylinder 0 (first zone starts at {zones[0].first_cylinder})")
        for index, (before, after) in enumerate(zip(zones, zones[1:]), start=1):
            if after.first_cylinder != before.last_cylinder + 1:
                kind = "overlaps" if after.first_cylinder <= before.last_cylinder else "leaves a gap after"
                raise ValueError(f"zones[{index}] (first cylinder {after.first_cylinder}) {kind} "
                                 f"zones[{index - 1}] (last cylinder {before.last_cylinder})")
        object.__setattr__(self, "zones", zones)
        first_cylinder = np.array([z.first_cylinder for z in zones], dtype=np.int64)
        sectors_per_track = np.array([z.sectors_per_track for z in zones], dtype=np.int64)
        cylinders = np.array([z.cylinders for z in zones], dtype=np.int64)
        sectors_per_cylinder = sectors_per_track * self.surfaces
        zone_sectors = sectors_per_cylinder * cylinders
        first_lba = np.concatenate(([0], np.cumsum(zone_sectors)[:-1]))
        object.__setattr__(self, "_first_cylinder", first_cylinder)
        object.__setattr__(self, "_sectors_per_track", sectors_per_track)
        object.__setattr__(self, "_sectors_per_cylinder", sectors_per_cylinder)
        object.__setattr__(self, "_first_lba", first_lba)
        object.__setattr__(self, "_first_byte", first_lba * self.sector_size_bytes)
        object.__setattr__(self, "_bytes_per_cylinder", (sectors_per_cylinder * self.sector_size_bytes).astype(float))
        object.__setattr__(self, "_track_skew", np.array([z.track_skew_sectors for z in zones], dtype=np.int64))
        object.__setattr__(self, "_cylinder_skew", np.array([z.cylinder_skew_sectors for z in zones], dtype=np.int64))
        object.__setattr__(self, "_total_sectors", int(zone_sectors.sum()))
        # Zone lookup by coarse buckets of 2**shift bytes (at most ~2**20 of them):
        # one gather instead of a binary search, except in the few buckets a zone
        # boundary cuts, which fall back to searchsorted.
        capacity = self._total_sectors * self.sector_size_bytes
        shift = max(12, int(np.ceil(np.log2(max(capacity, 1) / 2**20))))
        bucket_start = np.arange((capacity >> shift) + 1, dtype=np.int64) << shift
        bucket_end = np.minimum(bucket_start + (1 << shift) - 1, capacity - 1)
        zone_at_start = np.searchsorted(self._first_byte, bucket_start, side="right") - 1
        zone_at_end = np.searchsorted(self._first_byte, bucket_end, side="right") - 1
        object.__setattr__(self, "_bucket_shift", shift)
        object.__setattr__(self, "_bucket_zone", zone_at_start)
        object.__setattr__(self, "_bucket_cut", zone_at_start != zone_at_end)

    # -- sizes ---------------------------------------------------------------
    @property
    def cylinders(self) -> int:
        return self.zones[-1].last_cylinder + 1

    @property
    def total_sectors(self) -> int:
        return self._total_sectors

    @property
    def capacity_bytes(self) -> int:
        return self._total_sectors * self.sector_size_bytes

    @property
    def zone_first_byte(self) -> np.ndarray:
        """Byte offset where each zone starts [bytes]."""
        return self._first_byte.copy()

    @property
    def zone_sectors_per_track(self) -> np.ndarray:
        return self._sectors_per_track.copy()

    def evolve(self, **changes) -> "Geometry":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    # -- mapping -------------------------------------------------------------
    def _check_lba(self, lba) -> np.ndarray:
        lba = np.asarray(lba)
        if lba.dtype.kind not in "iu":
            lba = finite_array("lba", lba, whole=True).astype(np.int64)
        if lba.size and (lba.min() < 0 or lba.max() >= self._total_sectors):
            raise ValueError(f"lba must lie in [0, {self._total_sectors}) "
                             f"(got {lba.min()} .. {lba.max()})")
        return lba

    def zone_index_of_lba(self, lba) -> np.ndarray:
        lba = self._check_lba(lba)
        return np.searchsorted(self._first_lba, lba, side="right") - 1

    def lba_to_chs(self, lba):
        """(cylinder, head, sector) arrays for logical block addresses (vectorised)."""
        lba = self._check_lba(lba)
        zone = np.searchsorted(self._first_lba, lba, side="right") - 1
        relative = lba - self._first_lba[zone]
        spt = self._sectors_per_track[zone]
        cylinder = self._first_cylinder[zone] + relative // self._sectors_per_cylinder[zone]
        head = (relative // spt) % self.surfaces
        sector = relative % spt
        return cylinder, head, sector

    def chs_to_lba(self, cylinder, head, sector) -> np.ndarray:
        """Logical block addresses for (cylinder, head, sector) (vectorised)."""
        cylinder = _indices("cylinder", cylinder)
        head = _indices("head", head)
        sector = _indices("sector", sector)
        if cylinder.size and (cylinder.min() < 0 or cylinder.max() >= self.cylinders):
            raise ValueError(f"cylinder must lie in [0, {self.cylinders}) "
                             f"(got {show(cylinder.min())} .. {show(cylinder.max())})")
        if head.size and (head.min() < 0 or head.max() >= self.surfaces):
            raise ValueError(f"head must lie in [0, {self.surfaces}) (got {show(head.min())} .. {show(head.max())})")
        zone = np.searchsorted(self._first_cylinder, cylinder, side="right") - 1
        spt = self._sectors_per_track[zone]
        if sector.size and (sector.min() < 0 or np.any(sector >= spt)):
            raise ValueError(f"sector must lie in [0, sectors_per_track of its zone) "
                             f"(got {show(sector.min())} .. {show(sector.max())})")
        return (self._first_lba[zone]
                + (cylinder - self._first_cylinder[zone]) * self._sectors_per_cylinder[zone]
                + head * spt + sector)

    def angular_position(self, lba) -> np.ndarray:
        """Angle of a sector's start as a fraction of a revolution in [0, 1).

        Each head switch shifts the track's first sector by the zone's track
        skew, each cylinder switch by its cylinder skew.
        """
        lba = self._check_lba(lba)
        zone = np.searchsorted(self._first_lba, lba, side="right") - 1
        relative = lba - self._first_lba[zone]
        spt = self._sectors_per_track[zone]
        cylinder_in_zone = relative // self._sectors_per_cylinder[zone]
        head = (relative // spt) % self.surfaces
        track_switches = cylinder_in_zone * (self.surfaces - 1) + head
        offset = track_switches * self._track_skew[zone] + cylinder_in_zone * self._cylinder_skew[zone]
        return ((relative % spt + offset) % spt) / spt

    def _byte_to_zone(self, offset_bytes) -> tuple[np.ndarray, np.ndarray]:
        offset = np.asarray(offset_bytes)
        if offset.dtype.kind not in "iu":
            offset = finite_array("offset_bytes", offset, whole=True)
        if offset.size and (offset.min() < 0 or offset.max() >= self.capacity_bytes):
            raise ValueError(f"offset_bytes must lie in [0, {self.capacity_bytes}) "
                             f"(got {offset.min()} .. {offset.max()})")
        bucket = np.atleast_1d(offset).astype(np.int64, copy=False) >> self._bucket_shift
        zone = self._bucket_zone[bucket]
        cut = self._bucket_cut[bucket]
        if cut.any():
            zone[cut] = np.searchsorted(self._first_byte, np.atleast_1d(offset)[cut], side="right") - 1
        return offset, zone.reshape(offset.shape)

    def locate_bytes(self, offset_bytes) -> tuple[np.ndarray, np.ndarray]:
        """(zone index, cylinder) of byte offsets, both arrays (vectorised).

        The cylinder is computed in float64, exact for offsets below 2**53.
        """
        offset, zone = self._byte_to_zone(offset_bytes)
        bytes_per_cylinder = self._bytes_per_cylinder[zone]
        cylinder = self._first_cylinder[zone] + np.floor((offset - self._first_byte[zone]) / bytes_per_cylinder)
        return zone, cylinder.astype(np.int64)

    def cylinder_of_byte(self, offset_bytes) -> np.ndarray:
        """Cylinder holding a byte offset (vectorised) [cylinders]."""
        return self.locate_bytes(offset_bytes)[1]

    def sectors_per_track_at_byte(self, offset_bytes) -> np.ndarray:
        _, zone = self._byte_to_zone(offset_bytes)
        return self._sectors_per_track[zone]

    def media_rate_bytes_per_s(self, offset_bytes, rotation_period_s) -> np.ndarray:
        """Media transfer rate R_T at a byte offset [bytes/s] (eq. 6, zoned)."""
        period = finite_scalar("rotation_period_s", rotation_period_s, positive=True)
        return self.sectors_per_track_at_byte(offset_bytes) * (self.sector_size_bytes / period)

    def zone_rates_bytes_per_s(self, rotation_period_s) -> np.ndarray:
        """Media transfer rate of each zone, outermost first [bytes/s]."""
        period = finite_scalar("rotation_period_s", rotation_period_s, positive=True)
        return self._sectors_per_track * (self.sector_size_bytes / period)

    def zone_bounds_bytes(self) -> np.ndarray:
        """(n_zones, 2) array of [start, end) byte offsets of each zone."""
        end = np.append(self._first_byte[1:], self.capacity_bytes)
        return np.column_stack((self._first_byte, end))


def uniform_geometry(surfaces: int, cylinders: int, sectors_per_track: int,
                     sector_size_bytes: int = 512, track_skew_sectors: int = 0,
                     cylinder_skew_sectors: int = 0) -> Geometry:
    """A geometry with one zone (no zoned recording), e.g. the HP 97560."""
    zone = Zone(0, whole_number("cylinders", cylinders, minimum=1) - 1, sectors_per_track,
                track_skew_sectors, cylinder_skew_sectors)
    return Geometry(surfaces, (zone,), sector_size_bytes)
