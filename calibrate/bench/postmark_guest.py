"""PostMark inside a guest: the shell body that runs it there, and the parser of what it prints.

The body runs after the stack is built by the plan's script
(:meth:`diskmodel.calibrate.bench.provision.StackPlan.render_script`), in
the throwaway VM (:mod:`diskmodel.calibrate.bench.vm`) or, for tests, on the
host; it mirrors :func:`diskmodel.calibrate.bench.postmark.run_postmark_once`.

The guest has no Python: the body is ``sh`` text, and every value in it (the
command file's lines, the mount point, the file system's device) is a word
rendered by :func:`~diskmodel.calibrate.bench.steps.sh_word`, or a checked
integer; the command file is written by ``printf '%s\n'`` with one word per
line, never through a here-document that would expand it.
"""
from __future__ import annotations

import os
import re
from typing import Any

from diskmodel.calibrate.bench.copy import GUEST_CLOCK
from diskmodel.calibrate.bench.postmark_text import PostMarkError, check_echoed_config, command_file, parse_report
from diskmodel.calibrate.bench.postmark_results import PostMarkRun, PostMarkSummary, RunEnvironment, summarize
from diskmodel.calibrate.bench.steps import Concat, Ref, check_name, sh_word, sh_words

__all__ = ["guest_body", "parse_guest_output"]


_MARK = "DISKMODEL_PM"


def guest_body(config: Any, *, repeats: int = 1, memory_limit_bytes: int | None = None,
               drop_page_cache: bool = True, mount_var: str = "DISKMODEL_MNT",
               device=Ref("DISKMODEL_DEV0")) -> str:
    """Shell (busybox ash) that runs PostMark *repeats* times in ``"$<mount_var>"`` on *device* (a word,
    e.g. the plan's :attr:`~diskmodel.calibrate.bench.provision.StackPlan.device`).

    To be passed as the body of
    :meth:`~diskmodel.calibrate.bench.provision.StackPlan.render_script`. It prints the
    environment (kernel, /proc/mounts line, queue settings of the file
    system's device) and, per run, PostMark's output between markers with the
    outside time from the guest's clock
    (:data:`~diskmodel.calibrate.bench.copy.GUEST_CLOCK`). Cache control and the
    memory cgroup mirror :func:`run_postmark_once`: ``sync`` and drop caches
    before each run; with a limit, a cgroup (v2 memory.max, else v1
    memory.limit_in_bytes) made for the run and removed after it.
    :func:`parse_guest_output` reads what it prints.
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    if memory_limit_bytes is not None:
        if not isinstance(memory_limit_bytes, int) or memory_limit_bytes < 16 * (1 << 20):
            raise ValueError(f"memory_limit_bytes must be an int >= 16 MiB, got {memory_limit_bytes!r}")
    check_name(mount_var, "mount_var")
    mnt = Ref(mount_var)
    # One word per line of the command file; the location is the mount point, a reference.
    marker = "/diskmodel-location"
    cfg_words = [Concat(("set location ", mnt)) if line == f"set location {marker}" else line
                 for line in command_file(config, marker).splitlines()]
    limit = "" if memory_limit_bytes is None else str(memory_limit_bytes)
    return f"""set +e
pmdir=$(mktemp -d "${{TMPDIR:-/tmp}}/diskmodel-postmark.XXXXXX") || exit 1
DISKMODEL_UNDO="rm -rf '$pmdir';
$DISKMODEL_UNDO"
pmcfg="$pmdir/postmark.cfg"
printf '%s\\n' {sh_words(cfg_words)} > "$pmcfg" || exit 1
diskmodel_queue() {{  # sysfs queue directory of block device $1 (by its major:minor)
  q=/sys/dev/block/$(($(printf '0x%s' "$(stat -L -c %t "$1")"))):$(($(printf '0x%s' "$(stat -L -c %T "$1")")))
  [ -d "$q/queue" ] || q="$q/.."
  echo "$q/queue"
}}
fsdev=$(readlink -f {sh_word(device)})
fsq=$(diskmodel_queue "$fsdev")
echo "{_MARK} KERNEL $(uname -r)"
echo "{_MARK} DEVICE $fsdev $(basename "$(readlink -f "$fsq/..")")"
echo "{_MARK} MOUNT $(grep -F " ${mount_var} " /proc/mounts)"
echo "{_MARK} READ_AHEAD_KB $(cat "$fsq/read_ahead_kb" 2>/dev/null)"
echo "{_MARK} SCHEDULER $(cat "$fsq/scheduler" 2>/dev/null)"
bq=$(diskmodel_queue "$DISKMODEL_SCRATCH")
echo "{_MARK} BACKING $DISKMODEL_SCRATCH $(cat "$bq/read_ahead_kb" 2>/dev/null) $(cat "$bq/scheduler" 2>/dev/null)"
limit={sh_word(limit)}
cgv=''
if [ -n "$limit" ]; then
  if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    cgv=2; cgroot=/sys/fs/cgroup
    grep -qw memory $cgroot/cgroup.subtree_control || echo +memory > $cgroot/cgroup.subtree_control || exit 1
  elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cgv=1; cgroot=/sys/fs/cgroup/memory
  else
    echo "{_MARK} ERROR no memory cgroup controller in the guest" ; exit 1
  fi
  echo "{_MARK} CGROUP $cgv"
fi
i=1
while [ $i -le {sh_word(str(repeats))} ]; do
  {"sync; echo 3 > /proc/sys/vm/drop_caches || exit 1" if drop_page_cache else ":"}
  cg=''
  if [ -n "$limit" ]; then
    cg=$cgroot/diskmodel-postmark-$$-$i
    mkdir "$cg" || exit 1
    DISKMODEL_UNDO="rmdir '$cg' 2>/dev/null;
$DISKMODEL_UNDO"
    if [ "$cgv" = 2 ]; then echo "$limit" > "$cg/memory.max"; echo 0 > "$cg/memory.swap.max" 2>/dev/null
    else echo "$limit" > "$cg/memory.limit_in_bytes"; fi
  fi
  echo "{_MARK} BEGIN $i"
  t0=$({GUEST_CLOCK})
  if [ -n "$cg" ]; then
    sh -c 'echo $$ > "$1/cgroup.procs" && exec postmark "$2"' sh "$cg" "$pmcfg" 2>&1
  else
    postmark "$pmcfg" 2>&1
  fi
  rc=$?
  t1=$({GUEST_CLOCK})
  oom=0
  if [ -n "$cg" ]; then
    if [ "$cgv" = 2 ]; then oom=$(awk '$1=="oom_kill"{{print $2}}' "$cg/memory.events")
    else oom=$(awk '$1=="oom_kill"{{print $2}}' "$cg/memory.oom_control"); fi
    rmdir "$cg"
  fi
  echo "{_MARK} END $i $rc $t0 $t1 ${{oom:-0}}"
  [ "$rc" = 0 ] || exit "$rc"
  left=$(ls -A {sh_word(mnt)} | grep -v '^lost+found$' | wc -l)
  [ "$left" = 0 ] || {{ echo "{_MARK} ERROR postmark left $left entries"; exit 1; }}
  i=$((i + 1))
done
exit 0
"""


def parse_guest_output(output: str, config: Any, *, stack, accelerator: str,
                       kernel_release: str | None = None, memory_limit_bytes: int | None = None,
                       drop_page_cache: bool = True, backing: str | None = None) -> PostMarkSummary:
    """The :class:`PostMarkSummary` of what :func:`guest_body` printed on *stack* (a Stack).

    accelerator: "tcg" (emulated: the summary says the timings measure an
    emulator) or "kvm".
    """
    text = output.replace("\r", "")
    info: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith(_MARK + " ") and line.split()[1] not in ("BEGIN", "END"):
            parts = line.split(" ", 2)
            info[parts[1]] = parts[2] if len(parts) > 2 else ""
    if "ERROR" in info:
        raise PostMarkError(f"guest: {info['ERROR']}")
    mount = info.get("MOUNT", "").split()
    if len(mount) < 4:
        raise PostMarkError("guest output lacks the mount line (the stack was not built?):\n" + text[-2000:])
    sched_raw = info.get("SCHEDULER", "")
    m = re.search(r"\[([^\]]+)\]", sched_raw)
    sched = m.group(1) if m else (sched_raw or None)
    b = info.get("BACKING", "").split(" ", 2)
    bsched = None
    if len(b) == 3:
        mm = re.search(r"\[([^\]]+)\]", b[2])
        bsched = mm.group(1) if mm else b[2]
    ra = info.get("READ_AHEAD_KB", "").strip()
    env = RunEnvironment(
        stack=stack.short_name, stack_description=stack.describe(),
        kernel_release=kernel_release or info.get("KERNEL", ""),
        file_system=mount[2], mount_options=mount[3],
        device=(lambda d: f"{d[0]} ({d[1]})" if len(d) == 2 and os.path.basename(d[0]) != d[1] else d[0])(
            info.get("DEVICE", mount[0]).split()),
        read_ahead_kb=int(ra) if ra.isdigit() else None, scheduler=sched,
        backing=backing or (b[0] if b and b[0] else "guest scratch disk"),
        backing_device=os.path.basename(b[0]) if b and b[0] else None,
        backing_read_ahead_kb=int(b[1]) if len(b) > 1 and b[1].isdigit() else None,
        backing_scheduler=bsched, memory_limit_bytes=memory_limit_bytes,
        cgroup_version=int(info["CGROUP"]) if info.get("CGROUP", "").isdigit() else None,
        caches_dropped=drop_page_cache, emulated=accelerator == "tcg", accelerator=accelerator,
    )
    runs = []
    for m in re.finditer(rf"^{_MARK} BEGIN (\d+)\n(.*?)^{_MARK} END (\d+) (-?\d+) ([0-9.]+) ([0-9.]+) (\d+)$",
                         text, re.S | re.M):
        i, body, j, rc, t0, t1, oom = m.groups()
        if i != j:
            raise PostMarkError(f"guest output: run {i} ended as run {j}")
        if int(rc) != 0 or int(oom):
            why = f" ({oom} OOM kill(s) in its memory cgroup)" if int(oom) else ""
            raise PostMarkError(f"guest: postmark run {i} exited with status {rc}{why}:\n{body[-2000:]}")
        check_echoed_config(config, body)
        report = parse_report(body)
        runs.append(PostMarkRun(report=report, wall_s=float(t1) - float(t0), environment=env, config=config))
    if not runs:
        raise PostMarkError("guest output holds no completed PostMark run:\n" + text[-2000:])
    return summarize(runs)
