"""Make ``raid1_read_blktrace.json``: blktrace of the md device and both mirrors under the loop-image
study copy's read step on Marechal's file systems on md RAID 1 over a fast and a slow drive
(benchmarks/stacks_check.py's VM group 000: a WD800BD as ``vdb``, an HP C2247A as ``vdc``, each
served by the emulator), the stacks built by the same plans as stacks_vm's cells. Each repeat is the
copy's own: the 4 MiB file written with ``conv=fsync``, ``sync`` and ``drop_caches``, then the read
traced (``dd bs=1M``), then the file removed. Needs root and what stacks_check's VM groups need.

    python tests/golden/_raid1_read_blktrace.py OUT.json [FILE_SYSTEM ...]   (default: xfs reiserfs jfs)
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench import stacks_vm
from diskmodel.calibrate.bench.copy import GUEST_CLOCK
from diskmodel.calibrate.bench.layers_bench import GUEST_PREAMBLE
from diskmodel.calibrate.bench.steps import Ref, sh_word
from diskmodel.calibrate.trace.blkparse import parse_blkparse_text

FILE_MIB = 4
REPEATS = 3
_M = "@@RBT"


def _body(mnt: str) -> str:
    return f"""mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || :
SRC=$(readlink -f "$(findmnt -no SOURCE {mnt})")
MD=$(basename "$SRC")
for d in $MD vdb vdc; do
  echo "{_M} DEV $d $((0x$(stat -L -c %t /dev/$d))),$((0x$(stat -L -c %T /dev/$d))) $(cat /sys/class/block/$d/queue/read_ahead_kb) $(cat /sys/class/block/$d/queue/max_sectors_kb) $(cat /sys/class/block/$d/queue/rotational)"
done
r=1
while [ $r -le {REPEATS} ]; do
  sync; echo 3 > /proc/sys/vm/drop_caches
  dd if=/dev/zero of={mnt}/diskmodel-copy.dat bs=1048576 count={FILE_MIB} conv=fsync 2>/dev/null || exit 1
  sync; echo 3 > /proc/sys/vm/drop_caches
  rm -rf /tmp/bt; mkdir /tmp/bt
  blktrace -D /tmp/bt -d /dev/$MD -d /dev/vdb -d /dev/vdc >/dev/null 2>&1 &
  BT=$!
  sleep 1
  t2=$({GUEST_CLOCK})
  dd if={mnt}/diskmodel-copy.dat of=/dev/null bs=1048576 2>/dev/null || exit 1
  t3=$({GUEST_CLOCK})
  sleep 0.5
  kill -INT $BT; wait $BT
  echo "{_M} REPEAT $r $t2 $t3"
  blkparse -D /tmp/bt -i $MD -i vdb -i vdc 2>/dev/null | grep -E '^ *[0-9]+,[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[QDC] ' || true
  echo "{_M} ENDREPEAT"
  rm -f {mnt}/diskmodel-copy.dat; sync
  r=$((r + 1))
done
"""


def guest_script(cells) -> str:
    lines = ["set +e"]
    for cell in cells:
        disks = {d.name: f"/dev/{d.name}" for d in cell.stack.disks}
        plan = L.build_plan(cell.stack, backing="/dev/vdb", disk_backings=disks)
        script = plan.render_script(_body(sh_word(Ref(plan.mount_var))), preamble=GUEST_PREAMBLE)
        lines += [f"echo {sh_word(f'{_M} CELL {cell.label}')}", f"sh -c {sh_word(script)}", f'echo "{_M} ENDCELL $?"']
    return "\n".join(lines) + "\nexit 0\n"


def parse(output: str) -> list[dict]:
    """Per cell and repeat: the devices' queue settings, the guest's time of the read, and per device
    (``md``, ``vdb``, ``vdc``) its requests as ``[op, offset_bytes, size_bytes, issue_s, complete_s - issue_s]``."""
    out, cell, rep, devs = [], None, None, {}
    for raw in output.replace("\r", "").splitlines():
        if _M in raw[1:]:
            raw = raw[raw.index(_M):]
        if raw.startswith(f"{_M} CELL "):
            cell, devs = {"label": raw[len(_M) + 6:], "devices": {}, "repeats": []}, {}
        elif raw.startswith(f"{_M} DEV ") and cell is not None:
            name, majmin, ra, ms, rot = raw.split()[2:7]
            devs[majmin] = "md" if name.startswith("md") else name
            cell["devices"][devs[majmin]] = {"read_ahead_kb": int(ra), "max_sectors_kb": int(ms),
                                             "rotational": int(rot)}
        elif raw.startswith(f"{_M} REPEAT "):
            _, _, r, t2, t3 = raw.split()
            rep = {"repeat": int(r), "guest_read_s": float(t3) - float(t2), "events": []}
        elif raw.startswith(f"{_M} ENDREPEAT") and rep is not None:
            trace = parse_blkparse_text(rep.pop("events"), f"raid1 {cell['label']}", devs)
            rep["requests"] = {}
            for name, d in trace.devices.items():
                s = d.stream
                rep["requests"][name] = [[int(o), int(b), int(n), round(float(t), 6), round(float(c - t), 6)]
                                         for o, b, n, t, c in zip(s.op, s.offset_bytes, s.size_bytes, s.time_s,
                                                                  d.complete_s)]
            cell["repeats"].append(rep)
            rep = None
        elif raw.startswith(f"{_M} ENDCELL") and cell is not None:
            cell["status"] = int(raw.split()[2])
            out.append(cell)
            cell = None
        elif rep is not None and re.match(r"^\s*\d+,\d+\s", raw):
            rep["events"].append(raw)
    return out


def main(out: str, kinds: list[str]) -> None:
    from diskmodel.calibrate.emulate.for_vm import run_script_on_emulated_drives

    presets, cells = stacks_vm.GROUPS["000"]()
    cells = [c for k in kinds for c in cells if c.label == f"{k}, RAID 1 fast + slow"]
    load = os.getloadavg()
    result, _ = run_script_on_emulated_drives(guest_script(cells), presets, timeout_s=900 + 300 * len(cells),
                                              memory_bytes=512 << 20)
    Path(out + ".guest.txt").write_text(result.output.replace("\r", ""))
    parsed = parse(result.output)
    Path(out).write_text(json.dumps({"load_1min_at_start": load[0], "load_1min_at_end": os.getloadavg()[0],
                                     "cells": parsed}, separators=(",", ":")) + "\n")
    if result.returncode != 0 or len(parsed) != len(cells):
        sys.exit(f"VM status {result.returncode}, {len(parsed)} of {len(cells)} cells parsed")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:] or ["xfs", "reiserfs", "jfs"])
