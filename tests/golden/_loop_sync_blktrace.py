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

import stacks_check as sc  # noqa: E402

from diskmodel.calibrate.emulate import emulated_drives  # noqa: E402
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


def _stack(run, made: list, drive_path: str, label: str, folder: Path) -> tuple[list[str], Path]:
    """*label*'s stack as :func:`stacks_check.build` makes it: its devices, bottom first, and the top
    file system's mount point."""
    _, kind, host_kind, allocations = sc.HOST_STACKS[label]
    dev = sc._loop(run, made, drive_path, offset=sc.PART_START, size=sc.PART_BYTES, direct=True)
    devices = [dev]
    for i, (allocation, size) in enumerate(zip(allocations, sc.IMAGE_SIZES)):
        host = sc._fs(run, made, dev, host_kind, folder / f"host{i}")
        for argv in sc.tool_workloads.steps(f"image:size={size},kind={'sparse' if allocation == 'sparse' else 'zero'}",
                                            host):
            sc._run(argv)
        dev = sc._loop(run, made, str(host / "image"))
        devices.append(dev)
    return devices, sc._fs(run, made, dev, kind, folder / "top")


def _cell(trace, devices: list[str]) -> dict:
    out = {}
    for k, dev in enumerate(devices):
        d = trace.devices[os.path.basename(dev)]
        s = d.stream
        out["bottom" if k == 0 else f"layer{k}"] = [
            [int(o), int(b), int(n), int(f), round(float(t), 6)]
            for o, b, n, f, t in zip(s.op, s.offset_bytes, s.size_bytes, s.flags, s.time_s)]
    return out


def main(out: str) -> None:
    cells = []
    with runstate.ensure_run("loop sync blktrace") as run:
        for label in STACKS:
            with emulated_drives(["wd800bd"]) as drives:
                made: list = []
                try:
                    devices, top = _stack(run, made, drives[0].path, label, run.temp_dir("stack-"))
                    sc._run(["sync"])
                    for rep in range(REPEATS):
                        for call in ("sync", "syncfs"):
                            folder = top / f"d-{call}-{rep}"
                            trace, status = record([sys.executable, "-c", PROGRAM, str(folder), call, str(FILES)],
                                                   devices)
                            if status != 0:
                                raise RuntimeError(f"the program exited with {status}")
                            cells.append({"stack": label, "call": call, "repeat": rep, "files": FILES,
                                          "load_1min": os.getloadavg()[0], "devices": _cell(trace, devices)})
                            sc._run(["sync"])
                finally:
                    report = run.undo(made)
                    if report.left:
                        raise RuntimeError(f"teardown left {report.left}")
    Path(out).write_text(json.dumps({"cells": cells}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
