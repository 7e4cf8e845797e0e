"""A network link on the I/O path: NBD requests and NFS file operations crossing to a server.

**NBD** (:class:`~diskmodel.model.stacks.network.NbdDevice`). The nbd driver sends each request of the
device's stream to the server (NBD proto.md: a 28-byte request header, a 16-byte simple reply),
where nbd-server serves it on its export. A request issued at ``t`` leaves the client after
``client_overhead_s + size/copy_rate``, crosses the link (its header, and a write's bytes, at the
payload rate: :meth:`~diskmodel.model.stacks.network.Network.transfer_s`; one request's bytes at a time,
first in first out), takes half the round trip and ``server_overhead_s``, and is served by the
server's device; the reply takes half the round trip and its bytes (a read's data) on the link's
return direction, again one at a time (:class:`Link`).
The export receives the device's stream unchanged: nbd-server's own page cache is not modelled.

**NFS** (:class:`~diskmodel.model.stacks.network.NfsMount`). The client's file operations run on the
server's file system (``export``) and stack; each is first an exchange of RPCs that the application
waits for, so its link time pushes every later operation back on the workload's clock
(:func:`nfs_client_ops`). Per operation, the round trips of the Linux client with a cold attribute
cache (:data:`~diskmodel.model.stacks.network.ROUND_TRIPS`; RFC 1813, RFC 7530): a create is the "write"
exchange less its COMMIT (v3 LOOKUP + CREATE, v4 OPEN + CLOSE); a run of reads of one file opens it
first (the "read" exchange: close-to-open revalidation), then each read is a READ round trip per
``rsize``; writes are WRITE RPCs sent without waiting (their bytes on the link, no round trip),
and the run of writes of one file ends at its close with a COMMIT (one round trip), which a sync
export (``sync_export``) turns into an fsync of the file on the server; a delete is a REMOVE, a stat
a GETATTR, an fsync a COMMIT, a clone a CLONE (one round trip each). Each RPC costs
``client_overhead_s + server_op_s`` besides the round trip; data costs its bytes at the payload rate
and the client's copy rate. The server's file system receives the operations in calls of ``rsize``
(reads) and ``wsize`` (writes), one per RPC, as nfsd makes them. The client's own page cache is not
modelled: every read crosses the link (as after ``drop_caches``).

On a shaped link with a bucket (``burst_bytes``), an NFS operation's data takes the tokens its
direction gathered while idle (:func:`token_bucket_data_s`): a small file read after its open's
round trips crosses at line rate. The drives under one NBD device (an export over several disks)
share its link. Not modelled: the bucket on the NBD link (its requests are costed at the payload
rate) and TCP's window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fileops import FileOps, Kind
from .stream import Op

__all__ = ["Link", "fifo", "nbd_link", "links_below", "nfs_client_ops", "token_bucket_data_s"]


@dataclass(frozen=True)
class Link:
    """The crossing of a request: ``client_s`` on the client (plus its bytes at
    ``copy_rate_bytes_per_s``, None: free), the bytes on the link at ``network``'s payload rate (a
    write's on the way out, a read's on the way back, ``header_bytes`` each way; the link carries
    one request's bytes at a time each way, first in first out), half the round trip each way, and
    ``server_s`` in the server before its device sees the request. A request of the server's device
    larger than ``max_request_bytes`` (None: no limit) crossed as that many client requests, each
    paying ``client_s`` and its headers."""

    client_s: float
    server_s: float
    network: object
    header_bytes: int = 0
    copy_rate_bytes_per_s: float | None = None
    max_request_bytes: int | None = None

    def costs(self, op: np.ndarray, size_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per request: (the client's time, the outbound bytes' time on the link, the return bytes') [s]."""
        size = np.asarray(size_bytes, float)
        pieces = np.ones(size.shape) if self.max_request_bytes is None else np.maximum(
            np.ceil(size / self.max_request_bytes), 1.0)
        net = self.network
        out = net.transfer_s(np.where(op == Op.WRITE, size, 0.0) + self.header_bytes * pieces)
        back = net.transfer_s(np.where(op == Op.READ, size, 0.0) + self.header_bytes * pieces)
        client = self.client_s * pieces
        if self.copy_rate_bytes_per_s is not None:
            client = client + size / self.copy_rate_bytes_per_s
        return client, np.asarray(out, float), np.asarray(back, float)


def fifo(arrival: np.ndarray, service: np.ndarray, free_s: float) -> np.ndarray:
    """Completions of requests served one at a time in the given order from ``free_s`` on:
    ``done_i = max(arrival_i, done_{i-1}) + service_i``, as one scan (``S`` the running sum):
    ``done_i = S_i + max(free, max_{j<=i}(arrival_j - S_{j-1}))``."""
    csum = np.cumsum(service)
    return csum + np.maximum(free_s, np.maximum.accumulate(arrival - (csum - service)))


def nbd_link(device) -> Link:
    """The link of an :class:`~diskmodel.model.stacks.network.NbdDevice` (see the module docstring)."""
    from ..stacks.network import NBD_HEADER_BYTES, NBD_MAX_SECTORS_KB

    return Link(device.client_overhead_s, device.server_overhead_s, device.network, NBD_HEADER_BYTES // 2,
                device.copy_rate_bytes_per_s, NBD_MAX_SECTORS_KB * 1024)


def links_below(root) -> dict:
    """``{disk name: Link}`` for every disk under an NBD device of ``root``'s tree (the server's disks)."""
    from ..stacks.nodes import kind_of, walk

    out = {}
    for _, node, _ in walk(root, "device"):
        if kind_of(node) == "nbd":
            link = nbd_link(node)
            for _, below, _ in walk(node.export, "export"):
                disk = getattr(below, "disk", None)
                if kind_of(below) == "partition" and disk is not None:
                    out[disk] = link
    return out


def _runs(kind: np.ndarray, file: np.ndarray, of: int) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) masks of the runs of consecutive ops of kind ``of`` on one file."""
    this = kind == of
    same_prev = np.zeros(kind.size, bool)
    same_prev[1:] = this[1:] & this[:-1] & (file[1:] == file[:-1])
    same_next = np.zeros(kind.size, bool)
    same_next[:-1] = same_prev[1:]
    return this & ~same_prev, this & ~same_next


def nfs_client_ops(mount, ops: FileOps) -> FileOps:
    """``ops`` as the NFS server's file system receives them (see the module docstring): each pushed
    back by the link time of the operations up to it, with a sync export's fsync at every close."""
    from ..stacks.network import ROUND_TRIPS

    # posix_fadvise advises the client's own page cache: nfsd reads the server's file with its own state;
    # fallocate(2) is NFS 4.2's ALLOCATE (one round trip), and EOPNOTSUPP before it (nfs4_proc_allocate)
    ops = ops.take((ops.kind != Kind.RANDOM) & ((ops.kind != Kind.FALLOCATE) | (mount.version == "4.2")))
    net, version = mount.network, mount.version
    rpc_s = mount.client_overhead_s + mount.server_op_s
    kind, file = ops.kind.astype(np.int64), ops.file
    size = ops.size_bytes.astype(float)
    first_read, _ = _runs(kind, file, int(Kind.READ))
    _, last_write = _runs(kind, file, int(Kind.WRITE))
    created = np.zeros(kind.size, bool)
    created[1:] = (kind[:-1] == Kind.CREATE) & (kind[1:] == Kind.WRITE) & (file[1:] == file[:-1])
    first_write, _ = _runs(kind, file, int(Kind.WRITE))
    trips = np.zeros(kind.size)
    rpcs = np.zeros(kind.size)
    writes = ROUND_TRIPS[version]["write"]
    trips[kind == Kind.CREATE] = writes - 1
    trips[first_write & ~created] += writes - 1  # an append opens the file
    trips[last_write] += 1  # the COMMIT at close
    trips[first_read] += ROUND_TRIPS[version]["read"]
    reads = kind == Kind.READ
    n_read = np.ceil(size / mount.rsize_bytes)
    trips[reads] += n_read[reads]
    for k in (Kind.DELETE,):
        trips[kind == k] += ROUND_TRIPS[version]["remove"]
    for k in (Kind.STAT, Kind.FSYNC, Kind.CLONE, Kind.FALLOCATE):
        trips[kind == k] += 1
    rpcs += trips
    is_write = kind == Kind.WRITE
    rpcs[is_write] += np.ceil(size[is_write] / mount.wsize_bytes)
    data = np.where(reads | is_write, size, 0.0)
    exchange_s = trips * net.rtt_s + rpcs * rpc_s
    if mount.copy_rate_bytes_per_s is not None:
        exchange_s = exchange_s + data / mount.copy_rate_bytes_per_s
    if net.shaped and net.burst_bytes:
        cost = exchange_s + token_bucket_data_s(net, ops.time_s, exchange_s, data, reads,
                                                np.where(reads, np.maximum(n_read, 1.0), 1.0), net.rtt_s + rpc_s)
    else:
        cost = exchange_s + net.transfer_s(data)
    time_s = ops.time_s + np.cumsum(cost)
    # nfsd reads and writes the file in the RPCs' payloads (nfsd_read, nfsd_write: one call per READ or
    # WRITE), so the server's page cache sees calls of rsize and wsize, and its read-ahead grows from them
    chunk = ops.chunk_bytes.copy()
    chunk[reads] = np.minimum(chunk[reads], mount.rsize_bytes)
    chunk[is_write] = np.minimum(chunk[is_write], mount.wsize_bytes)
    end_s = ops.app_end_s + (float(cost.sum()) if cost.size else 0.0)  # the last call's return, pushed back alike
    out = FileOps(time_s, ops.kind, ops.file, ops.offset_bytes, ops.size_bytes, chunk, ops.direct,
                  ops.dir_of_file, ops.initial_bytes, ops.fallback, ops.caches_dropped, end_s)
    if not mount.sync_export or not last_write.any():
        return out
    at = np.flatnonzero(last_write) + 1  # the server's fsync of the file, right after its last write
    fields = {"time_s": time_s[at - 1], "kind": np.full(at.size, int(Kind.FSYNC), ops.kind.dtype),
              "file": file[at - 1], "offset_bytes": 0, "size_bytes": 0, "chunk_bytes": 0, "direct": False}
    arrays = {f: np.insert(getattr(out, f), at, v) for f, v in fields.items()}
    fallback = None if ops.fallback is None else np.insert(ops.fallback, at, False)
    return FileOps(**arrays, dir_of_file=ops.dir_of_file, initial_bytes=ops.initial_bytes, fallback=fallback,
                   caches_dropped=ops.caches_dropped, end_s=end_s)


def token_bucket_data_s(net, time_s: np.ndarray, exchange_s: np.ndarray, data_bytes: np.ndarray,
                        inbound: np.ndarray, pieces: np.ndarray, piece_gap_s: float) -> np.ndarray:
    """Per operation, the time its data takes on a link shaped by tbf with a bucket [s].

    Operation ``i`` starts at ``time_s[i]`` pushed back by the operations before it; its
    ``exchange_s[i]`` (round trips, RPC overheads, copies) comes first, then its ``data_bytes[i]``
    on the link's return direction (``inbound``: a read's reply) or its outbound one (a write), in
    ``pieces[i]`` equal pieces each after ``piece_gap_s`` (a READ round trip per ``rsize``).
    Each direction has its own bucket (tbf on both ends of the link): it holds at most
    ``burst_bytes`` tokens, gains ``rate_bytes_per_s`` of them per second while its direction
    carries no data, and a piece's bytes on the wire (payload over
    :attr:`~diskmodel.model.stacks.network.Network.payload_fraction`) spend the tokens first and
    then wait for the rate (``tbf_dequeue`` in the kernel's net/sched/sch_tbf.c). Both buckets are
    full before the first operation.  One pass over the operations, in order."""
    rate, burst, frac = net.rate_bytes_per_s, float(net.burst_bytes), net.payload_fraction
    tokens = [burst, burst]              # [outbound, inbound]
    idle_since = [-np.inf, -np.inf]      # when each direction last finished carrying data
    delay = 0.0
    out = np.zeros(len(data_bytes))
    for i in range(len(data_bytes)):
        if data_bytes[i] <= 0.0:
            delay += exchange_s[i]
            continue
        d = 1 if inbound[i] else 0
        n = int(pieces[i])
        wire = data_bytes[i] / frac / n
        at = time_s[i] + delay + exchange_s[i] - (n - 1) * piece_gap_s   # the first piece's start
        took = 0.0
        for k in range(n):
            tokens[d] = min(burst, tokens[d] + rate * max(at - idle_since[d], 0.0))
            t = max(wire - tokens[d], 0.0) / rate
            tokens[d] = max(tokens[d] - wire, 0.0)
            idle_since[d] = at + t
            took += t
            at = at + t + piece_gap_s
        out[i] = took
        delay += exchange_s[i] + took
    return out
