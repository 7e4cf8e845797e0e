"""A zone read's rate without the quantum of the track changes it crossed, once the skews are known.

A long read's time is its media transfer and, for each track change it
crosses, the skew's wait: a head switch's (the track skew) or a cylinder
switch's (the cylinder skew), every ``surfaces``-th change being a cylinder
switch (Ruemmler & Wilkes 1994, sec. 2.2). A read of L bytes on tracks of B
bytes crosses ``floor(L/B)`` or ``ceil(L/B)`` changes by where it starts, so
its rate takes a few discrete values; through the kernel, where a read is at
most 512 KiB (0.93 of a WD800BD outer track), a location's ten reads differ by
1 and 2 ms in 8-10 ms, and the union of a location's reads still crosses one
change more or fewer, and one cylinder switch more or fewer, than its share:
its rate is quantised by 1-2 %, against zone steps of 3-4 %. Neighbouring
zones then merge. On hp_c2247a (13 surfaces) a location is two reads of 4.9
tracks: their union holds a cylinder switch or none, and its rate takes one
of two levels 2 % apart; a run of locations on one level makes a zone.

The zone stage runs before the skews are measured, so its reads are kept and
read again here (:func:`dequantised_zones`): each read's time less the wait
of the track changes it crossed is the media's time for its bytes, the same
for every read of a location; the crossings are the ones (a number of track
and cylinder switches a read of that length can cross) that put most of the
location's reads on one media time (:func:`media_time`), the likelier where
several do (how often a read of that length crosses each count, and holds
each number of cylinder switches). A location whose reads all crossed the
same changes cannot tell n changes at M from n + 1 at M less a skew's wait
on its own; its zone's other locations share its M, so the locations' media
times are chosen together, a change of M between neighbours costing the
prior odds of a zone's end there (:func:`_smoothest`). The sustained rate
is then the media's rate over a cylinder and its skews:
``rate_media * H T / (H T + (H - 1) t_track + t_cylinder)``.
"""
from __future__ import annotations

import math

import numpy as np

#: The least probability given a read's crossing count (:func:`crossing_log_likelihood`): a read that starts
#: within a block of its track's end crosses the rarer count all the same.
CROSSING_FLOOR_PROBABILITY = 0.01

__all__ = ["crossing_waits", "crossing_log_likelihood", "media_time", "sustained_factor", "dequantised_rates",
           "quantised", "dequantised_zones"]


def crossing_waits(max_changes: int, surfaces: int, track_s: float, cylinder_s: float) -> np.ndarray:
    """The waits [s] a read crossing 0..*max_changes* track changes can meet: rows (changes, wait,
    cylinder switches among them). Of n consecutive changes, every *surfaces*-th is a cylinder switch,
    so they hold ``floor(n / H)`` or ``ceil(n / H)`` cylinder switches."""
    rows = []
    for n in range(max_changes + 1):
        for c in sorted({n // surfaces, -(-n // surfaces)}):
            rows.append((n, (n - c) * track_s + c * cylinder_s, c))
    return np.array(rows, dtype=float)


def _log_probability(p) -> np.ndarray:
    return np.log(np.clip(p, CROSSING_FLOOR_PROBABILITY, 1.0 - CROSSING_FLOOR_PROBABILITY))


def crossing_log_likelihood(counts, turns: float, cylinders=None, surfaces: int | None = None) -> float:
    """The log-likelihood of a location's reads crossing *counts* track changes each, where each read's
    media takes *turns* revolutions: a read starting anywhere on its track crosses ``ceil(turns)`` changes
    with probability ``frac(turns)`` and ``floor(turns)`` otherwise. With *cylinders* (the cylinder
    switches among each read's changes) and *surfaces* H, also their probability: n consecutive changes
    start at any of a cylinder's H tracks, so they hold ``floor(n / H) + 1`` cylinder switches with
    probability ``(n mod H) / H`` (Ruemmler & Wilkes 1994, sec. 2.2). Each probability is at least
    CROSSING_FLOOR_PROBABILITY, for a start just at a track's end."""
    n = np.asarray(counts, dtype=float)
    lo = np.floor(turns)
    total = 0.0
    if lo != np.ceil(turns):
        up = turns - lo
        total += float(np.sum(np.where(n > lo, _log_probability(up), _log_probability(1.0 - up))))
    if cylinders is not None and surfaces:
        h = int(surfaces)
        c = np.asarray(cylinders, dtype=float)
        share = np.mod(n, h) / h
        more = c > np.floor(n / h)
        total += float(np.sum(np.where(share == 0, 0.0, np.where(more, _log_probability(share),
                                                                  _log_probability(1.0 - share)))))
    return total


def _candidates(times_s, period_s: float, waits, tol_s: float, surfaces: int | None):
    """The media times a location's reads can share: (reads held, log-likelihood of their crossings, the
    media time [s]) for each candidate ``t_i - w`` (see :func:`media_time`)."""
    t = np.asarray(times_s, dtype=float)
    t = t[np.isfinite(t) & (t > 0)]
    found = []
    for n_changes, w, *_ in waits:
        for base in t - w:
            if base <= 0:
                continue
            turns = base / period_s
            if not np.floor(turns) <= n_changes <= np.ceil(turns):
                continue
            can = (waits[:, 0] >= np.floor(turns)) & (waits[:, 0] <= np.ceil(turns))
            allowed = waits[can, 1]
            d = np.abs((t[:, None] - allowed[None, :]) - base)
            near = d.min(axis=1) <= tol_s
            nearest = np.argmin(d[near], axis=1)
            chosen = waits[can][nearest]
            cylinders = chosen[:, 2] if waits.shape[1] > 2 else None
            found.append((int(near.sum()), crossing_log_likelihood(chosen[:, 0], turns, cylinders, surfaces),
                          float(np.median(t[near] - allowed[nearest]))))
    return found, t.size


def _held_enough(count: int, reads: int) -> bool:
    return count >= max(2, (reads + 1) // 2)


def media_time(times_s, period_s: float, waits, tol_s: float, surfaces: int | None = None) -> float | None:
    """The media's time [s] shared by a location's reads (*times_s*, each less its pair's one-block read):
    of the candidates ``t_i - w`` (w a crossing's wait of *waits*, :func:`crossing_waits`) whose crossing
    count is one a read of that media time can make (``floor`` or ``ceil`` of it over *period_s*), the
    one within *tol_s* of the most reads' own; their median. None where no candidate holds half the
    reads (a location the host delayed throughout).

    Where all of a location's reads cross the same count, two candidates can hold them all: n changes
    at media time M, and n - 1 changes (the cylinder switch's wait taken as a head switch's, or one
    change fewer) at a media time longer by the difference of the waits. The one under which the
    reads' counts are the likelier (:func:`crossing_log_likelihood`, with the cylinder switches among
    them where *surfaces* is given) stands: a read of 1.8 revolutions crosses two changes four times in
    five, and one change only where it starts in the last fifth of its track; a read of five changes on
    13 surfaces holds no cylinder switch eight times in thirteen. A location alone; the zone stage's
    locations are chosen together (:func:`dequantised_rates`)."""
    bases, _ = _tied(times_s, period_s, waits, tol_s, surfaces)
    return float(bases[0]) if bases.size else None


def _tied(times_s, period_s: float, waits, tol_s: float, surfaces):
    """The media times [s] that hold as many of a location's reads as the best one does (a location whose
    reads all cross the same count can hold two or more), and each one's log-likelihood of its reads'
    crossings: (times, log-likelihoods), empty where none holds enough of the reads."""
    found, reads = _candidates(times_s, period_s, waits, tol_s, surfaces)
    top = max((c[0] for c in found), default=0)
    if not found or not _held_enough(top, reads):
        return np.empty(0), np.empty(0)
    bases, scores = [], []
    for _, score, b in sorted((c for c in found if c[0] == top), key=lambda c: -c[1]):
        if all(abs(b - o) > tol_s for o in bases):
            bases.append(b)
            scores.append(score)
    return np.array(bases), np.array(scores)


def _smoothest(tied: list, tol_s: float, step_nats: float) -> list:
    """Each location's media time, the locations in order of place: of the times that hold its reads alike
    (:func:`_tied`), the ones that together are likeliest where a change of media time between two
    neighbours (a zone's end) costs *step_nats* (the log of its prior odds) and each location's choice its
    log-likelihood (Viterbi's dynamic programme). A zone's locations share one media time for a read of one
    length, so a location whose own reads cannot tell n changes at M from n + 1 at M less a skew's wait
    takes the time its neighbours show. None for a location that holds none."""
    at = [i for i, (b, _) in enumerate(tied) if b.size]
    out: list = [None] * len(tied)
    if not at:
        return out
    cost = -tied[at[0]][1]
    back = []
    for prev, i in zip(at, at[1:]):
        step = np.where(np.abs(tied[i][0][:, None] - tied[prev][0][None, :]) > tol_s, step_nats, 0.0)
        total = step + cost[None, :]
        back.append(np.argmin(total, axis=1))
        cost = total.min(axis=1) - tied[i][1]
    k = int(np.argmin(cost))
    for n in range(len(at) - 1, -1, -1):
        out[at[n]] = float(tied[at[n]][0][k])
        if n:
            k = int(back[n - 1][k])
    return out


def sustained_factor(surfaces: int, period_s: float, track_s: float, cylinder_s: float) -> float:
    """The sustained rate over the media's: a cylinder's H tracks take H revolutions, H - 1 track
    skews and one cylinder skew."""
    h = int(surfaces)
    return h * period_s / (h * period_s + (h - 1) * track_s + cylinder_s)


def dequantised_rates(repeats_rates, read_length_bytes: int, block_size_bytes: int, *, period_s: float,
                      surfaces: int, track_skew_rev: float, cylinder_skew_rev: float, location_rates_bytes_per_s,
                      locations_bytes=None, zones_found: int | None = None):
    """Each location's sustained rate [bytes/s] from its pairs' rates (*repeats_rates*, locations x
    repeats, as the zone stage keeps them: ``(length - block) / (long read - one-block read)``), and
    the same per pair (each pair's media time less its crossings' waits, for the repeats' spread).
    A location whose reads share no media time (:func:`media_time`) keeps the zone stage's rate for it
    (*location_rates_bytes_per_s*) and its pairs' rates: (rates, per-pair rates, locations kept as they
    were). Where several media times hold a location's reads alike (all of them crossed the same count),
    the locations' choices are made together (:func:`_smoothest`; *locations_bytes*, their places, the
    order given where None), a zone's end between two neighbours as likely as *zones_found* (the zone
    stage's count; one where None) over the locations make it."""
    r = np.asarray(repeats_rates, dtype=float)
    moved = (read_length_bytes - block_size_bytes)
    track_s, cylinder_s = track_skew_rev * period_s, cylinder_skew_rev * period_s
    factor = sustained_factor(surfaces, period_s, track_s, cylinder_s)
    times = moved / r
    top = int(np.ceil(np.nanmax(times) / period_s)) + 1 if np.isfinite(times).any() else 1
    waits = crossing_waits(top, surfaces, track_s, cylinder_s)
    tol = 0.25 * min(track_s, cylinder_s - track_s if cylinder_s > track_s else track_s)
    per_pair = np.full_like(r, np.nan)
    rates = np.array(location_rates_bytes_per_s, dtype=float)
    if rates.shape != (r.shape[0],):
        raise ValueError(f"location_rates_bytes_per_s must hold one rate per location ({r.shape[0]}; got "
                         f"shape {rates.shape})")
    kept = np.zeros(r.shape[0], dtype=bool)
    order = np.argsort(locations_bytes, kind="stable") if locations_bytes is not None else np.arange(r.shape[0])
    # a zone's end between two neighbouring locations as often as the zone stage found one
    step_nats = math.log(max(r.shape[0] / max(int(zones_found or 1), 1), 2.0))
    chosen = _smoothest([_tied(times[i], period_s, waits, tol, surfaces) for i in order], tol, step_nats)
    for i, base in zip(order, chosen):
        if base is None:
            per_pair[i] = r[i]
            kept[i] = True
            continue
        # each pair's own media time: its time less the wait that brings it nearest the location's
        d = np.abs(times[i][:, None] - waits[None, :, 1] - base)
        own = times[i] - waits[np.argmin(np.nan_to_num(d, nan=np.inf), axis=1), 1]
        per_pair[i] = np.where(np.isfinite(times[i]), moved / own * factor, np.nan)
        rates[i] = moved / base * factor
    return rates, per_pair, kept


def quantised(repeats_rates, read_length_bytes: int, block_size_bytes: int, track_s: float) -> bool:
    """Whether the locations' reads show the track changes' quantum: at most locations, the reads fall in
    two or more groups at least three quarters of a track skew's wait apart, each group of at least two
    reads where a location has four or more (of two or three reads, any two that far apart). A drive
    whose reads are bound by its interface (one rate throughout) has one group and the host's delayed
    reads alone beside it, and its reads' times hold no skew to take off."""
    t = (read_length_bytes - block_size_bytes) / np.asarray(repeats_rates, dtype=float)
    split = []
    for row in t:
        row = np.sort(row[np.isfinite(row)])
        if row.size < 2:
            continue
        groups = np.split(row, np.flatnonzero(np.diff(row) >= 0.75 * track_s) + 1)
        least = 2 if row.size >= 4 else 1
        split.append(sum(g.size >= least for g in groups) >= 2)
    return bool(split) and float(np.mean(split)) > 0.5


def dequantised_zones(zones, *, size_bytes: int, block_size_bytes: int, period_s, track_skew_rev,
                      cylinder_skew_rev, surfaces, reads_ahead: bool = False):
    """The zone stage's measurement (:class:`~diskmodel.calibrate.harness.stages.ZoneMeasurement`) with each
    location's rate less the quantum of its reads' track changes and the zones fitted again, where the
    rotation, both skews and the surfaces were measured, the drive does not read ahead, and the reads show
    the quantum (:func:`quantised`); else *zones* as it was. A drive that reads ahead serves a long read
    from its buffer, at its interface's pace where that is the slower, and a read's time is then not the
    media's and its crossings' waits."""
    from dataclasses import replace

    from diskmodel.calibrate.harness.stages import _halves, repeat_noise, zones_from_profile

    if reads_ahead or None in (period_s, track_skew_rev, cylinder_skew_rev, surfaces) or int(surfaces) < 1:
        return zones
    r = np.asarray(zones.repeats_rates, dtype=float)
    if r.ndim != 2 or r.shape[0] < 2 or not quantised(r, zones.read_length_bytes, block_size_bytes,
                                                        track_skew_rev * period_s):
        return zones
    rates, per_pair, kept = dequantised_rates(r, zones.read_length_bytes, block_size_bytes, period_s=period_s,
                                              location_rates_bytes_per_s=zones.rates_bytes_per_s,
                                              surfaces=int(surfaces), track_skew_rev=track_skew_rev,
                                              cylinder_skew_rev=cylinder_skew_rev,
                                              locations_bytes=zones.locations_bytes,
                                              zones_found=len(zones.zones))
    found = zones_from_profile(zones.locations_bytes, rates, size_bytes, block_size_bytes,
                               noise_sigma=repeat_noise(_halves(r)), rotation_period_s=period_s)
    return replace(zones, rates_bytes_per_s=rates, zones=found, repeats_rates=per_pair,
                   detail=f"{zones.detail}; each read's rate less the skews of the track changes it crossed "
                          f"({int(kept.size - kept.sum())} of {kept.size} locations), {len(found)} zones")
