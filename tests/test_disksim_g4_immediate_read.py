"""DiskSim 4.0's zero-latency reads ("Immediate buffer read") on g4 layouts, against its own times.

``disk_buffer_seekdone`` (``src/disksim_diskctlr.c``) passes ``currdisk->immed`` (the read's
``immedread``) to ``dm_latency`` and ``dm_access_block`` on every track an access reaches, the span
from the wanted block's sector over the track's block count. On a g4 layout ``g1_access_block``'s
``dm_convert_atop`` (``g4_atop``) returns the block under the head (on g1 and g2 layouts 4.0 takes
its negative ``DM_OK`` for a failure), so a head landing inside the span starts at the next sector
boundary: ``disk_buffer_sector_done`` reads the wanted blocks from there up to ``lastblkno`` (the
read's end, or the read-ahead's limit, on the track) first, the ones before them on the way round,
and jumps over the run (``immedstart``, ``immedend``)
(:func:`diskmodel.model.simulator.access_block.immediate_read_run`, mode 2). A read taking over a
read-ahead (a partial hit on it) owns the access: on a track reached for its blocks ``lastblkno``
is the read's end, so the read-ahead's blocks past it are read after the way round
(:func:`diskmodel.model.simulator.readahead._extend_read_ahead`'s *own_end*).

DiskSim's times: the 32-bit DiskSim 4.0 build of tests/golden/disksim_variants/README.md
(``run_drive.sh``) on the bundled drive folders made by tests/golden/disksim_random/make_random.py
(cheetah4LP's validate .parv) with these lines, "Immediate buffer read" set to 1 and to 0. G4_4TB:
DiskSim 4.0's ``slipcount`` asserts on an empty slip list, so DiskSim ran it with
``Slips = [ 2100000000, 0 ]`` (as tests/test_disksim_g4_immediate_write.py); the simulation runs the
bundled file.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _scripts import hand_trace_run
from _toy_drive import hundred_sector_track, pbn_one

#: Agreement: within 10 us of DiskSim's own service time.
TOLERANCE_MS = 0.01

#: read misses a few tracks apart, each after the one before with a growing idle gap: the head lands
#: further round each time, sometimes inside the wanted blocks
MAXTOR_64 = [f"R Hit {200000000 + i * 5003} 64 1000 {i * 173.0:.5f}" for i in range(60)]
MAXTOR_128 = [f"R Hit {200000000 + i * 5003} 128 1000 {i * 173.0:.5f}" for i in range(2)]
G4_256 = [f"R Hit {50000000 + i * 20011} 256 1000 {i * 211.0:.5f}" for i in range(53)]
#: development seed 618's requests 769-787 (maxtor300g, 833-block tracks): 500-block sequential reads,
#: each a partial hit on the read-ahead (to the track's end, "Buffer continuous read" 1), which it
#: takes over and carries to the next track; landing there past the read's end, DiskSim reads the
#: read's blocks on the way round and the read-ahead's after them, the same times as at 0
SEQ_GAPS = (289.7382, 47.49362, 76.81389, 96.89602, 288.45778, 12.39105, 255.32368, 207.00791, 142.81192,
            57.70226, 224.3368, 186.49605, 29.91618, 37.1556, 204.85801, 276.19668, 63.33408, 298.50026)
SEQ_500 = [f"R Hit {454365533 + 500 * i} 500 1000.00000 {g:.5f}" for i, g in enumerate(SEQ_GAPS)]
SEQ_KEYS = {"Buffer continuous read": "1", "Read-ahead over requested": "1", "Segment size (in blks)": "1317",
            "Use separate write segment": "0"}

#: (drive, keys changed, lines, {request: (DiskSim at 1, DiskSim at 0) [ms]}, whether they differ)
CASES = {
    "maxtor300g_64": ("maxtor300g", {}, MAXTOR_64,
                      {36: (6.248357, 6.276962), 37: (7.017041, 7.049064), 38: (6.899678, 6.876058),
                       39: (6.736778, 6.703057), 58: (6.839601, 6.862188), 59: (5.270400, 5.247171)}, True),
    "maxtor300g_128": ("maxtor300g", {}, MAXTOR_128, {0: (11.130418, 11.186370), 1: (5.590182, 5.534076)}, True),
    "G4_4TB_256": ("G4_4TB", {}, G4_256,
                   {5: (9.928311, 10.523039), 6: (3.755504, 3.159330), 7: (9.929766, 10.101119),
                    8: (2.911733, 2.737402), 10: (10.026000, 10.648806), 11: (9.882632, 9.257278),
                    12: (10.027411, 10.226802), 13: (9.038353, 8.835349), 46: (9.927634, 10.206362),
                    47: (3.121992, 2.841818), 51: (10.025265, 10.331070), 52: (9.248880, 8.940224)}, True),
    "maxtor300g_sequential_taken_over": ("maxtor300g", SEQ_KEYS, SEQ_500,
                                         {3: (3.527714, 3.527714), 4: (5.066201, 5.066150), 6: (3.592137, 3.592137),
                                          7: (4.907773, 4.907722), 8: (3.397520, 3.397520), 9: (5.020279, 5.020234),
                                          11: (3.380191, 3.380191), 12: (5.876220, 5.877176),
                                          14: (3.970736, 3.970736)}, False),
}


def _ours(drive, changes, lines, where: Path):
    """Our times [ms] of *lines* on the bundled *drive* with *changes* ("Immediate buffer read" 1),
    and with the flag evolved off (the same folder: maxtor300g's layout takes long to read)."""
    from diskmodel.model.simulator.simulate import simulate_requests
    params, args = hand_trace_run(drive, {**changes, "Immediate buffer read": "1"}, lines, where)
    assert params.immediate_read
    return (simulate_requests(params, *args).service_s * 1e3,
            simulate_requests(params.evolve(immediate_read=False), *args).service_s * 1e3)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_a_zero_latency_read_on_a_g4_layout_starts_under_the_head(name, tmp_path):
    drive, changes, lines, disksim, differ = CASES[name]
    rows = list(disksim)
    at_1 = np.array([disksim[r][0] for r in rows])
    at_0 = np.array([disksim[r][1] for r in rows])
    if differ:
        assert np.all(np.abs(at_1 - at_0) > 0.02)      # DiskSim's own times differ between 1 and 0
    ours_1, ours_0 = _ours(drive, changes, lines, tmp_path)
    np.testing.assert_allclose(ours_1[rows], at_1, rtol=0, atol=TOLERANCE_MS)
    np.testing.assert_allclose(ours_0[rows], at_0, rtol=0, atol=TOLERANCE_MS)


@pytest.mark.slow
def test_immediate_read_run_on_a_g4_track_reads_the_run_under_the_head_first():
    # a hand-computed track of 100 sectors, the period 10 ms (a step is DiskSim's fixed-point
    # xfertime, a hair under 0.1 ms): 10 wanted blocks at sectors 20-29, the head landing at 25.5
    # sectors: 26-29 are read first (in the segment with 25, the last block before them), 20-25 a
    # revolution of steps on; mode 2 also starts a track's first block under the head
    # called from Python, not from a jitted wrapper: the kernels take the types the simulator gives them
    # (a literal constant or a global array would make numba compile a copy of each)
    from diskmodel.model.simulator.access_block import _step_s, immediate_read_run
    layout = hundred_sector_track()
    arrays = layout.kernel_arrays()

    def run(x, n, t, ready):
        c, h, s, a, z = pbn_one(layout, x)
        return immediate_read_run(arrays, 0.01, 2, x, n, c, h, s, a, z, t, ready, 0, 1000)

    step = _step_s(0.01, 100)
    ready = np.zeros(10)
    t_end = run(20, 10, 0.00255, ready)
    assert t_end == pytest.approx(0.0026 + 100 * step, abs=1e-12)       # the jump: block 25 read
    np.testing.assert_allclose(ready[:6], 0.0026 + (np.arange(6) + 95) * step, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ready[6:], t_end, rtol=0, atol=1e-12)
    # the track's first block wanted: read from the head's sector on, 0-25 after the way round
    ready = np.zeros(30)
    assert run(0, 30, 0.00255, ready) == pytest.approx(0.0026 + 100 * step, abs=1e-12)
    # the head at (within 1e-3 sector of) the wanted sector's start, or before it: the ordinary read
    assert run(20, 10, 0.0020000001, np.zeros(10)) == -1.0
    assert run(20, 10, 0.0015, np.zeros(10)) == -1.0
