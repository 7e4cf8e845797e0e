"""``diskmodel experiment``: the main job (see :mod:`diskmodel.calibrate.experiment`)."""
from __future__ import annotations

import math


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "experiment",
        help="calibrate, fit, predict the paper's layouts, compare with Tables 4-6, write a report",
        description=("Calibrate the built-in simulated WD800BD (or --device PATH, read-only), fit the model, "
                     "predict PostMark throughput for native, LVM-1 and LVM-2 under the paper's three "
                     "workloads, compare with the paper's Tables 4-6 and write a report folder."),
    )
    parser.add_argument("--out", default="reports/experiment",
                        help="report folder: new, empty, or an earlier experiment report (default: %(default)s)")
    parser.add_argument("--force", action="store_true",
                        help="write the report into a folder holding other files (files of the report's names "
                             "in it are overwritten) (default: off)")
    parser.add_argument("--preset", default="wd800bd", help="simulated disk to calibrate (default: %(default)s)")
    parser.add_argument("--device", metavar="PATH",
                        help="calibrate this block device or written file instead, read-only (default: none, the "
                             "simulated --preset)")
    parser.add_argument("--budget-s", type=float, default=None, metavar="S",
                        help="device time for the calibration [s] (default: 120 for the simulated disk, 60 with "
                             "--device)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the measurement design and of the simulated disk (default: %(default)s)")
    parser.add_argument("--postmark-scratch", metavar="PATH",
                        help="also run real PostMark (native layout) on a scratch file created at PATH "
                             "(or a block device, with --destroy-data-on PATH); needs root (default: none, no real "
                             "PostMark)")
    parser.add_argument("--destroy-data-on", metavar="PATH",
                        help="confirm that the block device given as --postmark-scratch may be overwritten "
                             "(default: none)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (default: a progress bar when stderr is a terminal)")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    import os

    from diskmodel.calibrate.harness import outputs
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.experiment import format_summary, run_experiment
    from diskmodel.model.presets import load_preset
    from diskmodel.calibrate.cli.command_text import check_command_text

    check_command_text(args, "--device", "--postmark-scratch", "--destroy-data-on")
    if args.budget_s is not None and not (math.isfinite(args.budget_s) and args.budget_s > 0):
        raise UsageError(f"--budget-s must be a finite number > 0 (got {args.budget_s})")
    if args.device is not None and not os.path.exists(args.device):
        raise UsageError(f"--device {args.device}: no such file or device")
    try:  # the preset is calibrated (no --device) and lends its buffer size and interface rate
        load_preset(args.preset)
    except ValueError as exc:
        raise UsageError(f"--preset {args.preset}: {exc}") from exc
    measured = tuple(p for p in (args.device, args.postmark_scratch, args.destroy_data_on) if p)
    # The report folder is checked before anything is measured.
    outputs.check_output_dir(args.out, force=args.force, measured_paths=measured)
    created = _missing_folders(args.out)
    with outputs.output_lock(args.out):
        try:
            report = _run_experiment(args, run_experiment)
        except BaseException:
            _remove_empty(created)  # a failed run leaves no empty report folder behind
            raise
    print(format_summary(report))
    return 0


def _run_experiment(args, run_experiment):
    import os

    from diskmodel.calibrate.cli import UsageError, reword
    from diskmodel.calibrate.harness.measure import BudgetTooSmall

    try:
        return run_experiment(args.out, preset=args.preset, device=args.device, budget_s=args.budget_s,
                              seed=args.seed, postmark_scratch=args.postmark_scratch,
                              destroy_data_on=args.destroy_data_on,
                              progress=False if args.no_progress else None)
    except BudgetTooSmall as exc:
        shown = "--budget-s" if args.budget_s is not None else "the default --budget-s"
        raise UsageError(f"{shown} {exc.budget_s:g} is too small: one calibration needs at least "
                         f"~{exc.minimum_s:g} s of device time; give --budget-s {exc.minimum_s:g} or more") from exc
    except PermissionError as exc:
        if args.device is not None and exc.filename is not None and os.fspath(exc.filename) == args.device:
            hint = ("even root may not open it here: a container or device policy forbids it"
                    if os.geteuid() == 0 else "run as root, or choose a device you may read")
            raise UsageError(f"--device: cannot open {args.device}: {exc.strerror} ({hint})") from exc
        raise
    except ValueError as exc:
        raise UsageError(reword(exc, {"budget_s": "--budget-s"})) from exc


def _missing_folders(path) -> list[str]:
    """The folders of *path* (itself and its parents) that do not exist yet, deepest first."""
    import os

    missing = []
    current = os.path.abspath(path)
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return missing


def _remove_empty(folders) -> None:
    """Remove the folders a failed run created, where they are still empty (deepest first)."""
    import os

    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            break
