"""DiskSim's drive files as model objects, and a drive checked against its trace.

:mod:`diskmodel.data` reads DiskSim 4.0's files into plain records
(:mod:`~diskmodel.data.disksim.syntax`, :mod:`~diskmodel.data.disksim.model_file`,
:mod:`~diskmodel.data.disksim`). This module is the one place that says what
those records mean for the model:

* :func:`seek_time_s`: DiskSim's seek functions of ``dm_mech_g1`` (an
  ``extracted`` table, ``hpl``, ``hplplus10``), through the one table rule
  and eq. (7) of :mod:`diskmodel.model.drive.seek`; :func:`table_seek` and :func:`seek_curve`
  as :class:`~diskmodel.model.drive.seek.TableSeek`;
* :func:`zone_geometry`: the zones as a :class:`~diskmodel.model.drive.zones.Geometry`;
* :func:`load_disksim_drive`: a drive folder as a :class:`DiskSimDrive`, its
  files and the :class:`~diskmodel.model.drive.disk.Disk` they describe;
* :func:`zone_layout` and :func:`drive_parameters`: the LBN mapping (a g1,
  g2 or g4 layout) and the parameters of the per-request simulation
  (:mod:`diskmodel.model.simulator.simulate`);
* :func:`simulate_trace` and :func:`validate_drive`: a drive's trace
  simulated and compared with the measured service times.

Files are read by :mod:`diskmodel.data`'s readers; all the rest is numpy.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from diskmodel.data.disksim import DISKSIM_PUBLISHED_DEMERIT_MS, DiskSimFolder, Trace, read_drive_folder
from diskmodel.data.disksim.model_file import G1Layout, G2Layout, G4Layout, MechModel, ModelFile, SeekTable
from diskmodel.data.disksim.syntax import MS, DiskSimFormatError

from .._checks import evolve as _evolve
from .._checks import finite_array, show
from ..drive.disk import Disk
from ..drive.cache import DriveCache
from ..simulator.g4 import angle_dtoi
from ..simulator.mapping import G2ZoneLayout, G4ZoneLayout, ZoneLayout
from .honoured import check_honoured, check_immediate_access_honoured, check_parv_honoured, parv_host_path
from ..drive.parameters import DriveParameters, buffer_fields
from ..drive.presets import covering_skews_sectors
from ..drive.seek import TableSeek, table_seek_time_s, two_piece_seek_time_s
from ..simulator.simulate import SimulationResult, simulate_requests
from ..predictions.validation import TraceValidation
from ..drive.zones import Geometry, Zone

__all__ = ["DiskSimDrive", "block_transfer_time_s", "drive_parameters", "drive_cache", "g1_skews_sectors",
           "g4_zone_table", "load_disksim_drive", "seek_curve", "seek_time_s", "simulate_trace", "span_cylinders",
           "table_seek", "validate_drive", "validate_trace", "zone_geometry", "zone_layout"]


# ---------------------------------------------------------------------------
# Seek
# ---------------------------------------------------------------------------

def seek_time_s(mech: MechModel, distance_cylinders, *, write: bool = False,
                disksim_code: bool = True) -> np.ndarray:
    """Seek time [s] as DiskSim's seek function of *mech*'s type computes it (no head switch).

    *distance_cylinders* must be whole numbers >= 0: DiskSim's seek functions
    take an ``int`` distance. *write* takes the write curve of a 4-column
    table (the read curve where there is none).

    *disksim_code* (see :func:`drive_parameters`) matters for seek type
    ``hpl`` only. DiskSim's manual (diskmodel/doc/dm_param.tex) gives V6 for
    one cylinder (unless -1), V2 + V3 sqrt(d) below V1 cylinders and V4 + V5 d
    from there: eq. (7) of the model. DiskSim 4.0's ``dm_mech_g1_seek_hpl``
    compares the distance with ``hpseek[0]``, which its loader never sets (V1
    goes to ``hpseek_v1``), so every seek of one cylinder or more but the
    one-cylinder seek takes the line V4 + V5 d; its one-cylinder seek is
    ``MechModel.hpl_one_cylinder_code_s`` (checked with DiskSim's own
    ``mech_seek`` tool and request by request, tests/golden/disksim_variants).
    ``hplplus10`` uses V1 as the manual says, in both readings.
    """
    if not isinstance(mech, MechModel):
        raise ValueError(f"mech must be a MechModel (got {show(mech)})")
    if not isinstance(disksim_code, bool):
        raise ValueError(f"disksim_code must be True or False (got {disksim_code!r})")
    distance = finite_array("distance_cylinders", distance_cylinders, nonnegative=True, whole=True)
    if mech.seek_type == "extracted":
        table = mech.seek_table
        times = table.write_time_s if (write and table.write_time_s is not None) else table.read_time_s
        return table_seek_time_s(distance, table.distance_cylinders, times)
    if mech.seek_type in ("hpl", "hplplus10"):
        first_long_cylinders, a_ms, b_ms, c_ms, slope_ms, single_cylinder_flag = mech.hpl_seek
        # DiskSim takes the square-root branch for `dist < V1` (diskmodel/mech_g1_seektime.c,
        # dm_mech_g1_seek_hpl and dm_mech_g1_seek_1st10_plus_hpl; DiskSim 2.0's
        # disk_seektime_hpl_equation alike), with dist an int and V1 whole cylinders
        # (mech_g1_load.c). Eq. (7) takes it for d <= knee. On whole distances the two agree
        # with knee = V1 - 1, so DiskSim's curve is eq. (7) with that knee.
        result = two_piece_seek_time_s(distance, a_ms * MS, b_ms * MS, c_ms * MS, slope_ms * MS,
                                       first_long_cylinders - 1)
        if mech.seek_type == "hplplus10":
            first = np.asarray(mech.first_ten_seek_s)
            small = (distance >= 1) & (distance <= 10)
            return np.where(small, first[np.clip(distance.astype(int) - 1, 0, 9)], result)
        if disksim_code:
            result = np.where(distance > 0, c_ms * MS + slope_ms * MS * distance, 0.0)
        if single_cylinder_flag != -1:
            one_cylinder_s = single_cylinder_flag * MS
            if disksim_code and mech.hpl_one_cylinder_code_s is not None:
                one_cylinder_s = mech.hpl_one_cylinder_code_s
            # a negative V6 (DiskSim's loader takes any) seeks in no time: dm_seek_time_g1 takes
            # max(head switch, seek), the head switch 0 on one surface (simulate adds the switch)
            return np.where(distance == 1, max(one_cylinder_s, 0.0), result)
        return result
    if mech.seek_type in ("linear", "curve") and mech.three_point_code_ps is not None:
        if not disksim_code:
            raise ValueError(f"seek type {mech.seek_type} is followed as DiskSim 4.0's code runs it only "
                             "(disksim_code=True)")
        # DiskSim 4.0's dm_mech_g1_seek_3pt_line and _3pt_curve (diskmodel/mech_g1_seektime.c) on the
        # times its loader stores as whole picoseconds (MechModel.three_point_code_ps). The line sets
        # numcyls = cyls, so every distance of 2 or more takes the full strobe time; the curve is
        # seekone + seekavg (d - 1) + seekfull sqrt32(d - 1), sqrt32 the integer square root (sqrt.c)
        one_ps, average_ps, full_ps = mech.three_point_code_ps
        if mech.seek_type == "linear":
            ps = np.where(distance >= 2, full_ps, one_ps)
        else:
            rest = np.maximum(distance - 1, 0)
            ps = one_ps + average_ps * rest + full_ps * np.floor(np.sqrt(rest))
        return np.where(distance == 0, 0.0, ps * 1e-12)
    raise ValueError(f"seek type {mech.seek_type!r} is not supported (extracted, hpl, hplplus10, linear, curve are)")


def table_seek(table: SeekTable, curve: str = "read", reach_cylinders: int | None = None) -> TableSeek:
    """The read or write curve of a ``.seek`` table as a :class:`TableSeek`.

    With *reach_cylinders*, a table ending short of ``reach_cylinders - 1``
    gets one more point there, extrapolated linearly from its last two
    points as DiskSim does (``dm_mech_g1_seek_extracted``).
    """
    if curve not in ("read", "write"):
        raise ValueError(f"curve must be 'read' or 'write' (got {curve!r})")
    times = table.read_time_s if curve == "read" else table.write_time_s
    if times is None:
        raise ValueError(f"{table.path} has no write curve (it has {2 if table.std_s is None else 3} columns)")
    distance = table.distance_cylinders.astype(float)
    if reach_cylinders is not None and distance[-1] < reach_cylinders - 1:
        last = float(reach_cylinders - 1)
        extra = table_seek_time_s(np.array([last]), distance, times)[0]
        distance = np.append(distance, last)
        times = np.append(times, extra)
    return TableSeek(distance, times)


def seek_curve(model: ModelFile, *, disksim_code: bool = True) -> TableSeek:
    """The model file's seek curve as a :class:`TableSeek` reaching its last cylinder.

    Extracted tables are extended to ``span_cylinders - 1`` by DiskSim's
    linear extrapolation; HPL curves are tabulated at every whole distance
    (exact there; linear between, as every table).
    """
    if model.mech.seek_type == "extracted":
        return table_seek(model.mech.seek_table, "read", reach_cylinders=span_cylinders(model))
    distance = np.arange(1, span_cylinders(model), dtype=float)
    return TableSeek(distance, seek_time_s(model.mech, distance, disksim_code=disksim_code))


# ---------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------

def g4_zone_table(layout: G4Layout, surfaces: int) -> np.ndarray:
    """(n, 3) rows (first cylinder, last cylinder, mean sectors per track) of a g4 root index.

    Each root entry covers ``cylrunlen`` cylinders holding ``runlen``
    blocks; their mean sectors per track is ``runlen / (cylrunlen *
    surfaces)`` (g4 layouts may give each surface its own track length).
    """
    root = layout.idx[-1]
    first = root[:, 1].astype(np.int64)
    cylinders = root[:, 7].astype(np.int64)
    sectors_per_track = root[:, 6] / (cylinders * surfaces)
    return np.column_stack((first, first + cylinders - 1, sectors_per_track))


def span_cylinders(model: ModelFile) -> int:
    """Cylinders the layout uses (one more than listed where the zones end past the count)."""
    if isinstance(model.layout, (G1Layout, G2Layout)):
        return max(model.cylinders, model.layout.zones[-1].last_cylinder + 1)
    return max(model.cylinders, int(g4_zone_table(model.layout, model.surfaces)[-1, 1]) + 1)


def zone_geometry(model: ModelFile) -> Geometry:
    """The model file's zones as a :class:`Geometry`.

    g1 layouts, approximated: no spares or slips, skews rounded to whole
    sectors, and cylinders left unmapped between two zones counted in the
    zone before the gap. g4 layouts: one zone per run of root entries with
    the same (rounded) mean sectors per track; the real g4 layout is
    serpentine (a run of cylinders on one surface, then back on the next),
    so LBA -> CHS of this Geometry is not the drive's, but capacity and zone
    transfer rates are kept (to rounding). Its skews are not the g4 tables'
    (which belong to the serpentine order) but those covering the head
    switch and the one-cylinder seek (:func:`~diskmodel.model.drive.presets.covering_skews_sectors`),
    so that a sequential transfer over this Geometry, as over the drive,
    loses no revolution at a track change.
    """
    if isinstance(model.layout, G4Layout):
        one_cylinder_s = float(seek_curve(model).seek_time_s(1.0))
        zones = []
        for first, last, sectors_per_track in g4_zone_table(model.layout, model.surfaces):
            sectors_per_track = max(int(round(sectors_per_track)), 1)
            if zones and zones[-1].sectors_per_track == sectors_per_track \
                    and zones[-1].last_cylinder + 1 == int(first):
                zones[-1] = dataclasses.replace(zones[-1], last_cylinder=int(last))
            else:
                skews = covering_skews_sectors(sectors_per_track, model.mech.rpm, model.mech.head_switch_s,
                                               one_cylinder_s)
                zones.append(Zone(int(first), int(last), sectors_per_track, *skews))
        return Geometry(model.surfaces, tuple(zones))
    if isinstance(model.layout, G2Layout):
        listed = model.layout.zones
        ends = [after.first_cylinder - 1 for after in listed[1:]] + [listed[-1].last_cylinder]

        def sectors(z, skew, units):
            return int(round(skew * z.blocks_per_track if units == "revolutions" else skew))
        zones = tuple(Zone(z.first_cylinder, end, z.blocks_per_track, sectors(z, z.track_skew, z.skew_units[1]),
                           sectors(z, z.cylinder_skew, z.skew_units[2])) for z, end in zip(listed, ends))
        return Geometry(model.surfaces, zones)
    listed = model.zones
    ends = [after.first_cylinder - 1 for after in listed[1:]] + [listed[-1].last_cylinder]
    zones = tuple(Zone(z.first_cylinder, end, z.blocks_per_track,
                       *(int(round(skew)) for skew in g1_skews_sectors(z)[1:]))
                  for z, end in zip(listed, ends))
    return Geometry(model.surfaces, zones)


def g1_skews_sectors(zone) -> tuple[float, float, float]:
    """DiskSim's (offset of the first block, track skew, cylinder skew) of a g1 zone
    (:class:`~diskmodel.data.disksim.model_file.G1Zone`) in sector widths.

    ``layout_g1_zone.modspec`` (DiskSim 4.0's loader): in sectors ``(int)d * sector_width``,
    whole sectors (C truncates toward zero); in revolutions ``dm_angle_dtoi(d)``: the whole
    turns of a value above 1 dropped, truncated to 2^-32 of a turn (``angle_dtoi``), here divided
    by the sector width ``2^32 // spt``, so a fraction of a sector. The mapping adds them up
    in sector widths (``g1_map_pbn_skew``'s ``addmult`` in units of ``sector_width``).
    """
    width = (1 << 32) // zone.blocks_per_track
    values = (zone.first_block_offset_sectors, zone.track_skew_sectors, zone.cylinder_skew_sectors)
    return tuple(float(int(angle_dtoi(value))) / width if units == "revolutions" else float(int(value))
                 for value, units in zip(values, zone.skew_units))


def zone_layout(model: ModelFile) -> ZoneLayout:
    """The layout of a model file as a :class:`ZoneLayout`: g1 zones (skews,
    spares, slips, defects), a g2 layout's zones and extent map as a
    :class:`G2ZoneLayout`, or a g4 layout's tables as a :class:`G4ZoneLayout`."""
    if isinstance(model.layout, G2Layout):
        g2 = model.layout
        return G2ZoneLayout.from_map(
            model.surfaces, [(z.first_cylinder, z.last_cylinder) for z in g2.zones],
            [z.blocks_per_track for z in g2.zones],
            [(z.zone_skew, z.track_skew, z.cylinder_skew) for z in g2.zones], [z.skew_units for z in g2.zones],
            g2.extents, model.cylinders, model.block_count)
    if isinstance(model.layout, G4Layout):
        g4 = model.layout
        return G4ZoneLayout.from_tables(model.surfaces, g4.tp, g4.idx, g4.idx_child_types, g4.slips, g4.remaps,
                                        model.block_count)
    zones = model.zones
    layout = ZoneLayout(
        surfaces=model.surfaces,
        first_cylinder=[z.first_cylinder for z in zones],
        last_cylinder=[z.last_cylinder for z in zones],
        sectors_per_track=[z.blocks_per_track for z in zones],
        # as DiskSim's loader takes them: whole sectors, or in revolutions a fraction of one
        first_block_offset_sectors=[g1_skews_sectors(z)[0] for z in zones],
        track_skew_sectors=[g1_skews_sectors(z)[1] for z in zones],
        cylinder_skew_sectors=[g1_skews_sectors(z)[2] for z in zones],
        empty_space_sectors=[z.empty_space_at_front_sectors for z in zones],
        spares=[z.spares for z in zones],
        slips=tuple(np.asarray(z.slips, dtype=np.int64) for z in zones),
        defects=tuple(np.asarray(z.defects, dtype=np.int64).reshape(-1, 2) for z in zones),
        sparing_scheme=model.layout.sparing_scheme, mapping_scheme=model.layout.mapping_scheme,
        rangesize=model.layout.rangesize)
    # DiskSim uses the blocks the zones hold ("checknumblocks"); the exported
    # count is the smaller of that and the model file's block count.
    return layout.evolve(block_count=min(int(model.block_count), layout.zone_capacity_blocks))


# ---------------------------------------------------------------------------
# A drive
# ---------------------------------------------------------------------------

def block_transfer_time_s(files: DiskSimFolder) -> tuple[float, float]:
    """(read, write) time to move one block to the host [s]: the larger of the
    disk's bulk sector time and its bus's block time (DiskSim's
    ``disk_get_blktranstime``)."""
    bus = files.parv.disk_bus_transfer_s if files.parv is not None else (0.0, 0.0)
    bulk = max(files.specs.bulk_sector_transfer_s, 0.0)
    return (max(bus[0], bulk), max(bus[1], bulk))


@dataclass(frozen=True, eq=False)
class DiskSimDrive(DiskSimFolder):
    """A DiskSim drive folder's files and the :class:`Disk` they describe.

    ``disk`` has the zones of the model file, the seek curve, rpm, head
    switch and write settle; ``model``, ``specs`` and ``parv`` keep the
    detailed layout, mechanics, cache and overheads that the per-request
    simulation uses (:meth:`simulation_parameters`).
    """

    disk: Disk

    def __post_init__(self):
        if not isinstance(self.disk, Disk):
            raise ValueError(f"disk must be a Disk (got {show(self.disk)})")

    def simulation_parameters(self, *, disksim_code: bool = True,
                              disksim_access_block_bug: bool = True) -> DriveParameters:
        """The :class:`DriveParameters` of this drive (see :func:`drive_parameters`)."""
        return drive_parameters(self, disksim_code=disksim_code, disksim_access_block_bug=disksim_access_block_bug)

    def evolve(self, **changes) -> "DiskSimDrive":
        """A copy with some fields changed, validated again (unknown names raise ValueError)."""
        return _evolve(self, changes)


def drive_cache(specs, *, disksim_code: bool = True) -> DriveCache:
    """The diskspecs' buffer as a :class:`DriveCache` (blocks of 512 bytes): the
    one translation of a DiskSim drive's cache, for its :class:`Disk` and for
    :func:`drive_parameters` alike.

    *disksim_code* (see :func:`drive_parameters`): True takes "Read any free
    blocks" as DiskSim 4.0's code does (no effect) and a "Maximum read-ahead"
    of 0 with a read-ahead scheme as no maximum (``read_ahead_bytes=None``:
    ``disk_buffer_get_max_readahead`` falls through to the segment); False
    takes both as DiskSim's manual defines them (the sectors passing under the
    head are kept; a maximum of 0 is no read-ahead).
    """
    if not isinstance(disksim_code, bool):
        raise ValueError(f"disksim_code must be True or False (got {disksim_code!r})")
    if disksim_code:
        scheme = specs.buffer_continuous_read
        ahead = specs.max_read_ahead_blocks * 512 if specs.max_read_ahead_blocks > 0 else None
        if not scheme:
            ahead = 0
    else:
        scheme = specs.buffer_continuous_read if specs.max_read_ahead_blocks > 0 else 0
        ahead = specs.max_read_ahead_blocks * 512 if scheme else 0
    return DriveCache(
        specs.buffer_segments, specs.segment_size_blocks * 512,
        read_ahead_bytes=ahead,
        write_back=specs.fast_write_level > 0, fast_write_level=specs.fast_write_level, read_ahead_scheme=scheme,
        read_ahead_over_requested=specs.read_ahead_over_requested,
        read_ahead_on_idle_hit=specs.read_ahead_on_idle_hit,
        read_any_free_blocks=specs.read_any_free_blocks and not disksim_code,
        read_hits_on_write_data=specs.read_hits_on_write_data,
        separate_write_segment=specs.separate_write_segment and specs.buffer_segments >= 2,
        read_watermark=specs.read_high_water_mark,
        # DiskSim tests "Enable caching in buffer" for truth only (1 and 2 alike)
        caching=specs.enable_caching != 0)


def _disk(files: DiskSimFolder, disksim_code: bool) -> Disk:
    model, specs = files.model, files.specs
    mech = model.mech
    estimates = []
    if mech.write_settle_s < 0:
        estimates.append(("write_settle_s", f"DiskSim lists a negative write settle "
                                            f"({mech.write_settle_s * 1e3:g} ms); the Disk bundle keeps 0, "
                                            "the simulation uses the listed value"))
    if isinstance(model.layout, G4Layout):
        estimates.append(("geometry", "g4 layout: zones from the root index runs with their mean sectors per "
                                      "track, skews covering the head switch and the one-cylinder seek; the "
                                      "drive's serpentine LBN order is not represented"))
    if isinstance(model.layout, G2Layout):
        estimates.append(("geometry", "g2 layout: the zones' cylinders, sectors per track and skews; the extent "
                                      "map (moved or unmapped tracks and sectors) is not represented"))
    read_block_s = block_transfer_time_s(files)[0]
    return Disk(
        name=files.name, geometry=zone_geometry(model), seek=seek_curve(model, disksim_code=disksim_code),
        rpm=mech.rpm,
        command_overhead_s=specs.command_overhead_s[("read", "miss", "read")],
        settle_s=0.0, write_settle_s=max(mech.write_settle_s, 0.0), head_switch_s=mech.head_switch_s,
        interface_rate_bytes_per_s=512.0 / read_block_s if read_block_s > 0 else float("inf"),
        cache_size_bytes=specs.cache_size_bytes, drive_cache=drive_cache(specs, disksim_code=disksim_code),
        provenance=f"DiskSim 4.0 validation files in {files.folder} (settle is inside the measured seek curve; "
                   "spares, slips, g2 extents and g4 tables are in DiskSimDrive.model, not in Disk.geometry)",
        estimates=tuple(estimates))


def load_disksim_drive(folder, *, disksim_code: bool = True) -> DiskSimDrive:
    """Read a DiskSim drive folder (:func:`diskmodel.data.disksim.read_drive_folder`)
    and build the :class:`Disk` its files describe (its cache read as in
    :func:`drive_parameters`, *disksim_code* alike)."""
    files = read_drive_folder(folder)
    return DiskSimDrive(**{f.name: getattr(files, f.name) for f in dataclasses.fields(files)},
                        disk=_disk(files, disksim_code))


# ---------------------------------------------------------------------------
# The per-request simulation and validation against the traces
# ---------------------------------------------------------------------------

def _queue_policy(block) -> int:
    """The disk queue's "Scheduling policy" (its Scheduler block; 1, FCFS, when absent). It orders
    only the writes queued with "Allow write prebuffering" and a read behind them (values not
    followed are refused there by check_honoured, :data:`~diskmodel.model.disksim_drives.honoured.
    PREBUFFERING_POLICIES`; without prebuffering the queue never holds two requests: 1)."""
    from diskmodel.data.disksim.syntax import Block
    from diskmodel.model.disksim_drives.honoured import PREBUFFERING_POLICIES
    scheduler = block.get("Scheduler")
    policy = scheduler.get("Scheduling policy") if isinstance(scheduler, Block) else None
    if policy not in PREBUFFERING_POLICIES or block.get("Allow write prebuffering") != 1:
        return 1
    return int(policy)


def drive_parameters(files: DiskSimFolder, *, disksim_code: bool = True,
                     disksim_access_block_bug: bool = True) -> DriveParameters:
    """The :class:`DriveParameters` of a DiskSim drive folder's files.

    Takes the seek curve of the model file (tabulated at every whole
    distance), the g1 layout, the overheads, cache and fast-write level of
    the diskspecs, and the bus block time (:func:`block_transfer_time_s`).
    A parameter the simulation does not honour raises DiskSimFormatError
    naming the file, line and parameter
    (:func:`~diskmodel.model.disksim_drives.honoured.check_honoured`).

    *disksim_code*: True (the default) runs every parameter as DiskSim 4.0's
    code does, the reference the simulation is checked against request by
    request. False takes two parameters as DiskSim's manual defines them
    where its code differs:

    * "Read any free blocks" (the drive keeps the sectors passing under the
      head before a read's first one, a property DIXtrac measured), which
      DiskSim's code never acts on: DiskSim's own times did not change when
      it was flipped (tests/golden/disksim_variants: atlas10k and ibm18es
      from 1 to 0, cheetah4LP and hp_c2247a from 0 to 1), though its code means to
      (disk_buffer_seekdone);
    * "Maximum read-ahead (blks)" = 0, which the manual makes no read-ahead
      and DiskSim's code no bound on it (disk_buffer_get_max_readahead: the
      segment bounds it; tests/golden/disksim_random).

    It also takes a seek file's fourth column as the write seek curve (a
    later release's "dual seek" table, maxtor300g's README), which DiskSim
    4.0's loader ignores.

    One rule for every parameter where DiskSim's code and manual differ: the
    code ("Read-ahead over requested" and read-ahead scheme 4 follow it too;
    docs/benchmarks.md gives the figures of both readings).

    *disksim_access_block_bug*: True (the default) is DiskSim 4.0 exactly,
    the reference the simulation is checked against request by request
    (tests/golden/disksim_full): its ``g1_access_block``
    (``diskmodel/mech_g1.c``) takes its conversion's success value
    (``DM_OK``, -3) for a failure, so an immediate (zero-latency) access
    always waits for its first wanted sector and "Read any free blocks" has
    no effect. False mends that one line, as DiskSim 3.0 has it: a read's
    first track with "Read any free blocks" starts under the head
    (``DriveParameters.immediate_access_under_head``; checked request by
    request against a DiskSim 4.0 build with the line mended,
    tests/golden/disksim_fixed, on the layouts of
    :data:`~diskmodel.model.disksim_drives.honoured.IMMEDIATE_ACCESS_SPARING`;
    another layout with the flag set is refused). Not the default: it is
    not followed for "Immediate buffer read" (which the mended build acts
    on through its pending-request path) nor on other layouts, and a
    held-out drive is checked against DiskSim 4.0's behaviour.
    With ``disksim_code=False`` the manual's passing sectors above are kept
    instead, whatever this says.
    """
    if not isinstance(disksim_code, bool):
        raise ValueError(f"disksim_code must be True or False (got {disksim_code!r})")
    if not isinstance(disksim_access_block_bug, bool):
        raise ValueError(f"disksim_access_block_bug must be True or False (got {disksim_access_block_bug!r})")
    model, specs = files.model, files.specs
    check_honoured(specs.block, model)
    if disksim_code and not disksim_access_block_bug:
        check_immediate_access_honoured(specs.block, model)
    constant_access, arbitration, controller_delay = None, 0.0, 0.0
    if files.parv is not None:
        check_parv_honoured(files.parv)
        # the driver, the disk's bus and the pass-thru controller on the way to the disk
        constant_access, arbitration, controller_delay = parv_host_path(files.parv)
        if (arbitration or controller_delay) and specs.block.number("Never disconnect", 0.0) \
                and specs.fast_write_level:
            raise DiskSimFormatError(specs.block.path, specs.block.line_of("Never disconnect"),
                                     "Never disconnect = 1 with fast writes is not honoured with the .parv's "
                                     "Arbitration time or Scale for delays other than 0 (measured: "
                                     "tests/golden/disksim_variants/README.md)")
    layout = zone_layout(model)
    span = max(span_cylinders(model), int(layout.last_cylinder.max()) + 1)
    distance = np.arange(span, dtype=float)
    seek = np.maximum(seek_time_s(model.mech, distance, disksim_code=disksim_code), 0.0)
    write_seek = None
    table = model.mech.seek_table
    # a fourth column of the seek file is a later release's write curve (maxtor300g's README);
    # DiskSim 4.0's loader scans "%d, %lf, %lf" and ignores it (dm_mech_g1_read_extracted_seek_curve:
    # tests/golden/disksim_variants' cheetah4LP_seek_fourth_column gives the bundled times), so it is
    # followed with disksim_code=False only
    if table is not None and table.write_time_s is not None and not disksim_code:
        write_seek = np.maximum(seek_time_s(model.mech, distance, write=True), 0.0)
    overhead = np.zeros((2, 2, 2))
    for k, kind in enumerate(("read", "write")):
        for h, hit in enumerate(("miss", "hit")):
            for p, previous in enumerate(("read", "write")):
                overhead[k, h, p] = specs.command_overhead_s[(kind, hit, previous)]
    read_block_s, write_block_s = block_transfer_time_s(files)
    buffer = buffer_fields(drive_cache(specs, disksim_code=disksim_code), 512)
    if disksim_code and not disksim_access_block_bug:
        # "Read any free blocks" makes a read's first track an immediate access (the mended code)
        buffer["read_any_free_blocks"] = bool(specs.read_any_free_blocks)
    # DiskSim's disk_postpass_perdisk: no minimum without a read-ahead scheme, and a maximum
    # below the minimum is raised to it
    min_read_ahead = int(specs.block.number("Minimum read-ahead (blks)", 0.0)) if buffer["read_ahead_scheme"] else 0
    if min_read_ahead > buffer["max_read_ahead_blocks"]:
        buffer["max_read_ahead_blocks"] = min_read_ahead
    return DriveParameters(
        name=files.name, layout=layout, seek_by_distance_s=seek, rpm=model.mech.rpm,
        head_switch_s=model.mech.head_switch_s, write_settle_s=model.mech.write_settle_s,
        command_overhead_s=overhead, read_completion_s=specs.read_completion_s,
        write_completion_s=specs.write_completion_s, data_preparation_s=specs.data_preparation_s,
        reselect_s=specs.first_reselect_s, minimum_write_seek_s=specs.minimum_seek_delay_s,
        write_disconnect_s=specs.write_disconnect_s, stop_read_ahead_in_sector=specs.stop_prefetch_in_sector,
        other_reselect_s=specs.other_reselect_s, extra_write_disconnect=specs.extra_write_disconnect,
        extra_disconnect_command_s=specs.extradisc_command_s, extra_disconnect_s=specs.extradisc_disconnect_s,
        extra_inter_disconnect_s=specs.extradisc_inter_disconnect_s,
        extra_second_disconnect_s=specs.extradisc_second_disconnect_s,
        extra_disconnect_seek_delta_s=specs.extradisc_seek_delta_s,
        hold_bus_read=specs.hold_bus_read, hold_bus_write=specs.hold_bus_write,
        write_watermark_fraction=specs.block.number("Low (write) water mark", 0.0),
        read_disconnect_s=(specs.read_disconnect_after_read_s, specs.read_disconnect_after_write_s),
        almost_read_hits=bool(specs.block.number("Allow almost read hits", 0.0)),
        never_disconnect=bool(specs.block.number("Never disconnect", 0.0)),
        min_read_ahead_blocks=min_read_ahead,
        preseeking_level=int(specs.block.number("Preseeking level", 0.0)),
        watermark_by_request_size=bool(specs.block.number("Set watermark by reqsize", 1.0)),
        immediate_partial_hit_transfer=bool(specs.block.number("Immed transfer partial hit", 1.0)),
        write_hit_stops_read_ahead=bool(specs.block.number("Write hit stop prefetch", 1.0)),
        sneaky_full_read_hits=bool(specs.block.number("Allow sneaky full read hits", 0.0)),
        sneaky_partial_read_hits=bool(specs.block.number("Allow sneaky partial read hits", 0.0)),
        write_prebuffering=bool(specs.block.number("Allow write prebuffering", 0.0)),
        write_segments=specs.max_write_segments,
        immediate_read=bool(specs.block.number("Immediate buffer read", 0.0)),
        immediate_access_under_head=disksim_code and not disksim_access_block_bug,
        combine_seq_writes=specs.combine_seq_writes,
        queue_scheduling_policy=_queue_policy(specs.block),
        immediate_write=bool(specs.block.number("Immediate buffer write", 0.0)),
        per_request_overhead_s=specs.per_request_overhead_s,
        read_direct_to_buffer=bool(specs.block.number("Read directly to buffer", 1.0)),
        bus_read_block_s=read_block_s,
        bus_write_block_s=write_block_s, **buffer,
        write_seek_by_distance_s=write_seek, constant_access_s=constant_access,
        bus_arbitration_s=arbitration, controller_delay_s=controller_delay)


def simulate_trace(params: DriveParameters, trace: Trace) -> SimulationResult:
    """Simulate a DiskSim trace's requests in order, with its inter-arrival gaps.

    A request reaching beyond the drive's last block raises ValueError naming
    the trace file and line.
    """
    # lbn > total - blocks, not lbn + blocks > total: the sum overflows int64 for an LBN near 2**63
    beyond = np.flatnonzero(trace.lbn > params.layout.total_blocks - trace.blocks)
    if beyond.size:
        i = int(beyond[0])
        raise ValueError(f"{trace.where(i)}: LBN {int(trace.lbn[i])} + {int(trace.blocks[i])} blocks reaches "
                         f"beyond the drive {params.name!r} ({params.layout.total_blocks} blocks; DiskSim 4.0 stops on it too: "
                         "disk_request_arrive)")
    return simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)


def validate_trace(params: DriveParameters, trace: Trace, reference_demerit_s: float | None = None
                   ) -> TraceValidation:
    """Simulate *trace* on *params* and compare with its measured times (a
    :class:`TraceValidation`, with *reference_demerit_s* as the reference)."""
    result = simulate_trace(params, trace)
    details = {"is_write": trace.is_write, "label": trace.label, "lbn": trace.lbn, "blocks": trace.blocks,
               "hit": result.hit, "seek_ms": result.seek_s * 1e3, "latency_ms": result.latency_s * 1e3,
               "media_ms": result.media_s * 1e3, "arrival_s": result.arrival_s}
    return TraceValidation(params.name, trace.service_s, result.service_s, details, reference_demerit_s)


def validate_drive(drive_or_folder, *, limit: int | None = None, disksim_code: bool = True,
                   trace: Trace | None = None, disksim_access_block_bug: bool = True) -> TraceValidation:
    """Simulate a drive folder's trace and compare with the measured times.

    Returns a :class:`TraceValidation` (with DiskSim's published demerit as
    the reference where known); *limit* keeps the trace's first requests;
    *disksim_code*, *disksim_access_block_bug*: as in :func:`drive_parameters`; *trace*: the folder's
    trace already read (``drive.read_trace()``), else it is read here.
    """
    drive = drive_or_folder if isinstance(drive_or_folder, DiskSimFolder) else read_drive_folder(drive_or_folder)
    if trace is None:
        trace = drive.read_trace()
    elif not isinstance(trace, Trace):
        raise ValueError(f"trace must be a Trace (got {show(trace)})")
    if limit is not None:
        trace = trace.head(limit)
    reference = DISKSIM_PUBLISHED_DEMERIT_MS.get(drive.name)
    return validate_trace(drive_parameters(drive, disksim_code=disksim_code,
                                           disksim_access_block_bug=disksim_access_block_bug), trace,
                          reference * MS if reference is not None else None)
