"""A calibrated drive against its preset: the same workloads predicted from each, and what makes them differ.

For each drive (the paper's WD800BD and DiskSim drives), the drive the emulator serves
(:func:`diskmodel.calibrate.emulate.drives.model_drive`: its preset or DiskSim parameters, the very
Disk that times the emulated device) is calibrated twice:

- ``simulated``: the harness on the same timing without the kernel
  (:class:`~diskmodel.calibrate.harness.drive_truth.ParametersDisk`), root-free;
- ``emulated``: ``diskmodel calibrate DEV`` on the drive served through the kernel
  (:func:`diskmodel.calibrate.emulate.devices.emulated_drives`: nbdkit, nbdfuse, a loop device;
  root), as ``benchmarks/_emulation_calibration.py`` does.

Each calibration becomes a Disk (:meth:`CalibrationResult.to_disk`), its write cache (which a
calibration that only reads cannot see) taken from the drive's own parameters and named in its
estimates (:func:`diskmodel.model.fit.calibration_views.write_cache_from`), and the same workloads are
predicted on ext4 on one partition (the paper's test area of Tables 1-3 on the WD800BD, the start of
a smaller drive) from the preset and from the calibration (:func:`diskmodel.model.predict.predict`):
PostMark tests 1-3 at the paper's parameters, fio sequential and random O_DIRECT reads and writes, and
the loop-image study's copy (``dd conv=fsync`` of a file, then its read back). The relative difference of the
calibrated prediction's elapsed time from the preset's is tabulated per workload, against the
acceptance bound :data:`BOUND`.

For each difference over the bound, one quantity at a time is swapped from the preset's Disk into
the calibrated Disk (geometry: zones, sectors per track and skews; seek; rpm; command overhead; head
switch; drive buffer; interface rate) and the prediction repeated: the quantity whose swap brings the
difference back within the bound is its cause. A swapped seek or geometry keeps the stroke: the
seek curve is rescaled to the cylinders of the geometry it is put with.

Writes ``benchmarks/results/calibrated_vs_preset.json``. ``--calibrations DIR`` reads (and writes
there when absent) each calibration as ``DRIVE_BACKEND.json``, so that the emulated calibrations
(minutes each, root) are made once.

Usage: python benchmarks/calibrated_vs_preset.py [--drives D ...] [--backends simulated emulated]
    [--budget-s S] [--seed N] [--realtime] [--calibrations DIR] [--seek two_piece|table]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

#: The acceptance bound on a calibrated prediction's difference from its preset's (relative).
BOUND = 0.05
DRIVES = ("wd800bd", "cheetah4LP", "ibm18es")
MIB = 1 << 20
#: The paper's test area on the WD800BD (Tables 1-3): after the system's 59 GB, 10 GB (sda3).
PAPER_PARTITION_BYTES = (59 * 10**9 // MIB * MIB, 10 * 10**9 // MIB * MIB)
#: Each further placement of the partition starts this much later [bytes]: tens of tracks and a few
#: blocks, so that the angle between two of a workload's requests on different tracks changes. A
#: workload of a few positioning requests waits a rotational latency each that the angle of its
#: blocks sets (the sum over the disk of each track's sectors and skews, up to its block), which no
#: calibration pins to a fraction of a revolution: its time from one placement is a draw, and the
#: mean over several placements is what the calibrated drive and the preset must agree on.
PLACEMENT_STEP_BYTES = 8 * MIB + 12 * 1024
#: Disk fields swapped one at a time from the preset into the calibration (drive_cache goes with
#: cache_size_bytes: a buffer is both).
SWAPS = ("geometry", "seek", "rpm", "command_overhead_s", "head_switch_s", "drive_cache", "interface_rate_bytes_per_s")


def workloads():
    """(name, workload, short) triples: a FioJob or a workload string of
    :func:`diskmodel.model.iopath.parse_workload`; *short*: a workload of a few positioning requests
    (see PLACEMENT_STEP_BYTES)."""
    from diskmodel.model.predictions.block_workloads import FioJob

    return [
        ("postmark test1", "postmark:test1", False), ("postmark test2", "postmark:test2", False),
        ("postmark test3", "postmark:test3", False),
        ("fio read 1M", FioJob("read", MIB, 256 * MIB), False),
        ("fio write 1M", FioJob("write", MIB, 256 * MIB), False),
        ("fio randread 4k", FioJob("randread", 4096, 16 * MIB), False),
        ("fio randwrite 4k", FioJob("randwrite", 4096, 16 * MIB), False),
        ("copy 4M write", "dd:size=4M,step=write", True), ("copy 4M read", "dd:size=4M,step=read", True),
        ("copy 64M", "copy:size=64M", False),
    ]


def _partition(drive: str, capacity_bytes: int) -> tuple[int, int]:
    if drive == "wd800bd":
        return PAPER_PARTITION_BYTES
    return MIB, min(10 * 10**9, capacity_bytes - 2 * MIB) // MIB * MIB


def _stack(disk, drive: str, placement: int = 0):
    from diskmodel.model.drive.drives import InMemoryDrive
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    start, size = _partition(drive, disk.capacity_bytes)
    start += placement * PLACEMENT_STEP_BYTES
    return Stack(FileSystemNode(Partition(start, size - placement * PLACEMENT_STEP_BYTES, disk="sda"), kind="ext4"),
                 (InMemoryDrive(disk, "sda"),), "ext4 on one partition")


def _elapsed_s(disk, drive: str, workload, placements: int) -> list[float]:
    """The workload's elapsed time [s] at each of *placements* of the partition (see PLACEMENT_STEP_BYTES)."""
    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.predict import predict

    ops = parse_workload(workload) if isinstance(workload, str) else workload
    return [float(predict(_stack(disk, drive, k), ops).elapsed_s) for k in range(placements)]


def _mean(values) -> float:
    return sum(values) / len(values)


def _seek_in(seek, scale: float, reach: int):
    """*seek* with its distances multiplied by *scale* (a curve in one geometry's cylinders put on
    another's, the full stroke on the full stroke); a table reaches *reach* cylinders."""
    from diskmodel.model.drive.seek import TableSeek, TwoPieceSeek

    if isinstance(seek, TableSeek):
        distance = seek.distance_cylinders * scale
        distance[-1] = max(distance[-1], float(reach))  # the full stroke, not a rounding short of it
        return TableSeek(distance, seek.seek_time_s_at_distance)
    if isinstance(seek, TwoPieceSeek):
        return TwoPieceSeek(seek.short_offset_s, seek.short_sqrt_s / scale**0.5, seek.long_offset_s,
                            seek.long_per_cylinder_s / scale, seek.knee_cylinders * scale)
    raise TypeError(f"no rescaling for a {type(seek).__name__}")


def _swapped(calibrated, preset, name: str):
    """The calibrated Disk with the preset's *name* (see SWAPS); a seek or a geometry keeps the
    stroke: the seek curve that comes with it or stays is rescaled to the other's cylinders."""
    if name == "drive_cache":
        return dataclasses.replace(calibrated, drive_cache=preset.drive_cache, cache_size_bytes=preset.cache_size_bytes)
    if name == "seek":
        scale = (calibrated.geometry.cylinders - 1) / (preset.geometry.cylinders - 1)
        return dataclasses.replace(calibrated, seek=_seek_in(preset.seek, scale, calibrated.geometry.cylinders - 1))
    if name == "geometry":
        scale = (preset.geometry.cylinders - 1) / (calibrated.geometry.cylinders - 1)
        return dataclasses.replace(calibrated, geometry=preset.geometry,
                                   seek=_seek_in(calibrated.seek, scale, preset.geometry.cylinders - 1))
    return dataclasses.replace(calibrated, **{name: getattr(preset, name)})


def _calibrate_simulated(drive: str, budget_s: float, seed: int):
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk
    from diskmodel.calibrate.harness.measure import calibrate
    from _emulation_calibration import _params

    return calibrate(ParametersDisk(_params(drive), seed=seed), budget_s=budget_s, seed=seed, progress=False)


def _calibrate_emulated(drive: str, budget_s: float, seed: int, out: Path, realtime: bool):
    import subprocess

    from diskmodel.calibrate.emulate.devices import emulated_drives
    from _emulation_calibration import EMULATOR_PRIORITY, _calibrate_argv

    with emulated_drives([drive], realtime_priority=EMULATOR_PRIORITY if realtime else None) as devices:
        proc = subprocess.run(_calibrate_argv(devices[0].path, budget_s, seed, out, realtime),
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"calibrate on emulated {drive} failed: {proc.stderr.strip()[-400:]}")


def calibration(drive: str, backend: str, budget_s: float, seed: int, folder: Path, realtime: bool):
    """The calibration of *drive* by *backend*, read from *folder* when there, else made and kept there."""
    from diskmodel.calibrate.harness.results import calibration_from_json, calibration_to_json

    path = folder / f"{drive}_{backend}.json"
    if not path.exists():
        began = time.perf_counter()
        if backend == "simulated":
            path.write_text(calibration_to_json(_calibrate_simulated(drive, budget_s, seed)))
        else:
            _calibrate_emulated(drive, budget_s, seed, path, realtime)
        print(f"calibrated {drive} ({backend}) in {time.perf_counter() - began:.0f} s wall, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    return calibration_from_json(path)


def compare(drive: str, backend: str, result, preset, placements: tuple[int, int], seek: str = "two_piece") -> dict:
    """One drive and backend: each workload's elapsed time from the preset and the calibration (the
    mean over *placements*: (of a long workload, of a short one)), their relative difference, the
    difference at the first placement alone,
    and for a difference over BOUND each swap's difference. A workload the partition cannot hold (the
    file system full) is a row with its reason and no figures. *seek*: the calibrated Disk's seek model."""
    from diskmodel.model.fit.calibration_views import write_cache_from

    # a calibration that only reads cannot see the drive's write cache: the prediction takes it from the
    # drive's own parameters, a named source, and says so in the disk's estimates (the section's "estimates")
    calibrated = write_cache_from(result.to_disk(seek=seek), preset, f"the {drive} parameters the emulator serves")
    rows = []
    for name, workload, short in workloads():
        count = placements[short]
        try:
            theirs, ours = (_elapsed_s(d, drive, workload, count) for d in (preset, calibrated))
        except ValueError as exc:
            if "is full" not in str(exc):
                raise
            rows.append({"workload": name, "not_run": f"the partition cannot hold it: {exc}"})
            print(f"{drive:11s} {backend:9s} {name:18s} not run: {exc}", flush=True)
            continue
        base = _mean(theirs)
        row = {"workload": name, "placements": count, "preset_elapsed_s": base, "calibrated_elapsed_s": _mean(ours),
               "difference": _mean(ours) / base - 1.0, "difference_first_placement": ours[0] / theirs[0] - 1.0,
               "preset_spread_over_placements": (max(theirs) - min(theirs)) / base, "swaps": {}}
        if abs(row["difference"]) > BOUND:
            for quantity in SWAPS:
                row["swaps"][quantity] = _mean(_elapsed_s(_swapped(calibrated, preset, quantity), drive, workload,
                                                          count)) / base - 1
        rows.append(row)
        print(f"{drive:11s} {backend:9s} {name:18s} preset {base:9.3f} s "
              f"calibrated {row['calibrated_elapsed_s']:9.3f} s "
              f"{100 * row['difference']:+7.2f} % (first placement {100 * row['difference_first_placement']:+.2f} %)"
              + "".join(f"  {q} {100 * v:+.1f}" for q, v in row["swaps"].items()), flush=True)
    run = [r for r in rows if "difference" in r]
    return {"drive": drive, "backend": backend, "device_time_s": result.device_time_s,
            "rotation_period_s": result.rotation_period_s, "preset_rotation_period_s": 60.0 / preset.rpm,
            "zones_found": len(result.zones), "zones_true": len(preset.geometry.zones),
            "estimates": [list(e) for e in calibrated.estimates], "rows": rows,
            "worst_difference": max(abs(r["difference"]) for r in run),
            "passed": all(abs(r["difference"]) <= BOUND for r in run)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drives", nargs="+", default=list(DRIVES))
    parser.add_argument("--backends", nargs="+", default=["simulated", "emulated"], choices=["simulated", "emulated"])
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--placements", type=int, nargs=2, default=[2, 12], metavar=("LONG", "SHORT"),
                        help="placements of the partition a workload is predicted at (the mean is compared): "
                             "a long workload, a short one of a few positioning requests")
    parser.add_argument("--realtime", action="store_true",
                        help="the emulator and the calibration under SCHED_FIFO (see _emulation_calibration.py)")
    parser.add_argument("--calibrations", default=None,
                        help="folder of DRIVE_BACKEND.json calibrations: read when there, written when not")
    parser.add_argument("--seek", default="two_piece", choices=["two_piece", "table"],
                        help="the calibrated Disk's seek model (CalibrationResult.to_disk): eq. 7's two-piece "
                             "curve, or the table of measured means")
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    import tempfile

    from diskmodel.calibrate.emulate.drives import model_drive

    keep = Path(args.calibrations) if args.calibrations else Path(tempfile.mkdtemp(prefix="diskmodel-calpreset-"))
    keep.mkdir(parents=True, exist_ok=True)
    sections = []
    for drive in args.drives:
        preset = model_drive(drive).disk
        for backend in args.backends:
            result = calibration(drive, backend, args.budget_s, args.seed, keep, args.realtime)
            section = compare(drive, backend, result, preset, tuple(args.placements), args.seek)
            sections.append(section | {"load_average": list(os.getloadavg())})
    figures = {}
    for s in sections:
        figures[f"worst_{s['drive']}_{s['backend']}"] = figure(
            100 * s["worst_difference"], "%",
            f"{s['drive']}, calibrated ({s['backend']}) against its preset: the largest difference over "
            f"{len(s['rows'])} workloads", decimals=2, headline=s["drive"] == "wd800bd" or s is sections[0],
            target=100 * BOUND)
    write_result("calibrated_vs_preset", figures, options=options_of(parser, args, housekeeping=("calibrations",)),
                 details={"sections": sections, "bound": BOUND, "calibrations_folder": str(keep)},
                 results_dir=args.results_dir,
                 notes=["each section holds its calibration's device time, the zones it found and the calibrated "
                        "disk's estimates (what was not measured, and where it came from)"])
    return 0 if all(s["passed"] for s in sections) else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
