"""Rotational latency (Djordjevic & Timcenko 2015, eq. 8).

With requests uniformly distributed over the sectors of a track, the
rotational latency is uniform on [0, T_rot) and its mean is T_rot / 2.
"""
from __future__ import annotations

import numpy as np

from .._checks import finite_array, finite_scalar


def rotation_period_s(rpm):
    """Time of one revolution [s] for a spindle speed *rpm* [rev/min]."""
    rpm = finite_array("rpm", rpm, positive=True)
    period = 60.0 / rpm
    return float(period) if period.ndim == 0 else period


def rpm_from_period(rotation_period_s):
    """Spindle speed [rev/min] for a revolution time [s]."""
    period = finite_array("rotation_period_s", rotation_period_s, positive=True)
    rpm = 60.0 / period
    return float(rpm) if rpm.ndim == 0 else rpm


def mean_rotational_latency_s(rpm):
    """Expected rotational latency [s], T_RL = R_rotate / 2 (eq. 8)."""
    return rotation_period_s(rpm) / 2.0


def rotational_latency_cdf(latency_s, rpm):
    """P(T_RL <= latency_s) for the uniform latency on [0, period) [dimensionless]."""
    period = rotation_period_s(rpm)
    latency = finite_array("latency_s", latency_s)
    return np.clip(latency / period, 0.0, 1.0)


def sample_rotational_latency_s(rng: np.random.Generator, rpm, size) -> np.ndarray:
    """Draw rotational latencies [s] uniformly on [0, period)."""
    period = rotation_period_s(finite_scalar("rpm", rpm, positive=True))
    return rng.uniform(0.0, period, size=size)
