"""Budgets that hold (issue #16): the budget is a hard cap on device time, a budget too
small for one calibration is refused with its minimum, and bad read times stop the run."""
from __future__ import annotations

import math
import sys
import textwrap
import time

import numpy as np
import pytest

from _helpers import FlatBackend, assert_one_error_line
from diskmodel.calibrate.harness import checks
from diskmodel.calibrate import cli
from diskmodel.calibrate.harness import measure, stages
from diskmodel.calibrate.harness import results  # noqa: F401 (imported before any run is timed)
from diskmodel.calibrate.harness.backend import BackendProtocolError, BackendReadError, backend_from_spec
from diskmodel.calibrate.harness.measure import BudgetTooSmall, calibrate
from diskmodel.calibrate.harness.meter import Meter
from diskmodel.calibrate.harness.mechanics import measure_buffer
from diskmodel.calibrate.harness.stages import measure_seek, minimum_reads
from diskmodel.calibrate.harness.simulated import calibration_errors, simulated_disk
from diskmodel.model.units import GIB


class Sleepy:
    """A real-time backend: every read takes 0.05 s of wall time, and says so."""

    queue_depth = 1

    def __init__(self, read_s=0.05):
        self.size_bytes = GIB
        self.block_size_bytes = 4096
        self.read_s = read_s
        self.reads = 0

    def read(self, offset_bytes, length_bytes):
        self.reads += 1
        time.sleep(self.read_s)
        return self.read_s


class Counting:
    """Wraps a backend; counts and records the reads that reach it."""

    def __init__(self, inner, vectorised=True):
        self.inner = inner
        self.size_bytes = inner.size_bytes
        self.block_size_bytes = inner.block_size_bytes
        self.offsets = []
        if vectorised:
            self.read_many = self._read_many

    @property
    def device_time_s(self):
        return self.inner.device_time_s

    @property
    def reads(self):
        return len(self.offsets)

    def read(self, offset_bytes, length_bytes):
        self.offsets.append(int(offset_bytes))
        return self.inner.read(offset_bytes, length_bytes)

    def _read_many(self, offsets, length_bytes):
        self.offsets.extend(int(o) for o in offsets)
        return self.inner.read_many(offsets, length_bytes)


class Virtual:
    """A flash-like device on a virtual clock: latency + transfer, no mechanics.
    Optionally each read also takes *sleep_s* of wall time, and from read number
    *slow_after* on every read costs *slow_factor* times as much."""

    queue_depth = 1

    def __init__(self, latency_s=1e-3, rate=100e6, sleep_s=0.0, slow_after=None, slow_factor=1.0):
        self.size_bytes = GIB
        self.block_size_bytes = 4096
        self.latency_s, self.rate, self.sleep_s = latency_s, rate, sleep_s
        self.slow_after, self.slow_factor = slow_after, slow_factor
        self.clock = 0.0
        self.reads = 0
        self.rng = np.random.default_rng(0)

    @property
    def device_time_s(self):
        return self.clock

    def read_many(self, offsets, length_bytes):
        n = len(offsets)
        if self.sleep_s:
            time.sleep(self.sleep_s * n)
        t = self.latency_s * self.rng.uniform(0.9, 1.1, n) + length_bytes / self.rate
        if self.slow_after is not None:
            index = self.reads + np.arange(n)
            t = np.where(index >= self.slow_after, t * self.slow_factor, t)
        self.reads += n
        self.clock += float(t.sum())
        return t

    def read(self, offset_bytes, length_bytes):
        return float(self.read_many([offset_bytes], length_bytes)[0])


# ---------------------------------------------------------------------------
# The budget is a hard cap
# ---------------------------------------------------------------------------

@pytest.mark.serial  # asserts a wall time
def test_real_time_backend_with_a_2_s_budget_is_refused_up_front():
    backend = Sleepy()
    start = time.monotonic()
    try:
        result = calibrate(backend, budget_s=2, progress=False)
    except BudgetTooSmall as exc:
        wall = time.monotonic() - start
        assert wall < 1.0
        assert backend.reads <= stages.PROBE_READS
        assert exc.budget_s == 2
        # the minimum reads at 0.05 s each, and the zone reads' transfers
        counts = minimum_reads(GIB, 4096)
        reads = sum(c[0] for c in counts.values())
        expected = reads * 0.05 + sum(c[1] for c in counts.values()) * stages.ZONE_MIN_TRANSFER_S
        assert exc.minimum_s == pytest.approx(expected, rel=0.05)
        assert exc.minimum_s > 30
        message = str(exc)
        assert message.startswith("budget_s=2 is too small")
        assert f"at least ~{exc.minimum_s:g} s of device time" in message
        assert exc.per_read_s == pytest.approx(0.05, rel=0.05)  # a sleep overshoots by a little
        assert f"{reads} reads of about {exc.per_read_s:.2g} s each" in message
        assert message.endswith(f"raise it to at least {exc.minimum_s:g}")
        assert "\n" not in message
    else:  # a calibration that fits must hold the budget
        assert time.monotonic() - start <= 10.0
        assert result.device_time_s <= 2.0


@pytest.mark.serial  # asserts a wall time
def test_user_report_half_second_reads_spend_at_most_the_budget():
    """The issue's case (0.5 s reads, --budget-s 2): refused within the budget, not after 4.5 minutes."""
    backend = Sleepy(read_s=0.5)
    start = time.monotonic()
    with pytest.raises(BudgetTooSmall) as info:
        calibrate(backend, budget_s=2, progress=False)
    assert time.monotonic() - start <= 2.0 + 0.5
    assert backend.reads * 0.5 <= 2.0
    assert info.value.minimum_s > 300


@pytest.mark.parametrize("budget", [30.0])
def test_simulated_disk_budget_is_a_hard_cap(budget):
    sim = simulated_disk("wd800bd", seed=0)
    result = calibrate(sim, budget_s=budget, progress=False)
    assert result.device_time_s <= budget
    assert sim.device_time_s <= budget
    assert result.device_time_s > 0.95 * budget  # and it is spent
    err = calibration_errors(sim, result)
    assert abs(err["rotation_period"]) < 0.005


@pytest.mark.parametrize("budget", [9.0, 10.0, 10.5, 11.0, 12.0, 14.0])
def test_budgets_near_the_minimum_never_overrun(budget):
    """Either a calibration within the budget or BudgetTooSmall, also within it."""
    sim = simulated_disk("wd800bd", seed=1)
    try:
        result = calibrate(sim, budget_s=budget, progress=False, seed=1)
    except BudgetTooSmall as exc:
        assert exc.minimum_s > budget
        assert sim.device_time_s <= budget
    else:
        assert result.device_time_s <= budget
        assert sim.device_time_s <= budget
        assert result.seek_round.max() + 1 >= stages.SEEK_MIN_ROUNDS
        assert len(result.zone_locations_bytes) >= stages.ZONE_MIN_LOCATIONS


def test_reads_dearer_than_the_probe_said_stop_within_the_budget():
    """Accepted up front (cheap probe reads), then ten times dearer: BudgetTooSmall in flight,
    the device time still within the budget, and a minimum that would do."""
    backend = Virtual(latency_s=1e-3, slow_after=stages.PROBE_READS, slow_factor=10.0)
    with pytest.raises(BudgetTooSmall) as info:
        calibrate(backend, budget_s=3.0, progress=False)
    assert backend.device_time_s <= 3.0
    assert backend.reads > stages.PROBE_READS  # not refused up front
    exc = info.value
    assert "before its minimum" in str(exc)
    assert exc.minimum_s > 3.0


def test_a_stage_beyond_its_minimum_stops_where_the_budget_runs_out():
    sim = simulated_disk("wd800bd", seed=0)
    meter = Meter(sim, budget_s=5.0)
    seek = measure_seek(meter, np.random.default_rng(0), budget_s=100.0)
    assert sim.device_time_s <= 5.0
    assert seek.rounds >= stages.SEEK_MIN_ROUNDS
    assert "the budget ran out" in seek.detail
    assert seek.time_s.size == 2 * seek.distances_bytes.size * seek.rounds  # only whole rounds kept


@pytest.mark.serial  # asserts a wall time
@pytest.mark.slow  # several seconds: the full tier runs it
def test_a_virtual_clock_backend_is_capped_in_wall_time():
    """Device time is cheap here (0.1 ms a read) but every read takes 1 ms of wall time: the
    run stops at WALL_TIME_MULTIPLE x budget_s of wall time, beyond the minimums, and says so."""
    import statsmodels.api  # noqa: F401 (the fits import it once: not what is timed here)

    budget = 2.0
    backend = Virtual(latency_s=1e-4, sleep_s=1e-3)
    start = time.monotonic()
    result = calibrate(backend, budget_s=budget, progress=False)
    wall = time.monotonic() - start
    assert wall <= measure.WALL_TIME_MULTIPLE * budget + measure.FIT_ALLOWANCE_S
    assert result.device_time_s <= budget
    # the measurement stopped at the wall-time limit (4 s), not at its device time
    assert result.device_time_s < 0.8 * budget
    assert "the wall time ran out" in result.seek_detail
    assert backend.reads * 1e-3 <= measure.WALL_TIME_MULTIPLE * budget
    assert backend.reads > 2000  # it did use the wall time it had


def test_minimum_reads_are_the_stages_own_minimums():
    """One implementation: a stage given no budget makes exactly the reads counted."""
    sim = Virtual()
    counts = minimum_reads(sim.size_bytes, sim.block_size_bytes)
    meter = Meter(sim)
    found = measure_buffer(meter, np.random.default_rng(0))  # flash: no read-ahead, the test alone
    assert not found.detected
    assert meter.reads == counts["buffer"][0] == stages.BUFFER_MIN_READS
    before = meter.reads
    measure_seek(meter, np.random.default_rng(0), budget_s=0.0)
    assert meter.reads - before == counts["seek"][0] == stages.SEEK_MIN_ROUNDS * 2 * 48


# ---------------------------------------------------------------------------
# Budgets refused
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("vectorised", [True, False])
def test_tiny_budget_refused_after_the_probe_reads_with_the_minimum(vectorised):
    backend = Counting(simulated_disk("wd800bd", seed=0), vectorised=vectorised)
    with pytest.raises(BudgetTooSmall) as info:
        calibrate(backend, budget_s=1e-9, progress=False)
    assert 1 <= backend.reads <= stages.PROBE_READS
    exc = info.value
    assert exc.budget_s == 1e-9
    assert 5.0 < exc.minimum_s < 30.0  # a few hundred reads of ~10 ms on a 7200 rpm disk
    message = str(exc)
    assert message.startswith("budget_s=1e-09 is too small: one calibration needs at least ~")
    assert f"raise it to at least {exc.minimum_s:g}" in message


@pytest.mark.parametrize("bad", [0, -1, -0.5, float("nan"), float("inf"), True, False, "5", None, [5]])
def test_invalid_budgets_refused_before_any_read(bad):
    backend = Counting(simulated_disk("hp97560"))
    with pytest.raises(ValueError, match="budget_s") as info:
        calibrate(backend, budget_s=bad, progress=False)
    assert not isinstance(info.value, BudgetTooSmall)
    assert backend.reads == 0


def test_budget_too_small_on_the_command_line_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "tiny_budget_backend.py").write_text(textwrap.dedent("""
        from diskmodel.calibrate.harness.simulated import simulated_disk

        def make():
            return simulated_disk("hp97560")
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("tiny_budget_backend", None)
    with pytest.raises(BudgetTooSmall) as info:
        calibrate(simulated_disk("hp97560"), budget_s=1e-9, progress=False)
    code = cli.main(["calibrate", "--backend", "tiny_budget_backend:make", "--budget-s", "1e-9", "--no-progress"])
    assert code == 2
    assert_one_error_line(capsys.readouterr().err, "1e-09 is too small", f"~{info.value.minimum_s:g} s")


# ---------------------------------------------------------------------------
# Bad reads
# ---------------------------------------------------------------------------

class Faulty:
    """Good reads (1 ms) until read number *at*, which returns *value* or raises it."""

    def __init__(self, value, at=20, vectorised=True):
        self.size_bytes = GIB
        self.block_size_bytes = 4096
        self.value, self.at = value, at
        self.reads = 0
        self.bad_offset = None
        if vectorised:
            self.read_many = self._read_many

    def read(self, offset_bytes, length_bytes):
        index = self.reads
        self.reads += 1
        if index == self.at:
            self.bad_offset = int(offset_bytes)
            if isinstance(self.value, BaseException):
                raise self.value
            return self.value
        return 1e-3

    def _read_many(self, offsets, length_bytes):
        return [self.read(o, length_bytes) for o in offsets]


@pytest.mark.parametrize("vectorised", [True, False])
@pytest.mark.parametrize("value,shown", [(-1.0, "returned -1 s"), (-0.001, "returned -0.001 s"),
                                         (float("nan"), "returned nan s"), (float("inf"), "returned inf s")])
def test_bad_read_times_stop_the_calibration_naming_the_offset(value, shown, vectorised):
    backend = Faulty(value, vectorised=vectorised)
    with pytest.raises(BackendReadError) as info:
        calibrate(backend, budget_s=30, progress=False)
    exc = info.value
    assert isinstance(exc, BackendProtocolError) and isinstance(exc, RuntimeError)
    assert backend.bad_offset is not None
    message = str(exc)
    assert message == (f"backend read at offset {backend.bad_offset} (length 4096) {shown}: "
                       "a read time must be finite and >= 0")
    assert backend.reads == backend.at + 1 or vectorised  # a read-only backend stops at the bad read


@pytest.mark.parametrize("vectorised", [True, False])
def test_wrong_type_of_read_time_is_refused(vectorised):
    backend = Faulty("0.001", vectorised=vectorised)
    with pytest.raises(BackendReadError, match=r"offset \d+ .*'0\.001'.*number of seconds"):
        calibrate(backend, budget_s=30, progress=False)
    backend = Faulty(None, vectorised=False)
    with pytest.raises(BackendReadError, match="offset .*returned None"):
        calibrate(backend, budget_s=30, progress=False)


def test_a_raising_read_names_the_offset_and_the_exception():
    backend = Faulty(ZeroDivisionError("division by zero"), vectorised=False)
    with pytest.raises(BackendReadError) as info:
        calibrate(backend, budget_s=30, progress=False)
    assert str(info.value) == (f"backend read at offset {backend.bad_offset} (length 4096) raised "
                               "ZeroDivisionError: division by zero")
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_a_raising_read_many_names_its_offsets():
    backend = Faulty(OSError(5, "Input/output error"), vectorised=True)
    with pytest.raises(BackendReadError, match=r"backend read_many at offsets? \d+.* raised OSError"):
        calibrate(backend, budget_s=30, progress=False)


def test_read_many_returning_too_few_times():
    class Short(Virtual):
        def read_many(self, offsets, length_bytes):
            return super().read_many(offsets, length_bytes)[:-1] if len(offsets) > 1 else super().read_many(
                offsets, length_bytes)

    with pytest.raises(BackendReadError, match="returned 1 times for 2 reads"):  # the read-ahead test's pair
        calibrate(Short(), budget_s=30, progress=False)


# ---------------------------------------------------------------------------
# backend_from_spec: a failing factory or module is one line
# ---------------------------------------------------------------------------

def test_backend_from_spec_failing_factory_and_module(tmp_path, monkeypatch):
    (tmp_path / "failing_backends.py").write_text(textwrap.dedent("""
        def make():
            return 1 / 0
        """))
    (tmp_path / "broken_module.py").write_text("raise RuntimeError('no device here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("failing_backends", "broken_module"):
        sys.modules.pop(name, None)
    with pytest.raises(BackendProtocolError) as info:
        backend_from_spec("failing_backends:make")
    assert str(info.value) == "backend 'failing_backends:make': make() raised ZeroDivisionError: division by zero"
    with pytest.raises(BackendProtocolError) as info:
        backend_from_spec("broken_module:make")
    assert str(info.value) == ("backend 'broken_module:make': importing module 'broken_module' raised "
                               "RuntimeError: no device here")
    with pytest.raises(BackendProtocolError, match="cannot import"):
        backend_from_spec("no_such_module_for_budget_tests:make")


def test_budget_too_small_pickles():
    import pickle

    exc = BudgetTooSmall(2.0, 41.3, reads=817, per_read_s=0.05)
    again = pickle.loads(pickle.dumps(exc))
    assert str(again) == str(exc) and again.minimum_s == exc.minimum_s == 42 and again.budget_s == 2.0
    assert math.isclose(again.per_read_s, 0.05)


class _JitteryFlat(FlatBackend):
    """A 4 MiB flash-like device on a busy host: about 1 ms a read with a wide spread (the spread a loaded
    host adds), so that the strides the rotation's chains ask for span more than the device."""

    size_bytes, block_size_bytes = 4 * 2**20, 512

    def __init__(self):
        self.rng = np.random.default_rng(1)

    def read_many(self, offsets, length):
        return 1e-3 * self.rng.lognormal(0.0, 0.6, len(offsets))


def test_rotation_chains_longer_than_a_small_device_find_no_rotation_rather_than_fail():
    """A rough revolution seen in a busy host's noise on a small flat device: the rotation's forward chains,
    their strides widened by the jitter, do not fit the device. The start point then gives no period (as
    one where no stride waits under a turn); before, the whole calibration stopped with "a chain of N reads ... does not fit the device"."""
    from diskmodel.calibrate.harness.mechanics import BufferMeasurement, measure_rotation

    meter = Meter(_JitteryFlat(), budget_s=30.0)
    buffer = BufferMeasurement(False, None, None, None, 4e-3, "a rough revolution from noise")
    got = measure_rotation(meter, np.random.default_rng(0), budget_s=10.0, buffer=buffer,
                           rate_at=lambda o: np.full(len(o), 50e6), starts=6)
    # the start points whose chains did not fit gave no period; the others' periods are the noise's, which
    # the calibration's plausibility check judges (a flat device: no mechanical seek)
    assert len(got.period_samples_s) < 6


class _HiccupFirstSmallReads(Virtual):
    """A flash-like device whose first *hiccups* one-block reads each take 10 ms (a host's hiccup), longer than
    any read of it transfers: the zones' pilot sees no transfer rate in its first rounds."""

    def __init__(self, hiccups):
        super().__init__(latency_s=1e-4, rate=1e9)
        self.hiccups = hiccups
        self.small_reads = 0

    def read_many(self, offsets, length_bytes):
        t = super().read_many(offsets, length_bytes)
        if length_bytes == self.block_size_bytes:
            for k in range(len(t)):
                if self.small_reads < self.hiccups:
                    t[k] = 10e-3
                self.small_reads += 1
        return t


def test_the_zone_pilot_tries_again_at_its_longest_read_before_giving_up():
    """At the longest read the pilot may make (the device's largest whole request), a round whose one-block
    reads all hiccuped is tried again; before, one such round stopped the calibration with "could not measure
    a transfer rate". A device whose one-block reads never come out shorter is still refused."""
    from diskmodel.calibrate.harness.stages import measure_zones

    dev = _HiccupFirstSmallReads(hiccups=15)  # every one-block read of the first round
    dev.max_request_bytes = 512 * 1024
    got = measure_zones(Meter(dev, budget_s=60.0), np.random.default_rng(0), budget_s=5.0, rotation_period_s=None)
    assert np.nanmedian(got.rates_bytes_per_s) == pytest.approx(1e9, rel=0.2)
    never = _HiccupFirstSmallReads(hiccups=10**9)
    never.max_request_bytes = 512 * 1024
    with pytest.raises(ValueError, match="could not measure a transfer rate"):
        measure_zones(Meter(never, budget_s=60.0), np.random.default_rng(0), budget_s=5.0, rotation_period_s=None)


class _StallingFlat(Virtual):
    """A flash device on a busy host: a read takes tens of microseconds, and more than half of them also meet
    a stall of one to six milliseconds (another process's time slice)."""

    def __init__(self, seed):
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def read_many(self, offsets, length):
        n = len(offsets)
        stalled = self.rng.uniform(size=n) < 0.6
        t = 60e-6 + stalled * self.rng.uniform(1e-3, 6e-3, n)
        self.clock += float(t.sum())
        return t


def test_a_flash_device_whose_reads_meet_host_stalls_gives_no_rough_revolution():
    """Before, a median of five descending reads past a millisecond was taken for a revolution: the forward
    chains then found a "period" in the noise and the track stage stopped on an empty selection (seen in CI on
    a flash loop device). A drive's descending read waits the same revolution every time; stalls do not."""
    confirmed = 0
    for seed in range(12):
        found = measure_buffer(Meter(_StallingFlat(seed), budget_s=60.0), np.random.default_rng(seed))
        assert found.rough_period_s is None and not found.detected, seed
        confirmed += "stalls" in found.no_revolution_why
    assert confirmed >= 3  # the seeds whose first five descending reads took a stall for a revolution


@pytest.mark.parametrize("drive", ["wd800bd", "hp_c2247a", "cheetah4LP", "atlas10k"])
def test_a_rotating_drives_descending_reads_still_give_its_rough_revolution(drive, disksim_dir):
    """The stall check keeps a real revolution: the simulated drive's descending reads wait about one turn each."""
    disk = simulated_disk(drive if drive in ("wd800bd", "hp_c2247a") else disksim_dir / drive, seed=0)
    found = measure_buffer(Meter(disk, budget_s=60.0), np.random.default_rng(0))
    assert 0.5 * disk.rotation_period_s < found.rough_period_s < 1.05 * disk.rotation_period_s


@pytest.mark.parametrize("seed", range(4))
def test_a_period_far_shorter_than_the_rough_revolution_is_not_taken(seed):
    """A rough revolution from a busy host's noise over a flat device: each forward chain's "period" is then the
    noise's (tens of microseconds), under half the descending read's wait, which a real revolution never is."""
    from diskmodel.calibrate.harness.mechanics import BufferMeasurement, measure_rotation

    device = Virtual(latency_s=60e-6, rate=900e6)
    device.rng = np.random.default_rng(seed)
    buffer = BufferMeasurement(False, None, None, None, 4e-3, "a rough revolution from noise")
    got = measure_rotation(Meter(device, budget_s=30.0), np.random.default_rng(seed), budget_s=10.0, buffer=buffer,
                           rate_at=lambda o: np.full(len(o), 900e6), starts=6)
    assert got.period_s is None and got.period_samples_s == []


def test_track_chains_whose_reads_split_in_two_do_not_stop_the_calibration():
    """A track chain whose reads fall in two groups far apart (a stall every other read) has a median between
    them that no read is near: the host's jitter is then taken from all of the chain's reads. Before, the
    percentile of an empty selection raised IndexError (seen in CI on a flash loop device)."""
    from diskmodel.calibrate.harness.mechanics import BufferMeasurement, RotationMeasurement, measure_tracks

    class Split(Virtual):
        def read_many(self, offsets, length_bytes):
            n = len(offsets)
            t = np.where(np.arange(self.reads, self.reads + n) % 2 == 0, 0.2e-3, 3e-3)
            self.reads += n
            self.clock += float(t.sum())
            return t

    rotation = RotationMeasurement(4e-3, 1e-6, [4e-3, 4e-3], 0.3e-3, 20e-6, [GIB // 4, GIB // 2], "given",
                                   transfer_samples_s=[20e-6])
    buffer = BufferMeasurement(False, None, None, None, 4e-3, "given")
    got = measure_tracks(Meter(Split(), budget_s=60.0), np.random.default_rng(0), rotation, buffer)
    assert got.reads > 0


def test_a_start_points_block_passage_far_from_the_median_does_not_set_a_track_chains_stride():
    """A start point whose block passage came out a thousandth of the others' (the host's noise at a start point)
    made a track chain's stride (a third of a track) span more than the device, and ChainDoesNotFit stopped the
    whole calibration (seen through the kernel on a 1 GB emulated hp_c2247a). A passage more than three times off
    the median is not its zone's: the chain takes the median's."""
    from diskmodel.calibrate.harness.mechanics import BufferMeasurement, RotationMeasurement, measure_tracks

    rotation = RotationMeasurement(4e-3, 1e-6, [4e-3, 4e-3], 0.3e-3, 20e-6, [GIB // 4, GIB // 2], "given",
                                   transfer_samples_s=[20e-9, 20e-6])
    buffer = BufferMeasurement(False, None, None, None, 4e-3, "given")
    got = measure_tracks(Meter(Virtual(), budget_s=60.0), np.random.default_rng(0), rotation, buffer)
    assert got.reads > 0


def test_a_track_chain_longer_than_the_device_leaves_the_tracks_not_visible_and_says_why():
    """Where every block passage gives a track chain longer than the device, the track stage is not visible with
    the reason, and the calibration goes on (before, ChainDoesNotFit stopped it)."""
    from diskmodel.calibrate.harness.measure import _beyond_minimum
    from diskmodel.calibrate.harness.mechanics import BufferMeasurement, RotationMeasurement

    rotation = RotationMeasurement(4e-3, 1e-6, [4e-3, 4e-3], 0.3e-3, 20e-9, [GIB // 4, GIB // 2], "given",
                                   transfer_samples_s=[20e-9])
    buffer = BufferMeasurement(False, None, None, None, 4e-3, "given")
    meter = Meter(Virtual(), budget_s=60.0)
    _, tracks = _beyond_minimum(meter, np.random.default_rng(0), buffer, rotation, lambda o: np.full(len(o), 1e8),
                                until_s=30.0, later_s=0.0)
    assert tracks.head_switch.value is None and tracks.head_switch.status == "not visible"
    assert "not measurable here" in tracks.head_switch.detail and "does not fit the device" in tracks.detail
