"""blktrace's events through tracefs, for a kernel whose debugfs blktrace may not read (lockdown).

The kernel's ``blk`` tracer (kernel/trace/blktrace.c) sends the events of every device whose
``/sys/class/block/DEV/trace/enable`` is 1 to the ftrace ring buffer; with the tracer option ``bin``
each event is printed as the ``struct blk_io_trace`` blktrace itself writes (48 bytes plus
``pdu_len`` bytes), after ftrace's 16-byte binary entry header (pid, cpu, timestamp:
trace_output.c, trace_fn_bin / the blk tracer's ``print_binary``). :meth:`BlkTracer.stop_and_write`
strips the headers and writes the records into one file per CPU, named as blktrace names them
(``NAME.blktrace.CPU``), with each CPU's sequence numbers counted again from 1 (the tracer
leaves them 0, and blkparse orders by them), so that blkparse reads them unchanged.

Every tracefs setting changed is recorded in the run first (resource kind ``blktracer``, with the
values to restore) and put back by teardown, on success, failure and signals.

The tracer is the machine's one. A recording holds a host-wide lock (:data:`TRACER_LOCK`, taken with
:func:`diskmodel.calibrate.harness.locks.lock_target`) from before it reads ``current_tracer`` until
its settings are back, so two recordings cannot both read ``nop`` and both take it; a teardown or a
``diskmodel cleanup`` restores a record only while it can take that lock too.
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import struct
import threading
import time
from pathlib import Path

from diskmodel.calibrate.harness import devstate, locks

__all__ = ["TRACEFS", "TRACER_LOCK", "BlkTracer", "buffer_kb_to_restore", "split_binary"]

TRACEFS = Path("/sys/kernel/tracing")
#: The target whose lock makes the blk tracer one recording's at a time (a name only: nothing is written to it).
TRACER_LOCK = TRACEFS / "current_tracer"
_HEADER_BYTES = 16
_RECORD = struct.Struct("<IIQQIIIIIHH")  # struct blk_io_trace (include/uapi/linux/blktrace_api.h)
_MAGIC = 0x65617400
#: Per-CPU ring buffer while tracing [KiB]: a reader drains it, this only absorbs bursts.
BUFFER_KB = 16384
#: How long a recording waits for another to give the machine's blk tracer back [s].
TRACER_WAIT_S = 300.0
#: How often a waiting recording looks at the tracer again [s]; it holds the lock only while it looks.
TRACER_POLL_S = 0.5
#: How long a restore waits for the lock before it takes the holder for a live recording [s]: a waiting
#: recording holds it for one read every TRACER_POLL_S, a recording that has the tracer for its whole run.
RESTORE_WAIT_S = 5.0
#: Only the queue, issue and completion categories: blkparse's Q, D and C (blk_trace_mask2str's
#: names; Q is what a bio-based device receives).
ACT_MASK = "queue,issue,complete"


def split_binary(data: bytes) -> dict[int, bytearray]:
    """The ``blk_io_trace`` records of the tracer's binary output, by CPU, sequence renumbered."""
    out: dict[int, bytearray] = {}
    seq: dict[int, int] = {}
    i = 0
    while i + _HEADER_BYTES + _RECORD.size <= len(data):
        fields = _RECORD.unpack_from(data, i + _HEADER_BYTES)
        magic, cpu, pdu = fields[0], fields[8], fields[10]
        if magic & 0xFFFFFF00 != _MAGIC:
            raise ValueError(f"tracefs blk output: no blk_io_trace magic at byte {i + _HEADER_BYTES}")
        rec = bytearray(data[i + _HEADER_BYTES:i + _HEADER_BYTES + _RECORD.size + pdu])
        seq[cpu] = seq.get(cpu, 0) + 1
        struct.pack_into("<I", rec, 4, seq[cpu])
        out.setdefault(cpu, bytearray()).extend(rec)
        i += _HEADER_BYTES + _RECORD.size + pdu
    if i != len(data):
        raise ValueError(f"tracefs blk output: {len(data) - i} bytes left over after the last record")
    return out


def _read(path: Path) -> str:
    return path.read_text().strip()


_UNEXPANDED = re.compile(r"^\d+ \(expanded: (\d+)\)$")


def buffer_kb_to_restore(text: str) -> str:
    """The per-CPU ring buffer size to put back, from what ``buffer_size_kb`` reads [KiB]: a number,
    or, while the kernel has not yet allocated the buffer at its full size (until the first tracer
    uses it), ``"7 (expanded: 1408)"``, whose size to come is the one to restore
    (kernel/trace/trace.c, tracing_entries_read)."""
    text = text.strip()
    if text.isdigit():
        return text
    unexpanded = _UNEXPANDED.match(text)
    if unexpanded:
        return unexpanded.group(1)
    raise RuntimeError(f"tracefs's buffer_size_kb reads {text!r}, neither a size nor an unexpanded one: "
                       "the blk tracer is not started, since its size could not be put back")


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


_SETTINGS = re.compile(r"^(/sys/kernel/tracing/(buffer_size_kb|options/bin|current_tracer|tracing_on)"
                       r"|/sys/class/block/[A-Za-z0-9_.+-]+/trace/enable)$")
_VALUES = re.compile(r"^[a-z0-9_,]{0,200}$")


def _tracefs_root(details: dict) -> Path:
    """Where the settings are written: the recording's own tracefs mount when it is still a tracefs
    mount point (/proc/mounts says so), else /sys/kernel/tracing (which may have been unmounted)."""
    root = details.get("tracefs")
    if isinstance(root, str) and root != str(TRACEFS):
        try:
            mounts = Path("/proc/mounts").read_text().splitlines()
        except OSError:
            mounts = []
        if any(len(f := line.split()) >= 3 and f[1] == root and f[2] == "tracefs" for line in mounts):
            return Path(root)
    return TRACEFS


def _try_lock(held: contextlib.ExitStack) -> bool:
    """Take the tracer's lock into *held*; False when another process holds it."""
    try:
        held.enter_context(locks.lock_target(TRACER_LOCK, purpose="the kernel's blk tracer"))
    except locks.TargetLocked:
        return False
    return True


@contextlib.contextmanager
def _tracer_owned(wait_s: float):
    """Yields True while holding the tracer's lock, or False when another process held it for *wait_s*:
    that process is a live recording, which took the tracer when it read ``nop``, so no setting of an
    earlier record is in effect, and writing one would end that recording."""
    with contextlib.ExitStack() as held:
        deadline = time.monotonic() + wait_s
        while not _try_lock(held):
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(0.1)
        yield True


def restore(details: dict) -> str:
    """Put the recorded tracefs settings back; '' on success (or when a live recording has the tracer:
    see :func:`_tracer_owned`), else what failed.

    A record is read back from a state file, which someone may have planted: only the settings this
    module changes are written, and only with values of their own form (numbers, names, masks)."""
    with _tracer_owned(RESTORE_WAIT_S) as ours:
        return _restore_settings(details) if ours else ""


def _restore_settings(details: dict) -> str:
    why = []
    root = _tracefs_root(details)
    for path, value in [*((d, "0") for d in details.get("enable", [])),
                        *details.get("restore", {}).items()]:
        if not (isinstance(path, str) and isinstance(value, str) and _SETTINGS.match(path) and _VALUES.match(value)):
            why.append(f"{path!r}: not a tracefs blk setting this run changes: left as it is")
            continue
        target = root / Path(path).relative_to(TRACEFS) if path.startswith(str(TRACEFS) + "/") else Path(path)
        try:
            _write(target, value)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # a device gone since needs no restoring
                why.append(f"{path}: {exc.strerror}")
    return "; ".join(why)


def still_set(details: dict) -> bool:
    """Is any of the recorded devices still traced, or the blk tracer still chosen, by this record?
    False while a live recording has the tracer (:func:`_tracer_owned`): what is set is its own."""
    with _tracer_owned(RESTORE_WAIT_S) as ours:
        return ours and _still_set(details)


def _still_set(details: dict) -> bool:
    for path in details.get("enable", []):
        if not (isinstance(path, str) and _SETTINGS.match(path)):
            continue  # not a setting this module changes: nothing of ours to look at
        try:
            if _read(Path(path)) == "1":
                return True
        except OSError:
            pass
    tracer = _tracefs_root(details) / "current_tracer"
    try:
        return _read(tracer) == "blk"
    except OSError:
        return False


def _set(path: Path, value: str) -> None:
    """Write one tracer setting, or say in one line which one the kernel refused and why."""
    try:
        _write(path, value)
    except OSError as exc:
        busy = ": another process reads the blk tracer's output" if exc.errno == errno.EBUSY else ""
        raise RuntimeError(f"tracefs setting {path} = {value!r} refused ({exc.strerror}){busy}") from None


class BlkTracer:
    """The blk tracer on *devices* while the ``with`` block runs, its output drained by a thread."""

    def __init__(self, run, devices, out_dir: Path, run_tool):
        # run_tool(argv, timeout_s=...): the caller's way to run a tool as a recorded child of the run
        # (diskmodel.calibrate.bench.process.run), which this module, imported by the teardown, cannot import
        self.run, self.devices, self.out_dir, self.run_tool = run, devices, out_dir, run_tool
        self._chunks: list[bytes] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None     # trace_pipe, read by the thread, closed by _stop_reader
        self._error = ""                # the reader's failure, told by stop_and_write
        self._held: contextlib.ExitStack | None = None  # the tracer's lock while this recording has it
        self._res = None
        self.root: Path | None = None  # this recording's own tracefs mount

    def _mount(self) -> None:
        """Mount tracefs at a folder of the run's own (recorded; teardown unmounts it): another
        recording's teardown may unmount /sys/kernel/tracing while this one reads through it."""
        if self.root is not None:
            return
        where = self.run.temp_dir("tracefs-")
        res = self.run.intend("mount", mountpoint=str(where), source="tracefs")
        proc = self.run_tool(["mount", "-t", "tracefs", "-o", "nosuid,nodev,noexec", "tracefs", str(where)],
                             timeout_s=60)
        if proc.returncode != 0 or not devstate.mounted_at(str(where)):
            self.run.absent(res)
            raise RuntimeError(f"tracefs cannot be mounted on {where} ({proc.stderr.strip()}): "
                               "neither blktrace nor the kernel's blk tracer can be read")
        self.run.created(res)
        self.root = where

    def __enter__(self) -> "BlkTracer":
        # The tracefs mount first: the wait below may be long, and a signal meanwhile finds it recorded.
        self._mount()
        try:
            self._take_tracer()
            self._start()
        except BaseException:
            self._finish()
            raise
        return self

    def _take_tracer(self) -> None:
        """Hold the tracer's lock with the tracer at ``nop``, waiting up to TRACER_WAIT_S while it is
        another's: the lock is let go between looks, so that a cleanup can restore a killed run's
        settings meanwhile."""
        deadline = time.monotonic() + TRACER_WAIT_S
        who = "another recording (it holds the tracer's lock)"
        while True:
            self._held = contextlib.ExitStack()
            if _try_lock(self._held):
                tracer = _read(self.root / "current_tracer")
                if tracer == "nop":
                    return
                self._held.close()
                who = f"something else (current_tracer is {tracer!r})"
            if time.monotonic() >= deadline:
                raise RuntimeError(f"the kernel's blk tracer has been in use by {who} for "
                                   f"{TRACER_WAIT_S:g} s: not changed")
            time.sleep(TRACER_POLL_S)

    def _start(self) -> None:
        enables = [f"/sys/class/block/{d.kernel_name}/trace/enable" for d in self.devices]
        # A device's act_mask exists only while it is traced: disabling it drops the mask too.
        masks = [f"/sys/class/block/{d.kernel_name}/trace/act_mask" for d in self.devices]
        # Recorded by the settings' usual paths (the ones teardown may write), set through our mount.
        restore_to = {str(TRACEFS / "buffer_size_kb"): buffer_kb_to_restore(_read(self.root / "buffer_size_kb")),
                      str(TRACEFS / "options" / "bin"): "0", str(TRACEFS / "current_tracer"): "nop",
                      str(TRACEFS / "tracing_on"): _read(self.root / "tracing_on")}
        self._res = self.run.intend("blktracer", tracefs=str(self.root), enable=enables, restore=restore_to)
        _set(self.root / "tracing_on", "0")
        _set(self.root / "buffer_size_kb", str(BUFFER_KB))
        _set(self.root / "current_tracer", "blk")
        _set(self.root / "options" / "bin", "1")
        _set(self.root / "trace", "")
        for path in enables:
            _set(Path(path), "1")
        for path in masks:
            _set(Path(path), ACT_MASK)
        self.run.created(self._res)
        # Opened here, not in the reader: a refusal is this call's one-line error, not a thread's traceback.
        try:
            self._fd = os.open(self.root / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise RuntimeError(f"tracefs's trace_pipe cannot be opened ({exc.strerror}): "
                               "another process reads the blk tracer's output") from None
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()
        _set(self.root / "tracing_on", "1")

    def _drain(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self._fd, 1 << 20)
                except BlockingIOError:
                    chunk = b""
                if chunk:
                    self._chunks.append(chunk)
                    continue
                if self._stop.is_set():
                    return
                time.sleep(0.02)
        except OSError as exc:  # told by stop_and_write, in the caller's thread
            self._error = f"reading tracefs's trace_pipe failed ({exc.strerror})"

    def _stop_reader(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None
        if self._fd is not None:
            # Before the restore: the kernel refuses to change current_tracer while trace_pipe is open.
            os.close(self._fd)
            self._fd = None

    def _finish(self) -> None:
        """Stop the reader, put the settings back and let the tracer's lock go (in that order)."""
        try:
            self._stop_reader()
            if self._res is not None and self._res.state != "removed":
                why = restore(self._res.details)  # through our own mount (see _tracefs_root); we hold the lock
                if why:
                    raise RuntimeError(f"tracefs settings not restored: {why}")
                self.run.absent(self._res)
        finally:
            if self._held is not None:
                self._held.close()
                self._held = None

    def stop_and_write(self, name: str) -> list[str]:
        """Stop tracing, drain what is left and write the per-CPU files; the blkparse input names."""
        _set(self.root / "tracing_on", "0")
        time.sleep(0.1)
        self._stop_reader()
        if self._error:
            raise RuntimeError(f"the blk tracer's events are incomplete: {self._error}")
        files = split_binary(b"".join(self._chunks))
        # blkparse looks for NAME.blktrace.0, .1, ... and stops at the first missing one: every CPU
        # gets a file, empty when no event was on it.
        for cpu in range(max([os.cpu_count() or 1, *(c + 1 for c in files)])):
            (self.out_dir / f"{name}.blktrace.{cpu}").write_bytes(bytes(files.get(cpu, b"")))
        return [name]

    def __exit__(self, *exc) -> None:
        self._finish()
