"""The emulated path's probe (diskmodel.calibrate.emulate.devices): each size read until the 95 % confidence
interval of its median is within PROBE_TOLERANCE of its cost, at most PROBE_READS reads in all."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from diskmodel.calibrate.emulate import devices


def test_the_medians_interval_covers_it_95_percent_of_the_time_by_the_binomial_law():
    """The order statistics :func:`devices._probe_cost` bounds the median with hold it with at least 95 %
    probability at every count of reads the probe looks at: P(X_(l) <= median <= X_(u)) = P(l <= B < u),
    B ~ Binomial(n, 1/2) counting the times below the median (Conover, sec. 3.2), computed here by scipy; and
    they are the narrowest symmetric pair that does. The
    kept times are 2**rank (shuffled, after a warm-up of huge ones), so that the half-width names both ranks."""
    rng = np.random.default_rng(3)
    for reads in range(devices.PROBE_MIN_READS_PER_SIZE, devices.PROBE_READS + 1):
        warm = reads // 4
        ranks = rng.permutation(reads - warm)
        n = len(ranks)
        _, half_width = devices._probe_cost([1e300] * warm + [2.0 ** r for r in ranks])
        diff = 2 * half_width                         # 2**high - 2**low, exact below 2**53
        high = int(diff).bit_length()
        low = int(2 ** high - diff).bit_length() - 1
        assert 2.0 ** high - 2.0 ** low == diff and low < (n - 1) / 2 < high, (n, low, high)
        coverage = stats.binom.cdf(high, n, 0.5) - stats.binom.cdf(low, n, 0.5)
        assert coverage >= 0.95, (n, low, high, coverage)
        # and the narrowest such: one rank in on each side covers less than 95 %
        assert stats.binom.cdf(high - 1, n, 0.5) - stats.binom.cdf(low + 1, n, 0.5) < 0.95, (n, low, high)


def test_the_cost_is_the_median_after_the_warm_up_less_the_delay():
    rng = np.random.default_rng(4)
    seen = list(devices.PROBE_DELAY_S + rng.uniform(300e-6, 700e-6, 41))
    cost, _ = devices._probe_cost(seen)
    kept = np.sort(seen[10:])                         # 41 reads: the first 10 warm the path up
    assert cost == pytest.approx(kept[15] - devices.PROBE_DELAY_S)   # the median of 31


def _fake_reads(spread_s: dict[int, float], seed: int = 1):
    """read(size, i) for the probe loop: the delay + 500 us + uniform noise of +-spread_s[size]; the sizes
    asked, in order."""
    rng = np.random.default_rng(seed)
    asked: list[int] = []

    def read(n: int, i: int) -> float:
        assert i == len(asked)
        asked.append(n)
        return devices.PROBE_DELAY_S + 500e-6 + rng.uniform(-spread_s[n], spread_s[n])
    return read, asked


def test_a_quiet_path_settles_every_size_at_the_minimum_reads():
    sizes = [512, 4096, 65536]
    read, asked = _fake_reads({n: 2e-6 for n in sizes})
    times = devices._probe_times(sizes, read)
    assert {n: len(t) for n, t in times.items()} == {n: devices.PROBE_MIN_READS_PER_SIZE for n in sizes}
    # taken in turn, as the old fixed count took them
    assert asked[:6] == sizes + sizes


def test_a_noisy_size_is_read_on_alone_until_the_cap_and_the_quiet_ones_stop():
    sizes = [512, 4096, 65536]
    read, asked = _fake_reads({512: 2e-6, 4096: 2e-6, 65536: 400e-6})
    times = devices._probe_times(sizes, read)
    assert len(asked) == devices.PROBE_READS
    assert len(times[512]) == len(times[4096]) == devices.PROBE_MIN_READS_PER_SIZE
    assert len(times[65536]) == devices.PROBE_READS - 2 * devices.PROBE_MIN_READS_PER_SIZE
    cost, half_width = devices._probe_cost(times[65536])
    assert half_width > devices.PROBE_TOLERANCE * cost


def test_a_moderately_noisy_size_stops_once_its_interval_is_within_the_tolerance():
    """+-100 us of uniform noise on 500 us: the interval's half-width, about 200 us x 0.98 / sqrt(n), comes
    within 5 % of the cost (25 us) after some tens of reads, not at the minimum and not at the cap."""
    read, asked = _fake_reads({4096: 100e-6})
    times = devices._probe_times([4096], read)
    n = len(times[4096])
    assert devices.PROBE_MIN_READS_PER_SIZE < n < devices.PROBE_READS
    assert devices._probe_settled(times[4096]) and not devices._probe_settled(times[4096][:-1])
    cost, _ = devices._probe_cost(times[4096])
    assert cost == pytest.approx(500e-6, abs=devices.PROBE_TOLERANCE * 500e-6)


def test_a_short_probe_count_caps_the_reads():
    sizes = [512, 4096, 65536]
    read, asked = _fake_reads({n: 400e-6 for n in sizes})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(devices, "PROBE_READS", 25)
        times = devices._probe_times(sizes, read)
    assert len(asked) == 25 and sorted(len(t) for t in times.values()) == [8, 8, 9]
