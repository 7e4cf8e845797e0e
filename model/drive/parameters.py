"""The drive the per-request simulation serves: :class:`DriveParameters`.

Everything :func:`diskmodel.model.simulator.simulate.simulate_requests` needs to know
about one drive, after DiskSim 4.0's disk model (Ganger, Worthington, Patt et
al., CMU PDL): the LBN mapping (:class:`~diskmodel.model.simulator.mapping.ZoneLayout`),
the seek curve tabulated at every whole cylinder distance, rotation, head
switch and write settle, the controller's overheads, the bus, the buffer
cache and its read-ahead and write policies. :meth:`DriveParameters.from_disk`
is the bridge from a :class:`~diskmodel.model.drive.disk.Disk` (a preset, a
calibration's ``to_disk()``); :func:`diskmodel.model.disksim_drives.convert.drive_parameters`
builds one from DiskSim's files; tests and what-ifs build them directly.
Pure validated data, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import evolve as _evolve
from .._checks import finite_array, finite_scalar, flag, show, whole_number
from .disk import Disk
from .cache import DriveCache
from ..simulator.mapping import ZoneLayout

__all__ = ["DriveParameters", "buffer_fields"]


@dataclass(frozen=True, eq=False)
class DriveParameters:
    """Everything the per-request simulation needs [s, blocks].

    Attributes
    ----------
    name : str
    layout : ZoneLayout
        Zones, skews, spares and slips (LBN -> PBN).
    seek_by_distance_s : ndarray
        Seek time [s] for every whole cylinder distance 0..N-1 (read curve);
        ``write_seek_by_distance_s`` the write curve (same as read if absent).
    rpm : float
    head_switch_s, write_settle_s : float
        Head switch [s]; extra settle added to a non-zero move before a write
        [s] (may be negative, as DiskSim allows, but a move never costs < 0).
    command_overhead_s : ndarray, shape (2, 2, 2)
        [kind (0 read, 1 write), hit (0 miss, 1 hit), previous (0 read, 1 write)] [s].
    read_completion_s, write_completion_s, data_preparation_s, reselect_s : float
        Controller overheads at completion, before a hit's transfer, and on
        reconnecting to the bus for a miss's transfer [s].
    bus_read_block_s, bus_write_block_s : float
        Time to move one block between host and buffer [s].
    read_watermark : float
        Fraction of a read miss's blocks buffered before the bus transfer
        starts (0: from the first block).
    buffer_segments, segment_size_blocks, max_read_ahead_blocks : int
        ``buffer_segments`` 0: no buffer, every request goes to the media.
    read_ahead_over_requested : bool
        Without a maximum read-ahead, the read-ahead may replace the data
        just returned to the host (else it stops when the segment is full);
        with a maximum, the read-ahead goes that far either way (DiskSim).
    read_ahead_on_idle_hit : bool
        A read hit restarts the read-ahead at the segment's end.
    fast_write_level : int
        0 none; 1 and 2: a write is reported once its data are in the
        buffer, and one not appending to a write still being written waits
        for it to reach the media (DiskSim's LIMITED and FULL fast write
        differ only for queued requests, ``src/disksim_diskctlr.c``).
    read_hits_on_write_data, separate_write_segment : bool
    read_ahead_scheme : int
        DiskSim's "Buffer continuous read": 0 none, 1 to the end of the
        track, 2 to the end of the cylinder, 3 until the segment is full
        (bounded by ``max_read_ahead_blocks``), 4 (DEC) to the end of the
        track holding the block after the request, and a track further when
        the segment starts before that track (DiskSim's code,
        ``disk_buffer_get_max_readahead``, not bounded by the maximum).
    minimum_write_seek_s : float
        The shortest positioning before a non-sequential write [s]
        (DiskSim's "Minimum seek delay").
    write_disconnect_s : float
        A write that is not reported immediately takes its data after the
        command overhead and ``data_preparation_s`` (a sector whose data is
        not there in time costs a revolution), then disconnects from the bus
        for this long; it reconnects (``reselect_s``) to report completion
        once its last sector is written and the disconnection is over [s]
        (DiskSim 4.0, ``src/disksim_diskctlr.c``).
    other_reselect_s : float
        DiskSim's "Other reselect overhead": the reconnection for the
        completion of a write that had an extra disconnect [s].
    extra_write_disconnect : bool
        DiskSim's "Extra write disconnect": a write-through write after a
        write that it does not append to disconnects at once
        (``disk_buffer_select_segment``, ``src/disksim_diskcache.c``): the
        mechanism starts after ``extra_disconnect_command_s +
        extra_disconnect_seek_delta_s``; the data come after the command
        overhead, ``extra_disconnect_s``, ``extra_inter_disconnect_s``,
        ``reselect_s`` and ``data_preparation_s``; the disconnection after
        the data takes ``extra_second_disconnect_s``, the completion's
        reconnection ``other_reselect_s``.
    extra_disconnect_command_s, extra_disconnect_s, extra_inter_disconnect_s, extra_second_disconnect_s, \
extra_disconnect_seek_delta_s : float
        DiskSim's "Extradisc command overhead", "... disconnect overhead",
        "... inter-disconnect delay", "... 2nd disconnect overhead", "...
        seek delta" [s].
    stop_read_ahead_in_sector : bool
        DiskSim's "Stop prefetch in sector": a request that needs the
        mechanism stops a running read-ahead at once, within a sector; else
        (False) at the end of the sector being read or waited for, and
        the request's seek starts that much after its command overhead
        (``disk_buffer_stopable_access`` and ``disk_check_hda``,
        ``src/disksim_diskctlr.c``). A move to the next track under way is
        finished either way.
    read_any_free_blocks : bool
        The drive keeps the sectors of the track that pass under the head
        before the requested ones (during the rotational latency), as
        DiskSim's manual describes "Read any free blocks" (our
        ``disksim_code=False`` reading); with ``immediate_access_under_head``
        it is the mended DiskSim code's immediate first-track access instead
        (see there; :func:`diskmodel.model.disksim_drives.convert.drive_parameters` with
        ``disksim_access_block_bug=False``); DiskSim 4.0's own code never acts
        on it (False, that function's default).
    hold_bus_read : bool
        DiskSim's "Hold bus entire read xfer": when the host has taken every
        buffered block of a read before the next one is read, the drive
        keeps the bus and sends each block as it is read (True); else
        (False) it disconnects (``read_disconnect_s``) and reconnects
        (``reselect_s`` + ``data_preparation_s``) once the watermark's
        blocks, or the rest of the request, are buffered
        (``disk_buffer_transfer_size``, ``disk_request_needs_bus``,
        ``src/disksim_diskctlr.c``).
    read_disconnect_s : tuple of float
        DiskSim's "Read disconnect afterread" and "... afterwrite" [s]: a
        read miss disconnects after its command overhead plus this (by the
        previous request's kind), and reconnects no earlier; a read
        disconnecting during its transfer takes it too
        (``disk_read_arrive``, ``disk_reconnection_or_transfer_complete``).
    never_disconnect : bool
        DiskSim's "Never disconnect": a read miss keeps the bus from its
        arrival (its data start after the command overhead and
        ``data_preparation_s``, with no reconnection) and holds it as
        ``hold_bus_read`` (``disk_read_arrive``,
        ``disk_buffer_transfer_size``); a write never suffers the extra
        write disconnect (``disk_buffer_select_segment``); with fast writes
        an appending write is taken at once and queued, as with
        ``write_prebuffering`` (``disk_write_arrive``: ``neverdisconnect ||``).
    min_read_ahead_blocks : int
        DiskSim's "Minimum read-ahead (blks)": a read-ahead that has not
        reached this many blocks past the request's end when the next
        request needs the mechanism cannot be stopped; it reads on to that
        block and ends there (``disk_buffer_stopable_access``).
    preseeking_level : int
        DiskSim's "Preseeking level" (0, 1, 2): above 0 a read gives up the
        mechanism once its completion is sent (2: even before), and DiskSim
        then marks its segment empty (``disk_release_hda``,
        ``src/disksim_diskctlr.c``, assigns the truth value 1 of its caching
        test to the segment's state, which is ``BUFFER_EMPTY``). One request
        at a time this is all it does, at 1 and 2 alike: a read whose media
        access, read-ahead included, ends before the host has its completion
        leaves no hits behind, and its segment is the first replaced.
    watermark_by_request_size : bool
        DiskSim's "Set watermark by reqsize": ``read_watermark`` is a
        fraction of the request (of at most a segment), at least one block
        (True); else of the segment, rounded up (``disk_buffer_set_segment``,
        ``src/disksim_diskcache.c``).
    immediate_partial_hit_transfer : bool
        DiskSim's "Immed transfer partial hit": a read whose first blocks are
        buffered, or being read ahead, takes the bus after the read hit
        overhead (True); else, with fewer of its blocks buffered than the
        watermark, it disconnects as a miss (read miss overhead plus the
        read disconnect) and reconnects once the watermark's blocks are
        there (``disk_read_arrive``, ``src/disksim_diskctlr.c``).
    write_hit_stops_read_ahead : bool
        DiskSim's "Write hit stop prefetch": a write overlapping the blocks a
        running read-ahead has buffered stops it even short of its
        ``min_read_ahead_blocks`` (True); else the read-ahead reads on to its
        minimum first (``disk_buffer_stopable_access``). Without a minimum
        it changes nothing.
    write_prebuffering : bool
        DiskSim's "Allow write prebuffering": a fast write appending to the
        write segment while writes are on their way to the media is taken at
        once (reported after its overhead and bus transfer) and queued: each
        queued write gets its own media access from its first block once the
        previous one ends, writing on through the segment's buffered data; a
        read miss waits for them all (``disk_write_arrive``,
        ``disk_buffer_sector_done``, ``disk_buffer_request_complete``;
        :mod:`diskmodel.model.simulator.writequeue`). Without fast writes it
        changes nothing here. As DiskSim with a first-come-first-served queue
        (``write_segments`` for more than one write segment).
    hold_bus_write : bool
        DiskSim's "Hold bus entire write xfer", for a write larger than its
        segment (the segment holds at most ``segment_size_blocks`` blocks
        not yet on the media): when the segment is full the drive keeps the
        bus and sends a block as each one is written (True); else (False)
        it disconnects (``write_disconnect_s``) and reconnects
        (``reselect_s`` + ``data_preparation_s``) once the blocks not yet
        written are down to the write watermark
        (``disk_buffer_transfer_size``, ``disk_request_needs_bus``;
        :mod:`diskmodel.model.simulator.big_transfer`).
    write_watermark_fraction : float
        DiskSim's "Low (write) water mark", in [0, 1]: the fraction of the
        segment (at least one block with ``watermark_by_request_size``,
        else rounded up) down to which the blocks not yet written must fall
        before a disconnected write larger than its segment reconnects.
    write_segments : int
        DiskSim's "Maximum number of write segments", >= 1: with
        ``write_prebuffering`` and more than one, a fast write that does not
        append to the writes on their way to the media (or appends past the
        room of their segment) is taken at once too, into a segment of its
        own, while fewer than this many segments hold data not yet written,
        and queued first come first served
        (``disk_buffer_select_write_segment``: an empty or clean segment while
        ``numdirty < numwritesegs``; :mod:`diskmodel.model.simulator.writequeue`).
    almost_read_hits : bool
        DiskSim's "Allow almost read hits": a read whose first block is the
        one the running read-ahead reads next is a partial hit on the
        read-ahead's segment, not a miss (``disk_buffer_check_segments``,
        ``src/disksim_diskcache.c``; ``disk_buffer_stopable_access``).
    sneaky_full_read_hits, sneaky_partial_read_hits : bool
        DiskSim's "Allow sneaky full/partial read hits": a read whose blocks
        are all (full) or first (partial) in the buffer is served at once
        even while the mechanism is busy writing a fast write (True); else
        it disconnects as a miss and is served once that write's access
        ends (``disk_read_arrive``, ``disk_activate_read``).
    caching : bool
        DiskSim's "Enable caching in buffer": the segments keep their blocks
        for later read hits (True, DiskSim's 1 and 2 alike); else (0) they
        stage each request's transfer only and are empty when the next
        request arrives: every read is a miss (``disk_buffer_check_read_segments``
        finds no hit; ``disk_reconnection_or_transfer_complete`` and
        ``disk_release_hda`` leave a read's or a write's segment
        ``BUFFER_EMPTY``), the watermarks and the segment size still act on
        the transfer. Needs ``read_ahead_scheme`` 0, ``fast_write_level`` 0 and
        no ``read_any_free_blocks`` (DiskSim's ``disk_postpass_perdisk``
        stops on each).
    immediate_read : bool
        DiskSim's "Immediate buffer read" (zero-latency reads) as DiskSim
        4.0's code runs it: a read-ahead held back while the read owning its
        segment is sent, let go mid-track, reads the sectors under the head
        first and the front when it comes round, those sectors joining the
        segment with the front's last block; meanwhile the circular segment
        drops its first blocks for them (``disk_buffer_sector_done``'s
        ``immedstart``/``immedend``, ``disk_buffer_segment_wrap``). On g1 and
        g2 layouts an access reaching its track waits for its first block
        either way (DiskSim's ``g1_access_block`` never starts under the head;
        :mod:`diskmodel.model.simulator.immediate`); on a g4 layout each track a
        read reaches whose head lands inside its span starts at the next
        sector boundary, reads the wanted blocks from there (to the read's
        end, or the read-ahead's limit) and the ones before on the way round
        (``g4_atop`` finds the sector: ``real[REAL_IMMEDIATE_READ_G4]``,
        :func:`diskmodel.model.simulator.access_block.immediate_read_run`).
    immediate_access_under_head : bool
        An immediate access (a read's first track with
        ``read_any_free_blocks`` unless it starts at the track's first block)
        whose head lands strictly inside
        its span on the track (the wanted block's sector to the track's last
        sector) starts at the next sector boundary under the head, reads to
        the end of the track and wraps round to its first sector; the blocks
        read before the way round reach the segment, and the host, with the
        last block before them, and the track's blocks before the first
        wanted one join the segment (DiskSim's design as its manual and
        DiskSim 3.0 define it: ``g1_access_block`` and ``dm_latency_g1`` of
        ``diskmodel/mech_g1.c``, ``disk_buffer_seekdone`` and
        ``disk_buffer_sector_done`` of ``src/disksim_diskctlr.c``;
        :mod:`diskmodel.model.simulator.access_block`). With it
        ``read_any_free_blocks`` means this, not the passing sectors above.
        False: DiskSim 4.0's code, whose ``g1_access_block`` takes its
        conversion's success value (negative) for failure, so an immediate
        access always waits for its first wanted sector.
    combine_seq_writes : bool
        DiskSim's "Combine seq writes": a fast write appending to the data of
        a write segment not yet on the media joins that segment
        (``disk_buffer_select_write_segment``: BUFFER_APPEND, and BUFFER_PREPEND,
        only with it), and so may stop the access under way for its own data
        (``disk_buffer_stopable_access`` wants BUFFER_APPEND) or, with
        ``write_prebuffering``, be queued behind it (True). Else (0) it is
        taken as a write that does not append: it waits for the write under
        way to reach the media and takes a segment of its own
        (:func:`diskmodel.model.simulator.writequeue._combines`).
    queue_scheduling_policy : int
        The "Scheduling policy" of the disk's own queue, which orders the
        writes queued with ``write_prebuffering`` and a read miss arriving
        behind them: 1 first come first served; 2, 3, 4, 17 (ELEVATOR_LBN,
        CYCLE_LBN, SSTF_LBN, VSCAN_LBN) by block number from the last
        request given the mechanism; 8, 9, 14, 15, 20, 21 (SPTF_OPT ...
        PRI_ASPCTF_OPT) the least estimated positioning time first
        (``ioqueue_get_request_from_opt_sptf_queue``,
        ``disk_buffer_estimate_servtime``;
        :mod:`diskmodel.model.simulator.writequeue`,
        :data:`diskmodel.model.disksim_drives.honoured.PREBUFFERING_POLICIES`).
    immediate_write : bool
        DiskSim's "Immediate buffer write" (zero-latency writes). On g4
        layouts each track of a write whose head lands inside its span (the
        first wanted sector to the track's last) starts at the next sector
        boundary, writes the wanted blocks from there whose data are in the
        buffer, and the blocks before them on the way round
        (``g1_access_block`` with ``g4_atop``; ``disk_buffer_sector_done``'s
        ``immedstart``/``immedend``:
        :func:`diskmodel.model.simulator.access_block.immediate_write_track`).
        On g1 and g2 layouts DiskSim 4.0 never starts a write under the head
        (``g1_access_block``'s ``DM_OK`` slip), and the key acts only on
        policy 21's estimate (a zero-latency write landing inside its span on
        the track counts the track's sectors outside the span,
        ``dm_latency_g1``).
    constant_access_s : float or None
        DiskSim's driver "Constant access time" (``iodriver_schedule``,
        ``src/disksim_iodriver.c``): a request does not reach the bus, the
        controller or the disk, it completes this long after its arrival
        [s]. A positive value in the .parv is that time; -1 and -3 take the
        trace's access time, ``tempint2`` / 1000, which DiskSim's validate
        traces leave 0 (``iotrace_validate_get_ioreq_event``): 0.0. None (the
        .parv's 0 and -2): the drive is simulated.
    bus_arbitration_s : float
        The "Arbitration time" of the disk's bus: each acquisition of that bus
        waits it (``bus_ownership_get``, ``src/disksim_bus.c``): the pass-thru
        controller's for sending a request down, the disk's for each
        reconnection (``disk_send_event_up_path``, ``src/disksim_diskctlr.c``)
        [s]. The bus above a controller at depth 0 is never arbitrated
        (``controller_get_upward_busno`` gives -1).
    controller_delay_s : float
        The pass-thru controller's delay on each message it passes, its
        "Scale for delays" x PASSTHRU_DELAY (1.0 ms;
        ``controller_passthru_event_arrive``, ``controller_send_event_down_path``
        and ``_up_path``, ``src/disksim_ctlrdumb.c`` and
        ``src/disksim_controller.c``) [s]: a request down, each disconnect,
        ready-to-transfer and reconnect up and the driver's answer down, the
        completion up.
    read_direct_to_buffer : bool
        DiskSim's "Read directly to buffer": whether a read sector's room in
        the buffer is asked at the sector's start (True, DiskSim's 1) or at its
        end, a separate sector buffer holding it meanwhile (False, 0:
        ``disk_buffer_sector_done``, ``src/disksim_diskctlr.c``). It acts where
        a sector may have no room: a read-ahead held while its segment's owner
        is sent, a read larger than its segment
        (:mod:`diskmodel.model.simulator.read_direct`).
    per_request_overhead_s : float
        DiskSim's "Per-request overhead time" (times the time scale) [s]: a
        request reaches the disk's controller that long after it reaches the
        disk (``disk_event_arrive``, ``src/disksim_diskctlr.c``:
        DEVICE_OVERHEAD_COMPLETE, then ``disk_request_arrive``), so what the
        buffer holds, whether the read-ahead may stop and every overhead count
        from then; its service time counts from the arrival. Not part of
        ``command_overhead_s``.
    host_turnaround_s : float or None
        The host's time from a request's completion to the dispatch of the
        next one, which was already waiting in the host's queue (queue depth 1
        at the drive): the completion interrupt, the block layer's completion
        and its next dispatch [s]. A request arriving later is dispatched on
        arrival. None: DiskSim's driver, which dispatches a waiting request at
        the completion (0). It matters on a drive that reads ahead: its
        read-ahead starts at the completion, so a sequential request
        dispatched a few microseconds later finds its first block coming in,
        while one dispatched at the very instant misses it by the command
        overhead and waits a revolution. The I/O path sets it
        (:data:`diskmodel.model.iopath.timing.HOST_TURNAROUND_S`).
    """

    name: str
    layout: ZoneLayout
    seek_by_distance_s: np.ndarray
    rpm: float
    head_switch_s: float
    write_settle_s: float
    command_overhead_s: np.ndarray
    read_completion_s: float = 0.0
    write_completion_s: float = 0.0
    data_preparation_s: float = 0.0
    reselect_s: float = 0.0
    bus_read_block_s: float = 0.0
    bus_write_block_s: float = 0.0
    read_watermark: float = 0.0
    buffer_segments: int = 1
    segment_size_blocks: int = 256
    max_read_ahead_blocks: int = 0
    read_ahead_over_requested: bool = False
    read_ahead_on_idle_hit: bool = False
    fast_write_level: int = 0
    read_hits_on_write_data: bool = True
    separate_write_segment: bool = False
    write_seek_by_distance_s: np.ndarray | None = None
    read_ahead_scheme: int = 3
    minimum_write_seek_s: float = 0.0
    read_any_free_blocks: bool = False
    write_disconnect_s: float = 0.0
    stop_read_ahead_in_sector: bool = False
    other_reselect_s: float = 0.0
    extra_write_disconnect: bool = False
    extra_disconnect_command_s: float = 0.0
    extra_disconnect_s: float = 0.0
    extra_inter_disconnect_s: float = 0.0
    extra_second_disconnect_s: float = 0.0
    extra_disconnect_seek_delta_s: float = 0.0
    hold_bus_read: bool = True
    read_disconnect_s: tuple = (0.0, 0.0)
    almost_read_hits: bool = False
    never_disconnect: bool = False
    min_read_ahead_blocks: int = 0
    preseeking_level: int = 0
    watermark_by_request_size: bool = True
    immediate_partial_hit_transfer: bool = True
    write_hit_stops_read_ahead: bool = True
    sneaky_full_read_hits: bool = False
    sneaky_partial_read_hits: bool = False
    write_prebuffering: bool = False
    hold_bus_write: bool = True
    write_watermark_fraction: float = 0.0
    caching: bool = True
    write_segments: int = 1
    immediate_read: bool = False
    immediate_access_under_head: bool = False
    combine_seq_writes: bool = True
    queue_scheduling_policy: int = 1
    immediate_write: bool = False
    constant_access_s: float | None = None
    bus_arbitration_s: float = 0.0
    controller_delay_s: float = 0.0
    read_direct_to_buffer: bool = True
    per_request_overhead_s: float = 0.0
    host_turnaround_s: float | None = None

    def __post_init__(self):
        if not isinstance(self.layout, ZoneLayout):
            raise ValueError(f"layout must be a ZoneLayout (got {show(self.layout)})")
        finite_scalar("rpm", self.rpm, positive=True)
        seek = finite_array("seek_by_distance_s", self.seek_by_distance_s, nonnegative=True)
        if seek.ndim != 1 or seek.size < 2 or seek[0] != 0:
            raise ValueError("seek_by_distance_s must be 1-D, start at distance 0 with 0 s")
        cylinders = int(self.layout.last_cylinder.max()) + 1
        if seek.size < cylinders:
            raise ValueError(f"seek_by_distance_s covers {seek.size} distances but the layout spans "
                             f"{cylinders} cylinders")
        object.__setattr__(self, "seek_by_distance_s", seek)
        write = seek if self.write_seek_by_distance_s is None else finite_array(
            "write_seek_by_distance_s", self.write_seek_by_distance_s, nonnegative=True)
        if write.shape != seek.shape:
            raise ValueError("write_seek_by_distance_s must match seek_by_distance_s in length")
        object.__setattr__(self, "write_seek_by_distance_s", write)
        overhead = finite_array("command_overhead_s", self.command_overhead_s, nonnegative=True)
        if overhead.shape != (2, 2, 2):
            raise ValueError("command_overhead_s must have shape (2, 2, 2)")
        object.__setattr__(self, "command_overhead_s", overhead)
        finite_scalar("head_switch_s", self.head_switch_s, nonnegative=True)
        finite_scalar("write_settle_s", self.write_settle_s)
        for name in ("read_completion_s", "write_completion_s", "data_preparation_s", "reselect_s",
                     "bus_read_block_s", "bus_write_block_s", "per_request_overhead_s"):
            finite_scalar(name, getattr(self, name), nonnegative=True)
        watermark = finite_scalar("read_watermark", self.read_watermark, nonnegative=True)
        if watermark > 1:
            raise ValueError(f"read_watermark must lie in [0, 1] (got {watermark})")
        watermark = finite_scalar("write_watermark_fraction", self.write_watermark_fraction, nonnegative=True)
        if watermark > 1:
            raise ValueError(f"write_watermark_fraction must lie in [0, 1] (got {watermark})")
        object.__setattr__(self, "write_watermark_fraction", float(watermark))
        for name, minimum in (("buffer_segments", 0), ("segment_size_blocks", 1), ("max_read_ahead_blocks", 0),
                              ("min_read_ahead_blocks", 0), ("write_segments", 1)):
            object.__setattr__(self, name, whole_number(name, getattr(self, name), minimum=minimum))
        object.__setattr__(self, "fast_write_level", whole_number(
            "fast_write_level", self.fast_write_level, maximum=2, maximum_is="0 none, 1 appending, 2 every write"))
        object.__setattr__(self, "preseeking_level", whole_number(
            "preseeking_level", self.preseeking_level, maximum=2, maximum_is="DiskSim's levels 0..2"))
        object.__setattr__(self, "read_ahead_scheme", whole_number(
            "read_ahead_scheme", self.read_ahead_scheme, maximum=4, maximum_is="DiskSim's schemes 0..4"))
        for name in ("read_ahead_over_requested", "read_ahead_on_idle_hit", "read_hits_on_write_data",
                     "separate_write_segment", "read_any_free_blocks", "stop_read_ahead_in_sector",
                     "extra_write_disconnect", "hold_bus_read", "almost_read_hits",
                     "never_disconnect", "watermark_by_request_size", "immediate_partial_hit_transfer",
                     "write_hit_stops_read_ahead", "sneaky_full_read_hits", "sneaky_partial_read_hits",
                     "write_prebuffering", "hold_bus_write", "caching",
                     "immediate_read", "immediate_access_under_head", "combine_seq_writes",
                     "immediate_write", "read_direct_to_buffer"):
            flag(name, getattr(self, name))
        from ..disksim_drives.honoured import PREBUFFERING_POLICIES
        if isinstance(self.queue_scheduling_policy, bool) or self.queue_scheduling_policy not in PREBUFFERING_POLICIES:
            raise ValueError("queue_scheduling_policy must be one of DiskSim's policies followed, "
                             f"{', '.join(str(k) for k in PREBUFFERING_POLICIES)} "
                             f"(got {show(self.queue_scheduling_policy)})")
        disconnect = finite_array("read_disconnect_s", self.read_disconnect_s, nonnegative=True)
        if disconnect.shape != (2,):
            raise ValueError(f"read_disconnect_s must hold 2 times (after a read, after a write) "
                             f"(got {show(self.read_disconnect_s)})")
        object.__setattr__(self, "read_disconnect_s", (float(disconnect[0]), float(disconnect[1])))
        finite_scalar("minimum_write_seek_s", self.minimum_write_seek_s, nonnegative=True)
        for name in ("write_disconnect_s", "other_reselect_s", "extra_disconnect_command_s", "extra_disconnect_s",
                     "extra_inter_disconnect_s", "extra_second_disconnect_s", "extra_disconnect_seek_delta_s"):
            finite_scalar(name, getattr(self, name), nonnegative=True)
        if self.constant_access_s is not None:
            object.__setattr__(self, "constant_access_s",
                               float(finite_scalar("constant_access_s", self.constant_access_s, nonnegative=True)))
        for name in ("bus_arbitration_s", "controller_delay_s"):
            object.__setattr__(self, name, float(finite_scalar(name, getattr(self, name), nonnegative=True)))
        if self.host_turnaround_s is not None:
            object.__setattr__(self, "host_turnaround_s",
                               float(finite_scalar("host_turnaround_s", self.host_turnaround_s, nonnegative=True)))
        if (self.bus_arbitration_s or self.controller_delay_s) and self.never_disconnect and self.fast_write_level:
            # measured: DiskSim 4.0's fast writes that never disconnect pass the controller's messages
            # in a way not followed (tests/golden/disksim_variants/README.md)
            raise ValueError("bus_arbitration_s and controller_delay_s must be 0 with never_disconnect and fast "
                             "writes (fast_write_level > 0): not simulated")
        if self.separate_write_segment and self.buffer_segments < 2:
            raise ValueError("separate_write_segment needs buffer_segments >= 2")
        if self.buffer_segments == 0 and (self.fast_write_level or self.max_read_ahead_blocks
                                          or self.read_ahead_scheme):
            raise ValueError("without a buffer (buffer_segments 0) there is no read-ahead and no fast write")
        if not self.caching:
            # DiskSim's disk_postpass_perdisk stops on each of these without caching
            for name in ("read_ahead_scheme", "fast_write_level", "read_any_free_blocks"):
                if getattr(self, name):
                    raise ValueError(f"caching=False (segments keep nothing between requests) allows no {name} "
                                     f"(got {getattr(self, name)!r})")

    @classmethod
    def from_disk(cls, disk: Disk) -> "DriveParameters":
        """The simulation's drive for a :class:`~diskmodel.model.drive.disk.Disk`: the one bridge.

        Honours the geometry (surfaces, zones, track and cylinder skews; no
        spares: blocks are the geometry's sectors), the seek curve tabulated at
        every whole cylinder distance plus ``settle_s`` for a move, rpm, head
        switch, write settle, ``command_overhead_s`` for every kind of request,
        the interface rate as the bus time of one sector, and ``drive_cache``
        (None: no buffer).
        """
        if not isinstance(disk, Disk):
            raise ValueError(f"disk must be a Disk (got {show(disk)})")
        geometry = disk.geometry
        zones = geometry.zones
        n = len(zones)
        layout = ZoneLayout(
            surfaces=geometry.surfaces, first_cylinder=[z.first_cylinder for z in zones],
            last_cylinder=[z.last_cylinder for z in zones], sectors_per_track=[z.sectors_per_track for z in zones],
            first_block_offset_sectors=np.zeros(n), track_skew_sectors=[z.track_skew_sectors for z in zones],
            cylinder_skew_sectors=[z.cylinder_skew_sectors for z in zones], empty_space_sectors=np.zeros(n, int),
            spares=np.zeros(n, int), slips=tuple(np.zeros(0, np.int64) for _ in zones))
        distance = np.arange(geometry.cylinders, dtype=float)
        seek = disk.seek.seek_time_s(distance) + np.where(distance > 0, disk.settle_s, 0.0)
        sector = geometry.sector_size_bytes
        bus_block_s = sector / disk.interface_rate_bytes_per_s
        buffer = buffer_fields(disk.drive_cache, sector)
        return cls(name=disk.name, layout=layout, seek_by_distance_s=seek, rpm=disk.rpm,
                   head_switch_s=disk.head_switch_s, write_settle_s=disk.write_settle_s,
                   command_overhead_s=np.full((2, 2, 2), disk.command_overhead_s),
                   bus_read_block_s=bus_block_s, bus_write_block_s=bus_block_s, **buffer)

    @property
    def rotation_period_s(self) -> float:
        return 60.0 / self.rpm

    def evolve(self, **changes) -> "DriveParameters":
        """A copy with some parameters changed (validated again; unknown names raise ValueError), for what-ifs."""
        return _evolve(self, changes)


def buffer_fields(cache: DriveCache | None, block_bytes: int) -> dict:
    """The :class:`DriveParameters` fields of a :class:`DriveCache` (None: no buffer),
    in blocks of *block_bytes*: the one translation of a drive's cache."""
    if cache is None:
        return dict(buffer_segments=0, read_ahead_scheme=0)
    return dict(
        buffer_segments=cache.segments, segment_size_blocks=cache.segment_size_bytes // block_bytes,
        # None is no maximum, which the simulation takes as a maximum of 0 with a scheme (DiskSim's code)
        max_read_ahead_blocks=(cache.read_ahead_bytes or 0) // block_bytes, read_ahead_scheme=cache.read_ahead_scheme,
        read_ahead_over_requested=cache.read_ahead_over_requested,
        read_ahead_on_idle_hit=cache.read_ahead_on_idle_hit, fast_write_level=cache.fast_write_level,
        read_hits_on_write_data=cache.read_hits_on_write_data,
        separate_write_segment=cache.separate_write_segment, read_any_free_blocks=cache.read_any_free_blocks,
        read_watermark=cache.read_watermark, caching=cache.caching)
