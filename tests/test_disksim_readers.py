"""Readers of DiskSim's files (diskmodel.data) and their model objects (diskmodel.model.disksim_drives.convert),
checked against the real files of the bundled data/disksim."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from diskmodel.data.disksim import read_diskspecs, read_parv, read_trace
from diskmodel.data.disksim.model_file import G1Layout, G4Layout, MechModel, read_model_file, read_seek_table
from diskmodel.data.disksim.syntax import DiskSimFormatError, parse_text
from diskmodel.model import Disk, TableSeek, load_preset
from diskmodel.model.disksim_drives.convert import (block_transfer_time_s, load_disksim_drive, seek_curve, seek_time_s,
                                                    table_seek)
from diskmodel.model.drive.seek import two_piece_seek_time_s

from _disksim_model_text import G1_LAYOUT, HPL, model_text


def test_hp_c2247a_model(disksim_dir):
    model = read_model_file(disksim_dir / "hp_c2247a" / "hp_c2247a_validate.model")
    assert (model.surfaces, model.cylinders, model.block_count) == (13, 2051, 2054864)
    assert isinstance(model.layout, G1Layout)
    assert len(model.zones) == 8
    first = model.zones[0]
    assert (first.first_cylinder, first.last_cylinder, first.blocks_per_track) == (0, 558, 96)
    assert (first.empty_space_at_front_sectors, first.track_skew_sectors, first.cylinder_skew_sectors) == (1632, 14, 32)
    assert first.spares == 325 and first.slips[:3] == (468, 526, 1204) and len(first.slips) == 12
    assert model.zones[1].first_block_offset_sectors == 14
    assert model.layout.sparing_scheme == 1
    mech = model.mech
    assert mech.seek_type == "hplplus10" and mech.rpm == 5400
    assert mech.head_switch_s == pytest.approx(0.89e-3)
    assert mech.write_settle_s == pytest.approx(0.65e-3)
    assert mech.hpl_seek == (300, 3.81, 0.33, 7.75, 0.0059, -1)
    # HPL: a + b sqrt(d) below the knee, c + e d beyond, the first ten from the table.
    times = seek_time_s(mech, np.array([0, 1, 10, 100, 300, 1000]))
    expected = [0, 2.89e-3, 4.99e-3, (3.81 + 0.33 * 10) * 1e-3, (7.75 + 0.0059 * 300) * 1e-3,
                (7.75 + 5.9) * 1e-3]
    np.testing.assert_allclose(times, expected, rtol=1e-12)


def test_g4_seek_table_and_layout(disksim_dir):
    folder = disksim_dir / "G4_4TB"
    table = read_seek_table(folder / "G4_LBA_64bit_4T.seeks")
    assert table.points == 1792
    assert table.distance_cylinders[0] == 1 and table.read_time_s[0] == pytest.approx(1.8e-3)
    assert table.distance_cylinders[-1] == 353181 and table.read_time_s[-1] == pytest.approx(15.7e-3)
    model = read_model_file(folder / "G4_LBA_64bit_4T.model")
    assert (model.surfaces, model.cylinders, model.block_count) == (10, 310194, 7725673570)
    assert isinstance(model.layout, G4Layout)
    assert model.layout.track_patterns == 60
    assert model.layout.tp[0].tolist() == [0, 3071, 3072]
    assert len(model.layout.idx) == 60          # 59 zone sections and the root
    assert model.layout.idx[0].shape == (20, 10)
    assert model.layout.idx_child_types[-1][0] == "IDX"


def test_dual_seek_table(disksim_dir):
    path = disksim_dir / "maxtor300g" / "maxtor300g_dual.seek"
    table = read_seek_table(path)
    assert table.points == 350
    assert table.read_time_s[0] == pytest.approx(0.5257e-3)
    assert table.write_time_s[0] == pytest.approx(0.6757e-3)
    assert table.std_s[0] == pytest.approx(0.024385e-3)
    write = table_seek(table, curve="write")
    assert isinstance(write, TableSeek)
    assert write.seek_time_s(np.array([80000]))[0] == pytest.approx(9.7197e-3)
    with pytest.raises(ValueError, match="no write curve"):
        table_seek(read_seek_table(disksim_dir / "atlas10k" / "atlas10k.seek"), curve="write")


def test_extracted_seek_is_linear_and_extrapolated(disksim_dir):
    model = read_model_file(disksim_dir / "barracuda" / "barracuda.model")
    table = model.mech.seek_table
    assert table.distance_cylinders[-1] == 4986 and model.cylinders == 5172
    d0, d1 = table.distance_cylinders[-2:]
    t0, t1 = table.read_time_s[-2:]
    beyond = seek_time_s(model.mech, np.array([5171]))[0]
    assert beyond == pytest.approx(t0 + (5171 - d0) * (t1 - t0) / (d1 - d0))
    seek = seek_curve(model)
    assert seek.max_distance_cylinders == 5171


def test_diskspecs_and_parv(disksim_dir):
    specs = read_diskspecs(disksim_dir / "hp_c2247a" / "hp_c2247a.diskspecs")
    assert specs.model_source.filename == "hp_c2247a_validate.model"
    assert specs.buffer_segments == 2 and specs.segment_size_blocks == 256
    assert specs.max_read_ahead_blocks == 128 and specs.fast_write_level == 0
    assert specs.command_overhead_s[("read", "hit", "read")] == pytest.approx(0.95343e-3)
    assert specs.command_overhead_s[("read", "miss", "write")] == pytest.approx(0.55821e-3)
    assert specs.read_completion_s == pytest.approx(0.05665e-3)
    parv = read_parv(disksim_dir / "hp_c2247a" / "hp_c2247a.parv")
    assert parv.disk_spec == "HP_C2247A_validate" and parv.disk_bus == "bus1"
    assert parv.disk_bus_transfer_s == pytest.approx((0.17010e-3, 0.18686e-3))
    atlas = read_diskspecs(disksim_dir / "atlas10k" / "atlas10k.diskspecs")
    assert atlas.fast_write_level == 2 and atlas.bulk_sector_transfer_s == pytest.approx(0.099e-3)
    assert atlas.buffer_segments == 10 and atlas.segment_size_blocks == 374


def test_load_drive_gives_a_disk(disksim_dir):
    drive = load_disksim_drive(disksim_dir / "hp_c2247a")
    assert isinstance(drive.disk, Disk)
    assert drive.disk.geometry.surfaces == 13 and drive.disk.geometry.cylinders == 2051
    assert drive.disk.geometry.zone_sectors_per_track.tolist() == [96, 92, 88, 84, 80, 72, 64, 56]
    assert drive.disk.rpm == 5400 and drive.disk.head_switch_s == pytest.approx(0.89e-3)
    assert block_transfer_time_s(drive) == pytest.approx((0.17010e-3, 0.18686e-3))
    trace = drive.read_trace()
    assert len(trace) == 9999
    assert trace.lbn[0] == 564347 and trace.blocks[0] == 2 and not trace.is_write[0]
    assert trace.service_s[0] == pytest.approx(14.09537e-3)
    assert trace.interarrival_s[0] == pytest.approx(13.87627e-3)
    assert trace.is_write[3] and trace.label[3] == "Doub"


@pytest.mark.parametrize("folder", ["atlas10k", "atlas_III", "barracuda", "cheetah4LP", "ibm18es", "hp_c2490a"])
def test_every_traced_drive_loads(disksim_dir, folder):
    drive = load_disksim_drive(disksim_dir / folder)
    assert drive.disk.geometry.cylinders >= drive.model.cylinders
    # Spares make the zones hold more sectors than the drive exports.
    assert drive.disk.geometry.total_sectors >= drive.model.block_count
    assert len(drive.read_trace()) > 9000


MALFORMED = [
    ("bad.model", "dm_disk X {\n   Number of data surfaces = 4,\n   Number of cylinders 100,\n}\n",
     read_model_file, r"bad\.model:3: expected '='"),
    ("open.diskspecs", "disksim_disk D {\n  Segment size (in blks) = 12,\n  Zones = [ 1, 2,\n",
     read_diskspecs, r"open\.diskspecs:\d+: unterminated list"),
    ("x.seek", "Seek distances measured: 3\n1, 1.0\n2, abc\n3, 2.0\n", read_seek_table, r"x\.seek:3: not a number"),
    ("x.seek", "2, 1.0\n3, 1.5\n", read_seek_table,
     r"x\.seek:1: a seek file without the header .* must start at distance 1 \(got 2\): DiskSim 4\.0 reads before"),
    ("x.seek", "Seek distances: 2\n1, 1.0\n3, 1.5\n", read_seek_table, r"x\.seek:1: expected the header"),
    ("t.trace", "R Miss 10 2 100.0 50.0\nX Hit 12 2 100.0 50.0\n", read_trace, r"t\.trace:2: first field must be R or W"),
    ("m.model", "dm_disk M {\n  Number of data surfaces = 2,\n  Block count = 10\n}\n", read_model_file,
     r"m\.model:1: .*lacks the parameter 'Layout Model'"),
    # DiskSim's loader takes the first HPL value as whole cylinders >= 0
    ("hpl.model", model_text(HPL.format("299.5"), G1_LAYOUT), read_model_file,
     r"hpl\.model:9: the first HPL seek equation value is a distance in whole cylinders, >= 0 \(got 299.5\)"),
    ("hpl.model", model_text(HPL.format("-3"), G1_LAYOUT), read_model_file, r"hpl\.model:9: .*\(got -3\)"),
    # DiskSim's g1 loaders know two skew units and stop on any other word (ddbg_assert)
    ("units.model", model_text(HPL.format("300"), G1_LAYOUT.replace("Zones", "Skew units = degrees,\n    Zones")),
     read_model_file, r"units\.model:14: Skew units must be sectors or revolutions \(got 'degrees'\)"),
    ("units.model", model_text(HPL.format("300"), G1_LAYOUT.replace("Blocks per track = 100",
                                                                     "Blocks per track = 100, Skew units = turns")),
     read_model_file, r"units\.model:15: Skew units must be sectors or revolutions \(got 'turns'\)"),
    # whitespace the tokenizer's space class does not name (a no-break space) is refused, not skipped
    ("nbsp.diskspecs", "disksim_disk D {\n  Segment size (in blks) = 12\u00a0,\n}\n", read_diskspecs,
     r"nbsp\.diskspecs:2: unexpected character '\\xa0'"),
    # a g4 root entry covering no cylinder would give no zone
    ("g4.model", model_text(HPL.format("300"), "dm_layout_g4 {\n    TP = [ 0, 99, 100 ],\n"
                                               "    IDX = [ [ 0, 0, 0, 100, 1, 100, 1000, 0, TRACK, 0, 0 ] ]\n  }"),
     read_model_file, r"g4\.model:13: the root IDX section \(the last\) must list entries with positive"),
]


@pytest.mark.parametrize("name, text, reader, message", MALFORMED)
def test_malformed_file_names_file_and_line(tmp_path, name, text, reader, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DiskSimFormatError, match=message):
        reader(path)


def test_parser_syntax():
    items = parse_text("disksim_bus B { Read block transfer time = 0.5, # comment\n"
                       " Sizes = [ exponential, 0.0, 8.0 ], Inner = t { a = 1 } }\nsource other.x\n")
    block = items[0]
    assert block.get("read  block transfer TIME") == 0.5
    assert block.get("Sizes") == ["exponential", 0.0, 8.0]
    assert block.get("Inner").get("a") == 1
    assert items[1].kind == "source" and items[1].value.filename == "other.x"


def test_g4_drive_gives_an_approximate_disk(disksim_dir):
    drive = load_disksim_drive(disksim_dir / "G4_4TB")
    geometry = drive.disk.geometry
    # 59 root runs of 3072..1536 sectors per track merge into zones; 303104 cylinders are mapped
    assert geometry.surfaces == 10 and geometry.cylinders == 303104
    assert geometry.zone_sectors_per_track[0] == 3072
    assert geometry.total_sectors == 7542225920            # the blocks the g4 index maps
    assert any(name == "geometry" for name, _ in drive.disk.estimates)
    rates = drive.disk.zone_rates_bytes_per_s()
    assert rates[0] == pytest.approx(3072 * 512 / (60 / 7200))
    # the per-request simulation maps the g4 tables themselves (golden rows: tests/test_disksim_mapping_golden.py)
    assert drive.simulation_parameters().layout.block_count == 7542225920


def test_hpl_seek_is_eq_7_with_disksims_strict_knee(disksim_dir):
    mech = read_model_file(disksim_dir / "hp_c2247a" / "hp_c2247a_validate.model").mech
    # V1 = 300: DiskSim's `dist < 300` puts 299 on the square-root branch and 300 on the line.
    np.testing.assert_allclose(seek_time_s(mech, np.array([299, 300])),
                               [(3.81 + 0.33 * np.sqrt(299)) * 1e-3, (7.75 + 0.0059 * 300) * 1e-3], rtol=1e-12)
    # Beyond the first ten: eq. (7) with knee 299 (the last square-root distance), which is also
    # the hp_c2247a preset's curve.
    distance = np.arange(11, 2051)
    expected = two_piece_seek_time_s(distance, 3.81e-3, 0.33e-3, 7.75e-3, 0.0059e-3, 299)
    np.testing.assert_allclose(seek_time_s(mech, distance), expected, rtol=1e-12)
    np.testing.assert_allclose(load_preset("hp_c2247a").seek_time_s(distance), expected, rtol=1e-12)


def test_plain_hpl_single_cylinder_seek_and_whole_distances(tmp_path):
    path = tmp_path / "hpl.model"
    path.write_text(model_text(HPL.format("300"), G1_LAYOUT))
    mech = read_model_file(path).mech
    assert mech.seek_type == "hpl" and mech.hpl_seek == (300, 3.81, 0.33, 7.75, 0.0059, -1)
    # DiskSim's manual: V6 = -1 puts distance 1 on the square-root branch
    np.testing.assert_allclose(seek_time_s(mech, [0, 1, 299, 300], disksim_code=False),
                               [0.0, 4.14e-3, (3.81 + 0.33 * np.sqrt(299)) * 1e-3, 9.52e-3], rtol=1e-12)
    # DiskSim 4.0's code: the square-root branch is never taken (hpseek[0] is never set), every
    # distance >= 1 is on the line; DiskSim's own mech_seek tool prints 7.7559 ms (+ 0.65 write
    # settle) for one cylinder of hp_c2247a's values
    np.testing.assert_allclose(seek_time_s(mech, [0, 1, 299, 300]),
                               [0.0, 7.7559e-3, (7.75 + 0.0059 * 299) * 1e-3, 9.52e-3], rtol=1e-12)
    # V6 is the one-cylinder seek in both readings, not "Single cylinder seek time"
    own_single = MechModel("trackSwitchPlusRotation", "hpl", 1e-3, 0.0, 6000.0, 0.0, single_cylinder_seek_s=2.5e-3,
                           hpl_seek=(300, 3.81, 0.33, 7.75, 0.0059, 1.5))
    np.testing.assert_allclose(seek_time_s(own_single, [1, 2], disksim_code=False),
                               [1.5e-3, (3.81 + 0.33 * np.sqrt(2)) * 1e-3], rtol=1e-12)
    np.testing.assert_allclose(seek_time_s(own_single, [1, 2]), [1.5e-3, (7.75 + 0.0059 * 2) * 1e-3], rtol=1e-12)
    # DiskSim's seek functions take whole distances; the knee conversion relies on it
    with pytest.raises(ValueError, match="distance_cylinders must be whole numbers"):
        seek_time_s(mech, [299.5])


def test_reading_disksim_files_never_imports_the_model(disksim_dir):
    code = ("import sys\n"
            "from diskmodel.data.disksim import read_drive_folder\n"
            "files = read_drive_folder(sys.argv[1])\n"
            "assert len(files.read_trace()) == 9999 and files.model.mech.seek_type == 'hplplus10'\n"
            "print(sorted(m for m in sys.modules if m.startswith('diskmodel.model')))\n")
    run = subprocess.run([sys.executable, "-c", code, str(disksim_dir / "hp_c2247a")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
