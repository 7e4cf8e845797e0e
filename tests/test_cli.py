"""The `diskmodel` command: help, and `predict`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from diskmodel.calibrate.cli import COMMAND_MODULES, main


def test_help_lists_every_subcommand():
    out = subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for name in ("experiment", "calibrate", "predict", "probe", "postmark", "validate-trace", "cleanup", "bench",
                 "emulate", "emulate-log", "iopath", "stack-schema", "trace", "replay"):
        assert name in out
    assert len(COMMAND_MODULES) == 12
    assert "--debug" in out


def _predict(capsys, *args):
    assert main(["predict", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_json_reports_throughput_and_every_term(capsys):
    result = _predict(capsys, "--layout", "native", "--workload", "test1")
    assert result["disk"] == "WD800BD"
    assert result["read_throughput_bytes_per_s"] > 0 and result["write_throughput_bytes_per_s"] > 0
    assert set(result["terms_s"]) >= {"T_DO", "T_MO", "T_FL", "T_DFA", "T_J", "T_LVM_MO"}
    # PostMark divides the bytes of the whole run by its elapsed time.
    assert result["write_throughput_bytes_per_s"] * result["elapsed_s"] > 1.5e9


def test_lvm_mapping_cost_slows_the_lvm_layout(capsys):
    free = _predict(capsys, "--layout", "lvm1", "--workload", "test2")
    costly = _predict(capsys, "--layout", "lvm1", "--workload", "test2", "--md-mapping-s", "1e-3")
    assert costly["elapsed_s"] > free["elapsed_s"]
    assert costly["terms_s"]["T_LVM_MO"] > free["terms_s"]["T_LVM_MO"]


def test_predict_refuses_a_negative_mapping_cost(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["predict", "--md-mapping-s", "-1"])
    assert exit_info.value.code == 2
    assert "--md-mapping-s" in capsys.readouterr().err
