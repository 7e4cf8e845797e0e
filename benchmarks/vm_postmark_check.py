"""PostMark on native, LVM-1 and LVM-2 in the throwaway VM, against the model.

    python benchmarks/vm_postmark_check.py [--files N] [--transactions N] [--repeats 2]
        [--vm-memory 512M] [--fs-size 512M] [--layouts native,lvm1,lvm2]

Issue 5, "Checking the model", item 3.  THE VM RUNS UNDER TCG (qemu's
software CPU emulation; KVM is never chosen on its own): every timing here
measures an emulator, not the storage, and every report this script prints
says so.

What the model is given (measured in a guest of the same VM configuration,
not taken from the host):

1. **The emulated disk**, by a small guest-side timing script in its own
   throwaway VM (``run_script_in_vm``, same kernel, RAM and virtio scratch
   disk with ``cache=none``): after writing 256 MiB of the scratch disk
   (so reads hit allocated blocks), ``dd iflag=direct`` times 4 KiB reads
   (per-request latency: the median of five rounds of 2,000) and 1 MiB
   reads (the transfer rate, the latency taken out), by the guest's clock
   (:data:`~diskmodel.calibrate.bench.copy.GUEST_CLOCK`, the kernel's monotonic clock to the nanosecond).
   As on the host (:mod:`diskmodel.calibrate.bench.hostcheck`, :func:`flat_latency_disk`), the
   disk is a flat latency model: the latency as command overhead, seek 0,
   rotation negligible.
2. **The memory path** of the guest, in the same timing VM: ``dd`` in 4 KiB
   calls to and from a file in the guest's tmpfs (R_CT of eq. 2; per-call
   ``syscall_s`` 0, as the 4 KiB calls are inside R_CT) and one PostMark
   run of the same workload on that tmpfs, whose wall time less the model's
   copy time, per file operation, is ``cpu_per_file_operation_s``.  Under
   TCG this CPU term dominates everything.
3. **The page cache**: the PostMark VMs run without a memory cgroup, with
   ``--vm-memory`` of RAM; the model's page cache is the guest's
   MemAvailable at the start of the timing VM (same kernel, initramfs and
   RAM), less 4 MiB for PostMark's own memory.
4. **Layouts**: the stacks the VM builds, the model's volumes taken from
   the same descriptions (:func:`diskmodel.model.stacks.stack.paper_stack` with
   ``fs_size_bytes``: native a :class:`Partition`; LVM-1/LVM-2 a
   :class:`LinearVolume` over one or two PVs, 4 MiB extents, 1 MiB pe_start).  ``LvmMapping`` is left at zero: the
   mapping costs MD_mapping and FB_mapping are fitted coefficients and this
   check has nothing to fit them on without using the cells it predicts.
   With a flat disk the mechanistic part of T_LVM_MO is 0 too, so the
   model predicts LVM-1 = LVM-2 = native; the measured LVM cells show how
   much the device mapper costs (under emulation).

Per-cell error = predicted / measured - 1 [%] over (layout, read/write);
measured = PostMark's bytes over the guest's outside clock (``GUEST_CLOCK``),
mean and 95 % Student-t interval of the repeats.  The last line is
``median_cell_error_pct: X``, the median of the absolute errors.  Writes
``benchmarks/results/vm_postmark_check.json`` (see ``_artifact.py``);
docs/benchmarks.md discusses the figures of earlier runs and what the model
leaves out.  Every VM, loop device, VG/LV and mount is torn down by the VM
script's trap and the VM teardown (also on Ctrl-C).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402
from host_postmark_check import _size, add_workload_options, workload_from  # noqa: E402

from diskmodel.calibrate.bench.copy import GUEST_CLOCK  # noqa: E402
from diskmodel.calibrate.bench.hostcheck import PIPELINE  # noqa: E402
from diskmodel.model.units import GIB, KIB, MIB  # noqa: E402

from diskmodel.model.drive.disk import flat_latency_disk  # noqa: E402

from diskmodel.model.filesystems.filesystem import FileSystem, PageCache  # noqa: E402
from diskmodel.model.predict import predict  # noqa: E402
from diskmodel.model.stacks.stack import paper_stack, stack_on  # noqa: E402
from diskmodel.model.predictions.workload import PostMarkConfig, expected_counts  # noqa: E402

EMULATOR_NOTE = ("NOTE: timings measure an emulator (qemu TCG, software CPU emulation), "
                 "not the storage's speed")
_MARK = "HOSTCHECK"


@dataclass(frozen=True)
class GuestCalibration:
    """What the timing VM measured [s, bytes, bytes/s]."""

    latency_s: float
    rate_bytes_per_s: float
    copy_rate_bytes_per_s: float
    tmpfs_postmark_wall_s: float
    mem_available_bytes: int
    boot_s: float
    run_s: float
    accelerator: str


def _disk_script(*, small_reads: int, big_reads_mib: int, copy_rounds: int) -> str:
    """Guest script: MemAvailable, O_DIRECT 4 KiB and 1 MiB reads of the scratch disk, tmpfs dd copies."""
    return f"""set -e
up() {{ {GUEST_CLOCK}; }}
echo "{_MARK} MEMAVAIL $(awk '/^MemAvailable:/{{print $2 * 1024}}' /proc/meminfo)"
dd if=/dev/zero of=/dev/vda bs=1M count={big_reads_mib} oflag=direct conv=fsync 2>/dev/null
sync; echo 3 > /proc/sys/vm/drop_caches
r=0
while [ $r -lt 5 ]; do
  t0=$(up); dd if=/dev/vda of=/dev/null bs=4096 count={small_reads} skip=$((r * {small_reads})) iflag=direct 2>/dev/null; t1=$(up)
  echo "{_MARK} SMALL$r {small_reads} $t0 $t1"
  r=$((r + 1))
done
i=0; t0=$(up)
while [ $i -lt 4 ]; do dd if=/dev/vda of=/dev/null bs=1M count={big_reads_mib} iflag=direct 2>/dev/null; i=$((i + 1)); done
t1=$(up)
echo "{_MARK} BIG $((4 * {big_reads_mib})) $t0 $t1"
work=$(mktemp -d)
i=0; t0=$(up)
while [ $i -lt {copy_rounds} ]; do dd if=/dev/zero of="$work/dd.bin" bs=4096 count=8192 conv=notrunc 2>/dev/null; i=$((i + 1)); done
t1=$(up)
echo "{_MARK} COPYW $(({copy_rounds} * 33554432)) $t0 $t1"
i=0; t0=$(up)
while [ $i -lt {copy_rounds} ]; do dd if="$work/dd.bin" of=/dev/null bs=4096 2>/dev/null; i=$((i + 1)); done
t1=$(up)
echo "{_MARK} COPYR $(({copy_rounds} * 33554432)) $t0 $t1"
rm -rf "$work"
"""


def _tmpfs_postmark_script(config: PostMarkConfig) -> str:
    """Guest script: one PostMark run of *config* on the guest's tmpfs (no disk), timed by the guest's clock."""
    from diskmodel.calibrate.bench.postmark_text import command_file

    cfg = command_file(config, "$work/pm")
    return f"""set -e
up() {{ {GUEST_CLOCK}; }}
work=$(mktemp -d)
mkdir "$work/pm"
cat > "$work/pm.cfg" <<PMEOF
{cfg}PMEOF
sync; echo 3 > /proc/sys/vm/drop_caches
t0=$(up); postmark "$work/pm.cfg" > "$work/pm.out" 2>&1; t1=$(up)
if grep -q '^Error:' "$work/pm.out"; then cat "$work/pm.out"; exit 1; fi
rm -rf "$work"
echo "{_MARK} TMPFSPM 0 $t0 $t1"
"""


def _run_marked(script: str, *, memory_bytes: int, scratch_bytes: int, need: tuple):
    from diskmodel.calibrate.bench.vm import run_script_in_vm

    res = run_script_in_vm(script, scratch_disk_bytes=scratch_bytes, memory_bytes=memory_bytes, timeout_s=3600)
    if res.returncode != 0:
        raise RuntimeError(f"the timing VM script failed ({res.returncode}):\n{res.output[-3000:]}")
    got = {}
    for line in res.output.replace("\r", "").splitlines():
        parts = line.split()
        if parts and parts[0] == _MARK:
            got[parts[1]] = parts[2:]
    missing = [k for k in need if k not in got]
    if missing:
        raise RuntimeError(f"the timing VM printed no {missing}:\n{res.output[-3000:]}")
    return res, got


def calibrate_guest(config: PostMarkConfig, *, memory_bytes: int, tmpfs_memory_bytes: int = 1 << 30,
                    small_reads: int = 2000, big_reads_mib: int = 256, copy_rounds: int = 8,
                    say=print) -> GuestCalibration:
    """Two throwaway timing VMs (see the module docstring): one with the PostMark VMs' RAM for the
    disk, the copy rate and MemAvailable; one with *tmpfs_memory_bytes* of RAM, room for the
    workload's files in its tmpfs, for PostMark without a disk."""
    res, got = _run_marked(_disk_script(small_reads=small_reads, big_reads_mib=big_reads_mib,
                                        copy_rounds=copy_rounds),
                           memory_bytes=memory_bytes, scratch_bytes=(big_reads_mib + 16) * MIB,
                           need=("MEMAVAIL", "SMALL0", "SMALL4", "BIG", "COPYW", "COPYR"))
    res2, got2 = _run_marked(_tmpfs_postmark_script(config), memory_bytes=tmpfs_memory_bytes,
                             scratch_bytes=16 * MIB, need=("TMPFSPM",))
    got.update(got2)

    def span(key):
        n, t0, t1 = got[key]
        dt = float(t1) - float(t0)
        if dt <= 0:
            raise RuntimeError(f"{key}: no measurable time ({dt} s); make the run longer")
        return float(n), dt

    rounds = [span(f"SMALL{r}") for r in range(5)]
    per_round = sorted(dt / n for n, dt in rounds)
    latency = per_round[2]  # the median of five rounds: the emulator's latency moves with the host's load
    m, dt_big = span("BIG")
    per_mib = dt_big / m - latency
    if per_mib <= 0:
        raise RuntimeError(f"1 MiB reads ({dt_big / m * 1e3:.2f} ms) were not slower than 4 KiB reads "
                           f"({latency * 1e3:.2f} ms): no transfer rate can be read off")
    rate = MIB / per_mib
    bw, dtw = span("COPYW")
    br, dtr = span("COPYR")
    copy = 0.5 * (bw / dtw + br / dtr)
    _, pm = span("TMPFSPM")
    cal = GuestCalibration(latency, rate, copy, pm, int(float(got["MEMAVAIL"][0])), res.boot_s + res2.boot_s,
                           res.run_s + res2.run_s, res.accelerator)
    say(f"timing VMs ({res.accelerator}; {memory_bytes >> 20} MiB RAM, and {tmpfs_memory_bytes >> 20} MiB for "
        f"the tmpfs run; boot {cal.boot_s:.1f} s, scripts {cal.run_s:.1f} s): 4 KiB O_DIRECT read "
        f"{latency * 1e6:.0f} us (median of 5 rounds: {', '.join(f'{x * 1e6:.0f}' for x in per_round)}), transfer {rate / 1e6:.1f} MB/s, tmpfs dd 4 KiB calls {copy / 1e6:.0f} MB/s, "
        f"PostMark on tmpfs {pm:.2f} s, MemAvailable {cal.mem_available_bytes / MIB:.0f} MiB")
    return cal


def filesystem_for(fs_size_bytes: int) -> FileSystem:
    """ext3 as mke2fs 1.47 makes it for this size (see /etc/mke2fs.conf): 1 KiB blocks below
    512 MiB ("small"), else 4 KiB; 256-byte inodes; e2fsprogs' default journal size."""
    block = 1024 if fs_size_bytes < 512 * MIB else 4096
    blocks = fs_size_bytes // block
    for limit, jblocks in ((32768, 1024), (256 * 1024, 4096), (512 * 1024, 8192), (4096 * 1024, 16384)):
        if blocks < limit:
            break
    else:
        jblocks = 32768
    return FileSystem(kind="ext3", block_size_bytes=block, inode_size_bytes=256,
                      journal_size_bytes=jblocks * block, max_request_bytes=512 * KIB)


def run_check(config: PostMarkConfig, *, layouts=("native", "lvm1", "lvm2"), repeats: int = 2,
              fs_size_bytes: int = 512 * MIB, vm_memory_bytes: int = 192 * MIB, say=print, info=None):
    """Time the guest, run PostMark per layout in the VM, predict; returns (rows, median error %).

    *info*, a dict if given, receives the model's inputs (the guest calibration, the page cache,
    ``cpu_per_file_operation_s``) and the wall time.  SIGINT and SIGTERM raise
    :class:`diskmodel.calibrate.bench.host_executor.Interrupted` throughout; each VM (and what its script
    built) is gone by then.
    """
    from diskmodel.calibrate.bench.host_executor import handle_signals

    with handle_signals():
        return _run_check(config, layouts=layouts, repeats=repeats, fs_size_bytes=fs_size_bytes,
                          vm_memory_bytes=vm_memory_bytes, say=say, info={} if info is None else info)


def _run_check(config, *, layouts, repeats, fs_size_bytes, vm_memory_bytes, say, info):
    from diskmodel.calibrate.bench import provision as L
    from diskmodel.calibrate.bench.postmark import run_on_stack

    t0 = time.monotonic()
    say(EMULATOR_NOTE)
    say(f"workload: {config.number_of_files} files of {config.min_file_size_bytes}-{config.max_file_size_bytes} B, "
        f"{config.transactions} transactions; ext3 of {fs_size_bytes >> 20} MiB; VM RAM {vm_memory_bytes >> 20} MiB, "
        f"no memory cgroup; {repeats} repeats per layout")
    cal = calibrate_guest(config, memory_bytes=vm_memory_bytes, say=say)
    if cal.accelerator == "tcg":
        say(EMULATOR_NOTE)
    stacks = {name: paper_stack(name, fs_size_bytes=fs_size_bytes) for name in ("native", "lvm1", "lvm2")}
    needed = max(L.backing_bytes_required(stack) for stack in stacks.values())
    disk = flat_latency_disk(cal.latency_s, cal.rate_bytes_per_s, needed + MIB, name="emulated virtio disk",
                             provenance="timed in a TCG guest with dd iflag=direct")
    fs = filesystem_for(fs_size_bytes)
    counts = expected_counts(config)
    ops = counts.total.creates + counts.total.deletes + counts.total.reads + counts.total.appends
    cache = PageCache(size_bytes=float(max(cal.mem_available_bytes - 4 * MIB, 0)),
                      rate_bytes_per_s=cal.copy_rate_bytes_per_s, syscall_s=0.0)
    copies = predict(stack_on(disk, stacks["native"].volume, fs), counts,
                     cache.evolve(size_bytes=float(64 * GIB))).dst_parts["cache_s"]
    cpu = (cal.tmpfs_postmark_wall_s - copies) / ops
    if cpu < 0:
        raise RuntimeError(f"the model's copy time ({copies:.2f} s) exceeds the guest's tmpfs run "
                           f"({cal.tmpfs_postmark_wall_s:.2f} s)")
    fs = fs.evolve(cpu_per_file_operation_s=cpu)
    info.update(guest_calibration=dataclasses.asdict(cal), page_cache_bytes=cache.size_bytes,
                cpu_per_file_operation_s=cpu, model_copies_s=copies)
    say(f"model: command overhead {disk.command_overhead_s * 1e6:.0f} us, seek 0, rate "
        f"{disk.zone_rates_bytes_per_s()[0] / 1e6:.1f} MB/s; page cache {cache.size_bytes / MIB:.0f} MiB, "
        f"R_CT {cache.rate_bytes_per_s / 1e6:.0f} MB/s; cpu_per_file_operation_s {cpu * 1e6:.0f} us "
        f"(tmpfs {cal.tmpfs_postmark_wall_s:.1f} s - copies {copies:.2f} s over {ops:.0f} operations); "
        f"ext3 block {fs.block_size_bytes} B, journal {fs.journal_size_bytes >> 20} MiB; LvmMapping zero")

    rows = []
    for layout in layouts:
        t1 = time.monotonic()
        summary = run_on_stack(stacks[layout], config, vm=True, repeats=repeats, vm_memory_bytes=vm_memory_bytes)
        env = summary.environment
        walls = ", ".join(f"{r.wall_s:.1f}" for r in summary.runs)
        say(f"  ran {layout} in the VM ({env.accelerator}; {env.device}): wall {walls} s "
            f"({time.monotonic() - t1:.0f} s with boot and build)" + (f" - {env.note}" if env.note else ""))
        volume = stacks[layout].volume
        p = predict(stack_on(disk, volume, fs), counts, cache)
        pp = (predict(stack_on(disk, volume, fs.evolve(overlapped_writeback=True)), counts, cache)
              if PIPELINE else None)
        ci = summary.conf_int()
        for kind in ("read", "write"):
            key = f"{kind}_bytes_per_s_wall"
            m = summary.params[key]
            pred = getattr(p, f"{kind}_throughput_bytes_per_s")
            pipe = getattr(pp, f"{kind}_throughput_bytes_per_s") if pp is not None else math.nan
            rows.append({"layout": layout, "kind": kind, "measured": m,
                         "ci": (ci.loc[key, "lower"], ci.loc[key, "upper"]), "predicted": pred,
                         "error_pct": 100 * (pred / m - 1), "wall_s": summary.params["wall_s"],
                         "predicted_elapsed_s": p.elapsed_s, "emulated": env.emulated,
                         "pipeline": pipe, "pipeline_error_pct": 100 * (pipe / m - 1)})

    say("")
    say(EMULATOR_NOTE)
    say(f"{'layout':>7} {'op':>5} {'measured KiB/s (95% CI)':>30} {'predicted':>10} {'err %':>7} "
        f"{'wall s':>7} {'pred s':>7} {'pipeline':>10} {'err %':>7}")
    for r in rows:
        lo, hi = r["ci"]
        ci = f"[{lo / KIB:.1f}, {hi / KIB:.1f}]" if math.isfinite(lo) else "[n/a]"
        say(f"{r['layout']:>7} {r['kind']:>5} {r['measured'] / KIB:>10.1f} {ci:>19} {r['predicted'] / KIB:>10.1f} "
            f"{r['error_pct']:>+7.1f} {r['wall_s']:>7.1f} {r['predicted_elapsed_s']:>7.1f} "
            f"{r['pipeline'] / KIB:>10.1f} {r['pipeline_error_pct']:>+7.1f}")
    med = float(statistics.median(abs(r["error_pct"]) for r in rows))
    if PIPELINE:
        say(f"median_cell_error_pct (pipeline what-if, FileSystem(overlapped_writeback=True)): "
            f"{statistics.median(abs(r['pipeline_error_pct']) for r in rows):.1f}")
    info["wall_s"] = time.monotonic() - t0
    if PIPELINE:
        info["pipeline_median_cell_error_pct"] = float(statistics.median(abs(r["pipeline_error_pct"]) for r in rows))
    say(f"wall time of the check: {info['wall_s']:.0f} s")
    say(f"median_cell_error_pct: {med:.1f}")
    return rows, med


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_workload_options(ap, files=8000, transactions=3000)
    ap.add_argument("--fs-size", type=_size, default=512 * MIB)
    ap.add_argument("--vm-memory", type=_size, default=512 * MIB)
    ap.add_argument("--layouts", default="native,lvm1,lvm2")
    add_results_dir_option(ap)
    args = ap.parse_args(argv)
    config = workload_from(args)
    info: dict = {}
    try:
        rows, med = run_check(config, layouts=tuple(args.layouts.split(",")), repeats=args.repeats,
                              fs_size_bytes=args.fs_size, vm_memory_bytes=args.vm_memory, info=info)
    except KeyboardInterrupt as exc:
        print(f"{exc or 'interrupted'}: the VM and its files are gone", file=sys.stderr)
        return 130
    except ValueError as exc:  # an option the guest cannot take (e.g. too little RAM for its initramfs)
        print(f"vm_postmark_check: {exc}", file=sys.stderr)
        return 2
    accelerator = info["guest_calibration"]["accelerator"]
    figures = {
        "median_cell_error_pct": figure(
            med, "%", f"median |error| of the {len(rows)} cells (layout x read/write) in the VM ({accelerator})",
            decimals=1, headline=True),
        "guest_read_latency_us": figure(info["guest_calibration"]["latency_s"] * 1e6, "µs",
                                        "guest's 4 KiB O_DIRECT read latency (median of five rounds)", decimals=0),
        "cpu_per_file_operation_us": figure(info["cpu_per_file_operation_s"] * 1e6, "µs",
                                            "guest CPU per file operation (tmpfs PostMark run)", decimals=0),
        "wall_s": figure(info["wall_s"], "s", "wall time of the check", decimals=0),
    }
    if "pipeline_median_cell_error_pct" in info:
        figures["pipeline_median_cell_error_pct"] = figure(
            info["pipeline_median_cell_error_pct"], "%", "the same, pipeline what-if (overlapped_writeback)",
            decimals=1)
    notes = [EMULATOR_NOTE] if accelerator == "tcg" else []
    write_result("vm_postmark_check", figures, options=options_of(ap, args), results_dir=args.results_dir,
                 notes=notes, details={"rows": [{**r, "ci": list(r["ci"])} for r in rows], **info})
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
