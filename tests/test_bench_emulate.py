"""`diskmodel bench --emulate DRIVE`: each of the stack's disks an emulated drive of its own, measured and
predicted on that drive.

References independent of the code under test: the kernel's requests as each emulated drive served them
(its request log's summary), and the drive's simulation timing them through the kernel.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from _helpers import assert_one_error_line
from conftest import require_tools
from diskmodel.calibrate.cli import main
from diskmodel.calibrate.cli.bench import on_emulated_drives
from diskmodel.calibrate.emulate.drives import resolve_drive
from diskmodel.model.drive.drives import InMemoryDrive, PresetDrive
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.volumes import Partition
from diskmodel.model.stacks.raid import RaidArray
from test_emulate import require_emulation

DISKMODEL = [sys.executable, "-m", "diskmodel.calibrate.cli"]
MIB = 1 << 20


def _stack_file(tmp_path, volume: dict, kind: str = "ext4", disks=("sda",)) -> str:
    stack = {"format": "diskmodel.stack", "format_version": 1,
             "disks": [{"kind": "preset", "preset": "wd800bd", "name": d} for d in disks],
             "file_system": {"kind": kind, "volume": volume}}
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(stack))
    return str(path)


def _part(disk: str, size: int = 256 * MIB) -> dict:
    return {"kind": "partition", "disk": disk, "start_bytes": MIB, "size_bytes": size}


def test_the_prediction_is_on_the_emulated_drive_for_every_disk():
    members = (Partition(MIB, 256 * MIB, disk="sda"), Partition(MIB, 256 * MIB, disk="sdb"))
    stack = Stack(FileSystemNode(RaidArray("raid1", members, tool="btrfs"), kind="btrfs"),
                  (PresetDrive("wd800bd", "sda"), PresetDrive("wd800bd", "sdb")))
    emulated, note = on_emulated_drives(stack, "hp_c2247a")
    assert [d.name for d in emulated.disks] == ["sda", "sdb"]
    assert all(isinstance(d, InMemoryDrive) for d in emulated.disks)
    assert {d.model_disk().capacity_bytes for d in emulated.disks} == {resolve_drive("hp_c2247a").capacity_bytes}
    assert emulated.file_system == stack.file_system          # the layout is the stack's own
    assert "(sda, sdb) is an emulated hp_c2247a of its own" in note and "disk sdb: preset wd800bd" in note


def test_a_disk_larger_than_the_emulated_drive_is_one_line(tmp_path, capsys):
    # each disk on a drive of its own: a disk of 2 GiB and 1 MiB does not fit hp97560's 1.37 GB
    path = _stack_file(tmp_path, {"kind": "raid1", "tool": "btrfs", "members": [_part("sda"), _part("sdb", 2 << 30)]},
                       kind="btrfs", disks=("sda", "sdb"))
    assert main(["bench", "--stack", path, "--workload", "seqwrite_1m", "--emulate", "hp97560"]) == 2
    assert_one_error_line(capsys.readouterr().err, "--emulate hp97560: the stack needs a disk of 2148532224 bytes",
                          "the drive holds 1374216192")


def _run_alone(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    """diskmodel *argv*, its run's state in a folder of its own, checked to have left nothing."""
    env = {**os.environ, "DISKMODEL_RUN_DIR": str(tmp_path / "runs")}
    res = subprocess.run([*DISKMODEL, *argv], capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    left = subprocess.run([*DISKMODEL, "cleanup", "--dry-run"], capture_output=True, text=True, timeout=120, env=env)
    assert "no run left anything behind" in left.stdout + left.stderr
    return res


def _bench(tmp_path, stack: str, *args: str) -> tuple[dict, str]:
    res = _run_alone(tmp_path, "bench", "--stack", stack, *args, "--json")
    return json.loads(res.stdout), res.stderr


def _btrfs_mirror(tmp_path) -> str:
    """btrfs RAID 1 over a partition of each of two disks, sda and sdb."""
    return _stack_file(tmp_path, {"kind": "raid1", "tool": "btrfs", "members": [_part("sda"), _part("sdb")]},
                       kind="btrfs", disks=("sda", "sdb"))


def _written_per_drive(stderr: str) -> list[int]:
    return [int(m) for m in re.findall(r"emulated \S+: \d+ requests \(\d+ bytes read, (\d+) written\)", stderr)]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.serial
def test_a_mirror_over_two_disks_is_built_on_two_emulated_drives(tmp_path):
    require_emulation()
    require_tools("mkfs.btrfs", "fio")
    path = _btrfs_mirror(tmp_path)
    out, stderr = _bench(tmp_path, path, "--workload", "seqwrite_1m", "--size", "16M", "--emulate", "wd800bd")
    # two drives, each given every byte of the 16 MiB job (a mirror), as its own request log counts them
    written = _written_per_drive(stderr)
    assert len(written) == 2 and all(16 * MIB <= w < 24 * MIB for w in written), written
    row = {r["quantity"]: r for r in out["rows"]}["throughput_bytes_per_s"]
    assert 0.5 < row["predicted"] / row["measured"] < 2.0, row
    assert "(sda, sdb) is an emulated wd800bd of its own" in out["note"]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.serial
def test_the_prediction_is_of_the_drive_emulated_not_the_stacks_preset(tmp_path):
    # the stack names WD800BDs (about 40 MB/s at its start); hp_c2247a reads at about 3.7 MB/s there: measured
    # through the kernel on the emulated hp_c2247a, and predicted on it (it was predicted on the WD800BD, +989 %)
    require_emulation()
    require_tools("fio")
    path = _stack_file(tmp_path, _part("sda", 1_000_000_000 // MIB * MIB))
    out, _ = _bench(tmp_path, path, "--workload", "seqread_1m", "--size", "16M", "--emulate", "hp_c2247a")
    row = {r["quantity"]: r for r in out["rows"]}["throughput_bytes_per_s"]
    assert 3.0e6 < row["measured"] < 4.5e6, row
    assert abs(row["predicted"] / row["measured"] - 1) < 0.15, row


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.serial
def test_postmark_on_a_mirror_over_two_disks_runs_on_two_emulated_drives(tmp_path):
    require_emulation()
    require_tools("mkfs.btrfs", "postmark")
    path = _btrfs_mirror(tmp_path)
    res = _run_alone(tmp_path, "--debug", "postmark", "--stack", path, "--workload", "test1", "--files", "100",
                     "--transactions", "200", "--emulate", "wd800bd")
    # both drives given the mirror's writes, each about the same, as their request logs count them
    written = _written_per_drive(res.stderr)
    assert len(written) == 2 and min(written) > 0.8 * max(written) > 0, written


def test_a_flat_drive_is_predicted_as_its_mean_latency_and_per_byte_time():
    from diskmodel.calibrate.emulate.drives import flat_drive, model_drive

    spec = flat_drive([1e-4, 3e-4], 1 << 30, per_byte_s=1e-9)   # reads of 512 B: 0.1 or 0.3 ms, 1 ns a byte beyond
    disk = model_drive(spec).model_disk()
    rate = disk.rpm / 60.0 * 512                                 # one 512-byte sector a revolution
    assert disk.command_overhead_s + 512 / rate == pytest.approx(2e-4, rel=1e-9)
    assert disk.command_overhead_s + MIB / rate == pytest.approx(2e-4 + (MIB - 512) * 1e-9, rel=1e-9)
    with pytest.raises(ValueError, match="no per-byte time"):
        model_drive(flat_drive(1e-4, 1 << 30))


@pytest.mark.integration
@pytest.mark.slow
def test_several_scratches_are_prepared_all_or_none(tmp_path):
    # a stack's disks each on a device of its own: when one is refused, the ones made before it are gone too
    from diskmodel.calibrate.harness.scratch import ScratchRefused, prepare_scratches
    first, second = tmp_path / "a.img", tmp_path / "b.img"
    second.write_bytes(b"keep me")
    with pytest.raises(ScratchRefused, match="destroy_data_on"):
        prepare_scratches([(first, 16 * MIB, None), (second, 16 * MIB, tmp_path / "other")])
    assert not first.exists() and second.read_bytes() == b"keep me"
    spaces = prepare_scratches([(first, 16 * MIB, None), (tmp_path / "c.img", 16 * MIB, None)])
    assert [s.path for s in spaces] == [str(first), str(tmp_path / "c.img")]
    for space in spaces:
        space.close()
    assert not first.exists()
