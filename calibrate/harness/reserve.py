"""A result's place taken before the run, and a result kept when it cannot be written.

A calibration or a PostMark run takes minutes; its result must not be lost at
the last step because the output's file system is full:

- :class:`OutputReservation` is entered before the run. It creates the
  temporary file the result will be renamed from, in the output's directory,
  and takes the space the result needs (``posix_fallocate``): a full file
  system is reported at once, before anything is measured, and cannot fill up
  under the result while the run goes on. The temporary file is recorded in
  the run state (:mod:`diskmodel.calibrate.harness.runstate`) before it is
  created, so a signal or a crash leaves nothing behind. :meth:`~OutputReservation.commit`
  writes the result over the reserved space, trims it, fsyncs it and renames
  it over the output.
- If the final write fails all the same (a larger result than reserved, the
  folder removed, an I/O error), :func:`keep_unsaved` keeps the result in
  ``$XDG_STATE_HOME/diskmodel/unsaved/`` (else the system's temporary
  directory, else standard output) and the one error line says where.
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

from diskmodel.calibrate.harness import outputs

__all__ = ["OutputReservation", "keep_unsaved", "unsaved_dir", "reserve_bytes_for", "calibration_reserve_bytes"]

# The least space reserved for a result.
MIN_RESERVE_BYTES = 64 << 10
# The size of a calibration's JSON: a fixed part and a part per second of budget (its samples, as many
# as a fast device answers in that time); the reservation is capped, and a larger result is still
# written where the space allows it, or kept elsewhere.
CALIBRATION_JSON_BYTES = 64 << 10
CALIBRATION_JSON_BYTES_PER_S = 128 << 10
CALIBRATION_RESERVE_MAX_BYTES = 32 << 20


def calibration_reserve_bytes(budget_s: float, path=None) -> int:
    """The space to reserve for a calibration of *budget_s* seconds of device time (see :func:`reserve_bytes_for`)."""
    estimate = min(CALIBRATION_JSON_BYTES + budget_s * CALIBRATION_JSON_BYTES_PER_S, CALIBRATION_RESERVE_MAX_BYTES)
    return reserve_bytes_for(estimate, path)


def reserve_bytes_for(estimate_bytes: float, path=None) -> int:
    """The space to reserve for a result of about *estimate_bytes*: that, or the size of an earlier
    result at *path* if it is larger, and at least :data:`MIN_RESERVE_BYTES`."""
    earlier = 0
    if path is not None and os.fspath(path) != "-":
        with contextlib.suppress(OSError, ValueError):
            earlier = os.stat(path).st_size
    return max(MIN_RESERVE_BYTES, int(estimate_bytes), earlier)


def unsaved_dir() -> Path:
    """``$XDG_STATE_HOME/diskmodel/unsaved`` (the XDG Base Directory Specification: a relative or empty
    ``XDG_STATE_HOME`` is ignored, and the default is ``~/.local/state``)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "diskmodel" / "unsaved"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def keep_unsaved(text: str, *, kind: str) -> str:
    """Keep *text*, a result that could not be written where asked; return where, in words.

    Tried in turn: a new file in :func:`unsaved_dir`, a new file in the system's
    temporary directory, standard output."""
    data = text.encode("utf-8")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    places = ((unsaved_dir(), f"{kind}-{stamp}-"), (Path(tempfile.gettempdir()), f"diskmodel-unsaved-{kind}-{stamp}-"))
    for folder, prefix in places:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix=prefix, suffix=".json", dir=folder)
        except OSError:
            continue
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        os.close(fd)
        return f"the result is kept in {path}"
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        return (f"the result could not be kept either (not in {places[0][0]}, nor in {places[1][0]}, nor on "
                f"standard output)")
    return "the result is printed on standard output instead"


class OutputReservation:
    """The output *path*'s temporary file, with *reserve_bytes* of space taken, from before the run.

    Use as a context manager around the run, and call :meth:`commit` with the
    result. ``None`` and ``-`` (standard output) reserve nothing. Entering
    raises :class:`~diskmodel.calibrate.harness.outputs.OutputWriteError` (one
    line, naming the path) when the space cannot be had; leaving removes the
    temporary file if the result was not committed. The run state *run* (a
    :class:`~diskmodel.calibrate.harness.runstate.Run`) records the file.
    """

    def __init__(self, path, *, kind: str, run, reserve_bytes: int, force: bool = False, flag: str = "--json",
                 measured_paths=()):
        self.path, self.kind, self.run, self.reserve_bytes = path, kind, run, int(reserve_bytes)
        self.force, self.flag, self.measured_paths = force, flag, tuple(measured_paths)
        self.tmp: str | None = None
        self._fd: int | None = None

    @property
    def active(self) -> bool:
        return self.path is not None and os.fspath(self.path) != "-"

    def __enter__(self) -> "OutputReservation":
        if not self.active:
            return self
        target = os.path.realpath(self.path)
        self.tmp = os.path.join(os.path.dirname(target) or ".",
                                f".{os.path.basename(target)}.{secrets.token_hex(4)}.tmp")
        res = self.run.intend("file", path=self.tmp, not_before=time.time())
        try:
            self._fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            self.run.absent(res)
            raise self._error(exc, before_run=True) from exc
        st = os.fstat(self._fd)
        # "major:minor", as every file record keeps its device (resources.file_is_ours compares them)
        self.run.created(res, ino=st.st_ino, dev=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
        try:
            self._reserve()
        except OSError as exc:
            self._discard()
            raise self._error(exc, before_run=True) from exc
        return self

    def _reserve(self) -> None:
        try:
            os.posix_fallocate(self._fd, 0, self.reserve_bytes)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            # No fallocate on this file system: take the space by writing zeros.
            _write_all(self._fd, bytes(self.reserve_bytes))
            os.fsync(self._fd)

    def _error(self, exc: OSError, *, before_run: bool = False, kept: str = "") -> outputs.OutputWriteError:
        return outputs.write_error(exc, self.path, flag=self.flag, existed=os.path.exists(self.path), kept=kept,
                                   reserved_bytes=self.reserve_bytes if before_run else None)

    def commit(self, text: str) -> None:
        """Write *text* as the result: over the reserved space, then renamed over the output.

        On failure the result is kept (:func:`keep_unsaved`) and
        :class:`~diskmodel.calibrate.harness.outputs.OutputWriteError` says
        where, naming the output path."""
        if not self.active:
            outputs.write_output_atomically(self.path or "-", text, kind=self.kind)
            return
        try:
            outputs.check_output_path(self.path, kind=self.kind, force=self.force,
                                      measured_paths=self.measured_paths, flag=self.flag)
            self._commit(text.encode("utf-8"))
        except outputs.OutputRefused as exc:
            raise outputs.OutputWriteError(errno.EEXIST, f"{exc}; the result was not written there; "
                                                         f"{keep_unsaved(text, kind=self.kind)}") from exc
        except OSError as exc:
            raise self._error(exc, kept="the result was not written there; " + keep_unsaved(text, kind=self.kind)) \
                from exc
        finally:
            self._discard()

    def _commit(self, data: bytes) -> None:
        target = os.path.realpath(self.path)
        fd = self._fd
        os.lseek(fd, 0, os.SEEK_SET)
        _write_all(fd, data)
        os.ftruncate(fd, len(data))  # gives back what was reserved beyond the result
        outputs.match_mode(fd, target)
        os.fsync(fd)
        os.close(fd)
        self._fd = None
        os.replace(self.tmp, target)
        self.tmp = None
        outputs.fsync_directory(os.path.dirname(target) or ".")

    def _discard(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None

    def __exit__(self, *exc) -> None:
        self._discard()
