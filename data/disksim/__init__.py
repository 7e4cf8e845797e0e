"""Readers of a DiskSim 4.0 drive folder: ``.parv``, ``.diskspecs``, traces.

DiskSim's validation drives (``valid/`` of DiskSim 4.0) each sit in a folder:

* :func:`read_parv`: the top-level file tying them (buses, controller,
  topology), and the ``.diskspecs`` it sources;
* :func:`read_diskspecs`: the ``disksim_disk`` block (controller overheads,
  the buffer cache, and the link to the ``.model`` file, read by
  :mod:`diskmodel.data.disksim.model_file`);
* :func:`read_trace`: DiskSim's ``validate`` traces;
* :func:`read_drive_folder`: all of a folder as a :class:`DiskSimFolder`.

Everything returned is plain data, times in seconds (``_s``) unless the name
says otherwise (DiskSim writes milliseconds, traces microseconds); every
error in a file raises :class:`~diskmodel.data.disksim.syntax.DiskSimFormatError`
naming the file and the line. Turning these files into model objects (a
:class:`~diskmodel.model.Disk`, the per-request simulation's parameters) and
validating a drive against its trace is :mod:`diskmodel.model.disksim_drives.convert`'s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..input_files import MAX_TRACE_FILE_BYTES, MAX_TRACE_LINE_BYTES, bounded_lines, quote
from .model_file import ModelFile, read_model_file
from .bundled import BUNDLED_DRIVES, TRACED_DRIVES, disksim_drive_folder
from .syntax import MS, Block, DiskSimFormatError, Source, Statement, parse_file, read_text

__all__ = ["DISKSIM_COMPUTED_DEMERIT_MS", "DISKSIM_PUBLISHED_DEMERIT_MS", "DiskSimFolder", "DiskSpecs", "Parv", "Trace", "read_diskspecs",
           "read_drive_folder", "read_parv", "read_trace", "BUNDLED_DRIVES", "TRACED_DRIVES",
           "disksim_drive_folder", "load_disksim_drive"]

#: Seconds per microsecond: the traces' unit.
US = 1e-6

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

#: The same demerits [ms] as DiskSim 4.0 itself computes them: its ``rms`` tool
#: on the distributions it prints for each validation run (``valid/runvalid``),
#: with 17 digits. Provenance: tests/golden/disksim_full/README.md (DiskSim 4.0
#: built from source; ``rms_full_precision.txt``). The published figures above
#: are ``runvalid``'s rounded "should be about" values: barracuda's 0.349 and
#: ibm18es's 0.135 are not what DiskSim prints (0.348 and 0.136 rounded).
#: The issue's targets are the published figures; these say how far DiskSim
#: itself lands from them. DiskSim 3.0, rebuilt, prints 0.135923 (ibm18es) and
#: 0.347581 (barracuda) under the same texts, so no released DiskSim gives
#: ibm18es's 0.135 (docs/benchmarks.md, 2026-11-24, "Where DiskSim's published
#: figures come from"); 3.0's text for atlas10k is 0.159, which 4.0's
#: g1_access_block slip moved to 0.268.
DISKSIM_COMPUTED_DEMERIT_MS = {
    "atlas_III": 0.37795234183101228,
    "barracuda": 0.3475702394015272,
    "cheetah4LP": 0.31797204993613565,
    "ibm18es": 0.1358839803866268,
    "atlas10k": 0.26772074068001844,
    "hp_c2247a": 0.089931497068033647,
    "hp_c2490a": 0.25376179116673026,
}


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
    {"read", "write"} and hit in {"hit", "miss"}. ``read_high_water_mark``
    is DiskSim's "High (read) water mark" as written: the fraction of a read
    miss buffered before the drive reconnects to the bus.
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
    read_high_water_mark: float
    stop_prefetch_in_sector: bool
    extra_write_disconnect: bool
    extradisc_command_s: float
    extradisc_disconnect_s: float
    extradisc_inter_disconnect_s: float
    extradisc_second_disconnect_s: float
    extradisc_seek_delta_s: float
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

    def fraction(key, default):
        # DiskSim's own range for a water mark (disk.modspec: RANGE(d,0.0,1.0))
        value = block.number(key, default)
        if not 0.0 <= value <= 1.0:
            raise DiskSimFormatError(block.path, block.line_of(key), f"{key!r} must lie in [0, 1] (got {value!r})")
        return value

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
        read_high_water_mark=fraction("High (read) water mark", 0.0),
        stop_prefetch_in_sector=flag("Stop prefetch in sector"),
        extra_write_disconnect=flag("Extra write disconnect"),
        extradisc_command_s=ms("Extradisc command overhead", 0.0),
        extradisc_disconnect_s=ms("Extradisc disconnect overhead", 0.0),
        extradisc_inter_disconnect_s=ms("Extradisc inter-disconnect delay", 0.0),
        extradisc_second_disconnect_s=ms("Extradisc 2nd disconnect overhead", 0.0),
        extradisc_seek_delta_s=ms("Extradisc seek delta", 0.0),
        block=block)
    if specs.buffer_segments < 1 or specs.segment_size_blocks < 1:
        raise DiskSimFormatError(block.path, block.line_of("Number of buffer segments"),
                                 "buffer segments and segment size must be >= 1 (DiskSim 4.0 stops on 0 segments "
                                 "itself, disk_postpass_perdisk; disk.modspec: segment size 1..the disk's blocks)")
    if specs.fast_write_level not in (0, 1, 2):
        raise DiskSimFormatError(block.path, block.line_of("Fast write level"),
                                 f"Fast write level must be 0, 1 or 2 (got {specs.fast_write_level})")
    if specs.enable_caching == 0:
        # DiskSim 4.0's disk_postpass_perdisk stops (ddbg_assert) on each of these without caching
        for key, value in (("Buffer continuous read", specs.buffer_continuous_read),
                           ("Read any free blocks", int(specs.read_any_free_blocks)),
                           ("Fast write level", specs.fast_write_level)):
            if value:
                raise DiskSimFormatError(block.path, block.line_of(key),
                                         f"{key} = {value} with Enable caching in buffer = 0, which DiskSim 4.0 "
                                         "refuses (disk_postpass_perdisk); set it to 0")
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
    arrival of row i+1 (the first request arrives at time 0); ``line``: the
    line of the file each request is written on (for error messages);
    ``ignored_lines``: comment lines (``#``) and a header line of column names
    the reader skipped, said so that nothing is skipped silently.
    """

    path: Path | None
    is_write: np.ndarray
    label: np.ndarray
    lbn: np.ndarray
    blocks: np.ndarray
    service_s: np.ndarray
    interarrival_s: np.ndarray
    line: np.ndarray
    ignored_lines: int = 0

    def __len__(self) -> int:
        return int(self.lbn.size)

    def head(self, n: int) -> "Trace":
        arrays = ("is_write", "label", "lbn", "blocks", "service_s", "interarrival_s", "line")
        return Trace(self.path, *(getattr(self, name)[:n] for name in arrays), ignored_lines=self.ignored_lines)

    def where(self, index: int) -> str:
        """``path:line`` of request *index* (for one-line errors)."""
        return f"{self.path}:{int(self.line[index])}"


_LABELS = ("Hit", "Miss", "Doub", "Trip")


def _is_header(fields: list[str]) -> bool:
    """A line of column names: words, none a number, the first not R or W."""
    if fields[0] in ("R", "W"):
        return False
    for field_ in fields:
        try:
            float(field_)
            return False
        except ValueError:
            pass
    return True


# The largest LBN or block count an int64 array holds.
_INT64_MAX = (1 << 63) - 1


def _trace_lines(path: Path):
    """The trace's numbered lines, read as a stream with the file and line caps of diskmodel.data.input_files."""
    try:
        yield from bounded_lines(path, "trace file", max_bytes=MAX_TRACE_FILE_BYTES,
                                 max_line_bytes=MAX_TRACE_LINE_BYTES)
    except FileNotFoundError:
        raise FileNotFoundError(f"trace file {path} does not exist") from None


def read_trace(path) -> Trace:
    """Read a DiskSim validate trace: ``R|W Hit|Miss|Doub|Trip LBN blocks service_us interarrival_us``.

    Blank lines, comment lines (starting with ``#``) and one header line of
    column names before the first request are skipped and counted
    (``Trace.ignored_lines``); any other line that does not parse, a negative
    LBN or a block count below 1 raises DiskSimFormatError naming the file and
    the line.
    """
    path = Path(path)
    is_write, label, lbn, blocks, service, inter, lines = [], [], [], [], [], [], []
    ignored = 0
    header = False
    for number, raw in _trace_lines(path):
        fields = raw.split()
        if not fields:
            continue
        if fields[0].startswith("#"):
            ignored += 1
            continue
        if not lbn and not header and _is_header(fields):
            header = True
            ignored += 1
            continue
        if len(fields) != 6:
            raise DiskSimFormatError(path, number, f"expected 6 fields 'R|W Hit|Miss|Doub|Trip LBN blocks "
                                     f"service_us interarrival_us' (found {len(fields)})")
        if fields[0] not in ("R", "W"):
            raise DiskSimFormatError(path, number, f"first field must be R or W (got {quote(fields[0])})")
        if fields[1] not in _LABELS:
            raise DiskSimFormatError(path, number, f"second field must be one of {', '.join(_LABELS)} (got {quote(fields[1])})")
        try:
            values = (int(fields[2]), int(fields[3]), float(fields[4]), float(fields[5]))
        except ValueError:
            raise DiskSimFormatError(path, number, f"LBN and blocks must be whole numbers and times numbers in {quote(raw.strip())}") from None
        if values[0] < 0:
            raise DiskSimFormatError(path, number, f"negative LBN {values[0]} in {quote(raw.strip())} (DiskSim 4.0 stops on it too: "
                                     "logorg_maprequest)")
        if values[1] < 1:
            raise DiskSimFormatError(path, number, f"block count {values[1]} must be >= 1 in {quote(raw.strip())} (DiskSim 4.0 stops "
                                     "on it too: disk_request_arrive)")
        if not all(math.isfinite(v) and v >= 0 for v in values[2:]):
            raise DiskSimFormatError(path, number, f"negative or non-finite time in {quote(raw.strip())}")
        if values[0] > _INT64_MAX or values[1] > _INT64_MAX:
            raise DiskSimFormatError(path, number, f"LBN or block count beyond 2**63 - 1 in {quote(raw.strip())}")
        is_write.append(fields[0] == "W")
        label.append(fields[1])
        lbn.append(values[0])
        blocks.append(values[1])
        service.append(values[2])
        inter.append(values[3])
        lines.append(number)
    if not lbn:
        raise DiskSimFormatError(path, 1, f"the trace holds no requests ({ignored} comment or header lines)")
    return Trace(path, np.array(is_write), np.array(label), np.array(lbn, dtype=np.int64),
                 np.array(blocks, dtype=np.int64), np.array(service) * US, np.array(inter) * US,
                 np.array(lines, dtype=np.int64), ignored)


# ---------------------------------------------------------------------------
# A drive folder
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DiskSimFolder:
    """The parsed files of one DiskSim drive folder.

    ``model`` (geometry, mechanics, layout) and ``specs`` (overheads, cache)
    always; ``parv`` (buses, controller) where the folder has a ``.parv``;
    ``trace_path``: the folder's validation trace, or None.
    """

    name: str
    folder: Path
    model: ModelFile
    specs: DiskSpecs
    parv: Parv | None
    trace_path: Path | None

    def read_trace(self) -> Trace:
        if self.trace_path is None:
            raise FileNotFoundError(f"{self.folder} holds no .trace file")
        return read_trace(self.trace_path)


def _one(folder: Path, pattern: str, what: str, required: bool = True) -> Path | None:
    found = sorted(folder.glob(pattern))
    if not found:
        if required:
            raise FileNotFoundError(f"{folder} holds no {what} ({pattern})")
        return None
    if len(found) > 1:
        raise ValueError(f"{folder} holds several {what} files: {', '.join(p.name for p in found)}")
    return found[0]


def read_drive_folder(folder) -> DiskSimFolder:
    """Read a DiskSim drive folder (a ``.parv``, its ``.diskspecs``, the ``.model``
    and seek files they name, and optionally one ``.trace``)."""
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
    return DiskSimFolder(folder.name, folder, model, specs, parv, trace_path)


def load_disksim_drive(name_or_folder) -> DiskSimFolder:
    """The files of a bundled drive (by name) or of a drive folder, read into a :class:`DiskSimFolder`.

    Plain records only, as everything in :mod:`diskmodel.data`: the :class:`~diskmodel.model.Disk` they
    describe is :func:`diskmodel.model.disksim_drives.convert.load_disksim_drive`'s.

    >>> load_disksim_drive("atlas10k").trace_path.name
    'atlas10k.trace'
    """
    return read_drive_folder(disksim_drive_folder(name_or_folder))
