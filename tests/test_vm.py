"""The throwaway qemu VM (diskmodel.calibrate.bench.vm), driven for real under TCG.

Every VM test boots Debian's kernel in qemu under TCG and
checks real numbers coming back from the guest (about 5 s per boot on this
2-core machine, more under load); the interrupted and timed-out
runs check that no qemu process and no file is left behind.
"""
from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import require_tools, skip_or_fail
from diskmodel.calibrate.bench import initramfs, vm
from diskmodel.model.units import MIB as MiB

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """A private initramfs cache for this module (built once, ~0.5 s)."""
    require_tools("qemu-system-x86_64", "busybox", "lvm", "mke2fs", "mkfs.xfs", "postmark")
    ok, why = vm.vm_available()
    if not ok:
        skip_or_fail(why)
    return tmp_path_factory.mktemp("vm-cache")


def _qemu_processes_mentioning(text: str) -> list[int]:
    """Pids whose command line mentions *text* (our run directory): leftovers."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if os.path.basename(argv[0]).startswith("qemu-system") and text in " ".join(argv):
            pids.append(int(entry.name))
    return pids


def _host_release() -> str:
    kernel = initramfs.default_kernel()
    assert kernel is not None
    return kernel.name.removeprefix("vmlinuz-")


# --------------------------------------------------------------------------- no VM needed

def test_vm_available_reports_the_kernel_and_tcg(cache_dir):
    ok, why = vm.vm_available()
    assert ok, why
    assert _host_release() in why
    assert "tcg" in why and "emulated" in why


def test_missing_kernel_is_named_with_the_fix(tmp_path, cache_dir):
    missing = tmp_path / "vmlinuz-9.9.9-nonexistent"
    ok, why = vm.vm_available(kernel_path=missing)
    assert not ok
    assert str(missing) in why and "linux-image-amd64" in why and ".ci/setup --system" in why
    with pytest.raises(initramfs.VmUnavailableError) as info:
        vm.run_script_in_vm("true", scratch_disk_bytes=64 * MiB, kernel_path=missing,
                            cache_dir=cache_dir, workdir=tmp_path)
    assert str(missing) in str(info.value)
    assert isinstance(info.value, FileNotFoundError)   # the CLI reports it as exit status 2
    assert list(tmp_path.iterdir()) == []


def test_missing_qemu_is_named_with_the_fix(tmp_path, cache_dir):
    with pytest.raises(initramfs.VmUnavailableError,
                       match=r"qemu-system-nonexistent \(Debian package qemu-system-x86\).*"
                             r"\.ci/setup --system"):
        vm.run_script_in_vm("true", scratch_disk_bytes=64 * MiB, qemu="qemu-system-nonexistent",
                            cache_dir=cache_dir, workdir=tmp_path)


@pytest.mark.parametrize("kwargs, name", [
    (dict(scratch_disk_bytes=1000), "scratch_disk_bytes"),
    (dict(scratch_disk_bytes=-512), "scratch_disk_bytes"),
    (dict(scratch_disk_bytes=64 * MiB, memory_bytes=64 * MiB), "memory_bytes"),
    (dict(scratch_disk_bytes=64 * MiB, memory_bytes=(256 * MiB) + 1), "memory_bytes"),
    (dict(scratch_disk_bytes=64 * MiB, cpus=0), "cpus"),
    (dict(scratch_disk_bytes=64 * MiB, timeout_s=float("nan")), "timeout_s"),
    (dict(scratch_disk_bytes=64 * MiB, timeout_s=0), "timeout_s"),
    (dict(scratch_disk_bytes=64 * MiB, accelerator="hvf"), "accelerator"),
])
def test_bad_parameters_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        vm.run_script_in_vm("true", **kwargs)


def test_initramfs_is_cached_and_keyed_by_kernel_and_packages(cache_dir):
    first = initramfs.build_initramfs(cache_dir=cache_dir)
    stamp = first.stat().st_mtime_ns
    start = time.monotonic()
    second = initramfs.build_initramfs(cache_dir=cache_dir)
    assert second == first and second.stat().st_mtime_ns == stamp
    assert time.monotonic() - start < 5
    assert _host_release() in first.name
    manifest = json.loads(first.with_suffix(".json").read_text())
    assert manifest["release"] == _host_release()
    for package in ("lvm2", "e2fsprogs", "xfsprogs", "postmark", "busybox-static", "dash"):
        assert manifest["packages"][package], package
    assert any(f.endswith("/dm-mod.ko") or "dm-mod.ko" in f for f in manifest["files"])
    # A newc archive, starting with the magic number.
    assert first.read_bytes()[:6] == b"070701"


def _cpio(archive: Path, *args: str) -> str:
    with open(archive, "rb") as src:
        return subprocess.run(["cpio", "--quiet", *args], stdin=src, capture_output=True, text=True,
                              check=True).stdout


def test_initramfs_holds_the_modules_in_load_order_and_every_library(cache_dir):
    archive = initramfs.build_initramfs(cache_dir=cache_dir)
    rows = [line.split() for line in _cpio(archive, "-tv").splitlines()]
    names = {row[-1] if not row[0].startswith("l") else row[-3] for row in rows}
    assert all(row[2:4] == ["root", "root"] for row in rows)          # cpio -R 0:0
    assert "." not in names and "init" in names
    modules = _cpio(archive, "-i", "--to-stdout", "etc/diskmodel/modules").split()
    assert len(modules) == len(set(modules)) and all(m.lstrip("/") in names for m in modules)
    order = [Path(m).name for m in modules]
    # modprobe --show-depends: every dependency before the module needing it
    for before, after in (("virtio_ring.ko", "virtio_blk.ko"), ("virtio.ko", "virtio_pci.ko"),
                          ("jbd2.ko", "ext4.ko"), ("mbcache.ko", "ext4.ko"), ("libcrc32c.ko", "xfs.ko")):
        assert order.index(before) < order.index(after), (before, after)
    assert {"dm-mod.ko", "loop.ko", "crc32c_generic.ko"} <= set(order)
    # lddtree: lvm's libraries and the ELF interpreter, where the loader looks for them
    assert any(re.fullmatch(r"usr/lib/x86_64-linux-gnu/libdevmapper\.so\.[\d.]+", n) for n in names)
    assert "usr/lib64/ld-linux-x86-64.so.2" in names
    assert any(re.fullmatch(r"usr/lib/x86_64-linux-gnu/libblkid\.so\.1(\.[\d.]+)?", n) for n in names)


def test_non_kernel_image_fails_with_qemu_message(tmp_path, cache_dir):
    fake = tmp_path / "kernels" / f"vmlinuz-{_host_release()}"
    fake.parent.mkdir()
    fake.write_bytes(b"this is not a kernel\n" * 100)
    runs = tmp_path / "runs"
    runs.mkdir()
    with pytest.raises(vm.VmBootError, match=r"failed to boot \(qemu exit status 1"):
        vm.run_script_in_vm("true", scratch_disk_bytes=64 * MiB, kernel_path=fake,
                            cache_dir=cache_dir, workdir=runs, timeout_s=60)
    assert list(runs.iterdir()) == []


# --------------------------------------------------------------------------- real VM runs

LVM_SCRIPT = textwrap.dedent("""\
    pvcreate -y /dev/vda
    vgcreate testvg /dev/vda
    lvcreate -y -L 72m -n lv testvg
    echo "LVSIZE=$(lvs --noheadings --units b --nosuffix -o lv_size testvg/lv | tr -d ' ')"
    echo "EXTENT=$(vgs --noheadings --units b --nosuffix -o vg_extent_size testvg | tr -d ' ')"
    echo "DEVSIZE=$(blockdev --getsize64 /dev/testvg/lv)"
    mkfs.ext3 -q /dev/testvg/lv
    mkdir -p /mnt/t
    mount /dev/testvg/lv /mnt/t
    echo "FSTYPE=$(findmnt -n -o FSTYPE /mnt/t)"
    echo "written by the guest $$" > /mnt/t/probe
    sync
    echo 3 > /proc/sys/vm/drop_caches
    echo "READBACK=$(cat /mnt/t/probe)"
    printf 'set location /mnt/t\\nset number 50\\nset transactions 50\\nset seed 42\\nrun\\nquit\\n' > /tmp/pm.cfg
    postmark /tmp/pm.cfg
    umount /mnt/t
    lvremove -y testvg/lv
    vgremove -y testvg
    pvremove -y /dev/vda
    echo "SCHED=$(cat /sys/block/vda/queue/scheduler)"
    echo "RA=$(cat /sys/block/vda/queue/read_ahead_kb)"
    echo none > /sys/block/vda/queue/scheduler
    echo 512 > /sys/block/vda/queue/read_ahead_kb
    echo "SCHEDSET=$(cat /sys/block/vda/queue/scheduler)"
    echo "RASET=$(cat /sys/block/vda/queue/read_ahead_kb)"
    echo "CGROUP=$(cat /sys/fs/cgroup/cgroup.controllers)"
    echo "DISK=$(blockdev --getsize64 /dev/vda)"
    mkfs.xfs -q -f /dev/vda
    mount /dev/vda /mnt/t
    echo "XFS=$(findmnt -n -o FSTYPE /mnt/t)"
    umount /mnt/t
    loop=$(losetup --direct-io=on --offset 1048576 --sizelimit 8388608 --find --show /dev/vda)
    echo "LOOP=$(blockdev --getsize64 $loop)"
    losetup -d "$loop"
    echo "KERNEL=$(uname -r)"
    """)


def _values(output: str) -> dict[str, str]:
    return dict(m.groups() for m in re.finditer(r"^([A-Z]+)=(.*)$", output, re.M))


def test_lvm_ext3_postmark_end_to_end(tmp_path, cache_dir):
    lines = []
    result = vm.run_script_in_vm(LVM_SCRIPT, scratch_disk_bytes=320 * MiB, memory_bytes=512 * MiB,
                                 timeout_s=240, cache_dir=cache_dir, workdir=tmp_path,
                                 log=lines.append)
    assert result.returncode == 0, result.output
    values = _values(result.output)
    assert values["LVSIZE"] == str(72 * MiB)                  # the LV is exactly what was asked
    assert values["EXTENT"] == str(4 * MiB)                   # lvm2's default extent
    assert values["DEVSIZE"] == str(72 * MiB)                 # and the mapped device agrees
    assert values["FSTYPE"] == "ext3"
    assert values["READBACK"].startswith("written by the guest ")
    assert re.search(r"^\s*Physical volume \"/dev/vda\" successfully created", result.output, re.M)
    # PostMark's own report: all 50 transactions ran, 50 files created first.
    assert re.search(r"seconds of transactions \(\d+ per second\)", result.output)
    files = re.search(r"Creation alone: (\d+) files", result.output)
    assert files and int(files.group(1)) == 50
    read = int(re.search(r"\t(\d+) read", result.output).group(1))
    appended = int(re.search(r"\t(\d+) appended", result.output).group(1))
    assert read + appended == 50                              # each transaction reads or appends
    assert values["SCHED"].split() and "[" in values["SCHED"]
    assert int(values["RA"]) > 0
    assert values["SCHEDSET"].startswith("[none]") and values["RASET"] == "512"
    assert "memory" in values["CGROUP"].split()
    assert values["DISK"] == str(320 * MiB)
    assert values["XFS"] == "xfs"                             # mkfs.xfs needs >= 300 MB
    assert values["LOOP"] == str(8 * MiB)                     # util-linux losetup, not busybox's
    assert values["KERNEL"] == _host_release() == result.kernel_release
    assert result.accelerator == "tcg" and result.emulated
    assert 0 < result.boot_s < 120 and 0 < result.run_s < 200
    assert (result.memory_bytes, result.cpus, result.scratch_disk_bytes) == (512 * MiB, 1, 320 * MiB)
    assert "@@DISKMODEL" not in result.output                 # markers stripped
    assert not re.search(r"^\[\s*\d+\.\d+\]", result.output, re.M)  # no kernel messages
    # Every step was logged, and the guest's lines streamed to the log.
    assert any("qemu started" in line for line in lines)
    assert any(line.startswith("guest| LVSIZE=") for line in lines)
    assert list(tmp_path.iterdir()) == []


def test_failing_script_returns_status_and_output(tmp_path, cache_dir):
    # A forged end marker (wrong nonce) is just output.
    script = ("echo before\necho on-stderr >&2\nprintf '\\n@@DISKMODEL-END 0123 0\\n'\n"
              "sh -c 'exit 7'\necho never\n")
    result = vm.run_script_in_vm(script, scratch_disk_bytes=16 * MiB, memory_bytes=512 * MiB,
                                 timeout_s=120, cache_dir=cache_dir, workdir=tmp_path)
    assert result.returncode == 7                             # sh -e stops at the failure
    assert result.output == "before\non-stderr\n\n@@DISKMODEL-END 0123 0\n"
    assert list(tmp_path.iterdir()) == []


def test_guest_dying_mid_script_raises_with_output(tmp_path, cache_dir):
    script = "echo partial-output\nsync\npoweroff -f\nsleep 30\n"
    with pytest.raises(vm.VmBootError, match="died before the script ended") as info:
        vm.run_script_in_vm(script, scratch_disk_bytes=16 * MiB, memory_bytes=512 * MiB,
                            timeout_s=120, cache_dir=cache_dir, workdir=tmp_path)
    assert "partial-output" in info.value.output
    assert "Power down" in info.value.console_tail            # the guest console's tail
    assert list(tmp_path.iterdir()) == []


def test_timeout_kills_the_vm_and_removes_files(tmp_path, cache_dir):
    start = time.monotonic()
    with pytest.raises(vm.VmTimeoutError, match=r"timeout_s=2 s while booting"):
        vm.run_script_in_vm("sleep 600", scratch_disk_bytes=16 * MiB, memory_bytes=512 * MiB,
                            timeout_s=2, cache_dir=cache_dir, workdir=tmp_path)
    assert time.monotonic() - start < 20
    assert list(tmp_path.iterdir()) == []
    assert _qemu_processes_mentioning(str(tmp_path)) == []


CHILD = textwrap.dedent("""\
    import logging, sys
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    from diskmodel.calibrate.bench.vm import run_script_in_vm
    run_script_in_vm("echo script-running; sleep 600", scratch_disk_bytes=64 << 20,
                     memory_bytes=512 << 20, timeout_s=300,
                     workdir=sys.argv[1], cache_dir=sys.argv[2])
    """)


def _read_until(proc: subprocess.Popen, pattern: str, timeout_s: float) -> tuple[re.Match, str]:
    """Read the child's stderr until *pattern* matches a line.

    Reads the pipe's file descriptor directly: select() cannot see lines that a
    buffered reader has already pulled in, which made this wait time out when
    several log lines arrived in one chunk. Bytes after the matching line wait
    in ``proc.pending_stderr`` for the next call and for :func:`_read_rest`.
    """
    fd = proc.stderr.fileno()
    pending = getattr(proc, "pending_stderr", b"")
    seen = []
    deadline = time.monotonic() + timeout_s
    while True:
        while b"\n" in pending:
            raw, pending = pending.split(b"\n", 1)
            line = raw.decode("utf-8", "replace") + "\n"
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                proc.pending_stderr = pending
                return match, "".join(seen)
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        pending += chunk
    proc.pending_stderr = pending
    raise AssertionError(f"{pattern!r} not seen within {timeout_s} s; child said:\n" + "".join(seen))


def _read_rest(proc: subprocess.Popen) -> str:
    """Everything the child wrote to stderr after the last :func:`_read_until`."""
    chunks = [getattr(proc, "pending_stderr", b"")]
    while chunk := os.read(proc.stderr.fileno(), 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("signum, phase", [
    (signal.SIGINT, "script-running"),     # interrupted while the guest script runs
    (signal.SIGTERM, "qemu started"),      # terminated while the guest boots
], ids=["SIGINT-while-script-runs", "SIGTERM-while-booting"])
def test_signal_leaves_no_qemu_and_no_files(tmp_path, cache_dir, signum, phase):
    runs = tmp_path / "runs"
    runs.mkdir()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # SIGINT at its default in the child, as from a user's shell (not whatever the test worker inherited)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(runs), str(cache_dir)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=env, cwd=REPO_ROOT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        match, _ = _read_until(proc, r"qemu started \(pid (\d+)", 60)
        qemu_pid = int(match.group(1))
        if phase != "qemu started":
            _read_until(proc, phase, 120)
        else:
            time.sleep(1.5)                                   # the kernel is booting
        assert _qemu_processes_mentioning(str(runs)) == [qemu_pid]
        assert len(list(runs.iterdir())) == 1                 # the run directory exists
        proc.send_signal(signum)
        proc.wait(timeout=60)
        rest = _read_rest(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in rest
    assert f"killing qemu (pid {qemu_pid}" in rest
    assert _qemu_processes_mentioning(str(runs)) == []
    assert not Path(f"/proc/{qemu_pid}").exists() or \
        str(runs) not in Path(f"/proc/{qemu_pid}/cmdline").read_bytes().decode("utf-8", "replace")
    assert list(runs.iterdir()) == []


def test_sigkilled_caller_takes_qemu_with_it(tmp_path, cache_dir):
    """No ``finally`` runs on SIGKILL; PR_SET_PDEATHSIG still ends qemu."""
    runs = tmp_path / "runs"
    runs.mkdir()
    state = tmp_path / "state"   # the run's record, for `diskmodel cleanup`
    env = dict(os.environ, PYTHONUNBUFFERED="1", DISKMODEL_RUN_DIR=str(state))
    # SIGINT at its default in the child, as from a user's shell (not whatever the test worker inherited)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(runs), str(cache_dir)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=env, cwd=REPO_ROOT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        match, _ = _read_until(proc, r"qemu started \(pid (\d+)", 60)
        assert _qemu_processes_mentioning(str(runs)) == [int(match.group(1))]
        assert len(list(runs.iterdir())) == 1
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _qemu_processes_mentioning(str(runs)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _qemu_processes_mentioning(str(runs)) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _qemu_processes_mentioning(str(runs)):
            os.kill(pid, signal.SIGKILL)
    # The run directory is the one thing SIGKILL leaves (no code runs); the run's
    # record names it, and `diskmodel cleanup` removes it.
    assert len(list(runs.iterdir())) == 1
    res = subprocess.run([str(Path(sys.executable).with_name("diskmodel")), "cleanup"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert list(runs.iterdir()) == [] and list(state.glob("*.json")) == []


def test_kvm_that_cannot_be_opened_is_refused_before_anything_is_built(monkeypatch, tmp_path):
    """accelerator="kvm" never turns into TCG on its own: a missing /dev/kvm is an error naming it."""
    missing = tmp_path / "no-kvm"
    monkeypatch.setattr(vm, "KVM_DEVICE", str(missing))
    cache = tmp_path / "cache"
    with pytest.raises(initramfs.VmUnavailableError, match=r"no-kvm.*accelerator='tcg'"):
        vm.run_script_in_vm("true", scratch_disk_bytes=64 * MiB, accelerator="kvm",
                            cache_dir=cache, workdir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []   # no cache, no run directory
