"""diskmodel.model: the access-time model of a disk and the layers above it.

Pure, vectorised numpy: no I/O, no clocks, no processes. One subpackage per concern, after
Djordjevic & Timcenko (2015), section 3:

- :mod:`~diskmodel.model.drive`: the drive (seek, eq. 7; rotation, eq. 8; zones, eq. 6; the service
  time, eqs. 3-5; its buffer, its parameters, the presets);
- :mod:`~diskmodel.model.simulator`: the per-request simulation after DiskSim 4.0 (numba);
- :mod:`~diskmodel.model.disksim_drives`: DiskSim's drive files as model objects;
- :mod:`~diskmodel.model.filesystems`: file systems (eq. 1) and the cache (eq. 2);
- :mod:`~diskmodel.model.stacks` and :mod:`~diskmodel.model.iopath`: the storage stack (partitions,
  LVM, eqs. 10-12, RAID, thin volumes, loop files, network devices) and its I/O path as request streams;
- :mod:`~diskmodel.model.predict` (the entry point) and :mod:`~diskmodel.model.predictions`: workloads,
  results, what-if tables and the check on measured service times;
- :mod:`~diskmodel.model.fit`: every fitter, and the paper's Tables 4-6 fitted.

The numba kernels' on-disk cache is :mod:`diskmodel.model._jit`'s (imported first; the one subpackage that
touches files, as numba's own cache would).
The names below are the package's flat surface; the simulation's (numba) and the fitters' (scipy,
statsmodels) are imported on first use.
"""
from diskmodel.model import _jit  # noqa: F401  (numba's cache locator for the kernels below, before any is defined)
from .filesystems.cache import cache_service_time_s, hit_probability
from .drive.disk import Disk, ServiceTime, expected_random_service_time_s, service_time_s
from .filesystems.filesystem import FileSystem, PageCache, file_system_access_time
from .stacks.volumes import LinearVolume, Partition, Segment, StripedVolume
from .stacks.lvm_mapping import LvmMapping
from .stacks.volume_on_disk import DiskRegion, VolumeOnDisk
from .drive.drives import PresetDrive
from .stacks.stack import FileSystemNode, Stack, paper_stack, stack_on
from .predict import Prediction  # the function: diskmodel.model.predict.predict (the name stays the module's)
from .drive.presets import available_presets, disk_from_spec, load_preset
from .drive.rotation import mean_rotational_latency_s, rotation_period_s
from .drive.seek import TableSeek, TwoPieceSeek, mean_random_seek_time_s
from .predictions.workload import PostMarkConfig, PostMarkCounts, expected_counts, postmark_preset
from .drive.zones import Geometry, Zone, uniform_geometry

_LAZY = {
    "DriveParameters": "drive.parameters", "SimulationResult": "simulator.simulate",
    "simulate_requests": "simulator.simulate", "ZoneLayout": "simulator.mapping",
    "TraceValidation": "predictions.validation", "disksim_demerit_s": "predictions.validation",
    "quantile_demerit_s": "predictions.validation", "empirical_quantiles": "predictions.validation",
    "mean_error_percent": "predictions.validation",
    # the fitters (scipy.optimize, statsmodels: seconds to import) on first use, so that a command that
    # fits nothing (cleanup, probe, --help) does not wait for them
    "Case": "fit", "FitResult": "fit", "fit_io_parameters": "fit", "fit_lvm_mapping": "fit",
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
