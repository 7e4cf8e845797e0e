"""The loop-image study's file copy: write files of 1, 5, 10, 25 and 50 MB into a file system, then read them back.

The loop-image study copied files of these sizes into a native ext3 and into ext3/ext2
file systems on loop devices over a sparse and a zero-filled image, then read
the copies, and averaged each latency over ten iterations.  Here one
iteration of one size is:

1. **write**: the file's bytes in 1 MiB ``write`` calls from ``/dev/zero``
   (no layer here compresses or skips zeros: ext2/3/4, btrfs without
   ``compress``, loop images and dm-thin all write them), then ``fsync``
   (``dd conv=fsync``); the time includes the ``fsync``,
   so the write is counted when it has reached the device below, through
   every layer's page cache;
2. ``sync`` and drop the page cache, dentries and inodes
   (``/proc/sys/vm/drop_caches``), so the read comes from the device and
   not from memory (every layer's cache: a loop image's pages too);
3. **read**: the whole file in 1 MiB ``read`` calls;
4. the file is removed, and ``sync``.

The workload is the model's :class:`diskmodel.model.predictions.block_workloads.FileCopy`
(its sizes and repeats).  In the throwaway VM, whose guest has no Python,
the steps are shell (:func:`copy_shell`: ``dd`` with ``conv=fsync``, every
value a word rendered by :func:`~diskmodel.calibrate.bench.steps.sh_word`),
the clock :data:`GUEST_CLOCK` (the kernel's monotonic clock from ``/proc/timer_list``, to the
nanosecond: busybox's ``date`` has no ``%N`` and ``/proc/uptime`` counts hundredths); on the host they
are ``dd`` argument vectors run with no shell (:func:`copy_on_host`, inside a
cgroup when a member is throttled), the clock Python's (that of ``date
+%s.%N``).  Both print the same lines; :func:`parse_copy_output` gives the
mean over the repeats of each size's write and read time, and the rates
(size / mean time).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from diskmodel.calibrate.bench.steps import sh_word
from diskmodel.model.predictions.block_workloads import FileCopy

__all__ = ["GUEST_CLOCK", "HOST_CLOCK", "CopyResult", "copy_on_host", "copy_shell", "parse_copy_output",
           "parse_copy_spread", "timer_list_clock"]

_CHUNK_BYTES = 1 << 20
_MARK = "DISKMODEL_COPY"


@dataclass(frozen=True)
class CopyResult:
    """Mean write and read time of each file size [s], over *repeats*; rates are size over mean time."""

    sizes_bytes: tuple[int, ...]
    write_s: tuple[float, ...]
    read_s: tuple[float, ...]
    repeats: int

    @property
    def write_bytes_per_s(self) -> float:
        """All sizes' bytes over all sizes' mean write times [bytes/s]."""
        return sum(self.sizes_bytes) / sum(self.write_s)

    @property
    def read_bytes_per_s(self) -> float:
        return sum(self.sizes_bytes) / sum(self.read_s)

    def as_dict(self) -> dict:
        return {"sizes_bytes": list(self.sizes_bytes), "write_s": list(self.write_s), "read_s": list(self.read_s),
                "repeats": self.repeats, "write_bytes_per_s": self.write_bytes_per_s,
                "read_bytes_per_s": self.read_bytes_per_s}


def _check(workload) -> tuple[tuple[int, ...], int]:
    if not isinstance(workload, FileCopy):
        raise ValueError(f"workload must be a FileCopy (got {type(workload).__name__})")
    sizes = workload.file_sizes_bytes
    if any(s % _CHUNK_BYTES for s in sizes):
        raise ValueError(f"file_sizes_bytes must be multiples of {_CHUNK_BYTES} to be copied in 1 MiB calls "
                         f"(got {sizes!r})")
    return sizes, workload.repeats


HOST_CLOCK = "date +%s.%N"


def timer_list_clock(path: str = "/proc/timer_list") -> str:
    """Shell (dash, builtins only) printing the kernel's monotonic clock in seconds with nine decimals.

    ``/proc/timer_list`` opens with ``Timer List Version``, ``HRTIMER_MAX_CLOCK_BASES`` and
    ``now at N nsecs``, N being ``ktime_get()`` taken when the file is opened (kernel/time/timer_list.c,
    ``timer_list_start`` and ``timer_list_header``); only those three lines are read, so only the
    header is generated (``seq_read_iter`` stops filling at the size asked). The guest's busybox
    ``date`` has no ``%N`` and ``/proc/uptime`` counts hundredths of a second (``uptime_proc_show``);
    ``read`` and ``printf`` are dash builtins, so a reading costs no program start. *path* is for tests."""
    # the variable's name is its own: a reading outside $(...) must not overwrite a script's (copy_shell's n)
    return ("{ read -r _; read -r _; read -r _ _ guest_clock_ns _; printf %d.%09d "
            "$((guest_clock_ns / 1000000000)) $((guest_clock_ns % 1000000000)); } < " + sh_word(path))


#: The guest's clock: a shell command printing seconds (:func:`timer_list_clock`), the one every
#: script timed in the VM uses (``t=$(GUEST_CLOCK)``).
GUEST_CLOCK = timer_list_clock()


def copy_shell(directory_expr: str, workload: FileCopy, *, tag: str = "copy", clock: str = HOST_CLOCK) -> str:
    """The copy as shell (dash; GNU or busybox dd): one line per size and repeat, its four clock readings.

    *directory_expr* is one ``sh`` word (:func:`~diskmodel.calibrate.bench.steps.sh_word`); the
    workload's numbers are rendered by it too."""
    sizes, repeats = _check(workload)
    mib = " ".join(sh_word(str(s // _CHUNK_BYTES)) for s in sizes)
    return f"""r=1
while [ $r -le {sh_word(str(repeats))} ]; do
  for n in {mib}; do
    sync; echo 3 > /proc/sys/vm/drop_caches
    t0=$({clock})
    dd if=/dev/zero of={directory_expr}/diskmodel-copy.dat bs=1048576 count=$n conv=fsync 2>/dev/null || exit 1
    t1=$({clock})
    sync; echo 3 > /proc/sys/vm/drop_caches
    t2=$({clock})
    dd if={directory_expr}/diskmodel-copy.dat of=/dev/null bs=1048576 2>/dev/null || exit 1
    t3=$({clock})
    rm -f {directory_expr}/diskmodel-copy.dat; sync
    echo "{_MARK} {tag} $n $t0 $t1 $t2 $t3"
  done
  r=$((r + 1))
done
"""


def copy_on_host(directory: str, workload: FileCopy, *, run, drop_caches, clock=None, tag: str = "copy") -> str:
    """The copy of :func:`copy_shell` on this machine, with no shell: ``dd`` argument vectors run by
    *run* (argv -> CompletedProcess; e.g. inside a throttled cgroup), the caches dropped by
    *drop_caches* and the clock read in Python (*clock*, default ``time.time``, the clock of ``date +%s.%N``).
    Returns the same lines :func:`parse_copy_output` reads; RuntimeError when a ``dd`` fails."""
    import os
    import time

    clock = clock or time.time
    sizes, repeats = _check(workload)
    path = os.path.join(directory, "diskmodel-copy.dat")
    lines = []
    for _ in range(repeats):
        for n in (s // _CHUNK_BYTES for s in sizes):
            steps = (["dd", "if=/dev/zero", f"of={path}", "bs=1048576", f"count={n}", "conv=fsync"],
                     ["dd", f"if={path}", "of=/dev/null", "bs=1048576"])
            times = []
            for argv in steps:
                drop_caches()
                times.append(clock())
                proc = run(argv)
                times.append(clock())
                if proc.returncode != 0:
                    raise RuntimeError(f"the copy's {argv[0]} {argv[2]} failed with status {proc.returncode}: "
                                       f"{(proc.stderr or '').strip()[-500:]}")
            os.unlink(path)
            os.sync()
            lines.append(f"{_MARK} {tag} {n} " + " ".join(f"{t:.9f}" for t in times))
    return "\n".join(lines) + "\n"


def parse_copy_output(text: str, tag: str = "copy", average=statistics.fmean) -> CopyResult:
    """The :class:`CopyResult` of what :func:`copy_shell` printed under *tag*: per size, the
    *average* (the mean by default; e.g. ``statistics.median``) of its repeats' times."""
    writes: dict[int, list[float]] = {}
    reads: dict[int, list[float]] = {}
    for line in text.replace("\r", "").splitlines():
        parts = line.split()
        if len(parts) == 7 and parts[0] == _MARK and parts[1] == tag:
            size = int(parts[2]) * _CHUNK_BYTES
            t0, t1, t2, t3 = map(float, parts[3:])
            writes.setdefault(size, []).append(t1 - t0)
            reads.setdefault(size, []).append(t3 - t2)
    if not writes:
        raise ValueError(f"the output holds no copy line tagged {tag!r}")
    sizes = tuple(sorted(writes))
    repeats = min(len(v) for v in writes.values())
    return CopyResult(sizes, tuple(average(writes[s]) for s in sizes),
                      tuple(average(reads[s]) for s in sizes), repeats)


def parse_copy_spread(text: str, tag: str = "copy") -> dict:
    """The run-to-run spread of what :func:`copy_shell` printed under *tag*: per direction ("write",
    "read"), the largest over the sizes of the repeats' standard deviation over their mean (0 with
    one repeat)."""
    times: dict[tuple[str, int], list[float]] = {}
    for line in text.replace("\r", "").splitlines():
        parts = line.split()
        if len(parts) == 7 and parts[0] == _MARK and parts[1] == tag:
            t0, t1, t2, t3 = map(float, parts[3:])
            times.setdefault(("write", int(parts[2])), []).append(t1 - t0)
            times.setdefault(("read", int(parts[2])), []).append(t3 - t2)
    out = {"write": 0.0, "read": 0.0}
    for (way, _), values in times.items():
        if len(values) > 1 and statistics.fmean(values) > 0:
            out[way] = max(out[way], statistics.pstdev(values) / statistics.fmean(values))
    return out
