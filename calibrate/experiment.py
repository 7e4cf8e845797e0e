"""The main job: calibrate, fit, predict the paper's layouts, compare, report.

:func:`run_experiment` does, in order:

1. calibrate a disk with the harness: the built-in simulated WD800BD (the
   paper's drive) by default, or a real device or written file (read-only);
2. fit the model: the calibration's fitted seek curve, rotation period and
   zone rates become a :class:`~diskmodel.model.Disk`;
3. predict PostMark throughput for native, LVM-1 and LVM-2 under the paper's
   three workloads, with the I/O path and LVM mapping costs fitted on the
   paper's Tables 4-6 (:func:`diskmodel.model.fit.paper.fit_paper`), and the
   leave-one-test-out check (:func:`diskmodel.model.fit.paper.leave_one_test_out`)
   that predicts each test from the other two;
4. compare with Tables 4-6, and, where asked (``postmark_scratch``), with
   real PostMark runs on this machine;
5. write a report folder: ``report.md``, PNG plots (the seek curve with its
   fit and confidence band, zone rates against location, predicted against
   measured throughput), ``calibration.json``, ``predictions.csv`` and
   ``lvm_costs.json`` (the fitted LVM mapping costs, for ``diskmodel predict --costs``),
   and ``manifest.json`` last.

The report is built in a temporary folder beside the report folder, made
(and its space reserved) before anything is measured, and swapped in whole
when it is complete (:class:`diskmodel.calibrate.harness.report_dir.ReportStaging`):
a failure or a signal leaves the earlier report, or nothing.
"""
from __future__ import annotations

import io
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from diskmodel.calibrate.harness.results import calibration_to_json
from diskmodel.calibrate.lvm_costs import costs_to_json
from diskmodel.data.tables import postmark_results
from diskmodel.model.fit.paper import LAYOUTS, TESTS, fit_paper, leave_one_test_out, median_abs_error_pct, predict_paper

_UNITS = {"test1": ("MB/s", 2**20), "test2": ("KB/s", 2**10), "test3": ("MB/s", 2**20)}


@dataclass(frozen=True, eq=False)
class ExperimentReport:
    """What :func:`run_experiment` produced; ``out_dir`` holds the files."""

    out_dir: Path
    calibration: object
    disk: object
    comparison: pd.DataFrame
    held_out: pd.DataFrame
    postmark_runs: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    timings_s: dict = field(default_factory=dict)
    #: With an emulated drive: each layout's PostMark rates against native's, beside the paper's ratios.
    emulated_ratios: pd.DataFrame | None = None
    #: With an emulated drive: each run's measured wall time beside the model's predictions
    #: (:func:`diskmodel.calibrate.experiment_emulated.model_check`), and the layouts' orderings.
    emulated_check: pd.DataFrame | None = None
    emulated_orderings: pd.DataFrame | None = None

    @property
    def median_fitted_error_pct(self) -> float:
        return median_abs_error_pct(self.comparison)

    @property
    def median_held_out_error_pct(self) -> float:
        return median_abs_error_pct(self.held_out)

    def summary_table(self) -> pd.DataFrame:
        """One row per test and layout: measured, fitted and held-out read/write in the paper's units."""
        rows = []
        held = self.held_out.set_index(["test", "layout", "operation"])
        for r in self.comparison.itertuples():
            unit, scale = _UNITS[r.test]
            rows.append({"test": r.test, "layout": r.layout, "operation": r.operation, "unit": unit,
                         "paper": r.measured_bytes_per_s / scale,
                         "model (fitted on all tests)": r.predicted_bytes_per_s / scale,
                         "model (test held out)": held.loc[(r.test, r.layout, r.operation),
                                                           "predicted_bytes_per_s"] / scale,
                         "held-out error %": held.loc[(r.test, r.layout, r.operation), "error_pct"]})
        return pd.DataFrame(rows)


def _plot_throughput(report: ExperimentReport, ax=None):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5))
    markers = {"native": "o", "lvm1": "s", "lvm2": "^"}
    colours = {"native": "C0", "lvm1": "C2", "lvm2": "C3"}
    values = np.concatenate([report.comparison[c].to_numpy() for c in ("measured_bytes_per_s", "predicted_bytes_per_s")]
                            + [report.held_out["predicted_bytes_per_s"].to_numpy()]) / 2**10
    low, high = values.min() / 2, values.max() * 2
    # the band and the diagonal go under the points (zorder), so that no point is hidden
    ax.fill_between([low, high], [low / 1.2, high / 1.2], [low * 1.2, high * 1.2], color="0.9", zorder=0,
                    label="within a factor 1.2")
    ax.plot([low, high], [low, high], "k-", lw=0.8, zorder=1)
    for frame, filled, label in ((report.comparison, True, "fitted on all tests"),
                                 (report.held_out, False, "test held out")):
        for layout in LAYOUTS:
            part = frame[frame["layout"] == layout]
            colour = colours[layout]
            ax.scatter(part["measured_bytes_per_s"] / 2**10, part["predicted_bytes_per_s"] / 2**10,
                       marker=markers[layout], facecolors=colour if filled else "none", edgecolors=colour,
                       zorder=3, label=f"{layout}, {label}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured, Tables 4-6 [KiB/s]")
    ax.set_ylabel("predicted [KiB/s]")
    ax.legend(fontsize=7)
    return ax


def _markdown_table(frame: pd.DataFrame, floatfmt: str = ".2f") -> str:
    columns = list(frame.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in frame.itertuples(index=False):
        cells = [format(v, floatfmt) if isinstance(v, (float, np.floating)) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _progress(total: int, enabled):
    from tqdm.auto import tqdm

    # the steps take very different times, so the bar names the step under way (_step) and shows
    # no rate and no time left, which tqdm would extrapolate from the steps done
    return tqdm(total=total, desc="experiment", disable=(enabled is False), unit="step",
                bar_format="{desc} [{n_fmt}/{total_fmt} steps done, {elapsed}]")


def _step(bar, text: str) -> None:
    """Name the step under way on the progress bar."""
    bar.set_description_str(f"experiment: {text}")


def run_experiment(out_dir, *, preset: str = "wd800bd", device: str | None = None, budget_s: float | None = None,
                   seed: int = 0, postmark_scratch: str | None = None, destroy_data_on: str | None = None,
                   postmark_files: int = 1000, postmark_transactions: int = 5000,
                   progress: bool | None = None, emulate=None, postmark_layouts=LAYOUTS,
                   vm_timeout_s: float = 3600.0) -> ExperimentReport:
    """Run the main job and write its report folder (see the module docstring).

    Parameters
    ----------
    out_dir : str or os.PathLike
        The report folder: created, or replaced whole when it holds only an
        earlier report's files; into a folder holding other files, the
        report's files are moved one by one (the others are kept).
    preset : str
        The simulated disk calibrated when no *device* is given.
    device : str or os.PathLike, optional
        A real block device or written file to calibrate instead (read-only).
    budget_s : float
        Device time for the calibration [s]; default 120 (simulated) or 60 (real).
    postmark_scratch, destroy_data_on : str or os.PathLike, optional
        Run real PostMark (native layout, the paper's three workloads scaled to
        *postmark_files* files and *postmark_transactions* transactions) on a
        scratch file created there (or a block device, which *destroy_data_on*
        must name again). Needs root.
    emulate : str or diskmodel.calibrate.emulate.drives.DriveSpec, optional
        Calibrate this emulated drive through the kernel instead, and run real
        PostMark on *postmark_layouts* in the throwaway VM on it
        (:mod:`diskmodel.calibrate.experiment_emulated`). Needs root, nbdkit,
        nbdfuse and qemu.
    """
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.report_dir import ReportStaging
    from diskmodel.calibrate.harness.outputs import OutputWriteError
    from diskmodel.calibrate.harness.reserve import calibration_reserve_bytes, keep_unsaved

    out = Path(out_dir)
    if emulate is not None and (device is not None or postmark_scratch is not None):
        raise ValueError("emulate replaces device and postmark_scratch: give one or the other")
    budget_s = budget_s or (120.0 if device is None else 60.0)
    if emulate is not None:
        from diskmodel.calibrate.emulate.drives import resolve_drive
        emulate = resolve_drive(emulate)
    with runstate.ensure_run(f"experiment --out {out}") as run, \
            ReportStaging(out, run=run, reserve_bytes=calibration_reserve_bytes(budget_s) + REPORT_EXTRA_BYTES) \
            as staging:
        report, fit = _measure_and_predict(out, preset=preset, device=device, budget_s=budget_s, seed=seed,
                                           postmark_scratch=postmark_scratch, destroy_data_on=destroy_data_on,
                                           postmark_files=postmark_files, postmark_transactions=postmark_transactions,
                                           progress=progress, emulate=emulate, postmark_layouts=postmark_layouts,
                                           vm_timeout_s=vm_timeout_s)
        try:
            _write_report(report, fit, staging.write)
            staging.commit()
        except OutputWriteError as exc:  # the measurement is not lost: its calibration is kept
            kept = keep_unsaved(calibration_to_json(report.calibration), kind="calibration")
            raise OutputWriteError(exc.errno, f"{exc}; {kept.replace('the result', 'its calibration', 1)}") \
                from exc
    return report


# The space a report takes besides its calibration.json (the plots, the tables, the report), reserved
# before the run.
REPORT_EXTRA_BYTES = 2 << 20


def _measure_and_predict(out, *, preset, device, budget_s, seed, postmark_scratch, destroy_data_on, postmark_files,
                         postmark_transactions, progress, emulate=None, postmark_layouts=LAYOUTS, vm_timeout_s=3600.0):
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.simulated import simulated_disk
    from diskmodel.model.drive.presets import load_preset

    timings, notes = {}, []
    bar = _progress(6 if postmark_scratch or emulate is not None else 5, progress)
    ratios = check = orders = None
    try:
        # 1. calibrate
        started = time.perf_counter()
        what = f"emulated {emulate.name}" if emulate is not None else preset if device is None else device
        _step(bar, f"calibrating {'the simulated ' + what if device is None and emulate is None else what}")
        if emulate is not None:
            from diskmodel.calibrate.experiment_emulated import calibrate_emulated
            calibration = calibrate_emulated(emulate, budget_s=budget_s, seed=seed, notes=notes)
        elif device is None:
            from diskmodel.model._jit import compile_notice

            notice = compile_notice()
            if notice:
                bar.write(notice, file=sys.stderr)
            backend = simulated_disk(preset, seed=seed)
            calibration = calibrate(backend, budget_s=budget_s, seed=seed, progress=False)
            notes.append(f"calibrated the built-in simulated {preset} disk with the harness "
                         f"({calibration.device_time_s:.0f} s of simulated device time)")
        else:
            from diskmodel.calibrate.harness.device import open_backend

            with open_backend(device) as backend:
                calibration = calibrate(backend, budget_s=budget_s, seed=seed, progress=False, path=device)
            notes.append(f"calibrated {device} read-only ({calibration.device_time_s:.1f} s of device time)")
        timings["calibrate_s"] = time.perf_counter() - started
        bar.update()

        # 2. fit: the calibrated disk, or the preset where the device shows no mechanical seek
        _step(bar, "taking the disk from the calibration")
        if calibration.mechanical_seek:
            spec = load_preset(preset)
            # Timing reads from outside cannot see the drive's buffer size or its
            # interface rate (the media overlaps the bus); take them from the spec.
            disk = calibration.to_disk(name=f"calibrated {what}").evolve(
                cache_size_bytes=spec.cache_size_bytes,
                interface_rate_bytes_per_s=spec.interface_rate_bytes_per_s)
            notes.append(f"the model's disk is the calibration (seek curve, rotation, zones, overhead) with the "
                         f"buffer size and interface rate of the {preset} spec, which reads cannot measure")
        else:
            disk = load_preset(preset)
            notes.append("the calibrated device shows no mechanical seek curve (flash or virtual): the disk "
                         f"model does not apply to it, so the paper's predictions below use the {preset} preset; "
                         "the device's flat latency model is in calibration.json")
        bar.update()

        # 3-4. predict the paper's layouts and workloads, compare with Tables 4-6 (with --emulate, on a
        # thread while the VM's PostMark runs below: the model needs the CPU, the VM mostly waits on the drive)
        _step(bar, "fitting the paper's I/O parameters and predicting Tables 4-6")
        results = postmark_results()

        def predict():
            started = time.perf_counter()
            fit = fit_paper(disk, results)
            out = fit, predict_paper(fit, results), leave_one_test_out(disk, results)[0]
            timings["predict_s"] = time.perf_counter() - started
            return out

        from diskmodel.calibrate.experiment_emulated import Background
        predicted = Background(predict) if emulate is not None and not postmark_scratch else predict()
        bar.update()

        runs = []
        if postmark_scratch:
            _step(bar, f"running PostMark on {postmark_scratch}")
            runs = _real_postmark(postmark_scratch, destroy_data_on, postmark_files, postmark_transactions, notes)
            bar.update()
        elif emulate is not None:
            from diskmodel.calibrate.experiment_emulated import check_emulated_runs, postmark_on_emulated, ratio_table
            _step(bar, f"running PostMark on the emulated {emulate.name} (in the VM)")
            started = time.perf_counter()
            runs, twins = postmark_on_emulated(emulate, layouts=postmark_layouts, tests=TESTS, files=postmark_files,
                                               transactions=postmark_transactions, notes=notes,
                                               vm_timeout_s=vm_timeout_s)
            ratios = ratio_table(runs, results)
            timings["postmark_s"] = time.perf_counter() - started
            started = time.perf_counter()
            check, orders = check_emulated_runs(emulate, disk, runs, twins, notes)
            timings["check_s"] = time.perf_counter() - started
            bar.update()
        fit, comparison, held_out = predicted.result() if isinstance(predicted, Background) else predicted
        _step(bar, "done")
        bar.update()
    finally:
        bar.close()
    return ExperimentReport(out, calibration, disk, comparison, held_out, runs, notes, timings, ratios, check,
                            orders), fit


def _real_postmark(scratch, destroy_data_on, files, transactions, notes) -> list:
    from diskmodel.calibrate.bench.postmark import run_on_stack
    from diskmodel.model.stacks.stack import paper_stack
    from diskmodel.model.predictions.workload import postmark_preset

    runs = []
    for test in TESTS:
        config = postmark_preset(test)
        config = config.evolve(number_of_files=min(files, config.number_of_files),
                               transactions=min(transactions, config.transactions))
        summary = run_on_stack(paper_stack("native", fs_size_bytes=1 << 30), config, scratch=scratch,
                               destroy_data_on=destroy_data_on, repeats=1)
        runs.append((test, config, summary))
    notes.append(f"ran real PostMark (native ext3 on a loop device over {scratch}; the paper's workloads "
                 f"scaled to at most {files} files and {transactions} transactions)")
    return runs


def _write_report(report: ExperimentReport, fit, write) -> None:
    """Write the report's files with ``write(name, data)``, report.md last."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    calibration = report.calibration
    write("calibration.json", calibration_to_json(calibration).encode())
    predictions = pd.concat([report.comparison.assign(fit="all tests"),
                             report.held_out.assign(fit="test held out")], ignore_index=True)
    write("predictions.csv", predictions.to_csv(index=False).encode())
    # The fitted LVM mapping costs, for `diskmodel predict --costs FILE`.
    provenance = (f"`diskmodel experiment` (diskmodel.model.fit.paper.fit_paper) on Djordjevic & Timcenko (2015), "
                  f"Tables 4-6, tests {', '.join(fit.train_tests)}; disk: {report.disk.name}; "
                  f"{report.notes[0] if report.notes else ''}")
    write("lvm_costs.json", costs_to_json(fit, provenance=provenance).encode())

    def save_png(fig, name: str) -> None:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110)
        plt.close(fig)
        write(name, buffer.getvalue())


    fig, ax = plt.subplots(figsize=(6, 4))
    calibration.plot(ax=ax)
    fig.tight_layout()
    save_png(fig, "seek_curve.png")
    fig, ax = plt.subplots(figsize=(6, 4))
    calibration.plot_zones(ax=ax)
    fig.tight_layout()
    save_png(fig, "zone_rates.png")
    fig, ax = plt.subplots(figsize=(6, 5.5))
    _plot_throughput(report, ax=ax)
    fig.tight_layout()
    save_png(fig, "throughput.png")

    table = report.summary_table()
    lines = [
        "# diskmodel experiment",
        "",
        *[f"- {note}" for note in report.notes],
        "",
        "## Calibration",
        "",
        "```",
        calibration.summary(),
        "```",
        "",
        "![seek curve](seek_curve.png)",
        "",
        "![zone rates](zone_rates.png)",
        "",
        "## The model's disk",
        "",
        "```",
        report.disk.describe(),
        "```",
        "",
        "## Predicted against the paper (Djordjevic & Timcenko 2015, Tables 4-6)",
        "",
        "Fitted on the paper's cells: the I/O path on the native cells, the LVM mapping costs "
        "(eq. 12) per LVM layout. 'Test held out' fits on the two other tests only and predicts the test.",
        "",
        _markdown_table(table),
        "",
        f"Median |error|: {report.median_fitted_error_pct:.1f} % fitted on all tests, "
        f"{report.median_held_out_error_pct:.1f} % with the test held out.",
        "",
        "![predicted against measured](throughput.png)",
        "",
        "### Fitted parameters",
        "",
        "```",
        fit.summary(),
        "```",
    ]
    if report.emulated_check is not None:
        from diskmodel.calibrate.experiment_emulated import check_markdown

        lines += ["", check_markdown(report.emulated_check, report.emulated_orderings, _markdown_table)]
    if report.emulated_ratios is not None:
        lines += ["", "## PostMark on the emulated drive: each layout against native, beside the paper", "",
                  "Rates by the outside clock (PostMark's data over its wall time). Under TCG the guest's CPU is "
                  "emulated while the drive keeps its own time: compare the ratios and orderings.", "",
                  _markdown_table(report.emulated_ratios, floatfmt=".3f"), ""]
    if report.postmark_runs:
        lines += ["", "## Real PostMark runs on this machine", ""]
        for test, config, summary in report.postmark_runs:
            lines += [f"### {test}: {config.number_of_files} files, {config.transactions} transactions", "",
                      "```", summary.summary(), "```", ""]
    lines += ["", "Timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in report.timings_s.items())]
    write("report.md", ("\n".join(lines) + "\n").encode())


def format_summary(report: ExperimentReport) -> str:
    """The summary table printed at the end of the main job."""
    table = report.summary_table()
    return (table.to_string(index=False, float_format=lambda v: f"{v:.2f}")
            + f"\nmedian |error| fitted {report.median_fitted_error_pct:.1f} %, "
              f"held out {report.median_held_out_error_pct:.1f} %"
            + f"\nreport: {report.out_dir / 'report.md'}")
