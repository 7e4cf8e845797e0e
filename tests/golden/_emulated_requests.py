"""Make ``loop_requests_wd800bd.json``: the requests an emulated drive served during seed 003's copy
steps, per stack, from a ``benchmarks/stacks_check.py --log-dir DIR`` run (each host cell's folder
holds the drive's request log and ``windows.json``, the timed steps' spans); with ``--tools``, during the
tool workloads' steps instead (``tool_requests_wd800bd.json``).

    python tests/golden/_emulated_requests.py [--tools] DIR OUT.json 'ext2, no loop layer' 'ext2, 1 loop layer' ...
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from diskmodel.calibrate.emulate import read_log


def main(root: str, out: str, labels: list[str], tools: bool = False) -> None:
    cells = []
    for folder in sorted(Path(root).glob("host*")):
        w = json.loads((folder / "windows.json").read_text())
        if w["stack"] not in labels:
            continue
        frame = read_log(folder / Path(w["log"]).name)
        start = float(frame.attrs.get("started_unix_s", 0.0))
        frame = frame[~frame["probe"].astype(bool)]
        spans = []
        for label, t0, t1 in w["windows"]:
            if label.startswith("dd:") == tools:
                continue
            f = frame[(frame.arrival_s >= t0 - start) & (frame.arrival_s <= t1 - start)]
            spans.append({"step": label, "span_s": round(t1 - t0, 6),
                          "requests": [[int(o), int(b), int(n), round(float(a - (t0 - start)), 6), round(float(s), 6)]
                                       for o, b, n, a, s in zip(f.op, f.offset_bytes, f.size_bytes, f.arrival_s,
                                                                f.service_s)]})
        cells.append({"stack": w["stack"], "spans": spans})
    doc = {"what": "requests the emulated drive (wd800bd, its per-request simulation serving a real loop device) "
                   f"served during each timed {'tool workload' if tools else 'dd'} step of "
                   "benchmarks/stacks_check.py's host cells; per request: "
                   "op (0 read, 1 write, 2 flush), offset_bytes (on the drive), size_bytes, arrival_s (from the "
                   "step's start), service_s (the simulation's)",
           "made_by": f"tests/golden/_emulated_requests.py{' --tools' if tools else ''} from a stacks_check.py "
                      "--log-dir run",
           "host_kernel": os.uname().release, "cells": cells}
    Path(out).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    tools = args[:1] == ["--tools"]
    args = args[1:] if tools else args
    main(args[0], args[1], args[2:], tools)
