"""A device the harness makes gets a fresh disk's queue settings (diskmodel.calibrate.harness.queue_defaults),
whatever the loop number's earlier use left: checked on a real loop device, and on an emulated drive."""
from __future__ import annotations

import subprocess

import pytest

from conftest import require_root, require_tools
from diskmodel.calibrate.harness.queue_defaults import queue_value, set_disk_defaults, set_queue_value
from diskmodel.model.drive.drives import DEFAULT_MAX_SECTORS_KB
from diskmodel.model.iopath.read_ahead import DEFAULT_READ_AHEAD_KB
from test_emulate import require_emulation, short_probe  # noqa: F401 (short_probe: a fixture)


@pytest.mark.parametrize("name, kb, fragment", [
    ("read_ahead_kb", -1, "read_ahead_kb must be a whole number of KiB >= 0 (got -1)"),
    ("max_sectors_kb", 1.5, "max_sectors_kb must be a whole number of KiB >= 0 (got 1.5)"),
    ("scheduler", 4, "name must be one of read_ahead_kb, max_sectors_kb (got 'scheduler')"),
])
def test_a_bad_setting_is_one_line_naming_it(name, kb, fragment):
    with pytest.raises(ValueError) as err:
        set_queue_value("/dev/loop0", name, kb)
    assert str(err.value) == fragment


@pytest.mark.integration
@pytest.mark.slow
def test_a_loop_device_left_changed_by_its_last_use_gets_a_disks_defaults(tmp_path):
    require_root()
    require_tools("losetup")
    image = tmp_path / "image"
    image.write_bytes(b"\0" * (4 << 20))
    dev = subprocess.check_output(["losetup", "--find", "--show", str(image)], text=True).strip()
    try:
        # what an earlier use of this loop number may leave behind
        set_queue_value(dev, "read_ahead_kb", 2560)
        set_queue_value(dev, "max_sectors_kb", 512)
        subprocess.run(["losetup", "-d", dev], check=True)
        dev = subprocess.check_output(["losetup", dev, "--show", str(image)], text=True).strip()
        assert (queue_value(dev, "read_ahead_kb"), queue_value(dev, "max_sectors_kb")) == (2560, 512)  # kept
        assert set_disk_defaults(dev) == {"read_ahead_kb": DEFAULT_READ_AHEAD_KB,
                                          "max_sectors_kb": DEFAULT_MAX_SECTORS_KB}
        assert (queue_value(dev, "read_ahead_kb"), queue_value(dev, "max_sectors_kb")) == (128, 1280)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)


@pytest.mark.integration
@pytest.mark.slow
def test_an_emulated_drive_reads_ahead_and_takes_requests_as_a_disk(short_probe):
    require_emulation()
    from diskmodel.calibrate.emulate import emulated_drives

    with emulated_drives(["hp_c2247a"]) as devices:
        path = devices[0].path
        assert (queue_value(path, "read_ahead_kb"), queue_value(path, "max_sectors_kb")) == (128, 1280)


def test_a_host_plan_sets_each_loop_devices_queue_after_it_is_attached_and_a_vm_plan_does_not():
    """build_plan(queue_defaults=True), as the host's postmark and bench build: after each losetup (a partition's
    loop device, a loop file's), a fixed script sets the request limit, then the read-ahead, and the step
    checks both read back; without it (the VM, freshly booted) the plan is as before."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.builders import _SET_QUEUE
    from diskmodel.model.drive.drives import PresetDrive
    from diskmodel.model.stacks.loop_file import LoopFile
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    mib = 1 << 20
    stack = Stack(FileSystemNode(LoopFile(Partition(mib, 256 * mib, "/dev/sda1", "sda"), 64 * mib), kind="ext2"),
                  (PresetDrive("wd800bd", "sda", max_sectors_kb=512),))
    plan = L.build_plan(stack, backing="/dev/null", queue_defaults=True)
    argvs = [s.argv for s in plan.steps]
    loops = [i for i, a in enumerate(argvs) if a[:1] == ("losetup",)]
    sets = [i for i, a in enumerate(argvs) if a[:3] == ("sh", "-c", _SET_QUEUE)]
    assert len(loops) == 2 and sets == [i + 1 for i in loops]
    assert [plan.steps[i].expect for i in sets] == ["512 128", "1280 128"]   # the disk's limit, then a loop's
    assert [argvs[i][3] for i in sets] == [L.Ref(plan.steps[i].capture) for i in loops]
    fresh = L.build_plan(stack, backing="/dev/null")
    assert not any(a[:3] == ("sh", "-c", _SET_QUEUE) for a in (s.argv for s in fresh.steps))


def test_the_hosts_executor_runs_no_plan_with_a_loop_device_whose_queue_it_would_leave_as_found():
    """A host plan without the queue steps is refused before anything runs, with one line naming the stack and
    what to pass; a plan with them, or with no loop device, is taken."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.host_executor import HostExecutor
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    stack = Stack(FileSystemNode(Partition(1 << 20, 64 << 20), kind="ext2"))
    with pytest.raises(ValueError) as info:
        HostExecutor(L.build_plan(stack, backing="/dev/null"))
    assert str(info.value) == ("stack ext2 on partition: a host plan sets each loop device's queue to a fresh disk's "
                               "(build_plan(..., queue_defaults=True)); this plan does not")
    assert HostExecutor(L.build_plan(stack, backing="/dev/null", queue_defaults=True)).plan.queue_defaults
    bare = L.StackPlan(name="bare", fs_type="ext2", fs_size_bytes=0, backing="/dev/null", regions=(), steps=(),
                       device="/dev/null", mount_var="DISKMODEL_MNT")
    assert HostExecutor(bare).plan is bare
