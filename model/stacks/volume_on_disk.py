"""A volume placed on its disk: what the file-system layer asks of the layers below.

The model reads one way, disk -> volume -> file system -> workload ->
prediction, each layer asking only the one below it.  This module is the
volume layer as the file system sees it: a :class:`VolumeOnDisk` (a
:class:`diskmodel.model.drive.disk.Disk`, a volume of :mod:`diskmodel.model.stacks.volumes`
and the volume's LVM mapping costs) answers

* where a logical region lies: :meth:`VolumeOnDisk.region` places it on the
  disk through the volume's extent map (:class:`DiskRegion`: its bytes per
  cylinder and per zone), so that a region spread over two PVs far apart
  has the seek-distance distribution of its two physical pieces and the
  zone rates of the bytes it holds;
* what a request there costs: :meth:`DiskRegion.service_time` (eqs. 3-8 for
  random requests), :meth:`DiskRegion.batch_service_time` (one of k
  requests the elevator sorts and the drive may reorder),
  :meth:`DiskRegion.seek_time_to_s` (trips between two regions) and
  :attr:`DiskRegion.media_rate_bytes_per_s`;
* what the host spends remapping: :meth:`VolumeOnDisk.mapping_overhead_s`
  (eq. 12, :func:`diskmodel.model.stacks.lvm_mapping.lvm_mapping_overhead_s`).

Elevator batches of k requests over a region of C cylinders: the seek
distance shrinks by min(1, 3/(k+1)) (sorted neighbours are C/(k+1) apart,
random pairs C/3), and with m = k/(tracks in the region) > 1 requests per
track the rotational latency is T_rot/(m+1) instead of T_rot/2 (eq. 8).
A drive holding q writes in its cache serves the one of shortest
positioning first, so a write's positioning shrinks to 1/q of its random value.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .._checks import evolve as _evolve
from .._checks import finite_array, finite_scalar, flag, show, whole_number
from ..drive.disk import Disk, ServiceTime
from .nodes import is_node
from .volumes import Partition
from .lvm_mapping import LvmMapping, lvm_mapping_overhead_s


#: How many other regions' seeks :meth:`DiskRegion.seek_time_to_s` keeps at once.
_SEEKS_KEPT = 16


def _distance_pmf(weights_a, c0_a, weights_b, c0_b):
    """PMF of |X - Y| for X ~ weights_a over cylinders c0_a.., Y ~ weights_b over c0_b.. (independent)."""
    from scipy.signal import fftconvolve

    corr = np.clip(fftconvolve(weights_a, weights_b[::-1]), 0.0, None)
    # corr[k] is P(X - Y = k - (len_b - 1) + (c0_a - c0_b))
    diff = np.arange(corr.size) - (weights_b.size - 1) + (c0_a - c0_b)
    distance = np.abs(diff)
    pmf = np.bincount(distance, weights=corr)
    pmf /= pmf.sum()
    return np.arange(pmf.size, dtype=float), pmf


@dataclass(frozen=True, eq=False)
class DiskRegion:
    """A logical region of a volume, placed on the cylinders and zones of its disk.

    Made by :meth:`VolumeOnDisk.region`.

    Attributes
    ----------
    disk : Disk
    logical_start_bytes, logical_size_bytes : int
        The region in the volume [bytes].
    first_cylinder : int
    cylinder_weights : ndarray
        Share of the region's bytes on cylinders first_cylinder.. (sums to 1).
    zone_weights : ndarray
        Share of its bytes in each zone of the disk (sums to 1).
    """

    disk: Disk
    logical_start_bytes: int
    logical_size_bytes: int
    first_cylinder: int
    cylinder_weights: np.ndarray = field(repr=False)
    zone_weights: np.ndarray = field(repr=False)

    @functools.cached_property
    def _seek_distances(self):
        """(distances [cylinders], probabilities) between two independent points of the region."""
        return _distance_pmf(self.cylinder_weights, self.first_cylinder, self.cylinder_weights, self.first_cylinder)

    @functools.cached_property
    def _inverse_media_rate_s_per_byte(self) -> float:
        return float(self.zone_weights @ (1.0 / self.disk.zone_rates_bytes_per_s()))

    @property
    def media_rate_bytes_per_s(self) -> float:
        """Harmonic-mean media rate over the region's physical bytes [bytes/s]."""
        return 1.0 / self._inverse_media_rate_s_per_byte

    @property
    def cylinders(self) -> int:
        """Cylinders holding some of the region's bytes [count]."""
        return int(np.count_nonzero(self.cylinder_weights))

    def _seek_and_settle_s(self, distance_scale: float, is_write: bool) -> tuple[float, float]:
        """Mean seek time of two random points (distances times *distance_scale*) and the settle after it [s]."""
        disk = self.disk
        distance, pmf = self._seek_distances
        seek = float(pmf @ disk.seek_time_s(distance * distance_scale))
        settle = (1.0 - pmf[0]) * (disk.settle_s + (disk.write_settle_s if is_write else 0.0))
        return seek, settle

    def service_time(self, size_bytes, *, distance_scale=1.0, is_write=False) -> ServiceTime:
        """Expected T_DST (eqs. 3-8) of requests uniformly at random in the region.

        Like :func:`diskmodel.model.drive.disk.expected_random_service_time_s`, but
        for the region's bytes as the volume places them.  *size_bytes*
        [bytes] may hold mean sizes (fractional); *distance_scale* in (0, 1]
        multiplies seek distances (1 for independent requests, ~3/(k+1) for k
        sorted by the elevator); *is_write* adds the write settle after a
        non-zero seek.  Returns arrays of size's shape.
        """
        scale = finite_scalar("distance_scale", distance_scale, positive=True, maximum=1.0)
        is_write = flag("is_write", is_write)
        size = finite_array("size_bytes", size_bytes, positive=True, nonempty=True)
        disk = self.disk
        seek, settle = self._seek_and_settle_s(scale, is_write)
        shape = np.shape(size)
        return ServiceTime(np.full(shape, disk.command_overhead_s), np.full(shape, seek), np.full(shape, settle),
                           np.full(shape, disk.mean_rotational_latency_s), size * self._inverse_media_rate_s_per_byte,
                           size / disk.interface_rate_bytes_per_s)

    def batch_service_time(self, requests, size_bytes, *, is_write, reorder_depth=None) -> ServiceTime:
        """Per-request T_DST of one of *requests* (k) elevator-sorted random requests in the region.

        Seeks shorten by min(1, 3/(k+1)); with more than one request per
        track of the region the rotational latency is T_rot/(m+1); writes:
        the drive holds q = min(k, *reorder_depth*) of them and serves the
        nearest first, so positioning (seek, settle, rotation) is divided by
        q.  *reorder_depth* None: as many writes of the (mean) size as fit
        the drive's cache; 1: write cache off.  Returns scalars.
        """
        k = finite_scalar("requests", requests, nonnegative=True)
        is_write = flag("is_write", is_write)
        disk = self.disk
        scale = min(1.0, 3.0 / (k + 1.0)) if k > 1 else 1.0
        seek, settle = self._seek_and_settle_s(scale, is_write)
        rotation = disk.mean_rotational_latency_s
        per_track = k / max(self.cylinders * disk.geometry.surfaces, 1)
        if per_track > 1:
            rotation = disk.rotation_period_s / (per_track + 1.0)
        size = float(size_bytes) if np.ndim(size_bytes) == 0 else float(np.mean(size_bytes))
        if is_write:
            depth = reorder_depth
            if depth is None:
                depth = max(1, int(disk.cache_size_bytes // max(size, 1.0)))
            choices = max(1.0, min(float(k), float(depth)))
            seek, settle, rotation = seek / choices, settle / choices, rotation / choices
        return ServiceTime(np.float64(disk.command_overhead_s), np.float64(seek), np.float64(settle),
                           np.float64(rotation), np.float64(size * self._inverse_media_rate_s_per_byte),
                           np.float64(size / disk.interface_rate_bytes_per_s))

    def seek_time_to_s(self, other: "DiskRegion") -> float:
        """Expected seek [s] from a uniform point of this region to one of *other* (same disk)."""
        if not isinstance(other, DiskRegion) or other.disk is not self.disk:
            raise ValueError(f"other must be a DiskRegion of the same disk (got {show(other)})")
        # kept per pair of regions (a volume keeps its regions, and a fit asks the same pair once per
        # evaluation); regions compare and hash by identity (eq=False)
        known = self._seeks_to.get(other)
        if known is None:
            distance, pmf = _distance_pmf(self.cylinder_weights, self.first_cylinder,
                                          other.cylinder_weights, other.first_cylinder)
            if len(self._seeks_to) >= _SEEKS_KEPT:
                self._seeks_to.clear()
            known = self._seeks_to[other] = float(pmf @ self.disk.seek_time_s(distance))
        return known

    @functools.cached_property
    def _seeks_to(self) -> dict:
        """:meth:`seek_time_to_s`'s answers: the other region -> the seek [s]."""
        return {}


@dataclass(frozen=True, eq=False)
class VolumeOnDisk:
    """A volume (partition or LVM volume) placed on one disk, with its LVM mapping costs.

    Attributes
    ----------
    disk : Disk
    volume : volumes.Partition, volumes.LinearVolume or volumes.StripedVolume
        Its physical span must lie on the disk.
    mapping : LvmMapping
        The empirical MD/FB mapping costs (eq. 12); default none.  A native
        partition has none whatever is given (complexity 0).
    """

    disk: Disk
    volume: object
    mapping: LvmMapping = field(default_factory=LvmMapping)
    _regions: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.disk, Disk):
            raise ValueError(f"disk must be a Disk (got {show(self.disk)})")
        if not is_node(self.volume) or not hasattr(self.volume, "physical_pieces"):
            raise ValueError(f"volume must be a Partition, LinearVolume or StripedVolume (got {show(self.volume)})")
        if not isinstance(self.mapping, LvmMapping):
            raise ValueError(f"mapping must be an LvmMapping (got {type(self.mapping).__name__})")
        capacity = self.disk.capacity_bytes
        if self.volume.physical_span[1] > capacity:
            raise ValueError(f"volume extends past the disk's capacity ({capacity} bytes): its last byte is "
                             f"{self.volume.physical_span[1] - 1}")

    def evolve(self, **changes) -> "VolumeOnDisk":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    @property
    def size_bytes(self) -> int:
        return int(self.volume.size_bytes)

    @property
    def interface_rate_bytes_per_s(self) -> float:
        """R of the host link to the disk (T_I = size / R, eq. 3) [bytes/s]."""
        return self.disk.interface_rate_bytes_per_s

    def region(self, logical_start_bytes=0, logical_size_bytes=None) -> DiskRegion:
        """The logical region [start, start + size) [bytes] (default the whole volume) placed on the disk.

        Each region is placed once per VolumeOnDisk and kept.
        """
        size = self.size_bytes
        start = whole_number("logical_start_bytes", logical_start_bytes, minimum=0, maximum=size - 1,
                             maximum_is="the volume's last byte")
        length = size - start if logical_size_bytes is None else whole_number(
            "logical_size_bytes", logical_size_bytes, minimum=1)
        if start + length > size:
            raise ValueError(f"logical_start_bytes + logical_size_bytes ({start + length}) exceeds the "
                             f"volume size ({size})")
        key = (start, length)
        if key not in self._regions:
            self._regions[key] = self._place(start, length)
        return self._regions[key]

    def _place(self, start: int, length: int) -> DiskRegion:
        pieces_start, pieces_len = self.volume.physical_pieces(start, length)
        geometry = self.disk.geometry
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
        return DiskRegion(self.disk, start, length, c0, weights, zone_w)

    def access_time_s(self, size_bytes, *, logical_start_bytes=0, logical_size_bytes=None, distance_scale=1.0,
                      is_write=False) -> ServiceTime:
        """Expected T_DST (eqs. 3-8) of requests of *size_bytes* uniformly at random in a logical region.

        *size_bytes*: whole numbers in [1, the region's size], at least one;
        the region defaults to the whole volume; see :meth:`DiskRegion.service_time`.
        """
        region = self.region(logical_start_bytes, logical_size_bytes)
        size = finite_array("size_bytes", size_bytes, positive=True, whole=True, nonempty=True,
                            maximum=region.logical_size_bytes, maximum_is="the logical region's size")
        return region.service_time(size, distance_scale=distance_scale, is_write=is_write)

    def mapping_overhead_s(self, io_counts: dict) -> dict:
        """Host time the device mapper spends on *io_counts* (metadata_ios, data_block_ios, data_requests) [s].

        {"md_mapping_s", "fb_mapping_s", "request_mapping_s"} as floats (eq. 12); all 0 on a
        partition, which has no device mapper (the counts are then not even looked at).
        """
        if self.volume.mapping_complexity == 0:
            return dict.fromkeys(("md_mapping_s", "fb_mapping_s", "request_mapping_s"), 0.0)
        parts = lvm_mapping_overhead_s(self.volume, io_counts["metadata_ios"], io_counts["data_block_ios"],
                                       self.mapping, io_counts["data_requests"])
        return {name: float(value) for name, value in parts.items()}

    def native_twin(self) -> "VolumeOnDisk":
        """A native partition of the same size at the volume's first physical byte (no mapping cost)."""
        start = int(self.volume.segment_table()["physical_start_bytes"][0])
        return VolumeOnDisk(self.disk, Partition(start, self.size_bytes, "native twin"))
