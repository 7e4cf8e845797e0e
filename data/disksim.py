"""Readers for DiskSim 4.0's parameter files and validation traces.

DiskSim (Ganger, Worthington, Patt, Bucy, Schindler, Schlosser; CMU PDL,
2001-2008; Western Digital 2014) describes a drive in several files, all but
the seek tables written in one nested syntax::

    typename name {                      # a block
       Key with spaces (unit) = 12.5,    # a number
       Seek type = extracted,            # a word
       Zones = [ dm_layout_g1_zone { ... }, ... ],   # a list
       Model = source other.model        # a link to another file
    }

This module has one tokenizer and one recursive-descent parser for that
syntax (:func:`parse_file`), and readers built on it that turn the files into
plain parameter objects and :mod:`diskmodel.model` objects:

* :func:`read_seek_file` / :func:`read_seek_table`: ``.seek`` tables
  (2 columns, 3 with a standard deviation, or 4: read, std, write);
* :func:`read_model_file`: ``dm_disk`` (geometry, mechanics, layout
  ``dm_layout_g1`` zones with spares and slips, or ``dm_layout_g4``);
* :func:`read_diskspecs`: ``disksim_disk`` (controller overheads, cache);
* :func:`read_parv`: the top-level file tying them (buses, controller);
* :func:`read_trace`: DiskSim's ``validate`` traces;
* :func:`load_disksim_drive`: all of a drive folder as a :class:`DiskSimDrive`
  holding a :class:`diskmodel.model.Disk` and the detailed parameters of the
  per-request simulation (:mod:`diskmodel.model.simulate`).

Units: DiskSim writes times in milliseconds; everything returned here is in
seconds (``_s``) unless the name says otherwise. Every error in a file raises
:class:`DiskSimFormatError` (a ValueError) naming the file and the line.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "Block", "DiskSimDrive", "DiskSimFormatError", "DiskSpecs", "G1Layout", "G1Zone",
    "G4Layout", "MechModel", "ModelFile", "Parv", "SeekTable", "Source", "Trace",
    "disksim_seek_time_s", "load_disksim_drive", "parse_file", "parse_text",
    "read_diskspecs", "read_model_file", "read_parv", "read_seek_file", "read_seek_table",
    "read_trace", "validate_drive", "DISKSIM_PUBLISHED_DEMERIT_MS",
]

MS = 1e-3
US = 1e-6


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


@dataclass(frozen=True)
class _Token:
    kind: str   # "punct", "word" or "end"
    text: str
    line: int


def _tokenize(text: str, path) -> list[_Token]:
    tokens = []
    line = 1
    position = 0
    length = len(text)
    while position < length:
        match = _TOKEN.match(text, position)
        if match is None:  # pragma: no cover - the word class accepts everything else
            raise DiskSimFormatError(path, line, f"unexpected character {text[position]!r}")
        kind = match.lastgroup
        if kind == "newline":
            line += 1
        elif kind in ("punct", "word"):
            tokens.append(_Token(kind, match.group(), line))
        position = match.end()
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


@dataclass(eq=False)
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
        while not (self.peek().kind == "punct" and self.peek().text == "]"):
            if self.peek().kind == "punct" and self.peek().text == ",":
                self.take()
                continue
            children.append(self.topology_node())
        self.expect("]")
        return (kind.text, name.text, children)

    def block(self) -> Block:
        type_token = self.word("a block type")
        name = None
        if self.peek().kind == "word":
            name = self.take().text
        self.expect("{")
        block = Block(type_token.text, name, {}, self.path, type_token.line)
        while True:
            token = self.peek()
            if token.kind == "punct" and token.text == "}":
                self.take()
                return block
            if token.kind == "punct" and token.text == ",":
                self.take()
                continue
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

    def list_body(self) -> list:
        values = []
        while True:
            token = self.peek()
            if token.kind == "punct" and token.text == "]":
                self.take()
                return values
            if token.kind == "punct" and token.text == ",":
                self.take()
                continue
            if token.kind == "end":
                self.error(token, "unterminated list '['")
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
        text = " ".join(words)
        if _INT.match(text):
            return int(text)
        if _NUMBER.match(text):
            return float(text)
        return text


def parse_text(text: str, path="<string>") -> list:
    """Parse DiskSim's nested syntax: a list of :class:`Block` and :class:`Statement`."""
    return _Parser(text, path).document()


def parse_file(path) -> list:
    """Parse a DiskSim parameter file (``.parv``, ``.diskspecs``, ``.model``, ``.layout``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise FileNotFoundError(f"DiskSim file {path} does not exist") from None
    return parse_text(text, path)


def _single_block(path, expected_types) -> Block:
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


# ---------------------------------------------------------------------------
# Seek tables
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SeekTable:
    """A measured seek table: ``distance_cylinders`` and seek times [s].

    ``write_time_s`` is the separate write curve of 4-column ("dual") tables,
    else None; ``std_s`` the standard deviation column where given, else None.
    """

    path: Path
    distance_cylinders: np.ndarray
    read_time_s: np.ndarray
    write_time_s: np.ndarray | None = None
    std_s: np.ndarray | None = None

    @property
    def points(self) -> int:
        return int(self.distance_cylinders.size)

    def as_table_seek(self, curve: str = "read", reach_cylinders: int | None = None):
        """A :class:`diskmodel.model.TableSeek` of the read or write curve.

        With *reach_cylinders*, a table ending short of ``reach_cylinders - 1``
        gets one more point there, extrapolated linearly from its last two
        points as DiskSim does (``dm_mech_g1_seek_extracted``).
        """
        from diskmodel.model.seek import TableSeek

        if curve not in ("read", "write"):
            raise ValueError(f"curve must be 'read' or 'write' (got {curve!r})")
        times = self.read_time_s if curve == "read" else self.write_time_s
        if times is None:
            raise ValueError(f"{self.path} has no write curve (it has {2 if self.std_s is None else 3} columns)")
        distance = self.distance_cylinders.astype(float)
        if reach_cylinders is not None and distance[-1] < reach_cylinders - 1:
            last = float(reach_cylinders - 1)
            extra = disksim_seek_time_s(np.array([last]), distance, times)[0]
            distance = np.append(distance, last)
            times = np.append(times, extra)
        return TableSeek(distance, times)


def disksim_seek_time_s(distance_cylinders, table_distance, table_time_s) -> np.ndarray:
    """Seek time [s] of DiskSim's ``extracted`` curve: linear between points.

    0 at distance 0; linear interpolation between measured points; linear
    extrapolation from the last two points beyond the table, as
    ``dm_mech_g1_seek_extracted`` does. Distances below the first point are
    interpolated from the first two points likewise.
    """
    distance = np.asarray(distance_cylinders, dtype=float)
    x = np.asarray(table_distance, dtype=float)
    y = np.asarray(table_time_s, dtype=float)
    index = np.clip(np.searchsorted(x, distance, side="left"), 1, x.size - 1)
    x0, x1, y0, y1 = x[index - 1], x[index], y[index - 1], y[index]
    result = y0 + (distance - x0) * (y1 - y0) / (x1 - x0)
    exact = np.searchsorted(x, distance, side="left")
    hit = (exact < x.size) & (x[np.minimum(exact, x.size - 1)] == distance)
    result = np.where(hit, y[np.minimum(exact, x.size - 1)], result)
    return np.where(distance == 0, 0.0, result)


def read_seek_table(path) -> SeekTable:
    """Read a DiskSim ``.seek`` file: header ``Seek distances measured: N``, then
    ``distance, time_ms[, std_ms[, write_time_ms]]`` per line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        raise FileNotFoundError(f"DiskSim seek file {path} does not exist") from None
    header = None
    rows = []
    columns = None
    for number, raw in enumerate(lines, start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        if header is None:
            match = re.fullmatch(r"Seek distances measured:\s*(\d+)", text, re.IGNORECASE)
            if match is None:
                raise DiskSimFormatError(path, number, "expected the header 'Seek distances measured: N'")
            header = int(match.group(1))
            continue
        fields = [f for f in re.split(r"[,\s]+", text) if f]
        if columns is None:
            columns = len(fields)
            if columns not in (2, 3, 4):
                raise DiskSimFormatError(path, number, f"expected 2, 3 or 4 columns (found {columns})")
        if len(fields) != columns:
            raise DiskSimFormatError(path, number, f"expected {columns} columns like the first row (found {len(fields)})")
        try:
            values = [float(f) for f in fields]
        except ValueError:
            raise DiskSimFormatError(path, number, f"not a number in {text!r}") from None
        if not all(math.isfinite(v) for v in values):
            raise DiskSimFormatError(path, number, f"non-finite value in {text!r}")
        if values[0] <= 0 or values[0] != int(values[0]):
            raise DiskSimFormatError(path, number, f"seek distance must be a positive whole number (got {fields[0]})")
        if any(v < 0 for v in values[1:]):
            raise DiskSimFormatError(path, number, f"negative time in {text!r}")
        if rows and values[0] <= rows[-1][1][0]:
            raise DiskSimFormatError(path, number, f"seek distances must increase (got {fields[0]} after {rows[-1][1][0]:g})")
        rows.append((number, values))
    if header is None:
        raise DiskSimFormatError(path, 1, "empty seek file (expected 'Seek distances measured: N')")
    if len(rows) != header:
        raise DiskSimFormatError(path, 1, f"header announces {header} seek distances but the file lists {len(rows)}")
    if len(rows) < 2:
        raise DiskSimFormatError(path, 1, "a seek table needs at least two points")
    data = np.array([values for _, values in rows])
    return SeekTable(path, data[:, 0].astype(np.int64), data[:, 1] * MS,
                     data[:, 3] * MS if columns == 4 else None,
                     data[:, 2] * MS if columns >= 3 else None)


def read_seek_file(path, curve: str = "read"):
    """A DiskSim ``.seek`` file as a :class:`diskmodel.model.TableSeek` [s].

    ``curve="write"`` gives the write curve of 4-column tables.
    """
    return read_seek_table(path).as_table_seek(curve)


# ---------------------------------------------------------------------------
# .model files: dm_disk with dm_mech_g1 and dm_layout_g1 / dm_layout_g4
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class G1Zone:
    """One ``dm_layout_g1_zone``. Skews and offsets in sectors (DiskSim allows fractions)."""

    first_cylinder: int
    last_cylinder: int
    blocks_per_track: int
    first_block_offset_sectors: float
    empty_space_at_front_sectors: int
    track_skew_sectors: float
    cylinder_skew_sectors: float
    spares: int
    slips: tuple[int, ...]
    defects: tuple[tuple[int, int], ...]

    @property
    def cylinders(self) -> int:
        return self.last_cylinder - self.first_cylinder + 1


@dataclass(frozen=True)
class G1Layout:
    """``dm_layout_g1``: LBN-to-PBN mapping scheme, sparing scheme and zones."""

    mapping_scheme: int
    sparing_scheme: int
    rangesize: int
    zones: tuple[G1Zone, ...]


@dataclass(frozen=True, eq=False)
class G4Layout:
    """``dm_layout_g4`` (DiskSim 4's table-driven layout), kept as its tables.

    ``tp``: (n, 3) rows of the track-pattern table; ``idx``: one array per
    index section, rows of (lbn, cyl, off, len, cyllen, alen, runlen,
    cylrunlen, child, head) with the child type (TRACK/IDX) in
    ``idx_child_types``.
    """

    path: Path
    tp: np.ndarray
    idx: tuple[np.ndarray, ...]
    idx_child_types: tuple[tuple[str, ...], ...]
    slips: tuple
    remaps: tuple

    @property
    def track_patterns(self) -> int:
        return int(self.tp.shape[0])

    def zone_table(self, surfaces: int) -> np.ndarray:
        """(n, 3) rows (first cylinder, last cylinder, mean sectors per track) of the root index.

        Each root entry covers ``cylrunlen`` cylinders holding ``runlen``
        blocks; their mean sectors per track is ``runlen / (cylrunlen *
        surfaces)`` (g4 layouts may give each surface its own track length).
        """
        root = self.idx[-1]
        first = root[:, 1].astype(np.int64)
        cylinders = root[:, 7].astype(np.int64)
        if np.any(cylinders <= 0):
            raise DiskSimFormatError(self.path, 1, "the root IDX section has a non-positive cylinder run")
        spt = root[:, 6] / (cylinders * surfaces)
        return np.column_stack((first, first + cylinders - 1, spt))

    def geometry(self, surfaces: int):
        """An approximate :class:`diskmodel.model.Geometry`: one zone per run of root
        entries with the same (rounded) mean sectors per track, no skews.

        The real g4 layout is serpentine (a run of cylinders on one surface,
        then back on the next), so LBA -> CHS of this Geometry is not the
        drive's; capacity and zone transfer rates are kept (to rounding).
        """
        from diskmodel.model.zones import Geometry, Zone

        table = self.zone_table(surfaces)
        zones = []
        for first, last, spt in table:
            spt = max(int(round(spt)), 1)
            if zones and zones[-1].sectors_per_track == spt and zones[-1].last_cylinder + 1 == int(first):
                zones[-1] = Zone(zones[-1].first_cylinder, int(last), spt)
            else:
                zones.append(Zone(int(first), int(last), spt))
        return Geometry(surfaces, tuple(zones))


@dataclass(frozen=True)
class MechModel:
    """``dm_mech_g1``: seek, head switch, settle, rotation [s, rpm]."""

    access_time_type: str
    seek_type: str
    head_switch_s: float
    write_settle_s: float
    rpm: float
    rpm_error_percent: float
    single_cylinder_seek_s: float | None = None
    average_seek_s: float | None = None
    full_strobe_seek_s: float | None = None
    hpl_seek: tuple[float, ...] | None = None     # (knee, a ms, b ms, c ms, slope ms, single-cyl flag)
    first_ten_seek_s: tuple[float, ...] | None = None
    seek_table: SeekTable | None = None

    def seek_time_s(self, distance_cylinders, *, write: bool = False) -> np.ndarray:
        """Seek time [s] as DiskSim's seek function of this type computes it (no head switch)."""
        distance = np.asarray(distance_cylinders, dtype=float)
        if self.seek_type == "extracted":
            table = self.seek_table
            times = table.write_time_s if (write and table.write_time_s is not None) else table.read_time_s
            return disksim_seek_time_s(distance, table.distance_cylinders, times)
        if self.seek_type in ("hpl", "hplplus10"):
            knee, a, b, c, slope, flag = self.hpl_seek
            result = np.where(distance < knee, a * MS + b * MS * np.sqrt(distance), c * MS + slope * MS * distance)
            if self.seek_type == "hplplus10":
                first = np.asarray(self.first_ten_seek_s)
                small = (distance >= 1) & (distance <= 10)
                result = np.where(small, first[np.clip(distance.astype(int) - 1, 0, 9)], result)
            elif flag != -1:
                result = np.where(distance == 1, self.single_cylinder_seek_s, result)
            return np.where(distance == 0, 0.0, result)
        raise ValueError(f"seek type {self.seek_type!r} is not supported (extracted, hpl, hplplus10 are)")


@dataclass(frozen=True)
class ModelFile:
    """A ``dm_disk`` block: geometry, mechanics and layout."""

    path: Path
    name: str | None
    surfaces: int
    cylinders: int
    block_count: int
    mech: MechModel
    layout: G1Layout | G4Layout

    @property
    def span_cylinders(self) -> int:
        """Cylinders the layout uses (one more than listed where the zones end past the count)."""
        if isinstance(self.layout, G1Layout):
            return max(self.cylinders, self.layout.zones[-1].last_cylinder + 1)
        return max(self.cylinders, int(self.layout.zone_table(self.surfaces)[-1, 1]) + 1)

    @property
    def zones(self) -> tuple[G1Zone, ...]:
        if not isinstance(self.layout, G1Layout):
            raise ValueError(f"{self.path}: a {type(self.layout).__name__} has no g1 zone list")
        return self.layout.zones

    def geometry(self):
        """The zones as a :class:`diskmodel.model.Geometry`.

        Approximations of that simpler model: no spares or slips, skews
        rounded to whole sectors, and cylinders left unmapped between two
        zones counted in the zone before the gap.
        """
        from diskmodel.model.zones import Geometry, Zone

        if isinstance(self.layout, G4Layout):
            return self.layout.geometry(self.surfaces)
        zones = self.zones
        ends = [after.first_cylinder - 1 for after in zones[1:]] + [zones[-1].last_cylinder]
        zones = tuple(Zone(z.first_cylinder, end, z.blocks_per_track,
                           int(round(z.track_skew_sectors)), int(round(z.cylinder_skew_sectors)))
                      for z, end in zip(zones, ends))
        return Geometry(self.surfaces, zones)

    def seek(self):
        """The seek curve as a :class:`diskmodel.model.TableSeek` reaching the last cylinder.

        Extracted tables are extended to ``cylinders - 1`` by DiskSim's linear
        extrapolation; HPL curves are tabulated at every whole distance, so
        that the monotone interpolation reproduces DiskSim exactly there.
        """
        from diskmodel.model.seek import TableSeek

        if self.mech.seek_type == "extracted":
            return self.mech.seek_table.as_table_seek("read", reach_cylinders=self.span_cylinders)
        distance = np.arange(1, self.span_cylinders, dtype=float)
        return TableSeek(distance, self.mech.seek_time_s(distance))


def _list_of_ints(block: Block, key: str) -> tuple[int, ...]:
    value = block.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise DiskSimFormatError(block.path, block.line_of(key), f"{key!r} must be a list of whole numbers")
    return tuple(value)


def _g1_zone(block: Block) -> G1Zone:
    if block.type != "dm_layout_g1_zone":
        raise DiskSimFormatError(block.path, block.line, f"expected a dm_layout_g1_zone block (found {block.type!r})")
    defects = _list_of_ints(block, "defects")
    if len(defects) % 2:
        raise DiskSimFormatError(block.path, block.line_of("defects"), "defects must list (cylinder, sector) pairs")
    zone = G1Zone(
        first_cylinder=block.number("First cylinder number", integer=True),
        last_cylinder=block.number("Last cylinder number", integer=True),
        blocks_per_track=block.number("Blocks per track", integer=True),
        first_block_offset_sectors=block.number("Offset of first block", 0.0),
        empty_space_at_front_sectors=int(block.number("Empty space at zone front", 0.0)),
        track_skew_sectors=block.number("Skew for track switch", 0.0),
        cylinder_skew_sectors=block.number("Skew for cylinder switch", 0.0),
        spares=int(block.number("Number of spares", 0.0)),
        slips=_list_of_ints(block, "slips"),
        defects=tuple(zip(defects[::2], defects[1::2])),
    )
    if zone.last_cylinder < zone.first_cylinder or zone.blocks_per_track < 1:
        raise DiskSimFormatError(block.path, block.line, "zone has last cylinder < first or no blocks per track")
    return zone


def _g1_layout(block: Block) -> G1Layout:
    zones_value = block.require("Zones")
    if not isinstance(zones_value, list) or not zones_value:
        raise DiskSimFormatError(block.path, block.line_of("Zones"), "Zones must be a non-empty list of zone blocks")
    zones = []
    for item in zones_value:
        if not isinstance(item, Block):
            raise DiskSimFormatError(block.path, block.line_of("Zones"), f"Zones lists a non-block {item!r}")
        zones.append(_g1_zone(item))
    for before, after in zip(zones, zones[1:]):
        # Real files leave unmapped cylinders between zones (barracuda, ibm18es); overlaps are errors.
        if after.first_cylinder <= before.last_cylinder:
            raise DiskSimFormatError(block.path, block.line_of("Zones"),
                                     f"zone starting at cylinder {after.first_cylinder} overlaps the one "
                                     f"ending at {before.last_cylinder}")
    return G1Layout(block.number("LBN-to-PBN mapping scheme", integer=True),
                    block.number("Sparing scheme used", integer=True),
                    int(block.number("Rangesize for sparing", 1.0)), tuple(zones))


def _g4_layout(block: Block) -> G4Layout:
    tp = block.require("TP")
    if not isinstance(tp, list) or len(tp) % 3 or not all(isinstance(v, (int, float)) for v in tp):
        raise DiskSimFormatError(block.path, block.line_of("TP"), "TP must be a list of numbers in triples")
    sections = block.require("IDX")
    if not isinstance(sections, list):
        raise DiskSimFormatError(block.path, block.line_of("IDX"), "IDX must be a list of lists")
    idx, child_types = [], []
    for number, section in enumerate(sections):
        if not isinstance(section, list):
            raise DiskSimFormatError(block.path, block.line_of("IDX"), f"IDX section {number} must be a list")
        rows, kinds, i = [], [], 0
        while i < len(section):
            row = section[i:i + 10]
            if len(row) < 10 or not all(isinstance(v, (int, float)) for v in row[:8]) \
                    or row[8] not in ("TRACK", "IDX") or not isinstance(row[9], int):
                raise DiskSimFormatError(block.path, block.line_of("IDX"),
                                         f"IDX section {number}, entry {len(rows)}: expected 8 numbers, "
                                         "TRACK or IDX, and a child number")
            head = -1
            i += 10
            if row[8] == "TRACK":
                if i >= len(section) or not isinstance(section[i], int):
                    raise DiskSimFormatError(block.path, block.line_of("IDX"),
                                             f"IDX section {number}, entry {len(rows)}: a TRACK entry needs a head")
                head = section[i]
                i += 1
            rows.append([*row[:8], row[9], head])
            kinds.append(row[8])
        idx.append(np.array(rows, dtype=float).reshape(-1, 10))
        child_types.append(tuple(kinds))
    return G4Layout(block.path, np.array(tp, dtype=np.int64).reshape(-1, 3), tuple(idx), tuple(child_types),
                    tuple(block.get("Slips", [])), tuple(block.get("Remaps", [])))


def _resolve(value, parent: Block, key: str, expected_types) -> Block:
    if isinstance(value, Source):
        return _single_block(value.path, expected_types)
    if isinstance(value, Block):
        if value.type not in expected_types:
            raise DiskSimFormatError(value.path, value.line, f"{key} must be a {' or '.join(expected_types)} block "
                                     f"(found {value.type!r})")
        return value
    raise DiskSimFormatError(parent.path, parent.line_of(key), f"{key} must be a block or 'source FILE'")


def _mech(block: Block, path: Path) -> MechModel:
    seek_type = block.word("Seek type")
    table = None
    hpl = first_ten = None
    if seek_type == "extracted":
        name = block.word("Full seek curve")
        table = read_seek_table(path.parent / name)
    elif seek_type in ("hpl", "hplplus10"):
        hpl = tuple(block.numbers("HPL seek equation values"))
        if len(hpl) != 6:
            raise DiskSimFormatError(block.path, block.line_of("HPL seek equation values"),
                                     f"HPL seek equation values must hold 6 numbers (found {len(hpl)})")
        if seek_type == "hplplus10":
            first_ten = tuple(v * MS for v in block.numbers("First ten seek times"))
            if len(first_ten) != 10:
                raise DiskSimFormatError(block.path, block.line_of("First ten seek times"),
                                         f"First ten seek times must hold 10 numbers (found {len(first_ten)})")
    else:
        raise DiskSimFormatError(block.path, block.line_of("Seek type"),
                                 f"seek type {seek_type!r} is not supported (extracted, hpl, hplplus10 are)")

    def optional_ms(key):
        return block.number(key) * MS if key in block else None

    rpm = block.number("Rotation speed (in rpms)")
    if not rpm > 0:
        raise DiskSimFormatError(block.path, block.line_of("Rotation speed (in rpms)"), f"rpm must be > 0 (got {rpm})")
    return MechModel(
        access_time_type=block.word("Access time type", "trackSwitchPlusRotation"),
        seek_type=seek_type,
        head_switch_s=block.number("Head switch time") * MS,
        write_settle_s=block.number("Add. write settling delay", 0.0) * MS,
        rpm=rpm,
        rpm_error_percent=block.number("Percent error in rpms", 0.0),
        single_cylinder_seek_s=optional_ms("Single cylinder seek time"),
        average_seek_s=optional_ms("Average seek time"),
        full_strobe_seek_s=optional_ms("Full strobe seek time"),
        hpl_seek=hpl, first_ten_seek_s=first_ten, seek_table=table)


def _model_from_block(block: Block) -> ModelFile:
    if block.type != "dm_disk":
        raise DiskSimFormatError(block.path, block.line, f"expected a dm_disk block (found {block.type!r})")
    layout_block = _resolve(block.require("Layout Model"), block, "Layout Model", ("dm_layout_g1", "dm_layout_g4"))
    layout = _g1_layout(layout_block) if layout_block.type == "dm_layout_g1" else _g4_layout(layout_block)
    mech_block = _resolve(block.require("Mechanical Model"), block, "Mechanical Model", ("dm_mech_g1",))
    model = ModelFile(block.path, block.name,
                      surfaces=block.number("Number of data surfaces", integer=True),
                      cylinders=block.number("Number of cylinders", integer=True),
                      block_count=block.number("Block count", integer=True),
                      mech=_mech(mech_block, block.path), layout=layout)
    if model.surfaces < 1 or model.cylinders < 1 or model.block_count < 1:
        raise DiskSimFormatError(block.path, block.line, "surfaces, cylinders and block count must be >= 1")
    # hp_c2490a's zones end at cylinder 2629 of "2629 cylinders": DiskSim tolerates one past the end.
    if isinstance(layout, G1Layout) and layout.zones[-1].last_cylinder > model.cylinders:
        raise DiskSimFormatError(block.path, block.line_of("Layout Model"),
                                 f"zones end at cylinder {layout.zones[-1].last_cylinder} but the disk has "
                                 f"{model.cylinders} cylinders")
    return model


def read_model_file(path) -> ModelFile:
    """Read a DiskSim ``.model`` file (one ``dm_disk`` block) and the files it names."""
    return _model_from_block(_single_block(path, ("dm_disk",)))


# ---------------------------------------------------------------------------
# .diskspecs and .parv
# ---------------------------------------------------------------------------

_OVERHEAD_KEYS = {
    # (kind, hit, after) -> DiskSim parameter name
    ("read", "hit", "read"): "Read hit over. after read",
    ("read", "hit", "write"): "Read hit over. after write",
    ("read", "miss", "read"): "Read miss over. after read",
    ("read", "miss", "write"): "Read miss over. after write",
    ("write", "hit", "read"): "Write hit over. after read",
    ("write", "hit", "write"): "Write hit over. after write",
    ("write", "miss", "read"): "Write miss over. after read",
    ("write", "miss", "write"): "Write miss over. after write",
}


@dataclass(frozen=True)
class DiskSpecs:
    """A ``disksim_disk`` block: controller overheads and the drive's cache.

    Overheads are [s], already multiplied by ``Time scale for overheads``.
    ``command_overhead_s[(kind, hit, after)]`` with kind and after in
    {"read", "write"} and hit in {"hit", "miss"}.
    """

    path: Path
    name: str | None
    model_source: Source | None
    per_request_overhead_s: float
    time_scale: float
    bulk_sector_transfer_s: float
    command_overhead_s: dict
    read_completion_s: float
    write_completion_s: float
    data_preparation_s: float
    first_reselect_s: float
    other_reselect_s: float
    read_disconnect_after_read_s: float
    read_disconnect_after_write_s: float
    write_disconnect_s: float
    minimum_seek_delay_s: float
    buffer_segments: int
    max_write_segments: int
    segment_size_blocks: int
    separate_write_segment: bool
    enable_caching: int
    buffer_continuous_read: int
    min_read_ahead_blocks: int
    max_read_ahead_blocks: int
    read_ahead_over_requested: bool
    read_ahead_on_idle_hit: bool
    read_any_free_blocks: bool
    fast_write_level: int
    combine_seq_writes: bool
    read_hits_on_write_data: bool
    hold_bus_read: bool
    hold_bus_write: bool
    max_queue_length: int
    block: Block = field(repr=False, compare=False)

    @property
    def cache_size_bytes(self) -> int:
        return self.buffer_segments * self.segment_size_blocks * 512


def _diskspecs_from_block(block: Block) -> DiskSpecs:
    if block.type != "disksim_disk":
        raise DiskSimFormatError(block.path, block.line, f"expected a disksim_disk block (found {block.type!r})")
    scale = block.number("Time scale for overheads", 1.0)
    model = block.get("Model")
    if model is not None and not isinstance(model, (Source, Block)):
        raise DiskSimFormatError(block.path, block.line_of("Model"), "Model must be 'source FILE' or a dm_disk block")

    def ms(key, default=None):
        return block.number(key, default) * MS * scale

    def flag(key, default=0.0):
        return bool(block.number(key, default))

    def count(key, default=None):
        return int(block.number(key, default))

    specs = DiskSpecs(
        path=block.path, name=block.name, model_source=model if isinstance(model, Source) else None,
        per_request_overhead_s=ms("Per-request overhead time", 0.0), time_scale=scale,
        bulk_sector_transfer_s=block.number("Bulk sector transfer time") * MS,
        command_overhead_s={key: ms(name) for key, name in _OVERHEAD_KEYS.items()},
        read_completion_s=ms("Read completion overhead"), write_completion_s=ms("Write completion overhead"),
        data_preparation_s=ms("Data preparation overhead"), first_reselect_s=ms("First reselect overhead", 0.0),
        other_reselect_s=ms("Other reselect overhead", 0.0),
        read_disconnect_after_read_s=ms("Read disconnect afterread", 0.0),
        read_disconnect_after_write_s=ms("Read disconnect afterwrite", 0.0),
        write_disconnect_s=ms("Write disconnect overhead", 0.0),
        minimum_seek_delay_s=ms("Minimum seek delay", 0.0),
        buffer_segments=count("Number of buffer segments"),
        max_write_segments=count("Maximum number of write segments", 1.0),
        segment_size_blocks=count("Segment size (in blks)"),
        separate_write_segment=flag("Use separate write segment"),
        enable_caching=count("Enable caching in buffer", 1.0),
        buffer_continuous_read=count("Buffer continuous read", 0.0),
        min_read_ahead_blocks=count("Minimum read-ahead (blks)", 0.0),
        max_read_ahead_blocks=count("Maximum read-ahead (blks)", 0.0),
        read_ahead_over_requested=flag("Read-ahead over requested"),
        read_ahead_on_idle_hit=flag("Read-ahead on idle hit"),
        read_any_free_blocks=flag("Read any free blocks"),
        fast_write_level=count("Fast write level", 0.0),
        combine_seq_writes=flag("Combine seq writes"),
        read_hits_on_write_data=flag("Allow read hits on write data"),
        hold_bus_read=flag("Hold bus entire read xfer"), hold_bus_write=flag("Hold bus entire write xfer"),
        max_queue_length=count("Max queue length", 1.0),
        block=block)
    if specs.buffer_segments < 1 or specs.segment_size_blocks < 1:
        raise DiskSimFormatError(block.path, block.line_of("Number of buffer segments"),
                                 "buffer segments and segment size must be >= 1")
    if specs.fast_write_level not in (0, 1, 2):
        raise DiskSimFormatError(block.path, block.line_of("Fast write level"),
                                 f"Fast write level must be 0, 1 or 2 (got {specs.fast_write_level})")
    return specs


def read_diskspecs(path, name: str | None = None) -> DiskSpecs:
    """Read a ``.diskspecs`` file: the ``disksim_disk`` block (named *name*, or the only one)."""
    path = Path(path)
    blocks = [item for item in parse_file(path) if isinstance(item, Block) and item.type == "disksim_disk"]
    if name is not None:
        blocks = [b for b in blocks if b.name == name]
    if len(blocks) != 1:
        raise DiskSimFormatError(path, 1, f"expected one disksim_disk block{f' named {name!r}' if name else ''} "
                                 f"(found {len(blocks)})")
    return _diskspecs_from_block(blocks[0])


@dataclass(frozen=True)
class Parv:
    """DiskSim's top-level configuration.

    ``bus_block_transfer_s[name] = (read, write)`` [s per 512-byte block];
    ``disk_bus`` is the bus the disk hangs on in the topology;
    ``disk_spec`` the disksim_disk specification the disk is instantiated as,
    found in ``diskspecs`` (read through the ``source`` statements).
    """

    path: Path
    sources: tuple[Source, ...]
    instances: dict
    bus_block_transfer_s: dict
    controller_bulk_sector_s: float
    disk_name: str | None
    disk_spec: str | None
    disk_bus: str | None
    diskspecs: DiskSpecs | None
    topology: tuple
    blocks: tuple = field(repr=False, default=())

    @property
    def disk_bus_transfer_s(self) -> tuple[float, float]:
        """(read, write) bus transfer time per block on the disk's bus [s]."""
        if self.disk_bus is None:
            return (0.0, 0.0)
        return self.bus_block_transfer_s[self.disk_bus]


def _find_disk_bus(node, parent_bus=None):
    kind, name, children = node
    if kind == "disksim_disk":
        return name, parent_bus
    for child in children:
        found = _find_disk_bus(child, name if kind == "disksim_bus" else parent_bus)
        if found:
            return found
    return None


def read_parv(path) -> Parv:
    """Read a DiskSim ``.parv`` file and the ``.diskspecs`` it sources."""
    path = Path(path)
    items = parse_file(path)
    blocks = [item for item in items if isinstance(item, Block)]
    sources = tuple(s.value for s in items if isinstance(s, Statement) and s.kind == "source")
    specs_blocks = {}
    for source in sources:
        for item in parse_file(source.path):
            if isinstance(item, Block):
                blocks.append(item)
    instances = {}
    for statement in items:
        if isinstance(statement, Statement) and statement.kind == "instantiate":
            names, spec = statement.value
            for instance in names:
                instances[str(instance)] = spec
    block_by_name = {b.name: b for b in blocks if b.name}
    buses = {}
    for instance, spec in instances.items():
        block = block_by_name.get(spec)
        if block is not None and block.type == "disksim_bus":
            buses[instance] = (block.number("Read block transfer time", 0.0) * MS,
                               block.number("Write block transfer time", 0.0) * MS)
    controller_bulk = 0.0
    for instance, spec in instances.items():
        block = block_by_name.get(spec)
        if block is not None and block.type == "disksim_ctlr":
            controller_bulk = block.number("Bulk sector transfer time", 0.0) * MS
    topology = tuple(s.value for s in items if isinstance(s, Statement) and s.kind == "topology")
    disk_name = disk_bus = None
    for node in topology:
        found = _find_disk_bus(node)
        if found:
            disk_name, disk_bus = found
            break
    disk_spec = instances.get(disk_name) if disk_name else None
    diskspecs = None
    if disk_spec is not None:
        block = block_by_name.get(disk_spec)
        if block is None or block.type != "disksim_disk":
            raise DiskSimFormatError(path, 1, f"disk {disk_name!r} is instantiated as {disk_spec!r}, "
                                     f"which no sourced file defines as a disksim_disk")
        specs_blocks[disk_spec] = block
        diskspecs = _diskspecs_from_block(block)
    if disk_bus is not None and disk_bus not in buses:
        raise DiskSimFormatError(path, 1, f"the disk hangs on bus {disk_bus!r}, which is not instantiated as a disksim_bus")
    return Parv(path, sources, instances, buses, controller_bulk, disk_name, disk_spec, disk_bus,
                diskspecs, topology, tuple(blocks))


# ---------------------------------------------------------------------------
# Validation traces
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Trace:
    """A DiskSim ``validate`` trace: one request per row.

    ``is_write``; ``label`` (the Hit/Miss/Doub/Trip column, a label only);
    ``lbn`` and ``blocks`` [512-byte blocks]; ``service_s`` measured;
    ``interarrival_s``: the gap between the completion of row i and the
    arrival of row i+1 (the first request arrives at time 0).
    """

    path: Path | None
    is_write: np.ndarray
    label: np.ndarray
    lbn: np.ndarray
    blocks: np.ndarray
    service_s: np.ndarray
    interarrival_s: np.ndarray

    def __len__(self) -> int:
        return int(self.lbn.size)

    def head(self, n: int) -> "Trace":
        return Trace(self.path, *(getattr(self, f.name)[:n] for f in dataclasses.fields(self)[1:]))


_LABELS = ("Hit", "Miss", "Doub", "Trip")


def read_trace(path) -> Trace:
    """Read a DiskSim validate trace: ``R|W Hit|Miss|Doub|Trip LBN blocks service_us interarrival_us``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise FileNotFoundError(f"trace file {path} does not exist") from None
    is_write, label, lbn, blocks, service, inter = [], [], [], [], [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise DiskSimFormatError(path, number, f"expected 6 fields 'R|W Hit|Miss|Doub|Trip LBN blocks "
                                     f"service_us interarrival_us' (found {len(fields)})")
        if fields[0] not in ("R", "W"):
            raise DiskSimFormatError(path, number, f"first field must be R or W (got {fields[0]!r})")
        if fields[1] not in _LABELS:
            raise DiskSimFormatError(path, number, f"second field must be one of {', '.join(_LABELS)} (got {fields[1]!r})")
        try:
            values = (int(fields[2]), int(fields[3]), float(fields[4]), float(fields[5]))
        except ValueError:
            raise DiskSimFormatError(path, number, f"LBN and blocks must be whole numbers and times numbers in {raw.strip()!r}") from None
        if values[0] < 0 or values[1] < 1 or not all(math.isfinite(v) and v >= 0 for v in values[2:]):
            raise DiskSimFormatError(path, number, f"negative LBN, non-positive size or negative/non-finite time in {raw.strip()!r}")
        is_write.append(fields[0] == "W")
        label.append(fields[1])
        lbn.append(values[0])
        blocks.append(values[1])
        service.append(values[2])
        inter.append(values[3])
    if not lbn:
        raise DiskSimFormatError(path, 1, "the trace holds no requests")
    return Trace(path, np.array(is_write), np.array(label), np.array(lbn, dtype=np.int64),
                 np.array(blocks, dtype=np.int64), np.array(service) * US, np.array(inter) * US)


# ---------------------------------------------------------------------------
# A drive folder
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DiskSimDrive:
    """Everything DiskSim's files say about one drive.

    ``disk`` is the :class:`diskmodel.model.Disk` (zones of the model file,
    seek curve, rpm, head switch, write settle); ``model``, ``specs`` and
    ``parv`` keep the detailed layout, mechanics, cache and overheads used by
    :func:`diskmodel.model.simulate.simulate_requests`. ``trace_path`` is the
    folder's validation trace, or None.
    """

    name: str
    folder: Path
    disk: Any
    model: ModelFile
    specs: DiskSpecs
    parv: Parv | None
    trace_path: Path | None

    @property
    def bus_block_transfer_s(self) -> tuple[float, float]:
        """(read, write) time to move one block to the host [s]: the larger of the
        disk's bulk sector time and its bus's block time (DiskSim's
        ``disk_get_blktranstime``)."""
        bus = self.parv.disk_bus_transfer_s if self.parv is not None else (0.0, 0.0)
        bulk = max(self.specs.bulk_sector_transfer_s, 0.0)
        return (max(bus[0], bulk), max(bus[1], bulk))

    def read_trace(self) -> Trace:
        if self.trace_path is None:
            raise FileNotFoundError(f"{self.folder} holds no .trace file")
        return read_trace(self.trace_path)

    def simulation_parameters(self):
        """The :class:`diskmodel.model.simulate.DriveParameters` of this drive."""
        from diskmodel.model.simulate import drive_parameters_from_disksim
        return drive_parameters_from_disksim(self)


def _one(folder: Path, pattern: str, what: str, required: bool = True) -> Path | None:
    found = sorted(folder.glob(pattern))
    if not found:
        if required:
            raise FileNotFoundError(f"{folder} holds no {what} ({pattern})")
        return None
    if len(found) > 1:
        raise ValueError(f"{folder} holds several {what} files: {', '.join(p.name for p in found)}")
    return found[0]


def load_disksim_drive(folder) -> DiskSimDrive:
    """Load a DiskSim drive folder (a ``.parv``, its ``.diskspecs``, the ``.model``
    and seek files they name, and optionally one ``.trace``)."""
    from diskmodel.model.disk import Disk

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"DiskSim drive folder {folder} does not exist")
    parv_path = _one(folder, "*.parv", "DiskSim .parv", required=False)
    parv = read_parv(parv_path) if parv_path is not None else None
    if parv is not None and parv.diskspecs is not None:
        specs = parv.diskspecs
    else:
        specs = read_diskspecs(_one(folder, "*.diskspecs", ".diskspecs"))
    if specs.model_source is None:
        raise DiskSimFormatError(specs.path, specs.block.line, "the disk has no 'Model = source FILE' link")
    model = read_model_file(specs.model_source.path)
    trace_path = _one(folder, "*.trace", "trace", required=False)
    mech = model.mech
    name = folder.name
    bus = parv.disk_bus_transfer_s if parv is not None else (0.0, 0.0)
    block_time = max(bus[0], specs.bulk_sector_transfer_s, 0.0)
    estimates = []
    if mech.write_settle_s < 0:
        estimates.append(("write_settle_s", f"DiskSim lists a negative write settle "
                                            f"({mech.write_settle_s * 1e3:g} ms); the Disk bundle keeps 0, "
                                            "the simulation uses the listed value"))
    if isinstance(model.layout, G4Layout):
        estimates.append(("geometry", "g4 layout: zones from the root index runs with their mean sectors per "
                                      "track; the drive's serpentine LBN order is not represented"))
    disk = Disk(
        name=name, geometry=model.geometry(), seek=model.seek(), rpm=mech.rpm,
        command_overhead_s=specs.command_overhead_s[("read", "miss", "read")],
        settle_s=0.0, write_settle_s=max(mech.write_settle_s, 0.0), head_switch_s=mech.head_switch_s,
        interface_rate_bytes_per_s=512.0 / block_time if block_time > 0 else float("inf"),
        cache_size_bytes=specs.cache_size_bytes,
        provenance=f"DiskSim 4.0 validation files in {folder} (settle is inside the measured seek curve; "
                   "spares, slips and g4 tables are in DiskSimDrive.model, not in Disk.geometry)",
        estimates=tuple(estimates))
    return DiskSimDrive(name, folder, disk, model, specs, parv, trace_path)


# ---------------------------------------------------------------------------
# Validation against the traces
# ---------------------------------------------------------------------------

#: DiskSim 4.0's own demerit [ms] on the validation traces, as printed by its
#: validation script (provenance: ../shared/data/disksim/README.md, which
#: transcribes DiskSim 4.0's ``valid/`` results).
DISKSIM_PUBLISHED_DEMERIT_MS = {
    "atlas_III": 0.378,
    "barracuda": 0.349,
    "cheetah4LP": 0.318,
    "ibm18es": 0.135,
    "atlas10k": 0.268,
    "hp_c2247a": 0.090,
    "hp_c2490a": 0.254,
}


def validate_drive(drive_or_folder, *, limit: int | None = None):
    """Simulate a drive folder's trace and compare with the measured times.

    Returns a :class:`diskmodel.model.validation.TraceValidation` (with
    DiskSim's published demerit as the reference where known).
    """
    from diskmodel.model.simulate import simulate_requests
    from diskmodel.model.validation import TraceValidation

    drive = drive_or_folder if isinstance(drive_or_folder, DiskSimDrive) else load_disksim_drive(drive_or_folder)
    trace = drive.read_trace()
    if limit is not None:
        trace = trace.head(limit)
    result = simulate_requests(drive.simulation_parameters(), trace.is_write, trace.lbn, trace.blocks,
                               trace.interarrival_s)
    reference = DISKSIM_PUBLISHED_DEMERIT_MS.get(drive.name)
    details = {"is_write": trace.is_write, "label": trace.label, "lbn": trace.lbn, "blocks": trace.blocks,
               "hit": result.hit, "seek_ms": result.seek_s * 1e3, "latency_ms": result.latency_s * 1e3,
               "media_ms": result.media_s * 1e3, "arrival_s": result.arrival_s}
    return TraceValidation(drive.name, trace.service_s, result.service_s, details,
                           reference * MS if reference is not None else None)
