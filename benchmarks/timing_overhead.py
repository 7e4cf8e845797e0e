"""How much does the harness's timing add to a read? The device backend against fio.

Measures 4 KiB random O_DIRECT reads at queue depth 1 on the same written file
with the harness (diskmodel.calibrate.harness.device, both ``read()`` and
``read_many()``) and with fio (psync engine, iodepth 1, completion latency of
every read from its latency log, in ns),
over the same offset distribution (uniform over 4 KiB-aligned offsets of the
whole file) and the same duration. The runs are interleaved in rounds, so a
drift of the shared storage hits both alike. Prints a table and, as its last
line, ``harness_to_fio_latency_ratio: X``: the harness's median latency
(``read()``, the backend protocol's method) over fio's median clat; the
target is ``TARGET_RATIO`` below.  Writes
``benchmarks/results/timing_overhead.json`` (see ``_artifact.py``).

The file (``--size-mib`` of random bytes from a fixed seed) is made under
.bench-scratch in the repository (git-ignored) if absent, and kept for the
next run unless --remove is given. O_DIRECT bypasses the page cache, so no
cache dropping is needed.  Needs fio.

    .venv/bin/python benchmarks/timing_overhead.py [--duration-s S] [--rounds N] [--size-mib N] [--remove]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from diskmodel.model.units import MIB as MiB

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

from diskmodel.calibrate.harness.device import open_backend  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCRATCH = REPO / ".bench-scratch"
BLOCK = 4096
SEED = 20261122
#: The issue's target for harness_to_fio_latency_ratio.
TARGET_RATIO = 1.10


def make_file(path: Path, size_bytes: int) -> None:
    rng = np.random.default_rng(SEED)
    tmp = path.with_suffix(".partial")
    with open(tmp, "wb") as f:
        for _ in range(size_bytes // (16 * MiB)):
            f.write(rng.integers(0, 256, 16 * MiB, dtype=np.uint8).tobytes())
        f.flush()
        os.fsync(f.fileno())
    tmp.rename(path)


def run_fio(path: Path, size_bytes: int, seconds: float) -> tuple[dict, np.ndarray]:
    """One fio run: its JSON read section, and every read's completion latency [ns] from its clat log."""
    logdir = tempfile.mkdtemp(prefix="fio-lat-", dir=path.parent)
    prefix = os.path.join(logdir, "lat")
    cmd = [
        "fio",
        "--name=timing_overhead",
        f"--filename={path}",
        "--direct=1",
        "--rw=randread",
        f"--bs={BLOCK}",
        "--iodepth=1",
        "--ioengine=psync",
        "--numjobs=1",
        f"--size={size_bytes}",
        "--norandommap",
        "--randrepeat=0",
        f"--runtime={seconds:g}s",
        "--time_based",
        "--percentile_list=50:90:99:99.9",
        "--output-format=json",
        f"--write_lat_log={prefix}",
        "--log_avg_msec=0",  # one line per read: time_ms, clat_ns, direction, bs, offset
    ]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        clat_ns = np.loadtxt(f"{prefix}_clat.1.log", delimiter=",", usecols=1, dtype=np.int64, ndmin=1)
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    # fio may print notes before the JSON document
    section = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    if clat_ns.size != section["total_ios"]:
        raise RuntimeError(f"fio logged {clat_ns.size} latencies for {section['total_ios']} reads")
    return section, clat_ns


def run_harness(backend, seconds: float, rng: np.random.Generator, batch: bool) -> np.ndarray:
    n_blocks = backend.size_bytes // BLOCK
    chunks = []
    deadline = time.monotonic() + seconds
    read = backend.read
    while time.monotonic() < deadline:
        offsets = rng.integers(0, n_blocks, 2000) * BLOCK
        if batch:
            chunks.append(backend.read_many(offsets, BLOCK))
        else:
            chunks.append(np.array([read(o, BLOCK) for o in offsets.tolist()]))
    return np.concatenate(chunks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration-s", type=float, default=24.0, help="per tool, split over the rounds [s]")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--file", type=Path, default=None, help="an existing written file to use instead")
    parser.add_argument("--remove", action="store_true", help="delete the scratch file afterwards")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    if not (args.duration_s > 0):
        parser.error("--duration-s must be positive")
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if shutil.which("fio") is None:
        print("fio is not installed", file=sys.stderr)
        return 1

    made = False
    if args.file is not None:
        path = args.file
    else:
        SCRATCH.mkdir(exist_ok=True)
        path = SCRATCH / f"timing_overhead_{args.size_mib}MiB.bin"
        if not path.exists() or path.stat().st_size != args.size_mib * MiB:
            print(f"writing {args.size_mib} MiB of random data (seed {SEED}) to {path} ...", file=sys.stderr)
            make_file(path, args.size_mib * MiB)
            made = True
    per_round = args.duration_s / args.rounds
    rng = np.random.default_rng(SEED)
    try:
        with open_backend(path) as backend:  # refuses holes, unaligned size, no O_DIRECT
            size = backend.size_bytes
            overhead_ns = backend.timer_overhead_ns
            harness_read, harness_many, fio_sections = [], [], []
            steps = [
                ("fio", lambda: fio_sections.append(run_fio(path, size, per_round))),
                ("harness read()", lambda: harness_read.append(run_harness(backend, per_round, rng, batch=False))),
                ("harness read_many()", lambda: harness_many.append(run_harness(backend, per_round, rng, batch=True))),
            ]
            for r in range(args.rounds):
                order = steps[r % 3:] + steps[: r % 3]  # rotate, so no tool always runs first
                print(f"round {r + 1}/{args.rounds}: " + ", ".join(n for n, _ in order)
                      + f", {per_round:.1f} s each", file=sys.stderr)
                for _, step in order:
                    step()
    finally:
        if args.remove and args.file is None:
            path.unlink(missing_ok=True)
            if SCRATCH.exists() and not any(SCRATCH.iterdir()):
                SCRATCH.rmdir()

    h_read = np.concatenate(harness_read) * 1e6
    h_many = np.concatenate(harness_many) * 1e6
    fio_us = np.concatenate([lat for _, lat in fio_sections]) * 1e-3
    fio_json_p50 = [s["clat_ns"]["percentile"]["50.000000"] / 1e3 for s, _ in fio_sections]

    rows = [
        ("fio psync clat", fio_us.size, fio_us.mean(), *np.percentile(fio_us, [50, 90, 99])),
        ("harness read()", h_read.size, h_read.mean(), *np.percentile(h_read, [50, 90, 99])),
        ("harness read_many()", h_many.size, h_many.mean(), *np.percentile(h_many, [50, 90, 99])),
    ]
    print(f"4 KiB random O_DIRECT reads, queue depth 1, {path} ({size} bytes), "
          f"{args.rounds} interleaved rounds of {per_round:.1f} s per tool; "
          f"harness timer overhead subtracted: {overhead_ns} ns")
    print(f"{'tool':<22}{'reads':>9}{'mean us':>10}{'p50 us':>10}{'p90 us':>10}{'p99 us':>10}")
    for name, n, mean, p50, p90, p99 in rows:
        print(f"{name:<22}{n:>9}{mean:>10.2f}{p50:>10.2f}{p90:>10.2f}{p99:>10.2f}")
    print("p50 by round [us] (fio from its JSON):")
    print("  fio:                 " + ", ".join(f"{x:7.2f}" for x in fio_json_p50))
    print("  harness read():      " + ", ".join(f"{np.median(x) * 1e6:7.2f}" for x in harness_read))
    print("  harness read_many(): " + ", ".join(f"{np.median(x) * 1e6:7.2f}" for x in harness_many))
    fio_median = float(np.median(fio_us))  # pooled over every read fio logged, as for the harness
    ratio_many = float(np.median(h_many)) / fio_median
    print(f"read_many()_to_fio_latency_ratio: {ratio_many:.3f}")
    if made and not args.remove:
        print(f"(kept {path} for the next run; --remove deletes it)", file=sys.stderr)
    ratio = float(np.median(h_read)) / fio_median
    figures = {
        "harness_to_fio_latency_ratio": figure(
            ratio, "", "median 4 KiB O_DIRECT random-read latency at QD1, harness read() over fio psync clat",
            decimals=3, headline=True, target=TARGET_RATIO),
        "read_many()_to_fio_latency_ratio": figure(ratio_many, "", "the same, harness read_many() over fio",
                                                   decimals=3),
        "fio_median_latency_us": figure(fio_median, "µs", "fio psync median completion latency", decimals=2,
                                        headline=True),
        "harness_median_latency_us": figure(float(np.median(h_read)), "µs", "harness read() median latency",
                                            decimals=2),
    }
    details = {"path": str(path), "size_bytes": size, "timer_overhead_ns": overhead_ns,
               "rows": [{"tool": name, "reads": int(n), "mean_us": mean, "p50_us": p50, "p90_us": p90,
                         "p99_us": p99} for name, n, mean, p50, p90, p99 in rows],
               "p50_by_round_us": {"fio": fio_json_p50,
                                   "harness read()": [float(np.median(x)) * 1e6 for x in harness_read],
                                   "harness read_many()": [float(np.median(x)) * 1e6 for x in harness_many]}}
    write_result("timing_overhead", figures, options=options_of(parser, args, housekeeping=("remove",)),
                 results_dir=args.results_dir,
                 details=details)
    print(f"harness_to_fio_latency_ratio: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
