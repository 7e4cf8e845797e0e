"""A recorded block trace on disk: numpy's ``.npz`` (no pickles), or blkparse's text output.

The ``.npz`` holds ``format`` (``"diskmodel-blocktrace"``), ``version``, ``devices`` (the device
names, in order) and, for device number ``k``, the stream's fields as ``k/time_s``, ``k/op``,
``k/offset_bytes``, ``k/size_bytes``, ``k/flags`` plus ``k/complete_s``.
"""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from diskmodel.calibrate.harness.outputs import replace_file_atomically
from diskmodel.model.iopath import Stream

from .blkparse import BlockTrace, DeviceTrace, read_blkparse

__all__ = ["FORMAT", "save_trace", "load_trace"]

FORMAT = "diskmodel-blocktrace"
VERSION = 1
_FIELDS = ("time_s", "op", "offset_bytes", "size_bytes", "flags")


def save_trace(trace: BlockTrace, path: str | os.PathLike) -> Path:
    """Write *trace* to *path* (``.npz``), whole or not at all."""
    import io

    arrays = {"format": np.array(FORMAT), "version": np.array(VERSION),
              "devices": np.array(list(trace.devices), dtype=str)}
    for k, dev in enumerate(trace.devices.values()):
        for f in _FIELDS:
            arrays[f"{k}/{f}"] = getattr(dev.stream, f)
        arrays[f"{k}/complete_s"] = np.asarray(dev.complete_s, np.float64)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    path = Path(path)
    replace_file_atomically(path, buf.getvalue())
    return path


def _load_npz(path: Path) -> BlockTrace:
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: not a readable .npz block trace ({exc})") from None
    with data:
        if "format" not in data.files or str(data["format"]) != FORMAT:
            raise ValueError(f"{path}: not a diskmodel block trace (no format {FORMAT!r})")
        if int(data["version"]) != VERSION:
            raise ValueError(f"{path}: block trace version {int(data['version'])} is not {VERSION}")
        trace = BlockTrace()
        for k, name in enumerate(data["devices"].tolist()):
            missing = [f for f in (*_FIELDS, "complete_s") if f"{k}/{f}" not in data.files]
            if missing:
                raise ValueError(f"{path}: device {name!r} lacks its {missing[0]} array")
            try:
                stream = Stream.from_arrays(**{f: data[f"{k}/{f}"] for f in _FIELDS})
            except ValueError as exc:
                raise ValueError(f"{path}: device {name!r}: {exc}") from None
            done = data[f"{k}/complete_s"]
            if done.shape != (len(stream),):
                raise ValueError(f"{path}: device {name!r}: complete_s has {done.size} entries, not {len(stream)}")
            trace.devices[name] = DeviceTrace(name, stream, done)
    return trace


def load_trace(path: str | os.PathLike) -> BlockTrace:
    """A trace from *path*: our ``.npz`` (found by its zip signature) or blkparse's text output."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory, where a block trace is expected") from None
    if head.startswith(b"PK"):
        return _load_npz(path)
    return read_blkparse(path)
