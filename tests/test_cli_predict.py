"""The engineer's command line: --version, stack-schema, predict on every kind of drive, units, fio job files.

References are independent of the code under test: the installed distribution's metadata, the node
dataclasses' own fields and defaults, a calibration made by `diskmodel calibrate` on a real file, and
the preset of the same drive.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from diskmodel.calibrate.cli import main

DISKMODEL = [sys.executable, "-m", "diskmodel.calibrate.cli"]


def run(*args, cwd=None):
    return subprocess.run([*DISKMODEL, *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)


def one_error_line(stderr: str, *fragments: str) -> str:
    """stderr is exactly one line ``diskmodel: error: ...`` holding each of *fragments*."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("diskmodel: error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], stderr
    return lines[0]


# ------------------------------------------------------------------ --version

def test_version_prints_the_installed_distributions_version():
    res = run("--version")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"diskmodel {version('diskmodel')}"


# ------------------------------------------------------------------ stack-schema

def _node_classes():
    from diskmodel.model import nodes, stack_schema  # noqa: F401  (registers every kind)

    return {kind: nodes.class_of_kind(kind) for kind in nodes.known_kinds()}


def test_stack_schema_json_lists_every_field_of_every_kind_with_its_dataclass_default():
    res = run("stack-schema", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    classes = _node_classes()
    assert set(data["kinds"]) == set(classes)
    for kind, cls in classes.items():
        listed = {f["name"]: f for f in data["kinds"][kind]["fields"]}
        declared = [f for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")
                    and not (f.name == "kind" and
                             sum(c is cls for c in classes.values()) > 1)]
        assert [f.name for f in declared] == list(listed), kind
        for f in declared:
            entry = listed[f.name]
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                assert entry["required"], (kind, f.name)
                continue
            expected = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            if isinstance(expected, (int, float, str, bool)) or expected is None:
                assert entry["default"] == expected, (kind, f.name)
            assert not entry["required"]


def test_every_field_has_a_meaning_and_every_size_or_time_a_unit():
    from diskmodel.model.stack_schema import UNDOCUMENTED, schema

    data = schema()
    tables = [("stack", data["stack"])] + [(k, v["fields"]) for k, v in data["kinds"].items()] + \
             [(k, v["fields"]) for k, v in data["records"].items()]
    for where, fields in tables:
        for entry in fields:
            assert entry["meaning"] and entry["meaning"] != UNDOCUMENTED, (where, entry["name"])
            assert "\n" not in entry["meaning"]
            if entry["name"].endswith(("_bytes", "_s")):
                assert entry["unit"] in ("bytes", "s") or entry["unit"].startswith(("bytes", "s")), \
                    (where, entry["name"], entry["unit"])
    # the records the nodes hold are described too: the network link, LVM segments, file-system parameters
    assert {"Network", "Segment", "FileSystem"} <= set(data["records"])
    assert data["kinds"]["nbd"]["records"] == {"network": "Network"}


def test_stack_schema_text_shows_units_and_defaults_without_scientific_notation():
    res = run("stack-schema", "--kind", "loop_file")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "kind loop_file" in out and "kind raid1" not in out
    # LoopFile.request_overhead_s defaults to 10 microseconds: printed as digits, with its unit
    assert "request_overhead_s [s]: float, default 0.00001 s" in out
    assert "image_size_bytes [bytes]: int, default required" in out
    assert not re.search(r"\d[eE][+-]?\d", out), [line for line in out.splitlines() if re.search(r"\d[eE][+-]?\d", line)]
    assert "1 MB = 10^6 bytes" in out


def test_a_field_added_to_a_node_appears_in_the_schema_from_its_docstring():
    """Generated, never hand-copied: a new node type's fields and docstring are listed as declared."""
    from diskmodel.model import nodes
    from diskmodel.model.stack_schema import schema

    @nodes.node_type("test_only_ramdisk")
    @dataclasses.dataclass(frozen=True)
    class RamDisk:
        """A RAM disk (brd).

        Attributes
        ----------
        size_bytes : int
            What it holds [bytes]. The rest is not the meaning.
        latency_s : float
            Per request.
        """

        size_bytes: int
        latency_s: float = 2e-6

    try:
        entry = schema()["kinds"]["test_only_ramdisk"]
    finally:
        nodes._CLASS_OF_KIND.pop("test_only_ramdisk")
        nodes._KINDS_OF_CLASS.pop(RamDisk)
    assert entry["summary"] == "A RAM disk (brd)."
    assert entry["fields"][0] == {"name": "size_bytes", "type": "int", "unit": "bytes", "required": True,
                                  "default": None, "meaning": "What it holds [bytes]."}
    assert entry["fields"][1]["unit"] == "s" and entry["fields"][1]["default"] == 2e-6


def test_predict_help_points_to_stack_schema():
    res = run("predict", "--help")
    assert res.returncode == 0
    assert "diskmodel stack-schema" in re.sub(r"-\s+", "-", " ".join(res.stdout.split()))  # argparse wraps at "-"


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_a_bad_flag_of_every_subcommand_is_one_line(capsys):
    import argparse

    from diskmodel.calibrate.cli import build_parser

    parser = build_parser()
    names = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert "stack-schema" in names
    for name in names:
        assert _exit_code([name, "--no-such-flag"]) == 2, name
        one_error_line(capsys.readouterr().err, "--no-such-flag", f"diskmodel {name} --help")
    assert _exit_code(["stack-schema", "--kind", "floppy"]) == 2
    one_error_line(capsys.readouterr().err, "--kind", "floppy", "partition")


# ------------------------------------------------------------------ a flat (flash) calibration

@pytest.fixture(scope="module")
def flat_calibration(tmp_path_factory):
    """A calibration by `diskmodel calibrate` of a written regular file: no mechanical seek, a flat latency model."""
    folder = tmp_path_factory.mktemp("flat")
    image = folder / "image"
    with open(image, "wb") as out:
        out.write(bytes(range(256)) * (32 * 4096))  # 32 MiB of written data (no holes)
    res = run("calibrate", image, "--budget-s", "3", "--json", folder / "cal.json", "--no-progress")
    assert res.returncode == 0, res.stderr
    data = json.loads((folder / "cal.json").read_text())
    if data["mechanical_seek"]:
        pytest.skip("this machine's file storage showed a mechanical seek")
    return folder / "cal.json", data


@pytest.mark.integration
@pytest.mark.slow
def test_a_flat_calibration_predicts_from_its_latency_model(flat_calibration, tmp_path):
    path, data = flat_calibration
    stack = {"format": "diskmodel.stack", "disks": [{"kind": "calibration", "path": str(path), "name": "sda"}],
             "file_system": {"kind": "ext4", "volume": {"kind": "partition", "start_bytes": 0,
                                                        "size_bytes": 16_000_000, "disk": "sda"}}}
    (tmp_path / "stack.json").write_text(json.dumps(stack))
    res = run("predict", "--stack", tmp_path / "stack.json", "--workload", "randread_4k", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    # the calibration's own flat model: a mean latency per block read plus its bytes at the measured rate
    model = data["latency_model"]
    assert out["parts_s"]["seek_s"] == 0.0
    assert out["latency_s"] == pytest.approx(model["mean_s"] + 4096 * model["per_byte_s"], rel=0.35)
    assert out["assumptions"] == []
    res = run("predict", "--stack", tmp_path / "stack.json", "--workload", "randread_4k", "--complete-from",
              "wd800bd")
    one_error_line(res.stderr, "--complete-from wd800bd", "flat latency model")


# ------------------------------------------------------------------ a calibrated hard disk and its preset

@pytest.fixture
def calibrated_wd800bd(monkeypatch, tmp_path):
    """--calibration FILE giving the wd800bd preset as a calibration gives it: no drive cache, no interface
    rate (model.fit.calibration_views.calibrated_disk sets neither)."""
    from diskmodel.calibrate import stacks
    from diskmodel.model.presets import load_preset

    preset = load_preset("wd800bd")
    assert preset.cache_size_bytes > 0 and math.isfinite(preset.interface_rate_bytes_per_s)
    calibrated = preset.evolve(cache_size_bytes=0, drive_cache=None, interface_rate_bytes_per_s=float("inf"))
    monkeypatch.setattr(stacks, "disk_of", lambda drive, relative_to=None: calibrated)
    path = tmp_path / "cal.json"
    path.write_text("{}")
    return str(path)


def test_a_calibrated_hard_disk_says_in_the_first_line_that_its_cache_is_absent(calibrated_wd800bd, capsys):
    assert main(["predict", "--calibration", calibrated_wd800bd, "--workload", "test2"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("note: --calibration ") and "no drive cache" in first
    assert "infinite interface rate" in first and "--complete-from" in first


def test_complete_from_the_same_drives_preset_gives_the_presets_prediction(calibrated_wd800bd, capsys):
    assert main(["predict", "--json", "--disk", "wd800bd", "--workload", "test2"]) == 0
    preset = json.loads(capsys.readouterr().out)
    assert main(["predict", "--json", "--calibration", calibrated_wd800bd, "--workload", "test2"]) == 0
    bare = json.loads(capsys.readouterr().out)
    assert main(["predict", "--json", "--calibration", calibrated_wd800bd, "--workload", "test2",
                 "--complete-from", "wd800bd"]) == 0
    completed = json.loads(capsys.readouterr().out)
    assert bare["elapsed_s"] != pytest.approx(preset["elapsed_s"], rel=0.01)  # the cache and the link matter
    assert completed["elapsed_s"] == pytest.approx(preset["elapsed_s"], rel=1e-9)
    assert completed["assumptions"][0].startswith("assumption: --calibration ")
    assert "from preset wd800bd" in completed["assumptions"][0]
    assert main(["predict", "--disk", "wd800bd", "--complete-from", "wd800bd"]) == 2
    one_error_line(capsys.readouterr().err, "--complete-from", "--disk wd800bd")
    assert main(["predict", "--calibration", calibrated_wd800bd, "--complete-from", "floppy"]) == 2
    one_error_line(capsys.readouterr().err, "--complete-from floppy", "wd800bd")


# ------------------------------------------------------------------ one unit convention

def test_predict_prints_si_megabytes_and_no_scientific_notation(capsys):
    assert main(["predict", "--json", "--workload", "test1"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert main(["predict", "--workload", "test1"]) == 0
    out = capsys.readouterr().out
    assert f"read {figures['read_throughput_bytes_per_s'] / 1e6:.2f} MB/s" in out
    assert f"write {figures['write_throughput_bytes_per_s'] / 1e6:.2f} MB/s" in out
    assert "MB = 10^6 bytes" in out
    assert not re.search(r"\d[eE][+-]?\d", out), out
    # every term of eq. (1) is explained on its line
    for term in ("T_DO", "T_MO", "T_FL", "T_DFA", "T_J"):
        line = next(line for line in out.splitlines() if line.startswith(term + " "))
        assert "(eq. 1)" in line
    assert "MiB" not in run("predict", "--help").stdout
