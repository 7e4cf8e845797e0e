"""A throwaway qemu VM that runs one shell script against a scratch disk.

Where the host kernel has no device-mapper (``dmsetup version`` fails: this
machine, many CI runners and containers), LVM layouts are built inside a VM
instead: ``qemu-system-x86_64`` boots the host's Debian kernel
(``/boot/vmlinuz-<release>``, package ``linux-image-amd64``) with an initramfs
built from the Debian packages installed on the host, runs the script, returns
its output and exit status over a serial port and powers off.

Example (about 5 s under TCG)::

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
    - No network, no udev, no systemd.

Results travel over the second serial port (ttyS1) between per-run random
markers, so a script cannot forge them and kernel messages (on ttyS0, the
console) never mix into the output. The console is kept for diagnosis: a guest
that fails to boot raises :class:`VmBootError` with the tail of it.

The initramfs is built once per (kernel release, package versions, file
stamps) and cached under ``$XDG_CACHE_HOME/diskmodel/vm`` (``~/.cache/...``);
each run appends a small second cpio archive holding the script. When the
kernel has PVH entry (Debian's does), its uncompressed ``vmlinux`` is extracted
from ``vmlinuz`` once and cached too, which saves about 3 s of in-guest
decompression per boot under TCG (boot to the script: about 4 s).

Cleanup: the qemu process (its own process group, killed with SIGKILL) and
the run's temporary directory (scratch image, initramfs, serial logs) are
removed on success, failure, timeout, SIGINT and SIGTERM (which raises
:class:`KeyboardInterrupt` while a run is under way in the main thread, unless
the caller installed its own handler). qemu also gets ``PR_SET_PDEATHSIG``, so
it dies with the Python process even if that is SIGKILLed.
"""
from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import json
import logging
import lzma
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
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.bench.process import reaped, spawn

__all__ = [
    "VmResult",
    "VmError",
    "VmBootError",
    "VmTimeoutError",
    "VmUnavailableError",
    "run_script_in_vm",
    "vm_available",
    "build_initramfs",
    "default_cache_dir",
    "SCRATCH_DEVICE",
]

logger = logging.getLogger(__name__)

#: The scratch disk as the guest sees it.
SCRATCH_DEVICE = "/dev/vda"
#: The host device qemu needs for accelerator="kvm".
KVM_DEVICE = "/dev/kvm"

#: Bump when the initramfs layout, /init or lvm.conf change in a way the
#: cache key would not notice.
_BUILDER_VERSION = "1"

_INSTALL_HINT = "install the Debian packages with `bash .ci/setup --system` (as root)"

# Host programs copied into the guest: name -> Debian package (for errors).
_PROGRAMS: dict[str, str] = {
    "busybox": "busybox-static",
    "dash": "dash",
    "lvm": "lvm2",
    "dmsetup": "dmsetup",
    "mke2fs": "e2fsprogs",
    "e2fsck": "e2fsprogs",
    "tune2fs": "e2fsprogs",
    "dumpe2fs": "e2fsprogs",
    "mkfs.xfs": "xfsprogs",
    "postmark": "postmark",
    "mount": "mount",
    "umount": "mount",
    "losetup": "mount",
    "blockdev": "util-linux",
    "blkid": "util-linux",
    "wipefs": "util-linux",
    "lsblk": "util-linux",
    "findmnt": "util-linux",
}
# Host tools the builder itself runs.
_BUILD_TOOLS: dict[str, str] = {"ldd": "libc-bin", "dpkg-query": "dpkg"}
# Packages whose versions are recorded in the cache manifest and key.
_PACKAGES = ("busybox-static", "dash", "lvm2", "dmsetup", "libdevmapper1.02.1", "e2fsprogs",
             "xfsprogs", "postmark", "util-linux", "mount", "libc6")
# Kernel modules loaded at boot (their modules.dep dependencies come too).
# crc32c_generic stands for ext4's and jbd2's soft dependency "crypto-crc32c".
_MODULES = ("virtio_pci", "virtio_blk", "dm-mod", "crc32c_generic", "ext4", "xfs", "loop")
_SEARCH_PATH = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")

_LVM_CONF = """\
# diskmodel throwaway VM: lvm2 without udev, lvmetad, lvmpolld or dmeventd.
devices {
    dir = "/dev"
    scan = [ "/dev" ]
    obtain_device_list_from_udev = 0
    external_device_info_source = "none"
    use_devicesfile = 0
    hints = "none"
    multipath_component_detection = 0
    md_component_detection = 0
    fw_raid_component_detection = 0
}
global {
    locking_dir = "/run/lock/lvm"
    use_lvmlockd = 0
    use_lvmpolld = 0
    event_activation = 0
    notify_dbus = 0
}
activation {
    udev_sync = 0
    udev_rules = 0
    verify_udev_operations = 0
    monitoring = 0
}
backup {
    backup = 1
    backup_dir = "/run/lvm/backup"
    archive = 0
    archive_dir = "/run/lvm/archive"
}
"""

_INIT = r"""#!/bin/sh
# /init of the diskmodel throwaway VM (generated by diskmodel.calibrate.bench.vm).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LVM_SUPPRESS_FD_WARNINGS=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mkdir -p /run/lock/lvm /run/lvm /run/mount /dev/shm
. /etc/diskmodel/run.env
exec 3<>/dev/ttyS1
fail() {
    echo "diskmodel init: $*"
    printf '\n@@DISKMODEL-INITFAIL %s %s\n' "$DISKMODEL_NONCE" "$*" >&3
    sync
    poweroff -f
    sleep 60
}
stty raw -echo <&3 || fail "cannot set ttyS1 to raw mode"
while read -r mod; do
    insmod "$mod" || fail "insmod $mod failed"
done < /etc/diskmodel/modules
printf '@@DISKMODEL-KERNEL %s %s\n' "$DISKMODEL_NONCE" "$(uname -r)" >&3
i=0
while [ ! -b /dev/vda ]; do
    i=$((i + 1))
    [ "$i" -gt 200 ] && fail "the scratch disk /dev/vda did not appear"
    sleep 0.05
done
printf '@@DISKMODEL-BEGIN %s\n' "$DISKMODEL_NONCE" >&3
cd /tmp
DISKMODEL_VM=1 DISKMODEL_SCRATCH=/dev/vda sh -e /etc/diskmodel/script.sh </dev/null >&3 2>&3 3>&-
rc=$?
sync
printf '\n@@DISKMODEL-END %s %s\n' "$DISKMODEL_NONCE" "$rc" >&3
poweroff -f
sleep 60
"""


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


class VmUnavailableError(FileNotFoundError):
    """qemu, the Debian kernel or a package the guest needs is missing."""


# --------------------------------------------------------------------------- logging

class _Log:
    def __init__(self, log: Callable[[str], object] | None):
        self._log = log

    def __call__(self, message: str, level: int = logging.INFO) -> None:
        logger.log(level, "%s", message)
        if self._log is not None and level >= logging.INFO:
            self._log(message)


# --------------------------------------------------------------------------- host discovery

@dataclass(frozen=True)
class _Host:
    qemu: str
    kernel: Path
    release: str
    modules_dir: Path
    programs: dict[str, Path]


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for directory in _SEARCH_PATH:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _default_kernel() -> Path | None:
    """The newest /boot/vmlinuz-* whose modules are installed."""
    candidates = []
    for path in Path("/boot").glob("vmlinuz-*"):
        release = path.name[len("vmlinuz-"):]
        if (Path("/lib/modules") / release / "modules.dep").is_file():
            candidates.append(path)
    if not candidates:
        return None
    return max(candidates, key=lambda p: [int(x) if x.isdigit() else x
                                          for x in re.split(r"(\d+)", p.name)])


def _discover(qemu: str, kernel_path: str | os.PathLike | None) -> _Host:
    missing: list[str] = []
    qemu_found = _which(qemu)
    if qemu_found is None:
        missing.append(f"{qemu} (Debian package qemu-system-x86)")
    if kernel_path is None:
        kernel = _default_kernel()
        if kernel is None:
            missing.append("a Debian kernel /boot/vmlinuz-<release> with /lib/modules/<release>"
                           " (Debian package linux-image-amd64)")
    else:
        kernel = Path(kernel_path)
        if not kernel.is_file():
            missing.append(f"kernel image {kernel} (no such file; Debian package linux-image-amd64"
                           " installs /boot/vmlinuz-<release>)")
            kernel = None
    release = ""
    modules_dir = Path("/nonexistent")
    if kernel is not None:
        release = kernel.name[len("vmlinuz-"):] if kernel.name.startswith("vmlinuz-") else ""
        modules_dir = Path("/lib/modules") / release
        if not release or not (modules_dir / "modules.dep").is_file():
            missing.append(f"kernel modules for {kernel} (expected {modules_dir}/modules.dep;"
                           " Debian package linux-image-amd64)")
        elif not os.access(kernel, os.R_OK):
            missing.append(f"read access to {kernel}")
    programs: dict[str, Path] = {}
    for name, package in {**_PROGRAMS, **_BUILD_TOOLS}.items():
        found = _which(name)
        if found is None:
            missing.append(f"{name} (Debian package {package})")
        else:
            programs[name] = Path(found)
    if missing:
        raise VmUnavailableError(
            "the throwaway VM cannot be built; missing: " + "; ".join(missing)
            + f". To fix: {_INSTALL_HINT}.")
    assert kernel is not None and qemu_found is not None
    return _Host(qemu_found, kernel, release, modules_dir, programs)


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
        host = _discover(qemu, kernel_path)
        _module_load_order(host.modules_dir)
    except VmUnavailableError as exc:
        return False, str(exc)
    try:
        version = subprocess.run([host.qemu, "--version"], capture_output=True, text=True,
                                 timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{host.qemu} --version failed: {exc}. To fix: {_INSTALL_HINT}."
    if version.returncode != 0:
        return False, (f"{host.qemu} --version failed: {(version.stdout + version.stderr).strip()}."
                       f" To fix: {_INSTALL_HINT}.")
    first = (version.stdout.splitlines() or [""])[0].strip()
    return True, (f"{host.qemu} ({first}) with kernel {host.kernel} ({host.release}); "
                  "accelerator tcg (emulated: timings measure qemu, not the disk)")


# --------------------------------------------------------------------------- initramfs contents

def _module_load_order(modules_dir: Path) -> list[Path]:
    """Module files for _MODULES and their dependencies, dependencies first."""
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        if ":" not in line:
            continue
        path, rest = line.split(":", 1)
        deps[path] = rest.split()
        by_name[_module_name(path)] = path
    builtin: set[str] = set()
    builtin_file = modules_dir / "modules.builtin"
    if builtin_file.is_file():
        builtin = {_module_name(p) for p in builtin_file.read_text().split()}
    order: list[str] = []

    def visit(path: str, stack: tuple[str, ...] = ()) -> None:
        if path in order or path in stack:
            return
        for dep in deps.get(path, []):
            visit(dep, stack + (path,))
        order.append(path)

    missing = []
    for wanted in _MODULES:
        name = _module_name(wanted)
        if name in by_name:
            visit(by_name[name])
        elif name not in builtin:
            missing.append(wanted)
    if missing:
        raise VmUnavailableError(
            f"kernel modules {', '.join(missing)} are neither in {modules_dir}/modules.dep"
            f" nor built in; the guest needs them. To fix: {_INSTALL_HINT}.")
    return [modules_dir / p for p in order]


def _module_name(path: str) -> str:
    base = os.path.basename(path)
    base = re.sub(r"\.ko(\.(xz|gz|zst))?$", "", base)
    return base.replace("-", "_")


def _module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".zst":
        raise VmUnavailableError(f"{path} is zstd-compressed; the builder reads .ko, .ko.xz and .ko.gz")
    return data


def _shared_libraries(binary: Path) -> list[Path]:
    """The shared libraries of *binary*, and its ELF interpreter, from ldd."""
    proc = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=60)
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        if "not a dynamic executable" in text or "statically linked" in text:
            return []
        raise VmUnavailableError(f"ldd {binary} failed: {text.strip()}")
    libs = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if "=> not found" in line:
            raise VmUnavailableError(f"{binary} needs {line.split()[0]}, which is not installed")
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if match:
            libs.append(Path(match.group(1)))
    return libs


@dataclass
class _Entry:
    mode: int                 # full st_mode (type and permissions)
    source: Path | None = None  # host file to copy
    data: bytes | None = None   # literal content
    target: str | None = None   # symlink target


def _add_dirs(entries: dict[str, _Entry], guest_path: str) -> None:
    parts = guest_path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        entries.setdefault(d, _Entry(0o040755))


def _usr_merged(path: str) -> str:
    """The guest path (relative, under merged /usr) of host *path*."""
    path = path.lstrip("/")
    if path.split("/", 1)[0] in ("bin", "sbin", "lib", "lib64"):
        path = "usr/" + path
    return path


def _add_host_file(entries: dict[str, _Entry], host_path: Path) -> str:
    """Copy *host_path* (symlinks resolved) to the same real path in the guest."""
    real = Path(os.path.realpath(host_path))
    guest = _usr_merged(str(real))
    if guest not in entries:
        _add_dirs(entries, guest)
        entries[guest] = _Entry(0o100000 | (real.stat().st_mode & 0o755), source=real)
    return guest


def _collect(host: _Host) -> tuple[dict[str, _Entry], list[str]]:
    """Everything the base initramfs holds, and the guest paths of the modules."""
    entries: dict[str, _Entry] = {}
    for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "etc", "proc", "sys", "dev",
              "run", "tmp", "mnt", "root", "var", "etc/lvm", "etc/diskmodel"):
        entries[d] = _Entry(0o040755)
    entries["tmp"] = _Entry(0o041777)
    entries["root"] = _Entry(0o040700)
    # Debian's merged /usr.
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"),
                         ("lib64", "usr/lib64"), ("var/run", "../run"),
                         ("etc/mtab", "../proc/self/mounts")):
        entries[link] = _Entry(0o120777, target=target)

    libraries: set[Path] = set()
    for name, path in host.programs.items():
        if name in _BUILD_TOOLS:
            continue
        guest = _add_host_file(entries, path)
        libraries.update(_shared_libraries(path))
        # On the guest's PATH under the name it is called by (e.g. mkfs.xfs,
        # not a resolved alias), wherever it lives on the host.
        named = ("usr/sbin/" if path.parent.name == "sbin" else "usr/bin/") + path.name
        if named != guest and named not in entries:
            _add_dirs(entries, named)
            entries[named] = _Entry(0o120777, target=os.path.relpath("/" + guest, os.path.dirname("/" + named)))
    for lib in sorted(libraries):
        # The loader finds libraries by their ldd path (often /lib/x86_64-linux-gnu
        # or /lib64); both resolve through the /lib -> usr/lib links above.
        named = _usr_merged(str(lib))
        real = _add_host_file(entries, lib)
        if named != real and named not in entries:
            _add_dirs(entries, named)
            entries[named] = _Entry(0o120777, target="/" + real)

    # Aliases of programs that live next to them on the host.
    lvm_dir = host.programs["lvm"].parent
    for candidate in sorted(lvm_dir.iterdir()):
        if candidate.is_symlink() and os.readlink(candidate) in ("lvm", str(host.programs["lvm"])):
            entries.setdefault("usr/sbin/" + candidate.name, _Entry(0o120777, target="lvm"))
    for alias in ("mkfs.ext2", "mkfs.ext3", "mkfs.ext4"):
        entries.setdefault("usr/sbin/" + alias, _Entry(0o120777, target="mke2fs"))
    for alias in ("fsck.ext2", "fsck.ext3", "fsck.ext4"):
        entries.setdefault("usr/sbin/" + alias, _Entry(0o120777, target="e2fsck"))

    # /bin/sh is dash, as on the host. (Debian's static busybox ash is a
    # "standalone shell": it would run its own applets, e.g. its losetup without
    # --direct-io, ahead of the real programs on PATH.)
    entries["usr/bin/sh"] = _Entry(0o120777, target="dash")
    # Busybox applets, wherever a real program does not already stand.
    busybox_guest = "/" + _add_host_file(entries, host.programs["busybox"])
    listing = subprocess.run([str(host.programs["busybox"]), "--list-full"],
                             capture_output=True, text=True, timeout=60)
    if listing.returncode != 0:
        raise VmUnavailableError(f"busybox --list-full failed: {listing.stderr.strip()}")
    for applet in listing.stdout.split():
        name = os.path.basename(applet)
        if not name or name == "busybox" or name == "linuxrc":
            continue
        taken = any(("usr/" + d + "/" + name) in entries for d in ("bin", "sbin"))
        if not taken:
            entries["usr/bin/" + name] = _Entry(0o120777, target=busybox_guest)

    # Configuration.
    entries["etc/lvm/lvm.conf"] = _Entry(0o100644, data=_LVM_CONF.encode())
    if Path("/etc/mke2fs.conf").is_file():
        entries["etc/mke2fs.conf"] = _Entry(0o100644, source=Path("/etc/mke2fs.conf"))
    entries["etc/passwd"] = _Entry(0o100644, data=b"root:x:0:0:root:/root:/bin/sh\n")
    entries["etc/group"] = _Entry(0o100644, data=b"root:x:0:\n")
    entries["init"] = _Entry(0o100755, data=_INIT.encode())

    # Kernel modules, decompressed, in load order.
    module_paths = []
    for module in _module_load_order(host.modules_dir):
        guest = f"lib/modules/{host.release}/" + module.name.removesuffix(".xz").removesuffix(".gz")
        guest = "usr/" + guest
        _add_dirs(entries, guest)
        entries[guest] = _Entry(0o100644, source=module)
        module_paths.append("/" + guest)
    entries["etc/diskmodel/modules"] = _Entry(0o100644, data=("\n".join(module_paths) + "\n").encode())
    return entries, module_paths


def _package_versions() -> dict[str, str]:
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Version} ${Status}\n", *_PACKAGES],
                          capture_output=True, text=True, timeout=60)
    versions = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and line.endswith("installed"):
            versions[parts[0]] = parts[1]
    return versions


# --------------------------------------------------------------------------- cpio (newc)

def _cpio_header(ino: int, mode: int, size: int, name: str) -> bytes:
    encoded = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, len(encoded), 0)
    head = b"070701" + b"".join(f"{v:08X}".encode() for v in fields) + encoded
    return head + b"\0" * (-len(head) % 4)


def _write_cpio(out, entries: dict[str, _Entry]) -> None:
    """Write a newc archive of *entries* (owned by root) to the binary file *out*."""
    for ino, (name, entry) in enumerate(sorted(entries.items()), start=1):
        if entry.target is not None:
            payload = entry.target.encode()
        elif entry.data is not None:
            payload = entry.data
        elif entry.source is not None:
            payload = (_module_bytes(entry.source) if ".ko" in entry.source.name
                       else entry.source.read_bytes())
        else:
            payload = b""
        out.write(_cpio_header(ino, entry.mode, len(payload), name))
        out.write(payload)
        out.write(b"\0" * (-len(payload) % 4))
    out.write(_cpio_header(0, 0, 0, "TRAILER!!!"))


# --------------------------------------------------------------------------- cache

def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/diskmodel/vm``, else ``~/.cache/diskmodel/vm``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diskmodel" / "vm"


def build_initramfs(*, kernel_path: str | os.PathLike | None = None,
                    cache_dir: str | os.PathLike | None = None,
                    qemu: str = "qemu-system-x86_64",
                    log: Callable[[str], object] | None = None) -> Path:
    """Build (or find in the cache) the guest's base initramfs; return its path.

    The cache key covers the kernel release, the versions of the Debian
    packages the guest carries, the size and mtime of every file copied, and
    the builder's own /init and lvm.conf. A manifest (``.json``) lists the
    packages and files next to the archive.
    """
    say = _Log(log)
    host = _discover(qemu, kernel_path)
    return _cached_initramfs(host, Path(cache_dir) if cache_dir else default_cache_dir(), say)


def _cached_initramfs(host: _Host, cache_dir: Path, say: _Log) -> Path:
    entries, _ = _collect(host)
    versions = _package_versions()
    digest = hashlib.sha256()
    digest.update(f"{_BUILDER_VERSION}\n{host.release}\n{json.dumps(versions, sort_keys=True)}\n".encode())
    for name, entry in sorted(entries.items()):
        digest.update(f"{name} {oct(entry.mode)} {entry.target}\n".encode())
        if entry.data is not None:
            digest.update(entry.data)
        if entry.source is not None:
            st = entry.source.stat()
            digest.update(f"{entry.source} {st.st_size} {st.st_mtime_ns}\n".encode())
    key = digest.hexdigest()[:16]
    cache_dir.mkdir(parents=True, exist_ok=True)
    archive = cache_dir / f"initramfs-{host.release}-{key}.cpio"
    if archive.is_file():
        say(f"vm: using cached initramfs {archive}")
        return archive
    with open(cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.is_file():   # built by someone else meanwhile
            say(f"vm: using cached initramfs {archive}")
            return archive
        start = time.monotonic()
        say(f"vm: building initramfs for kernel {host.release} from the installed Debian packages"
            f" ({len(entries)} entries) into {archive}")
        partial = archive.with_name(archive.name + f".partial-{os.getpid()}")
        try:
            with open(partial, "wb") as out:
                _write_cpio(out, entries)
            manifest = {
                "kernel": str(host.kernel), "release": host.release, "packages": versions,
                "files": sorted(str(e.source) for e in entries.values() if e.source is not None),
                "builder_version": _BUILDER_VERSION,
            }
            archive.with_suffix(".json").write_text(json.dumps(manifest, indent=1) + "\n")
            os.replace(partial, archive)
        finally:
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
        say(f"vm: initramfs built ({archive.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - start:.1f} s")
    return archive


def _boot_image(host: _Host, cache_dir: Path, say: _Log) -> Path:
    """The kernel image qemu boots: the uncompressed ELF ``vmlinux`` extracted
    from the Debian ``vmlinuz`` and cached, when the kernel supports PVH entry
    (``CONFIG_PVH=y``), else the ``vmlinuz`` itself.

    Under TCG, decompressing the kernel in the guest costs about 3 s per boot;
    extracting it once on the host removes that. Either way the same kernel runs.
    """
    config = host.kernel.with_name(f"config-{host.release}")
    try:
        pvh = "CONFIG_PVH=y" in config.read_text().splitlines()
    except OSError:
        pvh = False
    if not pvh:
        say(f"vm: booting {host.kernel} (no PVH entry in {config}; the guest decompresses it)")
        return host.kernel
    st = host.kernel.stat()
    key = hashlib.sha256(f"{host.kernel} {st.st_size} {st.st_mtime_ns}".encode()).hexdigest()[:16]
    target = cache_dir / f"vmlinux-{host.release}-{key}"
    if target.is_file():
        say(f"vm: booting cached {target} (extracted from {host.kernel}, PVH entry)")
        return target
    data = host.kernel.read_bytes()
    elf = None
    for magic, make in ((b"\xfd7zXZ\x00", lzma.LZMADecompressor),
                        (b"\x1f\x8b\x08", lambda: zlib.decompressobj(31))):
        at = data.find(magic)
        if at < 0:
            continue
        try:
            candidate = make().decompress(data[at:])
        except (lzma.LZMAError, zlib.error):
            continue
        if candidate[:4] == b"\x7fELF":
            elf = candidate
            break
    if elf is None:
        say(f"vm: booting {host.kernel} as is (no xz or gzip payload found to extract)")
        return host.kernel
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    try:
        partial.write_bytes(elf)
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    say(f"vm: extracted {target} ({len(elf) / 1e6:.0f} MB) from {host.kernel} for PVH boot")
    return target


# --------------------------------------------------------------------------- the run



# Hold SIGINT/SIGTERM while a resource is created and recorded for teardown.
_signals_blocked = runstate.signals_blocked


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


class _Teardown:
    """Kills qemu's process group and removes the run directory; idempotent."""

    def __init__(self, say: _Log):
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
                     workdir: str | os.PathLike | None = None) -> VmResult:
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
    if not isinstance(script, str):
        raise ValueError(f"script must be a str, got {type(script).__name__}")
    _check_positive_int("scratch_disk_bytes", scratch_disk_bytes, 512)
    if scratch_disk_bytes % 512:
        raise ValueError(f"scratch_disk_bytes must be a multiple of 512, got {scratch_disk_bytes}")
    _check_positive_int("memory_bytes", memory_bytes, 128 << 20)
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

    say = _Log(log)
    host = _discover(qemu, kernel_path)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    base = _cached_initramfs(host, cache, say)
    boot_image = _boot_image(host, cache, say)

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
        with _signals_blocked():
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

        initrd = run_dir / "initramfs.cpio"
        with open(base, "rb") as src, open(initrd, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
            extra = {   # a second archive: the kernel unpacks both, this one last
                "etc/diskmodel/script.sh": _Entry(0o100644, data=script.encode()),
                "etc/diskmodel/run.env": _Entry(0o100644,
                                                data=f"DISKMODEL_NONCE={nonce}\n".encode()),
            }
            _write_cpio(out, extra)

        console = run_dir / "console.log"
        channel = run_dir / "output.log"
        console.touch()
        channel.touch()
        cmd = [
            host.qemu, "-name", "diskmodel-vm", "-no-user-config", "-nodefaults",
            "-display", "none", "-monitor", "none", "-no-reboot",
            "-accel", accelerator, "-cpu", "max" if accelerator == "tcg" else "host",
            "-m", f"{memory_bytes >> 20}M", "-smp", str(cpus),
            "-kernel", str(boot_image), "-initrd", str(initrd),
            "-append", "console=ttyS0 panic=-1 quiet",
            "-serial", f"file:{_qemu_path(console)}",
            "-serial", f"file:{_qemu_path(channel)}",
            "-drive", f"file={_qemu_path(disk)},if=virtio,format=raw,cache=none,aio=threads",
        ]
        say(f"vm: starting {' '.join(cmd)}")
        qemu_log = run_dir / "qemu.log"
        with _signals_blocked(), open(qemu_log, "wb") as qemu_out:
            started = time.monotonic()
            teardown.proc = spawn(cmd, name="qemu", stdin=subprocess.DEVNULL, stdout=qemu_out,
                                  stderr=subprocess.STDOUT)
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
        with _signals_blocked():
            teardown.close()
            if take_term:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _watch(proc: subprocess.Popen, channel: Path, console: Path, qemu_log: Path, nonce: str,
           started: float,
           timeout_s: float, say: _Log) -> tuple[str, int, str, float, float]:
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
