"""Reference drives: ground truth for the calibration, written independently of :mod:`diskmodel.model`.

A separate simulator with its own layout code (:mod:`.geometry`, :mod:`~diskmodel.calibrate.harness.reference.drive`)
and a family of drives (:mod:`.family`) that switch on and off read-ahead and
the buffer's segments, skews, head switches, 1 to 10 surfaces, conventional
and serpentine layouts, zones, seek noise, outliers, host gap jitter and a
write cache. Each drive is a backend factory: ``diskmodel calibrate --backend
diskmodel.calibrate.harness.reference:desktop_7200``.
"""
from __future__ import annotations

from .drive import DriveSpec, ReferenceDrive
from .family import FAMILY, calibration_errors, family_names, reference_drive, truth
from .geometry import Layout

__all__ = ["DriveSpec", "ReferenceDrive", "Layout", "FAMILY", "family_names", "reference_drive", "truth",
           "calibration_errors",
           *FAMILY]


def _factory(name):
    def make():
        return reference_drive(name)
    make.__name__ = name
    make.__doc__ = f"The reference drive {name} (seed 0): a --backend factory."
    return make


for _name in FAMILY:
    globals()[_name] = _factory(_name)
del _name
