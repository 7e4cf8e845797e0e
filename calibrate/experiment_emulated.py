"""The main job on an emulated drive (``diskmodel experiment --emulate DRIVE``): the parts that touch it.

1. :func:`calibrate_emulated`: the drive served as a loop device on the host
   (:func:`diskmodel.calibrate.emulate.devices.emulated_drives`) and
   calibrated through the kernel, read-only, as a real device is;
2. :func:`postmark_on_emulated`: real PostMark on the paper's native, LVM-1
   and LVM-2 stacks, all three in one boot of the throwaway VM on the same
   emulated drive (``/dev/vdb``; :mod:`diskmodel.calibrate.emulate.for_vm`),
   so that they compare fairly where the host has no device-mapper;
3. :func:`ratio_table`: each layout's measured rates against native's,
   beside the same ratios in the paper's Tables 4-6. Under TCG the guest's
   CPU is emulated (slow) while the drive keeps its own time: the ratios and
   orderings are what compare, not the absolute rates.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import pandas as pd

__all__ = ["Background", "PART_MARK", "calibrate_emulated", "guest_script", "postmark_on_emulated", "ratio_table"]

#: The guest's lines around each run of one VM boot's script: ``PART_MARK BEGIN i`` and ``PART_MARK END i STATUS``.
PART_MARK = "DISKMODEL_PART"
#: The lines around each PostMark test inside a part: ``TEST_MARK BEGIN k`` and ``TEST_MARK END k STATUS``.
TEST_MARK = "DISKMODEL_TEST"

#: File-system size of every layout's PostMark runs (the paper's stacks hold the same file system) [bytes].
FS_SIZE_BYTES = 1 << 30


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
                         vm_timeout_s: float = 3600.0, say=None) -> list:
    """PostMark runs ``(label, config, summary)`` for each of *layouts* and *tests*, in one VM on *spec*.

    One emulated drive serves every run (its state carries on from run to
    run, as a real drive's does) and one VM boot runs them all
    (:func:`guest_script`): each layout is built once on ``/dev/vdb``, each of
    *tests* runs PostMark once on it with the page cache dropped, and the
    layout is torn down before the next one is built.
    """
    from diskmodel.calibrate.bench.vm import run_script_in_vm
    from diskmodel.calibrate.emulate.for_vm import GUEST_FIRST_DEVICE
    from diskmodel.calibrate.emulate.workloads import emulated_disk

    parts = _parts(layouts, tests, files, transactions, GUEST_FIRST_DEVICE)
    script = guest_script([part.script for part in parts])
    with emulated_disk(spec, vm=True, say=say) as disk:
        result = run_script_in_vm(script, scratch_disk_bytes=1 << 20, timeout_s=vm_timeout_s,
                                  nbd_sockets=[d.socket for d in disk.vm_drives],
                                  pass_fds=[d.dir_fd for d in disk.vm_drives])
    runs = _parse_parts(result, parts, backing=f"{GUEST_FIRST_DEVICE} (emulated {spec.name})")
    notes.append(f"ran real PostMark on {', '.join(layouts)} in one boot of the throwaway VM (TCG), each layout "
                 f"built once on the emulated {spec.name} as {GUEST_FIRST_DEVICE}; the paper's "
                 f"workloads scaled to at most {files} files and {transactions} transactions, the tests one after "
                 f"another on each layout's file system; under TCG compare ratios and orderings, not absolute "
                 f"rates")
    return runs


@dataclass
class _Part:
    layout: str
    stack: object
    configs: list  # (test, config) in the order run
    script: str


def _parts(layouts, tests, files: int, transactions: int, disk: str) -> list[_Part]:
    """One part per layout: its stack built once on *disk*, then each test's PostMark in turn on the same
    file system (PostMark deletes every file it made, and a test that leaves one fails), then torn down."""
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.postmark_guest import guest_body
    from diskmodel.calibrate.bench.steps import sh_word
    from diskmodel.model.stacks.stack import paper_stack
    from diskmodel.model.predictions.workload import postmark_preset

    parts = []
    for layout in layouts:
        stack = paper_stack(layout, fs_size_bytes=FS_SIZE_BYTES)
        plan = L.build_plan(stack, backing=disk)
        configs, body = [], [f"DISKMODEL_SCRATCH={sh_word(disk)}"]  # the stack's disk, reported as its backing
        for k, test in enumerate(tests):
            config = postmark_preset(test)
            config = config.evolve(number_of_files=min(files, config.number_of_files),
                                   transactions=min(transactions, config.transactions))
            configs.append((test, config))
            # each test in a subshell: guest_body ends with exit; the first failure ends the part
            body += [f"echo {TEST_MARK} BEGIN {k}", "(",
                     guest_body(config, mount_var=plan.mount_var, device=plan.device).rstrip("\n"), ")",
                     "rc=$?", f"echo {TEST_MARK} END {k} $rc", '[ "$rc" = 0 ] || exit "$rc"']
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


def _parse_parts(result, parts: list[_Part], *, backing: str) -> list:
    """Each run's PostMark summary from the VM's output; PostMarkError naming the first run that failed."""
    from diskmodel.calibrate.bench.postmark_guest import parse_guest_output

    text = result.output.replace("\r", "")
    runs = []
    for i, part in enumerate(parts):
        section = _section(text, PART_MARK, i, f"the runs on {part.layout}", result.returncode)
        for k, (test, config) in enumerate(part.configs):
            label = f"{test} on {part.layout}"
            summary = parse_guest_output(_section(section, TEST_MARK, k, label, result.returncode), config,
                                         stack=part.stack, accelerator=result.accelerator,
                                         kernel_release=result.kernel_release, backing=backing)
            runs.append((label, config, summary))
    return runs


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
