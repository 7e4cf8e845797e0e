"""The throwaway VM's boot files, assembled from the host's Debian packages with standard tools.

The guest boots the host's Debian kernel (``/boot/vmlinuz-<release>``, package
``linux-image-amd64``) with an initramfs holding the host's own binaries
(so the guest runs the same versions as the host), which is put together by:

- ``modprobe -a -C /dev/null -S RELEASE --show-depends MODULE...`` (kmod): the
  kernel modules the guest loads and their dependencies, soft ones included,
  in load order (``-C /dev/null``: the host's own modprobe.d is not the guest's);
- ``lddtree -l`` (pax-utils): the shared libraries of every program, and the
  ELF interpreter;
- ``cpio -o -H newc`` (GNU cpio): the archive, from a tree staged in a
  temporary folder, every file owned by root.

The initramfs is built once per (kernel release, package versions, file
stamps) and cached under ``$XDG_CACHE_HOME/diskmodel/vm`` (``~/.cache/...``),
with a manifest (``.json``) of the packages and files next to it. When the
kernel has PVH entry (Debian's does), its uncompressed ``vmlinux`` is extracted
from ``vmlinuz`` once and cached too, which saves the in-guest
decompression at every boot under TCG.

What the guest offers a script is documented in :mod:`diskmodel.calibrate.bench.vm`.
"""
from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import logging
import lzma
import os
import re
import shutil
import subprocess
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from diskmodel.calibrate.bench.archive import (SEARCH_PATH, TOOL_ENV, Entry, add_dirs, add_host_file, add_link, publish,
                                               staging_dir, usr_merged, write_cpio)

__all__ = [
    "Host",
    "StepLog",
    "VmUnavailableError",
    "boot_image",
    "build_initramfs",
    "cached_initramfs",
    "default_cache_dir",
    "default_kernel",
    "discover",
    "module_load_order",
]

#: Bump when the initramfs layout, /init or lvm.conf change in a way the
#: cache key would not notice.
_BUILDER_VERSION = "2"

INSTALL_HINT = "install the Debian packages with `bash .ci/setup --system` (as root)"

# Host programs copied into the guest: name -> Debian package (for errors).
_PROGRAMS: dict[str, str] = {
    "busybox": "busybox-static", "dash": "dash", "lvm": "lvm2", "dmsetup": "dmsetup",
    "mke2fs": "e2fsprogs", "e2fsck": "e2fsprogs", "tune2fs": "e2fsprogs", "dumpe2fs": "e2fsprogs",
    "mkfs.xfs": "xfsprogs", "mkfs.btrfs": "btrfs-progs", "btrfs": "btrfs-progs", "postmark": "postmark", "mount": "mount", "umount": "mount", "losetup": "mount",
    "blockdev": "util-linux", "blkid": "util-linux", "wipefs": "util-linux", "lsblk": "util-linux",
    "findmnt": "util-linux",
    # The network layers (diskmodel.calibrate.bench.network): NBD and NFS servers and clients, and tc.
    "nbd-server": "nbd-server", "nbd-client": "nbd-client", "rpcbind": "rpcbind", "rpc.nfsd": "nfs-kernel-server",
    "rpc.mountd": "nfs-kernel-server", "exportfs": "nfs-kernel-server", "mount.nfs": "nfs-common",
    "ip": "iproute2", "tc": "iproute2",
    # The block layers (diskmodel.calibrate.bench.layers_provision): md RAID, LVM thin pools, fio.
    "mdadm": "mdadm", "thin_check": "thin-provisioning-tools", "fio": "fio",
    "blktrace": "blktrace", "blkparse": "blktrace",  # what reaches each device (diskmodel.calibrate.trace)
    "mkfs.jfs": "jfsutils", "mkreiserfs": "reiserfsprogs",  # jfs and reiserfs (calibrate/trace/vm_fs_cells.py)
}
# Host tools the builder itself runs.
_BUILD_TOOLS: dict[str, str] = {"lddtree": "pax-utils", "modprobe": "kmod", "cpio": "cpio",
                                "dpkg-query": "dpkg"}
# Packages whose versions are recorded in the cache manifest and key.
_PACKAGES = ("busybox-static", "dash", "lvm2", "dmsetup", "libdevmapper1.02.1", "e2fsprogs",
             "xfsprogs", "btrfs-progs", "postmark", "util-linux", "mount", "libc6", "nbd-server", "nbd-client",
             "rpcbind", "nfs-kernel-server", "nfs-common", "iproute2", "mdadm", "thin-provisioning-tools", "fio",
             "blktrace", "jfsutils", "reiserfsprogs")
# Kernel modules loaded at boot (modprobe adds their dependencies, soft ones included).
_MODULES = ("virtio_pci", "virtio_blk", "dm-mod", "crc32c_generic", "ext4", "xfs", "loop")
# Modules carried but loaded only on demand, since every boot under TCG would pay for them: a script
# loads set NAME with `while read -r m; do insmod "$m"; done < /etc/diskmodel/modules.NAME`.
_ON_DEMAND_MODULES = {"network": ("nbd", "nfsv3", "nfsv4", "nfsd", "veth", "sch_netem", "sch_tbf"),
                      "layers": ("raid0", "raid1", "raid456", "dm-raid", "dm-thin-pool", "dm-delay", "btrfs"),
                      "filesystems": ("jfs", "reiserfs")}

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
# /init of the diskmodel throwaway VM (generated by diskmodel.calibrate.bench.initramfs).
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


class VmUnavailableError(FileNotFoundError):
    """qemu, the Debian kernel, a package the guest needs or a tool the builder runs is missing."""


class StepLog:
    """Each step to a module's logger and, from INFO up, to the caller's *log* callable."""

    def __init__(self, logger: logging.Logger, log: Callable[[str], object] | None):
        self._logger = logger
        self._log = log

    def __call__(self, message: str, level: int = logging.INFO) -> None:
        self._logger.log(level, "%s", message)
        if self._log is not None and level >= logging.INFO:
            self._log(message)


# --------------------------------------------------------------------------- host discovery

@dataclass(frozen=True)
class Host:
    """What the guest is built from: qemu, the kernel image, its release and module folder, the programs."""

    qemu: str
    kernel: Path
    release: str
    modules_dir: Path
    programs: dict[str, Path]


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for directory in SEARCH_PATH:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def default_kernel() -> Path | None:
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


def discover(qemu: str, kernel_path: str | os.PathLike | None) -> Host:
    """The :class:`Host`, or :class:`VmUnavailableError` naming everything missing and how to install it."""
    missing: list[str] = []
    qemu_found = _which(qemu)
    if qemu_found is None:
        missing.append(f"{qemu} (Debian package qemu-system-x86)")
    if kernel_path is None:
        kernel = default_kernel()
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
            + f". To fix: {INSTALL_HINT}.")
    assert kernel is not None and qemu_found is not None
    return Host(qemu_found, kernel, release, modules_dir, programs)


def _tool(host: Host, name: str, *args: str) -> subprocess.CompletedProcess:
    """Run the builder's tool *name* (found by :func:`discover`) with the system's PATH."""
    return subprocess.run([str(host.programs[name]), *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env=TOOL_ENV)


# --------------------------------------------------------------------------- what the guest holds

def module_load_order(host: Host, modules: Iterable[str] = _MODULES) -> list[Path]:
    """Module files of *modules* and their dependencies, dependencies first (``modprobe --show-depends``)."""
    proc = _tool(host, "modprobe", "-a", "-C", "/dev/null", "-S", host.release, "--show-depends", *modules)
    if proc.returncode != 0:
        said = " ".join(proc.stderr.split())
        raise VmUnavailableError(f"the kernel modules the guest needs are not all in {host.modules_dir}"
                                 f" ({said}). To fix: {INSTALL_HINT}.")
    order: list[Path] = []
    for line in proc.stdout.splitlines():
        words = line.split()
        # "insmod PATH": a module to load; "builtin NAME": in the kernel already.
        if len(words) >= 2 and words[0] == "insmod" and Path(words[1]) not in order:
            order.append(Path(words[1]))
    return order


def _shared_libraries(host: Host, binaries: Iterable[Path]) -> list[Path]:
    """The shared libraries of *binaries*, and their ELF interpreter (``lddtree -l``)."""
    binaries = [str(b) for b in binaries]
    proc = _tool(host, "lddtree", "-l", *binaries)
    if proc.returncode != 0:
        raise VmUnavailableError(f"lddtree cannot resolve the guest's libraries: {proc.stderr.strip()[-500:]}"
                                 f". To fix: {INSTALL_HINT}.")
    # lddtree -l lists each binary, then what it needs.
    return sorted({Path(line) for line in proc.stdout.split() if line not in binaries})


def _module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".zst":
        raise VmUnavailableError(f"{path} is zstd-compressed; the builder reads .ko, .ko.xz and .ko.gz")
    return data


def _collect(host: Host) -> dict[str, Entry]:
    """Everything the base initramfs holds, by guest path (relative to /)."""
    entries: dict[str, Entry] = {}
    for d in ("usr", "usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "etc", "proc", "sys", "dev",
              "run", "tmp", "mnt", "root", "var", "etc/lvm", "etc/diskmodel"):
        entries[d] = Entry(0o040755)
    entries["tmp"] = Entry(0o041777)
    entries["root"] = Entry(0o040700)
    # Debian's merged /usr.
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"),
                         ("lib64", "usr/lib64"), ("var/run", "../run"),
                         ("etc/mtab", "../proc/self/mounts")):
        entries[link] = Entry(0o120777, target=target)

    programs = {name: path for name, path in host.programs.items() if name not in _BUILD_TOOLS}
    for path in programs.values():
        guest = add_host_file(entries, path)
        # On the guest's PATH under the name it is called by (e.g. mkfs.xfs,
        # not a resolved alias), wherever it lives on the host.
        named = ("usr/sbin/" if path.parent.name == "sbin" else "usr/bin/") + path.name
        if named != guest:
            add_link(entries, named, os.path.relpath("/" + guest, os.path.dirname("/" + named)))
    for lib in _shared_libraries(host, programs.values()):
        # The loader finds libraries by the path lddtree gives (often /lib/x86_64-linux-gnu
        # or /lib64); both resolve through the /lib -> usr/lib links above.
        named = usr_merged(str(lib))
        real = add_host_file(entries, lib)
        if named != real:
            add_link(entries, named, "/" + real)

    # Aliases of programs that live next to them on the host.
    lvm_dir = host.programs["lvm"].parent
    for candidate in sorted(lvm_dir.iterdir()):
        if candidate.is_symlink() and os.readlink(candidate) in ("lvm", str(host.programs["lvm"])):
            entries.setdefault("usr/sbin/" + candidate.name, Entry(0o120777, target="lvm"))
    for alias in ("mkfs.ext2", "mkfs.ext3", "mkfs.ext4"):
        entries.setdefault("usr/sbin/" + alias, Entry(0o120777, target="mke2fs"))
    for alias in ("fsck.ext2", "fsck.ext3", "fsck.ext4"):
        entries.setdefault("usr/sbin/" + alias, Entry(0o120777, target="e2fsck"))

    # /bin/sh is dash, as on the host. (Debian's static busybox ash is a
    # "standalone shell": it would run its own applets, e.g. its losetup without
    # --direct-io, ahead of the real programs on PATH.)
    entries["usr/bin/sh"] = Entry(0o120777, target="dash")
    # Busybox applets, wherever a real program does not already stand.
    busybox_guest = "/" + add_host_file(entries, host.programs["busybox"])
    listing = subprocess.run([str(host.programs["busybox"]), "--list-full"],
                             capture_output=True, text=True, timeout=60)
    if listing.returncode != 0:
        raise VmUnavailableError(f"busybox --list-full failed: {listing.stderr.strip()}")
    for applet in listing.stdout.split():
        name = os.path.basename(applet)
        if not name or name in ("busybox", "linuxrc"):
            continue
        if not any(("usr/" + d + "/" + name) in entries for d in ("bin", "sbin")):
            entries["usr/bin/" + name] = Entry(0o120777, target=busybox_guest)

    # Configuration.
    entries["etc/lvm/lvm.conf"] = Entry(0o100644, data=_LVM_CONF.encode())
    # netconfig: libtirpc's transports (rpcbind, rpc.mountd, mount.nfs); services, protocols: their names.
    for config in ("mke2fs.conf", "netconfig", "services", "protocols"):
        if (Path("/etc") / config).is_file():
            entries[f"etc/{config}"] = Entry(0o100644, source=Path("/etc") / config)
    entries["etc/passwd"] = Entry(0o100644, data=b"root:x:0:0:root:/root:/bin/sh\n")
    entries["etc/group"] = Entry(0o100644, data=b"root:x:0:\n")
    entries["init"] = Entry(0o100755, data=_INIT.encode())

    # Kernel modules, decompressed, in load order.
    module_paths = []
    for module in module_load_order(host):
        guest = f"usr/lib/modules/{host.release}/" + module.name.removesuffix(".xz").removesuffix(".gz")
        add_dirs(entries, guest)
        entries[guest] = Entry(0o100644, source=module)
        module_paths.append("/" + guest)
    entries["etc/diskmodel/modules"] = Entry(0o100644, data=("\n".join(module_paths) + "\n").encode())
    for name, modules in _ON_DEMAND_MODULES.items():
        later = []
        for module in module_load_order(host, modules):
            guest = f"usr/lib/modules/{host.release}/" + module.name.removesuffix(".xz").removesuffix(".gz")
            if "/" + guest not in module_paths + later:
                add_dirs(entries, guest)
                entries[guest] = Entry(0o100644, source=module)
                later.append("/" + guest)
        entries[f"etc/diskmodel/modules.{name}"] = Entry(0o100644, data=("\n".join(later) + "\n").encode())
    return entries


def _package_versions(host: Host) -> dict[str, str]:
    proc = _tool(host, "dpkg-query", "-W", "-f=${Package} ${Version} ${Status}\n", *_PACKAGES)
    versions = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and line.endswith("installed"):
            versions[parts[0]] = parts[1]
    return versions


# --------------------------------------------------------------------------- the archive

def _stage(entries: dict[str, Entry], root: Path) -> None:
    """Lay *entries* out as files, folders and symlinks under *root* (parents before children)."""
    for name, entry in sorted(entries.items()):
        path = root / name
        if entry.target is not None:
            os.symlink(entry.target, path)
            continue
        if entry.mode & 0o170000 == 0o040000:
            path.mkdir(exist_ok=True)
        elif entry.data is not None:
            path.write_bytes(entry.data)
        elif entry.source is not None and ".ko" in entry.source.name:
            path.write_bytes(_module_bytes(entry.source))
        else:
            shutil.copyfile(entry.source, path)
        os.chmod(path, entry.mode & 0o7777)  # whatever the umask made of it


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
    say = StepLog(logging.getLogger(__name__), log)
    host = discover(qemu, kernel_path)
    return cached_initramfs(host, Path(cache_dir) if cache_dir else default_cache_dir(), say)


def cached_initramfs(host: Host, cache_dir: Path, say: Callable[..., None]) -> Path:
    """The base initramfs of *host* from *cache_dir*, built there first where it is not yet."""
    entries = _collect(host)
    versions = _package_versions(host)
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
        manifest = {
            "kernel": str(host.kernel), "release": host.release, "packages": versions,
            "files": sorted(str(e.source) for e in entries.values() if e.source is not None),
            "builder_version": _BUILDER_VERSION,
        }
        archive.with_suffix(".json").write_text(json.dumps(manifest, indent=1) + "\n")
        with staging_dir() as root:
            _stage(entries, root)

            def write(partial: Path) -> None:
                with open(partial, "wb") as out:
                    write_cpio(root, sorted(entries), out)

            publish(archive, write)
        say(f"vm: initramfs built ({archive.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - start:.1f} s")
    return archive


def boot_image(host: Host, cache_dir: Path, say: Callable[..., None]) -> Path:
    """The kernel image qemu boots: the uncompressed ELF ``vmlinux`` extracted
    from the Debian ``vmlinuz`` and cached, when the kernel supports PVH entry
    (``CONFIG_PVH=y``), else the ``vmlinuz`` itself.

    Under TCG, decompressing the kernel in the guest costs seconds at every boot;
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
    publish(target, lambda partial: partial.write_bytes(elf))
    say(f"vm: extracted {target} ({len(elf) / 1e6:.0f} MB) from {host.kernel} for PVH boot")
    return target
