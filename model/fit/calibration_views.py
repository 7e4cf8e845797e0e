"""What a calibration result is turned into: a :class:`~diskmodel.model.Disk` for prediction, and plots.

:meth:`CalibrationResult.to_disk`, ``plot()`` and ``plot_zones()`` call these.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .interface import interface_limit, track_change_loss_rev
from .latency import FlatLatencyFit
from .seek import TableFit, TwoPieceFit

__all__ = ["calibrated_disk", "write_cache_from", "plot_seek_calibration", "plot_zone_calibration"]


def calibrated_disk(result, seek: str = "two_piece", name: str | None = None, covers: int | None = None, *,
                    size_segment: bool = True):
    """A :class:`diskmodel.model.Disk` from a calibration: rpm from the rotation
    period, zones from the measured rates, the fitted seek, the command overhead,
    and what the calibration saw of the drive's mechanics and buffer.

    The geometry has the surfaces measured (one where they were not visible, a
    stand-in said in the estimates), each zone's sectors per track from its
    rate under the head (the measured sustained rate and the time its track
    changes lose to the skews: ``rate * (1 + w) * T_rot / sector``, ``w`` the
    mean skew of a track change in revolutions), the track and cylinder skews
    measured (as whole sectors), and as many cylinders as fill the zone's
    bytes, the last zone's rounded up so that the disk holds the device's bytes (or *covers* bytes, if more:
    a draw of the calibration's uncertainty keeps the point estimate's disk's requests on it). The head
    switch and the command overhead are the measured ones;
    a read-ahead found becomes a :class:`diskmodel.model.drive.cache.DriveCache` of its
    segments, reading ahead a segment. The two-piece curve, fitted against
    the calibration's tracks (``rate * T_rot`` bytes), is rescaled to the
    geometry's cylinders (``surfaces * (1 + w)`` such tracks); the table
    (against bytes) by the bytes per cylinder. *seek*: ``"two_piece"``,
    ``"table"``, or ``"flat"`` for a device with no mechanical seek (its flat
    latency model); the first two raise ValueError where the device shows no
    mechanical seek.

    Behind an interface slower than the media (:mod:`diskmodel.model.fit.interface`): the sustained rate is
    the interface rate, the media one zone of the measured block's passage, the command overhead less a
    block's passage over the interface, and a measured segment too small for consecutive sequential reads to
    stream as one long read widened until they do (each said in the estimates; *size_segment* False skips
    that check, for a caller that keeps another buffer).
    """
    from ..drive.disk import Disk, flat_latency_disk
    from ..drive.cache import DriveCache
    from ..drive.seek import TwoPieceSeek

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
    geometry, lost, bus, estimates = _calibrated_geometry(result, covers)
    surfaces, sector = geometry.surfaces, geometry.sector_size_bytes
    scale = result.size_bytes / geometry.cylinders
    if seek == "two_piece":
        if result.two_piece is None:
            raise ValueError(f"seek='two_piece': there is no two-piece fit ({result.two_piece_error})")
        per = surfaces * (1 + lost)  # the calibration's tracks in one of the disk's cylinders
        p = result.two_piece.params
        knee = float(p["knee_cylinders"]) / per
        if knee >= geometry.cylinders - 1:
            # every distance the disk has is a short seek: a + b*sqrt(d), with the knee on the last
            # cylinder and the long piece (fitted beyond the disk, unused) continuing it flat;
            # said in the disk's estimates
            knee_note = (f"the two-piece knee was fitted at {float(p['knee_cylinders']):.6g} of the calibration's "
                         f"tracks ({knee:.6g} cylinders), beyond the disk's "
                         f"{geometry.cylinders}: a + b*sqrt(d) covers every distance, and the knee is put on "
                         f"the last cylinder")
            knee = geometry.cylinders - 1
            a, b = float(p["short_offset_s"]), float(p["short_sqrt_s"]) * float(np.sqrt(per))
            model = TwoPieceSeek(a, b, a + b * float(np.sqrt(knee)), 0.0, knee)
        else:
            try:
                model = result.two_piece.as_seek(per)
            except ValueError as exc:
                raise ValueError(f"seek='two_piece': the fitted curve is not a seek curve ({exc}); use "
                                 f"seek='table' (the measured means)") from None
        model, switch_note = _one_cylinder_within_skew(model, geometry, period)
        if switch_note:
            estimates.append(("seek one cylinder", switch_note))
    elif seek == "table":
        model = result.table.as_seek(scale, reach=geometry.cylinders - 1)
        if result.one_cylinder_seek_s is not None:
            model, note = _measured_one_cylinder(model, result.one_cylinder_seek_s)
            estimates.append(("seek one cylinder", note))
        model, switch_note = _table_one_cylinder_within_skew(model, geometry, period)
        if switch_note:
            estimates.append(("seek one cylinder", switch_note))
    else:
        raise ValueError(f"seek must be 'two_piece', 'table' or 'flat' (got {seek!r})")
    if result.command_overhead_s is not None:
        overhead = float(result.command_overhead_s)
    else:  # overhead_s is the floor of a one-block read: the command overhead and the block's transfer
        rates = np.array([z[2] for z in result.zones])
        overhead = max((result.overhead_s or 0.0) - result.block_size_bytes / float(np.median(rates)), 0.0)
        estimates.append(("command_overhead_s", "the floor of a one-block read less a block's transfer"))
    interface = float("inf")
    if bus is not None:
        # the measured overhead is a one-block read's floor less the block's passage under the head: it
        # holds the block's passage over the interface, which the simulation now times apart
        interface = bus.interface_rate_bytes_per_s
        overhead = max(overhead - result.block_size_bytes / interface, 0.0)
    detected, segment_bytes, segments = result.read_ahead
    cache = None
    if detected and segment_bytes is not None and segments is not None:
        segment = max(sector, int(round(segment_bytes / sector)) * sector)
        cache = DriveCache(int(segments), segment, read_ahead_bytes=segment)
    elif detected:
        estimates.append(("drive_cache", "none: read-ahead was found but its segments were not measured"))
    if result.write_cache is None:
        estimates.append(("write cache", "not measured (a calibration that only reads): every write is timed to "
                                         "the media"))
    elif result.write_cache and cache is None:
        estimates.append(("write cache", "found on, but the buffer's segments were not measured: every write is "
                                         "timed to the media"))
    elif result.write_cache:
        # a write found done before the media could have written it: the buffer takes every write (DiskSim's
        # fast write level 2)
        cache = dataclasses.replace(cache, write_back=True, fast_write_level=2)
    head_switch, switch_note = _head_switch_within_skew(float(result.head_switch_s or 0.0), geometry, period)
    if switch_note:
        estimates.append(("head switch", switch_note))
    disk = Disk(name=name or f"calibrated {result.target}", geometry=geometry, seek=model,
                rpm=60.0 / period, command_overhead_s=overhead, head_switch_s=head_switch,
                interface_rate_bytes_per_s=interface,
                cache_size_bytes=0 if cache is None else cache.size_bytes, drive_cache=cache,
                provenance=f"calibrated by diskmodel from {result.target} ({result.kind}); "
                           f"{result.device_time_s:.1f} s of device time",
                estimates=tuple(estimates)
                + (("seek", "two-piece fit against the calibration's tracks, rescaled to cylinders"
                    if seek == "two_piece" else f"table against byte distance, rescaled by {scale:.0f} bytes "
                                                f"per cylinder"),)
                + ((("seek knee", knee_note),) if knee_note else ()))
    return _segment_streaming(disk) if bus is not None and size_segment else disk


#: Consecutive requests of a long sequential read stream within this share of one long request's rate.
STREAMING_TOLERANCE = 0.05
_SESSION_BLOCK_BYTES = 512  # the simulation's logical block (DriveSession's lbn and blocks)


def _consecutive_rate(disk, requests: int = 4, request_bytes: int = 1 << 20) -> float:
    """The rate [bytes/s] at which *disk*'s simulation serves *requests* consecutive sequential reads of
    *request_bytes* from its first sectors, each issued as the last completes (after a one-block read that puts
    the head there); with *requests* 1, one long read of that many bytes."""
    from ..drive.parameters import DriveParameters
    from ..simulator.session import DriveSession

    session = DriveSession(DriveParameters.from_disk(disk))
    blocks = request_bytes // _SESSION_BLOCK_BYTES
    began = t = session.serve(False, 0, 1, 0.0).completion_s
    for k in range(requests):
        t = session.serve(False, 1 + k * blocks, blocks, t).completion_s
    return requests * request_bytes / (t - began)


def _segment_streaming(disk):
    """*disk* (behind a slower interface) with a buffer segment that lets consecutive sequential requests
    stream as one long request does, where the measured segment does not (said in its estimates).

    Behind an interface slower than the media, the media fills a segment faster than the bus drains it; with a
    segment too small, each new request of a sequential stream finds the media stopped and waits for its sector
    (docs/benchmarks.md, "The interface taken apart from the media": atlas_III). A drive's read-ahead carries a
    sequential stream from one request into the next, and the buffer probe's strides can mis-size the segment
    where a drive serves them unevenly (atlas_III's are not served in order of their length). Assumed: consecutive 1 MiB requests stream within :data:`STREAMING_TOLERANCE` of
    one 4 MiB request; where the measured segment does not, it is taken as the least multiple of itself (up
    to 16) that does."""
    import dataclasses

    cache = disk.drive_cache
    if cache is None:
        return disk
    target = (1 - STREAMING_TOLERANCE) * _consecutive_rate(disk, 1, 4 << 20)
    measured = cache.segment_size_bytes

    def with_segment(k: int):
        return disk.evolve(drive_cache=dataclasses.replace(cache, segment_size_bytes=k * measured,
                                                           read_ahead_bytes=k * cache.read_ahead_bytes),
                           cache_size_bytes=cache.segments * k * measured)

    streams = _consecutive_rate(disk)
    if streams >= target:
        return disk
    for k in range(2, 17):
        if _consecutive_rate(with_segment(k)) >= target:
            return with_segment(k).evolve(estimates=tuple(disk.estimates) + (("drive cache", (
                f"the measured segment ({measured} bytes) streams consecutive 1 MiB reads at {streams / 1e6:.3f} "
                f"MB/s behind the interface, under one long read's {target / (1 - STREAMING_TOLERANCE) / 1e6:.3f} "
                f"MB/s: taken as {k * measured} bytes, the least multiple of it that streams them as one")),))
    return disk.evolve(estimates=tuple(disk.estimates) + (("drive cache", (
        f"the measured segment ({measured} bytes) streams consecutive 1 MiB reads at {streams / 1e6:.3f} MB/s "
        f"behind the interface, under one long read's rate, and so does one 16 times it: kept as measured")),))


def _calibrated_geometry(result, covers):
    """(Geometry, the mean skew a track change loses [rev], its :func:`~.interface.interface_limit`, the estimates
    so far) of :func:`calibrated_disk`."""
    from ..drive.zones import Geometry, Zone

    period = result.rotation_period_s
    sector = 512 if result.block_size_bytes % 512 == 0 else result.block_size_bytes
    estimates = []
    surfaces = result.surfaces
    if surfaces is None:
        surfaces = 1
        estimates.append(("geometry", "one surface: the surfaces were not visible in the timing"))
    track_skew = result.track_skew_fraction or 0.0
    cylinder_skew = result.cylinder_skew_fraction if result.cylinder_skew_fraction is not None else track_skew
    if result.track_skew_fraction is None and result.cylinder_skew_fraction is None:
        estimates.append(("skews", "none: no track change was measured"))
    # the mean time a track change loses to its skew [rev]: surfaces - 1 head switches, one cylinder switch
    lost = track_change_loss_rev(surfaces, track_skew, cylinder_skew)
    bus = interface_limit(result)
    media_zones = result.zones
    if bus is not None:  # one media zone of the block's passage; the sustained rate is the interface's
        media_zones = ((0, int(result.size_bytes), bus.track_bytes(period) / period),)
    zones, first, held = [], 0, 0
    # the disk holds at least the device's bytes (and at least *covers*): requests up to its end stay on the disk
    cover = max(int(result.size_bytes), int(covers or 0))
    for k, (start, end, rate) in enumerate(media_zones):
        spt = max(1, int(round(rate * (1 + lost) * period / sector)))
        per_cylinder = spt * sector * surfaces
        cylinders = max(1, int(round((end - start) / per_cylinder)))
        if k == len(media_zones) - 1:  # in whole cylinders: the last zone as many more as hold the rest
            cylinders = max(cylinders, -(-(cover - held) // per_cylinder))
        held += cylinders * per_cylinder
        zones.append(Zone(first, first + cylinders - 1, spt, int(round(track_skew * spt)) % spt,
                          int(round(cylinder_skew * spt)) % spt))
        first += cylinders
    if bus is not None:
        estimates.append(("interface", bus.note(result.block_size_bytes, zones[0].sectors_per_track)))
    return Geometry(surfaces, tuple(zones), sector), lost, bus, estimates


def write_cache_from(disk, source, source_name: str):
    """*disk*, a calibrated Disk whose writes were not measured (its estimates say so), with what *source*
    says of them: the write policy of its buffer (write-back and its fast-write level, DiskSim's ``Fast write
    level``) put into the disk's own measured buffer, and its write settle (DiskSim's ``Write settle
    delay``, the extra settling before the head writes: 0.49 ms on atlas10k), and the estimates naming
    *source_name* for them. A calibration that only reads cannot see how the drive takes writes; this takes
    it from a named source instead. The disk is returned as it is where its writes were measured, or where
    *source* changes nothing (neither has a buffer and their write settles agree)."""
    if "write cache" not in dict(disk.estimates):
        return disk
    changes, taken = {}, []
    if disk.drive_cache is not None and source.drive_cache is not None:
        changes["drive_cache"] = dataclasses.replace(disk.drive_cache, write_back=source.drive_cache.write_back,
                                                     fast_write_level=source.drive_cache.fast_write_level)
        taken.append(f"write-back, fast write level {source.drive_cache.fast_write_level}"
                     if source.drive_cache.write_back else "write-through")
    if source.write_settle_s != disk.write_settle_s:
        changes["write_settle_s"] = source.write_settle_s
        taken.append(f"write settle {source.write_settle_s * 1e3:.3f} ms")
    if not changes:
        return disk
    estimates = tuple((k, v) for k, v in disk.estimates if k != "write cache") + (
        ("write cache", f"not measured: {', '.join(taken)}, from {source_name}"),)
    return disk.evolve(**changes, estimates=estimates)


def _within_skew_s(geometry, period_s: float, which: str):
    """The longest switch the *which* skew (``"track"`` or ``"cylinder"``) covers in every zone [s]:
    half a sector short of the skew (a skew is the whole sectors that cover its switch), or None
    where no zone has such a skew."""
    bounds = [(getattr(z, f"{which}_skew_sectors") - 0.5) * period_s / z.sectors_per_track
              for z in geometry.zones if getattr(z, f"{which}_skew_sectors") > 0]
    return min(bounds) if bounds else None


def _head_switch_within_skew(head_switch_s: float, geometry, period_s: float):
    """The head switch, kept inside the measured track skew, and a note (None where it already was).

    A drive's format offsets each track's first sector by the track skew so that a sequential
    transfer's head switch ends before that sector comes round (Ruemmler & Wilkes 1994, "An
    introduction to disk drive modeling", section 2.3; DiskSim's ``trackskew``): the measured zone
    rates hold no lost revolution at a track change, and the head switch, measured on its own, carries
    its standard error to either side of the skew. A switch ending a moment after the sector would
    cost the simulation (``media_access.move_time_s``) a revolution at every track change."""
    bound = _within_skew_s(geometry, period_s, "track") if geometry.surfaces > 1 else None
    if bound is None or head_switch_s <= bound:
        return head_switch_s, None
    return bound, (f"the measured head switch ({head_switch_s * 1e3:.4f} ms) outlasts the measured track skew: "
                   f"taken as {bound * 1e3:.4f} ms, half a sector inside it, as the drive's format makes a head "
                   f"switch")


def _table_one_cylinder_within_skew(model, geometry, period_s: float):
    """The table seek with its one-cylinder seek inside the measured cylinder skew, and a note (None where it
    already was): :func:`_one_cylinder_within_skew`'s rule for the table of measured means. The means of the
    shortest distances hold a uniform rotational wait only approached, and the table interpolates from the
    implied (0, 0) to its first points, so its value at one cylinder lands on either side of the skew; where it
    lands after it, every point up to one cylinder is held at the bound and a point is put at one cylinder."""
    from ..drive.seek import TableSeek

    bound = _within_skew_s(geometry, period_s, "cylinder")
    one = float(model.seek_time_s(np.array([1.0]))[0])
    if bound is None or one <= bound:
        return model, None
    d, t = model.distance_cylinders.copy(), model.seek_time_s_at_distance.copy()
    t[d <= 1.0] = np.minimum(t[d <= 1.0], bound)
    if not np.any(d == 1.0):
        k = int(np.searchsorted(d, 1.0))
        d, t = np.insert(d, k, 1.0), np.insert(t, k, bound)
    return TableSeek(d, t), (f"the table's one-cylinder seek ({one * 1e3:.4f} ms) outlasts the measured cylinder "
                             f"skew: held at {bound * 1e3:.4f} ms up to one cylinder, half a sector inside the skew, "
                             f"as the drive's format makes a cylinder switch")


def _one_cylinder_within_skew(model, geometry, period_s: float):
    """The two-piece seek with its one-cylinder seek inside the measured cylinder skew, and a note
    (None where it already was).

    A drive's format offsets each cylinder's first sector by the cylinder skew so that a sequential
    transfer's one-cylinder switch ends before that sector comes round (Ruemmler & Wilkes 1994,
    "An introduction to disk drive modeling", section 2.3; DiskSim's ``cylskew``); the simulation
    times the switch as the one-cylinder seek (``media_access.move_time_s``), and a switch that ends
    a moment after the sector costs a whole revolution per cylinder. The measured zone rates hold no
    such revolutions (``calibrated_disk`` turns them into sectors per track with the skews alone),
    while the fitted short piece, fitted over longer distances, carries its standard error to the
    one-cylinder value, which may land on either side of the skew. So where the fit's one-cylinder seek exceeds
    the skew, the short piece is pivoted about the knee (its value there, and the long piece,
    kept) to end the switch half a sector before the first sector of the next cylinder in every
    zone (a skew being the whole sectors that cover the switch)."""
    bound = _within_skew_s(geometry, period_s, "cylinder")
    if bound is None or model.knee_cylinders <= 1.0:
        return model, None
    one = model.short_offset_s + model.short_sqrt_s
    if one <= bound:
        return model, None
    at_knee = model.short_offset_s + model.short_sqrt_s * float(np.sqrt(model.knee_cylinders))
    if at_knee <= bound:
        return model, None
    pivoted = _pivoted_short_piece(model, bound)
    if pivoted is None:
        return model, (f"the one-cylinder seek ({one * 1e3:.4f} ms) outlasts the measured cylinder skew "
                       f"({bound * 1e3:.4f} ms) and no short piece through the knee reaches it: kept as fitted, "
                       f"so a sequential transfer loses a revolution at each cylinder switch")
    return pivoted, (f"the one-cylinder seek ({one * 1e3:.4f} ms) outlasts the measured cylinder skew: "
                     f"the short piece is pivoted about the knee to {bound * 1e3:.4f} ms at one cylinder, "
                     f"half a sector inside the skew, as the drive's format makes a cylinder switch")


def _pivoted_short_piece(model, one_s: float):
    """The two-piece seek with its short piece pivoted about the knee (its value there, and the long
    piece, kept) to take *one_s* [s] at one cylinder; None where no such piece rises (a knee at one
    cylinder, or a one-cylinder time past the knee's, or one that would need a negative offset)."""
    from ..drive.seek import TwoPieceSeek

    if model.knee_cylinders <= 1.0:
        return None
    root = float(np.sqrt(model.knee_cylinders))
    b = (model.short_offset_s + model.short_sqrt_s * root - one_s) / (root - 1.0)
    if b < 0.0 or one_s - b < 0.0:
        return None
    return TwoPieceSeek(one_s - b, b, model.long_offset_s, model.long_per_cylinder_s, model.knee_cylinders)


def _measured_one_cylinder(model, one_s: float):
    """The table seek with its point at one cylinder the measured one-cylinder seek *one_s* [s] (DiskSim's
    single-cylinder seek time, apart from the curve), and a note. The seek stage's pairs meet a uniform
    rotational wait and put a mean at one cylinder a few tenths of a millisecond either way; the tracks
    stage times the switch itself (the least read after a cylinder switch that still catches its sector).
    Where a sequential write's switch and settle outlast the cylinder skew, that decides a revolution per
    cylinder. The two-piece curve takes no such point: eq. 7 has no single-cylinder term, and pivoting its
    short piece through the point moves every short seek of a drive whose one-cylinder seek lies far below
    its curve (docs/benchmarks.md, "The one-cylinder seek, timed as the head switch is")."""
    from ..drive.seek import TableSeek

    one = float(model.seek_time_s(np.array([1.0]))[0])
    d, t = model.distance_cylinders.copy(), model.seek_time_s_at_distance.copy()
    t[d < 1.0] = np.minimum(t[d < 1.0], one_s)
    if np.any(d == 1.0):
        t[d == 1.0] = one_s
    else:
        k = int(np.searchsorted(d, 1.0))
        d, t = np.insert(d, k, 1.0), np.insert(t, k, one_s)
    return TableSeek(d, t), (f"the one-cylinder seek measured by the reads after a cylinder switch, "
                             f"{one_s * 1e3:.4f} ms (the table had {one * 1e3:.4f} ms)")


def plot_seek_calibration(result, ax=None, *, model: str | None = None, alpha: float = 0.05):
    """Seek pairs (light: each pair's seek and rotational wait, above the floor of a read), the
    seek's means per distance with standard errors, the fit and its confidence band, against
    byte distance (log axis). Pairs closer than two tracks are not shown (their positioning is a
    head switch or none, measured on its own). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    distance = result.seek_distance_bytes
    k = result.seek_kept
    if result.rotation_period_s is not None:
        # each pair's own time holds its rotational wait (0 to a revolution): shown above the floor
        # of a read, it is never negative; the means per distance less half a revolution are the seek
        pairs = result.seek_time_s - (result.overhead_s or 0.0)
        label = "pairs (seek and rotational wait)"
    else:
        pairs, label = result.seek_time_s - result.seek_baseline_s, "pairs"
    ax.scatter(distance[k], pairs[k] * 1e3, s=2, alpha=0.15, color="grey", label=label)
    t = result.table
    ax.errorbar(t.distance, t.mean_s * 1e3, yerr=t.std_s / np.sqrt(t.count) * 1e3, fmt="o", ms=3,
                color="C0", label="mean per distance")
    grid = np.geomspace(max(distance[k].min(), 1), result.size_bytes, 300)
    fit = result._model(model)
    if isinstance(fit, TwoPieceFit):
        pred, lo, hi = fit.predict_band(grid / result.mean_bytes_per_track, alpha)
        # the fit's distances are the calibration's tracks (at the mean track size); the axis is bytes, so
        # the knee is given in bytes too, not in tracks beside a disk described in cylinders
        knee_mb = float(fit.params["knee_cylinders"]) * result.mean_bytes_per_track / 1e6
        ax.plot(grid, pred * 1e3, color="C1",
                label=f"two-piece fit (knee at {knee_mb:.3g} MB of seek distance)")
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
