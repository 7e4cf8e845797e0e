"""The reference drives (issue #10): a ground truth written independently of diskmodel.model.

Their own layout and timing are checked here against hand-worked figures, so that the
calibration's recovery tests (test_calibration_recovery.py) rest on a known truth."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from diskmodel.calibrate.harness.backend import backend_from_spec, check_backend
from diskmodel.calibrate.harness.reference import FAMILY, DriveSpec, Layout, ReferenceDrive, reference_drive, truth

ROOT = Path(__file__).resolve().parents[1]


def small(**changes) -> ReferenceDrive:
    """A tiny drive: 2 zones, 3 surfaces, 100 and 80 sectors per track, 6000 rpm (10 ms)."""
    layout = changes.pop("layout", Layout(((10, 100), (10, 80)), 3, 512, "conventional", 0.1, 0.2))
    spec = DriveSpec("small", layout, rpm=6000, seek_single_s=1e-3, seek_knee_s=3e-3, seek_full_s=5e-3,
                     knee_cylinders=8, head_switch_s=0.5e-3, command_overhead_s=0.1e-3,
                     host_gap_s=0.0, host_gap_jitter_s=0.0, timer_noise_s=0.0, **changes)
    return ReferenceDrive(spec)


def test_the_family_imports_nothing_of_the_model():
    """Ground truth: the reference package does not use diskmodel.model (zones, disk, simulate...)."""
    for path in (ROOT / "calibrate" / "harness" / "reference").glob("*.py"):
        tree = ast.parse(path.read_text())
        names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not any(name.startswith(("diskmodel.model", "model")) for name in names), (path.name, names)


def test_the_family_spans_the_behaviours():
    specs = list(FAMILY.values())
    assert len(specs) >= 6
    big = [s for s in specs if s.layout.total_sectors * 512 >= 3.9e12]
    assert any(s.layout.surfaces == 10 and s.layout.order == "serpentine" for s in big)
    assert {s.layout.order for s in specs} == {"conventional", "serpentine"}
    assert {s.read_ahead for s in specs} == {True, False}
    assert len({s.segments for s in specs if s.read_ahead}) >= 3
    assert len({s.segment_bytes for s in specs if s.read_ahead}) >= 3
    assert min(s.layout.surfaces for s in specs) == 1 and max(s.layout.surfaces for s in specs) == 10
    assert any(len(s.layout.zones) == 1 for s in specs) and any(len(s.layout.zones) > 10 for s in specs)
    assert any(s.write_cache for s in specs) and any(s.seek_noise > 0 for s in specs)
    assert any(s.outlier_probability > 0 for s in specs) and any(s.host_gap_jitter_s > 50e-6 for s in specs)


def test_layout_maps_blocks_to_tracks_and_angles():
    lay = Layout(((10, 100), (10, 80)), 3, 512, "conventional", 0.1, 0.2)
    assert lay.total_sectors == 10 * 3 * 100 + 10 * 3 * 80
    zone, cyl, head, sector, _ = lay.locate(np.array([0, 99, 100, 299, 300, 3000, 3080]))
    assert cyl.tolist() == [0, 0, 0, 0, 1, 10, 10] and head.tolist() == [0, 0, 1, 2, 0, 0, 1]
    assert sector.tolist() == [0, 99, 0, 99, 0, 0, 0] and zone.tolist() == [0, 0, 0, 0, 0, 1, 1]
    # the next track starts a track skew later, the next cylinder a cylinder skew later
    angle = lay.angle(np.array([0, 100, 200, 300]))
    assert angle == pytest.approx([0.0, 0.1, 0.2, 0.4])
    serp = Layout(((10, 100),), 3, 512, "serpentine", 0.1, 0.2)
    _, cyl, head, _, _ = serp.locate(np.array([0, 100, 900, 1000, 1100, 2000]))
    assert cyl.tolist() == [0, 1, 9, 9, 8, 0] and head.tolist() == [0, 0, 0, 1, 1, 2]


def test_timing_by_hand():
    """A read waits for its sector; the block just passed costs a revolution; a track change its skew."""
    d = small(read_ahead=False, segments=0)
    period, x = 10e-3, 10e-3 / 100
    t = d.read_many(np.array([0, 512 * 1]), 512)
    # the first sector passed the head during the command overhead: a revolution, then the sector
    assert t[0] == pytest.approx(period + x)
    # the next block has just passed when the next command is ready: again nearly a revolution
    assert t[1] == pytest.approx(period + x)
    # a long read over a head switch loses the track skew (0.1 rev), the switch (0.5 ms) being shorter
    one = small(read_ahead=False, segments=0).read(0, 512 * 100)
    two = small(read_ahead=False, segments=0).read(0, 512 * 200)
    assert two - one == pytest.approx(period + 0.1 * period)
    assert small().zone_rates_bytes_per_s()[0] == pytest.approx(100 * 512 / (period + (2 * 0.1 + 0.2) / 3 * period))


def test_read_ahead_segments_and_write_cache():
    d = small(read_ahead=True, segments=2, segment_bytes=50 * 512, write_cache=True)
    first = d.read(0, 512)
    assert first > 0.1e-3
    # the block after: served from the buffer at once (command overhead and bus)
    assert d.read(512, 512) == pytest.approx(0.1e-3 + 512 / 300e6)
    # beyond the segment: from the media again
    assert d.read(60 * 512, 512) > 1e-3
    # two segments: a read's data survive one other read, not two
    d.read(0, 512)
    d.read(3000 * 512, 512)
    assert d.read(0, 512) < 0.2e-3
    d.read(4000 * 512, 512)
    d.read(5000 * 512, 512)
    assert d.read(0, 512) > 0.2e-3
    # the write cache reports a write at once; without it a write goes to the media
    assert d.write(2000 * 512, 512) == pytest.approx(0.1e-3 + 512 / 300e6)
    assert small(write_cache=False).write(2000 * 512, 512) > 0.5e-3


def test_truth_and_factories_follow_the_backend_protocol():
    drive = backend_from_spec("diskmodel.calibrate.harness.reference:serpentine_4tb")
    check_backend(drive)
    assert drive.size_bytes > 3.9e12 and drive.layout.surfaces == 10
    t = truth(drive)
    assert t["head_switch_s"] is None and t["surfaces"] is None  # serpentine: not what a calibration sees
    assert t["read_ahead"] == {"detected": True, "segment_bytes": 512 * 1024, "segments": 16}
    # device time: the virtual clock counts service and host gaps
    before = drive.device_time_s
    times = drive.read_many(np.arange(50) * 10**9 // 512 * 512, 512)
    assert drive.device_time_s - before >= times.sum()
    assert 5e-3 < truth(reference_drive("desktop_7200"))["mean_random_seek_s"] < 12e-3
