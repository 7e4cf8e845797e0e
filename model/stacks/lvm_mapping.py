"""The empirical part of LVM's mapping cost T_LVM_MO (Djordjevic & Timcenko 2015, eqs. 11-12).

:class:`LvmMapping` holds a cost per metadata I/O (MD_mapping), per data-block
I/O (FB_mapping) and, optionally, per data request, each multiplied by a
volume's ``mapping_complexity`` (:mod:`diskmodel.model.stacks.volumes`);
:func:`lvm_mapping_overhead_s` is eq. (12).
"""
from __future__ import annotations

from dataclasses import dataclass

from .._checks import evolve as _evolve
from .._checks import finite_array, finite_scalar

__all__ = ["LvmMapping", "lvm_mapping_overhead_s"]


@dataclass(frozen=True)
class LvmMapping:
    """Empirical LVM mapping costs, eq. (12): T_LVM_MO = f(MD_mapping, FB_mapping).

    T_LVM_MO(empirical) = complexity * (md_mapping_s * metadata_ios
                                        + fb_mapping_s * data_block_ios
                                        + request_mapping_s * data_requests)

    It is host-side work of the device mapper: in the serial model it adds
    to the elapsed time, in the pipeline model
    (``FileSystem.overlapped_writeback``) to the link stage.

    Attributes
    ----------
    md_mapping_s : float
        MD_mapping: cost per metadata I/O (directory, inode, bitmap, indirect
        and journal blocks reaching the block device) per unit of
        ``mapping_complexity`` [s], >= 0.
    fb_mapping_s : float
        FB_mapping: cost per data-block I/O (file-system blocks of file data
        reaching the block device) per unit of complexity [s], >= 0.
    request_mapping_s : float
        Cost per disk request (command) of file data -- a request the device
        mapper passes on that the disk serves as one command: each random
        read or write, each sequential piece -- per unit of complexity [s],
        >= 0 (default 0: the paper's eq. 12 has MD and FB only).
    """

    md_mapping_s: float = 0.0
    fb_mapping_s: float = 0.0
    request_mapping_s: float = 0.0

    #: Bounds for fitting, per parameter [s].
    BOUNDS = {"md_mapping_s": (0.0, 1.0), "fb_mapping_s": (0.0, 1.0), "request_mapping_s": (0.0, 1.0)}

    def __post_init__(self):
        finite_scalar("md_mapping_s", self.md_mapping_s, nonnegative=True)
        finite_scalar("fb_mapping_s", self.fb_mapping_s, nonnegative=True)
        finite_scalar("request_mapping_s", self.request_mapping_s, nonnegative=True)

    def evolve(self, **changes) -> "LvmMapping":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


def lvm_mapping_overhead_s(volume, metadata_ios, data_block_ios, mapping: LvmMapping,
                           data_requests=0.0) -> dict:
    """Empirical part of T_LVM_MO [s] (eqs. 11-12); see :class:`LvmMapping`.

    Parameters
    ----------
    volume : a partition, an LVM linear or striped volume (:mod:`diskmodel.model.stacks.volumes`)
    metadata_ios, data_block_ios, data_requests : array_like
        Counts of metadata I/Os, data-block I/Os and data requests reaching
        the volume [count], >= 0.
    mapping : LvmMapping

    Notes
    -----
    Returns {"md_mapping_s", "fb_mapping_s", "request_mapping_s"}: each
    ``volume.mapping_complexity`` times its cost times its count.
    """
    if not isinstance(mapping, LvmMapping):
        raise ValueError(f"mapping must be an LvmMapping (got {type(mapping).__name__})")
    md = finite_array("metadata_ios", metadata_ios, nonnegative=True)
    fb = finite_array("data_block_ios", data_block_ios, nonnegative=True)
    rq = finite_array("data_requests", data_requests, nonnegative=True)
    complexity = volume.mapping_complexity
    return {"md_mapping_s": complexity * mapping.md_mapping_s * md,
            "fb_mapping_s": complexity * mapping.fb_mapping_s * fb,
            "request_mapping_s": complexity * mapping.request_mapping_s * rq}
