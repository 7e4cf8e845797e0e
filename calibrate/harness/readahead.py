"""A block device's read-ahead (sysfs ``queue/read_ahead_kb``), set to a value the run chooses.

The read-ahead of a device the harness makes is not a constant of the kernel. On this host's Linux 6.18 a
loop device over a file on the root disk came out at 2560 KiB, one over a file on tmpfs or on a file system
whose device reads ahead 128 KiB at 128 KiB, and a loop number used before kept the larger value its earlier
use had left (the bdi's ``ra_pages`` outlives ``losetup -d``; block/blk-settings.c, ``blk_apply_bdi_limits``,
never lowers it). A measurement on such a device would then depend on what ran on the host before it. So the
devices the harness makes are set, before anything reads through them, to the read-ahead the model gives
their node (:func:`diskmodel.model.iopath.read_ahead.device_read_ahead_kb`; a disk's is the kernel's default,
128 KiB), and the value read back is what the run reports.
"""
from __future__ import annotations

import os
from pathlib import Path

from diskmodel.model.iopath.read_ahead import DEFAULT_READ_AHEAD_KB

__all__ = ["read_ahead_kb", "set_read_ahead_kb", "set_disk_read_ahead"]


def _queue_file(device: str) -> Path:
    name = os.path.basename(os.path.realpath(device))
    return Path("/sys/class/block") / name / "queue" / "read_ahead_kb"


def read_ahead_kb(device: str) -> int:
    """The read-ahead [KiB] the kernel gives block device *device* now."""
    return int(_queue_file(device).read_text())


def set_read_ahead_kb(device: str, kb: int) -> int:
    """Set *device*'s read-ahead to *kb* KiB (a whole number >= 0) and return it as read back; a kernel
    that keeps another value is one line naming the device, the value asked and the value kept."""
    if isinstance(kb, bool) or not isinstance(kb, int) or kb < 0:
        raise ValueError(f"read_ahead_kb must be a whole number of KiB >= 0 (got {kb!r})")
    path = _queue_file(device)
    try:
        path.write_text(str(kb))
    except OSError as exc:
        raise RuntimeError(f"{device}: cannot set its read-ahead to {kb} KiB ({path}: {exc.strerror})") from None
    kept = read_ahead_kb(device)
    if kept != kb:
        raise RuntimeError(f"{device}: read-ahead set to {kb} KiB, but the kernel keeps {kept} KiB ({path})")
    return kept


def set_disk_read_ahead(device: str) -> int:
    """Set *device*'s read-ahead to a disk's, the kernel's default
    (:data:`~diskmodel.model.iopath.read_ahead.DEFAULT_READ_AHEAD_KB`), what the model gives a drive, a
    partition and a loop device; returns it as read back."""
    return set_read_ahead_kb(device, DEFAULT_READ_AHEAD_KB)
