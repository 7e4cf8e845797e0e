"""A disk drive and its service time (Djordjevic & Timcenko 2015, eqs. 3-8).

    T_DST = T_A + T_M + T_I                                  (3)
    T_A   = T_CO + T_Seek + T_Settle + T_RL                  (4)
    T_M   = S_R / R_T                                        (6)
    T_Seek(dis) piecewise (7),  T_RL = T_rot / 2             (8)

:class:`Disk` bundles the parameters; :func:`service_time_s` evaluates the
expected service time of given requests, :func:`expected_random_service_time_s`
that of requests spread uniformly over a region (a partition or file system).
Both return a :class:`ServiceTime` with every term of eqs. (3)-(4) kept apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .._checks import evolve as _evolve
from .._checks import finite_array, finite_scalar, flag, positive_rate, show, whole_number
from .cache import DriveCache
from .rotation import rotation_period_s as _rotation_period_s
from .seek import TableSeek, TwoPieceSeek, random_pair_distance_pmf, table_seek_one, two_piece_seek_one
from .zones import MAX_CYLINDERS, Geometry


@dataclass(frozen=True, eq=False)
class Disk:
    """Parameters of one drive.

    Attributes
    ----------
    name : str
    geometry : Geometry
        Surfaces, zones and sector size.
    seek : TwoPieceSeek or TableSeek
        Seek time against distance, eq. (7).
    rpm : float
        Spindle speed [rev/min], > 0.
    command_overhead_s : float
        T_CO, controller time to decode a command [s].
    settle_s : float
        T_Settle, added to every non-zero seek [s] (0 where the seek curve
        already includes it, as measured curves do).
    write_settle_s : float
        Extra settle before writing after a seek [s].
    head_switch_s : float
        Time to switch to another surface of the same cylinder [s].
    interface_rate_bytes_per_s : float
        R of the host interface, giving T_I = S_R / R [bytes/s].
    cache_size_bytes : int
        The drive's buffer [bytes].
    drive_cache : DriveCache or None
        Segments, read-ahead and write policy of that buffer, for the
        per-request simulation (None: every request goes to the media).
        Its size must equal ``cache_size_bytes``, in whole sectors.
    provenance : str
        Where the values come from.
    estimates : tuple of (field, how it was derived)
        The values that are estimates rather than published facts.
    flat : bool
        Storage without mechanics, standing in as a Disk (:func:`flat_latency_disk`): the I/O path's
        timing serves it as a flat drive (its latency plus its bytes at its rate, no rotational phase).
    """

    name: str
    geometry: Geometry
    seek: TwoPieceSeek | TableSeek
    rpm: float
    command_overhead_s: float = 0.0
    settle_s: float = 0.0
    write_settle_s: float = 0.0
    head_switch_s: float = 0.0
    interface_rate_bytes_per_s: float = float("inf")
    cache_size_bytes: int = 0
    drive_cache: DriveCache | None = None
    provenance: str = ""
    estimates: tuple[tuple[str, str], ...] = field(default=())
    flat: bool = False

    def __post_init__(self):
        if not isinstance(self.flat, bool):
            raise ValueError(f"flat must be True or False (got {show(self.flat)})")
        if not isinstance(self.geometry, Geometry):
            raise ValueError(f"geometry must be a Geometry (got {show(self.geometry)})")
        if not isinstance(self.seek, (TwoPieceSeek, TableSeek)):
            raise ValueError(f"seek must be a TwoPieceSeek or TableSeek (got {show(self.seek)})")
        finite_scalar("rpm", self.rpm, positive=True)
        for name in ("command_overhead_s", "settle_s", "write_settle_s", "head_switch_s"):
            finite_scalar(name, getattr(self, name), nonnegative=True)
        positive_rate("interface_rate_bytes_per_s", self.interface_rate_bytes_per_s)
        whole_number("cache_size_bytes", self.cache_size_bytes)
        if self.drive_cache is not None:
            if not isinstance(self.drive_cache, DriveCache):
                raise ValueError(f"drive_cache must be a DriveCache or None (got {show(self.drive_cache)})")
            if self.drive_cache.size_bytes != self.cache_size_bytes:
                raise ValueError(f"drive_cache holds {self.drive_cache.size_bytes} bytes but cache_size_bytes is "
                                 f"{self.cache_size_bytes}")
            for name in ("segment_size_bytes", "read_ahead_bytes"):
                if (getattr(self.drive_cache, name) or 0) % self.geometry.sector_size_bytes:
                    raise ValueError(f"drive_cache.{name} ({getattr(self.drive_cache, name)}) must be a whole "
                                     f"number of {self.geometry.sector_size_bytes}-byte sectors")
        cylinders = self.geometry.cylinders
        if isinstance(self.seek, TwoPieceSeek) and self.seek.knee_cylinders >= cylinders:
            raise ValueError(f"seek.knee_cylinders ({self.seek.knee_cylinders:g}) must lie inside the "
                             f"cylinder range (the disk has {cylinders} cylinders)")
        if self.seek.max_distance_cylinders < cylinders - 1:
            raise ValueError(f"seek table ends at {self.seek.max_distance_cylinders:g} cylinders but the "
                             f"disk has {cylinders}: it must reach {cylinders - 1}")

    @property
    def rotation_period_s(self) -> float:
        """T_rot = 60 / rpm [s]."""
        return _rotation_period_s(self.rpm)

    @property
    def mean_rotational_latency_s(self) -> float:
        """T_RL = T_rot / 2 (eq. 8) [s]."""
        return self.rotation_period_s / 2.0

    @property
    def capacity_bytes(self) -> int:
        return self.geometry.capacity_bytes

    def seek_time_s(self, distance_cylinders):
        """T_Seek for distances [cylinders] (eq. 7) [s].

        Distances may be fractional (elevator-scaled means) but must lie in
        [0, cylinders - 1]: a seek cannot cross more cylinders than the disk has.
        """
        distance = finite_array("distance_cylinders", distance_cylinders, nonnegative=True,
                                maximum=self.geometry.cylinders - 1,
                                maximum_is=f"the disk has {self.geometry.cylinders} cylinders")
        return self.seek.seek_time_s(distance)

    def media_rate_bytes_per_s(self, offset_bytes):
        """R_T at byte offsets (zoned) [bytes/s]."""
        return self.geometry.media_rate_bytes_per_s(offset_bytes, self.rotation_period_s)

    def zone_rates_bytes_per_s(self) -> np.ndarray:
        return self.geometry.zone_rates_bytes_per_s(self.rotation_period_s)

    def evolve(self, **changes) -> "Disk":
        """A copy with some parameters changed, validated again (for what-ifs).

        Unknown field names raise ValueError.
        """
        return _evolve(self, changes)

    def describe(self) -> str:
        lines = [
            f"{self.name}: {self.capacity_bytes / 1e9:.2f} GB, {self.rpm:g} rpm, "
            f"{self.geometry.surfaces} surfaces, {self.geometry.cylinders} cylinders, "
            f"{len(self.geometry.zones)} zones",
            f"  seek: {self.seek.describe()}",
            f"  rotation period {self.rotation_period_s * 1e3:.3f} ms, mean latency "
            f"{self.mean_rotational_latency_s * 1e3:.3f} ms",
            f"  media rate {self.zone_rates_bytes_per_s()[-1] / 1e6:.1f}..{self.zone_rates_bytes_per_s()[0] / 1e6:.1f} MB/s",
        ]
        if self.drive_cache is not None:
            lines.append(f"  cache: {self.drive_cache.describe()}")
        if self.provenance:
            lines.append(f"  provenance: {self.provenance}")
        for name, how in self.estimates:
            lines.append(f"  estimate: {name}: {how}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ServiceTime:
    """The terms of T_DST (eqs. 3-4), each [s], scalars or arrays of one shape.

    *total* is their sum when the caller has it already (:func:`service_time_s`
    computes it in the same pass); otherwise :attr:`total_s` adds the terms.
    """

    command_overhead_s: np.ndarray
    seek_s: np.ndarray
    settle_s: np.ndarray
    rotation_s: np.ndarray
    transfer_s: np.ndarray
    interface_s: np.ndarray
    total: np.ndarray | None = field(default=None, repr=False, compare=False)

    TERMS = ("command_overhead_s", "seek_s", "settle_s", "rotation_s", "transfer_s", "interface_s")

    @property
    def access_s(self):
        """T_A = T_CO + T_Seek + T_Settle + T_RL (eq. 4) [s]."""
        return self.command_overhead_s + self.seek_s + self.settle_s + self.rotation_s

    @property
    def total_s(self):
        """T_DST = T_A + T_M + T_I (eq. 3) [s]."""
        if self.total is not None:
            return self.total
        return self.access_s + self.transfer_s + self.interface_s

    def mean(self) -> "ServiceTime":
        """The mean of each term over the requests (ValueError when there are none)."""
        if np.size(self.total_s) == 0:
            raise ValueError("ServiceTime holds no requests: the mean of none is undefined")
        return ServiceTime(*(float(np.mean(getattr(self, name))) for name in self.TERMS))

    def as_dict(self) -> dict[str, float]:
        """Mean of each term, and the total [s]."""
        means = self.mean()
        out = {name: getattr(means, name) for name in self.TERMS}
        out["total_s"] = means.total_s
        return out

    def to_frame(self):
        import pandas as pd
        columns = {name: np.broadcast_to(getattr(self, name), np.shape(self.total_s)).ravel()
                   for name in self.TERMS}
        columns["total_s"] = np.ravel(self.total_s)
        return pd.DataFrame(columns)


def _sizes(size_bytes, limit_bytes: int, limit_is: str) -> np.ndarray:
    """Request sizes [bytes]: whole numbers in [1, limit_bytes], at least one."""
    return finite_array("size_bytes", size_bytes, positive=True, whole=True, nonempty=True,
                        maximum=limit_bytes, maximum_is=limit_is)


def _is_write(is_write) -> np.ndarray:
    flags = np.asarray(is_write)
    if flags.dtype.kind != "b":
        raise ValueError(f"is_write must be True or False, or an array of them (got {show(is_write)})")
    return flags


#: Buckets of the zone lookup of :func:`service_time_s`: a table this small
#: stays in the cache (a table per MiB of a large disk does not, and a binary
#: search for every offset costs several times more).
_ZONE_BUCKETS = 4096


def _zone_buckets(geometry: Geometry):
    """(bucket size [bytes], zone where each bucket's predecessor starts): a lower
    bound of the zone of any offset in the bucket, from which :func:`_locate` walks on."""
    first_byte = geometry.zone_first_byte
    bucket_bytes = float(-(-geometry.capacity_bytes // _ZONE_BUCKETS))
    starts = np.maximum(np.arange(_ZONE_BUCKETS + 1) - 1, 0) * bucket_bytes
    return bucket_bytes, np.searchsorted(first_byte, starts, side="right") - 1


@njit(cache=True, forceinline=True)  # inlined by LLVM, not copied by numba (compile time)
def _locate(offset, zones, per_bucket, bucket_zone):
    """(zone, cylinder) of a byte offset: the bucket's lower bound, then forward
    while the next zone starts at or before the offset. Multiplications by
    reciprocals instead of divisions (the bucket's bound tolerates a rounded
    index; the cylinder is corrected to the exact floor)."""
    first_byte, first_cylinder, bytes_per_cylinder, cylinders_per_byte = zones
    zone = bucket_zone[np.int64(offset * per_bucket)]
    while zone + 1 < first_byte.size and first_byte[zone + 1] <= offset:
        zone += 1
    into = offset - first_byte[zone]
    width = bytes_per_cylinder[zone]
    cylinder = np.floor(into * cylinders_per_byte[zone])
    if (cylinder + 1.0) * width <= into:
        cylinder += 1.0
    elif cylinder * width > into:
        cylinder -= 1.0
    return zone, first_cylinder[zone] + cylinder


@njit(cache=True)
def _service_terms(offset, size, head, is_write, capacity, zones, per_bucket, bucket_zone, seconds_per_byte,
                   seek_kind, seek_coefficients, table_distance, table_time, overhead, settle, write_settle,
                   half_turn, interface_s_per_byte, out, all_terms):
    """Seek, settle, rotation, transfer, interface and total of each request (with
    *all_terms*; else the total alone), in one pass that also checks the inputs. Returns (problem, index): problem 0
    when all is well, else the number of the first check that failed."""
    a, b, c, f, knee = seek_coefficients
    seek_out, settle_out, rotation_out, transfer_out, interface_out, total_out = out
    for i in range(total_out.size):
        o = float(offset[i])
        n = float(size[i])
        h = float(head[i])
        if not (n >= 1.0 and n <= capacity):
            return 1, i
        if n != np.floor(n):
            return 2, i
        if not (o >= 0.0 and o < capacity) or o != np.floor(o):
            return 3, i
        if not (h >= 0.0 and h <= capacity) or h != np.floor(h):
            return 4, i
        if o + n > capacity:
            return 5, i
        zone, cylinder = _locate(o, zones, per_bucket, bucket_zone)
        # the head rests just past the last byte after a request that ended the disk: its last cylinder
        _, head_cylinder = _locate(min(h, capacity - 1.0), zones, per_bucket, bucket_zone)
        distance = abs(cylinder - head_cylinder)
        if seek_kind == 0:
            seek = two_piece_seek_one(distance, a, b, c, f, knee)
        else:
            seek = table_seek_one(distance, table_distance, table_time)
        moved_settle = (settle + (write_settle if is_write[i] else 0.0)) if distance > 0.0 else 0.0
        rotation = 0.0 if o == h else half_turn
        transfer = n * seconds_per_byte[zone]
        interface = n * interface_s_per_byte
        if all_terms:
            seek_out[i] = seek
            settle_out[i] = moved_settle
            rotation_out[i] = rotation
            transfer_out[i] = transfer
            interface_out[i] = interface
        total_out[i] = overhead + seek + moved_settle + rotation + transfer + interface
    return 0, 0


def service_time_s(disk: Disk, offset_bytes, size_bytes, head_offset_bytes, *, is_write=False) -> ServiceTime:
    """Expected T_DST of requests, given where the head is (vectorised).

    Parameters
    ----------
    disk : Disk
    offset_bytes : array_like
        Where each request starts [bytes], whole numbers in [0, capacity).
    size_bytes : array_like
        Request sizes S_R [bytes], whole numbers > 0; a request must end on
        the disk (offset + size <= capacity). Not empty.
    head_offset_bytes : array_like
        Where the previous request ended [bytes], in [0, capacity]. A request
        that starts there is sequential: no seek and no rotational latency.
        Otherwise the seek covers the cylinder distance and the latency is its
        mean, T_rot/2.
    is_write : bool or array_like of bool
        Writes add ``disk.write_settle_s`` after a non-zero seek.

    Notes
    -----
    The transfer time is S_R / R_T at the zone of the request's start (eq. 6);
    a request crossing into the next zone is charged at the first zone's rate.
    All terms come from one numba pass (eq. 7 and the seek tables through
    :mod:`diskmodel.model.drive.seek`'s kernels), which also checks the inputs.
    """
    shape, out = _evaluate(disk, offset_bytes, size_bytes, head_offset_bytes, is_write, all_terms=True)
    terms = [term.reshape(shape) for term in out]
    return ServiceTime(np.broadcast_to(disk.command_overhead_s, shape), *terms[:5], total=terms[5])


def service_time_total_s(disk: Disk, offset_bytes, size_bytes, head_offset_bytes, *, is_write=False) -> np.ndarray:
    """T_DST alone of requests, given where the head is [s]: :func:`service_time_s`'s
    ``total_s``, in the same pass without keeping the terms (one output array
    instead of six, for bulk evaluation). Same parameters and checks."""
    shape, out = _evaluate(disk, offset_bytes, size_bytes, head_offset_bytes, is_write, all_terms=False)
    return out[5].reshape(shape)


def _evaluate(disk, offset_bytes, size_bytes, head_offset_bytes, is_write, *, all_terms):
    geometry = disk.geometry
    capacity = geometry.capacity_bytes
    is_write = _is_write(is_write)
    arrays = []
    for name, values in (("offset_bytes", offset_bytes), ("size_bytes", size_bytes),
                         ("head_offset_bytes", head_offset_bytes)):
        array = np.asarray(values)
        if array.dtype.kind not in "iuf":
            array = finite_array(name, array)  # raises, naming the parameter, unless numbers as objects
        if array.dtype.kind == "u" or array.dtype.itemsize != 8:
            array = array.astype(float)
        arrays.append(array)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays), is_write.shape)
    except ValueError:
        raise ValueError(f"offset_bytes, size_bytes, head_offset_bytes and is_write must broadcast together "
                         f"(shapes {arrays[0].shape}, {arrays[1].shape}, {arrays[2].shape}, "
                         f"{is_write.shape})") from None
    if arrays[1].size == 0:
        raise ValueError(f"size_bytes must not be empty (got {show(size_bytes)})")
    # inputs as they are (int64 or float64) unless broadcast: the kernel reads each element once
    flat = [np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1) for a in arrays]
    writes = np.ascontiguousarray(np.broadcast_to(is_write, shape)).reshape(-1)
    # six arrays rather than one block: glibc keeps blocks of this size on its heap
    # for the next call, where one block of six times the size would be mapped
    # afresh each time (page faults cost more than the whole computation)
    count = int(np.prod(shape))
    out = tuple(np.empty(count if all_terms or k == 5 else 0) for k in range(6))
    seek = disk.seek
    if isinstance(seek, TwoPieceSeek):
        kind, coefficients = 0, (seek.short_offset_s, seek.short_sqrt_s, seek.long_offset_s,
                                 seek.long_per_cylinder_s, seek.knee_cylinders)
        table_distance = table_time = np.zeros(1)
    else:
        kind, coefficients = 1, (0.0, 0.0, 0.0, 0.0, 0.0)
        table_distance, table_time = seek.distance_cylinders, seek.seek_time_s_at_distance
    seconds_per_byte = 1.0 / disk.zone_rates_bytes_per_s()
    bytes_per_cylinder = geometry.surfaces * geometry.zone_sectors_per_track * float(geometry.sector_size_bytes)
    zones = (geometry.zone_first_byte.astype(float), np.array([z.first_cylinder for z in geometry.zones], dtype=float),
             bytes_per_cylinder, 1.0 / bytes_per_cylinder)
    bucket_bytes, bucket_zone = _zone_buckets(geometry)
    problem, index = _service_terms(
        flat[0], flat[1], flat[2], writes, float(capacity), zones, 1.0 / bucket_bytes, bucket_zone, seconds_per_byte,
        kind, coefficients, table_distance, table_time, disk.command_overhead_s, disk.settle_s,
        disk.write_settle_s, disk.mean_rotational_latency_s, 1.0 / disk.interface_rate_bytes_per_s, out,
        all_terms)
    if problem:
        offset, size, head = (show(v[index]) for v in flat)
        raise ValueError({
            1: f"size_bytes must lie in [1, {capacity}] (the disk's capacity; got {size})",
            2: f"size_bytes must be whole numbers (got {size})",
            3: f"offset_bytes must be whole numbers in [0, {capacity}) (got {offset})",
            4: f"head_offset_bytes must be whole numbers in [0, {capacity}] (got {head})",
            5: f"offset_bytes + size_bytes must not exceed the disk's capacity ({capacity}): got {offset} + {size}",
        }[problem])
    return shape, out


def expected_random_service_time_s(disk: Disk, size_bytes, region_start_bytes=0,
                                   region_size_bytes=None, *, is_write=False) -> ServiceTime:
    """Expected T_DST of requests placed uniformly at random in a region.

    The seek is averaged over the distance distribution of two uniformly
    random cylinders of the region's span, the latency is T_rot/2 (eq. 8),
    and the transfer time is S_R * E[1/R_T] over the region's bytes, so that
    a region in the outer zones transfers faster than one inside.

    Parameters
    ----------
    size_bytes : array_like
        Request sizes [bytes]: whole numbers in [1, region size], at least one.
    region_start_bytes, region_size_bytes : int
        The region [bytes], whole numbers; default the whole disk.
    is_write : bool
        Adds the disk's write settle time after a non-zero seek.
    """
    geometry = disk.geometry
    capacity = geometry.capacity_bytes
    start = whole_number("region_start_bytes", region_start_bytes, maximum=capacity - 1,
                         maximum_is="the disk's last byte")
    size_region = capacity - start if region_size_bytes is None else whole_number(
        "region_size_bytes", region_size_bytes, minimum=1)
    end = start + size_region
    if end > capacity:
        raise ValueError(f"region_start_bytes + region_size_bytes ({end}) exceeds the disk "
                         f"capacity ({capacity})")
    size = _sizes(size_bytes, size_region, "the region's size")
    is_write = flag("is_write", is_write)
    first_cylinder, last_cylinder = geometry.cylinder_of_byte(np.array([start, end - 1]))
    distance, probability = random_pair_distance_pmf(int(last_cylinder - first_cylinder + 1))
    seek = float(np.dot(disk.seek_time_s(distance), probability))
    p_moved = 1.0 - probability[0]
    settle = p_moved * (disk.settle_s + (disk.write_settle_s if is_write else 0.0))
    # E[1/R_T] over the region: weight each zone by the bytes of the region in it.
    bounds = geometry.zone_bounds_bytes()
    overlap = np.clip(np.minimum(bounds[:, 1], end) - np.maximum(bounds[:, 0], start), 0, None)
    inverse_rate = float(np.dot(overlap / size_region, 1.0 / disk.zone_rates_bytes_per_s()))
    shape = size.shape
    return ServiceTime(
        np.full(shape, disk.command_overhead_s), np.full(shape, seek), np.full(shape, settle),
        np.full(shape, disk.mean_rotational_latency_s), size * inverse_rate,
        size / disk.interface_rate_bytes_per_s)


def flat_latency_disk(latency_s: float, rate_bytes_per_s: float, capacity_bytes: int, *,
                      block_bytes: int = 4096, surfaces: int | None = None, name: str = "flat-latency storage",
                      provenance: str = "") -> Disk:
    """A :class:`Disk` standing for storage without a mechanical seek (flash, virtual disks).

    A request of S bytes costs ``latency_s + (S - block_bytes) / rate``: the
    harness's flat latency model, whose latency [s] is measured with reads of
    *block_bytes*, so one block's transfer is taken out of it. Built from
    the model's own parts: ``command_overhead_s`` is the latency less that
    transfer, the seek is 0 at every distance (a TableSeek of zeros), and one
    zone of one 512-byte sector per track makes the media rate
    *rate_bytes_per_s* [bytes/s]. The analytic equations charge its mean rotational latency, half a
    sector's transfer, on top of the latency (a tenth of a microsecond on flash; more at a throttled
    rate). The I/O path's timing does not: it serves the Disk (``flat``) as a flat drive, its latency
    plus its bytes at its rate (:func:`diskmodel.model.iopath.timing.drive_of`). In the per-request
    simulation a track of one sector would make each request wait for that sector's phase, a step of a
    revolution that a small change of the latency crosses or not: the calibration's intervals were that
    step, not its uncertainty. *surfaces* only groups sectors into
    "cylinders" to keep seek-distance arrays short; by default 1024, or as
    many more as keep the cylinders within ``zones.MAX_CYLINDERS`` (storage
    beyond 16 TiB).
    """
    finite_scalar("latency_s", latency_s, positive=True)
    rate = finite_scalar("rate_bytes_per_s", rate_bytes_per_s, positive=True)
    capacity = whole_number("capacity_bytes", capacity_bytes, minimum=1)
    whole_number("block_bytes", block_bytes, minimum=1)
    sector = 512
    if surfaces is None:
        surfaces = max(1024, -(-capacity // (sector * MAX_CYLINDERS)))
    per_cylinder = whole_number("surfaces", surfaces, minimum=1) * sector
    cylinders = max(2, -(-capacity // per_cylinder))
    overhead = latency_s - block_bytes / rate
    if overhead <= 0:
        raise ValueError(f"latency_s ({latency_s!r}) must exceed one block's transfer ({block_bytes / rate!r} s)")
    from .zones import Zone

    geometry = Geometry(surfaces, (Zone(0, cylinders - 1, 1),), sector)
    seek = TableSeek(np.array([1.0, float(cylinders)]), np.array([0.0, 0.0]))
    return Disk(name=name, geometry=geometry, seek=seek, rpm=60.0 * rate / sector, command_overhead_s=overhead,
                provenance=provenance, flat=True,
                estimates=(("seek", "none: flat latency, no mechanical seek"),
                           ("rotation", "stand-in: one sector per track, T_rot = sector / rate"),
                           ("command_overhead_s", "flat latency of a one-block read less its transfer")))
