"""The path's legs as functions of how long it sat idle and how long the server held the request.

A request's way in (submission to the server's entry) is longer the longer the path sat idle before it,
and its way back (the server's answer to the caller's completion) the longer the server held it: each leg
ends in the wake-up of a thread that slept meanwhile (the server's for the way in, the caller's for the
way back), and a thread that slept long wakes on a CPU that went into a deeper idle state (on a virtual
machine a halted vCPU, woken through the hypervisor: ``haltpoll_select`` in
drivers/cpuidle/governors/haltpoll.c polls only briefly before it halts). The legs measured by size at
start (:mod:`~diskmodel.calibrate.emulate.path_probe`) are at one idle gap and one hold; the tables here
give each leg's change from there (from each leg measured by size, at the shape probe's own size), measured
at start too (:func:`shape_tables`), so that back-to-back
requests arrive at the drive when their caller issued them, not earlier by what the path saves when busy.

A table is ``((x_s, delta_s), ...)`` by x, nondecreasing in delta (the pool-adjacent-violators fit of the
measured medians; Barlow et al., Statistical Inference under Order Restrictions, 1972), read on the line
between its points and flat beyond them.
"""
from __future__ import annotations

import statistics

__all__ = ["hold_for", "isotonic", "shape_tables", "table_at", "table_from"]


def isotonic(values) -> list[float]:
    """The nondecreasing sequence nearest *values* in least squares (pool adjacent violators, equal weights)."""
    blocks: list[list[float]] = []   # [sum, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    out = []
    for s, n in blocks:
        out += [s / n] * int(n)
    return out


def table_from(pairs) -> tuple[tuple[float, float], ...] | None:
    """A table from ``[[x_s, delta_s], ...]`` (a control file's), checked: distinct x >= 0, finite deltas,
    nondecreasing; None for none."""
    if not pairs:
        return None
    table = tuple(sorted((float(x), float(d)) for x, d in pairs))
    xs = [x for x, _ in table]
    if len(set(xs)) != len(xs) or xs[0] < 0 or any(not abs(d) < 1.0 for _, d in table) \
            or any(b[1] < a[1] for a, b in zip(table, table[1:])):
        raise ValueError(f"a leg's table must give distinct times >= 0 and nondecreasing changes (got {pairs!r})")
    return table


def table_at(table, x: float) -> float:
    """*table* read at *x* [s]: on the line between the two points around it, flat beyond the ends; 0 for None."""
    if not table:
        return 0.0
    if x <= table[0][0]:
        return table[0][1]
    for (x0, d0), (x1, d1) in zip(table, table[1:]):
        if x <= x1:
            return d0 + (d1 - d0) * (x - x0) / (x1 - x0)
    return table[-1][1]


def hold_for(to_completion_s: float, back_s: float, table) -> float:
    """How long the server holds a request so that its caller sees it complete *to_completion_s* after its
    entry: the h >= 0 with ``h + back_s + table_at(table, h) = to_completion_s`` (the way back is
    *back_s* changed by *table* for the hold h). Where even an answer at once is late, the negative hold
    by which it is (the deadline already passed). The left side grows with h (the table is nondecreasing),
    so the root is found on the segment that holds it; without a table, ``to_completion_s - back_s``."""
    def f(h):
        return h + back_s + table_at(table, h)

    if f(0.0) >= to_completion_s:
        return to_completion_s - f(0.0)
    knots = [0.0] + [x for x, _ in (table or ()) if x > 0.0]
    for a, b in zip(knots, knots[1:]):
        fa, fb = f(a), f(b)
        if fb >= to_completion_s:
            return a + (b - a) * (to_completion_s - fa) / (fb - fa)
    return to_completion_s - back_s - (table[-1][1] if table else 0.0)


def _points(groups: dict, ref_s: float) -> list[list[float]]:
    """``[[median x, delta], ...]``: each group's median x and median leg, the legs fitted nondecreasing in x
    and taken less *ref_s*; groups of fewer than three are left out."""
    pts = sorted((statistics.median(xs), statistics.median(ys)) for xs, ys in groups.values() if len(xs) >= 3)
    if len(pts) < 2:
        return []
    fitted = isotonic([y for _, y in pts])
    merged: list[list[float]] = []
    for (x, _), y in zip(pts, fitted):
        if merged and x <= merged[-1][0]:
            continue
        merged.append([x, y - ref_s])
    return merged


def shape_tables(rows, *, ref_in_s: float, ref_back_s: float) -> dict:
    """The legs' tables from the shape probe's reads, for a control file: ``path_in_by_idle`` (the way in by
    the time the server sat idle before the entry, less *ref_in_s*) and ``path_back_by_hold`` (the way back
    by the hold, less *ref_back_s*): the refs are the legs measured by size at the shape probe's size, so that
    a request's leg is its size's plus the table's change, and the table alone sets the level at its size.
    *rows*: ``(gap_s, delay_s, idle_s, way_in_s, held_s, way_back_s)`` of each read after the warm-up,
    grouped by the caller's gap for the way in and by the server's delay for the way back."""
    by_gap: dict[float, tuple[list, list]] = {}
    by_delay: dict[float, tuple[list, list]] = {}
    for gap, delay, idle, way_in, held, way_back in rows:
        xs, ys = by_gap.setdefault(round(gap, 9), ([], []))
        xs.append(idle)
        ys.append(way_in)
        xs, ys = by_delay.setdefault(round(delay, 9), ([], []))
        xs.append(held)
        ys.append(way_back)
    return {"path_in_by_idle": _points(by_gap, ref_in_s), "path_back_by_hold": _points(by_delay, ref_back_s)}
