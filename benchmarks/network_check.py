"""NBD and NFS measured in the throwaway VM at several network settings, against the model.

    python benchmarks/network_check.py [--settings 1000:0.2,100:2,10:20] [--rounds 3]
        [--nbd-bytes 4M] [--nfs-files 20] [--nfs-file-size 64K]

Issue 15, "Network layers".  THE VM RUNS UNDER TCG (qemu's software CPU
emulation): every time here measures an emulator, not a network or a disk,
so this check reports orderings and ratios, and says so in every report.

Method.  One VM run per repeat (:func:`diskmodel.calibrate.bench.network.run_network_bench`)
measures, on a veth pair between two network namespaces of the guest,
unshaped and then at each ``--settings`` (rate in Mb/s : round trip in ms,
tc netem + tbf with tbf's usual bucket, which the model is told): NBD (nbd-server exporting a file on ext4; the kernel's
nbd-client; sequential O_DIRECT ``dd`` reads and writes of 4 KiB, 64 KiB
and 1 MiB requests, one at a time) and NFS (the kernel server and client,
versions 3 and 4.2, sync and async exports; per file a write phase, a
read phase with a cold client cache, a remove phase).

The settings are measured in *rounds*: all of them one after the other,
then again, so that the host's changing load (this host is shared) falls
on every setting alike; each cell is the median over the rounds.

What the model is given.  The unshaped run stands for the emulator's own
costs, and nothing from a shaped run enters the model:

* NBD: the per-request time t(S) = a + S / c of the unshaped reads
  (and, apart, writes) of the requests up to 128 KiB, fitted by least
  squares, becomes the device's ``client_overhead_s`` (a: everything per
  request on the guest's one CPU, client and server alike) and
  ``copy_rate_bytes_per_s`` (c); the export's blocks are in the server's
  page cache (``server_cache_hit`` 1: the export file was just written, and
  the guest holds it).  A 1 MiB request is eight 128 KiB requests in
  flight (the guest's ``max_sectors_kb``).  At each setting the model
  (:class:`diskmodel.model.stacks.network.NbdDevice` on the timed I/O path,
  :func:`diskmodel.model.predictions.results.predict_block_job`) predicts with the
  setting's Network (the tc values, not the measured ping).
* NFS: per (version, export, phase), the unshaped per-file time less the
  model's own unshaped time (zero per-RPC overheads, the virtio disk as
  the flat ``GUEST_DISK`` for a sync export's commits) is the emulator's per-file
  cost, held fixed; at each setting the prediction is that plus the
  phase's file operations on the NFS stack, timed on the I/O path
  (:mod:`diskmodel.model.iopath.network`) at the setting's Network.

Reported per cell (setting x layer x operation): measured and predicted
throughput (bytes/s) and their ratio; per layer and operation whether the
settings rank the same measured as predicted; the ratio of each setting's
throughput to the unshaped one, measured and predicted; the ping round
trip the guest saw.  Headline: ``median_abs_error_pct`` over the shaped
cells (against ``TARGET_PCT``), then the share of orderings that agree.  Writes
``benchmarks/results/network_check.json`` (``_artifact.py``).  Everything
the VM made is torn down by its script's trap and the VM teardown (also on
Ctrl-C).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from types import SimpleNamespace
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

from diskmodel.calibrate.bench.network import NBD_MAX_REQUEST_BYTES, run_network_bench, shaped  # noqa: E402
from diskmodel.model.predictions.block_workloads import FioJob  # noqa: E402
from diskmodel.model.drive.drives import PresetDrive  # noqa: E402
from diskmodel.model.iopath.fileops import FileOps, Kind, metadata  # noqa: E402
from diskmodel.model.iopath.timing import FlatDrive  # noqa: E402
from diskmodel.model.stacks.network import Network, NbdDevice, NfsMount  # noqa: E402
from diskmodel.model.predictions.results import predict_block_job, predict_stack  # noqa: E402
from diskmodel.model.stacks.stack import FileSystemNode, Stack  # noqa: E402
from diskmodel.model.units import GIB, KIB, MIB  # noqa: E402
from diskmodel.model.stacks.volumes import Partition  # noqa: E402

EMULATOR_NOTE = ("NOTE: timings measure an emulator (qemu TCG, software CPU emulation), not a network or a disk: "
                 "read the orderings and ratios, not the absolute rates")
UNSHAPED = Network(None, 0.0)
#: The median |error| over the shaped cells this check aims at [%].
TARGET_PCT = 25.0
#: Two settings' orderings count where the model predicts one this many times the other (smaller
#: differences drown in the emulator's noise).
RESOLVED_RATIO = 1.25
#: The guest's virtio scratch disk as the model sees it: flat latency (the host's flash behind it).
GUEST_DISK = FlatDrive(60e-6, 1e9, 4 * GIB)
DRIVES = {"vda": GUEST_DISK}
SERVER_VOLUME = Partition(0, 1 * GIB, "/dev/vda", disk="vda")


def _size(text: str) -> int:
    units = {"K": KIB, "M": MIB, "G": GIB}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)


def _settings(text: str) -> list[Network]:
    out = []
    for item in text.split(","):
        rate, _, rtt = item.partition(":")
        try:
            out.append(shaped(float(rate) * 1e6 / 8, float(rtt) * 1e-3))
        except ValueError as exc:
            raise SystemExit(f"network_check: error: --settings {item!r}: {exc} (give Mb/s:ms)") from None
    return out


def _nbd_job(size: int, is_write: bool) -> FioJob:
    """dd's requests of *size* one at a time (above 128 KiB: its pieces in flight at once)."""
    rw = "write" if is_write else "read"
    if size <= NBD_MAX_REQUEST_BYTES:
        return FioJob(rw, size, 16 * size, end_fsync=False)
    return FioJob(rw, NBD_MAX_REQUEST_BYTES, 16 * size, iodepth=size // NBD_MAX_REQUEST_BYTES, end_fsync=False)


def nbd_devices(per_op: dict) -> dict:
    """{op: NbdDevice (unshaped)} from the unshaped per-request times {op: {size: seconds}} (a + S / c)."""
    devices = {}
    for op, times in per_op.items():
        sizes = np.array([s for s in times if s <= NBD_MAX_REQUEST_BYTES], dtype=float)
        t = np.array([times[int(s)] for s in sizes])
        slope, intercept = np.polyfit(sizes, t, 1)
        devices[op] = NbdDevice(SERVER_VOLUME, UNSHAPED, server="10.77.0.1:10809",
                                client_overhead_s=max(float(intercept), 0.0), server_overhead_s=0.0,
                                server_cache_hit=1.0,
                                copy_rate_bytes_per_s=1.0 / slope if slope > 0 else None)
    return devices


def predict_nbd(device: NbdDevice, network: Network, size: int, op: str) -> float:
    """Predicted throughput of dd's requests of *size* [bytes/s] (above 128 KiB: the pieces' steady stream)."""
    timed = predict_block_job(device.evolve(network=network), _nbd_job(size, op == "write"), DRIVES)
    return float(timed.throughput_bytes_per_s)


def nfs_mount(version: str, export: str, network: Network) -> NfsMount:
    return NfsMount(FileSystemNode(SERVER_VOLUME, kind="ext4"), network, server="10.77.0.1:/srv/" + export,
                    version=version, sync_export=export == "sync", client_overhead_s=0.0, server_op_s=0.0)


def _phase_ops(phase: str, files: int, size: int) -> FileOps:
    """A phase's file operations: "write" (create and write each file), "read" (read each, cold) or
    "remove" (delete each)."""
    if phase == "write":
        return metadata("create", files, file_bytes=size)
    if phase == "remove":
        return metadata("delete", files, file_bytes=size)
    n = files
    return FileOps(time_s=np.arange(n) * 2e-6, kind=np.full(n, int(Kind.READ), np.int8), file=np.arange(n),
                   offset_bytes=np.zeros(n, np.int64), size_bytes=np.full(n, size, np.int64),
                   chunk_bytes=np.full(n, size, np.int64), direct=np.zeros(n, bool), dir_of_file=np.zeros(n, np.int64),
                   initial_bytes=np.full(n, size, np.int64))


def nfs_phase_s(mount: NfsMount, phase: str, files: int, size: int) -> float:
    """The phase's time per file on *mount* [s], timed on the I/O path."""
    stack = Stack(mount, (PresetDrive("wd800bd", name="vda"),))
    return predict_stack(stack, _phase_ops(phase, files, size), drives=DRIVES).elapsed_s / files


def measure(settings: list[Network], *, rounds: int, say=print, **options):
    """One VM run: ({cell key: median per-operation time [s]}, {cell key: operations}, the NetworkRun)."""
    all_settings = [UNSHAPED, *settings]
    say(f"booting the VM (TCG) for {rounds} rounds of {len(all_settings)} settings ...")
    t0 = time.monotonic()
    run = run_network_bench(all_settings, rounds=rounds, timeout_s=1800, **options)
    say(f"  done in {time.monotonic() - t0:.0f} s; ping rtt seen by the guest (median): "
        + ", ".join(f"{s.describe()}: {p * 1e3:.2f} ms" for s, p in zip(all_settings, run.ping_rtt_s)))
    cells: dict = {}
    for t in run.timings:
        cells.setdefault((t.setting, t.layer, t.op, t.size_bytes, t.version, t.export), []).append(t)
    measured = {k: statistics.median(t.per_op_s for t in v) for k, v in cells.items()}
    return measured, {k: v[0].count for k, v in cells.items()}, run


def _predicted_rate(key, measured, counts, devices, network: Network) -> float:
    setting, layer, op, size, version, export = key
    if layer == "nbd":
        return predict_nbd(devices[op], network, size, op)
    files = counts[key]
    unshaped = nfs_phase_s(nfs_mount(version, export, UNSHAPED), op, files, size)
    residual = measured[(0, *key[1:])] - unshaped   # the emulator's own cost per file, held fixed
    predicted_s = nfs_phase_s(nfs_mount(version, export, network), op, files, size) + residual
    return (size if op != "remove" else 1) / predicted_s


def analyse(measured: dict, counts: dict, settings: list[Network], ping_rtt_s) -> tuple[list, list]:
    """Rows (measured, predicted at the tc round trip and at the ping round trip) and the pairwise orderings."""
    all_settings = [UNSHAPED, *settings]
    nbd_unshaped = {op: {k[3]: s for k, s in measured.items() if k[0] == 0 and k[1] == "nbd" and k[2] == op}
                    for op in ("read", "write")}
    devices = nbd_devices({op: v for op, v in nbd_unshaped.items() if v})
    # the round trip as the guest saw it, less the unshaped one (whose cost the unshaped fit holds already)
    seen = [UNSHAPED] + [s.evolve(rtt_s=max(ping_rtt_s[i + 1] - ping_rtt_s[0], 0.0)) for i, s in enumerate(settings)]
    rows = []
    for key, per_op_s in sorted(measured.items()):
        setting, layer, op, size, version, export = key
        measured_rate = (size if op != "remove" else 1) / per_op_s
        predicted = _predicted_rate(key, measured, counts, devices, all_settings[setting])
        predicted_ping = _predicted_rate(key, measured, counts, devices, seen[setting])
        rows.append({"setting": setting, "network": _short(all_settings[setting]), "layer": layer, "op": op,
                     "size_bytes": size, "version": version, "export": export, "count": counts[key],
                     "measured_per_op_s": per_op_s, "measured": measured_rate, "predicted": predicted,
                     "predicted_ping_rtt": predicted_ping,
                     "error_pct": 100.0 * (predicted / measured_rate - 1.0),
                     "error_ping_rtt_pct": 100.0 * (predicted_ping / measured_rate - 1.0),
                     "unit": "files/s" if op == "remove" else "bytes/s"})
    groups: dict = {}
    for row in rows:
        groups.setdefault((row["layer"], row["op"], row["size_bytes"], row["version"], row["export"]), []).append(row)
    pairs = []
    for key, group in sorted(groups.items()):
        group.sort(key=lambda r: r["setting"])
        for row in group:
            row["measured_ratio"] = row["measured"] / group[0]["measured"]
            row["predicted_ratio"] = row["predicted"] / group[0]["predicted"]
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                pairs.append({"cell": "/".join(str(k) for k in key if k != ""), "settings": [a["setting"], b["setting"]],
                              "measured_ratio": a["measured"] / b["measured"],
                              "predicted_ratio": a["predicted"] / b["predicted"],
                              "predicted_ping_rtt_ratio": a["predicted_ping_rtt"] / b["predicted_ping_rtt"]})
    return rows, pairs


def ordering_agreement(pairs, column: str) -> tuple[int, int]:
    """(agreeing, resolved): pairs whose predicted ratio is at least RESOLVED_RATIO either way, and of
    those, how many the measurement ranks the same way."""
    resolved = [p for p in pairs if max(p[column], 1 / p[column]) >= RESOLVED_RATIO]
    agree = sum((p[column] > 1) == (p["measured_ratio"] > 1) for p in resolved)
    return agree, len(resolved)


def _short(network: Network) -> str:
    if not network.shaped:
        return "unshaped"
    return f"{network.rate_bytes_per_s * 8 / 1e6:g} Mb/s, {network.rtt_s * 1e3:g} ms"


def _label(row) -> str:
    what = f"{row['layer']} {row['op']}"
    if row["layer"] == "nfs":
        what += f" v{row['version']} {row['export']}"
    return f"{what} {row['size_bytes'] // KIB if row['op'] != 'remove' else ''}{'K' if row['op'] != 'remove' else ''}"


def report(rows, pairs, *, say=print) -> dict:
    """Print the table and the summary lines; return the summary figures' values."""
    say(f"{'setting':<18} {'cell':<24} {'measured':>13} {'predicted':>9} {'pred/meas':>9} {'(ping rtt)':>10} "
        f"{'meas/unsh':>9} {'pred/unsh':>9}")
    for r in rows:
        scale, unit = (1e6, "MB/s") if r["unit"] == "bytes/s" else (1.0, "files/s")
        say(f"{r['network']:<18} {_label(r):<24} {r['measured'] / scale:>7.3f} {unit:<5}"
            f"{r['predicted'] / scale:>9.3f} {r['predicted'] / r['measured']:>9.2f} "
            f"{r['predicted_ping_rtt'] / r['measured']:>10.2f} {r['measured_ratio']:>9.2f} "
            f"{r['predicted_ratio']:>9.2f}")
    shaped = [r for r in rows if r["setting"] > 0]
    out = {"median_abs_error_pct": float(statistics.median(abs(r["error_pct"]) for r in shaped)),
           "median_abs_error_ping_rtt_pct": float(statistics.median(abs(r["error_ping_rtt_pct"]) for r in shaped)),
           "cells": len(shaped)}
    for layer in ("nbd", "nfs"):
        mine = [abs(r["error_pct"]) for r in shaped if r["layer"] == layer]
        if mine:
            out[f"{layer}_median_abs_error_pct"] = float(statistics.median(mine))
            say(f"median |error| over the shaped {layer} cells: {out[f'{layer}_median_abs_error_pct']:.1f} %")
    for column, name in (("predicted_ratio", "orderings"), ("predicted_ping_rtt_ratio", "orderings_ping_rtt")):
        agree, resolved = ordering_agreement(pairs, column)
        out[name] = (agree, resolved)
        say(f"pairs of settings the model tells apart (x{RESOLVED_RATIO} or more; {column}): {resolved}; "
            f"ranked alike measured: {agree}")
    for p in pairs:
        if max(p["predicted_ratio"], 1 / p["predicted_ratio"]) >= RESOLVED_RATIO \
                and (p["predicted_ratio"] > 1) != (p["measured_ratio"] > 1):
            say(f"  ranked otherwise: {p['cell']} settings {p['settings']}: measured ratio "
                f"{p['measured_ratio']:.2f}, predicted {p['predicted_ratio']:.2f}")
    say(f"median |error| with the round trip the guest measured (ping, less the unshaped one): "
        f"{out['median_abs_error_ping_rtt_pct']:.1f} %")
    return out


def _reanalysed(path: Path):
    """The measured cells, counts, settings and ping round trips of an earlier artifact."""
    import json

    doc = json.loads(path.read_text())
    details = doc["details"]
    settings = [shaped(s["rate_bytes_per_s"], s["rtt_s"]) for s in details["settings"][1:]]
    measured, counts = {}, {}
    for r in details["rows"]:
        key = (r["setting"], r["layer"], r["op"], r["size_bytes"], r["version"], r["export"])
        measured[key] = r["measured_per_op_s"]
        counts[key] = r.get("count", doc["options"].get("nfs_files"))
    env = doc.get("environment", {})
    earlier = f"{path}: {env.get('date_utc', 'undated')}, commit {str(env.get('git_commit', 'unknown'))[:12]}"
    return measured, counts, settings, details["ping_rtt_s"], details.get("accelerator", "tcg"), \
        details.get("kernel_release", ""), earlier


def _earlier_wall_s(path: Path) -> float | None:
    """The wall time an earlier artifact's run took [s], None if it does not say."""
    import json

    return (json.loads(path.read_text()).get("figures", {}).get("wall_s") or {}).get("value")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settings", default="1000:0.2,100:2,10:20", help="rate Mb/s : round trip ms, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nbd-bytes", type=_size, default=4 * MIB, help="bytes per NBD point (at least 8 requests)")
    ap.add_argument("--nfs-files", type=int, default=20)
    ap.add_argument("--nfs-file-size", type=_size, default=64 * KIB)
    ap.add_argument("--reanalyse", type=Path, default=None, metavar="JSON",
                    help="predict the measurements of an earlier artifact again with this model instead of "
                         "booting the VM, and write the artifact (its notes name the run that measured them)")
    add_results_dir_option(ap)
    args = ap.parse_args(argv)
    print(EMULATOR_NOTE)
    t0 = time.monotonic()
    notes = []
    if args.reanalyse is not None:
        measured, counts, settings, ping, accelerator, kernel, earlier = _reanalysed(args.reanalyse)
        run = SimpleNamespace(ping_rtt_s=ping, accelerator=accelerator, kernel_release=kernel)
        notes.append(f"measured by an earlier run ({earlier}), predicted again by this run's model; its wall "
                     "time is the earlier run's")
    else:
        settings = _settings(args.settings)
        try:
            measured, counts, run = measure(settings, rounds=args.rounds, nbd_bytes=args.nbd_bytes,
                                            nfs_files=args.nfs_files, nfs_file_size_bytes=args.nfs_file_size)
        except KeyboardInterrupt as exc:
            print(f"{exc or 'interrupted'}: the VM and its files are gone", file=sys.stderr)
            return 130
    rows, pairs = analyse(measured, counts, settings, run.ping_rtt_s)
    summary = report(rows, pairs)
    wall = earlier_wall if args.reanalyse is not None and (earlier_wall := _earlier_wall_s(args.reanalyse)) \
        else time.monotonic() - t0
    print(f"wall time of the check: {wall:.0f} s ({run.accelerator})")
    print(f"median_abs_error_pct: {summary['median_abs_error_pct']:.1f}")
    agree, resolved = summary["orderings"]
    agree_ping, resolved_ping = summary["orderings_ping_rtt"]
    figures = {
        "median_abs_error_pct": figure(summary["median_abs_error_pct"], "%", f"median |predicted/measured - 1| over "
                                       f"the {summary['cells']} shaped cells in the VM ({run.accelerator}), tc's "
                                       "round trip", decimals=1, headline=True, target=TARGET_PCT),
        "orderings_agree_pct": figure(100.0 * agree / resolved if resolved else None, "%",
                                      f"pairs of settings ranked alike, measured and predicted, of the {resolved} "
                                      f"the model tells apart by x{RESOLVED_RATIO}", decimals=0, headline=True),
        "median_abs_error_ping_rtt_pct": figure(summary["median_abs_error_ping_rtt_pct"], "%",
                                                "the same, with the round trip the guest measured by ping",
                                                decimals=1),
        "orderings_agree_ping_rtt_pct": figure(100.0 * agree_ping / resolved_ping if resolved_ping else None, "%",
                                               f"orderings ranked alike of the {resolved_ping} told apart, ping's "
                                               "round trip", decimals=0),
        **{f"{layer}_median_abs_error_pct": figure(summary[f"{layer}_median_abs_error_pct"], "%",
                                                   f"median |error| over the shaped {layer} cells", decimals=1)
           for layer in ("nbd", "nfs") if f"{layer}_median_abs_error_pct" in summary},
        "wall_s": figure(wall, "s", "wall time of the check", decimals=0),
    }
    notes = ([EMULATOR_NOTE] if run.accelerator == "tcg" else []) + notes
    details = {"rows": rows, "pairs": pairs, "ping_rtt_s": list(run.ping_rtt_s), "accelerator": run.accelerator,
               "settings": [{"rate_bytes_per_s": s.rate_bytes_per_s, "rtt_s": s.rtt_s, "burst_bytes": s.burst_bytes}
                            for s in [UNSHAPED, *settings]],
               "kernel_release": run.kernel_release}
    write_result("network_check", figures, options=options_of(ap, args), results_dir=args.results_dir,
                 notes=notes, details=details)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
