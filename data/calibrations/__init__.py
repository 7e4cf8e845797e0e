"""Calibrations measured by this project, as ``diskmodel calibrate`` wrote them (see README.md here for
how each was made). A path only: reading one is the calibration harness's
(:func:`diskmodel.calibrate.harness.results.calibration_from_json`)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLED_CALIBRATIONS", "bundled_calibration"]

_HERE = Path(__file__).parent

#: The calibrations bundled here, by name.
BUNDLED_CALIBRATIONS = tuple(sorted(p.stem for p in _HERE.glob("*.json")))


def bundled_calibration(name: str) -> Path:
    """The path of bundled calibration *name* (one of :data:`BUNDLED_CALIBRATIONS`).

    >>> bundled_calibration("wd800bd_emulated").name
    'wd800bd_emulated.json'
    """
    if name not in BUNDLED_CALIBRATIONS:
        raise ValueError(f"calibration {name!r} is not bundled (bundled: {', '.join(BUNDLED_CALIBRATIONS)})")
    return _HERE / f"{name}.json"
