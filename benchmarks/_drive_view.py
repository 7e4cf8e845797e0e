"""What an emulated drive served during each timed step of a check: its request log cut by the steps' spans."""
from __future__ import annotations


def drive_view(log_path: str, windows: list, partition: tuple[int, int]) -> dict:
    """Per timed step, what the emulated drive served in its span (the request log: requests, bytes
    written, the simulation's busy time, the emulator's lateness): the drive's own view, beside the model's.
    ``outside_partition``: requests outside the stack's *partition* (first byte, end byte) on the
    drive: not the stack's (another process reading the drive, as a device probe reads its first
    and last sectors)."""
    from diskmodel.calibrate.emulate import read_log

    try:
        frame = read_log(log_path)
    except (OSError, ValueError) as exc:
        return {"error": str(exc)}
    start = float(frame.attrs.get("started_unix_s", 0.0))
    frame = frame[~frame["probe"].astype(bool)]
    out = {}
    for label, t0, t1 in windows:
        m = (frame["arrival_s"] >= t0 - start) & (frame["arrival_s"] <= t1 - start)
        f = frame[m]
        one = out.setdefault(label, {"spans": 0, "requests": 0, "write_bytes": 0, "busy_s": 0.0,
                                     "lateness_max_s": 0.0, "outside_partition": 0})
        one["spans"] += 1
        one["requests"] += int(len(f))
        one["write_bytes"] += int(f["size_bytes"][f["op"] == 1].sum())
        rw = f["op"] != 2  # flushes have no offset
        one["outside_partition"] += int((rw & ((f["offset_bytes"] < partition[0])
                                               | (f["offset_bytes"] >= partition[1]))).sum())
        one["busy_s"] += float(f["service_s"].sum())
        one["lateness_max_s"] = max(one["lateness_max_s"], float(f["lateness_s"].max()) if len(f) else 0.0)
    for one in out.values():  # per span (the copy repeats each size)
        for key in ("requests", "write_bytes", "busy_s"):
            one[key] /= one["spans"]
    return out
