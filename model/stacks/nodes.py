"""The node types of a storage stack, keyed by a ``kind`` string, and their JSON form.

A storage stack (:mod:`diskmodel.model.stacks.stack`) is a tree of frozen
dataclasses: a file system on a volume, a volume on partitions, partitions
on named disks.  Each class in the tree is a *node type*, marked by
:func:`node_type` with one or more ``kind`` strings, which is how the tree
reads from and writes to JSON: a node is an object ``{"kind": ..., field:
value, ...}``.  Marking registers nothing: the node types a stack file may
hold are one explicit list, :data:`diskmodel.model.stacks.stack.NODE_TYPES`, and
:class:`diskmodel.model.stacks.schema.NodeSchema` reads them (pydantic v2) from
their dataclass fields, type hints and defaults.

A new layer (RAID 1/5/6, a thin pool, a loop file, NBD or NFS) is a new
class decorated with :func:`node_type` in its own module, added to that
list; nothing else changes here or in the other node types.  What a node
type may offer:

* ``describe() -> str``: one line for :meth:`Stack.describe`;
* fields typed with plain frozen dataclasses that are not nodes (e.g. an
  LV's segments): written and read as objects without a kind;
* ``json_fields()``: to change how its fields are written (the file system
  writes its model parameters without repeating the kind, which the schema
  gives them back when reading);
* a field named ``kind``: for a class of several kinds (a
  file system of kind ext2, ext3, ...), the instance's own kind;
* ``JSON_FORM = False``: for a node that has no JSON form (a Disk object in
  memory); the field reference says so.

Field docs: each field of a node type (and of a record it holds) is
described in its class docstring's numpy ``Attributes`` section, one entry
``name : type`` with the meaning in its first sentence and the unit as
``[unit]`` (or in the field's name: ``_bytes``, ``_s``, ``_bytes_per_s``).
:mod:`diskmodel.model.stacks.stack_schema` builds the stack file's field reference
(``diskmodel stack-schema``) from those entries, the fields' defaults and
their types, so a new field is documented where it is declared.

Consumers of the tree (the model, provisioning) look at nodes through
:func:`child_nodes` and :func:`walk`.

A *block* node (anything a file system or another layer may sit on: a
partition, an LVM volume, a RAID array, a thin volume, a loop file, a
network block device) has:

* ``size_bytes``: what it presents to the layer above [bytes];
* ``describe()``: one line for ``Stack.describe``;
* children as fields holding nodes or tuples of nodes (found by :func:`walk`),
  and sizes that do not fit them refused in ``__post_init__`` naming the field.

A new layer implements those, is marked with :func:`node_type`, joins ``NODE_TYPES`` and gets a
branch in :mod:`diskmodel.model.iopath.path` (what it does to the requests sent to it); ``diskmodel
predict --stack`` and the block workloads (:mod:`diskmodel.model.predictions.block_workloads`) then take it.

A *volume* node (what a file system is
made on) offers the model ``size_bytes``, ``physical_span``,
``physical_pieces(start, size)`` (where a logical region lies on the disk),
``segment_table()``, ``is_lvm`` and ``mapping_complexity``
(:class:`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk` asks for nothing
else); provisioning keeps its own registry of builders per node type
(:func:`diskmodel.calibrate.bench.provision.builds`).
"""
from __future__ import annotations

import dataclasses

from .._checks import show


def node_type(*kinds: str):
    """Class decorator: mark a frozen dataclass as the node type of *kinds* (unique strings).

    Nothing is registered: the node types a document may hold are listed explicitly where it is read
    (:data:`diskmodel.model.stacks.stack.NODE_TYPES`, read by :class:`diskmodel.model.stacks.schema.NodeSchema`)."""
    if not kinds or not all(isinstance(k, str) and k for k in kinds) or len(set(kinds)) != len(kinds):
        raise ValueError(f"kinds must be distinct non-empty strings (got {show(kinds)})")

    def mark(cls):
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"a node type must be a dataclass (got {cls.__name__})")
        cls.NODE_KINDS = tuple(kinds)
        return cls

    return mark


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


def is_node_type(cls) -> bool:
    """Is *cls* a node type (a class marked by :func:`node_type`; :func:`is_node` takes an instance)?"""
    return isinstance(cls, type) and isinstance(cls.__dict__.get("NODE_KINDS"), tuple)


def is_node(value) -> bool:
    """Is *value* an instance of a node type?"""
    return is_node_type(type(value))


def kinds_of_class(cls) -> tuple[str, ...]:
    """The kinds *cls* is a node type of (one, or several for a class with a ``kind`` field)."""
    if not is_node_type(cls):
        raise ValueError(f"{getattr(cls, '__name__', cls)} is not a node type")
    return cls.NODE_KINDS


def kind_of(node) -> str:
    """The ``kind`` string of *node* (its own ``kind`` field for a class of several kinds)."""
    kinds = kinds_of_class(type(node))
    return getattr(node, "kind") if len(kinds) > 1 else kinds[0]


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


def map_nodes(node, fn):
    """*node*'s tree rebuilt from the bottom up, each node replaced by ``fn(node)`` once its children
    are (``fn`` returns the node itself, or a changed copy of it: ``node.evolve(...)``)."""
    changes = {}
    for f in _init_fields(type(node)):
        value = getattr(node, f.name)
        if is_node(value):
            changes[f.name] = map_nodes(value, fn)
        elif isinstance(value, tuple) and any(is_node(item) for item in value):
            changes[f.name] = tuple(map_nodes(item, fn) if is_node(item) else item for item in value)
    return fn(dataclasses.replace(node, **changes) if changes else node)


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
