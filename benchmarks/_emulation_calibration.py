"""Calibration through the kernel on emulated drives: each quantity's truth, estimate, error and pass.

:func:`run` serves each drive with the emulator (``diskmodel.calibrate.emulate.devices.emulated_drives``:
nbdkit, nbdfuse and a loop device, every request timed by the per-request simulation),
runs ``diskmodel calibrate DEV --budget-s B --json OUT`` on the device (the real CLI, through
the kernel, O_DIRECT), and compares the calibration with the truth read off the drive's
parameters (:func:`diskmodel.calibrate.harness.drive_truth.drive_truth`). With
``backend="simulated"`` the same calibration runs on the same timing without the kernel
(:class:`~diskmodel.calibrate.harness.drive_truth.ParametersDisk`), root-free and fast.

One row per drive: ``drive``, ``backend``, ``budget_s``, ``device_time_s``, ``wall_s``,
``quantities`` (one dict per quantity: ``quantity``, ``truth``, ``estimate``, ``error``,
``target``, ``passed``), ``passed`` (every quantity the drive has passed), and on the
emulated path the emulator's lateness (``lateness_p50_s``, ``lateness_p99_s``,
``lateness_max_s``), which is the timing noise every figure of the calibration carries.

benchmarks/emulation_check.py calls :func:`run`; ``python benchmarks/_emulation_calibration.py
[--simulated] [--budget-s S] [DRIVE ...]`` prints the table.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The issue's drives: four bundled or preset drives and one with read-ahead and several
#: buffer segments (the IBM Ultrastar 18ES: 7 segments of 511 blocks, read-ahead after every read).
DRIVES = ("atlas10k", "cheetah4LP", "hp_c2247a", "wd800bd", "ibm18es")


def _params(drive: str):
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of

    return drive_parameters_of(resolve_drive(drive).timing)


def _row(drive, backend, budget_s, result, wall_s, truth, extra=None) -> dict:
    from diskmodel.calibrate.harness.drive_truth import emulation_errors

    quantities = emulation_errors(truth, result)
    row = {"drive": drive, "backend": backend, "budget_s": budget_s, "device_time_s": result.device_time_s,
           "wall_s": wall_s, "reads": result.reads, "quantities": quantities,
           "passed": all(q["passed"] is not False for q in quantities)}
    row.update(extra or {})
    return row


def _simulated(drive: str, budget_s: float, seed: int) -> dict:
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth
    from diskmodel.calibrate.harness.measure import calibrate

    params = _params(drive)
    start = time.perf_counter()
    result = calibrate(ParametersDisk(params, seed=seed), budget_s=budget_s, seed=seed, progress=False)
    return _row(drive, "simulated", budget_s, result, time.perf_counter() - start, drive_truth(params))


def _emulated(drive: str, budget_s: float, seed: int) -> dict:
    from diskmodel.calibrate.emulate.devices import emulated_drives
    from diskmodel.calibrate.harness.drive_truth import drive_truth
    from diskmodel.calibrate.harness.results import calibration_from_json

    truth = drive_truth(_params(drive))
    with tempfile.TemporaryDirectory(prefix="diskmodel-emucal-") as tmp:
        out = Path(tmp) / "calibration.json"
        with emulated_drives([drive]) as devices:
            device = devices[0]
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", "calibrate", device.path,
                                   "--budget-s", f"{budget_s:g}", "--seed", str(seed), "--json", str(out),
                                   "--no-progress"], capture_output=True, text=True)
            wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"calibrate on emulated {drive} failed: {proc.stderr.strip()[-400:]}")
        result = calibration_from_json(out)
        summary = getattr(device, "summary", None) or {}
    lateness = {f"lateness_{k}_s": summary.get(f"lateness_{k}_s") for k in ("p50", "p99", "max")}
    return _row(drive, "emulated", budget_s, result, wall, truth, lateness)


def run(drives=DRIVES, budget_s: float = 120.0, *, backend: str = "emulated", seed: int = 0) -> list[dict]:
    """Calibrate each of *drives* within *budget_s* of device time; one row per drive (see the module doc).

    *backend*: ``"emulated"`` (through the kernel; root, nbdkit and nbdfuse) or ``"simulated"``."""
    if backend not in ("emulated", "simulated"):
        raise ValueError(f"backend must be 'emulated' or 'simulated' (got {backend!r})")
    one = _emulated if backend == "emulated" else _simulated
    return [one(drive, float(budget_s), seed) for drive in drives]


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"


def format_table(rows: list[dict]) -> str:
    """The rows as a text table: one line per drive and quantity."""
    lines = [f"{'drive':11s} {'quantity':28s} {'truth':>11s} {'estimate':>11s} {'error':>9s} {'target':>7s} pass"]
    for row in rows:
        for q in row["quantities"]:
            lines.append(f"{row['drive']:11s} {q['quantity']:28s} {_fmt(q['truth']):>11s} {_fmt(q['estimate']):>11s} "
                         f"{_fmt(q['error']):>9s} {_fmt(q['target']):>7s} {q['passed']}")
        late = row.get("lateness_p99_s")
        lines.append(f"{row['drive']:11s} {'(device s, wall s, reads)':28s} {row['device_time_s']:11.1f} "
                     f"{row['wall_s']:11.1f} {row['reads']:9d}" + ("" if late is None else
                                                                   f"  lateness p50/p99/max "
                                                                   f"{row['lateness_p50_s'] * 1e6:.0f}/"
                                                                   f"{late * 1e6:.0f}/"
                                                                   f"{row['lateness_max_s'] * 1e6:.0f} us"))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("drives", nargs="*", default=list(DRIVES))
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--simulated", action="store_true", help="the same timing without the kernel")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args(argv)
    rows = run(args.drives, args.budget_s, backend="simulated" if args.simulated else "emulated")
    print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=float))
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
