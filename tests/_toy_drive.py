"""A small hand-computable drive for the per-request simulation's tests (test_simulate, test_disksim_options)."""
from __future__ import annotations

import numpy as np

from diskmodel.model.simulator.mapping import ZoneLayout
from diskmodel.model.drive.parameters import DriveParameters


def toy_drive(**changes) -> DriveParameters:
    """One zone, 2 surfaces, 100 cylinders, 100 sectors per track, 6000 rpm (10 ms period);
    a bus (0.01 ms a block) faster than the media (0.1 ms a sector). *changes* override fields."""
    layout = ZoneLayout(
        surfaces=2, first_cylinder=[0], last_cylinder=[99], sectors_per_track=[100],
        first_block_offset_sectors=[0], track_skew_sectors=[0], cylinder_skew_sectors=[0],
        empty_space_sectors=[0], spares=[0], slips=(np.zeros(0, np.int64),))
    overhead = np.zeros((2, 2, 2))
    overhead[0, 0] = 0.5e-3      # read miss
    overhead[0, 1] = 0.2e-3      # read hit
    overhead[1] = 0.3e-3         # writes
    params = dict(
        name="toy", layout=layout, seek_by_distance_s=np.r_[0.0, 1e-3 + 0.05e-3 * np.arange(99)],
        rpm=6000.0, head_switch_s=0.5e-3, write_settle_s=0.2e-3, command_overhead_s=overhead,
        read_completion_s=0.1e-3, write_completion_s=0.1e-3, bus_read_block_s=0.01e-3,
        bus_write_block_s=0.01e-3, buffer_segments=2, segment_size_blocks=200,
        max_read_ahead_blocks=50, read_ahead_scheme=3, read_ahead_over_requested=True)
    params.update(changes)
    return DriveParameters(**params)


def hundred_sector_track() -> ZoneLayout:
    """A one-surface, ten-cylinder g1 layout of 100 sectors a track with no skew: block b is sector
    b % 100 of track b // 100 (the zero-latency access tests' hand track)."""
    return ZoneLayout(surfaces=1, first_cylinder=[0], last_cylinder=[9], sectors_per_track=[100],
                      first_block_offset_sectors=[0.0], track_skew_sectors=[0.0], cylinder_skew_sectors=[0.0],
                      empty_space_sectors=[0], spares=[0], slips=())


def pbn_one(layout: ZoneLayout, lbn: int) -> tuple:
    """(cylinder, head, sector, angle_rev, zone) of one block of *layout*, as the kernels' lbn_to_pbn_one gives
    them, for calling a kernel from Python."""
    return tuple(column[0] for column in layout.lbn_to_pbn(np.array([lbn], np.int64)))
