"""The Meter: reads issued to a backend, within a budget of device time.

A :class:`Meter` prices every batch of reads from the reads so far and never
starts one the budget (or its wall-time limit) cannot pay for: it raises
:class:`BudgetExhausted` instead. Every time a backend returns is checked
(:class:`~diskmodel.calibrate.harness.backend.BackendReadError`). The stages
of a calibration (:mod:`diskmodel.calibrate.harness.stages`) read through one.
"""
from __future__ import annotations

import math
import time

import numpy as np

from diskmodel.calibrate.harness.backend import (Backend, BackendReadError, check_backend, checked_read_time,
                                                 checked_read_times)

__all__ = ["BudgetExhausted", "Meter", "chain", "COST_SAFETY", "SLOWEST_ASSUMED_RATE_BYTES_PER_S"]

# Pricing a batch of reads (Meter): the mean cost of a read of its kind so far,
# plus room for one read COST_SAFETY x as slow as the slowest of its kind so far;
# a length never read yet is priced from the nearest shorter one (see
# Meter.cost_estimate), its extra bytes at SLOWEST_ASSUMED_RATE_BYTES_PER_S at most.
COST_SAFETY = 1.5
SLOWEST_ASSUMED_RATE_BYTES_PER_S = 1e6


class BudgetExhausted(Exception):
    """A :class:`Meter` refused to start reads its budget (or its wall-time limit)
    cannot pay for. ``reads``: how many were refused; ``limit``: "budget" or "wall time"."""

    def __init__(self, message: str, *, reads: int = 0, limit: str = "budget"):
        super().__init__(message)
        self.reads = reads
        self.limit = limit



class Meter:
    """Issues reads to a backend and accounts for the device time they take.

    Device time (``spent_s``) is the backend's own ``device_time_s`` where it has
    one (the virtual clock of a simulation), else the sum of the returned read
    times. The budget is charged ``used_s``: the device time, and for backends
    without a virtual clock at least the wall time (a bounded duration).

    With a finite *budget_s* (or *wall_limit_s*) the budget is a hard cap: a
    batch of reads is priced from the reads so far (:meth:`cost_estimate`) and
    not started where the rest of the budget cannot pay for it
    (:class:`BudgetExhausted`, nothing read); near the end a batch is issued in
    smaller pieces, priced again after each, so that a misjudged price stops it
    (:class:`BudgetExhausted`, its reads lost) instead of overrunning. Only the
    very first read, which nothing can price, is started unpriced. Every
    returned time is checked (:class:`BackendReadError`).
    """

    def __init__(self, backend: Backend, *, progress=None, budget_s: float = math.inf,
                 wall_limit_s: float = math.inf):
        check_backend(backend)
        self.backend = backend
        self.size_bytes = int(backend.size_bytes)
        self.block_size_bytes = int(backend.block_size_bytes)
        self.budget_s = float(budget_s)
        self.wall_limit_s = float(wall_limit_s)
        self.reads = 0
        self.bytes_read = 0
        self._sum_s = 0.0
        self._start_device = getattr(backend, "device_time_s", None)
        self.virtual = self._start_device is not None
        self.progress = progress
        self._stats = {}  # (tag, length) -> [reads, charged s, slowest read's charged s]
        self._wall = [0, 0.0, 0.0]  # reads, wall s, slowest per-read wall s of a piece
        self.wall_start = time.perf_counter()

    @property
    def used_s(self) -> float:
        """What the budget is charged: the device time, and for a backend without a
        virtual clock at least the wall time since the start (so that host overheads
        cannot stretch a run on real storage beyond its budget)."""
        if self.virtual:
            return self.spent_s
        return max(self.spent_s, time.perf_counter() - self.wall_start)

    @property
    def spent_s(self) -> float:
        now = getattr(self.backend, "device_time_s", None)
        if now is not None and self._start_device is not None:
            return float(now - self._start_device)
        return self._sum_s

    @property
    def remaining_s(self) -> float:
        """Budget left [s] (infinite without a budget)."""
        return self.budget_s - self.used_s

    @property
    def wall_s(self) -> float:
        """Wall time since the meter was made [s]."""
        return time.perf_counter() - self.wall_start

    # -- pricing ---------------------------------------------------------------
    def cost_estimate(self, length_bytes: int, tag=None):
        """``(mean, slowest)`` charged cost of one read of *length_bytes* [s] from
        the reads so far: those of the same *tag* and length, else of that length
        (the dearest tag), else bounded from the nearest shorter length (its extra
        bytes at that length's mean cost per byte, or at
        SLOWEST_ASSUMED_RATE_BYTES_PER_S, whichever is cheaper); None before the
        first read."""
        length = int(length_bytes)
        stats = self._stats
        if (tag, length) in stats:
            n, total, top = stats[(tag, length)]
            return total / n, top
        if not stats:
            return None
        by_length = {}
        for (_, size), (n, total, top) in stats.items():
            mean0, top0 = by_length.get(size, (0.0, 0.0))
            by_length[size] = (max(mean0, total / n), max(top0, top))
        if length in by_length:
            return by_length[length]
        shorter = [size for size in by_length if size < length]
        if not shorter:  # only longer reads so far: a shorter one costs no more
            return by_length[min(by_length)]
        # From the nearest shorter length L0: a read's cost per byte does not grow with its
        # length (latency + transfer), so the extra bytes cost at most mean(L0) / L0 each; from
        # a short L0 that bound is loose, and the slowest assumed rate is tighter. The slowest
        # read of L0 (a delay, not a rate) is carried over as it is.
        base = max(shorter)
        mean0, top0 = by_length[base]
        extra = (length - base) * min(mean0 / base, 1.0 / SLOWEST_ASSUMED_RATE_BYTES_PER_S)
        return mean0 + extra, top0 + extra

    @staticmethod
    def _how_many(room: float, mean: float, top: float, n: int) -> int:
        """Reads (up to 2n) that *room* pays for: n - 1 at the mean, one at COST_SAFETY x the slowest."""
        if not room > 0:
            return 0
        if math.isinf(room):
            return 2 * n
        tail = max(COST_SAFETY * top - mean, 0.0)
        if mean <= 0:
            return 2 * n if room >= tail else 0
        return int(min(max((room - tail) // mean, 0), 2 * n))

    def _limits(self, n: int, length_bytes: int, tag=None):
        """Reads (up to 2n) that the budget, and that the wall-time limit, pay for now
        (None: nothing is known to price them by, no read yet)."""
        est = self.cost_estimate(length_bytes, tag)
        if est is None:  # the first read of all: nothing prices it, in device or in wall time
            return None, None
        wall_room = self.wall_limit_s - self.wall_s
        by_budget = self._how_many(self.remaining_s, est[0], est[1], n)
        by_wall = 2 * n
        if not math.isinf(self.wall_limit_s):
            reads, wall, top = self._wall
            by_wall = self._how_many(wall_room, wall / reads, top, n) if reads else (2 * n if wall_room > 0 else 0)
        return by_budget, by_wall

    def affordable(self, n: int, length_bytes: int, tag=None) -> int | None:
        """How many (up to 2n) reads of this kind the budget and the wall-time limit
        pay for now; None where nothing is known to price them by (no read yet)."""
        n = int(n)
        if math.isinf(self.budget_s) and math.isinf(self.wall_limit_s):
            return 2 * n
        by_budget, by_wall = self._limits(n, length_bytes, tag)
        if by_budget is None:
            return None
        return min(by_budget, by_wall)

    def can_afford(self, n: int, length_bytes: int, tag=None) -> bool:
        """Whether a batch of *n* reads would be started now."""
        k = self.affordable(n, length_bytes, tag)
        return k is None or k >= n

    def _refuse(self, n: int, length: int, tag, started: bool):
        est = self.cost_estimate(length, tag)
        by_budget, by_wall = self._limits(n, length, tag)
        price = "" if est is None else f" (about {n * est[0] + max(COST_SAFETY * est[1] - est[0], 0):.3g} s)"
        what = f"{n} {'more ' if started else ''}reads of {length} bytes{price}"
        if by_wall is not None and (by_budget is None or by_wall < by_budget):
            raise BudgetExhausted(f"the wall-time limit of {self.wall_limit_s:g} s ({self.wall_s:.3g} s passed) "
                                  f"cannot pay for {what}", reads=n, limit="wall time")
        raise BudgetExhausted(f"the budget of {self.budget_s:g} s of device time ({max(self.remaining_s, 0):.3g} s "
                              f"left) cannot pay for {what}", reads=n, limit="budget")

    # -- reading ---------------------------------------------------------------
    def read_many(self, offsets, length_bytes: int, *, tag=None) -> np.ndarray:
        """Read *length_bytes* at each offset in turn; the times [s]. *tag* names the
        kind of read (a stage) for pricing. Raises :class:`BudgetExhausted` rather
        than overrun the budget, :class:`BackendReadError` on a bad read."""
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        length = int(length_bytes)
        n = offsets.size
        pieces = []
        i = 0
        while i < n:
            rest = n - i
            k = self.affordable(rest, length, tag)
            if k is None:
                step = 1  # the first read of all: it prices the next
            elif k < rest and (i == 0 or k < 1):
                self._refuse(rest, length, tag, started=i > 0)
            else:
                # the whole rest where the budget pays for it twice over, else half of what it pays for
                step = rest if k >= 2 * rest else max(1, k // 2)
            pieces.append(self._issue(offsets[i:i + step], length, tag))
            i += step
        if not pieces:
            return np.empty(0, dtype=float)
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def read(self, offset: int, length_bytes: int, *, tag=None) -> float:
        return float(self.read_many([offset], length_bytes, tag=tag)[0])

    def _issue(self, offsets: np.ndarray, length: int, tag) -> np.ndarray:
        n = offsets.size
        before = self.used_s
        wall0 = time.perf_counter()
        if hasattr(self.backend, "read_many"):
            try:
                raw = self.backend.read_many(offsets, length)
            except Exception as exc:
                where = f"offset {offsets[0]}" if n == 1 else f"offsets {offsets[0]} .. {offsets[-1]} ({n} reads)"
                raise BackendReadError(f"backend read_many at {where} (length {length}) raised "
                                       f"{type(exc).__name__}: {exc}") from exc
            t = checked_read_times(raw, offsets, length)
        else:
            t = np.array([checked_read_time(self._read_one(o, length), o, length) for o in offsets.tolist()])
        self.reads += n
        self.bytes_read += n * length
        self._sum_s += float(t.sum())
        wall = time.perf_counter() - wall0
        charged = max(self.used_s - before, 0.0)
        total = float(t.sum())
        cost = t * (charged / total) if total > 0 else np.full(n, charged / n)
        entry = self._stats.setdefault((tag, length), [0, 0.0, 0.0])
        entry[0] += n
        entry[1] += charged
        entry[2] = max(entry[2], float(cost.max()))
        self._wall[0] += n
        self._wall[1] += wall
        self._wall[2] = max(self._wall[2], wall / n)
        if self.progress is not None:
            self.progress.update(charged)
        return t

    def _read_one(self, offset: int, length: int):
        try:
            return self.backend.read(offset, length)
        except Exception as exc:
            raise BackendReadError(f"backend read at offset {offset} (length {length}) raised "
                                   f"{type(exc).__name__}: {exc}") from exc

    def can_idle(self) -> bool:
        """Whether :meth:`idle` can leave the device alone: a backend with its own ``idle`` (a
        virtual clock's), or one without a virtual clock (real time passes for it too)."""
        return hasattr(self.backend, "idle") or not self.virtual

    def idle(self, seconds: float) -> None:
        """Leave the device without a request for *seconds* [s] (a drive's read-ahead runs on
        meanwhile, where a request, even a buffer hit, can stop it), charged to the budget:
        :class:`BudgetExhausted` where the rest of the budget (or of the wall time) cannot pay."""
        seconds = float(seconds)
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite number >= 0 (got {seconds!r})")
        if seconds > self.remaining_s or seconds > self.wall_limit_s - self.wall_s:
            raise BudgetExhausted(f"the budget ({max(self.remaining_s, 0):.3g} s left) cannot pay for "
                                  f"{seconds:.3g} s of idle time", reads=0)
        before = self.used_s
        if hasattr(self.backend, "idle"):
            self.backend.idle(seconds)
        elif self.virtual:
            raise ValueError("a backend with a virtual clock and no idle() cannot be left idle")
        else:
            time.sleep(seconds)
            self._sum_s += seconds
        if self.progress is not None:
            self.progress.update(max(self.used_s - before, 0.0))

    def align(self, offsets) -> np.ndarray:
        b = self.block_size_bytes
        return (np.asarray(offsets, dtype=np.int64) // b) * b


class ChainDoesNotFit(ValueError):
    """A chain of reads longer than the device: a measurement that needs it cannot be made here."""


def chain(meter: Meter, start: int, step_blocks: int, reads: int, tag: str) -> np.ndarray:
    """Times of a chain ``start, start + step, ..`` (step in blocks, may be negative): *reads*
    timed reads after one untimed (which puts the head there). Here, not in mechanics, because
    both mechanics and head_switch read chains and mechanics imports head_switch."""
    b = meter.block_size_bytes
    steps = np.arange(reads + 1, dtype=np.int64) * (step_blocks * b)
    room = meter.size_bytes - b - (int(steps.max()) - int(steps.min()))
    if room <= 0:
        raise ChainDoesNotFit(f"a chain of {reads + 1} reads {step_blocks} blocks apart does not fit the device")
    low = start + int(steps.min())
    if low < 0 or low >= room:  # off the device: wrapped round onto it
        start = (low % room) // b * b - int(steps.min())
    return meter.read_many(start + steps, b, tag=tag)[1:]
