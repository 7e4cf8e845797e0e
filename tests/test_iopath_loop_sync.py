"""sync(2) against syncfs(2) on a file system in a loop image (model/iopath/path.py ``_loop``,
``Kind.SYNC_ALL``), against blktrace of both devices (tests/golden/loop_sync_blktrace.json, see
tests/golden/README.md): a program creates 200 empty files, then calls sync(2) or syncfs(2).

What blktrace shows on ext3 in a zero-filled image on ext3 (benchmarks/stacks_check.py's host stack):
either call commits the top file system's journal, and its flushes reach the host as fsyncs of the
image, each a commit of the host's journal. sync(2) then also writes back every block device's
dirty buffers (fs/sync.c, ksys_sync -> sync_bdevs): the host's inode-table block of the image, which
the host's commits had journaled, is written in place after them. syncfs(2) of the top file system
leaves it to the host's write-back. The bonnie++ file phases call sync(2) between phases."""

from __future__ import annotations

import dataclasses
import json
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from diskmodel.model.iopath import Op
from diskmodel.model.iopath.fileops import Kind, metadata
from diskmodel.model.iopath.path import run
from diskmodel.model.iopath.stream import Flag

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

GOLDEN = json.loads((Path(__file__).parent / "golden" / "loop_sync_blktrace.json").read_text())
B = 4096
STACK = "ext3 on zero-filled loop"
META = int(Flag.META)


def _traced_writes(call: str, repeat: int) -> list[tuple[int, int, bool]]:
    """The host device's writes in the trace: (block, blocks, META)."""
    cell = next(c for c in GOLDEN["cells"] if c["stack"] == STACK and c["call"] == call and c["repeat"] == repeat)
    return [(o // B, n // B, bool(f & META)) for op, o, n, f, _ in cell["devices"]["bottom"] if op == Op.WRITE]


@lru_cache(maxsize=None)
def _modelled_writes(call: str) -> list[tuple[int, int, bool]]:
    """The model's writes on the host's device (the partition under the image's host file system)."""
    from stacks_check import model_stack

    ops = metadata("create", GOLDEN["cells"][0]["files"])
    assert ops.kind[-1] == Kind.SYNC
    if call == "sync":
        ops = dataclasses.replace(ops, kind=np.where(np.arange(ops.kind.size) == ops.kind.size - 1, Kind.SYNC_ALL,
                                                     ops.kind).astype(ops.kind.dtype))
    s = run(model_stack(STACK, "wd800bd"), ops)["volume-host"]
    w = s.op == Op.WRITE
    return [(int(o) // B, int(n) // B, bool(f & META)) for o, n, f in zip(s.offset_bytes[w], s.size_bytes[w], s.flags[w])]


@pytest.mark.parametrize("repeat", [0, 1])
def test_sync_writes_the_hosts_inode_table_block_of_the_image_last_and_syncfs_does_not(repeat):
    traced_sync, traced_syncfs = _traced_writes("sync", repeat), _traced_writes("syncfs", repeat)
    last = traced_sync[-1]
    assert last[1:] == (1, True), traced_sync
    assert last[0] not in {b for b, _, _ in traced_syncfs}
    model_sync, model_syncfs = _modelled_writes("sync"), _modelled_writes("syncfs")
    # the model: the same stream, and after it the host's one in-place metadata block, the trace's block
    assert model_sync[:-1] == model_syncfs
    assert model_sync[-1] == last

