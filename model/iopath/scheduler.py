"""The block layer's I/O scheduler over one drive: which queued request the drive is given next.

A request the kernel sends to a disk waits in the disk's scheduler until the driver has a free tag
(``queue_depth``: the commands a drive holds at once; 1 for a drive without command queueing, whose
order the scheduler alone then decides). Linux gives a disk with one hardware queue (a SATA or SAS disk)
``mq-deadline`` (block/elevator.c, elevator_get_default); a loop device, NVMe and a multi-queue virtio
disk get ``none``.

- **none**: the drive is given the requests in arrival order (first in first out): the timing's own
  order, without a :class:`ScheduledServer`.
- **mq-deadline** (block/mq-deadline.c, Linux 6.1, one priority level):

  - *Merging.* A request that begins where a queued request of the same direction ends joins it (a back
    merge), and one that ends where a queued request begins joins it in front (front merges are on by
    default), while the merged request stays within the drive's ``max_sectors_kb``; a merge that closes
    the gap to the next queued request takes that one in too (attempt_back_merge, attempt_front_merge).
    Every request a merge joins completes when the merged request does.
  - *Order.* Reads and writes are kept apart, each sorted by sector and in arrival order.
    Requests go in batches of ``fifo_batch`` in one direction, each the next by sector after the
    last (deadline_move_request: the elevator's one-way sweep). A new batch serves reads unless writes
    have waited through ``writes_starved`` read batches, and begins at the next request by sector after
    the last, or at the oldest request of its direction when that one's deadline (``read_expire_s``,
    ``write_expire_s`` after it arrived) has passed or the sweep has reached the end (__dd_dispatch_request):
    so a stream that comes highest sector first is served in the order it came.
  - A flush bypasses the scheduler (blk_insert_flush): the drive is given it next.
  - *Room.* The scheduler holds ``nr_requests``, queued or at the drive; a submitter whose request finds
    them taken waits (asynchronous writes may take three quarters), but a bio that merges needs none.

The drive serves what it is given in that order, one at a time (the per-request simulation); a
drive's own reordering of a deep queue (NCQ) is not modelled, so a drive with command queueing is best
described as ``queue_depth`` 1, its order the scheduler's.

Pure model code: no I/O, no clocks.
"""
from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from .._checks import finite_scalar, whole_number
from ..drive.drives import DEFAULT_MAX_SECTORS_KB, DEFAULT_SCHEDULER, SCHEDULERS
from .stream import Op

__all__ = ["Scheduler", "SCHEDULERS", "ScheduledServer", "queue_scheduler", "queue_assumptions", "describe_queue"]

_READ, _WRITE, _FLUSH = int(Op.READ), int(Op.WRITE), int(Op.FLUSH)


@dataclass(frozen=True)
class Scheduler:
    """A disk's scheduler and driver queue (sysfs ``queue/scheduler``, ``queue/iosched/*``; the driver's
    tags ``mq/0/nr_tags``), with mq-deadline's tunables at their defaults (block/mq-deadline.c). Only
    mq-deadline has one: a queue under none is the timing's own arrival order (:func:`queue_scheduler`)."""

    name: str = DEFAULT_SCHEDULER
    #: commands the driver gives the drive at once [count]: 1, no command queueing
    queue_depth: int = 1
    #: the largest request a merge may make [bytes]: the drive's max_sectors_kb
    max_request_bytes: int = DEFAULT_MAX_SECTORS_KB * 1024
    #: requests the scheduler holds, queued or at the drive (queue/nr_requests: twice the host's tags, at
    #: most 256; 64 on an AHCI port's 32): a submitter whose request finds them taken waits for one, and
    #: asynchronous writes may take only three quarters of them (mq-deadline's async_depth)
    nr_requests: int = 64
    read_expire_s: float = 0.5
    write_expire_s: float = 5.0
    writes_starved: int = 2
    fifo_batch: int = 16

    def __post_init__(self):
        if self.name != "mq-deadline":
            raise ValueError(f"scheduler: name must be mq-deadline (got {self.name!r}; a queue under none has no "
                             "Scheduler: queue_scheduler gives None)")
        object.__setattr__(self, "queue_depth", whole_number("scheduler: queue_depth", self.queue_depth, minimum=1))
        object.__setattr__(self, "max_request_bytes",
                           whole_number("scheduler: max_request_bytes", self.max_request_bytes, minimum=512))
        for f in ("read_expire_s", "write_expire_s"):
            finite_scalar(f"scheduler: {f}", getattr(self, f), nonnegative=True)
        object.__setattr__(self, "writes_starved",
                           whole_number("scheduler: writes_starved", self.writes_starved, minimum=0))
        object.__setattr__(self, "fifo_batch", whole_number("scheduler: fifo_batch", self.fifo_batch, minimum=1))
        object.__setattr__(self, "nr_requests", whole_number("scheduler: nr_requests", self.nr_requests, minimum=1))

    @property
    def async_depth(self) -> int:
        """The requests an asynchronous write may find taken and still get one (dd_depth_updated)."""
        return max(1, 3 * self.nr_requests // 4)

    def describe(self) -> str:
        return (f"mq-deadline (merged within {self.max_request_bytes // 1024} KiB and given by sector, reads first, "
                f"deadlines {self.read_expire_s:g} s and {self.write_expire_s:g} s, nr_requests {self.nr_requests}; "
                f"queue_depth {self.queue_depth})")


def queue_scheduler(name: str = DEFAULT_SCHEDULER, queue_depth: int = 1,
                    max_sectors_kb: int = DEFAULT_MAX_SECTORS_KB):
    """The :class:`Scheduler` of a drive's queue settings (a drive node's ``scheduler``, ``queue_depth`` and
    ``max_sectors_kb``), or None for ``none`` (arrival order, the timing's own)."""
    if name not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)} (got {name!r})")
    return None if name == "none" else Scheduler(name, queue_depth, int(max_sectors_kb) * 1024)


def describe_queue(scheduler, queue_depth: int | None = None) -> str:
    """A queue's line in a prediction's assumptions: its :class:`Scheduler`, or None for none."""
    if scheduler is not None:
        return scheduler.describe()
    return "none (arrival order)" if queue_depth is None else f"none (arrival order; queue_depth {queue_depth})"


def queue_assumptions(drives, names) -> tuple:
    """("queue NAME", its scheduler) for each drive node of *drives* named in *names* (a prediction's
    assumptions)."""
    by_name = {d.name: d for d in drives}
    return tuple((f"queue {n}", describe_queue(queue_scheduler(d.scheduler, d.queue_depth, d.max_sectors_kb),
                                               d.queue_depth))
                 for n in names if (d := by_name.get(n)) is not None)


@dataclass
class _Queued:
    """One request in the scheduler: possibly several merged, ``members`` their ids."""

    op: int
    lbn: int
    blocks: int
    arrival_s: float  # its first member's
    deadline_s: float
    seq: int  # arrival order, for the FIFO
    members: list


class ScheduledServer:
    """A drive server (``inner``: a FIFO server with ``serve(op, lbn, blocks, arrival)``) behind a
    :class:`Scheduler`. :meth:`serve` takes requests by id and returns the times of those it had to
    complete (``need``); the others may still be queued, and :meth:`complete` or :meth:`finish` gives
    them later. Time only moves forward: requests are admitted at their arrival, and the drive is given
    the next one when a tag frees."""

    def __init__(self, inner, scheduler: Scheduler):
        self.inner, self.sched = inner, scheduler
        self.total_blocks = inner.total_blocks
        self._max_blocks = scheduler.max_request_bytes // 512
        # requests not yet in the scheduler, reads (and flushes) apart from writes: heaps of (arrival, seq,
        # id, op, lbn, blocks); each waits, in order, for a request of the scheduler's to be free
        self._incoming = {_READ: [], _WRITE: []}
        self._seq = 0
        self._queued: dict = {}  # qid -> _Queued
        self._sorted = {_READ: [], _WRITE: []}  # (lbn, qid), by sector
        self._fifo = {_READ: deque(), _WRITE: deque()}  # qids in arrival order (lazily pruned)
        self._by_end: dict = {}  # (op, end lbn) -> qid
        self._by_start: dict = {}  # (op, lbn) -> qid
        self._flushes: deque = deque()  # (id) flushes waiting for a tag
        self._inflight: deque = deque()  # completion times of what the drive holds, in order
        self._now = 0.0
        self._given_s = 0.0  # the last arrival the drive was given (its arrivals never go backwards)
        self._next = None  # (op, lbn) the batch goes on from
        self._batching = 0
        self._starved = 0
        self.done: dict = {}  # id -> (start, completion)
        self._waiting: set = set()  # the ids the current run waits for, not yet done

    # -- admission and merging ------------------------------------------------------------------
    def _admit_arrived(self):
        """Admit what has arrived by now, each class in order while the scheduler has room for it (a bio
        that merges into a queued request needs none: blk_mq_sched_bio_merge comes first)."""
        while True:
            ready = [(heap[0][:2], cls) for cls, heap in self._incoming.items()
                     if heap and heap[0][0] <= self._now and self._room(cls, heap[0])]
            if not ready:
                return
            _, seq, rid, op, lbn, blocks = heapq.heappop(self._incoming[min(ready)[1]])  # the earliest first
            self._admit(self._now, seq, rid, op, lbn, blocks)
            # inserting runs the queue (blk_mq_sched_insert_request): a free tag takes a request at once,
            # so a burst reaches an idle drive in arrival order until its tags are taken
            if len(self._inflight) < self.sched.queue_depth:
                self._dispatch()

    def _room(self, cls, head) -> bool:
        """May the request ``head`` of class ``cls`` enter the scheduler now?"""
        _, _, _, op, lbn, blocks = head
        limit = self.sched.nr_requests if cls == _READ else self.sched.async_depth
        return op == _FLUSH or len(self._queued) + len(self._inflight) < limit or self._merges(op, lbn, blocks)

    def _merges(self, op, lbn, blocks) -> bool:
        for qid in (self._by_end.get((op, lbn)), self._by_start.get((op, lbn + blocks))):
            if qid is not None and self._queued[qid].blocks + blocks <= self._max_blocks:
                return True
        return False

    def _admit(self, arrival, seq, rid, op, lbn, blocks):
        if op == _FLUSH:
            self._flushes.append((rid, arrival))
            return
        end = lbn + blocks
        qid = self._by_end.get((op, lbn))
        if qid is not None and self._queued[qid].blocks + blocks <= self._max_blocks:
            q = self._queued[qid]
            del self._by_end[(op, lbn)]
            q.blocks += blocks
            q.members.append(rid)
            self._by_end[(op, end)] = qid
            self._absorb(qid, self._by_start.get((op, end)))
            return
        qid = self._by_start.get((op, end))
        if qid is not None and self._queued[qid].blocks + blocks <= self._max_blocks:
            q = self._queued[qid]
            self._unsort(qid)
            del self._by_start[(op, end)]
            q.lbn, q.blocks = lbn, q.blocks + blocks
            q.members.append(rid)
            self._by_start[(op, lbn)] = qid
            bisect.insort(self._sorted[op], (lbn, qid))
            prev = self._by_end.get((op, lbn))
            if prev is not None:
                self._absorb(prev, qid)
            return
        deadline = arrival + (self.sched.read_expire_s if op == _READ else self.sched.write_expire_s)
        q = _Queued(op, lbn, blocks, arrival, deadline, seq, [rid])
        self._queued[seq] = q
        bisect.insort(self._sorted[op], (lbn, seq))
        self._fifo[op].append(seq)
        self._by_end[(op, end)] = seq
        self._by_start[(op, lbn)] = seq

    def _absorb(self, qid, nid):
        """Merge queued request ``nid`` (which begins where ``qid`` ends) into ``qid``, if it fits; the
        merged request keeps the earlier deadline (dd_merged_requests)."""
        if nid is None or nid == qid:
            return
        q, n = self._queued[qid], self._queued[nid]
        if q.blocks + n.blocks > self._max_blocks:
            return
        self._remove(nid)
        del self._by_end[(q.op, q.lbn + q.blocks)]
        q.blocks += n.blocks
        q.members.extend(n.members)
        q.arrival_s = min(q.arrival_s, n.arrival_s)
        self._by_end[(q.op, q.lbn + q.blocks)] = qid
        if n.deadline_s < q.deadline_s:
            q.deadline_s, q.seq = n.deadline_s, n.seq
            fifo = self._fifo[q.op]
            fifo.remove(qid)
            k = next((i for i, x in enumerate(fifo) if x in self._queued and self._queued[x].seq > q.seq), len(fifo))
            fifo.insert(k, qid)

    def _unsort(self, qid):
        q = self._queued[qid]
        lst = self._sorted[q.op]
        del lst[bisect.bisect_left(lst, (q.lbn, qid))]

    def _remove(self, qid):
        """Take ``qid`` out of the sort and the merge maps (its FIFO entry is pruned lazily)."""
        q = self._queued[qid]
        self._unsort(qid)
        self._by_start.pop((q.op, q.lbn), None)
        self._by_end.pop((q.op, q.lbn + q.blocks), None)
        del self._queued[qid]
        return q

    # -- dispatch ---------------------------------------------------------------------------------
    def _oldest(self, op):
        fifo = self._fifo[op]
        while fifo and fifo[0] not in self._queued:
            fifo.popleft()
        return fifo[0] if fifo else None

    def _after(self, op, lbn):
        lst = self._sorted[op]
        k = bisect.bisect_left(lst, (lbn, -1))
        return lst[k][1] if k < len(lst) else None

    def _pick(self):
        """The next request by mq-deadline's rules (module docstring), taken out of the queue."""
        s = self.sched
        if self._next is not None and self._batching < s.fifo_batch:
            qid = self._after(*self._next)
            if qid is not None:
                return self._take(qid, self._queued[qid].op, new_batch=False)
        reads, writes = self._oldest(_READ), self._oldest(_WRITE)
        if reads is not None and not (writes is not None and self._starved >= s.writes_starved):
            if writes is not None:
                self._starved += 1
            op, oldest = _READ, reads
        else:
            self._starved = 0
            op, oldest = _WRITE, writes
        nxt = self._after(op, self._next[1]) if self._next is not None and self._next[0] == op else None
        if nxt is None or self._queued[oldest].deadline_s <= self._now:
            nxt = oldest
        return self._take(nxt, op, new_batch=True)

    def _take(self, qid, op, new_batch):
        q = self._remove(qid)
        self._batching = 1 if new_batch else self._batching + 1
        self._next = (op, q.lbn + q.blocks)
        return q

    def _dispatch(self):
        """Give the drive the next request (a tag is free). The drive is told when the request arrived:
        one that waited while the drive was busy starts the host's turnaround after the completion before."""
        if self._flushes:
            rid, arrival = self._flushes.popleft()
            self._given_s = max(self._given_s, arrival)
            start, done = self.inner.serve(np.array([_FLUSH], np.int8), np.zeros(1, np.int64),
                                           np.zeros(1, np.int64), np.array([self._given_s]))
            self.done[rid] = (float(start[0]), float(done[0]))
            self._waiting.discard(rid)
            self._inflight.append(float(done[0]))
            return
        q = self._pick()
        self._given_s = max(self._given_s, q.arrival_s)
        start, done = self.inner.serve(np.array([q.op], np.int8), np.array([q.lbn], np.int64),
                                       np.array([q.blocks], np.int64), np.array([self._given_s]))
        for rid in q.members:
            self.done[rid] = (float(start[0]), float(done[0]))
            self._waiting.discard(rid)
        self._inflight.append(float(done[0]))

    def _has_work(self):
        return bool(self._queued or self._flushes)

    def _run(self, until_ids):
        """Advance the clock, admitting arrivals and giving the drive requests, until every id of
        ``until_ids`` is done (all: until nothing is left)."""
        waiting = None if until_ids is None else {i for i in until_ids if i not in self.done}
        self._waiting = waiting if waiting is not None else set()
        while True:
            while self._inflight and self._inflight[0] <= self._now:
                self._inflight.popleft()
            self._admit_arrived()
            if waiting is not None and not waiting:
                return
            if self._has_work() and len(self._inflight) < self.sched.queue_depth:
                self._dispatch()
                continue
            # the next completion (one at this very instant, a flush's, is taken on the next turn), or the
            # next arrival (one already here waits for a completion: the scheduler is full)
            times = ([self._inflight[0]] if self._inflight else []) + \
                [h[0][0] for h in self._incoming.values() if h and h[0][0] > self._now]
            if not times:
                if waiting:
                    raise RuntimeError("scheduler: requests waited for were never given")  # a bug, not input
                return
            self._now = max(self._now, min(times))

    # -- the server interface ---------------------------------------------------------------------
    def serve(self, op, lbn, blocks, arrival, ids=None, need=None):
        """Admit requests (``ids``: their ids, default fresh ones) arriving at ``arrival`` and run until
        those ``need`` marks (default all) are done; returns (start, completion), NaN where not yet done."""
        n = op.size
        if ids is None:
            ids = np.arange(self._seq, self._seq + n) + (1 << 40)
        for k in range(n):
            # the clock may have run past a request's arrival to complete one waited for at an instant that
            # also issues later-arriving requests (a parity update's reads before its writes): it comes now
            a = max(float(arrival[k]), self._now)
            heapq.heappush(self._incoming[_WRITE if op[k] == _WRITE else _READ],
                           (a, self._seq, int(ids[k]), int(op[k]), int(lbn[k]), int(blocks[k])))
            self._seq += 1
        needed = ids if need is None else ids[np.asarray(need, bool)]
        self._run([int(i) for i in needed])
        start, done = np.full(n, np.nan), np.full(n, np.nan)
        for k, rid in enumerate(ids.tolist()):
            if rid in self.done:
                start[k], done[k] = self.done[rid]
        return start, done

    def complete(self, ids):
        """Run until ``ids`` (admitted earlier) are done; returns their (start, completion)."""
        self._run([int(i) for i in ids])
        return (np.array([self.done[int(i)][0] for i in ids]), np.array([self.done[int(i)][1] for i in ids]))

    def finish(self):
        """Serve everything left; returns ``{id: (start, completion)}`` of every request served."""
        self._run(None)
        return self.done
