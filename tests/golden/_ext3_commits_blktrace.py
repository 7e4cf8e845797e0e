"""Make ``ext3_commits_blktrace.json``: blktrace of ext3's loop device (the iopath check's page-cache
cells: :func:`diskmodel.calibrate.trace.fs_cells.run_fs_cell`, a fresh 1 GiB ext3, data=ordered) while
a program writes many 60 KiB files, then sync(2). Two cells:

- ``timed``: 800 files, one every 10 ms (8 s): the commit 5 s after the transaction's first change
  writes the dirty files back;
- ``full``: 6,000 files at once: the running transaction fills its share of the journal before the
  commit timer, twice.

Needs root, blktrace (or the tracefs route), mkfs.ext3.

    python tests/golden/_ext3_commits_blktrace.py OUT.json
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from diskmodel.calibrate.trace.fs_cells import files_workload, run_fs_cell

FILE_BYTES = 61440
CELLS = {"timed": (800, 0.01), "full": (6000, 0.0)}


def main(out: str) -> None:
    cells = []
    for name, (files, gap) in CELLS.items():
        w = files_workload(files, FILE_BYTES, gap)
        trace, device, ra_kb = run_fs_cell("ext3", w, "nolimit")
        s = trace.devices[device].stream if device in trace.devices else next(iter(trace.devices.values())).stream
        rows = [[int(o), int(b), int(n), int(f), round(float(t), 6)]
                for o, b, n, f, t in zip(s.op, s.offset_bytes, s.size_bytes, s.flags, s.time_s)]
        cells.append({"cell": name, "files": files, "file_bytes": FILE_BYTES, "gap_s": gap, "device": device,
                      "read_ahead_kb": ra_kb, "requests": rows})
    doc = {"kernel": os.uname().release, "columns": ["op", "offset_bytes", "size_bytes", "flags", "issue_s"],
           "cells": cells}
    Path(out).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
