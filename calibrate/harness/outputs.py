"""Output files of the ``diskmodel`` command line: checked before a run, written atomically.

Every subcommand that writes a result file goes through this module:

- :func:`check_output_path` is called before the run starts (before any
  measurement or any layout is built). An output path must be new, ``-``
  (standard output), or an earlier diskmodel result of the same kind
  (recognised by parsing it: a JSON object whose ``"format"`` is
  ``"diskmodel.<kind>"``). Anything else is refused with a one-line
  :class:`OutputRefused` that says how to proceed: a device, a directory,
  a FIFO or socket, a path the run measures (refused even with ``--force``),
  a missing parent directory, a directory one cannot write in, and another
  regular file (allowed with ``--force`` only).
- :func:`check_output_dir` is the same for a report folder (``experiment --out``):
  new, empty, or a complete earlier experiment report (its ``manifest.json``,
  written last, lists every file of it with its size and SHA-256, and nothing
  else is in the folder); a folder holding other files, or an incomplete or
  changed report, needs ``--force``.
- :func:`output_lock` takes the run's exclusive lock on the output path
  (:func:`diskmodel.calibrate.harness.locks.lock_target`).
- :func:`write_output_atomically` writes to a temporary file in the same
  directory, fsyncs it and renames it over the target, so a crash or a full
  disk never leaves half a result (nor destroys the earlier one).
- :class:`~diskmodel.calibrate.harness.reserve.OutputReservation` does the same for a result that takes a run to
  make: before the run it creates the temporary file and takes the space the
  result will need (``posix_fallocate``), so a full file system is found
  before anything is measured and cannot fill up under the result during the
  run; if the final write fails all the same, the result is kept
  (:func:`~diskmodel.calibrate.harness.reserve.keep_unsaved`) and the error line says where.

Every write error names the path it could not write.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import sys
import tempfile
import time

__all__ = [
    "FORMATS", "FORMAT_VERSIONS", "OutputRefused", "OutputWriteError", "format_marker", "mark",
    "is_earlier_result", "check_output_path", "check_output_dir", "is_experiment_report_dir",
    "output_lock", "write_output_atomically", "EXPERIMENT_FILES", "EXPERIMENT_MANIFEST", "EXPERIMENT_ENTRIES",
    "experiment_manifest", "write_error", "match_mode", "fsync_directory",
]

# The "format" marker each kind of result carries, and the format_version this diskmodel writes.
FORMATS = {
    "calibration": "diskmodel.calibration",
    "postmark": "diskmodel.postmark",
    "experiment": "diskmodel.experiment",
}
FORMAT_VERSIONS = {"calibration": 3, "postmark": 1, "experiment": 1}
# Markers written by earlier versions of diskmodel, still recognised as results of the kind.
_LEGACY_FORMATS = {"calibration": ("diskmodel-calibration/1",)}
# Postmark summaries written before the marker existed: recognised by their keys.
_LEGACY_POSTMARK_KEYS = frozenset({"environment", "config", "n", "mean", "bse", "runs"})
# A result file larger than this is not parsed (it is not one of ours).
MAX_RESULT_BYTES = 1 << 30
# The files `diskmodel experiment` writes into its report folder.
EXPERIMENT_FILES = ("report.md", "calibration.json", "predictions.csv", "seek_curve.png",
                    "zone_rates.png", "throughput.png", "lvm_costs.json")
# Written last into a report folder: the report's files with their sizes and SHA-256; a folder is an
# earlier report only if every file it lists is there as listed.
EXPERIMENT_MANIFEST = "manifest.json"
EXPERIMENT_ENTRIES = EXPERIMENT_FILES + (EXPERIMENT_MANIFEST,)


class OutputRefused(ValueError):
    """An output path that must not be written; the message is one line and says what to do."""

    def __init__(self, message: str, *, path=None, forceable: bool = False):
        super().__init__(message)
        self.path = path
        self.forceable = forceable


class OutputWriteError(OSError):
    """Writing an output failed (a full disk, an I/O error); the earlier file, if any, is intact."""

    def __str__(self) -> str:  # one line, already worded (no "[Errno N]" prefix)
        return self.strerror if self.strerror else super().__str__()


def format_marker(kind: str) -> str:
    try:
        return FORMATS[kind]
    except KeyError:
        raise ValueError(f"kind must be one of {', '.join(FORMATS)} (got {kind!r})") from None


def mark(data: dict, kind: str) -> dict:
    """*data* with the kind's ``format`` and ``format_version`` first."""
    rest = {k: v for k, v in data.items() if k not in ("format", "format_version")}
    return {"format": format_marker(kind), "format_version": FORMAT_VERSIONS[kind], **rest}


def read_input_bytes(path, *, what: str, hint: str, max_bytes: int, error) -> bytes:
    """The bytes of an input file the user named (a calibration, a costs file, ...).

    A directory, a device, a FIFO or a socket, and a file over *max_bytes* are
    refused with ``error(source, message)`` naming *what* the file should be and
    *hint* (how to get one); a path that cannot be read raises the ``OSError``."""
    from diskmodel.data.input_files import InputFileError, open_regular

    source = os.fspath(path)
    try:
        fh = open_regular(source, what)  # the shared bounded-input helper: no FIFO blocks, no device is read
    except IsADirectoryError:
        raise error(source, f"is a directory, not {what} ({hint})") from None
    except InputFileError:
        raise error(source, f"is not a regular file (a device, a FIFO or a socket); {hint}") from None
    with fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise error(source, f"is larger than {max_bytes} bytes, too large for {what}")
    return data


def parse_input_json(raw: bytes | str, source: str, *, what: str, error):
    """The JSON value in *raw* (an input file's bytes, or text), or ``error(source, message)``
    saying it is not UTF-8, empty, not valid JSON (where, and that it may be truncated) or
    nested too deeply."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise error(source, f"is not a UTF-8 text file, hence not {what}") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise error(source, "is empty" if not raw.strip() else
                    f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated?)") from None
    except RecursionError:
        raise error(source, f"is not {what} (nested too deeply)") from None


def _load_json_object(path) -> dict | None:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RESULT_BYTES or st.st_size == 0:
            return None
        with open(path, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def is_earlier_result(path, kind: str) -> bool:
    """Is *path* a regular file holding an earlier diskmodel result of *kind*?"""
    data = _load_json_object(path)
    if data is None:
        return False
    marker = data.get("format")
    if marker == format_marker(kind) or marker in _LEGACY_FORMATS.get(kind, ()):
        return True
    return kind == "postmark" and "format" not in data and _LEGACY_POSTMARK_KEYS <= data.keys()


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISBLK, "a block device"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a regular file"))


def _what(mode: int) -> str:
    """What kind of file *mode* is, in words."""
    return next((name for is_kind, name in _FILE_KINDS if is_kind(mode)), "not a regular file")


def _loop_backing_file(path: str) -> str | None:
    """The backing file of the loop device at *path*, if it is one."""
    from diskmodel.calibrate.harness import devstate

    try:
        loop = devstate.loop_device(path)
    except (OSError, devstate.DeviceStateError):
        return None
    return (loop["back-file"].removesuffix(" (deleted)") or None) if loop else None


def _same_target(output: str, measured) -> bool:
    """Is *output* the measured path (the same file, the same device, or a loop device's backing file)?"""
    measured = os.fspath(measured)
    try:
        if os.path.realpath(output) == os.path.realpath(measured):
            return True
    except (OSError, ValueError):
        pass
    try:
        out_st, meas_st = os.stat(output), os.stat(measured)
    except (OSError, ValueError):
        return False
    if (out_st.st_dev, out_st.st_ino) == (meas_st.st_dev, meas_st.st_ino):
        return True
    devices = (stat.S_ISBLK, stat.S_ISCHR)
    if any(f(out_st.st_mode) for f in devices) and any(f(meas_st.st_mode) for f in devices):
        if out_st.st_rdev == meas_st.st_rdev:
            return True
    backing = _loop_backing_file(measured)
    if backing is not None:
        try:
            b_st = os.stat(backing)
            if (out_st.st_dev, out_st.st_ino) == (b_st.st_dev, b_st.st_ino):
                return True
        except OSError:
            pass
    return False


def _check_parent_writable(path: str, flag: str, shown: str) -> None:
    parent = os.path.dirname(os.path.abspath(path)) or "/"
    if not os.path.isdir(parent):
        raise OutputRefused(f"{flag} {shown}: the directory {parent} does not exist; create it first, "
                            f"or choose another path", path=path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputRefused(f"{flag} {shown}: cannot write in the directory {parent} (no permission, or "
                            f"a read-only file system); choose another path", path=path)


def check_output_path(path, *, kind: str, force: bool = False, measured_paths=(), flag: str = "--json") -> None:
    """Refuse an output *path* (raise :class:`OutputRefused`) unless it may be written.

    Call it before the run starts. Allowed: ``-`` (standard output), a new
    path in a writable directory, an earlier diskmodel result of *kind*, and,
    with *force*, another regular file. Refused even with *force*: a path in
    *measured_paths* (the same file, device or a measured loop device's
    backing file), a device, a directory, a FIFO or a socket.
    """
    format_marker(kind)
    if path is None or path == "-":
        return
    path = os.fspath(path)
    shown = path
    if path == "":
        raise OutputRefused(f"{flag}: the output path is empty; give a file path, or '-' for standard output")
    for measured in measured_paths:
        if measured and _same_target(path, measured):
            raise OutputRefused(f"{flag} {shown}: this is the target the run measures ({os.fspath(measured)}); "
                                f"writing there would destroy it; choose another path (--force does not apply)",
                                path=path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise OutputRefused(f"{flag} {shown}: a symbolic link to a missing path "
                                f"({os.readlink(path)}); choose another path", path=path) from None
        _check_parent_writable(path, flag, shown)
        return
    except NotADirectoryError:
        raise OutputRefused(f"{flag} {shown}: a part of the path is not a directory; choose another path",
                            path=path) from None
    except PermissionError:
        raise OutputRefused(f"{flag} {shown}: cannot look at this path (permission denied); choose another path",
                            path=path) from None
    except OSError as exc:
        raise OutputRefused(f"{flag} {shown}: cannot look at this path ({exc.strerror}); choose another path",
                            path=path) from None
    if not stat.S_ISREG(st.st_mode):
        hint = (f"give a file path in it, such as {os.path.join(path, kind + '.json')}"
                if stat.S_ISDIR(st.st_mode) else "choose a new file path")
        raise OutputRefused(f"{flag} {shown} is {_what(st.st_mode)}, not a result file; {hint} "
                            f"(--force does not apply)", path=path)
    if not is_earlier_result(path, kind):
        if not force:
            raise OutputRefused(f"{flag} {shown} exists and is not an earlier diskmodel {kind} result; choose "
                                f"another path, or pass --force to overwrite it", path=path, forceable=True)
    # The file is replaced by a rename in its directory: that directory must be writable.
    _check_parent_writable(os.path.realpath(path), flag, shown)


def _sha256_of(path) -> str | None:
    import hashlib

    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def experiment_manifest(files: dict[str, bytes]) -> str:
    """The manifest of a report whose files (name -> bytes) are *files*: written last into the folder."""
    import hashlib

    listed = {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in files.items()}
    return json.dumps(mark({"files": listed}, "experiment"), indent=1) + "\n"


def is_experiment_report_dir(path) -> bool:
    """Is *path* a complete report folder written by ``diskmodel experiment``?

    Its manifest (``manifest.json``, written last) must list report.md and an
    earlier calibration.json, and every file it lists must be there, a regular
    file with the size and SHA-256 it lists: a report cut short, or mixed with
    another one, is not."""
    manifest = _load_json_object(os.path.join(path, EXPERIMENT_MANIFEST))
    if manifest is None or manifest.get("format") != format_marker("experiment"):
        return False
    files = manifest.get("files")
    if not isinstance(files, dict) or not {"report.md", "calibration.json"} <= files.keys():
        return False
    for name, listed in files.items():
        if name not in EXPERIMENT_FILES or not isinstance(listed, dict):
            return False
        file = os.path.join(path, name)
        try:
            st = os.lstat(file)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_size != listed.get("bytes") or _sha256_of(file) != listed.get("sha256"):
            return False
    return is_earlier_result(os.path.join(path, "calibration.json"), "calibration")


def check_output_dir(path, *, kind: str = "experiment", force: bool = False, measured_paths=(),
                     flag: str = "--out") -> None:
    """Refuse a report folder *path* (raise :class:`OutputRefused`) unless it may be written.

    Allowed: a new folder (its missing parents are created, as for the
    default ``reports/experiment``), an empty folder, an earlier experiment
    report folder, and, with *force*, a folder holding other files. Refused
    even with *force*: anything not a folder, a folder one cannot write in,
    a folder where one of the report's file names is taken by something
    other than a regular file, a path the run measures.
    """
    if path is None or os.fspath(path) in ("", "-"):
        raise OutputRefused(f"{flag}: give a folder for the report (not {path!r})")
    path = os.fspath(path)
    for measured in measured_paths:
        if measured and _same_target(path, measured):
            raise OutputRefused(f"{flag} {path}: this is the target the run measures ({os.fspath(measured)}); "
                                f"choose another folder (--force does not apply)", path=path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise OutputRefused(f"{flag} {path}: a symbolic link to a missing path; choose another folder",
                                path=path) from None
        ancestor = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(ancestor):
            ancestor = os.path.dirname(ancestor)
        if not os.path.isdir(ancestor):
            raise OutputRefused(f"{flag} {path}: {ancestor} is not a directory; choose another folder", path=path)
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise OutputRefused(f"{flag} {path}: cannot create it in {ancestor} (no permission, or a read-only "
                                f"file system); choose another folder", path=path)
        return
    except OSError as exc:
        raise OutputRefused(f"{flag} {path}: cannot look at this path ({exc.strerror}); choose another folder",
                            path=path) from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"{flag} {path} is {_what(st.st_mode)}; the report needs a new or empty folder "
                            f"(--force does not apply)", path=path)
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputRefused(f"{flag} {path}: cannot write in this folder (no permission, or a read-only file "
                            f"system); choose another folder", path=path)
    for name in EXPERIMENT_ENTRIES:
        try:
            mode = os.lstat(os.path.join(path, name)).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise OutputRefused(f"{flag} {path}: {name} in it is {_what(mode) if not stat.S_ISLNK(mode) else 'a symbolic link'}, "
                                f"which the report would overwrite; choose another folder (--force does not apply)",
                                path=path)
    entries = os.listdir(path)
    others = sorted(set(entries) - set(EXPERIMENT_ENTRIES))
    if not entries or force or (not others and is_experiment_report_dir(path)):
        return
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise OutputRefused(f"{flag} {path} holds other files ({shown}) and is not an earlier diskmodel experiment "
                            f"report; choose a new or empty folder, or pass --force to write the report into "
                            f"it (the other files are kept)", path=path, forceable=True)
    raise OutputRefused(f"{flag} {path} holds an incomplete or changed experiment report (its {EXPERIMENT_MANIFEST} "
                        f"is missing or does not match its files); choose a new or empty folder, or pass --force to "
                        f"replace it", path=path, forceable=True)


@contextlib.contextmanager
def output_lock(path):
    """Hold the run's exclusive lock on the output *path* (nothing for None or ``-``).

    Raises :class:`diskmodel.calibrate.harness.locks.TargetLocked` when another
    run holds it (its message names that run's PID)."""
    if path is None or os.fspath(path) in ("", "-"):
        yield
        return
    from diskmodel.calibrate.harness.locks import lock_target

    with lock_target(os.fspath(path), purpose="output"):
        yield


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_output_atomically(path, text: str, *, kind: str, force: bool = False, flag: str = "--json",
                            measured_paths=(), run=None) -> None:
    """Write *text* to *path* (``-``: standard output) so that a failure never leaves half a result.

    The path is checked again (:func:`check_output_path`; it may have changed
    during the run), *text* goes to a temporary file in the same directory
    (``tempfile.mkstemp``), which is fsynced and renamed over the target
    (``os.replace``); a symbolic link is followed (the file it names is
    replaced). The mode of a replaced file is kept; a new file gets 0666 less
    the umask. On failure the temporary file is removed and
    :class:`OutputWriteError` (an ``OSError``, one line) is raised; the earlier
    file, if any, is intact. With *run* (a
    :class:`~diskmodel.calibrate.harness.runstate.Run`) the temporary file is
    recorded in it before it is created, so ``diskmodel cleanup`` removes it
    after a SIGKILL.
    """
    if path == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    check_output_path(path, kind=kind, force=force, measured_paths=measured_paths, flag=flag)
    existed = os.path.exists(path)
    try:
        replace_file_atomically(path, text.encode("utf-8"), run=run)
    except OSError as exc:
        raise write_error(exc, path, flag=flag, existed=existed) from exc


def write_error(exc: OSError, path, *, flag: str, existed: bool, kept: str = "",
                reserved_bytes: int | None = None) -> OutputWriteError:
    """The one-line :class:`OutputWriteError` for a failed write of the output *path* (named in it).

    *kept* says where the result went instead, if it was kept somewhere;
    *reserved_bytes*: the space for the result could not be reserved before the run, which did not start."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "free some space, or choose another path"
    else:
        hint = "choose another path"
    tail = "; the earlier file is intact" if existed else ""
    tail += f"; {kept}" if kept else ""
    when = (f" (checked before the run by reserving {reserved_bytes} bytes for it; nothing was measured)"
            if reserved_bytes is not None else "")
    return OutputWriteError(exc.errno, f"{flag} {os.fspath(path)}: cannot write the result{when}: {why} "
                                       f"({hint}){tail}")


def replace_file_atomically(path, data: bytes, *, run=None) -> None:
    """Put *data* at *path* through a temporary file in the same folder, fsync and rename.

    A crash leaves either the earlier file or the new one, never half of one.
    A symbolic link is followed; a replaced file keeps its mode (a new one
    gets 0666 less the umask). Raises OSError; the temporary file is removed.
    With *run* the temporary file is recorded in it before it is created
    (a name of its own, made with O_EXCL) and marked gone once renamed or removed.
    """
    try:
        _replace_file(path, data, run)
    except OSError as exc:
        # Name the path: os.write and os.fsync raise without one ("No space left on device").
        if exc.filename is not None and os.fsdecode(exc.filename) == os.fspath(path):
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from exc


def match_mode(fd: int, target: str) -> None:
    """Give the open file *fd*, about to replace *target*, target's mode and owner (0666 less the umask
    for a new file)."""
    try:
        old = os.stat(target)
    except FileNotFoundError:
        os.fchmod(fd, 0o666 & ~_umask())
        return
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
        with contextlib.suppress(OSError):
            os.fchown(fd, old.st_uid, old.st_gid)


def write_fully(fd: int, data: bytes) -> None:
    """Write all of *data* to the open file *fd* (os.write may take part of it) and fsync it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def fsync_directory(directory: str) -> None:
    """Make a rename in *directory* durable (best effort: not every file system allows it)."""
    with contextlib.suppress(OSError):
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _replace_file(path, data: bytes, run=None) -> None:
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or "."
    try:   # a rename over a device node, a FIFO or a socket would put a file where that node was (/dev/zero)
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG
    if not stat.S_ISREG(mode):
        raise OSError(errno.EEXIST, f"{_what(mode)} is there, not a regular file: not replaced", target)
    tmp = res = None
    try:
        if run is None:
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
        else:
            name = os.path.join(directory, f".{os.path.basename(target)}.{secrets.token_hex(6)}.tmp")
            res = run.intend("file", path=name, not_before=time.time() - 1)
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            tmp = name
            st = os.fstat(fd)
            run.created(res, ino=st.st_ino, dev=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
        try:
            match_mode(fd, target)
            write_fully(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        tmp = None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if res is not None:
            run.absent(res)   # renamed over the target, or removed
    fsync_directory(directory)
