"""The programs a run needs, checked before anything is created, and the room its scratch file needs.

A run on the host finds out that a program is missing only when the step
that calls it runs: after the scratch is filled and the loop devices, the
file system and the mount are made. :func:`require_tools` looks every
program up (``shutil.which``) first and names the Debian 12 package that
carries each missing one; :func:`tools_of_plan` lists the programs a
stack's plan calls. :func:`require_free_space` refuses a new scratch file
larger than the free space of its folder (``os.statvfs``), before it is
filled.
"""
from __future__ import annotations

import os
import shutil

__all__ = ["DEBIAN_PACKAGES", "MissingTools", "require_tools", "tools_of_plan", "require_free_space"]

#: Program -> the Debian 12 package that installs it (``dpkg -S``).
DEBIAN_PACKAGES = {
    "postmark": "postmark", "fio": "fio",
    "losetup": "mount", "mount": "mount", "umount": "mount",
    "blockdev": "util-linux", "wipefs": "util-linux", "sfdisk": "fdisk", "mktemp": "coreutils",
    "sync": "coreutils", "truncate": "coreutils", "dd": "coreutils", "rmdir": "coreutils", "mkdir": "coreutils",
    "mkfs.ext2": "e2fsprogs", "mkfs.ext3": "e2fsprogs", "mkfs.ext4": "e2fsprogs", "tune2fs": "e2fsprogs",
    "mkfs.xfs": "xfsprogs", "mkfs.btrfs": "btrfs-progs", "btrfs": "btrfs-progs",
    "mkfs.jfs": "jfsutils", "mkfs.reiserfs": "reiserfsprogs",
    "pvcreate": "lvm2", "pvremove": "lvm2", "pvs": "lvm2", "vgcreate": "lvm2", "vgremove": "lvm2",
    "lvcreate": "lvm2", "lvremove": "lvm2", "lvs": "lvm2", "lvconvert": "lvm2",
    "dmsetup": "dmsetup", "mdadm": "mdadm",
    "qemu-system-x86_64": "qemu-system-x86", "nbdkit": "nbdkit", "nbdfuse": "libnbd-bin", "fusermount3": "fuse3",
    "findmnt": "util-linux", "lsblk": "util-linux", "cp": "coreutils", "tar": "tar", "bonnie++": "bonnie++",
}


class MissingTools(RuntimeError):
    """Programs a run needs are not installed (a failure of the host, not of an argument: exit 1)."""


def tools_of_plan(plan) -> list[str]:
    """The programs the steps of a stack's plan (provision.StackPlan) run, and those their undos run, in order."""
    from diskmodel.calibrate.bench.steps import UNDO_ARGV

    found: dict[str, None] = {}
    for step in plan.steps:
        if step.argv and isinstance(step.argv[0], str):
            found[step.argv[0]] = None
        if step.resource is not None and step.resource[0] in UNDO_ARGV:
            found[UNDO_ARGV[step.resource[0]][0][0]] = None
    return list(found)


def require_tools(names, purpose: str) -> None:
    """MissingTools naming every program of *names* that is not on PATH and its Debian package."""
    missing = [name for name in dict.fromkeys(names) if shutil.which(name) is None]
    if not missing:
        return
    packages = list(dict.fromkeys(DEBIAN_PACKAGES.get(name, name) for name in missing))
    shown = ", ".join(f"{name} (Debian package {DEBIAN_PACKAGES.get(name, '?')})" for name in missing)
    raise MissingTools(f"{purpose} needs {shown}, not installed here; nothing was created "
                       f"(apt-get install {' '.join(packages)})")


def require_free_space(path, size_bytes: int, what: str = "scratch") -> None:
    """ValueError if a new file of *size_bytes* at *path* would not fit in its folder's free space.

    Only for a path that does not exist yet (an existing file or device is not grown from free space here).
    """
    raw = os.fspath(path)
    if os.path.lexists(raw):
        return
    folder = os.path.dirname(os.path.realpath(raw)) or "."
    try:
        st = os.statvfs(folder)
    except FileNotFoundError:
        return  # the scratch's own checks say the folder does not exist
    free = st.f_bavail * st.f_frsize
    if size_bytes > free:
        raise ValueError(f"{what} {raw}: needs {size_bytes} bytes ({size_bytes / 2**30:.3g} GiB) but {folder} "
                         f"has {free} bytes ({free / 2**30:.3g} GiB) free; choose a smaller size or another folder")
