"""The kernel's path to the emulator: each read's way in against the path's idle gap, its way back against
how long the server held it, with and without the CPU latency request of PM QoS held at zero.

``python benchmarks/_path_idle.py [--reads N] [--bursts K] [--json OUT]`` serves a flat drive (its
latency drawn from several, so that the server holds requests for a spread of times) with the emulator,
and reads it through the loop device at queue depth 1 after a gap drawn from several, stamping each read's
submission and completion on the monotonic clock. Bursts alternate between the CPU latency request left
alone and held at zero (``/dev/cpu_dma_latency``, Documentation/power/pm_qos_interface.rst: while it is
held, the cpuidle governors pick no state whose exit latency exceeds it, so idle CPUs poll and never
halt). The server's log gives each read's entry and answer: its way in is the entry less the submission,
its way back the completion less the answer, its hold the answer less the entry. Printed by bin, with the
load average; run it under SCHED_FIFO as the calibrations through the kernel are.
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: The client's gaps between a completion and the next submission [s].
GAPS_S = (0.0, 0.1e-3, 0.3e-3, 1e-3, 3e-3, 10e-3, 20e-3)
#: The flat drive's latencies: the server holds a request about this less the path's legs [s].
LATENCIES_S = (0.3e-3, 0.6e-3, 1e-3, 2e-3, 4e-3, 8e-3, 16e-3)
IDLE_BINS_S = (0.0, 0.3e-3, 0.6e-3, 1.5e-3, 4e-3, 12e-3, 25e-3, 40e-3)
HELD_BINS_S = (0.0, 0.3e-3, 0.6e-3, 1e-3, 2e-3, 4e-3, 8e-3, 20e-3)


def _burst(fd, buf, span, n, rng, stamps, mode):
    from diskmodel.calibrate.emulate.cpu_latency import cpu_latency_held

    with cpu_latency_held(0) if mode == "qos0" else _nothing():
        for _ in range(n):
            time.sleep(float(rng.choice(GAPS_S))) if rng.random() > 0.15 else None
            off = int(rng.integers(span)) * 4096
            t = time.monotonic()
            os.preadv(fd, [buf], off)
            stamps.append((t, time.monotonic(), off, mode))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def measure(reads: int, bursts: int, seed: int = 0, cpu_latency_us=None) -> dict:
    from diskmodel.calibrate.emulate import read_log
    from diskmodel.calibrate.emulate.devices import emulated_drives
    from diskmodel.calibrate.emulate.drives import flat_drive

    rng = np.random.default_rng(seed)
    stamps, load = [], []
    with tempfile.TemporaryDirectory(prefix="diskmodel-pathidle-") as tmp:
        spec = flat_drive(list(LATENCIES_S), 64 << 20, name="pathidle", seed=seed)
        with emulated_drives([spec], log_dir=tmp, cpu_latency_us=cpu_latency_us) as devices:
            fd = os.open(devices[0].path, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
            buf = mmap.mmap(-1, 4096)
            try:
                for k in range(2 * bursts):
                    load.append(os.getloadavg()[0])
                    _burst(fd, memoryview(buf), (64 << 20) // 4096, reads, rng, stamps, ("plain", "qos0")[k % 2])
            finally:
                os.close(fd)
                buf.close()
        log = read_log(next(Path(tmp).glob("*.reqlog")))
    out = _shape(log, stamps, load)
    out["control"] = {k: log.attrs.get(k) for k in ("path_cost_by_size", "path_in_by_size", "path_in_by_idle",
                                                     "path_back_by_hold")}
    return out


def _shape(log, stamps, load) -> dict:
    t0 = float(log.attrs["t0_monotonic_s"])
    served = log[(~log["probe"].astype(bool)) & (log["op"] == 0)]
    offsets, entries, dones = (served["offset_bytes"].to_numpy(), served["entry_s"].to_numpy() + t0,
                               served["done_s"].to_numpy() + t0)
    arrivals = served["arrival_s"].to_numpy() + t0
    completions = arrivals + served["wait_s"].to_numpy() + served["service_s"].to_numpy()
    j, rows = 0, []
    for issued, seen, off, mode in stamps:
        while j < offsets.size and not (offsets[j] == off and issued <= entries[j] <= seen):
            j += 1
        if j == offsets.size:
            break
        rows.append((issued, seen, entries[j], dones[j], arrivals[j], completions[j], mode))
        j += 1
    a = np.array([r[:6] for r in rows])
    modes = np.array([r[6] for r in rows])
    issued, seen, entry, done, arrival, completion = a.T
    after = seen - completion   # how long after the drive's completion the caller saw it
    early = issued - arrival   # how far before its submission the drive saw the read
    way_in, way_back, held = entry - issued, seen - done, done - entry
    idle = np.r_[np.nan, entry[1:] - done[:-1]]  # the server idle: its previous answer to this entry
    out = {"reads": len(rows), "load_average_at_bursts": load, "modes": {}}
    for mode in ("plain", "qos0"):
        m = modes == mode
        by_idle, by_held = [], []
        for lo, hi in zip(IDLE_BINS_S[:-1], IDLE_BINS_S[1:]):
            sel = m & (idle >= lo) & (idle < hi)
            by_idle.append({"idle_s": [lo, hi], "reads": int(sel.sum()),
                            "early_p10_p50_p90_s": np.percentile(early[sel], [10, 50, 90]).tolist()
                            if sel.sum() >= 10 else None,
                            "way_in_p10_p50_p90_s": np.percentile(way_in[sel], [10, 50, 90]).tolist()
                            if sel.sum() >= 10 else None})
        for lo, hi in zip(HELD_BINS_S[:-1], HELD_BINS_S[1:]):
            sel = m & (held >= lo) & (held < hi)
            by_held.append({"held_s": [lo, hi], "reads": int(sel.sum()),
                            "seen_after_p10_p50_p90_s": np.percentile(after[sel], [10, 50, 90]).tolist()
                            if sel.sum() >= 10 else None,
                            "way_back_p10_p50_p90_s": np.percentile(way_back[sel], [10, 50, 90]).tolist()
                            if sel.sum() >= 10 else None})
        out["modes"][mode] = {"by_idle": by_idle, "by_held": by_held,
                              "raw": {"idle_s": idle[m].tolist(), "way_in_s": way_in[m].tolist(),
                                      "held_s": held[m].tolist(), "way_back_s": way_back[m].tolist()}}
    return out


def _print(shape) -> None:
    for k, v in shape.get("control", {}).items():
        print(f"{k}: {' '.join(f'{a * (1e3 if a < 1 else 1):g}:{b * 1e6:.0f}' for a, b in v) if v else v}")
    print(f"{shape['reads']} reads; load at bursts {' '.join(f'{v:.2f}' for v in shape['load_average_at_bursts'])}")
    for mode, s in shape["modes"].items():
        print(mode)
        for b in s["by_idle"]:
            v = b["way_in_p10_p50_p90_s"]
            e = b["early_p10_p50_p90_s"]
            print(f"  path idle {b['idle_s'][0] * 1e3:5.2f}-{b['idle_s'][1] * 1e3:5.2f} ms: {b['reads']:5d} way in "
                  f"{'-' if v is None else ' '.join(f'{x * 1e6:.0f}' for x in v)} us; arrival before submission "
                  f"{'-' if e is None else ' '.join(f'{x * 1e6:.0f}' for x in e)} us")
        for b in s["by_held"]:
            v = b["way_back_p10_p50_p90_s"]
            e = b["seen_after_p10_p50_p90_s"]
            print(f"  held {b['held_s'][0] * 1e3:5.2f}-{b['held_s'][1] * 1e3:5.2f} ms: {b['reads']:5d} way back "
                  f"{'-' if v is None else ' '.join(f'{x * 1e6:.0f}' for x in v)} us; seen after the completion "
                  f"{'-' if e is None else ' '.join(f'{x * 1e6:.0f}' for x in e)} us")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=300, help="reads in each burst")
    parser.add_argument("--bursts", type=int, default=3, help="bursts of each mode (they alternate)")
    parser.add_argument("--cpu-latency-us", type=int, default=None,
                        help="the emulator's own CPU latency request (default: none; the bursts alternate)")
    parser.add_argument("--json", default=None, help="also write the shape here (a new file)")
    args = parser.parse_args(argv)
    shape = measure(args.reads, args.bursts, cpu_latency_us=args.cpu_latency_us)
    _print(shape)
    if args.json:
        with open(args.json, "x") as f:
            json.dump(shape, f, indent=1)
    return 0


if __name__ == "__main__":
    from _artifact import run_main

    sys.exit(run_main(main))
