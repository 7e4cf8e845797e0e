"""Layouts as plans of undoable steps: sizes, rendering, host executor, VM script.

Unit tests run the real executor and the real rendered script (``/bin/sh``)
on plans of harmless steps (files in tmp_path); integration tests build the
native layout on a loop device.
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
from conftest import require_root, require_tools

MiB = 1 << 20


# ---------------------------------------------------------------- sizes

@given(st.integers(min_value=1, max_value=4096))
@settings(max_examples=60, deadline=None)
def test_every_layout_holds_exactly_the_same_file_system(units):
    fs = units * 2 * L.EXTENT_BYTES
    extents = fs // L.EXTENT_BYTES
    for layout in L.LAYOUTS:
        regions = L.regions_for(layout, fs)
        # non-overlapping, MiB-aligned, inside the backing, first after the leading MiB
        assert regions[0].offset_bytes == L.FIRST_REGION_OFFSET_BYTES
        for a, b in zip(regions, regions[1:]):
            assert a.offset_bytes + a.size_bytes <= b.offset_bytes
        assert all(r.offset_bytes % MiB == 0 for r in regions)
        assert regions[-1].offset_bytes + regions[-1].size_bytes <= L.backing_bytes_required(layout, fs)
        if layout == "native":
            assert [r.size_bytes for r in regions] == [fs]
        else:
            n = 1 if layout == "lvm1" else 2
            assert len(regions) == n
            for r in regions:
                # pe_count LVM computes = floor((size - pe_start) / extent): exactly extents / n
                assert (r.size_bytes - L.PE_START_BYTES) // L.EXTENT_BYTES == extents // n


def test_sizes_for_the_paper_twenty_gigabytes():
    fs = 20 << 30
    assert L.regions_for("native", fs)[0].size_bytes == fs
    lvm1 = L.regions_for("lvm1", fs)
    lvm2 = L.regions_for("lvm2", fs)
    assert lvm1[0].size_bytes == fs + 3 * MiB
    assert [r.size_bytes for r in lvm2] == [10 * (1 << 30) + 3 * MiB] * 2
    assert L.backing_bytes_required("lvm2", fs) == MiB + 2 * (10 * (1 << 30) + 3 * MiB)


@pytest.mark.parametrize("bad", [0, -8 * MiB, 7 * MiB, 12 * MiB, 1.5e9, True])
def test_bad_sizes_are_refused_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="fs_size_bytes"):
        L.regions_for("native", bad)


def test_bad_layout_and_fs_are_refused():
    with pytest.raises(ValueError, match="layout"):
        L.build_plan("lvm3", backing="/x", fs_size_bytes=64 * MiB)
    with pytest.raises(ValueError, match="fs_type"):
        L.build_plan("native", backing="/x", fs_size_bytes=64 * MiB, fs_type="ntfs")
    with pytest.raises(ValueError, match="mount_options"):
        L.build_plan("native", backing="/x", fs_size_bytes=64 * MiB, mount_options=["a,b"])


# ---------------------------------------------------------------- plans

def test_lvm2_plan_builds_two_pvs_one_vg_one_lv_of_exact_extents():
    plan = L.build_plan("lvm2", backing="/dev/vda", fs_size_bytes=64 * MiB, name_token="abc123")
    cmds = [s.command for s in plan.steps]
    assert sum(c.startswith("losetup --find --show --direct-io=on") for c in cmds) == 2
    assert "--offset 1048576 --sizelimit 36700160 /dev/vda" in cmds[0]
    assert "--offset 37748736 --sizelimit 36700160 /dev/vda" in cmds[1]
    assert sum(c.startswith("pvcreate") for c in cmds) == 2
    assert 'vgcreate -s 4096k diskmodel_abc123 "$DISKMODEL_DEV0" "$DISKMODEL_DEV1"' in cmds
    assert "lvcreate -y -W n -l 16 -n LogVol02 diskmodel_abc123" in cmds
    assert any(c.startswith("mkfs.ext3 -F -q /dev/diskmodel_abc123/LogVol02") for c in cmds)
    assert plan.device_expr == "/dev/diskmodel_abc123/LogVol02"
    # every step that creates something has an undo
    undos = {s.description.split()[0]: s.undo for s in plan.steps}
    assert undos["physical"].startswith("pvremove") and undos["volume"].startswith("vgremove")
    assert undos["logical"] == "lvremove -f diskmodel_abc123/LogVol02"
    assert plan.steps[-1].undo == 'umount "$DISKMODEL_MNT"'


def test_xfs_and_options_reach_the_commands():
    plan = L.build_plan("native", backing="/tmp/x img", fs_size_bytes=512 * MiB, fs_type="xfs",
                        mount_options=["noatime", "nobarrier"], mkfs_options=["-b", "size=4096"])
    cmds = [s.command for s in plan.steps]
    assert "'/tmp/x img'" in cmds[0]  # quoted for the shell
    assert any(c.startswith("mkfs.xfs -f -q -b size=4096 ") for c in cmds)
    assert any(c.startswith("mount -t xfs -o noatime,nobarrier ") for c in cmds)


def _toy_plan(tmp: Path, fail_at: int | None = None, sleep_at: int | None = None) -> L.LayoutPlan:
    """A plan whose steps create files and whose undos remove them, logging to tmp/log."""
    logf = tmp / "log"
    steps = []
    for i in range(1, 5):
        cmd = f"echo do{i} >> {logf}; touch {tmp}/made{i}"
        if i == fail_at:
            cmd = f"echo do{i} >> {logf}; exit 7"
        if i == sleep_at:
            cmd = f"echo do{i} >> {logf}; sleep 30"
        undo = f'echo undo{i} "$V1" >> {logf}; rm {tmp}/made{i}' if i != 3 else None
        steps.append(L.Step(f"toy step {i}", cmd, undo=undo, capture="V1" if i == 1 else None))
    steps[0] = L.Step("toy step 1", f"echo do1 >> {logf}; touch {tmp}/made1; echo captured-1",
                      undo=f'echo undo1 "$V1" >> {logf}; rm {tmp}/made1', capture="V1")
    return L.LayoutPlan(layout="native", fs_type="ext3", fs_size_bytes=8 * MiB, backing="/dev/null",
                        regions=(), steps=tuple(steps), device_expr='"$V1"', mount_var="V1")


def _log(tmp: Path) -> list[str]:
    return (tmp / "log").read_text().split("\n")[:-1]


def test_host_executor_builds_and_tears_down_in_reverse_once(tmp_path):
    plan = _toy_plan(tmp_path)
    ex = L.HostExecutor(plan)
    with ex:
        assert ex.variables["V1"] == "captured-1"
        assert all((tmp_path / f"made{i}").exists() for i in (1, 2, 4))
    assert _log(tmp_path) == ["do1", "do2", "do3", "do4", "undo4 captured-1", "undo2 captured-1",
                              "undo1 captured-1"]
    assert not list(tmp_path.glob("made*")) or list(tmp_path.glob("made*")) == [tmp_path / "made3"]
    assert ex.teardown().left == []  # idempotent: nothing more to undo
    assert len(_log(tmp_path)) == 7


def test_host_executor_rolls_back_completed_steps_on_failure(tmp_path):
    plan = _toy_plan(tmp_path, fail_at=4)
    with pytest.raises(L.LayoutError, match=r"step 4 \(toy step 4\) failed with status 7"):
        L.HostExecutor(plan).build()
    assert _log(tmp_path) == ["do1", "do2", "do3", "do4", "undo2 captured-1", "undo1 captured-1"]


def test_signal_during_a_step_kills_it_and_tears_down(tmp_path):
    plan = _toy_plan(tmp_path, sleep_at=4)
    ex = L.HostExecutor(plan)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(L.Interrupted, match="SIGTERM"):
            with L.handle_signals():
                try:
                    ex.build()
                finally:
                    ex.teardown()
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 10  # the 30-s sleep was killed
    assert _log(tmp_path) == ["do1", "do2", "do3", "do4", "undo2 captured-1", "undo1 captured-1"]
    out = subprocess.run(["pgrep", "-f", "sleep 30"], capture_output=True, text=True).stdout.split()
    assert out == [] or all(int(p) != os.getpid() for p in out)
    assert signal.getsignal(signal.SIGTERM) is not None


# ---------------------------------------------------------------- the same plan as one script

def _run_script(plan: L.LayoutPlan, body: str, tmp: Path, *, kill_after: float | None = None):
    script = tmp / "plan.sh"
    script.write_text(plan.render_script(body))
    proc = subprocess.Popen(["/bin/sh", "-e", str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if kill_after is not None:
        time.sleep(kill_after)
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def test_rendered_script_builds_runs_body_and_undoes_in_reverse(tmp_path):
    plan = _toy_plan(tmp_path)
    rc, out, err = _run_script(plan, f'echo body "$V1" >> {tmp_path}/log; exit 0', tmp_path)
    assert rc == 0, err
    assert _log(tmp_path) == ["do1", "do2", "do3", "do4", "body captured-1", "undo4 captured-1",
                              "undo2 captured-1", "undo1 captured-1"]


def test_rendered_script_rolls_back_on_a_failing_step_and_keeps_its_status(tmp_path):
    plan = _toy_plan(tmp_path, fail_at=4)
    rc, out, err = _run_script(plan, f"echo body >> {tmp_path}/log", tmp_path)
    assert rc == 7
    assert _log(tmp_path) == ["do1", "do2", "do3", "do4", "undo2 captured-1", "undo1 captured-1"]


def test_rendered_script_tears_down_on_sigint(tmp_path):
    plan = _toy_plan(tmp_path)
    t0 = time.monotonic()
    rc, out, err = _run_script(plan, f"echo body >> {tmp_path}/log; sleep 30 >/dev/null 2>&1 & wait $!",
                               tmp_path, kill_after=1.0)
    assert time.monotonic() - t0 < 10
    assert rc == 130
    assert _log(tmp_path) == ["do1", "do2", "do3", "do4", "body", "undo4 captured-1",
                              "undo2 captured-1", "undo1 captured-1"]


def test_rendered_script_of_a_real_layout_is_valid_sh():
    plan = L.build_plan("lvm2", backing="/dev/vda", fs_size_bytes=64 * MiB)
    res = subprocess.run(["/bin/sh", "-n"], input=plan.render_script("echo hi"), text=True,
                         capture_output=True)
    assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------- device-mapper detection

def test_lvm_on_a_kernel_without_device_mapper_says_pass_vm():
    if L.device_mapper_available():
        pytest.skip("this kernel has device-mapper")
    with pytest.raises(L.LayoutUnavailable, match="--vm"):
        L.require_device_mapper("lvm1")
    L.require_device_mapper("native")  # needs none


# ---------------------------------------------------------------- integration: native on a loop device

@pytest.mark.integration
def test_native_layout_on_a_loop_device_is_built_and_left_without_trace(tmp_path):
    require_root()
    require_tools("losetup", "mkfs.ext3", "mount", "umount", "blockdev")
    fs = 64 * MiB
    backing = tmp_path / "scratch.img"
    from diskmodel.calibrate.harness.scratch import prepare_scratch
    with prepare_scratch(backing, L.backing_bytes_required("native", fs)) as scratch:
        plan = L.build_plan("native", backing=scratch.path, fs_size_bytes=fs)
        ex = L.HostExecutor(plan)
        with ex:
            mnt = ex.mountpoint
            dev = ex.device
            assert re.fullmatch(r"/dev/loop\d+", dev)
            line = [ln for ln in Path("/proc/mounts").read_text().splitlines() if f" {mnt} " in ln]
            assert line and line[0].split()[2] in ("ext3", "ext4")  # ext3 is served by the ext4 driver
            assert int(subprocess.check_output(["blockdev", "--getsize64", dev])) == fs
            (Path(mnt) / "probe").write_bytes(b"x" * 4096)
            listing = subprocess.check_output(["losetup", "-l", "-n", "-O", "NAME,OFFSET,SIZELIMIT,DIO", dev],
                                              text=True).split()
            assert listing == [dev, str(L.FIRST_REGION_OFFSET_BYTES), str(fs), "1"]
        assert ex.teardown().left == []
        assert f" {mnt} " not in Path("/proc/mounts").read_text()
        assert not Path(mnt).exists()
        assert subprocess.check_output(["losetup", "-j", scratch.path], text=True).strip() == ""
    assert not backing.exists()


@pytest.mark.integration
def test_a_failing_real_step_rolls_back_the_loop_device_and_mount_point(tmp_path):
    require_root()
    require_tools("losetup", "mkfs.ext3", "mount")
    fs = 32 * MiB
    from diskmodel.calibrate.harness.scratch import prepare_scratch
    with prepare_scratch(tmp_path / "s.img", L.backing_bytes_required("native", fs)) as scratch:
        plan = L.build_plan("native", backing=scratch.path, fs_size_bytes=fs, mount_options=["no_such_option"])
        ex = L.HostExecutor(plan)
        with pytest.raises(L.LayoutError, match="mount ext3"):
            ex.build()
        # the mount (never made), the mount point and the loop device: each looked for and checked gone
        assert len(ex.report.removed) == 3 and ex.report.left == []
        assert not Path(ex.variables["DISKMODEL_MNT"]).exists()
        assert subprocess.check_output(["losetup", "-j", scratch.path], text=True).strip() == ""
        assert ex.teardown().left == []


def test_xfs_below_its_minimum_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="fs_size_bytes must be >= 318767104 for xfs"):
        L.build_plan("native", backing="/x", fs_size_bytes=296 * MiB, fs_type="xfs")
    L.build_plan("native", backing="/x", fs_size_bytes=304 * MiB, fs_type="xfs")
