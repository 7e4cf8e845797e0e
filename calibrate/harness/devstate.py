"""The state of block devices, mounts and loop devices, from util-linux's JSON output.

One place reads what the system says is in use: ``lsblk -J -b -O`` (block
devices, their partitions and holders, their mount points and swap),
``findmnt -J`` (every mount, including a file or a folder mounted as a
source) and ``losetup -J`` (which files back which loop devices, by inode as
well as by name, so an unlinked backing file is still found). Every safety
check of the harness (:func:`busy_reasons`, :func:`block_uses`: ``diskmodel probe``'s
"in use" too) and every teardown of a run
(:mod:`diskmodel.calibrate.harness.resources`) asks these functions, never sysfs or
``/proc/self/mountinfo`` by hand.
"""
from __future__ import annotations

import dataclasses
import errno
import json
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BlockUse",
    "DeviceStateError",
    "block_device",
    "block_devices",
    "block_uses",
    "busy_reasons",
    "loop_device",
    "loop_devices",
    "loops_over",
    "mounted_at",
    "mounts",
    "mounts_below",
]


class DeviceStateError(RuntimeError):
    """A util-linux command failed or printed something that is not its JSON."""


def _json_of(argv: list[str]) -> dict:
    """The JSON a util-linux command prints ({} when it prints nothing, as losetup does with no loops)."""
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise DeviceStateError(f"{argv[0]} is not installed (Debian package util-linux or mount)") from None
    if proc.returncode != 0:
        raise DeviceStateError(f"{' '.join(argv)} failed with status {proc.returncode}: {proc.stderr.strip()}")
    try:
        return json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError as exc:
        raise DeviceStateError(f"{' '.join(argv)} printed no JSON ({exc})") from None


def loop_devices() -> list[dict]:
    """Every loop device: name, maj:min, back-file, dio, offset, sizelimit, back-ino, back-maj:min
    (``losetup -J -l``).

    The maj:min columns come padded with spaces; they are returned stripped.
    """
    data = _json_of(["losetup", "-J", "-l", "-O",
                     "NAME,MAJ:MIN,BACK-FILE,DIO,OFFSET,SIZELIMIT,BACK-INO,BACK-MAJ:MIN"])
    out = []
    for dev in data.get("loopdevices", []):
        dev = dict(dev)
        for key in ("maj:min", "back-maj:min"):
            dev[key] = str(dev.get(key) or "").strip()
        dev["back-file"] = str(dev.get("back-file") or "")
        out.append(dev)
    return out


def loop_device(path: str | os.PathLike) -> dict | None:
    """The loop device at *path* as :func:`loop_devices` lists it; None for any other file or device."""
    st = os.stat(path)
    if not stat.S_ISBLK(st.st_mode):
        return None
    key = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    return next((dev for dev in loop_devices() if dev["maj:min"] == key), None)


def _backing_matches(dev: dict, backing: str | None, ino=None, maj_min: str | None = None,
                     offset_bytes: int | None = None) -> bool:
    if ino is not None and maj_min is not None:
        # By inode: still right after the backing file was unlinked ("... (deleted)").
        if str(dev.get("back-ino")) != str(ino) or dev["back-maj:min"] != maj_min:
            return False
    elif os.path.realpath(dev["back-file"].removesuffix(" (deleted)")) != backing:
        return False
    return offset_bytes is None or int(dev.get("offset") or 0) == int(offset_bytes)


def loop_attachment(device: str) -> int | None:
    """The disk sequence number of loop *device*'s present attachment (``/sys/block/loopN/diskseq``), or None
    when the device is not attached (no ``loop/`` folder in sysfs) or the kernel has no such number.

    The kernel gives a disk a new, never reused sequence number each time a loop device is attached
    (``inc_diskseq`` in ``loop_configure``, drivers/block/loop.c): the number names one attachment, which the
    device's name does not (another run may attach the same loopN later), nor its backing file's path (once the
    file's FUSE mount is detached, the kernel shows the path from that mount's root, ``/nbd``) or inode (which
    the kernel cannot read back while the FUSE server is gone)."""
    sysfs = Path("/sys/block") / os.path.basename(device)
    if not (sysfs / "loop").is_dir():
        return None
    try:
        return int((sysfs / "diskseq").read_text())
    except (OSError, ValueError):
        return None


def loops_over(backing: str | None, *, ino=None, maj_min: str | None = None,
               offset_bytes: int | None = None) -> list[str]:
    """Loop devices over *backing* (a real path), or over the file with that inode, at *offset_bytes* if given."""
    return [d["name"] for d in loop_devices() if _backing_matches(d, backing, ino, maj_min, offset_bytes)]


def mounts() -> list[dict]:
    """Every mount: source, target, fstype, maj:min (``findmnt -J --list``)."""
    return _json_of(["findmnt", "-J", "--list", "-o", "SOURCE,TARGET,FSTYPE,MAJ:MIN"]).get("filesystems", [])


def mounted_at(mountpoint: str) -> bool:
    """Is something mounted exactly on *mountpoint*?"""
    return any(fs["target"] == mountpoint for fs in mounts())


def mounts_below(folder: str) -> list[str]:
    """Mount points at or below *folder*."""
    prefix = folder.rstrip("/") + "/"
    return [fs["target"] for fs in mounts() if fs["target"] == folder or fs["target"].startswith(prefix)]


def block_device(path: str) -> dict:
    """``lsblk -J -b -O PATH``: the device with its partitions and holders as ``children``."""
    devices = _json_of(["lsblk", "-J", "-b", "-O", path]).get("blockdevices", [])
    if not devices:
        raise DeviceStateError(f"lsblk knows no block device {path}")
    return devices[0]


def block_devices() -> dict[str, dict]:
    """Every block device lsblk knows (``lsblk -J -b -O -a``, empty ones too), by ``maj:min``,
    each with its own tree below it (partitions, and the devices built on it)."""
    found: dict[str, dict] = {}
    for root in _json_of(["lsblk", "-J", "-b", "-O", "-a"]).get("blockdevices", []):
        for node, _ in _walk(root):
            found.setdefault(str(node.get("maj:min")), node)
    return found


def _walk(node: dict, depth: int = 0):
    yield node, depth
    for child in node.get("children", []) or []:
        yield from _walk(child, depth + 1)


@dataclass(frozen=True)
class BlockUse:
    """One way a block device is in use, as lsblk shows it.

    kind: "mount", "swap", "holder" (a device other than a partition built
    directly on it) or "built_on" (one built further down, e.g. on a partition);
    kname, path, type: the device that is so used (``sda1``, ``/dev/sda1``,
    ``part``) or that holds it (``dm-0``, ``/dev/mapper/vg-lv``, ``lvm``);
    target: the mount point of a mount.
    """

    kind: str
    kname: str
    path: str
    type: str
    target: str = ""


def block_uses(node: dict) -> list[BlockUse]:
    """Every use of the device lsblk describes as *node* ([] when it is free): mounts and
    swap of it, of a partition or of anything built on it, and the devices built on it."""
    uses: list[BlockUse] = []
    for child, depth in _walk(node):
        kname = str(child.get("kname") or child.get("name"))
        path, kind = str(child.get("path") or child.get("name")), str(child.get("type"))
        if depth >= 1 and kind != "part":
            uses.append(BlockUse("holder" if depth == 1 else "built_on", kname, path, kind))
        for target in dict.fromkeys(m for m in (child.get("mountpoints") or []) if m):
            uses.append(BlockUse("swap", kname, path, kind) if target == "[SWAP]"
                        else BlockUse("mount", kname, path, kind, target))
    return uses


def busy_reasons(path: str | os.PathLike) -> list[str]:
    """Why the block device or regular file at *path* is in use ([] when it is free).

    Block device: each of :func:`block_uses` (a mount or swap of it, of a
    partition or of anything built on it; a holder of it; a device built
    further down), and an ``O_EXCL`` open that fails with EBUSY. Regular file:
    backing a loop device (``losetup -J``), or mounted as a source (``findmnt -J``).
    """
    path = os.path.realpath(os.fspath(path))
    st = os.stat(path)
    reasons: list[str] = []
    if stat.S_ISBLK(st.st_mode):
        root = block_device(path)
        wording = {"holder": "{root} is held by {path} ({type})", "built_on": "{path} ({type}) is built on {root}",
                   "swap": "{path} is in use as swap", "mount": "{path} is mounted on {target}"}
        for use in block_uses(root):
            reasons.append(wording[use.kind].format(root=root.get("path"), **dataclasses.asdict(use)))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                reasons.append(f"{path} cannot be opened exclusively (O_EXCL: device busy)")
            else:
                reasons.append(f"{path} cannot be opened ({exc.strerror})")
        else:
            os.close(fd)
    elif stat.S_ISREG(st.st_mode):
        maj_min = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        for dev in loop_devices():
            if _backing_matches(dev, path, st.st_ino, maj_min):
                reasons.append(f"{path} backs {dev['name']}")
        for fs in mounts():
            if fs.get("source") == path:
                reasons.append(f"{path} is mounted on {fs['target']}")
    return reasons
