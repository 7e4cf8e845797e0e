"""Network layers of a storage stack: NBD block devices and NFS mounts over a network.

* :class:`Network` (a record inside the two nodes): the link as ``tc``
  shapes it, a rate [bytes/s on the wire] and a round trip [s].  TCP/IP
  moves ``(mtu - 52) / (mtu + 14)`` of the wire's bytes as payload: 20
  bytes of IPv4 and 32 of TCP with timestamps per segment, and the 14-byte
  Ethernet header that ``tbf`` meters with each frame (RFC 791, RFC 7323).
* :class:`NbdDevice` (kind ``"nbd"``): a block device whose requests cross
  the network to an NBD server, where they land on the server's own stack
  (``export``, any block node: a partition or a loop file on the server's
  disk).
* :class:`NfsMount` (kind ``"nfs"``): a file system whose operations cross
  the network to an NFS server (version 3, RFC 1813, or 4.0/4.1/4.2, RFC
  7530, 8881, 7862), on top of the server's own file system (``export``, a
  :class:`diskmodel.model.stacks.stack.FileSystemNode`).

Their time is the I/O path's (:mod:`diskmodel.model.iopath.network`): a
request, or a file operation's RPCs, crosses the link (the round trip, the
per-request costs, the bytes at the payload rate) and is then served by
the server's stack and drives (:mod:`diskmodel.model.iopath.timing`).

Every cost is SI (seconds, bytes, bytes/s).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import evolve as _evolve
from .._checks import finite_array, finite_scalar, flag, one_of, show, whole_number
from .nodes import is_node, kind_of, node_type, text_field
from ..units import KIB, MIB

#: Bytes of IPv4 (20) and TCP with timestamps (32) headers in every segment (RFC 791, RFC 7323).
TCP_IP_HEADER_BYTES = 52
#: The Ethernet header tbf meters with every frame [bytes].
ETHERNET_HEADER_BYTES = 14
#: NBD's request header (28 bytes) and simple reply header (16 bytes), per request (NBD proto.md).
NBD_HEADER_BYTES = 28 + 16
#: nbd's queue limit max_sectors_kb [KiB], which drivers/block/nbd.c (nbd_dev_add) sets to 256 sectors.
NBD_MAX_SECTORS_KB = 128
#: The NFS versions modelled (the Linux client's ``vers=`` values).
NFS_VERSIONS = ("3", "4.0", "4.1", "4.2")
#: Metadata round trips per file of each phase, by version (the Linux client, cold attribute cache):
#: v3 "write" = LOOKUP (a miss) + CREATE + COMMIT at close; "read" = LOOKUP + ACCESS (close-to-open
#: revalidation); "remove" = REMOVE (RFC 1813).  v4 "write" = OPEN (creating; one compound does the
#: lookup, access and getattr) + COMMIT + CLOSE; "read" = OPEN + CLOSE; "remove" = REMOVE (RFC 7530;
#: 4.1 and 4.2 add a SEQUENCE to the same compounds, not round trips, RFC 8881).
ROUND_TRIPS = {"3": {"write": 3, "read": 2, "remove": 1},
               **{v: {"write": 3, "read": 2, "remove": 1} for v in ("4.0", "4.1", "4.2")}}


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
        if not is_node(self.export) or not hasattr(self.export, "size_bytes"):
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
        Largest WRITE / READ payload per RPC [bytes]: the client's request (Linux: 1 MiB) capped at the
        server's largest (Linux's nfsd: :func:`nfsd_max_block_bytes` of its memory, unless set). The
        server's file system receives the client's reads and writes in calls of these sizes.
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
        # a file-system node (diskmodel.model.stacks.stack.FileSystemNode, which imports this module): it has a volume
        if not is_node(self.export) or not hasattr(self.export, "volume") or kind_of(self.export) in ("nfs", "nbd"):
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


__all__ = ["nfsd_max_block_bytes", "NBD_HEADER_BYTES", "NBD_MAX_SECTORS_KB", "NFS_VERSIONS", "ROUND_TRIPS", "Network",
           "NbdDevice", "NfsMount"]


def nfsd_max_block_bytes(total_ram_bytes: int) -> int:
    """Linux nfsd's default largest READ and WRITE payload [bytes] on a server of *total_ram_bytes* (its
    MemTotal): 1 MiB halved while it exceeds a 4096th of the memory, down to 8 KiB at most halvings
    (fs/nfsd/nfssvc.c, nfsd_get_default_max_blksize, set when nfsd starts unless max_block_size was
    written). A client mounts with the smaller of its rsize/wsize and this: a server of 457 MiB gets 64 KiB."""
    ram = whole_number("total_ram_bytes", total_ram_bytes, minimum=1)
    target, out = ram >> 12, 1 * MIB
    while out > target and out >= 16 * KIB:
        out //= 2
    return out
