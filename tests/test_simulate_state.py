"""The simulator's layout (model/simulator/): every slot of the kernel's arrays named, the named slots
filled from the drive's own parameters, short functions, and no old module path left.
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import numpy as np
import pytest

from diskmodel.model.disksim_drives.convert import drive_parameters, load_disksim_drive
from diskmodel.model.simulator import state
from diskmodel.model.simulator.inputs import kernel_inputs

SIMULATOR = Path(state.__file__).parent
DISKSIM = Path(__file__).resolve().parents[1] / "data" / "disksim"
#: The kernel's arrays whose slots have names in simulator/state.py
STATE_ARRAYS = ("real", "ints", "work", "wq", "stats", "segments", "arrays", "overhead", "misc")
#: An index into one of them that starts with a digit: ``real[3]``, ``wq[3, e]``, ``work[4, :k]``, ``arrays[2][z]``
BARE_INDEX = re.compile(r"\b(" + "|".join(STATE_ARRAYS) + r")\[\s*\d")
OLD_PATHS = {"simulate": "simulate", "simulate_inputs": "inputs", "simulate_session": "session",
             "media_access": "media_access", "disksim_access_block": "access_block",
             "disksim_big_transfer": "big_transfer", "disksim_g2": "g2", "disksim_g4": "g4",
             "disksim_immediate": "immediate", "disksim_mapping": "mapping", "disksim_nocache": "nocache",
             "disksim_read_direct": "read_direct", "disksim_readahead": "readahead",
             "disksim_segments": "segments", "disksim_writequeue": "writequeue"}


def _slots(prefix: str) -> dict[str, int]:
    return {name: value for name, value in vars(state).items()
            if name.startswith(prefix) and isinstance(value, int) and not name.endswith(("_SLOTS", "_ROWS"))
            and name != "REAL_READ_DISCONNECTS"}


def test_no_bare_numeric_index_into_a_state_array():
    found = []
    for path in sorted(SIMULATOR.glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if BARE_INDEX.search(line):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_grep_finds_a_bare_index():
    # the pattern above catches the forms the kernel used before its slots had names
    for line in ("period = real[0]", "wq[3, 5] = policy", "work[4, :k + 1] = table", "n = arrays[2][z]",
                 "stats[1] = t - t0", "x = ints[ 12]"):
        assert BARE_INDEX.search(line), line
    for line in ("period = real[REAL_PERIOD_S]", "wq[WQ_STATE, WQS_POLICY]", "c = carried[0]"):
        assert not BARE_INDEX.search(line), line


@pytest.mark.parametrize("prefix, size", [("REAL_", state.REAL_SLOTS), ("INT_", state.INT_SLOTS),
                                          ("SEG_", state.SEG_ROWS), ("WORK_", state.WORK_ROWS),
                                          ("WQ_", state.WQ_ROWS), ("WQS_", state.WQS_SLOTS)])
def test_each_slot_has_one_name(prefix, size):
    slots = _slots(prefix)
    if prefix == "REAL_":
        # the two read disconnect overheads (after a read, after a write) are one named pair
        slots["REAL_READ_DISCONNECT_S+1"] = state.REAL_READ_DISCONNECT_S + 1
    assert sorted(slots.values()) == list(range(size)), slots


def test_the_named_slots_hold_the_drives_parameters():
    # the kernel's arrays read back by name give the drive's own numbers (DriveParameters' fields)
    p = drive_parameters(load_disksim_drive(DISKSIM / "atlas10k"))
    k = kernel_inputs(p, 8)
    assert k.real.shape == (state.REAL_SLOTS,) and k.ints.shape == (state.INT_SLOTS,)
    assert k.real[state.REAL_PERIOD_S] == 60.0 / p.rpm
    assert k.real[state.REAL_HEAD_SWITCH_S] == p.head_switch_s
    assert k.real[state.REAL_BUS_READ_BLOCK_S] == p.bus_read_block_s
    assert k.real[state.REAL_BUS_WRITE_BLOCK_S] == p.bus_write_block_s
    assert k.real[state.REAL_MIN_WRITE_SEEK_S] == p.minimum_write_seek_s
    assert k.ints[state.INT_SEGMENTS] == p.buffer_segments
    assert k.ints[state.INT_SEGMENT_BLOCKS] == p.segment_size_blocks
    assert k.ints[state.INT_MAX_READ_AHEAD] == p.max_read_ahead_blocks
    assert k.ints[state.INT_FAST_WRITE_LEVEL] == p.fast_write_level
    assert k.ints[state.INT_SCHEDULING_POLICY] == p.queue_scheduling_policy
    assert k.segments.shape == (state.SEG_ROWS, p.buffer_segments)
    assert k.work.shape[0] == state.WORK_ROWS
    layout = p.layout.kernel_arrays()
    assert np.array_equal(layout[state.LAYOUT_SECTORS_PER_TRACK], p.layout.sectors_per_track)
    assert layout[state.LAYOUT_SHAPE][state.SHAPE_SURFACES] == p.layout.surfaces


@pytest.mark.parametrize("old, new", sorted(OLD_PATHS.items()))
def test_the_old_module_paths_are_gone(old, new):
    """Each module has one path: the old flat one neither exists nor imports."""
    assert (SIMULATOR / f"{new}.py").is_file()
    assert not (SIMULATOR.parent / f"{old}.py").exists()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"diskmodel.model.{old}")


def _long_functions(limit: int) -> list[str]:
    long = []
    for path in sorted(SIMULATOR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    return long


def test_no_function_over_150_lines():
    assert not _long_functions(150), _long_functions(150)


def test_no_module_over_600_lines():
    long = [f"{p.name} ({n} lines)" for p in sorted(SIMULATOR.glob("*.py"))
            if (n := len(p.read_text().splitlines())) > 600]
    assert not long, long


#: The simulator's helpers that still take more than 8 parameters (to be bundled into the drive, buffer and
#: carried records as the kernel's phases are): this list can only shrink.
KNOWN_LONG_SIGNATURES = {
    "access_block.py:_sector_start", "access_block.py:immediate_read_run", "access_block.py:immediate_write_track",
    "immediate.py:_front_after_swap", "immediate.py:_hold_immediate", "media_access.py:_late_write_on_short_track",
    "media_access.py:move_time_s", "media_access.py:access_media", "readahead.py:_read_ahead_limit",
    "readahead.py:_stop_read_ahead", "readahead.py:_extend_read_ahead", "readahead.py:_block_sent",
    "readahead.py:_send_read_blocks_at", "readahead.py:_read_to_minimum", "readahead.py:_hold_read_ahead",
    "readahead.py:_minimum_covers", "segments.py:_write_segment", "segments.py:_extra_disconnect_segment",
    "writequeue.py:_positioning_estimate_s", "writequeue.py:_sptf_pick", "writequeue.py:_lbn_pick",
    "writequeue.py:_pick_next", "writequeue.py:_write_access", "writequeue.py:_run_chain", "writequeue.py:_chain",
    "writequeue.py:_prebuffered", "writequeue.py:_prebuffered_new", "writequeue.py:_read_slot",
    "writequeue.py:_resume_after_read", "writequeue.py:_read_ahead_stop_after_read",
}


def test_no_new_helper_over_8_parameters():
    long = set()
    for path in sorted(SIMULATOR.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and len(node.args.args) + len(node.args.kwonlyargs) > 8:
                long.add(f"{path.name}:{node.name}")
    assert sorted(long - KNOWN_LONG_SIGNATURES) == [], "a new helper over 8 parameters: bundle them"
    assert sorted(KNOWN_LONG_SIGNATURES - long) == [], "bundled: take it off KNOWN_LONG_SIGNATURES"


@pytest.mark.parametrize("module", ["kernel", "read_path", "write_path"])
def test_the_kernels_phases_take_the_bundles(module):
    # every phase of the request loop takes the drive, the buffer and the carried record, and at most 8 in all
    tree = ast.parse((SIMULATOR / f"{module}.py").read_text())
    phases = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert phases
    for node in phases:
        names = [a.arg for a in node.args.args]
        assert len(names) <= 8, (node.name, names)
        if node.name not in ("_simulate", "_written_on"):
            assert names[:3] == ["drive", "buf", "c"], (node.name, names)
