"""A twin of a stack over RAM-backed disks in the guest: the same layers, file system and options built on
loop devices over sparse files in one tmpfs, so that a workload run on it takes the application's time
and the stack's own kernel work (the file system, its journal, md's parity and stripe cache,
device-mapper, the block layer and the loop driver's copies) with devices that take no time.

Under TCG the guest's CPU is emulated, so that kernel work is a large, load-dependent part of a run; a
run on the twin just before the real one measures it on the same CPU at the same moment. The
throwaway VM's initramfs carries no ``brd`` module (calibrate/bench/initramfs.py), so a loop device
over a tmpfs file is the RAM disk (drivers/block/loop.c over mm/shmem.c: every block read or written is
a page copy by the loop worker, no device). That copy is the twin's own: the real run hands its pages
to the virtio queue instead, so the twin's clock holds a little more kernel work than the run's.

Every value reaches the guest's shell through :func:`~diskmodel.calibrate.bench.steps.sh_word`; the
undo of each RAM disk (its loop device, then the tmpfs) is put on the stack script's undo list before
the stack's own steps, so the script's EXIT trap tears the twin's stack down first, then its disks
(:meth:`~diskmodel.calibrate.bench.provision.StackPlan.render_script`).
"""
from __future__ import annotations

from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench.steps import sh_word

__all__ = ["RAM_CLOCK", "RAM_DIR", "TMPFS_CLOCK", "disk_bytes", "ram_disks_preamble", "twin_script"]

MIB = 1 << 20
#: The clocks a run in the guest is put on: the same workload on the guest's tmpfs just before (the
#: application alone), and on a twin of its stack over RAM disks just before (the application and the
#: stack's kernel work).
TMPFS_CLOCK, RAM_CLOCK = "tmpfs", "stack on RAM"
#: The guest's tmpfs holding the twin's disks.
RAM_DIR = "/tmp/diskmodel-ram"
#: Room on the tmpfs beyond the disks' own bytes (a limit, not a reservation: tmpfs takes pages as written).
_SLACK_MIB = 64


def disk_bytes(stack) -> dict[str, int]:
    """Each disk of *stack*: the bytes from its start to its last partition's end, in whole MiB (a disk
    of its own, as the VM's drives are: each partition at its own offset of it)."""
    ends: dict[str, int] = {}
    for _, part in stack.partitions():
        ends[part.disk] = max(ends.get(part.disk, 0), part.end_bytes)
    return {name: -(-end // MIB) * MIB for name, end in ends.items()}


def ram_disks_preamble(disks: dict[str, int], *, ram_dir: str = RAM_DIR) -> str:
    """Shell lines making one RAM-backed disk per entry of *disks* (``{link path: bytes}``): a sparse file of
    that size on one tmpfs at *ram_dir*, a loop device over it, and a symbolic link at the path naming the
    loop device; each undo put on ``DISKMODEL_UNDO`` as it is made (the tmpfs's first: it runs last)."""
    if not disks:
        raise ValueError("disks: a twin needs at least one disk (got none)")
    for link, size in disks.items():
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"disks[{link!r}]: size must be a whole number of bytes > 0 (got {size!r})")
    total_mib = sum(-(-size // MIB) for size in disks.values()) + _SLACK_MIB
    room = sh_word(ram_dir)
    lines = [
        "NL='\n'",  # the undo list's separator
        f"mkdir -p {room} && mount -t tmpfs -o {sh_word(f'size={total_mib}m')} diskmodel-ram {room} || exit 1",
        f"DISKMODEL_UNDO={sh_word(f'umount {room}')}\"$NL$DISKMODEL_UNDO\"",
    ]
    for k, (link, size) in enumerate(disks.items()):
        image = sh_word(f"{ram_dir}/disk{k}")
        var = f"diskmodel_ram{k}"
        undo = f'losetup -d "${var}"; rm -f {sh_word(link)}'
        lines += [
            f"dd if=/dev/zero of={image} bs=1048576 count=0 seek={-(-size // MIB)} 2>/dev/null || exit 1",
            f"{var}=$(losetup --find --show {image}) || exit 1",
            # the variable, not its value, goes on the list: eval reads it as one quoted word
            f"DISKMODEL_UNDO={sh_word(undo)}\"$NL$DISKMODEL_UNDO\"",
            f"ln -sf \"${var}\" {sh_word(link)} || exit 1",
        ]
    return "\n".join(lines)


def twin_script(stack, body_of, *, per_disk: bool, preamble: str = "", ram_dir: str = RAM_DIR) -> str:
    """The ``sh`` script that builds *stack*'s twin over RAM disks, runs ``body_of(plan)`` (the body's
    shell text, given the twin's :class:`~diskmodel.calibrate.bench.provision.StackPlan`) on it and
    tears it down (its EXIT trap).

    per_disk: each disk of the stack on a RAM disk of its own (as the VM's drives are,
    :func:`~diskmodel.calibrate.bench.provision.build_plan`'s ``disk_backings``); otherwise one RAM disk holds
    every disk one after the other (its ``backing``). *preamble*: shell lines run before the RAM disks are
    made (the guest's module loading)."""
    if per_disk:
        sizes = disk_bytes(stack)
        links = {name: f"{ram_dir}-{name}" for name in sizes}
        plan = L.build_plan(stack, backing=links[next(iter(links))], disk_backings=links)
        disks = {links[name]: size for name, size in sizes.items()}
    else:
        link = f"{ram_dir}-disk"
        plan = L.build_plan(stack, backing=link)
        disks = {link: L.backing_bytes_required(stack)}
    ram = ram_disks_preamble(disks, ram_dir=ram_dir)
    return plan.render_script(body_of(plan), preamble="\n".join(p for p in (preamble, ram) if p))
