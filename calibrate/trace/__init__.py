"""What reaches each block device, measured: blktrace's record of a command, read into the I/O path's
request streams (:class:`diskmodel.model.iopath.Stream`), saved and loaded, and replayed through
another stack.

- :mod:`.blkparse`: blkparse's text output into per-device streams;
- :mod:`.record`: blktrace (or, under kernel lockdown, the same events through tracefs:
  :mod:`.ftrace_blk`) on devices while a command runs;
- :mod:`.tracefile`: our ``.npz`` trace file;
- :mod:`.replay`: a trace through a stack's block layers and drives.
"""
from .blkparse import BlockTrace, DeviceTrace, parse_blkparse_text, read_blkparse
from .tracefile import load_trace, save_trace

__all__ = ["BlockTrace", "DeviceTrace", "parse_blkparse_text", "read_blkparse", "load_trace", "save_trace"]
