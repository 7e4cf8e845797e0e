"""The field reference of the stack JSON, generated from the node definitions.

Every node kind of :data:`diskmodel.model.stacks.stack.NODE_TYPES`, the list whose
pydantic schema reads a stack file (:class:`diskmodel.model.stacks.schema.NodeSchema`),
(and the plain records some of them hold: a network link, LVM segments, a file system's
model parameters) is listed with its fields as the node's dataclass declares
them: the name, the type, the unit, the default (or "required") and a
one-line meaning.  The meaning and the type are the first sentence and the
type of the field's entry in the class docstring's numpy ``Attributes``
section; the unit is the ``[unit]`` that entry states, else the one the
field's name carries (``_bytes``, ``_s``, ``_bytes_per_s``, ``_s_per_byte``,
the house rule of SI names).  Nothing is copied by hand: a field added to a
node appears here, and one whose docstring entry is missing shows as
undocumented (``tests/test_cli_predict.py`` fails on it).

``diskmodel stack-schema`` prints :func:`schema_text` (or :func:`schema` as
JSON), and the documentation's stack-file page is :func:`schema_markdown`.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import math
import re
import typing

from . import nodes
from . import stack as _stack
from .schema import NodeSchema

#: The meaning of a field the class docstring does not describe.
UNDOCUMENTED = "(undocumented)"

# Units that a field's name carries, longest suffix first (house rule: SI units in names).
_UNIT_OF_SUFFIX = (("_bytes_per_s", "bytes/s"), ("_s_per_byte", "s/byte"), ("_bytes", "bytes"), ("_s", "s"))

# A docstring's bracketed unit ("[bytes]", "[s]", "[count]", "[bytes/s of frames, ...]"; "[KiB]" only for a
# kernel setting named in its sysfs unit, a drive's max_sectors_kb).
_UNIT_TEXT = re.compile(r"\[((?:bytes/s|s/byte|bytes|s|count|KiB)\b[^\]]*)\]")


def _attribute_entries(cls) -> dict[str, tuple[str, str]]:
    """{field name: (docstring type, description)} of the numpy ``Attributes`` section of *cls*'s docstring.

    An entry may name several fields ("wsize_bytes, rsize_bytes : int"); each gets the entry.
    """
    doc = inspect.cleandoc(cls.__doc__ or "")
    lines = doc.splitlines()
    entries: dict[str, tuple[str, str]] = {}
    try:
        start = next(i for i, line in enumerate(lines[:-1])
                     if line.strip() == "Attributes" and re.fullmatch(r"-{3,}", lines[i + 1].strip()))
    except StopIteration:
        return entries
    names: list[str] = []
    kind, text = "", []
    for line in lines[start + 2:]:
        if line and not line[0].isspace():
            if re.fullmatch(r"-{3,}", line.strip()):  # the next section's underline: its title was read as a name
                names = []
                break
            _store(entries, names, kind, text)
            head, _, kind = line.partition(" : ")
            names = [n.strip() for n in head.split(",") if n.strip()]
            kind, text = kind.strip(), []
        elif line.strip():
            text.append(line.strip())
    _store(entries, names, kind, text)
    return entries


def _store(entries, names, kind, text) -> None:
    for name in names:
        entries[name] = (kind, " ".join(text))


def _plain_text(text: str) -> str:
    """reStructuredText markup removed: ``x`` -> x, :func:`~a.b` -> b, *x* -> x."""
    text = re.sub(r":\w+:`~?([^`<]*?)(?:\s*<[^>]*>)?`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    text = text.replace("``", "")
    return re.sub(r"(?<!\w)\*([^*\s][^*]*)\*(?!\w)", r"\1", text)


def _first_sentence(text: str) -> str:
    text = _plain_text(text).strip()
    match = re.search(r"(?<![eE]\.g)(?<![iI]\.e)(?<!\bvs)(?<!\beq)(?<!\bEq)\.(\s|$)", text)
    sentence = text[:match.start() + 1] if match else text
    return sentence.strip()


def _unit(name: str, description: str) -> str | None:
    found = _UNIT_TEXT.search(description)
    if found:
        return found.group(1).strip()
    for suffix, unit in _UNIT_OF_SUFFIX:
        if name.endswith(suffix):
            return unit
    return None


def _default(field: dataclasses.Field):
    """(required, default as JSON data) of a dataclass field (a non-finite float as its text, "inf")."""
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return True, None
    return False, _json_value(value)


def _json_value(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return nodes.to_json_data(value) if nodes.is_node(value) else {
            f.name: _json_value(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    return value


def _records_in(hint) -> list[type]:
    """The plain (non-node) dataclasses a type hint names, at any depth (``tuple[Segment, ...] | None``)."""
    if isinstance(hint, type):
        return [hint] if dataclasses.is_dataclass(hint) and not nodes.is_node_type(hint) else []
    return [cls for arg in typing.get_args(hint) for cls in _records_in(arg)]


def _fields(cls, skip: tuple[str, ...] = ()) -> tuple[list[dict], dict[str, type]]:
    """(the JSON fields of *cls* as schema entries, {field: record class} of the fields holding records)."""
    docs = _attribute_entries(cls)
    hints = typing.get_type_hints(cls)
    out, records = [], {}
    for field in dataclasses.fields(cls):
        if not field.init or field.name.startswith("_") or field.name in skip:
            continue
        doc_type, description = docs.get(field.name, ("", ""))
        required, default = _default(field)
        found = _records_in(hints.get(field.name))
        if found:  # the record class the schema reads the field into (NodeSchema.record_of)
            records[field.name] = found[0]
        out.append({
            "name": field.name,
            "type": doc_type or str(field.type),
            "unit": _unit(field.name, description),
            "required": required,
            "default": default,
            "meaning": _first_sentence(description) if description else UNDOCUMENTED,
        })
    return out, records


def _summary(cls) -> str:
    return _first_sentence(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].replace("\n", " "))


def _has_json_form(cls) -> bool:
    """Can a node of *cls* be written to a stack file? (not one that says ``JSON_FORM = False``, :mod:`.nodes`)"""
    return bool(getattr(cls, "JSON_FORM", True))


def schema(node_schema: NodeSchema | None = None) -> dict:
    """The stack JSON's field reference, as JSON data, of *node_schema* (default the stack file's,
    :data:`diskmodel.model.stacks.stack.NODE_SCHEMA`).

    ``{"format": ..., "format_version": ..., "stack": [top-level fields], "kinds": {kind: {"class", "summary",
    "json": bool, "fields": [...], "records": {field: record name}}}, "records": {name: {"summary", "fields"}},
    "json_schema": the JSON Schema of one node, as pydantic generates it from the schema that reads it}``;
    each field is ``{"name", "type", "unit", "required", "default", "meaning"}`` (unit None: a number without
    one, or not a number).
    """
    node_schema = _stack.NODE_SCHEMA if node_schema is None else node_schema
    kinds, records = {}, {}
    pending: list[tuple[type, tuple[str, ...]]] = []
    for kind in node_schema.known_kinds():
        cls = node_schema.class_of_kind(kind)
        several = len(nodes.kinds_of_class(cls)) > 1
        fields, held = _fields(cls, skip=("kind",) if several else ())
        kinds[kind] = {"class": f"{cls.__module__}.{cls.__qualname__}", "summary": _summary(cls),
                       "json": _has_json_form(cls), "fields": fields,
                       "records": {name: record.__name__ for name, record in held.items()}}
        # a file system node writes its parameters without the kind its own kind says (FileSystemNode.json_fields);
        # a node without a JSON form has no records in a stack file
        pending += [(record, ("kind",)) for record in held.values()] if _has_json_form(cls) else []
    while pending:
        record, skip = pending.pop(0)
        if record.__name__ in records:
            continue
        fields, held = _fields(record, skip=skip)
        records[record.__name__] = {"class": f"{record.__module__}.{record.__qualname__}",
                                    "summary": _summary(record), "fields": fields}
        pending += [(r, ()) for r in held.values()]
    top, _ = _fields(_stack.Stack)
    return {"format": _stack.FORMAT, "format_version": _stack.FORMAT_VERSION, "stack": top,
            "kinds": kinds, "records": records, "json_schema": node_schema.adapter().json_schema()}


def plain_number(value) -> str:
    """A number as people read it: digits, never scientific notation (1e-05 -> "0.00001", 4e9 -> "4000000000")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e18:
        return str(int(value))
    text = f"{value:.12f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _shown_default(entry: dict) -> str:
    if entry["required"]:
        return "required"
    value = entry["default"]
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return plain_number(value) + (f" {entry['unit']}" if entry["unit"] in ("bytes", "s", "bytes/s", "KiB") else "")
    if isinstance(value, str):
        return f'"{value}"' if value else '""'
    return json.dumps(value)


def _field_lines(fields: list[dict], records: dict[str, str] | None = None) -> list[str]:
    lines = []
    for entry in fields:
        unit = f" [{entry['unit']}]" if entry["unit"] else ""
        held = f" (fields: {records[entry['name']]} below)" if records and entry["name"] in records else ""
        lines.append(f"    {entry['name']}{unit}: {entry['type']}, default {_shown_default(entry)}")
        lines.append(f"        {entry['meaning']}{held}")
    return lines


def _groups(data: dict) -> list[tuple[list[str], dict]]:
    """The kinds grouped by their class (raid0 ... raid6 share one list of fields)."""
    groups: dict[str, tuple[list[str], dict]] = {}
    for kind, entry in data["kinds"].items():
        groups.setdefault(entry["class"], ([], entry))[0].append(kind)
    return list(groups.values())


def schema_text(data: dict | None = None) -> str:
    """The field reference as text, one block per node kind (the output of ``diskmodel stack-schema``)."""
    data = schema() if data is None else data
    lines = [f"A stack file is one JSON object: \"format\": \"{data['format']}\", \"format_version\": "
             f"{data['format_version']}, and the fields below (units: SI, bytes and seconds; 1 MB = 10^6 bytes).",
             "Each node is an object {\"kind\": KIND, field: value, ...}; a field left out takes its default.",
             "", "stack file (top level)"]
    lines += _field_lines(data["stack"])
    for kinds, entry in _groups(data):
        lines += ["", f"kind {', '.join(kinds)}: {entry['summary']}"
                  + ("" if entry["json"] else " (no JSON form: in a stack built in Python only)")]
        lines += _field_lines(entry["fields"], entry["records"])
    for name, record in data["records"].items():
        lines += ["", f"{name} (an object without a kind): {record['summary']}"]
        lines += _field_lines(record["fields"])
    return "\n".join(lines) + "\n"


def schema_markdown(data: dict | None = None) -> str:
    """The field reference as a Markdown page (the documentation's stack-file page), one table per kind."""
    data = schema() if data is None else data

    def table(fields):
        rows = ["| field | type | unit | default | meaning |", "|---|---|---|---|---|"]
        for entry in fields:
            cells = [f"`{entry['name']}`", entry["type"], entry["unit"] or "", _shown_default(entry),
                     entry["meaning"]]
            escaped = (c.replace("|", "\\|").replace("*", "\\*").replace("<", "\\<") for c in cells)
            rows.append("| " + " | ".join(escaped) + " |")
        return rows

    lines = ["# Stack file reference", "",
             "Generated from the node definitions (`diskmodel.model.stacks.stack_schema`), as "
             "`diskmodel stack-schema` prints it (`--json` for the same as JSON). A stack file is one JSON "
             f"object with `\"format\": \"{data['format']}\"` and `\"format_version\": {data['format_version']}`; "
             "each node is an object `{\"kind\": KIND, field: value, ...}`, and a field left out takes its "
             "default. Units are SI: bytes, seconds; 1 MB = 10⁶ bytes.", "", "## The stack file (top level)", ""]
    lines += table(data["stack"])
    for kinds, entry in _groups(data):
        lines += ["", f"## Kind {', '.join(kinds)}", "", entry["summary"], ""]
        lines += table(entry["fields"])
    for name, record in data["records"].items():
        lines += ["", f"## {name} (an object without a kind)", "", record["summary"], ""]
        lines += table(record["fields"])
    return "\n".join(lines) + "\n"
