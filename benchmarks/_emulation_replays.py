"""The trace replays' request logs read against the replay's own stamps, for ``emulation_check.py``: where
the replay's requests are among a drive's served rows (and how many other requests came between them), each
request's excess split into its parts, the tail's share of the demerit, and the server's lateness over every
replay. Split from ``emulation_check.py`` (a script, kept under the house's 600 lines), which imports them."""
from __future__ import annotations

import numpy as np

from diskmodel.calibrate.emulate import read_log
from diskmodel.calibrate.emulate.replay import excess_parts, median_of_repeats, without_largest_excess
from diskmodel.model.predictions.validation import disksim_demerit_s

#: Requests per window of the replay in which the path's round trip less the cost taken off is followed.
DRIFT_WINDOW = 1000


def _replay_start(served, trace, match: int = 8) -> int:
    """Where the replay's requests start among a drive's served rows: the first row from which *match* rows
    have the trace's offsets and sizes (the kernel reads the device when it is attached, and the throughput
    runs read it after the replay)."""
    offsets, sizes = served["offset_bytes"].to_numpy(), served["size_bytes"].to_numpy()
    want_off, want_size = trace.lbn[:match] * 512, trace.blocks[:match] * 512
    for i in range(len(offsets) - len(want_off) + 1):
        if (offsets[i:i + len(want_off)] == want_off).all() and (sizes[i:i + len(want_off)] == want_size).all():
            return i
    raise RuntimeError(f"the replay's requests were not found in the request log ({len(offsets)} rows)")


def _replay_rows_in_log(served, trace) -> tuple[np.ndarray, int]:
    """The positions of the replay's requests among a drive's served rows, in order, and how many other
    requests came between them (another process reading the device while it was replayed, e.g. a scan of
    every block device's ends: each took the drive's time as a request of its own)."""
    start = _replay_start(served, trace)
    offsets, sizes = served["offset_bytes"].to_numpy(), served["size_bytes"].to_numpy()
    ops = served["op"].to_numpy()
    want_off, want_size, want_op = trace.lbn * 512, trace.blocks * 512, trace.is_write.astype(int)
    at, j = [], start
    for i in range(len(trace)):
        while j < len(offsets) and (offsets[j] != want_off[i] or sizes[j] != want_size[i] or ops[j] != want_op[i]):
            j += 1
        if j == len(offsets):
            raise RuntimeError(f"request {i} of the replay was not found in the request log")
        at.append(j)
        j += 1
    return np.asarray(at), int(at[-1] - start + 1 - len(at))


def _part_figures(row: dict, parts: dict) -> None:
    """Percentiles of each part of the excess [ms] into *row*; the mean of each part over the requests whose
    excess is above its p99 (what makes the tail); the requests whose simulated time is shorter than the
    path's cost (they cannot complete on time as the replay sees it)."""
    for key in ("excess", "path_in", "path_out", "lateness"):
        values = parts[key]
        prefix = "replay_excess" if key == "excess" else key
        for q in (10, 50, 90, 99):
            row[f"{prefix}_p{q}_ms"] = float(np.percentile(values, q) * 1e3)
        row[f"{prefix}_max_ms"] = float(values.max() * 1e3)
    round_trip = parts["path_in"] + parts["path_out"]
    row["path_round_trip_p50_ms"] = float(np.median(round_trip) * 1e3)
    # the path's cost drifts with the host's load while the server takes off the cost probed at its start
    row["round_trip_less_taken_off_p50_by_window_ms"] = [
        float(np.median((round_trip - parts["cost_taken_off"])[i:i + DRIFT_WINDOW]) * 1e3)
        for i in range(0, len(round_trip), DRIFT_WINDOW)]
    row["path_cost_taken_off_p50_ms"] = float(np.median(parts["cost_taken_off"]) * 1e3)
    tail = parts["excess"] > np.percentile(parts["excess"], 99)
    row["excess_tail_mean_ms"] = {key: float(parts[key][tail].mean() * 1e3) if tail.any() else 0.0
                                  for key in ("path_in", "path_out", "lateness")}
    row["replay_excess_over_1ms_fraction"] = float(np.mean(parts["excess"] > 1e-3))
    short = parts["simulated"] < parts["cost_taken_off"]
    row["shorter_than_path_cost"] = int(np.sum(short))
    # such a request's deadline has passed when it reaches the server: late by construction, not by the host
    row["lateness_p99_ms_others"] = float(np.percentile(parts["lateness"][~short], 99) * 1e3) if (~short).any() \
        else None


def _served_parts(dev, trace, stamps) -> tuple[dict, int]:
    """One replay's excess split into its parts (:func:`excess_parts`) by its drive's request log, and how many
    other requests the drive served during it."""
    frame = read_log(dev.log_path)
    served = frame[~frame["probe"].astype(bool) & (frame["op"] <= 1)]
    rows_at, foreign = _replay_rows_in_log(served, trace)
    served = served.iloc[rows_at]
    served.attrs.update(frame.attrs)
    parts = excess_parts(served, stamps)
    parts["collector"] = frame.attrs.get("collector")  # the server's cyclic collections while serving
    return parts, foreign


def _tail_figures(row: dict, measured, parts: dict) -> None:
    """How much of the first replay's demerit its largest excesses make (DiskSim's demerit compares the
    distributions down to 1 in 10,000: a few requests stalled for tens of ms shift its last levels by as much):
    its demerit with the 0.1 % and the 1 % of largest excess given their simulated time, the demerit of the
    server's simulated times alone (the path adding nothing), and the share of the replay's demerit above that
    one the top 1 % make."""
    took = parts["simulated"] + parts["excess"]
    whole = disksim_demerit_s(measured, took) * 1e3
    served = disksim_demerit_s(measured, parts["simulated"]) * 1e3
    row["server_simulated_demerit_ms"] = served
    for label, fraction in (("0.1pct", 1e-3), ("1pct", 1e-2)):
        row[f"demerit_ms_without_largest_{label}_excess"] = float(
            disksim_demerit_s(measured, without_largest_excess(took, parts["simulated"], fraction)) * 1e3)
    row["demerit_excess_share_of_largest_1pct"] = (
        (whole - row["demerit_ms_without_largest_1pct_excess"]) / (whole - served) if whole > served else None)


def _lateness(devices, traces, replayed, rows):
    """Per drive: the server's lateness (its log) and the replay's excess split into its parts
    (:func:`excess_parts`), each drive's figures added to its row of *rows*: the first replay's (the single
    run's), the lateness over every replay, and each replay's in its entry of ``replays``; returns the server's
    lateness, the replay's excess and which requests are shorter than the path's cost, over every replay of
    every drive. *devices* and *replayed*: each drive's, one per replay, in order."""
    server, client, short = [], [], []
    for name, row in zip(traces, rows):
        late, sims, excess_by_replay = [], [], []
        for r, (dev, stamps) in enumerate(zip(devices[name], replayed[name])):
            parts, foreign = _served_parts(dev, traces[name], stamps)
            server.append(parts["lateness"])
            client.append(parts["excess"])
            short.append(parts["simulated"] < parts["cost_taken_off"])
            late.append(parts["lateness"])
            sims.append(parts["simulated"])
            excess_by_replay.append(parts["excess"])
            entry = row.setdefault("replays", [{} for _ in replayed[name]])[r]
            entry.update({"foreign_requests": foreign, "server_collector": parts["collector"],
                          "replay_excess_p99_ms": float(np.percentile(parts["excess"], 99) * 1e3),
                          **{f"lateness_p{q}_ms": float(np.percentile(parts["lateness"], q) * 1e3) for q in (50, 99)}})
            if r == 0:
                row["foreign_requests_during_replay"] = foreign
                _part_figures(row, parts)
                _tail_figures(row, traces[name].service_s, parts)
        row.update({f"lateness_p{q}_ms_all_replays": float(np.percentile(np.concatenate(late), q) * 1e3)
                    for q in (50, 99)})
        # the drive is simulated on the host's clock: a request arriving late meets the disk turned further, so
        # each request's median also narrows the drive's own times; the demerit of the median of the server's
        # simulated times says by how much, and the first replay's simulated times plus each request's median
        # excess is the estimate that keeps one replay's drive
        measured = traces[name].service_s
        row["server_simulated_demerit_ms_median_of_repeats"] = float(
            disksim_demerit_s(measured, median_of_repeats(sims)) * 1e3)
        row["demerit_ms_first_simulated_plus_median_excess"] = float(
            disksim_demerit_s(measured, sims[0] + median_of_repeats(excess_by_replay)) * 1e3)
        spread = np.ptp(np.vstack(sims), axis=0)
        row["simulated_spread_over_replays_p99_ms"] = float(np.percentile(spread, 99) * 1e3)
        row["simulated_spread_over_replays_max_ms"] = float(spread.max() * 1e3)
        print(f"{name:<11}excess p50 {row['replay_excess_p50_ms']:.3f} p99 {row['replay_excess_p99_ms']:.3f} "
              f"max {row['replay_excess_max_ms']:.2f} ms (over 1 ms {row['replay_excess_over_1ms_fraction']:.2%}) = "
              f"in p50 {row['path_in_p50_ms']:.3f} p99 {row['path_in_p99_ms']:.3f} + out p50 "
              f"{row['path_out_p50_ms']:.3f} p99 {row['path_out_p99_ms']:.3f} - taken off "
              f"{row['path_cost_taken_off_p50_ms']:.3f} + lateness p50 {row['lateness_p50_ms']:.3f} p99 "
              f"{row['lateness_p99_ms']:.3f}; tail (>p99) in/out/late "
              + "/".join(f"{v:.2f}" for v in row["excess_tail_mean_ms"].values())
              + f" ms; shorter than the path's cost {row['shorter_than_path_cost']} (lateness p99 of the others "
              f"{row['lateness_p99_ms_others'] or 0:.3f} ms); other requests served during the replay "
              f"{row['foreign_requests_during_replay']}", flush=True)
        print(f"{'':<11}demerit without the 0.1 % / 1 % largest excesses "
              f"{row['demerit_ms_without_largest_0.1pct_excess'] / row['disksim_demerit_ms']:.2f}x / "
              f"{row['demerit_ms_without_largest_1pct_excess'] / row['disksim_demerit_ms']:.2f}x DiskSim's (the "
              f"server's simulated times alone {row['server_simulated_demerit_ms'] / row['disksim_demerit_ms']:.2f}x); "
              f"lateness over the replays p50 {row['lateness_p50_ms_all_replays']:.3f} p99 "
              f"{row['lateness_p99_ms_all_replays']:.3f} ms; simulated times' spread over the replays p99 "
              f"{row['simulated_spread_over_replays_p99_ms']:.3f} ms; "
              f"round trip less the cost taken off, median per {DRIFT_WINDOW} requests: "
              + " ".join(f"{v:+.3f}" for v in row["round_trip_less_taken_off_p50_by_window_ms"]) + " ms")
    return np.concatenate(server), np.concatenate(client), np.concatenate(short)
