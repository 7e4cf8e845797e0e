"""blkparse's text output read into request streams, one per device.

blkparse's default output line (blkparse(1), "DEFAULT OUTPUT"; the format ``%D %2c %8s %5T.%9t %5p %2a %3d``
then the action's own fields) is::

    7,0    1        5     0.000057668 15304  D  WS 0 + 128 [dd]

device (major,minor), CPU, sequence number, seconds.nanoseconds since the trace started, pid, action,
RWBS and, for an issue (``D``) or a completion (``C``) with data, ``sector + sectors``; the bracket
holds the command (issue) or the error (completion). Only ``D`` (the request handed to the driver)
and ``C`` (its completion) are kept: they are what the device sees. A bio-based device (md,
device-mapper) has no request queue and so no ``D``: what it receives is its queued bios, ``Q``
(blk_add_trace_bio_queue), which stand in for the issues of a device that has no ``D`` in the
trace. The other actions (merge, split, remap, plug, ...) are recognised and skipped; the per-CPU summary blkparse prints
after the events (from a line ``CPU0 (7,0):``, ``Total (...)``, or, for a trace with no event,
``Throughput (R/W):``) is skipped too.

RWBS (blkparse's fill_rwbs, blktrace 1.3): a leading ``F`` is a preflush, then the operation ``R``,
``W``, ``D`` (discard, ``DE`` secure erase) or ``N`` (none: an empty flush), then ``F`` (FUA), ``A``
(read-ahead), ``S`` (sync), ``M`` (metadata). An ``FN`` request, or a write of no data with a
preflush, is a flush (:attr:`~diskmodel.model.iopath.Op.FLUSH`).

Each issue is paired with the first later completion of the same device, operation, sector and
size (FIFO), which gives its ``complete_s`` (NaN when the trace ended before it completed).

A line that does not parse raises ValueError naming the file and the line number.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np

from diskmodel.model.iopath import Flag, Op, Stream

__all__ = ["SECTOR_BYTES", "DeviceTrace", "BlockTrace", "parse_blkparse_text", "read_blkparse", "rwbs_to"]

#: blktrace counts in 512-byte sectors whatever the device's block size (blk_add_trace_rq: ``sector``).
SECTOR_BYTES = 512
_LINE = re.compile(r"^\s*(\d+),(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\.(\d+)\s+(\d+)\s+(\S+)\s+(\S+)(?:\s+(.*))?$")
#: Every action blkparse prints (blkparse(1), "TRACE ACTIONS"; ``m`` is a message line).
_ACTIONS = set("QGIDCMFPUTSXABRm") | {"UT"}
_SUMMARY = re.compile(r"^\s*(CPU\d+|Total)\s*\(|^Throughput \(R/W\):|^Events \(")
_RANGE = re.compile(r"^(\d+)\s*\+\s*(\d+)")
_RWBS = re.compile(r"^(F?)([RWDN])(E?)(F?)(A?)(S?)(M?)$")


@dataclass(frozen=True)
class DeviceTrace:
    """One device's issued requests (``stream``, in issue order) and when each completed."""

    name: str
    stream: Stream
    complete_s: np.ndarray


@dataclass
class BlockTrace:
    """The traced devices, by name (``"7,0"`` for a device known only by its numbers)."""

    devices: dict[str, DeviceTrace] = field(default_factory=dict)

    def totals(self) -> dict[str, dict[str, int]]:
        return {name: dev.stream.totals() for name, dev in self.devices.items()}

    def streams(self) -> dict[str, Stream]:
        return {name: dev.stream for name, dev in self.devices.items()}


def rwbs_to(rwbs: str, size_bytes: int) -> tuple[int, int]:
    """(:class:`Op`, :class:`Flag` bits) of one RWBS field; ValueError when it is not one."""
    m = _RWBS.match(rwbs)
    if m is None:
        raise ValueError(f"RWBS {rwbs!r} is not blkparse's [F]R|W|D|N[F][A][S][M]")
    pre, op_c, _secure, fua, _ra, sync, meta = m.groups()
    flags = (Flag.PREFLUSH if pre else 0) | (Flag.FUA if fua else 0) | (Flag.SYNC if sync else 0) | (Flag.META if meta else 0)
    if op_c == "N" or (size_bytes == 0 and op_c == "W" and pre):
        if not pre:
            raise ValueError(f"RWBS {rwbs!r} with no data is neither a flush nor a read or write")
        return int(Op.FLUSH), int(flags) & ~int(Flag.PREFLUSH)
    return {"R": int(Op.READ), "W": int(Op.WRITE), "D": int(Op.DISCARD)}[op_c], int(flags)


def _range(rest: str | None) -> tuple[int, int] | None:
    if not rest:
        return None
    m = _RANGE.match(rest)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_blkparse_text(lines, source: str = "<text>", names: dict[str, str] | None = None) -> BlockTrace:
    """The issues and completions of blkparse's default output ``lines`` (an iterable of str).

    *names* maps ``"major,minor"`` to a device name (default: the numbers themselves).
    """
    names = names or {}
    issues: dict[str, list] = defaultdict(list)
    queued: dict[str, list] = defaultdict(list)
    completes: dict[str, list] = defaultdict(list)
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if _SUMMARY.match(line):
            break
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"{source} line {no}: not a blkparse event line: {line.strip()[:80]!r}")
        maj, mnr, _cpu, _seq, sec, frac, _pid, action, rwbs, rest = m.groups()
        if action not in _ACTIONS:
            raise ValueError(f"{source} line {no}: action {action!r} is not one of blkparse's")
        if action not in ("D", "C", "Q"):
            continue
        t = int(sec) + int(frac.ljust(9, "0")[:9]) * 1e-9
        rng = _range(rest)
        sector, sectors = rng if rng else (0, 0)
        try:
            op, flags = rwbs_to(rwbs, sectors * SECTOR_BYTES)
        except ValueError as exc:
            raise ValueError(f"{source} line {no}: {exc}") from None
        if op != Op.FLUSH and sectors == 0:
            if action == "C":
                continue  # the completion of a flush sequence's data part, reported with no range
            raise ValueError(f"{source} line {no}: a {Op(op).name.lower()} {'issue' if action == 'D' else 'bio'} "
                             "with no 'sector + sectors' range")
        dev = f"{maj},{mnr}"
        if op == Op.FLUSH:
            sector = sectors = 0
        row = (t, op, sector * SECTOR_BYTES, sectors * SECTOR_BYTES, flags)
        {"D": issues, "Q": queued, "C": completes}[action][dev].append(row)
    trace = BlockTrace()
    for dev in sorted(set(issues) | set(queued) | set(completes)):
        rows = issues.get(dev) or queued.get(dev, [])
        stream = Stream.from_records(rows) if rows else Stream.empty()
        trace.devices[names.get(dev, dev)] = DeviceTrace(names.get(dev, dev), stream, _pair(rows, completes.get(dev, [])))
    return trace


def _pair(issues: list, completes: list) -> np.ndarray:
    """Completion time of each issue: the first unused completion after it with the same op and range."""
    waiting: dict[tuple, deque] = defaultdict(deque)
    done = np.full(len(issues), np.nan)
    events = sorted([(r[0], 0, i) for i, r in enumerate(issues)] + [(r[0], 1, i) for i, r in enumerate(completes)])
    for t, kind, i in events:
        row = issues[i] if kind == 0 else completes[i]
        key = (row[1], row[2], row[3])
        if kind == 0:
            waiting[key].append(i)
        elif waiting[key]:
            done[waiting[key].popleft()] = t
    return done


def read_blkparse(path: str | os.PathLike, names: dict[str, str] | None = None) -> BlockTrace:
    """:func:`parse_blkparse_text` of the file *path* (errors name the file and the line)."""
    try:
        with open(path, encoding="utf-8", errors="strict") as fh:
            return parse_blkparse_text(fh, str(path), names)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not text (byte {exc.start}): not blkparse's output") from None
