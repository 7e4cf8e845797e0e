"""The head switch through the kernel's path as the emulator now sees it: each leg known on average, with
jitter, and the caller's own gap between a completion and its next read.

``python benchmarks/_head_switch_gap.py DRIVE [--gap-s G] [--jitter-s J] [--bias-s B] [--seeds N]`` calibrates
DRIVE (the issue's budget of device time) on ``KnownPathDisk`` (``tests/test_head_switch_kernel_path.py``):
each read reaches the server a way in of LEG_S (+-J uniform) after its submission, G after the caller saw the
one before complete; the emulator takes LEG_S (less B: B > 0 puts arrivals early) off its arrival and answers
LEG_S before the drive's completion (at once where that has passed, plus the server's lateness), and the
caller sees it a way back of LEG_S (+-J) later. Prints the head switch's error per seed.
With J = B = 0 the drive sees each read the caller's gap after the one before completed, as through the
emulator's path when its legs are right.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: The path's legs the emulator knows [s] (their level does not matter when the emulator knows them).
LEG_S = 60e-6


def _disk(params, seed: int, gap_s: float, jitter_s: float, bias_s: float):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_head_switch_kernel_path import KnownPathDisk

    return KnownPathDisk(params, seed=seed, host_gap_s=gap_s, leg_s=LEG_S, jitter_s=jitter_s, bias_s=bias_s)


def _pct(error) -> str:
    return "-" if error is None else f"{100 * error:+.1f} %"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drive")
    parser.add_argument("--gap-s", type=float, default=3e-6, help="the caller's gap (default: 3e-6)")
    parser.add_argument("--jitter-s", type=float, default=0.0, help="each leg's uniform jitter, +- (default: 0)")
    parser.add_argument("--bias-s", type=float, default=0.0, help="how early arrivals are put (default: 0)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds 0..N-1 (default: 2)")
    args = parser.parse_args(argv)
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of
    from diskmodel.calibrate.harness.drive_truth import drive_truth, emulation_errors
    from diskmodel.calibrate.harness.measure import calibrate

    params = drive_parameters_of(resolve_drive(args.drive).timing)
    truth = drive_truth(params)
    for seed in range(args.seeds):
        disk = _disk(params, seed, args.gap_s, args.jitter_s, args.bias_s)
        result = calibrate(disk, budget_s=120.0, seed=seed, progress=False)
        row = {r["quantity"]: r for r in emulation_errors(truth, result)}["head_switch_s"]
        print(f"{args.drive} gap {args.gap_s * 1e6:g} us jitter +-{args.jitter_s * 1e6:g} us bias "
              f"{args.bias_s * 1e6:g} us seed {seed}: head switch error "
              f"{_pct(row['error'])}",
              flush=True)
    return 0


if __name__ == "__main__":
    from _artifact import run_main

    sys.exit(run_main(main))
