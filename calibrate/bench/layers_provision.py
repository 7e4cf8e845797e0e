"""Builders of the block layers: RAID (md, LVM, btrfs), thin pools and loop files.

Each node type of :mod:`diskmodel.model.stacks.raid`, :mod:`diskmodel.model.stacks.thin`
and :mod:`diskmodel.model.stacks.loop_file` gets its builder in the registry of
:mod:`diskmodel.calibrate.bench.builders` (:func:`~diskmodel.calibrate.bench.builders.builds`),
so :func:`~diskmodel.calibrate.bench.provision.build_plan` builds any stack
made of them, on the host (:class:`~diskmodel.calibrate.bench.host_executor.HostExecutor`)
or in the throwaway VM (:meth:`~diskmodel.calibrate.bench.provision.StackPlan.render_script`).
Every builder first builds its children (members, pool data, host device),
then adds its own steps, each an argument vector of words (a member is a
:class:`~diskmodel.calibrate.bench.steps.Ref` to the variable its device's
path was captured into) and, where it creates something, the typed record
that finds it again and from which its undo is derived (``md``, ``pv``,
``vg``, ``lv``, ``loop``, ``mount``, ``dir``, ``btrfs``), written before the
step runs.
Sizes are checked before any step exists: a stack whose sizes do not fit
its members is a ValueError naming the node and the field.

- **md** (``RaidArray(tool="md")``): ``mdadm --create`` with metadata 1.2,
  the node's ``--data-offset`` (``data_offset_bytes``), no bitmap and
  ``--assume-clean`` (no initial resync competing with the benchmark; the
  data on a fresh array are not read before they are written);
  ``--size`` sets the per-member size so the array has exactly the node's
  size (RAID 0 has no ``--size``: its size is the members' whole chunks
  after the data offset, and the node must say so). Only in the VM on this
  host (no md in its kernel).
- **LVM** (``tool="lvm"``): PVs on the members, one VG, one LV
  ``--type raid1 -m N-1`` / ``raid5 -i N-1`` / ``raid6 -i N-2`` / striped
  ``-i N`` with the chunk as ``-I``; RAID 1/5 are created ``--nosync``, RAID 6
  (which LVM will not create unsynchronised) waits for its sync.
- **btrfs** (``tool="btrfs"``): ``mkfs.btrfs -d raidN -m raidN`` over the
  members: the array *is* the file system, so the plan mounts it as btrfs
  whatever file-system kind the stack names on top.
- **thin** (``ThinVolume``): a PV on the pool's data device, a VG of
  :data:`THIN_EXTENT_BYTES` extents, a pool (``lvcreate --type thin-pool``
  with its chunk, metadata size, no spare metadata LV, ``-Z``) and a thin LV
  of the virtual size; ``used_bytes`` are written (allocated) before the run.
- **loop file** (``LoopFile``): a host file system (``host_file_system``)
  on the host device, mounted, an image in it, ``truncate`` (sparse) or
  ``dd if=/dev/zero`` (zero-filled), and ``losetup`` over it (buffered, or
  ``--direct-io=on``). Nesting builds the layers bottom up; each host mount
  point is recorded before it is made.
"""
from __future__ import annotations

from diskmodel.calibrate.bench.builders import _build, _Plan, add_pvs_and_vg, builds, mount_steps, queue_step
from diskmodel.calibrate.bench.steps import Concat, Ref, Step
from diskmodel.model.drive.drives import DEFAULT_MAX_SECTORS_KB
from diskmodel.model.iopath.read_ahead import device_read_ahead_kb
from diskmodel.model.stacks.loop_file import LoopFile
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.units import KIB, MIB

__all__ = ["THIN_EXTENT_BYTES", "needs_vm_kernel"]

#: PE start of every PV these builders make (``pvcreate --dataalignment``) [bytes].
PE_START_BYTES = 1 * MIB
#: Extent size of the VGs of LVM RAID and thin pools [bytes] (LVM's default).
THIN_EXTENT_BYTES = 4 * MIB
#: Fewest members lvcreate --type raid6 accepts (3 stripes and 2 parity).
LVM_RAID6_MIN_MEMBERS = 5
#: Smallest device mkfs.btrfs (btrfs-progs 6.2) accepts [bytes].
BTRFS_MIN_DEVICE_BYTES = 131072000
#: Host file systems a loop image's host can be made with, and their mkfs.
#: The host file system of a loop image: ext's inode tables and journal written by mkfs (not by
#: ext4lazyinit while a workload runs), and no discard of the whole device first.
_EXT_INIT = ("-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard")
_HOST_MKFS = {"ext2": ("mkfs.ext2", "-F", "-q", *_EXT_INIT), "ext3": ("mkfs.ext3", "-F", "-q", *_EXT_INIT),
              "ext4": ("mkfs.ext4", "-F", "-q", *_EXT_INIT), "xfs": ("mkfs.xfs", "-f", "-q"),
              "btrfs": ("mkfs.btrfs", "-f", "-q")}
#: Room a host file system needs besides the image: the model's default image leaves 1/16.
HOST_FS_SHARE = 16


def needs_vm_kernel(stack) -> list[str]:
    """What *stack* needs of the kernel that this module's host builders cannot give without it:
    "md" (an md RAID) and "device-mapper" (LVM RAID, thin). Empty: loop and btrfs only."""
    out = []
    for _, node, _ in stack.nodes():
        if isinstance(node, RaidArray) and node.tool == "md":
            out.append("md")
        elif (isinstance(node, RaidArray) and node.tool == "lvm") or isinstance(node, ThinVolume) \
                or getattr(node, "is_lvm", False):
            out.append("device-mapper")
    return list(dict.fromkeys(out))


def _where(path: str, node) -> str:
    return f"{path} ({getattr(node, 'kind', None) or type(node).__name__.lower()})"


def _members(array, plan: _Plan, path: str) -> list:
    return [_build(m, plan, f"{path}.members[{i}]") for i, m in enumerate(array.members)]


def _dev_var(plan: _Plan, prefix: str) -> str:
    return plan.unique(prefix).upper()


# ------------------------------------------------------------------ RAID

@builds(RaidArray)
def _raid(array: RaidArray, plan: _Plan, path: str) -> str:
    where = _where(path, array)
    if array.failed_members:
        raise ValueError(f"{where}: failed_members: a degraded array is modelled, not built")
    return {"md": _md_array, "lvm": _lvm_raid, "btrfs": _btrfs_array}[array.tool](array, plan, path, where)


def _md_array(array: RaidArray, plan: _Plan, path: str, where: str) -> str:
    # the node's size already fits its members after the data offset (RaidArray refuses more)
    size, offset = array.size_bytes, array.data_start_bytes
    if array.kind == "raid0":
        if size != array.capacity_bytes:
            raise ValueError(f"{where}: array_size_bytes must be {array.capacity_bytes} for an md RAID 0 (md uses "
                             f"every whole chunk of its members after the {offset}-byte data offset; got {size})")
        per_member = None
    else:
        per_member, rest = divmod(size, array.data_members)
        unit = KIB if array.kind == "raid1" else array.chunk_size_bytes
        if rest or per_member % unit:
            raise ValueError(f"{where}: array_size_bytes must be {array.data_members} x a multiple of {unit} bytes "
                             f"for md (got {size})")
    devs = _members(array, plan, path)
    var = _dev_var(plan, "md")
    level = array.kind.removeprefix("raid")
    chunk = () if array.kind == "raid1" else (f"--chunk={array.chunk_size_bytes // KIB}K",)
    sized = () if per_member is None else (f"--size={per_member // KIB}K",)
    bitmap = () if array.kind == "raid0" else ("--bitmap=none",)     # RAID 0 has no bitmap to refuse
    plan.steps.append(Step(f"md device name for {array.kind}", action="diskmodel_first_free_md", capture=var))
    plan.steps.append(Step(
        f"md {array.kind} over {len(devs)} members",
        ("mdadm", "--create", Ref(var), "--run", "--quiet", "--metadata=1.2", f"--level={level}",
         f"--raid-devices={len(array.members)}", *chunk, *sized, f"--data-offset={offset // KIB}K", *bitmap,
         "--assume-clean", *devs),
        resource=("md", (("device", Ref(var)),)),
    ))
    return Ref(var)


def _pvs_and_vg(plan: _Plan, devs: list, extent_bytes: int, what: str) -> str:
    vg = plan.unique("diskmodel_")
    add_pvs_and_vg(plan, devs, vg, pe_start_bytes=PE_START_BYTES, extent_bytes=extent_bytes,
                   vg_description=f"volume group {vg} ({what})", what=what)
    return vg


def _lvm_raid(array: RaidArray, plan: _Plan, path: str, where: str) -> str:
    extent = THIN_EXTENT_BYTES
    size, n, d = array.size_bytes, len(array.members), array.data_members
    if size % (extent * d):
        raise ValueError(f"{where}: array_size_bytes must be a multiple of {d} x {extent} bytes (whole extents on "
                         f"each member) for LVM (got {size})")
    if array.kind != "raid1" and array.chunk_size_bytes > extent:
        raise ValueError(f"{where}: chunk_size_bytes must be <= the extent ({extent}) for LVM "
                         f"(got {array.chunk_size_bytes})")
    if array.kind == "raid6" and n < LVM_RAID6_MIN_MEMBERS:
        raise ValueError(f"{where}: members: LVM builds a RAID 6 of at least {LVM_RAID6_MIN_MEMBERS} members "
                         f"(3 data stripes; md takes 4) (got {n})")
    per_member_extents = size // extent // d
    metadata_extents = 0 if array.kind == "raid0" else 1       # each raid image has its rmeta LV
    need = PE_START_BYTES + (per_member_extents + metadata_extents) * extent
    if need > array.smallest_member_bytes:
        raise ValueError(f"{where}: array_size_bytes ({size}) does not fit the members with LVM's PV header and "
                         f"raid metadata: each member needs {need} bytes, the smallest has "
                         f"{array.smallest_member_bytes}")
    devs = _members(array, plan, path)
    vg = _pvs_and_vg(plan, devs, extent, array.kind)
    lv = "raid"
    chunk = ("-I", f"{array.chunk_size_bytes // KIB}k")
    kind = {"raid0": ("--type", "striped", "-i", str(n), *chunk),
            "raid1": ("--type", "raid1", "-m", str(n - 1), "--nosync"),
            "raid5": ("--type", "raid5", "-i", str(n - 1), *chunk, "--nosync"),
            "raid6": ("--type", "raid6", "-i", str(n - 2), *chunk)}
    plan.steps.append(Step(
        f"logical volume {vg}/{lv}: {array.kind} of {size // extent} extents",
        ("lvcreate", "-y", "-W", "n", "-Z", "n", *kind[array.kind], "-l", str(size // extent), "-n", lv, vg, *devs),
        resource=("lv", (("name", f"{vg}/{lv}"),)),
    ))
    if array.kind == "raid6":
        plan.steps.append(Step(
            f"wait for {vg}/{lv} to synchronise",
            ("lvs", "--noheadings", "-o", "sync_percent", f"{vg}/{lv}"),
            expect="100.00", wait=True,
        ))
    return f"/dev/{vg}/{lv}"


def _btrfs_array(array: RaidArray, plan: _Plan, path: str, where: str) -> str:
    if array.array_size_bytes is not None:
        raise ValueError(f"{where}: array_size_bytes: btrfs sizes its own array; leave it out")
    if array.smallest_member_bytes < BTRFS_MIN_DEVICE_BYTES:
        raise ValueError(f"{where}: members: mkfs.btrfs needs devices of at least {BTRFS_MIN_DEVICE_BYTES} bytes "
                         f"(the smallest has {array.smallest_member_bytes})")
    devs = _members(array, plan, path)
    plan.fs_made = "btrfs"
    profile = array.kind
    plan.steps.append(Step(
        f"btrfs {profile} file system over {len(devs)} devices",
        ("mkfs.btrfs", "-f", "-q", "-d", profile, "-m", profile, *devs),
    ))
    plan.steps.append(Step(
        f"btrfs device scan of the {len(devs)} devices",
        ("btrfs", "device", "scan", *devs),
        resource=("btrfs", (("devices", tuple(devs)),)),
    ))
    return devs[0]


# ------------------------------------------------------------------ thin pools

def _extents(name: str, where: str, value: int) -> int:
    if value % THIN_EXTENT_BYTES:
        raise ValueError(f"{where}: {name} must be a multiple of the extent, {THIN_EXTENT_BYTES} bytes, "
                         f"for LVM (got {value})")
    return value // THIN_EXTENT_BYTES


@builds(ThinVolume)
def _thin(volume: ThinVolume, plan: _Plan, path: str) -> str:
    where = f"{path} (thin)"
    pool = _extents("pool_size_bytes", where, volume.pool_size_bytes)
    metadata = _extents("metadata_size_bytes", where, volume.metadata_size_bytes)
    virtual = _extents("virtual_size_bytes", where, volume.virtual_size_bytes)
    need = PE_START_BYTES + (pool + metadata) * THIN_EXTENT_BYTES
    if need > volume.data.size_bytes:
        raise ValueError(f"{where}: pool_size_bytes + metadata_size_bytes do not fit data with LVM's PV header: "
                         f"{need} bytes needed, data has {volume.data.size_bytes}")
    if volume.used_bytes % MIB:
        raise ValueError(f"{where}: used_bytes must be a multiple of {MIB} to be written before the run "
                         f"(got {volume.used_bytes})")
    dev = _build(volume.data, plan, f"{path}.data")
    vg = _pvs_and_vg(plan, [dev], THIN_EXTENT_BYTES, "thin pool")
    zero = "y" if volume.zero_new_chunks else "n"
    plan.steps.append(Step(
        f"thin pool {vg}/pool: {pool} extents, {volume.chunk_size_bytes}-byte chunks",
        ("lvcreate", "-y", "--type", "thin-pool", "-l", str(pool),
         "--poolmetadatasize", f"{metadata * THIN_EXTENT_BYTES // KIB}k", "--poolmetadataspare", "n",
         "--chunksize", f"{volume.chunk_size_bytes // KIB}k", "-Z", zero, "-n", "pool", vg),
        resource=("lv", (("name", f"{vg}/pool"),)),
    ))
    plan.steps.append(Step(
        f"thin volume {vg}/thin of {volume.virtual_size_bytes} bytes",
        ("lvcreate", "-y", "-V", f"{virtual * THIN_EXTENT_BYTES // KIB}k", "--thin", "-n", "thin", f"{vg}/pool"),
        resource=("lv", (("name", f"{vg}/thin"),)),
    ))
    if volume.used_bytes:
        plan.steps.append(Step(
            f"allocate the first {volume.used_bytes} bytes of {vg}/thin (used_bytes)",
            ("dd", "if=/dev/zero", f"of=/dev/{vg}/thin", "bs=1M", f"count={volume.used_bytes // MIB}",
             "oflag=direct"),
        ))
    return f"/dev/{vg}/thin"


# ------------------------------------------------------------------ loop files

@builds(LoopFile)
def _loop_file(loop: LoopFile, plan: _Plan, path: str) -> str:
    where = f"{path} (loop_file)"
    room = loop.host.size_bytes - loop.host.size_bytes // HOST_FS_SHARE
    if loop.image_size_bytes > room:
        raise ValueError(f"{where}: image_size_bytes ({loop.image_size_bytes}) does not fit a "
                         f"{loop.host_file_system} file system on host ({loop.host.size_bytes} bytes) with its "
                         f"metadata: at most {room}")
    if loop.image_size_bytes % 4096:
        raise ValueError(f"{where}: image_size_bytes must be a multiple of 4096 (got {loop.image_size_bytes})")
    host = _build(loop.host, plan, f"{path}.host")
    plan.steps.append(Step(f"{loop.host_file_system} host file system for a loop image",
                           (*_HOST_MKFS[loop.host_file_system], host)))
    var = _dev_var(plan, "hostmnt")
    mount_dir = None if plan.mount_dir is None else f"{plan.mount_dir}.{var.lower()}"
    mount_steps(plan, host, loop.host_file_system, var=var, mount_dir=mount_dir)
    image = Concat((Ref(var), "/image.img"))
    if loop.allocation == "sparse":
        make = ("truncate", "-s", str(loop.image_size_bytes), image)
    else:  # written, so that every block is allocated (fallocate's unwritten extents would read as holes)
        make = ("dd", "if=/dev/zero", Concat(("of=", Ref(var), "/image.img")), "bs=4096", f"count={loop.image_size_bytes // 4096}",
                "conv=fsync")
    plan.steps.append(Step(f"{loop.allocation.replace('_', '-')} image of {loop.image_size_bytes} bytes", make))
    dev = _dev_var(plan, "loopfile")
    dio = ("--direct-io=on",) if loop.direct_io else ()
    plan.steps.append(Step(
        f"loop device over the {loop.allocation.replace('_', '-')} image",
        ("losetup", "--find", "--show", *dio, image),
        capture=dev,
        resource=("loop", (("backing", image), ("offset_bytes", 0), ("device", Ref(dev)))),
    ))
    if plan.queue_defaults:
        plan.steps.append(queue_step(Ref(dev), DEFAULT_MAX_SECTORS_KB, device_read_ahead_kb(loop), "a loop device"))
    return Ref(dev)
