"""The LVM paper's experiment as library functions (Djordjevic & Timcenko 2015, section 4).

The paper measured PostMark read and write throughput for three workloads
(Tests 1-3, Tables 4-6) on three layouts of a WD800BD (native ext3, LVM-1,
LVM-2; Tables 1-3): 18 cells. What is fitted is fitted on the training
tests only; the model predicts the rest:

1. on the training tests' native cells, the I/O-path parameters the paper
   does not report (:func:`~diskmodel.model.fit.fit_io_parameters`):
   by default the file-data path rate (``FileSystem.file_data_rate_bytes_per_s``:
   a host-side cost per byte of file data, which metadata and journal
   blocks do not pay) and the CPU time per file operation;
2. LVM's cost, one of two ways:

   * by mechanism (*dm_cost* given, what ``benchmarks/djordjevic_loo.py``
     does): nothing is fitted per layout.  Device-mapper's measured cost
     per bio times the bios the I/O path sends it
     (:mod:`diskmodel.model.stacks.dm_cost`), on top of the extent map's
     placement on the disk (seeks between PVs, zone rates), which
     :class:`~diskmodel.model.stacks.volume_on_disk.VolumeOnDisk` gives;
   * the paper's form (*dm_cost* None, what ``diskmodel experiment`` ships
     for ``predict --fitted``): per LVM layout, on that layout's training
     cells with step 1 held, the mapping costs MD_mapping and FB_mapping
     of eq. (12) (:func:`~diskmodel.model.fit.fit_lvm_mapping`).

Fixed in advance (:data:`DEFAULT_FILESYSTEM`, :data:`DEFAULT_CACHE`): the
pipeline model ``FileSystem(overlapped_writeback=True)`` (PostMark never
calls fsync, so write-back overlaps the run, which takes as long as its
busiest stage) and a 1.5 GiB page cache (a 2 GiB desktop of 2009; the paper
does not say). benchmarks/djordjevic_loo.py explains the choice and reports
the sensitivity to it.

:func:`leave_one_test_out` holds each test out in turn and predicts its six
cells; :func:`fit_paper` fits on any set of tests and :func:`predict_paper`
predicts cells with such a fit. The measured values are given as a frame
(:func:`diskmodel.data.tables.postmark_results`), so this module stays pure.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..filesystems.filesystem import FileSystem, PageCache
from ..stacks.stack import paper_stack
from ..stacks.dm_cost import DeviceMapperCost, as_lvm_mapping, dm_bios
from ..stacks.lvm_mapping import LvmMapping
from . import Case, PostMarkFit, apply_io_parameters, fit_io_parameters, fit_lvm_mapping
from ..predict import predict
from ..predictions.workload import expected_counts, postmark_preset

TESTS = ("test1", "test2", "test3")
LAYOUTS = ("native", "lvm1", "lvm2")
DEFAULT_FILESYSTEM = FileSystem(overlapped_writeback=True)
DEFAULT_CACHE = PageCache(size_bytes=1.5 * 2**30)
DEFAULT_IO_PARAMETERS = ("file_data_rate_bytes_per_s", "cpu_per_file_operation_s")
DEFAULT_IO_INITIAL = {"file_data_rate_bytes_per_s": 2.0e7, "cpu_per_file_operation_s": 0.0}
DEFAULT_LVM_PARAMETERS = ("md_mapping_s", "fb_mapping_s")


def _measured(results) -> dict:
    """{(test, layout, operation): bytes/s} from a postmark_results() frame."""
    needed = {"test", "layout_key", "operation", "throughput_bytes_per_s"}
    missing = needed - set(results.columns)
    if missing:
        raise ValueError(f"results lacks columns {sorted(missing)} (use diskmodel.data.tables.postmark_results())")
    return {(r.test, r.layout_key, r.operation): float(r.throughput_bytes_per_s) for r in results.itertuples()}


def _check_tests(name: str, tests) -> tuple[str, ...]:
    tests = tuple(tests)
    if not tests or any(t not in TESTS for t in tests):
        raise ValueError(f"{name} must be a non-empty subset of {TESTS} (got {tests!r})")
    return tests


@dataclass(frozen=True)
class PaperFit:
    """What was fitted on the training tests."""

    train_tests: tuple
    disk: object
    filesystem: FileSystem
    cache: PageCache
    mappings: dict
    io_fit: PostMarkFit | None
    lvm_fits: dict
    dm_cost: DeviceMapperCost | None = None

    def summary(self) -> str:
        lines = [f"fitted on {', '.join(self.train_tests)}", "I/O path (native cells):",
                 self.io_fit.summary() if self.io_fit is not None else "nothing fitted"]
        if self.dm_cost is not None:
            lines.append(f"LVM: device-mapper's cost per bio {self.dm_cost.request_cost_s:.3g} s (measured, not fitted)")
        for name, fit in self.lvm_fits.items():
            lines += [f"{name} mapping costs:", fit.summary()]
        return "\n".join(lines)


def fit_paper(disk, results, train_tests=TESTS, *, filesystem: FileSystem | None = None,
              cache: PageCache | None = None, io_parameters=DEFAULT_IO_PARAMETERS, io_initial=None,
              lvm_parameters=DEFAULT_LVM_PARAMETERS, cache_starts: int = 4,
              dm_cost: DeviceMapperCost | None = None) -> PaperFit:
    """Fit the I/O path and the LVM mapping costs on *train_tests*' cells.

    Parameters
    ----------
    disk : Disk
        The drive (the ``wd800bd`` preset, or a calibrated disk).
    results : pandas.DataFrame
        :func:`diskmodel.data.tables.postmark_results` (or measurements of the
        same form).
    train_tests : sequence of "test1", "test2", "test3"
    filesystem, cache : default :data:`DEFAULT_FILESYSTEM`, :data:`DEFAULT_CACHE`
    io_parameters : names for :func:`~diskmodel.model.fit.fit_io_parameters`
        (empty: fit none).
    lvm_parameters : two names of ``LvmMapping.BOUNDS`` for
        :func:`~diskmodel.model.fit.fit_lvm_mapping` (the paper's form; not
        used with *dm_cost*).
    dm_cost : DeviceMapperCost, optional
        Device-mapper's measured cost per bio: LVM's cost by mechanism
        (:func:`diskmodel.model.stacks.dm_cost.as_lvm_mapping`), nothing fitted
        per layout; default None, the per-layout fit of eq. (12).
    """
    train = _check_tests("train_tests", train_tests)
    filesystem = DEFAULT_FILESYSTEM if filesystem is None else filesystem
    cache = DEFAULT_CACHE if cache is None else cache
    io_initial = {**DEFAULT_IO_INITIAL, **(io_initial or {})}
    measured = _measured(results)
    layouts = {name: paper_stack(name, disk=disk).volume for name in LAYOUTS}
    counts = {t: expected_counts(postmark_preset(t)) for t in train}

    def case(test, layout, d, fs, c, mapping=None):
        return Case(d, layouts[layout], counts[test],
                    read_throughput_bytes_per_s=measured[(test, layout, "read")],
                    write_throughput_bytes_per_s=measured[(test, layout, "write")],
                    filesystem=fs, cache=c, lvm_mapping=mapping or LvmMapping(),
                    label=f"{test}/{layout}")

    io_fit = None
    tuned_disk, tuned_fs, tuned_cache = disk, filesystem, cache
    if io_parameters:
        io_fit = fit_io_parameters([case(t, "native", disk, filesystem, cache) for t in train],
                                   parameters=tuple(io_parameters),
                                   initial={k: v for k, v in io_initial.items() if k in io_parameters},
                                   cache_starts=cache_starts)
        tuned_disk, tuned_fs, tuned_cache = apply_io_parameters(disk, filesystem, cache, io_fit.params.to_dict())
    if dm_cost is not None:
        if not isinstance(dm_cost, DeviceMapperCost):
            raise ValueError(f"dm_cost must be a DeviceMapperCost (got {type(dm_cost).__name__})")
        mappings = {name: as_lvm_mapping(layouts[name], dm_cost) for name in LAYOUTS}
        return PaperFit(train, tuned_disk, tuned_fs, tuned_cache, mappings, io_fit, {}, dm_cost)
    mappings = {"native": LvmMapping()}
    lvm_fits = {}
    for name in ("lvm1", "lvm2"):
        fit = fit_lvm_mapping([case(t, name, tuned_disk, tuned_fs, tuned_cache) for t in train],
                              parameters=tuple(lvm_parameters))
        lvm_fits[name] = fit
        mappings[name] = LvmMapping(**fit.params.to_dict())
    return PaperFit(train, tuned_disk, tuned_fs, tuned_cache, mappings, io_fit, lvm_fits)


def predict_paper(fit: PaperFit, results, tests=TESTS):
    """Predicted against measured cells of *tests* with a :class:`PaperFit`.

    Returns a frame with columns test, layout, operation, measured_bytes_per_s,
    predicted_bytes_per_s, error_pct (predicted / measured - 1), held_out
    (the test was not among the fit's training tests), dm_bios (the bios
    device-mapper remaps, :func:`~diskmodel.model.stacks.dm_cost.dm_bios`),
    lvm_placement_s and lvm_mapping_s (T_LVM_MO's parts: the extent map's
    placement on the disk, and the mapping costs) and the prediction's terms
    T_DO ... T_LVM_MO [s].
    """
    import pandas as pd

    tests = _check_tests("tests", tests)
    measured = _measured(results)
    rows = []
    for test in tests:
        counts = expected_counts(postmark_preset(test))
        for name in LAYOUTS:
            stack = paper_stack(name, disk=fit.disk, filesystem=fit.filesystem)
            p = predict(stack, counts, fit.cache, fit.mappings[name])
            bios = dm_bios(stack.volume, p.io_counts)["bios"]
            lvm = {"lvm_placement_s": p.lvm_parts["mechanistic_s"],
                   "lvm_mapping_s": p.terms["T_LVM_MO"] - p.lvm_parts["mechanistic_s"]}
            for op, value in (("read", p.read_throughput_bytes_per_s), ("write", p.write_throughput_bytes_per_s)):
                truth = measured[(test, name, op)]
                rows.append({"test": test, "layout": name, "operation": op,
                             "measured_bytes_per_s": truth, "predicted_bytes_per_s": value,
                             "error_pct": 100.0 * (value / truth - 1.0),
                             "held_out": test not in fit.train_tests, "dm_bios": bios, **lvm, **p.terms})
    return pd.DataFrame(rows)


def leave_one_test_out(disk, results, **fit_options):
    """Hold each test out, fit on the other two, predict its six cells.

    *fit_options* go to :func:`fit_paper`. Returns (frame of the 18 held-out
    cells as :func:`predict_paper` gives them, {held-out test: PaperFit}).
    The median of ``abs(error_pct)`` is the check's figure.
    """
    import pandas as pd

    frames, fits = [], {}
    for held in TESTS:
        fit = fit_paper(disk, results, [t for t in TESTS if t != held], **fit_options)
        fits[held] = fit
        frames.append(predict_paper(fit, results, [held]))
    return pd.concat(frames, ignore_index=True), fits


def median_abs_error_pct(frame) -> float:
    return float(np.median(np.abs(frame["error_pct"].to_numpy())))
