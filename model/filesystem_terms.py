"""Which I/Os each term of eq. (1) issues, and what they cost on the volume below.

:func:`diskmodel.model.filesystem.file_system_access_time` solves eq. (1)
for a PostMark run; this module does its accounting: :func:`plan_io` works
out everything that does not depend on the run's elapsed time (working sets,
hit probabilities, update counts, the regions the I/O falls in) and
:func:`evaluate_io` the I/O of a run of a given elapsed time, term by term,
in the service times the volume layer
(:class:`diskmodel.model.volume_on_disk.VolumeOnDisk`) gives.

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
T_J, journaling (ext3 only)
    At every commit (every ``commit_interval_s``): a seek from the active
    region to the journal and back, a rotational latency, and a sequential
    write of the distinct metadata blocks dirtied since the last commit,
    their descriptor blocks and the commit block (in ``journal`` mode also
    the data written since).  ext2 has T_J = 0.

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


class _Ledger:
    """Accumulates time per (term, part)."""

    def __init__(self, data_link_scale: float = 1.0):
        # file data's link time is T_I times this (T_I + the file-data path's per-byte cost)
        self.data_link_scale = float(data_link_scale)
        self.parts = {t: dict.fromkeys(DST_PARTS, 0.0) for t in TERMS}
        self.stages = dict.fromkeys(("cpu_s", "read_media_s", "read_link_s", "write_media_s", "write_link_s"), 0.0)

    def disk(self, term, count, service, *, is_write):
        """*count* disk I/Os each costing *service* (a ServiceTime of scalars)."""
        if count <= 0:
            return
        p = self.parts[term]
        seek = count * float(np.mean(service.seek_s))
        rotation = count * float(np.mean(service.rotation_s))
        transfer = count * float(np.mean(service.transfer_s))
        mechanics = count * float(np.mean(service.command_overhead_s + service.settle_s))
        link = count * float(np.mean(service.interface_s))
        if term == "T_DFA":
            link *= self.data_link_scale
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
    fs_size = volume.size_bytes

    # ---- workload quantities
    live_files = max(counts.mean_live_files, 1.0)
    mean_live_size = 0.5 * (cfg.mean_initial_size_bytes + counts.mean_file_size_at_end_bytes)
    live_blocks = math.ceil(mean_live_size / B) if mean_live_size > 0 else 1
    live_bytes = live_files * live_blocks * B
    if live_bytes > fs_size:
        # the files would not fit: PostMark would fail with ENOSPC (no silent clamp to the volume)
        raise ValueError(f"workload: its live files take about {live_bytes:.4g} bytes ({live_files:.4g} files of "
                         f"{live_blocks} blocks of {B} bytes) but the file system holds {fs_size} bytes")
    # the region the files occupy, from the start of the file system
    inode_bytes = live_files * fs.inode_size_bytes
    active = min(fs_size, int(fs.allocation_spread * live_bytes + inode_bytes + fs.group_bytes))
    journal_start = int(fs.journal_offset_fraction * fs_size)
    journal_size = min(fs.journal_size_bytes, fs_size - journal_start)

    # ---- working sets of metadata blocks
    directories = max(1, cfg.subdirectories)
    entry_bytes = 16  # 8-byte header + a name of up to 8 characters (PostMark numbers its files)
    dir_blocks = max(directories, math.ceil(live_files * entry_bytes / B))
    inode_blocks = max(1.0, inode_bytes / B)
    groups = max(1, math.ceil(active / fs.group_bytes))
    bitmap_blocks = 2 * groups  # block + inode bitmaps
    gdt_blocks = max(1, math.ceil(groups * 32 / B))
    direct_limit = 12 * B

    # fraction of files beyond the 12 direct blocks (they have an indirect
    # block): sizes taken uniform on [low, high] for new files, and on the
    # range of the same width ending at high with the live files' mean size.
    high, low = cfg.max_file_size_bytes, cfg.min_file_size_bytes

    def beyond_direct(mean_size):
        lo = max(float(low), 2.0 * mean_size - high)
        if high <= lo:
            return 1.0 if high > direct_limit else 0.0
        return float(np.clip((high - direct_limit) / (high - lo), 0.0, 1.0))

    read_size = counts.mean_read_size_bytes
    append_size = counts.mean_append_size_bytes
    create_size = cfg.mean_initial_size_bytes

    # ---- hit probabilities (eq. 2 with cache.hit_probability)
    meta_ws = (dir_blocks + inode_blocks + bitmap_blocks + gdt_blocks) * B
    data_cache = max(0.0, cache.size_bytes - meta_ws)
    p_meta = float(hit_probability(cache.size_bytes, max(meta_ws, 1.0)))
    p_data = float(hit_probability(data_cache, max(live_bytes, 1.0)))

    # ---- metadata update counts (U) and their working sets (b)
    creates, deletes, reads, appends = total.creates, total.deletes, total.reads, total.appends
    dir_updates = (creates + deletes) * (2.0 if (fs.dir_index and dir_blocks > 1) else 1.0)
    inode_updates = creates + deletes + appends + (reads if fs.atime_updates else 0.0)
    indirect_updates = creates * beyond_direct(create_size) + appends * beyond_direct(counts.mean_file_size_at_end_bytes)
    bitmap_updates = 2.0 * (creates + deletes) + appends
    gdt_updates = creates + deletes + appends
    lookups = creates + deletes + reads + appends
    # metadata reads on misses
    inode_reads = (reads + appends + deletes) * (1.0 - p_meta)
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
        "live_bytes": live_bytes, "live_files": live_files,
    }


def _batch_service(plan, k, size_bytes, *, is_write):
    """Per-request T_DST of one of k elevator-sorted random requests in the active region."""
    return plan["active_region"].batch_service_time(k, size_bytes, is_write=is_write,
                                                    reorder_depth=plan["fs"].write_reorder_depth)


def evaluate_io(plan, elapsed_s) -> FsaResult:
    """Every term's I/O and its cost for a run lasting *elapsed_s* [s] (which sets the commits and flushes)."""
    volume, fs, counts, cache, B = (plan[k] for k in ("volume", "fs", "counts", "cache", "B"))
    total = counts.total
    ledger = _Ledger(1.0 if fs.file_data_rate_bytes_per_s is None
                     else 1.0 + volume.interface_rate_bytes_per_s / fs.file_data_rate_bytes_per_s)
    elapsed_s = max(float(elapsed_s), 1e-9)
    flushes_meta = max(1.0, elapsed_s / fs.writeback_interval_s)
    flushes_data = max(1.0, elapsed_s / fs.data_flush_interval_s)
    commits = max(1.0, elapsed_s / fs.commit_interval_s) if fs.journaled else 0.0

    # ---------------- metadata home write-back (T_DO, T_MO, T_FL)
    classes = {"T_DO": ["dir"], "T_MO": ["inode", "indirect"], "T_FL": ["bitmap", "gdt"]}
    home_writes = {}
    for term, names in classes.items():
        home_writes[term] = sum(flushes_meta * distinct_blocks(plan[n][0] / flushes_meta, plan[n][1])
                                for n in names)
    batch = sum(home_writes.values()) / flushes_meta
    meta_write = _batch_service(plan, batch, B, is_write=True)
    for term, count in home_writes.items():
        ledger.disk(term, count, meta_write, is_write=True)
    # metadata reads on misses: random, unsorted
    meta_read = _batch_service(plan, 1, B, is_write=False)
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
    read_miss = total.reads * (1.0 - p_data)
    read_service = _batch_service(plan, 1, max(plan["read_size"], 1.0), is_write=False)
    positioning = _batch_service(plan, 1, 1.0, is_write=False)
    # one positioning per fragment, transfer of the whole file once
    ledger.disk("T_DFA", read_miss, _without_positioning(read_service), is_write=False)
    ledger.disk("T_DFA", read_miss * plan["fragments"], dataclasses.replace(
        positioning, transfer_s=np.float64(0.0), interface_s=np.float64(0.0)), is_write=False)
    # the partial last block of an appended file, read first when not cached
    ledger.disk("T_DFA", total.appends * (1.0 - p_data), _batch_service(plan, 1, B, is_write=False), is_write=False)
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
    blocks_per_create = math.ceil(max(plan["create_size"], 1.0) / B)
    fresh_creates = counts.creation.creates if fs.reuse_freed_space else total.creates
    reused_creates = total.creates - fresh_creates
    fresh_bytes = fresh_creates * B * blocks_per_create
    requests_fresh = math.ceil(fresh_bytes / fs.max_request_bytes) if fresh_bytes > 0 else 0
    random_per_flush = (reused_creates + total.appends) / flushes_data
    k = random_per_flush + requests_fresh / flushes_data
    if fresh_bytes > 0:
        write_seq = _batch_service(plan, max(k, 1.0), fs.max_request_bytes, is_write=True)
        ledger.disk("T_DFA", requests_fresh, dataclasses.replace(
            write_seq, transfer_s=np.float64(0.0), interface_s=np.float64(0.0)), is_write=True)
        per_byte = _batch_service(plan, 1, float(fresh_bytes), is_write=True)
        ledger.disk("T_DFA", 1.0, _without_positioning(per_byte), is_write=True)
    if reused_creates > 0:
        ledger.disk("T_DFA", reused_creates,
                    _batch_service(plan, max(k, 1.0), float(blocks_per_create * B), is_write=True), is_write=True)
    if total.appends > 0:
        append_bytes = B * (plan["append_size"] / B + 1.0)  # the rewritten tail block + new blocks
        write_app = _batch_service(plan, max(k, 1.0), append_bytes, is_write=True)
        ledger.disk("T_DFA", total.appends, write_app, is_write=True)
    data_block_ios = (read_miss * plan["read_size"] / B + total.appends * (1.0 - p_data)
                      + total.creates * blocks_per_create + total.appends * (plan["append_size"] / B + 1.0))
    # disk requests (commands) of file data: one per fragment read on a miss,
    # per tail block read before an append, per max_request piece of fresh
    # space, per reused-space create and per append
    data_requests = (read_miss * plan["fragments"] + total.appends * (1.0 - p_data) + requests_fresh
                     + reused_creates + total.appends)

    # ---------------- T_J: journal commits
    journal_blocks = 0.0
    journal_requests = 0.0
    if fs.journaled:
        per_commit = 0.0
        for names in classes.values():
            for n in names:
                per_commit += distinct_blocks(plan[n][0] / commits, plan[n][1])
        per_commit += 1.0 + math.ceil(per_commit / 500.0)  # commit + descriptor blocks
        journal_bytes = per_commit * B
        if fs.journal_mode == "journal":
            journal_bytes += total.bytes_written / commits
        journal_blocks = commits * journal_bytes / B
        journal_requests = commits * math.ceil(journal_bytes / fs.max_request_bytes)
        journal_region = volume.region(*plan["journal"])
        there = plan["active_region"].seek_time_to_s(journal_region)
        # journal_bytes is a mean per commit (fractional in journal mode), not one request's size
        journal_service = journal_region.service_time(np.float64(journal_bytes))
        ledger.add("T_J", "seek_s", commits * 2.0 * there, stage="write_media_s")
        ledger.add("T_J", "rotation_s", commits * float(journal_service.rotation_s), stage="write_media_s")
        ledger.add("T_J", "transfer_s", commits * float(journal_service.transfer_s), stage="write_media_s")
        ledger.add("T_J", "overhead_s", commits * float(journal_service.command_overhead_s), stage="write_media_s")
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
