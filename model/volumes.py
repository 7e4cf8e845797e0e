"""Volume layouts on a disk: partitions, LVM linear and striped volumes, and
the LVM mapping overhead of Djordjevic & Timcenko (2015), eqs. (10)-(12).

A *layout* presents a logical block device of ``size_bytes`` and maps its
byte offsets to byte offsets of the disk (vectorised, invertible):

* :class:`Partition` (start, size): the native case, offset + start.
* :class:`LinearVolume`: an LVM linear logical volume whose logical extents
  (``extent_size_bytes``, LVM2's default 4 MiB) are laid out by *segments*
  on one or more physical volumes (PVs, each a :class:`Partition`), whose
  data area starts ``pe_start_bytes`` (LVM2's default 1 MiB, after the PV
  label and metadata) into the PV.  The mapping is a segment table looked up
  with ``np.searchsorted``.
* :class:`StripedVolume`: chunks of ``stripe_size_bytes`` dealt round-robin
  over N PVs.

The paper's three layouts (Tables 1-3) are :func:`paper_layout`.

LVM access time (eqs. 10-12)::

    T_LVM_AT = T_FSA + T_LVM_MO                                    (10)
    T_LVM_MO = f(N_D, N_FS, S_FS, L_FS) = f(MD_mapping, FB_mapping)  (11, 12)

made concrete in two parts:

(a) **mechanistic** -- the size S_FS and location L_FS of the file system on
    the disk enter through the extent map: :func:`region_access_time_s` and
    :func:`cross_seek_time_s` place the file system's I/O on the physical
    cylinders the extents occupy, so that seeks (e.g. between metadata or the
    journal and data on two PVs far apart) and zone transfer rates follow the
    layout.  :mod:`diskmodel.model.filesystem` evaluates T_FSA through these;
    :func:`diskmodel.model.predict.predict` reports the difference against a
    native partition at the first PV's place as the mechanistic part of
    T_LVM_MO.
(b) **empirical** -- :class:`LvmMapping`: a cost per metadata I/O
    (MD_mapping) and per data-block I/O (FB_mapping) for the device-mapper
    remapping, multiplied by the layout's mapping complexity
    (:func:`mapping_complexity`: the number of segments of the mapping table,
    1 for one PV, 2 for two concatenated PVs, N for N stripes, times the
    number of distinct disks N_D); optionally also a cost per data request
    (``request_mapping_s``, default 0).  Its coefficients are parameters with
    bounds (>= 0) to fit against measurements
    (:func:`diskmodel.model.fit.postmark.fit_lvm_mapping`); a native partition has
    complexity 0 and no empirical overhead.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._checks import evolve as _evolve
from ._checks import finite_array, finite_scalar, flag, show, whole_number

KIB = 1024
MIB = 1024 * KIB
GB = 10**9

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
        Which disk it is on (for N_D, the number of distinct disks).
    """

    start_bytes: int
    size_bytes: int
    name: str = ""
    disk: str = "sda"

    def __post_init__(self):
        object.__setattr__(self, "start_bytes", whole_number("start_bytes", self.start_bytes, minimum=0))
        object.__setattr__(self, "size_bytes", whole_number("size_bytes", self.size_bytes, minimum=1))

    @property
    def end_bytes(self) -> int:
        return self.start_bytes + self.size_bytes

    # the layout interface -------------------------------------------------
    @property
    def is_lvm(self) -> bool:
        return False

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


def _check_pvs(physical_volumes) -> tuple[Partition, ...]:
    pvs = tuple(physical_volumes)
    if not pvs or not all(isinstance(pv, Partition) for pv in pvs):
        raise ValueError("physical_volumes must be a non-empty sequence of Partition")
    by_disk: dict[str, list[Partition]] = {}
    for pv in pvs:
        by_disk.setdefault(pv.disk, []).append(pv)
    for disk_pvs in by_disk.values():
        ordered = sorted(disk_pvs, key=lambda p: p.start_bytes)
        for a, b in zip(ordered, ordered[1:]):
            if b.start_bytes < a.end_bytes:
                raise ValueError(f"physical_volumes overlap on disk {a.disk}: {a.name or a.start_bytes} "
                                 f"and {b.name or b.start_bytes}")
    return pvs


class _MappedVolume:
    """Shared code of the LVM volumes: a segment table in bytes."""

    physical_volumes: tuple[Partition, ...]
    extent_size_bytes: int
    pe_start_bytes: int

    @property
    def is_lvm(self) -> bool:
        return True

    @property
    def n_physical_volumes(self) -> int:
        return len(self.physical_volumes)

    @property
    def n_disks(self) -> int:
        return len({pv.disk for pv in self.physical_volumes})

    def pv_extents(self, index: int) -> int:
        """Physical extents available on PV *index* [count]."""
        pv = self.physical_volumes[index]
        return max(0, (pv.size_bytes - self.pe_start_bytes) // self.extent_size_bytes)

    @property
    def physical_span(self) -> tuple[int, int]:
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

    def segment_table(self) -> dict[str, np.ndarray]:
        """Arrays logical_start_bytes, physical_start_bytes, length_bytes (logical order)."""
        return {key: self._table[key].copy() for key in
                ("logical_start_bytes", "physical_start_bytes", "length_bytes")}

    def to_frame(self):
        """The segment table as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame(self.segment_table())


@dataclass(frozen=True, eq=False)
class LinearVolume(_MappedVolume):
    """An LVM linear logical volume over one or more physical volumes.

    Attributes
    ----------
    physical_volumes : tuple of Partition
        The PVs, in the order ``vgcreate`` was given them.
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
    """

    physical_volumes: tuple[Partition, ...]
    segments: tuple[Segment, ...] | None = None
    extent_size_bytes: int = DEFAULT_EXTENT_SIZE_BYTES
    pe_start_bytes: int = DEFAULT_PE_START_BYTES
    name: str = ""
    _table: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        pvs = _check_pvs(self.physical_volumes)
        object.__setattr__(self, "physical_volumes", pvs)
        object.__setattr__(self, "extent_size_bytes",
                           whole_number("extent_size_bytes", self.extent_size_bytes, minimum=1))
        object.__setattr__(self, "pe_start_bytes", whole_number("pe_start_bytes", self.pe_start_bytes, minimum=0))
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
        physical_start = np.array([pvs[s.pv_index].start_bytes + self.pe_start_bytes + s.pv_start_extent * ext
                                   for s in seg], dtype=np.int64)
        length = np.array([s.extent_count * ext for s in seg], dtype=np.int64)
        object.__setattr__(self, "_table", {
            "logical_start_bytes": logical_start, "physical_start_bytes": physical_start,
            "length_bytes": length, "physical_order": np.argsort(physical_start, kind="stable")})

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

    def evolve(self, **changes) -> "LinearVolume":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


@dataclass(frozen=True, eq=False)
class StripedVolume(_MappedVolume):
    """An LVM striped logical volume: chunks of ``stripe_size_bytes`` dealt
    round-robin over the PVs (``lvcreate -i N -I stripe``).

    Every PV contributes the same number of extents (the smallest PV's);
    ``stripe_size_bytes`` must divide ``extent_size_bytes``.
    """

    physical_volumes: tuple[Partition, ...]
    stripe_size_bytes: int = 64 * KIB
    extent_size_bytes: int = DEFAULT_EXTENT_SIZE_BYTES
    pe_start_bytes: int = DEFAULT_PE_START_BYTES
    name: str = ""
    _table: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        pvs = _check_pvs(self.physical_volumes)
        object.__setattr__(self, "physical_volumes", pvs)
        for name, minimum in (("stripe_size_bytes", 1), ("extent_size_bytes", 1), ("pe_start_bytes", 0)):
            object.__setattr__(self, name, whole_number(name, getattr(self, name), minimum=minimum))
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
        data_start = np.array([pv.start_bytes + self.pe_start_bytes for pv in pvs], dtype=np.int64)
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

    def segment_table(self) -> dict[str, np.ndarray]:
        """Per PV: the first logical byte it holds, its first data byte, bytes held."""
        t = self._table
        return {"logical_start_bytes": t["logical_start_bytes"].copy(),
                "physical_start_bytes": t["physical_start_bytes"].copy(),
                "length_bytes": t["length_bytes"].copy()}

    @property
    def physical_span(self) -> tuple[int, int]:
        t = self._table
        return int(t["data_start"].min()), int((t["data_start"] + t["per_pv_bytes"]).max())

    def logical_to_physical(self, offset_bytes) -> np.ndarray:
        t = self._table
        logical = _offsets("offset_bytes", offset_bytes, self.size_bytes)
        chunk, within = np.divmod(logical, t["stripe"])
        row, pv = np.divmod(chunk, t["n"])
        return t["data_start"][pv] + row * t["stripe"] + within

    def physical_to_logical(self, physical_offset_bytes) -> np.ndarray:
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


Layout = Partition | LinearVolume | StripedVolume


# --------------------------------------------------------------------------
# The paper's layouts (Tables 1-3)

def paper_layout(name: str, capacity_bytes: int, *, pv_gap_bytes: int = 0,
                 extent_size_bytes: int = DEFAULT_EXTENT_SIZE_BYTES,
                 pe_start_bytes: int = DEFAULT_PE_START_BYTES) -> Layout:
    """The paper's test volumes on a disk of *capacity_bytes* (Tables 1-3).

    ``"native"`` (Table 1): ``/dev/sda3``, 20 GB (10^9 bytes, as disk makers
    count) at the end of the disk ("the last part of disk (20GB)", section
    4.1), after the 58 GB root and 1 GB swap.
    ``"lvm1"`` (Table 2): the same ``/dev/sda3`` as the one PV of a linear LV
    using all its extents.
    ``"lvm2"`` (Table 3): ``/dev/sda3`` and ``/dev/sda4``, 10 GB each,
    concatenated.  The paper does not say where ``/dev/sda4`` lies; by
    default it follows ``/dev/sda3`` directly (both in the last 20 GB);
    *pv_gap_bytes* moves ``/dev/sda3`` that much towards the start of the disk
    (a what-if: PVs far apart lengthen seeks between the two halves).
    """
    capacity = whole_number("capacity_bytes", capacity_bytes, minimum=1)
    gap = whole_number("pv_gap_bytes", pv_gap_bytes, minimum=0)
    if capacity < 20 * GB + gap:
        raise ValueError(f"capacity_bytes ({capacity}) must hold the 20 GB test area plus pv_gap_bytes")
    start = capacity - 20 * GB
    if name == "native":
        return Partition(start, 20 * GB, "/dev/sda3")
    if name == "lvm1":
        return LinearVolume((Partition(start, 20 * GB, "/dev/sda3"),), extent_size_bytes=extent_size_bytes,
                            pe_start_bytes=pe_start_bytes, name="VolGroup00-LogVol02")
    if name == "lvm2":
        sda3 = Partition(start - gap, 10 * GB, "/dev/sda3")
        sda4 = Partition(start + 10 * GB, 10 * GB, "/dev/sda4")
        return LinearVolume((sda3, sda4), extent_size_bytes=extent_size_bytes, pe_start_bytes=pe_start_bytes,
                            name="VolGroup00-LogVol02")
    raise ValueError(f"name must be 'native', 'lvm1' or 'lvm2' (got {name!r})")


# --------------------------------------------------------------------------
# Access times through the extent map (the mechanistic part)

def _region(layout, logical_start_bytes, logical_size_bytes) -> tuple[int, int]:
    """(start, length) of a logical region of *layout* [bytes], checked (ValueError naming the parameter)."""
    size = layout.size_bytes
    start = whole_number("logical_start_bytes", logical_start_bytes, minimum=0, maximum=size - 1,
                         maximum_is="the volume's last byte")
    length = size - start if logical_size_bytes is None else whole_number(
        "logical_size_bytes", logical_size_bytes, minimum=1)
    if start + length > size:
        raise ValueError(f"logical_start_bytes + logical_size_bytes ({start + length}) exceeds the "
                         f"volume size ({size})")
    return start, length


def _occupancy(disk, layout, logical_start_bytes, logical_size_bytes):
    """Byte weights per cylinder of a logical region, and per zone.

    Returns (first_cylinder, weights over cylinders first..last summing to 1,
    zone weights summing to 1).
    """
    start, length = _region(layout, logical_start_bytes, logical_size_bytes)
    table = layout.segment_table()
    if isinstance(layout, StripedVolume):
        # Any region longer than a stripe row spreads evenly over the PVs.
        n = layout.n_physical_volumes
        row_start, row_end = start // (layout.stripe_size_bytes * n), -(-(start + length) // (layout.stripe_size_bytes * n))
        pieces_start = table["physical_start_bytes"] + row_start * layout.stripe_size_bytes
        pieces_len = np.full(n, (row_end - row_start) * layout.stripe_size_bytes, dtype=np.int64)
    else:
        ls, ps, ln = table["logical_start_bytes"], table["physical_start_bytes"], table["length_bytes"]
        lo = np.maximum(ls, start)
        hi = np.minimum(ls + ln, start + length)
        keep = hi > lo
        pieces_start = (ps + (lo - ls))[keep]
        pieces_len = (hi - lo)[keep]
    geometry = disk.geometry
    capacity = geometry.capacity_bytes
    if int((pieces_start + pieces_len).max()) > capacity:
        raise ValueError(f"layout extends past the disk's capacity ({capacity} bytes)")
    first = geometry.cylinder_of_byte(pieces_start)
    last = geometry.cylinder_of_byte(pieces_start + pieces_len - 1)
    c0, c1 = int(first.min()), int(last.max())
    weights = np.zeros(c1 - c0 + 1)
    # spread each piece's bytes evenly over its cylinders (cylinders of one zone hold equal bytes)
    for f, l, n_bytes in zip(first, last, pieces_len):  # one iteration per segment, not per request
        weights[f - c0:l - c0 + 1] += n_bytes / (l - f + 1)
    weights /= weights.sum()
    bounds = geometry.zone_bounds_bytes()
    zone_w = np.zeros(len(bounds))
    for s, n_bytes in zip(pieces_start, pieces_len):
        zone_w += np.clip(np.minimum(bounds[:, 1], s + n_bytes) - np.maximum(bounds[:, 0], s), 0, None)
    zone_w /= zone_w.sum()
    return c0, weights, zone_w


def _distance_pmf(weights_a, c0_a, weights_b=None, c0_b=None):
    """PMF of |X - Y| for X ~ weights_a, Y ~ weights_b (default: an independent copy of X)."""
    from scipy.signal import fftconvolve

    if weights_b is None:
        weights_b, c0_b = weights_a, c0_a
    corr = np.clip(fftconvolve(weights_a, weights_b[::-1]), 0.0, None)
    # corr[k] is P(X - Y = k - (len_b - 1) + (c0_a - c0_b))
    diff = np.arange(corr.size) - (weights_b.size - 1) + (c0_a - c0_b)
    distance = np.abs(diff)
    pmf = np.bincount(distance, weights=corr)
    pmf /= pmf.sum()
    return np.arange(pmf.size, dtype=float), pmf


def region_access_time_s(disk, layout, size_bytes, *, logical_start_bytes=0, logical_size_bytes=None,
                         distance_scale=1.0, is_write=False):
    """Expected T_DST (eqs. 3-8) of requests uniformly at random in a logical region.

    Like :func:`diskmodel.model.disk.expected_random_service_time_s`, but
    the region is logical: its bytes are placed on the disk through the
    layout's extent map, so a region spread over two PVs far apart has the
    seek-distance distribution of its two physical pieces, and the transfer
    rate is averaged over the zones the pieces occupy.

    Parameters
    ----------
    disk : Disk
    layout : Partition, LinearVolume or StripedVolume
    size_bytes : array_like
        Request sizes [bytes]: whole numbers in [1, the region's size], at least one.
    logical_start_bytes, logical_size_bytes : int
        The logical region [bytes]; default the whole volume.
    distance_scale : float
        Multiplies seek distances, in (0, 1]: 1 for independent random
        requests; ~3/(k+1) for a batch of k requests sorted by the elevator
        (consecutive sorted points are span/(k+1) apart, random pairs span/3).
    is_write : bool
        Adds the disk's write settle time after a non-zero seek.

    Returns a :class:`diskmodel.model.disk.ServiceTime` (arrays of size's shape).
    """
    scale = finite_scalar("distance_scale", distance_scale, positive=True, maximum=1.0)
    is_write = flag("is_write", is_write)
    start, length = _region(layout, logical_start_bytes, logical_size_bytes)
    size = finite_array("size_bytes", size_bytes, positive=True, whole=True, nonempty=True, maximum=length,
                        maximum_is="the logical region's size")
    return _region_service(disk, layout, size, start, length, scale, is_write)


def _region_service(disk, layout, size, logical_start_bytes, logical_size_bytes, scale, is_write):
    """:func:`region_access_time_s` on checked arguments; *size* may hold mean sizes (file-system model)."""
    from .disk import ServiceTime

    c0, weights, zone_w = _occupancy(disk, layout, logical_start_bytes, logical_size_bytes)
    distance, pmf = _distance_pmf(weights, c0)
    seek_times = disk.seek_time_s(distance * scale)
    seek = float(pmf @ seek_times)
    p_moved = 1.0 - pmf[0]
    settle = p_moved * (disk.settle_s + (disk.write_settle_s if is_write else 0.0))
    inverse_rate = float(zone_w @ (1.0 / disk.zone_rates_bytes_per_s()))
    shape = np.shape(size)
    return ServiceTime(np.full(shape, disk.command_overhead_s), np.full(shape, seek), np.full(shape, settle),
                       np.full(shape, disk.mean_rotational_latency_s), size * inverse_rate,
                       size / disk.interface_rate_bytes_per_s)


def cross_seek_time_s(disk, layout, region_a, region_b) -> float:
    """Expected seek [s] from a uniform point of logical region *a* to one of *b*.

    Regions are (logical_start_bytes, logical_size_bytes).  Used for the
    trips between the file system's working area and its journal.
    """
    for name, region in (("region_a", region_a), ("region_b", region_b)):
        if not isinstance(region, (tuple, list)) or len(region) != 2:
            raise ValueError(f"{name} must be (logical_start_bytes, logical_size_bytes) (got {show(region)})")
    c0a, wa, _ = _occupancy(disk, layout, *region_a)
    c0b, wb, _ = _occupancy(disk, layout, *region_b)
    distance, pmf = _distance_pmf(wa, c0a, wb, c0b)
    return float(pmf @ disk.seek_time_s(distance))


def mean_media_rate_bytes_per_s(disk, layout, logical_start_bytes=0, logical_size_bytes=None) -> float:
    """Harmonic-mean media rate over a logical region's physical bytes [bytes/s]."""
    _, _, zone_w = _occupancy(disk, layout, logical_start_bytes, logical_size_bytes)
    return 1.0 / float(zone_w @ (1.0 / disk.zone_rates_bytes_per_s()))


# --------------------------------------------------------------------------
# The empirical part of T_LVM_MO

def mapping_complexity(layout) -> int:
    """How many mapping-table entries a remapped request is resolved against.

    0 for a native partition (no device mapper); otherwise the number of
    segments of the LV's table (1 for LVM-1, 2 for LVM-2, N for N stripes)
    times the number of distinct disks N_D.  Never decreases when PVs or
    disks are added.
    """
    if not getattr(layout, "is_lvm", False):
        return 0
    return int(layout.n_segments * layout.n_disks)


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
        :func:`mapping_complexity` [s], >= 0.
    fb_mapping_s : float
        FB_mapping: cost per data-block I/O (file-system blocks of file data
        reaching the block device) per unit of complexity [s], >= 0.
    request_mapping_s : float
        Cost per disk request (command) of file data -- a request the device
        mapper passes on that the disk serves as one command: each random
        read or write, each sequential piece -- per unit of complexity [s],
        >= 0 (default 0: the paper's eq. 12 has MD and FB only; see
        :func:`diskmodel.model.predict.predict`, which adds
        ``complexity * request_mapping_s * data_requests``).
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


def lvm_mapping_overhead_s(layout, metadata_ios, data_block_ios, mapping: LvmMapping):
    """Empirical part of T_LVM_MO [s] (eqs. 11-12); see :class:`LvmMapping`.

    Parameters
    ----------
    layout : Partition, LinearVolume or StripedVolume
    metadata_ios, data_block_ios : array_like
        Counts of metadata I/Os and data-block I/Os reaching the volume [count], >= 0.
    mapping : LvmMapping

    Returns (md_part_s, fb_part_s).
    """
    if not isinstance(mapping, LvmMapping):
        raise ValueError(f"mapping must be an LvmMapping (got {type(mapping).__name__})")
    md = finite_array("metadata_ios", metadata_ios, nonnegative=True)
    fb = finite_array("data_block_ios", data_block_ios, nonnegative=True)
    complexity = mapping_complexity(layout)
    return complexity * mapping.md_mapping_s * md, complexity * mapping.fb_mapping_s * fb
