"""The kernel's path to the emulator as a calibration sees it: each read's way in and way back.

``python benchmarks/_kernel_path_shape.py DRIVE [--budget-s S] [--json OUT]`` serves DRIVE with the
emulator (``diskmodel.calibrate.emulate.devices.emulated_drives``, its request log kept in a temporary
folder), calibrates it in this process through the loop device (the calibration's own code on a
DirectBackend whose reads are stamped on the monotonic clock, as the emulator's server stamps each
request's entry and answer), and joins the two: a request's way in is its entry less its submission,
its way back the host's completion less the server's answer. Printed by how long the server held the
request (the way back) and the one before it (the way in), with the cost the emulator takes off each
arrival, the share of requests that reached the drive before the one before completed, and those
shorter than the cost (answered late: the host sees the path, not the drive). Run it under SCHED_FIFO
(``chrt --fifo 40``) as the calibrations through the kernel are run; the load average is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: Bins of the time the server held a request [s].
HELD_BINS_S = (0.0, 0.3e-3, 0.6e-3, 1e-3, 2e-3, 4e-3, 8e-3, 20e-3)


def _stamped_backend(path: str, stamps: list, tag: list):
    from diskmodel.calibrate.harness.device import DirectBackend as Base

    class DirectBackend(Base):  # the name the calibration reads as a device's
        def read_many(self, offsets, length_bytes):
            views = self._views.get(length_bytes) or self._ensure_buffer(length_bytes)
            took = []
            for off in np.asarray(offsets).tolist():
                t0 = time.perf_counter_ns()
                os.preadv(self._fd, views, off)
                t1 = time.perf_counter_ns()
                stamps.append((t0, t1, off, tag[0]))
                took.append(t1 - t0)
            return (np.asarray(took, dtype=float) - self.timer_overhead_ns) * 1e-9

        def read(self, offset_bytes, length_bytes):
            return float(self.read_many([offset_bytes], length_bytes)[0])

    return DirectBackend(path)


def measure(drive: str, budget_s: float) -> dict:
    """Calibrate *drive* through the kernel, stamping each read; the path's shape (see the module doc)."""
    from diskmodel.calibrate.emulate import read_log
    from diskmodel.calibrate.emulate.devices import emulated_drives
    from diskmodel.calibrate.harness import meter as meter_module
    from diskmodel.calibrate.harness.measure import calibrate

    stamps, tag = [], ["?"]
    issue = meter_module.Meter._issue

    def tagged(self, offsets, length, which):
        tag[0] = which
        return issue(self, offsets, length, which)

    meter_module.Meter._issue = tagged
    try:
        with tempfile.TemporaryDirectory(prefix="diskmodel-pathshape-") as tmp:
            with emulated_drives([drive], log_dir=tmp) as devices:
                backend = _stamped_backend(devices[0].path, stamps, tag)
                try:
                    calibrate(backend, budget_s=budget_s, seed=0, progress=False)
                finally:
                    backend.close()
            log = read_log(next(Path(tmp).glob("*.reqlog")))
    finally:
        meter_module.Meter._issue = issue
    return _shape(log, stamps)


def _shape(log, stamps) -> dict:
    t0 = float(log.attrs["t0_monotonic_s"])
    served = log[(~log["probe"].astype(bool)) & (log["op"] == 0)]
    offsets = served["offset_bytes"].to_numpy()
    j, rows = 0, []
    for start, end, off, which in stamps:  # in order: each read is the next request at its offset
        while j < offsets.size and offsets[j] != off:
            j += 1
        if j == offsets.size:
            break
        rows.append((start * 1e-9, end * 1e-9, which, j))
        j += 1
    submitted = np.array([r[0] for r in rows])
    seen = np.array([r[1] for r in rows])
    req = served.iloc[[r[3] for r in rows]]
    entry, answer = req["entry_s"].to_numpy() + t0, req["done_s"].to_numpy() + t0
    way_in, way_back, held = entry - submitted, seen - answer, answer - entry
    cost = float(log.attrs["fixed_cost_s"])
    drive_s = req["wait_s"].to_numpy() + req["service_s"].to_numpy()
    out = {"cost_s": cost, "requests": len(rows), "queued_share": float(np.mean(req["wait_s"].to_numpy() > 0)),
           "shorter_than_cost_share": float(np.mean(drive_s < cost)),
           "round_trip_p50_s": float(np.median(way_in + way_back)), "load_average": list(os.getloadavg()),
           "by_held": []}
    held_before = np.r_[np.nan, held[:-1]]
    for lo, hi in zip(HELD_BINS_S[:-1], HELD_BINS_S[1:]):
        own, before = (held >= lo) & (held < hi), (held_before >= lo) & (held_before < hi)
        out["by_held"].append({"held_s": [lo, hi], "reads": int(own.sum()),
                               "way_back_p10_p50_p90_s": np.percentile(way_back[own], [10, 50, 90]).tolist()
                               if own.sum() >= 20 else None,
                               "way_in_after_p10_p50_p90_s": np.percentile(way_in[before], [10, 50, 90]).tolist()
                               if before.sum() >= 20 else None})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drive", help="a drive the emulator serves (e.g. cheetah4LP)")
    parser.add_argument("--budget-s", type=float, default=120.0, help="device time of the calibration [s]")
    parser.add_argument("--json", default=None, help="also write the shape here (a new file)")
    args = parser.parse_args(argv)
    shape = measure(args.drive, args.budget_s)
    print(f"{args.drive}: cost taken off {shape['cost_s'] * 1e6:.0f} us, way in and back p50 "
          f"{shape['round_trip_p50_s'] * 1e6:.0f} us, queued {100 * shape['queued_share']:.0f} %, shorter than the "
          f"cost {100 * shape['shorter_than_cost_share']:.0f} %, load {shape['load_average'][0]:.2f}")
    for b in shape["by_held"]:
        back, into = b["way_back_p10_p50_p90_s"], b["way_in_after_p10_p50_p90_s"]
        print(f"  held {b['held_s'][0] * 1e3:4.1f}-{b['held_s'][1] * 1e3:4.1f} ms: {b['reads']:6d} reads, way back "
              f"p10/50/90 {'-' if back is None else ' '.join(f'{v * 1e6:.0f}' for v in back)} us; way in after "
              f"{'-' if into is None else ' '.join(f'{v * 1e6:.0f}' for v in into)} us")
    if args.json:
        with open(args.json, "x") as f:
            json.dump(shape, f, indent=1)
    return 0


if __name__ == "__main__":
    from _artifact import run_main

    sys.exit(run_main(main))
