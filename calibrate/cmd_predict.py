"""``diskmodel predict``: placeholder until the prediction API lands."""
from __future__ import annotations


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("predict", help="predict PostMark throughput for a layout")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    raise NotImplementedError("diskmodel predict lands with the model-core issue")
