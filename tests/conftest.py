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

import os
import shutil
import signal
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


#: Where a pytest-xdist worker finds the session's background folder in what the controller hands it.
BACKGROUND_KEY = "diskmodel_background"
DOCS_JOB = "docs"
BOUNDS_JOB = "bounds"
_BACKGROUND: list[Path] = []   # the session's background folder (tests/_background.py), once made or handed over


def _background_module():
    """tests/_background.py, found beside this file (also where this file is loaded under another name, as
    tests/test_tiers.py's pytest runs do, whose folder is not on sys.path)."""
    if "_background" not in sys.modules:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_background", Path(__file__).resolve().with_name("_background.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["_background"] = module
        spec.loader.exec_module(module)
    return sys.modules["_background"]


def _background_folder(config) -> Path:
    """The folder of the session's background jobs: the one pytest-xdist's controller made and handed to
    this worker (:func:`pytest_configure_node`), or one made now (the controller, or pytest running the
    tests alone), removed at the session's end once the jobs still running are stopped."""
    if not _BACKGROUND:
        given = getattr(config, "workerinput", {}).get(BACKGROUND_KEY)
        if given:
            _BACKGROUND.append(Path(given))
        else:
            import tempfile

            folder = Path(tempfile.mkdtemp(prefix="diskmodel-tests-"))
            config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
            config.add_cleanup(lambda: _stop_background(folder))
            _BACKGROUND.append(folder)
    return _BACKGROUND[0]


def _stop_background(folder: Path) -> None:
    """At the session's end, the jobs still running (the run was cut short) are stopped: the notebook
    kernels of the documentation's build interrupted first (tests/_background.py, stop_job)."""
    _background = _background_module()

    _background.stop_job(folder / DOCS_JOB, interrupt_sessions=True)
    _background.stop_job(folder / BOUNDS_JOB)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's controller, as it starts a worker: the one background folder of the session, which
    the controller keeps (and cleans up) until every worker has ended."""
    node.workerinput[BACKGROUND_KEY] = str(_background_folder(node.config))


def start_docs_build(job: Path) -> None:
    """Start the documentation's build into *job*, at the lowest CPU priority: nice(1) 19 in the
    test run's own session, and each notebook kernel's autogroup at 19 (:data:`_KERNEL_STARTUP`).

    Most of the build is the notebooks' execution, a few minutes of CPU, while much of the slow tier
    waits rather than computes: on the throwaway VM's emulated CPU (one core), on emulated drives' and
    loop devices' deadlines, on sleeps. Started when the session's tests are collected and read by the
    tests that run last (``pytest_collection_modifyitems``), the build takes the CPU those leave idle."""
    _background = _background_module()

    startup = job / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-lowest-cpu-priority.py").write_text(_KERNEL_STARTUP)
    with open(job / "sphinx-stderr.txt", "w") as stderr:
        _background.start(job, ["nice", "-n", "19", *docs_build_command(job / "html", job / "doctrees")],
                          cwd=REPO_ROOT, env={**os.environ, "IPYTHONDIR": str(job / "ipython")},
                          stdout=subprocess.DEVNULL, stderr=stderr)


def _started_job(name: str) -> Path | None:
    job = _BACKGROUND[0] / name if _BACKGROUND else None
    return job if job is not None and job.is_dir() else None


def docs_build_result(timeout_s: float):
    """Wait for the session's documentation build: ``(exit status, stderr text, output folder)``, or None
    when none was started (the session did not collect a test that reads it)."""
    _background = _background_module()

    job = _started_job(DOCS_JOB)
    if job is None:
        return None
    status = _background.result(job, timeout_s)
    return status, (job / "sphinx-stderr.txt").read_text(), job / "html"


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist's worker sends the controller its collection
def pytest_collection_finish(session):
    """Start the background jobs the collected tests read, once for the session: under pytest-xdist each
    worker collects the same tests, and the first to claim a job's folder starts it. A worker also writes
    down which of its tests are in the serial group, for the controller's scheduler."""
    if session.config.option.collectonly:
        return
    if hasattr(session.config, "workerinput") and getattr(session.config.option, "loadgroup", False):
        ids = _background_folder(session.config) / SERIAL_IDS
        partial = ids.with_name(f"{ids.name}.{os.getpid()}")
        partial.write_text("".join(f"{item.nodeid}\n" for item in session.items if in_serial_group(item)))
        os.replace(partial, ids)
    docs = any(_reads_the_docs(item) for item in session.items)
    bounds = any(BOUNDS_FIXTURE in getattr(item, "fixturenames", ()) for item in session.items)
    if not (docs or bounds):
        return
    _background = _background_module()

    if docs and (job := _background.claim(_background_folder(session.config), DOCS_JOB)) is not None:
        start_docs_build(job)
    if bounds and (job := _background.claim(_background_folder(session.config), BOUNDS_JOB)) is not None:
        start_bounds_compile(job)


# ------------------------------------------------------------------ the bounds-checked compile

#: The fixture of tests/test_simulate_bounds.py that runs the kernel compiled with numba's bounds checks.
BOUNDS_FIXTURE = "bounds_checked"


def start_bounds_compile(job: Path) -> None:
    """Start compiling the kernels with numba's bounds checks (``NUMBA_BOUNDSCHECK=1 python -m
    diskmodel.model._jit``, into ``model/_jit_cache/boundscheck/``) at nice(1) 19, when the session's
    tests are collected; :func:`bounds_compile_result` waits for it. Only tests/test_simulate_bounds.py
    runs that code: compiled here, on the CPU the slow tier leaves idle (as the documentation's build,
    :func:`start_docs_build`), rather than by ``.ci/setup`` beside the simulator's own compile, on the
    setup's critical path. With the code in the cache already (an unchanged checkout), it only loads it."""
    _background = _background_module()

    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_BOUNDSCHECK"] = "1"
    with open(job / "output.txt", "w") as output:
        _background.start(job, ["nice", "-n", "19", sys.executable, "-m", "diskmodel.model._jit"], cwd=REPO_ROOT,
                          env=env, stdout=output, stderr=subprocess.STDOUT)


def bounds_compile_result(timeout_s: float):
    """Wait for the session's bounds-checked compile: ``(exit status, its output)``, or None when none
    was started (the session collected no test that runs that code)."""
    _background = _background_module()

    job = _started_job(BOUNDS_JOB)
    if job is None:
        return None
    status = _background.result(job, timeout_s)
    return status, (job / "output.txt").read_text()


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


# ------------------------------------------------------------------ two workers (pytest-xdist)

#: The pytest-xdist group (setup.cfg's ``-n 2 --dist loadgroup``) whose tests one worker runs one at a
#: time, in collection order, while the other worker runs the rest beside them: every integration test
#: and every test using a device fixture (loop devices, the VM, emulated drives, blktrace and ftrace,
#: cgroups, the page cache: what the kernel holds for the whole host), and every test marked ``serial``
#: (it measures wall time, or changes host-wide state: real-time scheduling, the run registry).
SERIAL_GROUP = "serial"
#: The nice(1) value a pytest-xdist worker takes for a test outside the serial group (and what that test
#: starts), nice 0 for one inside it: where both workers compute, the serial group's timing keeps the
#: larger share of the CPU (CFS weighs nice 10 at about a tenth of nice 0, sched(7)). Root only (lowering
#: a nice value again needs CAP_SYS_NICE), as the integration tests are.
BESIDE_NICE = 10
_RENICE: list[bool] = []   # True in a pytest-xdist worker run as root
_WORKER: list[bool] = []   # True in a pytest-xdist worker


#: The file of the background folder that lists the serial group's node ids, one a line: written by the
#: workers as they collect, read by the controller's scheduler (:func:`pytest_xdist_make_scheduler`).
SERIAL_IDS = "serial-group-ids.txt"


@pytest.hookimpl(tryfirst=True, optionalhook=True)   # before pytest-xdist's own choice
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's loadgroup scheduler, its groups told by :data:`SERIAL_IDS` rather than by the
    ``@group`` suffix the workers add to a grouped test's node id: on pytest 9.2 that suffix is lost (the
    node id is no longer the attribute pytest-xdist 3.8 changes; pytest-xdist issue 1386), and every test
    would be scheduled alone. The workers have all sent their collection when the scheduler splits it."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    folder = _background_folder(config)

    class SerialGroupScheduling(LoadGroupScheduling):
        serial: frozenset[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.serial is None:
                self.serial = frozenset((folder / SERIAL_IDS).read_text().splitlines())
            return SERIAL_GROUP if nodeid in self.serial else super()._split_scope(nodeid)

    return SerialGroupScheduling(config, log)


def in_serial_group(item) -> bool:
    """Whether *item* belongs to :data:`SERIAL_GROUP`."""
    return (item.get_closest_marker("integration") is not None or item.get_closest_marker("serial") is not None
            or bool(DEVICE_FIXTURES.intersection(getattr(item, "fixturenames", ()))))


def pytest_configure(config):
    # A run started in the background of a non-interactive shell (``bash .ci/run &``) inherits SIGINT
    # ignored (POSIX: an asynchronous list ignores SIGINT and SIGQUIT), and so would every program a test
    # starts, which Python leaves ignored: a test that interrupts a run with SIGINT then saw it run on to
    # exit 0. The tests stand for a user's shell, where SIGINT is at its default.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput"):
        _WORKER.append(True)
        if os.geteuid() == 0:
            _RENICE.append(True)


@pytest.hookimpl(tryfirst=True)   # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("soak") is not None:
            item.add_marker(pytest.mark.slow)
    # The tests that read the documentation's build run last, alone and under pytest-xdist alike, so that the
    # build (at nice 19) has the whole run to go on the CPU the tests leave idle (see start_docs_build). Under
    # pytest-xdist they once came first, the worker beside the serial group waiting for the build: it then
    # left the build the CPU, but idled 360-510 s of a run whose two cores are otherwise busy; notebook 08,
    # which that order protected, now runs its emulated drive under SCHED_FIFO and calibrates with a
    # device-time budget a busy host meets (measured in a lone clone: pytest 1171 s against 1212-1320 s
    # with the build first, the last docs test waiting 24 s for it).
    docs = [i for i in items if _reads_the_docs(i)]
    others = [i for i in items if not _reads_the_docs(i)]
    items[:] = others + docs
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            if in_serial_group(item):
                item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))
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
    if _RENICE:
        # PRIO_PROCESS with who 0 sets the calling thread's nice value (setpriority(2), BUGS), the one
        # that runs the test and starts its processes
        os.setpriority(os.PRIO_PROCESS, 0, 0 if in_serial_group(item) else BESIDE_NICE)
    _RUNNING[:] = [item.nodeid]
    try:
        return (yield)
    finally:
        _RUNNING.clear()


#: The name of the report property that carries a test's numba compiles from a pytest-xdist worker to
#: the controller, whose terminal summary lists them: ``(seconds compiling, kernels compiled in a fast test)``.
COMPILES_PROPERTY = "diskmodel_numba_compiles"


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    _FILE_S[path] = _FILE_S.get(path, 0.0) + report.duration
    if getattr(report, "node", None) is not None:   # the pytest-xdist controller, a worker's report
        for name, (seconds, compiles) in (p for p in report.user_properties if p[0] == COMPILES_PROPERTY):
            if seconds:
                _COMPILE_S[report.nodeid] = _COMPILE_S.get(report.nodeid, 0.0) + seconds
            if compiles:
                _NUMBA_COMPILES[report.nodeid] = _NUMBA_COMPILES.get(report.nodeid, 0) + compiles


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
    compiles = (_COMPILE_S.get(item.nodeid, 0.0), _NUMBA_COMPILES.get(item.nodeid, 0))
    if report.when == "teardown" and _WORKER and any(compiles):
        report.user_properties = [*report.user_properties, (COMPILES_PROPERTY, compiles)]
    return report
