"""``diskmodel postmark``: build a storage stack, run PostMark on it, tear it down.

The stack is one of the paper's (``--layout native|lvm1|lvm2``, a file
system of ``--size`` bytes in all three) or a stack description
(``--stack FILE.json``, :mod:`diskmodel.model.stacks.stack`). On the host: the
scratch PATH (a new file the tool creates and fills, or an existing file or
block device named twice, with ``--destroy-data-on``) stands for the stack's
disk and is cut into loop devices, the stack is built step by step (each
step logged), PostMark runs ``--repeats`` times with the page cache dropped
before each run and an optional memory cgroup, and everything is torn down
on success, failure, SIGINT and SIGTERM.

With ``--vm``: the same plan is rendered as one shell script and run in a
throwaway qemu VM (:mod:`diskmodel.calibrate.bench.vm`) on a scratch disk of
the size the stack needs; PATH is then not used. Under TCG the timings
measure an emulator, and the report says so.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys

from diskmodel.calibrate.cli import UsageError, positive_seconds
from diskmodel.model.units import GIB, MIB

log = logging.getLogger("diskmodel.postmark")


_OVERRIDES = (
    ("files", "number_of_files", "number of files (set number)"),
    ("transactions", "transactions", "transactions (set transactions)"),
    ("min_size", "min_file_size_bytes", "smallest file [bytes] (set size LOW ...)"),
    ("max_size", "max_file_size_bytes", "largest file [bytes] (set size ... HIGH)"),
    ("subdirectories", "subdirectories", "subdirectories (set subdirectories)"),
    ("read_block", "read_block_size_bytes", "read block size [bytes] (set read)"),
    ("write_block", "write_block_size_bytes", "write block size [bytes] (set write)"),
    ("read_bias", "read_bias", "0..10, reads vs appends (set bias read)"),
    ("create_bias", "create_bias", "0..10, creates vs deletes (set bias create)"),
    ("seed", "seed", "random seed (set seed)"),
)


class _ByteCountError(argparse.ArgumentTypeError, ValueError):
    """Not a byte count: argparse prints it as the flag's error; a ValueError for other callers."""


def _bytes(text: str) -> int:
    """An integer byte count, optionally with a binary suffix K, M, G (2**10, 2**20, 2**30)."""
    t = text.strip()
    mult = 1
    for suffix, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)):
        if t.upper().endswith((suffix, suffix + "IB")):
            t = t[: -len(suffix + "IB")] if t.upper().endswith(suffix + "IB") else t[:-1]
            mult = m
            break
    try:
        value = int(t) * mult
    except ValueError:
        raise _ByteCountError(f"not a byte count: {text!r} (an integer, optionally with K, M or G)") from None
    if value <= 0:
        raise _ByteCountError(f"must be a byte count > 0 (got {text!r})")
    return value


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "postmark", help="run PostMark on a native, LVM-1 or LVM-2 stack, or on a stack description",
        description="Build a storage stack, run PostMark on it, tear it down.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--layout", choices=("native", "lvm1", "lvm2"),
                       help="the paper's stacks (Tables 1-3), each with a file system of --size bytes (default: "
                            "none; give --layout or --stack)")
    which.add_argument("--stack", metavar="FILE.json",
                       help="a stack description (disks, partitions, LVM, file system); the scratch stands for "
                            "its disk (default: none)")
    p.add_argument("--workload", required=True, choices=("test1", "test2", "test3"),
                   help="the paper's PostMark workload (section 4.2); override its fields below (no default)")
    p.add_argument("--scratch", metavar="PATH",
                   help="scratch file to create (or an existing file / block device with --destroy-data-on) "
                        "(default: none; required without --vm)")
    p.add_argument("--destroy-data-on", metavar="PATH",
                   help="confirm that the existing file or block device PATH may be overwritten (default: none)")
    p.add_argument("--keep", action="store_true", help="keep a scratch file the tool created (default: deleted)")
    p.add_argument("--vm", action="store_true", help="build the stack in a throwaway qemu VM (default: on the host)")
    p.add_argument("--emulate", metavar="DRIVE",
                   help="run on emulated drives the tool serves, one for each of the stack's disks (loop devices "
                        "on the host; /dev/vdb, /dev/vdc, ... with --vm), each request timed by the drive's "
                        "simulation; DRIVE as diskmodel "
                        "emulate takes it (a bundled DiskSim drive, a folder, a preset, a calibration JSON); needs "
                        "no --scratch or --destroy-data-on (default: none, a scratch file or device)")
    p.add_argument("--vm-accelerator", choices=("tcg", "kvm"), default="tcg",
                   help="qemu accelerator with --vm: tcg (default; emulated, timings measure qemu) or kvm "
                        "(only where KVM works; it hangs on some hosts)")
    p.add_argument("--vm-memory", type=_bytes, default=1 * GIB, metavar="BYTES",
                   help="guest RAM with --vm [bytes; K, M, G: powers of 1024] (default 1G)")
    p.add_argument("--vm-timeout", type=positive_seconds, default=3600.0, metavar="S",
                   help="limit for the whole VM run [s] (default 3600)")
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="PostMark runs on the stack (default: %(default)s)")
    p.add_argument("--memory-limit", type=_bytes, default=None, metavar="BYTES",
                   help="run PostMark in a memory cgroup with this limit, page cache included [bytes; K, M, G: "
                        "powers of 1024] (default: none, no cgroup)")
    p.add_argument("--no-drop-caches", action="store_true",
                   help="do not sync and drop caches before each run (default: they are dropped)")
    p.add_argument("--fs", choices=("ext3", "ext2", "ext4", "xfs", "btrfs"), help="with --layout (default ext3)")
    p.add_argument("--mkfs-options", metavar="OPTS",
                   help="with --layout: options of mkfs.<fs>, as one string (e.g. '-b size=4096 -d agcount=8') "
                        "(default: none)")
    p.add_argument("--mount-options", metavar="OPTS",
                   help="with --layout: comma-separated mount options (default: none)")
    p.add_argument("--size", type=_bytes, metavar="BYTES",
                   help="with --layout: file-system size, the same for every layout [bytes; K, M, G: powers of "
                        "1024]; a multiple of 8M (default 2G)")
    p.add_argument("--json", metavar="OUT",
                   help="write the runs and summary as JSON to OUT ('-': stdout, instead of the summary); OUT must "
                        "be new or an earlier postmark result (checked before anything is built) (default: none, "
                        "no file)")
    p.add_argument("--force", action="store_true",
                   help="let --json overwrite a regular file that is not an earlier postmark result "
                        "(never a device, a directory or the scratch target) (default: off)")
    p.add_argument("--quiet", action="store_true",
                   help="print only warnings and errors on stderr (default: every layout step too)")
    for flag, _, helptext in _OVERRIDES:
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=int, default=None,
                       help=f"{helptext} (default: the --workload's)")
    p.add_argument("--buffering", choices=("true", "false"), default=None,
                   help="buffered (stdio) I/O or not (set buffering) (default: the --workload's)")
    p.set_defaults(handler=_run)


def _config(args):
    from diskmodel.model.predictions.workload import postmark_preset
    cfg = postmark_preset(args.workload)
    changes = {field: getattr(args, flag) for flag, field, _ in _OVERRIDES if getattr(args, flag) is not None}
    if args.buffering is not None:
        changes["buffered_io"] = args.buffering == "true"
    return cfg.evolve(**changes) if changes else cfg


def _setup_logging(quiet: bool) -> None:
    root = logging.getLogger("diskmodel")
    if not any(getattr(h, "_diskmodel_postmark", False) for h in root.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("diskmodel: %(message)s"))
        h._diskmodel_postmark = True
        root.addHandler(h)
    root.setLevel(logging.WARNING if quiet else logging.INFO)


# Flags that describe the paper's stacks, which a stack file describes instead (name -> default).
_LAYOUT_FLAGS = {"size": 2 * GIB, "fs": "ext3", "mkfs_options": "", "mount_options": ""}

# Fields of the stack and workload code that a flag sets, for error messages.
_FLAG_OF_FIELD = {"fs_size_bytes": "--size", "kind": "--fs", "mount_options": "--mount-options",
                  "mkfs_options": "--mkfs-options",
                  "memory_limit_bytes": "--memory-limit", "repeats": "--repeats",
                  **{field: f"--{flag.replace('_', '-')}" for flag, field, _ in _OVERRIDES}}


def _json_text(summary) -> str:
    """The summary as JSON (postmark_results.to_json) with the diskmodel.postmark format marker first."""
    import json

    from diskmodel.calibrate.bench.postmark_results import to_json
    from diskmodel.calibrate.harness import outputs

    return json.dumps(outputs.mark(json.loads(to_json(summary)), "postmark"), indent=2, allow_nan=False) + "\n"


def _stack(args):
    """The stack of --stack FILE, or the paper's --layout with --size, --fs and --mount-options; checked for building."""
    from diskmodel.calibrate import stacks
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.cli import flag_error
    from diskmodel.model.stacks.stack import paper_stack

    if args.stack:
        given = [f"--{name.replace('_', '-')}" for name in _LAYOUT_FLAGS if getattr(args, name) is not None]
        try:
            stack = stacks.read_stack(args.stack, also_given=given)
        except ValueError as exc:
            raise UsageError(f"--stack {exc}") from exc
        try:
            L.build_plan(stack, backing="/dev/null")  # everything checked before anything is built
        except ValueError as exc:
            raise UsageError(f"--stack {args.stack}: {exc}") from exc
        return stack
    for name, default in _LAYOUT_FLAGS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    try:
        stack = paper_stack(args.layout, fs_size_bytes=args.size, kind=args.fs,
                            mkfs_options=tuple(args.mkfs_options.split()),
                            mount_options=tuple(o for o in args.mount_options.split(",") if o))
        L.build_plan(stack, backing="/dev/null")
    except ValueError as exc:
        raise UsageError(flag_error(exc, _FLAG_OF_FIELD)) from exc
    return stack


def _run(args) -> int:
    from diskmodel.calibrate.bench.host_executor import LayoutError
    from diskmodel.calibrate.bench.postmark_text import PostMarkError
    from diskmodel.calibrate.harness import outputs
    from diskmodel.calibrate.cli import ERROR_MAX_CHARS, one_line, flag_error
    from diskmodel.calibrate.cli.command_text import check_command_text

    _setup_logging(args.quiet)
    check_command_text(args, "--scratch", "--destroy-data-on")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    if args.memory_limit is not None and args.memory_limit < 16 * MIB:
        raise UsageError(f"--memory-limit must be at least 16M, got {args.memory_limit}")
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if args.memory_limit is not None and not args.vm and args.memory_limit > machine:
        # a cgroup limit above the memory there is limits nothing (and cgroup v1 cuts it to its own maximum)
        raise UsageError(f"--memory-limit {args.memory_limit}: more than this machine's memory ({machine} bytes), "
                         "so it would limit nothing; give at most that, or leave --memory-limit out")
    try:
        config = _config(args)
    except ValueError as exc:
        raise UsageError(flag_error(exc, _FLAG_OF_FIELD)) from exc
    stack = _stack(args)
    emulated = _emulated_drive(args, stack)
    drop = not args.no_drop_caches
    measured = tuple(p for p in (args.scratch, args.destroy_data_on) if p)
    # The output is checked before anything is built.
    outputs.check_output_path(args.json, kind="postmark", force=args.force, measured_paths=measured)

    with contextlib.ExitStack() as held:
        held.enter_context(outputs.output_lock(args.json))
        reservation = _reserve_output(args, held, measured)
        try:
            summary = _dispatch(args, stack, config, drop, emulated)
        except (PostMarkError, LayoutError, RuntimeError) as exc:
            print(f"diskmodel: error: {one_line(exc, ERROR_MAX_CHARS)}", file=sys.stderr)
            return 1
        except ValueError as exc:
            raise UsageError(flag_error(exc, _FLAG_OF_FIELD)) from exc

        if args.json == "-":
            outputs.write_output_atomically("-", _json_text(summary), kind="postmark")
            return 0
        print(summary.summary())
        if args.json:
            reservation.commit(_json_text(summary))
            log.info("wrote %s", args.json)
    return 0


# The size of a PostMark result's JSON: a fixed part and a part per run (--repeats), for the space
# reserved for --json before the run (diskmodel.calibrate.harness.reserve).
POSTMARK_JSON_BYTES = 8 << 10
POSTMARK_JSON_BYTES_PER_RUN = 4 << 10


def _reserve_output(args, held: contextlib.ExitStack, measured):
    """The --json file's place and space, taken before anything is built (in the run state, with SIGINT
    and SIGTERM tearing it down); nothing for no --json or '-'."""
    from diskmodel.calibrate.bench.host_executor import handle_signals
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.reserve import OutputReservation, reserve_bytes_for

    reservation = OutputReservation(
        args.json, kind="postmark", run=None, force=args.force, measured_paths=measured,
        reserve_bytes=reserve_bytes_for(POSTMARK_JSON_BYTES + args.repeats * POSTMARK_JSON_BYTES_PER_RUN, args.json))
    if not reservation.active:
        return reservation
    held.enter_context(handle_signals())
    reservation.run = held.enter_context(runstate.ensure_run(f"postmark --json {args.json}"))
    return held.enter_context(reservation)


def _check_host_run(stack, scratch) -> None:
    """Before anything is created: every program the run calls is installed, and a new scratch file fits."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.harness.tools import require_free_space, require_tools, tools_of_plan

    plan = L.build_plan(stack, backing=os.path.realpath(scratch))
    require_tools(["postmark", "sync", *tools_of_plan(plan)], "diskmodel postmark")
    try:
        require_free_space(scratch, L.backing_bytes_required(stack), what="--scratch")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _emulated_drive(args, stack):
    """The drive of --emulate (None without it), checked before anything is built."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.emulate.workloads import emulate_flag

    try:
        # each disk on a drive of its own: the largest disk must fit one
        return emulate_flag(args.emulate, max(L.disk_spans_bytes(stack).values()), scratch=args.scratch,
                            destroy_data_on=args.destroy_data_on)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _dispatch(args, stack, config, drop, emulated=None):
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.postmark import run_on_stack

    if emulated is not None:
        return _dispatch_emulated(args, stack, config, drop, emulated)
    if not args.vm:
        if not args.scratch:
            raise UsageError("--scratch PATH is required (or pass --vm)")
        if os.geteuid() != 0:
            raise UsageError("diskmodel postmark needs root on the host (loop devices, mount, drop_caches)")
        try:
            L.require_device_mapper(stack)
        except L.LayoutUnavailable as exc:
            raise UsageError(str(exc)) from None
        _check_host_run(stack, args.scratch)
    elif args.scratch or args.destroy_data_on:
        raise UsageError("--scratch and --destroy-data-on do not apply with --vm (the VM has its own scratch disk)")
    return run_on_stack(
        stack, config, scratch=args.scratch, vm=args.vm, repeats=args.repeats, memory_limit_bytes=args.memory_limit,
        drop_page_cache=drop, destroy_data_on=args.destroy_data_on, keep=args.keep,
        vm_memory_bytes=args.vm_memory, vm_timeout_s=args.vm_timeout, vm_accelerator=args.vm_accelerator)


def _dispatch_emulated(args, stack, config, drop, spec):
    """PostMark on the stack built on the emulated drive *spec* (on the host or in the VM)."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.postmark import run_on_stack
    from diskmodel.calibrate.emulate.workloads import emulated_disk
    from diskmodel.calibrate.harness.tools import require_tools, tools_of_plan

    if not args.vm:
        if os.geteuid() != 0:
            raise UsageError("diskmodel postmark --emulate needs root on the host (loop devices, a FUSE mount, "
                             "mount, drop_caches)")
        try:
            L.require_device_mapper(stack)
        except L.LayoutUnavailable as exc:
            raise UsageError(str(exc)) from None
        require_tools(["postmark", "sync", *tools_of_plan(L.build_plan(stack, backing="/dev/null"))],
                      "diskmodel postmark")
    def say(line: str) -> None:
        (log.warning if "WARNING" in line else log.info)("%s", line)

    # the disks the stack's partitions are on, each a drive of its own
    with emulated_disk(spec, vm=args.vm, say=say, disks=tuple(L.disk_spans_bytes(stack))) as disk:
        return run_on_stack(
            stack, config, scratch=disk.path, vm=args.vm, repeats=args.repeats, memory_limit_bytes=args.memory_limit,
            drop_page_cache=drop, destroy_data_on=disk.path, vm_memory_bytes=args.vm_memory,
            vm_timeout_s=args.vm_timeout, vm_accelerator=args.vm_accelerator, vm_drives=disk.vm_drives,
            disk_backings=disk.backings)
