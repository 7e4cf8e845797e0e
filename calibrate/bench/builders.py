"""What every builder of a stack's plan shares: the plan being built, the registry of builders by
node type, and the steps several builders emit (LVM physical volumes and groups, scratch mounts).

:mod:`diskmodel.calibrate.bench.provision` (partitions, LVM volumes) and
:mod:`diskmodel.calibrate.bench.layers_provision` (RAID, thin pools, loop files) register their builders
here with :func:`builds`; :func:`_build` dispatches on a node's type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from diskmodel.model.stacks.nodes import kind_of
from diskmodel.calibrate.bench.steps import Ref, Step, Word

__all__ = ["LVM_SIZE_UNIT_BYTES", "SCRATCH_MOUNT_OPTIONS", "Region", "add_pvs_and_vg", "builds", "mount_steps"]

#: Units of the LVM sizes given to pvcreate and vgcreate (their "k" suffix) [bytes].
LVM_SIZE_UNIT_BYTES = 1024


@dataclass(frozen=True)
class Region:
    """A byte range of the scratch space that becomes one block device [bytes], and the disk it stands for."""

    offset_bytes: int
    size_bytes: int
    disk: str = "sda"
    #: The variable the loop device's path is captured into.
    variable: str = ""


class _Plan:
    """The steps of a plan being built, and what the builders share."""

    def __init__(self, backing: str, direct_io: bool, token: str, disk_base_bytes: dict[str, int]):
        self.backing, self.direct_io, self.token = backing, direct_io, token
        self.disk_base_bytes = disk_base_bytes
        self.disk_backings: dict[str, str] = {}  # disk name -> a device of its own (build_plan's disk_backings)
        self.disk_limits: dict[str, int] = {}  # disk name -> its queue's max_sectors_kb (the drive node's)
        #: Each loop device's request limit and read-ahead set as the model takes them (build_plan's queue_defaults)
        self.queue_defaults = False
        self.steps: list[Step] = []
        self.regions: list[Region] = []
        self.vg_name: str | None = None
        self.lv_name: str | None = None
        #: Set by a builder that makes the file system itself (btrfs over several devices): its type.
        self.fs_made: str | None = None
        self.mount_parent: str = "/tmp"
        self.mount_dir: str | None = None
        self._serial = 0

    def unique(self, prefix: str) -> str:
        """A name no other builder of this plan gets: *prefix*, the plan's token and a serial number."""
        self._serial += 1
        # a trailing "_" so that no name is the start of another ("$V1_" is not in "$V10_")
        return f"{prefix}{self.token}n{self._serial}_"


#: Builder of each node type: (node, plan, path) -> the block device it made, a word (a path or a Ref).
_BUILDERS: dict[type, Callable] = {}


def builds(node_class: type):
    """Decorator: register the builder of a volume node type (see :data:`_BUILDERS`)."""
    def register(builder):
        _BUILDERS[node_class] = builder
        return builder
    return register


def _build(node, plan: _Plan, path: str) -> str:
    builder = _BUILDERS.get(type(node))
    if builder is None:
        raise ValueError(f"{path} ({kind_of(node)}): a plan cannot build this node type (it builds "
                         f"{', '.join(sorted(cls.__name__ for cls in _BUILDERS))})")
    return builder(node, plan, path)


def add_pvs_and_vg(plan, devs: list, vg: str, *, pe_start_bytes: int, extent_bytes: int,
                   vg_description: str, what: str = "") -> None:
    """Steps making each of *devs* (words) an LVM physical volume and *vg* a volume group over them."""
    suffix = f" ({what})" if what else ""
    for i, dev in enumerate(devs):
        plan.steps.append(Step(
            f"physical volume {i + 1} of {len(devs)}{suffix}",
            ("pvcreate", "-ff", "-y", "--dataalignment", f"{pe_start_bytes // LVM_SIZE_UNIT_BYTES}k", dev),
            resource=("pv", (("device", dev),)),
        ))
    plan.steps.append(Step(
        vg_description,
        ("vgcreate", "-s", f"{extent_bytes // LVM_SIZE_UNIT_BYTES}k", vg, *devs),
        resource=("vg", (("name", vg),)),
    ))


#: Options every scratch mount gets after the user's: no set-user-ID programs, no device files from it.
SCRATCH_MOUNT_OPTIONS = ("nosuid", "nodev")


def mount_steps(plan: "_Plan", device: Word, fs_type: str, *, options=(), var: str = "DISKMODEL_MNT",
                mount_dir: str | None = None) -> None:
    """Steps: a fresh mount point (*mount_dir*, recorded before it exists, or ``mktemp -d`` in the
    plan's mount parent), captured into *var*, and the mount of *device* on it, with *options* and
    :data:`SCRATCH_MOUNT_OPTIONS`."""
    if mount_dir is None:
        plan.steps.append(Step(
            "mount point",
            ("mktemp", "-d", plan.mount_parent.rstrip("/") + "/diskmodel-mnt.XXXXXX"),
            capture=var,
            resource=("dir", (("path", Ref(var)),)),
        ))
    else:
        plan.steps.append(Step(
            "mount point",
            ("mkdir", "-m", "700", mount_dir),
            capture=var, value=mount_dir,
            resource=("dir", (("path", mount_dir),)),
        ))
    plan.steps.append(Step(
        f"mount {fs_type}",
        ("mount", "-t", fs_type, "-o", ",".join((*options, *SCRATCH_MOUNT_OPTIONS)), device, Ref(var)),
        resource=("mount", (("mountpoint", Ref(var)),)),
    ))


#: Sets a block device's queue/max_sectors_kb ($1), then its read_ahead_kb ($2), $0 the device's path; prints both
#: read back. The limit goes first: on Linux 6.18 a new limit sets a loop device's read-ahead anew.
_SET_QUEUE = ('q=/sys/class/block/$(basename "$(readlink -f "$0")")/queue; echo "$1" > "$q/max_sectors_kb" && '
              'echo "$2" > "$q/read_ahead_kb" && echo "$(cat "$q/max_sectors_kb") $(cat "$q/read_ahead_kb")"')


def queue_step(device, limit_kb: int, read_ahead_kb: int, whose: str) -> Step:
    """The step that sets loop device *device*'s request limit and read-ahead to what the model takes
    (*whose*: the node they are of), and checks both read back: a loop number otherwise keeps what its
    earlier use left (:mod:`diskmodel.calibrate.harness.queue_defaults`). The values and the device are the
    fixed script's arguments, never its text."""
    return Step(f"queue limit max_sectors_kb {limit_kb} and read_ahead_kb {read_ahead_kb} of that loop device, "
                f"those of {whose}", ("sh", "-c", _SET_QUEUE, device, str(int(limit_kb)), str(int(read_ahead_kb))),
                expect=f"{int(limit_kb)} {int(read_ahead_kb)}")
