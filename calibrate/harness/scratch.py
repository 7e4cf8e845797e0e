"""Scratch space for destructive benchmarks: a new file, or a named block device.

The rules (developers' guide, "Safety"):

- a path that does not exist becomes a regular file created by the tool, filled
  with written data (not sparse: sparse regions read back as zeros without any
  I/O), and deleted afterwards unless ``keep``;
- an existing file or a block device is only written to when the user repeats
  its path in ``destroy_data_on``;
- a block device that is mounted (itself or a partition), used as swap, held by
  another device (device-mapper, md, loop...), or cannot be opened with
  ``O_EXCL`` is refused before anything is written. So is a file that backs a
  loop device or is mounted on.

All refusals raise :class:`ScratchRefused` (a ValueError) naming the parameter.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
import time
from dataclasses import dataclass, field

from diskmodel.calibrate.harness import resources, runstate
from diskmodel.calibrate.harness.devstate import busy_reasons
from diskmodel.calibrate.harness.locks import lock_target
from diskmodel.model.units import MIB

__all__ = ["ScratchRefused", "Scratch", "prepare_scratch", "prepare_scratches", "fill_file"]

log = logging.getLogger(__name__)


class ScratchRefused(ValueError):
    """The scratch path may not be written to; nothing has been written."""


def _size_of(path: str, st: os.stat_result) -> int:
    if stat.S_ISBLK(st.st_mode):
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.lseek(fd, 0, os.SEEK_END)
        finally:
            os.close(fd)
    return st.st_size


def fill_file(path: str | os.PathLike, size_bytes: int, *, chunk_bytes: int = 4 * MIB) -> None:
    """Write *size_bytes* of data (not zeros, not holes) to *path* and fsync it.

    Checks afterwards that the file has as many allocated blocks as bytes
    (st_blocks); a file system that kept it sparse is an error, never silently accepted.
    """
    if size_bytes <= 0 or size_bytes % MIB:
        raise ValueError(f"size_bytes must be a positive multiple of 1 MiB, got {size_bytes}")
    block = bytearray(os.urandom(chunk_bytes))
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CLOEXEC)
    try:
        written, i = 0, 0
        while written < size_bytes:
            block[:8] = i.to_bytes(8, "little")
            n = min(chunk_bytes, size_bytes - written)
            view = memoryview(block)[:n]
            while view:
                k = os.write(fd, view)
                view = view[k:]
            written += n
            i += 1
        os.fsync(fd)
    finally:
        os.close(fd)
    st = os.stat(path)
    if st.st_blocks * 512 < size_bytes:
        raise RuntimeError(f"{path}: {st.st_blocks * 512} bytes allocated after writing {size_bytes}: "
                           "the file system keeps it sparse; use another scratch location")


def _tag(fd: int, tag: str) -> bool:
    """Write the run's tag into the new file's ``user.diskmodel.run`` attribute; False where the
    file system keeps no user attributes (then only the run that made it removes it)."""
    try:
        os.setxattr(fd, resources.TAG_XATTR, tag.encode())
    except OSError as exc:
        if exc.errno not in (errno.ENOTSUP, errno.EPERM):
            raise
        log.info("scratch file: its file system keeps no %s attribute (%s); if this run is killed, "
                 "`diskmodel cleanup` will not remove it", resources.TAG_XATTR, exc.strerror)
        return False
    return True


@dataclass
class Scratch:
    """A scratch file or device the tool may destroy. Use as a context manager.

    path: absolute path. kind: "file" or "block". created: the tool made it
    (then it is deleted on close unless keep). size_bytes: its usable size.
    """

    path: str
    kind: str
    created: bool
    size_bytes: int
    keep: bool = False
    resource: object = None   # its record in the run's state file (resources.Resource), if any
    held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)  # its locks

    def close(self) -> None:
        """Delete the file if the tool created it and keep is False, and let go of its lock. Idempotent.

        Never while a loop device still holds it: the file is then kept, and
        the run's record (``diskmodel cleanup``) still lists it.
        """
        try:
            if self.kind == "file" and self.created and self.keep:
                run = runstate.current_run()
                if self.resource is not None and run is not None and self.resource.state == "created":
                    run.release(self.resource)  # else the run's teardown would delete it after all
                    log.warning("kept scratch file %s (--keep); delete it when done", self.path)
            else:
                self._remove()
        finally:
            self.held.close()

    def _remove(self) -> None:
        if not (self.kind == "file" and self.created and not self.keep):
            return
        run = runstate.current_run()
        if self.resource is not None and run is not None:
            report = run.undo([self.resource])
            if report.left:
                log.error("scratch file %s kept: %s", self.path, "; ".join(report.left))
            else:
                log.info("removed scratch file %s", self.path)
            return
        holders = resources.loops_over({"backing": os.path.realpath(self.path)})
        if holders:
            log.error("scratch file %s kept: still held by %s", self.path, ", ".join(holders))
            return
        try:
            os.unlink(self.path)
            log.info("removed scratch file %s", self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def prepare_scratch(path: str | os.PathLike, size_bytes: int, *, destroy_data_on: str | os.PathLike | None = None,
                    keep: bool = False) -> Scratch:
    """Check (and for a new file, create and fill) the scratch space at *path*.

    Every refusal happens before anything is written. See the module docstring.
    """
    if not isinstance(size_bytes, int) or size_bytes <= 0 or size_bytes % MIB:
        raise ValueError(f"size_bytes must be a positive multiple of 1 MiB, got {size_bytes!r}")
    raw = os.fspath(path)
    if not raw:
        raise ValueError("scratch must be a path")
    real = os.path.realpath(raw)
    confirmed = destroy_data_on is not None and os.path.realpath(os.fspath(destroy_data_on)) == real
    if destroy_data_on is not None and not confirmed:
        raise ScratchRefused(f"destroy_data_on ({destroy_data_on}) must repeat the scratch path ({raw})")
    # Locked first, then checked, then written: no other run can start on it between the check that it
    # is free and the loop device built over it (the lock is held until Scratch.close).
    held = contextlib.ExitStack()
    held.enter_context(lock_target(real, purpose="scratch"))
    try:
        scratch = _prepare(raw, real, size_bytes, confirmed, keep, held)
    except BaseException:
        held.close()
        raise
    scratch.held = held
    return scratch


def prepare_scratches(needs, *, keep: bool = False) -> list[Scratch]:
    """:func:`prepare_scratch` for each ``(path, size_bytes, destroy_data_on)`` of *needs* (a stack's disks,
    each on a device of its own), all or none: on a refusal those already prepared are closed."""
    spaces: list[Scratch] = []
    try:
        for path, size_bytes, destroy_data_on in needs:
            spaces.append(prepare_scratch(path, size_bytes, destroy_data_on=destroy_data_on, keep=keep))
    except BaseException:
        for space in spaces:
            space.close()
        raise
    return spaces


def _prepare(raw: str, real: str, size_bytes: int, confirmed: bool, keep: bool,
             held: contextlib.ExitStack) -> Scratch:
    if not os.path.lexists(raw):
        parent = os.path.dirname(real) or "."
        if not os.path.isdir(parent):
            raise ScratchRefused(f"scratch: directory {parent} does not exist")
        run = runstate.current_run()
        # Recorded before it exists, so that a run killed while filling it is cleaned up; the tag
        # tells this file from a later one at the same path (resources.file_is_ours).
        tag = f"{run.run_id if run is not None else os.getpid()}-{secrets.token_hex(8)}"
        res = (run.intend("file", path=real, tag=tag, not_before=time.time() - 1)
               if run is not None else None)
        try:
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except BaseException:
            if res is not None:
                run.absent(res)
            raise
        try:
            tagged = _tag(fd, tag)
            st_new = os.fstat(fd)
        except BaseException:
            os.close(fd)
            os.unlink(real)   # made by the O_EXCL open above, untagged: nothing else can tell it is ours
            if res is not None:
                run.absent(res)
            raise
        os.close(fd)
        if res is not None:
            run.created(res, ino=st_new.st_ino, dev=f"{os.major(st_new.st_dev)}:{os.minor(st_new.st_dev)}",
                        tagged=tagged)
        scratch = Scratch(real, "file", True, size_bytes, keep, resource=res, held=held)
        try:
            held.enter_context(lock_target(real, purpose="scratch"))   # now by its inode too
            log.info("filling scratch file %s with %d bytes of data", real, size_bytes)
            fill_file(real, size_bytes)
        except BaseException:
            scratch.close()
            raise
        return scratch
    st = os.stat(real)
    if stat.S_ISBLK(st.st_mode):
        kind = "block"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        raise ScratchRefused(f"scratch {raw} is neither a regular file nor a block device")
    if not confirmed:
        raise ScratchRefused(
            f"scratch {raw} exists ({'block device' if kind == 'block' else 'file'}); its data would be "
            f"destroyed: pass --destroy-data-on {raw} (destroy_data_on) to confirm, or name a new file")
    reasons = busy_reasons(real)
    if reasons:
        stale = runstate.stale_holders_of(real)
        hint = (f"; a diskmodel run that died (run {', '.join(stale)}) left it so: `diskmodel cleanup` "
                "removes what it left" if stale else "")
        raise ScratchRefused(f"scratch {raw} is in use, refusing to write to it: " + "; ".join(reasons) + hint)
    have = _size_of(real, st)
    if kind == "block" and have < size_bytes:
        raise ScratchRefused(f"scratch {raw} has {have} bytes; the layout needs {size_bytes}")
    scratch = Scratch(real, kind, False, max(have, size_bytes), keep=True)
    if kind == "file" and (have < size_bytes or st.st_blocks * 512 < size_bytes):
        log.info("filling existing scratch file %s with %d bytes of data", real, size_bytes)
        fill_file(real, size_bytes)
    return scratch
