"""PostMark in a loop image and on the raw partition, on an emulated drive: the kernel's ordering beside the model's.

    python benchmarks/loop_postmark_check.py [--drive wd800bd]
        [--workload postmark:files=2000,low=1k,high=100k,transactions=10000] [--repeats 2]
        [--cells 'native ext3|ext3 on sparse loop|ext3 on zero-filled loop'] [--log-dir DIR] [--results-dir DIR]

Needs root, nbdkit with its Python plugin and nbdfuse (``diskmodel emulate``'s needs), mkfs.ext3, losetup,
dd, truncate and postmark. Is a disk image slower than the partition it sits on? The loop-image study
(Dagenais) measured copies, and so does ``stacks_check.py``; this asks the paper's own workload, PostMark
(Djordjevic & Timcenko's Test 1 sizes, fewer files and transactions), on the loop-image study's stacks:
native ext3 on a partition of one emulated drive, and ext3 in a sparse and in a zero-filled image in
that ext3, mounted through a buffered loop device (``stacks_check.py``'s ``build``: the same partition,
image size and queue settings).

Each cell gets a fresh emulated drive; PostMark runs ``--repeats`` times on the stack (the real tool,
:mod:`diskmodel.calibrate.bench.tool_workloads`: caches dropped before, ``sync -f`` after, timed to the
end of that sync), and as often on a tmpfs just before, whose median is the pace the model puts the
workload's operations on (:mod:`diskmodel.model.iopath.workloads_pace`). The model predicts the same
stack on the drive the emulator serves (``stacks_check.model_stack``). Beside the times, the drive's own
view of each run (its request log: requests, bytes written, busy time), and the model's.

Figures: the measured ratio native / sparse-loop time and the model's (a ratio above 1: the image is
faster), whether the model orders the cells as measured, and the median |error| of the predicted times.
Writes ``benchmarks/results/loop_postmark_check.json``.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402
from _drive_view import drive_view  # noqa: E402

CELLS = ("native ext3", "ext3 on sparse loop", "ext3 on zero-filled loop")
#: The programs the stacks and the workload need on the host (the emulator checks its own).
TOOLS = ("losetup", "mount", "umount", "mkfs.ext3", "dd", "truncate", "postmark", "sync")
WORKLOAD = "postmark:files=2000,low=1k,high=100k,transactions=10000"


def measure_cell(label: str, args, say) -> dict:
    import stacks_check as sc
    from diskmodel.calibrate.bench import tool_workloads
    from diskmodel.calibrate.emulate import emulated_drives
    from diskmodel.calibrate.harness import runstate

    with runstate.ensure_run("loop_postmark_check") as run:
        logs = Path(args.log_dir) / label.replace(" ", "_") if args.log_dir else run.temp_dir("reqlog-")
        logs.mkdir(parents=True, exist_ok=True)
        with emulated_drives([args.drive], say=say, log_dir=logs) as devices:
            pace = [tool_workloads.pace_on_tmpfs(args.workload) for _ in range(args.repeats)]
            made: list = []
            try:
                mnt = sc.build(run, made, devices[0].path, label, run.temp_dir("stack-"))
                runs = [tool_workloads.measure(args.workload, mnt) for _ in range(args.repeats)]
            finally:
                report = run.undo(made)
                if report.left:
                    raise RuntimeError(f"{label}: teardown left {report.left}")
        # read once the emulator has closed it: the mean of the runs' spans
        view = drive_view(devices[0].log_path, [("run", r.started_unix_s, r.started_unix_s + r.elapsed_s)
                                                for r in runs], (sc.PART_START, sc.PART_START + sc.PART_BYTES))["run"]
    times = [r.elapsed_s for r in runs]
    app_s = statistics.median(pace)
    predicted = sc.predicted(sc.model_stack(label, args.drive), args.workload, app_s)
    measured_s = statistics.median(times)
    cell = {"stack": label, "drive": args.drive, "workload": args.workload, "definition": runs[0].definition,
            "measured_s": measured_s, "runs_s": times, "spread": (max(times) - min(times)) / measured_s,
            "tmpfs_s": pace, "emulated_drive": view, "predicted": predicted,
            "error_pct": 100.0 * (predicted["elapsed_s"] / measured_s - 1.0)}
    sda = predicted["devices"]["sda"]
    say(f"{label}: measured {measured_s:.1f} s (runs {', '.join(f'{t:.1f}' for t in times)}; the drive wrote "
        f"{view['write_bytes'] / 1e6:.0f} MB in {view['requests']:.0f} requests), predicted "
        f"{predicted['elapsed_s']:.1f} s (the model's drive writes {sda['write_bytes'] / 1e6:.0f} MB in "
        f"{sda['requests']} requests): {cell['error_pct']:+.0f} %")
    return cell


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drive", default="wd800bd", help="the drive to emulate (default: %(default)s)")
    parser.add_argument("--workload", default=WORKLOAD, help="the PostMark workload (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=2, help="runs on each stack and on tmpfs (default: %(default)s)")
    parser.add_argument("--cells", default="|".join(CELLS), help="the stacks, |-separated (default: %(default)s)")
    parser.add_argument("--log-dir", default="", help="keep the emulated drives' request logs here (default: not kept)")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        print(f"loop_postmark_check: --repeats {args.repeats}: must be at least 1", file=sys.stderr)
        return 2
    if not args.workload.startswith("postmark"):
        print(f"loop_postmark_check: --workload {args.workload}: must be a postmark workload", file=sys.stderr)
        return 2
    given = [c for c in args.cells.split("|") if c]
    labels = [c for c in CELLS if c in given]  # native first, whatever the order given
    if set(given) - set(CELLS) or labels[:1] != [CELLS[0]] or len(labels) < 2:
        print(f"loop_postmark_check: --cells {args.cells}: must hold native ext3 and at least one of "
              f"{', '.join(CELLS[1:])}", file=sys.stderr)
        return 2
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        print(f"loop_postmark_check: missing tools: {', '.join(missing)}", file=sys.stderr)
        return 2
    say = lambda line: print(line, flush=True)  # noqa: E731
    started = time.monotonic()
    cells = [measure_cell(label, args, say) for label in labels]
    native = cells[0]
    ratios = []
    for c in cells[1:]:
        measured = native["measured_s"] / c["measured_s"]
        model = native["predicted"]["elapsed_s"] / c["predicted"]["elapsed_s"]
        decided = abs(measured - 1.0) > max(native["spread"], c["spread"])
        ratios.append({"stack": c["stack"], "measured_native_over_loop": measured, "predicted_native_over_loop": model,
                       "decided": decided, "held": (measured > 1) == (model > 1)})
        say(f"native / {c['stack']}: measured {measured:.2f}, predicted {model:.2f}: "
            f"{'held' if ratios[-1]['held'] else 'NOT held'}{'' if decided else ' (within the spread)'}")
    sparse = next((r for r in ratios if r["stack"] == "ext3 on sparse loop"), ratios[0])
    median = statistics.median(abs(c["error_pct"]) for c in cells)
    figures = {
        "median_abs_error_pct": figure(median, "%", "median |error| of the predicted PostMark times over the stacks",
                                       decimals=1, headline=True, target=15.0),
        "measured_native_over_loop": figure(sparse["measured_native_over_loop"], "",
                                            f"native ext3's time over {sparse['stack']}'s, measured (above 1: the "
                                            "image is faster)", decimals=2, headline=True),
        "predicted_native_over_loop": figure(sparse["predicted_native_over_loop"], "",
                                             "the same ratio, predicted", decimals=2, headline=True),
        "orderings_held": figure(sum(r["held"] for r in ratios), "", f"loop images the model orders against native "
                                 f"as measured (of {len(ratios)})", decimals=0),
        "run_time_s": figure(time.monotonic() - started, "s", "run time of the check", decimals=0),
    }
    write_result("loop_postmark_check", figures, options=options_of(parser, args, housekeeping=("log_dir",)),
                 details={"cells": cells, "ratios": ratios}, results_dir=args.results_dir)
    print(f"median_abs_error_pct: {median:.1f}")
    print(f"measured_native_over_loop: {sparse['measured_native_over_loop']:.2f}")
    print(f"predicted_native_over_loop: {sparse['predicted_native_over_loop']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
