"""Measurements of a device through any backend, within a budget of device time.

A backend is any object with ``size_bytes``, ``block_size_bytes`` and
``read(offset_bytes, length_bytes) -> seconds`` (optionally the vectorised
``read_many(offsets, length_bytes) -> ndarray`` and ``device_time_s``):
the real O_DIRECT backend (:mod:`diskmodel.calibrate.harness.device`), the simulated
disk (:mod:`diskmodel.calibrate.harness.simulated`) or a user's own
(:func:`backend_from_spec`, ``--backend MODULE:FACTORY``).

The measurements, each a function of a :class:`Meter`:

* :func:`measure_rotation`: the rotation period and the minimum per-request
  time from the sawtooth of read-after-read times against a forward stride
  (Skippy, Talagala et al. 2000). Reading block ``o`` then ``o + s`` takes
  ``s x - g + T_rot`` while the second block has already passed when the
  drive is ready, and ``s x - g`` once it has not (x: the time a block takes
  to pass under the head, g: the host's gap between the reads). The stride
  of the drop is found by doubling and bisection; then, a guard away from it
  on both sides (where the host's jitter cannot decide the branch), one
  regression ``d(s) = a + x s + T_rot [miss]`` gives T_rot whatever g and the
  command overhead are. A start point whose strides crossed onto another
  track (a broken line) is dropped; the period is the median over start
  points spread over the device, and is refined with x from the measured
  zone rate where that is the media rate (:func:`refine_rotation`). Where no
  drop appears (flash), there is no rotation.
* :func:`measure_zones`: zcav-like transfer rates at locations spread over the
  whole device (visited in bit-reversed order, so that any prefix is spread):
  a read of L bytes and of one block, each issued right after a read of the
  same first block (so that both wait the same, almost full, revolution),
  differ by the transfer of L - 1 block; repeats until they agree. Zone
  boundaries by change-point detection
  (:func:`diskmodel.calibrate.harness.fit.segment_rates`).
* :func:`measure_seek`: timed pairs of reads at chosen distances (geometric
  from a few blocks to the whole device), each pair from a start point drawn
  uniformly over the device, in random order, in rounds repeated until the
  budget is spent. Every read is kept with where it came from.

:func:`calibrate` runs them all, fits, checks, and returns a
:class:`diskmodel.calibrate.harness.results.CalibrationResult`.

The budget is a hard cap: the :class:`Meter` prices every batch of reads from
the reads so far and never starts one the budget cannot pay for
(:class:`BudgetExhausted`); each stage has a minimum (the ``*_MIN_*``
constants below, which :func:`minimum_reads` counts), and a budget too small
for the minimums is refused with :class:`BudgetTooSmall`, up front after a
probe of a few reads where it can be seen then. A backend's read that fails,
or returns anything but a finite time >= 0, stops the calibration with
:class:`BackendReadError`.
"""
from __future__ import annotations

import importlib
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "BackendProtocolError", "BackendReadError", "BudgetTooSmall", "BudgetExhausted", "Meter",
    "RotationMeasurement", "ZoneMeasurement", "SeekMeasurement", "check_backend", "backend_from_spec",
    "measure_rotation", "refine_rotation", "measure_zones", "measure_seek", "zones_from_profile",
    "seek_distances", "minimum_reads", "calibrate", "WALL_TIME_MULTIPLE", "FIT_ALLOWANCE_S",
]

MIB = 1 << 20

# ---------------------------------------------------------------------------
# The stages' minimums: used by the stages themselves (as their defaults) and
# by minimum_reads(), which prices the smallest calibration. One place only.
# ---------------------------------------------------------------------------

PROBE_READS = 8                   # one-block reads spread over the device, timed before the stages
ROTATION_MIN_STARTS = 4           # start points of the sawtooth, whatever the budget
ROTATION_REPEATS = 3              # timed repeats of each read-after-read pair (after one untimed)
ROTATION_MAX_STRIDE_BYTES = 8 * MIB
ZONE_PILOT_REPEATS = 3            # pairs of the pilot rate near the start
ZONE_MIN_LOCATIONS = 16           # zcav locations, whatever the budget
ZONE_REPEATS = 2                  # pairs (one block, long read) per location
ZONE_MIN_TRANSFER_S = 0.02        # a zone read is long enough to transfer for at least this long
SEEK_DISTANCES = 48               # design distances of the seek curve
SEEK_MIN_ROUNDS = 3               # rounds of one pair per distance, whatever the budget

# Wall time. The budget is device time. On a backend without a virtual clock the
# Meter charges the budget at least the wall time since the start, so there the
# measurement also ends within budget_s of wall time. A virtual clock (a
# simulation) has no such tie to the wall clock: a slow simulator could take any
# wall time for its device time. So on every backend the Meter starts no read
# once WALL_TIME_MULTIPLE x budget_s of wall time has passed (priced like the
# device time): 2, because a simulation normally runs far faster than its
# virtual clock (the presets ~50x) and a real backend's host overhead is charged
# already, so the cap bites only on a backend more than twice as slow as the
# device it models, while a run's wall time stays predictable from its budget.
# The fitting and the checks after the measurement take a few seconds more
# (FIT_ALLOWANCE_S: what the stated bound allows for them; they are not cut off).
WALL_TIME_MULTIPLE = 2.0
FIT_ALLOWANCE_S = 10.0

# Pricing a batch of reads (Meter): the mean cost of a read of its kind so far,
# plus room for one read COST_SAFETY x as slow as the slowest of its kind so far;
# a length never read yet is priced from the nearest shorter one (see
# Meter.cost_estimate), its extra bytes at SLOWEST_ASSUMED_RATE_BYTES_PER_S at most.
COST_SAFETY = 1.5
SLOWEST_ASSUMED_RATE_BYTES_PER_S = 1e6


class BackendProtocolError(ValueError):
    """An object is not a backend: the message says which part of the protocol it misses."""


class BackendReadError(BackendProtocolError, RuntimeError):
    """A backend's read failed or returned something other than a finite time >= 0.

    The message names the offset, the length and what came back (or what was
    raised). A :class:`BackendProtocolError` (so a ``ValueError``: the command
    line prints it as one line) and a ``RuntimeError``."""


def _round_up(x: float) -> float:
    """*x* rounded up to two significant digits (a minimum one may quote)."""
    if not math.isfinite(x) or x <= 0:
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return float(f"{math.ceil(x / step * (1 - 1e-12)) * step:.2g}")


class BudgetTooSmall(ValueError):
    """The budget cannot pay for one calibration of this device.

    ``budget_s`` is the budget given, ``minimum_s`` the device time one
    calibration needs at least (estimated from the reads timed so far, rounded
    up to two digits); ``reads`` and ``per_read_s`` are what the estimate is
    made of (the minimum read count, the time of one read)."""

    def __init__(self, budget_s: float, minimum_s: float, *, reads: int | None = None,
                 per_read_s: float | None = None, long_reads: int = 0, why: str = ""):
        self.budget_s = budget_s
        self.minimum_s = _round_up(float(minimum_s))
        self.reads = reads
        self.per_read_s = per_read_s
        parts = []
        if reads is not None and per_read_s is not None:
            made = f"{reads} reads of about {per_read_s:.2g} s each"
            if long_reads:
                made += f", {long_reads} of them also transferring for >= {ZONE_MIN_TRANSFER_S:g} s"
            parts.append(made)
        if why:
            parts.append(why)
        made = f" ({'; '.join(parts)})" if parts else ""
        super().__init__(f"budget_s={budget_s:g} is too small: one calibration needs at least "
                         f"~{self.minimum_s:g} s of device time on this device{made}; "
                         f"raise it to at least {self.minimum_s:g}")

    def __reduce__(self):
        return (_budget_too_small, (self.__class__, self.args, self.__dict__))


def _budget_too_small(cls, args, state):
    exc = Exception.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class BudgetExhausted(Exception):
    """A :class:`Meter` refused to start reads its budget (or its wall-time limit)
    cannot pay for. ``reads``: how many were refused; ``limit``: "budget" or "wall time"."""

    def __init__(self, message: str, *, reads: int = 0, limit: str = "budget"):
        super().__init__(message)
        self.reads = reads
        self.limit = limit


def _check_budget(budget_s) -> float:
    """*budget_s* as a float, or ValueError naming it (before any read)."""
    if isinstance(budget_s, (bool, np.bool_)) or not isinstance(budget_s, (int, float, np.integer, np.floating)):
        raise ValueError(f"budget_s must be a number of seconds > 0 (got {budget_s!r} of type "
                         f"{type(budget_s).__name__})")
    budget = float(budget_s)
    if not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget_s must be a finite number of seconds > 0 (got {budget_s!r})")
    return budget


def check_backend(backend) -> None:
    """Raise :class:`BackendProtocolError` unless *backend* follows the protocol."""
    name = type(backend).__name__
    for attr in ("size_bytes", "block_size_bytes"):
        if not hasattr(backend, attr):
            raise BackendProtocolError(f"backend {name} has no attribute {attr!r} (a backend needs size_bytes, "
                                       "block_size_bytes and read(offset_bytes, length_bytes) -> seconds)")
        value = getattr(backend, attr)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise BackendProtocolError(f"backend {name}.{attr} must be a positive int (got {value!r})")
    if backend.size_bytes % backend.block_size_bytes:
        raise BackendProtocolError(f"backend {name}: size_bytes={backend.size_bytes} is not a multiple of "
                                   f"block_size_bytes={backend.block_size_bytes}")
    if not callable(getattr(backend, "read", None)):
        raise BackendProtocolError(f"backend {name} has no method read(offset_bytes, length_bytes) -> seconds")
    if hasattr(backend, "read_many") and not callable(backend.read_many):
        raise BackendProtocolError(f"backend {name}.read_many is not callable")


def backend_from_spec(spec: str):
    """Import MODULE and call FACTORY() for a ``MODULE:FACTORY`` spec; check the result."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise BackendProtocolError(f"backend must be given as MODULE:FACTORY (got {spec!r})")
    module_name, factory_name = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendProtocolError(f"backend {spec!r}: cannot import module {module_name!r} "
                                   f"from the Python path ({exc})") from None
    except Exception as exc:  # the module ran and failed: say so in one line, not a traceback
        raise BackendProtocolError(f"backend {spec!r}: importing module {module_name!r} raised "
                                   f"{type(exc).__name__}: {exc}") from exc
    factory = module
    for part in factory_name.split("."):
        if not hasattr(factory, part):
            raise BackendProtocolError(f"backend {spec!r}: module {module_name!r} has no {factory_name!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise BackendProtocolError(f"backend {spec!r}: {factory_name!r} is not callable")
    try:
        backend = factory()
    except Exception as exc:
        raise BackendProtocolError(f"backend {spec!r}: {factory_name}() raised {type(exc).__name__}: {exc}") from exc
    check_backend(backend)
    return backend


def _bad_time(value, offset: int, length: int) -> BackendReadError:
    try:
        shown = f"{float(value):g} s"
    except (TypeError, ValueError):
        shown = f"{value!r} (a {type(value).__name__})"
    return BackendReadError(f"backend read at offset {offset} (length {length}) returned {shown}: "
                            "a read time must be finite and >= 0")


def _checked_time(value, offset: int, length: int) -> float:
    """One read's time as a float, or :class:`BackendReadError` naming the offset and the value."""
    array = np.asarray(value) if isinstance(value, (int, float, np.number, np.ndarray)) else None
    if array is None or array.ndim != 0 or array.dtype.kind not in "iuf":
        raise BackendReadError(f"backend read at offset {offset} (length {length}) returned {value!r} "
                               f"(a {type(value).__name__}): a read time must be a number of seconds")
    number = float(array)
    if not math.isfinite(number) or number < 0:
        raise _bad_time(value, offset, length)
    return number


def _checked_times(value, offsets: np.ndarray, length: int) -> np.ndarray:
    """read_many's times as floats, or :class:`BackendReadError` naming the first bad one's offset."""
    try:
        array = np.asarray(value)
    except Exception:
        array = None
    if array is not None and array.dtype.kind not in "iuf" and array.shape == offsets.shape:
        for j, item in enumerate(array.tolist()):  # name the first read whose time is not a number
            _checked_time(value[j] if isinstance(value, (list, tuple)) else item, int(offsets[j]), length)
    if array is None or array.dtype.kind not in "iuf":
        raise BackendReadError(f"backend read_many at offsets {offsets[0]} .. {offsets[-1]} (length {length}) "
                               f"returned {value!r:.80}: read times must be numbers of seconds")
    if array.shape != offsets.shape:
        raise BackendReadError(f"backend read_many at offsets {offsets[0]} .. {offsets[-1]} (length {length}) "
                               f"returned {array.size} times for {offsets.size} reads")
    t = array.astype(float)
    bad = ~np.isfinite(t) | (t < 0)
    if bad.any():
        j = int(np.argmax(bad))
        raise _bad_time(t[j], int(offsets[j]), length)
    return t


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

    def __init__(self, backend, *, progress=None, budget_s: float = math.inf, wall_limit_s: float = math.inf):
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
            t = _checked_times(raw, offsets, length)
        else:
            t = np.array([_checked_time(self._read_one(o, length), o, length) for o in offsets.tolist()])
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

    def align(self, offsets) -> np.ndarray:
        b = self.block_size_bytes
        return (np.asarray(offsets, dtype=np.int64) // b) * b


# ---------------------------------------------------------------------------
# Rotation period and minimum overhead
# ---------------------------------------------------------------------------

@dataclass
class RotationMeasurement:
    """Rotation period [s] (None where no rotation shows), its spread over the
    start points, the minimum time of a one-block read [s] (command overhead and
    the block's transfer: the sawtooth's floor) and the time a block takes to
    pass under the head [s]."""

    period_s: float | None
    period_bse_s: float | None
    period_samples_s: list
    overhead_s: float | None
    block_transfer_s: float | None
    starts_bytes: list
    detail: str
    reads: int = 0
    transfer_samples_s: list = field(default_factory=list)
    raw: list = field(default_factory=list)  # (start, strides, miss flags, times, d(s_hi)) per start point
    used_s: float = 0.0
    stopped: str = ""  # where the budget cut the stage short beyond its minimum ("" where it did not)


def _max_stride_blocks(size_bytes: int, block_size_bytes: int, max_stride_bytes: int) -> int:
    """The longest stride of the rotation stage [blocks]."""
    return max(1, min(max_stride_bytes, size_bytes // 16) // block_size_bytes)


def measure_rotation(meter: Meter, rng: np.random.Generator, *, budget_s: float, starts: int = 8,
                     repeats: int = ROTATION_REPEATS, max_stride_bytes: int = ROTATION_MAX_STRIDE_BYTES,
                     min_drop_s: float = 1e-3, guard_s: float = 100e-6, misfit_s: float = 50e-6,
                     min_starts: int = ROTATION_MIN_STARTS) -> RotationMeasurement:
    """Rotation period from the sawtooth of read-after-read times (see module doc).

    At least *min_starts* start points, more while *budget_s* lasts. Where the
    meter's budget runs out (:class:`BudgetExhausted`) beyond them, the start
    point under way is dropped and the detail says so; before them, the
    exception is passed on."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    max_stride = _max_stride_blocks(size, b, max_stride_bytes)
    spent0 = meter.used_s
    reads0 = meter.reads
    # Start points spread over the device; a second set (interleaved) is used only
    # where too few of the first gave a clean sawtooth.
    n_points = 2 * starts
    grid = (np.arange(n_points) + rng.uniform(0.1, 0.9, n_points)) / n_points
    order = np.concatenate((np.arange(0, n_points, 2), np.arange(1, n_points, 2)))
    points = meter.align(grid[order] * max(size - (2 * max_stride + 2) * b, b))

    def pair(o: int, s: int) -> float:
        offs = np.tile(np.array([o, o + s * b], dtype=np.int64), repeats + 1)
        t = meter.read_many(offs, b, tag="rotation")
        return float(np.median(t[3::2]))

    def sawtooth(o: int):
        """(whether a drop showed, (period, overhead, transfer, raw) or None) at start point *o*."""
        d0 = pair(o, 0)
        cache = {0: d0}

        def d(s):
            if s not in cache:
                cache[s] = pair(o, s)
            return cache[s]

        s_lo, s_hi = 0, None
        s = 1
        while s <= max_stride:
            if d(s) < 0.5 * d0 and d0 - d(s) > min_drop_s:
                s_hi = s
                break
            s_lo = s
            s *= 2
        if s_hi is None:
            return False, None
        while s_hi - s_lo > 1:
            mid = (s_lo + s_hi) // 2
            if d(mid) > 0.5 * (d(s_lo) + d(s_hi)):
                s_lo = mid
            else:
                s_hi = mid
        k = max(2, s_hi // 2)
        if s_hi + k > max_stride:
            return True, None
        x0 = (d(s_hi + k) - d(s_hi)) / k
        if not 0 < x0 < 0.25 * d0:
            return True, None
        # Near the drop, whether the sector is caught depends on the host's gap of
        # that read: the reads caught there are those with a short gap, which biases
        # both sides. Step away from the drop by guard_s worth of strides each side.
        m = int(min(max(1, math.ceil(guard_s / x0)), 256))
        s_a, s_b = max(0, s_lo - m), s_hi + m
        q = max(m, s_b // 2)
        if s_b + 4 * q > max_stride:
            return True, None
        # Both branches, a guard away from the drop: d(s) = a + x s + T_rot [miss].
        # One regression with a common slope over the whole span (the high branch
        # spans 4q strides, so that the slope is well determined).
        low = sorted({s_a, s_a // 2, 0})
        high = [s_b + j * q for j in range(5)]
        ss = np.array(low + high, dtype=float)
        miss = np.array([1.0] * len(low) + [0.0] * len(high))
        dd = np.array([d(int(v)) for v in ss])
        X = np.column_stack((np.ones_like(ss), ss, miss))
        coef, *_ = np.linalg.lstsq(X, dd, rcond=None)
        x, period = float(coef[1]), float(coef[2])
        # A stride that crossed onto another track (skew, head switch) breaks the
        # straight line: such a start point is dropped.
        if not 0 < x < 0.25 * d0 or np.max(np.abs(dd - X @ coef)) > misfit_s:
            return True, None
        return True, (period, d(s_hi) - 0.5 * x, x, (o, ss.tolist(), miss.tolist(), dd.tolist(), d(s_hi)))

    periods, overheads, transfers, raw = [], [], [], []
    drops = no_drops = attempted = 0
    stopped = ""
    for o in points.tolist():
        over = meter.used_s - spent0 > budget_s
        if attempted >= min_starts and (over or (attempted >= starts and len(periods) >= (starts + 1) // 2)):
            break
        if attempted >= starts and no_drops > drops:
            break  # the second set is for sawtooths spoilt by track crossings, not for flash
        try:
            dropped, sample = sawtooth(o)
        except BudgetExhausted as exc:
            if attempted < min_starts:
                raise
            stopped = f"; stopped at start point {attempted + 1}: the {exc.limit} ran out"
            break
        attempted += 1
        if not dropped:
            no_drops += 1
            continue
        drops += 1
        if sample is not None:
            periods.append(sample[0])
            overheads.append(sample[1])
            transfers.append(sample[2])
            raw.append(sample[3])
    used = meter.used_s - spent0
    points = points[:attempted].tolist()
    if drops <= no_drops or len(periods) < 2:
        why = (f"no rotation: the read-after-read time showed no drop of >= {min_drop_s * 1e3:g} ms against "
               f"stride at {no_drops} of {attempted} start points (strides up to {max_stride * b} bytes)")
        if drops > no_drops:
            why = (f"no rotation period: a drop showed at {drops} of {attempted} start points, but only "
                   f"{len(periods)} gave a clean sawtooth (budget or track crossings)")
        return RotationMeasurement(None, None, periods, None, None, points, why + stopped, meter.reads - reads0,
                                   used_s=used, stopped=stopped)
    return _rotation_from(periods, overheads, transfers, raw, points, attempted, used, meter.reads - reads0,
                          "block transfer time from the common slope of the sawtooth", stopped)


def _rotation_from(periods, overheads, transfers, raw, points, starts, used, reads, how, stopped=""):
    p = np.asarray(periods)
    period = float(np.median(p))
    bse = float(1.2533 * p.std(ddof=1) / np.sqrt(p.size))
    return RotationMeasurement(
        period, bse, p.tolist(), float(np.median(overheads)), float(np.median(transfers)), points,
        f"clean sawtooth at {len(periods)} of {starts} start points: period {period * 1e3:.4f} ms "
        f"({60 / period:.1f} rpm), spread {p.std(ddof=1) * 1e6:.2f} us ({how}); {used:.2f} s of budget{stopped}",
        reads, list(transfers), raw, used, stopped)


def refine_rotation(rotation: RotationMeasurement, block_size_bytes: int, rate_at) -> RotationMeasurement:
    """The period again, with each start point's block transfer time from the
    measured transfer rate there (``rate_at(offsets) -> bytes/s``), far more
    precise than the sawtooth's own slope."""
    if rotation.period_s is None or not rotation.raw:
        return rotation
    o = np.array([r[0] for r in rotation.raw])
    x = block_size_bytes / np.asarray(rate_at(o), dtype=float)
    slope = np.asarray(rotation.transfer_samples_s, dtype=float)
    # Only where the rate is the media rate: a slower interface makes a block's read
    # longer than its sector's passage under the head, and the slope is then the truth.
    x = np.where(np.abs(slope / x - 1) < 0.25, x, slope)
    periods = []
    for (_, ss, miss, dd, _), xi in zip(rotation.raw, x):
        ss, miss, dd = np.asarray(ss), np.asarray(miss, dtype=bool), np.asarray(dd)
        r = dd - xi * ss
        periods.append(float(r[miss].mean() - r[~miss].mean()))
    overheads = [dh - 0.5 * xi for (*_, dh), xi in zip(rotation.raw, x)]
    return _rotation_from(periods, overheads, x.tolist(), rotation.raw, rotation.starts_bytes,
                          len(rotation.starts_bytes), rotation.used_s, rotation.reads,
                          "block transfer time from the zone rate at each start point", rotation.stopped)


# ---------------------------------------------------------------------------
# Zone transfer rates
# ---------------------------------------------------------------------------

@dataclass
class ZoneMeasurement:
    """Transfer rates [bytes/s] at locations [bytes], the read length used, and
    the zones found: (start_byte, end_byte, rate_bytes_per_s) covering the device."""

    locations_bytes: np.ndarray
    rates_bytes_per_s: np.ndarray
    read_length_bytes: int
    zones: list
    repeats_rates: np.ndarray  # (locations, repeats)
    detail: str
    reads: int = 0


def _rate_at(meter: Meter, o: int, length: int, repeats: int, agree: float = 0.005,
             max_repeats: int = 5) -> np.ndarray:
    """Rates from *repeats* pairs of reads at *o*; while the spread of the rates
    exceeds *agree* (relative; an outlier, e.g. an interrupt), one more pair, up
    to *max_repeats* (the median then rejects the outlier). Returns *repeats*
    values: the median of all pairs in place of the outlying ones."""
    b = meter.block_size_bytes
    rates = []
    while True:
        small = meter.read_many([o, o], b, tag="zones")[1]
        big = meter.read(o, length, tag="zones")
        rates.append((length - b) / (big - small) if big > small else np.nan)
        if len(rates) < repeats:
            continue
        r = np.asarray(rates)
        good = r[np.isfinite(r)]
        spread = (good.max() - good.min()) / np.median(good) if good.size >= 2 else np.inf
        if spread <= agree or len(rates) >= max_repeats:
            break
        if not (meter.can_afford(2, b, "zones") and meter.can_afford(1, length, "zones")):
            break  # one more pair, only to reject an outlier, where the budget still pays for it
    r = np.asarray(rates)
    if len(rates) > repeats and np.isfinite(r).any():
        med = float(np.nanmedian(r))
        r = r[np.argsort(np.abs(np.nan_to_num(r, nan=np.inf) - med))][:repeats]
    return r[:repeats]


def zones_from_profile(locations, rates, size_bytes: int, block_size_bytes: int) -> list:
    """Zones covering [0, size_bytes) from a rate profile by change-point detection:
    boundaries halfway between the last location of a segment and the first of the next."""
    from diskmodel.calibrate.harness.fit import segment_rates

    loc = np.asarray(locations, dtype=float)
    rate = np.asarray(rates, dtype=float)
    ok = np.isfinite(rate) & (rate > 0)
    loc, rate = loc[ok], rate[ok]
    if loc.size == 0:
        raise ValueError("rates: no valid transfer rate was measured")
    segments = segment_rates(loc, rate)
    zones = []
    start = 0
    for i, seg in enumerate(segments):
        if i + 1 < len(segments):
            end = int((loc[seg].max() + loc[segments[i + 1]].min()) / 2) // block_size_bytes * block_size_bytes
        else:
            end = size_bytes
        zones.append((start, end, float(np.median(rate[seg]))))
        start = end
    return [z for z in zones if z[1] > z[0]]


def measure_zones(meter: Meter, rng: np.random.Generator, *, budget_s: float,
                  rotation_period_s: float | None, repeats: int = ZONE_REPEATS,
                  min_locations: int = ZONE_MIN_LOCATIONS, max_locations: int = 512) -> ZoneMeasurement:
    """zcav-like transfer rates at locations spread over the device, and zone boundaries.

    At least *min_locations* locations, more while *budget_s* lasts. Where the
    meter's budget runs out (:class:`BudgetExhausted`) beyond them, the location
    under way is dropped and the detail says so; before them, the exception is
    passed on."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    spent0, reads0 = meter.used_s, meter.reads
    # Pilot: the rate near the start, from reads long enough to stand out of the
    # latency noise (doubled until they do, up to an eighth of the device).
    pilot_len = max(2 * b, min(MIB, size // 16) // b * b)
    while True:
        trials = _rate_at(meter, 0, pilot_len, ZONE_PILOT_REPEATS)
        good = trials[np.isfinite(trials)]
        if good.size >= 2:
            pilot = float(np.median(good))
            break
        if 2 * pilot_len > size // 8:
            raise ValueError(f"could not measure a transfer rate: reading {pilot_len} bytes took no longer "
                             "than reading one block (is the target cached, or are its reads not timed?)")
        pilot_len *= 2
    # A read long enough that a revolution of difference in waiting, or the host's
    # jitter, is small against its transfer time.
    target_s = max(ZONE_MIN_TRANSFER_S, 5 * (rotation_period_s or 0.0))
    length = int(min(max(pilot * target_s, 8 * b), size // 8)) // b * b
    length = max(length, 2 * b)
    # A grid of max_locations cells visited in bit-reversed (van der Corput) order:
    # whenever the budget runs out, the locations measured are spread evenly.
    k = int(min(max_locations, max(size // length, 1)))
    bits = max(1, int(math.ceil(math.log2(k))))
    order = [int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits)]
    order = [i for i in order if i < k]
    locs = meter.align((np.arange(k) + rng.uniform(0.05, 0.95, k)) / k * (size - length))
    rates = np.full((k, repeats), np.nan)
    done = np.zeros(k, dtype=bool)
    stopped = ""
    for n, i in enumerate(order):
        if n >= min_locations and meter.used_s - spent0 > budget_s:
            break
        try:
            rates[i] = _rate_at(meter, int(locs[i]), length, repeats)
        except BudgetExhausted as exc:
            if n < min_locations:
                raise
            stopped = f"; stopped at location {n + 1}: the {exc.limit} ran out"
            break
        done[i] = True
    locs, rates = locs[done], rates[done]
    if np.all(np.isnan(rates)):
        raise ValueError("could not measure a transfer rate at any location: reading more took no longer "
                         "than reading one block")
    done = int(done.sum())
    valid = ~np.all(np.isnan(rates), axis=1)
    locs, rates = locs[valid], rates[valid]
    rate = np.nanmedian(rates, axis=1)
    zones = zones_from_profile(locs, rate, size, b)
    return ZoneMeasurement(
        locs, rate, length, zones, rates,
        f"{done} locations, reads of {length} bytes, {repeats} repeats each; {len(zones)} zones; "
        f"{meter.used_s - spent0:.2f} s of budget{stopped}", meter.reads - reads0)


def _profile_rate(zones, offsets) -> np.ndarray:
    starts = np.array([z[0] for z in zones])
    rates = np.array([z[2] for z in zones])
    return rates[np.clip(np.searchsorted(starts, offsets, side="right") - 1, 0, len(zones) - 1)]


# ---------------------------------------------------------------------------
# Seek curve
# ---------------------------------------------------------------------------

@dataclass
class SeekMeasurement:
    """Every read of the seek stage: where the head came from and went to [bytes],
    its time [s], whether its distance was one of the design's, and its round."""

    from_bytes: np.ndarray
    to_bytes: np.ndarray
    time_s: np.ndarray
    designed: np.ndarray
    round: np.ndarray
    distances_bytes: np.ndarray
    read_length_bytes: int
    rounds: int
    detail: str

    @property
    def distance_bytes(self) -> np.ndarray:
        return np.abs(self.to_bytes - self.from_bytes)


def seek_distances(size_bytes: int, block_size_bytes: int, count: int = 48) -> np.ndarray:
    """Design distances [bytes]: geometric from 8 blocks to the whole device."""
    b = block_size_bytes
    top = size_bytes - b
    low = min(8 * b, top)
    d = np.unique((np.geomspace(low, top, count) // b * b).astype(np.int64))
    return d[d > 0]


def measure_seek(meter: Meter, rng: np.random.Generator, *, budget_s: float, count: int = SEEK_DISTANCES,
                 max_rounds: int = 200, min_rounds: int = SEEK_MIN_ROUNDS) -> SeekMeasurement:
    """Timed pairs of reads at design distances, in random order, repeated in rounds.

    At least *min_rounds* rounds, more while *budget_s* lasts. Where the meter's
    budget runs out (:class:`BudgetExhausted`) beyond them, the round under way
    is dropped and the detail says so; before them, the exception is passed on."""
    b = meter.block_size_bytes
    size = meter.size_bytes
    distances = seek_distances(size, b, count)
    spent0 = meter.used_s
    froms, tos, times, designed, rounds = [], [], [], [], []
    last = getattr(meter, "_last_offset", 0)
    r = 0
    # Each pair's distance is jittered within half the spacing of the design (so it
    # stays in its distance bin): a fixed distance would fix the angle between the
    # two sectors, and with it the rotational wait, at some distances.
    spacing = float(np.median(np.diff(np.log(distances)))) if distances.size > 1 else 0.0
    half = 0.45 * spacing
    round_s = 0.0
    stopped = ""
    while r < max_rounds and (r < min_rounds or meter.used_s - spent0 + round_s <= budget_s):
        before = meter.used_s
        order = rng.permutation(distances.size)
        d = distances[order] * np.exp(rng.uniform(-half, half, distances.size))
        d = np.clip(meter.align(d), b, size - b)
        start = meter.align(rng.uniform(0, 1, d.size) * (size - b - d + 1))
        start = np.minimum(start, size - b - d)
        forward = rng.random(d.size) < 0.5
        first = np.where(forward, start, start + d)
        second = np.where(forward, start + d, start)
        offs = np.column_stack((first, second)).reshape(-1)
        try:
            t = meter.read_many(offs, b, tag="seek")
        except BudgetExhausted as exc:
            if r < min_rounds:
                raise
            stopped = f"; stopped before round {r + 1}: the {exc.limit} ran out"
            break
        prev = np.concatenate(([last], offs[:-1]))
        froms.append(prev)
        tos.append(offs)
        times.append(t)
        designed.append(np.tile([False, True], d.size))
        rounds.append(np.full(offs.size, r))
        last = int(offs[-1])
        round_s = meter.used_s - before
        r += 1
    meter._last_offset = last
    return SeekMeasurement(
        np.concatenate(froms), np.concatenate(tos), np.concatenate(times), np.concatenate(designed),
        np.concatenate(rounds), distances, b, r,
        f"{r} rounds of {distances.size} distances ({distances[0]} .. {distances[-1]} bytes), "
        f"{sum(x.size for x in times)} reads; {meter.used_s - spent0:.2f} s of budget{stopped}")


# ---------------------------------------------------------------------------
# The whole calibration
# ---------------------------------------------------------------------------

def minimum_reads(size_bytes: int, block_size_bytes: int) -> dict:
    """The reads one calibration of a device makes at least, by stage.

    ``{"probe" | "rotation" | "zones" | "seek": (reads, long reads among them)}``
    from the stages' minimums (``PROBE_READS``, ``ROTATION_MIN_STARTS``,
    ``ZONE_MIN_LOCATIONS``, ``SEEK_MIN_ROUNDS`` ...), the constants the stages
    themselves use. The rotation stage's search for the drop is counted as where
    none shows: stride 0, then 1, 2, 4 .. the longest stride. A long read (a
    zone read) transfers for at least ``ZONE_MIN_TRANSFER_S`` on top of its latency.
    """
    b = int(block_size_bytes)
    strides = _max_stride_blocks(int(size_bytes), b, ROTATION_MAX_STRIDE_BYTES)
    pairs = 2 + int(math.floor(math.log2(strides)))
    rotation = ROTATION_MIN_STARTS * pairs * 2 * (ROTATION_REPEATS + 1)
    # each zone pair: the first block twice, then the long read from it
    zones = 3 * (ZONE_PILOT_REPEATS + ZONE_MIN_LOCATIONS * ZONE_REPEATS)
    seek = SEEK_MIN_ROUNDS * 2 * int(seek_distances(int(size_bytes), b, SEEK_DISTANCES).size)
    return {"probe": (PROBE_READS, 0), "rotation": (rotation, 0),
            "zones": (zones, ZONE_MIN_LOCATIONS * ZONE_REPEATS), "seek": (seek, 0)}


_STAGES = ("probe", "rotation", "zones", "seek")
_STAGE_MINIMUM = {"rotation": f"{ROTATION_MIN_STARTS} start points", "zones": f"{ZONE_MIN_LOCATIONS} locations",
                  "seek": f"{SEEK_MIN_ROUNDS} rounds"}


def _minimum_cost_s(counts: dict, per_read_s: float, stages) -> float:
    """Device time the minimum reads of *stages* take at *per_read_s* a read (and the long reads' transfers)."""
    return sum(counts[st][0] * per_read_s + counts[st][1] * ZONE_MIN_TRANSFER_S for st in stages)


def _probe(meter: Meter) -> tuple[list, list]:
    """Up to PROBE_READS one-block reads spread over the device (bit-reversed
    order), one at a time while the budget pays for them: their charged costs
    and wall times [s]."""
    b = meter.block_size_bytes
    bits = max(1, int(math.ceil(math.log2(PROBE_READS))))
    cells = [c for c in (int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits)) if c < PROBE_READS]
    offsets = meter.align((np.asarray(cells) + 0.5) / PROBE_READS * max(meter.size_bytes - b, 0))
    costs, walls = [], []
    for o in offsets.tolist():
        before, wall0 = meter.used_s, time.perf_counter()
        try:
            meter.read(o, b, tag="probe")
        except BudgetExhausted:
            break
        costs.append(meter.used_s - before)
        walls.append(time.perf_counter() - wall0)
    return costs, walls


def _progress_bar(total_s: float, enabled):
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=round(total_s, 3), unit="s", desc="calibrate (device time)",
                bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}]")


def calibrate(backend, *, budget_s: float = 120.0, seed: int = 0, progress=None, path=None,
              kind: str | None = None, fractions=(0.08, 0.37, 0.55)):
    """Measure rotation, zones and the seek curve of *backend*, fit, check.

    Parameters
    ----------
    backend : a backend (see module doc)
    budget_s : float
        Device time to spend [s], a hard cap: no read is started that the rest
        of the budget cannot pay for (priced from the reads so far; only the
        first read of all is unpriced). On a backend without a virtual clock the
        budget is charged at least the wall time, so the measurement there also
        takes at most budget_s of wall time; on any backend it stops at
        ``WALL_TIME_MULTIPLE`` (2) x budget_s of wall time, and the whole call
        takes at most ``WALL_TIME_MULTIPLE x budget_s + FIT_ALLOWANCE_S`` (the
        fits and checks after the measurement: seconds).
        A number > 0, finite (else ValueError before any read).
    seed : int
        Seed of the design's random choices.
    progress : bool or None
        tqdm progress bar; None: only on a terminal.
    path : str, optional
        The device or file measured (for the reads-reached-device and
        written-data checks of a real target).
    kind : "device", "simulated" or "custom"; default from the backend's type.
    fractions : (rotation, zones, seek)
        Shares of the budget.

    Notes
    -----
    The floor of a one-block read (command overhead and transfer), which is
    taken out of every seek pair with half a revolution, is known to within
    the time one block takes to pass under the head: use the device's
    smallest block (its logical sector) for the best seek times. A drive
    whose read cache serves an immediate re-read of the same block shows no
    sawtooth (disable its read cache, as DIXtrac does, to measure rotation).

    Each stage has a minimum (4 start points of the sawtooth, 16 zone
    locations, 3 rounds of seek pairs: the ``*_MIN_*`` constants, counted by
    :func:`minimum_reads`); a stage gets its share of the budget, or its minimum
    where that is more, and leaves the later stages' minimums (priced by the
    probe) paid for. A budget too small for the minimums is refused:

    * up front, after a probe of up to ``PROBE_READS`` (8) one-block reads
      (charged to the budget) that prices a read: :class:`BudgetTooSmall` with
      the minimum, where the minimum reads at that price exceed the budget;
    * during the measurement, where the reads turned out dearer than the probe
      said and a stage cannot reach its minimum within the budget (the budget is
      still not overrun): :class:`BudgetTooSmall`, with the minimum estimated
      from the reads made. Beyond its minimum a stage stops where the budget
      runs out and its detail says so.

    A read that fails or returns anything but a finite time >= 0 stops the
    calibration with :class:`BackendReadError` naming its offset.

    Returns
    -------
    CalibrationResult
    """
    from diskmodel.calibrate.harness import checks as chk
    from diskmodel.calibrate.harness.results import CalibrationResult

    budget = _check_budget(budget_s)
    if len(fractions) != 3 or any(f <= 0 for f in fractions):
        raise ValueError(f"fractions must be three shares > 0 (got {fractions!r})")
    total = sum(fractions)
    f_rot, f_zone, f_seek = (f / total for f in fractions)
    if kind is None:
        from diskmodel.calibrate.harness.simulated import SimulatedDisk

        kind = "simulated" if isinstance(backend, SimulatedDisk) else (
            "device" if type(backend).__name__ == "DirectBackend" else "custom")
    if path is None and kind == "device":
        path = getattr(backend, "path", None)
    check_backend(backend)
    rng = np.random.default_rng(seed)
    counts = minimum_reads(backend.size_bytes, backend.block_size_bytes)
    n_min = sum(c[0] for c in counts.values())
    n_long = sum(c[1] for c in counts.values())
    stat_before = chk.read_device_stat(path) if path is not None else None
    bar = _progress_bar(budget, progress)
    meter = Meter(backend, progress=bar, budget_s=budget, wall_limit_s=WALL_TIME_MULTIPLE * budget)
    wall0 = time.perf_counter()
    try:
        # The probe: what one read costs here, and whether the minimums fit the budget. A budget is
        # refused up front only where even the probe's fastest read, times the minimum read count,
        # is more than it (the count is an upper one: the rotation stage's search for the drop ends
        # early on a disk, and most seek pairs are short); the stages are planned with a typical
        # (the median) read, so that each leaves the later ones' minimums paid for.
        costs, walls = _probe(meter)
        fastest, typical = float(np.min(costs)), float(np.median(costs))
        rest = n_min - len(costs)
        need = meter.used_s + rest * fastest + n_long * ZONE_MIN_TRANSFER_S
        why = ""
        if meter.virtual:  # a simulation's wall time, against WALL_TIME_MULTIPLE x budget_s
            need_wall = (meter.wall_s + rest * float(np.min(walls))) / WALL_TIME_MULTIPLE
            if need_wall > need:
                need = need_wall
                why = (f"this backend takes about {np.min(walls):.2g} s of wall time a read, and a "
                       f"calibration stops at {WALL_TIME_MULTIPLE:g} x budget_s of wall time")
        if len(costs) < PROBE_READS or need > budget:
            raise BudgetTooSmall(budget, need, reads=n_min, per_read_s=fastest, long_reads=n_long, why=why)
        stage, stage_reads = "rotation", meter.reads
        try:
            later = _minimum_cost_s(counts, typical, ("zones", "seek"))
            rotation = measure_rotation(meter, rng, budget_s=min(f_rot * budget, max(meter.remaining_s - later, 0.0)))
            stage, stage_reads = "zones", meter.reads
            est = meter.cost_estimate(meter.block_size_bytes, "rotation")  # dearer than the probe said?
            later = _minimum_cost_s(counts, max(typical, est[0] if est is not None else 0.0), ("seek",))
            zones = measure_zones(meter, rng, budget_s=min(f_zone * budget, max(meter.remaining_s - later, 0.0)),
                                  rotation_period_s=rotation.period_s)
            rotation = refine_rotation(rotation, meter.block_size_bytes,
                                       lambda o: _profile_rate(zones.zones, o))
            stage, stage_reads = "seek", meter.reads
            seek = measure_seek(meter, rng, budget_s=max(meter.remaining_s, 0.0))
        except BudgetExhausted as exc:
            # The reads were dearer than the probe said. The minimum: the budget (it did not
            # do), and the rest of this stage's minimum and the later stages' minimums at this
            # stage's price (where that is more than the probe's).
            est = meter.cost_estimate(meter.block_size_bytes, stage)
            price = max(est[0], typical) if est is not None else typical
            after = _STAGES[_STAGES.index(stage) + 1:]
            short = max(counts[stage][0] - (meter.reads - stage_reads), exc.reads)
            rest_s = short * price + _minimum_cost_s(counts, price, after)
            need = max(meter.used_s, budget) + rest_s
            if exc.limit == "wall time" and meter.reads:
                per_wall = meter.wall_s / meter.reads
                need = max(budget * (meter.wall_s + (short + sum(counts[st][0] for st in after)) * per_wall)
                           / meter.wall_limit_s, budget + short * price)
            raise BudgetTooSmall(budget, need, reads=n_min, per_read_s=price, long_reads=n_long,
                                 why=f"the {stage} stage reached the {exc.limit} limit before its minimum of "
                                     f"{_STAGE_MINIMUM[stage]}") from None
    finally:
        if bar is not None:
            bar.close()
    stat_after = chk.read_device_stat(path) if path is not None else None
    verdicts = []
    if kind == "simulated":
        verdicts.append(chk.Verdict("reads_reached_device", True,
                                    f"simulated: every one of the {meter.reads} reads was served by the model"))
        verdicts.append(chk.Verdict("written_data", True, "simulated: every block holds data"))
        verdicts.append(chk.Verdict("timer_resolution", True, "simulated: virtual clock, exact"))
    else:
        if path is not None:
            verdicts.append(chk.reads_reached_device(stat_before, stat_after, meter.reads, meter.bytes_read))
            verdicts.append(chk.written_data(path))
        else:
            verdicts.append(chk.Verdict("reads_reached_device", None,
                                        f"unknown: a {kind} backend has no block-layer counters to read"))
            verdicts.append(chk.Verdict("written_data", None,
                                        f"unknown: a {kind} backend gives no path to check for holes"))
        verdicts.append(chk.timer_resolution())
    verdicts.append(chk.queue_depth_one(backend))
    # Repeats: the rounds of seek pairs, pooled into at most 8 groups of equal size.
    groups = min(seek.rounds, 8)
    per = seek.rounds // groups if groups else 0
    by_round = [seek.time_s[seek.designed & (seek.round >= g * per) & (seek.round < (g + 1) * per)]
                for g in range(groups)]
    if len(by_round) >= 2:
        verdicts.append(chk.repeatability(by_round))
    else:
        verdicts.append(chk.Verdict("repeatability", None, "unknown: fewer than two rounds of seek pairs"))
    result = CalibrationResult(
        target=str(path) if path is not None else type(backend).__name__, kind=kind,
        size_bytes=meter.size_bytes, block_size_bytes=meter.block_size_bytes, budget_s=budget,
        rotation_period_s=rotation.period_s, rotation_period_bse_s=rotation.period_bse_s,
        rotation_period_samples_s=list(rotation.period_samples_s), overhead_s=rotation.overhead_s,
        block_transfer_s=rotation.block_transfer_s, rotation_detail=rotation.detail,
        zone_locations_bytes=zones.locations_bytes, zone_rates_bytes_per_s=zones.rates_bytes_per_s,
        zone_read_length_bytes=zones.read_length_bytes, zones=zones.zones, zone_detail=zones.detail,
        seek_from_bytes=seek.from_bytes, seek_to_bytes=seek.to_bytes, seek_time_s=seek.time_s,
        seek_designed=seek.designed, seek_round=seek.round, seek_distances_bytes=seek.distances_bytes,
        seek_detail=seek.detail, checks=verdicts, device_time_s=float(meter.spent_s),
        wall_time_s=float(time.perf_counter() - wall0), reads=int(meter.reads))
    result.checks.append(result.plausibility())
    result.wall_time_s = float(time.perf_counter() - wall0)
    return result
