"""The twin of a stack over RAM disks in the guest (calibrate/bench/ram_twin.py), run just before each VM cell
of benchmarks/stacks_check.py (and each PostMark run of ``experiment --emulate``): its shell lines carry values
only as quoted words, its teardown is in the script, and the prediction on its clock composes as documented
(the copy's operations issued at the twin's pace, the drives' service added where the copy waits)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from diskmodel.calibrate.bench import ram_twin as T
from diskmodel.calibrate.bench import stacks_vm as V
from diskmodel.model.predictions.block_workloads import FileCopy

MIB = 1 << 20
COPY = FileCopy(file_sizes_bytes=(4 * MIB,), repeats=2)
#: A path a shell would split, expand or run were it not quoted.
NASTY = "/tmp/dm ram $(touch pwned) `x` ; 'q' \"d\" *"


def _stubbed_sh(script: str, tmp_path: Path) -> list[list[str]]:
    """Run *script* with mount, umount, losetup and rm as stubs that log their argument vectors (one JSON list
    a line), then run its undo list as the stack script's EXIT trap does (eval); the logged argvs."""
    log = tmp_path / "argv.log"
    stubs = "".join(  # each argument ended by a unit separator, each call a line
        f"{name}() {{ printf '%s\\037' {name} \"$@\" >> {shlex.quote(str(log))}; echo >> {shlex.quote(str(log))}; "
        + ('echo /dev/loop9; ' if name == "losetup" else "") + "}\n"
        for name in ("mount", "umount", "losetup", "rm"))
    full = "DISKMODEL_UNDO=''\n" + stubs + script + '\neval "$DISKMODEL_UNDO"\n'
    subprocess.run(["sh", "-c", full], check=True, cwd=tmp_path, timeout=30)
    return [line.split("\037")[:-1] for line in log.read_text().splitlines()]


def test_the_ram_disks_lines_pass_every_path_as_one_word_and_undo_in_reverse(tmp_path):
    room = str(tmp_path / "ram dir")
    link = str(tmp_path / NASTY.lstrip("/").replace("/", "_"))
    argvs = _stubbed_sh(T.ram_disks_preamble({link: 3 * MIB, str(tmp_path / "plain"): MIB}, ram_dir=room),
                        tmp_path)
    assert argvs[0] == ["mount", "-t", "tmpfs", "-o", "size=68m", "diskmodel-ram", room]  # 3 + 1 + 64 MiB
    assert argvs[1:3] == [["losetup", "--find", "--show", f"{room}/disk0"],
                          ["losetup", "--find", "--show", f"{room}/disk1"]]
    # the teardown: each loop device and its link, the last made first, then the tmpfs
    assert argvs[3:] == [["losetup", "-d", "/dev/loop9"], ["rm", "-f", str(tmp_path / "plain")],
                         ["losetup", "-d", "/dev/loop9"], ["rm", "-f", link], ["umount", room]]
    assert os.path.islink(link) and os.readlink(link) == "/dev/loop9"  # one word: the link made as named
    assert os.path.getsize(f"{room}/disk0") == 3 * MIB and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "1M"])
def test_a_ram_disk_of_no_whole_size_is_one_line_naming_it(bad):
    with pytest.raises(ValueError, match=r"^disks\['/tmp/x'\]: size must be a whole number of bytes > 0"):
        T.ram_disks_preamble({"/tmp/x": bad})


def test_each_cells_twin_runs_between_its_tmpfs_pace_and_its_run_on_ram_disks_of_its_own():
    _, cells = V.GROUPS["engineer"]()
    one, mirror = cells[0], next(c for c in cells if c.label == "ext4, RAID 1 over two disks")
    script = V.group_script([one, mirror], COPY)
    for i in range(2):
        pace, twin, run = (script.index(s) for s in (f"DISKMODEL_COPY pace{i} ", f"{V._MARK} RAM BEGIN {i}",
                                                      f"{V._MARK} BEGIN {i}"))
        assert pace < twin < run
    words = shlex.split(script[script.index(f"echo '{V._MARK} RAM BEGIN 1'"):script.index(f"echo '{V._MARK} BEGIN 1'")])
    twin = words[words.index("-c") + 1]
    # every member on a RAM disk of its own at the partition's own offset; none of the guest's drives touched
    for disk in V.GUEST_DISKS[:2]:
        assert f"--offset 1048576 --sizelimit 268435456 /tmp/diskmodel-ram-{disk}\n" in twin
    assert "/dev/vd" not in twin and "--level=1" in twin and "DISKMODEL_COPY ram1 " in twin
    # the twin's teardown is the script's own: its EXIT trap runs the undo list holding the RAM disks'
    assert "trap diskmodel_teardown EXIT" in twin and 'eval "$DISKMODEL_UNDO"' in twin
    assert "DISKMODEL_UNDO='umount /tmp/diskmodel-ram'" in twin
    assert twin.count("DISKMODEL_UNDO='losetup -d \"$diskmodel_ram") == 2
    assert V.group_script([one], COPY, ram_twin=False).count("RAM BEGIN") == 0


def test_parse_group_reads_the_twins_copy_and_none_for_a_twin_that_failed():
    rows = "".join(f"DISKMODEL_COPY {{tag}} 4 {a} {b} {c} {d}\n" for a, b, c, d in
                   [(0, 0.5, 1, 1.2), (2, 2.7, 3, 3.3), (4, 4.6, 5, 5.25)])
    out = (rows.format(tag="pace0") + f"{V._MARK} RAM BEGIN 0\n" + rows.format(tag="ram0") + f"{V._MARK} RAM END 0 0\n"
           + f"{V._MARK} BEGIN 0\n" + rows.format(tag="cell0") + f"{V._MARK} END 0 0\n"
           + f"{V._MARK} RAM BEGIN 1\n" + rows.format(tag="ram1") + f"{V._MARK} RAM END 1 1\n"
           + f"{V._MARK} BEGIN 1\n" + rows.format(tag="cell1") + f"{V._MARK} END 1 0\n")
    _, results = V.parse_group(out, ["a", "b"])
    ram = results[0][3]
    assert ram.write_s == pytest.approx((0.6,)) and ram.read_s == pytest.approx((0.25,))  # medians of 3
    assert results[1][3] is None  # its twin ended with status 1: no clock from it


def test_the_prediction_on_the_twins_clock_is_its_pace_plus_the_drives_waited_service():
    """ext2 on one flat drive (1 ms a request, 50 MB/s): the copy's 4 MiB write is issued at the twin's pace and
    its fsync waits for the drive, so the step takes the twin's 0.5 s plus the drive's busy time, which is at
    least the 4 MiB at 50 MB/s (0.0839 s); the tmpfs clock's 0.1 s gives the same busy time 0.4 s sooner. The
    read takes the twin's 0.25 s and its wait for the first 1 MiB window, not the drive's whole busy time."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from stacks_check import RAM_CLOCK, TMPFS_CLOCK, predicted_on_clocks

    from diskmodel.model.drive.disk import flat_latency_disk
    from diskmodel.model.drive.drives import InMemoryDrive
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition

    drive = InMemoryDrive(flat_latency_disk(1e-3, 50e6, 10**10), "vdb")
    stack = Stack(FileSystemNode(Partition(MIB, 256 * MIB, disk="vdb"), kind="ext2"), (drive,), "flat")
    w, r = f"dd:size={4 * MIB},step=write", f"dd:size={4 * MIB},step=read"
    copy = FileCopy(file_sizes_bytes=(4 * MIB,), repeats=2)
    cell = {"tmpfs_pace_s": {w: 0.1, r: 0.05}, "ram_twin_pace_s": {w: 0.5, r: 0.25}}
    out = predicted_on_clocks(stack, copy, cell)
    assert out["clock"] == RAM_CLOCK and "RAM disks" in out["assumptions"][0]
    row, tmpfs = out["predicted"]["rows"][0], out["predicted_tmpfs_clock"]["rows"][0]
    busy_w = row["write_devices"]["vdb"]["busy_s"]
    assert busy_w >= 4 * MIB / 50e6 and row["write_s"] == pytest.approx(0.5 + busy_w, abs=1e-9)
    # the read waits for its first window; the later ones are read while the application copies the one
    # before (async read-ahead), so the drive's busy time is not all added to the pace
    busy_r = row["read_devices"]["vdb"]["busy_s"]
    assert 0.25 + 1e-3 + MIB / 50e6 <= row["read_s"] < 0.25 + busy_r - 2 * (1e-3 + MIB / 50e6)
    assert row["write_s"] - tmpfs["write_s"] == pytest.approx(0.4, abs=1e-4)
    assert out["predicted"]["copy write"] == pytest.approx(4 * MIB / (0.5 + busy_w))
    # without every step on the twin's clock: the tmpfs clock, and the assumptions say so
    half = predicted_on_clocks(stack, copy, dict(cell, ram_twin_pace_s={w: 0.5}))
    assert half["clock"] == TMPFS_CLOCK and "did not complete" in half["assumptions"][0]
    assert half["predicted"]["rows"][0]["write_s"] == pytest.approx(tmpfs["write_s"])
