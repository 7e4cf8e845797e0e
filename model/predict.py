"""Predict PostMark throughput on a storage stack.

:func:`predict` evaluates Djordjevic & Timcenko (2015) eqs. (1)-(12) for a
PostMark run on a :class:`diskmodel.model.stack.Stack`, one layer on the
next: the stack's volume placed on its disk, with the LVM mapping costs
(:class:`diskmodel.model.volume_on_disk.VolumeOnDisk`), the file system on
that volume (T_FSA, eq. 1, :mod:`diskmodel.model.filesystem`), the
workload on the file system; then T_LVM_MO (eqs. 10-12) and read and write
throughput the way PostMark reports it (bytes read and written divided by
the whole run's elapsed time).

The fitters of its free parameters are kept apart, in
:mod:`diskmodel.model.fit.postmark`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ._checks import finite_scalar, show
from .filesystem import PageCache, file_system_access_time
from .stack import Stack
from .volumes import LvmMapping
from .workload import PostMarkConfig, PostMarkCounts, as_counts
from .units import KIB, MIB


def format_postmark_rate(bytes_per_s: float) -> str:
    """A rate as PostMark 1.5 prints it: "2.99 megabytes per second".

    PostMark's ``scalef``: megabytes (2^20 bytes) above one megabyte, else
    kilobytes (2^10), two decimals.
    """
    value = finite_scalar("bytes_per_s", bytes_per_s, nonnegative=True)
    if value / MIB > 1:
        return f"{value / MIB:.2f} megabytes per second"
    return f"{value / KIB:.2f} kilobytes per second"


@dataclass(frozen=True)
class Prediction:
    """Predicted PostMark results and their breakdown by equation term.

    Attributes
    ----------
    read_throughput_bytes_per_s, write_throughput_bytes_per_s : float
        Bytes read / written over the whole run's elapsed time, as PostMark
        reports them [bytes/s].
    elapsed_s : float
        T_LVM_AT = T_FSA + T_LVM_MO (eq. 10), or T_FSA natively [s]; with
        ``FileSystem.overlapped_writeback`` the busiest pipeline stage
        instead (``details["stages"]``).
    terms : dict
        T_DO, T_MO, T_FL, T_DFA, T_J (eq. 1), T_LVM_MO (eq. 10) [s] as busy
        times, and T_overlap (<= 0): the time hidden by the overlap of
        asynchronous write-back with the application and of the stages with
        each other (0 in the serial model).  They sum to elapsed_s.
    lvm_parts : dict
        T_LVM_MO split: mechanistic_s (the extent map's effect on seeks and
        zone rates, against a native partition at the first PV), md_mapping_s
        and fb_mapping_s (the empirical MD_mapping and FB_mapping costs) and
        request_mapping_s (the per-request cost, :class:`LvmMapping`) [s].
    dst_parts : dict
        seek_s, rotation_s, transfer_s, overhead_s (T_DST's other terms) and
        cache_s (eq. 2 hits and copies) over all terms [s].
    term_parts : dict of dict
        The same per term of eq. (1).
    io_counts, details : dict
        From :class:`diskmodel.model.filesystem.FsaResult`.
    counts : PostMarkCounts
    """

    read_throughput_bytes_per_s: float
    write_throughput_bytes_per_s: float
    elapsed_s: float
    terms: dict
    lvm_parts: dict
    dst_parts: dict
    term_parts: dict
    io_counts: dict
    details: dict
    counts: PostMarkCounts = field(repr=False)

    def postmark_units(self) -> dict:
        """Read and write throughput as PostMark prints them."""
        return {"read": format_postmark_rate(self.read_throughput_bytes_per_s),
                "write": format_postmark_rate(self.write_throughput_bytes_per_s)}

    def to_frame(self):
        """A pandas DataFrame: one row per quantity (value, unit)."""
        import pandas as pd

        rows = [("read_throughput", self.read_throughput_bytes_per_s, "bytes/s"),
                ("write_throughput", self.write_throughput_bytes_per_s, "bytes/s"),
                ("elapsed", self.elapsed_s, "s")]
        rows += [(name, value, "s") for name, value in self.terms.items()]
        rows += [(f"T_LVM_MO.{name}", value, "s") for name, value in self.lvm_parts.items()]
        rows += [(f"T_DST.{name}", value, "s") for name, value in self.dst_parts.items()]
        frame = pd.DataFrame(rows, columns=["quantity", "value", "unit"]).set_index("quantity")
        return frame

    def _repr_html_(self):
        units = self.postmark_units()
        head = (f"<p><b>PostMark prediction</b>: read {units['read']}, write {units['write']}, "
                f"elapsed {self.elapsed_s:.1f} s</p>")
        return head + self.to_frame()._repr_html_()


def predict(stack: Stack, workload=None, cache: PageCache | None = None,
            lvm_mapping: LvmMapping | None = None) -> Prediction:
    """PostMark read/write throughput on *stack* and the eq. (1)/(10) breakdown.

    Parameters
    ----------
    stack : Stack
        The disk, the volume and the file system (its model parameters,
        ``stack.file_system.parameters``: ext2 or ext3); the volume must lie
        on one disk.  :func:`diskmodel.model.stack.paper_stack` makes the
        paper's three, :func:`diskmodel.model.stack.stack_on` one from a
        Disk, a volume and a FileSystem.
    workload : PostMarkConfig or PostMarkCounts
        Default ``PostMarkConfig()`` (PostMark's defaults).
    cache : PageCache
        Default ``PageCache()``.
    lvm_mapping : LvmMapping
        Empirical MD_mapping/FB_mapping costs; default zero (mechanistic part only).
        No cost on a native partition.
    """
    if not isinstance(stack, Stack):
        raise ValueError(f"stack must be a Stack (got {show(stack)}; diskmodel.model.stack.stack_on makes one "
                         "from a disk, a volume and a FileSystem)")
    filesystem = stack.file_system_parameters()
    workload = PostMarkConfig() if workload is None else workload
    cache = PageCache() if cache is None else cache
    lvm_mapping = LvmMapping() if lvm_mapping is None else lvm_mapping
    if not isinstance(lvm_mapping, LvmMapping):
        raise ValueError(f"lvm_mapping must be an LvmMapping (got {type(lvm_mapping).__name__})")
    counts = as_counts(workload)
    volume = stack.volume_on_disk(lvm_mapping)
    result = file_system_access_time(volume, filesystem, counts, cache)
    mapping = result.mapping_parts
    md, fb, rq = mapping["md_mapping_s"], mapping["fb_mapping_s"], mapping["request_mapping_s"]
    mechanistic = 0.0
    fsa_terms = dict(result.terms)
    if volume.volume.is_lvm:
        twin = file_system_access_time(volume.native_twin(), filesystem, counts, cache)
        mechanistic = result.total_s - twin.total_s
        # T_FSA proper is the native twin's; the extent map's effect is reported in T_LVM_MO.
        fsa_terms = dict(twin.terms)
    lvm_total = mechanistic + md + fb + rq
    busy = sum(fsa_terms.values()) + lvm_total
    if filesystem.overlapped_writeback:
        # pipeline: the fixed point max(application, media, link + MD/FB mapping costs)
        elapsed = float(result.details["elapsed_s"])
    else:
        elapsed = busy
    terms = {**fsa_terms, "T_LVM_MO": lvm_total, "T_overlap": elapsed - busy}
    details = dict(result.details)
    details["stages"] = result.stage_times(md + fb + rq)
    total = counts.total
    return Prediction(
        read_throughput_bytes_per_s=total.bytes_read / elapsed,
        write_throughput_bytes_per_s=total.bytes_written / elapsed,
        elapsed_s=elapsed, terms=terms,
        lvm_parts={"mechanistic_s": mechanistic, "md_mapping_s": md, "fb_mapping_s": fb,
                   "request_mapping_s": rq},
        dst_parts=result.dst_breakdown(), term_parts=result.parts, io_counts=result.io_counts,
        details=details, counts=counts)
