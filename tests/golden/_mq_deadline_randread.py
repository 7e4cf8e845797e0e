"""Make ``mq_deadline_randread_emulated.json``: fio's random 4 KiB O_DIRECT reads at iodepth 256 on an
emulated WD800BD (the host's loop device over the emulator, 128 driver tags), under the loop device's
own scheduler none and under mq-deadline (nr_requests 256), each traced with blktrace: how long the
kernel took, and how many requests waited in the scheduler (benchmarks/scheduler_check.py's measurement;
a signal tears the emulator down and ends the script in one line, as the benchmark's own run does).
Needs root, fio and what ``diskmodel emulate`` needs.

    python tests/golden/_mq_deadline_randread.py OUT.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _artifact import run_main  # noqa: E402
from scheduler_check import measure  # noqa: E402


def main() -> int:
    Path(sys.argv[1]).write_text(json.dumps(measure(1500, 256), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(run_main(main))
