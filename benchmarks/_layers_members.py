"""The members of ``layers_check.py``'s stacks as the model sees them: a calibrated member, a flat or throttled
one, whether a throttled run was bound by its device, RAID 5 against RAID 1 orderings where it was, a mirror's
reads, a stripe over one device, and an affine cost from two request sizes. Split from ``layers_check.py`` (a
script, kept under the house's 600 lines), which imports them into its own namespace."""
from __future__ import annotations

import math
import os
from pathlib import Path

from diskmodel.calibrate.harness import runstate
from diskmodel.model.drive.disk import flat_latency_disk
from diskmodel.model.drive.drives import InMemoryDrive
from diskmodel.model.predict import predict
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.predictions.block_workloads import FileCopy, FioJob
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.volumes import Partition
from diskmodel.model.units import GIB, KIB, MIB

#: The multi-disk LVM study's large sequential writes: RAID 5's "not slower" than RAID 1's, at least this fraction of them.
LARGE_WRITE_FRACTION = 0.9
#: A throttled row in the VM is device-bound when the throttle, not the emulated CPU, sets its pace: the
#: member's time per byte at least the emulator's, so at most this fraction of the same job's rate on the
#: same array unthrottled (where the emulator alone sets it).
DEVICE_BOUND_FRACTION = 0.5


def calibrate_member(scratch_dir: str, size_bytes: int, budget_s: float):
    """The harness's calibration of a member as the stacks see it: a direct-I/O loop device over a
    fully written scratch file (the loop worker's hand-off included), read with O_DIRECT; and that loop
    device's queue ({"read_ahead_kb", "nr_requests"}), set as every host layer's is
    (``queue_defaults``: a fresh disk's, not what the loop number's earlier use left)."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.host_executor import HostExecutor
    from diskmodel.calibrate.harness.device import open_backend
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.scratch import prepare_scratch

    stack = Stack(FileSystemNode(Partition(MIB, size_bytes), kind="ext3"))
    path = os.path.join(scratch_dir, f"diskmodel-layers-cal-{os.getpid()}.img")
    with runstate.ensure_run("layers_check: calibrate a member"), \
            prepare_scratch(path, L.backing_bytes_required(stack)) as scratch, \
            HostExecutor(L.build_plan(stack, backing=scratch.path, file_system=False, queue_defaults=True)) as ex:
        queue = Path("/sys/block", os.path.basename(os.path.realpath(ex.device)), "queue")
        loop_queue = {name: int((queue / name).read_text()) for name in ("read_ahead_kb", "nr_requests")}
        backend = open_backend(ex.device)
        try:
            return calibrate(backend, budget_s=budget_s, progress=False), loop_queue
        finally:
            backend.close()


def copy_pace(run, copy) -> dict:
    """Each copy step's own time on a tmpfs (``dd``'s process, its calls and copies, where no device is
    involved): the model's clock for the copy's steps, as ``stacks_check.py`` measures it."""
    from stacks_check import pace_on_tmpfs

    return pace_on_tmpfs(run, copy, [])


def _predicted(stack: Stack, workload, pace: dict | None = None, writing: Stack | None = None) -> dict:
    """The rates of *workload* on *stack* (its writes on *writing* if given); the copy's steps at *pace*."""
    if isinstance(workload, FileCopy) and pace:
        from stacks_check import predicted_copy

        p = predicted_copy({"write": writing or stack, "read": stack}, workload, pace)
        return {"write_bytes_per_s": p["copy write"], "read_bytes_per_s": p["copy read"]}
    prediction = predict(writing or stack, workload)
    if isinstance(workload, FioJob):
        return {"throughput_bytes_per_s": prediction.throughput_bytes_per_s}
    return {"write_bytes_per_s": prediction.write_bytes_per_s, "read_bytes_per_s": prediction.read_bytes_per_s}


def member_disk(results, name: str, fixed_s: float | None = None, *, writes: bool = False):
    """A member's flat-latency Disk from its own fio figures, two points of a request's time a + S / R:
    the mean 4 KiB random-read latency, and the time of a 1 MiB sequential read (1 MiB over the job's
    rate). R is the slope between them, so that the Disk's 1 MiB read takes what fio measured (the
    1 MiB rate itself as R would count the fixed cost twice).  writes: the same of the write jobs (the
    host's storage acknowledges writes from its cache, at another pace than reads).

    fixed_s: a member throttled in bytes/s (blkio) is the same device behind a token bucket, which lets
    a small request through at the device's pace and holds the stream to the throttle's rate, so its
    4 KiB point says nothing of R: then a is the device's own fixed cost *fixed_s* (the unthrottled
    member's) and R is from the 1 MiB point alone."""
    by = {m.label: m for m in results}
    small_job, large_job = ("randwrite_4k", "seqwrite_1m") if writes else ("randread_4k", "seqread_1m")
    large_s = MIB / by[large_job].rates["throughput_bytes_per_s"]
    if fixed_s is not None:
        if large_s <= fixed_s:
            raise RuntimeError(f"{name}: a 1 MiB request ({large_s * 1e6:.0f} µs) took no longer than the device's "
                               f"fixed cost ({fixed_s * 1e6:.0f} µs)")
        return throttled_disk(fixed_s, MIB / (large_s - fixed_s), name)
    small_s = by[small_job].details["mean_latency_s"]
    if large_s <= small_s:
        raise RuntimeError(f"{name}: a 1 MiB request ({large_s * 1e6:.0f} µs) measured no slower than a 4 KiB one "
                           f"({small_s * 1e6:.0f} µs); no transfer rate follows (rerun on a quieter host)")
    return _flat(small_s, (MIB - 4 * KIB) / (large_s - small_s), name)


def _flat(latency_s: float, rate_bytes_per_s: float, name: str):
    return flat_latency_disk(latency_s, rate_bytes_per_s, 4 * GIB, name=name)


def throttled_disk(fixed_s: float, rate_bytes_per_s: float, name: str):
    """A member behind a bytes/s throttle (blkio on the host, io.max in the VM) as a flat-latency Disk: a
    request of S bytes takes the device's own fixed cost *fixed_s* plus S / *rate_bytes_per_s* (the
    model's a + S / R, as :func:`member_disk` makes a throttled member)."""
    if not (isinstance(fixed_s, (int, float)) and math.isfinite(fixed_s) and fixed_s >= 0):
        raise ValueError(f"fixed_s must be a finite number >= 0 [s] (got {fixed_s!r})")
    if not (isinstance(rate_bytes_per_s, (int, float)) and math.isfinite(rate_bytes_per_s) and rate_bytes_per_s > 0):
        raise ValueError(f"rate_bytes_per_s must be a finite number > 0 (got {rate_bytes_per_s!r})")
    return _flat(fixed_s + 4 * KIB / rate_bytes_per_s, rate_bytes_per_s, name)


def device_bound(throttled_bytes_per_s: float, unthrottled_bytes_per_s: float) -> bool:
    """Whether a throttled VM row is device-bound: at most :data:`DEVICE_BOUND_FRACTION` of the same job's
    rate on the same array unthrottled (under TCG the emulated CPU sets the unthrottled pace)."""
    for name, value in (("throttled_bytes_per_s", throttled_bytes_per_s),
                        ("unthrottled_bytes_per_s", unthrottled_bytes_per_s)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0 (got {value!r})")
    return throttled_bytes_per_s <= DEVICE_BOUND_FRACTION * unthrottled_bytes_per_s


def parity_orderings(measured: dict, predicted: dict, unthrottled: dict, rate_bytes_per_s: float,
                     delay_s: float = 0.0) -> list[dict]:
    """The multi-disk LVM study's RAID 5 vs RAID 1 orderings on md arrays whose members are all throttled to one rate
    (and, *delay_s* > 0, delayed by that much per request: dm-delay).

    *measured*, *predicted* (the model, members as :func:`throttled_disk`) and *unthrottled* (the same
    arrays unthrottled: the emulator's pace) map "raid1" and "raid5" to {"randwrite_4k", "seqwrite_1m"}
    rates [bytes/s]. Small writes: RAID 5's slower than RAID 1's; large sequential writes: RAID 5's at
    least :data:`LARGE_WRITE_FRACTION` of RAID 1's. An ordering is held when the measured rates show it
    *and* both rows are device-bound (:func:`device_bound`): a pace set by the emulated CPU says nothing
    of the multi-disk LVM study's disks. Returns [{"ordering", "held", "model_held", "device_bound", "detail"}].
    """
    checks = (("randwrite_4k", "RAID 5 small writes slower than RAID 1's (the multi-disk LVM study)", lambda r5, r1: r5 < r1),
              ("seqwrite_1m", "RAID 5 large sequential writes not slower than RAID 1's (the multi-disk LVM study)",
               lambda r5, r1: r5 >= LARGE_WRITE_FRACTION * r1))
    out = []
    for job, name, holds in checks:
        m5, m1 = measured["raid5"][job], measured["raid1"][job]
        p5, p1 = predicted["raid5"][job], predicted["raid1"][job]
        unbound = [f"{kind[:4].upper()} {kind[4:]} at {measured[kind][job] / unthrottled[kind][job]:.2f} of its "
                   f"unthrottled rate" for kind in ("raid1", "raid5")
                   if not device_bound(measured[kind][job], unthrottled[kind][job])]
        tag = "device-bound" if not unbound else "NOT device-bound: " + ", ".join(unbound)
        model_held = holds(p5, p1)
        out.append({"ordering": name, "held": holds(m5, m1) and not unbound, "model_held": model_held,
                    "device_bound": not unbound,
                    "detail": f"members throttled to {rate_bytes_per_s / 1e6:.1f} MB/s"
                              + (f", delayed {delay_s * 1e3:g} ms per request" if delay_s else "")
                              + f" ({tag}): RAID 5 "
                              f"{m5 / 1e6:.2f} vs RAID 1 {m1 / 1e6:.2f} MB/s, ratio {m5 / m1:.2f}; model "
                              f"{p5 / 1e6:.2f} vs {p1 / 1e6:.2f}, ratio {p5 / p1:.2f} "
                              f"({'holds' if model_held else 'does not hold'})"})
    return out


def _read_mirror(stack: Stack, repeats) -> Stack:
    """The btrfs mirror's stack with the member fio's reads went to (btrfs's pid policy sends one process
    to one mirror): in each repeat the disk whose devices read the most sectors during the job, from their
    counters; over the repeats (each its own fio process) the one most of them used, as the median rate is
    theirs."""
    chosen = []
    for m in repeats:
        sectors = m.details.get("disk_sectors", {})
        if not m.workload.is_write and any(v["read"] for v in sectors.values()):
            chosen.append(max(sectors, key=lambda d: sectors[d]["read"]))
    if not chosen:
        return stack
    disk = max(sorted(set(chosen)), key=chosen.count)
    array = stack.volume
    index = next(i for i, p in enumerate(array.members) if p.disk == disk)
    return stack.evolve(file_system=stack.file_system.evolve(volume=array.evolve(read_member=index)))


def _closer(value: float, to: float, other: float) -> bool:
    return abs(math.log(value / to)) < abs(math.log(value / other))


def _stripe_on_one_device(disk, name: str = "btrfs raid0") -> Stack:
    """btrfs RAID 0 over two regions of one device (sda): the members are loop devices over one scratch
    file, so they share its bandwidth (the one drive serves both members' pieces in turn)."""
    two = (Partition(MIB, 256 * MIB, disk="sda"), Partition(258 * MIB, 256 * MIB, disk="sda"))
    return Stack(FileSystemNode(RaidArray("raid0", two, chunk_size_bytes=64 * KIB, tool="btrfs"), kind="btrfs"),
                 (InMemoryDrive(disk, "sda"),), name)
