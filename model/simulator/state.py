"""The names of the simulation kernel's slots: every element of the drive's number arrays (``real``,
``ints``), of the working arrays (``work``, ``stats``, ``segments``), of the prebuffered writes'
queue (``wq``) and of the layout's tuple (``arrays``) is read and written through one of these
names, never a bare number.

They are module constants: numba takes a global integer as a compile-time constant, so
``real[REAL_PERIOD_S]`` compiles to the same load as an index written out (the kernel's times stay
the same to the bit, and a heterogeneous tuple such as the layout's can be indexed by them). The
arrays are filled in :func:`diskmodel.model.simulator.inputs.kernel_inputs` by the same names.

Pure model code, no I/O.
"""
from __future__ import annotations

from enum import IntEnum


class HitKind(IntEnum):
    """How the drive served a request (:attr:`~diskmodel.model.simulator.simulate.SimulationResult.hit`)."""

    #: The mechanism moved and the blocks passed under the head.
    MEDIA = 0
    #: Every block was already in a buffer segment.
    CACHE_HIT = 1
    #: The blocks were being read ahead: the request waited for them, not for a seek.
    READ_AHEAD_HIT = 2
    #: A write reported done once its data were in the buffer (DiskSim's fast
    #: write); its media work happened in the background.
    FAST_WRITE = 3


# -- real: the drive's times [s] and fractions (DriveParameters, plus the host path of inputs._host_path_s)
REAL_PERIOD_S = 0                     # one revolution, 60 / rpm
REAL_HEAD_SWITCH_S = 1
REAL_WRITE_SETTLE_S = 2
REAL_READ_DONE_S = 3                  # read completion overhead (and the completion's way up)
REAL_WRITE_DONE_S = 4                 # write completion overhead (and the completion's way up)
REAL_DATA_PREP_S = 5                  # data preparation overhead (and the answer down)
REAL_RESELECT_S = 6                   # first reselect overhead (and the reconnection's arbitration)
REAL_BUS_READ_BLOCK_S = 7             # the bus time of a block read
REAL_BUS_WRITE_BLOCK_S = 8            # the bus time of a block written
REAL_READ_WATERMARK = 9               # "Buffer continuous read" watermark, a fraction
REAL_MIN_WRITE_SEEK_S = 10            # the least move of a write
REAL_WRITE_DISCONNECT_S = 11
REAL_OTHER_RESELECT_S = 12            # the other reselect overhead
REAL_XD_COMMAND_S = 13                # "Extra write disconnect": its command overhead
REAL_XD_DISCONNECT_S = 14             # its first disconnect overhead
REAL_XD_INTER_S = 15                  # its inter-disconnect delay
REAL_XD_SECOND_DISCONNECT_S = 16      # its second disconnect overhead
REAL_XD_SEEK_DELTA_S = 17             # its seek delta
REAL_READ_DISCONNECT_S = 18           # the read disconnect overhead after a read, then after a write
REAL_READ_DISCONNECTS = 2             # (two slots from REAL_READ_DISCONNECT_S)
REAL_SEGMENT_WATERMARK = 20           # the read watermark of a segment [blocks]
REAL_WRITE_WATERMARK = 21             # the low (write) watermark [blocks]
REAL_IMMEDIATE_READ = 22              # "Immediate buffer read" (1.0 or 0.0)
REAL_IMMEDIATE_MODE = 23              # which reads start under the head (inputs._immediate_mode)
REAL_HOST_DOWN_S = 24                 # a request's way down to the disk and the per-request overhead
REAL_FINAL_RECONNECT_S = 25           # a write's final reconnection up and the answer down
REAL_ANSWER_DOWN_S = 26               # the driver's answer to a completion coming down (controller delay)
REAL_READ_DIRECT = 27                 # "Read direct to buffer" (1.0 or 0.0; simulator.read_direct)
REAL_IMMEDIATE_WRITE_G4 = 28          # "Immediate buffer write" on a g4 layout (1.0 or 0.0)
REAL_IMMEDIATE_READ_G4 = 29           # "Immediate buffer read" on a g4 layout (1.0 or 0.0)
REAL_HOST_TURNAROUND_S = 30           # a completion to the dispatch of a request waiting at the host
REAL_SLOTS = 31

# -- ints: the drive's counts and switches
INT_SEGMENTS = 0                      # buffer segments
INT_SEGMENT_BLOCKS = 1                # a segment's size [blocks]
INT_MAX_READ_AHEAD = 2                # the maximum read-ahead [blocks]
INT_READ_AHEAD_OVER_REQUEST = 3       # the read-ahead may go past the request ("Read-ahead over requested")
INT_READ_AHEAD_ON_IDLE_HIT = 4
INT_FAST_WRITE_LEVEL = 5
INT_HITS_ON_WRITES = 6                # reads may hit on written data
INT_SEPARATE_WRITE_SEGMENT = 7
INT_READ_AHEAD_SCHEME = 8
INT_READ_ANY_FREE = 9                 # "Read any free blocks" (DiskSim 4.0's reading)
INT_STOP_IN_SECTOR = 10               # a read-ahead stops at the end of its sector
INT_EXTRA_WRITE_DISCONNECT = 11
INT_HOLD_BUS_READ = 12                # "Hold bus entire read xfer"
INT_ALMOST_READ_HITS = 13
INT_NEVER_DISCONNECT = 14
INT_MIN_READ_AHEAD = 15               # the minimum read-ahead [blocks]
INT_PRESEEKING_LEVEL = 16
INT_WATERMARK_BY_REQUEST = 17         # "Set watermark by reqsize"
INT_IMMEDIATE_PARTIAL_HIT = 18        # "Immed transfer partial hit"
INT_WRITE_HIT_STOPS_READ_AHEAD = 19   # "Write hit stop prefetch"
INT_SNEAKY_FULL_HITS = 20
INT_SNEAKY_PARTIAL_HITS = 21
INT_WRITES_QUEUE = 22                 # fast writes queue behind each other (inputs._writes_queue)
INT_HOLD_BUS_WRITE = 23               # "Hold bus entire write xfer"
INT_CACHING = 24                      # "Enable caching in buffer"
INT_WRITE_SEGMENTS = 25               # "Maximum number of write segments"
INT_COMBINE_SEQ_WRITES = 26
INT_SCHEDULING_POLICY = 27
INT_SLOTS = 28

# -- segments: one column per buffer segment
SEG_START = 0                         # its first block
SEG_END = 1                           # the block after its last
SEG_WRITE = 2                         # 1 when it holds written data
SEG_MAX_READ_AHEAD = 3                # its read-ahead limit (readahead._kept_read_ahead_limit)
SEG_ROWS = 4

# -- work: one row each, one column per block of a request
WORK_READY = 0                        # when each block is in the buffer (or written)
WORK_NOT_BEFORE = 1                   # when each block's data may be written or sent at the earliest
WORK_STATS = 2                        # the request's seek, latency and rest (the STAT_ slots)
WORK_SCRATCH = 3
WORK_READ_WATERMARK = 4               # the read watermark of a request of m blocks ("Set watermark by reqsize")
WORK_SENT_AT = 5                      # when the host has block j of the read being served
WORK_WRITE_WATERMARK = 6              # the low (write) watermark of a write of m blocks
WORK_CHUNK_END = 7                    # when the transfer carrying block j of the read being served ends
WORK_ROWS = 8

# -- stats (the row WORK_STATS): the mechanical parts of a media access [s]
STAT_SEEK = 0
STAT_LATENCY = 1
STAT_MEDIA = 2

# -- wq: the prebuffered writes' queue (simulator.writequeue), one column per queued write or block
WQ_FIRST = 0                          # each queued write's first block
WQ_BLOCKS = 1                         # and its blocks
WQ_DATA_START = 2                     # when its data start to arrive
WQ_STATE = 3                          # the row of the WQS_ slots below
WQ_BLOCK_DATA = 4                     # the chain's blocks: when each one's data are in the buffer
WQ_BLOCK_DONE = 5                     # and when each one is written
WQ_SEGMENT = 6                        # each queued write's segment (a label)
WQ_QUEUED_AT = 7                      # when each queued write entered DiskSim's queue (its arrival)
WQ_ROWS = 8
# the row WQ_STATE: the first access still under way
WQS_START = 0                         # its start
WQS_CYLINDER = 1                      # the head before it
WQS_HEAD = 2
WQS_MIN_MOVE = 3                      # its least move
WQS_WRITES = 4                        # the writes queued
WQS_POLICY = 5                        # the scheduling policy (set once by kernel_inputs)
WQS_IMMEDIATE_WRITE = 6               # "Immediate buffer write" (set once)
WQS_G4 = 7                            # 1.0 on a g4 layout (set once)
WQS_READ_FIRST = 8                    # a read that went before the queued writes: its first block
WQS_READ_BLOCKS = 9                   # and its blocks
WQS_SLOTS = 10

# -- arrays: the layout's tuple (mapping.ZoneLayout.kernel_arrays)
LAYOUT_FIRST_LBN = 0                  # each zone's first block (the last element: the blocks they hold)
LAYOUT_FIRST_CYLINDER = 1
LAYOUT_SECTORS_PER_TRACK = 2          # each zone's sectors per track
LAYOUT_SHAPE = 10                     # surfaces, sparing scheme, mapping scheme, rangesize
LAYOUT_TABLE_A = 13                   # a g4 or g2 layout's own tables (mapping._g4_tables)
LAYOUT_TABLE_B = 14
LAYOUT_TABLE_C = 15

# -- overhead: DriveParameters.command_overhead_s[kind, hit, previous request's kind]
OVH_READ = 0
OVH_WRITE = 1
OVH_MISS = 0
OVH_HIT = 1

# -- arrays[LAYOUT_SHAPE]
SHAPE_SURFACES = 0
SHAPE_SPARING_SCHEME = 1
SHAPE_MAPPING_SCHEME = 2
SHAPE_RANGESIZE = 3
