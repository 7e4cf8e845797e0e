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
sys.path.insert(0, str(Path(__file__).resolve().parent))

import stacks_check as sc  # noqa: E402

from _host_stack import on_emulated_drive, rows  # noqa: E402

from diskmodel.calibrate.bench.memory_cgroup import drop_caches  # noqa: E402
from diskmodel.calibrate.harness import runstate  # noqa: E402
from diskmodel.calibrate.trace.record import record  # noqa: E402

FILE_BYTES = 4 << 20
REPEATS = 2


def _row(op, offset, size, flags, issue_s, complete_s) -> list:
    return [op, offset, size, round(issue_s, 6), round(complete_s - issue_s, 6)]


def main(out: str, layer_counts: list[int], noatime: bool) -> None:
    cells = []
    with runstate.ensure_run("loop read blktrace") as run:
        for layers in layer_counts:
            label = f"ext2, {layers} loop layer{'s' if layers > 1 else ''}"
            with on_emulated_drive(run, label, noatime) as (devices, top):
                path = top / "diskmodel-copy.dat"
                sc._run(["dd", "if=/dev/zero", f"of={path}", "bs=1048576", f"count={FILE_BYTES >> 20}", "conv=fsync"])
                for rep in range(REPEATS):
                    drop_caches()
                    trace, status = record(["dd", f"if={path}", "of=/dev/null", "bs=1048576"], devices)
                    if status != 0:
                        raise RuntimeError(f"dd exited with {status}")
                    cells.append({"layers": layers, "repeat": rep, "host_mounts": "noatime" if noatime else "relatime",
                                  "file_bytes": FILE_BYTES, "load_1min": os.getloadavg()[0],
                                  "devices": rows(trace, devices, _row)})
    Path(out).write_text(json.dumps({"cells": cells}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--noatime"]
    if not args:
        sys.exit(__doc__)
    main(args[0], [int(a) for a in args[1:]] or [1, 2, 3], "--noatime" in sys.argv[1:])
