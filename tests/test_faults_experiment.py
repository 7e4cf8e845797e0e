"""Faults: ``experiment --emulate`` signalled while its first VM part runs (SIGINT; SIGKILL then cleanup).

The fault matrix's cells (tests/test_faults.py, tests/_faults.py) cover ``emulate``, ``postmark --emulate`` and
``bench --emulate``; the experiment on an emulated drive adds the throwaway VM (qemu under TCG) reading the drive
over NBD from nbdkit on the host. Its calibration of the emulated drive and the VM's boot take minutes, so each
signal is one soak trial.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

import _faults
from _faults import DISKMODEL


def _guest_says(tmp: Path, line: str) -> bool:
    """Whether a VM of the run (its folder under *tmp*) has printed *line* on its output channel."""
    for channel in tmp.glob("**/diskmodel-vm-*/output.log"):
        with contextlib.suppress(OSError):
            if line in channel.read_text(errors="replace").splitlines():
                return True
    return False


# One trial a signal: the calibration of the emulated drive and the VM's boot under TCG take minutes.
@pytest.mark.soak
@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_a_signal_during_an_emulated_experiments_first_vm_part_leaves_nothing(signum):
    """``experiment --emulate`` signalled while its first VM part (PostMark on native over the emulated drive,
    served by nbdkit on the host) runs in the guest: SIGINT tears down the VM, nbdkit, nbdfuse and the run's
    folders and says so; SIGKILL leaves a state file that ``diskmodel cleanup`` undoes. Nothing is left, and no
    report folder."""
    from test_emulate import require_emulation
    from test_emulate_vm import require_vm

    require_emulation()
    require_vm()
    from diskmodel.calibrate.experiment_emulated import PART_MARK

    # a short base folder: PostMark 1.51 crashes on a working directory path much longer than 100 characters
    base = Path(tempfile.mkdtemp(prefix="dmxf-", dir="/tmp"))
    tmp = base / "tmp"
    tmp.mkdir()
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(base / "run"), TMPDIR=str(tmp),
               DISKMODEL_TEST_MARK=str(base / "mark"))
    env.pop("DISKMODEL_DEBUG", None)
    try:
        _experiment_signalled_in_its_first_vm_part(base, env, signum, PART_MARK)
    finally:   # the folders, unless the run left a mount in them (kept for a look, and never removed through)
        if not [ln for ln in Path("/proc/mounts").read_text().splitlines() if str(base) in ln]:
            shutil.rmtree(base, ignore_errors=True)


def _experiment_signalled_in_its_first_vm_part(base: Path, env: dict, signum: int, part_mark: str) -> None:
    run_dir, tmp, mark, out = base / "run", base / "tmp", base / "mark", base / "report"
    proc = subprocess.Popen([DISKMODEL, "experiment", "--emulate", "wd800bd", "--budget-s", "30", "--out", str(out),
                             "--no-progress"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        try:
            _faults.wait_until(lambda: _guest_says(tmp, f"{part_mark} BEGIN 0"), 1200,
                               "the experiment's first VM part to begin", proc, poll_s=0.5)
        except AssertionError as exc:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raise AssertionError(f"{exc}: {proc.stderr.read()[-3000:]}") from None
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if signum == signal.SIGKILL:
        # qemu, nbdkit and nbdfuse die with the run (PR_SET_PDEATHSIG); what is left is cleanup's
        _faults.wait_until(lambda: not [p for p in _faults.processes_marked(mark)
                                        if p.endswith((" nbdkit", " nbdfuse")) or "qemu" in p],
                           30, "qemu, nbdkit and nbdfuse to die with the run")
        res = _faults.cleanup(run_dir)
        assert res.returncode == 0, res.stdout + res.stderr
    else:
        assert proc.returncode == 128 + signum, err[-3000:]
        assert f"diskmodel: error: interrupted by {signum.name}; the run did not finish" in err.splitlines()
        assert "torn down and checked gone" in err, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert _faults.processes_marked(mark) == []
    assert [ln for ln in Path("/proc/mounts").read_text().splitlines() if str(base) in ln] == []
    assert str(base) not in subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"],
                                           capture_output=True, text=True).stdout
    assert list(run_dir.glob("*.json")) == [], [p.read_text() for p in run_dir.glob("*.json")]
    assert list(tmp.iterdir()) == []
    # no report, nor the temporary folder beside it that a report is built in
    assert sorted(p.name for p in base.iterdir() if p.name != "mark") == ["run", "tmp"], list(base.iterdir())
