"""benchmarks/iopath_check.py's own bookkeeping: options checked before any cell runs, and the notes
carried from an artifact whose rows are kept."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO_ROOT


@pytest.fixture
def iopath_check():
    spec = importlib.util.spec_from_file_location("iopath_check", REPO_ROOT / "benchmarks" / "iopath_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_misspelt_name_is_refused_before_any_cell_runs(iopath_check, monkeypatch):
    def ran(*_args, **_kwargs):
        raise AssertionError("a cell ran before every option was checked")

    monkeypatch.setattr(iopath_check, "_host_rows", ran)
    monkeypatch.setattr(iopath_check, "_fs_rows", ran)
    with pytest.raises(SystemExit, match=r"--vm-stacks 'raid7' is not one of "):
        iopath_check.main(["--vm-stacks", "raid7"])


def test_kept_notes_carry_each_earlier_note_once_with_one_prefix(iopath_check):
    kept = iopath_check.KEPT
    earlier = ["wall time 812 s", "cells re-run on 2026-12-03", kept + "VM output read from x",
               kept + kept + "VM output read from x", "page-cache cells alone (3 device rows): ...", "shared note"]
    out = iopath_check._kept_notes(earlier, ["shared note"])
    assert out == [kept + "cells re-run on 2026-12-03", kept + "VM output read from x"]
