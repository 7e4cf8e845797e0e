"""The block-layer protocol: what every block node of a stack answers about requests sent to it.

A storage stack (:mod:`diskmodel.model.stack`) is a tree of block nodes
under its file system: partitions and LVM volumes on disks
(:mod:`diskmodel.model.volumes`), RAID arrays (:mod:`diskmodel.model.raid`),
thin volumes (:mod:`diskmodel.model.thin`), loop files
(:mod:`diskmodel.model.loop_file`), network block devices.  The model asks
each node one question: *what does a stream of requests of this kind cost
on you?*  A node answers by turning the requests into requests on the
nodes below it (its members, its pool, its host device) and combining
their answers; a leaf (a partition or LVM volume on one disk) answers from
the disk model, eqs. (3)-(8) of Djordjevic & Timcenko (2015).

The protocol, which a new node type implements as methods:

``size_bytes`` (int)
    What the node presents to the layer above [bytes].
``block_time(requests: BlockRequests, env: BlockEnv) -> BlockTime``
    The expected cost of one request of *requests* on the node.  It calls
    ``child.block_time(...)`` for the requests it sends down (in series:
    add their times; in parallel on several members: the slowest), and adds
    its own costs as named parts (``BlockTime.plus``).  *env* resolves the
    disk names of partitions to :class:`~diskmodel.model.disk.Disk` objects.
``describe() -> str``
    One line for :meth:`Stack.describe`.

and, like every node, is a frozen validated dataclass marked with
:func:`diskmodel.model.nodes.node_type` and listed in
:data:`diskmodel.model.stack.NODE_TYPES` (which gives it its JSON form),
whose children are fields holding nodes (or tuples of nodes), so that
:func:`~diskmodel.model.nodes.walk` finds them.  Sizes that do not fit the
node's children are refused in ``__post_init__``, naming the field.

Example, a network block device (the pattern an NBD node follows)::

    @node_type("nbd")
    @dataclass(frozen=True)
    class NbdDevice:
        export: object               # the server's block node
        round_trip_s: float
        bandwidth_bytes_per_s: float
        client_overhead_s: float = 0.0
        @property
        def size_bytes(self): return self.export.size_bytes
        def block_time(self, requests, env):
            served = self.export.block_time(requests, env)   # the server's stack
            return served.plus(nbd_client_s=self.client_overhead_s, nbd_round_trip_s=self.round_trip_s,
                               nbd_transfer_s=requests.size_bytes / self.bandwidth_bytes_per_s)

:func:`block_time_of` is the one entry point (it checks the node follows
the protocol); :func:`diskmodel.model.predict.predict` uses it for the
block workloads of :mod:`diskmodel.model.block_workloads`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._checks import evolve as _evolve
from ._checks import finite_scalar, flag, show, whole_number
from .disk import Disk
from .nodes import is_node, kind_of

#: Smallest chunk (RAID chunk, stripe, thin-pool chunk) a stack accepts: one page [bytes].
MIN_CHUNK_BYTES = 4096


def chunk_size(name: str, value) -> int:
    """A chunk size: a whole power of two >= 4 KiB [bytes], or ValueError naming *name*."""
    chunk = whole_number(name, value, minimum=1)
    if chunk < MIN_CHUNK_BYTES or chunk & (chunk - 1):
        raise ValueError(f"{name} must be a power of two >= {MIN_CHUNK_BYTES} bytes (got {show(value)})")
    return chunk


@dataclass(frozen=True)
class BlockRequests:
    """A stream of like requests a layer sends to the block node below it.

    Attributes
    ----------
    size_bytes : int
        Bytes per request [bytes], >= 1.
    is_write : bool
    sequential : bool
        Each request starts where the previous one ended (a stream), or at
        a random place (aligned to its size, as fio places them).
    queue_depth : int
        Requests outstanding at once [count], >= 1 (fio's ``iodepth``).
    fresh : bool
        The requests touch blocks never written since the device was made:
        a thin volume or a sparse loop image allocates them on a write, and
        returns zeros without I/O on a read.
    stream_bytes : int or None
        Bytes the whole stream moves (a fio job's size) [bytes], >=
        size_bytes; a layer that buffers writes (a loop file's page cache)
        absorbs a stream up to its dirty limit.  None: a stream long enough
        to reach steady state, or one that ends with fsync.
    """

    size_bytes: int
    is_write: bool = False
    sequential: bool = False
    queue_depth: int = 1
    fresh: bool = False
    stream_bytes: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "size_bytes", whole_number("size_bytes", self.size_bytes, minimum=1))
        if self.stream_bytes is not None:
            object.__setattr__(self, "stream_bytes", whole_number("stream_bytes", self.stream_bytes,
                                                                  minimum=self.size_bytes))
        flag("is_write", self.is_write)
        flag("sequential", self.sequential)
        flag("fresh", self.fresh)
        object.__setattr__(self, "queue_depth", whole_number("queue_depth", self.queue_depth, minimum=1))

    def evolve(self, **changes) -> "BlockRequests":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    def describe(self) -> str:
        pattern = "sequential" if self.sequential else "random"
        what = "write" if self.is_write else "read"
        return (f"{pattern} {what}s of {self.size_bytes} bytes, queue depth {self.queue_depth}"
                f"{', fresh blocks' if self.fresh else ''}")


@dataclass(frozen=True)
class BlockTime:
    """The expected cost of one request on a block node.

    Attributes
    ----------
    size_bytes : int
        The request's size [bytes].
    time_s : float
        Its latency: from issue to completion [s] (the sum of ``parts``).
    interval_s : float
        The mean time between completions of the stream at its queue depth
        [s], <= time_s: throughput is ``size_bytes / interval_s``.
    parts : dict
        {name: seconds}: where the latency goes (e.g. ``seek_s``,
        ``loop_copy_s``, ``raid_parity_read_s``); sums to time_s.
    member_ios : float
        Requests that reach the disks per request [count].
    """

    size_bytes: int
    time_s: float
    interval_s: float
    parts: dict = field(default_factory=dict)
    member_ios: float = 1.0

    def __post_init__(self):
        whole_number("size_bytes", self.size_bytes, minimum=1)
        finite_scalar("time_s", self.time_s, nonnegative=True)
        finite_scalar("interval_s", self.interval_s, nonnegative=True)
        finite_scalar("member_ios", self.member_ios, nonnegative=True)

    @property
    def rate_bytes_per_s(self) -> float:
        """Throughput of the stream [bytes/s]."""
        return self.size_bytes / self.interval_s if self.interval_s > 0 else float("inf")

    @property
    def iops(self) -> float:
        """Requests per second of the stream [1/s]."""
        return 1.0 / self.interval_s if self.interval_s > 0 else float("inf")

    def plus(self, **seconds) -> "BlockTime":
        """This cost with costs paid in series by every request added, as named parts [s] (>= 0)."""
        parts = dict(self.parts)
        extra = 0.0
        for name, value in seconds.items():
            value = finite_scalar(name, value, nonnegative=True)
            parts[name] = parts.get(name, 0.0) + value
            extra += value
        return BlockTime(self.size_bytes, self.time_s + extra, self.interval_s + extra, parts, self.member_ios)

    def scaled(self, factor: float) -> "BlockTime":
        """Every part times *factor* (a cost paid on that share of the requests)."""
        f = finite_scalar("factor", factor, nonnegative=True)
        return BlockTime(self.size_bytes, self.time_s * f, self.interval_s * f,
                         {k: v * f for k, v in self.parts.items()}, self.member_ios * f)

    def to_frame(self):
        import pandas as pd

        return pd.Series(self.parts, name="seconds").to_frame()


def serial(size_bytes: int, *times: BlockTime) -> BlockTime:
    """Costs paid one after the other for one request of *size_bytes* (parts add)."""
    parts: dict = {}
    for t in times:
        for k, v in t.parts.items():
            parts[k] = parts.get(k, 0.0) + v
    return BlockTime(size_bytes, sum(t.time_s for t in times), sum(t.interval_s for t in times), parts,
                     sum(t.member_ios for t in times))


def parallel(size_bytes: int, times, *, weights=None) -> BlockTime:
    """Pieces served at once on different members: the request ends with the slowest one.

    The parts are the slowest piece's; member I/Os add up.  *weights*
    (optional, summing to 1) average several such outcomes instead: the
    expectation over where a request may fall.
    """
    times = list(times)
    if not times:
        raise ValueError("parallel needs at least one piece")
    slowest = max(times, key=lambda t: t.time_s)
    return BlockTime(size_bytes, slowest.time_s, max(t.interval_s for t in times), dict(slowest.parts),
                     sum(t.member_ios for t in times))


def mixture(size_bytes: int, outcomes, weights) -> BlockTime:
    """The expectation over outcomes of probability *weights* (summing to 1)."""
    weights = np.asarray(weights, dtype=float)
    if len(outcomes) != weights.size or weights.size == 0 or abs(weights.sum() - 1.0) > 1e-9 or np.any(weights < 0):
        raise ValueError(f"weights must be one probability per outcome summing to 1 (got {show(weights)})")
    parts: dict = {}
    for t, w in zip(outcomes, weights):
        for k, v in t.parts.items():
            parts[k] = parts.get(k, 0.0) + float(w) * v
    return BlockTime(size_bytes, float(sum(w * t.time_s for t, w in zip(outcomes, weights))),
                     float(sum(w * t.interval_s for t, w in zip(outcomes, weights))), parts,
                     float(sum(w * t.member_ios for t, w in zip(outcomes, weights))))


class BlockEnv:
    """The disks a stack's partitions name, by name, and each volume placed on its disk once.

    ``BlockEnv({"sda": disk_a, "sdb": disk_b})``; :meth:`Stack.block_env` makes one from a stack.
    """

    def __init__(self, disks: dict):
        if not isinstance(disks, dict) or not disks:
            raise ValueError(f"disks must be a non-empty dict of name -> Disk (got {show(disks)})")
        for name, disk in disks.items():
            if not isinstance(disk, Disk):
                raise ValueError(f"disks[{name!r}] must be a Disk (got {show(disk)})")
        self._disks = dict(disks)
        self._placed: dict = {}

    @property
    def disks(self) -> dict:
        """``{name: Disk}`` (a copy)."""
        return dict(self._disks)

    def disk(self, name: str) -> Disk:
        try:
            return self._disks[name]
        except KeyError:
            raise ValueError(f"disk {name!r} is not one of the stack's disks ({', '.join(self._disks)})") from None

    def placed(self, volume, disk_name: str):
        """*volume* placed on disk *disk_name* (a VolumeOnDisk, made once per env)."""
        from .volume_on_disk import VolumeOnDisk

        key = (id(volume), disk_name)
        if key not in self._placed:
            self._placed[key] = (volume, VolumeOnDisk(self.disk(disk_name), volume))
        return self._placed[key][1]


def block_time_of(node, requests: BlockRequests, env: BlockEnv) -> BlockTime:
    """``node.block_time(requests, env)``, after checking *node* is a block node and the request fits it."""
    if not is_node(node) or not hasattr(node, "block_time"):
        raise ValueError(f"{show(node)} is not a block node (it needs size_bytes and block_time; see "
                         "diskmodel.model.block)")
    if not isinstance(requests, BlockRequests):
        raise ValueError(f"requests must be BlockRequests (got {show(requests)})")
    if not isinstance(env, BlockEnv):
        raise ValueError(f"env must be a BlockEnv (got {show(env)})")
    if requests.size_bytes > node.size_bytes:
        raise ValueError(f"size_bytes ({requests.size_bytes}) exceeds the {kind_of(node)} node's size "
                         f"({node.size_bytes} bytes)")
    return node.block_time(requests, env)


def placed_block_time(placed, requests: BlockRequests) -> BlockTime:
    """A request on a volume placed on one disk (a leaf): eqs. (3)-(8) over the volume's region.

    Random requests: the expected T_DST of a request uniformly in the
    volume (:meth:`~diskmodel.model.volume_on_disk.DiskRegion.service_time`);
    at queue depth q > 1, one of q requests the elevator sorts and the drive
    reorders (:meth:`~diskmodel.model.volume_on_disk.DiskRegion.batch_service_time`),
    whose latency is q times that (Little's law).  Sequential requests:
    no positioning, command overhead + media transfer + interface transfer;
    at queue depth q the stream keeps q of them in flight, so each one's
    command overhead overlaps the others' transfers: the interval is the
    q-th of a request's time, but never less than its slowest pipelined
    stage (media or interface transfer), which bounds the stream's rate.
    """
    region = placed.region()
    size = requests.size_bytes
    if requests.sequential:
        service = region.service_time(size, is_write=requests.is_write)
        parts = {"command_overhead_s": float(service.command_overhead_s), "transfer_s": float(service.transfer_s),
                 "interface_s": float(service.interface_s)}
        total = sum(parts.values())
        interval = max(total / requests.queue_depth, parts["transfer_s"], parts["interface_s"])
        return BlockTime(size, total, interval, parts)
    if requests.queue_depth > 1:
        service = region.batch_service_time(requests.queue_depth, size, is_write=requests.is_write)
    else:
        service = region.service_time(size, is_write=requests.is_write)
    parts = {name: float(getattr(service, name)) for name in service.TERMS}
    interval = float(service.total_s)
    latency = interval * requests.queue_depth
    return BlockTime(size, latency, interval, {k: v * requests.queue_depth for k, v in parts.items()})


__all__ = ["MIN_CHUNK_BYTES", "BlockEnv", "BlockRequests", "BlockTime", "block_time_of", "chunk_size", "mixture",
           "parallel", "placed_block_time", "serial"]
