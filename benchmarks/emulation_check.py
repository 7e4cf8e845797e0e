"""Emulated drives through the kernel: trace replays against DiskSim, lateness, throughput, calibration.

Needs root, nbdkit with its Python plugin, nbdfuse and /dev/fuse (``diskmodel emulate``'s needs).

1. **Trace replay.** Each of the seven traced DiskSim drives bundled in
   ``diskmodel.data.disksim`` is served as a block device
   (:func:`diskmodel.calibrate.emulate.emulated_drives`, all at once) and its
   validation trace's first ``--requests`` requests are replayed on it
   (:func:`~diskmodel.calibrate.emulate.replay.replay_trace`: O_DIRECT, queue
   depth 1, the trace's gap between one completion and the next arrival). The
   time each request takes as the replay sees it is compared with the trace's
   measured times by DiskSim's demerit (``disksim_demerit_s``), and divided by
   DiskSim's published demerit (on the whole trace). The same subset simulated
   without the kernel (``simulate_requests``) gives the demerit the emulator
   would reach if the path added nothing: a subset's demerit is not the whole
   trace's, so the artifact holds both. The lateness (actual minus simulated
   completion) is read from the drives' request logs (the server's side) and,
   as the replay sees it, the time it took less the simulated wait and service.
2. **Throughput.** 4 KiB O_DIRECT reads of one block, back to back, for
   ``--hits-s`` seconds: on atlas10k (after the first, each is a cache hit of
   its simulation, which also takes its simulated time: the drive's overhead and
   8 sectors at its bus's sector time), on the same drive
   with a fast bus (:func:`_fast_hit_drive`: its DiskSim folder with the bulk
   sector transfer time set to :data:`FAST_BUS_SECTOR_S`, so that a hit
   is several times shorter and the emulator, not the drive, sets the rate), and on
   a flat drive of zero latency (the emulator's own capacity: the path and the
   server alone).
3. **Calibration through the kernel.** ``benchmarks/_emulation_calibration.py``'s
   ``run(budget_s=...)`` and ``partitions(...)`` (an emulated WD800BD partitioned as
   the paper's Tables 1-3, each partition calibrated) when that file exists, else
   recorded as not run; ``--calibration-only`` runs this part alone and puts it into
   the existing artifact.

Each traced drive is served from its DiskSim folder, not by its name (a
preset of the same name, hp_c2247a, would win over the DiskSim drive).
The emulator (nbdkit and nbdfuse) and the replay run under SCHED_FIFO at
``--realtime-priority`` (0: the normal scheduler); with
``--kernel-threads-realtime N`` the kernel's threads on the loop device's way
in and out (its workqueue's workers, the softirq threads) run under SCHED_FIFO
N for the run too (:mod:`diskmodel.calibrate.emulate.kthreads`). The load average is recorded
beside each figure: on a shared host other processes delay the path's
wake-ups. Writes ``benchmarks/results/emulation_check.json`` (see ``_artifact.py``).

Usage: python benchmarks/emulation_check.py [--requests N] [--hits-s S] [--realtime-priority N]
    [--kernel-threads-realtime N] [--calibration-budget-s S] [--no-calibration | --calibration-only]
"""
from __future__ import annotations

import argparse
import importlib.util
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import add_results_dir_option, figure, options_of, write_result  # noqa: E402

from diskmodel.calibrate.emulate import emulated_drives, flat_drive, read_log, summarize  # noqa: E402
from diskmodel.calibrate.emulate.kthreads import KERNEL_THREAD_PREFIXES, kernel_threads_realtime  # noqa: E402
from diskmodel.calibrate.emulate.replay import replay_trace  # noqa: E402
from diskmodel.data.disksim import DISKSIM_PUBLISHED_DEMERIT_MS, disksim_drive_folder, read_drive_folder  # noqa: E402
from diskmodel.model.disksim_drives.convert import drive_parameters  # noqa: E402
from diskmodel.model.simulator.simulate import simulate_requests  # noqa: E402
from diskmodel.model.predictions.validation import disksim_demerit_s  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parent
#: The issue's bounds: demerit at most this times DiskSim's published one; lateness p99 [ms]; hits/s.
DEMERIT_RATIO_TARGET = 1.2
LATENESS_P99_TARGET_MS = 0.5
HITS_PER_S_TARGET = 2000.0
HIT_DRIVE = "atlas10k"
#: The fast-bus atlas10k's bulk sector transfer time [ms, DiskSim's unit]: 512 bytes at 512 MB/s.
FAST_BUS_SECTOR_MS = 0.001


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _fast_hit_drive(folder: Path) -> Path:
    """A copy of atlas10k's DiskSim folder in *folder* whose bus moves a sector in :data:`FAST_BUS_SECTOR_MS`
    (its "Bulk sector transfer time"); everything else, the hit overhead included, is atlas10k's."""
    import re
    import shutil

    src = Path(disksim_drive_folder(HIT_DRIVE))
    dst = folder / f"{HIT_DRIVE}_fastbus"
    shutil.copytree(src, dst)
    specs = next(dst.glob("*.diskspecs"))
    text, n = re.subn(r"(Bulk sector transfer time = )[0-9.]+", rf"\g<1>{FAST_BUS_SECTOR_MS:f}", specs.read_text())
    if n != 1:
        raise RuntimeError(f"{specs}: expected one 'Bulk sector transfer time' line, found {n}")
    specs.write_text(text)
    return dst


def _hammer(device: str, duration_s: float, realtime_priority) -> float:
    """Back-to-back 4 KiB O_DIRECT reads of one block for *duration_s*: requests per second."""
    from diskmodel.calibrate.emulate.server import realtime

    fd = os.open(device, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    buf = mmap.mmap(-1, 4096)
    n = 0
    try:
        with realtime(realtime_priority):
            start = time.monotonic()
            end = start + duration_s
            while time.monotonic() < end:
                os.preadv(fd, [buf], 1 << 20)
                n += 1
            took = time.monotonic() - start
    finally:
        os.close(fd)
        buf.close()
    return n / took


def _cpu_times() -> tuple[float, float]:
    """(busy, total) CPU time of the whole host so far [clock ticks] (/proc/stat's first line; idle and iowait
    are not busy)."""
    with open("/proc/stat") as f:
        fields = [float(x) for x in f.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def _replay_rows(devices, traces, params, realtime_priority, via):
    rows, replayed = [], {}
    for dev, (name, trace) in zip(devices, traces.items()):
        load = _load()
        busy0, total0 = _cpu_times()
        start = time.monotonic()
        took = replay_trace(dev.path if via == "device" else dev.file_path, trace, realtime_priority=realtime_priority)
        busy1, total1 = _cpu_times()
        replayed[name] = took
        sim = simulate_requests(params[name], trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
        published = DISKSIM_PUBLISHED_DEMERIT_MS[name]
        emu_ms = disksim_demerit_s(trace.service_s, took) * 1e3
        sim_ms = disksim_demerit_s(trace.service_s, sim.service_s) * 1e3
        rows.append({"disk": name, "requests": len(trace), "replay_s": time.monotonic() - start,
                     "load_average_before": load, "load_average_after": _load(),
                     "cpu_busy_fraction": (busy1 - busy0) / max(total1 - total0, 1.0), "demerit_ms": emu_ms, "disksim_demerit_ms": published,
                     "ratio_to_disksim": emu_ms / published, "simulated_subset_demerit_ms": sim_ms,
                     "simulated_subset_ratio_to_disksim": sim_ms / published,
                     "mean_measured_ms": float(trace.service_s.mean() * 1e3),
                     "mean_replayed_ms": float(took.mean() * 1e3),
                     "mean_simulated_ms": float(sim.service_s.mean() * 1e3)})
        print(f"{name:<11}{len(trace):>6}{emu_ms:>10.3f}{emu_ms / published:>7.2f}{sim_ms:>10.3f}"
              f"{sim_ms / published:>7.2f}{published:>9.3f}   load {load[0]:.1f}, CPUs busy "
              f"{rows[-1]['cpu_busy_fraction']:.0%}", flush=True)
    return rows, replayed


def _replay_start(served, trace, match: int = 8) -> int:
    """Where the replay's requests start among a drive's served rows: the first row from which *match* rows
    have the trace's offsets and sizes (the kernel reads the device when it is attached, and the throughput
    runs read it after the replay)."""
    offsets, sizes = served["offset_bytes"].to_numpy(), served["size_bytes"].to_numpy()
    want_off, want_size = trace.lbn[:match] * 512, trace.blocks[:match] * 512
    for i in range(len(offsets) - len(want_off) + 1):
        if (offsets[i:i + len(want_off)] == want_off).all() and (sizes[i:i + len(want_off)] == want_size).all():
            return i
    raise RuntimeError(f"the replay's requests were not found in the request log ({len(offsets)} rows)")


def _lateness(devices, traces, replayed, rows):
    """Per drive: the server's lateness (its log) and the replay's (time taken less simulated wait + service),
    each drive's percentiles [ms] added to its row of *rows*; returns both over all drives."""
    server, client = [], []
    for dev, name, row in zip(devices, traces, rows):
        frame = read_log(dev.log_path)
        served = frame[~frame["probe"].astype(bool) & (frame["op"] <= 1)]
        served = served.iloc[_replay_start(served, traces[name]):][:len(traces[name])]
        server.append(served["lateness_s"].to_numpy())
        client.append(replayed[name] - (served["wait_s"] + served["service_s"]).to_numpy())
        for key, values in (("lateness", server[-1]), ("replay_excess", client[-1])):
            for q in (50, 99):
                row[f"{key}_p{q}_ms"] = float(np.percentile(values, q) * 1e3)
            row[f"{key}_max_ms"] = float(values.max() * 1e3)
        row["replay_excess_over_1ms_fraction"] = float(np.mean(client[-1] > 1e-3))
        print(f"{name:<11}lateness p99 {row['lateness_p99_ms']:.3f} ms; replay excess p50 "
              f"{row['replay_excess_p50_ms']:.3f}, p99 {row['replay_excess_p99_ms']:.3f}, max "
              f"{row['replay_excess_max_ms']:.2f} ms, over 1 ms {row['replay_excess_over_1ms_fraction']:.2%}")
    return np.concatenate(server), np.concatenate(client)


def _calibration(budget_s: float, skip: bool, realtime: bool = True):
    """The calibrations through the kernel (``_emulation_calibration.run``) and the paper's partitions
    of an emulated WD800BD (``_emulation_calibration.partitions``): (rows, partition rows, status)."""
    path = BENCHMARKS / "_emulation_calibration.py"
    if skip:
        return None, None, "not run (--no-calibration)"
    if not path.exists():
        return None, None, "not run (benchmarks/_emulation_calibration.py is absent)"
    spec = importlib.util.spec_from_file_location("_emulation_calibration", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.run(budget_s=budget_s, realtime=realtime)
    print(module.format_table(rows))
    parts = module.partitions(budget_s, realtime=realtime)
    print(module.format_partitions(parts))
    return rows, parts, "run" + (" (emulator and calibration under SCHED_FIFO)" if realtime else "")


def _calibration_figures(rows, parts) -> dict:
    """The calibration section's figures: drives whose every quantity passed, drives whose zone count
    is the drive's, the worst zone-rate error, and the worst per-partition zone-rate error."""
    if not rows:
        return {}

    def q(row, name):
        return next(x for x in row["quantities"] if x["quantity"] == name)

    worst = max(abs(q(r, "zone_rate_worst_bytes_per_s")["error"] or 0.0) for r in rows)
    figures = {
        "calibration_drives_passed": figure(sum(r["passed"] for r in rows), "drives",
                                            f"drives (of {len(rows)}) whose calibration through the kernel met "
                                            "every target", decimals=0, headline=True),
        "calibration_zone_count_right": figure(sum(q(r, "zone_count")["passed"] for r in rows), "drives",
                                               f"drives (of {len(rows)}) whose zone count through the kernel is "
                                               "the drive's", decimals=0, headline=True),
        "calibration_worst_zone_rate_error_pct": figure(100 * worst, "%", "zone rates through the kernel, worst "
                                                        "|error| over the drives", decimals=2, target=3.0),
    }
    if parts:
        figures["partition_worst_zone_rate_error_pct"] = figure(
            100 * max(p["worst_error"] for p in parts), "%", "WD800BD partitioned as the paper's Tables 1-3: "
            "zone rates by location, worst |error| over the partitions", decimals=2, headline=True, target=3.0)
    return figures


def _calibration_only(args, parser) -> int:
    """``--calibration-only``: the calibration section alone, put into the existing artifact (its other
    figures and details kept, a note saying which run each part is from)."""
    import json

    folder = args.results_dir or BENCHMARKS / "results"
    target = Path(folder) / "emulation_check.json"
    old = json.loads(target.read_text()) if target.exists() else {"figures": {}, "details": {}, "notes": []}
    load_start = _load()
    rows, parts, status = _calibration(args.calibration_budget_s, False, realtime=bool(args.realtime_priority))
    figures = {k: v for k, v in old.get("figures", {}).items()
               if not k.startswith(("calibration_", "partition_"))}
    figures.update(_calibration_figures(rows, parts))
    details = dict(old.get("details", {}))
    details["calibration"] = {"status": status, "rows": rows, "partitions": parts,
                              "load_average_at_start": load_start, "load_average_at_end": _load()}
    notes = [n for n in old.get("notes", []) if not n.startswith("calibration section")]
    when = old.get("environment", {}).get("date_utc")
    notes.append("calibration section rerun alone (--calibration-only); the other figures are from the run of "
                 f"{when}" if when else "calibration section run alone (--calibration-only)")
    write_result("emulation_check", figures, options=options_of(parser, args), details=details, notes=notes,
                 results_dir=args.results_dir)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600,
                        help="requests of each trace replayed, from its start (default: 600; 0: the whole trace)")
    parser.add_argument("--hits-s", type=float, default=5.0, help="seconds of each throughput run (default: 5)")
    parser.add_argument("--via", choices=("device", "file"), default="device",
                        help="replay on the loop device, or on the file nbdfuse exposes under it (one hop fewer: no "
                             "loop worker thread, no block-layer completion) (default: device)")
    parser.add_argument("--realtime-priority", type=int, default=40,
                        help="SCHED_FIFO priority of the emulator and the replay (default: 40; 0: not real-time)")
    parser.add_argument("--kernel-threads-realtime", type=int, default=0, metavar="N",
                        help="also run the kernel's softirq threads and unbound workqueue workers (the loop device's "
                             "way in and out) under SCHED_FIFO N for the run, each put back afterwards; they serve "
                             "every process on the host (default: 0, left alone)")
    parser.add_argument("--calibration-budget-s", type=float, default=120.0,
                        help="device-time budget of each calibration (default: 120)")
    parser.add_argument("--no-calibration", action="store_true", help="skip the calibrations (default: run them)")
    parser.add_argument("--calibration-only", action="store_true",
                        help="run the calibrations alone and put them into the existing artifact (its other "
                             "figures kept)")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    if args.requests < 0 or args.hits_s <= 0 or not 0 <= args.realtime_priority <= 99 \
            or not 0 <= args.kernel_threads_realtime <= 99:
        parser.error("--requests must be >= 0, --hits-s > 0, --realtime-priority and --kernel-threads-realtime 0-99")
    if args.calibration_only:
        return _calibration_only(args, parser)
    rt = args.realtime_priority or None
    traces, params = {}, {}
    for name in DISKSIM_PUBLISHED_DEMERIT_MS:
        files = read_drive_folder(disksim_drive_folder(name))
        trace = files.read_trace()
        traces[name] = trace.head(args.requests) if args.requests else trace
        params[name] = drive_parameters(files)
    notes = []
    if args.requests:
        notes.append(f"each trace's first {args.requests} requests replayed (the whole traces take about "
                     f"8 minutes of device time each); DiskSim's published demerits are the whole traces'")
    load_start = _load()
    print(f"{'disk':<11}{'reqs':>6}{'demerit':>10}{'ratio':>7}{'sim only':>10}{'ratio':>7}{'DiskSim':>9}")
    with tempfile.TemporaryDirectory(prefix="diskmodel-emulation-check-") as logs:
        zero = flat_drive(0.0, 64 << 20, name="flat 0 s")
        fast = str(_fast_hit_drive(Path(logs)))
        # each traced drive by its DiskSim folder: by name, a preset of the same name (hp_c2247a) would be served
        folders = [str(disksim_drive_folder(name)) for name in traces]
        with emulated_drives([*folders, fast, zero], log_dir=logs, realtime_priority=rt,
                             say=lambda line: print(line, file=sys.stderr)) as devices, \
                kernel_threads_realtime(args.kernel_threads_realtime or None) as kernel_changed:
            fixed_costs = {d.drive: d.fixed_cost_s for d in devices}
            rows, replayed = _replay_rows(devices[:len(traces)], traces, params, rt, args.via)
            load_hits = _load()
            hit_dev = devices[list(traces).index(HIT_DRIVE)]
            hits_per_s = _hammer(hit_dev.path, args.hits_s, rt)
            fast_dev = devices[-2]
            fast_per_s = _hammer(fast_dev.path, args.hits_s, rt)
            zero_per_s = _hammer(devices[-1].path, args.hits_s, rt)
            kernel_threads_changed = kernel_changed()
        server_late, client_late = _lateness(devices[:len(traces)], traces, replayed, rows)
        hit_frame = read_log(hit_dev.log_path)
        hit_summary = summarize(hit_frame.iloc[-int(hits_per_s * args.hits_s * 0.9):])
        fast_frame = read_log(fast_dev.log_path)
        fast_summary = summarize(fast_frame.iloc[-int(fast_per_s * args.hits_s * 0.9):])
        summaries = {d.drive: d.summary for d in devices}
    print(f"{HIT_DRIVE} cache hits: {hits_per_s:.0f}/s (hits {hit_summary['hits']}); {HIT_DRIVE} with a fast bus: "
          f"{fast_per_s:.0f}/s (hits {fast_summary['hits']}, simulated service mean "
          f"{fast_summary['mean_service_s'] * 1e3:.3f} ms); flat 0 s drive: {zero_per_s:.0f}/s; "
          f"load {load_hits[0]:.1f}")
    p = {q: float(np.percentile(server_late, q) * 1e3) for q in (50, 99)}
    c = {q: float(np.percentile(client_late, q) * 1e3) for q in (50, 99)}
    print(f"lateness (server): p50 {p[50]:.3f} ms, p99 {p[99]:.3f} ms; as the replay sees it: p50 {c[50]:.3f} ms, "
          f"p99 {c[99]:.3f} ms")
    cal_rows, cal_parts, cal_status = _calibration(args.calibration_budget_s, args.no_calibration,
                                                   realtime=bool(rt))
    print(f"calibration through the kernel: {cal_status}")
    worst = max(r["ratio_to_disksim"] for r in rows)
    within = sum(r["ratio_to_disksim"] <= DEMERIT_RATIO_TARGET for r in rows)
    print(f"demerit within {DEMERIT_RATIO_TARGET}x DiskSim's: {within}/{len(rows)}; worst ratio {worst:.2f}")
    figures = {
        "worst_demerit_ratio_to_disksim": figure(worst, "", "worst ratio of the replayed demerit to DiskSim's "
                                                 "published one (7 drives)", decimals=2, headline=True,
                                                 target=DEMERIT_RATIO_TARGET),
        "drives_within_demerit_target": figure(within, "drives", f"drives whose replayed demerit is within "
                                               f"{DEMERIT_RATIO_TARGET}x DiskSim's", decimals=0),
        "lateness_p50_ms": figure(p[50], "ms", "lateness p50 on the trace replays (server)", decimals=3),
        "lateness_p99_ms": figure(p[99], "ms", "lateness p99 on the trace replays (server)", decimals=3,
                                  headline=True, target=LATENESS_P99_TARGET_MS),
        "replay_excess_p50_ms": figure(c[50], "ms", "time taken as the replay sees it less the simulated "
                                       "time, p50", decimals=3),
        "replay_excess_p99_ms": figure(c[99], "ms", "time taken as the replay sees it less the simulated "
                                       "time, p99", decimals=3),
        "cache_hits_per_s": figure(hits_per_s, "1/s", f"{HIT_DRIVE} cache hits served per second (each takes "
                                   f"its simulated time)", decimals=0, headline=True),
        "fast_bus_cache_hits_per_s": figure(fast_per_s, "1/s", f"cache hits served per second by {HIT_DRIVE} "
                                            f"with a {FAST_BUS_SECTOR_MS} ms/sector bus (a hit's simulated time "
                                            f"about 0.19 ms; the issue asks at least {HITS_PER_S_TARGET:.0f})",
                                            decimals=0, headline=True),
        "flat_zero_requests_per_s": figure(zero_per_s, "1/s", "requests per second of a zero-latency drive "
                                           "(path and server alone)", decimals=0, headline=True),
    }
    details = {"drives": rows, "fixed_cost_s": fixed_costs, "emulator_summaries": summaries,
               "hits": {"drive": HIT_DRIVE, "per_s": hits_per_s, "summary": hit_summary,
                        "flat_zero_per_s": zero_per_s, "load_average": load_hits,
                        "fast_bus": {"sector_transfer_ms": FAST_BUS_SECTOR_MS, "per_s": fast_per_s,
                                     "summary": fast_summary}},
               "load_average_at_start": load_start, "load_average_at_end": _load(),
               "realtime_priority": rt,
               "kernel_threads_realtime": {"priority": args.kernel_threads_realtime or None,
                                           "threads_changed": kernel_threads_changed,
                                           "prefixes": list(KERNEL_THREAD_PREFIXES)},
               "calibration": {"status": cal_status, "rows": cal_rows, "partitions": cal_parts}}
    figures.update(_calibration_figures(cal_rows, cal_parts))
    write_result("emulation_check", figures, options=options_of(parser, args),
                 details=details, notes=notes, results_dir=args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
