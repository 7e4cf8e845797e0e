"""The main job on an emulated drive (``diskmodel experiment --emulate DRIVE``): the parts that touch it.

1. :func:`calibrate_emulated`: the drive served as a loop device on the host
   (:func:`diskmodel.calibrate.emulate.devices.emulated_drives`) and
   calibrated through the kernel, read-only, as a real device is;
2. :func:`postmark_on_emulated`: real PostMark on the paper's native, LVM-1
   and LVM-2 stacks, all three in one boot of the throwaway VM on the same
   emulated drive (``/dev/vdb``; :mod:`diskmodel.calibrate.emulate.for_vm`),
   so that they compare fairly where the host has no device-mapper;
   just before each run, the same PostMark on a tmpfs (the guest's time for
   PostMark alone) and on a twin of the stack over a RAM disk in the guest
   (the guest's time for PostMark and the stack's kernel work: the file
   system, its journal, device-mapper, the block layer, all emulated under
   TCG, with a device that takes no time);
3. :func:`model_check`: each run predicted on the timed I/O path
   (:func:`diskmodel.model.predictions.results.predict_stack`, PostMark as
   file operations, :func:`diskmodel.model.iopath.fileops.postmark`) on the
   paper's stack, its operations put on the clock of its twin on the RAM
   disk (:func:`diskmodel.model.iopath.workloads_pace.paced`), against the
   run's measured wall time; beside it, on the clock of the tmpfs run with
   device-mapper's cost per bio (:mod:`diskmodel.model.stacks.dm_cost`)
   charged on the LVM layouts;
4. :func:`ratio_table`: each layout's measured rates against native's,
   beside the same ratios in the paper's Tables 4-6.
"""
from __future__ import annotations

import dataclasses
import re
import threading
from dataclasses import dataclass

import pandas as pd

from diskmodel.calibrate.bench.ram_twin import RAM_CLOCK, TMPFS_CLOCK
from diskmodel.calibrate.bench.steps import sh_word

__all__ = ["Background", "PART_MARK", "calibrate_emulated", "guest_dm_cost_s", "guest_script", "model_check",
           "orderings", "postmark_on_emulated", "ratio_table"]

#: The guest's lines around each run of one VM boot's script: ``PART_MARK BEGIN i`` and ``PART_MARK END i STATUS``.
PART_MARK = "DISKMODEL_PART"
#: The lines around each PostMark test inside a part: ``TEST_MARK BEGIN k`` and ``TEST_MARK END k STATUS``.
TEST_MARK = "DISKMODEL_TEST"

#: The lines around each test's PostMark on the guest's tmpfs: ``PACE_MARK BEGIN k`` and ``PACE_MARK END k STATUS``.
PACE_MARK = "DISKMODEL_PACE"
#: The lines around each test's PostMark on the stack's twin over a RAM disk.
RAM_MARK = "DISKMODEL_RAM"


#: File-system size of every layout's PostMark runs (the paper's stacks hold the same file system) [bytes].
FS_SIZE_BYTES = 1 << 30
#: The guest's clock while its CPU runs: 2^N ns per instruction (qemu's ``-icount``), so that a run and its
#: twins are timed alike however much of the host's shared CPU the emulator gets between them.
ICOUNT_SHIFT = 2
#: The VM's memory [bytes] (:func:`diskmodel.calibrate.bench.vm.run_script_in_vm`'s), the model's page cache too.
VM_MEMORY_BYTES = 1 << 30
#: The guest's tmpfs for the PostMark runs that time the application alone.
_PACE_DIR = "/tmp/diskmodel-pace"


class Background:
    """*fn()* run on a daemon thread from now on; :meth:`result` waits for it and returns its value or raises
    its exception. A daemon thread: an interrupt of the caller does not wait for a computation that touches
    no resource (the model's predictions) to finish."""

    def __init__(self, fn):
        self._value, self._error = None, None
        self._thread = threading.Thread(target=self._run, args=(fn,), name="diskmodel-background", daemon=True)
        self._thread.start()

    def _run(self, fn) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def calibrate_emulated(spec, *, budget_s: float, seed: int, notes: list, say=None):
    """Calibrate the emulated drive *spec* through the kernel (its loop device, read-only)."""
    from diskmodel.calibrate.emulate.workloads import emulated_disk
    from diskmodel.calibrate.harness.device import open_backend
    from diskmodel.calibrate.harness.measure import calibrate

    with emulated_disk(spec, vm=False, say=say) as disk:
        with open_backend(disk.path) as backend:
            calibration = calibrate(backend, budget_s=budget_s, seed=seed, progress=False, path=disk.path)
    notes.append(f"calibrated the emulated {spec.name} through the kernel (a loop device over nbdfuse and "
                 f"nbdkit, each request timed by the drive's simulation; {calibration.device_time_s:.1f} s of "
                 f"device time), read-only")
    return calibration


def postmark_on_emulated(spec, *, layouts, tests, files: int, transactions: int, notes: list,
                         vm_timeout_s: float = 3600.0, say=None, icount_shift: int | None = ICOUNT_SHIFT) -> tuple[list, dict]:
    """PostMark runs ``(label, config, summary)`` for each of *layouts* and *tests*, in one VM on *spec*, and
    ``{label: {clock: summary}}`` of each run's twins: the same PostMark on the guest's tmpfs
    (:data:`TMPFS_CLOCK`) and on the same stack over a RAM disk in the guest (:data:`RAM_CLOCK`).

    One emulated drive serves every run (its state carries on from run to
    run, as a real drive's does) and one VM boot runs them all
    (:func:`guest_script`, :func:`_parts`): each layout is built once on
    ``/dev/vdb``, each of *tests* runs PostMark on a tmpfs, on the layout's
    twin over a RAM disk and on the layout, each with the page cache
    dropped, and the layout is torn down before the next one is built.
    """
    from diskmodel.calibrate.bench.vm import run_script_in_vm
    from diskmodel.calibrate.emulate.for_vm import GUEST_FIRST_DEVICE
    from diskmodel.calibrate.emulate.workloads import emulated_disk

    parts = _parts(layouts, tests, files, transactions, GUEST_FIRST_DEVICE)
    script = guest_script([part.script for part in parts])
    with emulated_disk(spec, vm=True, say=say) as disk:
        result = run_script_in_vm(script, scratch_disk_bytes=1 << 20, timeout_s=vm_timeout_s,
                                  memory_bytes=VM_MEMORY_BYTES, icount_shift=icount_shift,
                                  nbd_sockets=[d.socket for d in disk.vm_drives],
                                  pass_fds=[d.dir_fd for d in disk.vm_drives])
    runs, twins = _parse_parts(result, parts, backing=f"{GUEST_FIRST_DEVICE} (emulated {spec.name})")
    notes.append(f"ran real PostMark on {', '.join(layouts)} in one boot of the throwaway VM (TCG), each layout "
                 f"built once on the emulated {spec.name} as {GUEST_FIRST_DEVICE}; the paper's "
                 f"workloads scaled to at most {files} files and {transactions} transactions, the tests one after "
                 f"another on each layout's file system, each just after the same PostMark on a tmpfs in the guest "
                 f"(the application alone) and on a twin of the stack over a RAM disk in the guest (the "
                 f"application and the stack's kernel work, no drive); mkfs {' '.join(MKFS_OPTIONS)}; "
                 + (f"the guest's clock counts instructions while its CPU runs (qemu -icount shift={icount_shift})"
                    if icount_shift is not None else "the guest's clock is the host's"))
    return runs, twins


@dataclass
class _Part:
    layout: str
    stack: object
    configs: list  # (test, config) in the order run
    script: str


#: mke2fs writes the inode tables at once, so that no ext4lazyinit thread writes them (and takes the guest's
#: one CPU) while PostMark is timed; the model's file system has its tables written too.
MKFS_OPTIONS = ("-Elazy_itable_init=0",)


def layout_stack(layout: str, disk=None):
    """The paper's stack *layout* as the VM builds it and the model times it (on *disk*, default the preset)."""
    from diskmodel.model.stacks.stack import paper_stack

    return paper_stack(layout, fs_size_bytes=FS_SIZE_BYTES, disk=disk, mkfs_options=MKFS_OPTIONS)


def _test_runs(config, k: int, mark: str, mount_var: str, device) -> list[str]:
    """Shell lines running PostMark on *config* once, in a subshell (guest_body ends with exit), between
    ``mark BEGIN k`` and ``mark END k STATUS``; the first failure ends the script."""
    from diskmodel.calibrate.bench.postmark_guest import guest_body

    return [f"echo {mark} BEGIN {k}", "(", guest_body(config, mount_var=mount_var, device=device).rstrip("\n"), ")",
            "rc=$?", f"echo {mark} END {k} $rc", '[ "$rc" = 0 ] || exit "$rc"']


def _twin_runs(stack, config, k: int) -> list[str]:
    """Shell lines running PostMark on *config* once on a twin of *stack* over a RAM disk
    (:func:`diskmodel.calibrate.bench.ram_twin.twin_script`), built for the run and torn down after it by a
    script of its own (written through a here-document whose delimiter is quoted, so the shell expands
    nothing in it)."""
    from diskmodel.calibrate.bench.ram_twin import twin_script

    text = twin_script(stack, lambda twin: "\n".join([f"DISKMODEL_SCRATCH={sh_word(twin.backing)}",
                                                       *_test_runs(config, k, RAM_MARK, twin.mount_var,
                                                                   twin.device)]),
                       per_disk=False)
    delimiter = f"DISKMODEL_TWIN_{k}_END_OF_SCRIPT"
    return [f"cat > /tmp/diskmodel-twin-{k}.sh <<'{delimiter}'", text.rstrip("\n"), delimiter,
            f"sh /tmp/diskmodel-twin-{k}.sh", "rc=$?", '[ "$rc" = 0 ] || exit "$rc"']


def _parts(layouts, tests, files: int, transactions: int, disk: str) -> list[_Part]:
    """One part per layout: its stack built once on *disk*, then each test's PostMark in turn on the same file
    system (PostMark deletes every file it made, and a test that leaves one fails), then torn down. Each
    run follows its two twins: the same PostMark on a tmpfs (the guest's time for PostMark alone), then on
    the same stack over a RAM disk (PostMark and the stack's kernel work, with a device that takes no time)."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.model.predictions.workload import postmark_preset

    configs = []
    for test in tests:
        config = postmark_preset(test)
        configs.append((test, config.evolve(number_of_files=min(files, config.number_of_files),
                                            transactions=min(transactions, config.transactions))))
    parts = []
    for layout in layouts:
        stack = layout_stack(layout)
        plan = L.build_plan(stack, backing=disk)
        body = []
        for k, (_test, config) in enumerate(configs):
            body += [f"mkdir -p {_PACE_DIR}", f"mount -t tmpfs -o size=512m diskmodel-pace {_PACE_DIR} || exit 1",
                     f"DISKMODEL_SCRATCH={_PACE_DIR}", f"DISKMODEL_PACE_MNT={_PACE_DIR}"]
            body += _test_runs(config, k, PACE_MARK, "DISKMODEL_PACE_MNT", _PACE_DIR)
            body += [f"umount {_PACE_DIR}"]
            body += _twin_runs(stack, config, k)
            # the stack's disk, reported as its backing
            body += [f"DISKMODEL_SCRATCH={sh_word(disk)}", *_test_runs(config, k, TEST_MARK, plan.mount_var,
                                                                      plan.device)]
        parts.append(_Part(layout, stack, configs, plan.render_script("\n".join(body))))
    return parts


def guest_script(scripts: list[str]) -> str:
    """One guest script that runs each of *scripts* (each a whole ``sh`` script: it builds a layout, runs its
    body and tears the layout down from its own EXIT trap) in turn, each in its own ``sh``, between
    :data:`PART_MARK` lines that carry its exit status; it stops at the first that fails (its layout's
    teardown may have left the disk busy for the next). Each script goes through a here-document whose
    delimiter is quoted, so the guest's shell expands nothing in it."""
    out = ["set +e"]
    for i, text in enumerate(scripts):
        delimiter = f"DISKMODEL_PART_{i}_END_OF_SCRIPT"
        if any(line == delimiter for line in text.splitlines()):
            raise ValueError(f"part {i}'s script holds its own here-document delimiter {delimiter}")
        out += [f"cat > /tmp/diskmodel-part-{i}.sh <<'{delimiter}'", text.rstrip("\n"), delimiter,
                f"echo {PART_MARK} BEGIN {i}",
                f"sh /tmp/diskmodel-part-{i}.sh",
                "rc=$?",
                f"echo {PART_MARK} END {i} $rc",
                '[ "$rc" = 0 ] || exit "$rc"']
    out.append("exit 0")
    return "\n".join(out) + "\n"


def _section(text: str, mark: str, i: int, what: str, returncode) -> str:
    """The lines between ``mark BEGIN i`` and ``mark END i STATUS``; PostMarkError if absent or failed."""
    from diskmodel.calibrate.bench.postmark_text import PostMarkError

    m = re.search(rf"^{mark} BEGIN {i}\n(.*?)^{mark} END {i} (-?\d+)$", text, re.S | re.M)
    if m is None:
        raise PostMarkError(f"the VM's output holds no end of {what} (the guest script exited with status "
                            f"{returncode}):\n{text[-3000:]}")
    if int(m.group(2)) != 0:
        raise PostMarkError(f"{what} failed in the VM with status {m.group(2)}:\n{m.group(1)[-3000:]}")
    return m.group(1)


def _parse_parts(result, parts: list[_Part], *, backing: str) -> tuple[list, dict]:
    """Each run's PostMark summary from the VM's output, and ``{label: {clock: summary}}`` of its twins;
    PostMarkError naming the first run that failed."""
    from diskmodel.calibrate.bench.postmark_guest import parse_guest_output

    text = result.output.replace("\r", "")
    runs, twins = [], {}
    for i, part in enumerate(parts):
        section = _section(text, PART_MARK, i, f"the runs on {part.layout}", result.returncode)
        for k, (test, config) in enumerate(part.configs):
            label = f"{test} on {part.layout}"
            common = dict(stack=part.stack, accelerator=result.accelerator, kernel_release=result.kernel_release)
            twins[label] = {clock: parse_guest_output(_section(section, mark, k, f"{label}'s twin ({clock})",
                                                               result.returncode), config, backing=clock, **common)
                            for clock, mark in ((TMPFS_CLOCK, PACE_MARK), (RAM_CLOCK, RAM_MARK))}
            run = parse_guest_output(_section(section, TEST_MARK, k, label, result.returncode), config,
                                     backing=backing, **common)
            runs.append((label, config, run))
    return runs, twins


def ratio_table(runs, paper: pd.DataFrame) -> pd.DataFrame:
    """Each (test, operation, layout): the measured rate, its ratio to native's, and the paper's ratio.

    *runs*: :func:`postmark_on_emulated`'s; *paper*: Tables 4-6 as
    :func:`diskmodel.data.tables.postmark_results` gives them (test,
    layout_key, operation, throughput_bytes_per_s).
    """
    measured = {}
    for label, _config, summary in runs:
        test, _, layout = label.partition(" on ")
        params = summary.params
        for operation in ("read", "write"):
            measured[(test, layout, operation)] = float(params[f"{operation}_bytes_per_s_wall"])
    paper_rate = {(r.test, r.layout_key, r.operation): float(r.throughput_bytes_per_s) for r in paper.itertuples()}
    rows = []
    for (test, layout, operation), rate in measured.items():
        native = measured.get((test, "native", operation))
        paper_native = paper_rate.get((test, "native", operation))
        paper_here = paper_rate.get((test, layout, operation))
        rows.append({"test": test, "operation": operation, "layout": layout, "measured MB/s": rate / 1e6,
                     "ratio to native": rate / native if native else float("nan"),
                     "paper's ratio to native": (paper_here / paper_native
                                                 if paper_here and paper_native else float("nan"))})
    return pd.DataFrame(rows)


def guest_dm_cost_s() -> tuple[float, str]:
    """Device-mapper's cost per bio in the throwaway VM's guest [s] and where it comes from: the figure
    :func:`diskmodel.data.measured.dm_request_cost` ships (``benchmarks/dm_request_cost.py``: dm-linear
    against the raw device, measured in the same VM configuration under the same emulator)."""
    from diskmodel.data.measured import dm_request_cost

    cost = dm_request_cost()
    return cost.guest_s, (f"device-mapper's cost per bio in the guest {cost.guest_s * 1e6:.1f} us "
                          f"(measured in the VM: {cost.describe()})")


def model_check(runs, twins: dict, predictions: dict, *, memory_bytes: int = VM_MEMORY_BYTES) -> pd.DataFrame:
    """Each run of :func:`postmark_on_emulated` predicted beside its measured wall time.

    *twins*: :func:`postmark_on_emulated`'s (per run, its twin on each clock); *predictions*: ``{column:
    (drive, clock, dm_cost_s)}``: a Disk or a drive node (the calibration's, the one the emulator serves),
    :data:`TMPFS_CLOCK` or :data:`RAM_CLOCK`, and device-mapper's cost per request [s] (None: none).
    Each run is PostMark's own operations (:func:`diskmodel.model.iopath.fileops.postmark`, no sync at
    the end: PostMark exits without one, deleting every file it made) on the paper's stack on that
    drive, issued on the clock of the run's twin (its wall time:
    :func:`diskmodel.model.iopath.workloads_pace.paced`) and timed on the I/O path with a page cache of
    the guest's *memory_bytes*. PostMark's wall time is the application's end: its last operation plus
    its stall (the waits for the device, :class:`diskmodel.model.iopath.timing.IoTiming`); write-back
    after it is not in it. A layout's first run is on a fresh mount; the runs after it follow a ``sync`` and
    ``drop_caches`` on a mount that has allocated before (``FileOps.caches_dropped``), *runs* being in the
    order run. On an LVM layout each request the I/O path sends through the logical volume
    costs *dm_cost_s* of the guest's one CPU, which PostMark shares (:mod:`diskmodel.model.stacks.dm_cost`);
    a twin on the same stack over a RAM disk holds that cost already.
    """
    from diskmodel.model.iopath import fileops
    from diskmodel.model.iopath.pagecache import CacheParams
    from diskmodel.model.iopath.workloads_pace import paced
    from diskmodel.model.predictions.results import predict_stack

    cache = CacheParams(memory_bytes=int(memory_bytes))
    rows, mounted = [], set()
    for label, config, summary in runs:
        test, _, layout = label.partition(" on ")
        measured_s = float(summary.params["wall_s"])
        clocks = {clock: float(twin.params["wall_s"]) for clock, twin in twins[label].items()}
        row = {"run": label, "test": test, "layout": layout, "measured_s": measured_s,
               **{f"{clock}_s": value for clock, value in clocks.items()}}
        ops = fileops.postmark(config, sync_at_end=False)
        if layout in mounted:
            # A layout's tests run in turn on one mount (_parts), each after sync and drop_caches (guest_body):
            # only the first allocates on a fresh mount, whose mballoc reads ahead the block bitmaps.
            ops = dataclasses.replace(ops, caches_dropped=True)
        mounted.add(layout)
        for column, (drive, clock, dm_cost_s) in predictions.items():
            stack = layout_stack(layout, drive)
            prediction = predict_stack(stack, paced(ops, clocks[clock]), cache)
            timing = prediction.timing
            stream = prediction.streams.get(stack.volume.name) if stack.volume.is_lvm else None
            dm_s = (dm_cost_s or 0.0) * (len(stream) if stream is not None else 0)
            predicted = timing.app_s + timing.stall_s + dm_s
            row.update({f"predicted_s ({column})": predicted, f"error % ({column})": 100 * (predicted / measured_s - 1),
                        f"stall_s ({column})": timing.stall_s, f"dm_s ({column})": dm_s})
        rows.append(row)
    return pd.DataFrame(rows)


#: Two runs closer than this [s] are not ordered: the guest's clock (copy.GUEST_CLOCK) reads to the nanosecond,
#: but each reading is a fork of the guest's shell, milliseconds under TCG, and the runs' own spread is larger.
CLOCK_RESOLUTION_S = 0.01


def orderings(check: pd.DataFrame, columns) -> pd.DataFrame:
    """Per test: the layouts from fastest to slowest by the measured wall time (``=`` between runs within
    :data:`CLOCK_RESOLUTION_S`), and for each of *columns* (``predicted_s (COLUMN)``) how many of the pairs
    of layouts the measurement orders (more than the resolution apart) the prediction orders alike."""
    rows = []
    for test, group in check.groupby("test", sort=False):
        group = group.sort_values("measured_s")
        text, last = "", None
        for r in group.itertuples():
            if last is not None:
                text += " = " if r.measured_s - last <= CLOCK_RESOLUTION_S else " < "
            text, last = text + r.layout, r.measured_s
        row = {"test": test, "measured order (fastest first)": text}
        records = group.to_dict("records")
        pairs = [(a, b) for i, a in enumerate(records) for b in records[i + 1:]
                 if b["measured_s"] - a["measured_s"] > CLOCK_RESOLUTION_S]
        row["ordered pairs"] = len(pairs)
        for column in columns:
            key = f"predicted_s ({column})"
            row[f"held ({column})"] = sum(a[key] < b[key] for a, b in pairs)
        rows.append(row)
    return pd.DataFrame(rows)


#: The model's predictions beside each run: on the clock of the stack's twin on a RAM disk, from the
#: calibration just made and from the drive the emulator serves; and on the clock of PostMark alone on
#: tmpfs, from the calibration, with device-mapper's cost per request.
PREDICTIONS = ("calibration", "served drive", "calibration, tmpfs clock")


def check_emulated_runs(spec, disk, runs, twins: dict, notes: list) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`model_check` of *runs* (:data:`PREDICTIONS`), with :func:`orderings`; a note of how."""
    from diskmodel.calibrate.emulate.drives import model_drive

    dm_cost_s, where = guest_dm_cost_s()
    served = model_drive(spec, name="sda")
    check = model_check(runs, twins, dict(zip(PREDICTIONS, ((disk, RAM_CLOCK, None), (served, RAM_CLOCK, None),
                                                            (disk, TMPFS_CLOCK, dm_cost_s)))))
    notes.append("each run predicted on the timed I/O path (PostMark's operations on the paper's stack, a page "
                 "cache of the VM's memory; PostMark's wall time is its last operation plus its waits for the "
                 "device), on the clock of the same PostMark on the same stack over a RAM disk in the guest (the "
                 "application and the stack's kernel work, device-mapper's included) and, beside it, on the clock "
                 f"of the same PostMark on the guest's tmpfs (the application alone) with {where}")
    return check, orderings(check, PREDICTIONS)


def check_figures(check: pd.DataFrame, column: str = PREDICTIONS[0]) -> dict:
    """The median and largest absolute error [%] of *check*'s predictions in *column*."""
    errors = check[f"error % ({column})"].abs()
    return {"median_abs_error_pct": float(errors.median()), "max_abs_error_pct": float(errors.max())}


def check_markdown(check: pd.DataFrame, orders: pd.DataFrame, table) -> str:
    """The report's section on the model against each run (*table*: a DataFrame to a markdown table)."""
    clocks = [c for c in (f"{TMPFS_CLOCK}_s", f"{RAM_CLOCK}_s") if c in check]
    shown = check[["run", "measured_s", *clocks]
                  + [f"{what} ({c})" for c in PREDICTIONS for what in ("predicted_s", "error %")]]
    lines = ["## The model against each PostMark run on the emulated drive", "",
             "Measured: PostMark's wall time in the guest (its outside clock). Predicted: the timed I/O path on the "
             "paper's stack, PostMark's operations on the clock of the same run on the same stack over a RAM disk "
             "in the guest just before (stack on RAM_s), from the calibration and from the drive the emulator "
             "serves; and on the clock of the same run on the guest's tmpfs just before it (tmpfs_s), with "
             "device-mapper's cost per request.", "", table(shown, floatfmt=".3f"), ""]
    for column in PREDICTIONS:
        figures = check_figures(check, column)
        lines.append(f"- {column}: median |error| {figures['median_abs_error_pct']:.1f} %, "
                     f"largest {figures['max_abs_error_pct']:.1f} %")
    lines += ["", "Each test's layouts from fastest to slowest:", "", table(orders), ""]
    return "\n".join(lines)
