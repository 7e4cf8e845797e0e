"""Make ``fio_direct_randwrite_blktrace.json``: blktrace of the loop device under a fresh 1 GiB ext4, xfs
and btrfs (the iopath check's page-cache cells: :func:`diskmodel.calibrate.trace.fs_cells.run_fs_cell`,
no memory limit) while the real fio writes a new 16 MiB file in random 4 KiB O_DIRECT writes
(``--rw=randwrite --bs=4k --size=16M --direct=1 --ioengine=psync``, fio's defaults otherwise: it creates
the file with fallocate(2) first, fallocate=native).

Needs root, fio, blktrace (or the tracefs route), mkfs.ext4, mkfs.xfs, mkfs.btrfs.

    python tests/golden/_fio_direct_randwrite_blktrace.py OUT.json
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from diskmodel.calibrate.trace.fs_cells import fio_workload, run_fs_cell

KINDS = ("ext4", "xfs", "btrfs")


def main(out: str) -> None:
    cells = []
    w = fio_workload("randwrite", "4k", "16M", direct=True)
    for kind in KINDS:
        trace, device, ra_kb = run_fs_cell(kind, w, "nolimit")
        s = trace.devices[device].stream if device in trace.devices else next(iter(trace.devices.values())).stream
        rows = [[int(o), int(b), int(n), int(f), round(float(t), 6)]
                for o, b, n, f, t in zip(s.op, s.offset_bytes, s.size_bytes, s.flags, s.time_s)]
        cells.append({"cell": kind, "workload": w.model, "device": device, "read_ahead_kb": ra_kb, "requests": rows})
    doc = {"kernel": os.uname().release, "columns": ["op", "offset_bytes", "size_bytes", "flags", "issue_s"],
           "cells": cells}
    Path(out).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
