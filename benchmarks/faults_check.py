"""The fault matrix, many times a cell: a signal at each phase of postmark, bench and calibrate.

    python benchmarks/faults_check.py [--repeats 20] [--subcommands postmark,bench,calibrate,emulate,...]
        [--signals SIGINT,SIGTERM,SIGHUP,SIGQUIT,SIGKILL] [--jobs N] [--time-limit-s S] [--keep-going]
        [--merge-into benchmarks/results/faults_check.json [--top-up]]

The cells and the method are tests/_faults.py's (its module docstring holds
them): a real ``diskmodel`` run is caught at a phase (a wrapper around the
tool, a paused read or fsync, the run's state file), sent the signal, and the
system is looked at afterwards (loop devices, mounts, cgroups, the run's
folders, the state folder, the scratch, the output, the run's descendants);
SIGKILL is followed by ``diskmodel cleanup``. tests/test_faults.py runs each
cell $DISKMODEL_FAULT_REPEATS times (default 1); this script runs each cell
``--repeats`` times, round-robin over the cells (so that a run stopped by
``--time-limit-s`` has counted every cell about as often; ``--by-cell`` runs
each cell's repeats before the next cell's instead, so that such a run has as
many cells as it can at full repeats), ``--jobs`` trials
at a time (each trial has its own folders, run state and marks, and looks
only for what its own run made), and stops at the first failing trial
unless ``--keep-going``. The emulated drive's cells deliver SIGINT and
SIGKILL alone (tests/_faults.py's ``CELL_SIGNALS``).

Needs root (loop devices, mounts, cgroups), postmark, fio, mkfs.ext3/ext4,
for the emulated drive (emulate, postmark_emulate, bench_emulate) nbdkit with its Python plugin,
nbdfuse and /dev/fuse, for trace record blktrace. The realtime cells run one at a time.
Writes ``benchmarks/results/faults_check.json`` (see ``_artifact.py``): the
share of trials that left nothing and said so (headline), the trial count,
and per cell the trials run and passed, the first problems seen, and the date
and commit the cell ran at; per subcommand the cells, trials and clean trials;
the load average seen during the run (sampled each minute); the runs that made
it (date, commit, subcommands, trials, wall time, load). With
``--merge-into ARTIFACT`` the cells this run does not re-run are kept from an
earlier artifact (with their own dates, commits and repeats), so that one
subcommand's cells can be re-run many times without losing the others'; the
figures then count every cell of the merged artifact. With ``--top-up`` as
well, a cell the earlier artifact holds is run only as many more times as it
takes to reach ``--repeats``, its earlier trials counted with this run's,
where the code under test (calibrate/, tests/_faults.py, tests/_leftovers.py,
tests/_helpers.py) is the same at the earlier cell's commit as here (else the cell starts afresh).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _artifact import (run_main, _git, add_results_dir_option, check_artifact, figure, options_of,  # noqa: E402
                       write_result)

import _faults  # noqa: E402


def _names(allowed):
    def parse(text: str) -> list[str]:
        names = [t.strip() for t in text.split(",") if t.strip()]
        bad = [n for n in names if n not in allowed]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(allowed)}")
        return names
    return parse


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
        return value
    return parse


def earlier_cells(path: Path) -> tuple[dict[str, dict], list[dict]]:
    """The cells of an earlier faults_check artifact, each with the date (UTC), commit and repeats it ran at
    (a cell that has none of its own takes its artifact's), and the runs that made it (:func:`main`'s
    records; one made from its top level where it has none); ValueError in one line naming *path*."""
    try:
        document = check_artifact(json.loads(path.read_text()), str(path))
    except OSError as exc:
        raise ValueError(f"--merge-into {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--merge-into {path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if document["benchmark"] != "faults_check" or not isinstance(document["details"].get("cells"), dict):
        raise ValueError(f"--merge-into {path}: not a faults_check artifact with cells")
    env, options, details = document["environment"], document["options"], document["details"]
    cells = {key: {"date_utc": env.get("date_utc"), "git_commit": env.get("git_commit"),
                   "repeats": options.get("repeats"), **cell} for key, cell in details["cells"].items()}
    runs = details.get("runs")
    if runs is None:
        ran = {k: c for k, c in cells.items() if k.split("-", 1)[0] in options.get("subcommands", ())}
        first = min(ran.values(), key=lambda c: c["date_utc"] or "", default={})   # when the run began
        runs = [{"date_utc": first.get("date_utc"), "git_commit": first.get("git_commit"),
                 "subcommands": options.get("subcommands"), "cells": len(ran),
                 "trials": sum(c["trials"] for c in ran.values()), "clean": sum(c["passed"] for c in ran.values()),
                 "repeats": options.get("repeats"), "jobs": options.get("jobs"),
                 "wall_s": round(document["figures"]["wall_s"]["value"]),
                 "load_average_1min": details.get("load_average_1min", env.get("load_average"))}]
    return cells, runs


#: What a trial tests and how: a cell's earlier trials count towards --top-up only where these are unchanged.
CODE_UNDER_TEST = ("calibrate", "tests/_faults.py", "tests/_leftovers.py", "tests/_helpers.py")


def same_code_as(commit: str | None) -> bool:
    """Whether the code under test here (the working tree) is that of *commit* (git diff, no output)."""
    if not commit:
        return False
    return _git("diff", "--quiet", commit, "--", *CODE_UNDER_TEST) is not None


def by_subcommand(cells: dict[str, dict]) -> dict[str, dict]:
    """{subcommand: {cells, trials, clean}} of cells keyed SUBCOMMAND-PHASE-SIGNAL."""
    out: dict[str, dict] = {}
    for key, cell in cells.items():
        sub = out.setdefault(key.split("-", 1)[0], {"cells": 0, "trials": 0, "clean": 0})
        sub["cells"] += 1
        sub["trials"] += cell["trials"]
        sub["clean"] += cell["passed"]
    return out


class LoadSampler(threading.Thread):
    """The 1-minute load average, sampled every *every_s* seconds until :meth:`stop`."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__(daemon=True)
        self.every_s, self.samples, self._done = every_s, [os.getloadavg()[0]], threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.every_s):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> dict:
        self._done.set()
        self.samples.append(os.getloadavg()[0])
        return {"min": round(min(self.samples), 2), "max": round(max(self.samples), 2),
                "mean": round(sum(self.samples) / len(self.samples), 2), "samples": len(self.samples)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=_positive(int), default=20, help="trials per cell (default 20)")
    p.add_argument("--subcommands", type=_names(tuple(_faults.PHASES)), default=list(_faults.PHASES),
                   help=f"comma-separated (default {','.join(_faults.PHASES)})")
    p.add_argument("--signals", type=_names(tuple(s.name for s in _faults.ALL_SIGNALS)),
                   default=[s.name for s in _faults.ALL_SIGNALS],
                   help="comma-separated (default SIGINT,SIGTERM,SIGHUP,SIGQUIT,SIGKILL)")
    p.add_argument("--cells", default=None,
                   help="comma-separated cells (SUBCOMMAND-PHASE-SIGNAL) to run alone (default: every cell the "
                        "other options select)")
    p.add_argument("--jobs", type=_positive(int), default=1, help="trials run at a time (default 1)")
    p.add_argument("--by-cell", action="store_true",
                   help="each cell's repeats before the next cell's (default: round-robin over the cells)")
    p.add_argument("--time-limit-s", type=_positive(float), default=None,
                   help="stop starting trials after this long [s] (default: none)")
    p.add_argument("--keep-going", action="store_true", help="go on after a failing trial (default: stop)")
    p.add_argument("--merge-into", type=Path, default=None, metavar="ARTIFACT",
                   help="an earlier faults_check artifact whose cells this run does not re-run are kept (each "
                        "with the date, commit and repeats it ran at; the re-run ones are replaced), the figures "
                        "then counting every cell (default: this run's cells alone)")
    p.add_argument("--top-up", action="store_true",
                   help="with --merge-into: run each cell only until it has --repeats trials, counting the "
                        "earlier artifact's trials of it where the code under test (calibrate/, "
                        "tests/_faults.py, tests/_leftovers.py, tests/_helpers.py) is unchanged since (default: --repeats afresh)")
    add_results_dir_option(p)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("needs root (loop devices, mounts, cgroups)")
    missing = sorted({t for s in args.subcommands for t in _faults.TOOLS[s] if shutil.which(t) is None})
    if missing:
        parser.error(f"missing tools: {', '.join(missing)}")
    cells = [(sub, phase, getattr(signal, name)) for sub in args.subcommands for phase in _faults.PHASES[sub]
             for name in args.signals if getattr(signal, name) in _faults.CELL_SIGNALS[sub]]
    if args.cells is not None:
        wanted = {c.strip() for c in args.cells.split(",") if c.strip()}
        unknown = wanted - {f"{s}-{p}-{g.name}" for s, p, g in cells}
        if unknown or not wanted:
            parser.error(f"--cells: no such cell among those selected: {', '.join(sorted(unknown)) or '(none given)'}")
        cells = [c for c in cells if f"{c[0]}-{c[1]}-{c[2].name}" in wanted]
    if args.top_up and args.merge_into is None:
        parser.error("--top-up needs --merge-into (the artifact whose trials it tops up)")
    try:
        earlier, runs = earlier_cells(args.merge_into) if args.merge_into is not None else ({}, [])
    except ValueError as exc:
        parser.error(str(exc))
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    commit = (_git("rev-parse", "HEAD") or "").strip() or None
    counts = {f"{s}-{p}-{g.name}": {"trials": 0, "passed": 0, "problems": [], "date_utc": started,
                                    "git_commit": commit, "repeats": args.repeats} for s, p, g in cells}
    needed = {key: args.repeats for key in counts}
    if args.top_up:
        for key, cell in earlier.items():
            if key in counts and same_code_as(cell.get("git_commit")):
                counts[key].update(trials=cell["trials"], passed=cell["passed"], problems=list(cell["problems"]),
                                   date_utc=cell.get("date_utc"), topped_up_utc=started)
                needed[key] = max(0, args.repeats - cell["trials"])
    ran = {"trials": 0, "passed": 0}
    load = LoadSampler()
    load.start()
    t0 = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="diskmodel-faults-"))
    order = ([(rep, cell) for cell in cells for rep in range(args.repeats)] if args.by_cell
             else [(rep, cell) for rep in range(args.repeats) for cell in cells])   # round-robin over the cells
    order = [(rep, cell) for rep, cell in order if rep < needed[f"{cell[0]}-{cell[1]}-{cell[2].name}"]]
    lock, realtime_lock = threading.Lock(), threading.Lock()
    stopped: list[str] = []

    def trial(rep: int, cell) -> None:
        sub, phase, sig = cell
        key = f"{sub}-{phase}-{sig.name}"
        with lock:
            if stopped:
                return
            if args.time_limit_s is not None and time.monotonic() - t0 > args.time_limit_s:
                stopped.append(f"--time-limit-s {args.time_limit_s:g} reached (at repeat {rep + 1} of {key})")
                return
        folder = root / f"{key}-{rep}"
        # the realtime cells tell the kernel threads their run changed by one priority (_faults.KTHREAD_PRIORITY):
        # two at once would take each other's changes for their own, so they run one at a time
        with realtime_lock if phase == "realtime" else contextlib.nullcontext():
            problems = _faults.run_cell(folder, sub, phase, sig)
        with lock:
            c = counts[key]
            c["trials"] += 1
            c["passed"] += not problems
            ran["trials"] += 1
            ran["passed"] += not problems
            print(f"{key} #{c['trials']}: {'ok' if not problems else 'FAILED'} "
                  f"({time.monotonic() - t0:.0f} s)", flush=True)
            if problems:
                c["problems"].append(problems[:6])
                print("  " + "\n  ".join(problems), flush=True)
                if not args.keep_going and not stopped:
                    stopped.append(f"stopped at the first failing trial ({key} #{rep + 1})")
        if not problems:
            shutil.rmtree(folder, ignore_errors=True)

    _faults.flat_calibration()   # made once, before the trials share it
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for future in [pool.submit(trial, rep, cell) for rep, cell in order]:
                future.result()
    finally:
        wall_s = time.monotonic() - t0
        load_seen = load.stop()
    stopped = stopped[0] if stopped else None
    ran_trials, ran_passed = ran["trials"], ran["passed"]
    kept = {k: c for k, c in earlier.items() if k not in counts}
    counts = {**kept, **counts}
    trials = sum(c["trials"] for c in counts.values())
    passed = sum(c["passed"] for c in counts.values())
    full = [k for k, c in counts.items() if c["trials"] >= c["repeats"] and c["passed"] == c["trials"]]
    figures = {
        "trials_clean_pct": figure(100.0 * passed / trials if trials else None, "%",
                                   "trials that said so and left nothing (signal at a phase, or SIGKILL "
                                   "then cleanup)", decimals=1, headline=True),
        "trials": figure(trials, "count", "trials run", decimals=0),
        "cells_clean_at_full_repeats": figure(len(full), "count",
                                              f"cells with all of their repeats clean, of {len(counts)}",
                                              decimals=0),
        "wall_s": figure(wall_s, "s", f"wall time of this run's trials ({args.jobs} at a time)",
                         decimals=0),
    }
    notes = [stopped] if stopped else []
    if kept:
        notes.append(f"{len(kept)} cells kept from {args.merge_into} (not re-run: each with its own date, "
                     f"commit and repeats); {len(cells)} cells run here, {ran_passed} of {ran_trials} trials clean")
    topped = [k for k, c in counts.items() if "topped_up_utc" in c]
    if topped:
        notes.append(f"--top-up: {len(topped)} cells' earlier trials counted with this run's (the code under test "
                     f"unchanged since)")
    if ran_passed < ran_trials:
        notes.append(f"failing trials' folders kept under {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    runs.append({"date_utc": started, "git_commit": commit, "subcommands": args.subcommands, "cells": len(cells),
                 "trials": ran_trials, "clean": ran_passed, "repeats": args.repeats, "jobs": args.jobs,
                 "wall_s": round(wall_s), "load_average_1min": load_seen})
    details = {"cells": counts, "subcommands": by_subcommand(counts), "load_average_1min": load_seen,
               "runs": runs}
    write_result("faults_check", figures, options=options_of(parser, args), details=details, notes=notes,
                 results_dir=args.results_dir)
    print(f"trials_clean (this run): {ran_passed} of {ran_trials}; all cells: {passed} of {trials}, "
          f"{len(full)} of {len(counts)} cells clean at their repeats; load average {load_seen['min']:g}-"
          f"{load_seen['max']:g}")
    for sub, c in by_subcommand(counts).items():
        print(f"  {sub}: {c['cells']} cells, {c['clean']} of {c['trials']} trials clean")
    return 0 if ran_passed == ran_trials and not stopped else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
