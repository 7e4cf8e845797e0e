"""The live files of a PostMark run in expectation, transaction by transaction.

:func:`diskmodel.model.predictions.workload.expected_counts` counts a PostMark run's
operations; this module follows the population of live files through the
transactions, which is where the counts come from, in expectation.

Write g = high - size for a file's *gap* below the ceiling.  A new file has g uniform on
1 .. high-low; an append maps g to a uniform value on 0 .. g-1 (g = 0 is
absorbing).  The gap distribution after k appends, A^k p0, is computed
exactly on the integers (a reverse cumulative sum per append) for
k = 0 .. K, with K large enough that A^K p0 is absorbed at g = 0 to within
1e-12.  The live files are then tracked as expected numbers c_k of files
that have received k appends, under the mean-field rate equations (t counts
transactions, n = sum c_k, p_r = read_bias/10, p_a = 1 - p_r,
p_c = create_bias/10, p_d = 1 - p_c)::

    dc_k/dt = p_a (c_{k-1} - c_k) / n  -  p_d c_k / n  +  p_c [k = 0]

with c_0(0) = number_of_files, integrated with scipy's solve_ivp together with
the accumulated reads, appends, bytes and calls.  n follows
dn/dt = p_c - p_d between 0 (PostMark runs out of files: ValueError) and
2 * number_of_files (creates then fail as often as deletes free a slot).
Where n and the rates are constant the c_k relax to a steady state within a
few hundred times n / rate transactions; once they have (to 1e-8), the
accumulated counts are continued linearly to the end, so the cost does not
grow with the number of transactions
(:data:`diskmodel.model.predictions.workload.MAX_COUNT` bounds them).
The approximation is the replacement of ratios of random quantities by ratios
of their means, of relative order 1/number_of_files; tests compare against
real ``postmark`` runs.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

#: Largest high - low range handled exactly (the gap distribution is a dense
#: vector of this length).
MAX_SIZE_RANGE_BYTES = 1 << 23


def _ceil_div(a, b):
    return -(-a // b)


def gap_statistics(config):
    """Per number of appends k: statistics of the gap g = high - size.

    Returns a dict of arrays indexed by k = 0..K (K absorbing):
    size (mean size), success (P[g > 0]), appended (mean appended bytes per
    append attempt), read_calls, append_calls (mean non-empty calls).
    """
    span = config.max_file_size_bytes - config.min_file_size_bytes
    if span > MAX_SIZE_RANGE_BYTES:
        raise ValueError(
            f"max_file_size_bytes - min_file_size_bytes must be <= {MAX_SIZE_RANGE_BYTES} "
            f"for the exact expected-counts model (got {span})")
    return _gap_statistics_cached(config.max_file_size_bytes, span, config.read_block_size_bytes,
                                  config.write_block_size_bytes)


@functools.lru_cache(maxsize=32)
def _gap_statistics_cached(high: int, span: int, rb: int, wb: int):
    gaps = np.arange(span + 1, dtype=np.int64)
    p = np.zeros(span + 1)
    if span == 0:
        p[0] = 1.0
    else:
        p[1:] = 1.0 / span
    read_calls_of_gap = _ceil_div(high - gaps, rb).astype(float)
    # For an append to a file with gap g >= 1: block u uniform on 1..g;
    # sum_{u=1}^{g} ceil(u/wb) = wb q(q+1)/2 + r(q+1), q = g // wb, r = g % wb.
    q, r = np.divmod(gaps, wb)
    append_calls_of_gap = np.where(gaps > 0, (wb * q * (q + 1) / 2.0 + r * (q + 1)) / np.maximum(gaps, 1), 0.0)
    append_bytes_of_gap = np.where(gaps > 0, (gaps + 1) / 2.0, 0.0)
    inv_gap = np.zeros(span + 1)
    inv_gap[1:] = 1.0 / gaps[1:]
    # rows: mean gap, P[g = 0], appended bytes, read calls, append calls
    weights = np.vstack([gaps.astype(float), (gaps == 0).astype(float), append_bytes_of_gap,
                         read_calls_of_gap, append_calls_of_gap])
    rows = []
    # Buffers reused across appends (no fresh 8-byte-per-gap arrays each time):
    # the reversed product is written contiguously and summed in place, the same
    # sums as np.cumsum((p * inv_gap)[::-1])[::-1] at a third of the cost for wide ranges.
    inv_gap_reversed = inv_gap[::-1].copy()
    tail_reversed = np.empty_like(p)
    spare = np.empty_like(p)
    for _ in range(4096):  # bounded: the gap at least halves per append in expectation
        rows.append(weights @ p)
        if 1.0 - p[0] < 1e-12:
            break
        # (A p)(j) = sum_{g > j} p(g)/g, and g = 0 stays at 0.
        np.multiply(p[::-1], inv_gap_reversed, out=tail_reversed)
        np.cumsum(tail_reversed, out=tail_reversed)
        spare[:-1] = tail_reversed[-2::-1]
        spare[-1] = 0.0
        spare[0] += p[0]
        p, spare = spare, p
    table = np.array(rows)
    return {"size": high - table[:, 0], "success": 1.0 - table[:, 1], "appended": table[:, 2],
            "read_calls": table[:, 3], "append_calls": table[:, 4]}


def creation_write_calls(config) -> float:
    """Mean non-empty write calls of a newly created file of *config* (a PostMarkConfig) [count]."""
    low, high, wb = config.min_file_size_bytes, config.max_file_size_bytes, config.write_block_size_bytes
    sizes = np.arange(low, max(high, low + 1), dtype=np.int64)
    return float(np.mean(_ceil_div(sizes, wb)))


@dataclass(frozen=True)
class TransactionTotals:
    """Expected totals of the transaction phase [count, bytes], and the live files behind them.

    reads, appends (counted ones), append_attempts, creates, deletes,
    bytes_read, bytes_appended, read_calls, append_calls; files_at_end,
    mean_live_files (over the transactions) and mean_file_size_at_end_bytes.
    """

    reads: float
    appends: float
    append_attempts: float
    creates: float
    deletes: float
    bytes_read: float
    bytes_appended: float
    read_calls: float
    append_calls: float
    files_at_end: float
    mean_live_files: float
    mean_file_size_at_end_bytes: float


def transaction_totals(config) -> TransactionTotals:
    """The transaction phase of *config* (a PostMarkConfig) in expectation; see the module docstring.

    Raises ValueError naming ``transactions`` when the expected number of live
    files reaches zero before the transactions end (PostMark would stop with
    "out of files" and print no report).
    """
    from scipy.integrate import solve_ivp

    stats = gap_statistics(config)
    n_states = len(stats["size"])
    n0 = float(config.number_of_files)
    cap = 2.0 * n0
    p_read = config.read_bias / 10.0
    p_append = 1.0 - p_read
    p_create = config.create_bias / 10.0
    p_delete = 1.0 - p_create
    T = float(config.transactions)

    drift = p_create - p_delete
    if drift < 0 and n0 + drift * T < 1.0:
        raise ValueError(
            f"transactions: with create_bias={config.create_bias} PostMark runs out of files "
            f"after about {int(n0 / -drift)} transactions (got {config.transactions})")
    t_cap = (cap - n0) / drift if drift > 0 else math.inf

    def live_files(t):
        return n0 + drift * min(t, t_cap) if drift != 0 else n0

    def rates(t):
        if t < t_cap:
            return p_create, p_delete
        return p_delete, p_delete  # table full: a create succeeds only after a delete

    size, success, appended = stats["size"], stats["success"], stats["appended"]
    read_calls, append_calls = stats["read_calls"], stats["append_calls"]
    # extra accumulators: reads, appends, bytes_read, bytes_appended, read_calls, append_calls, live-file integral
    n_acc = 7

    def rhs(t, y):
        c = y[:n_states]
        n = max(float(c.sum()), 1e-300)
        pc, pd = rates(t)
        frac = c / n
        dc = np.empty(n_states)
        flow = p_append * frac
        dc[:] = -flow
        dc[1:] += flow[:-1]
        dc[-1] += flow[-1]  # K is absorbing
        dc -= pd * frac
        dc[0] += pc
        out = np.empty(n_states + n_acc)
        out[:n_states] = dc
        out[n_states + 0] = p_read
        out[n_states + 1] = p_append * (frac @ success)
        out[n_states + 2] = p_read * (frac @ size)
        out[n_states + 3] = p_append * (frac @ appended)
        out[n_states + 4] = p_read * (frac @ read_calls)
        out[n_states + 5] = p_append * (frac @ append_calls)
        out[n_states + 6] = n
        return out

    def integrate(y, start, stop):
        solution = solve_ivp(rhs, (start, stop), y, method="LSODA", rtol=1e-9, atol=1e-9)
        if not solution.success:  # pragma: no cover - solver failure is a bug to report
            raise RuntimeError(f"expected_counts: ODE solver failed: {solution.message}")
        return solution.y[:, -1]

    y0 = np.zeros(n_states + n_acc)
    y0[0] = n0
    breaks = [0.0] + ([t_cap] if t_cap < T else []) + [T]
    y = y0
    for start, stop in zip(breaks[:-1], breaks[1:]):
        if stop <= start:
            continue
        if drift != 0 and start < t_cap:
            # n changes; this phase lasts at most number_of_files / |drift| <= 10 number_of_files transactions
            y = integrate(y, start, stop)
        else:
            y = integrate_steady_phase(integrate, rhs, y, start, stop, n_states, rates(start), p_append)
    c_end = np.clip(y[:n_states], 0.0, None)
    reads, appends, bytes_read, bytes_appended, rcalls, acalls, live_integral = y[n_states:]
    c_sum = c_end.sum()
    return TransactionTotals(
        reads=reads, appends=appends, append_attempts=p_append * T,
        creates=p_create * min(T, t_cap) + p_delete * max(0.0, T - t_cap), deletes=p_delete * T,
        bytes_read=bytes_read, bytes_appended=bytes_appended, read_calls=rcalls, append_calls=acalls,
        files_at_end=live_files(T), mean_live_files=live_integral / T,
        mean_file_size_at_end_bytes=float(c_end @ size / c_sum) if c_sum > 0 else 0.0)


def integrate_steady_phase(integrate, rhs, y, start, stop, n_states, rates, p_append):
    """Integrate a phase of constant live files n and constant rates from *start* to *stop*.

    The c_k then follow a linear system with constant coefficients that
    relaxes to a steady state within some multiple of n / rate transactions
    (append flow p_append / n, deletes p_delete / n), after which every
    accumulated count grows linearly.  The ODE is integrated over a horizon
    of (2 (K + 1) + 100) relaxation times, doubled while the state is still
    moving; once the c_k would move by less than 1e-8 of n in one relaxation
    time, the accumulators are continued linearly to *stop*.  So the cost
    does not grow with the number of transactions (LSODA's step count grows
    with stop / n and took minutes at 10**15 transactions), and phases
    shorter than the horizon are integrated exactly as before.
    """
    n = float(y[:n_states].sum())
    p_delete = rates[1]
    rate = min((r for r in (p_append + p_delete, p_append, p_delete) if r > 0), default=0.0)
    if rate == 0.0:
        # no appends, creates or deletes change any file: the state is constant
        return integrate(y, start, stop)
    relaxation = max(n, 1.0) / rate
    horizon = (2 * n_states + 100) * relaxation
    t = start
    while True:
        t_next = min(stop, t + horizon)
        y = integrate(y, t, t_next)
        t = t_next
        if t >= stop:
            return y
        slope = rhs(t, y)
        if np.max(np.abs(slope[:n_states])) * relaxation <= 1e-8 * max(n, 1.0):
            y = y.copy()
            y[n_states:] += (stop - t) * slope[n_states:]
            return y
        horizon *= 2.0
