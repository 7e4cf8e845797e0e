"""``diskmodel probe [DEVICE] [--json]``: list block devices and whether they are in use."""
from __future__ import annotations


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="list block devices: size, block sizes, scheduler, mounts, swap, partitions, virtualisation",
        description=(
            "List block devices through pyudev, or plain sysfs where the udev database is "
            "absent (the output says which). The rotational flag is a hint only: virtual disks lie."
        ),
    )
    parser.add_argument("device", nargs="?", default=None, help="a device name or path (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts (default: a table)")
    parser.add_argument(
        "--source",
        choices=("auto", "pyudev", "sysfs"),
        default="auto",
        help="force the device source (default: pyudev where the udev database exists, else sysfs)",
    )
    parser.add_argument("--all", action="store_true",
                        help="also list devices of size 0, such as unattached loop devices (default: off)")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.harness.probe import format_table, probe

    try:
        result = probe(args.device, source=args.source, include_empty=args.all)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        what = f"DEVICE {args.device}" if args.device is not None else f"--source {args.source}"
        text = exc.strerror if isinstance(exc, OSError) and exc.strerror and exc.filename else str(exc)
        named = args.device is not None and args.device in text
        raise UsageError(text if named else f"{what}: {text}") from exc
    print(result.to_json() if args.json else format_table(result))
    return 0
