"""DiskSim's parameters as the readers (diskmodel.data) and the model's conversion
(diskmodel.model.disksim_drives.convert) take them: sparing scheme 3, every parameter DiskSim defines
classified, what the simulation does not honour refused naming file, line and parameter, values outside
DiskSim's range, and the units and values DiskSim's loader reaches (tests/test_disksim_readers.py reads the
bundled files)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from diskmodel.data.disksim.model_file import read_model_file, read_seek_table
from diskmodel.data.disksim.syntax import DiskSimFormatError
from diskmodel.model.disksim_drives.convert import load_disksim_drive, seek_time_s

from _disksim_model_text import G1_LAYOUT, HPL, model_text


# ---------------------------------------------------------------------------
# Sparing scheme 3, and what the simulation does not honour
# ---------------------------------------------------------------------------

def test_sparing_scheme_3_spares_at_the_end_of_every_track():
    from diskmodel.model.simulator.mapping import ZoneLayout

    # DiskSim's g1_ltop_sectpertrackspare: 10 sectors per track, 2 spare, 2 surfaces, 3 cylinders;
    # slip 13 = track 1, sector 3. Hand-computed.
    layout = ZoneLayout(surfaces=2, first_cylinder=[0], last_cylinder=[2], sectors_per_track=[10],
                        first_block_offset_sectors=[0], track_skew_sectors=[1], cylinder_skew_sectors=[2],
                        empty_space_sectors=[0], spares=[2], slips=(np.array([13]),), sparing_scheme=3)
    assert layout.total_blocks == 3 * 2 * (10 - 2)
    cylinder, head, sector, angle, _ = layout.lbn_to_pbn(np.array([0, 7, 8, 10, 11, 16]))
    assert cylinder.tolist() == [0, 0, 0, 0, 0, 1]
    assert head.tolist() == [0, 0, 1, 1, 1, 0]
    # lbn 8..10 on track 1 at sectors 0, 2, then the slip at sector 3 moves lbn 11 to sector 4
    assert sector.tolist() == [0, 7, 0, 2, 4, 0]
    # skew: track switches * 1 + cylinder switches * 2, plus one per slip on earlier tracks (lbn 16: track 2)
    assert angle[3] == pytest.approx((1 + 2) / 10)
    assert angle[5] == pytest.approx(((1 * 1 + 2) + 1) / 10)


def test_what_the_simulation_does_not_honour_is_an_error_naming_file_line_parameter(disksim_dir, tmp_path):
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive

    folder = tmp_path / "barracuda"
    shutil.copytree(disksim_dir / "barracuda", folder)
    specs = next(folder.glob("*.diskspecs"))
    original = specs.read_text()
    specs.write_text(original.replace("Preseeking level = 0,", "Preseeking level = 3,"))
    with pytest.raises(DiskSimFormatError, match=r"barracuda\.diskspecs:\d+: Preseeking level = 3 is not honoured"):
        drive_parameters(load_disksim_drive(folder))
    lines = original.splitlines()
    at = next(i for i, line in enumerate(lines) if "Print stats" in line)
    lines.insert(at, "   Frobnicate the platters = 1,")
    specs.write_text("\n".join(lines) + "\n")
    # DiskSim 4.0's loader warns on a key it does not define and ignores it (hp_c2247a: its times
    # unchanged); so does the simulation
    with pytest.warns(UserWarning, match=rf"barracuda\.diskspecs:{at + 1}: parameter 'Frobnicate the "
                                         r"platters' is not a DiskSim 4\.0 disksim_disk parameter; ignored"):
        params = drive_parameters(load_disksim_drive(folder))
    from diskmodel.model.disksim_drives.convert import simulate_trace
    base = load_disksim_drive(disksim_dir / "barracuda")
    trace = base.read_trace().head(200)
    np.testing.assert_array_equal(simulate_trace(params, trace).service_s,
                                  simulate_trace(drive_parameters(base), trace).service_s)


#: The 65 parameters of DiskSim 4.0's disksim_disk block, in the order of its src/modules/disk.modspec
DISKSIM_DISK_KEYS = (
    "Model", "Scheduler", "Max queue length", "Bulk sector transfer time", "Segment size (in blks)",
    "Number of buffer segments", "Print stats", "Per-request overhead time", "Time scale for overheads",
    "Hold bus entire read xfer", "Hold bus entire write xfer", "Allow almost read hits",
    "Allow sneaky full read hits", "Allow sneaky partial read hits", "Allow sneaky intermediate read hits",
    "Allow read hits on write data", "Allow write prebuffering", "Preseeking level", "Never disconnect",
    "Avg sectors per cylinder", "Maximum number of write segments", "Use separate write segment",
    "Low (write) water mark", "High (read) water mark", "Set watermark by reqsize", "Calc sector by sector",
    "Enable caching in buffer", "Buffer continuous read", "Minimum read-ahead (blks)",
    "Maximum read-ahead (blks)", "Read-ahead over requested", "Read-ahead on idle hit", "Read any free blocks",
    "Fast write level", "Combine seq writes", "Stop prefetch in sector", "Disconnect write if seek",
    "Write hit stop prefetch", "Read directly to buffer", "Immed transfer partial hit",
    "Read hit over. after read", "Read hit over. after write", "Read miss over. after read",
    "Read miss over. after write", "Write hit over. after read", "Write hit over. after write",
    "Write miss over. after read", "Write miss over. after write", "Read completion overhead",
    "Write completion overhead", "Data preparation overhead", "First reselect overhead",
    "Other reselect overhead", "Read disconnect afterread", "Read disconnect afterwrite",
    "Write disconnect overhead", "Extra write disconnect", "Extradisc command overhead",
    "Extradisc disconnect overhead", "Extradisc inter-disconnect delay", "Extradisc 2nd disconnect overhead",
    "Extradisc seek delta", "Minimum seek delay", "Immediate buffer read", "Immediate buffer write",
)


def test_every_parameter_disksim_defines_is_classified_and_only_those():
    # a key DiskSim does not define is only warned about (above), so a real one missing from
    # disksim_support's groups would be dropped with a warning instead of honoured or refused
    from diskmodel.data.disksim.syntax import _normalise_key
    from diskmodel.model.disksim_drives import honoured as disksim_support
    assert len(DISKSIM_DISK_KEYS) == 65
    disksim = {_normalise_key(k) for k in DISKSIM_DISK_KEYS}
    assert sorted(disksim - disksim_support._KNOWN) == []
    assert sorted(disksim_support._KNOWN - disksim) == []


@pytest.mark.parametrize("disksim_code", [True, False])
@pytest.mark.parametrize("folder", ["atlas10k", "atlas_III", "barracuda", "cheetah4LP", "ibm18es", "hp_c2247a",
                                    "hp_c2490a"])   # (maxtor300g: not compared here; its queue policy 21 is no cache key)
def test_the_disk_and_the_simulation_read_one_cache(disksim_dir, folder, disksim_code):
    """One translation of a DiskSim drive's buffer: the Disk's drive_cache, bridged by
    DriveParameters.from_disk, gives the simulation the buffer drive_parameters gives it."""
    from diskmodel.model.disksim_drives.convert import drive_parameters
    from diskmodel.model.drive.parameters import DriveParameters
    drive = load_disksim_drive(disksim_dir / folder, disksim_code=disksim_code)
    # (the Disk's cache reads "Read any free blocks" as DiskSim 4.0 runs it or as the manual
    # defines it, not as the mended g1_access_block's immediate access: disksim_access_block_bug)
    direct = drive_parameters(drive, disksim_code=disksim_code, disksim_access_block_bug=True)
    bridged = DriveParameters.from_disk(drive.disk)
    for name in ("buffer_segments", "segment_size_blocks", "read_ahead_scheme", "read_ahead_over_requested",
                 "read_ahead_on_idle_hit", "fast_write_level", "read_hits_on_write_data", "separate_write_segment",
                 "read_any_free_blocks", "read_watermark"):
        assert getattr(bridged, name) == getattr(direct, name), name
    if not direct.min_read_ahead_blocks:   # drive_parameters raises a maximum below the minimum
        assert bridged.max_read_ahead_blocks == direct.max_read_ahead_blocks


def test_disksim_code_reading_of_the_cache(disksim_dir):
    """atlas10k sets "Read any free blocks" 1 (no effect in DiskSim's code); the code reading drops it."""
    code = load_disksim_drive(disksim_dir / "atlas10k").disk.drive_cache
    manual = load_disksim_drive(disksim_dir / "atlas10k", disksim_code=False).disk.drive_cache
    assert manual.read_any_free_blocks and not code.read_any_free_blocks
    with pytest.raises(ValueError, match="read_ahead_bytes=None .* needs a read_ahead_scheme"):
        code.evolve(read_ahead_bytes=None, read_ahead_scheme=0)
    unbounded = code.evolve(read_ahead_bytes=None)
    assert "no maximum" in unbounded.describe()


def test_water_mark_outside_disksims_range_names_file_and_line(disksim_dir, tmp_path):
    import shutil
    folder = tmp_path / "cheetah4LP"
    shutil.copytree(disksim_dir / "cheetah4LP", folder)
    specs = next(folder.glob("*.diskspecs"))
    text = specs.read_text()
    start = text.index("High (read) water mark")
    end = text.index("\n", start)
    specs.write_text(text[:start] + "High (read) water mark = 1.5," + text[end:])
    line = text[:start].count("\n") + 1
    with pytest.raises(DiskSimFormatError, match=rf"{specs.name}:{line}: 'High \(read\) water mark' must lie in "
                                                 r"\[0, 1\] \(got 1.5\)"):
        load_disksim_drive(folder)


@pytest.mark.parametrize("old, new, where", [
    ("type = 1,\nArbitration type = 1,\nArbitration time = 0.0,\nRead block transfer time = 0.17010",
     "type = 2,\nArbitration type = 1,\nArbitration time = 0.0,\nRead block transfer time = 0.17010",
     "type = 2 in disksim_bus BUS1"),
    ("type = 1,\nScale for delays", "type = 3,\nScale for delays", "type = 3 in disksim_ctlr CTLR0"),
    ("type = 1,\nScale for delays", "type = 2,\nScale for delays", "type = 2 in disksim_ctlr CTLR0"),
    # DiskSim 4.0's own range: >= 0, -1, -2, -3 (iodriver.modspec)
    ("Constant access time = 0.0", "Constant access time = -0.5", "Constant access time = -0.5 in disksim_iodriver DRIVER0"),
])
def test_a_parv_adding_time_the_simulation_does_not_is_an_error(disksim_dir, tmp_path, old, new, where):
    """The driver, buses and controller on the way to the disk: a value that adds time in
    DiskSim 4.0 where the simulation does not follow it (disksim_support.PARV_ONLY_VALUES,
    parv_host_path) names the .parv's line and parameter. (The constant access time, the disk's
    bus's arbitration time and the controller's scale for delays are followed: the variants
    hp_c2247a_parv_* and cheetah4LP_parv_* of tests/golden/disksim_variants.)"""
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters
    folder = tmp_path / "hp_c2247a"
    shutil.copytree(disksim_dir / "hp_c2247a", folder)
    parv = folder / "hp_c2247a.parv"
    text = parv.read_text()
    assert text.count(old) >= 1, old
    edited = text.replace(old, new, 1)
    parv.write_text(edited)
    first_changed = next(i for i, (a, b) in enumerate(zip(text.splitlines(), edited.splitlines())) if a != b) + 1
    with pytest.raises(DiskSimFormatError, match=rf"hp_c2247a\.parv:{first_changed}: {where} is not honoured"):
        drive_parameters(load_disksim_drive(folder))


def test_host_path_delays_with_fast_writes_that_never_disconnect_are_an_error(disksim_dir, tmp_path):
    """The disk's bus's arbitration and the controller's delays with "Never disconnect" 1 and
    fast writes are not followed (cheetah4LP on synthetic_queued_writes_far_reads, arbitration 0.2
    and scale 0.5: 531 of DiskSim's 600 times agree; without fast writes, hp_c2247a's 600 do): an
    error naming the diskspecs' line."""
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters
    folder = tmp_path / "cheetah4LP"
    shutil.copytree(disksim_dir / "cheetah4LP", folder)
    parv = folder / "cheetah4LP.parv"
    parv.write_text(parv.read_text().replace("Scale for delays = 0.0", "Scale for delays = 0.5"))
    specs = folder / "cheetah4LP.diskspecs"
    text = specs.read_text()
    assert "Never disconnect = 0" in text
    specs.write_text(text.replace("Never disconnect = 0", "Never disconnect = 1"))
    line = next(i for i, row in enumerate(text.splitlines()) if "Never disconnect" in row) + 1
    drive = load_disksim_drive(folder)
    with pytest.raises(DiskSimFormatError, match=rf"cheetah4LP\.diskspecs:{line}: Never disconnect = 1 with fast "
                                                 r"writes is not honoured"):
        drive_parameters(drive)
    parv.write_text(parv.read_text().replace("Scale for delays = 0.5", "Scale for delays = 0.0"))
    assert drive_parameters(load_disksim_drive(folder)).never_disconnect


def test_a_read_larger_than_a_segment_with_controller_delays_is_an_error(disksim_dir, tmp_path):
    """Reads larger than a segment with the controller's delays are not followed (atlas_III on
    synthetic_big_transfers: scale 0.1, 353 of DiskSim's 398 times agree; with the arbitration
    0.1 alone all 398 do): simulate_requests refuses the first such read."""
    from diskmodel.model.disksim_drives.convert import drive_parameters
    from diskmodel.model.simulator.simulate import simulate_requests
    params = drive_parameters(load_disksim_drive(disksim_dir / "atlas_III")).evolve(controller_delay_s=1e-4)
    size = params.segment_size_blocks
    with pytest.raises(ValueError, match=rf"request 1: a read of {size + 1} blocks, larger than a segment"):
        simulate_requests(params, np.array([True, False]), np.array([0, 1000]), np.array([size + 1, size + 1]),
                          np.zeros(2))
    simulate_requests(params, np.array([True, False]), np.array([0, 1000]), np.array([size + 1, size]), np.zeros(2))
    simulate_requests(params.evolve(controller_delay_s=0.0, bus_arbitration_s=1e-4), np.array([True, False]),
                      np.array([0, 1000]), np.array([size + 1, size + 1]), np.zeros(2))


def test_a_controller_type_disksim_fails_on_says_so(disksim_dir, tmp_path):
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters
    folder = tmp_path / "hp_c2247a"
    shutil.copytree(disksim_dir / "hp_c2247a", folder)
    parv = folder / "hp_c2247a.parv"
    parv.write_text(parv.read_text().replace("type = 1,\nScale for delays", "type = 2,\nScale for delays"))
    with pytest.raises(DiskSimFormatError, match=r"type = 2 in disksim_ctlr CTLR0 .*DiskSim 4\.0 itself fails"):
        drive_parameters(load_disksim_drive(folder))


def test_driver_traced_queue_times_add_nothing_to_a_validate_trace(disksim_dir, tmp_path):
    """The driver's "Constant access time" = -2 starts each request at its traced queue time, 0 in a
    validate trace: DiskSim 4.0's times are the bundled drive's (hp_c2247a, first 400 requests:
    tests/golden/disksim_variants/hp_c2247a_traced_queue_times.csv; 2000 of 2000 checked), so it
    is accepted and simulated as 0."""
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters, simulate_trace
    golden = Path(__file__).parent / "golden"
    disksim_ms = np.loadtxt(golden / "disksim_variants" / "hp_c2247a_traced_queue_times.csv", delimiter=",",
                            skiprows=1)[:, 1]
    bundled_ms = np.loadtxt(golden / "disksim_service_times" / "hp_c2247a.csv", delimiter=",", skiprows=1)[:, 1]
    np.testing.assert_array_equal(disksim_ms, bundled_ms)
    assert disksim_ms[0] == pytest.approx(21.649335, abs=1e-6)
    folder = tmp_path / "hp_c2247a"
    shutil.copytree(disksim_dir / "hp_c2247a", folder)
    parv = folder / "hp_c2247a.parv"
    parv.write_text(parv.read_text().replace("Constant access time = 0.0", "Constant access time = -2.0"))
    drive = load_disksim_drive(folder)
    ours_ms = simulate_trace(drive_parameters(drive), drive.read_trace().head(400)).service_s * 1e3
    assert (np.abs(ours_ms - disksim_ms) < 0.01).all()


def test_parv_values_without_effect_in_disksim_are_accepted(disksim_dir, tmp_path):
    """Another bus's block times, the pass-thru controller's bulk sector time and the
    arbitration type changed none of DiskSim 4.0's times: accepted, and the simulation's
    times stay those of the unchanged drive."""
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters, simulate_trace
    folder = tmp_path / "hp_c2247a"
    shutil.copytree(disksim_dir / "hp_c2247a", folder)
    parv = folder / "hp_c2247a.parv"
    text = parv.read_text()
    for old, new in (("Read block transfer time = 0.0,\nWrite block transfer time = 0.0,",
                      "Read block transfer time = 0.5,\nWrite block transfer time = 0.5,"),
                     ("Bulk sector transfer time = 0.0,", "Bulk sector transfer time = 0.5,"),
                     ("Arbitration type = 1", "Arbitration type = 2")):
        assert old in text, old
        text = text.replace(old, new)
    parv.write_text(text)
    changed, base = load_disksim_drive(folder), load_disksim_drive(disksim_dir / "hp_c2247a")
    trace = base.read_trace().head(300)
    assert np.array_equal(simulate_trace(drive_parameters(changed), trace).service_s,
                          simulate_trace(drive_parameters(base), trace).service_s)


@pytest.mark.parametrize("text, message", [
    ("Access time type = trackSwitchPlusRotation", "Access time type 'fastest' is not one of DiskSim's"),
    ("Percent error in rpms = 0.000000", r"Percent error in rpms must lie in \[0, 100\] \(got 150\)"),
])
def test_mechanics_outside_disksims_values_name_file_and_line(disksim_dir, tmp_path, text, message):
    import shutil
    folder = tmp_path / "hp_c2247a"
    shutil.copytree(disksim_dir / "hp_c2247a", folder)
    model = folder / "hp_c2247a_validate.model"
    original = model.read_text()
    assert text in original
    bad = text.split("=")[0] + ("= fastest" if "Access" in text else "= 150")
    model.write_text(original.replace(text, bad))
    line = original[:original.index(text)].count("\n") + 1
    with pytest.raises(DiskSimFormatError, match=rf"hp_c2247a_validate\.model:{line}: {message}"):
        read_model_file(model)


def test_hpl_sixth_value_may_be_negative_as_in_disksim(tmp_path):
    """DiskSim 4.0's loader takes any V6 but -1 as the one-cylinder seek, a negative one too, which
    dm_seek_time_g1's max(head switch, seek) makes 0 on one surface: hp_c2247a with seek type hpl and
    V6 = -0.5 changes 660 of DiskSim's 2000 times from V6 = -1 (tests/golden/disksim_variants'
    hp_c2247a_hpl_v6_negative and hp_c2247a_hpl; every one of ours agrees there)."""
    golden = Path(__file__).parent / "golden" / "disksim_variants"
    negative, none = (np.loadtxt(golden / f"{name}.csv", delimiter=",", skiprows=1)[:, 1]
                      for name in ("hp_c2247a_hpl_v6_negative", "hp_c2247a_hpl"))
    assert (np.abs(negative - none) > 1e-6).sum() == 660
    path = tmp_path / "hpl.model"
    path.write_text(model_text(HPL.format("300").replace("-1", "-2"), G1_LAYOUT))
    mech = read_model_file(path).mech
    assert mech.hpl_seek[5] == -2
    np.testing.assert_array_equal(seek_time_s(mech, np.array([0.0, 1.0])), [0.0, 0.0])


@pytest.mark.parametrize("anchor", ["      Seek type = extracted,", "            Blocks per track = "])
def test_a_key_disksim_does_not_define_in_a_model_file_names_file_and_line(disksim_dir, tmp_path, anchor):
    """Unknown keys in the mechanics or a zone are errors, as for DiskSim's own loader, never ignored."""
    import shutil
    folder = tmp_path / "ibm18es"
    shutil.copytree(disksim_dir / "ibm18es", folder)
    model = folder / "ibm18es.model"
    text = model.read_text()
    at = text.index(anchor)
    indent = anchor[:len(anchor) - len(anchor.lstrip())]
    model.write_text(text[:at] + f"{indent}Frobnicate = 1,\n" + text[at:])
    line = text[:at].count("\n") + 1
    with pytest.raises(DiskSimFormatError, match=rf"ibm18es\.model:{line}: 'Frobnicate' is not a parameter of a "
                                                 r"DiskSim dm_(mech_g1|layout_g1_zone) block"):
        load_disksim_drive(folder)


def test_combine_seq_writes_outside_disksims_range_is_refused(disksim_dir, tmp_path):
    """DiskSim's own range of "Combine seq writes" is 0..1 (disk.modspec: RANGE(i,0,1); its
    disk_postpass_perdisk stops on any other value); both are simulated
    (tests/test_disksim_options.py), another value names the file, line and parameter."""
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters
    folder = tmp_path / "cheetah4LP"
    shutil.copytree(disksim_dir / "cheetah4LP", folder)
    specs = folder / "cheetah4LP.diskspecs"
    text = specs.read_text()
    specs.write_text(text.replace("Combine seq writes = 1,", "Combine seq writes = 0,"))
    assert not drive_parameters(load_disksim_drive(folder)).combine_seq_writes
    specs.write_text(text.replace("Combine seq writes = 1,", "Combine seq writes = 2,"))
    with pytest.raises(DiskSimFormatError, match=r"cheetah4LP\.diskspecs:52: Combine seq writes = 2 is not "
                                                 r"honoured by the per-request simulation \(it implements 0, 1\)"):
        drive_parameters(load_disksim_drive(folder))


def _read_model(tmp_path, text):
    path = tmp_path / "m.model"
    path.write_text(text)
    return read_model_file(path)


def _g1_zone_units(tmp_path, layout_units: str, zone: str):
    """The one zone of a small g1 model with *layout_units* lines before its Zones and *zone*'s lines."""
    text = model_text(HPL.format("300"), "dm_layout_g1 {\n    LBN-to-PBN mapping scheme = 0,\n"
                       f"    Sparing scheme used = 0,\n{layout_units}    Zones = [ dm_layout_g1_zone {{\n"
                       f"      First cylinder number = 0, Last cylinder number = 9,\n{zone}\n    }} ]\n  }}")
    return _read_model(tmp_path, text).zones[0]


def test_g1_skew_units_as_disksims_loader_reaches_them(tmp_path):
    from diskmodel.model.disksim_drives.convert import g1_skews_sectors
    skews = "      Blocks per track = 100,\n      Offset of first block = 0.25,\n" \
            "      Skew for track switch = 12,\n      Skew for cylinder switch = 0.5"
    # the default: sectors, truncated to whole ones ((int)d * sector_width)
    zone = _g1_zone_units(tmp_path, "", skews)
    assert zone.skew_units == ("sectors",) * 3
    assert g1_skews_sectors(zone) == (0.0, 12.0, 0.0)
    # the layout's unit before its Zones reaches the zone (disk_load_zones); 12 revolutions are no turn
    # (dm_angle_dtoi drops whole turns), 0.25 and 0.5 of 2^32 in sector widths of 2^32 // 100 = 42949672
    zone = _g1_zone_units(tmp_path, "    Skew units = revolutions,\n", skews)
    assert zone.skew_units == ("revolutions",) * 3
    assert g1_skews_sectors(zone) == (1073741824 / 42949672, 0.0, 2147483648 / 42949672)
    # the zone's own unit acts on the values written after it only (lp_loadparams, the file's order)
    zone = _g1_zone_units(tmp_path, "", skews.replace("      Skew for track switch", "      Skew units = revolutions,\n"
                                                                              "      Skew for track switch"))
    assert zone.skew_units == ("sectors", "revolutions", "revolutions")
    assert g1_skews_sectors(zone) == (0.0, 0.0, 2147483648 / 42949672)
    # the layout's unit written after its Zones reaches no zone; a zone's own sectors override it
    text = model_text(HPL.format("300"), G1_LAYOUT.replace("} ]\n", "} ],\n    Skew units = revolutions\n"))
    assert _read_model(tmp_path, text).zones[0].skew_units == ("sectors",) * 3
    zone = _g1_zone_units(tmp_path, "    Skew units = revolutions,\n", "      Skew units = sectors,\n" + skews)
    assert zone.skew_units == ("sectors",) * 3
    # a negative value wraps (the conversion to DiskSim's unsigned angle): -0.25 is 0.75 of a turn
    zone = _g1_zone_units(tmp_path, "    Skew units = revolutions,\n", skews.replace("= 0.25", "= -0.25"))
    assert g1_skews_sectors(zone)[0] == 3221225472 / 42949672


def test_seek_file_header_optional_and_its_count_unchecked_as_in_disksim(disksim_dir, tmp_path):
    """DiskSim 4.0's dm_mech_g1_read_extracted_seek_curve takes a file without the header line (its
    first line a row) and a header whose count is not the number of rows: cheetah4LP's times are
    the bundled drive's either way (first 400 requests, tests/golden/disksim_variants'
    cheetah4LP_seek_no_header and _seek_header_50), and so is the table read here."""
    golden = Path(__file__).parent / "golden"
    bundled_ms = np.loadtxt(golden / "disksim_service_times" / "cheetah4LP.csv", delimiter=",", skiprows=1)[:, 1]
    # and a fourth column (a later release's write curve: each time + 1 ms here) changes nothing in
    # DiskSim 4.0, which scans "%d, %lf, %lf"; drive_parameters takes it with disksim_code=False only
    for name in ("cheetah4LP_seek_no_header", "cheetah4LP_seek_header_50", "cheetah4LP_seek_fourth_column"):
        disksim_ms = np.loadtxt(golden / "disksim_variants" / f"{name}.csv", delimiter=",", skiprows=1)[:, 1]
        np.testing.assert_array_equal(disksim_ms, bundled_ms)
    text = (disksim_dir / "cheetah4LP" / "cheetah4LP.seek").read_text()
    bundled = read_seek_table(disksim_dir / "cheetah4LP" / "cheetah4LP.seek")
    assert bundled.points == 103 and bundled.read_time_s[0] == pytest.approx(0.636e-3)
    for edited in (text.replace("Seek distances measured: 103\n", ""),
                   text.replace("Seek distances measured: 103", "Seek distances measured: 50")):
        path = tmp_path / "c.seek"
        path.write_text(edited)
        table = read_seek_table(path)
        np.testing.assert_array_equal(table.distance_cylinders, bundled.distance_cylinders)
        np.testing.assert_array_equal(table.read_time_s, bundled.read_time_s)
    import shutil

    from diskmodel.model.disksim_drives.convert import drive_parameters
    folder = tmp_path / "cheetah4LP"
    shutil.copytree(disksim_dir / "cheetah4LP", folder)
    shutil.copy(golden / "disksim_variants" / "cheetah4LP_dual.seek", folder / "cheetah4LP.seek")
    drive = load_disksim_drive(folder)
    code = drive_parameters(drive)
    np.testing.assert_array_equal(code.write_seek_by_distance_s, code.seek_by_distance_s)
    assert drive_parameters(drive, disksim_code=False).write_seek_by_distance_s[1] == pytest.approx(1.636e-3)


def test_more_than_ten_first_ten_seek_times_take_the_first_ten(disksim_dir, tmp_path):
    """DiskSim 4.0's do_1st10_seeks refuses fewer than ten values and takes the first ten of more:
    with an eleventh (9 ms) hp_c2247a's 400 times are the bundled ones
    (tests/golden/disksim_variants/hp_c2247a_first_ten_eleven.csv)."""
    import shutil
    golden = Path(__file__).parent / "golden"
    disksim_ms = np.loadtxt(golden / "disksim_variants" / "hp_c2247a_first_ten_eleven.csv", delimiter=",",
                            skiprows=1)[:, 1]
    bundled_ms = np.loadtxt(golden / "disksim_service_times" / "hp_c2247a.csv", delimiter=",", skiprows=1)[:, 1]
    np.testing.assert_array_equal(disksim_ms, bundled_ms)
    folder = tmp_path / "hp_c2247a"
    shutil.copytree(disksim_dir / "hp_c2247a", folder)
    model = folder / "hp_c2247a_validate.model"
    text = model.read_text()
    model.write_text(text.replace("         4.990000\n      ],", "         4.990000,\n         9.000000\n      ],"))
    mech = load_disksim_drive(folder).model.mech
    assert mech.first_ten_seek_s == load_disksim_drive(disksim_dir / "hp_c2247a").model.mech.first_ten_seek_s
    model.write_text(text.replace("         4.820000,\n         4.990000\n", "         4.820000\n"))
    with pytest.raises(DiskSimFormatError, match=r"First ten seek times must hold 10 numbers \(found 9\), as "
                                                 r"DiskSim 4\.0's loader requires"):
        load_disksim_drive(folder)


def test_hpl_values_as_disksims_loader_takes_them(tmp_path):
    """do_hpl_seek takes the first 6 of more values and refuses fewer, or a negative V2..V5. With a
    seventh value hp_c2247a's 400 times in DiskSim 4.0 are the bundled ones
    (tests/golden/disksim_variants/hp_c2247a_hpl_seven_values.csv)."""
    golden = Path(__file__).parent / "golden"
    np.testing.assert_array_equal(
        np.loadtxt(golden / "disksim_variants" / "hp_c2247a_hpl_seven_values.csv", delimiter=",", skiprows=1),
        np.loadtxt(golden / "disksim_service_times" / "hp_c2247a.csv", delimiter=",", skiprows=1))
    path = tmp_path / "hpl.model"
    path.write_text(model_text(HPL.format("300").replace("-1 ]", "-1, 4.5 ]"), G1_LAYOUT))
    assert read_model_file(path).mech.hpl_seek == (300, 3.81, 0.33, 7.75, 0.0059, -1)
    path.write_text(model_text(HPL.format("300").replace(", -1 ]", " ]"), G1_LAYOUT))
    with pytest.raises(DiskSimFormatError, match=r"must hold 6 numbers \(found 5\), as DiskSim 4\.0's loader"):
        read_model_file(path)
    path.write_text(model_text(HPL.format("300").replace("0.33", "-0.33"), G1_LAYOUT))
    with pytest.raises(DiskSimFormatError, match=r"V2\.\.V5 must be >= 0"):
        read_model_file(path)
