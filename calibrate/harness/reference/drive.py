"""A reference hard disk: a virtual-clock backend with the behaviours a calibration must see through.

:class:`ReferenceDrive` serves reads (and writes) one at a time on a virtual
clock from a :class:`DriveSpec`, with its own layout code
(:mod:`.geometry`): nothing here comes from :mod:`diskmodel.model`, so a
calibration checked against it is checked against physics the fitter does
not assume. Each behaviour can be switched on or off in the spec:

- the platter turns all the time, also while the host thinks: a read waits
  until its first sector's angle (with track and cylinder skews) comes under
  the head;
- positioning: the command overhead, then a seek (a + b*sqrt(d) up to a knee,
  linear beyond; with multiplicative Gaussian seek noise), a head switch
  where only the surface changes, nothing on the same track;
- a transfer over track boundaries loses each boundary's skew (a revolution
  more where the switch takes longer than the skew);
- the buffer: ``segments`` segments of ``segment_bytes``, replaced least
  recently used; every read's data is kept, and with read-ahead on a miss
  goes on reading after the request, in the background, until its segment
  is full or the next miss arrives (a hit lets it run on). A read that lies
  wholly in a segment is a hit: the command overhead and the bus transfer,
  after the read-ahead has reached its end;
- a write cache: a write is reported done once it is in the buffer (else it
  is a media access like a read miss); writes drop overlapping read segments;
- host gap jitter between requests, rare outliers (an exponential delay, as a
  retry), and timer noise.

``device_time_s`` is the virtual time spent (service and host gaps), as the
simulated disk's (:mod:`diskmodel.calibrate.harness.simulated`).
"""
from __future__ import annotations

import bisect
import math
import operator
from dataclasses import dataclass, replace

import numpy as np

from diskmodel.calibrate.harness.backend import check_length, check_offsets

from .geometry import Layout

__all__ = ["DriveSpec", "ReferenceDrive"]


@dataclass(frozen=True)
class DriveSpec:
    """Everything a reference drive does [s, bytes]. ``segment_bytes`` and ``segments``
    size the buffer; ``read_ahead`` switches the read-ahead; ``write_cache`` the write cache."""

    name: str
    layout: Layout
    rpm: float
    seek_single_s: float           # one-cylinder seek (with settle)
    seek_knee_s: float             # seek of knee_cylinders
    seek_full_s: float             # full-stroke seek
    knee_cylinders: int
    head_switch_s: float
    command_overhead_s: float
    interface_rate_bytes_per_s: float = 300e6
    read_ahead: bool = True
    segments: int = 1
    segment_bytes: int = 1 << 20
    write_cache: bool = False
    seek_noise: float = 0.0        # relative standard deviation of a seek
    outlier_probability: float = 0.0
    outlier_scale_s: float = 2e-3
    host_gap_s: float = 20e-6
    host_gap_jitter_s: float = 20e-6
    timer_noise_s: float = 1e-6
    notes: str = ""

    @property
    def rotation_period_s(self) -> float:
        return 60.0 / self.rpm

    def evolve(self, **changes) -> "DriveSpec":
        return replace(self, **changes)


class ReferenceDrive:
    """A reference drive on a virtual clock (see the module doc): a calibration backend."""

    queue_depth = 1

    def __init__(self, spec: DriveSpec, *, seed: int = 0, block_size_bytes: int | None = None):
        self.spec = spec
        self.layout = spec.layout
        sector = spec.layout.sector_bytes
        block = sector if block_size_bytes is None else operator.index(block_size_bytes)
        if block <= 0 or block % sector:
            raise ValueError(f"block_size_bytes must be a positive multiple of {sector} (got {block_size_bytes!r})")
        self.block_size_bytes = int(block)
        self.size_bytes = int(self.layout.total_sectors * sector // block * block)
        self.rotation_period_s = spec.rotation_period_s
        period = self.rotation_period_s
        # The wait a sequential transfer loses at a track change: the skew, or a revolution
        # more where the switch (head switch, one-cylinder seek) takes longer than the skew.
        def lost(skew, switch):
            return skew * period + (period if switch > skew * period else 0.0)

        self._head_wait = lost(spec.layout.track_skew_fraction, spec.head_switch_s)
        self._cyl_wait = lost(spec.layout.cylinder_skew_fraction, spec.seek_single_s)
        self._first_lba = [int(v) for v in self.layout._first_lba]
        self._spt = [int(v) for v in self.layout.sectors_per_track()]
        self._cyls = [int(z[0]) for z in self.layout.zones]
        self._first_cyl = [int(v) for v in self.layout._first_cyl]
        self._zone_time = [float(v) for v in self.layout._zone_start_time(period, self._head_wait, self._cyl_wait)]
        self._rng = np.random.default_rng(seed)
        self._clock = 0.0
        self._cyl, self._head = 0, 0
        self._seg = []        # [start, end, last_used] per segment (end: filled, final unless active)
        self._active = None   # the read-ahead: [segment, from_lba, start_time, limit_lba, M(from)]
        self._uses = 0
        self.reads = self.writes = 0
        self.written_bytes = 0

    # -- truth ---------------------------------------------------------------------
    def seek_time_s(self, distance_cylinders) -> np.ndarray:
        """Seek time [s] of cylinder distances, without noise (0 at distance 0)."""
        s = self.spec
        d = np.asarray(distance_cylinders, dtype=float)
        knee = float(s.knee_cylinders)
        far = max(self.layout.cylinders - 1.0, knee + 1.0)
        short = s.seek_single_s + (s.seek_knee_s - s.seek_single_s) * np.sqrt(np.maximum(d - 1, 0) / (knee - 1))
        long_ = s.seek_knee_s + (s.seek_full_s - s.seek_knee_s) * (d - knee) / (far - knee)
        return np.where(d <= 0, 0.0, np.where(d <= knee, short, long_))

    def positioning_time_s(self, from_offset_bytes, to_offset_bytes) -> np.ndarray:
        """Seek, or head switch, between byte offsets [s] (what a calibration calls a seek)."""
        sector = self.layout.sector_bytes
        _, c0, h0, _, _ = self.layout.locate(np.asarray(from_offset_bytes) // sector)
        _, c1, h1, _, _ = self.layout.locate(np.asarray(to_offset_bytes) // sector)
        dc = np.abs(c1 - c0)
        return np.where(dc > 0, self.seek_time_s(dc), np.where(h1 != h0, self.spec.head_switch_s, 0.0))

    def mean_random_seek_time_s(self, samples: int = 400_000, seed: int = 12345) -> float:
        """Mean positioning time between uniformly random byte offsets [s]."""
        rng = np.random.default_rng(seed)
        a, b = rng.integers(0, self.size_bytes, samples), rng.integers(0, self.size_bytes, samples)
        return float(self.positioning_time_s(a, b).mean())

    def zone_rates_bytes_per_s(self) -> np.ndarray:
        """Sustained sequential rate of each zone [bytes/s]: a track's bytes per revolution and
        the wait of its track changes (what a long read sees), or the interface's where slower."""
        lay, period = self.layout, self.rotation_period_s
        spt = lay.sectors_per_track()
        if lay.order == "conventional":
            per_track = ((lay.surfaces - 1) * self._head_wait + self._cyl_wait) / lay.surfaces
        else:
            per_track = np.full(spt.size, self._cyl_wait)  # bands: nearly every change is a cylinder switch
        rate = spt * lay.sector_bytes / (period + per_track)
        return np.minimum(rate, self.spec.interface_rate_bytes_per_s)

    def media_rate_bytes_per_s(self) -> np.ndarray:
        """Each zone's rate under the head within a track [bytes/s]."""
        return self.layout.sectors_per_track() * self.layout.sector_bytes / self.rotation_period_s

    def zone_bounds_bytes(self) -> np.ndarray:
        b = self.layout.zone_bounds_bytes()
        b[:, 1] = np.minimum(b[:, 1], self.size_bytes)
        return b

    # -- the backend protocol ---------------------------------------------------------
    @property
    def device_time_s(self) -> float:
        return self._clock

    def read(self, offset_bytes: int, length_bytes: int) -> float:
        return float(self.read_many(np.array([operator.index(offset_bytes)], dtype=np.int64), length_bytes)[0])

    def read_many(self, offsets, length_bytes: int) -> np.ndarray:
        """Read LENGTH_BYTES at each offset in turn (queue depth 1); seconds per read."""
        return self._serve(offsets, length_bytes, write=False)

    def write(self, offset_bytes: int, length_bytes: int) -> float:
        return float(self.write_many(np.array([operator.index(offset_bytes)], dtype=np.int64), length_bytes)[0])

    def write_many(self, offsets, length_bytes: int) -> np.ndarray:
        """Write LENGTH_BYTES at each offset in turn; seconds per write (nothing is stored)."""
        return self._serve(offsets, length_bytes, write=True)

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return (f"ReferenceDrive({self.spec.name!r}, size_bytes={self.size_bytes}, "
                f"device_time_s={self._clock:.3f})")

    # -- service ----------------------------------------------------------------------
    def _media_time(self, lba):
        return self.layout.media_time_s(lba, self.rotation_period_s, self._head_wait, self._cyl_wait)

    def _filled_end(self, t: float) -> int:
        """How far the active read-ahead has read by time *t* (bisection on the media time)."""
        _, lo, t0, hi, m0 = self._active
        if t <= t0:
            return lo
        budget = t - t0
        if self._media_scalar(min(hi, self.layout.total_sectors - 1)) - m0 <= budget:
            return hi
        while hi - lo > 1:  # media time of lo - m0 <= budget < media time of hi - m0
            mid = (lo + hi) // 2
            if self._media_scalar(mid) - m0 <= budget:
                lo = mid
            else:
                hi = mid
        return lo

    def _track_scalar(self, lba: int) -> tuple:
        """(cylinder, head) of one block, in plain Python."""
        lay = self.layout
        z = bisect.bisect_right(self._first_lba, lba) - 1
        track = (lba - self._first_lba[z]) // self._spt[z]
        if lay.order == "conventional":
            cyl, head = divmod(track, lay.surfaces)
        else:
            head, step = divmod(track, self._cyls[z])
            cyl = step if head % 2 == 0 else self._cyls[z] - 1 - step
        return self._first_cyl[z] + cyl, head

    def _media_scalar(self, lba: int) -> float:
        """:meth:`_media_time` of one block, in plain Python (the read-ahead's bisection)."""
        lay = self.layout
        z = bisect.bisect_right(self._first_lba, lba) - 1
        spt = self._spt[z]
        rel = lba - self._first_lba[z]
        track, sector = divmod(rel, spt)
        if lay.order == "conventional":
            cyls = track // lay.surfaces
        else:
            cyls = track - track // self._cyls[z]
        return (self._zone_time[z] + track * self.rotation_period_s + (track - cyls) * self._head_wait
                + cyls * self._cyl_wait + sector * self.rotation_period_s / spt)

    def _stop_read_ahead(self, t: float) -> None:
        if self._active is None:
            return
        seg = self._active[0]
        end = self._filled_end(t)
        self._seg[seg][1] = end
        self._cyl, self._head = self._track_scalar(max(end - 1, 0))
        self._active = None

    def _serve(self, offsets, length_bytes, write: bool) -> np.ndarray:
        spec, lay = self.spec, self.layout
        length = check_length(length_bytes, self.block_size_bytes, self.size_bytes)
        offs = check_offsets(offsets, length, self.block_size_bytes, self.size_bytes)
        n = offs.size
        if n == 0:
            return np.empty(0)
        sector = lay.sector_bytes
        first = offs // sector
        count = length // sector
        last = first + count
        _, cyl, head, _, _ = lay.locate(first)
        _, cyl_end, head_end, _, _ = lay.locate(last - 1)
        theta = lay.angle(first)
        m_first, m_last = self._media_time(first), self._media_time(last)
        rng = self._rng
        gaps = spec.host_gap_s + rng.uniform(0.0, spec.host_gap_jitter_s, n)
        seek_noise = 1.0 + spec.seek_noise * rng.standard_normal(n)
        outlier = rng.random(n) < spec.outlier_probability
        delay = np.where(outlier, rng.exponential(spec.outlier_scale_s, n), 0.0)
        timer = spec.timer_noise_s * rng.standard_normal(n)
        bus = length / spec.interface_rate_bytes_per_s
        period, co, hs = self.rotation_period_s, spec.command_overhead_s, spec.head_switch_s
        seg_sectors = spec.segment_bytes // sector
        cache = spec.segments > 0 and seg_sectors > 0
        out = np.empty(n)
        clock = self._clock
        floor = math.floor
        t1, tk, tf, knee = spec.seek_single_s, spec.seek_knee_s, spec.seek_full_s, float(spec.knee_cylinders)
        far = max(lay.cylinders - 1.0, knee + 1.0)
        sqrt = math.sqrt

        def seek(d):  # seek_time_s, in plain Python
            if d <= knee:
                return t1 + (tk - t1) * sqrt((d - 1) / (knee - 1))
            return tk + (tf - tk) * (d - knee) / (far - knee)

        for i in range(n):
            a, e = int(first[i]), int(last[i])
            issue = clock + gaps[i]
            arrive = issue + co
            done = None
            if write:
                self.writes += 1
                self.written_bytes += length
                if self._active is not None:
                    self._stop_read_ahead(arrive)
                self._seg = [s for s in self._seg if s[1] <= a or s[0] >= e]
                if spec.write_cache:
                    done = arrive + bus
            elif cache:
                self._uses += 1
                act = self._active
                for k, s in enumerate(self._seg):
                    if not (s[0] <= a and e <= s[1]):
                        continue
                    if act is not None and act[0] == k:  # ahead of the read-ahead: wait until it is read
                        done = max(arrive, act[2] + (float(m_last[i]) - act[4])) + bus
                    else:
                        done = arrive + bus
                    s[2] = self._uses
                    break
            if done is None:  # a media access
                if self._active is not None:
                    self._stop_read_ahead(arrive)
                dc = abs(int(cyl[i]) - self._cyl)
                if dc:
                    pos = seek(dc) * max(seek_noise[i], 0.0)
                elif int(head[i]) != self._head:
                    pos = hs
                else:
                    pos = 0.0
                ready = arrive + pos
                phase = ready / period
                wait = float(theta[i]) - (phase - floor(phase))
                if wait < 0.0:
                    wait += 1.0
                start = ready + wait * period
                done = max(start + float(m_last[i] - m_first[i]), arrive + bus)
                self._cyl, self._head = int(cyl_end[i]), int(head_end[i])
                if cache and not write:
                    self._uses += 1
                    entry = [a, e, self._uses]
                    if len(self._seg) < spec.segments:
                        self._seg.append(entry)
                        k = len(self._seg) - 1
                    else:
                        k = min(range(len(self._seg)), key=lambda j: self._seg[j][2])
                        self._seg[k] = entry
                    limit = min(a + seg_sectors, lay.total_sectors)
                    if spec.read_ahead and limit > e:
                        self._active = [k, e, done, limit, float(m_last[i])]
                        entry[1] = limit  # the segment's extent; what is read by now is checked by time
            done += delay[i]
            out[i] = max(done - issue + timer[i], 0.0)
            clock = done
        self._clock = clock
        if not write:
            self.reads += n
        return out
