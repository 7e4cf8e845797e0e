"""Volumes: partitions and LVM linear and striped logical volumes, with the
empirical LVM mapping cost of Djordjevic & Timcenko (2015), eqs. (10)-(12).

A *volume* presents a logical block device of ``size_bytes`` and maps its
byte offsets to byte offsets of the disk (vectorised, invertible):

* :class:`Partition` (start, size): the native case, offset + start.
* :class:`LinearVolume`: an LVM linear logical volume whose logical extents
  (``extent_size_bytes``, LVM2's default 4 MiB) are laid out by *segments*
  on one or more physical volumes (PVs: partitions, or any block node such as an
  md array), whose
  data area starts ``pe_start_bytes`` (LVM2's default 1 MiB, after the PV
  label and metadata) into the PV.  The mapping is a segment table looked up
  with ``np.searchsorted``.
* :class:`StripedVolume`: chunks of ``stripe_size_bytes`` dealt round-robin
  over N PVs.

They are node types of a storage stack (:mod:`diskmodel.model.stacks.stack`, kinds
"partition", "lvm_linear", "lvm_striped"); the paper's three stacks are
:func:`diskmodel.model.stacks.stack.paper_stack`.

LVM access time (eqs. 10-12)::

    T_LVM_AT = T_FSA + T_LVM_MO                                    (10)
    T_LVM_MO = f(N_D, N_FS, S_FS, L_FS) = f(MD_mapping, FB_mapping)  (11, 12)

made concrete in two parts:

(a) **mechanistic** -- the size S_FS and location L_FS of the file system on
    the disk enter through the extent map: a volume placed on its disk
    (:class:`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk`) puts the file
    system's I/O on the physical cylinders the extents occupy, so that seeks
    (e.g. between metadata or the journal and data on two PVs far apart) and
    zone transfer rates follow the layout.
    :func:`diskmodel.model.predict.predict` reports the difference against a
    native partition at the first PV's place as the mechanistic part of
    T_LVM_MO.
(b) **empirical** -- :class:`~diskmodel.model.stacks.lvm_mapping.LvmMapping`: a cost per metadata I/O
    (MD_mapping) and per data-block I/O (FB_mapping) for the device-mapper
    remapping, multiplied by the volume's ``mapping_complexity`` (the number
    of segments of the mapping table, 1 for one PV, 2 for two concatenated
    PVs, N for N stripes, times the number of distinct disks N_D);
    optionally also a cost per data request (``request_mapping_s``, default
    0).  :func:`~diskmodel.model.stacks.lvm_mapping.lvm_mapping_overhead_s` is eq. (12).  Its coefficients are
    parameters with bounds (>= 0) to fit against measurements
    (:func:`diskmodel.model.fit.postmark.fit_lvm_mapping`); a native
    partition has complexity 0 and no empirical overhead.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import evolve as _evolve
from .._checks import finite_array, show, whole_number
from .nodes import is_node, node_type, text_field, walk
from ..units import KIB, MIB


DEFAULT_EXTENT_SIZE_BYTES = 4 * MIB
DEFAULT_PE_START_BYTES = 1 * MIB


def _offsets(name: str, values, size: int | None) -> np.ndarray:
    """Integer byte offsets in [0, size) (any when *size* is None), as int64 (ValueError naming *name*)."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        array = finite_array(name, array, whole=True)
    array = array.astype(np.int64)
    if size is not None and array.size and (array.min() < 0 or array.max() >= size):
        raise ValueError(f"{name} must lie in [0, {size}) (got {array.min()} .. {array.max()})")
    return array


@node_type("partition")
@dataclass(frozen=True)
class Partition:
    """A contiguous region of a disk: the native layout, or one PV.

    Attributes
    ----------
    start_bytes : int
        First byte on the disk [bytes], >= 0.
    size_bytes : int
        Length [bytes], > 0.
    name : str
        E.g. "/dev/sda3".
    disk : str
        The name of the disk it is on (a disk of the stack, e.g. "sda"; for
        N_D, the number of distinct disks).
    """

    start_bytes: int
    size_bytes: int
    name: str = ""
    disk: str = "sda"

    def __post_init__(self):
        object.__setattr__(self, "start_bytes", whole_number("start_bytes", self.start_bytes, minimum=0))
        object.__setattr__(self, "size_bytes", whole_number("size_bytes", self.size_bytes, minimum=1))
        text_field("name", self.name)
        text_field("disk", self.disk, empty_ok=False)

    @property
    def end_bytes(self) -> int:
        return self.start_bytes + self.size_bytes

    def describe(self) -> str:
        return (f"partition {self.name or '(unnamed)'} on {self.disk}: bytes {self.start_bytes}..{self.end_bytes} "
                f"({self.size_bytes / 1e9:.3f} GB)")

    # the volume interface -------------------------------------------------
    @property
    def is_lvm(self) -> bool:
        return False

    @property
    def mapping_complexity(self) -> int:
        """Mapping-table entries a request is resolved against: none (no device mapper)."""
        return 0

    @property
    def n_physical_volumes(self) -> int:
        return 0

    @property
    def n_segments(self) -> int:
        return 1

    @property
    def n_disks(self) -> int:
        return 1

    @property
    def physical_span(self) -> tuple[int, int]:
        """(first byte, end byte) of the disk area the layout touches."""
        return self.start_bytes, self.end_bytes

    def physical_pieces(self, logical_start_bytes: int, logical_size_bytes: int) -> tuple[np.ndarray, np.ndarray]:
        """(first disk byte, length) of each disk piece a checked logical region occupies [bytes]."""
        return (np.array([self.start_bytes + logical_start_bytes], dtype=np.int64),
                np.array([logical_size_bytes], dtype=np.int64))

    def segment_table(self) -> dict[str, np.ndarray]:
        """Arrays logical_start_bytes, physical_start_bytes, length_bytes (logical order)."""
        return {"logical_start_bytes": np.array([0], dtype=np.int64),
                "physical_start_bytes": np.array([self.start_bytes], dtype=np.int64),
                "length_bytes": np.array([self.size_bytes], dtype=np.int64)}

    def logical_to_physical(self, offset_bytes) -> np.ndarray:
        """Disk byte offsets of logical byte offsets (vectorised)."""
        return _offsets("offset_bytes", offset_bytes, self.size_bytes) + self.start_bytes

    def physical_to_logical(self, physical_offset_bytes) -> np.ndarray:
        """Logical byte offsets of disk byte offsets; ValueError outside the partition."""
        physical = _offsets("physical_offset_bytes", physical_offset_bytes, self.end_bytes)
        if physical.size and physical.min() < self.start_bytes:
            raise ValueError(f"physical_offset_bytes {physical.min()} lies before the partition "
                             f"(starts at {self.start_bytes})")
        return physical - self.start_bytes

    def evolve(self, **changes) -> "Partition":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


@dataclass(frozen=True)
class Segment:
    """A run of logical extents on one physical volume (as in ``lvdisplay -m``).

    Attributes
    ----------
    logical_start_extent : int
        First logical extent of the run.
    extent_count : int
        Number of extents, >= 1.
    pv_index : int
        Index into the volume's ``physical_volumes``.
    pv_start_extent : int
        First physical extent on that PV.
    """

    logical_start_extent: int
    extent_count: int
    pv_index: int
    pv_start_extent: int

    def __post_init__(self):
        for name, minimum in (("logical_start_extent", 0), ("extent_count", 1), ("pv_index", 0),
                              ("pv_start_extent", 0)):
            object.__setattr__(self, name, whole_number(name, getattr(self, name), minimum=minimum))


def _check_pvs(physical_volumes) -> tuple:
    """The PVs as a tuple: block nodes (a partition, a RAID array, a loop file, ...), partitions of one
    disk not overlapping (ValueError naming the field otherwise)."""
    if isinstance(physical_volumes, (str, bytes)) or not isinstance(physical_volumes, (tuple, list)):
        raise ValueError(f"physical_volumes must be a list of block nodes (got {show(physical_volumes)})")
    pvs = tuple(physical_volumes)
    if not pvs:
        raise ValueError("physical_volumes must name at least one block node (got none)")
    for i, pv in enumerate(pvs):
        # a block node presents size_bytes; a file system node has a volume instead
        if not is_node(pv) or not hasattr(pv, "size_bytes"):
            raise ValueError(f"physical_volumes[{i}] must be a block node: a partition, a RAID array, a loop "
                             f"file... (got {show(pv)})")
    by_disk: dict[str, list[Partition]] = {}
    for pv in pvs:
        if isinstance(pv, Partition):
            by_disk.setdefault(pv.disk, []).append(pv)
    for disk_pvs in by_disk.values():
        ordered = sorted(disk_pvs, key=lambda p: p.start_bytes)
        for a, b in zip(ordered, ordered[1:]):
            if b.start_bytes < a.end_bytes:
                raise ValueError(f"physical_volumes overlap on disk {a.disk}: {a.name or a.start_bytes} "
                                 f"and {b.name or b.start_bytes}")
    return pvs


def _pv_start_bytes(pv) -> int:
    """Where a PV's bytes begin in the segment table's physical coordinates: a partition's first byte on
    its disk; 0 for any other block node (an md array, a loop device), whose own bytes they are."""
    return pv.start_bytes if isinstance(pv, Partition) else 0


class _MappedVolume:
    """Shared code of the LVM volumes: a segment table in bytes."""

    physical_volumes: tuple[object, ...]  # block nodes
    extent_size_bytes: int
    pe_start_bytes: int
    name: str

    def _check_pvs_and_extents(self) -> tuple:
        """Validate and store the PVs, extent size and PE start, and the name; returns the PVs."""
        pvs = _check_pvs(self.physical_volumes)
        object.__setattr__(self, "physical_volumes", pvs)
        object.__setattr__(self, "extent_size_bytes",
                           whole_number("extent_size_bytes", self.extent_size_bytes, minimum=1))
        object.__setattr__(self, "pe_start_bytes", whole_number("pe_start_bytes", self.pe_start_bytes, minimum=0))
        text_field("name", self.name)
        return pvs

    @property
    def is_lvm(self) -> bool:
        return True

    @property
    def mapping_complexity(self) -> int:
        """How many mapping-table entries a remapped request is resolved against.

        The number of segments of the LV's table (1 for LVM-1, 2 for LVM-2,
        N for N stripes) times the number of distinct disks N_D.  Never
        decreases when PVs or disks are added.
        """
        return int(self.n_segments * self.n_disks)

    @property
    def n_physical_volumes(self) -> int:
        return len(self.physical_volumes)

    @property
    def n_disks(self) -> int:
        """N_D: the distinct disks under the PVs (an md array's members' disks count each)."""
        return len({node.disk for pv in self.physical_volumes for _, node, _ in walk(pv)
                    if isinstance(node, Partition)})

    @property
    def pvs_are_partitions(self) -> bool:
        """Is every PV a partition (the segment table's physical bytes then are its disks' own)?"""
        return all(isinstance(pv, Partition) for pv in self.physical_volumes)

    def _on_one_disk(self) -> None:
        """ValueError naming ``physical_volumes`` unless every PV is a partition of one disk: a disk byte
        offset names one logical byte, and a span of the disk means something, only then (PVs on two disks,
        or md arrays, hold the same offsets; the I/O path maps through each PV instead).
        ``logical_to_physical`` needs no such check: each logical byte lies at one byte of its own PV."""
        if not self.pvs_are_partitions or len({pv.disk for pv in self.physical_volumes}) != 1:
            got = ", ".join(f"a partition of {pv.disk}" if isinstance(pv, Partition) else f"a {type(pv).__name__}"
                            for pv in self.physical_volumes)
            raise ValueError(f"physical_volumes: disk byte offsets need every PV to be a partition of one disk "
                             f"(got {got})")

    def pv_extents(self, index: int) -> int:
        """Physical extents available on PV *index* [count]."""
        pv = self.physical_volumes[index]
        return max(0, (pv.size_bytes - self.pe_start_bytes) // self.extent_size_bytes)

    @property
    def physical_span(self) -> tuple[int, int]:
        self._on_one_disk()
        table = self.segment_table()
        return (int(table["physical_start_bytes"].min()),
                int((table["physical_start_bytes"] + table["length_bytes"]).max()))

    def logical_to_physical(self, offset_bytes) -> np.ndarray:
        """Disk byte offsets of logical byte offsets (vectorised, searchsorted)."""
        table = self._table
        logical = _offsets("offset_bytes", offset_bytes, self.size_bytes)
        row = np.searchsorted(table["logical_start_bytes"], logical, side="right") - 1
        return table["physical_start_bytes"][row] + (logical - table["logical_start_bytes"][row])

    def physical_to_logical(self, physical_offset_bytes) -> np.ndarray:
        """Logical byte offsets of disk byte offsets (vectorised).

        ValueError naming ``physical_offset_bytes`` for bytes no extent maps
        (PV metadata, unused extents, other partitions).
        """
        self._on_one_disk()
        table = self._table
        physical = _offsets("physical_offset_bytes", physical_offset_bytes, None)
        order = table["physical_order"]
        starts = table["physical_start_bytes"][order]
        row_sorted = np.searchsorted(starts, physical, side="right") - 1
        inside = row_sorted >= 0
        row = order[np.clip(row_sorted, 0, None)]
        delta = physical - table["physical_start_bytes"][row]
        inside &= (delta >= 0) & (delta < table["length_bytes"][row])
        if not np.all(inside):
            bad = np.atleast_1d(physical)[~np.atleast_1d(inside)][0]
            raise ValueError(f"physical_offset_bytes {bad} is not mapped by any extent of this volume")
        return table["logical_start_bytes"][row] + delta

    def physical_pieces(self, logical_start_bytes: int, logical_size_bytes: int) -> tuple[np.ndarray, np.ndarray]:
        """(first disk byte, length) of each disk piece a checked logical region occupies [bytes]."""
        self._on_one_disk()
        table = self._table
        ls, ps, ln = table["logical_start_bytes"], table["physical_start_bytes"], table["length_bytes"]
        lo = np.maximum(ls, logical_start_bytes)
        hi = np.minimum(ls + ln, logical_start_bytes + logical_size_bytes)
        keep = hi > lo
        return (ps + (lo - ls))[keep], (hi - lo)[keep]

    def segment_table(self) -> dict[str, np.ndarray]:
        """Arrays logical_start_bytes, physical_start_bytes, length_bytes (logical order)."""
        return {key: self._table[key].copy() for key in
                ("logical_start_bytes", "physical_start_bytes", "length_bytes")}

    def to_frame(self):
        """The segment table as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame(self.segment_table())


@node_type("lvm_linear")
@dataclass(frozen=True)
class LinearVolume(_MappedVolume):
    """An LVM linear logical volume over one or more physical volumes.

    Attributes
    ----------
    physical_volumes : tuple of block nodes
        The PVs, in the order ``vgcreate`` was given them: partitions, or any block node (an md
        array, a loop file...); the segment table's physical bytes are a partition's disk's, another
        node's own.
    segments : tuple of Segment, optional
        The LE -> PE map.  Default: all extents of every PV, concatenated in
        order (what ``lvcreate -l 100%FREE`` does on a fresh VG).  The
        logical runs must tile 0 .. total-1 with neither holes nor overlaps,
        and the physical runs must fit their PVs without overlapping.
    extent_size_bytes : int
        PE/LE size [bytes], > 0 (LVM2 default 4 MiB).
    pe_start_bytes : int
        Offset of the first PE inside each PV [bytes], >= 0 (LVM2 default 1 MiB).
    name : str
        The LV's device, e.g. "/dev/vg0/lv0" (for reports; default none).
    """

    physical_volumes: tuple[object, ...]  # block nodes
    segments: tuple[Segment, ...] | None = None
    extent_size_bytes: int = DEFAULT_EXTENT_SIZE_BYTES
    pe_start_bytes: int = DEFAULT_PE_START_BYTES
    name: str = ""
    _table: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        pvs = self._check_pvs_and_extents()
        if self.segments is None:
            segments, logical = [], 0
            for index in range(len(pvs)):
                count = self.pv_extents(index)
                if count == 0:
                    raise ValueError(f"physical_volumes[{index}] is too small for one extent of "
                                     f"{self.extent_size_bytes} bytes after pe_start_bytes")
                segments.append(Segment(logical, count, index, 0))
                logical += count
            object.__setattr__(self, "segments", tuple(segments))
        segments = tuple(self.segments)
        if not segments or not all(isinstance(s, Segment) for s in segments):
            raise ValueError("segments must be a non-empty sequence of Segment")
        object.__setattr__(self, "segments", segments)
        self._validate_segments()
        ext = self.extent_size_bytes
        order = np.argsort([s.logical_start_extent for s in segments], kind="stable")
        seg = [segments[i] for i in order]
        logical_start = np.array([s.logical_start_extent * ext for s in seg], dtype=np.int64)
        physical_start = np.array([_pv_start_bytes(pvs[s.pv_index]) + self.pe_start_bytes + s.pv_start_extent * ext
                                   for s in seg], dtype=np.int64)
        length = np.array([s.extent_count * ext for s in seg], dtype=np.int64)
        object.__setattr__(self, "_table", {
            "logical_start_bytes": logical_start, "physical_start_bytes": physical_start,
            "length_bytes": length, "physical_order": np.argsort(physical_start, kind="stable")})

    def pv_segments(self) -> list[tuple[int, int, int, int]]:
        """(first logical byte, bytes, PV index, first byte inside that PV) of each segment, in logical
        order: what dm-linear's table says (one target line per segment). The PV is the segment's own
        ``pv_index``, not found from a disk offset, as PVs on two disks may start at the same one."""
        ext = self.extent_size_bytes
        return sorted((s.logical_start_extent * ext, s.extent_count * ext, s.pv_index,
                       self.pe_start_bytes + s.pv_start_extent * ext) for s in self.segments)

    def _validate_segments(self):
        segments = self.segments
        for s in segments:
            if s.pv_index >= len(self.physical_volumes):
                raise ValueError(f"segments: pv_index {s.pv_index} but there are only "
                                 f"{len(self.physical_volumes)} physical_volumes")
            if s.pv_start_extent + s.extent_count > self.pv_extents(s.pv_index):
                raise ValueError(f"segments: extents {s.pv_start_extent}..{s.pv_start_extent + s.extent_count - 1} "
                                 f"do not fit PV {s.pv_index}, which has {self.pv_extents(s.pv_index)} extents")
        ordered = sorted(segments, key=lambda s: s.logical_start_extent)
        expected = 0
        for s in ordered:
            if s.logical_start_extent > expected:
                raise ValueError(f"segments: hole in the logical extents {expected}..{s.logical_start_extent - 1}")
            if s.logical_start_extent < expected:
                raise ValueError(f"segments: logical extent {s.logical_start_extent} is mapped twice (overlap)")
            expected = s.logical_start_extent + s.extent_count
        for index in range(len(self.physical_volumes)):
            runs = sorted((s.pv_start_extent, s.pv_start_extent + s.extent_count)
                          for s in segments if s.pv_index == index)
            for (a0, a1), (b0, b1) in zip(runs, runs[1:]):
                if b0 < a1:
                    raise ValueError(f"segments: physical extents {b0}..{min(a1, b1) - 1} of PV {index} "
                                     f"are mapped twice (overlap)")

    @property
    def size_bytes(self) -> int:
        return int(sum(s.extent_count for s in self.segments) * self.extent_size_bytes)

    @property
    def n_segments(self) -> int:
        return len(self.segments)

    def describe(self) -> str:
        return (f"LVM linear volume {self.name or '(unnamed)'}: {self.size_bytes} bytes "
                f"({self.size_bytes // self.extent_size_bytes} extents of {self.extent_size_bytes} bytes) "
                f"in {self.n_segments} segment(s) over {self.n_physical_volumes} PV(s)")

    def evolve(self, **changes) -> "LinearVolume":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


@node_type("lvm_striped")
@dataclass(frozen=True)
class StripedVolume(_MappedVolume):
    """An LVM striped logical volume: chunks of ``stripe_size_bytes`` dealt
    round-robin over the PVs (``lvcreate -i N -I stripe``).

    Every PV contributes the same number of extents (the smallest PV's);
    ``stripe_size_bytes`` must divide ``extent_size_bytes``.

    Attributes
    ----------
    physical_volumes : tuple of block nodes
        The PVs the stripes are dealt over, in the order ``lvcreate`` was given them: partitions, or
        any block node (an md array, a loop file...).
    stripe_size_bytes : int
        The stripe chunk [bytes] (``lvcreate -I``; LVM2 default 64 KiB), a divisor of the extent size.
    extent_size_bytes : int
        PE/LE size [bytes], > 0 (LVM2 default 4 MiB).
    pe_start_bytes : int
        Offset of the first PE inside each PV [bytes], >= 0 (LVM2 default 1 MiB).
    name : str
        The LV's device, e.g. "/dev/vg0/lv0" (for reports; default none).
    """

    physical_volumes: tuple[object, ...]  # block nodes
    stripe_size_bytes: int = 64 * KIB
    extent_size_bytes: int = DEFAULT_EXTENT_SIZE_BYTES
    pe_start_bytes: int = DEFAULT_PE_START_BYTES
    name: str = ""
    _table: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        pvs = self._check_pvs_and_extents()
        object.__setattr__(self, "stripe_size_bytes",
                           whole_number("stripe_size_bytes", self.stripe_size_bytes, minimum=1))
        if self.extent_size_bytes % self.stripe_size_bytes:
            raise ValueError(f"stripe_size_bytes ({self.stripe_size_bytes}) must divide "
                             f"extent_size_bytes ({self.extent_size_bytes})")
        extents = min(self.pv_extents(i) for i in range(len(pvs)))
        if extents == 0:
            raise ValueError("physical_volumes: every PV needs at least one extent after pe_start_bytes")
        n = len(pvs)
        per_pv = extents * self.extent_size_bytes
        stripe = self.stripe_size_bytes
        # one table row per chunk would be huge; keep the per-PV data starts and compute.
        data_start = np.array([_pv_start_bytes(pv) + self.pe_start_bytes for pv in pvs], dtype=np.int64)
        object.__setattr__(self, "_table", {
            "data_start": data_start, "per_pv_bytes": per_pv, "n": n, "stripe": stripe,
            "logical_start_bytes": np.arange(n, dtype=np.int64) * stripe,
            "physical_start_bytes": data_start, "length_bytes": np.full(n, per_pv, dtype=np.int64)})

    @property
    def size_bytes(self) -> int:
        return int(self._table["per_pv_bytes"] * self._table["n"])

    @property
    def n_segments(self) -> int:
        return len(self.physical_volumes)

    def describe(self) -> str:
        return (f"LVM striped volume {self.name or '(unnamed)'}: {self.size_bytes} bytes in "
                f"{self.stripe_size_bytes}-byte stripes over {self.n_physical_volumes} PV(s) "
                f"({self.extent_size_bytes}-byte extents)")

    def segment_table(self) -> dict[str, np.ndarray]:
        """Per PV: the first logical byte it holds, its first data byte, bytes held."""
        t = self._table
        return {"logical_start_bytes": t["logical_start_bytes"].copy(),
                "physical_start_bytes": t["physical_start_bytes"].copy(),
                "length_bytes": t["length_bytes"].copy()}

    @property
    def physical_span(self) -> tuple[int, int]:
        self._on_one_disk()
        t = self._table
        return int(t["data_start"].min()), int((t["data_start"] + t["per_pv_bytes"]).max())

    def physical_pieces(self, logical_start_bytes: int, logical_size_bytes: int) -> tuple[np.ndarray, np.ndarray]:
        """(first disk byte, length) per PV of a checked logical region [bytes]: any region longer
        than a stripe row spreads evenly over the PVs, so it is taken as the whole rows it touches."""
        self._on_one_disk()
        n, stripe = self.n_physical_volumes, self.stripe_size_bytes
        row_start = logical_start_bytes // (stripe * n)
        row_end = -(-(logical_start_bytes + logical_size_bytes) // (stripe * n))
        return (self._table["physical_start_bytes"] + row_start * stripe,
                np.full(n, (row_end - row_start) * stripe, dtype=np.int64))

    def logical_to_physical(self, offset_bytes) -> np.ndarray:
        t = self._table
        logical = _offsets("offset_bytes", offset_bytes, self.size_bytes)
        chunk, within = np.divmod(logical, t["stripe"])
        row, pv = np.divmod(chunk, t["n"])
        return t["data_start"][pv] + row * t["stripe"] + within

    def physical_to_logical(self, physical_offset_bytes) -> np.ndarray:
        self._on_one_disk()
        t = self._table
        physical = _offsets("physical_offset_bytes", physical_offset_bytes, None)
        order = np.argsort(t["data_start"])
        starts = t["data_start"][order]
        pos = np.searchsorted(starts, physical, side="right") - 1
        pv = order[np.clip(pos, 0, None)]
        delta = physical - t["data_start"][pv]
        inside = (pos >= 0) & (delta >= 0) & (delta < t["per_pv_bytes"])
        if not np.all(inside):
            bad = np.atleast_1d(physical)[~np.atleast_1d(inside)][0]
            raise ValueError(f"physical_offset_bytes {bad} is not mapped by any extent of this volume")
        row, within = np.divmod(delta, t["stripe"])
        return (row * t["n"] + pv) * t["stripe"] + within

    def evolve(self, **changes) -> "StripedVolume":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


Volume = Partition | LinearVolume | StripedVolume
