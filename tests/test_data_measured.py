"""diskmodel.data.measured: the curated copy of a measured figure agrees with the benchmark run it came from."""
from __future__ import annotations

import json
from pathlib import Path

from diskmodel.data.measured import dm_request_cost

ROOT = Path(__file__).resolve().parents[1]


def test_dm_request_cost_is_the_benchmarks_figure():
    """The shipped cost per bio is the one benchmarks/dm_request_cost.py wrote, from the run its provenance names:
    re-running the benchmark without refreshing the copy (or the reverse) fails here."""
    cost = dm_request_cost()
    artifact = json.loads((ROOT / cost.provenance["artifact"]).read_text())
    assert cost.host_s == artifact["figures"]["dm_request_cost_s"]["value"]
    assert cost.guest_s == artifact["figures"]["dm_request_cost_guest_s"]["value"]
    assert cost.provenance["date_utc"] == artifact["environment"]["date_utc"]
    assert cost.provenance["git_commit"] == artifact["environment"]["git_commit"]
    assert 0 < cost.host_s < cost.guest_s


def test_the_emulated_experiment_reads_the_shipped_cost():
    from diskmodel.calibrate.experiment_emulated import guest_dm_cost_s

    value, where = guest_dm_cost_s()
    assert value == dm_request_cost().guest_s
    assert "benchmarks/dm_request_cost.py" in where
