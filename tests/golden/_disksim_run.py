"""Run the reference DiskSim 4.0 on one drive folder: shared by the golden generators.

The build is the one of tests/golden/disksim_service_times/README.md (32-bit, one
printf added); its ``run_drive.sh`` prints DiskSim's service time of each request
of the folder's trace [ms], one a line. Not used by the tests.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path


def run_disksim(build: Path, folder: Path) -> list[float]:
    """DiskSim's service time [ms] of every request of *folder*'s trace (its .parv and .trace)."""
    shutil.copy(build / "valid" / "statdefs", folder / "statdefs")
    parv, trace = next(folder.glob("*.parv")), next(folder.glob("*.trace"))
    done = subprocess.run([str(build / "run_drive.sh"), str(parv), str(trace), str(folder / "out.outv")],
                          capture_output=True, text=True, timeout=600)
    out = done.stdout.split()
    if done.returncode != 0 or len(out) != len(trace.read_text().splitlines()):
        raise RuntimeError(f"DiskSim failed (rc {done.returncode}, {len(out)} times): {done.stderr[-300:]}")
    return [float(v) for v in out]


def run_listed_variants(listing: Path, build: Path, make_folder, only=()):
    """Yield (variant, DiskSim's times [ms]) for each variant of the JSON list *listing* (all, or
    those named in *only*), each run in a fresh folder that ``make_folder(variant, where)`` makes."""
    for variant in json.loads(listing.read_text()):
        if only and variant["name"] not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            yield variant, run_disksim(build, make_folder(variant, Path(tmp)))
