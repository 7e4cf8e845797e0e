"""The read-ahead's segment, sized through the kernel's path with jittered legs and occasional outliers.

``python benchmarks/_segment_outliers.py DRIVE [DRIVE ...] [--seeds N] [--share P] [--outlier-ms LO HI]
[--jitter-us J] [--idle-share Q] [--module PATH] [--calibrate]`` runs the buffer stage (``measure_buffer`` then ``size_buffer`` with the drive's
true zone rates) on ``OutlierPathDisk`` (``tests/_outlier_path.py``: ``KernelPathDisk`` with each leg jittered
+-J and a share P of reads, and a share Q of those right after an idle, held LO-HI ms on
one leg), seeds 0..N-1, and prints per seed the segment's and the
segments' estimates against the truth, and the sizing's reads and device time; with --calibrate, the whole
calibration (the issue's budget of device time) instead, and its segment's error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def _stage_module(path):
    """The buffer stage's module: the package's, or the copy at *path* (the code before a change)."""
    if path is None:
        from diskmodel.calibrate.harness import buffer_probe
        return buffer_probe
    import importlib.util

    spec = importlib.util.spec_from_file_location("buffer_probe_copy", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _buffer_stage(disk, truth, seed: int, module):
    from diskmodel.calibrate.harness.meter import Meter

    measure_buffer, size_buffer = module.measure_buffer, module.size_buffer

    bounds, rates = truth["zone_bounds_bytes"], truth["zone_rates_bytes_per_s"]

    def rate_at(o):
        return rates[np.clip(np.searchsorted(bounds[:, 0], o, side="right") - 1, 0, len(rates) - 1)]

    meter = Meter(disk, budget_s=120.0)
    rng = np.random.default_rng(seed)
    found = measure_buffer(meter, rng)
    if not found.detected:
        return None, None, 0, 0.0, found.detail
    used, reads = meter.used_s, meter.reads
    sized = size_buffer(meter, rng, found, rate_at)
    return sized.segment_bytes, sized.segments, meter.reads - reads, meter.used_s - used, sized.detail


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drives", nargs="+")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default: 10)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--share", type=float, default=1 / 200, help="the share of reads held (default: 1/200)")
    parser.add_argument("--outlier-ms", type=float, nargs=2, default=(2.0, 5.0), help="how long [ms] (default: 2 5)")
    parser.add_argument("--jitter-us", type=float, default=25.0, help="each leg's jitter, +- [us] (default: 25)")
    parser.add_argument("--idle-share", type=float, default=0.0,
                        help="the share of reads right after an idle held as well (default: 0)")
    parser.add_argument("--module", type=Path, default=None,
                        help="the buffer stage from this copy of buffer_probe.py (default: the package's)")
    parser.add_argument("--calibrate", action="store_true", help="the whole calibration (budget 120 s)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _outlier_path import OutlierPathDisk, drive_params

    from diskmodel.calibrate.harness.drive_truth import drive_truth, emulation_errors
    from diskmodel.calibrate.harness.measure import calibrate

    module = _stage_module(args.module)
    failures = 0
    for drive in args.drives:
        params = drive_params(drive)
        truth = drive_truth(params)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            disk = OutlierPathDisk(params, seed=seed, jitter_s=args.jitter_us * 1e-6, outlier_share=args.share,
                                   outlier_s=(args.outlier_ms[0] * 1e-3, args.outlier_ms[1] * 1e-3),
                                   idle_outlier_share=args.idle_share)
            if args.calibrate:
                result = calibrate(disk, budget_s=120.0, seed=seed, progress=False)
                row = {r["quantity"]: r for r in emulation_errors(truth, result)}["segment_bytes"]
                error = row["error"]
                line = f"segment {row['estimate']} (truth {row['truth']}) device {disk.device_time_s:.1f} s"
            else:
                seg, segs, reads, used, detail = _buffer_stage(disk, truth, seed, module)
                error = None if seg is None else seg / truth["segment_bytes"] - 1
                line = (f"segment {seg} (truth {truth['segment_bytes']}) segments {segs} (truth {truth['segments']}) "
                        f"sizing {reads} reads {used:.2f} s")
            bad = error is None or abs(error) > 0.10
            failures += bad
            err = "-" if error is None else f"{100 * error:+.1f} %"
            print(f"{drive} seed {seed}: {line} error {err} outliers {disk.outliers}{'  FAIL' if bad else ''}",
                  flush=True)
    print(f"failures: {failures}")
    return 0


if __name__ == "__main__":
    from _artifact import run_main

    sys.exit(run_main(main))
