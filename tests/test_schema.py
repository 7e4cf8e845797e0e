"""The one schema system (pydantic v2) of the documents diskmodel reads: stack files and calibration files.

References: the documents the writers produce (``Stack.to_json``, ``calibration_to_json``), the golden
calibration file in tests/golden, and jsonschema (an independent JSON Schema validator) for the JSON Schema
that ``diskmodel stack-schema --json`` prints.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from diskmodel.calibrate.harness.results import (CalibrationFileError, calibration_from_dict, calibration_from_json,
                                                 calibration_to_dict, validate_calibration_dict)
from diskmodel.model.stacks import nodes
from diskmodel.model.drive.drives import FileDrive, PresetDrive
from diskmodel.model.stacks.loop_file import nested_loop_files
from diskmodel.model.stacks.network import Network, NbdDevice, NfsMount
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.schema import NodeSchema
from diskmodel.model.stacks.stack import NODE_SCHEMA, NODE_TYPES, FileSystemNode, Stack, paper_stack
from diskmodel.model.stacks.stack_schema import schema
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.units import GIB, MIB
from diskmodel.model.stacks.volumes import Partition, StripedVolume

GOLDEN_CALIBRATION = Path(__file__).parent / "golden" / "calibration_wd800bd_simulated.json"


def _part(disk: str, start_bytes: int = MIB, size_bytes: int = GIB) -> Partition:
    return Partition(start_bytes, size_bytes, disk=disk)


def _stacks() -> dict[str, Stack]:
    """A stack of every readable node kind: the paper's three, and block layers, a network and NFS above them."""
    disks = tuple(PresetDrive("wd800bd", d) for d in "abcd")
    members = tuple(_part(d) for d in "abcd")
    raid = RaidArray("raid5", members, chunk_size_bytes=128 * 1024, read_policy=None, failed_members=(2,))
    thin = ThinVolume(RaidArray("raid1", members[:2]), 256 * MIB, 2 * GIB, used_bytes=MIB)
    nbd = NbdDevice(_part("a"), Network(12.5e6, 2e-3))
    nfs = NfsMount(FileSystemNode(_part("a"), kind="xfs"), Network(125e6, 1e-4, mtu_bytes=9000))
    out = {name: paper_stack(name) for name in ("native", "lvm1", "lvm2")}
    out["raid5"] = Stack(FileSystemNode(raid, kind="ext4", mount_options=("noatime",)), disks)
    out["thin"] = Stack(FileSystemNode(thin, kind="btrfs"), disks[:2])
    out["loop"] = Stack(FileSystemNode(nested_loop_files(_part("a"), 2, allocation="zero_filled"), kind="ext2"),
                        disks[:1])
    out["nbd"] = Stack(FileSystemNode(nbd, kind="ext3"), disks[:1], "over the network")
    out["nfs"] = Stack(nfs, disks[:1])
    out["disksim"] = Stack(FileSystemNode(_part("a"), kind="ext3"), (FileDrive("disksim", "atlas10k", "a"),))
    out["striped"] = Stack(FileSystemNode(StripedVolume(members[:2], stripe_size_bytes=256 * 1024)),
                           (FileDrive("calibration", "cal.json", "a"), PresetDrive("hp97560", "b")))
    out["raid0+6"] = Stack(FileSystemNode(RaidArray("raid0", (RaidArray("raid6", members), _part("a", 2 * GIB)))),
                           disks)
    out["jfs"] = Stack(FileSystemNode(_part("a"), kind="jfs", mkfs_options=("-s", "8")), disks[:1])
    out["reiserfs"] = Stack(FileSystemNode(members[1], kind="reiserfs", mount_options=("notail",)), disks[1:2])
    return out


def _kinds(stack: Stack) -> set[str]:
    return {nodes.kind_of(node) for _, node, _ in stack.nodes()} | {nodes.kind_of(d) for d in stack.disks}


# ------------------------------------------------------------------ stacks

def test_every_readable_kind_is_in_a_stack_that_round_trips_through_json():
    stacks = _stacks()
    assert set().union(*map(_kinds, stacks.values())) == set(NODE_SCHEMA.readable_kinds())
    for name, stack in stacks.items():
        text = stack.to_json()
        again = Stack.from_json(text)
        assert again == stack, name
        assert again.to_json() == text, name


@pytest.mark.slow  # several seconds: the full tier runs it
def test_the_json_schema_stack_schema_prints_accepts_every_node_the_writer_writes_and_refuses_unknown_fields():
    node_schema = schema()["json_schema"]
    for name, stack in _stacks().items():
        data = json.loads(stack.to_json())
        for document in (data["file_system"], *data["disks"]):
            jsonschema.validate(document, node_schema)  # raises if the printed schema disagrees with the reader
    bad = json.loads(_stacks()["native"].to_json())["file_system"]
    bad["volume"]["sise_bytes"] = 3
    with pytest.raises(jsonschema.ValidationError, match="sise_bytes"):
        jsonschema.validate(bad, node_schema)


def _document(**volume_changes) -> dict:
    volume = {"kind": "lvm_linear", "physical_volumes": [
        {"kind": "partition", "start_bytes": MIB, "size_bytes": GIB},
        {"kind": "partition", "start_bytes": MIB + GIB, "size_bytes": GIB}]}
    volume.update(volume_changes)
    return {"format": "diskmodel.stack", "format_version": 1, "disks": [{"kind": "preset", "preset": "wd800bd"}],
            "file_system": {"kind": "ext4", "volume": volume}}


def _refusal(document) -> str:
    with pytest.raises(ValueError) as info:
        Stack.from_json(json.dumps(document))
    line = str(info.value)
    assert "\n" not in line and "Traceback" not in line
    return line


@pytest.mark.parametrize("change, expected", [
    # unknown field: its path, and the fields the kind has
    (lambda d: d["file_system"]["volume"]["physical_volumes"][1].update(sise_bytes=3),
     "file_system.volume.physical_volumes[1].sise_bytes: unknown field (kind partition has the fields "
     "start_bytes, size_bytes, name, disk)"),
    # wrong type: its path and the value
    (lambda d: d["file_system"]["volume"]["physical_volumes"][1].update(size_bytes="1G"),
     "file_system.volume.physical_volumes[1].size_bytes: must be a whole number (got '1G')"),
    (lambda d: d["file_system"]["volume"].update(extent_size_bytes=True),
     "file_system.volume.extent_size_bytes: must be a whole number (got True)"),
    (lambda d: d["file_system"].update(mount_options=[1]), "file_system.mount_options[0]: must be a string (got 1)"),
    (lambda d: d["file_system"].update(parameters={"atime_updates": "no"}),
     "file_system.parameters.atime_updates: must be true or false (got 'no')"),
    (lambda d: d["file_system"]["volume"].update(physical_volumes={"kind": "partition"}),
     "file_system.volume.physical_volumes: must be a list"),
    # out of bounds: the node, its kind, the field and the value
    (lambda d: d["file_system"]["volume"]["physical_volumes"][1].update(start_bytes=-512),
     "file_system.volume.physical_volumes[1] (partition): start_bytes must be >= 0 (got -512)"),
    (lambda d: d["file_system"].update(parameters={"commit_interval_s": -1}),
     "file_system.parameters (FileSystem): commit_interval_s must be > 0 (got -1"),
    # missing and unknown kinds
    (lambda d: d["file_system"]["volume"]["physical_volumes"][0].pop("size_bytes"),
     "file_system.volume.physical_volumes[0].size_bytes: required field of kind partition is missing"),
    (lambda d: d["file_system"]["volume"]["physical_volumes"][0].update(kind="partiton"),
     "file_system.volume.physical_volumes[0]: unknown kind 'partiton' (known: "),
    (lambda d: d["file_system"]["volume"]["physical_volumes"][0].pop("kind"),
     "file_system.volume.physical_volumes[0]: must be an object with a 'kind'"),
    (lambda d: d["disks"][0].update(kind="in_memory"), "disks[0]: unknown kind 'in_memory'"),
])
def test_a_bad_stack_is_refused_in_one_line_naming_the_field_path_and_the_value(change, expected):
    document = _document()
    Stack.from_json(json.dumps(document))  # the base is valid: the refusal is the change's
    change(document)
    assert _refusal(document).startswith(expected)


def test_a_whole_number_written_as_a_float_is_read_as_the_int():
    document = _document()
    document["file_system"]["volume"]["physical_volumes"][0]["size_bytes"] = float(GIB)
    volume = Stack.from_json(json.dumps(document)).volume
    assert volume.physical_volumes[0].size_bytes == GIB and type(volume.physical_volumes[0].size_bytes) is int


def test_node_kinds_come_from_the_explicit_list_not_from_imports():
    @nodes.node_type("test_only_ramdisk")
    @dataclasses.dataclass(frozen=True)
    class RamDisk:
        size_bytes: int

    assert "test_only_ramdisk" not in NODE_SCHEMA.known_kinds()  # defining a node type registers nothing
    assert _refusal({"disks": [], "file_system": {"kind": "test_only_ramdisk", "size_bytes": 1}}) == \
        f"file_system: unknown kind 'test_only_ramdisk' (known: {', '.join(NODE_SCHEMA.readable_kinds())})"
    extended = NodeSchema((*NODE_TYPES, RamDisk))
    assert extended.read({"kind": "test_only_ramdisk", "size_bytes": 4096}) == RamDisk(4096)
    with pytest.raises(ValueError, match=r"^kind 'partition' is given by Partition and Twin$"):
        NodeSchema((Partition, nodes.node_type("partition")(dataclasses.dataclass(type("Twin", (), {})))))


# ------------------------------------------------------------------ calibration files

@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN_CALIBRATION.read_text())


def test_the_golden_calibration_file_round_trips(golden):
    assert validate_calibration_dict(golden, "golden") == 3
    result = calibration_from_json(GOLDEN_CALIBRATION)
    # reading refits the seek curve from its samples: another machine's BLAS may differ in the last bits
    assert _same_to_rounding(calibration_to_dict(result), golden)
    assert calibration_to_dict(calibration_from_dict(calibration_to_dict(result))) == calibration_to_dict(result)


def _same_to_rounding(a, b, path: str = "") -> bool:
    """*a* and *b* have the same keys, lengths, strings and integers, and floats equal to 1e-12 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        return all(_same_to_rounding(a[k], b[k], f"{path}.{k}") for k in a)
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        return all(_same_to_rounding(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12, abs=0) or (math.isnan(a) and math.isnan(b)), (path, a, b)
        return True
    assert type(a) is type(b) and a == b, (path, a, b)
    return True


@pytest.mark.parametrize("change, expected", [
    (lambda d: d["zones"][1].update(end_byte="far"), "key 'zones[1].end_byte' must be a positive integer (got 'far')"),
    (lambda d: d["seek_samples"]["time_s"].__setitem__(2, -0.5),
     "key 'seek_samples.time_s[2]' must be a number >= 0 (got -0.5)"),
    (lambda d: d["zone_samples"].update(location_bytes=[]),
     "key 'zone_samples.location_bytes' must be a non-empty list of integers >= 0 (got [])"),
    (lambda d: d.update(budget_s=float("nan")), "key 'budget_s' must be a number > 0 (got NaN)"),
    (lambda d: d.update(surfaces=0), "key 'surfaces' must be a positive integer or null (got 0)"),
    (lambda d: d["read_ahead"].update(segments=1.5), "key 'read_ahead.segments' must be a positive integer or null "
                                                     "(got 1.5)"),
    (lambda d: d["detail"][next(iter(d["detail"]))].update(status="guessed"),
     "must be 'measured', 'estimated' or 'not visible' (got 'guessed')"),
    (lambda d: d["seek_samples"].pop("round"), "key 'seek_samples.round' is missing"),
])
def test_a_bad_calibration_file_names_the_key_path_and_the_value(golden, change, expected):
    document = copy.deepcopy(golden)
    change(document)
    with pytest.raises(CalibrationFileError) as info:
        validate_calibration_dict(document, "c.json")
    assert str(info.value).startswith("c.json: ") and expected in str(info.value)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ fit results

def _fits() -> dict:
    from diskmodel.model.fit import fit_flat_latency, fit_table, fit_two_piece, fit_zones, flatness_test

    rng = np.random.default_rng(5)
    distance = np.repeat(np.arange(1.0, 2001.0, 50.0), 3)
    time_s = np.where(distance < 600, 1e-3 + 1e-4 * np.sqrt(distance), 2.5e-3 + 1e-6 * distance) \
        * (1 + rng.normal(0, 0.01, distance.size))
    location = np.arange(200.0)
    rate = np.where(location < 120, 100e6, 80e6) * (1 + rng.normal(0, 0.002, location.size))
    return {"two_piece": fit_two_piece(distance, time_s, distance_unit="cylinders"), "table": fit_table(distance, time_s),
            "flatness_test": flatness_test(distance, time_s), "zones": fit_zones(location, rate),
            "flat": fit_flat_latency(60e-6 + rng.normal(0, 5e-6, 100), 1e-9)}


def test_every_fit_result_round_trips_through_json_field_by_field():
    from diskmodel.model.fit import FitResult

    for model, result in _fits().items():
        text = json.dumps(result.to_dict(), allow_nan=False)
        again = FitResult.from_dict(json.loads(text))
        assert type(again) is type(result) and again.model == model
        assert json.dumps(again.to_dict(), allow_nan=False) == text, model  # every written field read back


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.update(nobs="40"), "data (two_piece).nobs: must be a whole number (got '40')"),
    (lambda d: d.update(continuous="yes"), "data (two_piece).continuous: must be true or false (got 'yes')"),
    (lambda d: d.update(distance_min="far"), "data (two_piece).distance_min: must be a number (got 'far')"),
    (lambda d: d.update(covariance=[[1.0]]), "data (two_piece).covariance: must be an array written by to_dict"),
    (lambda d: d.pop("method"), "data (two_piece).method: required field is missing"),
])
def test_a_bad_fit_result_names_the_field_and_the_value(change, expected):
    from diskmodel.model.fit import FitResult

    data = json.loads(json.dumps(_fits()["two_piece"].to_dict(), allow_nan=False))
    change(data)
    with pytest.raises(ValueError) as info:
        FitResult.from_dict(data)
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)


# ------------------------------------------------------------------ the command line's flags

def test_the_command_line_names_the_flag_of_the_field_an_error_carries_never_one_it_mentions():
    from diskmodel.calibrate.cli import flag_error
    from diskmodel.calibrate.harness.measure import _check_budget

    with pytest.raises(ValueError) as info:
        _check_budget(-1.0)
    assert flag_error(info.value, {"budget_s": "--budget-s"}) == \
        "--budget-s: budget_s must be a finite number of seconds > 0 (got -1.0)"
    with pytest.raises(ValueError) as info:
        paper_stack("native", kind="xfs", mount_options=("data=journal",))
    assert flag_error(info.value, {"mount_options": "--mount-options"}) == \
        "--mount-options: data=journal is not a mount option of xfs"
    # a message that only mentions a field's name is not about that field
    assert flag_error(ValueError("budget_s=1 leaves no time for mount_options"),
                      {"budget_s": "--budget-s", "mount_options": "--mount-options"}) == \
        "budget_s=1 leaves no time for mount_options"


# ------------------------------------------------------------------ the files in the tree keep loading

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results"


def _artifact_module():
    """benchmarks/_artifact.py, loaded once from its file (benchmarks/ is not a package)."""
    import importlib.util
    import sys

    name = "benchmarks_artifact_under_test"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, RESULTS.parent / "_artifact.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # pydantic resolves the models' annotations in the module's namespace
        spec.loader.exec_module(module)
    return sys.modules[name]


def _fit_dicts(data, path=""):
    """(path, object) of every fit result to_dict wrote inside *data* (it names its model and its parameters)."""
    if isinstance(data, dict):
        if isinstance(data.get("model"), str) and "parameters" in data and "covariance" in data:
            yield path, data
        for key, value in data.items():
            yield from _fit_dicts(value, f"{path}.{key}")
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _fit_dicts(value, f"{path}[{i}]")


def test_the_benchmark_artifacts_and_the_fit_results_in_them_read():
    from diskmodel.model.fit import FitResult

    check = _artifact_module().check_artifact
    paths = sorted(RESULTS.glob("*.json"))
    assert paths
    fits = 0
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        assert check(document, path.name) is document
        for where, data in _fit_dicts(document):
            again = FitResult.from_dict(data)
            assert again.to_dict()["parameters"] == data["parameters"], (path.name, where)
            fits += 1
    assert fits > 0


@pytest.mark.parametrize("change, expected", [
    (lambda d: d["figures"][next(iter(d["figures"]))].update(decimals=-1), "decimals' must be an integer >= 0 (got -1)"),
    (lambda d: d["figures"][next(iter(d["figures"]))].update(valeu=1), "valeu' is not a key this object may hold"),
    (lambda d: d["environment"].pop("git_commit"), "key 'environment.git_commit' is missing"),
    (lambda d: d.update(notes="one"), "key 'notes' must be a list of strings (got 'one')"),
])
def test_a_bad_artifact_names_the_key_and_the_value(change, expected):
    document = json.loads((RESULTS / "seek_fits.json").read_text(encoding="utf-8"))
    change(document)
    with pytest.raises(ValueError) as info:
        _artifact_module().check_artifact(document, "seek_fits.json")
    assert str(info.value).startswith("seek_fits.json: key '") and expected in str(info.value)
