"""What a calibration result is turned into: a :class:`~diskmodel.model.Disk` for prediction, and plots.

:meth:`CalibrationResult.to_disk`, ``plot()`` and ``plot_zones()`` call these.
"""
from __future__ import annotations

import numpy as np

from .latency import FlatLatencyFit
from .seek import TableFit, TwoPieceFit

__all__ = ["calibrated_disk", "plot_seek_calibration", "plot_zone_calibration"]


def calibrated_disk(result, seek: str = "two_piece", name: str | None = None):
    """A :class:`diskmodel.model.Disk` from a calibration: rpm from the rotation
    period, zones from the measured rates, the fitted seek, the overhead.

    The geometry is a stand-in: one surface, each zone's sectors per track
    from its rate (``rate * T_rot / sector``) and as many tracks ("cylinders")
    as fill its bytes. The two-piece curve is fitted in tracks already; the
    table (against bytes) is rescaled by the mean bytes per track. *seek*:
    ``"two_piece"``, ``"table"``, or ``"flat"`` for a device with no
    mechanical seek (its flat latency model); the first two raise ValueError
    where the device shows no mechanical seek.
    """
    from ..disk import Disk, flat_latency_disk
    from ..zones import Geometry, Zone

    knee_note = None
    if seek == "flat":
        model = result.latency_model
        if model is None:
            raise ValueError("seek='flat': the calibration found a mechanical seek; use seek='two_piece' or 'table'")
        return flat_latency_disk(
            model.mean_s, 1.0 / model.per_byte_s, int(result.size_bytes), block_bytes=result.block_size_bytes,
            name=name or f"calibrated {result.target}",
            provenance=f"flat latency model calibrated by diskmodel from {result.target}: mean "
                       f"{model.mean_s * 1e6:.1f} us per {result.block_size_bytes}-byte read, "
                       f"{1e-6 / model.per_byte_s:.0f} MB/s")
    if not result.mechanical_seek or result.rotation_period_s is None:
        raise ValueError("no mechanical seek was found on this device: a Disk (rotation, seek curve) "
                         "would be meaningless; use to_disk(seek='flat') for its flat latency model")
    period = result.rotation_period_s
    sector = 512 if result.block_size_bytes % 512 == 0 else result.block_size_bytes
    zones, first = [], 0
    for start, end, rate in result.zones:
        spt = max(1, int(round(rate * period / sector)))
        tracks = max(1, int(round((end - start) / (spt * sector))))
        zones.append(Zone(first, first + tracks - 1, spt))
        first += tracks
    geometry = Geometry(1, tuple(zones), sector)
    scale = result.size_bytes / geometry.cylinders
    if seek == "two_piece":
        if result.two_piece is None:
            raise ValueError(f"seek='two_piece': there is no two-piece fit ({result.two_piece_error})")
        model = result.two_piece.as_seek(1.0)  # fitted in tracks, the stand-in's cylinders
        if model.knee_cylinders >= geometry.cylinders:
            # every distance the disk has is a short seek: the same curve with the knee on the
            # last track (d <= knee takes a + b*sqrt(d)); said in the disk's estimates
            knee_note = (f"the two-piece knee was fitted at {model.knee_cylinders:.6g} tracks, beyond the "
                         f"stand-in's {geometry.cylinders} tracks: a + b*sqrt(d) covers every distance, "
                         f"and the knee is put on the last track")
            model = model.evolve(knee_cylinders=geometry.cylinders - 1)
    elif seek == "table":
        model = result.table.as_seek(scale, reach=geometry.cylinders - 1)
    else:
        raise ValueError(f"seek must be 'two_piece', 'table' or 'flat' (got {seek!r})")
    # overhead_s is the floor of a one-block read: the command overhead and the block's transfer.
    rates = np.array([z[2] for z in result.zones])
    overhead = max((result.overhead_s or 0.0) - result.block_size_bytes / float(np.median(rates)), 0.0)
    return Disk(name=name or f"calibrated {result.target}", geometry=geometry, seek=model,
                rpm=60.0 / period, command_overhead_s=overhead,
                provenance=f"calibrated by diskmodel from {result.target} ({result.kind}); "
                           f"{result.device_time_s:.1f} s of device time",
                estimates=(("geometry", "one surface; tracks sized from the measured zone rates"),
                           ("seek", "two-piece fit against the distance in tracks" if seek == "two_piece" else
                            f"table against byte distance, rescaled by {scale:.0f} bytes per track"))
                + ((("seek knee", knee_note),) if knee_note else ()))


def plot_seek_calibration(result, ax=None, *, model: str | None = None, alpha: float = 0.05):
    """Seek samples (light), means per distance with standard errors, the fit
    and its confidence band, against byte distance (log axis). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    distance = result.seek_distance_bytes
    seek = result.seek_time_s - result.seek_baseline_s
    k = result.seek_kept
    ax.scatter(distance[k], seek[k] * 1e3, s=2, alpha=0.15, color="grey", label="pairs")
    t = result.table
    ax.errorbar(t.distance, t.mean_s * 1e3, yerr=t.std_s / np.sqrt(t.count) * 1e3, fmt="o", ms=3,
                color="C0", label="mean per distance")
    grid = np.geomspace(max(distance[k].min(), 1), result.size_bytes, 300)
    fit = result._model(model)
    if isinstance(fit, TwoPieceFit):
        pred, lo, hi = fit.predict_band(grid / result.mean_bytes_per_track, alpha)
        ax.plot(grid, pred * 1e3, color="C1",
                label=f"two-piece fit (knee {fit.params['knee_cylinders']:.4g} tracks; at the mean track size)")
        ax.fill_between(grid, lo * 1e3, hi * 1e3, color="C1", alpha=0.3, label=f"{100 * (1 - alpha):g}% band")
    elif isinstance(fit, TableFit):
        ax.plot(grid, fit.predict(grid) * 1e3, color="C2", label="table")
    elif isinstance(fit, FlatLatencyFit):
        ax.axhline(0.0, color="C3", label=f"flat: latency {fit.mean_s * 1e6:.0f} us, no seek")
    ax.set_xscale("log")
    ax.set_xlabel("seek distance [bytes]")
    ax.set_ylabel("seek time [ms]")
    ax.set_title(f"{result.target}: seek curve" + ("" if result.mechanical_seek else " (no mechanical seek)"))
    ax.legend(fontsize="small")
    return ax


def plot_zone_calibration(result, ax=None):
    """Transfer rate against location, with the zones found. Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    ax.plot(result.zone_locations_bytes / 1e9, result.zone_rates_bytes_per_s / 1e6, ".", label="measured")
    xs, ys = [], []
    for start, end, rate in result.zones:
        xs += [start / 1e9, end / 1e9]
        ys += [rate / 1e6, rate / 1e6]
    ax.plot(xs, ys, color="C1", label=f"{len(result.zones)} zones")
    ax.set_xlabel("location [GB]")
    ax.set_ylabel("transfer rate [MB/s]")
    ax.legend(fontsize="small")
    return ax
