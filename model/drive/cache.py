"""A drive's buffer cache: segments, read-ahead and write policy.

After the disk cache of DiskSim 4.0 (Ganger, Worthington, Patt et al., CMU
PDL, ``src/disksim_diskcache.c``): the buffer is split into ``segments`` of
``segment_size_bytes``; after a read miss the drive keeps reading ahead
(``read_ahead_bytes`` at most, where the scheme allows) until the next
request needs the mechanism; with ``write_back`` a write is reported done
once its data are in the buffer ("fast write"). Segments are replaced least
recently used. :class:`~diskmodel.model.drive.disk.Disk` carries one as
``drive_cache``; :meth:`diskmodel.model.drive.parameters.DriveParameters.from_disk`
gives it to the per-request simulation. Pure validated data.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._checks import evolve as _evolve
from .._checks import finite_scalar, flag, whole_number

__all__ = ["DriveCache", "READ_AHEAD_SCHEMES"]

#: DiskSim's "Buffer continuous read" values: how far a read miss reads ahead
#: (always bounded by ``read_ahead_bytes`` when that is > 0, and by the segment).
READ_AHEAD_SCHEMES = {
    0: "none",
    1: "to the end of the track",
    2: "to the end of the cylinder",
    3: "until the segment is full",
    4: "to the end of the next track for a detected sequential stream",
}


@dataclass(frozen=True)
class DriveCache:
    """A drive's buffer and its policies [bytes].

    Attributes
    ----------
    segments : int
        Buffer segments, >= 1.
    segment_size_bytes : int
        Bytes in one segment (a whole number of sectors when attached to a disk).
    read_ahead_bytes : int or None
        How far the drive reads ahead after a read miss [bytes]; 0 = no
        read-ahead; None = no maximum of its own, the scheme and the segment
        bound it (DiskSim's code for a "Maximum read-ahead" of 0 with a
        read-ahead scheme, ``disk_buffer_get_max_readahead``; needs
        ``read_ahead_scheme`` > 0).
    write_back : bool
        Write cache on: a write completes once its data are in the buffer.
    fast_write_level : int
        DiskSim's "Fast write level": 0 with write-through; 1 (only writes
        appending to dirty data, or arriving once it is on the media) or 2
        (every write) with write-back, as DiskSim's manual puts it. One
        request at a time DiskSim's code treats 1 and 2 alike: a write that
        does not append to an earlier write still going to the media waits
        for it (``disk_buffer_stopable_access``), and the per-request
        simulation follows the code. Default: 2 if write_back else 0.
    read_ahead_scheme : int
        DiskSim's "Buffer continuous read" (:data:`READ_AHEAD_SCHEMES`);
        default 3 (fill the segment) when read_ahead_bytes > 0, else 0.
    read_ahead_over_requested : bool
        Without a read-ahead bound (``read_ahead_bytes`` 0) the read-ahead
        may overwrite the data just returned to the host (else it stops when
        the segment is full); a bound is read up to either way (DiskSim).
    read_ahead_on_idle_hit : bool
        A read hit restarts the read-ahead at the end of its segment.
    read_any_free_blocks : bool
        The drive also keeps the sectors passing under the head before the
        requested ones during the rotational latency.
    read_hits_on_write_data : bool
        Reads may hit on data written earlier.
    separate_write_segment : bool
        One segment is reserved for writes (needs segments >= 2).
    read_watermark : float
        Fraction [0, 1] of a read miss's blocks buffered before the bus
        transfer starts (0: from the first block).
    caching : bool
        The segments keep their blocks once a request is done, for later
        read hits (True); else (DiskSim's "Enable caching in buffer" 0) they
        only stage each request's transfer between the media and the host
        and are empty again once it is over: no read hit, no read-ahead, no
        fast write (``disk_buffer_check_read_segments``,
        ``disk_reconnection_or_transfer_complete``, ``disk_release_hda``;
        DiskSim's ``disk_postpass_perdisk`` refuses read-ahead, fast writes
        and "Read any free blocks" without caching, and so does this).
    """

    segments: int
    segment_size_bytes: int
    read_ahead_bytes: int | None = 0
    write_back: bool = False
    fast_write_level: int | None = None
    read_ahead_scheme: int | None = None
    read_ahead_over_requested: bool = False
    read_ahead_on_idle_hit: bool = False
    read_any_free_blocks: bool = False
    read_hits_on_write_data: bool = True
    separate_write_segment: bool = False
    read_watermark: float = 0.0
    caching: bool = True

    def __post_init__(self):
        object.__setattr__(self, "segments", whole_number("segments", self.segments, minimum=1))
        object.__setattr__(self, "segment_size_bytes", whole_number(
            "segment_size_bytes", self.segment_size_bytes, minimum=1))
        unbounded = self.read_ahead_bytes is None
        if not unbounded:
            object.__setattr__(self, "read_ahead_bytes", whole_number("read_ahead_bytes", self.read_ahead_bytes))
        for name in ("write_back", "read_ahead_over_requested", "read_ahead_on_idle_hit", "read_any_free_blocks",
                     "read_hits_on_write_data", "separate_write_segment", "caching"):
            flag(name, getattr(self, name))
        level = (2 if self.write_back else 0) if self.fast_write_level is None else whole_number(
            "fast_write_level", self.fast_write_level, maximum=2, maximum_is="0 none, 1 appending, 2 every write")
        if (level > 0) != self.write_back:
            raise ValueError(f"fast_write_level {level} contradicts write_back={self.write_back} "
                             "(0 is write-through, 1 and 2 write-back)")
        object.__setattr__(self, "fast_write_level", level)
        if unbounded and self.read_ahead_scheme in (None, 0):
            raise ValueError(f"read_ahead_bytes=None (no maximum) needs a read_ahead_scheme 1..4 "
                             f"(got {self.read_ahead_scheme!r})")
        scheme = (3 if self.read_ahead_bytes else 0) if self.read_ahead_scheme is None else whole_number(
            "read_ahead_scheme", self.read_ahead_scheme, maximum=4, maximum_is="DiskSim's schemes 0..4")
        object.__setattr__(self, "read_ahead_scheme", scheme)
        if not unbounded and (scheme == 0) != (self.read_ahead_bytes == 0):
            raise ValueError(f"read_ahead_scheme {scheme} contradicts read_ahead_bytes={self.read_ahead_bytes} "
                             "(scheme 0 is no read-ahead, and so is 0 bytes)")
        watermark = finite_scalar("read_watermark", self.read_watermark, nonnegative=True)
        if watermark > 1:
            raise ValueError(f"read_watermark must lie in [0, 1] (got {watermark})")
        if self.separate_write_segment and self.segments < 2:
            raise ValueError("separate_write_segment needs segments >= 2")
        if not self.caching:
            # DiskSim's disk_postpass_perdisk stops on each of these without caching
            for name, on in (("read_ahead_scheme", scheme), ("write_back", self.write_back),
                             ("read_any_free_blocks", self.read_any_free_blocks)):
                if on:
                    raise ValueError(f"caching=False (segments keep nothing) allows no {name} (got {on!r})")

    @property
    def size_bytes(self) -> int:
        """The whole buffer [bytes]."""
        return self.segments * self.segment_size_bytes

    def evolve(self, **changes) -> "DriveCache":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    def describe(self) -> str:
        write = f"write-back (fast write level {self.fast_write_level})" if self.write_back else "write-through"
        bound = "no maximum" if self.read_ahead_bytes is None else f"{self.read_ahead_bytes} bytes"
        ahead = (f"read-ahead {bound}, {READ_AHEAD_SCHEMES[self.read_ahead_scheme]}"
                 if self.read_ahead_scheme else "no read-ahead")
        kept = "" if self.caching else ", no caching (segments stage transfers only)"
        return f"{self.segments} x {self.segment_size_bytes} bytes, {ahead}, {write}{kept}"
