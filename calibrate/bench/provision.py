"""Storage stacks built on a scratch file or device, as plans of undoable argument vectors.

A :class:`diskmodel.model.stacks.stack.Stack` (the paper's native, LVM-1 and
LVM-2 stacks are :func:`diskmodel.model.stacks.stack.paper_stack`) becomes a
:class:`StackPlan`, a sequence of :class:`Step` objects. A step is an
*argument vector* (a tuple of words), never shell text: a word is a ``str``,
a :class:`Ref` to a value an earlier step captured (a loop device's path, a
mount point) or a :class:`Concat` of both (``Ref("M")`` + ``"/image.img"``).
A step that checks (a device's size, a PV's extents) is an argv whose
stripped standard output must equal ``expect``; what a step creates is a
typed record (``resource``: a loop device, a mount, a folder, a PV/VG/LV, an
md array, a dm device, the btrfs devices the kernel scanned), and the undo of
the step is derived from it (:func:`undo_argv`): detach this loop device,
unmount this path, remove this LV, ... never a command string.

The scratch file or block device stands for the stack's disk: every
partition becomes a loop device over the same byte range of it (``losetup
--offset --sizelimit``, with ``--direct-io=on`` so the backing file's page
cache does not cache the data a second time, outside any memory limit); on
them the LVM volume (``pvcreate``, ``vgcreate``, ``lvcreate`` with the exact
extent count, checked) and the file system (``mkfs``, a fresh mount point,
``mount -o ...,nosuid,nodev``) are built. Each node type of the stack has its
builder here (:func:`builds`); a new node type (RAID, a thin pool, a loop
file) adds its own without touching the others.

The same plan drives

- the host, through :class:`diskmodel.calibrate.bench.host_executor.HostExecutor`
  (``subprocess`` with the argv, references replaced by the captured values
  as whole words, every step logged, what it creates recorded before it
  runs and removed in reverse on failure, exit and signals), and
- a throwaway VM, through :meth:`StackPlan.render_script`: its guest has no
  Python (busybox and dash in an initramfs), so the argv is rendered into a
  ``sh`` script word by word by ONE function, :func:`sh_word`
  (``shlex.quote`` of a string, ``"$NAME"`` of a reference), so that a value
  arrives as exactly one word and is never interpreted; a ``trap`` runs the
  undos of the steps that completed. Guest bodies (PostMark, fio, the
  network layers) take values only through :func:`sh_word` too.

No value from a user, a file or the environment ever reaches a shell as text.
"""
from __future__ import annotations

import logging
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from diskmodel.model.stacks.nodes import kind_of
from diskmodel.model.stacks.stack import FIRST_PARTITION_START_BYTES, FileSystemNode, Stack
from diskmodel.model.stacks.volumes import LinearVolume, Partition, StripedVolume
from diskmodel.model.units import MIB
from diskmodel.model.drive.drives import DEFAULT_MAX_SECTORS_KB
from diskmodel.model.iopath.read_ahead import device_read_ahead_kb
from diskmodel.calibrate.bench.steps import (GUEST_FUNCTIONS, Concat, Ref, Step, Word, render_step, render_undo,
                                             sh_word)
from diskmodel.calibrate.bench.builders import (LVM_SIZE_UNIT_BYTES, SCRATCH_MOUNT_OPTIONS, Region, _build,
                                                _Plan, add_pvs_and_vg, builds, mount_steps, queue_step)
# The builders of the block layers (RAID, thin pools, loop files) register themselves with `builds` there.
from diskmodel.calibrate.bench.layers_provision import needs_vm_kernel

__all__ = [
    "Step",
    "Ref",
    "Concat",
    "sh_word",
    "Region",
    "StackPlan",
    "LayoutUnavailable",
    "builds",
    "build_plan",
    "backing_bytes_required",
    "disk_spans_bytes",
    "scratch_needs",
    "disk_bases",
    "mount_steps",
    "device_mapper_available",
    "require_device_mapper",
    "require_kernel",
    "md_available",
]

log = logging.getLogger(__name__)

#: Loop devices over the scratch use direct I/O: their byte ranges must be whole sectors [bytes].
SECTOR_BYTES = 512
#: An LVM name: letters, digits and + _ . - (not starting with -).
_LVM_NAME_RE = re.compile(r"^[A-Za-z0-9+_.][A-Za-z0-9+_.-]*$")

#: Smallest xfs mkfs.xfs (xfsprogs >= 5.19) accepts, rounded up to 8 MiB [bytes].
XFS_MIN_BYTES = 304 * MIB

_MKFS_ARGS: dict[str, tuple[str, ...]] = {
    "ext2": ("mkfs.ext2", "-F", "-q"),
    "ext3": ("mkfs.ext3", "-F", "-q"),
    "ext4": ("mkfs.ext4", "-F", "-q"),
    "xfs": ("mkfs.xfs", "-f", "-q"),
    "btrfs": ("mkfs.btrfs", "-f", "-q"),
    "jfs": ("mkfs.jfs", "-q"),
    "reiserfs": ("mkreiserfs", "-q", "-f", "-f"),  # -f twice: no question about a whole disk
}
#: The VM's modules a kind needs loaded before its mount (the initramfs's on-demand set).
_FS_MODULES = {"jfs": "/etc/diskmodel/modules.filesystems", "reiserfs": "/etc/diskmodel/modules.filesystems"}

class LayoutUnavailable(RuntimeError):
    """The stack cannot be built on this kernel (e.g. no device-mapper)."""


def _align_up(value: int, align: int) -> int:
    return -(-value // align) * align


def disk_bases(stack: Stack) -> dict[str, int]:
    """Where each disk the stack's partitions name starts in the scratch [bytes].

    One scratch stands for every disk: the disks follow each other in the
    order of ``stack.disks``, each from a MiB boundary and as long as its
    last partition's end, so a one-disk stack starts at 0 as before.
    """
    ends: dict[str, int] = {}
    for _, p in stack.partitions():
        ends[p.disk] = max(ends.get(p.disk, 0), p.end_bytes)
    bases, at = {}, 0
    for drive in stack.disks:
        if drive.name in ends:
            bases[drive.name] = at
            at = _align_up(at + ends[drive.name], MIB)
    return bases


def disk_spans_bytes(stack: Stack) -> dict[str, int]:
    """Each disk's bytes up to its last partition's end, in whole MiB: what a device of its own must hold
    (``build_plan``'s *disk_backings*), in the order of the stack's disks."""
    ends: dict[str, int] = {}
    for _, p in stack.partitions():
        ends[p.disk] = max(ends.get(p.disk, 0), p.end_bytes)
    return {d.name: _align_up(ends[d.name], MIB) for d in stack.disks if d.name in ends}


def scratch_needs(stack: Stack, scratch, destroy_data_on=None, disk_backings: dict | None = None) -> list[tuple]:
    """``(path, size_bytes, destroy_data_on)`` of each scratch *stack* is built on: one *scratch* for all its
    disks, or with *disk_backings* each disk's own device (the tool's: named again as its destroy_data_on)."""
    if disk_backings:
        spans = disk_spans_bytes(stack)
        return [(path, spans[disk], path) for disk, path in disk_backings.items()]
    return [(scratch, backing_bytes_required(stack), destroy_data_on)]


def backing_bytes_required(stack: Stack) -> int:
    """Bytes of scratch space *stack* needs: every disk's span up to its last partition's end, in MiB."""
    bases = disk_bases(stack)
    return max(_align_up(bases[p.disk] + p.end_bytes, MIB) for _, p in stack.partitions())


@dataclass(frozen=True)
class StackPlan:
    """The steps that build one stack, and what they leave mounted where.

    name: the stack's short name ("native", "lvm1", "lvm2", ...). fs_type:
    file system. fs_size_bytes: size of the file system's block device
    [bytes]. backing: path of the scratch file or block device. regions: byte
    ranges of it used, one per partition. device: the file system's block
    device, a word (a path, or a :class:`Ref` to a captured one). mount_var:
    variable holding the mount point. vg_name/lv_name: LVM names (None
    without LVM).
    """

    name: str
    fs_type: str
    fs_size_bytes: int
    backing: str
    regions: tuple[Region, ...]
    steps: tuple[Step, ...]
    device: Word
    mount_var: str
    vg_name: str | None = None
    lv_name: str | None = None
    mount_options: tuple[str, ...] = field(default_factory=tuple)
    #: each loop device's request limit and read-ahead are set after its losetup (a fresh disk's); the host's
    #: executor runs no plan with a loop device without them (a host loop number keeps its earlier settings)
    queue_defaults: bool = False

    @property
    def device_expr(self) -> str:
        """The file system's block device as one ``sh`` word (:func:`sh_word`), for guest bodies."""
        return sh_word(self.device)

    def describe(self) -> str:
        lines = [f"# stack {self.name}: {self.fs_type} of {self.fs_size_bytes} bytes on {self.backing}"]
        for i, step in enumerate(self.steps, 1):
            undo = render_undo(step)
            lines.append(f"{i:2d}. {step.description}\n      do:   {render_step(step)}\n      undo: {undo or '-'}")
        return "\n".join(lines)

    def render_script(self, body: str = "", *, preamble: str = "") -> str:
        """One POSIX/busybox ``sh`` script: build the stack, run *body*, tear down.

        Each step is one line, a fixed function of :data:`~diskmodel.calibrate.bench.steps.GUEST_FUNCTIONS`
        and the step's words, each rendered by :func:`sh_word`. The script keeps
        a list of the undos of the steps that completed (typed, rendered the same
        way) and runs it in reverse from an EXIT trap (INT, TERM and HUP exit
        through it too), so a failure, the end of the body or a signal all tear
        down. The script exits with the status of the first failing step or of *body*.
        """
        out = [
            "#!/bin/sh",
            f"# diskmodel stack {self.name} ({self.fs_type}, {self.fs_size_bytes} bytes): generated",
            "DISKMODEL_UNDO=''",
            "diskmodel_teardown() {",
            "  status=$?",
            "  trap - EXIT INT TERM HUP",
            "  set +e",
            '  echo "diskmodel: teardown" >&2',
            '  eval "$DISKMODEL_UNDO"',
            "  DISKMODEL_UNDO=''",
            '  exit "$status"',
            "}",
            "trap diskmodel_teardown EXIT",
            "trap 'exit 130' INT",
            "trap 'exit 143' TERM",
            "trap 'exit 129' HUP",
            GUEST_FUNCTIONS.rstrip("\n"),
        ]
        if preamble:
            out.append(preamble.rstrip("\n"))
        for i, step in enumerate(self.steps, 1):
            out.append(f"# step {i}")
            out.append(f"echo {sh_word(f'diskmodel: step {i}: {step.description}')} >&2")
            out.append(render_step(step))
            if step.capture and step.value is not None:
                out.append(f"{step.capture}={sh_word(step.value)}")
            undo = render_undo(step)
            if undo:
                # Prepend, so the list runs in reverse order of completion. The undo's words are quoted
                # (sh_word) and the whole line quoted again: eval sees exactly these words.
                undo_line = (f"echo {sh_word(f'diskmodel: undo {i}: {step.description}')} >&2; {undo} "
                             f"|| echo {sh_word(f'diskmodel: undo {i} failed')} >&2\n")
                out.append(f"DISKMODEL_UNDO={sh_word(undo_line)}\"$DISKMODEL_UNDO\"")
        out.append("# body")
        out.append(body.rstrip("\n") if body else ":")
        out.append("exit $?")
        return "\n".join(out) + "\n"


@builds(Partition)
def _loop_device(partition: Partition, plan: _Plan, path: str) -> str:
    """A loop device over the partition's bytes of the scratch."""
    where = f"{path} (partition)"
    if partition.start_bytes < FIRST_PARTITION_START_BYTES:
        raise ValueError(f"{where}: start_bytes must be >= {FIRST_PARTITION_START_BYTES}: the first MiB of the "
                         f"scratch stays unused, as before a first partition (got {partition.start_bytes})")
    for name in ("start_bytes", "size_bytes"):
        if getattr(partition, name) % SECTOR_BYTES:
            raise ValueError(f"{where}: {name} must be a multiple of {SECTOR_BYTES} for a direct-I/O loop device "
                             f"(got {getattr(partition, name)})")
    i = len(plan.regions)
    var = f"DISKMODEL_DEV{i}"
    # A disk with a device of its own (disk_backings: emulated drives, one per disk) starts at 0 of it.
    backing = plan.disk_backings.get(partition.disk, plan.backing)
    base = 0 if partition.disk in plan.disk_backings else plan.disk_base_bytes[partition.disk]
    region = Region(base + partition.start_bytes, partition.size_bytes, partition.disk, var)
    plan.regions.append(region)
    dio = ("--direct-io=on",) if plan.direct_io else ()
    plan.steps.append(Step(
        f"loop device over bytes {region.offset_bytes}..{region.offset_bytes + region.size_bytes} of "
        + (backing if partition.disk in plan.disk_backings else "the scratch"),
        ("losetup", "--find", "--show", *dio, "--offset", str(region.offset_bytes),
         "--sizelimit", str(region.size_bytes), backing),
        capture=var,
        resource=("loop", (("backing", backing), ("offset_bytes", region.offset_bytes),
                           ("size_bytes", region.size_bytes), ("device", Ref(var)))),
    ))
    limit = plan.disk_limits.get(partition.disk, DEFAULT_MAX_SECTORS_KB)
    if plan.queue_defaults:
        plan.steps.append(queue_step(Ref(var), limit, device_read_ahead_kb(partition), f"disk {partition.disk}"))
    elif limit != DEFAULT_MAX_SECTORS_KB:
        # A partition is its disk's queue; here it is a loop device, whose limits are its own (loop stacks
        # none from its backing), so the disk's max_sectors_kb is set on it, before any md or dm device
        # over it stacks it (blk_stack_limits at their table load). The value and the device are the fixed
        # script's arguments, never its text; it prints the value read back, which the step checks.
        plan.steps.append(Step(
            f"queue limit max_sectors_kb {limit} of that loop device, the limit of disk {partition.disk}",
            ("sh", "-c", _SET_MAX_SECTORS, Ref(var), str(int(limit))), expect=str(int(limit))))
    return Ref(var)


#: Sets a block device's queue/max_sectors_kb: $0 the device's path, $1 the value [KiB]; prints it read back.
_SET_MAX_SECTORS = ('q=/sys/class/block/$(basename "$(readlink -f "$0")")/queue/max_sectors_kb; '
                    'echo "$1" > "$q" && cat "$q"')


@builds(LinearVolume)
@builds(StripedVolume)
def _logical_volume(volume, plan: _Plan, path: str) -> str:
    """PVs on the volume's partitions, one VG, one LV of exactly the volume's extents."""
    kind = kind_of(volume)
    where = f"{path} ({kind})"
    if plan.vg_name is not None:
        raise ValueError(f"{where}: a plan builds one LVM volume group; this stack has a second LVM volume")
    for name in ("extent_size_bytes", "pe_start_bytes"):
        if getattr(volume, name) % LVM_SIZE_UNIT_BYTES:
            raise ValueError(f"{where}: {name} must be a multiple of {LVM_SIZE_UNIT_BYTES} "
                             f"(got {getattr(volume, name)})")
    if isinstance(volume, LinearVolume) and volume != LinearVolume(
            volume.physical_volumes, extent_size_bytes=volume.extent_size_bytes,
            pe_start_bytes=volume.pe_start_bytes, name=volume.name):
        raise ValueError(f"{where}: segments: a plan builds an LV that uses every extent of its PVs in order "
                         "(lvcreate -l N); other segment maps are modelled, not built")
    lv = volume.name or "lv0"
    if not _LVM_NAME_RE.match(lv):
        raise ValueError(f"{where}: name {lv!r} is not an LVM name (letters, digits, + _ . -)")
    devs = [_build(pv, plan, f"{path}.physical_volumes[{i}]") for i, pv in enumerate(volume.physical_volumes)]
    vg = f"diskmodel_{plan.token}"  # never the stack's own names: the host's VGs must not clash
    plan.vg_name, plan.lv_name = vg, lv
    add_pvs_and_vg(plan, devs, vg, pe_start_bytes=volume.pe_start_bytes, extent_bytes=volume.extent_size_bytes,
                   vg_description=f"volume group {vg} over {len(devs)} PV(s)")
    extents = volume.size_bytes // volume.extent_size_bytes
    stripes = (("-i", str(len(devs)), "-I", f"{volume.stripe_size_bytes // LVM_SIZE_UNIT_BYTES}k")
               if isinstance(volume, StripedVolume) else ())
    plan.steps.append(Step(
        f"logical volume {vg}/{lv} of {extents} extents",
        ("lvcreate", "-y", "-W", "n", *stripes, "-l", str(extents), "-n", lv, vg),
        resource=("lv", (("name", f"{vg}/{lv}"),)),
    ))
    for i, dev in enumerate(devs):
        per_pv = (extents // len(devs) if isinstance(volume, StripedVolume)
                  else sum(s.extent_count for s in volume.segments if s.pv_index == i))
        plan.steps.append(Step(
            f"check {vg}/{lv} uses all {per_pv} extents of PV {i + 1}",
            ("pvs", "--noheadings", "-o", "pv_pe_alloc_count", dev),
            expect=str(per_pv),
        ))
    return f"/dev/{vg}/{lv}"


def build_plan(
    stack: Stack,
    *,
    backing: str | os.PathLike,
    mount_parent: str = "/tmp",
    mount_dir: str | None = None,
    direct_io: bool = True,
    name_token: str | None = None,
    file_system: bool = True,
    disk_backings: dict | None = None,
    queue_defaults: bool = False,
) -> StackPlan:
    """The plan of steps that builds *stack* on *backing*, which stands for its disks.

    backing: scratch file or block device (already sized, at least
    :func:`backing_bytes_required`, and safe to destroy; this function checks
    nothing on disk); a stack over several disks lays them one after the
    other in it (:func:`disk_bases`). mount_parent: directory in which a fresh
    mount point is made with ``mktemp -d``; mount_dir: instead, the exact
    mount point to create (a new path, e.g. inside the run's own folder, so
    that the run's record names it before it exists; the mount points of
    layers below, such as a loop file's host file system, are made next to
    it as ``mount_dir.N``). direct_io: loop devices over the scratch use
    O_DIRECT on it. name_token: suffix of the VG name (random when None).
    file_system: False builds the volume only (no mkfs, no mount), for
    benchmarks of the block device itself (``StackPlan.device``). disk_backings:
    ``{disk name: device}`` for disks that each have a device of their own (emulated
    drives, on the host or in the VM), instead of a share of *backing*. queue_defaults: each loop device's request
    limit and read-ahead are set to what the model takes (its disk's limit, 128 KiB of read-ahead), for a
    host whose loop numbers keep what their earlier use left; a freshly booted VM has the defaults already.
    Everything is checked before a step exists: a stack this cannot build is a
    ValueError naming the node and the field.
    """
    if not isinstance(stack, Stack):
        raise ValueError(f"stack must be a Stack (got {type(stack).__name__})")
    fs: FileSystemNode = stack.file_system
    fs_size_bytes = int(stack.volume.size_bytes)
    if file_system and fs.kind == "xfs" and fs_size_bytes < XFS_MIN_BYTES:
        raise ValueError(f"file_system (xfs): fs_size_bytes must be >= {XFS_MIN_BYTES} for xfs (mkfs.xfs refuses "
                         f"file systems under 300 MB); got {fs_size_bytes}")
    token = name_token or secrets.token_hex(4)
    if not re.match(r"^[A-Za-z0-9]+$", token):
        raise ValueError(f"name_token must be alphanumeric; got {token!r}")
    plan = _Plan(os.fspath(backing), direct_io, token, disk_bases(stack))
    plan.mount_parent, plan.mount_dir = mount_parent, mount_dir
    plan.disk_backings = {str(k): os.fspath(v) for k, v in (disk_backings or {}).items()}
    plan.disk_limits = {d.name: getattr(d, "max_sectors_kb", DEFAULT_MAX_SECTORS_KB) for d in stack.disks}
    plan.queue_defaults = bool(queue_defaults)
    device = _build(stack.volume, plan, "file_system.volume")
    fs_type = plan.fs_made or fs.kind
    if plan.fs_made is not None and plan.fs_made != fs.kind:
        raise ValueError(f"file_system ({fs.kind}): kind must be {plan.fs_made}: the {plan.fs_made} array below "
                         "is the file system")
    if plan.fs_made is not None and not file_system:
        raise ValueError(f"file_system.volume: a {plan.fs_made} array is a file system, not a block device; "
                         "it is built with its file system")
    steps = plan.steps
    if plan.fs_made is None:
        steps.append(Step(
            f"check the file-system device has exactly {fs_size_bytes} bytes",
            ("blockdev", "--getsize64", device),
            expect=str(fs_size_bytes),
        ))
    if file_system:
        if fs.kind in _FS_MODULES:  # a fixed script: no user string in it
            steps.append(Step(f"{fs.kind} kernel module", ("sh", "-c", 'while read -r m; do insmod "$m" 2>/dev/null '
                                                           f'|| true; done < {_FS_MODULES[fs.kind]}')))
        if plan.fs_made is None:
            steps.append(Step(f"{fs.kind} file system", (*_MKFS_ARGS[fs.kind], *fs.mkfs_options, device)))
        mount_steps(plan, device, fs_type, options=fs.mount_options, mount_dir=mount_dir)
    return StackPlan(
        name=stack.short_name, fs_type=fs_type, fs_size_bytes=fs_size_bytes, backing=plan.backing,
        regions=tuple(plan.regions), steps=tuple(steps), device=device,
        mount_var="DISKMODEL_MNT", vg_name=plan.vg_name, lv_name=plan.lv_name, mount_options=fs.mount_options,
        queue_defaults=plan.queue_defaults,
    )


def device_mapper_available() -> bool:
    """True when this kernel has device-mapper (needed by LVM)."""
    try:
        if any(line.split()[1:] == ["device-mapper"] for line in Path("/proc/misc").read_text().splitlines()):
            return True
    except OSError:
        pass
    return Path("/sys/module/dm_mod").exists()


def require_device_mapper(stack: Stack) -> None:
    """Raise LayoutUnavailable, with what to do, when *stack* needs device-mapper and it is absent."""
    needs = [path for path, node, _ in stack.nodes() if getattr(node, "is_lvm", False)]
    if needs and not device_mapper_available():
        raise LayoutUnavailable(
            f"stack {stack.short_name} needs LVM ({needs[0]}), and this kernel has no device-mapper "
            "(no 'device-mapper' in /proc/misc, no /sys/module/dm_mod); "
            "pass --vm to build it in a throwaway VM"
        )


def md_available() -> bool:
    """True when this kernel has md (software RAID): /proc/mdstat or the md_mod module."""
    return Path("/proc/mdstat").exists() or Path("/sys/module/md_mod").exists()


def require_kernel(stack: Stack) -> None:
    """Raise LayoutUnavailable, with what to do, when *stack* needs md or device-mapper and this kernel lacks it."""
    have = {"md": md_available(), "device-mapper": device_mapper_available()}
    missing = [what for what in needs_vm_kernel(stack) if not have[what]]
    if missing:
        raise LayoutUnavailable(
            f"stack {stack.short_name} needs {' and '.join(missing)}, which this kernel lacks "
            "(no /proc/mdstat or /sys/module/md_mod; no 'device-mapper' in /proc/misc); "
            "pass --vm to build it in a throwaway VM")
