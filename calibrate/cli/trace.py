"""``diskmodel trace record [--device DEV ...] [--output FILE] -- COMMAND`` and
``diskmodel replay TRACE --stack FILE.json``: what reaches each block device, measured with blktrace,
and replayed through another stack."""
from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from diskmodel.model._checks import show


def add_parser(subparsers) -> None:
    trace = subparsers.add_parser(
        "trace", help="record what reaches each block device while a command runs (blktrace)",
        description="Record the requests each block device receives while a command runs, with blktrace "
                    "(Debian package blktrace), as request streams.")
    sub = trace.add_subparsers(dest="trace_command", metavar="ACTION")
    rec = sub.add_parser(
        "record", help="run COMMAND under blktrace and write the per-device streams",
        description="Run COMMAND (an argument vector after --, run without a shell) while blktrace traces the "
                    "devices, then write every device's issued requests (blkparse's D events, with their "
                    "completions) to --output and print per-device totals.")
    rec.add_argument("--device", action="append", metavar="DEV", default=None,
                     help="a block device to trace; repeat for several (default: every disk in /sys/block "
                          "with a size, loop and zram devices included)")
    rec.add_argument("--output", metavar="FILE.npz", default="blocktrace.npz",
                     help="where to write the trace (numpy .npz; default: blocktrace.npz)")
    rec.add_argument("--blkparse-text", metavar="FILE", default=None,
                     help="also keep blkparse's text output there (default: not kept)")
    rec.add_argument("--timeout", type=float, metavar="SECONDS", default=None,
                     help="kill COMMAND after this long (default: none)")
    rec.add_argument("--json", action="store_true", help="print one JSON object (default: a table)")
    rec.add_argument("command_argv", nargs="*", metavar="COMMAND", help="the command to run, after -- (no default)")
    rec.set_defaults(handler=_record)
    trace.set_defaults(handler=_trace_usage)

    rep = subparsers.add_parser(
        "replay", help="replay a recorded block trace through another stack's layers and drives",
        description="Issue a recorded trace's requests (ours, .npz, or blkparse's text output) at their "
                    "recorded times to a stack's volume, through its block layers to its drives, and print "
                    "the elapsed time and per-disk totals.")
    rep.add_argument("trace", metavar="TRACE", help="a trace written by 'diskmodel trace record', or blkparse's text output (no default)")
    rep.add_argument("--stack", metavar="FILE.json", required=True,
                     help="the stack to replay through (a stack description, as 'diskmodel predict --stack'; no default)")
    rep.add_argument("--device", metavar="NAME", default=None,
                     help="the traced device to replay (default: the trace's only device)")
    rep.add_argument("--json", action="store_true", help="print one JSON object (default: text)")
    rep.set_defaults(handler=_replay)


def _trace_usage(args) -> int:
    from diskmodel.calibrate.cli import UsageError

    raise UsageError("trace: give an action: record")


def _all_disks() -> list[str]:
    out = []
    for name in sorted(os.listdir("/sys/block")):
        try:
            size = int(Path(f"/sys/block/{name}/size").read_text())
        except (OSError, ValueError):
            continue
        if size > 0 and os.path.exists(f"/dev/{name}"):
            out.append(f"/dev/{name}")
    return out


def _table(totals: dict) -> str:
    head = f"{'device':<16} {'read_requests':>13} {'read_bytes':>14} {'write_requests':>14} {'write_bytes':>14}"
    rows = [head] + [f"{name:<16} {t['read_requests']:>13} {t['read_bytes']:>14} {t['write_requests']:>14} "
                     f"{t['write_bytes']:>14}" for name, t in totals.items()]
    return "\n".join(rows)


def _output_file(flag: str, given: str) -> Path:
    """An output path checked before anything runs: a new file in an existing folder, or a regular file
    (a FIFO would block the writer, blkparse, for ever; a device would take the bytes); UsageError else."""
    from diskmodel.calibrate.cli import UsageError

    path = Path(given)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise UsageError(f"{flag} {show(given)}: its folder {show(str(path.parent))} does not exist") from None
        return path
    except OSError as exc:
        raise UsageError(f"{flag} {show(given)}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{flag} {show(given)}: is a directory")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{flag} {show(given)}: not a regular file (a device, a FIFO or a socket); give a file path")
    return path


def _record(args) -> int:
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.trace import record as rec
    from diskmodel.calibrate.trace.tracefile import save_trace

    if not args.command_argv:
        raise UsageError("trace record: give the command to run after -- (e.g. -- dd if=/dev/zero of=/dev/loop0 ...)")
    if args.timeout is not None and not 0 < args.timeout < math.inf:
        raise UsageError(f"--timeout {args.timeout}: must be a finite positive number of seconds")
    out = _output_file("--output", args.output)
    devices = args.device or _all_disks()
    text_copy = _output_file("--blkparse-text", args.blkparse_text) if args.blkparse_text else None
    trace, status = rec.record(args.command_argv, devices, timeout_s=args.timeout, text_copy=text_copy)
    save_trace(trace, out)
    totals = trace.totals()
    if args.json:
        print(json.dumps({"trace": str(out), "command_exit_status": status, "devices": totals}))
    else:
        print(_table(totals))
        print(f"trace written to {out}; the command exited with status {status}")
    return 0 if status == 0 else 1


def _replay(args) -> int:
    from diskmodel.calibrate import stacks
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.trace.replay import replay
    from diskmodel.calibrate.trace.tracefile import load_trace

    trace = load_trace(args.trace)
    if not trace.devices:
        raise UsageError(f"{args.trace}: holds no issued request of any device")
    if args.device is None:
        if len(trace.devices) != 1:
            raise UsageError(f"{args.trace} holds {len(trace.devices)} devices ({', '.join(trace.devices)}): "
                             "choose one with --device")
        name = next(iter(trace.devices))
    elif args.device not in trace.devices:
        raise UsageError(f"--device {args.device}: not in {args.trace} ({', '.join(trace.devices)})")
    else:
        name = args.device
    try:
        stack = stacks.resolve_drives(stacks.read_stack(args.stack), relative_to=Path(args.stack).parent)
    except ValueError as exc:
        raise UsageError(f"--stack {exc}") from None
    result = replay(trace.devices[name].stream, stack)
    totals = result.totals()
    if args.json:
        print(json.dumps({"trace": str(args.trace), "device": name, "elapsed_s": result.elapsed_s, "devices": totals}))
    else:
        print(_table(totals))
        print(f"elapsed_s: {result.elapsed_s:.6f}")
    return 0
