"""A report folder built beside its place and swapped in whole (``diskmodel experiment --out``).

:class:`ReportStaging` is entered before the run: it creates a temporary
folder beside the report folder (the same file system, so that a rename moves
it), recorded in the run state before it is made, and reserves the report's
space in it; a full or read-only file system is reported before anything is
measured. The report's files are written into it, the manifest
(:func:`diskmodel.calibrate.harness.outputs.experiment_manifest`) last, and
:meth:`ReportStaging.commit` swaps it in:

- no folder yet, or an empty one: ``rename(2)`` (which replaces an empty
  folder);
- an earlier report: ``renameat2(RENAME_EXCHANGE)`` swaps the two folders in
  one step (Linux 3.15, on ext4, xfs, btrfs, tmpfs and others), so at every
  instant the path holds the earlier report or the new one; the earlier one,
  now at the temporary name, is then removed. Where the file system does not
  offer the exchange (EINVAL), the earlier folder is renamed aside and the new
  one in, with SIGINT and SIGTERM held between the two renames;
- a folder holding other files (``--force``): the report's files are moved in
  one by one (each whole), the earlier manifest removed first and the new one
  moved in last, so the other files stay and the folder is accepted as a
  report only once it is complete.

A failure or a signal before the swap leaves the earlier report (or nothing)
and the temporary folder is removed, by this module or by the run's teardown.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
from pathlib import Path

from diskmodel.calibrate.harness import outputs

__all__ = ["ReportStaging", "exchange_paths"]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 1 << 1  # <linux/fs.h>


def exchange_paths(a, b) -> None:
    """Swap the files or folders *a* and *b* in one step (``renameat2(RENAME_EXCHANGE)``).

    Raises OSError (EINVAL where the file system or the C library does not offer it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.EINVAL, "renameat2 is not in this C library", os.fspath(b))
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), os.fspath(b))


def _write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        outputs.write_fully(fd, data)
    finally:
        os.close(fd)


class ReportStaging:
    """The report folder *out* built in a temporary folder beside it, recorded in the run state *run*."""

    RESERVATION = ".space-reserved"

    def __init__(self, out, *, run, reserve_bytes: int):
        self.out = Path(out)
        self.run = run
        self.reserve_bytes = int(reserve_bytes)
        self.path: Path | None = None
        self.files: dict[str, bytes] = {}

    def _error(self, exc: OSError, what: str) -> outputs.OutputWriteError:
        why = exc.strerror or str(exc)
        hint = ("free some space, or choose another folder" if exc.errno in (errno.ENOSPC, errno.EDQUOT)
                else "choose another folder")
        kept = "; the earlier report is intact" if os.path.isdir(self.out) and os.listdir(self.out) else ""
        return outputs.OutputWriteError(exc.errno, f"report folder {self.out}: {what}: {why} ({hint}){kept}")

    def __enter__(self) -> "ReportStaging":
        parent = self.out.absolute().parent
        parent.mkdir(parents=True, exist_ok=True)
        path = parent / f".{self.out.name}.partial-{secrets.token_hex(4)}"
        # No inode is recorded: after an exchange this name holds the earlier report, which
        # the teardown must remove too.
        res = self.run.intend("dir", path=str(path))
        try:
            os.mkdir(path)
        except OSError as exc:
            self.run.absent(res)
            raise self._error(exc, f"cannot create the report's temporary folder {path} beside it (before the "
                                   f"run; nothing was measured)") from exc
        self.run.created(res)
        self.path = path
        try:
            fd = os.open(path / self.RESERVATION, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                os.posix_fallocate(fd, 0, self.reserve_bytes)
            finally:
                os.close(fd)
        except OSError as exc:
            self._discard()
            raise self._error(exc, f"cannot reserve {self.reserve_bytes} bytes for the report (checked before "
                                   f"the run; nothing was measured)") from exc
        return self

    def write(self, name: str, data: bytes) -> None:
        """Write the report's file *name* into the temporary folder (the reserved space is given back first)."""
        if name not in outputs.EXPERIMENT_FILES:
            raise ValueError(f"{name!r} is not one of the report's files")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path / self.RESERVATION)
        try:
            _write_file(self.path / name, data)
        except OSError as exc:
            raise self._error(exc, f"cannot write {name} of the report (in its temporary folder {self.path}; "
                                   f"removed)") from exc
        self.files[name] = data

    def commit(self) -> None:
        """Write the manifest, then put the folder in place of the report folder (see the module docstring)."""
        try:
            _write_file(self.path / outputs.EXPERIMENT_MANIFEST, outputs.experiment_manifest(self.files).encode())
            outputs.fsync_directory(str(self.path))
            self._swap_in()
        except OSError as exc:
            if isinstance(exc, outputs.OutputWriteError):
                raise
            raise self._error(exc, "cannot put the new report in place") from exc
        outputs.fsync_directory(str(self.out.absolute().parent))

    def _swap_in(self) -> None:
        from diskmodel.calibrate.harness.runstate import signals_blocked

        out = self.out
        try:
            entries = os.listdir(out)
        except FileNotFoundError:
            entries = None
        if not entries:  # none or empty: rename(2) replaces an empty folder
            os.rename(self.path, out)
            self.path = None
            return
        if set(entries) - set(outputs.EXPERIMENT_ENTRIES):
            self._move_files_in()
            return
        try:
            exchange_paths(self.path, out)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            aside = out.absolute().parent / f".{out.name}.old-{secrets.token_hex(4)}"
            res = self.run.intend("dir", path=str(aside))
            with signals_blocked():  # the report folder is missing only between these two renames
                os.rename(out, aside)
                os.rename(self.path, out)
            self.path = aside
            self.run.created(res)
        self._discard()  # the earlier report, now at the temporary name

    def _move_files_in(self) -> None:
        out = self.out
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out / outputs.EXPERIMENT_MANIFEST)
        outputs.fsync_directory(str(out))
        for name in self.files:
            os.replace(self.path / name, out / name)
        os.replace(self.path / outputs.EXPERIMENT_MANIFEST, out / outputs.EXPERIMENT_MANIFEST)
        outputs.fsync_directory(str(out))
        self._discard()

    def _discard(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None

    def __exit__(self, *exc) -> None:
        self._discard()
