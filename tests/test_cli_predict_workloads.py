"""`diskmodel predict --workload NAME:KEY=VALUE,...`: every workload the I/O path names, reachable from the
command line on any stack, printed with its definition; bad input one line naming the flag and the value.

References independent of the code under test: Python's own tarfile module (the archive a tar of the tree
writes), the bytes a zero-filled or sparse image and an fio job move by their definition, and the volume's
size in the stack file.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from _helpers import assert_one_error_line, tar_archive_bytes
from diskmodel.calibrate.cli import main

GOLDEN_CALIBRATION = Path(__file__).parent / "golden" / "calibration_wd800bd_simulated.json"


def _raid1(tmp_path, size_bytes: int = 1_000_000_000) -> str:
    """ext4 on RAID 1 over two partitions of two WD800BDs: a stack beyond the paper's equations."""
    part = {"kind": "partition", "start_bytes": 1 << 20, "size_bytes": size_bytes}
    stack = {"format": "diskmodel.stack", "format_version": 1,
             "disks": [{"kind": "preset", "preset": "wd800bd", "name": "sda"},
                       {"kind": "preset", "preset": "wd800bd", "name": "sdb"}],
             "file_system": {"kind": "ext4", "volume": {"kind": "raid1", "members": [
                 {**part, "disk": "sda"}, {**part, "disk": "sdb"}]}}}
    path = tmp_path / "raid1.json"
    path.write_text(json.dumps(stack))
    return str(path)


def _json(capsys, *argv) -> dict:
    assert main(["predict", "--json", *argv]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_tar_of_a_tree_reads_the_files_and_writes_the_archive_tarfile_makes(tmp_path, capsys):
    out = _json(capsys, "--stack", _raid1(tmp_path), "--workload", "tar:files=300,file_bytes=16k")
    assert out["write_bytes"] == tar_archive_bytes(300, 16384)
    assert out["read_bytes"] == 300 * 16384
    assert "300 files of 16384 B" in out["definition"] and out["elapsed_s"] > 0
    # both mirrors received the archive's blocks: RAID 1 writes each block to every member
    devices = out["devices"]
    assert devices["sda"]["write_bytes"] >= out["write_bytes"] and devices["sdb"]["write_bytes"] >= out["write_bytes"]


@pytest.mark.parametrize("spec, read_bytes, write_bytes", [
    ("image:size=8M,kind=zero", 0, 8 << 20),
    ("image:size=8M,kind=sparse", 0, 0),
    ("fio:rw=write,bs=64k,size=4M", 0, 4 << 20),
    ("fio:rw=randread,bs=4k,size=2M,direct=1", 2 << 20, None),  # its file is laid out first: writes too
])
def test_a_named_workload_moves_what_its_definition_says(tmp_path, capsys, spec, read_bytes, write_bytes):
    out = _json(capsys, "--stack", _raid1(tmp_path), "--workload", spec)
    assert out["read_bytes"] == read_bytes
    if write_bytes is not None:
        assert out["write_bytes"] == write_bytes
    assert out["workload"] == spec and out["definition"]


@pytest.mark.parametrize("spec, fragment", [
    ("bonnie:size=4M,files=64,seeks=200", "bonnie++ write+rewrite+read+seeks"),
    ("postmark:files=200,transactions=500,low=1000,high=2000", "200 files of 1000..2000 B"),
    ("metadata:op=create,files=200,file_bytes=4k", "create of 200 files of 4096 B"),
    ("copy:size=4M", "cp of one file of 4194304 B"),
    ("dd:size=4M,step=write", "dd"),
])
def test_every_named_workload_is_reachable_and_printed_with_its_definition(capsys, spec, fragment):
    """On the paper's native layout (the default stack), in the table: its first line names the workload and
    says what it does."""
    assert main(["predict", "--workload", spec]) == 0, capsys.readouterr().err
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"native, {spec}: ") and fragment in first, first


def test_a_named_workload_on_a_calibrated_drive_has_an_interval(capsys):
    out = _json(capsys, "--calibration", str(GOLDEN_CALIBRATION), "--complete-from", "wd800bd",
                "--workload", "tar:files=100,file_bytes=16k")
    lower, upper = out["intervals_95"]["elapsed_s"]
    assert lower < out["elapsed_s"] < upper


@pytest.mark.parametrize("argv, fragments", [
    (["--workload", "test4"], ("--workload test4: not one of test1", "bonnie, tar, image")),
    (["--workload", "bonnie:sizee=3"], ("--workload bonnie:sizee=3: key 'sizee' is not one of",)),
    (["--workload", "tar:files=a"], ("--workload tar:files=a: files = 'a' is not a count (a whole number >= 0",)),
    (["--workload", "fio:size=abc"], ("--workload fio:size=abc: size = 'abc' is not a size (a whole number of bytes",)),
    (["--workload", "fio:rw=foo"], ("--workload fio:rw=foo: rw = 'foo' must be one of read, write, randread",)),
    (["--workload", "postmark:files=0"], ("--workload postmark:files=0: number_of_files must be >= 1",)),
    (["--workload", "postmark:files=100", "--transactions", "5"],
     ("--transactions does not apply to --workload postmark:files=100", "postmark:files=500,transactions=2000")),
    (["--workload", "image:size=8M", "--page-cache-bytes", "1000"],
     ("--page-cache-bytes does not apply to --workload image:size=8M",)),
    (["--workload", "bonnie:size=4M", "--fitted"], ("--fitted does not apply to --workload bonnie:size=4M",)),
    (["--workload", "fio:rw=read,bs=4k,size=16M,size=32M"],
     ("--workload fio:rw=read,bs=4k,size=16M,size=32M: key 'size' is given twice ('16M' and '32M')",)),
])
def test_bad_input_to_a_named_workload_is_one_line_naming_the_flag_and_the_value(capsys, argv, fragments):
    assert main(["predict", *argv]) == 2
    assert_one_error_line(capsys.readouterr().err, *fragments)


@pytest.mark.parametrize("spec, need", [("fio:rw=write,bs=1M,size=1200M", 1200 << 20),
                                        ("image:size=1200M,kind=zero", 1200 << 20)])
def test_a_workload_larger_than_the_stack_is_one_line_naming_both_sizes(tmp_path, capsys, spec, need):
    assert main(["predict", "--stack", _raid1(tmp_path), "--workload", spec]) == 2
    assert_one_error_line(capsys.readouterr().err, f"--stack {tmp_path / 'raid1.json'}", spec,
                          f"holds at least {need} bytes", "give a smaller workload",
                          # the mirror's: its members' 10^9 bytes after md's 1 MiB data offset, in whole 64 KiB
                          "more than the 998899712 bytes")
    # a sparse image of that size allocates nothing: it fits
    assert main(["predict", "--stack", _raid1(tmp_path), "--workload", "image:size=1200M,kind=sparse"]) == 0


def test_a_postmark_larger_than_the_stack_is_refused_before_its_operations_are_made(tmp_path, capsys):
    # 10^8 files of PostMark's default 500-10,000 bytes: about 5.25e11 bytes, on a 10^9-byte mirror; making
    # its operations first took minutes and gigabytes (the run was stopped after 64 s and 13 GB)
    start = time.perf_counter()
    assert main(["predict", "--stack", _raid1(tmp_path), "--workload", "postmark:files=100000000,transactions=10"]) == 2
    assert time.perf_counter() - start < 10
    assert_one_error_line(capsys.readouterr().err, "PostMark's 100000000 files of 500-10000 bytes",
                          "hold about 525000000000 bytes at once", "more than the 998899712 bytes")


def test_iopath_prints_si_megabytes(capsys):
    """The requests' table says MB and means 10^6 bytes, as every other output (its JSON holds the bytes)."""
    assert main(["iopath", "--stack", "native", "--workload", "copy:size=8M", "--json"]) == 0
    devices = json.loads(capsys.readouterr().out)["devices"]
    assert main(["iopath", "--stack", "native", "--workload", "copy:size=8M"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert "read MB" in header and "MiB" not in header and "MB = 10^6 bytes" in header
    for row in rows:
        name, reads, read_mb, writes, write_mb = row.split()[:5]
        assert float(read_mb) == pytest.approx(devices[name]["read_bytes"] / 1e6, abs=0.006)
        assert float(write_mb) == pytest.approx(devices[name]["write_bytes"] / 1e6, abs=0.006)


def test_a_postmark_test_says_which_model_answers_it(tmp_path, capsys):
    # one disk: the paper's equations; a mirror: the I/O path. Their times are not comparable (about 65 s and
    # 31 s for test1 on one WD800BD and on a mirror of two), so each says which it is and how to get the other
    assert main(["predict", "--layout", "native", "--workload", "test2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("model: the paper's equations") and "--workload postmark:test2" in out[1]
    assert main(["predict", "--stack", _raid1(tmp_path), "--workload", "test2", "--files", "50",
                 "--transactions", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"].startswith("model: the I/O path")


def test_a_buffered_loop_files_latency_and_iops_are_explained(tmp_path, capsys):
    # at queue depth 1 a buffered loop device acknowledges writes from its page cache: 11 us each, while the run,
    # write-back and the end's flush counted, gives 6,600 IOPS (latency times IOPS 0.07); that was printed bare
    stack = {"format": "diskmodel.stack", "format_version": 1, "name": "vm image",
             "disks": [{"kind": "preset", "preset": "wd800bd", "name": "sda"}],
             "file_system": {"kind": "ext4", "volume": {
                 "kind": "loop_file", "name": "/dev/loop0", "image_size_bytes": 2_000_000_000, "allocation": "sparse",
                 "host_file_system": "ext4", "host": {"kind": "partition", "name": "/dev/sda1", "disk": "sda",
                                                      "start_bytes": 1048576, "size_bytes": 4_000_000_000}}}}
    (tmp_path / "loop.json").write_text(json.dumps(stack))
    assert main(["predict", "--stack", str(tmp_path / "loop.json"), "--workload", "randwrite_4k", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    note = [n for n in out["assumptions"] if n.startswith("latency and IOPS")]
    assert note and f"waits {out['latency_s'] * out['iops'] * 100:.0f} % of the run" in note[0]
    assert main(["predict", "--workload", "randwrite_4k", "--json"]) == 0  # one disk: the job waits all along
    assert not [n for n in json.loads(capsys.readouterr().out)["assumptions"] if n.startswith("latency and IOPS")]


def test_a_mirror_says_how_md_chooses_the_member_a_read_goes_to(tmp_path, capsys):
    # at queue depth 1 every random read goes to the first member (read_balance: min_pending 0), so the
    # mirror reads as one drive; that showed as a second drive 0 % busy with nothing said
    assert main(["predict", "--stack", _raid1(tmp_path), "--workload", "randread_4k", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parts_s"]["busy_s.sdb"] == 0.0
    assert any(a.startswith("mirror reads: device: md's read_balance") for a in out["assumptions"]), out["assumptions"]


def test_the_papers_own_case_shows_what_the_paper_measured(capsys):
    # the default prediction (the drive alone, 18.19 MB/s read) sat 6x from the paper's measured 3.14 MB/s with
    # nothing said; the paper's figure is Table 4's (the package's data, not the model's)
    from diskmodel.data.tables import postmark_results

    rows = postmark_results()
    read = rows[(rows["test"] == "test1") & (rows["layout_key"] == "native") & (rows["operation"] == "read")]
    assert main(["predict"]) == 0
    line = capsys.readouterr().out.splitlines()[2]
    assert line.startswith(f"the paper measured read {read['throughput_bytes_per_s'].iloc[0] / 1e6:.2f} MB/s")
    assert "--fitted" in line
    assert main(["predict", "--fitted", "--json"]) == 0
    assert not any("the paper measured" in n for n in json.loads(capsys.readouterr().out)["assumptions"])
