"""Dagenais' network cells in the throwaway VM on emulated drives: ext2 on a local drive, on a Network Block
Device to a loop file, on RAID 1 over a local drive and that NBD, and an NFS mount of ext2; beside the
model's prediction of the same stacks on the same drives.

One VM boot (:func:`~diskmodel.calibrate.emulate.for_vm.run_script_on_emulated_drives`: two wd800bd,
the guest's ``/dev/vdb`` and ``/dev/vdc``) runs the group. The link is the one
:mod:`diskmodel.calibrate.bench.network` builds, unshaped: a veth pair between the guest's own network
namespace (the server, 10.77.0.1) and a namespace ``dmcli`` made for the client (10.77.0.2), so
every block and every RPC crosses the guest's TCP stack (Dagenais' "NBD-local": the daemon serving a
local disk through the network protocol). The NBD, RAID 1 and NFS cells run again over Dagenais' 10 Mb/s
network (:data:`SHAPED`): each such cell shapes both veth ends with tbf
(:func:`diskmodel.calibrate.bench.network.shaped`'s rate and bucket, as the network check shapes them)
before it builds its stack, is refused when the qdiscs are not there, and removes them in its EXIT
trap; its link fit and pace are taken unshaped just before, and the model's NBD device and NFS mount
cross a :class:`~diskmodel.model.stacks.network.Network` of that rate.

- **The server.** ``nbd-server`` (newstyle, a config file) exports, with ``flush = true`` (the client's
  flush becomes an fsync of the file, as a buffered loop device's does: nbd-server's ``expflush``), a
  zero-filled image file in ext2 on a partition of ``vdb`` (Dagenais' "Network Block Device to a loop
  device to a file"); the kernel's NFS server exports that ext2 (``sync``, the exportfs default).
- **The client.** ``nbd-client -L`` in ``dmcli`` (the socket is the namespace's; ``/dev/nbd0`` is the
  guest's); ``mount -t nfs -o vers=3,nolock,proto=tcp`` and the copy inside ``dmcli`` (its mount
  namespace).
- **The link's own cost.** Just before each NBD cell, ``nbd-server`` serves an image on tmpfs (no disk) and
  ``dd`` with direct I/O times 4 KiB and 128 KiB requests, reads and writes one at a time (three rounds, each point their median): the line
  through the two per-request times, ``a + S / c``, is the model's NBD device's ``client_overhead_s``
  and ``copy_rate_bytes_per_s`` (everything per request on the guest's one CPU, client and server,
  as :mod:`benchmarks.network_check` fits it), a write's for the copy's write step and a read's for its
  read step. The NFS cell's pace is the copy on an NFS mount of a tmpfs export (the RPCs' own cost
  on this CPU, with no disk), and the model's mount has no per-RPC cost of its own.

Each cell is its own ``sh -c`` script whose EXIT trap tears its stack down; the group's EXIT trap stops
the servers and removes the veth pair, the namespace and the tmpfs, and prints a marker the parser
checks. The markers and the copy's lines are :mod:`~diskmodel.calibrate.bench.stacks_vm`'s, read by its
:func:`~diskmodel.calibrate.bench.stacks_vm.parse_group`.
"""
from __future__ import annotations

import math
import re
import time

import numpy as np

from diskmodel.calibrate.bench.copy import GUEST_CLOCK, copy_shell
from diskmodel.calibrate.bench.network import CLIENT_IP, NBD_PORT, SERVER_IP, shaped
from diskmodel.calibrate.bench.network import _shape as shape_shell
from diskmodel.calibrate.bench.stacks_vm import (MD_OFFSET, MKFS_OPTIONS, PART_START, Cell, _marker_shell, _part,
                                                 _queue_shell, _stack, parse_group)
from diskmodel.calibrate.bench.steps import sh_word
from diskmodel.calibrate.emulate.drives import model_drive
from diskmodel.model.predictions.block_workloads import FileCopy
from diskmodel.model.stacks.loop_file import LoopFile
from diskmodel.model.stacks.network import NbdDevice, Network, NfsMount, nfsd_max_block_bytes
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import FileSystemNode, Stack

__all__ = ["GROUP", "IMAGE_BYTES", "LINK_SIZES", "SHAPED", "base_label", "cells", "group_script", "link_fit", "measure_group",
           "parse_link", "step_stacks"]

MIB = 1 << 20
GROUP = "net"
#: The server's partition of vdb and the exported image in its ext2 [bytes].
SERVER_PART_BYTES, IMAGE_BYTES = 256 * MIB, 128 * MIB
#: The link fit's request sizes [bytes] and requests per point (read and write each).
LINK_SIZES = (4096, 128 * 1024)
LINK_COUNTS = {4096: 96, 128 * 1024: 24}
LINK_ROUNDS = 3
_MARK = "DISKMODEL_STACKS"
UNSHAPED = Network(None, 0.0)
#: The guest's memory [bytes] (the VM's 512 MiB) and its MemTotal as the guest's kernel reports it (read in
#: the VM on 2026-12-05: 468404 kB), of which its nfsd takes its largest READ and WRITE (64 KiB; read there
#: from /proc/fs/nfsd/max_block_size once nfsd ran): the mount's rsize and wsize.
GUEST_MEMORY_BYTES = 512 << 20
GUEST_MEMTOTAL_BYTES = 468404 << 10
#: Dagenais' network: 10 megabits/second (tbf's rate on both veth ends, its bucket tbf_burst_bytes's; no
#: delay of its own: the guest's round trip is in the link fit's per-request time).
SHAPED = shaped(10e6 / 8, 0.0)
SHAPED_SUFFIX = ", 10 Mb/s link"
DRIVES = (("wd800bd", "vdb"), ("wd800bd", "vdc"))
_BASE = ("ext2, local drive (network group)", "ext2 on NBD to a loop file",
         "ext2, RAID 1 over a local drive and NBD", "NFS v3 of ext2 (sync export)")
#: The cells: the local drive, then NBD, RAID 1 over the local drive and NBD, and NFS, each over the unshaped
#: link (the protocols' own cost) and over Dagenais' 10 Mb/s one.
LABELS = _BASE + tuple(x + SHAPED_SUFFIX for x in _BASE[1:])


def base_label(label: str) -> str:
    """*label* without its link (:data:`SHAPED_SUFFIX`)."""
    return label.removesuffix(SHAPED_SUFFIX)


def _nbd(link: dict | None, step: str, network: Network = UNSHAPED) -> NbdDevice:
    """The NBD device over the image file, its per-request cost the link fit's for *step*'s operation
    (``{"write": {"overhead_s", "copy_rate_bytes_per_s"}, "read": ...}``; None: the model's defaults)."""
    # nbd-server reads and writes the image file itself (its page cache, as a buffered loop device's worker
    # would): that copy is the NBD device's per-request cost (the link's fit, measured serving a tmpfs image),
    # so the image's worker costs nothing more
    image = LoopFile(_part("vdb", size=SERVER_PART_BYTES), IMAGE_BYTES, allocation="zero_filled",
                     host_file_system="ext2", direct_io=False, copy_rate_bytes_per_s=math.inf, request_overhead_s=0.0)
    fit = (link or {}).get(step)
    costs = {} if fit is None else {"client_overhead_s": fit["overhead_s"], "server_overhead_s": 0.0,
                                    "copy_rate_bytes_per_s": fit["copy_rate_bytes_per_s"]}
    return NbdDevice(image, network, server=f"{SERVER_IP}:{NBD_PORT}", **costs)


def _stacks(step: str, link: dict | None) -> list[Stack]:
    """The stacks of :data:`LABELS`, in their order."""
    local, both = DRIVES[:1], DRIVES
    out = [_stack(_part("vdb", size=SERVER_PART_BYTES), "ext2", local, "local")]
    for network, tag in ((UNSHAPED, ""), (SHAPED, " 10 Mb/s")):
        nbd = _nbd(link, step, network)
        mirror = RaidArray("raid1", (_part("vdc", size=IMAGE_BYTES), nbd), tool="md",
                           array_size_bytes=IMAGE_BYTES - MD_OFFSET)
        export = FileSystemNode(_part("vdb", size=SERVER_PART_BYTES), kind="ext2", mkfs_options=MKFS_OPTIONS)
        payload = nfsd_max_block_bytes(GUEST_MEMTOTAL_BYTES)
        nfs = NfsMount(export, network, server=f"{SERVER_IP}:/srv", version="3", sync_export=True,
                       rsize_bytes=payload, wsize_bytes=payload, client_overhead_s=0.0, server_op_s=0.0)
        out += [_stack(nbd, "ext2", local, "nbd" + tag), _stack(mirror, "ext2", both, "raid1 local + nbd" + tag),
                Stack(nfs, tuple(model_drive(p, name=d) for p, d in local), "nfs" + tag)]
    return out


def cells(link: dict | None = None) -> list[Cell]:
    """The group's cells, each stack with the write step's link costs."""
    return [Cell("000", label, stack) for label, stack in zip(LABELS, _stacks("write", link))]


def step_stacks(label: str, link: dict | None) -> dict:
    """The stack of cell *label* for each copy step: ``{"write": Stack, "read": Stack}``."""
    i = LABELS.index(label)
    return {step: _stacks(step, link)[i] for step in ("write", "read")}


_PRELUDE = f"""set +e
for set in layers network; do
  while read -r m; do [ -n "$m" ] && {{ insmod "$m" 2>/dev/null || :; }}; done < /etc/diskmodel/modules.$set
done
now_ns() {{ awk '/^now at/ {{print $3; exit}}' /proc/timer_list; }}
net_teardown() {{
  set +e
  ip netns exec dmcli umount /mnt/nfsfit 2>/dev/null
  nbd-client -d /dev/nbd0 >/dev/null 2>&1
  killall nbd-server 2>/dev/null
  rpc.nfsd 0 >/dev/null 2>&1; exportfs -ua >/dev/null 2>&1
  killall rpc.mountd rpcbind >/dev/null 2>&1
  umount /proc/fs/nfsd 2>/dev/null
  i=0; while [ -n "$(pidof nbd-server rpc.mountd rpcbind)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  killall -9 nbd-server rpc.mountd rpcbind >/dev/null 2>&1
  ip link del dmv0 2>/dev/null; ip netns del dmcli 2>/dev/null
  umount /run/dmexp 2>/dev/null
  left=""
  ip link show dmv0 >/dev/null 2>&1 && left="$left veth"
  grep -q ' /run/dmexp ' /proc/mounts && left="$left tmpfs"
  [ "$(cat /sys/block/nbd0/size 2>/dev/null || echo 0)" = 0 ] || left="$left nbd0"
  echo "{_MARK} TEARDOWN ${{left:-clean}}"
}}
trap net_teardown EXIT
trap 'exit 130' INT TERM
ip link set lo up
ip netns add dmcli
ip link add dmv0 type veth peer name dmv1
ip link set dmv1 netns dmcli
ip addr add {SERVER_IP}/24 dev dmv0
ip link set dmv0 up
ip netns exec dmcli ip addr add {CLIENT_IP}/24 dev dmv1
ip netns exec dmcli ip link set dmv1 up
ip netns exec dmcli ip link set lo up
mkdir -p /tmp/diskmodel-pace /srv /mnt/top /run/dmexp
mount -t tmpfs -o size=96m dmexp /run/dmexp
dd if=/dev/zero of=/run/dmexp/fit.img bs=1048576 count=32 2>/dev/null
mkdir -p /run/dmexp/nfs
cat > /tmp/nbd.conf <<'DM_NBD_EOF'
[generic]
listenaddr = {SERVER_IP}
port = {NBD_PORT}
[fit]
exportname = /run/dmexp/fit.img
flush = true
[image]
exportname = /srv/image
flush = true
DM_NBD_EOF
nbd-server -C /tmp/nbd.conf 2>/dev/null
grep -q '^_rpc:' /etc/passwd || echo '_rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin' >> /etc/passwd
grep -q '^nogroup:' /etc/group || echo 'nogroup:x:65534:' >> /etc/group
mkdir -p /run/rpcbind /var/lib/nfs/v4recovery
touch /var/lib/nfs/etab /var/lib/nfs/rmtab
rpcbind -w
mount -t nfsd nfsd /proc/fs/nfsd
cat > /etc/exports <<'DM_EXPORTS_EOF'
/srv {SERVER_IP.rsplit('.', 1)[0]}.0/24(rw,sync,no_subtree_check,no_root_squash,fsid=1)
/run/dmexp/nfs {SERVER_IP.rsplit('.', 1)[0]}.0/24(rw,sync,no_subtree_check,no_root_squash,fsid=2)
DM_EXPORTS_EOF
exportfs -ra
rpc.mountd
rpc.nfsd 2
"""
#: Shell connecting /dev/nbd0 to the export named by its argument (nbd-server may still be starting).
_NBD_CONNECT = f"""nbd_connect() {{
  i=0
  until ip netns exec dmcli nbd-client -N "$1" -L {SERVER_IP} {NBD_PORT} /dev/nbd0 -b 4096 >/tmp/nbdc.log 2>&1; do
    i=$((i + 1)); [ $i -ge 50 ] && {{ echo "nbd-client: $(tail -n 1 /tmp/nbdc.log)"; return 1; }}; sleep 0.2
  done
}}
"""

_NFS_OPTIONS = "vers=3,nolock,proto=tcp,retry=0"


def _link_shell(index: int) -> str:
    """Cell *index*'s link fit: dd with direct I/O over /dev/nbd0 served from tmpfs, each size read and
    written, :data:`LINK_ROUNDS` times in turn (the guest's pace changes with the host's load)."""
    lines = ["nbd_connect fit || exit 3"]
    for _ in range(LINK_ROUNDS):
        for size in LINK_SIZES:
            n = LINK_COUNTS[size]
            for op, flags in (("write", "if=/dev/zero of=/dev/nbd0 oflag=direct"),
                              ("read", "if=/dev/nbd0 of=/dev/null iflag=direct")):
                lines.append(f"t0=$(now_ns); dd {flags} bs={size} count={n} 2>/dev/null; t1=$(now_ns); "
                             f"echo \"{_MARK} LINK {index} {op} {size} {n} $((t1 - t0))\"")
    lines.append("nbd-client -d /dev/nbd0 >/dev/null 2>&1")
    return "\n".join(lines) + "\n"


def _in_client(body: str, where: str, target: str) -> str:
    """*body* in the client's namespace with the NFS export *where* mounted at *target*."""
    inner = (f"set +e\nmkdir -p {target}\ntimeout 60 mount -t nfs -o {_NFS_OPTIONS} {sh_word(where)} {target} "
             f"|| exit 3\n{body}st=$?\numount {target}\nexit $st\n")
    return f"ip netns exec dmcli sh -c {sh_word(inner)}\n"


def _partition(var: str, disk: str, size: int) -> str:
    return (f"{var}=$(losetup --find --show --direct-io=on --offset {PART_START} --sizelimit {size} /dev/{disk}) "
            f"|| exit 3\n")


def _mkfs(dev: str) -> str:
    return f"mkfs.ext2 -q -F {' '.join(MKFS_OPTIONS)} {dev} || exit 3\n"


def _cell_script(i: int, label: str, copy: FileCopy) -> str:
    """Cell *label*'s stack built, the copy run in it (tag ``cellI``) and the stack torn down (its EXIT trap);
    a 10 Mb/s cell's link shaped first and unshaped by its trap."""
    # the queue settings below the top file system and the marker read (stacks_vm's), then the copy
    copy_top = (_queue_shell("/mnt/top", i) + _marker_shell(i)
                + copy_shell("/mnt/top", copy, tag=f"cell{i}", clock=GUEST_CLOCK))
    undo = ['umount /mnt/top 2>/dev/null', 'mdadm --stop /dev/md0 >/dev/null 2>&1',
            'nbd-client -d /dev/nbd0 >/dev/null 2>&1', 'exportfs -ua 2>/dev/null; exportfs -ra 2>/dev/null',
            'umount /srv 2>/dev/null || { rpc.nfsd 0; umount /srv; rpc.nfsd 2; }', '[ -n "$Q" ] && losetup -d "$Q"', '[ -n "$P" ] && losetup -d "$P"']
    shaped_cell = label != base_label(label)
    if shaped_cell:  # the qdiscs gone (tc's own errors silenced) whatever happened
        undo.append("tc qdisc del dev dmv0 root 2>/dev/null; ip netns exec dmcli tc qdisc del dev dmv1 root 2>/dev/null")
    label = base_label(label)
    out = ["set +e\n", f"trap '{'; '.join(undo)}' EXIT\n"]
    if shaped_cell:
        # a cell whose link is not shaped is refused, not measured unshaped
        out.append(shape_shell(SHAPED) + "\ntc qdisc show dev dmv0 | grep -q tbf && "
                   "ip netns exec dmcli tc qdisc show dev dmv1 | grep -q tbf || { echo 'tc: no tbf'; exit 3; }\n")
    out += [_partition("P", "vdb", SERVER_PART_BYTES), _mkfs('"$P"')]
    if label == LABELS[0]:
        return "".join(out) + 'mount "$P" /mnt/top || exit 3\n' + copy_top
    out.append('mount "$P" /srv || exit 3\n')
    if label == LABELS[3]:
        return "".join(out) + "exportfs -ra\n" + _marker_shell(i) + _in_client(
            copy_shell("/mnt/nfs", copy, tag=f"cell{i}", clock=GUEST_CLOCK), f"{SERVER_IP}:/srv", "/mnt/nfs")
    out.append(f"dd if=/dev/zero of=/srv/image bs=1048576 count={IMAGE_BYTES // MIB} conv=fsync 2>/dev/null "
               "|| exit 3\nnbd_connect image || exit 3\n")
    dev = "/dev/nbd0"
    if label == LABELS[2]:
        out.append(_partition("Q", "vdc", IMAGE_BYTES))
        out.append(f"mdadm --create /dev/md0 --run --quiet --metadata=1.2 --level=1 --raid-devices=2 "
                   f"--data-offset={MD_OFFSET // 1024}K --bitmap=none --assume-clean \"$Q\" /dev/nbd0 || exit 3\n")
        dev = "/dev/md0"
    out += [_mkfs(dev), f"mount {dev} /mnt/top || exit 3\n", copy_top]
    return "".join(out)


def group_script(labels, copy: FileCopy) -> str:
    """The guest's script: the link, the link fit, then per cell its pace (the copy on the guest's tmpfs;
    for NFS on an NFS mount of a tmpfs export) and the cell, markers around each."""
    lines = [_PRELUDE, _NBD_CONNECT]
    for i, label in enumerate(labels):
        pace = copy_shell("/tmp/diskmodel-pace", copy, tag=f"pace{i}", clock=GUEST_CLOCK)
        if base_label(label) in _BASE[1:3]:  # an NBD cell: the link's own cost just before it (unshaped)
            pace += _link_shell(i)
        if base_label(label) == _BASE[3]:
            pace = _in_client(copy_shell("/mnt/nfsfit", copy, tag=f"pace{i}", clock=GUEST_CLOCK),
                              f"{SERVER_IP}:/run/dmexp/nfs", "/mnt/nfsfit")
        script = _NBD_CONNECT + _cell_script(i, label, copy)
        lines += [pace, f"echo '{_MARK} BEGIN {i}'", f"sh -c {sh_word(script)}", f'echo "{_MARK} END {i} $?"']
    lines.append("exit 0")
    return "\n".join(lines) + "\n"


_LINK_RE = re.compile(rf"^{_MARK} LINK (\d+) (read|write) (\d+) (\d+) (\d+)$", re.M)


def parse_link(output: str) -> dict:
    """The link fits' per-request times, each the median of its rounds: ``{cell index: {op: {size: seconds}}}``."""
    runs: dict = {}
    for i, op, size, count, ns in _LINK_RE.findall(output.replace("\r", "")):
        runs.setdefault(int(i), {}).setdefault(op, {}).setdefault(int(size), []).append(int(ns) * 1e-9 / int(count))
    return {i: {op: {s: float(np.median(v)) for s, v in sizes.items()} for op, sizes in ops.items()}
            for i, ops in runs.items()}


def link_fit(per_request: dict) -> dict | None:
    """``a + S / c`` through each operation's per-request times: ``{op: {"overhead_s", "copy_rate_bytes_per_s"}}``
    (a negative intercept taken as 0, a slope <= 0 as no copy cost); None without both sizes of both."""
    out = {}
    for op in ("write", "read"):
        times = per_request.get(op, {})
        if not all(s in times for s in LINK_SIZES):
            return None
        slope, intercept = np.polyfit(np.array(LINK_SIZES, float), [times[s] for s in LINK_SIZES], 1)
        # a slope that moves the largest size's time by less than the fit's rounding is no copy cost (equal
        # times give a slope of a few 1e-25 s/B, not 0)
        copies = slope * max(LINK_SIZES) > 1e-9 * max(times[s] for s in LINK_SIZES)
        out[op] = {"overhead_s": max(float(intercept), 0.0),
                   "copy_rate_bytes_per_s": 1.0 / slope if copies else None,
                   "per_request_s": {str(s): times[s] for s in LINK_SIZES}}
    return out


def measure_group(copy: FileCopy, *, timeout_s: float = 1500, say=None, only: str = "", log_dir=None):
    """Boot the VM once with the group's two drives and measure its cells: (cells, the copy on the
    guest's tmpfs over the group, results (``parse_group``'s), the drives' request-log summaries,
    the VM's wall time [s], each cell's link fit ``{label: link_fit(...)}``, None for a cell with no NBD)).
    *only* as stacks_vm's."""
    from diskmodel.calibrate.emulate.for_vm import run_script_on_emulated_drives

    parts = [c for c in only.split("|") if c]
    labels = [x for x in LABELS if not parts or any(p in x for p in parts)]
    if not labels:
        return [], None, [], [], 0.0, None
    t0 = time.monotonic()
    result, served = run_script_on_emulated_drives(group_script(labels, copy), [p for p, _ in DRIVES], say=say,
                                                   timeout_s=timeout_s, memory_bytes=GUEST_MEMORY_BYTES,
                                                   log_dir=log_dir)
    text = result.output.replace("\r", "")
    if log_dir is not None:
        from pathlib import Path
        (Path(log_dir) / "guest-output.txt").write_text(text)
    if f"{_MARK} TEARDOWN clean" not in text:
        left = re.search(rf"^{_MARK} TEARDOWN (.*)$", text, re.M)
        raise RuntimeError(f"the network group's teardown left {left.group(1) if left else 'no report'}: "
                           f"{text[-1500:]}")
    per_cell = parse_link(text)
    links = {label: link_fit(per_cell.get(i, {})) for i, label in enumerate(labels)}
    chosen = [c for c in cells() if c.label in labels]
    pace, results = parse_group(text, chosen)
    return chosen, pace, results, [d.summary for d in served], time.monotonic() - t0, links
