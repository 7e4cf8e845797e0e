"""PostMark on native ext3 over a loop device on this machine, against the model.

    python benchmarks/host_postmark_check.py [--files N] [--transactions N]
        [--limits 64M,128M,256M,512M,none] [--repeats 2] [--budget-s 10]

Issue 5, "Checking the model", item 2.  Needs root (loop devices, mounts,
cgroups) and postmark.  The method
(calibrate the storage, model inputs, run PostMark, predict) is
:func:`diskmodel.calibrate.bench.hostcheck.run_check`'s; its module docstring
holds it.

Per-cell error = predicted / measured - 1 [%]; cells are (memory limit,
read/write).  The last line is ``median_cell_error_pct: X``, the median of
the absolute ``+cpu`` errors.  Writes
``benchmarks/results/host_postmark_check.json`` (see ``_artifact.py``);
docs/benchmarks.md discusses the figures of earlier runs and why the
agreement must not be over-read.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

from diskmodel.calibrate.bench.hostcheck import CheckResult, run_check  # noqa: E402
from diskmodel.model.units import GIB, KIB, MIB  # noqa: E402
from diskmodel.model.predictions.workload import postmark_preset  # noqa: E402


def _size(text: str) -> int | None:
    if text.lower() == "none":
        return None
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M, 1G, none)")
    return int(m.group(1)) * {"": 1, "K": KIB, "M": MIB, "G": GIB}[m.group(2).upper()]


def result_figures(result: CheckResult) -> dict:
    """The artifact's figures of a :class:`CheckResult`."""
    variants = list(result.cells[0].predicted)
    headline = "+cpu" if "+cpu" in variants else "disk only"
    n = 2 * len(result.cells)
    figures = {"median_cell_error_pct": figure(
        result.median_error_pct(headline), "%",
        f"median |error| of the {n} cells (memory limit x read/write), model variant {headline!r}",
        decimals=1, headline=True)}
    if headline != "disk only":
        figures["disk_only_median_cell_error_pct"] = figure(
            result.median_error_pct("disk only"), "%", "the same, model variant 'disk only'", decimals=1)
    if "+cpu pipeline" in variants:
        figures["pipeline_median_cell_error_pct"] = figure(
            result.median_error_pct("+cpu pipeline"), "%", "the same, pipeline what-if (overlapped_writeback)",
            decimals=1)
    lm = result.calibration.latency_model
    figures["calibrated_latency_us"] = figure(lm.mean_s * 1e6, "µs", "calibrated flat latency of a 4 KiB read",
                                              decimals=1)
    figures["wall_s"] = figure(result.wall_s, "s", "wall time of the check", decimals=0)
    return figures


def result_details(result: CheckResult) -> dict:
    """Per-cell rows and the model's inputs of a :class:`CheckResult`, for the artifact."""
    rows = []
    for variant in result.cells[0].predicted:
        for r in result.rows(variant):
            rows.append({"variant": variant, "limit_bytes": r["limit_bytes"], "kind": r["kind"],
                         "measured_bytes_per_s": r["measured"], "ci_bytes_per_s": list(r["ci"]),
                         "predicted_bytes_per_s": r["predicted"], "error_pct": r["error_pct"]})
    cells = [{"limit_bytes": c.limit_bytes, "page_cache_bytes": c.cache_bytes, "cgroup_other_bytes": c.other_bytes,
              "device_requests_per_run": dict(zip(("reads", "bytes_read", "writes", "bytes_written"),
                                                  c.device_requests))}
             for c in result.cells]
    lm = result.calibration.latency_model
    memory = None if result.memory_path is None else dataclasses.asdict(result.memory_path)
    return {"rows": rows, "cells": cells, "calibration": {
                "latency_mean_s": lm.mean_s, "latency_p50_s": lm.p50_s, "latency_p99_s": lm.p99_s,
                "rate_bytes_per_s": 1.0 / lm.per_byte_s, "wall_time_s": result.calibration.wall_time_s},
            "memory_path": memory, "printed": result.lines}


def add_workload_options(ap: argparse.ArgumentParser, *, files: int, transactions: int) -> None:
    """The PostMark workload's options (Test 1 of the paper, resized), and --repeats."""
    ap.add_argument("--files", type=int, default=files)
    ap.add_argument("--transactions", type=int, default=transactions)
    ap.add_argument("--min-size", type=int, default=1 * KIB)
    ap.add_argument("--max-size", type=int, default=100 * KIB)
    ap.add_argument("--repeats", type=int, default=2)


def workload_from(args: argparse.Namespace):
    """The :class:`~diskmodel.model.predictions.workload.PostMarkConfig` of the options :func:`add_workload_options` added."""
    return postmark_preset("test1").evolve(number_of_files=args.files, transactions=args.transactions,
                                           min_file_size_bytes=args.min_size, max_file_size_bytes=args.max_size)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_workload_options(ap, files=8000, transactions=80000)
    ap.add_argument("--limits", default="64M,128M,256M,512M,none",
                    help="comma-separated memory limits (K/M/G suffixes; 'none')")
    ap.add_argument("--fs-size", type=_size, default=2 * GIB)
    ap.add_argument("--scratch-dir", default="/var/tmp")
    ap.add_argument("--budget-s", type=float, default=10.0, help="device time of the calibration [s]")
    ap.add_argument("--no-cpu", action="store_true", help="skip the tmpfs run (disk-only predictions)")
    add_results_dir_option(ap)
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root (loop devices, mounts, cgroups)", file=sys.stderr)
        return 2
    config = workload_from(args)
    limits = [_size(x) for x in args.limits.split(",")]
    try:
        result = run_check(config, limits=limits, repeats=args.repeats, fs_size_bytes=args.fs_size,
                           scratch_dir=args.scratch_dir, budget_s=args.budget_s, with_cpu=not args.no_cpu)
    except KeyboardInterrupt as exc:
        print(f"{exc or 'interrupted'}: scratch files, loop devices, mounts and cgroups torn down", file=sys.stderr)
        return 130
    write_result("host_postmark_check", result_figures(result), options=options_of(ap, args),
                 results_dir=args.results_dir, details=result_details(result))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
