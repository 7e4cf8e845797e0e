"""The per-request simulation: DiskSim's measured traces, properties, hand-checked cases."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskmodel.data.disksim import DISKSIM_PUBLISHED_DEMERIT_MS
from diskmodel.model.disksim_drives.convert import load_disksim_drive, validate_drive, zone_layout
from diskmodel.model.drive.parameters import DriveParameters
from diskmodel.model.simulator.simulate import HitKind, simulate_requests
from diskmodel.model.predictions.validation import (TraceValidation, empirical_quantiles, probability_levels,
                                                    quantile_demerit_s)

from _toy_drive import toy_drive as _toy

TRACED = sorted(DISKSIM_PUBLISHED_DEMERIT_MS)


@pytest.mark.slow
@pytest.mark.parametrize("name", TRACED)
def test_demerit_within_one_and_a_half_of_disksim(disksim_dir, name):
    result = validate_drive(disksim_dir / name)
    target = 1.5 * DISKSIM_PUBLISHED_DEMERIT_MS[name]
    assert result.requests > 9900
    assert result.demerit_ms <= target, result.summary()
    assert abs(result.mean_error_pct) < 5.0


def test_hp_c2247a_layout_golden(disksim_dir):
    drive = load_disksim_drive(disksim_dir / "hp_c2247a")
    layout = zone_layout(drive.model)
    assert layout.total_blocks == 2054864          # track sparing: exactly the model's block count
    # LBN 0: 1632 sectors of empty space = 17 tracks of 96 -> cylinder 1, head 4;
    # angle = (16 track switches * 14 + 1 cylinder switch * 32) mod 96 = 64 sectors.
    cylinder, head, sector, angle, zone = layout.lbn_to_pbn(np.array([0]))
    assert (cylinder[0], head[0], sector[0], zone[0]) == (1, 4, 0, 0)
    assert angle[0] == pytest.approx(64 / 96)
    # the first slipped track (468) is skipped: logical track 467 - 17 + ... lands one track later
    l_before = (467 - 17) * 96                     # logical track index 467 in the zone
    c, h, _, _, _ = layout.lbn_to_pbn(np.array([l_before, l_before + 96]))
    assert (c[0] * 13 + h[0], c[1] * 13 + h[1]) == (467, 469)




def test_hand_checked_sequential_read_ahead_hit():
    params = _toy()
    result = simulate_requests(params, [False, False], [0, 10], [10, 5], [5e-3, 0.0])
    # 1st: overhead 0.5 ms; LBN 0 sits at angle 0, the platter is at 0.05 rev -> wait 9.5 ms;
    # 10 sectors of 0.1 ms end at 11.0 ms; the bus sends each block 0.01 ms after it is
    # read (the last at 11.01 ms); completion 0.1 ms -> 11.11 ms.
    assert result.service_s[0] == pytest.approx(11.11e-3, abs=1e-9)
    assert result.hit[0] == HitKind.MEDIA
    assert result.latency_s[0] == pytest.approx(9.5e-3, abs=1e-9)
    # 2nd arrives at 16.11 ms; the read-ahead (LBN 10..59 from 11.0 ms at 0.1 ms each)
    # finished at 16.0 ms: a full hit: 0.2 ms overhead + 5 x 0.01 ms bus + 0.1 ms completion.
    assert result.hit[1] == HitKind.CACHE_HIT
    assert result.service_s[1] == pytest.approx(0.35e-3, abs=1e-9)
    assert result.arrival_s[1] == pytest.approx(16.11e-3, abs=1e-9)


def test_without_read_ahead_the_second_read_misses():
    params = _toy(max_read_ahead_blocks=0, read_ahead_scheme=0)
    result = simulate_requests(params, [False, False], [0, 10], [10, 5], [5e-3, 0.0])
    assert result.hit[1] == HitKind.MEDIA
    # at 16.61 ms (after the 0.5 ms overhead) the platter is at 0.661 rev; LBN 10 sits at
    # 0.1 rev: 4.39 ms latency, 0.5 ms transfer, +0.01 bus, +0.1 completion.
    assert result.service_s[1] == pytest.approx((0.5 + 4.39 + 0.5 + 0.01 + 0.1) * 1e-3, abs=1e-9)


def test_hand_checked_read_waits_for_the_read_ahead():
    result = simulate_requests(_toy(), [False, False], [0, 10], [10, 5], [0.0, 0.0])
    # The 1st read ends at 11.11 ms (as above) and the read-ahead reads LBN 10, 11, ... from
    # 11.0 ms, one every 0.1 ms. The 2nd (LBN 10..14) arrives at 11.11 ms with LBN 10 read:
    # after the 0.2 ms hit overhead (11.31 ms) the bus sends LBN 10..12 at once (11.32, 11.33,
    # 11.34 ms), LBN 13 when read at 11.4 ms (11.41), LBN 14 at 11.5 ms (11.51); completion
    # 0.1 ms -> 11.61 ms, 0.50 ms after its arrival.
    assert result.hit.tolist() == [HitKind.MEDIA, HitKind.READ_AHEAD_HIT]
    assert result.arrival_s[1] == pytest.approx(11.11e-3, abs=1e-9)
    assert result.service_s[1] == pytest.approx(0.50e-3, abs=1e-9)
    assert result.seek_s[1] == result.latency_s[1] == result.media_s[1] == 0.0


def test_fast_write_reports_when_data_is_buffered():
    slow = simulate_requests(_toy(), [True], [5000], [8], [0.0])
    fast = simulate_requests(_toy(fast_write_level=2), [True], [5000], [8], [0.0])
    assert fast.hit[0] == HitKind.FAST_WRITE
    assert fast.service_s[0] == pytest.approx((0.3 + 8 * 0.01 + 0.1) * 1e-3, abs=1e-9)
    # the slow write seeks 25 cylinders (1 + 24 * 0.05 ms), settles 0.2 ms, rotates, writes
    assert slow.service_s[0] > (0.3 + 2.2 + 0.2 + 0.8) * 1e-3


requests = st.lists(
    st.tuples(st.booleans(), st.integers(0, 19_000), st.integers(1, 64), st.floats(0, 0.05)),
    min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(requests, st.sampled_from([0, 1, 2]), st.sampled_from([0, 3, 4]))
def test_service_time_properties(reqs, fast, scheme):
    params = _toy(fast_write_level=fast, read_ahead_scheme=scheme)
    is_write, lbn, blocks, gap = (np.array(x) for x in zip(*reqs))
    result = simulate_requests(params, is_write, lbn, blocks, gap)
    assert np.all(result.service_s >= 0) and np.all(np.isfinite(result.service_s))
    assert np.all(np.diff(result.arrival_s) >= 0)
    # never faster than moving the blocks over the bus
    assert np.all(result.service_s >= blocks * 0.01e-3 - 1e-12)
    # a media access is never faster than its move, latency and sectors (a partial hit reads
    # only the blocks not yet buffered, at least one sector)
    media = result.hit == HitKind.MEDIA
    sector_s = params.rotation_period_s / 100
    mechanics = result.seek_s + result.latency_s + result.media_s
    assert np.all(result.service_s[media] >= mechanics[media] - 1e-12)
    assert np.all(result.media_s[media] >= sector_s - 1e-12)
    assert np.all(result.latency_s >= 0) and np.all(result.latency_s < params.rotation_period_s + 1e-12)


def test_bad_input_names_parameter():
    params = _toy()
    with pytest.raises(ValueError, match="interarrival_s"):
        simulate_requests(params, [False], [0], [1], [np.nan])
    with pytest.raises(ValueError, match="beyond the last block"):
        simulate_requests(params, [False], [19_999], [2], [0.0])
    with pytest.raises(ValueError, match="rpm"):
        _toy(rpm=0.0)


def test_demerit_on_exact_quantiles():
    levels = probability_levels()
    assert levels.size == 10_000 and levels[0] == 1e-4 and levels[-1] == 1.0
    measured = np.array([1.0, 2.0, 3.0, 4.0])
    # Q(p) is the ceil(4p)-th smallest: p in (0.75, 1] takes the 4th value
    assert empirical_quantiles(measured, [0.25, 0.2501, 1.0]).tolist() == [1.0, 2.0, 4.0]
    assert quantile_demerit_s(measured, measured) == 0.0
    assert quantile_demerit_s(measured, measured + 0.5) == pytest.approx(0.5)
    # only the top quarter differs, by 1: RMS = sqrt(0.25)
    assert quantile_demerit_s(measured, [1.0, 2.0, 3.0, 5.0]) == pytest.approx(0.5)


def test_result_object_plot_and_frame():
    import matplotlib
    matplotlib.use("Agg")
    result = TraceValidation("toy", np.array([1e-3, 2e-3, 3e-3]), np.array([1e-3, 2.5e-3, 3e-3]),
                             {"blocks": np.array([1, 2, 3])}, reference_demerit_s=0.2e-3)
    ax = result.plot()
    assert ax.get_xlabel() == "service time [ms]" and len(ax.lines) == 2
    frame = result.to_frame()
    assert list(frame.columns) == ["measured_ms", "predicted_ms", "residual_ms", "blocks"]
    assert frame.residual_ms.tolist() == pytest.approx([0.0, 0.5, 0.0])
    assert "demerit" in result.summary() and "<table>" in result._repr_html_()
    assert result.as_dict()["ratio_to_disksim"] == pytest.approx(result.demerit_s / 0.2e-3, rel=1e-3)
    # demerit_s is DiskSim's binned method: 1.0, 2.0 -> 2.5, 3.0 ms lie in ~1 % buckets; the exact-quantile
    # demerit is sqrt(1/3) * 0.5 ms (the middle third of the levels differs by 0.5 ms)
    assert result.quantile_demerit_s == pytest.approx(0.5e-3 / np.sqrt(3), rel=1e-3)
    assert result.as_dict()["quantile_demerit_ms"] == pytest.approx(0.5 / np.sqrt(3), rel=1e-3)
    assert result.demerit_s != result.quantile_demerit_s


def test_cli_json(disksim_dir, capsys):
    from diskmodel.calibrate.cli import main

    assert main(["validate-trace", str(disksim_dir / "hp_c2490a"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out)[:6] == ["disk", "requests", "demerit_ms", "demerit_pct_of_mean", "mean_measured_ms",
                             "mean_predicted_ms"]
    assert out["disk"] == "hp_c2490a" and out["requests"] == 9984
    assert out["demerit_ms"] <= 1.5 * 0.254


def test_cli_error_names_file_and_line(tmp_path, capsys):
    from diskmodel.calibrate.cli import main

    for name in ("x.parv", "x.diskspecs"):
        (tmp_path / name).write_text("disksim_disk X {\n  Model = source x.model\n}\n")
    (tmp_path / "x.parv").write_text("disksim_global G { Init Seed = 42 }\nnonsense here {\n")
    assert main(["validate-trace", str(tmp_path)]) == 2
    assert "x.parv:3" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# A Disk (a preset, a calibration) as the simulation's drive: the one bridge
# ---------------------------------------------------------------------------

def test_from_disk_random_reads_average_the_expected_service_time():
    from diskmodel.model import expected_random_service_time_s, load_preset

    disk = load_preset("hp97560")
    params = DriveParameters.from_disk(disk)
    assert params.layout.total_blocks * 512 == disk.capacity_bytes
    assert params.buffer_segments == 0                      # no drive_cache: every request goes to the media
    distance = np.arange(disk.geometry.cylinders)
    assert params.seek_by_distance_s == pytest.approx(disk.seek_time_s(distance))
    rng = np.random.default_rng(7)
    n = 20_000
    lbn = rng.integers(0, params.layout.total_blocks - 8, n)
    result = simulate_requests(params, np.zeros(n, bool), lbn, np.full(n, 8), np.zeros(n))
    expected = expected_random_service_time_s(disk, 4096).total_s.mean()
    # eqs. 3-8 average what the simulation does request by request (uniform latency, random seeks)
    assert result.service_s.mean() == pytest.approx(expected, rel=0.02)
    assert (result.hit == HitKind.MEDIA).all()


def test_from_disk_honours_the_drive_cache():
    from diskmodel.model import load_preset
    from diskmodel.model.drive.cache import DriveCache

    disk = load_preset("hp97560")
    cache = DriveCache(4, 64 * 1024, read_ahead_bytes=32 * 1024, write_back=True)
    params = DriveParameters.from_disk(disk.evolve(cache_size_bytes=cache.size_bytes, drive_cache=cache))
    assert (params.buffer_segments, params.segment_size_blocks, params.max_read_ahead_blocks) == (4, 128, 64)
    assert params.fast_write_level == 2 and params.read_ahead_scheme == 3
    n = 64
    seq = simulate_requests(params, np.zeros(n, bool), np.arange(n) * 8, np.full(n, 8), np.full(n, 1e-3))
    # a sequential stream: after the first miss the read-ahead serves the rest
    assert seq.hit[0] == HitKind.MEDIA and (seq.hit[1:] != HitKind.MEDIA).mean() > 0.8
    writes = simulate_requests(params, np.ones(4, bool), np.arange(4) * 1000, np.full(4, 8), np.full(4, 0.1))
    assert (writes.hit == HitKind.FAST_WRITE).all()
    with pytest.raises(ValueError, match="drive_cache holds"):
        disk.evolve(drive_cache=cache)                      # cache_size_bytes disagrees
    with pytest.raises(ValueError, match="read_ahead_scheme 3 contradicts read_ahead_bytes=0"):
        DriveCache(2, 4096, read_ahead_scheme=3)
    with pytest.raises(ValueError, match="fast_write_level 0 contradicts write_back=True"):
        DriveCache(2, 4096, write_back=True, fast_write_level=0)


def test_simulation_continues_from_a_state():
    params = _toy()
    rng = np.random.default_rng(3)
    lbn = rng.integers(0, params.layout.total_blocks - 8, 40)
    gap = rng.uniform(0, 2e-3, 40)
    whole = simulate_requests(params.evolve(buffer_segments=0, read_ahead_scheme=0, max_read_ahead_blocks=0),
                              np.zeros(40, bool), lbn, np.full(40, 8), gap)
    bare = params.evolve(buffer_segments=0, read_ahead_scheme=0, max_read_ahead_blocks=0)
    first = simulate_requests(bare, np.zeros(20, bool), lbn[:20], np.full(20, 8), gap[:20])
    second = simulate_requests(bare, np.zeros(20, bool), lbn[20:], np.full(20, 8), gap[20:],
                               start_s=first.end_s + gap[19], start_cylinder=first.end_cylinder,
                               start_head=first.end_head)
    assert np.concatenate((first.service_s, second.service_s)) == pytest.approx(whole.service_s, abs=1e-12)


# ---------------------------------------------------------------------------
# Traces: bad input, comments, a calibration simulated against a trace
# ---------------------------------------------------------------------------

def _write_trace(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_trace_comments_and_header_are_counted_and_bad_lines_named(tmp_path):
    from diskmodel.data.disksim import read_trace
    from diskmodel.data.disksim.syntax import DiskSimFormatError
    from diskmodel.model.disksim_drives.convert import simulate_trace

    good = _write_trace(tmp_path / "a.trace", ["# measured somewhere", "op label lbn blocks service interarrival",
                                               "R Hit 100 8 5000.0 100.0", "", "# a comment", "W Miss 9 4 6000 0"])
    trace = read_trace(good)
    assert trace.ignored_lines == 3 and len(trace) == 2 and trace.line.tolist() == [3, 6]
    for lines, where, what in (
            (["R Hit 100 8 5000.0 100.0", "R Hit x 8 1 1"], ":2:", "whole numbers"),
            (["R Hit 100 -8 5000.0 100.0"], ":1:", "block count -8"),
            (["R Hit -100 8 5000.0 100.0"], ":1:", "negative LBN .*DiskSim 4.0 stops on it too"),
            (["R Hit 100 8 5000.0"], ":1:", "expected 6 fields")):
        with pytest.raises(DiskSimFormatError, match=f"{where}.*{what}"):
            read_trace(_write_trace(tmp_path / "b.trace", lines))
    beyond = read_trace(_write_trace(tmp_path / "c.trace", ["R Hit 0 8 1 1", "R Hit 19990 20 1 1"]))
    with pytest.raises(ValueError, match=r"c\.trace:2: LBN 19990 \+ 20 blocks reaches beyond the drive 'toy' "
                                         r"\(20000 blocks; DiskSim 4\.0 stops on it too"):
        simulate_trace(_toy(), beyond)


def test_cli_validates_a_calibration_against_a_trace(tmp_path, capsys):
    """A calibration of a simulated drive, simulated per request (to_disk + from_disk) on
    a trace of the true drive's simulated times: the two agree (reads within a track)."""
    from diskmodel.calibrate.cli import main
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.results import calibration_to_json
    from diskmodel.calibrate.harness.simulated import simulated_disk
    from diskmodel.model import load_preset

    calibration = calibrate(simulated_disk("hp97560"), budget_s=30.0, progress=False)
    calibration_to_json(calibration, tmp_path / "cal.json")
    truth = DriveParameters.from_disk(load_preset("hp97560"))
    rng = np.random.default_rng(1)
    n = 400
    lbn = rng.integers(0, truth.layout.total_blocks - 64, n)
    gap = rng.uniform(0, 5e-3, n)
    measured = simulate_requests(truth, np.zeros(n, bool), lbn, np.full(n, 8), gap).service_s
    _write_trace(tmp_path / "t.trace", ["# the truth's own simulation", "op label lbn blocks service_us gap_us"]
                 + [f"R Miss {lbn[i]} 8 {measured[i] * 1e6:.3f} {gap[i] * 1e6:.3f}" for i in range(n)])
    assert main(["validate-trace", "--calibration", str(tmp_path / "cal.json"), str(tmp_path / "t.trace"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == n and out["ignored_lines"] == 2
    assert out["mean_measured_ms"] == pytest.approx(measured.mean() * 1e3, rel=1e-6)
    assert abs(out["mean_error_pct"]) < 15.0 and out["demerit_pct_of_mean"] < 20.0
    assert main(["validate-trace", "--calibration", str(tmp_path / "cal.json")]) == 2
    assert "needs a trace file" in capsys.readouterr().err
    assert main(["validate-trace", "--calibration", str(tmp_path / "missing.json"), str(tmp_path / "t.trace")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# ---------------------------------------------------------------------------
# DiskSim 4.0's own per-request times (tests/golden/disksim_service_times) and
# hand-checked cases of the DiskSim rules the simulation follows
# ---------------------------------------------------------------------------

GOLDEN = __import__("pathlib").Path(__file__).parent / "golden" / "disksim_service_times"

#: Share of the first 400 requests within 10 us of DiskSim (measured: all of them).
AGREEMENT = {"atlas_III": 1.0, "atlas10k": 1.0, "barracuda": 1.0, "cheetah4LP": 1.0, "ibm18es": 1.0,
             "hp_c2247a": 1.0, "hp_c2490a": 1.0}


@pytest.mark.parametrize("name", TRACED)
def test_service_times_match_disksims_own(disksim_dir, name):
    golden = np.loadtxt(GOLDEN / f"{name}.csv", delimiter=",", skiprows=1)
    drive = load_disksim_drive(disksim_dir / name)
    trace = drive.read_trace().head(len(golden))
    # as DiskSim 4.0 runs: "Read any free blocks" unused (its g1_access_block slip)
    params = drive.simulation_parameters(disksim_code=True, disksim_access_block_bug=True)
    ours_ms = simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s).service_s * 1e3
    agree = np.abs(ours_ms - golden[:, 1]) < 0.01
    assert agree.mean() >= AGREEMENT[name], np.flatnonzero(~agree)[:10]


def _hp_like(**changes) -> DriveParameters:
    """_toy with a write-through buffer and DiskSim's write overheads (hp_c2247a-like values)."""
    base = dict(buffer_segments=2, separate_write_segment=True, max_read_ahead_blocks=0, read_ahead_scheme=0,
                data_preparation_s=0.02e-3, reselect_s=0.16e-3, other_reselect_s=0.13e-3,
                write_disconnect_s=0.17e-3, extra_write_disconnect=True, extra_disconnect_command_s=0.64e-3,
                extra_disconnect_s=0.05e-3, extra_inter_disconnect_s=0.43e-3,
                extra_second_disconnect_s=0.13e-3, extra_disconnect_seek_delta_s=0.25e-3,
                bus_write_block_s=0.2e-3)
    base.update(changes)
    return _toy(**base)


def test_write_through_write_reconnects_for_its_completion():
    # One write of 2 blocks at LBN 50 (cylinder 0, head 0, angle 0.5): the mechanism starts at
    # the 0.3 ms overhead, no move; the data come from 0.3 + 0.02 ms at 0.2 ms a block (0.52,
    # 0.72 ms); sector 50 passes at 5.0 ms, 51 ends at 5.2 ms; the disconnection (0.72 + 0.17)
    # is long over; reconnect 0.16 ms + completion 0.1 ms -> 5.46 ms.
    result = simulate_requests(_hp_like(), [True], [50], [2], [0.0])
    assert result.service_s[0] == pytest.approx(5.46e-3, abs=1e-9)


def test_extra_write_disconnect_after_a_write_elsewhere():
    # 1st write LBN 0 (1 block) at t=0: at angle 0 after the 0.3 ms overhead -> sector 0 comes
    # round at 10 ms, the block (there at 0.52 ms) is written by 10.1 ms; + 0.16 + 0.1 ->
    # done 10.36 ms; the 2nd arrives 0 ms later. It does not append (LBN 50): extra
    # disconnect. 10 blocks (held: min(10, 10) = all before any sector is written). Its data
    # come from 10.36 + 0.64 + 0.05 + 0.43 + 0.16 + 0.02 = 11.66 ms, the 10th at 13.66 ms; the
    # mechanism starts at 10.36 + 0.64 + 0.25 = 11.25 ms; sector 50 passes at 15.0 ms (after
    # the last block) and sectors 50..59 end at 16.0 ms; reconnect with the OTHER reselect
    # 0.13 ms, completion 0.1 ms -> 16.23 ms, a service time of 5.87 ms.
    result = simulate_requests(_hp_like(), [True, True], [0, 50], [1, 10], [0.0, 0.0])
    assert result.service_s[0] == pytest.approx(10.36e-3, abs=1e-9)
    assert result.service_s[1] == pytest.approx(5.87e-3, abs=1e-9)
    # without the extra disconnect: data from 10.36 + 0.3 + 0.02, mechanism at 10.66 ms; the
    # same sectors (all data there by 12.68 ms), first reselect: 16.0 + 0.16 + 0.1 - 10.36 ms
    plain = simulate_requests(_hp_like(extra_write_disconnect=False), [True, True], [0, 50], [1, 10], [0.0, 0.0])
    assert plain.service_s[1] == pytest.approx(5.9e-3, abs=1e-9)


def test_stopping_the_read_ahead_adds_to_the_overhead():
    # Read LBN 0..9: done 11.11 ms (test_hand_checked_sequential_read_ahead_hit); the read-ahead
    # reads LBN 10.. from 11.0 ms, 0.1 ms a sector. The 2nd read (LBN 5000: cylinder 25, head 0,
    # angle 0) arrives at 11.11 + 0.02 = 11.13 ms, during sector 11 (11.1 .. 11.2 ms).
    # "Stop prefetch in sector" 0: the read-ahead stops at 11.2 ms and DiskSim's disk_check_hda
    # starts the seek at arrival + 0.5 ms overhead + (11.2 - 11.13) ms = 11.7 ms; 25 cylinders
    # = 2.2 ms -> 13.9 ms; angle 0 comes at 20.0 ms; 1 sector -> 20.1 ms; bus 0.01 + 0.1 ms.
    result = simulate_requests(_toy(), [False, False], [0, 5000], [10, 1], [0.02e-3, 0.0])
    assert result.service_s[1] == pytest.approx(20.21e-3 - 11.13e-3, abs=1e-9)
    assert result.seek_s[1] == pytest.approx(2.2e-3, abs=1e-9)
    # within a sector: the seek starts at 11.63 ms, the same revolution
    inside = simulate_requests(_toy(stop_read_ahead_in_sector=True), [False, False], [0, 5000], [10, 1],
                               [0.02e-3, 0.0])
    assert inside.service_s[1] == pytest.approx(result.service_s[1], abs=1e-9)
    assert inside.latency_s[1] == pytest.approx(result.latency_s[1] + 0.07e-3, abs=1e-9)


def test_maximum_read_ahead_pushes_the_request_out_of_a_full_segment():
    # DiskSim's disk_buffer_get_max_readahead: with a maximum read-ahead, "Read-ahead over
    # requested" = 0 does not stop the read-ahead at a full segment; the circular segment
    # keeps the last 60 blocks read, so re-reading the request misses.
    params = _toy(segment_size_blocks=60, max_read_ahead_blocks=60, read_ahead_over_requested=False)
    result = simulate_requests(params, [False, False, False], [0, 0, 100], [10, 10, 10], [50e-3, 50e-3, 0.0])
    assert result.hit[1] == HitKind.MEDIA
    # without a maximum the read-ahead stops when the segment is full and keeps the request
    kept = simulate_requests(params.evolve(max_read_ahead_blocks=0), [False, False, False], [0, 0, 100],
                             [10, 10, 10], [50e-3, 50e-3, 0.0])
    assert kept.hit[1] == HitKind.CACHE_HIT


@pytest.mark.parametrize("level", [1, 2])
def test_fast_write_waits_for_the_previous_write_it_does_not_append_to(level):
    # Write 1 (LBN 0, at 0) is reported at 0.3 + 0.01 + 0.1 = 0.41 ms and written in the
    # background: sector 0 comes at 10 ms, done at 10.1 ms. Write 2 (LBN 5, not appending)
    # arrives at 0.41 ms: it cannot stop write 1 (DiskSim's disk_buffer_stopable_access wants an
    # appending write, at level 1 and 2 alike) and takes its data only after 10.1 ms (reselect
    # and data preparation 0 here): done 10.1 + 0.01 + 0.1 -> service 9.8 ms. An appending
    # write (LBN 1): reported at once, 0.41 ms.
    args = ([True, True], [0, 5], [1, 1], [0.0, 0.0])
    assert simulate_requests(_toy(fast_write_level=level), *args).service_s[1] == pytest.approx(9.8e-3, abs=1e-9)
    appending = simulate_requests(_toy(fast_write_level=level), [True, True], [0, 1], [1, 1], [0.0, 0.0])
    assert appending.service_s[1] == pytest.approx(0.41e-3, abs=1e-9)
    # once write 1 is on the media (gap 20 ms), write 2 is reported at once
    later = simulate_requests(_toy(fast_write_level=level), [True, True], [0, 5], [1, 1], [20e-3, 0.0])
    assert later.service_s[1] == pytest.approx(0.41e-3, abs=1e-9)


def test_cli_says_how_many_lines_of_a_drive_folders_trace_were_ignored(tmp_path, capsys, disksim_dir):
    """A DiskSim drive folder whose trace has a comment and a header: both counted, in the
    text and in the JSON, and the requests after them simulated."""
    import shutil

    from diskmodel.calibrate.cli import main

    folder = tmp_path / "hp_c2247a"
    shutil.copytree(disksim_dir / "hp_c2247a", folder)
    trace_path = next(folder.glob("*.trace"))
    rows = trace_path.read_text().splitlines()[:50]
    _write_trace(trace_path, ["# the first 50 requests", "op label lbn blocks service_us gap_us"] + rows)
    assert main(["validate-trace", str(folder)]) == 0
    assert f"{trace_path}: ignored 2 comment or header line(s)" in capsys.readouterr().out
    assert main(["validate-trace", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == 50 and out["ignored_lines"] == 2


def test_a_writes_rotational_latency_excludes_its_wait_for_data():
    """Found by test_service_time_properties: a write-through write of block 0 right after
    one of blocks 0-59 waited 10.0085 ms "latency" on a 10 ms revolution, its wait for the
    host's block counted in. The rotational wait is under a revolution; the rest is media."""
    result = simulate_requests(_toy(fast_write_level=0, read_ahead_scheme=0), [True, True], [0, 0], [60, 1],
                               [0.023591478473023925, 0.0])
    assert np.all(result.latency_s < 10e-3)
    assert result.latency_s[1] == pytest.approx(9.99852e-3, abs=1e-8)
    assert result.media_s[1] == pytest.approx(0.11e-3, abs=1e-9)   # the block's data (0.01 ms) and one sector
