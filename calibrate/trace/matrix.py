"""Cells of the I/O path's check: a stack, a workload, the streams the model predicts for each
device and the streams blktrace measured, and how far apart they are.

A workload here is an fio job with O_DIRECT (the page cache bypassed, so the block layers alone
decide what reaches each device). Its request stream at the top of the stack is what fio itself logs
(``--write_iolog``: one line per I/O with its offset and length, in submission order), so the
prediction is a function of (stack, workload) alone: :func:`predict` runs the stack's layers of
:mod:`diskmodel.model.iopath` on it. Workloads that go through the page cache plug in by giving
another top stream (the page-cache model's output) to the same :func:`predict`.

Scores per device (:func:`compare`): bytes (read plus written) and request counts as relative errors
of the prediction, and the total-variation distance between the power-of-two request-size
histograms (half the L1 distance of the two normalised histograms).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from diskmodel.model import iopath
from diskmodel.model.iopath import Op, Stream

__all__ = ["Workload", "WORKLOADS", "fio_argv", "read_fio_iolog", "Layer", "predict", "as_bios", "compare",
           "tv_distance"]


@dataclass(frozen=True)
class Workload:
    """An O_DIRECT fio job: ``rw`` (read, write, randread, randwrite), block size, queue depth, and
    how many bytes it moves."""

    name: str
    rw: str
    bs_bytes: int
    iodepth: int
    io_bytes: int


#: fio's sequential and random reads and writes at 4 KiB and 1 MiB, at queue depth 1 and 32.
WORKLOADS = tuple(
    Workload(f"{rw}_{'4k' if bs == 4096 else '1m'}_qd{qd}", rw, bs, qd, (1 << 20) if bs == 4096 else (8 << 20))
    for rw in ("randread", "randwrite", "read", "write") for bs in (4096, 1 << 20) for qd in (1, 32)
)


def fio_argv(w: Workload, target: str, size_bytes: int, iolog: str) -> list[str]:
    """fio's argument vector for *w* on *target* (a block device), over its first *size_bytes*."""
    return ["fio", f"--name={w.name}", f"--filename={target}", "--direct=1", f"--rw={w.rw}", f"--bs={w.bs_bytes}",
            f"--size={size_bytes}", f"--io_size={w.io_bytes}", f"--iodepth={w.iodepth}",
            "--ioengine=" + ("psync" if w.iodepth == 1 else "libaio"), "--randseed=7", "--norandommap",
            f"--write_iolog={iolog}", "--output=/dev/null", "--eta=never"]


def read_fio_iolog(text: str, source: str = "fio iolog") -> Stream:
    """The reads and writes of fio's version 3 iolog (``TIME FILE read|write OFFSET LENGTH``), in
    order; the file's add/open/close lines are skipped. Times are left at 0 apart from the order."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("fio version 3 iolog"):
        raise ValueError(f"{source} line 1: not a fio version 3 iolog")
    ops, offs, sizes = [], [], []
    for no, line in enumerate(lines[1:], 2):
        parts = line.split()
        if len(parts) == 5 and parts[2] in ("read", "write"):
            ops.append(Op.READ if parts[2] == "read" else Op.WRITE)
            offs.append(int(parts[3]))
            sizes.append(int(parts[4]))
        elif len(parts) != 3:
            raise ValueError(f"{source} line {no}: not an iolog line: {line[:80]!r}")
    n = len(ops)
    return Stream.from_arrays(time_s=np.arange(n) * 1e-6, op=np.array(ops, np.int8), offset_bytes=offs,
                              size_bytes=sizes)


@dataclass(frozen=True)
class Layer:
    """One block layer of a cell's stack: its ``kind`` and parameters, the traced device names below."""

    kind: str
    devices: tuple[str, ...]
    params: dict = field(default_factory=dict)


def predict(layer: Layer, top: Stream, iodepth: int = 1) -> dict[str, Stream]:
    """The stream each device below *layer* receives for the *top* stream."""
    p, names = layer.params, list(layer.devices)
    if layer.kind == "partition":
        return {names[0]: iopath.partition(top, p["start_bytes"], p["length_bytes"])}
    if layer.kind == "loop":
        return {names[0]: _loop_chain(top, p["images"])}
    if layer.kind == "raid0":
        return iopath.md_raid0(top, names, p["chunk_bytes"], p["data_offset_bytes"])
    if layer.kind == "raid1":
        return iopath.md_raid1(top, names, p["data_offset_bytes"], members_idle=iodepth == 1)
    if layer.kind == "raid5":
        return iopath.md_raid5(top, names, p["chunk_bytes"], p["data_offset_bytes"])
    if layer.kind == "raid6":
        return iopath.md_raid6(top, names, p["chunk_bytes"], p["data_offset_bytes"])
    if layer.kind in ("linear", "lvm2"):
        return iopath.dm_linear(top, p["segments"])
    if layer.kind == "striped":
        return iopath.dm_striped(top, names, p["chunk_bytes"])
    if layer.kind == "thin":
        res = iopath.dm_thin(top, p["chunk_bytes"], zero_new_blocks=True)
        return {names[0]: res.data, names[1]: res.metadata}
    raise ValueError(f"layer {layer.kind!r}: no prediction for it")


def as_bios(layer: Layer, top: Stream, streams: dict[str, Stream]) -> dict[str, Stream]:
    """*streams* as the bios a bio-based member (a dm device, traced by its Q events) receives:
    md RAID 5/6 does a write's I/O through its stripe cache, one bio per 4 KiB page per member
    (raid5.c, ops_run_io: a stripe_head's page per device), which model/iopath's md_parity
    coalesces into requests as the member's queue would merge them; reads that bypass the cache
    (chunk_aligned_read) stay whole. Other layers pass their bios as they are."""
    if layer.kind not in ("raid5", "raid6"):
        return streams
    from diskmodel.model.iopath.md_parity import STRIPE_SIZE

    out = {}
    for name, s in streams.items():
        of_write = (s.parent >= 0) & (top.op[np.maximum(s.parent, 0)] == Op.WRITE) & (s.op != Op.FLUSH)
        paged = iopath.split(s.take(of_write), max_sectors_kb=STRIPE_SIZE // 1024)
        paged = paged.replace(parent=s.parent[of_write][paged.parent])
        rest = s.take(~of_write)
        merged = iopath.concat([paged, rest])
        out[name] = merged.take(np.argsort(merged.parent, kind="stable"))
    return out


def _loop_chain(top: Stream, images) -> Stream:
    """Through loop devices nested in each other: ``images`` from the top, each (file_bytes, extents)."""
    s = top
    for file_bytes, extents in images:
        res = iopath.loop(s, file_bytes, extents)
        s = iopath.concat([res.device, res.file]) if len(res.file) else res.device
        s = s.take(np.argsort(s.parent, kind="stable"))
    return s


def tv_distance(a: Stream, b: Stream) -> float:
    """Total-variation distance of the two streams' request-size histograms (power-of-two bins)."""
    ha, hb = a.size_histogram(), b.size_histogram()
    na, nb = sum(ha.values()), sum(hb.values())
    if na == 0 and nb == 0:
        return 0.0
    if na == 0 or nb == 0:
        return 1.0
    keys = set(ha) | set(hb)
    return 0.5 * sum(abs(ha.get(k, 0) / na - hb.get(k, 0) / nb) for k in keys)


def _rel_error_pct(pred: int, meas: int) -> float:
    if meas == 0:
        return 0.0 if pred == 0 else 100.0
    return 100.0 * abs(pred - meas) / meas


def compare(pred: Stream, meas: Stream) -> dict:
    """One device's predicted against measured figures."""
    pb, mb = pred.read_bytes + pred.write_bytes, meas.read_bytes + meas.write_bytes
    pr, mr = pred.read_requests + pred.write_requests, meas.read_requests + meas.write_requests
    return {"predicted_bytes": pb, "measured_bytes": mb, "bytes_error_pct": _rel_error_pct(pb, mb),
            "predicted_requests": pr, "measured_requests": mr, "requests_error_pct": _rel_error_pct(pr, mr),
            "size_tv": tv_distance(pred, meas),
            "predicted": pred.totals(), "measured": meas.totals()}
