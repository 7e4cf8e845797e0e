"""``diskmodel iopath --stack S --workload W [--json] [--out DIR]``: the requests each device of a stack
receives for a workload (model/iopath: page cache, file system, block layers).

Prints per-device totals (requests and bytes by operation, and requests by power-of-two size);
with ``--json`` one object whose ``devices`` maps each device to read_bytes, write_bytes,
read_requests and write_requests; ``--out DIR`` writes each device's stream as ``DIR/<device>.csv``
(one request per line: time_s, op, offset_bytes, size_bytes, flags, parent).
"""

from __future__ import annotations

import json
import os
import re

PAPER_STACKS = ("native", "lvm1", "lvm2")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "iopath",
        help="the requests each device of a stack receives for a workload (page cache, file system, block layers)",
        description=(
            "Run a workload through the model of the I/O path: the page cache (read-ahead, dirty data, "
            "write-back, a cgroup's memory limit), the file system (allocation, metadata, journal) and the "
            "block layers of the stack, and report what reaches each device."
        ),
    )
    p.add_argument("--stack", required=True, metavar="FILE.json|native|lvm1|lvm2",
                   help="a stack description (JSON) or one of the paper's stacks (no default)")
    p.add_argument("--workload", required=True, metavar="NAME[:KEY=VALUE,...]",
                   help="postmark:test1, postmark:files=500,transactions=2000, fio:rw=randwrite,bs=4k,size=64M,"
                        "direct=1, copy:size=64M, metadata:op=create,files=1000 (no default)")
    p.add_argument("--memory-limit", default=None, metavar="BYTES",
                   help="the cgroup's memory limit, e.g. 64M (default: none)")
    p.add_argument("--no-sync", action="store_true", help="do not end the workload with a sync (default: sync)")
    p.add_argument("--json", action="store_true", help="print one JSON object (default: a table)")
    p.add_argument("--out", metavar="DIR", default=None, help="write each device's stream as DIR/<device>.csv (default: the streams are not written)")
    p.set_defaults(handler=_run)


def _stack(text: str):
    from diskmodel.calibrate import stacks
    from diskmodel.model.stacks.stack import paper_stack

    if text in PAPER_STACKS:
        return paper_stack(text)
    return stacks.read_stack(text)


def _file_name(device: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", device.strip("/")) + ".csv"


def _table(devices) -> str:
    from diskmodel.model.iopath.stream import Op

    lines = [f"{'device':<16} {'reads':>9} {'read MB':>10} {'writes':>9} {'write MB':>10} {'flushes':>8}  "
             "request sizes (count by power of two; MB = 10^6 bytes, KiB = 1024 bytes)"]
    for name, s in devices.items():
        t = s.totals()
        flushes = int((s.op == Op.FLUSH).sum())
        hist = " ".join(f"{k // 1024 if k >= 1024 else k}{'KiB' if k >= 1024 else 'B'}:{v}"
                        for k, v in sorted(s.size_histogram().items()))
        lines.append(f"{name:<16} {t['read_requests']:>9} {t['read_bytes'] / 1e6:>10.2f} {t['write_requests']:>9} "
                     f"{t['write_bytes'] / 1e6:>10.2f} {flushes:>8}  {hist}")
    return "\n".join(lines)


def _run(args) -> int:
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.model.iopath.pagecache import CacheParams
    from diskmodel.model.iopath.path import run
    from diskmodel.model.iopath.workload_spec import parse_workload, size_value

    try:
        stack = _stack(args.stack)
    except ValueError as exc:
        raise UsageError(f"--stack {exc}") from exc
    try:
        ops = parse_workload(args.workload, sync_at_end=not args.no_sync)
    except ValueError as exc:
        raise UsageError(re.sub(r"^workload\b", "--workload", str(exc))) from exc
    limit = None
    if args.memory_limit is not None:
        try:
            limit = size_value("", "--memory-limit", args.memory_limit)
        except ValueError as exc:
            raise UsageError(str(exc).removeprefix("workload : ")) from exc
        if limit < 4096:
            raise UsageError(f"--memory-limit {args.memory_limit}: must be at least 4096 bytes (one page)")
        cache = CacheParams(memory_limit_bytes=limit)
    else:
        cache = CacheParams()
    try:
        devices = run(stack, ops, cache)
    except ValueError as exc:
        raise UsageError(f"--stack {args.stack}: {exc}") from exc
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name, s in devices.items():
            s.to_frame().to_csv(os.path.join(args.out, _file_name(name)), index=False)
    if args.json:
        print(json.dumps({"stack": args.stack, "workload": args.workload, "memory_limit_bytes": limit,
                          "devices": {n: s.totals() for n, s in devices.items()}}, indent=2))
    else:
        print(_table(devices))
    return 0
