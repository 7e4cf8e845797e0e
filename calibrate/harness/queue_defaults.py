"""A block device's queue settings (sysfs ``queue/read_ahead_kb`` and ``queue/max_sectors_kb``), set to the
kernel's defaults for a fresh disk, which the model takes.

The settings of a loop device the harness makes are not constants of the kernel. On this host's Linux 6.18 a
loop device over a file on the root disk came out reading ahead 2560 KiB, one over a file on tmpfs or on a
file system whose device reads ahead 128 KiB at 128 KiB; and a loop number keeps what its earlier use left
after ``losetup -d``: the read-ahead the bdi's ``ra_pages`` holds, and a ``max_sectors_kb`` a user set (a
request limit of 512 KiB set on loop0 in one run halved the largest writes of every later run on loop0). A
measurement on such a device would depend on what ran on the host before it. So each device the harness
makes is set, before anything goes through it, to a disk's defaults: the read-ahead
:data:`~diskmodel.model.iopath.read_ahead.DEFAULT_READ_AHEAD_KB` (what the model gives a drive, a partition
and a loop device: :func:`~diskmodel.model.iopath.read_ahead.device_read_ahead_kb`) and the request limit
:data:`~diskmodel.model.drive.drives.DEFAULT_MAX_SECTORS_KB` (a drive node's default ``max_sectors_kb``),
each read back.
"""
from __future__ import annotations

import os
from pathlib import Path

from diskmodel.model.drive.drives import DEFAULT_MAX_SECTORS_KB
from diskmodel.model.iopath.read_ahead import DEFAULT_READ_AHEAD_KB

__all__ = ["queue_value", "set_queue_value", "set_disk_defaults"]

#: The queue settings this module sets.
SETTINGS = ("read_ahead_kb", "max_sectors_kb")


def _queue_file(device: str, name: str) -> Path:
    if name not in SETTINGS:
        raise ValueError(f"name must be one of {', '.join(SETTINGS)} (got {name!r})")
    return Path("/sys/class/block") / os.path.basename(os.path.realpath(device)) / "queue" / name


def queue_value(device: str, name: str) -> int:
    """The queue setting *name* [KiB] of block device *device* now."""
    return int(_queue_file(device, name).read_text())


def set_queue_value(device: str, name: str, kb: int) -> int:
    """Set *device*'s queue setting *name* to *kb* KiB (a whole number >= 0) and return it as read back; a
    kernel that refuses it or keeps another value is one line naming the device, the setting and both values."""
    if isinstance(kb, bool) or not isinstance(kb, int) or kb < 0:
        raise ValueError(f"{name} must be a whole number of KiB >= 0 (got {kb!r})")
    path = _queue_file(device, name)
    try:
        path.write_text(str(kb))
    except OSError as exc:
        raise RuntimeError(f"{device}: cannot set {name} to {kb} KiB ({path}: {exc.strerror})") from None
    kept = queue_value(device, name)
    if kept != kb:
        raise RuntimeError(f"{device}: {name} set to {kb} KiB, but the kernel keeps {kept} KiB ({path})")
    return kept


def set_disk_defaults(device: str) -> dict:
    """Set *device*'s request limit, then its read-ahead, to a fresh disk's (the module docstring); returns
    ``{setting: KiB}`` read back once both are set. The limit goes first: on Linux 6.18 a new request limit
    sets a loop device's read-ahead anew (to twice the limit: 1280 KiB gave 2560)."""
    set_queue_value(device, "max_sectors_kb", DEFAULT_MAX_SECTORS_KB)
    set_queue_value(device, "read_ahead_kb", DEFAULT_READ_AHEAD_KB)
    out = {name: queue_value(device, name) for name in SETTINGS}
    if out != {"read_ahead_kb": DEFAULT_READ_AHEAD_KB, "max_sectors_kb": DEFAULT_MAX_SECTORS_KB}:
        raise RuntimeError(f"{device}: queue settings {out} after setting a disk's defaults "
                           f"({DEFAULT_READ_AHEAD_KB} and {DEFAULT_MAX_SECTORS_KB} KiB)")
    return out
