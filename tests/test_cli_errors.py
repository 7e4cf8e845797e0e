"""Bad inputs to every subcommand (issue #16, "Errors"): one line on stderr, never a traceback.

The cases run one after the other in one process through diskmodel's entry
point, each in a fresh working folder (the installed ``diskmodel`` script
itself runs in the tests after them), and each case checks: a non-zero exit; stderr is one line ``diskmodel: error: ...`` (the
argument parser's errors too, with no usage dump); no traceback; the line
names the flag (or path) at fault; and no file appeared in the working
folder or beside the inputs.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _helpers import assert_one_error_line, run_cli_cases
from diskmodel.calibrate import cli

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))

BACKENDS = """
    class Reads:
        size_bytes = 1 << 28
        block_size_bytes = 4096

        def read(self, offset_bytes, length_bytes):
            raise RuntimeError("the disk is on fire")

    class Words(Reads):
        def read(self, offset_bytes, length_bytes):
            return "fast"

    def read_raises():
        return Reads()

    def read_returns_text():
        return Words()

    def factory_raises():
        raise OSError(5, "no backend today")

    not_callable = 3
    """


@pytest.fixture(scope="module")
def calibration_dict():
    """A valid calibration result as a dict (a short simulated run)."""
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.results import calibration_to_json
    from diskmodel.calibrate.harness.simulated import simulated_disk

    result = calibrate(simulated_disk("wd800bd", seed=0), budget_s=20, progress=False)
    return json.loads(calibration_to_json(result))


@pytest.fixture
def inputs(tmp_path, calibration_dict):
    """Input files for the cases: calibration JSONs broken in one way each, a backend module, folders."""
    return _make_inputs(tmp_path / "inputs", calibration_dict)


def _make_inputs(folder: Path, calibration_dict: dict) -> Path:
    folder.mkdir()
    (folder / "mods").mkdir()
    (folder / "mods" / "badbackends.py").write_text(textwrap.dedent(BACKENDS))
    (folder / "mods" / "import_fails.py").write_text("raise RuntimeError('broken module')\n")
    (folder / "a_dir").mkdir()
    (folder / "notes.txt").write_text("not a folder\n")

    def with_change(name, change):
        data = copy.deepcopy(calibration_dict)
        change(data)
        (folder / name).write_text(json.dumps(data))

    (folder / "list.json").write_text(json.dumps([calibration_dict]))
    with_change("no_size.json", lambda d: d.pop("size_bytes"))
    with_change("empty_zones.json", lambda d: d.update(zones=[]))
    with_change("size_str.json", lambda d: d.update(size_bytes="x"))
    with_change("size_neg.json", lambda d: d.update(size_bytes=-1))
    with_change("size_bool.json", lambda d: d.update(size_bytes=True))
    with_change("overhead_neg.json", lambda d: d.update(overhead_s=-1))
    with_change("block_zero.json", lambda d: d.update(block_size_bytes=0))
    with_change("block_not_divisor.json", lambda d: d.update(block_size_bytes=d["size_bytes"] - 1))
    with_change("budget_nan.json", lambda d: d.update(budget_s=float("nan")))
    with_change("version_99.json", lambda d: d.update(format_version=99))
    with_change("other_format.json", lambda d: d.update(format="something.else"))
    with_change("zone_gap.json", lambda d: d["zones"][0].update(end_byte=d["zones"][0]["end_byte"] - 512))
    with_change("samples_mismatch.json", lambda d: d["seek_samples"]["time_s"].pop())
    text = json.dumps(calibration_dict)
    (folder / "truncated.json").write_text(text[: len(text) // 2])
    (folder / "empty.json").write_text("")
    (folder / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    return folder


# (id, arguments, a fragment the error line must hold). "{in}" is the inputs folder.
CASES = [
    # calibrate
    ("calibrate-a-directory", ["calibrate", "{in}/a_dir", "--no-progress"], "a_dir"),
    ("calibrate-a-missing-path", ["calibrate", "{in}/nope.img", "--no-progress"], "nope.img"),
    ("calibrate-json-tmp", ["calibrate", "--simulated", "wd800bd", "--budget-s", "20", "--json", "/tmp",
                            "--no-progress"], "--json"),
    ("calibrate-json-missing-dir", ["calibrate", "--simulated", "wd800bd", "--budget-s", "20", "--json",
                                    "{in}/nope/out.json", "--no-progress"], "--json"),
    ("calibrate-json-onto-inputs-text", ["calibrate", "--simulated", "wd800bd", "--budget-s", "20", "--json",
                                         "{in}/notes.txt", "--no-progress"], "--force"),
    ("backend-module-missing", ["calibrate", "--backend", "nonexistent.module:f", "--no-progress"], "--backend"),
    ("backend-import-raises", ["calibrate", "--backend", "import_fails:make", "--no-progress"], "--backend"),
    ("backend-no-factory", ["calibrate", "--backend", "badbackends:missing", "--no-progress"], "--backend"),
    ("backend-not-callable", ["calibrate", "--backend", "badbackends:not_callable", "--no-progress"], "--backend"),
    ("backend-bad-spec", ["calibrate", "--backend", "badbackends", "--no-progress"], "--backend"),
    ("backend-factory-raises", ["calibrate", "--backend", "badbackends:factory_raises", "--no-progress"],
     "--backend"),
    ("backend-read-raises", ["calibrate", "--backend", "badbackends:read_raises", "--budget-s", "20",
                             "--no-progress"], "--backend"),
    ("backend-read-returns-text", ["calibrate", "--backend", "badbackends:read_returns_text", "--budget-s", "20",
                                   "--no-progress"], "--backend"),
    ("budget-0", ["calibrate", "--simulated", "wd800bd", "--budget-s", "0", "--no-progress"], "--budget-s"),
    ("budget-negative", ["calibrate", "--simulated", "wd800bd", "--budget-s", "-1", "--no-progress"], "--budget-s"),
    ("budget-nan", ["calibrate", "--simulated", "wd800bd", "--budget-s", "nan", "--no-progress"], "--budget-s"),
    ("budget-inf", ["calibrate", "--simulated", "wd800bd", "--budget-s", "inf", "--no-progress"], "--budget-s"),
    ("budget-text", ["calibrate", "--simulated", "wd800bd", "--budget-s", "lots", "--no-progress"], "--budget-s"),
    ("budget-1e-9", ["calibrate", "--simulated", "wd800bd", "--budget-s", "1e-9", "--no-progress"], "--budget-s"),
    ("simulated-unknown-preset", ["calibrate", "--simulated", "no_such_preset", "--no-progress"], "--simulated"),
    ("calibrate-no-target", ["calibrate", "--no-progress"], "required"),
    # predict --calibration
    ("calibration-a-directory", ["predict", "--calibration", "{in}/a_dir"], "--calibration"),
    ("calibration-missing", ["predict", "--calibration", "{in}/nope.json"], "--calibration"),
    ("calibration-a-device", ["predict", "--calibration", "/dev/null"], "--calibration"),
    ("calibration-a-list", ["predict", "--calibration", "{in}/list.json"], "one JSON object"),
    ("calibration-lacks-a-key", ["predict", "--calibration", "{in}/no_size.json"], "key 'size_bytes' is missing"),
    ("calibration-empty-zones", ["predict", "--calibration", "{in}/empty_zones.json"], "key 'zones'"),
    ("calibration-size-string", ["predict", "--calibration", "{in}/size_str.json"],
     "key 'size_bytes' must be a positive integer (got 'x')"),
    ("calibration-size-negative", ["predict", "--calibration", "{in}/size_neg.json"],
     "key 'size_bytes' must be a positive integer (got -1)"),
    ("calibration-size-bool", ["predict", "--calibration", "{in}/size_bool.json"], "key 'size_bytes'"),
    ("calibration-overhead-negative", ["predict", "--calibration", "{in}/overhead_neg.json"], "key 'overhead_s'"),
    ("calibration-block-zero", ["predict", "--calibration", "{in}/block_zero.json"], "key 'block_size_bytes'"),
    ("calibration-block-not-divisor", ["predict", "--calibration", "{in}/block_not_divisor.json"],
     "key 'block_size_bytes' must divide"),
    ("calibration-budget-nan", ["predict", "--calibration", "{in}/budget_nan.json"], "key 'budget_s'"),
    ("calibration-unknown-version", ["predict", "--calibration", "{in}/version_99.json"], "format_version 99"),
    ("calibration-other-format", ["predict", "--calibration", "{in}/other_format.json"],
     "not a diskmodel calibration result"),
    ("calibration-zone-gap", ["predict", "--calibration", "{in}/zone_gap.json"], "zones[1].start_byte"),
    ("calibration-samples-mismatch", ["predict", "--calibration", "{in}/samples_mismatch.json"],
     "seek_samples.time_s"),
    ("calibration-truncated", ["predict", "--calibration", "{in}/truncated.json"], "not valid JSON"),
    ("calibration-empty-file", ["predict", "--calibration", "{in}/empty.json"], "is empty"),
    ("calibration-binary", ["predict", "--calibration", "{in}/binary.json"], "--calibration"),
    # predict, other flags
    ("transactions-1e18", ["predict", "--transactions", str(10**18)], "--transactions"),
    ("transactions-zero", ["predict", "--transactions", "0"], "--transactions"),
    ("transactions-float-text", ["predict", "--transactions", "1e30"], "--transactions"),
    ("files-1e18", ["predict", "--files", str(10**18)], "--files"),
    ("disk-unknown", ["predict", "--disk", "no_such_disk"], "--disk"),
    ("mapping-negative", ["predict", "--md-mapping-s", "-1"], "--md-mapping-s"),
    ("page-cache-nan", ["predict", "--page-cache-bytes", "nan"], "--page-cache-bytes"),
    # validate-trace, probe
    ("validate-trace-missing-folder", ["validate-trace", "{in}/no_such_drive"], "no_such_drive"),
    ("validate-trace-a-file", ["validate-trace", "{in}/notes.txt"], "not a folder"),
    ("validate-trace-empty-folder", ["validate-trace", "{in}/a_dir"], "a_dir"),
    ("probe-missing-device", ["probe", "/dev/no_such_disk_xyz"], "no_such_disk_xyz"),
    ("probe-a-directory", ["probe", "{in}/a_dir"], "a_dir"),
    # postmark (every one refused before anything is built)
    ("postmark-size-text", ["postmark", "--layout", "native", "--workload", "test2", "--scratch", "{in}/s.img",
                            "--size", "big"], "--size"),
    ("postmark-size-not-multiple", ["postmark", "--layout", "native", "--workload", "test2", "--scratch",
                                    "{in}/s.img", "--size", "10M"], "--size"),
    ("postmark-size-zero", ["postmark", "--layout", "native", "--workload", "test2", "--scratch", "{in}/s.img",
                            "--size", "0"], "--size"),
    ("postmark-repeats-0", ["postmark", "--layout", "native", "--workload", "test2", "--scratch", "{in}/s.img",
                            "--repeats", "0"], "--repeats"),
    ("postmark-memory-limit-1", ["postmark", "--layout", "native", "--workload", "test2", "--scratch",
                                 "{in}/s.img", "--memory-limit", "1"], "--memory-limit"),
    # a limit above the machine's memory: cgroup v1 cut it to its own maximum after the stack was built
    ("postmark-memory-limit-huge", ["postmark", "--layout", "native", "--workload", "test2", "--scratch",
                                    "{in}/s.img", "--memory-limit", "1" + "0" * 30], "--memory-limit"),
    ("postmark-read-bias-11", ["postmark", "--layout", "native", "--workload", "test2", "--scratch", "{in}/s.img",
                               "--read-bias", "11"], "--read-bias"),
    ("postmark-vm-timeout-negative", ["postmark", "--layout", "native", "--workload", "test2", "--vm",
                                      "--vm-timeout", "-1"], "--vm-timeout"),
    ("postmark-json-tmp", ["postmark", "--layout", "native", "--workload", "test2", "--scratch", "{in}/s.img",
                           "--size", "16M", "--json", "/tmp"], "--json"),
    # experiment
    ("experiment-budget-negative", ["experiment", "--budget-s", "-1", "--no-progress"], "--budget-s"),
    ("experiment-budget-nan", ["experiment", "--budget-s", "nan", "--no-progress"], "--budget-s"),
    ("experiment-budget-1e-9", ["experiment", "--budget-s", "1e-9", "--no-progress"], "--budget-s"),
    ("experiment-device-missing", ["experiment", "--device", "{in}/nope.img", "--no-progress"], "--device"),
    ("experiment-preset-unknown", ["experiment", "--preset", "nope", "--no-progress"], "--preset"),
    ("experiment-out-a-file", ["experiment", "--out", "{in}/notes.txt", "--no-progress"], "--out"),
    # the command line itself
    ("unknown-subcommand", ["no-such-command"], "invalid choice"),
]


def _listing(*folders: Path) -> dict:
    return {str(f): sorted(str(p.relative_to(f)) for p in f.rglob("*")) for f in folders}


def _run(args, cwd, env):
    return subprocess.run([DISKMODEL, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def workdir(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def env(inputs, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runstate")
    return dict(os.environ, PYTHONPATH=str(inputs / "mods"), DISKMODEL_RUN_DIR=str(run_dir))


@pytest.fixture(scope="module")
def case_results(tmp_path_factory, calibration_dict):
    """Every case of CASES run in one process through diskmodel's entry point, each in its own empty
    working folder: ({id: (result, listing of its working folder)}, the inputs' listing before, after)."""
    root = tmp_path_factory.mktemp("cases")
    inputs = _make_inputs(root / "inputs", calibration_dict)
    plan = {}
    for ident, args, _ in CASES:
        work = root / "work" / ident
        work.mkdir(parents=True)
        plan[ident] = ([a.replace("{in}", str(inputs)) for a in args], str(work))
    env = dict(os.environ, PYTHONPATH=str(inputs / "mods"), DISKMODEL_RUN_DIR=str(root / "runstate"))
    env.pop("DISKMODEL_DEBUG", None)
    before = _listing(inputs)
    results = run_cli_cases(plan, root, env)
    return {ident: (results[ident], _listing(Path(plan[ident][1]))) for ident in plan}, before, _listing(inputs)


@pytest.mark.parametrize("ident, fragment", [pytest.param(i, f, id=i) for i, _, f in CASES])
def test_bad_input_is_one_line_naming_what_is_wrong(ident, fragment, case_results):
    res, listing = case_results[0][ident]
    assert res["code"] != 0, res["stdout"] + res["stderr"]
    assert res["stdout"] == "", res["stdout"]
    assert_one_error_line(res["stderr"], fragment)
    assert all(files == [] for files in listing.values()), f"a file appeared: {listing}"


def test_no_case_wrote_beside_the_inputs(case_results):
    _, before, after = case_results
    assert before == after


@pytest.mark.slow
def test_an_unreadable_device_is_one_line(workdir, env):
    """``calibrate /dev/vda`` where /dev/vda exists and cannot be opened (a container's device policy)."""
    device = "/dev/vda"
    if not os.path.exists(device):
        pytest.skip(f"{device} does not exist here")
    try:
        os.close(os.open(device, os.O_RDONLY))
        pytest.skip(f"{device} can be opened here")
    except PermissionError:
        pass
    for args in (["calibrate", device, "--no-progress"], ["experiment", "--device", device, "--no-progress"]):
        before = _listing(workdir)
        res = _run(args, workdir, env)
        assert res.returncode == 2
        line = assert_one_error_line(res.stderr, f"cannot open {device}")
        assert "Operation not permitted" in line or "Permission denied" in line
        assert _listing(workdir) == before


# ---------------------------------------------------------------------------- a closed standard output

@pytest.mark.slow
@pytest.mark.parametrize("args", [["predict"], ["predict", "--json"], ["probe", "--all"]],
                         ids=["predict", "predict-json", "probe"])
def test_a_reader_that_stops_early_gets_no_traceback(args, workdir, env):
    # the shell's way: diskmodel predict | head -1
    res = subprocess.run(["bash", "-o", "pipefail", "-c", f"{DISKMODEL} {' '.join(args)} | head -c 1"],
                         cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert res.stderr == "", res.stderr
    assert res.returncode in (0, 141)
    # the reader gone before the first write: a broken pipe for sure
    proc = subprocess.Popen([DISKMODEL, *args], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert err == "", err
    assert proc.returncode in (0, cli.EXIT_BROKEN_PIPE)


# ---------------------------------------------------------------------------- --debug, interrupts, surprises

@pytest.mark.slow
def test_debug_shows_the_traceback(inputs, workdir, env):
    args = ["predict", "--calibration", str(inputs / "size_neg.json")]
    res = _run(["--debug", *args], workdir, env)
    assert res.returncode != 0 and "Traceback" in res.stderr and "size_bytes" in res.stderr
    res = _run(args, workdir, dict(env, DISKMODEL_DEBUG="1"))
    assert res.returncode != 0 and "Traceback" in res.stderr
    res = _run(args, workdir, dict(env, DISKMODEL_DEBUG="0"))
    assert_one_error_line(res.stderr, "--calibration")


def _main_with_handler(monkeypatch, handler, argv=("predict",)):
    parser = cli.build_parser()
    real = parser.parse_args

    def parse_args(args=None, namespace=None):
        parsed = real(args, namespace)
        parsed.handler = handler
        return parsed

    monkeypatch.setattr(parser, "parse_args", parse_args)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    return cli.main(list(argv))


def test_an_interrupt_says_interrupted_and_no_more(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    assert _main_with_handler(monkeypatch, interrupted) == 130
    assert capsys.readouterr().err == "diskmodel: error: interrupted by SIGINT; the run did not finish\n"


def test_an_interrupt_prints_the_teardown_report_it_carries(monkeypatch, capsys):
    def interrupted(args):
        exc = KeyboardInterrupt()
        exc.teardown_report = "teardown: 2 loop devices detached and checked gone"
        raise exc

    assert _main_with_handler(monkeypatch, interrupted) == 130
    assert capsys.readouterr().err == ("diskmodel: error: interrupted by SIGINT; the run did not finish\n"
                                       "teardown: 2 loop devices detached and checked gone\n")


def test_a_sigterm_exits_143(monkeypatch, capsys):
    import signal

    from diskmodel.calibrate.bench.host_executor import Interrupted

    def terminated(args):
        raise Interrupted(signal.SIGTERM)

    assert _main_with_handler(monkeypatch, terminated) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "diskmodel: error: interrupted by SIGTERM; the run did not finish\n"


@pytest.mark.parametrize("exc, fragments", [
    (TypeError("unsupported operand"), ["internal error: TypeError: unsupported operand", "--debug"]),
    (KeyError("zones"), ["internal error: KeyError"]),
    (PermissionError(13, "Permission denied", "/dev/sdz"), ["cannot open /dev/sdz: Permission denied"]),
    (IsADirectoryError(21, "Is a directory", "/tmp"), ["/tmp is a directory"]),
    (OSError(28, "No space left on device", "/full/out.json"), ["No space left on device", "free some space"]),
    (RuntimeError("first line\nsecond line"), ["first line; second line"]),
    (ValueError(""), ["ValueError"]),
], ids=["type-error", "key-error", "permission", "is-a-directory", "enospc", "multi-line", "empty-message"])
def test_any_exception_is_one_line(monkeypatch, capsys, exc, fragments):
    def fails(args):
        raise exc

    code = _main_with_handler(monkeypatch, fails)
    assert code != 0
    err = capsys.readouterr().err
    line = assert_one_error_line(err)
    for fragment in fragments:
        assert fragment in line


# ---------------------------------------------------------------------------- the schema itself

def test_current_json_round_trips_and_validates(calibration_dict, tmp_path):
    from diskmodel.calibrate.harness.results import (SCHEMA, calibration_from_dict, calibration_from_json,
                                                     calibration_to_json, validate_calibration_dict)

    assert set(calibration_dict) <= set(SCHEMA)  # the schema covers every key to_dict writes
    # and to_dict writes every key but those written only where measured
    assert set(SCHEMA) - set(calibration_dict) <= {"one_cylinder_seek_s"}
    assert validate_calibration_dict(calibration_dict, "x.json") == 3
    again = calibration_from_dict(calibration_dict, source="x.json")
    assert json.loads(calibration_to_json(again)) == calibration_dict
    path = tmp_path / "c.json"
    path.write_text(json.dumps(calibration_dict))
    assert calibration_from_json(path).zones == again.zones


def test_a_file_of_the_previous_version_is_read(calibration_dict):
    from diskmodel.calibrate.harness.results import calibration_from_dict

    old = {k: v for k, v in calibration_dict.items() if k != "format_version"}
    old["format"] = "diskmodel-calibration/1"
    assert calibration_from_dict(old).zones == calibration_from_dict(calibration_dict).zones


def test_errors_name_the_file_and_the_key(calibration_dict, tmp_path):
    from diskmodel.calibrate.harness.results import CalibrationFileError, calibration_from_dict, calibration_from_json

    bad = dict(calibration_dict, size_bytes=-1)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(CalibrationFileError) as info:
        calibration_from_json(path)
    assert str(info.value) == f"{path}: key 'size_bytes' must be a positive integer (got -1)"
    assert info.value.key == "size_bytes" and isinstance(info.value, ValueError)
    with pytest.raises(CalibrationFileError, match=r"key 'zones\[0\]\.rate_bytes_per_s' must be a number > 0"):
        broken = copy.deepcopy(calibration_dict)
        broken["zones"][0]["rate_bytes_per_s"] = "fast"
        calibration_from_dict(broken)
    with pytest.raises(CalibrationFileError, match=r"key 'checks\[0\]\.passed' must be true or false or null"):
        broken = copy.deepcopy(calibration_dict)
        broken["checks"][0]["passed"] = "yes"
        calibration_from_dict(broken)
