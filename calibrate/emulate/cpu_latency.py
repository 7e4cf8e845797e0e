"""The CPU latency request of PM QoS held for a run: :func:`cpu_latency_held` (the request, its record and
its release: :mod:`~diskmodel.calibrate.harness.pmqos`)."""
from __future__ import annotations

import contextlib
import os
import struct

from diskmodel.calibrate.harness.pmqos import DEVICE, current_limit_us, start_ticks

__all__ = ["cpu_latency_held"]


@contextlib.contextmanager
def cpu_latency_held(value_us: int | None, *, device: str = DEVICE):
    """Inside, a CPU latency request of *value_us* [us] is held (:mod:`~diskmodel.calibrate.harness.pmqos`); outside, released.
    None: nothing is asked. Yields the limit in force before (None where it could not be read). The request
    is recorded in the current run (:func:`~diskmodel.calibrate.harness.runstate.ensure_run`) before it is
    made, and released on an exception or a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT are turned into an
    interruption inside: :class:`~diskmodel.calibrate.harness.interrupts.handle_signals`). OSError where the
    device cannot be opened for writing (it needs root)."""
    if value_us is None:
        yield None
        return
    if isinstance(value_us, bool) or not isinstance(value_us, int) or not 0 <= value_us < 2 ** 31:
        raise ValueError(f"cpu latency must be a whole number of microseconds >= 0 (got {value_us!r})")
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.interrupts import handle_signals, held

    before = current_limit_us(device)
    with handle_signals(), runstate.ensure_run() as run:
        with held():
            res = run.intend("pmqos", pid=os.getpid(), start_ticks=start_ticks(os.getpid()), fd=-1,
                             device=device, value_us=value_us, limit_before_us=before)
            try:
                fd = os.open(device, os.O_WRONLY | os.O_CLOEXEC)
            except OSError:
                run.absent(res)
                raise
            res.details["fd"] = fd
            try:
                os.write(fd, struct.pack("i", value_us))
            finally:
                run.created(res)   # the descriptor is open: recorded with its number, undone by closing it
        try:
            yield before
        finally:
            with held():
                run.undo([res])
