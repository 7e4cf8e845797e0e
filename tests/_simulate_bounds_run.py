"""Run cases of the per-request simulation with numba's bounds checks (a subprocess of
tests/test_simulate_bounds.py).

The numba kernel (``diskmodel.model.simulator.kernel._simulate`` and its helpers) does not check its
indices: one out of range reads or writes memory silently. With ``NUMBA_BOUNDSCHECK=1`` (set by
the caller, before numba compiles anything; :mod:`diskmodel.model._jit` keeps such code in its own
folder) every index is checked and an out-of-range one raises IndexError (numba names no line).

``python _simulate_bounds_run.py CASES.json`` reads a list of cases and prints one JSON line per
case: ``{"id", "requests", "index_error_at", "s"}`` (``s``: its wall time, compilation included) (the first request whose simulation raises, found
by bisecting the trace prefix, or null), and for a hypothesis case ``examples`` and ``failing``
(the smallest failing trace as rows ``[is_write, lbn, blocks, gap_s]``, or null). Cases:

- ``{"id", "kind": "variant", "name"}``: a variant of tests/golden/disksim_variants, its whole trace;
- ``{"id", "kind": "random", "seed", "changed"}``: make_random.py's variant *seed* (or the unchanged
  drive, ``changed`` false) with its synthetic trace; with ``"changes"``, those keys set instead of
  the variant's (one key replayed alone), with ``"requests"`` its first requests only;
- ``{"id", "kind": "write_segments", "set", "seed"}``: make_random.py's WRITE_SEGMENT_SETS variant;
- ``{"id", "kind": "rows", "drive", "changes", "rows"}``: hand-written requests on a bundled drive
  with its diskspecs keys *changes* set;
- ``{"id", "kind": "hypothesis", "drive", "changes", "examples"}``: hypothesis-drawn short traces
  (derandomised: the same examples every run) near one place, appending, or anywhere on the drive.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scripts import load_script  # noqa: E402

from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive  # noqa: E402
from diskmodel.model.simulator.inputs import _writes_queue  # noqa: E402
from diskmodel.model.simulator.simulate import simulate_requests  # noqa: E402


def _index_error_at(params, is_write, lbn, blocks, gap):
    """The first request whose simulation raises IndexError, or None (bisecting the prefix)."""
    def fails(k):
        try:
            simulate_requests(params, is_write[:k], lbn[:k], blocks[:k], gap[:k])
        except IndexError:
            return True
        return False
    if not fails(len(lbn)):
        return None
    ok, bad = 0, len(lbn)
    while bad - ok > 1:
        mid = (ok + bad) // 2
        if fails(mid):
            bad = mid
        else:
            ok = mid
    return bad - 1


def _params(folder):
    # DiskSim 4.0's code exactly, as the goldens are compared
    return drive_parameters(load_disksim_drive(folder), disksim_code=True, disksim_access_block_bug=True)


def _folder_case(folder, head=None):
    params = _params(folder)
    trace = load_disksim_drive(folder).read_trace()
    if head is not None:
        trace = trace.head(head)
    args = (trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s)
    return {"requests": len(trace.lbn), "index_error_at": _index_error_at(params, *args)}


def _draw_trace(params):
    """A hypothesis strategy of short traces on the drive of *params* (arrays as simulate_requests takes)."""
    from hypothesis import strategies as st
    total = int(params.layout.total_blocks)
    segment = int(params.segment_size_blocks)
    queued = _writes_queue(params)
    request = st.tuples(st.sampled_from(("near", "near", "append", "far")), st.booleans(), st.integers(-300, 300),
                        st.integers(0, total - 1), st.one_of(st.integers(1, 16), st.integers(1, min(600, 2 * segment + 40))),
                        st.one_of(st.just(0.0), st.floats(0, 3e-4), st.floats(0, 3e-3), st.floats(0, 3e-2)))

    def build(drawn):
        base, rows = drawn
        w, first, count, gap = [], [], [], []
        end = base
        for kind, write, delta, anywhere, n, g in rows:
            if write and queued:
                n = min(n, segment)     # simulate_requests refuses larger queued writes
            x = {"near": base + delta, "append": end, "far": anywhere}[kind]
            x = min(max(x, 0), total - n)
            w.append(write)
            first.append(x)
            count.append(n)
            gap.append(g)
            end = x + n
        return np.array(w, bool), np.array(first, np.int64), np.array(count, np.int64), np.array(gap)

    return st.tuples(st.integers(0, total - 1000), st.lists(request, min_size=1, max_size=40)).map(build)


def _hypothesis_case(params, examples):
    from hypothesis import HealthCheck, given, settings
    failing = []

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(_draw_trace(params))
    def run(args):
        try:
            simulate_requests(params, *args)
        except IndexError:
            failing.append([[bool(a), int(b), int(c), float(d)] for a, b, c, d in zip(*args)])
            raise

    try:
        run()
    except IndexError:
        return failing[-1]      # hypothesis replays the smallest failing example last
    return None


def run_case(case, tmp: Path) -> dict:
    where = tmp / case["id"]
    where.mkdir()
    kind = case["kind"]
    if kind == "variant":
        make = load_script(GOLDEN / "disksim_variants" / "make_variants.py")
        variant = next(v for v in json.loads((GOLDEN / "disksim_variants" / "variants.json").read_text())
                       if v["name"] == case["name"])
        return _folder_case(make.make_folder(variant, where))
    make = load_script(GOLDEN / "disksim_random" / "make_random.py")
    if kind in ("random", "write_segments"):
        if kind == "random":
            variant = make.variant(case["seed"])
            if "changes" in case:
                variant = dict(variant, changes=case["changes"], rpm=None)
        else:
            variant = make.write_segment_variant(case["set"], case["seed"])
        folder = make.make_folder(variant, where, changed=case.get("changed", True))
        make.write_trace(variant, folder, make.total_blocks(folder))
        return _folder_case(folder, case.get("requests"))
    folder = make.make_folder({"seed": 0, "drive": case["drive"], "changes": case["changes"], "rpm": None}, where)
    params = _params(folder)
    if kind == "rows":
        w, first, count, gap = zip(*case["rows"])
        args = (np.array(w, bool), np.array(first, np.int64), np.array(count, np.int64), np.array(gap, float))
        return {"requests": len(first), "index_error_at": _index_error_at(params, *args)}
    if kind == "hypothesis":
        return {"examples": case["examples"], "failing": _hypothesis_case(params, case["examples"])}
    raise ValueError(f"case kind must be variant, random, write_segments, rows or hypothesis (got {kind!r})")


def main(path: str) -> None:
    if os.environ.get("NUMBA_BOUNDSCHECK") != "1":
        raise SystemExit("NUMBA_BOUNDSCHECK=1 must be set")
    cases = json.loads(Path(path).read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            t0 = time.perf_counter()
            result = run_case(case, Path(tmp))
            print(json.dumps({"id": case["id"], **result, "s": round(time.perf_counter() - t0, 2)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
