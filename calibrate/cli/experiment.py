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
                        help="report folder: new, empty, or a complete earlier experiment report, which is "
                             "replaced whole once the new report is complete (default: %(default)s)")
    parser.add_argument("--force", action="store_true",
                        help="write the report into a folder holding other files (they are kept; files of the "
                             "report's names in it are overwritten) or an incomplete report (default: off)")
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
    parser.add_argument("--emulate", metavar="DRIVE",
                        help="the mission's whole loop on an emulated drive (DRIVE as diskmodel emulate takes it, "
                             "e.g. wd800bd): calibrate it through the kernel (a loop device), fit, predict, and run "
                             "real PostMark on native, LVM-1 and LVM-2 in the throwaway VM on it, each run beside the "
                             "model's prediction of it and the layouts' ratios beside the paper's; needs root, nbdkit, "
                             "nbdfuse and qemu (default: none, the simulated --preset without the kernel)")
    parser.add_argument("--simulated", action="store_true",
                        help="the root-free run: calibrate the built-in simulated --preset, without the kernel or "
                             "a device (default: on when neither --emulate nor --device is given)")
    parser.add_argument("--postmark-files", type=int, default=None, metavar="N",
                        help="real PostMark's files at most, per test (default: 1000; 200 with --emulate, whose "
                             "runs are in a VM under TCG)")
    parser.add_argument("--postmark-transactions", type=int, default=None, metavar="N",
                        help="real PostMark's transactions at most, per test (default: 5000; 500 with --emulate)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object: the figures of the report, with --emulate each PostMark run "
                             "measured and predicted (default: the summary table)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (default: a progress bar when stderr is a terminal)")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    import os

    from diskmodel.calibrate.bench.host_executor import handle_signals
    from diskmodel.calibrate.harness import outputs
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.experiment import format_summary, run_experiment
    from diskmodel.model.drive.presets import load_preset
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
    if args.destroy_data_on is not None and not args.postmark_scratch:
        raise UsageError(f"--destroy-data-on {args.destroy_data_on}: applies only with --postmark-scratch "
                         "(it confirms that an existing scratch may be overwritten)")
    _check_emulate(args)
    if args.postmark_scratch:
        _check_postmark_scratch(args.postmark_scratch, args.destroy_data_on)
        _check_postmark_run(args.postmark_scratch)
    measured = tuple(p for p in (args.device, args.postmark_scratch, args.destroy_data_on) if p)
    # The report folder is checked before anything is measured.
    outputs.check_output_dir(args.out, force=args.force, measured_paths=measured)
    created = _missing_folders(args.out)
    # SIGINT and SIGTERM raise, so that the run's teardown removes the report's temporary folder
    # and the earlier report (or nothing) stays.
    with outputs.output_lock(args.out), handle_signals():
        try:
            report = _run_experiment(args, run_experiment)
        except BaseException:
            _remove_empty(created)  # a failed run leaves no empty report folder behind
            raise
    if args.json:
        import json

        print(json.dumps(_report_json(report)))
    else:
        print(format_summary(report))
    return 0


def _report_json(report) -> dict:
    """The report's figures as one JSON object (NaN as null): the paper comparison's medians and timings, and
    with --emulate each run measured beside its predictions, the layouts' orderings and the ratios to native."""
    import math

    def clean(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if hasattr(value, "item"):
            return clean(value.item())
        return value

    def records(frame):
        return None if frame is None else [{k: clean(v) for k, v in row.items()} for row in frame.to_dict("records")]

    out = {"report": str(report.out_dir / "report.md"),
           "median_fitted_error_pct": clean(report.median_fitted_error_pct),
           "median_held_out_error_pct": clean(report.median_held_out_error_pct),
           "timings_s": {k: clean(v) for k, v in report.timings_s.items()}, "notes": list(report.notes)}
    if report.emulated_check is not None:
        from diskmodel.calibrate.experiment_emulated import PREDICTIONS, check_figures

        out["emulated"] = {"runs": records(report.emulated_check), "orderings": records(report.emulated_orderings),
                           "ratios": records(report.emulated_ratios),
                           "figures": {c: check_figures(report.emulated_check, c) for c in PREDICTIONS}}
    return out


def _check_emulate(args) -> None:
    """--emulate's drive (args.emulate_spec) and the PostMark scale, checked before anything is built."""
    import os

    from diskmodel.calibrate.cli import UsageError

    emulated = args.emulate is not None
    if args.simulated and (emulated or args.device is not None):
        raise UsageError(f"--simulated: does not apply with {'--emulate' if emulated else '--device'} (it runs the "
                         f"built-in simulated --preset instead)")
    for flag, value, default in (("--postmark-files", args.postmark_files, 200 if emulated else 1000),
                                 ("--postmark-transactions", args.postmark_transactions, 500 if emulated else 5000)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
        setattr(args, flag[2:].replace("-", "_"), default if value is None else value)
    args.emulate_spec = None
    if not emulated:
        return
    from diskmodel.calibrate.bench.vm import vm_available
    from diskmodel.calibrate.emulate.devices import check_tools
    from diskmodel.calibrate.emulate.workloads import check_fits, drive_for_flag
    from diskmodel.calibrate.experiment_emulated import FS_SIZE_BYTES
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.model.stacks.stack import paper_stack

    if args.device is not None or args.postmark_scratch is not None or args.destroy_data_on is not None:
        raise UsageError("--device, --postmark-scratch and --destroy-data-on do not apply with --emulate (the "
                         "emulated drive is both the calibrated device and PostMark's disk)")
    try:
        spec = drive_for_flag(args.emulate)
        for layout in ("native", "lvm1", "lvm2"):
            check_fits(spec, L.backing_bytes_required(paper_stack(layout, fs_size_bytes=FS_SIZE_BYTES)))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if os.geteuid() != 0:
        raise UsageError("--emulate needs root (a loop device and a FUSE mount on the host)")
    check_tools()
    ok, why = vm_available()
    if not ok:
        raise UsageError(f"--emulate runs PostMark in the throwaway VM, which cannot run here: {why}")
    args.emulate_spec = spec


def _check_postmark_scratch(scratch, destroy_data_on) -> None:
    """An existing --postmark-scratch must be a regular file or a block device that --destroy-data-on names."""
    import os
    import stat

    from diskmodel.calibrate.cli import UsageError

    if not os.path.lexists(scratch):
        if destroy_data_on is not None:
            raise UsageError(f"--destroy-data-on {destroy_data_on}: --postmark-scratch {scratch} does not exist "
                             "(a new scratch file needs no confirmation)")
        return
    mode = os.stat(scratch).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISBLK(mode)):
        raise UsageError(f"--postmark-scratch {scratch} is neither a regular file nor a block device")
    if destroy_data_on is None or os.path.realpath(destroy_data_on) != os.path.realpath(scratch):
        raise UsageError(f"--postmark-scratch {scratch} exists; its data would be destroyed: pass "
                         f"--destroy-data-on {scratch} to confirm, or name a new file")


def _check_postmark_run(scratch) -> None:
    """Before the calibration: PostMark on the native stack can run here (root, its programs, the space)."""
    import os

    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.harness.tools import require_free_space, require_tools, tools_of_plan
    from diskmodel.model.stacks.stack import paper_stack

    if os.geteuid() != 0:
        raise UsageError("--postmark-scratch: real PostMark needs root on the host (loop devices, mount, drop_caches)")
    stack = paper_stack("native", fs_size_bytes=1 << 30)  # what calibrate/experiment.py runs PostMark on
    require_tools(["postmark", "sync", *tools_of_plan(L.build_plan(stack, backing=os.path.realpath(scratch)))],
                  "diskmodel experiment --postmark-scratch")
    try:
        require_free_space(scratch, L.backing_bytes_required(stack), what="--postmark-scratch")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _run_experiment(args, run_experiment):
    import os

    from diskmodel.calibrate.cli import UsageError, flag_error
    from diskmodel.calibrate.harness.measure import BudgetTooSmall

    try:
        return run_experiment(args.out, preset=args.preset, device=args.device, budget_s=args.budget_s,
                              seed=args.seed, postmark_scratch=args.postmark_scratch,
                              destroy_data_on=args.destroy_data_on,
                              progress=False if args.no_progress else None, emulate=args.emulate_spec,
                              postmark_files=args.postmark_files, postmark_transactions=args.postmark_transactions)
    except BudgetTooSmall as exc:
        shown = "--budget-s" if args.budget_s is not None else "the default --budget-s"
        minimum, checked = exc.minimum_s, False
        if args.device is None:  # the simulated preset, deterministic for its seed: the advice is checked
            from diskmodel.calibrate.harness.budget_advice import verified_minimum_s
            from diskmodel.calibrate.harness.simulated import simulated_disk

            minimum, checked = verified_minimum_s(exc, lambda: simulated_disk(args.preset, seed=args.seed),
                                                  {"seed": args.seed})
        how = f"{minimum:g} s of device time (checked)" if checked else f"at least ~{minimum:g} s of device time"
        raise UsageError(f"{shown} {exc.budget_s:g} is too small: one calibration needs {how}; "
                         f"give --budget-s {minimum:g} or more") from exc
    except PermissionError as exc:
        if args.device is not None and exc.filename is not None and os.fspath(exc.filename) == args.device:
            hint = ("even root may not open it here: a container or device policy forbids it"
                    if os.geteuid() == 0 else "run as root, or choose a device you may read")
            raise UsageError(f"--device: cannot open {args.device}: {exc.strerror} ({hint})") from exc
        raise
    except ValueError as exc:
        raise UsageError(flag_error(exc, {"budget_s": "--budget-s"})) from exc


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
        except FileNotFoundError:
            continue  # the report's own folder is made (and removed) by its staging, not here
        except OSError:
            break
