"""A CPU latency request of PM QoS as a run's undoable change: the ``pmqos`` resource kind (made by
:func:`diskmodel.calibrate.emulate.cpu_latency.cpu_latency_held`).

A process that writes a 32-bit latency to ``/dev/cpu_dma_latency`` and keeps the file open asks the
kernel that no CPU take longer than that to wake from idle; the request lasts until the file is closed,
by the process or by the kernel when the process ends, SIGKILL too (Documentation/power/pm_qos_interface.rst,
``cpu_latency_qos_release`` in kernel/power/qos.c). The cpuidle governors then pick no idle state whose exit
latency exceeds it: at zero, an idle CPU polls (``haltpoll_select`` in drivers/cpuidle/governors/haltpoll.c
returns the polling state when ``cpu_latency_qos_limit()`` is 0; menu and teo do likewise), so a thread that
blocked is woken without the wake-up of a halted CPU (on a virtual machine, the hypervisor's).

The request is recorded in the run's state file before the file is opened: the holding process's pid and
start time and the descriptor's number. It is there while that process lives and holds that descriptor on
the device; the undo closes it in the holding process (the run's own teardown). After a SIGKILL the kernel
has already closed it, so ``diskmodel cleanup`` finds it gone.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

__all__ = ["DEVICE", "current_limit_us", "describe", "present", "restore", "start_ticks"]

#: The CPU latency request's device (misc device, kernel/power/qos.c).
DEVICE = "/dev/cpu_dma_latency"


def start_ticks(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[19])


def current_limit_us(device: str = DEVICE) -> int | None:
    """The CPU latency every request together asks for now [us] (reading the device gives it), or None where
    the device cannot be read."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4)
    except OSError:
        return None
    finally:
        os.close(fd)
    return struct.unpack("i", raw)[0] if len(raw) == 4 else None


def _checked(d: dict) -> dict:
    for key in ("pid", "start_ticks", "fd", "value_us"):
        if isinstance(d.get(key), bool) or not isinstance(d.get(key), int) or not -1 <= d[key] < 2 ** 31:
            raise ValueError(f"pmqos record: field {key!r} is {d.get(key)!r}, not a whole number")
    if d.get("device") != DEVICE:
        raise ValueError(f"pmqos record: field 'device' is {d.get('device')!r}, not {DEVICE}")
    return d


def present(d: dict) -> bool:
    """Does the recorded process (same pid and start time) still hold the recorded descriptor on the device?"""
    d = _checked(d)
    if d["fd"] < 0 or start_ticks(d["pid"]) != d["start_ticks"]:   # -1: recorded, not yet opened
        return False
    try:
        return os.readlink(f"/proc/{d['pid']}/fd/{d['fd']}") == d["device"]
    except OSError:
        return False


def restore(d: dict) -> str:
    """Close the recorded descriptor if this process holds it ('' on success); a request another live process
    holds is its own to close (it ends with that process), so it is named, not touched."""
    if not present(d):
        return ""
    if d["pid"] != os.getpid():
        return f"held by live process {d['pid']}: released when it closes {DEVICE} or ends"
    os.close(d["fd"])
    return ""


def describe(d: dict) -> str:
    return (f"CPU latency request of {d.get('value_us')} us on {d.get('device')} held by process {d.get('pid')} "
            f"(descriptor {d.get('fd')}; the limit was {d.get('limit_before_us')} us)")
