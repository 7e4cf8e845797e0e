"""Every block layer (RAID, LVM, thin, loop files) on this machine, against the model from this machine's calibration.

    python benchmarks/layers_check.py [--scratch-dir /var/tmp] [--budget-s 15] [--slow-rate 20M]
        [--vm-slow-rate 4M] [--vm-member-rate 1M] [--vm-member-delay-ms 20] [--repeats 3] [--copy-repeats 2]
        [--no-vm] [--vm-only --results-dir DIR] [--memory-dir /dev/shm]

Needs root (loop devices, mounts, cgroups), fio, btrfs-progs and, for the
VM part, qemu with Debian's kernel (md, LVM).  Method:

1. **Calibrate** this machine's storage with the harness (O_DIRECT reads
   for ``--budget-s``) twice: a fully written scratch file in
   ``--scratch-dir``, and a member as the stacks see it, a direct-I/O loop
   device over such a file.  On flash each gives a flat-latency
   :class:`~diskmodel.model.Disk`
   (:func:`diskmodel.calibrate.bench.hostcheck.disk_from_calibration`).
2. **Each member alone**: fio's jobs on one loop device over the scratch
   (a partition of the stack), unthrottled and throttled to ``--slow-rate``
   bytes/s for reads and writes (cgroup v1 blkio, :mod:`diskmodel.calibrate.bench.blkio`).
   Each member's Disks ("fast", "slow") are flat-latency Disks from its own
   fio figures, a request's time a + S / R through two points (the mean
   4 KiB random latency and the time of a 1 MiB sequential request): one
   Disk of its reads, one of its writes (the host's storage acknowledges
   writes from its cache, at another pace), the write jobs of every layer
   predicted on the latter.  A throttled member is the same device behind
   blkio's token bucket, which passes a small request at the device's pace:
   its fixed cost a is the unthrottled member's and R comes from its 1 MiB
   job.  These are the members' calibrations, the Disks of every layer
   above; their rows are shown but left out of the median error.  Every row is also
   predicted with the harness's calibrations as the fast Disk, of a member
   (column ``harness%``) and of the scratch file itself (column ``file%``),
   since the calibrations differ where the loop worker's hand-off (a thread
   wake-up per request) costs more under fio's one-request-at-a-time
   stream than in the harness's batches.
2b. **The layers' own costs, on a null device**: the same fio jobs on a
   member over a file in memory (``--memory-dir``, tmpfs: a "memory member",
   its Disks made as in 2), and a first sequential write through one
   buffered loop layer (sparse image) on it.  Where the device costs almost
   nothing, what a layer measures beyond the model of the same stack without
   the layer's own cost is that cost: a buffered loop layer's per-byte cost
   of a write (the copy into the image's page cache
   *and* its write-back, which a bare buffered write does not pay: the
   loop layers' ``copy_rate_bytes_per_s``).  These costs are CPU work,
   which the shared host's load moves by up to twice from run to run: each
   is the median of at least 5 runs.  These rows are calibration rows.
3. **Layers on the host** (loop and btrfs; this kernel has no md or
   device-mapper): btrfs RAID 1 over a fast and a slow member, btrfs RAID 0
   over two fast members (two regions of one scratch file: the stack says
   they share one device, ``sda``, and the model serves pieces on one device
   together), loop files over sparse images nested 0 to 3 deep
   (fio on the bare device; the write is each image's first, ``fresh``),
   and the loop-image study's copy on native ext3 and on ext3 in a loop file over a
   sparse and over a zero-filled image (host ext4, buffered loop).
4. **Layers in the VM** (unless ``--no-vm``): md RAID 1 (unthrottled, and with
   one member throttled to ``--vm-slow-rate`` by the guest's cgroup v2
   ``io.max``, compared with the unthrottled mirror and the throttle's
   rate), md RAID 5 and an LVM
   thin volume (random writes of one pool chunk each, so that every request
   of the first pass allocates a chunk, then the same job again: the
   overwrite).  Under TCG the timings measure an emulator: these rows give
   orderings only; their errors are printed for completeness and left out
   of the median.  Unthrottled, md RAID 5 computes its parity in the
   emulated CPU, which bounds its writes, whereas the multi-disk LVM study's disks bounded
   theirs: so md RAID 1 and RAID 5 run again with **every member a
   disk-like device**: a fixed delay per request of ``--vm-member-delay-ms``
   (a device-mapper ``delay`` target under each member, below md:
   ``slow_disks``' ``delay_s``) and a rate of ``--vm-member-rate``
   (``io.max``; md's kernel threads join the throttle's cgroup, since RAID
   5's member I/O is theirs), both of which the emulated CPU outpaces (the
   jobs, ``VM_THROTTLED_*_BYTES``, take seconds at the defaults).  Such a
   row is device-bound when it runs at most ``DEVICE_BOUND_FRACTION`` of
   the same job on the same array
   unthrottled (:func:`device_bound`), and the multi-disk LVM study's RAID 5 vs RAID 1
   orderings are decided on these rows, held only when device-bound
   (:func:`parity_orderings`); the unthrottled rows stay printed, as TCG's
   pace.  The model's members are then throttled Disks (the fio member's
   fixed cost plus the delay, the throttle's rate: :func:`throttled_disk`;
   the mirror's one throttled member has no delay), and each ordering
   prints the model's ratio next to the measured one.  The delay is what
   makes the members disks: ``io.max`` alone is a token bucket per
   direction, under which a request waits only when its direction's budget
   is spent, so md's read before a small write would cost no device time,
   where on a disk (and in the model) it costs one access.  dm-delay's
   timer counts in the guest kernel's ticks (1/HZ), which is why the default delay
   is several of them.
   ``--vm-only`` runs the calibrations, the member's Disks and this part
   alone, a check that writes its partial artifact to ``--results-dir``.
Each host stack is built and measured ``--repeats`` times (afresh, so a
first write stays a first write) and each rate is the median of the
repeats: on a shared host the load varies from run to run.

5. **Predict** each (layer, workload) with :func:`diskmodel.model.predict.predict`
   on the same stack, its disks the calibrated ones, and what the host has
   where the model asks for it: the loop layers' read-ahead window and
   write-back depth are a live loop device's ``read_ahead_kb`` and
   ``nr_requests`` (each run's loop devices are checked against it and any
   difference printed), their copy rate on a write is measured on memory
   (2b) and on a read from the cache
   (:func:`~diskmodel.calibrate.bench.layers_bench.page_cache_copy_rate`), and
   their dirty limit is the host's (``vm.dirty_bytes`` or ``vm.dirty_ratio``
   of the memory available); the copy's read-ahead window is the same, its
   copy rate the page cache's on a write (a buffered write of a new file).  fio's write jobs end with fsync (``FioJob.end_fsync``), as the
   model assumes.  btrfs's pid read policy sends each fio process to one
   mirror: which one is observed from the members' I/O counters during the
   job (the one most repeats used) and given to the model
   (``RaidArray.read_member``).  Every other parameter is the model's
   default.  Error = predicted / measured - 1 [%].

The studies' findings are checked as orderings (each printed with its
figures): RAID 1 writes track the slower member and reads the faster
(Dagenais; btrfs on the host, md in the VM), each nested loop layer lowers throughput (Dagenais, fig. 5), native
ext3 writes about twice as fast as loop-file writes with reads alike (seed
003: write ratio >= 1.5, read ratio within 1/1.5..1.5), RAID 5 small writes
slower than RAID 1's while large sequential ones are not (at least
``LARGE_WRITE_FRACTION`` of RAID 1's) (the multi-disk LVM study; md with every member
throttled, device-bound rows only), the first write into a thin pool slower than an
overwrite (the multi-disk LVM study).  The last two lines are ``orderings_held: K/N`` and
``median_layer_error_pct: X`` (median |error| of the host rows, calibration
rows excluded).  Writes ``benchmarks/results/layers_check.json``.

**Revised after seeing its figure.** The first runs' median was above the
target (docs/benchmarks.md has the figure); after seeing it three model changes were made, each a
physical term whose value comes from a measurement independent of the row
it predicts: members on one device share it (RAID 0 here is two regions of
one scratch file), btrfs's data-path costs (since dropped: btrfs RAID is now
timed through its file system's chunks, as the I/O path maps them), and a loop
layer's write cost measured on memory (2b) in place of a bare buffered write's
copy rate; and one measurement change: longer fio jobs (``SEQ_BYTES``, ``RAND_BYTES``).
Reads before each fio job come from the device: the body syncs and drops
the page cache first (every loop image's pages too), which the members'
counters show.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402
from _layers_members import (  # noqa: E402  (split out of this script; its tests reach them here)
    DEVICE_BOUND_FRACTION, LARGE_WRITE_FRACTION, _closer, _flat, _predicted, _read_mirror,
    _stripe_on_one_device, calibrate_member, copy_pace, device_bound, member_disk, parity_orderings, throttled_disk)

from diskmodel.calibrate.bench.hostcheck import calibrate_storage, disk_from_calibration  # noqa: E402
from diskmodel.calibrate.bench.layers_bench import dirty_limit_bytes, measure_stack, page_cache_copy_rate  # noqa: E402
from diskmodel.calibrate.harness import runstate  # noqa: E402
from diskmodel.model.predictions.block_workloads import FileCopy, FioJob  # noqa: E402
from diskmodel.model.drive.drives import InMemoryDrive  # noqa: E402
from diskmodel.model.stacks.loop_file import LoopFile, nested_loop_files  # noqa: E402
from diskmodel.model.stacks.raid import RaidArray  # noqa: E402
from diskmodel.model.stacks.stack import FileSystemNode, Stack  # noqa: E402
from diskmodel.model.stacks.thin import ThinVolume  # noqa: E402
from diskmodel.model.units import GIB, KIB, MIB  # noqa: E402
from diskmodel.model.stacks.volumes import Partition  # noqa: E402

# fio jobs long enough to outlast a scheduling hiccup of the shared host (a 64 MiB read took 60 ms):
# 256 MiB sequential, 32 MiB random; btrfs's copy-on-write needs room for a second copy of the file
# (128 MiB in a 512 MiB file system); a throttled member moves less (64 MiB at 20 MB/s is 3 s)
SEQ_BYTES = 256 * MIB
RAND_BYTES = 32 * MIB
BTRFS_SEQ_BYTES = 128 * MIB
THROTTLED_BYTES = {"seq_bytes": 64 * MIB, "rand_bytes": 8 * MIB}
VM_SEQ_BYTES = 32 * MIB
VM_RAND_BYTES = 4 * MIB
# the device-bound md arrays (every member delayed by --vm-member-delay-ms and throttled to --vm-member-rate):
# seconds each at the defaults (512 small writes of one or two delays each; RAID 1's large writes at the rate,
# RAID 5's full-stripe writes at about twice it)
VM_THROTTLED_SEQ_BYTES = 4 * MIB
VM_THROTTLED_RAND_BYTES = 2 * MIB


def _size(text: str) -> int:
    units = {"K": KIB, "M": MIB, "G": GIB}
    t = text.strip().upper()
    return int(t[:-1]) * units[t[-1]] if t[-1:] in units else int(t)


def _jobs(seq_bytes=SEQ_BYTES, rand_bytes=RAND_BYTES, *, fresh_writes=False) -> list[FioJob]:
    return [FioJob("write", MIB, seq_bytes, fresh=fresh_writes), FioJob("read", MIB, seq_bytes),
            FioJob("randwrite", 4 * KIB, rand_bytes), FioJob("randread", 4 * KIB, rand_bytes)]


class Check:
    """The rows, orderings and measurements of one run, and what it printed."""

    def __init__(self, args):
        self.args = args
        self.rows: list[dict] = []
        self.orderings: list[dict] = []
        self.measured: dict = {}
        self.lines: list[str] = []
        self.scratch_n = 0
        self.harness_disk = self.fast = None   # the harness's member Disk; the fio one once measured
        self.file_disk = None                  # the harness's Disk of the scratch file itself
        self.loop_fields: dict = {}            # what the host's page cache and loop queues are (LoopFile fields)
        self.read_ahead_bytes = 128 * KIB      # a loop device's read-ahead window, as the host has it
        self.write_disks: dict = {}            # id(a member's Disk of its reads) -> the Disk of its writes
        self.page_copy_rate = None             # the page cache's copy rate on a write (the copy's workload)
        self.copy_pace: dict = {}              # each copy step's time on a tmpfs (stacks_check.pace_on_tmpfs)

    def say(self, line: str = "") -> None:
        self.lines.append(line)
        print(line, flush=True)

    def scratch(self, directory: str | None = None) -> str:
        self.scratch_n += 1
        return os.path.join(directory or self.args.scratch_dir, f"diskmodel-layers-{os.getpid()}-{self.scratch_n}.img")

    def run(self, layer: str, stack: Stack, workloads, *, vm=False, slow=None, calibration: str | None = None,
            unthrottled=None, observed=None, directory: str | None = None, calibration_of_layer: bool = False,
            repeats: int | None = None):
        """Measure *workloads* on *stack* and predict them; one row per rate.

        calibration: a name for the member Disk made of these very measurements
        (:func:`member_disk`: one Disk of its reads, and one of its writes, kept
        in ``write_disks``; *unthrottled*: the same device's Disk without the
        throttle, whose fixed costs a throttled member keeps); the stack's disk
        becomes it and the rows are marked as calibration rows. observed: (stack, measurement) -> the stack
        with what the measurement observed of the host's hidden state (which
        mirror btrfs's pid policy chose). directory: where the scratch file goes (default
        ``--scratch-dir``). repeats: host runs (default ``--repeats``). calibration_of_layer: the rows
        measure a layer's own cost (on memory): marked as calibration rows, and the result is
        {label: (measured, predicted)}. Returns the rates by workload label (and the Disk, with
        *calibration*).
        """
        t0 = time.monotonic()
        # on the host, the stack is built afresh for each repeat (a fresh job's first write stays a first
        # write) and each rate is the median of the repeats: a loaded 2-core host varies run to run
        runs = [measure_stack(stack, workloads, slow_disks=slow, **({"vm": True} if vm else
                                                                    {"scratch": self.scratch(directory)}))
                for _ in range(1 if vm else repeats or self.args.repeats)]
        results = [dataclasses.replace(
            first, rates={k: statistics.median(run[i].rates[k] for run in runs) for k in first.rates},
            details={**first.details, "mean_latency_s": statistics.median(
                run[i].details.get("mean_latency_s", 0.0) for run in runs), "repeats": len(runs)})
            for i, first in enumerate(runs[0])]
        for run in runs:     # the loop devices' queues as the host set them, against what the model was given
            for var, q in run[0].details.get("queues", {}).items():
                if q["read_ahead_kb"] * KIB != self.read_ahead_bytes:
                    self.say(f"  note: {var} had read_ahead_kb {q['read_ahead_kb']}, the model "
                             f"{self.read_ahead_bytes // KIB}")
        disk, given = None, stack     # given: the stack as called, its fast Disk the one the harness stands in for
        if calibration is not None:
            fixed = (None, None) if unthrottled is None else \
                (unthrottled.command_overhead_s, self.write_disks[id(unthrottled)].command_overhead_s)
            disk = member_disk(results, calibration, fixed[0])
            self.write_disks[id(disk)] = member_disk(results, f"{calibration}, writes", fixed[1], writes=True)
            stack = stack.evolve(disks=(InMemoryDrive(disk, stack.disks[0].name),))
            for what, d in (("reads", disk), ("writes", self.write_disks[id(disk)])):
                self.say(f"{calibration}: Disk of its {what}: fixed cost {d.command_overhead_s * 1e6:.0f} µs per "
                         f"request, rate {d.zone_rates_bytes_per_s()[0] / 1e6:.1f} MB/s")
        out = {}
        for i, m in enumerate(results):
            repeats = [run[i] for run in runs]
            seen, seen_given = ((observed(st, repeats) if observed is not None else st) for st in (stack, given))
            # the same stack with the harness's calibrations (of a member, of the file) as the fast Disk
            harness, on_file = (seen_given.evolve(disks=tuple(InMemoryDrive(other if d.disk is self.fast else d.disk,
                                                                            d.name) for d in seen_given.disks))
                                for other in (self.harness_disk, self.file_disk))
            predicted, by_harness, by_file = (self.predicted(seen, m.workload), self.plain(harness, m.workload),
                                              self.plain(on_file, m.workload))
            for name, value in m.rates.items():
                label = m.label if name == "throughput_bytes_per_s" else f"copy {name.split('_')[0]}"
                if isinstance(m.workload, FioJob) and m.workload.fresh:
                    label += " (fresh)"
                row = {"layer": layer, "workload": label, "measured_bytes_per_s": value,
                       "predicted_bytes_per_s": predicted.get(name),
                       **{key: 100.0 * (p[name] / value - 1.0) for key, p in
                          (("error_pct", predicted), ("harness_error_pct", by_harness), ("file_error_pct", by_file))},
                       "where": m.where, "accelerator": m.accelerator,
                       "calibration": calibration is not None or calibration_of_layer,
                       "read_member": getattr(seen.volume, "read_member", None)}
                self.rows.append(row)
                out[label] = (value, predicted[name]) if calibration_of_layer else value
                tag = " (calibration)" if calibration or calibration_of_layer else " (TCG)" if m.emulated else ""
                if row["read_member"] is not None:
                    tag += f" (reads on member {row['read_member']}, observed)"
                self.say(f"{layer:<30} {label:<20} {value / 1e6:>9.2f} {predicted[name] / 1e6:>9.2f} "
                         f"{row['error_pct']:>+8.1f} {row['harness_error_pct']:>+8.1f} "
                         f"{row['file_error_pct']:>+8.1f}{tag}")
        self.measured[layer] = out
        self.say(f"{'':<30} ({time.monotonic() - t0:.0f} s)")
        return (out, disk) if calibration is not None else out

    def plain(self, stack: Stack, workload, writing: Stack | None = None) -> dict:
        """:func:`_predicted`, the copy's steps at their pace on a tmpfs (:attr:`copy_pace`)."""
        return _predicted(stack, workload, self.copy_pace, writing)

    def predicted(self, stack: Stack, workload) -> dict:
        """:meth:`plain`, the writes on the members' Disks of their writes (:attr:`write_disks`)."""
        writing = stack.evolve(disks=tuple(InMemoryDrive(self.write_disks.get(id(d.disk), d.disk), d.name)
                                           for d in stack.disks))
        if isinstance(workload, FileCopy):
            return self.plain(stack, workload, writing)
        reads = _predicted(stack, workload)
        writes = _predicted(writing, workload)
        if isinstance(workload, FioJob):
            return writes if workload.is_write else reads
        return {"write_bytes_per_s": writes["write_bytes_per_s"], "read_bytes_per_s": reads["read_bytes_per_s"]}

    def ordering(self, name: str, held: bool, detail: str, **extra) -> None:
        self.orderings.append({"ordering": name, "held": bool(held), "detail": detail, **extra})
        self.say(f"  {'held' if held else 'NOT held'}: {name} ({detail})")

    def throttled_member(self, rate_bytes_per_s: float, delay_s: float = 0.0):
        """The Disk of a member throttled to *rate_bytes_per_s* (reads and writes; :func:`throttled_disk`
        with the fio member's fixed costs plus *delay_s*, a dm-delay under the member in the VM), its
        writes' Disk registered in :attr:`write_disks`."""
        name = f"member throttled to {rate_bytes_per_s:g} bytes/s" + (f", delayed {delay_s * 1e3:g} ms"
                                                                      if delay_s else "")
        reads = throttled_disk(self.fast.command_overhead_s + delay_s, rate_bytes_per_s, name)
        self.write_disks[id(reads)] = throttled_disk(self.write_disks[id(self.fast)].command_overhead_s + delay_s,
                                                     rate_bytes_per_s, f"{name}, writes")
        return reads


def null_device_part(c: Check) -> None:
    """The layers' own costs where the device costs almost nothing: every stack over a file in memory
    (``--memory-dir``, tmpfs), its members' Disks calibrated there too; a layer's cost is what it measured
    beyond the model of the same stack without that cost (:meth:`Check.run` rows, calibration rows)."""
    mem = c.args.memory_dir
    # CPU-bound: a burst of the shared host's load moves one run by 2x; the median of at least 5
    repeats = max(5, c.args.repeats)
    member = Stack(FileSystemNode(Partition(MIB, 256 * MIB), kind="ext3"), (InMemoryDrive(c.harness_disk, "sda"),),
                   "memory member")
    c.say(f"-- the layers' own costs, on memory ({mem}): a memory member, one loop layer")
    _, disk = c.run("memory member", member, _jobs(), calibration="memory member (fio)", directory=mem,
                    repeats=repeats)
    free = {**c.loop_fields, "copy_rate_bytes_per_s": math.inf}
    loop = LoopFile(Partition(MIB, 512 * MIB), 448 * MIB, allocation="sparse", host_file_system="ext4", **free)
    loop_stack = Stack(FileSystemNode(loop, kind="ext3"), (InMemoryDrive(disk, "sda"),), "loop on memory")
    m = c.run("loop file x1 on memory", loop_stack, [FioJob("write", MIB, SEQ_BYTES, fresh=True)],
              calibration_of_layer=True, directory=mem, repeats=repeats)
    per_byte = 1 / m["seqwrite_1m (fresh)"][0] - 1 / m["seqwrite_1m (fresh)"][1]
    if per_byte <= 0:
        raise RuntimeError("a buffered loop layer on memory measured no slower than the model without its copy; "
                           "rerun on a quieter host")
    c.loop_fields["copy_rate_bytes_per_s"] = 1 / per_byte
    c.say(f"a buffered loop layer's writes (the copy into the image's page cache and its write-back): "
          f"{per_byte * 1e9:.2f} ns per byte ({1 / per_byte / 1e9:.2f} GB/s; the bare copy: "
          f"{c.page_copy_rate / 1e9:.2f} GB/s)")


def member_part(c: Check):
    """Each member alone, unthrottled: its rates, and its Disks (``c.fast`` and its writes'); and the stack."""
    alone = Stack(FileSystemNode(Partition(MIB, 256 * MIB), kind="ext3"), (InMemoryDrive(c.harness_disk, "sda"),),
                  "member")
    c.say("-- each member alone (fio on the bare loop device): the members' Disks")
    fast_m, c.fast = c.run("member", alone, _jobs(), calibration="member (fio)")
    return fast_m, alone


def host_part(c: Check) -> None:
    rate = c.args.slow_rate
    slow_limits = {"read_bytes_per_s": rate, "write_bytes_per_s": rate}
    fast_m, alone = member_part(c)
    slow_m, slow = c.run("member (throttled)", alone, _jobs(**THROTTLED_BYTES), slow={"sda": slow_limits},
                         calibration=f"member throttled to {rate} bytes/s (fio)", unthrottled=c.fast)

    c.say("-- btrfs RAID 1 (fast sda, throttled sdb) and RAID 0 (two fast members), fio on a file")
    two = (Partition(MIB, 256 * MIB, disk="sda"), Partition(MIB, 256 * MIB, disk="sdb"))
    mirror = Stack(FileSystemNode(RaidArray("raid1", two, tool="btrfs"), kind="btrfs"),
                   (InMemoryDrive(c.fast, "sda"), InMemoryDrive(slow, "sdb")), "btrfs raid1")
    r1 = c.run("btrfs RAID 1 (fast + slow)", mirror, _jobs(**THROTTLED_BYTES), slow={"sdb": slow_limits},
               observed=_read_mirror)
    c.run("btrfs RAID 0 (fast + fast, one device)", _stripe_on_one_device(c.fast),
          _jobs(BTRFS_SEQ_BYTES))
    c.ordering("RAID 1 writes track the slower member (Dagenais)",
               _closer(r1["seqwrite_1m"], slow_m["seqwrite_1m"], fast_m["seqwrite_1m"]),
               f"mirror {r1['seqwrite_1m'] / 1e6:.1f} MB/s; members {fast_m['seqwrite_1m'] / 1e6:.1f} and "
               f"{slow_m['seqwrite_1m'] / 1e6:.1f}")
    c.ordering("RAID 1 reads track the faster member (Dagenais)",
               _closer(r1["seqread_1m"], fast_m["seqread_1m"], slow_m["seqread_1m"]),
               f"mirror {r1['seqread_1m'] / 1e6:.1f} MB/s; members {fast_m['seqread_1m'] / 1e6:.1f} and "
               f"{slow_m['seqread_1m'] / 1e6:.1f} (btrfs reads by pid: one mirror per process)")

    c.say("-- loop files over sparse images, nested 0..3 deep (fio on the bare device; first writes)")
    base = Partition(MIB, 512 * MIB)
    depth_rates = []
    for depth in range(4):
        node = nested_loop_files(base, depth, allocation="sparse", host_file_system="ext4", **c.loop_fields)
        stack = Stack(FileSystemNode(node, kind="ext3"), (InMemoryDrive(c.fast, "sda"),), f"loop x{depth}")
        m = c.run(f"loop file x{depth} (sparse)", stack, _jobs(rand_bytes=RAND_BYTES, fresh_writes=depth > 0)[:2])
        depth_rates.append((m.get("seqwrite_1m (fresh)", m.get("seqwrite_1m")), m["seqread_1m"]))
    for i, what in enumerate(("writes", "reads")):
        values = [r[i] for r in depth_rates]
        c.ordering(f"each nested loop layer lowers {what} (Dagenais, fig. 5)",
                   all(b < a for a, b in zip(values, values[1:])),
                   " > ".join(f"{v / 1e6:.0f}" for v in values) + " MB/s at depth 0..3")

    c.say("-- the loop-image study's copy: native ext3, ext3 on a loop file over a sparse / zero-filled image")
    copy = FileCopy(repeats=c.args.copy_repeats, read_request_bytes=c.read_ahead_bytes,
                    copy_rate_bytes_per_s=c.page_copy_rate)
    with runstate.ensure_run("layers_check: the copy's pace on tmpfs") as run:
        c.copy_pace = copy_pace(run, copy)
    c.say("the copy's steps on tmpfs: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in sorted(c.copy_pace.items())))
    native = Stack(FileSystemNode(Partition(MIB, 512 * MIB), kind="ext3"), (InMemoryDrive(c.fast, "sda"),), "native")
    n = c.run("native ext3", native, [copy])
    for allocation in ("sparse", "zero_filled"):
        loop = LoopFile(Partition(MIB, 512 * MIB), 448 * MIB, allocation=allocation, host_file_system="ext4",
                        **c.loop_fields)
        stack = Stack(FileSystemNode(loop, kind="ext3"), (InMemoryDrive(c.fast, "sda"),), f"loop {allocation}")
        m = c.run(f"ext3 on loop file ({allocation})", stack, [copy])
        w, r = n["copy write"] / m["copy write"], n["copy read"] / m["copy read"]
        c.ordering(f"native ext3 writes about twice as fast as on a {allocation} loop file (the loop-image study)", w >= 1.5,
                   f"native / loop write = {w:.2f}")
        c.ordering(f"native ext3 reads alike on a {allocation} loop file (the loop-image study)", 1 / 1.5 <= r <= 1.5,
                   f"native / loop read = {r:.2f}")


def vm_arrays(disk) -> tuple[Stack, Stack]:
    """The VM's md RAID 1 (members on sda, sdb) and md RAID 5 (sda, sdb, sdc; 64 KiB chunks), 128 MiB
    members, every disk *disk*; ext3 on each (fio runs on the bare array)."""
    drives = tuple(InMemoryDrive(disk, d) for d in ("sda", "sdb", "sdc"))
    members = tuple(Partition(MIB, 128 * MIB, disk=d) for d in ("sda", "sdb", "sdc"))
    mirror = RaidArray("raid1", members[:2], tool="md", array_size_bytes=127 * MIB)
    parity = RaidArray("raid5", members, tool="md", chunk_size_bytes=64 * KIB, array_size_bytes=2 * 127 * MIB)
    return (Stack(FileSystemNode(mirror, kind="ext3"), drives[:2], "md raid1"),
            Stack(FileSystemNode(parity, kind="ext3"), drives, "md raid5"))


def vm_part(c: Check) -> None:
    c.say("-- in the VM under TCG (timings measure an emulator: orderings only)")
    mirror_stack, parity_stack = vm_arrays(c.fast)
    drives = parity_stack.disks
    jobs = [FioJob("randwrite", 4 * KIB, VM_RAND_BYTES), FioJob("write", MIB, VM_SEQ_BYTES)]
    r1 = c.run("md RAID 1", mirror_stack, [*jobs, FioJob("read", MIB, VM_SEQ_BYTES)], vm=True)
    # md's read_balance with a member throttled in the guest (cgroup v2 io.max): compared with the
    # same mirror unthrottled (the fast pair) and with the throttle's rate (the slow member)
    rate = c.args.vm_slow_rate
    seq = [FioJob("write", MIB, VM_SEQ_BYTES // 4), FioJob("read", MIB, VM_SEQ_BYTES)]
    one_slow = mirror_stack.evolve(disks=(drives[0], InMemoryDrive(c.throttled_member(rate), "sdb")))
    r1s = c.run("md RAID 1 (sdb throttled)", one_slow, seq, vm=True,
                slow={"sdb": {"read_bytes_per_s": rate, "write_bytes_per_s": rate}})
    c.ordering("md RAID 1 writes track the slower member (Dagenais)",
               _closer(r1s["seqwrite_1m"], rate, r1["seqwrite_1m"]),
               f"mirror {r1s['seqwrite_1m'] / 1e6:.1f} MB/s; throttle {rate / 1e6:.1f}, unthrottled mirror "
               f"{r1['seqwrite_1m'] / 1e6:.1f} (TCG)")
    c.ordering("md RAID 1 reads track the faster member (Dagenais)",
               _closer(r1s["seqread_1m"], r1["seqread_1m"], rate),
               f"mirror {r1s['seqread_1m'] / 1e6:.1f} MB/s; unthrottled mirror {r1['seqread_1m'] / 1e6:.1f}, "
               f"throttle {rate / 1e6:.1f} (TCG)")
    # unthrottled, the emulated CPU bounds RAID 5 (its parity computed in an emulated CPU): these rows show
    # TCG's pace, the device-bound rows below are the orderings' basis
    r5 = c.run("md RAID 5", parity_stack, jobs, vm=True)
    c.say(f"  unthrottled (TCG-bound): RAID 5 / RAID 1 small writes {r5['randwrite_4k'] / r1['randwrite_4k']:.2f}, "
          f"large writes {r5['seqwrite_1m'] / r1['seqwrite_1m']:.2f} (not the orderings' basis)")
    # device-bound, as the multi-disk LVM study's disks were: every member of both arrays a disk-like device, a fixed delay per
    # request (dm-delay) and a rate (io.max) that the emulated CPU outpaces; the model's members: throttled
    # Disks whose fixed cost is the fio member's plus the delay
    member_rate, delay_s = c.args.vm_member_rate, c.args.vm_member_delay_ms / 1000
    limits = {"read_bytes_per_s": member_rate, "write_bytes_per_s": member_rate, "delay_s": delay_s}
    bound_jobs = [FioJob("randwrite", 4 * KIB, VM_THROTTLED_RAND_BYTES), FioJob("write", MIB, VM_THROTTLED_SEQ_BYTES)]
    measured, predicted = {}, {}
    for kind, stack in zip(("raid1", "raid5"), vm_arrays(c.throttled_member(member_rate, delay_s))):
        label = f"md RAID {kind[4:]} (delayed+throttled)"
        measured[kind] = c.run(label, stack, bound_jobs, vm=True, slow={d.name: limits for d in stack.disks})
        predicted[kind] = {j.label: c.predicted(stack, j)["throughput_bytes_per_s"] for j in bound_jobs}
    for o in parity_orderings(measured, predicted, {"raid1": r1, "raid5": r5}, member_rate, delay_s):
        c.ordering(o.pop("ordering"), o.pop("held"), o.pop("detail"), **o)
    thin = ThinVolume(Partition(MIB, 256 * MIB), 128 * MIB, 256 * MIB, metadata_size_bytes=4 * MIB)
    # one pool chunk per request, so that every request of the first pass allocates one (FioJob.fresh)
    first = FioJob("randwrite", thin.chunk_size_bytes, 2 * VM_RAND_BYTES, fresh=True)
    t = c.run("LVM thin volume", Stack(FileSystemNode(thin, kind="ext3"), drives[:1], "thin"),
              [first, first.evolve(fresh=False)], vm=True)
    c.ordering("the first write into a thin pool is slower than an overwrite (the multi-disk LVM study)",
               t["randwrite_64k (fresh)"] < t["randwrite_64k"],
               f"first {t['randwrite_64k (fresh)'] / 1e6:.2f} vs overwrite {t['randwrite_64k'] / 1e6:.2f} MB/s (TCG)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scratch-dir", default="/var/tmp")
    ap.add_argument("--budget-s", type=float, default=15.0, help="device time of the calibration [s]")
    ap.add_argument("--slow-rate", type=_size, default=20 * MIB,
                    help="throttle of the slow member, reads and writes [bytes/s] (default 20M)")
    ap.add_argument("--vm-slow-rate", type=_size, default=4 * MIB,
                    help="throttle of the slow member in the VM, reads and writes [bytes/s] (default 4M)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="host runs of each stack and workload; each rate is their median (default 3)")
    ap.add_argument("--copy-repeats", type=int, default=2, help="copies of each file size (the loop-image study: 10)")
    ap.add_argument("--vm-member-rate", type=_size, default=1 * MIB,
                    help="throttle of every member of the device-bound md RAID 1 and RAID 5 in the VM, reads and "
                         "writes [bytes/s] (default 1M)")
    ap.add_argument("--vm-member-delay-ms", type=int, default=20,
                    help="fixed delay per request (dm-delay) under every member of the device-bound md RAID 1 "
                         "and RAID 5 in the VM, whole ms (default 20: several of the guest's 4 ms ticks)")
    ap.add_argument("--no-vm", action="store_true", help="skip the VM part (md, LVM)")
    ap.add_argument("--vm-only", action="store_true",
                    help="a check of the VM part: the calibrations and the member's Disks, then the VM part, no "
                         "other host layer (no median error; needs --results-dir: it is no run of record)")
    ap.add_argument("--memory-dir", default="/dev/shm",
                    help="a memory file system (tmpfs) for the layers' own costs (default /dev/shm)")
    add_results_dir_option(ap)
    args = ap.parse_args(argv)
    if args.vm_only and args.no_vm:
        ap.error("--vm-only runs the VM part: leave out --no-vm")
    if args.vm_member_delay_ms <= 0:
        ap.error(f"--vm-member-delay-ms must be > 0 (got {args.vm_member_delay_ms})")
    if args.vm_only and args.results_dir is None:
        ap.error("--vm-only needs --results-dir: its partial artifact is no run of record")
    if os.geteuid() != 0:
        print("needs root (loop devices, mounts, cgroups)", file=sys.stderr)
        return 2
    c = Check(args)
    start = time.monotonic()
    try:
        with runstate.ensure_run("layers_check: calibrate the storage"):
            on_file = calibrate_storage(args.scratch_dir, 1 * GIB, args.budget_s)
        c.say(f"calibration of a scratch file: flat latency {on_file.latency_model.mean_s * 1e6:.1f} µs per 4 KiB "
              f"read, rate {1 / on_file.latency_model.per_byte_s / 1e6:.0f} MB/s (harness, O_DIRECT, "
              f"{args.scratch_dir})")
        c.file_disk = disk_from_calibration(on_file, 4 * GIB)
        result, loop_queue = calibrate_member(args.scratch_dir, 1 * GIB, args.budget_s)
        rates = page_cache_copy_rate(args.scratch_dir)
        c.page_copy_rate = rates["write_bytes_per_s"]
        c.read_ahead_bytes = loop_queue["read_ahead_kb"] * KIB
        c.loop_fields = {"readahead_bytes": c.read_ahead_bytes, "writeback_queue_depth": loop_queue["nr_requests"],
                         "copy_rate_bytes_per_s": rates["write_bytes_per_s"],
                         "read_copy_rate_bytes_per_s": rates["read_bytes_per_s"],
                         "dirty_limit_bytes": dirty_limit_bytes()}
        c.say(f"the host's page cache and loop queues: read_ahead_kb {loop_queue['read_ahead_kb']}, nr_requests "
              f"{loop_queue['nr_requests']}, dirty limit {c.loop_fields['dirty_limit_bytes'] / GIB:.1f} GiB, copy "
              f"{rates['write_bytes_per_s'] / 1e9:.2f} GB/s on a write, {rates['read_bytes_per_s'] / 1e9:.2f} GB/s "
              "on a read from the cache")
        c.harness_disk = c.fast = disk_from_calibration(result, 4 * GIB)
        lm = result.latency_model
        c.say(f"calibration of a member (direct-I/O loop device over a scratch file): flat latency "
              f"{lm.mean_s * 1e6:.1f} µs per 4 KiB read, rate {1 / lm.per_byte_s / 1e6:.0f} MB/s: the 'harness' Disk")
        c.say(f"{'layer':<30} {'workload':<20} {'meas MB/s':>9} {'pred MB/s':>9} {'error %':>8} {'harness%':>8} {'file%':>8}")
        if args.vm_only:
            member_part(c)
        else:
            null_device_part(c)
            host_part(c)
        if not args.no_vm:
            vm_part(c)
    except KeyboardInterrupt as exc:
        print(f"{exc or 'interrupted'}: everything built was torn down", file=sys.stderr)
        return 130
    host = [r for r in c.rows if r["where"] == "host" and not r["calibration"] and r["error_pct"] is not None]
    # --vm-only measures no host layer: no median (nan; the artifact's figure is None)
    median, median_harness, median_file = (statistics.median(abs(r[k]) for r in host) if host else math.nan
                                           for k in ("error_pct", "harness_error_pct", "file_error_pct"))
    held = sum(o["held"] for o in c.orderings)
    if not args.no_vm:
        c.say("note: the VM rows ran under TCG; their timings measure an emulator and count for orderings only")
    c.say(f"median |error| of the host rows with the harness's calibration of a member as the members' Disk: "
          f"{median_harness:.1f} %; of the scratch file: {median_file:.1f} %")
    c.say(f"orderings_held: {held}/{len(c.orderings)}")
    c.say(f"median_layer_error_pct: {median:.1f}")
    figures = {
        "median_layer_error_pct": figure(median, "%", f"median |error| of the {len(host)} host (layer, workload) "
                                                      "rows the I/O path times, "
                                                      "members' Disks from fio, calibration rows excluded", decimals=1,
                                         headline=True, target=25.0),
        "median_layer_error_harness_pct": figure(median_harness, "%", "the same, the harness's calibration of a "
                                                 "member as the members' Disk", decimals=1),
        "median_layer_error_file_pct": figure(median_file, "%", "the same, the harness's calibration of the "
                                              "scratch file as the members' Disk", decimals=1),
        "orderings_held": figure(held, "count", f"seed orderings held, of {len(c.orderings)}", decimals=0,
                                 headline=True),
        "orderings_checked": figure(len(c.orderings), "count", "seed orderings checked", decimals=0),
        "calibrated_latency_us": figure(lm.mean_s * 1e6, "µs", "calibrated flat latency of a 4 KiB read on a "
                                        "member (direct-I/O loop device)", decimals=1),
        "file_latency_us": figure(on_file.latency_model.mean_s * 1e6, "µs", "calibrated flat latency of a 4 KiB "
                                  "read on the scratch file itself", decimals=1),
        "wall_s": figure(time.monotonic() - start, "s", "wall time of the check", decimals=0),
    }
    write_result("layers_check", figures, options=options_of(ap, args), results_dir=args.results_dir,
                 details={"rows": c.rows, "orderings": c.orderings, "printed": c.lines},
                 notes=(["VM rows ran under TCG: orderings only"] if not args.no_vm else [])
                 + (["--vm-only: the VM part and the calibrations it needs, no host layer"] if args.vm_only else []))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
