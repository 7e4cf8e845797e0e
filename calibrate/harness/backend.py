"""The backend protocol: what the harness needs of a device to measure it, and its checks.

A backend is any object that follows :class:`Backend`: ``size_bytes``,
``block_size_bytes`` and ``read(offset_bytes, length_bytes) -> seconds``.
Two members are optional, and used where present:

* ``read_many(offsets, length_bytes) -> ndarray`` (:class:`BatchReads`): the
  reads in turn, one time each, for backends that are faster in batches
  (the simulated disk, vectorised);
* ``device_time_s`` (:class:`VirtualClock`): the backend's own clock of device
  time, which the budget is charged instead of the sum of the read times (a
  simulation's virtual clock);
* ``idle(seconds)``: let the device's clock run on with no request (a
  virtual clock's backend; on a backend without a virtual clock the harness
  sleeps instead, and the device, a real one, keeps turning meanwhile).

The real O_DIRECT backend (:mod:`diskmodel.calibrate.harness.device`), the
simulated disk (:mod:`diskmodel.calibrate.harness.simulated`) and a user's own
(:func:`backend_from_spec`, ``--backend MODULE:FACTORY``) all follow it.
Here too are the checks every backend makes of a request
(:func:`check_length`, :func:`check_offsets`) and the harness makes of what a
backend returns (:func:`checked_read_time`, :func:`checked_read_times`).
"""
from __future__ import annotations

import importlib
import math
import operator
from typing import Protocol

import numpy as np

__all__ = [
    "Backend", "BatchReads", "VirtualClock", "BackendProtocolError", "BackendReadError",
    "check_backend", "backend_from_spec", "check_length", "check_offsets",
    "checked_read_time", "checked_read_times",
]


class Backend(Protocol):
    """A device the harness can measure: its size and block size [bytes], and timed reads."""

    size_bytes: int
    block_size_bytes: int

    def read(self, offset_bytes: int, length_bytes: int) -> float:
        """Read *length_bytes* at *offset_bytes* (both multiples of the block size); the time it took [s]."""
        ...


class BatchReads(Backend, Protocol):
    """A backend that also reads many offsets in one call (optional)."""

    def read_many(self, offsets, length_bytes: int) -> np.ndarray:
        """Read *length_bytes* at each of *offsets* in turn; the time of each [s]."""
        ...


class VirtualClock(Backend, Protocol):
    """A backend with its own clock of device time [s] (optional): the budget is charged by it."""

    device_time_s: float


class BackendProtocolError(ValueError):
    """An object is not a backend: the message says which part of the protocol it misses."""


class BackendReadError(BackendProtocolError, RuntimeError):
    """A backend's read failed or returned something other than a finite time >= 0.

    The message names the offset, the length and what came back (or what was
    raised). A :class:`BackendProtocolError` (so a ``ValueError``: the command
    line prints it as one line) and a ``RuntimeError``."""


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


def backend_from_spec(spec: str) -> Backend:
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


# --------------------------------------------------------------------------- a request, checked by the backend

def check_length(length_bytes, block_size_bytes: int, size_bytes: int) -> int:
    """*length_bytes* as an int: a positive multiple of the block size, at most the size."""
    try:
        length = operator.index(length_bytes)
    except TypeError:
        raise ValueError(f"length_bytes must be an integer (got {length_bytes!r})") from None
    if length <= 0 or length % block_size_bytes or length > size_bytes:
        raise ValueError(f"length_bytes={length} must be a positive multiple of block_size_bytes="
                         f"{block_size_bytes} and at most size_bytes={size_bytes}")
    return length


def check_offsets(offsets, length: int, block_size_bytes: int, size_bytes: int) -> np.ndarray:
    """*offsets* as a 1-D int64 array of aligned offsets whose reads fit the device."""
    offs = np.asarray(offsets if isinstance(offsets, np.ndarray) else list(offsets)).reshape(-1)
    if offs.size == 0:
        return offs.astype(np.int64)
    if not np.issubdtype(offs.dtype, np.integer):
        raise ValueError(f"offsets must be integers (got dtype {offs.dtype})")
    offs = offs.astype(np.int64, copy=False)
    bad = (offs < 0) | (offs % block_size_bytes != 0) | (offs > size_bytes - length)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"offsets[{i}]={int(offs[i])} must be a non-negative multiple of block_size_bytes="
                         f"{block_size_bytes} with offset + length_bytes <= size_bytes={size_bytes}")
    return offs


# --------------------------------------------------------------------------- a reply, checked by the harness

def _bad_time(value, offset: int, length: int) -> BackendReadError:
    try:
        shown = f"{float(value):g} s"
    except (TypeError, ValueError):
        shown = f"{value!r} (a {type(value).__name__})"
    return BackendReadError(f"backend read at offset {offset} (length {length}) returned {shown}: "
                            "a read time must be finite and >= 0")


def checked_read_time(value, offset: int, length: int) -> float:
    """One read's time as a float, or :class:`BackendReadError` naming the offset and the value."""
    array = np.asarray(value) if isinstance(value, (int, float, np.number, np.ndarray)) else None
    if array is None or array.ndim != 0 or array.dtype.kind not in "iuf":
        raise BackendReadError(f"backend read at offset {offset} (length {length}) returned {value!r} "
                               f"(a {type(value).__name__}): a read time must be a number of seconds")
    number = float(array)
    if not math.isfinite(number) or number < 0:
        raise _bad_time(value, offset, length)
    return number


def checked_read_times(value, offsets: np.ndarray, length: int) -> np.ndarray:
    """read_many's times as floats, or :class:`BackendReadError` naming the first bad one's offset."""
    try:
        array = np.asarray(value)
    except Exception:
        array = None
    if array is not None and array.dtype.kind not in "iuf" and array.shape == offsets.shape:
        for j, item in enumerate(array.tolist()):  # name the first read whose time is not a number
            checked_read_time(value[j] if isinstance(value, (list, tuple)) else item, int(offsets[j]), length)
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
