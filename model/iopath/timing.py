"""Time from the I/O path: each device's request stream served by that device's per-request simulation.

:func:`time_streams` takes the streams :func:`~.path.run` gives for a stack's disks and serves each
through a drive: a :class:`~diskmodel.model.simulator.session.DriveSession` (a DiskSim drive, a
calibration or a preset, as :class:`~diskmodel.model.drive.parameters.DriveParameters`) or a
:class:`FlatDrive` (flash: a fixed latency plus a transfer rate). :func:`time_stack` does both steps
for a :class:`~diskmodel.model.stacks.stack.Stack` and a workload's :class:`~.fileops.FileOps`.

How time passes (what the model assumes, in the order it applies):

- **The workload's clock.** A request's ``time_s`` is when it would be issued were every device
  infinitely fast (the workload's own pace: :mod:`.fileops`). The application waits for some requests
  and not for others. It waits at an *instant* (a ``time_s``) when the file system's device receives
  there a read, a flush or a write marked ``REQ_SYNC``, ``REQ_FUA`` or ``REQ_PREFLUSH`` (a read miss,
  fsync, sync, direct I/O, a journal commit): every disk request issued at a waited instant (within
  ``INSTANT_S`` of it, where the path orders dependent requests a nanosecond apart; a RAID
  member's share, a stripe's pieces, the parity reads of a read-modify-write, a loop image's host
  requests) completes before the application goes on. Write-back issued at other instants runs while
  the application goes on. An async read-ahead window (``Flag.ASYNC``, at an instant of its own) is
  waited for by the first later read call that copies any of its pages (the page cache's
  ``async_waits``; filemap_read waits on the folios it copies), not where it was issued, so the
  device reads it while the application copies the window before.
- **The stall.** The application runs late by ``stall_s``, the sum of its waits: a request issued at
  ``time_s`` arrives at its device at ``time_s + stall_s``, and after a waited instant ``t`` the stall
  becomes ``max(stall_s, last completion of the instant's requests - t)`` (the time the application
  spent between two requests stays what the workload says).
- **The queue.** Each drive serves its requests one at a time, in the order its queue's scheduler
  gives them (``schedulers``; :mod:`.scheduler`: mq-deadline merges and sorts them, none keeps their
  arrival order); different drives work in parallel. Requests a workload issues at one instant
  (``iodepth``) are all in the queue at once, so a striped or mirrored array serves them on its
  members in parallel. A request waiting in the queue reaches its drive :data:`HOST_TURNAROUND_S` after
  the one before completed (the host takes the completion, then dispatches it), so a drive that reads
  ahead has begun reading past the last request when a sequential one arrives, and streams.
- **Dependencies.** At an instant with both reads and writes, the writes start only when every read
  of that instant, on any drive, has completed: a parity array's read-modify-write or
  reconstruct-write reads before it writes (md raid5 handle_stripe); a write's requests otherwise
  carry no order between drives.
- **Flushes.** A flush completes when the drive's write cache has reached the media (the drive
  simulation's ``dirty_until_s``), after every request before it; a request after it starts no
  earlier. A flat drive has no volatile cache: a flush waits only for the requests before it.
- **Loop workers.** A buffered loop device's own requests are served by its worker
  (:class:`LoopWorker`): one at a time, each its overhead plus its bytes at the layer's copy rate
  (the copy into the image's page cache on a write, out of it on a read). Where a waited instant
  holds a worker's requests, the layers take turns, as each waits for the one it hands to: each
  layer's writes from the top layer down (a layer's write-back reaches the layer below only after
  it copied; at fsync each image's write-back follows the fsync above it), then the drives (reads
  before writes), then each layer's reads from the bottom layer up (a layer copies out what the
  layer below returned). Elsewhere (asynchronous write-back and read-ahead) a worker works beside
  the drives.
- **The network.** A disk under an NBD device is reached across its link (:mod:`~diskmodel.model.iopath.network`): a
  request arrives at the server's drive its outbound crossing after it left the client, and the
  client sees it complete its return crossing after the drive completed it.
- **The end.** The run ends when the application's last call has returned and every device is idle:
  ``elapsed_s = max(app end + stall, last completion)``, the app end being the workload's
  (``FileOps.app_end_s``: a read's last call returns after copying the data it waited for).

Pure model code: numpy arrays throughout (one Python call per waited instant and drive, none per
request inside a batch), no I/O, no clocks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .fileops import FileOps, Kind
from .stream import INSTANT_S, Flag, Op, Stream

__all__ = ["FlatDrive", "IoTiming", "LoopWorker", "time_streams", "time_stack", "loop_workers", "drive_of",
           "waited_instants", "BLOCK_BYTES"]

BLOCK_BYTES = 512
#: The host's turnaround at queue depth 1 [s]: from a drive's completion to its dispatch of a request
#: already waiting in the queue (the completion interrupt, blk-mq's completion and its next dispatch;
#: DriveParameters.host_turnaround_s). Microseconds on any host; the figure matters only in whether it
#: is above a few microseconds (a preset's read-ahead, started at the completion, then reaches the
#: next sequential request's first block first: tests/test_iotime.py, both ends of 10-100 us).
HOST_TURNAROUND_S = 20e-6
_WAITED_WRITE = int(Flag.SYNC | Flag.FUA | Flag.PREFLUSH)
_FLUSH, _WRITE = int(Op.FLUSH), int(Op.WRITE)  # plain ints: the per-request path avoids Enum lookups


@dataclass(frozen=True)
class FlatDrive:
    """A flash-like drive: each request takes ``latency_s`` plus its bytes at ``bytes_per_s``; no
    volatile write cache, no dependence on the position. ``capacity_bytes`` bounds the requests."""

    latency_s: float
    bytes_per_s: float
    capacity_bytes: int

    def __post_init__(self):
        lat = self.latency_s
        if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not np.isfinite(lat) or lat < 0:
            raise ValueError(f"flat drive: latency_s = {lat!r} must be a finite number >= 0")
        rate = self.bytes_per_s
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            raise ValueError(f"flat drive: bytes_per_s = {rate!r} must be a number > 0")
        cap = self.capacity_bytes
        if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < BLOCK_BYTES:
            raise ValueError(f"flat drive: capacity_bytes = {cap!r} must be an integer >= {BLOCK_BYTES}")


class _FifoServer:
    """A server of batches, one request at a time in arrival order; ``service`` gives each its time."""

    total_blocks = np.iinfo(np.int64).max // 2

    def __init__(self):
        self.free_s = 0.0
        self.last_arrival_s = 0.0

    def service(self, op, blocks) -> np.ndarray:
        raise NotImplementedError

    def serve(self, op, lbn, blocks, arrival):
        from .network import fifo

        arrival = np.maximum.accumulate(np.maximum(arrival, self.last_arrival_s))
        self.last_arrival_s = float(arrival[-1])
        service = self.service(op, blocks)
        done = fifo(arrival, service, self.free_s)
        self.free_s = float(done[-1])
        return done - service, done


class _FlatServer(_FifoServer):
    """A :class:`FlatDrive` serving batches, first in first out."""

    def __init__(self, drive: FlatDrive):
        super().__init__()
        self.drive = drive
        self.total_blocks = int(drive.capacity_bytes) // BLOCK_BYTES

    def service(self, op, blocks):
        return np.where(op == Op.FLUSH, 0.0, self.drive.latency_s + blocks * BLOCK_BYTES / self.drive.bytes_per_s)


@dataclass(frozen=True)
class LoopWorker:
    """A buffered loop device's worker, serving that device's own requests one at a time in arrival
    order (drivers/block/loop.c: loop_process_work takes the queued commands in turn). Each takes
    ``request_overhead_s`` plus its bytes at ``write_bytes_per_s`` (lo_write_simple: the copy into the
    image's page cache) or ``read_bytes_per_s`` (lo_read_simple: the copy out of it); a flush takes the
    overhead (lo_req_flush: the fsync's own device requests are the host's). ``depth``: loop layers from
    this one down to the first host that is not a loop file (``LoopFile.depth``): the order the layers
    of one waited instant take their turns in (:func:`time_streams`)."""

    depth: int
    request_overhead_s: float
    write_bytes_per_s: float
    read_bytes_per_s: float

    @classmethod
    def of(cls, node) -> "LoopWorker":
        """The worker of a buffered :class:`~diskmodel.model.stacks.loop_file.LoopFile` (its copy rates,
        measured where the device costs nothing, and its per-request overhead)."""
        read = node.read_copy_rate_bytes_per_s
        return cls(int(node.depth), float(node.request_overhead_s), float(node.copy_rate_bytes_per_s),
                   float(node.copy_rate_bytes_per_s if read is None else read))


class _WorkerServer(_FifoServer):
    """A :class:`LoopWorker` serving batches."""

    def __init__(self, worker: LoopWorker):
        super().__init__()
        self.worker = worker

    def service(self, op, blocks):
        w = self.worker
        rate = np.where(op == Op.READ, w.read_bytes_per_s, w.write_bytes_per_s)
        return w.request_overhead_s + np.where(op == Op.FLUSH, 0.0, blocks * BLOCK_BYTES / rate)


class _SimServer:
    """A :class:`~diskmodel.model.simulator.session.DriveSession` serving batches; a flush completes when
    the drive's write cache is on the media, and holds back the requests after it."""

    def __init__(self, params):
        from diskmodel.model.simulator.session import DriveSession

        self.session = DriveSession(params)
        self.total_blocks = int(params.layout.total_blocks)
        self.floor_s = 0.0  # the last flush's completion: no request starts before it
        # A request queued behind one that waits (for another drive's read) arrives no earlier than it.
        self.last_arrival_s = 0.0

    def _flush(self, arrival: float) -> float:
        st = self.session.state
        done = max(arrival, self.floor_s, st.clock_s, st.dirty_until_s)
        self.floor_s = done
        return done

    def serve(self, op, lbn, blocks, arrival):
        n = op.size
        if n == 1 and op[0] != _FLUSH:  # the common case at queue depth 1
            a = max(float(arrival[0]), self.floor_s, self.last_arrival_s)
            self.last_arrival_s = a
            s = self.session.serve(bool(op[0] == _WRITE), int(lbn[0]), int(blocks[0]), a)
            return np.array([s.start_s]), np.array([s.completion_s])
        start, done = np.empty(n), np.empty(n)
        flush = np.flatnonzero(op == Op.FLUSH)
        edges = np.concatenate(([0], flush, [n]))
        for k in range(edges.size - 1):
            lo, hi = int(edges[k]) + (1 if k else 0), int(edges[k + 1])
            if k:
                f = int(edges[k])
                start[f] = max(float(arrival[f]), self.floor_s, self.session.state.clock_s)
                done[f] = self._flush(float(arrival[f]))
            if hi <= lo:
                continue
            arr = np.maximum.accumulate(np.maximum(arrival[lo:hi], max(self.floor_s, self.last_arrival_s)))
            self.last_arrival_s = float(arr[-1])
            if hi - lo == 1:
                s = self.session.serve(bool(op[lo] == Op.WRITE), int(lbn[lo]), int(blocks[lo]), float(arr[0]))
                start[lo], done[lo] = s.start_s, s.completion_s
            else:
                s = self.session.serve_many(op[lo:hi] == Op.WRITE, lbn[lo:hi], blocks[lo:hi], arr)
                start[lo:hi], done[lo:hi] = s.start_s, s.completion_s
        return start, done


def drive_of(model):
    """The server of a drive model: a :class:`FlatDrive`, a
    :class:`~diskmodel.model.drive.parameters.DriveParameters` or a :class:`~diskmodel.model.drive.disk.Disk`."""
    from diskmodel.model.drive.disk import Disk
    from diskmodel.model.drive.parameters import DriveParameters

    if isinstance(model, FlatDrive):
        return _FlatServer(model)
    if isinstance(model, Disk) and model.flat:  # flat_latency_disk: no mechanics, no rotational phase
        return _FlatServer(FlatDrive(model.command_overhead_s, float(model.zone_rates_bytes_per_s()[0]),
                                     model.capacity_bytes))
    if isinstance(model, Disk):
        model = DriveParameters.from_disk(model)
    if isinstance(model, DriveParameters):
        if model.host_turnaround_s is None:  # DiskSim's driver's 0 (a trace's own): the host's here
            model = dataclasses.replace(model, host_turnaround_s=HOST_TURNAROUND_S)
        return _SimServer(model)
    raise ValueError(f"drive: {type(model).__name__} is not a FlatDrive, DriveParameters or Disk")


def _earlier_instants(async_waits) -> dict:
    """``{instant: [earlier instants]}`` from (instant, earlier instant) pairs."""
    out: dict = {}
    for w, u in (np.asarray(async_waits, float).reshape(-1, 2).tolist() if async_waits is not None else ()):
        out.setdefault(w, []).append(u)
    return out


def waited_instants(top: Stream, async_waits=None) -> np.ndarray:
    """The instants the application waits at: where the file system's device receives a read other than
    an async read-ahead window's, a flush or a write marked sync, FUA or preflush, and (*async_waits*, the
    page cache's (call, window) pairs) where a read call copies an async window's pages (sorted, unique)."""
    sync_read = (top.op == Op.READ) & ((top.flags & Flag.ASYNC) == 0)
    waited = sync_read | (top.op == Op.FLUSH) | ((top.op == Op.WRITE) & ((top.flags & _WAITED_WRITE) != 0))
    at = top.time_s[waited]
    if async_waits is not None and len(async_waits):
        at = np.concatenate([at, np.asarray(async_waits, float)[:, 0]])
    return np.unique(at)


@dataclass(frozen=True, eq=False)
class IoTiming:
    """The timed run (see the module docstring). Per request, in ``order`` (by issue time):
    ``device`` (index into ``devices``), ``op``, ``size_bytes``, ``arrival_s``, ``start_s``,
    ``completion_s``, ``waited``. ``op_wait_s``: how long the application waited at each waited
    instant (from its arrival to the last completion among the instant's requests)."""

    devices: tuple
    device: np.ndarray
    op: np.ndarray
    size_bytes: np.ndarray
    arrival_s: np.ndarray
    start_s: np.ndarray
    completion_s: np.ndarray
    waited: np.ndarray
    op_wait_s: np.ndarray
    app_s: float
    stall_s: float
    elapsed_s: float
    #: each request's issue time on the workload's clock, and each wait's instant
    issue_s: np.ndarray | None = None
    op_wait_at_s: np.ndarray | None = None
    #: the loop workers' requests (:class:`LoopWorker`), as a timing of their own whose devices are the
    #: loop devices (their waits and totals the run's); None: no buffered loop device took part
    workers: "IoTiming | None" = None

    def device_frame(self):
        """Per device: requests, bytes read and written, busy time [s] and utilisation."""
        import pandas as pd

        rows = []
        for k, name in enumerate(self.devices):
            m = self.device == k
            busy = _busy_s(self.start_s[m], self.completion_s[m])
            rows.append({"device": name, "requests": int(m.sum()),
                         "read_bytes": int(self.size_bytes[m & (self.op == Op.READ)].sum()),
                         "write_bytes": int(self.size_bytes[m & (self.op == Op.WRITE)].sum()),
                         "busy_s": busy, "utilisation": busy / self.elapsed_s if self.elapsed_s > 0 else 0.0})
        return pd.DataFrame(rows).set_index("device")

    def wait_percentiles(self, q=(50, 90, 99)) -> dict:
        """Percentiles of the application's waits [s] (``{}`` when it never waited)."""
        if not self.op_wait_s.size:
            return {}
        return {f"p{p:g}": float(v) for p, v in zip(q, np.percentile(self.op_wait_s, q))}


def _busy_s(start, done) -> float:
    """The time a device was serving anything: the union of its requests' service intervals (requests a
    scheduler merged share one)."""
    if not start.size:
        return 0.0
    o = np.argsort(start, kind="stable")
    a, b = start[o], np.maximum.accumulate(done[o])
    gap = np.maximum(a[1:] - b[:-1], 0.0)  # idle time between one interval's end and the next one's start
    return float(b[-1] - a[0] - gap.sum())


class _Pipe:
    """One connection: its client, sending one request at a time, and the two directions of its link,
    each carrying one request's bytes at a time."""

    def __init__(self):
        self.client_free_s = self.out_free_s = self.back_free_s = 0.0


class _Linked:
    """A drive reached across a network link (:class:`.network.Link`): each request crosses out,
    is served, and its reply crosses back; each direction of the link (``pipe``, shared by the
    drives under one link) carries one request's bytes at a time, first in first out. Completions
    are as the client sees them."""

    def __init__(self, server, link, pipe: _Pipe):
        self.server, self.link, self.pipe, self.total_blocks = server, link, pipe, server.total_blocks

    def serve(self, op, lbn, blocks, arrival):
        from .network import fifo

        client, out, back = self.link.costs(op, blocks * BLOCK_BYTES)
        half = self.link.network.rtt_s / 2
        # one connection: nbd sends one request at a time (nbd_send_cmd under the socket's tx_lock), so the
        # client's time per request is queued, first in first out; the request's bytes then wait for the
        # link, which carries one request's at a time. The two are stages of a pipeline: sock_xmit returns
        # once the socket has taken the bytes, so the client sends the next request while the link (tbf)
        # still carries the last one
        handed = fifo(arrival, client, self.pipe.client_free_s)
        self.pipe.client_free_s = float(handed[-1])
        sent = fifo(handed, out, self.pipe.out_free_s)
        self.pipe.out_free_s = float(sent[-1])
        start, done = self.server.serve(op, lbn, blocks, sent + half + self.link.server_s)
        replied = fifo(done + half, back, self.pipe.back_free_s)
        self.pipe.back_free_s = float(replied[-1])
        return start, replied


def _servers(names, drives, links, workers, schedulers) -> list:
    """A server per device: a loop worker, or a drive (behind its scheduler, and across its link)."""
    from .scheduler import ScheduledServer

    missing = [n for n in names if n not in drives and n not in workers]
    if missing:
        raise ValueError(f"drives: device {missing[0]!r} has no drive")
    scheds = schedulers or {}
    servers = [_WorkerServer(workers[n]) if n in workers else
               ScheduledServer(drive_of(drives[n]), scheds[n]) if n in scheds else drive_of(drives[n]) for n in names]
    pipes: dict = {}  # one per link (by identity): the drives under one NBD device share its bandwidth
    return [_Linked(sv, links[n], pipes.setdefault(id(links[n]), _Pipe())) if n in (links or {}) else sv
            for sv, n in zip(servers, names)]


def _check_bounds(servers, names, dev, op, lbn, blocks, end_bytes) -> None:
    for k, server in enumerate(servers):
        over = (dev == k) & (op != Op.FLUSH) & (lbn + blocks > server.total_blocks)
        if over.any():
            i = int(np.flatnonzero(over)[0])
            raise ValueError(f"device {names[k]}: a request ends at byte {int(end_bytes[i])}, beyond the drive's "
                             f"{server.total_blocks * BLOCK_BYTES} bytes")


def time_streams(streams: dict, drives: dict, waited_at: np.ndarray, app_end_s: float = 0.0,
                 links: dict | None = None, workers: dict | None = None, async_waits=None,
                 schedulers: dict | None = None) -> IoTiming:
    """Serve ``streams`` (``{device: Stream}``, offsets on each device) on ``drives`` (``{device:
    drive model}``: :func:`drive_of`'s inputs); the application waits at ``waited_at`` (instants) and
    is done at ``app_end_s`` (its last call's return; both on the workload's clock). ``links`` (``{device:
    .network.Link}``) names the drives reached across a network link. ``workers`` (``{device:
    LoopWorker}``) names the buffered loop devices among ``streams``, whose own requests their worker
    serves (see the module docstring, "Loop workers"). ``async_waits``: (instant, earlier instant) pairs,
    where the application also waits for the requests issued at the earlier instant (a read call for
    the async read-ahead window that holds its pages); each first instant must be in ``waited_at``.
    ``schedulers`` (``{device: .scheduler.Scheduler}``) puts a drive behind its block layer's scheduler;
    a drive not named is served in arrival order."""
    from .scheduler import ScheduledServer

    workers = dict(workers or {})
    names = tuple(streams)
    servers = _servers(names, drives, links, workers, schedulers)
    # a scheduled drive behind a link is drained at every call (the link needs its completions)
    scheduled = [k for k, sv in enumerate(servers) if isinstance(sv, ScheduledServer)]
    parts = [(k, s.take(s.op != Op.DISCARD)) for k, s in enumerate(streams[n] for n in names)]
    dev = np.concatenate([np.full(len(s), k, np.int64) for k, s in parts]) if parts else np.zeros(0, np.int64)
    cat = [np.concatenate([getattr(s, f) for _, s in parts]) if parts else np.zeros(0) for f in
           ("time_s", "op", "offset_bytes", "size_bytes")]
    order = np.lexsort((dev, cat[0]))  # by time; a device's own order is kept (its stream is by time)
    t, op, off, size = (c[order] for c in cat)
    dev = dev[order]
    lbn = off // BLOCK_BYTES
    blocks = np.where(op == Op.FLUSH, 0, -(-(off + size) // BLOCK_BYTES) - lbn)
    _check_bounds(servers, names, dev, op, lbn, blocks, off + size)
    waited_at = np.unique(np.asarray(waited_at, float))
    at = np.searchsorted(waited_at, t, side="right") - 1
    waited = (at >= 0) & (t < waited_at[np.maximum(at, 0)] + INSTANT_S) if waited_at.size else np.zeros(t.size, bool)
    n = t.size
    arrival, start, done = np.empty(n), np.empty(n), np.empty(n)
    ends = np.searchsorted(t, waited_at + INSTANT_S, side="left")
    firsts = np.searchsorted(t, waited_at, side="left")
    stall, pos = 0.0, 0
    waits, wait_at = [], []

    mixed = np.intersect1d(t[op == Op.READ], t[op != Op.READ])  # instants with reads and writes

    def serve_on(k, idx, need):
        # a scheduled drive may leave requests the application does not wait for queued (NaN here)
        sv = servers[k]
        if isinstance(sv, ScheduledServer):
            start[idx], done[idx] = sv.serve(op[idx], lbn[idx], blocks[idx], arrival[idx], idx, need)
        else:
            start[idx], done[idx] = sv.serve(op[idx], lbn[idx], blocks[idx], arrival[idx])

    def resolve(lo, hi):  # complete the still-queued requests among lo:hi (an async window waited for)
        for k in scheduled:
            j = np.flatnonzero((dev[lo:hi] == k) & np.isnan(done[lo:hi])) + lo
            if j.size:
                start[j], done[j] = servers[k].complete(j)

    def serve_plain(lo, hi, shift, floor=0.0):
        arrival[lo:hi] = np.maximum(t[lo:hi] + shift, floor)
        if hi - lo == 1:  # the common case at queue depth 1: one request, no array work
            serve_on(int(dev[lo]), np.arange(lo, hi), waited[lo:hi])
            return
        d = dev[lo:hi]
        for k in np.unique(d).tolist():
            idx = np.flatnonzero(d == k) + lo
            serve_on(k, idx, waited[idx])

    def serve(lo, hi, shift):
        # At an instant with reads and writes, the writes wait for the reads (a parity array's
        # read-modify-write reads the old data and parity before it writes: md raid5 handle_stripe).
        if hi <= lo:
            return
        a_m, b_m = np.searchsorted(mixed, t[lo], "left"), np.searchsorted(mixed, t[hi - 1], "right")
        for m in mixed[a_m:b_m].tolist():
            a, b = int(np.searchsorted(t, m, "left")), int(np.searchsorted(t, m, "right"))
            if a < lo:
                continue
            serve_plain(lo, a, shift)
            reads = np.flatnonzero(op[a:b] == Op.READ) + a
            rest = np.flatnonzero(op[a:b] != Op.READ) + a
            for idx, floor in ((reads, 0.0), (rest, None)):
                if floor is None:
                    floor = float(done[reads].max())
                arrival[idx] = np.maximum(t[idx] + shift, floor)
                d = dev[idx]
                for k in np.unique(d).tolist():
                    j = idx[d == k]  # the reads complete before the writes are issued: waited for here
                    serve_on(k, j, np.ones(j.size, bool) if idx is reads else waited[j])
            lo = b
        serve_plain(lo, hi, shift)

    # A waited instant's turns where loop workers take part: each layer's writes from the top layer
    # down, then the drives (reads before writes), then each layer's reads from the bottom layer up
    depth = np.array([workers[nm].depth if nm in workers else 0 for nm in names], np.int64)
    turn = np.where(depth[dev] > 0, np.where(op == Op.READ, depth[dev], -depth[dev]), np.where(op == Op.READ, 0, 0.5))

    def serve_turns(lo, hi, shift):
        idx = np.arange(lo, hi)
        floor = 0.0
        for which in np.unique(turn[lo:hi]).tolist():
            j = idx[turn[lo:hi] == which]
            arrival[j] = np.maximum(t[j] + shift, floor)
            d = dev[j]
            for k in np.unique(d).tolist():
                jj = j[d == k]
                serve_on(k, jj, np.ones(jj.size, bool))
            floor = max(floor, float(done[j].max()))

    earlier = _earlier_instants(async_waits)
    for w, first, end in zip(waited_at.tolist(), firsts.tolist(), ends.tolist()):
        also = [(int(np.searchsorted(t, u, "left")), int(np.searchsorted(t, u + INSTANT_S, "left")))
                for u in earlier.get(w, ())]
        also = [(a, b) for a, b in also if b > a]
        if end <= first and not also:
            continue  # no disk request at this instant (served from a layer above)
        if workers and end > first and (depth[dev[max(first, pos):end]] > 0).any():  # an instant within
            serve(pos, first, stall)                                    # INSTANT_S of the last is partly
            serve_turns(max(first, pos), end, stall)                    # served already
        else:
            serve(pos, end, stall)
        pos = max(pos, end)
        for a, b in also:
            resolve(a, b)
        own = [float(done[first:end].max())] if end > first else []
        last = max(own + [float(done[a:b].max()) for a, b in also])
        waits.append(max(0.0, last - (w + stall)))  # what it needed may have completed before it asked: no wait
        wait_at.append(w)
        stall = max(stall, last - w)
    if pos < n:
        serve(pos, n, stall)
    resolve(0, n)  # what the scheduled drives still hold is served after the application's last wait
    app_s = float(app_end_s)
    elapsed = max(app_s + stall, float(done.max()) if n else 0.0)
    waits_s, wait_at_s = np.asarray(waits, float), np.asarray(wait_at, float)

    def part(keep):  # the requests of the devices ``keep`` marks, their indices renumbered
        new = np.cumsum(keep) - 1
        m = keep[dev]
        return IoTiming(tuple(n for n, k in zip(names, keep) if k), new[dev[m]], op[m], size[m], arrival[m], start[m],
                        done[m], waited[m], waits_s, app_s, stall, elapsed, t[m], wait_at_s)

    is_worker = depth > 0
    if not is_worker.any():
        return part(~is_worker)
    return dataclasses.replace(part(~is_worker), workers=part(is_worker))


def time_stack(stack, ops: FileOps, cache=None, drives: dict | None = None) -> tuple[IoTiming, dict]:
    """``ops`` on ``stack`` through the I/O path (:func:`~.path.run`) and its disks' simulations.
    ``drives`` (optional) replaces the model of some disks by name (a :class:`FlatDrive`, a
    DriveParameters or a Disk); the others are the stack's (``stack.drive(name).model_disk()``).
    Returns the timing and the streams. An NFS mount's operations are those the server's file system
    receives (:func:`.network.nfs_client_ops`)."""
    from .network import links_below, nfs_client_ops
    from .path import run

    if stack.is_nfs:
        ops = nfs_client_ops(stack.file_system, ops)
        stack = type(stack)(stack.file_system.export, stack.disks, stack.name)
    streams = run(stack, ops, cache)
    disk_names = [d.name for d in stack.disks]
    leaf = {n: s for n, s in streams.items() if n in disk_names}
    models = {}
    for n in leaf:
        given = (drives or {}).get(n)
        models[n] = given if given is not None else stack.drive(n).model_disk()
    top = next(iter(streams.values())) if streams else Stream.empty()
    app_end = ops.app_end_s
    workers = loop_workers(streams)
    waits = getattr(streams, "async_waits", None)
    timing = time_streams({**leaf, **{n: streams[n] for n in workers}}, models, waited_instants(top, waits), app_end,
                          links_below(stack.file_system), workers, waits, drive_schedulers(stack, leaf))
    return timing, streams


def drive_schedulers(stack, names) -> dict:
    """``{disk: Scheduler}`` for the disks among ``names`` whose queue has a scheduler other than none
    (the drive node's ``scheduler`` and ``queue_depth``; merges stay within its ``max_sectors_kb``)."""
    from .scheduler import queue_scheduler

    out = {n: queue_scheduler(stack.drive(n).scheduler, stack.drive(n).queue_depth, stack.drive(n).max_sectors_kb)
           for n in names}
    return {n: sc for n, sc in out.items() if sc is not None}


def loop_workers(streams) -> dict:
    """``{device: LoopWorker}`` for the buffered loop devices among ``streams`` (a
    :class:`~diskmodel.model.iopath.path.DeviceStreams`) that received requests; a direct-I/O loop
    device's submission is the host's request's own (lo_rw_aio), with no copy."""
    loops = getattr(streams, "loops", {})
    return {n: LoopWorker.of(node) for n, node in loops.items() if not node.direct_io and len(streams[n])}


def workload_bytes(ops: FileOps) -> tuple[int, int]:
    """The bytes the application reads and writes (its own calls, before the page cache)."""
    r = int(ops.size_bytes[ops.kind == Kind.READ].sum())
    w = int(ops.size_bytes[ops.kind == Kind.WRITE].sum())
    return r, w
