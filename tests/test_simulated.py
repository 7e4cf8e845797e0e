"""The simulated hard disk backend: physics, protocol, validation, speed."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskmodel.calibrate.harness.simulated import SimulatedDisk, disk_from_name, simulated_disk
from diskmodel.model import load_preset


def quiet(name="wd800bd", **kw):
    """A simulation without noise, outliers or think jitter: times are exact."""
    options = dict(noise_s=0.0, outlier_probability=0.0, host_think_s=0.0, host_think_jitter_s=0.0)
    options.update(kw)
    return simulated_disk(name, **options)


def test_protocol_attributes():
    sim = simulated_disk("hp97560")
    disk = load_preset("hp97560")
    assert sim.block_size_bytes == 512
    assert sim.size_bytes == disk.capacity_bytes == 1962 * 19 * 72 * 512
    assert isinstance(sim.read(0, 512), float)
    assert sim.queue_depth == 1
    t = sim.read_many(np.arange(10) * 4096, 4096)
    assert t.shape == (10,) and t.dtype == np.float64


def test_same_sector_reread_takes_a_revolution_less_the_host_gap():
    # Read o, then o again: the sector has just passed, so the re-read waits until it
    # comes round again: exactly T_rot - host gap, whatever the overhead and transfer.
    for name, think in (("wd800bd", 0.0), ("hp_c2247a", 30e-6)):
        sim = quiet(name, host_think_s=think)
        t = sim.read_many([123 * 512] * 5, 512)
        assert t[1:] == pytest.approx(sim.rotation_period_s - think, abs=1e-12)


def one_track(sim, offsets, length):
    """Which reads of *length* bytes at *offsets* stay on one track."""
    c0, h0, _ = sim.geometry.lba_to_chs(np.asarray(offsets) // 512)
    c1, h1, _ = sim.geometry.lba_to_chs((np.asarray(offsets) + length - 512) // 512)
    return (c0 == c1) & (h0 == h1)


def on_track_transfer_s(sim, offsets, length):
    """A read within one track: its sectors pass under the head at the media rate, and
    the last one then crosses the interface (each sector goes to the host once read)."""
    zone = sim.geometry.zone_index_of_lba(np.asarray(offsets) // 512)
    return length / sim.media_rates_bytes_per_s()[zone] + 512 / sim.disk.interface_rate_bytes_per_s


def test_transfer_runs_at_the_media_rate_on_a_track_and_loses_only_the_skews_across_tracks():
    sim = quiet("wd800bd")
    media = sim.media_rates_bytes_per_s()
    # 67.584 MB/s outside: 1100 sectors of 512 B per 1/120 s revolution
    assert media[0] == pytest.approx(1100 * 512 * 120)
    bounds = sim.geometry.zone_bounds_bytes()
    surfaces = sim.geometry.surfaces
    for zone in (0, 7, 15):
        z = sim.geometry.zones[zone]
        spt = z.sectors_per_track
        o = int(bounds[zone, 0]) + 10 * surfaces * spt * 512  # the start of a cylinder
        small = sim.read_many([o + 512, o], 512)[1]
        sim.read(o + 512, 512)
        track = sim.read(o, spt * 512)
        assert (spt - 1) * 512 / (track - small) == pytest.approx(media[zone], rel=1e-9)
        # 20 cylinders: every head switch costs exactly the track skew and every cylinder
        # switch the cylinder skew (the presets' skews cover them), no revolution more
        cylinders = 20
        sim.read(o + 512, 512)
        big = sim.read(o, cylinders * surfaces * spt * 512)
        sectors = (cylinders * surfaces * spt - 1 + cylinders * (surfaces - 1) * z.track_skew_sectors
                   + (cylinders - 1) * z.cylinder_skew_sectors)
        assert big - small == pytest.approx(sectors * sim.rotation_period_s / spt, rel=1e-9)
        # the sustained rate: the long-run rate of such a read
        assert cylinders * surfaces * spt * 512 / (big - small) == pytest.approx(
            sim.zone_rates_bytes_per_s()[zone], rel=0.01)


def test_random_reads_average_overhead_seek_half_revolution_transfer():
    sim = quiet("wd800bd")
    rng = np.random.default_rng(3)
    o = rng.integers(0, sim.size_bytes // 512 - 8, 40_000) * 512
    t = sim.read_many(o, 4096)
    expected = (sim.disk.command_overhead_s + sim.positioning_time_s(o[:-1] + 4096 - 512, o[1:])
                + on_track_transfer_s(sim, o[1:], 4096))
    wait = ((t[1:] - expected) / sim.rotation_period_s)[one_track(sim, o[1:], 4096)]
    assert wait.size > 39_000
    assert wait.min() >= -1e-9 and wait.max() < 1.0
    assert wait.mean() == pytest.approx(0.5, abs=0.01)  # uniform rotational wait: T_rot / 2 (eq. 8)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 156_312_000 - 16), min_size=2, max_size=30))
def test_each_read_is_positioning_plus_wait_below_one_revolution(lbas):
    sim = quiet("wd800bd")
    o = np.asarray(lbas, dtype=np.int64) * 512
    t = sim.read_many(o, 8192)
    # the head starts where the previous read ended (its last sector)
    base = (sim.disk.command_overhead_s + sim.positioning_time_s(o[:-1] + 8192 - 512, o[1:])
            + on_track_transfer_s(sim, o[1:], 8192))
    keep = one_track(sim, o[1:], 8192)
    assert np.all(t[1:][keep] >= base[keep] - 1e-12)
    assert np.all(t[1:][keep] < base[keep] + sim.rotation_period_s + 1e-12)


def test_head_switch_on_the_same_cylinder():
    sim = quiet("hp_c2247a")
    geometry = sim.geometry
    track = int(geometry.zone_sectors_per_track[0]) * 512
    # Surface 0 then surface 1 of cylinder 0: a head switch, no seek.
    assert sim.positioning_time_s(0, track) == pytest.approx(0.89e-3)
    assert sim.positioning_time_s(0, 512) == 0.0
    cylinder = 13 * track
    assert sim.positioning_time_s(0, cylinder) == pytest.approx(sim.disk.seek_time_s(1))


def test_device_time_accumulates_service_and_think_time():
    sim = simulated_disk("hp97560", noise_s=0.0, outlier_probability=0.0, host_think_s=50e-6,
                         host_think_jitter_s=0.0)
    t = sim.read_many(np.arange(100) * 65536, 4096)
    t2 = sim.read(7 * 512, 512)
    assert sim.device_time_s == pytest.approx(t.sum() + t2 + 101 * 50e-6, rel=1e-12)


def test_read_and_read_many_agree_and_seeds_reproduce():
    offsets = (np.arange(50) * 7919 * 512) % (10**9)
    a = simulated_disk("wd800bd", seed=5)
    b = simulated_disk("wd800bd", seed=5)
    c = simulated_disk("wd800bd", seed=6)
    ta = a.read_many(offsets, 4096)
    tb = b.read_many(offsets, 4096)
    assert np.array_equal(ta, tb)
    assert not np.array_equal(ta, c.read_many(offsets, 4096))
    q1, q2 = quiet("wd800bd"), quiet("wd800bd")
    many = q1.read_many(offsets, 4096)
    one = np.array([q2.read(int(o), 4096) for o in offsets])
    assert np.allclose(many, one, rtol=0, atol=1e-12)


def test_noise_and_outliers():
    base = quiet("wd800bd")
    noisy = simulated_disk("wd800bd", noise_s=10e-6, outlier_probability=0.0, host_think_s=0.0,
                           host_think_jitter_s=0.0)
    offsets = np.full(2001, 4096)
    diff = noisy.read_many(offsets, 4096)[1:] - base.read_many(offsets, 4096)[1:]
    assert diff.std() == pytest.approx(10e-6, rel=0.1)
    always = simulated_disk("wd800bd", noise_s=0.0, outlier_probability=1.0, outlier_scale_s=2e-3,
                            host_think_s=0.0, host_think_jitter_s=0.0)
    extra = always.read_many(offsets, 4096)[1:] - quiet("wd800bd").read_many(offsets, 4096)[1:]
    assert extra.min() > 0 and extra.mean() == pytest.approx(2e-3, rel=0.1)


@pytest.mark.parametrize("bad", [-512, 100, 10**15])
def test_bad_offsets_raise_naming_the_parameter(bad):
    sim = simulated_disk("hp97560")
    with pytest.raises(ValueError, match="offset"):
        sim.read(bad, 512)


def test_bad_lengths_and_options_raise():
    sim = simulated_disk("hp97560")
    with pytest.raises(ValueError, match="length_bytes"):
        sim.read(0, 100)
    with pytest.raises(ValueError, match="length_bytes"):
        sim.read(0, 0)
    with pytest.raises(ValueError, match="offsets"):
        sim.read_many(np.array([0.5]), 512)
    with pytest.raises(ValueError, match="noise_s"):
        simulated_disk("hp97560", noise_s=-1)
    with pytest.raises(ValueError, match="outlier_probability"):
        simulated_disk("hp97560", outlier_probability=2)
    with pytest.raises(ValueError, match="block_size_bytes"):
        simulated_disk("hp97560", block_size_bytes=1000)
    with pytest.raises(ValueError, match="disk"):
        SimulatedDisk("hp97560")
    with pytest.raises(ValueError, match="preset"):
        simulated_disk("no_such_drive")


def test_block_size_4k():
    sim = simulated_disk("wd800bd", block_size_bytes=4096)
    assert sim.size_bytes % 4096 == 0
    with pytest.raises(ValueError):
        sim.read(512, 4096)
    assert sim.read(4096, 4096) > 0


def test_disksim_drives(disksim_dir):
    g4 = disk_from_name(disksim_dir / "G4_4TB")
    assert g4.rpm == 7200
    assert g4.geometry.surfaces == 10
    # the root index of the g4 layout maps 303,104 of the 310,194 cylinders listed: 3.86 TB of "4 TB"
    assert 300_000 <= g4.geometry.cylinders <= 310_194
    assert 3.8e12 < g4.capacity_bytes < 4.0e12
    rates = g4.zone_rates_bytes_per_s()
    assert rates[0] == pytest.approx(3072 * 512 * 120)
    atlas = simulated_disk(disksim_dir / "atlas10k")
    assert atlas.disk.rpm == pytest.approx(10025)
    assert atlas.read(0, 512) > 0


@pytest.mark.serial  # asserts a wall time
def test_fast_enough_for_a_full_calibration(disksim_dir):
    sim = simulated_disk(disksim_dir / "G4_4TB")
    offsets = np.random.default_rng(0).integers(0, sim.size_bytes // 512 - 8, 100_000) * 512
    start = time.perf_counter()
    sim.read_many(offsets, 4096)
    assert time.perf_counter() - start < 3.0
    assert sim.device_time_s > 100  # 100,000 random reads of ~11.5 ms each
