"""``--emulate DRIVE`` for the workload commands (``postmark``, ``bench``, ``experiment``): one emulated
drive as the stack's disk (``bench``: one for each of the stack's disks), on the host or in the VM.

On the host the drive is a loop device (:func:`~diskmodel.calibrate.emulate.devices.emulated_drives`):
the stack's partitions are cut from it as from any scratch device. In the VM
(stacks that need device-mapper or md where the host has neither) it is the
guest's ``/dev/vdb`` (:func:`~diskmodel.calibrate.emulate.for_vm.nbd_drives`).
Either way the tool created the device, so writing to it needs no
``--destroy-data-on``; the run's record tears it down with everything else.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from diskmodel.calibrate.emulate.drives import DriveSpec, resolve_drive
from diskmodel.model._checks import show

__all__ = ["EmulatedDisk", "check_fits", "drive_for_flag", "emulate_flag", "emulated_disk", "summary_line"]

log = logging.getLogger(__name__)


def drive_for_flag(drive: str, flag: str = "--emulate") -> DriveSpec:
    """The drive of ``FLAG DRIVE``; ValueError in one line naming the flag and the value."""
    try:
        return resolve_drive(drive)
    except ValueError as exc:
        text = str(exc)
        raise ValueError(f"{flag} {text}" if text.startswith("DRIVE") else f"{flag} DRIVE {show(drive)}: {text}") from None


def check_fits(spec: DriveSpec, needed_bytes: int, flag: str = "--emulate") -> None:
    """ValueError when the stack's disk (*needed_bytes*) is larger than the emulated drive."""
    if needed_bytes > spec.capacity_bytes:
        raise ValueError(f"{flag} {spec.name}: the stack needs a disk of {needed_bytes} bytes, the drive holds "
                         f"{spec.capacity_bytes}; choose a larger drive or a smaller --size")


def emulate_flag(drive: str | None, needed_bytes: int, *, scratch=None, destroy_data_on=None) -> DriveSpec | None:
    """``--emulate DRIVE`` of a workload command, checked before anything is built (None without it).

    ValueError in one line: a bad DRIVE, a drive smaller than the stack's
    disk (*needed_bytes*), or a scratch given as well.
    """
    if drive is None:
        return None
    if scratch or destroy_data_on:
        raise ValueError("--scratch and --destroy-data-on do not apply with --emulate (the emulated drive is the "
                         "stack's disk)")
    spec = drive_for_flag(drive)
    check_fits(spec, needed_bytes)
    return spec


@dataclass
class EmulatedDisk:
    """The stack's disks: ``path`` (the first host loop device) or ``vm_drives`` (for the VM); ``backings``,
    each of several *disks* on its own drive; ``summaries`` once done."""

    drive: str
    path: str | None
    vm_drives: tuple = ()
    devices: tuple = ()
    disks: tuple = ()

    @property
    def backings(self) -> dict | None:
        """``{disk: device}`` (the host's loop device, or the guest's) where the stack has several disks
        (``build_plan``'s *disk_backings*); None for one, which the drive is as a scratch device is."""
        if len(self.disks) < 2:
            return None
        return {disk: getattr(d, "guest_path", None) or d.path for disk, d in zip(self.disks, self.devices)}

    @property
    def summaries(self) -> list[dict]:
        return [d.summary for d in self.devices if d.summary]


def summary_line(summary: dict) -> str:
    """One line on what reached an emulated drive and how late its requests completed."""
    def ms(key):
        value = summary.get(key)
        return "n/a" if value is None else f"{value * 1e3:.3f} ms"

    line = (f"emulated {summary.get('drive')}: {summary.get('requests', 0)} requests "
            f"({summary.get('bytes_read', 0)} bytes read, {summary.get('bytes_written', 0)} written); "
            f"lateness p50 {ms('lateness_p50_s')}, p99 {ms('lateness_p99_s')}, max {ms('lateness_max_s')}")
    if summary.get("lateness_within_bound") is False:
        line += (f" -- WARNING: p99 exceeds the bound {ms('lateness_p99_bound_s')}: requests completed later "
                 f"than the drive's simulation says (a busy host)")
    return line


@contextlib.contextmanager
def emulated_disk(spec: DriveSpec, *, vm: bool, log_dir=None, say=None, disks=("sda",)):
    """Serve *spec* as the stack's disk (see the module doc), one drive for each of its *disks* (names);
    yields an :class:`EmulatedDisk`.

    On leaving, each drive's request-log summary is said in one line
    (:func:`summary_line`) through *say* (default: this module's logger).
    """
    say = say or (lambda line: log.warning("%s", line))
    if vm:
        from diskmodel.calibrate.emulate.for_vm import nbd_drives
        cm = nbd_drives([spec] * len(disks), log_dir=log_dir, say=say)
    else:
        from diskmodel.calibrate.emulate.devices import emulated_drives
        cm = emulated_drives([spec] * len(disks), log_dir=log_dir, say=say)
    disk = None
    try:
        with cm as devices:
            disk = EmulatedDisk(spec.name, None if vm else devices[0].path, tuple(devices) if vm else (),
                                tuple(devices), tuple(disks))
            yield disk
    finally:
        for summary in disk.summaries if disk is not None else ():
            say(summary_line(summary))
