"""What reaches each device: model/iopath's predicted request streams against blktrace's measured ones.

A matrix of cells, each a stack and a workload run for real under blktrace:

- host stacks (loop devices): a loop file, zero-filled, sparse, and nested two deep, under O_DIRECT fio;
- host page-cache cells (calibrate/trace/fs_cells.py): ext2, ext3, ext4, xfs and btrfs on a loop
  device under PostMark tests 1-3 (scaled to run in seconds), buffered fio (sequential writes at 1
  MiB and 4 KiB, random writes at 4 KiB, sequential reads at 1 MiB, random reads at 4 KiB), ``cp``
  and the creation, stat and deletion of many small files, each without a memory limit and in a
  64 MiB memory cgroup;
- host btrfs raid0 and raid1 cells (calibrate/trace/btrfs_raid_cells.py): one btrfs over two loop
  devices, data and metadata of the profile, under the same page-cache workloads;
- VM page-cache cells (calibrate/trace/vm_fs_cells.py): jfs and reiserfs, which the host's kernel
  lacks, on the VM's scratch disk under the same page-cache workloads, with and without the cgroup;
- VM stacks (the throwaway VM's kernel has md, device-mapper and MBR partitions): a partition; md
  RAID 0, 1, 5 and 6; dm-linear; LVM-2 (a linear volume of two segments on two PVs, made with
  dmsetup as LVM makes it); dm-striped; a thin volume; under fio's sequential and random reads
  and writes at 4 KiB and 1 MiB, at queue depth 1 and 32, with O_DIRECT.

The prediction of an O_DIRECT cell is a function of (stack, workload): fio's own log of the
requests it issued (the top stream) through the stack's layer of model/iopath, split at the traced
device's max_sectors_kb (host). The prediction of a page-cache cell is the workload's file
operations through model/iopath's whole path (page cache, file system, the device's queue). Per
device of every cell: bytes (read plus written) and request counts as the prediction's relative
error, and the total-variation distance of the power-of-two request-size histograms. The table is
by layer (a page-cache cell's layer is its file system); the last four lines are ``cells: N``,
``bytes_median_error_pct: X``, ``requests_median_error_pct: Y`` and ``size_tv_median: Z``.

Left out, said so in the artifact's notes: the block layer's merging of adjacent requests across
issue instants.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402


def _host_rows(stacks, workloads, say):
    from diskmodel.calibrate.trace.host_cells import run_host_cell
    from diskmodel.calibrate.trace.matrix import compare, predict
    from diskmodel.model.iopath import split

    rows = []
    for stack in stacks:
        for w in workloads:
            top, trace, layer, max_kb = run_host_cell(stack, w)
            for dev, pred in predict(layer, top, w.iodepth).items():
                pred = split(pred, max_kb)
                meas = trace.devices[dev].stream
                rows.append({"where": "host", "stack": stack, "layer": layer.kind, "workload": w.name,
                             "device": dev, **compare(pred, meas)})
            say(f"{stack}/{w.name}: done")
    return rows


def _fs_rows(kinds, workloads, memories, keep_dir, from_dir, say):
    """The page-cache cells: each file system under each workload, without and with a memory cgroup.
    A cell's measured trace is kept in *keep_dir* (``KIND-WORKLOAD-MEMORY.npz``, with the traced
    device's name and read-ahead in a ``.json``); with *from_dir*, read from there instead of being
    run, a cell it lacks being run and kept there."""
    import json

    from diskmodel.calibrate.trace import load_trace, save_trace
    from diskmodel.calibrate.trace.fs_cells import predict_fs_cell, run_fs_cell
    from diskmodel.calibrate.trace.matrix import compare

    rows = []
    for kind in kinds:
        for w in workloads:
            for memory in memories:
                stem = f"{kind}-{w.name}-{memory}"
                folder = Path(from_dir or keep_dir) if (from_dir or keep_dir) else None
                if from_dir is not None and (folder / f"{stem}.json").exists():
                    trace = load_trace(folder / f"{stem}.npz")
                    info = json.loads((folder / f"{stem}.json").read_text())
                    dev, ra_kb = info["device"], info["read_ahead_kb"]
                else:
                    trace, dev, ra_kb = run_fs_cell(kind, w, memory)
                    if folder is not None:
                        folder.mkdir(parents=True, exist_ok=True)
                        save_trace(trace, folder / f"{stem}.npz")
                        (folder / f"{stem}.json").write_text(json.dumps({"device": dev, "read_ahead_kb": ra_kb}))
                pred = predict_fs_cell(kind, w, memory, dev, ra_kb)
                row = {"where": "host", "stack": f"{kind}_{memory}", "layer": kind, "workload": w.name,
                       "device": dev, **compare(pred, trace.devices[dev].stream)}
                rows.append(row)
                say(f"{stem}: bytes {row['predicted_bytes']} vs {row['measured_bytes']}, "
                    f"requests {row['predicted_requests']} vs {row['measured_requests']}, tv {row['size_tv']:.2f}")
    return rows


def _vm_rows(stacks, workloads, timeout_s, saved, say):
    from diskmodel.calibrate.trace.matrix import as_bios, compare, predict
    from diskmodel.calibrate.trace.vm_cells import SCRATCH_BYTES, VM_STACKS, guest_script, parse_guest_output
    from diskmodel.model.iopath import split

    if saved is not None:
        output = Path(saved).read_text()
    else:
        from diskmodel.calibrate.bench.vm import run_script_in_vm

        cells = [(s, w) for s in stacks for w in workloads]
        res = run_script_in_vm(guest_script(cells), scratch_disk_bytes=SCRATCH_BYTES, memory_bytes=1 << 30,
                               timeout_s=timeout_s, log=None)
        if res.returncode != 0:
            raise RuntimeError(f"the VM's script failed (exit {res.returncode}): {res.output.strip()[-300:]}")
        output = res.output
    by_name = {w.name: w for w in workloads}
    rows = []
    for stack, wname, top, trace, max_kb in parse_guest_output(output):
        if wname not in by_name:
            continue
        w = by_name[wname]
        layer = VM_STACKS[stack]()[2]
        for dev, pred in as_bios(layer, top, predict(layer, top, w.iodepth)).items():
            if dev == "vda":  # the request-based scratch disk splits at its max_sectors_kb
                pred = split(pred, max_kb)
            meas = trace.devices[dev].stream if dev in trace.devices else pred.take(slice(0, 0))
            rows.append({"where": "vm", "stack": stack, "layer": layer.kind, "workload": wname, "device": dev,
                         **compare(pred, meas)})
    say(f"VM: {len(rows)} device rows")
    return rows, output


def _median(values):
    return statistics.median(values) if values else float("nan")


def _table(rows) -> list[str]:
    lines = [f"{'layer':<10} {'devices':>7} {'bytes_err_med%':>14} {'bytes_err_p90%':>14} {'req_err_med%':>12} "
             f"{'size_tv_med':>11}"]
    for layer in sorted({r["layer"] for r in rows}):
        sel = [r for r in rows if r["layer"] == layer]
        b = sorted(r["bytes_error_pct"] for r in sel)
        p90 = b[min(len(b) - 1, int(round(0.9 * (len(b) - 1))))]
        lines.append(f"{layer:<10} {len(sel):>7} {_median(b):>14.2f} {p90:>14.2f} "
                     f"{_median([r['requests_error_pct'] for r in sel]):>12.2f} "
                     f"{_median([r['size_tv'] for r in sel]):>11.3f}")
    return lines


#: The prefix of a note carried from the artifact whose rows were kept (--keep-rows-from).
KEPT = "kept rows' artifact: "


def _parser():
    from diskmodel.calibrate.trace.fs_cells import FS_KINDS, FS_WORKLOADS, MEMORY_LIMITS
    from diskmodel.calibrate.trace.host_cells import HOST_STACKS
    from diskmodel.calibrate.trace.matrix import WORKLOADS
    from diskmodel.calibrate.trace.vm_cells import VM_STACKS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host-stacks", default=",".join(HOST_STACKS),
                    help=f"host stacks to run, comma-separated, or 'none' (default: all: {','.join(HOST_STACKS)})")
    ap.add_argument("--vm-stacks", default=",".join(VM_STACKS),
                    help=f"VM stacks to run, comma-separated, or 'none' (default: all: {','.join(VM_STACKS)})")
    ap.add_argument("--workloads", default=",".join(w.name for w in WORKLOADS),
                    help="workloads, comma-separated (default: all)")
    ap.add_argument("--file-systems", default=",".join(FS_KINDS),
                    help=f"file systems of the page-cache cells, comma-separated, or 'none' (default: all: "
                         f"{','.join(FS_KINDS)})")
    ap.add_argument("--fs-workloads", default=",".join(w.name for w in FS_WORKLOADS),
                    help="page-cache workloads, comma-separated (default: all)")
    ap.add_argument("--memory", default=",".join(MEMORY_LIMITS),
                    help=f"memory limits of the page-cache cells, comma-separated (default: all: {','.join(MEMORY_LIMITS)})")
    ap.add_argument("--keep-fs-traces", default=None,
                    help="keep the page-cache cells' measured traces in this folder (default: not kept)")
    ap.add_argument("--fs-traces-from", default=None,
                    help="read the page-cache cells' measured traces from this folder (kept by an earlier run) "
                         "instead of running them; the cells it lacks are run and kept there (default: run them)")
    ap.add_argument("--btrfs-raid", default="raid0,raid1",
                    help="btrfs multi-device profiles of the host cells, comma-separated, or 'none' (default: raid0,raid1)")
    ap.add_argument("--btrfs-raid-traces-from", default=None,
                    help="read the btrfs raid cells' traces from this folder (kept by an earlier run) instead of "
                         "running them; the cells it lacks are run (default: run them)")
    ap.add_argument("--keep-btrfs-raid-traces", default=None,
                    help="keep the btrfs raid cells' traces in this folder (default: not kept)")
    ap.add_argument("--vm-file-systems", default="jfs,reiserfs",
                    help="file systems of the VM's page-cache cells, comma-separated, or 'none' (default: jfs,reiserfs)")
    ap.add_argument("--vm-fs-output", default=None,
                    help="read the VM page-cache cells' guest output from this file (kept by an earlier run with "
                         "--keep-vm-fs-output) instead of booting the VM (default: boot it)")
    ap.add_argument("--keep-vm-fs-output", default=None,
                    help="write the VM page-cache cells' guest output there (default: not kept)")
    ap.add_argument("--vm-timeout", type=float, default=3000.0, help="limit for the VM run [s] (default: 3000)")
    ap.add_argument("--vm-output", default=None,
                    help="read the VM's output from this file (kept by an earlier run) instead of booting it "
                         "(default: boot the VM)")
    ap.add_argument("--host-rows-from", default=None,
                    help="take the host cells' rows from this artifact of an earlier run (its VM stacks 'none') "
                         "instead of running them (default: run them)")
    ap.add_argument("--fs-rows-from", default=None,
                    help="take the host page-cache cells' rows from this artifact of an earlier run instead of running "
                         "or predicting them (default: run them)")
    ap.add_argument("--vm-rows-from", default=None,
                    help="take the VM cells' rows from this artifact of an earlier run instead of booting the VM "
                         "(default: boot it)")
    ap.add_argument("--keep-vm-output", default=None, help="write the VM's raw output there (default: not kept)")
    ap.add_argument("--keep-rows-from", default=None,
                    help="keep every row of this artifact of an earlier run whose cell this run does not "
                         "produce (to re-run a few cells; give 'none' for the parts not re-run) "
                         "(default: keep none)")
    ap.add_argument("--note", action="append", default=[],
                    help="a line to add to the artifact's notes (how the run went: cells run again, revisions "
                         "made after seeing the figures); may be given more than once (default: none)")
    add_results_dir_option(ap)
    return ap


def _pick(text, known, what):
    """The names of a comma-separated option, each checked against *known*; [] for 'none'."""
    if text == "none":
        return []
    names = [n for n in text.split(",") if n]
    bad = [n for n in names if n not in known]
    if bad:
        raise SystemExit(f"iopath_check: error: --{what} {bad[0]!r} is not one of {', '.join(known)}")
    return names


def _picked(args) -> dict:
    """Every name option, checked before any cell runs (a misspelt last option once cost a whole run)."""
    from diskmodel.calibrate.trace.btrfs_raid_cells import RAID_PROFILES
    from diskmodel.calibrate.trace.fs_cells import FS_KINDS, FS_WORKLOADS, MEMORY_LIMITS
    from diskmodel.calibrate.trace.host_cells import HOST_STACKS
    from diskmodel.calibrate.trace.matrix import WORKLOADS
    from diskmodel.calibrate.trace.vm_cells import VM_STACKS
    from diskmodel.calibrate.trace.vm_fs_cells import VM_FS_KINDS

    wl = {w.name: w for w in WORKLOADS}
    fs_wl = {w.name: w for w in FS_WORKLOADS}
    return {"workloads": [wl[n] for n in _pick(args.workloads, list(wl), "workloads")],
            "host_stacks": _pick(args.host_stacks, list(HOST_STACKS), "host-stacks"),
            "file_systems": _pick(args.file_systems, list(FS_KINDS), "file-systems"),
            "fs_workloads": [fs_wl[n] for n in _pick(args.fs_workloads, list(fs_wl), "fs-workloads")],
            "memory": _pick(args.memory, list(MEMORY_LIMITS), "memory"),
            "btrfs_raid": _pick(args.btrfs_raid, list(RAID_PROFILES), "btrfs-raid"),
            "vm_file_systems": _pick(args.vm_file_systems, list(VM_FS_KINDS), "vm-file-systems"),
            "vm_stacks": _pick(args.vm_stacks, list(VM_STACKS), "vm-stacks")}


def _rows_from(path, keep) -> list[dict]:
    """The rows of an earlier run's artifact that *keep* accepts."""
    import json

    return [r for r in json.loads(Path(path).read_text())["details"]["rows"] if keep(r)]


def _rows(args, picked, say) -> list[dict]:
    """Every cell's rows: run, or read from the earlier artifacts and outputs the options name."""
    from diskmodel.calibrate.trace.btrfs_raid_cells import btrfs_raid_rows
    from diskmodel.calibrate.trace.fs_cells import FS_KINDS
    from diskmodel.calibrate.trace.vm_fs_cells import vm_fs_rows

    if args.host_rows_from:
        rows = _rows_from(args.host_rows_from, lambda r: r["where"] == "host" and r["layer"] == "loop")
    else:
        rows = _host_rows(picked["host_stacks"], picked["workloads"], say)
    if args.fs_rows_from:
        rows += _rows_from(args.fs_rows_from, lambda r: r["where"] == "host" and r["layer"] in FS_KINDS)
    rows += _fs_rows(picked["file_systems"], picked["fs_workloads"], picked["memory"], args.keep_fs_traces,
                     args.fs_traces_from, say)
    rows += btrfs_raid_rows(picked["btrfs_raid"], picked["fs_workloads"], picked["memory"],
                            args.btrfs_raid_traces_from, args.keep_btrfs_raid_traces, say)
    if picked["vm_file_systems"]:
        rows += vm_fs_rows(picked["vm_file_systems"], picked["fs_workloads"], picked["memory"], args.vm_fs_output,
                           args.keep_vm_fs_output, args.vm_timeout, say)
    vm_stacks = picked["vm_stacks"]
    if args.vm_rows_from:
        rows += _rows_from(args.vm_rows_from, lambda r: r["where"] == "vm" and r["stack"] in vm_stacks)
    elif vm_stacks:
        vm_rows, output = _vm_rows(vm_stacks, picked["workloads"], args.vm_timeout, args.vm_output, say)
        rows += vm_rows
        if args.keep_vm_output:
            Path(args.keep_vm_output).write_text(output)
    if args.keep_rows_from:
        ran = {(r["where"], r["stack"], r["workload"]) for r in rows}
        rows = _rows_from(args.keep_rows_from, lambda r: (r["where"], r["stack"], r["workload"]) not in ran) + rows
    return rows


def _p90(values) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))] if v else float("nan")


def _figures(rows, pc) -> dict:
    """The artifact's figures: all device rows, and the page-cache cells' (*pc*) alone."""
    cells = len({(r["where"], r["stack"], r["workload"]) for r in rows})
    return {
        "cells": figure(cells, "", "cells (stack x workload) run under blktrace", decimals=0),
        "bytes_median_error_pct": figure(_median([r["bytes_error_pct"] for r in rows]), "%",
                                         "bytes per device: median |error| of the prediction",
                                         decimals=2, headline=True, target=10),
        "requests_median_error_pct": figure(_median([r["requests_error_pct"] for r in rows]), "%",
                                            "requests per device: median |error|", decimals=2, headline=True,
                                            target=20),
        "size_tv_median": figure(_median([r["size_tv"] for r in rows]), "",
                                 "request-size histogram: median total-variation distance",
                                 decimals=3, headline=True, target=0.2),
        "pagecache_bytes_median_error_pct": figure(_median([r["bytes_error_pct"] for r in pc]), "%",
                                                   "page-cache cells: bytes per device, median |error|",
                                                   decimals=2, target=10),
        "pagecache_bytes_p90_error_pct": figure(_p90([r["bytes_error_pct"] for r in pc]), "%",
                                                "page-cache cells: bytes per device, 90th percentile |error|",
                                                decimals=2, target=30),
        "pagecache_requests_median_error_pct": figure(_median([r["requests_error_pct"] for r in pc]), "%",
                                                      "page-cache cells: requests per device, median |error|",
                                                      decimals=2, target=20),
        "pagecache_size_tv_median": figure(_median([r["size_tv"] for r in pc]), "",
                                           "page-cache cells: request-size histogram, median TV distance",
                                           decimals=3, target=0.2),
    }


#: What every run says about how its cells were made.
NOTES = ["page-cache cells (file systems on a host loop device) run on the host, jfs and reiserfs in the VM; "
         "the VM's stacks run O_DIRECT fio",
         "btrfs raid0/raid1 (host, two loop devices): a raid1 read goes to the mirror the reading task's pid "
         "picks (find_live_mirror); each cell keeps its reader's pid (blkparse's Q events) and the model "
         "reads from that mirror (cells kept from before pids were recorded: the first)",
         "the VM runs under TCG: counts and sizes do not depend on its speed",
         "host cells split a request at max_segments 4 KiB pages: whether fio's buffer is physically "
         "contiguous (a transparent huge page) varies from run to run, and with it whether a 1 MiB request "
         "reaches the device whole or in two",
         "RAID 1 reads: model/iopath's read balancing sends every read at queue depth 1 to the first mirror; "
         "the measured kernel spreads them"]

#: The options that read earlier runs' work, and what each read.
READ_FROM = (("host_rows_from", "host O_DIRECT loop rows"), ("vm_output", "VM output"),
             ("fs_rows_from", "host page-cache rows"), ("vm_fs_output", "VM page-cache cells' guest output"),
             ("btrfs_raid_traces_from", "btrfs raid cells' traces"), ("vm_rows_from", "VM O_DIRECT rows"),
             ("keep_rows_from", "rows of the cells not run here"),
             ("fs_traces_from", "page-cache cells' measured traces"))


def _values(figures) -> dict:
    """Each figure's value, NaN where it has none (no row to take a median of)."""
    return {k: float("nan") if v["value"] is None else v["value"] for k, v in figures.items()}


def _kept_notes(earlier: list[str], notes: list[str]) -> list[str]:
    """The notes of the artifact whose rows were kept, each once, with one KEPT prefix (an artifact
    that kept rows itself already carries some with it), leaving out its own run's figures."""
    out = []
    for n in earlier:
        while n.startswith(KEPT):
            n = n[len(KEPT):]
        if n.startswith(("wall time", "page-cache cells alone")) or n in notes or KEPT + n in out:
            continue
        out.append(KEPT + n)
    return out


def _notes(args, figures, pc, wall_s) -> list[str]:
    notes = [*NOTES, f"wall time {wall_s:.0f} s"]
    if pc:
        f = _values(figures)
        notes.append(f"page-cache cells alone ({len(pc)} device rows): bytes median |error| "
                     f"{f['pagecache_bytes_median_error_pct']:.2f} %, 90th percentile "
                     f"{f['pagecache_bytes_p90_error_pct']:.2f} %; requests median |error| "
                     f"{f['pagecache_requests_median_error_pct']:.2f} %; size TV median "
                     f"{f['pagecache_size_tv_median']:.3f}")
    notes += [f"{what} read from {getattr(args, opt)} (recorded by an earlier run, not re-measured)"
              for opt, what in READ_FROM if getattr(args, opt)]
    notes += args.note
    if args.keep_rows_from:  # how the kept rows came about
        import json

        notes += _kept_notes(json.loads(Path(args.keep_rows_from).read_text())["notes"], notes)
    return notes


def main(argv=None) -> int:
    from diskmodel.calibrate.trace.fs_cells import FS_KINDS
    from diskmodel.calibrate.trace.vm_fs_cells import VM_FS_KINDS

    ap = _parser()
    args = ap.parse_args(argv)
    if args.fs_rows_from:  # the page-cache rows are read, none run (and the artifact's options say so)
        args.file_systems = "none"
    picked = _picked(args)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    t0 = time.monotonic()
    rows = _rows(args, picked, say)
    pc = [r for r in rows if r["layer"] in FS_KINDS + VM_FS_KINDS]
    figures = _figures(rows, pc)
    notes = _notes(args, figures, pc, time.monotonic() - t0)
    write_result("iopath_check", figures, options=options_of(ap, args, housekeeping=("note",)),
                 results_dir=args.results_dir, details={"rows": rows}, notes=notes)
    for line in _table(rows):
        print(line)
    f = _values(figures)
    print(f"cells: {f['cells']:.0f}")
    print(f"bytes_median_error_pct: {f['bytes_median_error_pct']:.2f}")
    print(f"requests_median_error_pct: {f['requests_median_error_pct']:.2f}")
    print(f"size_tv_median: {f['size_tv_median']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
