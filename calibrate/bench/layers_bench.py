"""Measure block workloads (fio jobs, the loop-image study's copy) on a stack of block layers, on the host or in the VM.

:func:`measure_stack` builds a :class:`diskmodel.model.stacks.stack.Stack` with
:func:`diskmodel.calibrate.bench.provision.build_plan` (the layers'
builders are :mod:`diskmodel.calibrate.bench.layers_provision`), runs the
workloads in order on it and tears it down:

- **fio jobs** (:class:`diskmodel.model.predictions.block_workloads.FioJob`) run on the
  stack's block device itself (the plan is built without a file system),
  the way the model predicts them (:func:`diskmodel.model.predict.predict_block`);
  a btrfs array, which is a file system and no block device, runs them on a
  file in it. Jobs run in the order given on the same device, so a job
  marked ``fresh`` (the first write into a thin volume or a sparse image)
  comes before the overwrite that repeats it. ``sync`` and drop the caches
  before each job: a loop device over a buffered image keeps blocks in the
  host's page cache.
- **the copy** (:class:`diskmodel.model.predictions.block_workloads.FileCopy`) runs in
  the stack's file system (:mod:`diskmodel.calibrate.bench.copy`).
- **the tools' workloads** (:class:`~diskmodel.calibrate.bench.tool_workloads.ToolWorkload`: bonnie++,
  ``tar``, ``cp``, an image by ``dd`` or ``truncate``) run in the stack's file system on the host
  (:func:`diskmodel.calibrate.bench.tool_workloads.measure`; the guest has no bonnie++).

On the host the workloads run as argument vectors (fio's and ``dd``'s, in the
throttle's cgroup when a member is throttled) and the queues are read in
Python, with no shell; in the throwaway VM, whose guest has no Python, they
are one shell body after the plan's script (:meth:`StackPlan.render_script`)
in which every value (fio's target, the mount point) is a word rendered by
:func:`~diskmodel.calibrate.bench.steps.sh_word`. Both print the same lines,
which one parser reads.

**Slower members.** *slow_disks* maps a disk name of the stack to limits
(``read_bytes_per_s``, ``write_bytes_per_s``, ``read_iops``, ``write_iops``):
every loop device standing for a partition of that disk is throttled. On
the host, with a cgroup v1 blkio throttle (:mod:`diskmodel.calibrate.bench.blkio`,
recorded in the run and removed on every exit path) that the body runs in;
in the VM, with cgroup v2 ``io.max`` (the guest mounts cgroup2), made by the
body and removed by its EXIT trap. A throttle is a token bucket per
direction, not a disk: a request waits only when its direction's budget is
spent. In the VM a limit ``delay_s`` (whole milliseconds) adds what a disk
has and a throttle lacks, a fixed cost per request: a device-mapper
``delay`` target (dm-delay) over each of the disk's loop devices, built
before the layers above, which are built on it (:func:`with_member_delays`).

**What the host really has.** The body prints, for every loop device of
the plan, its queue's ``read_ahead_kb`` and ``nr_requests`` and, before
and after each fio job, its I/O counters (``/sys/block/loopN/stat``): the
measurement's ``details`` carry the queues and the sectors each disk's
devices read and wrote during the job (which mirror a btrfs reader used).
:func:`dirty_limit_bytes` reads the page cache's dirty limit and
:func:`page_cache_copy_rate` measures its copy rate, for the loop layers'
model parameters.

Where: the host, unless the stack needs md or device-mapper and the kernel
lacks them (:func:`~diskmodel.calibrate.bench.provision.require_kernel`),
then ``vm=True``. The host's scratch file is made by
:func:`diskmodel.calibrate.harness.scratch.prepare_scratch` (new file, or
``destroy_data_on`` naming an existing one) and locked for the run.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass, field

from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench.blkio import Throttle, ThrottleCgroup
from diskmodel.calibrate.bench.copy import GUEST_CLOCK, copy_on_host, copy_shell, parse_copy_output
from diskmodel.calibrate.bench.fio import fio_command, fio_words, parse_fio_json
from diskmodel.calibrate.bench.steps import Concat, Ref, sh_word
from diskmodel.calibrate.bench.tool_workloads import ToolWorkload
from diskmodel.model._checks import FieldError
from diskmodel.model.predictions.block_workloads import FileCopy, FioJob
from diskmodel.model.stacks.stack import Stack

__all__ = ["GUEST_PREAMBLE", "LayerMeasurement", "dirty_limit_bytes", "measure_stack", "measurements_json",
           "page_cache_copy_rate", "parse_devices", "with_member_delays", "workload_body"]

_FIO = "DISKMODEL_FIO"
_TOOL = "DISKMODEL_TOOL"
_DEV = "DISKMODEL_DEV"
_LIMIT_NAMES = ("read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops")
#: The slow_disks key of a fixed delay per request (dm-delay, in the VM) [s].
_DELAY = "delay_s"
#: cgroup v2 io.max keys of the limits.
_IO_MAX_KEYS = {"read_bytes_per_s": "rbps", "write_bytes_per_s": "wbps", "read_iops": "riops",
                "write_iops": "wiops"}


@dataclass(frozen=True)
class LayerMeasurement:
    """What one workload measured on one stack.

    workload: the FioJob, FileCopy or ToolWorkload; rates: {"throughput_bytes_per_s"} for
    a fio job and a tool workload (the bytes its calls read and write over its elapsed time),
    {"write_bytes_per_s", "read_bytes_per_s"} for the copy [bytes/s]; where: "host" or "vm";
    accelerator: the VM's ("tcg": timings measure an emulator) or None on the host; details: fio's,
    the copy's or the tool workload's figures.
    """

    workload: object
    rates: dict
    where: str
    accelerator: str | None = None
    details: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.workload.label if isinstance(self.workload, (FioJob, ToolWorkload)) else "copy"

    @property
    def emulated(self) -> bool:
        return self.accelerator == "tcg"


def _check_workloads(workloads) -> tuple:
    workloads = tuple(workloads)
    if not workloads:
        raise ValueError("workloads must name at least one FioJob, FileCopy or ToolWorkload")
    kinds = {type(w) for w in workloads}
    if not kinds <= {FioJob, FileCopy, ToolWorkload}:
        raise ValueError("workloads must be FioJob, FileCopy or ToolWorkload (got "
                         f"{', '.join(sorted(k.__name__ for k in kinds))})")
    if FioJob in kinds and len(kinds) > 1:
        raise ValueError("workloads: fio jobs run on the bare device and the copy in the file system; "
                         "measure them separately")
    return workloads


def _check_delay(disk: str, value) -> None:
    """dm-delay takes whole milliseconds (``delay_ctr``, drivers/md/dm-delay.c): anything else is refused."""
    ms = value * 1000 if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(ms) and ms > 0 and abs(ms - round(ms)) < 1e-6 and round(ms) >= 1):
        raise FieldError("slow_disks", f"[{disk!r}]: {_DELAY} must be a finite number > 0 of whole milliseconds "
                                       f"(dm-delay's unit) [s] (got {value!r})", sep="")


def _check_slow(stack: Stack, slow_disks, *, vm: bool) -> dict:
    slow = dict(slow_disks or {})
    names = {p.disk for _, p in stack.partitions()}
    for disk, limits in slow.items():
        if disk not in names:
            raise FieldError("slow_disks", f"{disk!r} is not a disk of the stack ({', '.join(sorted(names))})",
                             sep=": ")
        unknown = set(limits) - {*_LIMIT_NAMES, _DELAY}
        if unknown or not limits:
            raise FieldError("slow_disks", f"[{disk!r}]: limits are {', '.join((*_LIMIT_NAMES, _DELAY))} "
                                           f"(got {sorted(limits)})", sep="")
        if _DELAY in limits:
            _check_delay(disk, limits[_DELAY])
            if not vm:
                raise FieldError("slow_disks", f"[{disk!r}]: {_DELAY} is a dm-delay target, built in the VM only "
                                               "(pass vm=True)", sep="")
        rates = {k: v for k, v in limits.items() if k != _DELAY}
        if rates:
            Throttle(device=disk, **rates)   # validates the values
    return slow


def _loop_variables(plan: L.StackPlan) -> list[str]:
    """The shell variables holding the plan's loop devices (the scratch's regions and the loop-file layers)."""
    return [step.capture for step in plan.steps
            if step.capture and step.resource is not None and step.resource[0] == "loop"]


def _device_lines(plan: L.StackPlan, tag: str) -> list[str]:
    """Shell printing, for each loop device of *plan*, its queue's read-ahead and depth and its I/O counters
    (``/sys/block/loopN/stat``): what the host really has, for the model, and which member served a job."""
    return [f'd="${{{var}##*/}}"; echo "{_DEV} {tag} {var} $(cat /sys/block/$d/queue/read_ahead_kb) '
            f'$(cat /sys/block/$d/queue/nr_requests) $(cat /sys/block/$d/stat)"' for var in _loop_variables(plan)]


def workload_body(plan: L.StackPlan, workloads, *, clock: str, fio_target) -> str:
    """Shell (the guest's) running *workloads* on the built *plan*: fio's JSON between markers, the copy's
    lines, and the loop devices' queues and counters before and after each fio job. *fio_target* is a
    word (:func:`_fio_target`); every value is rendered by :func:`sh_word`."""
    lines = ["set +e", *_device_lines(plan, "start")]
    for i, workload in enumerate(workloads):
        if isinstance(workload, FioJob):
            lines += [
                "sync; echo 3 > /proc/sys/vm/drop_caches",
                *_device_lines(plan, f"before{i}"),
                f"echo '{_FIO} BEGIN {i}'",
                fio_command(workload, fio_target),
                "rc=$?",
                f'echo "{_FIO} END {i} $rc"',
                *_device_lines(plan, f"after{i}"),
                '[ "$rc" = 0 ] || exit "$rc"',
            ]
        else:
            lines.append(copy_shell(sh_word(Ref(plan.mount_var)), workload, tag=f"copy{i}", clock=clock))
    lines.append("exit 0")
    return "\n".join(lines) + "\n"


def parse_devices(text: str) -> dict:
    """What :func:`_device_lines` printed: {tag: {variable: {"read_ahead_kb", "nr_requests", "stat"}}}
    (``stat``: the 11+ counters of ``/sys/block/<dev>/stat``; [2] sectors read, [6] sectors written)."""
    out: dict = {}
    for line in text.replace("\r", "").splitlines():
        parts = line.split()
        if len(parts) >= 16 and parts[0] == _DEV and all(p.isdigit() for p in parts[3:]):
            out.setdefault(parts[1], {})[parts[2]] = {"read_ahead_kb": int(parts[3]), "nr_requests": int(parts[4]),
                                                      "stat": [int(p) for p in parts[5:]]}
    return out


def _sectors(devices: dict, i: int, plan_regions) -> dict:
    """Sectors each disk's regions read and wrote during fio job *i*: {disk: {"read", "written"}}."""
    before, after = devices.get(f"before{i}", {}), devices.get(f"after{i}", {})
    out: dict = {}
    for region in plan_regions:
        if region.variable in before and region.variable in after:
            a, b = before[region.variable]["stat"], after[region.variable]["stat"]
            moved = out.setdefault(region.disk, {"read": 0, "written": 0})
            moved["read"] += b[2] - a[2]
            moved["written"] += b[6] - a[6]
    return out


def _parse(output: str, workloads, where: str, accelerator: str | None, plan: L.StackPlan) -> list[LayerMeasurement]:
    text = output.replace("\r", "")
    devices = parse_devices(text)
    queues = {var: {k: v for k, v in q.items() if k != "stat"} for var, q in devices.get("start", {}).items()}
    out = []
    for i, workload in enumerate(workloads):
        if isinstance(workload, FioJob):
            m = re.search(rf"^{_FIO} BEGIN {i}\n(.*?)^{_FIO} END {i} (-?\d+)$", text, re.S | re.M)
            if m is None or m.group(2) != "0":
                raise RuntimeError(f"fio {workload.label} did not complete:\n{text[-2000:]}")
            result = parse_fio_json(m.group(1), workload)
            out.append(LayerMeasurement(workload, {"throughput_bytes_per_s": result.rate_bytes_per_s}, where,
                                        accelerator, {**result.as_dict(), "queues": queues,
                                                      "disk_sectors": _sectors(devices, i, plan.regions)}))
        elif isinstance(workload, ToolWorkload):
            m = re.search(rf"^{_TOOL} {i} (.*)$", text, re.M)
            if m is None:
                raise RuntimeError(f"workload {workload.spec} did not complete:\n{text[-2000:]}")
            result = json.loads(m.group(1))
            out.append(LayerMeasurement(workload, {"throughput_bytes_per_s": result["rate_bytes_per_s"]}, where,
                                        accelerator, {**result, "queues": queues}))
        else:
            result = parse_copy_output(text, tag=f"copy{i}")
            out.append(LayerMeasurement(workload, {"write_bytes_per_s": result.write_bytes_per_s,
                                                   "read_bytes_per_s": result.read_bytes_per_s}, where,
                                        accelerator, {**result.as_dict(), "queues": queues}))
    return out


def _fio_target(plan: L.StackPlan, file_system: bool):
    """fio's target, a word: a file in the mounted file system, or the plan's block device."""
    return Concat((Ref(plan.mount_var), "/diskmodel-fio.dat")) if file_system else plan.device


def _host_devices(ex, plan: L.StackPlan, tag: str) -> list[str]:
    """:func:`_device_lines`'s lines, read here in Python from ``/sys/block/<loop>/``."""
    from pathlib import Path

    lines = []
    for var in _loop_variables(plan):
        q = Path("/sys/block") / os.path.basename(ex.variables[var])
        ra, nr = ((q / "queue" / f).read_text().strip() for f in ("read_ahead_kb", "nr_requests"))
        lines.append(f"{_DEV} {tag} {var} {ra} {nr} {' '.join((q / 'stat').read_text().split())}")
    return lines


def _host_workloads(ex, plan: L.StackPlan, workloads, file_system: bool, cgroup_procs, timeout_s: float) -> str:
    """The workloads run here as argument vectors (in the cgroup of *cgroup_procs*, if any); the same lines
    :func:`workload_body` prints in the guest. RuntimeError (with the lines so far) when one fails."""
    import json
    import subprocess

    from diskmodel.calibrate.bench import tool_workloads
    from diskmodel.calibrate.bench.memory_cgroup import drop_caches
    from diskmodel.calibrate.bench.process import communicate_or_kill, spawn

    def run(argv):
        proc = spawn([ex.resolve(w) for w in argv], name=os.path.basename(str(argv[0])), stdin=subprocess.DEVNULL,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cgroup_procs=cgroup_procs)
        out, err = communicate_or_kill(proc, timeout_s)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    lines = _host_devices(ex, plan, "start")
    for i, workload in enumerate(workloads):
        if isinstance(workload, FioJob):
            drop_caches()
            lines += _host_devices(ex, plan, f"before{i}")
            done = run(fio_words(workload, _fio_target(plan, file_system)))
            lines += [f"{_FIO} BEGIN {i}", done.stdout.rstrip("\n"), f"{_FIO} END {i} {done.returncode}"]
            lines += _host_devices(ex, plan, f"after{i}")
            if done.returncode != 0:
                raise RuntimeError(f"fio {workload.label} failed with status {done.returncode}:\n"
                                   f"{(chr(10).join(lines) + done.stderr)[-3000:]}")
        elif isinstance(workload, ToolWorkload):  # the tools' own preparation, cache drop, timing and cleanup
            result = tool_workloads.measure(workload.spec, ex.mountpoint, timeout_s=timeout_s,
                                            cgroup_procs=cgroup_procs)
            lines.append(f"{_TOOL} {i} {json.dumps(result.as_dict())}")
        else:
            lines.append(copy_on_host(ex.mountpoint, workload, run=run, drop_caches=drop_caches,
                                      tag=f"copy{i}").rstrip("\n"))
    return "\n".join(lines) + "\n"


def measure_stack(stack: Stack, workloads, *, vm: bool = False, scratch=None, destroy_data_on=None,
                  slow_disks: dict | None = None, vm_memory_bytes: int = 1 << 30, vm_timeout_s: float = 1800,
                  vm_accelerator: str = "tcg", timeout_s: float = 1800, vm_drives=(),
                  disk_backings: dict | None = None) -> list[LayerMeasurement]:
    """Build *stack*, run *workloads* (FioJobs, one FileCopy, or ToolWorkloads on the host) in order on it, tear it
    down; the measurements.

    Everything is checked (the plan built on paper, the workloads, the
    slow disks) before anything is created. On the host *scratch* is a new
    file (or an existing one named again by *destroy_data_on*) that stands
    for the stack's disks; ``vm=True`` uses the VM's own scratch disk, or
    the first of *vm_drives*, emulated drives served to the VM
    (:func:`diskmodel.calibrate.emulate.for_vm.nbd_drives`). *disk_backings*: each of the stack's disks on a
    device of its own ``{disk: path}`` (emulated drives the tool made: host loop devices, or the guest's
    devices of *vm_drives*), each partition at its own offset on it, in place of one scratch for all.
    """
    from diskmodel.calibrate.bench.host_executor import handle_signals
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.locks import lock_target

    workloads = _check_workloads(workloads)
    slow = _check_slow(stack, slow_disks, vm=vm)
    copy = isinstance(workloads[0], FileCopy)
    tools = [w for w in workloads if isinstance(w, ToolWorkload)]
    btrfs = any(getattr(node, "tool", None) == "btrfs" for _, node, _ in stack.nodes())
    file_system = copy or bool(tools) or btrfs
    if vm and tools:
        raise FieldError("vm", f"{tools[0].spec} runs its tools on the host (the VM's guest runs fio and the "
                               "copy only): leave vm out, or give emulated drives on the host", sep=": ")
    if vm and btrfs:
        raise FieldError("vm", "a btrfs array is built on the host (the VM's guest carries no btrfs): leave it out",
                         sep=": ")
    if not vm and scratch is None:
        raise ValueError("scratch must name a new file or a block device (or pass vm=True)")
    if vm and (scratch is not None or destroy_data_on is not None):
        raise ValueError("scratch and destroy_data_on do not apply with vm=True (the VM has its own scratch disk)")
    if vm_drives and not vm:
        raise ValueError("vm_drives apply only with vm=True (on the host, an emulated drive is the scratch device)")
    L.build_plan(stack, backing=os.fspath(scratch) if scratch is not None else "/dev/null",
                 file_system=file_system)
    if not vm:
        L.require_kernel(stack)
    with handle_signals(), \
            (contextlib.nullcontext() if vm else lock_target(scratch, purpose=f"bench {stack.short_name} scratch")), \
            runstate.ensure_run(f"bench {stack.short_name} {'in a VM' if vm else scratch}"):
        if vm:
            return _in_vm(stack, workloads, slow, file_system, vm_memory_bytes, vm_timeout_s, vm_accelerator,
                          tuple(vm_drives), disk_backings)
        return _on_host(stack, workloads, slow, file_system, scratch, destroy_data_on, timeout_s, disk_backings)


def _on_host(stack, workloads, slow, file_system, scratch, destroy_data_on, timeout_s, disk_backings=None):
    from diskmodel.calibrate.bench.host_executor import HostExecutor
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.scratch import prepare_scratches

    run = runstate.current_run()
    spaces = []
    try:
        spaces = prepare_scratches(L.scratch_needs(stack, scratch, destroy_data_on, disk_backings))
        plan = L.build_plan(stack, backing=spaces[0].path, mount_dir=str(run.work_dir() / "mnt"),
                            file_system=file_system, queue_defaults=True, disk_backings=disk_backings)
        L.log.info("plan:\n%s\n%s", stack.describe(), plan.describe())
        with HostExecutor(plan, timeout_s=timeout_s) as ex:
            throttles = [Throttle(ex.variables[r.variable], **slow[r.disk]) for r in plan.regions if r.disk in slow]
            with (ThrottleCgroup(throttles) if throttles else contextlib.nullcontext()) as cgroup:
                output = _host_workloads(ex, plan, workloads, file_system,
                                         cgroup.procs_file if cgroup is not None else None, timeout_s)
        return _parse(output, workloads, "host", None, plan)
    finally:
        for space in spaces:
            space.close()


def _guest_throttle(plan: L.StackPlan, slow: dict) -> str:
    """Shell (guest): a cgroup v2 with io.max on the slow disks' loop devices, the shell moved into it,
    and with it the md arrays' kernel threads (``mdN_raidK``).

    Why the threads: io.max limits a bio by the cgroup it is charged to, which a bio takes from the
    task that submits it (``bio_associate_blkg`` -> ``blkcg_css()``, block/blk-cgroup.c) unless it is a
    clone of one already charged. md RAID 1 clones the writer's bio (charged to the shell's cgroup), but
    RAID 5's member I/O is new bios that its ``raid5d`` thread submits (``ops_run_io``,
    drivers/md/raid5.c): in the root cgroup, which io.max cannot limit, a "throttled" RAID 5 ran at the
    emulator's pace. The undo moves every task back to the root first (rmdir needs the cgroup empty)."""
    slow = {disk: {k: v for k, v in limits.items() if k != _DELAY} for disk, limits in slow.items()}
    slow = {disk: limits for disk, limits in slow.items() if limits}
    if not slow:
        return ""
    lines = ["echo +io > /sys/fs/cgroup/cgroup.subtree_control || exit 1",
             "cg=/sys/fs/cgroup/diskmodel-slow; mkdir $cg || exit 1",
             "DISKMODEL_UNDO=\"for p in \\$(cat $cg/cgroup.procs); do echo \\$p > /sys/fs/cgroup/cgroup.procs; "
             "done; rmdir $cg;\n$DISKMODEL_UNDO\""]
    for region in plan.regions:
        if region.disk in slow:
            limits = " ".join(f"{_IO_MAX_KEYS[k]}={v}" for k, v in slow[region.disk].items())
            lines.append(f'mm=$(lsblk -dno MAJ:MIN "${region.variable}" | tr -d " ")')
            lines.append(f'echo "$mm" {sh_word(limits)} > $cg/io.max || exit 1')
    lines.append("echo $$ > $cg/cgroup.procs || exit 1")
    lines.append('for t in /proc/[0-9]*; do read -r n < "$t/comm" 2>/dev/null || continue; '
                 'case "$n" in md*_raid*) echo "${t#/proc/}" > $cg/cgroup.procs || exit 1;; esac; done')
    return "\n".join(lines) + "\n"


def with_member_delays(plan: L.StackPlan, slow: dict) -> L.StackPlan:
    """*plan* with a dm-delay device over each loop device of a disk whose limits have ``delay_s``, and
    every layer above built on it instead of on the loop device.

    Steps right after the loop device's read its size (``blockdev --getsz``) and make ``diskmodel-delayN``
    (``dmsetup create`` with the table ``0 <sectors> delay <loop> 0 <ms>``, one word: reads and writes
    delayed alike; ``delay_ctr`` and ``delay_bio``, drivers/md/dm-delay.c), recorded as a ``dm`` resource
    whose undo, ``dmsetup remove``, runs after the layers above are taken down and before the loop device
    is detached (the undo list runs in reverse). The later steps' words and records, and the plan's
    device, refer to the dm device (``Ref("DISKMODEL_DELAYN")``) where they referred to the loop device.
    The loop device stays the region's: the throttle (io.max) and the I/O counters stay on it, below
    the delay.

    dm-delay counts its delay in jiffies from the one a bio arrives in (``jiffies + msecs_to_jiffies(delay)``,
    rounded up; a timer, then a work queue submits the bio), and the timer wheel never fires a timer early
    (it rounds the expiry up to the next tick, ``calc_index`` in kernel/time/timer.c): a bio waits at least
    the delay, rounded up to the guest's 4 ms ticks (HZ=250), and about one tick more."""
    delayed = {r.variable: slow[r.disk][_DELAY] for r in plan.regions if _DELAY in slow.get(r.disk, {})}
    if not delayed:
        return plan
    steps, names = [], {}

    def rename(word):
        if isinstance(word, Ref):
            return Ref(names.get(word.name, word.name))
        if isinstance(word, Concat):
            return Concat(tuple(rename(p) for p in word.parts))
        if isinstance(word, tuple):
            return tuple(rename(w) for w in word)
        return word

    for step in plan.steps:
        step = dataclasses.replace(step, argv=rename(step.argv),
                                   resource=None if step.resource is None else (step.resource[0], tuple(
                                       (k, rename(v)) for k, v in step.resource[1])))
        steps.append(step)
        if step.capture in delayed:
            i = step.capture.removeprefix("DISKMODEL_DEV")
            name, var, ms = f"diskmodel-delay{i}", f"DISKMODEL_DELAY{i}", round(delayed[step.capture] * 1000)
            sectors, loop = f"DISKMODEL_SECTORS{i}", Ref(step.capture)
            steps.append(L.Step(f"size of {step.capture} in sectors", ("blockdev", "--getsz", loop),
                                capture=sectors))
            steps.append(L.Step(
                f"dm-delay of {ms} ms on reads and writes over {step.capture}",
                ("dmsetup", "create", name, "--noudevsync", "--table",
                 Concat(("0 ", Ref(sectors), " delay ", loop, f" 0 {ms}"))),
                resource=("dm", (("name", name),)),
            ))
            steps.append(L.Step(f"device node of {name}", ("dmsetup", "mknodes", name),
                                capture=var, value=f"/dev/mapper/{name}"))
            names[step.capture] = var
    device = rename(plan.device)

    def uses(word, name) -> bool:
        return name in {p.name for p in _refs(word)}

    for new in names.values():     # the dm device is used: by a later step, or as the plan's device
        if not any(uses(w, new) for s in steps for w in s.argv) and not uses(device, new):
            raise ValueError(f"slow_disks: {_DELAY}: no layer of the plan is built on ${new}")
    return dataclasses.replace(plan, steps=tuple(steps), device=device)


def _refs(word) -> list:
    if isinstance(word, Ref):
        return [word]
    if isinstance(word, Concat):
        return [p for p in word.parts if isinstance(p, Ref)]
    return []


#: Guest preamble: the md, dm-thin and dm-delay modules the layers need, loaded on demand (initramfs.py).
GUEST_PREAMBLE = ('while read -r m; do [ -n "$m" ] && { insmod "$m" 2>/dev/null || :; }; '
                  "done < /etc/diskmodel/modules.layers")


def _vm_script(stack, workloads, slow, file_system, disk=None, disk_backings=None) -> tuple[L.StackPlan, str]:
    """The plan in the VM (the slow disks' delays under it) and the guest's script: build, throttle, run, undo."""
    from diskmodel.calibrate.bench.vm import SCRATCH_DEVICE

    plan = with_member_delays(L.build_plan(stack, backing=disk or SCRATCH_DEVICE, file_system=file_system,
                                           disk_backings=disk_backings), slow)
    body = _guest_throttle(plan, slow) + workload_body(plan, workloads, clock=GUEST_CLOCK,
                                                       fio_target=_fio_target(plan, file_system))
    return plan, plan.render_script(body, preamble=GUEST_PREAMBLE)


def _in_vm(stack, workloads, slow, file_system, memory_bytes, timeout_s, accelerator, vm_drives=(),
           disk_backings=None):
    from diskmodel.calibrate.bench.vm import run_script_in_vm

    plan, script = _vm_script(stack, workloads, slow, file_system, vm_drives[0].guest_path if vm_drives else None,
                              disk_backings)
    L.log.info("plan (in the VM):\n%s\n%s", stack.describe(), plan.describe())
    result = run_script_in_vm(script, scratch_disk_bytes=1 << 20 if vm_drives else L.backing_bytes_required(stack),
                              memory_bytes=memory_bytes, timeout_s=timeout_s, accelerator=accelerator,
                              nbd_sockets=[d.socket for d in vm_drives], pass_fds=[d.dir_fd for d in vm_drives])
    if result.returncode != 0:
        raise RuntimeError(f"the VM script failed with status {result.returncode}:\n{result.output[-3000:]}")
    return _parse(result.output, workloads, "vm", result.accelerator, plan)


def dirty_limit_bytes(vm_dir: str = "/proc/sys/vm", meminfo: str = "/proc/meminfo") -> int:
    """Written bytes the host's page cache holds before writers wait for write-back [bytes]:
    ``vm.dirty_bytes`` if set, else ``vm.dirty_ratio`` percent of the memory available (the kernel's
    "dirtyable" memory, free and reclaimable pages, which ``MemAvailable`` estimates)."""
    with open(os.path.join(vm_dir, "dirty_bytes")) as f:
        limit = int(f.read())
    if limit:
        return limit
    with open(os.path.join(vm_dir, "dirty_ratio")) as f:
        ratio = int(f.read())
    with open(meminfo) as f:
        available_kib = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
    return available_kib * 1024 * ratio // 100


def page_cache_copy_rate(directory: str, size_bytes: int = 256 << 20, trials: int = 3) -> dict:
    """The host's page-cache copy rates [bytes/s], the median of *trials*: buffered writes of a new
    file in *directory* in 1 MiB calls, no fsync (what a buffered loop worker pays per byte it
    writes), then reads of it from the cache. The file is removed before its pages are written back."""
    import statistics
    import time

    chunk = b"\xa5" * (1 << 20)
    writes, reads = [], []
    for trial in range(trials):
        path = os.path.join(directory, f"diskmodel-copyrate-{os.getpid()}-{trial}.dat")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            t0 = time.perf_counter()
            for _ in range(size_bytes // len(chunk)):
                os.write(fd, chunk)
            writes.append(size_bytes / (time.perf_counter() - t0))
            os.close(fd)
            fd = os.open(path, os.O_RDONLY)
            t0 = time.perf_counter()
            while os.read(fd, len(chunk)):
                pass
            reads.append(size_bytes / (time.perf_counter() - t0))
        finally:
            os.close(fd)
            os.unlink(path)
    return {"write_bytes_per_s": statistics.median(writes), "read_bytes_per_s": statistics.median(reads)}


def measurements_json(measurements: list[LayerMeasurement]) -> list[dict]:
    """JSON data of *measurements* (for --json and the benchmark's artifact)."""
    return [{"workload": m.label, "rates": m.rates, "where": m.where, "accelerator": m.accelerator,
             "details": m.details} for m in measurements]
