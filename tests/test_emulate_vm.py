"""Emulated drives in the throwaway VM (diskmodel.calibrate.emulate.for_vm) and ``--emulate DRIVE`` on the
workload commands: LVM over two emulated drives keeps a file's data and both drives' request logs show it;
``postmark --emulate`` on the host gives a result; SIGINT during a VM run on an emulated drive leaves nothing;
bad DRIVE values give one line."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import skip_or_fail, wait_for
from _helpers import assert_one_error_line, short_probe_env
from test_emulate import assert_nothing_left, diskmodel, flat_calibration, isolated, require_emulation  # noqa: F401

MiB = 1 << 20


@pytest.fixture
def short_isolated():
    """As test_emulate's ``isolated``, with a short temporary folder: PostMark 1.51 crashes (SIGSEGV) on a
    working directory whose path is much longer than 100 characters, which pytest's folders reach."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="dmvm-", dir="/tmp"))
    run_dir, tmp = base / "run", base / "tmp"
    run_dir.mkdir()
    tmp.mkdir()
    yield dict(os.environ, DISKMODEL_RUN_DIR=str(run_dir), TMPDIR=str(tmp)), run_dir, tmp
    shutil.rmtree(base, ignore_errors=True)


def require_vm():
    from diskmodel.calibrate.bench import vm

    ok, why = vm.vm_available()
    if not ok:
        skip_or_fail(why)
    proc = subprocess.run(["nbdkit", "--dump-plugin", "python"], capture_output=True)
    if proc.returncode:
        skip_or_fail("nbdkit's Python plugin is missing (Debian package nbdkit-plugin-python)")


def _processes_with(tag: str, names: tuple[str, ...]) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if tag in cmd and any(n in cmd for n in names):
                found.append(cmd)
    return found


# ---------------------------------------------------------------------------
# Bad input (no devices): one line naming --emulate and the value
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("extra, fragment", [
    (["--emulate", "no-such-drive"], "--emulate DRIVE 'no-such-drive' is not a folder"),
    (["--emulate", "hp97560", "--size", "4G"], "--emulate hp97560: the stack needs a disk of"),
    (["--emulate", "hp97560", "--scratch", "/tmp/x.img"], "--scratch and --destroy-data-on do not apply with "
                                                          "--emulate"),
])
def test_bad_emulate_values_are_one_line(isolated, extra, fragment):
    env, run_dir, tmp = isolated
    res = diskmodel("postmark", "--layout", "native", "--workload", "test1", *extra, env=env, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert_one_error_line(res.stderr, fragment)
    assert_nothing_left(run_dir, tmp)


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["bench", "--stack", "STACK", "--workload", "seqread_4k", "--size", "8M"],
    ["experiment", "--out", "OUT"],
])
def test_bad_emulate_drive_is_one_line_for_bench_and_experiment(isolated, tmp_path, command):
    from diskmodel.model.stacks.stack import FileSystemNode, Partition, Stack

    env, run_dir, tmp = isolated
    stack = tmp_path / "stack.json"
    stack.write_text(Stack(FileSystemNode(Partition(MiB, 40 * MiB), kind="ext3")).to_json())
    argv = [str(stack) if a == "STACK" else str(tmp_path / "out") if a == "OUT" else a for a in command]
    res = diskmodel(*argv, "--emulate", "no-such-drive", env=env, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert_one_error_line(res.stderr, "--emulate DRIVE 'no-such-drive' is not a folder")
    assert not (tmp_path / "out").exists()
    assert_nothing_left(run_dir, tmp)


@pytest.mark.slow
def test_experiment_emulate_refuses_device_and_postmark_scratch_in_one_line(isolated, tmp_path):
    env, run_dir, tmp = isolated
    res = diskmodel("experiment", "--out", tmp_path / "out", "--emulate", "wd800bd", "--device", "/dev/null",
                    env=env, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert_one_error_line(res.stderr, "--device, --postmark-scratch and --destroy-data-on do not apply with "
                                      "--emulate")
    assert_nothing_left(run_dir, tmp)


@pytest.mark.slow  # a CLI subprocess
@pytest.mark.parametrize("extra, other", [(["--emulate", "wd800bd"], "--emulate"), (["--device", "/dev/null"], "--device")])
def test_experiment_simulated_with_emulate_or_device_is_one_line(isolated, tmp_path, extra, other):
    env, _, _ = isolated
    res = diskmodel("experiment", "--simulated", *extra, "--out", tmp_path / "rep", env=env, timeout=300)
    assert res.returncode == 2, res.stderr
    assert_one_error_line(res.stderr, f"--simulated: does not apply with {other}")
    assert not (tmp_path / "rep").exists()


@pytest.mark.slow
def test_a_calibration_json_that_does_not_parse_is_one_line_for_emulate(isolated, tmp_path):
    env, run_dir, tmp = isolated
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = diskmodel("postmark", "--layout", "native", "--workload", "test1", "--emulate", bad, env=env, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert_one_error_line(res.stderr, "--emulate DRIVE")
    assert str(bad) in res.stderr
    assert_nothing_left(run_dir, tmp)


# ---------------------------------------------------------------------------
# The VM: LVM over two emulated drives
# ---------------------------------------------------------------------------

_LVM_SCRIPT = r"""
pvcreate -q /dev/vdb /dev/vdc
vgcreate -q emu /dev/vdb /dev/vdc
lvcreate -q -y -i 2 -I 64 -l 100%FREE -n lv emu
mkfs.ext4 -q /dev/emu/lv
mount /dev/emu/lv /mnt
dd if=/dev/urandom of=/mnt/f bs=1M count=8 2>/dev/null
a=$(sha256sum /mnt/f | cut -d' ' -f1)
sync
umount /mnt
echo 3 > /proc/sys/vm/drop_caches
mount /dev/emu/lv /mnt
b=$(sha256sum /mnt/f | cut -d' ' -f1)
echo "SUMS $a $b"
umount /mnt
vgchange -q -an emu
"""


@pytest.mark.integration
@pytest.mark.slow
def test_lvm_over_two_emulated_drives_in_the_vm_keeps_data_and_both_drives_serve_it(tmp_path):
    require_vm()
    from diskmodel.calibrate.emulate import flat_drive, read_log
    from diskmodel.calibrate.emulate.for_vm import run_script_on_emulated_drives

    drives = [flat_drive(1e-3, 64 * MiB, name="left"), flat_drive(1e-3, 64 * MiB, name="right")]
    result, served = run_script_on_emulated_drives(_LVM_SCRIPT, drives, log_dir=tmp_path, timeout_s=900)
    assert result.returncode == 0, result.output[-3000:]
    sums = re.search(r"SUMS ([0-9a-f]{64}) ([0-9a-f]{64})", result.output)
    assert sums, result.output[-3000:]
    assert sums.group(1) == sums.group(2)  # read back from the drives after the caches were dropped
    assert [d.guest_path for d in served] == ["/dev/vdb", "/dev/vdc"]
    for d in served:
        frame = read_log(d.log_path)
        assert frame.attrs["drive"] == d.drive
        assert not frame["probe"].any()
        # the striped volume puts half of the 8 MiB file on each drive: written, then read back once the
        # caches were dropped
        writes = frame[frame["op"] == 1]["size_bytes"].sum()
        reads = frame[frame["op"] == 0]["size_bytes"].sum()
        assert writes >= 4 * MiB and reads >= 4 * MiB, (d.drive, writes, reads)
        assert d.summary["requests"] == len(frame) and d.summary["errors"] == 0
        # every request took the drive's time at least (never completed early)
        assert (frame["lateness_s"] >= 0).all()
        # the guest's writeback sends requests while earlier ones are served: the drive gets them then and
        # queues them (nbdkit's parallel thread model), each starting as the one before completes; a
        # serialized server saw each only after the last completed, and none waited
        timed = frame[frame["service_s"] > 0]
        queued = timed["wait_s"].to_numpy() > 10e-6
        assert queued.sum() >= 5, (d.drive, int(queued.sum()), len(timed))
        start = (timed["arrival_s"] + timed["wait_s"]).to_numpy()
        end_before = (timed["arrival_s"] + timed["wait_s"] + timed["service_s"]).to_numpy()[:-1]
        np.testing.assert_allclose(start[1:][queued[1:]], end_before[queued[1:]], atol=1e-6)
        # back to back at the drive, so back to back at the caller: a queued request completes its service
        # after the one before (less a quarter of it for the host's wake-ups), not a handover later
        gaps = np.diff(timed["done_s"].to_numpy())[queued[1:]]
        assert np.median(gaps) == pytest.approx(1e-3, abs=0.25e-3), (d.drive, gaps)
    assert not [p for p in tmp_path.iterdir() if p.suffix != ".reqlog"]  # only the two request logs are kept


# ---------------------------------------------------------------------------
# postmark --emulate
# ---------------------------------------------------------------------------

@pytest.mark.integration
@pytest.mark.slow
def test_postmark_emulate_on_the_host_gives_a_result(short_isolated, flat_calibration):
    require_emulation()
    env, run_dir, tmp = short_isolated
    env = short_probe_env(env, tmp.parent / "short-probe")  # the run and its teardown, not the drive's timing
    res = diskmodel("postmark", "--layout", "native", "--workload", "test1", "--emulate", flat_calibration,
                    "--size", "48M", "--files", "100", "--transactions", "300", "--json", "-", env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    run = out["runs"][0]
    assert run["report"]["transactions"] == 300
    assert out["environment"]["backing"].startswith("/dev/loop")  # the emulated drive's loop device
    m = re.search(r"emulated calibration flat\.json: (\d+) requests \((\d+) bytes read, (\d+) written\)", res.stderr)
    assert m, res.stderr[-3000:]
    assert int(m.group(1)) > 0 and int(m.group(3)) > 0
    assert_nothing_left(run_dir, tmp)


@pytest.mark.integration
@pytest.mark.slow
def test_sigint_during_a_vm_run_on_an_emulated_drive_leaves_nothing(short_isolated, flat_calibration):
    require_emulation()
    require_vm()
    env, run_dir, tmp = short_isolated
    tag = str(tmp)
    proc = subprocess.Popen([sys.executable, "-m", "diskmodel.calibrate.cli", "postmark", "--layout", "lvm1",
                             "--workload", "test1", "--vm", "--emulate", str(flat_calibration), "--size", "48M"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for(lambda: _processes_with(tag, ("qemu",)) or proc.poll() is not None, 300, "qemu to start")
        assert proc.poll() is None, proc.communicate()
        assert _processes_with(tag, ("nbdkit",))
        assert list(tmp.rglob("nbd.sock"))
        time.sleep(3)  # the guest is booting, with the drive attached
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (1, 128 + signal.SIGINT), (proc.returncode, err[-3000:])
    assert "Traceback" not in err, err
    assert not _processes_with(tag, ("qemu", "nbdkit")), "left running"
    assert not list(tmp.rglob("nbd.sock"))
    assert_nothing_left(run_dir, tmp)


def test_ratio_table_sets_each_layout_against_native_beside_the_papers_ratio():
    import pandas as pd

    from diskmodel.calibrate.experiment_emulated import ratio_table
    from diskmodel.data.tables import postmark_results

    class Summary:  # what ratio_table reads of a PostMarkSummary: its means by the outside clock
        def __init__(self, read, write):
            self.params = pd.Series({"read_bytes_per_s_wall": read, "write_bytes_per_s_wall": write})

    runs = [("test1 on native", None, Summary(4e6, 8e6)), ("test1 on lvm2", None, Summary(1e6, 6e6))]
    table = ratio_table(runs, postmark_results()).set_index(["layout", "operation"])
    assert table.loc[("lvm2", "read"), "ratio to native"] == pytest.approx(0.25)
    assert table.loc[("lvm2", "write"), "ratio to native"] == pytest.approx(0.75)
    assert table.loc[("native", "read"), "ratio to native"] == 1.0
    # Table 4 (test1): LVM-2 reads 1.21 MB/s where native reads 2.99 MB/s
    assert table.loc[("lvm2", "read"), "paper's ratio to native"] == pytest.approx(1268776.96 / 3135242.24)
    assert table.loc[("lvm2", "read"), "measured MB/s"] == pytest.approx(1.0)


def test_one_guest_script_runs_each_part_in_turn_literally_and_stops_at_the_first_failure():
    """The one-boot experiment's guest script, run by the real dash as the VM runs it (sh -e)."""
    from diskmodel.calibrate.experiment_emulated import PART_MARK, guest_script

    parts = ["#!/bin/sh\ntrap 'echo torn down 0' EXIT\necho \"first $((1 + 1))\" '$HOME `id`'\n",
             "#!/bin/sh\necho second\nexit 3\n",
             "#!/bin/sh\necho third\n"]
    proc = subprocess.run(["sh", "-e", "-c", guest_script(parts)], capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 3
    assert proc.stdout.splitlines() == [f"{PART_MARK} BEGIN 0", "first 2 $HOME `id`", "torn down 0",
                                        f"{PART_MARK} END 0 0", f"{PART_MARK} BEGIN 1", "second",
                                        f"{PART_MARK} END 1 3"]


def test_one_guest_script_refuses_a_part_holding_its_delimiter():
    from diskmodel.calibrate.experiment_emulated import guest_script

    with pytest.raises(ValueError, match="DISKMODEL_PART_1_END_OF_SCRIPT"):
        guest_script(["echo a", "echo b\nDISKMODEL_PART_1_END_OF_SCRIPT\n"])
