"""A benchmark stopped by a signal ends as the command line does (benchmarks/_artifact.py, ``run_main``):
one line naming the signal, status 128 + its number, no traceback and no artifact."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_benchmark_stopped_by_a_signal_says_so_in_one_line(tmp_path, sig):
    # calibration_accuracy.py calibrates simulated drives for about 15 s: stopped after 4 s
    proc = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "calibration_accuracy.py"),
                             "--results-dir", str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    time.sleep(4.0)
    assert proc.poll() is None, "the benchmark ended before the signal"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == (f"calibration_accuracy.py: error: interrupted by {sig.name}; the run did not finish "
                         "and wrote no artifact"), err
    assert "Traceback" not in err, err
    assert not list(tmp_path.iterdir())
