"""``diskmodel experiment``: the main job (see :mod:`diskmodel.calibrate.experiment`)."""
from __future__ import annotations


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "experiment",
        help="calibrate, fit, predict the paper's layouts, compare with Tables 4-6, write a report",
        description=("Calibrate the built-in simulated WD800BD (or --device PATH, read-only), fit the model, "
                     "predict PostMark throughput for native, LVM-1 and LVM-2 under the paper's three "
                     "workloads, compare with the paper's Tables 4-6 and write a report folder."),
    )
    parser.add_argument("--out", default="reports/experiment", help="report folder (default: %(default)s)")
    parser.add_argument("--preset", default="wd800bd", help="simulated disk to calibrate (default: %(default)s)")
    parser.add_argument("--device", help="calibrate this block device or written file instead (read-only)")
    parser.add_argument("--budget-s", type=float, default=None, help="device time for the calibration [s]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--postmark-scratch", metavar="PATH",
                        help="also run real PostMark (native layout) on a scratch file created at PATH "
                             "(or a block device, with --destroy-data-on PATH); needs root")
    parser.add_argument("--destroy-data-on", metavar="PATH",
                        help="confirm that the block device given as --postmark-scratch may be overwritten")
    parser.add_argument("--no-progress", action="store_true")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from diskmodel.calibrate.experiment import format_summary, run_experiment

    if args.budget_s is not None and not args.budget_s > 0:
        raise ValueError(f"--budget-s must be > 0 (got {args.budget_s})")
    report = run_experiment(args.out, preset=args.preset, device=args.device, budget_s=args.budget_s,
                            seed=args.seed, postmark_scratch=args.postmark_scratch,
                            destroy_data_on=args.destroy_data_on,
                            progress=False if args.no_progress else None)
    print(format_summary(report))
    return 0
