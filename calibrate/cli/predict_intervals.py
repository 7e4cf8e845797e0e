"""The intervals of ``diskmodel predict``: a calibrated drive's uncertainty (its rotation period's and seek
fit's standard errors) drawn and re-timed on the timed I/O path
(:mod:`diskmodel.model.predictions.intervals`), for the stack's calibration disks."""
from __future__ import annotations

import os

__all__ = ["calibrations", "has_calibration", "interval_figures", "print_interval"]


def calibrations(args, stack) -> dict:
    """``{drive name: CalibrationResult}`` of the stack's calibrated drives (--calibration, or the
    calibration disks of --stack): the timed prediction draws their parameters for its intervals
    (:mod:`diskmodel.model.predictions.intervals`). Empty for presets and DiskSim drives."""
    from pathlib import Path

    from diskmodel.calibrate.harness.results import calibration_from_json
    from diskmodel.model.drive.drives import FileDrive

    if args.stack:
        folder = Path(os.path.dirname(os.path.abspath(args.stack)))
        files = {d.name: d.path if Path(d.path).is_absolute() else folder / d.path for d in args.stack_disks
                 if isinstance(d, FileDrive) and d.kind == "calibration"}
    elif args.calibration:
        files = {stack.disks[0].name: args.calibration}
    else:
        files = {}
    return {name: calibration_from_json(path) for name, path in files.items()}


def has_calibration(args) -> bool:
    from diskmodel.model.drive.drives import FileDrive

    return bool(args.calibration) or any(isinstance(d, FileDrive) and d.kind == "calibration"
                                         for d in getattr(args, "stack_disks", ()))


def interval_figures(prediction) -> dict:
    """The 95 % intervals of a timed prediction made with calibrations, for --json: ``{figure: [lower,
    upper]}`` (empty without calibrations)."""
    ci = getattr(prediction, "intervals", None)
    if ci is None:
        return {}
    return {name: [float(row["lower"]), float(row["upper"])] for name, row in ci.iterrows()}


def print_interval(prediction) -> None:
    """The 95 % interval of a timed prediction's elapsed time, when it was made with calibrations."""
    ci = getattr(prediction, "intervals", None)
    if ci is not None:
        print(f"95 % interval of elapsed (the calibrations' uncertainty): {ci.loc['elapsed_s', 'lower']:.3f} to "
              f"{ci.loc['elapsed_s', 'upper']:.3f} s")
