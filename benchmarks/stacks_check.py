"""The studies' stacks on emulated drives, measured with the real tools beside the model's prediction.

    python benchmarks/stacks_check.py [--drive wd800bd] [--sizes-mib 1,4] [--repeats 3] [--tool-repeats 3]
        [--image-mib 32]
        [--vm-groups 000,002,engineer,net] [--vm-sizes-mib 4] [--host 1] [--cells 'A|B'] [--log-dir DIR]
        [--reuse EARLIER.json] [--results-dir DIR]

Needs root, nbdkit with its Python plugin, nbdfuse (``diskmodel emulate``'s needs), mkfs.ext3, mkfs.ext2,
losetup, dd, truncate, tar and bonnie++ on the host; qemu and the VM's kernel for the VM cells. What runs:

- **Host cells (the loop-image study, and Dagenais' nested loop files):** one emulated drive (``--drive``, the paper's
  WD800BD by default: :func:`diskmodel.calibrate.emulate.emulated_drives`, each request timed by the drive's
  simulation, its request log kept). A "partition" is a direct-I/O loop device over the drive's bytes 1 MiB
  .. 513 MiB (this host's kernel reads no partition table; direct I/O passes requests through as a partition
  does). Every loop device's read-ahead and request limit are set to a disk's, 128 and 1280 KiB, as the model
  takes them (a loop number otherwise keeps what its earlier use left:
  :mod:`diskmodel.calibrate.harness.queue_defaults`). On it: native ext3; ext3 on a loop file over a sparse
  and over a zero-filled image in that ext3 (``mount -o loop`` as the loop-image study did: buffered); ext2 on
  a loop file over a sparse image; Dagenais' ext2
  with none, one, two and three loop layers below it (each image a sparse file in the ext2 of the layer
  below); every file system with 4 KiB blocks, as the model's. On each, the loop-image study's copy (files of
  ``--sizes-mib``, ``--repeats`` times: :mod:`diskmodel.calibrate.bench.copy`) and the everyday workloads
  (:mod:`diskmodel.calibrate.bench.tool_workloads`: a zero-filled and a sparse image of ``--image-mib``, a
  tar of a small tree, bonnie++'s file tests), each printed with its definition, each run ``--tool-repeats``
  times on the stack and on its tmpfs (each time the median of its runs, their spread kept).
- **VM cells (Dagenais, Marechal, the multi-disk LVM study, and the engineer's layouts):** one VM boot per group
  (:mod:`diskmodel.calibrate.bench.stacks_vm`), each disk of a stack on an emulated drive of its own;
  the copy (``--vm-sizes-mib``) in each stack.
- **Prediction:** :func:`diskmodel.model.predict.predict` of the same stack on the same drives
  (presets) and the same workload, through the I/O path and the drives' simulations: the copy as
  its two ``dd`` steps (:mod:`diskmodel.model.iopath.workloads_copy`), the others by their spec
  strings. Each workload's own pace (the application's time: process start, system calls, copies,
  on a machine shared with others) is measured by running it on a tmpfs just before, and the
  model's operations are put on that clock (:mod:`diskmodel.model.iopath.workloads_pace`); the
  prediction at the generators' default pace is kept beside it. A VM cell's copy also runs, just
  before the cell, on a twin of its stack over RAM disks in the guest
  (:mod:`diskmodel.calibrate.bench.ram_twin`: the same layers and file system, the application and the
  stack's kernel work on the guest's emulated CPU, no device time); its prediction is put on that
  clock (``clock``: "stack on RAM"), with the tmpfs clock's kept beside it
  (``predicted_tmpfs_clock``); a cell without a complete twin run stays on the tmpfs clock
  (``clock``: "tmpfs"; the network group's cells, whose pace is their own twin without a drive).
- **The drive's own view:** per timed step, the requests the emulated drive served and their
  simulated busy time (its request log), beside the model's requests and busy time per drive.

Orderings (the studies' statements, :data:`ORDERINGS`) are held where the measured difference exceeds
the spread of the repeats; the model's ratio is shown beside each. The paper's leave-one-out median
is ``benchmarks/results/djordjevic_loo.json``'s (``benchmarks/djordjevic_loo.py``), read, not re-run.

Last three lines: ``median_error_pct: X`` (median |error| over the predicted figures: the copies'
rates, the tool workloads' times), ``orderings_held: K/N``, ``paper_loo_median_pct: Y``. Writes
``benchmarks/results/stacks_check.json``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402
from _drive_view import drive_view  # noqa: E402
from _stacks_tables import (HOST_STACKS, IMAGE_SIZES, NOT_RUN, NOTES, ORDERINGS,  # noqa: E402,F401
                            errors, orderings, paper_loo_median, study)

from diskmodel.calibrate.bench import tool_workloads  # noqa: E402
from diskmodel.calibrate.bench.copy import copy_on_host, parse_copy_output, parse_copy_spread  # noqa: E402
from diskmodel.calibrate.bench.memory_cgroup import drop_caches  # noqa: E402
from diskmodel.calibrate.bench.ram_twin import RAM_CLOCK, TMPFS_CLOCK  # noqa: E402
from diskmodel.calibrate.harness import devstate, runstate  # noqa: E402
from diskmodel.calibrate.harness.queue_defaults import set_disk_defaults  # noqa: E402
from diskmodel.model.predictions.block_workloads import FileCopy  # noqa: E402
from diskmodel.calibrate.emulate.drives import model_drive  # noqa: E402
from diskmodel.model.stacks.loop_file import LoopFile  # noqa: E402
from diskmodel.model.stacks.nodes import map_nodes  # noqa: E402
from diskmodel.model.stacks.stack import FileSystemNode, Stack  # noqa: E402
from diskmodel.model.stacks.volumes import Partition  # noqa: E402

MIB = 1 << 20
PART_START, PART_BYTES = MIB, 512 * MIB
TOOLS = ("losetup", "mount", "umount", "mkfs.ext3", "mkfs.ext2", "dd", "truncate", "tar", "bonnie++")

def _run(argv) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[:200]}")
    return proc.stdout


def _loop(run, made: list, backing: str, *, offset: int = 0, size: int | None = None, direct: bool = False) -> str:
    """A loop device over *backing* (bytes offset .. offset+size; buffered, or with *direct* I/O as a
    partition passes its requests through), recorded before it is made."""
    st = os.stat(backing)
    res = run.intend("loop", backing=os.path.realpath(backing), backing_ino=st.st_ino,
                     backing_dev=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", offset_bytes=offset)
    made.append(res)
    argv = (["losetup", "--show", "-f", "-o", str(offset)] + (["--sizelimit", str(size)] if size else [])
            + (["--direct-io=on"] if direct else []) + [backing])
    try:
        dev = _run(argv).strip()
    except BaseException:
        if not devstate.loops_over(os.path.realpath(backing)):
            run.absent(res)
        raise
    run.created(res, device=dev)
    # the read-ahead and request limit the model gives a partition and a loop device (a disk's defaults), not
    # what this loop number's earlier use left (calibrate/harness/queue_defaults.py)
    set_disk_defaults(dev)
    return dev


def _fs(run, made: list, dev: str, kind: str, where: Path) -> Path:
    # Inode tables and journal written now, not by ext4lazyinit while a workload is timed; 4 KiB
    # blocks as the model's file system has (mke2fs would take 1 KiB under 512 MiB, its "small" type).
    _run([f"mkfs.{kind}", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0", dev])
    where.mkdir()
    res = run.intend("mount", mountpoint=str(where))
    made.append(res)
    _run(["mount", dev, str(where)])
    run.created(res)
    return where


def build(run, made: list, drive_path: str, label: str, folder: Path) -> Path:
    """The stack *label* on the emulated drive: the mount point of its top file system."""
    _, kind, host_kind, layers = HOST_STACKS[label]
    dev = _loop(run, made, drive_path, offset=PART_START, size=PART_BYTES, direct=True)
    for i, (allocation, size) in enumerate(zip(layers, IMAGE_SIZES)):
        host = _fs(run, made, dev, host_kind, folder / f"host{i}")
        spec = f"image:size={size},kind={'sparse' if allocation == 'sparse' else 'zero'}"
        for argv in tool_workloads.steps(spec, host):
            _run(argv)
        dev = _loop(run, made, str(host / "image"))
    return _fs(run, made, dev, kind, folder / "top")


def model_stack(label: str, drive: str) -> Stack:
    _, kind, host_kind, layers = HOST_STACKS[label]
    volume = Partition(PART_START, PART_BYTES)
    for allocation, size in zip(layers, IMAGE_SIZES):
        volume = LoopFile(volume, size, allocation=allocation, host_file_system=host_kind, direct_io=False)
    # the drive as the emulator serves it (a preset without its buffer), not the catalogue's preset
    return Stack(FileSystemNode(volume, kind=kind), (model_drive(drive, name="sda"),), label)


def predicted(stack: Stack, spec: str, app_s: float | None = None) -> dict:
    """:func:`diskmodel.model.predict.predict` of the workload string *spec* on *stack*, its
    operations at the pace measured on tmpfs (*app_s*: :mod:`diskmodel.model.iopath.workloads_pace`;
    None: the generator's own): the elapsed time, the application's time, and each drive's
    requests and busy time."""
    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.iopath.workloads_pace import paced
    from diskmodel.model.predict import predict

    ops = parse_workload(spec, sync_at_end=not spec.startswith("dd"))
    p = predict(stack, paced(ops, app_s) if app_s else ops)
    frame = p.timing.device_frame()
    return {"elapsed_s": float(p.elapsed_s), "app_s": float(p.timing.app_s), "stall_s": float(p.timing.stall_s),
            "devices": {str(n): {"requests": int(r["requests"]), "busy_s": float(r["busy_s"]),
                                 "read_bytes": int(r["read_bytes"]), "write_bytes": int(r["write_bytes"])}
                        for n, r in frame.iterrows()}}


def predicted_copy(stack: Stack | dict, copy: FileCopy, pace: dict | None = None) -> dict:
    """The loop-image study's copy on *stack* (or on ``stack[step]`` for each step): each size's dd write and dd read timed on the I/O path
    (:mod:`diskmodel.model.iopath.workloads_copy`), at the pace measured on tmpfs (*pace*: step ->
    seconds); rates as the measurement's (sizes over times)."""
    stacks = stack if isinstance(stack, dict) else {"write": stack, "read": stack}
    rows = []
    for size in copy.file_sizes_bytes:
        w, r = (predicted(stacks[step], f"dd:size={size},step={step}",
                          (pace or {}).get(f"dd:size={size},step={step}"))
                for step in ("write", "read"))
        rows.append({"size_bytes": size, "write_s": w["elapsed_s"], "read_s": r["elapsed_s"],
                     "write_app_s": w["app_s"], "read_app_s": r["app_s"],
                     "write_devices": w["devices"], "read_devices": r["devices"]})
    total = sum(copy.file_sizes_bytes)
    return {"copy write": total / sum(r["write_s"] for r in rows), "copy read": total / sum(r["read_s"] for r in rows),
            "rows": rows}


def pace_on_tmpfs(run, copy: FileCopy, specs: list[str], tool_repeats: int = 1) -> dict:
    """Each workload's time on a tmpfs of its own (no device: the application's own time on this
    machine, now): step or spec -> seconds (each the median of its repeats, as on the stack)."""
    from diskmodel.calibrate.bench.tmpfs import tmpfs_mounted

    windows: list = []
    with tmpfs_mounted(run, 256 << 20) as where:
        rates, tools = measure_cell(where, copy, specs, windows, tool_repeats)
    out: dict = {}
    for label, t0, t1 in windows:
        out.setdefault(label, []).append(t1 - t0)
    pace = {k: statistics.median(v) for k, v in out.items()}
    pace.update({t["spec"]: t["elapsed_s"] for t in tools})
    return pace


def host_copy_rates(out: str) -> dict:
    """The copy's rates on the host from what :func:`copy_on_host` printed, as the VM cells take theirs
    (:mod:`diskmodel.calibrate.bench.stacks_vm`): each size's step the median of its repeats (a repeat the host
    stalled does not move it), and the spread per direction the largest over the sizes of the repeats'
    standard deviation over their mean (the repeats of one size against each other, never one size against
    another)."""
    res = parse_copy_output(out, average=statistics.median)
    spread = parse_copy_spread(out)
    return {"copy write": res.write_bytes_per_s, "copy read": res.read_bytes_per_s,
            "spread": {"copy write": spread["write"], "copy read": spread["read"]},
            "write_s": list(res.write_s), "read_s": list(res.read_s)}


def median_run(runs: list[dict]) -> dict:
    """Of a tool workload's repeats, the run whose time is their median (the lower of the two middle ones
    for an even count: a real run, its details with it), with every repeat's time (``repeats_s``) and their
    spread (``spread``: population standard deviation over mean), as the copy's repeats are taken."""
    times = [r["elapsed_s"] for r in runs]
    middle = statistics.median_low(times)
    spread = statistics.pstdev(times) / statistics.mean(times)
    return dict(next(r for r in runs if r["elapsed_s"] == middle), repeats_s=times, spread=spread)


def measure_cell(mnt: Path, copy: FileCopy, specs: list[str], windows: list,
                 tool_repeats: int = 1) -> tuple[dict, list[dict]]:
    """The loop-image study's copy (rates and per-repeat spread) and the tool workloads (each run
    *tool_repeats* times: :func:`median_run`), in *mnt*; each timed step's span on the wall clock goes to
    *windows* (label, start, end) for the request log."""
    clock = time.time
    out = copy_on_host(str(mnt), copy, run=lambda argv: subprocess.run(argv, capture_output=True, text=True,
                                                                        stdin=subprocess.DEVNULL),
                       drop_caches=drop_caches, clock=clock)
    rates = host_copy_rates(out)
    for line in out.splitlines():
        t = [float(x) for x in line.split()[3:]]
        size = int(line.split()[2]) * MIB
        windows.append((f"dd:size={size},step=write", t[0], t[1]))
        windows.append((f"dd:size={size},step=read", t[2], t[3]))
    tools = []
    for spec in specs:
        runs = []
        for _ in range(tool_repeats):
            r = tool_workloads.measure(spec, mnt).as_dict()
            # the timed span only: not the preparation before it nor the folder's removal after it
            windows.append((spec, r["started_unix_s"], r["started_unix_s"] + r["elapsed_s"]))
            runs.append(r)
        tools.append(median_run(runs))
    return rates, tools


def run_host(args, say) -> list[dict]:
    from diskmodel.calibrate.emulate import emulated_drives

    copy = FileCopy(file_sizes_bytes=tuple(int(s) * MIB for s in args.sizes_mib.split(",")), repeats=args.repeats)
    specs = [f"image:size={args.image_mib}M", f"image:size={args.image_mib}M,kind=sparse",
             "tar:files=200,file_bytes=16k,dirs=2", "bonnie:files=1024"]
    cells = []
    with runstate.ensure_run("stacks_check") as run:
        logs = run.temp_dir("reqlog-")
        for i, label in enumerate(chosen(HOST_STACKS, args.cells)):
            windows: list = []
            logs = Path(args.log_dir) / f"host{i}" if args.log_dir else logs
            logs.mkdir(parents=True, exist_ok=True)
            with emulated_drives([args.drive], say=say, log_dir=logs) as devices:
                drive = devices[0]
                made: list = []
                folder = run.temp_dir("stack-")
                t0, load = time.monotonic(), os.getloadavg()[0]
                pace = pace_on_tmpfs(run, copy, specs, args.tool_repeats)
                try:
                    mnt = build(run, made, drive.path, label, folder)
                    rates, tools = measure_cell(mnt, copy, specs, windows, args.tool_repeats)
                finally:
                    report = run.undo(made)
                    if report.left:
                        raise RuntimeError(f"{label}: teardown left {report.left}")
            view = drive_view(drive.log_path, windows, (PART_START, PART_START + PART_BYTES))
            if args.log_dir:  # each timed step's span, to read the kept log by
                (logs / "windows.json").write_text(json.dumps({"stack": label, "log": str(drive.log_path),
                                                               "windows": windows}))
            stack = model_stack(label, args.drive)
            pred = predicted_copy(stack, copy, pace)
            unpaced = predicted_copy(stack, copy)
            for row in pred["rows"]:
                for step in ("write", "read"):
                    row[f"{step}_emulated_drive"] = view.get(f"dd:size={row['size_bytes']},step={step}")
            for t in tools:
                t["predicted"] = predicted(stack, t["spec"], pace[t["spec"]])
                t["predicted_generator_pace"] = predicted(stack, t["spec"])
                t["tmpfs_s"] = pace[t["spec"]]
                t["emulated_drive"] = view.get(t["spec"])
            cell = {"seed": HOST_STACKS[label][0], "where": "host", "stack": label, "drive": args.drive,
                    "workload": "the loop-image study copy",
                    "definition": f"dd of files of {args.sizes_mib} MiB with conv=fsync, then read back, "
                                  f"{args.repeats} times each, page cache dropped before each, each step the median "
                                  "of its repeats (calibrate/bench/copy.py; model: dd:size=N,step=write|read)",
                    "measured": rates, "predicted": pred, "tools": tools, "load_1min": load, "tmpfs_pace_s": pace,
                    "predicted_generator_pace": {k: unpaced[k] for k in ("copy write", "copy read")},
                    "emulator": drive.summary, "cell_s": time.monotonic() - t0}
            cells.append(cell)
            say(f"{label} (load {load:.1f}): copy write {rates['copy write'] / 1e6:.1f} MB/s, read "
                f"{rates['copy read'] / 1e6:.1f} MB/s (model {pred['copy write'] / 1e6:.1f} / "
                f"{pred['copy read'] / 1e6:.1f})")
            for t in tools:
                say(f"  {t['spec']}  [{t['definition']}]  {t['elapsed_s']:.3f} s; "
                    f"model {t['predicted']['elapsed_s']:.3f} s")
            foreign = {k: v["outside_partition"] for k, v in view.items() if v.get("outside_partition")}
            if foreign:
                cell["outside_partition"] = foreign
                say(f"  requests outside the partition during timed steps (not the stack's): {foreign}")
    return cells


def run_vm(args, copy: FileCopy, say) -> list[dict]:
    """The VM's cells (:mod:`diskmodel.calibrate.bench.stacks_vm`), one boot per group, each cell
    predicted on the same drives at the pace of the copy on the guest's tmpfs."""
    from diskmodel.calibrate.bench import stacks_net, stacks_vm

    cells = []
    for group in [g for g in args.vm_groups.split(",") if g]:
        load = os.getloadavg()[0]
        try:
            logs = None
            if args.log_dir:
                logs = Path(args.log_dir) / f"vm{group}"
                logs.mkdir(parents=True, exist_ok=True)
            link = None
            if group == stacks_net.GROUP:
                layouts, pace, results, summaries, wall, link = stacks_net.measure_group(
                    copy, say=say, only=args.cells, log_dir=logs)
            else:
                layouts, pace, results, summaries, wall = stacks_vm.measure_group(
                    group, copy, say=say, only=args.cells, log_dir=logs)
        except Exception as exc:  # noqa: BLE001 - one group's failure is reported, the others run
            say(f"VM group {group}: failed: {exc}")
            cells.append({"seed": group, "where": "vm", "stack": f"group {group}", "failed": str(exc)[-800:]})
            continue
        if not layouts:
            continue
        steps = stacks_vm.pace_steps(pace)
        say(f"VM group {group} (load {load:.1f}, {wall:.0f} s): the copy on the guest's tmpfs {steps}")
        logged = (stacks_vm.logged_steps(logs, layouts) if logs is not None and link is None
                  else [None] * len(layouts))
        for layout, res, steps_logged in zip(layouts, results, logged):
            workload = stacks_vm.cell_copy(layout, copy)
            mib = ",".join(str(s // MIB) for s in workload.file_sizes_bytes)
            cell = {"seed": layout.seed, "where": "vm", "group": group, "stack": layout.label,
                    "drives": [d.describe() for d in layout.stack.disks], "workload": "the loop-image study copy",
                    "definition": f"dd of files of {mib} MiB with conv=fsync, then read back, "
                                  f"{args.repeats} times each, page cache dropped before each (in the VM; "
                                  "each step the median of its repeats, the pace the cell's own tmpfs copy)",
                    "load_1min": load, "tmpfs_pace_s": steps, "emulators": summaries, "tools": []}
            if isinstance(res, str):
                cell["failed"] = res
                say(f"  {layout.label}: {res[:200]}")
            else:
                result, spread, own, ram = res
                cell["tmpfs_pace_s"] = stacks_vm.pace_steps(own) or steps
                cell["ram_twin_pace_s"] = stacks_vm.pace_steps(ram)
                stack = layout.stack
                if group == stacks_net.GROUP:  # each step on its own stack: the link fit's write or read costs
                    cell["nbd_link"] = link.get(layout.label)
                    stack = stacks_net.step_stacks(layout.label, cell["nbd_link"])
                cell.update(predicted_on_clocks(stack, workload, cell))
                pred = cell["predicted"]
                cell["measured"] = {"copy write": result.write_bytes_per_s, "copy read": result.read_bytes_per_s,
                                    "spread": {"copy write": spread["write"], "copy read": spread["read"]},
                                    "write_s": list(result.write_s), "read_s": list(result.read_s)}
                cell["predicted"] = pred
                if steps_logged is not None:
                    cell["drive_busy_s"] = stacks_vm.drive_busy(layout.stack, workload, cell["tmpfs_pace_s"],
                                                               steps_logged)
                say(f"  {layout.label}: copy write {result.write_bytes_per_s / 1e6:.1f} MB/s, read "
                    f"{result.read_bytes_per_s / 1e6:.1f} MB/s (model {pred['copy write'] / 1e6:.1f} / "
                    f"{pred['copy read'] / 1e6:.1f} on the {cell['clock']} clock; twin over RAM "
                    f"{cell['ram_twin_pace_s']})")
            cells.append(cell)
    return cells




def predicted_on_clocks(stack, copy: FileCopy, cell: dict) -> dict:
    """A VM cell's copy predicted on each clock it has: ``predicted`` on the clock of its stack's twin over
    RAM disks when every step of the copy ran there (``ram_twin_pace_s``), else on the tmpfs clock
    (``tmpfs_pace_s``); ``clock`` names which, ``assumptions`` says so in words, and
    ``predicted_tmpfs_clock`` keeps the tmpfs clock's prediction beside a RAM-clock one. The drives'
    service is composed with either clock alike (:func:`predicted_copy`: the operations issued at that
    clock's pace, the waits for the drives added where the copy waits)."""
    tmpfs = predicted_copy(stack, copy, cell["tmpfs_pace_s"])
    ram = cell.get("ram_twin_pace_s") or {}
    steps = [f"dd:size={size},step={step}" for size in copy.file_sizes_bytes for step in ("write", "read")]
    if not all(ram.get(s) for s in steps):
        return {"predicted": tmpfs, "clock": TMPFS_CLOCK,
                "assumptions": ["the copy's operations on the clock of the same copy on the guest's tmpfs (the "
                                "application alone); the stack's kernel work in the guest is not charged"
                                + (" (its twin over RAM disks did not complete)" if "ram_twin_pace_s" in cell
                                   else "")]}
    return {"predicted": predicted_copy(workers_free(stack), copy, ram), "clock": RAM_CLOCK,
            "predicted_tmpfs_clock": tmpfs,
            "assumptions": ["the copy's operations on the clock of the same copy on a twin of the stack over RAM "
                            "disks in the guest just before (the application and the stack's kernel work: file "
                            "system, md, device-mapper, block layer, loop workers, on the guest's CPU), the "
                            "drives' service added where the copy waits for it; the loop layers' copies are "
                            "that clock's, not charged again"]}


def workers_free(stack: Stack) -> Stack:
    """*stack* with its buffered loop layers' worker time free (no copy cost, no overhead per request):
    on a clock measured on the stack's twin over RAM disks, that time is already the clock's."""
    def free(node):
        if not isinstance(node, LoopFile):
            return node
        return node.evolve(copy_rate_bytes_per_s=math.inf, read_copy_rate_bytes_per_s=None, request_overhead_s=0.0)

    return stack.evolve(file_system=map_nodes(stack.file_system, free))


def chosen(labels, cells: str):
    """The labels that contain one of the |-separated *cells* (all when *cells* is empty)."""
    return [x for x in labels if not cells or any(c in x for c in cells.split("|") if c)]


def reused(path: str, fresh: list[dict], args) -> list[dict]:
    """The measured cells of an earlier artifact at *path* that this run did not measure, each
    predicted again by the current model on its own stack, drives and tmpfs pace."""
    from diskmodel.calibrate.bench import stacks_net, stacks_vm
    try:
        old = json.loads(Path(path).read_text())["details"]["cells"]
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"stacks_check: --reuse {path}: not a stacks_check artifact ({exc})") from None
    have = {c["stack"] for c in fresh}
    vm = {c.label: c.stack for g in stacks_vm.GROUPS.values() for c in g()[1]}
    out = []
    for c in (c for c in old if c["stack"] not in have and c.get("measured")):
        copy = FileCopy(file_sizes_bytes=tuple(r["size_bytes"] for r in c["predicted"]["rows"]), repeats=args.repeats)
        if c.get("group") == stacks_net.GROUP:
            out.append(dict(c, reused_from=path, **predicted_on_clocks(
                stacks_net.step_stacks(c["stack"], c.get("nbd_link")), copy, c)))
            continue
        stack = model_stack(c["stack"], c["drive"]) if c["where"] == "host" else vm[c["stack"]]
        tools = [dict(t, predicted=predicted(stack, t["spec"], t["tmpfs_s"])) for t in c["tools"]]
        busy = c.get("drive_busy_s") and {"drive_busy_s": stacks_vm.drive_busy(
            stack, copy, c["tmpfs_pace_s"], stacks_vm.logged_of(c["drive_busy_s"]))}
        clocks = (predicted_on_clocks(stack, copy, c) if c["where"] == "vm"
                  else {"predicted": predicted_copy(stack, copy, c["tmpfs_pace_s"])})
        out.append(dict(c, reused_from=path, tools=tools, **clocks, **(busy or {})))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drive", default="wd800bd", help="the drive to emulate (a preset; default wd800bd)")
    parser.add_argument("--sizes-mib", default="1,4", help="the loop-image study's copy file sizes [MiB] (default 1,4)")
    parser.add_argument("--repeats", type=int, default=3, help="copy repeats per size (default 3; each step the "
                        "median of its repeats)")
    parser.add_argument("--tool-repeats", type=int, default=3, help="runs of each tool workload in each host "
                        "cell, and on its tmpfs (default 3; each time the median of its runs)")
    parser.add_argument("--image-mib", type=int, default=32, help="the image workloads' size [MiB] (default 32)")
    parser.add_argument("--vm-groups", default="000,002,engineer,net",
                        help="the VM's groups of cells to run, comma-separated (000, 002, 002-limit, engineer, net; '' "
                        "for none)")
    parser.add_argument("--vm-sizes-mib", default="4", help="the copy's file sizes in the VM [MiB] (default 4)")
    parser.add_argument("--host", type=int, default=1, help="run the host cells (1, default) or not (0)")
    parser.add_argument("--cells", default="", help="run only the cells whose labels contain one of these "
                        "|-separated strings (labels hold commas; default: all)")
    parser.add_argument("--log-dir", default="", help="keep the emulated drives' request logs in this directory "
                        "(one folder per host cell and VM group; default: not kept)")
    parser.add_argument("--reuse", default="", help="an earlier stacks_check.json: its measured cells that this "
                        "run does not measure are kept, predicted again by the current model")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    for flag, value in (("--repeats", args.repeats), ("--tool-repeats", args.tool_repeats)):
        if value < 1:
            print(f"stacks_check: {flag} {value}: must be at least 1", file=sys.stderr)
            return 2
    missing = [t for t in TOOLS if not __import__("shutil").which(t)]
    if missing:
        print(f"stacks_check: missing tools: {', '.join(missing)}", file=sys.stderr)
        return 2
    start = time.monotonic()
    say = lambda line: print(line, flush=True)  # noqa: E731
    cells = run_host(args, say=say) if args.host else []
    vm_copy = FileCopy(file_sizes_bytes=tuple(int(s) * MIB for s in args.vm_sizes_mib.split(",")),
                       repeats=args.repeats)
    cells += run_vm(args, vm_copy, say)
    if args.reuse:
        cells += reused(args.reuse, cells, args)
    errs = errors(cells)
    held = orderings(cells)
    decided = [o for o in held if o["decided"]]
    k, n = sum(o["held"] for o in decided), len(decided)
    counted = [e["error_pct"] for e in errs if e["counted"]]
    median = statistics.median(counted) if counted else float("nan")
    # the same median with every VM cell on the tmpfs clock: what the stack's own CPU changes
    on_tmpfs = [e["error_pct"] for e in errors([dict(c, predicted=c.get("predicted_tmpfs_clock", c.get("predicted")))
                                                 for c in cells]) if e["counted"]]
    n_ram = sum(c.get("clock") == RAM_CLOCK for c in cells)
    n_tmpfs = sum(c.get("clock") == TMPFS_CLOCK for c in cells)
    for e in errs:
        print(f"error: {study(e['seed'])} {e['stack']}: {e['figure']}: measured {e['measured']:.4g}, "
              f"predicted {e['predicted']:.4g}: {e['error_pct']:.0f} %{'' if e['counted'] else ' (not counted)'}")
    loo = paper_loo_median()
    not_run = [{"seed": s, "stack": what, "status": why} for s, what, why in NOT_RUN]
    for o in held:
        model = o.get("predicted_ratio")
        print(f"ordering: {o['statement']}: {'held' if o['held'] else 'NOT held'} (ratio {o['measured_ratio']:.2f}, "
              f"spread {o['spread']:.2f}{'' if o['decided'] else ', within the spread: not counted'}"
              + (f"; the model's ratio {model:.2f}, {'holds' if model > 1 else 'does not hold'}" if model else "")
              + ")")
    for c in not_run:
        print(f"not run: {study(c['seed'])} {c['stack']}: {c['status']}")
    figures = {
        "median_error_pct": figure(median, "%", "median |error| of the predictions over the cells run (copy "
                                   "rates, tool workloads' times); the VM cells' copies on the clock of their "
                                   f"stack's twin over RAM disks where it ran ({n_ram} VM cells), on the tmpfs "
                                   f"clock elsewhere ({n_tmpfs} VM cells; the host cells' workloads on theirs)",
                                   decimals=1, headline=True, target=15.0),
        "median_error_pct_tmpfs_clock": figure(statistics.median(on_tmpfs) if on_tmpfs else float("nan"), "%",
                                               "the same median with every VM cell's copy on the tmpfs clock "
                                               "(the application alone)", decimals=1),
        "orderings_held": figure(k, "count", f"the studies' orderings held of {n} decided", decimals=0, headline=True),
        "paper_loo_median_pct": figure(loo if loo is not None else float("nan"), "%",
                                       "djordjevic_loo.json's median (read, not re-run)", decimals=1, headline=True,
                                       target=15.0),
        "run_time_s": figure(time.monotonic() - start, "s", "run time of the check", decimals=0),
    }
    loads = ", ".join(f"{c.get('load_1min', float('nan')):.1f}" for c in cells)
    write_result("stacks_check", figures, options=options_of(parser, args),
                 details={"cells": cells, "errors": errs, "orderings": held, "not_run": not_run},
                 notes=NOTES + [f"{len(not_run)} kinds of seed cell were not run (details.not_run says why)",
                                f"load average (1 min) at the start of each cell: {loads}"] + [
                     f"{sum('reused_from' in c for c in cells)} cells measured by an earlier run ({args.reuse}: "
                     "their reused_from), predicted again by this run's model"] * bool(args.reuse),
                 results_dir=args.results_dir)
    print(f"clocks: {n_ram} VM cells on their stack's twin over RAM disks, {n_tmpfs} VM cells on the tmpfs clock; "
          f"all on the tmpfs clock: median {statistics.median(on_tmpfs) if on_tmpfs else float('nan'):.1f} %")
    print(f"median_error_pct: {median:.1f}")
    print(f"orderings_held: {k}/{n}")
    print(f"paper_loo_median_pct: {loo:.1f}" if loo is not None else "paper_loo_median_pct: not available")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
