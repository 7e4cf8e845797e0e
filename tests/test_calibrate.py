"""Calibration harness: parameter recovery on simulated disks, fits, result, CLI, real storage."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pytest

from diskmodel.calibrate import cli
from diskmodel.calibrate.harness.backend import BackendProtocolError, backend_from_spec, check_backend
from diskmodel.calibrate.harness.measure import calibrate
from diskmodel.calibrate.harness.results import calibration_from_json, calibration_to_json
from diskmodel.calibrate.harness.simulated import calibration_errors, simulated_disk
from diskmodel.model import Disk, expected_random_service_time_s
from diskmodel.model.fit import fit_table, fit_two_piece, fit_zones, flatness_test

from conftest import require_root, require_tools


class FlashLike:
    """A backend with no mechanics: latency independent of where the head was."""

    queue_depth = 1

    def __init__(self, size_bytes=1 << 30, latency_s=80e-6, rate_bytes_per_s=900e6, seed=0):
        self.size_bytes = size_bytes
        self.block_size_bytes = 4096
        self.latency_s = latency_s
        self.rate = rate_bytes_per_s
        self.rng = np.random.default_rng(seed)

    def read(self, offset_bytes, length_bytes):
        return float(self.read_many([offset_bytes], length_bytes)[0])

    def read_many(self, offsets, length_bytes):
        n = len(offsets)
        return self.latency_s * self.rng.lognormal(0.0, 0.2, n) + length_bytes / self.rate


# ---------------------------------------------------------------------------
# Parameter recovery on simulated disks (the targets)
# ---------------------------------------------------------------------------

RECOVERY = [("wd800bd", 120.0), ("hp97560", 120.0), ("hp_c2247a", 120.0)]


@pytest.fixture(scope="module")
def g4_run(disksim_dir):
    sim = simulated_disk(disksim_dir / "G4_4TB")
    start = time.perf_counter()
    result = calibrate(sim, budget_s=120.0, progress=False)
    return sim, result, time.perf_counter() - start


def assert_targets(sim, result):
    err = calibration_errors(sim, result)
    assert abs(err["rotation_period"]) < 0.005, err
    assert abs(err["mean_seek_two_piece"]) < 0.03, err
    assert abs(err["mean_seek_table"]) < 0.03, err
    assert err["zone_rate_max"] < 0.03, err
    return err


@pytest.mark.parametrize("name,budget", RECOVERY)
def test_recovery_on_presets(name, budget):
    sim = simulated_disk(name)
    result = calibrate(sim, budget_s=budget, progress=False)
    assert_targets(sim, result)
    assert result.device_time_s <= budget
    assert result.mechanical_seek
    assert result.seek_fit.model == "two_piece"
    assert all(v.passed for v in result.checks), result.summary()


@pytest.mark.serial  # asserts a wall time
def test_recovery_on_g4_4tb_within_120_s_of_device_time(g4_run):
    sim, result, wall = g4_run
    err = assert_targets(sim, result)
    assert result.device_time_s <= 120.0
    assert wall < 30.0
    assert result.size_bytes == sim.size_bytes > 3.8e12
    # the 50 zones (94..185 MB/s sustained) are found as a profile, not one mean. A zone's rate is the
    # sustained rate a long read sees: the media rate (3072 sectors a revolution at 7200 rpm, 188.7 MB/s,
    # on the outer zone) less the skew at each track change (a tenth of the changes, the cylinder
    # switches, wait 0.216 rev); to_disk turns it back into sectors per track with the measured skews
    rates = np.array([z[2] for z in result.zones])
    assert rates.max() == pytest.approx(sim.zone_rates_bytes_per_s().max(), rel=0.01)
    assert result.surfaces == sim.geometry.surfaces
    assert result.to_disk().geometry.zones[0].sectors_per_track == pytest.approx(3072, rel=0.01)
    assert rates.min() == pytest.approx(sim.zone_rates_bytes_per_s().min(), rel=0.01)
    assert err["zone_rate_mean"] < 0.005


def test_recovery_on_a_disksim_g1_drive(disksim_dir):
    sim = simulated_disk(disksim_dir / "atlas10k")
    result = calibrate(sim, budget_s=60.0, progress=False)
    assert_targets(sim, result)


def test_command_overhead_recovered():
    sim = simulated_disk("wd800bd")  # 0.2 ms command overhead
    result = calibrate(sim, budget_s=40.0, progress=False)
    # overhead_s is the floor of a one-block read: the command overhead and the block's transfer
    expected = 0.2e-3 + 512 / sim.zone_rates_bytes_per_s()[0]
    assert result.overhead_s == pytest.approx(expected, abs=20e-6)


def test_seek_table_spans_the_device_from_spread_start_points(g4_run):
    sim, result, _ = g4_run
    table = np.array(result.seek_curve_table())
    # from two tracks (closer pairs are a head switch or none, measured on their own) to the far end
    track_bytes = result.mean_bytes_per_track
    assert table[0, 0] < 8 * track_bytes and table[-1, 0] > 0.85 * sim.size_bytes
    assert np.all(np.diff(table[:, 0]) > 0)
    assert np.all(table[:, 1] >= 0), "a seek time is never negative"
    # the short end (pairs under 10 tracks apart) agrees with the true positioning of those pairs:
    # rotation is taken out at short distances too (within 3 standard errors of a uniform wait)
    d = result.seek_distance_bytes
    short = result.seek_kept & (d < 10 * track_bytes)
    measured = (result.seek_time_s[short] - result.seek_baseline_s).mean()
    truth = sim.positioning_time_s(result.seek_from_bytes[short], result.seek_to_bytes[short]).mean()
    se = result.rotation_period_s / np.sqrt(12 * short.sum())
    assert short.sum() > 100 and abs(measured - truth) < 3 * se
    starts = result.seek_from_bytes[result.seek_designed]
    assert starts.min() < 0.02 * sim.size_bytes and starts.max() > 0.98 * sim.size_bytes
    deciles = np.histogram(starts, bins=10, range=(0, sim.size_bytes))[0]
    assert deciles.min() > 0.3 * deciles.mean()
    # the long-seek end of the measured curve agrees with the true seek at that distance
    far = int(table[-1, 0]) // 512 * 512
    assert table[-1, 1] == pytest.approx(float(sim.positioning_time_s(0, far)), rel=0.05)


# ---------------------------------------------------------------------------
# Result object
# ---------------------------------------------------------------------------

def test_result_json_round_trip_and_contents(g4_run, tmp_path):
    _, result, _ = g4_run
    path = tmp_path / "r.json"
    text = calibration_to_json(result, path)
    data = json.loads(text)
    for key in ("rotation_period_s", "seek_curve_table", "seek_fit", "zones", "device_time_s", "checks"):
        assert key in data
    assert data["seek_fit"]["model"] == "two_piece"
    assert data["format_version"] == 3
    # the drive's figures, each null with a reason where not visible, each with its status
    for key in ("head_switch_s", "track_skew_fraction", "cylinder_skew_fraction", "surfaces",
                "command_overhead_s"):
        assert key in data and data["detail"][key]["status"] in ("measured", "estimated", "not visible")
        assert (data[key] is None) == (data["detail"][key]["status"] == "not visible")
    assert data["read_ahead"] == {"detected": False, "segment_bytes": None, "segments": None}
    assert data["detail"]["rotation_period_s"]["status"] == "measured"
    assert set(data["seek_fit"]["params"]) == {"short_offset_s", "short_sqrt_s", "long_offset_s",
                                               "long_per_cylinder_s", "knee_cylinders"}
    assert data["seek_fit"]["bse"]["short_offset_s"] > 0
    zones = data["zones"]
    assert zones[0]["start_byte"] == 0 and zones[-1]["end_byte"] == result.size_bytes
    assert all(a["end_byte"] == b["start_byte"] for a, b in zip(zones, zones[1:]))
    assert {c["name"] for c in data["checks"]} == {"reads_reached_device", "written_data", "timer_resolution",
                                                   "queue_depth_one", "repeatability", "plausibility"}
    again = calibration_from_json(path)
    assert again.params.equals(result.params)
    assert again.zones == result.zones
    assert again.seek_curve_table() == result.seek_curve_table()
    assert [v.to_dict() for v in again.checks] == [v.to_dict() for v in result.checks]
    assert again.surfaces == result.surfaces and again.head_switch_s == result.head_switch_s
    assert again.parameter_status == result.parameter_status
    # a file of format 2 (no drive figures) still reads: the figures are not visible, and say why
    old = {k: v for k, v in data.items() if k not in ("head_switch_s", "track_skew_fraction", "surfaces",
                                                      "cylinder_skew_fraction", "read_ahead",
                                                      "command_overhead_s", "detail")}
    earlier = calibration_from_json(json.dumps(dict(old, format_version=2)))
    assert earlier.surfaces is None and earlier.read_ahead == (None, None, None)
    assert {p.status for p in earlier.parameter_status} == {"not visible"}
    assert earlier.seek_curve_table() == result.seek_curve_table()
    with pytest.raises(ValueError, match="detail.surfaces.status"):
        calibration_from_json(json.dumps(dict(data, detail=dict(data["detail"], surfaces={
            "status": "guessed", "detail": ""}))))
    with pytest.raises(ValueError, match="read_ahead"):
        calibration_from_json(json.dumps({k: v for k, v in data.items() if k != "read_ahead"}))
    with pytest.raises(ValueError, match="text_or_path"):
        calibration_from_json('{"format": "other"}')


def test_params_bse_conf_int_summary_html_plots(g4_run):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, result, _ = g4_run
    p, se, ci = result.params, result.bse, result.conf_int()
    assert p["rotation_period_s"] == pytest.approx(60 / 7200, rel=0.005)
    assert 0 < se["rotation_period_s"] < 1e-4
    name = "seek_long_per_cylinder_s"
    assert ci.loc[name, "lower"] < p[name] < ci.loc[name, "upper"]
    assert "two-piece" in result.summary() and "plausibility" in result.summary()
    assert "<table>" in result._repr_html_()
    ax = result.plot()
    assert ax.get_xscale() == "log" and len(ax.collections) >= 2
    fig, ax2 = plt.subplots()
    assert result.plot_zones(ax=ax2) is ax2
    plt.close("all")


def test_to_disk_predicts_like_the_simulated_truth(g4_run):
    sim, result, _ = g4_run
    disk = result.to_disk()
    assert isinstance(disk, Disk)
    assert disk.rpm == pytest.approx(7200, rel=0.005)
    assert disk.capacity_bytes == pytest.approx(sim.size_bytes, rel=0.01)
    for seek in ("two_piece", "table"):
        model = result.to_disk(seek=seek)
        predicted = expected_random_service_time_s(model, 4096).as_dict()
        truth = expected_random_service_time_s(sim.disk, 4096).as_dict()
        assert predicted["total_s"] == pytest.approx(truth["total_s"], rel=0.05)
    with pytest.raises(ValueError, match="seek"):
        result.to_disk(seek="cubic")
    assert "seek knee" not in dict(disk.estimates)


def test_to_disk_says_when_the_fitted_knee_lies_beyond_the_disk(g4_run):
    """A knee past the last track is representable (short piece everywhere) and is said, not hidden."""
    _, result, _ = g4_run
    two_piece = dataclasses.replace(result.two_piece,
                                    parameters=result.two_piece.parameters.evolve(knee_cylinders=1e12))
    beyond = dataclasses.replace(result, two_piece=two_piece)   # the fits are fields: replaced as given
    params = two_piece.params
    disk = beyond.to_disk()
    cylinders = disk.geometry.cylinders
    assert disk.seek.knee_cylinders == cylinders - 1
    note = dict(disk.estimates)["seek knee"]
    assert "1e+12" in note and str(cylinders) in note
    d = np.array([1.0, 100.0, cylinders - 1.0])
    # the fit's distance is in the calibration's tracks (rate * T_rot bytes, at the sustained rate); one of
    # the disk's cylinders holds surfaces * (1 + w) of them, w the mean skew of a track change [rev]
    s = result.surfaces
    w = ((s - 1) * (result.track_skew_fraction or 0.0) + result.cylinder_skew_fraction) / s
    short = params["short_offset_s"] + params["short_sqrt_s"] * np.sqrt(d * s * (1 + w))
    np.testing.assert_allclose(disk.seek.seek_time_s(d), short, rtol=1e-12)


# ---------------------------------------------------------------------------
# No mechanical seek
# ---------------------------------------------------------------------------

def test_flash_like_backend_is_reported_flat():
    result = calibrate(FlashLike(), budget_s=10.0, progress=False)
    assert result.rotation_period_s is None
    assert not result.mechanical_seek
    assert result.two_piece is None
    assert result.seek_fit.model == "flat"
    lm = result.latency_model
    assert lm.mean_s == pytest.approx(80e-6 * np.exp(0.02) + 4096 / 900e6, rel=0.05)
    assert 1 / lm.per_byte_s == pytest.approx(900e6, rel=0.05)
    verdict = {v.name: v for v in result.checks}["plausibility"]
    assert verdict.passed is True and "no mechanical seek" in verdict.detail
    data = json.loads(calibration_to_json(result))
    assert data["rotation_period_s"] is None and data["seek_fit"]["model"] == "flat"
    with pytest.raises(ValueError, match="no mechanical seek"):
        result.to_disk()
    with pytest.raises(ValueError, match="two_piece"):
        result.mean_random_seek_time_s("two_piece")


# ---------------------------------------------------------------------------
# Fitters
# ---------------------------------------------------------------------------

def test_two_piece_fit_recovers_known_parameters():
    rng = np.random.default_rng(1)
    d = np.repeat(np.unique(np.geomspace(1, 10_000, 60).round()), 30)
    truth = np.where(d <= 600, 1e-3 + 2e-4 * np.sqrt(d), 4.5e-3 + 1e-6 * d)
    y = truth + rng.uniform(-2e-3, 2e-3, d.size)  # rotational noise: uniform, like a real pair's wait
    y[rng.random(d.size) < 0.01] += 0.02  # outliers
    fit = fit_two_piece(d, y, distance_unit="cylinders")
    assert 400 <= fit.params["knee_cylinders"] <= 900
    ci = fit.conf_int()
    for name, value in (("short_offset_s", 1e-3), ("short_sqrt_s", 2e-4), ("long_offset_s", 4.5e-3),
                        ("long_per_cylinder_s", 1e-6)):
        assert ci.loc[name, "lower"] - 2 * fit.bse[name] < value < ci.loc[name, "upper"] + 2 * fit.bse[name]
        assert fit.params[name] == pytest.approx(value, rel=0.25)
    assert fit.diagnostics["n"] == d.size
    assert 1.5 < fit.diagnostics["durbin_watson"] < 2.5
    seek = fit.as_seek()
    assert seek.seek_time_s(100) == pytest.approx(1e-3 + 2e-4 * 10, rel=0.05)
    wls = fit_two_piece(d, y, method="wls")
    assert wls.params["long_per_cylinder_s"] == pytest.approx(1e-6, rel=0.3)
    # continuous by default: both pieces meet at the knee; the free form need not
    p = fit.params
    assert p["short_offset_s"] + p["short_sqrt_s"] * np.sqrt(p["knee_cylinders"]) == pytest.approx(
        p["long_offset_s"] + p["long_per_cylinder_s"] * p["knee_cylinders"], rel=1e-9)
    free = fit_two_piece(d, y, continuous=False)
    assert not free.continuous and free.params["long_per_cylinder_s"] == pytest.approx(1e-6, rel=0.3)
    pred, lo, hi = fit.predict_band(np.array([10.0, 5000.0]))
    assert np.all(lo < pred) and np.all(pred < hi) and np.all(hi - lo < 1e-3)


def test_fit_input_errors():
    with pytest.raises(ValueError, match="distance"):
        fit_two_piece([0, 1, 2, 3, 4, 5, 6], np.ones(7))
    with pytest.raises(ValueError, match="distinct"):
        fit_two_piece([1, 1, 2, 2], [1, 1, 2, 2])
    with pytest.raises(ValueError, match="method"):
        fit_two_piece(np.arange(1, 20), np.arange(1, 20), method="lasso")
    with pytest.raises(ValueError, match="finite"):
        fit_two_piece([1, 2, np.nan], [1, 2, 3])


def test_table_fit_and_flat_test():
    rng = np.random.default_rng(2)
    d = np.repeat(np.geomspace(10, 1e6, 20).round(), 50)
    y = 1e-3 + 1e-5 * np.sqrt(d) + rng.normal(0, 1e-4, d.size)
    table = fit_table(d, y)
    assert table.distance.size == 20 and np.all(table.count == 50)
    assert table.predict(np.array([0.0]))[0] == 0.0
    assert table.predict(d[:1])[0] == pytest.approx(1e-3 + 1e-5 * np.sqrt(d[0]), abs=1e-4)
    assert not flatness_test(d, y).flat
    # physical: the count-weighted least-squares curve that is >= 0 and non-decreasing (a seek time)
    dips = np.array([1.0, 2.0, 3.0, 4.0])
    physical = fit_table(np.repeat(dips, [3, 1, 1, 2]), [-1e-3, -1e-3, -1e-3, 2e-3, 1e-3, 4e-3, 4e-3],
                         physical=True)
    np.testing.assert_allclose(physical.mean_s, [0.0, 1.5e-3, 1.5e-3, 4e-3])
    np.testing.assert_allclose(fit_table(d, y, physical=True).mean_s, table.mean_s)  # already physical
    flat = flatness_test(d, 60e-6 + rng.normal(0, 5e-6, d.size))
    assert flat.flat and flat.rise_s < 1e-3


def test_fit_zones_finds_change_points():
    rng = np.random.default_rng(3)
    loc = np.arange(300.0)
    truth = np.where(loc < 100, 100e6, np.where(loc < 220, 90e6, 70e6))
    zones = fit_zones(loc, truth * (1 + rng.normal(0, 0.002, loc.size)))
    assert [int(s.min()) for s in zones.segments] == [0, 100, 220]
    np.testing.assert_allclose(zones.params.to_numpy(), [100e6, 90e6, 70e6], rtol=0.002)
    # the standard error of a zone's rate: 0.2 % noise over its locations
    np.testing.assert_allclose(zones.bse.to_numpy() / zones.params.to_numpy(),
                               0.002 / np.sqrt([100, 120, 80]), rtol=0.25)
    with pytest.raises(ValueError, match="rate"):
        fit_zones([0, 1], [1.0, -1.0])


@pytest.mark.parametrize("quantum", [0.005, 0.01, 0.02])
def test_fit_zones_rarely_splits_one_zone_of_quantised_rates_with_delayed_reads(quantum):
    # no step: rates quantised by the track changes a read crosses (three levels), two reads in forty delayed;
    # the merge test's family-wise level is 5 %: at most that share of profiles may show a false zone
    rng = np.random.default_rng(2)
    false = 0
    for _ in range(200):
        y = np.exp(rng.choice([0.0, -quantum, quantum], 40, p=[0.5, 0.3, 0.2]) + rng.normal(0.0, 0.002, 40))
        y[rng.integers(0, 40, 2)] *= np.exp(-0.045)
        false += len(fit_zones(np.arange(40.0), 5e7 * y, min_size=2, monotone=True).segments) > 1
    assert false <= 10, false


# ---------------------------------------------------------------------------
# Backends from MODULE:FACTORY, CLI
# ---------------------------------------------------------------------------

def write_module(tmp_path, monkeypatch, name, body):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)


def test_backend_from_spec(tmp_path, monkeypatch):
    write_module(tmp_path, monkeypatch, "my_backends", """
        from diskmodel.calibrate.harness.simulated import simulated_disk

        def make():
            return simulated_disk("hp97560", seed=3)

        class NoRead:
            size_bytes = 4096
            block_size_bytes = 512

        def no_read():
            return NoRead()

        def odd_size():
            b = NoRead(); b.size_bytes = 1000; b.read = lambda o, n: 0.0
            return b
        """)
    backend = backend_from_spec("my_backends:make")
    assert backend.size_bytes == 1962 * 19 * 72 * 512
    with pytest.raises(BackendProtocolError, match="read"):
        backend_from_spec("my_backends:no_read")
    with pytest.raises(BackendProtocolError, match="multiple"):
        backend_from_spec("my_backends:odd_size")
    with pytest.raises(BackendProtocolError, match="MODULE:FACTORY"):
        backend_from_spec("my_backends")
    with pytest.raises(BackendProtocolError, match="cannot import"):
        backend_from_spec("no_such_module_xyz:make")
    with pytest.raises(BackendProtocolError, match="has no"):
        backend_from_spec("my_backends:missing")
    with pytest.raises(BackendProtocolError, match="size_bytes"):
        check_backend(object())


def test_cli_backend_and_errors(tmp_path, monkeypatch, capsys):
    write_module(tmp_path, monkeypatch, "flash_backend", f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_calibrate import FlashLike

        def make():
            return FlashLike(size_bytes=1 << 28)
        """)
    out = tmp_path / "flash.json"
    assert cli.main(["calibrate", "--backend", "flash_backend:make", "--budget-s", "5", "--json", str(out),
                     "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert data["rotation_period_s"] is None and data["mechanical_seek"] is False
    assert "no mechanical seek" in capsys.readouterr().out
    assert cli.main(["calibrate", "--backend", "nope_module:make"]) == 2
    assert "cannot import" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["calibrate", "--simulated", "hp97560", "--budget-s", "-1"])
    assert cli.main(["calibrate", "--simulated", "no_such_preset", "--no-progress"]) == 2
    assert "preset" in capsys.readouterr().err
    assert cli.main(["calibrate", str(tmp_path), "--no-progress"]) == 2
    assert "directory" in capsys.readouterr().err


def test_cli_simulated_disksim_folder(disksim_dir, tmp_path, capsys):
    out = tmp_path / "g4.json"
    assert cli.main(["calibrate", "--simulated", str(disksim_dir / "G4_4TB"), "--budget-s", "30",
                     "--json", str(out), "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert data["rotation_period_s"] == pytest.approx(60 / 7200, rel=0.005)
    assert data["device_time_s"] <= 30
    assert data["seek_curve_table"][-1][0] > 3e12
    assert "mechanical seek: yes" in capsys.readouterr().out


# ---------------------------------------------------------------------------
# This machine's real storage (flash-backed virtio): no mechanical seek
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def written_file():
    folder = tempfile.mkdtemp(prefix="diskmodel-calibrate-", dir="/work")
    path = os.path.join(folder, "data.bin")
    try:
        with open("/dev/urandom", "rb") as src, open(path, "wb") as dst:
            for _ in range(512):
                dst.write(src.read(1 << 20))
            dst.flush()
            os.fsync(dst.fileno())
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert not os.path.exists(folder)


def assert_no_mechanical_seek(result, wall_s):
    assert wall_s < 180
    assert result.rotation_period_s is None
    assert result.mechanical_seek is False
    assert result.seek_fit.model == "flat"
    verdicts = {v.name: v for v in result.checks}
    assert verdicts["plausibility"].passed is True
    assert "no mechanical seek" in verdicts["plausibility"].detail
    assert verdicts["written_data"].passed is True
    assert verdicts["queue_depth_one"].passed is True
    assert verdicts["timer_resolution"].passed is True
    lm = result.latency_model
    assert 5e-6 < lm.p50_s < 5e-3  # tens of microseconds on this machine's storage
    assert data_ok(json.loads(calibration_to_json(result)))


def data_ok(data):
    return data["rotation_period_s"] is None and data["seek_fit"]["model"] == "flat" and data["zones"]


@pytest.mark.integration
@pytest.mark.slow
def test_real_file_has_no_mechanical_seek(written_file):
    from diskmodel.calibrate.harness.device import open_backend

    start = time.perf_counter()
    with open_backend(written_file) as backend:
        result = calibrate(backend, budget_s=15.0, path=written_file, progress=False)
    assert_no_mechanical_seek(result, time.perf_counter() - start)
    assert {v.name: v for v in result.checks}["reads_reached_device"].passed in (True, None)
    # The flat latency model as a Disk: no seek, a 4 KiB read costs the measured mean latency.
    from diskmodel.model import service_time_s

    disk = result.to_disk(seek="flat")
    four_k = service_time_s(disk, 1 << 20, result.block_size_bytes, 0)
    assert float(four_k.seek_s) == 0.0
    # the latency, plus the stand-in rotation's mean of half a sector's transfer (flat_latency_disk)
    assert float(four_k.rotation_s) == pytest.approx(256 * result.latency_model.per_byte_s, rel=1e-9)
    assert float(four_k.total_s - four_k.rotation_s) == pytest.approx(result.latency_model.mean_s, rel=0.01)
    with pytest.raises(ValueError, match="no mechanical seek"):
        result.to_disk()


@pytest.mark.integration
@pytest.mark.slow
def test_real_loop_device_has_no_mechanical_seek(written_file, request):
    require_root()
    require_tools("losetup")
    from diskmodel.calibrate.harness.device import open_backend

    loop = subprocess.run(["losetup", "--find", "--show", "--read-only", "--direct-io=on", written_file],
                          check=True, capture_output=True, text=True).stdout.strip()

    def detach():
        subprocess.run(["losetup", "--detach", loop], check=False)
        left = subprocess.run(["losetup", "--associated", written_file], capture_output=True, text=True).stdout
        assert left.strip() == "", f"loop device left behind: {left}"

    request.addfinalizer(detach)
    start = time.perf_counter()
    with open_backend(loop) as backend:
        result = calibrate(backend, budget_s=15.0, path=loop, progress=False)
    assert_no_mechanical_seek(result, time.perf_counter() - start)
    assert {v.name: v for v in result.checks}["reads_reached_device"].passed is True


class SlowHost(FlashLike):
    """Reports tiny read times but takes real time: the budget must bound the wall time."""

    def read_many(self, offsets, length_bytes):
        time.sleep(2e-4 * len(offsets))
        return np.full(len(offsets), 1e-6) + self.rng.normal(0, 1e-8, len(offsets))


@pytest.mark.serial  # asserts a wall time
def test_budget_bounds_the_wall_time_of_a_real_style_backend():
    start = time.perf_counter()
    result = calibrate(SlowHost(), budget_s=1.5, progress=False)
    wall = time.perf_counter() - start
    assert wall < 4.0
    assert result.device_time_s < 0.1  # the device time is still the sum of the read times


def test_partition_rates(g4_run):
    sim, result, _ = g4_run
    rows = result.partition_rates([{"name": "p1", "start_bytes": 1 << 20, "size_bytes": 10**12},
                                   {"name": "p2", "start_bytes": 3 * 10**12, "size_bytes": 9 * 10**11}])
    assert rows[0]["rate_at_start_bytes_per_s"] == pytest.approx(sim.rate_at_bytes(1 << 20), rel=0.01)
    assert rows[1]["rate_at_middle_bytes_per_s"] == pytest.approx(sim.rate_at_bytes(3 * 10**12 + 45 * 10**10),
                                                                  rel=0.03)
    with pytest.raises(ValueError, match="offset_bytes"):
        result.rate_at_bytes(result.size_bytes)


class SeekWithoutRotation(FlashLike):
    """Latency that grows with distance but shows no rotation: inconsistent for a disk."""

    def __init__(self):
        super().__init__(size_bytes=1 << 34)
        self.head = 0

    def read_many(self, offsets, length_bytes):
        offsets = np.asarray(offsets)
        previous = np.concatenate(([self.head], offsets[:-1]))
        self.head = int(offsets[-1])
        distance = np.abs(offsets - previous) / self.size_bytes
        return 1e-4 + 8e-3 * np.sqrt(distance) + self.rng.normal(0, 2e-5, offsets.size)


def test_inconsistent_device_gets_a_failing_plausibility_verdict():
    result = calibrate(SeekWithoutRotation(), budget_s=20.0, progress=False)
    assert result.rotation_period_s is None
    assert not result.flat_test.flat
    assert not result.mechanical_seek and result.two_piece is None
    verdict = {v.name: v for v in result.checks}["plausibility"]
    assert verdict.passed is False and "no rotation" in verdict.detail
