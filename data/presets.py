"""Named drive presets: published facts with their provenance.

Each preset is a plain dict of SI values (seconds, bytes). ``estimates`` names
every value that is not a published fact and says how it was derived;
:func:`diskmodel.model.load_preset` turns a preset into a validated
:class:`diskmodel.model.drive.disk.Disk`.
"""
from __future__ import annotations

MS = 1e-3

#: How a preset's skews given as None are derived (diskmodel.model.drive.presets), not fitted: a drive's
#: formatter chooses them so that a sequential transfer loses no revolution at a track change.
_DERIVED_SKEWS = ("derived, not published: the track skew is the fewest sectors that pass under the head "
                  "during a head switch, ceil(head_switch_s / (T_rot / sectors_per_track)); the cylinder skew "
                  "the fewest that pass during a one-cylinder move, the seek of distance 1 plus settle_s (or "
                  "the head switch if longer)")

HP97560 = {
    "name": "HP 97560",
    "provenance": (
        "Ruemmler, C. & Wilkes, J. (1994), 'An introduction to disk drive modeling', "
        "IEEE Computer 27(3):17-28, Table 1 and the seek-time formula of section "
        "'Seek time': 3.24 + 0.400*sqrt(d) ms for d < 383 cylinders, 8.00 + 0.008*d ms "
        "otherwise; 1962 cylinders, 19 data heads, 72 sectors per track, 4002 rpm."
    ),
    "surfaces": 19,
    "zones": [
        # first cylinder, last cylinder, sectors per track, track skew, cylinder skew
        # (None: derived from the head switch and the one-cylinder seek, see estimates)
        (0, 1961, 72, None, None),
    ],
    "sector_size_bytes": 512,
    "rpm": 4002.0,
    "seek": {
        "kind": "two_piece",
        "short_offset_s": 3.24 * MS,
        "short_sqrt_s": 0.400 * MS,
        "long_offset_s": 8.00 * MS,
        "long_per_cylinder_s": 0.008 * MS,
        "knee_cylinders": 382,  # short branch for d < 383
    },
    "command_overhead_s": 0.0,
    "settle_s": 0.0,  # included in the published seek formula
    "head_switch_s": 0.0,
    "interface_rate_bytes_per_s": float("inf"),
    "cache_size_bytes": 0,
    "estimates": [
        ("command_overhead_s, head_switch_s, cache_size_bytes",
         "not given with the seek formula; left at 0 so the preset is the published formula alone"),
        ("track and cylinder skews", _DERIVED_SKEWS),
    ],
}

HP_C2247A = {
    "name": "HP C2247A",
    "provenance": (
        "DiskSim 2.0/4.0 manual and validation suite (Ganger, Worthington, Patt; "
        "valid/hp_c2247a_validate.model): HPL seek 3.81 + 0.33*sqrt(d) ms for d < 300 "
        "cylinders, 7.75 + 0.0059*d ms otherwise; 5400 rpm; 13 data surfaces; 2051 "
        "cylinders; head switch 0.89 ms; additional write settle 0.65 ms; the eight "
        "zones with their sectors per track and track skews transcribed from "
        "the same model file (spare sectors and slipped defects are not kept here: "
        "load the drive with diskmodel.model.disksim_drives.convert for those)."
    ),
    "surfaces": 13,
    "zones": [
        # cylinder skews None: derived (see estimates); the model file's are 32, 30, 29, 28, 27, 24, 22, 19
        (0, 558, 96, 14, None),
        (559, 760, 92, 13, None),
        (761, 901, 88, 13, None),
        (902, 1051, 84, 12, None),
        (1052, 1193, 80, 12, None),
        (1194, 1519, 72, 11, None),
        (1520, 1793, 64, 10, None),
        (1794, 2050, 56, 9, None),
    ],
    "sector_size_bytes": 512,
    "rpm": 5400.0,
    "seek": {
        "kind": "two_piece",
        "short_offset_s": 3.81 * MS,
        "short_sqrt_s": 0.33 * MS,
        "long_offset_s": 7.75 * MS,
        "long_per_cylinder_s": 0.0059 * MS,
        "knee_cylinders": 299,  # short branch for d < 300
    },
    "command_overhead_s": 0.0,
    "settle_s": 0.0,
    "write_settle_s": 0.65 * MS,
    "head_switch_s": 0.89 * MS,
    "interface_rate_bytes_per_s": 10e6,
    "cache_size_bytes": 2 * 256 * 512,
    # DiskSim's HP C2247A parameter file (the bundled drive, read as DiskSim's code does):
    # 2 segments of 256 blocks, one for writes; read-ahead of up to 128 blocks filling the segment;
    # write-through.
    "drive_cache": {"segments": 2, "segment_size_bytes": 256 * 512, "read_ahead_bytes": 128 * 512,
                    "write_back": False, "read_ahead_scheme": 3, "read_ahead_over_requested": True,
                    "read_ahead_on_idle_hit": True, "read_hits_on_write_data": True,
                    "separate_write_segment": True, "read_watermark": 0.75},
    "estimates": [
        ("interface_rate_bytes_per_s", "fast SCSI-2 bus, 10 MB/s"),
        ("cache_size_bytes", "DiskSim spec: 2 buffer segments of 256 blocks"),
        ("drive_cache", "DiskSim's HP C2247A parameter file: its segments, read-ahead and write policy"),
        ("cylinder skews", "derived, not the model file's: the model file's cylinder skews cover the drive's "
                           "one-cylinder seek of its first-ten seek table (2.89 ms), not the 4.14 ms that this "
                           "preset's HPL formula gives at one cylinder, with which a sequential transfer would "
                           "lose a revolution at every cylinder; so, as for the other presets, " + _DERIVED_SKEWS),
    ],
}

# WD800BD: the disk of Djordjevic & Timcenko (2015), section 4.1.
_WD_ZONE_SPT = (1100, 1065, 1029, 994, 959, 923, 888, 853, 817, 782, 747, 711, 676, 641, 605, 570)
_WD_CYLINDERS_PER_ZONE = 5850

WD800BD = {
    "name": "WD800BD",
    "provenance": (
        "Djordjevic & Timcenko (2015), 'LVM in the Linux environment: performance "
        "examination', Tehnicki Vjesnik 22(5), section 4.1: WDC WD800BD-22MR, 80 GB, "
        "average seek 8.9 ms, 7200 rpm, 1.5 Gb/s interface. Everything else is an "
        "estimate, listed in 'estimates'."
    ),
    "surfaces": 2,
    "zones": [
        (i * _WD_CYLINDERS_PER_ZONE, (i + 1) * _WD_CYLINDERS_PER_ZONE - 1, spt, None, None)
        for i, spt in enumerate(_WD_ZONE_SPT)
    ],
    "sector_size_bytes": 512,
    "rpm": 7200.0,
    "seek": {
        "kind": "two_piece",
        "short_offset_s": 1.97362 * MS,
        "short_sqrt_s": 0.0263811 * MS,
        "long_offset_s": 2.87197 * MS,
        "long_per_cylinder_s": 0.000193678 * MS,
        "knee_cylinders": 4638,
    },
    "command_overhead_s": 0.2 * MS,
    "settle_s": 0.0,
    "head_switch_s": 1.0 * MS,
    # 1.5 Gb/s SATA line rate with 8b/10b coding carries 150 MB/s of data.
    "interface_rate_bytes_per_s": 150e6,
    "cache_size_bytes": 2 * 2**20,
    # 2 MiB in 16 segments; the buffer's policies are those of DiskSim's HP C2247A parameter file
    # (the read-ahead filling the segment, the bus transfer once 3/4 of a read is buffered), write-through.
    "drive_cache": {"segments": 16, "segment_size_bytes": 2 * 2**20 // 16, "read_ahead_bytes": 2 * 2**20 // 16,
                    "write_back": False, "read_ahead_scheme": 3, "read_ahead_over_requested": True,
                    "read_ahead_on_idle_hit": True, "read_hits_on_write_data": True,
                    "separate_write_segment": True, "read_watermark": 0.75},
    "estimates": [
        ("surfaces", "one 80 GB platter with two heads, as single-platter 80 GB drives of 2006 had"),
        ("zones", "16 equal bands of 5850 cylinders whose sectors per track fall linearly from "
                  "1100 (67.6 MB/s at 7200 rpm) to 570 (35.0 MB/s), typical of 80 GB/platter "
                  "drives; 2 x 93,600 cylinders x mean 835 sectors = 156,312,000 sectors, just "
                  "above the 156,301,488 of an IDEMA 80 GB drive"),
        ("seek", "eq. (7) with its five parameters solved so that the track-to-track seek is "
                 "2.0 ms and the full stroke 21.0 ms (the values on WD Caviar spec sheets of "
                 "that generation), the slope is continuous at the knee, and the mean over "
                 "uniformly random pairs of cylinders is the published 8.9 ms"),
        ("command_overhead_s", "0.2 ms, typical of ATA drives of the time (DIXtrac extractions "
                               "report 0.1-0.5 ms)"),
        ("head_switch_s", "1.0 ms, typical of the time"),
        ("cache_size_bytes", "2 MiB, from WD's model-number convention (B = 2 MB buffer)"),
        ("drive_cache", "16 segments of 128 KiB (ATA drives of the time segment their buffer so), with the "
                        "policies of DiskSim's HP C2247A parameter file (read-ahead filling the segment); "
                        "write-through, as the paper's equations have no write cache"),
        ("track and cylinder skews", _DERIVED_SKEWS),
    ],
}

PRESETS = {
    "hp97560": HP97560,
    "hp_c2247a": HP_C2247A,
    "wd800bd": WD800BD,
}
