"""Shared fixtures, and the checks that keep the test tiers apart.

Integration tests need real tools (loop devices, mkfs, postmark, fio, qemu) and
root. Where one is missing they skip with the reason, except when
``DISKMODEL_REQUIRE_INTEGRATION=1`` (set by .ci/run): then a missing tool fails
the run, so CI can never pass by skipping what it was meant to test.

Tiers (markers in setup.cfg): ``pytest -m "not slow"`` is the fast tier, pure
Python against references; ``pytest`` (what .ci/run runs) adds the ``slow``
tests; ``pytest -m soak`` runs the extra seeds and drives kept out of CI
(setup.cfg's ``-m "not soak"``; a soak test is slow too). The
fast tier cannot grow by accident: collection refuses an ``integration`` test
(or one using a device fixture) that is not marked ``slow``, and a test not
marked ``slow`` fails if it needs root or real tools (``require_root``,
``require_tools``), starts a program that boots the VM or builds devices, or
gives a subprocess its own numba cache or bounds checking (a fresh compile).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_DISKSIM = REPO_ROOT / "data" / "disksim"
REQUIRE_INTEGRATION = os.environ.get("DISKMODEL_REQUIRE_INTEGRATION") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip with *reason*, or fail when the environment demands integration tests."""
    if REQUIRE_INTEGRATION:
        pytest.fail(f"DISKMODEL_REQUIRE_INTEGRATION=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def require_tools(*names: str) -> None:
    _refuse_in_the_fast_tier(f"it needs the tools {', '.join(names)}")
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        skip_or_fail(f"missing tools: {', '.join(missing)}")


def require_root() -> None:
    _refuse_in_the_fast_tier("it needs root")
    if os.geteuid() != 0:
        skip_or_fail("needs root (loop devices, mounts)")


def wait_for(cond, timeout_s: float, what: str, *, poll_s: float = 0.02):
    """Poll *cond* until it returns something true, and return that; AssertionError naming *what* after *timeout_s*."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        value = cond()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.fixture(scope="session")
def disksim_dir() -> Path:
    """data/disksim, DiskSim's measured drives as the package ships them."""
    assert BUNDLED_DISKSIM.is_dir(), f"the bundled DiskSim data {BUNDLED_DISKSIM} is missing from the checkout"
    return BUNDLED_DISKSIM


@pytest.fixture(scope="session")
def preset_leave_one_test_out():
    """``leave_one_test_out`` of the WD800BD preset on the paper's Tables 4-6, ``(frame, fits)``: the
    reference several test files compare with, computed once (three PostMark fits). Read it, do not
    change it."""
    from diskmodel.data.tables import postmark_results
    from diskmodel.model.fit.paper import leave_one_test_out
    from diskmodel.model.drive.presets import load_preset

    return leave_one_test_out(load_preset("wd800bd"), postmark_results())


@pytest.fixture
def loops(request):
    """Loop devices and mounts made by a test, torn down (and checked gone) even when it fails."""
    from _loopdev import LoopDevices

    require_root()
    require_tools("losetup", "mount", "umount", "mkfs.ext4")
    manager = LoopDevices()
    request.addfinalizer(manager.teardown)
    return manager


# ------------------------------------------------------------------ the documentation's build

DOCS = REPO_ROOT / "docs"
#: The fixture of tests/test_docs.py that the built site is.
DOCS_FIXTURE = "built_docs"
_DOCS_BUILD: list = []   # the build started for this session: (Popen, output folder, stderr file, start time)


def _reads_the_docs(item) -> bool:
    return DOCS_FIXTURE in getattr(item, "fixturenames", ())


def docs_build_command(out: Path, doctrees: Path) -> list[str]:
    """The README's documentation command with warnings as errors, into *out*: -T, the traceback on
    stderr (a notebook's failing cell) rather than in a log file; -j auto, the pages (and so the notebooks
    myst-nb executes) read by one process per core."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-T", "-j", "auto", "-b", "html",
            "-d", str(doctrees), str(DOCS), str(out)]


#: Run by each notebook kernel of the documentation's build as it starts (an IPython startup file):
#: jupyter_client starts a kernel in a session of its own, and so in an autogroup of its own
#: (sched(7), "The autogroup feature"), whose CPU share nice(1) does not lower; this lowers it.
_KERNEL_STARTUP = """\
try:
    with open("/proc/self/autogroup", "w") as autogroup:
        autogroup.write("19")
except OSError:   # a kernel without autogroups: its nice value alone, inherited from the build
    pass
"""


def start_docs_build(folder: Path) -> None:
    """Start the documentation's build into *folder*, at the lowest CPU priority: nice(1) 19 in the
    test run's own session, and each notebook kernel's autogroup at 19 (:data:`_KERNEL_STARTUP`).

    Most of the build is the notebooks' execution, a few minutes of CPU, while much of the slow tier
    waits rather than computes: on the throwaway VM's emulated CPU (one core), on emulated drives' and
    loop devices' deadlines, on sleeps. Started when the session's tests are collected and read by the
    tests that run last (``pytest_collection_modifyitems``), the build takes the CPU those leave idle."""
    out = folder / "html"
    startup = folder / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-lowest-cpu-priority.py").write_text(_KERNEL_STARTUP)
    stderr = open(folder / "sphinx-stderr.txt", "w+")
    proc = subprocess.Popen(["nice", "-n", "19", *docs_build_command(out, folder / "doctrees")], cwd=REPO_ROOT,
                            env={**os.environ, "IPYTHONDIR": str(folder / "ipython")},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, process_group=0)
    _DOCS_BUILD.append((proc, out, stderr, time.monotonic()))


def docs_build_result(timeout_s: float):
    """Wait for the session's documentation build: ``(exit status, stderr text, output folder)``, or None
    when none was started (the session did not collect a test that reads it)."""
    if not _DOCS_BUILD:
        return None
    proc, out, stderr, _ = _DOCS_BUILD[0]
    proc.wait(timeout=timeout_s)
    stderr.seek(0)
    return proc.returncode, stderr.read(), out


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    if not _DOCS_BUILD and any(_reads_the_docs(item) for item in session.items):
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="diskmodel-docs-"))
        session.config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        session.config.add_cleanup(_stop_docs_build)
        start_docs_build(folder)
    if not _BOUNDS_COMPILE and any(BOUNDS_FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
        session.config.add_cleanup(_stop_bounds_compile)
        start_bounds_compile()


def _descendants(pid: int) -> list[int]:
    """The processes under *pid*, children first (from /proc's parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):   # gone meanwhile
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(0), [])
        found += below
        todo += below
    return found


def _stop_docs_build() -> None:
    """At the session's end, a build still running (the run was cut short) is stopped. Its notebook
    kernels, in sessions of their own, get SIGINT first, as an interrupted cell in Jupyter does: the
    cell's ``with`` blocks tear down what it built (an emulated drive's loop device and mount), which a
    kernel that merely loses its parent would not (ipykernel's parent poller exits at once); once
    nothing runs below them (a minute at most), the build's process group gets SIGTERM, then SIGKILL
    after a minute."""
    import signal

    for proc, _, stderr, _ in _DOCS_BUILD:
        if proc.poll() is None:
            kernels = [p for p in _descendants(proc.pid) if _session_of(p) == p]
            for pid in kernels:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGINT)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and any(_descendants(pid) for pid in kernels):
                time.sleep(0.2)
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        stderr.close()


# ------------------------------------------------------------------ the bounds-checked compile

#: The fixture of tests/test_simulate_bounds.py that runs the kernel compiled with numba's bounds checks.
BOUNDS_FIXTURE = "bounds_checked"
_BOUNDS_COMPILE: list = []   # the compile started for this session: (Popen, its output file)


def start_bounds_compile() -> None:
    """Start compiling the kernels with numba's bounds checks (``NUMBA_BOUNDSCHECK=1 python -m
    diskmodel.model._jit``, into ``model/_jit_cache/boundscheck/``) at nice(1) 19, when the session's
    tests are collected; :func:`bounds_compile_result` waits for it. Only tests/test_simulate_bounds.py
    runs that code: compiled here, on the CPU the slow tier leaves idle (as the documentation's build,
    :func:`start_docs_build`), rather than by ``.ci/setup`` beside the simulator's own compile, on the
    setup's critical path. With the code in the cache already (an unchanged checkout), it only loads it."""
    import tempfile

    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_BOUNDSCHECK"] = "1"
    output = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "diskmodel.model._jit"], cwd=REPO_ROOT,
                            env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                            process_group=0)
    _BOUNDS_COMPILE.append((proc, output))


def bounds_compile_result(timeout_s: float):
    """Wait for the session's bounds-checked compile: ``(exit status, its output)``, or None when none
    was started (the session collected no test that runs that code)."""
    if not _BOUNDS_COMPILE:
        return None
    proc, output = _BOUNDS_COMPILE[0]
    proc.wait(timeout=timeout_s)
    output.seek(0)
    return proc.returncode, output.read()


def _stop_bounds_compile() -> None:
    """At the session's end, a compile still running (the run was cut short) is stopped."""
    import signal

    for proc, output in _BOUNDS_COMPILE:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        output.close()


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


# ------------------------------------------------------------------ the tiers

#: Fixtures that build devices or boot the VM: a test using one belongs to the slow tier.
DEVICE_FIXTURES = frozenset({"loops"})
#: Programs that boot the VM, build devices or drive real I/O (their basenames; ``mkfs.*`` and
#: ``qemu-system-*`` by prefix).
SLOW_PROGRAMS = frozenset({"losetup", "mount", "mkfs", "pvcreate", "vgcreate", "lvcreate", "mdadm", "dmsetup",
                           "nbdkit", "nbdfuse", "postmark", "fio", "blktrace", "bonnie++", "partx", "sfdisk"})
SLOW_PROGRAM_PREFIXES = ("mkfs.", "qemu-system-")
LOSETUP_LISTING = frozenset({"-l", "--list", "-J", "--json", "-a", "--all"})
LOSETUP_CHANGING = frozenset({"-f", "--find", "-d", "--detach", "-D", "--detach-all", "-c", "--set-capacity"})
#: Environment variables that make a numba subprocess compile afresh rather than load the cache.
FRESH_COMPILE_ENV = ("NUMBA_CACHE_DIR", "NUMBA_BOUNDSCHECK", "NUMBA_DISABLE_JIT", "NUMBA_OPT")


_FAST_TEST: list[str] = []           # the node id of the running test while it is not marked slow
_FAST_TEST_REFUSALS: list[str] = []  # why that test belongs to the slow tier, as found
TIER_ADVICE = "mark it @pytest.mark.slow (and @pytest.mark.integration if it drives real tools)"


def _refuse_in_the_fast_tier(reason: str) -> None:
    """Fail the running test if it is not marked slow, *reason* saying why it belongs to the slow tier
    (``pytest.fail`` raises a BaseException, so the code under test cannot swallow it)."""
    if _FAST_TEST:
        _FAST_TEST_REFUSALS.append(reason)
        pytest.fail(f"not marked slow but {reason}; {TIER_ADVICE}", pytrace=False)


def slow_tier_reason(argv, env=None) -> str | None:
    """Why starting *argv* (with environment *env*, None for the inherited one) belongs to the slow
    tier, or None when a fast test may start it."""
    words = [str(w) for w in ([argv] if isinstance(argv, (str, bytes, os.PathLike)) else argv)]
    if not words:
        return None
    program = os.path.basename(words[0])
    if program in SLOW_PROGRAMS or program.startswith(SLOW_PROGRAM_PREFIXES):
        if program.startswith("qemu-system-") and words[1:] == ["--version"]:
            return None     # vm_available's probe: asks qemu its version, boots nothing
        if program == "losetup" and LOSETUP_LISTING.intersection(words) and not LOSETUP_CHANGING.intersection(words):
            return None     # lists the loop devices (losetup(8) -l, -J): builds nothing
        return f"it starts {program}"
    if env is not None:
        fresh = [name for name in FRESH_COMPILE_ENV if env.get(name) != os.environ.get(name)]
        if fresh:
            return f"it gives a subprocess its own {', '.join(fresh)} (numba compiles afresh)"
    return None


def untiered_items(items) -> list[str]:
    """The node ids, with the reason, of *items* that drive real tools or device fixtures without ``slow``."""
    found = []
    for item in items:
        if item.get_closest_marker("slow") is not None:
            continue
        fixtures = sorted(DEVICE_FIXTURES.intersection(getattr(item, "fixturenames", ())))
        if item.get_closest_marker("integration") is not None:
            found.append(f"{item.nodeid} (marked integration)")
        elif fixtures:
            found.append(f"{item.nodeid} (uses {', '.join(fixtures)})")
    return found


@pytest.hookimpl(tryfirst=True)   # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("soak") is not None:
            item.add_marker(pytest.mark.slow)
    # the tests that read the documentation's build run last, so that the build has the whole run to go
    # (see start_docs_build)
    items[:] = [i for i in items if not _reads_the_docs(i)] + [i for i in items if _reads_the_docs(i)]
    untiered = untiered_items(items)
    if untiered:
        raise pytest.UsageError("these tests drive real tools but are not marked slow, so `pytest -m \"not slow\"`"
                                " would run them; mark them @pytest.mark.slow: " + "; ".join(untiered))


@pytest.fixture(autouse=True)
def _fast_tier_starts_no_slow_program(request, monkeypatch):
    """In a test not marked ``slow``: starting a program :func:`slow_tier_reason` names, or calling
    ``require_root`` or ``require_tools``, fails the test."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    original = subprocess.Popen.__init__

    def guarded(self, args, *a, **kw):
        reason = slow_tier_reason(args, kw.get("env", a[9] if len(a) > 9 else None))
        if reason is not None:
            _refuse_in_the_fast_tier(reason)
        original(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
    _listen_for_numba_compiles()
    _FAST_TEST_REFUSALS.clear()
    _FAST_TEST.append(request.node.nodeid)
    try:
        yield
    finally:
        _FAST_TEST.clear()
    call = getattr(request.node, "_tier_call_report", None)
    if _FAST_TEST_REFUSALS and call is not None and not call.failed:   # the code under test swallowed it
        pytest.fail(f"not marked slow but {_FAST_TEST_REFUSALS[0]}; {TIER_ADVICE}", pytrace=False)


_NUMBA_COMPILES: dict[str, int] = {}   # fast test -> kernels numba compiled (not loaded from its cache) in it
_NUMBA_LISTENING: list[bool] = []
_COMPILE_STARTS: list[float] = []      # the start times of the compiles under way (a compile nests its callees')
_COMPILE_S: dict[str, float] = {}      # test (any tier) -> wall time numba spent compiling in this process [s]
_RUNNING: list[str] = []               # the node id of the running test (setup, call and teardown)
_FILE_S: dict[str, float] = {}         # test file -> its tests' setup, call and teardown time [s]
#: How many rows the run's summary gives of the time per test file and of the numba compiles.
SUMMARY_ROWS = 25


def _listen_for_numba_compiles() -> None:
    """Once numba is imported, count its compiles per fast test: numba fires ``numba:compile`` only
    when a kernel is not in its cache (numba.core.dispatcher, ``Dispatcher.compile``)."""
    if _NUMBA_LISTENING or "numba" not in sys.modules:
        return
    from numba.core import event

    class CompileCounter(event.Listener):
        def on_start(self, ev):
            if _FAST_TEST:
                _NUMBA_COMPILES[_FAST_TEST[0]] = _NUMBA_COMPILES.get(_FAST_TEST[0], 0) + 1
            _COMPILE_STARTS.append(time.perf_counter())

        def on_end(self, ev):
            started = _COMPILE_STARTS.pop()
            if not _COMPILE_STARTS:   # the outermost compile: its callees' compiles are inside it
                test = _RUNNING[0] if _RUNNING else "(outside a test)"
                _COMPILE_S[test] = _COMPILE_S.get(test, 0.0) + time.perf_counter() - started

    event.register("numba:compile", CompileCounter())
    _NUMBA_LISTENING.append(True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _listen_for_numba_compiles()
    _RUNNING[:] = [item.nodeid]
    try:
        return (yield)
    finally:
        _RUNNING.clear()


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    _FILE_S[path] = _FILE_S.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """Where the run's time went: the time per test file and the numba compiles per test (the slow tier
    should compile what .ci/setup did not, once); and the fast tests that compiled numba kernels: the
    fast tier assumes a warm cache (.ci/setup compiles the simulator), so these either ran on a cold one
    or compile a kernel no other run does."""
    if len(_FILE_S) > 1:
        terminalreporter.section(f"time per test file (setup, call and teardown; the {SUMMARY_ROWS} longest)")
        for path, seconds in sorted(_FILE_S.items(), key=lambda kv: -kv[1])[:SUMMARY_ROWS]:
            terminalreporter.write_line(f"{seconds:8.1f} s  {path}")
        terminalreporter.write_line(f"{sum(_FILE_S.values()):8.1f} s  in all, {len(_FILE_S)} files")
    if _COMPILE_S:
        terminalreporter.section(f"numba compiles in this process, per test (the {SUMMARY_ROWS} longest)")
        for nodeid, seconds in sorted(_COMPILE_S.items(), key=lambda kv: -kv[1])[:SUMMARY_ROWS]:
            terminalreporter.write_line(f"{seconds:8.1f} s  {nodeid}")
        terminalreporter.write_line(f"{sum(_COMPILE_S.values()):8.1f} s  in all")
    if _NUMBA_COMPILES:
        terminalreporter.section("fast-tier tests that compiled numba kernels (cold cache, or mark them slow)")
        for nodeid, count in sorted(_NUMBA_COMPILES.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{count:5d}  {nodeid}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item._tier_call_report = report
    return report
