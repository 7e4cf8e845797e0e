"""The seeds' stacks on emulated drives, measured with the real tools beside the model's prediction.

    python benchmarks/stacks_check.py [--drive wd800bd] [--sizes-mib 1,4] [--repeats 2]
        [--image-mib 32] [--results-dir DIR]

Needs root, nbdkit with its Python plugin, nbdfuse (``diskmodel emulate``'s needs), mkfs.ext3,
mkfs.ext2, losetup, dd, truncate, tar and bonnie++. What runs:

- **Host cells (seed 003, and seed 000's loop files):** one emulated drive (``--drive``, the
  paper's WD800BD by default: :func:`diskmodel.calibrate.emulate.emulated_drives`, each request
  timed by the drive's simulation). A "partition" of it is a loop device over its bytes 1 MiB ..
  513 MiB (this host's kernel reads no partition table). On it: native ext3; ext3 on a loop
  file over a sparse and over a zero-filled image in that ext3 (``mount -o loop`` as seed 003 did:
  buffered); ext2 on a loop file over a sparse image. On each, seed 003's copy (files of
  ``--sizes-mib``, ``--repeats`` times: :mod:`diskmodel.calibrate.bench.copy`) and the new
  workloads (:mod:`diskmodel.calibrate.bench.tool_workloads`: a zero-filled and a sparse image of
  ``--image-mib``, a tar of a small tree, bonnie++'s file tests), each printed with its definition.
- **Prediction:** :func:`diskmodel.model.predict.predict` of the same stack (the same drive as a
  preset) and workload; where it refuses (it predicts PostMark, fio jobs and the copy today), the
  cell says ``refused`` and its reason.
- **Not run here:** the cells that need md, device-mapper or NBD (seed 000's RAID 1 over a fast and a
  slow drive, LVM and NBD; seed 001's file systems on RAID 1; seed 002's striping over 1-5 drives,
  RAID 5/6 and thin chunk sizes) run in the VM (:mod:`diskmodel.calibrate.bench.vm`), which this
  check does not drive yet: each is listed with that reason.

Orderings (seed 003's statements, held where the measured difference exceeds the spread of the
repeats): native ext3 writes faster than ext3 on a loop file (sparse, zero-filled); a sparse image
is made faster than a zero-filled one. Each ordering of predicted cells is shown for the model too
(``predicted_ratio``), which the count leaves out. The paper's leave-one-out median is
``benchmarks/results/djordjevic_loo.json``'s (``benchmarks/djordjevic_loo.py``), read, not re-run.

Last three lines: ``median_error_pct: X`` (median |error| of the predicted rates over the cells
with both), ``orderings_held: K/N``, ``paper_loo_median_pct: Y``. Writes
``benchmarks/results/stacks_check.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import add_results_dir_option, figure, options_of, write_result  # noqa: E402

from diskmodel.calibrate.bench import tool_workloads  # noqa: E402
from diskmodel.calibrate.bench.copy import copy_on_host, parse_copy_output  # noqa: E402
from diskmodel.calibrate.bench.memory_cgroup import drop_caches  # noqa: E402
from diskmodel.calibrate.harness import devstate, runstate  # noqa: E402
from diskmodel.model.block_workloads import FileCopy  # noqa: E402
from diskmodel.model.drives import PresetDrive  # noqa: E402
from diskmodel.model.loop_file import LoopFile  # noqa: E402
from diskmodel.model.stack import FileSystemNode, Stack  # noqa: E402
from diskmodel.model.volumes import Partition  # noqa: E402

MIB = 1 << 20
PART_START, PART_BYTES, IMAGE_BYTES = MIB, 512 * MIB, 384 * MIB
BENCHMARKS = Path(__file__).resolve().parent
TOOLS = ("losetup", "mount", "umount", "mkfs.ext3", "mkfs.ext2", "dd", "truncate", "tar", "bonnie++")

#: The cells this check does not run, with the seed that states them and why.
VM_REASON = "needs md/device-mapper/NBD: runs in the VM (calibrate/bench/vm.py), not driven by this check yet"
PART_REASON = ("needs a partition table, which this host's kernel does not read (CONFIG_MSDOS_PARTITION unset): "
               "runs in the VM, not driven by this check yet")
VM_CELLS = [
    ("000", "partitions hda1/hda3 (outer and inner zones)", PART_REASON),
    ("000", "RAID 1 over a fast and a slow drive", VM_REASON), ("000", "LVM over one disk", VM_REASON),
    ("000", "NBD to a loop file", VM_REASON), ("001", "ext2, ext3, xfs, ... on RAID 1", VM_REASON),
    ("002", "striping over 1-5 drives at 4, 16, 64, 256 KiB chunks", VM_REASON),
    ("002", "RAID 5 and RAID 6", VM_REASON), ("002", "thin volumes at several chunk sizes", VM_REASON),
]

#: label -> (file system, loop allocation or None for native).
HOST_STACKS = {"native ext3": ("ext3", None), "ext3 on sparse loop": ("ext3", "sparse"),
               "ext3 on zero-filled loop": ("ext3", "zero_filled"), "ext2 on sparse loop": ("ext2", "sparse")}


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
    kind, allocation = HOST_STACKS[label]
    part = _loop(run, made, drive_path, offset=PART_START, size=PART_BYTES, direct=True)
    if allocation is None:
        return _fs(run, made, part, kind, folder / "native")
    host = _fs(run, made, part, "ext3", folder / "host")
    image = host / "image"
    spec = f"image:size={IMAGE_BYTES},kind={'sparse' if allocation == 'sparse' else 'zero'}"
    for argv in tool_workloads.steps(spec, host):
        _run(argv)
    return _fs(run, made, _loop(run, made, str(image)), kind, folder / "top")


def model_stack(label: str, drive: str) -> Stack:
    kind, allocation = HOST_STACKS[label]
    part = Partition(PART_START, PART_BYTES)
    volume = part if allocation is None else LoopFile(part, IMAGE_BYTES, allocation=allocation,
                                                       host_file_system="ext3", direct_io=False)
    return Stack(FileSystemNode(volume, kind=kind), (PresetDrive(drive),), label)


def predicted(stack: Stack, spec: str) -> dict:
    """:func:`diskmodel.model.predict.predict` of the workload string *spec* on *stack*: the elapsed
    time, the requests and busy time the model gives each drive, and its definition."""
    from diskmodel.model.predict import predict

    p = predict(stack, spec)
    frame = p.timing.device_frame()
    return {"elapsed_s": float(p.elapsed_s), "summary_line": p.summary().splitlines()[0],
            "devices": {str(n): {"requests": int(r["requests"]), "busy_s": float(r["busy_s"]),
                                 "read_bytes": int(r["read_bytes"]), "write_bytes": int(r["write_bytes"])}
                        for n, r in frame.iterrows()}}


def predicted_copy(stack: Stack, copy: FileCopy) -> dict:
    """Seed 003's copy on *stack*: each size's dd write and dd read timed on the I/O path
    (:mod:`diskmodel.model.iopath.workloads_copy`); rates as the measurement's (sizes over times)."""
    rows = []
    for size in copy.file_sizes_bytes:
        w, r = (predicted(stack, f"dd:size={size},step={step}") for step in ("write", "read"))
        rows.append({"size_bytes": size, "write_s": w["elapsed_s"], "read_s": r["elapsed_s"],
                     "write_devices": w["devices"], "read_devices": r["devices"]})
    total = sum(copy.file_sizes_bytes)
    return {"copy write": total / sum(r["write_s"] for r in rows), "copy read": total / sum(r["read_s"] for r in rows),
            "rows": rows}


def measure_cell(mnt: Path, copy: FileCopy, specs: list[str], windows: list) -> tuple[dict, list[dict]]:
    """Seed 003's copy (rates and per-repeat spread) and the tool workloads, in *mnt*; each timed
    step's span on the wall clock goes to *windows* (label, start, end) for the request log."""
    clock = time.time
    out = copy_on_host(str(mnt), copy, run=lambda argv: subprocess.run(argv, capture_output=True, text=True,
                                                                        stdin=subprocess.DEVNULL),
                       drop_caches=drop_caches, clock=clock)
    res = parse_copy_output(out)
    writes, reads = [], []
    for line in out.splitlines():
        t = [float(x) for x in line.split()[3:]]
        size = int(line.split()[2]) * MIB
        windows.append((f"dd:size={size},step=write", t[0], t[1]))
        windows.append((f"dd:size={size},step=read", t[2], t[3]))
        writes.append(t[1] - t[0])
        reads.append(t[3] - t[2])
    spread = {"copy write": statistics.pstdev(writes) / statistics.fmean(writes) if len(writes) > 1 else 0.0,
              "copy read": statistics.pstdev(reads) / statistics.fmean(reads) if len(reads) > 1 else 0.0}
    rates = {"copy write": res.write_bytes_per_s, "copy read": res.read_bytes_per_s, "spread": spread,
             "write_s": list(res.write_s), "read_s": list(res.read_s)}
    tools = []
    for spec in specs:
        t0 = clock()
        r = tool_workloads.measure(spec, mnt).as_dict()
        # the span holds the preparation too; the workload is its last elapsed_s
        windows.append((spec, clock() - r["elapsed_s"], clock()))
        tools.append(r)
    return rates, tools


def drive_view(log_path: str, windows: list) -> dict:
    """Per timed step, what the emulated drive served in its span (the request log: requests, the
    simulation's busy time, the emulator's lateness): the drive's own view, beside the model's."""
    from diskmodel.calibrate.emulate import read_log

    try:
        frame = read_log(log_path)
    except (OSError, ValueError) as exc:
        return {"error": str(exc)}
    start = float(frame.attrs.get("started_unix_s", 0.0))
    frame = frame[~frame["probe"].astype(bool)]
    out = {}
    for label, t0, t1 in windows:
        m = (frame["arrival_s"] >= t0 - start) & (frame["arrival_s"] <= t1 - start)
        f = frame[m]
        one = out.setdefault(label, {"spans": 0, "requests": 0, "busy_s": 0.0, "lateness_max_s": 0.0})
        one["spans"] += 1
        one["requests"] += int(len(f))
        one["busy_s"] += float(f["service_s"].sum())
        one["lateness_max_s"] = max(one["lateness_max_s"], float(f["lateness_s"].max()) if len(f) else 0.0)
    for one in out.values():  # per span (the copy repeats each size)
        one["requests"] /= one["spans"]
        one["busy_s"] /= one["spans"]
    return out


def run_host(args, say) -> list[dict]:
    from diskmodel.calibrate.emulate import emulated_drives

    copy = FileCopy(file_sizes_bytes=tuple(int(s) * MIB for s in args.sizes_mib.split(",")), repeats=args.repeats)
    specs = [f"image:size={args.image_mib}M", f"image:size={args.image_mib}M,kind=sparse",
             "tar:files=200,file_bytes=16k,dirs=2", "bonnie:files=1024"]
    cells = []
    with runstate.ensure_run("stacks_check") as run:
        logs = run.temp_dir("reqlog-")
        for label in HOST_STACKS:
            windows: list = []
            with emulated_drives([args.drive], say=say, log_dir=logs) as devices:
                drive = devices[0]
                made: list = []
                folder = run.temp_dir("stack-")
                t0, load = time.monotonic(), os.getloadavg()[0]
                try:
                    mnt = build(run, made, drive.path, label, folder)
                    rates, tools = measure_cell(mnt, copy, specs, windows)
                finally:
                    report = run.undo(made)
                    if report.left:
                        raise RuntimeError(f"{label}: teardown left {report.left}")
            view = drive_view(drive.log_path, windows)
            stack = model_stack(label, args.drive)
            pred = predicted_copy(stack, copy)
            for row in pred["rows"]:
                for step in ("write", "read"):
                    row[f"{step}_emulated_drive"] = view.get(f"dd:size={row['size_bytes']},step={step}")
            for t in tools:
                t["predicted"] = predicted(stack, t["spec"])
                t["emulated_drive"] = view.get(t["spec"])
            cell = {"seed": "003", "where": "host", "stack": label, "drive": args.drive, "workload": "seed 003 copy",
                    "definition": f"dd of files of {args.sizes_mib} MiB with conv=fsync, then read back, "
                                  f"{args.repeats} times each, page cache dropped before each "
                                  "(calibrate/bench/copy.py; model: dd:size=N,step=write|read)",
                    "measured": rates, "predicted": pred, "tools": tools, "load_1min": load,
                    "emulator": drive.summary, "cell_s": time.monotonic() - t0}
            cells.append(cell)
            say(f"{label} (load {load:.1f}): copy write {rates['copy write'] / 1e6:.1f} MB/s, read "
                f"{rates['copy read'] / 1e6:.1f} MB/s (model {pred['copy write'] / 1e6:.1f} / {pred['copy read'] / 1e6:.1f})")
            for t in tools:
                say(f"  {t['spec']}  [{t['definition']}]  {t['elapsed_s']:.3f} s; model {t['predicted']['elapsed_s']:.3f} s")
    return cells


def errors(cells) -> list[dict]:
    """|error| of each predicted figure against its measurement [%]: the copy's write and read
    rates, each tool workload's elapsed time (bonnie++'s file tests, whose time is mostly the
    program's own CPU, are listed but left out of the median: ``counted`` False)."""
    out = []
    for c in cells:
        if c.get("predicted"):
            for key in ("copy write", "copy read"):
                m, p = c["measured"][key], c["predicted"][key]
                out.append({"seed": c["seed"], "stack": c["stack"], "figure": key, "measured": m, "predicted": p,
                            "error_pct": 100.0 * abs(p - m) / m, "counted": True})
        for t in c.get("tools", []):
            m, p = t["elapsed_s"], t["predicted"]["elapsed_s"]
            out.append({"seed": c["seed"], "stack": c["stack"], "figure": t["spec"], "measured": m, "predicted": p,
                        "error_pct": 100.0 * abs(p - m) / m, "counted": not t["spec"].startswith("bonnie")})
    return out


def orderings(cells) -> list[dict]:
    """Seed 003's orderings on the measured cells, held where the difference exceeds the spread."""
    by = {c["stack"]: c for c in cells}
    out = []
    native = by.get("native ext3")
    for label in ("ext3 on sparse loop", "ext3 on zero-filled loop"):
        if native and label in by:
            a, b = native["measured"], by[label]["measured"]
            diff = a["copy write"] / b["copy write"] - 1.0
            spread = a["spread"]["copy write"] + b["spread"]["copy write"]
            pa, pb = native["predicted"], by[label]["predicted"]
            out.append({"statement": f"native ext3 writes faster than {label} (seed 003)",
                        "measured_ratio": 1.0 + diff, "spread": spread, "decided": abs(diff) > spread,
                        "held": diff > 0,
                        "predicted_ratio": pa["copy write"] / pb["copy write"] if pa and pb else None})
    for c in cells:
        images = [x for x in c["tools"] if x["spec"].startswith("image")]
        zero = next((x for x in images if "sparse" not in x["spec"]), None)
        sparse = next((x for x in images if "sparse" in x["spec"]), None)
        if zero and sparse:
            out.append({"statement": f"a sparse image is made faster than a zero-filled one, on {c['stack']} (seed 003)",
                        "measured_ratio": zero["elapsed_s"] / sparse["elapsed_s"], "spread": 0.0, "decided": True,
                        "held": sparse["elapsed_s"] < zero["elapsed_s"],
                        "predicted_ratio": zero["predicted"]["elapsed_s"] / sparse["predicted"]["elapsed_s"]})
    return out


def paper_loo_median() -> float | None:
    path = BENCHMARKS / "results" / "djordjevic_loo.json"
    try:
        return float(json.loads(path.read_text())["figures"]["median_cell_error_pct"]["value"])
    except (OSError, KeyError, ValueError):
        return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drive", default="wd800bd", help="the drive to emulate (a preset; default wd800bd)")
    parser.add_argument("--sizes-mib", default="1,4", help="seed 003's copy file sizes [MiB] (default 1,4)")
    parser.add_argument("--repeats", type=int, default=2, help="copy repeats per size (default 2)")
    parser.add_argument("--image-mib", type=int, default=32, help="the image workloads' size [MiB] (default 32)")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    missing = [t for t in TOOLS if not __import__("shutil").which(t)]
    if missing:
        print(f"stacks_check: missing tools: {', '.join(missing)}", file=sys.stderr)
        return 2
    start = time.monotonic()
    cells = run_host(args, say=lambda line: print(line, flush=True))
    errs = errors(cells)
    held = orderings(cells)
    decided = [o for o in held if o["decided"]]
    k, n = sum(o["held"] for o in decided), len(decided)
    counted = [e["error_pct"] for e in errs if e["counted"]]
    median = statistics.median(counted) if counted else float("nan")
    for e in errs:
        print(f"error: seed {e['seed']} {e['stack']}: {e['figure']}: measured {e['measured']:.4g}, "
              f"predicted {e['predicted']:.4g}: {e['error_pct']:.0f} %{'' if e['counted'] else ' (not counted)'}")
    loo = paper_loo_median()
    not_run = [{"seed": s, "stack": what, "status": why} for s, what, why in VM_CELLS]
    for o in held:
        model = o.get("predicted_ratio")
        print(f"ordering: {o['statement']}: {'held' if o['held'] else 'NOT held'} (ratio {o['measured_ratio']:.2f}, "
              f"spread {o['spread']:.2f}{'' if o['decided'] else ', within the spread: not counted'}"
              + (f"; the model's ratio {model:.2f}, {'holds' if model > 1 else 'does not hold'}" if model else "")
              + ")")
    for c in not_run:
        print(f"not run: seed {c['seed']} {c['stack']}: {c['status']}")
    figures = {
        "median_error_pct": figure(median, "%", "median |error| of the predicted copy rates over the cells run",
                                   decimals=1, headline=True, target=15.0),
        "orderings_held": figure(k, "count", f"seed orderings held of {n} decided", decimals=0, headline=True),
        "paper_loo_median_pct": figure(loo if loo is not None else float("nan"), "%",
                                       "djordjevic_loo.json's median (read, not re-run)", decimals=1, headline=True,
                                       target=15.0),
        "run_time_s": figure(time.monotonic() - start, "s", "run time of the check", decimals=0),
    }
    write_result("stacks_check", figures, options=options_of(parser, args),
                 details={"cells": cells, "errors": errs, "orderings": held, "not_run": not_run},
                 notes=[f"{len(not_run)} seed cells need the VM and were not run (details.not_run says why)",
                        "the new workloads (tar, images, bonnie++) are measured; predict refuses them today"],
                 results_dir=args.results_dir)
    print(f"median_error_pct: {median:.1f}")
    print(f"orderings_held: {k}/{n}")
    print(f"paper_loo_median_pct: {loo:.1f}" if loo is not None else "paper_loo_median_pct: not available")
    return 0


if __name__ == "__main__":
    sys.exit(main())
