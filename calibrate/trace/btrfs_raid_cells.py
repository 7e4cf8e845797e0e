"""The host's btrfs raid0 and raid1 cells of the I/O path's check: one btrfs over two loop devices,
data and metadata both of the profile (``mkfs.btrfs -d P -m P``), under the page-cache workloads of
:mod:`.fs_cells`, both loop devices traced with blktrace.

As in :mod:`.fs_cells`, each cell makes its file system afresh (every image, loop device and mount
recorded in the run before it is made, torn down by the run), makes what the workload finds, unmounts
and mounts again (empty caches), then traces the workload and ``sync(2)``. A cell also keeps the
process id of its reader: the task that queued the most bytes of reads on the members (blkparse's
``Q`` events carry the submitting task's pid), which raid1's read policy takes the mirror by
(find_live_mirror); None where nothing was read.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

from .fs_cells import FS_WORKLOADS, MEMORY_LIMITS, FsWorkload, trace_workload
from .host_cells import _image, _loop, _run

__all__ = ["RAID_PROFILES", "MEMBER_BYTES", "btrfs_raid_rows", "run_btrfs_raid_cell", "predict_btrfs_raid_cell",
           "reader_pid"]

RAID_PROFILES = ("raid0", "raid1")
MEMBER_BYTES = 8 << 30  # each loop device (sparse); two of them


# blkparse's event line: device, cpu, sequence, time, pid, action, rwbs, sector + sectors
_QUEUED = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+[\d.]+\s+(\d+)\s+Q\s+(\S+)\s+\d+\s*\+\s*(\d+)")


def reader_pid(blkparse_text: str) -> int | None:
    """The pid that queued the most sectors of reads in blkparse's text (None: no read queued)."""
    sectors: Counter = Counter()
    for line in blkparse_text.splitlines():
        m = _QUEUED.match(line)
        if m and "R" in m.group(2):
            sectors[int(m.group(1))] += int(m.group(3))
    return max(sectors, key=lambda pid: (sectors[pid], -pid)) if sectors else None


def run_btrfs_raid_cell(profile: str, w: FsWorkload, memory: str = "nolimit"):
    """(BlockTrace of both loop devices, [their names], read_ahead_kb of the first, the reader's pid)."""
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.interrupts import handle_signals

    if profile not in RAID_PROFILES:
        raise ValueError(f"profile {profile!r}: not one of {', '.join(RAID_PROFILES)}")
    if memory not in MEMORY_LIMITS:
        raise ValueError(f"memory {memory!r}: not one of {', '.join(MEMORY_LIMITS)}")
    with handle_signals(), runstate.ensure_run(f"iopath check cell btrfs {profile}/{w.name}/{memory}") as run:
        folder = run.temp_dir("btrfsraid-")
        devs = [_loop(run, _image(folder / f"image{k}", MEMBER_BYTES, zero=False)) for k in range(2)]
        _run(["mkfs.btrfs", "-q", "-f", "-d", profile, "-m", profile, *devs])
        text = folder / "blkparse.txt"
        trace = trace_workload(run, devs, folder, w, (f"device={devs[1]}",), memory,
                               f"btrfs {profile}/{w.name}/{memory}", text_copy=text)
        names = [os.path.basename(d) for d in devs]
        ra_kb = int(Path(f"/sys/block/{names[0]}/queue/read_ahead_kb").read_text())
        pid = reader_pid(text.read_text()) if text.exists() else None
    return trace, names, ra_kb, pid


def predict_btrfs_raid_cell(profile: str, w: FsWorkload, memory: str, names, pid: int | None = None):
    """{device name: Stream} model/iopath predicts for the two loop devices (*pid*: the reader's): the
    stack's I/O path (:func:`diskmodel.model.iopath.path.run`) over one btrfs array of the two devices."""
    from diskmodel.calibrate.trace.fs_cells import _dirtyable_bytes
    from diskmodel.model.drive.drives import PresetDrive
    from diskmodel.model.iopath import CacheParams, parse_workload
    from diskmodel.model.iopath.path import run
    from diskmodel.model.stacks.raid import RaidArray
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    # btrfs reads ahead by its own bdi, not by the devices' read_ahead_kb (model/iopath/read_ahead.py)
    cache = CacheParams(memory_limit_bytes=MEMORY_LIMITS[memory], memory_bytes=_dirtyable_bytes())
    # each loop device whole, as a partition of a drive of its name (the drive's model is not asked for)
    members = tuple(Partition(0, MEMBER_BYTES, f"{n}-whole", disk=n) for n in names)
    # raid1 reads from the mirror the reader's pid picks (find_live_mirror: pid % copies)
    array = RaidArray(profile, members, tool="btrfs",
                      read_member=pid % len(members) if pid is not None and profile == "raid1" else None)
    stack = Stack(FileSystemNode(array, kind="btrfs"), tuple(PresetDrive("wd800bd", n) for n in names))
    streams = run(stack, parse_workload(w.model), cache)
    return {n: streams[n] for n in names}


def workloads_named(names):
    by_name = {w.name: w for w in FS_WORKLOADS}
    return [by_name[n] for n in names]


def btrfs_raid_rows(profiles, workloads, memories, from_dir=None, keep_dir=None, say=print):
    """iopath_check's rows of the btrfs raid cells, one per cell and loop device; a cell's trace is
    read from *from_dir* when kept there (``PROFILE-WORKLOAD-MEMORY.npz`` and ``.json``), else run
    (and kept in *keep_dir* when given)."""
    import json

    from diskmodel.calibrate.trace import load_trace, save_trace

    from .matrix import compare

    rows = []
    for profile in profiles:
        for w in workloads:
            for memory in memories:
                stem = f"{profile}-{w.name}-{memory}"
                src = Path(from_dir) if from_dir else None
                if src is not None and (src / f"{stem}.json").exists():
                    trace = load_trace(src / f"{stem}.npz")
                    info = json.loads((src / f"{stem}.json").read_text())
                    names, ra_kb, pid = info["devices"], info["read_ahead_kb"], info.get("reader_pid")
                else:
                    trace, names, ra_kb, pid = run_btrfs_raid_cell(profile, w, memory)
                    if keep_dir is not None:
                        folder = Path(keep_dir)
                        folder.mkdir(parents=True, exist_ok=True)
                        save_trace(trace, folder / f"{stem}.npz")
                        (folder / f"{stem}.json").write_text(
                            json.dumps({"devices": names, "read_ahead_kb": ra_kb, "reader_pid": pid}))
                pred = predict_btrfs_raid_cell(profile, w, memory, names, pid)
                for k, dev in enumerate(names):
                    meas = trace.devices[dev].stream if dev in trace.devices else pred[dev].take(slice(0, 0))
                    rows.append({"where": "host", "stack": f"btrfs_{profile}_{memory}", "layer": f"btrfs_{profile}",
                                 "workload": w.name, "device": f"member{k}", **compare(pred[dev], meas)})
                say(f"btrfs {stem}: done")
    return rows
