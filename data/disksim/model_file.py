"""Readers of DiskSim 4.0's ``.model`` files and the ``.seek`` tables they name.

A ``.model`` file holds one ``dm_disk`` block: the geometry (surfaces,
cylinders, block count), the mechanics (``dm_mech_g1``: seek curve, head
switch, write settle, rpm) and the layout (``dm_layout_g1``: zones with
spares, slips and defects, DiskSim's ``diskmodel/layout_g1_load.c``; or
``dm_layout_g4``: DiskSim 4's table-driven layout, ``layout_g4_load.c``:
track patterns, index sections, slips and remaps, often ``source``-d from a
file of its own). An ``extracted`` seek curve lives in its own ``.seek`` file (2
columns; 3 with a standard deviation; 4: read, std, write).

Everything returned is plain data: frozen dataclasses of numbers, strings,
tuples and numpy arrays, times in seconds (``_s``). What they mean for a
disk (its :class:`~diskmodel.model.Disk`, seek function, LBN mapping) is
:mod:`diskmodel.model.disksim`'s business.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .syntax import MS, Block, DiskSimFormatError, read_text, resolve_block, single_block

__all__ = ["G1Layout", "G1Zone", "G4Layout", "MechModel", "ModelFile", "SeekTable", "read_model_file",
           "read_seek_table"]


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


def read_seek_table(path) -> SeekTable:
    """Read a DiskSim ``.seek`` file: header ``Seek distances measured: N``, then
    ``distance, time_ms[, std_ms[, write_time_ms]]`` per line."""
    path = Path(path)
    lines = read_text(path, "DiskSim seek file").splitlines()
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


@dataclass(frozen=True)
class G1Zone:
    """One ``dm_layout_g1_zone``. Skews and offsets in sectors, as written (DiskSim's
    loader, ``layout_g1_zone.modspec``, truncates them to whole sectors)."""

    first_cylinder: int
    last_cylinder: int
    blocks_per_track: int
    first_block_offset_sectors: float
    empty_space_at_front_sectors: int
    track_skew_sectors: float
    cylinder_skew_sectors: float
    spares: int
    slips: tuple[int, ...]
    #: (defect, remap) pairs: zone-relative sector numbers (track numbers for
    #: sparing scheme 1); a pair whose remap equals its defect is a slipped
    #: defect, any other moves the block to the remap (layout_g1.c ``g1_ltop_*``)
    defects: tuple[tuple[int, int], ...]
    #: where the zone's block (and its ``defects``) is written in the file
    line: int = field(default=0, compare=False)

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

    As ``diskmodel/layout_g4_load.c`` (``g4_load_tp``, ``g4_load_idx``,
    ``g4_load_slips``, ``g4_load_remaps``) reads them; what they mean is
    :mod:`diskmodel.model.disksim_g4`'s business.

    ``tp``: (n, 3) rows (low, high, spt) of the track-pattern table; ``idx``:
    one array per index section, rows of (lbn, cyl, off, len, cyllen, alen,
    runlen, cylrunlen, child, head) with the child type (TRACK/IDX) in
    ``idx_child_types`` (head -1 for IDX children; off and alen are
    fractions of a revolution); the last section is the root index, whose
    every entry covers a positive run of cylinders (``cylrunlen``, column 7).
    ``slips``: (n, 2) rows (lbn, count) as written: each adds *count*
    (negative for a spare) to the running slip total from *lbn* on;
    ``remaps``: (n, 6) rows (lbn, count, cylinder, head, sector, spt): *count*
    blocks from *lbn* live from (cylinder, head, sector) on.
    """

    path: Path
    tp: np.ndarray
    idx: tuple[np.ndarray, ...]
    idx_child_types: tuple[tuple[str, ...], ...]
    slips: np.ndarray
    remaps: np.ndarray

    @property
    def track_patterns(self) -> int:
        return int(self.tp.shape[0])


@dataclass(frozen=True)
class MechModel:
    """``dm_mech_g1``: seek, head switch, settle, rotation [s, rpm].

    ``hpl_seek`` holds DiskSim's six "HPL seek equation values" as written:
    (V1 [whole cylinders]: the first distance of the linear branch, a [ms],
    b [ms], c [ms], slope [ms per cylinder], single-cylinder flag (-1: no
    special single-cylinder seek)).
    """

    access_time_type: str
    seek_type: str
    head_switch_s: float
    write_settle_s: float
    rpm: float
    rpm_error_percent: float
    single_cylinder_seek_s: float | None = None
    average_seek_s: float | None = None
    full_strobe_seek_s: float | None = None
    hpl_seek: tuple[float, ...] | None = None
    first_ten_seek_s: tuple[float, ...] | None = None
    seek_table: SeekTable | None = None


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
    #: where ``Layout Model`` is written in the file
    layout_line: int = field(default=0, compare=False)

    @property
    def zones(self) -> tuple[G1Zone, ...]:
        if not isinstance(self.layout, G1Layout):
            raise ValueError(f"{self.path}: a {type(self.layout).__name__} has no g1 zone list")
        return self.layout.zones


def _list_of_ints(block: Block, key: str) -> tuple[int, ...]:
    value = block.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise DiskSimFormatError(block.path, block.line_of(key), f"{key!r} must be a list of whole numbers")
    return tuple(value)


def _g1_zone(block: Block) -> G1Zone:
    if block.type != "dm_layout_g1_zone":
        raise DiskSimFormatError(block.path, block.line, f"expected a dm_layout_g1_zone block (found {block.type!r})")
    _sectors_only(block)
    defects = _list_of_ints(block, "defects")
    if len(defects) % 2:
        raise DiskSimFormatError(block.path, block.line_of("defects"), "defects must list (defect, remap) pairs")
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
        line=block.line_of("defects"),
    )
    if zone.last_cylinder < zone.first_cylinder or zone.blocks_per_track < 1:
        raise DiskSimFormatError(block.path, block.line, "zone has last cylinder < first or no blocks per track")
    return zone


def _sectors_only(block: Block) -> None:
    # DiskSim's default; "revolutions" (dm_angle_dtoi of the value) is not implemented here
    if "Skew units" in block and block.word("Skew units") != "sectors":
        raise DiskSimFormatError(block.path, block.line_of("Skew units"),
                                 f"Skew units = {block.word('Skew units')!r} is not supported (sectors is)")


def _g1_layout(block: Block) -> G1Layout:
    _sectors_only(block)
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
    if not idx or np.any(idx[-1][:, 7] <= 0):
        raise DiskSimFormatError(block.path, block.line_of("IDX"),
                                 "the root IDX section (the last) must list entries with positive cylinder runs")
    for number, kinds in enumerate(child_types):
        for row, kind in zip(idx[number], kinds):
            limit = len(tp) // 3 if kind == "TRACK" else len(sections)
            if not 0 <= row[8] < limit or (kind == "IDX" and row[8] >= number):
                raise DiskSimFormatError(block.path, block.line_of("IDX"),
                                         f"IDX section {number}: child {row[8]:g} of a {kind} entry names no "
                                         f"{'track pattern' if kind == 'TRACK' else 'earlier IDX section'}")
            if row[3] < 1 or row[4] < 1 or row[6] < 1:
                raise DiskSimFormatError(block.path, block.line_of("IDX"),
                                         f"IDX section {number}: len, cyllen and runlen must be >= 1 "
                                         f"(entry at lbn {row[0]:g})")
    return G4Layout(block.path, np.array(tp, dtype=np.int64).reshape(-1, 3), tuple(idx), tuple(child_types),
                    _int_rows(block, "Slips", 2), _int_rows(block, "Remaps", 6))


def _int_rows(block: Block, key: str, width: int) -> np.ndarray:
    value = block.get(key, [])
    if not isinstance(value, list) or len(value) % width \
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise DiskSimFormatError(block.path, block.line_of(key), f"{key} must list whole numbers in groups of {width}")
    return np.array(value, dtype=np.int64).reshape(-1, width)


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
        # DiskSim's loader (mech_g1_load.c) takes V1 as whole cylinders, >= 0.
        if hpl[0] < 0 or hpl[0] != int(hpl[0]):
            raise DiskSimFormatError(block.path, block.line_of("HPL seek equation values"),
                                     f"the first HPL seek equation value is a distance in whole cylinders, "
                                     f">= 0 (got {hpl[0]:g})")
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
    layout_block = resolve_block(block.require("Layout Model"), block, "Layout Model", ("dm_layout_g1", "dm_layout_g4"))
    layout = _g1_layout(layout_block) if layout_block.type == "dm_layout_g1" else _g4_layout(layout_block)
    mech_block = resolve_block(block.require("Mechanical Model"), block, "Mechanical Model", ("dm_mech_g1",))
    model = ModelFile(block.path, block.name,
                      surfaces=block.number("Number of data surfaces", integer=True),
                      cylinders=block.number("Number of cylinders", integer=True),
                      block_count=block.number("Block count", integer=True),
                      mech=_mech(mech_block, block.path), layout=layout,
                      layout_line=block.line_of("Layout Model"))
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
    return _model_from_block(single_block(path, ("dm_disk",)))

