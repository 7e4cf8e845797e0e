"""Stacks as plans of undoable steps: sizes, rendering, host executor, VM script.

Unit tests run the real executor and the real rendered script (``/bin/sh``)
on plans of harmless steps (files in tmp_path); integration tests build the
native stack on a loop device. (That a plan from the paper's stacks equals
the plans of before the stack descriptions is tests/test_stack.py.)
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench import host_executor as X
from diskmodel.calibrate.bench.steps import words_of
from diskmodel.model.stacks.stack import FIRST_PARTITION_START_BYTES, PAPER_STACKS, FileSystemNode, Stack, paper_stack
from diskmodel.model.stacks.volumes import (DEFAULT_EXTENT_SIZE_BYTES as EXTENT, DEFAULT_PE_START_BYTES as PE_START,
                                            LinearVolume, Partition, Segment, StripedVolume)
from conftest import require_root, require_tools
from diskmodel.model.units import MIB as MiB


def _plan(name, fs_size_bytes, backing="/dev/vda", **options):
    """The plan of the paper's stack *name* with a file system of *fs_size_bytes* (options: kind, mount_options, ...)."""
    build = {k: options.pop(k) for k in ("mount_parent", "mount_dir", "direct_io", "name_token", "queue_defaults")
             if k in options}
    return L.build_plan(paper_stack(name, fs_size_bytes=fs_size_bytes, **options), backing=backing, **build)


# ---------------------------------------------------------------- sizes

@given(st.integers(min_value=1, max_value=4096))
@settings(max_examples=60, deadline=None)
def test_every_layout_holds_exactly_the_same_file_system(units):
    fs = units * 2 * EXTENT
    extents = fs // EXTENT
    for layout in PAPER_STACKS:
        stack = paper_stack(layout, fs_size_bytes=fs)
        regions = _plan(layout, fs).regions
        # one region per partition, at its bytes; non-overlapping, MiB-aligned, inside the backing,
        # first after the leading MiB
        assert [(r.offset_bytes, r.size_bytes) for r in regions] == [
            (p.start_bytes, p.size_bytes) for _, p in stack.partitions()]
        assert regions[0].offset_bytes == FIRST_PARTITION_START_BYTES
        for a, b in zip(regions, regions[1:]):
            assert a.offset_bytes + a.size_bytes <= b.offset_bytes
        assert all(r.offset_bytes % MiB == 0 for r in regions)
        assert regions[-1].offset_bytes + regions[-1].size_bytes <= L.backing_bytes_required(stack)
        assert stack.volume.size_bytes == fs
        if layout == "native":
            assert [r.size_bytes for r in regions] == [fs]
        else:
            n = 1 if layout == "lvm1" else 2
            assert len(regions) == n
            for r in regions:
                # pe_count LVM computes = floor((size - pe_start) / extent): exactly extents / n
                assert (r.size_bytes - PE_START) // EXTENT == extents // n


def test_sizes_for_the_paper_twenty_gigabytes():
    fs = 20 << 30
    assert _plan("native", fs).regions[0].size_bytes == fs
    lvm1 = _plan("lvm1", fs).regions
    lvm2 = _plan("lvm2", fs).regions
    assert lvm1[0].size_bytes == fs + 3 * MiB
    assert [r.size_bytes for r in lvm2] == [10 * (1 << 30) + 3 * MiB] * 2
    assert L.backing_bytes_required(paper_stack("lvm2", fs_size_bytes=fs)) == MiB + 2 * (10 * (1 << 30) + 3 * MiB)


@pytest.mark.parametrize("bad", [0, -8 * MiB, 7 * MiB, 12 * MiB, 1.5e9, True])
def test_bad_sizes_are_refused_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="fs_size_bytes"):
        paper_stack("native", fs_size_bytes=bad)


def test_bad_layout_and_fs_are_refused():
    with pytest.raises(ValueError, match="name must be one of 'native', 'lvm1', 'lvm2'"):
        paper_stack("lvm3", fs_size_bytes=64 * MiB)
    with pytest.raises(ValueError, match="kind must be one of"):
        paper_stack("native", fs_size_bytes=64 * MiB, kind="ntfs")
    with pytest.raises(ValueError, match="mount_options must be single options"):
        paper_stack("native", fs_size_bytes=64 * MiB, mount_options=["a,b"])


# ---------------------------------------------------------------- plans

def _argvs(plan) -> list[tuple]:
    """Each step's words, a reference read back as ``$NAME`` (as the guest's shell reads its rendering)."""
    return [tuple(words_of(w) for w in s.words()) for s in plan.steps]


def test_lvm2_plan_builds_two_pvs_one_vg_one_lv_of_exact_extents():
    plan = _plan("lvm2", 64 * MiB, name_token="abc123")
    cmds = _argvs(plan)
    assert sum(c[:4] == ("losetup", "--find", "--show", "--direct-io=on") for c in cmds) == 2
    assert cmds[0][4:] == ("--offset", "1048576", "--sizelimit", "36700160", "/dev/vda")
    assert cmds[1][4:] == ("--offset", "37748736", "--sizelimit", "36700160", "/dev/vda")
    assert sum(c[0] == "pvcreate" for c in cmds) == 2
    assert ("vgcreate", "-s", "4096k", "diskmodel_abc123", "$DISKMODEL_DEV0", "$DISKMODEL_DEV1") in cmds
    assert ("lvcreate", "-y", "-W", "n", "-l", "16", "-n", "LogVol02", "diskmodel_abc123") in cmds
    assert ("mkfs.ext3", "-F", "-q", "/dev/diskmodel_abc123/LogVol02") in cmds
    assert plan.device == plan.device_expr == "/dev/diskmodel_abc123/LogVol02"
    # every step that creates something has a typed undo, derived from its record
    undos = {s.description.split()[0]: s.undo for s in plan.steps}
    assert undos["physical"][0] == "pvremove" and undos["volume"][0] == "vgremove"
    assert undos["logical"] == ("lvremove", "-f", "diskmodel_abc123/LogVol02")
    assert plan.steps[-1].undo == ("umount", L.Ref("DISKMODEL_MNT"))


def test_xfs_and_options_reach_the_commands():
    plan = _plan("native", 512 * MiB, backing="/tmp/x img", kind="xfs", mount_options=["noatime", "inode64"],
                 mkfs_options=["-b", "size=4096"])
    cmds = _argvs(plan)
    assert cmds[0][-1] == "/tmp/x img"  # one word, whatever it holds
    assert any(c[:6] == ("mkfs.xfs", "-f", "-q", "-b", "size=4096", "$DISKMODEL_DEV0") for c in cmds)
    # the scratch mount: the user's options, then nosuid,nodev
    assert any(c[:5] == ("mount", "-t", "xfs", "-o", "noatime,inode64,nosuid,nodev") for c in cmds)


def _stack_of(volume, disks=None) -> Stack:
    return Stack(FileSystemNode(volume), disks or Stack(FileSystemNode(Partition(MiB, MiB))).disks)


def test_a_striped_stack_becomes_lvcreate_with_its_stripes_and_every_step_is_recorded():
    pvs = tuple(Partition(MiB + i * 40 * MiB, 40 * MiB, f"/dev/sdb{i + 1}") for i in range(3))
    plan = L.build_plan(_stack_of(StripedVolume(pvs, stripe_size_bytes=128 * 1024, name="fast")),
                        backing="/dev/vdb", name_token="t0")
    cmds = _argvs(plan)
    # 3 PVs of (40 MiB - 1 MiB) // 4 MiB = 9 extents each
    assert ("lvcreate", "-y", "-W", "n", "-i", "3", "-I", "128k", "-l", "27", "-n", "fast", "diskmodel_t0") in cmds
    assert [(r.offset_bytes, r.size_bytes) for r in plan.regions] == [(p.start_bytes, p.size_bytes) for p in pvs]
    assert sum(s.argv[:4] == ("pvs", "--noheadings", "-o", "pv_pe_alloc_count") and s.expect == "9"
               for s in plan.steps) == 3
    assert plan.fs_size_bytes == 27 * EXTENT and plan.name == "ext3 on lvm_striped"
    # every step that creates something names it for the run's record, before it runs
    kinds = [s.resource[0] for s in plan.steps if s.resource is not None]
    assert kinds == ["loop", "loop", "loop", "pv", "pv", "pv", "vg", "lv", "dir", "mount"]  # mktemp's folder too


@pytest.mark.parametrize("volume, field", [
    (Partition(0, 64 * MiB), r"file_system.volume \(partition\): start_bytes must be >= 1048576"),
    (Partition(MiB + 100, 64 * MiB), r"file_system.volume \(partition\): start_bytes must be a multiple of 512"),
    (LinearVolume((Partition(MiB, 64 * MiB),), segments=(Segment(0, 5, 0, 3),)),
     r"file_system.volume \(lvm_linear\): segments: a plan builds an LV that uses every extent"),
    (LinearVolume((Partition(MiB, 64 * MiB),), name="a b"), r"file_system.volume \(lvm_linear\): name 'a b'"),
    (LinearVolume((Partition(MiB, 64 * MiB),), pe_start_bytes=1000),
     r"file_system.volume \(lvm_linear\): pe_start_bytes must be a multiple of 1024"),
])
def test_stacks_a_plan_cannot_build_are_refused_naming_the_node_and_field(volume, field):
    with pytest.raises(ValueError, match=field):
        L.build_plan(_stack_of(volume), backing="/dev/vdb")


def test_a_stack_over_two_disks_lays_the_disks_one_after_the_other_in_the_scratch():
    from diskmodel.model.drive.drives import PresetDrive

    volume = LinearVolume((Partition(MiB, 64 * MiB), Partition(MiB, 64 * MiB, disk="sdb")))
    stack = _stack_of(volume, (PresetDrive("wd800bd"), PresetDrive("wd800bd", "sdb")))
    plan = L.build_plan(stack, backing="/dev/vdb")
    # sda spans 65 MiB of the scratch, sdb starts after it: its partition at 65 + 1 MiB
    assert [(r.offset_bytes, r.size_bytes) for r in plan.regions] == [(MiB, 64 * MiB), (66 * MiB, 64 * MiB)]
    assert L.backing_bytes_required(stack) == 130 * MiB


def _toy_plan(tmp: Path, fail_at: int | None = None, sleep_at: int | None = None) -> L.StackPlan:
    """A plan whose steps make folders in tmp (typed records: their undo removes them); step 1 captures
    the path it prints, step 3 creates nothing, *fail_at* fails and *sleep_at* sleeps."""
    steps = [L.Step("toy step 1", ("mktemp", "-d", f"{tmp}/made1.XXXXXX"), capture="V1",
                    resource=("dir", (("path", L.Ref("V1")),)))]
    for i in range(2, 5):
        argv = ("mkdir", f"{tmp}/made{i}") if i != 3 else ("test", "-d", L.Ref("V1"))
        if i == fail_at:
            argv = ("sh", "-c", "exit 7")
        if i == sleep_at:
            argv = ("sleep", "30")
        steps.append(L.Step(f"toy step {i}", argv,
                            resource=("dir", (("path", f"{tmp}/made{i}"),)) if i != 3 else None))
    return L.StackPlan(name="native", fs_type="ext3", fs_size_bytes=8 * MiB, backing="/dev/null",
                       regions=(), steps=tuple(steps), device=L.Ref("V1"), mount_var="V1")


def _made(tmp: Path) -> list[str]:
    return sorted(p.name.split(".")[0] for p in tmp.glob("made*"))


def test_host_executor_builds_and_tears_down_in_reverse_once(tmp_path):
    plan = _toy_plan(tmp_path)
    ex = X.HostExecutor(plan)
    with ex:
        assert ex.variables["V1"].startswith(f"{tmp_path}/made1.")
        assert ex.device == ex.variables["V1"]
        assert _made(tmp_path) == ["made1", "made2", "made4"]
        kinds = [(r.kind, r.details["path"]) for r in ex._resources]
        assert kinds == [("dir", ex.variables["V1"]), ("dir", f"{tmp_path}/made2"), ("dir", f"{tmp_path}/made4")]
        # each argv ran as itself: no shell between
        assert [h[1][0] for h in ex.history] == ["mktemp", "mkdir", "test", "mkdir"]
    assert _made(tmp_path) == []
    assert ex.teardown().left == []  # idempotent: nothing more to undo
    assert ex.report.removed == [] or _made(tmp_path) == []


def test_host_executor_rolls_back_completed_steps_on_failure(tmp_path):
    plan = _toy_plan(tmp_path, fail_at=4)
    with pytest.raises(X.LayoutError, match=r"step 4 \(toy step 4\) failed with status 7"):
        X.HostExecutor(plan).build()
    assert _made(tmp_path) == []


def test_a_check_step_compares_the_output_with_the_expected_value(tmp_path):
    steps = (L.Step("echo", ("echo", "  8 "), expect="8"), L.Step("echo", ("echo", "9"), expect="8"))
    plan = L.StackPlan(name="native", fs_type="ext3", fs_size_bytes=8 * MiB, backing="/dev/null",
                       regions=(), steps=steps, device="/dev/null", mount_var="V1")
    with pytest.raises(X.LayoutError, match=r"step 2 \(echo\) printed '9', not '8'"):
        X.HostExecutor(plan).build()


@pytest.mark.serial  # asserts a wall time
def test_signal_during_a_step_kills_it_and_tears_down(tmp_path):
    plan = _toy_plan(tmp_path, sleep_at=4)
    ex = X.HostExecutor(plan)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(X.Interrupted, match="SIGTERM"):
            with X.handle_signals():
                try:
                    ex.build()
                finally:
                    ex.teardown()
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 10  # the 30-s sleep was killed
    assert _made(tmp_path) == []
    out = subprocess.run(["pgrep", "-f", "sleep 30"], capture_output=True, text=True).stdout.split()
    assert out == [] or all(int(p) != os.getpid() for p in out)
    assert signal.getsignal(signal.SIGTERM) is not None


# ---------------------------------------------------------------- the same plan as one script

def _run_script(plan: L.StackPlan, body: str, tmp: Path, *, kill_after: float | None = None):
    script = tmp / "plan.sh"
    script.write_text(plan.render_script(body))
    # the script starts with SIGINT at its default, as from a user's shell: a test worker whose SIGINT an
    # earlier test left ignored would hand that on, and sh cannot trap a signal ignored at its start
    proc = subprocess.Popen(["/bin/sh", "-e", str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if kill_after is not None:
        time.sleep(kill_after)
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def _undone(err: str) -> list[int]:
    return [int(m) for m in re.findall(r"^diskmodel: undo (\d+):", err, re.M)]


def test_rendered_script_builds_runs_body_and_undoes_in_reverse(tmp_path):
    plan = _toy_plan(tmp_path)
    rc, out, err = _run_script(plan, f'[ -d "$V1" ] && echo body "$V1" >> {tmp_path}/log; exit 0', tmp_path)
    assert rc == 0, err
    assert (tmp_path / "log").read_text().startswith(f"body {tmp_path}/made1.")
    assert _undone(err) == [4, 2, 1]
    assert _made(tmp_path) == []


def test_rendered_script_rolls_back_on_a_failing_step_and_keeps_its_status(tmp_path):
    plan = _toy_plan(tmp_path, fail_at=4)
    rc, out, err = _run_script(plan, f"echo body >> {tmp_path}/log", tmp_path)
    assert rc == 7
    assert _undone(err) == [2, 1] and not (tmp_path / "log").exists()
    assert _made(tmp_path) == []


@pytest.mark.serial  # asserts a wall time
def test_rendered_script_tears_down_on_sigint(tmp_path):
    plan = _toy_plan(tmp_path)
    t0 = time.monotonic()
    rc, out, err = _run_script(plan, f"echo body >> {tmp_path}/log; sleep 30 >/dev/null 2>&1 & wait $!",
                               tmp_path, kill_after=1.0)
    assert time.monotonic() - t0 < 10
    assert rc == 130
    assert (tmp_path / "log").read_text() == "body\n"
    assert _undone(err) == [4, 2, 1]
    assert _made(tmp_path) == []


def test_rendered_script_of_a_real_layout_is_valid_sh():
    plan = _plan("lvm2", 64 * MiB)
    res = subprocess.run(["/bin/sh", "-n"], input=plan.render_script("echo hi"), text=True,
                         capture_output=True)
    assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------- device-mapper detection

def test_lvm_on_a_kernel_without_device_mapper_says_pass_vm():
    if L.device_mapper_available():
        pytest.skip("this kernel has device-mapper")
    with pytest.raises(L.LayoutUnavailable, match="--vm"):
        L.require_device_mapper(paper_stack("lvm1", fs_size_bytes=64 * MiB))
    L.require_device_mapper(paper_stack("native", fs_size_bytes=64 * MiB))  # needs none


# ---------------------------------------------------------------- integration: native on a loop device

@pytest.mark.integration
@pytest.mark.slow
def test_native_layout_on_a_loop_device_is_built_and_left_without_trace(tmp_path):
    require_root()
    require_tools("losetup", "mkfs.ext3", "mount", "umount", "blockdev")
    fs = 64 * MiB
    backing = tmp_path / "scratch.img"
    from diskmodel.calibrate.harness.scratch import prepare_scratch
    with prepare_scratch(backing, L.backing_bytes_required(paper_stack("native", fs_size_bytes=fs))) as scratch:
        plan = _plan("native", fs, backing=scratch.path, queue_defaults=True)
        ex = X.HostExecutor(plan)
        with ex:
            mnt = ex.mountpoint
            dev = ex.device
            assert re.fullmatch(r"/dev/loop\d+", dev)
            line = [ln for ln in Path("/proc/mounts").read_text().splitlines() if f" {mnt} " in ln]
            assert line and line[0].split()[2] in ("ext3", "ext4")  # ext3 is served by the ext4 driver
            assert {"nosuid", "nodev"} <= set(line[0].split()[3].split(","))   # a scratch mount: no suid, no devices
            assert int(subprocess.check_output(["blockdev", "--getsize64", dev])) == fs
            (Path(mnt) / "probe").write_bytes(b"x" * 4096)
            listing = subprocess.check_output(["losetup", "-l", "-n", "-O", "NAME,OFFSET,SIZELIMIT,DIO", dev],
                                              text=True).split()
            assert listing == [dev, str(FIRST_PARTITION_START_BYTES), str(fs), "1"]
        assert ex.teardown().left == []
        assert f" {mnt} " not in Path("/proc/mounts").read_text()
        assert not Path(mnt).exists()
        assert subprocess.check_output(["losetup", "-j", scratch.path], text=True).strip() == ""
    assert not backing.exists()


@pytest.mark.integration
@pytest.mark.slow
def test_a_failing_real_step_rolls_back_the_loop_device_and_mount_point(tmp_path):
    require_root()
    require_tools("losetup", "mkfs.ext3", "mount")
    fs = 32 * MiB
    from diskmodel.calibrate.harness.scratch import prepare_scratch
    with prepare_scratch(tmp_path / "s.img", L.backing_bytes_required(paper_stack("native", fs_size_bytes=fs))) \
            as scratch:
        # a well-formed option of ext3 the kernel refuses here: a journal device path that does not exist
        plan = _plan("native", fs, backing=scratch.path, mount_options=["journal_path=/nonexistent-diskmodel-journal"],
                     queue_defaults=True)
        ex = X.HostExecutor(plan)
        with pytest.raises(X.LayoutError, match="mount ext3"):
            ex.build()
        # the mount (never made), the mount point and the loop device: each looked for and checked gone
        assert len(ex.report.removed) == 3 and ex.report.left == []
        assert not Path(ex.variables["DISKMODEL_MNT"]).exists()
        assert subprocess.check_output(["losetup", "-j", scratch.path], text=True).strip() == ""
        assert ex.teardown().left == []


def test_xfs_below_its_minimum_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="fs_size_bytes must be >= 318767104 for xfs"):
        _plan("native", 296 * MiB, backing="/x", kind="xfs")
    _plan("native", 304 * MiB, backing="/x", kind="xfs")
