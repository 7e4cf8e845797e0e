"""Predictions from the timed I/O path, as results objects.

:func:`predict_stack` runs a workload (a :class:`~diskmodel.model.iopath.fileops.FileOps`, a workload
string of :func:`~diskmodel.model.iopath.workload_spec.parse_workload`, or a PostMark configuration)
on any stack the I/O path builds (partitions, LVM over several disks, md RAID, thin volumes, loop
files) and times it on the stack's drives (:mod:`diskmodel.model.iopath.timing`).
:func:`predict_block_job` does the same for a fio job on a block node (fio on the raw device).

Both return an :class:`IoPrediction`, with the fits' convention (:mod:`diskmodel.model.fit`):
``summary()``, ``to_frame()``, ``plot()``, ``_repr_html_`` and an ``assumptions`` block.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .._checks import FieldError
from ..iopath.fileops import CALL_S, FileOps, Kind, random_map_order
from ..iopath.stream import Flag, Op, Stream
from ..iopath.scheduler import describe_queue, queue_assumptions
from ..iopath.timing import FlatDrive, IoTiming, time_stack, time_streams, waited_instants, workload_bytes

__all__ = ["IoPrediction", "CopyPrediction", "predict_stack", "predict_block_job", "predict_copy", "block_job_stream",
           "ASSUMPTIONS"]

#: What every timed prediction assumes (the "assumptions" block; :mod:`.iopath.timing` for the detail).
ASSUMPTIONS = (
    ("I/O path", "model.iopath: page cache, file system, block layers as request streams per device"),
    ("queue", "each drive is given its requests by its queue's scheduler, the drive node's: mq-deadline, what "
              "Linux gives a disk (merged and sorted by sector, reads first, 64 requests held; model.iopath.scheduler), "
              "or none (arrival order); it serves them one at a time in that order (no command queueing); the "
              "drives of an array work in parallel"),
    ("waits", "the application waits for reads, flushes and sync/FUA writes at the instant it issues them; "
              "write-back runs beside it; writes issued with reads at one instant (parity updates) wait for "
              "those reads"),
    ("page cache", "model.iopath.pagecache.CacheParams as given (default: no memory limit, the kernel's "
                   "default dirty ratios and timers)"),
    ("LVM costs", "device-mapper's own time per request is not charged: only the requests dm sends to the "
                  "drives are timed"),
    ("layer costs", "a buffered loop device's worker is charged its request overhead and its copy into or out "
                    "of the image's page cache (the loop file's copy rates), the layers of one waited instant in "
                    "turn; a direct-I/O loop device's and dm/md's own time per request is not charged: only the "
                    "requests they send are timed"),
    ("thin metadata", "a thin pool's metadata commits are timed as 4 KiB writes after the pool's data area on "
                      "its data device (dm-thin's metadata space map's placement is not modelled)"),
    ("network", "an NBD request or an NFS operation pays its round trips, per-request costs and bytes at the "
                "link's payload rate; requests in flight at once do not share the link's bandwidth"),
    ("intervals", "none: no calibration's uncertainty was given (a preset, a DiskSim drive or a Disk alone); "
                  "the figures are point predictions"),
)


@dataclass(frozen=True, eq=False)
class IoPrediction:
    """A workload timed on a stack.

    Attributes
    ----------
    workload : str
        What ran (its definition).
    stack : str
        The stack's name.
    read_bytes, write_bytes : int
        The bytes the workload itself reads and writes (before the page cache).
    timing : IoTiming
        The timed requests (:class:`~diskmodel.model.iopath.timing.IoTiming`).
    assumptions : tuple of (str, str)
        What the prediction assumes, by topic.
    streams : dict
        ``{device: Stream}``: the requests each device of the stack received.
    """

    workload: str
    stack: str
    read_bytes: int
    write_bytes: int
    timing: IoTiming
    assumptions: tuple = ASSUMPTIONS
    streams: dict = field(default_factory=dict, repr=False)
    #: the figures of the re-timings with drawn calibration parameters (:mod:`diskmodel.model.predictions.intervals`)
    draws: tuple = field(default=(), repr=False)

    @property
    def elapsed_s(self) -> float:
        return self.timing.elapsed_s

    @property
    def read_throughput_bytes_per_s(self) -> float:
        return self.read_bytes / self.elapsed_s if self.elapsed_s > 0 else float("inf")

    @property
    def write_throughput_bytes_per_s(self) -> float:
        return self.write_bytes / self.elapsed_s if self.elapsed_s > 0 else float("inf")

    @property
    def throughput_bytes_per_s(self) -> float:
        """Bytes read and written over the run [bytes/s]."""
        total = self.read_bytes + self.write_bytes
        return total / self.elapsed_s if self.elapsed_s > 0 else float("inf")

    def figures(self) -> dict:
        """The figures an interval is given for: elapsed [s], read and write throughput [bytes/s]."""
        return {"elapsed_s": self.elapsed_s, "read_throughput_bytes_per_s": self.read_throughput_bytes_per_s,
                "write_throughput_bytes_per_s": self.write_throughput_bytes_per_s}

    def conf_int(self, alpha: float = 0.05):
        """A DataFrame (rows: :meth:`figures`; columns ``lower``, ``upper``, ``estimate``, ``draws_sd``) from
        the calibrations' uncertainty (:func:`diskmodel.model.predictions.intervals.conf_int`); ValueError when the
        prediction was made without calibrations to draw from."""
        from .intervals import conf_int

        if not self.draws:
            raise ValueError("conf_int: this prediction has no intervals (no calibration's uncertainty was given: "
                             "predict(stack, workload, calibrations={drive: CalibrationResult}))")
        return conf_int(self.figures(), list(self.draws), alpha)

    @property
    def intervals(self):
        """``conf_int(0.05)``, or None without calibrations to draw from (see ``assumptions``)."""
        return self.conf_int() if self.draws else None

    def to_frame(self):
        """One row per quantity: value, unit (SI: MB = 10^6 bytes)."""
        import pandas as pd

        rows = [("elapsed", self.elapsed_s, "s"), ("workload time (infinitely fast devices)", self.timing.app_s, "s"),
                ("time waiting for the devices", self.timing.stall_s, "s"),
                ("read throughput", self.read_throughput_bytes_per_s / 1e6, "MB/s"),
                ("write throughput", self.write_throughput_bytes_per_s / 1e6, "MB/s")]
        rows += [(f"wait per waited operation, {k}", v * 1e3, "ms") for k, v in self.timing.wait_percentiles().items()]
        return pd.DataFrame(rows, columns=["quantity", "value", "unit"]).set_index("quantity")

    def summary(self) -> str:
        """A text report: the figures, each device's load, then the assumptions."""
        lines = [f"{self.workload} on {self.stack}: elapsed {self.elapsed_s:.3f} s, "
                 f"read {self.read_throughput_bytes_per_s / 1e6:.2f} MB/s, "
                 f"write {self.write_throughput_bytes_per_s / 1e6:.2f} MB/s (MB = 10^6 bytes)"]
        uncached = [t.removeprefix("drive ") for t, x in self.assumptions if t.startswith("drive ") and "has no cache" in x]
        if uncached:
            lines[0] += f"; no drive cache on {', '.join(uncached)} (the model has none)"
        for name, row in self.to_frame().iterrows():
            lines.append(f"  {name:<45} {row['value']:>12.3f} {row['unit']}")
        if self.draws:
            ci = self.conf_int()
            lines.append(f"  95 % interval of elapsed (calibrations' uncertainty): {ci.loc['elapsed_s', 'lower']:.3f} "
                         f"to {ci.loc['elapsed_s', 'upper']:.3f} s")
        parts = [("devices:", self.timing)]
        if self.timing.workers is not None:
            parts.append(("loop workers (the copy into and out of each image's page cache):", self.timing.workers))
        for title, timing in parts:
            lines.append(title)
            for name, row in timing.device_frame().iterrows():
                lines.append(f"  {name:<12} {int(row['requests']):>8} requests, read {row['read_bytes'] / 1e6:.2f} MB, "
                             f"written {row['write_bytes'] / 1e6:.2f} MB, busy {row['busy_s']:.3f} s "
                             f"({100 * row['utilisation']:.0f} %)")
        lines.append("assumptions:")
        lines += [f"  {topic}: {text}" for topic, text in self.assumptions]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self):
        import html

        items = "".join(f"<li><b>{html.escape(t)}</b>: {html.escape(x)}</li>" for t, x in self.assumptions)
        return (f"<p><b>{html.escape(self.workload)}</b> on {html.escape(self.stack)}: elapsed "
                f"{self.elapsed_s:.3f} s</p>" + self.to_frame()._repr_html_()
                + self.timing.device_frame()._repr_html_() + f"<p>Assumptions:</p><ul>{items}</ul>")

    def plot(self, ax=None):
        """Each device's requests over time: completion against arrival (a matplotlib Axes)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        t = self.timing
        for k, name in enumerate(t.devices):
            m = t.device == k
            ax.plot(t.arrival_s[m], (t.completion_s - t.arrival_s)[m] * 1e3, ".", ms=2, label=name)
        ax.set_xlabel("arrival [s]")
        ax.set_ylabel("response time [ms]")
        ax.set_title(f"{self.workload} on {self.stack}")
        ax.legend()
        return ax


def drive_assumptions(models: dict) -> tuple:
    """Per drive: what its model is, which values are estimates rather than measured (the Disk's
    ``estimates``), and whether it has a cache; a drive without one leads the list."""
    from ..drive.disk import Disk

    first, rest = [], []
    for name, model in models.items():
        if isinstance(model, FlatDrive):
            rest.append((f"drive {name}", f"flat: {model.latency_s * 1e3:.3f} ms per request plus "
                                          f"{model.bytes_per_s / 1e6:.1f} MB/s, no cache"))
            continue
        if not isinstance(model, Disk):
            rest.append((f"drive {name}", type(model).__name__))
            continue
        if model.drive_cache is None:
            size = f" (its size, {model.cache_size_bytes} bytes, is known; its segments and policies are not)" \
                if model.cache_size_bytes else ""
            first.append((f"drive {name}", f"{model.name} has no cache in its simulation{size}: every request "
                                           "goes to the media, none is taken from elsewhere"))
        text = model.name + (f"; estimated, not measured: {', '.join(f for f, _ in model.estimates)}"
                             if model.estimates else "")

        rest.append((f"drive {name}", text))
    return tuple(first), tuple(rest)


def _as_ops(workload) -> tuple[FileOps, str]:
    from ..iopath import fileops
    from ..iopath.workload_spec import parse_workload
    from .workload import PostMarkConfig

    if isinstance(workload, FileOps):
        return workload, "file operations"
    if isinstance(workload, str):
        from ..iopath.workload_spec import describe_workload

        definition = describe_workload(workload)
        return parse_workload(workload), workload if definition == workload else f"{workload} [{definition}]"
    if workload is None:
        workload = PostMarkConfig()
    if isinstance(workload, PostMarkConfig):
        return fileops.postmark(workload), f"PostMark ({workload.number_of_files} files, {workload.transactions} transactions)"
    raise ValueError(f"workload: {type(workload).__name__} cannot run on the I/O path; give a PostMarkConfig, "
                     "a FileOps or a workload string such as 'postmark:test1' or 'fio:rw=randwrite,bs=4k,size=64M'")


def _check_postmark_fits(stack, workload) -> None:
    """Refuse a PostMark whose first files alone hold more than the volume, before its operations are made
    (a run of millions of files would take minutes and gigabytes to find out): ``number_of_files`` files of
    sizes uniform on [low, high] hold that many times their mean."""
    from ..iopath.workload_spec import postmark_config
    from .workload import PostMarkConfig

    config = workload
    if isinstance(workload, str) and workload.partition(":")[0].strip() == "postmark":
        config = postmark_config(workload.partition(":")[2])
    if not isinstance(config, PostMarkConfig) or stack.is_nfs:  # the export's file system is the server's model's
        return
    size = getattr(stack.volume, "size_bytes", None)
    if size is None:
        return
    mean = (config.min_file_size_bytes + config.max_file_size_bytes) / 2
    need = config.number_of_files * mean
    if need > size:
        raise FieldError("workload", f"PostMark's {config.number_of_files} files of {config.min_file_size_bytes}-"
                                     f"{config.max_file_size_bytes} bytes hold about {need:.0f} bytes at once, more than "
                                     f"the {int(size)} bytes of the volume of {stack.short_name}; give fewer or smaller "
                                     "files, or a larger volume", sep=": ")


def _check_fits(stack, ops: FileOps, label: str) -> None:
    """Refuse a workload whose files cannot fit the stack's volume (one line naming both sizes)."""
    from ..iopath.fileops import least_bytes_held

    if stack.is_nfs:  # the export's file system is checked by the server's model
        return
    size = getattr(stack.volume, "size_bytes", None)
    if size is None:
        return
    need = least_bytes_held(ops)
    if need > size:
        raise FieldError("workload", f"{label} holds at least {need} bytes in its files at once, more than the "
                                     f"{int(size)} bytes of the volume of {stack.short_name}; give a smaller "
                                     "workload or a larger volume", sep=": ")


def predict_stack(stack, workload=None, cache=None, drives: dict | None = None, calibrations: dict | None = None,
                  draws: int | None = None, seed: int = 0) -> IoPrediction:
    """``workload`` on ``stack`` through the I/O path, timed on the stack's drives (``drives``
    replaces some by name: a :class:`~diskmodel.model.iopath.timing.FlatDrive`, DriveParameters or a Disk).
    ``calibrations`` (``{drive name: CalibrationResult}``, the drives' Disks made from them) gives the
    prediction intervals: ``draws`` re-timings with parameters drawn from each calibration's
    covariance, seeded by ``seed`` (:mod:`diskmodel.model.predictions.intervals`)."""
    if calibrations:
        def timed(given):
            return predict_stack(stack, workload, cache, given)

        models = {d.name: (drives or {}).get(d.name) or d.model_disk() for d in stack.disks}
        return _with_draws(timed, drives or {}, models, calibrations, draws, seed)
    stack.check_disk_capacity()
    _check_postmark_fits(stack, workload)
    ops, label = _as_ops(workload)
    _check_fits(stack, ops, label)
    timing, streams = time_stack(stack, ops, cache, drives)
    counted = ops
    phase = ()
    if ops.timed_from:
        # fio's figures are its job's: the file laid out before it is run (its write-back waited for by its
        # fsync) but neither its time nor its bytes count
        timing = _second_pass(timing, float(ops.time_s[ops.timed_from]))
        counted = ops.take(np.arange(len(ops)) >= ops.timed_from)
        phase = (("counted", "the job alone, as fio reports it: laying its file out before it reads (written, "
                             "fsynced, dropped from the cache) runs first and is not counted"),)
    r, w = workload_bytes(counted)
    models = {n: (drives or {}).get(n) or stack.drive(n).model_disk() for n in timing.devices}
    first, rest = drive_assumptions(models)
    end = (("end", "the workload ends with syncfs(2) (sync -f), as a measured run ends, and the "
                   "elapsed time runs until the last device is idle: write-back is counted (fio's and bonnie++'s "
                   "own figures leave it out unless told to sync)"),) if ops.kind.size and ops.kind[-1] == Kind.SYNC \
        else ()
    return IoPrediction(label, stack.short_name, r, w, timing,
                        first + ASSUMPTIONS + phase + end + rest + queue_assumptions(stack.disks, timing.devices)
                        + mirror_reads(stack.file_system) + unused_fields(stack.file_system), streams)


def block_job_stream(job, size_bytes: int) -> Stream:
    """A fio job (:class:`~diskmodel.model.predictions.block_workloads.FioJob`) on a raw block device of
    ``size_bytes``: its requests in issue order, ``iodepth`` of them at one instant; O_DIRECT writes
    carry ``REQ_SYNC`` (the kernel marks direct writes sync); ``end_fsync`` adds a flush at the end.

    The offsets lie in the job's region, the first ``job.region`` bytes of the device (fio's ``--size``:
    fio(1), "size"; a job given a 1 GiB size on a 1 TB disk stays in its first GiB). A sequential job
    goes through the region from its start, again from the start if it moves more; a random job covers
    each block of the region once per pass in random order (fio's random map, on unless ``norandommap``:
    a block is not read twice before every block was read once), seeded alike."""
    bs, size, region = int(job.block_size_bytes), int(job.size_bytes), int(job.region)
    job.check_fits(size_bytes)
    n, blocks = size // bs, region // bs
    blk = np.arange(n, dtype=np.int64) % blocks
    if job.rw.startswith("rand"):
        blk = random_map_order(n, blocks, np.random.default_rng(1))
    is_write = job.rw.endswith("write")
    t = (np.arange(n) // int(job.iodepth)) * CALL_S
    op = np.full(n, int(Op.WRITE if is_write else Op.READ), np.int8)
    flags = np.full(n, int(Flag.SYNC) if is_write else 0, np.int16)
    off, sz = blk * bs, np.full(n, bs, np.int64)
    if is_write and job.end_fsync:
        t, op = np.append(t, t[-1] + CALL_S if n else 0.0), np.append(op, np.int8(Op.FLUSH))
        off, sz = np.append(off, 0), np.append(sz, 0)
        flags = np.append(flags, np.int16(Flag.PREFLUSH | Flag.SYNC))
    return Stream.from_arrays(time_s=t, op=op, offset_bytes=off, size_bytes=sz, flags=flags)


def _allocates(node) -> bool:
    """Does a layer of ``node``'s tree allocate on first write (a thin volume, a sparse loop image)?"""
    from ..stacks.nodes import walk

    return any(type(n).__name__ == "ThinVolume" or (type(n).__name__ == "LoopFile" and n.allocation == "sparse")
               for _, n, _ in walk(node, "device"))


def _with_draws(timed, drives: dict, models: dict, calibrations: dict, draws, seed: int) -> IoPrediction:
    """``timed(drives)``, and again with each calibrated drive's parameters drawn (``intervals``)."""
    from .intervals import DEFAULT_DRAWS, calibration_draws, drawn_disk

    n = DEFAULT_DRAWS if draws is None else draws
    unknown = [name for name in calibrations if name not in models]
    if unknown:
        raise ValueError(f"calibrations: drive {unknown[0]!r} is not one of the stack's ({', '.join(models)})")
    point = timed(drives)
    sets = {name: calibration_draws(result, n, seed + k) for k, (name, result) in enumerate(calibrations.items())}
    figures = []
    for i in range(n):
        given = dict(drives)
        for name, results in sets.items():
            # the seek model the point prediction's Disk has (calibrate.stacks.disk_of's rule)
            seek = "two_piece" if results[i].mechanical_seek else "flat"
            given[name] = drawn_disk(models[name], results[i], seek)
        figures.append(timed(given).figures())
    note = ("intervals", f"{n} re-timings with the calibrated drives' parameters ({', '.join(calibrations)}) drawn "
                         "from each calibration's estimates and covariance (rotation period, seek fit), seeded; "
                         "conf_int: the point prediction +- Student's t times the draws' standard deviation")
    assumptions = tuple(note if topic == "intervals" else (topic, text) for topic, text in point.assumptions)
    return dataclasses.replace(point, draws=tuple(figures), assumptions=assumptions)


def predict_block_job(node, job, disks: dict, cache=None, calibrations: dict | None = None,
                      draws: int | None = None, seed: int = 0, limits: dict | None = None,
                      schedulers: dict | None = None) -> IoPrediction:
    """``job`` (a FioJob) on the block node ``node`` (fio on the raw device), its requests through the
    block layers below it (:mod:`diskmodel.model.iopath.path`) and timed on ``disks`` (``{name: Disk,
    DriveParameters or FlatDrive}``). A write job that is not ``fresh`` on a node that allocates on
    first write (a thin volume, a sparse loop image) overwrites: the same writes run once before it,
    and only the second pass is reported. ``calibrations``, ``draws`` and ``seed``: the intervals,
    as :func:`predict_stack`'s. ``limits``: the disks' queue limits ``{name: max_sectors_kb}``
    (:func:`diskmodel.model.iopath.path.max_sectors_kb`; default BLK_DEF_MAX_SECTORS). ``schedulers``: the
    disks' schedulers ``{name: Scheduler}`` (:mod:`diskmodel.model.iopath.scheduler`; ``BlockEnv.schedulers``);
    default mq-deadline on every disk, as Linux gives a disk."""
    if calibrations:
        return _with_draws(lambda given: predict_block_job(node, job, given, cache, limits=limits,
                                                           schedulers=schedulers),
                           dict(disks), dict(disks), calibrations, draws, seed)
    from ..drive.drives import DEFAULT_MAX_SECTORS_KB
    from ..iopath.network import links_below
    from ..iopath.scheduler import queue_scheduler
    from ..iopath.pagecache import CacheParams
    from ..iopath.path import DeviceStreams, _below
    from ..iopath.stream import concat
    from ..iopath.timing import loop_workers

    stream = block_job_stream(job, int(node.size_bytes))
    t0 = 0.0
    if job.rw.endswith("write") and not job.fresh and _allocates(node) and len(stream):
        t0 = float(stream.time_s[-1]) + 1.0
        stream = concat([stream, stream.replace(time_s=stream.time_s + t0)])
    out = DeviceStreams()
    name = getattr(node, "name", "") or "device"
    _below(node, stream, name, "device", cache or CacheParams(), out, drives=limits)
    workers = loop_workers(out)
    leaf = {n: s for n, s in out.items() if n in disks or n in workers}
    app_end = float(stream.time_s.max()) if len(stream) else 0.0
    if schedulers is None:
        schedulers = {n: sc for n in disks if (sc := queue_scheduler(max_sectors_kb=(limits or {}).get(
            n, DEFAULT_MAX_SECTORS_KB))) is not None}
    timing = time_streams(leaf, {n: disks[n] for n in leaf if n in disks}, waited_instants(out[name]), app_end,
                          links_below(node), workers, schedulers=schedulers)
    if t0:
        timing = _second_pass(timing, t0)
    moved = int(job.size_bytes) // int(job.block_size_bytes) * int(job.block_size_bytes)
    is_write = job.rw.endswith("write")
    first, rest = drive_assumptions({n: disks[n] for n in timing.devices})
    queues = tuple((f"queue {n}", describe_queue(schedulers.get(n))) for n in timing.devices if n in disks)
    return IoPrediction(job.label, name, 0 if is_write else moved, moved if is_write else 0, timing,
                        first + ASSUMPTIONS + rest + queues + mirror_reads(node, "device") + unused_fields(node, "device"),
                        out)


def _second_pass(timing: IoTiming, t0: float) -> IoTiming:
    """The requests of the second pass (issued from ``t0`` on the workload's clock), timed from when
    the application started it."""
    keep = timing.issue_s >= t0
    start = float(timing.arrival_s[keep].min()) if keep.any() else timing.elapsed_s
    if timing.workers is not None:  # the loop workers' first request of the pass may come before the drives'
        ahead = timing.workers.issue_s >= t0
        start = min(start, float(timing.workers.arrival_s[ahead].min())) if ahead.any() else start

    def shifted(part: IoTiming) -> IoTiming:
        keep = part.issue_s >= t0
        later = part.op_wait_at_s >= t0
        return dataclasses.replace(
            part, device=part.device[keep], op=part.op[keep], size_bytes=part.size_bytes[keep],
            arrival_s=part.arrival_s[keep] - start, start_s=part.start_s[keep] - start,
            completion_s=part.completion_s[keep] - start, waited=part.waited[keep], issue_s=part.issue_s[keep] - t0,
            op_wait_s=part.op_wait_s[later], op_wait_at_s=part.op_wait_at_s[later] - t0, app_s=part.app_s - t0,
            stall_s=part.stall_s - (start - t0), elapsed_s=part.elapsed_s - start)

    out = shifted(timing)
    return out if timing.workers is None else dataclasses.replace(out, workers=shifted(timing.workers))


def flat_drive(latency_s: float, bytes_per_s: float, capacity_bytes: int) -> FlatDrive:
    """A :class:`~diskmodel.model.iopath.timing.FlatDrive` (flash: a latency plus a transfer rate)."""
    return FlatDrive(latency_s, bytes_per_s, capacity_bytes)


#: Fields of block nodes that the timed path does not use (host costs and settings measured or
#: provisioned elsewhere): a prediction names those given other than their defaults.
_UNUSED = {
    "LoopFile": ("extent_count", "allocation_metadata_bytes", "allocation_unit_bytes", "writeback_queue_depth",
                 "dirty_limit_bytes"),
    "ThinVolume": ("allocation_s", "lookup_s", "used_bytes"),
    "NbdDevice": ("server_cache_hit",),
    "RaidArray": ("read_policy", "read_member"),
    "Network": ("burst_bytes",),
}


def mirror_reads(root, where: str = "file_system") -> tuple:
    """An assumption for each md mirror of ``root``'s tree: how it chooses the member a read goes to."""
    from ..stacks.nodes import walk

    return tuple((f"mirror reads: {path}", "md's read_balance (Linux 6.1): a read that continues a member's last one "
                  "goes to it; else, when every member is idle (queue depth 1), to the first, so a mirror reads no "
                  "faster than one drive at queue depth 1; with requests queued, to the least busy")
                 for path, node, _ in walk(root, where)
                 if type(node).__name__ == "RaidArray" and node.kind == "raid1" and node.read_policy == "md")


def unused_fields(root, where: str = "file_system") -> tuple:
    """Assumptions naming each field of ``root``'s tree (at path ``where``) that the timed path does not
    use and that is set other than its default (one line per node)."""
    from ..stacks.nodes import walk

    out = []
    for path, node, _ in walk(root, where):
        kinds = [(path, node)] + [(f"{path}.network", node.network)] if hasattr(node, "network") else [(path, node)]
        for where, obj in kinds:
            names = _UNUSED.get(type(obj).__name__, ())
            defaults = {f.name: f.default for f in dataclasses.fields(obj)}
            given = [n for n in names if getattr(obj, n) != defaults.get(n)]
            if type(obj).__name__ == "RaidArray" and obj.read_policy == "md":
                given = [n for n in given if n != "read_policy"]
            if type(obj).__name__ == "RaidArray" and obj.tool == "btrfs" and obj.read_policy == "btrfs":
                given = []  # btrfs's own pid policy, and the mirror it chose, are what its path reads by
            if given:
                out.append((f"not used: {where}", ", ".join(given) + " (the timed path does not model them)"))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class CopyPrediction:
    """The loop-image study's file copy (:class:`~diskmodel.model.predictions.block_workloads.FileCopy`), timed
    on a stack.

    Attributes
    ----------
    copy : FileCopy
    stack : str
    rows : tuple of dict
        Per file size: size_bytes, write_s (the file written through the page cache in
        ``write_request_bytes`` calls and fsynced), read_s (read back cold in ``read_request_bytes``
        calls), write_bytes_per_s, read_bytes_per_s.
    timed : tuple of (IoPrediction, IoPrediction)
        The write and the read run of each size.
    assumptions : tuple of (str, str)
    """

    copy: object
    stack: str
    rows: tuple
    timed: tuple = field(repr=False, default=())
    assumptions: tuple = ()

    @property
    def write_bytes_per_s(self) -> float:
        """All sizes' bytes over all their write times [bytes/s]."""
        return sum(r["size_bytes"] for r in self.rows) / sum(r["write_s"] for r in self.rows)

    @property
    def read_bytes_per_s(self) -> float:
        return sum(r["size_bytes"] for r in self.rows) / sum(r["read_s"] for r in self.rows)

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(list(self.rows)).set_index("size_bytes")

    def summary(self) -> str:
        lines = [f"file copy on {self.stack}: write {self.write_bytes_per_s / 1e6:.2f} MB/s, "
                 f"read {self.read_bytes_per_s / 1e6:.2f} MB/s (MB = 10^6 bytes)"]
        lines += [f"  {r['size_bytes']:>12} bytes: write {r['write_s']:.3f} s, read {r['read_s']:.3f} s" for r in self.rows]
        lines.append("assumptions:")
        lines += [f"  {topic}: {text}" for topic, text in self.assumptions]
        return "\n".join(lines)

    def _repr_html_(self):
        return f"<p><b>file copy</b> on {self.stack}</p>" + self.to_frame()._repr_html_()


def _copy_ops(size: int, chunk: int, rate: float, write: bool) -> FileOps:
    """One file of ``size`` bytes written (created, written in ``chunk`` calls, fsynced) or read (it
    exists; read in ``chunk`` calls), the application copying at ``rate``."""
    from ..iopath.fileops import Kind

    offs = np.arange(0, size, chunk, dtype=np.int64)
    sizes = np.minimum(chunk, size - offs)
    kind = np.full(offs.size, int(Kind.WRITE if write else Kind.READ), np.int8)
    t = np.concatenate(([0.0], np.cumsum(sizes / rate)[:-1])) + CALL_S * np.arange(offs.size)
    if write:
        kind = np.concatenate(([int(Kind.CREATE)], kind, [int(Kind.FSYNC)])).astype(np.int8)
        offs, sizes = np.concatenate(([0], offs, [0])), np.concatenate(([0], sizes, [0]))
        t = np.concatenate(([0.0], t + CALL_S, [t[-1] + sizes[-2] / rate + 2 * CALL_S]))
    n = kind.size
    # the last call returns after its own call time, a read's after copying its data too (FileOps.end_s),
    # as the generators' clock advances (fileops._Builder)
    end = float(t[-1]) + CALL_S + (0.0 if write else float(sizes[-1]) / rate)
    return FileOps(time_s=t, kind=kind, file=np.zeros(n, np.int64), offset_bytes=offs, size_bytes=sizes,
                   chunk_bytes=sizes.copy(), direct=np.zeros(n, bool), dir_of_file=np.zeros(1, np.int64),
                   initial_bytes=np.array([0 if write else size], np.int64), end_s=end)


def predict_copy(stack, copy, drives: dict | None = None) -> CopyPrediction:
    """The loop-image study's copy on ``stack``: per file size, its write and its cold read, each timed on the I/O
    path (:func:`predict_stack`). One copy per size on the stack as made (a fresh file system): the
    repeats and ``keep_files`` change nothing here, and the assumptions say so."""
    from .block_workloads import FileCopy

    if not isinstance(copy, FileCopy):
        raise ValueError(f"copy must be a FileCopy (got {type(copy).__name__})")
    rows, timed = [], []
    rate = copy.copy_rate_bytes_per_s
    for size in copy.file_sizes_bytes:
        w = predict_stack(stack, _copy_ops(size, copy.write_request_bytes, rate, True), drives=drives)
        r = predict_stack(stack, _copy_ops(size, copy.read_request_bytes, rate, False), drives=drives)
        timed.append((w, r))
        rows.append({"size_bytes": size, "write_s": w.elapsed_s, "read_s": r.elapsed_s,
                     "write_bytes_per_s": size / w.elapsed_s, "read_bytes_per_s": size / r.elapsed_s})
    extra = (("copy", f"one copy of each size on the stack as made: repeats ({copy.repeats}) and keep_files "
                      "do not change a timed copy"),)
    return CopyPrediction(copy, stack.short_name, tuple(rows), tuple(timed), timed[0][0].assumptions + extra)
