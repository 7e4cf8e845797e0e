"""Plots of model objects. Each takes ``ax=None`` and returns the Axes.

matplotlib is imported lazily so that the model itself does not need it.
"""
from __future__ import annotations

import numpy as np


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots()
    return ax


def plot_seek_curve(disk, ax=None, *, label=None, points=400):
    """Seek time [ms] against distance [cylinders] over the whole stroke."""
    from .._checks import whole_number

    points = whole_number("points", points, minimum=2, maximum=10**6, maximum_is="a plot needs no more")
    ax = _axes(ax)
    distance = np.linspace(0, disk.geometry.cylinders - 1, points)
    ax.plot(distance, disk.seek_time_s(distance) * 1e3, label=label or disk.name)
    ax.set_xlabel("seek distance [cylinders]")
    ax.set_ylabel("seek time [ms]")
    return ax


def plot_zone_rates(disk, ax=None, *, label=None):
    """Media transfer rate [MB/s] against location [GB] (eq. 6, zoned)."""
    ax = _axes(ax)
    bounds = disk.geometry.zone_bounds_bytes()
    rates = disk.zone_rates_bytes_per_s()
    x = bounds.ravel() / 1e9
    y = np.repeat(rates / 1e6, 2)
    ax.plot(x, y, label=label or disk.name)
    ax.set_xlabel("location [GB from the outer edge]")
    ax.set_ylabel("media transfer rate [MB/s]")
    return ax


def plot_service_time_breakdown(breakdowns: dict, ax=None):
    """Stacked bars of the terms of T_DST [ms], one bar per labelled ServiceTime."""
    ax = _axes(ax)
    labels = list(breakdowns)
    bottom = np.zeros(len(labels))
    from .disk import ServiceTime
    for term in ServiceTime.TERMS:
        heights = np.array([float(np.mean(getattr(breakdowns[key], term))) * 1e3 for key in labels])
        ax.bar(labels, heights, bottom=bottom, label=term.removesuffix("_s").replace("_", " "))
        bottom += heights
    ax.set_ylabel("expected service time [ms]")
    ax.legend()
    return ax
