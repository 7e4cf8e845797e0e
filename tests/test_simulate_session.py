"""The stepped simulation (model/simulator/session.py: DriveSession) against the whole-trace one.

A drive served one request at a time (or in batches of any size), its state kept between calls,
gives the times of ``simulate_requests`` on the whole trace, to the bit, on the seven traced
drives' validation traces and DiskSim 4.0's own per-request times (tests/golden/disksim_service_times,
tests/golden/disksim_variants), each request arriving at the last one's completion plus its gap
as in DiskSim's validate runs.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from diskmodel.data.disksim import DISKSIM_PUBLISHED_DEMERIT_MS
from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive
from diskmodel.model.simulator.simulate import HitKind, simulate_requests
from diskmodel.model.simulator.session import DEFAULT_MAX_BLOCKS, DriveSession, Served

from _scripts import load_script
from _toy_drive import toy_drive

TRACED = sorted(DISKSIM_PUBLISHED_DEMERIT_MS)
GOLDEN = Path(__file__).parent / "golden"
VARIANTS = json.loads((GOLDEN / "disksim_variants" / "variants.json").read_text())
FIELDS = ("service_s", "hit", "seek_s", "latency_s", "media_s")


def _drive(folder: Path, requests: int | None = None):
    """DiskSim 4.0's code exactly (as the goldens were made): (params, trace)."""
    drive = load_disksim_drive(folder)
    trace = drive.read_trace()
    if requests is not None:
        trace = trace.head(requests)
    return drive_parameters(drive, disksim_code=True, disksim_access_block_bug=True), trace


def _stepped(params, trace, **session_options):
    """Each request served alone, arriving at the last one's completion plus its gap (the
    arrivals worked out from the session's own completions, not from a whole-trace run)."""
    session = DriveSession(params, **session_options)
    served = []
    arrival = 0.0
    for w, lbn, blocks, gap in zip(trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s):
        done = session.serve(bool(w), int(lbn), int(blocks), arrival)
        served.append(done)
        arrival = done.completion_s + gap
    return session, {name: np.array([getattr(s, name) for s in served]) for name in FIELDS}


def _assert_same_bits(whole, stepped: dict, what: str):
    for name in FIELDS:
        ours = stepped[name]
        theirs = getattr(whole, name)
        assert ours.shape == theirs.shape, (what, name)
        differ = np.flatnonzero(ours != theirs)
        assert differ.size == 0, (what, name, differ[:5], ours[differ[:3]], theirs[differ[:3]])


@pytest.mark.parametrize("name", TRACED)
def test_one_request_at_a_time_gives_the_whole_traces_times(disksim_dir, name):
    params, trace = _drive(disksim_dir / name)
    whole = simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
    # sized as simulate_requests sizes its working arrays: for the trace's longest request
    session, stepped = _stepped(params, trace, max_blocks=int(trace.blocks.max()))
    _assert_same_bits(whole, stepped, name)
    end = session.state
    assert (end.clock_s, end.cylinder, end.head) == (whole.end_s, whole.end_cylinder, whole.end_head)
    assert end.requests == len(trace.lbn)


@pytest.mark.parametrize("name", TRACED)
def test_the_default_session_size_gives_the_same_times(disksim_dir, name):
    # working arrays sized for 32 MiB requests: the read-ahead and the write queue never fill them
    # on these traces, so the times do not depend on the size
    params, trace = _drive(disksim_dir / name)
    whole = simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
    session = DriveSession(params)
    assert session.max_blocks == DEFAULT_MAX_BLOCKS
    served = session.serve_many(trace.is_write, trace.lbn, trace.blocks, whole.arrival_s)
    _assert_same_bits(whole, served._asdict(), name)


@pytest.mark.parametrize("name", TRACED)
def test_batches_of_random_sizes_give_the_whole_traces_times(disksim_dir, name):
    params, trace = _drive(disksim_dir / name)
    whole = simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
    session = DriveSession(params, max_blocks=int(trace.blocks.max()))
    rng = np.random.default_rng(sum(map(ord, name)))
    parts = []
    i = 0
    n = len(trace.lbn)
    while i < n:
        # 1 to 300 requests, the first ones alone to cross the single-request path too
        k = int(rng.integers(1, 300)) if i > 5 else 1
        s = slice(i, min(i + k, n))
        # the arrivals of the whole-trace run: absolute times, as an emulated drive gets them
        parts.append(session.serve_many(trace.is_write[s], trace.lbn[s], trace.blocks[s], whole.arrival_s[s]))
        i = s.stop
    stepped = {name: np.concatenate([getattr(p, name) for p in parts]) for name in FIELDS}
    _assert_same_bits(whole, stepped, name)
    starts = np.concatenate([p.start_s for p in parts])
    assert np.array_equal(starts, whole.arrival_s)


@pytest.mark.parametrize("name", TRACED)
def test_stepped_times_are_disksims_own(disksim_dir, name):
    # DiskSim 4.0's per-request times (the golden of test_simulate.test_service_times_match_disksims_own)
    golden = np.loadtxt(GOLDEN / "disksim_service_times" / f"{name}.csv", delimiter=",", skiprows=1)
    params, trace = _drive(disksim_dir / name, len(golden))
    _, stepped = _stepped(params, trace, max_blocks=int(trace.blocks.max()))
    agree = np.abs(stepped["service_s"] * 1e3 - golden[:, 1]) < 0.01
    assert agree.all(), np.flatnonzero(~agree)[:10]


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=[v["name"] for v in VARIANTS])
def test_variants_stepped_give_the_whole_traces_and_disksims_times(variant, tmp_path):
    # the options' state carried between calls: prebuffered write queues, preseeking, minimum
    # read-ahead, read-ahead on idle hits, several write segments (tests/golden/disksim_variants)
    folder = load_script(GOLDEN / "disksim_variants" / "make_variants.py").make_folder(variant, tmp_path)
    params, trace = _drive(folder, variant["requests"])
    whole = simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
    _, stepped = _stepped(params, trace, max_blocks=int(trace.blocks.max()))
    _assert_same_bits(whole, stepped, variant["name"])
    disksim_ms = np.loadtxt(GOLDEN / "disksim_variants" / f"{variant['name']}.csv", delimiter=",",
                            skiprows=1)[:, 1]
    agree = np.abs(stepped["service_s"] * 1e3 - disksim_ms) < 0.01
    assert agree.mean() >= variant["agreement"], np.flatnonzero(~agree)[:10]


# ---------------------------------------------------------------------------
# the state carried between calls
# ---------------------------------------------------------------------------

def test_a_read_after_the_read_ahead_hits_when_stepped():
    # the hand-checked case of test_simulate.test_hand_checked_sequential_read_ahead_hit, stepped:
    # 10 blocks at LBN 0 (a miss read ahead to LBN 59 by 16.0 ms), then 5 blocks at LBN 10 5 ms
    # after the first completes (11.11 ms): a full hit, 0.2 ms overhead + 5 x 0.01 ms + 0.1 ms
    params = toy_drive()
    session = DriveSession(params)
    first = session.serve(False, 0, 10, 0.0)
    assert first.hit == HitKind.MEDIA
    assert first.service_s == pytest.approx(11.11e-3, abs=1e-9)
    state = session.state
    assert state.read_ahead is not None
    assert (state.read_ahead.first_block, state.read_ahead.blocks) == (10, 50)
    assert state.read_ahead.done_s == pytest.approx(16.0e-3, abs=1e-9)
    own = state.segments[state.read_ahead.segment]
    assert own.first_block == 0 and not own.written
    second = session.serve(False, 10, 5, first.completion_s + 5e-3)
    assert second.hit == HitKind.CACHE_HIT
    assert second.service_s == pytest.approx(0.35e-3, abs=1e-9)
    assert session.state.read_ahead is None     # done by the arrival
    assert session.state.segments[state.read_ahead.segment].end_block == 60
    whole = simulate_requests(params, [False, False], [0, 10], [10, 5], [5e-3, 0.0])
    assert [first.service_s, second.service_s] == whole.service_s.tolist()
    # without the first read's state the same read is a miss
    assert DriveSession(params).serve(False, 10, 5, second.arrival_s).hit == HitKind.MEDIA


def test_a_request_arriving_early_waits_for_the_one_before():
    params = toy_drive()
    session = DriveSession(params)
    first = session.serve(False, 0, 10, 0.0)
    # arrives halfway through the first: served from its completion, as if it arrived then
    early = session.serve(False, 5000, 8, first.completion_s / 2)
    again = DriveSession(params)
    again.serve(False, 0, 10, 0.0)
    on_time = again.serve(False, 5000, 8, first.completion_s)
    assert early.start_s == first.completion_s
    assert (early.service_s, early.completion_s) == (on_time.service_s, on_time.completion_s)
    assert early.response_s == early.completion_s - first.completion_s / 2


def test_a_write_being_written_is_carried_to_the_next_call():
    # a fast write reports once its data are buffered; its media write runs on into the next call,
    # and a read of other blocks arriving meanwhile waits for the write's access to end
    params = toy_drive(fast_write_level=2)
    session = DriveSession(params)
    write = session.serve(True, 0, 100, 0.0)
    assert write.hit == HitKind.FAST_WRITE
    on_media = session.state.dirty_until_s
    assert on_media > write.completion_s
    read = session.serve(False, 9000, 4, write.completion_s)
    assert read.hit == HitKind.MEDIA and read.completion_s > on_media
    whole = simulate_requests(params, [True, False], [0, 9000], [100, 4], [0.0, 0.0])
    assert [write.service_s, read.service_s] == whole.service_s.tolist()


def test_a_constant_access_drive_is_stepped_too():
    params = toy_drive(constant_access_s=2e-3)
    session = DriveSession(params, start_cylinder=3, start_head=1)
    served = session.serve_many(np.array([False, True, False]), np.array([0, 50, 7]), np.array([1, 2, 3]),
                                np.array([0.0, 1e-3, 10e-3]))
    assert served.service_s.tolist() == [2e-3] * 3
    assert served.start_s.tolist() == [0.0, 2e-3, 10e-3]
    assert (session.state.cylinder, session.state.head, session.requests) == (3, 1, 3)


# ---------------------------------------------------------------------------
# bad input: one line naming the parameter and the value; the session is left as it was
# ---------------------------------------------------------------------------

def _refused(session, call, *fragments):
    before = session.state
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and message.strip(), message
    for fragment in fragments:
        assert fragment in message, message
    assert session.state == before


def test_bad_requests_are_refused_in_one_line():
    params = toy_drive()
    total = params.layout.total_blocks
    session = DriveSession(params, max_blocks=300)
    first = session.serve(False, 0, 10, 1.0)
    _refused(session, lambda: session.serve(False, 20, 1, 0.5), "arrival_s", "0.5", "backwards")
    _refused(session, lambda: session.serve(False, 20, 1, float("nan")), "arrival_s", "nan")
    _refused(session, lambda: session.serve(False, 20, 0, 2.0), "blocks", ">= 1", "0")
    _refused(session, lambda: session.serve(False, 20, 301, 2.0), "blocks", "max_blocks", "301")
    _refused(session, lambda: session.serve(False, -1, 1, 2.0), "lbn", "-1")
    _refused(session, lambda: session.serve(False, total - 1, 2, 2.0), "lbn", str(total - 1), str(total))
    # a huge lbn does not wrap round: int64 (numpy) and Python ints alike
    huge = np.int64(2**63 - 1)
    _refused(session, lambda: session.serve(False, huge, 2, 2.0), "lbn", str(2**63 - 1))
    _refused(session, lambda: session.serve(False, 2**64, 1, 2.0), "lbn", str(2**64))
    _refused(session, lambda: session.serve("yes", 20, 1, 2.0), "is_write", "yes")
    _refused(session, lambda: session.serve(False, 20.0, 1, 2.0), "lbn", "20.0")
    # a batch: the first bad request by its index in the session, none served
    _refused(session, lambda: session.serve_many([False, False], [20, 30], [1, 1], [2.0, 1.5]),
             "arrival_s", "request 2", "1.5")
    _refused(session, lambda: session.serve_many([False, False], [20, 30], [1, 1], [0.9, 2.0]),
             "arrival_s", "request 1", "0.9")
    _refused(session, lambda: session.serve_many([False], np.array([2**64 - 1], np.uint64), [2], [2.0]),
             "request 1", str(2**64 - 1))
    _refused(session, lambda: session.serve_many([False], np.array([huge]), np.array([huge]), [2.0]),
             "request 1", str(2**63 - 1))
    _refused(session, lambda: session.serve_many([False], [20], [0], [2.0]), "blocks", "0")
    _refused(session, lambda: session.serve_many([False], [20], [1], [2.0, 3.0]), "arrival_s", "1", "2")
    assert session.requests == 1
    # and still serves as before
    assert session.serve(False, 10, 5, first.completion_s + 5e-3).hit == HitKind.CACHE_HIT


def test_bad_session_arguments_are_refused_in_one_line():
    params = toy_drive()
    for call, fragment in ((lambda: DriveSession("toy"), "params"),
                           (lambda: DriveSession(params, start_s=-1.0), "start_s"),
                           (lambda: DriveSession(params, start_cylinder=100), "start_cylinder"),
                           (lambda: DriveSession(params, start_head=2), "start_head"),
                           (lambda: DriveSession(params, max_blocks=0), "max_blocks")):
        with pytest.raises(ValueError, match=fragment) as info:
            call()
        assert "\n" not in str(info.value)


def test_served_is_a_named_tuple_of_the_request():
    session = DriveSession(toy_drive())
    done = session.serve(np.bool_(False), np.int64(0), np.int32(10), np.float64(0.0))
    assert isinstance(done, Served)
    assert done._fields[:5] == ("arrival_s", "start_s", "completion_s", "service_s", "hit")
    assert done.completion_s == done.start_s + done.service_s
