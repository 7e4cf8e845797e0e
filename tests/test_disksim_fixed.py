"""The per-request simulation against DiskSim 4.0 with g1_access_block's test mended (golden data:
tests/golden/disksim_fixed/, see its README.md): an immediate read access ("Read any free blocks")
starts at the next sector boundary under the head (model/simulator/access_block.py); and
disksim_access_block_bug=True against DiskSim 4.0 itself (tests/golden/disksim_full)."""
from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from diskmodel.data.disksim.syntax import DiskSimFormatError
from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive
from diskmodel.model.simulator.simulate import simulate_requests

GOLDEN = Path(__file__).resolve().parent / "golden" / "disksim_fixed"
FULL = Path(__file__).resolve().parent / "golden" / "disksim_full"
VARIANTS = json.loads((GOLDEN / "variants.json").read_text())
TOLERANCE_MS = 0.010

#: Requests within 10 us of the mended build, of all: (mended simulation, simulation with the bug flag).
#: hp_c2247a's are not followed (README.md): the mended build there loses a revolution, or gains
#: none, where the rule of atlas10k and ibm18es gains or keeps the time.
AGREE = {"atlas10k": ((10000, 10000), (9633, 10000)),
         "ibm18es": ((10000, 10000), (9994, 10000)),
         "atlas10k_read_any_free_0": ((10000, 10000), (10000, 10000)),
         "hp_c2247a_immediate_read_1": ((193, 400), (193, 400)),
         "hp_c2247a_read_any_free_1": ((9074, 9999), (9756, 9999))}


def _times(path: Path) -> np.ndarray:
    with gzip.open(path, "rt") as f:
        return np.array([float(line) for line in f if line.strip()])


def _make_folder(variant, where: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "make_variants", Path(__file__).resolve().parent / "golden" / "disksim_variants" / "make_variants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_folder(variant, where)


@pytest.mark.parametrize("variant", VARIANTS, ids=[v["name"] for v in VARIANTS])
def test_simulation_agrees_with_the_mended_disksim(variant, tmp_path):
    disksim_ms = _times(GOLDEN / f"{variant['name']}.service_ms.txt.gz")
    drive = load_disksim_drive(_make_folder(variant, tmp_path))
    trace = drive.read_trace()
    assert trace.lbn.size == disksim_ms.size
    counts = []
    for bug in (False, True):
        if not bug and variant["drive"] == "hp_c2247a" and "Read any free blocks" in variant["changes"]:
            # refused with the line mended (model/disksim_drives/honoured.py: IMMEDIATE_ACCESS_SPARING); the rule forced
            with pytest.raises(DiskSimFormatError, match="Read any free blocks = 1 .* honoured only on g1"):
                drive_parameters(drive, disksim_access_block_bug=False)
            params = drive_parameters(drive).evolve(
                read_any_free_blocks=True, immediate_access_under_head=True)
        else:
            params = drive_parameters(drive, disksim_access_block_bug=bug)
        ours_ms = simulate_requests(params, trace.is_write, trace.lbn, trace.blocks,
                                    trace.interarrival_s).service_s * 1e3
        counts.append((int((np.abs(ours_ms - disksim_ms) <= TOLERANCE_MS).sum()), disksim_ms.size))
    assert tuple(counts) == AGREE[variant["name"]]


@pytest.mark.parametrize("name", ["atlas10k", "ibm18es"])
def test_the_mended_build_changes_only_reads_of_these_drives(name):
    # DiskSim's own times: the mended build against 4.0 (> 1 us apart), all reads; 4.0's rms tool on
    # the mended runs prints 0.158898 and 0.135767 (4.0: 0.267721, 0.135884)
    mended, original = _times(GOLDEN / f"{name}.service_ms.txt.gz"), _times(FULL / f"{name}.service_ms.txt.gz")
    changed = np.abs(mended - original) > 1e-3
    assert int(changed.sum()) == {"atlas10k": 694, "ibm18es": 1291}[name]
    assert int((np.abs(mended - original) > TOLERANCE_MS).sum()) == {"atlas10k": 367, "ibm18es": 6}[name]


def _toy(**changes):
    from _toy_drive import toy_drive
    # no overheads but the completion (0.1 ms), an instant bus, no read-ahead: the media alone
    return toy_drive(command_overhead_s=np.zeros((2, 2, 2)), bus_read_block_s=0.0, read_ahead_scheme=0,
                     max_read_ahead_blocks=0, **changes)


@pytest.mark.parametrize("start_ms, mended_ms, original_ms", [
    # the head lands at sector 15.5, inside the read of sectors 10..29: the mended access starts at
    # sector 16 (1.6 ms), reads 16..29, on to the track's end (10.0 ms) and round: 0..15 (11.6 ms),
    # when blocks 16..29 reach the host with block 15: 11.6 - 1.55 + 0.1. DiskSim 4.0 waits for
    # sector 10 (11.0 ms) and reads 20 sectors (13.0 ms): 13.0 - 1.55 + 0.1
    (1.55, 10.15, 11.55),
    # landing at sector 5.5, before the first: both wait for sector 10 (1.0 ms), 3.0 - 0.55 + 0.1
    (0.55, 2.55, 2.55),
    # landing inside the track's last sector (99.5): outside the span (dm_latency_g1), as 4.0:
    # sector 10 at 11.0 ms, 20 sectors to 13.0 ms: 13.0 - 9.95 + 0.1
    (9.95, 3.15, 3.15),
])
def test_immediate_access_under_head_by_hand(start_ms, mended_ms, original_ms):
    """A toy track of 100 sectors at 6000 rpm (10 ms a revolution, 0.1 ms a sector), no skew; a
    read of blocks 10..29, then one of blocks 0..4."""
    is_write, lbn, blocks, gap = np.array([False, False]), np.array([10, 0]), np.array([20, 5]), np.zeros(2)

    def run(**changes):
        params = _toy(**changes)
        return simulate_requests(params, is_write, lbn, blocks, gap, start_s=start_ms * 1e-3).service_s * 1e3

    mended = run(read_any_free_blocks=True, immediate_access_under_head=True)
    original = run(read_any_free_blocks=False)          # as DiskSim 4.0 runs "Read any free blocks" 1
    manual = run(read_any_free_blocks=True)             # the manual's passing sectors (disksim_code=False)
    assert mended[0] == pytest.approx(mended_ms, abs=1e-9)
    assert original[0] == pytest.approx(original_ms, abs=1e-9)
    assert manual[0] == pytest.approx(original_ms, abs=1e-9)   # it waits for the first block
    if start_ms == 1.55:
        # the mended access read the track's front (blocks 0..9) on its way round: the next read of
        # blocks 0..4 is a hit (the completion alone); DiskSim 4.0 kept 10..29 only. The manual's
        # rule keeps the sectors passing while it waits (16..99, 0..9), a hit too
        assert mended[1] == pytest.approx(0.1, abs=1e-9)
        assert original[1] > 1.0
        assert manual[1] == pytest.approx(0.1, abs=1e-9)
    if start_ms == 0.55:
        # landing before the first block: the mended access keeps nothing before it, the manual's
        # rule the passing sectors 6..9 (not 0..4: a miss too)
        assert mended[1] > 1.0 and original[1] > 1.0


def test_the_bug_flag_is_a_bool(disksim_dir):
    drive = load_disksim_drive(disksim_dir / "atlas10k")
    # DiskSim 4.0 exactly by default; the mended line on request
    assert not drive_parameters(drive).immediate_access_under_head
    assert drive_parameters(drive, disksim_access_block_bug=False).immediate_access_under_head
    assert not drive_parameters(drive, disksim_code=False, disksim_access_block_bug=False).immediate_access_under_head
    with pytest.raises(ValueError, match="disksim_access_block_bug must be True or False"):
        drive_parameters(drive, disksim_access_block_bug="no")
    with pytest.raises(ValueError, match="immediate_access_under_head"):
        drive_parameters(drive, disksim_access_block_bug=False).evolve(immediate_access_under_head=2)
