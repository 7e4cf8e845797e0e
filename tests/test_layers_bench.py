"""The block layers' bench: plans of md, LVM and btrfs RAID, thin pools and nested loop files; fio and copy
parsing; throttled members; runs on the host and in the VM that leave nothing behind.

Unit tests check the plans' commands and sizes against hand-worked cases (the
sizes md, LVM and btrfs need) and the parsers against real tool output;
integration tests build real stacks (btrfs RAID 1 with a throttled member
and nested loop files on the host, an md mirror under a thin pool in the VM).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from _helpers import assert_one_error_line
from conftest import require_root, require_tools, skip_or_fail
from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench.copy import copy_shell, parse_copy_output
from diskmodel.calibrate.bench.fio import fio_argv, parse_fio_json
from diskmodel.calibrate.bench.layers_bench import measure_stack, workload_body
from diskmodel.calibrate.bench.steps import render_step
from diskmodel.model.predictions.block_workloads import FileCopy, FioJob
from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.stacks.loop_file import LoopFile, nested_loop_files
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.units import KIB, MIB
from diskmodel.model.stacks.volumes import LinearVolume, Partition

DISKS = tuple(PresetDrive("wd800bd", d) for d in ("sda", "sdb", "sdc", "sdd"))


def _members(n: int, size: int = 128 * MIB) -> tuple:
    return tuple(Partition(MIB, size, disk=d.name) for d in DISKS[:n])


def _stack(volume, n_disks: int = 1, kind: str = "ext3") -> Stack:
    return Stack(FileSystemNode(volume, kind=kind), DISKS[:n_disks])


def _commands(plan) -> str:
    """The plan's steps as the guest script's lines (each word rendered by sh_word)."""
    return "\n".join(render_step(step) for step in plan.steps)


# ---------------------------------------------------------------- plans: hand-worked sizes

def test_md_raid5_gets_its_level_chunk_and_exact_per_member_size():
    # 3 x 128 MiB members, 1 MiB data offset: 2 data chunks per row, 127 MiB per member at most
    array = RaidArray("raid5", _members(3), tool="md", chunk_size_bytes=64 * KIB, array_size_bytes=2 * 127 * MIB)
    plan = L.build_plan(_stack(array, 3), backing="/dev/vda")
    text = _commands(plan)
    assert "--level=5 --raid-devices=3 --chunk=64K --size=130048K --data-offset=1024K" in text
    assert f"diskmodel_check {2 * 127 * MIB} blockdev --getsize64 " in text   # the device is checked exactly
    assert [r.offset_bytes for r in plan.regions] == [MIB, 130 * MIB, 259 * MIB]
    assert [s.resource[0] for s in plan.steps if s.resource] == ["loop", "loop", "loop", "md", "dir", "mount"]


def test_md_raid1_has_no_chunk_and_raid0_must_state_the_size_md_gives_it():
    mirror = RaidArray("raid1", _members(2), tool="md", array_size_bytes=127 * MIB)
    assert "--level=1 --raid-devices=2 --size=130048K" in _commands(L.build_plan(_stack(mirror, 2), backing="/x"))
    # RAID 0: (128 MiB - 1 MiB) // 512 KiB whole chunks per member = 254, x 2 members
    stripe = RaidArray("raid0", _members(2), tool="md", array_size_bytes=2 * 254 * 512 * KIB)
    assert " --size=" not in _commands(L.build_plan(_stack(stripe, 2), backing="/x"))
    with pytest.raises(ValueError, match="array_size_bytes must be 266338304"):
        L.build_plan(_stack(stripe.evolve(array_size_bytes=2 * 126 * MIB), 2), backing="/x")


def test_lvm_raid6_and_striped_commands():
    disks = DISKS + (PresetDrive("wd800bd", "sde"),)
    members = _members(4) + (Partition(MIB, 128 * MIB, disk="sde"),)
    raid6 = RaidArray("raid6", members, tool="lvm", chunk_size_bytes=64 * KIB, array_size_bytes=3 * 120 * MIB)
    text = _commands(L.build_plan(Stack(FileSystemNode(raid6, kind="ext3"), disks), backing="/x"))
    assert "--type raid6 -i 3 -I 64k -l 90 " in text and "sync_percent" in text
    with pytest.raises(ValueError, match="at least 5 members"):    # md takes 4, LVM wants 3 stripes
        L.build_plan(_stack(raid6.evolve(members=members[:4], array_size_bytes=2 * 120 * MIB), 4), backing="/x")
    stripe = RaidArray("raid0", _members(2), tool="lvm", chunk_size_bytes=64 * KIB, array_size_bytes=2 * 124 * MIB)
    text = _commands(L.build_plan(_stack(stripe, 2), backing="/x"))
    assert "--type striped -i 2 -I 64k -l 62 " in text and text.count("pvcreate") == 2


def test_lvm_over_an_md_mirror_makes_the_array_its_pv():
    # pvcreate on the md device mdadm made: the model's LV (126 MiB of md's 127 after pe_start, 31 extents)
    # is the LV the plan checks
    mirror = RaidArray("raid1", _members(2), tool="md", array_size_bytes=127 * MIB, name="md0")
    lv = LinearVolume((mirror,), name="lv0")
    plan = L.build_plan(_stack(lv, 2, kind="ext4"), backing="/x")
    text = _commands(plan)
    md = re.search(r'mdadm --create "\$(\w+)"', text).group(1)
    assert f'pvcreate -ff -y --dataalignment 1024k "${md}"' in text
    assert "lvcreate -y -W n -l 31 " in text and f"diskmodel_check {lv.size_bytes} blockdev --getsize64" in text
    assert [s.resource[0] for s in plan.steps if s.resource] == ["loop", "loop", "md", "pv", "vg", "lv", "dir", "mount"]


def test_thin_pool_commands_and_used_bytes_written_first():
    thin = ThinVolume(Partition(MIB, 256 * MIB), 128 * MIB, 512 * MIB, used_bytes=16 * MIB,
                      metadata_size_bytes=4 * MIB, zero_new_chunks=False)
    text = _commands(L.build_plan(_stack(thin), backing="/x"))
    assert "--type thin-pool -l 32 --poolmetadatasize 4096k --poolmetadataspare n --chunksize 64k -Z n" in text
    assert "-V 524288k --thin" in text and "bs=1M count=16 oflag=direct" in text


def test_three_nested_loop_files_build_bottom_up_each_on_its_own_host_file_system():
    node = nested_loop_files(Partition(MIB, 512 * MIB), 3, allocation="zero_filled", host_file_system="ext2")
    plan = L.build_plan(_stack(node), backing="/x", mount_dir="/run/r/mnt")
    text = _commands(plan)
    assert text.count("mkfs.ext2") == 3 and text.count("losetup --find --show \"$") == 3
    assert text.count("dd if=/dev/zero") == 3 and "truncate" not in text
    dirs = [s.resource[1][0][1] for s in plan.steps if s.resource and s.resource[0] == "dir"]
    assert len(dirs) == 4 and all(d.startswith("/run/r/mnt") for d in dirs)   # recorded before they exist
    sparse = L.build_plan(_stack(nested_loop_files(Partition(MIB, 512 * MIB), 1)), backing="/x")
    assert "truncate -s" in _commands(sparse) and "--direct-io" not in _commands(sparse).split("\n", 1)[1]


def test_an_md_array_left_at_its_default_size_is_what_mdadm_makes_of_its_members():
    # two 128 MiB + 40 KiB members: 127 MiB + 40 KiB after the 1 MiB data offset, which mdadm rounds down
    # to whole 64 KiB for a mirror (Create.c) and to whole chunks for the parity levels
    members = tuple(Partition(MIB, 128 * MIB + 40 * KIB, disk=d.name) for d in DISKS[:3])
    mirror = RaidArray("raid1", members[:2], tool="md")
    assert mirror.size_bytes == 127 * MIB
    assert mirror.describe().endswith("reads md, data from 1048576 bytes into each member")
    assert "data from" not in mirror.evolve(tool="lvm").describe()
    text = _commands(L.build_plan(_stack(mirror, 2), backing="/dev/vda"))
    assert "--level=1 --raid-devices=2 --size=130048K --data-offset=1024K" in text
    parity = RaidArray("raid5", members, tool="md", chunk_size_bytes=64 * KIB)
    assert parity.size_bytes == 2 * 127 * MIB
    # a data offset the user's array has (mdadm --examine's "Data Offset"), built as given
    far = RaidArray("raid1", members[:2], tool="md", data_offset_bytes=8 * MIB)
    assert far.size_bytes == 120 * MIB
    assert "--size=122880K --data-offset=8192K" in _commands(L.build_plan(_stack(far, 2), backing="/dev/vda"))


def test_btrfs_raid_is_the_file_system():
    two = _members(2, 256 * MIB)
    stack = _stack(RaidArray("raid1", two, tool="btrfs"), 2, kind="btrfs")
    plan = L.build_plan(stack, backing="/x")
    assert "mkfs.btrfs -f -q -d raid1 -m raid1" in _commands(plan) and plan.fs_type == "btrfs"
    assert "mkfs.ext" not in _commands(plan) and "blockdev --getsize64" not in _commands(plan)


@pytest.mark.parametrize("stack, field", [
    # all of the members: no room for md's data offset
    (lambda: _stack(RaidArray("raid1", _members(2), tool="md", array_size_bytes=128 * MIB), 2),
     "holds at most 133169152 after md's data offset of 1048576 bytes"),
    (lambda: _stack(RaidArray("raid1", _members(2), tool="btrfs"), 2), "kind must be btrfs"),
    (lambda: _stack(RaidArray("raid1", _members(2, 120 * MIB), tool="btrfs"), 2, "btrfs"), "at least 131072000"),
    (lambda: _stack(RaidArray("raid5", _members(3), tool="lvm", array_size_bytes=2 * 128 * MIB), 3),
     "PV header and raid metadata"),
    (lambda: _stack(ThinVolume(Partition(MIB, 256 * MIB), 250 * MIB, 512 * MIB, metadata_size_bytes=4 * MIB)),
     "multiple of the extent"),
    (lambda: _stack(ThinVolume(Partition(MIB, 132 * MIB), 128 * MIB, 512 * MIB, metadata_size_bytes=4 * MIB)),
     "do not fit data"),
    (lambda: _stack(LoopFile(Partition(MIB, 256 * MIB), 250 * MIB)), "image_size_bytes"),
    (lambda: _stack(RaidArray("raid5", _members(3), tool="md", failed_members=(1,),
                              array_size_bytes=2 * 127 * MIB), 3), "failed_members"),
])
def test_stacks_whose_sizes_do_not_fit_are_refused_before_any_step(stack, field):
    with pytest.raises(ValueError, match=field):
        L.build_plan(stack(), backing="/x")


def test_md_and_lvm_layers_name_what_the_kernel_lacks():
    stack = _stack(RaidArray("raid1", _members(2), tool="md", array_size_bytes=127 * MIB), 2)
    if L.md_available():
        pytest.skip("this kernel has md")
    with pytest.raises(L.LayoutUnavailable, match="needs md.*--vm"):
        L.require_kernel(stack)
    L.require_kernel(_stack(nested_loop_files(Partition(MIB, 256 * MIB), 2)))   # loop files need neither


# ---------------------------------------------------------------- parsers and bodies

_FIO_REPORT = {"fio version": "fio-3.33", "jobs": [{"jobname": "seqwrite_1m", "error": 0,
               "read": {"io_bytes": 0, "runtime": 0, "iops": 0.0, "clat_ns": {"mean": 0.0}},
               "write": {"io_bytes": 4194304, "runtime": 13, "iops": 307.692308,
                         "clat_ns": {"mean": 2700587.25}}}]}


def test_fio_report_is_read_as_bytes_over_fios_runtime():
    job = FioJob("write", MIB, 4 * MIB)
    result = parse_fio_json("note: both iodepth >= 1 and synchronous I/O engine\n" + json.dumps(_FIO_REPORT), job)
    assert result.bytes_moved == 4194304 and result.runtime_s == pytest.approx(0.013)
    assert result.rate_bytes_per_s == pytest.approx(4194304 / 0.013)
    assert result.mean_latency_s == pytest.approx(2.70058725e-3)
    with pytest.raises(ValueError, match="moved 0 bytes"):
        parse_fio_json(json.dumps(_FIO_REPORT), FioJob("read", MIB, 4 * MIB))
    argv = fio_argv(job, "/dev/loop9")
    assert "--end_fsync=1" in argv and "--direct=1" in argv and "--filename=/dev/loop9" in argv


def test_copy_shell_runs_and_its_lines_average_per_size(tmp_path):
    copy = FileCopy(file_sizes_bytes=(MIB, 2 * MIB), repeats=2)
    # drop_caches needs root; the text is checked, and a copy of it without the drop runs here
    text = copy_shell(f"'{tmp_path}'", copy).replace("echo 3 > /proc/sys/vm/drop_caches", ":")
    out = subprocess.run(["/bin/sh", "-c", text], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = parse_copy_output(out.stdout)
    assert result.sizes_bytes == (MIB, 2 * MIB) and result.repeats == 2
    assert all(t > 0 for t in result.write_s + result.read_s)
    assert result.write_bytes_per_s == pytest.approx(3 * MIB / sum(result.write_s))
    assert not list(tmp_path.iterdir())            # every copy removed


def test_jobs_and_the_copy_are_not_mixed_and_slow_disks_must_be_the_stacks():
    stack = _stack(Partition(MIB, 64 * MIB))
    with pytest.raises(ValueError, match="measure them separately"):
        measure_stack(stack, [FioJob("read", MIB, MIB), FileCopy()], scratch="/nonexistent/x")
    with pytest.raises(ValueError, match="'sdz' is not a disk of the stack"):
        measure_stack(stack, [FioJob("read", MIB, MIB)], scratch="/nonexistent/x",
                      slow_disks={"sdz": {"read_bytes_per_s": MIB}})
    plan = L.build_plan(stack, backing="/x", file_system=False)
    body = workload_body(plan, [FioJob("randwrite", 4096, MIB, fresh=True)], clock="date +%s.%N",
                         fio_target=plan.device)
    assert '--filename="$DISKMODEL_DEV0"' in body and "drop_caches" in body
    assert 'd="${DISKMODEL_DEV0##*/}"' in body and "/sys/block/$d/queue/read_ahead_kb" in body


@pytest.mark.parametrize("bad", [0, -0.005, 0.0005, 0.0055, float("nan"), float("inf"), "0.005", True, None])
def test_a_members_delay_is_a_positive_whole_number_of_milliseconds(bad):
    stack = _stack(Partition(MIB, 64 * MIB))
    with pytest.raises(ValueError, match=r"^slow_disks\['sda'\]: delay_s must be a finite number > 0 of whole "
                                         r"milliseconds .*\(got " + re.escape(repr(bad)) + r"\)$"):
        measure_stack(stack, [FioJob("randwrite", 4096, MIB)], vm=True, slow_disks={"sda": {"delay_s": bad}})


def test_a_members_delay_is_built_in_the_vm_only_and_may_come_alone_or_with_a_rate():
    stack = _stack(Partition(MIB, 64 * MIB))
    with pytest.raises(ValueError, match=r"delay_s is a dm-delay target, built in the VM only"):
        measure_stack(stack, [FioJob("randwrite", 4096, MIB)], scratch="/nonexistent/x",
                      slow_disks={"sda": {"delay_s": 0.005}})
    with pytest.raises(ValueError, match=r"limits are read_bytes_per_s, .*, delay_s \(got \['delay_ms'\]\)"):
        measure_stack(stack, [FioJob("randwrite", 4096, MIB)], vm=True, slow_disks={"sda": {"delay_ms": 5}})
    with pytest.raises(ValueError, match="write_bytes_per_s must be a positive int"):
        measure_stack(stack, [FioJob("randwrite", 4096, MIB)], vm=True,
                      slow_disks={"sda": {"delay_s": 0.005, "write_bytes_per_s": 0}})
    # a delay alone makes no throttle (no cgroup in the guest), a rate with it does
    from diskmodel.calibrate.bench.layers_bench import _guest_throttle

    plan = L.build_plan(stack, backing="/dev/vda", file_system=False)
    assert _guest_throttle(plan, {"sda": {"delay_s": 0.005}}) == ""
    assert 'echo "$mm" wbps=1048576 > $cg/io.max' in _guest_throttle(plan, {"sda": {"delay_s": 0.005,
                                                                                "write_bytes_per_s": MIB}})


def test_md_is_built_on_the_delayed_members_and_the_delay_is_undone_between_md_and_the_loop_device():
    from diskmodel.calibrate.bench.layers_bench import with_member_delays

    array = RaidArray("raid5", _members(3), tool="md", chunk_size_bytes=64 * KIB, array_size_bytes=2 * 127 * MIB)
    plan = with_member_delays(L.build_plan(_stack(array, 3), backing="/dev/vda", file_system=False),
                              {"sdb": {"delay_s": 0.008}, "sdc": {"delay_s": 0.012, "read_iops": 50}})
    text = _commands(plan)
    # sda stays a bare loop device; sdb and sdc get their delays, in ms, over their own loop devices
    assert 'diskmodel_capture DISKMODEL_SECTORS1 blockdev --getsz "$DISKMODEL_DEV1"' in text
    assert ("dmsetup create diskmodel-delay1 --noudevsync --table '0 '\"$DISKMODEL_SECTORS1\"' delay '"
            "\"$DISKMODEL_DEV1\"' 0 8'") in text
    assert "' delay '\"$DISKMODEL_DEV2\"' 0 12'" in text and "diskmodel-delay0" not in text
    assert '--assume-clean "$DISKMODEL_DEV0" "$DISKMODEL_DELAY1" "$DISKMODEL_DELAY2"' in text
    # the throttle and the counters stay on the loop devices (the regions)
    assert [r.variable for r in plan.regions] == ["DISKMODEL_DEV0", "DISKMODEL_DEV1", "DISKMODEL_DEV2"]
    script = plan.render_script("true")
    # the undo list runs in reverse: md stopped, then its members' delays removed, then the loop devices
    undo = [line for line in script.splitlines() if line.startswith("DISKMODEL_UNDO='echo")]
    order = [next(w for w in ("mdadm --stop", "dmsetup remove diskmodel-delay1", "dmsetup remove diskmodel-delay2",
                              'losetup -d "$DISKMODEL_DEV1"', 'losetup -d "$DISKMODEL_DEV2"',
                              'losetup -d "$DISKMODEL_DEV0"') if w in line) for line in undo][::-1]
    assert order == ["mdadm --stop", "dmsetup remove diskmodel-delay2", 'losetup -d "$DISKMODEL_DEV2"',
                     "dmsetup remove diskmodel-delay1", 'losetup -d "$DISKMODEL_DEV1"', 'losetup -d "$DISKMODEL_DEV0"']
    # a bare member: the plan's device (fio's target) is the delayed one
    bare = with_member_delays(L.build_plan(_stack(Partition(MIB, 64 * MIB)), backing="/dev/vda", file_system=False),
                              {"sda": {"delay_s": 0.005}})
    assert bare.device_expr == '"$DISKMODEL_DELAY0"'


def test_device_lines_give_the_queues_and_each_disks_sectors():
    from diskmodel.calibrate.bench.layers_bench import _sectors, parse_devices

    stat = "{r} 0 {rs} 9 {w} 0 {ws} 9 0 9 9 0 0 0 0 0 0"
    text = "\n".join([
        "DISKMODEL_DEV before0 DISKMODEL_DEV0 2560 128 " + stat.format(r=5, rs=40, w=1, ws=8),
        "DISKMODEL_DEV before0 DISKMODEL_DEV1 128 128 " + stat.format(r=0, rs=0, w=0, ws=0),
        "noise DISKMODEL_DEV after0 x",
        "DISKMODEL_DEV after0 DISKMODEL_DEV0 2560 128 " + stat.format(r=7, rs=2088, w=1, ws=8),
        "DISKMODEL_DEV after0 DISKMODEL_DEV1 128 128 " + stat.format(r=1, rs=8, w=3, ws=24)])
    devices = parse_devices(text)
    assert devices["before0"]["DISKMODEL_DEV0"]["read_ahead_kb"] == 2560
    assert devices["after0"]["DISKMODEL_DEV1"]["nr_requests"] == 128
    regions = (L.Region(0, MIB, "sda", "DISKMODEL_DEV0"), L.Region(MIB, MIB, "sdb", "DISKMODEL_DEV1"))
    assert _sectors(devices, 0, regions) == {"sda": {"read": 2048, "written": 0}, "sdb": {"read": 8, "written": 24}}


# ---------------------------------------------------------------- integration: the host

def _nothing_left(run_dir: Path, tmp: Path) -> None:
    loops = subprocess.run(["losetup", "-l", "-n", "-O", "BACK-FILE"], capture_output=True, text=True).stdout
    assert str(tmp) not in loops
    assert not [m for m in Path("/proc/mounts").read_text().splitlines() if "diskmodel-run-" in m and
                f"-{os.getpid()}-" in m]
    assert not list(Path("/sys/fs/cgroup/blkio").glob(f"diskmodel-blkio-{os.getpid()}-*"))
    assert list(run_dir.glob("*.json")) == []


@pytest.mark.integration
@pytest.mark.slow
def test_btrfs_mirror_with_a_throttled_member_writes_at_the_slow_rate_and_leaves_nothing(tmp_path, monkeypatch):
    require_root()
    require_tools("losetup", "mkfs.btrfs", "fio")
    from diskmodel.calibrate.bench.blkio import blkio_available
    from diskmodel.calibrate.harness import runstate

    ok, why = blkio_available()
    if not ok:
        skip_or_fail(why)
    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    stack = _stack(RaidArray("raid1", _members(2, 160 * MIB), tool="btrfs"), 2, kind="btrfs")
    rate = 8 * MIB
    (write, read) = measure_stack(stack, [FioJob("write", MIB, 16 * MIB), FioJob("read", MIB, 16 * MIB)],
                                  scratch=tmp_path / "s.img", slow_disks={"sdb": {"write_bytes_per_s": rate}})
    # a mirror write ends when the throttled member's does: at most its rate (and not far below)
    assert 0.5 * rate < write.rates["throughput_bytes_per_s"] < 1.2 * rate
    assert read.rates["throughput_bytes_per_s"] > 2 * rate          # reads are not throttled
    _nothing_left(tmp_path / "run", tmp_path)
    assert not (tmp_path / "s.img").exists()


@pytest.mark.integration
@pytest.mark.slow
def test_copy_on_ext3_in_two_nested_sparse_loop_files_and_nothing_left(tmp_path, monkeypatch):
    require_root()
    require_tools("losetup", "mkfs.ext4", "mkfs.ext3")
    from diskmodel.calibrate.harness import runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    node = nested_loop_files(Partition(MIB, 256 * MIB), 2)
    (m,) = measure_stack(_stack(node), [FileCopy(file_sizes_bytes=(MIB, 4 * MIB), repeats=1)],
                         scratch=tmp_path / "s.img")
    assert m.rates["write_bytes_per_s"] > 0 and m.rates["read_bytes_per_s"] > 0
    assert m.details["sizes_bytes"] == [MIB, 4 * MIB]
    _nothing_left(tmp_path / "run", tmp_path)


# ---------------------------------------------------------------- integration: the VM (one boot)

@pytest.mark.integration
@pytest.mark.slow
def test_a_thin_volume_on_an_md_mirror_in_the_vm_first_write_then_overwrite(tmp_path, monkeypatch):
    require_tools("qemu-system-x86_64", "mdadm", "fio", "thin_check")
    from diskmodel.calibrate.bench.vm import vm_available
    from diskmodel.calibrate.harness import runstate

    ok, why = vm_available()
    if not ok:
        skip_or_fail(f"the throwaway VM cannot run here: {why}")
    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    mirror = RaidArray("raid1", _members(2, 64 * MIB), tool="md", array_size_bytes=63 * MIB)
    thin = ThinVolume(mirror, 56 * MIB, 128 * MIB, metadata_size_bytes=4 * MIB)
    first = FioJob("randwrite", 4 * KIB, MIB, fresh=True)
    fresh, again = measure_stack(_stack(thin, 2), [first, first.evolve(fresh=False)], vm=True)
    assert fresh.where == "vm" and fresh.emulated
    for m in (fresh, again):
        assert m.details["bytes_moved"] == MIB
    assert list((tmp_path / "run").glob("*.json")) == []


@pytest.mark.integration
@pytest.mark.slow
def test_md_raid5_with_every_member_throttled_in_the_vm_writes_at_the_members_pace(tmp_path, monkeypatch):
    # RAID 5's member I/O is submitted by md's raid5d thread: unless the throttle's cgroup holds it too,
    # io.max never sees it and the array writes at the emulator's pace (over 100 MB/s here)
    require_tools("qemu-system-x86_64", "mdadm", "fio")
    from diskmodel.calibrate.bench.vm import vm_available
    from diskmodel.calibrate.harness import runstate

    ok, why = vm_available()
    if not ok:
        skip_or_fail(f"the throwaway VM cannot run here: {why}")
    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    array = RaidArray("raid5", _members(3), tool="md", chunk_size_bytes=64 * KIB, array_size_bytes=2 * 127 * MIB)
    rate = 2 * MIB
    limits = {"read_bytes_per_s": rate, "write_bytes_per_s": rate}
    (write,) = measure_stack(_stack(array, 3), [FioJob("write", MIB, 4 * MIB)], vm=True,
                             slow_disks={d.name: limits for d in DISKS[:3]})
    # full-stripe writes: each of the 3 members writes half of the data's bytes (data or parity)
    assert 1.4 * rate < write.rates["throughput_bytes_per_s"] < 2.2 * rate
    assert list((tmp_path / "run").glob("*.json")) == []


@pytest.mark.integration
@pytest.mark.slow
def test_md_mirror_on_delayed_members_in_the_vm_waits_the_delay_per_write_and_leaves_nothing(tmp_path, monkeypatch):
    # dm-delay under each member (slow_disks' delay_s): every 4 KiB write of fio's queue-depth-1 job waits
    # at least the delay; after the script's teardown the guest has no dm device, loop device or md array
    require_tools("qemu-system-x86_64", "mdadm", "fio")
    from diskmodel.calibrate.bench.layers_bench import _parse, _vm_script
    from diskmodel.calibrate.bench.vm import run_script_in_vm, vm_available
    from diskmodel.calibrate.harness import runstate

    ok, why = vm_available()
    if not ok:
        skip_or_fail(f"the throwaway VM cannot run here: {why}")
    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    stack = _stack(RaidArray("raid1", _members(2, 64 * MIB), tool="md", array_size_bytes=63 * MIB), 2)
    delay_s = 0.008
    job = FioJob("randwrite", 4 * KIB, 256 * KIB)
    plan, script = _vm_script(stack, [job], {d.name: {"delay_s": delay_s} for d in DISKS[:2]}, False)
    assert '--raid-devices=2 --size=64512K --data-offset=1024K --bitmap=none --assume-clean ' \
           '"$DISKMODEL_DELAY0" "$DISKMODEL_DELAY1"' in script
    outer = (f"cat > /tmp/stack.sh <<'DISKMODEL_EOF'\n{script}DISKMODEL_EOF\n"
             "rc=0; sh /tmp/stack.sh || rc=$?; echo \"stack status $rc\"\n"
             "echo \"left dm: $(dmsetup ls 2>&1)\"; echo \"left loop: $(losetup -a)\"; "
             "echo \"left md: $(grep ^md /proc/mdstat)\"\n"
             "echo \"targets: $(dmsetup targets | cut -d' ' -f1 | tr '\\n' ' ')\"\n")
    result = run_script_in_vm(outer, scratch_disk_bytes=L.backing_bytes_required(stack))
    assert result.returncode == 0 and "stack status 0" in result.output, result.output[-3000:]
    (m,) = _parse(result.output, [job], "vm", result.accelerator, plan)
    # fio's mean completion latency of a 4 KiB write: the delay (both members' writes wait it at once) and more
    assert m.details["mean_latency_s"] >= delay_s, m.details
    assert m.details["bytes_moved"] == 256 * KIB
    lines = result.output.replace("\r", "").splitlines()
    assert "left dm: No devices found" in lines and "left loop: " in lines and "left md: " in lines
    assert " delay " in next(x for x in lines if x.startswith("targets: "))
    assert list((tmp_path / "run").glob("*.json")) == []


# ---------------------------------------------------------------- the command line refuses before building

@pytest.mark.parametrize("extra, message", [
    (["--workload", "seqwrite_1m", "--vm"], "--vm: a btrfs array is built on the host"),
    (["--workload", "seqwrite_1m", "--scratch", "/nonexistent/s.img", "--slow", "sdz=4M"], "--slow: 'sdz'"),
    (["--workload", "seqwrite_1m", "--size", "1G", "--scratch", "/nonexistent/s.img"], "--size: the job moves"),
    (["--workload", "copy", "--fresh", "--vm"], "--fresh does not apply to --workload copy: it applies to a fio job"),
])
def test_bench_command_refuses_in_one_line_naming_the_flag(tmp_path, capsys, extra, message):
    from diskmodel.calibrate.cli import main

    stack = tmp_path / "btrfs.json"
    stack.write_text(_stack(RaidArray("raid1", _members(2, 256 * MIB), tool="btrfs"), 2, kind="btrfs").to_json())
    if os.geteuid() != 0 and "--scratch" in extra:
        pytest.skip("the host path needs root before it checks --slow")
    assert main(["bench", "--stack", str(stack), *extra]) == 2
    assert_one_error_line(capsys.readouterr().err, message)
