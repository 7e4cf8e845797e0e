"""Quantities this project measured once and the model or the harness reads, each with its provenance.

A quantity here is the curated copy of a benchmark's figure (the benchmark's artifact in
``benchmarks/results/`` holds the whole run), so that an installed package has it without the source
tree. Each file says how it was measured: the command, the date, the commit and the machine.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DmRequestCost", "dm_request_cost"]

_HERE = Path(__file__).parent


@dataclass(frozen=True)
class DmRequestCost:
    """Device-mapper's cost per bio, measured as ``benchmarks/dm_request_cost.py`` does.

    ``host_s``: on the host's CPU [s]; ``guest_s``: in the throwaway VM's guest under qemu TCG [s];
    ``provenance``: how it was measured (command, artifact, date, commit, machine, method).
    """

    host_s: float
    guest_s: float
    provenance: dict

    def describe(self) -> str:
        """One line naming the figure's source, for a report's assumptions."""
        p = self.provenance
        return f"{p['command']} on {p['date_utc'][:10]} ({p['machine']})"


def dm_request_cost() -> DmRequestCost:
    """Device-mapper's measured cost per bio (``dm_request_cost.json`` here)."""
    document = json.loads((_HERE / "dm_request_cost.json").read_text())
    return DmRequestCost(float(document["dm_request_cost_s"]), float(document["dm_request_cost_guest_s"]),
                         dict(document["provenance"]))
