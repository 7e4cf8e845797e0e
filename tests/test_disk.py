"""The disk layer: seek (eq. 7), rotation (eq. 8), zones, service time (eqs. 3-6), cache (eq. 2)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskmodel.model import (
    Geometry, TableSeek, TwoPieceSeek, Zone, cache_service_time_s, expected_random_service_time_s,
    hit_probability, load_preset, mean_random_seek_time_s, mean_rotational_latency_s,
    rotation_period_s, service_time_s, uniform_geometry,
)
from diskmodel.model.drive.rotation import rpm_from_period, rotational_latency_cdf, sample_rotational_latency_s

MS = 1e-3


# -- golden numbers from the papers -------------------------------------------------------
@pytest.mark.parametrize("distance, expected_ms", [
    (1, 3.24 + 0.400 * 1.0),
    (100, 3.24 + 0.400 * 10.0),       # 7.24 ms
    (382, 3.24 + 0.400 * np.sqrt(382)),
    (383, 8.00 + 0.008 * 383),        # 11.064 ms, the long branch starts at 383
    (1000, 16.0),
    (1961, 8.00 + 0.008 * 1961),
])
def test_hp97560_seek_matches_ruemmler_wilkes(distance, expected_ms):
    disk = load_preset("hp97560")
    assert disk.seek_time_s(distance) == pytest.approx(expected_ms * MS, rel=1e-12)


@pytest.mark.parametrize("distance, expected_ms", [
    (1, 4.14), (4, 3.81 + 0.66), (100, 7.11), (299, 3.81 + 0.33 * np.sqrt(299)),
    (300, 7.75 + 0.0059 * 300), (2050, 7.75 + 0.0059 * 2050),
])
def test_hp_c2247a_seek_matches_disksim_hpl(distance, expected_ms):
    assert load_preset("hp_c2247a").seek_time_s(distance) == pytest.approx(expected_ms * MS, rel=1e-12)


def test_seek_vectorised_over_the_issue_example():
    disk = load_preset("hp97560")
    times = disk.seek_time_s(np.array([0, 1, 100, 383, 1000]))
    np.testing.assert_allclose(times, np.array([0.0, 3.64, 7.24, 11.064, 16.0]) * MS, rtol=1e-12)


@pytest.mark.parametrize("rpm, period_ms, latency_ms", [(7200, 8.3333, 4.1667), (5400, 11.1111, 5.5556),
                                                        (4002, 14.9925, 7.4963), (15000, 4.0, 2.0)])
def test_rotation_golden(rpm, period_ms, latency_ms):
    assert rotation_period_s(rpm) == pytest.approx(period_ms * MS, abs=5e-8)
    assert mean_rotational_latency_s(rpm) == pytest.approx(latency_ms * MS, abs=5e-8)
    assert rpm_from_period(rotation_period_s(rpm)) == pytest.approx(rpm)


def test_rotational_latency_is_uniform():
    rng = np.random.default_rng(1)
    samples = sample_rotational_latency_s(rng, 7200, 200_000)
    assert samples.min() >= 0 and samples.max() < 60 / 7200
    assert samples.mean() == pytest.approx(60 / 7200 / 2, rel=5e-3)
    assert rotational_latency_cdf(60 / 7200 / 4, 7200) == pytest.approx(0.25)


def test_wd800bd_preset_reproduces_its_published_and_estimated_figures():
    disk = load_preset("wd800bd")
    assert disk.rpm == 7200 and disk.rotation_period_s == pytest.approx(8.3333e-3, abs=1e-7)
    cylinders = disk.geometry.cylinders
    assert mean_random_seek_time_s(disk.seek, cylinders) == pytest.approx(8.9e-3, abs=0.01e-3)
    assert disk.seek_time_s(1) == pytest.approx(2.0e-3, abs=0.001e-3)
    assert disk.seek_time_s(cylinders - 1) == pytest.approx(21.0e-3, abs=0.01e-3)
    assert 80.0e9 <= disk.capacity_bytes <= 80.1e9
    assert disk.interface_rate_bytes_per_s == 150e6
    estimated = " ".join(name for name, _ in disk.estimates)
    for field in ("zones", "seek", "surfaces", "command_overhead_s"):
        assert field in estimated


def test_hp_c2247a_zones_and_rates():
    disk = load_preset("hp_c2247a")
    geometry = disk.geometry
    assert (geometry.surfaces, geometry.cylinders, len(geometry.zones)) == (13, 2051, 8)
    # 96 sectors of 512 B per 11.111 ms revolution in the outer zone.
    assert disk.zone_rates_bytes_per_s()[0] == pytest.approx(96 * 512 / (60 / 5400))
    assert disk.head_switch_s == pytest.approx(0.89e-3)


@pytest.mark.parametrize("name", ["hp97560", "hp_c2247a", "wd800bd"])
def test_zone_rates_do_not_rise_inward(name):
    rates = load_preset(name).zone_rates_bytes_per_s()
    assert np.all(np.diff(rates) <= 0)


# -- geometry -------------------------------------------------------------------------------
def test_lba_to_chs_known_points():
    geometry = load_preset("hp_c2247a").geometry
    cylinder, head, sector = geometry.lba_to_chs(np.array([0, 95, 96, 96 * 13, 96 * 13 * 559]))
    assert cylinder.tolist() == [0, 0, 0, 1, 559]
    assert head.tolist() == [0, 0, 1, 0, 0]
    assert sector.tolist() == [0, 95, 0, 0, 0]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_lba_chs_round_trip(data):
    name = data.draw(st.sampled_from(["hp97560", "hp_c2247a", "wd800bd"]))
    geometry = load_preset(name).geometry
    lba = np.array(data.draw(st.lists(st.integers(0, geometry.total_sectors - 1), min_size=1, max_size=50)))
    cylinder, head, sector = geometry.lba_to_chs(lba)
    np.testing.assert_array_equal(geometry.chs_to_lba(cylinder, head, sector), lba)
    angle = geometry.angular_position(lba)
    assert np.all((angle >= 0) & (angle < 1))


@pytest.mark.parametrize("name", ["hp_c2247a", "wd800bd"])
def test_cylinder_of_byte_agrees_with_lba_to_chs_at_every_zone_boundary(name):
    geometry = load_preset(name).geometry
    first_lba = geometry.zone_first_byte // geometry.sector_size_bytes
    lba = np.unique(np.clip(np.concatenate([first_lba - 1, first_lba, first_lba + 1,
                                            [geometry.total_sectors - 1]]), 0, None))
    expected_cylinder = geometry.lba_to_chs(lba)[0]
    np.testing.assert_array_equal(geometry.cylinder_of_byte(lba * geometry.sector_size_bytes), expected_cylinder)
    np.testing.assert_array_equal(geometry.cylinder_of_byte(lba * geometry.sector_size_bytes + 511), expected_cylinder)
    assert geometry.cylinder_of_byte(int(lba[-1]) * 512) == expected_cylinder[-1]


def test_skew_shifts_the_next_track():
    geometry = uniform_geometry(surfaces=2, cylinders=10, sectors_per_track=100,
                                track_skew_sectors=10, cylinder_skew_sectors=25)
    # Sector 0 of head 1 sits one track skew later; sector 0 of cylinder 1 after one head switch and a cylinder switch.
    assert geometry.angular_position(np.array([0, 100, 200])).tolist() == pytest.approx([0.0, 0.10, 0.35])


# -- service time ---------------------------------------------------------------------------
def test_random_service_time_terms_for_wd800bd():
    disk = load_preset("wd800bd")
    expected = expected_random_service_time_s(disk, 4096).as_dict()
    assert expected["seek_s"] == pytest.approx(8.9e-3, abs=0.01e-3)
    assert expected["rotation_s"] == pytest.approx(60 / 7200 / 2)
    assert expected["interface_s"] == pytest.approx(4096 / 150e6)
    # Transfer at E[1/R_T] over the disk lies between the outer and inner zone rates.
    assert 4096 / 67.6e6 < expected["transfer_s"] < 4096 / 35.0e6
    assert expected["total_s"] == pytest.approx(sum(v for k, v in expected.items() if k != "total_s"))


def test_region_at_the_outer_edge_is_faster_than_at_the_inner_edge():
    disk = load_preset("wd800bd")
    size = 20 * 10**9
    outer = expected_random_service_time_s(disk, 1 << 20, 0, size)
    inner = expected_random_service_time_s(disk, 1 << 20, disk.capacity_bytes - size, size)
    assert float(outer.transfer_s) < float(inner.transfer_s)
    # A 20 GB region spans a quarter of the stroke: its seeks are far shorter than full-disk random seeks.
    assert float(outer.seek_s) < 0.75 * 8.9e-3


def test_sequential_request_costs_no_seek_and_no_latency():
    disk = load_preset("wd800bd")
    result = service_time_s(disk, np.array([4096, 10**9]), 4096, np.array([4096, 0]))
    assert result.seek_s.tolist()[0] == 0 and result.rotation_s.tolist()[0] == 0
    assert result.seek_s[1] > 0 and result.rotation_s[1] == pytest.approx(60 / 7200 / 2)


@settings(max_examples=100, deadline=None)
@given(offset=st.integers(0, 80 * 10**9 - 1), head=st.integers(0, 80 * 10**9 - 1),
       size=st.integers(1, 1 << 24), write=st.booleans())
def test_service_time_at_least_transfer_time(offset, head, size, write):
    disk = load_preset("wd800bd")
    result = service_time_s(disk, offset, size, head, is_write=write)
    for term in result.TERMS:
        assert np.all(getattr(result, term) >= 0)
    assert np.all(result.total_s >= result.transfer_s)


@settings(max_examples=100, deadline=None)
@given(a=st.floats(0, 0.02), b=st.floats(0, 0.002), c=st.floats(0, 0.02), f=st.floats(0, 1e-4),
       knee=st.floats(1, 10_000), distances=st.lists(st.floats(0, 20_000), min_size=2, max_size=50))
def test_two_piece_seek_properties(a, b, c, f, knee, distances):
    seek = TwoPieceSeek(a, b, c, f, knee)
    d = np.sort(np.array(distances))
    times = seek.seek_time_s(d)
    assert seek.seek_time_s(0) == 0
    assert np.all(times >= 0)
    # Within each branch the curve never decreases (the branches may disagree at the knee
    # unless the coefficients make it continuous; the curve is monotone when they do).
    for branch in (d <= knee, d > knee):
        assert np.all(np.diff(times[branch & (d > 0)]) >= -1e-15)


def test_continuous_two_piece_is_monotone():
    disk = load_preset("wd800bd")
    times = disk.seek_time_s(np.arange(disk.geometry.cylinders))
    assert np.all(np.diff(times) >= 0)


def test_table_seek_interpolates_monotonically():
    seek = TableSeek(np.array([1, 10, 100, 1000.0]), np.array([1.0, 2.0, 5.0, 10.0]) * MS)
    d = np.linspace(0, 1000, 2001)
    t = seek.seek_time_s(d)
    assert t[0] == 0 and np.all(np.diff(t) >= 0)
    assert seek.seek_time_s(100) == pytest.approx(5e-3)
    with pytest.raises(ValueError, match="distance_cylinders"):
        seek.seek_time_s(1001)


# -- cache (eq. 2) ----------------------------------------------------------------------------
def test_cache_service_time_eq2():
    # P_H = 0.25: 0.25 * 4096 / 100 MB/s + 0.75 * 10 ms
    assert cache_service_time_s(0.25, 4096, 100e6, 10e-3) == pytest.approx(0.25 * 4096 / 100e6 + 0.75 * 10e-3)
    assert cache_service_time_s(1.0, 4096, 100e6, 10e-3) == pytest.approx(4096 / 100e6)


def test_hit_probability_model():
    assert hit_probability(1 << 30, 4 << 30) == pytest.approx(0.25)
    assert hit_probability(8 << 30, 4 << 30) == pytest.approx(1.0)
    # Sequential 4 KiB reads with 124 KiB read-ahead: one miss in 32 requests.
    assert hit_probability(0, 1, request_size_bytes=4096, sequential_fraction=1.0,
                           readahead_bytes=124 * 1024) == pytest.approx(31 / 32)


# -- bad input names the parameter ----------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda: load_preset("hp97560").seek_time_s(np.array([1.0, np.nan])), "distance_cylinders"),
    (lambda: load_preset("hp97560").seek_time_s(-1), "distance_cylinders"),
    (lambda: load_preset("hp97560").seek_time_s(np.inf), "distance_cylinders"),
    (lambda: rotation_period_s(0), "rpm"),
    (lambda: rotation_period_s(-7200), "rpm"),
    (lambda: rotation_period_s(float("nan")), "rpm"),
    (lambda: load_preset("wd800bd").evolve(rpm=0), "rpm"),
    (lambda: load_preset("hp97560").evolve(seek=TwoPieceSeek(1e-3, 1e-4, 1e-3, 1e-6, 5000)), "knee_cylinders"),
    (lambda: TwoPieceSeek(-1e-3, 1e-4, 1e-3, 1e-6, 10), "short_offset_s"),
    (lambda: expected_random_service_time_s(load_preset("wd800bd"), -4096), "size_bytes"),
    (lambda: service_time_s(load_preset("wd800bd"), 0, 0, 0), "size_bytes"),
    (lambda: service_time_s(load_preset("wd800bd"), -512, 512, 0), "offset_bytes"),
    (lambda: service_time_s(load_preset("wd800bd"), 0, 512, 10**12), "head_offset_bytes"),
    (lambda: service_time_s(load_preset("wd800bd"), 0, 512, -1), "head_offset_bytes"),
    (lambda: Geometry(2, (Zone(0, 9, 100), Zone(12, 20, 90))), "zones"),
    (lambda: Geometry(2, (Zone(0, 9, 100), Zone(5, 20, 90))), "zones"),
    (lambda: Zone(0, 9, 0), "sectors_per_track"),
    (lambda: hit_probability(-1, 10), "cache_size_bytes"),
    (lambda: cache_service_time_s(1.5, 1, 1, 1), "hit_probability"),
    (lambda: load_preset("nope"), "name"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_evolve_makes_what_ifs():
    disk = load_preset("wd800bd")
    faster = disk.evolve(rpm=10_000)
    assert faster.rotation_period_s == pytest.approx(6e-3)
    assert disk.rpm == 7200
    with pytest.raises(dataclasses.FrozenInstanceError):
        disk.rpm = 1  # type: ignore[misc]


# ---------------------------------------------------------------------------
# One seek implementation (DiskSim's table rule) and the fused service-time kernel
# ---------------------------------------------------------------------------

def test_seek_table_rule_is_disksims_linear_interpolation():
    from diskmodel.model.drive.seek import table_seek_time_s

    # dm_mech_g1_seek_extracted: listed points exact, linear between, extrapolated from the last two
    x = np.array([1.0, 2.0, 10.0, 12.0])
    y = np.array([1.0, 1.5, 3.0, 2.9])   # the dip atlas10k's table has (10 -> 12 falls)
    got = table_seek_time_s([0, 1, 2, 6, 10, 11, 12, 14], x, y)
    assert got.tolist() == pytest.approx([0.0, 1.0, 1.5, 2.25, 3.0, 2.95, 2.9, 2.8])
    seek = TableSeek(x, y)
    assert seek.seek_time_s([0.5, 6.0]) == pytest.approx([0.5, 2.25])   # (0, 0) implied below the first point
    with pytest.raises(ValueError, match="beyond the measured table"):
        seek.seek_time_s(13.0)


def test_two_piece_kernel_is_eq_7_at_the_knee():
    from diskmodel.model.drive.seek import two_piece_seek_time_s

    got = two_piece_seek_time_s([0, 4, 100, 101], 1e-3, 0.5e-3, 5e-3, 1e-5, 100)
    assert got.tolist() == pytest.approx([0.0, 2e-3, 6e-3, 5e-3 + 101e-5])   # d <= knee: a + b sqrt(d)


def test_service_time_total_equals_the_sum_of_the_terms_and_checks_inputs():
    from diskmodel.model.drive.disk import service_time_total_s

    disk = load_preset("wd800bd")
    rng = np.random.default_rng(5)
    offsets = rng.integers(0, disk.geometry.total_sectors - 16, 5000) * 512
    heads = np.roll(offsets, 1) + 4096
    heads[::7] = offsets[::7]                 # some sequential requests
    writes = rng.random(5000) < 0.5
    terms = service_time_s(disk, offsets, 4096, heads, is_write=writes)
    assert service_time_total_s(disk, offsets, 4096, heads, is_write=writes) == pytest.approx(terms.total_s)
    summed = (terms.command_overhead_s + terms.seek_s + terms.settle_s + terms.rotation_s + terms.transfer_s
              + terms.interface_s)
    assert terms.total_s == pytest.approx(summed, rel=1e-12)
    assert (terms.rotation_s[::7] == 0).all()
    capacity = disk.capacity_bytes
    for args, message in (((capacity, 512, 0), "offset_bytes must be whole numbers in"),
                          ((0, 0.5, 0), r"size_bytes must lie in \[1"),
                          ((0, 512, capacity + 1), "head_offset_bytes must be whole numbers in"),
                          ((capacity - 512, 1024, 0), "must not exceed the disk's capacity")):
        with pytest.raises(ValueError, match=message):
            service_time_total_s(disk, *args)


def test_service_time_cylinders_exact_at_cylinder_boundaries():
    disk = load_preset("wd800bd")
    geometry = disk.geometry
    starts = geometry.zone_first_byte
    per_cylinder = geometry.surfaces * geometry.zone_sectors_per_track * geometry.sector_size_bytes
    # the first byte of cylinders 0..2 of each zone, and the byte before each
    offsets = np.concatenate([starts + k * per_cylinder for k in range(3)])
    offsets = np.concatenate((offsets, offsets[offsets > 0] - 1))
    got = service_time_s(disk, offsets, 512, np.zeros_like(offsets)).seek_s
    expected = disk.seek_time_s(geometry.cylinder_of_byte(offsets))
    assert got == pytest.approx(expected, abs=0)
