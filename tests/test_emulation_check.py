"""benchmarks/emulation_check.py's analysis of a trace replay, on hand-made request logs (no device, no root):
the replay's requests found among other processes' requests in the server's log, and ``--drives``' rows merged
into the existing artifact."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from _scripts import load_script

from diskmodel.calibrate.emulate.replay import Replayed
from diskmodel.calibrate.emulate.requestlog import RequestRecorder
from diskmodel.data.disksim import DISKSIM_PUBLISHED_DEMERIT_MS, disksim_drive_folder, read_drive_folder

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def ec():
    return load_script(BENCHMARKS / "emulation_check.py")


def _log_of_a_replay(path: Path, trace, foreign_at: int, foreign: int, t0: float):
    """A request log as the server writes it for *trace* replayed from t0 + 1 s: each request enters the server
    0.3 ms after its issue, is served in the trace's measured time less the 0.5 ms path cost taken off, 0.02 ms
    late, and seen complete 0.25 ms after the server returns it (excess 0.07 ms each); before request
    *foreign_at*, another process's *foreign* reads of the device's last 4 KiB, each 10 ms, are served (the
    replay's request waits for them, as a request behind them on the drive does). Also three reads of the
    kernel's attach before the replay. Returns the replay's stamps."""
    rec = RequestRecorder({"drive": "d", "t0_monotonic_s": t0}, path)
    now, issued, completed = 1.0, [], []
    for k in range(3):  # the kernel reads the device as it is attached
        rec.add(0.0, 0, k * 4096, 4096, 0.0, 1e-3, 0, 0.0, False, 0, 0.1 * k, 0.1 * k + 1e-3)
    for i in range(len(trace)):
        if i == foreign_at:
            for _ in range(foreign):
                rec.add(now - 0.5e-3, 0, (1 << 30) - 4096, 4096, 0.0, 10e-3, 0, 0.0, False, 0, now, now + 10e-3)
                now += 10e-3
        issue = now if i != foreign_at else now - foreign * 10e-3
        entry = now + 0.3e-3
        done = entry - 0.5e-3 + float(trace.service_s[i]) + 0.02e-3
        rec.add(entry - 0.5e-3, int(trace.is_write[i]), int(trace.lbn[i]) * 512, int(trace.blocks[i]) * 512, 0.0,
                float(trace.service_s[i]), 0, 0.02e-3, False, 0, entry, done)
        issued.append(issue + t0)
        completed.append(done + 0.25e-3 + t0)
        now = done + 0.25e-3 + float(trace.interarrival_s[i])
    rec.close()
    return Replayed(np.array(issued), np.array(completed))


def test_a_scan_of_the_device_during_a_replay_is_skipped_and_the_parts_stay_aligned(ec, tmp_path):
    """hp_c2247a's first 400 requests, 40 reads of another process coming before request 340 (as a scan of
    every block device's ends did during a replay): the parts are those of the replay's own requests. Taken
    as the rows after the replay's first, in a row, the last 60 requests would be set beside the log rows of
    requests 40 earlier: ways in far below zero and ways out far above (a request cannot reach the server
    before it is issued)."""
    name = "hp_c2247a"
    trace = read_drive_folder(disksim_drive_folder(name)).read_trace().head(400)
    log = tmp_path / "d.reqlog"
    stamps = _log_of_a_replay(log, trace, foreign_at=340, foreign=40, t0=1000.0)
    row = {"disk": name, "disksim_demerit_ms": DISKSIM_PUBLISHED_DEMERIT_MS[name]}
    ec._lateness({name: [SimpleNamespace(log_path=str(log))]}, {name: trace}, {name: [stamps]}, [row])
    # every request's way in 0.3 ms, out 0.25 ms, lateness 0.02 ms, excess 0.07 ms, except request 340's
    # excess and way in, which hold the 40 foreign reads it waited behind (0.4 s)
    for key, ms in (("path_in", 0.3), ("path_out", 0.25), ("lateness", 0.02), ("replay_excess", 0.07)):
        assert row[f"{key}_p10_ms"] == pytest.approx(ms, abs=1e-6), key
        assert row[f"{key}_p99_ms"] == pytest.approx(ms, abs=1e-6), key
    assert row["replay_excess_max_ms"] == pytest.approx(400.07, abs=1e-6)
    assert row["path_out_max_ms"] == pytest.approx(0.25, abs=1e-6)
    assert row["foreign_requests_during_replay"] == 40


def test_each_replay_of_a_drive_is_split_by_its_own_log_and_the_first_is_the_single_run(ec, tmp_path):
    """Two replays of hp_c2490a's first 300 requests, each with its own log: the second's requests wait behind
    20 foreign reads of 10 ms before request 100 (0.2 s more for that one request). The row's part figures are
    the first replay's (no foreign reads, excess max 0.07 ms), each replay's entry has its own count of
    foreign reads and lateness; the server's simulated times are the trace's measured ones, so their demerit
    is 0 and their spread over the two replays 0; the pooled arrays hold both replays' requests."""
    name = "hp_c2490a"
    trace = read_drive_folder(disksim_drive_folder(name)).read_trace().head(300)
    devs, stamps = [], []
    for r, foreign in enumerate((0, 20)):
        log = tmp_path / f"d{r}.reqlog"
        stamps.append(_log_of_a_replay(log, trace, foreign_at=100, foreign=foreign, t0=1000.0 + r))
        devs.append(SimpleNamespace(log_path=str(log)))
    row = {"disk": name, "disksim_demerit_ms": DISKSIM_PUBLISHED_DEMERIT_MS[name]}
    late, excess, short = ec._lateness({name: devs}, {name: trace}, {name: stamps}, [row])
    assert len(late) == len(excess) == len(short) == 600
    assert row["replay_excess_max_ms"] == pytest.approx(0.07, abs=1e-6)
    assert [e["foreign_requests"] for e in row["replays"]] == [0, 20]
    assert row["foreign_requests_during_replay"] == 0
    assert row["replays"][1]["lateness_p99_ms"] == pytest.approx(0.02, abs=1e-6)
    assert row["lateness_p99_ms_all_replays"] == pytest.approx(0.02, abs=1e-6)
    assert row["server_simulated_demerit_ms"] == 0.0
    assert row["simulated_spread_over_replays_max_ms"] == 0.0
    assert row["server_simulated_demerit_ms_median_of_repeats"] == 0.0
    # the first replay's simulated times (the trace's) plus each request's median excess (0.07 ms, the 0.2 s of
    # request 100 in one replay of two giving 0.1 s as the median of two)
    from diskmodel.model.predictions.validation import disksim_demerit_s
    expected = trace.service_s + 0.07e-3
    expected[100] += 0.1
    assert row["demerit_ms_first_simulated_plus_median_excess"] == pytest.approx(
        disksim_demerit_s(trace.service_s, expected) * 1e3, rel=1e-4)  # a last bit may move a time across a bin
    # every request's excess is 0.07 ms: the top 1 % given their simulated time change the demerit by as little
    assert row["demerit_ms_without_largest_1pct_excess"] <= row["demerit_ms_without_largest_0.1pct_excess"]


def test_the_median_demerit_is_of_each_requests_median_over_the_replays(ec):
    """barracuda's first 500 requests replayed three times, each replay's time the trace's measured one except
    where a host stall added 40 ms: replay 1 at requests 0-9, replay 2 at 10-19, replay 3 at 0-4 and 20-29.
    The first replay's demerit is the row's single-run figure; each request's median is its measured time
    except requests 0-4, stalled in two replays of three: the median demerit is that of the measured times with
    those five 40 ms longer, worked out here independently; each replay's own demerit is in its entry."""
    from diskmodel.model.predictions.validation import disksim_demerit_s

    name = "barracuda"
    trace = read_drive_folder(disksim_drive_folder(name)).read_trace().head(500)
    params = {name: ec.drive_parameters(read_drive_folder(disksim_drive_folder(name)))}
    measured = trace.service_s
    took = [measured.copy() for _ in range(3)]
    took[0][0:10] += 40e-3
    took[1][10:20] += 40e-3
    took[2][0:5] += 40e-3
    took[2][20:30] += 40e-3
    runs = [{"load_average_before": [1.0, 1.0, 1.0], "cpu_steal_fraction": 0.0} for _ in range(3)]
    row = ec._drive_row(name, trace, params, runs, took)
    expected_median = measured.copy()
    expected_median[0:5] += 40e-3
    published = DISKSIM_PUBLISHED_DEMERIT_MS[name]
    assert row["demerit_ms"] == pytest.approx(disksim_demerit_s(measured, took[0]) * 1e3, rel=1e-12)
    assert row["demerit_ms_median_of_repeats"] == pytest.approx(disksim_demerit_s(measured, expected_median) * 1e3,
                                                                rel=1e-12)
    assert 0 < row["demerit_ms_median_of_repeats"] < row["demerit_ms"]
    assert row["ratio_to_disksim_median_of_repeats"] == pytest.approx(row["demerit_ms_median_of_repeats"] / published)
    assert row["repeats"] == 3 and [e["demerit_ms"] for e in row["replays"]] == pytest.approx(
        [disksim_demerit_s(measured, t) * 1e3 for t in took], rel=1e-12)


def test_the_median_figures_are_over_the_rows_that_have_them(ec):
    """Three rows replayed three times each (median ratios 1.1, 1.15, 1.3) and one row of an older run (single
    ratio 1.7, no median): the single-run figures are over all four, the median ones over the three."""
    rows = [{**_row(d, r), "ratio_to_disksim_median_of_repeats": m, "repeats": 3}
            for d, r, m in (("atlas_III", 1.27, 1.1), ("barracuda", 1.18, 1.15), ("hp_c2490a", 1.31, 1.3))]
    rows.append(_row("ibm18es", 1.7))
    figures = ec._demerit_figures(rows)
    assert figures["worst_demerit_ratio_to_disksim"]["value"] == 1.7
    assert figures["drives_within_demerit_target"]["value"] == 1
    assert figures["worst_demerit_ratio_median_of_repeats"]["value"] == 1.3
    assert figures["drives_within_demerit_target_median_of_repeats"]["value"] == 2
    assert "(3 drives, 3 replays each)" in figures["worst_demerit_ratio_median_of_repeats"]["label"]


def test_repeats_must_be_at_least_one_and_the_replays_cpu_one_of_ours(ec, capsys):
    with pytest.raises(SystemExit):
        ec.main(["--repeats", "0"])
    assert "--repeats >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ec.main(["--replay-cpu", "4096"])
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("--replay-cpu 4096: not one of this process's "
                                                                      f"CPUs {sorted(os.sched_getaffinity(0))}")


def _row(disk, ratio):
    return {"disk": disk, "ratio_to_disksim": ratio, "demerit_ms": ratio * DISKSIM_PUBLISHED_DEMERIT_MS[disk]}


def test_drives_replayed_alone_replace_their_rows_and_the_demerit_figures(ec, tmp_path):
    """An artifact of seven rows, two of them above the target; hp_c2247a (23.4x) and ibm18es (3.6x) replayed
    again at 1.1x and 1.3x: the five other rows are kept as they were, in DiskSim's order, the worst ratio is
    the merged rows' (1.3, ibm18es) and six drives are within 1.2x; the other figures are the earlier run's."""
    old_ratios = {"atlas_III": 1.0, "barracuda": 1.1, "cheetah4LP": 0.98, "ibm18es": 3.6, "atlas10k": 1.03,
                  "hp_c2247a": 23.4, "hp_c2490a": 1.15}
    fig = lambda v: {"value": v, "unit": "", "decimals": 2, "label": "x", "headline": False}  # noqa: E731
    old = {"figures": {"worst_demerit_ratio_to_disksim": fig(23.4), "drives_within_demerit_target": fig(5),
                       "lateness_p99_ms": fig(0.3)},
           "details": {"drives": [_row(d, r) for d, r in old_ratios.items()], "hits": {"per_s": 1.0}},
           "notes": ["earlier"]}
    (tmp_path / "emulation_check.json").write_text(json.dumps(old))
    rows = [_row("hp_c2247a", 1.1), _row("ibm18es", 1.3)]
    figures = {"worst_demerit_ratio_to_disksim": fig(1.3), "drives_within_demerit_target": fig(1),
               "lateness_p99_ms": fig(0.1)}
    details = {"drives": rows, "load_average_at_start": [0.5, 0.5, 0.5], "load_average_at_end": [0.6, 0.5, 0.5]}
    out_fig, out_det, notes = ec._merged_with_artifact(tmp_path, rows, figures, details, [])
    assert [r["disk"] for r in out_det["drives"]] == list(DISKSIM_PUBLISHED_DEMERIT_MS)
    ratios = {r["disk"]: r["ratio_to_disksim"] for r in out_det["drives"]}
    assert ratios == {**old_ratios, "hp_c2247a": 1.1, "ibm18es": 1.3}
    assert out_fig["worst_demerit_ratio_to_disksim"]["value"] == 1.3
    assert out_fig["drives_within_demerit_target"]["value"] == 6
    assert out_fig["lateness_p99_ms"]["value"] == 0.3 and out_det["hits"] == {"per_s": 1.0}
    assert out_det["replays_alone"][0]["drives"] == ["hp_c2247a", "ibm18es"]
    assert notes[0] == "earlier" and "hp_c2247a, ibm18es replayed again alone" in notes[-1]


def test_drives_must_be_traced_drives(ec, capsys):
    with pytest.raises(SystemExit):
        ec.main(["--drives", "hp_c2247a,nosuch"])
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("argument --drives: --drives 'hp_c2247a,nosuch': not a traced drive: nosuch")
