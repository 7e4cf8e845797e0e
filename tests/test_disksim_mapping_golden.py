"""LBN -> PBN mapping (g1 and g4 layouts) against DiskSim 4.0 itself.

The golden rows (tests/golden/disksim_*.csv, tests/golden/disksim_handmade/)
were printed by DiskSim's own diskmodel library, built from source, for the
bundled drives and for small hand-made drives with every g1 sparing scheme,
defects remapped elsewhere, and a g4 layout with slips and remaps; how they
were made is tests/golden/README.md.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from diskmodel.data.disksim.model_file import read_model_file
from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive, zone_layout
from diskmodel.model.simulator.g4 import _slipcount, angle_dtoi, g4_rows
from diskmodel.model.simulator.mapping import G4ZoneLayout, track_first_lbn, track_last_lbn
from diskmodel.model.simulator.simulate import simulate_requests

GOLDEN = Path(__file__).parent / "golden"
HANDMADE = GOLDEN / "disksim_handmade"

#: DiskSim works in fixed point (2^32 to a turn, truncated per term); the g1 kernel in
#: floats. The largest difference seen is 7.2e-8 rev (a 3e-9 s at 15,000 rpm).
G1_ANGLE_TOLERANCE_REV = 2e-7

BUNDLED = {
    "G4_4TB": "G4_LBA_64bit_4T.model", "maxtor300g": "maxtor300g.model", "atlas10k": "atlas10k.model",
    "atlas_III": "atlas_III.model", "barracuda": "barracuda.model", "cheetah4LP": "cheetah4LP.model",
    "hp_c2247a": "hp_c2247a_validate.model", "hp_c2490a": "hp_c2490a_validate.model", "ibm18es": "ibm18es.model",
}
HANDMADE_MODELS = sorted(p.stem for p in HANDMADE.glob("*.model") if "-layout" not in p.stem)


def _golden(path):
    rows = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    return rows[rows[:, 1] >= 0], rows[rows[:, 1] < 0, 0]


def _check_against(layout, rows, nx, exact_angle):
    cylinder, head, sector, angle, _ = layout.lbn_to_pbn(rows[:, 0])
    wrong = np.flatnonzero((cylinder != rows[:, 1]) | (head != rows[:, 2]) | (sector != rows[:, 3]))
    assert wrong.size == 0, (f"{wrong.size} of {len(rows)} blocks map elsewhere than in DiskSim, first: lbn "
                             f"{rows[wrong[0], 0]} -> {(cylinder[wrong[0]], head[wrong[0]], sector[wrong[0]])}, "
                             f"DiskSim {tuple(rows[wrong[0], 1:4])}")
    if exact_angle:
        np.testing.assert_array_equal(angle * 2.0**32, rows[:, 4])
    else:
        difference = (angle - rows[:, 4] / 2.0**32 + 0.5) % 1.0 - 0.5
        assert np.abs(difference).max() < G1_ANGLE_TOLERANCE_REV
    # blocks DiskSim maps to nothing (DM_NX) are exactly those past our last block
    assert all(x >= layout.total_blocks for x in nx)
    assert rows[:, 0].max() < layout.total_blocks


@pytest.mark.parametrize("drive", sorted(BUNDLED))
def test_bundled_drives_map_as_disksim_maps_them(disksim_dir, drive):
    model = read_model_file(disksim_dir / drive / BUNDLED[drive])
    layout = zone_layout(model)
    rows, nx = _golden(GOLDEN / f"disksim_{drive}.csv")
    _check_against(layout, rows, nx, exact_angle=isinstance(layout, G4ZoneLayout))
    arrays = layout.kernel_arrays()
    first = np.array([track_first_lbn(arrays, x, 0) for x in rows[:, 0]])
    last = np.array([track_last_lbn(arrays, x, layout.total_blocks) for x in rows[:, 0]])
    if drive in ("G4_4TB", "hp_c2247a", "hp_c2490a"):
        # dm_get_track_boundaries of g4 without slips, and of g1 sparing scheme 1 (the
        # one the 64-bit build wires for every g1 drive, see golden/README.md)
        np.testing.assert_array_equal(first, rows[:, 6])
        np.testing.assert_array_equal(last, rows[:, 7])
    elif drive == "maxtor300g":
        # g4_track_boundaries runs ptol, which leaves the slips out (its slipcount_rev is
        # commented out): DiskSim's first block is the slipped number of sector 0
        slipped = np.array([x + _slipcount(layout.g4_slips, x) for x in first])
        np.testing.assert_array_equal(slipped - layout.lbn_to_pbn(first)[2], rows[:, 6])
        assert np.any(first != rows[:, 6])


def test_g4_4tb_exports_only_the_blocks_disksim_maps(disksim_dir):
    model = read_model_file(disksim_dir / "G4_4TB" / "G4_LBA_64bit_4T.model")
    layout = zone_layout(model)
    # the root index covers 7,542,225,920 blocks of the 7,725,673,570 the file announces;
    # DiskSim's ltop returns DM_NX past them (golden rows 7542225920 and 7725673569)
    assert layout.total_blocks == 7_542_225_920 < model.block_count
    c, h, s, _, _ = layout.lbn_to_pbn(np.array([0, 393_215, 393_216, 786_432]))
    # serpentine: head 0 runs cylinders 0..127 up, head 1 runs them back down
    assert list(zip(c, h, s)) == [(0, 0, 0), (127, 0, 3071), (127, 1, 0), (0, 2, 0)]


@pytest.mark.parametrize("name", HANDMADE_MODELS)
def test_handmade_layouts_map_every_block_as_disksim(name):
    layout = zone_layout(read_model_file(HANDMADE / f"{name}.model"))
    rows, nx = _golden(HANDMADE / f"{name}.csv")
    assert len(rows) == layout.total_blocks and not nx.size        # every block, in order
    np.testing.assert_array_equal(rows[:, 0], np.arange(layout.total_blocks))
    _check_against(layout, rows, nx, exact_angle=name.startswith("g4"))


def test_handmade_defects_and_remaps_move_blocks():
    """The hand-made files' remaps are exercised: blocks land where DiskSim's remaps say."""
    def pbns(name):
        rows, _ = _golden(HANDMADE / f"{name}.csv")
        return {tuple(r[1:4]) for r in rows}, rows

    # scheme 2 (spares per cylinder): zone sector 20 is remapped to 35, (cyl 0, head 2, sector 11),
    # a spare; sector 20 (cyl 0, head 1, sector 8) holds no block
    placed, _ = pbns("g1_scheme2")
    assert (0, 2, 11) in placed and (0, 1, 8) not in placed
    # scheme 1 (spare tracks): track 5 moves to spare track 16 (cylinder 5, head 1; mapping 1
    # reverses odd cylinders: physical head 3 - 1 - 1 = 1)
    placed, _ = pbns("g1_scheme1")
    assert any(p[:2] == (5, 1) for p in placed)
    # g4: blocks 45, 46 -> (1, 1, 8), (1, 1, 9); block 170 -> (10, 0, 7)
    _, rows = pbns("g4_small")
    assert [tuple(rows[x, 1:4]) for x in (45, 46, 170)] == [(1, 1, 8), (1, 1, 9), (10, 0, 7)]
    layout = zone_layout(read_model_file(HANDMADE / "g4_small.model"))
    c, h, s, _, _ = layout.lbn_to_pbn(np.array([45, 46, 170]))
    assert list(zip(c, h, s)) == [(1, 1, 8), (1, 1, 9), (10, 0, 7)]


def test_angle_dtoi_is_disksims_fixed_point():
    # convert.c dm_angle_dtoi: truncation, whole turns above 1 dropped, 1.0 wraps to 0
    assert angle_dtoi([0.0, 0.5, 1.0 / 3072, 0.141669, 1.25, 1.0]).tolist() == [
        0, 1 << 31, 1398101, 608463721, 1 << 30, 0]


def test_g4_tables_with_a_gap_or_unreachable_sectors_are_refused():
    tp = np.array([[0, 9, 10]])
    track = np.array([[0, 0, 0.0, 10, 1, 0.1, 20, 2, 0, 0]], dtype=float)
    root = np.array([[0, 0, 0.0, 20, 2, 0.0, 20, 2, 0, -1], [30, 2, 0.0, 20, 2, 0.0, 20, 2, 0, -1]], dtype=float)
    with pytest.raises(ValueError, match="blocks from 20 unmapped"):
        g4_rows(tp, (track, root), (("TRACK",), ("IDX", "IDX")))
    with pytest.raises(ValueError, match="cannot hold offsets"):
        g4_rows(np.array([[2, 9, 10]]), (track, root[:1]), (("TRACK",), ("IDX",)))


@pytest.mark.slow  # a whole trace on a g4 layout
def test_g4_drive_simulates_request_by_request(disksim_dir):
    params = drive_parameters(load_disksim_drive(disksim_dir / "G4_4TB"))
    revolution_s = 60.0 / 7200
    total = params.layout.total_blocks
    lbn = np.array([0, 5_000_000_000, total - 16])
    blocks = np.array([3072, 64, 16])
    result = simulate_requests(params, np.zeros(3, bool), lbn, blocks, np.full(3, 0.05))
    # a whole track from its first block at angle 0: no wait, one revolution of media
    assert result.latency_s[0] == 0.0
    assert result.media_s[0] == pytest.approx(revolution_s, rel=1e-12)
    assert np.all(np.isfinite(result.service_s)) and np.all(result.service_s > 0)
    # the blocks after the first track are on the next cylinder, same head (serpentine):
    # from (0, 0), a one-cylinder seek (a g1 order would switch heads instead)
    next_track = simulate_requests(params, [False], [3072], [3072], [0.0])
    assert next_track.seek_s[0] == pytest.approx(params.seek_by_distance_s[1], rel=1e-12)
    assert next_track.media_s[0] == pytest.approx(revolution_s, rel=1e-12)
