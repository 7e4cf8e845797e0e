"""The host's page-cache cells of the I/O path's check: a file system (ext2, ext3, ext4, xfs, btrfs)
on a loop device, a workload that goes through the page cache (PostMark, buffered fio, ``cp``, the
creation, stat or deletion of many small files), with or without a memory cgroup holding the page
cache to a named size, traced with blktrace on the loop device.

The prediction of a cell is a function of (file system, workload, memory limit): the workload's
:class:`~diskmodel.model.iopath.fileops.FileOps` (:func:`~diskmodel.model.iopath.parse_workload` of
its ``model`` string) through model/iopath's whole path (:func:`diskmodel.model.iopath.run`: page
cache, file system, the loop device's queue), read-ahead as the traced device's ``read_ahead_kb``.

Each cell makes its file system afresh on its own loop device (recorded in the run before it is
made, torn down by the run). What a workload finds on the device when it starts (the file ``cp``
copies, the files a stat or delete workload visits) is made first, then the file system is
unmounted and mounted again, which empties its page cache, inode cache and the loop device's buffer
cache (the last close of a block device drops its pages: block/bdev.c, blkdev_flush_mapping) without
dropping the whole machine's caches. The traced command runs the workload then ``sync(2)`` (the
model's workloads end with a sync), inside the memory cgroup when the cell has one.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from .host_cells import _image, _loop, _run
from .record import record

__all__ = ["FsWorkload", "FS_WORKLOADS", "FS_KINDS", "MEMORY_LIMITS", "files_workload", "fio_workload", "run_fs_cell",
           "predict_fs_cell"]

MIB = 1 << 20
DEVICE_BYTES = 1 << 30
#: btrfs on 1 GiB mixes data and metadata in its chunks (mkfs.btrfs's small-volume default) and
#: flushes delayed allocation as soon as metadata reservations outgrow its little free space
#: (fs/btrfs/space-info.c, flush_space: FLUSH_DELALLOC): on a large device neither happens.
BTRFS_DEVICE_BYTES = 16 << 30


def device_bytes(kind: str) -> int:
    return BTRFS_DEVICE_BYTES if kind == "btrfs" else DEVICE_BYTES

#: mkfs's argument vector for each kind (4 KiB blocks; ext's inode tables and journal written by
#: mkfs, not by ext4lazyinit in the background of a trace).
MKFS = {
    "ext2": ["mkfs.ext2", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0"],
    "ext3": ["mkfs.ext3", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "ext4": ["mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
}
FS_KINDS = tuple(MKFS)

#: Memory limits of the cells: none, and a cgroup of 64 MiB.
MEMORY_LIMITS = {"nolimit": None, "cg64m": 64 * MIB}

# The traced command: argv[1] is the workload's argument vector's length, then the workload's argv,
# then sync(2); the exit status is the workload's.
_THEN_SYNC = ("import os, subprocess, sys; n = int(sys.argv[1]); "
              "r = subprocess.run(sys.argv[2:2 + n], stdin=subprocess.DEVNULL).returncode; os.sync(); sys.exit(r)")

# Many small files in one directory: argv[1] the operation (create, stat, delete), argv[2] the
# directory, argv[3] how many. Files are named f0, f1, ... and created empty.
_SMALL_FILES = ("import os, sys; op, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
                "for i in range(n):\n"
                "    p = os.path.join(d, 'f%d' % i)\n"
                "    if op == 'create': os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))\n"
                "    elif op == 'stat': os.stat(p)\n"
                "    else: os.unlink(p)\n")


# Files written whole: argv[1] the directory, argv[2] how many, argv[3] their bytes (one write(2) each),
# argv[4] seconds from one file's start to the next's (0: at once). Files are named f0, f1, ...
_WRITE_FILES = ("import os, sys, time; d, n, s, gap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), "
                "float(sys.argv[4]); data = b'x' * s; t0 = time.monotonic()\n"
                "for i in range(n):\n"
                "    fd = os.open(os.path.join(d, 'f%d' % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)\n"
                "    os.write(fd, data); os.close(fd)\n"
                "    time.sleep(max(0.0, t0 + (i + 1) * gap - time.monotonic()))\n")


@dataclass(frozen=True)
class FsWorkload:
    """A page-cache workload: its name, the model's workload string, and what runs it for real."""

    name: str
    model: str
    kind: str  # postmark, fio, copy, metadata, files
    params: dict


def _postmark(name: str, files: int, low: int, high: int, transactions: int) -> FsWorkload:
    spec = f"postmark:files={files},low={low},high={high},transactions={transactions}"
    return FsWorkload(name, spec, "postmark", {"files": files, "low": low, "high": high, "transactions": transactions})


def files_workload(files: int, file_bytes: int, gap_s: float = 0.0) -> FsWorkload:
    """*files* files of *file_bytes* written whole into the root, one every *gap_s* seconds (0: at once);
    the model's workload is the metadata create of as many files of that size (the pace is the caller's:
    :func:`~diskmodel.model.iopath.workloads_pace.paced` to ``files * gap_s``)."""
    spec = f"metadata:op=create,files={files},file_bytes={file_bytes}"
    return FsWorkload(f"files_{files}x{file_bytes}", spec, "files",
                      {"files": files, "file_bytes": file_bytes, "gap_s": gap_s})


def fio_workload(rw: str, bs: str, size: str, direct: bool = False) -> FsWorkload:
    """One fio job (the real fio, psync, seeded) on a file of *size* in the root; *direct*: O_DIRECT."""
    d = ",direct=1" if direct else ""
    return FsWorkload(f"fio_{rw}_{bs}{'_direct' if direct else ''}", f"fio:rw={rw},bs={bs},size={size}{d}", "fio",
                      {"rw": rw, "bs": bs, "size": size, "direct": direct})


SMALL_FILES = 2000
COPY_BYTES = 32 * MIB

#: PostMark's tests scaled to run in seconds (test1 and test2: files that fit in 64 MiB; test3:
#: files that do not), buffered fio, cp and the metadata workloads.
FS_WORKLOADS = (
    _postmark("postmark_test1", 500, 1024, 102400, 4000),
    _postmark("postmark_test2", 3000, 1, 1024, 4000),
    _postmark("postmark_test3", 400, 102400, 307200, 1500),
    fio_workload("write", "1m", "32M"),
    fio_workload("write", "4k", "32M"),
    fio_workload("randwrite", "4k", "16M"),
    fio_workload("read", "1m", "32M"),
    fio_workload("randread", "4k", "16M"),
    FsWorkload("copy", f"copy:size={COPY_BYTES // MIB}M", "copy", {}),
    *(FsWorkload(f"metadata_{op}", f"metadata:op={op},files={SMALL_FILES}", "metadata", {"op": op})
      for op in ("create", "stat", "delete")),
)


def _mount(run, dev: str, where: Path, options: tuple[str, ...] = ()):
    res = run.intend("mount", mountpoint=str(where))
    _run(["mount", *(["-o", ",".join(options)] if options else []), dev, str(where)])
    run.created(res)
    return res


def _umount(run, where: Path, res) -> None:
    _run(["umount", str(where)])
    run.absent(res)


def _setup(w: FsWorkload, mnt: Path, folder: Path) -> list[str]:
    """Make what the workload finds on the device; return its argument vector."""
    if w.kind == "postmark":
        from diskmodel.calibrate.bench.postmark_text import command_file
        from diskmodel.model.predictions.workload import PostMarkConfig

        p = w.params
        cfg = folder / "postmark.cfg"
        config = PostMarkConfig(number_of_files=p["files"], min_file_size_bytes=p["low"],
                                max_file_size_bytes=p["high"], transactions=p["transactions"])
        cfg.write_text(command_file(config, mnt))
        return ["postmark", str(cfg)]
    if w.kind == "fio":
        p = w.params
        return ["fio", "--name=job", f"--filename={mnt / 'fio.dat'}", f"--rw={p['rw']}", f"--bs={p['bs']}",
                f"--size={p['size']}", *(["--direct=1"] if p.get("direct") else []), "--ioengine=psync",
                "--randseed=7", "--output=/dev/null", "--eta=never"]
    if w.kind == "files":
        p = w.params
        return [sys.executable, "-c", _WRITE_FILES, str(mnt), str(p["files"]), str(p["file_bytes"]), str(p["gap_s"])]
    if w.kind == "copy":
        _run(["dd", "if=/dev/urandom", f"of={mnt / 'source'}", "bs=1M", f"count={COPY_BYTES // MIB}"])
        return ["cp", str(mnt / "source"), str(mnt / "copy")]
    # In the root directory, as PostMark's files: a new top-level directory's group is Orlov's random
    # pick (fs/ext4/ialloc.c, find_group_orlov), a file's is its directory's.
    if w.params["op"] != "create":
        _run([sys.executable, "-c", _SMALL_FILES, "create", str(mnt), str(SMALL_FILES)])
    return [sys.executable, "-c", _SMALL_FILES, w.params["op"], str(mnt), str(SMALL_FILES)]


def trace_workload(run, devs: list[str], folder: Path, w: FsWorkload, mount_options: tuple[str, ...],
                   memory: str, label: str, text_copy: Path | None = None):
    """The BlockTrace of *devs* while workload *w* runs on the file system of *devs* (mounted from the first,
    with *mount_options*, at ``folder/mnt``): what it finds made first, then unmounted and mounted again so
    that it starts with empty caches, then traced with ``sync(2)`` after it, in a memory cgroup of
    *memory*'s limit where it has one. A failed workload or an OOM kill in the cgroup is an error naming
    *label*. *text_copy*: where to keep blkparse's text too."""
    from diskmodel.calibrate.bench.memory_cgroup import MemoryCgroup

    mnt = folder / "mnt"
    mnt.mkdir()
    res = _mount(run, devs[0], mnt, mount_options)
    argv = _setup(w, mnt, folder)
    _umount(run, mnt, res)  # empties the file system's caches and the device's (see the module docstring)
    _mount(run, devs[0], mnt, mount_options)
    limit = MEMORY_LIMITS[memory]
    cgroup = MemoryCgroup(limit, name=f"diskmodel-iopath-{os.getpid()}") if limit else None
    if cgroup is not None:
        cgroup.create()
    try:
        traced = [sys.executable, "-c", _THEN_SYNC, str(len(argv)), *argv]
        trace, status = record(traced, devs, say=lambda line: None, text_copy=text_copy,
                               cgroup_procs=cgroup.procs_file if cgroup is not None else None)
        oom = cgroup.oom_kills() if cgroup is not None else 0
    finally:
        if cgroup is not None:
            cgroup.remove()
    if status != 0 or oom:
        raise RuntimeError(f"{argv[0]} failed on {label} (exit {status}, {oom} OOM kills)")
    return trace


def run_fs_cell(kind: str, w: FsWorkload, memory: str, mount_options: tuple[str, ...] = ()):
    """(BlockTrace, the traced device's name, its read_ahead_kb) of one cell; the file system mounted
    with *mount_options* (each one option, e.g. ``data=journal``)."""
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.interrupts import handle_signals

    if kind not in MKFS:
        raise ValueError(f"file system {kind!r}: not one of {', '.join(MKFS)}")
    if memory not in MEMORY_LIMITS:
        raise ValueError(f"memory {memory!r}: not one of {', '.join(MEMORY_LIMITS)}")
    # A signal (SIGTERM, SIGHUP, ...) raises inside, so the run tears the cell down.
    with handle_signals(), runstate.ensure_run(f"iopath check cell {kind}/{w.name}/{memory}") as run:
        folder = run.temp_dir("fscell-")
        dev = _loop(run, _image(folder / "image", device_bytes(kind), zero=False))
        _run(MKFS[kind] + [dev])
        trace = trace_workload(run, [dev], folder, w, mount_options, memory, f"{kind}/{w.name}/{memory}")
        name = os.path.basename(dev)
        ra_kb = int(Path(f"/sys/block/{name}/queue/read_ahead_kb").read_text())
    return trace, name, ra_kb


def predict_fs_cell(kind: str, w: FsWorkload, memory: str, device: str, read_ahead_kb: int,
                    mount_options: tuple[str, ...] = ()):
    """The stream model/iopath predicts for the cell's loop device."""
    from diskmodel.model.iopath import CacheParams, FsParams, parse_workload, run
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    node = FileSystemNode(kind=kind, volume=Partition(0, device_bytes(kind), device, "sda"),
                          mount_options=tuple(mount_options))
    if kind in ("ext3", "ext4"):
        # mke2fs's journal for the device's size (ext2fs_default_journal_size), not the kind's default.
        journal = FsParams(kind, DEVICE_BYTES).journal_blocks * 4096
        node = replace(node, parameters=replace(node.parameters, journal_size_bytes=journal))
    stack = Stack(node)
    # the traced device's read-ahead; btrfs reads ahead by its own bdi (model/iopath/read_ahead.py)
    cache = CacheParams(memory_limit_bytes=MEMORY_LIMITS[memory], memory_bytes=_dirtyable_bytes(),
                        read_ahead_kb=None if kind == "btrfs" else read_ahead_kb)
    return run(stack, parse_workload(w.model), cache)[device]


def _dirtyable_bytes() -> int:
    """The memory the kernel's dirty ratios are of: free and file-backed pages
    (mm/page-writeback.c, global_dirtyable_memory), read from /proc/meminfo."""
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        info[key] = int(rest.split()[0]) * 1024
    return info["MemFree"] + info["Active(file)"] + info["Inactive(file)"]
