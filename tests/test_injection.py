"""No text of a stack or of the command line reaches a command unchecked (mount/mkfs options, names, paths).

Two halves:

* shell payloads (``x;touch${IFS}MARKER``, ``$( )``, backquotes, ``|``, ``&``,
  a newline) put into EVERY string of a stack description -- every string the
  JSON of a stack of each node kind holds, and every str-typed field of each
  node class the JSON leaves out -- and into every option of ``diskmodel
  postmark``, ``bench`` and ``experiment`` that becomes part of a command.  The
  real CLI (its entry point, all cases in one child process per batch, as
  tests/test_cli_errors_battery.py does) must refuse each in one line naming the
  field, never create the MARKER, and leave no loop device, mount or file;
* the option validator (:mod:`diskmodel.model.filesystems.options`) against the kernel
  and the mkfs tools: each value form it accepts is one the real ``mkfs`` and
  ``mount`` take (a loop-device ext4, xfs and btrfs mounted with them, the
  options then read back from /proc/mounts), and the value syntax of the
  options the docs define (ext4(5), xfs(5), btrfs(5)) refused when broken.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_root, require_tools
from _helpers import assert_one_error_line, run_cli_cases

from diskmodel.data.disksim.bundled import BUNDLED_DIR
from diskmodel.model.stacks import nodes
from diskmodel.model.drive.drives import FileDrive, PresetDrive
from diskmodel.model.filesystems.kinds import parameters_from_options
from diskmodel.model.stacks.loop_file import LoopFile
from diskmodel.model.stacks.network import NbdDevice, Network, NfsMount
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import NODE_SCHEMA, FileSystemNode, Stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.units import MIB
from diskmodel.model.stacks.volumes import LinearVolume, Partition, StripedVolume

DISKS = tuple(PresetDrive("wd800bd", d) for d in ("sda", "sdb", "sdc", "sdd"))

# What follows a field's own value (or stands alone): each ends or starts a command in sh.
SUFFIXES = (";touch${IFS}{M}", "|touch${IFS}{M}", "&touch${IFS}{M}", "$(touch${IFS}{M})", "`touch${IFS}{M}`",
            "\ntouch {M}", "${IFS}&&${IFS}touch${IFS}{M}")


def _members(n: int, size: int = 128 * MIB) -> tuple:
    return tuple(Partition(MIB, size, name=f"/dev/sd{'abcd'[i]}1", disk=DISKS[i].name) for i in range(n))


def _base_stacks() -> dict[str, Stack]:
    """A valid stack holding each node kind, with strings in every text field and option list."""
    part = Partition(MIB, 512 * MIB, name="/dev/sda3")
    net = Network(125e6, 2e-4)
    fs = {
        "ext2": FileSystemNode(part, kind="ext2", mkfs_options=("-L", "lab", "-E", "stride=4"),
                               mount_options=("errors=remount-ro", "noatime")),
        "ext3": FileSystemNode(part, kind="ext3", mkfs_options=("-J", "size=16"),
                               mount_options=("data=writeback", "commit=15")),
        "ext4": FileSystemNode(part, kind="ext4", mkfs_options=("-O", "^dir_index", "-I", "256"),
                               mount_options=("journal_path=/dev/sdb1", "inode_readahead_blks=64", "stripe=16")),
        "xfs": FileSystemNode(part, kind="xfs", mkfs_options=("-d", "agcount=4", "-L", "lab"),
                              mount_options=("allocsize=64k", "logdev=/dev/sdb1", "logbsize=64k")),
        "btrfs": FileSystemNode(part, kind="btrfs", mkfs_options=("-m", "dup", "--label", "lab"),
                                mount_options=("compress=zstd:3", "subvol=/a/b", "device=/dev/sda3")),
        "jfs": FileSystemNode(part, kind="jfs", mkfs_options=("-L", "lab", "-s", "8"),
                              mount_options=("iocharset=utf8", "errors=remount-ro", "umask=022")),
        "reiserfs": FileSystemNode(part, kind="reiserfs", mkfs_options=("-l", "lab", "-h", "tea"),
                                   mount_options=("hash=tea", "errors=ro-remount", "data=ordered")),
    }
    out = {kind: Stack(node, DISKS[:1], name=f"{kind} stack") for kind, node in fs.items()}
    out["lvm_linear"] = Stack(FileSystemNode(LinearVolume(_members(2), name="LogVol02")), DISKS[:2], "lvm")
    out["lvm_striped"] = Stack(FileSystemNode(StripedVolume(_members(2), name="striped")), DISKS[:2])
    for level, n in (("raid0", 2), ("raid1", 2), ("raid5", 3), ("raid6", 4)):
        out[level] = Stack(FileSystemNode(RaidArray(level, _members(n), tool="md", name="md0")), DISKS[:n])
    out["raid1-policy"] = Stack(FileSystemNode(RaidArray("raid1", _members(2), tool="btrfs", read_policy="btrfs"),
                                               kind="btrfs"), DISKS[:2])
    out["thin"] = Stack(FileSystemNode(ThinVolume(part, 256 * MIB, 1024 * MIB, name="thin0")), DISKS[:1])
    out["loop_file"] = Stack(FileSystemNode(LoopFile(part, 128 * MIB, name="/dev/loop7")), DISKS[:1])
    out["nbd"] = Stack(FileSystemNode(NbdDevice(part, net, name="/dev/nbd0")), DISKS[:1])
    out["nfs"] = Stack(NfsMount(FileSystemNode(part, kind="ext4"), net), DISKS[:1])
    out["disksim"] = Stack(FileSystemNode(part), (FileDrive("disksim", str(BUNDLED_DIR / "atlas10k"), "sda"),))
    out["calibration"] = Stack(FileSystemNode(part), (FileDrive("calibration", "/srv/calibration.json", "sda"),))
    return out


def _string_sites(data, path=()):
    """(path, value) of every string in JSON *data*, and of every str-typed node field the JSON leaves out or nulls.

    A path is a tuple of keys and list indices; the field a site names is its last key.
    """
    if isinstance(data, dict):
        cls = NODE_SCHEMA._class_of_kind.get(data.get("kind")) if isinstance(data.get("kind"), str) else None
        if cls is not None:  # the schema: fields typed str that the JSON does not hold as a string
            for f in dataclasses.fields(cls):
                if f.init and "str" in str(f.type) and not isinstance(data.get(f.name), (str, list, tuple)):
                    yield path + (f.name,), ""
        for key, value in data.items():
            yield from _string_sites(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _string_sites(value, path + (i,))
    elif isinstance(data, str):
        yield path, data


def _signature(data, path) -> tuple:
    """What checks the string at *path*: the kind of the node that holds it and the path below that node.

    Two stacks that hold the same field of the same node kind (every stack has a disk's ``name``) test the
    same check; an option list's items are told apart by the file system's kind and their place (a flag, its
    value).
    """
    node, below, target = "", [], data
    for key in path:
        target = target[key] if isinstance(target, list) or key in target else ""  # a field the JSON leaves out
        below.append(key)
        if isinstance(target, dict) and isinstance(target.get("kind"), str):
            node, below = target["kind"], []
    return (node, *below)


def _put(data, path, value):
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def _field(path) -> str:
    return next(key for key in reversed(path) if isinstance(key, str))


def _left_behind(root: Path) -> list[str]:
    """Loop devices over a file under *root*, mounts naming *root*, files in the runs' temporary folder.

    Other processes on the host may make and remove loop devices and mounts meanwhile: only what lies
    under *root* (every path a case names, TMPDIR and the run state of the child) can be the cases'.
    """
    listing = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True,
                             check=True).stdout
    loops = [line for line in listing.splitlines() if str(root) in line]
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if str(root) in line]
    temporary = sorted(os.listdir(root / "run" / "tmp"))
    return loops + mounts + temporary


def _run_batch(root: Path, cases: dict) -> dict:
    """Run *cases* {id: (argv, fragment)} through diskmodel's entry point in one child process; results by id."""
    plan = {}
    for ident, (args, _) in cases.items():
        work = root / "work" / ident.replace("/", "_")
        work.mkdir(parents=True)
        plan[ident] = (args, str(work))
    (root / "tmp").mkdir()  # the runs' own temporary folders (Run.work_dir) land here, to be checked empty
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(root / "runstate"), TMPDIR=str(root / "tmp"))
    env.pop("DISKMODEL_DEBUG", None)
    results = run_cli_cases(plan, root, env)
    return {ident: (results[ident], sorted(os.listdir(plan[ident][1]))) for ident in plan}


def _check(results: dict, cases: dict, marker: Path, root: Path) -> None:
    failures = []
    for ident, (res, listing) in results.items():
        try:
            assert res["code"] not in (0, -1), f"exit {res['code']}"
            assert res["stdout"] == "", res["stdout"]
            assert_one_error_line(res["stderr"], cases[ident][1])
            assert listing == [], f"files made in the working folder: {listing}"
        except AssertionError as exc:
            failures.append(f"{ident}: {str(exc)[:300]}")
    assert not marker.exists(), "a payload ran: the MARKER file exists"
    assert _left_behind(root) == [], "a loop device, mount or file was left behind"
    assert not failures, f"{len(failures)} of {len(results)} cases:\n" + "\n".join(failures[:20])


@pytest.mark.slow
def test_every_string_of_a_stack_is_checked_before_anything_is_built(tmp_path):
    stacks = _base_stacks()
    covered = {kind for stack in stacks.values() for _, node, _ in stack.nodes()
               for kind in [nodes.kind_of(node)]} | {nodes.kind_of(d) for s in stacks.values() for d in s.disks}
    assert set(NODE_SCHEMA.known_kinds()) - covered == {"in_memory"}  # in-memory Disks have no JSON form
    marker = tmp_path / "MARKER"
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    cases, seen = {}, set()
    scratch = str(tmp_path / "never" / "scratch.img")
    for name, stack in stacks.items():
        data = stack.to_json_data()
        assert Stack.from_json_data(data) == stack  # the base is valid: each refusal below is the payload's
        for path, value in _string_sites(data):
            if _signature(data, path) in seen:
                continue
            seen.add(_signature(data, path))
            where = "/".join(map(str, path))
            payloads = [value + s.replace("{M}", str(marker)) for s in SUFFIXES]
            if value:
                payloads.append("x" + SUFFIXES[0].replace("{M}", str(marker)))
            for i, payload in enumerate(payloads):
                document = inputs / f"{name}-{where}-{i}.json".replace("/", "_")
                document.write_text(json.dumps(_put(data, path, payload)))
                cases[f"bench {name} {where} {i}"] = (
                    ["bench", "--stack", str(document), "--workload", "seqwrite_4k", "--size", "1M",
                     "--scratch", scratch], _field(path))
                if i in (0, 5):  # postmark reads the stack through the same code: a separator and a newline
                    cases[f"postmark {name} {where} {i}"] = (
                        ["postmark", "--stack", str(document), "--workload", "test1", "--scratch", scratch],
                        _field(path))
    assert len(seen) > 60
    results = _run_batch(tmp_path / "run", cases)
    _check(results, cases, marker, tmp_path)
    assert not (tmp_path / "never").exists()


@pytest.mark.slow
def test_every_cli_option_that_becomes_part_of_a_command_is_checked_first(tmp_path):
    marker = tmp_path / "MARKER"
    stack = tmp_path / "stack.json"
    stack.write_text(_base_stacks()["ext4"].to_json())
    scratch = str(tmp_path / "never" / "scratch.img")
    postmark = ["postmark", "--layout", "native", "--size", "64M", "--workload", "test1"]
    bench = ["bench", "--stack", str(stack), "--workload", "seqwrite_4k", "--size", "1M"]
    experiment = ["experiment", "--out", str(tmp_path / "never" / "report"), "--no-progress"]
    # (id, argv before the option, option, a valid value it is appended to, what the error line names)
    options = [
        ("postmark-mount", postmark + ["--scratch", scratch], "--mount-options", "errors=remount-ro",
         "--mount-options"),
        ("postmark-mount-bare", postmark + ["--scratch", scratch], "--mount-options", "", "--mount-options"),
        ("postmark-mkfs", postmark + ["--scratch", scratch], "--mkfs-options", "-L lab", "--mkfs-options"),
        ("postmark-mkfs-E", postmark + ["--fs", "ext4", "--scratch", scratch], "--mkfs-options", "-E stride=4",
         "--mkfs-options"),
        ("postmark-xfs-mkfs", postmark[:4] + ["320M"] + postmark[5:] + ["--fs", "xfs", "--scratch", scratch],
         "--mkfs-options", "-d agcount=4", "--mkfs-options"),
        ("postmark-btrfs-mount", postmark + ["--fs", "btrfs", "--scratch", scratch], "--mount-options",
         "compress=zstd", "--mount-options"),
        ("postmark-btrfs-subvol", postmark + ["--fs", "btrfs", "--scratch", scratch], "--mount-options",
         "subvol=/a", "--mount-options"),
        ("postmark-fs", postmark + ["--scratch", scratch], "--fs", "ext4", "--fs"),
        ("postmark-scratch", postmark, "--scratch", str(tmp_path / "never" / "s.img"), "--scratch"),
        ("postmark-destroy", postmark + ["--scratch", scratch], "--destroy-data-on", scratch, "--destroy-data-on"),
        ("bench-scratch", bench, "--scratch", str(tmp_path / "never" / "s.img"), "--scratch"),
        ("bench-destroy", bench + ["--scratch", scratch], "--destroy-data-on", scratch, "--destroy-data-on"),
        ("experiment-device", experiment, "--device", "/dev/null", "--device"),
        ("experiment-scratch", experiment, "--postmark-scratch", str(tmp_path / "never" / "s.img"),
         "--postmark-scratch"),
        ("experiment-destroy", experiment, "--destroy-data-on", "/dev/null", "--destroy-data-on"),
        ("experiment-preset", experiment, "--preset", "wd800bd", "--preset"),
    ]
    cases = {}
    for ident, argv, option, valid, names in options:
        for i, suffix in enumerate(SUFFIXES):
            cases[f"{ident} {i}"] = (argv + [option, valid + suffix.replace("{M}", str(marker))], names)
    for ident, argv, flag in (("postmark", postmark, "--scratch"), ("bench", bench, "--scratch"),
                              ("experiment", experiment, "--postmark-scratch")):  # read as an option of losetup
        cases[f"{ident}-leading-dash"] = (argv + [f"{flag}=-f{marker}"], flag)
    for i, suffix in enumerate(SUFFIXES):  # --slow DISK=RATE: the disk's name
        cases[f"bench-slow {i}"] = (bench + ["--scratch", scratch, "--slow",
                                             "sda" + suffix.replace("{M}", str(marker)) + "=1M"], "--slow")
    results = _run_batch(tmp_path / "run", cases)
    _check(results, cases, marker, tmp_path)
    assert not (tmp_path / "never").exists()


# ------------------------------------------------------------------ the validator against the docs

VALID_MOUNT = {
    "ext2": ["errors=continue", "errors=panic", "resuid=0", "resgid=100", "sb=8193", "check=none", "nocheck",
             "acl", "user_xattr", "bsddf", "orlov", "grpquota", "nouid32"],
    "ext3": ["data=journal", "data=ordered", "commit=0", "commit=30", "barrier", "barrier=0", "nobarrier",
             "data_err=abort", "jqfmt=vfsv1", "usrjquota=aquota.user", "usrjquota=", "journal_dev=2049",
             "journal_path=/dev/sdb1", "noload"],
    "ext4": ["inode_readahead_blks=0", "inode_readahead_blks=4096", "stripe=0", "max_batch_time=15000",
             "min_batch_time=0", "journal_ioprio=0", "journal_ioprio=7", "auto_da_alloc", "auto_da_alloc=0",
             "init_itable", "init_itable=10", "max_dir_size_kb=1024", "mb_optimize_scan=1", "dax", "dax=inode",
             "delalloc", "nodelalloc", "dioread_nolock", "prjquota", "discard"],
    "xfs": ["allocsize=4096", "allocsize=64k", "allocsize=1g", "logbufs=2", "logbufs=8", "logbsize=16384",
            "logbsize=256k", "logdev=/dev/sdb1", "rtdev=/dev/sdc", "sunit=128,swidth=512", "dax=always",
            "inode64", "nouuid", "pqnoenforce", "wsync", "largeio"],
    "btrfs": ["compress", "compress=zlib", "compress=zlib:9", "compress=lzo", "compress=zstd", "compress=zstd:1",
              "compress=zstd:15", "compress=no", "compress-force=zstd:3", "discard", "discard=sync",
              "discard=async", "fatal_errors=bug", "max_inline=0", "max_inline=4k", "metadata_ratio=2",
              "rescue=usebackuproot", "rescue=ignorebadroots", "space_cache", "space_cache=v2",
              "subvol=/", "subvol=@home", "subvol=a/b.c_d-e", "subvolid=5", "thread_pool=4", "commit=120",
              "device=/dev/sdb1", "ssd_spread", "nodatacow"],
}

BAD_MOUNT = [
    ("ext4", "errors=remount-ro;touch${IFS}/tmp/x", "errors takes continue, remount-ro or panic"),
    ("ext3", "data=writeback$(id)", "data takes journal, ordered or writeback"),
    ("ext4", "commit=5.5", "commit takes a whole number from 0 to"),
    ("ext4", "commit=-1", "commit takes a whole number"),
    ("ext4", "inode_readahead_blks=100", "(0 or a power of two)"),
    ("ext4", "inode_readahead_blks=2147483648", "from 0 to 1073741824"),
    ("ext4", "journal_ioprio=8", "journal_ioprio takes a whole number from 0 to 7"),
    ("ext4", "stripe=x", "stripe takes a whole number"),
    ("ext4", "barrier=2", "barrier takes 0 or 1 (or no value)"),
    ("ext4", "noatime=1", "noatime takes no value"),
    ("ext4", "errors", "errors needs a value"),
    ("ext3", "journal_path=/dev/sdb1`id`", "journal_path takes a path"),
    ("ext3", "usrjquota=a*b", "usrjquota takes nothing or a name"),
    ("xfs", "allocsize=3k", "a power of two"),
    ("xfs", "allocsize=2g", "4096 to 1073741824 bytes"),
    ("xfs", "logbufs=9", "logbufs takes a whole number from 2 to 8"),
    ("xfs", "logbsize=512k", "16384 to 262144 bytes"),
    ("xfs", "logdev=/dev/sdb|sh", "logdev takes a path"),
    ("xfs", "dax=sometimes", "dax takes always, never or inode (or no value)"),
    ("btrfs", "compress=zstd$(touch${IFS}/tmp/z)", "compress takes zlib, zlib:0 to zlib:9, lzo, zstd"),
    ("btrfs", "compress=zstd:16", "compress takes"),
    ("btrfs", "compress=zlib:10", "compress takes"),
    ("btrfs", "compress=gzip", "compress takes"),
    ("btrfs", "subvol=/a;reboot", "subvol takes a path"),
    ("btrfs", "subvol=a%b", "subvol takes a path"),
    ("btrfs", "space_cache=v3", "space_cache takes v1 or v2 (or no value)"),
    ("btrfs", "discard=later", "discard takes sync or async (or no value)"),
    ("btrfs", "rescue=usebackuproot:nologreplay", "rescue takes usebackuproot, nologreplay"),
    ("xfs", "sunit=128", "xfs takes sunit and swidth together"),
    ("ext2", "nouser_xattr", "nouser_xattr is not a mount option of ext2"),
    ("btrfs", "thread_pool=0", "thread_pool takes a whole number from 1"),
    ("btrfs", "fatal_errors=reboot", "fatal_errors takes bug or panic"),
]

VALID_MKFS = {
    "ext4": [("-b", "1024"), ("-b4096",), ("-I", "128"), ("-J", "size=4"), ("-J", "size=4,location=1m"),
             ("-O", "^has_journal,extent,^dir_index,metadata_csum"), ("-E", "stride=16,stripe_width=32"),
             ("-E", "lazy_itable_init=0,lazy_journal_init,root_owner=0:0"), ("-L", "dm-lab_1"), ("-m", "0.5"),
             ("-m", "5"), ("-N", "4096"), ("-i", "16384"), ("-T", "small"), ("-U", "random"),
             ("-U", "0b2c7f4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"), ("-e", "remount-ro"), ("-t", "ext4"), ("-q",), ("-F",),
             ("-j",)],
    "xfs": [("-b", "size=4096"), ("-b", "size=4k"), ("-d", "agcount=8"), ("-d", "su=64k,sw=4"),
            ("-i", "size=512,maxpct=25,sparse=1"), ("-l", "size=64m,lazy-count=1"), ("-l", "internal"),
            ("-m", "crc=1,finobt=1,reflink=1,bigtime=1"), ("-n", "size=8192,ftype=1"), ("-s", "size=4096"),
            ("-L", "xfslab"), ("-f",), ("-K",)],
    "btrfs": [("-n", "16384"), ("--nodesize", "32k"), ("-s", "4096"), ("-m", "single"), ("--metadata=dup",),
              ("-d", "single"), ("-O", "no-holes,^mixed-bg"), ("-R", "quota,^free-space-tree"), ("-L", "lab"),
              ("--csum", "xxhash"), ("-b", "256m"), ("-U", "0b2c7f4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"), ("-K",)],
}

BAD_MKFS = [
    ("ext4", ("-L", "a;b"), "-L takes a label"),
    ("ext4", ("-L", "seventeen-chars-x"), "-L takes a label of at most 16"),
    ("ext4", ("-O", "extent,$(id)"), "-O takes features of"),
    ("ext4", ("-O", "no_such_feature"), "-O takes features of"),
    ("ext4", ("-E", "stride=4;id"), "-E stride takes a whole number"),
    ("ext4", ("-E", "bogus=1"), "-E takes key[=value] items of"),
    ("ext4", ("-J", "size=x"), "-J size takes a whole number"),
    ("ext4", ("-t", "xfs"), "-t takes ext4"),
    ("ext4", ("-m", "60"), "-m takes a percentage from 0 to 50"),
    ("ext4", ("-e", "reboot"), "-e takes continue, remount-ro or panic"),
    ("ext4", ("-q", "x"), "x is not an option of mkfs.ext4"),
    ("ext4", ("-b",), "-b of mkfs.ext4 needs a value"),
    ("xfs", ("-d", "agcount=4`id`"), "-d agcount takes a whole number"),
    ("xfs", ("-d", "nosuch=1"), "-d takes key[=value] items of"),
    ("xfs", ("-L", "thirteen-char"), "-L takes a label of at most 12"),
    ("xfs", ("-m", "crc=2"), "-m crc takes 0 or 1"),
    ("xfs", ("-l", "size=64q"), "-l size takes a size"),
    ("btrfs", ("-m", "raid7"), "-m takes raid0, raid1"),
    ("btrfs", ("--csum", "md5"), "--csum takes crc32c, xxhash, sha256 or blake2"),
    ("btrfs", ("-n", "12k"), "-n takes a size of 4096 to 65536 bytes, a power of two"),
    ("btrfs", ("--label=a|b",), "--label takes a label"),
    ("btrfs", ("-O", "mixed-bg;x"), "-O takes features of"),
    ("btrfs", ("-R", "no-holes"), "-R takes features of quota, free-space-tree"),
]


@pytest.mark.parametrize("kind,option", [(k, o) for k, options in VALID_MOUNT.items() for o in options])
def test_each_documented_mount_option_form_is_accepted(kind, option):
    parameters_from_options(kind, (), tuple(option.split(",")))  # a form of two options: sunit with swidth


@pytest.mark.parametrize("kind,option,what", BAD_MOUNT)
def test_a_bad_mount_option_value_is_refused_naming_it_and_what_works(kind, option, what):
    with pytest.raises(ValueError) as info:
        FileSystemNode(Partition(MIB, 512 * MIB), kind=kind, mount_options=(option,))
    message = str(info.value)
    assert message.startswith("mount_options: ") and what in message, message
    assert "\n" not in message


@pytest.mark.parametrize("kind,options", [(k, o) for k, options in VALID_MKFS.items() for o in options])
def test_each_documented_mkfs_option_form_is_accepted(kind, options):
    from diskmodel.model.filesystems.kinds import _mkfs_pairs

    assert _mkfs_pairs(kind, options)


@pytest.mark.parametrize("kind,options,what", BAD_MKFS)
def test_a_bad_mkfs_option_is_refused_naming_it_and_what_works(kind, options, what):
    with pytest.raises(ValueError) as info:
        parameters_from_options(kind, options, ())
    message = str(info.value)
    assert message.startswith("mkfs_options: ") and what in message, message


def test_the_error_names_the_node_the_field_the_option_and_what_works():
    document = _base_stacks()["ext4"].to_json_data()
    document["file_system"]["mount_options"] = ["errors=remount-ro;touch${IFS}/tmp/x"]
    with pytest.raises(ValueError) as info:
        Stack.from_json_data(document)
    assert str(info.value) == ("file_system (ext4): mount_options: errors=remount-ro;touch${IFS}/tmp/x : "
                               "errors takes continue, remount-ro or panic")


# ------------------------------------------------------------------ the validator against the kernel

# (kind, mkfs options, mount options, what /proc/mounts then shows for them, a malformed option, size)
KERNEL_CASES = [
    ("ext4", ("-L", "dm-lab", "-E", "lazy_itable_init=1,stride=4", "-I", "256", "-b", "4096"),
     ("noatime", "errors=remount-ro", "data=writeback", "commit=15", "inode_readahead_blks=64", "stripe=16",
      "nodelalloc"),
     ("noatime", "errors=remount-ro", "data=writeback", "commit=15", "inode_readahead_blks=64", "stripe=16",
      "nodelalloc"), "inode_readahead_blks=100", 64 * MIB),
    ("ext3", ("-J", "size=4", "-m", "1"), ("data=journal", "barrier=1", "errors=continue", "commit=7", "resuid=0"),
     ("data=journal", "commit=7"), "data_err=maybe", 64 * MIB),
    ("xfs", ("-b", "size=4096", "-d", "agcount=4", "-i", "size=512", "-L", "dmxfs"),
     ("noatime", "allocsize=64k", "logbufs=8", "logbsize=64k", "nouuid", "inode64"),
     ("noatime", "allocsize=64k", "logbufs=8", "logbsize=64k", "nouuid", "inode64"), "logbufs=9", 320 * MIB),
    ("btrfs", ("-L", "dmbtrfs", "-m", "dup", "-n", "16384"),
     ("compress=zstd:3", "commit=60", "space_cache=v2", "discard=async", "subvol=/", "max_inline=1024",
      "fatal_errors=panic", "ssd"),
     ("compress=zstd:3", "commit=60", "space_cache=v2", "discard=async", "subvol=/", "max_inline=1024",
      "fatal_errors=panic", "ssd"), "space_cache=v3", 256 * MIB),
]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("kind,mkfs,mount,shown,malformed,size", KERNEL_CASES, ids=[c[0] for c in KERNEL_CASES])
def test_options_the_validator_accepts_are_taken_by_mkfs_and_the_kernel(loops, tmp_path, kind, mkfs, mount, shown,
                                                                       malformed, size):
    """The real mkfs and mount take what the model accepts, and refuse the malformed option the model refuses."""
    require_root()
    require_tools(f"mkfs.{kind}", "mount", "losetup")
    FileSystemNode(Partition(MIB, size), kind=kind, mkfs_options=mkfs, mount_options=mount)  # the model takes them
    with pytest.raises(ValueError, match=f"^mount_options: {re.escape(malformed)} : "):
        FileSystemNode(Partition(MIB, size), kind=kind, mount_options=(malformed,))
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(size)
    device = loops.attach(image, direct_io=False)
    quiet = {"ext3": ("-F", "-q"), "ext4": ("-F", "-q"), "xfs": ("-f", "-q"), "btrfs": ("-f", "-q")}[kind]
    made = subprocess.run([f"mkfs.{kind}", *quiet, *mkfs, device], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    loops.mounts.append(str(mount_point.resolve()))  # recorded before it is made; teardown unmounts it
    refused = subprocess.run(["mount", "-t", kind, "-o", malformed, device, str(mount_point)],
                             capture_output=True, text=True)
    assert refused.returncode != 0, f"the kernel took {malformed}"
    done = subprocess.run(["mount", "-t", kind, "-o", ",".join(mount), device, str(mount_point)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    line = next(line for line in Path("/proc/mounts").read_text().splitlines()
                if line.split()[1] == str(mount_point.resolve()))
    taken = line.split()[3].split(",")
    assert [o for o in shown if o not in taken] == [], line
    assert line.split()[2] == kind


MKFS_IMAGE_BYTES = {"ext4": 64 * MIB, "xfs": 1024 * MIB, "btrfs": 256 * MIB}  # sparse image files


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(VALID_MKFS))
def test_each_mkfs_option_form_the_validator_accepts_is_taken_by_the_real_mkfs(tmp_path, kind):
    """mkfs.<kind> makes a file system on an image file with each accepted form (no device needed)."""
    require_tools(f"mkfs.{kind}")
    force = "-F" if kind == "ext4" else "-f"
    refused = []
    for options in VALID_MKFS[kind]:
        image = tmp_path / "fs.img"
        with open(image, "wb") as f:
            f.truncate(MKFS_IMAGE_BYTES[kind])
        made = subprocess.run([f"mkfs.{kind}", force, "-q", *options, str(image)], capture_output=True, text=True)
        if made.returncode != 0:
            refused.append(f"{' '.join(options)}: {made.stderr.strip()[:200]}")
        image.unlink()
    assert refused == []


# Accepted forms that need more than a bare file system of the kind to mount: another device, a DAX
# device, a quota file, a subvolume, an alternative superblock where a 4 KiB-block ext2 has none.
NEEDS_MORE = {"journal_dev=2049", "journal_path=/dev/sdb1", "logdev=/dev/sdb1", "rtdev=/dev/sdc", "device=/dev/sdb1",
              "usrjquota=aquota.user", "jqfmt=vfsv1", "sb=8193", "subvol=@home", "subvol=a/b.c_d-e", "dax",
              "dax=always",
              "prjquota",                               # ext4: the project feature (mkfs -O project,quota)
              "pqnoenforce",                            # xfs: a kernel with XFS quota (this host's has none)
              "space_cache",                            # btrfs v1: a file system made without a free-space tree
              "sunit=128,swidth=512"}                   # xfs: a file system made with stripe alignment (-d su=,sw=)
READ_ONLY = ("rescue=", "norecovery", "nologreplay", "noload", "usebackuproot")  # mounted ro, as they need


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(VALID_MOUNT))
def test_each_mount_option_form_the_validator_accepts_is_taken_by_the_kernel(loops, tmp_path, kind):
    """Each accepted form of VALID_MOUNT, alone, mounts a fresh file system of the kind on a loop device."""
    require_root()
    require_tools(f"mkfs.{kind}", "mount", "umount", "losetup")
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(320 * MIB if kind == "xfs" else 128 * MIB)
    device = loops.attach(image, direct_io=False)
    made = subprocess.run([f"mkfs.{kind}", "-f" if kind in ("xfs", "btrfs") else "-F", "-q", device],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    refused = []
    for option in VALID_MOUNT[kind]:
        if option in NEEDS_MORE:
            continue
        given = f"ro,{option}" if option.startswith(READ_ONLY) else option
        loops.mounts.append(str(mount_point.resolve()))  # recorded before it is made
        done = subprocess.run(["mount", "-t", kind, "-o", given, device, str(mount_point)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            loops.mounts.remove(str(mount_point.resolve()))
            refused.append(option)
            continue
        loops.umount(mount_point)
    assert refused == []
