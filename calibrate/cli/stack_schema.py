"""``diskmodel stack-schema``: the fields of each node kind of a stack file, with units, defaults and meaning.

The reference is generated from the node definitions
(:mod:`diskmodel.model.stacks.stack_schema`): the dataclasses' fields and defaults
and their docstrings' ``Attributes`` entries; ``--json`` prints the same as
one JSON object, for notebooks and the documentation.
"""
from __future__ import annotations

import json


def add_parser(subparsers) -> None:
    from diskmodel.model.stacks.stack import NODE_SCHEMA

    parser = subparsers.add_parser(
        "stack-schema", help="list the fields of each node kind of a stack file (--stack FILE.json)",
        description="The fields of each node kind of a stack description (diskmodel predict --stack, diskmodel "
                    "bench --stack): name, type, unit, default and meaning, generated from the node definitions.",
        epilog="Units are SI: bytes and seconds, 1 MB = 10^6 bytes. A field left out takes its default.")
    parser.add_argument("--kind", choices=NODE_SCHEMA.known_kinds(), metavar="KIND",
                        help="only this node kind and the records it holds (one of: "
                             f"{', '.join(NODE_SCHEMA.known_kinds())}) (default: every kind)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (default: text)")
    parser.set_defaults(handler=_run)


def _only(data: dict, kind: str) -> dict:
    """*data* with the kinds other than *kind* (and the records it does not hold) left out."""
    entry = data["kinds"][kind]
    wanted, queue = set(), list(entry["records"].values())
    while queue:
        name = queue.pop()
        if name in wanted or name not in data["records"]:
            continue
        wanted.add(name)
        queue += [field["type"] for field in data["records"][name]["fields"] if field["type"] in data["records"]]
    kinds = {k: v for k, v in data["kinds"].items() if v["class"] == entry["class"] and k == kind}
    return {**data, "kinds": kinds, "records": {n: r for n, r in data["records"].items() if n in wanted}}


def _run(args) -> int:
    from diskmodel.model.stacks.stack_schema import schema, schema_text

    data = schema()
    if args.kind is not None:
        data = _only(data, args.kind)
    if args.json:
        print(json.dumps(data, indent=1, allow_nan=False))
    else:
        print(schema_text(data), end="")
    return 0
