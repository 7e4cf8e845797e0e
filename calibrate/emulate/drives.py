"""Which drive to emulate: a DRIVE argument turned into a :class:`DriveSpec`.

A DRIVE is, in this order of precedence:

* an existing folder: a DiskSim drive folder (a .parv or .diskspecs and the
  .model it names), as ``diskmodel validate-trace`` reads it;
* an existing file: a calibration JSON (``diskmodel calibrate --json``). One
  with a mechanical seek is emulated as the drive it describes
  (``CalibrationResult.to_disk()``); a flat one (no rotation, latency flat
  against distance: flash) as its latency distribution, the kept one-block
  reads of its seek samples plus its per-byte time;
* a preset's name (``hp97560``, ``hp_c2247a``, ``wd800bd``: a preset wins over a
  bundled DiskSim drive of the same name, as everywhere in diskmodel);
* a bundled DiskSim drive's name (``atlas10k``, ...).

A :class:`DriveSpec` is plain JSON-able data (the nbdkit plugin, another
process, rebuilds the simulation from it): the drive's name, its capacity and
its timing spec. Everything is checked here, in the calling process, before
anything is created.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from diskmodel.calibrate.emulate.timing import BLOCK_BYTES, drive_parameters_of
from diskmodel.model._checks import show

__all__ = ["DriveSpec", "flat_drive", "model_drive", "resolve_drive"]


@dataclass
class DriveSpec:
    """A drive to emulate: *name*, *capacity_bytes* (a multiple of 512) and *timing* (a JSON-able dict)."""

    name: str
    capacity_bytes: int
    timing: dict = field(default_factory=dict)
    rotational: bool = True

    def __post_init__(self):
        if not isinstance(self.capacity_bytes, int) or self.capacity_bytes < BLOCK_BYTES \
                or self.capacity_bytes % BLOCK_BYTES:
            raise ValueError(f"capacity_bytes must be a whole number of {BLOCK_BYTES}-byte blocks "
                             f"(got {self.capacity_bytes!r})")

    def as_dict(self) -> dict:
        return {"name": self.name, "capacity_bytes": self.capacity_bytes, "timing": self.timing,
                "rotational": self.rotational}


def flat_drive(latency_s, capacity_bytes: int, *, name: str | None = None, per_byte_s: float = 0.0,
               seed: int = 0) -> DriveSpec:
    """A flash-like drive: every request takes a latency drawn from *latency_s* (one number, or samples)
    plus *per_byte_s* for each byte beyond 512."""
    import numpy as np

    samples = np.atleast_1d(np.asarray(latency_s, dtype=float))
    if samples.size == 0 or not np.all(np.isfinite(samples)) or samples.min() < 0:
        raise ValueError(f"latency_s must be one or more finite latencies >= 0 (got {latency_s!r})")
    capacity = int(capacity_bytes)
    spec = DriveSpec(name or f"flat {samples.mean() * 1e3:g} ms", capacity,
                     {"kind": "flat", "samples_s": samples.tolist(), "per_byte_s": float(per_byte_s),
                      "sample_bytes": BLOCK_BYTES, "total_blocks": capacity // BLOCK_BYTES, "seed": int(seed)},
                     rotational=False)
    return spec


def _calibration_spec(path: Path) -> DriveSpec:
    from diskmodel.calibrate.harness.results import calibration_from_json
    from diskmodel.model.drive.parameters import DriveParameters

    result = calibration_from_json(path)  # CalibrationFileError (a ValueError) names the file and the key
    name = f"calibration {path.name}"
    if result.mechanical_seek:
        params = DriveParameters.from_disk(result.to_disk())
        capacity = int(params.layout.total_blocks) * BLOCK_BYTES
        return DriveSpec(name, capacity, {"kind": "calibration", "path": str(path.resolve())})
    model = result.latency_model
    if model is None:
        raise ValueError(f"{path}: the calibration has neither a mechanical seek nor a flat latency model "
                         f"({result.flat_test.detail}); it cannot be emulated")
    kept = result.seek_time_s[result.seek_kept]
    capacity = result.size_bytes - result.size_bytes % BLOCK_BYTES
    return DriveSpec(name, capacity,
                     {"kind": "flat", "samples_s": [float(x) for x in kept], "per_byte_s": float(model.per_byte_s),
                      "sample_bytes": int(result.block_size_bytes), "total_blocks": capacity // BLOCK_BYTES,
                      "seed": 0}, rotational=False)


def resolve_drive(drive) -> DriveSpec:
    """The :class:`DriveSpec` of a DRIVE argument (see the module doc); ValueError naming it otherwise."""
    if isinstance(drive, DriveSpec):
        return drive
    if not isinstance(drive, (str, os.PathLike)) or not os.fspath(drive):
        raise ValueError(f"DRIVE must be a drive's name, a DiskSim drive folder or a calibration JSON "
                         f"(got {show(drive)})")
    text = os.fspath(drive)
    path = Path(text)
    try:   # a name the kernel refuses to look up (too long, a loop of links) is no drive either
        is_dir, exists = path.is_dir(), path.exists()
    except OSError as exc:
        raise ValueError(f"DRIVE {show(text)}: {exc.strerror or exc}") from None
    if is_dir:
        timing = {"kind": "disksim", "folder": str(path.resolve())}
        return DriveSpec(path.name, _capacity_of(timing, text), timing)
    if exists:
        return _calibration_spec(path)
    from diskmodel.data.disksim import BUNDLED_DRIVES
    from diskmodel.model.drive.presets import available_presets

    if text.lower() in available_presets():
        timing = {"kind": "preset", "name": text.lower()}
        return DriveSpec(text.lower(), _capacity_of(timing, text), timing)
    if text in BUNDLED_DRIVES:
        timing = {"kind": "disksim", "folder": text}
        return DriveSpec(text, _capacity_of(timing, text), timing)
    raise ValueError(f"DRIVE {show(text)} is not a folder, a calibration JSON, a preset ({', '.join(available_presets())}) "
                     f"or a bundled DiskSim drive ({', '.join(BUNDLED_DRIVES)})")


def model_drive(drive, name: str | None = None, max_sectors_kb: int | None = None):
    """The drive node (an :class:`~diskmodel.model.drive.drives.InMemoryDrive` named *name*, default the drive's
    own) that predicts a run on the emulated DRIVE *drive*: the very Disk the emulator serves
    (:func:`~diskmodel.calibrate.emulate.timing.served_disk`), not the preset's catalogue entry, whose
    buffer the emulator leaves out. *max_sectors_kb*: the guest's queue limit of the drive [KiB]
    (default the kernel's, BLK_DEF_MAX_SECTORS: the drive node's default).

    Its queue is served in arrival order (scheduler "none"): the emulated device on the host is a loop
    device, whose scheduler is none; in the VM it is a virtio disk under mq-deadline with 256 tags, which
    gives the drive every request at once in arrival order unless more than 256 are outstanding (blktrace
    there: up to about 100 in flight, none merged), and the emulator serves them one at a time as they
    come."""
    from diskmodel.calibrate.emulate.timing import served_disk
    from diskmodel.model.drive.drives import DEFAULT_MAX_SECTORS_KB, InMemoryDrive

    spec = resolve_drive(drive)
    limit = DEFAULT_MAX_SECTORS_KB if max_sectors_kb is None else max_sectors_kb
    return InMemoryDrive(served_disk(spec.timing), name or spec.name, limit, scheduler="none")


def _capacity_of(timing: dict, text: str) -> int:
    try:
        params = drive_parameters_of(timing)
    except (OSError, ValueError) as exc:
        why = f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"DRIVE {text}: {why}") from None
    return int(params.layout.total_blocks) * BLOCK_BYTES
