"""A throwaway qemu VM that runs one shell script against a scratch disk.

Where the host kernel has no device-mapper (``dmsetup version`` fails: this
machine, many CI runners and containers), LVM layouts are built inside a VM
instead: ``qemu-system-x86_64`` boots the host's Debian kernel
(``/boot/vmlinuz-<release>``, package ``linux-image-amd64``) with an initramfs
assembled from the Debian packages installed on the host
(:mod:`diskmodel.calibrate.bench.initramfs`), runs the script, returns
its output and exit status over a serial port and powers off.

Example::

    from diskmodel.calibrate.bench.vm import run_script_in_vm
    r = run_script_in_vm("pvcreate /dev/vda && pvs", scratch_disk_bytes=256 << 20)
    r.returncode, r.accelerator, r.output   # 0, 'tcg', '  Physical volume ...'

Accelerator
    TCG (pure emulation) by default, always: KVM is used only when the caller
    passes ``accelerator="kvm"`` explicitly (there is no auto-detection, since
    on some machines, this one among them, KVM hangs instead of failing).
    Under TCG every timing measures an emulator, not the disk: every report
    built from a :class:`VmResult` must say so (``VmResult.accelerator``).

What the guest offers (the contract for generated scripts)
    - The guest has no Python. A script is generated on the host from
      argument vectors: each word is rendered by ONE function,
      :func:`diskmodel.calibrate.bench.steps.sh_word` (``shlex.quote``, and
      ``"$NAME"`` for a value an earlier step captured), so a value from a
      user, a file or the environment arrives as exactly one word and is
      never interpreted (:meth:`~diskmodel.calibrate.bench.provision.StackPlan.render_script`).
    - The script runs as root with ``sh -e``, where ``sh`` is dash, Debian's
      ``/bin/sh`` (the host's own binary, so scripts behave as on the host;
      busybox's ash is not used because it runs its own applets ahead of the
      real programs on PATH), working directory
      ``/tmp``, stdin ``/dev/null``; stdout and stderr both come back in
      :attr:`VmResult.output`, free of kernel messages.
    - Environment: ``PATH=/usr/sbin:/usr/bin:/sbin:/bin``,
      ``DISKMODEL_VM=1``, ``DISKMODEL_SCRATCH=/dev/vda``,
      ``LVM_SUPPRESS_FD_WARNINGS=1``.
    - The scratch disk is ``/dev/vda`` (virtio-blk, raw, ``cache=none``), a
      sparse file on the host of exactly ``scratch_disk_bytes``; it starts
      all zeros and is deleted after the run. Nothing else is writable
      persistently.
    - Mounted: ``/proc``, ``/sys``, ``/dev`` (devtmpfs), ``/run`` and ``/tmp``
      (tmpfs), ``/sys/fs/cgroup`` (cgroup2). Empty directories ``/mnt`` and
      ``/root`` exist; the root file system is the initramfs (in RAM).
    - Kernel modules loaded at boot (with their dependencies): virtio_pci,
      virtio_blk, dm-mod (linear and striped targets), ext4 (also serves ext2
      and ext3), crc32c, xfs, loop. ``/proc/sys/vm/drop_caches`` works;
      ``/sys/block/*/queue/{scheduler,read_ahead_kb}`` are readable and writable.
    - Carried but loaded only on demand (``while read -r m; do insmod "$m";
      done < /etc/diskmodel/modules.network``): nbd, nfsv3, nfsv4, nfsd (with
      sunrpc, lockd and the rest), veth, sch_netem, sch_tbf.
    - Commands: busybox applets for everything below that the real
      programs do not provide (cat, dd, sync, sleep, awk, sed, grep, date,
      stat, truncate, timeout, insmod, ...); from lvm2 ``lvm`` and all its
      command links (pvcreate, vgcreate, lvcreate, lvs, vgs, pvs, vgremove,
      lvremove, pvremove, vgchange, lvchange, ...) and ``dmsetup``; from
      e2fsprogs mke2fs, mkfs.ext2, mkfs.ext3, mkfs.ext4, e2fsck, tune2fs,
      dumpe2fs (with the host's ``/etc/mke2fs.conf``); from xfsprogs
      mkfs.xfs (which refuses file systems under 300 MB); from util-linux mount, umount, losetup (``--direct-io``,
      ``--offset``, ``--sizelimit``), blockdev, blkid, wipefs, lsblk,
      findmnt; and ``postmark``. These are the host's own binaries, so the
      guest runs the same versions as the host.
    - lvm2 runs without udev: ``/etc/lvm/lvm.conf`` sets ``udev_sync = 0``,
      ``udev_rules = 0``, ``obtain_device_list_from_udev = 0``, no devices
      file, metadata backups in ``/run/lvm/backup`` (RAM), no archives, no
      monitoring; libdevmapper creates the
      ``/dev/mapper`` and ``/dev/<vg>/<lv>`` nodes itself.
    - Network programs, for :mod:`diskmodel.calibrate.bench.network`:
      nbd-server, nbd-client, rpcbind, rpc.nfsd, rpc.mountd, exportfs,
      mount.nfs, ip and tc (iproute2), with ``/etc/netconfig``,
      ``/etc/services`` and ``/etc/protocols``.
    - No network interface but ``lo`` (down until a script brings it up), no
      udev, no systemd.

Results travel over the second serial port (ttyS1) between per-run random
markers, so a script cannot forge them and kernel messages (on ttyS0, the
console) never mix into the output. The console is kept for diagnosis: a guest
that fails to boot raises :class:`VmBootError` with the tail of it. What
the VM needs but the host lacks raises
:class:`diskmodel.calibrate.bench.initramfs.VmUnavailableError` (a
``FileNotFoundError``) naming it and how to install it.

The kernel image and the base initramfs come from
:mod:`diskmodel.calibrate.bench.initramfs` (built with modprobe, lddtree and
cpio from the host's Debian packages, and cached); each run appends a small
second cpio archive holding the script.

Cleanup: the qemu process (its own process group, killed with SIGKILL) and
the run's temporary directory (scratch image, initramfs, serial logs) are
removed on success, failure, timeout, SIGINT and SIGTERM (which raises
:class:`KeyboardInterrupt` while a run is under way in the main thread, unless
the caller installed its own handler). qemu also gets ``PR_SET_PDEATHSIG``, so
it dies with the Python process even if that is SIGKILLed.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from diskmodel.calibrate.bench.archive import write_cpio
from diskmodel.calibrate.bench.initramfs import (INSTALL_HINT, StepLog, VmUnavailableError, boot_image,
                                                 cached_initramfs, default_cache_dir, discover,
                                                 module_load_order)
from diskmodel.calibrate.bench.process import reaped, spawn
from diskmodel.calibrate.harness import runstate

__all__ = [
    "VmResult",
    "VmError",
    "VmBootError",
    "VmTimeoutError",
    "run_script_in_vm",
    "vm_available",
    "SCRATCH_DEVICE",
]

logger = logging.getLogger(__name__)

#: The scratch disk as the guest sees it.
SCRATCH_DEVICE = "/dev/vda"
#: The host device qemu needs for accelerator="kvm".
KVM_DEVICE = "/dev/kvm"

# --------------------------------------------------------------------------- results, errors

@dataclass(frozen=True)
class VmResult:
    """What a script run in the throwaway VM returned.

    Attributes
    ----------
    returncode : exit status of the guest script (``sh -e``).
    output : what the script printed (stdout and stderr interleaved), without
        kernel messages; ``\\r`` is not translated (the port is raw).
    kernel_release : ``uname -r`` inside the guest.
    accelerator : ``"tcg"`` (an emulator: timings measure qemu, not the disk;
        every report built from this result must say so) or ``"kvm"``.
    boot_s : [s] host wall time from starting qemu to the script starting.
    run_s : [s] host wall time the script ran (to its end marker).
    memory_bytes, cpus, scratch_disk_bytes : the VM's shape.
    """

    returncode: int
    output: str
    kernel_release: str
    accelerator: str
    boot_s: float
    run_s: float
    memory_bytes: int
    cpus: int
    scratch_disk_bytes: int

    @property
    def emulated(self) -> bool:
        """True under TCG: the timings measure an emulator."""
        return self.accelerator == "tcg"


class VmError(RuntimeError):
    """The VM did not run the script to its end. ``console_tail`` holds the
    last lines of the guest console, ``output`` what the script printed so far."""

    def __init__(self, message: str, *, console_tail: str = "", output: str = ""):
        self.console_tail = console_tail
        self.output = output
        text = message
        if output:
            text += "\n--- script output so far ---\n" + output[-2000:]
        if console_tail:
            text += "\n--- last lines of the guest console ---\n" + console_tail
        super().__init__(text)


class VmBootError(VmError):
    """The guest failed to boot, or died before the script ended."""


class VmTimeoutError(VmError):
    """The run exceeded ``timeout_s``."""


# --------------------------------------------------------------------------- the host

def vm_available(*, kernel_path: str | os.PathLike | None = None,
                 qemu: str = "qemu-system-x86_64") -> tuple[bool, str]:
    """Whether the throwaway VM can run here, and why not.

    Checks for qemu, a Debian kernel with its modules, every program the guest
    carries, and the modules it loads. Boots nothing.

    Returns
    -------
    (True, description) or (False, reason naming what is missing and how to install it).
    """
    try:
        host = discover(qemu, kernel_path)
        module_load_order(host)
    except VmUnavailableError as exc:
        return False, str(exc)
    try:
        version = subprocess.run([host.qemu, "--version"], capture_output=True, text=True,
                                 timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{host.qemu} --version failed: {exc}. To fix: {INSTALL_HINT}."
    if version.returncode != 0:
        return False, (f"{host.qemu} --version failed: {(version.stdout + version.stderr).strip()}."
                       f" To fix: {INSTALL_HINT}.")
    first = (version.stdout.splitlines() or [""])[0].strip()
    return True, (f"{host.qemu} ({first}) with kernel {host.kernel} ({host.release}); "
                  "accelerator tcg (emulated: timings measure qemu, not the disk)")



# --------------------------------------------------------------------------- the run



def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


class _Teardown:
    """Kills qemu's process group and removes the run directory; idempotent."""

    def __init__(self, say: StepLog):
        self.say = say
        self.proc: subprocess.Popen | None = None
        self.workdir: Path | None = None
        self.closed = False

    def close(self) -> None:
        if self.closed:
            return
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                self.say(f"vm: killing qemu (pid {proc.pid}, process group)")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.say(f"vm: qemu pid {proc.pid} did not die after SIGKILL", logging.ERROR)
            else:
                reaped(proc)
                # Anything else left in qemu's process group.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        workdir, self.workdir = self.workdir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
            if workdir.exists():
                self.say(f"vm: could not remove {workdir}", logging.ERROR)
            else:
                self.say(f"vm: removed {workdir}", logging.DEBUG)
        self.closed = True


def _qemu_path(path: Path) -> str:
    return str(path).replace(",", ",,")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_bytes().decode("utf-8", "replace").replace("\r", "")
    except FileNotFoundError:
        return "(no console log)"
    return "\n".join(text.splitlines()[-lines:])


def _check_positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def run_script_in_vm(script: str, **kwargs) -> "VmResult":
    """Boot a throwaway VM and run *script* in it, within a recorded run (parameters: :func:`_run_script_in_vm`).

    Everything the VM needs on the host (its folder, with the scratch image,
    and the qemu process) is written in the run's state file before or as it
    is created, so that ``diskmodel cleanup`` finds it after a SIGKILL.
    """
    with runstate.ensure_run("vm: run a script in a throwaway VM"):
        return _run_script_in_vm(script, **kwargs)


def _run_script_in_vm(script: str, *, scratch_disk_bytes: int, memory_bytes: int = 1 << 30,
                     timeout_s: float = 600, cpus: int = 1,
                     log: Callable[[str], object] | None = None,
                     accelerator: str = "tcg",
                     kernel_path: str | os.PathLike | None = None,
                     qemu: str = "qemu-system-x86_64",
                     cache_dir: str | os.PathLike | None = None,
                     workdir: str | os.PathLike | None = None,
                     nbd_sockets=(), pass_fds=(), icount_shift: int | None = None) -> VmResult:
    """Boot a throwaway VM, run *script* with ``sh -e`` against a scratch disk, power off.

    Parameters
    ----------
    script : POSIX shell script (run by dash) as root in the guest; see the
        module docstring for what the guest offers. The scratch disk is
        ``/dev/vda`` (:data:`SCRATCH_DEVICE`).
    scratch_disk_bytes : [bytes] size of the scratch disk, a multiple of 512;
        a sparse file on the host, deleted afterwards.
    memory_bytes : [bytes] guest RAM, a whole number of MiB, at least 128 MiB.
    timeout_s : [s] limit for the whole run, boot included.
    cpus : number of virtual CPUs.
    icount_shift : with TCG, the guest's clock counts instructions (``-icount shift=N,sleep=on``: 2^N ns
        each) while its CPU runs and real time while it is idle, so that the guest's CPU time does not
        depend on how much of the host's CPU the emulator gets; None (default): the host's clock.
    log : optional callable receiving every step and every line the script prints
        (the module's ``logging`` logger receives them too).
    accelerator : ``"tcg"`` (default, emulation) or ``"kvm"`` (only on request;
        not auto-detected, because KVM hangs on some machines).
    kernel_path : the Debian kernel image; default the newest ``/boot/vmlinuz-*``
        with modules in ``/lib/modules``.
    qemu : the qemu binary.
    cache_dir : where the initramfs is cached (default :func:`default_cache_dir`).
    workdir : parent of the run's temporary directory (default the system's temp
        dir). Its file system must support O_DIRECT (qemu opens the scratch
        image with ``cache=none``; tmpfs does not, and qemu then fails to start).
    nbd_sockets : unix sockets of NBD servers (:mod:`diskmodel.calibrate.emulate.for_vm`), attached in
        order as virtio disks ``/dev/vdb``, ``/dev/vdc``, ...; *pass_fds*: descriptors qemu inherits
        (a socket's path may reach it through ``/proc/self/fd/N``).

    Returns
    -------
    VmResult ; a non-zero ``returncode`` is returned, not raised.

    Raises
    ------
    ValueError : bad parameter.
    VmUnavailableError : qemu, the kernel or a package is missing (the message
        names it and says how to install it).
    VmBootError : the guest did not boot or died before the script ended
        (the message carries the tail of the guest console).
    VmTimeoutError : *timeout_s* elapsed.
    KeyboardInterrupt : SIGINT, or SIGTERM (when called from the main thread and
        SIGTERM has its default disposition; a caller's own SIGTERM handler is
        left in place); the VM and its files are gone by then.
    """
    _check_vm_arguments(script, scratch_disk_bytes, memory_bytes, cpus, timeout_s, accelerator, icount_shift)

    say = StepLog(logger, log)
    host = discover(qemu, kernel_path)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    base = cached_initramfs(host, cache, say)
    # The kernel unpacks the initramfs into RAM while the archive itself is still there: a guest
    # with less than twice its size, the kernel image and 96 MiB fails with "Initramfs unpacking
    # failed" and then hangs until the boot timeout, so say so before booting (384 MiB failed so
    # with a 122 MiB archive and a 63 MiB image).
    kernel_image = boot_image(host, cache, say)
    needed_bytes = 2 * base.stat().st_size + Path(kernel_image).stat().st_size + (96 << 20)
    if memory_bytes < needed_bytes:
        raise ValueError(f"memory_bytes={memory_bytes} is too small for this guest: its initramfs ({base}) is "
                         f"{base.stat().st_size >> 20} MiB and unpacks into RAM; give at least "
                         f"{-(-needed_bytes >> 20)} MiB")

    # SIGTERM would kill the process without running ``finally``: while the VM
    # runs, turn it into KeyboardInterrupt, unless the caller already handles it
    # (a handler of its own that raises is fine: the ``finally`` below runs).
    in_main = threading.current_thread() is threading.main_thread()
    take_term = in_main and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    teardown = _Teardown(say)
    try:
        if take_term:
            signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        run = runstate.current_run()
        with runstate.signals_blocked():
            # Inside the run's own folder where there is a run, so its record finds it after a SIGKILL.
            parent = workdir if workdir is not None else (run.work_dir() if run is not None else None)
            teardown.workdir = Path(tempfile.mkdtemp(prefix="diskmodel-vm-", dir=parent))
            if run is not None and workdir is not None:
                run.created(run.intend("dir", path=str(teardown.workdir)))
        run_dir = teardown.workdir
        say(f"vm: run directory {run_dir}")

        nonce = secrets.token_hex(12)
        disk = run_dir / "scratch.img"
        with open(disk, "wb") as f:
            f.truncate(scratch_disk_bytes)
        say(f"vm: sparse scratch disk {disk} ({scratch_disk_bytes} bytes) -> guest {SCRATCH_DEVICE}")

        initrd = _per_run_initramfs(base, run_dir, script, nonce)

        console = run_dir / "console.log"
        channel = run_dir / "output.log"
        console.touch()
        channel.touch()
        cmd = _qemu_command(host.qemu, accelerator, memory_bytes, cpus, kernel_image, initrd, console, channel,
                            disk, nbd_sockets, icount_shift)
        say(f"vm: starting {' '.join(cmd)}")
        qemu_log = run_dir / "qemu.log"
        with runstate.signals_blocked(), open(qemu_log, "wb") as qemu_out:
            started = time.monotonic()
            teardown.proc = spawn(cmd, name="qemu", stdin=subprocess.DEVNULL, stdout=qemu_out,
                                  stderr=subprocess.STDOUT, pass_fds=tuple(pass_fds))
        proc = teardown.proc
        say(f"vm: qemu started (pid {proc.pid}, accelerator {accelerator}, "
            f"{memory_bytes >> 20} MiB, {cpus} cpu)")
        result = _watch(proc, channel, console, qemu_log, nonce, started, timeout_s, say)
        kernel_release, returncode, output, boot_s, run_s = result
        if proc.poll() is None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                say("vm: guest did not power off within 10 s of the script's end; killing it",
                    logging.WARNING)
        say(f"vm: script exited {returncode} (boot {boot_s:.1f} s, run {run_s:.1f} s, {accelerator})")
        return VmResult(returncode=returncode, output=output, kernel_release=kernel_release,
                        accelerator=accelerator, boot_s=boot_s, run_s=run_s,
                        memory_bytes=memory_bytes, cpus=cpus, scratch_disk_bytes=scratch_disk_bytes)
    finally:
        with runstate.signals_blocked():
            teardown.close()
            if take_term:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _check_vm_arguments(script, scratch_disk_bytes, memory_bytes, cpus, timeout_s, accelerator,
                        icount_shift=None) -> None:
    """ValueError for a bad argument of :func:`run_script_in_vm`; VmUnavailableError where KVM is asked
    for and cannot be opened (no silent switch to TCG)."""
    if not isinstance(script, str):
        raise ValueError(f"script must be a str, got {type(script).__name__}")
    _check_positive_int("scratch_disk_bytes", scratch_disk_bytes, 512)
    if scratch_disk_bytes % 512:
        raise ValueError(f"scratch_disk_bytes must be a multiple of 512, got {scratch_disk_bytes}")
    _check_positive_int("memory_bytes", memory_bytes, 128 << 20)
    if icount_shift is not None and (accelerator != "tcg" or isinstance(icount_shift, bool)
                                     or not isinstance(icount_shift, int) or not 0 <= icount_shift <= 10):
        raise ValueError(f"icount_shift must be an int 0..10 with accelerator tcg, got {icount_shift!r} "
                         f"({accelerator})")
    if memory_bytes % (1 << 20):
        raise ValueError(f"memory_bytes must be a whole number of MiB, got {memory_bytes}")
    _check_positive_int("cpus", cpus)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) \
            or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a finite number > 0, got {timeout_s!r}")
    if accelerator not in ("tcg", "kvm"):
        raise ValueError(f"accelerator must be 'tcg' or 'kvm', got {accelerator!r}")
    if accelerator == "kvm":
        # fail before building anything when KVM cannot even be opened (no silent switch to TCG)
        try:
            os.close(os.open(KVM_DEVICE, os.O_RDWR | os.O_CLOEXEC))
        except OSError as exc:
            raise VmUnavailableError(f"accelerator='kvm' needs {KVM_DEVICE} ({exc.strerror}); "
                                     f"use accelerator='tcg'") from None


def _per_run_initramfs(base: Path, run_dir: Path, script: str, nonce: str) -> Path:
    """The run's initramfs: the cached *base* archive, then a second one with the script and the nonce."""
    # A second archive after the base one: the kernel unpacks both, this one last.
    extra = run_dir / "extra"
    (extra / "etc" / "diskmodel").mkdir(parents=True)
    per_run = {"etc/diskmodel/script.sh": script.encode(),
               "etc/diskmodel/run.env": f"DISKMODEL_NONCE={nonce}\n".encode()}
    for name, data in per_run.items():
        (extra / name).write_bytes(data)
        os.chmod(extra / name, 0o644)
    initrd = run_dir / "initramfs.cpio"
    with open(base, "rb") as src, open(initrd, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
        out.flush()  # cpio writes to the same file after it
        write_cpio(extra, per_run, out)
    return initrd


def _qemu_command(qemu, accelerator, memory_bytes, cpus, kernel_image, initrd, console, channel, disk,
                  nbd_sockets, icount_shift=None) -> list[str]:
    """qemu's argument vector: no defaults, two serial files (console, result channel), the scratch disk
    and each NBD socket as a virtio disk."""
    cmd = [
        qemu, "-name", "diskmodel-vm", "-no-user-config", "-nodefaults",
        "-display", "none", "-monitor", "none", "-no-reboot",
        "-accel", accelerator, "-cpu", "max" if accelerator == "tcg" else "host",
        "-m", f"{memory_bytes >> 20}M", "-smp", str(cpus),
        *(("-icount", f"shift={int(icount_shift)},sleep=on") if icount_shift is not None else ()),
        "-kernel", str(kernel_image), "-initrd", str(initrd),
        "-append", "console=ttyS0 panic=-1 quiet",
        "-serial", f"file:{_qemu_path(console)}",
        "-serial", f"file:{_qemu_path(channel)}",
        "-drive", f"file={_qemu_path(disk)},if=virtio,format=raw,cache=none,aio=threads",
    ]
    for sock in nbd_sockets:
        cmd += ["-drive", f"driver=raw,file.driver=nbd,file.server.type=unix,"
                          f"file.server.path={_qemu_path(sock)},if=virtio,cache=none"]
    return cmd


def _watch(proc: subprocess.Popen, channel: Path, console: Path, qemu_log: Path, nonce: str,
           started: float,
           timeout_s: float, say: StepLog) -> tuple[str, int, str, float, float]:
    """Follow the result channel until the end marker; return
    (kernel_release, returncode, output, boot_s, run_s)."""
    kernel_marker = f"@@DISKMODEL-KERNEL {nonce} ".encode()
    begin_marker = f"@@DISKMODEL-BEGIN {nonce}\n".encode()
    end_re = re.compile(rb"\n@@DISKMODEL-END " + nonce.encode() + rb" (\d+)\n")
    fail_re = re.compile(rb"@@DISKMODEL-INITFAIL " + nonce.encode() + rb" ([^\n]*)\n")
    end_len = len(b"\n@@DISKMODEL-END ") + len(nonce) + 16
    scanned = 0
    buf = b""
    kernel_release = ""
    begin_at: float | None = None
    out_start = 0
    logged = 0   # offset in buf up to which output lines were logged
    console_logged = 0
    with open(channel, "rb") as ch, open(console, "rb") as con:
        while True:
            exited = proc.poll() is not None
            chunk = ch.read()
            now = time.monotonic()
            if chunk:
                buf += chunk
            new_console = con.read()
            if new_console:
                for line in new_console.decode("utf-8", "replace").splitlines():
                    if line.strip():
                        say(f"vm console| {line.rstrip()}", logging.DEBUG)
                console_logged += len(new_console)
            if not kernel_release:
                i = buf.find(kernel_marker)
                if i >= 0 and b"\n" in buf[i:]:
                    line = buf[i + len(kernel_marker):].split(b"\n", 1)[0]
                    kernel_release = line.decode().strip()
                    say(f"vm: guest kernel {kernel_release} up, modules loaded "
                        f"({now - started:.1f} s)")
            m = fail_re.search(buf)
            if m:
                raise VmBootError(f"the guest's init failed: {m.group(1).decode('utf-8', 'replace')}",
                                  console_tail=_tail(console))
            if begin_at is None:
                i = buf.find(begin_marker)
                if i >= 0:
                    begin_at = now
                    out_start = logged = i + len(begin_marker)
                    say(f"vm: script started (boot took {begin_at - started:.1f} s)")
            if begin_at is not None:
                # Only the tail can hold a new end marker (bounded rescanning).
                end = end_re.search(buf, max(out_start - 1, scanned - end_len))
                scanned = len(buf)
                stop = end.start() if end else len(buf)
                # Log complete lines printed so far.
                last_nl = buf.rfind(b"\n", logged, stop)
                if end or last_nl >= 0:
                    upto = stop if end else last_nl + 1
                    for line in buf[logged:upto].decode("utf-8", "replace").splitlines():
                        say(f"guest| {line}")
                    logged = upto
                if end:
                    output = buf[out_start:end.start()].decode("utf-8", "replace")
                    return kernel_release, int(end.group(1)), output, begin_at - started, now - begin_at
            if exited:
                # Read what qemu wrote last before judging.
                rest = ch.read()
                if rest:
                    buf += rest
                    continue
                qemu_said = qemu_log.read_bytes().decode("utf-8", "replace").strip()
                what = ("the guest failed to boot" if begin_at is None
                        else "the guest died before the script ended")
                output = buf[out_start:].decode("utf-8", "replace") if begin_at is not None else ""
                detail = f" (qemu exit status {proc.returncode}"
                detail += f": {qemu_said[-1000:]})" if qemu_said else ")"
                raise VmBootError(what + detail, console_tail=_tail(console), output=output)
            if now - started > timeout_s:
                output = buf[out_start:].decode("utf-8", "replace") if begin_at is not None else ""
                phase = "booting" if begin_at is None else "running the script"
                raise VmTimeoutError(f"the VM exceeded timeout_s={timeout_s} s while {phase}",
                                     console_tail=_tail(console), output=output)
            time.sleep(0.05)
