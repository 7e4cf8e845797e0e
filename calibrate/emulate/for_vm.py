"""Emulated drives for the throwaway VM: nbdkit serves each drive on a unix socket, qemu attaches it.

Where a stack needs device-mapper or md and the host's kernel has neither,
the stack is built in the VM (:mod:`diskmodel.calibrate.bench.vm`). There the
emulator needs no FUSE and no loop device: qemu is itself an NBD client, so
:func:`nbd_drives` starts, for each drive, the same ``nbdkit`` with the same
plugin as on the host (:mod:`diskmodel.calibrate.emulate.devices`,
:mod:`diskmodel.calibrate.emulate._nbd_plugin`) listening on a unix socket,
and :func:`run_script_on_emulated_drives` boots the VM with each socket as a
virtio disk: the first drive is ``/dev/vdb``, the next ``/dev/vdc`` and so on
(``/dev/vda`` stays the VM's scratch disk).

Timing: every request completes at the time the drive's simulation gives,
on the host's monotonic clock, whatever the guest's CPU speed (under TCG the
guest's own work is slow; the drive's service is not). The path in front of
the server (the guest's virtio queue, qemu's NBD client, the socket) is not
measured and nothing is taken off the deadlines for it: the guest sees the
drive's time plus that path's. The request log
(:mod:`diskmodel.calibrate.emulate.requestlog`) records what reached the drive.

Safety as on the host: each drive's folder, backing file and nbdkit process
are recorded in the run's state before they are created, and torn down on
success, failure, SIGINT and SIGTERM (nbdkit dies with its parent after a
SIGKILL: ``--exit-with-parent`` and ``PR_SET_PDEATHSIG``; ``diskmodel cleanup``
removes the folders). The VM itself is recorded and torn down by
:func:`~diskmodel.calibrate.bench.vm.run_script_in_vm`.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from diskmodel.calibrate.emulate.devices import (DEFAULT_REALTIME_PRIORITY, LATENESS_P99_BOUND_S, EmulatedDevice,
                                                 _check_backing_dir, _Drive, _end_process, _start_nbdkit,
                                                 _summarise_log, realtime_or_note)
from diskmodel.calibrate.emulate.drives import resolve_drive
from diskmodel.calibrate.harness.interrupts import during_teardown

__all__ = ["GUEST_FIRST_DEVICE", "VmDrive", "check_vm_tools", "guest_device", "nbd_drives",
           "run_script_on_emulated_drives"]

log = logging.getLogger(__name__)

#: The guest's name of the first emulated drive (the VM's scratch disk is /dev/vda).
GUEST_FIRST_DEVICE = "/dev/vdb"
#: virtio disks the guest names /dev/vdb ... /dev/vdz.
MAX_DRIVES = 25


def guest_device(index: int) -> str:
    """The guest's path of the emulated drive number *index* (0: ``/dev/vdb``)."""
    if not 0 <= index < MAX_DRIVES:
        raise ValueError(f"at most {MAX_DRIVES} emulated drives can be attached to the VM (drive {index + 1})")
    return f"/dev/vd{chr(ord('b') + index)}"


@dataclass
class VmDrive:
    """One emulated drive served to the VM.

    ``socket``: the NBD server's unix socket as qemu reaches it (through the
    inherited descriptor ``dir_fd``: a socket's path must fit in 108 bytes,
    the run's folder may be deeper); ``guest_path``: the guest's device.
    ``summary`` (:func:`~diskmodel.calibrate.emulate.requestlog.summarize`)
    and ``timing`` are filled in at teardown; ``log_path`` is the request log
    (kept only with *log_dir*).
    """

    drive: str
    guest_path: str
    size_bytes: int
    socket: str
    dir_fd: int
    log_path: str
    timing: str | None = None
    summary: dict | None = None

    def as_dict(self) -> dict:
        return {"drive": self.drive, "path": self.guest_path, "size_bytes": self.size_bytes}


def check_vm_tools() -> None:
    """RuntimeError naming nbdkit or its Python plugin (and the Debian package) when missing."""
    if shutil.which("nbdkit") is None:
        raise RuntimeError("nbdkit is not installed (Debian package nbdkit); emulated drives need it")
    proc = subprocess.run(["nbdkit", "--dump-plugin", "python"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError("nbdkit's Python plugin is not installed (Debian package nbdkit-plugin-python): "
                           + (proc.stderr.strip().splitlines() or ["nbdkit --dump-plugin python failed"])[-1])


class _Served:
    def __init__(self, drv: _Drive, dir_fd: int | None = None):
        self.drv, self.dir_fd = drv, dir_fd


def _start(run, served: _Served, index: int, backing_dir, log_dir, realtime_priority) -> None:
    drv = served.drv
    # The server takes the fixed cost from this file before its first request: none here (see the module doc),
    # and no probe reads, which only the host's loop path makes.
    (drv.folder / "control.json").write_text(json.dumps({"fixed_cost_s": 0.0}))
    served.dir_fd = os.open(drv.folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # passed to qemu by number
    _start_nbdkit(run, drv, backing_dir, log_dir, index, served.dir_fd, realtime_priority)
    drv.device.path = guest_device(index)


def _stop(run, served: _Served, say, lateness_bound_s: float) -> None:
    drv = served.drv
    _end_process(drv.nbdkit, terminate=True)  # nbdkit writes the request log as it unloads the plugin
    if served.dir_fd is not None:
        os.close(served.dir_fd)
        served.dir_fd = None
    report = run.undo(drv.resources)
    if not report.complete:
        say(f"WARNING: {report}")
    if drv.nbdkit is not None:
        _summarise_log(drv.device, lateness_bound_s)


@contextlib.contextmanager
def nbd_drives(drives, *, backing_dir=None, log_dir=None, lateness_bound_s: float = LATENESS_P99_BOUND_S,
               realtime_priority: int | None = DEFAULT_REALTIME_PRIORITY, say=None):
    """Serve each of *drives* over NBD on a unix socket for the VM; yields a list of :class:`VmDrive`.

    *drives*, *backing_dir*, *log_dir*, *lateness_bound_s* and *realtime_priority* (nbdkit's threads) as for
    :func:`~diskmodel.calibrate.emulate.devices.emulated_drives`. Each
    :class:`VmDrive`'s ``summary`` is filled in once the context ends. Pass
    the drives to :func:`run_script_on_emulated_drives` (or their sockets and
    descriptors to :func:`~diskmodel.calibrate.bench.vm.run_script_in_vm`).
    """
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.interrupts import handle_signals

    say = say or (lambda line: log.warning("%s", line))
    specs = [resolve_drive(d) for d in drives]
    if not specs:
        raise ValueError("give at least one drive to emulate")
    guest_device(len(specs) - 1)
    backing_dir = Path(backing_dir) if backing_dir is not None else None
    log_dir = Path(log_dir) if log_dir is not None else None
    if backing_dir is not None:
        _check_backing_dir(backing_dir, specs)
    if log_dir is not None and not log_dir.is_dir():
        raise ValueError(f"--log-dir {log_dir}: not a directory")
    realtime_priority = realtime_or_note(realtime_priority, say)
    check_vm_tools()
    with handle_signals(), runstate.ensure_run("diskmodel: emulated drives for a VM") as run:
        if backing_dir is None:
            _check_backing_dir(run.work_dir(), specs)
        built: list[_Served] = []
        out: list[VmDrive] = []
        try:
            for i, spec in enumerate(specs):
                folder = run.temp_dir(f"vmdrive{i}-")
                served = _Served(_Drive(spec, folder, EmulatedDevice(spec.name, None, spec.capacity_bytes, "")))
                built.append(served)
                _start(run, served, i, backing_dir, log_dir, realtime_priority)
                out.append(VmDrive(spec.name, served.drv.device.path, spec.capacity_bytes,
                                   f"/proc/self/fd/{served.dir_fd}/nbd.sock", served.dir_fd,
                                   served.drv.device.log_path))
            yield out
        finally:
            with during_teardown():
                for served in reversed(built):
                    _stop(run, served, say, lateness_bound_s)
                for vd, served in zip(out, built):
                    vd.timing, vd.summary = served.drv.device.timing, served.drv.device.summary


def run_script_on_emulated_drives(script: str, drives, *, backing_dir=None, log_dir=None,
                                  lateness_bound_s: float = LATENESS_P99_BOUND_S, say=None, **vm_kwargs):
    """Serve *drives* (:func:`nbd_drives`) and run *script* in the throwaway VM with them attached.

    Returns ``(VmResult, [VmDrive, ...])``, the drives' request-log
    summaries filled in. *vm_kwargs* go to
    :func:`~diskmodel.calibrate.bench.vm.run_script_in_vm` (``scratch_disk_bytes``
    defaults to 1 MiB: the script works on the emulated drives).
    """
    from diskmodel.calibrate.bench.vm import run_script_in_vm
    from diskmodel.calibrate.harness import runstate

    vm_kwargs.setdefault("scratch_disk_bytes", 1 << 20)
    with runstate.ensure_run("diskmodel: a VM script on emulated drives"):
        with nbd_drives(drives, backing_dir=backing_dir, log_dir=log_dir, lateness_bound_s=lateness_bound_s,
                        say=say) as served:
            result = run_script_in_vm(script, nbd_sockets=[d.socket for d in served],
                                      pass_fds=[d.dir_fd for d in served], **vm_kwargs)
        return result, served
