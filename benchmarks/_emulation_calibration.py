"""Calibration through the kernel on emulated drives: each quantity's truth, estimate, error and pass.

:func:`run` serves each drive with the emulator (``diskmodel.calibrate.emulate.devices.emulated_drives``:
nbdkit, nbdfuse and a loop device, every request timed by the per-request simulation),
runs ``diskmodel calibrate DEV --budget-s B --json OUT`` on the device (the real CLI, through
the kernel, O_DIRECT), and compares the calibration with the truth read off the drive's
parameters (:func:`diskmodel.calibrate.harness.drive_truth.drive_truth`). With
``backend="simulated"`` the same calibration runs on the same timing without the kernel
(:class:`~diskmodel.calibrate.harness.drive_truth.ParametersDisk`), root-free and fast.

One row per drive: ``drive``, ``backend``, ``budget_s``, ``device_time_s``, ``wall_s``,
``quantities`` (one dict per quantity: ``quantity``, ``truth``, ``estimate``, ``error``,
``target``, ``passed``), ``passed`` (every quantity the drive has passed), what a miss is
read from (``parameter_status``: each figure's status and why, ``rotation_detail``, and
``zone_profile``: the zone stage's detail, its locations, rates and the zones found), and on the
emulated path the emulator's lateness (``lateness_p50_s``, ``lateness_p99_s``,
``lateness_max_s``), which is the timing noise every figure of the calibration carries.

:func:`partitions` calibrates each partition of an emulated WD800BD laid out as the paper's
Tables 1-3 and compares its zone rates, by location on the drive, with the drive's.

With ``realtime=True`` (``--realtime``) the emulator and the calibration run under SCHED_FIFO:
on a busy host the emulator's lateness otherwise reaches a revolution at p99, and every figure
that a single read's time carries (rotation, head switch, skews, the buffer's hits) drowns in it.

benchmarks/emulation_check.py calls :func:`run`; ``python benchmarks/_emulation_calibration.py
[--simulated | --partitions] [--realtime] [--budget-s S] [DRIVE ...]`` prints the table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: The issue's drives: four bundled or preset drives and one with read-ahead and several
#: buffer segments (the IBM Ultrastar 18ES: 7 segments of 511 blocks, read-ahead after every read).
DRIVES = ("atlas10k", "cheetah4LP", "hp_c2247a", "wd800bd", "ibm18es")


def _params(drive: str):
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of

    return drive_parameters_of(resolve_drive(drive).timing)


def _row(drive, backend, budget_s, result, wall_s, truth, extra=None) -> dict:
    from diskmodel.calibrate.harness.drive_truth import emulation_errors

    quantities = emulation_errors(truth, result)
    row = {"drive": drive, "backend": backend, "budget_s": budget_s, "device_time_s": result.device_time_s,
           "wall_s": wall_s, "reads": result.reads, "load_average": list(os.getloadavg()), "quantities": quantities,
           "passed": all(q["passed"] is not False for q in quantities),
           # what a miss is read from: each figure's status and why, and the zone stage's profile
           "parameter_status": {p.name: p.to_dict() for p in result.parameter_status},
           "rotation_detail": result.rotation_detail,
           "zone_profile": {"detail": result.zone_detail,
                            "locations_bytes": [int(v) for v in result.zone_locations_bytes],
                            "rates_bytes_per_s": [round(float(v), 1) for v in result.zone_rates_bytes_per_s],
                            "zones": [list(z) for z in result.zones]}}
    row.update(extra or {})
    return row


def _simulated(drive: str, budget_s: float, seed: int) -> dict:
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth
    from diskmodel.calibrate.harness.measure import calibrate

    params = _params(drive)
    start = time.perf_counter()
    result = calibrate(ParametersDisk(params, seed=seed), budget_s=budget_s, seed=seed, progress=False)
    return _row(drive, "simulated", budget_s, result, time.perf_counter() - start, drive_truth(params))


#: SCHED_FIFO priorities of the emulator (nbdkit, nbdfuse) and of the calibration reading it, with
#: ``realtime=True``: on a busy host the emulator's wake-ups come late by up to a revolution and more
#: otherwise (its lateness), and the calibration's reads are timed late by its own wake-ups; both as a
#: measurement on a real disk would be run on a busy host. The emulator above the calibration, so
#: that the reader never delays the drive it reads.
EMULATOR_PRIORITY, READER_PRIORITY = 50, 40


def _calibrate_argv(device: str, budget_s: float, seed: int, out: Path, realtime: bool) -> list[str]:
    argv = [sys.executable, "-m", "diskmodel.calibrate.cli", "calibrate", device, "--budget-s", f"{budget_s:g}",
            "--seed", str(seed), "--json", str(out), "--no-progress"]
    return (["chrt", "--fifo", str(READER_PRIORITY)] + argv) if realtime else argv


def _emulated(drive: str, budget_s: float, seed: int, realtime: bool = False) -> dict:
    from diskmodel.calibrate.emulate.devices import emulated_drives
    from diskmodel.calibrate.harness.drive_truth import drive_truth
    from diskmodel.calibrate.harness.results import calibration_from_json

    truth = drive_truth(_params(drive))
    with tempfile.TemporaryDirectory(prefix="diskmodel-emucal-") as tmp:
        out = Path(tmp) / "calibration.json"
        with emulated_drives([drive], realtime_priority=EMULATOR_PRIORITY if realtime else None) as devices:
            device = devices[0]
            start = time.perf_counter()
            proc = subprocess.run(_calibrate_argv(device.path, budget_s, seed, out, realtime),
                                  capture_output=True, text=True)
            wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"calibrate on emulated {drive} failed: {proc.stderr.strip()[-400:]}")
        result = calibration_from_json(out)
        summary = getattr(device, "summary", None) or {}
    lateness = {f"lateness_{k}_s": summary.get(f"lateness_{k}_s") for k in ("p50", "p99", "max")}
    return _row(drive, "emulated, real-time" if realtime else "emulated", budget_s, result, wall, truth, lateness)


#: The partitions of the paper's Tables 1-3 on the 80 GB WD800BD [decimal GB]: the system's 59 GB
#: (LogVol00 and the swap, LogVol01), then the test area, the last 20 GB, as LVM-2 splits it into two
#: physical volumes of 10 GB (/dev/sda3 and /dev/sda4; Table 1's sda3 is their union).
PAPER_PARTITIONS_GB = (("system", 59.0), ("sda3", 10.0), ("sda4", None))


def _partition_table(capacity_bytes: int) -> tuple[bytes, list]:
    """A DOS master boot record of PAPER_PARTITIONS_GB (first at 1 MiB, each ending on a MiB boundary at
    its cumulative size; the last to the end), and the (start, count) of each [512-byte sectors].
    Written by hand (the MBR's layout: 4 entries of 16 bytes at byte 446, the 0x55AA signature at
    510), as Debian's minimal image has no sfdisk."""
    import struct

    sectors, start, edge_gb, parts = capacity_bytes // 512, 2048, 0.0, []
    for _, size_gb in PAPER_PARTITIONS_GB:
        if size_gb is None:
            end = sectors
        else:
            edge_gb += size_gb
            end = int(edge_gb * 1e9) // 512 // 2048 * 2048
        parts.append((start, end - start))
        start = end
    mbr = bytearray(512)
    for i, (first, count) in enumerate(parts):
        # status, CHS first (unused: 0xFFFFFE), type 0x83 (Linux), CHS last, LBA first, sector count
        mbr[446 + 16 * i:446 + 16 * (i + 1)] = struct.pack("<B3sB3sII", 0, b"\xfe\xff\xff", 0x83, b"\xfe\xff\xff",
                                                           first, count)
    mbr[510:512] = b"\x55\xaa"
    return bytes(mbr), parts


def _partitioned_loop(run, device: str) -> str:
    """A second loop device, with its partitions scanned (losetup -P), over the file *device* is
    attached to (the emulator's nbdfuse file); recorded in *run* before it is made. It goes with the
    emulator's own loop device at teardown (both are found by that file)."""

    backing = Path(f"/sys/block/{os.path.basename(device)}/loop/backing_file").read_text().strip()
    res = run.intend("loop", backing=os.path.realpath(backing), offset_bytes=0)
    proc = subprocess.run(["losetup", "--direct-io=on", "--partscan", "--find", "--show", backing],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        run.absent(res)
        raise RuntimeError(f"losetup --partscan {backing} failed: {proc.stderr.strip()}")
    loop = proc.stdout.strip().splitlines()[-1]
    run.created(res, device=loop)
    # partx reads the table and adds the partitions itself (BLKPG): this host's kernel scan finds none
    # (its partitions go with the loop device)
    proc = subprocess.run(["partx", "--add", loop], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"partx --add {loop} failed: {proc.stderr.strip()}")
    return loop


def partitions(budget_s: float = 120.0, *, seed: int = 0, drive: str = "wd800bd", realtime: bool = False) -> list[dict]:
    """Calibrate each partition of an emulated *drive* partitioned as the paper's Tables 1-3
    (PAPER_PARTITIONS_GB; a DOS partition table, attached with ``losetup -P``) through the
    kernel; one row per partition: its start and size, and its zone rates by location on the drive
    (each true zone's part inside the partition, at its middle) against the drive's own, with the
    worst error and pass (within 3 %)."""

    from diskmodel.calibrate.emulate.devices import emulated_drives
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.drive_truth import TARGETS, drive_truth
    from diskmodel.calibrate.harness.results import calibration_from_json

    truth = drive_truth(_params(drive))
    bounds, rates = truth["zone_bounds_bytes"], truth["zone_rates_bytes_per_s"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="diskmodel-emucal-") as tmp, emulated_drives(
            [drive], realtime_priority=EMULATOR_PRIORITY if realtime else None) as devices:
        device = devices[0].path
        mbr, _ = _partition_table(devices[0].size_bytes)
        fd = os.open(device, os.O_WRONLY)  # the emulator's own device: its data are the tool's
        try:
            os.pwrite(fd, mbr, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        loop = _partitioned_loop(runstate.current_run(), device)
        name = os.path.basename(loop)
        for k, (label, _) in enumerate(PAPER_PARTITIONS_GB, start=1):
            part = f"/dev/{name}p{k}"
            sys_dir = Path(f"/sys/class/block/{name}p{k}")
            for _ in range(100):
                if os.path.exists(part):
                    break
                time.sleep(0.1)
            start = int((sys_dir / "start").read_text()) * 512
            size = int((sys_dir / "size").read_text()) * 512
            out = Path(tmp) / f"part{k}.json"
            began = time.perf_counter()
            proc = subprocess.run(_calibrate_argv(part, budget_s, seed, out, realtime), capture_output=True, text=True)
            wall = time.perf_counter() - began
            if proc.returncode != 0:
                raise RuntimeError(f"calibrate {part} failed: {proc.stderr.strip()[-400:]}")
            result = calibration_from_json(out)
            zones = []
            for (z0, z1), rate in zip(bounds.tolist(), rates.tolist()):
                lo, hi = max(z0, start), min(z1, start + size)
                if hi - lo < 0.01 * size:  # a sliver of a zone at the partition's edge: no location lands there
                    continue
                found = float(result.rate_at_bytes(np.array([(lo + hi) // 2 - start]))[0])
                zones.append({"location_bytes": (lo + hi) // 2, "truth": rate, "estimate": found,
                              "error": (found - rate) / rate})
            worst = max(abs(z["error"]) for z in zones)
            rows.append({"partition": label, "device": part, "start_bytes": start, "size_bytes": size,
                         "load_average": list(os.getloadavg()),
                         "zones_found": len(result.zones), "zones": zones, "worst_error": worst,
                         "passed": worst <= TARGETS["zone_rate"], "wall_s": wall,
                         "device_time_s": result.device_time_s})
    return rows


def run(drives=DRIVES, budget_s: float = 120.0, *, backend: str = "emulated", seed: int = 0,
        realtime: bool = False) -> list[dict]:
    """Calibrate each of *drives* within *budget_s* of device time; one row per drive (see the module doc).

    *backend*: ``"emulated"`` (through the kernel; root, nbdkit and nbdfuse) or ``"simulated"``;
    *realtime*: the emulator and the calibration under SCHED_FIFO (EMULATOR_PRIORITY, READER_PRIORITY)."""
    if backend not in ("emulated", "simulated"):
        raise ValueError(f"backend must be 'emulated' or 'simulated' (got {backend!r})")
    if backend == "simulated":
        return [_simulated(drive, float(budget_s), seed) for drive in drives]
    return [_emulated(drive, float(budget_s), seed, realtime) for drive in drives]


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"


def format_table(rows: list[dict]) -> str:
    """The rows as a text table: one line per drive and quantity."""
    lines = [f"{'drive':11s} {'quantity':28s} {'truth':>11s} {'estimate':>11s} {'error':>9s} {'target':>7s} pass"]
    for row in rows:
        for q in row["quantities"]:
            lines.append(f"{row['drive']:11s} {q['quantity']:28s} {_fmt(q['truth']):>11s} {_fmt(q['estimate']):>11s} "
                         f"{_fmt(q['error']):>9s} {_fmt(q['target']):>7s} {q['passed']}")
        late = row.get("lateness_p99_s")
        lines.append(f"{row['drive']:11s} {'(device s, wall s, reads)':28s} {row['device_time_s']:11.1f} "
                     f"{row['wall_s']:11.1f} {row['reads']:9d}" + ("" if late is None else
                                                                   f"  lateness p50/p99/max "
                                                                   f"{row['lateness_p50_s'] * 1e6:.0f}/"
                                                                   f"{late * 1e6:.0f}/"
                                                                   f"{row['lateness_max_s'] * 1e6:.0f} us")
                     + f"  load {row['load_average'][0]:.1f}")
    return "\n".join(lines)


def format_partitions(rows: list[dict]) -> str:
    """The rows of :func:`partitions` as text: one line per partition, one per zone inside it."""
    lines = []
    for row in rows:
        lines.append(f"{row['partition']:7s} {row['device']:14s} start {row['start_bytes'] / 1e9:6.2f} GB "
                     f"size {row['size_bytes'] / 1e9:6.2f} GB zones found {row['zones_found']:3d} worst zone rate "
                     f"error {100 * row['worst_error']:.2f} % pass {row['passed']}  load {row['load_average'][0]:.1f}")
        for z in row["zones"]:
            lines.append(f"        at {z['location_bytes'] / 1e9:7.2f} GB: truth {z['truth'] / 1e6:7.3f} MB/s, "
                         f"found {z['estimate'] / 1e6:7.3f} MB/s, {100 * z['error']:+.2f} %")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("drives", nargs="*", default=list(DRIVES))
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--simulated", action="store_true", help="the same timing without the kernel")
    parser.add_argument("--json", default=None, help="write the rows here")
    parser.add_argument("--realtime", action="store_true", help="the emulator and the calibration under SCHED_FIFO")
    parser.add_argument("--partitions", action="store_true",
                        help="the paper's partitions of an emulated WD800BD, each calibrated")
    args = parser.parse_args(argv)
    if args.partitions:
        rows = partitions(args.budget_s, realtime=args.realtime)
        print(format_partitions(rows))
    else:
        rows = run(args.drives, args.budget_s, backend="simulated" if args.simulated else "emulated",
                   realtime=args.realtime)
        print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=float))
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    from _artifact import run_main

    sys.exit(run_main(main))
