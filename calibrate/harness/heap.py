"""The interpreter's cyclic garbage collector kept out of timed requests.

CPython's cyclic collector runs when enough container objects have been
allocated, in whichever thread allocates, and a full (generation 2)
collection examines every object the interpreter tracks. In the emulator's
process that is every module's objects (numpy, numba, the simulation), so a
full collection holds the interpreter's lock for tens of milliseconds: the
request being served, or the replay's next issue or completion stamp, waits
for it, and the trace replay's demerit (which compares the distributions down
to its last levels) takes such a stall as a slow request of the drive.

* :func:`settle_heap`: once the set-up is done, collect and freeze what is
  left (``gc.freeze``, Python 3.7+): the objects of the set-up move to the
  permanent generation, which no collection examines, so later collections
  examine only the objects made while serving.
* :func:`collector_paused`: a timed loop with the collector off (the objects it
  makes are freed by their reference counts; cycles wait until after it).
* :class:`CollectorWatch`: how many collections ran while serving, by
  generation, and the longest, for the run's log.
"""
from __future__ import annotations

import contextlib
import gc
import time

__all__ = ["CollectorWatch", "collector_paused", "settle_heap"]


def settle_heap() -> int:
    """Collect, then freeze every object left; returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@contextlib.contextmanager
def collector_paused():
    """The cyclic collector off inside, restored as it was after (also on an error)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class CollectorWatch:
    """Counts the collections that run while it is open, by generation, and times the longest [s];
    ``started_s``: when each began, on *monotonic*'s clock."""

    def __init__(self, monotonic=time.monotonic):
        self._clock = monotonic
        self._started = None
        self.started_s = []
        self.collections = [0, 0, 0]
        self.longest_s = 0.0
        self.longest_generation = None
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = self._clock()
            self.started_s.append(self._started)
            return
        if self._started is None:
            return
        took = self._clock() - self._started
        self._started = None
        generation = int(info.get("generation", 0))
        self.collections[generation] += 1
        if took > self.longest_s:
            self.longest_s, self.longest_generation = took, generation

    def summary(self) -> dict:
        """``collections`` by generation, ``longest_s`` and its ``longest_generation``, ``frozen_objects``."""
        return {"collections_by_generation": list(self.collections), "longest_s": self.longest_s,
                "longest_generation": self.longest_generation, "frozen_objects": gc.get_freeze_count()}

    def close(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
