"""The I/O path as pure request-stream transforms: each layer maps an input :class:`Stream` to the
stream(s) it sends to the device(s) below (numpy only, no I/O, no clocks).

Above the block layer: ``fileops`` (workloads as file operations: PostMark, fio, cp, metadata;
``workload_spec`` names them in one string), ``pagecache`` (read-ahead, dirty data, write-back,
reclaim), ``fs`` with ``fs_layout`` and ``fs_journal`` (ext2/3/4, xfs, btrfs: placement, metadata,
journal, copy-on-write). Block layers, one module each: ``partition``, ``dm_linear``, ``dm_striped``,
``md_raid`` (RAID 0, 1, 10), ``md_parity`` (RAID 5, 6), ``loop`` (direct I/O), ``dm_thin``, and
``block_layer`` (split, merge). ``path`` runs a stack's whole path (a buffered loop's image through
the host's cache and file system) and returns a stream, or a DataFrame, per device.
"""

from .block_layer import merge, split
from .dm_linear import dm_linear
from .dm_striped import dm_striped
from .dm_thin import ThinResult, dm_thin
from .loop import LoopResult, loop
from .md_parity import md_raid5, md_raid6
from .md_raid import md_raid0, md_raid1, md_raid10
from .partition import partition
from .stream import Flag, Op, Stream, concat, device_totals
from .fileops import FileOps, Kind
from .fs import file_system
from .fs_layout import FsParams
from .pagecache import CacheParams, page_cache
from .path import frames, run
from .workload_spec import parse_workload

__all__ = [
    "Flag", "Op", "Stream", "concat", "device_totals",
    "partition", "dm_linear", "dm_striped", "md_raid0", "md_raid1", "md_raid10", "md_raid5", "md_raid6",
    "loop", "LoopResult", "dm_thin", "ThinResult", "split", "merge",
    "FileOps", "Kind", "parse_workload", "CacheParams", "page_cache", "FsParams", "file_system", "run", "frames",
]
