"""The request stream: what one layer of the I/O path sends to the layer below.

A :class:`Stream` is a frozen set of equal-length numpy arrays, one element per request
(numpy only, no Python object per request, so a PostMark run's 10^5-10^6 requests stay cheap):

- ``time_s`` (float64): when the request is issued, seconds from the start of the workload;
- ``op`` (int8): an :class:`Op` (read, write, flush, discard; the kernel's ``REQ_OP_*``);
- ``offset_bytes``, ``size_bytes`` (int64): the byte range on the device the stream is for
  (a flush carries no range: offset 0, size 0);
- ``flags`` (int16): :class:`Flag` bits (``REQ_SYNC``, ``REQ_FUA``, ``REQ_PREFLUSH``, ``REQ_META``,
  plus this model's marks for zero-fill and allocation);
- ``parent`` (int64): the index, in the stream the layer was given, of the request this one was split
  from or issued for (its dependency); -1 for a request with no parent (a workload's own request, or
  a layer's own bookkeeping such as thin metadata commits).

Bad values raise ``ValueError`` with one line naming the field, the request index and the value.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["Op", "Flag", "Stream", "concat", "device_totals", "SIZE_BIN_NAMES", "INSTANT_S"]


class Op(IntEnum):
    """The request's operation (include/linux/blk_types.h ``REQ_OP_*``)."""

    READ = 0
    WRITE = 1
    FLUSH = 2
    DISCARD = 3


class Flag(IntFlag):
    """Request flags. The first four are the kernel's (include/linux/blk_types.h); the last two are
    marks this model adds so a test or the next layer can see why a request exists."""

    NONE = 0
    SYNC = 1  # REQ_SYNC
    FUA = 2  # REQ_FUA: this write is durable on completion
    PREFLUSH = 4  # REQ_PREFLUSH: flush the device's cache before this request
    META = 8  # REQ_META: file-system metadata
    ZERO = 16  # written by a layer to zero-fill (dm-thin's zeroing of a new block)
    ALLOC = 32  # the first write to a not-yet-allocated range (a sparse loop image's hole)
    ASYNC = 64  # a read of asynchronous read-ahead (page_cache_async_ra): the reader does not wait for it where issued


#: An instant's width [s]: the I/O path issues a layer's dependent requests a nanosecond apart (a
#: loop worker's reads one after the other, a file system's chained metadata reads), so what a layer
#: issues within this after a waited instant belongs to it (:mod:`~diskmodel.model.iopath.timing`).
INSTANT_S = 1e-6

_ALL_FLAGS = int(sum(int(f) for f in Flag))
_FIELDS = ("time_s", "op", "offset_bytes", "size_bytes", "flags", "parent")
_DTYPES = {
    "time_s": np.float64,
    "op": np.int8,
    "offset_bytes": np.int64,
    "size_bytes": np.int64,
    "flags": np.int16,
    "parent": np.int64,
}

#: Power-of-two size bins of :meth:`Stream.size_histogram`: bin k holds sizes in [2**k, 2**(k+1)).
SIZE_BIN_NAMES = tuple(f"{2**k}" for k in range(64))


def _bad(field: str, index: int, value) -> ValueError:
    return ValueError(f"request stream: {field}[{index}] = {value!r} is invalid")


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True, eq=False)
class Stream:
    """A validated, read-only request stream (see the module docstring for the fields)."""

    time_s: np.ndarray
    op: np.ndarray
    offset_bytes: np.ndarray
    size_bytes: np.ndarray
    flags: np.ndarray
    parent: np.ndarray

    def __post_init__(self):
        n = None
        for name in _FIELDS:
            raw = getattr(self, name)
            arr = np.asarray(raw)
            if arr.ndim != 1:
                raise ValueError(f"request stream: {name} must be one-dimensional, got shape {arr.shape}")
            if name == "time_s":
                if arr.size and not np.issubdtype(arr.dtype, np.number):
                    raise ValueError(f"request stream: time_s has dtype {arr.dtype}, not a number")
            elif arr.size and not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
                if not np.issubdtype(arr.dtype, np.floating):
                    raise ValueError(f"request stream: {name} has dtype {arr.dtype}, not an integer")
                whole = np.isfinite(arr) & (arr == np.round(arr))
                if not whole.all():
                    i = _first(~whole)
                    raise _bad(name, i, arr[i].item())
            if name in ("op", "flags") and arr.size:
                # Check before the cast to a small integer type, which would wrap silently.
                top = int(max(Op)) if name == "op" else _ALL_FLAGS
                out = (arr < 0) | (arr > top)  # the flags are bits 0..5: any value in 0..63 is valid
                if out.any():
                    i = _first(out)
                    raise _bad(name, i, arr[i].item())
            arr = np.array(arr, dtype=_DTYPES[name], copy=True)
            arr.setflags(write=False)
            if n is None:
                n = arr.size
            elif arr.size != n:
                raise ValueError(f"request stream: {name} has {arr.size} entries, time_s has {n}")
            object.__setattr__(self, name, arr)
        self._validate()

    def _validate(self) -> None:
        t, op, off, size, flags, parent = (getattr(self, f) for f in _FIELDS)
        if t.size == 0:
            return
        checks = (
            ("time_s", ~np.isfinite(t) | (t < 0), t),
            ("op", (op < 0) | (op > int(max(Op))), op),
            ("offset_bytes", off < 0, off),
            ("flags", (flags & ~_ALL_FLAGS) != 0, flags),
            ("parent", parent < -1, parent),
        )
        for name, bad, arr in checks:
            if bad.any():
                i = _first(bad)
                raise _bad(name, i, arr[i].item())
        ranged = op != Op.FLUSH
        bad = (ranged & (size <= 0)) | (~ranged & (size != 0))
        if bad.any():
            i = _first(bad)
            what = "a flush carries no data" if op[i] == Op.FLUSH else "must be positive"
            raise ValueError(f"request stream: size_bytes[{i}] = {int(size[i])} is invalid ({what})")
        end_over = ranged & (off > np.iinfo(np.int64).max - size)
        if end_over.any():
            i = _first(end_over)
            raise _bad("offset_bytes", i, int(off[i]))

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, *, time_s=None, op, offset_bytes, size_bytes, flags=None, parent=None) -> "Stream":
        """A stream from array-likes; ``time_s`` defaults to 0, ``flags`` to none, ``parent`` to -1."""
        n = np.asarray(op).size
        return cls(
            time_s=np.zeros(n) if time_s is None else time_s,
            op=op,
            offset_bytes=offset_bytes,
            size_bytes=size_bytes,
            flags=np.zeros(n, np.int16) if flags is None else flags,
            parent=np.full(n, -1, np.int64) if parent is None else parent,
        )

    @classmethod
    def empty(cls) -> "Stream":
        return cls.from_arrays(op=[], offset_bytes=[], size_bytes=[])

    @classmethod
    def from_records(cls, rows: Iterable[Sequence]) -> "Stream":
        """A stream from ``(time_s, op, offset_bytes, size_bytes[, flags[, parent]])`` tuples."""
        rows = [tuple(r) for r in rows]
        for i, r in enumerate(rows):
            if not 4 <= len(r) <= 6:
                raise ValueError(f"request stream: record {i} has {len(r)} fields, expected 4 to 6")
        full = [r + (0, -1)[len(r) - 4 :] for r in rows]
        cols = list(zip(*full)) if full else [[]] * 6
        return cls(*(np.asarray(c) for c in cols))

    @classmethod
    def from_frame(cls, frame) -> "Stream":
        """A stream from a DataFrame with the stream's columns (``flags``, ``parent`` optional)."""
        missing = [c for c in ("time_s", "op", "offset_bytes", "size_bytes") if c not in frame.columns]
        if missing:
            raise ValueError(f"request stream: frame lacks column {missing[0]!r}")
        kw = {c: frame[c].to_numpy() for c in _FIELDS if c in frame.columns}
        return cls.from_arrays(**kw)

    # -- access ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.op.size)

    @property
    def end_bytes(self) -> np.ndarray:
        """One past each request's last byte."""
        return self.offset_bytes + self.size_bytes

    @classmethod
    def _trusted(cls, *arrays) -> "Stream":
        """A stream from arrays taken from validated streams (a selection or concatenation keeps
        every request valid), skipping the checks: cheap for the layers' large streams."""
        self = object.__new__(cls)
        for name, arr in zip(_FIELDS, arrays):
            arr = np.asarray(arr, dtype=_DTYPES[name])
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        return self

    def take(self, index) -> "Stream":
        """The requests at ``index`` (a boolean mask, integer indices or a slice), in that order."""
        return Stream._trusted(*(getattr(self, f)[index] for f in _FIELDS))

    def replace(self, **arrays) -> "Stream":
        """A copy with some fields replaced (validated again)."""
        unknown = set(arrays) - set(_FIELDS)
        if unknown:
            raise ValueError(f"request stream: no field {sorted(unknown)[0]!r}")
        return Stream(*(arrays.get(f, getattr(self, f)) for f in _FIELDS))

    def to_frame(self):
        """The stream as a pandas DataFrame, one row per request, ``op`` as its name."""
        import pandas as pd

        frame = pd.DataFrame({f: getattr(self, f) for f in _FIELDS})
        names = np.array([o.name.lower() for o in Op])
        frame["op"] = pd.Categorical(names[self.op], categories=list(names))
        return frame

    # -- totals ---------------------------------------------------------------------------------
    def _sum(self, op: Op) -> int:
        return int(self.size_bytes[self.op == op].sum())

    @property
    def read_bytes(self) -> int:
        return self._sum(Op.READ)

    @property
    def write_bytes(self) -> int:
        return self._sum(Op.WRITE)

    @property
    def read_requests(self) -> int:
        return int(np.count_nonzero(self.op == Op.READ))

    @property
    def write_requests(self) -> int:
        return int(np.count_nonzero(self.op == Op.WRITE))

    def totals(self) -> dict[str, int]:
        """The per-device totals ``diskmodel iopath --json`` reports for one device."""
        return {
            "read_bytes": self.read_bytes,
            "write_bytes": self.write_bytes,
            "read_requests": self.read_requests,
            "write_requests": self.write_requests,
        }

    def size_histogram(self, op: Op | None = None) -> dict[int, int]:
        """Request counts by power-of-two size bin: key ``2**k`` counts sizes in [2**k, 2**(k+1)).
        Only requests of ``op`` when given, else reads and writes (flushes and discards excluded)."""
        if op is None:
            keep = (self.op == Op.READ) | (self.op == Op.WRITE)
        else:
            keep = self.op == Op(op)
        size = self.size_bytes[keep]
        if size.size == 0:
            return {}
        # floor(log2(size)) exactly, for int64 sizes: bit length minus one.
        k = np.floor(np.log2(size.astype(np.float64))).astype(np.int64)
        k -= (np.left_shift(1, k) > size).astype(np.int64)
        k += (np.left_shift(1, k + 1) <= size).astype(np.int64)
        bins, counts = np.unique(k, return_counts=True)
        return {int(1 << int(b)): int(c) for b, c in zip(bins, counts)}


def concat(streams: Iterable[Stream]) -> Stream:
    """The requests of ``streams`` one after another (``parent`` indices are kept as they are)."""
    streams = list(streams)
    if not streams:
        return Stream.empty()
    return Stream._trusted(*(np.concatenate([getattr(s, f) for s in streams]) for f in _FIELDS))


def device_totals(streams: Mapping[str, Stream]) -> dict[str, dict[str, int]]:
    """``{device: totals}`` for a layer's per-device output."""
    return {name: s.totals() for name, s in streams.items()}
