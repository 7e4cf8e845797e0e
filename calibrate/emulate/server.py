"""One emulated drive's server: its data, its timing and its request log (runs inside nbdkit).

:class:`DriveServer` is what the nbdkit plugin
(:mod:`diskmodel.calibrate.emulate._nbd_plugin`) calls for every request. It
keeps no thread of its own and knows nothing of nbdkit, so it is tested
directly too.

Data: in memory for a drive of at most :data:`MEMORY_MAX_BYTES`, else in a
sparse backing file the caller made with the drive's capacity (its blocks
are allocated as they are written; a write of zeros punches a hole).

Timing: a request reaches :meth:`DriveServer.read` (or write, flush, zero) at
``t_entry`` on the monotonic clock. It arrived at the drive the path's cost
earlier, the time the path (loop device, FUSE, nbdfuse, NBD) takes to bring
a request in and carry its completion back. It grows with the bytes copied, not
in proportion, so it is measured at start for each of several sizes, with reads
served a fixed delay after they reach the server (:attr:`probing`; a delay, not
at once, so that the path's threads have gone idle as they do between a drive's
requests, and their wake-ups are part of the cost), and read between them on
the line through the two nearest sizes (:func:`path_cost_s`; beyond the
largest, on the last line). That round trip has two legs (:func:`path_legs_s`): the way in, before
``t_entry``, and the way back, after the call returns; the probe measures the way in by size too
(:mod:`~diskmodel.calibrate.emulate.path_probe`), and both grow with the bytes. The simulation serves the request at
``arrival_s = t_entry - way_in`` on its own clock (zero when the server started), its data are moved, and
the call returns the way back before the simulated completion: an absolute deadline on the monotonic
clock, slept to within :data:`SPIN_S` and then spun. The caller then sees the completion at the simulated
one, and the drive sees its requests as the caller issues them: at queue depth 1, the next one the
caller's own time after the last completed. (Taking the whole round trip off the arrival put a read
before the completion of the one the caller had waited for, by the way back of its data, and the drive
held it in its queue for that long.) Each leg also grows with how long a thread of the path slept before it:
the way in with the time the server sat idle before the entry, the way back with the time it held the
request. The probe measures both at start (:mod:`~diskmodel.calibrate.emulate.path_shape`: the control's
``path_in_by_idle`` and ``path_back_by_hold``), the way in is read at the request's idle time, and the hold is
the one whose way back ends at the simulated completion (:func:`~diskmodel.calibrate.emulate.path_shape.hold_for`).
The request's lateness is the time the call returns minus that
deadline (late only when the work or the host made it miss the deadline: the wait never ends early).
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import threading
import time

from diskmodel.calibrate.harness.heap import CollectorWatch, settle_heap
from diskmodel.calibrate.emulate.path_shape import hold_for, table_at, table_from
from diskmodel.calibrate.emulate.requestlog import RequestRecorder
from diskmodel.calibrate.emulate.timing import BLOCK_BYTES, HIT_UNKNOWN, session_from_spec

__all__ = ["DriveServer", "INBOUND_SHARE", "MEMORY_MAX_BYTES", "SPIN_S", "path_cost_s", "path_cost_table", "path_in_table",
           "path_legs_s", "realtime", "wait_until"]

#: A drive of at most this capacity keeps its data in memory, a larger one in a sparse file [bytes].
MEMORY_MAX_BYTES = 64 << 20
#: The last stretch before a deadline is spun rather than slept: a sleep may wake late [s].
SPIN_S = 300e-6
OP_READ, OP_WRITE, OP_FLUSH, OP_ZERO = 0, 1, 2, 3
#: Where the path's way in was not measured (a control file without ``path_in_by_size``): the share of a
#: request's round trip without its data (the cost read back to no bytes) taken as its way in. At queue depth
#: 1 the drive's gap between two requests is then the caller's own time whatever this share, as long as both
#: requests' round trips are split alike (the way back of one and the way in of the next are taken off together).
INBOUND_SHARE = 0.5
_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_ZERO_CHUNK_BYTES = 1 << 20


def wait_until(deadline_s: float, monotonic=time.monotonic) -> float:
    """Return at *deadline_s* on the monotonic clock, never before it; returns the time it returned."""
    remaining = deadline_s - monotonic()
    if remaining > SPIN_S:
        time.sleep(remaining - SPIN_S)
    now = monotonic()
    while now < deadline_s:
        time.sleep(0)  # lets another thread of the process take the interpreter's lock while this one spins
        now = monotonic()
    return now


def path_cost_table(control: dict) -> tuple[tuple[int, float], ...]:
    """The path's cost by transfer size, ``((bytes, s), ...)`` by size, from a control file's contents:
    its ``path_cost_by_size`` pairs (at least two sizes), else the line ``fixed_cost_s`` + ``path_per_byte_s``
    per byte (given as two points of that line)."""
    pairs = control.get("path_cost_by_size")
    if pairs:
        table = tuple(sorted((int(n), float(c)) for n, c in pairs))
        if len(table) < 2 or len({n for n, _ in table}) != len(table) or any(c < 0 for _, c in table):
            raise ValueError(f"path_cost_by_size must give two or more distinct sizes, costs >= 0 (got {pairs!r})")
        return table
    fixed, per_byte = float(control["fixed_cost_s"]), float(control.get("path_per_byte_s", 0.0))
    return (0, fixed), (1 << 20, fixed + per_byte * (1 << 20))


def path_cost_s(table, size_bytes: int) -> float:
    """The path's cost of a request of *size_bytes* [s]: on the line through the two sizes of *table*
    (:func:`path_cost_table`) nearest it (the first two below the smallest, the last two above the largest),
    never below zero."""
    i = 1
    while i < len(table) - 1 and table[i][0] < size_bytes:
        i += 1
    (n0, c0), (n1, c1) = table[i - 1], table[i]
    return max(c0 + (c1 - c0) * (size_bytes - n0) / (n1 - n0), 0.0)


def path_in_table(control: dict):
    """The path's way in by transfer size, ``((bytes, s), ...)``, from a control file's ``path_in_by_size``
    pairs (:func:`~diskmodel.calibrate.emulate.path_probe.way_in_by_size`; one size is a constant), or None
    where it has none."""
    pairs = control.get("path_in_by_size")
    if not pairs:
        return None
    table = tuple(sorted((int(n), float(c)) for n, c in pairs))
    if len({n for n, _ in table}) != len(table) or any(c < 0 for _, c in table):
        raise ValueError(f"path_in_by_size must give distinct sizes, times >= 0 (got {pairs!r})")
    return table if len(table) > 1 else ((0, table[0][1]), (1 << 20, table[0][1]))


def path_legs_s(table, op: int, size_bytes: int, in_table=None) -> tuple[float, float]:
    """The path's cost of a request (:func:`path_cost_s`) as its two legs, ``(way_in, way_back)`` [s], adding
    up to the round trip. With *in_table* (:func:`path_in_table`, measured on reads), a read's way in is
    read from it; a write's legs are a read's with the bytes' parts swapped (a write carries its data in,
    a read back); a flush and a write of zeros carry no data and take the legs of no bytes. Without it,
    the cost of no bytes is split by :data:`INBOUND_SHARE` and the bytes' part goes on the leg that carries
    them."""
    bare = path_cost_s(table, 0)
    total = bare if op not in (OP_READ, OP_WRITE) else path_cost_s(table, size_bytes)
    if in_table is None:
        bare_in = INBOUND_SHARE * min(bare, total)
        way_in = bare_in + (total - min(bare, total) if op == OP_WRITE else 0.0)
    else:
        bare_in = min(path_cost_s(in_table, 0), bare)
        read_in = min(path_cost_s(in_table, size_bytes), total)
        if op == OP_READ:
            way_in = read_in
        elif op == OP_WRITE:  # in: the bare way in and the read's data way back; back: the read's data way in
            way_in = total - (bare - bare_in) - (read_in - bare_in)
        else:
            way_in = bare_in
    way_in = min(max(way_in, 0.0), total)
    return way_in, total - way_in


@contextlib.contextmanager
def realtime(priority: int | None):
    """Run the calling thread under SCHED_FIFO at *priority* (1-99) inside, as before outside; None: as is.

    A deadline's wake-up then does not wait behind other processes' time slices (sched(7))."""
    if priority is None:
        yield
        return
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))
    try:
        yield
    finally:
        os.sched_setscheduler(0, policy, param)


class _MemoryStore:
    def __init__(self, capacity_bytes: int):
        self.data = bytearray(capacity_bytes)
        self.view = memoryview(self.data)

    def read(self, buf, offset: int) -> None:
        buf[:] = self.view[offset:offset + len(buf)]

    def write(self, buf, offset: int) -> None:
        self.view[offset:offset + len(buf)] = buf

    def zero(self, count: int, offset: int) -> None:
        end = offset + count
        while offset < end:
            n = min(_ZERO_CHUNK_BYTES, end - offset)
            self.view[offset:offset + n] = bytes(n)
            offset += n

    def close(self) -> None:
        self.view.release()


class _FileStore:
    def __init__(self, path: str, capacity_bytes: int):
        self.fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        size = os.fstat(self.fd).st_size
        if size != capacity_bytes:
            os.close(self.fd)
            raise ValueError(f"backing file {path} holds {size} bytes, not the drive's {capacity_bytes}")
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long)

    def read(self, buf, offset: int) -> None:
        view = memoryview(buf)
        done = 0
        while done < len(view):
            n = os.preadv(self.fd, [view[done:]], offset + done)
            if n <= 0:
                raise OSError(errno.EIO, f"short read of the backing file at {offset + done}")
            done += n

    def write(self, buf, offset: int) -> None:
        view = memoryview(buf)
        done = 0
        while done < len(view):
            done += os.pwrite(self.fd, view[done:], offset + done)

    def zero(self, count: int, offset: int) -> None:
        # A hole reads back as zeros and keeps the file sparse.
        if self._libc.fallocate(self.fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, offset, count) == 0:
            return
        end = offset + count
        while offset < end:
            n = min(_ZERO_CHUNK_BYTES, end - offset)
            self.write(bytes(n), offset)
            offset += n

    def close(self) -> None:
        os.close(self.fd)


class DriveServer:
    """Serves one drive's requests: data from its store, completion when its simulation says.

    *spec*: ``name``, ``capacity_bytes``, ``timing`` (a
    :class:`~diskmodel.calibrate.emulate.drives.DriveSpec`'s), ``backing``
    (the sparse file's path, or None for memory), ``log_path`` (the request
    log, appended to as requests are served), ``control_path`` (where the caller
    writes ``{"fixed_cost_s": ..., "path_cost_by_size": [[bytes, s], ...], "path_in_by_size": [[bytes, s], ...]}``
    (or ``path_per_byte_s`` in place of the cost table: :func:`path_cost_table`; the way in optional:
    :func:`path_in_table`) once it has measured the path; until
    then every request is served ``probe_delay_s`` after it reached the
    server, not simulated, and marked as a probe).
    """

    def __init__(self, spec: dict, *, monotonic=time.monotonic):
        self.name = spec["name"]
        self.capacity_bytes = int(spec["capacity_bytes"])
        self.rotational = bool(spec.get("rotational", False))
        self.log_path = spec.get("log_path")
        self.control_path = spec.get("control_path")
        self.monotonic = monotonic
        backing = spec.get("backing")
        self.store = _FileStore(backing, self.capacity_bytes) if backing else _MemoryStore(self.capacity_bytes)
        self.session, self.timing_name = session_from_spec(spec["timing"])
        if spec["timing"].get("kind") != "flat":
            # A throwaway session serves one request first, so that the simulation is compiled (numba) before
            # the device is offered, not inside its first request.
            session_from_spec(spec["timing"])[0].serve(False, 0, 1, 0.0)
        self.fixed_cost_s = 0.0
        self.path_cost = path_cost_table({"fixed_cost_s": 0.0})
        self.path_in = None
        self.in_by_idle = self.back_by_hold = None
        self._last_arrival_s = 0.0
        self._last_done = -float("inf")
        #: requests scheduled whose deadline has not yet come (their threads wait outside the lock)
        self._in_service = 0
        self.probing = self.control_path is not None
        self.probe_delay_s = float(spec.get("probe_delay_s", 0.0))
        self._probe_delays = None
        self._probes = 0
        self._control_seen = None
        self.t0 = monotonic()
        self._lock = threading.Lock()
        #: held while log rows are written (always taken before ``_lock``): chunks go out in order
        self._write_lock = threading.Lock()
        self._meta_pending = None
        self._closed = threading.Event()
        self.recorder = RequestRecorder({"drive": self.name, "capacity_bytes": self.capacity_bytes,
                                         "timing": self.timing_name, "store": "file" if backing else "memory",
                                         "fixed_cost_s": None, "started_unix_s": time.time(),
                                         "t0_monotonic_s": self.t0},
                                        self.log_path, monotonic=monotonic)
        # the set-up's objects out of every later collection's way (heap.py), then the collections that
        # still run while serving counted, for the log
        settle_heap()
        self.collector = CollectorWatch()

    # -- the fixed cost
    def _check_control(self) -> None:
        # read again only when replaced (a new inode): a probe read's hold must not include parsing the file
        try:
            st = os.stat(self.control_path)
        except FileNotFoundError:
            return
        if (st.st_ino, st.st_mtime_ns, st.st_size) == self._control_seen:
            return
        try:
            with open(self.control_path) as f:
                control = json.load(f)
        except FileNotFoundError:
            return
        self._control_seen = (st.st_ino, st.st_mtime_ns, st.st_size)
        if "fixed_cost_s" not in control:   # the shape probe: still probing, each read held the next delay
            delays = [float(d) for d in control.get("probe_delays_s") or ()]
            if not delays or any(not 0 <= d < 1.0 for d in delays):
                raise ValueError(f"probe_delays_s must give delays from 0 to 1 s (got {control!r})")
            self._probe_delays = delays
            return
        self.fixed_cost_s = float(control["fixed_cost_s"])
        self.in_by_idle = table_from(control.get("path_in_by_idle"))
        self.back_by_hold = table_from(control.get("path_back_by_hold"))
        self.path_cost = path_cost_table(control)
        self.path_in = path_in_table(control)
        # written by the log's writer, after the probes' rows (never by the thread serving a request)
        self._meta_pending = {"fixed_cost_s": self.fixed_cost_s,
                              "path_per_byte_s": float(control.get("path_per_byte_s", 0.0)),
                              "path_cost_by_size": [list(pair) for pair in self.path_cost],
                              "path_in_by_size": None if self.path_in is None else [list(p) for p in self.path_in],
                              "path_legs": "measured" if self.path_in else f"split, {INBOUND_SHARE:g} of the bare cost in",
                              "path_in_by_idle": control.get("path_in_by_idle"),
                              "path_back_by_hold": control.get("path_back_by_hold")}
        self.probing = False

    # -- serving
    def _serve(self, op: int, offset: int, size: int, move) -> None:
        """Serve one request: its arrival, simulated service and data move under the lock, in the order the
        requests took it; its wait for the deadline outside it, so that a request the kernel sends while an
        earlier one is served reaches the simulation then, queued behind it as at a real drive, and not when
        the earlier one has completed (nbdkit's parallel thread model hands it over at once)."""
        t_entry = self.monotonic()
        with self._lock:
            if self.probing:
                self._check_control()
            if self.probing:  # the path's probes, one at a time (the prober waits for each): held throughout
                self._serve_probe(t_entry, op, offset, size, move)
                return
            row, deadline = self._schedule(t_entry, op, offset, size)
            error = self._move(move)
            self._in_service += 1
        try:
            done = wait_until(deadline, self.monotonic)
        finally:  # a request whose wait was cut short is no longer in service either
            with self._lock:
                self._in_service -= 1
        with self._lock:
            self._last_done = max(self._last_done, done)
            self.recorder.add(*row, done - deadline, False, error, t_entry - self.t0, done - self.t0)
        if error:
            raise OSError(error, os.strerror(error))

    def _schedule(self, t_entry: float, op: int, offset: int, size: int):
        """The request's arrival at the drive and its simulated service (the lock held): its log row's first
        fields and its deadline on the monotonic clock."""
        # the path's cost grows with the bytes it copies, on the leg that carries them, and with how long the
        # path sat idle before (the way in: none while an earlier request is still served) and the server held
        # the request (the way back: path_shape); arrivals stay in order (a large write's earlier estimate must
        # not put it before the one just before)
        way_in, way_back = path_legs_s(self.path_cost, op, size, self.path_in)
        idle = 0.0 if self._in_service else t_entry - self._last_done
        way_in = max(way_in + table_at(self.in_by_idle, idle), 0.0)
        arrival = max(t_entry - way_in - self.t0, self._last_arrival_s)
        self._last_arrival_s = arrival
        if op == OP_FLUSH or size == 0:
            return (arrival, op, offset, size, 0.0, 0.0, HIT_UNKNOWN), t_entry
        first = offset // BLOCK_BYTES
        blocks = (offset + size + BLOCK_BYTES - 1) // BLOCK_BYTES - first
        served = self.session.serve(op != OP_READ, first, blocks, arrival)
        deadline = t_entry + hold_for(self.t0 + served.completion_s - t_entry, way_back, self.back_by_hold)
        return (arrival, op, offset, size, served.start_s - served.arrival_s, served.service_s,
                int(served.hit)), deadline

    def _serve_probe(self, t_entry: float, op: int, offset: int, size: int, move) -> None:
        """A probe read: served its delay after its entry (the spec's, or the shape probe's next), not simulated."""
        delay = self.probe_delay_s
        if self._probe_delays:
            delay = self._probe_delays[self._probes % len(self._probe_delays)]
            self._probes += 1
        error = self._move(move)
        deadline = t_entry + delay
        done = wait_until(deadline, self.monotonic)
        self._last_done = done
        self.recorder.add(t_entry - self.t0, op, offset, size, 0.0, delay, HIT_UNKNOWN, done - deadline, True,
                          error, t_entry - self.t0, done - self.t0)
        if error:
            raise OSError(error, os.strerror(error))

    @staticmethod
    def _move(move) -> int:
        try:
            move()
        except OSError as exc:
            return exc.errno or errno.EIO
        return 0

    def read(self, buf, offset: int) -> None:
        self._serve(OP_READ, offset, len(buf), lambda: self.store.read(buf, offset))

    def write(self, buf, offset: int) -> None:
        self._serve(OP_WRITE, offset, len(buf), lambda: self.store.write(buf, offset))

    def zero(self, count: int, offset: int) -> None:
        self._serve(OP_ZERO, offset, count, lambda: self.store.zero(count, offset))

    def flush(self) -> None:
        self._serve(OP_FLUSH, 0, 0, lambda: None)

    # -- the log
    def start_idle_flush(self) -> None:
        """Write the waiting rows every recorder's ``flush_s`` from a thread of its own, so that a kill loses
        at most that much of the log. A request never waits for the file: the rows are taken under the
        serving lock (a copy), and written outside it; a write to a busy file system may block for longer than
        a request's service."""
        thread = threading.Thread(target=self._idle_flush, name="request-log", daemon=True)
        thread.start()

    def _idle_flush(self) -> None:
        period = self.recorder.flush_s
        while not self._closed.wait(period):
            with self._write_lock:
                if self._closed.is_set():
                    return
                with self._lock:
                    rows, meta = self.recorder.take(), self._meta_pending
                    self._meta_pending = None
                self.recorder.write_rows(rows)
                if meta:
                    self.recorder.write_meta(meta)

    def save_log(self) -> None:
        """Write the rows still waiting (the log file itself is appended to as requests are served)."""
        with self._write_lock, self._lock:
            self._write_waiting()

    def _write_waiting(self) -> None:
        self.recorder.flush()
        if self._meta_pending:
            self.recorder.write_meta(self._meta_pending)
            self._meta_pending = None

    def close(self) -> None:
        self._closed.set()
        with self._write_lock, self._lock:
            self.collector.close()
            self._meta_pending = {**(self._meta_pending or {}), "collector": self.collector.summary()}
            self._write_waiting()
            self.recorder.close()
            self.store.close()
