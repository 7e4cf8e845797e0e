"""How accurately, and how fast, does the harness calibrate a simulated disk?

For each simulated disk (the presets wd800bd, hp97560, hp_c2247a, and DiskSim
drives from ../shared/data/disksim: G4_4TB, a 4 TB 7200 rpm drive, and
atlas10k), runs :func:`diskmodel.calibrate.harness.measure.calibrate` within a budget
of device time (``--budget-s``: virtual time on the simulated disk) for
``--seeds`` seeds, and prints against the simulated truth
(:func:`diskmodel.calibrate.harness.simulated.calibration_errors`):

* the rotation period error,
* the error of the mean seek time over uniformly random pairs of byte
  offsets, from the two-piece fit and from the measured table,
* the largest and the byte-weighted mean error of the zone rates (the rate
  found at each true zone's middle),
* the device time used and the wall time taken.

The last line gives the worst of each over all disks and seeds next to the
issue's targets (``TARGETS`` below).  Writes
``benchmarks/results/calibration_accuracy.json`` (see ``_artifact.py``).

    .venv/bin/python benchmarks/calibration_accuracy.py [--budget-s S] [--seeds N] [--disks NAME ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import add_results_dir_option, figure, options_of, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DISKSIM = ROOT.parent / "shared" / "data" / "disksim"
#: The issue's targets: relative errors [%], and device time [s] for the 4 TB G4_4TB.
TARGETS = {"period": 0.5, "seek": 3.0, "zone": 3.0, "device": 120.0}


def _abs_or_inf(x) -> float:
    return float("inf") if x is None else abs(x)


def main(argv=None) -> int:
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.simulated import calibration_errors, simulated_disk

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-s", type=float, default=120.0, help="device time per calibration [s]")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--disks", nargs="*", default=["wd800bd", "hp97560", "hp_c2247a", str(DISKSIM / "G4_4TB"),
                                                       str(DISKSIM / "atlas10k")])
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    pct = lambda x: "   n/a" if x is None else f"{100 * x:+6.3f}"
    print(f"{'disk':10s} {'seed':>4s} {'size GB':>8s} {'period %':>9s} {'seek2p %':>9s} {'seekTab %':>9s} "
          f"{'zone max %':>10s} {'zone mean %':>11s} {'device s':>9s} {'wall s':>7s}")
    worst = {"period": 0.0, "seek": 0.0, "zone": 0.0, "device": 0.0, "wall": 0.0}
    rows = []
    started = time.perf_counter()
    for name in args.disks:
        for seed in range(args.seeds):
            sim = simulated_disk(name, seed=seed)
            start = time.perf_counter()
            result = calibrate(sim, budget_s=args.budget_s, seed=seed, progress=False)
            wall = time.perf_counter() - start
            e = calibration_errors(sim, result)
            print(f"{Path(name).name:10s} {seed:4d} {sim.size_bytes / 1e9:8.1f} {pct(e['rotation_period']):>9s} "
                  f"{pct(e['mean_seek_two_piece']):>9s} {pct(e['mean_seek_table']):>9s} "
                  f"{100 * e['zone_rate_max']:10.3f} {100 * e['zone_rate_mean']:11.4f} "
                  f"{result.device_time_s:9.2f} {wall:7.2f}")
            hundred = lambda x: None if x is None else 100 * x
            rows.append({"disk": Path(name).name, "seed": seed, "size_gb": sim.size_bytes / 1e9,
                         "rotation_period_error_pct": hundred(e["rotation_period"]),
                         "mean_seek_two_piece_error_pct": hundred(e["mean_seek_two_piece"]),
                         "mean_seek_table_error_pct": hundred(e["mean_seek_table"]),
                         "zone_rate_max_error_pct": hundred(e["zone_rate_max"]),
                         "zone_rate_mean_error_pct": hundred(e["zone_rate_mean"]),
                         "device_time_s": result.device_time_s, "wall_s": wall})
            worst["period"] = max(worst["period"], _abs_or_inf(e["rotation_period"]))
            worst["seek"] = max(worst["seek"], _abs_or_inf(e["mean_seek_two_piece"]),
                                _abs_or_inf(e["mean_seek_table"]))
            worst["zone"] = max(worst["zone"], e["zone_rate_max"])
            worst["device"] = max(worst["device"], result.device_time_s)
            worst["wall"] = max(worst["wall"], wall)
    total_wall = time.perf_counter() - started
    runs = len(rows)
    figures = {
        "worst_rotation_period_error_pct": figure(100 * worst["period"], "%",
                                                  f"rotation period, worst |error| over {runs} calibrations",
                                                  decimals=3, headline=True, target=TARGETS["period"]),
        "worst_mean_seek_error_pct": figure(100 * worst["seek"], "%",
                                            "mean seek time (two-piece fit and table), worst |error|",
                                            decimals=2, headline=True, target=TARGETS["seek"]),
        "worst_zone_rate_error_pct": figure(100 * worst["zone"], "%", "zone rates, worst |error|",
                                            decimals=3, headline=True, target=TARGETS["zone"]),
        "worst_device_time_s": figure(worst["device"], "s", "device time of a calibration, worst",
                                      decimals=1, target=TARGETS["device"]),
        "worst_wall_s": figure(worst["wall"], "s", "wall time of a calibration, worst", decimals=2, headline=True),
        "total_wall_s": figure(total_wall, "s", f"wall time of the {runs} calibrations", decimals=0),
    }
    write_result("calibration_accuracy", figures, options=options_of(parser, args), results_dir=args.results_dir,
                 details={"runs": rows, "targets": TARGETS})
    print(f"worst: period {100 * worst['period']:.3f} % (target {TARGETS['period']:g}), mean seek "
          f"{100 * worst['seek']:.2f} % (target {TARGETS['seek']:g}), zone rate {100 * worst['zone']:.3f} % "
          f"(target {TARGETS['zone']:g}), device {worst['device']:.1f} s "
          f"(budget {args.budget_s:g}), wall {worst['wall']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
