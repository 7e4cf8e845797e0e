"""Make ``mq_deadline_randread_emulated.json``: fio's random 4 KiB O_DIRECT reads at iodepth 256 on an
emulated WD800BD (the host's loop device over the emulator, 128 driver tags), under the loop device's
own scheduler none and under mq-deadline (nr_requests 256), each traced with blktrace: how long the
kernel took, and how many requests waited in the scheduler. Needs root, fio and what ``diskmodel
emulate`` needs.

    python tests/golden/_mq_deadline_randread.py OUT.json
"""
from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from diskmodel.calibrate.emulate import emulated_drives
from diskmodel.calibrate.trace.record import record

REQUESTS = 1500
IODEPTH = 256
SCHEDULERS = ("none", "mq-deadline")


def _queue(dev: str, name: str) -> Path:
    return Path("/sys/class/block") / os.path.basename(dev) / "queue" / name


def _events(text: str) -> dict:
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


def main(out: str) -> None:
    cells = []
    with emulated_drives(["wd800bd"]) as drives:
        dev = drives[0].path
        before = _queue(dev, "scheduler").read_text().split("[")[1].split("]")[0]
        try:
            for sched in SCHEDULERS:
                _queue(dev, "scheduler").write_text(sched)
                argv = ["fio", "--name=rr", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
                        "--ioengine=libaio", f"--iodepth={IODEPTH}", f"--number_ios={REQUESTS}",
                        f"--size={drives[0].size_bytes // 4096 * 4096}", "--randrepeat=1", "--norandommap",
                        "--output-format=json"]
                with tempfile.TemporaryDirectory() as tmp:
                    argv.append(f"--output={tmp}/fio.json")
                    text = Path(tmp) / "blkparse.txt"
                    trace, status = record(argv, [dev], text_copy=text)
                    if status != 0:
                        raise RuntimeError(f"fio exited with {status}")
                    cell = {"scheduler": sched, "nr_requests": int(_queue(dev, "nr_requests").read_text()),
                            "driver_tags": int((_queue(dev, "").parent / "mq" / "0" / "nr_tags").read_text()),
                            **_events(text.read_text()), "load_1min": os.getloadavg()[0]}
                cells.append(cell)
        finally:
            _queue(dev, "scheduler").write_text(before)
    Path(out).write_text(json.dumps({"kernel": platform.release(), "drive": "wd800bd (emulated, host loop device)",
                                     "requests": REQUESTS, "iodepth": IODEPTH,
                                     "cells": cells}, indent=1) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
