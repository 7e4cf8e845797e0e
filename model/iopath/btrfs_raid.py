"""btrfs over several devices: its chunks' raid0 and raid1 profiles, as requests on each device.

One btrfs over two or more devices keeps one logical address space; each chunk of it is mapped on
the devices by its profile (fs/btrfs/volumes.c, btrfs_map_block):

- **raid0**: the chunk is cut into 64 KiB stripes (BTRFS_STRIPE_LEN) dealt to the devices in turn:
  logical offset ``o`` of the chunk is on device ``(o // 64 KiB) % n`` at
  ``(o // 64 KiB // n) * 64 KiB + o % 64 KiB`` of that device's part of the chunk: md's raid0
  arithmetic with a 64 KiB chunk (:func:`.md_raid.md_raid0`).
- **raid1**: every write goes to each of two devices at the same offset of their part of the chunk;
  a read is served by one mirror (find_live_mirror: the reading task's pid picks it, one task's
  reads all go to one device; :func:`.md_raid.md_raid1`'s first mirror).

Data and metadata chunks both take the profile given (``mkfs.btrfs -d P -m P``): the file system's
metadata is written once to the logical space (no DUP copies) and the profile copies or stripes
it. The superblocks are not in any chunk: each device has its own copies at 64 KiB and 64 MiB,
and every commit writes them all (disk-io.c, write_all_supers). The device parts of the chunks
are taken to start at the same offset on each device, the file system's own layout
(:mod:`.fs_layout`) being that of one device.
"""

from __future__ import annotations

import numpy as np

from .fileops import FileOps, resolve_clones
from .fs import file_system
from .fs_layout import FsParams
from .md_raid import md_raid0, md_raid1
from .pagecache import CacheParams, page_cache
from .path import queue
from .stream import Op, Stream, concat

__all__ = ["BTRFS_PROFILES", "BTRFS_STRIPE_BYTES", "btrfs_map", "btrfs_multi_device"]

BTRFS_PROFILES = ("raid0", "raid1")
BTRFS_STRIPE_BYTES = 64 << 10  # BTRFS_STRIPE_LEN


def btrfs_map(stream: Stream, profile: str, devices, superblocks) -> dict[str, Stream]:
    """The file system's logical stream ``stream`` on each of ``devices`` (names) by ``profile``;
    writes of 4 KiB at a superblock offset (``superblocks``, bytes) go to every device there."""
    if profile not in BTRFS_PROFILES:
        raise ValueError(f"btrfs: profile = {profile!r} must be one of {', '.join(BTRFS_PROFILES)}")
    names = list(devices)
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValueError(f"btrfs: devices = {names!r} must be two or more distinct names")
    sb = (stream.op == Op.WRITE) & np.isin(stream.offset_bytes, list(superblocks)) & (stream.size_bytes == 4096)
    rest = stream.take(np.flatnonzero(~sb))
    parts = md_raid0(rest, names, BTRFS_STRIPE_BYTES) if profile == "raid0" else md_raid1(rest, names[:2])
    supers = stream.take(np.flatnonzero(sb))
    out = {}
    for name in names:
        both = concat([parts[name], supers.replace(parent=np.flatnonzero(sb))]) if name in parts else supers
        out[name] = both.take(np.argsort(both.time_s, kind="stable"))
    return out


def btrfs_multi_device(workload: FileOps, profile: str, devices, device_bytes: int,
                       cache: CacheParams | None = None) -> dict[str, Stream]:
    """``{device: Stream}`` for ``workload`` on one btrfs over ``devices`` (names, each of
    ``device_bytes``) whose data and metadata are ``profile``: the page cache, the file system on
    its logical space (metadata once), the profile's mapping, each device's queue."""
    cache = cache or CacheParams()
    p = FsParams(kind="btrfs", device_bytes=int(device_bytes), metadata_copies=1)
    ops = resolve_clones(workload, reflink=True)
    res = page_cache(ops, cache)
    fs = file_system(res.ops, p, sync=res.sync, dirty_expire_s=cache.dirty_expire_s, workload=ops)
    return {name: queue(s) for name, s in btrfs_map(fs.stream, profile, devices, p.superblocks()).items()}
