"""``diskmodel calibrate (PATH | --backend MODULE:FACTORY | --simulated PRESET) [--budget-s S] [--json OUT]``.

Measures a device's rotation period, zone transfer rates and seek curve within
a budget of device time, fits the model, runs the validity checks and prints
a summary (and the JSON result with ``--json``). A real PATH is opened
read-only with O_DIRECT (:func:`diskmodel.calibrate.device.open_backend`);
``--simulated`` takes a preset name or a DiskSim drive folder.
"""
from __future__ import annotations

import math
import sys


def _positive_seconds(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--budget-s must be a number of seconds (got {text!r})") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"--budget-s must be a finite number > 0 (got {text!r})")
    return value


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="measure a device's seek curve, rotation and zones, and fit the model",
        description=(
            "Measure rotation period, zone transfer rates and the seek curve of a block device or a "
            "written regular file (read-only, O_DIRECT), of a simulated disk, or of your own backend, "
            "within a budget of device time; fit the model with uncertainty and report validity checks. "
            "Where there is no mechanical seek (flash, virtual disks) the result says so and gives a flat "
            "latency model instead."
        ),
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("path", nargs="?", default=None, help="a block device or a written regular file (read-only)")
    target.add_argument("--backend", metavar="MODULE:FACTORY",
                        help="import MODULE from the Python path and call FACTORY() to get the backend")
    target.add_argument("--simulated", metavar="PRESET",
                        help="a simulated disk: a preset name (hp97560, hp_c2247a, wd800bd) or a DiskSim drive "
                             "folder (e.g. ../shared/data/disksim/G4_4TB)")
    parser.add_argument("--budget-s", type=_positive_seconds, default=None, metavar="S",
                        help="device time to spend [s] (default 120 for a simulated disk, 60 for real storage)")
    parser.add_argument("--json", metavar="OUT", default=None, help="write the result as JSON to OUT ('-': stdout)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the measurement design (and the simulation)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from diskmodel.calibrate.measure import backend_from_spec, calibrate

    path = None
    close = None
    if args.simulated is not None:
        from diskmodel.calibrate.simulated import simulated_disk

        backend = simulated_disk(args.simulated, seed=args.seed)
        budget = args.budget_s or 120.0
    elif args.backend is not None:
        backend = backend_from_spec(args.backend)
        budget = args.budget_s or 60.0
        close = getattr(backend, "close", None)
    else:
        from diskmodel.calibrate.device import open_backend

        path = args.path
        backend = open_backend(path)
        budget = args.budget_s or 60.0
        close = backend.close
    try:
        result = calibrate(backend, budget_s=budget, seed=args.seed, path=path,
                           progress=False if args.no_progress else None)
    finally:
        if close is not None:
            close()
    if args.json == "-":
        print(result.to_json())
    else:
        if args.json is not None:
            result.to_json(args.json)
        print(result.summary())
        if path is not None:
            _print_partitions(result, path)
    return 0


def _print_partitions(result, path) -> None:
    """The transfer rate at each partition of a block device, where it has any."""
    import os
    import stat

    try:
        if not stat.S_ISBLK(os.stat(path).st_mode):
            return
        from diskmodel.calibrate.probe import probe

        device = probe(path).devices[0]
    except Exception as exc:  # the calibration stands; the partition list is extra
        print(f"partitions: not listed ({exc})", file=sys.stderr)
        return
    for row in result.partition_rates(device.partitions):
        print(f"partition {row['name']}: starts at byte {row['start_byte']}, rate there "
              f"{row['rate_at_start_bytes_per_s'] / 1e6:.1f} MB/s, at its middle "
              f"{row['rate_at_middle_bytes_per_s'] / 1e6:.1f} MB/s")
