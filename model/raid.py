"""RAID arrays as block nodes: striping (RAID 0), mirrors (RAID 1) and parity (RAID 5, 6).

:class:`RaidArray` (kinds "raid0", "raid1", "raid5", "raid6") is a block
node (:mod:`diskmodel.model.block`) over member block nodes that may
differ: each member answers for itself (a partition on its own disk --
two presets, or two calibrations --, a loop file, a network block device).
Striping geometry, :func:`stripe_layout`, is shared with the LVM striped
volume (:class:`diskmodel.model.volumes.StripedVolume`), which is RAID 0
over its physical volumes.

**Striping** (Patterson, Gibson & Katz 1988, RAID level 0): the array's
bytes are dealt in chunks of ``chunk_size_bytes`` round-robin over the
members.  A request of S bytes at an offset aligned to S (as fio and the
page cache place them) touches ceil-many chunks; it is split into one
piece per member, served at once, and ends when the slowest piece does.
:func:`stripe_layout` gives the split over every offset of one period of
the layout: the share of requests that stay on one member (``single``)
and the pieces of those that span several.

**Mirror** (RAID 1): a write goes to every live member at once and ends
with the slowest.  A read goes to one member, chosen by ``read_policy``:

* ``"least_busy"``: the member that would finish it first: the fastest at
  queue depth 1; at depth q >= 2 reads are spread in proportion to the
  members' speeds, so the throughput is the sum of theirs;
* ``"md"``: Linux md's ``read_balance`` (drivers/md/raid1.c): a sequential
  stream stays on the member that served its previous request (from an
  idle array, the first member); random reads go to the member whose head
  is nearest, each member alike in expectation (the mean of the members),
  and at depth q >= 2 to the least loaded (as least_busy);
* ``"btrfs"``: btrfs's default ``pid`` policy (mirror = pid % copies): one
  process always reads one mirror, which one depends on its pid, so the
  expectation is the mean of the members at any depth; ``read_member``
  names that mirror when it is known (one reader whose mirror was
  observed), and then every read goes to it.

**Parity** (RAID 5: one parity chunk per row, RAID 6: two; rotating,
md's left-symmetric layout): reads are striped over the data chunks and
cost no parity I/O.  A write that covers a whole row (full-stripe write)
writes data and parity with no reads.  A write that covers k of the d data
chunks of a row must read first: md takes the cheaper of
read-modify-write (read the k old data chunks and the p parity chunks:
k + p reads, then k + p writes; 4 member I/Os for one chunk of RAID 5, 6
for RAID 6) and reconstruct-write (read the d - k untouched data chunks),
each read and write of the bytes the request touches in the chunk (md
works in page-sized stripe heads).  Reads happen at once on their members,
then the writes (two phases).  **Degraded** (``failed_members``): a piece
on a failed member is rebuilt from the same bytes of every surviving member
of its row; writes to a row with a failed member use reconstruct-write.

**Members on one device.** Members that are partitions of the same disk
(their ``disk`` names one device: two regions of one drive, two loop
devices over files on one scratch device) do not add their bandwidth: the
device serves the pieces it holds together, as one request of their summed
size (its fixed cost paid once, overlapped; the transfers one after the
other), so striping over them is never faster than the device itself.

**btrfs's data path** (``tool="btrfs"``): a file in btrfs costs more than
its blocks on the members: data checksums (crc32c, a csum-tree item per
extent), copy-on-write allocation and, since Linux 6.14 (commit 968f19c5b1b7,
"btrfs: always fallback to buffered write if the inode requires checksum"),
an ``O_DIRECT`` write to a checksummed file falls back to a buffered write
that is written back and waited for.  Each request pays, in series with its
member I/O, ``fs_<read|write>_request_s + size * fs_<read|write>_s_per_byte``
(0 by default: measured, e.g. by btrfs over a memory-backed device, where
the members cost almost nothing).

Not modelled: md's write-intent bitmap and resync, the stripe cache
holding a row across requests (a sequential stream of small writes pays
its reads on every request, as at queue depth 1 md has nothing to merge),
and the CPU time of parity (XOR, RAID 6's Galois field), which is small
next to a member I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import evolve as _evolve
from ._checks import finite_scalar, one_of, show, whole_number
from .block import BlockRequests, BlockTime, block_time_of, chunk_size, mixture, parallel, serial
from .nodes import is_node, node_type, text_field
from .units import KIB

RAID_KINDS = ("raid0", "raid1", "raid5", "raid6")
#: Parity chunks per row.
PARITY = {"raid0": 0, "raid1": 0, "raid5": 1, "raid6": 2}
#: Fewest members of each level (md refuses fewer for RAID 5 and 6).
MIN_MEMBERS = {"raid0": 2, "raid1": 2, "raid5": 3, "raid6": 4}
READ_POLICIES = ("least_busy", "md", "btrfs")
#: Who builds the array (for provisioning; btrfs builds raid0 and raid1 only).
TOOLS = ("md", "lvm", "btrfs")
#: md's default chunk (mdadm --chunk) [bytes]; LVM's raid and striped default is 64 KiB.
DEFAULT_CHUNK_BYTES = 512 * KIB
#: Offsets enumerated per layout period at most; beyond, a uniform grid of this many.
MAX_OFFSETS = 4096
#: btrfs's data-path costs (RaidArray fields).
_FS_COSTS = ("fs_read_request_s", "fs_read_s_per_byte", "fs_write_request_s", "fs_write_s_per_byte")


def stripe_layout(size_bytes: int, chunk_bytes: int, data_members: int, *, parity: int = 0) -> list[dict]:
    """How requests of *size_bytes* at offsets aligned to their size fall on a striped layout.

    Each of the d = *data_members* chunks of a row lies on its own member;
    with *parity* p > 0 a row has n = d + p members and its parity rotates
    (md's left-symmetric: row r's first parity chunk on member n-1-(r mod n),
    the data from the member after the last parity chunk on).  Offsets run
    over one period of the layout (lcm of the request size and n rows).

    Returns one dict per distinct outcome: ``weight`` (its share of the
    requests), ``data`` {member: bytes of the request on it}, and ``rows``:
    a list of (chunks touched, whole row covered, bytes touched per chunk at
    most, {data member: bytes}, (parity members)) per row the request touches.
    """
    size = whole_number("size_bytes", size_bytes, minimum=1)
    chunk = whole_number("chunk_bytes", chunk_bytes, minimum=1)
    d = whole_number("data_members", data_members, minimum=1)
    p = whole_number("parity", parity, minimum=0)
    n = d + p
    row_bytes = d * chunk
    period = size * (n * row_bytes) // math.gcd(size, n * row_bytes) if p else \
        size * row_bytes // math.gcd(size, row_bytes)
    count = period // size
    offsets = np.arange(count, dtype=np.int64) * size if count <= MAX_OFFSETS else \
        (np.arange(MAX_OFFSETS, dtype=np.int64) * (period // MAX_OFFSETS) // size) * size
    outcomes: dict = {}
    for offset in offsets:
        end = int(offset) + size
        rows = []
        data: dict = {}
        for row in range(int(offset) // row_bytes, (end - 1) // row_bytes + 1):
            lo, hi = max(int(offset), row * row_bytes), min(end, (row + 1) * row_bytes)
            first_parity = (n - 1 - row % n) if p else 0
            parity_members = tuple((first_parity + j) % n for j in range(p))
            per_member: dict = {}
            for c in range(lo // chunk, (hi - 1) // chunk + 1):
                position = c - row * d
                member = (first_parity + p + position) % n if p else position
                piece = min(hi, (c + 1) * chunk) - max(lo, c * chunk)
                per_member[member] = per_member.get(member, 0) + piece
                data[member] = data.get(member, 0) + piece
            rows.append((len(per_member), hi - lo == row_bytes, max(per_member.values()),
                         tuple(sorted(per_member.items())), parity_members))
        key = (tuple(sorted(data.items())), tuple(rows))
        outcomes[key] = outcomes.get(key, 0) + 1
    total = sum(outcomes.values())
    return [{"weight": w / total, "data": dict(k[0]),
             "rows": [(k_, full, most, dict(per), par) for k_, full, most, per, par in k[1]]}
            for k, w in outcomes.items()]


def stripe_split(size_bytes: int, chunk_bytes: int, members: int) -> dict:
    """The split of requests of *size_bytes* (aligned to their size) over *members*-way striping.

    Returns ``single`` (share of requests served by one member),
    ``mean_members`` (members a request touches, on average) and
    ``largest_piece_bytes`` (mean bytes of its largest per-member piece).
    """
    layout = stripe_layout(size_bytes, chunk_bytes, members)
    return {"single": sum(o["weight"] for o in layout if len(o["data"]) == 1),
            "mean_members": sum(o["weight"] * len(o["data"]) for o in layout),
            "largest_piece_bytes": sum(o["weight"] * max(o["data"].values()) for o in layout)}


class _MemberTimes:
    """block_time of pieces on members, each (member, size, read/write) computed once."""

    def __init__(self, members, requests: BlockRequests, env):
        self.members, self.requests, self.env, self.cache = members, requests, env, {}

    def __call__(self, member: int, size: int, *, is_write: bool | None = None, sequential: bool | None = None):
        is_write = self.requests.is_write if is_write is None else is_write
        sequential = self.requests.sequential if sequential is None else sequential
        key = (member, size, is_write, sequential)
        if key not in self.cache:
            piece = self.requests.evolve(size_bytes=size, is_write=is_write, sequential=sequential)
            self.cache[key] = block_time_of(self.members[member], piece, self.env)
        return self.cache[key]


def device_of(member) -> str | None:
    """The device a member lies on (a partition's ``disk``), or None: a device of its own."""
    return getattr(member, "disk", None)


def pieces_time(times: _MemberTimes, size_bytes: int, pieces: dict, **kind) -> BlockTime:
    """Pieces {member: bytes} served at once: members on one device (:func:`device_of`) as one request of
    their summed bytes on it (the fixed cost overlapped, the transfer shared), the devices in parallel."""
    groups: dict = {}
    for member, b in pieces.items():
        device = device_of(times.members[member])
        key = ("device", device) if device is not None else ("member", member)
        first, total = groups.get(key, (member, 0))
        groups[key] = (first, total + b)
    served = [times(first, total, **kind) for first, total in groups.values()]
    result = parallel(size_bytes, served)
    ios = sum(times(m, b, **kind).member_ios for m, b in pieces.items())
    return BlockTime(result.size_bytes, result.time_s, result.interval_s, result.parts, ios)


def striped_block_time(members, chunk_bytes: int, requests: BlockRequests, env) -> BlockTime:
    """RAID 0 over *members* (block nodes) with *chunk_bytes*: each outcome's pieces at once, averaged."""
    times = _MemberTimes(tuple(members), requests, env)
    layout = stripe_layout(requests.size_bytes, chunk_bytes, len(members))
    outcomes = [pieces_time(times, requests.size_bytes, o["data"]) for o in layout]
    result = mixture(requests.size_bytes, outcomes, [o["weight"] for o in layout])
    return _spread(result, requests, len(members), sum(o["weight"] * len(o["data"]) for o in layout))


def _spread(result: BlockTime, requests: BlockRequests, members: int, per_request: float) -> BlockTime:
    """At queue depth q, random requests on different members proceed at once: the interval shrinks."""
    if requests.queue_depth == 1 or requests.sequential:
        return result
    concurrency = max(1.0, min(float(requests.queue_depth), members / max(per_request, 1.0)))
    return BlockTime(result.size_bytes, result.time_s, result.interval_s / concurrency, result.parts,
                     result.member_ios)


@node_type(*RAID_KINDS)
@dataclass(frozen=True)
class RaidArray:
    """A RAID 0, 1, 5 or 6 array over member block nodes (md, LVM raid or btrfs).

    Attributes
    ----------
    kind : str
        "raid0", "raid1", "raid5" or "raid6".
    members : tuple of block nodes
        At least 2 (RAID 0, 1), 3 (RAID 5) or 4 (RAID 6); they may differ.
    chunk_size_bytes : int
        Stripe chunk [bytes]: a power of two >= 4 KiB (md's default 512 KiB,
        LVM's 64 KiB); unused by RAID 1.
    read_policy : str or None
        RAID 1's read policy: "least_busy", "md" or "btrfs"; default the
        tool's ("btrfs" for btrfs, else "md").
    read_member : int or None
        With read_policy "btrfs": the member one reading process's pid
        chose (pid % copies), when known; None: the expectation over pids.
    failed_members : tuple of int
        Indices of failed members (degraded mode): at most n - 1 (RAID 1),
        1 (RAID 5), 2 (RAID 6), none (RAID 0).
    array_size_bytes : int or None
        The size the array presents [bytes]; default all the members hold
        (the smallest member times the data members, whole chunks; md's
        superblock is the provisioner's to fit). Larger than that is refused.
    tool : str
        "md" (mdadm), "lvm" (lvcreate --type raidN / striped) or "btrfs"
        (mkfs.btrfs -d raid0/raid1; RAID 0 and 1 only).
    fs_read_request_s, fs_write_request_s : float
        btrfs's data path: fixed cost per read / write request [s], >= 0
        (tool "btrfs" only; default 0).
    fs_read_s_per_byte, fs_write_s_per_byte : float
        btrfs's data path: cost per byte read / written [s/byte], >= 0
        (checksums, copy-on-write, the buffered fallback of O_DIRECT writes).
    name : str
        The array's device, e.g. "/dev/md0" (for reports; default none).
    """

    kind: str
    members: tuple
    chunk_size_bytes: int = DEFAULT_CHUNK_BYTES
    read_policy: str | None = None
    read_member: int | None = None
    failed_members: tuple = ()
    array_size_bytes: int | None = None
    tool: str = "md"
    fs_read_request_s: float = 0.0
    fs_read_s_per_byte: float = 0.0
    fs_write_request_s: float = 0.0
    fs_write_s_per_byte: float = 0.0
    name: str = ""

    def __post_init__(self):
        one_of("kind", self.kind, RAID_KINDS)
        members = self.members
        if isinstance(members, (str, bytes)) or not isinstance(members, (tuple, list)):
            raise ValueError(f"members must be a list of block nodes (got {show(members)})")
        members = tuple(members)
        for i, member in enumerate(members):
            if not is_node(member) or not hasattr(member, "block_time"):
                raise ValueError(f"members[{i}] must be a block node (got {show(member)})")
        need = MIN_MEMBERS[self.kind]
        if len(members) < need:
            level = self.kind.replace("raid", "RAID ")
            raise ValueError(f"members: {level} needs at least {need} members (got {len(members)})")
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "chunk_size_bytes", chunk_size("chunk_size_bytes", self.chunk_size_bytes))
        one_of("tool", self.tool, TOOLS)
        if self.tool == "btrfs" and self.kind not in ("raid0", "raid1"):
            raise ValueError(f"tool: btrfs builds raid0 and raid1 only here (got kind {self.kind!r})")
        for cost in _FS_COSTS:
            value = finite_scalar(cost, getattr(self, cost), nonnegative=True)
            if value and self.tool != "btrfs":
                raise ValueError(f"{cost} is btrfs's data path: tool 'btrfs' only (got tool {self.tool!r})")
            object.__setattr__(self, cost, value)
        policy = self.read_policy
        if policy is None:
            policy = "btrfs" if self.tool == "btrfs" else "md"
        object.__setattr__(self, "read_policy", one_of("read_policy", policy, READ_POLICIES))
        failed = self.failed_members
        if isinstance(failed, (str, bytes)) or not isinstance(failed, (tuple, list)):
            raise ValueError(f"failed_members must be a list of member indices (got {show(failed)})")
        failed = tuple(sorted({whole_number("failed_members", i, minimum=0, maximum=len(members) - 1,
                                            maximum_is="the last member's index") for i in failed}))
        allowed = {"raid0": 0, "raid1": len(members) - 1, "raid5": 1, "raid6": 2}[self.kind]
        if len(failed) > allowed:
            raise ValueError(f"failed_members: a {self.kind} of {len(members)} members survives at most "
                             f"{allowed} failed (got {len(failed)})")
        object.__setattr__(self, "failed_members", failed)
        if self.read_member is not None:
            if self.kind != "raid1" or self.read_policy != "btrfs":
                raise ValueError(f"read_member applies to a raid1 with read_policy 'btrfs' (got kind "
                                 f"{self.kind!r}, read_policy {self.read_policy!r})")
            member = whole_number("read_member", self.read_member, minimum=0, maximum=len(members) - 1,
                                  maximum_is="the last member's index")
            if member in failed:
                raise ValueError(f"read_member ({member}) is a failed member")
            object.__setattr__(self, "read_member", member)
        text_field("name", self.name)
        capacity = self.capacity_bytes
        if capacity < 1:
            raise ValueError(f"members: the smallest member holds no whole chunk of {self.chunk_size_bytes} bytes")
        if self.array_size_bytes is not None:
            size = whole_number("array_size_bytes", self.array_size_bytes, minimum=1)
            if size > capacity:
                raise ValueError(f"array_size_bytes ({size}) does not fit the members: a {self.kind} of "
                                 f"{len(members)} members of at least {self.smallest_member_bytes} bytes holds "
                                 f"at most {capacity}")
            object.__setattr__(self, "array_size_bytes", size)

    def evolve(self, **changes) -> "RaidArray":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    # -- sizes ---------------------------------------------------------------
    @property
    def parity_members(self) -> int:
        return PARITY[self.kind]

    @property
    def data_members(self) -> int:
        """Data chunks per row: n - parity (1 for a mirror)."""
        return 1 if self.kind == "raid1" else len(self.members) - self.parity_members

    @property
    def smallest_member_bytes(self) -> int:
        return min(int(m.size_bytes) for m in self.members)

    @property
    def capacity_bytes(self) -> int:
        """The most the members hold [bytes]."""
        if self.kind == "raid1":
            return self.smallest_member_bytes
        chunks = self.smallest_member_bytes // self.chunk_size_bytes
        return chunks * self.chunk_size_bytes * self.data_members

    @property
    def size_bytes(self) -> int:
        return self.capacity_bytes if self.array_size_bytes is None else self.array_size_bytes

    @property
    def live_members(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.members)) if i not in self.failed_members)

    def describe(self) -> str:
        level = self.kind.replace("raid", "RAID ")
        text = (f"{level} ({self.tool}) {self.name or '(unnamed)'}: {self.size_bytes} bytes over "
                f"{len(self.members)} members")
        if self.kind != "raid1":
            text += f", {self.chunk_size_bytes}-byte chunks"
        else:
            text += f", reads {self.read_policy}"
        if self.failed_members:
            text += f", degraded (failed {', '.join(map(str, self.failed_members))})"
        return text

    # -- the block protocol --------------------------------------------------
    def block_time(self, requests: BlockRequests, env) -> BlockTime:
        if self.kind == "raid0":
            result = striped_block_time(self.members, self.chunk_size_bytes, requests, env)
        elif self.kind == "raid1":
            result = self._mirror(requests, env)
        else:
            result = self._parity(requests, env)
        side = "write" if requests.is_write else "read"
        cost = getattr(self, f"fs_{side}_request_s") + requests.size_bytes * getattr(self, f"fs_{side}_s_per_byte")
        return result.plus(btrfs_data_path_s=cost) if cost else result

    def _mirror(self, requests: BlockRequests, env) -> BlockTime:
        live = self.live_members
        times = [block_time_of(self.members[i], requests, env) for i in live]
        size = requests.size_bytes
        if requests.is_write:   # every copy at once; copies on one device share it
            return pieces_time(_MemberTimes(self.members, requests, env), size, {i: size for i in live})
        policy = self.read_policy
        deep = requests.queue_depth > 1
        if policy == "btrfs" and self.read_member is not None:
            return times[live.index(self.read_member)]
        if policy == "btrfs" or (policy == "md" and not requests.sequential and not deep):
            return mixture(size, times, [1.0 / len(times)] * len(times))
        if policy == "md" and requests.sequential:
            return times[0]
        fastest = min(times, key=lambda t: t.time_s)
        if not deep:
            return fastest
        # least busy at depth q: each member takes reads in proportion to its speed
        interval = 1.0 / sum(1.0 / t.interval_s for t in times)
        return BlockTime(size, max(fastest.time_s, interval * requests.queue_depth), interval, dict(fastest.parts),
                         1.0)

    def _parity(self, requests: BlockRequests, env) -> BlockTime:
        times = _MemberTimes(self.members, requests, env)
        failed = set(self.failed_members)
        layout = stripe_layout(requests.size_bytes, self.chunk_size_bytes, self.data_members,
                               parity=self.parity_members)
        outcomes = []
        for o in layout:
            if requests.is_write:
                reads, writes = self._write_plan(o, failed)
            else:
                reads, writes = self._read_plan(o, failed), {}
            phases = []
            if reads:
                phases.append(_renamed(pieces_time(times, requests.size_bytes, reads, is_write=False), "raid_read_"))
            if writes:
                phases.append(pieces_time(times, requests.size_bytes, writes, is_write=True))
            outcomes.append(serial(requests.size_bytes, *phases))
        result = mixture(requests.size_bytes, outcomes, [o["weight"] for o in layout])
        per_request = sum(o["weight"] * len(o["data"]) for o in layout)
        return _spread(result, requests, len(self.live_members), per_request)

    def _read_plan(self, outcome, failed) -> dict:
        """{member: bytes read} for a read: the data pieces, rebuilt from the row's survivors when failed."""
        reads: dict = {}
        n, d = len(self.members), self.data_members
        for _, _, _, per, _ in outcome["rows"]:
            for member, b in per.items():
                if member in failed:  # any d surviving chunks of the row rebuild it
                    for other in sorted(set(range(n)) - failed - {member})[:d]:
                        reads[other] = reads.get(other, 0) + b
                else:
                    reads[member] = reads.get(member, 0) + b
        return reads

    def _write_plan(self, outcome, failed) -> tuple[dict, dict]:
        """({member: bytes read}, {member: bytes written}) of a write, row by row (md's cheaper of RMW and RCW)."""
        reads: dict = {}
        writes: dict = {}
        d, n = self.data_members, len(self.members)

        def add(where, member, b):
            if member not in failed:
                where[member] = where.get(member, 0) + b

        for k, full, most, per, parity in outcome["rows"]:
            for member, b in per.items():
                add(writes, member, b)
            for member in parity:
                add(writes, member, most)
            if full:
                continue
            untouched = [m for m in range(n) if m not in per and m not in parity]
            degraded = bool(failed & (set(per) | set(parity) | set(untouched)))
            if not degraded and k + self.parity_members < d - k:  # read-modify-write
                for member, b in per.items():
                    add(reads, member, b)
                for member in parity:
                    add(reads, member, most)
            else:  # reconstruct-write: read what the request does not write
                for member in untouched:
                    add(reads, member, most)
        return reads, writes


def _renamed(t: BlockTime, prefix: str) -> BlockTime:
    """The parts of a parity read, prefixed, so that a breakdown tells them from the writes."""
    return BlockTime(t.size_bytes, t.time_s, t.interval_s, {prefix + k: v for k, v in t.parts.items()}, t.member_ios)


def mirror(members, **fields) -> RaidArray:
    """A RAID 1 over *members* (block nodes)."""
    return RaidArray("raid1", tuple(members), **fields)


__all__ = ["DEFAULT_CHUNK_BYTES", "RAID_KINDS", "READ_POLICIES", "RaidArray", "device_of", "mirror",
           "pieces_time", "stripe_layout", "stripe_split", "striped_block_time"]
