"""The loop-image study's file copy as file operations (:class:`~.fileops.FileOps`): a file written by ``dd`` and
flushed, then read back from the device.

The measurement (``diskmodel.calibrate.bench.copy``) times two steps per file size, each after the
page cache was dropped:

- ``write``: ``dd if=/dev/zero of=FILE bs=1M count=N conv=fsync``: a new file (the previous copy was
  removed and synced), written in 1 MiB ``write`` calls, then ``fsync`` (GNU dd's ``conv=fsync``:
  one fsync(2) before close), which returns once the data and, on a journalled file system, the
  commit of the file's metadata are on the device;
- ``read``: ``dd if=FILE of=/dev/null bs=1M``: the same file, on the device and not cached, read in
  1 MiB calls (the page cache's read-ahead decides the requests).

Neither step ends with a ``sync``: the timed span ends when ``dd`` returns. Each step starts after
``sync`` and ``drop_caches`` on the mounted file system (``FileOps.caches_dropped``). :func:`dd_copy` builds
one step; :func:`dd_pairs` reads ``dd:size=4M,step=write|read`` (the workload string of
:func:`~.workload_spec.parse_workload`).
"""

from __future__ import annotations

import dataclasses

from .fileops import CALL_S, COPY_BYTES_PER_S, FILE_OP_S, FileOps, Kind, _Builder, _whole

__all__ = ["dd_copy", "dd_pairs", "describe_dd", "DD_BLOCK_BYTES", "STEPS"]

#: dd's ``bs=1M``: the size of each read and write call.
DD_BLOCK_BYTES = 1 << 20
#: The steps of one copy.
STEPS = ("write", "read")


def dd_copy(size: int, step: str, *, block_bytes: int = DD_BLOCK_BYTES, call_s: float = CALL_S,
            copy_bytes_per_s: float = COPY_BYTES_PER_S, file_op_s: float = FILE_OP_S) -> FileOps:
    """One step of the copy of a ``size``-byte file (see the module docstring): ``write`` (a new
    file written in ``block_bytes`` calls, then fsync) or ``read`` (the file, on the device and
    not cached, read in ``block_bytes`` calls)."""
    if step not in STEPS:
        raise ValueError(f"workload dd: step = {step!r} must be write or read")
    size = _whole("size", size, 1)
    block_bytes = _whole("bs", block_bytes, 1)
    b = _Builder(call_s, copy_bytes_per_s, file_op_s)
    kind = Kind.WRITE if step == "write" else Kind.READ
    if step == "write":
        b.add(Kind.CREATE, 0, op_s=file_op_s)
    for off in range(0, size, block_bytes):
        b.add(kind, 0, off, min(block_bytes, size - off), block_bytes)
    if step == "write":
        b.add(Kind.FSYNC, 0)
    ops = b.build([0], [0 if step == "write" else size], sync_at_end=False)
    return dataclasses.replace(ops, caches_dropped=True)


def describe_dd(size: int, step: str) -> str:
    """One line: what the step does."""
    if step == "write":
        return f"dd write: a new {size} B file from /dev/zero, bs=1M, conv=fsync (page cache dropped before)"
    return f"dd read: the {size} B file read back, bs=1M, from the device (page cache dropped before)"


def describe_pairs(pairs: dict, size_value) -> str:
    """The definition of ``dd:...`` in one line, from the spec's pairs."""
    return describe_dd(size_value("dd", "size", pairs.get("size", "4M")), pairs.get("step", "write"))


def dd_pairs(pairs: dict, size_value, *, sync_at_end: bool = True) -> FileOps:
    """``dd:size=B,step=write|read`` as FileOps (``sync_at_end`` is not used: the timed step ends
    when dd returns)."""
    unknown = sorted(set(pairs) - {"size", "step", "bs"})
    if unknown:
        raise ValueError(f"workload dd: key {unknown[0]!r} is not one of size, step, bs")
    return dd_copy(size_value("dd", "size", pairs.get("size", "4M")), pairs.get("step", "write"),
                   block_bytes=size_value("dd", "bs", pairs.get("bs", "1M")))
