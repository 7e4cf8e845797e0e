"""Make ``loop_layers_read_blktrace.json``: blktrace of every device under the loop-image study copy's
read step on Dagenais' nested loop files (benchmarks/stacks_check.py's host stacks, built by its own
functions on an emulated WD800BD), repeated twice per stack. Needs root and what stacks_check needs.

    python tests/golden/_loop_read_blktrace.py OUT.json [LAYERS ...] [--noatime]

``--noatime``: the file systems holding the images are remounted ``noatime`` (the control).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import stacks_check as sc  # noqa: E402

from diskmodel.calibrate.bench.memory_cgroup import drop_caches  # noqa: E402
from diskmodel.calibrate.emulate import emulated_drives  # noqa: E402
from diskmodel.calibrate.harness import runstate  # noqa: E402
from diskmodel.calibrate.trace.record import record  # noqa: E402

FILE_BYTES = 4 << 20
REPEATS = 2


def _stack(run, made: list, drive_path: str, layers: int, folder: Path, noatime: bool) -> tuple[list[str], Path]:
    """The stack of *layers* loop files, as :func:`stacks_check.build` makes it: its devices, bottom
    first, and the top file system's mount point."""
    _, kind, host_kind, allocations = sc.HOST_STACKS[f"ext2, {layers} loop layer{'s' if layers > 1 else ''}"]
    dev = sc._loop(run, made, drive_path, offset=sc.PART_START, size=sc.PART_BYTES, direct=True)
    devices = [dev]
    for i, (allocation, size) in enumerate(zip(allocations, sc.IMAGE_SIZES)):
        host = sc._fs(run, made, dev, host_kind, folder / f"host{i}")
        for argv in sc.tool_workloads.steps(f"image:size={size},kind={'sparse' if allocation == 'sparse' else 'zero'}",
                                            host):
            sc._run(argv)
        if noatime:
            sc._run(["mount", "-o", "remount,noatime", str(host)])
        dev = sc._loop(run, made, str(host / "image"))
        devices.append(dev)
    return devices, sc._fs(run, made, dev, kind, folder / "top")


def _cell(trace, devices: list[str]) -> dict:
    out = {}
    for k, dev in enumerate(devices):
        d = trace.devices[os.path.basename(dev)]
        s = d.stream
        out["bottom" if k == 0 else f"layer{k}"] = [
            [int(o), int(b), int(n), round(float(t), 6), round(float(c - t), 6)]
            for o, b, n, t, c in zip(s.op, s.offset_bytes, s.size_bytes, s.time_s, d.complete_s)]
    return out


def main(out: str, layer_counts: list[int], noatime: bool) -> None:
    cells = []
    with runstate.ensure_run("loop read blktrace") as run:
        for layers in layer_counts:
            with emulated_drives(["wd800bd"]) as drives:
                made: list = []
                try:
                    devices, top = _stack(run, made, drives[0].path, layers, run.temp_dir("stack-"), noatime)
                    path = top / "diskmodel-copy.dat"
                    sc._run(["dd", "if=/dev/zero", f"of={path}", "bs=1048576", f"count={FILE_BYTES >> 20}",
                             "conv=fsync"])
                    for rep in range(REPEATS):
                        drop_caches()
                        trace, status = record(["dd", f"if={path}", "of=/dev/null", "bs=1048576"], devices)
                        if status != 0:
                            raise RuntimeError(f"dd exited with {status}")
                        cells.append({"layers": layers, "repeat": rep, "host_mounts": "noatime" if noatime else "relatime",
                                      "file_bytes": FILE_BYTES, "load_1min": os.getloadavg()[0],
                                      "devices": _cell(trace, devices)})
                finally:
                    report = run.undo(made)
                    if report.left:
                        raise RuntimeError(f"teardown left {report.left}")
    Path(out).write_text(json.dumps({"cells": cells}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--noatime"]
    if not args:
        sys.exit(__doc__)
    main(args[0], [int(a) for a in args[1:]] or [1, 2, 3], "--noatime" in sys.argv[1:])
