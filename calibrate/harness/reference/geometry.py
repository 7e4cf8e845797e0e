"""The reference drives' own layout: logical blocks to tracks, angles and media time.

Written independently of :mod:`diskmodel.model.drive.zones` (the reference drives
are the ground truth a calibration is checked against, so they share no code
with the model the fitter assumes). A layout is a list of zones, each a run
of cylinders with a fixed number of sectors per track, over ``surfaces``
surfaces, in one of two orders:

* ``conventional``: a cylinder's tracks surface by surface, then the next
  cylinder (every ``surfaces``-th track change is a cylinder switch);
* ``serpentine``: within each zone (a band), all of the band's cylinders on
  surface 0 outwards in, then on surface 1 inwards out, and so on (track
  changes are cylinder switches, a head switch only at a band's end).

The first sector of each track is skewed from the previous track's by the
track skew (after a head switch) or the cylinder skew (after a cylinder
switch), as fractions of a revolution, so that a transfer running over a
track boundary loses only the skew (Ruemmler & Wilkes 1994, sec. 2.2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Layout"]


@dataclass(frozen=True)
class Layout:
    """Zones ``((cylinders, sectors_per_track), ...)`` outer first, over *surfaces*."""

    zones: tuple
    surfaces: int
    sector_bytes: int = 512
    order: str = "conventional"
    track_skew_fraction: float = 0.0
    cylinder_skew_fraction: float = 0.0

    def __post_init__(self):
        if self.order not in ("conventional", "serpentine"):
            raise ValueError(f"order must be 'conventional' or 'serpentine' (got {self.order!r})")
        if not 1 <= int(self.surfaces) <= 64:
            raise ValueError(f"surfaces must be 1..64 (got {self.surfaces!r})")
        cyl = np.array([z[0] for z in self.zones], dtype=np.int64)
        spt = np.array([z[1] for z in self.zones], dtype=np.int64)
        if cyl.size == 0 or (cyl <= 0).any() or (spt <= 0).any():
            raise ValueError(f"zones must be (cylinders > 0, sectors_per_track > 0) pairs (got {self.zones!r})")
        per_zone = cyl * spt * self.surfaces
        set_ = object.__setattr__
        set_(self, "_cyl", cyl)
        set_(self, "_spt", spt)
        set_(self, "_first_lba", np.concatenate(([0], np.cumsum(per_zone))))
        set_(self, "_first_cyl", np.concatenate(([0], np.cumsum(cyl))))

    # -- sizes ------------------------------------------------------------------
    @property
    def total_sectors(self) -> int:
        return int(self._first_lba[-1])

    @property
    def cylinders(self) -> int:
        return int(self._first_cyl[-1])

    def zone_bounds_bytes(self) -> np.ndarray:
        """``(zones, 2)`` first and end byte of each zone."""
        f = self._first_lba * self.sector_bytes
        return np.column_stack((f[:-1], f[1:]))

    def sectors_per_track(self) -> np.ndarray:
        return self._spt.copy()

    # -- mapping ------------------------------------------------------------------
    def locate(self, lba):
        """``(zone, cylinder, head, sector, track_in_zone)`` of logical blocks (arrays)."""
        lba = np.asarray(lba, dtype=np.int64)
        zone = np.searchsorted(self._first_lba, lba, side="right") - 1
        rel = lba - self._first_lba[zone]
        spt = self._spt[zone]
        track = rel // spt
        sector = rel - track * spt
        h = self.surfaces
        if self.order == "conventional":
            cyl_in = track // h
            head = track - cyl_in * h
        else:
            ncyl = self._cyl[zone]
            head = track // ncyl
            step = track - head * ncyl
            cyl_in = np.where(head % 2 == 0, step, ncyl - 1 - step)
        return zone, self._first_cyl[zone] + cyl_in, head, sector, track

    def switches_before(self, zone, track):
        """Head switches and cylinder switches between a zone's first track and *track*."""
        track = np.asarray(track, dtype=np.int64)
        if self.order == "conventional":
            cyl_switches = track // self.surfaces
        else:
            cyl_switches = track - track // self._cyl[zone]
        return track - cyl_switches, cyl_switches

    def angle(self, lba) -> np.ndarray:
        """Angular position of each block's start, as a fraction of a revolution in [0, 1)."""
        zone, _, _, sector, track = self.locate(lba)
        heads, cyls = self.switches_before(zone, track)
        a = sector / self._spt[zone] + heads * self.track_skew_fraction + cyls * self.cylinder_skew_fraction
        return a - np.floor(a)

    def media_time_s(self, lba, period_s: float, head_switch_wait_s: float, cylinder_switch_wait_s: float):
        """Time the head takes to read from block 0 to the start of each block (sequentially,
        losing at each track change the wait given) [s]: differences give transfer times."""
        lba = np.asarray(lba, dtype=np.int64)
        at_end = lba >= self.total_sectors
        zone, _, _, sector, track = self.locate(np.where(at_end, self.total_sectors - 1, lba))
        heads, cyls = self.switches_before(zone, track)
        spt = self._spt[zone]
        zone_time = self._zone_start_time(period_s, head_switch_wait_s, cylinder_switch_wait_s)
        t = (zone_time[zone] + track * period_s + heads * head_switch_wait_s + cyls * cylinder_switch_wait_s
             + sector * (period_s / spt))
        return np.where(at_end, zone_time[-1], t)

    def _zone_start_time(self, period_s, head_wait, cyl_wait) -> np.ndarray:
        tracks = self._cyl * self.surfaces
        heads, cyls = self.switches_before(np.arange(self._cyl.size), tracks - 1)
        per = tracks * period_s + heads * head_wait + cyls * cyl_wait + cyl_wait  # a zone change: a cylinder switch
        return np.concatenate(([0.0], np.cumsum(per)))
