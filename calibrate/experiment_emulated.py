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
from dataclasses import dataclass

import pandas as pd

__all__ = ["PART_MARK", "calibrate_emulated", "guest_script", "postmark_on_emulated", "ratio_table"]

#: The guest's lines around each run of one VM boot's script: ``PART_MARK BEGIN i`` and ``PART_MARK END i STATUS``.
PART_MARK = "DISKMODEL_PART"

#: File-system size of every layout's PostMark runs (the paper's stacks hold the same file system) [bytes].
FS_SIZE_BYTES = 1 << 30


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
    (:func:`guest_script`): each run builds its layout afresh on ``/dev/vdb``,
    runs PostMark once with the page cache dropped and tears the layout
    down, in the order of *layouts*, then *tests*.
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
    notes.append(f"ran real PostMark on {', '.join(layouts)} in one boot of the throwaway VM (TCG), each run on "
                 f"its layout built afresh on the emulated {spec.name} as {GUEST_FIRST_DEVICE}; the paper's "
                 f"workloads scaled to at most {files} files and {transactions} transactions; under TCG compare "
                 f"ratios and orderings, not absolute rates")
    return runs


@dataclass
class _Part:
    label: str
    stack: object
    config: object
    script: str


def _parts(layouts, tests, files: int, transactions: int, disk: str) -> list[_Part]:
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.postmark_guest import guest_body
    from diskmodel.calibrate.bench.steps import sh_word
    from diskmodel.model.stack import paper_stack
    from diskmodel.model.workload import postmark_preset

    parts = []
    for layout in layouts:
        stack = paper_stack(layout, fs_size_bytes=FS_SIZE_BYTES)
        plan = L.build_plan(stack, backing=disk)
        for test in tests:
            config = postmark_preset(test)
            config = config.evolve(number_of_files=min(files, config.number_of_files),
                                   transactions=min(transactions, config.transactions))
            # the stack's disk, whose queue the run reports as its backing
            body = f"DISKMODEL_SCRATCH={sh_word(disk)}\n" + guest_body(config, mount_var=plan.mount_var,
                                                                          device=plan.device)
            parts.append(_Part(f"{test} on {layout}", stack, config, plan.render_script(body)))
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


def _parse_parts(result, parts: list[_Part], *, backing: str) -> list:
    """Each part's PostMark summary from the VM's output; PostMarkError naming the first part that failed."""
    from diskmodel.calibrate.bench.postmark_guest import parse_guest_output
    from diskmodel.calibrate.bench.postmark_text import PostMarkError

    text = result.output.replace("\r", "")
    runs = []
    for i, part in enumerate(parts):
        m = re.search(rf"^{PART_MARK} BEGIN {i}\n(.*?)^{PART_MARK} END {i} (-?\d+)$", text, re.S | re.M)
        if m is None:
            raise PostMarkError(f"the VM's output holds no end of run {i + 1} of {len(parts)} ({part.label}); "
                                f"the VM exited with status {result.returncode}:\n{text[-3000:]}")
        if int(m.group(2)) != 0:
            raise PostMarkError(f"{part.label} failed in the VM with status {m.group(2)}:\n{m.group(1)[-3000:]}")
        summary = parse_guest_output(m.group(1), part.config, stack=part.stack, accelerator=result.accelerator,
                                     kernel_release=result.kernel_release, backing=backing)
        runs.append((part.label, part.config, summary))
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
        rows.append({"test": test, "operation": operation, "layout": layout, "measured MiB/s": rate / 2**20,
                     "ratio to native": rate / native if native else float("nan"),
                     "paper's ratio to native": (paper_here / paper_native
                                                 if paper_here and paper_native else float("nan"))})
    return pd.DataFrame(rows)
