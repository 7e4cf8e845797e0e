"""diskmodel.model.fit: one fitting API, every result on one base; one residual per PostMark cell;
the frozen calibration result; the WD800BD preset's seek coefficients solved from its spec."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

import diskmodel.model.fit as fit_api
from diskmodel.model.filesystems.filesystem import FileSystem, PageCache
from diskmodel.model.fit import (Case, FitResult, Parameter, Parameters, PostMarkFit, fit_calibration,
                                 fit_flat_latency, fit_io_parameters, fit_table, fit_two_piece, fit_zones,
                                 flatness_test, solve_two_piece_seek_from_spec)
from diskmodel.model.predict import predict
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.stacks.stack import paper_stack, stack_on
from diskmodel.model.predictions.workload import PostMarkConfig, expected_counts

Z95 = 1.959963984540054


# ---------------------------------------------------------------- one API

def test_every_fitter_is_importable_from_the_package():
    for name in ("fit_two_piece", "fit_table", "fit_flat_latency", "flatness_test", "fit_zones", "fit_io_parameters",
                 "fit_lvm_mapping", "fit_calibration", "solve_two_piece_seek_from_spec", "FitResult", "Parameter",
                 "Parameters", "CalibrationResult", "PostMarkFit", "TwoPieceFit", "TableFit", "FlatnessTest",
                 "FlatLatencyFit", "ZoneFit", "Case"):
        assert name in fit_api.__all__ and hasattr(fit_api, name), name


def test_every_fit_function_of_the_model_is_exported_by_the_fit_package():
    """Every fitter of model/fit/ is exported by the package; the paper's fitters live in model.paper, which builds
    on the package (and is not imported back by it: no cycle)."""
    import importlib
    import inspect
    import pkgutil

    import diskmodel.model as model
    import diskmodel.model.fit.paper as paper

    found = {}
    for info in pkgutil.walk_packages(model.__path__, "diskmodel.model."):
        if info.name.endswith(".__main__"):  # a command (python -m diskmodel.model._jit), not a library module
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.startswith("fit_") and inspect.isfunction(value) and value.__module__ == info.name:
                found[name] = value
    assert {"fit_two_piece", "fit_file_system_costs", "fit_paper", "fit_calibration"} <= set(found)
    for name, function in found.items():
        if function.__module__ == "diskmodel.model.fit.paper":
            assert name not in fit_api.__all__, name
            continue
        assert function.__module__.startswith("diskmodel.model.fit."), (name, function.__module__)
        assert name in fit_api.__all__ and getattr(fit_api, name) is function, name
    for name in ("leave_one_out", "FsCase", "SyncWrites", "SequentialWrite"):
        assert name in fit_api.__all__, name
    assert callable(paper.leave_one_test_out) and isinstance(paper.PaperFit, type)
    assert all(hasattr(fit_api, name) for name in fit_api.__all__)


def _seek_data():
    rng = np.random.default_rng(1)
    d = np.repeat(np.unique(np.geomspace(1, 10_000, 60).round()), 30)
    y = np.where(d <= 600, 1e-3 + 2e-4 * np.sqrt(d), 4.5e-3 + 1e-6 * d) + rng.uniform(-2e-3, 2e-3, d.size)
    return d, y


def _results():
    d, y = _seek_data()
    rng = np.random.default_rng(3)
    loc = np.arange(300.0)
    rate = np.where(loc < 100, 100e6, np.where(loc < 220, 90e6, 70e6)) * (1 + rng.normal(0, 0.002, loc.size))
    return {
        "two_piece": fit_two_piece(d, y, distance_unit="cylinders"),
        "table": fit_table(d, y),
        "flatness_test": flatness_test(d, y),
        "flat": fit_flat_latency(60e-6 + rng.normal(0, 5e-6, 200), 1e-9),
        "zones": fit_zones(loc, rate),
        "postmark": PostMarkFit(Parameters([Parameter("md_mapping_s", 2e-4, 0.0, 1.0, "s"),
                                            Parameter("fb_mapping_s", 3e-5, 0.0, 1.0, "s")]),
                                np.array([[4e-10, -1e-11], [-1e-11, 9e-12]]), np.array([0.01, -0.02, 0.005]),
                                ("a", "b", "c"), 1.0, True, "converged"),
    }


@pytest.mark.parametrize("kind", ["two_piece", "table", "flatness_test", "flat", "zones", "postmark"])
def test_every_result_offers_the_base(kind):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = _results()[kind]
    assert isinstance(result, FitResult) and result.model == kind
    p, se, ci, cov = result.params, result.bse, result.conf_int(), result.cov_params()
    assert isinstance(p, pd.Series) and isinstance(se, pd.Series) and list(se.index) == list(p.index)
    assert isinstance(ci, pd.DataFrame) and list(ci.columns) == ["lower", "upper"] and list(ci.index) == list(p.index)
    assert isinstance(cov, pd.DataFrame) and cov.shape == (len(p), len(p))
    np.testing.assert_allclose(se.to_numpy() ** 2, np.diag(cov.to_numpy()), equal_nan=True)
    # the normal-approximation interval, written once for every result
    np.testing.assert_allclose(ci["lower"].to_numpy(), (p - Z95 * se).to_numpy(), equal_nan=True)
    np.testing.assert_allclose(ci["upper"].to_numpy(), (p + Z95 * se).to_numpy(), equal_nan=True)
    assert result.nobs > 0 and isinstance(result.df_resid, float)
    assert p.index[0] in result.summary() and "<table" in result._repr_html_()
    assert result.plot() is not None
    plt.close("all")
    # to_dict is JSON-safe and from_dict gives the same result back
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    again = FitResult.from_dict(data)
    assert type(again) is type(result)
    pd.testing.assert_series_equal(again.params, p)
    pd.testing.assert_series_equal(again.bse, se)


def test_conf_int_numbers_and_alpha():
    result = _results()["postmark"]
    ci = result.conf_int(alpha=0.1)
    assert ci.loc["md_mapping_s", "lower"] == pytest.approx(2e-4 - 1.6448536269514722 * 2e-5, rel=1e-12)
    assert ci.loc["fb_mapping_s", "upper"] == pytest.approx(3e-5 + 1.6448536269514722 * 3e-6, rel=1e-12)
    for alpha in (0.0, 1.0, math.nan, "0.05"):
        with pytest.raises(ValueError, match="alpha"):
            result.conf_int(alpha=alpha)


def test_parameters_have_bounds_units_and_are_checked():
    p = Parameter("knee_cylinders", 4638.0, 0.0, math.inf, "cylinders")
    assert (p.lower, p.upper, p.unit, p.vary) == (0.0, math.inf, "cylinders", True)
    with pytest.raises(ValueError, match="value of 'knee_cylinders' must lie within"):
        p.evolve(value=-1.0)
    with pytest.raises(ValueError, match="bounds of 'x'"):
        Parameter("x", 1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="given twice"):
        Parameters([p, p])
    ps = Parameters([p, Parameter("a", 1.0)])
    assert ps.names == ("knee_cylinders", "a") and ps.evolve(a=2.0)["a"].value == 2.0
    with pytest.raises(ValueError, match="unknown parameter"):
        ps.evolve(b=1.0)
    frame = _results()["two_piece"].to_frame()
    assert frame.loc["knee_cylinders", "unit"] == "cylinders"
    assert frame.loc["long_per_cylinder_s", "unit"] == "s/cylinders"
    assert math.isnan(frame.loc["knee_cylinders", "bse"])   # profiled: no standard error


def test_two_piece_parameters_are_named_as_the_seek_model():
    from diskmodel.model.drive.seek import TwoPieceSeek

    fit = _results()["two_piece"]
    assert tuple(fit.params.index) == tuple(f.name for f in dataclasses.fields(TwoPieceSeek))
    seek = fit.as_seek()
    assert dataclasses.asdict(seek) == pytest.approx(fit.params.to_dict())
    d = np.array([1.0, 50.0, 5000.0])
    np.testing.assert_allclose(fit.predict(d), seek.seek_time_s(d), rtol=1e-12)


# ---------------------------------------------------------------- one residual per PostMark cell

@pytest.fixture(scope="module")
def noisy_cells():
    """Native cells whose runs took exp(noise) times the model's elapsed time: read and write share it."""
    disk = load_preset("wd800bd")
    layout = paper_stack("native", disk=disk).volume
    truth = FileSystem(overlapped_writeback=True, file_data_rate_bytes_per_s=3.7e6)
    start = FileSystem(overlapped_writeback=True)
    cache = PageCache(size_bytes=1536 * 2**20)
    rng = np.random.default_rng(7)
    cells = []
    for high, files in ((100 * 1024, 2000), (300 * 1024, 1000), (200 * 1024, 1500), (50 * 1024, 3000)):
        wl = expected_counts(PostMarkConfig(number_of_files=files, transactions=4000, min_file_size_bytes=1024,
                                            max_file_size_bytes=high))
        p = predict(stack_on(disk, layout, truth), wl, cache)
        slower = math.exp(rng.normal(0.0, 0.05))
        cells.append((disk, layout, wl, p.read_throughput_bytes_per_s / slower,
                       p.write_throughput_bytes_per_s / slower, start, cache))
    return cells


def _io_fit(cells, *, read: bool, write: bool):
    cases = [Case(d, l, wl, r if read else None, w if write else None, filesystem=fs, cache=c, label=str(i))
             for i, (d, l, wl, r, w, fs, c) in enumerate(cells)]
    return fit_io_parameters(cases, parameters=("file_data_rate_bytes_per_s",))


@pytest.mark.slow  # several seconds: the full tier runs it
def test_a_cells_read_and_write_count_once(noisy_cells):
    """Read and write throughput of a cell are bytes over one elapsed time: measuring both adds no
    information, so the fit and its standard error must not change (two residuals a cell made the
    standard error sqrt((n - p) / (2n - p)) times too small: 0.65 here)."""
    read_only = _io_fit(noisy_cells, read=True, write=False)
    write_only = _io_fit(noisy_cells, read=False, write=True)
    both = _io_fit(noisy_cells, read=True, write=True)
    assert both.nobs == read_only.nobs == 4 and both.df_resid == 3.0
    assert both.cells == ("0", "1", "2", "3")
    for single in (read_only, write_only):
        assert both.params["file_data_rate_bytes_per_s"] == pytest.approx(
            single.params["file_data_rate_bytes_per_s"], rel=1e-6)
        assert both.bse["file_data_rate_bytes_per_s"] == pytest.approx(
            single.bse["file_data_rate_bytes_per_s"], rel=1e-4)
    se = both.bse["file_data_rate_bytes_per_s"] / both.params["file_data_rate_bytes_per_s"]
    assert 0.002 < se < 0.2   # the 5 % noise of the elapsed times shows in the standard error


def test_no_standard_error_without_residual_degrees_of_freedom(noisy_cells):
    one = _io_fit(noisy_cells[:1], read=True, write=True)
    assert one.nobs == 1 and one.df_resid == 0.0
    assert one.bse.isna().all()


# ---------------------------------------------------------------- the WD800BD spec

def test_wd800bd_seek_coefficients_are_solved_from_its_spec():
    disk = load_preset("wd800bd")
    solved = solve_two_piece_seek_from_spec(track_to_track_s=2.0e-3, full_stroke_s=21.0e-3, mean_seek_s=8.9e-3,
                                            cylinders=disk.geometry.cylinders)
    preset = disk.seek
    for name in ("short_offset_s", "short_sqrt_s", "long_offset_s", "long_per_cylinder_s"):
        # the preset keeps six significant figures
        assert getattr(solved, name) == pytest.approx(getattr(preset, name), rel=5e-6), name
    assert round(solved.knee_cylinders) == preset.knee_cylinders == 4638
    # the spec, back from the solved curve
    from diskmodel.model.drive.seek import mean_random_seek_time_s

    assert float(solved.seek_time_s(1.0)) == pytest.approx(2.0e-3, rel=1e-12)
    assert float(solved.seek_time_s(disk.geometry.cylinders - 1.0)) == pytest.approx(21.0e-3, rel=1e-12)
    assert mean_random_seek_time_s(solved, disk.geometry.cylinders) == pytest.approx(8.9e-3, rel=1e-9)
    with pytest.raises(ValueError, match="mean_seek_s"):
        solve_two_piece_seek_from_spec(2.0e-3, 21.0e-3, 20.0e-3, 93600)
    with pytest.raises(ValueError, match="cylinders"):
        solve_two_piece_seek_from_spec(2.0e-3, 21.0e-3, 8.9e-3, 2)


# ---------------------------------------------------------------- the frozen calibration result

@pytest.fixture(scope="module")
def calibration():
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.simulated import simulated_disk

    return calibrate(simulated_disk("wd800bd", seed=0), budget_s=20, progress=False)


def test_calibration_result_is_frozen(calibration):
    with pytest.raises(dataclasses.FrozenInstanceError):
        calibration.rotation_period_s = 1.0
    with pytest.raises(ValueError, match="read-only"):
        calibration.seek_time_s[0] = 0.0
    assert isinstance(calibration.checks, tuple)
    assert [c.name for c in calibration.checks].count("plausibility") == 1


def test_fit_calibration_of_the_measurements_gives_the_result_again(calibration):
    for again in (fit_calibration(calibration.measurements),
                  FitResult.from_dict(json.loads(json.dumps(calibration.to_dict(), allow_nan=False)))):
        assert type(again) is type(calibration)
        pd.testing.assert_series_equal(again.params, calibration.params)
        pd.testing.assert_series_equal(again.bse, calibration.bse)
        assert [c.to_dict() for c in again.checks] == [c.to_dict() for c in calibration.checks]
    assert calibration.params.index[:2].tolist() == ["rotation_period_s", "overhead_s"]
    assert "seek_long_per_cylinder_s" in calibration.params.index
    # evolve changes measurements and fits again: seeks twice as slow, a slope twice as steep
    slower = calibration.evolve(seek_time_s=calibration.seek_baseline_s
                                + 2 * (calibration.seek_time_s - calibration.seek_baseline_s))
    assert slower.params["seek_long_per_cylinder_s"] == pytest.approx(
        2 * calibration.params["seek_long_per_cylinder_s"], rel=1e-6)
    with pytest.raises(ValueError, match="unknown"):
        calibration.evolve(two_piece=None)


def test_a_version_1_calibration_file_is_read(calibration):
    from diskmodel.calibrate.harness.results import (calibration_from_dict, calibration_to_dict,
                                                     validate_calibration_dict)

    data = json.loads(json.dumps(calibration_to_dict(calibration)))
    assert data["format_version"] == 3
    old = dict(data, format_version=1)
    fit = dict(old["seek_fit"])
    fit["params"] = {"short_offset_s": 1e-3, "short_sqrt_s": 1e-4, "long_offset_s": 3e-3, "long_slope_s": 1e-9,
                     "knee": 5000.0}   # version 1 named them so; derived keys are never read back
    old["seek_fit"] = fit
    assert validate_calibration_dict(old, "old.json") == 1
    read = calibration_from_dict(old, source="old.json")
    pd.testing.assert_series_equal(read.params, calibration.params)
    with pytest.raises(ValueError, match="format_version 4"):
        calibration_from_dict(dict(data, format_version=4))


# ---------------------------------------------------------------- what a reader of a fit must not miss

def _cost_fit(md_s: float, md_var: float) -> PostMarkFit:
    return PostMarkFit(Parameters([Parameter("md_mapping_s", md_s, 0.0, 1.0, "s"),
                                   Parameter("fb_mapping_s", 3e-5, 0.0, 1.0, "s")]),
                       np.array([[md_var, 0.0], [0.0, 9e-12]]), np.array([0.01, -0.02, 0.005]),
                       ("a", "b", "c"), 1.0, True, "converged")


def test_a_cost_interval_never_goes_negative_and_says_it_was_cut():
    fit = _cost_fit(1e-5, (2e-5) ** 2)   # 1e-5 - 1.96 * 2e-5 < 0: a negative cost, outside its bound
    ci = fit.conf_int()
    assert ci.loc["md_mapping_s", "lower"] == 0.0
    assert ci.loc["md_mapping_s", "upper"] == pytest.approx(1e-5 + Z95 * 2e-5, rel=1e-12)
    frame = fit.to_frame()
    assert frame.loc["md_mapping_s", "note"] == "interval cut at its bound"
    assert frame.loc["fb_mapping_s", "note"] == ""
    assert "interval cut at its bound" in fit.summary()


def test_a_parameter_on_its_bound_without_a_standard_error_is_flagged():
    fit = _cost_fit(0.0, math.nan)
    assert fit.to_frame().loc["md_mapping_s", "note"] == "on its bound: no standard error"
    assert "on its bound: no standard error" in fit.summary()
    assert "on its bound" in fit._repr_html_()


def test_two_piece_plot_draws_the_points_it_fitted():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d, y = _seek_data()
    fit = fit_two_piece(d, y, distance_unit="cylinders")
    ax = fit.plot()
    (points,) = ax.collections[:1]
    offsets = np.asarray(points.get_offsets())
    distinct = np.unique(d)
    assert offsets.shape == (distinct.size, 2)
    np.testing.assert_allclose(offsets[:, 0], distinct)
    np.testing.assert_allclose(offsets[:, 1], [np.mean(y[d == v]) * 1e3 for v in distinct], rtol=1e-12)
    again = FitResult.from_dict(json.loads(json.dumps(fit.to_dict(), allow_nan=False)))
    pd.testing.assert_frame_equal(again.points, fit.points, check_dtype=False)
    plt.close("all")


def test_two_piece_knee_is_chosen_among_seek_curves():
    """A square-root curve to 50,000 tracks, then a steep rise over the last few distances: the knee of least
    residual needs a long piece that would start 6 ms below zero at distance 0 (as fitted there), no
    drive's; the knee is taken among those whose every coefficient is at least 0, and the fit is a seek curve."""
    from diskmodel.model.fit.seek import fit_two_piece

    x = np.repeat(np.unique(np.geomspace(2, 60000, 48).round()), 4)
    y = np.where(x <= 50000, 1e-3 + 3e-5 * np.sqrt(x), 1e-3 + 3e-5 * np.sqrt(50000) + 1e-6 * (x - 50000))
    y = y + np.tile([-1e-5, 1e-5, -2e-5, 2e-5], x.size // 4)
    fit = fit_two_piece(x, y, distance_unit="tracks")
    least = float(fit.profile.loc[fit.profile["rss"].idxmin(), "knee"])  # the knee the residual alone chooses
    assert least != fit.params["knee_cylinders"]
    assert fit_two_piece(x, y, distance_unit="tracks", knees=[least]).params["long_offset_s"] < -0.005
    assert fit.params["long_offset_s"] >= 0 and fit.params["long_per_cylinder_s"] >= 0
    fit.as_seek(1.0)  # raises for a negative coefficient
    # the curve still holds the data where the square root does
    short = x <= 10000
    assert np.max(np.abs(fit.predict(x[short]) - y[short])) < 0.2e-3


def test_seek_fits_refuse_no_samples_and_an_unknown_distance_unit():
    # an empty fit raised numpy's "zero-size array to reduction operation maximum", and any distance_unit was
    # taken ("furlongs"); negative times stay allowed: a calibration's derived seek times dip below 0 with noise
    d, y = np.arange(1, 9), np.linspace(1e-3, 8e-3, 8)
    with pytest.raises(ValueError, match=r"^distance and seek_time_s must hold at least one sample \(got none\)"):
        fit_two_piece([], [])
    for fit in (fit_two_piece, fit_table):
        with pytest.raises(ValueError, match="^distance_unit = 'furlongs' must be one of bytes, tracks, cylinders"):
            fit(d, y, distance_unit="furlongs")
