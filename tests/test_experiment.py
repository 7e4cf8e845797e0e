"""The main job end to end on the built-in simulated disk (no device, no root)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from diskmodel.calibrate.cli import main
from diskmodel.calibrate.experiment import run_experiment

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return run_experiment(tmp_path_factory.mktemp("experiment"), budget_s=60.0, progress=False)


def test_report_folder_holds_plots_tables_and_calibration(report):
    names = {p.name for p in report.out_dir.iterdir()}
    assert {"report.md", "seek_curve.png", "zone_rates.png", "throughput.png",
            "calibration.json", "predictions.csv"} <= names
    for png in ("seek_curve.png", "zone_rates.png", "throughput.png"):
        assert (report.out_dir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (report.out_dir / "report.md").read_text()
    assert "Tables 4-6" in text and "![seek curve](seek_curve.png)" in text
    calibration = json.loads((report.out_dir / "calibration.json").read_text())
    # The simulated WD800BD turns at 7200 rpm: 8.333 ms.
    assert calibration["rotation_period_s"] == pytest.approx(60 / 7200, rel=0.005)


def test_calibrated_disk_matches_the_preset_it_was_measured_from(report):
    from diskmodel.model import load_preset, mean_random_seek_time_s

    assert report.calibration.mechanical_seek
    assert report.disk.rpm == pytest.approx(7200, rel=0.005)
    truth = load_preset("wd800bd")
    assert report.disk.capacity_bytes == pytest.approx(truth.capacity_bytes, rel=0.01)
    rates = report.disk.zone_rates_bytes_per_s()
    assert rates.max() == pytest.approx(truth.zone_rates_bytes_per_s().max(), rel=0.03)
    assert mean_random_seek_time_s(report.disk.seek, report.disk.geometry.cylinders) == pytest.approx(8.9e-3, rel=0.05)


def test_summary_table_covers_the_papers_18_cells(report):
    table = report.summary_table()
    assert len(table) == 18
    assert set(table["layout"]) == {"native", "lvm1", "lvm2"}
    # Table 4, native read: 2,99 MB/s as printed.
    paper = table.set_index(["test", "layout", "operation"])["paper"]
    assert paper[("test1", "native", "read")] == pytest.approx(2.99)
    assert paper[("test2", "lvm2", "write")] == pytest.approx(53.06)
    for column in ("model (fitted on all tests)", "model (test held out)"):
        assert np.all(np.isfinite(table[column])) and np.all(table[column] > 0)
    assert np.isfinite(report.median_held_out_error_pct)


def test_experiment_cli_refuses_a_bad_budget(capsys):
    assert main(["experiment", "--budget-s", "-1", "--no-progress"]) == 2
    assert "--budget-s" in capsys.readouterr().err


def test_calibrated_disk_predicts_the_paper_as_the_preset_does(report, preset_leave_one_test_out):
    """The main job's predictions rest on the calibration; they must match those of the true preset."""
    from diskmodel.model.fit.paper import median_abs_error_pct

    preset_frame, _ = preset_leave_one_test_out
    assert report.median_held_out_error_pct == pytest.approx(median_abs_error_pct(preset_frame), abs=3.0)
    ours = report.held_out.set_index(["test", "layout", "operation"])["predicted_bytes_per_s"]
    truth = preset_frame.set_index(["test", "layout", "operation"])["predicted_bytes_per_s"]
    np.testing.assert_allclose(ours.loc[truth.index], truth, rtol=0.05)
