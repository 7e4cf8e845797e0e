"""tests/conftest.py keeps the tiers apart: a test that drives real tools is in the slow tier.

Each case runs pytest itself in a subprocess on a small test file, under a conftest that takes
every hook and fixture of tests/conftest.py, and reads the outcome pytest reports.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import slow_tier_reason

HERE = Path(__file__).resolve().parent

CONFTEST = f"""
import importlib.util

# tests/conftest.py under its own name (this file is the module "conftest" here)
_spec = importlib.util.spec_from_file_location("diskmodel_tests_conftest", {str(HERE / "conftest.py")!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
globals().update({{name: value for name, value in vars(_module).items() if not name.startswith("__")}})
"""

INI = """[pytest]
markers =
    integration: drives real tools
    slow: takes more than a few seconds
    serial: in the serial group
"""
#: setup.cfg's two workers
TWO_WORKERS = ("-n", "2", "--dist", "loadgroup")


def run_pytest(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_case.py").write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:nbmake", "-q",
                           "--strict-markers", f"--junitxml={tmp_path / 'junit.xml'}", *args, str(tmp_path / "test_case.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)


def test_an_integration_test_not_marked_slow_stops_the_collection(tmp_path):
    res = run_pytest(tmp_path, """
        import pytest

        @pytest.mark.integration
        def test_builds_a_loop_device():
            pass

        @pytest.mark.integration
        @pytest.mark.slow
        def test_marked_both():
            pass
    """, "-m", "not slow")
    assert res.returncode == 4, res.stdout + res.stderr          # pytest's usage error
    assert "test_builds_a_loop_device (marked integration)" in res.stderr, res.stderr
    assert "test_marked_both" not in res.stderr


def test_a_device_fixture_without_slow_stops_the_collection(tmp_path):
    res = run_pytest(tmp_path, """
        def test_uses_loops(loops):
            pass
    """)
    assert res.returncode == 4, res.stdout + res.stderr
    assert "test_uses_loops (uses loops)" in res.stderr, res.stderr


@pytest.mark.slow  # several seconds: the full tier runs it
def test_a_fast_test_that_starts_a_device_tool_fails_and_a_slow_one_may(tmp_path):
    res = run_pytest(tmp_path, """
        import os, subprocess, sys
        import pytest

        def test_fast_losetup():
            subprocess.run(["losetup", "--version"], capture_output=True)

        def test_fast_swallows_the_refusal():
            try:
                subprocess.run(["/usr/sbin/mkfs.ext4", "-V"], capture_output=True)
            except BaseException:
                pass

        def test_fast_needs_root():
            from conftest import require_root
            require_root()

        def test_fast_private_numba_cache(tmp_path):
            subprocess.run([sys.executable, "-c", "pass"], env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)))

        def test_fast_plain_subprocess():
            assert subprocess.run([sys.executable, "-c", "print(2)"], capture_output=True, text=True).stdout == "2\\n"

        @pytest.mark.slow
        def test_slow_losetup():
            subprocess.run(["losetup", "--version"], capture_output=True)
    """)
    got = outcomes(tmp_path / "junit.xml")
    for name, outcome, reason in (("test_fast_losetup", "failure", "it starts losetup"),
                                  ("test_fast_swallows_the_refusal", "error", "it starts mkfs.ext4"),
                                  ("test_fast_needs_root", "failure", "it needs root"),
                                  ("test_fast_private_numba_cache", "failure",
                                   "it gives a subprocess its own NUMBA_CACHE_DIR (numba compiles afresh)")):
        assert got[name][0] == outcome, (name, res.stdout)
        assert f"not marked slow but {reason}; mark it @pytest.mark.slow" in got[name][1], (name, res.stdout)
    assert got["test_fast_plain_subprocess"] == got["test_slow_losetup"] == ("passed", ""), res.stdout


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """Each test's outcome in a junit XML ("passed", or its failure or error) and that outcome's message."""
    got = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        bad = [child for child in case if child.tag in ("failure", "error")]
        got[case.get("name")] = (bad[-1].tag, bad[-1].get("message", "")) if bad else ("passed", "")
    return got


@pytest.mark.parametrize("argv, env, reason", [
    (["qemu-system-x86_64", "-kernel", "k"], None, "it starts qemu-system-x86_64"),
    (["/usr/bin/qemu-system-x86_64", "--version"], None, None),
    (["/sbin/mkfs.xfs", "-f", "img"], None, "it starts mkfs.xfs"),
    (["losetup", "-J", "-l", "-O", "NAME,BACK-FILE"], None, None),
    (["losetup", "--find", "--show", "-l", "img"], None, "it starts losetup"),
    (["diskmodel", "predict", "--disk", "wd800bd"], None, None),
    (["python", "-c", "pass"], {"NUMBA_BOUNDSCHECK": "1"}, "it gives a subprocess its own NUMBA_BOUNDSCHECK"),
])
def test_what_belongs_to_the_slow_tier(argv, env, reason):
    if env is not None:
        env = {**os.environ, **env}
    got = slow_tier_reason(argv, env)
    assert (got if reason is None else got and got.split(" (")[0]) == reason


@pytest.mark.slow  # several seconds: the full tier runs it
@pytest.mark.parametrize("workers", [("-n", "0"), TWO_WORKERS], ids=["one process", "two workers"])
def test_the_summary_names_a_fast_test_that_compiled_a_numba_kernel(tmp_path, workers):
    res = run_pytest(tmp_path, """
        import numba
        import pytest

        def test_imports_numba():
            pass

        def test_compiles():
            assert numba.njit(lambda x: x + 1)(1) == 2

        @pytest.mark.slow
        def test_slow_compiles():
            assert numba.njit(lambda x: x + 2)(1) == 3
    """, *workers)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = res.stdout.split("fast-tier tests that compiled numba kernels", 1)[-1]
    assert "test_case.py::test_compiles" in summary, res.stdout
    assert "test_slow_compiles" not in summary and "test_imports_numba" not in summary, res.stdout


def test_one_in_turn_keeps_one_stand_in_a_group_each_stand_in_somewhere():
    from _helpers import one_in_turn

    params = [pytest.param(group, value, id=f"{group}-{value}") for group in "abcde" for value in (1, 2, 3, "kill")]
    tiered = one_in_turn(params, lambda v: v[0], lambda v: v[1] != "kill")
    kept = [p.values for p in tiered if not any(m.name == "soak" for m in p.marks)]
    assert kept == [("a", 1), ("a", "kill"), ("b", 2), ("b", "kill"), ("c", 3), ("c", "kill"),
                    ("d", 1), ("d", "kill"), ("e", 2), ("e", "kill")]
    assert [p.id for p in tiered] == [p.id for p in params]


@pytest.mark.slow  # several seconds: the full tier runs it
def test_two_workers_run_the_serial_group_one_test_at_a_time_and_the_rest_beside_it_at_nice_10(tmp_path):
    """Under setup.cfg's two workers, the integration tests and those marked serial run in one worker,
    one after the other, while the other worker runs the rest at the same time, at nice 10 where the
    tests run as root (conftest.BESIDE_NICE; nice 0 in the serial group)."""
    log = tmp_path / "log"
    res = run_pytest(tmp_path, f"""
        import json, os, time
        import pytest

        def _record(kind):
            start = time.monotonic()
            time.sleep(0.4)
            with open({str(log)!r}, "a") as log:
                log.write(json.dumps([kind, os.environ["PYTEST_XDIST_WORKER"], start, time.monotonic(),
                                      os.getpriority(os.PRIO_PROCESS, 0)]) + "\\n")

        @pytest.mark.integration
        @pytest.mark.slow
        @pytest.mark.parametrize("n", range(4))
        def test_integration(n):
            _record("serial")

        @pytest.mark.serial
        @pytest.mark.parametrize("n", range(4))
        def test_marked_serial(n):
            _record("serial")

        @pytest.mark.parametrize("n", range(8))
        def test_beside(n):
            _record("beside")
    """, *TWO_WORKERS)
    assert res.returncode == 0, res.stdout + res.stderr
    import json

    runs = [json.loads(line) for line in log.read_text().splitlines()]
    serial = sorted((start, end, worker, nice) for kind, worker, start, end, nice in runs if kind == "serial")
    beside = [(start, end, worker, nice) for kind, worker, start, end, nice in runs if kind == "beside"]
    assert len(serial) == 8 and len(beside) == 8
    assert len({worker for _, _, worker, _ in serial}) == 1, serial
    assert all(later[0] >= earlier[1] for earlier, later in zip(serial, serial[1:])), serial
    assert any(b[0] < s[1] and s[0] < b[1] for b in beside for s in serial), (serial, beside)
    assert {nice for *_, nice in serial} == {0}
    assert {nice for *_, nice in beside} == ({10} if os.geteuid() == 0 else {0})


def test_a_background_jobs_status_is_read_from_its_folder_and_a_job_still_running_is_stopped(tmp_path):
    """tests/_background.py: a job is claimed once (the second worker to try starts nothing), its exit
    status is read by another process than the one that started it (the worker whose test reads it),
    and a job still running at the session's end is stopped with what it started."""
    import _background

    done = _background.claim(tmp_path, "done")
    assert done is not None and _background.claim(tmp_path, "done") is None
    _background.start(done, [sys.executable, "-c", "raise SystemExit(3)"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
    read = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r}); import _background;"
                           f" from pathlib import Path; print(_background.result(Path({str(done)!r}), 60))"],
                          capture_output=True, text=True, timeout=120)
    assert read.stdout.strip() == "3", read.stderr
    running = _background.claim(tmp_path, "running")
    _background.start(running, [sys.executable, "-c", "import time; time.sleep(600)"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
    with pytest.raises(TimeoutError):
        _background.result(running, 0.5)
    runner = int((running / "pid").read_text())
    below = _background.descendants(runner)
    assert below, "the job's command did not start"
    _background.stop_job(running)
    def running_still(pid):
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    assert not [pid for pid in [runner, *below] if running_still(pid)]
