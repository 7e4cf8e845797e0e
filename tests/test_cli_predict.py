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
from scipy import stats

from _helpers import assert_one_error_line
from diskmodel.calibrate.cli import main
from diskmodel.model.predictions.intervals import DEFAULT_DRAWS

DISKMODEL = [sys.executable, "-m", "diskmodel.calibrate.cli"]


def run(*args, cwd=None):
    return subprocess.run([*DISKMODEL, *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)


# ------------------------------------------------------------------ --version

def test_version_prints_the_installed_distributions_version():
    res = run("--version")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"diskmodel {version('diskmodel')}"


# ------------------------------------------------------------------ stack-schema

def _node_classes():
    from diskmodel.model.stacks.stack import NODE_SCHEMA

    return {kind: NODE_SCHEMA.class_of_kind(kind) for kind in NODE_SCHEMA.known_kinds()}


@pytest.mark.slow
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
    from diskmodel.model.stacks.stack_schema import UNDOCUMENTED, schema

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


@pytest.mark.slow
def test_stack_schema_text_shows_units_and_defaults_without_scientific_notation():
    res = run("stack-schema", "--kind", "loop_file")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "kind loop_file" in out and "kind raid1" not in out
    # LoopFile.request_overhead_s defaults to 10 microseconds: printed as digits, with its unit
    assert "request_overhead_s [s]: float, default 0.00001 s" in out
    assert "image_size_bytes [bytes]: int, default required" in out
    assert not re.search(r"\d[eE][+-]?\d", out), [ln for ln in out.splitlines() if re.search(r"\d[eE][+-]?\d", ln)]
    assert "1 MB = 10^6 bytes" in out


def test_a_field_added_to_a_node_appears_in_the_schema_from_its_docstring():
    """Generated, never hand-copied: a new node type's fields and docstring are listed as declared."""
    from diskmodel.model.stacks import nodes
    from diskmodel.model.stacks.schema import NodeSchema
    from diskmodel.model.stacks.stack import NODE_TYPES
    from diskmodel.model.stacks.stack_schema import schema

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

    entry = schema(NodeSchema((*NODE_TYPES, RamDisk)))["kinds"]["test_only_ramdisk"]
    assert entry["summary"] == "A RAM disk (brd)."
    assert entry["fields"][0] == {"name": "size_bytes", "type": "int", "unit": "bytes", "required": True,
                                  "default": None, "meaning": "What it holds [bytes]."}
    assert entry["fields"][1]["unit"] == "s" and entry["fields"][1]["default"] == 2e-6


@pytest.mark.slow
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
        line = assert_one_error_line(capsys.readouterr().err, f"diskmodel {name} --help")
        assert "--no-such-flag" in line or "required" in line, line  # a missing required argument is said first
    assert _exit_code(["stack-schema", "--kind", "floppy"]) == 2
    assert_one_error_line(capsys.readouterr().err, "--kind", "floppy", "partition")


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
    (tmp_path / "job.fio").write_text("[flash]\nrw=randread\nbs=4k\nsize=8m\ndirect=1\n")
    res = run("predict", "--stack", tmp_path / "stack.json", "--fio-job", tmp_path / "job.fio", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    # the calibration's own flat model: a mean latency per block read plus its bytes at the measured rate
    model = data["latency_model"]
    part = out["parts"]["randread"]
    # one flat drive, timed request by request: at queue depth 1 it is idle only while the application makes
    # its next call (the model's 2 us a system call, 2048 of them), whatever the measured latency (a fast one
    # made that 5.4 % of the run on 2026-12-04, past a bound of 5 % on the whole run)
    assert set(part["parts_s"]) == {"busy_s.sda"}
    from diskmodel.model.iopath.fileops import CALL_S

    assert part["elapsed_s"] - part["parts_s"]["busy_s.sda"] == pytest.approx(2048 * CALL_S, rel=0.05)
    # the job's time has an interval from the flat model's mean latency alone (standard error std / sqrt(n)):
    # the drive serves each request in that latency plus its bytes, so a draw of the mean moves each of the
    # 2048 requests alike. The interval is the point +- Student's t times the sample deviation of a few draws,
    # so its width lies within the sample deviation's own 99.9 % bounds (chi-squared) of 2 t 2048 sigma. Timed
    # with a rotational phase (a track of one sector), most draws gave the same time and one a step of a
    # revolution per request: widths of none or several times this.
    lower, upper = part["intervals_95"]["elapsed_s"]
    assert lower <= part["elapsed_s"] <= upper
    dof = DEFAULT_DRAWS - 1
    sigma = 2048 * model["std_s"] / math.sqrt(model["n"])
    width = 2 * stats.t.ppf(0.975, dof) * sigma
    assert math.sqrt(stats.chi2.ppf(0.001, dof) / dof) * width <= upper - lower
    assert upper - lower <= math.sqrt(stats.chi2.ppf(0.999, dof) / dof) * width
    assert out["latency_s"] == pytest.approx(model["mean_s"] + (4096 - data["block_size_bytes"]) * model["per_byte_s"],
                                             rel=0.05)
    assert not any(note.startswith("note:") for note in out["assumptions"])  # nothing said absent of a flash drive
    res = run("predict", "--stack", tmp_path / "stack.json", "--fio-job", tmp_path / "job.fio", "--complete-from",
              "wd800bd")
    assert_one_error_line(res.stderr, "--complete-from wd800bd", "flat latency model")


# ------------------------------------------------------------------ a calibrated hard disk and its preset

@pytest.fixture
def calibrated_wd800bd(monkeypatch, tmp_path):
    """--calibration FILE giving the wd800bd preset as a calibration gives it: no drive cache, no interface
    rate (model.fit.calibration_views.calibrated_disk sets neither)."""
    from diskmodel.calibrate import stacks
    from diskmodel.model.drive.presets import load_preset

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
    assert_one_error_line(capsys.readouterr().err, "--complete-from", "--disk wd800bd")
    assert main(["predict", "--calibration", calibrated_wd800bd, "--complete-from", "floppy"]) == 2
    assert_one_error_line(capsys.readouterr().err, "--complete-from floppy", "wd800bd")


# ------------------------------------------------------------------ one unit convention

@pytest.mark.slow
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


# ------------------------------------------------------------------ fio job files

def _job_file(tmp_path, text: str, name: str = "job.fio") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _fio_json(tmp_path, job_text: str) -> dict:
    data = tmp_path / "data"
    res = subprocess.run(["fio", "--output-format=json", f"--filename={data}", _job_file(tmp_path, job_text, "f.fio")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout[res.stdout.index("{"):])


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("text", [
    "[global]\nsize=1m\ndirect=1\nbs=4k\n[seq]\nrw=read\nio_size=256k\n",
    "[rand]\nrw=randwrite\nsize=2MiB\nbs=8k\nnumjobs=2\nio_size=1024KiB\ndirect=1\niodepth=1\n",
    "[mix]\nrw=randrw\nrwmixread=50\nsize=512k\nbs=16k\ndirect=1\n",
])
def test_the_job_file_moves_what_fio_itself_moves(tmp_path, text):
    """The sizes, the suffixes and the job counts read as fio reads them: fio runs the same file on a scratch file."""
    from conftest import require_tools

    from diskmodel.model.predictions.fio_job import parse_fio_job

    require_tools("fio")
    job = parse_fio_job(text)
    ran = _fio_json(tmp_path, text)["jobs"]
    moved = sum(j["read"]["io_bytes"] + j["write"]["io_bytes"] for j in ran)
    requests = sum(j["read"]["total_ios"] + j["write"]["total_ios"] for j in ran)
    assert len(ran) == job.numjobs
    assert moved == job.total_bytes
    assert requests == job.total_bytes // job.block_size_bytes
    model_requests = sum(part.expected_counts()["requests"] for _, part in job.parts())
    assert model_requests == pytest.approx(requests, abs=len(job.parts()))


def test_predict_prints_the_jobs_definition_beside_its_result(tmp_path, capsys):
    from diskmodel.model.predictions.block_workloads import FioJob
    from diskmodel.model.predict import predict
    from diskmodel.model.stacks.stack import paper_stack

    path = _job_file(tmp_path, "# a database's reads\n[global]\ndirect=1\n[db]\nrw=randread\nbs=8k\nsize=1g\n"
                               "io_size=8m\niodepth=4\n")
    assert main(["predict", "--fio-job", path]) == 0
    out = capsys.readouterr().out
    assert "job: [db] rw=randread bs=8192 bytes iodepth=4 numjobs=1 size=1073741824 bytes (1073.7 MB)" in out
    result = next(line for line in out.splitlines() if line.startswith("result: "))
    # size=1g io_size=8m: 8 MiB moved at random over the device's first GiB (fio's region)
    reference = predict(paper_stack("native"), FioJob("randread", 8192, 8 * 2**20, 4, region_bytes=2**30))
    assert f"{reference.throughput_bytes_per_s / 1e6:.2f} MB/s" in result
    assert out.splitlines()[0].startswith("assumption: ")
    assert not re.search(r"\d[eE][+-]?\d", out), out


def test_a_mixed_job_is_its_reads_and_writes_weighted(tmp_path, capsys):
    from diskmodel.model.predictions.block_workloads import FioJob
    from diskmodel.model.predict import predict
    from diskmodel.model.stacks.stack import paper_stack

    path = _job_file(tmp_path, "[mix]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=1g\nio_size=10m\ndirect=1\n")
    assert main(["predict", "--json", "--fio-job", path]) == 0
    out = json.loads(capsys.readouterr().out)
    total = 10 * 2**20
    # the job file has no end_fsync: neither have its parts
    read = predict(paper_stack("native"), FioJob("randread", 4096, round(0.7 * total), 1, end_fsync=False,
                                                 region_bytes=2**30))
    write = predict(paper_stack("native"), FioJob("randwrite", 4096, round(0.3 * total), 1, end_fsync=False,
                                                  region_bytes=2**30))
    assert out["latency_s"] == pytest.approx(0.7 * read.latency_s + 0.3 * write.latency_s, rel=1e-9)
    assert out["elapsed_s"] == pytest.approx(read.elapsed_s + write.elapsed_s, rel=1e-9)
    assert any("rw=randrw" in note for note in out["assumptions"])
    # each direction as fio reports it: its bytes over the whole run (each part's row showed the job's rate)
    by = out["throughput_bytes_per_s_by_direction"]
    assert by["randread"] == pytest.approx(round(0.7 * total) / out["elapsed_s"], rel=1e-6)
    assert by["randread"] + by["randwrite"] == pytest.approx(out["throughput_bytes_per_s"], rel=1e-6)


@pytest.mark.slow  # several seconds: the full tier runs it
def test_runtime_cuts_a_long_job_and_says_so(tmp_path, capsys):
    path = _job_file(tmp_path, "[slow]\nrw=randread\nbs=4k\nsize=1g\ndirect=1\nruntime=2s\n")
    assert main(["predict", "--json", "--fio-job", path]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cut_by_runtime"] and out["elapsed_s"] == 2.0
    assert out["bytes"] == pytest.approx(out["throughput_bytes_per_s"] * 2.0)
    assert out["bytes"] < 2**30
    assert any(note.startswith("runtime=2 s") for note in out["assumptions"])
    assert out["throughput_bytes_per_s_by_direction"]["randread"] == pytest.approx(out["throughput_bytes_per_s"])


@pytest.mark.parametrize("text, fragments", [
    ("[j]\nrw=read\nsize=1g\ndirect=1\nverify=md5\n", ("verify=md5", "line 5", "rw, rwmixread, bs")),
    ("[j]\nrw=read\nsize=1g\n", ("direct=0", "direct=1")),
    ("[j]\nrw=trim\nsize=1g\ndirect=1\n", ("rw=trim", "randread")),
    ("[j]\nrw=write\nsize=1g\ndirect=1\nfsync=4\n", ("fsync=4", "fsync=0")),
    ("[j]\nrw=read\nsize=1g\ndirect=1\nnumjobs=4\n", ("numjobs=4", "randread")),
    ("[j]\nrw=read\nsize=1x\ndirect=1\n", ("size=1x", "64m")),
    ("[j]\nrw=read\ndirect=1\n", ("size is missing",)),
    ("[a]\nrw=read\nsize=1m\ndirect=1\n[b]\nrw=write\nsize=1m\ndirect=1\n", ("2 job sections (a, b)",)),
    ("[j]\nrw=randread\nsize=30g\ndirect=1\n", ("size=32212254720 bytes", "20000.0 MB", "size= at most")),
])
def test_a_job_the_model_cannot_take_is_one_line_naming_the_key(tmp_path, capsys, text, fragments):
    path = _job_file(tmp_path, text)
    assert main(["predict", "--fio-job", path]) == 2
    line = assert_one_error_line(capsys.readouterr().err, f"--fio-job {path}", *fragments)
    assert len(line) < 400


def test_fio_job_is_the_workload(tmp_path, capsys):
    path = _job_file(tmp_path, "[j]\nrw=read\nsize=1m\ndirect=1\n")
    assert main(["predict", "--fio-job", path, "--workload", "test2"]) == 2
    assert_one_error_line(capsys.readouterr().err, "--workload cannot be given")
    assert main(["predict", "--fio-job", str(tmp_path / "missing.fio")]) == 2
    assert_one_error_line(capsys.readouterr().err, "--fio-job", "missing.fio", "no such file")


@pytest.mark.parametrize("extra, flag", [(["--fitted"], "--fitted"),
                                         (["--page-cache-bytes", "1000"], "--page-cache-bytes"),
                                         (["--md-mapping-s", "0.001"], "--md-mapping-s")])
def test_a_flag_a_block_workload_does_not_use_is_refused(tmp_path, capsys, extra, flag):
    path = _job_file(tmp_path, "[j]\nrw=read\nsize=1m\ndirect=1\n")
    assert main(["predict", "--fio-job", path, *extra]) == 2
    assert_one_error_line(capsys.readouterr().err, f"{flag} does not apply to --fio-job")
    assert main(["predict", "--workload", "randread_4k", *extra]) == 2
    assert_one_error_line(capsys.readouterr().err, f"{flag} does not apply to --workload randread_4k")


GOLDEN_CALIBRATION = Path(__file__).parent / "golden" / "calibration_wd800bd_simulated.json"


def test_a_real_calibration_of_the_wd800bd_completed_from_its_preset_predicts_as_the_preset(capsys):
    """A calibration made by `diskmodel calibrate --simulated wd800bd` (tests/golden/README.md): without its cache
    and interface rate it is many times slower than the preset; completed from the preset it is close to it."""
    assert main(["predict", "--json", "--disk", "wd800bd", "--workload", "test2"]) == 0
    preset = json.loads(capsys.readouterr().out)["elapsed_s"]
    assert main(["predict", "--json", "--calibration", str(GOLDEN_CALIBRATION), "--workload", "test2"]) == 0
    bare = json.loads(capsys.readouterr().out)
    assert bare["elapsed_s"] > 5 * preset and "no drive cache" in bare["assumptions"][0]
    assert main(["predict", "--json", "--calibration", str(GOLDEN_CALIBRATION), "--workload", "test2",
                 "--complete-from", "wd800bd"]) == 0
    completed = json.loads(capsys.readouterr().out)
    assert completed["elapsed_s"] == pytest.approx(preset, rel=0.15)
    assert "drive cache 2.10 MB and interface rate 150.0 MB/s taken from preset wd800bd" in completed["assumptions"][0]


def test_a_calibrated_drive_gives_the_timed_prediction_an_interval_and_a_preset_gives_none(tmp_path, capsys):
    """The calibration's uncertainty (rotation period, seek fit) carried through the drive's simulation: a
    fio job on the calibrated drive has a 95 % interval around its point figure; on the preset, none; and the
    paper's equations (PostMark on one disk) say they give none rather than printing nothing."""
    job = _job_file(tmp_path, "[r]\nrw=randread\nbs=4k\nsize=1g\nio_size=2m\ndirect=1\n")  # over the first GiB
    assert main(["predict", "--json", "--calibration", str(GOLDEN_CALIBRATION), "--complete-from", "wd800bd",
                 "--fio-job", job]) == 0
    part = json.loads(capsys.readouterr().out)["parts"]["randread"]
    lower, upper = part["intervals_95"]["elapsed_s"]
    assert lower < part["elapsed_s"] < upper
    # a random 4 KiB read is a seek and a rotational latency: the calibration's few-percent seek and sub-percent
    # rotation uncertainty give an interval of well under a tenth of the time, but not of nothing
    assert 1e-4 < (upper - lower) / part["elapsed_s"] < 0.1
    assert main(["predict", "--fio-job", job, "--calibration", str(GOLDEN_CALIBRATION),
                 "--complete-from", "wd800bd"]) == 0
    assert "95 % interval of elapsed (the calibrations' uncertainty):" in capsys.readouterr().out
    assert main(["predict", "--json", "--disk", "wd800bd", "--fio-job", job]) == 0
    assert json.loads(capsys.readouterr().out)["parts"]["randread"]["intervals_95"] == {}
    assert main(["predict", "--json", "--calibration", str(GOLDEN_CALIBRATION), "--complete-from", "wd800bd",
                 "--workload", "test2"]) == 0
    assert any(note.startswith("intervals: none; the paper's equations")
               for note in json.loads(capsys.readouterr().out)["assumptions"])


def test_a_postmark_workload_larger_than_the_stack_is_one_line_saying_what_fits(tmp_path, capsys):
    stack = {"format": "diskmodel.stack",
             "file_system": {"kind": "ext4", "volume": {"kind": "partition", "start_bytes": 0,
                                                        "size_bytes": 100_000_000, "disk": "sda"}}}
    (tmp_path / "stack.json").write_text(json.dumps(stack))
    assert main(["predict", "--stack", str(tmp_path / "stack.json"), "--workload", "test1"]) == 2
    line = assert_one_error_line(capsys.readouterr().err, "100.0 MB", "give fewer files (at most about")
    assert not re.search(r"\d[eE][+-]?\d", line), line
    fits = int(re.search(r"at most about (\d+)", line).group(1))
    assert main(["predict", "--json", "--stack", str(tmp_path / "stack.json"), "--workload", "test1",
                 "--files", str(fits)]) == 0
