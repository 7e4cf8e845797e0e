"""A workload's pace taken from a measurement: its operations put on the clock of the same program run
where no device is involved (tmpfs), so that the application's own time between operations (process
start, system calls, copies, file operations, and the CPU it waited for on a busy machine) is the
machine's, not the generators' defaults (:mod:`.fileops`: ``call_s``, ``copy_bytes_per_s``, ``file_op_s``).

:func:`paced` scales the issue times of a :class:`~.fileops.FileOps` so that its last operation is
issued at ``app_s``: the relative spacing (which operations come together, which write-back timers
they see) stays the generator's, the total is the measured one. On tmpfs ``fsync`` and ``sync``
return at once and reads are page-cache hits, so the run measures the application alone.

A measured run holds the tool's start too (fork, exec, the dynamic loader, its setup) before its first
operation. The generators start at their first operation, so the scaling takes the generator's span
as :data:`PROCESS_START_S` before it: that share of the measured time comes before the first
operation, not between the operations (where it would hold back the read-ahead windows the next
calls issue; the emulated drives' logs in the VM, docs/benchmarks.md "The tool's start in its measured
pace").
"""

from __future__ import annotations

import dataclasses
import math

from .._checks import FieldError, show
from .fileops import FileOps

__all__ = ["paced", "PROCESS_START_S"]

#: How long a tool's process runs before its first operation on the generators' machine [s] (the one
#: their ``call_s`` and ``copy_bytes_per_s`` describe): ``dd if=/dev/zero of=/dev/null count=0``, the
#: median of 20 runs on this project's host (2026-12-05), fork to exit.
PROCESS_START_S = 0.7e-3


def paced(ops: FileOps, app_s: float) -> FileOps:
    """``ops`` with its issue times scaled so that its end (``FileOps.app_end_s``: the last call's return) is at
    ``app_s`` [s] (> 0), the tool's start
    (:data:`PROCESS_START_S` before the first operation on the generator's clock) scaled alike before
    the first; a workload whose operations are all at time 0 is shifted instead (each at ``app_s``:
    one instant)."""
    if not isinstance(ops, FileOps):
        raise FieldError("ops", f"must be a FileOps (got {type(ops).__name__})")
    if isinstance(app_s, bool) or not isinstance(app_s, (int, float)) or not math.isfinite(app_s) or app_s <= 0:
        raise FieldError("app_s", f"must be a finite number of seconds > 0 (got {show(app_s)})")
    end = ops.app_end_s
    if end <= 0:
        return dataclasses.replace(ops, time_s=ops.time_s + app_s, end_s=app_s)
    scale = app_s / (end + PROCESS_START_S)
    return dataclasses.replace(ops, time_s=(ops.time_s + PROCESS_START_S) * scale, end_s=app_s)
