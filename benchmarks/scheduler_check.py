"""The drive queue's scheduler, the kernel's against the model's, on an emulated WD800BD.

    python benchmarks/scheduler_check.py [--reuse FILE] [--requests N] [--iodepth N]

fio's random 4 KiB O_DIRECT reads (libaio, ``--iodepth``, ``--requests`` of them over the whole device) on an
emulated WD800BD (``diskmodel emulate``'s host path: a loop device over nbdfuse, 128 driver tags), once
under the loop device's own scheduler none and once under mq-deadline, each traced with blktrace: the
span from the first request queued to the last completed. The model times the same job on the drive the
emulator serves, with none, and with mq-deadline at the device's driver tags and nr_requests
(:mod:`diskmodel.model.iopath.scheduler`). Needs root, fio and what ``diskmodel emulate`` needs, unless
``--reuse FILE`` takes the measurement from a file this script (or ``tests/golden/_mq_deadline_randread.py``)
wrote.

The last line is ``mq_deadline_error_pct: X``, the model's error on the kernel's mq-deadline run. Writes
``benchmarks/results/scheduler_check.json`` (see ``_artifact.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import add_results_dir_option, figure, options_of, run_main, write_result  # noqa: E402

SCHEDULERS = ("none", "mq-deadline")


def _queue(dev: str, name: str) -> Path:
    return Path("/sys/class/block") / os.path.basename(dev) / "queue" / name


def events(text: str) -> dict:
    """From blkparse's text: each event's count, the most requests at the driver (D less C) and the most
    waiting in the scheduler (I less D) at once, and the span from the first Q to the last C [s]."""
    counts: dict = {}
    at_driver = waiting = most_driver = most_waiting = 0
    first_q = last_c = None
    for line in text.splitlines():
        f = line.split()
        if len(f) < 7 or f[5] not in ("Q", "I", "D", "C", "M"):
            continue
        ev, t = f[5], float(f[3])
        counts[ev] = counts.get(ev, 0) + 1
        if ev == "Q" and first_q is None:
            first_q = t
        elif ev == "I":
            waiting += 1
        elif ev == "D":
            waiting, at_driver = waiting - 1, at_driver + 1
        elif ev == "C":
            at_driver, last_c = at_driver - 1, t
        most_driver, most_waiting = max(most_driver, at_driver), max(most_waiting, waiting)
    return {"events": counts, "max_at_driver": most_driver, "max_in_scheduler": most_waiting,
            "span_s": round(last_c - first_q, 6)}


def measure(requests: int, iodepth: int) -> dict:
    """The kernel's runs (module docstring), one per scheduler, as a dict (the golden file's form)."""
    from diskmodel.calibrate.emulate import emulated_drives
    from diskmodel.calibrate.trace.record import record

    cells = []
    with emulated_drives(["wd800bd"]) as drives:
        dev = drives[0].path
        before = _queue(dev, "scheduler").read_text().split("[")[1].split("]")[0]
        try:
            for sched in SCHEDULERS:
                _queue(dev, "scheduler").write_text(sched)
                with tempfile.TemporaryDirectory() as tmp:
                    argv = ["fio", "--name=rr", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
                            "--ioengine=libaio", f"--iodepth={iodepth}", f"--number_ios={requests}",
                            f"--size={drives[0].size_bytes // 4096 * 4096}", "--randrepeat=1", "--norandommap",
                            "--output-format=json", f"--output={tmp}/fio.json"]
                    text = Path(tmp) / "blkparse.txt"
                    _, status = record(argv, [dev], text_copy=text)
                    if status != 0:
                        raise RuntimeError(f"fio exited with {status}")
                    cells.append({"scheduler": sched, "nr_requests": int(_queue(dev, "nr_requests").read_text()),
                                  "driver_tags": int((_queue(dev, "").parent / "mq" / "0" / "nr_tags").read_text()),
                                  **events(text.read_text()), "load_1min": os.getloadavg()[0]})
        finally:
            _queue(dev, "scheduler").write_text(before)
    return {"kernel": platform.release(), "drive": "wd800bd (emulated, host loop device)", "requests": requests,
            "iodepth": iodepth, "cells": cells}


def predict(measured: dict) -> dict:
    """The model's elapsed time of the measured job under each scheduler [s]."""
    from diskmodel.calibrate.emulate.drives import model_drive
    from diskmodel.model.iopath.scheduler import Scheduler
    from diskmodel.model.predictions.block_workloads import FioJob
    from diskmodel.model.predictions.results import predict_block_job
    from diskmodel.model.stacks.stack import Partition

    disk = model_drive("wd800bd", name="sda").disk
    cap = disk.capacity_bytes // 4096 * 4096
    job = FioJob("randread", 4096, measured["requests"] * 4096, iodepth=measured["iodepth"], region_bytes=cap)
    node = Partition(0, cap, "/dev/loop0", "sda")
    out = {}
    for c in measured["cells"]:
        sched = {} if c["scheduler"] == "none" else {
            "sda": Scheduler(c["scheduler"], c["driver_tags"], nr_requests=c["nr_requests"])}
        out[c["scheduler"]] = predict_block_job(node, job, {"sda": disk}, schedulers=sched).elapsed_s
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuse", type=Path, default=None,
                        help="take the kernel's runs from this file instead of measuring (e.g. "
                             "tests/golden/mq_deadline_randread_emulated.json)")
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--iodepth", type=int, default=256)
    add_results_dir_option(parser)
    args = parser.parse_args()
    if args.reuse is not None:
        try:
            measured = json.loads(args.reuse.read_text())
        except (OSError, ValueError) as exc:
            print(f"scheduler_check: error: --reuse {args.reuse}: {exc}", file=sys.stderr)
            return 2
    else:
        measured = measure(args.requests, args.iodepth)
    kernel = {c["scheduler"]: c["span_s"] for c in measured["cells"]}
    model = predict(measured)
    err = {s: (model[s] / kernel[s] - 1) * 100 for s in kernel}
    for s in SCHEDULERS:
        print(f"{s:12s} kernel {kernel[s]:7.2f} s   model {model[s]:7.2f} s   error {err[s]:+.1f} %")
    figures = {
        "mq_deadline_error_pct": figure(abs(err["mq-deadline"]), "%", "fio randread at iodepth 256 on an emulated "
                                        "WD800BD under mq-deadline: |model / kernel - 1|", decimals=1,
                                        headline=True, target=15.0),
        "none_error_pct": figure(abs(err["none"]), "%", "the same under none", decimals=1, headline=True, target=5.0),
        "kernel_ratio": figure(kernel["mq-deadline"] / kernel["none"], "", "the kernel's time under mq-deadline over "
                               "its time under none", decimals=3),
        "model_ratio": figure(model["mq-deadline"] / model["none"], "", "the model's, the same", decimals=3),
    }
    notes = [f"the kernel's runs from {args.reuse}"] if args.reuse else []
    write_result("scheduler_check", figures, options=options_of(parser, args),
                 details={"measured": measured, "model_s": model}, notes=notes, results_dir=args.results_dir)
    print(f"mq_deadline_error_pct: {abs(err['mq-deadline']):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
