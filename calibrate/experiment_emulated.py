"""The main job on an emulated drive (``diskmodel experiment --emulate DRIVE``): the parts that touch it.

1. :func:`calibrate_emulated`: the drive served as a loop device on the host
   (:func:`diskmodel.calibrate.emulate.devices.emulated_drives`) and
   calibrated through the kernel, read-only, as a real device is;
2. :func:`postmark_on_emulated`: real PostMark on the paper's native, LVM-1
   and LVM-2 stacks, all three in the throwaway VM on the same emulated
   drive (``/dev/vdb``; :mod:`diskmodel.calibrate.emulate.for_vm`), so that
   they compare fairly where the host has no device-mapper;
3. :func:`ratio_table`: each layout's measured rates against native's,
   beside the same ratios in the paper's Tables 4-6. Under TCG the guest's
   CPU is emulated (slow) while the drive keeps its own time: the ratios and
   orderings are what compare, not the absolute rates.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["calibrate_emulated", "postmark_on_emulated", "ratio_table"]

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
    """PostMark runs ``(label, config, summary)`` for each of *layouts* and *tests*, in the VM on *spec*.

    One emulated drive serves every run (its state carries on from run to
    run, as a real drive's does); each run boots its own VM, builds the
    layout on ``/dev/vdb``, runs PostMark once with the page cache dropped
    and tears the layout down.
    """
    from diskmodel.calibrate.bench.postmark import run_on_stack
    from diskmodel.calibrate.emulate.workloads import emulated_disk
    from diskmodel.model.stack import paper_stack
    from diskmodel.model.workload import postmark_preset

    runs = []
    with emulated_disk(spec, vm=True, say=say) as disk:
        for layout in layouts:
            stack = paper_stack(layout, fs_size_bytes=FS_SIZE_BYTES)
            for test in tests:
                config = postmark_preset(test)
                config = config.evolve(number_of_files=min(files, config.number_of_files),
                                       transactions=min(transactions, config.transactions))
                summary = run_on_stack(stack, config, vm=True, vm_drives=disk.vm_drives, vm_timeout_s=vm_timeout_s)
                runs.append((f"{test} on {layout}", config, summary))
    notes.append(f"ran real PostMark on {', '.join(layouts)} in the throwaway VM (TCG), each on the emulated "
                 f"{spec.name} as /dev/vdb; the paper's workloads scaled to at most {files} files and "
                 f"{transactions} transactions; under TCG compare ratios and orderings, not absolute rates")
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
