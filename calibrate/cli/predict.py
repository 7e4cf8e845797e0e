"""``diskmodel predict``: PostMark throughput for a storage stack and a workload.

Evaluates :func:`diskmodel.model.predict.predict` and prints read and write
throughput the way PostMark reports them, with the breakdown by equation term
(T_DO, T_MO, T_FL, T_DFA, T_J, T_LVM_MO; within T_DST seek, rotation,
transfer). The stack is one of the paper's (``--layout``) on a disk (a
preset, a DiskSim drive folder, or a calibration saved by ``diskmodel
calibrate --json``) with ``--fs`` (any kind of
:data:`diskmodel.model.filesystems.kinds.KINDS`), ``--mkfs-options``,
``--mount-options`` and ``--journal-mode`` (``data=``, where the kind has
one), the options mapped onto the model's parameters as ``diskmodel
postmark --fs`` builds them (:func:`diskmodel.model.filesystems.kinds.parameters_from_options`),
or a stack description (``--stack FILE.json``, :mod:`diskmodel.model.stacks.stack`)
that names its disks, file system and options itself; its top may be an NFS
mount, predicted per NFS operation (:mod:`diskmodel.model.stacks.network`).

The LVM mapping costs of eq. (12) are 0 s unless given, which makes LVM
free: ``--fitted`` takes those the main job fits on the paper (shipped,
:func:`diskmodel.calibrate.lvm_costs.fitted_costs`) and ``--costs FILE``
those of an ``experiment`` run, each with the I/O path it was fitted on. The
paper's layouts need the disk's last 20 GB; a smaller disk is refused with
the ``--fs-size`` to give instead (the bench's sizing of
:func:`~diskmodel.model.stacks.stack.paper_stack`).

``--fio-job FILE`` predicts a fio job file's job instead
(:mod:`.predict_fio`, the syntax in :mod:`diskmodel.model.predictions.fio_job`). A
calibrated hard disk's unmeasured cache and interface rate are said in the
first line, or taken from ``--complete-from PRESET`` (:mod:`.predict_complete`);
the output's units and terms are :mod:`.predict_text`'s.
"""
from __future__ import annotations

import dataclasses
import json
import math

from diskmodel.calibrate.cli import predict_intervals, predict_spec
from diskmodel.calibrate.cli.predict_complete import complete
from diskmodel.calibrate.cli.predict_text import breakdown, paper_measured_note
from diskmodel.model.filesystems.kinds import KINDS

# The block layers' workloads (diskmodel.model.predictions.block_workloads): the fio jobs and the loop-image
# study's copy.
_BLOCK_WORKLOADS = predict_spec.PRESETS[3:]

# Flags that describe the stack, which a stack file describes instead (name -> default).
_STACK_FLAGS = {"disk": "wd800bd", "calibration": None, "layout": "native", "fs": "ext3", "journal_mode": None,
                "mkfs_options": "", "mount_options": "", "fs_size": None}


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


def _bytes(text: str) -> int:
    """A byte count, as `diskmodel postmark --size` reads it (K, M, G, T: powers of 1024)."""
    from diskmodel.calibrate.cli.postmark import _bytes as byte_count

    return byte_count(text)


def _nonnegative(name):
    return _number(name, float, lambda v: math.isfinite(v) and v >= 0, "finite and >= 0")


def _positive_int(name):
    return _number(name, int, lambda v: v > 0, "a whole number > 0")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "predict", help="predict PostMark throughput for a storage stack and a workload",
        description="PostMark throughput (or a fio job's, --fio-job) for a storage stack and a workload, with the "
                    "time of each term of the model. Units: SI, MB = 10^6 bytes.",
        epilog="The LVM mapping costs of eq. 12 are 0 s unless given, which makes LVM free: LVM-1 and LVM-2 "
               "then differ from native only by where their blocks lie. --fitted takes the costs the main job "
               "fits on the paper; --costs FILE those of your own 'diskmodel experiment' run; --md-mapping-s and "
               "--fb-mapping-s set them by hand.")
    parser.add_argument("--stack", metavar="FILE.json",
                        help="a stack description (disks, partitions, LVM, RAID, NBD, file system or NFS mount), "
                             "instead of --layout, --disk, --calibration, --fs, --mkfs-options, --mount-options, "
                             "--journal-mode and --fs-size; every node kind's fields, units and defaults: "
                             "'diskmodel stack-schema' (default: none, the paper's --layout)")
    disk = parser.add_mutually_exclusive_group()
    disk.add_argument("--disk", metavar="NAME|DIR",
                      help="a preset (wd800bd, hp97560, hp_c2247a), a bundled DiskSim drive (atlas10k, G4_4TB, ...; "
                           "'diskmodel validate-trace --list') or a DiskSim drive folder (default: wd800bd)")
    disk.add_argument("--calibration", metavar="JSON",
                      help="a result saved by 'diskmodel calibrate --json', instead of --disk (default: none)")
    parser.add_argument("--complete-from", metavar="PRESET",
                        help="for a calibrated hard disk (--calibration, or a calibration disk of --stack): take what "
                             "the calibration does not measure, the drive's cache and its interface rate, from "
                             "PRESET (the preset of the same drive, e.g. wd800bd), said in the first line (default: "
                             "none; the first line says the cache is absent)")
    parser.add_argument("--layout", choices=("native", "lvm1", "lvm2"),
                        help="the paper's stacks (Tables 1-3), in the last 20 GB of the disk (default: native)")
    parser.add_argument("--fs-size", type=_bytes, metavar="BYTES",
                        help="for a disk smaller than the paper's 20 GB test area: a file system of BYTES "
                             "(K, M, G suffixes: powers of 1024; a multiple of 8M) at the start of the disk in every "
                             "layout, as 'diskmodel postmark --size' builds it (default: none, the paper's 20 GB "
                             "at the end of the disk)")
    parser.add_argument("--fio-job", metavar="FILE",
                        help="a fio job file, in a documented subset of fio's syntax (one job; keys rw, rwmixread, "
                             "bs, iodepth, numjobs, size, io_size, direct=1, fsync=0, end_fsync, runtime; sizes in "
                             "fio's k, m, g: powers of 1024), predicted on the stack and printed beside its "
                             "definition, instead of --workload (default: none)")
    parser.add_argument("--workload", default=None, metavar="NAME|NAME:KEY=VALUE,...",
                        help="the paper's PostMark workloads (test1, test2, test3; default: test1); on a --stack of "
                             "any block layers (RAID, thin, loop files) also an fio job (seqread_4k, seqread_1m, "
                             "seqwrite_4k, seqwrite_1m, randread_4k, randread_1m, randwrite_4k, randwrite_1m) or the "
                             "loop-image study's file copy (copy); or any workload the I/O path names, timed on it "
                             "and printed with its definition: postmark:files=500,transactions=2000, "
                             "fio:rw=randwrite,bs=4k,size=64M (keys rw, rwmixread, bs, size, io_size, iodepth, "
                             "direct, fsync, seed, as fio reads them), bonnie:size=64M,files=1024, copy:size=64M, "
                             "tar:files=1000,file_bytes=16k, image:size=64M,kind=sparse, dd:size=4M,step=write, "
                             "metadata:op=create,files=1000 (sizes k, M, G: powers of 1024)")
    parser.add_argument("--transactions", type=_positive_int("--transactions"), metavar="N",
                        help="the number of transactions (default: the workload's; test1 50000)")
    parser.add_argument("--files", type=_positive_int("--files"), metavar="N",
                        help="the number of files (default: the workload's; test1 4000)")
    parser.add_argument("--fs", choices=KINDS, help="the file system (default: ext3)")
    parser.add_argument("--mkfs-options", metavar="OPTS",
                        help="options of mkfs.<fs>, as one string (e.g. '-b size=4096 -d agcount=8'), as "
                             "'diskmodel postmark' gives them; they set the model's parameters (default: none)")
    parser.add_argument("--mount-options", metavar="OPTS",
                        help="comma-separated mount options (e.g. 'noatime,commit=15'); they set the model's "
                             "parameters (default: none)")
    parser.add_argument("--journal-mode", choices=("ordered", "writeback", "journal"),
                        help="the journal mode of ext3 and ext4, the mount option data=MODE (default: ordered; "
                             "ext2, xfs and btrfs have none to choose)")
    parser.add_argument("--page-cache-bytes", type=_nonnegative("--page-cache-bytes"), metavar="BYTES",
                        help="memory the page cache gives the workload [bytes] (default: 268435456, 268 MB; "
                             "with --fitted or --costs 1610612736, 1611 MB, as the fit assumed)")
    costs = parser.add_mutually_exclusive_group()
    costs.add_argument("--fitted", action="store_true",
                       help="the LVM mapping costs the main job fits on the paper's Tables 4-6, shipped with "
                            "diskmodel, with the I/O path they were fitted on (host cost per byte of file data, "
                            "CPU time per file operation, pipelined write-back, 1611 MB page cache) (default: "
                            "off, costs 0 s)")
    costs.add_argument("--costs", metavar="FILE",
                       help="as --fitted, from the lvm_costs.json that 'diskmodel experiment' writes in its "
                            "report folder (default: none, costs 0 s)")
    parser.add_argument("--md-mapping-s", type=_nonnegative("--md-mapping-s"), default=None, metavar="S",
                        help="LVM metadata mapping cost per metadata I/O [s] (eq. 12; default: 0, which makes "
                             "LVM free)")
    parser.add_argument("--fb-mapping-s", type=_nonnegative("--fb-mapping-s"), default=None, metavar="S",
                        help="LVM file-block mapping cost per data-block I/O [s] (eq. 12; default: 0, which makes "
                             "LVM free)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (default: a text table)")
    parser.set_defaults(handler=_run)


# Fields of the model that a flag of `diskmodel predict` sets, for error messages.
_FLAG_OF_FIELD = {
    "transactions": "--transactions",
    "number_of_files": "--files",
    "journal_mode": "--journal-mode",
    "mkfs_options": "--mkfs-options",
    "mount_options": "--mount-options",
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
    from diskmodel.model.drive.drives import FileDrive

    if args.calibration:
        try:
            return stacks.disk_of(FileDrive("calibration", args.calibration))
        except ValueError as exc:
            raise UsageError(f"--calibration {exc}") from exc
    from diskmodel.calibrate.harness.simulated import disk_from_name
    from diskmodel.data.disksim import BUNDLED_DRIVES
    from diskmodel.data.disksim.bundled import preset_or_drive
    from pathlib import Path

    try:
        return disk_from_name(preset_or_drive(args.disk))
    except (ValueError, OSError) as exc:
        reason = str(exc)
        if "/" not in args.disk and not Path(args.disk).exists():
            reason += f"; nor is it a bundled DiskSim drive ({', '.join(BUNDLED_DRIVES)})"
        raise UsageError(f"--disk {args.disk}: {reason}") from exc


def _stack(args, fitted):
    """(stack, page cache): the stack of --stack FILE (its disks loaded), or the paper's --layout on --disk or
    --calibration, with the I/O path the costs of *fitted* (--fitted, --costs) were fitted with."""
    from diskmodel.calibrate import stacks
    from diskmodel.calibrate.cli import UsageError, flag_error
    from diskmodel.model.filesystems.filesystem import FileSystem, PageCache
    from diskmodel.model.fit import apply_io_parameters
    from diskmodel.model.fit.paper import DEFAULT_CACHE, DEFAULT_FILESYSTEM
    from diskmodel.model.stacks.stack import PAPER_TEST_AREA_BYTES

    try:
        cache = PageCache() if args.page_cache_bytes is None else PageCache(size_bytes=args.page_cache_bytes)
    except ValueError as exc:
        raise UsageError(flag_error(exc, _flags_given(args))) from exc
    if args.stack:
        given = [f"--{name.replace('_', '-')}" for name in _STACK_FLAGS if getattr(args, name) is not None]
        try:
            stack = stacks.read_stack(args.stack, also_given=given)
            args.stack_disks = stack.disks  # before they are loaded: which are calibrations (intervals)
            return _completed(args, stack, stacks.resolve_drives(stack, relative_to=_folder_of(args.stack))), cache
        except ValueError as exc:
            raise UsageError(f"--stack {exc}") from exc
    for name, default in _STACK_FLAGS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    mkfs_options, mount_options = _fs_options(args)
    disk = _disk(args)
    if args.calibration is None and args.complete_from is not None:
        raise UsageError(f"--complete-from {args.complete_from} applies to a calibrated disk (--calibration, or a "
                         f"calibration disk of --stack); --disk {args.disk} is complete")
    if args.calibration is not None:
        try:
            disk, note = complete(disk, f"--calibration {args.calibration}", args.complete_from)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        args.notes += [note] if note else []
    if args.fs_size is None and disk.capacity_bytes < PAPER_TEST_AREA_BYTES:
        raise UsageError(_too_small(args, disk))
    # the file system as its options build it (the parameters of fs_kinds), as `diskmodel postmark --fs` does
    stack = _paper_stack(args, disk, None, mkfs_options, mount_options)
    if fitted is None:
        return stack, cache
    try:  # the path the costs were fitted on: model.paper's I/O path, with the fitted I/O parameters
        io_path = {f.name: getattr(DEFAULT_FILESYSTEM, f.name) for f in dataclasses.fields(FileSystem)
                   if getattr(DEFAULT_FILESYSTEM, f.name) != getattr(FileSystem(), f.name)}
        filesystem = stack.file_system.parameters.evolve(**io_path)
        disk, filesystem, fitted_cache = apply_io_parameters(disk, filesystem, DEFAULT_CACHE, fitted.io_path)
        cache = fitted_cache if args.page_cache_bytes is None else cache
    except ValueError as exc:
        raise UsageError(flag_error(exc, _flags_given(args))) from exc
    return _paper_stack(args, disk, filesystem, mkfs_options, mount_options), cache


def _completed(args, stack, resolved):
    """*resolved* (the stack with its drives loaded) with each calibrated hard disk completed from
    --complete-from, or a note in ``args.notes`` saying what it lacks (:mod:`.predict_complete`)."""
    from diskmodel.model.drive.drives import FileDrive, in_memory

    calibrated = {d.name: d.path for d in stack.disks if isinstance(d, FileDrive) and d.kind == "calibration"}
    if not calibrated and args.complete_from is not None:
        raise ValueError(f"{args.stack}: --complete-from {args.complete_from} applies to a calibration disk "
                         "(kind \"calibration\"); this stack has none")
    disks = []
    for i, drive in enumerate(resolved.disks):
        if drive.name in calibrated:
            try:
                disk, note = complete(drive.model_disk(), f"disks[{i}] ({drive.name}) {calibrated[drive.name]}",
                                      args.complete_from)
            except ValueError as exc:
                raise ValueError(f"{args.stack}: {exc}") from None
            drive = in_memory(drive, disk)
            args.notes += [note] if note else []
        disks.append(drive)
    return resolved.evolve(disks=tuple(disks))


def _fs_options(args) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(mkfs options, mount options) of --mkfs-options, --mount-options and --journal-mode (a data= mount
    option, refused naming the option and the kind where the kind has none)."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.model.filesystems.kinds import parameters_from_options

    mkfs_options = tuple(args.mkfs_options.split())
    mount_options = tuple(o for o in args.mount_options.split(",") if o)
    if args.journal_mode is not None:
        option = f"data={args.journal_mode}"
        if any(o.startswith("data=") for o in mount_options):
            raise UsageError(f"--journal-mode {args.journal_mode}: --mount-options sets data= already; give one")
        try:
            parameters_from_options(args.fs, (), (option,))
        except ValueError as exc:
            raise UsageError(f"--journal-mode {args.journal_mode}: {str(exc).removeprefix('mount_options: ')}") from exc
        mount_options += (option,)
    return mkfs_options, mount_options


def _paper_stack(args, disk, filesystem, mkfs_options, mount_options):
    """The paper's --layout on *disk* with the file system of --fs and its options (a UsageError naming the flag)."""
    from diskmodel.calibrate.cli import UsageError, flag_error
    from diskmodel.model.stacks.stack import paper_stack

    try:
        return paper_stack(args.layout, disk=disk, filesystem=filesystem, kind=args.fs, mkfs_options=mkfs_options,
                           mount_options=mount_options, fs_size_bytes=args.fs_size)
    except ValueError as exc:
        text = flag_error(exc, {"mkfs_options": "--mkfs-options", "mount_options": "--mount-options",
                            "fs_size_bytes": "--fs-size"})
        if not text.startswith(("--mkfs-options", "--mount-options")):
            text = f"--layout {args.layout} on {disk.name}: {text}"
        raise UsageError(text) from exc


def _too_small(args, disk) -> str:
    """What to do about a disk smaller than the paper's 20 GB test area (one line)."""
    from diskmodel.model.units import MIB

    quarter = max(8 * MIB, int(disk.capacity_bytes // 4) // (8 * MIB) * (8 * MIB))
    source = f"--disk {args.disk}" if args.calibration is None else f"--calibration {args.calibration}"
    return (f"{source}: {disk.name} holds {disk.capacity_bytes / 1e9:.2f} GB, less than the paper's 20 GB test "
            f"area (Tables 1-3 put the file systems in the last 20 GB of the disk); give --fs-size "
            f"{quarter // MIB}M for a file system of that size at the start of the disk (a quarter of it, as "
            f"20 GB is of the paper's 80 GB disk), or --stack FILE.json for a layout of your own")


def _fitted(args):
    """The costs file of --fitted or --costs FILE (a FittedCosts), or None; checked before anything else."""
    from diskmodel.calibrate import lvm_costs
    from diskmodel.calibrate.cli import UsageError

    source = "--fitted" if args.fitted else ("--costs" if args.costs is not None else None)
    if source is None:
        return None
    by_hand = [flag for flag in ("--md-mapping-s", "--fb-mapping-s")
               if getattr(args, flag[2:].replace("-", "_")) is not None]
    if by_hand:
        raise UsageError(f"{source} gives the LVM mapping costs; {' and '.join(by_hand)} cannot be given with it")
    if args.stack:
        raise UsageError(f"{source} holds costs fitted for the paper's layouts (--layout lvm1, lvm2); for "
                         f"--stack give --md-mapping-s and --fb-mapping-s")
    try:
        return lvm_costs.fitted_costs() if args.fitted else lvm_costs.read_costs(args.costs)
    except ValueError as exc:
        raise UsageError(f"{source} {exc}") from exc
    except OSError as exc:  # a missing or unreadable file: one line naming the flag, not a traceback
        raise UsageError(f"{source} {args.costs}: cannot read it ({exc.strerror or exc})") from exc


def _mapping(args, fitted):
    """The LVM mapping costs of --fitted or --costs for --layout, else --md-mapping-s and --fb-mapping-s (0 s)."""
    from diskmodel.model.stacks.lvm_mapping import LvmMapping

    if fitted is not None:
        return fitted.mappings[args.layout]
    return LvmMapping(md_mapping_s=args.md_mapping_s or 0.0, fb_mapping_s=args.fb_mapping_s or 0.0)


def _folder_of(path: str) -> str:
    import os

    return os.path.dirname(os.path.abspath(path))


def _refuse_unused(args) -> None:
    """A block workload (--fio-job, an fio job of --workload, copy) takes no page cache, LVM costs or PostMark
    counts: a flag that sets one is refused, not ignored."""
    from diskmodel.calibrate.cli import UsageError

    if args.fio_job is not None:
        workload = f"--fio-job {args.fio_job}"
        also = [flag for flag in ("--workload", "--transactions", "--files") if getattr(args, flag[2:]) is not None]
        if also:
            raise UsageError(f"{workload} is the workload; {also[0]} cannot be given with it")
    elif args.workload in _BLOCK_WORKLOADS:
        workload = f"--workload {args.workload}"
    else:
        return
    unused = [flag for flag in ("--page-cache-bytes", "--md-mapping-s", "--fb-mapping-s", "--costs", "--transactions",
                                "--files") if getattr(args, flag[2:].replace("-", "_")) is not None]
    unused += ["--fitted"] if args.fitted else []
    if unused:
        raise UsageError(f"{unused[0]} does not apply to {workload}: the model of a block workload (an fio job, "
                         "the copy) takes no page-cache size, LVM mapping costs or PostMark counts")


def _run(args) -> int:
    from diskmodel.calibrate.cli import UsageError, flag_error
    from diskmodel.model.predict import predict
    from diskmodel.model.predictions.workload import postmark_preset

    if args.fio_job is not None:  # a bad job file is refused before the stack is built
        from diskmodel.calibrate.cli import predict_fio

        predict_fio.read_job(args.fio_job)
    _refuse_unused(args)
    definition = predict_spec.check(args) if predict_spec.is_spec(args.workload) else None
    fitted = _fitted(args)
    args.notes = []  # what the prediction assumes that the user did not give: printed first
    stack, cache = _stack(args, fitted)
    for note in args.notes if args.fio_job is None else ():  # the fio job prints them with its own
        if not args.json:
            print(note)
    if stack.is_nfs:
        by_hand = [flag for flag in ("--page-cache-bytes", "--md-mapping-s", "--fb-mapping-s")
                   if getattr(args, flag[2:].replace("-", "_")) is not None]
        if by_hand:
            raise UsageError(f"{by_hand[0]} does not apply to --stack {args.stack}: its top is an NFS mount, whose "
                             "model has no client page cache and no LVM mapping costs")
    if args.fio_job is not None:
        from diskmodel.calibrate.cli import predict_fio

        return predict_fio.run(args, stack, args.notes)
    if definition is not None:
        return predict_spec.run(args, stack, definition)
    args.workload = args.workload or "test1"
    if args.workload in _BLOCK_WORKLOADS:
        return _run_block(args, stack)
    try:
        workload = postmark_preset(args.workload)
        changes = {k: v for k, v in (("transactions", args.transactions), ("number_of_files", args.files))
                   if v is not None}
        if changes:
            workload = workload.evolve(**changes)
        mapping = _mapping(args, fitted)
    except ValueError as exc:
        raise UsageError(flag_error(exc, _flags_given(args))) from exc
    from diskmodel.model.predict import _one_disk_volume

    if stack.is_nfs or not _one_disk_volume(stack):
        return _run_timed(args, stack, workload)
    if predict_intervals.has_calibration(args):
        args.notes.append("intervals: none; the paper's equations (PostMark on one disk) give a point prediction. "
                          "The calibration's uncertainty is carried by the timed path: a stack file (--stack) or a "
                          "block workload (--workload with an fio job)")
        if not args.json:
            print(args.notes[-1])
    try:
        prediction = predict(stack, workload, cache, mapping)
        disk = stack.model_disk()
    except ValueError as exc:
        where = f"--stack {args.stack}: " if args.stack else ""
        if not args.stack and args.fs_size is not None:  # the bench's sizing may not fit a small disk
            where = f"--fs-size {args.fs_size} (bytes) with --layout {args.layout} on {stack.model_disk().name}: "
        raise UsageError(where + flag_error(exc, _flags_given(args))) from exc
    fs = stack.file_system.parameters
    model = _EQUATIONS_MODEL.format(test=args.workload, cache_mb=cache.size_bytes / 1e6)
    measured = None if args.transactions is not None or args.files is not None else \
        paper_measured_note(args.layout or stack.short_name, args.workload, disk.name, fitted is not None)
    args.notes += [measured] if measured else []
    if args.json:
        print(json.dumps({
            "disk": disk.name, "layout": stack.short_name, "stack": stack.short_name, "workload": args.workload,
            "model": model,
            "read_throughput_bytes_per_s": prediction.read_throughput_bytes_per_s,
            "write_throughput_bytes_per_s": prediction.write_throughput_bytes_per_s,
            "elapsed_s": prediction.elapsed_s, "terms_s": prediction.terms,
            "lvm_parts_s": prediction.lvm_parts, "dst_parts_s": prediction.dst_parts,
            "assumptions": args.notes,
        }))
        return 0
    print(f"{disk.name}, {stack.short_name}, {fs.kind} ({fs.journal_mode}), PostMark {args.workload}: "
          f"{workload.number_of_files} files, {workload.transactions} transactions")
    print(model)
    if measured:
        print(measured)
    if args.stack:
        print(stack.describe())
    print(prediction.rates_text())
    print(breakdown(prediction.to_frame()))
    return 0


#: What answers a named PostMark test on one disk, said beside the answer: the paper's expected values, where
#: every other stack (and any workload string) is timed request by request, so the two are not to be compared.
_EQUATIONS_MODEL = ("model: the paper's equations (Djordjevic & Timcenko, eqs. 1-12: expected times of PostMark's "
                    "counted operations, a page cache of {cache_mb:.0f} MB, --page-cache-bytes); a stack beyond one disk, and any "
                    "workload string, is timed on the I/O path instead: to compare this stack with those, give "
                    "--workload postmark:{test}")
_TIMED_MODEL = ("model: the I/O path, timed request by request on each drive's simulation (the kernel's page cache "
                "with its default limits)")


def _run_timed(args, stack, workload) -> int:
    """PostMark on a stack beyond one disk (RAID, loop files, thin, LVM over several disks): the I/O
    path timed on the drives (:mod:`diskmodel.model.predictions.results`)."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.model.predict import predict

    by_hand = [flag for flag in ("--page-cache-bytes", "--md-mapping-s", "--fb-mapping-s")
               if getattr(args, flag[2:].replace("-", "_"), None) is not None]
    if by_hand:
        raise UsageError(f"{by_hand[0]} does not apply to --stack {args.stack}: it is timed on the I/O path, whose "
                         "page cache is the kernel's defaults and whose LVM cost is the requests dm sends")
    try:
        prediction = predict(stack, workload, calibrations=predict_intervals.calibrations(args, stack) or None)
    except ValueError as exc:
        raise UsageError(f"--stack {args.stack}: {exc}") from exc
    if args.json:
        print(json.dumps(predict_spec.timed_json(args, stack, prediction, model=_TIMED_MODEL)))
        return 0
    print(f"{stack.short_name}, PostMark {args.workload}: {workload.number_of_files} files, "
          f"{workload.transactions} transactions")
    print(_TIMED_MODEL)
    print(stack.describe())
    print(prediction.summary())
    return 0


def _run_block(args, stack) -> int:
    """An fio job or the loop-image study's copy on the stack, through the block layers (any node types)."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.model.predict import predict
    from diskmodel.model.predictions.workload import FileCopy, fio_jobs

    workload = FileCopy() if args.workload == "copy" else fio_jobs()[args.workload]
    calibrations = predict_intervals.calibrations(args, stack)
    if calibrations and args.workload == "copy":
        args.notes.append("intervals: none for the file copy (its prediction does not yet re-time drawn "
                          "calibrations); the figures are the calibrations' estimates")
        if not args.json:
            print(args.notes[-1])
        calibrations = {}
    try:
        prediction = predict(stack, workload, calibrations=calibrations or None)
    except ValueError as exc:
        raise UsageError((f"--stack {args.stack}: " if args.stack else "") + str(exc)) from exc
    if args.workload == "copy":
        figures = {"write_throughput_bytes_per_s": prediction.write_bytes_per_s,
                   "read_throughput_bytes_per_s": prediction.read_bytes_per_s,
                   "per_file": [dict(row) for row in prediction.rows]}
    else:
        figures = {"throughput_bytes_per_s": prediction.throughput_bytes_per_s, "iops": prediction.iops,
                   "latency_s": prediction.latency_s, "parts_s": prediction.parts,
                   "intervals_95": predict_intervals.interval_figures(prediction.timed)}
        waited = prediction.latency_s * prediction.iops / max(1, workload.iodepth)
        if waited < 0.5:  # at queue depth 1 latency times IOPS is the share of the run spent waiting for requests
            args.notes.append(
                f"latency and IOPS: the job waits {waited * 100:.0f} % of the run for its requests (latency times "
                "IOPS); IOPS counts the requests over the whole elapsed time, which also holds what the job does "
                "not wait for: writes a buffered layer below (a loop file's page cache) acknowledged early and "
                "wrote later, and the flush at the job's end")
            if not args.json:
                print(args.notes[-1])
    timed = [] if args.workload == "copy" else [f"{topic}: {text}" for topic, text in prediction.timed.assumptions]
    if args.json:
        print(json.dumps({"stack": stack.short_name, "workload": args.workload, **figures,
                          "assumptions": args.notes + timed}))
        return 0
    print(f"{stack.short_name}, {args.workload}:")
    print(stack.describe())
    print(breakdown(prediction.to_frame()))
    if args.workload != "copy":
        predict_intervals.print_interval(prediction.timed)
        print("assumptions:")
        print("\n".join(f"  {line}" for line in timed))
    return 0
