"""PostMark: command files, the report parser on real reports, runs on native
(host loop device) and LVM-1/LVM-2 (throwaway VM), interruption and refusal.

Integration tests drive the real ``postmark``, loop devices, mount, cgroups,
and qemu with lvm2; they are small (a few hundred files).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench import postmark_guest as G
from diskmodel.calibrate.bench import postmark_results as R
from diskmodel.calibrate.bench import postmark_text as T
from diskmodel.calibrate.bench.host_executor import HostExecutor
from diskmodel.model.stacks.stack import paper_stack
from diskmodel.model.predictions.workload import PostMarkConfig, postmark_preset
from conftest import require_root, require_tools, skip_or_fail, wait_for
from diskmodel.model.units import MIB as MiB

PY = sys.executable
DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))
SMALL = dict(files=300, transactions=1500)


# ---------------------------------------------------------------- command file (unit)

def test_command_file_sets_everything_postmark_needs():
    cfg = PostMarkConfig(number_of_files=123, min_file_size_bytes=7, max_file_size_bytes=999,
                         transactions=4567, subdirectories=3, read_block_size_bytes=4096,
                         write_block_size_bytes=1024, buffered_io=False, read_bias=2, create_bias=8, seed=9)
    text = T.command_file(cfg, "/mnt/x")
    assert text.splitlines() == [
        "set location /mnt/x",
        "set size 7 999",
        "set number 123",
        "set transactions 4567",
        "set read 4096",
        "set write 1024",
        "set buffering false",
        "set bias read 2",
        "set bias create 8",
        "set seed 9",
        "set subdirectories 3",
        "set report verbose",
        "show",
        "run",
        "quit",
    ]


def test_command_file_leaves_out_zero_subdirectories_which_postmark_rejects():
    text = T.command_file(PostMarkConfig(), "/mnt/x")
    assert "subdirectories" not in text
    assert "set buffering true" in text


@pytest.mark.parametrize("location", ["", "/mnt/with space", "/a\nb"])
def test_command_file_refuses_locations_postmark_would_split(location):
    with pytest.raises(ValueError, match="location"):
        T.command_file(PostMarkConfig(), location)


def test_data_amounts_use_binary_units():
    a = T.DataAmount.parse("5.96", "megabytes")
    assert a.bytes == pytest.approx(5.96 * 2**20) and a.resolution_bytes == pytest.approx(0.005 * 2**20)
    b = T.DataAmount.parse("9.77", "kilobytes")
    assert b.bytes == pytest.approx(9.77 * 1024)
    with pytest.raises(T.PostMarkError, match="unit"):
        T.DataAmount.parse("1.0", "gigabytes")


def test_parser_refuses_reports_with_errors_or_gaps():
    with pytest.raises(T.PostMarkError, match="cannot open"):
        T.parse_report("Error: cannot open '/x/1' for writing\nTime:\n\t1 seconds total\n")
    with pytest.raises(T.PostMarkError, match="Time:"):
        T.parse_report("Creating files...Done\n")
    with pytest.raises(T.PostMarkError, match="Mixed with transactions"):
        T.parse_report("PostMark\nTime:\n\t3 seconds total\n")


def _fake_run(report: T.PostMarkReport, wall_s: float, elapsed_s: float) -> R.PostMarkRun:
    env = R.RunEnvironment(stack="native", kernel_release="k", file_system="ext3", mount_options="rw",
                           device="/dev/loop9", read_ahead_kb=128, scheduler="none", backing="/x")
    return R.PostMarkRun(report=dataclasses.replace(report, elapsed_s=elapsed_s), wall_s=wall_s,
                         environment=env, config=PostMarkConfig())


def _any_report() -> T.PostMarkReport:
    amt = T.DataAmount(1.0, "megabytes", float(MiB), 0.005 * MiB)
    return T.PostMarkReport(1, 1, 10, 20, 20, 10, 10, 5, 5, 5, 5, 20, 20, 10, 10, amt, amt, amt, amt)


def test_summary_mean_and_student_t_interval():
    runs = [_fake_run(_any_report(), wall_s=w, elapsed_s=w) for w in (11.0, 12.0, 13.0)]
    s = R.summarize(runs)
    assert s.params["wall_s"] == pytest.approx(12.0)
    assert s.bse["wall_s"] == pytest.approx(1 / math.sqrt(3))
    # t(0.975, df=2) = 4.302652729911275 (tables)
    assert list(s.conf_int().columns) == ["lower", "upper"]  # the fit results' convention (model/fit/base.py)
    assert list(s.conf_int().index) == list(s.params.index) == list(s.bse.index)
    lo, hi = s.conf_int().loc["wall_s", ["lower", "upper"]]
    assert (lo, hi) == pytest.approx((12 - 4.302652729911275 / math.sqrt(3), 12 + 4.302652729911275 / math.sqrt(3)))
    assert s.params["read_bytes_per_s_wall"] == pytest.approx(MiB * (1 / 11 + 1 / 12 + 1 / 13) / 3)
    assert not s.coarse
    one = R.summarize(runs[:1])
    assert all(math.isnan(v) for v in one.conf_int().loc["wall_s"])
    assert R.summarize([_fake_run(_any_report(), 9.9, 9)]).coarse
    assert "coarse" in R.summarize([_fake_run(_any_report(), 9.9, 9)]).summary()


def test_emulated_runs_say_they_measure_an_emulator():
    env = R.RunEnvironment(stack="lvm1", kernel_release="k", file_system="ext3", mount_options="rw",
                           device="/dev/dm-0", read_ahead_kb=128, scheduler="none", backing="/dev/vda",
                           emulated=True, accelerator="tcg")
    run = R.PostMarkRun(report=_any_report(), wall_s=12.0, environment=env, config=PostMarkConfig())
    s = R.summarize([run])
    assert "timings measure an emulator" in s.summary()
    assert "emulator" in s.to_dict()["environment"]["note"]


def test_guest_body_is_valid_sh():
    body = G.guest_body(PostMarkConfig(), repeats=2, memory_limit_bytes=64 * MiB)
    plan = L.build_plan(paper_stack("lvm1", fs_size_bytes=64 * MiB), backing="/dev/vda")
    res = subprocess.run(["/bin/sh", "-n"], input=plan.render_script(body), text=True, capture_output=True)
    assert res.returncode == 0, res.stderr
    # the command file's location is the mount point's reference, one word with its line
    assert "printf '%s\\n' 'set location '\"$DISKMODEL_MNT\" " in body
    with pytest.raises(ValueError, match="repeats"):
        G.guest_body(PostMarkConfig(), repeats=0)
    with pytest.raises(ValueError, match="memory_limit_bytes"):
        G.guest_body(PostMarkConfig(), memory_limit_bytes=1000)


# ---------------------------------------------------------------- parser on a real report

def _postmark(cfg_text: str, tmp: Path) -> str:
    f = tmp / "pm.cfg"
    f.write_text(cfg_text)
    return subprocess.run(["postmark", str(f)], capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.mark.integration
@pytest.mark.slow
def test_parser_on_a_real_report_agrees_with_postmarks_terse_bytes(tmp_path):
    require_tools("postmark")
    loc = tmp_path / "loc"
    loc.mkdir()
    cfg = PostMarkConfig(number_of_files=400, min_file_size_bytes=500, max_file_size_bytes=20_000,
                         transactions=3000, seed=7)
    verbose = _postmark(T.command_file(cfg, loc), tmp_path)
    T.check_echoed_config(cfg, verbose)
    r = T.parse_report(verbose)
    assert r.transactions == 3000
    assert r.files_created == r.files_created_alone + r.files_created_mixed
    assert r.files_deleted == r.files_deleted_alone + r.files_deleted_mixed
    assert r.files_created_alone == 400 and r.files_created >= 400
    assert r.files_created == r.files_deleted  # PostMark deletes what it made
    assert 0 < r.files_read + r.files_appended <= 3000
    assert r.data_read.unit == r.data_written.unit == "megabytes"
    # The same seeded run, terse: PostMark prints exact bytes per second and whole seconds.
    terse = _postmark(T.command_file(cfg, loc).replace("set report verbose", "set report terse"), tmp_path)
    fields = terse.strip().splitlines()[-1].split()
    t_total = int(fields[0])
    exact_read, exact_written = float(fields[-2]) * t_total, float(fields[-1]) * t_total
    assert abs(r.data_read.bytes - exact_read) <= r.data_read.resolution_bytes + 1
    assert abs(r.data_written.bytes - exact_written) <= r.data_written.resolution_bytes + 1
    # ... which would be off by 4.9 % had PostMark meant 10**6-byte megabytes
    assert abs(r.data_read.value * 1e6 - exact_read) > 10 * r.data_read.resolution_bytes
    # PostMark's rates are its data over its whole-second total time
    assert r.read_rate.bytes == pytest.approx(r.data_read.bytes / r.elapsed_s, abs=r.read_rate.resolution_bytes * 2)
    assert list(loc.iterdir()) == []


def test_echoed_config_mismatch_is_an_error():
    text = ("The base number of files is 500\nTransactions: 500\nBiases are: read/append=5, create/delete=5\n"
            "Using Unix buffered file I/O\nRandom number generator seed is 42\n")
    T.check_echoed_config(PostMarkConfig(), text)
    with pytest.raises(T.PostMarkError, match="seed: 42 vs 43"):
        T.check_echoed_config(PostMarkConfig(seed=43), text)


# ---------------------------------------------------------------- CLI helpers

def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([DISKMODEL, "postmark", *args],
                          capture_output=True, text=True, timeout=timeout)


def _loops_backed_by(path: Path) -> list[str]:
    out = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if str(path) in ln]


def _our_cgroups(pid: int) -> list[Path]:
    found = []
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/unified")):
        found += list(root.glob(f"diskmodel-postmark-{pid}-*"))
    return found


def _children(pid: int) -> dict[int, str]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1: stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid == pid:
                out[int(d.name)] = comm
    return out


def _mounts_under(prefix: str) -> list[str]:
    return [ln for ln in Path("/proc/mounts").read_text().splitlines() if ln.split()[1].startswith(prefix)]


# ---------------------------------------------------------------- native on the host

@pytest.mark.integration
@pytest.mark.slow
def test_native_ext3_run_gives_real_numbers_and_leaves_nothing(tmp_path):
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount", "blockdev")
    scratch, out = tmp_path / "scratch.img", tmp_path / "out.json"
    res = _cli("--layout", "native", "--workload", "test1", "--scratch", str(scratch), "--size", "128M",
               "--files", "300", "--transactions", "1500", "--repeats", "2", "--memory-limit", "64M",
               "--json", str(out))
    assert res.returncode == 0, res.stderr
    assert "mkfs.ext3" in res.stderr and "umount" in res.stderr  # every step logged
    doc = json.loads(out.read_text())
    env = doc["environment"]
    assert env["stack"] == "native" and env["file_system"] == "ext3"
    assert env["stack_description"].startswith("stack native:\n  ext3 file system")
    assert "stack native" in res.stdout
    assert env["kernel_release"] == platform.release()
    assert re.fullmatch(r"/dev/loop\d+", env["device"])
    assert env["read_ahead_kb"] > 0 and env["scheduler"]
    assert env["memory_limit_bytes"] == 64 * MiB and env["cgroup_version"] in (1, 2)
    assert env["emulated"] is False and env["note"] == ""
    assert "rw" in env["mount_options"].split(",")
    assert doc["config"]["number_of_files"] == 300 and doc["config"]["min_file_size_bytes"] == 1024
    assert doc["n"] == 2 and len(doc["runs"]) == 2
    for run in doc["runs"]:
        rep = run["report"]
        assert rep["transactions"] == 1500
        assert rep["files_created"] >= 300 and rep["files_created_alone"] == 300
        assert rep["data_read"]["bytes"] > 0 and rep["data_written"]["bytes"] > 0
        # test1 sizes (1 KiB .. 100 KiB): 300 files alone write ~15 MB
        assert rep["data_written"]["bytes"] > 300 * 1024
        assert run["read_bytes_per_s_wall"] == pytest.approx(rep["data_read"]["bytes"] / run["wall_s"])
        assert rep["read_rate"]["bytes"] == pytest.approx(rep["data_read"]["bytes"] / rep["elapsed_s"],
                                                          abs=2 * rep["read_rate"]["resolution_bytes"])
        assert run["coarse"] == (run["wall_s"] < 10)
        assert 0 < run["cgroup_peak_bytes"] <= 64 * MiB
    assert all(math.isfinite(v) for v in doc["conf_int_95"]["wall_s"])
    assert "95% CI" in res.stdout
    assert not scratch.exists()
    assert _loops_backed_by(scratch) == []
    assert _mounts_under("/tmp/diskmodel-mnt.") == [] or all(
        str(tmp_path) not in m for m in _mounts_under("/tmp/diskmodel-mnt."))


@pytest.mark.integration
@pytest.mark.slow
def test_the_guest_script_runs_on_the_host_too(tmp_path):
    """The body the VM runs, run by the host executor on a host layout: same shell, same parser."""
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount")
    from diskmodel.calibrate.harness.scratch import prepare_scratch
    cfg = postmark_preset("test2").evolve(number_of_files=500, transactions=1000)
    fs = 64 * MiB
    stack = paper_stack("native", fs_size_bytes=fs)
    with prepare_scratch(tmp_path / "s.img", L.backing_bytes_required(stack)) as scratch:
        plan = L.build_plan(stack, backing=scratch.path, queue_defaults=True)
        with HostExecutor(plan) as ex:
            body = G.guest_body(cfg, repeats=2, memory_limit_bytes=32 * MiB, device=plan.device)
            tmp = tmp_path / "tmp"
            tmp.mkdir()
            # As in the VM's script: the body's undo list runs from an EXIT trap; the plan's captures are
            # its variables (the test runs the guest's shell here; the product's host path runs no shell).
            env = dict(os.environ, TMPDIR=str(tmp), DISKMODEL_SCRATCH=str(scratch.path), **ex.variables)
            res = subprocess.run(["/bin/sh", "-c", "DISKMODEL_UNDO=''\ntrap 'eval \"$DISKMODEL_UNDO\"' EXIT\n"
                                  + body], env=env, capture_output=True, text=True, timeout=600)
        assert ex.teardown().left == []
    assert res.returncode == 0, res.stdout + res.stderr
    assert list(tmp.iterdir()) == []   # its temporary folder (a mktemp name) is gone
    s = G.parse_guest_output(res.stdout, cfg, stack=stack, accelerator="host", memory_limit_bytes=32 * MiB)
    assert s.environment.stack == "native" and "partition /dev/sda3" in s.environment.stack_description
    assert s.n == 2 and not s.environment.emulated
    assert s.environment.kernel_release == platform.release()
    assert s.environment.cgroup_version in (1, 2)
    for run in s.runs:
        assert run.report.transactions == 1000 and run.report.files_created_alone == 500
        assert run.report.data_written.bytes > 0
    assert _our_cgroups(os.getpid()) == []


# ---------------------------------------------------------------- LVM-1 and LVM-2 in the VM

def _require_vm():
    require_tools("qemu-system-x86_64", "postmark", "lvm", "mkfs.ext3", "busybox")
    from diskmodel.calibrate.bench.vm import vm_available
    ok, why = vm_available()
    if not ok:
        skip_or_fail(f"the throwaway VM cannot run here: {why}")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("layout, pvs", [("lvm1", 1), ("lvm2", 2)])
def test_lvm_layouts_in_the_vm_with_real_lvm2(tmp_path, layout, pvs):
    _require_vm()
    out = tmp_path / "out.json"
    res = _cli("--layout", layout, "--workload", "test1", "--vm", "--size", "64M", "--files", "100",
               "--transactions", "300", "--max-size", "20000", "--memory-limit", "48M",
               "--json", str(out), timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    doc = json.loads(out.read_text())
    env = doc["environment"]
    assert env["stack"] == layout
    assert re.fullmatch(r"/dev/mapper/diskmodel_[0-9a-f]+-LogVol02 \(dm-\d+\)", env["device"])
    assert env["file_system"] == "ext3" and env["cgroup_version"] == 2
    assert env["emulated"] is True and env["accelerator"] == "tcg"
    assert "emulator" in env["note"] and "timings measure an emulator" in res.stdout
    rep = doc["runs"][0]["report"]
    assert rep["transactions"] == 300 and rep["files_created"] >= 100
    assert rep["data_read"]["bytes"] > 0 and rep["data_written"]["bytes"] > 0
    # the VG really had `pvs` PVs, each fully used by the LV, and all was removed
    assert len(re.findall(r"Physical volume \"/dev/loop\d\" successfully created", res.stderr)) == pvs
    per_pv = 16 // pvs
    assert len(re.findall(rf"guest\| diskmodel: step \d+: check \S+ uses all {per_pv} extents of PV \d",
                          res.stderr)) == pvs
    assert 'Volume group "' in res.stderr and "successfully removed" in res.stderr
    assert len(re.findall(r"Labels on physical volume \"/dev/loop\d\" successfully wiped", res.stderr)) == pvs


@pytest.mark.integration
@pytest.mark.slow
def test_a_striped_stack_file_is_built_in_the_vm_as_described(tmp_path):
    """--stack: an LVM striped volume over two partitions of the scratch, ext2, noatime: built as written."""
    _require_vm()
    from diskmodel.model.drive.drives import PresetDrive
    from diskmodel.model.stacks.stack import FileSystemNode, Stack
    from diskmodel.model.stacks.volumes import Partition, StripedVolume

    pvs = (Partition(MiB, 41 * MiB, "/dev/sda1"), Partition(48 * MiB, 41 * MiB, "/dev/sda2"))
    stack = Stack(FileSystemNode(StripedVolume(pvs, stripe_size_bytes=64 * 1024, name="stripes"), kind="ext2",
                                 mount_options=("noatime",)), (PresetDrive("wd800bd"),), "two stripes")
    path, out = tmp_path / "stack.json", tmp_path / "out.json"
    path.write_text(stack.to_json())
    res = _cli("--stack", str(path), "--workload", "test1", "--vm", "--files", "100", "--transactions", "300",
               "--max-size", "20000", "--json", str(out), timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    env = json.loads(out.read_text())["environment"]
    assert env["stack"] == "two stripes" and "LVM striped volume stripes" in env["stack_description"]
    assert re.fullmatch(r"/dev/mapper/diskmodel_[0-9a-f]+-stripes \(dm-\d+\)", env["device"])
    assert env["file_system"] in ("ext2", "ext4") and "noatime" in env["mount_options"].split(",")
    # two PVs of (41 - 1) MiB // 4 MiB = 10 extents, striped in 64 KiB chunks: 20 extents, 10 on each
    assert "lvcreate -y -W n -i 2 -I 64k -l 20 -n stripes" in res.stderr
    assert len(re.findall(r"guest\| diskmodel: step \d+: check \S+ uses all 10 extents of PV \d", res.stderr)) == 2
    assert len(re.findall(r"Labels on physical volume \"/dev/loop\d\" successfully wiped", res.stderr)) == 2


# ---------------------------------------------------------------- SIGINT leaves nothing behind

class _Reader(threading.Thread):
    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.lines = stream, []

    def run(self):
        for line in self.stream:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


def _interrupted(proc, err) -> int:
    """SIGINT to a running `diskmodel postmark`, whose exit status (after up to 60 s) is returned;
    it is killed if it is still there after that, or if the test fails before (the caller's finally)."""
    try:
        proc.send_signal(signal.SIGINT)
        return proc.wait(timeout=60)
    finally:
        _kill(proc)
        err.join(5)


def _kill(proc) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.mark.integration
@pytest.mark.slow
def test_sigint_on_the_host_leaves_no_loop_device_mount_cgroup_or_file(tmp_path):
    require_root()
    require_tools("postmark", "losetup", "mkfs.ext3", "mount", "umount")
    scratch = tmp_path / "scratch.img"
    proc = subprocess.Popen([DISKMODEL, "postmark", "--layout", "native",
                             "--workload", "test1", "--scratch", str(scratch), "--size", "256M",
                             "--files", "2000", "--transactions", "2000000", "--memory-limit", "64M"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = _Reader(proc.stderr)
    err.start()
    try:
        pm = wait_for(lambda: [p for p, c in _children(proc.pid).items() if c == "postmark"], 60,
                       "postmark to start")
        assert _loops_backed_by(scratch) and _our_cgroups(proc.pid)
        mnt = re.search(r"captured DISKMODEL_MNT=(/tmp/diskmodel-run-\S+/mnt)$", err.text(), re.M).group(1)
        assert _mounts_under(mnt)
        time.sleep(0.5)
        rc = _interrupted(proc, err)
    finally:
        _kill(proc)
    assert rc == 130, err.text()[-3000:]
    assert "interrupted" in err.text()
    assert _loops_backed_by(scratch) == []
    assert _mounts_under(mnt) == [] and not Path(mnt).exists()
    assert _our_cgroups(proc.pid) == []
    assert not Path(f"/proc/{pm[0]}").exists() or "postmark" not in Path(f"/proc/{pm[0]}/comm").read_text()
    assert not scratch.exists()


@pytest.mark.integration
@pytest.mark.slow
def test_sigint_during_a_vm_run_leaves_no_vm_behind(tmp_path):
    _require_vm()
    proc = subprocess.Popen([DISKMODEL, "postmark", "--layout", "lvm2",
                             "--workload", "test1", "--vm", "--size", "64M", "--files", "200",
                             "--transactions", "2000000", "--max-size", "20000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = _Reader(proc.stderr)
    err.start()
    try:
        wait_for(lambda: "DISKMODEL_PM BEGIN 1" in err.text(), 240, "PostMark to start in the guest")
        qemu = [p for p, c in _children(proc.pid).items() if c.startswith("qemu")]
        assert qemu
        run_dir = re.search(r"vm: run directory (\S+)", err.text()).group(1)
        assert Path(run_dir).exists()
        rc = _interrupted(proc, err)
    finally:
        _kill(proc)
    assert rc == 130, err.text()[-3000:]
    for pid in qemu:
        assert not Path(f"/proc/{pid}").exists() or not Path(f"/proc/{pid}/comm").read_text().startswith("qemu")
    assert not Path(run_dir).exists()


# ---------------------------------------------------------------- refusal before any write

def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@pytest.mark.integration
@pytest.mark.slow
def test_a_mounted_device_is_refused_before_any_write(tmp_path):
    require_root()
    require_tools("losetup", "mkfs.ext2", "mount", "umount")
    img = tmp_path / "dev.img"
    with open(img, "wb") as f:
        f.write(os.urandom(64 * MiB))
    dev = subprocess.check_output(["losetup", "--find", "--show", str(img)], text=True).strip()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = False
    try:
        subprocess.run(["mkfs.ext2", "-q", "-F", dev], check=True)
        subprocess.run(["mount", dev, str(mnt)], check=True)
        (mnt / "precious").write_text("do not destroy")
        subprocess.run(["umount", str(mnt)], check=True)
        # mounted read-only, so the file system itself writes nothing while we compare checksums
        subprocess.run(["mount", "-o", "ro", dev, str(mnt)], check=True)
        mounted = True
        before = _sha256(dev)
        res = _cli("--layout", "native", "--workload", "test2", "--scratch", dev, "--destroy-data-on", dev,
                   "--size", "16M", "--files", "100", "--transactions", "100")
        assert res.returncode == 2
        assert f"is mounted on {mnt}" in res.stderr and "refusing to write" in res.stderr
        assert "losetup --find" not in res.stderr  # no layout step ran
        # without the confirmation it is refused too, for that reason
        res2 = _cli("--layout", "native", "--workload", "test2", "--scratch", dev, "--size", "16M")
        assert res2.returncode == 2 and "--destroy-data-on" in res2.stderr
        assert _sha256(dev) == before
        assert (mnt / "precious").read_text() == "do not destroy"
        # busy without a mount: held open exclusively by someone else
        subprocess.run(["umount", str(mnt)], check=True)
        mounted = False
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
        try:
            res3 = _cli("--layout", "native", "--workload", "test2", "--scratch", dev, "--destroy-data-on", dev,
                        "--size", "16M")
        finally:
            os.close(fd)
        assert res3.returncode == 2 and "O_EXCL" in res3.stderr
        assert _sha256(dev) == before
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)])
        subprocess.run(["losetup", "-d", dev])


@pytest.mark.slow
def test_existing_files_need_the_confirmation_and_it_must_match(tmp_path):
    f = tmp_path / "existing.img"
    f.write_bytes(b"keep me" * 1000)
    before = f.read_bytes()
    res = _cli("--layout", "native", "--workload", "test2", "--scratch", str(f), "--size", "16M")
    assert res.returncode == 2 and "--destroy-data-on" in res.stderr
    res = _cli("--layout", "native", "--workload", "test2", "--scratch", str(f),
               "--destroy-data-on", str(tmp_path / "other"), "--size", "16M")
    assert res.returncode == 2 and "must repeat the scratch path" in res.stderr
    assert f.read_bytes() == before


@pytest.mark.slow
def test_cli_bad_input_names_the_parameter(tmp_path):
    res = _cli("--layout", "native", "--workload", "test2", "--scratch", str(tmp_path / "n.img"), "--size", "10M")
    assert res.returncode == 2 and "fs_size_bytes" in res.stderr and "try 8388608" in res.stderr
    assert not (tmp_path / "n.img").exists()
    res = _cli("--layout", "native", "--workload", "test2", "--scratch", str(tmp_path / "n.img"),
               "--read-bias", "11")
    assert res.returncode == 2 and "read_bias" in res.stderr
    res = _cli("--layout", "native", "--workload", "test2", "--vm", "--vm-accelerator", "hvf")
    assert res.returncode == 2 and "--vm-accelerator" in res.stderr
    if not L.device_mapper_available():
        res = _cli("--layout", "lvm2", "--workload", "test2", "--scratch", str(tmp_path / "n.img"))
        assert res.returncode == 2 and "pass --vm" in res.stderr
        assert not (tmp_path / "n.img").exists()


@pytest.mark.integration
@pytest.mark.slow
def test_the_scratch_file_is_written_not_sparse_and_kept_only_on_request(tmp_path):
    from diskmodel.calibrate.harness.scratch import prepare_scratch
    for keep in (False, True):
        path = tmp_path / f"s-{keep}.img"
        with prepare_scratch(path, 16 * MiB, keep=keep) as s:
            st = os.stat(path)
            assert s.created and st.st_size == 16 * MiB and st.st_blocks * 512 >= 16 * MiB
            with open(path, "rb") as f:
                assert f.read(1 << 20).count(0) < (1 << 20) // 100  # data, not zeros
        assert path.exists() == keep


@pytest.mark.integration
@pytest.mark.slow
def test_postmark_runs_in_a_location_deeper_than_its_name_buffer(tmp_path):
    """PostMark 1.51 builds each file's name (location, then the name) in a fixed-size buffer and crashes
    (SIGSEGV or an abort) when the location is long: a run whose mount lies under a deep TMPDIR (the
    emulated drive's run folder in a test's folder) ended with "postmark exited with status -11". The
    run gives PostMark its location as its working directory, so the depth does not matter."""
    require_tools("postmark")
    from diskmodel.calibrate.bench.postmark import run_postmark_once

    location = tmp_path / ("d" * 60) / ("e" * 60)
    location.mkdir(parents=True)
    assert len(str(location)) > 120
    env = R.RunEnvironment(stack="none", kernel_release=platform.release(), file_system="any",
                           mount_options="", device="none", read_ahead_kb=None, scheduler=None, backing="none")
    config = PostMarkConfig(number_of_files=500, transactions=2000, min_file_size_bytes=500,
                            max_file_size_bytes=8000)
    run = run_postmark_once(config, location, environment=env, drop_page_cache=False, timeout_s=120)
    assert run.report.transactions == 2000
    assert os.listdir(location) == []
