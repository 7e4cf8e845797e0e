"""Named presets (published parameter sets) as validated :class:`Disk` objects.

A preset zone whose skews are None gets the skews a drive's formatter would
choose (Ruemmler & Wilkes 1994, section "Data layout": skew lets a sequential
transfer cross a track or cylinder boundary without losing a revolution):
the track skew is the fewest sectors passing under the head during a head
switch, the cylinder skew the fewest passing during a one-cylinder move (the
seek of distance 1 plus settle, or the head switch if longer). They follow
from the preset's own figures; nothing is fitted.
"""
from __future__ import annotations

import math

import numpy as np

from diskmodel.data.presets import PRESETS

from .disk import Disk
from .cache import DriveCache
from .seek import TableSeek, TwoPieceSeek
from .zones import Geometry, Zone

__all__ = ["available_presets", "covering_skews_sectors", "disk_from_spec", "load_preset"]


def available_presets() -> tuple[str, ...]:
    return tuple(sorted(PRESETS))


def disk_from_spec(spec: dict) -> Disk:
    """Build a Disk from a preset-style dict (see :mod:`diskmodel.data.presets`)."""
    seek_spec = dict(spec["seek"])
    kind = seek_spec.pop("kind")
    if kind == "two_piece":
        seek = TwoPieceSeek(**seek_spec)
    elif kind == "table":
        seek = TableSeek(np.asarray(seek_spec["distance_cylinders"], dtype=float),
                         np.asarray(seek_spec["seek_time_s"], dtype=float))
    else:
        raise ValueError(f"seek kind must be 'two_piece' or 'table' (got {kind!r})")
    zones = []
    for first, last, spt, track_skew, cylinder_skew in spec["zones"]:
        track, cylinder = covering_skews_sectors(spt, spec["rpm"], spec.get("head_switch_s", 0.0),
                                                 float(seek.seek_time_s(1.0)) + spec.get("settle_s", 0.0))
        zones.append(Zone(first, last, spt, track if track_skew is None else track_skew,
                          cylinder if cylinder_skew is None else cylinder_skew))
    geometry = Geometry(spec["surfaces"], tuple(zones), spec.get("sector_size_bytes", 512))
    return Disk(
        name=spec["name"], geometry=geometry, seek=seek, rpm=spec["rpm"],
        command_overhead_s=spec.get("command_overhead_s", 0.0),
        settle_s=spec.get("settle_s", 0.0),
        write_settle_s=spec.get("write_settle_s", 0.0),
        head_switch_s=spec.get("head_switch_s", 0.0),
        interface_rate_bytes_per_s=spec.get("interface_rate_bytes_per_s", float("inf")),
        cache_size_bytes=spec.get("cache_size_bytes", 0),
        drive_cache=DriveCache(**spec["drive_cache"]) if spec.get("drive_cache") else None,
        provenance=spec.get("provenance", ""),
        estimates=tuple(tuple(item) for item in spec.get("estimates", ())),
    )


def covering_skews_sectors(sectors_per_track: int, rpm: float, head_switch_s: float,
                           one_cylinder_seek_s: float) -> tuple[int, int]:
    """(track skew, cylinder skew) [sectors] that let a sequential transfer cross a
    track or a cylinder boundary without losing a revolution: the fewest whole sectors
    passing under the head during a head switch, and during a one-cylinder move (its
    seek with settle, or the head switch if longer). The relative tolerance keeps an
    exact multiple of the sector time from rounding up a sector."""
    sector_s = 60.0 / rpm / sectors_per_track
    cylinder_move_s = max(one_cylinder_seek_s, head_switch_s)
    return (math.ceil(head_switch_s / sector_s * (1.0 - 1e-12)),
            math.ceil(cylinder_move_s / sector_s * (1.0 - 1e-12)))


def load_preset(name: str) -> Disk:
    """The named drive: ``"hp97560"``, ``"hp_c2247a"`` or ``"wd800bd"``."""
    key = str(name).lower()
    if key not in PRESETS:
        raise ValueError(f"name must be one of {', '.join(available_presets())} (got {name!r})")
    return disk_from_spec(PRESETS[key])
