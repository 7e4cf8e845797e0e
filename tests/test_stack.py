"""model/stacks/stack.py: one description of a storage stack for the model, provisioning and reports.

The golden files hold what the code before the stack descriptions gave
(tests/golden/*_before_stack.json, written by ``paper_layout`` + ``predict``
and ``regions_for`` + ``build_plan``): predictions and plans from the paper's
stacks must equal them.
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from diskmodel.calibrate import stacks as stack_files
from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench.steps import Concat, Ref, words_of
from diskmodel.model.filesystems.filesystem import FileSystem, PageCache
from diskmodel.model.predict import predict
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.drive.drives import FileDrive, InMemoryDrive, PresetDrive
from diskmodel.model.stacks.stack import FILE_SYSTEM_KINDS, PAPER_STACKS, FileSystemNode, Stack, paper_stack, stack_on
from diskmodel.model.stacks.volume_on_disk import VolumeOnDisk
from diskmodel.model.units import GB, MIB
from diskmodel.model.stacks.volumes import LinearVolume, Partition, StripedVolume
from diskmodel.model.stacks.lvm_mapping import LvmMapping
from diskmodel.model.predictions.workload import expected_counts, postmark_preset

GOLDEN = Path(__file__).parent / "golden"
DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))


@pytest.fixture(scope="module")
def disk():
    return load_preset("wd800bd")


def striped_stack() -> Stack:
    pvs = (Partition(MIB, 40 * MIB, "/dev/sdb1", disk="sdb"), Partition(64 * MIB, 40 * MIB, "/dev/sdb2", disk="sdb"))
    volume = StripedVolume(pvs, stripe_size_bytes=128 * 1024, name="fast")
    return Stack(FileSystemNode(volume, kind="ext2", mount_options=("noatime",)), (PresetDrive("hp97560", "sdb"),),
                 "striped")


# ------------------------------------------------------------------ JSON

@pytest.mark.parametrize("make", [
    *(lambda n=n: paper_stack(n) for n in PAPER_STACKS),
    *(lambda n=n: paper_stack(n, fs_size_bytes=64 * MIB, kind="xfs", mkfs_options=("-b", "size=4096")) for n in
      PAPER_STACKS),
    lambda: paper_stack("lvm2", pv_gap_bytes=5 * GB, filesystem=FileSystem(journal_mode="journal",
                                                                           overlapped_writeback=True)),
    striped_stack,
])
def test_paper_and_striped_stacks_round_trip_through_json(make):
    stack = make()
    text = stack.to_json()
    again = Stack.from_json(text)
    assert again == stack
    assert again.to_json() == text
    data = json.loads(text)
    assert data["format"] == "diskmodel.stack" and data["format_version"] == 1
    assert data["file_system"]["kind"] == stack.file_system.kind


def test_the_paper_stacks_are_what_tables_1_to_3_say(disk):
    cap = disk.capacity_bytes
    native, lvm1, lvm2 = (paper_stack(n) for n in PAPER_STACKS)
    assert native.disks == (PresetDrive("wd800bd", "sda"),) and native.short_name == "native"
    assert native.volume == Partition(cap - 20 * GB, 20 * GB, "/dev/sda3")
    assert lvm1.volume == LinearVolume((Partition(cap - 20 * GB, 20 * GB, "/dev/sda3"),), name="LogVol02")
    assert lvm1.volume.size_bytes == 4768 * 4 * MIB
    assert [p.start_bytes for _, p in lvm2.partitions()] == [cap - 20 * GB, cap - 10 * GB]
    assert lvm2.volume.size_bytes == 2 * 2383 * 4 * MIB
    assert [p for _, p in lvm2.partitions()] == list(lvm2.volume.physical_volumes)
    # the bench's sizing: the same three, with a file system of exactly the size asked
    bench = [paper_stack(n, fs_size_bytes=512 * MIB) for n in PAPER_STACKS]
    assert [s.volume.size_bytes for s in bench] == [512 * MIB] * 3
    assert [[(p.start_bytes, p.size_bytes) for _, p in s.partitions()] for s in bench] == [
        [(MIB, 512 * MIB)], [(MIB, 515 * MIB)], [(MIB, 259 * MIB), (260 * MIB, 259 * MIB)]]


def test_describe_names_every_node_and_the_disk():
    text = paper_stack("lvm2").describe()
    assert text.splitlines() == [
        "stack lvm2:",
        "  ext3 file system (ordered, 4096-byte blocks)",
        "    LVM linear volume LogVol02: 19990052864 bytes (4766 extents of 4194304 bytes) in 2 segment(s) over "
        "2 PV(s)",
        "      partition /dev/sda3 on sda: bytes 60031744000..70031744000 (10.000 GB)",
        "      partition /dev/sda4 on sda: bytes 70031744000..80031744000 (10.000 GB)",
        "  disk sda: preset wd800bd",
    ]
    assert striped_stack().evolve(name="").short_name == "ext2 on lvm_striped"


# ------------------------------------------------------------------ any valid stack

@st.composite
def stacks(draw):
    """Valid stacks that provisioning builds: partitions on MiB boundaries of one disk, a volume, a file system."""
    extent = draw(st.sampled_from([1, 4])) * MIB
    kind = draw(st.sampled_from(["native", "linear", "striped"]))
    n = 1 if kind == "native" else draw(st.integers(1, 3))
    start, pvs = MIB, []
    for i in range(n):
        start += draw(st.integers(0, 3)) * MIB
        size = MIB + draw(st.integers(2, 12)) * extent + draw(st.integers(0, 3)) * 512
        pvs.append(Partition(start, size, f"/dev/sdc{i + 1}", disk="sdc"))
        start = -(-(start + size) // MIB) * MIB
    if kind == "native":
        volume = pvs[0]
    elif kind == "linear":
        volume = LinearVolume(tuple(pvs), extent_size_bytes=extent, name=draw(st.sampled_from(["", "lv", "x.y"])))
    else:
        volume = StripedVolume(tuple(pvs), extent_size_bytes=extent, name="striped",
                               stripe_size_bytes=draw(st.sampled_from([64, 256, 1024])) * 1024)
    # xfs needs 304 MiB; btrfs takes only 4 KiB blocks (its -b is the size, not the block)
    fs_kind = draw(st.sampled_from([k for k in FILE_SYSTEM_KINDS if k not in ("xfs", "btrfs")]))
    mount = draw(st.sampled_from([(), ("noatime",), ("data=writeback", "commit=10")] if fs_kind in ("ext3", "ext4")
                                 else [(), ("noatime",)]))
    mkfs = draw(st.sampled_from([(), ("-b", "1024")] if fs_kind.startswith("ext") else [()]))
    file_system = FileSystemNode(volume, kind=fs_kind, mkfs_options=mkfs, mount_options=mount)
    return Stack(file_system, (PresetDrive(draw(st.sampled_from(["wd800bd", "hp97560"])), "sdc"),),
                 draw(st.sampled_from(["", "a stack"])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks())
def test_any_valid_stack_round_trips_and_the_model_and_the_plan_agree_on_its_sizes(stack):
    assert Stack.from_json(stack.to_json()) == stack
    plan = L.build_plan(stack, backing="/dev/vdc", name_token="t")
    # provisioning: one loop device over each partition's bytes; the model: the same partitions
    assert [(r.offset_bytes, r.size_bytes) for r in plan.regions] == [
        (p.start_bytes, p.size_bytes) for _, p in stack.partitions()]
    placed = VolumeOnDisk(load_preset("wd800bd"), stack.volume)
    assert plan.fs_size_bytes == placed.size_bytes == stack.volume.size_bytes
    assert L.backing_bytes_required(stack) >= max(p.end_bytes for _, p in stack.partitions())
    lvcreate = [s.argv for s in plan.steps if s.argv[:1] == ("lvcreate",)]
    if isinstance(stack.volume, Partition):
        assert lvcreate == []
    else:
        extents = int(lvcreate[0][lvcreate[0].index("-l") + 1])
        assert extents * stack.volume.extent_size_bytes == stack.volume.size_bytes
    # every kind is modelled: the options the plan uses set the model's parameters
    assert stack.file_system.parameters.block_size_bytes == (1024 if "-b" in stack.file_system.mkfs_options
                                                             else 4096)


# ------------------------------------------------------------------ the same behaviour as before

def _flat(tree, prefix=""):
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = float(value)
    return out


VARIANTS = {
    "default": (FileSystem(), PageCache(), LvmMapping()),
    "mapped": (FileSystem(), PageCache(), LvmMapping(md_mapping_s=2e-4, fb_mapping_s=3e-5, request_mapping_s=1e-5)),
    "ext2_small_cache": (FileSystem(kind="ext2"), PageCache(size_bytes=64 * MIB), LvmMapping(md_mapping_s=1e-4)),
    "pipeline_paper": (FileSystem(overlapped_writeback=True, file_data_rate_bytes_per_s=2.5e7,
                                  cpu_per_file_operation_s=3e-5),
                       PageCache(size_bytes=1.5 * 2**30), LvmMapping(md_mapping_s=3e-4, fb_mapping_s=2e-5)),
    "journal_1k": (FileSystem(journal_mode="journal", block_size_bytes=1024, journal_offset_fraction=0.5),
                   PageCache(), LvmMapping(fb_mapping_s=1e-5)),
}


@pytest.mark.slow
def test_predict_on_the_paper_stacks_equals_the_predictions_of_before():
    golden = json.loads((GOLDEN / "predict_before_stack.json").read_text())["cases"]
    counts = {t: expected_counts(postmark_preset(t)) for t in ("test1", "test2", "test3")}
    checked = 0
    for case in golden:
        if case["layout"] not in PAPER_STACKS:
            continue
        fs, cache, mapping = VARIANTS[case["variant"]]
        p = predict(paper_stack(case["layout"], filesystem=fs), counts[case["test"]], cache, mapping)
        got = _flat({"read": p.read_throughput_bytes_per_s, "write": p.write_throughput_bytes_per_s,
                     "elapsed_s": p.elapsed_s, "terms": p.terms, "lvm_parts": p.lvm_parts, "dst_parts": p.dst_parts,
                     "term_parts": p.term_parts, "io_counts": p.io_counts, "details": p.details})
        want = _flat(case["prediction"])
        assert got.keys() == want.keys()
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-300), (case["test"], case["layout"], key)
        checked += 1
    assert checked == 45


def test_a_striped_volume_and_a_gap_predict_as_before(disk):
    golden = {c["layout"]: c["prediction"]
              for c in json.loads((GOLDEN / "predict_before_stack.json").read_text())["cases"]}
    counts = expected_counts(postmark_preset("test1"))
    cap = disk.capacity_bytes
    striped = StripedVolume((Partition(cap - 20 * GB, 10 * GB, "/dev/sda3"), Partition(cap - 10 * GB, 10 * GB,
                                                                                      "/dev/sda4")),
                            stripe_size_bytes=64 * 1024)
    for name, stack, mapping in (
            ("striped2", stack_on(disk, striped), LvmMapping(md_mapping_s=1e-4, fb_mapping_s=1e-5)),
            ("lvm2_gap30", paper_stack("lvm2", pv_gap_bytes=30 * GB), LvmMapping(md_mapping_s=1e-4))):
        p = predict(stack, counts, PageCache(), mapping)
        assert p.elapsed_s == pytest.approx(golden[name]["elapsed_s"], rel=1e-12)
        assert p.terms["T_LVM_MO"] == pytest.approx(golden[name]["terms"]["T_LVM_MO"], rel=1e-12)


def test_the_volume_layer_answers_as_the_functions_of_before(disk):
    golden = json.loads((GOLDEN / "predict_before_stack.json").read_text())["volume_api"]
    for name in PAPER_STACKS:
        placed = VolumeOnDisk(disk, paper_stack(name).volume)
        want = golden[name]
        assert placed.size_bytes == want["size_bytes"]
        random = placed.access_time_s([4096.0, 65536.0]).as_dict()
        write = placed.access_time_s(8192, logical_start_bytes=10**9, logical_size_bytes=3 * 10**9,
                                     distance_scale=0.25, is_write=True).as_dict()
        for key in random:
            assert random[key] == pytest.approx(want["random"][key], rel=1e-12)
            assert write[key] == pytest.approx(want["write_region"][key], rel=1e-12)
        size = placed.size_bytes
        cross = placed.region(0, 100 * MIB).seek_time_to_s(placed.region(size - 100 * MIB, 100 * MIB))
        assert cross == pytest.approx(want["cross"], rel=1e-12)
        assert placed.region().media_rate_bytes_per_s == pytest.approx(want["media_rate"], rel=1e-12)
        assert placed.region(10**9, 2 * 10**9).media_rate_bytes_per_s == pytest.approx(want["media_rate_part"],
                                                                                       rel=1e-12)


def _steps(plan) -> list:
    """A plan's steps as words (a reference read back as ``$NAME``)."""
    def word(w):
        return words_of(w) if isinstance(w, (Ref, Concat)) else w

    return [{"description": s.description, "argv": [word(w) for w in s.argv],
             "undo": None if s.undo is None else [word(w) for w in s.undo], "capture": s.capture,
             "value": s.value, "expect": s.expect,
             "resource": None if s.resource is None else [s.resource[0], [[k, word(v)] for k, v in s.resource[1]]]}
            for s in plan.steps]


def _as_argv(step: dict) -> dict:
    """A golden step of the plans of before (shell text) as the argument vector it ran: the same words;
    the shell checks as an argv and the output it must print; the scratch mount with nosuid,nodev."""
    command, value, expect = step["command"], None, None
    check = re.match(r'^test "\$\((.*?)(?: \| tr -d " ")?\)" = (\d+) \|\| ', command)
    if check:
        argv, expect = shlex.split(check.group(1)), check.group(2)
    elif command.startswith("mkdir -m 700 "):
        argv = shlex.split(command.split(" && ")[0])
        value = argv[-1]
    else:
        argv = shlex.split(command)
    if argv[0] == "mount":
        options = argv[argv.index("-o") + 1].split(",") if "-o" in argv else []
        argv = [*argv[:3], "-o", ",".join([*options, "nosuid", "nodev"]), *argv[-2:]]
    resource = step["resource"]
    if resource is None and step["description"] == "mount point":   # mktemp -d: recorded once it printed its path
        resource = ["dir", [["path", "$" + step["capture"]]]]
    undo = None if step["undo"] is None else shlex.split(step["undo"])
    if value is not None:   # the folder's undo names it, as its record does, rather than the variable
        undo = [value if w == "$" + step["capture"] else w for w in undo]
    return {"description": step["description"], "argv": argv, "undo": undo, "capture": step["capture"],
            "value": value, "expect": expect, "resource": resource}


def test_plans_from_the_paper_stacks_equal_the_plans_of_before():
    golden = json.loads((GOLDEN / "plans_before_stack.json").read_text())
    refused = []
    for case in golden:
        options = dict(case["options"])
        backing = options.pop("backing", "/dev/vda")
        fs = {key: options.pop(old) for old, key in (("fs_type", "kind"), ("mount_options", "mount_options"),
                                                      ("mkfs_options", "mkfs_options")) if old in options}
        if fs.get("kind") == "ext2" and any(o.startswith("commit=") for o in fs.get("mount_options", ())):
            # ext2 has no journal and so no commit= (#15): the plans of before took it, the stack now refuses it
            with pytest.raises(ValueError, match=r"^mount_options: commit=10 is not a mount option of ext2$"):
                paper_stack(case["layout"], fs_size_bytes=case["fs_size_bytes"], **fs)
            refused.append(case["layout"])
            continue
        stack = paper_stack(case["layout"], fs_size_bytes=case["fs_size_bytes"], **fs)
        plan = L.build_plan(stack, backing=backing, name_token="abc123", **options)
        assert _steps(plan) == [_as_argv(step) for step in case["steps"]], (case["layout"], case["options"])
        assert [[r.offset_bytes, r.size_bytes] for r in plan.regions] == case["regions"]
        assert (plan.device_expr, plan.vg_name, plan.lv_name, plan.fs_type, list(plan.mount_options)) == (
            case["device_expr"], case["vg_name"], case["lv_name"], case["fs_type"], case["mount_options"])
        assert L.backing_bytes_required(stack) == case["backing_bytes_required"]
        if case["script"] is not None:  # kept for the plans of default options: the same steps in the same order
            script = plan.render_script("echo body")
            old = [ln for ln in case["script"].splitlines() if ln.startswith("echo 'diskmodel: step ")]
            assert [ln for ln in script.splitlines() if ln.startswith("echo 'diskmodel: step ")] == old
    assert len(golden) == 51 and sum(case["script"] is not None for case in golden) == 12
    assert sorted(set(refused)) == ["lvm1", "lvm2", "native"] and len(refused) == 12


# ------------------------------------------------------------------ bad stacks

def _document(volume: dict, **file_system) -> dict:
    return {"disks": [{"kind": "preset", "preset": "wd800bd"}],
            "file_system": {"kind": "ext3", "volume": volume, **file_system}}


PARTITION = {"kind": "partition", "start_bytes": MIB, "size_bytes": 64 * MIB}


@pytest.mark.parametrize("document, message", [
    (_document({"kind": "raid7"}), r"^file_system.volume: unknown kind 'raid7' \(known: "),
    (_document({**PARTITION, "sise_bytes": 3}), r"^file_system.volume.sise_bytes: unknown field \(kind partition has the fields start_bytes, size_bytes, "
     r"name, disk\)$"),
    (_document({"kind": "partition", "start_bytes": MIB}),
     r"^file_system.volume.size_bytes: required field of kind partition is missing$"),
    (_document({**PARTITION, "size_bytes": "big"}),
     r"^file_system.volume.size_bytes: must be a whole number \(got 'big'\)$"),
    (_document({"kind": "lvm_linear", "physical_volumes": [PARTITION, {**PARTITION, "start_bytes": -1}]}),
     r"^file_system.volume.physical_volumes\[1\] \(partition\): start_bytes must be >= 0"),
    (_document({"kind": "lvm_linear", "physical_volumes": [PARTITION], "segments": [{"logical_start_extent": 0}]}),
     r"^file_system.volume.segments\[0\].extent_count: required field of Segment is missing$"),
    (_document({"kind": "lvm_striped", "physical_volumes": [PARTITION], "stripe_size_bytes": 3 * MIB}),
     r"^file_system.volume \(lvm_striped\): stripe_size_bytes \(3145728\) must divide extent_size_bytes"),
    (_document({**PARTITION, "disk": "sdz"}),
     r"^file_system.volume \(partition\): disk 'sdz' is not one of the stack's disks \(sda\)"),
    (_document(PARTITION, parameters={"commit_interval_s": 0}),
     r"^file_system.parameters \(FileSystem\): commit_interval_s must be > 0"),
    (_document(PARTITION, parameters={"commit_interval_s": 5}, mount_options=["commit=10"]),
     r"^file_system \(ext3\): mount_options set commit_interval_s to 10.0, which contradicts"),
    (_document(PARTITION, mount_options=["data=sometimes"]),
     r"^file_system \(ext3\): mount_options: data=sometimes : data takes journal, ordered or writeback$"),
    (_document(PARTITION, mount_options="noatime"), r"^file_system.mount_options: must be a list \(got 'noatime'\)$"),
    ({**_document(PARTITION), "file_system": {"kind": "ntfs", "volume": PARTITION}},
     r"^file_system: unknown kind 'ntfs'"),
    ({**_document(PARTITION), "file_system": {"kind": "xfs", "volume": PARTITION, "mount_options": ["data=journal"]}},
     r"^file_system \(xfs\): mount_options: data=journal is not a mount option of xfs"),
    ({**_document(PARTITION), "disks": [{"kind": "preset", "preset": "wd800bd"}] * 2},
     r"^disks\[1\] \(preset\): name 'sda' is taken by disks\[0\]"),
    ({**_document(PARTITION), "disks": [{"kind": "preset", "preset": "st-506"}]},
     r"^disks\[0\] \(preset\): preset must be one of"),
    ({**_document(PARTITION), "format": "diskmodel.postmark"}, r"^format must be 'diskmodel.stack'"),
    ({**_document(PARTITION), "format_version": 2}, r"^format_version 2 is not one this version reads"),
    ({**_document(PARTITION), "stack": 1}, r"^unknown key 'stack'"),
    ({"disks": [], "file_system": PARTITION}, r"^file_system: must be a file system"),
])
def test_bad_stacks_are_refused_in_one_line_naming_the_node_and_the_field(document, message):
    with pytest.raises(ValueError, match=message) as info:
        Stack.from_json(json.dumps(document))
    assert "\n" not in str(info.value)


def test_what_the_model_cannot_predict_or_write_is_refused_naming_it(disk):
    two = LinearVolume((Partition(0, GB), Partition(0, GB, disk="sdb")))
    with pytest.raises(ValueError, match=r"^lvm_mapping: the timed I/O path charges the requests device-mapper "
                                         r"sends, not fitted mapping costs; leave lvm_mapping out$"):
        predict(stack_on(disk, two), lvm_mapping=LvmMapping(md_mapping_s=1e-4))
    with pytest.raises(ValueError, match="stack must be a Stack"):
        predict(disk)
    with pytest.raises(ValueError, match="disk sda: an in-memory Disk .* has no JSON form"):
        paper_stack("native", disk=disk).to_json()
    with pytest.raises(ValueError, match="disk sda: the calibration cal.json is a file the model does not read"):
        predict(paper_stack("native", 80 * GB, disk=FileDrive("calibration", "cal.json")))
    with pytest.raises(ValueError, match="disk sda: the calibration cal.json is a file"):
        paper_stack("native", disk=FileDrive("calibration", "cal.json"))
    with pytest.raises(ValueError, match="give capacity_bytes .* or fs_size_bytes"):
        paper_stack("native", 80 * GB, fs_size_bytes=64 * MIB)
    with pytest.raises(ValueError, match="parameters.kind 'ext2' differs from kind 'ext3'"):
        FileSystemNode(Partition(MIB, MIB), kind="ext3", parameters=FileSystem(kind="ext2"))


def test_the_options_of_a_built_file_system_set_its_model_parameters():
    node = FileSystemNode(Partition(MIB, 64 * MIB), mkfs_options=("-b", "2048", "-I128"),
                          mount_options=("data=writeback", "commit=15", "noatime"))
    p = node.parameters
    assert (p.block_size_bytes, p.inode_size_bytes, p.journal_mode, p.commit_interval_s, p.atime_updates) == (
        2048, 128, "writeback", 15.0, False)


# ------------------------------------------------------------------ stack files

def test_stack_files_and_the_disks_they_name(tmp_path, disk):
    path = tmp_path / "lvm2.json"
    path.write_text(paper_stack("lvm2").to_json())
    assert stack_files.read_stack(path) == paper_stack("lvm2")
    resolved = stack_files.resolve_drives(paper_stack("lvm2"))
    assert resolved == paper_stack("lvm2")  # a preset is no file
    bad = paper_stack("native", 80 * GB, disk=FileDrive("disksim", "no_such_drive"))
    with pytest.raises(ValueError, match=r"^disks\[0\] \(sda\): .*no_such_drive: no such DiskSim drive folder"):
        stack_files.resolve_drives(bad, relative_to=tmp_path)
    # a bundled DiskSim drive by its name, as --disk takes it (refused as "no such folder" before)
    named = stack_files.resolve_drives(paper_stack("native", fs_size_bytes=256 * MIB,
                                                   disk=FileDrive("disksim", "hp_c2247a")), relative_to=tmp_path)
    assert named.drive("sda").model_disk().capacity_bytes == 1_091_690_496
    for text, message in (("", "is empty"), ("{", "not valid JSON"), ("[]", "a stack must be one JSON object")):
        path.write_text(text)
        with pytest.raises(ValueError, match=f"^{path}: .*{message}|^{path} {message}"):
            stack_files.read_stack(path)
    with pytest.raises(ValueError, match="no such file"):
        stack_files.read_stack(tmp_path / "nope.json")
    with pytest.raises(ValueError, match="is a directory"):
        stack_files.read_stack(tmp_path)
    assert isinstance(InMemoryDrive(disk).model_disk(), type(disk))


def _cli(*args):
    return subprocess.run([DISKMODEL, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_predict_with_a_stack_file_equals_predict_with_the_layout(tmp_path):
    path = tmp_path / "lvm1.json"
    path.write_text(paper_stack("lvm1").to_json())
    by_file = _cli("predict", "--stack", str(path), "--workload", "test2", "--md-mapping-s", "1e-4", "--json")
    by_name = _cli("predict", "--layout", "lvm1", "--workload", "test2", "--md-mapping-s", "1e-4", "--json")
    assert by_file.returncode == 0 and by_name.returncode == 0, by_file.stderr + by_name.stderr
    assert json.loads(by_file.stdout) == json.loads(by_name.stdout)
    assert json.loads(by_file.stdout)["stack"] == "lvm1"
    refused = _cli("predict", "--stack", str(path), "--fs", "ext2")
    assert refused.returncode == 2 and f"--stack {path}: --fs does not apply with a stack file" in refused.stderr
    path.write_text(json.dumps(_document({**PARTITION, "size_bytes": 0})))
    refused = _cli("predict", "--stack", str(path))
    assert refused.returncode == 2
    assert refused.stderr.strip() == (f"diskmodel: error: --stack {path}: file_system.volume (partition): "
                                      "size_bytes must be >= 1 (got 0)")


@pytest.mark.slow
def test_postmark_with_a_bad_stack_file_is_refused_before_anything_is_built(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_document({**PARTITION, "start_bytes": 0})))
    res = _cli("postmark", "--stack", str(path), "--workload", "test1", "--scratch", str(tmp_path / "s.img"))
    assert res.returncode == 2 and not (tmp_path / "s.img").exists()
    assert res.stderr.strip() == (f"diskmodel: error: --stack {path}: file_system.volume (partition): start_bytes "
                                  "must be >= 1048576: the first MiB of the scratch stays unused, as before a first "
                                  "partition (got 0)")
    res = _cli("postmark", "--stack", str(path), "--layout", "native", "--workload", "test1", "--vm")
    assert res.returncode == 2 and "not allowed with argument" in res.stderr
    res = _cli("postmark", "--stack", str(path), "--size", "64M", "--workload", "test1", "--vm")
    assert res.returncode == 2 and f"--stack {path}: --size does not apply with a stack file" in res.stderr


def test_postmark_refuses_an_nfs_stack_in_one_line_before_anything_is_built(tmp_path, capsys):
    """An NFS mount is predicted (tests/test_network_model.py), not built on a scratch: one line, nothing made."""
    from diskmodel.calibrate import cli
    from diskmodel.model.stacks.network import Network, NfsMount

    export = FileSystemNode(Partition(MIB, GB, "/dev/sdb1", "srv"), kind="xfs")
    path = tmp_path / "nfs.json"
    path.write_text(Stack(NfsMount(export, Network(12.5e6, 2e-3)), (PresetDrive("wd800bd", "srv"),)).to_json())
    scratch = tmp_path / "s.img"
    assert cli.main(["postmark", "--stack", str(path), "--workload", "test1", "--scratch", str(scratch)]) == 2
    assert capsys.readouterr().err == (f"diskmodel: error: --stack {path}: file_system (nfs): an NFS mount has no "
                                       "volume of its own (the server's file system and volume are "
                                       "file_system.export)\n")
    assert not scratch.exists()
    # bench names the file too
    assert cli.main(["bench", "--stack", str(path), "--workload", "randread_4k"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"diskmodel: error: --stack {path}: file_system (nfs): ") and err.count("\n") == 1


@pytest.mark.slow
def test_predict_takes_a_stack_file_of_block_layers(tmp_path):
    """RAID 1 over two different presets under a thin volume, from JSON, through `diskmodel predict`."""
    from diskmodel.model.predict import predict_block
    from diskmodel.model.stacks.raid import mirror
    from diskmodel.model.stacks.thin import ThinVolume
    from diskmodel.model.predictions.workload import fio_jobs

    members = (Partition(MIB, GB, "/dev/sda1", "sda"), Partition(MIB, GB, "/dev/sdb1", "sdb"))
    stack = Stack(FileSystemNode(ThinVolume(mirror(members), 512 * MIB, 2 * GB), kind="ext4"),
                  (PresetDrive("wd800bd", "sda"), PresetDrive("hp97560", "sdb")), "thin on raid1")
    path = tmp_path / "layers.json"
    path.write_text(stack.to_json())
    assert stack_files.read_stack(path) == stack
    res = _cli("predict", "--stack", str(path), "--workload", "randwrite_4k", "--json")
    assert res.returncode == 0, res.stderr
    expected = predict_block(stack.volume, fio_jobs()["randwrite_4k"], stack.block_env())
    assert json.loads(res.stdout)["throughput_bytes_per_s"] == pytest.approx(expected.throughput_bytes_per_s)
    # PostMark on the thin volume over the mirror: timed on the I/O path, the mirror writing each drive alike
    res = _cli("predict", "--stack", str(path), "--workload", "test1", "--files", "100", "--transactions", "200",
               "--json")
    assert res.returncode == 0, res.stderr
    devices = json.loads(res.stdout)["devices"]
    assert set(devices) == {"sda", "sdb"}
    assert devices["sda"]["write_bytes"] == devices["sdb"]["write_bytes"] > 0


def test_a_partition_past_its_disks_end_or_over_another_is_refused_whatever_the_workload():
    # the kernel builds neither: a partition table's entries lie inside the disk and apart, and mdadm refuses
    # a device given twice. Before, only the paper's equations checked the end, and nothing the overlap.
    from diskmodel.model.stacks.raid import RaidArray

    capacity = load_preset("wd800bd").capacity_bytes
    past = Stack(FileSystemNode(kind="ext4", volume=Partition(0, 90 * 10**9, "/dev/sda1", "sda")))
    for workload in ("randread_4k", "fio:rw=read,bs=4k,size=4M", "test1"):
        with pytest.raises(ValueError, match=rf"^file_system.volume \(partition\): bytes 0..90000000000 end past the "
                                             rf"{capacity} bytes of disk 'sda'"):
            predict(past, workload)
    twice = FileSystemNode(kind="ext4", volume=RaidArray("raid0", (Partition(MIB, GB, "/dev/sda1", "sda"),) * 2))
    with pytest.raises(ValueError, match=r"members\[1\] \(partition\): bytes 1048576..1001048576 of disk 'sda' "
                                         r"overlap file_system.volume.members\[0\]'s"):
        Stack(twice)
    # a drive read from a file is checked once it is a Disk in memory
    small = InMemoryDrive(load_preset("hp_c2247a"), name="sda")
    with pytest.raises(ValueError, match="end past the 1091690496 bytes"):
        Stack(FileSystemNode(kind="ext4", volume=Partition(0, 2 * GB, "/dev/sda1", "sda")), (small,)).check_disk_capacity()
    Stack(FileSystemNode(kind="ext4", volume=Partition(0, capacity, "/dev/sda1", "sda"))).check_disk_capacity()
    # a stack built only to be measured (its disk a scratch file of any size) is not refused for its model's disk
    Stack(FileSystemNode(kind="ext4", volume=Partition(0, 200 * GB, "/dev/sda1", "sda")))


def test_a_file_system_on_a_file_system_names_the_kinds_not_the_objects():
    # the refusal showed the node's Python repr: "got FileSystemNode(vol..., mount_options=())"
    inner = FileSystemNode(kind="ext4", volume=Partition(MIB, GB, "/dev/sda1", "sda"))
    with pytest.raises(ValueError, match=r"^volume must be a volume node, e.g. a partition or lvm_linear \(got kind "
                                         r"ext4: a file system sits on a block device"):
        FileSystemNode(kind="ext4", volume=inner)
