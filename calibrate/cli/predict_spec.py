"""``diskmodel predict --workload NAME:KEY=VALUE,...``: any workload the I/O path names, on any stack.

The named workloads are :func:`diskmodel.model.iopath.workload_spec.parse_workload`'s: PostMark with any
parameters (``postmark:files=500,transactions=2000``), an fio job (``fio:rw=randwrite,bs=4k,size=64M``),
Bonnie++'s phases (``bonnie:size=64M``), a file copy (``copy:size=64M``), a tar of a tree of small files
(``tar:files=1000,file_bytes=16k``), an image made zero-filled or sparse (``image:size=64M,kind=sparse``),
one step of the loop-image study's copy (``dd:size=4M,step=write``) and file metadata
(``metadata:op=create,files=1000``). Each is timed on the I/O path and the stack's drives
(:func:`diskmodel.model.predictions.results.predict_stack`) and printed with its definition beside its
result; a stack with calibrated drives gets the calibrations' intervals.

The flags that set what such a workload does not take (the paper's PostMark counts, the page cache of
eq. 2, the LVM mapping costs of eq. 12) are refused naming the flag, never ignored.
"""
from __future__ import annotations

import json
import re

__all__ = ["PRESETS", "is_spec", "check", "run", "timed_json"]

#: The --workload names that are not a spec: the paper's PostMark tests and the block workloads.
PRESETS = ("test1", "test2", "test3", "seqread_4k", "seqread_1m", "seqwrite_4k", "seqwrite_1m", "randread_4k",
           "randread_1m", "randwrite_4k", "randwrite_1m", "copy")
#: Flags a named workload does not take: the PostMark counts it names itself, and the paper's equations' inputs.
_NOT_TAKEN = ("--transactions", "--files", "--page-cache-bytes", "--md-mapping-s", "--fb-mapping-s", "--costs")


def _names() -> tuple[str, ...]:
    from diskmodel.model.iopath import fileops
    from diskmodel.model.iopath.workload_spec import NAMED

    return tuple(fileops.WORKLOADS) + tuple(NAMED)


def is_spec(text: str | None) -> bool:
    """Is ``--workload`` *text* a named workload (``NAME`` or ``NAME:KEY=VALUE,...``), not one of :data:`PRESETS`?"""
    return text is not None and text not in PRESETS


def check(args) -> str:
    """The workload's definition in one line, after refusing the flags it does not take and a spec the model
    cannot read (a :class:`~diskmodel.calibrate.cli.UsageError` naming the flag and the value)."""
    from diskmodel.calibrate.cli import UsageError
    from diskmodel.model.iopath.workload_spec import full_definition, parse_workload, postmark_config

    name = args.workload.partition(":")[0]
    if name not in _names():
        raise UsageError(f"--workload {args.workload}: not one of {', '.join(PRESETS)}, nor NAME:KEY=VALUE,... with "
                         f"NAME one of {', '.join(_names())}")
    given = [flag for flag in _NOT_TAKEN if getattr(args, flag[2:].replace("-", "_"), None) is not None]
    given += ["--fitted"] if args.fitted else []
    if given:
        where = ("give them in the workload (e.g. postmark:files=500,transactions=2000)"
                 if given[0] in ("--transactions", "--files") else
                 "a named workload is timed on the I/O path, whose page cache is the kernel's defaults and whose "
                 "LVM cost is the requests device-mapper sends")
        raise UsageError(f"{given[0]} does not apply to --workload {args.workload}: {where}")
    try:
        # a bad key or value: the model's one line, led by the flag (PostMark's from its settings alone: its
        # operations, millions for a large run, are made once, by the prediction, after its size is checked)
        if name == "postmark":
            postmark_config(args.workload.partition(":")[2])
        else:
            parse_workload(args.workload)
        return full_definition(args.workload)
    except ValueError as exc:
        # the model's line names the workload ("workload fio: ...", "workload 'x': ..."); the flag names it here
        reason = re.sub(r"^workload(?: '[^']*'| [a-z]+)?: ?", "", str(exc), count=1)
        raise UsageError(f"--workload {args.workload}: {reason}") from exc


def timed_json(args, stack, prediction, **extra) -> dict:
    """The --json object of a prediction timed on the I/O path (an IoPrediction): the figures, each device's
    load, the intervals and the assumptions (*extra* after the stack and the workload)."""
    from diskmodel.calibrate.cli import predict_intervals

    def load(timing) -> dict:
        return {name: {k: (int(v) if k in ("requests", "read_bytes", "write_bytes") else float(v))
                       for k, v in row.items()} for name, row in timing.device_frame().iterrows()}

    workers = prediction.timing.workers
    return {
        "stack": stack.short_name, "workload": args.workload, **extra,
        "read_throughput_bytes_per_s": prediction.read_throughput_bytes_per_s,
        "write_throughput_bytes_per_s": prediction.write_throughput_bytes_per_s,
        "elapsed_s": prediction.elapsed_s, "stall_s": prediction.timing.stall_s,
        "wait_percentiles_s": prediction.timing.wait_percentiles(),
        "devices": load(prediction.timing),
        # each buffered loop device's worker: its copies into and out of the image's page cache
        **({"loop_workers": load(workers)} if workers is not None else {}),
        "intervals_95": predict_intervals.interval_figures(prediction),
        "assumptions": args.notes + [f"{topic}: {text}" for topic, text in prediction.assumptions],
    }


def run(args, stack, definition: str) -> int:
    """Time the named workload on *stack* and print it (a table, or one JSON object with ``--json``)."""
    from diskmodel.calibrate.cli import UsageError, predict_intervals
    from diskmodel.model.predict import predict

    calibrations = predict_intervals.calibrations(args, stack)
    try:
        prediction = predict(stack, args.workload, calibrations=calibrations or None)
    except ValueError as exc:
        where = f"--stack {args.stack}" if args.stack else f"--layout {args.layout} on {stack.model_disk().name}"
        raise UsageError(f"{where}: {exc}") from exc
    if args.json:
        print(json.dumps(timed_json(args, stack, prediction, definition=definition,
                                    read_bytes=int(prediction.read_bytes), write_bytes=int(prediction.write_bytes))))
        return 0
    print(f"{stack.short_name}, {args.workload}: {definition}")
    print(stack.describe())
    print(prediction.summary())
    return 0
