"""Random drive variants replayed by DiskSim 4.0 itself: a differential test of the simulation.

Each variant is made from one integer seed, reproducibly (Python's ``random.Random(seed)``):
one of the bundled drives of ``data/disksim`` (only those, G4_4TB left out: ``BUNDLED``), several
honoured ``.diskspecs`` keys changed at once within DiskSim's legal ranges (and the
rotation speed of the ``.model``), and a synthetic trace in DiskSim's validate format
(``op label lbn blocks service_us gap_us``, the gap being the idle time after the
request's completion) mixing sequential runs of reads and of writes, re-reads, reads
just past the previous one, random reads and writes, small and large requests, short
and long think times.

``python make_random.py run FIRST_SEED COUNT OUT.jsonl [DISKSIM_BUILD]`` runs DiskSim
(``run_drive.sh`` of the build, see tests/golden/disksim_variants/README.md) on each
variant our simulation accepts (``drive_parameters`` refusing it: counted, skipped), and
on the unchanged drive with the same trace, and writes one JSON line per seed: the
variant, DiskSim's per-request service times [ms] on both, and ours.
``python make_random.py golden OUT.jsonl SEED...`` keeps the named seeds as goldens here.
"""
from __future__ import annotations

import gzip
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _disksim_run import run_disksim  # noqa: E402

HERE = Path(__file__).parent
DRIVES = HERE.parents[2] / "data" / "disksim"
#: The bundled drives, the only ones varied (DiskSim's other validation drives are held out).
#: G4_4TB is left out: this 32-bit DiskSim 4.0 build failed on all 6 G4_4TB variants of an earlier
#: run (2 "unexpected request location: blkno 2147483647" past 2**31 blocks, 2 layout_g4.c slipcount
#: assertions, 2 write segment counts it rejects), nothing to compare with.
BUNDLED = ("atlas10k", "atlas_III", "barracuda", "cheetah4LP", "hp_c2247a", "hp_c2490a", "ibm18es",
           "maxtor300g")
#: The traced drive whose .parv (validate topology: driver, buses, controller) replaces the
#: synthetic-workload .parv of the untraced drives; its buses and controller add no time.
VALIDATE_PARV_FROM = "cheetah4LP"
REQUESTS = 1500


def _flag(rng):
    return rng.randint(0, 1)


def _ms(top):
    return lambda rng: round(rng.choice((0.0, rng.uniform(0.0, top))), 4)


def _fraction(rng):
    return rng.choice((0.0, 0.25, 0.5, 0.75, 1.0, round(rng.random(), 3)))


#: diskspecs key -> sampler. Legal ranges: DiskSim 4.0's disk_loadparams (src/modules/disksim_disk_param.c).
SAMPLERS = {
    "Number of buffer segments": lambda rng: rng.randint(1, 16),
    "Segment size (in blks)": lambda rng: int(2 ** rng.uniform(4, 10.5)),
    "Buffer continuous read": lambda rng: rng.randint(0, 4),
    "Maximum read-ahead (blks)": None,            # set from the segment size (below)
    "Minimum read-ahead (blks)": None,
    "Read-ahead over requested": _flag,
    "Read-ahead on idle hit": _flag,
    "Fast write level": lambda rng: rng.randint(0, 2),
    "Use separate write segment": _flag,
    "High (read) water mark": _fraction,
    "Low (write) water mark": _fraction,
    "Allow read hits on write data": _flag,
    "Allow almost read hits": _flag,
    "Stop prefetch in sector": _flag,
    "Time scale for overheads": lambda rng: round(rng.uniform(0.5, 2.0), 3),
    "Hold bus entire read xfer": _flag,
    "Hold bus entire write xfer": _flag,
    "Read disconnect afterread": _ms(0.4),
    "Read disconnect afterwrite": _ms(0.4),
    "Never disconnect": _flag,
    "Immediate buffer read": _flag,
    "Immediate buffer write": _flag,
    "Allow write prebuffering": _flag,
    "Read any free blocks": _flag,
    "Per-request overhead time": _ms(0.3),
    "First reselect overhead": _ms(0.1),
    "Other reselect overhead": _ms(0.1),
    "Data preparation overhead": _ms(0.1),
    "Write disconnect overhead": _ms(0.1),
    "Read completion overhead": _ms(0.1),
    "Write completion overhead": _ms(0.1),
    "Minimum seek delay": _ms(0.5),
    "Bulk sector transfer time": lambda rng: round(rng.uniform(0.01, 0.15), 4),
}
#: Keys of the cache and bus, drawn more often: their interactions are what single changes miss.
CORE = ("Number of buffer segments", "Segment size (in blks)", "Buffer continuous read", "Maximum read-ahead (blks)",
        "Fast write level", "Read-ahead over requested", "Read-ahead on idle hit", "Use separate write segment",
        "High (read) water mark", "Allow read hits on write data", "Hold bus entire read xfer",
        "Stop prefetch in sector", "Minimum read-ahead (blks)", "Allow almost read hits")
RPMS = (4002, 5400, 7200, 10025, 12000, 15000)


def _specs_value(text: str, key: str) -> str:
    m = re.search(r"^\s*" + re.escape(key) + r"\s*=\s*([^,\n]*)", text, re.M)
    assert m, key
    return m.group(1).strip()


def variant(seed: int) -> dict:
    """The variant of *seed*: drive, changed diskspecs keys, model rpm, trace shape."""
    rng = random.Random(seed)
    drive = rng.choice(BUNDLED)
    specs = next((DRIVES / drive).glob("*.diskspecs")).read_text()
    keys = set(rng.sample(CORE, rng.randint(3, 6))) | set(rng.sample(sorted(SAMPLERS), rng.randint(1, 4)))
    changes = {}
    for key in sorted(keys):
        present = re.search(r"^\s*" + re.escape(key) + r"\s*=", specs, re.M)
        if SAMPLERS[key] is not None and present:     # a key the drive's file lacks stays absent
            changes[key] = SAMPLERS[key](rng)
    segment = int(changes.get("Segment size (in blks)", float(_specs_value(specs, "Segment size (in blks)"))))
    if "Maximum read-ahead (blks)" in keys and "Maximum read-ahead (blks)" in specs:
        changes["Maximum read-ahead (blks)"] = rng.choice((0, segment, rng.randint(0, segment)))
    maximum = int(changes.get("Maximum read-ahead (blks)", float(_specs_value(specs, "Maximum read-ahead (blks)"))))
    if "Minimum read-ahead (blks)" in keys and "Minimum read-ahead (blks)" in specs:
        changes["Minimum read-ahead (blks)"] = rng.randint(0, max(maximum, 1))
    rpm = rng.choice(RPMS) if rng.random() < 0.3 else None
    # requests no larger than a segment (as the seeds' traces were made; larger ones, which the
    # simulation follows since, are checked by ../disksim_variants' big_transfers variants)
    return {"seed": seed, "drive": drive, "changes": {k: str(v) for k, v in sorted(changes.items())},
            "rpm": rpm, "requests": REQUESTS, "max_blocks": min(600, segment)}


def trace_lines(seed: int, total_blocks: int, requests: int = REQUESTS, max_blocks: int = 600) -> list[str]:
    """The synthetic trace of *seed* for a drive of *total_blocks* blocks (validate format), requests
    of at most *max_blocks* blocks."""
    rng = random.Random(seed * 7919 + 1)
    rows, history = [], []
    end = 0

    def think():
        r = rng.random()
        if r < 0.35:
            return 0.0
        if r < 0.65:
            return rng.uniform(0, 1500)
        if r < 0.9:
            return rng.uniform(1500, 20000)
        return rng.uniform(20000, 150000)

    def size():
        r = rng.random()
        if r < 0.5:
            return min(rng.choice((1, 2, 4, 8, 8, 16)), max_blocks)
        if r < 0.85:
            return min(rng.randint(1, 128), max_blocks)
        return min(rng.randint(128, 600), max_blocks)

    while len(rows) < requests:
        kind = rng.random()
        write = rng.random() < 0.4
        if kind < 0.3:                              # a sequential run
            n, blocks = rng.randint(3, 30), size()
            lbn = rng.randrange(0, total_blocks - n * blocks - 1)
            gap_short = rng.random() < 0.6
            for _ in range(n):
                rows.append((write, lbn, blocks, rng.uniform(0, 300) if gap_short else think()))
                lbn += blocks
        elif kind < 0.45 and history:               # re-read (or rewrite) part of something recent
            lbn, blocks = rng.choice(history[-20:])
            first = lbn + rng.randint(0, blocks - 1)
            count = rng.randint(1, lbn + blocks - first)
            rows.append((rng.random() < 0.2, first, count, think()))
        elif kind < 0.6:                            # just past the previous request (almost hits, appends)
            lbn = min(end + rng.choice((0, 0, rng.randint(1, 40))), total_blocks - 700)
            rows.append((write, lbn, size(), rng.choice((0.0, rng.uniform(0, 2000), think()))))
        else:                                       # random
            blocks = size()
            rows.append((write, rng.randrange(0, total_blocks - blocks), blocks, think()))
        w, lbn, blocks, _ = rows[-1]
        end = lbn + blocks
        history.append((lbn, blocks))
    # the label and the service column (a placeholder) do not enter DiskSim's simulated times
    return [f"{'W' if w else 'R'} Hit {lbn} {blocks} 1000.00000 {gap:.5f}"
            for w, lbn, blocks, gap in rows[:requests]]


def _set(text: str, key: str, value) -> str:
    pattern = re.compile(r"^(\s*)" + re.escape(key) + r"\s*=\s*[^,\n]*(,?)", re.M)   # the block's last key has no comma
    assert pattern.search(text), key
    return pattern.sub(lambda m: f"{m.group(1)}{key} = {value}{m.group(2)}", text, count=1)


def make_folder(var: dict, where: Path, *, changed: bool = True) -> Path:
    """The variant's drive folder under *where* (the unchanged drive when not *changed*), with
    its synthetic trace and a validate .parv (a copy of a traced drive's, for untraced drives)."""
    folder = where / (f"seed{var['seed']}" + ("" if changed else "_base"))
    shutil.copytree(DRIVES / var["drive"], folder)
    for extra in ("README",):
        (folder / extra).unlink(missing_ok=True)
    specs = next(folder.glob("*.diskspecs"))
    if changed:
        text = specs.read_text()
        for key, value in var["changes"].items():
            text = _set(text, key, value)
        specs.write_text(text)
        if var["rpm"] is not None:
            model = next(p for p in folder.glob("*.model") if "Rotation speed" in p.read_text())
            model.write_text(re.sub(r"(Rotation speed \(in rpms\)\s*=\s*)[0-9.]+", rf"\g<1>{var['rpm']}",
                                    model.read_text(), count=1))
    name = re.search(r"disksim_disk\s+(\S+)\s*\{", specs.read_text()).group(1)
    parv = next(folder.glob("*.parv"))
    if not any(folder.glob("*.trace")):      # untraced drive: the traced drive's validate topology
        donor = (DRIVES / VALIDATE_PARV_FROM / f"{VALIDATE_PARV_FROM}.parv").read_text()
        donor = donor.replace(f"source {VALIDATE_PARV_FROM}.diskspecs", f"source {specs.name}")
        donor = re.sub(r"(instantiate \[ disk0 \] as\s+)\S+", rf"\g<1>{name}", donor)
        parv.write_text(donor)
    for old in folder.glob("*.trace"):
        old.unlink()
    return folder


def write_trace(var: dict, folder: Path, total_blocks: int) -> Path:
    path = folder / f"seed{var['seed']}.trace"
    path.write_text("\n".join(trace_lines(var["seed"], total_blocks, var["requests"], var["max_blocks"])) + "\n")
    return path


def simulate(folder: Path):
    """Our per-request service times [ms] of the drive folder and its trace, as DiskSim's code runs."""
    from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive
    from diskmodel.model.simulator.simulate import simulate_requests
    drive = load_disksim_drive(folder)
    params = drive_parameters(drive, disksim_code=True, disksim_access_block_bug=True)   # DiskSim 4.0 exactly
    trace = drive.read_trace()
    return simulate_requests(params, trace.is_write, trace.lbn, trace.blocks, trace.interarrival_s).service_s * 1e3


def total_blocks(folder: Path) -> int:
    from diskmodel.model.disksim_drives.convert import load_disksim_drive, zone_layout
    return int(zone_layout(load_disksim_drive(folder).model).total_blocks)


def run(first: int, count: int, out_path: Path, build: Path) -> None:
    from diskmodel.data.disksim.syntax import DiskSimFormatError
    with out_path.open("a") as out:
        for seed in range(first, first + count):
            var = variant(seed)
            row = dict(var)
            with tempfile.TemporaryDirectory() as tmp:
                folder = make_folder(var, Path(tmp))
                base = make_folder(var, Path(tmp), changed=False)
                try:
                    blocks = total_blocks(folder)
                    for f in (folder, base):
                        write_trace(var, f, blocks)
                    row["ours_ms"] = [round(float(v), 6) for v in simulate(folder)]
                    row["ours_base_ms"] = [round(float(v), 6) for v in simulate(base)]
                except (DiskSimFormatError, ValueError) as exc:     # our simulation refuses the combination
                    row["refused"] = str(exc).split(": ", 1)[-1] if isinstance(exc, DiskSimFormatError) else str(exc)
                else:
                    try:
                        row["disksim_ms"] = run_disksim(build, folder)
                        row["disksim_base_ms"] = run_disksim(build, base)
                    except (RuntimeError, subprocess.TimeoutExpired) as exc:
                        row["disksim_failed"] = str(exc)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(seed, var["drive"], "refused" if "refused" in row else
                  "disksim_failed" if "disksim_failed" in row else "ok", flush=True)


def keep_golden(results: Path, seeds: list[int]) -> None:
    """Keep the named seeds' variants and DiskSim's times (6 decimals) as goldens here, with
    variants.json: each variant, our agreement and DiskSim's demerit of our times as measured
    (ours re-simulated now), and the test's bounds (3 requests of slack, 10 % + 5 us)."""
    import numpy as np
    from diskmodel.model.predictions.validation import disksim_demerit_s
    rows = {r["seed"]: r for r in map(json.loads, results.read_text().splitlines())}
    kept = []
    for seed in seeds:
        r = rows[seed]
        var = variant(seed)
        assert r["changes"] == var["changes"] and r["drive"] == var["drive"], seed
        if not (HERE / f"seed{seed}.disksim_ms.txt.gz").exists():     # DiskSim's times do not change
            with gzip.open(HERE / f"seed{seed}.disksim_ms.txt.gz", "wt") as f:
                f.write("".join(f"{v:.6f}\n" for v in r["disksim_ms"]))
        disksim = np.array([float(f"{v:.6f}") for v in r["disksim_ms"]])
        with tempfile.TemporaryDirectory() as tmp:
            folder = make_folder(var, Path(tmp))
            write_trace(var, folder, total_blocks(folder))
            ours = simulate(folder)
        within = float((np.abs(ours - disksim) < 0.01).mean())
        demerit_ms = disksim_demerit_s(disksim * 1e-3, ours * 1e-3) * 1e3
        kept.append({**{k: var[k] for k in ("seed", "drive", "changes", "rpm", "requests", "max_blocks")},
                     "within_10us": round(within, 4), "demerit_ms": round(demerit_ms, 4),
                     "min_within_10us": round(within - 3 / var["requests"], 4),
                     "max_demerit_ms": round(demerit_ms * 1.1 + 0.005, 4)})
    (HERE / "variants.json").write_text(json.dumps(kept, indent=1) + "\n")


#: Drives prebuffering fast writes into several write segments, served first come first served
#: (disksim_support: "Maximum number of write segments" with "Allow write prebuffering" = 1): name ->
#: (drive, keys changed, seeds of trace_lines, requests). maxtor300g run at policy 1 and at its own
#: scheduler's policy 21 (shortest positioning time first, "_sptf"); DiskSim 4.0 fails on most
#: synthetic traces of the unchanged maxtor300g (disk_buffer_sector_done's fpcheck, an
#: ioqueue_get_specific_request_from_subqueue assertion, "Tail hits not currently allowed"): of
#: seeds 10-40 at 400 requests it completed 11, 12, 19, 23, 25, 28, 33 and 39, and at policy 1 all
#: of them but 12. atlas10k with 3 write segments: DiskSim completed seeds 1, 3 and 5 of 1-6 at
#: policy 1, 1-4 of 1-6 at policy 21 (5 and 6: disk_buffer_transfer_size's seg_owner->inblkno
#: assertion).
WRITE_SEGMENT_SETS = {
    "maxtor300g_fcfs": ("maxtor300g", {"Scheduling policy": "1"}, (11, 19, 23, 25, 28, 33, 39), 400),
    "atlas10k_ws3": ("atlas10k", {"Allow write prebuffering": "1", "Maximum number of write segments": "3"},
                     (1, 3, 5), 1500),
    "maxtor300g_sptf": ("maxtor300g", {}, (11, 12, 19, 23, 25, 28, 33, 39), 400),
    "atlas10k_ws3_sptf": ("atlas10k", {"Allow write prebuffering": "1", "Maximum number of write segments": "3",
                                       "Scheduling policy": "21"}, (1, 2, 3, 4), 1500),
}


def write_segment_variant(name: str, seed: int) -> dict:
    """Variant *seed* of the WRITE_SEGMENT_SETS entry *name* (requests of at most a segment)."""
    drive, changes, _, requests = WRITE_SEGMENT_SETS[name]
    specs = next((DRIVES / drive).glob("*.diskspecs")).read_text()
    segment = int(float(_specs_value(specs, "Segment size (in blks)")))
    return {"seed": seed, "drive": drive, "changes": dict(changes), "rpm": None, "requests": requests,
            "max_blocks": min(600, segment)}


def keep_write_segments(build: Path, names=()) -> None:
    """Run DiskSim on every WRITE_SEGMENT_SETS variant (of the sets *names*, all when empty; the
    others' entries of write_segments.json are kept as they are); keep its times (6 decimals) as
    ws_NAME_seedN.disksim_ms.txt.gz and write_segments.json (our agreement, 3 requests of slack)."""
    import numpy as np
    old = json.loads((HERE / "write_segments.json").read_text()) if names else []
    kept = [k for k in old if k["set"] not in names]
    for name, (_, _, seeds, _) in WRITE_SEGMENT_SETS.items():
        if names and name not in names:
            continue
        for seed in seeds:
            var = write_segment_variant(name, seed)
            with tempfile.TemporaryDirectory() as tmp:
                folder = make_folder(var, Path(tmp))
                write_trace(var, folder, total_blocks(folder))
                disksim = np.array([float(f"{v:.6f}") for v in run_disksim(build, folder)])
                ours = simulate(folder)
            with gzip.open(HERE / f"ws_{name}_seed{seed}.disksim_ms.txt.gz", "wt") as f:
                f.write("".join(f"{v:.6f}\n" for v in disksim))
            within = float((np.abs(ours - disksim) < 0.01).mean())
            kept.append({"set": name, "seed": seed, "within_10us": round(within, 4),
                         "min_within_10us": round(within - 3 / var["requests"], 4)})
            print(name, seed, within, flush=True)
    (HERE / "write_segments.json").write_text(json.dumps(kept, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]),
            Path(sys.argv[5] if len(sys.argv) > 5 else "/tmp/disksim-build"))
    elif sys.argv[1] == "golden":
        keep_golden(Path(sys.argv[2]), [int(s) for s in sys.argv[3:]])
    elif sys.argv[1] == "write_segments":
        keep_write_segments(Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/disksim-build"), tuple(sys.argv[3:]))
    else:
        raise SystemExit(__doc__)
