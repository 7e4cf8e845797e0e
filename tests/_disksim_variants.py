"""DiskSim 4.0's own times for variants of the bundled drives with one option changed
(tests/golden/disksim_variants, README.md there), and the helpers that simulate a variant: shared by
tests/test_disksim_options.py and tests/test_disksim_buffer_options.py."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive
from diskmodel.model.simulator.simulate import simulate_requests

from _scripts import load_script

GOLDEN = Path(__file__).parent / "golden" / "disksim_variants"
VARIANTS = json.loads((GOLDEN / "variants.json").read_text())
BUNDLED = Path(__file__).parent / "golden" / "disksim_service_times"
#: Agreement: within 10 us of DiskSim's own service time.
TOLERANCE_MS = 0.01


def make_variants():
    return load_script(GOLDEN / "make_variants.py")


def edited_copy(disksim_dir, tmp_path, drive: str, old: str, new: str):
    """A copy of a bundled drive folder with *old* replaced by *new* in its diskspecs:
    (folder, diskspecs path, its edited text, the 1-based line of the edited key)."""
    folder = tmp_path / drive
    shutil.copytree(disksim_dir / drive, folder)
    specs = next(folder.glob("*.diskspecs"))
    text = specs.read_text()
    assert old in text, old
    text = text.replace(old, new)
    specs.write_text(text)
    key = new.split("=")[0].strip()
    line = next(i for i, row in enumerate(text.splitlines()) if key in row) + 1
    return folder, specs, text, line


def golden(name: str) -> np.ndarray:
    return np.loadtxt(GOLDEN / f"{name}.csv", delimiter=",", skiprows=1)[:, 1]


def simulate_variant(variant, tmp_path, **changes):
    folder = make_variants().make_folder(variant, tmp_path)
    drive = load_disksim_drive(folder)
    trace = drive.read_trace().head(variant["requests"])
    # DiskSim 4.0's own runs are the reference
    params = drive_parameters(drive, disksim_code=True, disksim_access_block_bug=True)
    if changes:
        params = params.evolve(**changes)
    return simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s).service_s * 1e3
