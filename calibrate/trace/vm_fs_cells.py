"""The page-cache cells of jfs and reiserfs, traced with blktrace in the throwaway VM.

The host's kernel has neither file system; the VM's (Debian's 6.1) has both as modules
(``/etc/diskmodel/modules.filesystems``), and its initramfs carries ``mkfs.jfs`` (jfsutils) and
``mkreiserfs`` (reiserfsprogs). Each cell runs as the host's page-cache cells do
(:mod:`.fs_cells`): the file system made afresh on the scratch disk ``/dev/vda`` (the whole disk,
:data:`~.fs_cells.DEVICE_BYTES`), what the workload finds made first, then unmounted and mounted again
(which empties the file system's caches and the disk's), then the workload and ``sync`` under
blktrace on ``/dev/vda``, in a 64 MiB memory cgroup (cgroup2's ``memory.max``) when the cell has
one. The guest prints, per cell, the memory the kernel's dirty ratios are of (MemFree plus the
file pages), the disk's ``read_ahead_kb`` and ``max_sectors_kb``, and blkparse's issue lines. The
guest has no Python: the metadata workloads are shell loops (``: > f``, ``stat``, ``rm``), the same
system calls as :mod:`.fs_cells`'s (open with O_CREAT, stat, unlink), and ``cp`` is busybox's.
The guest is throwaway: what a cell makes dies with it.
"""
from __future__ import annotations

import re
import shlex

from diskmodel.calibrate.bench.copy import GUEST_CLOCK
from .blkparse import parse_blkparse_text
from .fs_cells import COPY_BYTES, DEVICE_BYTES, FS_WORKLOADS, MEMORY_LIMITS, SMALL_FILES, FsWorkload

__all__ = ["VM_FS_KINDS", "VM_MKFS", "cells_named", "guest_script", "parse_guest_output", "predict_vm_fs_cell",
           "run_vm_fs_cells", "vm_fs_rows"]

MIB = 1 << 20
#: mkfs's argument vector per kind: Debian's defaults (4 KiB blocks; jfs's log inside the
#: aggregate, reiserfs's journal after the first bitmap), quiet, no question asked.
VM_MKFS = {
    "jfs": ["mkfs.jfs", "-q"],
    "reiserfs": ["mkreiserfs", "-q", "-f", "-f"],
}
VM_FS_KINDS = tuple(VM_MKFS)
MNT = "/mnt/fs"
SCRATCH_BYTES = DEVICE_BYTES


def _words(argv) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def _setup_lines(w: FsWorkload) -> tuple[list[str], str]:
    """(shell lines making what the workload finds, the workload's command line)."""
    if w.kind == "postmark":
        from diskmodel.calibrate.bench.postmark_text import command_file
        from diskmodel.model.predictions.workload import PostMarkConfig

        p = w.params
        config = PostMarkConfig(number_of_files=p["files"], min_file_size_bytes=p["low"],
                                max_file_size_bytes=p["high"], transactions=p["transactions"])
        text = command_file(config, MNT)
        lines = [f"printf '%s\\n' {_words(text.splitlines())} > /tmp/postmark.cfg"]
        return lines, "postmark /tmp/postmark.cfg >/dev/null"
    if w.kind == "fio":
        p = w.params
        argv = ["fio", "--name=job", f"--filename={MNT}/fio.dat", f"--rw={p['rw']}", f"--bs={p['bs']}",
                f"--size={p['size']}", "--ioengine=psync", "--randseed=7", "--output=/dev/null", "--eta=never"]
        return [], _words(argv)
    if w.kind == "copy":
        return ([f"dd if=/dev/urandom of={MNT}/source bs=1M count={COPY_BYTES // MIB} 2>/dev/null"],
                f"cp {MNT}/source {MNT}/copy")
    op = w.params["op"]
    body = {"create": ": > $MNT/f$i", "stat": "stat $MNT/f$i >/dev/null", "delete": "rm $MNT/f$i"}
    loop = f"MNT={MNT}; i=0; while [ $i -lt {SMALL_FILES} ]; do {{body}}; i=$((i+1)); done"
    setup = [loop.replace("{body}", body["create"])] if op != "create" else []
    return setup, loop.replace("{body}", body[op])


def _cell_script(kind: str, w: FsWorkload, memory: str) -> str:
    setup, command = _setup_lines(w)
    limit = MEMORY_LIMITS[memory]
    # the workload's wall time in the guest (its clock before and after it): its pace
    timed = f"S=$({GUEST_CLOCK}); {command}; E=$({GUEST_CLOCK}); echo \"@@ELAPSED $S $E\""
    if limit:
        run = (f"mkdir /sys/fs/cgroup/cell; echo {limit} > /sys/fs/cgroup/cell/memory.max\n"
               f"sh -c 'echo $$ > /sys/fs/cgroup/cell/cgroup.procs; {timed}; sync'\n"
               "echo \"@@OOM $(grep oom_kill /sys/fs/cgroup/cell/memory.events | cut -d' ' -f2)\"")
        teardown = "rmdir /sys/fs/cgroup/cell"
    else:
        run, teardown = f"{timed}; sync", "true"
    nl = "\n"
    return f"""
echo "@@CELL {kind} {w.name} {memory}"
{_words(VM_MKFS[kind])} /dev/vda >/dev/null 2>&1
mount -t {kind} /dev/vda {MNT}
{nl.join(setup)}
umount {MNT}
mount -t {kind} /dev/vda {MNT}
echo "@@DIRTYABLE $(awk '/^(MemFree|Active\\(file\\)|Inactive\\(file\\)):/ {{s += $2}} END {{print s * 1024}}' /proc/meminfo)"
echo "@@RA $(cat /sys/block/vda/queue/read_ahead_kb) $(cat /sys/block/vda/queue/max_sectors_kb)"
rm -rf /tmp/bt; mkdir /tmp/bt
blktrace -D /tmp/bt -d /dev/vda >/dev/null 2>&1 &
BT=$!
sleep 1
{run}
sleep 0.5
kill -INT $BT; wait $BT || true
blkparse -D /tmp/bt -i vda | grep -E '^ *[0-9]+,[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +D ' || true
echo "@@ENDCELL"
{teardown}
umount {MNT}
"""


def guest_script(cells) -> str:
    """The guest's script for *cells* ((kind, FsWorkload, memory name) triples)."""
    head = ("while read -r m; do insmod \"$m\" 2>/dev/null || true; done < /etc/diskmodel/modules.filesystems\n"
            "mount -t debugfs debugfs /sys/kernel/debug\n"
            "echo +memory > /sys/fs/cgroup/cgroup.subtree_control\n"
            f"mkdir -p {MNT}\n")
    return head + "".join(_cell_script(*c) for c in cells) + "\necho '@@ALLDONE'\n"


_CELL = re.compile(r"^@@CELL (\S+) (\S+) (\S+)$")


def parse_guest_output(output: str) -> list[dict]:
    """One dict per cell: kind, workload, memory, dirtyable_bytes, read_ahead_kb, max_sectors_kb, oom,
    ``elapsed_s`` (the workload's wall time in the guest; absent in output of before it was kept) and
    ``trace`` (a BlockTrace whose one device is ``vda``)."""
    out, cur = [], None
    for raw in output.replace("\r", "").splitlines():
        if "@@" in raw[1:]:
            raw = raw[raw.index("@@", 1):]
        m = _CELL.match(raw)
        if m:
            cur = {"kind": m.group(1), "workload": m.group(2), "memory": m.group(3), "events": [], "oom": 0}
            continue
        if cur is None:
            continue
        if raw.startswith("@@DIRTYABLE "):
            cur["dirtyable_bytes"] = int(raw.split()[1])
        elif raw.startswith("@@RA "):
            cur["read_ahead_kb"], cur["max_sectors_kb"] = (int(x) for x in raw.split()[1:3])
        elif raw.startswith("@@ELAPSED "):
            start, end = (float(x) for x in raw.split()[1:3])
            cur["elapsed_s"] = end - start
        elif raw.startswith("@@OOM "):
            cur["oom"] = int(raw.split()[1] or 0) if len(raw.split()) > 1 else 0
        elif raw == "@@ENDCELL":
            src = f"VM cell {cur['kind']}/{cur['workload']}/{cur['memory']}"
            events = cur.pop("events")
            majmin = events[0].split()[0] if events else "254,0"
            cur["trace"] = parse_blkparse_text(events, src, {majmin: "vda"})
            out.append(cur)
            cur = None
        elif re.match(r"^\s*\d+,\d+\s", raw):
            cur["events"].append(raw)
    return out


def run_vm_fs_cells(cells, timeout_s: float = 3000.0) -> str:
    """Boot the VM, run *cells* ((kind, FsWorkload, memory name) triples); the guest's output."""
    from diskmodel.calibrate.bench.vm import run_script_in_vm

    for kind, w, memory in cells:
        if kind not in VM_MKFS:
            raise ValueError(f"file system {kind!r}: not one of {', '.join(VM_MKFS)}")
        if memory not in MEMORY_LIMITS:
            raise ValueError(f"memory {memory!r}: not one of {', '.join(MEMORY_LIMITS)}")
    res = run_script_in_vm(guest_script(cells), scratch_disk_bytes=SCRATCH_BYTES, memory_bytes=1 << 30,
                           timeout_s=timeout_s, log=None)
    if res.returncode != 0:
        raise RuntimeError(f"the VM's script failed (exit {res.returncode}): {res.output.strip()[-300:]}")
    return res.output


def cells_named(kinds=VM_FS_KINDS, workloads=None, memories=tuple(MEMORY_LIMITS)):
    """(kind, FsWorkload, memory) triples of the named workloads (None: all of :data:`FS_WORKLOADS`)."""
    by_name = {w.name: w for w in FS_WORKLOADS}
    chosen = [by_name[n] for n in workloads] if workloads else list(FS_WORKLOADS)
    return [(k, w, m) for k in kinds for w in chosen for m in memories]


def predict_vm_fs_cell(kind: str, workload: str, memory: str, dirtyable_bytes: int, read_ahead_kb: int,
                       elapsed_s: float | None = None):
    """The stream model/iopath predicts for a cell's scratch disk ``vda``: the whole path (page cache
    with the guest's dirtyable memory, the file system with mkfs's journal for the disk's size).
    ``elapsed_s``: the workload's wall time in the guest, whose emulated CPU runs it slower than the
    workloads' pace (:mod:`~diskmodel.model.iopath.fileops`, this host's); its operations are spread
    over that time in proportion, which decides what the timers (write-back, commits) see."""
    from dataclasses import replace

    from diskmodel.model.filesystems.kinds import mkfs_journal_bytes
    from diskmodel.model.iopath import CacheParams, parse_workload, run
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    by_name = {w.name: w for w in FS_WORKLOADS}
    node = FileSystemNode(kind=kind, volume=Partition(0, SCRATCH_BYTES, "vda", "sda"))
    node = replace(node, parameters=replace(node.parameters,
                                            journal_size_bytes=mkfs_journal_bytes(kind, SCRATCH_BYTES)))
    cache = CacheParams(memory_limit_bytes=MEMORY_LIMITS[memory], read_ahead_kb=read_ahead_kb,
                        memory_bytes=dirtyable_bytes)
    ops = parse_workload(by_name[workload].model)
    last = ops.app_end_s
    if elapsed_s is not None:
        if not elapsed_s > 0:
            raise ValueError(f"elapsed_s = {elapsed_s!r} must be > 0")
        if last > 0:
            ops = replace(ops, time_s=ops.time_s * (float(elapsed_s) / last), end_s=float(elapsed_s))
    return run(Stack(node), ops, cache)["vda"]


def vm_fs_rows(kinds, workloads, memories, output_path=None, keep_path=None, timeout_s: float = 3000.0, say=print):
    """iopath_check's rows of the VM's page-cache cells (*output_path*: the guest's output of an
    earlier run, read instead of booting the VM; *keep_path*: where to write the guest's output)."""
    from pathlib import Path

    from .matrix import compare

    if output_path is not None:
        output = Path(output_path).read_text()
    else:
        output = run_vm_fs_cells(cells_named(kinds, [w.name for w in workloads], memories), timeout_s)
        if keep_path is not None:
            Path(keep_path).write_text(output)
    wanted = {(k, w.name, m) for k in kinds for w in workloads for m in memories}
    rows = []
    for c in parse_guest_output(output):
        if (c["kind"], c["workload"], c["memory"]) not in wanted:
            continue
        if c["oom"]:
            raise RuntimeError(f"VM cell {c['kind']}/{c['workload']}/{c['memory']}: {c['oom']} OOM kills")
        pred = predict_vm_fs_cell(c["kind"], c["workload"], c["memory"], c["dirtyable_bytes"], c["read_ahead_kb"],
                                  c.get("elapsed_s"))
        row = {"where": "vm", "stack": f"{c['kind']}_{c['memory']}", "layer": c["kind"], "workload": c["workload"],
               "device": "vda", **compare(pred, c["trace"].devices["vda"].stream)}
        rows.append(row)
        say(f"{c['kind']}-{c['workload']}-{c['memory']} (VM): bytes {row['predicted_bytes']} vs "
            f"{row['measured_bytes']}, requests {row['predicted_requests']} vs {row['measured_requests']}, "
            f"tv {row['size_tv']:.2f}")
    return rows
