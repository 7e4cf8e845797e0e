"""The disks of a storage stack (:mod:`diskmodel.model.stacks.stack`): node types that say where a Disk comes from.

A partition names its disk (``Partition.disk``, e.g. "sda"); the stack's
drives give each name a :class:`~diskmodel.model.drive.disk.Disk`: a preset
(:class:`PresetDrive`, kind "preset"), a file (:class:`FileDrive`: a DiskSim
drive folder, kind "disksim", or a calibration saved by ``diskmodel
calibrate --json``, kind "calibration"), or a Disk in memory
(:class:`InMemoryDrive`, "in_memory", which has no JSON form). The
model reads no file: drives that name one are loaded by
:mod:`diskmodel.calibrate.stacks`.

Every drive also carries its queue's request-size limit, ``max_sectors_kb``
(sysfs ``/sys/block/<disk>/queue/max_sectors_kb``), the largest request the
block layer sends it and, stacked, every partition, md and dm device over it
(:func:`diskmodel.model.iopath.path.max_sectors_kb`). Its default is Linux's
since 4.3, BLK_DEF_MAX_SECTORS = 2560 sectors (1280 KiB; commit d2be537c3ba3,
"block: bump BLK_DEF_MAX_SECTORS to 2560"); kernels before it capped a disk at
1024 sectors (512 KiB), as on the multi-disk LVM study's Linux 3.17, where no
bio covers a 1 MiB thin-pool chunk and dm-thin zero-fills every new one
(:mod:`diskmodel.model.iopath.dm_thin`). There a file system built its bios under
the queue's limit (bio_add_page took queue_max_sectors until 4.3); on Linux 6.1
device-mapper cuts a bio for a target that sets its max_io_len, as dm-thin does
with its block size, at the smaller of the block and the mapped device's
max_sectors_kb (dm.c, __max_io_len), so the same limit set in sysfs has the same
effect there.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .._checks import one_of, show, whole_number
from .disk import Disk
from ..stacks.nodes import is_node, node_type, text_field
from .presets import available_presets, load_preset

__all__ = ["DEFAULT_MAX_SECTORS_KB", "DEFAULT_SCHEDULER", "SCHEDULERS", "in_memory", "MIN_MAX_SECTORS_KB", "FILE_KINDS", "PresetDrive", "FileDrive",
           "InMemoryDrive", "as_drive"]

#: A disk queue's default request-size limit [KiB]: BLK_DEF_MAX_SECTORS, 2560 sectors since Linux 4.3
#: (commit d2be537c3ba3; 1024 sectors, 512 KiB, before it), also a loop device's.
DEFAULT_MAX_SECTORS_KB = 1280
#: The I/O schedulers the model knows (sysfs ``queue/scheduler``; :mod:`diskmodel.model.iopath.scheduler`).
SCHEDULERS = ("mq-deadline", "none")
#: The I/O scheduler Linux gives a disk with one hardware queue (block/elevator.c, elevator_get_default).
DEFAULT_SCHEDULER = "mq-deadline"
#: The smallest limit the kernel takes: one page (block/blk-sysfs.c, queue_max_sectors_store) [KiB].
MIN_MAX_SECTORS_KB = 4


def _drive_name(name) -> str:
    return text_field("name", name, empty_ok=False)


def _max_sectors_kb(value) -> int:
    return whole_number("max_sectors_kb", value, minimum=MIN_MAX_SECTORS_KB)


def _check_queue(drive) -> None:
    one_of("scheduler", drive.scheduler, SCHEDULERS)
    object.__setattr__(drive, "queue_depth", whole_number("queue_depth", drive.queue_depth, minimum=1))


#: The queue settings a stack file leaves out where they are the default (a stack file written before a
#: field existed reads back the same).
_QUEUE_DEFAULTS = {"max_sectors_kb": DEFAULT_MAX_SECTORS_KB, "scheduler": DEFAULT_SCHEDULER, "queue_depth": 1}


def _json_fields(drive) -> dict:
    """The drive's fields as a stack file writes them: the queue settings only where not the default."""
    fields = {f.name: getattr(drive, f.name) for f in dataclasses.fields(drive) if f.init and f.name != "kind"}
    return {k: v for k, v in fields.items() if not (k in _QUEUE_DEFAULTS and v == _QUEUE_DEFAULTS[k])}


def _limit_text(drive) -> str:
    return "".join(f", {k} {getattr(drive, k)}" for k, v in _QUEUE_DEFAULTS.items() if getattr(drive, k) != v)


@node_type("preset")
@dataclass(frozen=True)
class PresetDrive:
    """A named preset (:func:`diskmodel.model.drive.presets.load_preset`) as disk *name*.

    Attributes
    ----------
    preset : str
        The preset's name (:func:`diskmodel.model.drive.presets.available_presets`: wd800bd, hp97560, ...).
    name : str
        The disk's name in the stack, which partitions name (e.g. "sda").
    max_sectors_kb : int
        The drive's queue limit ``max_sectors_kb``: its largest request [KiB] (1024 bytes, the
        kernel's sysfs unit), >= 4 (a page). The block layer splits larger ones, and a partition,
        md or dm device over the drive takes the smallest of its drives' (blk_stack_limits); the
        default is Linux's since 4.3 (BLK_DEF_MAX_SECTORS, 2560 sectors), 512 before it (the
        multi-disk LVM study's Linux 3.17).
    scheduler : str
        The I/O scheduler of the drive's queue (sysfs ``queue/scheduler``): "mq-deadline", what Linux
        gives a disk with one hardware queue (a SATA or SAS disk), or "none", arrival order (a loop
        device's, a multi-queue virtio disk's). :mod:`diskmodel.model.iopath.scheduler`.
    queue_depth : int
        Commands the driver gives the drive at once [count], >= 1 (the driver's tags): 1 for a drive
        without command queueing, or one whose own reordering the scheduler's order stands in for.
    """

    preset: str
    name: str = "sda"
    max_sectors_kb: int = DEFAULT_MAX_SECTORS_KB
    scheduler: str = DEFAULT_SCHEDULER
    queue_depth: int = 1

    def __post_init__(self):
        one_of("preset", self.preset, available_presets())
        _drive_name(self.name)
        object.__setattr__(self, "max_sectors_kb", _max_sectors_kb(self.max_sectors_kb))
        _check_queue(self)

    def model_disk(self) -> Disk:
        return load_preset(self.preset)

    def describe(self) -> str:
        return f"disk {self.name}: preset {self.preset}{_limit_text(self)}"

    def json_fields(self) -> dict:
        return _json_fields(self)


#: What the file of a drive of each kind holds.
FILE_KINDS = {"disksim": "DiskSim drive folder", "calibration": "calibration"}


@node_type(*FILE_KINDS)
@dataclass(frozen=True)
class FileDrive:
    """A disk described by files, read when the stack is loaded (the model itself reads no file), as disk *name*.

    Kind "disksim": a DiskSim drive folder, or a bundled DiskSim drive's name (atlas10k, hp_c2247a, ...);
    "calibration": a calibration saved by ``diskmodel calibrate --json``. :mod:`diskmodel.calibrate.stacks`
    loads them (a relative path from the stack file's folder).

    Attributes
    ----------
    kind : str
        "disksim" or "calibration".
    path : str
        The folder or file, relative to the stack file's folder unless absolute; for "disksim" also a
        bundled drive's name.
    name : str
        The disk's name in the stack, which partitions name (e.g. "sda").
    max_sectors_kb : int
        The drive's queue limit ``max_sectors_kb``: its largest request [KiB] (1024 bytes, the
        kernel's sysfs unit), >= 4 (a page). The block layer splits larger ones, and a partition,
        md or dm device over the drive takes the smallest of its drives' (blk_stack_limits); the
        default is Linux's since 4.3 (BLK_DEF_MAX_SECTORS, 2560 sectors), 512 before it (the
        multi-disk LVM study's Linux 3.17).
    scheduler : str
        The I/O scheduler of the drive's queue (sysfs ``queue/scheduler``): "mq-deadline", what Linux
        gives a disk with one hardware queue (a SATA or SAS disk), or "none", arrival order (a loop
        device's, a multi-queue virtio disk's). :mod:`diskmodel.model.iopath.scheduler`.
    queue_depth : int
        Commands the driver gives the drive at once [count], >= 1 (the driver's tags): 1 for a drive
        without command queueing, or one whose own reordering the scheduler's order stands in for.
    """

    kind: str
    path: str
    name: str = "sda"
    max_sectors_kb: int = DEFAULT_MAX_SECTORS_KB
    scheduler: str = DEFAULT_SCHEDULER
    queue_depth: int = 1

    def __post_init__(self):
        one_of("kind", self.kind, tuple(FILE_KINDS))
        text_field("path", self.path, empty_ok=False)
        _drive_name(self.name)
        object.__setattr__(self, "max_sectors_kb", _max_sectors_kb(self.max_sectors_kb))
        _check_queue(self)

    def model_disk(self) -> Disk:
        raise ValueError(f"disk {self.name}: the {FILE_KINDS[self.kind]} {self.path} is a file the model does not "
                         "read; load the stack with diskmodel.calibrate.stacks.resolve_drives (or give the Disk itself)")

    def describe(self) -> str:
        return f"disk {self.name}: {FILE_KINDS[self.kind]} {self.path}{_limit_text(self)}"

    def json_fields(self) -> dict:
        return _json_fields(self)


@node_type("in_memory")
@dataclass(frozen=True)
class InMemoryDrive:
    """A :class:`~diskmodel.model.drive.disk.Disk` object as disk *name* (a fitted or what-if disk).

    It has no JSON form: save a calibration and name its file instead.

    Attributes
    ----------
    disk : Disk
        The disk's model parameters (a fitted or what-if disk).
    name : str
        The disk's name in the stack, which partitions name (e.g. "sda").
    max_sectors_kb : int
        The drive's queue limit ``max_sectors_kb``: its largest request [KiB] (1024 bytes, the
        kernel's sysfs unit), >= 4 (a page). The block layer splits larger ones, and a partition,
        md or dm device over the drive takes the smallest of its drives' (blk_stack_limits); the
        default is Linux's since 4.3 (BLK_DEF_MAX_SECTORS, 2560 sectors), 512 before it (the
        multi-disk LVM study's Linux 3.17).
    scheduler : str
        The I/O scheduler of the drive's queue (sysfs ``queue/scheduler``): "mq-deadline", what Linux
        gives a disk with one hardware queue (a SATA or SAS disk), or "none", arrival order (a loop
        device's, a multi-queue virtio disk's). :mod:`diskmodel.model.iopath.scheduler`.
    queue_depth : int
        Commands the driver gives the drive at once [count], >= 1 (the driver's tags): 1 for a drive
        without command queueing, or one whose own reordering the scheduler's order stands in for.
    """

    JSON_FORM = False

    disk: Disk
    name: str = "sda"
    max_sectors_kb: int = DEFAULT_MAX_SECTORS_KB
    scheduler: str = DEFAULT_SCHEDULER
    queue_depth: int = 1

    def __post_init__(self):
        if not isinstance(self.disk, Disk):
            raise ValueError(f"disk must be a Disk (got {show(self.disk)})")
        _drive_name(self.name)
        object.__setattr__(self, "max_sectors_kb", _max_sectors_kb(self.max_sectors_kb))
        _check_queue(self)

    def model_disk(self) -> Disk:
        return self.disk

    def describe(self) -> str:
        return f"disk {self.name}: {self.disk.name} ({self.disk.capacity_bytes / 1e9:.2f} GB, in memory{_limit_text(self)})"

    def json_fields(self) -> dict:
        raise ValueError(f"disk {self.name}: an in-memory Disk ({self.disk.name}) has no JSON form; save it "
                         "with `diskmodel calibrate --json` and name the file (kind \"calibration\"), or name a preset")


def as_drive(disk, name: str = "sda"):
    """*disk* as a drive node: a drive node as it is, a Disk in memory, or a preset name."""
    if isinstance(disk, Disk):
        return InMemoryDrive(disk, name)
    if isinstance(disk, str):
        return PresetDrive(disk, name)
    if is_node(disk) and hasattr(disk, "model_disk"):
        return disk
    raise ValueError(f"disk must be a Disk, a preset name or a drive node (got {show(disk)})")


def in_memory(drive, disk: Disk) -> InMemoryDrive:
    """*drive* (any drive node) as the Disk *disk* in memory, with its name and its queue's settings
    (``max_sectors_kb``, ``scheduler``, ``queue_depth``): a drive node whose file was read, or completed."""
    return InMemoryDrive(disk, drive.name, drive.max_sectors_kb, drive.scheduler, drive.queue_depth)
