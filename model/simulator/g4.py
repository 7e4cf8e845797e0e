"""LBN -> PBN mapping of DiskSim's table-driven g4 layout (``dm_layout_g4``).

DiskSim 4.0's g4 layout (Ganger et al., DiskSim 4.0,
``diskmodel/layout_g4.c`` and ``layout_g4_load.c``) describes a drive as a
tree of tables, re-derived here:

* *track patterns* (``TP``, ``struct track``): a track holding sectors
  ``low .. high`` of ``spt`` physical sectors, each ``1 / spt`` of a
  revolution wide (``g4_load_tp``: ``sw = dm_angle_dtoi(1.0 / spt)``);
* *index sections* (``IDX``, ``struct idx``), the last one the root: each
  entry covers ``runlen`` blocks from ``lbn`` (relative to its parent's
  instance) and repeats its child (a track pattern on ``head``, or another
  section) every ``len`` blocks, each repeat ``cyllen`` cylinders further
  on (back, where ``cylrunlen`` < 0: serpentine layouts) and ``alen`` of a
  revolution later, from angle ``off``;
* *slips* (``struct slip``): from block ``lbn`` on, a running total
  (``count``, negative for spares) is added before the tree is walked
  (``slipcount``);
* *remaps* (``struct remap``): ``count`` blocks from ``lbn`` live from
  (cylinder, head, sector) on; looked up first (``remap_lbn`` in ``ltop``).

DiskSim's ``ltop`` walks the tree from the root for every block
(``g4_recurse``, ``g4_r``). Here the tree is expanded once
(:func:`g4_rows`) into one row per run of a track-pattern entry (a "leaf
range": one head, a run of cylinders), in block order, so a block is one
binary search and a division away (:func:`g4_lbn_to_pbn_one`, a numba
kernel shared with :mod:`diskmodel.model.simulator.simulate` through
:class:`~diskmodel.model.simulator.mapping.G4ZoneLayout`). A block's angle is
DiskSim's ``g4_skew`` of its PBN: the sum, along its path in the tree, of
``off + quot * alen`` and ``sector * sw``, in DiskSim's fixed point
(``dm_angle_t``: 2^32 to a revolution, wrapping; ``convert.c``
``dm_angle_dtoi``), returned in revolutions.

Where DiskSim maps a block to nothing (``DM_NX``: blocks past the root's
last entry, a gap between entries, a within-track offset below a pattern's
``low``), :func:`g4_rows` raises ValueError for the gap and the offset, and
the exported block count stops at the last block mapped
(:func:`g4_mapped_blocks`). Pure numpy and numba; no I/O.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["G4_ROW_FIELDS", "angle_dtoi", "g4_lbn_to_pbn_one", "g4_mapped_blocks", "g4_remap_table",
           "g4_row_cylinders", "g4_rows", "g4_slip_table"]

#: Columns of :func:`g4_rows`: first block, cylinder of the first repeat,
#: cylinders per repeat (signed), blocks per repeat (``len``), blocks in the
#: row, head, track pattern's low sector and spt, angle of the first block
#: [2^-32 rev], angle per repeat, sector width, track pattern's high sector.
G4_ROW_FIELDS = ("lbn", "cyl", "step", "len", "run", "head", "low", "spt", "angle", "alen", "sw", "high")
_LBN, _CYL, _STEP, _LEN, _RUN, _HEAD, _LOW, _SPT, _ANGLE, _ALEN, _SW, _HIGH = range(12)
_TURN = 1 << 32
_MASK = _TURN - 1
#: DiskSim's path buffer (layout_g4_private.h G4_ALLOC_PATH): the root and 15 levels below
_MAX_DEPTH = 16


def angle_dtoi(fraction) -> np.ndarray:
    """DiskSim's ``dm_angle_dtoi`` (convert.c): a fraction of a revolution as
    ``dm_angle_t`` (``uint32``, 2^32 to a turn): the whole turns of a value
    above 1 dropped, then truncated; as int64."""
    a = np.asarray(fraction, dtype=float)
    a = np.where(a > 1.0, a - np.trunc(a), a)
    # x86-64 converts through a 64-bit integer: 1.0 (2^32) wraps to 0
    return np.trunc(a * _TURN).astype(np.int64) & _MASK


def g4_rows(tp, idx, child_types) -> np.ndarray:
    """The g4 tree expanded: (n, 12) int64 rows (:data:`G4_ROW_FIELDS`), one per
    run of a track-pattern entry, in block order, covering blocks 0 .. end
    without a gap.

    *tp*: (t, 3) rows (low, high, spt); *idx*: index sections, rows of
    (lbn, cyl, off, len, cyllen, alen, runlen, cylrunlen, child, head), the
    last the root; *child_types*: "TRACK" or "IDX" per entry (as
    :class:`~diskmodel.data.disksim.model_file.G4Layout` holds them).
    """
    tp = np.asarray(tp, dtype=np.int64).reshape(-1, 3)
    sw = angle_dtoi(1.0 / tp[:, 2])
    rows = []

    def expand(section, lbn_base, cyl_base, angle_base, limit, depth):
        if depth >= _MAX_DEPTH:
            raise ValueError(f"g4 layout nests index sections deeper than DiskSim's {_MAX_DEPTH} levels")
        table = idx[section]
        off = angle_dtoi(table[:, 2])
        alen = angle_dtoi(table[:, 5])
        for k, kind in enumerate(child_types[section]):
            lbn, cyl, _, length, cyllen, _, runlen, cylrunlen, child, head = (int(v) for v in table[k])
            start = lbn_base + lbn
            end = min(start + runlen, limit)
            if start >= end:
                continue
            step = -cyllen if cylrunlen < 0 else cyllen
            angle = (angle_base + int(off[k])) & _MASK
            if kind == "TRACK":
                low, high, spt = (int(v) for v in tp[child])
                # DiskSim's g4_r checks the offset in the track (0 .. len-1) against low .. high
                if low > 0 or min(length, end - start) - 1 > high:
                    raise ValueError(f"g4 track pattern {child} (sectors {low}..{high}) cannot hold offsets "
                                     f"0..{min(length, end - start) - 1} of the entry at lbn {start}: "
                                     "DiskSim's ltop maps such blocks to nothing")
                rows.append((start, cyl_base + cyl, step, length, end - start, head, low, spt, angle,
                             int(alen[k]), int(sw[child]), high))
                continue
            for q in range(-(-(end - start) // length)):
                first = start + q * length
                expand(child, first, cyl_base + cyl + q * step, (angle + q * int(alen[k])) & _MASK,
                       min(end, first + length), depth + 1)

    root = len(idx) - 1
    expand(root, 0, 0, 0, int(idx[root][:, 0].max() + idx[root][:, 6].max()) + 1, 0)
    table = np.array(rows, dtype=np.int64).reshape(-1, len(G4_ROW_FIELDS))
    if not table.size:
        raise ValueError("g4 layout maps no block")
    ends = table[:, _LBN] + table[:, _RUN]
    gaps = np.flatnonzero(table[1:, _LBN] != ends[:-1])
    if table[0, _LBN] != 0 or gaps.size:
        at = 0 if table[0, _LBN] != 0 else int(ends[gaps[0]])
        raise ValueError(f"g4 layout leaves blocks from {at} unmapped (or maps them twice) before its end "
                         f"{int(ends[-1])}: DiskSim's ltop maps them to nothing")
    return table


def g4_row_cylinders(rows) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) cylinder each row of :func:`g4_rows` touches."""
    rows = np.asarray(rows)
    repeats = -(-rows[:, _RUN] // rows[:, _LEN])
    far = rows[:, _CYL] + (repeats - 1) * rows[:, _STEP]
    return np.minimum(rows[:, _CYL], far), np.maximum(rows[:, _CYL], far)


def g4_slip_table(slips) -> np.ndarray:
    """DiskSim's slip list (``g4_load_slips``): (lbn, running total) rows, with
    a (0, 0) row first where the first slip is past block 0."""
    slips = np.asarray(slips, dtype=np.int64).reshape(-1, 2)
    if not slips.size:
        return np.zeros((0, 2), np.int64)
    if np.any(np.diff(slips[:, 0]) < 0):
        raise ValueError("g4 slips must be listed in increasing lbn order (DiskSim binary-searches them)")
    table = np.column_stack((slips[:, 0], np.cumsum(slips[:, 1])))
    if table[0, 0] > 0:
        table = np.vstack(([[0, 0]], table))
    return table


def g4_remap_table(remaps) -> np.ndarray:
    """DiskSim's remap list (``g4_load_remaps``): (lbn, count, cylinder, head, sector) rows."""
    remaps = np.asarray(remaps, dtype=np.int64).reshape(-1, 6)
    if np.any(remaps[:, 1] < 1):
        raise ValueError("g4 remaps must move at least one block each")
    return np.ascontiguousarray(remaps[:, :5])


def g4_mapped_blocks(rows, slips, block_count: int) -> int:
    """Blocks DiskSim's ``ltop`` maps: at most *block_count*, and only those whose
    slipped number lies within the rows (past them it returns ``DM_NX``)."""
    end = int(rows[-1, _LBN] + rows[-1, _RUN])
    total = min(int(block_count), end - (int(slips[-1, 1]) if slips.size else 0))
    while total > 0 and total - 1 + _slipcount(slips, total - 1) >= end:
        total -= 1
    return total


@njit(cache=True)
def _slipcount(slips, lbn):
    # layout_g4.c slipcount, with slipcount_bins as a loop. DiskSim keeps the
    # running lbn in an int (truncating lbns >= 2^31); here it stays 64-bit.
    n = slips.shape[0]
    if n == 0:
        return 0
    lo = 0
    hi = n
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        if slips[mid, 0] > lbn:
            hi = mid
        else:
            lo = mid
    i = lo
    ct = slips[i, 1]
    l2 = lbn
    while i < n and slips[i, 0] <= l2:
        ct = slips[i, 1]
        l2 = lbn + ct
        i += 1
    return ct


@njit(cache=True)
def _row_of(lbn, first_lbn):
    lo = 0
    hi = first_lbn.size - 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if first_lbn[mid] <= lbn:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True)
def _g4_skew(rows, cyl, head, sector):
    # g4_skew of a PBN (the destination of a remap): its row by cylinder and head
    for z in range(rows.shape[0]):
        if rows[z, _HEAD] != head or sector < rows[z, _LOW] or sector > rows[z, _HIGH]:
            continue
        d = cyl - rows[z, _CYL]
        step = rows[z, _STEP]
        if d % step != 0:
            continue
        q = d // step
        if q < 0 or q * rows[z, _LEN] >= rows[z, _RUN]:
            continue
        a = (rows[z, _ANGLE] + q * rows[z, _ALEN] + (sector - rows[z, _LOW]) * rows[z, _SW]) & _MASK
        return a / _TURN, z
    return 0.0, -1


@njit(cache=True)
def g4_lbn_to_pbn_one(lbn, first_lbn, rows, slips, remaps):
    """One block: (cylinder, head, sector, angle_rev, row). Numba kernel.

    *first_lbn*: the rows' first blocks (and one more value, unused);
    *rows*, *slips*, *remaps*: :func:`g4_rows`, :func:`g4_slip_table`,
    :func:`g4_remap_table`. As DiskSim's ``ltop``: a remapped block first,
    else the block moved by the slips, then its row.
    """
    for i in range(remaps.shape[0]):
        if remaps[i, 0] <= lbn and lbn < remaps[i, 0] + remaps[i, 1]:
            cyl = remaps[i, 2]
            head = remaps[i, 3]
            sector = remaps[i, 4] + lbn - remaps[i, 0]
            angle, z = _g4_skew(rows, cyl, head, sector)
            if z < 0:
                z = _row_of(lbn, first_lbn)
            return cyl, head, sector, angle, z
    p = lbn + _slipcount(slips, lbn)
    z = _row_of(p, first_lbn)
    r = p - rows[z, _LBN]
    q = r // rows[z, _LEN]
    offset = r - q * rows[z, _LEN]
    cyl = rows[z, _CYL] + q * rows[z, _STEP]
    a = (rows[z, _ANGLE] + q * rows[z, _ALEN] + offset * rows[z, _SW]) & _MASK
    return cyl, rows[z, _HEAD], rows[z, _LOW] + offset, a / _TURN, z
