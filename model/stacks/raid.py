"""RAID arrays as block nodes: striping (RAID 0), mirrors (RAID 1) and parity (RAID 5, 6).

:class:`RaidArray` (kinds "raid0", "raid1", "raid5", "raid6") is a block
node (:mod:`diskmodel.model.stacks.block`) over member block nodes that may
differ (a partition on its own disk -- two presets, or two calibrations --,
a loop file, a network block device).  What an md array does to the
requests sent to it is the I/O path's (:mod:`diskmodel.model.iopath.md_raid`:
striping and mirror reads after drivers/md/raid0.c and raid1.c;
:mod:`diskmodel.model.iopath.md_parity`: RAID 5/6 read-modify-write and
reconstruct-write after md raid5 handle_stripe), and their time the
drives' (:mod:`diskmodel.model.iopath.timing`).

:func:`stripe_layout` and :func:`stripe_split` give the striping geometry
(Patterson, Gibson & Katz 1988, RAID level 0) shared with the LVM striped
volume (:class:`diskmodel.model.stacks.volumes.StripedVolume`): the array's bytes
are dealt in chunks of ``chunk_size_bytes`` round-robin over the members,
and a request of S bytes at an offset aligned to S touches ceil-many
chunks, one piece per member.  Parity arrays rotate their parity chunks
(md's left-symmetric layout).

``read_policy``, ``read_member`` and ``tool`` describe what provisioning
builds and how the I/O path maps requests (:mod:`diskmodel.model.iopath.path`):
md's personalities, LVM's (dm-stripe, dm-raid), or a btrfs file system's
own chunks (:mod:`diskmodel.model.iopath.btrfs_raid`; only as the volume of
a btrfs file system).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import evolve as _evolve
from .._checks import one_of, show, whole_number
from .block import chunk_size
from .nodes import is_node, node_type, text_field
from ..units import KIB

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
#: Where md puts the array's data on each member by default [bytes]: the offset diskmodel's provisioner
#: builds with (``mdadm --data-offset=1024K``; metadata 1.2 puts its superblock 4 KiB in, the rest is
#: room to reshape). mdadm's own default grows with the members (``mdadm --examine``: "Data Offset").
MD_DEFAULT_DATA_OFFSET_BYTES = 1024 * KIB
#: The least data offset of an md array [bytes]: the 1.2 superblock at 4 KiB takes up to 4 KiB.
MD_MIN_DATA_OFFSET_BYTES = 8 * KIB
#: mdadm rounds a RAID 1's default member size down to whole 64 KiB ("If this is ever reshaped to
#: RAID5, we will need a chunksize", Create.c) [bytes].
MD_RAID1_SIZE_UNIT_BYTES = 64 * KIB
#: btrfs's stripe on each device of a raid0 chunk (BTRFS_STRIPE_LEN, fs/btrfs/volumes.h) [bytes].
BTRFS_STRIPE_BYTES = 64 * KIB
#: Offsets enumerated per layout period at most; beyond, a uniform grid of this many.
MAX_OFFSETS = 4096


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
        LVM's 64 KiB); unused by RAID 1; btrfs's is 64 KiB, and another is refused.
    read_policy : str or None
        RAID 1's read policy: "least_busy", "md" or "btrfs"; default the
        tool's ("btrfs" for btrfs, else "md"). The timed path reads as md's
        read_balance does, and names another policy in its assumptions.
    read_member : int or None
        With read_policy "btrfs": the member one reading process's pid
        chose (pid % copies), when known; None: the expectation over pids.
    failed_members : tuple of int
        Indices of failed members (degraded mode): at most n - 1 (RAID 1),
        1 (RAID 5), 2 (RAID 6), none (RAID 0). The timed path refuses a
        degraded array, naming this field.
    array_size_bytes : int or None
        The size the array presents [bytes]; default all the members hold
        after md's data offset (mdadm's default: the smallest member's whole
        chunks times the data members; a mirror's whole 64 KiB). Larger than
        that is refused.
    data_offset_bytes : int or None
        Where md puts the array's data on each member [bytes]; none: 1 MiB
        for md (the offset diskmodel builds with), 0 for LVM and btrfs,
        whose metadata is elsewhere. For md, ``mdadm --data-offset``
        (``mdadm --examine`` prints it as "Data Offset"): a multiple of
        4 KiB, at least 8 KiB (the 1.2 superblock sits 4 KiB in); for LVM
        and btrfs another value than 0 is refused.
    tool : str
        "md" (mdadm), "lvm" (lvcreate --type raidN / striped) or "btrfs"
        (mkfs.btrfs -d raid0/raid1; RAID 0 and 1 only).
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
    data_offset_bytes: int | None = None
    tool: str = "md"
    name: str = ""

    def __post_init__(self):
        one_of("kind", self.kind, RAID_KINDS)
        members = self.members
        if isinstance(members, (str, bytes)) or not isinstance(members, (tuple, list)):
            raise ValueError(f"members must be a list of block nodes (got {show(members)})")
        members = tuple(members)
        for i, member in enumerate(members):
            if not is_node(member) or not hasattr(member, "size_bytes"):
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
        if self.tool == "btrfs" and self.chunk_size_bytes not in (DEFAULT_CHUNK_BYTES, BTRFS_STRIPE_BYTES):
            raise ValueError(f"chunk_size_bytes: btrfs stripes its chunks in {BTRFS_STRIPE_BYTES} bytes "
                             f"(BTRFS_STRIPE_LEN), whatever is asked (got {self.chunk_size_bytes})")
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
        if self.data_offset_bytes is not None:
            object.__setattr__(self, "data_offset_bytes", self.data_start_bytes)
        capacity = self.capacity_bytes
        if capacity < 1:
            unit = MD_RAID1_SIZE_UNIT_BYTES if self._md_mirror else self.chunk_size_bytes
            raise ValueError(f"members: the smallest member ({self.smallest_member_bytes} bytes) holds no whole "
                             f"{unit} bytes after the data offset of {self.data_start_bytes} bytes")
        if self.array_size_bytes is not None:
            size = whole_number("array_size_bytes", self.array_size_bytes, minimum=1)
            if size > capacity:
                raise ValueError(f"array_size_bytes ({size}) does not fit the members: a {self.kind} of "
                                 f"{len(members)} members of at least {self.smallest_member_bytes} bytes holds "
                                 f"at most {capacity}"
                                 + (f" after md's data offset of {self.data_start_bytes} bytes"
                                    if self.data_start_bytes else ""))
            object.__setattr__(self, "array_size_bytes", size)

    @property
    def data_start_bytes(self) -> int:
        """Where the array's data start on each member [bytes]: *data_offset_bytes*, or its default."""
        offset = self.data_offset_bytes
        if self.tool != "md":
            if offset not in (None, 0):
                raise ValueError(f"data_offset_bytes: an array built by {self.tool} has its metadata elsewhere; "
                                 f"leave it out or 0 (got {show(offset)})")
            return 0
        if offset is None:
            return MD_DEFAULT_DATA_OFFSET_BYTES
        offset = whole_number("data_offset_bytes", offset, minimum=MD_MIN_DATA_OFFSET_BYTES)
        if offset % (4 * KIB):
            raise ValueError(f"data_offset_bytes must be a multiple of 4096 (got {offset})")
        return offset

    @property
    def _md_mirror(self) -> bool:
        return self.kind == "raid1" and self.tool == "md"

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
        """The most the members hold after the data offset [bytes] (md's rounding: mdadm's Create.c)."""
        usable = self.smallest_member_bytes - self.data_start_bytes
        if self._md_mirror:
            return max(usable, 0) // MD_RAID1_SIZE_UNIT_BYTES * MD_RAID1_SIZE_UNIT_BYTES
        if self.kind == "raid1":
            return usable
        chunks = max(usable, 0) // self.chunk_size_bytes
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
        if self.data_start_bytes:
            text += f", data from {self.data_start_bytes} bytes into each member"
        if self.failed_members:
            text += f", degraded (failed {', '.join(map(str, self.failed_members))})"
        return text

def mirror(members, **fields) -> RaidArray:
    """A RAID 1 over *members* (block nodes)."""
    return RaidArray("raid1", tuple(members), **fields)


__all__ = ["DEFAULT_CHUNK_BYTES", "MD_DEFAULT_DATA_OFFSET_BYTES", "RAID_KINDS", "READ_POLICIES", "RaidArray", "mirror", "stripe_layout",
           "stripe_split"]
