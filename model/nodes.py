"""The node types of a storage stack, keyed by a ``kind`` string, and their JSON form.

A storage stack (:mod:`diskmodel.model.stack`) is a tree of frozen
dataclasses: a file system on a volume, a volume on partitions, partitions
on named disks.  Each class in the tree is a *node type* registered here
under one or more ``kind`` strings, which is how the tree reads from and
writes to JSON: a node is an object ``{"kind": ..., field: value, ...}``.

A new layer (RAID 1/5/6, a thin pool, a loop file, NBD or NFS) is a new
class decorated with :func:`node_type` in its own module; nothing else
changes here or in the other node types.  What a node type may offer:

* ``describe() -> str``: one line for :meth:`Stack.describe`;
* ``JSON_RECORDS``: {field: class} for fields holding plain frozen
  dataclasses that are not nodes (e.g. an LV's segments), written as objects
  without a kind;
* ``json_fields()`` / ``from_json_fields(kind, fields, path)``: to change how its
  fields are written and read (the file system writes its model parameters
  without repeating the kind);
* a field named ``kind``: for a class registered under several kinds (a
  file system of kind ext2, ext3, ...), the instance's own kind;
* ``JSON_FORM = False``: for a node that has no JSON form (a Disk object in
  memory); the field reference says so.

Field docs: each field of a node type (and of a record it holds) is
described in its class docstring's numpy ``Attributes`` section, one entry
``name : type`` with the meaning in its first sentence and the unit as
``[unit]`` (or in the field's name: ``_bytes``, ``_s``, ``_bytes_per_s``).
:mod:`diskmodel.model.stack_schema` builds the stack file's field reference
(``diskmodel stack-schema``) from those entries, the fields' defaults and
their types, so a new field is documented where it is declared.

Consumers of the tree (the model, provisioning) look at nodes through
:func:`child_nodes` and :func:`walk`.

A *block* node (anything a file system or another layer may sit on: a
partition, an LVM volume, a RAID array, a thin volume, a loop file, a
network block device) follows the block-layer protocol of
:mod:`diskmodel.model.block`:

* ``size_bytes``: what it presents to the layer above [bytes];
* ``block_time(requests, env) -> BlockTime``: the expected cost of one of
  *requests* (:class:`~diskmodel.model.block.BlockRequests`: size, read or
  write, sequential or random, queue depth, fresh blocks or not) on it,
  made from ``child.block_time(...)`` of the requests it sends to the nodes
  below (in series: :func:`~diskmodel.model.block.serial`; at once on
  several members: :func:`~diskmodel.model.block.parallel`) plus its own
  costs as named parts (``BlockTime.plus(name_s=...)``); *env*
  (:class:`~diskmodel.model.block.BlockEnv`) gives the Disk of a disk name;
* children as fields holding nodes or tuples of nodes (found by :func:`walk`),
  and sizes that do not fit them refused in ``__post_init__`` naming the field.

A new layer implements those and registers itself with :func:`node_type`;
``diskmodel predict --stack`` and the block workloads
(:mod:`diskmodel.model.block_workloads`) then take it with no other change
(the NBD example in :mod:`diskmodel.model.block`'s docstring).

A *volume* node (what a file system is
made on) offers the model ``size_bytes``, ``physical_span``,
``physical_pieces(start, size)`` (where a logical region lies on the disk),
``segment_table()``, ``is_lvm`` and ``mapping_complexity``
(:class:`diskmodel.model.volume_on_disk.VolumeOnDisk` asks for nothing
else); provisioning keeps its own registry of builders per node type
(:func:`diskmodel.calibrate.bench.provision.builds`).
"""
from __future__ import annotations

import dataclasses

from ._checks import show

_CLASS_OF_KIND: dict[str, type] = {}
_KINDS_OF_CLASS: dict[type, tuple[str, ...]] = {}


def node_type(*kinds: str):
    """Class decorator: register a frozen dataclass as the node type of *kinds* (unique strings)."""
    if not kinds or not all(isinstance(k, str) and k for k in kinds):
        raise ValueError(f"kinds must be non-empty strings (got {show(kinds)})")

    def register(cls):
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"a node type must be a dataclass (got {cls.__name__})")
        taken = [k for k in kinds if k in _CLASS_OF_KIND and _CLASS_OF_KIND[k] is not cls]
        if taken:
            raise ValueError(f"kinds {taken} are registered already (to {_CLASS_OF_KIND[taken[0]].__name__})")
        for kind in kinds:
            _CLASS_OF_KIND[kind] = cls
        _KINDS_OF_CLASS[cls] = tuple(kinds)
        return cls

    return register


#: Characters no text field of a node may hold: the shell's command separators, substitutions, redirections
#: and quotes (POSIX sh, "Shell Command Language" 2.2 and 2.4), so that no name, path or option can end or
#: start a command wherever it is written (a device name, a script the VM runs).
SHELL_METACHARACTERS = frozenset(";|&$`<>()\\'\"")


def text_field(name: str, value, *, empty_ok: bool = True) -> str:
    """A node's text field: a one-line str (non-empty unless *empty_ok*) with no shell metacharacter or
    control character (:data:`SHELL_METACHARACTERS`), or ValueError naming *name*."""
    if not isinstance(value, str) or (not empty_ok and not value) or "\n" in value:
        raise ValueError(f"{name} must be a {'' if empty_ok else 'non-empty '}one-line string (got {show(value)})")
    bad = sorted({c for c in value if c in SHELL_METACHARACTERS or ord(c) < 32 or ord(c) == 127})
    if bad:
        shown = " ".join(repr(c)[1:-1] for c in bad)
        raise ValueError(f"{name} must hold no shell metacharacter or control character: {show(value)} holds "
                         f"{shown} (use letters, digits, spaces and . _ - / : + @ , =)")
    return value


def is_node(value) -> bool:
    """Is *value* an instance of a registered node type?"""
    return type(value) in _KINDS_OF_CLASS


def kind_of(node) -> str:
    """The ``kind`` string of *node* (its own ``kind`` field for a class of several kinds)."""
    kinds = _KINDS_OF_CLASS.get(type(node))
    if kinds is None:
        raise ValueError(f"{type(node).__name__} is not a registered node type")
    return getattr(node, "kind") if len(kinds) > 1 else kinds[0]


def known_kinds() -> tuple[str, ...]:
    return tuple(sorted(_CLASS_OF_KIND))


def is_node_type(cls) -> bool:
    """Is *cls* a registered node type (a class, where :func:`is_node` takes an instance)?"""
    return cls in _KINDS_OF_CLASS


def class_of_kind(kind: str) -> type:
    """The node type registered under *kind* (ValueError naming the known kinds)."""
    cls = _CLASS_OF_KIND.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown kind {show(kind)} (known: {', '.join(known_kinds())})")
    return cls


def kinds_of_class(cls) -> tuple[str, ...]:
    """The kinds *cls* is registered under (one, or several for a class with a ``kind`` field)."""
    return _KINDS_OF_CLASS[cls]


def _init_fields(cls) -> list:
    return [f for f in dataclasses.fields(cls) if f.init]


def child_nodes(node) -> list[tuple[str, object]]:
    """(field path, node) of the nodes directly below *node*, in field order ("volume", "physical_volumes[1]")."""
    out = []
    for f in _init_fields(type(node)):
        value = getattr(node, f.name)
        if is_node(value):
            out.append((f.name, value))
        elif isinstance(value, tuple):
            out += [(f"{f.name}[{i}]", item) for i, item in enumerate(value) if is_node(item)]
    return out


def walk(node, path: str = ""):
    """Yield (path, node, depth) for *node* and every node below it, depth first, parents before children."""
    def visit(current, where, depth):
        yield where, current, depth
        for name, child in child_nodes(current):
            yield from visit(child, f"{where}.{name}" if where else name, depth + 1)

    yield from visit(node, path, 0)


# ------------------------------------------------------------------ JSON

def _plain(value, path: str):
    """A field value as JSON data: nodes as objects with a kind, records as objects, tuples as lists."""
    if is_node(value):
        return to_json_data(value, path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), f"{path}.{f.name}") for f in _init_fields(type(value))}
    if isinstance(value, (tuple, list)):
        return [_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _plain(item, f"{path}.{key}") for key, item in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"{path}: {type(value).__name__} {show(value)} has no JSON form")


def to_json_data(node, path: str = "") -> dict:
    """*node* and everything below it as JSON data (dicts, lists, numbers, strings)."""
    fields = node.json_fields() if hasattr(node, "json_fields") else {
        f.name: getattr(node, f.name) for f in _init_fields(type(node)) if f.name != "kind"}
    out = {"kind": kind_of(node)}
    for name, value in fields.items():
        out[name] = _plain(value, f"{path}.{name}" if path else name)
    return out


def record_from_json(cls, data, path: str):
    """A plain (non-node) frozen dataclass from a JSON object, errors naming *path* and the field."""
    if not isinstance(data, dict):
        raise ValueError(f"{path}: must be an object of {cls.__name__} fields (got {show(data)})")
    return _construct(cls, {k: _from_plain(v, f"{path}.{k}") for k, v in data.items()}, path, cls.__name__)


def _from_plain(value, path: str):
    """JSON data as field values: objects with a kind as nodes, lists as tuples, other objects as dicts."""
    if isinstance(value, dict) and "kind" in value:
        return from_json_data(value, path)
    if isinstance(value, list):
        return tuple(_from_plain(item, f"{path}[{i}]") for i, item in enumerate(value))
    return value


def _construct(cls, fields: dict, path: str, what: str):
    """cls(**fields), its errors reworded to name the node (*path*, *what*) and the field."""
    where = f"{path} ({what})" if path else what
    names = [f.name for f in _init_fields(cls)]
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(names)})")
    missing = [f.name for f in _init_fields(cls) if f.name not in fields
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f"{where}: field {missing[0]!r} is missing")
    try:
        return cls(**fields)
    except (ValueError, TypeError) as exc:  # TypeError: a JSON value the constructor cannot take at all
        raise ValueError(f"{where}: {exc}") from None


def from_json_data(data, path: str = ""):
    """The node tree that :func:`to_json_data` wrote (ValueError naming the node's path and the field)."""
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError(f"{path or 'node'}: must be an object with a 'kind' (got {show(data)})")
    kind = data["kind"]
    cls = _CLASS_OF_KIND.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"{path or 'node'}: unknown kind {kind!r} (known: {', '.join(known_kinds())})")
    records = getattr(cls, "JSON_RECORDS", {})
    fields = {}
    for name, value in data.items():
        if name == "kind":
            continue
        where = f"{path}.{name}" if path else name
        if name in records and isinstance(value, list):
            fields[name] = tuple(record_from_json(records[name], item, f"{where}[{i}]")
                                 for i, item in enumerate(value))
        elif name in records and value is not None:
            fields[name] = record_from_json(records[name], value, where)
        else:
            fields[name] = _from_plain(value, where)
    if hasattr(cls, "from_json_fields"):
        fields = cls.from_json_fields(kind, fields, path)
    elif len(_KINDS_OF_CLASS[cls]) > 1:
        fields["kind"] = kind
    return _construct(cls, fields, path, kind)
