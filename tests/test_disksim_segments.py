"""DiskSim 4.0's segment choice for a request that is not a hit (model/simulator/segments.py), on
hand-made segment states: the ranks of disk_buffer_select_read_segment and
disk_buffer_select_write_segment (src/disksim_diskcache.c) and the room test of an append."""
from __future__ import annotations

import numpy as np

from diskmodel.model.simulator.segments import _appended_segment, _replacement, _room_to_append


def _segments(starts, ends, written, used):
    return (np.array(starts, np.int64), np.array(ends, np.int64), np.array(written, np.int64),
            np.array(used, float))


def test_an_empty_segment_before_a_clean_one_whatever_their_last_use():
    # segment 0 used at time 0 and holding blocks, 1 and 2 never used (empty), 3 emptied at 5 s
    start, end, written, used = _segments([100, 0, 0, 7], [108, 0, 0, 7], [0, 0, 0, 0],
                                          [0.0, -np.inf, -np.inf, 5.0])
    assert _replacement(start, end, written, used, 4, -1, -1, 1) == 1       # never used first, by index
    assert _replacement(start, end, written, used, 4, 1, -1, 1) == 2        # skipped: the next empty one
    used[1] = used[2] = 6.0                                                  # both emptied after 3
    assert _replacement(start, end, written, used, 4, -1, -1, 1) == 3       # least recently used empty one
    end[1:] = [9, 9, 9]                                                      # none empty: LRU clean one
    start[1:] = [1, 1, 1]
    assert _replacement(start, end, written, used, 4, -1, -1, 1) == 0
    assert _replacement(start, end, written, used, 4, -1, 0, 1) == 3        # the read-ahead's last (value 1)
    assert _replacement(start, end, written, used, 1, -1, 0, 1) == 0        # ... but taken if alone
    assert _replacement(start, end, written, used, 1, 0, -1, 1) == -1


def test_a_written_segment_is_empty_without_read_hits_on_written_data():
    # segment 1 holds written data (on the media by now): BUFFER_EMPTY where reads may not hit on
    # written data (disk_release_hda), BUFFER_CLEAN where they may
    start, end, written, used = _segments([100, 200], [108, 208], [0, 1], [1.0, 2.0])
    assert _replacement(start, end, written, used, 2, -1, -1, 0) == 1
    assert _replacement(start, end, written, used, 2, -1, -1, 1) == 0


def test_an_append_joins_the_written_segment_ending_at_its_first_block():
    start, end, written, used = _segments([100, 200, 300], [164, 240, 340], [1, 0, 1], [0.0, 0.0, 0.0])
    assert _appended_segment(start, end, written, 3, 164) == 0
    assert _appended_segment(start, end, written, 3, 240) == -1             # a read's segment
    assert _appended_segment(start, end, written, 3, 341) == -1


def test_room_counts_the_blocks_the_write_under_way_has_not_written():
    # a 64-block write from 1000, its k-th block written at k + 1 s, segments of 64 blocks
    ready = np.arange(1.0, 65.0)
    assert not _room_to_append(ready, 1000, 64, 1064, 0.5, 64)           # nothing written: 64 unwritten
    assert _room_to_append(ready, 1000, 64, 1064, 1.0, 64)               # block 0 written at 1 s
    assert _room_to_append(ready, 1000, 40, 1040, 0.5, 64)               # 40 unwritten of 64
    ready[1] = 0.0                                                        # written out of order: not counted
    assert not _room_to_append(ready, 1000, 64, 1064, 0.5, 64)
