"""The copy's read step on md RAID 1 over a fast and a slow drive (benchmarks/stacks_check.py's VM group
000: Marechal's file systems on the mirror) against the kernel's request streams under blktrace in the
VM (tests/golden/raid1_read_blktrace.json, see tests/golden/README.md), predicted by the whole I/O path
(model/iopath/path.py) on the same stacks."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from diskmodel.calibrate.bench import stacks_vm
from diskmodel.model.iopath import Flag, Op, parse_workload
from diskmodel.model.iopath.fileops import Kind
from diskmodel.model.iopath.pagecache import ASYNC_DELAY_S, CacheParams, page_cache
from diskmodel.model.iopath.path import max_sectors_kb, run
from diskmodel.model.iopath.timing import INSTANT_S

GOLDEN = json.loads((Path(__file__).parent / "golden" / "raid1_read_blktrace.json").read_text())
CELLS = {c["label"].split(",")[0]: c for c in GOLDEN["cells"]}
MIB = 1 << 20
STACKS = {c.label: c.stack for c in stacks_vm.GROUPS["000"]()[1]}


@lru_cache(maxsize=None)
def _model(kind: str) -> dict:
    return run(STACKS[f"{kind}, RAID 1 fast + slow"], parse_workload("dd:size=4M,step=read", sync_at_end=False))


def _kernel_reads(kind: str, device: str) -> list[list[int]]:
    """Per repeat, the sizes of the reads the kernel issued on *device*."""
    return [[q[2] for q in r["requests"].get(device, []) if q[0] == 0] for r in CELLS[kind]["repeats"]]


def test_the_trace_shows_what_the_tests_assume():
    """Every repeat of xfs and reiserfs read the 4 MiB file as four 1 MiB requests on the fast mirror
    (ondemand_readahead: a 1 MiB call over a 128 KiB read_ahead_kb reads ahead up to the device's
    largest request, 1280 KiB), nothing from the slow one and no metadata; the queue settings are the
    model's defaults (md's read_ahead_kb 128, max_sectors_kb 1280)."""
    for kind in ("xfs", "reiserfs"):
        assert _kernel_reads(kind, "vdb") == [[MIB] * 4] * 3, kind
        assert _kernel_reads(kind, "vdc") == [[]] * 3, kind
        md = CELLS[kind]["devices"]["md"]
        assert (md["read_ahead_kb"], md["max_sectors_kb"]) == (128, 1280)


def _windows(kind: str):
    """The page cache's reads of the file (its read-ahead windows) for the step on *kind*'s stack: sizes
    and which are async read-ahead."""
    stack = STACKS[f"{kind}, RAID 1 fast + slow"]
    res = page_cache(parse_workload("dd:size=4M,step=read", sync_at_end=False),
                     CacheParams(io_kb=max_sectors_kb(stack.volume)))
    reads = res.ops.kind == Kind.READ
    ahead = res.async_read[reads] if res.async_read is not None else np.zeros(int(reads.sum()), bool)
    return res.ops.size_bytes[reads].tolist(), ahead.tolist(), res.ops.time_s[reads]


@pytest.mark.parametrize("kind", ["xfs", "reiserfs", "jfs"])
def test_read_ahead_windows_as_the_kernel_issues_them(kind):
    """The kernel's data reads on the mirrors are four 1 MiB windows (the first trace repeat each; jfs's
    two 4 KiB metadata reads aside): a 1 MiB call over a 128 KiB read_ahead_kb reads ahead up to the
    call, at most the device's largest request (ondemand_readahead's io_pages). So are the page
    cache's windows, and the model's member reads of at least 64 KiB hold the file's 4 MiB in four
    requests (the first may carry a metadata block the model reads before it: xfs's directory
    block, reiserfs's leaf; the kernel read none, see test_the_trace_shows_what_the_tests_assume).
    A 128 KiB read-ahead that ignored the call's size read the first call and one 128 KiB window
    more as one request, and every later call's MiB shifted by it (1156 KiB, 1 MiB, 1 MiB, 896 KiB)."""
    kernel = [q[2] for q in CELLS[kind]["repeats"][0]["requests"]["vdb"] if q[0] == 0 and q[2] >= 64 << 10]
    assert kernel == [MIB] * 4
    assert _windows(kind)[0] == kernel
    streams = _model(kind)
    model = [n for name in ("vdb", "vdc") for o, n in zip(streams[name].op, streams[name].size_bytes)
             if o == Op.READ and n >= 64 << 10]
    assert len(model) == 4 and all(MIB <= n <= MIB + (16 << 10) for n in model)


@pytest.mark.parametrize("kind", ["xfs", "reiserfs"])
def test_no_read_reaches_the_slow_mirror(kind):
    """md's read_balance (drivers/md/raid1.c) keeps a sequential stream on the mirror that served its
    start; the trace's reads never reach the slow drive in these cells, nor do the model's."""
    streams = _model(kind)
    assert not (streams["vdc"].op == Op.READ).any()


@pytest.mark.parametrize("kind", ["xfs", "reiserfs"])
def test_the_async_windows_are_issued_at_instants_of_their_own(kind):
    """The second to fourth windows are async read-ahead (page_cache_async_ra, issued when the reader
    reaches the last window's mark): in the trace each is queued on md after the first has completed
    (the second) or while the one before is still in flight (the third, in every xfs repeat). The model
    marks them Flag.ASYNC and issues each at an instant of its own, after its call's. The first window
    is as large as its call, so ondemand_readahead marks its middle (it would hit its own mark: readit,
    ``async_size = max_pages / 2``), and the second goes out once the reader has copied half of the
    first: half a call's time after it; the later windows are marked at their first page, and each
    goes out as its call starts, before the call waits: just before its instant."""
    sizes, ahead, t = _windows(kind)
    assert ahead == [False, True, True, True]
    ops = parse_workload("dd:size=4M,step=read", sync_at_end=False)
    call_s = np.diff(ops.time_s[ops.kind == Kind.READ])
    assert t[1] - t[0] == pytest.approx(ASYNC_DELAY_S + call_s[0] / 2) and ASYNC_DELAY_S > INSTANT_S
    assert np.allclose(t[2:] - ops.time_s[ops.kind == Kind.READ][1:3], -ASYNC_DELAY_S)
    md = _model(kind)["volume"]
    marked = md.size_bytes[(md.flags & Flag.ASYNC) != 0].tolist()
    assert marked == [MIB] * 3  # the mark reaches the md device
    for r in CELLS[kind]["repeats"]:
        q = [x for x in r["requests"]["md"] if x[0] == 0]
        assert q[1][3] >= q[0][3] + q[0][4]  # the second window: after the first completed
    if kind == "xfs":
        assert all(np.less([x for x in r["requests"]["md"] if x[0] == 0][2][3],
                           sum([x for x in r["requests"]["md"] if x[0] == 0][1][3:5]))
                   for r in CELLS[kind]["repeats"])


def _kernel_window_mirrors(kind: str) -> list[list[str]]:
    """Per repeat, the mirror each 1 MiB window after the first went to (md's offsets lie 2 MiB below
    the members': the 1 MiB partition start and md's 1 MiB data offset)."""
    out = []
    for r in CELLS[kind]["repeats"]:
        on_fast = {q[1] for q in r["requests"]["vdb"] if q[0] == 0}
        out.append(["vdb" if q[1] + 2 * MIB in on_fast else "vdc"
                    for q in r["requests"]["md"] if q[0] == 0 and q[2] == MIB])
    return out


@pytest.mark.parametrize("kind", ["ext2", "ext3"])
def test_async_windows_balanced_as_the_kernel_balances_them(kind):
    """ext2 and ext3 on the mirror: the first window's pieces (around the indirect blocks) spread over
    both mirrors; the second window goes to the fast one; the third is issued while the second is still
    read there (page_cache_async_ra at the mark on the second's first page), so md's read_balance sends
    it to the idle slow mirror (min_pending == 0), and the fourth follows it as a sequential read
    (next_seq_sect). Every trace repeat does so, and so does the model. Without the async windows
    pending on their mirror, the model sent the third and fourth to the fast mirror."""
    assert _kernel_window_mirrors(kind) == [["vdb", "vdc", "vdc"]] * 3
    streams = _model(kind)
    windows = sorted((float(s.time_s[i]), name) for name in ("vdb", "vdc") for s in [streams[name]]
                     for i in np.flatnonzero((s.flags & Flag.ASYNC) != 0))
    assert [name for _, name in windows] == ["vdb", "vdc", "vdc"]
