"""The request log of an emulated drive: every request the kernel sent, in one columnar file.

The emulator appends one row per request (:class:`RequestRecorder`, cheap
appends to typed arrays) and writes them as a numpy ``.npz`` (written to a
temporary name and renamed, so a reader never sees half a log). Columns:

=================  =======  ====================================================
``arrival_s``      float64  when the request reached the drive, on the drive's
                            simulated clock (s since the emulator started,
                            the path's fixed cost taken off)
``op``             int8     0 read, 1 write, 2 flush, 3 write of zeros
``offset_bytes``   int64    where it starts on the drive
``size_bytes``     int64    its length
``wait_s``         float64  simulated wait for the previous request
``service_s``      float64  simulated service time (start to completion)
``hit``            int8     the simulation's HitKind (0 media, 1 cache hit,
                            2 read-ahead hit, 3 fast write), -1 not known
``lateness_s``     float64  actual completion minus the simulated one, as
                            the server sees it (the way back to the
                            caller is part of the fixed cost taken off)
``probe``          bool     a read of the start-up measurement of the path's
                            fixed cost (served at once, not simulated)
``error``          int16    errno of a failed request (0: none)
=================  =======  ====================================================

and ``meta_json``: the drive, the timing used, the fixed cost taken off each
deadline, the start time. :func:`read_log` reads it in one line as a
``pandas.DataFrame`` (``df.attrs`` holds the metadata); :func:`summarize`
gives the figures ``diskmodel emulate-log`` prints.
"""
from __future__ import annotations

import json
import os
from array import array
from pathlib import Path

__all__ = ["COLUMNS", "OPS", "RequestRecorder", "format_summary", "read_log", "summarize"]

#: Column name -> array typecode (see the module doc).
COLUMNS: dict[str, str] = {"arrival_s": "d", "op": "b", "offset_bytes": "q", "size_bytes": "q", "wait_s": "d",
                           "service_s": "d", "hit": "b", "lateness_s": "d", "probe": "B", "error": "h"}
OPS = {0: "read", 1: "write", 2: "flush", 3: "zero"}
_DTYPES = {"d": "float64", "b": "int8", "q": "int64", "B": "bool", "h": "int16"}
HIT_NAMES = {-1: "unknown", 0: "media", 1: "cache hit", 2: "read-ahead hit", 3: "fast write"}


class RequestRecorder:
    """Rows of the request log, kept in memory until :meth:`save`."""

    def __init__(self, meta: dict):
        self.meta = dict(meta)
        self.columns = {name: array(code) for name, code in COLUMNS.items()}
        self._append = [self.columns[name].append for name in COLUMNS]

    def __len__(self) -> int:
        return len(self.columns["op"])

    def add(self, arrival_s, op, offset_bytes, size_bytes, wait_s, service_s, hit, lateness_s, probe, error) -> None:
        for append, value in zip(self._append, (arrival_s, op, offset_bytes, size_bytes, wait_s, service_s, hit,
                                                lateness_s, probe, error)):
            append(value)

    def save(self, path: str | os.PathLike) -> None:
        """Write the log to *path* (``.npz``) atomically."""
        import numpy as np

        path = Path(path)
        arrays = {name: np.frombuffer(col, dtype=_DTYPES[COLUMNS[name]]) if len(col)
                  else np.zeros(0, _DTYPES[COLUMNS[name]]) for name, col in self.columns.items()}
        arrays["meta_json"] = np.array(json.dumps(self.meta))
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def read_log(path: str | os.PathLike):
    """The request log at *path* as a ``pandas.DataFrame`` (one row per request; ``.attrs``: its metadata)."""
    import numpy as np
    import pandas as pd

    with np.load(os.fspath(path), allow_pickle=False) as data:
        missing = [name for name in (*COLUMNS, "meta_json") if name not in data.files]
        if missing:
            raise ValueError(f"{path}: not an emulator request log (no {', '.join(missing)})")
        frame = pd.DataFrame({name: data[name] for name in COLUMNS})
        frame.attrs.update(json.loads(str(data["meta_json"])))
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
        "fixed_cost_s": frame.attrs.get("fixed_cost_s"),
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

    ops = ", ".join(f"{n} {op}s" for op, n in summary["by_op"].items()) or "none"
    lines = [f"{summary['drive']}: {summary['requests']} requests ({ops}); "
             f"{summary['bytes_read']} bytes read, {summary['bytes_written']} written",
             f"timing: {summary['timing']}; path's fixed cost taken off each deadline: {ms(summary['fixed_cost_s'])}",
             f"hits: {', '.join(f'{k} {v}' for k, v in summary['hits'].items()) or 'none'}; "
             f"mean simulated service {ms(summary['mean_service_s'])}",
             f"lateness (actual minus simulated completion): p50 {ms(summary['lateness_p50_s'])}, "
             f"p99 {ms(summary['lateness_p99_s'])}, max {ms(summary['lateness_max_s'])}"]
    if summary["errors"]:
        lines.append(f"{summary['errors']} request(s) FAILED (errno {', '.join(map(str, summary['error_errnos']))})")
    if summary.get("lateness_within_bound") is False:
        lines.append(f"WARNING: lateness p99 {ms(summary['lateness_p99_s'])} exceeds the bound "
                     f"{ms(summary['lateness_p99_bound_s'])}: requests completed later than the simulation says")
    return "\n".join(lines)
