"""A loop device over an image file on a host file system, as a block node; nested N deep.

``losetup`` exposes a file as a block device; the file lies on a host file
system on a host block device -- itself possibly another loop device
(seed 000, figure 5: one, two, three nested layers).  :class:`LoopFile`
costs each request on it as the request it becomes on the host device,
plus what the loop layer and the host file system add:

* **page cache and copy** (every layer): the loop driver's worker reads or
  writes the backing file through the host's page cache (unless
  ``direct_io``, ``losetup --direct-io=on``), which copies the request's
  bytes once more (``size / copy_rate_bytes_per_s``) and costs a fixed
  ``request_overhead_s`` (the worker's wake-up and the file-system call);
* **allocation** (a *sparse* image, made by ``truncate`` or ``dd seek=``,
  on a first write, ``BlockRequests.fresh``, which stays fresh on the host:
  its blocks are newly allocated there too): the host file system
  allocates the blocks and journals the allocation:
  ``allocation_metadata_bytes`` of metadata (block bitmap, group
  descriptor, extent or indirect block) written in place (a random write)
  and, on a journaled host file system, first appended to the journal (a
  sequential write), once per
  request for random writes and once per ``allocation_unit_bytes`` for
  sequential ones (delayed allocation gathers a stream into extents).  A
  *zero-filled* image (``dd if=/dev/zero``) has every block allocated
  already and pays none;
* **fragmentation**: the image's blocks lie in ``extent_count`` extents on
  the host device.  A sequential stream of S-byte requests crosses from
  one extent to the next with probability S / (mean extent length) per
  request, and a crossing costs the host device's positioning (a random
  request's time less a sequential one's).

* **the page cache's own effects** (buffered, not ``direct_io``).  Reads:
  the host's read-ahead reads one window ahead of the reader
  (``readahead_bytes``, ``read_ahead_kb``; the kernel's on-demand
  read-ahead starts the next window asynchronously when the reader reaches
  the current one), so the host sees sequential requests of
  max(request, window) with two in flight; a sequential read smaller than
  the window is served from it (one host read per window / size
  requests), so small sequential reads through a loop layer can be faster
  than on its host device.  Writes are copied into the host's page cache
  and written back by the flusher, which submits the dirty pages together,
  up to ``writeback_queue_depth`` requests in flight (the host device's
  ``nr_requests``): the host sees the requests at that depth, so its fixed
  cost per request overlaps the others' transfers.  A stream that ends
  with fsync (fio's ``end_fsync``, seed 003's ``conv=fsync``;
  ``BlockRequests.stream_bytes`` None) pays the copy and then the
  write-back.  A stream that does not (``stream_bytes`` given) has its
  first ``dirty_limit_bytes`` absorbed at the cost of the copy alone and
  the rest at the write-back's pace (``vm.dirty_bytes``, or
  ``vm.dirty_ratio`` of the memory available; None: no limit known, every
  write at the write-back's pace).
"""
from __future__ import annotations

from dataclasses import dataclass

from ._checks import evolve as _evolve
from ._checks import finite_scalar, flag, one_of, positive_rate, show, whole_number
from .block import BlockRequests, BlockTime, block_time_of, mixture
from .nodes import is_node, node_type, text_field
from .units import GIB, KIB, MIB

#: Host file systems a loop image may lie on, and whether each journals its metadata.
HOST_FILE_SYSTEMS = {"ext2": False, "ext3": True, "ext4": True, "xfs": True, "btrfs": True}
ALLOCATIONS = ("sparse", "zero_filled")


@node_type("loop_file")
@dataclass(frozen=True)
class LoopFile:
    """A loop device over an image file on a host file system on *host* (any block node).

    Attributes
    ----------
    host : block node
        The device the host file system is on (a partition, another LoopFile, ...).
    image_size_bytes : int
        The image file's size [bytes]; it must fit the host device.
    allocation : str
        "sparse" (blocks allocated on first write) or "zero_filled" (all
        allocated when the image was made).
    host_file_system : str
        "ext2", "ext3", "ext4", "xfs" or "btrfs" (ext2 journals nothing).
    extent_count : int
        Extents the image occupies on the host device [count], >= 1 (1:
        contiguous; ``filefrag`` counts them).
    direct_io : bool
        ``losetup --direct-io=on``: no page-cache copy.
    copy_rate_bytes_per_s : float
        The layer's own rate on a write [bytes/s], > 0 (inf: free): the
        copy into the image's page cache and the CPU work of writing it
        back (at fsync each layer's write-back waits for the one above,
        so the layers pay it in series).  At least the bare buffered
        ``write`` of new pages; measured where the device costs nothing,
        one layer over memory (``benchmarks/layers_check.py``).
    read_copy_rate_bytes_per_s : float or None
        The same on a read (from cached pages) [bytes/s], > 0; None: as
        on a write.
    request_overhead_s : float
        Loop worker and file-system call per request [s], >= 0.
    allocation_metadata_bytes : int
        Host metadata written per allocation [bytes], >= 0.
    allocation_unit_bytes : int
        Bytes a sequential stream allocates at once [bytes], >= 1 (default
        128 MiB: one block group's bitmap block maps 32768 4 KiB blocks,
        and ext4's longest extent is as long, so delayed allocation of a
        stream writes its metadata once per 128 MiB).
    readahead_bytes : int
        The host's read-ahead window on the image [bytes], >= 0
        (``read_ahead_kb``, 128 KiB by default; 0: none).
    writeback_queue_depth : int
        Write-back requests the flusher keeps in flight on the host device
        [count], >= 1 (its ``nr_requests``; 128, the loop driver's
        ``hw_queue_depth``, by default).
    dirty_limit_bytes : int or None
        Written bytes the host's page cache holds before writers wait for
        write-back [bytes] (``vm.dirty_bytes``, or ``vm.dirty_ratio`` of
        the memory available); None: every write at write-back's pace.
    name : str
        E.g. "/dev/loop1".
    """

    host: object
    image_size_bytes: int
    allocation: str = "sparse"
    host_file_system: str = "ext4"
    extent_count: int = 1
    direct_io: bool = False
    copy_rate_bytes_per_s: float = 4.0 * GIB
    read_copy_rate_bytes_per_s: float | None = None
    request_overhead_s: float = 10e-6
    allocation_metadata_bytes: int = 3 * 4 * KIB
    allocation_unit_bytes: int = 128 * MIB
    readahead_bytes: int = 128 * KIB
    writeback_queue_depth: int = 128
    dirty_limit_bytes: int | None = None
    name: str = ""

    def __post_init__(self):
        if not is_node(self.host) or not hasattr(self.host, "block_time"):
            raise ValueError(f"host must be a block node (got {show(self.host)})")
        image = whole_number("image_size_bytes", self.image_size_bytes, minimum=1)
        if image > self.host.size_bytes:
            raise ValueError(f"image_size_bytes ({image}) does not fit host ({self.host.size_bytes} bytes)")
        object.__setattr__(self, "image_size_bytes", image)
        one_of("allocation", self.allocation, ALLOCATIONS)
        one_of("host_file_system", self.host_file_system, tuple(HOST_FILE_SYSTEMS))
        object.__setattr__(self, "extent_count", whole_number("extent_count", self.extent_count, minimum=1,
                                                              maximum=max(1, image // 4096),
                                                              maximum_is="one extent per 4 KiB block"))
        flag("direct_io", self.direct_io)
        positive_rate("copy_rate_bytes_per_s", self.copy_rate_bytes_per_s)
        if self.read_copy_rate_bytes_per_s is not None:
            positive_rate("read_copy_rate_bytes_per_s", self.read_copy_rate_bytes_per_s)
        finite_scalar("request_overhead_s", self.request_overhead_s, nonnegative=True)
        object.__setattr__(self, "allocation_metadata_bytes",
                           whole_number("allocation_metadata_bytes", self.allocation_metadata_bytes, minimum=0))
        object.__setattr__(self, "allocation_unit_bytes",
                           whole_number("allocation_unit_bytes", self.allocation_unit_bytes, minimum=1))
        object.__setattr__(self, "readahead_bytes", whole_number("readahead_bytes", self.readahead_bytes, minimum=0))
        object.__setattr__(self, "writeback_queue_depth",
                           whole_number("writeback_queue_depth", self.writeback_queue_depth, minimum=1))
        if self.dirty_limit_bytes is not None:
            object.__setattr__(self, "dirty_limit_bytes",
                               whole_number("dirty_limit_bytes", self.dirty_limit_bytes, minimum=0))
        text_field("name", self.name)

    def evolve(self, **changes) -> "LoopFile":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    @property
    def size_bytes(self) -> int:
        return self.image_size_bytes

    @property
    def depth(self) -> int:
        """Loop layers from this one down to the first host that is not a loop file [count]."""
        return 1 + (self.host.depth if isinstance(self.host, LoopFile) else 0)

    def describe(self) -> str:
        return (f"loop device {self.name or '(unnamed)'} over a {self.allocation.replace('_', '-')} "
                f"{self.image_size_bytes}-byte image on {self.host_file_system}"
                f"{f', {self.extent_count} extents' if self.extent_count > 1 else ''}"
                f"{', direct I/O' if self.direct_io else ''}")

    def block_time(self, requests: BlockRequests, env) -> BlockTime:
        size = requests.size_bytes
        # the host sees the same request on the image's blocks; a first write into a sparse image
        # lands on host blocks just allocated, fresh to the host too (a zero-filled image's were written)
        allocating = requests.fresh and requests.is_write and self.allocation == "sparse"
        buffered = not self.direct_io
        window = min(self.readahead_bytes, self.host.size_bytes)
        on_host = requests.evolve(fresh=allocating, stream_bytes=None if buffered else requests.stream_bytes)
        if buffered and requests.sequential and not requests.is_write and window:
            # read-ahead: host reads of max(request, window), one in flight ahead of the reader
            ahead = BlockRequests(max(size, window), sequential=True, queue_depth=max(2, requests.queue_depth))
            below = block_time_of(self.host, ahead, env)
            if size < window:     # one host read of the window serves window / size requests
                below = below.scaled(size / window)
            below = BlockTime(size, below.time_s, below.interval_s, below.parts, below.member_ios)
        elif buffered and requests.is_write:
            below = self._written_back(on_host, env)
        else:
            below = block_time_of(self.host, on_host, env)
        own = {"loop_overhead_s": self.request_overhead_s,
               "loop_copy_s": size / self._copy_rate(requests.is_write) if buffered else 0.0}
        parts = {}
        if allocating and self.allocation_metadata_bytes:
            allocations = size / max(self.allocation_unit_bytes, size) if requests.sequential else 1.0
            metadata = BlockRequests(min(self.allocation_metadata_bytes, self.host.size_bytes), is_write=True)
            # in place at write-back (random); on a journaled host first appended to the journal (sequential)
            cost = block_time_of(self.host, metadata, env).time_s
            if HOST_FILE_SYSTEMS[self.host_file_system]:
                cost += block_time_of(self.host, metadata.evolve(sequential=True), env).time_s
            parts["loop_allocation_s"] = allocations * cost
        if requests.sequential and self.extent_count > 1:
            crossing = min(1.0, size * self.extent_count / self.image_size_bytes)
            random = block_time_of(self.host, requests.evolve(fresh=False, sequential=False), env)
            parts["loop_fragmentation_s"] = crossing * max(0.0, random.time_s - below.time_s)
        paced = below.plus(**own, **parts)
        if not (buffered and requests.is_write and requests.stream_bytes and self.dirty_limit_bytes):
            return paced
        # a stream that does not end with fsync: its first dirty_limit_bytes stay in the page cache
        absorbed = min(1.0, self.dirty_limit_bytes / requests.stream_bytes)
        cached = BlockTime(size, 0.0, 0.0, {}, 0.0).plus(**own)
        return mixture(size, [cached, paced], [absorbed, 1.0 - absorbed])

    def _copy_rate(self, is_write: bool) -> float:
        read = self.read_copy_rate_bytes_per_s
        return self.copy_rate_bytes_per_s if is_write or read is None else read

    def _written_back(self, requests: BlockRequests, env) -> BlockTime:
        """A buffered write as the host sees it: one request's latency, and the interval of the
        flusher's stream of them at ``writeback_queue_depth``."""
        alone = block_time_of(self.host, requests, env)
        depth = max(requests.queue_depth, self.writeback_queue_depth)
        flushed = block_time_of(self.host, requests.evolve(queue_depth=depth), env)
        return BlockTime(alone.size_bytes, alone.time_s, min(alone.interval_s, flushed.interval_s), alone.parts,
                         alone.member_ios)


def nested_loop_files(host, depth: int, *, image_size_bytes: int | None = None, **fields) -> object:
    """*depth* loop files, each an image on the one below, over *host* (depth 0: *host* itself).

    Each image is *image_size_bytes* (default: its host's size less 1/16,
    room for the host file system's own metadata); *fields* as :class:`LoopFile`.
    """
    levels = whole_number("depth", depth, minimum=0)
    node = host
    for level in range(levels):
        size = image_size_bytes if image_size_bytes is not None else node.size_bytes - node.size_bytes // 16
        node = LoopFile(node, size, name=f"/dev/loop{level + 1}", **fields)
    return node


__all__ = ["ALLOCATIONS", "HOST_FILE_SYSTEMS", "LoopFile", "nested_loop_files"]
