"""Output files (issue #16, "Outputs"): checked before the run, never onto what is measured, written atomically.

Every refusal must come before any measurement: the tests use a backend that
records each read in a file (no file: no read), a simulated disk with a budget
that would take many seconds of wall time, or a loop device whose bytes are
compared before and after.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import require_root, require_tools
from _helpers import assert_one_error_line
from diskmodel.calibrate import cli
from diskmodel.calibrate.harness import outputs
from diskmodel.model.units import MIB as MiB

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))

RECORDING_BACKEND = """
    import os
    import shutil

    def _at_first_read():
        # DISKMODEL_TEST_FILL: a file to grow until its file system is full; DISKMODEL_TEST_RMTREE: a folder
        # to remove (what happens to the output's place while a run measures).
        fill = os.environ.get("DISKMODEL_TEST_FILL")
        if fill:
            with open(fill, "ab", buffering=0) as fh:
                try:
                    while True:
                        fh.write(b"x" * 4096)
                except OSError:
                    pass
        if os.environ.get("DISKMODEL_TEST_RMTREE"):
            shutil.rmtree(os.environ["DISKMODEL_TEST_RMTREE"])

    class Recording:
        size_bytes = 1 << 28
        block_size_bytes = 4096

        def read(self, offset_bytes, length_bytes):
            first = not os.path.exists(os.environ["DISKMODEL_TEST_READS"])
            with open(os.environ["DISKMODEL_TEST_READS"], "a") as fh:
                fh.write(f"{offset_bytes}\\n")
            if first:
                _at_first_read()
            return float(os.environ.get("DISKMODEL_TEST_READ_S", "1e-4")) + length_bytes / 1e8

    def make():
        return Recording()
    """


@pytest.fixture(autouse=True)
def run_dir(tmp_path_factory, monkeypatch):
    """Run state and locks of these runs in a folder of their own (not in the cwd the tests watch), and
    results that could not be written kept in a state folder of their own (not in the user's)."""
    folder = tmp_path_factory.mktemp("runstate")
    monkeypatch.setenv("DISKMODEL_RUN_DIR", str(folder))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    return folder


@pytest.fixture
def env(tmp_path_factory, run_dir):
    mods = tmp_path_factory.mktemp("mods")
    (mods / "recbackend.py").write_text(textwrap.dedent(RECORDING_BACKEND))
    reads = tmp_path_factory.mktemp("reads") / "reads.log"
    return dict(os.environ, PYTHONPATH=str(mods), DISKMODEL_TEST_READS=str(reads), DISKMODEL_RUN_DIR=str(run_dir))


def _reads(env) -> bool:
    return Path(env["DISKMODEL_TEST_READS"]).exists()


def run(*args, cwd, env=None, timeout=300):
    started = time.monotonic()
    res = subprocess.run([DISKMODEL, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=timeout)
    res.elapsed_s = time.monotonic() - started
    return res


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def assert_refused(res, *fragments):
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stdout == "", res.stdout  # no summary: nothing ran
    return assert_one_error_line(res.stderr, *fragments)


def no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


# ---------------------------------------------------------------------------- refusals before the run

@pytest.mark.serial  # asserts a wall time
@pytest.mark.slow
def test_json_onto_an_existing_text_file_is_refused_before_any_read(tmp_path, env):
    text = tmp_path / "existing.txt"
    text.write_text("my notes, not a result\n" * 100)
    before = sha256(text)
    res = run("calibrate", "--backend", "recbackend:make", "--json", text, "--no-progress", cwd=tmp_path, env=env)
    line = assert_refused(res, "--json", str(text), "--force")
    assert "not an earlier diskmodel calibration result" in line
    assert sha256(text) == before
    assert not _reads(env), "the backend was read before the refusal"
    # a simulated run with a long budget would take many seconds: the refusal comes at once
    res = run("calibrate", "--simulated", "wd800bd", "--budget-s", "3000", "--json", text, "--no-progress",
              cwd=tmp_path, env=env)
    assert_refused(res, "--json")
    assert res.elapsed_s < 5, res.elapsed_s
    assert sha256(text) == before


@pytest.mark.slow
@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_json_onto_a_directory_is_refused_before_any_read_even_with_force(tmp_path, env, force):
    folder = tmp_path / "results"
    folder.mkdir()
    res = run("calibrate", "--backend", "recbackend:make", "--json", folder, *(["--force"] if force else []),
              "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "--json", "is a directory", "--force does not apply")
    assert list(folder.iterdir()) == []
    assert not _reads(env)


def test_json_into_a_missing_directory_is_refused(tmp_path, env):
    res = run("calibrate", "--backend", "recbackend:make", "--json", tmp_path / "nope" / "r.json", "--no-progress",
              cwd=tmp_path, env=env)
    assert_refused(res, "--json", "does not exist")
    assert not _reads(env)


@pytest.mark.slow  # several seconds: the full tier runs it
def test_json_onto_a_fifo_is_refused(tmp_path, env):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    res = run("calibrate", "--backend", "recbackend:make", "--json", fifo, "--force", "--no-progress",
              cwd=tmp_path, env=env, timeout=30)
    assert_refused(res, "--json", "FIFO")
    assert not _reads(env)


@pytest.mark.slow
def test_json_onto_the_measured_file_is_refused_even_with_force(tmp_path, env):
    from _loopdev import write_random_file

    image = write_random_file(tmp_path / "disk.img", 4 * MiB, seed=3)
    before = sha256(image)
    for extra in ([], ["--force"]):
        res = run("calibrate", image, "--json", image, *extra, "--no-progress", cwd=tmp_path, env=env)
        assert_refused(res, "--json", "the run measures", "--force does not apply")
        # another spelling of the same file
        res = run("calibrate", image, "--json", f"./{image.name}", *extra, "--no-progress", cwd=tmp_path, env=env)
        assert_refused(res, "the run measures")
    assert sha256(image) == before


@pytest.fixture
def loopdev(tmp_path, loops):
    """A loop device over a 4 MiB file of known random data (detached by the fixture, even on failure)."""
    from _loopdev import write_random_file

    require_tools("losetup")
    backing = write_random_file(tmp_path / "backing.img", 4 * MiB, seed=16)
    device = loops.attach(backing)
    return device, backing


@pytest.fixture(params=[False, True], ids=["plain", "force"])
def extra(request) -> list[str]:
    """No flag, then ``--force``: these refusals hold either way."""
    return ["--force"] if request.param else []


@pytest.mark.integration
@pytest.mark.slow
def test_json_onto_a_block_device_is_refused_and_its_data_kept(tmp_path, env, loopdev, extra):
    device, backing = loopdev
    before = sha256(device)
    res = run("calibrate", "--simulated", "wd800bd", "--budget-s", "3000", "--json", device, *extra,
              "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "--json", device, "block device", "--force does not apply")
    assert res.elapsed_s < 5
    res = run("calibrate", "--backend", "recbackend:make", "--json", device, *extra, "--no-progress",
              cwd=tmp_path, env=env)
    assert_refused(res, "block device")
    assert not _reads(env)
    assert sha256(device) == before == sha256(backing)


@pytest.mark.integration
@pytest.mark.slow
def test_calibrating_a_loop_device_onto_itself_or_its_backing_file_is_refused(tmp_path, env, loopdev, extra):
    device, backing = loopdev
    before = sha256(device)
    res = run("calibrate", device, "--json", device, *extra, "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "--json", "the run measures", "--force does not apply")
    res = run("calibrate", device, "--json", backing, *extra, "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "--json", "the run measures")
    assert sha256(device) == before == sha256(backing)


# ---------------------------------------------------------------------------- what is allowed

def _calibrate_simulated(tmp_path, out, *extra, seed=0, env=None):
    return run("calibrate", "--simulated", "wd800bd", "--budget-s", "20", "--seed", seed, "--json", out, *extra,
               "--no-progress", cwd=tmp_path, env=env)


@pytest.mark.slow
def test_json_onto_an_earlier_calibration_overwrites_it(tmp_path, env):
    out = tmp_path / "cal.json"
    res = _calibrate_simulated(tmp_path, out, env=env)
    assert res.returncode == 0, res.stderr
    first = json.loads(out.read_text())
    assert first["format"] == "diskmodel.calibration" and first["format_version"] == 3
    os.chmod(out, 0o640)
    res = _calibrate_simulated(tmp_path, out, seed=1, env=env)
    assert res.returncode == 0, res.stderr
    second = json.loads(out.read_text())
    assert second["seek_samples"] != first["seek_samples"]
    assert (out.stat().st_mode & 0o777) == 0o640  # the mode of the replaced file is kept
    assert no_temp_files(tmp_path)


@pytest.mark.slow
def test_json_onto_a_calibration_of_the_previous_format_overwrites_it(tmp_path, env):
    out = tmp_path / "old.json"
    out.write_text(json.dumps({"format": "diskmodel-calibration/1", "target": "old"}))
    res = _calibrate_simulated(tmp_path, out, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text())["format"] == "diskmodel.calibration"


@pytest.mark.slow
def test_json_onto_a_postmark_result_is_refused_for_a_calibration(tmp_path, env):
    out = tmp_path / "pm.json"
    out.write_text(json.dumps({"format": "diskmodel.postmark", "format_version": 1}))
    before = sha256(out)
    res = run("calibrate", "--backend", "recbackend:make", "--json", out, "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "not an earlier diskmodel calibration result")
    assert sha256(out) == before and not _reads(env)


@pytest.mark.slow
def test_force_overwrites_a_text_file(tmp_path, env):
    text = tmp_path / "notes.txt"
    text.write_text("scratch notes\n")
    res = _calibrate_simulated(tmp_path, text, "--force", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(text.read_text())["format"] == "diskmodel.calibration"
    assert "calibration of" in res.stdout


@pytest.mark.slow
def test_json_dash_is_stdout(tmp_path, env):
    res = _calibrate_simulated(tmp_path, "-", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["format"] == "diskmodel.calibration"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.slow
def test_json_through_a_symlink_replaces_the_file_it_names(tmp_path, env):
    real = tmp_path / "real.json"
    real.write_text(json.dumps({"format": "diskmodel.calibration", "format_version": 1}))
    link = tmp_path / "link.json"
    link.symlink_to(real)
    res = _calibrate_simulated(tmp_path, link, env=env)
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and "seek_samples" in json.loads(real.read_text())


# ---------------------------------------------------------------------------- the lock on the output

@pytest.mark.slow
def test_an_output_another_run_holds_is_refused_naming_its_pid(tmp_path, env):
    from diskmodel.calibrate.harness.locks import lock_target

    out = tmp_path / "cal.json"
    with lock_target(str(out), purpose="output"):
        res = run("calibrate", "--backend", "recbackend:make", "--json", out, "--no-progress", cwd=tmp_path, env=env)
    assert res.returncode != 0
    assert_one_error_line(res.stderr, f"pid {os.getpid()}")
    assert not out.exists() and not _reads(env)


# ---------------------------------------------------------------------------- atomic writes

def test_a_failure_mid_write_leaves_the_earlier_file_and_no_temp_file(tmp_path, monkeypatch):
    out = tmp_path / "cal.json"
    original = json.dumps({"format": "diskmodel.calibration", "format_version": 1, "target": "earlier"})
    out.write_text(original)
    real_write = os.write

    def half_then_full(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs.os, "write", half_then_full)
    with pytest.raises(outputs.OutputWriteError) as info:
        outputs.write_output_atomically(out, json.dumps({"format": "diskmodel.calibration", "x": "y" * 10000}),
                                        kind="calibration")
    assert "No space left on device" in str(info.value) and "--json" in str(info.value)
    assert "\n" not in str(info.value)
    assert out.read_text() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]


def test_an_interrupt_between_write_and_rename_leaves_the_earlier_file(tmp_path, monkeypatch):
    out = tmp_path / "cal.json"
    out.write_text('{"format": "diskmodel.calibration"}')

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_output_atomically(out, "{}", kind="calibration")
    assert out.read_text() == '{"format": "diskmodel.calibration"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]


def test_the_cli_reports_a_failed_write_in_one_line_and_keeps_the_earlier_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "cal.json"
    original = '{"format": "diskmodel.calibration", "format_version": 1}'
    out.write_text(original)

    real_fsync = os.fsync

    def failing_fsync(fd):  # the output's disk fails; the run state's and the kept result's do not
        if os.readlink(f"/proc/self/fd/{fd}").startswith(f"{tmp_path}/"):  # not the run folder beside it
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(outputs.os, "fsync", failing_fsync)
    monkeypatch.setenv("DISKMODEL_RUN_DIR", str(tmp_path.parent / f"{tmp_path.name}-run"))
    code = cli.main(["calibrate", "--simulated", "wd800bd", "--budget-s", "20", "--json", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert assert_one_error_line(err, "Input/output error").startswith("diskmodel: error: --json"), err
    kept = Path(err.split("the result is kept in ", 1)[1].split()[0].rstrip(";"))
    assert json.loads(kept.read_text())["format"] == "diskmodel.calibration"
    assert out.read_text() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]


@contextlib.contextmanager
def _tmpfs(mnt: Path, options: str):
    """A tmpfs with *options* mounted on the new folder *mnt* while the block runs (as root)."""
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
def test_a_full_file_system_is_one_line_and_keeps_the_earlier_file(tmp_path, env):
    with _tmpfs(tmp_path / "small", "size=64k") as mnt:
        earlier = mnt / "cal.json"
        original = '{"format": "diskmodel.calibration", "format_version": 1}'
        earlier.write_text(original)
        res = _calibrate_simulated(tmp_path, earlier, env=env)
        assert res.returncode == 1
        assert_one_error_line(res.stderr, "--json", "No space left on device", "free some space")
        assert earlier.read_text() == original
        assert sorted(p.name for p in mnt.iterdir()) == ["cal.json"]


@pytest.mark.integration
@pytest.mark.slow
def test_a_read_only_directory_is_refused_before_the_run(tmp_path, env):
    with _tmpfs(tmp_path / "ro", "ro,size=64k") as mnt:
        res = run("calibrate", "--backend", "recbackend:make", "--json", mnt / "cal.json", "--no-progress",
                  cwd=tmp_path, env=env)
        assert_refused(res, "--json", "cannot write in the directory")
        assert not _reads(env)


def _fill(folder: Path) -> None:
    """Fill the file system of *folder* (a small tmpfs) with one file."""
    with open(folder / "filler", "wb", buffering=0) as fh:
        with contextlib.suppress(OSError):
            while True:
                fh.write(b"x" * 4096)


def _temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.integration
@pytest.mark.slow
def test_a_full_file_system_is_found_before_anything_is_measured(tmp_path, env):
    with _tmpfs(tmp_path / "full", "size=256k") as mnt:
        earlier = mnt / "cal.json"
        original = '{"format": "diskmodel.calibration", "format_version": 1}'
        earlier.write_text(original)
        _fill(mnt)
        res = run("calibrate", "--backend", "recbackend:make", "--budget-s", "5", "--json", earlier, "--no-progress",
                  cwd=tmp_path, env=env)
        assert res.returncode == 1, res.stderr
        assert_one_error_line(res.stderr, f"--json {earlier}", "No space left on device", "nothing was measured")
        assert not _reads(env), "the backend was read although the result could not be written"
        assert earlier.read_text() == original and _temp_files(mnt) == []


@pytest.mark.integration
@pytest.mark.slow
def test_a_file_system_that_fills_during_the_run_still_gets_the_result(tmp_path, env):
    with _tmpfs(tmp_path / "filling", "size=1m") as mnt:
        out = mnt / "cal.json"
        # The backend fills the file system at its first read, after the run has started.
        env = dict(env, DISKMODEL_TEST_FILL=str(mnt / "filler"), DISKMODEL_TEST_READ_S="2e-3", PYTHONWARNINGS="ignore")
        res = run("calibrate", "--backend", "recbackend:make", "--budget-s", "4", "--json", out, "--no-progress",
                  cwd=tmp_path, env=env)
        assert res.returncode == 0, res.stderr
        assert _reads(env) and (mnt / "filler").stat().st_size > 0
        assert json.loads(out.read_text())["format"] == "diskmodel.calibration"
        assert _temp_files(mnt) == []


@pytest.mark.slow
def test_a_result_that_cannot_be_written_at_the_end_is_kept_and_the_error_says_where(tmp_path, env):
    folder = tmp_path / "results"
    folder.mkdir()
    out = folder / "cal.json"
    # The output's folder disappears while the run measures.
    env = dict(env, DISKMODEL_TEST_RMTREE=str(folder), DISKMODEL_TEST_READ_S="2e-3", PYTHONWARNINGS="ignore")
    res = run("calibrate", "--backend", "recbackend:make", "--budget-s", "4", "--json", out, "--no-progress",
              cwd=tmp_path, env=env)
    assert res.returncode == 1, res.stderr
    line = assert_one_error_line(res.stderr, f"--json {out}", "the result was not written", "the result is kept in ")
    kept = Path(line.split("the result is kept in ", 1)[1].split()[0].rstrip(";"))
    assert kept.parent == Path(env["XDG_STATE_HOME"]) / "diskmodel" / "unsaved"
    assert json.loads(kept.read_text())["format"] == "diskmodel.calibration"
    assert _reads(env) and not folder.exists()


def test_a_failed_write_names_the_path(tmp_path, monkeypatch):
    out = tmp_path / "report" / "calibration.json"
    out.parent.mkdir()

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs.os, "write", full)
    with pytest.raises(OSError) as info:
        outputs.replace_file_atomically(out, b"{}")
    monkeypatch.undo()
    message, code = cli.describe(info.value)
    assert str(out) in message and "No space left on device" in message and code == 1
    assert list(out.parent.iterdir()) == []


@pytest.mark.integration
@pytest.mark.slow
def test_postmark_json_on_a_full_file_system_is_refused_before_anything_is_built(tmp_path, env):
    require_tools("postmark", "losetup", "mkfs.ext3")
    scratch = tmp_path / "scratch.img"
    with _tmpfs(tmp_path / "full", "size=256k") as mnt:
        _fill(mnt)
        res = run("postmark", "--layout", "native", "--workload", "test2", "--size", "16M", "--files", "50",
                  "--transactions", "100", "--scratch", scratch, "--json", mnt / "pm.json", cwd=tmp_path, env=env)
        assert res.returncode == 1, res.stderr
        assert_one_error_line(res.stderr, f"--json {mnt / 'pm.json'}", "No space left on device", "nothing was measured")
        assert not scratch.exists() and _temp_files(mnt) == []


# ---------------------------------------------------------------------------- postmark and experiment

@pytest.mark.slow
def test_postmark_json_is_checked_before_anything_is_built(tmp_path, env):
    text = tmp_path / "existing.txt"
    text.write_text("keep me\n")
    before = sha256(text)
    scratch = tmp_path / "scratch.img"
    common = ["postmark", "--layout", "native", "--workload", "test2", "--size", "16M", "--scratch", scratch]
    res = run(*common, "--json", text, cwd=tmp_path, env=env)
    assert_refused(res, "--json", "not an earlier diskmodel postmark result", "--force")
    res = run(*common, "--json", tmp_path, cwd=tmp_path, env=env)
    assert_refused(res, "--json", "is a directory")
    res = run(*common, "--json", scratch, "--force", cwd=tmp_path, env=env)
    assert_refused(res, "--json", "the run measures")
    assert sha256(text) == before and not scratch.exists()


@pytest.mark.slow
def test_experiment_out_must_be_a_new_empty_or_earlier_report_folder(tmp_path, env):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    res = run("experiment", "--out", a_file, "--force", "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "--out", "regular file", "--force does not apply")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("precious")
    res = run("experiment", "--out", busy, "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "--out", "not an earlier diskmodel experiment report", "--force")
    assert sorted(p.name for p in busy.iterdir()) == ["thesis.tex"]
    # a report file name taken by a folder: refused even with --force
    (busy / "report.md").mkdir()
    res = run("experiment", "--out", busy, "--force", "--no-progress", cwd=tmp_path, env=env)
    assert_refused(res, "report.md", "--force does not apply")


def test_check_output_dir_accepts_new_empty_and_earlier_report_folders(tmp_path):
    outputs.check_output_dir(tmp_path / "new" / "deeper")
    (tmp_path / "empty").mkdir()
    outputs.check_output_dir(tmp_path / "empty")
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    files = {"report.md": b"# diskmodel experiment\n", "seek_curve.png": b"\x89PNG",
             "calibration.json": json.dumps({"format": "diskmodel.calibration", "format_version": 1}).encode()}
    for name, data in files.items():
        (earlier / name).write_bytes(data)
    assert not outputs.is_experiment_report_dir(earlier)  # no manifest: perhaps cut short
    (earlier / "manifest.json").write_text(outputs.experiment_manifest(files))
    assert outputs.is_experiment_report_dir(earlier)
    outputs.check_output_dir(earlier)
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.md").write_text("# my own report\n")
    with pytest.raises(outputs.OutputRefused, match="--force"):
        outputs.check_output_dir(other)
    outputs.check_output_dir(other, force=True)


def test_earlier_results_are_recognised_by_their_format_marker(tmp_path):
    cal = tmp_path / "c.json"
    cal.write_text(json.dumps({"format": "diskmodel.calibration", "format_version": 1}))
    pm = tmp_path / "p.json"
    pm.write_text(json.dumps(outputs.mark({"n": 1}, "postmark")))
    legacy_pm = tmp_path / "lp.json"
    legacy_pm.write_text(json.dumps({k: None for k in ("environment", "config", "n", "mean", "bse", "runs")}))
    listed = tmp_path / "l.json"
    listed.write_text('[{"format": "diskmodel.calibration"}]')
    assert outputs.is_earlier_result(cal, "calibration") and not outputs.is_earlier_result(cal, "postmark")
    assert outputs.is_earlier_result(pm, "postmark") and not outputs.is_earlier_result(pm, "calibration")
    assert outputs.is_earlier_result(legacy_pm, "postmark")
    assert not outputs.is_earlier_result(listed, "calibration")
    assert json.loads(pm.read_text())["format_version"] == 1


def test_a_fifo_or_a_device_node_is_never_replaced_by_a_file(tmp_path):
    """The atomic write renames a new file over its target: over a device node that puts a regular file
    where the node was (``trace record --output /dev/zero`` replaced the machine's /dev/zero). A target
    that exists and is not a regular file is refused, and left as it was."""
    import stat as stat_module

    from diskmodel.calibrate.harness.outputs import replace_file_atomically

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for target in (fifo, link):
        with pytest.raises(OSError, match="a FIFO is there, not a regular file: not replaced"):
            replace_file_atomically(target, b"trace")
        assert stat_module.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link"]
