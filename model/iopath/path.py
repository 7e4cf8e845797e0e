"""The whole I/O path of a stack: workload -> page cache -> file system -> block layers -> devices.

:func:`run` takes a :class:`diskmodel.model.stacks.stack.Stack` (the JSON stack nodes) and a workload's
:class:`~.fileops.FileOps`, and returns ``{device: Stream}`` for every device of the stack, from the
file system's volume down to the disks, each as its queue sends it (merged within one issue instant,
split at ``max_sectors_kb``: :mod:`.block_layer`).

Nodes (model/stacks/volumes.py, raid.py, thin.py, loop_file.py):

- ``partition``: :func:`.partition.partition` onto its disk;
- ``lvm_linear``: dm-linear over the physical volumes (partitions, or any block node);
- ``lvm_striped``: dm-striped over them;
- ``raid`` (md): RAID 0/1/5/6 (:mod:`.md_raid`, :mod:`.md_parity`), 512 KiB chunks by default; LVM's
  (``tool: "lvm"``): dm-stripe for RAID 0, md's personalities (dm-raid) for the others; btrfs's
  (``tool: "btrfs"``, under a btrfs file system): the file system's chunks mapped by their profile
  (:mod:`.btrfs_raid`), its metadata written once, each member's writes at most ``max_segments`` pages;
- ``thin``: dm-thin onto its pool's data device; the metadata commits (counted on a ``<name>-meta``
  device) go to the same device after the pool's data area (the pool's metadata LV, ``pool_size_bytes``
  on), wrapped within ``metadata_size_bytes``;
- ``loop_file``: the loop device's requests become reads and writes of the image file in the host's
  page cache (buffered: the image's pages cached a second time, read ahead by ``readahead_bytes``
  and written back by the host's write-back, its reads reaching the host one after the other:
  :func:`.loop.worker_order`; direct I/O: passed through the cache), flushes an fsync of the
  image, and the workload's ``sync(2)`` a sync of the host's file system too (``Kind.SYNC_ALL``);
  after ``drop_caches`` the host's first read of the image updates its access time, reading
  its inode-table block again (:meth:`.fs_meta.MetadataReads.atime_update`); the host
  file system (``host_file_system``) maps them onto the host device. A sparse image allocates on
  first write; a zero-filled one is allocated from the start;
- ``nbd``: the device's stream goes unchanged to the export on the server (the link's time is
  :mod:`~diskmodel.model.iopath.network`'s, applied by :mod:`~diskmodel.model.iopath.timing` to the server's disks);
- ``nfs`` (the top): the client's operations on the server's file system (:func:`.network.nfs_client_ops`).

Bad input: one ValueError line naming the node (its path in the stack) and the field.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import block_layer
from .dm_linear import dm_linear
from .dm_striped import dm_striped
from .dm_thin import dm_thin
from .fs_mkfs import MKFS_KINDS, mkfs_written
from .fileops import FileOps, Kind, resolve_clones
from .btrfs_raid import BTRFS_MEMBER_WRITE_KB, btrfs_map
from .fs import file_system
from ..filesystems.kinds import DEFAULTS, mkfs_journal_bytes
from .fs_layout import FS_KINDS, FsParams
from .md_parity import md_raid5, md_raid6
from .loop import WORKER_ASYNC_S, worker_order
from .md_raid import md_raid0, md_raid1
from .pagecache import CacheParams, page_cache
from .read_ahead import DEFAULT_READ_AHEAD_KB, btrfs_read_ahead_kb, device_read_ahead_kb
from .partition import partition
from .stream import INSTANT_S, Flag, Op, Stream, concat
from ..drive.drives import DEFAULT_MAX_SECTORS_KB
from ..stacks.network import NBD_MAX_SECTORS_KB

__all__ = ["run", "frames", "DeviceStreams", "fs_params_of", "queue", "max_sectors_kb", "drive_limits", "DEFAULT_MAX_SECTORS_KB"]

#: File systems that grant FICLONE with their mkfs defaults (xfs: reflink=1 since xfsprogs 5.1).
REFLINK_KINDS = ("xfs", "btrfs")


def drive_limits(stack) -> dict[str, int]:
    """``{disk name: max_sectors_kb}`` of a stack's drives (each drive node's queue limit)."""
    return {d.name: int(getattr(d, "max_sectors_kb", DEFAULT_MAX_SECTORS_KB)) for d in stack.disks}


def max_sectors_kb(node, drives: dict | None = None) -> int:
    """A node's queue limit ``max_sectors_kb``: nbd's own; a partition's its disk's (a partition is
    its disk's queue), from ``drives`` (``{disk name: KiB}``, :func:`drive_limits`; a disk not in it,
    the default BLK_DEF_MAX_SECTORS); an md or dm device's the smallest of its members'
    (blk_stack_limits, block/blk-settings.c); a loop device's the default (loop sets its own)."""
    kind = type(node).__name__
    if kind == "NbdDevice":
        return NBD_MAX_SECTORS_KB
    if kind == "Partition":
        return int((drives or {}).get(node.disk, DEFAULT_MAX_SECTORS_KB))
    below = {"RaidArray": lambda: node.members, "LinearVolume": lambda: node.physical_volumes,
             "StripedVolume": lambda: node.physical_volumes, "ThinVolume": lambda: (node.data,)}.get(kind)
    return (min((max_sectors_kb(m, drives) for m in below()), default=DEFAULT_MAX_SECTORS_KB) if below
            else DEFAULT_MAX_SECTORS_KB)


def queue(stream: Stream, max_sectors_kb: int = DEFAULT_MAX_SECTORS_KB, write_kb: int | None = None) -> Stream:
    """A device's stream as its queue issues it: merged within each issue instant, then split.
    ``write_kb``: a smaller limit of its writes alone [KiB] (a btrfs member's: a write request holds at
    most ``max_segments`` scattered pages, :data:`.btrfs_raid.BTRFS_MEMBER_WRITE_KB`)."""
    if not len(stream):
        return stream
    if write_kb is not None:
        writes = stream.op == Op.WRITE
        parts = []
        for keep, limit in ((np.flatnonzero(writes), min(write_kb, max_sectors_kb)),
                            (np.flatnonzero(~writes), max_sectors_kb)):
            q = queue(stream.take(keep), limit)
            parts.append(q.replace(parent=keep[q.parent]) if len(q) else q)
        both = concat(parts)
        return both.take(np.argsort(both.time_s, kind="stable"))
    order = np.argsort(stream.time_s, kind="stable")
    s = stream.take(order)
    return block_layer.split(block_layer.merge(s, max_sectors_kb), max_sectors_kb)


class DeviceStreams(dict):
    """``{device: Stream}`` (:func:`run`), ``loops``: ``{device: LoopFile}`` for the loop devices
    among them (their workers' time is :mod:`~diskmodel.model.iopath.timing`'s), and ``async_waits``:
    which read call waits for which async read-ahead window (``None``: none), and ``sync_all_s``: the
    instants of the workload's ``sync(2)`` calls (``Kind.SYNC_ALL``), which every loop image's host file
    system syncs too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loops: dict = {}
        #: the page cache's (read call's instant, async window's instant) pairs (CacheResult.async_waits)
        self.async_waits = None
        #: the workload's sync(2) instants [s]
        self.sync_all_s = np.zeros(0)


def _name(node, default: str) -> str:
    return getattr(node, "name", "") or default


def fs_params_of(node, device_bytes: int, path: str = "file_system") -> FsParams:
    """The file-system layer's settings from a stack's file-system node."""
    params = node.parameters
    kind = node.kind
    journal = int(params.journal_size_bytes) if params.journal_size_bytes else None
    # mkfs.jfs's log and mke2fs's journal for the device's size (ext2fs_default_journal_size), unless
    # the node sets its own (mkfs.jfs -s, mke2fs -J size=)
    sized = {"jfs": "-s", "ext3": "-J", "ext4": "-J"}.get(kind)
    if (sized and not any(o.startswith(sized) for o in node.mkfs_options)
            and journal == DEFAULTS[kind]["journal_size_bytes"]):
        journal = mkfs_journal_bytes(kind, int(device_bytes), int(params.block_size_bytes))
    try:
        return FsParams(kind=kind, device_bytes=int(device_bytes), block_bytes=int(params.block_size_bytes),
                        inode_bytes=int(params.inode_size_bytes),
                        journal_mode=params.journal_mode if kind in ("ext3", "ext4") else "ordered",
                        commit_interval_s=float(params.commit_interval_s),
                        journal_bytes=journal,
                        tail_bytes=int(params.inline_data_max_bytes) if kind == "reiserfs" else None)
    except ValueError as exc:
        raise ValueError(f"{path} ({kind}): {str(exc).removeprefix('file system: ')}") from None


def _merge(into: dict[str, Stream], more: dict[str, Stream]):
    for name, s in more.items():
        if name in into:
            both = concat([into[name], s])
            into[name] = both.take(np.argsort(both.time_s, kind="stable"))
        else:
            into[name] = s


def _below(node, stream: Stream, name: str, path: str, cache: CacheParams, out: dict[str, Stream],
           limit_kb: int | None = None, mkfs: list[tuple[int, int]] | tuple = (), dropped: bool = False,
           drives: dict | None = None, write_kb: int | None = None, superblocks: tuple = ()):
    """Record ``stream`` as device ``name`` (queued at ``limit_kb``, by default the node's own
    :func:`max_sectors_kb`) and pass it down through ``node``. ``mkfs``: the byte ranges of ``node``
    that mkfs wrote (:func:`.fs_mkfs.mkfs_written`; the file system's own volume only). ``dropped``:
    the workload started after ``drop_caches`` (``FileOps.caches_dropped``), which drops every
    layer's cached metadata, a loop image's host file system's too. ``drives``: the disks' queue
    limits (:func:`drive_limits`; default each disk's BLK_DEF_MAX_SECTORS). ``write_kb``: :func:`queue`'s.
    ``superblocks``: the btrfs superblock offsets [bytes] a btrfs array's members each receive."""
    stream = queue(stream, limit_kb or max_sectors_kb(node, drives), write_kb)
    _merge(out, {name: stream})
    kind = type(node).__name__
    if kind == "Partition":
        _merge(out, {node.disk: queue(partition(stream, node.start_bytes, node.size_bytes),
                                       limit_kb or max_sectors_kb(node, drives), write_kb)})
        return
    if kind in ("LinearVolume", "StripedVolume"):
        pvs = node.physical_volumes
        names = [_name(pv, f"{name}-pv{i}") for i, pv in enumerate(pvs)]
        if kind == "LinearVolume":
            parts = dm_linear(stream, [(ls, ln, names[i], at) for ls, ln, i, at in node.pv_segments()])
        else:
            parts = dm_striped(stream, names, node.stripe_size_bytes, node.pe_start_bytes)
        for i, pv in enumerate(pvs):
            if names[i] in parts:
                _below(pv, parts[names[i]], names[i], f"{path}.physical_volumes[{i}]", cache, out, dropped=dropped,
                       drives=drives)
        return
    if kind == "RaidArray":
        members = node.members
        names = [_name(m, f"{name}-m{i}") for i, m in enumerate(members)]
        if node.tool == "btrfs":
            if not superblocks:
                raise ValueError(f"{path} (raid): tool = 'btrfs': a btrfs array is its file system's own; it must be "
                                 "the volume of a btrfs file system")
            parts = btrfs_map(stream, node.kind, names, superblocks, node.read_member)
            for i, m in enumerate(members):
                _below(m, parts[names[i]], names[i], f"{path}.members[{i}]", cache, out, dropped=dropped,
                       drives=drives, write_kb=BTRFS_MEMBER_WRITE_KB)
            return
        if node.failed_members:
            raise ValueError(f"{path} (raid): failed_members = {list(node.failed_members)}: a degraded array is not "
                             "on the request-level path (md's reconstruct reads are not modelled); give no failed members")
        fn = {"raid0": md_raid0, "raid5": md_raid5, "raid6": md_raid6}.get(node.kind)
        if node.tool == "lvm" and node.kind == "raid0":  # lvcreate --type striped: dm-stripe
            parts = dm_striped(stream, names, node.chunk_size_bytes)
        else:  # mdadm, or lvcreate --type raid1/5/6: dm-raid runs md's personalities (drivers/md/dm-raid.c)
            at = node.data_start_bytes   # md's data after its superblock on each member; 0 for dm-raid's images
            parts = md_raid1(stream, names, at) if node.kind == "raid1" else \
                fn(stream, names, node.chunk_size_bytes, at)
        # RAID 1 clones each of the array's bios to every mirror, and a mirror's queue takes the clones as they
        # come: no larger than the array's own limit (the drives' logs under md over a local loop device and nbd)
        limit = max_sectors_kb(node, drives) if node.kind == "raid1" else None
        for i, m in enumerate(members):
            _below(m, parts[names[i]], names[i], f"{path}.members[{i}]", cache, out, limit_kb=limit, dropped=dropped,
                   drives=drives)
        return
    if kind == "ThinVolume":
        chunk = int(node.chunk_size_bytes)
        made = [b for off, size in mkfs for b in range(off // chunk, -(-(off + size) // chunk))]
        res = dm_thin(stream, chunk, node.zero_new_chunks,
                      provisioned=np.union1d(_read_blocks_first(stream, chunk), np.asarray(made, np.int64)))
        _merge(out, {f"{name}-meta": res.metadata})
        meta = res.metadata
        if len(meta):
            # the metadata LV after the pool's data area; its blocks reused in turn past its size
            rw = meta.op != Op.FLUSH
            off = np.where(rw, node.pool_size_bytes + meta.offset_bytes % node.metadata_size_bytes, 0)
            meta = meta.replace(offset_bytes=off)
        both = concat([res.data, meta])
        both = both.take(np.argsort(both.time_s, kind="stable"))
        _below(node.data, both, _name(node.data, f"{name}-pool"), f"{path}.data", cache, out, dropped=dropped,
               drives=drives)
        return
    if kind == "NbdDevice":
        # nbd-server serves each request with one pread/pwrite of the export: the export sees nbd's requests
        _below(node.export, stream, _name(node.export, f"{name}-export"), f"{path}.export", cache, out,
               limit_kb=NBD_MAX_SECTORS_KB, dropped=dropped, drives=drives)
        return
    if kind == "LoopFile":
        _loop(node, stream, name, path, cache, out, dropped, drives)
        return
    raise ValueError(f"{path}: kind {kind} is not on the request-level I/O path")


def _loop(node, stream: Stream, name: str, path: str, cache: CacheParams, out, dropped: bool = False,
          drives: dict | None = None):
    """The loop device's requests as file operations on its image, through the host's cache and
    file system (drivers/block/loop.c: lo_rw_aio / do_req_filebacked). A flush, and a write's
    REQ_PREFLUSH, is an fsync of the image before it (lo_req_flush: vfs_fsync); loop has a volatile
    write cache and no FUA, so the block layer turns a write's REQ_FUA into a flush after it. The
    workload's closing sync is the top file system's (``sync -f``, syncfs(2), as the tools are
    measured): its flush reaches each host as an fsync of the image, not as a sync of the host."""
    out.loops[name] = node
    host_kind = node.host_file_system
    if host_kind not in FS_KINDS:
        raise ValueError(f"{path} (loop_file): host_file_system = {host_kind!r} must be one of {', '.join(FS_KINDS)}")
    s = stream.take(stream.op != Op.DISCARD)
    pre = (s.op == Op.FLUSH) | ((s.flags & Flag.PREFLUSH) != 0)
    post = (s.op != Op.FLUSH) & ((s.flags & Flag.FUA) != 0)
    data = s.op != Op.FLUSH
    # Each request as up to three rows: fsync before, the data, fsync after; kept in that order.
    n = len(s)
    rank = np.concatenate([np.flatnonzero(pre) * 3, np.flatnonzero(data) * 3 + 1, np.flatnonzero(post) * 3 + 2])
    src = rank // 3
    kind = np.concatenate([np.full(int(pre.sum()), Kind.FSYNC), np.where(s.op[data] == Op.READ, Kind.READ, Kind.WRITE),
                           np.full(int(post.sum()), Kind.FSYNC)]).astype(np.int8)
    time_s = s.time_s[src]
    if n and out.sync_all_s.size:
        # sync(2) syncs every super block (fs/sync.c, ksys_sync), the image's host among them, and then
        # writes back every block device's dirty buffers (sync_bdevs): the host's metadata that the
        # fsyncs of the image (the flushes of the file system above) changed reaches the host's device
        # after them, where syncfs(2) of the file system above leaves it to the host's write-back.
        at = np.searchsorted(s.time_s, out.sync_all_s + INSTANT_S, side="right")
        rank = np.concatenate([rank * 2, at * 6 - 1])
        src = np.concatenate([src, np.minimum(at, n - 1)])
        kind = np.concatenate([kind, np.full(at.size, Kind.SYNC, np.int8)])
        # at the instant, after its requests (a file system above issues dependent ones a nanosecond apart)
        time_s = np.concatenate([time_s, np.where(at > 0, np.maximum(out.sync_all_s, s.time_s[np.maximum(at - 1, 0)]),
                                                  out.sync_all_s)])
    is_data = (kind == Kind.READ) | (kind == Kind.WRITE)
    order = np.argsort(rank, kind="stable")
    src, kind, is_data, time_s = src[order], kind[order], is_data[order], time_s[order]
    time_s = worker_order(time_s, kind == Kind.READ)
    size = np.where(is_data, s.size_bytes[src] if n else 0, 0)
    ops = FileOps(
        time_s=time_s, kind=kind, file=np.zeros(kind.size, np.int64), offset_bytes=np.where(is_data, s.offset_bytes[src] if n else 0, 0),
        size_bytes=size, chunk_bytes=_read_calls(size, kind, node), direct=np.full(kind.size, bool(node.direct_io)),
        dir_of_file=np.zeros(1, np.int64), initial_bytes=np.array([node.image_size_bytes], np.int64),
    )
    host_bytes = int(node.host.size_bytes)
    try:
        p = FsParams(kind=host_kind, device_bytes=host_bytes)
        # the host's read-ahead on the image: the node's readahead_bytes (read_ahead_kb, whole KiB)
        res = page_cache(ops, replace(cache, read_ahead_kb=int(node.readahead_bytes) // 1024,
                                      async_delay_s=WORKER_ASYNC_S))
        fs = file_system(res.ops, p, sync=res.sync, sparse=node.allocation == "sparse",
                         allocated=_written_before(s) if node.allocation == "sparse" else (),
                         inodes_held=dropped)
    except ValueError as exc:
        raise ValueError(f"{path} (loop_file): the host file system: {str(exc).removeprefix('file system: ')}") from None
    _below(node.host, fs.stream, _name(node.host, f"{name}-host"), f"{path}.host", cache, out, dropped=dropped,
           drives=drives)


def _read_calls(size: np.ndarray, kind: np.ndarray, node) -> np.ndarray:
    """The size of the calls the loop worker reads each request of the image in (``chunk_bytes``):
    the whole request, or ``read_segment_bytes`` at a time where the node's kernel reads a buffered
    request segment by segment (Linux 6.1's lo_read_simple)."""
    seg = int(node.read_segment_bytes)
    if not seg or node.direct_io:
        return size
    return np.where(kind == Kind.READ, np.minimum(size, seg), size)


def _written_before(s: Stream) -> list[tuple[int, int, int]]:
    """The image ranges the file system above wrote before the workload: those it reads before it
    writes them (it reads only blocks it wrote: mkfs's metadata, the files it holds) and those its
    metadata writes go to (the journal, inode tables and bitmaps mkfs wrote in full). On a sparse
    image they are allocated, not holes."""
    out, written = [], set()
    for op, off, size, flags in zip(s.op.tolist(), s.offset_bytes.tolist(), s.size_bytes.tolist(), s.flags.tolist()):
        if (op == Op.READ and (off, size) not in written) or (op == Op.WRITE and flags & Flag.META):
            out.append((0, off, size))
        if op == Op.WRITE:
            written.add((off, size))
    return out


def _read_blocks_first(s: Stream, unit: int) -> np.ndarray:
    """The ``unit``-byte blocks of a thin volume the file system above wrote before the workload
    (as :func:`_written_before` for a sparse image): read before written, or metadata: they were
    provisioned then."""
    blocks, written = [], set()
    for op, off, size, flags in zip(s.op.tolist(), s.offset_bytes.tolist(), s.size_bytes.tolist(), s.flags.tolist()):
        span = range(off // unit, -(-(off + size) // unit)) if size else ()
        if op == Op.READ:
            blocks += [b for b in span if b not in written]
        elif op == Op.WRITE:
            if flags & Flag.META:
                blocks += [b for b in span if b not in written]
            written.update(span)
    return np.unique(np.asarray(blocks, np.int64))


def _async_marked(stream: Stream, res) -> Stream:
    """The file system's reads at the instants of the page cache's async read-ahead windows marked
    ``Flag.ASYNC`` (the windows are alone at their instants: :data:`.pagecache.ASYNC_DELAY_S`)."""
    if res.async_read is None or not len(stream):
        return stream
    at = np.isin(stream.time_s, np.unique(res.ops.time_s[res.async_read])) & (stream.op == Op.READ)
    if not at.any():
        return stream
    return Stream(stream.time_s, stream.op, stream.offset_bytes, stream.size_bytes,
                  np.where(at, stream.flags | Flag.ASYNC, stream.flags).astype(stream.flags.dtype), stream.parent)


def run(stack, ops: FileOps, cache: CacheParams | None = None) -> DeviceStreams:
    """``{device: Stream}`` for ``ops`` on ``stack`` (see the module docstring), as :class:`DeviceStreams`."""
    cache = cache or CacheParams()
    if stack.is_nfs:
        from .network import nfs_client_ops

        ops = nfs_client_ops(stack.file_system, ops)
        stack = type(stack)(stack.file_system.export, stack.disks, stack.name)
    fs_node = stack.file_system
    volume = stack.volume
    btrfs_array = fs_node.kind == "btrfs" and type(volume).__name__ == "RaidArray" and volume.tool == "btrfs"
    p = fs_params_of(fs_node, int(volume.size_bytes))
    if btrfs_array:
        # one logical space of the array's size (raid0: the members' sum; raid1: one member's), its
        # metadata once: the profile copies or stripes it
        p = replace(p, metadata_copies=1)
    ops = resolve_clones(ops, reflink=p.kind in REFLINK_KINDS)
    if p.kind == "ext3" and p.journal_mode != "writeback" or p.journal_mode == "journal" and p.journaled:
        cache = replace(cache, commit_writeback_s=p.commit_interval_s)
    drives = drive_limits(stack)
    if p.kind == "btrfs":  # btrfs reads through a bdi of its own (read_ahead.py)
        devices = len(volume.members) if btrfs_array else 1
        cache = replace(cache, io_kb=DEFAULT_READ_AHEAD_KB if cache.io_kb is None else cache.io_kb,
                        read_ahead_kb=btrfs_read_ahead_kb(devices) if cache.read_ahead_kb is None
                        else cache.read_ahead_kb)
    if cache.io_kb is None:  # the bdi's io_pages: the file system's device's largest request
        cache = replace(cache, io_kb=max_sectors_kb(volume, drives))
    if cache.read_ahead_kb is None:  # the bdi's ra_pages: twice the device's optimal I/O size, at least 128 KiB
        cache = replace(cache, read_ahead_kb=device_read_ahead_kb(volume))
    def cached_then_mapped(cache):
        res = page_cache(ops, cache)
        return res, file_system(res.ops, p, sync=res.sync, dirty_expire_s=cache.dirty_expire_s, workload=ops,
                                caches_dropped=ops.caches_dropped, flusher=res.flusher)

    try:
        res, fs = cached_then_mapped(cache)
        if cache.commit_writeback_s is not None and fs.forced_commits_s:
            # The commits the file system forced (a full transaction, a full file system) write the
            # dirty data out too: the cache again with them, then the file system on its output (one
            # step: that second pass's own forced commits, nearly the same, are not fed back).
            res, fs = cached_then_mapped(replace(cache, commit_times_s=tuple(sorted(fs.forced_commits_s))))
    except ValueError as exc:
        raise ValueError(f"file_system ({p.kind}): {str(exc).removeprefix('file system: ')}") from None
    out = DeviceStreams()
    out.async_waits = res.async_waits
    out.sync_all_s = ops.time_s[ops.kind == Kind.SYNC_ALL]
    stream = _async_marked(fs.stream, res)
    # the blocks mkfs wrote: a thin volume's chunks under any of them were provisioned before the workload
    mkfs = mkfs_written(p, fs_node.mkfs_options) if p.kind in MKFS_KINDS else ()
    _below(volume, stream, _name(volume, "volume"), "file_system.volume", cache, out, mkfs=mkfs,
           dropped=ops.caches_dropped, drives=drives, superblocks=tuple(p.superblocks()) if btrfs_array else ())
    return out


def frames(stack, ops: FileOps, cache: CacheParams | None = None) -> dict:
    """:func:`run`'s streams as pandas DataFrames (one row per request; :meth:`Stream.to_frame`)."""
    return {name: s.to_frame() for name, s in run(stack, ops, cache).items()}
