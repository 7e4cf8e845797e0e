"""``diskmodel predict``: PostMark throughput for a disk, layout, file system and workload.

Evaluates :func:`diskmodel.model.predict.predict` and prints read and write
throughput the way PostMark reports them, with the breakdown by equation term
(T_DO, T_MO, T_FL, T_DFA, T_J, T_LVM_MO; within T_DST seek, rotation,
transfer). The disk is a preset, a DiskSim drive folder, or a calibration
saved by ``diskmodel calibrate --json``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path


def _nonnegative(name):
    def parse(text):
        import argparse

        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number (got {text!r})") from None
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(f"{name} must be finite and >= 0 (got {text!r})")
        return value
    return parse


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "predict", help="predict PostMark throughput for a disk, layout, file system and workload",
        description=__doc__.splitlines()[0])
    disk = parser.add_mutually_exclusive_group()
    disk.add_argument("--disk", default="wd800bd",
                      help="a preset (wd800bd, hp97560, hp_c2247a) or a DiskSim drive folder (default: %(default)s)")
    disk.add_argument("--calibration", metavar="JSON", help="a result saved by `diskmodel calibrate --json`")
    parser.add_argument("--layout", choices=("native", "lvm1", "lvm2"), default="native",
                        help="the paper's layouts in the last 20 GB of the disk (Tables 1-3)")
    parser.add_argument("--workload", choices=("test1", "test2", "test3"), default="test1",
                        help="the paper's PostMark workloads")
    parser.add_argument("--transactions", type=_positive_int("--transactions"),
                        help="override the workload's transaction count")
    parser.add_argument("--files", type=_positive_int("--files"), help="override the workload's number of files")
    parser.add_argument("--fs", choices=("ext2", "ext3"), default="ext3")
    parser.add_argument("--journal-mode", choices=("ordered", "writeback", "journal"), default="ordered")
    parser.add_argument("--page-cache-bytes", type=_nonnegative("--page-cache-bytes"),
                        help="memory the page cache gives the workload [bytes]")
    parser.add_argument("--md-mapping-s", type=_nonnegative("--md-mapping-s"), default=0.0,
                        help="LVM metadata mapping cost per metadata I/O [s] (eq. 12)")
    parser.add_argument("--fb-mapping-s", type=_nonnegative("--fb-mapping-s"), default=0.0,
                        help="LVM file-block mapping cost per data-block I/O [s] (eq. 12)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=_run)


def _positive_int(name):
    def parse(text):
        import argparse

        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number (got {text!r})") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0 (got {text!r})")
        return value
    return parse


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
    from diskmodel.calibrate.cli import UsageError

    if args.calibration:
        from diskmodel.calibrate.harness.results import CalibrationFileError, CalibrationResult

        path = args.calibration
        try:
            result = CalibrationResult.from_json(Path(path))
        except CalibrationFileError as exc:
            raise UsageError(f"--calibration {exc}") from exc
        except FileNotFoundError as exc:
            raise UsageError(f"--calibration {path}: no such file") from exc
        except OSError as exc:
            raise UsageError(f"--calibration {path}: cannot read it: {exc.strerror or exc}") from exc
        try:
            return result.to_disk()
        except ValueError as exc:
            raise UsageError(f"--calibration {path}: {exc}") from exc
    from diskmodel.calibrate.harness.simulated import disk_from_name

    try:
        return disk_from_name(args.disk)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--disk {args.disk}: {exc}") from exc


def _run(args) -> int:
    from diskmodel.calibrate.cli import UsageError, reword
    from diskmodel.model.filesystem import FileSystem, PageCache
    from diskmodel.model.volumes import LvmMapping, paper_layout
    from diskmodel.model.predict import predict
    from diskmodel.model.workload import postmark_preset

    disk = _disk(args)
    try:
        workload = postmark_preset(args.workload)
        changes = {k: v for k, v in (("transactions", args.transactions), ("number_of_files", args.files))
                   if v is not None}
        if changes:
            workload = workload.evolve(**changes)
        filesystem = FileSystem(kind=args.fs, journal_mode=args.journal_mode)
        cache = PageCache() if args.page_cache_bytes is None else PageCache(size_bytes=args.page_cache_bytes)
        mapping = LvmMapping(md_mapping_s=args.md_mapping_s, fb_mapping_s=args.fb_mapping_s)
    except ValueError as exc:
        raise UsageError(reword(exc, _flags_given(args))) from exc
    try:
        layout = paper_layout(args.layout, disk.capacity_bytes)
    except ValueError as exc:
        raise UsageError(f"--layout {args.layout} on {disk.name}: {exc}") from exc
    try:
        prediction = predict(disk, layout, filesystem, workload, cache, mapping)
    except ValueError as exc:
        raise UsageError(reword(exc, _flags_given(args))) from exc
    if args.json:
        print(json.dumps({
            "disk": disk.name, "layout": args.layout, "workload": args.workload,
            "read_throughput_bytes_per_s": prediction.read_throughput_bytes_per_s,
            "write_throughput_bytes_per_s": prediction.write_throughput_bytes_per_s,
            "elapsed_s": prediction.elapsed_s, "terms_s": prediction.terms,
            "lvm_parts_s": prediction.lvm_parts, "dst_parts_s": prediction.dst_parts,
        }))
        return 0
    units = prediction.postmark_units()
    print(f"{disk.name}, {args.layout}, {args.fs} ({args.journal_mode}), PostMark {args.workload}: "
          f"{workload.number_of_files} files, {workload.transactions} transactions")
    print(f"read {units['read']}, write {units['write']}, elapsed {prediction.elapsed_s:.1f} s")
    print(prediction.to_frame().to_string())
    return 0
