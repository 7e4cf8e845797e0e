"""How well do the two seek models fit DiskSim's measured seek curves?

For every measured seek curve of the bundled DiskSim drives, data/disksim (the seven ``.seek``
files of atlas10k, atlas_III, barracuda, cheetah4LP, hp_c2490a, ibm18es and
maxtor300g, and G4_4TB's ``.seeks``), read with
:func:`diskmodel.data.disksim.model_file.read_seek_table`
(maxtor300g's plain ``.seek`` lacks its header line, so its read curve comes
from ``maxtor300g_dual.seek``; hp_c2247a has an HPL formula, not a measured
curve), and for each:

* the two-piece curve of eq. (7), knee chosen by the data, continuous at the
  knee, fitted robustly (:func:`diskmodel.model.fit.fit_two_piece`, RLM):
  its in-sample RMS residual, and its RMS error on held-out points (10-fold
  cross-validation, the knee profiled again in every fold); and the in-sample
  RMS of the free form (the two pieces fitted apart, "free rms");
* the measured-table model (monotone PCHIP through the points,
  :class:`diskmodel.model.TableSeek`): in-sample it passes through every point
  (RMS 0 by construction), so its RMS error is given on held-out points
  (the same folds; held-out points beyond the last training point are skipped).

The last line is ``median_two_piece_cv_rms_ms: X``, the median over the
drives of the two-piece curve's held-out RMS error.  Writes
``benchmarks/results/seek_fits.json`` (see ``_artifact.py``).

    .venv/bin/python benchmarks/seek_fits.py [--folds 10]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DISKSIM = ROOT / "data" / "disksim"


def cross_validated(d, t, folds, rng):
    from diskmodel.model.fit import fit_two_piece
    from diskmodel.model import TableSeek

    fold = rng.permutation(d.size) % folds
    err_two, err_table = [], []
    for k in range(folds):
        test, train = fold == k, fold != k
        fit = fit_two_piece(d[train], t[train], method="rlm", distance_unit="cylinders")
        err_two.append(fit.predict(d[test]) - t[test])
        table = TableSeek(d[train], t[train])
        inside = test & (d <= d[train].max())
        err_table.append(table.seek_time_s(d[inside]) - t[inside])
    rms = lambda e: float(np.sqrt(np.mean(np.concatenate(e) ** 2)))
    return rms(err_two), rms(err_table)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=10)
    add_results_dir_option(parser)
    args = parser.parse_args(argv)
    if not DISKSIM.is_dir():
        print(f"DiskSim data folder {DISKSIM} is absent", file=sys.stderr)
        return 1
    from diskmodel.model.fit import fit_two_piece
    from diskmodel.data.disksim.model_file import read_seek_table

    # One curve per drive folder; maxtor300g's plain .seek lacks the header line, so
    # its read curve is taken from maxtor300g_dual.seek (the same read column).
    files = []
    for folder in sorted(p for p in DISKSIM.iterdir() if p.is_dir()):
        candidates = sorted(folder.glob("*.seek*"), key=lambda p: p.name.endswith("_dual.seek"))
        for candidate in candidates:
            try:
                read_seek_table(candidate)
            except ValueError:
                continue
            files.append(candidate)
            break
    print(f"{'disk':12s} {'file':28s} {'points':>6s} {'max d':>7s} {'knee':>7s} {'2-piece rms':>11s} "
          f"{'2-piece cv':>10s} {'free rms':>9s} {'table cv':>9s}   (ms)")
    rng = np.random.default_rng(0)
    rows = []
    for path in files:
        table = read_seek_table(path)
        d = table.distance_cylinders.astype(float)
        t = table.read_time_s
        fit = fit_two_piece(d, t, method="rlm", distance_unit="cylinders")
        free = fit_two_piece(d, t, method="rlm", continuous=False, distance_unit="cylinders")
        cv_two, cv_table = cross_validated(d, t, args.folds, rng)
        print(f"{path.parent.name:12s} {path.name:28s} {d.size:6d} {int(d.max()):7d} "
              f"{fit.params['knee_cylinders']:7.0f} "
              f"{fit.diagnostics['rms_s'] * 1e3:11.4f} {cv_two * 1e3:10.4f} {free.diagnostics['rms_s'] * 1e3:9.4f} "
              f"{cv_table * 1e3:9.4f}")
        rows.append({"disk": path.parent.name, "file": path.name, "points": int(d.size), "max_distance": int(d.max()),
                     "knee": float(fit.params["knee_cylinders"]), "two_piece_rms_ms": fit.diagnostics["rms_s"] * 1e3,
                     "two_piece_cv_rms_ms": cv_two * 1e3, "free_rms_ms": free.diagnostics["rms_s"] * 1e3,
                     "table_cv_rms_ms": cv_table * 1e3})
    median = lambda key: statistics.median(r[key] for r in rows)
    n = len(rows)
    figures = {
        "median_two_piece_cv_rms_ms": figure(
            median("two_piece_cv_rms_ms"), "ms",
            f"two-piece seek curve (eq. 7), held-out RMS error, median over {n} DiskSim drives",
            decimals=4, headline=True),
        "median_table_cv_rms_ms": figure(
            median("table_cv_rms_ms"), "ms", f"measured-table seek model, held-out RMS error, median over {n} drives",
            decimals=4, headline=True),
        "median_two_piece_rms_ms": figure(median("two_piece_rms_ms"), "ms",
                                          f"two-piece seek curve, in-sample RMS residual, median over {n} drives",
                                          decimals=4),
        "max_two_piece_cv_rms_ms": figure(max(r["two_piece_cv_rms_ms"] for r in rows), "ms",
                                          "two-piece seek curve, held-out RMS error, worst drive", decimals=4),
        "max_table_cv_rms_ms": figure(max(r["table_cv_rms_ms"] for r in rows), "ms",
                                      "measured-table seek model, held-out RMS error, worst drive", decimals=4),
    }
    write_result("seek_fits", figures, options=options_of(parser, args), results_dir=args.results_dir,
                 details={"drives": rows})
    print(f"median_two_piece_cv_rms_ms: {median('two_piece_cv_rms_ms'):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
