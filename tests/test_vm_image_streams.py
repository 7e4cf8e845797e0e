"""A buffered loop image in the VM (ext4 in a sparse image on ext4, Linux 6.1) read back after a cache
drop, against the requests the emulated drive logged (tests/golden/vm_image_streams.json, see
tests/golden/README.md): the guest's loop worker reads each request one page at a time
(lo_read_simple), so the host's read-ahead on the image ramps from one page to read_ahead_kb and
then reads one 128 KiB window at a time, each issued when the one before is read: the drive sees
a string of 128 KiB reads one after another, not the 1 MiB windows of the file above."""
from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

from diskmodel.calibrate.bench import stacks_vm as V
from diskmodel.model.iopath import Op, parse_workload
from diskmodel.model.predict import predict

GOLDEN = json.loads((Path(__file__).parent / "golden" / "vm_image_streams.json").read_text())
CELL = GOLDEN["cells"][0]
KIB = 1024


@functools.lru_cache(maxsize=None)
def _predicted():
    stack = {c.label: c.stack for c in V.GROUPS[CELL["group"]]()[1]}[CELL["label"]]
    t = predict(stack, parse_workload("dd:size=4194304,step=read", sync_at_end=False)).timing
    keep = t.op == int(Op.READ)
    return t.size_bytes[keep].tolist(), float((t.completion_s - t.start_s)[keep].sum())


def _logged():
    reps = [r["read"]["devices"]["vdb"] for r in CELL["repeats"]]
    return [[r[1] for r in rep if r[0] == "R"] for rep in reps], [sum(r[5] for r in rep if r[0] == "R") for rep in reps]


def test_the_image_is_read_in_read_ahead_windows_one_at_a_time_as_logged():
    """The drive's reads: as many as logged (within three: the model reads two 4 KiB metadata blocks
    the log does not show, and the guest merged one pair of the host's windows, which the model keeps
    apart), nearly all
    128 KiB (the host's window), after a ramp of 16, 32 and 64 KiB."""
    sizes, _ = _predicted()
    logged, _ = _logged()
    assert abs(len(sizes) - statistics.median(len(x) for x in logged)) <= 3, (len(sizes), [len(x) for x in logged])
    assert sum(s == 128 * KIB for s in sizes) >= 0.8 * statistics.median(sum(s == 128 * KIB for s in x) for x in logged)
    assert {16 * KIB, 32 * KIB, 64 * KIB} <= set(sizes)


def test_the_drive_is_busy_as_long_as_logged():
    """The same simulation times both: the drive's busy time within a tenth of the logged median
    (each window misses a part of a turn, since the next is issued only when it is read)."""
    _, busy = _predicted()
    _, logged = _logged()
    assert abs(busy - statistics.median(logged)) <= 0.1 * statistics.median(logged), (busy, logged)
