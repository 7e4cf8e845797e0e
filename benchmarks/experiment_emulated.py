"""The main job on the emulated WD800BD: each real PostMark run against the model's prediction of it.

    python benchmarks/experiment_emulated.py [--drive wd800bd] [--budget-s 120] [--files 200]
        [--transactions 500] [--seed 0] [--out DIR] [--results-dir DIR]

Needs root, nbdkit with its Python plugin, nbdfuse and qemu with the VM's kernel (``diskmodel
experiment --emulate``'s needs). It runs :func:`diskmodel.calibrate.experiment.run_experiment` with
``emulate=DRIVE`` in this process, as ``diskmodel experiment --emulate DRIVE`` does: the drive
calibrated through the kernel, the paper's fit, and PostMark tests 1-3 (scaled to ``--files`` files
and ``--transactions`` transactions) on native, LVM-1 and LVM-2 in one boot of the throwaway VM on the
same emulated drive, each run just after the same PostMark on the guest's tmpfs
(:mod:`diskmodel.calibrate.experiment_emulated`). Each run is predicted on the timed I/O path on that
tmpfs run's clock, from the calibration and from the drive the emulator serves
(:func:`~diskmodel.calibrate.experiment_emulated.model_check`).

Figures: the median and largest |error| of the runs' predicted wall times (from the calibration, the
headline, and from the served drive), the orderings of the layouts held, the main job's wall time
against its target, and the host's load average. The runs, the orderings and the ratios to
native beside the paper's Tables 4-6 (Djordjevic & Timcenko 2015) are in the details. Writes
``benchmarks/results/experiment_emulated.json``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

#: The main job's wall-time target [s] (the mission's: the whole loop in ten minutes).
WALL_TARGET_S = 600.0


def records(frame) -> list[dict]:
    return [] if frame is None else frame.to_dict("records")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drive", default="wd800bd", help="the emulated drive (default: %(default)s)")
    parser.add_argument("--budget-s", type=float, default=120.0, help="calibration device time [s] (default: %(default)s)")
    parser.add_argument("--files", type=int, default=200, help="PostMark's files per test at most (default: %(default)s)")
    parser.add_argument("--transactions", type=int, default=500,
                        help="PostMark's transactions per test at most (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the calibration's seed (default: %(default)s)")
    parser.add_argument("--out", default=None, help="the report folder (default: a temporary folder, removed)")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)

    from diskmodel.calibrate.experiment import run_experiment
    from diskmodel.calibrate.experiment_emulated import PREDICTIONS, check_figures

    load_before = os.getloadavg()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="experiment-emulated-") as scratch:
        out = args.out or str(Path(scratch) / "report")
        report = run_experiment(out, emulate=args.drive, budget_s=args.budget_s, seed=args.seed,
                                postmark_files=args.files, postmark_transactions=args.transactions, progress=False)
    wall_s = time.monotonic() - started
    load_after = os.getloadavg()
    check, orders = report.emulated_check, report.emulated_orderings
    figures = {}
    for column, key in zip(PREDICTIONS, ("calibration", "served")):
        f = check_figures(check, column)
        figures[f"median_abs_error_pct_{key}"] = figure(
            f["median_abs_error_pct"], "%", f"median |error| of the runs' predicted wall times, from the {column}",
            decimals=1, headline=key == "calibration", target=15.0)
        figures[f"max_abs_error_pct_{key}"] = figure(
            f["max_abs_error_pct"], "%", f"largest |error| of the runs' predicted wall times, from the {column}",
            decimals=1, target=15.0)
        figures[f"orderings_held_{key}"] = figure(
            int(orders[f"held ({column})"].sum()), "", f"pairs of layouts the prediction from the {column} orders "
            f"as measured (of {int(orders['ordered pairs'].sum())} the measurement orders, more than the clock's "
            f"resolution apart)", decimals=0)
    figures["wall_s"] = figure(wall_s, "s", "the main job's wall time (calibrate, fit, predict, PostMark in the VM)",
                               decimals=0, headline=True, target=WALL_TARGET_S)
    for name, value in report.timings_s.items():
        figures[name] = figure(value, "s", f"the main job's step {name[:-2]}", decimals=0)
    figures["load_average_start"] = figure(load_before[0], "", "the host's 1-minute load average at the start",
                                           decimals=1)
    figures["load_average_end"] = figure(load_after[0], "", "the host's 1-minute load average at the end", decimals=1)

    print(check.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(orders.to_string(index=False))
    print(report.emulated_ratios.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"wall_s: {wall_s:.0f} (load {load_before[0]:.1f} -> {load_after[0]:.1f})")
    for key in ("calibration", "served"):
        print(f"median_abs_error_pct_{key}: {figures[f'median_abs_error_pct_{key}']['value']:.1f} "
              f"(largest {figures[f'max_abs_error_pct_{key}']['value']:.1f})")
    write_result("experiment_emulated", figures, options=options_of(parser, args, housekeeping=("out",)),
                 details={"runs": records(check), "orderings": records(orders),
                          "ratios": records(report.emulated_ratios), "disk": report.disk.name,
                          "load_average_start": list(load_before), "load_average_end": list(load_after)},
                 notes=list(report.notes), results_dir=args.results_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
