"""A loop device over an image file on a host file system, as a block node; nested N deep.

``losetup`` exposes a file as a block device; the file lies on a host file
system on a host block device -- itself possibly another loop device
(Dagenais, figure 5: one, two, three nested layers).

What the loop driver does to the requests sent to it is the I/O path's
(:mod:`diskmodel.model.iopath.path`, ``_loop``; drivers/block/loop.c,
lo_rw_aio / do_req_filebacked): each request becomes a read or write of
the image file through the host's page cache (``direct_io``: past it),
a flush an fsync of the image; the host file system
(``host_file_system``) maps the file's blocks onto ``host``, the host
reading ahead ``readahead_bytes`` on the image; a *sparse*
image (``allocation``) allocates its blocks on first write, a
*zero-filled* one has them all from the start.  Their time is the drives'
(:mod:`diskmodel.model.iopath.timing`).

A buffered loop device's worker takes ``request_overhead_s`` per request
and copies its bytes at the copy rates (:class:`~diskmodel.model.iopath.timing.LoopWorker`).
The other fields (``extent_count``, ``allocation_metadata_bytes``,
``allocation_unit_bytes``, ``writeback_queue_depth``, ``dirty_limit_bytes``)
describe the host's costs and settings as measured or provisioned; the
timed path does not use them, and a prediction's assumptions name those
given other than their defaults.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._checks import evolve as _evolve
from .._checks import finite_scalar, flag, one_of, positive_rate, show, whole_number
from .nodes import is_node, node_type, text_field
from ..units import GIB, KIB, MIB

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
        The buffered layer's worker's rate on a write [bytes/s], > 0 (inf:
        free): the copy into the image's page cache and the CPU work of
        writing it back (at fsync each layer's write-back waits for the
        one above, so the layers pay it in turn).  At least the bare
        buffered ``write`` of new pages; measured where the device costs
        nothing, one layer over memory (``benchmarks/layers_check.py``).
    read_copy_rate_bytes_per_s : float or None
        The same on a read (from cached pages) [bytes/s], > 0; None: as
        on a write.
    request_overhead_s : float
        The buffered layer's worker's time per request besides the copy
        (the loop worker and the file-system call) [s], >= 0.
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
    read_segment_bytes : int
        Bytes the loop worker reads of the image at a time in buffered
        mode [bytes], >= 0: 0, each request in one read (the host's Linux
        6.18); 4096, one page at a time, as Linux 6.1 (the VM's kernel)
        does (drivers/block/loop.c, lo_read_simple: one ``vfs_iter_read``
        per single-page bio_vec), so that the host's read-ahead sees
        small sequential reads and reads the image one window at a time.
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
    read_segment_bytes: int = 0
    writeback_queue_depth: int = 128
    dirty_limit_bytes: int | None = None
    name: str = ""

    def __post_init__(self):
        if not is_node(self.host) or not hasattr(self.host, "size_bytes"):
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
        object.__setattr__(self, "read_segment_bytes",
                           whole_number("read_segment_bytes", self.read_segment_bytes, minimum=0))
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
