"""The I/O path as pure request-stream transforms: each layer maps an input :class:`Stream` to the
stream(s) it sends to the device(s) below (numpy only, no I/O, no clocks)."""

from .stream import Flag, Op, Stream, concat, device_totals

__all__ = ["Flag", "Op", "Stream", "concat", "device_totals"]
