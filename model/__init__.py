"""diskmodel.model: the access-time model of a disk and the layers above it.

Pure, vectorised numpy: no I/O, no clocks, no processes. One module per
physical concern, after Djordjevic & Timcenko (2015), section 3.
"""
from .cache import cache_service_time_s, hit_probability
from .disk import Disk, ServiceTime, expected_random_service_time_s, service_time_s
from .presets import available_presets, disk_from_spec, load_preset
from .rotation import mean_rotational_latency_s, rotation_period_s
from .seek import TableSeek, TwoPieceSeek, mean_random_seek_time_s
from .zones import Geometry, Zone, uniform_geometry

__all__ = [
    "Disk", "Geometry", "ServiceTime", "TableSeek", "TwoPieceSeek", "Zone",
    "available_presets", "cache_service_time_s", "disk_from_spec",
    "expected_random_service_time_s", "hit_probability", "load_preset",
    "mean_random_seek_time_s", "mean_rotational_latency_s", "rotation_period_s",
    "service_time_s", "uniform_geometry",
]
