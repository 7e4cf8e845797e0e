"""The new workloads' file operations (model/iopath/workloads_*.py) against the programs they
describe: bonnie++'s system calls under strace, GNU tar's archive, bonnie++'s CSV line; and bad
specs as one line."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from conftest import require_tools
from diskmodel.calibrate.bench.bonnie import parse_bonnie_csv
from diskmodel.model.iopath import Kind, parse_workload
from diskmodel.model.iopath.workloads_bonnie import BonnieConfig, bonnie_argv
from _helpers import assert_one_error_line


def counts(ops, kind, size=None):
    m = ops.kind == kind
    if size is not None:
        m &= ops.size_bytes == size
    return int(m.sum())


def strace_bonnie(tmp_path, config: BonnieConfig) -> list[str]:
    out = tmp_path / "strace.txt"
    work = tmp_path / "d"
    work.mkdir()
    subprocess.run(["strace", "-f", "-qq", "-o", str(out), "-e",
                    "trace=openat,read,write,fsync,unlink,newfstatat,sync,syncfs", *bonnie_argv(config, str(work))],
                   check=True, capture_output=True, timeout=300)
    return out.read_text().splitlines()


def calls(lines, pattern) -> int:
    return sum(1 for ln in lines if re.search(pattern, ln))


@pytest.mark.integration
@pytest.mark.slow
def test_bonnie_file_phases_make_the_calls_bonnie_makes(tmp_path):
    require_tools("bonnie++", "strace")
    config = BonnieConfig(files=1024, max_bytes=20000, min_bytes=20000, directories=2, phases=(
        "create_seq", "stat_seq", "delete_seq", "create_rand", "stat_rand", "delete_rand"))
    lines = strace_bonnie(tmp_path, config)
    ops = parse_workload("bonnie:files=1024,max=20000,min=20000,dirs=2")
    assert counts(ops, Kind.CREATE) == calls(lines, r"openat\(.*O_CREAT\|O_EXCL") == 2048
    assert counts(ops, Kind.DELETE) == calls(lines, r"unlink\(\"0.*= 0$") + calls(lines, r"unlink\(\"[^0].*= 0$")
    # Each file written and read back in 8 KiB calls: 8192 + 8192 + 3616 bytes.
    for size in (8192, 3616):
        assert counts(ops, Kind.WRITE, size) == calls(lines, rf"write\(3, .*, {size}\) = {size}$")
        assert counts(ops, Kind.READ, size) == calls(lines, rf"read\([34], .*, {size}\) = {size}$")
    # bonnie++ calls sync(2), which syncs every file system; the measurement closes with syncfs(2) (sync -f)
    assert counts(ops, Kind.SYNC_ALL) == calls(lines, r"(^|\s)sync\(\)") == 4
    assert counts(ops, Kind.SYNC) == calls(lines, r"syncfs\(") + 1 == 1


@pytest.mark.integration
@pytest.mark.slow
def test_bonnie_io_phases_make_the_calls_bonnie_makes(tmp_path):
    require_tools("bonnie++", "strace")
    config = BonnieConfig(size_bytes=4 << 20, seeks=400, seekers=2, phases=("write", "rewrite", "read", "seeks"))
    lines = strace_bonnie(tmp_path, config)
    ops = parse_workload("bonnie:size=4M,seeks=400,seekers=2,phases=io")
    chunks = (4 << 20) // 8192
    # strace -f splits a call another process interrupts: a read shows its data on the line
    # "<... read resumed>", a write on the line "write(... <unfinished ...>".
    reads = calls(lines, r"( read\(\d+, |<\.\.\. read resumed>).*, 8192\) = 8192$")
    writes = calls(lines, r" write\(\d+, .*, 8192(\) = 8192| <unfinished \.\.\.>)$")
    assert counts(ops, Kind.READ, 8192) == 2 * chunks + 400 == reads
    # One seek in ten writes back, at random: bonnie++'s draws and numpy's differ by chance alone.
    assert abs(counts(ops, Kind.WRITE, 8192) - writes) <= 4 * np.sqrt(400 * 0.1 * 0.9) * 2
    assert abs(writes - (2 * chunks + 40)) <= 4 * np.sqrt(400 * 0.1 * 0.9)
    assert counts(ops, Kind.FSYNC) == calls(lines, r"fsync\(") == 1 + 3 + 2 + 1


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("files,file_bytes,dirs", [(100, 30000, 3), (37, 512, 1), (5, 0, 2), (60, 10240, 1)])
def test_tar_archive_is_as_long_as_gnu_tars(tmp_path, files, file_bytes, dirs):
    require_tools("tar")
    tree = tmp_path / "tree"
    tree.mkdir()
    for f in range(files):
        d = tree / f"d{f * dirs // files}" if dirs > 1 else tree
        d.mkdir(exist_ok=True)
        (d / f"f{f:07d}").write_bytes(bytes(file_bytes))
    subprocess.run(["tar", "-cf", str(tmp_path / "a.tar"), "-C", str(tree), "."], check=True)
    ops = parse_workload(f"tar:files={files},file_bytes={file_bytes},dirs={dirs}")
    archive = files
    written = ops.size_bytes[(ops.kind == Kind.WRITE) & (ops.file == archive)]
    assert int(written.sum()) == (tmp_path / "a.tar").stat().st_size
    assert set(written.tolist()) == {10240}
    assert int(ops.size_bytes[ops.kind == Kind.READ].sum()) == files * file_bytes
    assert counts(ops, Kind.STAT) == files


def test_images_write_every_byte_or_none():
    zero = parse_workload("image:size=10M")
    sparse = parse_workload("image:size=10M,kind=sparse")
    assert int(zero.size_bytes[zero.kind == Kind.WRITE].sum()) == 10 << 20
    assert counts(zero, Kind.FSYNC) == 1
    assert counts(sparse, Kind.WRITE) == 0 and counts(sparse, Kind.CREATE) == 1


def test_a_phase_left_out_leaves_its_files_on_the_device():
    ops = parse_workload("bonnie:size=8M,phases=read+rewrite+write+seeks")
    alone = parse_workload("bonnie:size=8M,phases=read")
    assert ops.initial_bytes.sum() == 0
    assert alone.initial_bytes.sum() == 8 << 20
    assert counts(alone, Kind.WRITE) == 0 and counts(alone, Kind.READ, 8192) == 1024


CSV = ("1.98,2.00a,vm,1,1796210331,64M,,400,2,,,51234,12,+++++,+++,,,812345,40,355.1,3,1,20000,20000,,2,"
       "1591,36,1650,11,382,3,555,19,1819,12,242,3,,20ms,30ms,,15ms,300ms,5520us,23812us,12323us,147ms,16283us,1s")


def test_bonnie_csv_gives_si_rates_and_leaves_untimed_tests_out():
    r = parse_bonnie_csv(CSV + "\n", BonnieConfig(size_bytes=64 << 20))
    assert r.rates["write"] == 51234 * 1024 and r.rates["read"] == 812345 * 1024
    assert r.rates["rewrite"] is None  # bonnie++ printed +++++: under 500 ms
    assert r.rates["seeks"] == 355.1 and r.rates["delete_rand"] == 242
    assert r.latencies_s["seeks"] == pytest.approx(0.3) and r.latencies_s["delete_rand"] == 1.0
    assert r.latencies_s["stat_seq"] == pytest.approx(23812e-6)


@pytest.mark.parametrize("text,fragment", [
    ("1.98,2.00a,vm", "no CSV line"),
    (CSV.replace("355.1", "fast"), "field 19 (seeks)"),
    (CSV.replace(",1s", ",1h"), "latency '1h'"),
])
def test_a_bad_bonnie_csv_line_is_one_line_naming_the_field(text, fragment):
    with pytest.raises(ValueError) as exc:
        parse_bonnie_csv(text, BonnieConfig(size_bytes=64 << 20))
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("spec,fragment", [
    ("bonnie:size=64M,chunk=3000", "chunk = 3000"),
    ("bonnie:size=64M,phases=read+spin", "phases = 'read+spin'"),
    ("bonnie:colour=1", "key 'colour'"),
    ("bonnie:min=10,max=5", "min = 10"),
    ("tar:files=0", "files = 0"),
    ("tar:size=1", "key 'size'"),
    ("image:size=1M,kind=thick", "kind = 'thick'"),
])
def test_a_bad_spec_is_one_line_naming_the_key_and_value(spec, fragment):
    with pytest.raises(ValueError) as exc:
        parse_workload(spec)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_bonnie_cannot_be_asked_to_run_part_of_a_group():
    with pytest.raises(ValueError, match="all or none"):
        bonnie_argv(BonnieConfig(size_bytes=8 << 20, phases=("read",)), "/tmp/x")


def test_the_cli_names_a_bad_workload_in_one_line(tmp_path):
    import sys

    p = subprocess.run([sys.executable, "-m", "diskmodel.calibrate.cli", "iopath", "--stack", "native",
                        "--workload", "bonnie:size=64M,chunk=3000"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "chunk = 3000" in assert_one_error_line(p.stderr)


def test_a_missing_tool_is_one_line_naming_its_package_before_anything_is_made(tmp_path, monkeypatch):
    from diskmodel.calibrate.bench.tool_workloads import measure

    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(RuntimeError) as exc:
        measure("tar:files=2,file_bytes=1k", tmp_path)
    assert "Debian package tar" in str(exc.value) and "\n" not in str(exc.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


@pytest.mark.integration
@pytest.mark.slow
def test_a_measured_workload_is_printed_with_its_definition_and_leaves_nothing(tmp_path):
    from conftest import require_root
    from diskmodel.calibrate.bench.tool_workloads import measure

    require_root()
    require_tools("tar", "sync")
    r = measure("tar:files=20,file_bytes=3000,dirs=2", tmp_path)
    line = r.line()
    assert line.startswith("tar:files=20,file_bytes=3000,dirs=2  [tar -cf: 20 files of 3000 B in 2 directories")
    # The tree's bytes read, and the archive written: 23 headers, 20 x 6 data blocks, 2 end blocks,
    # in whole 10240-byte records.
    assert r.elapsed_s > 0 and r.bytes_moved == 20 * 3000 + 81920
    assert list(tmp_path.iterdir()) == []


def test_postmark_runs_from_a_command_file_in_its_own_folder(tmp_path):
    from diskmodel.calibrate.bench import tool_workloads

    spec = "postmark:files=50,low=1k,high=4k,transactions=100,seed=7"
    assert tool_workloads.is_tool_spec(spec) and tool_workloads.is_tool_spec("postmark:test1")
    assert tool_workloads.definition(spec).startswith("PostMark: 50 files of 1024..4096 B in 1 directory, 100 "
                                                      "transactions")
    assert tool_workloads.steps(spec, tmp_path) == [["postmark", str(tmp_path / "postmark.cfg")]]
    with pytest.raises(ValueError, match="key 'colour'"):
        tool_workloads.ToolWorkload("postmark:colour=1")


@pytest.mark.integration
@pytest.mark.slow
def test_a_measured_postmark_ran_the_model_s_configuration_and_leaves_nothing(tmp_path):
    from conftest import require_root
    from diskmodel.calibrate.bench.tool_workloads import measure

    require_root()
    require_tools("postmark", "sync")
    r = measure("postmark:files=50,low=1k,high=4k,transactions=100,seed=7", tmp_path)
    assert r.line().startswith("postmark:files=50,low=1k,high=4k,transactions=100,seed=7  [PostMark: 50 files")
    # the workload's own bytes (the model's parse of the same spec): PostMark wrote at least its 50 files
    assert r.elapsed_s > 0 and r.bytes_moved >= 50 * 1024
    assert list(tmp_path.iterdir()) == []
