"""Speed of the vectorised expected service time (issue: model core, "Speed").

Evaluates T_DST (eqs. 3-8) for ``--requests`` random 4 KiB requests (default
10 million) on the WD800BD preset, in chunks of ``--chunk``, the best of
``--repeats`` passes, with ``service_time_total_s`` (the one-pass numba kernel
of ``service_time_s`` keeping only the total); the requests are drawn
beforehand, so only the model is timed.  Prints the rate by wall clock and by
the process's CPU time (on a shared machine the wall clock counts other
processes' time too) and the peak resident memory; the last line is
``expected_service_time_requests_per_s: N`` (wall clock).  Writes
``benchmarks/results/model_throughput.json`` (see ``_artifact.py``).

    python benchmarks/model_throughput.py [--requests N] [--chunk N] [--repeats N]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import add_results_dir_option, figure, options_of, write_result  # noqa: E402

from diskmodel.model import load_preset  # noqa: E402
from diskmodel.model.drive.disk import service_time_total_s  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--chunk", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    add_results_dir_option(parser)
    args = parser.parse_args()

    disk = load_preset("wd800bd")
    rng = np.random.default_rng(2015)
    sectors = disk.geometry.total_sectors - 16
    sector = disk.geometry.sector_size_bytes
    # Requests are drawn beforehand so that only the model is timed.
    offsets = rng.integers(0, sectors, size=args.requests, dtype=np.int64) * sector
    heads = np.roll(offsets, 1) + 4096
    sizes = np.full(args.chunk, 4096.0)

    service_time_total_s(disk, offsets[:1], sizes[:1], heads[:1])  # JIT compilation
    best_s = best_cpu_s = float("inf")
    checksum = 0.0
    for _ in range(args.repeats):
        start = time.perf_counter()
        start_cpu = time.process_time()
        total = 0.0
        for begin in range(0, args.requests, args.chunk):
            stop = min(begin + args.chunk, args.requests)
            total += float(service_time_total_s(disk, offsets[begin:stop], sizes[: stop - begin],
                                                heads[begin:stop]).sum())
        best_s = min(best_s, time.perf_counter() - start)
        best_cpu_s = min(best_cpu_s, time.process_time() - start_cpu)
        checksum = total
    peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rate = args.requests / best_s
    print(f"requests: {args.requests:,} in chunks of {args.chunk:,}; best of {args.repeats}: {best_s:.3f} s "
          f"wall, {best_cpu_s:.3f} s CPU ({args.requests / best_cpu_s:.0f} requests per CPU second)")
    print(f"mean expected service time: {checksum / args.requests * 1e3:.3f} ms")
    print(f"peak_rss_bytes: {peak_rss_bytes} ({peak_rss_bytes / 2**20:.0f} MiB)")
    figures = {
        "expected_service_time_requests_per_s": figure(
            rate, "requests/s", "expected service times (eqs. 3-8) per second, WD800BD, 4 KiB random requests",
            decimals=0, headline=True),
        "peak_rss_mib": figure(peak_rss_bytes / 2**20, "MiB", "peak resident memory of the process",
                               decimals=0, headline=True),
        "best_pass_s": figure(best_s, "s", f"best pass over {args.requests:,} requests", decimals=3),
        "requests_per_cpu_s": figure(args.requests / best_cpu_s, "requests/s",
                                     "expected service times per second of the process's CPU time", decimals=0),
        "mean_expected_service_time_ms": figure(checksum / args.requests * 1e3, "ms",
                                                "mean expected service time (a checksum of the pass)", decimals=3),
    }
    write_result("model_throughput", figures, options=options_of(parser, args), results_dir=args.results_dir)
    print(f"expected_service_time_requests_per_s: {rate:.0f}")


if __name__ == "__main__":
    main()
