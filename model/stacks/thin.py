"""A thin volume in a thin pool (device-mapper thin provisioning, ``lvcreate --thin``) as a block node.

A thin pool keeps its data on a device (the pool's data LV) in chunks of
``chunk_size_bytes`` (LVM's default 64 KiB; dm-thin accepts multiples of
64 KiB from 64 KiB to 1 GiB) and a metadata device holding the B-trees that
map each thin volume's chunks to pool chunks (Thornber, dm-thin,
Documentation/admin-guide/device-mapper/thin-provisioning.rst).  A thin
volume of ``virtual_size_bytes`` is provisioned without space: a chunk is
allocated the first time it is written.

What dm-thin does to the requests sent to it is the I/O path's
(:mod:`diskmodel.model.iopath.dm_thin`: chunks provisioned in order of
first write, a partial first write zeroing its whole chunk when
``zero_new_chunks``, the metadata commits as 4 KiB writes), and their time
the drives' (:mod:`diskmodel.model.iopath.timing`).  The pool's metadata
lies on ``data`` after the pool's data area (``pool_size_bytes`` on), so
its commits are timed on the same drive.  ``allocation_s`` and
``lookup_s`` are host time per allocation and per request, which the timed
path does not charge (its assumptions say so).
"""
from __future__ import annotations

from dataclasses import dataclass

from .._checks import evolve as _evolve
from .._checks import finite_scalar, flag, show, whole_number
from .block import chunk_size
from .nodes import is_node, node_type, text_field
from ..units import KIB, MIB

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
        if not is_node(self.data) or not hasattr(self.data, "size_bytes"):
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

__all__ = ["MAPPINGS_PER_METADATA_BLOCK", "METADATA_BLOCKS_PER_ALLOCATION", "METADATA_BLOCK_BYTES", "MIN_THIN_CHUNK_BYTES", "ThinVolume",
           "default_metadata_size_bytes"]
