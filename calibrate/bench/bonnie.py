"""Bonnie++ (Debian's package, 2.00a) run on a directory and its CSV line parsed.

The workload is the model's :class:`diskmodel.model.iopath.workloads_bonnie.BonnieConfig`;
:func:`~diskmodel.model.iopath.workloads_bonnie.bonnie_argv` gives bonnie++'s command line (``-q``:
the CSV line alone on standard output, ``-f``: no per-character tests). :func:`parse_bonnie_csv`
reads the line bonnie++ 2.00a prints (CSV format version 1.98, 50 fields; bon_csv2txt's order):
the block output, rewrite and block input rates [KiB/s], random seeks [/s], the six file tests
[files/s] and the latency of each test. A test that took under 500 ms is printed ``+++++`` by
bonnie++ (its manual page: "can't be calculated accurately"): its rate is None here, never a
number made up. :func:`run_bonnie` runs it as a recorded child
(:func:`diskmodel.calibrate.bench.process.spawn`) and times the whole run with the host's clock.
"""
from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass

from diskmodel.calibrate.bench.process import communicate_or_kill, spawn
from diskmodel.model.iopath.workloads_bonnie import BonnieConfig, bonnie_argv, describe

__all__ = ["BonnieResult", "parse_bonnie_csv", "run_bonnie", "RATE_FIELDS"]

#: CSV field index of each rate, and its unit factor to SI (bytes/s for the block tests).
RATE_FIELDS = {"write": (11, 1024.0), "rewrite": (13, 1024.0), "read": (17, 1024.0), "seeks": (19, 1.0),
               "create_seq": (26, 1.0), "stat_seq": (28, 1.0), "delete_seq": (30, 1.0),
               "create_rand": (32, 1.0), "stat_rand": (34, 1.0), "delete_rand": (36, 1.0)}
#: CSV field index of each test's latency.
LATENCY_FIELDS = {"write": 39, "rewrite": 40, "read": 42, "seeks": 43, "create_seq": 44, "stat_seq": 45,
                  "delete_seq": 46, "create_rand": 47, "stat_rand": 48, "delete_rand": 49}
_UNITS_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_N_FIELDS = 50
RATE_UNITS = {k: ("bytes/s" if f == 1024.0 else ("seeks/s" if k == "seeks" else "files/s"))
              for k, (_, f) in RATE_FIELDS.items()}


@dataclass(frozen=True)
class BonnieResult:
    """One bonnie++ run: ``rates`` per phase in SI (block tests bytes/s, seeks /s, file tests
    files/s; None where bonnie++ printed ``+++++`` or skipped the test), ``latencies_s`` per phase,
    and ``elapsed_s``, the whole run by the host's clock."""

    config: BonnieConfig
    rates: dict
    latencies_s: dict
    elapsed_s: float
    csv: str

    def as_dict(self) -> dict:
        return {"definition": describe(self.config), "rates": self.rates, "rate_units": RATE_UNITS,
                "latencies_s": self.latencies_s, "elapsed_s": self.elapsed_s, "csv": self.csv}

    def lines(self) -> list[str]:
        """The definition, then one line per phase measured."""
        out = [describe(self.config) + f"  (whole run {self.elapsed_s:.3f} s)"]
        for phase, rate in self.rates.items():
            if phase in self.config.phases:
                shown = "under 500 ms (bonnie++ prints +++++)" if rate is None else f"{rate:,.0f} {RATE_UNITS[phase]}"
                out.append(f"  {phase}: {shown}")
        return out


def _latency(text: str, where: str) -> float | None:
    if not text:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ns|us|ms|s)", text)
    if not m:
        raise ValueError(f"bonnie++ CSV {where}: latency {text!r} is not a number with ns, us, ms or s")
    return float(m.group(1)) * _UNITS_S[m.group(2)]


def parse_bonnie_csv(text: str, config: BonnieConfig, elapsed_s: float = float("nan")) -> BonnieResult:
    """The :class:`BonnieResult` of bonnie++'s CSV output *text* (its last CSV line)."""
    lines = [ln for ln in text.replace("\r", "").splitlines() if ln.count(",") >= _N_FIELDS - 1]
    if not lines:
        raise ValueError(f"bonnie++ output holds no CSV line of {_N_FIELDS} fields: {text[-300:]!r}")
    fields = lines[-1].split(",")
    if len(fields) != _N_FIELDS:
        raise ValueError(f"bonnie++ CSV line has {len(fields)} fields, not {_N_FIELDS} (format 1.98 of bonnie++ 2.00)")
    rates, lat = {}, {}
    for phase, (i, factor) in RATE_FIELDS.items():
        v = fields[i].strip()
        if v in ("", "+++++", "+++"):
            rates[phase] = None
        else:
            try:
                rates[phase] = float(v) * factor
            except ValueError:
                raise ValueError(f"bonnie++ CSV field {i} ({phase}): {v!r} is not a number") from None
        lat[phase] = _latency(fields[LATENCY_FIELDS[phase]].strip(), f"field {LATENCY_FIELDS[phase]} ({phase})")
    return BonnieResult(config, rates, lat, elapsed_s, lines[-1])


def run_bonnie(config: BonnieConfig, directory: str, *, timeout_s: float = 1800.0, cgroup_procs=None) -> BonnieResult:
    """Run bonnie++ on *directory* (which must exist; bonnie++ makes and removes its files in it)."""
    argv = bonnie_argv(config, directory)
    t0 = time.monotonic()
    proc = spawn(argv, name="bonnie++", stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                 text=True, cgroup_procs=cgroup_procs)
    out, err = communicate_or_kill(proc, timeout_s)
    elapsed = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"bonnie++ on {directory} exited with status {proc.returncode}: "
                           f"{(err or out).strip()[-300:]}")
    return parse_bonnie_csv(out, config, elapsed)
