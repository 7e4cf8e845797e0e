"""The JSON schema of the storage-stack nodes, built with pydantic v2 from the node dataclasses themselves.

Every document the project reads is validated by one library, pydantic v2
(https://docs.pydantic.dev/latest/concepts/unions/#discriminated-unions): a
node is an object ``{"kind": KIND, field: value, ...}``, read as a
discriminated union on ``kind`` over an explicit list of node types (the
stack's list is :data:`diskmodel.model.stacks.stack.NODE_TYPES`; nothing registers
itself by being imported).  The schema of each node type is made from its
frozen dataclass: its fields, their type hints and their defaults; pydantic
checks the structure (unknown and missing fields, the JSON type of each
value, the kind) and then builds the dataclass, whose ``__post_init__``
checks what only the model knows (bounds, sizes that must fit, options).

Type hints map to JSON as follows: ``int`` a whole number (a float with no
fractional part is taken, as :func:`diskmodel.model._checks.whole_number`
takes it; a bool or a string is refused), ``float`` a number, ``bool`` true
or false, ``str`` a string, a tuple a list, ``X | None`` X or null, a node
class or ``object`` a node of any kind (the dataclass refuses a kind it does
not take, naming the field), a bare ``tuple`` a list of nodes or plain
values, and any other dataclass a *record*: an object of its fields without
a kind.  A record with a ``kind`` field held by a node of several kinds (a
file system's model parameters) is written without it and takes the node's
kind (the node's ``json_fields``).

Errors are one line naming the field's path and the value:
``file_system.volume.physical_volumes[1].start_bytes: must be a whole number
(got 'x')``; what a node's own checks refuse names the node and its kind,
``file_system.volume (lvm_striped): stripe_size_bytes (3145728) must divide
extent_size_bytes ...``.
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BeforeValidator, ConfigDict, Discriminator, Strict, Tag, TypeAdapter,
                      ValidationError, WithJsonSchema, create_model)
from pydantic_core import PydanticCustomError

from .._checks import show
from .nodes import is_node_type, kinds_of_class

__all__ = ["NodeSchema", "error_line", "validation_error"]

# The tag of a value in a bare tuple field that is not a node (an object without a kind, a number).
_PLAIN = "(plain value)"


def _whole(value):
    """A finite float with no fractional part as an int (JSON writers may write 64e6 for an integer field)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


_INT = Annotated[int, Strict(), BeforeValidator(_whole)]
_SCALARS = {int: _INT, float: Annotated[float, Strict()], bool: Annotated[bool, Strict()],
            str: Annotated[str, Strict()]}


def _init_fields(cls) -> list:
    return [f for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")]


def _record_kind_taken(node_cls, record_cls) -> bool:
    """Does *record_cls* (held by *node_cls*) take the node's kind rather than write its own?"""
    return len(kinds_of_class(node_cls)) > 1 and any(f.name == "kind" for f in _init_fields(record_cls))


class _Deferred(dict):
    """A record's validated fields, built once the node holding it gives its kind."""


class NodeSchema:
    """The pydantic schema of the nodes of *node_types* (node classes, :func:`diskmodel.model.stacks.nodes.node_type`).

    Classes that say ``JSON_FORM = False`` are listed by :meth:`known_kinds` but not read from JSON.
    The pydantic models are built on first use (building them costs a few tenths of a second)."""

    def __init__(self, node_types):
        self.node_types = tuple(node_types)
        self._class_of_kind: dict[str, type] = {}
        for cls in self.node_types:
            if not is_node_type(cls):
                raise ValueError(f"{cls.__name__} is not a node type (decorate it with node_type)")
            for kind in kinds_of_class(cls):
                if kind in self._class_of_kind:
                    raise ValueError(f"kind {kind!r} is given by {self._class_of_kind[kind].__name__} and "
                                     f"{cls.__name__}")
                self._class_of_kind[kind] = cls
        self._adapter: TypeAdapter | None = None
        self._record_of: dict[tuple[type, str], type] = {}

    # -- the kinds ---------------------------------------------------------------
    def known_kinds(self) -> tuple[str, ...]:
        return tuple(sorted(self._class_of_kind))

    def readable_kinds(self) -> tuple[str, ...]:
        return tuple(k for k in self.known_kinds() if getattr(self._class_of_kind[k], "JSON_FORM", True))

    def class_of_kind(self, kind: str) -> type:
        """The node type of *kind* (ValueError naming the known kinds)."""
        cls = self._class_of_kind.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"unknown kind {show(kind)} (known: {', '.join(self.known_kinds())})")
        return cls

    def record_of(self, cls, name: str) -> type | None:
        """The record class field *name* of *cls* holds (None: not a record field)."""
        self.adapter()
        return self._record_of.get((cls, name))

    # -- the pydantic schema -----------------------------------------------------
    def adapter(self) -> TypeAdapter:
        """The TypeAdapter of one node of any readable kind."""
        if self._adapter is None:
            self._adapter = self._build()
        return self._adapter

    def _build(self) -> TypeAdapter:
        models, records = [], {}
        choices = []
        for kind, cls in self._class_of_kind.items():
            if not getattr(cls, "JSON_FORM", True):
                continue
            model = self._model(cls, kind, records)
            models.append(model)
            choices.append(Annotated[model, AfterValidator(_builder(cls, kind)), Tag(kind)])
        node = Annotated[Union[tuple(choices)], Discriminator(_kind_tag)]
        plain = Annotated[Any, Tag(_PLAIN), WithJsonSchema({"not": {"type": "object", "required": ["kind"]}})]
        node_or_plain = Annotated[Union[(*choices, plain)], Discriminator(_kind_or_plain)]
        namespace = {"Node": node, "NodeOrPlain": node_or_plain}
        for model in [*models, *records.values()]:
            model.model_rebuild(_types_namespace=namespace)
        return TypeAdapter(node)

    def _model(self, cls, kind: str | None, records: dict, *, skip_kind: bool = False):
        """The pydantic model of the fields of *cls*: a node type read as *kind*, or (kind None) a record."""
        hints = typing.get_type_hints(cls)
        fields = {}
        for f in _init_fields(cls):
            if f.name == "kind" and (skip_kind or kind is not None):
                continue
            annotation = self._annotation(hints[f.name], cls, f.name, records)
            if f.default is not dataclasses.MISSING:
                fields[f.name] = (annotation, f.default)
            elif f.default_factory is not dataclasses.MISSING:
                fields[f.name] = (annotation, f.default_factory())
            else:
                fields[f.name] = (annotation, ...)
        if kind is not None:
            fields["kind"] = (Literal[kind], ...)
        name = f"{cls.__name__}Record" if kind is None else f"{kind.title().replace('_', '')}Node"
        return create_model(name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **fields)

    def _annotation(self, hint, cls, name: str, records: dict):
        """The pydantic annotation of a field's type hint (see the module doc)."""
        if hint is object or (isinstance(hint, type) and is_node_type(hint)):
            return "Node"
        if hint is tuple:
            return "tuple[NodeOrPlain, ...]"
        if hint in _SCALARS:
            return _SCALARS[hint]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (Union, types.UnionType):
            inner = [self._annotation(a, cls, name, records) for a in args if a is not type(None)]
            kept = [_resolved(a) for a in inner]
            return Union[(*kept, None)] if type(None) in args else Union[tuple(kept)]
        if origin is tuple:
            item = args[0] if len(args) == 2 and args[1] is Ellipsis else Any
            return tuple[_resolved(self._annotation(item, cls, name, records)), ...]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            self._record_of[(cls, name)] = hint
            taken = _record_kind_taken(cls, hint)
            key = (hint, taken)
            if key not in records:
                records[key] = self._model(hint, None, records, skip_kind=taken)
            return Annotated[records[key], AfterValidator(_record_builder(hint, deferred=taken))]
        return Any

    # -- reading -------------------------------------------------------------------
    def read(self, data, path: str = ""):
        """The node tree of *data* (parsed JSON), or ValueError: one line naming the field's path (*path*
        prefixed) and the value."""
        try:
            return self.adapter().validate_python(data)
        except ValidationError as exc:
            raise ValueError(error_line(exc, data, path, self)) from None


def _resolved(annotation):
    """A forward reference by name ("Node") as the typing form create_model resolves on rebuild."""
    return typing.ForwardRef(annotation) if isinstance(annotation, str) else annotation


def _kind_tag(value):
    if isinstance(value, dict):
        return value.get("kind")
    return None


def _kind_or_plain(value):
    if isinstance(value, dict) and "kind" in value:
        return value["kind"]
    return _PLAIN


def _values(model) -> dict:
    """The fields given in the document (a field left out takes the dataclass's default)."""
    return {name: getattr(model, name) for name in model.model_fields_set}


def _builder(cls, kind: str):
    """The after-validator that builds the node dataclass *cls* of *kind* from its validated fields."""
    several = len(kinds_of_class(cls)) > 1

    def build(model):
        values = _values(model)
        for name, value in list(values.items()):
            if isinstance(value, _Deferred):
                record = _record_class(cls, name)
                try:
                    values[name] = record(**{**value, "kind": kind})
                except (ValueError, TypeError) as exc:
                    raise PydanticCustomError("node_check", "{message}", {"message": str(exc), "field": name,
                                                                          "what": record.__name__}) from None
        if several:
            values["kind"] = kind
        else:
            values.pop("kind", None)
        try:
            return cls(**values)
        except (ValueError, TypeError) as exc:
            raise PydanticCustomError("node_check", "{message}", {"message": str(exc), "what": kind}) from None

    return build


def _record_class(cls, name: str) -> type:
    hint = typing.get_type_hints(cls)[name]
    found = [a for a in (hint, *typing.get_args(hint)) if isinstance(a, type) and dataclasses.is_dataclass(a)]
    return found[0]


def _record_builder(cls, *, deferred: bool):
    def build(model):
        values = _values(model)
        if deferred:
            return _Deferred(values)
        try:
            return cls(**values)
        except (ValueError, TypeError) as exc:
            raise PydanticCustomError("node_check", "{message}", {"message": str(exc),
                                                                  "what": cls.__name__}) from None

    return build


# ------------------------------------------------------------------ errors

# What a value must be, by pydantic's error type (https://docs.pydantic.dev/latest/errors/validation_errors/).
_MUST_BE = {
    "int_type": "must be a whole number", "int_from_float": "must be a whole number",
    "int_parsing": "must be a whole number", "float_type": "must be a number", "float_parsing": "must be a number",
    "bool_type": "must be true or false", "bool_parsing": "must be true or false", "string_type": "must be a string",
    "tuple_type": "must be a list", "list_type": "must be a list", "model_type": "must be an object",
    "dataclass_type": "must be an object", "dict_type": "must be an object", "literal_error": "must be one of",
    "finite_number": "must be a finite number", "greater_than": "must be >", "greater_than_equal": "must be >=",
    "less_than": "must be <", "less_than_equal": "must be <=",
}


def _path(parts) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + (path if path.startswith("[") else "." + path)


def _walk(loc, data, schema: NodeSchema | None):
    """(field path parts, the input at each step) of a pydantic error location, the union tags left out.

    A discriminated union puts the tag it chose after the position of the node; the node's own
    ``kind`` tells it from a field of that name."""
    parts, seen = [], [data]
    current = data
    tagged = False
    for part in loc:
        if not tagged and isinstance(current, dict) and (current.get("kind") == part or part == _PLAIN):
            tagged = True
            continue
        parts.append(part)
        tagged = False
        try:
            current = current[part]
        except (KeyError, IndexError, TypeError):
            current = None
        seen.append(current)
    return parts, seen


def _fields_text(value, schema: NodeSchema | None, parent=None) -> str:
    """'kind partition, fields: a, b, c' of the node object *value* (or the record's fields)."""
    cls = None
    if isinstance(value, dict) and schema is not None and value.get("kind") in schema._class_of_kind:
        cls = schema._class_of_kind[value["kind"]]
        names = [f.name for f in _init_fields(cls) if f.name != "kind"]
        return f"kind {value['kind']} has the fields {', '.join(names)}"
    if parent is not None:
        names = [f.name for f in _init_fields(parent) if f.name != "kind"]
        return f"{parent.__name__} has the fields {', '.join(names)}"
    return ""


def error_line(exc: ValidationError, data, prefix: str = "", schema: NodeSchema | None = None) -> str:
    """The first error of *exc* as one line: the field's path (after *prefix*), what is wrong, the value."""
    error = exc.errors(include_url=False)[0]
    parts, seen = _walk(error["loc"], data, schema)
    where = _join(prefix, _path(parts))
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "node_check":
        field = ctx.get("field")
        node = _join(where, field) if field else where
        return f"{node or 'node'} ({ctx['what']}): {ctx['message']}"
    if kind == "value_error":  # a reader's own check: its message names what the value must be, and the value
        return f"{where or 'data'}: {ctx.get('error', error['msg'])}"
    if kind == "extra_forbidden":
        owner = seen[-2] if len(seen) >= 2 else None
        known = _fields_text(owner, schema, _owner_record(parts, seen, schema))
        return f"{where}: unknown field ({known})" if known else f"{where}: unknown field"
    if kind == "missing":
        owner, record = seen[-2] if len(seen) >= 2 else None, _owner_record(parts, seen, schema)
        what = (f" of kind {owner['kind']}" if isinstance(owner, dict) and "kind" in owner and record is None
                else f" of {record.__name__}" if record is not None else "")
        return f"{where}: required field{what} is missing"
    if kind == "union_tag_invalid":
        known = ", ".join(schema.readable_kinds()) if schema is not None else ctx.get("expected_tags", "")
        return f"{where or 'node'}: unknown kind {show(ctx.get('tag'))} (known: {known})"
    if kind == "union_tag_not_found":
        return f"{where or 'node'}: must be an object with a 'kind' (got {show(value)})"
    if kind == "literal_error":
        return f"{where}: must be one of {ctx.get('expected')} (got {show(value)})"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = next(iter(ctx.values()), "")
        return f"{where}: {_MUST_BE[kind]} {bound} (got {show(value)})"
    must = _MUST_BE.get(kind)
    if must is None:
        return f"{where}: {error['msg']} (got {show(value)})"
    return f"{where}: {must} (got {show(value)})"


def _owner_record(parts, seen, schema: NodeSchema | None):
    """The record class whose unknown field an error names (None: a node, or not known)."""
    if schema is None or len(parts) < 2:
        return None
    # the record is the value of field parts[-2] (or an item of it) of the nearest node above
    for i in range(len(seen) - 2, -1, -1):
        value = seen[i]
        if isinstance(value, dict) and value.get("kind") in schema._class_of_kind:
            cls = schema._class_of_kind[value["kind"]]
            field = parts[i] if i < len(parts) else None
            return schema.record_of(cls, field) if isinstance(field, str) else None
    return None


def validation_error(exc: ValidationError, data, prefix: str = "") -> ValueError:
    """*exc* as a ValueError of one line (:func:`error_line`), for a document with no nodes."""
    return ValueError(error_line(exc, data, prefix))
