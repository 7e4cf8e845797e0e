"""The tables and the scoring of ``benchmarks/stacks_check.py``: the studies' cells not run, the notes on
what was revised after seeing the figures, the host cells, the studies' orderings, and the errors and
orderings computed over the measured cells (split from the check to keep each module small)."""
from __future__ import annotations

import json
from pathlib import Path

MIB = 1 << 20
IMAGE_BYTES = 384 * MIB
BENCHMARKS = Path(__file__).resolve().parent

#: The studies' cells this check does not run, and why (the VM's run: calibrate/bench/stacks_vm.py).
#: The study each seed code of the cells names, for what is printed.
STUDIES = {"000": "Dagenais", "001": "Marechal", "002": "the multi-disk LVM study", "003": "the loop-image study",
           "004": "Djordjevic & Timcenko"}


def study(seed: str) -> str:
    """The study a cell's seed code names (the code itself for the engineer's own layouts)."""
    return STUDIES.get(str(seed), str(seed))


NOT_RUN = [
    ("000", "NBD and NFS from another machine",
     "client and server are two network namespaces of one VM (calibrate/bench/stacks_net.py) over a veth pair, "
     "unshaped (the protocols' own cost) and shaped to Dagenais' 10 Mb/s (tbf): one CPU serves both ends"),
    ("000", "bonnie++, dbench and kernel compilation", "the guest has no bonnie++ or dbench; the copy stands for "
                                                      "bonnie++'s sequential block phases"),
    ("001", "file systems with 1 KiB blocks on RAID 1, and the small and multi-gigabyte file collections",
     "every file system runs with 4 KiB blocks (the model's) and the copy's 4 MiB files (the study's medium "
     "collection)"),
]

#: What changed after the check's figures were seen (the model revised on their mechanism).
NOTES = [
    "revised after seeing the figures (the thin series' drive busy beside the emulated drive's log, and debugfs of "
    "mke2fs 1.47.0's file systems): what mke2fs wrote before the workload (the group heads with superblock "
    "copies, the bitmaps, the inode tables unless ext4 leaves them to ext4lazyinit, the whole journal, the root "
    "files) is provisioned on a thin volume, so a chunk under any of it is not zero-filled by the workload "
    "(model/iopath/fs_mkfs.py); the journal is mke2fs's size for the device (ext2fs_default_journal_size: 16 MiB on "
    "the VM's 192-256 MiB volumes, where the model had the node's 128 MiB) and its group is chosen counting the "
    "last group's free blocks to the device's end (get_midpoint_journal_block) (model/iopath/path.py, "
    "fs_layout.py). The 4 MiB file on the 8 MiB pool chunk still lies across a chunk the model takes for fresh: "
    "mke2fs's small-file-system inode ratio (one inode per 4 KiB, 128-byte inodes) is not the model's",
    "revised after seeing the figures (Dagenais' NBD cell over the 10 Mb/s link): nbd's client and the link are two "
    "stages of a pipeline, the client handing a request to the socket and sending the next while tbf still "
    "drains the last (model/iopath/timing.py); the model had queued the client's time and the bytes' as one. "
    "NBD to a loop file over the 10 Mb/s link: copy write from 25 % to 12 % error; the unshaped cells are unchanged",
    "the multi-disk LVM study's RAID 0, 5 and 6 cells were measured again in one boot (load 12.2) so that its "
    "comparisons are made at one guest speed; the replaced cells are kept in the inputs' superseded_cells",
    "revised after seeing the figures (the partition-size cells' drive busy beside the emulated drives' logs): "
    "mballoc reads ahead the block bitmaps of the groups after the goal's once a mount (fs/ext4/mballoc.c, "
    "ext4_mb_prefetch; a group read or set up is skipped after, drop_caches resets neither), where the model read "
    "them in every copy step; the host logs show them in the first dd write after the mount only "
    "(model/iopath/fs_meta.py). The 2, 4 and 8 GB partitions' write steps keep the drive busy 0.15-0.16 s "
    "(logs 0.13-0.15 s, before 0.25-0.38 s); their copy write errors go from 21/26/33 % to 74/44/30 %, since "
    "the guest's elapsed time there (0.30-0.40 s) is not the drive's; the median is unchanged",
    "revised after seeing the figures: the I/O path's file system issued a commit before the data bios it waits "
    "for (emit_data places full bios a nanosecond later), so a loop image's fsync found the data unwritten; "
    "the commit now follows the latest bio issued before it, through any number of nested images "
    "(model/iopath/fs.py)",
    "revised after seeing the figures: a sparse loop image and a thin volume read the blocks the file system "
    "wrote before the workload as holes (no I/O); they now count as written (model/iopath/path.py)",
    "revised after seeing the figures: tar met the files in the order they were made; it now meets them in "
    "readdir's order, ext2/3/4's htree hash order (model/iopath/workloads_files.py), and a sparse image's and a "
    "thin volume's blocks under the file system's metadata writes count as written by mkfs",
    "revised after seeing the figures: the measurement's partition was a buffered loop (now direct I/O, as a "
    "partition) and mke2fs chose 1 KiB blocks under 512 MiB (now 4 KiB, as the model's); each workload's own "
    "pace is now measured on tmpfs and given to the model (the generators' default pace is kept beside it)",
    "revised after seeing the figures (each mechanism found in the emulated drives' request logs, then "
    "re-predicted on the earlier measurements with --reuse before this run): ext2/ext3 files are placed as the "
    "ext4 driver's mballoc places a block-mapped file (normalized windows on buddy-aligned boundaries, growing "
    "gaps), a new ext4 file's first extent on its window's boundary (model/iopath/fs_layout.py); md RAID 1 "
    "sends a read that does not continue a mirror's last one to the least-pending mirror "
    "(model/iopath/md_raid.py); a dm-thin provisioning write reaches the data device on its own, not merged "
    "(model/iopath/dm_thin.py, block_layer.py)",
    "revised after seeing the figures (the loop layers: each mechanism found in the emulated drive's request "
    "logs of the loop cells, kept with --log-dir, then re-predicted with --reuse on a run at a load of 2-5 before "
    "this one; the earlier loop measurements were at a load of about 10): an ext2 file's block map (indirect and "
    "double-indirect blocks) is read before the blocks it maps where the cache drop left it uncached, which a "
    "loop image on ext2 repeats at every layer; ext2's fsync writes the file's indirect blocks and a new file's "
    "directory block and inode with its inode (fs/ext4/fsync.c, ext4_fsync_nojournal) "
    "(model/iopath/fs_blockmap.py); a sparse image's blocks are placed at mballoc's goal, not in normalized "
    "windows, since its size is far past 8 MiB (model/iopath/fs_layout.py); a buffered loop device's reads reach "
    "its host one after the other, never merged (model/iopath/loop.py, worker_order), and an instant of the "
    "timing is a microsecond wide so the application waits for them (model/iopath/timing.py); ext3's journaled "
    "block map and bitmaps stay cached across the cache drop (no reads measured), ext2's do not. Then, after the "
    "loop cells were measured again (the committed loop cells, load 6-10) and their figures seen, two more from "
    "the first run's logs: ext2's sync ends with a flush (ext4_sync_fs without a journal: the log shows one per "
    "bonnie++ sync), and the closing sync is the top file system's (the tools run sync -f, syncfs(2)): a loop "
    "image's host gets its fsync through the flush, not a sync of its own (model/iopath/path.py); and, after "
    "seeing the committed figures, a data read at an instant where a block-map block was read no longer merges "
    "with it (model/iopath/fs_blockmap.py). Dagenais' two loop layers were measured a third time: in the "
    "second run another process read the drive during their first write (outside_partition)",
    "revised after seeing the figures (the VM drives' logs cut into the copy's steps): in the VM each step is the "
    "median of its repeats, the pace a tmpfs copy just before each cell, a thin cell's repeats each provision anew "
    "(calibrate/bench/stacks_vm.py); one plug's bios merge on striped and md members and md raid5/6 cost one "
    "plug's stripe_heads together (model/iopath/dm_striped.py, md_parity.py); drive_busy_s: logged vs model",
    "revised after seeing the figures (Dagenais' network cells, each mechanism found in the emulated drives' "
    "request logs and the guest's queue settings, then re-predicted on the same measurements): nbd's queue takes "
    "requests of at most 128 KiB (drivers/block/nbd.c), and an md or dm device over it the smallest of its "
    "members' limits (blk_stack_limits); nbd-server serves each nbd request as one pread/pwrite of the export, "
    "so the export sees them unmerged; one connection sends one request at a time (nbd_send_cmd under the "
    "socket's tx_lock), each 128 KiB piece paying the client's per-request time; a RAID 1 mirror's queue takes "
    "the array's clones at the array's limit (the local mirror's log: 128 KiB writes, one after the other) "
    "(model/iopath/path.py, network.py, timing.py). NBD to a loop file went from 69/46 % to 8/1 % (write/read), "
    "RAID 1 over a local drive and NBD from 150/64 % to 36/11 %; the earlier cells' figures are unchanged",
    "revised after seeing the figures, for consistency rather than fit: the predictions were given the catalogue's "
    "preset with its drive buffer, where the emulator serves the preset without it; each drive is now the Disk "
    "the emulator times its requests with (calibrate.emulate.drives.model_drive). Over the same measurements "
    "the median went from 16.4 % (buffered drives) to 17.2 %: writes, reads and the tool workloads each came "
    "closer (medians 16.3 -> 14.7, 21.2 -> 20.0, 14.9 -> 12.6 %), the loop layers' reads further (the "
    "buffered drive's timing happened to be closer there; the loops' own miss is left)",
]

#: label -> (seed, top file system, the loop images' host file system, each nested image's allocation).
HOST_STACKS = {
    "native ext3": ("003", "ext3", "ext3", ()),
    "ext3 on sparse loop": ("003", "ext3", "ext3", ("sparse",)),
    "ext3 on zero-filled loop": ("003", "ext3", "ext3", ("zero_filled",)),
    "ext2 on sparse loop": ("003", "ext2", "ext3", ("sparse",)),
    "ext2, no loop layer": ("000", "ext2", "ext2", ()),
    "ext2, 1 loop layer": ("000", "ext2", "ext2", ("sparse",)),
    "ext2, 2 loop layers": ("000", "ext2", "ext2", ("sparse", "sparse")),
    "ext2, 3 loop layers": ("000", "ext2", "ext2", ("sparse", "sparse", "sparse")),
}
IMAGE_SIZES = (IMAGE_BYTES, 256 * MIB, 160 * MIB)  # the nested images [bytes], outermost first


def errors(cells) -> list[dict]:
    """|error| of each predicted figure against its measurement [%]: the copy's write and read
    rates, each tool workload's elapsed time; all are counted in the median."""
    out = []
    for c in cells:
        if c.get("predicted") and c.get("measured"):
            for key in ("copy write", "copy read"):
                m, p = c["measured"][key], c["predicted"][key]
                out.append({"seed": c["seed"], "stack": c["stack"], "figure": key, "measured": m, "predicted": p,
                            "error_pct": 100.0 * abs(p - m) / m, "counted": True})
        for t in c.get("tools", []):
            m, p = t["elapsed_s"], t["predicted"]["elapsed_s"]
            out.append({"seed": c["seed"], "stack": c["stack"], "figure": t["spec"], "measured": m, "predicted": p,
                        "error_pct": 100.0 * abs(p - m) / m, "counted": True})
    return out


#: The studies' orderings: (seed, statement, faster cell, slower cell, figure). The VM cells' labels
#: are calibrate/bench/stacks_vm.py's.
ORDERINGS = [
    ("003", "native ext3 writes faster than ext3 on a sparse loop", "native ext3", "ext3 on sparse loop", "copy write"),
    ("003", "native ext3 writes faster than ext3 on a zero-filled loop", "native ext3", "ext3 on zero-filled loop",
     "copy write"),
    ("000", "ext2 reads faster with no loop layer than with 1", "ext2, no loop layer", "ext2, 1 loop layer",
     "copy read"),
    ("000", "ext2 reads faster with 1 loop layer than with 2", "ext2, 1 loop layer", "ext2, 2 loop layers",
     "copy read"),
    ("000", "ext2 reads faster with 2 loop layers than with 3", "ext2, 2 loop layers", "ext2, 3 loop layers",
     "copy read"),
    ("000", "ext2 writes faster with no loop layer than with 1", "ext2, no loop layer", "ext2, 1 loop layer",
     "copy write"),
    ("000", "ext2 writes faster with 1 loop layer than with 2", "ext2, 1 loop layer", "ext2, 2 loop layers",
     "copy write"),
    ("000", "ext2 writes faster with 2 loop layers than with 3", "ext2, 2 loop layers", "ext2, 3 loop layers",
     "copy write"),
    ("000", "an outer partition reads faster than an inner one", "ext2, fast drive, outer partition",
     "ext2, fast drive, inner partition", "copy read"),
    ("000", "an outer partition writes faster than an inner one", "ext2, fast drive, outer partition",
     "ext2, fast drive, inner partition", "copy write"),
    ("000", "RAID 1 over a fast and a slow drive reads faster than the slow drive", "ext2, RAID 1 fast + slow",
     "ext2, slow drive", "copy read"),
    ("000", "RAID 1 over a fast and a slow drive writes slower than the fast drive",
     "ext2, fast drive, outer partition",
     "ext2, RAID 1 fast + slow", "copy write"),
    ("000", "ext2 on RAID 1 writes faster than ext3 (the journal's cost)", "ext2, RAID 1 fast + slow",
     "ext3, RAID 1 fast + slow", "copy write"),
    ("002", "striping over 2 drives reads faster than 1", "ext4, striped over 2 drives, 64 KiB", "ext4, 1 drive",
     "copy read"),
    ("002", "striping over 2 drives writes faster than 1", "ext4, striped over 2 drives, 64 KiB", "ext4, 1 drive",
     "copy write"),
    ("002", "striping over 4 drives reads faster than 2", "ext4, striped over 4 drives, 64 KiB",
     "ext4, striped over 2 drives, 64 KiB", "copy read"),
    ("002", "striping over 4 drives writes faster than 2", "ext4, striped over 4 drives, 64 KiB",
     "ext4, striped over 2 drives, 64 KiB", "copy write"),
    ("002", "RAID 0 over 4 drives writes faster than RAID 5 over 4", "ext4, striped over 4 drives, 64 KiB",
     "ext4, RAID 5 over 4 drives, 64 KiB", "copy write"),
    ("002", "RAID 5 over 4 drives writes faster than RAID 6 over 4", "ext4, RAID 5 over 4 drives, 64 KiB",
     "ext4, RAID 6 over 4 drives, 64 KiB", "copy write"),
    ("002", "a larger stripe chunk reads faster (ext4)", "ext4, striped over 4 drives, 256 KiB",
     "ext4, striped over 4 drives, 64 KiB", "copy read"),
    ("002", "a thin volume writes slower with a 1 MiB pool chunk than with 64 KiB",
     "ext4, thin volume, 64 KiB pool chunk",
     "ext4, thin volume, 1 MiB pool chunk", "copy write"),
    ("002", "a thin volume writes slower with an 8 MiB pool chunk than with 128 KiB",
     "ext4, thin volume, 128 KiB pool chunk", "ext4, thin volume, 8 MiB pool chunk", "copy write"),
    # Marechal's medium files (about 4 MiB each, as the copy's): "XFS outperforms all other file systems on
    # all tests"
    *(("001", f"xfs on RAID 1 {verb} faster than {other}", "xfs, RAID 1 fast + slow", f"{other}, RAID 1 fast + slow",
       f"copy {step}")
      for other in ("ext3", "jfs", "reiserfs") for verb, step in (("writes", "write"), ("reads", "read"))),
    # the multi-disk LVM study's Figures 5 and 7: RAID 5 over five drives against RAID 0 over four, RAID 6
    # over five against RAID 0 over three
    *(("002", f"RAID 0 over {n0} drives {verb} faster than RAID {level} over 5",
       f"ext4, striped over {n0} drives, 64 KiB", f"ext4, RAID {level} over 5 drives, 64 KiB", f"copy {step}")
      for n0, level in ((4, 5), (3, 6)) for verb, step in (("writes", "write"), ("reads", "read"))),
    # its Figure 11: "more than double performance drop in data write speed ... using at least 1MB size of
    # pool allocation unit", with a file far larger than the chunk (as its bonnie++ files)
    *(("002", f"a thin volume writes slower with {'an' if big[0] == '8' else 'a'} {big} pool chunk than with {small} "
       "(32 MiB file)",
       f"ext4, thin volume, {small} pool chunk, 32 MiB file", f"ext4, thin volume, {big} pool chunk, 32 MiB file",
       "copy write")
      for small, big in (("64 KiB", "1 MiB"), ("128 KiB", "8 MiB"), ("256 KiB", "2 MiB"), ("512 KiB", "4 MiB"))),
    ("002", "striping over 5 drives reads faster than 4", "ext4, striped over 5 drives, 64 KiB",
     "ext4, striped over 4 drives, 64 KiB", "copy read"),
    ("002", "striping over 5 drives writes faster than 4", "ext4, striped over 5 drives, 64 KiB",
     "ext4, striped over 4 drives, 64 KiB", "copy write"),
    ("002", "a larger stripe chunk reads faster (16 against 4 KiB, 5 drives)", "ext4, striped over 5 drives, 16 KiB",
     "ext4, striped over 5 drives, 4 KiB", "copy read"),
    ("002", "a larger stripe chunk reads faster (64 against 16 KiB, 5 drives)", "ext4, striped over 5 drives, 64 KiB",
     "ext4, striped over 5 drives, 16 KiB", "copy read"),
    ("000", "a 2 GB partition reads faster than an 8 GB one at the same start", "ext2, fast drive, 2 GB partition",
     "ext2, fast drive, 8 GB partition", "copy read"),
    ("000", "a 2 GB partition writes faster than an 8 GB one at the same start", "ext2, fast drive, 2 GB partition",
     "ext2, fast drive, 8 GB partition", "copy write"),
    ("000", "the local drive writes faster than NBD to a loop file on it (the protocol's cost)",
     "ext2, local drive (network group)", "ext2 on NBD to a loop file", "copy write"),
    ("000", "the local drive reads faster than NBD to a loop file on it (the protocol's cost)",
     "ext2, local drive (network group)", "ext2 on NBD to a loop file", "copy read"),
    ("000", "RAID 1 over a local drive and NBD writes slower than the local drive",
     "ext2, local drive (network group)", "ext2, RAID 1 over a local drive and NBD", "copy write"),
    ("000", "the local drive writes faster than NFS", "ext2, local drive (network group)",
     "NFS v3 of ext2 (sync export)", "copy write"),
    ("000", "the local drive reads faster than NFS", "ext2, local drive (network group)",
     "NFS v3 of ext2 (sync export)", "copy read"),
    # Dagenais' Figure 8 over his 10 Mb/s network: "the network block devices and filesystems were much slower
    # than the local disks ... the major culprit is the network itself"
    *(("000", f"the local drive {verb} faster than {what} over a 10 Mb/s link", "ext2, local drive (network group)",
       f"{cell}, 10 Mb/s link", f"copy {step}")
      for what, cell in (("NBD", "ext2 on NBD to a loop file"), ("NFS", "NFS v3 of ext2 (sync export)"))
      for verb, step in (("writes", "write"), ("reads", "read"))),
    ("000", "RAID 1 over a local drive and NBD over a 10 Mb/s link writes slower than the local drive",
     "ext2, local drive (network group)", "ext2, RAID 1 over a local drive and NBD, 10 Mb/s link", "copy write"),
    *(("000", f"NBD {verb} faster over the unshaped link than over a 10 Mb/s one (the network, not the protocol)",
       "ext2 on NBD to a loop file", "ext2 on NBD to a loop file, 10 Mb/s link", f"copy {step}")
      for verb, step in (("writes", "write"), ("reads", "read"))),
]


def orderings(cells) -> list[dict]:
    """The studies' orderings on the measured cells: held where the measured difference exceeds the
    spread of the repeats (``decided``); the model's ratio beside each."""
    by = {c["stack"]: c for c in cells if c.get("measured")}
    out = []
    for seed, statement, fast, slow, key in ORDERINGS:
        if fast in by and slow in by:
            a, b = by[fast], by[slow]
            ratio = a["measured"][key] / b["measured"][key]
            spread = a["measured"]["spread"][key] + b["measured"]["spread"][key]
            pa, pb = a.get("predicted"), b.get("predicted")
            out.append({"seed": seed, "statement": f"{statement} ({study(seed)})", "measured_ratio": ratio,
                        "spread": spread, "decided": abs(ratio - 1.0) > spread, "held": ratio > 1.0,
                        "predicted_ratio": pa[key] / pb[key] if pa and pb else None})
    for c in cells:
        images = [x for x in c.get("tools", []) if x["spec"].startswith("image")]
        zero = next((x for x in images if "sparse" not in x["spec"]), None)
        sparse = next((x for x in images if "sparse" in x["spec"]), None)
        if zero and sparse:  # the spread of each one's repeats (none stored for a single run: 0)
            ratio = zero["elapsed_s"] / sparse["elapsed_s"]
            spread = zero.get("spread", 0.0) + sparse.get("spread", 0.0)
            out.append({"seed": "003",
                        "statement": f"a sparse image is made faster than a zero-filled one, on {c['stack']} "
                                     "(the loop-image study)",
                        "measured_ratio": ratio, "spread": spread, "decided": abs(ratio - 1.0) > spread,
                        "held": sparse["elapsed_s"] < zero["elapsed_s"],
                        "predicted_ratio": zero["predicted"]["elapsed_s"] / sparse["predicted"]["elapsed_s"]})
    return out


def paper_loo_median() -> float | None:
    path = BENCHMARKS / "results" / "djordjevic_loo.json"
    try:
        return float(json.loads(path.read_text())["figures"]["median_cell_error_pct"]["value"])
    except (OSError, KeyError, ValueError):
        return None
