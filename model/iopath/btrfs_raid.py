"""btrfs over several devices: its chunks' raid0 and raid1 profiles, as requests on each device.

One btrfs over two or more devices keeps one logical address space; each chunk of it is mapped on
the devices by its profile (fs/btrfs/volumes.c, btrfs_map_block):

- **raid0**: the chunk is cut into 64 KiB stripes (BTRFS_STRIPE_LEN) dealt to the devices in turn:
  logical offset ``o`` of the chunk is on device ``(o // 64 KiB) % n`` at
  ``(o // 64 KiB // n) * 64 KiB + o % 64 KiB`` of that device's part of the chunk: md's raid0
  arithmetic with a 64 KiB chunk (:func:`.md_raid.md_raid0`).
- **raid1**: every write goes to each of two devices at the same offset of their part of the chunk;
  a read is served by one mirror (see below).

On each device the pieces of consecutive bios merge in its queue, but a request holds at most
``max_segments`` (128) segments (blk-merge.c, ll_back_merge_fn): btrfs keeps file data in 4 KiB
folios (order-0 pages: no large folios for btrfs data), and the pages write-back gathers were
dirtied one by one, physically scattered, each a segment: a member's write request is at most
128 pages, 512 KiB, however many 64 KiB stripes line up on it. Read-ahead allocates its pages
together, physically adjacent ones sharing a segment, so reads reach ``max_sectors_kb``. A raid1 read goes to the mirror the
reading task's pid picks (find_live_mirror, ``BTRFS_READ_POLICY_PID``: ``first + pid %
num_stripes``): all of one task's reads on one device, ``reader_pid`` given, else the first.

Data and metadata chunks both take the profile given (``mkfs.btrfs -d P -m P``): the file system's
metadata is written once to the logical space (no DUP copies) and the profile copies or stripes
it. The superblocks are not in any chunk: each device has its own copies at 64 KiB and 64 MiB,
and every commit writes them all (disk-io.c, write_all_supers). The device parts of the chunks
are taken to start at the same offset on each device, the file system's own layout
(:mod:`.fs_layout`) being that of one device.
"""

from __future__ import annotations

import numpy as np

from ..stacks.raid import BTRFS_STRIPE_BYTES
from .fs import MAX_SEGMENTS
from .md_raid import md_raid0
from .stream import Op, Stream, concat

__all__ = ["BTRFS_PROFILES", "BTRFS_STRIPE_BYTES", "BTRFS_MEMBER_WRITE_KB", "btrfs_map"]

BTRFS_PROFILES = ("raid0", "raid1")
BTRFS_DATA_FOLIO_BYTES = 4096  # btrfs's page cache folios of file data
#: the largest write request on a member: max_segments folios
BTRFS_MEMBER_WRITE_KB = MAX_SEGMENTS * BTRFS_DATA_FOLIO_BYTES // 1024


def btrfs_map(stream: Stream, profile: str, devices, superblocks, reader_pid: int | None = None) -> dict[str, Stream]:
    """The file system's logical stream ``stream`` on each of ``devices`` (names) by ``profile``;
    writes of 4 KiB at a superblock offset (``superblocks``, bytes) go to every device there; raid1's
    reads to the mirror ``reader_pid`` picks (None: the first)."""
    if profile not in BTRFS_PROFILES:
        raise ValueError(f"btrfs: profile = {profile!r} must be one of {', '.join(BTRFS_PROFILES)}")
    names = list(devices)
    if reader_pid is not None and (isinstance(reader_pid, bool) or not isinstance(reader_pid, int) or reader_pid < 0):
        raise ValueError(f"btrfs: reader_pid = {reader_pid!r} must be a process id (an integer >= 0)")
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValueError(f"btrfs: devices = {names!r} must be two or more distinct names")
    sb = (stream.op == Op.WRITE) & np.isin(stream.offset_bytes, list(superblocks)) & (stream.size_bytes == 4096)
    rest = stream.take(np.flatnonzero(~sb))
    if profile == "raid0":
        parts = md_raid0(rest, names, BTRFS_STRIPE_BYTES)
    else:
        # writes to both mirrors; reads to the one find_live_mirror prefers: first + pid % num_stripes
        preferred = names[(reader_pid or 0) % 2]
        whole = np.flatnonzero(~sb)
        reads = rest.op == Op.READ
        parts = {}
        for name in names[:2]:
            keep = np.flatnonzero(~reads | (name == preferred))
            parts[name] = rest.take(keep).replace(parent=whole[keep])
    supers = stream.take(np.flatnonzero(sb))
    out = {}
    for name in names:
        both = concat([parts[name], supers.replace(parent=np.flatnonzero(sb))]) if name in parts else supers
        out[name] = both.take(np.argsort(both.time_s, kind="stable"))
    return out
