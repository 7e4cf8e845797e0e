"""DiskSim's disk-controller options, checked against DiskSim 4.0 itself on variants of the drives.

tests/golden/disksim_variants holds DiskSim 4.0's own per-request times for
variants of the bundled traced drives with one option changed (README.md
there: provenance, the changes, the command). Each variant is simulated here
and compared request by request; hand-computed cases pin each rule down.
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from diskmodel.data.disksim.syntax import DiskSimFormatError
from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive
from diskmodel.model.simulator.readahead import _read_ahead_limit
from diskmodel.model.simulator.simulate import HitKind, simulate_requests

from _helpers import keep_first_of_each
from _disksim_variants import (BUNDLED, GOLDEN, TOLERANCE_MS, VARIANTS,
                               edited_copy, golden, make_variants, simulate_variant)
from _toy_drive import toy_drive as _toy


#: Requests of the hp_c2247a "Hold bus entire read xfer = 0" variant (600) that the simulation
#: gets wrong when it holds the bus (measured; 0 when it lets the bus go, as DiskSim does).
HELD_DISAGREE = 8
#: Requests of cheetah4LP's "Preseeking level = 1" variant (600) the simulation gets wrong without
#: preseeking (measured; 0 with it, as DiskSim)
PRESEEK_DISAGREE = 47


@pytest.mark.parametrize("variant", keep_first_of_each(VARIANTS, lambda v: v["drive"], [v["name"] for v in VARIANTS],
                                                       tier="slow"))
def test_variant_matches_disksims_own_times(variant, tmp_path):
    disksim_ms = golden(variant["name"])
    assert disksim_ms.size == variant["requests"]
    ours_ms = simulate_variant(variant, tmp_path)
    agree = np.abs(ours_ms - disksim_ms) < TOLERANCE_MS
    assert agree.mean() >= variant["agreement"], np.flatnonzero(~agree)[:10]
    if "same_as" in variant:
        # the option did not change DiskSim's own times (disksim_support.NO_EFFECT_IN_DISKSIM)
        np.testing.assert_allclose(disksim_ms, golden(variant["same_as"]), rtol=0, atol=1e-6)
    if "close_to" in variant:
        # ... beyond DiskSim's rounding (a different chain of events to the same times)
        difference = np.abs(disksim_ms - golden(variant["close_to"]))
        assert 0 < difference.max() <= variant["within_ms"]


def test_the_variants_change_disksims_times_and_the_rules_are_needed(tmp_path):
    by_name = {v["name"]: v for v in VARIANTS}
    # Hold bus entire read xfer = 0 changes 41 of hp_c2247a's first 400 requests; simulated
    # holding the bus (the bundled value) they disagree with DiskSim's variant
    hold0 = by_name["hp_c2247a_hold_bus_read_0"]
    base = np.loadtxt(BUNDLED / "hp_c2247a.csv", delimiter=",", skiprows=1)[:, 1]
    changed = np.abs(golden(hold0["name"])[:400] - base) > 1e-6
    assert changed.sum() == 41
    held = simulate_variant(hold0, tmp_path / "a", hold_bus_read=True)
    assert (np.abs(held - golden(hold0["name"])) >= TOLERANCE_MS).sum() == HELD_DISAGREE
    # the read disconnect overheads change 41 of cheetah4LP's; without them 8 of ours disagree
    disc = by_name["cheetah4LP_read_disconnect"]
    base = np.loadtxt(BUNDLED / "cheetah4LP.csv", delimiter=",", skiprows=1)[:, 1]
    changed = np.abs(golden(disc["name"])[:400] - base) > 1e-6
    assert changed.sum() == 41
    plain = simulate_variant(disc, tmp_path / "b", read_disconnect_s=(0.0, 0.0))
    assert (np.abs(plain - golden(disc["name"])) >= TOLERANCE_MS).sum() == 8
    # almost read hits change 6 of the synthetic pairs' first 400 requests; simulated without
    # them, 10 of the 600 disagree with DiskSim's variant
    almost = np.abs(golden("cheetah4LP_almost_read_hits_1") - golden("cheetah4LP_almost_read_hits_0")) > 1e-6
    assert almost[:400].sum() == 6
    no_almost = simulate_variant(by_name["cheetah4LP_almost_read_hits_1"], tmp_path / "c", almost_read_hits=False)
    assert (np.abs(no_almost - golden("cheetah4LP_almost_read_hits_1")) >= TOLERANCE_MS).sum() == 10
    # Preseeking changes 80 of cheetah4LP's first 400 requests in DiskSim; simulated without it,
    # 45 of the 600 disagree with DiskSim's variant
    pre = by_name["cheetah4LP_preseeking_1"]
    base = np.loadtxt(BUNDLED / "cheetah4LP.csv", delimiter=",", skiprows=1)[:, 1]
    assert (np.abs(golden(pre["name"])[:400] - base) > 1e-6).sum() == 80
    plain = simulate_variant(pre, tmp_path / "d", preseeking_level=0)
    assert (np.abs(plain - golden(pre["name"])) >= TOLERANCE_MS).sum() == PRESEEK_DISAGREE
    # "Set watermark by reqsize" = 0 changes 251 of hp_c2247a's first 400 requests (its read
    # watermark 0.75 of the 256-block segment, not of the request); with the request's, 297 of
    # the 600 disagree
    req0 = by_name["hp_c2247a_reqwater_0"]
    base = np.loadtxt(BUNDLED / "hp_c2247a.csv", delimiter=",", skiprows=1)[:, 1]
    assert (np.abs(golden(req0["name"])[:400] - base) > 1e-6).sum() == 251
    by_request = simulate_variant(req0, tmp_path / "e", watermark_by_request_size=True)
    assert (np.abs(by_request - golden(req0["name"])) >= TOLERANCE_MS).sum() == 297
    # "Immed transfer partial hit" = 0 changes 280 of the 600 synthetic pairs (hp_c2247a, watermark
    # 0.75); transferring at once, 196 of ours disagree there, and 457 of the 600 partial hits on
    # clean segments (synthetic_hp_tails)
    pairs = golden("hp_c2247a_immed_partial_0_pairs")
    assert (np.abs(pairs - golden("hp_c2247a_hp_pairs")) > 1e-6).sum() == 280
    for name, wrong in (("hp_c2247a_immed_partial_0_pairs", 196), ("hp_c2247a_immed_partial_0_tails", 457)):
        at_once = simulate_variant(by_name[name], tmp_path / name, immediate_partial_hit_transfer=True)
        assert (np.abs(at_once - golden(name)) >= TOLERANCE_MS).sum() == wrong
    # "Write hit stop prefetch" changes 490 of 600 requests of ibm18es with a minimum read-ahead
    # when writes overlap what the read-ahead buffered; simulated with the other value, 427 disagree
    stop, go_on = "ibm18es_min_read_ahead_400_overlapping_writes", "ibm18es_min_read_ahead_400_write_hit_stop_0"
    assert (np.abs(golden(stop) - golden(go_on)) > 1e-6).sum() == 490
    for name, other in ((stop, False), (go_on, True)):
        swapped = simulate_variant(by_name[name], tmp_path / name, write_hit_stops_read_ahead=other)
        assert (np.abs(swapped - golden(name)) >= TOLERANCE_MS).sum() == 427
    # Enable caching in buffer = 2 is 1; Read any free blocks changes nothing in DiskSim
    for name, drive in (("cheetah4LP_enable_caching_2", "cheetah4LP"), ("atlas10k_read_any_free_0", "atlas10k"),
                        ("cheetah4LP_read_any_free_1", "cheetah4LP")):
        np.testing.assert_allclose(golden(name), np.loadtxt(BUNDLED / f"{drive}.csv", delimiter=",",
                                                             skiprows=1)[:, 1], atol=1e-6)


def test_without_a_dedicated_write_segment_only_a_write_into_the_last_segment_disconnects_extra(tmp_path):
    by_name = {v["name"]: v for v in VARIANTS}
    # "Use separate write segment" = 0 changes 182 of hp_c2247a's first 400 requests in DiskSim;
    # simulated with the dedicated write segment, 661 of the 3000 disagree (0 without it)
    name = "hp_c2247a_separate_write_segment_0"
    base = np.loadtxt(BUNDLED / "hp_c2247a.csv", delimiter=",", skiprows=1)[:, 1]
    assert (np.abs(golden(name)[:400] - base) > 1e-6).sum() == 182
    dedicated = simulate_variant(by_name[name], tmp_path / "a", separate_write_segment=True)
    assert (np.abs(dedicated - golden(name)) >= TOLERANCE_MS).sum() == 661
    # a second segment changes 817 of hp_c2490a's 3000 times with extra write disconnects: a
    # write after a write elsewhere takes the other segment, and connects as after a read
    two, one = "hp_c2490a_segments_2_extra_write_disconnect_1", "hp_c2490a_extra_write_disconnect_1"
    assert (np.abs(golden(two) - golden(one)) > 1e-6).sum() == 817


def test_reads_after_writes_are_not_plain_hits(tmp_path):
    """The unchanged drives on synthetic_reads_after_writes (a write, then a read of its blocks or
    near them): the 95 reads of blocks the write before them has just written, timed as plain
    hits (read hit overhead, the blocks on the bus, completion), disagree with DiskSim on 95 of
    hp_c2247a (its dedicated write segment never serves a read), 76 of cheetah4LP and 67 of
    atlas10k (arriving while the fast write is being written: served once its access ends), none
    of hp_c2490a; the simulation agrees with DiskSim on all 500 requests of each
    (test_variant_matches_disksims_own_times; 284, 328, 346 and 484 before these rules)."""
    from diskmodel.data.disksim import read_trace
    trace = read_trace(GOLDEN / "synthetic_reads_after_writes.trace")
    w, lbn, n = np.asarray(trace.is_write), np.asarray(trace.lbn), np.asarray(trace.blocks)
    inside = np.r_[False, ~w[1:] & w[:-1] & (lbn[1:] >= lbn[:-1]) & (lbn[1:] + n[1:] <= lbn[:-1] + n[:-1])]
    assert inside.sum() == 95
    by_name = {v["name"]: v for v in VARIANTS}
    for drive, wrong in (("hp_c2247a", 95), ("cheetah4LP", 76), ("atlas10k", 67), ("hp_c2490a", 0)):
        name = f"{drive}_reads_after_writes"
        p = drive_parameters(load_disksim_drive(make_variants().make_folder(by_name[name], tmp_path / name)))
        plain_ms = (p.command_overhead_s[0, 1, 1] + p.data_preparation_s + n * p.bus_read_block_s
                    + p.read_completion_s) * 1e3
        assert (inside & (np.abs(plain_ms - golden(name)) >= TOLERANCE_MS)).sum() == wrong, drive
    # "Allow sneaky partial read hits" = 1 changes 86 of cheetah4LP's 500 in DiskSim (a partial hit
    # during the write sends its buffered blocks at once); simulated without it, 20 disagree
    sneaky = by_name["cheetah4LP_sneaky_partial_1"]
    assert (np.abs(golden(sneaky["name"]) - golden("cheetah4LP_reads_after_writes")) > 1e-6).sum() == 86
    plain = simulate_variant(sneaky, tmp_path / "sneaky", sneaky_partial_read_hits=False)
    assert (np.abs(plain - golden(sneaky["name"])) >= TOLERANCE_MS).sum() == 20


# ---------------------------------------------------------------------------
# Hand-computed cases
# ---------------------------------------------------------------------------


def test_a_read_of_blocks_being_written_waits_for_the_write():
    # Fast write of LBN 0..9 at t=0: 0.3 ms overhead, data to 0.4, completion 0.5 ms; the media
    # write starts at 0.3 ms (platter at 0.03 rev), LBN 0 comes at 10.0: written to 11.0 ms. The
    # read of the same blocks arrives at 0.5 ms while they are being written: DiskSim disconnects
    # it as a miss and serves it from the buffer once the write's access ends (11.0), reconnecting
    # (0.05 ms), sending 10 blocks (0.1) and completing (0.1): 11.25 ms, 10.75 ms after its arrival.
    # The same read again (arriving at 11.25, the write done) is a plain hit: 0.2 + 0.1 + 0.1 ms.
    args = ([True, False, False], [0, 0, 0], [10, 10, 10], [0.0, 0.0, 0.0])
    result = simulate_requests(_toy(fast_write_level=2, reselect_s=0.05e-3), *args)
    assert result.service_s[1] == pytest.approx(10.75e-3, abs=1e-9)
    assert result.service_s[2] == pytest.approx(0.4e-3, abs=1e-9)
    assert list(result.hit) == [HitKind.FAST_WRITE, HitKind.CACHE_HIT, HitKind.CACHE_HIT]
    # "Allow sneaky full read hits" (maxtor300g) serves it at once, a plain hit: 0.4 ms (random
    # variant seed 11 of tests/golden/disksim_random loses 8 requests without it)
    sneaky = simulate_requests(_toy(fast_write_level=2, reselect_s=0.05e-3, sneaky_full_read_hits=True), *args)
    assert sneaky.service_s[1] == pytest.approx(0.4e-3, abs=1e-9)
    # Write-through with a dedicated write segment: the read after the write (done at 11.1 ms) is
    # a miss: overhead to 11.6, LBN 0 at 20.0, read to 21.0, sent 21.01, completion 21.11 ms;
    # without the dedicated segment the written blocks are a hit (0.4 ms)
    args = ([True, False], [0, 0], [10, 10], [0.0, 0.0])
    separate = simulate_requests(_toy(separate_write_segment=True), *args)
    assert separate.hit[1] == HitKind.MEDIA
    assert separate.service_s[1] == pytest.approx(10.01e-3, abs=1e-9)
    shared = simulate_requests(_toy(separate_write_segment=False), *args)
    assert shared.hit[1] == HitKind.CACHE_HIT
    assert shared.service_s[1] == pytest.approx(0.4e-3, abs=1e-9)


def test_a_write_into_blocks_being_read_ahead_leaves_them_in_their_segment():
    # Read of LBN 0..9 at t=0: done at 11.11 ms, its read-ahead (50 blocks) runs on from 11.0 ms
    # to 16.0. A write of LBN 3..5 arriving at 11.11 finds that segment still being read ahead
    # (DiskSim's BUFFER_READING, value 1 in disk_buffer_select_write_segment): the write takes
    # the other segment, and disk_buffer_set_segment empties only clean, non-active segments, so
    # the read's blocks stay. The write: overhead to 11.41, LBN 3 at 20.3, written to 20.6,
    # completion 20.7 (9.59 ms). The same read again at 20.7 is a plain hit: 0.2 + 0.1 + 0.1 ms
    # (a miss, 10.41 ms, when the write empties or takes that segment).
    for separate in (False, True):
        near = simulate_requests(_toy(separate_write_segment=separate), [False, True, False], [0, 3, 0],
                                 [10, 3, 10], [0.0, 0.0, 0.0])
        assert near.service_s[1] == pytest.approx(9.59e-3, abs=1e-9)
        assert near.hit[2] == HitKind.CACHE_HIT
        assert near.service_s[2] == pytest.approx(0.4e-3, abs=1e-9)
        # 30 ms later the read-ahead is over, its segment clean: the write takes it (value 4,
        # clean and overlapping) or empties it, and the read again is a miss
        later = simulate_requests(_toy(separate_write_segment=separate), [False, True, False], [0, 3, 0],
                                  [10, 3, 10], [30e-3, 0.0, 0.0])
        assert later.hit[2] == HitKind.MEDIA
        assert later.service_s[2] == pytest.approx(10.41e-3, abs=1e-9)


def test_an_appending_fast_write_joins_the_segment_of_the_write_being_written():
    # A read of LBN 500..509 at 0 (done 11.11 ms) takes a segment; 30 ms later (41.11) fast writes
    # of LBN 0..9 (completion 0.5 ms; the head back on cylinder 0, LBN 0 at 50.0, written to 51.0)
    # and at 41.61 of 10..19 (completion 0.5): the second appends to the first while it is being
    # written, so it joins its segment (BUFFER_APPEND in disk_buffer_select_write_segment), not
    # the least recently used one. Its own access starts after the first's (51.0), LBN 10 just
    # passed: 61.0 to 62.0. The read of 0..19 arriving at 42.11 is a hit on that one segment,
    # served once the access ends: 62.0 + 20 * 0.01 + 0.1 = 62.3 ms, 20.19 ms after its arrival
    # (a media read, 30.0 ms, when the second write takes a segment of its own).
    result = simulate_requests(_toy(fast_write_level=1), [False, True, True, False], [500, 0, 10, 0],
                               [10, 10, 10, 20], [30e-3, 0.0, 0.0, 0.0])
    assert list(result.hit) == [HitKind.MEDIA, HitKind.FAST_WRITE, HitKind.FAST_WRITE, HitKind.CACHE_HIT]
    assert result.service_s[3] == pytest.approx(20.19e-3, abs=1e-9)


def test_without_combining_an_appending_fast_write_waits_for_the_write_being_written():
    # As above with "Combine seq writes" 0: the second write (LBN 10..19, arriving at 41.61) takes no
    # BUFFER_APPEND (disk_buffer_select_write_segment), so it cannot stop the first write's access
    # (disk_buffer_stopable_access) and, the one write segment being dirty, gets no segment:
    # disk_write_arrive disconnects it, and it takes its data once that access ends (51.0):
    # 51.0 + 10 * 0.01 + 0.1 = 51.2 ms, 9.59 ms after its arrival, into a segment of its own. Its
    # access starts at 51.0 with LBN 10 just passed: 61.0 to 62.0. The read of 0..19 arriving at
    # 51.2 is a partial hit on the first write's segment (0..9) arriving while that access is under
    # way: its buffered blocks are sent once the access ends (62.0 + 10 * 0.01), the rest read
    # from LBN 10's next pass, 71.0 to 72.0, the last sent at 72.01, completion 72.11: 20.91 ms.
    result = simulate_requests(_toy(fast_write_level=1, combine_seq_writes=False), [False, True, True, False],
                               [500, 0, 10, 0], [10, 10, 10, 20], [30e-3, 0.0, 0.0, 0.0])
    assert list(result.hit) == [HitKind.MEDIA, HitKind.FAST_WRITE, HitKind.FAST_WRITE, HitKind.MEDIA]
    np.testing.assert_allclose(result.service_s * 1e3, [11.11, 0.5, 9.59, 20.91], rtol=0, atol=1e-9)


def test_a_fast_write_that_cannot_stop_the_write_under_way_disconnects_and_reconnects():
    # Write disconnect overhead 0.05 ms, first reselect 0.02 ms. LBN 0..9 at 0 (done 0.5; written
    # 10.0 to 11.0). LBN 500..509 arrives at 10.8, that write still being written: it cannot stop
    # it (no BUFFER_APPEND), so disk_write_arrive disconnects it after its overhead and the write
    # disconnect (11.15); it reconnects once the access has ended and the disconnection is over
    # (11.15 + 0.02), then sends its data: 11.17 + 0.1 + 0.1 = 11.37, 0.57 ms. Its access: seek
    # to cylinder 2 (1.05 + 0.2 settle), LBN 500 at 20.0, written to 21.0. LBN 510..519 arrives at
    # 11.37 appending to it: combining, it joins its segment and is done after its overhead, 0.5
    # ms; without combining it waits as the one before, max(11.37 + 0.35, 21.0) + 0.02 + 0.2 =
    # 21.22, 9.85 ms.
    for combine, last_ms in ((True, 0.5), (False, 9.85)):
        result = simulate_requests(_toy(fast_write_level=1, write_disconnect_s=0.05e-3, reselect_s=0.02e-3,
                                        combine_seq_writes=combine),
                                   [True, True, True], [0, 500, 510], [10, 10, 10], [10.3e-3, 0.0, 0.0])
        np.testing.assert_allclose(result.service_s * 1e3, [0.5, 0.57, last_ms], rtol=0, atol=1e-9)


#: "Combine seq writes" 0 (tests/golden/disksim_variants): of DiskSim's times, how many change
#: against the bundled value 1, and how many of ours disagree with them when simulated combining
COMBINE_0 = (("cheetah4LP_appended_writes", 295, 236), ("cheetah4LP_queued_writes", 508, 433),
             ("ibm18es_queued_writes", 507, 432), ("atlas10k_queued_writes", 512, 434),
             ("atlas_III_appending_runs", 257, 250), ("cheetah4LP_far_reads", 514, 450))


def test_combine_seq_writes_0_changes_disksims_times_and_is_followed(tmp_path):
    by_name = {v["name"]: v for v in VARIANTS}
    for base, changed, wrong in COMBINE_0:
        name = f"{base}_combine_0"
        assert (np.abs(golden(name) - golden(base)) > 1e-6).sum() == changed
        combined = simulate_variant(by_name[name], tmp_path / name, combine_seq_writes=True)
        assert (np.abs(combined - golden(name)) >= TOLERANCE_MS).sum() == wrong
    # a write-through drive has no dirty segment when the next write arrives: no change
    np.testing.assert_array_equal(golden("hp_c2247a_appended_writes_combine_0"), golden("hp_c2247a_appended_writes"))


def test_a_read_holding_the_bus_or_disconnecting():
    # LBN 0..9 at t=0: the 0.5 ms overhead, then LBN 0 (angle 0) comes at 10.0 ms; block k is
    # buffered at 10.1 + 0.1 k ms. Reconnection 0.05 ms, read disconnect 0.02 ms, watermark 1 block.
    # Holding the bus: connect at 10.1 + 0.05, then each block 0.01 ms after it is read: the
    # last at 11.01 ms, completion 0.1 -> 11.11 ms.
    args = ([False], [0], [10], [0.0])
    held = simulate_requests(_toy(reselect_s=0.05e-3, read_disconnect_s=(0.02e-3, 0.0)), *args)
    assert held.service_s[0] == pytest.approx(11.11e-3, abs=1e-9)
    # Disconnecting: the host has block k at 10.15 + 0.1 k + 0.01; block k+1 is read 0.04 ms
    # later, so the drive disconnects (0.02 ms) and reconnects (0.05 ms) when it is there: the
    # last block goes at 11.0 + 0.05 + 0.01, completion -> 11.16 ms.
    let_go = simulate_requests(_toy(reselect_s=0.05e-3, read_disconnect_s=(0.02e-3, 0.0), hold_bus_read=False),
                               *args)
    assert let_go.service_s[0] == pytest.approx(11.16e-3, abs=1e-9)
    # Watermark 0.3 of 10 blocks: 2, as DiskSim truncates the product on x87 (0.3 x 10 is
    # 2.99999999999999988898 there, 3.0 in doubles): connect at 10.2 + 0.05, blocks 0-1 to 10.27;
    # block 2 (10.3) is not there: disconnect until 10.29, reconnect once blocks 2-3 are buffered
    # (10.4) + 0.05 = 10.45, to 10.47; again for 4-5 (10.65 -> 10.67), 6-7 (10.85 -> 10.87), 8-9
    # (11.05 -> 11.07); completion -> 11.17 ms.
    water = simulate_requests(_toy(reselect_s=0.05e-3, read_disconnect_s=(0.02e-3, 0.0), hold_bus_read=False,
                                   read_watermark=0.3), *args)
    assert water.service_s[0] == pytest.approx(11.17e-3, abs=1e-9)


def test_a_read_miss_reconnects_no_earlier_than_its_disconnection():
    # LBN 6 at t=0: after the 0.5 ms overhead the platter is at 0.05 rev, sector 6 is read from
    # 0.6 to 0.7 ms. The miss disconnected at 0.5 + 0.3 ms (read disconnect after a read), so it
    # reconnects at 0.8 + 0.05, sends the block (0.01) and completes (0.1): 0.96 ms. Without the
    # disconnect overhead: 0.7 + 0.05 + 0.01 + 0.1 = 0.86 ms; the after-write overhead does not
    # apply after a read.
    args = ([False], [6], [1], [0.0])
    assert simulate_requests(_toy(reselect_s=0.05e-3, read_disconnect_s=(0.3e-3, 0.0)),
                             *args).service_s[0] == pytest.approx(0.96e-3, abs=1e-9)
    assert simulate_requests(_toy(reselect_s=0.05e-3, read_disconnect_s=(0.0, 0.3e-3)),
                             *args).service_s[0] == pytest.approx(0.86e-3, abs=1e-9)


def test_almost_read_hit_on_the_block_being_read_ahead():
    # LBN 0..9 done at 11.11 ms; the read-ahead buffers LBN 10 + j at 11.1 + 0.1 j ms. The next
    # read (LBN 12..16) arrives at 11.25 ms, while LBN 12 is being read.
    args = ([False, False], [0, 12], [10, 5], [0.14e-3, 0.0])
    almost = simulate_requests(_toy(almost_read_hits=True), *args)
    # a hit: 11.25 + 0.2 ms hit overhead = 11.45; LBN 12, 13 (11.3, 11.4) at once -> 11.47;
    # LBN 14, 15, 16 as read (11.5, 11.6, 11.7) -> 11.71; completion -> 11.81: 0.56 ms
    assert almost.hit[1] == HitKind.READ_AHEAD_HIT
    assert almost.service_s[1] == pytest.approx(0.56e-3, abs=1e-9)
    # a miss: the read-ahead stops at the end of sector 12 (11.3 ms); the mechanism starts at
    # 11.25 + 0.5 + 0.05 = 11.8 ms (platter at 0.18 rev), sector 12 (0.12 rev) comes at 21.2 ms;
    # LBN 12..16 read by 21.7, the last sent at 21.71, completion 21.81: 10.56 ms
    miss = simulate_requests(_toy(almost_read_hits=False), *args)
    assert miss.hit[1] == HitKind.MEDIA
    assert miss.service_s[1] == pytest.approx(10.56e-3, abs=1e-9)


def test_preseeking_empties_the_segment_of_a_read_done_before_its_completion():
    # No read-ahead: LBN 0..9 at t=0 is read from 10.0 to 11.0 ms and completes at 11.11 ms.
    # Without preseeking the same read again is a hit: 0.2 ms overhead + 10 blocks on the bus +
    # 0.1 ms completion = 0.4 ms. With preseeking the first read's media access ended (11.0 ms)
    # before its completion, its segment is empty: a miss, 0.5 ms overhead (11.61 ms), LBN 0
    # under the head at 20.0 ms, read to 21.0, sent and completed at 21.11 ms: 10.0 ms.
    args = ([False] * 3, [0] * 3, [10] * 3, [0.0] * 3)
    common = dict(read_ahead_scheme=0, max_read_ahead_blocks=0)
    plain = simulate_requests(_toy(**common), *args)
    np.testing.assert_allclose(plain.service_s, [11.11e-3, 0.4e-3, 0.4e-3], atol=1e-9)
    for level in (1, 2):
        pre = simulate_requests(_toy(preseeking_level=level, **common), *args)
        np.testing.assert_allclose(pre.service_s, [11.11e-3, 10.0e-3, 10.0e-3], atol=1e-9)
        assert list(pre.hit) == [HitKind.MEDIA] * 3
    # with a read-ahead (50 blocks, to 16.0 ms) still running at the completion the segment
    # keeps its blocks: the second read is a hit either way
    ahead = simulate_requests(_toy(preseeking_level=1), *args)
    assert ahead.hit[1] == HitKind.CACHE_HIT
    assert ahead.service_s[1] == pytest.approx(0.4e-3, abs=1e-9)


def test_dec_read_ahead_follows_disksims_code():
    # DiskSim's disk_buffer_get_max_readahead for "Buffer continuous read" 4: to the end of the
    # track holding the block after the request, and one more track's worth (100 blocks) when
    # the segment starts before that track; no other bound.
    arrays = _toy().layout.kernel_arrays()
    total = 2 * 100 * 100

    def limit(first, last, seg_first):
        return _read_ahead_limit(arrays, 4, first, last, seg_first, 50, 200, 1, total, 0)

    assert limit(10, 20, 10) == 100          # within track 0
    assert limit(10, 20, 5) == 100           # the segment starts on the same track
    assert limit(90, 100, 90) == 300         # block 100 is on track 1; the segment starts on track 0
    assert limit(110, 120, 50) == 300        # a segment reaching back to track 0
    assert limit(110, 120, 110) == 200
    assert limit(19950, total, 19950) == total


def test_options_not_honoured_are_errors_naming_file_line_parameter(disksim_dir, tmp_path):
    folder = tmp_path / "cheetah4LP"
    shutil.copytree(disksim_dir / "cheetah4LP", folder)
    specs = next(folder.glob("*.diskspecs"))
    original = specs.read_text()
    lines = original.splitlines()
    # each outside DiskSim 4.0's own range too (disk.modspec), which the error says
    own = r"\); DiskSim 4\.0 refuses it too \(disk\.modspec: "
    for key, value, message in (("Enable caching in buffer", "3", r"it implements 0, 1, 2" + own + "0, 1, 2"),
                                ("Immediate buffer read", "3", r"it implements 0, 1, 2" + own + "0, 1, 2"),
                                ("Immediate buffer write", "-1", r"it implements 0, 1, 2" + own + "0, 1, 2"),
                                ("Low (write) water mark", "1.5", r"it implements any value in \[0, 1\]" + own),
                                ("Preseeking level", "3", r"it implements 0, 1, 2" + own + "0, 1, 2")):
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(key))
        specs.write_text("\n".join(lines[:at] + [f"   {key} = {value},"] + lines[at + 1:]) + "\n")
        where = rf"cheetah4LP\.diskspecs:{at + 1}: {re.escape(key)} = "
        with pytest.raises(DiskSimFormatError, match=where + rf".*{message}"):
            drive_parameters(load_disksim_drive(folder))
    specs.write_text(original.replace("Low (write) water mark = 0.000000", "Low (write) water mark = 0.5"))
    assert drive_parameters(load_disksim_drive(folder)).name == "cheetah4LP"


def test_never_disconnect_with_fast_writes_queues_them(disksim_dir, tmp_path):
    # with fast writes DiskSim takes an appending write at once and queues it (disk_write_arrive:
    # neverdisconnect ||), as with write prebuffering: the golden *_far_reads_never_disconnect
    folder, specs, text, line = edited_copy(disksim_dir, tmp_path, "cheetah4LP",
                                             "Never disconnect = 0,", "Never disconnect = 1,")
    params = drive_parameters(load_disksim_drive(folder))
    assert params.never_disconnect and params.fast_write_level == 1 and not params.write_prebuffering


def test_never_disconnect_keeps_the_bus():
    # LBN 6 at t=0 (as in the disconnection case): read 0.6 to 0.7 ms. Never disconnecting, the
    # drive is connected from 0.5 ms (overhead) + 0.02 (data preparation), waits for the block
    # (0.7), sends it (0.01) and completes (0.1): 0.81 ms; disconnecting it reconnects at
    # 0.7 + 0.05 + 0.02: 0.88 ms.
    args = ([False], [6], [1], [0.0])
    common = dict(reselect_s=0.05e-3, data_preparation_s=0.02e-3, hold_bus_read=False)
    assert simulate_requests(_toy(never_disconnect=True, **common), *args).service_s[0] == pytest.approx(
        0.81e-3, abs=1e-9)
    assert simulate_requests(_toy(**common), *args).service_s[0] == pytest.approx(0.88e-3, abs=1e-9)


def test_a_read_ahead_short_of_its_minimum_is_not_stopped():
    # LBN 0..9 done at 11.11 ms; the read-ahead buffers LBN 10 + j at 11.1 + 0.1 j ms (up to LBN 59).
    # The next read (LBN 5050: cylinder 25, head 0, angle 0.5) arrives at 11.13 ms.
    args = ([False, False], [0, 5050], [10, 1], [0.02e-3, 0.0])
    # No minimum: the read-ahead stops at the end of sector 11 (11.2 ms); seek from 11.13 + 0.5 +
    # 0.07 = 11.7 ms, 2.2 ms -> 13.9 (platter at 0.39 rev); angle 0.5 at 15.0 ms; read, bus and
    # completion -> 15.21 ms: 4.08 ms.
    assert simulate_requests(_toy(), *args).service_s[1] == pytest.approx(4.08e-3, abs=1e-9)
    # A minimum of 30 blocks: the read-ahead reads on to LBN 39 (14.0 ms) and ends there; the seek
    # starts then (the overhead is long over): 16.2 ms, platter at 0.62 rev; angle 0.5 at 25.0 ms
    # -> 25.21 ms: 14.08 ms.
    result = simulate_requests(_toy(min_read_ahead_blocks=30), *args)
    assert result.service_s[1] == pytest.approx(14.08e-3, abs=1e-9)
    assert result.seek_s[1] == pytest.approx(2.2e-3, abs=1e-9)
    # A fast write then disconnects (write overhead 0.3 ms) and takes its data once the read-ahead
    # ends (14.0 ms; reselect and data preparation 0): 14.0 + 0.01 + 0.1 -> 2.98 ms; without a
    # minimum it is reported at once: 0.41 ms.
    write = ([False, True], [0, 5050], [10, 1], [0.02e-3, 0.0])
    assert simulate_requests(_toy(min_read_ahead_blocks=30, fast_write_level=2),
                             *write).service_s[1] == pytest.approx(2.98e-3, abs=1e-9)
    assert simulate_requests(_toy(fast_write_level=2), *write).service_s[1] == pytest.approx(0.41e-3, abs=1e-9)


def test_a_read_at_the_block_a_read_ahead_short_of_its_minimum_reads_next_waits_for_it():
    # As above; the next read (LBN 11-12) arrives at 11.13 ms, LBN 11 being read (11.1-11.2 ms).
    # It starts at the block being read ahead: no hit without "Allow almost read hits"
    # (disk_buffer_select_read_segment). No minimum: a miss, the read-ahead stops at 11.2 ms and
    # LBN 11 comes round at 21.1 ms; 21.3 + 0.01 + 0.1 -> 21.41 ms: 10.28 ms.
    args = ([False, False], [0, 11], [10, 2], [0.02e-3, 0.0])
    assert simulate_requests(_toy(), *args).service_s[1] == pytest.approx(10.28e-3, abs=1e-9)
    # A minimum of 30: the read-ahead cannot stop and reads on to LBN 39 (14.0 ms), which holds
    # the read's blocks: it waits, disconnected after the read miss overhead (11.63 ms), and is a
    # hit when the read-ahead ends (disk_get_effectivehda): 14.0 + 2 x 0.01 + 0.1 -> 14.12 ms,
    # 2.99 ms, nothing read for it. (The simulation used to read -1 blocks for it, out of range.)
    result = simulate_requests(_toy(min_read_ahead_blocks=30), *args)
    assert result.service_s[1] == pytest.approx(2.99e-3, abs=1e-9)
    assert result.hit[1] == HitKind.READ_AHEAD_HIT and result.seek_s[1] == 0.0
    # with almost read hits it is a hit at once: 11.13 + 0.2 (hit overhead) -> 11.33, LBN 12 is
    # there (11.3); + 0.02 + 0.1 -> 11.45 ms: 0.32 ms
    assert simulate_requests(_toy(min_read_ahead_blocks=30, almost_read_hits=True),
                             *args).service_s[1] == pytest.approx(0.32e-3, abs=1e-9)


def test_reads_waiting_for_a_read_ahead_short_of_its_minimum_agree_with_disksim(tmp_path):
    by_name = {v["name"]: v for v in VARIANTS}
    # random seed 615's trace on cheetah4LP with a minimum of 184: request 702 (LBN 7262072-3,
    # 16.5 ms after a read of 7262070-1) starts at the block the read-ahead reads next and is all
    # in what it reads before its minimum: a hit once it ends, DiskSim's 8.526757 ms (6.7519 ms
    # on the unchanged drive). The simulation indexed out of range there (IndexError under
    # NUMBA_BOUNDSCHECK=1, a corrupted heap without).
    name = "cheetah4LP_min_read_ahead_184"
    ours = simulate_variant(by_name[name], tmp_path / "a")
    assert golden(name)[702] == pytest.approx(8.526757, abs=1e-6)
    assert ours[702] == pytest.approx(8.526757, abs=TOLERANCE_MS)
    np.testing.assert_allclose(ours, golden(name), rtol=0, atol=TOLERANCE_MS)
    # random seed 751's trace on atlas_III with a minimum of 63: 64-block sequential reads, each
    # arriving at the block being read ahead, become partial hits (63 blocks) once the read-ahead
    # reaches its minimum, their buffered blocks sent after a reconnection then, not from the
    # arrival: 10.6-13.5 ms where the unchanged drive takes 7.158 ms
    name = "atlas_III_min_read_ahead_63"
    ours = simulate_variant(by_name[name], tmp_path / "b")
    np.testing.assert_allclose(ours[258:273], golden(name)[258:273], rtol=0, atol=TOLERANCE_MS)
    assert golden(name)[258:273].min() > 10.6


def test_minimum_read_ahead_without_fast_writes_is_accepted(disksim_dir, tmp_path):
    # DiskSim 4.0 fails on some traces only (hp_c2247a's bundled one at request 1281) and agrees
    # with us before that (variants.json: *_write_through_min_read_ahead_*, checked above)
    folder, _, _, _ = edited_copy(disksim_dir, tmp_path, "hp_c2247a",
                                   "Minimum read-ahead (blks) = 0,", "Minimum read-ahead (blks) = 100,")
    assert drive_parameters(load_disksim_drive(folder)).min_read_ahead_blocks == 100


@pytest.mark.slow
def test_maxtor300g_write_prebuffering_policy_21(disksim_dir, tmp_path):
    # maxtor300g prebuffers writes into 128 write segments with a positioning-time scheduler (policy
    # 21, PRI_ASPCTF_OPT): followed since branch sptf (tests/test_disksim_random.py, "_sptf" sets)
    params = drive_parameters(load_disksim_drive(disksim_dir / "maxtor300g"))
    assert params.queue_scheduling_policy == 21 and params.immediate_write and params.write_segments == 128
    with pytest.raises(ValueError, match=r"queue_scheduling_policy must be one of DiskSim's policies followed, "
                                         r"1, 2, 3, 4, 8, 9, 14, 15, 17, 20, 21 \(got 5\)"):
        params.evolve(queue_scheduling_policy=5)
    folder, specs, text, _ = edited_copy(disksim_dir, tmp_path, "maxtor300g", "Scheduling policy = 21,",
                                          "Scheduling policy = 1,")
    assert drive_parameters(load_disksim_drive(folder)).queue_scheduling_policy == 1
    specs.write_text(text.replace("Maximum number of write segments = 128,", "Maximum number of write segments = 1,"))
    params = drive_parameters(load_disksim_drive(folder))
    assert params.almost_read_hits and not params.hold_bus_read and params.write_prebuffering
    # a read right after another starts at the block being read ahead: an almost read hit
    args = (np.array([False, False, True]), [1000, 1008, 5000000], [8, 8, 8], [0.0, 1e-3, 0.0])
    result = simulate_requests(params, *args)
    assert result.hit.tolist() == [HitKind.MEDIA, HitKind.READ_AHEAD_HIT, HitKind.FAST_WRITE]
    assert simulate_requests(params.evolve(almost_read_hits=False), *args).hit[1] == HitKind.MEDIA


def test_write_prebuffering_values(disksim_dir, tmp_path):
    folder, specs, text, line = edited_copy(disksim_dir, tmp_path, "cheetah4LP", "Allow write prebuffering = 0,",
                                             "Allow write prebuffering = 1,")
    assert drive_parameters(load_disksim_drive(folder)).write_prebuffering
    specs.write_text(text.replace("Maximum number of write segments = 1,", "Maximum number of write segments = 2,"))
    assert drive_parameters(load_disksim_drive(folder)).write_segments == 2
    # the LBN and positioning-time policies are followed (tests/test_disksim_random.py,
    # test_queue_policies_agree_with_disksim); the others refused, saying why
    specs.write_text(text.replace("Scheduling policy = 1,", "Scheduling policy = 4,"))
    assert drive_parameters(load_disksim_drive(folder)).queue_scheduling_policy == 4
    specs.write_text(text.replace("Scheduling policy = 1,", "Scheduling policy = 5,"))
    with pytest.raises(DiskSimFormatError, match=rf"cheetah4LP\.diskspecs:{line}: Allow write prebuffering = 1 .* "
                                                 r"Scheduling policy = 1, first come first served, or 2, 3, 4, 8, 9, "
                                                 r"14, 15, 17, 20, 21 \(got 5: ELEVATOR_CYL, cylinder-ordered"):
        drive_parameters(load_disksim_drive(folder))
    specs.write_text(text.replace("Scheduling policy = 1,", "Scheduling policy = 10,"))
    with pytest.raises(DiskSimFormatError, match=r"\(got 10: SATF_OPT: DiskSim 4\.0 stops once two requests"):
        drive_parameters(load_disksim_drive(folder))
    # scheduler keys acting on the queued writes: 0 only, the error naming the key's own line
    edited = text.replace("Maximum concat size = 0,", "Maximum concat size = 64,")
    assert edited != text
    specs.write_text(edited)
    concat_line = edited.splitlines().index(next(x for x in edited.splitlines() if "Maximum concat size" in x)) + 1
    with pytest.raises(DiskSimFormatError, match=rf"cheetah4LP\.diskspecs:{concat_line}: Maximum concat size = 64 "
                                                 r"is not honoured .* \(it implements 0: queued sequential requests"):
        drive_parameters(load_disksim_drive(folder))
    edited = text.replace("Scheduling policy = 1,", "Scheduling policy = 14,").replace(
        "Timeout time/weight = 0,", "Timeout time/weight = 5,")
    specs.write_text(edited)
    with pytest.raises(DiskSimFormatError, match=r"Timeout time/weight = 5 is not honoured .* Scheduling policy = 14"):
        drive_parameters(load_disksim_drive(folder))
    specs.write_text(text.replace("Timeout time/weight = 0,", "Timeout time/weight = 5,"))
    assert drive_parameters(load_disksim_drive(folder)).queue_scheduling_policy == 1
    specs.write_text(text.replace("Allow write prebuffering = 1,", "Allow write prebuffering = 2,"))
    with pytest.raises(DiskSimFormatError, match=rf"cheetah4LP\.diskspecs:{line}: Allow write prebuffering must "
                                                 r"be 0 or 1 \(got 2\)"):
        drive_parameters(load_disksim_drive(folder))
    with pytest.raises(ValueError, match="write_prebuffering must be True or False"):
        _toy(write_prebuffering=1)
