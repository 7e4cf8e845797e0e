"""A thin volume in a thin pool (device-mapper thin provisioning, ``lvcreate --thin``) as a block node.

A thin pool keeps its data on a device (the pool's data LV) in chunks of
``chunk_size_bytes`` (LVM's default 64 KiB; dm-thin accepts multiples of
64 KiB from 64 KiB to 1 GiB) and a metadata device holding the B-trees that
map each thin volume's chunks to pool chunks (Thornber, dm-thin,
Documentation/admin-guide/device-mapper/thin-provisioning.rst).  A thin
volume of ``virtual_size_bytes`` is provisioned without space: a chunk is
allocated the first time it is written.  Its costs (:meth:`ThinVolume.block_time`):

* **overwrite** (the chunk is mapped) and a read of a mapped chunk: the
  request goes to the data device at the chunk's place, plus the mapping
  lookup in memory (``lookup_s``);
* **first write** (``BlockRequests.fresh``): per chunk newly allocated,
  ``allocation_s`` of host work (the bio deferred to the pool's worker,
  the space-map and B-tree insert), the zeroing of the whole chunk when
  ``zero_new_chunks`` and the request does not cover it (dm-thin writes
  zeros over the chunk before the partial write: ``lvcreate -Z y``, LVM's
  default), and the metadata written back at the next commit: random
  writes of the B-tree leaf and the space-map block an allocation dirties
  (:data:`METADATA_BLOCKS_PER_ALLOCATION`), once per request for random
  first writes (each lands in another leaf; the chunks of one request
  share theirs, up to :data:`MAPPINGS_PER_METADATA_BLOCK` of them), and
  shared by the :data:`MAPPINGS_PER_METADATA_BLOCK` consecutive chunks of
  a leaf for a sequential stream;
* a read of a never-written chunk returns zeros without I/O (lookup only).

A sequential stream of first writes allocates chunks in the order
written, so it stays sequential on the data device; the mapping of
random first writes is in the order written too, which a later sequential
read sees as random at chunk granularity (not modelled: this node does not
know the history of a device, only fresh or not).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ._checks import evolve as _evolve
from ._checks import finite_scalar, flag, show, whole_number
from .block import BlockRequests, BlockTime, block_time_of, chunk_size
from .nodes import is_node, node_type, text_field
from .units import KIB, MIB

#: dm-thin's smallest (and LVM's default) pool chunk [bytes].
MIN_THIN_CHUNK_BYTES = 64 * KIB
#: dm-thin's metadata block [bytes] (dm-persistent-data, MD_BLOCK_SIZE).
METADATA_BLOCK_BYTES = 4 * KIB
#: Mappings in one B-tree leaf of 4 KiB: (4096 - 32-byte node header) / (8-byte key + 8-byte value).
MAPPINGS_PER_METADATA_BLOCK = (METADATA_BLOCK_BYTES - 32) // 16
#: Metadata blocks an allocation dirties: a B-tree leaf and a space-map block.
METADATA_BLOCKS_PER_ALLOCATION = 2


def default_metadata_size_bytes(pool_size_bytes: int, chunk_size_bytes: int) -> int:
    """LVM's default metadata size: 64 bytes per chunk of the pool, at least 2 MiB [bytes]
    (thin_pool_metadata_require_separate_pvs aside, lvm2's thin_pool_metadata estimate)."""
    return max(2 * MIB, -(-64 * (pool_size_bytes // chunk_size_bytes) // MIB) * MIB)


@node_type("thin")
@dataclass(frozen=True)
class ThinVolume:
    """A thin volume and the thin pool it is allocated from.

    Attributes
    ----------
    data : block node
        The device the pool's data and metadata lie on (its VG's PVs: a
        partition, a RAID array, ...).
    pool_size_bytes : int
        The pool's data size [bytes]; with the metadata it must fit *data*.
    virtual_size_bytes : int
        The thin volume's provisioned size [bytes] (may exceed the pool).
    used_bytes : int
        Bytes of the volume already allocated [bytes], <= the pool and the
        volume.
    chunk_size_bytes : int
        The pool's chunk [bytes]: a power of two >= 64 KiB (dm-thin's minimum).
    metadata_size_bytes : int or None
        The metadata LV [bytes]; default LVM's estimate
        (:func:`default_metadata_size_bytes`). The pool may not be smaller.
    zero_new_chunks : bool
        Zero a chunk before a partial first write (``-Z y``, LVM's default).
    allocation_s : float
        Host time per chunk allocated [s], >= 0 (default 0: fit it).
    lookup_s : float
        Host time per request for the mapping lookup [s], >= 0 (default 0).
    name : str
        The thin volume's device, e.g. "/dev/vg0/thin0" (for reports; default none).
    """

    data: object
    pool_size_bytes: int
    virtual_size_bytes: int
    used_bytes: int = 0
    chunk_size_bytes: int = MIN_THIN_CHUNK_BYTES
    metadata_size_bytes: int | None = None
    zero_new_chunks: bool = True
    allocation_s: float = 0.0
    lookup_s: float = 0.0
    name: str = ""

    def __post_init__(self):
        if not is_node(self.data) or not hasattr(self.data, "block_time"):
            raise ValueError(f"data must be a block node (got {show(self.data)})")
        chunk = chunk_size("chunk_size_bytes", self.chunk_size_bytes)
        if chunk < MIN_THIN_CHUNK_BYTES:
            raise ValueError(f"chunk_size_bytes must be >= {MIN_THIN_CHUNK_BYTES} (dm-thin's smallest chunk; "
                             f"got {chunk})")
        object.__setattr__(self, "chunk_size_bytes", chunk)
        pool = whole_number("pool_size_bytes", self.pool_size_bytes, minimum=1)
        metadata = default_metadata_size_bytes(pool, chunk) if self.metadata_size_bytes is None else \
            whole_number("metadata_size_bytes", self.metadata_size_bytes, minimum=1)
        object.__setattr__(self, "metadata_size_bytes", metadata)
        if pool < metadata:
            raise ValueError(f"pool_size_bytes ({pool}) is smaller than its metadata (metadata_size_bytes "
                             f"{metadata})")
        if pool < chunk:
            raise ValueError(f"pool_size_bytes ({pool}) holds no chunk of {chunk} bytes")
        if pool + metadata > self.data.size_bytes:
            raise ValueError(f"pool_size_bytes + metadata_size_bytes ({pool + metadata}) does not fit data "
                             f"({self.data.size_bytes} bytes)")
        virtual = whole_number("virtual_size_bytes", self.virtual_size_bytes, minimum=chunk)
        used = whole_number("used_bytes", self.used_bytes, minimum=0, maximum=min(pool, virtual),
                            maximum_is="the pool and the volume")
        object.__setattr__(self, "pool_size_bytes", pool)
        object.__setattr__(self, "virtual_size_bytes", virtual)
        object.__setattr__(self, "used_bytes", used)
        flag("zero_new_chunks", self.zero_new_chunks)
        finite_scalar("allocation_s", self.allocation_s, nonnegative=True)
        finite_scalar("lookup_s", self.lookup_s, nonnegative=True)
        text_field("name", self.name)

    def evolve(self, **changes) -> "ThinVolume":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    @property
    def size_bytes(self) -> int:
        return self.virtual_size_bytes

    @property
    def free_bytes(self) -> int:
        """Pool bytes not yet allocated [bytes]."""
        return self.pool_size_bytes - self.used_bytes

    def describe(self) -> str:
        return (f"thin volume {self.name or '(unnamed)'}: {self.virtual_size_bytes} bytes provisioned, "
                f"{self.used_bytes} used, in a pool of {self.pool_size_bytes} bytes ({self.chunk_size_bytes}-byte "
                f"chunks, {self.metadata_size_bytes} bytes of metadata)")

    def chunks_allocated_per_request(self, requests: BlockRequests) -> float:
        """Chunks a fresh write allocates per request, on average [count].

        Sequential: size / chunk (a chunk is allocated by the request that
        reaches it first); random, aligned to its size: the chunks the request touches.
        """
        size, chunk = requests.size_bytes, self.chunk_size_bytes
        if requests.sequential:
            return size / chunk
        return float(-(-size // chunk)) if size >= chunk else 1.0

    def block_time(self, requests: BlockRequests, env) -> BlockTime:
        size = requests.size_bytes
        if requests.fresh and not requests.is_write:  # unmapped: zeros, no I/O
            return BlockTime(size, self.lookup_s, self.lookup_s, {"thin_lookup_s": self.lookup_s}, 0.0)
        # a first write lands on a newly allocated pool chunk: fresh to the data device as well
        below = block_time_of(self.data, requests, env).plus(thin_lookup_s=self.lookup_s)
        if not (requests.fresh and requests.is_write):
            return below
        chunks = self.chunks_allocated_per_request(requests)
        parts = {"thin_allocation_s": chunks * self.allocation_s}
        partial = size % self.chunk_size_bytes != 0
        if self.zero_new_chunks and partial:
            zero = block_time_of(self.data, BlockRequests(self.chunk_size_bytes, is_write=True,
                                                          sequential=requests.sequential), env)
            parts["thin_zeroing_s"] = chunks * zero.time_s
        # the chunks of one request are consecutive: they share B-tree leaves and space-map blocks
        leaves = chunks / MAPPINGS_PER_METADATA_BLOCK
        blocks = METADATA_BLOCKS_PER_ALLOCATION * (leaves if requests.sequential else math.ceil(leaves))
        metadata = block_time_of(self.data, BlockRequests(METADATA_BLOCK_BYTES, is_write=True), env)
        parts["thin_metadata_s"] = blocks * metadata.time_s
        return below.plus(**parts)


__all__ = ["MAPPINGS_PER_METADATA_BLOCK", "METADATA_BLOCKS_PER_ALLOCATION", "METADATA_BLOCK_BYTES", "MIN_THIN_CHUNK_BYTES", "ThinVolume",
           "default_metadata_size_bytes"]
