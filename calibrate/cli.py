"""The ``diskmodel`` command line.

Each subcommand lives in its own module of this package, which provides
``add_parser(subparsers)``; that function adds the subparser and sets
``handler`` (a function of the parsed arguments returning an exit code).
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules of diskmodel.calibrate that each add one subcommand, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "cmd_experiment",
    "cmd_calibrate",
    "cmd_predict",
    "cmd_probe",
    "cmd_postmark",
    "cmd_validate_trace",
    "cmd_cleanup",
)


class UsageError(Exception):
    """A bad argument or input file; printed as ``diskmodel: error: ...`` with exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="diskmodel",
        description="Predict how fast a storage layout will be, and why.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"diskmodel.calibrate.{name}")
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.handler(args) or 0)
    except (UsageError, ValueError, FileNotFoundError) as exc:
        print(f"diskmodel: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("diskmodel: interrupted; everything this run built was torn down", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
