"""Which of DiskSim 4.0's drive parameters the per-request simulation honours.

Every key of a ``disksim_disk`` block, and the layout features of a model
file, is in one of five groups:

* honoured: :func:`diskmodel.model.disksim_drives.convert.drive_parameters` gives it to the
  simulation (:class:`~diskmodel.model.drive.parameters.DriveParameters`);
* irrelevant one request at a time: the traces are replayed at queue depth 1
  (a request arrives after the previous one completed), so the scheduler,
  the queue and the hits on requests still queued never act;
* honoured only at some values: another value is an error;
* no effect on DiskSim's own times (:data:`NO_EFFECT_IN_DISKSIM`): DiskSim
  4.0 itself gave the same per-request times at every value tried, in the
  situations its code says the key acts in (the variants of
  ``tests/golden/disksim_variants``); accepted at those values only, with
  the evidence and the condition under which it could still act;
* acting in DiskSim where the simulation does not follow
  (:data:`ACTS_WHERE_NOT_FOLLOWED`): accepted at those values, with the
  situation in which DiskSim's times differ from the simulation's.

The ``.parv``'s driver, buses and controller on the way to the disk are
checked too (:func:`check_parv_honoured`): a value that adds time in DiskSim
where the simulation does not follow it (a controller's or bus's type) is an
error; the driver's constant access time, the disk's bus's arbitration time
and the pass-thru controller's delays are followed (:func:`parv_host_path`).

A value the simulation does not implement raises
:class:`~diskmodel.data.disksim.syntax.DiskSimFormatError` naming the file,
the line and the parameter, never a silent default. A key DiskSim 4.0 does not
define is ignored with a warning naming file and line, as DiskSim's own loader
does.

Every layout DiskSim 4.0 defines is honoured: ``dm_layout_g1`` (every sparing
and mapping scheme, slips, defects, skews in either of DiskSim's "Skew units", sectors
or revolutions; :mod:`diskmodel.model.simulator.mapping`),
``dm_layout_g2`` (zones and an extent map, DiskSim's skew rule;
:mod:`diskmodel.model.simulator.g2`) and ``dm_layout_g4`` (tables, slips,
remaps; :mod:`diskmodel.model.simulator.g4`).
"""
from __future__ import annotations

import warnings

from diskmodel.data.disksim import Parv
from diskmodel.data.disksim.model_file import G1Layout, G2Layout, G4Layout, ModelFile
from diskmodel.data.disksim.syntax import Block, DiskSimFormatError, _normalise_key

__all__ = ["check_honoured", "check_parv_honoured"]

HONOURED = (
    "Model", "Per-request overhead time", "Time scale for overheads", "Bulk sector transfer time",
    "Read hit over. after read", "Read hit over. after write", "Read miss over. after read",
    "Read miss over. after write", "Write hit over. after read", "Write hit over. after write",
    "Write miss over. after read", "Write miss over. after write", "Read completion overhead",
    "Write completion overhead", "Data preparation overhead", "First reselect overhead", "Write disconnect overhead",
    "Minimum seek delay", "Number of buffer segments", "Segment size (in blks)", "Use separate write segment",
    "High (read) water mark", "Buffer continuous read", "Maximum read-ahead (blks)", "Read-ahead over requested",
    "Read-ahead on idle hit", "Fast write level", "Allow read hits on write data",
    "Stop prefetch in sector", "Other reselect overhead", "Extra write disconnect", "Extradisc command overhead",
    "Extradisc disconnect overhead", "Extradisc inter-disconnect delay", "Extradisc 2nd disconnect overhead",
    "Extradisc seek delta", "Hold bus entire read xfer", "Read disconnect afterread", "Read disconnect afterwrite",
    "Allow almost read hits", "Never disconnect", "Minimum read-ahead (blks)",
    # a hit arriving while a fast write is being written is served at once, not after it
    # (disk_read_arrive): partial hits checked on tests/golden/disksim_variants'
    # cheetah4LP_sneaky_partial_1; full hits follow the code only (DiskSim 4.0 fails with them on
    # cheetah4LP and atlas10k, and maxtor300g, the bundled drive that had shown them, was refused
    # until its scheduling policy 21 was followed)
    "Allow sneaky full read hits", "Allow sneaky partial read hits",
    # appending fast writes taken at once and queued (diskmodel.model.simulator.writequeue), ordered
    # by the scheduling policies of PREBUFFERING_POLICIES (check_honoured refuses the others)
    "Allow write prebuffering",
    # with prebuffering, the write segments that take fast writes at once and queue them
    # (diskmodel.model.simulator.writequeue._prebuffered_new); without it a fast write that cannot stop
    # the write under way waits for it, whatever the number
    "Maximum number of write segments",
    # DiskSim 4.0's code does not act on it (g1_access_block's slip), and drive_parameters follows
    # that code by default; with disksim_access_block_bug=False it follows the mended code, an
    # immediate first-track access, on the layouts of IMMEDIATE_ACCESS_SPARING (tests/golden/disksim_fixed: every request of atlas10k and
    # ibm18es); disksim_code=False honours it as the passing sectors of our reading of the manual
    "Read any free blocks",
    # a write whose data find no room in its segment holds the bus (1) or disconnects and
    # reconnects at the low watermark (0; its range checked in ONLY_VALUES): a write larger than
    # its segment, and a fast write appending to a write still being written, whose unwritten
    # blocks share the segment (disk_buffer_transfer_size, disk_request_needs_bus;
    # diskmodel.model.simulator.big_transfer). Large writes and reads and runs of appending fast writes
    # checked against DiskSim's own times at every value tried (tests/golden/disksim_variants, big_transfers and
    # appending_runs; the agreement figures: docs/disksim_keys.md, "Hold bus entire write xfer").
    # Two situations are not followed; DiskSim 4.0 failed on the one trace tried for each
    # (disk_buffer_transfer_size's assertion on seg_owner->inblkno, at every value): a write
    # larger than its segment appending to one still being written (atlas_III, 65-300 blocks
    # after 8-64), and
    # queued writes with "Allow write prebuffering" outgrowing the room (atlas_III's appending
    # runs); where queued writes do not outgrow it the keys change nothing (cheetah4LP's queued
    # writes: none of 400 of DiskSim's times at 1.0 or holding the bus)
    "Hold bus entire write xfer", "Low (write) water mark",
)

#: Keys that cannot act when requests come one at a time (why, for the docs).
IRRELEVANT_ONE_AT_A_TIME = {
    "Scheduler": "orders the queue, which never holds more than one request",
    "Max queue length": "the queue never holds more than one request",
    "Avg sectors per cylinder": "the scheduler's cylinder estimate",
    "Print stats": "output only",
    "Allow sneaky intermediate read hits": "hits on data of requests still queued",
}

#: Any value in [0, 1] (DiskSim's own range for a water mark).
_ANY_FRACTION = "any value in [0, 1]"

#: Keys honoured at these values only (the simulation implements no other).
ONLY_VALUES = {
    # DiskSim tests this flag for truth only (disksim_diskctlr.c, disksim_diskcache.c): 1 and 2 alike;
    # 0: the segments keep nothing between requests (drive_parameters: caching; diskmodel.model.
    # disksim_nocache), checked on tests/golden/disksim_variants' *_caching_0 variants (hp_c2247a,
    # cheetah4LP, atlas10k); DiskSim's own range is 0..2 (disk.modspec)
    "Enable caching in buffer": (0, 1, 2),
    # DiskSim's own ranges; each value simulated (drive_parameters: preseeking_level,
    # watermark_by_request_size, write_hit_stops_read_ahead, immediate_partial_hit_transfer)
    "Preseeking level": (0, 1, 2),
    "Set watermark by reqsize": (0, 1),
    "Write hit stop prefetch": (0, 1),
    "Immed transfer partial hit": (0, 1),
    # DiskSim's own range (disk.modspec: RANGE(i,0,1); disk_postpass_perdisk stops on another
    # value). 1: a fast write appending to one still being written joins its segment
    # (disk_buffer_select_write_segment's BUFFER_APPEND); 0: it cannot stop that write's access
    # (disk_buffer_stopable_access wants BUFFER_APPEND), gets no segment while the write segments are
    # dirty, and waits as a write that does not append (diskmodel.model.simulator.writequeue._combines;
    # the other reading of writecomb, disk_buffer_check_write_segments, only feeds the schedulers'
    # cache-aware estimates, disk_buffer_estimate_servtime/_seektime). Checked on
    # tests/golden/disksim_variants' *_combine_0: every request of cheetah4LP's and atlas_III's
    # appended writes and of cheetah4LP's appending runs, 99.5-99.7 % of atlas_III's appending runs
    # and of the queued writes of cheetah4LP, ibm18es and atlas10k (257-514 of DiskSim's times
    # change between 0 and 1; simulated combining, 236-450 of ours disagree). With prebuffering, a
    # second write segment or "Never disconnect" DiskSim's times are those without (one write
    # segment: no segment to prebuffer into); with two write segments and prebuffering 99.2 % agree;
    # write-through hp_c2247a is unchanged (no dirty segment at an arrival, one request at a time).
    # DiskSim 4.0 did not fail or lose a request at 0 in any of the 25 drive, trace and option
    # combinations tried
    "Combine seq writes": (0, 1),
    # honoured (HONOURED); DiskSim's own range
    "Low (write) water mark": _ANY_FRACTION,
    # zero-latency reads (drive_parameters: immediate_read; diskmodel.model.simulator.immediate): a
    # read-ahead held back while its segment's read is sent (disk_buffer_block_available) and let go
    # mid-track reads the sectors under the head first, and the circular segment drops its front
    # blocks for them (disk_buffer_sector_done's immedstart/immedend, disk_buffer_segment_wrap).
    # On g1 and g2 layouts DiskSim 4.0 never starts an access under the head (g1_access_block takes dm_convert_atop's
    # DM_OK, -3, for a failure), so plain read misses are the same at 0 and 1. Checked on
    # tests/golden/disksim_variants' synthetic_sequential_reads (atlas10k at 1 and 0, atlas_III at 1).
    # DiskSim's range is 0..2 (disk.modspec) and its code tests currdisk->immed for truth only
    # (disksim_diskctlr.c, diskmodel/mech_g1.c), so 2 is 1: DiskSim's times at 2 are those at 1 on
    # both drives (variants *_sequential_reads_immediate_read_2, same_as)
    # On a g4 layout DiskSim 4.0 does start a read's track under the head: g1_access_block's
    # dm_convert_atop (g4_atop) returns the block, so disk_buffer_seekdone's zero-latency access of
    # every track a read reaches (immed = currdisk->immedread) starts at the next sector boundary when
    # the head lands inside its span, reads the wanted blocks from there to lastblkno (the read's end,
    # also for a read taking over the read-ahead, or the read-ahead's limit) and the ones before on the
    # way round (disksim_access_block.immediate_read_run, mode 2; disksim_readahead._extend_read_ahead).
    # Checked on hand traces with DiskSim's own times (tests/test_disksim_g4_immediate_read.py) and a
    # randomised maxtor300g trace (figures: docs/disksim_keys.md, "Immediate buffer read on g4").
    # The key itself stays in ACTS_WHERE_NOT_FOLLOWED for the situation named there.
    # DiskSim's own range (disk.modspec); drive_parameters: read_direct_to_buffer. disk_buffer_sector_done
    # (src/disksim_diskctlr.c) asks disk_buffer_block_available about a read sector at the end of the
    # sector before it at 1, at the end of the sector itself at 0, the host's progress counted as the
    # event before left it (diskmodel.model.simulator.read_direct): a read-ahead held while its segment's
    # owner is sent (disksim_readahead._hold_read_ahead: its owner's sent completion and a read taking
    # the segment over are seen one sector later; with "Immediate buffer read", disksim_immediate's runs
    # ahead of the front alike). A read larger than its segment asks the same question at 0 and 1 (its
    # own outblkno, as at the sector's start): DiskSim's times within 0.2 us (rounding) on 300 reads of
    # 283-800 blocks (tests/golden/disksim_variants' cheetah4LP_big_reads_read_direct_0). DiskSim's
    # other reader of the key, disk_get_remapped_sector, acts next to a remapped sector only, where
    # DiskSim 4.0 fails at either value (cheetah4LP_defects_remapped_read_direct_0). Checked on
    # hand-written traces (tests/test_disksim_random.py) and on randomised traces with the key forced
    # to 0 (figures, and the alternative reading that disagreed: docs/disksim_keys.md, "Read directly
    # to buffer")
    "Read directly to buffer": (0, 1),
    # DiskSim's range is 0..2 (disk.modspec); its code tests currdisk->immed for truth only
    # (disksim_diskctlr.c, diskmodel/mech_g1.c), so 2 is 1 (DiskSim's times at 2 equal those at 1
    # on all 15 maxtor300g write_segments traces, 6000 requests). On g1 and g2 layouts it has no
    # effect on DiskSim's times: tests/golden/disksim_variants' hp_c2247a_immediate_write_0/_1/_2
    # (write-through) and atlas10k_queued_writes at 0, 1 (bundled) and 2 (fast writes) are
    # identical, because g1_access_block never starts an access under the head (its DM_OK slip;
    # g2's atop returns DM_OK too). On a g4 layout the conversion succeeds (g4_atop returns the
    # block) and each track of a write whose head lands inside its span starts under the head
    # (disksim_access_block.immediate_write_track; DriveParameters.immediate_write). Checked
    # against DiskSim 4.0: hand-written traces on G4_4TB (write-through and fast writes) and
    # maxtor300g (write-through; bundled: prebuffered, policy 21), tests/test_disksim_g4_immediate_write.py,
    # where DiskSim's times at 1 and 0 differ by 50-6000 us and ours follow 1 within 7 us; the
    # maxtor300g write_segments traces (policy 21 and 1, 15 traces of 400): of the 124 requests
    # whose DiskSim times differ between 1 and 0, ours at 1 agree with 1 on 36 (27 before; most
    # of the others are policy 21's later choices, which the disagreements open elsewhere on these
    # traces move); over all 6000, 5580 agree (5576 before). Not followed: a run broken by a
    # sector whose data are late is not checked against DiskSim; its steps from the landing
    # sector round to the first wanted one when the head lands past the wanted blocks (the
    # ordinary wait instead: within 1.6 us on G4_4TB).
    "Immediate buffer write": (0, 1, 2),
}

#: Keys DiskSim 4.0's code reads but whose value did not change DiskSim's own
#: per-request times in any experiment (tests/golden/disksim_variants): the
#: values accepted, and the evidence. Another value is an error.
NO_EFFECT_IN_DISKSIM = {
    # src/modules/disksim_disk_param.c stores it in disk->sectbysect, which no other line of
    # DiskSim 4.0 reads (grep sectbysect: the parameter loader and disksim_disk.h only); its
    # manual: "the simulator currently functions as if the value were always true"
    "Calc sector by sector": ((0, 1), "DiskSim 4.0's code never reads it (sectbysect is set by the "
                                      "parameter loader only); the simulation works sector by sector"),
    "Disconnect write if seek": ((0, 1), "read only by disk_buffer_stopable_access when a request would "
                                         "stop a read-ahead; at 1 DiskSim 4.0 loses requests there (see "
                                         "check_honoured), so 1 is accepted without read-ahead only, where "
                                         "DiskSim's times were the same at 0 and 1 on 600 requests arriving "
                                         "0-3 ms after a read (cheetah4LP and atlas10k, Buffer continuous "
                                         "read = 0)"),
}

#: Keys accepted at these values though DiskSim 4.0 acts on them in situations the simulation does
#: not follow, each with that situation (found by the randomised differential test,
#: tests/golden/disksim_random/README.md, and the policy-21 work). Four keys that were here are
#: followed ("Hold bus entire write xfer", "Low (write) water mark": class 5a; "Immediate buffer
#: write": g4 layouts; "Read directly to buffer": a read sector asked at its end) and are in HONOURED
#: or ONLY_VALUES with their evidence; "Immediate buffer read" is followed on g1 and g2 layouts
#: (class 5b) and on g4 layouts for a read's own tracks (ONLY_VALUES' comment), and stays here for a
#: read-ahead crossing tracks on a g4 layout. A key found acting where it is not followed comes
#: here, or is refused.
ACTS_WHERE_NOT_FOLLOWED = {
    # Followed on g1 and g2 layouts, and on g4 layouts for a read miss's tracks and a read taking over
    # the read-ahead (the evidence in ONLY_VALUES' comment above). Not followed throughout: the reads
    # served from a background read-ahead that crossed tracks on a g4 layout (each of its tracks started
    # under the head, as the simulation does; hits and misses on them differ). maxtor300g with "Segment size (in blks)" 1317 and "Read-ahead over requested" 1
    # ("Buffer continuous read" 4, as bundled), 60 sequential 300-block reads 0-3 ms apart: DiskSim's
    # times at 1 differ from those at 0 on 12 requests; the simulation is within 10 us of DiskSim at 0
    # on all 60, at 1 on 50 (42 before the g4 rule; 4 of its 10 were right before: full hits in
    # DiskSim that the simulation misses). Not refused: the bundled maxtor300g has it at 1
    "Immediate buffer read": ((0, 1, 2), "followed on g1 and g2 layouts and for a read's own tracks on g4 "
                                         "layouts; reads served from a read-ahead that crossed tracks on a "
                                         "g4 layout, its tracks started under the head, are not all "
                                         "followed (maxtor300g, sequential reads with 'Buffer continuous "
                                         "read' 4: 10 of 60 times)"),
}

#: DiskSim 4.0's "Scheduling policy" values the simulation follows with "Allow write prebuffering" = 1,
#: where the disk's queue holds the queued (prebuffered) writes and a read miss arriving behind them
#: (diskmodel.model.simulator.writequeue._pick_next), and DiskSim's selection function. Checked against
#: DiskSim's own times on hand-shaped traces of atlas10k with 9 write segments (groups of 2-9
#: non-appending fast writes arriving back to back, then a read; tests/test_disksim_random.py,
#: QUEUE_POLICY_TRACES). The LBN policies keep the queue in block order and DiskSim's disk only shows
#: their choice (ioqueue_show_next_request restores queue->dir; ioqueue_get_next_request, which would
#: turn it, is not called by the disk): the direction stays ASC. DiskSim 4.0 stops with a
#: segmentation fault at policies 2, 4 and 17 once it shows the queue with no request ready
#: (ioqueue_get_request_from_lbn_vscan_queue dereferences its NULL choice: a fast write appending
#: past its segment's room behind the write under way, disk_enablement_function), where the
#: simulation goes on. The positioning-time policies choose alike here (_pick_next): the
#: requests compared are never cache hits (checkcache) and a validate trace's requests are never
#: TIME_CRITICAL or TIME_LIMITED (``PRI_`` ageing); 14 and 15 age every request by "Timeout
#: time/weight", accepted at 0 only (SCHEDULER_DEFAULTS_WITH_PREBUFFERING).
PREBUFFERING_POLICIES = {
    1: "FCFS (ioqueue_get_request_from_fcfs_queue)",
    2: "ELEVATOR_LBN (ioqueue_get_request_from_lbn_vscan_queue, value = the drive's blocks)",
    3: "CYCLE_LBN (ioqueue_get_request_from_lbn_scan_queue)",
    4: "SSTF_LBN (ioqueue_get_request_from_lbn_vscan_queue, value 0)",
    8: "SPTF_OPT (ioqueue_get_request_from_opt_sptf_queue(queue, FALSE, 0, TRUE))",
    9: "SPCTF_OPT (ioqueue_get_request_from_opt_sptf_queue(queue, TRUE, 0, TRUE))",
    14: "ASPTF_OPT (ioqueue_get_request_from_opt_sptf_queue(queue, FALSE, 2, TRUE))",
    15: "ASPCTF_OPT (ioqueue_get_request_from_opt_sptf_queue(queue, TRUE, 2, TRUE))",
    17: "VSCAN_LBN (ioqueue_get_request_from_lbn_vscan_queue with vscan_cyls, never set: SSTF_LBN)",
    20: "PRI_ASPTF_OPT (ioqueue_get_request_from_opt_sptf_queue(queue, FALSE, 3, TRUE))",
    21: "PRI_ASPCTF_OPT (ioqueue_get_request_from_opt_sptf_queue(queue, TRUE, 3, TRUE))",
}

#: Why the other policies are refused with "Allow write prebuffering" = 1 (the error says it).
PREBUFFERING_REFUSED = {
    5: "ELEVATOR_CYL, cylinder-ordered (ioqueue_get_request_from_cyl_vscan_queue), not followed",
    6: "CYCLE_CYL, cylinder-ordered (ioqueue_get_request_from_cyl_scan_queue), not followed",
    7: "SSTF_CYL, cylinder-ordered (ioqueue_get_request_from_cyl_vscan_queue), not followed",
    10: "SATF_OPT: DiskSim 4.0 stops once two requests are queued (disk_buffer_estimate_acctime's assertion)",
    11: "WPTF_OPT, weighted by age (ageweight 1), not followed",
    12: "WPCTF_OPT, weighted by age (ageweight 1), not followed",
    13: "WATF_OPT: DiskSim 4.0 stops once two requests are queued (disk_buffer_estimate_acctime's assertion)",
    16: "ASATF_OPT: DiskSim 4.0 stops once two requests are queued (disk_buffer_estimate_acctime's assertion)",
    18: "VSCAN_CYL, cylinder-ordered (ioqueue_get_request_from_cyl_vscan_queue), not followed",
    19: "PRI_VSCAN_LBN (ioqueue_get_request_from_pri_lbn_vscan_queue), not followed",
    22: "SDF_APPROX (ioqueue_get_request_from_sdf_queue), not followed",
    23: "SDF_EXACT (ioqueue_get_request_from_sdf_queue), not followed",
    24: "SPTF_ROT_OPT (ioqueue_get_request_from_opt_sptf_rot_weight_queue), not followed",
    25: "SPTF_ROT_WEIGHT (ioqueue_get_request_from_opt_sptf_weight_queue), not followed",
    26: "SPTF_SEEK_WEIGHT (ioqueue_get_request_from_opt_sptf_seek_weight_queue), not followed",
    27: "TSPS (ioqueue_get_request_from_opt_tsps_queue), not followed",
    28: "BATCH_FCFS (ioqueue_get_request_from_batch_fcfs_queue), not followed",
}

#: Scheduler keys accepted at 0 only with "Allow write prebuffering" = 1 (at the policies named, every
#: one when None; every bundled drive has 0), where they would act on the queued writes.
SCHEDULER_DEFAULTS_WITH_PREBUFFERING = {
    "Scheduling timeout scheme": None, "Scheduling priority scheme": None, "Maximum concat size": None,
    "Sequential stream scheme": None, "Overlapping request scheme": None,
    "Read initiation delay": (8, 9, 14, 15, 20, 21), "Write initiation delay": (8, 9, 14, 15, 20, 21),
    "Timeout time/weight": (14, 15),
}
SCHEDULER_KEY_ACTS = {
    "Scheduling timeout scheme": "a timeout subqueue (ioqueue_tick, ioqueue_implement_timeouts)",
    "Scheduling priority scheme": "a priority subqueue (TWOQUEUE, ioqueue_add_new_request)",
    "Maximum concat size": "queued sequential requests merged (ioqueue_check_concat)",
    "Sequential stream scheme": "sequential streams kept together or merged (ioqueue_seqstream_head, "
                                "ioqueue_check_concat)",
    "Overlapping request scheme": "overlapping queued requests (ioqueue_clobber_overlaps_subqueue)",
    "Read initiation delay": "added to a read's estimate (ioqueue_get_request_from_opt_sptf_queue)",
    "Write initiation delay": "added to a write's estimate (ioqueue_get_request_from_opt_sptf_queue)",
    "Timeout time/weight": "the age weight of policies 14 and 15 (ioqueue_get_request_from_opt_sptf_queue)",
}

#: DiskSim 4.0's own ranges of the keys above (src/modules/disk.modspec, RANGE(i, low, high)): a value
#: outside them stops DiskSim's loader too, and the error says so
DISKSIM_RANGES = {
    "Enable caching in buffer": (0, 1, 2), "Preseeking level": (0, 1, 2), "Set watermark by reqsize": (0, 1),
    "Write hit stop prefetch": (0, 1), "Immed transfer partial hit": (0, 1), "Combine seq writes": (0, 1),
    "Immediate buffer read": (0, 1, 2), "Immediate buffer write": (0, 1, 2), "Calc sector by sector": (0, 1),
    "Read directly to buffer": (0, 1), "Disconnect write if seek": (0, 1),
}

_KNOWN = ({_normalise_key(k) for k in HONOURED} | {_normalise_key(k) for k in IRRELEVANT_ONE_AT_A_TIME}
          | {_normalise_key(k) for k in ONLY_VALUES} | {_normalise_key(k) for k in NO_EFFECT_IN_DISKSIM}
          | {_normalise_key(k) for k in ACTS_WHERE_NOT_FOLLOWED})


#: Layouts where the immediate access of the mended g1_access_block ("Read any free blocks" = 1,
#: drive_parameters(..., disksim_access_block_bug=False)) was checked against that build
#: request by request (tests/golden/disksim_fixed): g1 with sparing scheme 9 (atlas10k) or 7
#: (ibm18es). On hp_c2247a (scheme 1) the mended build gains no time or loses a revolution where
#: the simulation gains (docs/disksim_keys.md, "Read any free blocks"); cheetah4LP
#: (scheme 8) aborts the mended build (disk_buffer_seekdone: the head's sector has no block).
IMMEDIATE_ACCESS_SPARING = (7, 9)


def check_immediate_access_honoured(specs_block: Block, model: ModelFile) -> None:
    """Raise DiskSimFormatError when "Read any free blocks" = 1 asks for the mended immediate access
    on a layout where it is not followed (:data:`IMMEDIATE_ACCESS_SPARING`)."""
    if not specs_block.get("Read any free blocks"):
        return
    layout = model.layout
    scheme = getattr(layout, "sparing_scheme", None)
    if not isinstance(layout, G1Layout) or scheme not in IMMEDIATE_ACCESS_SPARING:
        raise DiskSimFormatError(specs_block.path, specs_block.line_of("Read any free blocks"),
                                 "Read any free blocks = 1 (the mended g1_access_block's immediate access) is "
                                 "honoured only on g1 layouts with sparing scheme 7 or 9 (got "
                                 f"{type(layout).__name__}, scheme {scheme}); disksim_access_block_bug=True "
                                 "runs it as DiskSim 4.0 does (no effect)")


def check_honoured(specs_block: Block, model: ModelFile) -> None:
    """Raise DiskSimFormatError (file, line, parameter) for what the simulation does not honour."""
    for key in specs_block.entries:
        name = specs_block.original_keys.get(key, key)
        if key not in _KNOWN:
            # every key of DiskSim 4.0's disk.modspec is known; DiskSim's loader warns on another
            # ("parameter X not valid in context disksim_disk") and ignores it (hp_c2247a with an
            # unknown key: its 300 times unchanged), and so does the simulation
            warnings.warn(f"{specs_block.path}:{specs_block.line_of(name)}: parameter {name!r} is not a DiskSim 4.0 "
                          "disksim_disk parameter; ignored, as DiskSim's loader ignores it (with a warning)",
                          stacklevel=3)
    limits = {**ONLY_VALUES, **{name: values for name, (values, _) in NO_EFFECT_IN_DISKSIM.items()},
              **{name: values for name, (values, _) in ACTS_WHERE_NOT_FOLLOWED.items()}}
    for name, allowed in limits.items():
        if name not in specs_block:
            continue
        value = specs_block.get(name)
        if allowed == _ANY_FRACTION:
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
                continue
            allowed = (_ANY_FRACTION,)
        if value not in allowed:
            implemented = ", ".join(v if v == _ANY_FRACTION else repr(v) for v in allowed)
            own = DISKSIM_RANGES.get(name, (_ANY_FRACTION,) if allowed == (_ANY_FRACTION,) else None)
            also = ""
            if own is not None and value not in own:
                also = f"; DiskSim 4.0 refuses it too (disk.modspec: {', '.join(str(v) for v in own)})"
            raise DiskSimFormatError(specs_block.path, specs_block.line_of(name),
                                     f"{name} = {value!r} is not honoured by the per-request simulation "
                                     f"(it implements {implemented}){also}")
    # "Allow write prebuffering" = 1 queues fast writes on the media (disk_write_arrive); the
    # simulation follows that queue (diskmodel.model.simulator.writequeue): writes appending to a write
    # segment and, with more write segments, the others, each in a segment of its own, served first
    # come first served (Scheduling policy 1) or, at policy 21 (PRI_ASPCTF_OPT, maxtor300g's), the
    # least estimated positioning time first, a read miss behind them competing
    # (ioqueue_get_request_from_opt_sptf_queue, disk_buffer_estimate_servtime); DiskSim's zero-latency
    # writes on a g4 layout move policy 21's next choice and are followed
    # (disksim_access_block.immediate_write_track); the other policies of PREBUFFERING_POLICIES are
    # followed too, the rest refused, saying why (PREBUFFERING_REFUSED). Checked against DiskSim's own
    # times (tests/golden/disksim_random write_segments.json; figures: docs/disksim_keys.md,
    # "Allow write prebuffering").
    prebuffering = specs_block.get("Allow write prebuffering")
    if prebuffering not in (None, 0, 1):
        raise DiskSimFormatError(specs_block.path, specs_block.line_of("Allow write prebuffering"),
                                 f"Allow write prebuffering must be 0 or 1 (got {prebuffering!r})")
    if prebuffering == 1:
        segments = specs_block.number("Maximum number of write segments", 1.0)
        if not 1 <= segments <= specs_block.number("Number of buffer segments", 0.0):
            # DiskSim's own range (disk.modspec: RANGE(i,1,result->numsegs))
            raise DiskSimFormatError(specs_block.path, specs_block.line_of("Maximum number of write segments"),
                                     f"Maximum number of write segments must lie in 1..Number of buffer segments "
                                     f"(got {segments!r})")
        scheduler = specs_block.get("Scheduler")
        policy = scheduler.get("Scheduling policy") if isinstance(scheduler, Block) else None
        if policy is not None and policy not in PREBUFFERING_POLICIES:
            why = PREBUFFERING_REFUSED.get(policy, "not followed")
            raise DiskSimFormatError(specs_block.path, specs_block.line_of("Allow write prebuffering"),
                                     "Allow write prebuffering = 1 is honoured by the per-request simulation only "
                                     f"with Scheduling policy = 1, first come first served, or "
                                     f"{', '.join(str(k) for k in PREBUFFERING_POLICIES if k != 1)} "
                                     f"(got {policy!r}: {why})")
        if isinstance(scheduler, Block):
            for key, scope in SCHEDULER_DEFAULTS_WITH_PREBUFFERING.items():
                if key in scheduler and scheduler.get(key) not in (0, 0.0) and (scope is None or policy in scope):
                    raise DiskSimFormatError(scheduler.path, scheduler.line_of(key),
                                             f"{key} = {scheduler.get(key)!r} is not honoured by the per-request "
                                             "simulation with Allow write prebuffering = 1 and Scheduling policy = "
                                             f"{policy!r} (it implements 0: "
                                             f"{SCHEDULER_KEY_ACTS[key]})")
    # DiskSim 4.0 loses requests with "Disconnect write if seek" = 1 once one arrives during a
    # read-ahead (disk_buffer_stopable_access marks the read-ahead preempted; the request never
    # completes: 1438 of cheetah4LP's 10000 requests complete, 231 of ibm18es's, 8 of
    # hp_c2490a's, 10 of 600 on atlas10k with such arrivals): nothing to follow
    if specs_block.get("Disconnect write if seek") == 1 and specs_block.get("Buffer continuous read") not in (None, 0):
        raise DiskSimFormatError(specs_block.path, specs_block.line_of("Disconnect write if seek"),
                                 "Disconnect write if seek = 1 is honoured by the per-request simulation only "
                                 "without read-ahead (Buffer continuous read = 0): DiskSim 4.0 loses requests "
                                 "with it")
    # "Minimum read-ahead (blks)" > 0 on a write-through drive ("Fast write level" 0) is accepted:
    # DiskSim 4.0 fails there on some traces only, and sooner the larger the minimum, each time
    # at a write following a read (the cause inside DiskSim not pinned down); every request DiskSim
    # completes before it fails agrees with ours (tests/golden/disksim_variants,
    # *_write_through_min_read_ahead_*; where each drive fails: docs/disksim_keys.md).
    # Every layout DiskSim defines is honoured: g1 (every sparing scheme, slips, defects
    # remapped in place or elsewhere), g2 (zones and an extent map, its skew rule) and g4
    # (tables, slips, remaps), see diskmodel.model.simulator.mapping, disksim_g2 and disksim_g4.
    if not isinstance(model.layout, (G1Layout, G2Layout, G4Layout)):
        raise DiskSimFormatError(model.path, model.layout_line,
                                 f"Layout Model {type(model.layout).__name__} is not honoured by the per-request "
                                 "simulation (it implements dm_layout_g1, dm_layout_g2 and dm_layout_g4)")


#: Parameters of the .parv's driver, buses and controllers on the way to the disk that add
#: time in DiskSim 4.0: the value (or values) the simulation honours (no time added) and the
#: evidence that another value acts (DiskSim 4.0 on hp_c2247a's trace, first 300 requests, with
#: that one value changed). The disk's own bus's block transfer times are honoured
#: (``block_transfer_time_s``). Accepted at any value because they changed none of those 300
#: times: another bus's block transfer times (0.5 ms: the pass-thru controller moves no data
#: itself), the controller's "Bulk sector transfer time" (0.5 ms: only the 53C700 and smart
#: controllers use it) and "Arbitration type" (one request at a time, no contention); the
#: schedulers' keys order queues that never hold more than one request. Also unchecked, none of
#: hp_c2247a's first 2000 times changing in DiskSim 4.0: the driver's "type" 2, "Use queueing in
#: subsystem" 0, its scheduler's "Read initiation delay" and "Write initiation delay" 1.0 and
#: "Scheduling policy" 2, the controller's "Maximum queue length" 5.
PARV_ONLY_VALUES = {
    # "Constant access time", the disk's bus's "Arbitration time" and the pass-thru controller's
    # "Scale for delays" are followed (parv_host_path)
    ("disksim_bus", "type"): (1, "type 2 (interleaved transfers): DiskSim 4.0 completed 4 of the 300 requests"),
    ("disksim_ctlr", "type"): (1, "DiskSim 4.0 itself fails with 2 (53C700: disk_buffer_update_outbuffer's "
                                  "assertion) and 3 (smart: a segmentation fault) on hp_c2247a, cheetah4LP "
                                  "and ibm18es"),
}

#: The .parv's keys on the way to the disk that the simulation follows (parv_host_path), with the
#: evidence (tests/golden/disksim_variants: hp_c2247a_parv_*, cheetah4LP_parv_*; README.md).
PARV_HONOURED = {
    ("disksim_iodriver", "Constant access time"): "a positive value is every request's time (iodriver_schedule: "
                                                  "5.0 gives 5.000 ms); -1 and -3 take the trace's, 0 in a "
                                                  "validate trace (iotrace_validate_get_ioreq_event: tempint2 = 0; "
                                                  "every request 0.0 ms); -2 the traced queue times, 0 there too",
    ("disksim_bus", "Arbitration time"): "the disk's bus: waited at each acquisition (the controller's request "
                                         "down, each reconnection of the disk); the bus above a controller at "
                                         "depth 0 is never arbitrated (controller_get_upward_busno: -1; its 0.1 "
                                         "changes none of hp_c2247a's 2000 times)",
    ("disksim_ctlr", "Scale for delays"): "the pass-thru controller's delay, 1.0 ms x the scale, on each message "
                                          "(controller_passthru_event_arrive)",
}


def _host_path_error(block, name: str, value, why: str) -> DiskSimFormatError:
    return DiskSimFormatError(block.path, block.line_of(name),
                              f"{name} = {value!r} in {block.type} {block.name} is not honoured by the "
                              f"per-request simulation ({why})")


def parv_host_path(parv: Parv) -> tuple[float | None, float, float]:
    """(constant access [s] or None, the disk's bus arbitration [s], the pass-thru controller's
    delay per message [s]) of the .parv's path to the disk, as DriveParameters'
    ``constant_access_s``, ``bus_arbitration_s`` and ``controller_delay_s``.

    The driver's "Constant access time" (DiskSim's range: >= 0, -1, -2, -3, iodriver.modspec):
    a positive value replaces every request's time (``iodriver_schedule``); -1 and -3 take the
    trace's access time, ``tempint2``, which ``iotrace_validate_get_ioreq_event`` sets to 0; 0
    and -2 (traced queue times, 0 in a validate trace too) simulate the drive. The arbitration
    and the delays are followed on DiskSim's validate topology, driver - bus - pass-thru
    controller - bus - disk (``_host_path_s`` in :mod:`diskmodel.model.simulator.inputs`); elsewhere
    a value but 0 is an error naming the file, line and parameter.
    """
    path = next((found for node in parv.topology if (found := _path_to_disk(node))), None)
    if path is None:
        return None, 0.0, 0.0
    blocks = {block.name: block for block in parv.blocks if block.name}
    on_path = [(kind, blocks.get(parv.instances.get(instance))) for kind, instance in path[:-1]]
    constant = None
    for kind, block in on_path:
        if kind == "disksim_iodriver" and block is not None and "Constant access time" in block:
            value = block.number("Constant access time")
            if value > 0:
                constant = value * 1e-3
            elif value in (-1.0, -3.0):
                constant = 0.0
            elif value not in (0.0, -2.0):
                raise _host_path_error(block, "Constant access time", block.get("Constant access time"),
                                       "DiskSim 4.0 takes >= 0, -1, -2 or -3 only: iodriver.modspec")
    kinds = tuple(kind for kind, _ in on_path)
    validate_path = kinds == ("disksim_iodriver", "disksim_bus", "disksim_ctlr", "disksim_bus")
    arbitration, delay = 0.0, 0.0
    for k, (kind, block) in enumerate(on_path):
        if block is None:
            continue
        if kind == "disksim_bus" and "Arbitration time" in block:
            value = block.number("Arbitration time")
            if value and validate_path and k == 3:
                arbitration = value * 1e-3
            elif value and not (validate_path and k == 1):
                raise _host_path_error(block, "Arbitration time", block.get("Arbitration time"),
                                       "followed on the path driver - bus - controller - bus - disk only")
        if kind == "disksim_ctlr" and "Scale for delays" in block:
            value = block.number("Scale for delays")
            if value and validate_path and block.number("type", 1.0) == 1:
                delay = value * 1e-3   # PASSTHRU_DELAY (1.0 ms) x the scale
            elif value:
                raise _host_path_error(block, "Scale for delays", block.get("Scale for delays"),
                                       "followed for a pass-thru controller (type 1) on the path driver - bus - "
                                       "controller - bus - disk only")
    return constant, arbitration, delay


def _path_to_disk(node, path=()):
    """The topology nodes (kind, instance) from the root to the first disk, or None."""
    kind, name, children = node
    path = path + ((kind, name),)
    if kind == "disksim_disk":
        return path
    for child in children:
        found = _path_to_disk(child, path)
        if found:
            return found
    return None


def check_parv_honoured(parv: Parv) -> None:
    """Raise DiskSimFormatError (file, line, parameter) for a .parv whose driver, buses or
    controllers between the trace and the disk would add time the simulation does not
    (:data:`PARV_ONLY_VALUES`)."""
    path = next((found for node in parv.topology if (found := _path_to_disk(node))), None)
    if path is None:
        return
    blocks = {block.name: block for block in parv.blocks if block.name}
    for kind, instance in path[:-1]:
        if kind not in ("disksim_iodriver", "disksim_bus", "disksim_ctlr"):
            raise DiskSimFormatError(parv.path, 1, f"the topology reaches the disk through {kind} {instance!r}, "
                                                   "which the per-request simulation does not honour")
        block = blocks.get(parv.instances.get(instance))
        if block is None:
            continue
        for (block_kind, name), (value, evidence) in PARV_ONLY_VALUES.items():
            if block_kind != kind or name not in block:
                continue
            got = block.get(name)
            allowed = value if isinstance(value, tuple) else (value,)
            if got not in allowed:
                raise DiskSimFormatError(block.path, block.line_of(name),
                                         f"{name} = {got!r} in {kind} {block.name} is not honoured by the "
                                         f"per-request simulation (it implements "
                                         f"{', '.join(repr(v) for v in allowed)}: {evidence})")
