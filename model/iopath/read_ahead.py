"""The read-ahead window a device gets from its queue's optimal I/O size.

When a block device is set up, the kernel sizes its read-ahead (the bdi's ``ra_pages``, what
``read_ahead_kb`` shows) as twice its optimal I/O size, and never below the default 128 KiB
(``VM_READAHEAD_PAGES``; block/blk-settings.c, ``blk_queue_io_opt`` and ``disk_update_readahead``
in Linux 6.1, ``blk_apply_bdi_limits`` since 6.10: "For read-ahead of large files to be effective,
we need to read ahead at least twice the optimal I/O size"). The optimal I/O size (``io_opt``,
sysfs ``optimal_io_size``) is what the layers say a full stripe is:

- md RAID 0: a chunk on every member; RAID 5 and 6: a chunk on every data member
  (drivers/md/raid0.c, raid0_set_limits; raid5.c, raid5_set_io_opt); RAID 1: none of its own;
- an LVM striped volume: a chunk on every stripe (drivers/md/dm-stripe.c, stripe_io_hints);
- a thin pool: its chunk, unless what it is stacked on has a multiple of it already
  (drivers/md/dm-thin.c, pool_io_hints); a thin volume takes its pool's (thin_iterate_devices);
- a linear volume and md over members: the least common multiple of the members'
  (blk_stack_limits, ``lcm_not_zero``); a partition, a drive, a loop device and NBD: none.

A btrfs file system reads ahead by its own bdi, not its devices': ``ra_pages`` the default times its
devices, at least 4 MiB (fs/btrfs/disk-io.c, open_ctree: ``ra_pages *= num_devices; ra_pages =
max(ra_pages, SZ_4M / PAGE_SIZE)``; ``/sys/class/bdi/btrfs-N/read_ahead_kb`` reads 4096 here), and
``io_pages`` the bdi's default, 128 KiB (mm/backing-dev.c, bdi_alloc): :func:`btrfs_read_ahead_kb`.

Seen in the VM's Linux 6.1: ``read_ahead_kb`` 512 on md RAID 0 and on an LVM volume striped over
four members at 64 KiB, 384 on RAID 5 and 256 on RAID 6 over four, 128 on a linear volume and on
two stripes of 4 KiB, and 128, 2048 and 16384 on thin volumes of pools with 64 KiB, 1 MiB and
8 MiB chunks. ``blockdev --setra`` overrides it: :class:`~.pagecache.CacheParams` ``read_ahead_kb``.
"""
from __future__ import annotations

import math

__all__ = ["DEFAULT_READ_AHEAD_KB", "BTRFS_MIN_READ_AHEAD_KB", "io_opt_bytes", "device_read_ahead_kb",
           "btrfs_read_ahead_kb"]

#: The kernel's default read-ahead [KiB] (VM_READAHEAD_PAGES: 128 KiB), a device's least.
DEFAULT_READ_AHEAD_KB = 128
#: btrfs's least read-ahead [KiB] (open_ctree: SZ_4M).
BTRFS_MIN_READ_AHEAD_KB = 4096


def _lcm(values) -> int:
    out = 0
    for v in values:
        out = v if not out else (out if not v else math.lcm(out, v))
    return out


def io_opt_bytes(node) -> int:
    """The optimal I/O size [bytes] of a stack's block node (0: none; see the module docstring)."""
    kind = type(node).__name__
    if kind == "RaidArray":
        if node.tool == "btrfs":  # not a block device: btrfs spreads its own chunks
            return 0
        if node.kind == "raid1":
            return _lcm(io_opt_bytes(m) for m in node.members)
        return int(node.chunk_size_bytes) * int(node.data_members)
    if kind == "StripedVolume":
        return int(node.stripe_size_bytes) * len(node.physical_volumes)
    if kind == "LinearVolume":
        return _lcm(io_opt_bytes(m) for m in node.physical_volumes)
    if kind == "ThinVolume":
        chunk, below = int(node.chunk_size_bytes), io_opt_bytes(node.data)
        return below if below >= chunk and below % chunk == 0 else chunk
    return 0


def device_read_ahead_kb(node) -> int:
    """The read-ahead [KiB] the kernel gives *node*'s device: twice its optimal I/O size, at least
    :data:`DEFAULT_READ_AHEAD_KB`."""
    return max(2 * io_opt_bytes(node) // 1024, DEFAULT_READ_AHEAD_KB)


def btrfs_read_ahead_kb(devices: int) -> int:
    """The read-ahead [KiB] of a btrfs over *devices* devices: its bdi's, the default times the devices,
    at least :data:`BTRFS_MIN_READ_AHEAD_KB` (see the module docstring)."""
    return max(DEFAULT_READ_AHEAD_KB * int(devices), BTRFS_MIN_READ_AHEAD_KB)

