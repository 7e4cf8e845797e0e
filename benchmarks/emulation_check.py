"""Emulated drives through the kernel: trace replays against DiskSim, lateness, throughput, calibration.

Needs root, nbdkit with its Python plugin, nbdfuse and /dev/fuse (``diskmodel emulate``'s needs).

1. **Trace replay.** Each of the seven traced DiskSim drives bundled in
   ``diskmodel.data.disksim`` is served as a block device
   (:func:`diskmodel.calibrate.emulate.emulated_drives`, one at a time, each just before its replay) and its
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

   *Repeats.* A host stall (this host's own CPUs waiting for theirs, other processes) delays the
   requests it meets by up to tens of ms, and DiskSim's demerit, an RMS over the distribution down to
   1 in 10,000, is made by those few. Each trace is replayed ``--repeats`` times, its drive served anew
   for each (its cache empty, its clock at zero), and two demerits are reported: the first replay's
   (``demerit_ms``, ``ratio_to_disksim``: one replay, as the issue's acceptance reads it) and that of
   each request's median time over the replays (``demerit_ms_median_of_repeats``,
   :func:`~diskmodel.calibrate.emulate.replay.median_of_repeats`): a stall that meets a request in fewer
   than half the replays drops out of it, while what every replay reproduces stays. The drive is
   simulated on the host's clock, so a late arrival meets it turned further: its simulated times may
   differ between replays too (``simulated_spread_over_replays_*``). Each replay's own demerit, load,
   busy and stolen CPU time (/proc/stat) are in the row's ``replays``; the lateness figures pool every
   replay's requests.
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
``--realtime-priority`` (0: the normal scheduler), and so do the kernel's threads on the loop device's way
in and out (its workqueue's workers, the softirq threads) at ``--kernel-threads-realtime`` (0: left
alone; :mod:`diskmodel.calibrate.emulate.kthreads`, each put back at the end and on a signal), from
before the drives are served: each drive's path cost is probed as its requests then travel (the path's
threads at the normal policy wait behind other processes' time slices, which makes the replay's tail).
Each request's excess (the time the replay saw less the simulated time) is split with the server's
stamps into the kernel's way in, the server's lateness and the way out, less the path's cost the server
took off (:func:`~diskmodel.calibrate.emulate.replay.excess_parts`). The load average is recorded
beside each figure: on a shared host other processes delay the path's
wake-ups. ``--replays-only`` runs part 1 alone.
Writes ``benchmarks/results/emulation_check.json`` (see ``_artifact.py``).

Usage: python benchmarks/emulation_check.py [--requests N] [--repeats R] [--hits-s S] [--realtime-priority N]
    [--kernel-threads-realtime N] [--replays-only] [--calibration-budget-s S]
    [--no-calibration | --calibration-only]
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402
from _emulation_replays import _lateness  # noqa: E402  (split out of this script)

from diskmodel.calibrate.emulate import emulated_drives, flat_drive, read_log, summarize  # noqa: E402
from diskmodel.calibrate.emulate.kthreads import KERNEL_THREAD_PREFIXES, kernel_threads_realtime  # noqa: E402
from diskmodel.calibrate.emulate.replay import median_of_repeats, replay_trace_stamped  # noqa: E402
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


def _cpu_times() -> tuple[float, float, float]:
    """(busy, steal, total) CPU time of the whole host so far [clock ticks] (/proc/stat's first line; idle and
    iowait are not busy; steal is the time this VM's CPUs waited for the host's, proc(5))."""
    with open("/proc/stat") as f:
        fields = [float(x) for x in f.readline().split()[1:]]
    steal = fields[7] if len(fields) > 7 else 0.0
    return sum(fields) - fields[3] - fields[4], steal, sum(fields)


def _replay_once(dev, trace, rt, via, cpu) -> tuple[object, dict]:
    """One replay of *trace* on *dev*: its stamps, and the host's load, busy and stolen CPU time over it."""
    load = _load()
    busy0, steal0, total0 = _cpu_times()
    start = time.monotonic()
    stamps = replay_trace_stamped(dev.path if via == "device" else dev.file_path, trace, realtime_priority=rt,
                                  cpu=cpu)
    busy1, steal1, total1 = _cpu_times()
    span = max(total1 - total0, 1.0)
    return stamps, {"replay_s": time.monotonic() - start, "load_average_before": load,
                    "load_average_after": _load(), "cpu_busy_fraction": (busy1 - busy0) / span,
                    "cpu_steal_fraction": (steal1 - steal0) / span}


def _drive_row(name, trace, params, runs: list[dict], took_by_repeat: list) -> dict:
    """A drive's row: the first replay's demerit (the single-run figure, as a replay alone gives it) and the
    demerit of each request's median time over the replays (:func:`median_of_repeats`), each divided by
    DiskSim's published one; each replay's own demerit and the host's load, busy and stolen time over it."""
    sim = simulate_requests(params[name], trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
    published = DISKSIM_PUBLISHED_DEMERIT_MS[name]
    per_replay = [disksim_demerit_s(trace.service_s, took) * 1e3 for took in took_by_repeat]
    median_ms = disksim_demerit_s(trace.service_s, median_of_repeats(took_by_repeat)) * 1e3
    sim_ms = disksim_demerit_s(trace.service_s, sim.service_s) * 1e3
    row = {"disk": name, "requests": len(trace), **runs[0], "demerit_ms": per_replay[0],
           "disksim_demerit_ms": published, "ratio_to_disksim": per_replay[0] / published,
           "repeats": len(took_by_repeat), "demerit_ms_median_of_repeats": median_ms,
           "ratio_to_disksim_median_of_repeats": median_ms / published,
           "replays": [{**run, "demerit_ms": d, "ratio_to_disksim": d / published} for run, d in zip(runs, per_replay)],
           "simulated_subset_demerit_ms": sim_ms, "simulated_subset_ratio_to_disksim": sim_ms / published,
           "mean_measured_ms": float(trace.service_s.mean() * 1e3),
           "mean_replayed_ms": float(np.mean(took_by_repeat[0]) * 1e3),
           "mean_simulated_ms": float(sim.service_s.mean() * 1e3)}
    print(f"{name:<11}{len(trace):>6}{per_replay[0]:>10.3f}{per_replay[0] / published:>7.2f}{median_ms:>10.3f}"
          f"{median_ms / published:>7.2f}{sim_ms:>10.3f}{sim_ms / published:>7.2f}{published:>9.3f}   each replay "
          + " ".join(f"{d / published:.2f}" for d in per_replay) + ", load "
          + " ".join(f"{r['load_average_before'][0]:.1f}" for r in runs) + ", steal "
          + " ".join(f"{r['cpu_steal_fraction']:.1%}" for r in runs), flush=True)
    return row


def _serve_and_replay(traces, params, rt, via, logs: Path, repeats: int = 1, cpu=None):
    """Each traced drive served from its DiskSim folder (by name, a preset of the same name, hp_c2247a, would
    be served) alone, anew for each of its *repeats* replays (each replay meets the drive as it starts: its
    cache empty, its clock at zero), just before the replay: the path's cost is probed as the drive is served,
    and it drifts with the host's load over a drive's replay and the ones before it. Returns each drive's
    devices (torn down, their logs kept in *logs*) and replays' stamps, one per repeat, and the rows."""
    devices, rows, replayed = {}, [], {}
    for i, name in enumerate(traces):
        runs = []
        for r in range(repeats):
            folder = logs / f"replay-{i}" / f"repeat-{r}"
            folder.mkdir(parents=True)
            with emulated_drives([str(disksim_drive_folder(name))], log_dir=folder, realtime_priority=rt,
                                 say=lambda line: print(line, file=sys.stderr)) as served:
                stamps, run = _replay_once(served[0], traces[name], rt, via, cpu)
            devices.setdefault(name, []).extend(served)
            replayed.setdefault(name, []).append(stamps)
            runs.append(run)
        rows.append(_drive_row(name, traces[name], params, runs, [s.took_s for s in replayed[name]]))
    return devices, rows, replayed


def _calibration(budget_s: float, skip: bool, realtime: bool = True, drives=None):
    """The calibrations through the kernel (``_emulation_calibration.run``) and the paper's partitions
    of an emulated WD800BD (``_emulation_calibration.partitions``): (rows, partition rows, status).
    *drives*: only these drives' calibrations, no partitions (None: every drive, and the partitions)."""
    path = BENCHMARKS / "_emulation_calibration.py"
    if skip:
        return None, None, "not run (--no-calibration)"
    if not path.exists():
        return None, None, "not run (benchmarks/_emulation_calibration.py is absent)"
    spec = importlib.util.spec_from_file_location("_emulation_calibration", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.run(budget_s=budget_s, realtime=realtime, **({"drives": drives} if drives else {}))
    print(module.format_table(rows))
    if drives:
        return rows, None, "run" + (" (emulator and calibration under SCHED_FIFO)" if realtime else "")
    parts = module.partitions(budget_s, realtime=realtime)
    print(module.format_partitions(parts))
    return rows, parts, "run" + (" (emulator and calibration under SCHED_FIFO)" if realtime else "")


def _empty_folder(text: str) -> Path:
    """``--keep-logs``' value: a folder that does not exist yet (made here) or is empty."""
    path = Path(text)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise argparse.ArgumentTypeError(f"--keep-logs {text!r}: not a new or empty folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


#: Drives --drives may name with --calibration-only besides the traced ones (the calibration's own).
CALIBRATION_ONLY_DRIVES = ("wd800bd",)


def _drive_names(text: str) -> list[str]:
    """``--drives``' value: traced drives' names, comma-separated, each one of DiskSim's seven (or, for the
    calibrations alone, one of :data:`CALIBRATION_ONLY_DRIVES`)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in DISKSIM_PUBLISHED_DEMERIT_MS and n not in CALIBRATION_ONLY_DRIVES]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"--drives {text!r}: not a traced drive: {', '.join(bad) or '(none)'}")
    return list(dict.fromkeys(names))


def _merged_with_artifact(results_dir, rows, figures, details, notes):
    """``--drives``: the existing artifact's figures, details and notes with these drives' rows in place of
    theirs (the other drives' rows kept, in DiskSim's order), the demerit figures recomputed over the merged
    rows; the pooled lateness and excess figures stay the earlier run's (they pool every drive's requests,
    which the rows do not hold), and a note says which run each drive's row is from."""
    import json

    target = Path(results_dir or BENCHMARKS / "results") / "emulation_check.json"
    if not target.exists():
        return figures, details, notes
    old = json.loads(target.read_text())
    when = time.strftime("%Y-%m-%dT%H:%M UTC", time.gmtime())
    new = {r["disk"]: {**r, "replayed_alone_utc": when} for r in rows}
    merged = [new.get(r["disk"], r) for r in old.get("details", {}).get("drives", [])]
    merged += [r for name, r in new.items() if name not in {m["disk"] for m in merged}]
    merged.sort(key=lambda r: list(DISKSIM_PUBLISHED_DEMERIT_MS).index(r["disk"]))
    out_figures = {**old.get("figures", {}), **_demerit_figures(merged)}
    out_details = {**old.get("details", {}), "drives": merged}
    out_details.setdefault("replays_alone", []).append(
        {"drives": list(new), "date_utc": when, "load_average_at_start": details["load_average_at_start"],
         "load_average_at_end": details["load_average_at_end"], "drive_figures": figures})
    note = (f"{', '.join(new)} replayed again alone (--drives) at {when}: their rows in details.drives, and "
            "worst_demerit_ratio_to_disksim and drives_within_demerit_target over the merged rows, are from that "
            "run; the pooled lateness and excess figures are the earlier run's (that run's own pooled figures "
            "are in details.replays_alone)")
    return out_figures, out_details, list(old.get("notes", [])) + notes + [note]


def _demerit_figures(rows) -> dict:
    """The demerit figures over *rows*: the worst single-run ratio to DiskSim's published demerit and the drives
    within the target, and the same of each request's median over the replays, over the rows that have it
    (a row of a run before the replays were repeated has none)."""
    single = [r["ratio_to_disksim"] for r in rows]
    median = {r["disk"]: r["ratio_to_disksim_median_of_repeats"] for r in rows
              if r.get("ratio_to_disksim_median_of_repeats") is not None}
    repeats = sorted({r["repeats"] for r in rows if r["disk"] in median})
    of = f"{len(median)} drives" + (f", {'/'.join(map(str, repeats))} replays each" if repeats else "")
    return {
        "worst_demerit_ratio_to_disksim": figure(max(single), "", f"worst ratio of the replayed demerit (one "
                                                 f"replay) to DiskSim's published one ({len(rows)} drives)",
                                                 decimals=2, headline=True, target=DEMERIT_RATIO_TARGET),
        "drives_within_demerit_target": figure(sum(x <= DEMERIT_RATIO_TARGET for x in single), "drives",
                                               f"drives whose replayed demerit (one replay) is within "
                                               f"{DEMERIT_RATIO_TARGET}x DiskSim's", decimals=0),
        "worst_demerit_ratio_median_of_repeats": figure(
            max(median.values(), default=None), "", "worst ratio to DiskSim's published demerit of the demerit of "
            f"each request's median time over its replays ({of})", decimals=2, headline=True,
            target=DEMERIT_RATIO_TARGET),
        "drives_within_demerit_target_median_of_repeats": figure(
            sum(x <= DEMERIT_RATIO_TARGET for x in median.values()), "drives", f"drives whose demerit of each "
            f"request's median time over its replays is within {DEMERIT_RATIO_TARGET}x DiskSim's ({of})",
            decimals=0),
    }


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
    rows, parts, status = _calibration(args.calibration_budget_s, False, realtime=bool(args.realtime_priority),
                                       drives=args.drives)
    before = old.get("details", {}).get("calibration") or {}
    if args.drives:   # the other drives' rows and the partitions kept, with the load of the run they are from
        new = {r["drive"]: r for r in rows}
        kept = [r["drive"] for r in before.get("rows") or [] if r["drive"] not in new]
        rows = [new.pop(r["drive"], r) for r in before.get("rows") or []] + list(new.values())
        parts = before.get("partitions")
        status = (f"{status}; only {', '.join(args.drives)} rerun, the rest ({', '.join(kept) or 'no drive'}"
                  f"{', the partitions' if parts else ''}) from the run at load "
                  f"{before.get('load_average_at_start')} at its start")
    figures = {k: v for k, v in old.get("figures", {}).items()
               if not k.startswith(("calibration_", "partition_"))}
    figures.update(_calibration_figures(rows, parts))
    details = dict(old.get("details", {}))
    # the artifact's options and environment stay those of the run its other figures are from; this run's go here
    run_options = options_of(parser, args)
    details["calibration"] = {"status": status, "rows": rows, "partitions": parts,
                              "load_average_at_start": load_start, "load_average_at_end": _load(),
                              "options": run_options["options"], "date_utc": time.strftime("%Y-%m-%dT%H:%M UTC",
                                                                                           time.gmtime())}
    if "environment" in old:
        details.setdefault("environment_of_the_other_figures", old["environment"])
    notes = [n for n in old.get("notes", []) if not n.startswith("calibration section")]
    when = old.get("environment", {}).get("date_utc")
    notes.append("calibration section rerun alone (--calibration-only); the other figures are from the run of "
                 f"{when}" if when else "calibration section run alone (--calibration-only)")
    kept = {k: old[k] for k in ("options", "non_default_options") if k in old}
    write_result("emulation_check", figures, options=kept if "options" in kept else run_options, details=details,
                 notes=notes, results_dir=args.results_dir)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600,
                        help="requests of each trace replayed, from its start (default: 600; 0: the whole trace)")
    parser.add_argument("--repeats", type=int, default=3, metavar="R",
                        help="replays of each trace, each on its drive served anew; the demerit is reported of the "
                             "first replay alone and of each request's median time over the R replays (default: "
                             "3; 1: one replay)")
    parser.add_argument("--replay-cpu", type=int, default=None, metavar="CPU",
                        help="run the replay on this CPU alone (default: wherever the scheduler puts it)")
    parser.add_argument("--hits-s", type=float, default=5.0, help="seconds of each throughput run (default: 5)")
    parser.add_argument("--via", choices=("device", "file"), default="device",
                        help="replay on the loop device, or on the file nbdfuse exposes under it (one hop fewer: no "
                             "loop worker thread, no block-layer completion) (default: device)")
    parser.add_argument("--realtime-priority", type=int, default=40,
                        help="SCHED_FIFO priority of the emulator and the replay (default: 40; 0: not real-time)")
    parser.add_argument("--kernel-threads-realtime", type=int, default=40, metavar="N",
                        help="also run the kernel's softirq threads and unbound workqueue workers (the loop device's "
                             "way in and out) under SCHED_FIFO N for the run, each put back afterwards, also on "
                             "SIGINT, SIGTERM, SIGHUP and SIGQUIT; they serve every process on the host "
                             "(default: 40; 0: left alone)")
    parser.add_argument("--replays-only", action="store_true",
                        help="only the trace replays: no throughput runs, no calibration (default: all)")
    parser.add_argument("--calibration-budget-s", type=float, default=120.0,
                        help="device-time budget of each calibration (default: 120)")
    parser.add_argument("--no-calibration", action="store_true", help="skip the calibrations (default: run them)")
    parser.add_argument("--calibration-only", action="store_true",
                        help="run the calibrations alone and put them into the existing artifact (its other "
                             "figures kept)")
    parser.add_argument("--drives", type=_drive_names, metavar="NAME[,NAME...]",
                        help="replay only these traced drives (of " + ", ".join(DISKSIM_PUBLISHED_DEMERIT_MS)
                        + ") and put their rows into the existing artifact, the other drives' rows kept; "
                          "implies --replays-only (default: all seven, a new artifact); with --calibration-only, "
                          "calibrate only these (also wd800bd), the other drives' rows and the partitions kept")
    parser.add_argument("--keep-logs", type=_empty_folder, metavar="DIR",
                        help="keep each drive's request log and the replay's issue and completion stamps "
                             "(NAME-stamps.npz, NAME-stamps-1.npz... one per replay, monotonic clock [s]) in DIR, "
                             "a new or empty folder (default: a temporary folder, removed)")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    args.replays_only = args.replays_only or bool(args.drives)
    if args.requests < 0 or args.hits_s <= 0 or not 0 <= args.realtime_priority <= 99 \
            or not 0 <= args.kernel_threads_realtime <= 99 or args.repeats < 1:
        parser.error("--requests must be >= 0, --hits-s > 0, --realtime-priority and --kernel-threads-realtime 0-99, "
                     "--repeats >= 1")
    if args.replay_cpu is not None and args.replay_cpu not in os.sched_getaffinity(0):
        parser.error(f"--replay-cpu {args.replay_cpu}: not one of this process's CPUs "
                     f"{sorted(os.sched_getaffinity(0))}")
    if args.calibration_only:
        return _calibration_only(args, parser)
    if set(args.drives or ()) & set(CALIBRATION_ONLY_DRIVES):
        parser.error(f"--drives: {', '.join(CALIBRATION_ONLY_DRIVES)} only with --calibration-only (not traced)")
    rt = args.realtime_priority or None
    traces, params = {}, {}
    for name in args.drives or DISKSIM_PUBLISHED_DEMERIT_MS:
        files = read_drive_folder(disksim_drive_folder(name))
        trace = files.read_trace()
        traces[name] = trace.head(args.requests) if args.requests else trace
        params[name] = drive_parameters(files)
    notes = []
    if args.requests:
        notes.append(f"each trace's first {args.requests} requests replayed (the whole traces take about "
                     f"8 minutes of device time each); DiskSim's published demerits are the whole traces'")
    load_start = _load()
    print(f"{'disk':<11}{'reqs':>6}{'demerit':>10}{'ratio':>7}{'median':>10}{'ratio':>7}{'sim only':>10}{'ratio':>7}"
          f"{'DiskSim':>9}")
    keep = args.keep_logs and contextlib.nullcontext(str(args.keep_logs))
    with keep or tempfile.TemporaryDirectory(prefix="diskmodel-emulation-check-") as logs:
        # the kernel's threads first: each drive's path cost is probed as its requests then travel
        with kernel_threads_realtime(args.kernel_threads_realtime or None) as kernel_changed:
            by_drive, rows, replayed = _serve_and_replay(traces, params, rt, args.via, Path(logs), args.repeats,
                                                         args.replay_cpu)
            devices = [d for name in traces for d in by_drive[name]]
            for name, repeats in replayed.items() if keep else ():
                for r, stamps in enumerate(repeats):
                    np.savez(Path(logs) / f"{name}-stamps{'' if r == 0 else f'-{r}'}.npz", issued_s=stamps.issued_s,
                             completed_s=stamps.completed_s)
            hits = None
            if not args.replays_only:
                folder = Path(logs) / "throughput"
                folder.mkdir()
                with emulated_drives([str(disksim_drive_folder(HIT_DRIVE)), str(_fast_hit_drive(folder)),
                                      flat_drive(0.0, 64 << 20, name="flat 0 s")], log_dir=folder,
                                     realtime_priority=rt, say=lambda line: print(line, file=sys.stderr)) as served:
                    hits = _throughput(served, args.hits_s, rt)
                devices += served
            kernel_threads_changed = kernel_changed()
        fixed_costs = {f"{d.drive} ({i})": d.fixed_cost_s for i, d in enumerate(devices)}
        server_late, client_late, short = _lateness(by_drive, traces, replayed, rows)
        hits = hits and _hit_summaries(hits, args.hits_s)
        summaries = {f"{d.drive} ({i})": d.summary for i, d in enumerate(devices)}
    p = {q: float(np.percentile(server_late, q) * 1e3) for q in (50, 99)}
    p["others"] = float(np.percentile(server_late[~short], 99) * 1e3)
    c = {q: float(np.percentile(client_late, q) * 1e3) for q in (50, 99)}
    print(f"lateness (server): p50 {p[50]:.3f} ms, p99 {p[99]:.3f} ms (of the {int((~short).sum())} requests "
          f"not shorter than the path's cost: {p['others']:.3f} ms); as the replay sees it: p50 {c[50]:.3f} ms, "
          f"p99 {c[99]:.3f} ms")
    if args.replays_only:
        cal_rows, cal_parts, cal_status = None, None, "not run (--replays-only)"
    else:
        cal_rows, cal_parts, cal_status = _calibration(args.calibration_budget_s, args.no_calibration,
                                                       realtime=bool(rt))
    print(f"calibration through the kernel: {cal_status}")
    figures = _demerit_figures(rows)
    print(f"demerit within {DEMERIT_RATIO_TARGET}x DiskSim's: {figures['drives_within_demerit_target']['value']:.0f}/"
          f"{len(rows)}, each request's median over {args.repeats} replays: "
          f"{figures['drives_within_demerit_target_median_of_repeats']['value']:.0f}/{len(rows)}; worst ratio "
          f"{figures['worst_demerit_ratio_to_disksim']['value']:.2f}, of the medians "
          f"{figures['worst_demerit_ratio_median_of_repeats']['value']:.2f}")
    figures.update({
        "lateness_p50_ms": figure(p[50], "ms", "lateness p50 on the trace replays (server)", decimals=3),
        "lateness_p99_ms": figure(p[99], "ms", "lateness p99 on the trace replays (server)", decimals=3,
                                  headline=True, target=LATENESS_P99_TARGET_MS),
        "lateness_p99_ms_not_shorter_than_path": figure(p["others"], "ms", "lateness p99 on the trace replays "
                                                        "(server), the requests whose simulated time is not "
                                                        "shorter than the path's cost", decimals=3),
        "requests_shorter_than_path_cost": figure(int(short.sum()), "requests", "replayed requests whose "
                                                  "simulated time is shorter than the path's cost (they cannot "
                                                  "complete on time)", decimals=0),
        "replay_excess_p50_ms": figure(c[50], "ms", "time taken as the replay sees it less the simulated "
                                       "time, p50", decimals=3),
        "replay_excess_p99_ms": figure(c[99], "ms", "time taken as the replay sees it less the simulated "
                                       "time, p99", decimals=3),
        **(_hit_figures(hits) if hits else {}),
    })
    details = {"drives": rows, "fixed_cost_s": fixed_costs, "emulator_summaries": summaries,
               "hits": hits, "load_average_at_start": load_start, "load_average_at_end": _load(),
               "realtime_priority": rt,
               "kernel_threads_realtime": {"priority": args.kernel_threads_realtime or None,
                                           "threads_changed": kernel_threads_changed,
                                           "prefixes": list(KERNEL_THREAD_PREFIXES)},
               "calibration": {"status": cal_status, "rows": cal_rows, "partitions": cal_parts}}
    figures.update(_calibration_figures(cal_rows, cal_parts))
    if args.drives:
        figures, details, notes = _merged_with_artifact(args.results_dir, rows, figures, details, notes)
    write_result("emulation_check", figures, options=options_of(parser, args, housekeeping=("keep_logs",)),
                 details=details, notes=notes, results_dir=args.results_dir)
    return 0


def _throughput(devices, hits_s: float, rt) -> dict:
    """The three throughput runs (the module doc's part 2) on *devices*: the hit drive, its fast-bus copy and
    the zero-latency drive."""
    load_hits = _load()
    hit_dev, fast_dev, zero_dev = devices
    return {"drive": HIT_DRIVE, "per_s": _hammer(hit_dev.path, hits_s, rt), "log_path": hit_dev.log_path,
            "load_average": load_hits,
            "fast_bus": {"sector_transfer_ms": FAST_BUS_SECTOR_MS, "per_s": _hammer(fast_dev.path, hits_s, rt),
                         "log_path": fast_dev.log_path},
            "flat_zero_per_s": _hammer(zero_dev.path, hits_s, rt)}


def _hit_summaries(hits: dict, hits_s: float) -> dict:
    """*hits* with each hammered drive's request-log summary of its last runs in place of its log's path."""
    for entry in (hits, hits["fast_bus"]):
        frame = read_log(entry.pop("log_path"))
        entry["summary"] = summarize(frame.iloc[-int(entry["per_s"] * hits_s * 0.9):])
    fast = hits["fast_bus"]
    print(f"{HIT_DRIVE} cache hits: {hits['per_s']:.0f}/s (hits {hits['summary']['hits']}); {HIT_DRIVE} with a "
          f"fast bus: {fast['per_s']:.0f}/s (hits {fast['summary']['hits']}, simulated service mean "
          f"{fast['summary']['mean_service_s'] * 1e3:.3f} ms); flat 0 s drive: {hits['flat_zero_per_s']:.0f}/s; "
          f"load {hits['load_average'][0]:.1f}")
    return hits


def _hit_figures(hits: dict) -> dict:
    return {
        "cache_hits_per_s": figure(hits["per_s"], "1/s", f"{HIT_DRIVE} cache hits served per second (each takes "
                                   f"its simulated time)", decimals=0, headline=True),
        "fast_bus_cache_hits_per_s": figure(hits["fast_bus"]["per_s"], "1/s", f"cache hits served per second by "
                                            f"{HIT_DRIVE} with a {FAST_BUS_SECTOR_MS} ms/sector bus (a hit's "
                                            f"simulated time about 0.19 ms; the issue asks at least "
                                            f"{HITS_PER_S_TARGET:.0f})", decimals=0, headline=True),
        "flat_zero_requests_per_s": figure(hits["flat_zero_per_s"], "1/s", "requests per second of a zero-latency "
                                           "drive (path and server alone)", decimals=0, headline=True),
    }

if __name__ == "__main__":
    sys.exit(run_main(main))
