"""The drive's buffer, its rotation and its track changes, measured so that no buffer can fool them.

Most hard disks read ahead after every read and keep what they read in a
buffer of a few segments; Linux cannot always turn that off. A read of the
block right after the last one then comes from the buffer, and a sawtooth
that assumes adjacency (Skippy; Talagala et al. 2000) sees no rotation.
So, as DIXtrac (Schindler & Ganger 1999) and Skippy do, the buffer is
found first, and the rest is measured with patterns it cannot serve:

* :func:`measure_buffer` (:mod:`~diskmodel.calibrate.harness.buffer_probe`): whether
  the block after a fresh read is served at once once the read-ahead has had a moment to
  read it (read-ahead), the segment size (the farthest stride still served once
  the read-ahead has had time to get there; the time is filled with re-reads
  of the first block, which the buffer serves), and the number of segments
  (how many fresh reads the first one survives); the segment is then the mean
  reach of the blocks after a fresh read, scanned one by one at many places
  (:mod:`~diskmodel.calibrate.harness.reach_scan`), for a read-ahead to the
  track's end reaches anywhere in a track.
* :func:`measure_rotation`: a descending chain ``c, c - 1, c - 2 ..`` (each
  read below every read before it: nothing buffered) waits nearly a whole
  revolution each time, ``T - x - g`` (x: a block's passage under the head,
  g: the host's gap between reads); a forward chain ``c, c + s, c + 2s ..``
  on the same track, its target not yet passed, waits ``s x - g`` whether the
  drive reads it for this request or for its read-ahead. The two share g:
  ``T = d_back + x - d_fwd(s) + s x``. The host's gap is part of each request's
  overhead as the drive sees it: s clears it at nearly every gap, and x, which
  the formula weighs by s + 1, comes from a descending chain at a stride k of
  0.4 of a track, ``T - k x - g``. Each chain's time is the median of its reads
  that met their sector alike, without those that changed track (they wait the
  skew longer) or lost a revolution.
* :func:`measure_tracks`: a forward chain with a third of a track's stride
  changes track on a third of its steps, each of which waits the skew
  longer: the groups of those excess waits are the track skew (after a head
  switch: the commonest) and the cylinder skew; on a conventional layout a
  cylinder switch comes every ``surfaces`` track changes, which counts the
  surfaces. Where only every H-th track change shows (H >= 2 tracks apart:
  head switches covered by a skew of a few sectors wait too little to see),
  those are the cylinder switches: H surfaces, the track skew and head switch
  not visible. Where the two skews lie within the host's jitter of each
  other, the kinds are told apart by position instead (every H-th track
  change of a run: :mod:`~diskmodel.calibrate.harness.head_switch`). A
  descending chain whose stride lets the wait after a head switch run out
  shows the head switch time: the least time of such a read that still catches
  its sector is the command overhead, the head switch and one block's passage,
  taken as the threshold between the reads that caught their sector and those
  that lost a revolution (:func:`~diskmodel.calibrate.harness.head_switch.caught_limit`:
  the least of many reads is pulled down by their noise; each read's time on its stride's
  line where the host's noise is not the drive's: :func:`~diskmodel.calibrate.harness.head_switch.line_limit`),
  less the same-track floor found alike. The reads after a head switch are told by their
  wait, or, where the kinds were told apart by position, by their position below a cylinder
  switch found. A drive that stops its read-ahead at a sector's end sees the switch rounded
  to whole sectors in each zone, so where the rotation's start points each gave a floor, the
  limit is found at each of them too and the head switch is the mean of their differences
  (:mod:`~diskmodel.calibrate.harness.switch_by_zone`).

Where the read-ahead covers a whole track, no forward read waits for its
sector on its own track; the period then comes from descending chains alone
(:func:`~diskmodel.calibrate.harness.rotation_chains.descending_period`).

Every quantity comes with how it was obtained: ``measured``, ``estimated``
(from a related figure, said in the detail) or ``not visible`` (null).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from diskmodel.calibrate.harness.buffer_probe import BufferMeasurement, measure_buffer, size_buffer
from diskmodel.calibrate.harness.head_switch import (block_passages_again, descending_by_position, line_limit,
                                                     one_cylinder_limit, periodic_kind, track_runs, visible_every,
                                                     wait_groups, without_echoes)
from diskmodel.calibrate.harness.meter import BudgetExhausted, Meter, chain
from diskmodel.calibrate.harness.switch_by_zone import (descending_after_switch, limit_at_start, mean_over_zones,
                                                         stride_limit)
from diskmodel.calibrate.harness.rotation_chains import (NOT_A_DISK, NOT_TIMED, StartPoint, descending_note,
                                                         median_bse, time_start_point)
from diskmodel.model.units import MIB

__all__ = ["BufferMeasurement", "RotationMeasurement", "TrackMeasurement", "measure_buffer", "size_buffer",
           "measure_rotation", "measure_tracks", "Quantity", "chain"]

MEASURED, ESTIMATED, NOT_VISIBLE = "measured", "estimated", "not visible"


@dataclass(frozen=True)
class Quantity:
    """A figure of the drive with how it was obtained (``measured``, ``estimated``, ``not visible``)."""

    value: float | int | None
    status: str
    detail: str

    def to_dict(self) -> dict:
        return {"value": self.value, "status": self.status, "detail": self.detail}


# ---------------------------------------------------------------------------
# Rotation
# ---------------------------------------------------------------------------

@dataclass
class RotationMeasurement:
    """Rotation period [s] (None where no rotation shows), its standard error, the period
    of each start point, the floor of a one-block read on the same track [s] (command
    overhead and a block's passage; a buffer hit's time where the drive reads ahead), the
    time a block takes to pass under the head [s], the host's gap [s] and the start points."""

    period_s: float | None
    period_bse_s: float | None
    period_samples_s: list
    overhead_s: float | None
    block_transfer_s: float | None
    starts_bytes: list
    detail: str
    reads: int = 0
    gap_s: float | None = None
    overhead_status: str = MEASURED
    used_s: float = 0.0
    stopped: str = ""
    transfer_samples_s: list = field(default_factory=list)
    #: each start point's own floor [s] where its reads both caught their sector and lost a revolution
    #: (None elsewhere): a switch's limit at the same start point is measured against it
    floor_samples_s: list = field(default_factory=list)


def measure_rotation(meter: Meter, rng: np.random.Generator, *, budget_s: float, buffer: BufferMeasurement,
                     rate_at, starts: int = 6, min_starts: int = 3, chain_reads: int = 9,
                     precision: float = 2e-3, precision_until_s: float = 0.0,
                     max_starts: int = 24) -> RotationMeasurement:
    """Rotation period from a descending chain and forward chains (see the module doc), at
    *starts* start points spread over the device (at least *min_starts*, more while
    *budget_s* lasts). Where the median period's standard error is then above *precision* of it (a
    noisy host), *starts* more at a time, up to *max_starts*, while the stage's time stays within
    *precision_until_s* [s] (a start point taking the mean of those before it); the track stage times its
    switches at the first *starts* alone."""
    b = meter.block_size_bytes
    reads0, spent0 = meter.reads, meter.used_s
    rough = buffer.rough_period_s
    if rough is None:
        why = buffer.no_revolution_why or (f"a read of the block before the last one takes under 1 ms "
                                           f"({buffer.detail})")
        return RotationMeasurement(None, None, [], None, None, [], f"no rotation: {why}", meter.reads - reads0)
    timed: list[StartPoint] = []

    def new_grid():
        return list((np.arange(starts) + rng.uniform(0.1, 0.6, starts)) / starts)

    grid = new_grid()
    stopped = ""
    failed = 0
    first = None  # how many the first *starts* timed, where more followed
    i = 0
    while True:
        used = meter.used_s - spent0
        if i == len(grid):
            periods = [t.period_s for t in timed]
            # another start point priced at the mean of those so far
            if (len(grid) >= max_starts or len(periods) < 2 or used * (i + 1) / max(i, 1) > precision_until_s
                    or median_bse(periods, robust=True) <= precision * float(np.median(periods))):
                break
            first = first if first is not None else len(timed)
            grid += new_grid()[:max_starts - len(grid)]
        elif first is not None and used * (i + 1) / i > precision_until_s:
            break
        if first is None and i >= min_starts and used > budget_s:
            del grid[i:]  # the first round ends here; more start points only for the period's precision
            continue
        room = 6 * (buffer.segment_bytes or 64 * MIB) + 64 * MIB
        o = int(meter.align(grid[i] * max(meter.size_bytes - room, meter.size_bytes // 4))) + 6 * (chain_reads + 2) * b
        try:
            got = time_start_point(meter, buffer, o, chain_reads=chain_reads, rough=rough, rate_at=rate_at)
        except BudgetExhausted as exc:
            if i < min_starts:
                raise
            stopped = f"; stopped at start point {i + 1}: the {exc.limit} ran out"
            break
        i += 1
        if got == NOT_TIMED:
            failed += 1
            if failed >= min_starts and not timed:
                break  # no forward stride waits less than a revolution: no rotation (flash)
        elif got != NOT_A_DISK:
            timed.append(got)
    periods = [t.period_s for t in timed]
    points = [t.offset_bytes for t in timed]
    floors = [(t.floor, t.floor_from_media, t.block_s) for t in timed]
    xs = [t.block_s for t in timed]
    gaps = [t.gap_s for t in timed]
    chains_at = [t.chains for t in timed]
    first = len(timed) if first is None else first
    more = f" ({len(timed) - first} of them for the period's precision)" if len(timed) > first else ""
    used = meter.used_s - spent0
    if len(periods) < 2:
        return RotationMeasurement(None, None, periods, None, None, points,
                                   f"no rotation period: only {len(periods)} start points gave a forward chain "
                                   f"on its sector's track{stopped}", meter.reads - reads0, used_s=used,
                                   stopped=stopped)
    p = np.asarray(periods)
    period = float(np.median(p))
    bse = median_bse(p)
    for j, xj in block_passages_again(p, chains_at, rough).items():  # where the host's jitter put x off
        xs[j], floors[j], gaps[j] = xj, (*floors[j][:2], xj), chains_at[j][0] * xj - chains_at[j][1]
    # the media's floor where any start point told caught misses from hits, else a hit's time
    # the limit between the reads of the first caught strides' bisections (every start point's: the
    # limit is the command overhead and a block's passage throughout) that caught their sector and
    # those that lost a revolution (less one)
    # (each read's time on its stride's line at its start point: a stride a block longer waits a block's
    # passage more; line_limit)
    # (each entry's reads come with whether each caught its sector: a forward one by its time, a descending
    # chain's by its line)
    lined = [(f, xj, j) for j, (f, m, xj) in enumerate(floors) if m]
    media = np.concatenate([f[0] for f, _, _ in lined]) if lined else np.empty(0)
    caught = np.concatenate([f[2] for f, _, _ in lined]) if lined else np.zeros(0, dtype=bool)
    if not caught.any():
        media = np.empty(0)
    floor = (line_limit(media, caught, period, np.concatenate([f[1] * xj for f, xj, _ in lined]),
                        np.concatenate([np.full(f[0].size, j) for f, _, j in lined])) if media.size
             else float(np.median([f for f, m, _ in floors if not m] or [buffer.hit_s])))
    by_start = [stride_limit(f[0], f[2], period, np.asarray(f[1]) * xj) if m else None for f, m, xj in floors]
    how = ("the floor of a same-track read from where a read loses a revolution" if media.size
           else "the floor of a same-track read is a buffer hit's time")
    return RotationMeasurement(
        period, bse, p.tolist(), floor, float(np.median(xs)), points[:first],
        f"descending and forward chains at {len(periods)} start points{more}{descending_note(chains_at)}: period "
        f"{period * 1e3:.4f} ms "
        f"({60 / period:.1f} rpm), spread {p.std(ddof=1) * 1e6:.2f} us; {how}; {used:.2f} s of budget{stopped}",
        meter.reads - reads0, float(np.median(gaps)), MEASURED if media.size else ESTIMATED, used, stopped,
        xs[:first], by_start[:first])


# ---------------------------------------------------------------------------
# Track changes: skews, surfaces, head switch
# ---------------------------------------------------------------------------

@dataclass
class TrackMeasurement:
    """Track skew, cylinder skew [fractions of a revolution], surfaces, head switch [s], command
    overhead [s], each a :class:`Quantity`; the excess waits of the track changes seen [s]."""

    track_skew: Quantity
    cylinder_skew: Quantity
    surfaces: Quantity
    head_switch: Quantity
    command_overhead: Quantity
    changes_s: list
    detail: str
    reads: int = 0
    one_cylinder: Quantity | None = None  # the one-cylinder seek [s] (None: not looked for)


def _not_visible(why: str) -> Quantity:
    return Quantity(None, NOT_VISIBLE, why)


def _limit_not_above_floor(limit_s: float, floor_s: float, how: str) -> Quantity:
    """The head switch where the limit after a track change came out at or below the same-track floor it
    is measured from: a head switch is never negative or zero, so the two limits (one of them thrown
    off by the path's noise) are reported, not a difference clamped to zero."""
    return _not_visible(f"{how}: the limit after a track change {limit_s * 1e3:.4f} ms is not above the "
                        f"same-track floor {floor_s * 1e3:.4f} ms it is measured from")


#: Reads the one-cylinder seek takes at most: pairs of two reads, 16 a step, over about nine steps.
ONE_CYLINDER_READS = 2 * 16 * 9


def measure_tracks(meter: Meter, rng: np.random.Generator, rotation: RotationMeasurement,
                   buffer: BufferMeasurement, *, chains: int = 4, steps: int = 120,
                   reserve_s: float = 0.0) -> TrackMeasurement:
    """Track and cylinder skew, surfaces, head switch and command overhead (see module doc), and the
    one-cylinder seek where the budget pays for it beyond *reserve_s* [s] (what later stages need)."""
    b = meter.block_size_bytes
    reads0 = meter.reads
    period = rotation.period_s
    none = _not_visible("no rotation: no tracks")
    if period is None:
        return TrackMeasurement(none, none, none, none,
                                _not_visible("no rotation: the latency model holds the per-request time"),
                                [], "no rotation", 0)
    x = rotation.block_transfer_s
    gap = rotation.gap_s or 0.0
    jitter = 0.0
    labels_per_chain, tracks_per_step, origins, strides = [], [], [], []
    for j in range(chains):
        x_here = rotation.transfer_samples_s[j % len(rotation.transfer_samples_s)]
        if x is not None and not x / 3 <= x_here <= 3 * x:
            # a disk's zones pass their blocks within about twice each other (the outermost track is about
            # twice the innermost's length): a start point's passage over three times off the median is not
            # its zone's, but the host's noise at that start point
            x_here = x
        start = rotation.starts_bytes[j % len(rotation.starts_bytes)]
        n_track = period / x_here
        s = max(1, int(round(n_track / 3)))
        o = min(start + 64 * MIB + j * b, meter.size_bytes - (steps + 2) * s * b)
        t = chain(meter, o, s, steps, "tracks")
        base = float(np.median(t))
        near = t[np.abs(t - base) < 0.02 * period]
        # the host's jitter from the reads that waited alike (the median's); all of them when too few did
        near = near if near.size >= 4 else t
        jitter = max(jitter, 2 * float(np.subtract(*np.percentile(near, [75, 25]))))
        dev = (t - base + 0.1 * period) % period - 0.1 * period
        labels_per_chain.append(dev)
        tracks_per_step.append(s / n_track)
        origins.append(o)
        strides.append(s)
    all_dev = np.concatenate(labels_per_chain)
    threshold = max(0.03 * period, 3 * jitter)
    crossing = all_dev > threshold
    groups = without_echoes(wait_groups(all_dev[crossing], period, jitter), labels_per_chain, threshold)
    detail = (f"{all_dev.size} forward reads a third of a track apart, {int(crossing.sum())} changed track: "
              + ", ".join(f"{len(m)} waited {c / period:.4f} rev longer" for c, m in groups))
    if not groups:
        return TrackMeasurement(_not_visible(detail), _not_visible(detail), _not_visible(detail),
                                _not_visible(detail), _overhead(rotation, buffer, x), [], detail,
                                meter.reads - reads0)
    # Head and cylinder skews are whole numbers of sectors, so a real difference of the two waits is at
    # least a block's passage, the quantum of every wait here; two, so that the smallest one that can be
    # told (the t statistic and the shuffles judge the noise) is no rounding. A floor in revolutions
    # instead would drop a real difference near it about half the time, by the noise of its estimate.
    periodic = (periodic_kind(labels_per_chain, threshold, (groups[0][1].min(), groups[0][1].max()), 2 * x,
                              tracks_per_step)
                if len(groups) == 1 else None)
    if periodic is not None:
        h, ca, cb, t_stat = periodic.surfaces, periodic.head_s, periodic.cylinder_s, periodic.t
        groups = [(ca, None), (cb, None)]
        track = Quantity(ca / period, MEASURED, f"the skew of the track changes between cylinder switches (head "
                                               f"switches); {detail}")
        cyl = Quantity(cb / period, MEASURED, f"the skew of every {h}th track change (a cylinder switch, "
                                             f"t = {t_stat:.1f}); {detail}")
        surfaces = Quantity(h, MEASURED, f"every {h}th track change waits {1e6 * abs(ca - cb):.0f} us {'less' if cb < ca else 'more'} than the "
                                         f"others (t = {t_stat:.1f}): a cylinder switch every {h} track changes")
        kind_centre, other = ca, cb
    elif len(groups) == 1 and (every := visible_every(labels_per_chain, tracks_per_step, threshold,
                                                        (groups[0][1].min(), groups[0][1].max()))) is not None:
        # only every H-th track change shows: the cylinder switches of H surfaces, whose head
        # switches wait less than the threshold longer than a same-track read (a skew of a few
        # sectors covering a short head switch): they pass unseen
        h, spacings = every
        unseen = (f"the head switches between them wait less than {threshold / period:.3f} rev longer than a "
                  f"same-track read: below what the timing resolves")
        track = _not_visible(unseen)
        cyl = Quantity(groups[0][0] / period, MEASURED, f"the skew of the track changes that show, every {h} "
                                                        f"tracks (cylinder switches); {detail}")
        surfaces = Quantity(h, MEASURED, f"only every {h}th track change shows ({len(spacings)} spacings of "
                                         f"{np.min(spacings):.2f}..{np.max(spacings):.2f} tracks): a cylinder "
                                         f"switch every {h} tracks; {unseen}")
        return TrackMeasurement(track, cyl, surfaces, _not_visible(unseen), _overhead(rotation, buffer, x),
                                all_dev[crossing].tolist(), detail, meter.reads - reads0)
    elif len(groups) == 1:
        why = ("every track change seen waited alike: one kind of track change (one surface, or a "
               "serpentine layout whose tracks follow each other across cylinders), or head and cylinder "
               "switches whose skews the host's jitter does not tell apart")
        skew = groups[0][0] / period
        track = Quantity(skew, ESTIMATED, "the skew of every track change seen (head and cylinder switches "
                                          "not told apart); " + detail)
        cyl = Quantity(skew, ESTIMATED, track.detail)
        kind_centre, other = groups[0][0], None
        surfaces = _not_visible(why)
    else:
        (ca, ma), (cb, mb) = groups
        if len(ma) < 2.5 * len(mb) and cb < ca:  # about as many of each (few surfaces): the faster is the head switch
            (ca, ma), (cb, mb) = (cb, mb), (ca, ma)
        track = Quantity(ca / period, MEASURED, "the skew of the commonest track change (a head switch); " + detail)
        cyl = Quantity(cb / period, MEASURED, "the skew of the rarer track change (a cylinder switch); " + detail)
        kind_centre, other = ca, cb
        # surfaces: on a conventional layout a cylinder switch comes every `surfaces` track changes
        # (in tracks: each change has its track's index along its run of changes, so that an
        # outlier taken for a change, or a change it hid, does not shift the count)
        spacings = []
        tol = 0.5 * abs(cb - ca)
        band = (min(ma.min(), mb.min()), max(ma.max(), mb.max()))
        for _, _, index, waits in track_runs(labels_per_chain, threshold, band, tracks_per_step)[0]:
            spacings += np.diff(index[np.abs(waits - cb) < tol]).tolist()
        # the spacing most seen, where at least three in four agree (a track change put in the
        # wrong group, by the host's jitter, splits or joins one spacing, not the layout)
        values, counts = np.unique(spacings, return_counts=True) if spacings else (np.array([]), np.array([]))
        common = int(values[np.argmax(counts)]) if values.size else 0
        if len(spacings) >= 2 and common >= 2 and counts.max() >= 0.75 * len(spacings):
            surfaces = Quantity(common, MEASURED, f"a cylinder switch every {common} track changes "
                                                  f"({counts.max()} of {len(spacings)} spacings)")
        else:
            surfaces = _not_visible(f"the rarer track change does not come at a fixed spacing "
                                    f"({spacings[:8]}): not a conventional layout")
    by_position = (periodic, origins, strides) if periodic is not None else None
    head = _head_switch(meter, rotation, buffer, kind_centre, other, gap, jitter, len(groups) == 2, by_position)
    one = _not_visible("the budget ran out before it was measured")
    if other is None or abs(other - kind_centre) <= 2 * jitter:
        one = _not_visible("head and cylinder switches not told apart by their wait")
    elif meter.remaining_s - reserve_s > 1.5 * ONE_CYLINDER_READS * 0.7 * period:
        try:
            one = _one_cylinder(meter, rotation, buffer, other, kind_centre, gap, (labels_per_chain, origins, strides))
        except BudgetExhausted:
            pass
    return TrackMeasurement(track, cyl, surfaces, head, _overhead(rotation, buffer, x),
                            all_dev[crossing].tolist(), detail, meter.reads - reads0, one)


def _same_track_floor(rotation: RotationMeasurement, buffer: BufferMeasurement):
    """The least time of a read on the same track [s], what a switch is measured against, and whether it is
    estimated: a miss's command overhead and a block's passage (forward_start), or where no caught miss was
    told from a hit, a hit's time less its bus transfer (the command overhead) and a block's passage."""
    if rotation.overhead_status == ESTIMATED:
        return rotation.overhead_s - buffer.bus_block_s + rotation.transfer_samples_s[0], True
    return rotation.overhead_s, False


def _one_cylinder(meter, rotation, buffer, cylinder_s, head_s, gap, chains) -> Quantity:
    """The one-cylinder seek: the least time of a read just past a cylinder switch that still catches
    its sector (:func:`~diskmodel.calibrate.harness.head_switch.one_cylinder_limit`, from the forward
    chains' reads that crossed a cylinder switch), less the same-track floor, as the head switch is."""
    b = meter.block_size_bytes
    tol = 0.45 * abs(cylinder_s - head_s)
    anchors, reach = [], []
    for dev, origin, stride in zip(*chains):
        for i in np.flatnonzero(np.abs(np.asarray(dev) - cylinder_s) < tol):
            anchors.append(origin + (int(i) + 1) * stride * b)
            reach.append(stride)
    if len(anchors) < 4:
        return _not_visible(f"{len(anchors)} forward reads crossed a cylinder switch: too few anchors")
    x = rotation.transfer_samples_s[0]
    same_track, estimated = _same_track_floor(rotation, buffer)
    limit = one_cylinder_limit(meter, anchors_bytes=anchors, period_s=rotation.period_s, gap_s=gap,
                               floor_s=rotation.overhead_s, block_s=x, kind_s=cylinder_s, tol_s=tol,
                               reach_blocks=int(min(reach)))
    if limit is None:
        return _not_visible("too few reads after a cylinder switch were told near their limit")
    if limit <= same_track:
        return _limit_not_above_floor(limit, same_track, "the reads after a cylinder switch")
    return Quantity(limit - same_track, ESTIMATED if estimated else MEASURED,
                    f"{len(anchors)} cylinder switches as anchors: least time of a read after one that caught its "
                    f"sector {limit * 1e3:.4f} ms, less the same-track floor {same_track * 1e3:.4f} ms")


def _overhead(rotation: RotationMeasurement, buffer: BufferMeasurement, x: float) -> Quantity:
    if rotation.overhead_status == ESTIMATED:
        return Quantity(max(rotation.overhead_s - buffer.bus_block_s, 0.0), ESTIMATED,
                        f"a buffer hit's time less its bus transfer ({buffer.bus_block_s * 1e6:.2f} us a block): "
                        "the overhead of a hit, taken as a miss's")
    return Quantity(max(rotation.overhead_s - x, 0.0), MEASURED,
                    "the least time of a forward read on the same track, less one block's passage")


def _head_switch(meter, rotation, buffer, kind, other, gap, jitter, two_kinds: bool, by_position=None) -> Quantity:
    """The least time of a descending read after a head switch that still catches its sector (the
    threshold between those that did and those that lost a revolution, :func:`caught_limit`), near the
    stride at which its wait runs out (bisection on the share of such reads that missed a revolution),
    less the same-track floor. The reads after a head switch are told by their wait (the commonest track change), or,
    where the forward chains told the two kinds apart by position (*by_position*: the periodic
    kinds, the forward chains' origins and strides), by position
    (:func:`~diskmodel.calibrate.harness.head_switch.descending_by_position`)."""
    period, x, floor0 = rotation.period_s, rotation.transfer_samples_s[0], rotation.overhead_s
    same_track, estimated = _same_track_floor(rotation, buffer)
    status = ESTIMATED if estimated else MEASURED
    hit = " (a buffer hit's time, less its bus transfer, plus a block's passage)" if estimated else ""
    if by_position is not None:
        kinds, origins, strides = by_position
        lows, highs, chains_read, told, (in_low, in_high) = descending_by_position(
            meter, period_s=period, gap_s=gap, floor_s=floor0, block_s=x, kinds=kinds, origins_bytes=origins,
            strides_blocks=strides)
        how = (f"{chains_read} descending chains from the cylinder switches found (every {kinds.surfaces}th track "
               f"change), {told} reads after a head switch told by position")
        if not lows:
            return _not_visible(f"{how}: none caught its sector near the limit")
        # each read less its own block's passage (the chains lie in several zones); the reads of a chain
        # (one stride) alike
        floor = line_limit(np.r_[lows, np.asarray(highs) + period], np.r_[np.ones(len(lows)), np.zeros(len(highs))],
                           period, np.zeros(len(lows) + len(highs)), np.r_[in_low, in_high])
        if floor <= same_track - x:
            return _limit_not_above_floor(floor, same_track - x, how)
        value = floor - (same_track - x)
        return Quantity(value, status, f"{how}: least time of one that caught its sector (the threshold to those that "
                                       f"missed it), less its block's passage, "
                                       f"{floor * 1e3:.4f} ms, less the same-track floor less a block's passage "
                                       f"{(same_track - x) * 1e3:.4f} ms{hit}")
    # our kind of read: its excess wait within 0.45 of the way to the other kind's, or (where the
    # two are closer than the host's jitter) any track change's: the least such read is still
    # ours where the other kind waits longer after its change
    apart = abs(kind - other) if other is not None else kind
    tol = 0.45 * (apart if apart > 2 * jitter else kind)
    start = rotation.starts_bytes[0] + 16 * MIB
    cursor = [min(start, meter.size_bytes - 1)]

    def wrapped_share(k: int):
        t, ours = descending_after_switch(meter, cursor, k, 15, block_s=x, period_s=period, gap_s=gap, kind_s=kind,
                                          tol_s=tol)
        if not ours.any():
            return None, t, ours
        return float(np.mean(t[ours] > 0.5 * period)), t, ours

    k_lo = max(1, int((period - kind - gap - floor0 - 4e-3) / x))
    k_hi = max(k_lo + 1, int((period - kind - gap - floor0) / x) + 1)
    lows, highs, times, strides = [], [], [], []
    for _ in range(24):
        if k_hi - k_lo <= 1:
            break
        mid = (k_lo + k_hi) // 2
        share, t, ours = wrapped_share(mid)
        if share is None:
            break
        lows += t[ours & (t < 0.5 * period)].tolist()
        highs += (t[ours & (t >= 0.5 * period)] - period).tolist()
        times += t[ours].tolist()
        strides += [mid] * int(ours.sum())
        if share > 0.5:
            k_hi = mid
        else:
            k_lo = mid
    if not lows:
        return _not_visible("no descending read after the commonest track change was caught near its limit")
    # a read that still caught its sector waited >= 0 past the limit, one that missed it by
    # less than a stride's step: the limit lies between the two kinds (the second less a revolution),
    # each read's time on its stride's line (a stride of k blocks back waits k blocks' passage less)
    t = np.asarray(times)
    floor = line_limit(t, t < 0.5 * period, period, -x * np.asarray(strides, dtype=float))
    if floor <= same_track:
        return _limit_not_above_floor(floor, same_track, "the reads after the commonest track change")
    value = floor - same_track
    how = (f"least time of a read after a head switch (the threshold between those that caught their sector and "
           f"those that missed it) {floor * 1e3:.4f} ms, less the same-track floor {same_track * 1e3:.4f} ms{hit}")
    # where a whole sector starts each move (a read-ahead stopped at a sector's end), one zone sees the switch
    # rounded to whole sectors: the mean over the start points of each one's limit less its own floor
    # (switch_by_zone)
    if two_kinds and apart > 2 * jitter:
        xs_at = rotation.transfer_samples_s
        limits = [None if flo is None else
                  limit_at_start(meter, start_bytes=min(int(o) + 16 * MIB, meter.size_bytes - 1), block_s=xj,
                                 strides_s=(k_lo * x, k_hi * x), period_s=period, gap_s=gap, kind_s=kind,
                                 tol_s=tol).limit_s
                  for o, xj, flo in zip(rotation.starts_bytes, xs_at, rotation.floor_samples_s)]
        zoned, kept = mean_over_zones(limits, rotation.floor_samples_s, xs_at)
        if zoned is not None and len(kept) >= 2 and zoned > 0:
            value = zoned
            how = (f"mean over {len(kept)} start points of the least time of a read after a head switch there (the "
                   f"threshold between those that caught their sector and those that missed it) less the same-track "
                   f"floor there: {', '.join(f'{d * 1e3:.4f}' for d in kept)} ms (one zone sees the switch rounded to "
                   f"whole sectors); pooled, {floor * 1e3:.4f} ms less {same_track * 1e3:.4f} ms")
    if not two_kinds:
        return _not_visible(f"one kind of track change seen (one surface, a serpentine layout, or head and "
                            f"cylinder switches told apart neither by their wait nor by their position): the "
                            f"positioning after one takes {value * 1e3:.3f} ms")
    if apart <= 2 * jitter:
        # the reads after a head switch and after a cylinder switch are not told apart by their
        # wait: the least of them is the faster of a head switch and a one-cylinder move
        return Quantity(value, ESTIMATED, f"the least time of a read after a track change {floor * 1e3:.4f} ms, "
                                          f"less the same-track floor {same_track * 1e3:.4f} ms: the faster of a "
                                          f"head switch and a one-cylinder move (the two kinds of track change "
                                          f"wait within the host's jitter of each other)")
    return Quantity(value, status, how)
