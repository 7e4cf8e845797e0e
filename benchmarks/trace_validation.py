"""Per-request simulation against DiskSim's measured traces: accuracy and speed.

Prints, for each of the seven traced drives in ../shared/data/disksim, our
demerit (RMS horizontal distance between measured and predicted service-time
CDFs, exact quantiles at p = 0.0001 ... 1), DiskSim's published demerit and
the ratio; then the simulation speed on a 10,000-request trace after warm-up;
last line: ``median_demerit_ratio_to_disksim: X``.

Usage: python benchmarks/trace_validation.py [DISKSIM_DIR]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from diskmodel.data.disksim import DISKSIM_PUBLISHED_DEMERIT_MS, load_disksim_drive, validate_drive
from diskmodel.model.simulate import simulate_requests

DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "disksim"


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    if not folder.is_dir():
        print(f"DiskSim data folder {folder} is absent", file=sys.stderr)
        return 2
    print(f"{'disk':<12}{'requests':>9}{'ours ms':>10}{'% mean':>8}{'DiskSim ms':>12}{'ratio':>7}"
          f"{'mean meas':>11}{'mean pred':>11}")
    ratios = []
    drives = {}
    for name in DISKSIM_PUBLISHED_DEMERIT_MS:
        drive = load_disksim_drive(folder / name)
        drives[name] = drive
        result = validate_drive(drive)
        ratio = result.ratio_to_reference
        ratios.append(ratio)
        print(f"{name:<12}{result.requests:>9}{result.demerit_ms:>10.4f}{result.demerit_pct_of_mean:>8.2f}"
              f"{result.reference_demerit_s * 1e3:>12.3f}{ratio:>7.3f}"
              f"{result.mean_measured_s * 1e3:>11.3f}{result.mean_predicted_s * 1e3:>11.3f}")
    within = sum(r <= 1.5 for r in ratios)
    at_or_below = sum(r <= 1.0 for r in ratios)
    print(f"within 1.5x DiskSim: {within}/{len(ratios)}; at or below DiskSim: {at_or_below}/{len(ratios)}")

    # speed: the 10,000-request atlas10k trace, after a warm-up run (JIT compilation)
    drive = drives["atlas10k"]
    trace = drive.read_trace()
    params = drive.simulation_parameters()
    simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
        runs.append(time.perf_counter() - start)
    best = min(runs)
    print(f"simulation of {len(trace)} requests (atlas10k): best {best * 1e3:.1f} ms, "
          f"median {statistics.median(runs) * 1e3:.1f} ms over {len(runs)} runs")
    print(f"requests_per_s: {len(trace) / best:.0f}")
    print(f"median_demerit_ratio_to_disksim: {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
