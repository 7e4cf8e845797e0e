"""What the golden trace scripts share: benchmarks/stacks_check.py's host stacks built by its own
functions, and a traced device's requests as rows."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import stacks_check as sc  # noqa: E402


def build(run, made: list, drive_path: str, label: str, folder: Path, noatime: bool = False) -> tuple[list[str], Path]:
    """*label*'s stack as :func:`stacks_check.build` makes it: its devices, bottom first, and the top
    file system's mount point. ``noatime``: the file systems holding the images remounted so."""
    _, kind, host_kind, allocations = sc.HOST_STACKS[label]
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


def rows(trace, devices: list[str], row) -> dict:
    """Per device (``bottom``, then ``layer1``..) each traced request as ``row(op, offset, size, flags,
    issue_s, complete_s)``."""
    out = {}
    for k, dev in enumerate(devices):
        d = trace.devices[os.path.basename(dev)]
        s = d.stream
        out["bottom" if k == 0 else f"layer{k}"] = [
            row(int(o), int(b), int(n), int(f), float(t), float(c))
            for o, b, n, f, t, c in zip(s.op, s.offset_bytes, s.size_bytes, s.flags, s.time_s, d.complete_s)]
    return out


@contextmanager
def on_emulated_drive(run, label: str, noatime: bool = False):
    """*label*'s stack (:func:`build`) on an emulated WD800BD of its own, torn down after: yields its
    devices, bottom first, and the top file system's mount point."""
    from diskmodel.calibrate.emulate import emulated_drives

    with emulated_drives(["wd800bd"]) as drives:
        made: list = []
        try:
            yield build(run, made, drives[0].path, label, run.temp_dir("stack-"), noatime)
        finally:
            report = run.undo(made)
            if report.left:
                raise RuntimeError(f"teardown left {report.left}")
