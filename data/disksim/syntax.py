"""The nested syntax of DiskSim 4.0's parameter files: tokenizer and parser.

DiskSim (Ganger, Worthington, Patt, Bucy, Schindler, Schlosser; CMU PDL,
2001-2008; Western Digital 2014) describes a drive in several files, all but
the seek tables and traces written in one nested syntax::

    typename name {                      # a block
       Key with spaces (unit) = 12.5,    # a number
       Seek type = extracted,            # a word
       Zones = [ dm_layout_g1_zone { ... }, ... ],   # a list
       Model = source other.model        # a link to another file
    }

This module has the one tokenizer and recursive-descent parser of that syntax
(:func:`parse_file`, :func:`parse_text`); the readers of each kind of file
(:mod:`diskmodel.data.disksim.model_file`, :mod:`diskmodel.data.disksim`)
are built on it. Every error in a file raises :class:`DiskSimFormatError`
(a ValueError) naming the file and the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..input_files import MAX_DISKSIM_FILE_BYTES, read_text_bounded

__all__ = ["MS", "Block", "DiskSimFormatError", "Source", "Statement", "parse_file", "parse_text", "read_text",
           "resolve_block", "single_block"]

#: Seconds per millisecond: DiskSim writes times in ms, the readers return seconds.
MS = 1e-3


class DiskSimFormatError(ValueError):
    """A DiskSim file that is malformed or not what the reader expects.

    The message starts with ``path:line:``.
    """

    def __init__(self, path, line, message):
        self.path = str(path)
        self.line = line
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


# ---------------------------------------------------------------------------
# Tokenizer and parser of the nested ``name { key = value, ... }`` syntax
# ---------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+)
  | (?P<newline>\n)
  | (?P<comment>\#[^\n]*)
  | (?P<punct>[{}\[\]=,])
  | (?P<word>[^\s{}\[\]=,\#]+)
""", re.VERBOSE)

_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")
_INT = re.compile(r"[-+]?\d+\Z")


class _Token(NamedTuple):
    kind: str   # "punct", "word" or "end"
    text: str
    line: int


def _tokenize(text: str, path) -> list[_Token]:
    # finditer skips what no class matches (whitespace other than the space class's, such as a no-break
    # space, which the word class excludes): a gap between two matches is that character, refused.
    tokens = []
    line = 1
    position = 0
    for match in _TOKEN.finditer(text):
        if match.start() != position:
            raise DiskSimFormatError(path, line, f"unexpected character {text[position]!r}")
        kind = match.lastgroup
        if kind == "newline":
            line += 1
        elif kind == "punct" or kind == "word":
            tokens.append(_Token(kind, match.group(), line))
        position = match.end()
    if position != len(text):
        raise DiskSimFormatError(path, line, f"unexpected character {text[position]!r}")
    tokens.append(_Token("end", "", line))
    return tokens


def _normalise_key(key: str) -> str:
    return " ".join(key.split()).lower()


@dataclass(frozen=True)
class Source:
    """A ``source FILE`` link: the file named, resolved beside the file holding it."""

    filename: str
    path: Path
    line: int


@dataclass(frozen=True, eq=False)
class Block:
    """One ``typename [name] { key = value, ... }`` block.

    Values are int, float, str (a bare word), :class:`Source`, :class:`Block`
    or lists of these. Keys are looked up ignoring case and runs of spaces.
    """

    type: str
    name: str | None
    entries: dict[str, Any]
    path: Path
    line: int
    key_lines: dict[str, int] = field(default_factory=dict)
    original_keys: dict[str, str] = field(default_factory=dict)

    def __contains__(self, key: str) -> bool:
        return _normalise_key(key) in self.entries

    def get(self, key: str, default=None):
        return self.entries.get(_normalise_key(key), default)

    def line_of(self, key: str) -> int:
        return self.key_lines.get(_normalise_key(key), self.line)

    def require(self, key: str):
        normal = _normalise_key(key)
        if normal not in self.entries:
            raise DiskSimFormatError(self.path, self.line,
                                     f"{self.type} block {self.name or ''} lacks the parameter {key!r}".replace("  ", " "))
        return self.entries[normal]

    def number(self, key: str, default=None, *, integer: bool = False):
        """The value of *key* as a number (error naming the file and line otherwise)."""
        if default is not None and key not in self:
            return default
        value = self.require(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DiskSimFormatError(self.path, self.line_of(key), f"{key!r} must be a number (got {value!r})")
        if integer:
            if float(value) != int(value):
                raise DiskSimFormatError(self.path, self.line_of(key), f"{key!r} must be a whole number (got {value!r})")
            return int(value)
        return float(value)

    def word(self, key: str, default=None) -> str:
        if default is not None and key not in self:
            return default
        value = self.require(key)
        if isinstance(value, (Block, list, Source)):
            raise DiskSimFormatError(self.path, self.line_of(key), f"{key!r} must be a single value (got {type(value).__name__})")
        return str(value)

    def numbers(self, key: str, default=None) -> list[float]:
        if default is not None and key not in self:
            return default
        value = self.require(key)
        if not isinstance(value, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise DiskSimFormatError(self.path, self.line_of(key), f"{key!r} must be a list of numbers")
        return [float(v) for v in value]


@dataclass(frozen=True)
class Statement:
    """A top-level statement other than a block: ``source``, ``instantiate``, ``topology``."""

    kind: str
    value: Any
    path: Path
    line: int


class _Parser:
    def __init__(self, text: str, path):
        self.path = Path(path)
        self.tokens = _tokenize(text, path)
        self.position = 0

    # -- helpers
    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.position + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.tokens[self.position]
        if token.kind != "end":
            self.position += 1
        return token

    def error(self, token: _Token, message: str):
        found = "end of file" if token.kind == "end" else repr(token.text)
        raise DiskSimFormatError(self.path, token.line, f"{message} (found {found})")

    def expect(self, text: str) -> _Token:
        token = self.take()
        if token.text != text or token.kind != "punct":
            self.error(token, f"expected {text!r}")
        return token

    def word(self, what: str) -> _Token:
        token = self.take()
        if token.kind != "word":
            self.error(token, f"expected {what}")
        return token

    def closes(self, close: str) -> bool:
        """Skip separating commas; take *close* and say True when it comes next."""
        while self.peek().kind == "punct" and self.peek().text == ",":
            self.take()
        if self.peek().kind == "punct" and self.peek().text == close:
            self.take()
            return True
        return False

    # -- grammar
    def document(self) -> list:
        items = []
        while self.peek().kind != "end":
            token = self.peek()
            if token.kind != "word":
                self.error(token, "expected a block, 'source', 'instantiate' or 'topology'")
            if token.text == "source":
                self.take()
                name = self.word("a file name after 'source'")
                items.append(Statement("source", Source(name.text, self.path.parent / name.text, name.line),
                                       self.path, token.line))
            elif token.text == "instantiate":
                self.take()
                self.expect("[")
                names = self.list_body()
                as_token = self.word("'as'")
                if as_token.text != "as":
                    self.error(as_token, "expected 'as' after the instantiate list")
                spec = self.word("a specification name")
                items.append(Statement("instantiate", (names, spec.text), self.path, token.line))
            elif token.text == "topology":
                self.take()
                items.append(Statement("topology", self.topology_node(), self.path, token.line))
            else:
                items.append(self.block())
        return items

    def topology_node(self):
        kind = self.word("a component type")
        name = self.word("a component name")
        self.expect("[")
        children = []
        while not self.closes("]"):
            children.append(self.topology_node())
        return (kind.text, name.text, children)

    def block(self) -> Block:
        type_token = self.word("a block type")
        name = None
        if self.peek().kind == "word":
            name = self.take().text
        self.expect("{")
        block = Block(type_token.text, name, {}, self.path, type_token.line)
        while not self.closes("}"):
            token = self.peek()
            if token.kind != "word":
                self.error(token, f"expected a parameter name or '}}' in {type_token.text} block")
            key_words = []
            key_line = token.line
            while self.peek().kind == "word":
                key_words.append(self.take().text)
            equals = self.take()
            if equals.text != "=":
                self.error(equals, f"expected '=' after parameter name {' '.join(key_words)!r}")
            key = " ".join(key_words)
            normal = _normalise_key(key)
            if normal in block.entries:
                raise DiskSimFormatError(self.path, key_line, f"parameter {key!r} given twice")
            block.entries[normal] = self.value()
            block.key_lines[normal] = key_line
            block.original_keys[normal] = key
            after = self.peek()
            if not (after.kind == "punct" and after.text in ",}"):
                self.error(after, f"expected ',' or '}}' after the value of {key!r}")
        return block

    def list_body(self) -> list:
        values = []
        tokens = self.tokens
        while True:
            # A lone word before ',' or ']' (most of a layout's long tables): its value at once, as
            # value() would give it; anything else takes the general way below.
            p = self.position
            token, following = tokens[p], tokens[p + 1] if p + 1 < len(tokens) else None
            while (token.kind == "word" and following is not None and following.kind == "punct"
                   and following.text in ",]"):
                values.append(_scalar(token.text))
                p += 1
                while tokens[p].kind == "punct" and tokens[p].text == ",":
                    p += 1
                token, following = tokens[p], tokens[p + 1] if p + 1 < len(tokens) else None
            self.position = p
            if self.closes("]"):
                return values
            if self.peek().kind == "end":
                self.error(self.peek(), "unterminated list '['")
            values.append(self.value())

    def value(self):
        token = self.peek()
        if token.kind == "punct" and token.text == "[":
            self.take()
            return self.list_body()
        if token.kind != "word":
            self.error(token, "expected a value")
        following = self.peek(1)
        if following.kind == "punct" and following.text == "{":
            return self.block()
        if following.kind == "word" and self.peek(2).kind == "punct" and self.peek(2).text == "{":
            return self.block()
        if token.text == "source" and following.kind == "word":
            self.take()
            name = self.take()
            return Source(name.text, self.path.parent / name.text, name.line)
        words = []
        while self.peek().kind == "word":
            words.append(self.take().text)
        return _scalar(" ".join(words))


def _scalar(text: str):
    """A value's words as DiskSim reads them: a whole number, a number, or the text."""
    if _INT.match(text):
        return int(text)
    if _NUMBER.match(text):
        return float(text)
    return text


def parse_text(text: str, path="<string>") -> list:
    """Parse DiskSim's nested syntax: a list of :class:`Block` and :class:`Statement`."""
    return _Parser(text, path).document()


def read_text(path: Path, what: str) -> str:
    """The text of a DiskSim file; FileNotFoundError "*what* PATH does not exist" without it.

    Undecodable bytes are replaced rather than fatal: every token the
    readers use is ASCII. Only a regular file is read, and at most
    ``MAX_DISKSIM_FILE_BYTES`` of it (see diskmodel.data.input_files).
    """
    try:
        return read_text_bounded(path, what, MAX_DISKSIM_FILE_BYTES, errors="replace")
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {path} does not exist") from None


def parse_file(path) -> list:
    """Parse a DiskSim parameter file (``.parv``, ``.diskspecs``, ``.model``, ``.layout``)."""
    path = Path(path)
    return parse_text(read_text(path, "DiskSim file"), path)


def single_block(path, expected_types) -> Block:
    """The one block of a file that must hold exactly one, of one of *expected_types*."""
    items = parse_file(path)
    blocks = [item for item in items if isinstance(item, Block)]
    if len(blocks) != 1 or len(items) != 1:
        raise DiskSimFormatError(path, 1, f"expected exactly one {' or '.join(expected_types)} block "
                                 f"(found {len(blocks)} blocks and {len(items) - len(blocks)} other statements)")
    block = blocks[0]
    if block.type not in expected_types:
        raise DiskSimFormatError(path, block.line, f"expected a {' or '.join(expected_types)} block "
                                 f"(found {block.type!r})")
    return block


def resolve_block(value, parent: Block, key: str, expected_types) -> Block:
    """The block a parameter *key* of *parent* holds, inline or behind ``source FILE``."""
    if isinstance(value, Source):
        return single_block(value.path, expected_types)
    if isinstance(value, Block):
        if value.type not in expected_types:
            raise DiskSimFormatError(value.path, value.line, f"{key} must be a {' or '.join(expected_types)} block "
                                     f"(found {value.type!r})")
        return value
    raise DiskSimFormatError(parent.path, parent.line_of(key), f"{key} must be a block or 'source FILE'")

