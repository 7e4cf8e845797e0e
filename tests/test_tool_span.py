"""The span a measured tool workload reports (calibrate/bench/tool_workloads.py) is its timed
commands only, so that benchmarks/stacks_check.py cuts the emulated drive's request log by it:
the folder's removal after the workload (runstate's undo) is not in it. A span reckoned back
from the moment measure() returns (its end minus elapsed_s) is late by the teardown's time, and
misses the workload's closing sync on a short workload (a sparse image)."""
from __future__ import annotations

import time

import pytest

from diskmodel.calibrate.bench import tool_workloads
from diskmodel.calibrate.harness import runstate

pytestmark = pytest.mark.serial  # the reported span against the wall clock

TEARDOWN_S = 0.3


@pytest.mark.slow
def test_the_reported_span_is_the_timed_commands_not_the_teardown(monkeypatch, tmp_path):
    monkeypatch.setattr(tool_workloads, "drop_caches", lambda: None)  # no cache drop on a shared host
    undo = runstate.Run.undo

    def slow_undo(self, resources=None):
        time.sleep(TEARDOWN_S)
        return undo(self, resources)

    monkeypatch.setattr(runstate.Run, "undo", slow_undo)
    before = time.time()
    r = tool_workloads.measure("image:size=1M,kind=sparse", tmp_path).as_dict()
    after = time.time()
    start, end = r["started_unix_s"], r["started_unix_s"] + r["elapsed_s"]
    assert before <= start < end <= after - TEARDOWN_S, (before, start, end, after)
