"""A tiny end-to-end run of the host check (diskmodel.calibrate.bench.hostcheck, which
benchmarks/host_postmark_check.py runs): calibrate this machine's storage, run real
PostMark on native ext3 over a loop device under one memory limit, predict with the
model, and leave nothing behind."""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest

from conftest import require_root, require_tools
from diskmodel.calibrate.bench.hostcheck import run_check
from diskmodel.model.units import MIB as MiB


def _loops_backed_under(directory: Path) -> list[str]:
    import subprocess
    out = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True,
                         check=True).stdout
    return [line for line in out.splitlines() if str(directory) in line]


def _mountpoints() -> set[str]:
    return {line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()}


def _our_cgroups() -> list[Path]:
    found = []
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/unified")):
        found += list(root.glob(f"diskmodel-postmark-{os.getpid()}-*"))
    return found


def test_flat_latency_disk_charges_latency_and_rate():
    from diskmodel.model.drive.disk import flat_latency_disk, service_time_s

    disk = flat_latency_disk(100e-6, 1e9, 64 * MiB, block_bytes=4096)
    # a 1 MiB request anywhere: latency less one block's transfer, plus 1 MiB at 1 GB/s; no seek
    t = service_time_s(disk, 32 * MiB, MiB, 0)
    assert float(t.seek_s) == 0.0
    assert float(t.rotation_s) < 1e-6
    assert float(t.total_s) == pytest.approx(100e-6 - 4096 / 1e9 + MiB / 1e9, rel=0.01)
    with pytest.raises(ValueError, match="latency_s"):
        flat_latency_disk(float("nan"), 1e9, 64 * MiB)


@pytest.mark.integration
@pytest.mark.slow
def test_tiny_host_check_end_to_end(tmp_path):
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount", "dumpe2fs", "dd")
    from diskmodel.model.predictions.workload import postmark_preset

    config = postmark_preset("test1").evolve(number_of_files=300, transactions=1500)
    mounts_before = _mountpoints()
    lines: list[str] = []
    result = run_check(config, limits=[32 * MiB], repeats=2, fs_size_bytes=128 * MiB,
                             scratch_dir=str(tmp_path), calibration_bytes=128 * MiB, budget_s=2.0,
                             say=lines.append)
    # the calibration found this machine's flash (no mechanical seek) and the model got its numbers
    assert result.calibration.latency_model is not None
    assert 1e-6 < result.disk.command_overhead_s < 0.1
    assert result.filesystem.block_size_bytes == 1024  # mke2fs "small" for 128 MiB, read off the real one
    assert result.memory_path is not None and result.memory_path.cpu_per_file_operation_s >= 0
    rows = result.rows()
    assert [(r["limit_bytes"], r["kind"]) for r in rows] == [(32 * MiB, "read"), (32 * MiB, "write")]
    for variant in ("disk only", "+cpu"):
        for r in result.rows(variant):
            assert math.isfinite(r["measured"]) and r["measured"] > 0
            assert math.isfinite(r["predicted"]) and r["predicted"] > 0
            assert math.isfinite(r["error_pct"])
            lo, hi = r["ci"]
            assert math.isfinite(lo) and math.isfinite(hi) and lo <= r["measured"] <= hi
    cell = result.cells[0]
    assert 0 < cell.other_bytes < 32 * MiB and cell.cache_bytes == pytest.approx(32 * MiB - cell.other_bytes)
    # what the loop device completed per run, for comparison with the model's request count
    assert len(cell.device_requests) == 4 and all(math.isfinite(v) and v >= 0 for v in cell.device_requests)
    # the printed table: one row per (limit, op), and the last line
    table = [ln for ln in lines if re.match(r"\s+32 MiB\s+\d+Mi\s+(read|write)\s", ln)]
    assert len(table) == 2
    m = re.fullmatch(r"median_cell_error_pct: (\d+\.\d)", lines[-1])
    assert m and float(m.group(1)) == pytest.approx(result.median_error_pct(), abs=0.05)
    # nothing left behind
    assert _loops_backed_under(tmp_path) == []
    assert _mountpoints() == mounts_before
    assert _our_cgroups() == []
    assert list(tmp_path.iterdir()) == []
    assert not list(Path("/tmp").glob("diskmodel-hostcheck-tmpfs.*"))


def test_bad_limits_are_refused_before_anything_is_built(tmp_path):
    from diskmodel.model.predictions.workload import postmark_preset

    config = postmark_preset("test1").evolve(number_of_files=10, transactions=10)
    for bad in ([], [8 * MiB], [float("nan")]):
        with pytest.raises(ValueError, match="limits"):
            run_check(config, limits=bad, scratch_dir=str(tmp_path))
    with pytest.raises(ValueError, match="repeats"):
        run_check(config, limits=[None], repeats=0, scratch_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
