"""``diskmodel bench``: build a stack of block layers, run one workload on it, print measured against predicted.

The stack is a stack description (``--stack FILE.json``: partitions, RAID
arrays, thin volumes, loop files, file system; :mod:`diskmodel.model.stacks.stack`),
the workload one of the block workloads of
:mod:`diskmodel.model.predictions.block_workloads`: a fio job by its label
(``seqread_4k``, ``seqwrite_1m``, ``randread_4k``, ``randwrite_1m``, ...;
``--size`` bytes, ``--fresh`` for a first write into a thin volume or a
sparse image) or ``copy`` (the loop-image study's file copy, ``--repeats`` times each
size). On the host the scratch PATH (a new file, or an existing file or
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
    p.add_argument("--workload", required=True, choices=(*fio_jobs(), COPY), metavar="NAME",
                   help=f"a fio job ({', '.join(fio_jobs())}) or {COPY} (the loop-image study's file copy) "
                        "(no default)")
    p.add_argument("--size", type=_bytes, default=64 << 20, metavar="BYTES",
                   help="bytes a fio job moves [bytes; K, M, G: powers of 1024] (default 64M)")
    p.add_argument("--fresh", action="store_true",
                   help="the fio job writes blocks never written (first write into a thin volume or sparse image) "
                        "(default: off, blocks written before)")
    p.add_argument("--repeats", type=int, default=3, metavar="N", help="copies of each file size (default 3)")
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
                   help="build the stack on an emulated drive the tool serves, which stands for the stack's disks "
                        "as a scratch device does (a loop device on the host; /dev/vdb with --vm), each request "
                        "timed by the drive's simulation; DRIVE as diskmodel emulate takes it; needs no --scratch "
                        "or --destroy-data-on (default: none)")
    p.add_argument("--vm-accelerator", choices=("tcg", "kvm"), default="tcg",
                   help="qemu accelerator with --vm (default tcg: emulated, timings measure qemu)")
    p.add_argument("--vm-timeout", type=positive_seconds, default=1800.0, metavar="S",
                   help="limit for the whole VM run [s] (default 1800)")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON instead of the table (default: the table)")
    p.set_defaults(handler=_run)


def _workload(args):
    from diskmodel.model.predictions.block_workloads import FileCopy, fio_jobs

    try:
        if args.workload == COPY:
            if args.fresh:
                raise UsageError("--fresh applies to fio jobs (the copy's first repeat writes fresh blocks)")
            return FileCopy(repeats=args.repeats)
        return fio_jobs(args.size, fresh=args.fresh)[args.workload]
    except ValueError as exc:
        raise UsageError(f"--workload {args.workload}: {exc}") from exc


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


def _check_host_run(stack, args, scratch_file: bool = True) -> None:
    """Before anything is created: every program the run calls is installed, and a new scratch file fits."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.harness.tools import require_free_space, require_tools, tools_of_plan

    plan = L.build_plan(stack, backing=os.path.realpath(args.scratch) if scratch_file else "/dev/null",
                        file_system=True)
    needed = tools_of_plan(plan) + (["fio"] if args.workload != COPY else [])
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

    try:
        return emulate_flag(args.emulate, L.backing_bytes_required(stack), scratch=args.scratch,
                            destroy_data_on=args.destroy_data_on)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _measure(args, stack, workload, slow, emulated):
    """The workload measured on the stack: on the scratch, or on the emulated drive (*emulated*, a DriveSpec)."""
    import contextlib

    from diskmodel.calibrate.bench.layers_bench import measure_stack
    from diskmodel.calibrate.emulate.workloads import emulated_disk

    def say(line: str) -> None:
        print(f"diskmodel: {line}", file=sys.stderr, flush=True)

    with (emulated_disk(emulated, vm=args.vm, say=say) if emulated is not None
          else contextlib.nullcontext()) as disk:
        scratch = disk.path if disk is not None else args.scratch
        destroy = disk.path if disk is not None else args.destroy_data_on
        return measure_stack(stack, [workload], vm=args.vm, scratch=scratch, destroy_data_on=destroy,
                             slow_disks=slow, vm_timeout_s=args.vm_timeout, vm_accelerator=args.vm_accelerator,
                             vm_drives=disk.vm_drives if disk is not None else ())


def rows_of(measurement, prediction) -> list[dict]:
    """(quantity, measured, predicted, error_pct) rows of one workload [bytes/s]; predicted and error_pct
    are None where the model gave no prediction."""
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

    check_command_text(args, "--scratch", "--destroy-data-on", "--slow")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    workload = _workload(args)
    stack = _stack(args)
    slow = {disk: {"read_bytes_per_s": rate, "write_bytes_per_s": rate} for disk, rate in args.slow}
    # A bad value the model finds (a job larger than the stack) stops the run before anything is built;
    # a layer the model does not time (btrfs RAID has no request-level path) is said beside the
    # measurement, which still runs
    unmodelled = ""
    prediction = None
    try:
        prediction = predict(stack, workload)
    except FieldError as exc:
        raise UsageError(f"--stack {args.stack} with --workload {args.workload}: "
                         f"{flag_error(exc, {'size_bytes': '--size'})}") from exc
    except ValueError as exc:
        unmodelled = f"no prediction: {one_line(exc, ERROR_MAX_CHARS)}"
    emulated = _emulated_drive(args, stack)
    if not args.vm:
        if not args.scratch and emulated is None:
            raise UsageError("--scratch PATH is required (or pass --vm)")
        if os.geteuid() != 0:
            raise UsageError("diskmodel bench needs root on the host (loop devices, mount, cgroups, drop_caches)")
        try:
            L.require_kernel(stack)
        except L.LayoutUnavailable as exc:
            raise UsageError(str(exc)) from None
        _check_host_run(stack, args, emulated is None)
    elif args.scratch or args.destroy_data_on:
        raise UsageError("--scratch and --destroy-data-on do not apply with --vm (the VM has its own scratch disk)")
    try:
        (measurement,) = _measure(args, stack, workload, slow, emulated)
    except (LayoutError, RuntimeError) as exc:
        print(f"diskmodel: error: {one_line(exc, ERROR_MAX_CHARS)}", file=sys.stderr)
        return 1
    except ValueError as exc:
        raise UsageError(flag_error(exc, {"slow_disks": "--slow", "vm": "--vm"})) from exc
    rows = rows_of(measurement, prediction)
    note = "; ".join(part for part in (
        "timings measured under TCG: they measure an emulator, not the disk; compare orderings and ratios only"
        if measurement.emulated else "", unmodelled) if part)
    if args.json:
        print(json.dumps({"stack": stack.short_name, "workload": measurement.label, "where": measurement.where,
                          "accelerator": measurement.accelerator, "rows": rows, "note": note,
                          "measurement": measurements_json([measurement])[0]}, indent=2, allow_nan=False))
        return 0
    print(f"stack {stack.short_name}, workload {measurement.label}, on the {measurement.where}"
          f"{' (' + measurement.accelerator + ')' if measurement.accelerator else ''}")
    print(f"{'quantity':<24} {'measured MB/s':>14} {'predicted MB/s':>15} {'error %':>8}")
    for row in rows:
        if row["predicted"] is None:
            print(f"{row['quantity']:<24} {row['measured'] / 1e6:>14.2f} {'-':>15} {'-':>8}")
            continue
        print(f"{row['quantity']:<24} {row['measured'] / 1e6:>14.2f} {row['predicted'] / 1e6:>15.2f} "
              f"{row['error_pct']:>+8.1f}")
    if note:
        print(f"note: {note}")
    return 0
