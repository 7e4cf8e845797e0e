"""``diskmodel emulate DRIVE [DRIVE ...]``: serve modelled drives as real block devices, timed request by
request; ``diskmodel emulate-log FILE``: summarise an emulated drive's request log."""
from __future__ import annotations

import errno
import json
import os
import sys
import time

from diskmodel.calibrate.cli import UsageError, positive_seconds
from diskmodel.model._checks import show


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "emulate",
        help="serve modelled drives as real block devices (/dev/loopN), each request completing when the "
             "drive's simulation says",
        description=(
            "Serve each DRIVE as a block device: nbdkit serves the drive, nbdfuse exposes it as a file and "
            "losetup --direct-io=on attaches that as /dev/loopN. Every request completes at the time the "
            "drive's per-request simulation gives (a flat calibration: a latency drawn from its measured "
            "reads), less the path's own fixed cost measured at start; each request's lateness (actual "
            "minus simulated completion) is recorded. Serves until SIGINT or SIGTERM, or for --for-s "
            "seconds, then tears everything down and reports the lateness. Needs root, nbdkit with its "
            "Python plugin, nbdfuse and /dev/fuse."),
    )
    parser.add_argument("drives", metavar="DRIVE", nargs="+",
                        help="a bundled DiskSim drive's name (e.g. atlas10k), a DiskSim drive folder, a preset "
                             "(hp97560, hp_c2247a, wd800bd) or a calibration JSON (no default)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON line when the devices are ready ({\"devices\": [{\"drive\", \"path\", "
                             "\"size_bytes\"}]}) and one with the run's results at the end (default: text)")
    parser.add_argument("--for-s", type=positive_seconds, default=None, metavar="S",
                        help="serve for S seconds, then stop (default: until SIGINT or SIGTERM)")
    parser.add_argument("--backing-dir", metavar="DIR", default=None,
                        help="folder for the drives' sparse backing files (default: the run's temporary folder)")
    parser.add_argument("--log-dir", metavar="DIR", default=None,
                        help="keep each drive's request log there as DRIVE-N.reqlog, written as requests are served "
                             "(default: not kept)")
    parser.add_argument("--lateness-bound-s", type=positive_seconds, default=None, metavar="S",
                        help="warn when the lateness p99 exceeds S seconds (default: 0.0005)")
    parser.add_argument("--realtime-priority", type=int, default=None, metavar="N",
                        help="serve under the real-time scheduler (SCHED_FIFO) at priority N, 1-99, so that a busy "
                             "host delays the requests' completions less (default: 40; where SCHED_FIFO cannot be "
                             "had, one line says so and the normal scheduler serves)")
    parser.add_argument("--no-realtime", action="store_true",
                        help="serve under the normal scheduler (default: SCHED_FIFO, see --realtime-priority)")
    parser.add_argument("--kernel-threads-realtime", type=int, default=None, metavar="N",
                        help="also put the kernel threads on the loop devices' way (the unbound workqueue's "
                             "kworker/uN:M, ksoftirqd/N) under SCHED_FIFO N, 1-99, for the run; each is recorded "
                             "first and put back at the end, on a signal, or by diskmodel cleanup after a "
                             "SIGKILL (default: left alone; these threads serve every process)")
    parser.set_defaults(handler=_run)

    log = subparsers.add_parser(
        "emulate-log", help="summarise an emulated drive's request log (the .reqlog that diskmodel emulate --log-dir keeps)",
        description="Summarise the request log of an emulated drive: requests by kind, bytes, hits, the simulated "
                    "service time and the lateness p50, p99 and max.")
    log.add_argument("file", metavar="FILE", help="a request log (.reqlog) written by diskmodel emulate --log-dir "
                                                  "(no default)")
    log.add_argument("--json", action="store_true", help="print one JSON object (default: text)")
    log.add_argument("--lateness-bound-s", type=positive_seconds, default=None, metavar="S",
                     help="say whether the lateness p99 is within S seconds (default: 0.0005)")
    log.set_defaults(handler=_run_log)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _run(args) -> int:
    from diskmodel.calibrate.emulate import LATENESS_P99_BOUND_S, emulated_drives, resolve_drive
    from diskmodel.calibrate.emulate.devices import DEFAULT_REALTIME_PRIORITY
    from diskmodel.calibrate.emulate.kthreads import kernel_threads_realtime

    if args.no_realtime and args.realtime_priority is not None:
        raise UsageError("--no-realtime and --realtime-priority exclude each other")
    if args.kernel_threads_realtime is not None and not 1 <= args.kernel_threads_realtime <= 99:
        raise UsageError(f"--kernel-threads-realtime must be a whole number from 1 to 99 "
                         f"(got {args.kernel_threads_realtime})")
    priority = None if args.no_realtime else (DEFAULT_REALTIME_PRIORITY if args.realtime_priority is None
                                              else args.realtime_priority)
    bound = LATENESS_P99_BOUND_S if args.lateness_bound_s is None else args.lateness_bound_s
    specs = []
    for drive in args.drives:
        try:
            specs.append(resolve_drive(drive))
        except ValueError as exc:
            text = str(exc)
            raise UsageError(text if text.startswith("DRIVE") else f"DRIVE {show(drive)}: {text}") from None
    serving = False
    devices = []
    try:
        # the kernel's threads first: each drive's path cost is probed as its requests then travel
        with kernel_threads_realtime(args.kernel_threads_realtime), \
                emulated_drives(specs, backing_dir=args.backing_dir, log_dir=args.log_dir, lateness_bound_s=bound,
                                realtime_priority=priority, say=_stderr) as devices:
            # serving from here on: a SIGINT that lands while the ready line is printed (a caller that
            # reads it may signal at once) is the normal end, not an interrupted set-up
            serving = True
            if args.json:
                print(json.dumps({"devices": [d.as_dict() for d in devices]}), flush=True)
            else:
                for d in devices:
                    print(f"{d.drive}: {d.path} ({d.size_bytes} bytes; path's fixed cost "
                          f"{d.fixed_cost_s * 1e3:.3f} ms)", flush=True)
                print("serving " + (f"for {args.for_s:g} s" if args.for_s else "until SIGINT or SIGTERM"),
                      flush=True)
            _serve(args.for_s, devices)
    except KeyboardInterrupt:  # SIGINT or SIGTERM (host_executor.Interrupted) while serving: the normal end
        if not serving:
            raise
    return _report(devices, args.json, bound, args.log_dir is not None)


def _serve(for_s: float | None, devices) -> None:
    end = time.monotonic() + for_s if for_s else None
    while end is None or time.monotonic() < end:
        for d in devices:
            d.check_serving()
        time.sleep(0.2 if end is None else max(min(0.2, end - time.monotonic()), 0.0))


def _report(devices, as_json: bool, bound: float, kept: bool) -> int:
    from diskmodel.calibrate.emulate import format_summary

    rows, failed = [], []
    for d in devices:
        s = d.summary or {}
        rows.append({**d.as_dict(), "timing": d.timing, "fixed_cost_s": d.fixed_cost_s,
                     "log_path": d.log_path if kept else None,
                     **{k: v for k, v in s.items() if k not in ("drive", "timing", "fixed_cost_s")}})
        if s and s.get("lateness_within_bound") is False:
            _stderr(f"WARNING: {d.drive} ({d.path}): lateness p99 {s['lateness_p99_s'] * 1e3:.3f} ms exceeds the "
                    f"bound {bound * 1e3:.3f} ms: requests completed later than the simulation says")
        if s.get("errors"):
            why = f"{d.drive}: {s['errors']} request(s) failed (errno {s['error_errnos']})"
            if errno.ENOSPC in s["error_errnos"] and d.backing_path:
                why += (f": the file system of {os.path.dirname(d.backing_path)}, which held its sparse backing "
                        f"file, filled up under the data written (give --backing-dir a larger one)")
            failed.append(why)
    if as_json:
        print(json.dumps({"devices": rows, "lateness_p99_bound_s": bound}), flush=True)
    else:
        for d in devices:
            print(format_summary(d.summary) if d.summary else f"{d.drive}: no request log", flush=True)
    if failed:
        raise RuntimeError("; ".join(failed))
    return 0


def _run_log(args) -> int:
    from diskmodel.calibrate.emulate import LATENESS_P99_BOUND_S, format_summary, read_log, summarize

    bound = LATENESS_P99_BOUND_S if args.lateness_bound_s is None else args.lateness_bound_s
    try:
        frame = read_log(args.file)
    except ValueError as exc:
        raise UsageError(f"FILE {exc}") from None
    except IsADirectoryError:
        raise UsageError(f"FILE {show(args.file)}: is a directory, where a request log (.reqlog) is expected") from None
    summary = summarize(frame, lateness_bound_s=bound)
    print(json.dumps(summary) if args.json else format_summary(summary))
    return 0
