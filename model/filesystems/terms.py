"""Which I/Os each term of eq. (1) issues, and what they cost on the volume below.

:func:`diskmodel.model.filesystems.filesystem.file_system_access_time` solves eq. (1)
for a PostMark run; this module does its accounting: :func:`plan_io` works
out everything that does not depend on the run's elapsed time (working sets,
hit probabilities, update counts, the regions the I/O falls in) and
:func:`evaluate_io` the I/O of a run of a given elapsed time, term by term,
in the service times the volume layer
(:class:`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk`) gives.

Which I/Os each term issues (B = block size; "active region" = the logical
area the workload's files occupy, see below):

T_DO, directory operations
    Every create, delete, read and append looks its name up in the (single,
    or per-subdirectory) directory: block reads that hit the page cache with
    P_H = min(1, cache / directory bytes), else a random read in the active
    region.  Every create and delete dirties one directory block (+ one
    htree index block with ``dir_index`` when the directory has more than one
    block).  Dirty blocks are written back to their home location once per
    write-back interval: of U updates spread over b blocks, b (1 - exp(-U/b))
    distinct blocks are written (coalescing), as one elevator-sorted batch of
    random writes in the active region.
T_MO, metadata (inode and indirect blocks)
    Inode reads for read/append/delete that miss the cache (working set:
    the inode-table blocks of the live files).  Inode block dirtied by every
    create, delete and append, and by every read when ``atime_updates``;
    an indirect block is dirtied by creates/appends of files beyond the 12
    direct blocks and read (on a miss) by reads and deletes of such files.
    Write-back coalesced as for directories.
T_FL, free lists (bitmaps and group descriptors)
    Every create and delete dirties the inode bitmap, the block bitmap and
    the group descriptor block; every append the block bitmap and group
    descriptor.  The bitmaps of the groups the active region spans form the
    working set; coalesced write-back as above.
T_DFA, direct file access
    Reads: a whole-file read hits the page cache with P_H = min(1, cache /
    live file bytes) (eq. 2: P_H * S_R / R_CT); a miss reads the file from
    disk with one random positioning per fragment (a file has 1 + its
    appends' runs, appends landing away from the file's end) plus the
    transfer of its bytes at the region's zone rate.  Writes: every byte
    written goes to disk by write-back (plus the copy into the cache at
    R_CT).  Newly created files are allocated consecutively, so the data of
    the creation phase's files form sequential runs, written in requests of
    ``max_request_bytes`` with one positioning per request; each append
    writes one run at its file's place (random in the active region) as part
    of the sorted batch of the flush, after reading the file's partial last
    block when it is not cached.  Creates of the transaction phase reuse
    blocks freed by deletes (``reuse_freed_space``): one random run each,
    in the same sorted batch.  ext3 ``ordered``/``journal`` flush data at
    every commit; ``writeback`` and ext2 with the write-back interval.
    With delayed allocation or copy-on-write (ext4, xfs, btrfs) every
    create is written as a sequential run in fresh space, and data go at
    the write-back interval; files up to ``inline_data_max_bytes`` (btrfs)
    have no data blocks: their bytes are metadata.  Every byte of file data
    moved also costs 1 / ``file_data_rate_bytes_per_s`` on the link stage.
T_J, journaling (ext3, ext4, xfs, btrfs)
    At every commit (every ``commit_interval_s``): a seek from the active
    region to the journal and back, a rotational latency, a sequential
    write of what the commit holds (:func:`_commit_bytes`: ext3/ext4 the
    distinct metadata blocks dirtied since the last commit, their
    descriptor blocks and the commit block, in ``journal`` mode also the
    data written since; xfs the dirty inodes' log items and the other dirty
    blocks; btrfs the dirty tree nodes, ``metadata_copies`` times, and the
    superblocks), and ``commit_overhead_s``.  ext2 has T_J = 0.

Metadata by kind (:func:`_metadata_sets`): ext has block groups (bitmaps,
group descriptors, inode tables, indirect blocks without extents); xfs has
allocation groups (free-space and inode B+trees, AG headers); btrfs keeps
everything in B-trees of ``metadata_node_bytes`` nodes, written only at
commits, copy-on-write (no home write-back: T_DO, T_MO and T_FL hold only
its reads and cache time, its writes are in T_J).

The active region: ext2/3 place a directory's files in and near its block
group, so PostMark's files (one directory, or ``subdirectories`` spread by
Orlov over groups) occupy about ``allocation_spread`` times their live bytes
from the start of the file system, not the whole partition; random I/O seeks
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .cache import _cache_service_time_s, hit_probability

TERMS = ("T_DO", "T_MO", "T_FL", "T_DFA", "T_J")
DST_PARTS = ("seek_s", "rotation_s", "transfer_s", "overhead_s", "cache_s")


@dataclass(frozen=True)
class FsaResult:
    """T_FSA of eq. (1) and what it is made of.

    Attributes
    ----------
    terms : dict
        T_DO, T_MO, T_FL, T_DFA, T_J [s].
    parts : dict of dict
        For each term: seek_s, rotation_s, transfer_s, overhead_s (command
        overhead, settle, interface) of its disk service times (T_DST), and
        cache_s (hits and memory copies, eq. 2) [s].
    io_counts : dict
        Disk I/Os [count]: metadata_ios (metadata blocks written home, read on
        misses and written to the journal), data_block_ios (file-system blocks
        of file data read or written), data_requests and metadata_requests
        (disk commands: each random request, each ``max_request_bytes``
        piece of a sequential run, each journal write piece), commits,
        flushes.
    details : dict
        Intermediate quantities (hit probabilities, active region, batch sizes).
    stages : dict
        Busy time per pipeline stage [s] (see ``FileSystem.overlapped_writeback``):
        cpu_s (cache_s of all terms), read_media_s and read_link_s
        (synchronous reads: positioning + media transfer + command overhead,
        and host transfer T_I), write_media_s and write_link_s (asynchronous
        write-back, commits and journal writes).
    mapping_parts : dict
        Host time the volume below spends remapping this I/O [s]
        (md_mapping_s, fb_mapping_s, request_mapping_s; eq. 12, all 0 on a
        partition): it counts towards the elapsed time (serial model) or the
        link stage (pipeline model).
    """

    terms: dict
    parts: dict
    io_counts: dict
    details: dict
    stages: dict = dataclasses.field(default_factory=dict)
    mapping_parts: dict = dataclasses.field(default_factory=dict)

    @property
    def mapping_s(self) -> float:
        """The volume's remapping time, the sum of ``mapping_parts`` [s]."""
        return sum(self.mapping_parts.values())

    @property
    def total_s(self) -> float:
        """Sum of the terms of eq. (1): the serial elapsed time [s]."""
        return float(sum(self.terms.values()))

    def pipeline_s(self, link_extra_s: float = 0.0) -> float:
        """max(application, media, link + *link_extra_s*) [s] (``FileSystem.overlapped_writeback``)."""
        st = self.stages
        application = st["cpu_s"] + st["read_media_s"] + st["read_link_s"]
        media = st["read_media_s"] + st["write_media_s"]
        link = st["read_link_s"] + st["write_link_s"] + float(link_extra_s)
        return float(max(application, media, link))

    def stage_times(self, link_extra_s: float = 0.0) -> dict:
        """application_s, media_s, link_s: the three stages' busy times [s]."""
        st = self.stages
        return {"application_s": st["cpu_s"] + st["read_media_s"] + st["read_link_s"],
                "media_s": st["read_media_s"] + st["write_media_s"],
                "link_s": st["read_link_s"] + st["write_link_s"] + float(link_extra_s)}

    def dst_breakdown(self) -> dict:
        """seek, rotation, transfer, overhead and cache time summed over terms [s]."""
        return {part: float(sum(self.parts[t][part] for t in TERMS)) for part in DST_PARTS}


def distinct_blocks(updates, blocks):
    """Expected distinct blocks hit by *updates* uniform over *blocks* blocks."""
    blocks = max(float(blocks), 1.0)
    return blocks * -np.expm1(-float(updates) / blocks)


def _mean(values) -> float:
    """The mean of a ServiceTime field: a scalar as it is (the mean of one number), an array averaged."""
    return float(values) if np.ndim(values) == 0 else float(np.mean(values))


class _Ledger:
    """Accumulates time per (term, part)."""

    def __init__(self, data_s_per_byte: float = 0.0):
        # the file-data path's cost per byte of file data, on the link stage besides T_I
        self.data_s_per_byte = float(data_s_per_byte)
        self.parts = {t: dict.fromkeys(DST_PARTS, 0.0) for t in TERMS}
        self.stages = dict.fromkeys(("cpu_s", "read_media_s", "read_link_s", "write_media_s", "write_link_s"), 0.0)

    def disk(self, term, count, service, *, is_write, data_bytes=0.0):
        """*count* disk I/Os each costing *service* (a ServiceTime of scalars), each moving *data_bytes* of file data."""
        if count <= 0:
            return
        p = self.parts[term]
        seek = count * _mean(service.seek_s)
        rotation = count * _mean(service.rotation_s)
        transfer = count * _mean(service.transfer_s)
        mechanics = count * _mean(service.command_overhead_s + service.settle_s)
        link = count * _mean(service.interface_s)
        link += count * float(data_bytes) * self.data_s_per_byte
        p["seek_s"] += seek
        p["rotation_s"] += rotation
        p["transfer_s"] += transfer
        p["overhead_s"] += mechanics + link
        kind = "write" if is_write else "read"
        self.stages[f"{kind}_media_s"] += seek + rotation + transfer + mechanics
        self.stages[f"{kind}_link_s"] += link

    def add(self, term, part, seconds, *, stage):
        """*seconds* of *part* of *term*, busy in pipeline *stage* (a key of ``stages``)."""
        self.parts[term][part] += float(seconds)
        self.stages[stage] += float(seconds)

    def terms(self):
        return {t: float(sum(self.parts[t].values())) for t in TERMS}



def _without_positioning(service):
    zeros = np.zeros(np.shape(service.seek_s))
    return dataclasses.replace(service, seek_s=zeros, settle_s=zeros, rotation_s=zeros)



def plan_io(volume, fs, counts, cache) -> dict:
    """Everything about a run on *volume* (a VolumeOnDisk) that does not depend on its elapsed time."""
    cfg = counts.config
    total = counts.total
    B = fs.block_size_bytes
    unit = fs.metadata_unit_bytes  # B, or a btrfs B-tree node
    fs_size = volume.size_bytes
    # files small enough to keep their data in the metadata (btrfs max_inline, ext4 inline_data)
    inline = _fraction_at_most(cfg.min_file_size_bytes, cfg.max_file_size_bytes, fs.inline_data_max_bytes)

    # ---- workload quantities
    live_files = max(counts.mean_live_files, 1.0)
    mean_live_size = 0.5 * (cfg.mean_initial_size_bytes + counts.mean_file_size_at_end_bytes)
    live_blocks = math.ceil(mean_live_size / B) if mean_live_size > 0 else 1
    live_bytes = live_files * live_blocks * B
    if live_bytes > fs_size:
        # the files would not fit: PostMark would fail with ENOSPC (no silent clamp to the volume)
        raise ValueError(f"workload: its live files take about {live_bytes / 1e6:.1f} MB ({live_files:.0f} files of "
                         f"{live_blocks} blocks of {B} bytes) but the file system holds {fs_size / 1e6:.1f} MB "
                         f"({fs_size} bytes); give fewer files (at most about {int(fs_size // (live_blocks * B))}) "
                         "or a larger file system")
    # the region the files occupy, from the start of the file system
    inode_bytes = live_files * fs.inode_size_bytes
    if fs.kind == "xfs":
        # a directory's files and inodes are allocated in its allocation group, near the directory
        active = min(fs_size // fs.allocation_groups, int(fs.allocation_spread * live_bytes + inode_bytes + B))
    elif fs.journal_mode == "cow":
        # btrfs: data block groups hold only data; the tree blocks go to the metadata block group (the "journal")
        active = min(fs_size, int(fs.allocation_spread * live_bytes * (1.0 - inline) + unit))
    else:
        active = min(fs_size, int(fs.allocation_spread * live_bytes + inode_bytes + fs.group_bytes))
    journal_start = int(fs.journal_offset_fraction * fs_size)
    journal_size = min(fs.journal_size_bytes, fs_size - journal_start)

    # ---- working sets of metadata blocks (of ``unit`` bytes)
    directories = max(1, cfg.subdirectories)
    sets = _metadata_sets(fs, live_files, live_bytes, inline, mean_live_size, active, unit)
    dir_blocks = max(directories, sets["dir"])
    inode_blocks, bitmap_blocks, gdt_blocks = sets["inode"], sets["bitmap"], sets["gdt"]
    direct_limit = 12 * B

    # fraction of files beyond the 12 direct blocks (they have an indirect
    # block): sizes taken uniform on [low, high] for new files, and on the
    # range of the same width ending at high with the live files' mean size.
    high, low = cfg.max_file_size_bytes, cfg.min_file_size_bytes

    def beyond_direct(mean_size):
        if fs.extents:  # PostMark's files fit in the extents the inode holds: no indirect block
            return 0.0
        lo = max(float(low), 2.0 * mean_size - high)
        if high <= lo:
            return 1.0 if high > direct_limit else 0.0
        return float(np.clip((high - direct_limit) / (high - lo), 0.0, 1.0))

    read_size = counts.mean_read_size_bytes
    append_size = counts.mean_append_size_bytes
    create_size = cfg.mean_initial_size_bytes

    # ---- hit probabilities (eq. 2 with cache.hit_probability)
    meta_ws = (dir_blocks + inode_blocks + bitmap_blocks + gdt_blocks) * unit
    data_cache = max(0.0, cache.size_bytes - meta_ws)
    p_meta = float(hit_probability(cache.size_bytes, max(meta_ws, 1.0)))
    p_data = float(hit_probability(data_cache, max(live_bytes, 1.0)))

    # ---- metadata update counts (U) and their working sets (b)
    creates, deletes, reads, appends = total.creates, total.deletes, total.reads, total.appends
    dir_updates = (creates + deletes) * (2.0 if (fs.dir_index and dir_blocks > 1) else 1.0)
    inode_updates = creates + deletes + appends + (reads if fs.atime_updates else 0.0)
    indirect_updates = creates * beyond_direct(create_size) + appends * beyond_direct(counts.mean_file_size_at_end_bytes)
    if fs.kind == "xfs":
        # free-space B+trees by block and by size, inode B+trees (inobt, finobt); AGF and AGI headers
        bitmap_updates = 4.0 * (creates + deletes) + 2.0 * appends
        gdt_updates = creates + deletes + appends
    elif fs.journal_mode == "cow":
        # btrfs: the extent tree and the free-space tree for every data extent allocated or freed;
        # the checksum tree for every data extent written or freed
        extents_changed = (creates + deletes + appends) * (1.0 - inline)
        bitmap_updates = 2.0 * extents_changed
        gdt_updates = extents_changed if fs.data_checksums else 0.0
    else:
        bitmap_updates = 2.0 * (creates + deletes) + appends
        gdt_updates = creates + deletes + appends
    lookups = creates + deletes + reads + appends
    # metadata reads on misses
    inode_reads = (reads + appends + deletes) * (1.0 - p_meta)
    # an inline file's data are read with its metadata: a node read on a miss, no data read
    inode_reads += reads * inline * (1.0 - p_data)
    dir_reads = lookups * (1.0 - p_meta) * math.log2(dir_blocks + 1) / max(1.0, math.log2(dir_blocks + 1))
    indirect_reads = (reads * beyond_direct(read_size) + deletes * beyond_direct(mean_live_size)) * (1.0 - p_data)

    fragments = 1.0 + 0.5 * (appends / max(creates, 1.0))
    return {
        "volume": volume, "fs": fs, "counts": counts, "cache": cache, "B": B,
        "active": active, "active_region": volume.region(0, active), "journal": (journal_start, journal_size),
        "fs_size": fs_size,
        "dir": (dir_updates, dir_blocks), "inode": (inode_updates, inode_blocks),
        "indirect": (indirect_updates, max(1.0, live_files * beyond_direct(mean_live_size))),
        "bitmap": (bitmap_updates, bitmap_blocks), "gdt": (gdt_updates, gdt_blocks),
        "reads_meta": {"T_DO": dir_reads, "T_MO": inode_reads + indirect_reads},
        "p_meta": p_meta, "p_data": p_data, "fragments": fragments,
        "read_size": read_size, "append_size": append_size, "create_size": create_size,
        "live_bytes": live_bytes, "live_files": live_files, "inline": inline, "unit": unit,
    }


def _fraction_at_most(low, high, limit) -> float:
    """The fraction of PostMark's file sizes (uniform over low .. high-1) of at most *limit* bytes."""
    if limit <= 0 or limit < low:
        return 0.0
    if high <= low:
        return 1.0 if low <= limit else 0.0
    return float(np.clip((limit - low + 1) / (high - low), 0.0, 1.0))


#: btrfs item sizes in a leaf, with the 25-byte item header [bytes]: dir item + dir index item
#: (30 + an 8-character name each); inode item (160) + inode ref (10 + name) + file extent item
#: (53; 21 + the data when inline); extent item with its back reference (53) + free-space entry;
#: a 4-byte crc32c per data block.
_BTRFS_DIR_ITEMS = 2 * (25 + 30 + 8)
_BTRFS_INODE_ITEMS = (25 + 160) + (25 + 10 + 8)
_BTRFS_FILE_EXTENT = 25 + 53
_BTRFS_EXTENT_ITEMS = (25 + 53) + 25


def _metadata_sets(fs, live_files, live_bytes, inline, mean_live_size, active, unit) -> dict:
    """Blocks (of *unit* bytes) of each metadata class the live files keep: dir, inode, bitmap, gdt.

    ext: directory entries of 16 bytes, inode tables, a block and an inode
    bitmap per block group and 32-byte group descriptors.  xfs: directory
    entries with their hash (32 bytes), inode chunks, the free-space and
    inode B+trees (8 and 16 bytes a record), the AG headers (AGF, AGI,
    AGFL).  btrfs: the fs tree's directory items, inode items and file
    extent items (or inline data), the extent and free-space trees, the
    checksum tree (:data:`_BTRFS_DIR_ITEMS` ...).
    """
    B = fs.block_size_bytes
    if fs.kind == "xfs":
        return {"dir": math.ceil(live_files * 32 / B), "inode": max(1.0, live_files * fs.inode_size_bytes / B),
                "bitmap": 2 * math.ceil(live_files * 8 / B) + 2 * math.ceil(live_files / 64 * 16 / B),
                "gdt": 3}
    if fs.journal_mode == "cow":
        inline_bytes = live_files * inline * mean_live_size
        data_blocks = live_bytes * (1.0 - inline) / B
        return {"dir": math.ceil(live_files * _BTRFS_DIR_ITEMS / unit),
                "inode": max(1.0, (live_files * (_BTRFS_INODE_ITEMS + _BTRFS_FILE_EXTENT) + inline_bytes) / unit),
                "bitmap": max(1, math.ceil(live_files * (1.0 - inline) * _BTRFS_EXTENT_ITEMS / unit)),
                "gdt": max(1, math.ceil(data_blocks * 4 / unit))}
    groups = max(1, math.ceil(active / fs.group_bytes))
    return {"dir": math.ceil(live_files * 16 / B),  # 8-byte header + a name of up to 8 characters
            "inode": max(1.0, live_files * fs.inode_size_bytes / B),
            "bitmap": 2 * groups,  # block + inode bitmaps
            "gdt": max(1, math.ceil(groups * 32 / B))}


#: btrfs: a node's key pointer [bytes] (fan-out = node size / 33); the trees whose roots every commit
#: rewrites (root, fs, extent, checksum, free-space); the superblock [bytes] and where its copies lie.
_BTRFS_KEY_PTR_BYTES = 33
_BTRFS_TREES = 5
_SUPERBLOCK_BYTES = 4096
_BTRFS_SUPER_OFFSETS = (64 * 1024, 64 * 1024 ** 2, 256 * 1024 ** 3)
#: xfs: a log record's header per log buffer (``logbsize`` 32 KiB) [bytes].
_XFS_LOG_HEADER_BYTES, _XFS_LOG_BUFFER_BYTES = 512, 32 * 1024


def _commit_bytes(plan, commits, classes) -> float:
    """Bytes one commit writes, on average: the journal's (ext3/4 JBD2), the log's (xfs), the trees' (btrfs).

    ext: every distinct metadata block dirtied since the last commit, one
    descriptor block per 500 and the commit block.  xfs (delayed logging):
    each dirty inode's core and fork (``inode_size_bytes``), each other
    dirty block whole, a record header per 32 KiB log buffer, rounded up to
    a block.  btrfs: each dirty leaf, the interior nodes above them (copy-on-
    write rewrites the path to the root) and the five trees' roots, times
    ``metadata_copies``, plus the superblock copies that lie in the file system.
    """
    fs, B, unit = plan["fs"], plan["B"], plan["unit"]
    dirty = {n: distinct_blocks(plan[n][0] / commits, plan[n][1]) for names in classes.values() for n in names}
    if fs.journal_mode == "metadata":
        logged = dirty["inode"] * fs.inode_size_bytes + (sum(dirty.values()) - dirty["inode"]) * B
        logged += math.ceil(logged / _XFS_LOG_BUFFER_BYTES) * _XFS_LOG_HEADER_BYTES
        return math.ceil(logged / B) * B
    if fs.journal_mode == "cow":
        leaves = sum(dirty.values())
        all_leaves = sum(plan[n][1] for names in classes.values() for n in names)
        interior = distinct_blocks(leaves, max(1.0, all_leaves * _BTRFS_KEY_PTR_BYTES / unit))
        supers = sum(1 for offset in _BTRFS_SUPER_OFFSETS if offset + _SUPERBLOCK_BYTES <= plan["fs_size"])
        return (leaves + interior + _BTRFS_TREES) * unit * fs.metadata_copies + supers * _SUPERBLOCK_BYTES
    per_commit = sum(dirty.values())
    per_commit += 1.0 + math.ceil(per_commit / 500.0)  # commit + descriptor blocks
    return per_commit * B


def _batch_service(plan, k, size_bytes, *, is_write):
    """Per-request T_DST of one of k elevator-sorted random requests in the active region."""
    return plan["active_region"].batch_service_time(k, size_bytes, is_write=is_write,
                                                    reorder_depth=plan["fs"].write_reorder_depth)


def evaluate_io(plan, elapsed_s) -> FsaResult:
    """Every term's I/O and its cost for a run lasting *elapsed_s* [s] (which sets the commits and flushes)."""
    volume, fs, counts, cache, B = (plan[k] for k in ("volume", "fs", "counts", "cache", "B"))
    unit, inline = plan["unit"], plan["inline"]
    cow_metadata = fs.journal_mode == "cow"  # btrfs: metadata reach the disk only in commits
    total = counts.total
    ledger = _Ledger(0.0 if fs.file_data_rate_bytes_per_s is None else 1.0 / fs.file_data_rate_bytes_per_s)
    elapsed_s = max(float(elapsed_s), 1e-9)
    flushes_meta = max(1.0, elapsed_s / fs.writeback_interval_s)
    flushes_data = max(1.0, elapsed_s / fs.data_flush_interval_s)
    commits = max(1.0, elapsed_s / fs.commit_interval_s) if fs.journaled else 0.0

    # ---------------- metadata home write-back (T_DO, T_MO, T_FL)
    classes = {"T_DO": ["dir"], "T_MO": ["inode", "indirect"], "T_FL": ["bitmap", "gdt"]}
    home_writes = {}
    for term, names in classes.items():
        home_writes[term] = 0.0 if cow_metadata else sum(
            flushes_meta * distinct_blocks(plan[n][0] / flushes_meta, plan[n][1]) for n in names)
    batch = sum(home_writes.values()) / flushes_meta
    meta_write = _batch_service(plan, batch if batch > 0 else 1.0, unit, is_write=True)
    for term, count in home_writes.items():
        ledger.disk(term, count, meta_write, is_write=True)
    # metadata reads on misses: random, unsorted
    meta_read = _batch_service(plan, 1, unit, is_write=False)
    for term, count in plan["reads_meta"].items():
        ledger.disk(term, count, meta_read, is_write=False)
    # lookups and metadata updates served by the cache (eq. 2 hits): one block copy each
    ledger.add("T_DO", "cache_s", plan["p_meta"] * (total.creates + total.deletes + total.reads + total.appends)
               * B / cache.rate_bytes_per_s, stage="cpu_s")
    ledger.add("T_DO", "cache_s", (total.creates + total.deletes + total.reads + total.appends)
               * fs.cpu_per_file_operation_s, stage="cpu_s")

    # ---------------- T_DFA: file data
    p_data = plan["p_data"]
    # reads: hits copy from the cache, misses go to disk (eq. 2)
    read_miss = total.reads * (1.0 - p_data) * (1.0 - inline)
    read_service = _batch_service(plan, 1, max(plan["read_size"], 1.0), is_write=False)
    positioning = _batch_service(plan, 1, 1.0, is_write=False)
    # one positioning per fragment, transfer of the whole file once
    ledger.disk("T_DFA", read_miss, _without_positioning(read_service), is_write=False,
                data_bytes=max(plan["read_size"], 1.0))
    ledger.disk("T_DFA", read_miss * plan["fragments"], dataclasses.replace(
        positioning, transfer_s=np.float64(0.0), interface_s=np.float64(0.0)), is_write=False)
    # the partial last block of an appended file, read first when not cached
    ledger.disk("T_DFA", total.appends * (1.0 - p_data) * (1.0 - inline), _batch_service(plan, 1, B, is_write=False),
                is_write=False, data_bytes=B)
    # copies through the cache: bytes read on hits, every byte written
    ledger.add("T_DFA", "cache_s", float(_cache_service_time_s(
        p_data, plan["read_size"], cache.rate_bytes_per_s, 0.0)) * total.reads, stage="cpu_s")
    ledger.add("T_DFA", "cache_s", total.bytes_written / cache.rate_bytes_per_s, stage="cpu_s")
    ledger.add("T_DFA", "cache_s", (total.read_calls + total.write_calls) * cache.syscall_s, stage="cpu_s")
    # write-back.  Creates allocated in fresh space (the creation phase; all
    # creates when not fs.reuse_freed_space) form sequential runs, written in
    # max_request pieces with one positioning each.  Creates of the
    # transaction phase fill space freed by deletes: one run each at a random
    # place, sorted with the appends of the same flush.
    # Delayed allocation and copy-on-write place every flush's new data in consecutive free space,
    # so the transaction phase's creates are written as sequential runs too.  Inline files have
    # no data blocks (their bytes travel with the metadata).
    blocks_per_create = math.ceil(max(plan["create_size"], 1.0) / B)
    in_place = fs.reuse_freed_space and not (fs.delayed_allocation or fs.copy_on_write)
    data_creates = total.creates * (1.0 - inline)
    data_appends = total.appends * (1.0 - inline)
    fresh_creates = counts.creation.creates * (1.0 - inline) if in_place else data_creates
    reused_creates = data_creates - fresh_creates
    fresh_bytes = fresh_creates * B * blocks_per_create
    requests_fresh = math.ceil(fresh_bytes / fs.max_request_bytes) if fresh_bytes > 0 else 0
    random_per_flush = (reused_creates + data_appends) / flushes_data
    k = random_per_flush + requests_fresh / flushes_data
    if fresh_bytes > 0:
        write_seq = _batch_service(plan, max(k, 1.0), fs.max_request_bytes, is_write=True)
        ledger.disk("T_DFA", requests_fresh, dataclasses.replace(
            write_seq, transfer_s=np.float64(0.0), interface_s=np.float64(0.0)), is_write=True)
        per_byte = _batch_service(plan, 1, float(fresh_bytes), is_write=True)
        ledger.disk("T_DFA", 1.0, _without_positioning(per_byte), is_write=True, data_bytes=fresh_bytes)
    if reused_creates > 0:
        ledger.disk("T_DFA", reused_creates,
                    _batch_service(plan, max(k, 1.0), float(blocks_per_create * B), is_write=True), is_write=True,
                    data_bytes=blocks_per_create * B)
    if data_appends > 0:
        append_bytes = B * (plan["append_size"] / B + 1.0)  # the rewritten tail block + new blocks
        write_app = _batch_service(plan, max(k, 1.0), append_bytes, is_write=True)
        ledger.disk("T_DFA", data_appends, write_app, is_write=True, data_bytes=append_bytes)
    data_block_ios = (read_miss * plan["read_size"] / B + data_appends * (1.0 - p_data)
                      + data_creates * blocks_per_create + data_appends * (plan["append_size"] / B + 1.0))
    # disk requests (commands) of file data: one per fragment read on a miss,
    # per tail block read before an append, per max_request piece of fresh
    # space, per reused-space create and per append
    data_requests = (read_miss * plan["fragments"] + data_appends * (1.0 - p_data) + requests_fresh
                     + reused_creates + data_appends)

    # ---------------- T_J: journal commits
    journal_blocks = 0.0
    journal_requests = 0.0
    if fs.journaled:
        journal_bytes = _commit_bytes(plan, commits, classes)
        if fs.journal_mode == "journal":
            journal_bytes += total.bytes_written / commits
        journal_blocks = commits * journal_bytes / B
        journal_requests = commits * math.ceil(journal_bytes / fs.max_request_bytes)
        journal_region = volume.region(*plan["journal"])
        there = plan["active_region"].seek_time_to_s(journal_region)
        # journal_bytes is a mean per commit (fractional in journal mode), not one request's size
        journal_service = journal_region.service_time(np.float64(journal_bytes))
        # btrfs writes each copy of its DUP metadata in its own stripe of the block group
        positionings = commits * (fs.metadata_copies if cow_metadata else 1)
        ledger.add("T_J", "seek_s", positionings * 2.0 * there, stage="write_media_s")
        ledger.add("T_J", "rotation_s", positionings * float(journal_service.rotation_s), stage="write_media_s")
        ledger.add("T_J", "transfer_s", commits * float(journal_service.transfer_s), stage="write_media_s")
        ledger.add("T_J", "overhead_s", positionings * float(journal_service.command_overhead_s)
                   + commits * fs.commit_overhead_s, stage="write_media_s")
        ledger.add("T_J", "overhead_s", commits * float(journal_service.interface_s), stage="write_link_s")
        if fs.journal_mode == "journal":
            # journaled data are written twice: to the journal above, and home (already in T_DFA)
            data_block_ios += total.bytes_written / B

    metadata_ios = sum(home_writes.values()) + sum(plan["reads_meta"].values()) + journal_blocks
    io_counts = {"metadata_ios": float(metadata_ios), "data_block_ios": float(data_block_ios),
                 "data_requests": float(data_requests),
                 "metadata_requests": float(sum(home_writes.values()) + sum(plan["reads_meta"].values())
                                            + journal_requests),
                 "commits": float(commits), "metadata_flushes": float(flushes_meta),
                 "data_flushes": float(flushes_data)}
    return FsaResult(
        terms=ledger.terms(), parts=ledger.parts, stages=dict(ledger.stages), io_counts=io_counts,
        mapping_parts=volume.mapping_overhead_s(io_counts),
        details={"p_hit_data": p_data, "p_hit_metadata": plan["p_meta"],
                 "active_region_bytes": plan["active"], "region_cylinders": plan["active_region"].cylinders,
                 "fragments_per_file": plan["fragments"], "write_batch_requests": k,
                 "metadata_batch_blocks": batch, "elapsed_s": elapsed_s})
