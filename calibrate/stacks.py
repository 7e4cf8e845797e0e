"""Storage stacks from files: read a stack description, and load the disks it names by file.

The model's :class:`diskmodel.model.stacks.stack.Stack` is pure; a stack file
(JSON, :meth:`~diskmodel.model.stacks.stack.Stack.to_json`) and the drives that
name files -- a DiskSim drive folder, a calibration saved by ``diskmodel
calibrate --json`` -- are read here. Every error is a one-line ValueError
naming the file, and for a bad description the node and the field.
"""
from __future__ import annotations

import os
from pathlib import Path

from diskmodel.data.input_files import read_text_bounded
from diskmodel.model.drive.disk import Disk
from diskmodel.model.drive.drives import FileDrive, in_memory
from diskmodel.model.stacks.stack import Stack

__all__ = ["read_stack", "disk_of", "resolve_drives"]

#: A stack file larger than this is not a stack description [bytes].
MAX_STACK_FILE_BYTES = 1 << 20


def read_stack(path: str | os.PathLike, *, also_given=()) -> Stack:
    """The stack described in the JSON file *path*.

    *also_given*: the names of options given besides the file that would
    describe the stack too (a command line's ``--fs``, ...); the first is refused.
    """
    path = Path(path)
    if also_given:
        raise ValueError(f"{path}: {also_given[0]} does not apply with a stack file (the file describes the stack)")
    try:
        text = read_text_bounded(path, "stack file", MAX_STACK_FILE_BYTES)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory, where a stack file is expected") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file (a stack description is JSON)") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if not text.strip():
        raise ValueError(f"{path} is empty (a stack description is JSON)")
    try:
        return Stack.from_json(text)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _located(name: str, relative_to: Path | None) -> Path:
    path = Path(name)
    return path if path.is_absolute() or relative_to is None else relative_to / path


def disk_of(drive, relative_to: str | os.PathLike | None = None) -> Disk:
    """The Disk of a drive node; a relative file name is taken from *relative_to* (default: here)."""
    where = Path(relative_to) if relative_to is not None else None
    if isinstance(drive, FileDrive) and drive.kind == "disksim":
        from diskmodel.calibrate.harness.simulated import disk_from_name

        from diskmodel.data.disksim.bundled import BUNDLED_DRIVES, disksim_drive_folder

        folder = _located(drive.path, where)
        if not folder.is_dir() and drive.path in BUNDLED_DRIVES:  # a bundled drive's name, as --disk takes it
            folder = disksim_drive_folder(drive.path)
        if not folder.is_dir():
            raise ValueError(f"{folder}: no such DiskSim drive folder, nor a bundled drive's name "
                             f"({', '.join(BUNDLED_DRIVES)})")
        try:
            return disk_from_name(folder)
        except (ValueError, OSError) as exc:
            raise ValueError(f"{folder}: {exc}") from None
    if isinstance(drive, FileDrive) and drive.kind == "calibration":
        from diskmodel.calibrate.harness.results import CalibrationFileError, calibration_from_json

        path = _located(drive.path, where)
        try:
            result = calibration_from_json(path)
        except CalibrationFileError:
            raise  # names the file and the key already
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file") from None
        except OSError as exc:
            raise ValueError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        try:  # a device with no mechanical seek (flash, a virtual disk) is its flat latency model
            return result.to_disk(seek="two_piece" if result.mechanical_seek else "flat")
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    return drive.model_disk()


def resolve_drives(stack: Stack, relative_to: str | os.PathLike | None = None) -> Stack:
    """*stack* with each drive that names a file replaced by the Disk it holds (in memory)."""
    drives = []
    for i, drive in enumerate(stack.disks):
        if isinstance(drive, FileDrive):
            try:
                drive = in_memory(drive, disk_of(drive, relative_to))
            except ValueError as exc:
                raise ValueError(f"disks[{i}] ({drive.name}): {exc}") from None
        drives.append(drive)
    return stack.evolve(disks=tuple(drives))
