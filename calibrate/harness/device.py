"""The real backend: timed O_DIRECT reads of a block device or a regular file.

``open_backend(path)`` returns a :class:`DirectBackend`, the backend protocol of
the calibration harness (``size_bytes``, ``block_size_bytes``,
``read(offset_bytes, length_bytes) -> seconds``) for real storage:

- read-only: opened ``O_RDONLY | O_DIRECT``, and ``O_EXCL`` for block devices,
  which the kernel refuses (EBUSY) while the device is mounted or held by
  another device (device-mapper, md, a partition's holder) or swap;
- one request at a time (queue depth 1): each ``os.preadv`` returns only when
  its data is in the buffer, and nothing else is issued meanwhile;
- into a page-aligned buffer (an anonymous ``mmap``), as O_DIRECT needs;
- timed with ``time.perf_counter_ns`` (CLOCK_MONOTONIC on Linux, nanoseconds),
  with the timer's own overhead (the median of back-to-back clock reads,
  measured at open) subtracted from every sample.

Nothing falls back silently. A path that is neither a block device nor a
regular file, a size that is not a multiple of the block size, a file system
or device that refuses O_DIRECT, a regular file with holes or unwritten
(fallocated) extents, and a busy device are each a :class:`BackendError`
(a ``ValueError``) naming the path. An I/O error during a read raises
:class:`DeviceIOError` with the offset. Unaligned or out-of-range offsets and
lengths raise ``ValueError`` naming the parameter.
"""
from __future__ import annotations

import errno
import fcntl
import mmap
import operator
import os
import re
import shutil
import stat
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from diskmodel.calibrate.harness.backend import check_length, check_offsets
from diskmodel.calibrate.harness.heap import collector_paused
from diskmodel.calibrate.harness import devstate

__all__ = [
    "BackendError",
    "NotBlockOrRegularFileError",
    "UnalignedSizeError",
    "DirectIOUnsupportedError",
    "UnwrittenDataError",
    "DeviceBusyError",
    "LoopBufferedError",
    "DeviceIOError",
    "UnwrittenRegion",
    "DirectBackend",
    "open_backend",
    "unwritten_regions",
    "measure_timer_overhead_ns",
]

# ioctl numbers (linux/fs.h)
BLKSSZGET = 0x1268  # logical sector size, int
BLKPBSZGET = 0x127B  # physical sector size, unsigned int
BLKGETSIZE64 = 0x80081272  # size in bytes, u64
FS_IOC_FIEMAP = 0xC020660B  # _IOWR('f', 11, struct fiemap)
FIEMAP_FLAG_SYNC = 0x1
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNKNOWN = 0x2
FIEMAP_EXTENT_DELALLOC = 0x4
FIEMAP_EXTENT_UNWRITTEN = 0x800
_FIEMAP_HEADER = struct.Struct("=QQIIII")  # fm_start, fm_length, fm_flags, fm_mapped_extents, fm_extent_count, fm_reserved
_FIEMAP_EXTENT = struct.Struct("=QQQQQIIII")  # fe_logical, fe_physical, fe_length, 2x reserved64, fe_flags, 3x reserved
_FIEMAP_BATCH = 256

HOLES_EXPLANATION = (
    "reads of holes and of unwritten (fallocated) extents return zeros without any I/O, "
    "so their timings would measure the kernel, not the storage; write the whole file "
    "first (e.g. dd if=/dev/urandom of=FILE bs=1M count=N conv=fsync)"
)


class BackendError(ValueError):
    """The target cannot be measured honestly; the message names the path."""

    def __init__(self, path: str | os.PathLike, message: str):
        self.path = os.fspath(path)
        super().__init__(f"{self.path}: {message}")


class NotBlockOrRegularFileError(BackendError):
    pass


class UnalignedSizeError(BackendError):
    pass


class DirectIOUnsupportedError(BackendError):
    pass


class UnwrittenDataError(BackendError):
    def __init__(self, path, regions: list["UnwrittenRegion"]):
        self.regions = regions
        total = sum(r.length_bytes for r in regions)
        first = regions[0]
        kinds = sorted({r.kind for r in regions})
        super().__init__(
            path,
            f"has {len(regions)} unwritten region(s) ({' and '.join(kinds)}; {total} bytes in all, "
            f"the first at byte {first.start_bytes}, {first.length_bytes} bytes long): {HOLES_EXPLANATION}",
        )


class DeviceBusyError(BackendError):
    pass


class LoopBufferedError(BackendError):
    """A loop device without direct I/O: its reads are served by the page cache of its backing file."""


class DeviceIOError(BackendError, OSError):
    """A read failed; the run stops here. ``offset_bytes`` and ``length_bytes`` say where."""

    def __init__(self, path, offset_bytes: int, length_bytes: int, cause: OSError | str):
        self.offset_bytes = offset_bytes
        self.length_bytes = length_bytes
        self.cause = cause
        if isinstance(cause, OSError):
            self.errno = cause.errno
            what = f"{errno.errorcode.get(cause.errno, cause.errno)} ({cause.strerror})"
        else:
            what = str(cause)
        BackendError.__init__(
            self, path, f"I/O error reading {length_bytes} bytes at offset_bytes={offset_bytes}: {what}; run stopped"
        )


@dataclass(frozen=True)
class UnwrittenRegion:
    start_bytes: int
    length_bytes: int
    kind: str  # "hole" or "unwritten extent"


# --------------------------------------------------------------------------- holes and unwritten extents


def _holes_seek(fd: int, size: int) -> list[UnwrittenRegion]:
    """Holes by SEEK_DATA/SEEK_HOLE (file systems without support report one data region)."""
    out = []
    pos = 0
    while pos < size:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after pos: a hole to the end
                out.append(UnwrittenRegion(pos, size - pos, "hole"))
                break
            raise
        if data > pos:
            out.append(UnwrittenRegion(pos, data - pos, "hole"))
        pos = os.lseek(fd, data, os.SEEK_HOLE)
    return out


def _unwritten_fiemap(fd: int, size: int) -> list[UnwrittenRegion]:
    """Extents flagged FIEMAP_EXTENT_UNWRITTEN (fallocated, never written). Raises OSError if unsupported."""
    out = []
    start = 0
    ext_size = _FIEMAP_EXTENT.size
    flags = FIEMAP_FLAG_SYNC  # flush delayed allocation first, so written data has real extents
    while start < size:
        buf = bytearray(_FIEMAP_HEADER.size + _FIEMAP_BATCH * ext_size)
        _FIEMAP_HEADER.pack_into(buf, 0, start, size - start, flags, 0, _FIEMAP_BATCH, 0)
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
        mapped = _FIEMAP_HEADER.unpack_from(buf, 0)[3]
        if mapped == 0:
            break
        last = False
        for i in range(mapped):
            logical, _phys, length, _r1, _r2, fe_flags, *_ = _FIEMAP_EXTENT.unpack_from(
                buf, _FIEMAP_HEADER.size + i * ext_size
            )
            if fe_flags & FIEMAP_EXTENT_UNWRITTEN:
                lo, hi = max(logical, 0), min(logical + length, size)
                if hi > lo:
                    out.append(UnwrittenRegion(lo, hi - lo, "unwritten extent"))
            start = logical + length
            last = bool(fe_flags & FIEMAP_EXTENT_LAST)
        if last:
            break
    return out


_FILEFRAG_LINE = re.compile(r"^\s*\d+:\s*(\d+)\.\.\s*(\d+):.*?:\s*(\S*)\s*$")


def _unwritten_filefrag(path: str, size: int) -> list[UnwrittenRegion]:
    """`filefrag -v` fallback, used only where the FIEMAP ioctl itself is impossible."""
    tool = shutil.which("filefrag")
    if tool is None:
        raise BackendError(
            path,
            "cannot check for fallocated-but-unwritten extents: the FIEMAP ioctl is not "
            "available and filefrag is not installed (install e2fsprogs)",
        )
    proc = subprocess.run([tool, "-v", "-b1", "-s", path], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BackendError(path, f"cannot check for unwritten extents: filefrag failed: {proc.stderr.strip()}")
    out = []
    for line in proc.stdout.splitlines():
        m = _FILEFRAG_LINE.match(line)
        if m and "unwritten" in m.group(3).split(","):
            lo, hi = int(m.group(1)), min(int(m.group(2)) + 1, size)
            if hi > lo:
                out.append(UnwrittenRegion(lo, hi - lo, "unwritten extent"))
    return out


def unwritten_regions(path: str | os.PathLike, fd: int | None = None) -> list[UnwrittenRegion]:
    """Holes (SEEK_HOLE/SEEK_DATA) and unwritten extents (FIEMAP) of a regular file, in byte order.

    An empty list means every byte of the file is backed by written data.
    """
    path = os.fspath(path)
    own = fd is None
    if own:
        fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        holes = _holes_seek(fd, size)
        try:
            unwritten = _unwritten_fiemap(fd, size)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL, errno.ENOSYS):
                raise
            unwritten = _unwritten_filefrag(path, size)
    finally:
        if own:
            os.close(fd)
    # Some file systems (ext4) also report unwritten extents as holes to SEEK_DATA: keep
    # each byte once, named by FIEMAP where it knows better.
    regions = list(unwritten)
    for hole in holes:
        pieces = [(hole.start_bytes, hole.start_bytes + hole.length_bytes)]
        for u in unwritten:
            ulo, uhi = u.start_bytes, u.start_bytes + u.length_bytes
            pieces = [
                piece
                for lo, hi in pieces
                for piece in ((lo, min(hi, ulo)), (max(lo, uhi), hi))
                if piece[1] > piece[0]
            ]
        regions += [UnwrittenRegion(lo, hi - lo, "hole") for lo, hi in pieces]
    regions.sort(key=lambda r: r.start_bytes)
    return regions


# --------------------------------------------------------------------------- timer


def measure_timer_overhead_ns(samples: int = 2001) -> int:
    """Median cost [ns] of a ``perf_counter_ns()`` pair, as used around each read."""
    clock = time.perf_counter_ns
    deltas = [0] * samples
    for i in range(samples):
        t0 = clock()
        t1 = clock()
        deltas[i] = t1 - t0
    deltas.sort()
    return deltas[samples // 2]


# --------------------------------------------------------------------------- the backend


def _busy_reason(path: str) -> str:
    """Why a block device is busy, as every safety check of the harness sees it (for the error message)."""
    try:
        reasons = devstate.busy_reasons(path)
    except (OSError, devstate.DeviceStateError):  # the message is a courtesy; the refusal stands regardless
        reasons = []
    return "; ".join(reasons) or "another process holds it open exclusively"


def max_request_bytes(rdev: int) -> int | None:
    """The largest O_DIRECT read [bytes] the kernel sends the block device *rdev* as one request,
    wherever the reader's buffer lies in memory, None where sysfs does not say. A longer read is
    split into several requests, each a command of its own to the drive. The request is bounded by
    ``queue/max_sectors_kb`` and by ``queue/max_segments`` segments: the pages of a buffer are
    pinned as they lie in physical memory, so a segment may hold no more than one page (block
    layer; a partition's queue/ is its disk's)."""
    base = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
    for queue in (base / "queue", base / ".." / "queue"):
        try:
            kib = int((queue / "max_sectors_kb").read_text().strip())
            segments = int((queue / "max_segments").read_text().strip())
        except (OSError, ValueError):
            continue
        if kib <= 0 or segments <= 0:
            return None
        return min(kib * 1024, segments * mmap.PAGESIZE)
    return None


class DirectBackend:
    """Timed O_DIRECT reads of one block device or regular file, one request at a time.

    Attributes
    ----------
    path : the path opened.
    size_bytes : readable size [B].
    block_size_bytes : alignment of every offset and length [B] (the logical
        block size of a block device; the file system's block size for a file).
    kind : "block" or "file".
    timer_overhead_ns : median cost of the clock pair around each read [ns],
        subtracted from every sample.
    queue_depth : 1; one synchronous request at a time.
    max_request_bytes : the largest read the kernel sends the device as one request
        (:func:`max_request_bytes`; a longer read reaches it as several), or None (a
        regular file, or not known).
    """

    queue_depth = 1

    def __init__(self, path: str | os.PathLike, *, allow_buffered_loop: bool = False):
        self.path = os.fspath(path)
        self.allow_buffered_loop = allow_buffered_loop
        self._fd = -1
        self._buf: mmap.mmap | None = None
        self._views: dict[int, list[memoryview]] = {}
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path}: no such file or device") from None
        if stat.S_ISBLK(st.st_mode):
            self.kind = "block"
            flags = os.O_RDONLY | os.O_DIRECT | os.O_EXCL | os.O_CLOEXEC
        elif stat.S_ISREG(st.st_mode):
            self.kind = "file"
            flags = os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC
        else:
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else (
                "a character device" if stat.S_ISCHR(st.st_mode) else "neither a block device nor a regular file"
            )
            raise NotBlockOrRegularFileError(self.path, f"is {kind}; give a block device or a regular file")
        try:
            self._fd = os.open(self.path, flags)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise DeviceBusyError(
                    self.path, f"is busy (O_EXCL refused; {_busy_reason(self.path)}); refusing to measure a device in use"
                ) from None
            if exc.errno == errno.EINVAL:
                raise DirectIOUnsupportedError(
                    self.path, "does not support O_DIRECT (EINVAL at open); refusing buffered reads, which would time the page cache"
                ) from None
            raise
        try:
            self._setup(st)
        except BaseException:
            self.close()
            raise

    def _setup(self, st: os.stat_result) -> None:
        fd = self._fd
        if self.kind == "block":
            buf = bytearray(8)
            fcntl.ioctl(fd, BLKGETSIZE64, buf, True)
            self.size_bytes = int.from_bytes(buf, "little")
            buf = bytearray(4)
            fcntl.ioctl(fd, BLKSSZGET, buf, True)
            self.block_size_bytes = int.from_bytes(buf, "little")
            self.max_request_bytes = max_request_bytes(st.st_rdev)
            loop = devstate.loop_device(self.path)
            self.backing_file = (loop["back-file"] or None) if loop else None
            self.loop_direct_io = bool(loop["dio"]) if loop else None
            if self.backing_file is not None and self.loop_direct_io is False and not self.allow_buffered_loop:
                raise LoopBufferedError(
                    self.path,
                    f"is a loop device over {self.backing_file} without direct I/O (loop/dio=0): its reads "
                    "would be served from the page cache of the backing file and time RAM, not storage; "
                    f"re-attach it with `losetup --direct-io=on`",
                )
            if self.backing_file is not None and os.path.isfile(self.backing_file):
                regions = unwritten_regions(self.backing_file)
                if regions:
                    raise UnwrittenDataError(f"{self.path} (loop device over {self.backing_file})", regions)
        else:
            self.size_bytes = st.st_size
            self.block_size_bytes = int(st.st_blksize) if st.st_blksize > 0 else mmap.PAGESIZE
            self.backing_file, self.loop_direct_io, self.max_request_bytes = None, None, None
            if self.size_bytes == 0:
                raise UnalignedSizeError(self.path, "is empty (size_bytes=0); nothing to measure")
            regions = unwritten_regions(self.path, fd)
            if regions:
                raise UnwrittenDataError(self.path, regions)
        if self.size_bytes <= 0:
            raise UnalignedSizeError(self.path, "has size 0 (an unattached loop device?); nothing to measure")
        if self.size_bytes % self.block_size_bytes:
            raise UnalignedSizeError(
                self.path,
                f"size_bytes={self.size_bytes} is not a multiple of block_size_bytes={self.block_size_bytes}",
            )
        self._ensure_buffer(self.block_size_bytes)
        self.timer_overhead_ns = measure_timer_overhead_ns()
        # The first read tells whether O_DIRECT really works here (some file systems accept the flag
        # at open and fail with EINVAL on the first read).
        try:
            os.preadv(fd, self._views[self.block_size_bytes], 0)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                raise DirectIOUnsupportedError(
                    self.path, "refused an aligned O_DIRECT read (EINVAL at the first read); refusing buffered reads"
                ) from None
            raise DeviceIOError(self.path, 0, self.block_size_bytes, exc) from None

    def _ensure_buffer(self, length: int) -> list[memoryview]:
        views = self._views.get(length)
        if views is not None:
            return views
        if self._buf is None or len(self._buf) < length:
            size = -(-length // mmap.PAGESIZE) * mmap.PAGESIZE
            for v in self._views.values():
                v[0].release()
            self._views.clear()
            if self._buf is not None:
                self._buf.close()
            self._buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # page-aligned
        views = [memoryview(self._buf)[:length]]
        self._views[length] = views
        return views

    # ----------------------------------------------------------------- checks

    def _check_length(self, length_bytes) -> int:
        return check_length(length_bytes, self.block_size_bytes, self.size_bytes)

    def _check_offset(self, offset_bytes, length: int) -> int:
        try:
            offset = operator.index(offset_bytes)
        except TypeError:
            raise ValueError(f"offset_bytes must be an integer, not {offset_bytes!r}") from None
        if offset < 0 or offset % self.block_size_bytes or offset + length > self.size_bytes:
            raise ValueError(
                f"offset_bytes={offset} must be a non-negative multiple of block_size_bytes={self.block_size_bytes} "
                f"with offset_bytes + length_bytes <= size_bytes={self.size_bytes}"
            )
        return offset

    def _closed(self) -> ValueError:
        return ValueError(f"{self.path}: the backend is closed")

    # ----------------------------------------------------------------- reads

    def read(self, offset_bytes: int, length_bytes: int) -> float:
        """Read LENGTH_BYTES at OFFSET_BYTES with O_DIRECT; return the seconds it took [s]."""
        if self._fd < 0:
            raise self._closed()
        length = self._check_length(length_bytes)
        offset = self._check_offset(offset_bytes, length)
        views = self._views.get(length) or self._ensure_buffer(length)
        clock = time.perf_counter_ns
        try:
            t0 = clock()
            n = os.preadv(self._fd, views, offset)
            t1 = clock()
        except OSError as exc:
            raise DeviceIOError(self.path, offset, length, exc) from None
        if n != length:
            raise DeviceIOError(self.path, offset, length, f"short read of {n} bytes")
        return (t1 - t0 - self.timer_overhead_ns) * 1e-9

    def read_many(self, offsets: Iterable[int], length_bytes: int) -> np.ndarray:
        """Read LENGTH_BYTES at each offset in turn (queue depth 1); seconds per read [s], float64."""
        if self._fd < 0:
            raise self._closed()
        length = self._check_length(length_bytes)
        offs = check_offsets(offsets, length, self.block_size_bytes, self.size_bytes)
        if offs.size == 0:
            return np.empty(0, dtype=np.float64)
        views = self._views.get(length) or self._ensure_buffer(length)
        fd = self._fd
        preadv = os.preadv
        clock = time.perf_counter_ns
        offs_list = offs.tolist()
        ns = [0] * len(offs_list)
        i = 0
        try:
            with collector_paused():  # a collection between two stamps would be timed as the drive's
                for i, off in enumerate(offs_list):
                    t0 = clock()
                    n = preadv(fd, views, off)
                    t1 = clock()
                    if n != length:
                        raise DeviceIOError(self.path, off, length, f"short read of {n} bytes")
                    ns[i] = t1 - t0
        except OSError as exc:
            if isinstance(exc, DeviceIOError):
                raise
            raise DeviceIOError(self.path, offs_list[i], length, exc) from None
        return (np.asarray(ns, dtype=np.float64) - self.timer_overhead_ns) * 1e-9

    # ----------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Close the device; safe to call more than once."""
        for v in self._views.values():
            v[0].release()
        self._views.clear()
        if self._buf is not None:
            self._buf.close()
            self._buf = None
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def __enter__(self) -> "DirectBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"DirectBackend({self.path!r}, kind={getattr(self, 'kind', '?')}, size_bytes={getattr(self, 'size_bytes', '?')}, "
            f"block_size_bytes={getattr(self, 'block_size_bytes', '?')}, {state})"
        )




def open_backend(path: str | os.PathLike, *, allow_buffered_loop: bool = False) -> DirectBackend:
    """Open a block device or a regular file for timed, read-only O_DIRECT reads.

    Raises :class:`BackendError` (a ``ValueError``) naming the path when the
    target cannot be measured honestly: not a block device or regular file,
    busy (mounted, swap, held), size not a multiple of the block size, O_DIRECT
    unsupported, or a file (or a loop device's backing file) with holes or
    unwritten extents. A loop device without direct I/O (its reads served by
    the backing file's page cache) is refused unless ALLOW_BUFFERED_LOOP.
    """
    return DirectBackend(path, allow_buffered_loop=allow_buffered_loop)
