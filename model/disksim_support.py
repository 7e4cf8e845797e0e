"""Which of DiskSim 4.0's drive parameters the per-request simulation honours.

Every key of a ``disksim_disk`` block, and the layout features of a model
file, is in one of three groups:

* honoured: :func:`diskmodel.model.disksim.drive_parameters` gives it to the
  simulation (:class:`~diskmodel.model.drive_parameters.DriveParameters`);
* irrelevant one request at a time: the traces are replayed at queue depth 1
  (a request arrives after the previous one completed), so the scheduler,
  the queue and the hits on requests still queued never act;
* honoured only at some values: another value is an error;
* approximated (:data:`APPROXIMATED`): the traced drives' controllers
  disconnect and reconnect in ways the simulation folds into the overheads
  it takes; listed, with how, rather than passed off as honoured.

A key in no group, or a value the simulation does not implement, raises
:class:`~diskmodel.data.disksim.syntax.DiskSimFormatError` naming the file,
the line and the parameter, never a silent default.
"""
from __future__ import annotations

from diskmodel.data.disksim.model_file import G1Layout, G4Layout, ModelFile
from diskmodel.data.disksim.syntax import Block, DiskSimFormatError, _normalise_key

__all__ = ["check_honoured"]

HONOURED = (
    "Model", "Per-request overhead time", "Time scale for overheads", "Bulk sector transfer time",
    "Read hit over. after read", "Read hit over. after write", "Read miss over. after read",
    "Read miss over. after write", "Write hit over. after read", "Write hit over. after write",
    "Write miss over. after read", "Write miss over. after write", "Read completion overhead",
    "Write completion overhead", "Data preparation overhead", "First reselect overhead", "Write disconnect overhead",
    "Minimum seek delay", "Number of buffer segments", "Segment size (in blks)", "Use separate write segment",
    "High (read) water mark", "Buffer continuous read", "Maximum read-ahead (blks)", "Read-ahead over requested",
    "Read-ahead on idle hit", "Read any free blocks", "Fast write level", "Allow read hits on write data",
    "Stop prefetch in sector", "Other reselect overhead", "Extra write disconnect", "Extradisc command overhead",
    "Extradisc disconnect overhead", "Extradisc inter-disconnect delay", "Extradisc 2nd disconnect overhead",
    "Extradisc seek delta",
)

#: Keys that cannot act when requests come one at a time (why, for the docs).
IRRELEVANT_ONE_AT_A_TIME = {
    "Scheduler": "orders the queue, which never holds more than one request",
    "Max queue length": "the queue never holds more than one request",
    "Avg sectors per cylinder": "the scheduler's cylinder estimate",
    "Print stats": "output only",
    "Allow sneaky full read hits": "hits on data of requests still queued",
    "Allow sneaky partial read hits": "hits on data of requests still queued",
    "Allow sneaky intermediate read hits": "hits on data of requests still queued",
    "Maximum number of write segments": "write segments for several queued writes",
    "Combine seq writes": "combines queued sequential writes",
    "Set watermark by reqsize": "watermarks are fractions of the request here, as this flag says",
    "Write hit stop prefetch": "a write stops the read-ahead here, as this flag says",
    "Calc sector by sector": "the simulation works sector by sector, as this flag says",
    "Read directly to buffer": "reads go through the buffer here, as this flag says",
    "Immed transfer partial hit": "partial hits transfer the buffered part at once here, as this flag says",
}

#: Keys honoured at these values only (the simulation implements no other).
ONLY_VALUES = {
    "Allow almost read hits": (0,),
    "Allow write prebuffering": (0,),
    "Preseeking level": (0,),
    "Never disconnect": (0,),
    "Disconnect write if seek": (0,),
    "Minimum read-ahead (blks)": (0,),
    "Set watermark by reqsize": (1,),
    "Write hit stop prefetch": (1,),
    "Calc sector by sector": (1,),
    "Read directly to buffer": (1,),
    "Immed transfer partial hit": (1,),
}

#: Keys whose effect the simulation does not model as DiskSim does, but
#: approximates by the overheads it takes (listed so that they are not
#: mistaken for honoured; the traced drives use them, see the module docstring
#: of :mod:`diskmodel.model.simulate` for the gaps this leaves).
APPROXIMATED = {
    "Enable caching in buffer": "1 and 2 alike: the buffer caches",
    "Hold bus entire read xfer": "the bus is taken for the transfer only; reselect overhead on every miss",
    "Hold bus entire write xfer": "as for reads",
    "Immediate buffer read": "buffered reads start their transfer at once either way",
    "Immediate buffer write": "as for reads",
    "Low (write) water mark": "writes take all their data at once (it acts only for requests larger than "
                              "the segment)",
    "Read disconnect afterread": "folded into the command overheads",
    "Read disconnect afterwrite": "folded into the command overheads",
}

_KNOWN = ({_normalise_key(k) for k in HONOURED} | {_normalise_key(k) for k in IRRELEVANT_ONE_AT_A_TIME}
          | {_normalise_key(k) for k in ONLY_VALUES} | {_normalise_key(k) for k in APPROXIMATED})


def check_honoured(specs_block: Block, model: ModelFile) -> None:
    """Raise DiskSimFormatError (file, line, parameter) for what the simulation does not honour."""
    for key in specs_block.entries:
        name = specs_block.original_keys.get(key, key)
        if key not in _KNOWN:
            raise DiskSimFormatError(specs_block.path, specs_block.line_of(name),
                                     f"parameter {name!r} is not honoured by the per-request simulation")
    for name, allowed in ONLY_VALUES.items():
        if name not in specs_block:
            continue
        value = specs_block.get(name)
        if value not in allowed:
            raise DiskSimFormatError(specs_block.path, specs_block.line_of(name),
                                     f"{name} = {value!r} is not honoured by the per-request simulation "
                                     f"(it implements {', '.join(repr(v) for v in allowed)})")
    # Every layout DiskSim defines is honoured: g1 (every sparing scheme, slips, defects
    # remapped in place or elsewhere) and g4 (tables, slips, remaps), see
    # diskmodel.model.disksim_mapping and diskmodel.model.disksim_g4.
    if not isinstance(model.layout, (G1Layout, G4Layout)):
        raise DiskSimFormatError(model.path, model.layout_line,
                                 f"Layout Model {type(model.layout).__name__} is not honoured by the per-request "
                                 "simulation (it implements dm_layout_g1 and dm_layout_g4)")
