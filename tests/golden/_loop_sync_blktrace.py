"""Make ``loop_sync_blktrace.json``: blktrace of both devices of a file system in a loop image (the
image's host file system's device, and the loop device) while a program creates files in the top file
system and then calls sync(2) or syncfs(2) on it. Two of stacks_check.py's host stacks (ext3 in a
zero-filled image on ext3, ext2 in a sparse image on ext2), built by its own functions on an emulated
WD800BD, each call twice. Needs root and what stacks_check needs.

    python tests/golden/_loop_sync_blktrace.py OUT.json

The program is Python's, run as an argument vector: it creates ``FILES`` empty files in a new folder,
then calls ``os.sync()`` (sync(2)) or libc's ``syncfs`` on the folder.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import stacks_check as sc  # noqa: E402

from _host_stack import on_emulated_drive, rows  # noqa: E402

from diskmodel.calibrate.harness import runstate  # noqa: E402
from diskmodel.calibrate.trace.record import record  # noqa: E402

FILES = 200
REPEATS = 2
STACKS = ("ext3 on zero-filled loop", "ext2, 1 loop layer")
PROGRAM = """
import ctypes, os, sys
folder, call = sys.argv[1], sys.argv[2]
os.mkdir(folder)
for i in range(int(sys.argv[3])):
    open(os.path.join(folder, f"f{i:05d}"), "x").close()
if call == "sync":
    os.sync()
else:
    fd = os.open(folder, os.O_RDONLY)
    if ctypes.CDLL(None, use_errno=True).syncfs(fd) != 0:
        sys.exit("syncfs failed")
    os.close(fd)
"""


def _row(op, offset, size, flags, issue_s, complete_s) -> list:
    return [op, offset, size, flags, round(issue_s, 6)]


def main(out: str) -> None:
    cells = []
    with runstate.ensure_run("loop sync blktrace") as run:
        for label in STACKS:
            with on_emulated_drive(run, label) as (devices, top):
                sc._run(["sync"])
                for rep in range(REPEATS):
                    for call in ("sync", "syncfs"):
                        folder = top / f"d-{call}-{rep}"
                        trace, status = record([sys.executable, "-c", PROGRAM, str(folder), call, str(FILES)], devices)
                        if status != 0:
                            raise RuntimeError(f"the program exited with {status}")
                        cells.append({"stack": label, "call": call, "repeat": rep, "files": FILES,
                                      "load_1min": os.getloadavg()[0], "devices": rows(trace, devices, _row)})
                        sc._run(["sync"])
    Path(out).write_text(json.dumps({"cells": cells}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
