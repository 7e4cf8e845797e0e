"""The layout blocks of DiskSim 4.0's ``.model`` files: how blocks map to tracks.

``dm_layout_g1``: zones with spares, slips and defects (DiskSim's ``diskmodel/layout_g1_load.c``);
``dm_layout_g4``: DiskSim 4's table-driven layout (``layout_g4_load.c``): track patterns, index
sections, slips and remaps, often ``source``-d from a file of its own; ``dm_layout_g2``: zones and an
extent map read from a raw "Layout Map File" (``layout_g2_load.c``). Also the check, shared with
:mod:`.model_file`, that a block holds only the keys DiskSim defines for its type.

Everything returned is plain data (frozen dataclasses of numbers, strings, tuples and numpy arrays);
what it means for a disk's LBN mapping is
:mod:`diskmodel.model.disksim_drives.convert`'s business.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .syntax import Block, DiskSimFormatError, _normalise_key, read_text

__all__ = ["G1Layout", "G1Zone", "G2Layout", "G2Zone", "G4Layout", "read_g2_map"]

@dataclass(frozen=True)
class G1Zone:
    """One ``dm_layout_g1_zone``. The offset of the first block and the two skews as
    written, each in the unit of ``skew_units`` (offset, track skew, cylinder skew):
    "sectors" (DiskSim's default; its loader, ``layout_g1_zone.modspec``, truncates them
    to whole sectors) or "revolutions" (``dm_angle_dtoi``), the unit in force where
    DiskSim's loader reaches the value (:func:`_skew_units_by_value`); what they mean is
    :func:`diskmodel.model.disksim_drives.convert.zone_layout`'s business."""

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
    #: the unit of (first_block_offset_sectors, track_skew_sectors, cylinder_skew_sectors)
    skew_units: tuple[str, str, str] = ("sectors", "sectors", "sectors")

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
    :mod:`diskmodel.model.simulator.g4`'s business.

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
class G2Zone:
    """One ``dm_layout_g2_zone`` (``diskmodel/modules/layout_g2_zone.modspec``).

    Skews as written, each in its unit of ``skew_units`` (zone, track switch, cylinder
    switch: "sectors", DiskSim's default, or "revolutions"; the unit in force where DiskSim's
    loader reaches the value, :func:`_skew_units_by_value`); what they mean is
    :mod:`diskmodel.model.simulator.g2`'s business.
    """

    first_cylinder: int
    last_cylinder: int
    first_lbn: int
    last_lbn: int
    blocks_per_track: int
    zone_skew: float
    track_skew: float
    cylinder_skew: float
    skew_units: tuple[str, str, str] = ("sectors", "sectors", "sectors")
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, eq=False)
class G2Layout:
    """``dm_layout_g2``: zones and the raw layout map DiskSim reads (``layout_g2_loadmap``).

    ``map_path``: the "Layout Map File", resolved as DiskSim's
    ``lp_search_path`` does: beside the file holding the layout block.
    ``extents``: (n, 5) int64 rows (lbn, cylinder, head, sector, blocks) in
    the file's order (increasing lbn, without gap or overlap: checked);
    ``extent_lines``: each row's line in the map; ``defects``: (k, 3) rows
    (cylinder, head, sector) of the map's ``Defect at`` lines (DiskSim keeps
    them for ``dm_defect_count`` only); ``map_cylinders``, ``map_heads``: the
    map's header, which sizes DiskSim's tables.
    """

    path: Path
    map_path: Path
    zones: tuple[G2Zone, ...]
    extents: np.ndarray
    extent_lines: np.ndarray
    defects: np.ndarray
    map_cylinders: int
    map_heads: int

    @property
    def mapped_blocks(self) -> int:
        return int(self.extents[-1, 0] + self.extents[-1, 4])


def _list_of_ints(block: Block, key: str) -> tuple[int, ...]:
    value = block.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise DiskSimFormatError(block.path, block.line_of(key), f"{key!r} must be a list of whole numbers")
    return tuple(value)


#: Every parameter DiskSim 4.0 defines for each block type of a model file
#: (diskmodel/modules/*.modspec); another is an error: DiskSim's loader warns ("not valid in
#: context") and then crashes (hp_c2247a with one in dm_mech_g1 or a dm_layout_g1_zone: a
#: segmentation fault).
_DISKSIM_KEYS = {
    "dm_disk": ("Block count", "Number of data surfaces", "Number of cylinders", "Mechanical Model",
                "Layout Model"),
    "dm_mech_g1": ("Access time type", "Constant access time", "Seek type", "Average seek time",
                   "Constant seek time", "Single cylinder seek time", "Full strobe seek time", "Full seek curve",
                   "Add. write settling delay", "Head switch time", "Rotation speed (in rpms)",
                   "Percent error in rpms", "First ten seek times", "HPL seek equation values"),
    "dm_layout_g1": ("LBN-to-PBN mapping scheme", "Sparing scheme used", "Rangesize for sparing", "Skew units",
                     "Zones"),
    "dm_layout_g1_zone": ("First cylinder number", "Last cylinder number", "Blocks per track",
                          "Offset of first block", "Skew units", "Empty space at zone front",
                          "Skew for track switch", "Skew for cylinder switch", "Number of spares", "slips",
                          "defects"),
    "dm_layout_g2": ("Layout Map File", "Zones"),
    "dm_layout_g2_zone": ("First cylinder number", "Last cylinder number", "First LBN", "Last LBN",
                          "Blocks per track", "Zone Skew", "Skew units", "Skew for track switch",
                          "Skew for cylinder switch"),
    "dm_layout_g4": ("TP", "IDX", "Slips", "Remaps"),
}
_DISKSIM_KEY_SETS = {kind: {_normalise_key(key) for key in keys} for kind, keys in _DISKSIM_KEYS.items()}


def _known_keys_only(block: Block) -> None:
    """A key DiskSim does not define for this block type is an error naming file and line."""
    known = _DISKSIM_KEY_SETS.get(block.type)
    if known is None:
        return
    for key in block.entries:
        if key not in known:
            name = block.original_keys.get(key, key)
            raise DiskSimFormatError(block.path, block.line_of(name),
                                     f"{name!r} is not a parameter of a DiskSim {block.type} block (DiskSim 4.0 "
                                     "warns, then crashes)")


_SKEW_UNITS = ("sectors", "revolutions")
#: The g1 zone's values read in the skew units, in G1Zone.skew_units' order
_G1_SKEWED = ("Offset of first block", "Skew for track switch", "Skew for cylinder switch")


def _skew_units_word(block: Block) -> str | None:
    """The block's "Skew units", or None; another word is an error (DiskSim's loader,
    ``layout_g1.modspec`` and ``layout_g1_zone.modspec``, stops on it: ``ddbg_assert(0)``)."""
    if "Skew units" not in block:
        return None
    units = block.word("Skew units")
    if units not in _SKEW_UNITS:
        raise DiskSimFormatError(block.path, block.line_of("Skew units"),
                                 f"Skew units must be sectors or revolutions (got {units!r}), the two words "
                                 "DiskSim 4.0 accepts")
    return units


def _position(block: Block, key: str) -> int:
    """Where *key* comes in the block, in the file's order (DiskSim's lp_loadparams reads a block's
    parameters in that order)."""
    return list(block.entries).index(_normalise_key(key))


def _skew_units_by_value(block: Block, inherited: str, keys=_G1_SKEWED) -> tuple[str, str, str]:
    """The unit DiskSim takes each of the zone's *keys* in (the offset and skews: :data:`_G1_SKEWED`;
    a g2 zone's: :data:`_SKEW_KEYS`, its ``layout_g2_zone.modspec`` loading them alike, from sectors).

    DiskSim's ``lp_loadparams`` (libparam/util.c) converts each parameter when it reaches it in
    the file's order (a parameter needing "Blocks per track" has it loaded first, then is
    converted at its own place). A zone starts with the layout's unit (``disk_load_zones`` copies
    ``layout->skew_units`` into each zone before loading it), which is sectors unless the
    layout's "Skew units" comes before its "Zones"; the zone's own "Skew units" acts on the values
    written after it only (``layout_g1_zone.modspec``: the loaders read ``result->skew_units``).
    """
    own = _skew_units_word(block)
    units = []
    for key in keys:
        if own is not None and key in block and _position(block, "Skew units") < _position(block, key):
            units.append(own)
        else:
            units.append(inherited)
    return tuple(units)


def _g1_zone(block: Block, inherited: str = "sectors") -> G1Zone:
    if block.type != "dm_layout_g1_zone":
        raise DiskSimFormatError(block.path, block.line, f"expected a dm_layout_g1_zone block (found {block.type!r})")
    _known_keys_only(block)
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
        skew_units=_skew_units_by_value(block, inherited),
    )
    if zone.last_cylinder < zone.first_cylinder or zone.blocks_per_track < 1:
        raise DiskSimFormatError(block.path, block.line, "zone has last cylinder < first or no blocks per track")
    return zone


def _g1_layout(block: Block) -> G1Layout:
    _known_keys_only(block)
    # the layout's "Skew units" reaches the zones only when written before "Zones" (lp_loadparams
    # loads the zones, disk_load_zones copying the unit into each, when it reaches "Zones")
    units = _skew_units_word(block)
    if units is None or ("Zones" in block and _position(block, "Zones") < _position(block, "Skew units")):
        units = "sectors"
    zones_value = block.require("Zones")
    if not isinstance(zones_value, list) or not zones_value:
        raise DiskSimFormatError(block.path, block.line_of("Zones"), "Zones must be a non-empty list of zone blocks")
    zones = []
    for item in zones_value:
        if not isinstance(item, Block):
            raise DiskSimFormatError(block.path, block.line_of("Zones"), f"Zones lists a non-block {item!r}")
        zones.append(_g1_zone(item, units))
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
    _known_keys_only(block)
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


_SKEW_KEYS = ("Zone Skew", "Skew for track switch", "Skew for cylinder switch")


def _g2_zone(block: Block) -> G2Zone:
    if not isinstance(block, Block) or block.type != "dm_layout_g2_zone":
        raise DiskSimFormatError(getattr(block, "path", "?"), getattr(block, "line", 0),
                                 f"expected a dm_layout_g2_zone block (found {getattr(block, 'type', block)!r})")
    _known_keys_only(block)
    # lp_loadparams converts each skew when it reaches it, in the file's order: one written
    # before "Skew units" is taken in sectors (the zone is zeroed first: layout_g2_load.c)
    units = _skew_units_by_value(block, "sectors", _SKEW_KEYS)
    zone = G2Zone(
        first_cylinder=block.number("First cylinder number", integer=True),
        last_cylinder=block.number("Last cylinder number", integer=True),
        first_lbn=block.number("First LBN", integer=True),
        last_lbn=block.number("Last LBN", integer=True),
        blocks_per_track=block.number("Blocks per track", integer=True),
        zone_skew=block.number("Zone Skew", 0.0),
        track_skew=block.number("Skew for track switch", 0.0),
        cylinder_skew=block.number("Skew for cylinder switch", 0.0),
        skew_units=units, line=block.line)
    for key, value in (("First cylinder number", zone.first_cylinder), ("First LBN", zone.first_lbn)):
        if value < 0:
            raise DiskSimFormatError(block.path, block.line_of(key), f"{key} must be >= 0 (got {value})")
    if zone.last_cylinder < zone.first_cylinder:
        raise DiskSimFormatError(block.path, block.line_of("Last cylinder number"),
                                 f"Last cylinder number {zone.last_cylinder} < First cylinder number "
                                 f"{zone.first_cylinder}")
    if zone.last_lbn < zone.first_lbn:
        raise DiskSimFormatError(block.path, block.line_of("Last LBN"),
                                 f"Last LBN {zone.last_lbn} < First LBN {zone.first_lbn}")
    if zone.blocks_per_track < 1:
        raise DiskSimFormatError(block.path, block.line_of("Blocks per track"),
                                 f"Blocks per track must be >= 1 (got {zone.blocks_per_track})")
    return zone


# layout_g2_loadmap's fscanf formats: a blank in the format matches any white space, none too
_G2_HEADER = re.compile(r"\s*([-+]?\d+)\s*cylinders,\s*[-+]?\d+\s*rot,\s*([-+]?\d+)\s*heads\s*")
_G2_EXTENT = re.compile(r"\s*lbn\s*([-+]?\d+)\s*-->\s*cyl\s*([-+]?\d+),\s*head\s*([-+]?\d+),\s*sect\s*"
                        r"([-+]?\d+),\s*(\S+)\s+([-+]?\d+)\s*")
_G2_DEFECT = re.compile(r"\s*Defect\s*at\s*cyl\s*([-+]?\d+),\s*head\s*([-+]?\d+),\s*sect\s*([-+]?\d+)\s*")


def read_g2_map(path) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
    """Read a DiskSim g2 raw layout map, as ``layout_g2_loadmap`` (layout_g2_load.c) does.

    Two lines ignored, then ``C cylinders, R rot, H heads``, then one extent a
    line, ``lbn L --> cyl C, head H, sect S, seqcnt K`` (K + 1 blocks; any word
    other than ``seqcnt``: K blocks), then ``Defect at cyl C, head H, sect S``
    lines. Blank lines are skipped (fscanf's ``\\n`` skips white space). DiskSim
    stops reading at the first line it cannot scan; here that line is an error.
    Returns (cylinders, heads, extents (n, 5) rows (lbn, cyl, head, sector,
    blocks), their line numbers, defects (k, 3)).
    """
    path = Path(path)
    lines = read_text(path, "DiskSim g2 layout map").splitlines()
    if len(lines) < 3:
        raise DiskSimFormatError(path, len(lines), "a g2 layout map needs two header lines and "
                                 "'C cylinders, R rot, H heads'")
    match = _G2_HEADER.fullmatch(lines[2])
    if match is None:
        raise DiskSimFormatError(path, 3, f"expected 'C cylinders, R rot, H heads' (got {lines[2].strip()!r})")
    cylinders, heads = int(match.group(1)), int(match.group(2))
    if cylinders < 1 or heads < 1:
        raise DiskSimFormatError(path, 3, f"cylinders and heads must be >= 1 (got {cylinders}, {heads})")
    extents, numbers, defects = [], [], []
    for number, line in enumerate(lines[3:], start=4):
        if not line.strip():
            continue
        match = _G2_EXTENT.fullmatch(line)
        if match is not None and not defects:
            lbn, cyl, head, sect, word, count = match.groups()
            blocks = int(count) + (word == "seqcnt")
            row = (int(lbn), int(cyl), int(head), int(sect), blocks)
            if min(row[:4]) < 0 or blocks < 1:
                raise DiskSimFormatError(path, number, f"extent with a negative number or no block: {line.strip()!r}")
            if not (cyl_ok := row[1] < cylinders) or row[2] >= heads:
                raise DiskSimFormatError(path, number, f"extent on {'cylinder' if not cyl_ok else 'head'} "
                                         f"{row[1] if not cyl_ok else row[2]}, beyond the header's {cylinders} "
                                         f"cylinders and {heads} heads")
            if extents and row[0] != extents[-1][0] + extents[-1][4]:
                before = extents[-1][0] + extents[-1][4]
                what = (f"blocks {before}..{row[0] - 1} are in no extent" if row[0] > before else
                        f"lbn {row[0]} overlaps the extent of line {numbers[-1]} (blocks "
                        f"{extents[-1][0]}..{before - 1}) or comes before it")
                raise DiskSimFormatError(path, number, what + " (DiskSim binary-searches extents in lbn order)")
            if not extents and row[0] != 0:
                raise DiskSimFormatError(path, number, f"blocks 0..{row[0] - 1} are in no extent")
            extents.append(row)
            numbers.append(number)
            continue
        match = _G2_DEFECT.fullmatch(line)
        if match is not None:
            defect = tuple(int(v) for v in match.groups())
            if min(defect) < 0 or defect[0] >= cylinders or defect[1] >= heads:
                raise DiskSimFormatError(path, number, f"defect outside the header's {cylinders} cylinders and "
                                         f"{heads} heads: {line.strip()!r}")
            defects.append(defect)
            continue
        expected = "'Defect at cyl C, head H, sect S'" if defects else \
            "'lbn L --> cyl C, head H, sect S, seqcnt K' or 'Defect at cyl C, head H, sect S'"
        raise DiskSimFormatError(path, number, f"expected {expected} (got {line.strip()!r})")
    if not extents:
        raise DiskSimFormatError(path, len(lines), "the map lists no extent")
    # layout_g2_loadmap's ltop table: cylinders * heads * 2, plus a quarter
    room = cylinders * heads * 2
    room += room // 4
    if len(extents) > room:
        raise DiskSimFormatError(path, numbers[room], f"more extents ({len(extents)}) than DiskSim's table for "
                                 f"{cylinders} cylinders and {heads} heads holds ({room})")
    return (cylinders, heads, np.array(extents, dtype=np.int64), np.array(numbers, dtype=np.int64),
            np.array(defects, dtype=np.int64).reshape(-1, 3))


def _g2_layout(block: Block) -> G2Layout:
    _known_keys_only(block)
    name = block.word("Layout Map File")
    # lp_search_path(lp_cwd, name): "<dir of the file holding the block>/<name>", also for
    # a name starting with "/" (LP_PATH's further folders are not searched here)
    map_path = Path(f"{block.path.parent}/{name}")
    if not map_path.is_file():
        raise DiskSimFormatError(block.path, block.line_of("Layout Map File"),
                                 f"Layout Map File {name!r}: no file {map_path}")
    zones_value = block.require("Zones")
    if not isinstance(zones_value, list) or not zones_value:
        raise DiskSimFormatError(block.path, block.line_of("Zones"), "Zones must be a non-empty list of zone blocks")
    zones = tuple(_g2_zone(item) for item in zones_value)
    for before, after in zip(zones, zones[1:]):
        # find_zone_pbn / find_zone_lbn take the first zone listed that holds a cylinder or block;
        # here zones come in increasing, disjoint cylinder and lbn ranges
        if after.first_cylinder <= before.last_cylinder or after.first_lbn <= before.last_lbn:
            raise DiskSimFormatError(block.path, after.line,
                                     f"zone of cylinders {after.first_cylinder}..{after.last_cylinder}, blocks "
                                     f"{after.first_lbn}..{after.last_lbn} overlaps or precedes the one before "
                                     f"(cylinders ..{before.last_cylinder}, blocks ..{before.last_lbn})")
    cylinders, heads, extents, numbers, defects = read_g2_map(map_path)
    _check_g2_extents(map_path, zones, extents, numbers, block, cylinders)
    return G2Layout(block.path, map_path, zones, extents, numbers, defects, cylinders, heads)


def _check_g2_extents(path, zones, extents, numbers, block, cylinders) -> None:
    """Each extent within one zone's cylinders, blocks and track; no sector mapped twice; a
    track's blocks one run in sector order (what DiskSim's ltop, ptol and track_boundaries need)."""
    first_cyl = np.array([z.first_cylinder for z in zones])
    last_cyl = np.array([z.last_cylinder for z in zones])
    if last_cyl[-1] >= cylinders:
        raise DiskSimFormatError(block.path, zones[-1].line, f"zone ends at cylinder {last_cyl[-1]} but the map "
                                 f"{path.name} has {cylinders} cylinders")
    zone = np.searchsorted(first_cyl, extents[:, 1], side="right") - 1
    outside = (zone < 0) | (extents[:, 1] > last_cyl[np.maximum(zone, 0)])
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise DiskSimFormatError(path, int(numbers[i]), f"cylinder {extents[i, 1]} is in no zone of "
                                 f"{block.path.name} (DiskSim's find_zone_pbn fails)")
    first_lbn = np.array([z.first_lbn for z in zones])
    last_lbn = np.array([z.last_lbn for z in zones])
    spt = np.array([z.blocks_per_track for z in zones])
    by_lbn = []
    for what, lbn in (("first", extents[:, 0]), ("last", extents[:, 0] + extents[:, 4] - 1)):
        holder = np.searchsorted(first_lbn, lbn, side="right") - 1
        bad = (holder < 0) | (lbn > last_lbn[np.maximum(holder, 0)])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DiskSimFormatError(path, int(numbers[i]), f"the extent's {what} block {lbn[i]} is in no zone's "
                                     f"First LBN .. Last LBN (DiskSim's find_zone_lbn fails)")
        by_lbn.append(holder)
    # DiskSim's st_lbn takes a block's zone by its number, st_pbn, sector_width and pbn_skew by its
    # cylinder; the simulation has one zone per block, so the two must agree
    wrong = (by_lbn[0] != by_lbn[1]) | (by_lbn[0] != zone)
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise DiskSimFormatError(path, int(numbers[i]), f"the extent's blocks {extents[i, 0]}.."
                                 f"{extents[i, 0] + extents[i, 4] - 1} are not all in the zone of its cylinder "
                                 f"{extents[i, 1]} (the simulation takes a block's zone by its cylinder)")
    over = extents[:, 3] + extents[:, 4] > spt[zone]
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise DiskSimFormatError(path, int(numbers[i]), f"sectors {extents[i, 3]}..{extents[i, 3] + extents[i, 4] - 1}"
                                 f" run past the zone's {spt[zone[i]]} blocks per track")
    order = np.lexsort((extents[:, 3], extents[:, 2], extents[:, 1]))
    e = extents[order]
    same = (e[1:, 1] == e[:-1, 1]) & (e[1:, 2] == e[:-1, 2])
    overlap = same & (e[1:, 3] < e[:-1, 3] + e[:-1, 4])
    if overlap.any():
        k = int(np.flatnonzero(overlap)[0])
        raise DiskSimFormatError(path, int(numbers[order[k + 1]]), f"sector {e[k + 1, 3]} of cylinder {e[k + 1, 1]},"
                                 f" head {e[k + 1, 2]} is mapped by the extent of line {numbers[order[k]]} too")
    apart = same & (e[1:, 0] != e[:-1, 0] + e[:-1, 4])
    if apart.any():
        k = int(np.flatnonzero(apart)[0])
        raise DiskSimFormatError(path, int(numbers[order[k + 1]]), f"cylinder {e[k + 1, 1]}, head {e[k + 1, 2]} "
                                 f"holds blocks that are not one run in sector order (with line "
                                 f"{numbers[order[k]]}): DiskSim's track_boundaries would span other tracks' blocks")


def _int_rows(block: Block, key: str, width: int) -> np.ndarray:
    value = block.get(key, [])
    if not isinstance(value, list) or len(value) % width \
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise DiskSimFormatError(block.path, block.line_of(key), f"{key} must list whole numbers in groups of {width}")
    return np.array(value, dtype=np.int64).reshape(-1, width)
