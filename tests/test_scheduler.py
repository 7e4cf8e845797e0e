"""The block layer's scheduler over a drive (model/iopath/scheduler.py).

The rules' references are mq-deadline's own (block/mq-deadline.c, Linux 6.1), worked by hand for each
case: each expected order below is written from the rule it names, not from the code. The kernel's
whole behaviour is checked against blktrace on an emulated drive
(tests/golden/mq_deadline_randread_emulated.json)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskmodel.model.iopath.scheduler import ScheduledServer, Scheduler, queue_scheduler
from diskmodel.model.iopath.stream import Op

GOLDEN = Path(__file__).parent / "golden" / "mq_deadline_randread_emulated.json"
R, W, F = int(Op.READ), int(Op.WRITE), int(Op.FLUSH)


class _Recorder:
    """A drive that takes ``service_s`` per command and remembers what it was given, in order."""

    total_blocks = 1 << 40

    def __init__(self, service_s=1e-3):
        self.service_s, self.given, self.free_s = service_s, [], 0.0

    def serve(self, op, lbn, blocks, arrival):
        self.given.append((int(op[0]), int(lbn[0]), int(blocks[0])))
        start = max(float(arrival[0]), self.free_s)
        self.free_s = start + self.service_s
        return np.array([start]), np.array([self.free_s])


def _run(requests, sched=None, service_s=1e-3):
    """Serve ``requests`` ((op, lbn, blocks, arrival), ...) to the end; the drive's commands in order."""
    drive = _Recorder(service_s)
    server = ScheduledServer(drive, sched or Scheduler())
    op, lbn, blocks, arrival = (np.array(c) for c in zip(*requests))
    server.serve(op.astype(np.int8), lbn.astype(np.int64), blocks.astype(np.int64), arrival.astype(float),
                 ids=np.arange(len(requests)), need=np.zeros(len(requests), bool))
    done = server.finish()
    return drive.given, done


def test_a_burst_reaches_an_idle_drive_first_then_the_sweep_goes_up_and_wraps_to_the_oldest():
    # the first write takes the free tag at once; the rest wait, and each batch goes on from the last
    # sector by sector (deadline_move_request); past the last one the batch starts at the FIFO's head
    given, _ = _run([(W, 50, 1, 0.0), (W, 10, 1, 0.0), (W, 40, 1, 0.0), (W, 20, 1, 0.0), (W, 30, 1, 0.0),
                     (W, 60, 1, 0.0)])
    assert [g[1] for g in given] == [50, 60, 10, 20, 30, 40]


def test_front_and_back_merges_make_one_command_and_every_member_completes_with_it():
    # newest first, as a journal commit writes files back: each request ends where the one queued
    # before it begins (a front merge); the drive is busy with another one meanwhile
    reqs = [(W, 1000, 8, 0.0)] + [(W, 100 - 8 * k, 8, 0.0) for k in range(5)] + [(W, 108, 8, 0.0)]
    given, done = _run(reqs)
    assert given == [(W, 1000, 8), (W, 68, 48)]
    assert len({done[i] for i in range(1, 7)}) == 1


def test_a_merge_stays_within_max_sectors_kb():
    sched = Scheduler(max_request_bytes=16 * 512)
    given, _ = _run([(W, 1000, 8, 0.0), (W, 0, 8, 0.0), (W, 8, 8, 0.0), (W, 16, 8, 0.0)], sched)
    assert given == [(W, 1000, 8), (W, 0, 16), (W, 16, 8)]


def test_reads_go_before_queued_writes_until_writes_have_starved_two_batches():
    # writes_starved = 2: a new batch takes reads while writes have waited through fewer than two read
    # batches; fifo_batch = 1 makes each request its own batch. A batch in a new direction starts at that
    # direction's oldest request (its next_rq was cleared when the other direction moved)
    sched = Scheduler(fifo_batch=1)
    reqs = [(W, 5000, 1, 0.0)] + [(W, 6000 + k, 1, 0.0) for k in range(0, 20, 2)] + \
           [(R, 100 + 10 * k, 1, 0.0) for k in range(5)]
    given, _ = _run(reqs, sched)
    assert "".join("r" if g[0] == R else "w" for g in given) == "w" + "rrwrrwrw" + "w" * 7
    assert [g[1] for g in given if g[0] == R] == [100, 110, 120, 130, 140]
    assert [g[1] for g in given if g[0] == W][:3] == [5000, 6000, 6002]


def test_an_expired_request_starts_the_next_batch():
    # a write below the sweep waits while the sweep goes up; once its deadline (write_expire 5 s after it
    # came) has passed, the next batch starts from it (deadline_check_fifo)
    sched = Scheduler(fifo_batch=1)
    reqs = [(W, 100, 1, 0.0), (W, 10, 1, 0.0)] + [(W, 200 + 10 * k, 1, 0.0) for k in range(10)]
    given, _ = _run(reqs, sched, service_s=1.0)
    assert [g[1] for g in given][:8] == [100, 200, 210, 220, 230, 10, 240, 250]


def test_without_a_higher_request_the_sweep_goes_back_to_the_oldest_so_a_descending_stream_stays_in_order():
    # deadline_fifo_request: with nothing above the last sector, the batch starts at the FIFO's head;
    # requests that came newest-lowest-first are so served in the order they came
    given, _ = _run([(W, x, 1, 0.0) for x in (700, 600, 500, 400, 300)])
    assert [g[1] for g in given] == [700, 600, 500, 400, 300]


class _Arrivals(_Recorder):
    """A drive that remembers each command's sector and the arrival it was told."""

    def serve(self, op, lbn, blocks, arrival):
        self.given.append((int(lbn[0]), float(arrival[0])))
        start = max(float(arrival[0]), self.free_s)
        self.free_s = start + self.service_s
        return np.array([start]), np.array([self.free_s])


def test_a_full_scheduler_makes_the_submitter_wait_but_a_bio_that_merges_needs_no_request():
    # nr_requests 8: asynchronous writes may hold 6 (async_depth, three quarters), queued or at the drive;
    # the seventh waits until the first completes, and is only then in the scheduler; a bio that merges
    # into a queued request takes no request of its own (blk_mq_sched_bio_merge comes first)
    drive = _Arrivals(1e-3)
    server = ScheduledServer(drive, Scheduler(nr_requests=8))
    lbns = [900, 100, 200, 300, 400, 500, 108, 700]
    n = len(lbns)
    server.serve(np.full(n, W, np.int8), np.array(lbns, np.int64), np.full(n, 8, np.int64), np.zeros(n),
                 need=np.zeros(n, bool))
    server.finish()
    seen = dict(drive.given)
    assert [x for x, _ in drive.given] == [900, 100, 200, 300, 400, 500, 700]  # 108 went with 100
    assert seen[700] == pytest.approx(1e-3) and seen[100] == 0.0


def test_a_flush_bypasses_the_queue():
    given, _ = _run([(W, 100, 1, 0.0), (W, 10, 1, 0.0), (F, 0, 0, 0.0)])
    assert [g[0] for g in given] == [W, F, W]


def test_none_is_no_scheduler_at_all():
    assert queue_scheduler("none") is None
    assert queue_scheduler("mq-deadline", 4, 512) == Scheduler("mq-deadline", 4, 512 * 1024)
    with pytest.raises(ValueError, match="scheduler must be one of mq-deadline, none"):
        queue_scheduler("cfq")


@pytest.mark.parametrize("field, value, message", [
    ("name", "bfq", "scheduler: name must be mq-deadline (got 'bfq'"),
    ("name", "none", "scheduler: name must be mq-deadline (got 'none'"),
    ("queue_depth", 0, "queue_depth"), ("nr_requests", 0, "nr_requests"), ("read_expire_s", -1.0, "read_expire_s")])
def test_bad_settings_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Scheduler(**{field: value})


def test_the_kernels_mq_deadline_against_none_on_an_emulated_drive():
    """fio's random reads at iodepth 256 on an emulated WD800BD whose queue holds 128 at the driver:
    the kernel's elapsed time under none and under mq-deadline (blktrace, the golden file), against the
    model of the same job (its requests issued 256 at a time) on the drive the emulator served
    (benchmarks/scheduler_check.py's prediction)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from scheduler_check import predict

    golden = json.loads(GOLDEN.read_text())
    measured = {c["scheduler"]: c["span_s"] for c in golden["cells"]}
    assert {c["scheduler"]: c["max_in_scheduler"] for c in golden["cells"]}["mq-deadline"] > 64  # it held a queue
    model = predict(golden)
    assert abs(model["none"] / measured["none"] - 1) <= 0.05, (model, measured)
    assert abs(model["mq-deadline"] / measured["mq-deadline"] - 1) <= 0.15, (model, measured)
    # the order the scheduler gives saves the drive a quarter or more of its time, in the kernel and the model
    assert measured["mq-deadline"] / measured["none"] < 0.8 and model["mq-deadline"] / model["none"] < 0.85


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([R, W, F]), st.integers(0, 400), st.integers(1, 8),
                          st.floats(0, 0.05)), min_size=1, max_size=60),
       st.integers(1, 4), st.integers(1, 12), st.integers(1, 4))
def test_every_request_is_served_once_within_the_merge_limit_and_never_before_it_came(reqs, depth, nr, batch):
    reqs = sorted(reqs, key=lambda r: r[3])
    reqs = [(o, x, 0 if o == F else b, a) for o, x, b, a in reqs]
    drive = _Recorder(2e-3)
    server = ScheduledServer(drive, Scheduler(queue_depth=depth, nr_requests=nr, fifo_batch=batch,
                                              max_request_bytes=8 * 512))
    op, lbn, blocks, arrival = (np.array(c) for c in zip(*reqs))
    n = len(reqs)
    half = n // 2
    need = np.zeros(n, bool)
    need[:half] = True
    start, done = server.serve(op.astype(np.int8), lbn.astype(np.int64), blocks.astype(np.int64),
                               arrival.astype(float), ids=np.arange(n), need=need)
    assert np.isfinite(done[:half]).all()
    served = server.finish()
    assert sorted(served) == list(range(n))
    # the blocks given are the blocks asked for (each at most the limit), each command within the limit
    assert sum(b for o, _, b in drive.given if o != F) == int(blocks[op != F].sum())
    assert all(b <= 8 for _, _, b in drive.given)
    for i in range(n):  # nothing completes before it arrived
        assert served[i][1] >= arrival[i] - 1e-12


def test_a_drive_read_from_its_file_keeps_its_queue_settings(tmp_path, capsys):
    """A stack file's disksim drive with scheduler none and depth 4: loading the drive's files keeps both,
    and the command line's prediction says so and differs from the default's."""
    from diskmodel.calibrate import cli
    from diskmodel.calibrate.stacks import resolve_drives
    from diskmodel.model.stacks.stack import Stack

    def stack_file(extra: dict) -> Path:
        path = tmp_path / f"s{len(extra)}.json"
        path.write_text(json.dumps({
            "format": "diskmodel.stack", "format_version": 1,
            "file_system": {"kind": "ext2", "volume": {"kind": "partition", "disk": "sda", "start_bytes": 1 << 20,
                                                       "size_bytes": 1 << 30}},
            "disks": [{"kind": "disksim", "path": "atlas10k", "name": "sda", **extra}]}))
        return path

    none = stack_file({"scheduler": "none", "queue_depth": 4})
    drive = resolve_drives(Stack.from_json(none.read_text()), tmp_path).disks[0]
    assert (drive.scheduler, drive.queue_depth) == ("none", 4)
    out = {}
    for path in (none, stack_file({})):
        assert cli.main(["predict", "--stack", str(path), "--workload", "postmark:files=300,transactions=600",
                         "--json"]) == 0, capsys.readouterr().err
        out[path.name] = json.loads(capsys.readouterr().out)
    text = json.dumps(out[none.name])
    assert "none (arrival order; queue_depth 4)" in text
    assert out[none.name]["elapsed_s"] != out["s0.json"]["elapsed_s"]
