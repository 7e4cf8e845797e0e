"""diskmodel probe: discovery through pyudev and the sysfs fallback, on real loop devices."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _loopdev import MiB, write_mbr, write_random_file
from conftest import require_tools
from diskmodel.calibrate.harness import probe as probe_mod
from diskmodel.calibrate.cli import main
from diskmodel.calibrate.harness.probe import ProbeResult, probe


@pytest.fixture
def written_file(tmp_path) -> Path:
    return write_random_file(tmp_path / "disk.img", 24 * MiB, seed=4)


# --------------------------------------------------------------------------- no root needed


def test_sources_and_virtualisation_are_reported():
    result = probe(source="sysfs")
    assert isinstance(result, ProbeResult)
    assert result.source == "sysfs" and "sysfs" in result.source_note
    v = result.virtualisation
    assert v.method
    assert v.virtualised in (True, False, None)
    if v.cpu_hypervisor_flag:
        assert v.virtualised is True
    for dev in result.devices:
        assert dev.size_bytes > 0 and dev.size_bytes % 512 == 0
        assert "hint" in dev.rotational_note
    with pytest.raises(ValueError, match="source"):
        probe(source="hal")


def test_auto_source_follows_udev_database():
    result = probe()
    expected = "pyudev" if probe_mod.udev_database_present() else "sysfs"
    assert result.source == expected


def test_pyudev_and_sysfs_agree_on_every_device():
    """Both sources read at one moment. A test beside this one (the suite runs two at a time) may attach or
    detach a loop device between two probes (once seen: loop0 64 MiB to pyudev, empty to sysfs), so pyudev's
    reading is compared with sysfs's only where sysfs read the same before and after it, tried a few times."""
    pytest.importorskip("pyudev")

    def sizes(result):
        return {d.name: (d.size_bytes, d.logical_block_size_bytes, d.physical_block_size_bytes)
                for d in result.devices}

    for _ in range(5):
        before = probe(source="sysfs", include_empty=True)
        a = probe(source="pyudev", include_empty=True)
        b = probe(source="sysfs", include_empty=True)
        if sizes(before) == sizes(b):
            break
    else:
        pytest.fail("the block devices changed during every one of five probes")
    assert a.source == "pyudev" and b.source == "sysfs"
    assert sizes(a) == sizes(b) and sizes(a)


def test_lvm_device_mapper_names_split_into_vg_and_lv():
    assert probe_mod.split_lvm_dm_name("vg0-lv0") == ("vg0", "lv0")
    assert probe_mod.split_lvm_dm_name("my--vg-my--lv") == ("my-vg", "my-lv")
    assert probe_mod.split_lvm_dm_name("vg-lv--x--") == ("vg", "lv-x-")
    assert probe_mod.split_lvm_dm_name("plain") == (None, None)


def test_not_a_block_device_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a block device"):
        probe("/dev/null")
    with pytest.raises(FileNotFoundError):
        probe(str(tmp_path / "absent"))


def test_root_filesystem_device_is_seen_mounted():
    st = os.stat("/")
    link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not link.exists():
        pytest.skip("/ is not on a block device here")
    name = link.resolve().name
    dev = probe(name, source="sysfs").devices[0]
    assert dev.mounted and any(m.mount_point == "/" for m in dev.mounted_via)
    assert dev.in_use


# --------------------------------------------------------------------------- loop devices


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("source", ["sysfs", "pyudev"])
def test_probe_finds_loop_device(loops, written_file, source, capsys):
    if source == "pyudev":
        pytest.importorskip("pyudev")
    dev = loops.attach(written_file)
    result = probe(dev, source=source)
    (d,) = result.devices
    assert d.path == dev and d.name == os.path.basename(dev)
    assert d.size_bytes == 24 * MiB
    assert d.loop_backing_file == str(written_file.resolve())
    assert d.loop_direct_io is True
    assert d.logical_block_size_bytes in (512, 4096)
    assert not d.mounted and not d.swap and not d.in_use
    assert d.mounts == () and d.partitions == ()
    # listed among all devices too, with the same facts
    listed = probe(source=source).device(dev)
    assert listed.size_bytes == d.size_bytes and listed.loop_backing_file == d.loop_backing_file
    # the CLI, as JSON
    assert main(["probe", dev, "--json", "--source", source]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == source
    assert data["devices"][0]["size_bytes"] == 24 * MiB
    assert data["devices"][0]["mounted"] is False
    assert data["virtualisation"]["method"]


@pytest.mark.integration
@pytest.mark.slow
def test_partitions_and_their_start_offsets(loops, written_file, tmp_path):
    import subprocess

    layout = [(1 * MiB, 8 * MiB), (12 * MiB, 4 * MiB)]
    write_mbr(written_file, layout)
    dev = loops.attach(written_file, partscan=True)
    name = os.path.basename(dev)
    if not Path(f"/sys/class/block/{name}p1").exists():
        # Kernels without a partition-table parser (CONFIG_MSDOS_PARTITION unset, as on this
        # project's host) need the partitions declared through BLKPG.
        require_tools("addpart")
        for number, (start, size) in enumerate(layout, 1):
            subprocess.run(["addpart", dev, str(number), str(start // 512), str(size // 512)], check=True)
    for source in ("sysfs", "pyudev"):
        (d,) = probe(dev, source=source).devices
        starts = [(p.number, p.start_bytes, p.size_bytes) for p in d.partitions]
        assert starts == [(1, 1 * MiB, 8 * MiB), (2, 12 * MiB, 4 * MiB)], source
        assert [p.path for p in d.partitions] == [f"{dev}p1", f"{dev}p2"]
        assert all(not p.mounts for p in d.partitions) and not d.mounted
    # a mounted partition makes its disk "mounted" (and in use)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "nodiscard", f"{dev}p2"], check=True, capture_output=True)
    mnt = loops.mount(f"{dev}p2", tmp_path / "mnt")
    (d,) = probe(dev, source="sysfs").devices
    assert d.mounted and d.mounts == ()
    assert [(m.device, m.mount_point) for m in d.mounted_via] == [(f"{name}p2", str(mnt.resolve()))]
    assert [bool(p.mounts) for p in d.partitions] == [False, True]


@pytest.mark.integration
@pytest.mark.slow
def test_mounted_loop_device_is_seen_mounted(loops, tmp_path, capsys):
    image = write_random_file(tmp_path / "fs.img", 16 * MiB, seed=5)
    dev = loops.attach(image)
    import subprocess

    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "nodiscard", dev], check=True, capture_output=True)
    mnt = loops.mount(dev, tmp_path / "mnt")
    (d,) = probe(dev, source="sysfs").devices
    assert d.mounted and d.in_use
    assert [m.mount_point for m in d.mounts] == [str(mnt.resolve())]
    assert d.mounts[0].fs_type == "ext4"
    assert main(["probe", dev]) == 0
    assert "mounted at" in capsys.readouterr().out
    loops.umount(mnt)
    (d,) = probe(dev, source="sysfs").devices
    assert not d.mounted
