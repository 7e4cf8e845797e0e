"""diskmodel.model: the access-time model of a disk and the layers above it.

Pure, vectorised numpy: no I/O, no clocks, no processes. One module per
physical concern, after Djordjevic & Timcenko (2015), section 3:

- :mod:`.seek` (eq. 7), :mod:`.rotation` (eq. 8), :mod:`.zones` (eq. 6, zoned),
  :mod:`.disk` (eqs. 3-5), :mod:`.cache` (eq. 2);
- :mod:`.workload` (PostMark 1.5), :mod:`.filesystem` (eq. 1),
  :mod:`.layouts` (partitions, LVM, eqs. 10-12), :mod:`.predict`, :mod:`.paper`;
- :mod:`.simulate` and :mod:`.validation`: the per-request simulation and its
  check on DiskSim's measured traces (imported on first use: they bring numba).
"""
from .cache import cache_service_time_s, hit_probability
from .disk import Disk, ServiceTime, expected_random_service_time_s, service_time_s
from .filesystem import FileSystem, PageCache, file_system_access_time
from .volumes import (LinearVolume, LvmMapping, Partition, Segment, StripedVolume, mapping_complexity,
                      paper_layout, region_access_time_s)
from .fit.postmark import Case, FitResult, fit_io_parameters, fit_lvm_mapping
from .predict import Prediction, predict
from .presets import available_presets, disk_from_spec, load_preset
from .rotation import mean_rotational_latency_s, rotation_period_s
from .seek import TableSeek, TwoPieceSeek, mean_random_seek_time_s
from .workload import PostMarkConfig, PostMarkCounts, expected_counts, postmark_preset
from .zones import Geometry, Zone, uniform_geometry

_LAZY = {
    "DriveParameters": "simulate", "SimulationResult": "simulate", "simulate_requests": "simulate",
    "ZoneLayout": "layout_g1", "TraceValidation": "validation", "demerit_s": "validation",
    "empirical_quantiles": "validation", "mean_error_percent": "validation",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Case", "Disk", "FileSystem", "FitResult", "Geometry", "LinearVolume", "LvmMapping", "PageCache",
    "Partition", "PostMarkConfig", "PostMarkCounts", "Prediction", "Segment", "ServiceTime", "StripedVolume",
    "TableSeek", "TwoPieceSeek", "Zone", "available_presets", "cache_service_time_s", "disk_from_spec",
    "expected_counts", "expected_random_service_time_s", "file_system_access_time", "fit_io_parameters",
    "fit_lvm_mapping", "hit_probability", "load_preset", "mapping_complexity", "mean_random_seek_time_s",
    "mean_rotational_latency_s", "paper_layout", "postmark_preset", "predict", "region_access_time_s",
    "rotation_period_s", "service_time_s", "uniform_geometry", *_LAZY,
]
