"""Calibration of the drives the emulator serves: the truth read off their parameters, the zone
segmentation of a quantised rate profile, the buffer sized with the drive left idle, and (integration)
a calibration through the kernel on an emulated drive."""
from __future__ import annotations

import functools
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import require_root, require_tools


def _params(drive: str):
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of

    return drive_parameters_of(resolve_drive(drive).timing)


def _catalogued(drive: str):
    """The preset *drive* as catalogued, its buffer included."""
    from diskmodel.model.drive.parameters import DriveParameters
    from diskmodel.model.drive.presets import load_preset

    return DriveParameters.from_disk(load_preset(drive))


def _bare(drive: str):
    """The preset *drive* without its buffer: a drive that loses a revolution between two requests."""
    import dataclasses

    from diskmodel.model.drive.parameters import DriveParameters
    from diskmodel.model.drive.presets import load_preset

    return DriveParameters.from_disk(dataclasses.replace(load_preset(drive), drive_cache=None))


# -- the truth ------------------------------------------------------------------------------------

def test_drive_truth_agrees_with_the_simulated_disk_of_the_preset():
    """drive_truth (from the emulator's DriveParameters) against SimulatedDisk's own truth (from the
    preset's Disk): rotation, the sustained zone rates and the mean random positioning time."""
    from diskmodel.calibrate.harness.drive_truth import drive_truth
    from diskmodel.calibrate.harness.simulated import simulated_disk

    truth = drive_truth(_params("wd800bd"))
    sim = simulated_disk("wd800bd")
    assert truth["rotation_period_s"] == pytest.approx(sim.rotation_period_s, rel=1e-12)
    np.testing.assert_allclose(truth["zone_rates_bytes_per_s"], sim.zone_rates_bytes_per_s(), rtol=1e-9)
    np.testing.assert_array_equal(truth["zone_bounds_bytes"], sim.geometry.zone_bounds_bytes())
    assert truth["mean_random_seek_s"] == pytest.approx(sim.mean_random_seek_time_s(), rel=0.01)
    assert truth["zones"] == 16 and truth["surfaces"] == 2 and truth["read_ahead"] is False
    # as catalogued, its buffer reads ahead a segment of 128 KiB
    assert drive_truth(_catalogued("wd800bd"))["segment_bytes"] == 128 * 1024


def test_drive_truth_refuses_a_g4_map_whose_entries_are_not_zones():
    """maxtor300g's g4 map gives each surface of a cylinder range its own sectors per track, and runs
    past the drive's last block: read as zones, its truth had 16 337 zones, a last zone ending before
    it began (the comparison's rate lookup then failed), zero skews and a 0.6 MB/s "zone". Refused,
    with one line naming the drive and why."""
    from diskmodel.calibrate.harness.drive_truth import drive_truth

    with pytest.raises(ValueError, match="maxtor300g's layout is a g4 map"):
        drive_truth(_params("maxtor300g"))


def test_the_segment_truth_is_what_the_read_ahead_brings_in():
    """hp_c2247a's segments hold 128 KiB but it reads ahead at most 64 KiB (DiskSim's maximum
    read-ahead): after a one-block read, the block 64 KiB on is a hit, the one past it a miss, on the
    emulator's own timing; the truth is the 64 KiB. WD800BD reads ahead its whole segment."""
    from diskmodel.calibrate.harness.drive_truth import drive_truth
    from diskmodel.model.simulator.session import DriveSession
    from diskmodel.model.simulator.state import HitKind

    params = _catalogued("hp_c2247a")
    assert params.segment_size_blocks == 256 and params.max_read_ahead_blocks == 128
    assert drive_truth(params)["segment_bytes"] == 64 * 1024
    for stride, kind in ((128, HitKind.CACHE_HIT), (129, HitKind.MEDIA)):
        session = DriveSession(params)
        done = session.serve(False, 400_000, 1, 0.0).completion_s
        assert session.serve(False, 400_000 + stride, 1, done + 0.1).hit == kind, stride


def test_drive_truth_merges_zones_no_rate_tells_apart():
    """atlas10k's 24 zones all transfer at the interface's rate (99 us a block): one zone to a
    calibration; ibm18es reads ahead into 7 segments of 511 blocks."""
    from diskmodel.calibrate.harness.drive_truth import drive_truth

    atlas = drive_truth(_params("atlas10k"))
    assert len(atlas["zone_bounds_bytes"]) == 24 and atlas["zones"] == 1
    assert atlas["zone_rates_bytes_per_s"] == pytest.approx(512 / 99e-6)
    ibm = drive_truth(_params("ibm18es"))
    assert ibm["read_ahead"] and ibm["segment_bytes"] == 511 * 512 and ibm["segments"] == 7


# -- zone segmentation ----------------------------------------------------------------------------

def _quantised_profile(seed: int = 0):
    """A profile like hp_c2247a's: its 8 zones, 144 locations of 2 repeats each; a repeat's read
    crosses a cylinder switch, which loses 0.23 rev more than a head switch, in about 3 of 10 reads
    (4 % slower than the others, the zone's sustained rate between the two)."""
    rng = np.random.default_rng(seed)
    size = 1_091_690_496
    edges = np.array([0, 357187584, 480882688, 563470336, 647335936, 722948096, 879177728, 995897344, size])
    rates = np.array([3.80, 3.66, 3.48, 3.33, 3.16, 2.84, 2.51, 2.19]) * 1e6
    loc = (np.arange(144) + rng.uniform(0.05, 0.95, 144)) / 144 * size
    zone = np.searchsorted(edges, loc, side="right") - 1
    crossed = rng.random((144, 2)) < 0.3
    reps = rates[zone][:, None] * np.where(crossed, 0.9795, 1.0085)
    return loc, reps, edges, size


def test_merge_test_drops_a_pair_of_delayed_locations_and_keeps_narrow_steps():
    """As the zone stage fits a profile (lone spikes dropped, zones of two locations or more inside):
    a flat profile with a tail of host delays (one location in ten slower by 0.2-1.5 %, two of them
    neighbours) is one zone; a staircase of 2 % steps, three locations a step, with 0.1 % noise and one
    delayed location in a step, keeps every step."""
    from diskmodel.calibrate.harness.stages import zones_from_profile

    rng = np.random.default_rng(4)
    loc = np.arange(150) * 1e6
    flat = 5e6 * np.exp(rng.normal(0.0, 2e-4, 150))
    delayed = rng.random(150) < 0.1
    delayed[[0, 149]] = False  # a lone location at either end is measured again (measure_zones)
    delayed[[70, 71]] = True
    flat[delayed] *= 1 - rng.uniform(0.002, 0.015, delayed.sum())
    assert len(zones_from_profile(loc, flat, 150_000_000, 512)) == 1
    steps = np.repeat(100e6 * 0.98 ** np.arange(12), 3) * np.exp(rng.normal(0.0, 1e-3, 36))
    steps[10] *= 0.99
    zones = zones_from_profile(loc[:36], steps, 36_000_000, 512)
    assert len(zones) == 12
    np.testing.assert_allclose([z[2] for z in zones], 100e6 * 0.98 ** np.arange(12), rtol=0.01)


def test_quantised_profile_keeps_the_drives_zones():
    from diskmodel.calibrate.harness.stages import repeat_noise, zones_from_profile

    for seed in range(5):
        loc, reps, edges, size = _quantised_profile(seed)
        zones = zones_from_profile(loc, reps.mean(axis=1), size, 512, noise_sigma=repeat_noise(reps))
        assert len(zones) == 8, (seed, len(zones))
        found = np.array([z[0] for z in zones[1:]])
        assert np.max(np.abs(found - edges[1:-1])) < 0.01 * size


def test_repeat_noise_is_the_spread_of_a_locations_mean():
    from diskmodel.calibrate.harness.stages import repeat_noise

    rng = np.random.default_rng(1)
    reps = np.exp(rng.normal(0.0, 0.01, (2000, 2)))
    # the 5 % most scattered locations left out: a little below the spread of all
    assert 0.85 * 0.01 / np.sqrt(2) < repeat_noise(reps) <= 0.01 / np.sqrt(2)
    assert repeat_noise(np.ones((5, 1))) is None


# -- the buffer, left idle ------------------------------------------------------------------------

def test_meter_idle_charges_the_budget_and_refuses_beyond_it():
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk
    from diskmodel.calibrate.harness.meter import BudgetExhausted, Meter

    meter = Meter(ParametersDisk(_params("hp_c2247a")), budget_s=1.0)
    meter.read(0, 512)
    used = meter.used_s
    meter.idle(0.25)
    assert meter.used_s == pytest.approx(used + 0.25)
    with pytest.raises(BudgetExhausted):
        meter.idle(1.0)


def test_read_ahead_found_where_the_next_block_is_asked_for_while_it_passes():
    """hp_c2247a's platter takes longer to pass a block than the host takes to ask for the next one:
    asked for at once, the next block is under the head, not yet read, and DiskSim serves it as a miss
    that waits a revolution (no "almost read hits"); asked for after a pause, it is a buffer hit. The
    buffer stage pauses, and finds the read-ahead at every seed (it missed it at one seed in two)."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk
    from diskmodel.calibrate.harness.mechanics import measure_buffer
    from diskmodel.calibrate.harness.meter import Meter
    from diskmodel.model.simulator.session import DriveSession

    params = _catalogued("hp_c2247a")
    o = 1_813_699
    session = DriveSession(params)
    done = session.serve(False, o, 1, 0.0).completion_s
    asked_at_once = session.serve(False, o + 1, 1, done + 80e-6)
    assert asked_at_once.service_s > 0.9 * params.rotation_period_s
    session = DriveSession(params)
    done = session.serve(False, o, 1, 0.0).completion_s
    assert session.serve(False, o + 1, 1, done + 2e-3).service_s < 0.1e-3
    for seed in range(4):
        found = measure_buffer(Meter(ParametersDisk(params, seed=seed), budget_s=60.0), np.random.default_rng(seed))
        assert found.detected, (seed, found.detail)


def test_rotation_of_a_drive_that_reads_ahead_from_chains_beside_each_other():
    """The forward chains of the rotation stage start below everything read before (a read-ahead runs
    forward, so none of their blocks is buffered, whatever the segment's size, still unknown there),
    beside the descending chain: on hp_c2247a (1 GB, 8 zones) they once skipped 64 MiB past a
    segment they could not yet size, into another zone, and the period came 1 % long. Within the
    issue's 0.5 %, against the drive's 5400 rpm."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth
    from diskmodel.calibrate.harness.mechanics import measure_buffer, measure_rotation
    from diskmodel.calibrate.harness.meter import Meter

    params = _catalogued("hp_c2247a")
    truth = drive_truth(params)
    bounds, rates = truth["zone_bounds_bytes"], truth["zone_rates_bytes_per_s"]

    def rate_at(o):
        return rates[np.clip(np.searchsorted(bounds[:, 0], o, side="right") - 1, 0, len(rates) - 1)]

    meter = Meter(ParametersDisk(params, seed=0), budget_s=60.0)
    rng = np.random.default_rng(0)
    buffer = measure_buffer(meter, rng)
    assert buffer.detected
    rotation = measure_rotation(meter, rng, budget_s=10.0, buffer=buffer, rate_at=rate_at)
    assert rotation.period_s == pytest.approx(truth["rotation_period_s"], rel=0.005)


@pytest.mark.slow
@pytest.mark.parametrize("drive", ["cheetah4LP", "atlas10k", "ibm18es", "wd800bd"])
def test_rotation_with_a_host_gap_like_the_kernel_paths(drive):
    """Through loop, FUSE and NBD a request reaches the drive 0.45-0.75 ms after the one before
    completed (the emulator's request logs). That gap is part of each request's overhead as the drive
    sees it: the forward chain's stride must clear it at nearly every gap, and its spread (as wide as
    many blocks' passage) spreads every chain's median. With the stride doubled from a first caught
    stride judged on nine reads, cheetah4LP's rotation was not measured at all (its chains lost a
    revolution or strayed past half a track); the period also swung by 1-3 % on atlas10k and ibm18es.
    On the emulator's timing with such gaps (uniform over 0.45-0.75 ms), within the issue's 0.5 % at
    the share of a 120 s calibration the rotation stage gets."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth
    from diskmodel.calibrate.harness.mechanics import measure_buffer, measure_rotation
    from diskmodel.calibrate.harness.meter import Meter

    params = _params(drive)
    truth = drive_truth(params)
    bounds, rates = truth["zone_bounds_bytes"], truth["zone_rates_bytes_per_s"]

    def rate_at(o):
        return rates[np.clip(np.searchsorted(bounds[:, 0], o, side="right") - 1, 0, len(rates) - 1)]

    meter = Meter(ParametersDisk(params, host_gap_s=0.45e-3, host_gap_jitter_s=0.3e-3, seed=0), budget_s=60.0)
    rng = np.random.default_rng(0)
    buffer = measure_buffer(meter, rng)
    rotation = measure_rotation(meter, rng, budget_s=5.4, buffer=buffer, rate_at=rate_at)
    assert rotation.period_s == pytest.approx(truth["rotation_period_s"], rel=0.005)


def test_segment_sized_with_the_drive_idle():
    """ibm18es does not read ahead after a buffer hit: sizing its segment with hits as the wait found
    a fraction of it; left idle, the read-ahead fills the segment (511 blocks) within 10 %."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth
    from diskmodel.calibrate.harness.mechanics import measure_buffer, size_buffer
    from diskmodel.calibrate.harness.meter import Meter

    params = _params("ibm18es")
    truth = drive_truth(params)
    meter = Meter(ParametersDisk(params, seed=3), budget_s=60.0)
    rng = np.random.default_rng(3)
    found = measure_buffer(meter, rng)
    assert found.detected
    rate = float(np.min(truth["zone_rates_bytes_per_s"]))
    sized = size_buffer(meter, rng, found, lambda o: np.full(np.size(o), rate))
    assert sized.segment_bytes == pytest.approx(truth["segment_bytes"], rel=0.10)


# -- reads the kernel splits ----------------------------------------------------------------------

@pytest.mark.slow
def test_zone_rates_when_the_kernel_splits_long_reads():
    """The kernel sends a read longer than the device's largest request as several requests, and
    a drive without read-ahead (the WD800BD without its buffer) loses up to a revolution between each two:
    one 4.6 MB zone read in requests of 512 KiB came out 42 % slow. The zone reads keep to one
    request each: on the emulator's timing, split as the kernel splits, the 16 zones and their
    rates within 3 %, and no read of more than one request."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth, emulation_errors
    from diskmodel.calibrate.harness.measure import calibrate

    params = _bare("wd800bd")
    disk = ParametersDisk(params, max_request_bytes=512 << 10)
    lengths = []
    read_many = disk.read_many
    disk.read_many = lambda offsets, length: (lengths.append(length), read_many(offsets, length))[1]
    result = calibrate(disk, budget_s=120.0, progress=False)
    rows = {r["quantity"]: r for r in emulation_errors(drive_truth(params), result)}
    assert max(lengths) <= 512 << 10
    for name in ("zone_rate_worst_bytes_per_s", "zone_count", "rotation_period_s"):
        assert rows[name]["passed"], rows[name]


def test_parameters_disk_splits_a_read_as_the_kernel_does():
    """A read of three requests' length takes as long as the three requests in turn, each a host
    gap after the one before, on a drive that loses a revolution between them."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk
    from diskmodel.model.simulator.session import DriveSession

    params = _bare("wd800bd")
    split = ParametersDisk(params, max_request_bytes=64 << 10, host_gap_jitter_s=0.0, noise_s=0.0)
    t = split.read(1 << 30, 192 << 10)
    session, clock = DriveSession(params), 0.0
    for k in range(3):
        clock = session.serve(False, (1 << 30) // 512 + k * 128, 128, clock + 60e-6).completion_s
    assert t == pytest.approx(clock - 60e-6, rel=1e-9)
    assert t > 192 * 1024 / 57.3e6 + params.rotation_period_s  # slower than one request by a revolution
    with pytest.raises(ValueError, match="max_request_bytes"):
        ParametersDisk(params, max_request_bytes=1000)


@pytest.mark.integration
@pytest.mark.slow
def test_max_request_bytes_of_a_loop_device(tmp_path, loops):
    """The largest request the kernel sends a device whole, as its queue's limits say (sysfs):
    max_sectors_kb, and max_segments pages; a file has none."""
    import os

    from _loopdev import write_random_file

    from diskmodel.calibrate.harness.device import open_backend

    image = write_random_file(tmp_path / "img", 4 << 20)
    loop = loops.attach(image)
    queue = f"/sys/block/{os.path.basename(loop)}/queue/"
    with open(queue + "max_sectors_kb") as a, open(queue + "max_segments") as b:
        expect = min(int(a.read()) * 1024, int(b.read()) * os.sysconf("SC_PAGE_SIZE"))
    for path, want in ((loop, expect), (image, None)):
        backend = open_backend(path)
        try:
            assert backend.max_request_bytes == want
        finally:
            backend.close()


# -- whole calibrations ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _zone_rows(drive: str, seed: int = 0, catalogued: bool = False) -> dict:
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth, emulation_errors
    from diskmodel.calibrate.harness.measure import calibrate

    params = _catalogued(drive) if catalogued else _params(drive)
    result = calibrate(ParametersDisk(params, seed=seed), budget_s=120.0, seed=seed, progress=False)
    return {r["quantity"]: r for r in emulation_errors(drive_truth(params), result)}


@pytest.mark.parametrize("drive", [
    "hp_c2247a", "wd800bd",
    pytest.param("atlas10k", marks=pytest.mark.slow), pytest.param("cheetah4LP", marks=pytest.mark.slow),
    pytest.param("ibm18es", marks=pytest.mark.slow)])
def test_zones_on_the_emulators_timing(drive):
    """The issue's drives on the emulator's timing without the kernel (ParametersDisk: the per-request
    simulation the emulator serves, with a host's jitter): the drive's zone count (hp_c2247a 8, where
    57-59 and then 13 were reported; WD800BD 16; the others one rate, their interface's), every
    boundary within 1 % of the capacity and every zone's rate within 3 %, against the truth read off
    the drive's parameters."""
    rows = _zone_rows(drive)
    for name in ("zone_count", "zone_boundaries", "zone_rate_worst_bytes_per_s"):
        assert rows[name]["passed"], rows[name]


@pytest.mark.parametrize("drive,seed", [("cheetah4LP", 3), ("cheetah4LP", 4), ("cheetah4LP", 7), ("wd800bd", 11),
                                        ("ibm18es", 1), ("ibm18es", 5)])
def test_zone_count_at_seeds_whose_draws_made_false_zones_or_hid_one(drive, seed):
    """The zone stage on the emulator's timing at seeds where it found the wrong count: each location's
    rate is the union of two contiguous long reads, quantised by the track changes they cross (one
    more, or a cylinder switch for a head switch), so a few neighbours that each drew one quantum
    low make a narrow dip inside a one-rate profile (cheetah4LP seeds 3 and 4: three locations a
    quarter of a per cent below both sides, kept against the profile's typical noise; ibm18es alike),
    which a zoned drive's rate, falling inwards, cannot have; the two locations of a last zone were
    measured again and each judged against the other, as suspect as itself, and the second's new
    stretch held one read the drive lost a track change's skew on, kept whole (seed 7); and two of
    WD800BD's zones whose locations' quantised rates do not interleave were merged, their medians a
    quantum apart where their trimmed means are the zones' step apart (seed 11). Each drive's count,
    boundaries within 1 % of the capacity, and rates within 3 %, against its truth."""
    rows = _zone_rows(drive, seed)
    for name in ("zone_count", "zone_boundaries", "zone_rate_worst_bytes_per_s"):
        assert rows[name]["passed"], (seed, rows[name])


class _DelayedDisk:
    """ParametersDisk as through the kernel: the largest request the path sends whole (FUSE's 512 KiB, so
    the zone stage reads a location as ten one-request reads), a path cost that grows with a read's bytes
    and drifts with the host's load over the run, and one read in ten delayed by an exponential time (a
    one-sided tail, as the zone reads' excess over the drive's own time is through the kernel)."""

    def __new__(cls, params, seed):
        from diskmodel.calibrate.harness.drive_truth import ParametersDisk

        class Delayed(ParametersDisk):
            def read_many(self, offsets, length_bytes):
                t = super().read_many(offsets, length_bytes)
                level = 1.0 + 0.5 * np.sin(2 * np.pi * self.device_time_s / 30.0 + phase)
                tails = np.where(rng.random(t.size) < 0.1, rng.exponential(0.5e-3, t.size), 0.0)
                return t + 0.33e-9 * length_bytes * level + tails

        rng = np.random.default_rng(seed + 1000)
        phase = rng.uniform(0, 2 * np.pi)
        return Delayed(params, seed=seed, max_request_bytes=512 * 1024)


@pytest.mark.parametrize("drive", ["hp_c2247a", "wd800bd"])
def test_a_preset_with_its_buffer_calibrates_on_the_emulators_timing(drive):
    """The presets as catalogued, buffer included (hp_c2247a: 2 segments of 128 KiB, of which one for
    writes, reading ahead 64 KiB; WD800BD: 16 of 128 KiB), on the emulator's timing without the kernel:
    the read-ahead is found and its segment sized within the issue's 10 %, the rotation within 0.5 %,
    and the zones kept. (The emulator still serves presets without their buffer: through the kernel,
    the buffered WD800BD's zone rates scattered by up to 4 %.)"""
    rows = _zone_rows(drive, catalogued=True)
    for name in ("rotation_period_s", "read_ahead", "segment_bytes", "zone_rate_worst_bytes_per_s", "zone_count",
                 "zone_boundaries"):
        assert rows[name]["passed"], rows[name]


@pytest.mark.parametrize("drive", ["hp_c2247a", "wd800bd", pytest.param("cheetah4LP", marks=pytest.mark.slow)])
def test_head_switch_and_seek_from_a_misss_floor(drive):
    """The same-track floor the head switch and the seek curve are measured against is a miss's (the
    least time of a forward read that catches its sector), also on a drive that reads ahead: a hit's
    overhead is not a miss's (cheetah4LP's DiskSim parameters: 0.07 ms against 0.6 ms; with the hit's,
    its head switch came out 4.8 times too long and its mean seek 9 % long), and a caught miss that takes
    as long as a hit (WD800BD's overheads are equal) is told from one by the revolution lost at the
    strides between. The head switch within the issue's 10 % and the mean seek within 3 %, against the
    drive's own parameters; for cheetah4LP, whose head switch is six blocks' passage (a block's quantum
    and the host's jitter a large part of it), the median head switch of seeds 0-4 (single seeds give
    +6 to +12 %)."""
    rows = _zone_rows(drive, catalogued=drive != "cheetah4LP")
    assert rows["mean_seek_s"]["passed"], rows["mean_seek_s"]
    if drive != "cheetah4LP":
        assert rows["head_switch_s"]["passed"], rows["head_switch_s"]
        return
    errors = [rows["head_switch_s"]["error"]] + [_zone_rows(drive, seed=s)["head_switch_s"]["error"] for s in range(1, 5)]
    assert None not in errors and abs(float(np.median(errors))) <= 0.1, errors


@pytest.mark.integration
@pytest.mark.slow
# soak: two minutes of real device time; the zone mechanism is checked on the emulator's timing above
# (test_zones_on_the_emulators_timing), and notebook 08 calibrates an emulated drive through the kernel
@pytest.mark.soak
def test_calibrate_through_the_kernel_on_emulated_wd800bd(tmp_path):
    """`diskmodel calibrate DEV` on an emulated WD800BD (nbdkit, nbdfuse, loop, O_DIRECT): the
    rotation within 0.5 %, the 16 zones (their boundaries within 1 % of the capacity) and their
    rates within 3 %. The path splits a long read into
    requests (FUSE's largest, which reach the drive in any order), and a drive without read-ahead
    loses a revolution between each two: the zone reads keep to one request each."""
    from diskmodel.calibrate.emulate.devices import emulated_drives
    from diskmodel.calibrate.harness.drive_truth import drive_truth, emulation_errors
    from diskmodel.calibrate.harness.results import calibration_from_json

    require_root()
    require_tools("nbdkit", "nbdfuse", "fusermount3", "losetup", "chrt")
    out = tmp_path / "cal.json"
    # under SCHED_FIFO, the emulator above the reader: on a busy host their wake-ups otherwise come late by
    # up to a revolution, which drowns the rotation
    with emulated_drives(["wd800bd"], realtime_priority=50) as devices:
        proc = subprocess.run(["chrt", "--fifo", "40", sys.executable, "-m", "diskmodel.calibrate.cli",
                               "calibrate", devices[0].path,
                               "--budget-s", "120", "--json", str(out), "--no-progress"],
                              capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    json.loads(out.read_text())
    rows = {r["quantity"]: r for r in emulation_errors(drive_truth(_params("wd800bd")),
                                                       calibration_from_json(out))}
    for name in ("rotation_period_s", "zone_rate_worst_bytes_per_s", "zone_count", "zone_boundaries"):
        assert rows[name]["passed"], rows[name]


@pytest.mark.integration
@pytest.mark.slow
# soak: six minutes of real device time (three partitions at the 120 s), and a known gap: through the
# kernel every partition reads 0.7-5 % low, more on a busier host; the zone mechanism is checked on the
# emulator's timing above, and benchmarks/emulation_check.py --calibration-only records the figures
@pytest.mark.soak
def test_calibrate_each_partition_of_an_emulated_wd800bd():
    """An emulated WD800BD partitioned as the paper's Tables 1-3 (a DOS partition table on the device,
    attached again with ``losetup -P``): each partition is calibrated through the kernel within the
    issue's 120 s of device time, and its zone
    rates, by location on the drive, agree with the drive's own zones within 3 %. Each partition's
    place is the table's (the kernel's sysfs start and size)."""
    from pathlib import Path

    from _scripts import load_script

    require_root()
    require_tools("nbdkit", "nbdfuse", "fusermount3", "losetup", "partx", "chrt")
    module = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "_emulation_calibration.py",
                         "emulation_calibration_under_test")
    _, table = module._partition_table(_params("wd800bd").layout.total_blocks * 512)
    rows = module.partitions(120.0, realtime=True)
    assert [r["partition"] for r in rows] == [p[0] for p in module.PAPER_PARTITIONS_GB]
    assert [(r["start_bytes"] // 512, r["size_bytes"] // 512) for r in rows] == table
    for row in rows:
        assert row["zones"], row
        assert row["worst_error"] <= 0.03, (row["partition"], [round(z["error"], 4) for z in row["zones"]])


def test_parameters_disk_through_the_path_times_a_queued_read_from_its_submission():
    """With path_early_s, a read reaches the drive the host gap less that after the last completed; the
    host times it from its submission, a host gap after the last completion. A read after the drive
    idled is served from its arrival (the host's time is the drive's less path_early_s); one that
    arrives before the last one completed waits for it (the drive sees no gap), and the host's time
    is the last completion to its own, less the host gap. Against DriveSession served by hand."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk
    from diskmodel.model.simulator.session import DriveSession

    params = _bare("wd800bd")
    disk = ParametersDisk(params, host_gap_s=50e-6, host_gap_jitter_s=0.0, noise_s=0.0, path_early_s=120e-6)
    disk.idle(0.1)
    t = disk.read_many(np.array([1 << 30, (1 << 30) - 512]), 512)
    session = DriveSession(params)
    first = session.serve(False, (1 << 30) // 512, 1, 0.1 + 50e-6 - 120e-6)
    second = session.serve(False, (1 << 30) // 512 - 1, 1, first.completion_s + 50e-6 - 120e-6)
    assert second.start_s == first.completion_s  # queued: no gap at the drive
    assert t[0] == pytest.approx(first.completion_s - (0.1 + 50e-6), abs=1e-12)
    assert t[1] == pytest.approx(second.completion_s - first.completion_s - 50e-6, abs=1e-12)
    with pytest.raises(ValueError, match="path_early_s"):
        ParametersDisk(params, path_early_s=-1.0)


def test_a_dec_read_ahead_reaches_the_end_of_its_track():
    """atlas10k reads ahead by DiskSim's scheme 4 (DEC): to the end of the track holding the read's last
    block, a track further only where the segment began on an earlier track. After a one-block read
    (which begins its segment) the block before its track's end is a hit and the one past it a miss,
    on the emulator's own timing, wherever the block lies; the truth is that reach's mean over the
    drive (half a track, about 150 blocks), not the 374-block segment (a calibration's probe found
    half a track and was counted 48-57 % short)."""
    from diskmodel.calibrate.harness.drive_truth import drive_truth
    from diskmodel.model.simulator.session import DriveSession
    from diskmodel.model.simulator.state import HitKind

    params = _params("atlas10k")
    assert params.read_ahead_scheme == 4 and params.segment_size_blocks == 374
    rng = np.random.default_rng(5)
    reaches = []
    for n, lbn in enumerate(rng.integers(0, params.layout.total_blocks - 1000, 1000).tolist()):
        cyl, head = params.layout.lbn_to_pbn(np.arange(lbn, lbn + 1000))[:2]
        to_end = int(np.argmax((cyl != cyl[0]) | (head != head[0])))  # blocks from lbn to its track's end
        reaches.append(to_end - 1)
        for stride, kind in ((to_end - 1, HitKind.CACHE_HIT), (to_end, HitKind.MEDIA)):
            if n >= 40 or stride < 1:
                continue
            session = DriveSession(params)
            done = session.serve(False, lbn, 1, 0.0).completion_s
            assert session.serve(False, lbn + stride, 1, done + 0.05).hit == kind, (lbn, stride)
    segment = drive_truth(params)["segment_bytes"] / 512
    assert segment == pytest.approx(np.mean(reaches), abs=4 * np.std(reaches) / np.sqrt(len(reaches)))
    assert segment < 0.5 * params.segment_size_blocks


def test_a_zone_rate_pair_is_issued_alike_so_the_callers_own_time_between_calls_cancels():
    """The zone stage's rate is a long read's time less a one-block read's, each right after a one-block
    read just ahead of it, on a drive that then waits the rest of a revolution. Both must be issued alike:
    a caller spends longer between two calls than between two reads of one call, and the head turns on
    meanwhile. With 0.3 ms of the caller's own time per call on the bare WD800BD (no read-ahead), the
    sustained rate at three locations comes within 1 % of the drive's; taking the one-block pair in one
    call read the rate 3 % high."""
    from diskmodel.calibrate.harness.drive_truth import ParametersDisk, drive_truth
    from diskmodel.calibrate.harness.meter import Meter
    from diskmodel.calibrate.harness.stages import _rate_at

    params = _bare("wd800bd")
    truth = drive_truth(params)
    bounds, rates = truth["zone_bounds_bytes"], truth["zone_rates_bytes_per_s"]
    disk = ParametersDisk(params, call_gap_s=0.3e-3, host_gap_jitter_s=0.0, noise_s=0.0, max_request_bytes=512 << 10)
    meter = Meter(disk, budget_s=60.0)
    for at in (3_300_000_000, 22_100_000_000, 49_200_000_000):
        at = at // 512 * 512
        found = float(np.mean(_rate_at(meter, at, 512 << 10, 24, max_repeats=24)))
        true = rates[np.searchsorted(bounds[:, 0], at, side="right") - 1]
        assert found == pytest.approx(true, rel=0.01), (at, found / true - 1)
