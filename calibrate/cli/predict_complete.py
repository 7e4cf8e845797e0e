"""What a calibrated hard disk leaves unmeasured, completed from a named preset or said in the first line.

A calibration (``diskmodel calibrate``) times reads at queue depth 1: it
measures the mechanics and the zones, and a read-ahead where it finds one,
but never the drive's write cache, nor its interface rate (the host link's
transfer, eq. 3's T_I) where the media is the slower: its Disk has ``cache_size_bytes`` 0 and
``interface_rate_bytes_per_s`` inf (a drive whose sustained rate is its interface's, below the
media's under the head, gets that rate: ``calibration_views``).  A preset of the same drive has both,
so the two predict differently.  ``diskmodel predict --complete-from PRESET``
takes the missing ones from PRESET (and its write settle, which reads do not see either); without it the
prediction's first line
says what is absent.  Nothing is filled in silently.
"""
from __future__ import annotations

import math


def is_flat(disk) -> bool:
    """Is *disk* a flat latency model (a calibration that found no mechanical seek)?"""
    return any(name == "seek" and how.startswith("none: flat latency") for name, how in disk.estimates)


#: How the first line names each absent quantity where nothing completes it.
_ABSENT_AS = {"drive cache": "no drive cache", "interface rate": "an infinite interface rate",
              "write settle": "no write settle (the head's extra settling before it writes)"}


def missing(disk) -> list[str]:
    """What a calibrated hard disk lacks that a preset may have: 'drive cache', 'interface rate', 'write settle'
    (a calibration that only reads, its estimates' "write cache", sees no write's settling)."""
    out = []
    if disk.drive_cache is None and disk.cache_size_bytes == 0:
        out.append("drive cache")
    if math.isinf(disk.interface_rate_bytes_per_s):
        out.append("interface rate")
    if disk.write_settle_s == 0 and "write cache" in dict(disk.estimates):
        out.append("write settle")
    return out


def complete(disk, source: str, preset_name: str | None) -> tuple[object, str | None]:
    """(*disk* completed from *preset_name*, or as it is; the line that says what was taken, or what is absent).

    *source* names the calibration ("--calibration cal.json", "disks[0] (sda) cal.json"). A flat latency model
    is left as it is (its measured latency holds the device's own caching); with *preset_name* it is refused.
    """
    from diskmodel.model.drive.presets import available_presets, load_preset

    if is_flat(disk):
        if preset_name is not None:
            raise ValueError(f"--complete-from {preset_name}: {source} is a flat latency model (no mechanical seek, "
                             "e.g. flash), whose measured latency holds the device's own caching; a hard disk "
                             "preset's cache does not apply to it (leave --complete-from out)")
        return disk, None
    absent = missing(disk)
    if not absent:
        return disk, None
    if preset_name is None:
        what = " and ".join(_ABSENT_AS[a] for a in absent)
        return disk, (f"note: {source}: the calibration measured no {' and no '.join(absent)}, so this prediction "
                      f"has {what} (a preset of the same drive may have them: give --complete-from PRESET, one of "
                      f"{', '.join(available_presets())})")
    if preset_name not in available_presets():
        raise ValueError(f"--complete-from {preset_name}: not a preset (one of {', '.join(available_presets())})")
    preset = load_preset(preset_name)
    changes, taken = {}, []
    if "drive cache" in absent and preset.cache_size_bytes:
        changes.update(cache_size_bytes=preset.cache_size_bytes, drive_cache=preset.drive_cache)
        taken.append(f"drive cache {preset.cache_size_bytes / 1e6:.2f} MB")
    if "interface rate" in absent and math.isfinite(preset.interface_rate_bytes_per_s):
        changes["interface_rate_bytes_per_s"] = preset.interface_rate_bytes_per_s
        taken.append(f"interface rate {preset.interface_rate_bytes_per_s / 1e6:.1f} MB/s")
    if "write settle" in absent and preset.write_settle_s > 0:
        changes["write_settle_s"] = preset.write_settle_s
        taken.append(f"write settle {preset.write_settle_s * 1e3:.3f} ms")
    left = [a for a in absent if not any(t.startswith(a) for t in taken)]
    if not taken:
        return disk, (f"note: {source}: --complete-from {preset_name} has no {' and no '.join(absent)} either; "
                      f"this prediction has none")
    estimates = tuple(disk.estimates) + tuple((name, f"from preset {preset_name} (not measured by the calibration)")
                                              for name in changes if name != "drive_cache")
    try:  # Disk refuses a cache whose segments are not whole sectors of this disk
        disk = disk.evolve(**changes, estimates=estimates)
    except ValueError as exc:
        raise ValueError(f"--complete-from {preset_name}: its cache does not fit {source}: {exc}") from None
    line = f"assumption: {source}: {' and '.join(taken)} taken from preset {preset_name} (the calibration measured "
    line += {1: "it not)", 2: "neither)"}.get(len(taken), "none of them)")
    if left:
        line += f"; {preset_name} has no {' and no '.join(left)} either"
    return disk, line
