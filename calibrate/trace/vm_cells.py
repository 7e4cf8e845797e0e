"""The md and device-mapper cells of the I/O path's check, traced with blktrace in the throwaway VM.

The host kernel has no device-mapper or md, so these stacks are built in the VM
(:func:`diskmodel.calibrate.bench.vm.run_script_in_vm`) on members that are dm-linear slices of its
scratch disk (``m0`` .. ``m3``, :data:`MEMBER_BYTES` each). Every cell builds its stack afresh,
traces the top device and the members with blktrace while an O_DIRECT fio job runs on the top
device, prints fio's iolog and blkparse's queue/issue lines (C lines are left out to keep the serial
output small), and tears the stack down. md arrays are made with metadata 1.2, a 1 MiB data offset,
no bitmap and ``--assume-clean`` (no resync traffic in the trace). The guest is throwaway: what a
cell makes dies with it.
"""
from __future__ import annotations

import re

from diskmodel.model.stacks.raid import MD_DEFAULT_DATA_OFFSET_BYTES

from .blkparse import parse_blkparse_text
from .matrix import Layer, Workload, fio_argv, read_fio_iolog

__all__ = ["VM_STACKS", "MEMBER_BYTES", "guest_script", "parse_guest_output"]

MIB = 1 << 20
MEMBER_BYTES = 64 * MIB
CHUNK_BYTES = 64 * 1024
MD_DATA_OFFSET_BYTES = MD_DEFAULT_DATA_OFFSET_BYTES
TOP_BYTES = 32 * MIB  # fio's region on every top device
#: The partition cell's partition of the scratch disk, after the four members (which start at 1 MiB).
PART_START_BYTES = MIB + 4 * MEMBER_BYTES
PART_BYTES = TOP_BYTES
SCRATCH_BYTES = PART_START_BYTES + PART_BYTES + MIB
_SECT = 512


def _md(level: int, n: int) -> tuple[str, str, Layer]:
    members = " ".join(f"/dev/mapper/m{k}" for k in range(n))
    chunk = "" if level == 1 else f"--chunk={CHUNK_BYTES // 1024}K "
    bitmap = "" if level == 0 else "--bitmap=none "
    setup = (f"mdadm --create /dev/md0 --run --quiet --metadata=1.2 --level={level} --raid-devices={n} {chunk}"
             f"{bitmap}--data-offset={MD_DATA_OFFSET_BYTES // 1024}K --assume-clean {members}")
    teardown = f"mdadm --stop /dev/md0 >/dev/null 2>&1; for m in {members}; do mdadm --zero-superblock $m; done"
    layer = Layer(f"raid{level}", tuple(f"m{k}" for k in range(n)),
                  {"chunk_bytes": CHUNK_BYTES, "data_offset_bytes": MD_DATA_OFFSET_BYTES})
    return setup + "\nTOP=/dev/md0", teardown, layer


def _dm(table_rows: list[tuple[int, int, str]], kind: str, devices, params) -> tuple[str, str, Layer]:
    table = "\\n".join(f"{s // _SECT} {n // _SECT} {t}" for s, n, t in table_rows)
    setup = f"printf '{table}\\n' | dmsetup create top --noudevsync\ndmsetup mknodes top\nTOP=/dev/mapper/top"
    return setup, "dmsetup remove --noudevsync top", Layer(kind, tuple(devices), params)


def _linear() -> tuple[str, str, Layer]:
    return _dm([(0, TOP_BYTES, f"linear /dev/mapper/m0 {8 * MIB // _SECT}")], "linear", ["m0"],
               {"segments": [(0, TOP_BYTES, "m0", 8 * MIB)]})


def _lvm2() -> tuple[str, str, Layer]:
    # What LVM makes of a linear LV over two PVs: two segments, each at the PV's 1 MiB pe_start.
    half = TOP_BYTES // 2
    return _dm([(0, half, f"linear /dev/mapper/m0 {MIB // _SECT}"), (half, half, f"linear /dev/mapper/m1 {MIB // _SECT}")],
               "lvm2", ["m0", "m1"], {"segments": [(0, half, "m0", MIB), (half, half, "m1", MIB)]})


def _striped() -> tuple[str, str, Layer]:
    return _dm([(0, TOP_BYTES, f"striped 2 {CHUNK_BYTES // _SECT} /dev/mapper/m0 0 /dev/mapper/m1 0")], "striped",
               ["m0", "m1"], {"chunk_bytes": CHUNK_BYTES})


def _thin() -> tuple[str, str, Layer]:
    block = CHUNK_BYTES // _SECT
    setup = (f"dd if=/dev/zero of=/dev/mapper/m1 bs=4096 count=1 2>/dev/null\n"
             f"dmsetup create pool --noudevsync --table '0 {MEMBER_BYTES // _SECT} thin-pool /dev/mapper/m1 "
             f"/dev/mapper/m0 {block} 0'\ndmsetup mknodes pool\n"
             f"dmsetup message pool 0 'create_thin 0'\n"
             f"dmsetup create top --noudevsync --table '0 {TOP_BYTES // _SECT} thin /dev/mapper/pool 0'\n"
             f"dmsetup mknodes top\nTOP=/dev/mapper/top")
    teardown = "dmsetup remove --noudevsync top; dmsetup remove --noudevsync pool"
    return setup, teardown, Layer("thin", ("m0", "m1"), {"chunk_bytes": CHUNK_BYTES})


def _partition() -> tuple[str, str, Layer]:
    return ("TOP=/dev/vda1", "true",
            Layer("partition", ("vda",), {"start_bytes": PART_START_BYTES, "length_bytes": PART_BYTES}))


#: stack name -> (setup lines, teardown lines, the layer's model), built in the guest.
VM_STACKS = {
    "partition": _partition,
    "md_raid0": lambda: _md(0, 2), "md_raid1": lambda: _md(1, 2), "md_raid5": lambda: _md(5, 3),
    "md_raid6": lambda: _md(6, 4), "dm_linear": _linear, "lvm2": _lvm2, "dm_striped": _striped, "thin": _thin,
}


def _mbr_lines() -> list[str]:
    """Shell lines writing an MBR with one Linux partition (type 0x83) at PART_START_BYTES into the
    zeroed scratch disk: only its non-zero bytes, one ``printf '\\ooo' | dd`` each (a NUL in a shell
    string would end it)."""
    entry = bytes(4) + bytes([0x83, 0, 0, 0]) + (PART_START_BYTES // _SECT).to_bytes(4, "little") + \
        (PART_BYTES // _SECT).to_bytes(4, "little")
    table = entry + bytes(48) + b"\x55\xaa"
    return [f"printf '\\{b:03o}' | dd of=/dev/vda bs=1 seek={446 + i} conv=notrunc 2>/dev/null"
            for i, b in enumerate(table) if b]


def _members_script() -> str:
    lines = ["while read -r m; do insmod \"$m\" 2>/dev/null || true; done < /etc/diskmodel/modules.layers",
             "mount -t debugfs debugfs /sys/kernel/debug",
             # The kernel's name of a device (dm-3 for /dev/mapper/NAME, a node dmsetup mknodes made).
             "kname() { case \"$1\" in /dev/mapper/*) for d in /sys/block/dm-*; do "
             "[ \"$(cat $d/dm/name)\" = \"${1#/dev/mapper/}\" ] && echo ${d##*/}; done;; "
             "*) echo ${1##*/};; esac; }",
             # The partition table first: the kernel rereads it only while nothing holds the disk.
             *_mbr_lines(),
             "blockdev --rereadpt /dev/vda", "i=0; while [ ! -b /dev/vda1 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done"]
    for k in range(4):
        lines.append(f"dmsetup create m{k} --noudevsync --table '0 {MEMBER_BYTES // _SECT} linear /dev/vda "
                     f"{(MIB + k * MEMBER_BYTES) // _SECT}'\ndmsetup mknodes m{k}")
    return "\n".join(lines)


def _cell_script(stack: str, w: Workload) -> str:
    setup, teardown, layer = VM_STACKS[stack]()
    if layer.kind == "partition":
        # blktrace traces a partition on its disk's queue, which takes one trace at a time: the disk
        # alone is traced (the top stream is fio's iolog anyway).
        devs = [("vda", "/dev/vda")]
    else:
        devs = [("top", "$TOP")] + [(d, f"/dev/mapper/{d}") for d in layer.devices]
    argv = fio_argv(w, "$TOP", TOP_BYTES, "/tmp/iolog")
    maps = "\n".join(f"echo \"@@MAP $(tr : , < /sys/class/block/$(kname {p})/dev) {n}\"" for n, p in devs)
    trace_args = " ".join(f"-d {p}" for _, p in devs)
    inputs = " ".join(f"-i $(kname {p})" for _, p in devs)
    return f"""
echo "@@CELL {stack} {w.name}"
{setup}
{maps}
echo "@@MAXKB $(cat /sys/block/vda/queue/max_sectors_kb)"
rm -rf /tmp/bt /tmp/iolog; mkdir /tmp/bt
blktrace -D /tmp/bt {trace_args} >/dev/null 2>&1 &
BT=$!
sleep 1
{' '.join(argv)}
sleep 0.5
kill -INT $BT; wait $BT || true
sed 's/^/@@IOLOG /' /tmp/iolog
blkparse -D /tmp/bt {inputs} | grep -E '^ *[0-9]+,[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[QD] ' || true
echo "@@ENDCELL"
{teardown}
"""


def guest_script(cells) -> str:
    """The guest's script for *cells* ((stack name, Workload) pairs)."""
    return _members_script() + "\n" + "".join(_cell_script(s, w) for s, w in cells) + "\necho '@@ALLDONE'\n"


_CELL = re.compile(r"^@@CELL (\S+) (\S+)$")


def parse_guest_output(output: str):
    """(stack, workload name, top stream from fio's iolog, BlockTrace by role name, the scratch disk's
    max_sectors_kb) per cell."""
    out = []
    cur = None
    for raw in output.replace("\r", "").splitlines():
        if "@@" in raw[1:]:  # a marker after a line a program left unfinished (fio's progress line)
            raw = raw[raw.index("@@", 1):]
        m = _CELL.match(raw)
        if m:
            cur = {"stack": m.group(1), "workload": m.group(2), "maps": {}, "iolog": [], "events": []}
            continue
        if cur is None:
            continue
        if raw.startswith("@@MAP "):
            _, numbers, name = raw.split()
            cur["maps"][numbers] = name
        elif raw.startswith("@@MAXKB "):
            cur["max_kb"] = int(raw.split()[1])
        elif raw.startswith("@@IOLOG "):
            cur["iolog"].append(raw[len("@@IOLOG "):])
        elif raw == "@@ENDCELL":
            src = f"VM cell {cur['stack']}/{cur['workload']}"
            top = read_fio_iolog("\n".join(cur["iolog"]), src + " iolog")
            trace = parse_blkparse_text(cur["events"], src, cur["maps"])
            out.append((cur["stack"], cur["workload"], top, trace, cur.get("max_kb")))
            cur = None
        elif re.match(r"^\s*\d+,\d+\s", raw):
            cur["events"].append(raw)
    return out
