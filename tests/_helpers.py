"""Assertions and runners shared by the test modules (imported as ``from _helpers import ...``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ERROR_PREFIX = "diskmodel: error: "
#: The installed console script, beside this Python.
DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))


def assert_one_error_line(stderr: str, *fragments: str | None) -> str:
    """*stderr* is exactly one line ``diskmodel: error: ...``, with no traceback and no usage dump
    (argparse's errors too), holding each of *fragments*; the line is returned.

    A fragment given as None checks nothing, so a table of cases can leave its fragment out.
    """
    assert isinstance(stderr, str), f"give the stderr text, not {type(stderr).__name__}"
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "no error message on stderr"
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith(ERROR_PREFIX), stderr
    for fragment in fragments:
        if fragment is not None:
            assert fragment in line, stderr
    return line


def keep_first_of_each(values, group, ids, keep: int = 1, tier: str = "soak") -> list:
    """*values* as pytest params with *ids*: the first *keep* of each *group* (a function of a value)
    run where the test runs; the others get the marker *tier*: ``soak`` (``pytest -m soak``, out of CI)
    for more seeds or drives of a mechanism the kept ones already check, or ``slow`` to keep them in CI
    but out of the fast tier."""
    import pytest

    mark = getattr(pytest.mark, tier)
    seen: dict = {}
    params = []
    for value, ident in zip(values, ids):
        key = group(value)
        seen[key] = seen.get(key, 0) + 1
        params.append(pytest.param(value, id=ident, marks=() if seen[key] <= keep else (mark,)))
    return params


def one_in_turn(params, group, interchangeable, tier: str = "soak") -> list:
    """*params* (``pytest.param`` objects) with the marker *tier* on all but one of the interchangeable
    ones in each group: *group* (a function of a param's values) names its group, *interchangeable*
    (a function of the values) says whether it is one of the stand-ins for one another (say the caught
    signals, which one handler turns into the same teardown). Group k (in order of first appearance)
    keeps its interchangeable param number k modulo their count, so that each stand-in runs in some
    group where the test runs; params not interchangeable are kept as they are."""
    import pytest

    mark = getattr(pytest.mark, tier)
    members: dict = {}
    for i, param in enumerate(params):
        if interchangeable(param.values):
            members.setdefault(group(param.values), []).append(i)
    dropped = {i for k, indices in enumerate(members.values()) for j, i in enumerate(indices)
               if j != k % len(indices)}
    return [pytest.param(*p.values, id=p.id, marks=(*p.marks, mark)) if i in dropped else p
            for i, p in enumerate(params)]


# Runs the cases one after the other in ONE process, through diskmodel's entry point (main(), what the
# console script calls), each in its own working folder: a process per case would cost its imports each
# time. Exceptions that escape main() are recorded with their traceback, so they fail the test.
CLI_DRIVER = r"""
import contextlib, io, json, os, sys, traceback
from diskmodel.calibrate.cli import main

cases = json.load(open(sys.argv[1]))
results = {}
for ident, (args, work) in cases.items():
    os.chdir(work)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = -1
    results[ident] = {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
json.dump(results, open(sys.argv[2], "w"))
"""


def run_cli_cases(plan: dict, root: Path, env: dict, timeout_s: float = 900) -> dict:
    """Run each case of *plan* ``{id: (argv, working folder)}`` through diskmodel's entry point, all in
    one child process started in *root* with *env*: ``{id: {"code", "stdout", "stderr"}}``."""
    (root / "cases.json").write_text(json.dumps(plan))
    subprocess.run([sys.executable, "-c", CLI_DRIVER, str(root / "cases.json"), str(root / "results.json")],
                   cwd=root, env=env, check=True, timeout=timeout_s)
    return json.loads((root / "results.json").read_text())


class FlatBackend:
    """A flat (flash-like) 64 MiB device for the harness's calibrate: about 1 ms a read, plus its bytes at
    2 GB/s, with a little seeded spread."""

    queue_depth = 1
    size_bytes, block_size_bytes = 64 * 2**20, 4096

    def __init__(self):
        import numpy as np

        self.rng = np.random.default_rng(0)

    def read(self, offset, length):
        return float(self.read_many([offset], length)[0])

    def read_many(self, offsets, length):
        return 1e-3 * self.rng.lognormal(0.0, 0.01, len(offsets)) + length / 2e9


#: How many O_DIRECT reads an emulated drive measures its path's cost with
#: (``diskmodel.calibrate.emulate.devices.PROBE_READS``) in a test that checks what a run builds, says and
#: tears down, not how its requests are timed: each of the full count's reads waits the probe's idle gap and
#: delay, seconds per drive started, while these few still take every size in turn (the first quarter a
#: warm-up, as in the full count) through the same code. The tests that time requests keep the full count.
SHORT_PROBE_READS = 25

# Loaded by a child alone (PYTHONPATH, :func:`short_probe_env`): once the emulated drives' module is
# imported, its probe count (and the shape probe's) is set to $DISKMODEL_TEST_PROBE_READS (an import hook, so that a child that
# never serves a drive imports nothing more).
_SHORT_PROBE_SITECUSTOMIZE = '''
import os, sys
_reads = os.environ.get("DISKMODEL_TEST_PROBE_READS")
if _reads:
    import importlib.util

    class _ShortProbe:
        name = "diskmodel.calibrate.emulate.devices"

        def find_spec(self, fullname, path=None, target=None):
            if fullname != self.name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                module.PROBE_READS = int(_reads)
                module.path_probe.SHAPE_READS = int(_reads)   # the legs' shape probe too
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _ShortProbe())
'''


def short_probe_env(env: dict, folder: Path) -> dict:
    """*env* for a child ``diskmodel emulate`` (or any Python child) whose emulated drives measure their
    path's cost with :data:`SHORT_PROBE_READS` reads: a ``sitecustomize`` in *folder*, put first on
    PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SHORT_PROBE_SITECUSTOMIZE)
    path = f"{folder}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(folder)
    return dict(env, PYTHONPATH=path, DISKMODEL_TEST_PROBE_READS=str(SHORT_PROBE_READS))


def tar_archive_bytes(files: int, file_bytes: int) -> int:
    """The size of GNU tar's archive of a folder of *files* files of *file_bytes* (``tar -cf A -C tree .``: the
    folder's entry, each file's header and data in 512-byte blocks, the end), as Python's tarfile writes it in
    GNU format, in tar's default records of 20 blocks: a reference written apart from the model's."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo(".")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        for i in range(files):
            info = tarfile.TarInfo(f"./f{i:07d}")
            info.size = file_bytes
            tar.addfile(info, io.BytesIO(bytes(file_bytes)))
    return len(out.getvalue())
