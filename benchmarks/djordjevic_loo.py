"""Leave-one-test-out check of the model against Djordjevic & Timcenko (2015), Tables 4-6.

    python benchmarks/djordjevic_loo.py

The paper measured PostMark read and write throughput for three workloads
(Tests 1-3) on three layouts (native ext3, LVM-1, LVM-2) of a WD800BD:
18 cells.  For each held-out test h, using only the other two tests:

1. Fitted on the training tests' *native* cells (4 cells): the two I/O-path
   parameters the paper does not report, the effective host transfer rate
   (T_I of eq. 3, ``Disk.interface_rate_bytes_per_s``) and the page cache
   size (P_H of eq. 2), by ``fit_io_parameters``.
2. Fitted per LVM layout on that layout's training cells (4 cells), with
   step 1's parameters held: MD_mapping and FB_mapping (eq. 12, >= 0), by
   ``fit_lvm_mapping``.
3. Predicted, never fitted: all six cells of test h (native, LVM-1, LVM-2;
   read and write).

Everything else is fixed in advance: the ``wd800bd`` preset, the paper's
layouts (``paper_layout``), ext3 ``data=ordered`` with 4 KiB blocks and
PostMark's defaults, and the workloads of ``postmark_preset`` (transaction
counts inferred from the paper's volumes, not from its throughputs).
Table 6 is read as MB/s (printed KB/s; see data/djordjevic2015/README.md).

Per-cell error = predicted / measured - 1, in percent, for the held-out
cells only; the last line is the median of their absolute values over all
18 cells.

Result (2026-11-22): median_cell_error_pct 45.7, above the 20 % target.
Native cells: +26 % (Test 1), +71 % (Test 2), -26 % (Test 3).  Test 2 held
out is predicted from Tests 1 and 3, which are both byte-bound (their
elapsed times scale with the bytes moved) and so say little about the
per-operation cost that dominates Test 2.  LVM cells: 4 of 12 within 20 %.
The paper's LVM slowdowns do not follow any fixed per-I/O cost: LVM-1 costs
+347 s (Test 1), +77 s (Test 2), +281 s (Test 3) over native, while Test 3
moves three times Test 1's data; LVM-2 costs +806 s, +512 s, +3494 s.  Two
coefficients fitted on two tests therefore cannot carry to the third.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from diskmodel.data.tables import postmark_results
from diskmodel.model.filesystem import FileSystem, PageCache
from diskmodel.model.layouts import LvmMapping, paper_layout
from diskmodel.model.predict import Case, fit_io_parameters, fit_lvm_mapping, predict
from diskmodel.model.presets import load_preset
from diskmodel.model.workload import PAPER_VOLUMES_BYTES, expected_counts, postmark_preset

TESTS = ("test1", "test2", "test3")
LAYOUTS = ("native", "lvm1", "lvm2")


def main() -> int:
    started = time.perf_counter()
    disk = load_preset("wd800bd")
    fs = FileSystem()
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
        d, cache = disk, PageCache()
        if io is not None:
            d = disk.evolve(interface_rate_bytes_per_s=io["interface_rate_bytes_per_s"])
            cache = PageCache(size_bytes=io["page_cache_bytes"])
        return Case(d, layouts[layout_name], counts[test],
                    read_throughput_bytes_per_s=measured[(test, layout_name, "read")],
                    write_throughput_bytes_per_s=measured[(test, layout_name, "write")],
                    filesystem=fs, cache=cache, lvm_mapping=mapping or LvmMapping(),
                    label=f"{test}/{layout_name}")

    rows = []
    for held in TESTS:
        train = [t for t in TESTS if t != held]
        io_fit = fit_io_parameters([case(t, "native") for t in train])
        io = io_fit.params
        print(f"\nheld out {held}; trained on {', '.join(train)}")
        print(f"  I/O path: host rate {io['interface_rate_bytes_per_s'] / 1e6:.2f} MB/s, "
              f"page cache {io['page_cache_bytes'] / 2**20:.0f} MiB (train rms {np.sqrt(np.mean(io_fit.residuals**2)):.3f})")
        mappings = {"native": LvmMapping()}
        for name in ("lvm1", "lvm2"):
            fit = fit_lvm_mapping([case(t, name, io=io) for t in train])
            mappings[name] = LvmMapping(**fit.params)
            print(f"  {name}: MD_mapping {fit.params['md_mapping_s'] * 1e3:.4f} ms/metadata I/O, "
                  f"FB_mapping {fit.params['fb_mapping_s'] * 1e6:.3f} us/data block "
                  f"(train rms {np.sqrt(np.mean(fit.residuals**2)):.3f})")
        tuned_disk = disk.evolve(interface_rate_bytes_per_s=io["interface_rate_bytes_per_s"])
        cache = PageCache(size_bytes=io["page_cache_bytes"])
        for name in LAYOUTS:
            p = predict(tuned_disk, layouts[name], fs, counts[held], cache, mappings[name])
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
