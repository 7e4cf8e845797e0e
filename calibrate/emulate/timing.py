"""The timing side of an emulated drive: simulation sessions that serve one request at a time.

The emulator (:mod:`diskmodel.calibrate.emulate.server`) asks a *session*
when each request completes. A session has one method,

    ``serve(is_write, lbn, blocks, arrival_s) -> Served``

with ``lbn`` and ``blocks`` in 512-byte blocks and ``arrival_s`` on the
session's own clock (seconds, nondecreasing), and it keeps the drive's state
between calls; a request that arrives before the previous one completed waits
for it (one request at a time, in arrival order). This is the interface of
the steppable per-request simulation, ``DriveSession`` (of
``diskmodel.model.simulator.session``).

Sessions here:

* :class:`FlatLatencySession`: a drive without mechanics (flash), served as
  a calibration's latency distribution: each request takes one latency drawn
  from the measured one-block reads, plus its bytes beyond one block at the
  measured per-byte time ("a flat (flash) calibration is emulated as its
  latency distribution").
* ``DriveSession`` (:mod:`diskmodel.model.simulator.session`): a DiskSim
  drive, a preset or a mechanical calibration, whose whole state (clock and
  platter angle, head, buffer segments, read-ahead, queued writes) is kept
  from one request to the next, as in the batch simulation.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["BLOCK_BYTES", "FlatLatencySession", "Served", "drive_parameters_of", "served_disk",
           "drive_session", "session_from_spec"]

#: The simulation's block [bytes] (DiskSim's and DriveParameters' blocks are 512 bytes).
BLOCK_BYTES = 512

#: How a request was served when the session does not say (a flat drive has no cache).
HIT_UNKNOWN = -1


class Served(NamedTuple):
    """When one request was served [s, on the session's clock]; ``hit``: the simulation's HitKind, or -1."""

    arrival_s: float
    start_s: float
    completion_s: float
    service_s: float
    hit: int


def _check_request(lbn, blocks, arrival_s, total_blocks: int, last_arrival_s: float) -> None:
    if not isinstance(lbn, (int, np.integer)) or lbn < 0:
        raise ValueError(f"lbn must be a whole number >= 0 (got {lbn!r})")
    if not isinstance(blocks, (int, np.integer)) or blocks < 1:
        raise ValueError(f"blocks must be a whole number >= 1 (got {blocks!r})")
    if lbn > total_blocks - blocks:  # overflow-free form of lbn + blocks > total_blocks
        raise ValueError(f"a request of {blocks} blocks at lbn {lbn} ends beyond the drive's last block "
                         f"({total_blocks})")
    if not math.isfinite(arrival_s) or arrival_s < last_arrival_s:
        raise ValueError(f"arrival_s must be finite and nondecreasing (got {arrival_s!r} after {last_arrival_s!r})")


class FlatLatencySession:
    """A drive without mechanics: each request takes a latency drawn from *samples_s* (one-block
    reads of *sample_bytes*) plus ``per_byte_s`` for each byte beyond *sample_bytes*.

    Draws are made with a seeded generator, so a replay is repeatable.
    """

    def __init__(self, samples_s, *, total_blocks: int, per_byte_s: float = 0.0, sample_bytes: int = BLOCK_BYTES,
                 seed: int = 0):
        samples = np.asarray(samples_s, dtype=float).ravel()
        if samples.size == 0 or not np.all(np.isfinite(samples)) or samples.min() < 0:
            raise ValueError(f"samples_s must be one or more finite latencies >= 0 (got {samples_s!r})")
        if not math.isfinite(per_byte_s) or per_byte_s < 0:
            raise ValueError(f"per_byte_s must be finite and >= 0 (got {per_byte_s!r})")
        if int(total_blocks) < 1:
            raise ValueError(f"total_blocks must be >= 1 (got {total_blocks!r})")
        self.samples_s = samples
        self.per_byte_s = float(per_byte_s)
        self.sample_bytes = int(sample_bytes)
        self.total_blocks = int(total_blocks)
        self._rng = np.random.default_rng(seed)
        self._busy_until_s = 0.0
        self._last_arrival_s = -math.inf

    def serve(self, is_write: bool, lbn: int, blocks: int, arrival_s: float) -> Served:
        _check_request(lbn, blocks, arrival_s, self.total_blocks, self._last_arrival_s)
        self._last_arrival_s = arrival_s
        draw = self.samples_s[self._rng.integers(self.samples_s.size)] if self.samples_s.size > 1 \
            else self.samples_s[0]
        service = float(draw) + max(blocks * BLOCK_BYTES - self.sample_bytes, 0) * self.per_byte_s
        start = max(arrival_s, self._busy_until_s)
        self._busy_until_s = start + service
        return Served(arrival_s, start, self._busy_until_s, service, HIT_UNKNOWN)


def drive_session(params):
    """``(session, name)``: the steppable simulation of *params* (``DriveSession``) and its name."""
    from diskmodel.model.simulator.session import DriveSession

    return DriveSession(params), "DriveSession"


def session_from_spec(timing: dict):
    """``(session, name)`` for a drive's timing spec (:class:`diskmodel.calibrate.emulate.drives.DriveSpec`)."""
    kind = timing.get("kind")
    if kind == "flat":
        session = FlatLatencySession(timing["samples_s"], total_blocks=int(timing["total_blocks"]),
                                     per_byte_s=float(timing.get("per_byte_s", 0.0)),
                                     sample_bytes=int(timing.get("sample_bytes", BLOCK_BYTES)),
                                     seed=int(timing.get("seed", 0)))
        return session, "FlatLatencySession (the calibration's latency distribution)"
    if kind in ("disksim", "preset", "calibration"):
        return drive_session(drive_parameters_of(timing))
    raise ValueError(f"timing kind must be 'flat', 'disksim', 'preset' or 'calibration' (got {kind!r})")


def drive_parameters_of(timing: dict):
    """The :class:`~diskmodel.model.drive.parameters.DriveParameters` of a mechanical timing spec
    (:class:`diskmodel.calibrate.emulate.drives.DriveSpec`'s ``timing``)."""
    from diskmodel.model.drive.parameters import DriveParameters

    kind = timing["kind"]
    if kind == "disksim":
        from diskmodel.data.disksim import disksim_drive_folder, read_drive_folder
        from diskmodel.model.disksim_drives.convert import drive_parameters

        return drive_parameters(read_drive_folder(disksim_drive_folder(timing["folder"])))
    if kind in ("preset", "calibration"):
        return DriveParameters.from_disk(served_disk(timing))
    raise ValueError(f"timing kind {kind!r} has no drive parameters")


def served_disk(timing: dict):
    """The :class:`~diskmodel.model.drive.disk.Disk` an emulated drive of a preset or a calibration timing spec
    is: the drive a prediction of a run on it must be given, as the emulator times every request with it
    (:func:`drive_parameters_of`). A DiskSim folder's drive is timed from its own files instead
    (:func:`diskmodel.model.disksim_drives.convert.drive_parameters`); its Disk is the folder's
    (:func:`diskmodel.model.disksim_drives.convert.load_disksim_drive`)."""
    kind = timing["kind"]
    if kind == "preset":
        import dataclasses

        from diskmodel.model.drive.presets import load_preset

        # Served without the preset's buffer: the calibration through the kernel does not yet tell a
        # read-ahead's hits from the zones' media rates (tests/test_calibrate_emulated.py).
        return dataclasses.replace(load_preset(timing["name"]), drive_cache=None)
    if kind == "calibration":
        from diskmodel.calibrate.harness.results import calibration_from_json

        return calibration_from_json(timing["path"]).to_disk()
    if kind == "disksim":
        from diskmodel.data.disksim import disksim_drive_folder
        from diskmodel.model.disksim_drives.convert import load_disksim_drive

        return load_disksim_drive(disksim_drive_folder(timing["folder"])).disk
    if kind == "flat":
        # FlatLatencySession's expected service: the samples' mean latency for a read of sample_bytes, and
        # per_byte_s for each byte beyond (flat_latency_disk's latency + (S - block) / rate)
        from diskmodel.model.drive.disk import flat_latency_disk

        per_byte_s = float(timing.get("per_byte_s", 0.0))
        if per_byte_s <= 0:
            raise ValueError("a flat drive with no per-byte time (an infinite transfer rate) has no Disk to predict "
                             "with; give the flat drive a per_byte_s > 0")
        return flat_latency_disk(float(np.mean(timing["samples_s"])), 1.0 / per_byte_s,
                                 int(timing["total_blocks"]) * BLOCK_BYTES,
                                 block_bytes=int(timing.get("sample_bytes", BLOCK_BYTES)),
                                 name="flat latency (emulated)")
    raise ValueError(f"timing kind {kind!r} has no drive")
