"""A recorded block trace replayed through another stack: its block layers (model/iopath), then its
drives (model/simulate_session's DriveSession).

The trace's requests, as one device saw them, are issued at their recorded times to the stack's
volume (the device the file system of the stack would be made on). Each node of the volume's tree is
a layer of :mod:`diskmodel.model.iopath`:

- ``partition``: :func:`~diskmodel.model.iopath.partition` (start and length);
- ``lvm_linear``: :func:`~diskmodel.model.iopath.dm_linear` over its segment table, each piece on its PV;
- ``lvm_striped``: :func:`~diskmodel.model.iopath.dm_striped` over its PVs, at ``pe_start_bytes``;
- ``raid0``/``raid1``/``raid10``/``raid5``/``raid6``: md's layers with the array's chunk;

down to the partitions, whose streams land on the stack's disks. Other node kinds (thin, loop file,
NBD, NFS) are refused naming the node: their mapping needs state the stack file does not hold (the
thin pool's mapping, the loop image's extents).

Each disk then serves its requests one at a time in arrival order (queue depth 1 at the drive,
:class:`~diskmodel.model.simulator.session.DriveSession`), reads and writes alike; flushes and
discards reach the totals but take no drive time here. The elapsed time is from the first arrival to
the last completion over all disks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diskmodel.model import iopath
from diskmodel.model.iopath import Op, Stream

__all__ = ["ReplayResult", "volume_streams", "replay"]

_SECTOR = 512


@dataclass(frozen=True)
class ReplayResult:
    """Per disk: the stream it received and its totals; the elapsed time [s]."""

    streams: dict
    elapsed_s: float
    busy_s: dict

    def totals(self) -> dict:
        return {name: {**s.totals(), "busy_s": self.busy_s.get(name, 0.0)} for name, s in self.streams.items()}


def _kind(node) -> str:
    from diskmodel.model.stacks.nodes import kind_of

    return kind_of(node)


def _check_fits(path: str, node, stream: Stream) -> None:
    size = int(node.size_bytes)
    ranged = stream.op != Op.FLUSH
    past = np.flatnonzero(ranged & (stream.end_bytes > size))
    if past.size:
        i = int(past[0])
        raise ValueError(f"{path} ({_kind(node)}): request {i} ends at byte {int(stream.end_bytes[i])}, past its "
                         f"size_bytes {size}")


def _pv_children(node) -> list:
    return list(node.physical_volumes)


def _linear_segments(node):
    return [(ls, ln, f"pv{i}", at) for ls, ln, i, at in node.pv_segments()]


def _one_layer(path: str, node, stream: Stream) -> list[tuple[str, object, Stream]]:
    """(child path, child node, child stream) of one node."""
    kind = _kind(node)
    if kind == "lvm_linear":
        out = iopath.dm_linear(stream, _linear_segments(node))
        return [(f"{path}.physical_volumes[{k}]", pv, out.get(f"pv{k}", Stream.empty()))
                for k, pv in enumerate(node.physical_volumes)]
    if kind == "lvm_striped":
        names = [f"pv{k}" for k in range(len(node.physical_volumes))]
        out = iopath.dm_striped(stream, names, node.stripe_size_bytes, node.pe_start_bytes)
        return [(f"{path}.physical_volumes[{k}]", pv, out[f"pv{k}"]) for k, pv in enumerate(node.physical_volumes)]
    if kind in ("raid0", "raid1", "raid10", "raid5", "raid6"):
        names = [f"m{k}" for k in range(len(node.members))]
        chunk = int(node.chunk_size_bytes)
        layer = {"raid0": lambda: iopath.md_raid0(stream, names, chunk),
                 "raid1": lambda: iopath.md_raid1(stream, names),
                 "raid10": lambda: iopath.md_raid10(stream, names, chunk),
                 "raid5": lambda: iopath.md_raid5(stream, names, chunk),
                 "raid6": lambda: iopath.md_raid6(stream, names, chunk)}[kind]
        out = layer()
        return [(f"{path}.members[{k}]", m, out[f"m{k}"]) for k, m in enumerate(node.members)]
    raise ValueError(f"{path} ({kind}): replaying a trace through a {kind} node is not modelled (its mapping "
                     "needs state the stack does not hold); partition, lvm_linear, lvm_striped and md RAID are")


def volume_streams(volume, stream: Stream, path: str = "file_system.volume") -> dict[str, Stream]:
    """The stream each disk receives when *stream* is issued to *volume* (a stack's volume node)."""
    _check_fits(path, volume, stream)
    if _kind(volume) == "partition":
        return {volume.disk: iopath.partition(stream, volume.start_bytes, volume.size_bytes)}
    per_disk: dict[str, list[Stream]] = {}
    for child_path, child, child_stream in _one_layer(path, volume, stream):
        for disk, s in volume_streams(child, child_stream, child_path).items():
            per_disk.setdefault(disk, []).append(s)
    out = {}
    for disk, parts in per_disk.items():
        s = iopath.concat(parts)
        out[disk] = s.take(np.argsort(s.time_s, kind="stable"))
    return out


def _serve(params, stream: Stream) -> tuple[float, float, float]:
    """(first arrival, last completion, busy time) of a disk serving *stream*'s reads and writes."""
    from diskmodel.model.simulator.session import DriveSession

    rw = (stream.op == Op.READ) | (stream.op == Op.WRITE)
    if not rw.any():
        return np.inf, -np.inf, 0.0
    s = stream.take(rw)
    blocks = -(-s.size_bytes // _SECTOR)
    session = DriveSession(params, max_blocks=max(int(blocks.max()), 1))
    served = session.serve_many(s.op == Op.WRITE, s.offset_bytes // _SECTOR, blocks, s.time_s)
    return float(s.time_s[0]), float(served.completion_s.max()), float(served.service_s.sum())


def replay(trace_stream: Stream, stack) -> ReplayResult:
    """*trace_stream* (one device's recorded requests) replayed through *stack* (drives resolved)."""
    from diskmodel.model.drive.parameters import DriveParameters

    order = np.argsort(trace_stream.time_s, kind="stable")
    stream = trace_stream.take(order)
    streams = volume_streams(stack.volume, stream)
    first, last, busy = np.inf, -np.inf, {}
    for disk, s in streams.items():
        params = DriveParameters.from_disk(stack.drive(disk).model_disk())
        a, c, b = _serve(params, s)
        first, last = min(first, a), max(last, c)
        busy[disk] = b
    elapsed = float(last - first) if np.isfinite(first) else 0.0
    return ReplayResult(streams, elapsed, busy)
