"""``diskmodel predict --fio-job FILE``: a fio job file's job predicted on the stack, printed beside its definition.

The file is read here (bounded, :mod:`diskmodel.data.input_files`); its
syntax, a documented subset of fio's, is parsed by the model
(:mod:`diskmodel.model.predictions.fio_job`), which says what each key means and which
are refused.
"""
from __future__ import annotations

import dataclasses
import json

# A fio job file is a few lines; anything larger is not one [bytes].
MAX_FIO_JOB_FILE_BYTES = 1 << 20


def read_job(path: str):
    """The job of the fio job file *path* (a UsageError naming --fio-job, the file and the key)."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.data.input_files import read_text_bounded
    from diskmodel.model.predictions.fio_job import parse_fio_job

    try:
        text = read_text_bounded(path, "fio job file", MAX_FIO_JOB_FILE_BYTES)
    except UnicodeDecodeError:
        raise UsageError(f"--fio-job {path}: not a text file (a fio job file is INI text)") from None
    except ValueError as exc:
        raise UsageError(f"--fio-job {exc}") from None
    except OSError as exc:  # missing, a directory, unreadable: worded as every command's errors are
        from diskmodel.calibrate.cli import describe

        raise UsageError(f"--fio-job {describe(exc)[0]}") from None
    try:
        return parse_fio_job(text)
    except ValueError as exc:
        raise UsageError(f"--fio-job {path}: {exc}") from None


def run(args, stack, notes: list[str]) -> int:
    """Predict the job of ``args.fio_job`` on *stack*; print its definition, the figures and each part's breakdown."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.calibrate.cli.predict_text import breakdown, megabytes_per_s, seconds
    from diskmodel.model.predictions.fio_job import check_fits, combine
    from diskmodel.calibrate.cli import predict_intervals
    from diskmodel.model.predict import predict

    job = read_job(args.fio_job)
    where = f"--stack {args.stack}: " if args.stack else ""
    volume = stack.file_system.export if stack.is_nfs else stack.volume
    if stack.is_nfs:
        raise UsageError(f"--fio-job {args.fio_job}: {where}its top is an NFS mount, where the model has no block "
                         "device to run a fio job on; give a stack of block layers")
    try:
        check_fits(job, volume.size_bytes, f"the stack's device ({stack.short_name})")
        calibrations = predict_intervals.calibrations(args, stack) or None
        parts = [(share, predict(stack, part, calibrations=calibrations)) for share, part in job.parts()]
    except ValueError as exc:
        raise UsageError(f"--fio-job {args.fio_job}: {where}{exc}") from exc
    figures = combine(job, parts)
    notes = notes + [f"assumption: the job runs on {stack.short_name}'s device as O_DIRECT requests; the file "
                     "system's own reads and writes are not modelled"]
    if job.mixed:
        notes.append(f"assumption: rw={job.rw} is its reads and its writes ({job.rwmixread}% reads) each at the "
                     "job's queue depth, their times added")
    if job.numjobs > 1:
        notes.append(f"assumption: numjobs={job.numjobs} jobs of iodepth={job.iodepth} are "
                     f"{job.numjobs * job.iodepth} random requests in flight on the device")
    if figures["cut_by_runtime"]:
        notes.append(f"runtime={job.runtime_s:g} s is shorter than the job: it is cut there, having moved "
                     f"{figures['bytes'] / 1e6:.1f} MB of {job.total_bytes / 1e6:.1f} MB")
    if args.json:
        print(json.dumps({"stack": stack.short_name, "workload": "fio-job", "job": job.definition(),
                          "fio_job": dataclasses.asdict(job), **figures,
                          "parts": {part.job.rw: {"share_of_requests": share, "latency_s": part.latency_s,
                                                  "elapsed_s": part.elapsed_s, "parts_s": part.parts,
                                                  "intervals_95": predict_intervals.interval_figures(part.timed)}
                                    for share, part in parts},
                          "assumptions": notes}))
        return 0
    for note in notes:
        print(note)
    print(f"job: {job.definition()}")
    print(stack.describe())
    print(f"result: {megabytes_per_s(figures['throughput_bytes_per_s'])}, {figures['iops']:.1f} requests/s (IOPS), "
          f"mean latency {seconds(figures['latency_s'])}, elapsed {seconds(figures['elapsed_s'])} "
          f"(MB = 10^6 bytes)")
    for share, part in parts:
        over_run = figures["throughput_bytes_per_s_by_direction"][part.job.rw]
        print(f"{part.job.rw} ({share * 100:.0f}% of the requests): {megabytes_per_s(over_run)} over the run, as fio "
              "reports a direction (its bytes over the job's elapsed time); below, this part timed alone"
              + (", whole: the runtime cut scales the figures above, not these" if figures["cut_by_runtime"] else "")
              + ":")
        print(breakdown(part.to_frame()))
        predict_intervals.print_interval(part.timed)
    return 0
