"""``diskmodel validate-trace (NAME | DISKDIR | --list | --calibration CAL.json TRACE) [--json]``: simulate a
DiskSim drive's (or a calibrated drive's) trace and score it."""
from __future__ import annotations

import json
import sys


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate-trace",
        help="simulate a DiskSim drive's measured trace (bundled, by name, or a folder) and print the demerit",
        description=(
            "Read one of the DiskSim validation drives bundled with diskmodel (by name; --list names them), or "
            "a folder laid out like them (a .parv, its .diskspecs, .model, .seek and one .trace), simulate every "
            "request of the trace one at a time, "
            "and compare the predicted with the measured service times: the demerit is the RMS "
            "horizontal distance between the two CDFs over probability levels 0.0001 ... 1, computed as "
            "DiskSim computes its published demerits (both samples counted into DiskSim's access-time "
            "buckets, linear interpolation between the bucket edges); quantile_demerit_ms is the same "
            "distance on exact empirical quantiles."
        ),
    )
    parser.add_argument("diskdir", metavar="NAME|DISKDIR", nargs="?", default=None,
                        help="a bundled drive's name (e.g. atlas10k; --list names them) or a DiskSim drive folder "
                             "(no default)")
    parser.add_argument("--list", action="store_true",
                        help="list the bundled DiskSim drives, and which have a trace, then exit (default: off)")
    parser.add_argument("--calibration", metavar="CAL.json", default=None,
                        help="simulate a calibrated drive (a calibration file written by 'diskmodel calibrate --json') "
                             "instead: the positional argument is then a trace file in DiskSim's validation-trace "
                             "format (default: none)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object for scripts (default: a text summary)")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from diskmodel.data.disksim import disksim_drive_folder
    from diskmodel.model.disksim_drives.convert import load_disksim_drive, validate_drive

    from diskmodel.calibrate.cli import UsageError

    if args.list:
        if args.diskdir is not None:
            raise UsageError(f"--list takes no drive (got {args.diskdir})")
        return _list(args.json)
    if args.calibration is not None:
        return _run_calibration(args)
    if args.diskdir is None:
        raise UsageError("give a bundled drive's name (--list names them) or a DiskSim drive folder")
    try:
        folder = disksim_drive_folder(args.diskdir)
    except ValueError as exc:
        raise UsageError(f"NAME|DISKDIR: {exc}") from exc
    try:
        drive = load_disksim_drive(folder)
    except (ValueError, OSError) as exc:
        raise UsageError(f"DISKDIR {folder}: {_reason(exc)}") from exc
    if drive.trace_path is None:
        raise UsageError(f"{args.diskdir}: {folder} holds no .trace file to validate against "
                         f"(`diskmodel validate-trace --list` names the bundled drives that have one)")
    _say_if_compiling()
    try:
        trace = drive.read_trace()
        result = validate_drive(drive, trace=trace)
    except (ValueError, OSError) as exc:
        raise UsageError(f"DISKDIR {folder}: {_reason(exc)}") from exc
    _report_ignored(trace, args.json)
    _print(result, args.json, {"ignored_lines": trace.ignored_lines})
    return 0


def _run_calibration(args) -> int:
    """``--calibration CAL.json TRACE``: the calibrated drive (``to_disk()``, then
    ``DriveParameters.from_disk``) simulated on a DiskSim-format trace."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.harness.results import CalibrationFileError, calibration_from_json
    from diskmodel.data.disksim import read_trace
    from diskmodel.model.disksim_drives.convert import validate_trace
    from diskmodel.model.drive.parameters import DriveParameters

    if args.diskdir is None:
        raise UsageError("--calibration CAL.json needs a trace file: diskmodel validate-trace --calibration "
                         "CAL.json TRACE")
    try:
        calibration = calibration_from_json(args.calibration)
    except CalibrationFileError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--calibration {args.calibration}: {_reason(exc)}") from None
    try:
        params = DriveParameters.from_disk(calibration.to_disk())
    except ValueError as exc:
        raise UsageError(f"--calibration {args.calibration}: {exc}") from None
    _say_if_compiling()
    try:
        trace = read_trace(args.diskdir)
        result = validate_trace(params, trace)
    except (ValueError, OSError) as exc:
        raise UsageError(f"TRACE {args.diskdir}: {_reason(exc)}") from None
    _report_ignored(trace, args.json)
    _print(result, args.json, {"ignored_lines": trace.ignored_lines})
    return 0


def _say_if_compiling() -> None:
    """Tell on stderr, before the wait, when the simulation will first compile (numba's cache holds
    no compiled simulator for this machine: diskmodel.model._jit)."""
    from diskmodel.model._jit import compile_notice

    notice = compile_notice()
    if notice:
        print(notice, file=sys.stderr, flush=True)


def _report_ignored(trace, as_json: bool) -> None:
    """Say how many comment or header lines of the trace were not read as requests."""
    if trace.ignored_lines and not as_json:
        print(f"{trace.path}: ignored {trace.ignored_lines} comment or header line(s)")


def _print(result, as_json: bool, extra: dict | None = None) -> None:
    if as_json:
        figures = result.as_dict()
        keys = ("disk", "requests", "demerit_ms", "demerit_pct_of_mean", "mean_measured_ms", "mean_predicted_ms")
        out = {key: figures[key] for key in keys}
        out.update({key: value for key, value in figures.items() if key not in out})
        out.update(extra or {})
        print(json.dumps(out))
    else:
        print(result.summary())


def _list(as_json: bool) -> int:
    """Print the bundled drives: name, whether it has a trace, DiskSim's published demerit, the drive."""
    from diskmodel.data.disksim import BUNDLED_DRIVES, DISKSIM_PUBLISHED_DEMERIT_MS, TRACED_DRIVES

    rows = [{"name": name, "traced": name in TRACED_DRIVES,
             "disksim_demerit_ms": DISKSIM_PUBLISHED_DEMERIT_MS.get(name), "drive": drive}
            for name, drive in BUNDLED_DRIVES.items()]
    if as_json:
        print(json.dumps(rows))
        return 0
    print(f"{'name':<12}{'trace':<7}{'DiskSim demerit':<17}drive")
    for row in rows:
        demerit = "" if row["disksim_demerit_ms"] is None else f"{row['disksim_demerit_ms']:.3f} ms"
        print(f"{row['name']:<12}{'yes' if row['traced'] else 'no':<7}{demerit:<17}{row['drive']}")
    return 0


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)
