"""Predict PostMark throughput on a storage stack.

:func:`predict` evaluates Djordjevic & Timcenko (2015) eqs. (1)-(12) for a
PostMark run on a :class:`diskmodel.model.stacks.stack.Stack`, one layer on the
next: the stack's volume placed on its disk, with the LVM mapping costs
(:class:`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk`), the file system on
that volume (T_FSA, eq. 1, :mod:`diskmodel.model.filesystems.filesystem`), the
workload on the file system; then T_LVM_MO (eqs. 10-12) and read and write
throughput the way PostMark reports it (bytes read and written divided by
the whole run's elapsed time).

The fitters of its free parameters are kept apart, in
:mod:`diskmodel.model.fit.postmark`.

The block workloads (:mod:`diskmodel.model.predictions.block_workloads`: fio jobs,
the loop-image study's file copy) are predicted on any stack, whatever block nodes it
holds (RAID, thin volumes, loop files, NBD, ...), through the I/O path and
the drives' simulations (:mod:`diskmodel.model.predictions.results`):
:func:`predict` returns a :class:`BlockPrediction` or a
:class:`~diskmodel.model.predictions.results.CopyPrediction` for them, and
:func:`predict_block` takes a bare block node and its disks.

A stack whose top is an NFS mount (:class:`diskmodel.model.stacks.network.NfsMount`)
is timed the same way: the client's operations crossing the link to the
server's file system and disks (:mod:`diskmodel.model.iopath.network`);
a block workload (a FioJob) has no block device to run on there and is
refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ._checks import finite_scalar, show
from .filesystems.filesystem import PageCache, file_system_access_time
from .stacks.block import BlockEnv
from .predictions.block_workloads import FileCopy, FioJob
from .stacks.stack import Stack
from .stacks.volumes import LinearVolume, Partition, StripedVolume
from .stacks.lvm_mapping import LvmMapping
from .iopath.fileops import FileOps
from .predictions.workload import PostMarkConfig, PostMarkCounts, as_counts
from .units import KIB, MIB


def format_postmark_rate(bytes_per_s: float) -> str:
    """A rate as PostMark 1.5 prints it: "2.99 megabytes per second".

    PostMark's ``scalef``: megabytes (2^20 bytes) above one megabyte, else
    kilobytes (2^10), two decimals.
    """
    value = finite_scalar("bytes_per_s", bytes_per_s, nonnegative=True)
    if value / MIB > 1:
        return f"{value / MIB:.2f} megabytes per second"
    return f"{value / KIB:.2f} kilobytes per second"


class _PostMarkRates:
    """What a PostMark prediction reports as PostMark does: its throughputs and elapsed time."""

    def postmark_units(self) -> dict:
        """Read and write throughput as PostMark prints them."""
        return {"read": format_postmark_rate(self.read_throughput_bytes_per_s),
                "write": format_postmark_rate(self.write_throughput_bytes_per_s)}

    def to_frame(self):
        """A pandas DataFrame: one row per quantity (value, unit; SI: MB = 10^6 bytes)."""
        import pandas as pd

        rows = [("read_throughput", self.read_throughput_bytes_per_s / 1e6, "MB/s"),
                ("write_throughput", self.write_throughput_bytes_per_s / 1e6, "MB/s"),
                ("elapsed", self.elapsed_s, "s")] + self._detail_rows()
        return pd.DataFrame(rows, columns=["quantity", "value", "unit"]).set_index("quantity")

    def rates_text(self) -> str:
        """Read, write and elapsed in SI units, with what PostMark itself would print (2^20-byte megabytes)."""
        units = self.postmark_units()
        return (f"read {self.read_throughput_bytes_per_s / 1e6:.2f} MB/s, write "
                f"{self.write_throughput_bytes_per_s / 1e6:.2f} MB/s, elapsed {self.elapsed_s:.2f} s (MB = 10^6 bytes; "
                f"PostMark itself prints read {units['read']}, write {units['write']}, its megabytes being 2^20 bytes)")


@dataclass(frozen=True)
class Prediction(_PostMarkRates):
    """Predicted PostMark results and their breakdown by equation term.

    Attributes
    ----------
    read_throughput_bytes_per_s, write_throughput_bytes_per_s : float
        Bytes read / written over the whole run's elapsed time, as PostMark
        reports them [bytes/s].
    elapsed_s : float
        T_LVM_AT = T_FSA + T_LVM_MO (eq. 10), or T_FSA natively [s]; with
        ``FileSystem.overlapped_writeback`` the busiest pipeline stage
        instead (``details["stages"]``).
    terms : dict
        T_DO, T_MO, T_FL, T_DFA, T_J (eq. 1), T_LVM_MO (eq. 10) [s] as busy
        times, and T_overlap (<= 0): the time hidden by the overlap of
        asynchronous write-back with the application and of the stages with
        each other (0 in the serial model).  They sum to elapsed_s.
    lvm_parts : dict
        T_LVM_MO split: mechanistic_s (the extent map's effect on seeks and
        zone rates, against a native partition at the first PV), md_mapping_s
        and fb_mapping_s (the empirical MD_mapping and FB_mapping costs) and
        request_mapping_s (the per-request cost, :class:`LvmMapping`) [s].
    dst_parts : dict
        seek_s, rotation_s, transfer_s, overhead_s (T_DST's other terms) and
        cache_s (eq. 2 hits and copies) over all terms [s].
    term_parts : dict of dict
        The same per term of eq. (1).
    io_counts, details : dict
        From :class:`diskmodel.model.filesystems.filesystem.FsaResult`.
    counts : PostMarkCounts
    """

    read_throughput_bytes_per_s: float
    write_throughput_bytes_per_s: float
    elapsed_s: float
    terms: dict
    lvm_parts: dict
    dst_parts: dict
    term_parts: dict
    io_counts: dict
    details: dict
    counts: PostMarkCounts = field(repr=False)

    def _detail_rows(self) -> list:
        return ([(name, value, "s") for name, value in self.terms.items()]
                + [(f"T_LVM_MO.{name}", value, "s") for name, value in self.lvm_parts.items()]
                + [(f"T_DST.{name}", value, "s") for name, value in self.dst_parts.items()])

    def _repr_html_(self):
        head = f"<p><b>PostMark prediction</b> (the paper's equations): {self.rates_text()}</p>"
        with _plain_floats():
            return head + self.to_frame()._repr_html_()

    def summary(self) -> str:
        """A text report: the rates, then each term of eqs. (1) and (10) and its parts [s]."""
        lines = [f"PostMark prediction (the paper's equations, eqs. 1-12): {self.rates_text()}"]
        lines += [f"  {name:<28} {value:12.3f} {unit}" for name, (value, unit) in self.to_frame().iterrows()]
        return "\n".join(lines)

    def conf_int(self, alpha: float = 0.05):
        """Refused: the paper's equations give point predictions. A workload string on the stack, predicted
        with ``calibrations=``, is timed on the I/O path with intervals from the calibrations' uncertainty."""
        raise ValueError("conf_int: the paper's equations give a point prediction; predict(stack, 'postmark:test1', "
                         "calibrations={drive: CalibrationResult}) times it on the I/O path with intervals")

    def plot(self, ax=None):
        """The terms of eq. (1) and T_LVM_MO (eq. 10) as bars [s] (a matplotlib Axes)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        names = list(self.terms)
        ax.bar(names, [self.terms[n] for n in names])
        ax.set_ylabel("time [s]")
        ax.set_title(f"PostMark, the paper's equations: elapsed {self.elapsed_s:.1f} s")
        return ax


class _plain_floats:
    """pandas' display of floats as plain decimals (no scientific notation) inside the block."""

    def __enter__(self):
        import pandas as pd

        self._ctx = pd.option_context("display.float_format", lambda v: f"{v:,.6g}" if abs(v) >= 1e-3 or v == 0
                                      else f"{v:.6f}")
        self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


def _named(workload):
    """The workloads the command line names, by name: PostMark's test1-3 (a PostMarkConfig) and the eight fio
    jobs (seqread_4k ... randwrite_1m: a FioJob of 64 MiB at queue depth 1), as ``diskmodel predict --workload``."""
    if not isinstance(workload, str) or ":" in workload:
        return workload
    from .predictions.block_workloads import fio_jobs
    from .predictions.workload import postmark_preset

    from .iopath.fileops import WORKLOADS
    from .iopath.workload_spec import NAMED

    if workload in ("test1", "test2", "test3"):
        return postmark_preset(workload)
    jobs = fio_jobs()
    if workload in jobs:
        return jobs[workload]
    if workload not in WORKLOADS + tuple(NAMED):
        raise ValueError(f"workload {workload!r}: not one of test1, test2, test3, {', '.join(jobs)}, nor a workload "
                         f"string NAME:KEY=VALUE,... with NAME one of {', '.join(WORKLOADS + tuple(NAMED))}")
    return workload


def _one_disk_volume(stack: Stack) -> bool:
    """Is the volume a partition or an LVM volume on one disk (where eqs. 1-12 apply)?"""
    if not isinstance(stack.volume, (Partition, LinearVolume, StripedVolume)):
        return False
    if not getattr(stack.volume, "pvs_are_partitions", True):
        return False
    return len({p.disk for _, p in stack.partitions()}) == 1


def predict(stack: Stack, workload=None, cache: PageCache | None = None,
            lvm_mapping: LvmMapping | None = None, *, calibrations: dict | None = None) -> Prediction:
    """PostMark read/write throughput on *stack* and the eq. (1)/(10) breakdown.

    Parameters
    ----------
    stack : Stack
        The disk, the volume and the file system (its model parameters,
        ``stack.file_system.parameters``, any kind); the volume must lie
        on one disk.  :func:`diskmodel.model.stacks.stack.paper_stack` makes the
        paper's three, :func:`diskmodel.model.stacks.stack.stack_on` one from a
        Disk, a volume and a FileSystem.  A stack whose top is an NFS mount
        is timed on the I/O path (PostMark or a FileCopy; no *cache* or
        *lvm_mapping*).
    workload : PostMarkConfig or PostMarkCounts
        Default ``PostMarkConfig()`` (PostMark's defaults); or a FioJob
        (:func:`predict_block`: timed on the drives) or a FileCopy
        (:func:`~diskmodel.model.predictions.results.predict_copy`). A workload string (``"postmark:test1"``,
        ``"fio:rw=randwrite,bs=4k,size=64M"``: :func:`diskmodel.model.iopath.parse_workload`)
        or a FileOps, and any workload on a stack other than a partition or
        an LVM volume on one disk (RAID, loop files, thin volumes, LVM over
        several disks), is timed on the I/O path and the drives' simulations
        (:func:`diskmodel.model.predictions.results.predict_stack`) and returns an
        :class:`~diskmodel.model.predictions.results.IoPrediction`.
    cache : PageCache
        Default ``PageCache()``.
    lvm_mapping : LvmMapping
        Empirical MD_mapping/FB_mapping costs; default zero (mechanistic part only).
        No cost on a native partition.
    calibrations : dict
        ``{drive name: CalibrationResult}`` of calibrated drives: a timed prediction then has
        intervals (:mod:`diskmodel.model.predictions.intervals`; ``conf_int()``). The paper's equations (PostMark
        on a partition or an LVM volume on one disk) take none.
    """
    if not isinstance(stack, Stack):
        raise ValueError(f"stack must be a Stack (got {show(stack)}; diskmodel.model.stacks.stack.stack_on makes one "
                         "from a disk, a volume and a FileSystem)")
    workload = _named(workload)
    stack.check_disk_capacity()
    if stack.is_nfs and isinstance(workload, FioJob):
        raise ValueError(f"workload {workload.label}: file_system (nfs, {stack.file_system.server}) is a file system "
                         "over the network, not a block device; give PostMark, a FileCopy or a workload string")
    if isinstance(workload, FioJob) and getattr(stack.volume, "tool", None) == "btrfs":
        # a btrfs array is no block device: fio runs on a file in its file system (diskmodel bench does too)
        workload.check_fits(int(stack.volume.size_bytes), "btrfs array")
        workload = workload.file_spec()
    elif isinstance(workload, FioJob):
        return predict_block(stack.volume, workload, stack.block_env(), calibrations=calibrations)
    if isinstance(workload, FileCopy):
        from .predictions.results import predict_copy

        if calibrations:
            raise ValueError("calibrations: the file copy's prediction has no intervals yet; leave calibrations out")
        return predict_copy(stack, workload)
    if isinstance(workload, (str, FileOps)) or stack.is_nfs or not _one_disk_volume(stack):
        # Any stack the I/O path builds, any workload it names: timed request by request.
        from .predictions.results import predict_stack

        if lvm_mapping is not None and lvm_mapping != LvmMapping():
            raise ValueError("lvm_mapping: the timed I/O path charges the requests device-mapper sends, not "
                             "fitted mapping costs; leave lvm_mapping out")
        if cache is not None and cache != PageCache():
            raise ValueError("cache: the timed I/O path takes the page cache as diskmodel.model.iopath.CacheParams "
                             "(diskmodel.model.predictions.results.predict_stack); leave cache out here")
        if isinstance(workload, PostMarkCounts):
            raise ValueError(f"workload: this stack ({stack.short_name}) is timed on the I/O path, which runs "
                             "PostMark's operations, not expected counts; give a PostMarkConfig")
        return predict_stack(stack, workload, calibrations=calibrations)
    if calibrations:
        raise ValueError("calibrations: the paper's equations (PostMark on one disk) give no intervals; give the "
                         "workload as a string (e.g. 'postmark:test1') to time it on the I/O path with intervals")
    filesystem = stack.file_system_parameters()
    workload = PostMarkConfig() if workload is None else workload
    cache = PageCache() if cache is None else cache
    lvm_mapping = LvmMapping() if lvm_mapping is None else lvm_mapping
    if not isinstance(lvm_mapping, LvmMapping):
        raise ValueError(f"lvm_mapping must be an LvmMapping (got {type(lvm_mapping).__name__})")
    counts = as_counts(workload)
    volume = stack.volume_on_disk(lvm_mapping)
    result = file_system_access_time(volume, filesystem, counts, cache)
    mapping = result.mapping_parts
    md, fb, rq = mapping["md_mapping_s"], mapping["fb_mapping_s"], mapping["request_mapping_s"]
    mechanistic = 0.0
    fsa_terms = dict(result.terms)
    if volume.volume.is_lvm:
        twin = file_system_access_time(volume.native_twin(), filesystem, counts, cache)
        mechanistic = result.total_s - twin.total_s
        # T_FSA proper is the native twin's; the extent map's effect is reported in T_LVM_MO.
        fsa_terms = dict(twin.terms)
    lvm_total = mechanistic + md + fb + rq
    busy = sum(fsa_terms.values()) + lvm_total
    if filesystem.overlapped_writeback:
        # pipeline: the fixed point max(application, media, link + MD/FB mapping costs)
        elapsed = float(result.details["elapsed_s"])
    else:
        elapsed = busy
    terms = {**fsa_terms, "T_LVM_MO": lvm_total, "T_overlap": elapsed - busy}
    details = dict(result.details)
    details["stages"] = result.stage_times(md + fb + rq)
    total = counts.total
    return Prediction(
        read_throughput_bytes_per_s=total.bytes_read / elapsed,
        write_throughput_bytes_per_s=total.bytes_written / elapsed,
        elapsed_s=elapsed, terms=terms,
        lvm_parts={"mechanistic_s": mechanistic, "md_mapping_s": md, "fb_mapping_s": fb,
                   "request_mapping_s": rq},
        dst_parts=result.dst_breakdown(), term_parts=result.parts, io_counts=result.io_counts,
        details=details, counts=counts)


# ------------------------------------------------------------------ block workloads

@dataclass(frozen=True)
class BlockPrediction:
    """A fio job predicted on a block node: its requests through the block layers below the node and
    timed on the drives (:func:`diskmodel.model.predictions.results.predict_block_job`).

    Attributes
    ----------
    job : FioJob
    timed : IoPrediction
        The timed run (per device requests, waits, the assumptions).
    throughput_bytes_per_s, iops, latency_s, elapsed_s : float
        The job's bandwidth [bytes/s], requests per second, mean wait per issue of the queue's
        requests (one request at iodepth 1) [s] and run time [s].
    """

    job: FioJob
    timed: object
    throughput_bytes_per_s: float
    iops: float
    latency_s: float
    elapsed_s: float

    @property
    def parts(self) -> dict:
        """Each drive's busy time [s], as ``busy_s.<drive>``."""
        frame = self.timed.timing.device_frame()
        return {f"busy_s.{name}": float(v) for name, v in frame["busy_s"].items()}

    @property
    def member_requests(self) -> dict:
        """Requests each drive served, per request of the job."""
        frame = self.timed.timing.device_frame()
        count = max(1, self.job.size_bytes // self.job.block_size_bytes)
        return {name: float(v) / count for name, v in frame["requests"].items()}

    def summary(self) -> str:
        return self.timed.summary()

    def to_frame(self):
        import pandas as pd

        rows = [("throughput", self.throughput_bytes_per_s, "bytes/s"), ("iops", self.iops, "1/s"),
                ("latency", self.latency_s, "s"), ("elapsed", self.elapsed_s, "s")]
        rows += [(name, value, "s") for name, value in self.parts.items()]
        return pd.DataFrame(rows, columns=["quantity", "value", "unit"]).set_index("quantity")

    def plot(self, ax=None):
        return self.timed.plot(ax)

    def conf_int(self, alpha: float = 0.05):
        """The timed run's intervals (:meth:`~diskmodel.model.predictions.results.IoPrediction.conf_int`)."""
        return self.timed.conf_int(alpha)

    def _repr_html_(self):
        body = self.timed._repr_html_()
        return (f"<p><b>{self.job.label}</b>: {self.throughput_bytes_per_s / 1e6:.2f} MB/s, "
                f"{self.iops:.0f} IOPS</p>" + body)


def predict_block(node, job: FioJob, env: BlockEnv, *, calibrations: dict | None = None) -> BlockPrediction:
    """*job* (a FioJob) on *node* (any block node), its disks from *env* (``Stack.block_env()``):
    the job's requests through the I/O path's block layers, timed on each drive's simulation."""
    from .predictions.results import predict_block_job

    if not isinstance(job, FioJob):
        raise ValueError(f"job must be a FioJob (got {show(job)})")
    timed = predict_block_job(node, job, env.disks, calibrations=calibrations, limits=env.max_sectors_kb,
                              schedulers=env.schedulers)
    t = timed.timing
    count = job.size_bytes // job.block_size_bytes
    elapsed = t.elapsed_s
    # the waits for the job's requests, not for its closing fsync
    waits = t.op_wait_s[:-1] if job.rw.endswith("write") and job.end_fsync and t.op_wait_s.size > 1 else t.op_wait_s
    latency = float(waits.mean()) if waits.size else float((t.completion_s - t.arrival_s).mean())
    return BlockPrediction(job, timed, count * job.block_size_bytes / elapsed, count / elapsed, latency, elapsed)
