"""DiskSim's drives as the package ships them: found by name, or by folder.

The folders beside this module (``data/disksim/<name>/``) are DiskSim 4.0's
validation drives, copied into the package with DiskSim's ``COPYING`` (see
this folder's ``README.md`` for their provenance). This module names them and
turns a name or a folder into a folder:

* :data:`BUNDLED_DRIVES`: every bundled drive, and the drive it describes;
  :data:`TRACED_DRIVES`: the seven of them with a validation trace;
* :func:`disksim_drive_folder`: a bundled drive's name, or any folder laid
  out the same way, as a :class:`~pathlib.Path`;
* :func:`preset_or_drive`: a name for a reader that takes a preset or a folder.

Reading a folder's files is :func:`diskmodel.data.disksim.load_disksim_drive`'s.

>>> disksim_drive_folder("atlas10k").name
'atlas10k'
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["BUNDLED_DIR", "BUNDLED_DRIVES", "TRACED_DRIVES", "disksim_drive_folder", "preset_or_drive"]

#: The folder that holds the bundled drives (this module's own folder).
BUNDLED_DIR = Path(__file__).resolve().parent

#: Bundled drive folder -> the drive it describes (DiskSim 4.0's ``valid/``; see README.md).
BUNDLED_DRIVES: dict[str, str] = {
    "atlas10k": "Quantum Atlas 10K (Tornado)",
    "atlas_III": "Quantum QM39100TD-SW (Atlas III)",
    "barracuda": "Seagate ST32171W (Barracuda)",
    "cheetah4LP": "Seagate ST34501N (Cheetah 4LP)",
    "hp_c2247a": "HP C2247",
    "hp_c2490a": "HP C2490",
    "ibm18es": "IBM DNES-309170W (Ultrastar 18ES)",
    "G4_4TB": "a 4 TB 7200 rpm drive (DiskSim's G4 layout example; no trace)",
    "maxtor300g": "Maxtor 300 GB 10,000 rpm (separate read and write seek curves; no trace)",
}

#: The bundled drives that hold a validation trace (the others are geometry and seek data only).
TRACED_DRIVES: tuple[str, ...] = ("atlas10k", "atlas_III", "barracuda", "cheetah4LP", "hp_c2247a", "hp_c2490a",
                                  "ibm18es")


def disksim_drive_folder(name_or_folder) -> Path:
    """The folder of a bundled drive's *name* (``"atlas10k"``), or *name_or_folder* itself if it is a folder.

    An existing folder wins over a bundled name, so that a folder of your own
    is never shadowed. Anything else is refused in one line that lists the
    bundled names (ValueError).
    """
    if not isinstance(name_or_folder, (str, os.PathLike)):
        raise ValueError(f"a DiskSim drive must be a bundled drive's name or a folder "
                         f"(got {type(name_or_folder).__name__} {name_or_folder!r})")
    path = Path(name_or_folder)
    if path.is_dir():
        return path
    name = os.fspath(name_or_folder)
    if name in BUNDLED_DRIVES:
        return BUNDLED_DIR / name
    if path.exists():
        raise ValueError(f"{name} is not a folder: give a bundled DiskSim drive's name "
                         f"({', '.join(BUNDLED_DRIVES)}) or a drive folder (a .parv or .diskspecs, the .model it "
                         f"names, and optionally a .trace)")
    raise ValueError(f"{name!r} is neither a folder nor a bundled DiskSim drive (bundled: "
                     f"{', '.join(BUNDLED_DRIVES)})")


def preset_or_drive(name):
    """*name* for a reader that takes a preset name or a drive folder: a bundled drive's name becomes its folder.

    A preset's name stays a preset (``hp_c2247a`` is both a preset and a
    bundled drive: the preset wins), and so does an existing path; anything
    else is returned unchanged, for the reader to refuse.
    """
    from diskmodel.data.presets import PRESETS

    if isinstance(name, str) and name not in PRESETS and name in BUNDLED_DRIVES and not os.path.exists(name):
        return BUNDLED_DIR / name
    return name
