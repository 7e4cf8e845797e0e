"""Block workloads: fio jobs and the loop-image study's file copy, with their expected counts.

They join :mod:`diskmodel.model.predictions.workload` (which re-exports them) as the
workloads of the block layers (:mod:`diskmodel.model.stacks.block`);
:func:`diskmodel.model.predict.predict` takes them on any stack.

:class:`FioJob` is one fio job on a block device or a file: sequential or
random, read or write, of one block size, ``size_bytes`` in all (fio's
``--rw``, ``--bs``, ``--size``, ``--iodepth``, ``--direct``, and for writes
``--end_fsync``); random
offsets are aligned to the block size (fio's default ``blockalign``).
:func:`fio_jobs` gives eight: {sequential, random} x
{read, write} x {4 KiB, 1 MiB}.  Its counts are exact: size / bs requests.

:class:`FileCopy` is the loop-image study's experiment: files of 1, 5, 10, 25 and 50 MB
copied into the file system (write, then ``fsync``, timed) and read back
with a cold cache (timed), each size ``repeats`` times and averaged.  The
seed does not say whether its MB is 10^6 or 2^20 bytes; we take 2^20
(``dd bs=1M``).  Expected counts per file, on a file system of ``kind``:

* data writes: ceil(size / ``write_request_bytes``) sequential requests
  (write-back in requests of at most ``max_sectors_kb``, 512 KiB);
* metadata writes: :data:`METADATA_BLOCKS_PER_FILE` blocks (inode,
  directory block, block bitmap, group descriptor) plus one mapping block
  (ext2/3 indirect block) per :data:`BYTES_PER_MAPPING_BLOCK` of data,
  each written twice on a journaled file system (journal, then in place),
  as random 4 KiB writes;
* data reads: ceil(size / ``read_request_bytes``) sequential requests
  (read-ahead windows, ``read_ahead_kb`` 128 KiB);
* copies: the file's bytes between the application and the page cache,
  once each way.

Copies go to new files, deleted between repeats: the first repeat writes
blocks never written (``fresh``: a sparse image or thin volume allocates
them), later repeats reuse the blocks freed (unless ``keep_files``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .._checks import evolve as _evolve
from .._checks import FieldError, flag, one_of, positive_rate, show, whole_number
from ..units import KIB, MIB

FIO_RW = ("read", "write", "randread", "randwrite")
#: The loop-image study's file sizes [bytes] (MB read as MiB).
SEED_003_FILE_SIZES_BYTES = (1 * MIB, 5 * MIB, 10 * MIB, 25 * MIB, 50 * MIB)
#: The loop-image study's repeats per size.
SEED_003_REPEATS = 10
#: Metadata blocks a new file dirties besides its mapping blocks: inode, directory block, bitmap, group descriptor.
METADATA_BLOCKS_PER_FILE = 4
#: Data one mapping block maps: an ext2/3 indirect block of 1024 4-KiB block numbers [bytes].
BYTES_PER_MAPPING_BLOCK = 4 * MIB
#: File systems that journal their metadata (the copy's metadata is written twice).
JOURNALED = {"ext2": False, "ext3": True, "ext4": True, "xfs": True, "btrfs": True}


@dataclass(frozen=True)
class FioJob:
    """One fio job.

    Attributes
    ----------
    rw : str
        fio's ``--rw``: "read", "write" (sequential), "randread", "randwrite".
    block_size_bytes : int
        ``--bs`` [bytes], >= 1.
    size_bytes : int
        Bytes the job moves [bytes], >= block_size_bytes: fio's ``--size``, or its ``--io_size`` where the
        region is given apart.
    iodepth : int
        ``--iodepth`` [count], >= 1 (libaio above 1).
    direct : bool
        ``--direct=1`` (O_DIRECT); the model covers O_DIRECT jobs only.
    fresh : bool
        The job writes blocks never written since the device was made
        (the first pass on a new thin volume or sparse image).
    end_fsync : bool
        fio's ``--end_fsync=1`` (a write job only): the job ends with fsync
        and counts its time, so nothing it wrote stays in a page cache (a
        buffered loop image's); False: the stream may end in the host's
        page cache.
    name : str
    region_bytes : int or None
        fio's ``--size`` where it differs from the bytes moved: the region of the target, from its start,
        that the job's offsets lie in [bytes], >= block_size_bytes. None: the bytes it moves (fio's ``--size``
        alone is both: a random job covers each block of ``[0, size)`` once, in random order, and never
        goes beyond it, however large the device).
    """

    rw: str
    block_size_bytes: int = 4 * KIB
    size_bytes: int = 64 * MIB
    iodepth: int = 1
    direct: bool = True
    fresh: bool = False
    end_fsync: bool = True
    name: str = ""
    region_bytes: int | None = None

    def __post_init__(self):
        one_of("rw", self.rw, FIO_RW)
        bs = whole_number("block_size_bytes", self.block_size_bytes, minimum=1)
        object.__setattr__(self, "block_size_bytes", bs)
        object.__setattr__(self, "size_bytes", whole_number("size_bytes", self.size_bytes, minimum=bs,
                                                            ))
        object.__setattr__(self, "iodepth", whole_number("iodepth", self.iodepth, minimum=1))
        if not flag("direct", self.direct):
            raise ValueError("direct: the model covers O_DIRECT jobs only (direct=True); a buffered job measures "
                             "the page cache")
        flag("fresh", self.fresh)
        flag("end_fsync", self.end_fsync)
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string (got {show(self.name)})")
        if self.region_bytes is not None:
            object.__setattr__(self, "region_bytes", whole_number("region_bytes", self.region_bytes, minimum=bs))

    @property
    def region(self) -> int:
        """The region of the target the job's offsets lie in [bytes] (fio's ``--size``)."""
        return self.size_bytes if self.region_bytes is None else self.region_bytes

    def evolve(self, **changes) -> "FioJob":
        return _evolve(self, changes)

    @property
    def is_write(self) -> bool:
        return self.rw in ("write", "randwrite")

    @property
    def sequential(self) -> bool:
        return self.rw in ("read", "write")

    @property
    def label(self) -> str:
        """The job's name, or one made of its fields ("randwrite_4k")."""
        if self.name:
            return self.name
        bs = self.block_size_bytes
        size = f"{bs // MIB}m" if bs % MIB == 0 else f"{bs // KIB}k" if bs % KIB == 0 else f"{bs}b"
        return f"{'seq' if self.sequential else 'rand'}{'write' if self.is_write else 'read'}_{size}"

    def expected_counts(self) -> dict:
        """{"requests", "bytes_read", "bytes_written"}: size / bs requests (a last short one counted whole)."""
        requests = math.ceil(self.size_bytes / self.block_size_bytes)
        moved = float(self.size_bytes)
        return {"requests": float(requests), "bytes_read": 0.0 if self.is_write else moved,
                "bytes_written": moved if self.is_write else 0.0}

    def check_fits(self, size_bytes: int, what: str = "device") -> None:
        """FieldError naming ``size_bytes`` when the job's region is larger than *size_bytes* (of a
        *what*: the device, or the file system a file of the job lies in)."""
        if self.region > size_bytes:
            verb = "moves" if self.region_bytes is None else "works in a region of"
            raise FieldError("size_bytes", f"the job {verb} {self.region} bytes, more than the {what}'s {size_bytes}",
                             sep=": ")

    def file_spec(self) -> str:
        """The same job on a file in a file system, as a workload string
        (:func:`diskmodel.model.iopath.parse_workload`): a file of the job's region, its bytes moved with
        O_DIRECT at its queue depth."""
        return (f"fio:rw={self.rw},bs={self.block_size_bytes},size={self.region},io_size={self.size_bytes},"
                f"iodepth={self.iodepth},direct=1")

    def fio_arguments(self, filename: str) -> list[str]:
        """fio's command-line options for this job on *filename* (text only; nothing is run)."""
        if not isinstance(filename, str) or not filename or "\n" in filename:
            raise ValueError(f"filename must be a one-line non-empty path (got {show(filename)})")
        return [f"--name={self.label}", f"--filename={filename}", f"--rw={self.rw}",
                f"--bs={self.block_size_bytes}", f"--size={self.region}",
                *([f"--io_size={self.size_bytes}"] if self.region != self.size_bytes else []), f"--iodepth={self.iodepth}",
                f"--ioengine={'libaio' if self.iodepth > 1 else 'psync'}", "--direct=1",
                "--output-format=json", *(["--end_fsync=1"] if self.is_write and self.end_fsync else [])]


def fio_jobs(size_bytes: int = 64 * MIB, *, iodepth: int = 1, fresh: bool = False) -> dict:
    """The eight fio jobs by label: {seq, rand} x {read, write} x {4k, 1m}, *size_bytes* each."""
    jobs = {}
    for rw in FIO_RW:
        for bs in (4 * KIB, 1 * MIB):
            job = FioJob(rw, bs, size_bytes, iodepth, fresh=fresh)
            jobs[job.label] = job
    return jobs


@dataclass(frozen=True)
class FileCopy:
    """The loop-image study's file copy: write then read back files of several sizes, averaged over repeats.

    Attributes
    ----------
    file_sizes_bytes : tuple of int
        [bytes], each >= 1 (default 1, 5, 10, 25, 50 MiB).
    repeats : int
        Copies of each size [count], >= 1 (default 10).
    write_request_bytes : int
        Largest write-back request [bytes] (default 512 KiB, ``max_sectors_kb``).
    read_request_bytes : int
        Read-ahead window [bytes] (default 128 KiB, ``read_ahead_kb``).
    copy_rate_bytes_per_s : float
        Page-cache copy rate [bytes/s] (inf: free).
    keep_files : bool
        Copies are kept (every repeat writes fresh blocks) or deleted
        between repeats (only the first does).
    """

    file_sizes_bytes: tuple = SEED_003_FILE_SIZES_BYTES
    repeats: int = SEED_003_REPEATS
    write_request_bytes: int = 512 * KIB
    read_request_bytes: int = 128 * KIB
    copy_rate_bytes_per_s: float = 4.0 * 2**30
    keep_files: bool = False

    def __post_init__(self):
        sizes = self.file_sizes_bytes
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (tuple, list)) or not sizes:
            raise ValueError(f"file_sizes_bytes must be a non-empty list of sizes (got {show(sizes)})")
        object.__setattr__(self, "file_sizes_bytes",
                           tuple(whole_number("file_sizes_bytes", s, minimum=1) for s in sizes))
        object.__setattr__(self, "repeats", whole_number("repeats", self.repeats, minimum=1))
        for name in ("write_request_bytes", "read_request_bytes"):
            object.__setattr__(self, name, whole_number(name, getattr(self, name), minimum=512))
        positive_rate("copy_rate_bytes_per_s", self.copy_rate_bytes_per_s)
        flag("keep_files", self.keep_files)

    def evolve(self, **changes) -> "FileCopy":
        return _evolve(self, changes)

    @property
    def fresh_share(self) -> float:
        """Share of the copies that write blocks never written before [0..1]."""
        return 1.0 if self.keep_files else 1.0 / self.repeats

    def expected_counts(self, kind: str = "ext3") -> list[dict]:
        """Per file size, the expected I/O of one copy on a file system of *kind* (see the module docstring).

        Each dict: size_bytes, data_write_requests, metadata_writes,
        data_read_requests, copied_bytes (both ways).
        """
        one_of("kind", kind, tuple(JOURNALED))
        out = []
        for size in self.file_sizes_bytes:
            mapping = math.ceil(size / BYTES_PER_MAPPING_BLOCK) if kind in ("ext2", "ext3") else 1
            metadata = (METADATA_BLOCKS_PER_FILE + mapping) * (2 if JOURNALED[kind] else 1)
            out.append({"size_bytes": size, "data_write_requests": math.ceil(size / self.write_request_bytes),
                        "metadata_writes": metadata,
                        "data_read_requests": math.ceil(size / self.read_request_bytes),
                        "copied_bytes": 2 * size})
        return out


__all__ = ["BYTES_PER_MAPPING_BLOCK", "FIO_RW", "FileCopy", "FioJob", "JOURNALED", "METADATA_BLOCKS_PER_FILE",
           "SEED_003_FILE_SIZES_BYTES", "SEED_003_REPEATS", "fio_jobs"]
