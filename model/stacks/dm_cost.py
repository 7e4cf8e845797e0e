"""Device-mapper's cost on an LVM volume by mechanism: the bios the file system sends, times dm's cost per bio.

The paper's eq. (12) (Djordjevic & Timcenko 2015) writes LVM's mapping
overhead as f(MD_mapping, FB_mapping) and leaves f to be fitted per layout.
This module builds it from the I/O path instead:

* **What reaches device-mapper.** ext3 on the paper's kernel (2.6.27)
  submits each buffer it writes as a bio of one block (``submit_bh``,
  fs/buffer.c): the file data that ``data=ordered`` flushes ahead of each
  commit (``block_write_full_page``), and the journal and metadata blocks
  JBD writes and checkpoints.  The I/O path counts them as the file
  system's ``data_block_ios`` and ``metadata_ios``
  (:mod:`diskmodel.model.filesystems.filesystem`); the elevator merges them
  into larger disk requests *below* dm, so dm sees every block.
* **Splits at segment ends.** dm clones a bio per target it spans
  (``__split_and_process_bio``, drivers/md/dm.c): a block-sized bio aligned
  to its size crosses a segment's end only if that end is not a multiple
  of the block (:func:`boundary_crossing_fraction`).  LVM's extents (and
  its stripes) are multiples of 4 KiB, so on the paper's layouts there are
  none; the term is kept so a layout with unaligned ends pays for them.
* **The cost per bio** (:class:`DeviceMapperCost`): cloning the bio,
  finding the target (``dm_table_find_target``, a B-tree over the segment
  ends: one node for one or two segments) and remapping it
  (``linear_map_sector``, drivers/md/dm-linear.c), then completing the
  clone.  It is a measured quantity (``benchmarks/dm_request_cost.py``:
  dm-linear against the raw device), not a fitted one, and it does not
  grow with the number of segments: LVM-1's and LVM-2's tables cost the
  same per bio.

So T_LVM_MO(dm) = request_cost_s * (metadata_ios + data_block_ios) * (1 +
crossing fraction); the placement of the extents on the disk (seeks
between two PVs, zone rates) stays the mechanistic part of
:class:`~diskmodel.model.stacks.volume_on_disk.VolumeOnDisk`.
:func:`as_lvm_mapping` expresses the cost as the :class:`LvmMapping`
coefficients the equation model charges (per block, per unit of the
volume's ``mapping_complexity``, which the bio cost does not have).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import FieldError, finite_scalar, whole_number
from .lvm_mapping import LvmMapping

#: ext3's block on the paper's file systems [bytes].
DEFAULT_BLOCK_BYTES = 4096


@dataclass(frozen=True)
class DeviceMapperCost:
    """Device-mapper's host CPU per bio it remaps.

    Attributes
    ----------
    request_cost_s : float
        Time per bio (clone, target lookup, remap, completion) [s], >= 0.
    block_bytes : int
        The size of the bios the file system submits [bytes], > 0 (ext3's
        block).
    """

    request_cost_s: float
    block_bytes: int = DEFAULT_BLOCK_BYTES

    def __post_init__(self):
        finite_scalar("request_cost_s", self.request_cost_s, nonnegative=True)
        object.__setattr__(self, "block_bytes", whole_number("block_bytes", self.block_bytes, minimum=1))


def segment_ends_bytes(volume) -> np.ndarray:
    """Logical byte offsets where one of *volume*'s table entries ends and the next begins (none on a partition)."""
    if not volume.is_lvm:
        return np.zeros(0, dtype=np.int64)
    stripe = getattr(volume, "stripe_size_bytes", None)
    if stripe is not None:  # dm-striped: a chunk ends every stripe_size_bytes
        return np.arange(stripe, volume.size_bytes, stripe, dtype=np.int64)
    return np.asarray(volume.segment_table()["logical_start_bytes"][1:], dtype=np.int64)


def boundary_crossing_fraction(volume, bio_bytes: int) -> float:
    """Fraction of bios of *bio_bytes*, aligned to their size and spread evenly over *volume*, that span two
    table entries (and so are split by dm into two clones): unaligned segment ends over the bio slots."""
    size = whole_number("bio_bytes", bio_bytes, minimum=1)
    ends = segment_ends_bytes(volume)
    slots = volume.size_bytes // size
    if slots == 0:
        raise FieldError("bio_bytes", f"is larger than the volume ({volume.size_bytes} bytes); got {size}")
    return float(np.count_nonzero(ends % size)) / slots


def dm_bios(volume, io_counts: dict, block_bytes: int = DEFAULT_BLOCK_BYTES) -> dict:
    """The bios device-mapper handles for a run's *io_counts* (the file system's ``metadata_ios`` and
    ``data_block_ios``) on *volume*: {"block_bios", "split_bios", "bios"} [count]; all 0 on a partition."""
    if not volume.is_lvm:
        return {"block_bios": 0.0, "split_bios": 0.0, "bios": 0.0}
    for key in ("metadata_ios", "data_block_ios"):
        finite_scalar(key, io_counts[key], nonnegative=True)
    blocks = float(io_counts["metadata_ios"]) + float(io_counts["data_block_ios"])
    split = blocks * boundary_crossing_fraction(volume, block_bytes)
    return {"block_bios": blocks, "split_bios": split, "bios": blocks + split}


def dm_overhead_s(volume, io_counts: dict, cost: DeviceMapperCost) -> float:
    """T_LVM_MO's device-mapper part [s]: the bios of :func:`dm_bios` times the cost per bio."""
    if not isinstance(cost, DeviceMapperCost):
        raise FieldError("cost", f"must be a DeviceMapperCost (got {type(cost).__name__})")
    return cost.request_cost_s * dm_bios(volume, io_counts, cost.block_bytes)["bios"]


def as_lvm_mapping(volume, cost: DeviceMapperCost) -> LvmMapping:
    """The :class:`LvmMapping` that charges :func:`dm_overhead_s` in the equation model: the same cost on every
    metadata and data block, divided by the volume's ``mapping_complexity`` (which the equation model
    multiplies by and a bio's cost does not have); none on a partition."""
    if not isinstance(cost, DeviceMapperCost):
        raise FieldError("cost", f"must be a DeviceMapperCost (got {type(cost).__name__})")
    if not volume.is_lvm:
        return LvmMapping()
    per_block = cost.request_cost_s * (1.0 + boundary_crossing_fraction(volume, cost.block_bytes))
    per_unit = per_block / volume.mapping_complexity
    return LvmMapping(md_mapping_s=per_unit, fb_mapping_s=per_unit)


__all__ = ["DEFAULT_BLOCK_BYTES", "DeviceMapperCost", "as_lvm_mapping", "boundary_crossing_fraction", "dm_bios",
           "dm_overhead_s", "segment_ends_bytes"]
