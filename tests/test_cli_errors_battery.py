"""Every subcommand against a battery of bad inputs (issue #12, "The command line never shows a traceback").

Adds to tests/test_cli_errors.py what issue #12 asks: a device that cannot
be opened here (/dev/vda) given to every flag that reads a file, DiskSim
drive folders with a broken file, ``--backend`` specs whose module or
factory fail (``nosuch:factory``, ``os:getcwd``, ``sys:exit``), malformed
LVM costs files, unknown names, negative and NaN numbers, a disk smaller
than the paper's test area, an unknown flag to every subcommand that
``diskmodel --help`` lists, and a run interrupted by SIGINT.

Each case runs diskmodel's entry point in a subprocess (all cases in one, to
stay within the test budget; the interrupted run in its own, through the
installed ``diskmodel`` script) in a fresh empty working folder and fails
on: a traceback on stderr, exit 0, output on stdout, an error that is not one
line ``diskmodel: error: ...`` (or argparse's usage and its one error line),
a line that does not name the input at fault, or any file written in the
working folder or beside the inputs.

Also checked: every option's help states its default, and no help shows
reStructuredText markup.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _helpers import assert_one_error_line, run_cli_cases
from diskmodel.data.disksim.bundled import BUNDLED_DIR

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))
UNREADABLE_DEVICE = "/dev/vda"


def _device_cannot_be_opened() -> bool:
    try:
        os.close(os.open(UNREADABLE_DEVICE, os.O_RDONLY))
    except PermissionError:
        return True
    except OSError:
        return False
    return False


# The device cases run where /dev/vda exists and cannot be opened (a container's device policy, as here).
DEVICE_UNREADABLE = os.path.exists(UNREADABLE_DEVICE) and _device_cannot_be_opened()


def _subcommands() -> list[str]:
    from diskmodel.calibrate.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


COSTS = {"format": "diskmodel.lvm-costs", "format_version": 1,
         "layouts": {"lvm1": {"md_mapping_s": 1e-4, "fb_mapping_s": 1e-5},
                     "lvm2": {"md_mapping_s": 2e-4, "fb_mapping_s": 2e-5}}}


def _make_inputs(folder: Path) -> None:
    """Broken DiskSim drives, broken costs files, a backend module that fails on import."""
    folder.mkdir()

    def drive(name: str, change) -> None:
        target = folder / name
        shutil.copytree(BUNDLED_DIR / "atlas10k", target)
        change(target)

    def bad_trace_line(d):
        lines = (d / "atlas10k.trace").read_text().splitlines(keepends=True)
        lines[4] = "R Miss twelve 8 1.0 1.0\n"
        (d / "atlas10k.trace").write_text("".join(lines))

    drive("bad_trace", bad_trace_line)
    drive("truncated_model", lambda d: (d / "atlas10k.model").write_text(
        (d / "atlas10k.model").read_text()[:3000]))
    drive("no_diskspecs", lambda d: (d / "atlas10k.diskspecs").unlink())
    drive("binary_parv", lambda d: (d / "atlas10k.parv").write_bytes(bytes(range(256)) * 8))
    drive("empty_trace", lambda d: (d / "atlas10k.trace").write_text(""))

    def costs(name: str, change=None, text: str | None = None) -> None:
        data = json.loads(json.dumps(COSTS))
        if change is not None:
            change(data)
        (folder / name).write_text(text if text is not None else json.dumps(data))

    costs("costs_ok.json")
    costs("costs_truncated.json", text=json.dumps(COSTS)[:40])
    costs("costs_no_lvm2.json", lambda d: d["layouts"].pop("lvm2"))
    costs("costs_negative.json", lambda d: d["layouts"]["lvm1"].update(md_mapping_s=-1))
    costs("costs_nan.json", text=json.dumps(COSTS).replace("0.0001", "NaN"))
    costs("costs_other_format.json", lambda d: d.update(format="diskmodel.calibration"))
    costs("costs_list.json", text="[1, 2]")
    costs("costs_bad_io.json", lambda d: d.update(io_path={"warp_factor": 9}))
    (folder / "stack_truncated.json").write_text('{"name": "x", "disks": [{"kind": "preset", ')
    (folder / "mods").mkdir()
    (folder / "mods" / "raises_on_import.py").write_text("raise RuntimeError('broken module')\n")
    (folder / "a_dir").mkdir()


# (id, arguments, a fragment the error line must hold). "{in}": the inputs folder; "{dev}": /dev/vda.
CASES = [
    # broken DiskSim drive folders, wherever a drive is read
    ("trace-bad-line", ["validate-trace", "{in}/bad_trace"], "atlas10k.trace:5"),
    ("trace-empty", ["validate-trace", "{in}/empty_trace"], "atlas10k.trace"),
    ("model-truncated", ["validate-trace", "{in}/truncated_model"], "atlas10k.model"),
    ("diskspecs-missing", ["validate-trace", "{in}/no_diskspecs"], "atlas10k.diskspecs"),
    ("parv-binary", ["validate-trace", "{in}/binary_parv"], "atlas10k.parv"),
    ("predict-disk-model-truncated", ["predict", "--disk", "{in}/truncated_model"], "--disk"),
    ("predict-disk-parv-binary", ["predict", "--disk", "{in}/binary_parv"], "--disk"),
    ("simulated-model-truncated", ["calibrate", "--simulated", "{in}/truncated_model", "--no-progress"],
     "--simulated"),
    ("validate-trace-unknown-name", ["validate-trace", "no_such_drive"], "no_such_drive"),
    ("validate-trace-untraced-drive", ["validate-trace", "G4_4TB"], "no .trace"),
    ("validate-trace-list-and-name", ["validate-trace", "--list", "atlas10k"], "--list"),
    ("validate-trace-nothing", ["validate-trace"], "--list"),
    # --backend: the module or the factory fails
    ("backend-no-module", ["calibrate", "--backend", "nosuch:factory", "--no-progress"], "--backend"),
    ("backend-not-a-backend", ["calibrate", "--backend", "os:getcwd", "--no-progress"], "--backend"),
    ("backend-factory-needs-arguments", ["calibrate", "--backend", "os.path:join", "--no-progress"], "--backend"),
    ("backend-factory-exits", ["calibrate", "--backend", "sys:exit", "--no-progress"], "--backend"),
    ("backend-not-callable", ["calibrate", "--backend", "math:pi", "--no-progress"], "--backend"),
    ("backend-import-raises", ["calibrate", "--backend", "raises_on_import:make", "--no-progress"], "--backend"),
    ("backend-empty-factory", ["calibrate", "--backend", "os:", "--no-progress"], "--backend"),
    # predict: the LVM costs files
    ("costs-missing-file", ["predict", "--layout", "lvm1", "--costs", "{in}/nope.json"], "--costs"),
    ("costs-a-directory", ["predict", "--layout", "lvm1", "--costs", "{in}/a_dir"], "--costs"),
    ("costs-truncated", ["predict", "--layout", "lvm1", "--costs", "{in}/costs_truncated.json"], "not valid JSON"),
    ("costs-lacks-a-layout", ["predict", "--layout", "lvm1", "--costs", "{in}/costs_no_lvm2.json"],
     "key 'layouts.lvm2' is missing"),
    ("costs-negative", ["predict", "--layout", "lvm1", "--costs", "{in}/costs_negative.json"],
     "key 'layouts.lvm1.md_mapping_s'"),
    ("costs-nan", ["predict", "--layout", "lvm1", "--costs", "{in}/costs_nan.json"],
     "key 'layouts.lvm1.md_mapping_s'"),
    ("costs-other-format", ["predict", "--costs", "{in}/costs_other_format.json"], "key 'format'"),
    ("costs-a-list", ["predict", "--costs", "{in}/costs_list.json"], "--costs"),
    ("costs-unknown-io-parameter", ["predict", "--costs", "{in}/costs_bad_io.json"], "io_path.warp_factor"),
    ("costs-and-by-hand", ["predict", "--layout", "lvm1", "--costs", "{in}/costs_ok.json", "--md-mapping-s", "1"],
     "--md-mapping-s"),
    ("fitted-and-by-hand", ["predict", "--fitted", "--fb-mapping-s", "0"], "--fb-mapping-s"),
    ("fitted-and-costs", ["predict", "--fitted", "--costs", "{in}/costs_ok.json"], "--costs"),
    # predict: a disk smaller than the paper's 20 GB test area, and --fs-size
    ("disk-smaller-than-test-area", ["predict", "--disk", "atlas10k"], "--fs-size"),
    ("fs-size-not-a-multiple", ["predict", "--disk", "atlas10k", "--fs-size", "10M"], "--fs-size"),
    ("fs-size-larger-than-disk", ["predict", "--disk", "hp_c2247a", "--layout", "lvm2", "--fs-size", "2G"],
     "--fs-size"),
    ("fs-size-negative", ["predict", "--fs-size", "-8M"], "--fs-size"),
    # a negative value with a suffix is the flag's value, not an unknown option ("expected one argument" before)
    ("fs-size-negative-giga", ["predict", "--fs-size", "-5G"], "must be a byte count > 0 (got '-5G')"),
    ("fs-size-text", ["predict", "--fs-size", "lots"], "--fs-size"),
    # predict and the others: unknown names, negative and NaN numbers, truncated files
    ("predict-disk-unknown", ["predict", "--disk", "no_such_disk"], "bundled DiskSim drive"),
    ("predict-workload-unknown", ["predict", "--workload", "test9"], "--workload"),
    ("predict-transactions-nan", ["predict", "--transactions", "nan"], "--transactions"),
    ("predict-files-negative", ["predict", "--files", "-5"], "--files"),
    ("predict-page-cache-negative", ["predict", "--page-cache-bytes", "-1"], "--page-cache-bytes"),
    ("predict-fb-mapping-nan", ["predict", "--fb-mapping-s", "nan"], "--fb-mapping-s"),
    ("predict-stack-truncated", ["predict", "--stack", "{in}/stack_truncated.json"], "--stack"),
    ("predict-stack-missing", ["predict", "--stack", "{in}/nope.json"], "--stack"),
    ("postmark-stack-truncated", ["postmark", "--stack", "{in}/stack_truncated.json", "--workload", "test1", "--vm"],
     "--stack"),
    ("postmark-workload-unknown", ["postmark", "--layout", "native", "--workload", "nope", "--vm"], "--workload"),
    ("postmark-files-negative", ["postmark", "--layout", "native", "--workload", "test1", "--vm", "--files", "-1"],
     "--files"),
    ("experiment-preset-a-drive", ["experiment", "--preset", "atlas10k", "--no-progress"], "--preset"),
    ("experiment-seed-nan", ["experiment", "--seed", "nan", "--no-progress"], "--seed"),
    ("calibrate-simulated-unknown", ["calibrate", "--simulated", "no_such_disk", "--no-progress"], "--simulated"),
    ("calibrate-budget-negative-inf", ["calibrate", "--simulated", "wd800bd", "--budget-s", "-inf"], "--budget-s"),
    ("probe-a-regular-file", ["probe", "{in}/costs_ok.json"], "costs_ok.json"),
    ("probe-source-unknown", ["probe", "--source", "nope"], "--source"),
    ("cleanup-extra-argument", ["cleanup", "extra"], "extra"),
]

# A device that cannot be opened here, given to every flag that reads a file or a device.
DEVICE_CASES = [
    ("device-calibrate", ["calibrate", "{dev}", "--no-progress"], "{dev}"),
    ("device-experiment", ["experiment", "--device", "{dev}", "--no-progress"], "{dev}"),
    ("device-simulated", ["calibrate", "--simulated", "{dev}", "--no-progress"], "{dev}"),
    ("device-calibration", ["predict", "--calibration", "{dev}"], "{dev}"),
    ("device-costs", ["predict", "--layout", "lvm2", "--costs", "{dev}"], "{dev}"),
    ("device-stack", ["predict", "--stack", "{dev}"], "{dev}"),
    ("device-disk", ["predict", "--disk", "{dev}"], "{dev}"),
    ("device-validate-trace", ["validate-trace", "{dev}"], "{dev}"),
    ("device-postmark-stack", ["postmark", "--stack", "{dev}", "--workload", "test1", "--vm"], "{dev}"),
    ("device-postmark-scratch", ["postmark", "--layout", "native", "--workload", "test1", "--scratch", "{dev}"],
     "{dev}"),
    ("device-experiment-out", ["experiment", "--out", "{dev}", "--no-progress"], "{dev}"),
    ("device-calibrate-json", ["calibrate", "--simulated", "wd800bd", "--json", "{dev}", "--no-progress"], "{dev}"),
]


def _listing(*folders: Path) -> dict:
    return {str(f): sorted(str(p.relative_to(f)) for p in f.rglob("*")) for f in folders}


@pytest.fixture(scope="module")
def battery(tmp_path_factory):
    """Run every case; {id: (result, fragment, listing of its working folder)}, and the inputs' listings."""
    root = tmp_path_factory.mktemp("battery")
    inputs = root / "inputs"
    _make_inputs(inputs)
    cases = CASES + (DEVICE_CASES if DEVICE_UNREADABLE else [])
    for name in _subcommands():  # every subcommand diskmodel --help lists, other helpers' new ones included
        cases.append((f"unknown-flag-{name}", [name, "--no-such-flag"], None))  # argparse words it
    env = dict(os.environ, PYTHONPATH=str(inputs / "mods"), DISKMODEL_RUN_DIR=str(root / "runstate"))
    env.pop("DISKMODEL_DEBUG", None)
    before_inputs = _listing(inputs)
    fill = {"{in}": str(inputs), "{dev}": UNREADABLE_DEVICE}
    plan, fragments = {}, {}
    for ident, args, fragment in cases:
        for key, value in fill.items():
            args = [a.replace(key, value) for a in args]
            fragment = fragment if fragment is None else fragment.replace(key, value)
        work = root / "work" / ident
        work.mkdir(parents=True)
        plan[ident], fragments[ident] = (args, str(work)), fragment
    results = run_cli_cases(plan, root, env, timeout_s=600)
    out = {ident: (results[ident], fragments[ident], _listing(Path(plan[ident][1]))) for ident in plan}
    return out, before_inputs, _listing(inputs)


ALL_IDS = [c[0] for c in CASES] + ([c[0] for c in DEVICE_CASES] if DEVICE_UNREADABLE else [])


@pytest.mark.parametrize("ident", ALL_IDS)
def test_bad_input_is_one_line_naming_what_is_wrong(battery, ident):
    results, _, _ = battery
    res, fragment, listing = results[ident]
    assert res["code"] != 0, res["stdout"] + res["stderr"]
    assert res["stdout"] == "", res["stdout"]
    assert_one_error_line(res["stderr"], fragment)
    assert all(files == [] for files in listing.values()), f"a file appeared: {listing}"


def test_every_subcommand_refuses_an_unknown_flag_in_one_line(battery):
    results, _, _ = battery
    names = _subcommands()
    assert {"experiment", "calibrate", "predict", "probe", "postmark", "validate-trace", "cleanup"} <= set(names)
    for name in names:
        res, fragment, listing = results[f"unknown-flag-{name}"]
        assert res["code"] == 2, (name, res["stderr"])
        line = assert_one_error_line(res["stderr"], fragment)  # argparse may name a missing required one first
        assert "--help" in line, line


def test_nothing_was_written_beside_the_inputs(battery):
    _, before, after = battery
    assert before == after


@pytest.mark.slow
def test_an_interrupted_run_is_one_line_and_leaves_no_report(tmp_path):
    """SIGINT while ``experiment`` runs: one ``diskmodel: error: interrupted ...`` line and the teardown's report,
    exit 130, no folder."""
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(tmp_path / "runstate"))
    env.pop("DISKMODEL_DEBUG", None)
    proc = subprocess.Popen([DISKMODEL, "experiment", "--out", "report", "--no-progress"], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)  # past the imports, into the calibration or the fit (the whole job takes ~30 s)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, (proc.returncode, err)
    # one error line, then at most the teardown's own one-line report (what it removed and checked gone)
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and 1 <= len(lines) <= 2, err
    assert lines[0] == "diskmodel: error: interrupted by SIGINT; the run did not finish", err
    assert len(lines) == 1 or "torn down and checked gone" in lines[1] or "built nothing yet" in lines[1], err
    assert list(work.iterdir()) == [], "an interrupted experiment left its report folder"


def _help_texts():
    from diskmodel.calibrate.cli import build_parser

    parser = build_parser()
    yield "diskmodel", parser, parser.format_help()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, subparser in sub.choices.items():
        yield name, subparser, subparser.format_help()


def test_every_option_states_its_default():
    missing = []
    for name, parser, _ in _help_texts():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            if "default" not in (action.help or ""):
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"options whose help does not state the default: {', '.join(missing)}"


def test_help_shows_no_restructuredtext():
    markup = re.compile(r"``|:(?:func|mod|class|meth|attr|data|ref):|`[^`\n]+`_?")
    shown = [f"{name}: {m.group(0)!r}" for name, _, text in _help_texts() for m in markup.finditer(text)]
    assert not shown, f"reStructuredText markup in --help: {', '.join(shown)}"
