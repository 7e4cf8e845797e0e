"""Leave-one-test-out check of the model against Djordjevic & Timcenko (2015), Tables 4-6.

    python benchmarks/djordjevic_loo.py

The paper measured PostMark read and write throughput for three workloads
(Tests 1-3) on three layouts (native ext3, LVM-1, LVM-2) of a WD800BD:
18 cells.  For each held-out test h, using only the other two tests:

1. Fitted on the training tests' *native* cells (4 cells), by
   ``fit_io_parameters``: the effective host transfer rate
   ``Disk.interface_rate_bytes_per_s`` (T_I of eq. 3, the link stage) and
   ``FileSystem.cpu_per_file_operation_s`` (the application stage; starts
   at 0 and is reported with its standard error, nan when not identified).
2. Fitted per LVM layout on that layout's training cells (4 cells), with
   step 1's parameters held: MD_mapping and FB_mapping (eq. 12, >= 0, per
   metadata block and per data block reaching the device mapper, i.e. per
   4 KiB bio in ext3's write-back of 2.6.27), by ``fit_lvm_mapping``.
3. Predicted, never fitted: all six cells of test h (native, LVM-1, LVM-2;
   read and write).

Model structure (fixed in advance, not fitted): the pipeline model
``FileSystem(overlapped_writeback=True)``.  PostMark never calls fsync, so
writes reach the disk asynchronously while the application runs; the run
takes as long as its busiest stage, max(application, media, link), and the
LVM mapping cost is host-side work added to the link stage (see
``FileSystem``).  Why: Tests 1 and 3 take 548 s and 1682 s natively, in
proportion to the bytes they write (1.94 GB at 3.55 MB/s, 5.88 GB at 3.50
MB/s, 1.4 % apart), although Test 3 has fewer operations; a serial sum of
positioning and transfer times cannot be proportional to bytes in both.
Page cache: 1.5 GiB (a 2 GiB desktop of 2009; the paper does not say),
enough to hold every test's files, so reads hit and only write-back reaches
the disk, as that proportionality indicates.  Everything else is fixed in
advance: the ``wd800bd`` preset, the paper's layouts (``paper_layout``),
ext3 ``data=ordered`` with 4 KiB blocks and PostMark's defaults, and the
workloads of ``postmark_preset`` (transaction counts inferred from the
paper's volumes, not from its throughputs).  Table 6 is read as MB/s
(printed KB/s; see data/djordjevic2015/README.md).  ``LOO_CACHE_MIB``
overrides the page cache for the sensitivity check below.

Per-cell error = predicted / measured - 1, in percent, for the held-out
cells only; the last line is the median of their absolute values over all
18 cells.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from diskmodel.data.tables import postmark_results
from diskmodel.model.filesystem import FileSystem, PageCache
from diskmodel.model.layouts import LvmMapping, paper_layout
from diskmodel.model.predict import Case, apply_io_parameters, fit_io_parameters, fit_lvm_mapping, predict
from diskmodel.model.presets import load_preset
from diskmodel.model.workload import PAPER_VOLUMES_BYTES, expected_counts, postmark_preset

TESTS = ("test1", "test2", "test3")
PAGE_CACHE_BYTES = float(os.environ.get("LOO_CACHE_MIB", 1536)) * 2**20
IO_PARAMETERS = ("interface_rate_bytes_per_s", "cpu_per_file_operation_s")
IO_INITIAL = {"interface_rate_bytes_per_s": 2.0e7, "cpu_per_file_operation_s": 0.0}
LAYOUTS = ("native", "lvm1", "lvm2")


def main() -> int:
    started = time.perf_counter()
    disk = load_preset("wd800bd")
    fs = FileSystem(overlapped_writeback=True)
    page_cache = PageCache(size_bytes=PAGE_CACHE_BYTES)
    table = postmark_results()
    measured = {(r.test, r.layout_key, r.operation): r.throughput_bytes_per_s for r in table.itertuples()}
    counts = {t: expected_counts(postmark_preset(t)) for t in TESTS}
    layouts = {name: paper_layout(name, disk.capacity_bytes) for name in LAYOUTS}

    print("Workloads (transactions inferred from the paper's volumes):")
    for t in TESTS:
        c = counts[t]
        v = PAPER_VOLUMES_BYTES[t]
        print(f"  {t}: {c.config.number_of_files} files {c.config.min_file_size_bytes}-"
              f"{c.config.max_file_size_bytes} B, {c.config.transactions} transactions; model volumes vs paper: "
              f"read {100 * (c.total.bytes_read / v['bytes_read'] - 1):+.1f} %, "
              f"written {100 * (c.total.bytes_written / v['bytes_written'] - 1):+.1f} %")

    def case(test, layout_name, mapping=None, io=None):
        d, f, cache = disk, fs, page_cache
        if io is not None:
            d, f, cache = apply_io_parameters(disk, fs, page_cache, io)
        return Case(d, layouts[layout_name], counts[test],
                    read_throughput_bytes_per_s=measured[(test, layout_name, "read")],
                    write_throughput_bytes_per_s=measured[(test, layout_name, "write")],
                    filesystem=f, cache=cache, lvm_mapping=mapping or LvmMapping(),
                    label=f"{test}/{layout_name}")

    rows = []
    for held in TESTS:
        train = [t for t in TESTS if t != held]
        io_fit = fit_io_parameters([case(t, "native") for t in train], parameters=IO_PARAMETERS,
                                   initial=IO_INITIAL)
        io = io_fit.params
        print(f"\nheld out {held}; trained on {', '.join(train)}")
        print(f"  I/O path: host rate {io['interface_rate_bytes_per_s'] / 1e6:.3f} MB/s "
              f"(se {io_fit.bse['interface_rate_bytes_per_s'] / 1e6:.3f}), CPU "
              f"{io['cpu_per_file_operation_s'] * 1e3:.4f} ms/file operation "
              f"(se {io_fit.bse['cpu_per_file_operation_s'] * 1e3:.4f}; nan: not identified) "
              f"(train rms {np.sqrt(np.mean(io_fit.residuals**2)):.3f})")
        mappings = {"native": LvmMapping()}
        for name in ("lvm1", "lvm2"):
            fit = fit_lvm_mapping([case(t, name, io=io) for t in train])
            mappings[name] = LvmMapping(**fit.params)
            print(f"  {name}: MD_mapping {fit.params['md_mapping_s'] * 1e3:.4f} ms/metadata I/O, "
                  f"FB_mapping {fit.params['fb_mapping_s'] * 1e6:.3f} us/data block "
                  f"(train rms {np.sqrt(np.mean(fit.residuals**2)):.3f})")
        tuned_disk, tuned_fs, cache = apply_io_parameters(disk, fs, page_cache, io)
        for name in LAYOUTS:
            p = predict(tuned_disk, layouts[name], tuned_fs, counts[held], cache, mappings[name])
            for op, value in (("read", p.read_throughput_bytes_per_s), ("write", p.write_throughput_bytes_per_s)):
                truth = measured[(held, name, op)]
                rows.append((held, name, op, truth, value, 100.0 * (value / truth - 1.0), p))

    unit = {"test1": ("MB/s", 2**20), "test2": ("KB/s", 2**10), "test3": ("MB/s", 2**20)}
    print("\nPer-cell errors (held-out predictions; Table 4 MB/s, Table 5 KB/s, Table 6 read as MB/s)")
    print(f"{'test':6} {'layout':7} {'op':5} {'measured':>10} {'predicted':>10} {'unit':5} {'error %':>8}"
          f"   breakdown of the prediction [s]")
    for held, name, op, truth, value, err, p in rows:
        label, scale = unit[held]
        terms = " ".join(f"{k}={v:.0f}" for k, v in p.terms.items())
        print(f"{held:6} {name:7} {op:5} {truth / scale:10.2f} {value / scale:10.2f} {label:5} {err:+8.1f}   "
              f"{terms if op == 'read' else ''}")
    errors = np.array([abs(r[5]) for r in rows])
    print(f"\nnative cells: median |error| {np.median(errors[[r[1] == 'native' for r in rows]]):.1f} %; "
          f"LVM cells: {np.median(errors[[r[1] != 'native' for r in rows]]):.1f} %; "
          f"run time {time.perf_counter() - started:.1f} s")
    print(f"median_cell_error_pct: {np.median(errors):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
