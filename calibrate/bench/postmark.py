"""Run the real PostMark benchmark on a storage stack, on the host or in a throwaway VM.

PostMark (Katcher 1997, NetApp TR3022; Debian package ``postmark``, v1.51)
is the benchmark of Djordjevic & Timcenko (2015), section 4.2. This module

- runs ``postmark`` on a :class:`diskmodel.model.predictions.workload.PostMarkConfig`
  (its command file: :mod:`diskmodel.calibrate.bench.postmark_text`), after
  ``sync`` and dropping the page cache, optionally inside a memory cgroup
  that stands in for a smaller machine's RAM
  (:mod:`diskmodel.calibrate.bench.memory_cgroup`) (:func:`run_postmark`),
- times each run from outside with a monotonic clock, since PostMark's own
  clock counts whole seconds, records where it ran
  (:func:`host_environment`), and summarises repeats
  (:mod:`diskmodel.calibrate.bench.postmark_results`),
- builds a :class:`diskmodel.model.stacks.stack.Stack` on a scratch file or
  device, runs PostMark on it and tears it down, on the host or, as one
  script (:mod:`diskmodel.calibrate.bench.postmark_guest`), in the VM
  (:func:`run_on_stack`).
"""
from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from diskmodel.calibrate.bench.memory_cgroup import MemoryCgroup, drop_caches
from diskmodel.calibrate.bench.postmark_guest import guest_body, parse_guest_output
from diskmodel.calibrate.bench.postmark_results import PostMarkRun, PostMarkSummary, RunEnvironment, summarize
from diskmodel.calibrate.bench.postmark_text import PostMarkError, check_echoed_config, command_file, parse_report
from diskmodel.calibrate.bench.process import communicate_or_kill, spawn

__all__ = ["describe_mount", "host_environment", "run_postmark_once", "run_postmark", "run_on_stack"]


def _sysfs_queue(dev_name: str) -> tuple[int | None, str | None]:
    q = Path("/sys/class/block") / dev_name / "queue"
    if not q.exists():
        # a partition: the queue is its parent's
        parent = (Path("/sys/class/block") / dev_name).resolve().parent
        q = parent / "queue"
    ra = sched = None
    try:
        ra = int((q / "read_ahead_kb").read_text())
    except (OSError, ValueError):
        pass
    try:
        raw = (q / "scheduler").read_text().strip()
        m = re.search(r"\[([^\]]+)\]", raw)
        sched = m.group(1) if m else raw
    except OSError:
        pass
    return ra, sched


def describe_mount(mountpoint: str | os.PathLike) -> tuple[str, str, str]:
    """(device, file-system type, mount options) of *mountpoint*, from /proc/mounts."""
    mp = os.path.realpath(os.fspath(mountpoint))
    found = None
    for line in Path("/proc/mounts").read_text().splitlines():
        dev, where, fstype, opts = line.split()[:4]
        if where.replace("\\040", " ") == mp:
            found = (dev, fstype, opts)
    if found is None:
        raise ValueError(f"mountpoint {mp} is not mounted")
    return found


def host_environment(*, stack, mountpoint: str, backing: str,
                     memory_limit_bytes: int | None, caches_dropped: bool = True) -> RunEnvironment:
    """The :class:`RunEnvironment` of a run on this machine at *mountpoint*, on *stack* (a Stack)."""
    dev, fstype, opts = describe_mount(mountpoint)
    try:
        rdev = os.stat(dev).st_rdev
        name = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}").resolve().name
    except OSError:
        name = os.path.basename(os.path.realpath(dev))
    ra, sched = _sysfs_queue(name)
    dev = f"{dev} ({name})" if name != os.path.basename(dev) else dev
    bdev = bra = bsched = None
    try:
        st = os.stat(backing)
        import stat as _stat
        rdev = st.st_rdev if _stat.S_ISBLK(st.st_mode) else st.st_dev
        link = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
        if link.exists():
            bdev = link.resolve().name
            bra, bsched = _sysfs_queue(bdev)
    except OSError:
        pass
    cg = None
    if memory_limit_bytes is not None:
        cg = MemoryCgroup.detect_version()
    return RunEnvironment(
        stack=stack.short_name, stack_description=stack.describe(), kernel_release=platform.release(),
        file_system=fstype, mount_options=opts,
        device=dev, read_ahead_kb=ra, scheduler=sched, backing=backing, backing_device=bdev,
        backing_read_ahead_kb=bra, backing_scheduler=bsched, memory_limit_bytes=memory_limit_bytes,
        cgroup_version=cg, caches_dropped=caches_dropped, emulated=False, accelerator="host",
    )


def run_postmark_once(
    config: Any,
    location: str | os.PathLike,
    *,
    environment: RunEnvironment,
    memory_limit_bytes: int | None = None,
    drop_page_cache: bool = True,
    postmark: str = "postmark",
    timeout_s: float | None = None,
    clean_location: bool = True,
) -> PostMarkRun:
    """Run PostMark once in *location* and parse its report.

    Before the run: ``sync`` and drop caches (unless drop_page_cache is False).
    With memory_limit_bytes, postmark runs inside a fresh memory cgroup that is
    removed afterwards. PostMark runs in its own session; if this function is
    interrupted (KeyboardInterrupt, a signal turned into an exception, a
    timeout), the whole process group is killed before the exception goes on.
    """
    location = os.fspath(location)
    if not os.path.isdir(location):
        raise ValueError(f"location {location!r} is not a directory")
    # PostMark 1.51 builds each file's name (location, subdirectory, name) in a fixed-size buffer and
    # overruns it when the location is long (a deep TMPDIR): it runs in the location as its working
    # directory, named ".", so the names it builds are as short as they can be wherever the mount is
    text = command_file(config, ".")
    from diskmodel.calibrate.harness import runstate
    run = runstate.current_run()
    parent = run.work_dir() if run is not None else None
    with tempfile.TemporaryDirectory(prefix="diskmodel-postmark-", dir=parent) as tmp:
        cfg = Path(tmp) / "postmark.cfg"
        cfg.write_text(text)
        if drop_page_cache:
            drop_caches()
        cgroup = MemoryCgroup(memory_limit_bytes) if memory_limit_bytes is not None else None
        if cgroup is not None:
            cgroup.create()
        try:
            t0 = time.monotonic()
            proc = spawn([postmark, str(cfg)], name="postmark", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, cwd=location,
                         cgroup_procs=cgroup.procs_file if cgroup is not None else None)
            out, _ = communicate_or_kill(proc, timeout_s)
            wall = time.monotonic() - t0
            oom = cgroup.oom_kills() if cgroup is not None else 0
            peak = cgroup.peak_bytes() if cgroup is not None else None
        finally:
            if cgroup is not None:
                cgroup.remove()
    if proc.returncode != 0:
        why = f" ({oom} OOM kill(s) in its memory cgroup: raise memory_limit_bytes)" if oom else ""
        raise PostMarkError(f"postmark exited with status {proc.returncode}{why}:\n{out[-2000:]}")
    if oom:
        raise PostMarkError(f"the OOM killer fired {oom} time(s) in the run's memory cgroup; raise memory_limit_bytes")
    check_echoed_config(config, out)
    report = parse_report(out)
    if clean_location:
        leftovers = [p for p in os.listdir(location) if p != "lost+found"]
        if leftovers:
            raise PostMarkError(f"PostMark left {len(leftovers)} entries in {location}, e.g. {leftovers[:3]}")
    return PostMarkRun(report=report, wall_s=wall, environment=environment, config=config,
                       cgroup_peak_bytes=peak)


def run_postmark(
    config: Any,
    location: str | os.PathLike,
    *,
    environment: RunEnvironment,
    repeats: int = 1,
    memory_limit_bytes: int | None = None,
    drop_page_cache: bool = True,
    postmark: str = "postmark",
    timeout_s: float | None = None,
    progress: bool = False,
) -> PostMarkSummary:
    """Run PostMark *repeats* times in *location*; mean and 95% CI of each metric.

    See :func:`run_postmark_once` for cache control and the memory limit.
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    it = range(repeats)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc="postmark", unit="run")
    runs = [run_postmark_once(config, location, environment=environment,
                              memory_limit_bytes=memory_limit_bytes, drop_page_cache=drop_page_cache,
                              postmark=postmark, timeout_s=timeout_s) for _ in it]
    return summarize(runs)


def run_on_stack(
    stack,
    config: Any,
    *,
    scratch: str | os.PathLike | None = None,
    vm: bool = False,
    repeats: int = 1,
    memory_limit_bytes: int | None = None,
    drop_page_cache: bool = True,
    destroy_data_on: str | os.PathLike | None = None,
    keep: bool = False,
    vm_memory_bytes: int = 1 << 30,
    vm_timeout_s: float = 3600.0,
    vm_accelerator: str = "tcg",
    vm_drives=(),
    disk_backings: dict | None = None,
) -> PostMarkSummary:
    """Build *stack* (a :class:`~diskmodel.model.stacks.stack.Stack`), run PostMark *repeats* times on it, tear it down.

    The scratch stands for the stack's disk (each partition a loop device
    over the same bytes; :mod:`diskmodel.calibrate.bench.provision`). On the
    host (vm False): *scratch* is a new file (created, filled with data,
    removed afterwards unless *keep*) or an existing file or block device that
    *destroy_data_on* names again; busy devices are refused before any write
    (:func:`diskmodel.calibrate.harness.scratch.prepare_scratch`). LVM needs
    device-mapper (:class:`~diskmodel.calibrate.bench.provision.LayoutUnavailable`
    says to use vm=True). With vm=True the same plan runs as one script in a
    throwaway qemu VM (:func:`diskmodel.calibrate.bench.vm.run_script_in_vm`)
    whose scratch disk has the size the stack needs; *scratch* must then be
    None. *vm_accelerator* is "tcg" (emulation; every report says its
    timings measure the emulator) or "kvm" (where KVM works; never chosen on
    its own). *vm_drives*: emulated drives served to the VM
    (:func:`diskmodel.calibrate.emulate.for_vm.nbd_drives`); the first is then
    the stack's disk instead of the scratch disk. *disk_backings*: each of the stack's disks on a device of
    its own ``{disk: path}`` (emulated drives the tool made: host loop devices, or the guest's devices of
    *vm_drives*) in place of one scratch for all. SIGINT and SIGTERM tear everything down and raise
    :class:`~diskmodel.calibrate.bench.host_executor.Interrupted` (a KeyboardInterrupt).
    """
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.host_executor import handle_signals
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.locks import lock_target

    if not vm and scratch is None:
        raise ValueError("scratch must name a new file or a block device (or pass vm=True)")
    if vm and (scratch is not None or destroy_data_on is not None):
        raise ValueError("scratch and destroy_data_on do not apply with vm=True (the VM has its own scratch disk)")
    if vm_drives and not vm:
        raise ValueError("vm_drives apply only with vm=True (on the host, an emulated drive is the scratch device)")
    # Everything about the stack is checked before anything is locked, recorded or built.
    L.build_plan(stack, backing=os.fspath(scratch) if scratch is not None else "/dev/null")
    name = stack.short_name
    # One run, one record: every resource below is written down before it is created, and the
    # scratch is locked for the whole run, so a second run on it is refused with this one's PID.
    with handle_signals(), \
            (contextlib.nullcontext() if vm else lock_target(scratch, purpose=f"postmark {name} scratch")), \
            runstate.ensure_run(f"postmark {name} {'in a VM' if vm else scratch}"):
        return _run_on_stack_locked(
            stack, config, scratch=scratch, vm=vm, repeats=repeats, memory_limit_bytes=memory_limit_bytes,
            drop_page_cache=drop_page_cache, destroy_data_on=destroy_data_on, keep=keep,
            vm_memory_bytes=vm_memory_bytes, vm_timeout_s=vm_timeout_s, vm_accelerator=vm_accelerator,
            vm_drives=tuple(vm_drives), disk_backings=disk_backings)


def _run_on_stack_locked(stack, config, *, scratch, vm, repeats, memory_limit_bytes, drop_page_cache,
                         destroy_data_on, keep, vm_memory_bytes, vm_timeout_s, vm_accelerator,
                         vm_drives, disk_backings=None) -> PostMarkSummary:
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.host_executor import HostExecutor
    from diskmodel.calibrate.harness import runstate

    needed = L.backing_bytes_required(stack)
    if vm:
        from diskmodel.calibrate.bench.vm import SCRATCH_DEVICE, run_script_in_vm
        disk = vm_drives[0].guest_path if vm_drives else SCRATCH_DEVICE
        plan = L.build_plan(stack, backing=disk, disk_backings=disk_backings)
        body = guest_body(config, repeats=repeats, memory_limit_bytes=memory_limit_bytes,
                          drop_page_cache=drop_page_cache, mount_var=plan.mount_var, device=plan.device)
        if vm_drives:  # the stack's disk, whose queue the run reports as its backing
            from diskmodel.calibrate.bench.steps import sh_word
            body = f"DISKMODEL_SCRATCH={sh_word(disk)}\n{body}"
        L.log.info("plan (in the VM):\n%s\n%s", stack.describe(), plan.describe())
        result = run_script_in_vm(plan.render_script(body), scratch_disk_bytes=1 << 20 if vm_drives else needed,
                                  memory_bytes=vm_memory_bytes, timeout_s=vm_timeout_s,
                                  accelerator=vm_accelerator, nbd_sockets=[d.socket for d in vm_drives],
                                  pass_fds=[d.dir_fd for d in vm_drives])
        if result.returncode != 0:
            raise PostMarkError(f"the VM script failed with status {result.returncode}:\n{result.output[-3000:]}")
        return parse_guest_output(result.output, config, stack=stack, accelerator=result.accelerator,
                                  kernel_release=result.kernel_release, memory_limit_bytes=memory_limit_bytes,
                                  drop_page_cache=drop_page_cache,
                                  backing=f"{', '.join(d.guest_path for d in vm_drives)} (emulated "
                                          f"{vm_drives[0].drive})" if vm_drives
                                  else f"{SCRATCH_DEVICE} (VM scratch disk)")

    from diskmodel.calibrate.harness.scratch import prepare_scratches
    L.require_device_mapper(stack)
    run = runstate.current_run()
    spaces = []
    try:
        spaces = prepare_scratches(L.scratch_needs(stack, scratch, destroy_data_on, disk_backings), keep=keep)
        plan = L.build_plan(stack, backing=spaces[0].path, mount_dir=str(run.work_dir() / "mnt"), queue_defaults=True,
                            disk_backings=disk_backings)
        L.log.info("plan:\n%s\n%s", stack.describe(), plan.describe())
        with HostExecutor(plan) as ex:
            env = host_environment(stack=stack, mountpoint=ex.mountpoint, backing=spaces[0].path,
                                   memory_limit_bytes=memory_limit_bytes, caches_dropped=drop_page_cache)
            return run_postmark(config, ex.mountpoint, environment=env, repeats=repeats,
                                memory_limit_bytes=memory_limit_bytes, drop_page_cache=drop_page_cache)
    finally:
        for space in spaces:
            space.close()
