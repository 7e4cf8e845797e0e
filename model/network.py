"""Network layers of a storage stack: NBD block devices and NFS mounts over a network.

Three node types (:mod:`diskmodel.model.nodes`) and the throughput they predict:

* :class:`Network` (a record inside the two nodes): the link as ``tc``
  shapes it, a rate [bytes/s on the wire] and a round trip [s].  TCP/IP
  moves ``(mtu - 52) / (mtu + 14)`` of the wire's bytes as payload: 20
  bytes of IPv4 and 32 of TCP with timestamps per segment, and the 14-byte
  Ethernet header that ``tbf`` meters with each frame (RFC 791, RFC 7323).
* :class:`NbdDevice` (kind ``"nbd"``): a block device whose requests cross
  the network to an NBD server, where they land on the server's own stack
  (``export``, any block node of :mod:`diskmodel.model.block`: a partition
  or a loop file on the server's disk).  A request of S bytes costs (the
  NBD protocol: a 28-byte request header, a 16-byte reply)::

      R(S) = client_overhead_s + S / copy_rate + rtt_s + (S + 44) / payload_rate
             + server_overhead_s + (1 - server_cache_hit) * T_server(S)

  where T_server is the export's own answer to the same requests (for a
  partition, the disk's service time, eqs. 3-8), and a link with a tbf
  bucket (``Network.burst_bytes``) passes the bytes the bucket gathered
  while the link idled through the rest of R at once.  It follows the block
  protocol (``block_time``), so a file system can be made on it and a
  RAID 1 can mirror a local disk with it (:mod:`diskmodel.model.raid`).
* :class:`NfsMount` (kind ``"nfs"``): a file system whose operations cross
  the network to an NFS server (version 3, RFC 1813, or 4.0/4.1/4.2, RFC
  7530, 8881, 7862), on top of the server's own file system (``export``, a
  :class:`diskmodel.model.stack.FileSystemNode`).  Each file operation costs
  its metadata round trips (:data:`ROUND_TRIPS`, per version), each
  ``client_overhead_s + rtt_s + server_op_s``; a sync export also waits on
  every modifying operation for the server's stable storage (a journal
  commit, or for ext2 the inode and directory blocks); the bytes cost their
  time over the link, the server's disk or the client's copy, whichever is
  slowest.  For the three phases modelled the Linux client's v3 and v4
  exchanges take the same number of round trips (:data:`ROUND_TRIPS`).
  An NFS mount may be the top of a :class:`~diskmodel.model.stack.Stack`
  (the tree below it the server's), which
  :func:`diskmodel.model.predict.predict_nfs` predicts under PostMark and
  seed 003's file copy.

Throughput with N requests in flight is the asymptotic bound of an
operational (closed) queueing model (Lazowska, Zahorjan, Graham & Sevcik,
*Quantitative System Performance*, 1984, section 5.2): with per-request
demands D_k at the client, the link and the server, and the round trip Z as
a pure delay,

    X(N) = min(N / (sum(D_k) + Z), 1 / max(D_k))        [requests/s]

so that where the link is the bottleneck, the throughput follows the network
and not the disk, and never exceeds the link's payload rate or the server's.

Every cost is SI (seconds, bytes, bytes/s).  The model reads no file and starts nothing; the disks that the server's
partitions name come in a :class:`diskmodel.model.block.BlockEnv`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import evolve as _evolve
from ._checks import finite_array, finite_scalar, flag, one_of, show, whole_number
from .block import BlockEnv, BlockRequests, BlockTime, block_time_of
from .nodes import is_node, node_type, text_field
from .units import KIB, MIB

#: Bytes of IPv4 (20) and TCP with timestamps (32) headers in every segment (RFC 791, RFC 7323).
TCP_IP_HEADER_BYTES = 52
#: The Ethernet header tbf meters with every frame [bytes].
ETHERNET_HEADER_BYTES = 14
#: NBD's request header (28 bytes) and simple reply header (16 bytes), per request (NBD proto.md).
NBD_HEADER_BYTES = 28 + 16
#: The NFS versions modelled (the Linux client's ``vers=`` values).
NFS_VERSIONS = ("3", "4.0", "4.1", "4.2")
#: File operations of :func:`nfs_phase`.
NFS_PHASES = ("write", "read", "remove")
#: Metadata round trips per file of each phase, by version (the Linux client, cold attribute cache):
#: v3 "write" = LOOKUP (a miss) + CREATE + COMMIT at close; "read" = LOOKUP + ACCESS (close-to-open
#: revalidation); "remove" = REMOVE (RFC 1813).  v4 "write" = OPEN (creating; one compound does the
#: lookup, access and getattr) + COMMIT + CLOSE; "read" = OPEN + CLOSE; "remove" = REMOVE (RFC 7530;
#: 4.1 and 4.2 add a SEQUENCE to the same compounds, not round trips, RFC 8881).
ROUND_TRIPS = {"3": {"write": 3, "read": 2, "remove": 1},
               **{v: {"write": 3, "read": 2, "remove": 1} for v in ("4.0", "4.1", "4.2")}}
#: Of those, the ones a sync export makes wait for stable storage: v3 CREATE and COMMIT, v4 OPEN
#: (creating) and COMMIT; REMOVE.
SYNC_WAITS = {v: {"write": 2, "read": 0, "remove": 1} for v in NFS_VERSIONS}
#: Blocks a journal commit writes (descriptor, the changed metadata block, commit record; ext3/4 JBD2).
JOURNAL_COMMIT_BLOCKS = 3
#: Blocks an unjournalled (ext2) synchronous metadata update writes: the inode and the directory block.
UNJOURNALLED_SYNC_BLOCKS = 2


def _address(name: str, value: str, *, path: bool) -> str:
    """"host:port" (NBD) or "host:/path" (NFS), or ValueError naming *name*."""
    text_field(name, value, empty_ok=False)
    host, sep, rest = value.rpartition(":")
    if path:
        ok = bool(host) and sep and rest.startswith("/")
    else:
        ok = bool(host) and sep and rest.isdigit() and 0 < int(rest) < 65536
    if not ok or any(c.isspace() for c in value):
        form = "host:/path" if path else "host:port, the port in 1..65535"
        raise ValueError(f"{name} must be {form} (got {value!r})")
    return value


# ------------------------------------------------------------------ the network

@dataclass(frozen=True)
class Network:
    """A network link as ``tc`` shapes it: netem's delay and tbf's rate.

    Attributes
    ----------
    rate_bytes_per_s : float or None
        The rate tbf meters [bytes/s of frames, Ethernet header included];
        None for an unshaped link.
    rtt_s : float
        Round trip [s], >= 0 (netem's delay on both directions).
    mtu_bytes : int
        The link's MTU [bytes], > 52 (TCP/IP headers), 1500 by default.
    burst_bytes : int
        tbf's bucket [bytes], >= 0: after the link has been idle, up to this
        many bytes pass at once (the bucket refills at the rate meanwhile);
        0, the default, is a pure rate.  Only a shaped link has one.
    """

    rate_bytes_per_s: float | None
    rtt_s: float
    mtu_bytes: int = 1500
    burst_bytes: int = 0

    def __post_init__(self):
        if self.rate_bytes_per_s is not None:
            try:
                rate = finite_scalar("rate_bytes_per_s", self.rate_bytes_per_s, positive=True)
            except ValueError as exc:
                raise ValueError(f"{exc}; None is unshaped" if "finite" in str(exc) else str(exc)) from None
            object.__setattr__(self, "rate_bytes_per_s", rate)
        object.__setattr__(self, "rtt_s", finite_scalar("rtt_s", self.rtt_s, nonnegative=True))
        object.__setattr__(self, "mtu_bytes", whole_number("mtu_bytes", self.mtu_bytes,
                                                           minimum=TCP_IP_HEADER_BYTES + 1))
        object.__setattr__(self, "burst_bytes", whole_number("burst_bytes", self.burst_bytes, minimum=0))
        if self.burst_bytes and not self.shaped:
            raise ValueError(f"burst_bytes must be 0 on an unshaped link (got {self.burst_bytes})")

    def evolve(self, **changes) -> "Network":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    @property
    def payload_fraction(self) -> float:
        """Payload bytes per byte tbf meters: (mtu - 52) / (mtu + 14)."""
        return (self.mtu_bytes - TCP_IP_HEADER_BYTES) / (self.mtu_bytes + ETHERNET_HEADER_BYTES)

    @property
    def shaped(self) -> bool:
        return self.rate_bytes_per_s is not None

    @property
    def payload_rate_bytes_per_s(self) -> float:
        """The most TCP payload the link carries one way [bytes/s] (inf for an unshaped link)."""
        return self.rate_bytes_per_s * self.payload_fraction if self.shaped else math.inf

    def transfer_s(self, size_bytes, idle_s=0.0):
        """Time to carry *size_bytes* of payload one way [s] (vectorised), after *idle_s* of an idle link.

        A token bucket (tbf): the bytes on the wire, less the tokens the
        idle time gathered (at most ``burst_bytes``), at the rate; with no
        idle time (a busy link) exactly the payload rate.  Never faster than
        the rate over the idle time and the transfer together.
        """
        size = finite_array("size_bytes", size_bytes, nonnegative=True)
        if not self.shaped:
            return size * 0.0
        idle = finite_array("idle_s", idle_s, nonnegative=True)
        wire = size / self.payload_fraction
        tokens = np.minimum(self.burst_bytes, self.rate_bytes_per_s * idle)
        return np.maximum(wire - tokens, 0.0) / self.rate_bytes_per_s

    def describe(self) -> str:
        rate = f"{self.rate_bytes_per_s * 8 / 1e6:g} Mb/s" if self.shaped else "unshaped"
        burst = f", burst {self.burst_bytes} bytes" if self.burst_bytes else ""
        return f"network {rate}, rtt {self.rtt_s * 1e3:g} ms, mtu {self.mtu_bytes}{burst}"


def _copy_rate(node) -> None:
    if node.copy_rate_bytes_per_s is not None:
        object.__setattr__(node, "copy_rate_bytes_per_s", finite_scalar(
            "copy_rate_bytes_per_s", node.copy_rate_bytes_per_s, positive=True))


def _copy_s(node, size_bytes) -> float:
    """The client CPU's time to move *size_bytes* at the node's copy rate [s] (0 without one)."""
    return 0.0 if node.copy_rate_bytes_per_s is None else size_bytes / node.copy_rate_bytes_per_s


def _network(value) -> Network:
    if not isinstance(value, Network):
        raise ValueError(f"network must be a Network (got {show(value)})")
    return value


# ------------------------------------------------------------------ NBD

@node_type("nbd")
@dataclass(frozen=True)
class NbdDevice:
    """A network block device (``/dev/nbdN``) served from a block node of the server.

    Attributes
    ----------
    export : block node
        What the server exports, on the server's disk: a partition, an LVM
        volume, a loop file (the file nbd-server serves)...
    network : Network
        The link between the client and the server (rate, round trip, MTU).
    server : str
        "host:port" of the NBD server (10809 is NBD's port).
    client_overhead_s : float
        Per request on the client: the block layer, the nbd driver's socket
        send and receive [s], >= 0.
    server_overhead_s : float
        Per request in the server process: receive, pread/pwrite, reply [s], >= 0.
    server_cache_hit : float
        The fraction of requests the server's page cache serves (nbd-server
        reads and writes the export through it), in [0, 1].
    copy_rate_bytes_per_s : float or None
        The rate at which the client's CPU moves a request's bytes (copies,
        checksums) [bytes/s], part of the client's demand; None (the
        default) when that is free beside the link.
    name : str
        The client's device, e.g. "/dev/nbd0".
    """

    export: object
    network: Network
    server: str = "10.0.0.1:10809"
    client_overhead_s: float = 30e-6
    server_overhead_s: float = 30e-6
    server_cache_hit: float = 0.0
    copy_rate_bytes_per_s: float | None = None
    name: str = "/dev/nbd0"

    def __post_init__(self):
        if not is_node(self.export) or not hasattr(self.export, "block_time"):
            raise ValueError(f"export must be a block node, e.g. a Partition (got {show(self.export)})")
        _network(self.network)
        _address("server", self.server, path=False)
        for name in ("client_overhead_s", "server_overhead_s"):
            object.__setattr__(self, name, finite_scalar(name, getattr(self, name), nonnegative=True))
        object.__setattr__(self, "server_cache_hit", finite_scalar("server_cache_hit", self.server_cache_hit,
                                                                   nonnegative=True, maximum=1.0))
        _copy_rate(self)
        text_field("name", self.name)

    def evolve(self, **changes) -> "NbdDevice":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    @property
    def size_bytes(self) -> int:
        return int(self.export.size_bytes)

    def describe(self) -> str:
        return f"nbd {self.name or '(unnamed)'} from {self.server}, {self.network.describe()}"

    def block_time(self, requests: BlockRequests, env: BlockEnv) -> BlockTime:
        """The block protocol (:mod:`diskmodel.model.block`): the module docstring's R(S) and X(N).

        The export serves the same requests (its ``interval_s`` is the
        server's demand, times the cache's miss ratio); at queue depth N the
        interval between completions is max(R / N, D_max) and the latency N
        times that (Little's law), the excess over R reported as
        ``nbd_queueing_s``.
        """
        served, demands = _demands(self, requests, env)
        miss = 1.0 - self.server_cache_hit
        # the export's parts as a share of one request's service (its interval), paid on a cache miss
        share = miss * served.interval_s / served.time_s if served.time_s > 0 else miss
        parts = {name: value * share for name, value in served.parts.items()}
        transfer, alone = _alone(self, requests, demands)
        interval = max(alone / requests.queue_depth, max(demands.values()))
        latency = requests.queue_depth * interval
        parts.update(nbd_client_s=demands["client"], nbd_round_trip_s=self.network.rtt_s,
                     nbd_transfer_s=transfer, nbd_server_s=self.server_overhead_s,
                     nbd_queueing_s=latency - alone)
        return BlockTime(requests.size_bytes, latency, interval, parts, miss * served.member_ios)


def _demands(device: NbdDevice, requests: BlockRequests, env: BlockEnv) -> tuple[BlockTime, dict]:
    """The export's answer to *requests*, and each stage's busy time per request: client, link, server [s]."""
    served = block_time_of(device.export, requests, env)
    return served, {"client": device.client_overhead_s + _copy_s(device, requests.size_bytes),
                    "link": float(device.network.transfer_s(requests.size_bytes + NBD_HEADER_BYTES)),
                    "server": device.server_overhead_s + (1.0 - device.server_cache_hit) * served.interval_s}


def _alone(device: NbdDevice, requests: BlockRequests, demands: dict) -> tuple[float, float]:
    """(the link's time, R) for a request with nothing else in flight: tbf's bucket refills while the
    link idles through the round trip and the other stages."""
    idle = device.network.rtt_s + demands["client"] + demands["server"]
    transfer = float(device.network.transfer_s(requests.size_bytes + NBD_HEADER_BYTES, idle))
    return transfer, idle + transfer


def bottleneck(device: NbdDevice, requests: BlockRequests, env: BlockEnv) -> str:
    """What bounds *device*'s throughput for *requests*: "latency" (too few in flight), "client", "link" or "server"."""
    if not isinstance(device, NbdDevice):
        raise ValueError(f"device must be an NbdDevice (got {show(device)})")
    _, demands = _demands(device, requests, env)
    _, alone = _alone(device, requests, demands)
    stage = max(demands, key=demands.get)
    return "latency" if alone / requests.queue_depth > demands[stage] else stage


# ------------------------------------------------------------------ NFS

@node_type("nfs")
@dataclass(frozen=True)
class NfsMount:
    """An NFS mount: the client's view of a server's exported file system.

    Attributes
    ----------
    export : FileSystemNode
        The server's file system (its kind, block size and volume on the
        server's disk).
    network : Network
        The link between the client and the server (rate, round trip, MTU).
    server : str
        "host:/path" of the export.
    version : str
        One of :data:`NFS_VERSIONS` (the ``vers=`` mount option).
    sync_export : bool
        The export's ``sync`` option (True, the default of exportfs):
        the server replies to modifying operations only once they are on
        stable storage; False is ``async``.
    wsize_bytes, rsize_bytes : int
        Largest WRITE / READ payload per RPC [bytes] (Linux: 1 MiB).
    client_overhead_s : float
        Per RPC on the client [s], >= 0.
    server_op_s : float
        Per RPC in nfsd, without waiting for the disk [s], >= 0.
    copy_rate_bytes_per_s : float or None
        The rate at which the client's CPU moves file data [bytes/s]; None
        (the default) when that is free beside the link.
    """

    export: object
    network: Network
    server: str = "10.0.0.1:/srv/export"
    version: str = "4.2"
    sync_export: bool = True
    wsize_bytes: int = 1 * MIB
    rsize_bytes: int = 1 * MIB
    client_overhead_s: float = 50e-6
    server_op_s: float = 50e-6
    copy_rate_bytes_per_s: float | None = None

    def __post_init__(self):
        from .stack import FileSystemNode  # the stack imports the node types it may hold

        if not isinstance(self.export, FileSystemNode):
            raise ValueError(f"export must be a file system node, the server's (got {show(self.export)})")
        _network(self.network)
        _address("server", self.server, path=True)
        one_of("version", self.version, NFS_VERSIONS)
        flag("sync_export", self.sync_export)
        for name in ("wsize_bytes", "rsize_bytes"):
            object.__setattr__(self, name, whole_number(name, getattr(self, name), minimum=4 * KIB,
                                                        maximum=1 * MIB, maximum_is="Linux's largest"))
        for name in ("client_overhead_s", "server_op_s"):
            object.__setattr__(self, name, finite_scalar(name, getattr(self, name), nonnegative=True))
        _copy_rate(self)

    def evolve(self, **changes) -> "NfsMount":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    @property
    def block_size_bytes(self) -> int:
        """The server file system's block size (the model's, else the mkfs default 4 KiB)."""
        parameters = self.export.parameters
        return 4 * KIB if parameters is None else int(parameters.block_size_bytes)

    @property
    def journaled(self) -> bool:
        """Does the server's file system journal its metadata (the model's parameters, else all kinds but ext2)?"""
        parameters = self.export.parameters
        return self.export.kind != "ext2" if parameters is None else bool(parameters.journaled)

    def describe(self) -> str:
        return (f"nfs v{self.version} {self.server} ({'sync' if self.sync_export else 'async'} export), "
                f"{self.network.describe()}")


@dataclass(frozen=True)
class NfsPrediction:
    """Predicted time of one phase of file operations on an NFS mount.

    Attributes
    ----------
    phase : str
    files : int
    file_size_bytes : int
    elapsed_s : float
    parts : dict
        round_trips_s (metadata RPCs), stable_s (a sync export's waits for
        the server's disk), data_s (the bytes, over the link or the
        server's disk, whichever is slower), data_rpcs_s (the per-RPC costs
        of the READs and WRITEs) [s]; they sum to elapsed_s.
    throughput_bytes_per_s : float
        Bytes moved over elapsed_s (0 for "remove").
    files_per_s : float
    bottleneck : str
        "link", "server" or "client" (its copy rate) for the data, "latency" where the round trips dominate.
    """

    phase: str
    files: int
    file_size_bytes: int
    elapsed_s: float
    parts: dict
    throughput_bytes_per_s: float
    files_per_s: float
    bottleneck: str


def nfs_stable_write_s(mount: NfsMount, env: BlockEnv) -> float:
    """One wait of a sync export for stable storage [s]: a journal commit (ext2: inode and directory blocks).

    Random writes on the server's volume (the block protocol): a journal
    commit is one request of ``JOURNAL_COMMIT_BLOCKS`` blocks, an
    unjournalled update ``UNJOURNALLED_SYNC_BLOCKS`` requests of one block.
    """
    block = mount.block_size_bytes
    blocks, count = (JOURNAL_COMMIT_BLOCKS, 1) if mount.journaled else (1, UNJOURNALLED_SYNC_BLOCKS)
    one = block_time_of(mount.export.volume, BlockRequests(blocks * block, is_write=True), env)
    return count * one.time_s


def nfs_phase(mount: NfsMount, env: BlockEnv, phase: str, files: int, file_size_bytes: int, *,
              server_cache_hit: float = 0.0) -> NfsPrediction:
    """Time of *phase* ("write": create, write and close; "read": open, read and close; "remove") on *files* files.

    Each file: :data:`ROUND_TRIPS` metadata RPCs, each client_overhead_s +
    rtt_s + server_op_s; with a sync export :data:`SYNC_WAITS` of them wait
    :func:`nfs_stable_write_s`; then the file's bytes in ceil(size / wsize)
    (rsize) RPCs pipelined behind one round trip, the bytes taking the
    longer of the link's time and the server volume's (sequential requests
    of wsize / rsize; reads through the server's page cache miss with
    probability 1 - *server_cache_hit*; an async export's page cache
    absorbs the writes).  *env* gives the disks of the server's volume.
    """
    if not isinstance(mount, NfsMount):
        raise ValueError(f"mount must be an NfsMount (got {show(mount)})")
    if not isinstance(env, BlockEnv):
        raise ValueError(f"env must be a BlockEnv (got {show(env)})")
    one_of("phase", phase, NFS_PHASES)
    files = whole_number("files", files, minimum=1)
    size = whole_number("file_size_bytes", file_size_bytes, minimum=0)
    hit = finite_scalar("server_cache_hit", server_cache_hit, nonnegative=True, maximum=1.0)
    net = mount.network
    per_rpc = mount.client_overhead_s + net.rtt_s + mount.server_op_s
    round_trips = files * ROUND_TRIPS[mount.version][phase] * per_rpc
    waits = SYNC_WAITS[mount.version][phase] if mount.sync_export else 0
    stable = files * waits * nfs_stable_write_s(mount, env) if waits else 0.0
    data = data_rpcs = 0.0
    limit = "latency"
    if phase != "remove" and size > 0:
        chunk = mount.wsize_bytes if phase == "write" else mount.rsize_bytes
        rpcs = -(-size // chunk)
        # tbf's bucket refills during the file's metadata round trips
        link_s = float(net.transfer_s(size, (round_trips + stable) / files + net.rtt_s))
        copy_s = _copy_s(mount, size)
        server_s = 0.0
        if phase == "read" or mount.sync_export:
            pieces = [(chunk, rpcs - 1), (size - chunk * (rpcs - 1), 1)]
            server_s = sum(n * block_time_of(mount.export.volume, BlockRequests(
                piece, is_write=phase == "write", sequential=True), env).interval_s for piece, n in pieces if n)
            if phase == "read":
                server_s *= 1.0 - hit
        data = files * (net.rtt_s + max(link_s, server_s, copy_s))
        data_rpcs = files * rpcs * (mount.client_overhead_s + mount.server_op_s)
        if data > round_trips + stable:
            limit = max((link_s, "link"), (server_s, "server"), (copy_s, "client"))[1]
    elapsed = round_trips + stable + data + data_rpcs
    moved = files * size if phase != "remove" else 0
    return NfsPrediction(phase, files, size, elapsed,
                         {"round_trips_s": round_trips, "stable_s": stable, "data_s": data,
                          "data_rpcs_s": data_rpcs},
                         moved / elapsed if elapsed > 0 else math.inf,
                         files / elapsed if elapsed > 0 else math.inf, limit)


__all__ = ["JOURNAL_COMMIT_BLOCKS", "NBD_HEADER_BYTES", "NFS_PHASES", "NFS_VERSIONS", "ROUND_TRIPS", "SYNC_WAITS",
           "Network", "NbdDevice", "NfsMount", "NfsPrediction", "bottleneck", "nfs_phase", "nfs_stable_write_s"]
