"""Named presets (published parameter sets) as validated :class:`Disk` objects."""
from __future__ import annotations

import numpy as np

from diskmodel.data.presets import PRESETS

from .disk import Disk
from .seek import TableSeek, TwoPieceSeek
from .zones import Geometry, Zone


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
    geometry = Geometry(spec["surfaces"], tuple(Zone(*zone) for zone in spec["zones"]),
                        spec.get("sector_size_bytes", 512))
    return Disk(
        name=spec["name"], geometry=geometry, seek=seek, rpm=spec["rpm"],
        command_overhead_s=spec.get("command_overhead_s", 0.0),
        settle_s=spec.get("settle_s", 0.0),
        write_settle_s=spec.get("write_settle_s", 0.0),
        head_switch_s=spec.get("head_switch_s", 0.0),
        interface_rate_bytes_per_s=spec.get("interface_rate_bytes_per_s", float("inf")),
        cache_size_bytes=spec.get("cache_size_bytes", 0),
        provenance=spec.get("provenance", ""),
        estimates=tuple(tuple(item) for item in spec.get("estimates", ())),
    )


def load_preset(name: str) -> Disk:
    """The named drive: ``"hp97560"``, ``"hp_c2247a"`` or ``"wd800bd"``."""
    key = str(name).lower()
    if key not in PRESETS:
        raise ValueError(f"name must be one of {', '.join(available_presets())} (got {name!r})")
    return disk_from_spec(PRESETS[key])
