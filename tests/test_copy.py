"""The loop-image study's copy: the guest's clock (the kernel's monotonic clock read from /proc/timer_list)."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from conftest import skip_or_fail
from diskmodel.calibrate.bench.copy import GUEST_CLOCK, timer_list_clock

# The head of /proc/timer_list as the guest (Debian's 6.1 kernel) printed it, and as the host's 6.18 does
# (its version line differs): kernel/time/timer_list.c, timer_list_header.
RECORDED = ("Timer List Version: v0.9\nHRTIMER_MAX_CLOCK_BASES: 8\nnow at 4587729398 nsecs\n\ncpu: 0\n"
            " clock 0:\n  .base:       00000000394366e8\n")


def _dash(script: str) -> str:
    dash = shutil.which("dash")
    if dash is None:
        skip_or_fail("dash is missing (Debian package dash)")
    proc = subprocess.run([dash, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout


@pytest.mark.parametrize("now_ns, printed", [(4587729398, "4.587729398"), (5123, "0.000005123"),
                                             (1114731930947, "1114.731930947")])
def test_the_clock_reads_the_now_line_of_a_recorded_timer_list_to_the_nanosecond(tmp_path, now_ns, printed):
    path = tmp_path / "timer_list"
    path.write_text(RECORDED.replace("4587729398", str(now_ns)).replace("v0.9", "v0.10" if now_ns > 1e12 else "v0.9"))
    assert _dash(f"t=$({timer_list_clock(str(path))}); echo \"[$t]\"") == f"[{printed}]\n"


@pytest.mark.serial  # asserts a wall time
def test_the_guest_clock_tells_apart_two_readings_a_millisecond_apart():
    # /proc/uptime (the clock before) counts hundredths: most such pairs read alike, the others 10 ms apart.
    if not os.access("/proc/timer_list", os.R_OK):
        skip_or_fail("/proc/timer_list is not readable here (the guest runs as root)")
    script = "i=0; while [ $i -lt 10 ]; do a=$(%s); sleep 0.001; b=$(%s); echo $a $b; i=$((i+1)); done" % (
        GUEST_CLOCK, GUEST_CLOCK)
    host0 = time.monotonic()
    pairs = [tuple(map(float, line.split())) for line in _dash(script).splitlines()]
    host_s = time.monotonic() - host0
    assert len(pairs) == 10
    gaps = [b - a for a, b in pairs]
    assert min(gaps) >= 0.001                       # the sleep, resolved
    assert max(gaps) < host_s                       # and no more than the host's time for all ten
    assert all(pairs[i + 1][0] > pairs[i][1] for i in range(9))  # monotonic


@pytest.mark.integration
@pytest.mark.slow
def test_the_guest_clock_resolves_a_millisecond_and_follows_the_hosts_clock_in_the_vm(tmp_path):
    from diskmodel.calibrate.bench import vm

    ok, why = vm.vm_available()
    if not ok:
        skip_or_fail(why)
    script = (f"a=$({GUEST_CLOCK}); usleep 1000; b=$({GUEST_CLOCK}); echo \"MS $a $b\"\n" * 5
              + "".join(f"echo \"STAMP $({GUEST_CLOCK})\"; sleep 2\n" for _ in range(5)))
    arrived = []
    result = vm.run_script_in_vm(script, scratch_disk_bytes=16 << 20, timeout_s=300,
                                 log=lambda line: arrived.append((time.monotonic(), line)))
    assert result.returncode == 0, result.output
    gaps = [float(b) - float(a) for _, a, b in (line.split() for line in result.output.splitlines()
                                                 if line.startswith("MS "))]
    assert len(gaps) == 5 and all(0.001 <= g < 0.5 for g in gaps)
    # not whole hundredths of a second, as /proc/uptime (the clock before) would give
    assert any(abs(100 * g - round(100 * g)) > 0.01 for g in gaps)
    stamps = [(t, float(line.split()[-1])) for t, line in arrived if "guest| STAMP " in line]
    assert len(stamps) == 5
    host_s, guest_s = stamps[-1][0] - stamps[0][0], stamps[-1][1] - stamps[0][1]
    # the host sees each line within its reader's poll (vm._watch) of the guest printing it
    assert guest_s == pytest.approx(host_s, abs=0.2)
