"""Write calibration: optional and destructive, only where the user names the target twice.

A calibration is read-only. Only with ``diskmodel calibrate TARGET
--destroy-data-on TARGET`` (the same path, or the same ``--backend`` spec)
does it also time writes: :func:`measure_writes` writes one block at each of
``WRITE_COUNT`` random offsets and reads one block at as many others, and
compares. A drive whose write cache is on reports a write as soon as the data
is in its buffer, far sooner than a read from the media (a seek and half a
revolution); a drive that writes through takes as long as a read, or longer.
The data written (zeros) replace what was there.

:class:`FileWriter` writes a block device or a regular file with O_DIRECT
(not O_DSYNC, which would force the write through the drive's cache and hide
it). A backend writes through its own ``write_many(offsets, length)`` or
``write(offset, length)`` returning seconds.
"""
from __future__ import annotations

import math
import mmap
import os
import time
from dataclasses import dataclass

import numpy as np

from diskmodel.calibrate.harness.backend import BackendReadError
from diskmodel.calibrate.harness.meter import Meter

__all__ = ["WRITE_COUNT", "WriteMeasurement", "FileWriter", "measure_writes", "writer_for", "same_target"]

WRITE_COUNT = 32                  # writes timed (and as many reads of fresh blocks to compare)
WRITE_CACHE_RATIO = 0.25          # a write cache: the median write under this share of a median read


@dataclass
class WriteMeasurement:
    """Whether a write cache is on (None: not measured), the median time of a one-block write [s]."""

    write_cache: bool | None
    median_write_s: float | None
    detail: str
    writes: int = 0


class FileWriter:
    """One-block (or longer) writes of zeros to *path* with O_DIRECT, timed [s]. Destroys data."""

    def __init__(self, path: str, block_size_bytes: int):
        self.path = path
        self.block_size_bytes = int(block_size_bytes)
        self._fd = os.open(path, os.O_WRONLY | getattr(os, "O_DIRECT", 0))
        self._buffers = {}

    def write(self, offset_bytes: int, length_bytes: int) -> float:
        buf = self._buffers.get(length_bytes)
        if buf is None:
            buf = self._buffers[length_bytes] = mmap.mmap(-1, length_bytes)  # page-aligned, zeros
        start = time.perf_counter()
        done = os.pwrite(self._fd, buf, offset_bytes)
        elapsed = time.perf_counter() - start
        if done != length_bytes:
            raise OSError(f"short write at offset {offset_bytes}: {done} of {length_bytes} bytes")
        return elapsed

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        for buf in self._buffers.values():
            buf.close()
        self._buffers.clear()


def same_target(destroy: str, target: str, *, is_path: bool) -> bool:
    """Whether ``--destroy-data-on`` names the target: the same file (after links), or the same spec."""
    if not is_path:
        return destroy == target
    try:
        return os.path.samefile(destroy, target)
    except OSError:
        return os.path.realpath(destroy) == os.path.realpath(target)


def writer_for(backend, path: str | None):
    """What writes to the target: the backend itself where it writes, else a :class:`FileWriter` on
    *path*; ValueError where neither can."""
    if callable(getattr(backend, "write_many", None)) or callable(getattr(backend, "write", None)):
        return backend
    if path is None:
        raise ValueError(f"the backend {type(backend).__name__} has no write(offset_bytes, length_bytes) or "
                         "write_many(offsets, length_bytes): it cannot be write-calibrated")
    return FileWriter(path, backend.block_size_bytes)


def _checked(t, offset: int) -> float:
    try:
        value = float(t)
    except (TypeError, ValueError):
        raise BackendReadError(f"backend write at offset {offset} returned {t!r}: a write time must be a number "
                               "of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise BackendReadError(f"backend write at offset {offset} returned {value:g} s: a write time must be "
                               "finite and >= 0")
    return value


def measure_writes(meter: Meter, rng: np.random.Generator, writer, *, count: int = WRITE_COUNT) -> WriteMeasurement:
    """Time *count* one-block writes at random offsets against as many reads (see module doc)."""
    b, size = meter.block_size_bytes, meter.size_bytes
    offsets = (rng.integers(0, size // b - 1, count) * b).astype(np.int64)
    many = getattr(writer, "write_many", None)
    times = []
    for o in offsets.tolist():
        try:
            raw = many(np.array([o], dtype=np.int64), b)[0] if callable(many) else writer.write(o, b)
        except (OSError, ValueError) as exc:
            raise BackendReadError(f"backend write at offset {o} (length {b}) raised {type(exc).__name__}: "
                                   f"{exc}") from exc
        times.append(_checked(raw, o))
    reads = meter.read_many(np.sort(rng.integers(0, size // b - 1, count))[rng.permutation(count)] * b, b,
                            tag="writes")
    w, r = float(np.median(times)), float(np.median(reads))
    cache = w < WRITE_CACHE_RATIO * r
    return WriteMeasurement(cache, w, f"{count} one-block writes at random offsets: median {w * 1e6:.1f} us, "
                                      f"against {r * 1e6:.1f} us for a random read: write cache "
                                      f"{'on' if cache else 'off (writes go to the media)'}", count)
