"""``diskmodel bench``: build a stack of block layers, run one workload on it, print measured against predicted.

The stack is a stack description (``--stack FILE.json``: partitions, RAID
arrays, thin volumes, loop files, file system; :mod:`diskmodel.model.stacks.stack`),
the workload one of the block workloads of
:mod:`diskmodel.model.predictions.block_workloads`: a fio job by its label
(``seqread_4k``, ``seqwrite_1m``, ``randread_4k``, ``randwrite_1m``, ...;
``--size`` bytes, ``--fresh`` for a first write into a thin volume or a
sparse image) or ``copy`` (the loop-image study's file copy, ``--repeats`` times each
size), or a workload the real tools run in the stack's file system on the host
(``bonnie:...``, ``postmark:...``, ``tar:...``, ``image:...``, ``copy:size=...``:
:mod:`diskmodel.calibrate.bench.tool_workloads`),
its elapsed time against the I/O path's. On the host the scratch PATH (a new file, or an existing file or
block device named again with ``--destroy-data-on``) stands for the stack's
disks; with ``--vm`` (needed for md and LVM where the kernel lacks them)
the stack is built in the throwaway VM, whose timings under TCG measure an
emulator, and the report says so. ``--slow DISK=BYTES_PER_S`` throttles the
loop devices of a disk (reads and writes), to make one member slower.
The prediction is :func:`diskmodel.model.predict.predict` on the same stack.
"""
from __future__ import annotations

import json
import os
import re
import sys

from diskmodel.calibrate.cli import UsageError, flag_error, positive_seconds, quote
from diskmodel.model._checks import FieldError

COPY = "copy"
# The kernel's throttle limits are u64 and U64_MAX means "no limit" (block/blk-throttle.c, tg_set_conf).
_BLK_THROTTLE_MAX = (1 << 64) - 1


def _slow(text: str) -> tuple[str, int]:
    import argparse

    from diskmodel.calibrate.cli.postmark import _bytes

    disk, sep, rate = text.partition("=")
    if not sep or not disk:
        raise argparse.ArgumentTypeError(f"not DISK=BYTES_PER_S: {quote(text)}")
    value = _bytes(rate)
    if value >= _BLK_THROTTLE_MAX:
        raise argparse.ArgumentTypeError(f"{quote(text)}: BYTES_PER_S must be below 2**64 - 1 (the kernel's "
                                         "throttle limit is a u64, and its maximum means no limit)")
    return disk, value


def add_parser(subparsers) -> None:
    from diskmodel.calibrate.cli.postmark import _bytes
    from diskmodel.model.predictions.block_workloads import fio_jobs

    p = subparsers.add_parser("bench", help="run one block workload on a stack of block layers; measured "
                                            "against predicted",
                              description="Build a stack of block layers, run one workload on it, print measured "
                                          "against predicted.")
    p.add_argument("--stack", metavar="FILE.json", required=True, help="the stack description (no default)")
    p.add_argument("--workload", required=True, metavar="NAME",
                   help=f"a fio job ({', '.join(fio_jobs())}), {COPY} (the loop-image study's file copy), or a "
                        "workload the real tools run in the stack's file system on the host: "
                        "bonnie:size=64M,files=1024 (bonnie++), postmark:files=500,transactions=2000 (PostMark), "
                        "tar:files=1000,file_bytes=16k, "
                        "image:size=64M,kind=zero|sparse, copy:size=64M (cp) (no default)")
    p.add_argument("--size", type=_bytes, default=None, metavar="BYTES",
                   help="fio's --size: the bytes a fio job moves, and the region of the device, from its start, "
                        "that it moves them in (a random job reads or writes each block of it once) [bytes; K, M, G: "
                        "powers of 1024] (default 64M)")
    p.add_argument("--fresh", action="store_true",
                   help="the fio job writes blocks never written (first write into a thin volume or sparse image) "
                        "(default: off, blocks written before)")
    p.add_argument("--repeats", type=int, default=None, metavar="N", help="copies of each file size (default 3)")
    p.add_argument("--scratch", metavar="PATH",
                   help="scratch file to create (or an existing file / block device with --destroy-data-on) "
                        "(default: none; required without --vm)")
    p.add_argument("--destroy-data-on", metavar="PATH",
                   help="confirm that the existing file or block device PATH may be overwritten (default: none)")
    p.add_argument("--slow", type=_slow, action="append", default=[], metavar="DISK=BYTES_PER_S",
                   help="throttle the stack's disk DISK to BYTES_PER_S [bytes/s] for reads and writes "
                        "(repeatable; default: none, no throttle)")
    p.add_argument("--vm", action="store_true",
                   help="build the stack in a throwaway qemu VM (default: on the host)")
    p.add_argument("--emulate", metavar="DRIVE",
                   help="build the stack on emulated drives the tool serves, one for each of the stack's disks "
                        "(loop devices on the host; /dev/vdb, /dev/vdc, ... with --vm), each request timed by the "
                        "drive's simulation, and predict it on the same drives; DRIVE as diskmodel emulate takes "
                        "it; needs no --scratch or --destroy-data-on (default: none)")
    p.add_argument("--vm-accelerator", choices=("tcg", "kvm"), default="tcg",
                   help="qemu accelerator with --vm (default tcg: emulated, timings measure qemu)")
    p.add_argument("--vm-timeout", type=positive_seconds, default=1800.0, metavar="S",
                   help="limit for the whole VM run [s] (default 1800)")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON instead of the table (default: the table)")
    p.set_defaults(handler=_run)


def _workload(args):
    from diskmodel.calibrate.bench.tool_workloads import TOOLS, ToolWorkload, is_tool_spec
    from diskmodel.model.predictions.block_workloads import FileCopy, fio_jobs

    jobs = fio_jobs()
    if args.workload not in jobs and args.workload != COPY and not is_tool_spec(args.workload):
        raise UsageError(f"--workload {args.workload}: not one of {', '.join(jobs)}, {COPY}, nor a tool workload "
                         f"NAME:KEY=VALUE,... with NAME one of {', '.join(TOOLS)}")
    given = [flag for flag, value in (("--size", args.size), ("--repeats", args.repeats),
                                      ("--fresh", args.fresh or None)) if value is not None]
    takes = {"--size", "--fresh"} if args.workload in jobs else {"--repeats"} if args.workload == COPY else set()
    unused = [flag for flag in given if flag not in takes]
    if unused:
        what = "a fio job" if unused[0] != "--repeats" else f"{COPY} (the loop-image study's file copy)"
        raise UsageError(f"{unused[0]} does not apply to --workload {args.workload}: it applies to {what}"
                         + (" (a tool workload names its sizes itself, e.g. image:size=64M)"
                            if is_tool_spec(args.workload) else ""))
    try:
        if is_tool_spec(args.workload):
            return ToolWorkload(args.workload)
        if args.workload == COPY:
            return FileCopy(repeats=3 if args.repeats is None else args.repeats)
        return fio_jobs(64 << 20 if args.size is None else args.size, fresh=args.fresh)[args.workload]
    except ValueError as exc:
        reason = re.sub(r"^workload(?: '[^']*'| [a-z]+)?: ?", "", str(exc), count=1)
        raise UsageError(f"--workload {args.workload}: {reason}") from exc


def _stack(args):
    from diskmodel.calibrate import stacks
    from diskmodel.calibrate.bench import provision as L

    try:
        stack = stacks.resolve_drives(stacks.read_stack(args.stack), os.path.dirname(os.path.abspath(args.stack)))
    except ValueError as exc:  # read_stack's errors name the file
        raise UsageError(f"--stack {exc}") from exc
    try:
        L.build_plan(stack, backing="/dev/null")  # everything checked before anything is built
    except ValueError as exc:
        raise UsageError(f"--stack {args.stack}: {exc}") from exc
    return stack


def _check_host_run(stack, args, workload, scratch_file: bool = True) -> None:
    """Before anything is created: every program the run calls is installed, and a new scratch file fits."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.tool_workloads import ToolWorkload
    from diskmodel.model.predictions.block_workloads import FioJob
    from diskmodel.calibrate.harness.tools import require_free_space, require_tools, tools_of_plan

    plan = L.build_plan(stack, backing=os.path.realpath(args.scratch) if scratch_file else "/dev/null",
                        file_system=True)
    needed = tools_of_plan(plan) + (["fio"] if isinstance(workload, FioJob) else
                                    list(workload.programs) if isinstance(workload, ToolWorkload) else [])
    require_tools(needed, "diskmodel bench")
    if args.slow:
        from diskmodel.calibrate.bench.blkio import blkio_available

        ok, why = blkio_available()
        if not ok:
            raise UsageError(f"--slow: cannot throttle on this host: {why}")
    if not scratch_file:
        return
    try:
        require_free_space(args.scratch, L.backing_bytes_required(stack), what="--scratch")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _emulated_drive(args, stack):
    """The drive of --emulate (None without it), checked before anything is built."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.emulate.workloads import emulate_flag

    try:  # each disk on a drive of its own: the largest disk must fit one
        return emulate_flag(args.emulate, max(L.disk_spans_bytes(stack).values()), scratch=args.scratch,
                            destroy_data_on=args.destroy_data_on)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def on_emulated_drives(stack, drive: str):
    """*stack* with each of its disks the emulated *drive* (the drive node the emulator serves,
    :func:`~diskmodel.calibrate.emulate.drives.model_drive`), as ``--emulate`` builds it; and the note that says so."""
    from diskmodel.calibrate.emulate.drives import model_drive

    disks = tuple(model_drive(drive, name=d.name) for d in stack.disks)
    names = ", ".join(d.name for d in stack.disks)
    given = "; ".join(d.describe() for d in stack.disks)
    return (stack.evolve(disks=disks),
            f"--emulate {drive}: each of the stack's disks ({names}) is an emulated {drive} of its own, measured "
            f"and predicted, in place of the stack's disks ({given})")


def _measure(args, stack, workload, slow, emulated):
    """The workload measured on the stack: on the scratch, or on the emulated drive (*emulated*, a DriveSpec)."""
    import contextlib

    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.layers_bench import measure_stack
    from diskmodel.calibrate.emulate.workloads import emulated_disk

    def say(line: str) -> None:
        print(f"diskmodel: {line}", file=sys.stderr, flush=True)

    # the disks the stack's partitions are on, each a drive of its own
    with (emulated_disk(emulated, vm=args.vm, say=say, disks=tuple(L.disk_spans_bytes(stack)))
          if emulated is not None else contextlib.nullcontext()) as disk:
        scratch = disk.path if disk is not None else args.scratch
        destroy = disk.path if disk is not None else args.destroy_data_on
        return measure_stack(stack, [workload], vm=args.vm, scratch=scratch, destroy_data_on=destroy,
                             slow_disks=slow, vm_timeout_s=args.vm_timeout, vm_accelerator=args.vm_accelerator,
                             vm_drives=disk.vm_drives if disk is not None else (),
                             disk_backings=disk.backings if disk is not None else None)


def _tool_rows(measurement, prediction) -> list[dict]:
    """A tool workload's rows: its elapsed time [s], and its rate [bytes/s] where it moves bytes through its
    calls (a sparse image moves none)."""
    details = measurement.details
    rows = [("elapsed_s", details["elapsed_s"], prediction.elapsed_s if prediction is not None else None, "s")]
    if details["bytes_moved"] > 0:
        rows.append(("throughput_bytes_per_s", details["rate_bytes_per_s"],
                     prediction.throughput_bytes_per_s if prediction is not None else None, "bytes/s"))
    return [{"quantity": q, "measured": m, "predicted": p, "unit": unit,
             "error_pct": 100.0 * (p / m - 1.0) if p is not None and m > 0 else None} for q, m, p, unit in rows]


def rows_of(measurement, prediction) -> list[dict]:
    """(quantity, measured, predicted, error_pct) rows of one workload [bytes/s; a tool workload's elapsed
    time in s, its row's ``unit``]; predicted and error_pct are None where the model gave no prediction."""
    from diskmodel.calibrate.bench.tool_workloads import ToolWorkload

    if isinstance(measurement.workload, ToolWorkload):
        return _tool_rows(measurement, prediction)
    if prediction is None:
        return [{"quantity": name, "measured": value, "predicted": None, "error_pct": None}
                for name, value in measurement.rates.items()]
    if "throughput_bytes_per_s" in measurement.rates:
        predicted = {"throughput_bytes_per_s": prediction.throughput_bytes_per_s}
    else:
        predicted = {"write_bytes_per_s": prediction.write_bytes_per_s,
                     "read_bytes_per_s": prediction.read_bytes_per_s}
    return [{"quantity": name, "measured": value, "predicted": predicted[name],
             "error_pct": 100.0 * (predicted[name] / value - 1.0)} for name, value in measurement.rates.items()]


def _run(args) -> int:
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.host_executor import LayoutError
    from diskmodel.calibrate.bench.layers_bench import measure_stack, measurements_json
    from diskmodel.calibrate.cli import ERROR_MAX_CHARS, one_line
    from diskmodel.model.predict import predict
    from diskmodel.calibrate.cli.command_text import check_command_text
    from diskmodel.calibrate.bench.tool_workloads import ToolWorkload
    from diskmodel.calibrate.bench import tool_workloads
    from diskmodel.model.iopath.workload_spec import parse_workload
    from diskmodel.model.iopath.workloads_pace import paced

    check_command_text(args, "--scratch", "--destroy-data-on", "--slow")
    if args.repeats is not None and args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    workload = _workload(args)
    if args.vm and isinstance(workload, ToolWorkload):
        raise UsageError(f"--vm: --workload {args.workload} runs its tools on the host (the VM's guest runs fio and "
                         "the copy only); leave --vm out (with --emulate DRIVE for a drive with mechanics)")
    stack = _stack(args)
    slow = {disk: {"read_bytes_per_s": rate, "write_bytes_per_s": rate} for disk, rate in args.slow}
    # A bad value the model finds (a job larger than the stack) stops the run before anything is built;
    # a stack the model does not time is said beside the measurement, which still runs
    unmodelled = ""
    prediction = None
    emulated = _emulated_drive(args, stack)
    predicted_stack, on_drives = stack, ""
    try:
        # the prediction is of what is measured: with --emulate, the stack's disks are the emulated drives
        if emulated is not None:
            predicted_stack, on_drives = on_emulated_drives(stack, args.emulate)
        prediction = predict(predicted_stack, workload.spec if isinstance(workload, ToolWorkload) else workload)
    except FieldError as exc:
        raise UsageError(f"--stack {args.stack} with --workload {args.workload}: "
                         f"{flag_error(exc, {'size_bytes': '--size'})}") from exc
    except ValueError as exc:
        unmodelled = f"no prediction: {one_line(exc, ERROR_MAX_CHARS)}"
    if not args.vm:
        if not args.scratch and emulated is None:
            raise UsageError("--scratch PATH is required (or pass --vm)")
        if os.geteuid() != 0:
            raise UsageError("diskmodel bench needs root on the host (loop devices, mount, cgroups, drop_caches)")
        try:
            L.require_kernel(stack)
        except L.LayoutUnavailable as exc:
            raise UsageError(str(exc)) from None
        _check_host_run(stack, args, workload, emulated is None)
    elif args.scratch or args.destroy_data_on:
        raise UsageError("--scratch and --destroy-data-on do not apply with --vm (the VM has its own scratch disk)")
    pace = {}
    try:
        if isinstance(workload, ToolWorkload):  # the tool's own time, measured where no device is involved
            pace["tmpfs_pace_s"] = tool_workloads.pace_on_tmpfs(workload.spec)
        (measurement,) = _measure(args, stack, workload, slow, emulated)
    except (LayoutError, RuntimeError) as exc:
        print(f"diskmodel: error: {one_line(exc, ERROR_MAX_CHARS)}", file=sys.stderr)
        return 1
    except ValueError as exc:
        raise UsageError(flag_error(exc, {"slow_disks": "--slow", "vm": "--vm"})) from exc
    if pace and prediction is not None:  # the workload's operations on the tool's measured clock
        pace["predicted_generator_pace_elapsed_s"] = prediction.elapsed_s
        prediction = predict(predicted_stack, paced(parse_workload(workload.spec), pace["tmpfs_pace_s"]))
    rows = rows_of(measurement, prediction)
    note = "; ".join(part for part in (
        "timings measured under TCG: they measure an emulator, not the disk; compare orderings and ratios only"
        if measurement.emulated else "", on_drives, unmodelled,
        f"the prediction puts the workload's operations on the tool's own clock, its time on a tmpfs just before "
        f"({pace['tmpfs_pace_s']:.3f} s: the application alone, no device); at the workload generator's default "
        f"pace it would be {pace['predicted_generator_pace_elapsed_s']:.3f} s"
        if "predicted_generator_pace_elapsed_s" in pace else "") if part)
    if args.json:
        print(json.dumps({"stack": stack.short_name, "workload": measurement.label, "where": measurement.where, **pace,
                          "accelerator": measurement.accelerator, "rows": rows, "note": note,
                          "measurement": measurements_json([measurement])[0]}, indent=2, allow_nan=False))
        return 0
    print(f"stack {stack.short_name}, workload {measurement.label}, on the {measurement.where}"
          f"{' (' + measurement.accelerator + ')' if measurement.accelerator else ''}")
    if isinstance(workload, ToolWorkload):
        print(f"definition: {measurement.details['definition']}")
    print(f"{'quantity':<24} {'measured':>12} {'predicted':>12} {'unit':>5} {'error %':>8}")
    for row in rows:
        scale, unit = (1.0, "s") if row.get("unit") == "s" else (1e6, "MB/s")
        predicted = "-" if row["predicted"] is None else f"{row['predicted'] / scale:.3f}"
        error = "-" if row["error_pct"] is None else f"{row['error_pct']:+.1f}"
        print(f"{row['quantity']:<24} {row['measured'] / scale:>12.3f} {predicted:>12} {unit:>5} {error:>8}")
    if note:
        print(f"note: {note}")
    return 0
