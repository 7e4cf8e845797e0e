"""One declarative description of a storage stack, for the model, provisioning and reports.

A :class:`Stack` is a tree of frozen dataclasses, from the top down:

* a file system (:class:`FileSystemNode`, kinds "ext2", "ext3", "ext4",
  "xfs", "btrfs"): its model parameters
  (:class:`diskmodel.model.filesystems.filesystem.FileSystem`) and the ``mkfs`` and
  ``mount`` options it is built with, which set those parameters
  (:func:`diskmodel.model.filesystems.kinds.parameters_from_options`);
* the volume it is made on: a partition, or an LVM linear or striped
  logical volume over partitions as physical volumes
  (:mod:`diskmodel.model.stacks.volumes`: extent size, PE start, segments, stripe
  size), or any block node over those: a RAID array
  (:mod:`diskmodel.model.stacks.raid`), a thin volume (:mod:`diskmodel.model.stacks.thin`),
  a loop file nested N deep (:mod:`diskmodel.model.stacks.loop_file`);
* the disks the partitions name (``Partition.disk``): a preset, a DiskSim
  drive folder, a saved calibration or a :class:`~diskmodel.model.drive.disk.Disk`
  in memory (:mod:`diskmodel.model.drive.drives`).

The top may instead be an NFS mount (:class:`diskmodel.model.stacks.network.NfsMount`,
kind "nfs"): the client's view of the server's file system, its ``export``,
the tree below being the server's; it has no :attr:`Stack.volume` of its own.

Every node type is listed by its ``kind`` in :data:`NODE_TYPES`, whose
pydantic schema (:mod:`diskmodel.model.stacks.schema`) is how a stack reads from JSON
(and :mod:`diskmodel.model.stacks.nodes` how it writes to it)
(:meth:`Stack.to_json`, :meth:`Stack.from_json`); RAID, thin pools, loop
files or network block devices come as new node types without touching
these.  Bad input is a one-line ValueError naming the node (its path in the
tree, e.g. ``file_system.volume.physical_volumes[1] (partition)``) and the
field.

The same stack drives

* the model: :func:`diskmodel.model.predict.predict` places the volume on
  its disk (:meth:`Stack.volume_on_disk`) and evaluates the file system on it;
* provisioning: :func:`diskmodel.calibrate.bench.provision.build_plan` turns
  each partition into a loop device over the same byte range of a scratch
  file or device that stands for the disk, and builds the LVM volume and the
  file system on them;
* reports: :attr:`Stack.short_name` and :meth:`Stack.describe`.

The paper's native, LVM-1 and LVM-2 stacks (Tables 1-3) are :func:`paper_stack`.
Files named by drives (DiskSim folders, calibrations) are read by
:mod:`diskmodel.calibrate.stacks`; the model itself reads no file.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass

from .._checks import evolve as _evolve
from .._checks import FieldError, one_of, show, whole_number
from ..drive.disk import Disk
from ..drive.drives import PresetDrive, as_drive
from ..filesystems.filesystem import FileSystem
from ..filesystems.kinds import KINDS, parameters_from_options
from .nodes import is_node, kind_of, node_type, text_field, to_json_data, walk
from .volume_on_disk import VolumeOnDisk
from .block import BlockEnv
from ..drive.drives import FileDrive, InMemoryDrive
from .loop_file import LoopFile
from .network import NbdDevice, NfsMount
from .raid import RaidArray
from .schema import NodeSchema
from .thin import ThinVolume
from ..units import GB, MIB
from .volumes import DEFAULT_EXTENT_SIZE_BYTES, DEFAULT_PE_START_BYTES, LinearVolume, Partition, StripedVolume
from .lvm_mapping import LvmMapping

FORMAT = "diskmodel.stack"
FORMAT_VERSION = 1

#: The file systems a stack can have; the model covers them all (:mod:`diskmodel.model.filesystems.kinds`).
FILE_SYSTEM_KINDS = KINDS

PAPER_STACKS = ("native", "lvm1", "lvm2")
#: The paper's test area: the last 20 GB of the disk (Table 1), halved for LVM-2 (Table 3) [bytes].
PAPER_TEST_AREA_BYTES = 20 * GB
#: Room in every physical volume of the equal-file-system sizing beyond pe_start and its
#: extents, less than one extent so it never adds one [bytes].
PV_SLACK_BYTES = 2 * MIB
#: Partitions of the equal-file-system sizing start on MiB boundaries.
PARTITION_ALIGN_BYTES = 1 * MIB
#: The first partition of the equal-file-system sizing starts this far into the disk [bytes],
#: like a first partition after a partition table: an LVM label at the start of the first PV must
#: not also appear at the start of the disk (the scratch device standing for it) itself.
FIRST_PARTITION_START_BYTES = 1 * MIB


# ------------------------------------------------------------------ the file system

def _options(name: str, options, *, single: bool) -> tuple[str, ...]:
    if isinstance(options, str) or not isinstance(options, (tuple, list)):
        raise FieldError(name, f"must be a list of strings (got {show(options)})")
    for option in options:
        # the characters of each option are checked by its kind's syntax (parameters_from_options,
        # diskmodel.model.filesystems.options), which names the option and what it takes
        if not isinstance(option, str) or not option:
            raise FieldError(name, f"must be non-empty strings (got {show(option)})")
        if single and ("," in option or any(c.isspace() for c in option)):
            raise FieldError(name, f"must be single options without commas or spaces (got {option!r})")
    return tuple(options)


@node_type(*FILE_SYSTEM_KINDS)
@dataclass(frozen=True)
class FileSystemNode:
    """The file system at the top of a stack and the volume it is made on.

    Attributes
    ----------
    volume : volume node
        What the file system is made on: a partition, an LVM volume, or any
        block node over them (RAID, thin, loop file, NBD).
    kind : str
        "ext2", "ext3", "ext4", "xfs" or "btrfs"; default the kind of
        *parameters*, else "ext3".
    parameters : FileSystem
        The model's parameters (block size, journal mode, commit interval,
        ...); default the kind's, as the options set them.
    mkfs_options, mount_options : tuple of str
        What ``mkfs.<kind>`` and ``mount -o`` are given (mount options one
        each, without commas).  The model's parameters describe what these
        build: when *parameters* are not given, the options set them
        (:func:`diskmodel.model.filesystems.kinds.parameters_from_options`); when
        they are, an option that contradicts them is refused.  An option
        the kind does not have (``data=journal`` for xfs), or a value outside
        its syntax (``errors=`` other than continue, remount-ro or panic;
        :mod:`diskmodel.model.filesystems.options`), is refused naming it and what
        would work.
    """

    volume: object
    kind: str | None = None
    parameters: FileSystem | None = None
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()

    def __post_init__(self):
        if not is_node(self.volume) or not hasattr(self.volume, "size_bytes"):
            got = f"kind {kind_of(self.volume)}" if is_node(self.volume) else show(self.volume)
            raise ValueError(f"volume must be a volume node, e.g. a partition or lvm_linear (got {got}: a file system "
                             "sits on a block device; a file system inside another is a loop_file's image)")
        kind = self.kind
        if kind is None:
            kind = self.parameters.kind if isinstance(self.parameters, FileSystem) else "ext3"
        object.__setattr__(self, "kind", one_of("kind", kind, FILE_SYSTEM_KINDS))
        object.__setattr__(self, "mkfs_options", _options("mkfs_options", self.mkfs_options, single=False))
        object.__setattr__(self, "mount_options", _options("mount_options", self.mount_options, single=True))
        derived = parameters_from_options(kind, self.mkfs_options, self.mount_options)
        from_mkfs = parameters_from_options(kind, self.mkfs_options, ())
        if self.parameters is None:
            try:
                object.__setattr__(self, "parameters", FileSystem(kind=kind, **derived))
            except ValueError as exc:  # a value the kind cannot take: name the options that set it
                field = getattr(exc, "field", None) or str(exc).split()[0].rstrip(":")
                where = "mkfs_options" if field in from_mkfs else "mount_options"
                raise FieldError(where, str(exc), ": ") from None
        if not isinstance(self.parameters, FileSystem):
            raise ValueError(f"parameters must be a FileSystem (got {show(self.parameters)})")
        if self.parameters.kind != kind:
            raise ValueError(f"parameters.kind {self.parameters.kind!r} differs from kind {kind!r}")
        for name, value in derived.items():
            if getattr(self.parameters, name) != value:
                where = "mkfs_options" if name in from_mkfs else "mount_options"
                raise FieldError(where, f"set {name} to {value!r}, which contradicts "
                                        f"parameters.{name} {getattr(self.parameters, name)!r}")

    def evolve(self, **changes) -> "FileSystemNode":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    def describe(self) -> str:
        text = f"{self.kind} file system"
        p = self.parameters
        text += f" ({p.journal_mode + ', ' if p.journaled else ''}{p.block_size_bytes}-byte blocks)"
        if self.mkfs_options:
            text += f", mkfs {' '.join(self.mkfs_options)}"
        if self.mount_options:
            text += f", mounted -o {','.join(self.mount_options)}"
        return text

    def json_fields(self) -> dict:
        parameters = {f.name: getattr(self.parameters, f.name) for f in dataclasses.fields(FileSystem)
                      if f.name != "kind"}  # the node's kind says it
        return {"volume": self.volume, "parameters": parameters, "mkfs_options": self.mkfs_options,
                "mount_options": self.mount_options}


#: Every node type a stack file may hold, the one list the stack's JSON schema reads
#: (:class:`diskmodel.model.stacks.schema.NodeSchema`): a new layer is added here.
NODE_TYPES = (PresetDrive, FileDrive, InMemoryDrive, FileSystemNode, NfsMount, Partition, LinearVolume,
              StripedVolume, RaidArray, ThinVolume, LoopFile, NbdDevice)
#: The schema of the nodes of a stack file.
NODE_SCHEMA = NodeSchema(NODE_TYPES)


# ------------------------------------------------------------------ the stack

@dataclass(frozen=True)
class Stack:
    """A file system, the volume it is made on, and the disks below.

    Attributes
    ----------
    file_system : FileSystemNode or NfsMount
        The file system the workload runs on: a local one, or an NFS mount
        whose ``export`` is the server's file system (on the server's volume
        and disks, which the rest of the tree describes); an NFS mount has
        no :attr:`volume` of its own.
    disks : tuple of drive nodes
        Every disk a partition of the tree names (by ``Partition.disk``),
        with distinct names; default the ``wd800bd`` preset as "sda".
    name : str
        A short name for reports (e.g. "lvm2"); default made from the tree.
    """

    file_system: FileSystemNode | NfsMount
    disks: tuple = (PresetDrive("wd800bd"),)
    name: str = ""

    def __post_init__(self):
        if not isinstance(self.file_system, (FileSystemNode, NfsMount)):
            raise ValueError(f"file_system must be a FileSystemNode or an NfsMount (got {show(self.file_system)})")
        if isinstance(self.disks, (str, bytes)) or not isinstance(self.disks, (tuple, list)) or not self.disks:
            raise ValueError(f"disks must be a non-empty list of drives (got {show(self.disks)})")
        object.__setattr__(self, "disks", tuple(self.disks))
        text_field("name", self.name)
        seen = {}
        for i, drive in enumerate(self.disks):
            if not is_node(drive) or not hasattr(drive, "model_disk"):
                raise ValueError(f"disks[{i}]: must be a drive node, e.g. PresetDrive (got {show(drive)})")
            if drive.name in seen:
                raise ValueError(f"disks[{i}] ({kind_of(drive)}): name {drive.name!r} is taken by disks[{seen[drive.name]}]")
            seen[drive.name] = i
        placed: dict[str, list[tuple[str, int, int]]] = {}
        for path, partition in self.partitions():
            if partition.disk not in seen:
                raise ValueError(f"{path} (partition): disk {partition.disk!r} is not one of the stack's disks "
                                 f"({', '.join(seen)})")
            start, end = int(partition.start_bytes), int(partition.start_bytes) + int(partition.size_bytes)
            # a disk's partitions are disjoint (a partition table's, and mdadm refuses a device given twice)
            for other, a, b in placed.get(partition.disk, ()):
                if start < b and a < end:
                    raise ValueError(f"{path} (partition): bytes {start}..{end} of disk {partition.disk!r} overlap "
                                     f"{other}'s ({a}..{b}); each partition must have bytes of its own")
            placed.setdefault(partition.disk, []).append((path, start, end))

    def check_disk_capacity(self) -> None:
        """Refuse a partition that ends past its disk, where the disk's model is what is predicted on (a preset,
        a Disk in memory; a drive file is checked once read). A stack only built for a measurement is not
        checked here: its disks are the scratch files or devices it is built on, whatever model names them."""
        for path, partition in self.partitions():
            end = int(partition.start_bytes) + int(partition.size_bytes)
            capacity = _capacity_bytes(self.drive(partition.disk))
            if capacity is not None and end > capacity:
                raise ValueError(f"{path} (partition): bytes {int(partition.start_bytes)}..{end} end past the "
                                 f"{capacity} bytes of disk {partition.disk!r}; give a partition that ends at or "
                                 "before the disk's end")

    def evolve(self, **changes) -> "Stack":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)

    # -- the tree ------------------------------------------------------------
    @property
    def is_nfs(self) -> bool:
        """Is the top an NFS mount (the tree below it the server's)?"""
        return isinstance(self.file_system, NfsMount)

    def _local_file_system(self) -> FileSystemNode:
        if self.is_nfs:
            raise ValueError("file_system (nfs): an NFS mount has no volume of its own (the server's file system "
                             "and volume are file_system.export)")
        return self.file_system

    @property
    def volume(self):
        """The volume the file system is made on (ValueError for an NFS mount)."""
        return self._local_file_system().volume

    def nodes(self):
        """(path, node, depth) of every node of the file system's tree, parents first."""
        return walk(self.file_system, "file_system")

    def partitions(self) -> tuple[tuple[str, Partition], ...]:
        """(path, partition) of every partition in the tree, in tree order."""
        return tuple((path, node) for path, node, _ in self.nodes() if isinstance(node, Partition))

    def drive(self, name: str):
        for drive in self.disks:
            if drive.name == name:
                return drive
        raise ValueError(f"disk {name!r} is not one of the stack's disks ({', '.join(d.name for d in self.disks)})")

    @property
    def short_name(self) -> str:
        """The name, or one made from the kinds of the file system and its volume (e.g. "ext3 on lvm_linear")."""
        if self.is_nfs:
            export = self.file_system.export
            return self.name or f"nfs to {export.kind} on {kind_of(export.volume)}"
        return self.name or f"{self.file_system.kind} on {kind_of(self.volume)}"

    def describe(self) -> str:
        """The tree, one node a line, indented by depth, then the disks."""
        lines = [f"stack {self.short_name}:"]
        lines += [f"{'  ' * (depth + 1)}{node.describe()}" for _, node, depth in self.nodes()]
        lines += [f"  {drive.describe()}" for drive in self.disks]
        return "\n".join(lines)

    # -- the model -----------------------------------------------------------
    def model_disk(self) -> Disk:
        """The one Disk the volume lies on (ValueError when it spans several, or the disk is a file to read)."""
        names = list(dict.fromkeys(p.disk for _, p in self.partitions()))
        if len(names) != 1:
            raise ValueError(f"file_system.volume spans {len(names)} disks ({', '.join(names)}): the model predicts "
                             "one disk; use diskmodel.model.predictions.scenarios for striping over independent disks")
        return self.drive(names[0]).model_disk()

    def volume_on_disk(self, mapping: LvmMapping | None = None) -> VolumeOnDisk:
        """The volume placed on its disk, with the LVM mapping costs *mapping* (default none)."""
        return VolumeOnDisk(self.model_disk(), self.volume, LvmMapping() if mapping is None else mapping)

    def block_env(self) -> BlockEnv:
        """The Disk of every disk the tree's partitions name, for the block protocol (:mod:`diskmodel.model.stacks.block`)."""
        names = dict.fromkeys(p.disk for _, p in self.partitions())
        return BlockEnv({name: self.drive(name).model_disk() for name in names},
                        {name: self.drive(name).max_sectors_kb for name in names},
                        {name: (self.drive(name).scheduler, self.drive(name).queue_depth) for name in names})

    def file_system_parameters(self) -> FileSystem:
        """The model's parameters of the file system (ValueError for an NFS mount)."""
        return self._local_file_system().parameters

    # -- JSON ----------------------------------------------------------------
    def to_json_data(self) -> dict:
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "name": self.name,
                "disks": [to_json_data(d, f"disks[{i}]") for i, d in enumerate(self.disks)],
                "file_system": to_json_data(self.file_system, "file_system")}

    def to_json(self) -> str:
        return json.dumps(self.to_json_data(), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_json_data(cls, data) -> "Stack":
        """The stack of :meth:`to_json_data`'s form (ValueError naming the node and the field)."""
        if not isinstance(data, dict):
            raise ValueError(f"a stack must be one JSON object (got {show(data)})")
        if data.get("format", FORMAT) != FORMAT:
            raise ValueError(f"format must be {FORMAT!r} (got {show(data.get('format'))})")
        if data.get("format_version", FORMAT_VERSION) != FORMAT_VERSION:
            raise ValueError(f"format_version {show(data.get('format_version'))} is not one this version "
                             f"reads ({FORMAT_VERSION})")
        unknown = sorted(set(data) - {"format", "format_version", "name", "disks", "file_system"})
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} (keys: format, format_version, name, disks, file_system)")
        if "file_system" not in data:
            raise ValueError("key 'file_system' is missing")
        disks = data.get("disks", [{"kind": "preset", "preset": "wd800bd"}])
        if not isinstance(disks, list):
            raise ValueError(f"disks must be a list of drives (got {show(disks)})")
        drives = tuple(NODE_SCHEMA.read(d, f"disks[{i}]") for i, d in enumerate(disks))
        file_system = NODE_SCHEMA.read(data["file_system"], "file_system")
        if not isinstance(file_system, (FileSystemNode, NfsMount)):
            raise ValueError(f"file_system: must be a file system (kind {', '.join(FILE_SYSTEM_KINDS)}) or an NFS "
                             f"mount (kind nfs), not {kind_of(file_system)}")
        return cls(file_system, drives, data.get("name", ""))

    @classmethod
    def from_json(cls, text: str) -> "Stack":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
        return cls.from_json_data(data)


def _capacity_bytes(drive) -> int | None:
    """A drive's capacity where it is known without reading a file (a preset, a Disk in memory); None for a
    drive file, which is checked once read (calibrate.stacks.resolve_drives makes it a Disk in memory)."""
    if isinstance(drive, PresetDrive):
        return _preset_capacity_bytes(drive.preset)
    if isinstance(drive, InMemoryDrive):
        return int(drive.disk.capacity_bytes)
    return None


@functools.lru_cache(maxsize=None)
def _preset_capacity_bytes(name: str) -> int:
    from ..drive.presets import load_preset

    return int(load_preset(name).capacity_bytes)


def stack_on(disk, volume, filesystem: FileSystem | None = None, *, name: str = "") -> Stack:
    """A stack of a file system (*filesystem*, default ``FileSystem()``, ext3) on *volume* on *disk*.

    *disk* is a Disk, a preset name or a drive node; a Disk (or preset) stands
    for every disk the volume's partitions name (identical drives).
    """
    file_system = FileSystemNode(volume, parameters=FileSystem() if filesystem is None else filesystem)
    names = list(dict.fromkeys(p.disk for path, p, _ in walk(file_system) if isinstance(p, Partition)))
    drives = tuple(as_drive(disk, n) for n in names) if isinstance(disk, (Disk, str)) else (as_drive(disk),)
    return Stack(file_system, drives, name)


# ------------------------------------------------------------------ the paper's stacks

def _align_up(value: int, align: int) -> int:
    return -(-value // align) * align


def _paper_partitions(name, capacity_bytes, fs_size_bytes, gap, extent, pe_start):
    """(start, size) of /dev/sda3 (and /dev/sda4 for lvm2) in either sizing [bytes]."""
    pvs = 2 if name == "lvm2" else 1
    if fs_size_bytes is None:  # the paper's: equal partitions in the last 20 GB
        if capacity_bytes < PAPER_TEST_AREA_BYTES + gap:
            raise ValueError(f"capacity_bytes ({capacity_bytes}) must hold the 20 GB test area plus pv_gap_bytes")
        start = capacity_bytes - PAPER_TEST_AREA_BYTES
        if pvs == 1:
            return [(start, PAPER_TEST_AREA_BYTES)]
        half = PAPER_TEST_AREA_BYTES // 2
        return [(start - gap, half), (start + half, half)]
    # the bench's: equal file systems, partitions from the first MiB
    unit = 2 * extent
    fs_size = whole_number("fs_size_bytes", fs_size_bytes, minimum=1)
    if fs_size % unit:
        lower = max(unit, fs_size // unit * unit)
        raise FieldError("fs_size_bytes", f"must be a positive multiple of {unit} (two LVM extents, so that "
                                          f"LVM-2's halves hold whole extents); got {fs_size}, try {lower}")
    size = fs_size if name == "native" else pe_start + fs_size // pvs + PV_SLACK_BYTES
    first = FIRST_PARTITION_START_BYTES
    out = [(first, size)]
    if pvs == 2:
        out.append((_align_up(first + size, PARTITION_ALIGN_BYTES) + gap, size))
    return out


def paper_stack(name: str, capacity_bytes: int | None = None, *, fs_size_bytes: int | None = None, disk=None,
                filesystem: FileSystem | None = None, kind: str | None = None, mkfs_options=(), mount_options=(),
                pv_gap_bytes: int = 0, extent_size_bytes: int = DEFAULT_EXTENT_SIZE_BYTES,
                pe_start_bytes: int = DEFAULT_PE_START_BYTES) -> Stack:
    """The paper's test stacks (Djordjevic & Timcenko 2015, Tables 1-3), named *name*.

    ``"native"`` (Table 1): the file system on ``/dev/sda3``; ``"lvm1"``
    (Table 2): ``/dev/sda3`` the one PV of a linear LV (``LogVol02``) using
    all its extents; ``"lvm2"`` (Table 3): ``/dev/sda3`` and ``/dev/sda4``,
    half the size each, concatenated.  The paper does not say where
    ``/dev/sda4`` lies; it follows ``/dev/sda3``, *pv_gap_bytes* of free
    disk between them (a what-if: PVs far apart lengthen seeks between the
    two halves).

    Two sizings of the same three stacks:

    * the paper's (*fs_size_bytes* None): equal partitions in the last 20 GB
      (10^9 bytes, as disk makers count) of a disk of *capacity_bytes*
      (default the disk's capacity) -- "the last part of disk (20GB)",
      section 4.1, after the 58 GB root and 1 GB swap; with a gap,
      ``/dev/sda3`` moves towards the start.  The LV holds the partitions'
      whole extents, so the file system is a little smaller on LVM;
    * the bench's (*fs_size_bytes* given, a multiple of two extents): a file
      system of exactly that size in all three, so the differences measured
      between them are LVM's: partitions from the first MiB of the disk, a
      PV holding ``pe_start_bytes`` + its share + ``PV_SLACK_BYTES`` (less
      than an extent), ``/dev/sda4`` on the next MiB boundary after the gap.

    *disk*: a Disk, a preset name or a drive node (default the ``wd800bd``
    preset, the paper's drive); *filesystem*: the model's parameters
    (default: ext3, or *kind*, as the options set it); *kind*,
    *mkfs_options*, *mount_options*: as :class:`FileSystemNode`.
    """
    one_of("name", name, PAPER_STACKS)
    drive = as_drive("wd800bd" if disk is None else disk)
    gap = whole_number("pv_gap_bytes", pv_gap_bytes, minimum=0)
    extent = whole_number("extent_size_bytes", extent_size_bytes, minimum=1)
    pe_start = whole_number("pe_start_bytes", pe_start_bytes, minimum=0)
    if fs_size_bytes is not None and capacity_bytes is not None:
        raise ValueError("give capacity_bytes (the paper's sizing) or fs_size_bytes (equal file systems), not both")
    if fs_size_bytes is None:
        capacity_bytes = whole_number("capacity_bytes", drive.model_disk().capacity_bytes
                                      if capacity_bytes is None else capacity_bytes, minimum=1)
    pieces = _paper_partitions(name, capacity_bytes, fs_size_bytes, gap, extent, pe_start)
    partitions = tuple(Partition(start, size, f"/dev/sda{3 + i}", disk=drive.name)
                       for i, (start, size) in enumerate(pieces))
    volume = partitions[0] if name == "native" else LinearVolume(
        partitions, extent_size_bytes=extent, pe_start_bytes=pe_start, name="LogVol02")
    file_system = FileSystemNode(volume, kind=kind, parameters=filesystem, mkfs_options=tuple(mkfs_options),
                                 mount_options=tuple(mount_options))
    return Stack(file_system, (drive,), name)


__all__ = ["FILE_SYSTEM_KINDS", "PAPER_STACKS", "FileSystemNode", "Stack", "paper_stack", "stack_on"]
