"""Device-mapper's cost per request: dm-linear against the raw device, measured in the throwaway VM.

    python benchmarks/dm_request_cost.py [--rounds N] [--ios N]

The host kernel has no device-mapper, so the measurement runs in the VM
(:func:`diskmodel.calibrate.bench.vm.run_script_in_vm`).  The guest backs a
loop device with a file in its tmpfs (no disk below: what is timed is the
block layers' CPU), puts two dm-linear tables over it -- one segment
(LVM-1's table) and two segments over the two halves (LVM-2's) -- and runs
one queue-depth-1 O_DIRECT fio job of 4 KiB random reads and one of random
writes on the raw loop device and on each table, round after round, the
devices interleaved so that drifting host load falls on all three alike.

Device-mapper's cost per request in the guest is the median over rounds,
tables and directions of 1/IOPS(table) - 1/IOPS(raw) of the same round (a
queue-depth-1 job's time per request).  The VM is TCG (software emulation)
unless it says otherwise, so that figure is an emulated CPU's.  Each round
also times a job that is CPU alone (buffered 4 KiB reads of a tmpfs file),
which the host runs too: the guest's time over the host's is the
emulator's slowdown of kernel work, and ``dm_request_cost_s`` is the
guest's cost divided by it -- device-mapper's cost per request on the
host's CPU (an estimate: the emulator does not slow every code path
alike).  ``benchmarks/djordjevic_loo.py`` reads ``dm_request_cost_s`` from
``benchmarks/results/dm_request_cost.json``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

MIB = 1 << 20
IMAGE_BYTES = 64 * MIB
DEVICES = ("raw", "lin1", "lin2")
EMULATOR_NOTE = ("NOTE: timings measure an emulator (qemu TCG, software CPU emulation): the cost per request "
                 "is an emulated CPU's, an upper bound on a real CPU's")
#: A job that is CPU alone (buffered 4 KiB reads of a file in tmpfs: a system call and a page copy), run in the
#: guest and on the host: the ratio of their times per request is the emulator's slowdown of kernel work.
CPU_JOB = ("fio --name=c --filename={file} --rw=randread --bs=4k --ioengine=psync "
           f"--size={IMAGE_BYTES} --number_ios={{ios}} --norandommap --randrepeat=1 "
           "--output-format=terse --terse-version=3")
# fio's terse format v3: field 8 is the read IOPS, field 49 the write IOPS (1-based).
_IOPS_FIELD = {"randread": 7, "randwrite": 48}


def guest_script(rounds: int, ios: int) -> str:
    """The guest's shell script (fixed text: no user string reaches it; *rounds*, *ios* are ints)."""
    sectors = IMAGE_BYTES // 512
    half = sectors // 2
    fio = ("fio --name=c --filename=\"$DEV\" --rw=$RW --bs=4k --direct=1 --ioengine=psync "
           f"--size={IMAGE_BYTES} --number_ios={int(ios)} --norandommap --randrepeat=1 "
           "--output-format=terse --terse-version=3")
    return "\n".join([
        f"dd if=/dev/zero of=/tmp/img bs=1048576 count={IMAGE_BYTES // MIB} 2>/dev/null",
        f"dd if=/dev/zero of=/tmp/cpu bs=1048576 count={IMAGE_BYTES // MIB} 2>/dev/null",
        "LOOP=$(losetup -f)",
        "losetup \"$LOOP\" /tmp/img",
        f"echo \"0 {sectors} linear $LOOP 0\" | dmsetup create lin1 --noudevsync",
        f"printf '0 {half} linear %s 0\\n{half} {half} linear %s {half}\\n' \"$LOOP\" \"$LOOP\" "
        "| dmsetup create lin2 --noudevsync",
        "dmsetup mknodes",
        f"for ROUND in $(seq 1 {int(rounds)}); do",
        f"  OUT=$({CPU_JOB.format(ios=int(ios), file='/tmp/cpu')})",
        "  echo \"RESULT $ROUND cpu randread $OUT\"",
        "  for NAME in raw lin1 lin2; do",
        "    if [ $NAME = raw ]; then DEV=$LOOP; else DEV=/dev/mapper/$NAME; fi",
        "    for RW in randread randwrite; do",
        f"      OUT=$({fio})",
        "      echo \"RESULT $ROUND $NAME $RW $OUT\"",
        "    done",
        "  done",
        "done",
        "dmsetup remove --noudevsync lin2",
        "dmsetup remove --noudevsync lin1",
        "losetup -d \"$LOOP\"",
    ]) + "\n"


def parse_output(text: str) -> dict:
    """{(round, device, rw): IOPS} from the guest's RESULT lines."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("RESULT "):
            continue
        _, rnd, name, rw, terse = line.split(" ", 4)
        fields = terse.strip().split(";")
        out[(int(rnd), name, rw)] = float(fields[_IOPS_FIELD[rw]])
    return out


def host_cpu_request_s(rounds: int, ios: int) -> list[float]:
    """Time per request of :data:`CPU_JOB` on the host [s], one value per round (a file in /dev/shm, where
    there is one; the file is read from the page cache either way)."""
    import shlex
    import subprocess
    import tempfile

    values = []
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None  # memory, as the guest's tmpfs
    with tempfile.TemporaryDirectory(dir=shm, prefix="dm_request_cost.") as folder:
        path = Path(folder) / "cpu"
        with open(path, "wb") as f:
            f.truncate(IMAGE_BYTES)
        argv = [word.replace("{file}", str(path)) for word in shlex.split(CPU_JOB.format(ios=int(ios), file="{file}"))]
        for _ in range(rounds):
            out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
            values.append(1.0 / float(out.strip().split(";")[_IOPS_FIELD["randread"]]))
    return values


def costs(iops: dict) -> dict:
    """{(table, rw): [per-round 1/IOPS(table) - 1/IOPS(raw)] [s]}."""
    rounds = sorted({k[0] for k in iops})
    result = {}
    for table in ("lin1", "lin2"):
        for rw in _IOPS_FIELD:
            result[(table, rw)] = [1.0 / iops[(r, table, rw)] - 1.0 / iops[(r, "raw", rw)] for r in rounds
                                   if (r, table, rw) in iops and (r, "raw", rw) in iops]
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="rounds over the three devices (default 15)")
    ap.add_argument("--ios", type=int, default=3000, help="requests per fio job (default 3000)")
    add_results_dir_option(ap)
    args = ap.parse_args(argv)
    if args.rounds < 2:
        ap.error("--rounds must be >= 2")
    if args.ios < 100:
        ap.error("--ios must be >= 100")
    from diskmodel.calibrate.bench.vm import run_script_in_vm

    res = run_script_in_vm(guest_script(args.rounds, args.ios), scratch_disk_bytes=16 * MIB,
                           memory_bytes=512 * MIB, timeout_s=1800)
    if res.returncode != 0:
        print(res.output[-2000:], file=sys.stderr)
        print(f"the guest script failed (exit {res.returncode})", file=sys.stderr)
        return 1
    iops = parse_output(res.output)
    per = costs(iops)
    print(f"VM: {res.accelerator}, kernel {res.kernel_release}, {args.rounds} rounds of {args.ios} requests")
    for (table, rw), values in per.items():
        print(f"  {table} {rw}: {1e6 * statistics.median(values):.1f} us per request over raw "
              f"(rounds {', '.join(f'{1e6 * v:.1f}' for v in values)})")
    raw_s = {rw: statistics.median([1.0 / v for k, v in iops.items() if k[1] == "raw" and k[2] == rw])
             for rw in _IOPS_FIELD}
    every = [v for values in per.values() for v in values]
    guest_cpu = statistics.median([1.0 / v for k, v in iops.items() if k[1] == "cpu"])
    host_cpu = statistics.median(host_cpu_request_s(args.rounds, args.ios))
    slowdown = guest_cpu / host_cpu
    print(f"  CPU job: guest {1e6 * guest_cpu:.2f} us, host {1e6 * host_cpu:.2f} us per request: the emulator is "
          f"{slowdown:.1f} times slower; dm per request on the host's CPU: "
          f"{1e6 * statistics.median(every) / slowdown:.2f} us")
    lin1 = per[("lin1", "randread")] + per[("lin1", "randwrite")]
    lin2 = per[("lin2", "randread")] + per[("lin2", "randwrite")]
    figures = {
        "dm_request_cost_s": figure(statistics.median(every) / slowdown, "s",
                                    "device-mapper's cost per request on the host's CPU (the guest's, over the "
                                    "emulator's slowdown)", decimals=8, headline=True),
        "dm_request_cost_guest_s": figure(statistics.median(every), "s", "device-mapper's cost per request in the "
                                          f"guest (dm-linear over the raw device, median of {len(every)} job pairs, "
                                          f"{res.accelerator})", decimals=7, headline=True),
        "emulator_slowdown": figure(slowdown, "", "guest / host time per request of the CPU-only job", decimals=1),
        "dm_request_cost_p90_s": figure(sorted(every)[int(0.9 * (len(every) - 1))], "s",
                                        "the same, 90th percentile of the job pairs", decimals=7),
        "one_segment_cost_s": figure(statistics.median(lin1), "s", "one-segment table (LVM-1's)", decimals=7),
        "two_segment_cost_s": figure(statistics.median(lin2), "s", "two-segment table (LVM-2's)", decimals=7),
        "raw_read_request_s": figure(raw_s["randread"], "s", "raw loop device, time per 4 KiB read", decimals=7),
        "raw_write_request_s": figure(raw_s["randwrite"], "s", "raw loop device, time per 4 KiB write", decimals=7),
    }
    notes = [EMULATOR_NOTE] if res.accelerator == "tcg" else []
    details = {"accelerator": res.accelerator, "kernel_release": res.kernel_release,
               "iops": [{"round": k[0], "device": k[1], "rw": k[2], "iops": v} for k, v in sorted(iops.items())],
               "cost_s": {f"{t}/{rw}": v for (t, rw), v in per.items()}}
    write_result("dm_request_cost", figures, options=options_of(ap, args), results_dir=args.results_dir,
                 notes=notes, details=details)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
