"""Open an input file the user named: a regular file only, read with a size cap.

Every reader of a user's file (DiskSim drive files and traces, stack JSON,
calibration and costs JSON) goes through here, so that a FIFO does not hang
the run (it is opened without blocking and refused), a device such as
``/dev/zero`` is not read until memory runs out, and a file or a line larger
than the cap of its kind is refused with the cap in the message.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Iterator

__all__ = ["MAX_DISKSIM_FILE_BYTES", "MAX_TRACE_FILE_BYTES", "MAX_TRACE_LINE_BYTES", "MAX_JSON_FILE_BYTES",
           "InputFileError", "open_regular", "read_bounded", "read_text_bounded", "bounded_lines", "quote"]

#: A DiskSim parameter, seek or layout file larger than this is refused [bytes]; the bundled
#: drives' largest (a g4 layout map) is under 2 MB.
MAX_DISKSIM_FILE_BYTES = 64 << 20
#: A request trace larger than this is refused [bytes]: over a million requests (the bundled traces
#: hold 10 000), parsed into Python lists of a few hundred bytes a request before the arrays are made.
MAX_TRACE_FILE_BYTES = 64 << 20
#: A trace line longer than this is refused [bytes]: six numbers and words fit in far less.
MAX_TRACE_LINE_BYTES = 4096
#: A JSON input (a calibration, a costs file) larger than this is refused [bytes].
MAX_JSON_FILE_BYTES = 64 << 20

#: What an error line quotes of an input value at most [characters].
QUOTE_MAX_CHARS = 80


class InputFileError(ValueError):
    """An input file that is not a regular file, or larger than its kind's cap (a bad input: exit 2)."""


def quote(value, limit: int = QUOTE_MAX_CHARS) -> str:
    """*value* as an error line quotes it: its repr, cut to *limit* characters and marked with "…" past that.

    A 200 MB field of a bad input file must not be echoed whole into a one-line error.
    """
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        return repr(text[:limit]) + "…"
    return repr(text)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path, what: str):
    """*path* opened for reading in binary, if it is a regular file.

    Opened with O_NONBLOCK, so that a FIFO without a writer does not block the
    open; then refused (InputFileError) unless ``fstat`` says regular file. A
    directory raises IsADirectoryError, a missing path FileNotFoundError.
    """
    name = os.fspath(path)
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", name)
        if not stat.S_ISREG(mode):
            raise InputFileError(f"{what} {name} is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path, what: str, max_bytes: int) -> bytes:
    """The bytes of the regular file *path*; InputFileError if it holds more than *max_bytes*."""
    with open_regular(path, what) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputFileError(f"{what} {os.fspath(path)} is larger than {max_bytes} bytes, the limit for a {what}")
    return data


def read_text_bounded(path, what: str, max_bytes: int, *, errors: str = "strict") -> str:
    """The UTF-8 text of the regular file *path* (see read_bounded)."""
    return read_bounded(path, what, max_bytes).decode("utf-8", errors=errors)


def bounded_lines(path, what: str, *, max_bytes: int, max_line_bytes: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of the regular file *path*, read as a stream.

    A line longer than *max_line_bytes* or a file larger than *max_bytes* raises
    InputFileError as soon as it is met, without reading the rest.
    """
    name = Path(path)
    total = 0
    with open_regular(path, what) as fh:
        number = 0
        while True:
            raw = fh.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            total += len(raw)
            if len(raw) > max_line_bytes and not raw.endswith(b"\n") or len(raw.rstrip(b"\r\n")) > max_line_bytes:
                raise InputFileError(f"{what} {name}:{number}: the line is longer than {max_line_bytes} bytes, "
                                     f"the limit for a {what} line")
            if total > max_bytes:
                raise InputFileError(f"{what} {name} is larger than {max_bytes} bytes, the limit for a {what}")
            yield number, raw.decode("utf-8", errors="replace")
