"""The disks of a storage stack (:mod:`diskmodel.model.stacks.stack`): node types that say where a Disk comes from.

A partition names its disk (``Partition.disk``, e.g. "sda"); the stack's
drives give each name a :class:`~diskmodel.model.drive.disk.Disk`: a preset
(:class:`PresetDrive`, kind "preset"), a file (:class:`FileDrive`: a DiskSim
drive folder, kind "disksim", or a calibration saved by ``diskmodel
calibrate --json``, kind "calibration"), or a Disk in memory
(:class:`InMemoryDrive`, "in_memory", which has no JSON form). The
model reads no file: drives that name one are loaded by
:mod:`diskmodel.calibrate.stacks`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._checks import one_of, show
from .disk import Disk
from ..stacks.nodes import is_node, node_type, text_field
from .presets import available_presets, load_preset

__all__ = ["FILE_KINDS", "PresetDrive", "FileDrive", "InMemoryDrive", "as_drive"]


def _drive_name(name) -> str:
    return text_field("name", name, empty_ok=False)


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
    """

    preset: str
    name: str = "sda"

    def __post_init__(self):
        one_of("preset", self.preset, available_presets())
        _drive_name(self.name)

    def model_disk(self) -> Disk:
        return load_preset(self.preset)

    def describe(self) -> str:
        return f"disk {self.name}: preset {self.preset}"


#: What the file of a drive of each kind holds.
FILE_KINDS = {"disksim": "DiskSim drive folder", "calibration": "calibration"}


@node_type(*FILE_KINDS)
@dataclass(frozen=True)
class FileDrive:
    """A disk described by a file the model does not read, as disk *name*.

    Kind "disksim": a DiskSim drive folder; "calibration": a calibration
    saved by ``diskmodel calibrate --json``. :mod:`diskmodel.calibrate.stacks`
    loads them (a relative path from the stack file's folder).

    Attributes
    ----------
    kind : str
        "disksim" or "calibration".
    path : str
        The folder or file, relative to the stack file's folder unless absolute.
    name : str
        The disk's name in the stack, which partitions name (e.g. "sda").
    """

    kind: str
    path: str
    name: str = "sda"

    def __post_init__(self):
        one_of("kind", self.kind, tuple(FILE_KINDS))
        text_field("path", self.path, empty_ok=False)
        _drive_name(self.name)

    def model_disk(self) -> Disk:
        raise ValueError(f"disk {self.name}: the {FILE_KINDS[self.kind]} {self.path} is a file the model does not "
                         "read; load the stack with diskmodel.calibrate.stacks.resolve_drives (or give the Disk itself)")

    def describe(self) -> str:
        return f"disk {self.name}: {FILE_KINDS[self.kind]} {self.path}"


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
    """

    JSON_FORM = False

    disk: Disk
    name: str = "sda"

    def __post_init__(self):
        if not isinstance(self.disk, Disk):
            raise ValueError(f"disk must be a Disk (got {show(self.disk)})")
        _drive_name(self.name)

    def model_disk(self) -> Disk:
        return self.disk

    def describe(self) -> str:
        return f"disk {self.name}: {self.disk.name} ({self.disk.capacity_bytes / 1e9:.2f} GB, in memory)"

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
