"""``diskmodel validate-trace DISKDIR [--json]``: simulate a DiskSim drive's trace and score it."""
from __future__ import annotations

import json


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate-trace",
        help="simulate a DiskSim drive folder's measured trace and print the demerit",
        description=(
            "Read a folder laid out like DiskSim's validation drives (a .parv, its .diskspecs, "
            ".model, .seek and one .trace), simulate every request of the trace one at a time, "
            "and compare the predicted with the measured service times: the demerit is the RMS "
            "horizontal distance between the two CDFs over probability levels 0.0001 ... 1."
        ),
    )
    parser.add_argument("diskdir", help="the drive folder, e.g. ../shared/data/disksim/hp_c2247a")
    parser.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from pathlib import Path

    from diskmodel.model.disksim import load_disksim_drive, validate_drive

    from diskmodel.calibrate.cli import UsageError

    folder = Path(args.diskdir)
    if not folder.exists():
        raise UsageError(f"DISKDIR {folder}: no such folder (give a DiskSim drive folder, e.g. "
                         f"../shared/data/disksim/hp_c2247a)")
    if not folder.is_dir():
        raise UsageError(f"DISKDIR {folder} is not a folder (give a DiskSim drive folder holding a .parv or "
                         f".diskspecs and a .trace)")
    try:
        drive = load_disksim_drive(folder)
    except (ValueError, OSError) as exc:
        raise UsageError(f"DISKDIR {folder}: {_reason(exc)}") from exc
    if drive.trace_path is None:
        raise UsageError(f"DISKDIR {folder} holds no .trace file to validate against")
    try:
        result = validate_drive(drive)
    except (ValueError, OSError) as exc:
        raise UsageError(f"DISKDIR {folder}: {_reason(exc)}") from exc
    if args.json:
        figures = result.as_dict()
        keys = ("disk", "requests", "demerit_ms", "demerit_pct_of_mean", "mean_measured_ms", "mean_predicted_ms")
        out = {key: figures[key] for key in keys}
        out.update({key: value for key, value in figures.items() if key not in out})
        print(json.dumps(out))
    else:
        print(result.summary())
    return 0


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)
