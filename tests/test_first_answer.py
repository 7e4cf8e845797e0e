"""The compiled simulator's cache (:mod:`diskmodel.model._jit`): where numba keeps the kernels,
what makes it compile them again, and that a warm cache answers without the compiler.

numba chooses a function's cache folder when the function is defined, so each check runs in a fresh
interpreter (a subprocess) with the environment it names.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from diskmodel.model import _jit as jit_cache

REPO = Path(__file__).resolve().parents[1]


def _python(code: str, timeout: float = 600, **env) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={**clean, **env}, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_kernels_are_cached_in_the_package_folder_of_their_group():
    out = _python("""
        import diskmodel.model.simulator.kernel as kernel, diskmodel.model.drive.seek as seek
        print(kernel._simulate._cache.cache_path)
        print(seek._two_piece_many._cache.cache_path)
    """).split()
    assert out == [str(jit_cache.CACHE_DIR / "simulator"), str(jit_cache.CACHE_DIR / "model")]
    assert jit_cache.CACHE_DIR == REPO / "model" / "_jit_cache"


@pytest.mark.slow  # a subprocess with its own numba settings (the tier check)
@pytest.mark.parametrize("setting", [{"NUMBA_CACHE_DIR": "{tmp}"}, {"NUMBA_BOUNDSCHECK": "1"}, {"NUMBA_OPT": "1"}])
def test_numba_settings_its_key_does_not_hold_leave_the_package_cache_alone(setting, tmp_path):
    # numba keys a cache entry by signature, CPU and bytecode only: code compiled with bounds
    # checks or another optimisation level must not be read from (or written to) the shipped folder;
    # bounds-checked code has a folder of its own
    env = {name: value.format(tmp=tmp_path) for name, value in setting.items()}
    path = _python("""
        import diskmodel.model.simulator.kernel as kernel
        print(kernel._simulate._cache.cache_path)
    """, **env).strip()
    for group in jit_cache.GROUPS:
        assert not Path(path).is_relative_to(jit_cache.CACHE_DIR / group), path
    if "NUMBA_BOUNDSCHECK" in env:
        assert path == str(jit_cache.CACHE_DIR / "boundscheck" / "simulator")
    else:
        assert not Path(path).is_relative_to(jit_cache.CACHE_DIR), path
    if "NUMBA_CACHE_DIR" in env:
        assert Path(path).is_relative_to(tmp_path)


def _probe_group(tmp_path, modules: dict) -> str:
    """A package ``probe`` of *modules* (name -> source) under *tmp_path*, made a group of the cache's with
    its folder under tmp_path/cache: the lines a child runs before it imports from it."""
    group = tmp_path / "probe"
    group.mkdir()
    (group / "__init__.py").write_text("")
    for name, source in modules.items():
        (group / f"{name}.py").write_text(source)
    return f"""
        import sys
        from pathlib import Path
        from diskmodel.model import _jit as jit_cache
        group = Path({str(group)!r})
        jit_cache.GROUPS["probe"] = lambda: sorted(group.glob("*.py"))
        jit_cache.CACHE_DIR = Path({str(tmp_path / "cache")!r})
        sys.path.insert(0, str(group.parent))
    """


@pytest.mark.slow  # several seconds: the full tier runs it
def test_an_edit_of_a_callee_in_another_module_recompiles_its_callers(tmp_path):
    # numba's own stamp is of the caller's file alone, so a cached caller kept the callee's old
    # code (linked into it) after an edit of the callee's module; a group's stamp covers them all
    group = tmp_path / "probe"
    run = _probe_group(tmp_path, {
        "callee": "from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return 1\n",
        "caller": "from numba import njit\n\nfrom .callee import value\n\n\n"
                  "@njit(cache=True)\ndef twice():\n    return 2 * value()\n"}) + """
        from probe.caller import twice
        print(twice(), twice._cache.cache_path)
    """
    value, folder = _python(run).split()
    assert (value, folder) == ("2", str(tmp_path / "cache" / "probe"))
    assert any((tmp_path / "cache" / "probe").glob("caller.twice-*.nbi"))
    (group / "callee.py").write_text((group / "callee.py").read_text().replace("return 1", "return 5"))
    assert _python(run).split()[0] == "10"


@pytest.mark.slow  # subprocesses with numba's bounds checks (the tier check)
def test_bounds_checked_code_is_cached_apart_and_checks_when_loaded(tmp_path):
    # a kernel reading past its array's end: compiled with bounds checks it raises IndexError, and
    # loaded from the cache in a new process it still does; compiled without, it is another entry
    # in another folder (and does not check)
    run = _probe_group(tmp_path, {"past_end": "from numba import njit\n\n\n@njit(cache=True)\n"
                                              "def past_end(a):\n    return a[len(a)]\n"}) + """
        import numpy as np
        from probe.past_end import past_end
        try:
            past_end(np.zeros(4)[:3])   # past the view's end, within its base: memory that is there
            raised = "no"
        except IndexError:
            raised = "IndexError"
        print(raised, past_end.stats.cache_hits.most_common(1) != [], past_end._cache.cache_path)
    """
    checked = str(tmp_path / "cache" / "boundscheck" / "probe")
    assert _python(run, NUMBA_BOUNDSCHECK="1").split() == ["IndexError", "False", checked]
    assert _python(run, NUMBA_BOUNDSCHECK="1").split() == ["IndexError", "True", checked]
    assert _python(run).split() == ["no", "False", str(tmp_path / "cache" / "probe")]


def test_a_package_folder_that_cannot_be_written_is_copied_into_the_users_cache(tmp_path, monkeypatch):
    shipped = tmp_path / "site" / "_jit_cache"
    (shipped / "simulator").mkdir(parents=True)
    for name in ("kernel._simulate-31.py311.nbi", "kernel._simulate-31.py311.1.nbc"):
        (shipped / "simulator" / name).write_bytes(name.encode())
    monkeypatch.setattr(jit_cache, "CACHE_DIR", shipped)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    # root writes anywhere, so the read-only install is the check's answer rather than a chmod
    writable = jit_cache._writable
    monkeypatch.setattr(jit_cache, "_writable", lambda folder: not folder.is_relative_to(shipped) and writable(folder))
    jit_cache.cache_folder.cache_clear()
    try:
        folder = jit_cache.cache_folder("simulator")
    finally:
        jit_cache.cache_folder.cache_clear()
    assert folder == tmp_path / "xdg" / "diskmodel" / "jit" / "simulator"
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in (shipped / "simulator").iterdir())


@pytest.mark.slow
def test_after_the_precompile_nothing_a_command_runs_compiles():
    # the kernels compiled into the checkout (as .ci/setup does; a few seconds when they already are)
    subprocess.run([sys.executable, "-m", "diskmodel.model._jit"], check=True, capture_output=True,
                   timeout=1800, cwd=REPO, env={k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")})
    out = _python("""
        import numpy as np
        from numba.core import event
        compiled = []
        class Count(event.Listener):
            def on_start(self, ev):
                compiled.append(ev.data["dispatcher"].py_func.__qualname__)
            def on_end(self, ev):
                pass
        event.register("numba:compile", Count())
        from diskmodel.model import _jit as jit_cache
        assert jit_cache.is_warm() and jit_cache.compile_notice() is None
        from diskmodel.data.disksim import TRACED_DRIVES, disksim_drive_folder
        from diskmodel.model.disksim_drives.convert import validate_drive
        for name in sorted(TRACED_DRIVES):
            validate_drive(disksim_drive_folder(name), limit=300)
        from diskmodel.calibrate.harness.simulated import simulated_disk
        sim = simulated_disk("wd800bd", seed=0)
        sim.read_many(np.arange(50) * 123457 * 512, 4096)
        from diskmodel.model import load_preset, service_time_s
        service_time_s(load_preset("wd800bd"), np.arange(10) * 4096, 4096, 0)
        from diskmodel.model.drive.seek import TableSeek
        TableSeek(np.array([1.0, 10.0]), np.array([1e-3, 5e-3])).seek_time_s(np.array([0.0, 5.0]))
        print(len(compiled), sorted(set(compiled)))
    """, timeout=300)
    assert out.startswith("0 "), out


@pytest.mark.slow  # a subprocess with its own numba cache folder (the tier check)
def test_a_cold_cache_is_told_before_the_wait(tmp_path):
    # numba's folder empty: the kernel is not there for this machine, and the notice says so
    cold = _python("""
        from diskmodel.model import _jit as jit_cache
        print(jit_cache.is_warm(), jit_cache.compile_notice())
    """, NUMBA_CACHE_DIR=str(tmp_path))
    assert cold.strip() == f"False compiling the simulator (first run only, about {jit_cache.COLD_COMPILE_CPU_S:.0f} s)"


def test_validate_trace_prints_the_notice_on_stderr_when_it_will_compile(monkeypatch, capsys):
    from diskmodel.calibrate.cli import main

    # the kernel compiled or not, the command's answer is the same; only the notice differs
    monkeypatch.setattr(jit_cache, "is_warm", lambda: False)
    assert main(["validate-trace", "atlas10k", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == jit_cache.compile_notice()
    assert '"disk": "atlas10k"' in captured.out


def test_the_main_jobs_progress_names_the_step_under_way(capsys):
    from diskmodel.calibrate.experiment import _progress, _step

    bar = _progress(5, True)
    _step(bar, "calibrating the simulated wd800bd")
    bar.refresh()
    bar.update()
    _step(bar, "taking the disk from the calibration")
    bar.refresh()
    bar.close()
    err = capsys.readouterr().err
    assert "experiment: calibrating the simulated wd800bd [0/5 steps done" in err
    assert "experiment: taking the disk from the calibration [1/5 steps done" in err
    # no rate and no time left, which the steps done would not predict
    assert "step/s" not in err and "<" not in err
