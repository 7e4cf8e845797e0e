"""Head and cylinder switches told apart by where they come, and the head switch time from that.

Where the track skew and the cylinder skew differ by less than the host's
jitter, the wait of one track change does not say which kind it was; its
position does: on a conventional layout every ``surfaces``-th track change
is a cylinder switch (Ruemmler & Wilkes 1994, sec. 2.2).

* :func:`wait_groups`, :func:`without_echoes`, :func:`visible_every`: the
  kinds of track change told by their wait (groups of excess waits, less a
  group that only echoes outliers), and where only every H-th one shows.
* :func:`periodic_kind`: in the forward chains of
  :func:`~diskmodel.calibrate.harness.mechanics.measure_tracks` (a third of
  a track apart), each track change gets its track's index along the chain
  (a change hidden by an outlier leaves a gap of two tracks, not a shift of
  every later change); for each period H and each run's best phase, the t
  statistic of every H-th change's excess wait against the others'. A
  period shows where that t is more than the same search finds in any of
  999 shuffles of the waits (a permutation test: the search over phases
  finds some difference in noise too; 15 periods at p < 0.001 each). Of
  the periods that show, the strongest; a divisor of it that shows as
  strongly is the period (a multiple of the period shows as strongly, a
  divisor only in part). The cylinder switches found are the anchors of
  the next step.
* :func:`descending_by_position`: as DIXtrac (Schindler & Ganger 1999) times
  a head switch by a read on the next track of the same cylinder at varying
  angular offsets, descending chains start on the track after a cylinder
  switch found above: the track changes a chain crosses are the tracks below
  it in turn, so the j-th is a cylinder switch where ``j % H == 0`` and a head
  switch otherwise. Which read crossed which track boundary comes from the
  chain's positions (the anchor's boundary known within the forward stride,
  the track's length within a few per cent), fitted to the reads whose wait
  shows a track change or none; only reads whose boundary every best fit
  agrees on are kept. The stride is bisected (in time, so that chains in
  different zones agree) to where the wait after a head switch runs out;
  the least time of a read after a head switch that still caught its
  sector is the command overhead, the head switch and a block's passage,
  taken as the threshold between the reads that caught their sector and
  those that lost a revolution (:func:`caught_limit`; each read's time on
  its stride's line where its own time does not tell which reads caught
  their sector: :func:`line_limit`). A read taken for
  one wrongly (after a faster one-cylinder move) could pull it down:
  hence only the sure ones count.

All but :func:`descending_by_position` (which reads its chains through the
meter) are functions of the waits alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

import numpy as np
from scipy.stats import median_abs_deviation

from diskmodel.calibrate.harness.meter import chain

__all__ = ["PeriodicKinds", "block_passages_again", "caught_limit", "line_limit", "wait_groups", "without_echoes",
           "visible_every", "periodic_kind", "track_runs", "descending_by_position", "one_cylinder_limit"]


@dataclass(frozen=True)
class PeriodicKinds:
    """Every ``surfaces``-th track change of the forward chains is a cylinder switch: the excess
    waits of head and cylinder switches [s], the t statistic of their difference, and per
    forward chain the steps (indices of its timed reads) that crossed a cylinder switch and its
    steps per track."""

    surfaces: int
    head_s: float
    cylinder_s: float
    t: float
    cylinder_steps: tuple
    steps_per_track: tuple


def block_passages_again(periods, chains, rough_s: float) -> dict:
    """The block passage x [s] of each start point of the rotation's chains whose x the host's jitter put
    off, solved again at the median period: {index: x}. ``T = d_back + x - d_fwd(s1) + s1 x`` (the
    rotation's formula) weighs x by s1 + 1, so a start point whose slope or long stride's chain put x off
    puts its period off by s1 + 1 times that, while its medians d_back and d_fwd(s1) (each over many
    reads) move it by less than its gaps' spread. Where a period (*periods*) lies further from the median
    than five scaled median deviations and than twice its gaps' spread, x is solved from the same formula
    at the median period; *chains* holds each start point's (s1, d_fwd(s1), d_back, gaps' spread [s]), or None
    where no forward chain timed it.
    The tracks' chains take their stride (a third of a track) from x, so one put off misses its strides
    and the head switch's chains theirs."""
    p = np.asarray(periods, dtype=float)
    period = float(np.median(p))
    spread = float(median_abs_deviation(p, scale="normal"))
    again = {}
    for j, at in enumerate(chains):
        if at is None:  # a start point timed by descending chains alone (rotation_chains.descending_period)
            continue
        s1, m1, mb, width = at
        x = (period - mb + m1) / (s1 + 1)
        if abs(p[j] - period) > max(5 * spread, 2 * width) and 0 < x < 0.5 * rough_s / max(s1, 1):
            again[j] = float(x)
    return again


def caught_limit(caught, missed) -> float:
    """The time [s] that best divides the reads that caught their sector (*caught*, their times) from
    those that missed it by less than a revolution (*missed*, their times less the revolution): the
    middle of the thresholds that put fewest reads on the wrong side, between two neighbouring times.

    A read near the limit catches its sector where the time the drive has before the sector comes
    covers what it must do first (command overhead, a head switch), and its time is then the limit and
    the slack; one that misses takes a revolution more, its slack less than nothing. Each read's time
    also carries the host's noise (the timer, a gap the host timed that the drive did not see: a read
    queued behind the one before is timed from its submission), and the least of many caught reads is
    the limit less the largest of that noise, the lower the more reads. The threshold between the two
    kinds moves with the noise's middle, not its extreme, and so alike for limits measured with
    different numbers of reads. Without a missed read, the least caught read."""
    c = np.asarray(caught, dtype=float).ravel()
    m = np.asarray(missed, dtype=float).ravel()
    if c.size == 0:
        raise ValueError("caught must hold one or more read times")
    if m.size == 0:
        return float(c.min())
    v = np.concatenate([c, m])
    order = np.argsort(v, kind="stable")
    v, is_caught = v[order], np.r_[np.ones(c.size), np.zeros(m.size)][order]
    # a threshold before sorted read i: the caught reads below it and the missed reads from it on
    # (each kind's share of its reads: the kind with more reads near the limit would otherwise pull the
    # threshold into the other's side, by the noise's spread)
    wrong = np.r_[0.0, np.cumsum(is_caught)] / c.size + np.r_[m.size, m.size - np.cumsum(1.0 - is_caught)] / m.size
    at = np.flatnonzero(wrong <= wrong.min() + 1e-12)
    cut = np.r_[v[0], 0.5 * (v[:-1] + v[1:]), v[-1]][at]
    return float(np.median(cut))


def line_limit(times, caught, period_s: float, offsets_s, groups=None) -> float:
    """The limit of :func:`caught_limit` from reads whose times lie on known lines: a read of a chain
    waits, for its sector, a time its stride sets (*offsets_s*, the stride's blocks' passage: less for
    a longer stride back, more for a longer stride forward) and the same constant for every read of a
    group (a chain, or chains in one zone: the command overhead, the skew, the revolution), whether it
    caught its sector (*caught*) or lost a revolution (its time less *period_s*). Each group's constant
    is the median over its reads of their time less their offset (the missed ones less the revolution
    too); a read's time is its line's (the constant and its offset) and as much of its own residual as
    the residuals tell which reads caught their sector (:func:`_told_share`).

    On a drive that waits through the host's gap and is timed from its arrival, a read that waited
    less caught its sector and took longer: its own time tells, and the limit is :func:`caught_limit`
    of the reads' own times. Through the kernel's path the host's times carry the path's jitter,
    which the drive does not see: whether a read caught its sector is set by its stride, a read's own
    time only adds noise, and the threshold between the noisiest reads of either kind moves by it;
    the line's times place the limit among the strides read, which the noise does not change (caught
    and missed differ by a revolution)."""
    t = np.asarray(times, dtype=float).ravel()
    ok = np.asarray(caught, dtype=bool).ravel()
    off = np.asarray(offsets_s, dtype=float).ravel()
    g = np.zeros(t.size, np.int64) if groups is None else np.asarray(groups).ravel()
    if not (t.size == ok.size == off.size == g.size):
        raise ValueError(f"times, caught, offsets_s and groups must be alike in length (got {t.size}, {ok.size}, "
                         f"{off.size}, {g.size})")
    if not ok.any():
        raise ValueError("caught must mark one or more reads")
    lined = np.where(ok, t, t - period_s) - off
    v = np.empty(t.size)
    for key in np.unique(g):
        at = g == key
        v[at] = float(np.median(lined[at])) + off[at]
    resid = np.where(ok, t, t - period_s) - v
    told = v + _told_share(resid, ok, g, off) * resid
    return caught_limit(told[ok], told[~ok])


def _told_share(resid, caught, groups, offsets) -> float:
    """How far a read's own time tells whether it caught its sector, 0..1: among reads of one stride
    and group of which some caught their sector and some did not, the share of (caught, missed) pairs
    whose caught read lay higher on the line, less a half, doubled. Where the drive waits through the
    host's gap and the host times from the drive's arrival (a read that waited less caught its
    sector, and took longer), 1; where the host's noise is its own (a path's jitter the drive does
    not see), 0. Without such a stride, 0: the strides then part the two kinds alone."""
    above = pairs = 0.0
    for key in set(zip(groups.tolist(), np.round(offsets, 12).tolist())):
        at = (groups == key[0]) & (np.round(offsets, 12) == key[1])
        c, m = resid[at & caught], resid[at & ~caught]
        if c.size and m.size:
            above += float((c[:, None] > m[None, :]).sum()) + 0.5 * float((c[:, None] == m[None, :]).sum())
            pairs += c.size * m.size
    return float(np.clip(2 * above / pairs - 1, 0.0, 1.0)) if pairs else 0.0


def wait_groups(excess: np.ndarray, period: float, jitter: float):
    """The excess waits of track changes in groups: [(centre, members)], the largest first, at
    most two. Values are split where neighbours lie further apart than the host's jitter
    allows; a group of fewer than 3, or under 5 % of the values, is outliers, not a kind."""
    e = np.sort(excess)
    if e.size == 0:
        return []
    cut = np.flatnonzero(np.diff(e) > max(0.005 * period, 1.2 * jitter)) + 1
    parts = [p for p in np.split(e, cut) if p.size >= max(3, 0.05 * e.size)]
    parts = sorted(parts, key=len, reverse=True)[:2]
    return [(float(np.median(p)), p) for p in parts]


def without_echoes(groups, chains_dev, threshold: float):
    """*groups* less a rarer group most of whose reads follow a read that waited neither as a
    same-track read nor as the commonest track change: not a kind of track change but the echo
    of an outlier (its delay D makes it wait D longer, and the next read D less, a revolution
    round), or a run of reads that fell behind the read-ahead and wait alike in turn."""
    if len(groups) < 2:
        return groups
    lo0, hi0 = groups[0][1].min(), groups[0][1].max()
    lo, hi = groups[1][1].min(), groups[1][1].max()
    odd = []
    for dev in chains_dev:
        before = dev[:-1][(dev[1:] >= lo) & (dev[1:] <= hi)]
        odd.append((np.abs(before) > threshold) & ((before < lo0) | (before > hi0)))
    odd = np.concatenate(odd)
    return groups[:1] if odd.size and odd.mean() > 0.5 else groups


def visible_every(chains_dev, tracks_per_step, threshold: float, band, max_surfaces: int = 16):
    """Where the track changes that show (those within *band*: the group of track changes, not
    outliers) come every H tracks (H >= 2, the spacing of every pair of consecutive ones within
    half a track of H, over at least two chains): ``(H, spacings in tracks)``, else None (every
    track change shows, or no fixed spacing)."""
    spacings = []
    used = 0
    for dev, per_step in zip(chains_dev, tracks_per_step):
        steps = np.diff(np.flatnonzero((dev > threshold) & (dev >= band[0]) & (dev <= band[1])))
        if steps.size:
            used += 1
            spacings += (steps * per_step).tolist()
    if used < 2 or len(spacings) < 3:
        return None
    sp = np.asarray(spacings)
    h = int(round(float(np.median(sp))))
    if not 2 <= h <= max_surfaces or np.any(np.abs(sp - h) > 0.5):
        return None
    return h, sp


def _steps_per_track(at: np.ndarray, guess: float) -> float:
    """Steps per track of a chain from the steps *at* of its track changes (a gap of one to three
    tracks each: changes hidden by outliers leave gaps of two or three), refined from *guess*."""
    sigma = guess
    d = np.diff(at).astype(float)
    for _ in range(3):
        n = np.rint(d / sigma)
        ok = (n >= 1) & (n <= 3) & (np.abs(d / sigma - n) < 0.4)
        if not ok.any():
            return guess
        sigma = float(d[ok].sum() / n[ok].sum())
    return sigma


def track_runs(chains_dev, threshold: float, band, tracks_per_step):
    """Per chain, its runs of track changes with each change's track index along the run:
    [(chain, steps, track indices, excess waits)], and each chain's steps per track."""
    runs, sigmas = [], []
    for ci, (dev, per_step) in enumerate(zip(chains_dev, tracks_per_step)):
        at = np.flatnonzero((dev > threshold) & (dev >= band[0]) & (dev <= band[1]))
        sigma = _steps_per_track(at, 1.0 / per_step) if at.size >= 3 else 1.0 / per_step
        sigmas.append(sigma)
        if at.size < 4:
            continue
        d = np.diff(at) / sigma
        n = np.rint(d)
        # a gap that is no whole number of tracks, or more than three: the count is unsure there
        breaks = np.flatnonzero((np.abs(d - n) > 0.35) | (n < 1) | (n > 3)) + 1
        index = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
        for run in np.split(np.arange(at.size), breaks):
            if run.size >= 4:
                runs.append((ci, at[run], index[run] - index[run[0]], dev[at[run]]))
    return runs, sigmas


def _period_statistic(runs, h: int, shuffles: int = 999):
    """For period *h*: each run's phase whose changes differ most from the rest (on the side,
    waiting longer or less, that gives the larger t over the runs); the t statistic and effect
    [s] of those changes against the others; whether t exceeds that of every one of *shuffles*
    shuffles of each run's waits (the same search over phases and sides on waits whose position
    says nothing: the search alone finds some difference, more so at long periods, where each
    run has few changes a period apart); the phases; the medians of the others and of those.
    None where fewer than two runs span two periods. At a period of two the halves are alike
    by position: those that wait longer are taken (a cylinder skew covers a seek, longer than a
    head switch)."""
    used = [(k, idx, vals) for k, (_, _, idx, vals) in enumerate(runs) if idx[-1] - idx[0] + 1 >= 2 * h]
    if len(used) < 2:
        return None
    rng = np.random.default_rng(h)  # the same shuffles each time: a function of the waits only
    waits = [np.vstack([vals, rng.permuted(np.tile(vals, (shuffles, 1)), axis=1)]) for _, _, vals in used]
    by_side = []
    for side in ((1.0,) if h == 2 else (1.0, -1.0)):
        pooled = np.zeros((6, shuffles + 1))  # of those picked and of the rest: count, sum, sum of squares
        phases = {}
        for (k, idx, vals), v in zip(used, waits):
            on = ((idx[:, None] - np.arange(h)[None, :]) % h == 0).astype(float)
            count, n = on.sum(0), vals.size
            sums, squares = v @ on, (v * v) @ on
            total, total_sq = v.sum(1), (v * v).sum(1)
            gap = sums / np.maximum(count, 1) - (total[:, None] - sums) / np.maximum(n - count, 1)
            p = np.argmax(np.where((count > 0) & (count < n), side * gap, -np.inf), axis=1)
            rows = np.arange(v.shape[0])
            c, sm, sq = count[p], sums[rows, p], squares[rows, p]
            pooled += np.array([c, sm, sq, n - c, total - sm, total_sq - sq])
            phases[k] = int(p[0])
        na, sa, qa, nr, sr, qr = pooled
        ma, mr = sa / na, sr / nr
        va = np.maximum(qa - na * ma * ma, 0.0) / np.maximum(na - 1, 1)
        vr = np.maximum(qr - nr * mr * mr, 0.0) / np.maximum(nr - 1, 1)
        se = np.sqrt(va / na + vr / nr)
        t = np.where(se > 0, np.abs(ma - mr) / np.where(se > 0, se, 1.0), 0.0)
        by_side.append((t, float(abs(ma[0] - mr[0])), phases))
    t_all = np.max([t for t, _, _ in by_side], axis=0)
    t, effect, phases = max(by_side, key=lambda x: x[0][0])
    picked = np.concatenate([vals[(idx - phases[k]) % h == 0] for k, idx, vals in used])
    rest = np.concatenate([vals[(idx - phases[k]) % h != 0] for k, idx, vals in used])
    if picked.size < 4 or rest.size < 2:
        return None
    return float(t[0]), effect, bool(t[0] > t_all[1:].max()), phases, float(np.median(rest)), float(np.median(picked))


def periodic_kind(chains_dev, threshold: float, band, min_effect_s: float, tracks_per_step,
                  max_surfaces: int = 16, min_t: float = 6.0) -> PeriodicKinds | None:
    """Head and cylinder switches told apart by where they come (see the module doc): only the
    changes within *band* (the group of track changes; not outliers) count. A period shows where
    t >= *min_t*, t is more than any shuffle of the waits gives, and the difference is at least
    *min_effect_s*. None where none shows."""
    runs, sigmas = track_runs(chains_dev, threshold, band, tracks_per_step)
    shows = {}
    for h in range(2, max_surfaces + 1):
        s = _period_statistic(runs, h)
        if s is not None and s[0] >= min_t and s[2] and s[1] > min_effect_s:
            shows[h] = s
    if not shows:
        return None
    strongest = max(shows, key=lambda h: shows[h][0])
    h = next((d for d in range(2, strongest) if strongest % d == 0 and d in shows
              and shows[d][1] >= 0.75 * shows[strongest][1]), strongest)
    t, _, _, phases, head_s, cyl_s = shows[h]
    steps = [[] for _ in chains_dev]
    for k, p in phases.items():
        ci, at, idx, _ = runs[k]
        steps[ci] += at[(idx - p) % h == 0].tolist()
    return PeriodicKinds(h, head_s, cyl_s, t, tuple(tuple(sorted(s)) for s in steps), tuple(sigmas))


def _head_reads(r: np.ndarray, k: int, stride: int, spt: float, kinds: PeriodicKinds, period: float) -> np.ndarray:
    """Which reads of a descending chain (stride *k* blocks, from the track after a cylinder
    switch known within *stride* blocks above it; tracks of about *spt* blocks) surely came
    after a head switch, from their excess waits *r* and positions (see the module doc)."""
    ca, cb = kinds.head_s, kinds.cylinder_s
    tol = 0.5 * min(ca, cb)
    rm = (r + 0.5 * period) % period - 0.5 * period
    crossed = (np.abs(rm + ca) < tol) | (np.abs(rm + cb) < tol)
    flag = np.where(crossed, 1, np.where(np.abs(rm) < tol, 0, -1))
    n = r.size
    q = -k * np.arange(n + 1, dtype=float)
    deltas = np.arange(0, stride, max(1, stride // 256), dtype=float)
    spts = spt * np.linspace(0.97, 1.03, 61)
    idx = np.floor((q[None, None, :] + deltas[:, None, None]) / spts[None, :, None])
    pred = idx[..., 1:] < idx[..., :-1]
    j = (-idx[..., 1:] - 1).astype(np.int64)
    known = flag >= 0
    wrong = (pred != (flag == 1)) & known
    misses = wrong.sum(-1)
    if misses.min() > 2:  # the positions do not fit (a zone's edge, outliers): none is sure
        return np.zeros(n, bool)
    best = misses == misses.min()
    jb, pb, wb = j[best], pred[best], wrong[best]
    sure = (flag == 1) & pb.all(0) & (jb == jb[:1]).all(0) & ~wb.any(0)
    # an outlier's delay moves the next read's wait too: a read after one not understood is not sure
    odd = (flag == -1) | wb.any(0)
    sure[1:] &= ~odd[:-1]
    return sure & (jb[0] % kinds.surfaces != 0)


def descending_by_position(meter, *, period_s: float, gap_s: float, floor_s: float, block_s: float,
                           kinds: PeriodicKinds, origins_bytes, strides_blocks, reads: int = 15,
                           steps: int = 24):
    """Descending chains from the cylinder switches of *kinds* (forward chain j began at
    ``origins_bytes[j]``, ``strides_blocks[j]`` apart), their stride bisected to where the wait
    after a head switch runs out (see the module doc). Returns the times of the reads after a
    head switch that caught their sector, and of those that missed it less a revolution, each
    less its block's passage [s], the chains read, the reads told apart, and the chain of each read
    of the first two (its number among the chains read)."""

    b = meter.block_size_bytes
    period, ca = period_s, kinds.head_s
    queues = []
    for j, cyl_steps in enumerate(kinds.cylinder_steps):
        s = int(strides_blocks[j])
        spt = kinds.steps_per_track[j] * s
        # the timed read i of a forward chain is its (i + 1)-th step; highest first: a later chain
        # lies lower, below most of what the read-ahead kept of an earlier one (what lies above
        # each of its reads)
        queues.append([(origins_bytes[j] + (i + 1) * s * b, s, spt) for i in sorted(cyl_steps, reverse=True)])
    # the forward chains' places in turn: the reads between two chains in one place (each a miss)
    # push the earlier one's segments out of the buffer
    anchors = [a for group in zip_longest(*queues) for a in group if a is not None]
    w_hi = period - ca - gap_s - floor_s + block_s
    w_lo = max(w_hi - 4e-3, block_s)
    lows, highs, groups = [], [], ([], [])
    chains = told = 0
    for start, stride, spt in anchors:
        if chains >= steps or w_hi - w_lo <= block_s:
            break
        x = period / spt
        w = 0.5 * (w_lo + w_hi)
        k = max(1, int(round(w / x)))
        if k >= 0.95 * spt or start - (reads + 1) * k * b < 0:
            continue
        t = chain(meter, start, -k, reads, "tracks")
        chains += 1
        r = t + k * x - (period - gap_s)  # 0 for no track change, -skew after one, + period if missed
        head = _head_reads(r, k, stride, spt, kinds, period)
        if not head.any():
            continue
        told += int(head.sum())
        caught = r[head] + ca < 0.5 * period
        lows += (t[head][caught] - x).tolist()
        highs += (t[head][~caught] - period - x).tolist()
        groups[0].extend([chains] * int(caught.sum()))
        groups[1].extend([chains] * int((~caught).sum()))
        if np.mean(~caught) > 0.5:
            w_hi = w
        else:
            w_lo = w
    return lows, highs, chains, told, groups


def one_cylinder_limit(meter, *, anchors_bytes, period_s: float, gap_s: float, floor_s: float, block_s: float,
                       kind_s: float, tol_s: float, reach_blocks: int, pairs: int = 16, steps: int = 16):
    """The least time [s] of a read just past a cylinder switch that still catches its sector (the
    command overhead, the one-cylinder seek and a block's passage), or None where too few were told.

    DIXtrac's way with a head switch (Schindler & Ganger 1999), across a cylinder boundary: each pair
    reads a block on a cylinder's first track (at an anchor, a forward read that crossed a cylinder
    switch, plus fewer blocks each time it is used: below the anchor's earlier reads, so that no
    read-ahead holds it; those below the cylinder's start are not counted) and then the block *k* below
    it, on the last track of the cylinder before.
    The reads after such a switch are told by their wait (an excess of *kind_s*, the cylinder skew's,
    within *tol_s*): a stride that stays on the cylinder waits no skew. The stride is bisected on the
    share of those reads that lost a revolution, and the limit is the threshold between the reads
    that caught their sector and those that lost it, on their strides' lines (:func:`line_limit`).
    *reach_blocks*: how far below an anchor its cylinder may start (the forward chain's stride: the
    read before the anchor had not crossed), and so how many pairs an anchor serves."""
    b = meter.block_size_bytes
    period, x = period_s, block_s
    anchors = [int(a) for a in anchors_bytes]
    if not anchors:
        return None
    uses = [0] * len(anchors)
    times, strides, missed = [], [], []

    def share_lost(k: int):
        """The pairs of one step at stride k: the share of the reads after a cylinder switch that lost."""
        lost = ours_n = 0
        for p in range(pairs):
            j = p % len(anchors)
            u = -uses[j]
            uses[j] += 1
            if uses[j] > reach_blocks or anchors[j] + (u - k) * b < 0:
                continue
            t = float(chain(meter, anchors[j] + u * b, -k, 1, "tracks")[0])
            r = t + k * x - (period - gap_s) + kind_s  # 0 after a cylinder switch, a revolution more if lost
            if abs((r + 0.5 * period) % period - 0.5 * period) < tol_s:
                times.append(t)
                strides.append(k)
                # lost by its place on the line, not by its time (a switch and an overhead past half a
                # revolution take that long when caught)
                missed.append(r > 0.5 * period)
                ours_n += 1
                lost += missed[-1]
        return lost / ours_n if ours_n else None

    # the one-cylinder seek may take most of what the skew leaves (unlike a head switch): every stride
    # from one block to where the wait runs out with no seek at all
    k_lo, k_hi = 1, max(2, int((period - kind_s - gap_s - floor_s) / x) + 2)
    for _ in range(steps):
        if k_hi - k_lo <= 1:
            break
        mid = (k_lo + k_hi) // 2
        share = share_lost(mid)
        if share is None:
            return None
        if share > 0.5:
            k_hi = mid
        else:
            k_lo = mid
    for k in (k_lo, k_hi):
        share_lost(k)
    caught = ~np.asarray(missed, dtype=bool)
    if caught.sum() < 3 or (~caught).sum() < 3:
        return None
    return line_limit(np.asarray(times), caught, period, -x * np.asarray(strides, dtype=float))
