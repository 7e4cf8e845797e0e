"""The published studies' stacks that need md, device-mapper or several drives, measured in the throwaway VM on
emulated drives, beside the model's prediction of the same stacks on the same drives.

One VM boot runs a group of cells: the group's drives are served by the emulator
(:func:`diskmodel.calibrate.emulate.for_vm.run_script_on_emulated_drives`; the first is the guest's
``/dev/vdb``), and each cell is a stack built on them (:func:`~diskmodel.calibrate.bench.provision.build_plan`
with ``disk_backings``: each disk of the stack on a drive of its own), the loop-image study's copy run in it
(:func:`~diskmodel.calibrate.bench.copy.copy_shell`, the guest's clock :data:`~diskmodel.calibrate.bench.copy.GUEST_CLOCK`) and the
stack torn down, each as its own ``sh -c`` script (its own EXIT trap tears it down).

Under TCG the guest's CPU is slow, and its speed follows the host's load, which changes while a
group runs. So just before each cell's copy the same copy is run on the guest's tmpfs (no device):
its times are the application's own pace at that moment, given to the model's workload for that
cell (:func:`diskmodel.model.iopath.workloads_pace.paced`). Then the same copy runs on a twin of the
cell's stack over RAM disks (:mod:`~diskmodel.calibrate.bench.ram_twin`): the application and the stack's
own kernel work on the guest's emulated CPU, with no device time, a clock the cell can be put on too.
A TCG guest on a shared host is also
preempted now and then for a large part of a step; the drives' request logs show those steps with
the drives idle, so each step's time is the median of its repeats (and of the tmpfs copy's), not
the mean: the mean follows the host's worst moments, the median the storage's own time.

Each cell also prints its devices' queue settings (``DISKMODEL_STACKS
QUEUE``: read-ahead, largest request, queue length, optimal I/O size, scheduler) and reads a marker
block of the first drive between two readings of the guest's clock (``DISKMODEL_STACKS MARKER``),
and the guest's output is kept beside the logs (``guest-output.txt``): the log's requests can be
put on the guest's clock and cut into the copy's timed steps.

The cells (:data:`GROUPS`) follow the published studies: Dagenais' partitions at the outer and inner
edge, RAID 1 over a fast and a slow drive beside each drive alone, LVM over one drive, ext2, ext3, xfs,
jfs and reiserfs on the mirror (Marechal's file systems on RAID 1); the multi-disk LVM study's striping over
1-5 drives at several chunk sizes, RAID 5 and RAID 6 over four and five drives against RAID 0, xfs on one
drive, and thin volumes at pool chunks of 64 KiB - 8 MiB, its Figure 11's range with a 32 MiB file (a cell's
own copy, :attr:`Cell.copy_sizes_bytes`) beside the run's copy at four of them.

The guest's own timing of its parity code (``raid6:`` and ``xor:`` lines of its kernel log) is printed
at the end (``DISKMODEL_STACKS DMESG``), beside the guest's output kept with the logs.
"""
from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench.copy import (GUEST_CLOCK, CopyResult, copy_shell, parse_copy_output,
                                            parse_copy_spread)
from diskmodel.calibrate.bench.layers_bench import GUEST_PREAMBLE
from diskmodel.calibrate.bench.steps import Ref, sh_word
from diskmodel.model.predictions.block_workloads import FileCopy
from diskmodel.calibrate.emulate.drives import model_drive
from diskmodel.model.stacks.loop_file import LoopFile
from diskmodel.model.stacks.raid import MD_DEFAULT_DATA_OFFSET_BYTES, RaidArray
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.stacks.volumes import LinearVolume, Partition, StripedVolume

__all__ = ["Cell", "GROUPS", "cell_copy", "thin_series_label", "group_script", "parse_group", "measure_group", "busy_s", "drive_logs", "logged_steps",
           "drive_busy", "logged_of", "pace_steps"]

MIB = 1 << 20
_MARK = "DISKMODEL_STACKS"
#: copy_shell's line marker (calibrate/bench/copy.py).
_COPY_MARK = "DISKMODEL_COPY"
#: Guest disks in order (the emulator's first drive is /dev/vdb: for_vm.guest_device).
GUEST_DISKS = ("vdb", "vdc", "vdd", "vde", "vdf")
PART_START, PART_BYTES = MIB, 256 * MIB
#: xfs's partition: mkfs.xfs (xfsprogs >= 5.19) refuses under 300 MiB.
XFS_PART_BYTES = 320 * MIB
#: md's data offset on each member (layers_provision: mdadm --data-offset).
MD_OFFSET = MD_DEFAULT_DATA_OFFSET_BYTES
GB = 10**9
#: Dagenais' partitions of several sizes at one start (his Figure 3) [GB].
PARTITION_GB = (2, 4, 8)
#: The multi-disk LVM study's chunk sizes over five drives beside 64 KiB (its Figure 3) [KiB].
STRIPE_KIB = (4, 16)
#: Its thin pools' chunk sizes beside 64 KiB and 1 MiB (its Figure 11, 64 KiB - 8 MiB) [bytes].
THIN_CHUNKS = (128 << 10, 8 << 20)
#: Its Figure 11's whole range of thin pool chunks, each with a file far larger than the chunk [bytes].
THIN_SERIES_CHUNKS = tuple(64 << 10 << k for k in range(8))
#: The file of the thin series' copy [bytes]. The study wrote bonnie++'s files (twice the memory, GBs) on a
#: fresh volume, so nearly every chunk the file fills is provisioned by its write; a 4 MiB file under an
#: 8 MiB chunk lies inside the chunk mkfs's inode tables already provisioned. 32 MiB spans four 8 MiB chunks.
THIN_SERIES_FILE_BYTES = 32 * MIB


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= MIB else f"{nbytes >> 10} KiB"


@dataclass(frozen=True)
class Cell:
    """One seed cell: the seed, a label, the stack (its disks named as the guest's drives) and the
    copy's file sizes when the cell's study wrote others than the run's (bytes; empty: the run's)."""

    seed: str
    label: str
    stack: Stack
    copy_sizes_bytes: tuple[int, ...] = ()


def cell_copy(cell: Cell, copy: FileCopy) -> FileCopy:
    """The copy *cell* runs: the run's *copy*, with the cell's own file sizes where it has them."""
    sizes = getattr(cell, "copy_sizes_bytes", ())  # the network group's cells: the run's sizes
    return FileCopy(file_sizes_bytes=sizes, repeats=copy.repeats) if sizes else copy


def _part(disk: str, start: int = PART_START, size: int = PART_BYTES) -> Partition:
    return Partition(start, size, disk=disk)


#: mkfs's options: 4 KiB blocks (the model's), the inode tables and journal written by mkfs (not by
#: ext4lazyinit during the workload) and no discard of the whole device (an emulated drive times it).
MKFS_OPTIONS = ("-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard")


def _stack(volume, kind: str, drives, label: str, max_sectors_kb: int | None = None) -> Stack:
    # mkfs.xfs, mkfs.jfs and mkreiserfs: their defaults (4 KiB blocks)
    options = MKFS_OPTIONS if kind.startswith("ext") else ()
    return Stack(FileSystemNode(volume, kind=kind, mkfs_options=options),
                 tuple(model_drive(p, name=d, max_sectors_kb=max_sectors_kb) for p, d in drives),
                 label)  # each as the emulator serves it


def _group_000():
    """Dagenais (and Marechal's file systems on RAID 1): a fast (wd800bd) and a slow (hp_c2247a) drive."""
    drives = (("wd800bd", "vdb"), ("hp_c2247a", "vdc"))
    fast, slow = drives[:1], drives[1:]
    inner = (80031744000 - 2 * PART_BYTES) // MIB * MIB  # the wd800bd's last zones (its capacity)
    def mirror(size: int = PART_BYTES):
        return RaidArray("raid1", (_part("vdb", size=size), _part("vdc", size=size)), tool="md",
                         array_size_bytes=size - MD_OFFSET)

    return [d for d, _ in drives], [
        Cell("000", "ext2, fast drive, outer partition", _stack(_part("vdb"), "ext2", fast, "fast outer")),
        Cell("000", "ext2, fast drive, inner partition", _stack(_part("vdb", inner), "ext2", fast, "fast inner")),
        Cell("000", "ext2, slow drive", _stack(_part("vdc"), "ext2", slow, "slow")),
        Cell("000", "ext2, RAID 1 fast + slow", _stack(mirror(), "ext2", drives, "raid1 ext2")),
        Cell("001", "ext3, RAID 1 fast + slow", _stack(mirror(), "ext3", drives, "raid1 ext3")),
        # Marechal's other file systems on the mirror (xfs on a mirror as large as mkfs.xfs accepts)
        Cell("001", "xfs, RAID 1 fast + slow", _stack(mirror(XFS_PART_BYTES + MD_OFFSET), "xfs", drives, "raid1 xfs")),
        Cell("001", "jfs, RAID 1 fast + slow", _stack(mirror(), "jfs", drives, "raid1 jfs")),
        Cell("001", "reiserfs, RAID 1 fast + slow", _stack(mirror(), "reiserfs", drives, "raid1 reiserfs")),
        Cell("000", "ext2, LVM over the fast drive", _stack(LinearVolume((_part("vdb"),)), "ext2", fast, "lvm")),
        *(Cell("000", f"ext2, fast drive, {gb} GB partition", _stack(_part("vdb", size=gb * GB), "ext2", fast,
                                                                     f"{gb} GB partition"))
          for gb in PARTITION_GB),
    ]


def _group_002():
    """The multi-disk LVM study: five wd800bd drives (RAID 5 and 6 over the first four), ext4 on striped
    volumes, RAID 5 and thin volumes."""
    five = tuple(("wd800bd", d) for d in GUEST_DISKS[:5])
    drives = five[:4]

    def striped(n: int, chunk: int):
        return StripedVolume(tuple(_part(d) for _, d in five[:n]), stripe_size_bytes=chunk)

    def parity(level: str, n: int):
        data = n - (1 if level == "raid5" else 2)
        return RaidArray(level, tuple(_part(d) for _, d in five[:n]), chunk_size_bytes=64 << 10, tool="md",
                         array_size_bytes=data * (PART_BYTES - MD_OFFSET))

    def thin(chunk: int):
        data = _part("vdb")
        return ThinVolume(data, pool_size_bytes=192 * MIB, virtual_size_bytes=192 * MIB, chunk_size_bytes=chunk,
                          metadata_size_bytes=4 * MIB)

    return [d for d, _ in five], [
        Cell("002", "ext4, 1 drive", _stack(_part("vdb"), "ext4", drives[:1], "1 drive")),
        Cell("002", "ext4, striped over 2 drives, 64 KiB", _stack(striped(2, 64 << 10), "ext4", drives[:2], "stripe2")),
        Cell("002", "ext4, striped over 3 drives, 64 KiB", _stack(striped(3, 64 << 10), "ext4", drives[:3], "stripe3")),
        Cell("002", "ext4, striped over 4 drives, 64 KiB", _stack(striped(4, 64 << 10), "ext4", drives, "stripe4")),
        Cell("002", "ext4, striped over 4 drives, 256 KiB", _stack(striped(4, 256 << 10), "ext4", drives,
                                                                  "stripe4 256k")),
        Cell("002", "ext4, RAID 5 over 4 drives, 64 KiB", _stack(parity("raid5", 4), "ext4", drives, "raid5")),
        Cell("002", "ext4, RAID 6 over 4 drives, 64 KiB", _stack(parity("raid6", 4), "ext4", drives, "raid6")),
        Cell("002", "xfs, 1 drive", _stack(_part("vdb", size=XFS_PART_BYTES), "xfs", drives[:1], "xfs")),
        Cell("002", "ext4, thin volume, 64 KiB pool chunk", _stack(thin(64 << 10), "ext4", drives[:1], "thin 64k")),
        Cell("002", "ext4, thin volume, 1 MiB pool chunk", _stack(thin(1 << 20), "ext4", drives[:1], "thin 1m")),
        # the study's btrfs: b-tree nodes of the 4 KiB block (mkfs.btrfs -n 4096)
        Cell("002", "btrfs, 1 drive", Stack(FileSystemNode(_part("vdb"), kind="btrfs", mkfs_options=("-n", "4096")),
                                            (model_drive("wd800bd", name="vdb"),), "btrfs")),
        Cell("002", "ext4, striped over 5 drives, 64 KiB", _stack(striped(5, 64 << 10), "ext4", five, "stripe5")),
        *(Cell("002", f"ext4, striped over 5 drives, {k} KiB", _stack(striped(5, k << 10), "ext4", five,
                                                                      f"stripe5 {k}k"))
          for k in STRIPE_KIB),
        *(Cell("002", f"ext4, thin volume, {_size(c)} pool chunk", _stack(thin(c), "ext4", drives[:1],
                                                                          f"thin {_size(c)}"))
          for c in THIN_CHUNKS),
        # its Figures 5 and 7: RAID 5 and RAID 6 over five drives
        Cell("002", "ext4, RAID 5 over 5 drives, 64 KiB", _stack(parity("raid5", 5), "ext4", five, "raid5 5")),
        Cell("002", "ext4, RAID 6 over 5 drives, 64 KiB", _stack(parity("raid6", 5), "ext4", five, "raid6 5")),
        # its Figure 11 with its workload's proportions: a file far larger than the pool's chunk
        *(Cell("002", thin_series_label(c), _stack(thin(c), "ext4", drives[:1], f"thin {_size(c)} big"),
               (THIN_SERIES_FILE_BYTES,))
          for c in THIN_SERIES_CHUNKS),
    ]


def thin_series_label(chunk_bytes: int) -> str:
    """The label of the thin series' cell with pool chunks of *chunk_bytes*."""
    return f"ext4, thin volume, {_size(chunk_bytes)} pool chunk, {THIN_SERIES_FILE_BYTES >> 20} MiB file"


def _group_engineer():
    """The engineer's three everyday layouts beside one disk (notebook 09): ext4 on one wd800bd, on
    md RAID 1 over two, on LVM striped over two (64 KiB), and in a VM image (a sparse loop file on
    ext4 on one)."""
    drives = (("wd800bd", "vdb"), ("wd800bd", "vdc"))
    # The guest's Linux 6.1 reads a buffered loop request one page at a time (lo_read_simple).
    image = LoopFile(_part("vdb"), 192 * MIB, allocation="sparse", host_file_system="ext4", direct_io=False,
                     read_segment_bytes=4096)
    return [d for d, _ in drives], [
        Cell("engineer", "ext4, one disk", _stack(_part("vdb"), "ext4", drives[:1], "one disk")),
        Cell("engineer", "ext4, RAID 1 over two disks",
             _stack(RaidArray("raid1", (_part("vdb"), _part("vdc")), tool="md",
                              array_size_bytes=PART_BYTES - MD_OFFSET),
                    "ext4", drives, "raid1")),
        Cell("engineer", "ext4, LVM striped over two disks",
             _stack(StripedVolume((_part("vdb"), _part("vdc")), stripe_size_bytes=64 << 10), "ext4", drives,
                    "striped")),
        Cell("engineer", "ext4, VM image (sparse loop file on ext4)", _stack(image, "ext4", drives[:1], "loop image")),
    ]


#: The multi-disk LVM study's kernel's queue limit (Linux 3.17: BLK_DEF_MAX_SECTORS, 1024 sectors) [KiB].
STUDY_MAX_SECTORS_KB = 512
#: The thin series' chunks measured again at that limit: the last chunk a bio covers and the two after [bytes].
THIN_LIMIT_CHUNKS = (512 << 10, 1 << 20, 2 << 20)


def _group_002_limit():
    """The multi-disk LVM study's thin series (one wd800bd, a 32 MiB file) at three pool chunks with the
    drive's queue limit max_sectors_kb at its kernel's default, set on the partition's device before the
    pool is built (provision: the drive node's field). The model, given the field, predicts the study's
    kernel: dm-thin zero-fills every new chunk from 1 MiB on (io_overwrites_block), not from 2 MiB. The
    guest's Linux 6.1 does the same: device-mapper cuts a bio for dm-thin at the smaller of its block
    and the thin device's max_sectors_kb (dm.c, __max_io_len), stacked from the loop device's."""
    drives = (("wd800bd", "vdb"),)

    def thin(chunk: int):
        return ThinVolume(_part("vdb"), pool_size_bytes=192 * MIB, virtual_size_bytes=192 * MIB,
                          chunk_size_bytes=chunk, metadata_size_bytes=4 * MIB)

    return [d for d, _ in drives], [
        Cell("002", f"{thin_series_label(c)}, max_sectors_kb {STUDY_MAX_SECTORS_KB}",
             _stack(thin(c), "ext4", drives, f"thin {_size(c)} big {STUDY_MAX_SECTORS_KB}k",
                    max_sectors_kb=STUDY_MAX_SECTORS_KB), (THIN_SERIES_FILE_BYTES,))
        for c in THIN_LIMIT_CHUNKS]


#: name -> builder of (drive presets in guest order, cells).
GROUPS = {"000": _group_000, "002": _group_002, "002-limit": _group_002_limit, "engineer": _group_engineer}


def group_script(cells, copy: FileCopy, *, ram_twin: bool = True) -> str:
    """The guest's script: for each cell, the copy on the guest's tmpfs (its pace, tag ``paceN``), then
    (*ram_twin*) the same copy on a twin of the cell's stack over RAM disks (tag ``ramN``: the copy and
    the stack's kernel work, :mod:`~diskmodel.calibrate.bench.ram_twin`), then the cell's stack built,
    the copy run and the stack torn down; each stack in a script of its own (``sh -c``), markers around each."""
    from diskmodel.calibrate.bench.ram_twin import twin_script

    lines = ["set +e", "mkdir -p /tmp/diskmodel-pace"]
    for i, cell in enumerate(cells):
        own = cell_copy(cell, copy)
        lines.append(copy_shell(sh_word("/tmp/diskmodel-pace"), own, tag=f"pace{i}", clock=GUEST_CLOCK))
        if ram_twin:
            twin = twin_script(cell.stack, lambda plan, c=cell, w=own, k=i: _copy_body(
                c, sh_word(Ref(plan.mount_var)), w, f"ram{k}"), per_disk=True, preamble=GUEST_PREAMBLE)
            lines += [f"echo '{_MARK} RAM BEGIN {i}'", f"sh -c {sh_word(twin)}", f'echo "{_MARK} RAM END {i} $?"']
        disks = {d.name: f"/dev/{d.name}" for d in cell.stack.disks}
        plan = L.build_plan(cell.stack, backing="/dev/vdb", disk_backings=disks)
        mnt = sh_word(Ref(plan.mount_var))
        body = _queue_shell(mnt, i) + _marker_shell(i) + _copy_body(cell, mnt, own, f"cell{i}")
        script = plan.render_script(body, preamble=GUEST_PREAMBLE)
        lines += [f"echo '{_MARK} BEGIN {i}'", f"sh -c {sh_word(script)}", f'echo "{_MARK} END {i} $?"']
    # the kernel's own timing of its parity code at boot or at raid456's load (lib/raid6/algos.c,
    # crypto/xor.c): the rate md computes P and Q at on this guest's CPU
    lines.append(f"dmesg 2>/dev/null | grep -E 'raid6: |xor: ' | sed 's/^/{_MARK} DMESG /'")
    lines.append("exit 0")
    return "\n".join(lines) + "\n"


def _copy_body(cell: Cell, mnt: str, copy: FileCopy, tag: str) -> str:
    """The copy in the cell's file system. On a thin volume each repeat is followed by ``fstrim``:
    the removed file's blocks are discarded, so dm-thin unmaps their chunks (process_discard) and
    every repeat's write provisions its chunks anew, as the first did (without it, ext4 places the
    next repeat's file on the chunks the last one provisioned and the repeats measure a
    provisioned volume). The same lines either way (one ``tag``)."""
    if not isinstance(cell.stack.volume, ThinVolume):
        return copy_shell(mnt, copy, tag=tag, clock=GUEST_CLOCK)
    once = FileCopy(file_sizes_bytes=copy.file_sizes_bytes, repeats=1)
    trim = f"fstrim {mnt} || exit 1\n"
    return "".join(copy_shell(mnt, once, tag=tag, clock=GUEST_CLOCK) + trim for _ in range(copy.repeats))


#: The guest's queue settings printed per cell: the file system's device and every device below it.
_QUEUE_FILES = ("read_ahead_kb", "max_sectors_kb", "nr_requests", "optimal_io_size", "scheduler")
#: The first drive's 4 KiB block read (direct) before each cell's copy, a marker the drive's request
#: log shows at a known place (inside the first MiB, below every partition and md's data offset).
MARKER_BLOCK = 64


def _queue_shell(mnt: str, index: int) -> str:
    """Shell printing the queue settings (:data:`_QUEUE_FILES`) of the device mounted at *mnt* and of
    the devices below it (sysfs ``slaves``, recursively), one ``DISKMODEL_STACKS QUEUE`` line per
    device and setting; the device found by its number (``/sys/dev/block/MAJOR:MINOR``), as a
    device-mapper node has no name of its own in the guest's /dev."""
    files = " ".join(_QUEUE_FILES)
    return f"""diskmodel_queue() {{
  for f in {files}; do v=$(cat /sys/class/block/$1/queue/$f 2>/dev/null | tr ' ' _); echo "{_MARK} QUEUE {index} $1 $f $v"; done
  for s in /sys/class/block/$1/slaves/*; do [ -e "$s" ] && diskmodel_queue "$(basename "$s")"; done
}}
diskmodel_src=$(findmnt -no SOURCE {mnt})
diskmodel_queue "$(basename "$(readlink -f /sys/dev/block/$((0x$(stat -L -c %t "$diskmodel_src"))):$((0x$(stat -L -c %T "$diskmodel_src"))))")"
"""


def _marker_shell(index: int) -> str:
    """Shell reading the marker block (:data:`MARKER_BLOCK` + *index*) of the first drive and
    printing the guest's clock before and after, so its request log can be put on the guest's clock."""
    skip = MARKER_BLOCK + index
    return (f"m0=$({GUEST_CLOCK}); dd if=/dev/{GUEST_DISKS[0]} of=/dev/null bs=4096 count=1 skip={skip} "
            f"iflag=direct 2>/dev/null; m1=$({GUEST_CLOCK}); echo \"{_MARK} MARKER {index} {skip * 4096} $m0 $m1\"\n")


def _median_copy(text: str, tag: str):
    """The copy printed under *tag*, each size's times the median of its repeats; None when absent."""
    try:
        return parse_copy_output(text, tag=tag, average=statistics.median)
    except ValueError:
        return None


def parse_group(output: str, cells) -> tuple:
    """The copy on the guest's tmpfs over the whole group (a CopyResult of the medians of every
    cell's tmpfs runs, or None) and, per cell, its CopyResult (each step the median of its
    repeats), spread (:func:`~diskmodel.calibrate.bench.copy.parse_copy_spread`), its own tmpfs
    pace and its copy on its stack's twin over RAM disks (each a CopyResult, or None: the twin's None
    when it did not end with status 0), or the reason it failed."""
    text = output.replace("\r", "")
    paces = [_median_copy(text, f"pace{i}") for i, _ in enumerate(cells)]
    found = [p for p in paces if p is not None]
    found = [p for p in found if p.sizes_bytes == found[0].sizes_bytes]  # a cell's own sizes: not the group's
    pace = None
    if found:
        pace = CopyResult(found[0].sizes_bytes, tuple(statistics.median(v) for v in zip(*(p.write_s for p in found))),
                          tuple(statistics.median(v) for v in zip(*(p.read_s for p in found))),
                          sum(p.repeats for p in found))
    out = []
    for i, _ in enumerate(cells):
        end = re.search(rf"^{_MARK} END {i} (\d+)$", text, re.M)
        if end is None or end.group(1) != "0":
            part = text.split(f"{_MARK} BEGIN {i}")[-1][:1500]
            out.append(f"failed (status {end.group(1) if end else 'none'}): {part.strip()[-600:]}")
            continue
        twin = re.search(rf"^{_MARK} RAM END {i} (\d+)$", text, re.M)
        ram = _median_copy(text, f"ram{i}") if twin is not None and twin.group(1) == "0" else None
        out.append((_median_copy(text, f"cell{i}"), parse_copy_spread(text, tag=f"cell{i}"), paces[i], ram))
    return pace, out


#: The VM's time limit for a group: a base and an allowance per cell (each builds its stack twice, on its twin over
#: RAM disks and on the drives, under TCG) [s].
TIMEOUT_BASE_S, TIMEOUT_PER_CELL_S = 900.0, 300.0


def measure_group(name: str, copy: FileCopy, *, timeout_s: float | None = None, say=None, only: str = "",
                  log_dir=None):
    """Boot the VM once with group *name*'s drives and measure its cells: (cells, the copy on the
    guest's tmpfs over the group, results (:func:`parse_group`'s), the drives' request-log
    summaries, the VM's wall time [s]). *only*:
    ``|``-separated strings, the cells whose labels contain one of them (all when empty; no boot
    when none does); *log_dir*: where the drives' request logs are kept (None: not kept)."""
    from diskmodel.calibrate.emulate.for_vm import run_script_on_emulated_drives

    presets, cells = GROUPS[name]()
    parts = [c for c in only.split("|") if c]
    cells = [c for c in cells if not parts or any(x in c.label for x in parts)]
    if not cells:
        return [], None, [], [], 0.0
    script = group_script(cells, copy)
    if timeout_s is None:
        timeout_s = TIMEOUT_BASE_S + TIMEOUT_PER_CELL_S * len(cells)
    t0 = time.monotonic()
    result, served = run_script_on_emulated_drives(script, presets, say=say, timeout_s=timeout_s,
                                                   memory_bytes=512 << 20, log_dir=log_dir)
    if log_dir is not None:  # the guest's own lines (copy times, markers, queue settings) beside the logs
        (Path(log_dir) / "guest-output.txt").write_text(result.output.replace("\r", ""))
    pace, results = parse_group(result.output, cells)
    if result.returncode != 0 and all(isinstance(r, str) for r in results):
        raise RuntimeError(f"the VM script failed with status {result.returncode}: {result.output[-1500:]}")
    return cells, pace, results, [d.summary for d in served], time.monotonic() - t0


def busy_s(starts, ends) -> float:
    """How long at least one drive is busy [s]: the length of the union of the requests'
    ``[start, end)`` intervals (the drives' own share of a step, whatever the guest did around it)."""
    total, lo, hi = 0.0, None, None
    for a, b in sorted(zip(map(float, starts), map(float, ends))):
        if hi is None or a > hi:
            total += 0.0 if hi is None else hi - lo
            lo, hi = a, b
        else:
            hi = max(hi, b)
    return total + (0.0 if hi is None else hi - lo)


def drive_logs(folder) -> list[str]:
    """The drives' request logs in *folder* in the guest's drive order: by the index the emulator gives each
    (``NAME-INDEX.reqlog``, calibrate/emulate/devices.py), not by name (a slow drive's preset name may sort
    before the first drive's)."""
    import glob

    return sorted(glob.glob(str(Path(folder) / "*.reqlog")), key=lambda p: int(Path(p).stem.rsplit("-", 1)[1]))


def logged_steps(log_dir, cells) -> list:
    """Per cell, from the drives' request logs in *log_dir* and the guest's output kept there
    (:func:`measure_group` with a log folder): each copy step's median over its repeats of the
    guest's time and of the drives' busy time (:func:`busy_s`), ``{"write": {"guest_s", "busy_s"},
    "read": {...}}``; None for a cell whose marker or copy lines are missing. The marker read puts
    each drive's log on the guest's clock (to within the marker read's own time: the clock's two
    readings around it); a request belongs to a step when it reaches its drive within the step's
    window widened by 10 ms either side; reads of a drive's first 128 KiB (the guest's scans of its drives' labels, no
    cell's data: every partition starts at 1 MiB) are left out."""
    import pandas as pd

    from diskmodel.calibrate.emulate.requestlog import read_log

    folder = Path(log_dir)
    text = (folder / "guest-output.txt").read_text()
    frames = []
    for k, path in enumerate(drive_logs(folder)):
        df = read_log(path)
        t0 = float(df.attrs["t0_monotonic_s"])  # each emulator's clock from its own start: one clock for all
        frames.append(pd.DataFrame({"drive": k, "op": df.op, "offset": df.offset_bytes,
                                    "entry": df.entry_s + t0, "done": df.done_s + t0}))
    log = pd.concat(frames).sort_values("entry")
    log = log[~((log.op == 0) & (log.offset < 128 * 1024))]
    out = []
    for i, _ in enumerate(cells):
        mark = re.search(rf"^{_MARK} MARKER {i} (\d+) ([\d.]+) ([\d.]+)$", text, re.M)
        rows = re.findall(rf"^{_COPY_MARK} cell{i} \d+ ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)$", text, re.M)
        hit = log[(log.drive == 0) & (log.op == 0) & (log.offset == int(mark.group(1)))] if mark else log[:0]
        if len(hit) != 1 or not rows:
            out.append(None)
            continue
        shift = float(hit.entry.iloc[0]) - (float(mark.group(2)) + float(mark.group(3))) / 2
        steps = {}
        for name, (a, b) in (("write", (0, 1)), ("read", (2, 3))):
            guest, busy = [], []
            for row in rows:
                lo, hi = float(row[a]) + shift, float(row[b]) + shift
                x = log[(log.entry >= lo - 0.01) & (log.entry <= hi + 0.01)]
                guest.append(hi - lo)
                busy.append(busy_s(x.entry, x.done))
            steps[name] = {"guest_s": statistics.median(guest), "busy_s": statistics.median(busy)}
        out.append(steps)
    return out


def drive_busy(stack, copy: FileCopy, pace: dict, logged) -> dict | None:
    """The drives' busy time per copy step, logged (:func:`logged_steps`' entry for the cell) beside
    the model's (:func:`busy_s` of its timed requests, the step at the cell's pace *pace*: step ->
    seconds): ``{"write": {"measured_busy_s", "predicted_busy_s", "measured_guest_s"}, "read": ...}``
    for the copy's first file size; None without a logged entry. The guest's time minus the drives'
    is the guest's own share of the step (its CPU, under TCG, and its stalls)."""
    if logged is None:
        return None
    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.iopath.workloads_pace import paced
    from diskmodel.model.predict import predict

    size = copy.file_sizes_bytes[0]
    out = {}
    for step in ("write", "read"):
        spec = f"dd:size={size},step={step}"
        ops = parse_workload(spec, sync_at_end=False)
        t = predict(stack, paced(ops, pace[spec]) if pace.get(spec) else ops).timing
        out[step] = {"measured_busy_s": logged[step]["busy_s"], "predicted_busy_s": busy_s(t.start_s, t.completion_s),
                     "measured_guest_s": logged[step]["guest_s"]}
    return out


def logged_of(entry: dict) -> dict:
    """The logged part of a :func:`drive_busy` entry (an earlier artifact's), in
    :func:`logged_steps`' form, to be predicted again."""
    return {step: {"guest_s": v["measured_guest_s"], "busy_s": v["measured_busy_s"]} for step, v in entry.items()}


def pace_steps(pace) -> dict:
    """A tmpfs copy's times (a CopyResult, or None) as the model's pace: workload step -> seconds."""
    if pace is None:
        return {}
    return {f"dd:size={size},step={k}": t for size, w, r in zip(pace.sizes_bytes, pace.write_s, pace.read_s)
            for k, t in (("write", w), ("read", r))}
