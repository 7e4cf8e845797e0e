"""diskmodel.model: the access-time model of a disk and the layers above it.

Pure, vectorised numpy: no I/O, no clocks, no processes. One module per
physical concern, after Djordjevic & Timcenko (2015), section 3:

- :mod:`.seek` (eq. 7), :mod:`.rotation` (eq. 8), :mod:`.zones` (eq. 6, zoned),
  :mod:`.disk` (eqs. 3-5), :mod:`.cache` (eq. 2);
- :mod:`.workload` (PostMark 1.5), :mod:`.filesystem` (eq. 1),
  :mod:`.volumes` (partitions, LVM, eqs. 10-12), :mod:`.volume_on_disk`,
  :mod:`.stack` (one description of a storage stack), :mod:`.predict`, :mod:`.paper`;
- :mod:`.simulate` and :mod:`.validation`: the per-request simulation and its
  check on DiskSim's measured traces (imported on first use: they bring numba).
"""
from . import jit_cache  # noqa: F401  (numba's cache locator for the kernels below, before any is defined)
from .cache import cache_service_time_s, hit_probability
from .disk import Disk, ServiceTime, expected_random_service_time_s, service_time_s
from .filesystem import FileSystem, PageCache, file_system_access_time
from .volumes import LinearVolume, LvmMapping, Partition, Segment, StripedVolume
from .volume_on_disk import DiskRegion, VolumeOnDisk
from .drives import PresetDrive
from .stack import FileSystemNode, Stack, paper_stack, stack_on
from .fit import Case, FitResult, fit_io_parameters, fit_lvm_mapping
from .predict import Prediction  # the function: diskmodel.model.predict.predict (the name stays the module's)
from .presets import available_presets, disk_from_spec, load_preset
from .rotation import mean_rotational_latency_s, rotation_period_s
from .seek import TableSeek, TwoPieceSeek, mean_random_seek_time_s
from .workload import PostMarkConfig, PostMarkCounts, expected_counts, postmark_preset
from .zones import Geometry, Zone, uniform_geometry

_LAZY = {
    "DriveParameters": "drive_parameters", "SimulationResult": "simulate", "simulate_requests": "simulate",
    "ZoneLayout": "disksim_mapping", "TraceValidation": "validation", "disksim_demerit_s": "validation",
    "quantile_demerit_s": "validation",
    "empirical_quantiles": "validation", "mean_error_percent": "validation",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Case", "Disk", "DiskRegion", "FileSystem", "FileSystemNode", "FitResult", "Geometry", "LinearVolume",
    "LvmMapping", "PageCache", "Partition", "PostMarkConfig", "PostMarkCounts", "Prediction", "PresetDrive",
    "Segment", "ServiceTime", "Stack", "StripedVolume", "VolumeOnDisk",
    "TableSeek", "TwoPieceSeek", "Zone", "available_presets", "cache_service_time_s", "disk_from_spec",
    "expected_counts", "expected_random_service_time_s", "file_system_access_time", "fit_io_parameters",
    "fit_lvm_mapping", "hit_probability", "load_preset", "mean_random_seek_time_s",
    "mean_rotational_latency_s", "paper_stack", "postmark_preset", "rotation_period_s",
    "service_time_s", "stack_on", "uniform_geometry", *_LAZY,
]
