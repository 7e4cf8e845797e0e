"""Load a script that is not part of the package (a golden generator) as a module."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def load_script(path: Path, name: str | None = None):
    """The module of the Python file *path*, executed once (its ``__main__`` block is not run)."""
    spec = importlib.util.spec_from_file_location(name or Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hand_trace_run(drive: str, changes: dict, lines: list[str], where: Path):
    """The DiskSim-code parameters of the bundled *drive* with the ``.diskspecs`` *changes*, and the
    arguments of ``simulate_requests`` for the validate-trace *lines*, through a drive folder made
    under *where* as the randomised test makes one (``make_random.make_folder``)."""
    from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive
    make = load_script(Path(__file__).parent / "golden" / "disksim_random" / "make_random.py")
    folder = make.make_folder({"seed": 0, "drive": drive, "changes": changes, "rpm": None}, where)
    (folder / "hand.trace").write_text("\n".join(lines) + "\n")
    loaded = load_disksim_drive(folder)
    params = drive_parameters(loaded, disksim_code=True, disksim_access_block_bug=True)
    trace = loaded.read_trace()
    return params, (trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
