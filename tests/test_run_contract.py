"""What a run leaves and what it keeps, on the paths the fault matrix does not take: a scratch file kept on
request (``--keep``) by a run that was then killed, ``diskmodel postmark --keep`` end to end, and the
emulated drives ended by SIGTERM, SIGHUP and SIGQUIT as by SIGINT (the matrix sends those SIGINT and SIGKILL
alone; CI one of the three per phase, in turn). Each is checked by looking at the system: the files, the state folder, ``losetup``, the mounts, the
run's descendants."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_root, require_tools
import _faults
from _helpers import one_in_turn

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))

# A run that makes a scratch file kept on request (--keep) and a folder of its own, then dies by SIGKILL.
_KEEP_THEN_DIE = """
import os, signal, sys
from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.harness.scratch import prepare_scratch
with runstate.ensure_run("test keep then SIGKILL") as run:
    prepare_scratch(sys.argv[1], 1 << 20, keep=True).close()
    print(run.work_dir(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_run_that_kept_its_scratch_is_cleaned_up_and_the_scratch_stays(tmp_path):
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(tmp_path / "run"))
    kept = tmp_path / "kept.img"
    proc = subprocess.run([sys.executable, "-c", _KEEP_THEN_DIE, str(kept)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    work = Path(proc.stdout.strip())
    assert work.is_dir() and kept.is_file()
    states = [r["state"] for p in (tmp_path / "run").glob("*.json") for r in json.loads(p.read_text())["resources"]]
    assert "kept" in states, states
    res = subprocess.run([DISKMODEL, "cleanup"], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "skipped" not in res.stdout, res.stdout + res.stderr
    assert not work.exists(), "cleanup did not remove the dead run's folder"
    assert kept.is_file() and kept.stat().st_size == 1 << 20, "cleanup removed the scratch kept on request"
    assert list((tmp_path / "run").glob("*.json")) == []


@pytest.mark.integration
@pytest.mark.slow
def test_postmark_keep_keeps_the_scratch_and_tears_down_the_rest(tmp_path):
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount")
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(tmp_path / "run"))
    env.pop("DISKMODEL_DEBUG", None)
    scratch = tmp_path / "s.img"
    run = ["postmark", "--layout", "native", "--workload", "test1", "--size", "16M", "--files", "50",
           "--transactions", "500", "--max-size", "8000", "--quiet", "--scratch", str(scratch)]
    res = subprocess.run([DISKMODEL, *run, "--keep"], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert scratch.is_file() and scratch.stat().st_size >= 16 * 10 ** 6, "--keep: the scratch file is gone"
    assert _faults.loops_over(tmp_path) == [] and _faults.mounts_of(tmp_path, -1) == []
    assert list((tmp_path / "run").glob("*.json")) == []
    scratch.unlink()
    res = subprocess.run([DISKMODEL, *run], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert not scratch.exists(), "without --keep the scratch file the tool made stays"


# Each phase with one of the signals in turn (losetup: SIGQUIT, serve: SIGTERM, the end the help names);
# `pytest -m soak` runs the others. One handler turns all three into the interruption
# (host_executor.handle_signals), and test_faults.py's
# test_every_subcommand_turns_the_four_signals_into_one_line_and_128_plus_n checks each signal on emulate.
_EMULATE_CELLS = one_in_turn([pytest.param(phase, signum, id=f"{int(signum)}-{phase}")
                              for phase in ("losetup", "serve")
                              for signum in (signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)],
                             lambda v: v[0], lambda v: True)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("phase, signum", _EMULATE_CELLS)
def test_emulate_ends_on_each_signal_as_on_sigint(tmp_path, phase, signum):
    """Caught while setting up (``losetup``): 128+N, the one line and the teardown's report; while serving:
    the normal end (status 0, the results); either way nothing left. CI runs SIGQUIT while setting up and
    SIGTERM while serving, the soak tier the other four cells (the handler: see _EMULATE_CELLS)."""
    require_root()
    require_tools(*_faults.TOOLS["emulate"])
    problems = _faults.run_cell(tmp_path / "t", "emulate", phase, signum)
    assert problems == [], "\n".join(problems)


@pytest.mark.integration
@pytest.mark.slow  # asks dpkg
def test_every_program_a_run_may_miss_is_named_with_the_debian_package_dpkg_says_holds_it(tmp_path):
    """The programs a plan's steps and undos run (a stack of nested loop files, an LVM, md and btrfs stack's
    undos) each map to a package, and for each installed one (the emulator's tools too) ``dpkg -S`` names
    that package: the one-line refusal's ``apt-get install`` line installs what is missing."""
    from diskmodel.calibrate.bench import provision
    from diskmodel.calibrate.bench.steps import UNDO_ARGV
    from diskmodel.calibrate.emulate.devices import TOOLS as EMULATOR_TOOLS
    from diskmodel.calibrate.harness.tools import DEBIAN_PACKAGES, tools_of_plan

    require_tools("dpkg")
    stack = json.loads(_faults._bench_stack(tmp_path).read_text())
    from diskmodel.model.stacks.stack import Stack

    plan = provision.build_plan(Stack.from_json(json.dumps(stack)), backing=str(tmp_path / "s.img"), file_system=True)
    programs = set(tools_of_plan(plan)) | {argv[0] for argv, _ in UNDO_ARGV.values()}
    assert {"rmdir", "losetup", "mkfs.ext3"} <= programs
    assert sorted(programs - set(DEBIAN_PACKAGES)) == []
    wrong = {}
    from diskmodel.calibrate.bench.tool_workloads import TOOLS as WORKLOAD_TOOLS

    assert sorted(set(EMULATOR_TOOLS).union(*WORKLOAD_TOOLS.values()) - set(DEBIAN_PACKAGES)) == []
    candidates = {}
    for name in DEBIAN_PACKAGES:
        path = shutil.which(name)
        if path is not None:
            candidates[name] = {path, os.path.realpath(path), path.replace("/usr/", "/", 1)}
    # one dpkg -S for every path (a path without wildcards matches itself alone, dpkg-query(1)); a path no
    # package holds is named on stderr and left out
    out = subprocess.run(["dpkg", "-S", *sorted(set().union(*candidates.values()))], capture_output=True, text=True)
    holders: dict[str, set] = {}
    for line in out.stdout.splitlines():
        packages, _, held = line.partition(": ")
        holders.setdefault(held.strip(), set()).update(p.strip() for p in packages.split(","))
    for name, paths in candidates.items():
        owners = set().union(*(holders.get(p, set()) for p in paths))
        if DEBIAN_PACKAGES[name] not in owners:
            wrong[name] = (DEBIAN_PACKAGES[name], sorted(owners))
    assert wrong == {}
