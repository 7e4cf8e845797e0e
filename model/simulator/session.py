"""The per-request drive simulation, stepped: requests served as they arrive, the drive's state
kept between calls.

:func:`~diskmodel.model.simulator.simulate.simulate_requests` runs a whole trace whose arrivals follow from
the completions (each request arrives its gap after the one before completed). An emulated drive
learns of its requests one at a time, at absolute times: :class:`DriveSession` takes the requests
that have arrived so far, serves them one at a time in arrival order (queue depth 1 at the drive: a
request arriving before the last one completed waits for it) and keeps the drive's state for the
next call: the head, the platter's phase (the clock), the buffer's segments, a read-ahead still
running, fast writes still on their way to the media and the queue of prebuffered writes.

It runs the same numba kernel as the whole-trace simulation
(:func:`diskmodel.model.simulator.kernel._simulate`), entered once per call and resuming exactly: the
kernel keeps nothing in its locals that it does not write back to the carried record
(:data:`diskmodel.model.simulator.inputs.CARRIED`) and the working arrays this session owns. The
kernel never looks at a request before it arrives: what the drive does while idle (read-ahead,
background writes) is worked out as timelines when it starts and read at the next arrival, so a
request served now gives the same times as in the whole trace. Served with the arrivals of a
whole-trace run (``arrival_s`` of its result, or each completion plus the gap), the times are
those of :func:`~diskmodel.model.simulator.simulate.simulate_requests`, to the bit.

Pure model code: no I/O and no clocks (times are simulated seconds).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._checks import finite_array, finite_scalar, show, whole_number
from ..drive.parameters import DriveParameters
from .kernel import _simulate
from .state import HitKind
from .inputs import (OUT_ARRIVAL, OUT_COMPLETION, OUT_HIT, OUT_LATENCY, OUT_MEDIA, OUT_ROWS, OUT_SEEK,
                              OUT_SERVICE, check_requests, kernel_inputs, new_carried)

__all__ = ["DEFAULT_MAX_BLOCKS", "DriveSession", "DriveState", "ReadAhead", "Segment", "Served", "ServedMany"]

#: The largest request [512-byte blocks] a session takes unless told otherwise: 32 MiB, past which
#: the NBD protocol has portable clients not go without the server's say (nbdkit-blocksize-filter(1)).
#: The kernel's working arrays are sized for it (inputs.kernel_inputs).
DEFAULT_MAX_BLOCKS = 65536


class Served(NamedTuple):
    """One request as the drive served it [s of simulated time]."""

    #: when the host issued it (as given to :meth:`DriveSession.serve`)
    arrival_s: float
    #: when the drive took it: the arrival, or the last request's completion when that is later
    start_s: float
    completion_s: float
    #: start to completion (``simulate_requests``' ``service_s``)
    service_s: float
    #: how it was served
    hit: HitKind
    #: the first move, the rotational wait for the first block, the rest of the media access (0 for
    #: hits and fast writes: ``SimulationResult``)
    seek_s: float
    latency_s: float
    media_s: float

    @property
    def response_s(self) -> float:
        """Arrival to completion: the service time plus the wait for the request before [s]."""
        return self.completion_s - self.arrival_s


class ServedMany(NamedTuple):
    """Requests as the drive served them, one array element each (the fields of :class:`Served`;
    ``hit`` the :class:`~diskmodel.model.simulator.simulate.HitKind` values as int8)."""

    arrival_s: np.ndarray
    start_s: np.ndarray
    completion_s: np.ndarray
    service_s: np.ndarray
    hit: np.ndarray
    seek_s: np.ndarray
    latency_s: np.ndarray
    media_s: np.ndarray


@dataclass(frozen=True)
class Segment:
    """A buffer segment: blocks ``first_block .. end_block - 1`` (empty when equal)."""

    first_block: int
    end_block: int
    #: holds data written by the host
    written: bool
    #: the arrival of the last request that used it (-inf: never used) [s]
    last_used_s: float
    #: the read-ahead limit it keeps (DiskSim's maxreadaheadblkno; 0: none)
    read_ahead_limit: int


@dataclass(frozen=True)
class ReadAhead:
    """A read-ahead running at the last arrival: blocks ``first_block .. first_block + blocks - 1``
    into *segment*, of which *blocks_done* were in the buffer at the last arrival; it reads its
    last block by *done_s*, unless a request stops it."""

    segment: int
    first_block: int
    blocks: int
    blocks_done: int
    #: the block it cannot be stopped before (DiskSim's minreadaheadblkno)
    minimum_block: int
    done_s: float


@dataclass(frozen=True)
class DriveState:
    """What a :class:`DriveSession`'s drive holds after its last request [s of simulated time]."""

    #: the last request's completion (the session's start before any request)
    clock_s: float
    #: the last request's arrival (a later request may not arrive earlier)
    last_arrival_s: float
    #: where the head is once the known work is done (a read-ahead's start when one runs)
    cylinder: int
    head: int
    #: when the mechanism ends its current (background) work
    mechanism_free_s: float
    #: when the last fast write's data are on the media
    dirty_until_s: float
    read_ahead: ReadAhead | None
    segments: tuple[Segment, ...]
    #: requests served
    requests: int


class DriveSession:
    """A drive serving requests as they arrive, its state kept between calls.

    ``DriveSession(params, start_s=..., start_cylinder=..., start_head=...)``: the drive of a
    :class:`~diskmodel.model.drive.parameters.DriveParameters`, its clock at *start_s* [s] (the
    platter's phase is ``t / T_rot mod 1``), the head at (*start_cylinder*, *start_head*), the
    buffer empty; *max_blocks*: the largest request it will take [blocks] (its working arrays
    are sized for it; :func:`~diskmodel.model.simulator.simulate.simulate_requests` sizes them for its
    trace's longest request, so the two agree to the bit when the sizes agree, and wherever the
    read-ahead and the write queue never fill the smaller ones).

    :meth:`serve` one request, :meth:`serve_many` a batch (the same, faster); arrivals are
    absolute simulated times and never go backwards.
    """

    def __init__(self, params: DriveParameters, *, start_s: float = 0.0, start_cylinder: int = 0,
                 start_head: int = 0, max_blocks: int = DEFAULT_MAX_BLOCKS):
        if not isinstance(params, DriveParameters):
            raise ValueError(f"params must be DriveParameters (got {type(params).__name__})")
        self._params = params
        self._max_blocks = whole_number("max_blocks", max_blocks, minimum=1)
        self._total = int(params.layout.total_blocks)
        self._carried = new_carried(start_s, start_cylinder, start_head, params)
        self._last_arrival_s = float(self._carried[0]["clock_s"])
        self._constant_s = params.constant_access_s
        self._inputs = None if self._constant_s is not None else kernel_inputs(params, self._max_blocks)
        # one request's arrays, reused by serve
        self._one = (np.zeros(1, np.bool_), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1),
                     np.zeros((OUT_ROWS, 1)))
        # the sizes past which a single request needs the whole-array checks (inputs)
        self._segment_blocks = params.segment_size_blocks if params.buffer_segments else None

    @property
    def params(self) -> DriveParameters:
        return self._params

    @property
    def max_blocks(self) -> int:
        return self._max_blocks

    # -----------------------------------------------------------------------------------------
    def serve(self, is_write: bool, lbn: int, blocks: int, arrival_s: float) -> Served:
        """Serve one request arriving at *arrival_s* [s]: a write when *is_write*, of *blocks*
        512-byte blocks from *lbn*. Bad input raises ValueError naming the parameter and the
        value, and leaves the session as it was."""
        if not isinstance(is_write, (bool, np.bool_)):
            raise ValueError(f"is_write must be True or False (got {show(is_write)})")
        lbn = self._whole("lbn", lbn)
        blocks = self._whole("blocks", blocks)
        arrival = finite_scalar("arrival_s", arrival_s, nonnegative=True)
        if lbn < 0:
            raise ValueError(f"lbn must be >= 0 (got {lbn})")
        if blocks < 1:
            raise ValueError(f"blocks must be >= 1 (got {blocks})")
        if blocks > self._max_blocks:
            raise ValueError(f"blocks must be <= max_blocks of the session ({self._max_blocks}; got {blocks})")
        # Python ints: no wrap round
        if lbn + blocks > self._total:
            raise ValueError(f"request {self.requests}: lbn {lbn} + blocks {blocks} ends beyond the last block "
                             f"({self._total})")
        if arrival < self._last_arrival_s:
            raise ValueError(f"arrival_s must not go backwards (got {arrival!r}, after {self._last_arrival_s!r})")
        if self._segment_blocks is not None and blocks > self._segment_blocks:
            # the refusals of requests larger than a segment (inputs.check_requests)
            check_requests(self._params, np.array([bool(is_write)]), np.array([lbn]), np.array([blocks]),
                           self.requests)
        if self._constant_s is not None:
            return self._constant(arrival)
        is_w, lbns, counts, times, out = self._one
        is_w[0] = is_write
        lbns[0] = lbn
        counts[0] = blocks
        times[0] = arrival
        self._run(is_w, lbns, counts, times, out)
        return Served(arrival, float(out[OUT_ARRIVAL, 0]), float(out[OUT_COMPLETION, 0]),
                      float(out[OUT_SERVICE, 0]), HitKind(int(out[OUT_HIT, 0])), float(out[OUT_SEEK, 0]),
                      float(out[OUT_LATENCY, 0]), float(out[OUT_MEDIA, 0]))

    def serve_many(self, is_write, lbn, blocks, arrival_s) -> ServedMany:
        """Serve a batch of requests in order, as :meth:`serve` each (arrays of one value per
        request; *arrival_s* nondecreasing and not before the last request's arrival). Bad input
        raises ValueError naming the parameter and the first bad value, and serves none."""
        is_write, lbn, blocks = check_requests(self._params, is_write, lbn, blocks, self.requests)
        arrival = finite_array("arrival_s", arrival_s, nonnegative=True).ravel()
        n = lbn.size
        if arrival.size != n:
            raise ValueError(f"arrival_s must hold one time per request ({n}; got {arrival.size})")
        if n and blocks.max() > self._max_blocks:
            i = int(np.argmax(blocks > self._max_blocks))
            raise ValueError(f"blocks must be <= max_blocks of the session ({self._max_blocks}; got "
                             f"{int(blocks[i])} at request {self.requests + i})")
        if n:
            previous = np.concatenate(([self._last_arrival_s], arrival[:-1]))
            back = np.flatnonzero(arrival < previous)
            if back.size:
                i = int(back[0])
                raise ValueError(f"arrival_s must not go backwards (got {float(arrival[i])!r} at request "
                                 f"{self.requests + i}, after {float(previous[i])!r})")
        if self._constant_s is not None:
            served = [self._constant(float(a)) for a in arrival]
            return ServedMany(*(np.array([s[k] for s in served], dtype=np.int8 if k == 4 else float)
                                for k in range(len(Served._fields))))
        out = np.zeros((OUT_ROWS, n))
        if n:
            self._run(is_write, lbn, blocks, arrival, out)
        return ServedMany(arrival, out[OUT_ARRIVAL], out[OUT_COMPLETION], out[OUT_SERVICE],
                          out[OUT_HIT].astype(np.int8), out[OUT_SEEK], out[OUT_LATENCY], out[OUT_MEDIA])

    # -----------------------------------------------------------------------------------------
    @property
    def requests(self) -> int:
        """Requests served so far."""
        return int(self._carried[0]["requests"])

    @property
    def state(self) -> DriveState:
        """The drive's state after the last request (a snapshot; :class:`DriveState`)."""
        c = self._carried[0]
        segments: tuple[Segment, ...] = ()
        read_ahead = None
        if self._inputs is not None:
            first, end, written, limit = self._inputs.segments
            used = self._inputs.seg_used
            segments = tuple(Segment(int(first[j]), int(end[j]), bool(written[j]), float(used[j]), int(limit[j]))
                             for j in range(first.size))
            if c["read_ahead_active"]:
                count = int(c["read_ahead_count"])
                read_ahead = ReadAhead(int(c["read_ahead_segment"]), int(c["read_ahead_first"]), count,
                                       int(c["read_ahead_done"]), int(c["read_ahead_minimum"]),
                                       float(self._inputs.pf_ready[count - 1]))
        return DriveState(float(c["clock_s"]), self._last_arrival_s, int(c["cylinder"]), int(c["head"]),
                          float(c["mechanism_free_s"]), float(c["dirty_until_s"]), read_ahead, segments,
                          int(c["requests"]))

    # -----------------------------------------------------------------------------------------
    def _run(self, is_write, lbn, blocks, arrival, out):
        k = self._inputs
        _simulate(k.drive, k.buffer, (is_write, lbn, blocks, arrival), True, out, self._carried)
        self._last_arrival_s = float(arrival[-1])

    def _constant(self, arrival: float) -> Served:
        """DiskSim's driver "Constant access time": every request completes that long after the
        drive takes it, the head staying where it is (simulate._constant_access)."""
        c = self._carried[0]
        start = max(arrival, float(c["clock_s"]))
        done = start + self._constant_s
        c["clock_s"] = done
        c["bus_free_s"] = done
        c["requests"] += 1
        self._last_arrival_s = arrival
        return Served(arrival, start, done, float(self._constant_s), HitKind.MEDIA, 0.0, 0.0, 0.0)

    @staticmethod
    def _whole(name: str, value) -> int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name} must be a whole number as an integer (got {show(value)})")
        return int(value)

