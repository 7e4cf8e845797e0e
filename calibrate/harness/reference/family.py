"""The reference drive family: drives that differ in what a calibration must see through.

Each is a :class:`~diskmodel.calibrate.harness.reference.drive.DriveSpec` (``FAMILY``, by name) and a factory
usable as ``diskmodel calibrate --backend
diskmodel.calibrate.harness.reference:NAME`` (seed 0). The drives are
invented, with figures in the range of their kind of drive (datasheets of
the 2000s-2010s: rpm, surfaces, sustained rates, seek times, buffer sizes);
together they switch every behaviour of :mod:`~diskmodel.calibrate.harness.reference.drive` on and off:

============================ ===== ======== ============ =========== ======== ===== =========== =====
name                         rpm   surfaces layout       read-ahead  segments zones seek noise  write
============================ ===== ======== ============ =========== ======== ===== =========== =====
desktop_7200                 7200  4        conventional on, 2 MiB   1        16    2 %, outl.  off
serpentine_4tb               7200  10       serpentine   on, 512 KiB 16       24    1 %         off
laptop_5400                  5400  1        conventional off         1        8     none        off
server_15k                   15000 6        conventional on, 256 KiB 8        12    0.5 %       off
legacy_3600                  3600  2        conventional on, 64 KiB  1        1     none        off
nas_5900                     5900  8        conventional on, 4 MiB   4        20    2 %, jitter cache
============================ ===== ======== ============ =========== ======== ===== =========== =====
"""
from __future__ import annotations

import numpy as np

from diskmodel.calibrate.harness.accuracy import common_errors, relative_error

from .drive import DriveSpec, ReferenceDrive
from .geometry import Layout

__all__ = ["FAMILY", "reference_drive", "truth", "family_names", "calibration_errors"]

KIB, MIB = 1024, 1024 * 1024


def _zones(count: int, cylinders: int, outer_spt: int, inner_spt: int) -> tuple:
    """*count* zones of equal cylinders, sectors per track falling linearly outer to inner."""
    spt = np.linspace(outer_spt, inner_spt, count).round().astype(int)
    per = cylinders // count
    return tuple((per, int(s)) for s in spt)


FAMILY = {
    "desktop_7200": DriveSpec(
        "desktop_7200", Layout(_zones(16, 160_000, 1800, 900), 4, 512, "conventional", 0.14, 0.12),
        rpm=7200, seek_single_s=0.8e-3, seek_knee_s=9e-3, seek_full_s=16e-3, knee_cylinders=50_000,
        head_switch_s=1.0e-3, command_overhead_s=0.15e-3, read_ahead=True, segments=1, segment_bytes=2 * MIB,
        seek_noise=0.02, outlier_probability=1e-3, outlier_scale_s=3e-3,
        notes="the issue's drive: read-ahead after every read, skews, head switches, 4 surfaces, 2 % seek noise"),
    "serpentine_4tb": DriveSpec(
        "serpentine_4tb", Layout(_zones(24, 300_000, 3500, 1700), 10, 512, "serpentine", 0.13, 0.11),
        rpm=7200, seek_single_s=0.7e-3, seek_knee_s=8e-3, seek_full_s=15e-3, knee_cylinders=90_000,
        head_switch_s=0.9e-3, command_overhead_s=0.12e-3, read_ahead=True, segments=16, segment_bytes=512 * KIB,
        seek_noise=0.01, outlier_probability=5e-4, interface_rate_bytes_per_s=550e6,
        notes="4 TB, 10 surfaces in serpentine bands, several segments"),
    "laptop_5400": DriveSpec(
        "laptop_5400", Layout(_zones(8, 120_000, 1500, 800), 1, 512, "conventional", 0.0, 0.14),
        rpm=5400, seek_single_s=1.2e-3, seek_knee_s=11e-3, seek_full_s=22e-3, knee_cylinders=30_000,
        head_switch_s=0.0, command_overhead_s=0.25e-3, read_ahead=False, segments=1, segment_bytes=64 * KIB,
        notes="one surface, read-ahead off (the buffer keeps the data read)"),
    "server_15k": DriveSpec(
        "server_15k", Layout(_zones(12, 70_000, 1400, 900), 6, 512, "conventional", 0.22, 0.20),
        rpm=15000, seek_single_s=0.35e-3, seek_knee_s=3.5e-3, seek_full_s=7e-3, knee_cylinders=20_000,
        head_switch_s=0.7e-3, command_overhead_s=0.08e-3, read_ahead=True, segments=8, segment_bytes=256 * KIB,
        seek_noise=0.005, notes="15k rpm, small segments, many of them"),
    "legacy_3600": DriveSpec(
        "legacy_3600", Layout(((2000, 72),), 2, 512, "conventional", 0.10, 0.25),
        rpm=3600, seek_single_s=3e-3, seek_knee_s=14e-3, seek_full_s=25e-3, knee_cylinders=600,
        head_switch_s=1.5e-3, command_overhead_s=0.6e-3, read_ahead=True, segments=1, segment_bytes=64 * KIB,
        interface_rate_bytes_per_s=10e6, notes="no zones, slow bus, one small segment"),
    "nas_5900": DriveSpec(
        "nas_5900", Layout(_zones(20, 240_000, 2600, 1300), 8, 512, "conventional", 0.15, 0.13),
        rpm=5900, seek_single_s=1.0e-3, seek_knee_s=10e-3, seek_full_s=19e-3, knee_cylinders=80_000,
        head_switch_s=1.2e-3, command_overhead_s=0.2e-3, read_ahead=True, segments=4, segment_bytes=4 * MIB,
        write_cache=True, seek_noise=0.02, outlier_probability=1e-2, outlier_scale_s=2e-3,
        host_gap_s=50e-6, host_gap_jitter_s=200e-6, notes="write cache, host gap jitter, frequent outliers"),
}


def family_names() -> list:
    return list(FAMILY)


def reference_drive(name: str, seed: int = 0) -> ReferenceDrive:
    """The reference drive *name* (a key of :data:`FAMILY`)."""
    if name not in FAMILY:
        raise ValueError(f"reference drive must be one of {', '.join(FAMILY)} (got {name!r})")
    return ReferenceDrive(FAMILY[name], seed=seed)


def truth(drive: ReferenceDrive) -> dict:
    """What a calibration should find on *drive*: the quantities of the calibration JSON."""
    s, lay = drive.spec, drive.layout
    period = drive.rotation_period_s
    conventional_heads = lay.order == "conventional" and lay.surfaces > 1
    return {
        "rotation_period_s": period,
        "mean_random_seek_s": drive.mean_random_seek_time_s(),
        "head_switch_s": s.head_switch_s if conventional_heads else None,
        # the skew of the track change a sequential transfer meets most often
        "track_skew_fraction": lay.track_skew_fraction if conventional_heads else None,
        "cylinder_skew_fraction": lay.cylinder_skew_fraction,
        "surfaces": lay.surfaces if lay.order == "conventional" else None,
        "read_ahead": {"detected": bool(s.read_ahead),
                       "segment_bytes": s.segment_bytes if s.read_ahead else None,
                       "segments": s.segments if s.read_ahead else None},
        "command_overhead_s": s.command_overhead_s,
        "write_cache": s.write_cache,
    }


def calibration_errors(drive: ReferenceDrive, result) -> dict:
    """A calibration of *drive* against its truth: relative errors of the rotation period, the
    mean random seek (two-piece fit and table), the zone rates (at each true zone's middle:
    the largest and the byte-weighted mean) and the head switch; absolute errors of the
    skews [rev] (the track skew against the skew of the commonest track change); whether the
    read-ahead was found right, and the relative error of its segment size."""
    t = truth(drive)
    out = common_errors(result, rotation_period_s=t["rotation_period_s"], mean_random_seek_s=t["mean_random_seek_s"],
                        zone_bounds_bytes=drive.zone_bounds_bytes(),
                        zone_rates_bytes_per_s=drive.zone_rates_bytes_per_s())
    out["head_switch"] = relative_error(result.head_switch_s, t["head_switch_s"])
    commonest = t["track_skew_fraction"] if t["track_skew_fraction"] is not None else t["cylinder_skew_fraction"]
    out["track_skew_rev"] = (None if result.track_skew_fraction is None
                             else result.track_skew_fraction - commonest)
    ra = result.read_ahead
    out["read_ahead_detected_right"] = ra[0] == t["read_ahead"]["detected"]
    out["segment_size"] = relative_error(ra[1], t["read_ahead"]["segment_bytes"]) if ra[0] else None
    out["segments_right"] = (ra[2] == t["read_ahead"]["segments"]) if ra[0] else None
    out["surfaces"] = (result.surfaces, t["surfaces"])
    return out
