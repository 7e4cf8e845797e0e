"""Emulated drives: any modelled drive served as a real Linux block device, timed request by request.

``with emulated_drives(["wd800bd"]) as devices: ...`` yields
:class:`EmulatedDevice` objects whose ``path`` is a loop device
(``/dev/loopN``): nbdkit serves the drive (:mod:`._nbd_plugin`,
:mod:`.server`), nbdfuse exposes it as a file and ``losetup --direct-io=on``
attaches that (:mod:`.devices`). Each request completes when the drive's
simulation says (:mod:`.timing`); every request is logged (:mod:`.requestlog`,
:func:`read_log`). Which drive: :func:`resolve_drive` (a DiskSim drive's name
or folder, a preset, a calibration JSON) or :func:`flat_drive`.
"""
from diskmodel.calibrate.emulate.devices import LATENESS_P99_BOUND_S, EmulatedDevice, check_tools, emulated_drives
from diskmodel.calibrate.emulate.drives import DriveSpec, flat_drive, resolve_drive
from diskmodel.calibrate.emulate.requestlog import format_summary, read_log, summarize

__all__ = ["DriveSpec", "EmulatedDevice", "LATENESS_P99_BOUND_S", "check_tools", "emulated_drives", "flat_drive",
           "format_summary", "read_log", "resolve_drive", "summarize"]
