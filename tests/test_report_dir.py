"""The experiment's report folder (``diskmodel experiment --out``): swapped in whole, or not at all.

The measurement side is made cheap: the calibration is a real one of a fast
recording backend, made once per module, and the paper's fit and predictions
are small fixed tables (what is tested is the folder, not the model). Signals
are real: the run sends SIGINT or SIGTERM to itself while it writes the report.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from _helpers import assert_one_error_line
from conftest import require_root, require_tools
from diskmodel.calibrate import cli
from diskmodel.calibrate import experiment as E
from diskmodel.calibrate.harness import outputs


@pytest.fixture(autouse=True)
def run_dir(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("runstate")
    monkeypatch.setenv("DISKMODEL_RUN_DIR", str(folder))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    return folder


class _Fast:
    """A backend that answers at once: a flat, cheap calibration."""

    size_bytes = 1 << 28
    block_size_bytes = 4096

    def read(self, offset_bytes, length_bytes):
        return 2e-3 + length_bytes / 1e8


def _frame() -> pd.DataFrame:
    rows = [{"test": test, "layout": layout, "operation": operation, "measured_bytes_per_s": 1e6,
             "predicted_bytes_per_s": 1.1e6, "error_pct": 10.0}
            for test in ("test1", "test2", "test3") for layout in ("native", "lvm1", "lvm2")
            for operation in ("read", "write")]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A pickle of (calibration as JSON, comparison, held out) for the patched runs."""
    import warnings

    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.results import calibration_to_json

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calibration = calibrate(_Fast(), budget_s=4.0, seed=0, progress=False)
    path = tmp_path_factory.mktemp("measured") / "measured.pkl"
    path.write_bytes(pickle.dumps((calibration_to_json(calibration), _frame(), _frame())))
    return path


# Patches the measurement and the paper's fit (names both before and after the change have).
PATCH = """
    import os, pickle, signal, sys, types
    from diskmodel.calibrate import experiment as E
    import diskmodel.calibrate.harness.measure as M
    import diskmodel.calibrate.harness.simulated as S

    def patch(measured, signame=None):
        from diskmodel.calibrate.harness.results import calibration_from_json

        text, comparison, held = pickle.loads(open(measured, "rb").read())
        calibration = calibration_from_json(text)
        if signame:  # a run that differs from the earlier one: a mix of the two would show
            comparison = comparison.assign(predicted_bytes_per_s=comparison["predicted_bytes_per_s"] * 2)
        fit = types.SimpleNamespace(train_tests=("test1", "test2", "test3"), summary=lambda: "the fit")
        M.calibrate = lambda *a, **k: calibration
        S.simulated_disk = lambda *a, **k: None
        E.postmark_results = lambda: None
        E.fit_paper = lambda disk, results: fit
        E.predict_paper = lambda fit, results: comparison
        E.leave_one_test_out = lambda disk, results: (held, None)

        def costs(fit, provenance):  # written after calibration.json and predictions.csv
            if signame:
                os.kill(os.getpid(), getattr(signal, signame))
            return '{"costs": 1}\\n'
        E.costs_to_json = costs
"""


def _patch_here(monkeypatch, measured):
    import diskmodel.calibrate.harness.measure as M
    import diskmodel.calibrate.harness.simulated as S

    for mod, name in ((M, "calibrate"), (S, "simulated_disk"), (E, "postmark_results"), (E, "fit_paper"),
                      (E, "predict_paper"), (E, "leave_one_test_out"), (E, "costs_to_json")):
        monkeypatch.setattr(mod, name, getattr(mod, name))  # restored after the test
    namespace = {}
    exec(textwrap.dedent(PATCH), namespace)
    namespace["patch"](str(measured))


def _experiment(out, *extra) -> int:
    return cli.main(["experiment", "--out", str(out), "--no-progress", "--budget-s", "4", *map(str, extra)])


def _hashes(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _beside(folder: Path) -> list[str]:
    """Temporary folders left beside the report folder."""
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith("."))


def _earlier_report(tmp_path, monkeypatch, measured, where=None) -> Path:
    _patch_here(monkeypatch, measured)
    out = (where or tmp_path) / "report"
    assert _experiment(out) == 0
    assert outputs.is_experiment_report_dir(out)
    return out


def test_a_mixed_report_folder_is_not_an_earlier_report(tmp_path, monkeypatch, measured, capsys):
    out = _earlier_report(tmp_path, monkeypatch, measured)
    assert set(_hashes(out)) == set(outputs.EXPERIMENT_ENTRIES)
    # What a run cut short over an earlier report used to leave: a new calibration.json by the old report.md.
    calibration = json.loads((out / "calibration.json").read_text())
    calibration["seed"] = 1
    (out / "calibration.json").write_text(json.dumps(calibration))
    assert not outputs.is_experiment_report_dir(out)
    with pytest.raises(outputs.OutputRefused, match="incomplete or changed experiment report.*--force"):
        outputs.check_output_dir(out)
    (out / "manifest.json").unlink()
    with pytest.raises(outputs.OutputRefused, match="--force"):
        outputs.check_output_dir(out)
    # --force replaces it whole
    assert _experiment(out, "--force") == 0
    assert outputs.is_experiment_report_dir(out) and _beside(out) == []


@pytest.mark.slow  # several seconds: the full tier runs it
def test_an_earlier_report_is_replaced_whole_and_other_files_are_kept_with_force(tmp_path, monkeypatch, measured):
    out = _earlier_report(tmp_path, monkeypatch, measured)
    before = (out / "report.md").stat().st_ino
    assert _experiment(out) == 0
    assert (out / "report.md").stat().st_ino != before and outputs.is_experiment_report_dir(out)
    assert set(_hashes(out)) == set(outputs.EXPERIMENT_ENTRIES) and _beside(out) == []
    (out / "notes.txt").write_text("mine")
    with pytest.raises(outputs.OutputRefused, match="other files .*notes.txt.*--force"):
        outputs.check_output_dir(out)
    assert _experiment(out, "--force") == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert outputs.is_experiment_report_dir(out) and _beside(out) == []


@contextlib.contextmanager
def _tmpfs(mnt: Path, options: str):
    require_root()
    require_tools("mount", "umount")
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.integration
@pytest.mark.slow
def test_a_full_file_system_keeps_the_earlier_report_and_names_the_folder(tmp_path, monkeypatch, measured, capsys):
    with _tmpfs(tmp_path / "small", "size=16m") as mnt:
        out = _earlier_report(tmp_path, monkeypatch, measured, where=mnt)
        before = _hashes(out)
        with open(mnt / "filler", "wb", buffering=0) as fh, contextlib.suppress(OSError):
            while True:
                fh.write(b"x" * 65536)
        capsys.readouterr()
        assert _experiment(out) == 1
        err = capsys.readouterr().err
        assert_one_error_line(err, str(out), "No space left on device")
        assert _hashes(out) == before and outputs.is_experiment_report_dir(out)
        assert _beside(out) == []


@pytest.mark.slow
@pytest.mark.parametrize("signame,earlier", [("SIGTERM", True), ("SIGINT", True), ("SIGTERM", False)],
                         ids=["sigterm-over-earlier", "sigint-over-earlier", "sigterm-new"])
def test_a_signal_while_the_report_is_written_leaves_the_earlier_report_or_nothing(
        tmp_path, monkeypatch, measured, run_dir, signame, earlier):
    out = _earlier_report(tmp_path, monkeypatch, measured) if earlier else tmp_path / "report"
    before = _hashes(out) if earlier else None
    script = textwrap.dedent(PATCH) + textwrap.dedent("""
        from diskmodel.calibrate import cli
        patch(sys.argv[1], sys.argv[2])
        sys.exit(cli.main(sys.argv[3:]))
    """)
    res = subprocess.run([sys.executable, "-c", script, str(measured), signame, "experiment", "--out", str(out),
                          "--no-progress", "--budget-s", "4"], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"))
    signum = getattr(signal, signame)
    assert res.returncode == 128 + signum, (res.returncode, res.stderr)
    assert f"interrupted by {signame}" in res.stderr
    if earlier:
        assert _hashes(out) == before and outputs.is_experiment_report_dir(out)
    else:
        assert not out.exists()
    assert _beside(out) == []
    assert [p.name for p in Path(run_dir).glob("*.json")] == []  # the teardown finished the run


def test_a_report_that_cannot_be_written_keeps_its_calibration(tmp_path, monkeypatch, measured, capsys):
    import errno

    from diskmodel.calibrate.harness import report_dir

    _patch_here(monkeypatch, measured)
    real = report_dir._write_file

    def full_at_the_plots(path, data):
        if path.name.endswith(".png"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(report_dir, "_write_file", full_at_the_plots)
    out = tmp_path / "report"
    assert _experiment(out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "No space left on device" in err, err
    kept = Path(err.split("its calibration is kept in ", 1)[1].split()[0].rstrip(";"))
    assert kept.parent == Path(os.environ["XDG_STATE_HOME"]) / "diskmodel" / "unsaved"
    assert json.loads(kept.read_text())["format"] == "diskmodel.calibration"
    assert not out.exists() and _beside(out) == []
