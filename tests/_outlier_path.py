"""A virtual drive behind the kernel's path with jittered legs and, now and then, a read delayed by milliseconds
(a preempted thread, a late wake-up: the read right after the host slept more often), for the buffer stage's tests and ``benchmarks/_segment_outliers.py``.

:class:`OutlierPathDisk` is ``KernelPathDisk`` (``tests/test_head_switch_kernel_path.py``: the path's shape from
the emulator's request log) with each leg's uniform jitter set, and each read, at a given share, held on one of
its two legs by a time drawn uniform over a range: on the way in (the drive sees it that much later, the host
timed it from its submission) or on the way back (the drive is done, the host sees it that much later); the
read right after an idle, at a share of its own on top.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_head_switch_kernel_path import KernelPathDisk, _params  # noqa: E402

__all__ = ["OutlierPathDisk", "drive_params"]


def drive_params(drive: str):
    """The emulator's parameters of *drive* (its buffer as the emulator serves it)."""
    return _params(drive)


class OutlierPathDisk(KernelPathDisk):
    """KernelPathDisk with legs jittered by +-*jitter_s* and a share *outlier_share* of reads (and
    *idle_outlier_share* of those right after an idle) held *outlier_s* (low, high) on one leg (see the module
    doc)."""

    def __init__(self, params, *, seed: int = 0, jitter_s: float = 25e-6, outlier_share: float = 1 / 200,
                 outlier_s: tuple = (2e-3, 5e-3), idle_outlier_share: float = 0.0, **path):
        super().__init__(params, seed=seed, jitter_s=jitter_s, **path)
        self.outlier_share, self.outlier_s = float(outlier_share), (float(outlier_s[0]), float(outlier_s[1]))
        self.idle_outlier_share = float(idle_outlier_share)
        self._outliers = np.random.default_rng(10_000 + seed)
        self._after_idle = False
        self.outliers = 0

    def idle(self, seconds: float) -> None:
        super().idle(seconds)
        self._after_idle = True

    def _through_the_path(self, offs, length, gap, early, noise) -> np.ndarray:
        out = np.empty(offs.size)
        for i in range(offs.size):
            held, on_the_way_in = 0.0, False
            share = self.outlier_share + (self.idle_outlier_share if self._after_idle else 0.0)
            self._after_idle = False
            if self._outliers.random() < share:
                held = float(self._outliers.uniform(*self.outlier_s))
                on_the_way_in = bool(self._outliers.random() < 0.5)
                self.outliers += 1
            g = gap[i:i + 1] + (held if on_the_way_in else 0.0)
            t = super()._through_the_path(offs[i:i + 1], length, g, early[i:i + 1], noise[i:i + 1])[0]
            if held and not on_the_way_in:
                self._clock_s += held
            out[i] = t + held
        return out
