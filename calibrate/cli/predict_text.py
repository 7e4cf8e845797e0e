"""How ``diskmodel predict`` prints a prediction: SI units, plain numbers, and each term explained.

One convention in every line: MB = 10⁶ bytes, MB/s = 10⁶ bytes/s, times in
s, ms or µs (never a bare ``1.2e-05``).  PostMark itself prints
"megabytes per second" of 2^20 bytes (PostMark 1.5's ``scalef``); the first
rate line says so once, beside the SI figure.  Each row of the breakdown
carries what it means, so a term is explained where it first appears.
"""
from __future__ import annotations

import math

from diskmodel.model.stacks.stack_schema import plain_number

#: What each row of a prediction's breakdown means: the terms of the paper's eq. (1) and (10)
#: (Djordjevic et al. 2015, "Access-time model of a file system on LVM"), and their parts.
MEANING = {
    "read_throughput": "bytes read / elapsed time, as PostMark reports it",
    "write_throughput": "bytes written / elapsed time, as PostMark reports it",
    "throughput": "bytes moved / elapsed time",
    "iops": "requests completed per second",
    "latency": "mean time of one request",
    "elapsed": "the run's elapsed time",
    "T_DO": "directory operations: reading and writing directory blocks (eq. 1)",
    "T_MO": "metadata operations: inodes and indirect blocks (eq. 1)",
    "T_FL": "free lists: block and inode bitmaps, group descriptors (eq. 1)",
    "T_DFA": "direct file access: the files' data blocks (eq. 1)",
    "T_J": "journal writes and commits (eq. 1)",
    "T_LVM_MO": "LVM's own cost: mapping logical to physical extents (eq. 10)",
    "T_overlap": "time hidden by write-back overlapping the application (<= 0)",
    "mechanistic_s": "where the extent map puts the blocks (seeks, zone rates) vs a native partition",
    "md_mapping_s": "LVM cost per metadata I/O (eq. 12)",
    "fb_mapping_s": "LVM cost per file-data I/O (eq. 12)",
    "request_mapping_s": "LVM cost per request",
    "seek_s": "moving the heads",
    "settle_s": "the heads settling before a write",
    "rotation_s": "waiting for the sector to come under the head",
    "transfer_s": "reading or writing the media",
    "overhead_s": "the drive's command processing",
    "command_overhead_s": "the drive's command processing",
    "cache_s": "page-cache hits and memory copies",
    "interface_s": "the host link (SATA/SAS) transfer",
}


def megabytes_per_s(bytes_per_s: float) -> str:
    """A rate in MB/s (10⁶ bytes/s), two decimals."""
    return f"{bytes_per_s / 1e6:.2f} MB/s"


def seconds(value_s: float) -> str:
    """A time in s, ms or µs, whichever shows it with three significant figures or more, no exponent."""
    if not math.isfinite(value_s):
        return f"{value_s} s"
    size = abs(value_s)
    if size == 0 or size >= 1:
        return f"{value_s:.2f} s"
    if size >= 1e-3:
        return f"{value_s * 1e3:.3f} ms"
    return f"{value_s * 1e6:.3f} µs"


def quantity(value, unit: str) -> str:
    """*value* in *unit* (the unit column of a prediction's ``to_frame()``) as a person reads it."""
    if unit == "bytes/s":
        return megabytes_per_s(float(value))
    if unit == "MB/s":
        return megabytes_per_s(float(value) * 1e6)
    if unit == "s":
        return seconds(float(value))
    if unit == "bytes":
        return f"{plain_number(value)} bytes ({float(value) / 1e6:.2f} MB)"
    if unit == "1/s":
        return f"{float(value):.1f} /s"
    return f"{plain_number(value)} {unit}".strip()


def _unit_of_column(name: str) -> str | None:
    for suffix, unit in (("_bytes_per_s", "bytes/s"), ("_bytes", "bytes"), ("_s", "s")):
        if name.endswith(suffix):
            return unit
    return None


def table(frame) -> str:
    """A table whose columns carry their units in their names (``write_s``, ``read_bytes_per_s``), each cell in
    its unit as :func:`quantity` shows it; the index likewise (``size_bytes``)."""
    def cell(value, name):
        unit = _unit_of_column(str(name))
        if unit == "bytes":
            return f"{float(value) / 1e6:.2f} MB"
        return quantity(value, unit) if unit else plain_number(value)

    index = str(frame.index.name or "")
    head = [index.removesuffix("_bytes") + (" [MB]" if _unit_of_column(index) == "bytes" else "")]
    head += [str(c).removesuffix("_bytes_per_s").removesuffix("_s") + {"bytes/s": " [MB/s]", "s": ""}.get(
        _unit_of_column(str(c)) or "", "") for c in frame.columns]
    rows = [head] + [[cell(index, frame.index.name).removesuffix(" MB")]
                     + [cell(v, c).removesuffix(" MB/s") for c, v in row.items()] for index, row in frame.iterrows()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(f"{c:>{w}}" for c, w in zip(r, widths)) for r in rows)


def breakdown(frame) -> str:
    """A prediction's ``to_frame()`` (index quantity; value, unit) as aligned text: name, value, meaning."""
    if list(frame.columns) != ["value", "unit"]:
        return table(frame)
    rows = []
    for name, row in frame.iterrows():
        leaf = str(name).rsplit(".", 1)[-1]
        rows.append((str(name), quantity(row["value"], row["unit"]), MEANING.get(str(name), MEANING.get(leaf, ""))))
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    return "\n".join(f"{n:<{width}}  {v:>{value_width}}  {m}".rstrip() for n, v, m in rows)


def paper_measured_note(layout: str, test: str, disk_name: str, fitted: bool) -> str | None:
    """Beside the paper's own case (its WD800BD, a layout of Tables 1-3, PostMark test1-3 as it ran them): what the
    paper measured on its testbed, and that the drive alone is predicted unless --fitted (None elsewhere)."""
    from diskmodel.data.tables import postmark_results

    if fitted or disk_name != "WD800BD" or test not in ("test1", "test2", "test3"):
        return None
    rows = postmark_results()
    rows = rows[(rows["test"] == test) & (rows["layout_key"] == layout)]
    if rows.empty:
        return None
    rate = {op: float(rows[rows["operation"] == op]["throughput_bytes_per_s"].iloc[0]) for op in ("read", "write")}
    return (f"the paper measured read {megabytes_per_s(rate['read'])}, write {megabytes_per_s(rate['write'])} here "
            f"(Djordjevic & Timcenko, Tables 4-6, {layout}, {test}); this prediction is the drive alone, without the "
            "host's CPU and LVM costs of the paper's testbed: --fitted adds the costs fitted to those tables")
