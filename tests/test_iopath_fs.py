"""The file systems and the whole I/O path (model/iopath/fs*.py, path.py, ``diskmodel iopath``):
streams worked out by hand from each file system's layout and journal rules, properties of the path
through the stack's block layers, and the real kernel: a workload on a loop device with a real file
system, counted in /sys/block/loopN/stat."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import require_root, require_tools
from diskmodel.model.iopath import Flag, Op
from diskmodel.model.iopath.fileops import FileOps, Kind
from diskmodel.model.iopath.fs import file_system
from diskmodel.model.iopath.fs_layout import FsParams
from diskmodel.model.iopath.pagecache import CacheParams, page_cache
from diskmodel.model.iopath.path import run
from diskmodel.model.iopath.workload_spec import parse_workload
from diskmodel.model.stacks.loop_file import LoopFile
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import FileSystemNode, Stack, paper_stack
from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.stacks.volumes import LinearVolume, Partition
from _helpers import assert_one_error_line

B = 4096
GiB = 1 << 30
R, W, F = int(Op.READ), int(Op.WRITE), int(Op.FLUSH)
META, SYNC, COMMIT = int(Flag.META), int(Flag.SYNC), int(Flag.META | Flag.SYNC | Flag.PREFLUSH | Flag.FUA)


def ops(*rows, initial=(0,)) -> FileOps:
    """Operations as (time_s, kind, file, offset, size)."""
    full = [tuple(r) + (r[4], False) for r in rows]
    cols = list(zip(*full))
    dt = (np.float64, np.int8, np.int64, np.int64, np.int64, np.int64, bool)
    return FileOps(*(np.asarray(c, d) for c, d in zip(cols, dt)), np.zeros(len(initial), np.int64),
                   np.asarray(initial, np.int64))


def fs_rows(kind, o, **kw):
    """(time_s, op, block, size_bytes, flags) of the file system's stream for ``o`` after the cache."""
    r = page_cache(o)
    s = file_system(r.ops, FsParams(kind, GiB, **kw), sync=r.sync).stream
    return list(zip(s.time_s.tolist(), s.op.tolist(), (s.offset_bytes // B).tolist(), s.size_bytes.tolist(), s.flags.tolist()))


CREATE_WRITE_SYNC = ops((0, Kind.CREATE, 0, 0, 0), (0, Kind.WRITE, 0, 0, 8192), (1, Kind.SYNC, -1, 0, 0))

# ext4 on 1 GiB with 4 KiB blocks, as mke2fs lays it out (dumpe2fs): groups of 32768 blocks
# (128 MiB), 8192 inodes of 256 bytes each (512 table blocks); group 0: superblock, descriptors in
# block 1, 127 reserved descriptor blocks, then the 8 groups' block bitmaps (129-136), inode bitmaps
# (137-144) and inode tables (145-4240, flex_bg); the root directory is 4241 and mke2fs's other
# files take 4242-4246, so new data starts at 4247. The journal is at the middle group's start
# (4 * 32768), jbd2 writing from its block 1. The mount read the descriptors. The create's lookup
# reads the root directory's block, the inode bitmap is read before it changes; the first allocation
# reads the block bitmap of group 0 and mballoc's read-ahead the bitmaps that mke2fs initialised
# (the journal's group 4: 133, the last group: 136), as blktrace shows an ext4 create (4241, 137,
# 129, 133, 136).
EXT_READS = [(0.0, R, 4241, B, META), (0.0, R, 137, B, META), (1.0, R, 129, B, META), (1.0, R, 133, B, META),
             (1.0, R, 136, B, META)]
# The first commit after the mount writes the journal's superblock (its block 0), then the log.
JSB = [(1.0, W, 131072, B, META | SYNC)]
T1 = 1.0 + 1e-9
IN_PLACE = [(1.0, W, b, B, META) for b in (1, 129, 137, 145, 4241)]  # descriptor, bitmaps, inode, directory


def test_ext4_create_write_sync_by_hand():
    # Create (file 0 in the root directory, whose block 4241 exists): the inode bitmap and the
    # descriptor are read. At sync: the 8 KiB of data are allocated (delayed allocation: the block
    # bitmap read then) and written (4247-4248), then the transaction: 5 blocks + 1 descriptor block
    # at the journal's head, the commit block with PREFLUSH|FUA; then the 5 metadata blocks in place.
    assert fs_rows("ext4", CREATE_WRITE_SYNC) == EXT_READS + [(1.0, W, 4247, 8192, SYNC)] + JSB + [
        (T1, W, 131073, 6 * B, META | SYNC),
        (T1, W, 131079, B, COMMIT),
    ] + IN_PLACE


def test_ext2_has_no_journal():
    # ext2 keeps group 0's bitmaps and table in the group (65, 66, 67-578); the root directory is
    # 579 and mke2fs's other files take 580-584, so the data is 585-586. Without uninit_bg every
    # group's bitmap is on the device: mballoc's read-ahead reads groups 1-7's (a measured ext2 create:
    # 579, 66, 65, 32833, 65536, 98369, 131072, 163905, 196608, 229441).
    reads = [(0.0, R, 579, B, META), (0.0, R, 66, B, META), (1.0, R, 65, B, META)] + [
        (1.0, R, b, B, META) for b in (32833, 65536, 98369, 131072, 163905, 196608, 229441)]
    in_place = [(1.0, W, b, B, META) for b in (1, 65, 66, 67, 579)]
    # sync ends with a flush (ext4_sync_fs without a journal; an emulated drive under ext2 logs one
    # after each of bonnie++'s syncs)
    flush = [(1.0, F, 0, 0, int(Flag.PREFLUSH | Flag.SYNC))]
    assert fs_rows("ext2", CREATE_WRITE_SYNC) == reads + [(1.0, W, 585, 8192, SYNC)] + in_place + flush


def test_data_journal_writes_data_twice():
    rows = fs_rows("ext4", CREATE_WRITE_SYNC, journal_mode="journal")
    # The 2 data blocks join the transaction (7 blocks + descriptor), then go in place with the rest.
    assert rows == EXT_READS + JSB + [
        (T1, W, 131073, 8 * B, META | SYNC),
        (T1, W, 131081, B, COMMIT),
    ] + IN_PLACE + [(1.0, W, 4247, B, META), (1.0, W, 4248, B, META)]


def test_ext_layout_is_mke2fs_layout():
    # dumpe2fs of mkfs.ext2/ext3/ext4 -b 4096 on 1 GiB (e2fsprogs 1.47): ext2/ext3 keep each group's
    # bitmaps and table in the group after its superblock copy (groups 0, 1, 3, 5, 7) and 63
    # reserved descriptor blocks; ext4 (64-byte descriptors, 127 reserved, flex_bg) packs them in
    # group 0. ext3's journal follows mke2fs's first files in group 0 (debugfs stat <8>: 585).
    for kind in ("ext2", "ext3"):
        p = FsParams(kind, GiB)
        assert [p.block_bitmap(0), p.inode_bitmap(0), p.inode_table(0), p.data_start(0)] == [65, 66, 67, 579]
        assert [p.block_bitmap(1), p.inode_table(1), p.block_bitmap(2), p.inode_table(2)] == [32833, 32835, 65536, 65538]
    assert FsParams("ext3", GiB).journal_block == 585
    p = FsParams("ext4", GiB)
    assert [p.block_bitmap(1), p.inode_bitmap(1), p.inode_table(1), p.data_start(0), p.data_start(1)] == [
        130, 138, 657, 4241, 32897]
    assert p.journal_block == 131072


def test_ext_inode_read_reads_ahead_in_the_table_as_blktrace_shows():
    # stat of 2000 files on the device (root directory), ext4 on 1 GiB: the table is 145-4240 and
    # 2011 inodes are in use (the 11 reserved first): blocks 145-270. The mount read the root's
    # inode (block 145) and its window 145-177 (32 blocks ahead, both ends included). The stats then
    # read each next block as metadata and the window ahead of it (aligned to 32, up to the last
    # block in use) as one plain read. A measured ext4 trace (blktrace, metadata_stat on a loop
    # device): 178 RM, 179+14 R, 193 RM, 194+31 R, 225 RM, 226+31 R, 257 RM, 258+13 R.
    r = page_cache(parse_workload("metadata:op=stat,files=2000"))
    s = file_system(r.ops, FsParams("ext4", GiB), sync=r.sync).stream
    table = [(b, n // B, fl) for b, n, fl in zip((s.offset_bytes // B).tolist(), s.size_bytes.tolist(),
                                                  s.flags.tolist()) if b < 4241]
    assert table == [(178, 1, META), (179, 14, 0), (193, 1, META), (194, 31, 0), (225, 1, META), (226, 31, 0),
                     (257, 1, META), (258, 13, 0)]


def test_xfs_logs_inode_cores_and_buffer_regions():
    rows = fs_rows("xfs", CREATE_WRITE_SYNC)
    # AG 0: the AG's first block holds the superblock, AGF, AGI and AGFL (read at mount but the
    # AGFL); the free-space btrees' roots are blocks 1 (by block) and 2 (by size), the inode
    # btree's 3, the free inode btree's 4; inode chunks from 8, data from 1032 (the directory's
    # block, then the file's 1033). The create reads the free inode btree, then the inode btree, and
    # the inode's cluster (8 KiB of 256-byte inodes: the root's chunk, on the device); the
    # allocation reads the AGFL's sector (byte 1536), then the by-size and by-block roots, one after
    # the other (a measured xfs create: 4, 3, the cluster, the AGFL, 2, 1). The log (xfs_db's
    # logstart: the middle AG, 2 of 4, after its headers and btree roots: 2 * 65536 + 6): one inode
    # core (256 bytes) and 6 buffers (192 bytes each): 1408 bytes, rounded up to 1536.
    assert rows == [
        (0.0, R, 8, 8192, META), (0.0, R, 4, B, META), (1e-9, R, 3, B, META),
        (1.0, R, 0, 512, META), (1.0 + 1e-9, R, 2, B, META), (1.0 + 2e-9, R, 1, B, META),
        (1.0, W, 1033, 8192, SYNC),
        (1.0 + 2e-9, W, 131078, 1536, COMMIT),
    ]


def test_btrfs_commit_copies_tree_blocks_twice_then_the_superblocks():
    rows = fs_rows("btrfs", CREATE_WRITE_SYNC)
    # Data from 1 MiB (block 256). One file: each tree it changes is one leaf, its own root. First
    # pass (sync's write-back of the btree inode): the fs tree's leaf (the inode, its directory
    # entries) and the checksum tree's leaf. The commit: the fs leaf again (the directory's
    # delayed inode item), the extent tree's, the free-space tree's, the device tree's (the first
    # commit after the mount) and the root tree's: 7 nodes of 16 KiB, at the metadata area (block
    # 131072), one request each (a nanosecond apart); DUP: a second copy after the first; then a
    # flush, the primary superblock (64 KiB) with FUA and the copy at 64 MiB. (A measured btrfs
    # copy, a clone in a one-leaf fs tree: 6 nodes twice, no checksum leaf.)
    nodes = [(1.0 + k * 1e-9, W, 131072 + 4 * k, 16384, META | SYNC) for k in range(14)]
    end = 1.0 + 14 * 1e-9
    assert rows == [(1.0, W, 256, 8192, SYNC)] + nodes + [
        (end, F, 0, 0, int(Flag.PREFLUSH | Flag.SYNC)),
        (end, W, 16, B, META | SYNC | int(Flag.FUA)),
        (end, W, 16384, B, META | SYNC),
    ]


def test_btrfs_copies_on_write_and_keeps_small_files_inline():
    o = ops((0, Kind.CREATE, 0, 0, 0), (0, Kind.WRITE, 0, 0, 8192), (1, Kind.SYNC, -1, 0, 0),
            (2, Kind.WRITE, 0, 0, 8192), (3, Kind.SYNC, -1, 0, 0),
            (4, Kind.CREATE, 1, 0, 0), (4, Kind.WRITE, 1, 0, 1000), (5, Kind.SYNC, -1, 0, 0), initial=(0, 0))
    data = [(t, b) for t, op, b, size, fl in fs_rows("btrfs", o) if op == W and not fl & META]
    # The overwrite goes to new blocks (258, after the first copy's 256-257); the 1000-byte file
    # has no data block at all.
    assert data == [(1.0, 256), (3.0, 258)]


def test_block_size_sets_the_data_write_size():
    o = ops((0, Kind.CREATE, 0, 0, 0), (0, Kind.WRITE, 0, 0, 1000), (1, Kind.SYNC, -1, 0, 0))
    for bs in (1024, 4096):
        r = page_cache(o)
        s = file_system(r.ops, FsParams("ext4", GiB, block_bytes=bs), sync=r.sync).stream
        data = s.size_bytes[(s.op == W) & ((s.flags & META) == 0)]
        assert data.tolist() == [bs]


def test_deleted_files_leave_only_metadata_on_the_device():
    # PostMark test1's sizes, scaled to fit 64 MiB and to run in seconds: its data never reaches
    # the device (deleted before write-back); what does is the journal and the metadata.
    devs = run(paper_stack("native"), parse_workload("postmark:files=300,low=1024,high=102400,transactions=3000"),
               CacheParams(memory_limit_bytes=64 << 20))
    s = devs["sda"]
    assert ((s.op == W) & ((s.flags & META) == 0)).sum() == 0
    assert 0 < s.write_bytes < 2 << 20


# -- the stack's block layers --------------------------------------------------------------------
def two_disk_stack(volume, kind="ext4"):
    return Stack(FileSystemNode(kind=kind, volume=volume), disks=(PresetDrive("wd800bd", name="sda"), PresetDrive("wd800bd", name="sdb")))


def test_raid1_writes_every_byte_to_each_member():
    parts = (Partition(1 << 20, GiB, "sda1", "sda"), Partition(1 << 20, GiB, "sdb1", "sdb"))
    devs = run(two_disk_stack(RaidArray("raid1", parts, name="md0")), parse_workload("fio:rw=write,bs=1M,size=32M"))
    assert devs["sda1"].write_bytes == devs["sdb1"].write_bytes == devs["md0"].write_bytes > 32 << 20


def test_linear_volume_over_two_disks_writes_each_pv_on_its_own_disk():
    # sda1 and sdb1 both start at 1 MiB: the second segment's extents lie on sdb, at the same offsets as
    # the first's on sda. A block workload over the whole LV writes half of its bytes to each disk.
    parts = (Partition(1 << 20, GiB, "sda1", "sda"), Partition(1 << 20, GiB, "sdb1", "sdb"))
    lv = LinearVolume(parts, name="lv0")
    assert [seg[2] for seg in lv.pv_segments()] == [0, 1]
    devs = run(two_disk_stack(lv), parse_workload("fio:rw=write,bs=1M,size=1800M"))
    assert devs["sdb1"].write_bytes == devs["sdb"].write_bytes > 700 << 20
    assert devs["sda1"].write_bytes == devs["sda"].write_bytes > 700 << 20
    assert devs["sda"].write_bytes + devs["sdb"].write_bytes == devs["lv0"].write_bytes


def test_lvm_over_md_raid1_mirrors_the_lv_to_both_disks():
    # pvcreate /dev/md0 over sda1 and sdb1 (the Debian installer's "RAID 1, then LVM"): md0 receives
    # the LV's requests pe_start into itself, and each mirror all of md0's writes.
    md0 = RaidArray("raid1", (Partition(1 << 20, GiB, "sda1", "sda"), Partition(1 << 20, GiB, "sdb1", "sdb")),
                    name="md0")
    devs = run(two_disk_stack(LinearVolume((md0,), name="lv0")), parse_workload("fio:rw=write,bs=1M,size=64M"))
    assert devs["md0"].write_bytes == devs["lv0"].write_bytes > 64 << 20
    assert devs["sda"].write_bytes == devs["sdb"].write_bytes == devs["md0"].write_bytes
    md = devs["md0"]
    assert md.offset_bytes[md.size_bytes > 0].min() >= 1 << 20  # nothing below the PV's data area (pe_start)


def test_buffered_loop_caches_the_image_a_second_time():
    # Read a file on a loop device, drop it from the upper cache, read it again: the loop device
    # sees both reads; the host device only the first when the loop is buffered (the image's pages
    # stay in the host's cache), both with direct I/O.
    host = Partition(1 << 20, 2 * GiB, "sda1", "sda")
    o = ops((0, Kind.READ, 0, 0, 8 << 20), (1, Kind.DROP, 0, 0, 0), (2, Kind.READ, 0, 0, 8 << 20), initial=(8 << 20,))
    got = {}
    for direct in (False, True):
        loop = LoopFile(host, GiB, allocation="zero_filled", host_file_system="ext4", direct_io=direct, name="loop0")
        devs = run(Stack(FileSystemNode(kind="ext4", volume=loop)), o)
        got[direct] = (devs["loop0"].read_bytes, devs["sda1"].read_bytes)
    loop_reads, host_reads = got[False]
    assert loop_reads >= 2 * (8 << 20)
    # the first read's host read-ahead may run past the file by a window of up to the host device's
    # largest request (ondemand_readahead); a second read from the host would add the whole file
    assert (8 << 20) <= host_reads < loop_reads - (6 << 20)
    assert got[True][1] >= 2 * (8 << 20)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["native", "lvm1", "lvm2"]), st.sampled_from(["ext2", "ext4", "xfs", "btrfs"]),
       st.sampled_from(["fio:rw=write,bs=64k,size=4M", "fio:rw=randread,bs=4k,size=2M", "metadata:op=create,files=300"]))
def test_linear_layers_conserve_bytes_from_volume_to_disks(name, kind, workload):
    stack = paper_stack(name, kind=kind)
    devs = run(stack, parse_workload(workload))
    top = devs[stack.volume.name or "volume"]
    disks = [d.name for d in stack.disks]
    assert sum(devs[d].write_bytes for d in disks) == top.write_bytes
    assert sum(devs[d].read_bytes for d in disks) == top.read_bytes


# -- the command ---------------------------------------------------------------------------------
def cli(*args):
    return subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", "iopath", *args], capture_output=True, text=True)


def test_cli_json_and_streams(tmp_path):
    p = cli("--stack", "lvm2", "--workload", "fio:rw=write,bs=1M,size=8M", "--json", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert set(doc["devices"]) == {"LogVol02", "/dev/sda3", "/dev/sda4", "sda"}
    for totals in doc["devices"].values():
        assert set(totals) == {"read_bytes", "write_bytes", "read_requests", "write_requests"}
    import pandas as pd

    frame = pd.read_csv(tmp_path / "sda.csv")
    assert int(frame.loc[frame.op == "write", "size_bytes"].sum()) == doc["devices"]["sda"]["write_bytes"]


BAD_INPUT = [
    (("--stack", "native", "--workload", "fio:rw=sideways"), "rw = 'sideways'"),
    (("--stack", "native", "--workload", "fio:bs=4q"), "bs = '4q'"),
    (("--stack", "native", "--workload", "zip:x=1"), "'zip' is not one of"),
    (("--stack", "native", "--workload", "postmark:files=0"), "number_of_files"),
    (("--stack", "/nonexistent/stack.json", "--workload", "copy"), "/nonexistent/stack.json"),
    (("--stack", "native", "--workload", "copy", "--memory-limit", "1"), "--memory-limit 1"),
    (("--stack", "native", "--workload", "copy", "--memory-limit", "lots"), "--memory-limit"),
]


@pytest.fixture(scope="module")
def bad_input_results(tmp_path_factory):
    """Each BAD_INPUT case through diskmodel's entry point, all in one child process (its imports once):
    {case number: {"code", "stdout", "stderr"}}."""
    from _helpers import run_cli_cases

    root = tmp_path_factory.mktemp("iopath-bad-input")
    plan = {str(i): (["iopath", *args], str(root)) for i, (args, _) in enumerate(BAD_INPUT)}
    env = dict(os.environ)
    env.pop("DISKMODEL_DEBUG", None)
    return run_cli_cases(plan, root, env)


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(BAD_INPUT)), ids=[" ".join(args) for args, _ in BAD_INPUT])
def test_cli_bad_input_is_one_line(case, bad_input_results):
    res = bad_input_results[str(case)]
    assert res["code"] == 2, res
    assert_one_error_line(res["stderr"], BAD_INPUT[case][1])


@pytest.mark.slow
def test_cli_bad_stack_node_names_node_and_field(tmp_path):
    doc = json.loads(paper_stack("native", kind="xfs").to_json())
    doc["file_system"]["parameters"]["block_size_bytes"] = 3000
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    p = cli("--stack", str(path), "--workload", "copy")
    assert p.returncode == 2
    line = assert_one_error_line(p.stderr)
    assert "block_size" in line and "3000" in line


# -- the real kernel -----------------------------------------------------------------------------
MKFS = {"ext4": ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        "xfs": ["mkfs.xfs", "-f", "-q"], "ext2": ["mkfs.ext2", "-F", "-q"]}


def loop_stat(dev: str) -> dict[str, int]:
    f = open(f"/sys/block/{os.path.basename(dev)}/stat").read().split()
    return {"read_requests": int(f[0]), "read_bytes": int(f[2]) * 512, "write_requests": int(f[4]), "write_bytes": int(f[6]) * 512}


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ext4", "xfs"])
def test_what_reaches_a_loop_device_matches_the_kernel(kind, loops, tmp_path):
    require_root()
    require_tools("fio", MKFS[kind][0])
    img = tmp_path / "img"
    with open(img, "wb") as f:
        f.truncate(GiB)
    dev = loops.attach(img)
    subprocess.run(MKFS[kind] + [dev], check=True, capture_output=True)
    mnt = loops.mount(dev, tmp_path / "mnt")
    ra_kb = int(open(f"/sys/block/{os.path.basename(dev)}/queue/read_ahead_kb").read())
    stack = Stack(FileSystemNode(kind=kind, volume=Partition(0, GiB, "loop", "sda")))
    checked = 0
    for workload, fio_args in [("fio:rw=write,bs=1M,size=64M", ["--rw=write", "--bs=1M", "--size=64M"]),
                               ("fio:rw=read,bs=1M,size=32M", ["--rw=read", "--bs=1M", "--size=32M"])]:
        subprocess.run(["sync"], check=True)
        before = loop_stat(dev)
        subprocess.run(["fio", "--name=j", f"--filename={mnt}/f{checked}", "--ioengine=psync", "--invalidate=1", *fio_args],
                       check=True, capture_output=True)
        subprocess.run(["sync"], check=True)
        after = loop_stat(dev)
        measured = {k: after[k] - before[k] for k in after}
        model = run(stack, parse_workload(workload), CacheParams(read_ahead_kb=ra_kb))["loop"].totals()
        for key in ("read_bytes", "write_bytes"):
            if measured[key] > 1 << 20:
                assert abs(model[key] - measured[key]) <= 0.10 * measured[key], (workload, key, model, measured)
        for key in ("read_requests", "write_requests"):
            if measured[key] > 10:
                assert abs(model[key] - measured[key]) <= 0.30 * measured[key], (workload, key, model, measured)
        checked += 1
    assert checked == 2


CGROUP_V1_MEMORY = "/sys/fs/cgroup/memory"
# Run argv[2:] inside the memory cgroup argv[1]: join it, then exec (no shell).
JOIN_AND_EXEC = "import os, sys; open(sys.argv[1] + '/cgroup.procs', 'w').write(str(os.getpid())); os.execvp(sys.argv[2], sys.argv[2:])"


def postmark_in_cgroup(cgroup: str, location, files: int, low: int, high: int, transactions: int) -> None:
    script = (f"set location {location}\nset number {files}\nset size {low} {high}\n"
              f"set transactions {transactions}\nrun\nquit\n")
    subprocess.run([sys.executable, "-c", JOIN_AND_EXEC, cgroup, "postmark"], input=script, text=True,
                   check=True, capture_output=True)


@pytest.mark.integration
@pytest.mark.slow
def test_postmark_under_a_64mib_cgroup_writes_almost_nothing_when_its_files_fit(loops, tmp_path):
    require_tools("postmark", "mkfs.ext4")
    if not os.path.isdir(CGROUP_V1_MEMORY):
        pytest.skip("no cgroup v1 memory controller on this host (the model's default dirty limits are v1's)")
    img = tmp_path / "img"
    with open(img, "wb") as f:
        f.truncate(GiB)
    dev = loops.attach(img)
    subprocess.run(MKFS["ext4"] + [dev], check=True, capture_output=True)
    mnt = loops.mount(dev, tmp_path / "mnt")
    cgroup = f"{CGROUP_V1_MEMORY}/diskmodel-test-{os.getpid()}"
    os.mkdir(cgroup)
    try:
        with open(f"{cgroup}/memory.limit_in_bytes", "w") as f:
            f.write(str(64 << 20))
        subprocess.run(["sync"], check=True)
        before = loop_stat(dev)
        # PostMark test1's file sizes (1-100 KiB), 300 files (about 15 MB: they fit), 3000 transactions.
        postmark_in_cgroup(cgroup, mnt, 300, 1024, 102400, 3000)
        subprocess.run(["sync"], check=True)
        after = loop_stat(dev)
    finally:
        os.rmdir(cgroup)
    measured = after["write_bytes"] - before["write_bytes"]
    stack = Stack(FileSystemNode(kind="ext4", volume=Partition(0, GiB, "loop", "sda")))
    model = run(stack, parse_workload("postmark:files=300,low=1024,high=102400,transactions=3000"),
                CacheParams(memory_limit_bytes=64 << 20))["loop"].write_bytes
    # The workload writes about 90 MB (creates and appends); the device gets only metadata.
    assert measured < 4 << 20, measured
    assert model < 4 << 20, model
    assert abs(model - measured) <= 0.5 * measured, (model, measured)


@pytest.mark.slow
def test_a_workload_the_stack_cannot_hold_is_one_line_naming_the_node(tmp_path):
    stack = Stack(FileSystemNode(kind="ext4", volume=Partition(0, 64 << 20, "sda1", "sda")))
    path = tmp_path / "small.json"
    path.write_text(stack.to_json())
    p = cli("--stack", str(path), "--workload", "fio:rw=write,bs=1M,size=128M")
    assert p.returncode == 2
    line = assert_one_error_line(p.stderr, "file_system (ext4)")
    assert "full" in line


def test_a_sparse_image_allocates_on_the_host_at_first_write():
    # The same writes through a loop device over a sparse image and over a zero-filled one: the
    # host file system allocates (and journals the allocation) only for the sparse image.
    host = Partition(1 << 20, 2 * GiB, "sda1", "sda")
    meta = {}
    for alloc in ("sparse", "zero_filled"):
        loop = LoopFile(host, GiB, allocation=alloc, host_file_system="ext4", direct_io=True, name="loop0")
        s = run(Stack(FileSystemNode(kind="ext2", volume=loop)), parse_workload("fio:rw=write,bs=1M,size=16M"))["sda1"]
        meta[alloc] = int(s.size_bytes[(s.op == W) & ((s.flags & META) != 0)].sum())
        assert s.write_bytes >= 16 << 20
    assert meta["sparse"] > meta["zero_filled"]


def test_block_mapped_files_take_mballocs_aligned_windows_as_the_drive_saw():
    # A 4 MiB dd into a fresh ext2 (4 KiB blocks) in the VM, the emulated drive's request log of
    # the read back: the file's blocks past its first 16 (which came from the locality group's
    # preallocation, ending at block 2593) at file-system blocks 2608 (48 blocks), 2688 (64),
    # 2816 (128), 3072 (256) and 3584 (512): each normalized window on a boundary of its size.
    from diskmodel.model.iopath.fs_layout import mballoc_window
    from diskmodel.model.iopath.fs_mballoc import MballocAllocator as Allocator

    assert [mballoc_window(b, 4096) for b in (16, 40, 64, 300, 512, 1024, 3000)] == [
        (16, 32), (32, 64), (64, 128), (256, 512), (512, 1024), (1024, 2048), (2048, 4096)]
    a = Allocator(FsParams(kind="ext2", device_bytes=255 << 20, used_prealloc_bounds=True))  # the VM's 6.1
    a.cursor[0] = 2593
    a.loaded = True  # the mount's first allocation (the locality group's preallocation) was made
    runs, after = [], None
    for block in range(16, 1024, 256):  # written back a bio (256 blocks) at a time
        got = a.block_mapped(0, block, min(256, 1024 - block), after)
        after = got[-1][0] + got[-1][1]
        runs += got
    merged = []
    for db, n in runs:
        if merged and merged[-1][0] + merged[-1][1] == db:
            merged[-1][1] += n
        else:
            merged.append([db, n])
    assert merged == [[2608, 48], [2688, 64], [2816, 128], [3072, 256], [3584, 512]]
    # a small file's blocks come from the group preallocation, in turn
    b = Allocator(FsParams(kind="ext2", device_bytes=255 << 20))
    first = b.block_mapped(0, 0, 4, None, owner=1)
    assert b.block_mapped(0, 0, 4, None, owner=2) == [(first[0][0] + 4, 4)]


def test_a_new_ext4_file_starts_on_its_normalized_windows_boundary():
    # mballoc normalizes a new 4 MiB file's request to a 2 MiB window on a 2 MiB boundary, in the flex
    # group's second group once the groups' bitmaps are loaded (Linux 6.1 in the VM, a 192 and a 504 MiB
    # ext4 a few seconds after the mount: the file at block 33280, 2 MiB into group 1; a 256 MiB one, whose
    # journal fills group 1's first 16 MiB, at 37376 after it); a 100 KiB file to a 128 KiB window; a
    # 64 KiB file comes from the locality group's preallocation (group 0's).
    from diskmodel.model.iopath.fs_layout import Allocator

    assert Allocator(FsParams(kind="ext4", device_bytes=256 << 20)).extent_file(0, 1024)[0] == (37376, 512)
    a = Allocator(FsParams(kind="ext4", device_bytes=192 << 20))
    assert a.extent_file(0, 1024) == [(33280, 512), (33792, 512)]
    assert a.extent_file(0, 25) == [(34304, 25)]
    small = a.extent_file(0, 16)
    assert len(small) == 1 and small[0][1] == 16 and a.extent_file(0, 4) == [(small[0][0] + 16, 4)]


def test_ext2_stream_goal_leaves_a_group_whose_free_runs_are_short():
    # Linux 6.18's ext4_mballoc_alloc tracepoint, PostMark on a fresh 1 GiB ext2 (4 KiB blocks):
    # a file written from its start asks at its block 64 for 96 blocks from block 32 (its window
    # [0, 128) less the preallocation [0, 32) it holds), criterion CR_GOAL_LEN_FAST; once group 0's
    # average free run is shorter, the request lands in group 1 at its first free block (579: past
    # its superblock copy, descriptors, bitmaps and inode table), the file's block 64 at 579 + 32,
    # and group 1 becomes the stream goal -- with group 0 far from full.
    from diskmodel.model.iopath.fs_mballoc import MballocAllocator

    a = MballocAllocator(FsParams(kind="ext2", device_bytes=1 << 30))
    group = a.group_blocks
    assert a.p.data_start(1) == group + 579
    for files in range(1, 2000):
        runs = a.block_mapped(0, 0, 65, None, owner=files)
        last, n = runs[-1]
        if last >= group:
            break
    assert (last, n) == (group + 579 + 32, 1) and a.stream_group == 1
    assert 16 < files < 1000 and a._bitmap(0)[group // 2:].all()
    # later files' windows follow in group 1
    assert a.block_mapped(0, 0, 65, None, owner=0)[-1][0] // group == 1


def test_ext2_file_windows_trimmed_at_the_partly_used_preallocation_as_blktrace_saw():
    # fio's 32 MiB sequential write on a fresh 1 GiB ext2 on the host (Linux 6.18), blktrace of the
    # write-back: file blocks 16-63 at device block 1136 (its window [0, 32) a 32-aligned run at
    # 1120, the file's block 16 half way in; [32, 64) next), blocks 64-255 at 1216 (the request
    # [32, 128) at the first free block 1184, the file's block 64 32 blocks in; then [128, 256) on its
    # 128-block boundary, 1280, right after).
    from diskmodel.model.iopath.fs_mballoc import MballocAllocator

    a = MballocAllocator(FsParams(kind="ext2", device_bytes=1 << 30))
    a.cursor[0] = 1120
    a.loaded = True
    assert a.block_mapped(0, 16, 240, None) == [(1136, 48), (1216, 192)]
