"""``diskmodel predict``: PostMark throughput for a storage stack and a workload.

Evaluates :func:`diskmodel.model.predict.predict` and prints read and write
throughput the way PostMark reports them, with the breakdown by equation term
(T_DO, T_MO, T_FL, T_DFA, T_J, T_LVM_MO; within T_DST seek, rotation,
transfer). The stack is one of the paper's (``--layout``) on a disk (a
preset, a DiskSim drive folder, or a calibration saved by ``diskmodel
calibrate --json``) with ``--fs`` and ``--journal-mode``, or a stack
description (``--stack FILE.json``, :mod:`diskmodel.model.stack`) that names
its disks, file system and options itself.
"""
from __future__ import annotations

import json
import math

# Flags that describe the stack, which a stack file describes instead (name -> default).
_STACK_FLAGS = {"disk": "wd800bd", "calibration": None, "layout": "native", "fs": "ext3", "journal_mode": "ordered"}


def _number(name: str, convert, check, requirement: str):
    """An argparse type: *convert* the text, then refuse it unless *check* (naming the flag)."""
    def parse(text):
        import argparse

        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be {requirement} (got {text!r})") from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"{name} must be {requirement} (got {text!r})")
        return value
    return parse


def _nonnegative(name):
    return _number(name, float, lambda v: math.isfinite(v) and v >= 0, "finite and >= 0")


def _positive_int(name):
    return _number(name, int, lambda v: v > 0, "a whole number > 0")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "predict", help="predict PostMark throughput for a storage stack and a workload",
        description=__doc__.splitlines()[0])
    parser.add_argument("--stack", metavar="FILE.json",
                        help="a stack description (disks, partitions, LVM, file system); instead of --layout, "
                             "--disk, --calibration, --fs and --journal-mode")
    disk = parser.add_mutually_exclusive_group()
    disk.add_argument("--disk", help="a preset (wd800bd, hp97560, hp_c2247a) or a DiskSim drive folder "
                                     "(default: wd800bd)")
    disk.add_argument("--calibration", metavar="JSON", help="a result saved by `diskmodel calibrate --json`")
    parser.add_argument("--layout", choices=("native", "lvm1", "lvm2"),
                        help="the paper's stacks in the last 20 GB of the disk (Tables 1-3; default: native)")
    parser.add_argument("--workload", choices=("test1", "test2", "test3"), default="test1",
                        help="the paper's PostMark workloads")
    parser.add_argument("--transactions", type=_positive_int("--transactions"),
                        help="override the workload's transaction count")
    parser.add_argument("--files", type=_positive_int("--files"), help="override the workload's number of files")
    parser.add_argument("--fs", choices=("ext2", "ext3"), help="default: ext3")
    parser.add_argument("--journal-mode", choices=("ordered", "writeback", "journal"), help="default: ordered")
    parser.add_argument("--page-cache-bytes", type=_nonnegative("--page-cache-bytes"),
                        help="memory the page cache gives the workload [bytes]")
    parser.add_argument("--md-mapping-s", type=_nonnegative("--md-mapping-s"), default=0.0,
                        help="LVM metadata mapping cost per metadata I/O [s] (eq. 12)")
    parser.add_argument("--fb-mapping-s", type=_nonnegative("--fb-mapping-s"), default=0.0,
                        help="LVM file-block mapping cost per data-block I/O [s] (eq. 12)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=_run)


# Fields of the model that a flag of `diskmodel predict` sets, for error messages.
_FLAG_OF_FIELD = {
    "transactions": "--transactions",
    "number_of_files": "--files",
    "journal_mode": "--journal-mode",
    "md_mapping_s": "--md-mapping-s",
    "fb_mapping_s": "--fb-mapping-s",
}


def _flags_given(args) -> dict[str, str]:
    """The model's field names that flags given on this command line set, and those flags."""
    names = {field: flag for field, flag in _FLAG_OF_FIELD.items()
             if getattr(args, flag[2:].replace("-", "_"), None) is not None}
    if args.page_cache_bytes is not None:
        names["size_bytes"] = "--page-cache-bytes"
    return names


def _disk(args):
    from diskmodel.calibrate import stacks
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.model.drives import FileDrive

    if args.calibration:
        try:
            return stacks.disk_of(FileDrive("calibration", args.calibration))
        except ValueError as exc:
            raise UsageError(f"--calibration {exc}") from exc
    from diskmodel.calibrate.harness.simulated import disk_from_name

    try:
        return disk_from_name(args.disk)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--disk {args.disk}: {exc}") from exc


def _stack(args):
    """The stack of --stack FILE (its disks loaded), or the paper's --layout on --disk or --calibration."""
    from diskmodel.calibrate import stacks
    from diskmodel.calibrate.cli import UsageError, reword
    from diskmodel.model.filesystem import FileSystem
    from diskmodel.model.stack import paper_stack

    if args.stack:
        given = [f"--{name.replace('_', '-')}" for name in _STACK_FLAGS if getattr(args, name) is not None]
        try:
            stack = stacks.read_stack(args.stack, also_given=given)
            return stacks.resolve_drives(stack, relative_to=_folder_of(args.stack))
        except ValueError as exc:
            raise UsageError(f"--stack {exc}") from exc
    for name, default in _STACK_FLAGS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    disk = _disk(args)
    try:
        filesystem = FileSystem(kind=args.fs, journal_mode=args.journal_mode)
    except ValueError as exc:
        raise UsageError(reword(exc, _flags_given(args))) from exc
    try:
        return paper_stack(args.layout, disk=disk, filesystem=filesystem)
    except ValueError as exc:
        raise UsageError(f"--layout {args.layout} on {disk.name}: {exc}") from exc


def _folder_of(path: str) -> str:
    import os

    return os.path.dirname(os.path.abspath(path))


def _run(args) -> int:
    from diskmodel.calibrate.cli import UsageError, reword
    from diskmodel.model.filesystem import PageCache
    from diskmodel.model.predict import predict
    from diskmodel.model.volumes import LvmMapping
    from diskmodel.model.workload import postmark_preset

    stack = _stack(args)
    try:
        workload = postmark_preset(args.workload)
        changes = {k: v for k, v in (("transactions", args.transactions), ("number_of_files", args.files))
                   if v is not None}
        if changes:
            workload = workload.evolve(**changes)
        cache = PageCache() if args.page_cache_bytes is None else PageCache(size_bytes=args.page_cache_bytes)
        mapping = LvmMapping(md_mapping_s=args.md_mapping_s, fb_mapping_s=args.fb_mapping_s)
    except ValueError as exc:
        raise UsageError(reword(exc, _flags_given(args))) from exc
    try:
        prediction = predict(stack, workload, cache, mapping)
        disk = stack.model_disk()
    except ValueError as exc:
        where = f"--stack {args.stack}: " if args.stack else ""
        raise UsageError(where + reword(exc, _flags_given(args))) from exc
    fs = stack.file_system.parameters
    if args.json:
        print(json.dumps({
            "disk": disk.name, "layout": stack.short_name, "stack": stack.short_name, "workload": args.workload,
            "read_throughput_bytes_per_s": prediction.read_throughput_bytes_per_s,
            "write_throughput_bytes_per_s": prediction.write_throughput_bytes_per_s,
            "elapsed_s": prediction.elapsed_s, "terms_s": prediction.terms,
            "lvm_parts_s": prediction.lvm_parts, "dst_parts_s": prediction.dst_parts,
        }))
        return 0
    units = prediction.postmark_units()
    print(f"{disk.name}, {stack.short_name}, {fs.kind} ({fs.journal_mode}), PostMark {args.workload}: "
          f"{workload.number_of_files} files, {workload.transactions} transactions")
    if args.stack:
        print(stack.describe())
    print(f"read {units['read']}, write {units['write']}, elapsed {prediction.elapsed_s:.1f} s")
    print(prediction.to_frame().to_string())
    return 0
