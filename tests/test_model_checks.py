"""Bad input to the pure model API (issue #16: "silently accepted (API)" and "hangs").

Every refusal is a ValueError whose one-line message names the parameter and
the value given; nothing is silently clamped, converted or left to hang.
"""
from __future__ import annotations

import dataclasses
import math
import re
import signal
import time
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskmodel.model import (Case, FileSystem, Geometry, LinearVolume, LvmMapping, PageCache, Partition, PostMarkConfig,
                             Segment, StripedVolume, TableSeek, TwoPieceSeek, Zone, cache_service_time_s,
                             expected_random_service_time_s, hit_probability, load_preset, mean_random_seek_time_s,
                             mean_rotational_latency_s, paper_stack, rotation_period_s, service_time_s, stack_on,
                             VolumeOnDisk)
from diskmodel.model.predictions import postmark_population
from diskmodel.model.drive.disk import ServiceTime, flat_latency_disk
from diskmodel.model.filesystems.filesystem import file_system_access_time
from diskmodel.model.simulator.mapping import ZoneLayout
from diskmodel.model.stacks.lvm_mapping import lvm_mapping_overhead_s
from diskmodel.model.fit import Parameter, Parameters, PostMarkFit, fit_io_parameters, fit_lvm_mapping
from diskmodel.model.predict import format_postmark_rate, predict
from diskmodel.model.predictions.scenarios import (MAX_PARTITIONS, location_table, spaced_partitions,
                                                   striped_random_read_time_s, striping_table)
from diskmodel.model.drive.seek import random_pair_distance_pmf, two_piece_seek_time_s
from diskmodel.model.drive.parameters import DriveParameters
from diskmodel.model.simulator.simulate import simulate_requests
from diskmodel.model.predictions.validation import TraceValidation, mean_error_percent, probability_levels
from diskmodel.model.predictions.workload import (MAX_COUNT, MAX_SEED, MAX_SIZE_BYTES, PhaseCounts, expected_counts,
                                                  infer_transactions, postmark_preset)
from diskmodel.model.drive.zones import MAX_CYLINDERS
from diskmodel.model.units import GB

WD = load_preset("wd800bd")
HP = load_preset("hp97560")
NATIVE = paper_stack("native", disk=WD).volume
NATIVE_STACK = stack_on(WD, NATIVE)
PLACED = VolumeOnDisk(WD, NATIVE)


def refused(name: str, call):
    """Run *call*; it must raise ValueError with a one-line message naming *name* as a word."""
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message), f"{name!r} not named in: {message}"
    return message


@contextmanager
def time_limit(seconds: int):
    """Fail (instead of hanging the suite) when the block runs longer than *seconds*."""
    def expired(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------ 1. bool and str where a number goes

def _toy_drive(**changes):
    layout = ZoneLayout(
        surfaces=2, first_cylinder=[0], last_cylinder=[99], sectors_per_track=[100],
        first_block_offset_sectors=[0], track_skew_sectors=[0], cylinder_skew_sectors=[0],
        empty_space_sectors=[0], spares=[0], slips=(np.zeros(0, np.int64),))
    params = dict(name="toy", layout=layout, seek_by_distance_s=np.r_[0.0, 1e-3 + 0.05e-3 * np.arange(99)],
                  rpm=6000.0, head_switch_s=0.5e-3, write_settle_s=0.2e-3, command_overhead_s=np.zeros((2, 2, 2)))
    params.update(changes)
    return DriveParameters(**params)


def _toy_layout(**changes):
    params = dict(surfaces=2, first_cylinder=[0], last_cylinder=[99], sectors_per_track=[100],
                  first_block_offset_sectors=[0], track_skew_sectors=[0], cylinder_skew_sectors=[0],
                  empty_space_sectors=[0], spares=[0], slips=(np.zeros(0, np.int64),))
    params.update(changes)
    return ZoneLayout(**params)


PV = Partition(0, 64 * 2**20)
CASE = Case(WD, NATIVE, PostMarkConfig(), read_throughput_bytes_per_s=1e6)
COUNTS = expected_counts(PostMarkConfig())
LVM_CASE = Case(WD, paper_stack("lvm1", disk=WD).volume, PostMarkConfig(), read_throughput_bytes_per_s=1e6)

#: (label, factory taking field=value, numeric fields) for every public frozen parameter dataclass.
NUMERIC_FIELDS = [
    ("Disk", WD.evolve, ("rpm", "command_overhead_s", "settle_s", "write_settle_s", "head_switch_s",
                         "interface_rate_bytes_per_s", "cache_size_bytes")),
    ("Zone", lambda **kw: dataclasses.replace(Zone(0, 9, 100), **kw),
     ("first_cylinder", "last_cylinder", "sectors_per_track", "track_skew_sectors", "cylinder_skew_sectors")),
    ("Geometry", Geometry(2, (Zone(0, 9, 100),)).evolve, ("surfaces", "sector_size_bytes")),
    ("TwoPieceSeek", TwoPieceSeek(1e-3, 1e-4, 2e-3, 1e-6, 100).evolve,
     ("short_offset_s", "short_sqrt_s", "long_offset_s", "long_per_cylinder_s", "knee_cylinders")),
    ("FileSystem", FileSystem().evolve,
     ("block_size_bytes", "inode_size_bytes", "commit_interval_s", "writeback_interval_s", "journal_size_bytes",
      "journal_offset_fraction", "allocation_spread", "max_request_bytes", "write_reorder_depth",
      "cpu_per_file_operation_s", "file_data_rate_bytes_per_s")),
    ("PageCache", PageCache().evolve, ("size_bytes", "rate_bytes_per_s", "syscall_s")),
    ("PostMarkConfig", PostMarkConfig().evolve,
     ("number_of_files", "min_file_size_bytes", "max_file_size_bytes", "transactions", "subdirectories",
      "read_block_size_bytes", "write_block_size_bytes", "read_bias", "create_bias", "seed")),
    ("LvmMapping", LvmMapping().evolve, ("md_mapping_s", "fb_mapping_s", "request_mapping_s")),
    ("Partition", PV.evolve, ("start_bytes", "size_bytes")),
    ("Segment", lambda **kw: dataclasses.replace(Segment(0, 1, 0, 0), **kw),
     ("logical_start_extent", "extent_count", "pv_index", "pv_start_extent")),
    ("LinearVolume", LinearVolume((PV,)).evolve, ("extent_size_bytes", "pe_start_bytes")),
    ("StripedVolume", StripedVolume((PV, Partition(0, 64 * 2**20, disk="sdb"))).evolve,
     ("stripe_size_bytes", "extent_size_bytes", "pe_start_bytes")),
    ("Case", lambda **kw: dataclasses.replace(CASE, **kw),
     ("read_throughput_bytes_per_s", "write_throughput_bytes_per_s")),
    ("DriveParameters", _toy_drive,
     ("rpm", "head_switch_s", "write_settle_s", "read_completion_s", "write_completion_s", "data_preparation_s",
      "reselect_s", "bus_read_block_s", "bus_write_block_s", "read_watermark", "buffer_segments",
      "segment_size_blocks", "max_read_ahead_blocks", "fast_write_level", "read_ahead_scheme",
      "minimum_write_seek_s", "write_disconnect_s")),
    ("ZoneLayout", _toy_layout, ("surfaces", "sparing_scheme", "mapping_scheme", "rangesize", "block_count")),
    ("TraceValidation", lambda **kw: TraceValidation("d", np.ones(3), np.ones(3), **kw), ("reference_demerit_s",)),
    ("PhaseCounts", lambda **kw: PhaseCounts(**kw), tuple(f.name for f in dataclasses.fields(PhaseCounts))),
    ("PostMarkCounts", lambda **kw: dataclasses.replace(COUNTS, **kw),
     ("files_at_end", "mean_live_files", "mean_file_size_at_end_bytes")),
]
FIELD_CASES = [(label, factory, name) for label, factory, names in NUMERIC_FIELDS for name in names]


@pytest.mark.parametrize("label, factory, name", FIELD_CASES, ids=[f"{c[0]}.{c[2]}" for c in FIELD_CASES])
@pytest.mark.parametrize("value", [True, False, "7200", "1", "nan"], ids=repr)
def test_numeric_fields_refuse_bool_and_str(label, factory, name, value):
    refused(name, lambda: factory(**{name: value}))


def test_disk_evolve_refuses_str_and_bool_rpm():
    assert "'7200'" in refused("rpm", lambda: WD.evolve(rpm="7200"))
    assert "True" in refused("rpm", lambda: WD.evolve(rpm=True))
    assert WD.evolve(rpm=np.float64(5400.0)).rpm == 5400.0  # numpy numbers are numbers


@pytest.mark.parametrize("label, factory, name", [c for c in FIELD_CASES if c[0] != "TraceValidation"],
                         ids=[f"{c[0]}.{c[2]}" for c in FIELD_CASES if c[0] != "TraceValidation"])
def test_numeric_fields_refuse_nan_and_inf(label, factory, name):
    for value in (math.nan, -math.inf):
        refused(name, lambda: factory(**{name: value}))


@settings(max_examples=200, deadline=None)
@given(case=st.sampled_from(FIELD_CASES),
       value=st.one_of(st.booleans(), st.text(max_size=8), st.integers(-10**6, 10**6).map(str),
                       st.floats(allow_nan=True).map(str), st.just([1.0]), st.just(1 + 2j)))
def test_any_non_number_for_any_numeric_field_names_the_field(case, value):
    _, factory, name = case
    refused(name, lambda: factory(**{name: value}))


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(NUMERIC_FIELDS[0][2]), value=st.one_of(st.booleans(), st.text(max_size=12)))
def test_disk_evolve_with_bool_or_str_names_the_field(name, value):
    message = refused(name, lambda: WD.evolve(**{name: value}))
    assert message.startswith(name + " ")


@pytest.mark.parametrize("obj", [WD, FileSystem(), PageCache(), PostMarkConfig(), LvmMapping(), PV,
                                 TwoPieceSeek(1e-3, 1e-4, 2e-3, 1e-6, 100)], ids=lambda o: type(o).__name__)
def test_evolve_refuses_unknown_fields(obj):
    refused("colour", lambda: obj.evolve(colour=1))


def test_whole_numbers_given_as_floats_are_stored_as_ints():
    assert type(PostMarkConfig(transactions=1e6).transactions) is int
    assert type(Zone(0, 9.0, 100).last_cylinder) is int
    assert type(FileSystem(block_size_bytes=4096.0).block_size_bytes) is int
    refused("transactions", lambda: PostMarkConfig(transactions=1000.5))


def test_object_fields_must_have_their_type():
    refused("geometry", lambda: WD.evolve(geometry="big"))
    refused("seek", lambda: WD.evolve(seek=lambda d: d))
    refused("zones[0]", lambda: Geometry(1, ((0, 9, 100),)))
    refused("filesystem", lambda: dataclasses.replace(CASE, filesystem="ext3"))
    refused("layout", lambda: _toy_drive(layout=None))
    refused("creation", lambda: dataclasses.replace(COUNTS, creation={"creates": 1.0}))
    refused("config", lambda: dataclasses.replace(COUNTS, config=None))


@pytest.mark.parametrize("values", [[True, False], ["1", "2"], [1 + 1j, 2.0]], ids=["bool", "str", "complex"])
def test_table_seek_refuses_non_numeric_arrays(values):
    refused("distance_cylinders", lambda: TableSeek(np.array(values), np.array([1e-3, 2e-3])))


# ------------------------------------------------------------------ 2. seeks beyond the disk

def test_seek_beyond_the_last_cylinder_is_refused():
    cylinders = WD.geometry.cylinders
    message = refused("distance_cylinders", lambda: WD.seek_time_s(1e9))
    assert str(cylinders) in message
    refused("distance_cylinders", lambda: WD.seek_time_s(cylinders))
    refused("distance_cylinders", lambda: WD.seek_time_s(np.array([0.0, cylinders - 0.5])))
    refused("distance_cylinders", lambda: WD.seek_time_s(-1))
    refused("distance_cylinders", lambda: WD.seek_time_s(np.array([1.0, np.nan])))
    refused("distance_cylinders", lambda: WD.seek_time_s("100"))
    assert 0 < float(WD.seek_time_s(cylinders - 1)) < 0.1   # the full stroke is allowed


def test_standalone_seek_models_still_evaluate_arrays():
    distance = np.arange(WD.geometry.cylinders, dtype=float)
    assert np.array_equal(WD.seek.seek_time_s(distance), WD.seek_time_s(distance))
    s = WD.seek
    assert np.array_equal(two_piece_seek_time_s(distance, s.short_offset_s, s.short_sqrt_s, s.long_offset_s,
                                                s.long_per_cylinder_s, s.knee_cylinders), WD.seek_time_s(distance))
    assert mean_random_seek_time_s(WD.seek, 1000) > 0
    refused("cylinders", lambda: mean_random_seek_time_s(WD.seek, 0))
    refused("cylinders", lambda: random_pair_distance_pmf(2.5))
    refused("cylinders", lambda: random_pair_distance_pmf(True))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, HP.geometry.cylinders - 1), min_size=1, max_size=20))
def test_seeks_within_the_disk_are_finite_and_nonnegative(distances):
    times = HP.seek_time_s(np.array(distances))
    assert np.all(np.isfinite(times)) and np.all(times >= 0)
    assert np.all(times <= float(HP.seek_time_s(HP.geometry.cylinders - 1)) + 1e-15)


# ------------------------------------------------------------------ 3. empty request arrays

@pytest.mark.parametrize("call, name", [
    (lambda: expected_random_service_time_s(WD, np.array([])), "size_bytes"),
    (lambda: expected_random_service_time_s(WD, []), "size_bytes"),
    (lambda: service_time_s(WD, [], [], []), "size_bytes"),
    (lambda: PLACED.access_time_s([]), "size_bytes"),
    (lambda: striped_random_read_time_s(WD, [], 2), "size_bytes"),
    (lambda: striping_table(WD, [1, 2], []), "request_sizes_bytes"),
    (lambda: hit_probability(1.0, 2.0, request_size_bytes=[]), "request_size_bytes"),
    (lambda: ServiceTime(*([np.zeros(0)] * 6)).mean(), "ServiceTime"),
    (lambda: mean_error_percent([], [1.0]), "measured_s"),
])
def test_empty_requests_are_refused(call, name):
    with np.errstate(all="raise"):
        message = refused(name, call)
    assert "empty" in message or "no requests" in message


def test_expected_random_service_time_of_no_requests_names_size_bytes():
    assert "size_bytes must not be empty" in refused(
        "size_bytes", lambda: expected_random_service_time_s(WD, np.array([])))


# ------------------------------------------------------------------ 4. request sizes


@pytest.mark.parametrize("call, name", [
    (lambda: expected_random_service_time_s(WD, 4096.5), "size_bytes"),
    (lambda: expected_random_service_time_s(WD, [4096, 4096.5]), "size_bytes"),
    (lambda: expected_random_service_time_s(WD, 2 * 4096, 0, 4096), "size_bytes"),
    (lambda: expected_random_service_time_s(WD, WD.capacity_bytes + 1), "size_bytes"),
    (lambda: service_time_s(WD, 0, 4096.5, 0), "size_bytes"),
    (lambda: service_time_s(WD, 0, WD.capacity_bytes + 1, 0), "size_bytes"),
    (lambda: service_time_s(WD, WD.capacity_bytes - 512, 1024, 0), "offset_bytes"),
    (lambda: service_time_s(WD, 512.5, 512, 0), "offset_bytes"),
    (lambda: service_time_s(WD, 0, 512, 0.5), "head_offset_bytes"),
    (lambda: PLACED.access_time_s(4096.5), "size_bytes"),
    (lambda: PLACED.access_time_s(8192, logical_size_bytes=4096), "size_bytes"),
    (lambda: PLACED.access_time_s(21 * GB), "size_bytes"),
    (lambda: striped_random_read_time_s(WD, 4096.5, 2), "size_bytes"),
    (lambda: striped_random_read_time_s(WD, 10**6, 1, region_size_bytes=4096), "size_bytes"),
    (lambda: striping_table(WD, [1], [4096.5]), "request_sizes_bytes"),
    (lambda: location_table(WD, [Partition(0, GB)], request_size_bytes=4096.5), "request_size_bytes"),
    (lambda: location_table(WD, [Partition(0, 4096)], request_size_bytes=8192), "request_size_bytes"),
    (lambda: hit_probability(1.0, 2.0, request_size_bytes=4096.5), "request_size_bytes"),
    (lambda: cache_service_time_s(0.5, 4096.5, 1e9, 1e-3), "request_size_bytes"),
    (lambda: cache_service_time_s(0.5, 0, 1e9, 1e-3), "request_size_bytes"),
])
def test_request_sizes_must_be_whole_and_fit(call, name):
    refused(name, call)


@settings(max_examples=100, deadline=None)
@given(start=st.integers(0, HP.capacity_bytes - 1), data=st.data())
def test_any_valid_request_size_gives_finite_positive_times(start, data):
    region = data.draw(st.integers(1, HP.capacity_bytes - start))
    sizes = data.draw(st.lists(st.integers(1, region), min_size=1, max_size=5))
    result = expected_random_service_time_s(HP, np.array(sizes), start, region)
    total = np.asarray(result.total_s)
    assert total.shape == (len(sizes),)
    assert np.all(np.isfinite(total)) and np.all(total > 0)
    assert np.all(np.asarray(result.transfer_s) > 0)


@settings(max_examples=50, deadline=None)
@given(size=st.integers(1, 20 * GB))
def test_any_valid_request_size_through_a_layout_is_finite_and_positive(size):
    total = float(PLACED.access_time_s(size).total_s)
    assert math.isfinite(total) and total > 0


def test_requests_ending_exactly_at_the_disk_end_are_served():
    capacity = HP.capacity_bytes
    result = service_time_s(HP, capacity - 4096, 4096, capacity)
    assert math.isfinite(float(result.total_s))
    assert float(expected_random_service_time_s(HP, capacity).total_s) > 0


# ------------------------------------------------------------------ 5. sizes that hung

@pytest.mark.parametrize("field, value", [
    ("transactions", 10**30), ("transactions", 1e30), ("transactions", 10**18), ("transactions", MAX_COUNT + 1),
    ("number_of_files", 10**30), ("subdirectories", 10**30), ("max_file_size_bytes", MAX_SIZE_BYTES + 1),
    ("read_block_size_bytes", 2**64), ("seed", MAX_SEED + 1),
])
def test_workloads_beyond_the_stated_limits_are_refused(field, value):
    message = refused(field, lambda: PostMarkConfig(**{field: value}))
    assert "<=" in message


def test_diskmodel_predict_transactions_1e30_is_refused_fast():
    workload = postmark_preset("test1")
    with time_limit(30):
        refused("transactions", lambda: predict(NATIVE_STACK, workload=workload.evolve(transactions=int(1e30))))


@pytest.mark.serial  # asserts a wall time
@pytest.mark.parametrize("files, read_bias, create_bias", [(1, 9, 5), (1, 5, 6), (4000, 5, 5), (10**5, 0, 10)])
def test_predict_with_the_largest_allowed_workload_returns_within_seconds(files, read_bias, create_bias):
    workload = PostMarkConfig(transactions=MAX_COUNT, number_of_files=files, read_bias=read_bias,
                              create_bias=create_bias)
    with time_limit(60):
        began = time.monotonic()
        p = predict(NATIVE_STACK, workload)
        took = time.monotonic() - began
    assert took < 10, f"predict took {took:.1f} s"
    assert math.isfinite(p.elapsed_s) and p.elapsed_s > 0
    assert math.isfinite(p.write_throughput_bytes_per_s) and p.write_throughput_bytes_per_s > 0


def test_expected_counts_of_the_largest_workload_are_linear_in_transactions():
    with time_limit(60):
        big = expected_counts(PostMarkConfig(transactions=MAX_COUNT, number_of_files=1))
        half = expected_counts(PostMarkConfig(transactions=MAX_COUNT // 2, number_of_files=1))
    # reads accumulate at exactly read_bias / 10 per transaction
    assert big.transactions.reads == pytest.approx(0.5 * MAX_COUNT, rel=1e-9)
    # in the steady state every count grows linearly
    for name in ("bytes_read", "bytes_written", "read_calls", "write_calls"):
        assert getattr(big.total, name) == pytest.approx(2 * getattr(half.total, name), rel=1e-6)


@pytest.mark.parametrize("files, transactions, read_bias, create_bias",
                         [(10, 10**6, 5, 5), (3, 3 * 10**5, 9, 6), (20, 10**6, 0, 10), (50, 10**6, 2, 5)])
def test_the_steady_state_continuation_agrees_with_integrating_all_the_way(monkeypatch, files, transactions,
                                                                             read_bias, create_bias):
    config = PostMarkConfig(number_of_files=files, transactions=transactions, read_bias=read_bias,
                            create_bias=create_bias, min_file_size_bytes=100, max_file_size_bytes=50_000)
    continued = expected_counts(config)
    monkeypatch.setattr(postmark_population, "integrate_steady_phase",
                        lambda integrate, rhs, y, start, stop, *rest: integrate(y, start, stop))
    integrated = expected_counts(config)
    for name, value in integrated.total.as_dict().items():
        assert getattr(continued.total, name) == pytest.approx(value, rel=1e-7, abs=1e-6), name
    assert continued.mean_live_files == pytest.approx(integrated.mean_live_files, rel=1e-7)
    assert continued.mean_file_size_at_end_bytes == pytest.approx(integrated.mean_file_size_at_end_bytes, rel=1e-7)


def test_a_workload_larger_than_the_file_system_is_refused():
    refused("workload", lambda: predict(NATIVE_STACK, workload=PostMarkConfig(number_of_files=10**8)))
    refused("workload", lambda: file_system_access_time(VolumeOnDisk(WD, Partition(0, 2**30)), FileSystem(),
                                                        PostMarkConfig(number_of_files=10**6)))


def test_spaced_partitions_refuses_a_huge_count_fast():
    with time_limit(10):
        message = refused("size_bytes", lambda: spaced_partitions(10**18, 1, 0))
    assert str(MAX_PARTITIONS) in message


def test_infer_transactions_of_an_unreachable_volume_is_refused_fast():
    with time_limit(30):
        refused("bytes_read", lambda: infer_transactions(PostMarkConfig(), bytes_read=1e25, read_tolerance=0.05))


@pytest.mark.serial  # asserts a wall time
def test_infer_transactions_of_a_huge_volume_stays_bounded():
    with time_limit(60):
        began = time.monotonic()
        count = infer_transactions(PostMarkConfig(), bytes_read=1e18, read_tolerance=0.05)
        took = time.monotonic() - began
    assert 10 <= count <= MAX_COUNT and took < 30


# ------------------------------------------------------------------ 6. NaN, inf and meaningless negatives

LAYOUT_SMALL = Partition(0, HP.capacity_bytes)
FIT = PostMarkFit(Parameters([Parameter("a", 1.0, 0.0, 2.0)]), np.array([[0.01]]), np.zeros(1), ("x",), 0.0, True, "")


@pytest.mark.parametrize("call, name", [
    (lambda: mean_rotational_latency_s(math.inf), "rpm"),
    (lambda: rotation_period_s("7200"), "rpm"),
    (lambda: hit_probability(math.nan, 1.0), "cache_size_bytes"),
    (lambda: hit_probability(1.0, -1.0), "working_set_bytes"),
    (lambda: hit_probability(1.0, 1.0, sequential_fraction=1.5), "sequential_fraction"),
    (lambda: hit_probability(1.0, 1.0, readahead_bytes=-1), "readahead_bytes"),
    (lambda: cache_service_time_s(0.5, 4096, math.inf, 1e-3), "cache_rate_bytes_per_s"),
    (lambda: cache_service_time_s(0.5, 4096, 1e9, -1e-3), "disk_service_time_s"),
    (lambda: cache_service_time_s(True, 4096, 1e9, 1e-3), "hit_probability"),
    (lambda: expected_random_service_time_s(HP, 4096, -1), "region_start_bytes"),
    (lambda: expected_random_service_time_s(HP, 4096, math.nan), "region_start_bytes"),
    (lambda: expected_random_service_time_s(HP, 4096, 0.5), "region_start_bytes"),
    (lambda: expected_random_service_time_s(HP, 4096, HP.capacity_bytes), "region_start_bytes"),
    (lambda: expected_random_service_time_s(HP, 4096, 0, 0), "region_size_bytes"),
    (lambda: expected_random_service_time_s(HP, 4096, 0, math.inf), "region_size_bytes"),
    (lambda: expected_random_service_time_s(HP, 4096, is_write="yes"), "is_write"),
    (lambda: service_time_s(HP, 0, 4096, 0, is_write="yes"), "is_write"),
    (lambda: VolumeOnDisk(HP, LAYOUT_SMALL).access_time_s(4096, distance_scale=math.nan), "distance_scale"),
    (lambda: VolumeOnDisk(HP, LAYOUT_SMALL).access_time_s(4096, distance_scale=1.5), "distance_scale"),
    (lambda: VolumeOnDisk(HP, LAYOUT_SMALL).access_time_s(4096, logical_start_bytes=-1), "logical_start_bytes"),
    (lambda: VolumeOnDisk(HP, LAYOUT_SMALL).access_time_s(4096, is_write=1), "is_write"),
    (lambda: VolumeOnDisk(HP, LAYOUT_SMALL).region(0, 4096).seek_time_to_s(7), "other"),
    (lambda: HP.geometry.media_rate_bytes_per_s(0, math.nan), "rotation_period_s"),
    (lambda: HP.geometry.chs_to_lba(1.5, 0, 0), "cylinder"),
    (lambda: LAYOUT_SMALL.logical_to_physical(np.array([True])), "offset_bytes"),
    (lambda: LAYOUT_SMALL.logical_to_physical(0.5), "offset_bytes"),
    (lambda: LinearVolume((PV,)).physical_to_logical(2**20 + 0.5), "physical_offset_bytes"),
    (lambda: lvm_mapping_overhead_s(LinearVolume((PV,)), -1, 0, LvmMapping()), "metadata_ios"),
    (lambda: format_postmark_rate(math.nan), "bytes_per_s"),
    (lambda: format_postmark_rate("1e6"), "bytes_per_s"),
    (lambda: format_postmark_rate(-1), "bytes_per_s"),
    (lambda: FIT.conf_int(alpha=math.nan), "alpha"),
    (lambda: FIT.conf_int(alpha=1.5), "alpha"),
    (lambda: striped_random_read_time_s(HP, 4096, 0), "n_disks"),
    (lambda: striped_random_read_time_s(HP, 4096, 2.5), "n_disks"),
    (lambda: striped_random_read_time_s(HP, 4096, 2, region_start_bytes=HP.capacity_bytes), "region_start_bytes"),
    (lambda: flat_latency_disk(math.nan, 1e8, 10**9), "latency_s"),
    (lambda: flat_latency_disk(1e-3, "1e8", 10**9), "rate_bytes_per_s"),
    (lambda: probability_levels(math.nan), "step"),
    (lambda: probability_levels(0), "step"),
    (lambda: probability_levels(1e-12), "step"),
    (lambda: mean_error_percent([1.0, -1.0], [1.0]), "measured_s"),
    (lambda: TraceValidation("d", np.ones(2), np.ones(2), reference_demerit_s=-1.0), "reference_demerit_s"),
    (lambda: simulate_requests(_toy_drive(), ["yes"], [0], [1], [0.0]), "is_write"),
    (lambda: simulate_requests(_toy_drive(), [False], [0.5], [1], [0.0]), "lbn"),
    (lambda: simulate_requests(_toy_drive(), [False], [0], [0], [0.0]), "blocks"),
    (lambda: _toy_layout(last_cylinder=[99.5]), "last_cylinder"),
    (lambda: _toy_layout(slips=(np.array([1.5]),)), "slips[0]"),
    (lambda: _toy_layout(track_skew_sectors=[math.nan]), "track_skew_sectors"),
    (lambda: WD.evolve(interface_rate_bytes_per_s=math.nan), "interface_rate_bytes_per_s"),
    (lambda: WD.evolve(interface_rate_bytes_per_s=0), "interface_rate_bytes_per_s"),
    (lambda: WD.evolve(cache_size_bytes=-1), "cache_size_bytes"),
    (lambda: FileSystem(block_size_bytes=4000), "block_size_bytes"),
    (lambda: FileSystem(kind=3), "kind"),
    (lambda: FileSystem(atime_updates=1), "atime_updates"),
    (lambda: PostMarkConfig(buffered_io=1), "buffered_io"),
    (lambda: PageCache(size_bytes=-1), "size_bytes"),
    (lambda: PageCache(rate_bytes_per_s=math.inf), "rate_bytes_per_s"),
    (lambda: fit_lvm_mapping([LVM_CASE], start_factors=("1",)), "start_factors"),
    (lambda: fit_lvm_mapping([LVM_CASE], initial=[2.0, 0.0]), "initial['md_mapping_s']"),
    (lambda: fit_lvm_mapping([CASE]), "cases"),
    (lambda: fit_io_parameters([CASE], cache_starts=2.5), "cache_starts"),
    (lambda: fit_io_parameters([CASE], initial={"page_cache_bytes": -1.0}), "initial['page_cache_bytes']"),
    (lambda: fit_io_parameters([CASE], bounds={"page_cache_bytes": (math.nan, 1.0)}),
     "bounds['page_cache_bytes'] lower"),
    (lambda: infer_transactions(PostMarkConfig(), bytes_read="1e9"), "bytes_read"),
    (lambda: infer_transactions(PostMarkConfig(), bytes_read=1e9, read_tolerance=True), "read_tolerance"),
])
def test_nan_inf_negative_and_wrong_types_name_the_parameter(call, name):
    refused(name, call)


def test_geometries_beyond_max_cylinders_are_refused_and_flat_disks_stay_within():
    refused("last_cylinder", lambda: Zone(0, MAX_CYLINDERS, 1))
    assert Zone(0, MAX_CYLINDERS - 1, 1).cylinders == MAX_CYLINDERS
    huge = flat_latency_disk(1e-4, 1e9, 100 * 10**12)          # 100 TB of flat-latency storage
    assert huge.geometry.cylinders <= MAX_CYLINDERS and huge.capacity_bytes >= 100 * 10**12
    assert flat_latency_disk(1e-4, 1e9, 64 * 2**20).geometry.surfaces == 1024
    refused("surfaces", lambda: flat_latency_disk(1e-4, 1e9, 10**9, surfaces=0))


def test_interface_rate_may_be_unlimited():
    assert WD.evolve(interface_rate_bytes_per_s=math.inf).interface_rate_bytes_per_s == math.inf


_NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                     st.sampled_from([0.0, -0.0, 5.0, 5.5, math.nan, math.inf, -math.inf]))


@settings(max_examples=200, deadline=None)
@given(values=st.one_of(_NUMBERS, st.lists(_NUMBERS, max_size=6).map(lambda v: np.array(v, dtype=float))),
       positive=st.booleans(), nonnegative=st.booleans(), maximum=st.sampled_from([None, 5, 5.0, 0]))
def test_the_quick_finite_array_check_agrees_with_the_full_one(values, positive, nonnegative, maximum):
    """finite_array's min/max path for float arrays and Python numbers accepts exactly what the full check
    accepts, returns the same floats, and leaves every refusal (its message) to the full check."""
    from diskmodel.model._checks import _checked_array, finite_array

    def outcome(check):
        try:
            return check("x", values, positive=positive, nonnegative=nonnegative, whole=False, maximum=maximum,
                         maximum_is="", nonempty=False).tolist()
        except ValueError as error:
            return str(error)

    assert outcome(finite_array) == outcome(_checked_array)
