"""Readers of DiskSim 4.0's ``.model`` files and the ``.seek`` tables they name.

A ``.model`` file holds one ``dm_disk`` block: the geometry (surfaces,
cylinders, block count), the mechanics (``dm_mech_g1``: seek curve, head
switch, write settle, rpm) and the layout (``dm_layout_g1``: zones with
spares, slips and defects, DiskSim's ``diskmodel/layout_g1_load.c``; or
``dm_layout_g4``: DiskSim 4's table-driven layout, ``layout_g4_load.c``:
track patterns, index sections, slips and remaps, often ``source``-d from a
file of its own; or ``dm_layout_g2``: zones and an extent map read from a raw
"Layout Map File", ``layout_g2_load.c``). An ``extracted`` seek curve lives in its own ``.seek`` file (2
columns; 3 with a standard deviation; 4: read, std, write).

Everything returned is plain data: frozen dataclasses of numbers, strings,
tuples and numpy arrays, times in seconds (``_s``). What they mean for a
disk (its :class:`~diskmodel.model.Disk`, seek function, LBN mapping) is
:mod:`diskmodel.model.disksim_drives.convert`'s business.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .layouts import (G1Layout, G1Zone, G2Layout, G2Zone, G4Layout, _g1_layout, _g2_layout, _g4_layout,
                      _known_keys_only, read_g2_map)
from .syntax import MS, Block, DiskSimFormatError, read_text, resolve_block, single_block

__all__ = ["G1Layout", "G1Zone", "G2Layout", "G2Zone", "G4Layout", "MechModel", "ModelFile", "SeekTable",
           "read_g2_map", "read_model_file", "read_seek_table"]


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
    ``distance, time_ms[, std_ms[, write_time_ms]]`` per line.

    As DiskSim 4.0's ``dm_mech_g1_read_extracted_seek_curve`` (mech_g1_load.c): the header is
    optional (without it the first line is a row) and its N need not be the number of rows (the
    loader only sizes its arrays with it); a file without the header must start at distance 1,
    as DiskSim's seek function reads before its table for a shorter distance then
    (``dm_mech_g1_seek_extracted``: ``xseekdists[i - 1]`` at ``i = 0``).
    """
    path = Path(path)
    lines = read_text(path, "DiskSim seek file").splitlines()
    header = None
    rows = []
    columns = None
    for number, raw in enumerate(lines, start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        if header is None and not rows:
            match = re.fullmatch(r"Seek distances measured:\s*(\d+)", text, re.IGNORECASE)
            if match is not None:
                header = int(match.group(1))
                continue
            if not re.match(r"[-+]?\d", text):
                raise DiskSimFormatError(path, number, "expected the header 'Seek distances measured: N' or a row "
                                         "'distance, time_ms'")
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
        if header is None and not rows and values[0] != 1:
            raise DiskSimFormatError(path, number, f"a seek file without the header 'Seek distances measured: N' must "
                                     f"start at distance 1 (got {fields[0]}): DiskSim 4.0 reads before its table "
                                     "for a shorter seek")
        if any(v < 0 for v in values[1:]):
            raise DiskSimFormatError(path, number, f"negative time in {text!r}")
        if rows and values[0] <= rows[-1][1][0]:
            raise DiskSimFormatError(path, number, f"seek distances must increase (got {fields[0]} after {rows[-1][1][0]:g})")
        rows.append((number, values))
    if not rows:
        raise DiskSimFormatError(path, 1, "empty seek file (expected 'Seek distances measured: N' and rows)")
    if len(rows) < 2:
        raise DiskSimFormatError(path, 1, "a seek table needs at least two points")
    data = np.array([values for _, values in rows])
    return SeekTable(path, data[:, 0].astype(np.int64), data[:, 1] * MS,
                     data[:, 3] * MS if columns == 4 else None,
                     data[:, 2] * MS if columns >= 3 else None)


@dataclass(frozen=True)
class MechModel:
    """``dm_mech_g1``: seek, head switch, settle, rotation [s, rpm].

    ``hpl_seek`` holds DiskSim's six "HPL seek equation values" as written:
    (V1 [whole cylinders]: the first distance of the linear branch, a [ms],
    b [ms], c [ms], slope [ms per cylinder], V6 [ms]: the one-cylinder seek
    time, -1 for none). ``hpl_one_cylinder_code_s`` is the one-cylinder seek
    DiskSim 4.0's loader leaves for a seek type ``hpl`` with V6 != -1
    (``seekone``, mech_g1_load.c): V6, or, when "Single cylinder seek time"
    is listed after the HPL values, that value's milliseconds stored as
    picoseconds without conversion (its loader has no ``dm_time_dtoi``).
    ``three_point_code_ps``: for seek types ``linear`` and ``curve``, the
    (single cylinder, average, full strobe) seek times as DiskSim 4.0's loader
    stores them (``mech_g1.modspec``: ``result->seekone = d``, no
    ``dm_time_dtoi``): the milliseconds truncated to whole picoseconds.
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
    hpl_one_cylinder_code_s: float | None = None
    three_point_code_ps: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class ModelFile:
    """A ``dm_disk`` block: geometry, mechanics and layout."""

    path: Path
    name: str | None
    surfaces: int
    cylinders: int
    block_count: int
    mech: MechModel
    layout: G1Layout | G2Layout | G4Layout
    #: where ``Layout Model`` is written in the file
    layout_line: int = field(default=0, compare=False)

    @property
    def zones(self) -> tuple[G1Zone, ...]:
        if not isinstance(self.layout, G1Layout):
            raise ValueError(f"{self.path}: a {type(self.layout).__name__} has no g1 zone list")
        return self.layout.zones


#: DiskSim's access time types (dm_mech_g1_param.c); DiskSim 4.0's mechanical model stores the
#: choice (``acctime``) but no line of its code reads it, so all three time alike
_ACCESS_TIME_TYPES = ("constant", "averageRotation", "trackSwitchPlusRotation")


#: The three times seek types linear and curve take, in DiskSim's (seekone, seekavg, seekfull) order
_THREE_POINT_KEYS = ("Single cylinder seek time", "Average seek time", "Full strobe seek time")


def _mech(block: Block, path: Path) -> MechModel:
    _known_keys_only(block)
    seek_type = block.word("Seek type")
    table = None
    hpl = first_ten = one_cylinder_s = None
    three_point = []
    if seek_type == "extracted":
        name = block.word("Full seek curve")
        table = read_seek_table(path.parent / name)
    elif seek_type in ("hpl", "hplplus10"):
        hpl = tuple(block.numbers("HPL seek equation values"))
        # do_hpl_seek (mech_g1_load.c) refuses fewer than 6, takes the first 6 of more, and refuses
        # a negative V2..V5
        if len(hpl) < 6:
            raise DiskSimFormatError(block.path, block.line_of("HPL seek equation values"),
                                     f"HPL seek equation values must hold 6 numbers (found {len(hpl)}), as "
                                     "DiskSim 4.0's loader requires")
        hpl = hpl[:6]
        if any(v < 0 for v in hpl[1:5]):
            raise DiskSimFormatError(block.path, block.line_of("HPL seek equation values"),
                                     "HPL seek equation values V2..V5 must be >= 0, as DiskSim 4.0's loader requires")
        # DiskSim's loader (mech_g1_load.c) takes V1 as whole cylinders, >= 0.
        if hpl[0] < 0 or hpl[0] != int(hpl[0]):
            raise DiskSimFormatError(block.path, block.line_of("HPL seek equation values"),
                                     f"the first HPL seek equation value is a distance in whole cylinders, "
                                     f">= 0 (got {hpl[0]:g})")
        # V6 may be any number: -1 is "none", anything else the one-cylinder seek (seekone), a negative
        # one included, which dm_seek_time_g1 turns into the head switch or 0 (max(hst, seektime)),
        # no write settle after 0; drive_parameters' seek table is clipped at 0 alike (checked on hp_c2247a,
        # seek type hpl, V6 = -0.5 against -1: tests/golden/disksim_variants)
        if seek_type == "hpl" and hpl[5] != -1:
            one_cylinder_s = hpl[5] * MS
            key = "Single cylinder seek time"
            if key in block and block.line_of(key) > block.line_of("HPL seek equation values"):
                one_cylinder_s = int(block.number(key)) * 1e-12
        if seek_type == "hplplus10":
            first_ten = tuple(v * MS for v in block.numbers("First ten seek times"))
            # do_1st10_seeks (mech_g1_load.c) refuses fewer than 10 and takes the first 10 of more
            if len(first_ten) < 10:
                raise DiskSimFormatError(block.path, block.line_of("First ten seek times"),
                                         f"First ten seek times must hold 10 numbers (found {len(first_ten)}), "
                                         "as DiskSim 4.0's loader requires")
            if any(v < 0 for v in first_ten[:10]):
                raise DiskSimFormatError(block.path, block.line_of("First ten seek times"),
                                         "First ten seek times must be >= 0, as DiskSim 4.0's loader requires")
            first_ten = first_ten[:10]
    elif seek_type in ("linear", "curve"):
        # DiskSim 4.0 runs them (dm_mech_g1_seek_3pt_line, _3pt_curve) on the three times its loader
        # stores unconverted (mech_g1.modspec: result->seekone = d): whole picoseconds
        for key in _THREE_POINT_KEYS:
            if key not in block:
                # the loader leaves the field unset (dm_mech_g1_loadparams mallocs the model: garbage)
                raise DiskSimFormatError(block.path, block.line_of("Seek type"),
                                         f"seek type {seek_type} needs {key!r} (DiskSim 4.0 leaves it unset)")
            value = block.number(key)
            if value < 0:
                raise DiskSimFormatError(block.path, block.line_of(key), f"{key} must be >= 0 (got {value:g})")
            three_point.append(int(value))
    elif seek_type == "constant":
        # dm_mech_g1_seek_const asserts m->seektype == SEEK_CONST, a field the loader never sets:
        # DiskSim 4.0 stops at the first seek (checked on hp_c2247a's trace)
        raise DiskSimFormatError(block.path, block.line_of("Seek type"),
                                 "seek type constant stops DiskSim 4.0 itself (dm_mech_g1_seek_const's assertion "
                                 "on seektype, which its loader never sets): use extracted, hpl, hplplus10, linear "
                                 "or curve")
    else:
        # mech_g1.modspec: "Unknown seek type", ddbg_assert(0)
        raise DiskSimFormatError(block.path, block.line_of("Seek type"),
                                 f"seek type {seek_type!r} is not one of DiskSim 4.0's (extracted, hpl, hplplus10, "
                                 "linear, curve; constant stops DiskSim)")

    def optional_ms(key):
        return block.number(key) * MS if key in block else None

    access = block.word("Access time type", "trackSwitchPlusRotation")
    if access not in _ACCESS_TIME_TYPES:
        raise DiskSimFormatError(block.path, block.line_of("Access time type"),
                                 f"Access time type {access!r} is not one of DiskSim's "
                                 f"({', '.join(_ACCESS_TIME_TYPES)})")
    rpm_error = block.number("Percent error in rpms", 0.0)
    if not 0.0 <= rpm_error <= 100.0:
        raise DiskSimFormatError(block.path, block.line_of("Percent error in rpms"),
                                 f"Percent error in rpms must lie in [0, 100] (got {rpm_error:g})")
    rpm = block.number("Rotation speed (in rpms)")
    if not rpm > 0:
        raise DiskSimFormatError(block.path, block.line_of("Rotation speed (in rpms)"), f"rpm must be > 0 (got {rpm})")
    return MechModel(
        access_time_type=access,
        seek_type=seek_type,
        head_switch_s=block.number("Head switch time") * MS,
        write_settle_s=block.number("Add. write settling delay", 0.0) * MS,
        rpm=rpm,
        rpm_error_percent=rpm_error,
        single_cylinder_seek_s=optional_ms("Single cylinder seek time"),
        average_seek_s=optional_ms("Average seek time"),
        full_strobe_seek_s=optional_ms("Full strobe seek time"),
        hpl_seek=hpl, first_ten_seek_s=first_ten, seek_table=table, hpl_one_cylinder_code_s=one_cylinder_s,
        three_point_code_ps=tuple(three_point) if seek_type in ("linear", "curve") else None)


def _model_from_block(block: Block) -> ModelFile:
    if block.type != "dm_disk":
        raise DiskSimFormatError(block.path, block.line, f"expected a dm_disk block (found {block.type!r})")
    _known_keys_only(block)
    layout_block = resolve_block(block.require("Layout Model"), block, "Layout Model",
                                 ("dm_layout_g1", "dm_layout_g2", "dm_layout_g4"))
    layout = {"dm_layout_g1": _g1_layout, "dm_layout_g2": _g2_layout,
              "dm_layout_g4": _g4_layout}[layout_block.type](layout_block)
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
    if isinstance(layout, G2Layout):
        # layout_g2.c sizes its per-cylinder table by the map's header and walks dm_cyls of it
        # (precompute_skews); ptol asserts the head < the disk's surfaces
        if layout.map_cylinders < model.cylinders:
            raise DiskSimFormatError(layout.map_path, 3, f"the map has {layout.map_cylinders} cylinders, fewer "
                                     f"than the disk's {model.cylinders} ({block.path.name})")
        heads = int(layout.extents[:, 2].max())
        if heads >= model.surfaces:
            i = int(np.flatnonzero(layout.extents[:, 2] == heads)[0])
            raise DiskSimFormatError(layout.map_path, int(layout.extent_lines[i]),
                                     f"head {heads} beyond the disk's {model.surfaces} surfaces")
    return model


def read_model_file(path) -> ModelFile:
    """Read a DiskSim ``.model`` file (one ``dm_disk`` block) and the files it names."""
    return _model_from_block(single_block(path, ("dm_disk",)))

