"""The VM cells of benchmarks/stacks_check.py: each stack's disks on emulated drives of their own, the
guest's script, and what is read back from its output (no VM here: the script is checked as text and
the parser on output written the way copy_shell prints it)."""
from __future__ import annotations

import functools
import re

import pytest

from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench import stacks_vm as V
from diskmodel.calibrate.bench.copy import parse_copy_spread
from diskmodel.model.predictions.block_workloads import FileCopy

COPY = FileCopy(file_sizes_bytes=(4 << 20,), repeats=2)


@functools.lru_cache(maxsize=None)
def _group(name):
    """A group's (drive presets, cells), built once (each cell's drives take a moment)."""
    return V.GROUPS[name]()


@pytest.mark.parametrize("group", sorted(V.GROUPS))
def test_each_disk_of_a_cell_is_its_own_guest_drive(group):
    presets, cells = _group(group)
    assert len(presets) <= len(V.GUEST_DISKS)
    for cell in cells:
        disks = {d.name: f"/dev/{d.name}" for d in cell.stack.disks}
        plan = L.build_plan(cell.stack, backing="/dev/vdb", disk_backings=disks)
        for region, (_, part) in zip(plan.regions, cell.stack.partitions()):
            # the partition's own bytes of its own drive, not a share of one scratch
            assert region.offset_bytes == part.start_bytes
        loops = [s.argv for s in plan.steps if s.argv[:1] == ("losetup",) and "--offset" in s.argv]
        assert sorted(a[-1] for a in loops) == sorted(f"/dev/{p.disk}" for _, p in cell.stack.partitions())


def test_the_guest_script_runs_every_cell_in_its_own_shell_between_markers():
    _, cells = _group("engineer")
    script = V.group_script(cells, COPY)
    assert script.count("sh -c ") == 2 * len(cells)  # each cell's twin over RAM disks, then the cell
    for i in range(len(cells)):
        assert f"{V._MARK} BEGIN {i}" in script and f'{V._MARK} END {i} $?' in script
    for i in range(len(cells)):  # each cell's copy on the guest's tmpfs just before the cell
        assert script.index(f"DISKMODEL_COPY pace{i} ") < script.index(f"{V._MARK} BEGIN {i}")
    assert "nodiscard" in script and "lazy_itable_init=0" in script
    # the queue settings and the marker read (the request log put on the guest's clock)
    assert f"{V._MARK} QUEUE 0" in script and "read_ahead_kb" in script and "max_sectors_kb" in script
    assert f"skip={V.MARKER_BLOCK + 1} iflag=direct" in script and f"{V._MARK} MARKER 1 " in script


def _copy_lines(tag, rows):
    return "".join(f"DISKMODEL_COPY {tag} 4 {t0} {t1} {t2} {t3}\n" for t0, t1, t2, t3 in rows)


def test_parse_group_reads_each_cells_pace_the_medians_and_a_failure():
    cells = ["a", "b"]
    out = (_copy_lines("pace0", [(0, 0.1, 0.2, 0.25), (1, 1.1, 2, 2.05), (3, 3.5, 4, 4.45)])
           + f"{V._MARK} BEGIN 0\n"
           + _copy_lines("cell0", [(0, 0.2, 1, 1.1), (2, 2.3, 3, 3.1), (4, 4.9, 5, 5.12)])
           + f"{V._MARK} END 0 0\n" + _copy_lines("pace1", [(0, 0.3, 1, 1.03)])
           + f"{V._MARK} BEGIN 1\nmdadm: cannot open /dev/vdc\n{V._MARK} END 1 1\n")
    pace, results = V.parse_group(out, cells)
    result, spread, own, ram = results[0]
    # the median of 0.2, 0.3 and 0.9 (a repeat the host stalled), not their mean 0.467
    assert result.write_s == pytest.approx((0.3,)) and result.read_s == pytest.approx((0.1,))
    assert spread["write"] == pytest.approx(0.3091206 / 0.4666667, rel=1e-5)  # the repeats' spread kept
    assert own.write_s == pytest.approx((0.1,)) and own.read_s == pytest.approx((0.05,))
    # the group's pace: the median over the cells' tmpfs runs (0.1 and 0.3 -> 0.2)
    assert pace.write_s == pytest.approx((0.2,)) and pace.read_s == pytest.approx((0.04,))
    assert isinstance(results[1], str) and "status 1" in results[1] and "mdadm" in results[1]


def test_copy_spread_is_zero_for_one_repeat_and_the_largest_over_sizes():
    one = _copy_lines("copy", [(0, 1, 2, 3)])
    assert parse_copy_spread(one) == {"write": 0.0, "read": 0.0}
    two = _copy_lines("copy", [(0, 1, 2, 4), (0, 3, 4, 6)])
    assert parse_copy_spread(two)["write"] == pytest.approx(1 / 2)  # times 1 and 3: sd 1, mean 2
    assert re.search("read", str(parse_copy_spread(two)))


def test_a_thin_cell_discards_the_removed_file_after_each_repeat_and_no_other_cell_does():
    _, cells = _group("002")
    thin = [c for c in cells if "thin" in c.label]
    copy = FileCopy(file_sizes_bytes=(4 << 20,), repeats=3)
    for cell in cells:
        script = V.group_script([cell], copy, ram_twin=False)  # the cell alone
        if cell in thin:  # each repeat a copy of its own, then fstrim: every repeat provisions anew
            assert script.count("fstrim ") == 3 and script.count("DISKMODEL_COPY cell0 ") == 3
            assert script.index("DISKMODEL_COPY cell0 ") < script.index("fstrim ")
        else:
            assert "fstrim" not in script and script.count("DISKMODEL_COPY cell0 ") == 1
    assert len(thin) == 12  # pool chunks of 64 KiB, 128 KiB, 1 MiB and 8 MiB; the 32 MiB file's 64 KiB - 8 MiB


def test_the_thin_series_copies_its_own_32_mib_file_and_the_other_cells_the_runs():
    # the multi-disk LVM study's Figure 11 over its whole range, each cell with a file far larger than the chunk
    _, cells = _group("002")
    series = {c.label: c for c in cells if c.copy_sizes_bytes}
    assert sorted(c.stack.volume.chunk_size_bytes for c in series.values()) == [64 << 10 << k for k in range(8)]
    assert set(series) == {V.thin_series_label(64 << 10 << k) for k in range(8)}
    both = [cells[0], next(iter(series.values()))]
    script = V.group_script(both, COPY, ram_twin=False)
    # copy_shell writes sizes in MiB: the run's 4 MiB for the first cell (and its pace), 32 for the thin cell
    assert re.search(r"for n in 4; do(.|\n)*DISKMODEL_STACKS BEGIN 0(.|\n)*for n in 32; do(.|\n)*BEGIN 1", script)
    assert script.count("for n in 32; do") == 2 + COPY.repeats - 1  # its pace, then one copy per repeat
    assert V.cell_copy(cells[0], COPY) is COPY
    assert V.cell_copy(both[1], COPY).file_sizes_bytes == (32 << 20,)


def test_the_new_cells_raid_5_and_6_over_five_drives_and_file_systems_on_the_mirror():
    _, cells = _group("002")
    by = {c.label: c.stack.volume for c in cells}
    for level, data in (("5", 4), ("6", 3)):
        array = by[f"ext4, RAID {level} over 5 drives, 64 KiB"]
        assert array.kind == f"raid{level}" and len(array.members) == 5
        assert array.array_size_bytes == data * (V.PART_BYTES - V.MD_OFFSET)
    _, cells = _group("000")
    mirrors = {c.stack.file_system.kind: c.stack for c in cells if "RAID 1" in c.label}
    assert sorted(mirrors) == ["ext2", "ext3", "jfs", "reiserfs", "xfs"]
    # mkfs.xfs refuses under 300 MiB: its mirror's members are larger
    assert mirrors["xfs"].volume.array_size_bytes >= L.XFS_MIN_BYTES


def test_the_group_pace_is_taken_over_cells_of_the_runs_file_sizes_only():
    cells = ["a", "b"]
    out = (_copy_lines("pace0", [(0, 0.1, 0.2, 0.25)]) + f"{V._MARK} BEGIN 0\n" + _copy_lines("cell0", [(0, 1, 2, 3)])
           + f"{V._MARK} END 0 0\n" + "DISKMODEL_COPY pace1 32 0 5 6 9\n" + f"{V._MARK} BEGIN 1\n"
           + "DISKMODEL_COPY cell1 32 0 9 10 19\n" + f"{V._MARK} END 1 0\n")
    pace, results = V.parse_group(out, cells)
    assert pace.sizes_bytes == (4 << 20,) and pace.write_s == pytest.approx((0.1,))
    assert results[1][2].sizes_bytes == (32 << 20,) and results[1][2].write_s == pytest.approx((5.0,))


def test_drive_logs_are_in_the_guests_drive_order(tmp_path):
    # Dagenais' group: the fast wd800bd is /dev/vdb (index 0), the slow hp_c2247a /dev/vdc (index 1)
    for name in ("wd800bd-0.reqlog", "hp_c2247a-1.reqlog", "wd800bd-10.reqlog", "wd800bd-2.reqlog"):
        (tmp_path / name).write_text("")
    assert [p.rsplit("/", 1)[1] for p in V.drive_logs(tmp_path)] == [
        "wd800bd-0.reqlog", "hp_c2247a-1.reqlog", "wd800bd-2.reqlog", "wd800bd-10.reqlog"]
