"""``diskmodel postmark``: build a native, LVM-1 or LVM-2 layout, run PostMark on it, tear it down.

On the host: the scratch PATH (a new file the tool creates and fills, or an
existing file or block device named twice, with ``--destroy-data-on``) is cut
into loop devices, the layout is built step by step (each step logged), PostMark
runs ``--repeats`` times with the page cache dropped before each run and an
optional memory cgroup, and everything is torn down on success, failure, SIGINT
and SIGTERM.

With ``--vm``: the same layout plan is rendered as one shell script and run
in a throwaway qemu VM (:mod:`diskmodel.calibrate.bench.vm`) on a scratch disk of the
size the layout needs; PATH is then not used. Under TCG the timings measure
an emulator, and the report says so.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys

from diskmodel.calibrate.cli import UsageError

log = logging.getLogger("diskmodel.postmark")

GIB = 1 << 30
MIB = 1 << 20

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


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0 (got {text!r})")
    return value


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "postmark", help="run PostMark on a native, LVM-1 or LVM-2 layout",
        description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--layout", required=True, choices=("native", "lvm1", "lvm2"))
    p.add_argument("--workload", required=True, choices=("test1", "test2", "test3"),
                   help="the paper's PostMark workload (section 4.2); override its fields below")
    p.add_argument("--scratch", metavar="PATH",
                   help="scratch file to create (or an existing file / block device with --destroy-data-on)")
    p.add_argument("--destroy-data-on", metavar="PATH",
                   help="confirm that the existing file or block device PATH may be overwritten")
    p.add_argument("--keep", action="store_true", help="keep a scratch file the tool created")
    p.add_argument("--vm", action="store_true", help="build the layout in a throwaway qemu VM")
    p.add_argument("--vm-accelerator", choices=("tcg", "kvm"), default="tcg",
                   help="qemu accelerator with --vm: tcg (default; emulated, timings measure qemu) or kvm "
                        "(only where KVM works; it hangs on some hosts)")
    p.add_argument("--vm-memory", type=_bytes, default=1 * GIB, metavar="BYTES",
                   help="guest RAM with --vm (default 1G)")
    p.add_argument("--vm-timeout", type=_positive_seconds, default=3600.0, metavar="S",
                   help="limit for the whole VM run [s] (default 3600)")
    p.add_argument("--repeats", type=int, default=1, metavar="N")
    p.add_argument("--memory-limit", type=_bytes, default=None, metavar="BYTES",
                   help="run PostMark in a memory cgroup with this limit (page cache included)")
    p.add_argument("--no-drop-caches", action="store_true",
                   help="do not sync and drop caches before each run")
    p.add_argument("--fs", default="ext3", choices=("ext3", "ext2", "ext4", "xfs"))
    p.add_argument("--mount-options", default="", metavar="OPTS", help="comma-separated mount options")
    p.add_argument("--size", type=_bytes, default=2 * GIB, metavar="BYTES",
                   help="file-system size, the same for every layout; a multiple of 8M (default 2G)")
    p.add_argument("--json", metavar="OUT",
                   help="write the runs and summary as JSON to OUT ('-': stdout, instead of the summary); OUT must "
                        "be new or an earlier postmark result (checked before anything is built)")
    p.add_argument("--force", action="store_true",
                   help="let --json overwrite a regular file that is not an earlier postmark result "
                        "(never a device, a directory or the scratch target)")
    p.add_argument("--quiet", action="store_true", help="print only warnings and errors on stderr (not every layout step)")
    for flag, _, helptext in _OVERRIDES:
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=int, default=None, help=helptext)
    p.add_argument("--buffering", choices=("true", "false"), default=None,
                   help="buffered (stdio) I/O or not (set buffering)")
    p.set_defaults(handler=_run)


def _config(args):
    from diskmodel.model.workload import postmark_preset
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


# Fields of the layout and workload code that a flag sets, for error messages.
_FLAG_OF_FIELD = {"fs_size_bytes": "--size", "fs_type": "--fs", "mount_options": "--mount-options",
                  "memory_limit_bytes": "--memory-limit", "repeats": "--repeats",
                  **{field: f"--{flag.replace('_', '-')}" for flag, field, _ in _OVERRIDES}}


def _json_text(summary) -> str:
    """The summary as JSON (postmark.to_json) with the diskmodel.postmark format marker first."""
    import json

    from diskmodel.calibrate.harness import outputs
    from diskmodel.calibrate.bench import postmark as P

    return json.dumps(outputs.mark(json.loads(P.to_json(summary)), "postmark"), indent=2, allow_nan=False) + "\n"


def _run(args) -> int:
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.harness import outputs
    from diskmodel.calibrate.bench import postmark as P
    from diskmodel.calibrate.cli import one_line, with_flags

    _setup_logging(args.quiet)
    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    if args.memory_limit is not None and args.memory_limit < 16 * MIB:
        raise UsageError(f"--memory-limit must be at least 16M, got {args.memory_limit}")
    try:
        config = _config(args)
        mount_options = tuple(o for o in args.mount_options.split(",") if o)
        needed = L.backing_bytes_required(args.layout, args.size)  # validates --size (ValueError)
    except ValueError as exc:
        raise UsageError(with_flags(exc, _FLAG_OF_FIELD)) from exc
    drop = not args.no_drop_caches
    measured = tuple(p for p in (args.scratch, args.destroy_data_on) if p)
    # The output is checked before anything is built.
    outputs.check_output_path(args.json, kind="postmark", force=args.force, measured_paths=measured)

    with outputs.output_lock(args.json):
        try:
            summary = _dispatch(args, config, mount_options, needed, drop)
        except (P.PostMarkError, L.LayoutError, RuntimeError) as exc:
            print(f"diskmodel: error: {one_line(exc)}", file=sys.stderr)
            return 1
        except ValueError as exc:
            raise UsageError(with_flags(exc, _FLAG_OF_FIELD)) from exc

        if args.json == "-":
            outputs.write_output_atomically("-", _json_text(summary), kind="postmark")
            return 0
        print(summary.summary())
        if args.json:
            outputs.write_output_atomically(args.json, _json_text(summary), kind="postmark", force=args.force,
                                            measured_paths=measured)
            log.info("wrote %s", args.json)
    return 0


def _dispatch(args, config, mount_options, needed, drop):
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench import postmark as P

    if not args.vm:
        if not args.scratch:
            raise UsageError("--scratch PATH is required (or pass --vm)")
        if os.geteuid() != 0:
            raise UsageError("diskmodel postmark needs root on the host (loop devices, mount, drop_caches)")
        try:
            L.require_device_mapper(args.layout)
        except L.LayoutUnavailable as exc:
            raise UsageError(str(exc)) from None
    elif args.scratch or args.destroy_data_on:
        raise UsageError("--scratch and --destroy-data-on do not apply with --vm (the VM has its own scratch disk)")
    return P.run_on_layout(
        args.layout, config, fs_size_bytes=args.size, scratch=args.scratch, vm=args.vm, fs_type=args.fs,
        mount_options=mount_options, repeats=args.repeats, memory_limit_bytes=args.memory_limit,
        drop_page_cache=drop, destroy_data_on=args.destroy_data_on, keep=args.keep,
        vm_memory_bytes=args.vm_memory, vm_timeout_s=args.vm_timeout, vm_accelerator=args.vm_accelerator)
