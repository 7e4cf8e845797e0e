"""The request log of an emulated drive: every request the kernel sent, in one columnar file.

The emulator appends one row per request (:class:`RequestRecorder`, cheap
appends to typed arrays) and writes the rows to the log file in chunks as it
goes (:meth:`RequestRecorder.flush`, at most :data:`FLUSH_ROWS` rows or
:data:`FLUSH_S` seconds apart, when a request leaves time before its
deadline), so that the log of an emulator killed by SIGKILL holds every
request up to its last chunk. The file (``.reqlog``) is a sequence of numpy
``.npy`` records, each written whole by one ``write``: first the metadata (a
JSON string), then chunks of rows (a structured array of the columns below),
then metadata updates (JSON strings, merged in order). A record cut short by
a kill is left out when read. Rows are in the order the requests completed:
the drive serves them in arrival order, so that is their arrival order but
for a flush, which completes as it arrives (before writes queued ahead of it).
Columns:

=================  =======  ====================================================
``arrival_s``      float64  when the request reached the drive, on the drive's
                            simulated clock (s since the emulator started,
                            the path's way in taken off)
``op``             int8     0 read, 1 write, 2 flush, 3 write of zeros
``offset_bytes``   int64    where it starts on the drive
``size_bytes``     int64    its length
``wait_s``         float64  simulated wait for the previous request
``service_s``      float64  simulated service time (start to completion)
``hit``            int8     the simulation's HitKind (0 media, 1 cache hit,
                            2 read-ahead hit, 3 fast write), -1 not known
``lateness_s``     float64  the server's return minus its deadline, the
                            simulated completion less the path's way back
                            to the caller
``probe``          bool     a read of the start-up measurement of the path's
                            cost (served after a fixed delay, not simulated)
``error``          int16    errno of a failed request (0: none)
``entry_s``        float64  when the request reached the server, s since the
                            emulator started (monotonic clock)
``done_s``         float64  when the server returned it, same clock
=================  =======  ====================================================

The metadata: the drive, the timing used, the path's round trip taken off each
request (``fixed_cost_s``, ``path_per_byte_s`` and ``path_cost_by_size``) and its way in
(``path_in_by_size``; ``path_legs`` says whether that was measured), the start time (``started_unix_s``, and
``t0_monotonic_s``: the emulator's start on the host's monotonic clock, which ``entry_s`` and ``done_s``
count from, so that a caller's own monotonic stamps of the same requests can be set beside them). :func:`read_log` reads the file in one line as a
``pandas.DataFrame`` (``df.attrs`` holds the metadata, and ``complete``:
whether the emulator closed the log); :func:`summarize` gives the figures
``diskmodel emulate-log`` prints.
"""
from __future__ import annotations

import io
import json
import os
import time
from array import array

__all__ = ["COLUMNS", "FLUSH_ROWS", "FLUSH_S", "FORMAT", "OPS", "RequestRecorder", "format_summary", "read_log",
           "summarize"]

#: Column name -> array typecode (see the module doc).
COLUMNS: dict[str, str] = {"arrival_s": "d", "op": "b", "offset_bytes": "q", "size_bytes": "q", "wait_s": "d",
                           "service_s": "d", "hit": "b", "lateness_s": "d", "probe": "B", "error": "h",
                           "entry_s": "d", "done_s": "d"}
#: The columns every log holds (the later ones, the server's stamps, were added after the format's first use).
_FIRST_COLUMNS = 10
OPS = {0: "read", 1: "write", 2: "flush", 3: "zero"}
_DTYPES = {"d": "<f8", "b": "i1", "q": "<i8", "B": "?", "h": "<i2"}
HIT_NAMES = {-1: "unknown", 0: "media", 1: "cache hit", 2: "read-ahead hit", 3: "fast write"}
#: The first record's ``format``: what :func:`read_log` recognises a request log by.
FORMAT = "diskmodel.emulate.requestlog"
#: Rows are written once this many are waiting, or once the oldest has waited :data:`FLUSH_S` [s].
FLUSH_ROWS = 512
FLUSH_S = 0.5


def _record_bytes(array_) -> bytes:
    import numpy as np

    out = io.BytesIO()
    np.lib.format.write_array(out, np.asarray(array_), allow_pickle=False)
    return out.getvalue()


class RequestRecorder:
    """Rows of the request log, appended to *path* in chunks (see the module doc).

    Without a *path* the rows are counted and dropped as they are flushed.
    """

    def __init__(self, meta: dict, path: str | os.PathLike | None = None, *, flush_rows: int = FLUSH_ROWS,
                 flush_s: float = FLUSH_S, monotonic=time.monotonic):
        import numpy as np

        self.meta = {"format": FORMAT, **meta}
        self.flush_rows, self.flush_s, self.monotonic = int(flush_rows), float(flush_s), monotonic
        self.dtype = np.dtype([(name, _DTYPES[code]) for name, code in COLUMNS.items()])
        self.columns = {name: array(code) for name, code in COLUMNS.items()}
        self._append = [self.columns[name].append for name in COLUMNS]
        self.written = 0
        self._oldest_s = None
        self.fd = None
        if path is not None:
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o644)
            self._write(_record_bytes(json.dumps(self.meta)))

    def __len__(self) -> int:
        return self.written + len(self.columns["op"])

    def add(self, arrival_s, op, offset_bytes, size_bytes, wait_s, service_s, hit, lateness_s, probe, error,
            entry_s=float("nan"), done_s=float("nan")) -> None:
        if self._oldest_s is None:
            self._oldest_s = self.monotonic()
        for append, value in zip(self._append, (arrival_s, op, offset_bytes, size_bytes, wait_s, service_s, hit,
                                                lateness_s, probe, error, entry_s, done_s)):
            append(value)

    def due(self) -> bool:
        """Whether rows wait to be written: :data:`FLUSH_ROWS` of them, or one for :data:`FLUSH_S`."""
        return self._oldest_s is not None and (len(self.columns["op"]) >= self.flush_rows
                                               or self.monotonic() - self._oldest_s >= self.flush_s)

    def overdue(self) -> bool:
        """Whether the oldest waiting row has waited twice :data:`FLUSH_S`."""
        return self._oldest_s is not None and self.monotonic() - self._oldest_s >= 2 * self.flush_s

    def flush(self) -> None:
        """Append the waiting rows to the file as one chunk."""
        self.write_rows(self.take())

    def take(self):
        """The waiting rows (a structured array, or None when none wait), no longer waiting: for
        :meth:`write_rows`, which a caller may run outside the lock that guards :meth:`add` (chunks must be
        written in the order they were taken)."""
        import numpy as np

        n = len(self.columns["op"])
        if not n:
            return None
        columns = self.columns
        self.columns = {name: array(code) for name, code in COLUMNS.items()}
        self._append = [self.columns[name].append for name in COLUMNS]
        self._oldest_s = None
        self.written += n
        rows = np.empty(n, self.dtype)
        for name, col in columns.items():
            rows[name] = np.frombuffer(col, dtype=self.dtype[name])
        return rows

    def write_rows(self, rows) -> None:
        """Append rows from :meth:`take` to the file as one chunk (nothing for None or without a file)."""
        if rows is not None and self.fd is not None:
            self._write(_record_bytes(rows))

    def update_meta(self, **changes) -> None:
        """Change metadata (e.g. the fixed cost once measured): appended as a record of its own."""
        self.flush()
        self.write_meta(changes)

    def write_meta(self, changes: dict) -> None:
        """Change metadata, appended as a record of its own after the rows written so far (not the waiting
        ones: :meth:`update_meta` writes those first)."""
        self.meta.update(changes)
        if self.fd is not None:
            self._write(_record_bytes(json.dumps(changes)))

    def close(self) -> None:
        """Write the waiting rows and a last record saying the log is complete."""
        if self.fd is None:
            self.flush()
            return
        self.update_meta(complete=True)
        os.close(self.fd)
        self.fd = None

    def _write(self, data: bytes) -> None:
        # One write per record on an O_APPEND file: a kill leaves at most the last record cut short.
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]


def _records(path):
    """The records of a request log, and the bytes of a last record cut short (0 when none)."""
    import numpy as np

    from diskmodel.data.input_files import open_regular

    records = []
    with open_regular(path, "request log") as f:   # a FIFO or a device is refused, never waited on
        size = os.fstat(f.fileno()).st_size
        while f.tell() < size:
            at = f.tell()
            try:
                records.append(np.lib.format.read_array(f, allow_pickle=False))
            except (ValueError, EOFError, OSError):
                if not records:
                    raise
                return records, size - at
            if f.tell() > size:  # read_array read less than the record's header promised
                return records[:-1], size - at
    return records, 0


def read_log(path: str | os.PathLike):
    """The request log at *path* as a ``pandas.DataFrame`` (one row per request, the served ones in the order
    they arrived at the drive, which is the order it served them; ``.attrs``: its metadata, ``complete``: whether
    the emulator closed it, ``truncated_bytes``: a last record cut short by a kill)."""
    import numpy as np
    import pandas as pd

    try:
        records, cut = _records(path)
        meta = json.loads(str(records[0])) if records and records[0].dtype.kind == "U" else None
    except (ValueError, EOFError) as exc:
        raise ValueError(f"{path}: not an emulator request log ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not an emulator request log (its first record is not {FORMAT}'s metadata)")
    meta.setdefault("complete", False)
    chunks = []
    for record in records[1:]:
        if record.dtype.kind == "U":
            meta.update(json.loads(str(record)))
        else:
            chunks.append(record)
    dtype = np.dtype([(name, _DTYPES[code]) for name, code in COLUMNS.items()])
    rows = np.concatenate(chunks) if chunks else np.zeros(0, dtype)
    # a log written before the server's stamps were logged lacks the last columns: they read as NaN
    names = rows.dtype.names or ()
    if len(names) < _FIRST_COLUMNS or names != dtype.names[:len(names)]:
        raise ValueError(f"{path}: not an emulator request log (columns {rows.dtype.names})")
    # The server writes a row when its request completes. Under load, a thread that wakes late can write its row
    # after the next request's; the arrivals, given under the serving lock, keep the drive's own order (of two
    # that arrive together, the one served first waited less). The path's probes keep their places.
    served = np.flatnonzero(~rows["probe"].astype(bool))
    rows = rows.copy()
    rows[served] = rows[served][np.lexsort((rows["wait_s"][served], rows["arrival_s"][served]))]
    frame = pd.DataFrame({name: rows[name] if name in names else np.full(len(rows), np.nan) for name in COLUMNS})
    frame.attrs.update(meta)
    frame.attrs["truncated_bytes"] = cut
    return frame


def summarize(frame, *, lateness_bound_s: float | None = None) -> dict:
    """Counts, lateness p50/p99/max and hits of a request log (the probe reads left out)."""
    import numpy as np

    served = frame[~frame["probe"].astype(bool)]
    late = served["lateness_s"].to_numpy()
    ok = served["error"].to_numpy() == 0
    timed = late[ok]
    out = {
        "drive": frame.attrs.get("drive"), "timing": frame.attrs.get("timing"),
        "fixed_cost_s": frame.attrs.get("fixed_cost_s"), "complete": bool(frame.attrs.get("complete", True)),
        "requests": int(len(served)), "probe_reads": int(len(frame) - len(served)),
        "by_op": {OPS[int(k)]: int(v) for k, v in served["op"].value_counts().sort_index().items()},
        "bytes_read": int(served["size_bytes"][served["op"] == 0].sum()),
        "bytes_written": int(served["size_bytes"][served["op"].isin([1, 3])].sum()),
        "errors": int((~ok).sum()),
        "error_errnos": sorted({int(e) for e in served["error"] if e}),
        "hits": {HIT_NAMES.get(int(k), str(k)): int(v) for k, v in served["hit"].value_counts().sort_index().items()},
        "mean_service_s": float(served["service_s"].mean()) if len(served) else None,
        "lateness_p50_s": float(np.percentile(timed, 50)) if timed.size else None,
        "lateness_p99_s": float(np.percentile(timed, 99)) if timed.size else None,
        "lateness_max_s": float(timed.max()) if timed.size else None,
        # the interpreter's cyclic collections while serving (server.py, harness/heap.py); None: an older log
        "collector": frame.attrs.get("collector"),
    }
    if len(served) > 1:
        span = float(served["arrival_s"].iloc[-1] - served["arrival_s"].iloc[0])
        out["span_s"] = span
    if lateness_bound_s is not None:
        out["lateness_p99_bound_s"] = float(lateness_bound_s)
        out["lateness_within_bound"] = out["lateness_p99_s"] is None or out["lateness_p99_s"] <= lateness_bound_s
    return out


def format_summary(summary: dict) -> str:
    """The summary as lines of text (what ``diskmodel emulate-log`` prints)."""
    def ms(value):
        return "-" if value is None else f"{value * 1e3:.3f} ms"

    ops = ", ".join(f"{n} {op}{'es' if op == 'flush' else 's'}" for op, n in summary["by_op"].items()) or "none"
    lines = [f"{summary['drive']}: {summary['requests']} requests ({ops}); "
             f"{summary['bytes_read']} bytes read, {summary['bytes_written']} written",
             f"timing: {summary['timing']}; path's fixed cost taken off each deadline: {ms(summary['fixed_cost_s'])}",
             f"hits: {', '.join(f'{k} {v}' for k, v in summary['hits'].items()) or 'none'}; "
             f"mean simulated service {ms(summary['mean_service_s'])}",
             f"lateness (actual minus simulated completion): p50 {ms(summary['lateness_p50_s'])}, "
             f"p99 {ms(summary['lateness_p99_s'])}, max {ms(summary['lateness_max_s'])}"]
    collector = summary.get("collector")
    if collector:
        counts = collector["collections_by_generation"]
        lines.append(f"the interpreter's cyclic collector while serving: {counts[0]} / {counts[1]} / {counts[2]} "
                     f"collections of generations 0 / 1 / 2, the longest {ms(collector['longest_s'])}; "
                     f"{collector['frozen_objects']} objects of the set-up frozen out of them")
    if not summary.get("complete", True):
        lines.append("the log was not closed (its emulator was killed): it holds the requests up to its last chunk")
    if summary["errors"]:
        lines.append(f"{summary['errors']} request(s) FAILED (errno {', '.join(map(str, summary['error_errnos']))})")
    if summary.get("lateness_within_bound") is False:
        lines.append(f"WARNING: lateness p99 {ms(summary['lateness_p99_s'])} exceeds the bound "
                     f"{ms(summary['lateness_p99_bound_s'])}: requests completed later than the simulation says")
    return "\n".join(lines)
