"""The disks a block node's partitions name, and the chunk sizes block nodes accept.

A storage stack (:mod:`diskmodel.model.stacks.stack`) is a tree of block nodes
under its file system: partitions and LVM volumes on disks
(:mod:`diskmodel.model.stacks.volumes`), RAID arrays (:mod:`diskmodel.model.stacks.raid`),
thin volumes (:mod:`diskmodel.model.stacks.thin`), loop files
(:mod:`diskmodel.model.stacks.loop_file`), network block devices
(:mod:`diskmodel.model.stacks.network`).  A node is a frozen validated dataclass
marked with :func:`diskmodel.model.stacks.nodes.node_type`, with ``size_bytes``
(what it presents to the layer above) and ``describe()``; its children are
fields holding nodes, so that :func:`~diskmodel.model.stacks.nodes.walk` finds
them.  What a node does to the requests sent to it is the I/O path's
(:mod:`diskmodel.model.iopath.path`), and their time the drives'
simulations' (:mod:`diskmodel.model.iopath.timing`).

:class:`BlockEnv` resolves the disk names of partitions to
:class:`~diskmodel.model.drive.disk.Disk` objects for
:func:`diskmodel.model.predict.predict_block`.
"""
from __future__ import annotations

from .._checks import show, whole_number
from ..drive.disk import Disk

#: Smallest chunk (RAID chunk, stripe, thin-pool chunk) a stack accepts: one page [bytes].
MIN_CHUNK_BYTES = 4096


def chunk_size(name: str, value) -> int:
    """A chunk size: a whole power of two >= 4 KiB [bytes], or ValueError naming *name*."""
    chunk = whole_number(name, value, minimum=1)
    if chunk < MIN_CHUNK_BYTES or chunk & (chunk - 1):
        raise ValueError(f"{name} must be a power of two >= {MIN_CHUNK_BYTES} bytes (got {show(value)})")
    return chunk


class BlockEnv:
    """The disks a stack's partitions name, by name.

    ``BlockEnv({"sda": disk_a, "sdb": disk_b})``; :meth:`Stack.block_env` makes one from a stack.
    ``max_sectors_kb``: each disk's queue limit [KiB] by name (the drive node's ``max_sectors_kb``);
    a disk left out has the default, BLK_DEF_MAX_SECTORS. ``queues``: each disk's scheduler and queue
    depth by name (the drive node's ``scheduler`` and ``queue_depth``); a disk left out has Linux's for
    a disk, mq-deadline at depth 1.
    """

    def __init__(self, disks: dict, max_sectors_kb: dict | None = None, queues: dict | None = None):
        if not isinstance(disks, dict) or not disks:
            raise ValueError(f"disks must be a non-empty dict of name -> Disk (got {show(disks)})")
        for name, disk in disks.items():
            if not isinstance(disk, Disk):
                raise ValueError(f"disks[{name!r}] must be a Disk (got {show(disk)})")
        limits = {} if max_sectors_kb is None else max_sectors_kb
        if not isinstance(limits, dict):
            raise ValueError(f"max_sectors_kb must be a dict of disk name -> KiB (got {show(max_sectors_kb)})")
        self._disks = dict(disks)
        self._limits = {name: whole_number(f"max_sectors_kb[{name!r}]", kb, minimum=4) for name, kb in limits.items()}
        self._queues = dict(queues or {})

    @property
    def schedulers(self) -> dict:
        """``{name: Scheduler}`` of the disks whose queue has one (:mod:`diskmodel.model.iopath.scheduler`)."""
        from ..drive.drives import DEFAULT_MAX_SECTORS_KB, DEFAULT_SCHEDULER
        from ..iopath.scheduler import queue_scheduler

        out = {n: queue_scheduler(*self._queues.get(n, (DEFAULT_SCHEDULER, 1)),
                                  self._limits.get(n, DEFAULT_MAX_SECTORS_KB)) for n in self._disks}
        return {n: sc for n, sc in out.items() if sc is not None}

    @property
    def max_sectors_kb(self) -> dict:
        """``{name: queue limit [KiB]}`` of the disks given one (a copy)."""
        return dict(self._limits)

    @property
    def disks(self) -> dict:
        """``{name: Disk}`` (a copy)."""
        return dict(self._disks)

    def disk(self, name: str) -> Disk:
        try:
            return self._disks[name]
        except KeyError:
            raise ValueError(f"disk {name!r} is not one of the stack's disks ({', '.join(self._disks)})") from None


__all__ = ["MIN_CHUNK_BYTES", "BlockEnv", "chunk_size"]
