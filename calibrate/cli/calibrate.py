"""``diskmodel calibrate (PATH | --backend MODULE:FACTORY | --simulated PRESET) [--budget-s S] [--json OUT] [--destroy-data-on TARGET]``.

Measures a device's rotation period, zone transfer rates and seek curve within
a budget of device time, fits the model, runs the validity checks and prints
a summary (and the JSON result with ``--json``). A real PATH is opened
read-only with O_DIRECT (:func:`diskmodel.calibrate.harness.device.open_backend`);
``--simulated`` takes a preset name or a DiskSim drive folder. Nothing is
written unless ``--destroy-data-on`` names the target again (then writes of
zeros over random blocks time the writes and find the write cache:
:mod:`diskmodel.calibrate.harness.writes`).
"""
from __future__ import annotations

import contextlib
import sys

from diskmodel.calibrate.cli import positive_seconds



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
    target.add_argument("path", nargs="?", default=None,
                        help="a block device or a written regular file, read-only (no default: give PATH, "
                             "--backend or --simulated)")
    target.add_argument("--backend", metavar="MODULE:FACTORY",
                        help="import MODULE from the Python path and call FACTORY() to get the backend "
                             "(default: none)")
    target.add_argument("--simulated", metavar="PRESET",
                        help="a simulated disk: a preset name (hp97560, hp_c2247a, wd800bd), a bundled DiskSim "
                             "drive (e.g. G4_4TB; 'diskmodel validate-trace --list') or a DiskSim drive folder "
                             "(default: none)")
    parser.add_argument("--budget-s", type=positive_seconds, default=None, metavar="S",
                        help="device time to spend [s] (default 120 for a simulated disk, 60 for real storage)")
    parser.add_argument("--json", metavar="OUT", default=None,
                        help="write the result as JSON to OUT ('-': stdout); OUT must be new or an earlier "
                             "calibration result (checked before the run starts) (default: none, no file)")
    parser.add_argument("--force", action="store_true",
                        help="let --json overwrite a regular file that is not an earlier calibration result "
                             "(never a device, a directory or the target measured) (default: off)")
    parser.add_argument("--destroy-data-on", metavar="TARGET", default=None,
                        help="also time writes and find whether the write cache is on: writes zeros over "
                             "random blocks of TARGET, DESTROYING its data; TARGET must name the target "
                             "again (the same PATH, or the same --backend spec) (default: none, read-only)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the measurement design and of the simulation (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (default: a progress bar when stderr is a terminal)")
    parser.set_defaults(handler=_run)


def _open_target(args):
    """(backend, close, path, budget, source flag) for the target the arguments name."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.harness.backend import BackendProtocolError, backend_from_spec

    if args.simulated is not None:
        from diskmodel.calibrate.harness.simulated import simulated_disk

        from diskmodel.data.disksim.bundled import preset_or_drive

        try:
            backend = simulated_disk(preset_or_drive(args.simulated), seed=args.seed)
        except (ValueError, OSError) as exc:
            raise UsageError(f"--simulated {args.simulated}: {_reason(exc)}") from exc
        return backend, None, None, args.budget_s or 120.0, f"the simulated disk {args.simulated}"
    if args.backend is not None:
        try:
            backend = backend_from_spec(args.backend)
        except BackendProtocolError as exc:
            text = str(exc)
            raise UsageError("--" + text if text.startswith("backend ") else f"--backend {args.backend}: {text}") \
                from exc
        except Exception as exc:  # the factory or the module failed in a way measure did not word
            raise UsageError(f"--backend {args.backend}: {type(exc).__name__}: {exc}") from exc
        except SystemExit as exc:  # e.g. --backend sys:exit: the factory ended the interpreter, not the run
            raise UsageError(f"--backend {args.backend}: importing or calling it called exit({exc.code!r}) "
                             f"instead of returning a backend") from exc
        return backend, getattr(backend, "close", None), None, args.budget_s or 60.0, f"--backend {args.backend}"
    from diskmodel.calibrate.harness.device import open_backend

    path = args.path
    try:
        backend = open_backend(path)
    except PermissionError as exc:
        import os

        hint = ("even root may not open it here: a container or device policy forbids it; choose another device"
                if os.geteuid() == 0 else "run as root, or choose a device you may read")
        raise UsageError(f"cannot open {path}: {exc.strerror or 'Permission denied'} ({hint})") from exc
    except OSError as exc:
        raise UsageError(f"cannot open {path}: {exc.strerror or exc}") from exc
    return backend, backend.close, path, args.budget_s or 60.0, path


def _check_destroy(args) -> None:
    """--destroy-data-on must name the target again; checked before anything is opened."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.harness.writes import same_target

    destroy = args.destroy_data_on
    if destroy is None:
        return
    if args.simulated is not None:
        raise UsageError(f"--destroy-data-on {destroy}: a simulated disk (--simulated) has no writes to calibrate")
    target = args.path if args.path is not None else args.backend
    if not same_target(destroy, target, is_path=args.path is not None):
        raise UsageError(f"--destroy-data-on {destroy} does not name the target {target}: refusing to write "
                         f"(give the target again to destroy its data; without the flag nothing is written)")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f": {exc.filename}" if exc.filename else "")
    return str(exc)


def _reserve_output(args, stack: contextlib.ExitStack, measured):
    """The --json file's place and space, taken before the run (in a run state, with SIGINT and SIGTERM
    tearing it down); nothing for no --json or '-'."""
    from diskmodel.calibrate.bench.host_executor import handle_signals
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.reserve import OutputReservation, calibration_reserve_bytes

    reservation = OutputReservation(args.json, kind="calibration", run=None, reserve_bytes=0, force=args.force,
                                    measured_paths=measured)
    if not reservation.active:
        return reservation
    stack.enter_context(handle_signals())
    reservation.run = stack.enter_context(runstate.ensure_run(f"calibrate --json {args.json}"))
    budget_s = args.budget_s or (120.0 if args.simulated is not None else 60.0)
    reservation.reserve_bytes = calibration_reserve_bytes(budget_s, args.json)
    return stack.enter_context(reservation)


def _run(args) -> int:
    from diskmodel.calibrate.harness import outputs
    from diskmodel.calibrate.cli import UsageError, flag_error
    from diskmodel.calibrate.harness.measure import BudgetTooSmall, calibrate
    from diskmodel.calibrate.harness.results import calibration_to_json

    measured = tuple(p for p in (args.path,) if p)
    _check_destroy(args)
    # The output is checked before anything is opened or measured.
    outputs.check_output_path(args.json, kind="calibration", force=args.force, measured_paths=measured)
    with contextlib.ExitStack() as stack:
        stack.enter_context(outputs.output_lock(args.json))
        reservation = _reserve_output(args, stack, measured)
        backend, close, path, budget, source = _open_target(args)
        writer = None
        try:
            backend_path = getattr(backend, "path", None)
            if args.json is not None and isinstance(backend_path, str) and backend_path not in measured:
                measured += (backend_path,)
                outputs.check_output_path(args.json, kind="calibration", force=args.force, measured_paths=measured)
                reservation.measured_paths = measured
            if args.destroy_data_on is not None:
                from diskmodel.calibrate.harness.writes import writer_for

                try:
                    writer = writer_for(backend, path)
                except (ValueError, OSError) as exc:
                    raise UsageError(f"--destroy-data-on {args.destroy_data_on}: {_reason(exc)}") from exc
            try:
                result = calibrate(backend, budget_s=budget, seed=args.seed, path=path,
                                   progress=False if args.no_progress else None, writer=writer)
            except BudgetTooSmall as exc:
                raise UsageError(_budget_advice(args, exc, source)) from exc
            except ValueError as exc:  # BackendReadError, BackendProtocolError, a measurement that failed
                raise UsageError(f"{source}: {flag_error(exc, {'budget_s': '--budget-s'})}") from exc
            except OSError as exc:
                raise OSError(exc.errno, f"{source}: reading failed: {exc.strerror or exc}") from exc
            except (ArithmeticError, TypeError, AttributeError, RuntimeError) as exc:
                if args.backend is None:
                    raise
                # a custom backend's read raised: say whose, in one line
                raise UsageError(f"{source}: the backend failed during the calibration: "
                                 f"{type(exc).__name__}: {exc}") from exc
        finally:
            if close is not None:
                close()
            if writer is not None and writer is not backend:
                writer.close()
        text = calibration_to_json(result)
        if args.json == "-":
            outputs.write_output_atomically("-", text, kind="calibration")
            return 0
        if args.json is not None:
            reservation.commit(text)
    print(result.summary())
    if path is not None:
        _print_partitions(result, path)
    return 0


def _budget_advice(args, exc, source: str) -> str:
    """The refusal of a budget too small, naming a budget that is accepted (checked on a simulated disk)."""
    shown = "--budget-s" if args.budget_s is not None else "the default --budget-s"
    minimum, checked = exc.minimum_s, False
    if args.simulated is not None:  # deterministic for its seed: rerun at the estimate until one is accepted
        from diskmodel.calibrate.harness.budget_advice import verified_minimum_s
        from diskmodel.calibrate.harness.simulated import simulated_disk
        from diskmodel.data.disksim.bundled import preset_or_drive

        disk = preset_or_drive(args.simulated)
        minimum, checked = verified_minimum_s(exc, lambda: simulated_disk(disk, seed=args.seed),
                                              {"seed": args.seed})
    what = source.replace("--backend ", "the backend ")
    if checked:
        return (f"{shown} {exc.budget_s:g} is too small: one calibration of {what} needs {minimum:g} s of device "
                f"time (a calibration at --budget-s {minimum:g} was checked to succeed); give --budget-s "
                f"{minimum:g} or more")
    return (f"{shown} {exc.budget_s:g} is too small: one calibration of {what} needs at least ~{minimum:g} s "
            f"of device time (estimated from the reads so far); give --budget-s {minimum:g} or more")


def _print_partitions(result, path) -> None:
    """The transfer rate at each partition of a block device, where it has any."""
    import os
    import stat

    try:
        if not stat.S_ISBLK(os.stat(path).st_mode):
            return
        from diskmodel.calibrate.harness.probe import probe

        device = probe(path).devices[0]
    except Exception as exc:  # the calibration stands; the partition list is extra
        print(f"partitions: not listed ({exc})", file=sys.stderr)
        return
    for row in result.partition_rates(device.partitions):
        print(f"partition {row['name']}: starts at byte {row['start_byte']}, rate there "
              f"{row['rate_at_start_bytes_per_s'] / 1e6:.1f} MB/s, at its middle "
              f"{row['rate_at_middle_bytes_per_s'] / 1e6:.1f} MB/s")
