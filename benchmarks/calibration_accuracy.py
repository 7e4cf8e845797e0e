"""How accurately, and how fast, does the harness calibrate a simulated disk?

For each simulated disk (the presets wd800bd, hp97560, hp_c2247a, and DiskSim
drives from ../shared/data/disksim: G4_4TB, a 4 TB 7200 rpm drive, and
atlas10k), runs :func:`diskmodel.calibrate.measure.calibrate` within a budget
of device time (virtual time on the simulated disk, default 120 s) for a few
seeds, and prints against the simulated truth
(:func:`diskmodel.calibrate.simulated.calibration_errors`):

* the rotation period error,
* the error of the mean seek time over uniformly random pairs of byte
  offsets, from the two-piece fit and from the measured table,
* the largest and the byte-weighted mean error of the zone rates (the rate
  found at each true zone's middle),
* the device time used and the wall time taken.

Targets: period within 0.5 %, mean seek within 3 %, zone rates within 3 %,
within 120 s of device time for the 4 TB G4_4TB.

    .venv/bin/python benchmarks/calibration_accuracy.py [--budget-s 120] [--seeds 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DISKSIM = ROOT.parent / "shared" / "data" / "disksim"


def main(argv=None) -> int:
    from diskmodel.calibrate.measure import calibrate
    from diskmodel.calibrate.simulated import calibration_errors, simulated_disk

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--disks", nargs="*", default=["wd800bd", "hp97560", "hp_c2247a", str(DISKSIM / "G4_4TB"),
                                                       str(DISKSIM / "atlas10k")])
    args = parser.parse_args(argv)
    pct = lambda x: "   n/a" if x is None else f"{100 * x:+6.3f}"
    print(f"{'disk':10s} {'seed':>4s} {'size GB':>8s} {'period %':>9s} {'seek2p %':>9s} {'seekTab %':>9s} "
          f"{'zone max %':>10s} {'zone mean %':>11s} {'device s':>9s} {'wall s':>7s}")
    worst = {"period": 0.0, "seek": 0.0, "zone": 0.0, "device": 0.0, "wall": 0.0}
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
            worst["period"] = max(worst["period"], abs(e["rotation_period"] or float("inf")))
            worst["seek"] = max(worst["seek"], abs(e["mean_seek_two_piece"]), abs(e["mean_seek_table"]))
            worst["zone"] = max(worst["zone"], e["zone_rate_max"])
            worst["device"] = max(worst["device"], result.device_time_s)
            worst["wall"] = max(worst["wall"], wall)
    print(f"worst: period {100 * worst['period']:.3f} % (target 0.5), mean seek {100 * worst['seek']:.2f} % "
          f"(target 3), zone rate {100 * worst['zone']:.3f} % (target 3), device {worst['device']:.1f} s "
          f"(budget {args.budget_s:g}), wall {worst['wall']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
