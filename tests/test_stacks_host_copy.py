"""The host cells of benchmarks/stacks_check.py take the copy's rates as the VM cells do: each size's
step the median of its repeats, and the run-to-run spread from the repeats of one size against each
other. Written against a copy's output made by hand (the lines calibrate/bench/copy.py prints), so
the expected figures are worked out here, not by the code under test."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

MIB = 1 << 20


def _line(n_mib: int, write_s: float, read_s: float, t0: float) -> str:
    # "<mark> copy N t0 t1 t2 t3": the write from t0 to t1, the read from t2 to t3
    from diskmodel.calibrate.bench import copy

    return f"{copy._MARK} copy {n_mib} {t0:.9f} {t0 + write_s:.9f} {t0 + 1:.9f} {t0 + 1 + read_s:.9f}"


def _output() -> str:
    # 1 MiB and 4 MiB, three repeats each; the 4 MiB read's second repeat stalled by the host
    rows = [(1, 0.10, 0.05), (4, 0.30, 0.20), (1, 0.12, 0.05), (4, 0.30, 0.90), (1, 0.11, 0.05), (4, 0.33, 0.22)]
    return "\n".join(_line(n, w, r, 10.0 * i) for i, (n, w, r) in enumerate(rows)) + "\n"


def test_each_step_is_the_median_of_its_repeats_and_the_spread_compares_one_size_with_itself():
    from stacks_check import host_copy_rates

    rates = host_copy_rates(_output())
    assert rates["write_s"] == pytest.approx([0.11, 0.30])
    assert rates["read_s"] == pytest.approx([0.05, 0.22])  # the stalled 0.90 s repeat is not the median
    assert rates["copy write"] == pytest.approx(5 * MIB / 0.41)
    assert rates["copy read"] == pytest.approx(5 * MIB / 0.27)
    # population standard deviation over the mean, per size; the larger of the two sizes'
    w1 = (0.10, 0.12, 0.11)
    w4 = (0.30, 0.30, 0.33)
    r4 = (0.20, 0.90, 0.22)

    def rel(v):
        m = sum(v) / len(v)
        return (sum((x - m) ** 2 for x in v) / len(v)) ** 0.5 / m

    assert rates["spread"]["copy write"] == pytest.approx(max(rel(w1), rel(w4)))
    assert rates["spread"]["copy read"] == pytest.approx(rel(r4))
    # one size against the other is not run-to-run spread: the old reckoning mixed them (about 0.5 here)
    assert rates["spread"]["copy write"] < 0.1


def test_a_tool_workloads_repeats_give_the_median_run_and_their_spread_and_decide_the_image_ordering():
    """Each tool workload runs several times; its time is the median run's (a real run, its details with it),
    the spread its repeats' population standard deviation over their mean, and the sparse-against-zero-filled
    image ordering is decided only where the two times differ by more than their spreads together."""
    from _stacks_tables import orderings
    from stacks_check import median_run

    runs = [{"elapsed_s": t, "run": i} for i, t in enumerate((0.50, 0.90, 0.40))]
    tar = median_run(runs)
    assert tar["run"] == 0 and tar["elapsed_s"] == 0.50 and tar["repeats_s"] == [0.50, 0.90, 0.40]
    assert tar["spread"] == pytest.approx((0.14 / 3) ** 0.5 / 0.6)  # deviations -0.1, 0.3, -0.2 from 0.6
    assert median_run([{"elapsed_s": 0.3}, {"elapsed_s": 0.2}])["elapsed_s"] == 0.2  # the lower middle, a real run
    assert median_run([{"elapsed_s": 0.3}])["spread"] == 0.0

    def cell(zero_s, sparse_s, spread):
        tools = [{"spec": "image:size=32M", "elapsed_s": zero_s, "spread": spread, "predicted": {"elapsed_s": 1.0}},
                 {"spec": "image:size=32M,kind=sparse", "elapsed_s": sparse_s, "spread": spread,
                  "predicted": {"elapsed_s": 0.1}}]
        return {"stack": "s", "tools": tools}

    (far,) = orderings([cell(1.0, 0.1, 0.2)])
    assert far["decided"] and far["held"] and far["spread"] == pytest.approx(0.4)
    (near,) = orderings([cell(1.0, 0.8, 0.15)])   # a ratio of 1.25 within a spread of 0.3: not decided
    assert not near["decided"] and near["held"] and near["measured_ratio"] == pytest.approx(1.25)
