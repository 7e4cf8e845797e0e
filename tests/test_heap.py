"""The interpreter's cyclic collector kept out of timed requests (diskmodel.calibrate.harness.heap)."""
from __future__ import annotations

import gc

import pytest

from diskmodel.calibrate.harness.heap import CollectorWatch, collector_paused, settle_heap


@pytest.fixture
def unfrozen():
    yield
    gc.unfreeze()


def test_collector_paused_turns_it_off_inside_and_restores_it_also_on_an_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with collector_paused():
            assert not gc.isenabled()
            raise RuntimeError("inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # left off as it was found
    finally:
        gc.enable()


def test_no_collection_runs_while_paused_even_at_a_threshold_of_one():
    threshold = gc.get_threshold()
    watch = CollectorWatch()
    try:
        gc.set_threshold(1)
        with collector_paused():
            before = list(watch.collections)  # entering may itself have collected, at this threshold
            junk = [[i] for i in range(2000)]
            assert watch.collections == before
        more = [[i] for i in range(2000)]  # the same allocations with it on: collections run
        assert watch.collections[0] > before[0] + 100
    finally:
        gc.set_threshold(*threshold)
        watch.close()
    assert len(junk) == len(more) == 2000


def test_settle_heap_leaves_a_full_collection_nothing_of_the_set_up_to_examine(unfrozen):
    import numpy  # noqa: F401  (a heap of the emulator's size: numpy, pandas, the simulation's modules)
    import pandas  # noqa: F401

    tracked = len(gc.get_objects())
    assert tracked > 20_000
    frozen = settle_heap()
    assert frozen > 20_000
    assert len(gc.get_objects()) < tracked / 20
    watch = CollectorWatch()
    try:
        gc.collect()
        assert watch.collections == [0, 0, 1]
        # the full collection unfroze nothing; a frozen object whose last reference goes is freed all the same
        # (refcounting), as 2 of 957,970 were once under pytest-xdist, so the count may fall by a few
        assert frozen - 100 <= watch.summary()["frozen_objects"] <= frozen
        assert 0 < watch.longest_s and watch.longest_generation == 2
    finally:
        watch.close()
    assert watch._callback not in gc.callbacks
