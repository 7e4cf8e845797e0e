"""Discovery of block devices: what is there, how big, and whether it is in use.

Devices are listed through pyudev (imported lazily) where the udev database is
present, and from plain sysfs (``/sys/class/block``) where it is absent, as in
containers. The result says which source it used. What uses a device (its
mounts, swap and holders, and those of its partitions and of what is built on
it) comes from util-linux (``lsblk -J``, ``findmnt -J``) through
:func:`diskmodel.calibrate.harness.devstate.block_uses`, the view every safety
check of the harness takes. Everything here is read-only: nothing is opened
for I/O.

The ``rotational`` flag is reported as the kernel gives it, but it is a hint
only: virtual disks (virtio, many cloud volumes) routinely report 1 for
flash-backed storage, and some USB bridges report 0 for spinning disks.
Only a measurement (``diskmodel calibrate``) can tell.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from diskmodel.calibrate.harness import devstate

SYS_CLASS_BLOCK = Path("/sys/class/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")
UDEV_DATA_DIR = Path("/run/udev/data")
SECTOR_BYTES = 512  # sysfs ``size`` and ``start`` are always in 512-byte sectors

ROTATIONAL_NOTE = (
    "the kernel's rotational flag is a hint only: virtual disks (virtio, cloud "
    "volumes) often claim to rotate while backed by flash; measure to know"
)

Source = Literal["auto", "pyudev", "sysfs"]


@dataclass(frozen=True)
class Mount:
    """One mount of a block device (a line of /proc/self/mountinfo)."""

    device: str  # kernel name of the block device that is mounted
    mount_point: str
    fs_type: str


@dataclass(frozen=True)
class Partition:
    name: str
    path: str
    number: int | None
    start_bytes: int  # offset of the partition's first byte on its parent disk [B]
    size_bytes: int
    mounts: tuple[Mount, ...] = ()
    swap: bool = False
    holders: tuple[str, ...] = ()


@dataclass(frozen=True)
class BlockDevice:
    """One block device as the kernel (and udev, where present) describes it."""

    name: str
    path: str  # /dev/<name>; may be absent from /dev in a container
    devtype: str  # "disk" or "partition"
    major: int
    minor: int
    size_bytes: int
    logical_block_size_bytes: int | None
    physical_block_size_bytes: int | None
    rotational: bool | None  # a hint only, see rotational_note
    rotational_note: str
    scheduler: str | None  # the active one (the bracketed entry)
    schedulers_available: tuple[str, ...]
    read_ahead_kb: int | None
    read_only: bool | None
    removable: bool | None
    holders: tuple[str, ...]
    slaves: tuple[str, ...]
    mounts: tuple[Mount, ...]  # this device itself
    mounted: bool  # this device, one of its partitions or a holder (recursively) is mounted
    mounted_via: tuple[Mount, ...]  # every mount behind ``mounted``
    swap: bool  # this device, a partition or a holder is an active swap area
    swap_via: tuple[str, ...]
    partitions: tuple[Partition, ...]
    dm_name: str | None  # device-mapper name (dm/name), e.g. "vg0-lv0"
    dm_uuid: str | None  # "LVM-..." for LVM logical volumes
    lvm: bool  # a device-mapper device created by LVM
    loop_backing_file: str | None
    loop_direct_io: bool | None  # loop/dio: False means reads go through the backing file's page cache
    model: str | None = None
    serial: str | None = None
    lvm_vg: str | None = None  # volume group and logical volume of an LVM device (from udev or dm/name)
    lvm_lv: str | None = None
    udev_properties: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def in_use(self) -> bool:
        """Mounted, swap, or held by another device (dm, md, a partition's holder)."""
        return self.mounted or self.swap or bool(self.holders) or any(p.holders for p in self.partitions)


@dataclass(frozen=True)
class Virtualisation:
    """Whether this machine runs under a hypervisor or in a container, with the evidence."""

    virtualised: bool | None  # a virtual machine (None: no evidence either way)
    vm: str | None  # e.g. "kvm", from systemd-detect-virt --vm
    container: str | None  # e.g. "docker", from systemd-detect-virt --container
    method: str  # how it was decided
    sys_vendor: str | None
    product_name: str | None
    cpu_hypervisor_flag: bool | None


@dataclass(frozen=True)
class ProbeResult:
    source: str  # "pyudev" or "sysfs"
    source_note: str
    virtualisation: Virtualisation
    devices: tuple[BlockDevice, ...]

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for dev, obj in zip(out["devices"], self.devices):
            dev["in_use"] = obj.in_use
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def device(self, name_or_path: str) -> BlockDevice:
        key = os.path.basename(name_or_path)
        for dev in self.devices:
            if dev.name == key or dev.path == name_or_path:
                return dev
        raise KeyError(name_or_path)


# --------------------------------------------------------------------------- sysfs helpers


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (FileNotFoundError, NotADirectoryError, PermissionError, OSError):
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _listdir(path: Path) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(path)))
    except (FileNotFoundError, NotADirectoryError):
        return ()


def _uevent(sys_path: Path) -> dict[str, str]:
    text = _read(sys_path / "uevent") or ""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        out[key] = value
    return out


@dataclass(frozen=True)
class _Entry:
    """A block device as found by either source: where its sysfs directory is, and udev's view."""

    name: str
    sys_path: Path
    devnode: str
    devtype: str
    properties: dict[str, str]


def _sysfs_entries() -> list[_Entry]:
    entries = []
    for name in _listdir(SYS_CLASS_BLOCK):
        sys_path = (SYS_CLASS_BLOCK / name).resolve()
        uevent = _uevent(sys_path)
        devname = uevent.get("DEVNAME", name)
        entries.append(_Entry(name, sys_path, f"/dev/{devname}", uevent.get("DEVTYPE", "disk"), {}))
    return entries


def _pyudev_entries() -> list[_Entry]:
    import pyudev  # lazily: optional at import time of diskmodel

    context = pyudev.Context()
    entries = []
    for dev in context.list_devices(subsystem="block"):
        props = {str(k): str(v) for k, v in dev.properties.items()}
        entries.append(
            _Entry(
                dev.sys_name,
                Path(dev.sys_path),
                dev.device_node or f"/dev/{dev.sys_name}",
                dev.device_type or "disk",
                props,
            )
        )
    return entries


def udev_database_present() -> bool:
    """True where udevd keeps its database (absent in most containers)."""
    try:
        return UDEV_DATA_DIR.is_dir() and any(UDEV_DATA_DIR.iterdir())
    except OSError:
        return False


def _choose_source(source: Source) -> tuple[str, str, Callable[[], list[_Entry]]]:
    if source not in ("auto", "pyudev", "sysfs"):
        raise ValueError(f"source must be 'auto', 'pyudev' or 'sysfs', not {source!r}")
    if source == "sysfs":
        return "sysfs", f"plain sysfs ({SYS_CLASS_BLOCK}), fallback requested", _sysfs_entries
    if source == "pyudev":
        try:
            import pyudev  # noqa: F401
        except ImportError:
            raise ValueError("source='pyudev' but pyudev is not installed; use source='sysfs'") from None
        note = "pyudev" + ("" if udev_database_present() else f" (udev database {UDEV_DATA_DIR} absent: no udev properties)")
        return "pyudev", note, _pyudev_entries
    if not udev_database_present():
        return "sysfs", f"plain sysfs ({SYS_CLASS_BLOCK}): the udev database {UDEV_DATA_DIR} is absent (container?)", _sysfs_entries
    try:
        import pyudev  # noqa: F401
    except ImportError:
        return "sysfs", f"plain sysfs ({SYS_CLASS_BLOCK}): pyudev is not installed", _sysfs_entries
    return "pyudev", "pyudev with the udev database", _pyudev_entries


# --------------------------------------------------------------------------- virtualisation


def detect_virtualisation() -> Virtualisation:
    """Decide whether this machine is a virtual machine (and whether we are in a container).

    systemd-detect-virt where installed; otherwise DMI (/sys/class/dmi/id/sys_vendor,
    product_name) and the ``hypervisor`` CPU flag in /proc/cpuinfo. The DMI and
    cpuinfo evidence is always reported.
    """
    dmi = Path("/sys/class/dmi/id")
    sys_vendor = _read(dmi / "sys_vendor")
    product_name = _read(dmi / "product_name")
    flag: bool | None = None
    cpuinfo = _read(Path("/proc/cpuinfo"))
    if cpuinfo is not None:
        flag = any(
            line.startswith("flags") and "hypervisor" in line.split(":", 1)[-1].split()
            for line in cpuinfo.splitlines()
        )
    tool = shutil.which("systemd-detect-virt")
    if tool:
        def run(option: str) -> str | None:
            try:
                out = subprocess.run([tool, option], capture_output=True, text=True, timeout=10)
            except (OSError, subprocess.SubprocessError):
                return None
            value = out.stdout.strip()
            return None if (not value or value == "none") else value

        vm, container = run("--vm"), run("--container")
        return Virtualisation(vm is not None, vm, container, "systemd-detect-virt", sys_vendor, product_name, flag)
    known = ("qemu", "kvm", "vmware", "virtualbox", "xen", "microsoft", "amazon ec2", "google", "bochs", "parallels", "openstack")
    dmi_text = f"{sys_vendor or ''} {product_name or ''}".lower()
    dmi_vm = next((k for k in known if k in dmi_text), None)
    if dmi_vm or flag:
        method = "DMI sys_vendor/product_name" if dmi_vm else "/proc/cpuinfo hypervisor flag"
        return Virtualisation(True, dmi_vm or "unknown hypervisor", None, method, sys_vendor, product_name, flag)
    if sys_vendor is None and flag is None:
        return Virtualisation(None, None, None, "no evidence (no systemd-detect-virt, DMI or cpuinfo)", None, None, None)
    return Virtualisation(False, None, None, "DMI and /proc/cpuinfo show no hypervisor", sys_vendor, product_name, flag)


# --------------------------------------------------------------------------- assembling


def _parse_scheduler(text: str | None) -> tuple[str | None, tuple[str, ...]]:
    if not text:
        return None, ()
    names = text.split()
    active = next((n[1:-1] for n in names if n.startswith("[") and n.endswith("]")), None)
    return active, tuple(n.strip("[]") for n in names)


def _devnum(sys_path: Path) -> tuple[int, int]:
    dev = _read(sys_path / "dev") or "0:0"
    major, _, minor = dev.partition(":")
    return int(major), int(minor)


def _bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


class _Context:
    """The entries by name, and what uses each: util-linux's view (:mod:`~diskmodel.calibrate.harness.devstate`),
    the one every safety check of the harness asks."""

    def __init__(self, entries: list[_Entry]):
        self.entries = {e.name: e for e in entries}
        self.nodes = devstate.block_devices()
        # The mounted file system's type, by (device number, mount point).
        self.fs_types = {(fs.get("maj:min"), fs.get("target")): fs.get("fstype") for fs in devstate.mounts()}

    def uses(self, entry: _Entry) -> list[devstate.BlockUse]:
        dev = _read(entry.sys_path / "dev")
        return devstate.block_uses(self.nodes[dev]) if dev in self.nodes else []

    def mount(self, use: devstate.BlockUse) -> Mount:
        node = next((n for n in self.nodes.values() if n.get("kname") == use.kname), {})
        fs_type = self.fs_types.get((node.get("maj:min"), use.target)) or node.get("fstype") or ""
        return Mount(use.kname, use.target, fs_type)

    def partitions_of(self, entry: _Entry) -> list[_Entry]:
        # Partitions are subdirectories of the disk's sysfs directory holding a ``partition`` file.
        out = []
        for child in _listdir(entry.sys_path):
            if (entry.sys_path / child / "partition").is_file():
                out.append(self.entries.get(child) or _Entry(child, entry.sys_path / child, f"/dev/{child}", "partition", {}))
        return sorted(out, key=lambda e: _read_int(e.sys_path / "partition") or 0)

    def usage(self, entry: _Entry) -> tuple[tuple[Mount, ...], tuple[Mount, ...], tuple[str, ...], tuple[str, ...]]:
        """(its own mounts, the mounts of it, its partitions and holders, the swap areas among them, its holders)."""
        uses = self.uses(entry)
        mounts = tuple(self.mount(u) for u in uses if u.kind == "mount")
        return (tuple(m for m in mounts if m.device == entry.name), mounts,
                tuple(u.kname for u in uses if u.kind == "swap"), tuple(u.kname for u in uses if u.kind == "holder"))

    def build(self, entry: _Entry) -> BlockDevice:
        p = entry.sys_path
        props = entry.properties
        major, minor = _devnum(p)
        active, available = _parse_scheduler(_read(p / "queue" / "scheduler"))
        parts = []
        for part in self.partitions_of(entry):
            _, mounts, swaps, holders = self.usage(part)
            parts.append(
                Partition(
                    name=part.name,
                    path=part.devnode,
                    number=_read_int(part.sys_path / "partition"),
                    start_bytes=(_read_int(part.sys_path / "start") or 0) * SECTOR_BYTES,
                    size_bytes=(_read_int(part.sys_path / "size") or 0) * SECTOR_BYTES,
                    mounts=mounts,
                    swap=bool(swaps),
                    holders=holders,
                )
            )
        own_mounts, mounts_via, swaps_via, holders = self.usage(entry)
        dm_uuid = _read(p / "dm" / "uuid") or props.get("DM_UUID") or None
        backing = _read(p / "loop" / "backing_file")
        dm_name = _read(p / "dm" / "name") or props.get("DM_NAME") or None
        vg = lv = None
        if dm_uuid and dm_uuid.startswith("LVM-"):
            vg, lv = props.get("DM_VG_NAME"), props.get("DM_LV_NAME")
            if not (vg and lv) and dm_name:
                vg, lv = split_lvm_dm_name(dm_name)
        # For a partition, the queue/ directory lives on the parent disk.
        queue = p / "queue" if (p / "queue").is_dir() else p.parent / "queue"
        if not active and queue != p / "queue":
            active, available = _parse_scheduler(_read(queue / "scheduler"))
        return BlockDevice(
            name=entry.name,
            path=entry.devnode,
            devtype=entry.devtype,
            major=major,
            minor=minor,
            size_bytes=(_read_int(p / "size") or 0) * SECTOR_BYTES,
            logical_block_size_bytes=_read_int(queue / "logical_block_size"),
            physical_block_size_bytes=_read_int(queue / "physical_block_size"),
            rotational=_bool(_read_int(queue / "rotational")),
            rotational_note=ROTATIONAL_NOTE,
            scheduler=active,
            schedulers_available=available,
            read_ahead_kb=_read_int(queue / "read_ahead_kb"),
            read_only=_bool(_read_int(p / "ro")),
            removable=_bool(_read_int(p / "removable")),
            holders=holders,
            slaves=_listdir(p / "slaves"),
            mounts=own_mounts,
            mounted=bool(mounts_via),
            mounted_via=mounts_via,
            swap=bool(swaps_via),
            swap_via=swaps_via,
            partitions=tuple(parts),
            dm_name=dm_name,
            dm_uuid=dm_uuid,
            lvm=bool(dm_uuid and dm_uuid.startswith("LVM-")),
            loop_backing_file=backing or None,
            loop_direct_io=_bool(_read_int(p / "loop" / "dio")) if backing else None,
            model=_read(p / "device" / "model") or props.get("ID_MODEL") or None,
            serial=_read(p / "serial") or props.get("ID_SERIAL") or None,
            lvm_vg=vg,
            lvm_lv=lv,
            udev_properties=dict(props),
        )


def split_lvm_dm_name(dm_name: str) -> tuple[str | None, str | None]:
    """Volume group and logical volume of an LVM device-mapper name ("vg--a-lv" -> ("vg-a", "lv")).

    LVM joins VG and LV with one "-" and doubles every "-" inside either name.
    """
    i = 0
    while i < len(dm_name):
        if dm_name[i] == "-":
            if i + 1 < len(dm_name) and dm_name[i + 1] == "-":
                i += 2
                continue
            return dm_name[:i].replace("--", "-"), dm_name[i + 1 :].replace("--", "-")
        i += 1
    return None, None


def _resolve_name(device: str) -> str:
    """Kernel name of DEVICE, given as a name ("loop3") or a path ("/dev/loop3", a symlink)."""
    if not device:
        raise ValueError("device must be a block device name or path, not an empty string")
    if os.sep not in device and (SYS_CLASS_BLOCK / device).exists():
        return device
    try:
        st = os.stat(device)
    except FileNotFoundError:
        name = os.path.basename(device)
        if (SYS_CLASS_BLOCK / name).exists():
            return name
        raise FileNotFoundError(f"device {device!r}: no such block device") from None
    if not stat.S_ISBLK(st.st_mode):
        raise ValueError(f"device {device!r} is not a block device")
    link = SYS_DEV_BLOCK / f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    return link.resolve().name


def probe(device: str | None = None, *, source: Source = "auto", include_empty: bool = False) -> ProbeResult:
    """List block devices (or describe one).

    Parameters
    ----------
    device : str, optional
        A kernel name ("loop3") or a device file ("/dev/loop3"); None lists all.
    source : "auto" (pyudev where the udev database exists, else sysfs),
        "pyudev" or "sysfs" to force one.
    include_empty : also list devices of size 0 (unattached loop devices, empty
        zram); a device named explicitly is always described.
    """
    name = _resolve_name(device) if device is not None else None
    used, note, lister = _choose_source(source)
    entries = lister()
    ctx = _Context(entries)
    if name is not None:
        entry = ctx.entries.get(name)
        if entry is None:
            raise FileNotFoundError(f"device {device!r} not found by {used}")
        devices = (ctx.build(entry),)
    else:
        devices = tuple(
            dev
            for dev in (ctx.build(e) for e in sorted(entries, key=lambda e: e.name) if e.devtype == "disk")
            if include_empty or dev.size_bytes > 0
        )
    return ProbeResult(used, note, detect_virtualisation(), devices)


def format_table(result: ProbeResult) -> str:
    """Human-readable text for ``diskmodel probe``."""
    v = result.virtualisation
    lines = [f"source: {result.source_note}"]
    if v.virtualised:
        lines.append(f"machine: virtual ({v.vm}, by {v.method})" + (f", in a {v.container} container" if v.container else ""))
    elif v.virtualised is False:
        lines.append(f"machine: not virtualised (by {v.method})" + (f", in a {v.container} container" if v.container else ""))
    else:
        lines.append(f"machine: unknown ({v.method})")
    if not result.devices:
        lines.append("no block devices found")
    for d in result.devices:
        use = []
        if d.mounted:
            use.append("mounted at " + ", ".join(f"{m.mount_point} ({m.device})" for m in d.mounted_via))
        if d.swap:
            use.append("swap (" + ", ".join(d.swap_via) + ")")
        if d.holders:
            use.append("held by " + ", ".join(d.holders))
        lines.append("")
        lines.append(f"{d.path}  [{d.devtype}]  {d.size_bytes} bytes ({d.size_bytes / 2**30:.2f} GiB)")
        lines.append(
            f"  block size: logical {d.logical_block_size_bytes} B, physical {d.physical_block_size_bytes} B; "
            f"rotational: {d.rotational} (a hint only: virtual disks lie)"
        )
        lines.append(f"  scheduler: {d.scheduler}; read_ahead_kb: {d.read_ahead_kb}; read-only: {d.read_only}")
        if d.slaves:
            lines.append("  slaves: " + ", ".join(d.slaves))
        if d.dm_name:
            lines.append(f"  device-mapper: {d.dm_name}" + (f" (LVM: VG {d.lvm_vg}, LV {d.lvm_lv})" if d.lvm else ""))
        if d.loop_backing_file:
            dio = "on" if d.loop_direct_io else "off: reads hit the backing file's page cache"
            lines.append(f"  loop backing file: {d.loop_backing_file} (direct I/O {dio})")
        lines.append("  in use: " + ("; ".join(use) if use else "no (not mounted, not swap, no holders)"))
        for part in d.partitions:
            state = ", ".join(m.mount_point for m in part.mounts) or ("swap" if part.swap else "not mounted")
            lines.append(f"  partition {part.name}: start {part.start_bytes} B, size {part.size_bytes} B, {state}")
    return "\n".join(lines)
