"""Bad inputs refused before anything is created, and inputs read with bounds.

Each case runs the installed ``diskmodel`` in a child with a time limit and an address-space limit, so that a
hang or a read without bound fails the test instead of stalling it:
a FIFO or a device where a file is expected, an overlong trace line or field,
an LBN near 2**63 (a crash of the simulator's kernel before the range was
checked without overflow), a missing program, a scratch larger than the free
space, a throttle beyond the kernel's range, mkfs refusing its options with
--quiet, the budget advice followed, and --keep.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _helpers import DISKMODEL, assert_one_error_line


@pytest.fixture
def workdir(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def env(tmp_path_factory):
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(tmp_path_factory.mktemp("runstate")))
    env.pop("DISKMODEL_DEBUG", None)
    return env


# ---------------------------------------------------------------------------- inputs without bounds

def _atlas_copy(root: Path, name: str, change) -> Path:
    import shutil

    from diskmodel.data.disksim.bundled import BUNDLED_DIR

    target = root / name
    shutil.copytree(BUNDLED_DIR / "atlas10k", target)
    change(target)
    return target


def _replace_with(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def _run_bounded(args, cwd, env, timeout_s=120):
    """Run diskmodel; a hang or a read without bound is a failure, not a stuck test."""
    try:
        return subprocess.run([DISKMODEL, *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout_s, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"diskmodel {' '.join(args)} did not finish within {timeout_s} s (a read without bound?)")


def _limit_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize("kind", ["fifo", pytest.param("zero", marks=pytest.mark.slow)])
@pytest.mark.parametrize("which", ["stack", pytest.param("trace", marks=pytest.mark.slow),
                                   pytest.param("seek", marks=pytest.mark.slow),
                                   pytest.param("model", marks=pytest.mark.slow), "calibration"])
def test_a_fifo_or_a_device_where_a_file_is_expected_is_refused(which, kind, tmp_path, workdir, env):
    if which == "stack":
        path = tmp_path / "stack.json"
        path.write_text("{}")
        _replace_with(path, kind)
        args = ["predict", "--stack", str(path)]
    elif which == "calibration":
        path = tmp_path / "cal.json"
        path.write_text("{}")
        _replace_with(path, kind)
        args = ["predict", "--calibration", str(path)]
    else:
        folder = _atlas_copy(tmp_path, "drive", lambda d: _replace_with(d / f"atlas10k.{which}", kind))
        args = ["validate-trace", str(folder)]
    res = _run_bounded(args, workdir, env)
    assert res.returncode == 2, res.stderr
    line = assert_one_error_line(res.stderr)
    assert ("a FIFO" if kind == "fifo" else "a character device") in line or "not a regular file" in line, line


@pytest.mark.slow
def test_a_trace_line_longer_than_the_cap_is_refused_naming_the_line(tmp_path, workdir, env):
    from diskmodel.data.input_files import MAX_TRACE_LINE_BYTES

    def long_line(d):
        lines = (d / "atlas10k.trace").read_text().splitlines(keepends=True)
        lines[2] = "R Miss " + "7" * (8 << 20) + " 8 1.0 1.0\n"  # one 8 MB field
        (d / "atlas10k.trace").write_text("".join(lines))

    folder = _atlas_copy(tmp_path, "drive", long_line)
    res = _run_bounded(["validate-trace", str(folder)], workdir, env)
    line = assert_one_error_line(res.stderr, "atlas10k.trace:3")
    assert str(MAX_TRACE_LINE_BYTES) in line and len(line) < 400, line[:400]


@pytest.mark.slow
def test_an_error_quotes_at_most_80_characters_of_a_field(tmp_path, workdir, env):
    def long_field(d):
        lines = (d / "atlas10k.trace").read_text().splitlines(keepends=True)
        lines[2] = "Q" * 3000 + " Miss 8 8 1.0 1.0\n"  # under the line cap, and wrong
        (d / "atlas10k.trace").write_text("".join(lines))

    folder = _atlas_copy(tmp_path, "drive", long_field)
    res = _run_bounded(["validate-trace", str(folder)], workdir, env)
    line = assert_one_error_line(res.stderr, "atlas10k.trace:3")
    assert "…" in line and len(line) < 400, line[:400]


def test_quote_cuts_at_80_characters():
    from diskmodel.data.input_files import quote

    assert quote("abc") == "'abc'"
    assert quote("y" * 81) == repr("y" * 80) + "…"
    assert quote("z" * 80) == repr("z" * 80)


@pytest.mark.parametrize("lbn", [str((1 << 63) - 1)] + [pytest.param(str(v), marks=pytest.mark.slow)
                                                         for v in ((1 << 63) - 4, 1 << 64)])
def test_an_lbn_near_2_63_is_refused_not_a_crash(lbn, tmp_path, workdir, env):
    def huge_lbn(d):
        lines = (d / "atlas10k.trace").read_text().splitlines(keepends=True)
        fields = lines[4].split()
        fields[2] = lbn
        lines[4] = " ".join(fields) + "\n"
        (d / "atlas10k.trace").write_text("".join(lines))

    folder = _atlas_copy(tmp_path, "drive", huge_lbn)
    res = _run_bounded(["validate-trace", str(folder)], workdir, env)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert_one_error_line(res.stderr, "atlas10k.trace:5")


def test_simulate_requests_refuses_an_lbn_whose_end_overflows_int64(tmp_path):
    # in a child: on an unchecked range the simulator's kernel reads out of bounds (SIGSEGV)
    code = textwrap.dedent("""
        import numpy as np
        from diskmodel.data.disksim.bundled import disksim_drive_folder
        from diskmodel.model.disksim_drives.convert import load_disksim_drive
        from diskmodel.model.simulator.simulate import simulate_requests
        params = load_disksim_drive(disksim_drive_folder("atlas10k")).simulation_parameters()
        try:
            simulate_requests(params, np.array([False]), np.array([2**63 - 1]), np.array([4]), np.array([0.0]))
        except ValueError as exc:
            print("refused:", exc)
        """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert "ends beyond the last block" in res.stdout, res.stdout


# ---------------------------------------------------------------------------- postmark and bench: refused up front

def test_a_kept_scratch_file_survives_the_runs_teardown(tmp_path, monkeypatch, caplog):
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.scratch import prepare_scratch

    monkeypatch.setenv("DISKMODEL_RUN_DIR", str(tmp_path / "runstate"))
    path = tmp_path / "kept.img"
    with caplog.at_level("WARNING", logger="diskmodel"):
        with runstate.ensure_run("test keep"):
            space = prepare_scratch(path, 1 << 20, keep=True)
            space.close()
    assert path.is_file() and path.stat().st_size == 1 << 20, "--keep: the run's teardown deleted the scratch"
    assert any(str(path) in r.getMessage() and "kept" in r.getMessage() for r in caplog.records)
    dropped = tmp_path / "dropped.img"
    with runstate.ensure_run("test no keep"):
        prepare_scratch(dropped, 1 << 20).close()
    assert not dropped.exists()


def _postmark_args(scratch, *more):
    return ["postmark", "--layout", "native", "--workload", "test1", "--scratch", str(scratch), "--quiet", *more]


@pytest.mark.integration
@pytest.mark.slow
def test_postmark_names_a_missing_tool_and_its_package_before_creating_anything(tmp_path, workdir, env):
    from conftest import require_root

    require_root()
    empty = tmp_path / "bin"
    empty.mkdir()
    scratch = tmp_path / "s.img"
    res = _run_bounded(_postmark_args(scratch, "--size", "16M"), workdir, dict(env, PATH=str(empty)))
    assert res.returncode == 1, res.stderr
    line = assert_one_error_line(res.stderr, "postmark (Debian package postmark)")
    assert "losetup (Debian package mount)" in line and "mkfs.ext3 (Debian package e2fsprogs)" in line, line
    assert not scratch.exists()


@pytest.mark.integration
@pytest.mark.slow
def test_postmark_refuses_a_scratch_larger_than_the_free_space(tmp_path, workdir, env):
    from conftest import require_root

    require_root()
    scratch = tmp_path / "s.img"
    def free_bytes():
        st = os.statvfs(tmp_path)
        return st.f_bavail * st.f_frsize

    before = free_bytes()
    res = _run_bounded(_postmark_args(scratch, "--size", "9999999G"), workdir, env)
    after = free_bytes()
    assert res.returncode == 2, res.stderr
    line = assert_one_error_line(res.stderr, "--scratch")
    # The free space the line reports is the folder's own, read during the run: it lies between the
    # readings taken before and after (other tests share /tmp, so it may move while this one runs).
    reported = re.search(r"has (\d+) bytes", line)
    assert reported and "free" in line, line
    margin = 64 * 2**20
    assert min(before, after) - margin <= int(reported.group(1)) <= max(before, after) + margin, (line, before, after)
    assert not scratch.exists()


@pytest.mark.slow
def test_bench_refuses_a_throttle_beyond_the_kernels_u64(workdir, env):
    res = _run_bounded(["bench", "--stack", "x.json", "--workload", "copy", "--slow", "sdb=" + "1" + "0" * 23],
                       workdir, env)
    assert res.returncode == 2
    assert_one_error_line(res.stderr, "--slow")


@pytest.mark.integration
@pytest.mark.slow
def test_mkfs_refusing_its_options_is_one_line_even_quiet(tmp_path, workdir, env):
    """mkfs.ext3 refuses ``-N 999999999`` on 16 MB (the options' check cannot know the device's size):
    one line, no log line before it."""
    from conftest import require_root, require_tools

    require_root()
    require_tools("mkfs.ext3", "losetup", "postmark")
    scratch = tmp_path / "s.img"
    res = _run_bounded(_postmark_args(scratch, "--size", "16M", "--mkfs-options", "-N 999999999"), workdir, env,
                       timeout_s=300)
    assert res.returncode == 1, res.stderr
    line = assert_one_error_line(res.stderr, "too big")
    assert len(line) < 500, line
    assert not scratch.exists()


# ---------------------------------------------------------------------------- the budget advice

@pytest.mark.slow
@pytest.mark.parametrize("budget", ["5", "8"])
def test_the_budget_advice_is_accepted_when_followed(budget, workdir, env):
    """Refused with "give --budget-s X": a rerun with X succeeds (the advice does not go round in circles)."""
    import re

    args = ["calibrate", "--simulated", "wd800bd", "--no-progress", "--budget-s"]
    res = _run_bounded([*args, budget], workdir, env, timeout_s=600)
    assert res.returncode == 2, res.stderr
    line = assert_one_error_line(res.stderr, "--budget-s")
    advised = re.search(r"give --budget-s ([0-9.e+]+) or more", line).group(1)
    assert float(advised) > float(budget)
    res = _run_bounded([*args, advised], workdir, env, timeout_s=600)
    assert res.returncode == 0, res.stderr


@pytest.mark.integration
@pytest.mark.slow
def test_experiment_names_a_missing_postmark_before_calibrating(tmp_path, workdir, env):
    from conftest import require_root

    require_root()
    empty = tmp_path / "bin"
    empty.mkdir()
    scratch = tmp_path / "p.img"
    res = _run_bounded(["experiment", "--postmark-scratch", str(scratch), "--out", str(workdir / "report"),
                        "--no-progress"], workdir, dict(env, PATH=str(empty)), timeout_s=120)
    assert res.returncode == 1, res.stderr
    assert_one_error_line(res.stderr, "postmark (Debian package postmark)")
    assert not scratch.exists() and list(workdir.iterdir()) == []


def test_a_trace_larger_than_the_cap_is_refused_without_reading_it_all(tmp_path, monkeypatch):
    from diskmodel.data import disksim, input_files

    monkeypatch.setattr(disksim, "MAX_TRACE_FILE_BYTES", 4096)
    trace = tmp_path / "t.trace"
    trace.write_text("R Miss 8 8 1.0 1.0\n" * 1000)
    with pytest.raises(input_files.InputFileError, match="larger than 4096 bytes"):
        disksim.read_trace(trace)


@pytest.mark.parametrize("kind", ["fifo", pytest.param("destroy-alone", marks=pytest.mark.slow),
                                  pytest.param("exists-unconfirmed", marks=pytest.mark.slow)])
def test_experiment_refuses_a_bad_postmark_scratch_before_calibrating(kind, tmp_path, workdir, env):
    """Refused up front, not after the whole calibration (the run would end in a hang or a late error)."""
    target = tmp_path / "scratch"
    if kind == "fifo":
        os.mkfifo(target)
        more = ["--postmark-scratch", str(target)]
    elif kind == "destroy-alone":
        target.write_bytes(b"")
        more = ["--destroy-data-on", str(target)]
    else:
        target.write_bytes(b"\0" * 4096)
        more = ["--postmark-scratch", str(target)]
    res = _run_bounded(["experiment", "--out", str(workdir / "report"), "--no-progress", *more], workdir, env,
                       timeout_s=60)
    assert res.returncode == 2, res.stderr
    assert_one_error_line(res.stderr, more[0])
    assert list(workdir.iterdir()) == []
