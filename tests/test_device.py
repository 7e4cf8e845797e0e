"""The real O_DIRECT backend and the validity checks, on real files and loop devices."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from _loopdev import MiB, write_random_file
from conftest import require_tools
from diskmodel.calibrate.harness import checks
from diskmodel.calibrate.harness.device import (
    BackendError,
    DeviceBusyError,
    DeviceIOError,
    DirectBackend,
    LoopBufferedError,
    NotBlockOrRegularFileError,
    UnalignedSizeError,
    UnwrittenDataError,
    open_backend,
    unwritten_regions,
)
from diskmodel.model.units import KIB as KiB


@pytest.fixture(scope="module")
def written_file(tmp_path_factory) -> Path:
    return write_random_file(tmp_path_factory.mktemp("device") / "written.img", 32 * MiB, seed=1)


# --------------------------------------------------------------------------- timing real reads


def test_backend_times_reads_of_written_file(written_file):
    rng = np.random.default_rng(7)
    with open_backend(written_file) as b:
        assert isinstance(b, DirectBackend) and b.kind == "file"
        assert b.size_bytes == 32 * MiB
        assert b.block_size_bytes in (512, 1024, 2048, 4096, 65536)
        assert b.queue_depth == 1
        assert 0 < b.timer_overhead_ns < 10_000
        offsets = rng.integers(0, b.size_bytes // (4 * KiB), 400) * 4 * KiB
        small = b.read_many(offsets, 4 * KiB)
        assert small.shape == (400,) and small.dtype == np.float64
        # real device reads: more than 1 us (a page-cache copy is faster), less than 100 ms
        assert 1e-6 < np.median(small) < 0.1
        assert np.all(small > 0) and np.all(small < 1.0)
        single = np.array([b.read(int(o), 4 * KiB) for o in offsets[:100]])
        assert 1e-6 < np.median(single) < 0.1
        big_offsets = rng.integers(0, b.size_bytes // MiB, 40) * MiB
        big = b.read_many(big_offsets, MiB)
        assert np.median(big) > np.median(small)
        assert 1e-6 < b.read(0, MiB) < 1.0
        # numpy integers are accepted as offsets
        assert b.read(np.int64(4 * KiB), 4 * KiB) > 0


def test_reads_reached_the_device(written_file):
    with open_backend(written_file) as b:
        before = checks.read_device_stat(written_file)
        b.read_many(np.arange(200) * 4 * KiB, 4 * KiB)
        after = checks.read_device_stat(written_file)
        verdict = checks.reads_reached_device(before, after, expected_reads=200, expected_bytes=200 * 4 * KiB)
    if before is None:
        assert verdict.passed is None and "unknown" in verdict.detail
    else:
        assert verdict.passed is True, verdict.detail
        # a claim of more reads than the counters saw fails
        impossible = after.reads_completed - before.reads_completed + after.reads_merged - before.reads_merged + 1
        assert checks.reads_reached_device(before, after, impossible).passed is False
    assert checks.reads_reached_device(None, None, 10).passed is None


def test_context_manager_and_idempotent_close(written_file):
    b = open_backend(written_file)
    with b:
        assert not b.closed
    assert b.closed
    b.close()
    b.close()
    with pytest.raises(ValueError, match="closed"):
        b.read(0, 4 * KiB)


# --------------------------------------------------------------------------- bad parameters


def test_unaligned_or_out_of_range_reads_name_the_parameter(written_file):
    with open_backend(written_file) as b:
        bs = b.block_size_bytes
        with pytest.raises(ValueError, match="length_bytes"):
            b.read(0, bs + 1)
        with pytest.raises(ValueError, match="length_bytes"):
            b.read(0, 0)
        with pytest.raises(ValueError, match="length_bytes"):
            b.read_many([0, bs], 100)
        with pytest.raises(ValueError, match="offset_bytes"):
            b.read(1, bs)
        with pytest.raises(ValueError, match="offset_bytes"):
            b.read(-bs, bs)
        with pytest.raises(ValueError, match="offset_bytes"):
            b.read(b.size_bytes, bs)
        with pytest.raises(ValueError, match="offset_bytes"):
            b.read(0.0, bs)
        with pytest.raises(ValueError, match=r"offsets\[1\]"):
            b.read_many([0, 3, bs], bs)
        with pytest.raises(ValueError, match=r"offsets\[0\]"):
            b.read_many([b.size_bytes - bs], 2 * bs)
        assert b.read_many([], bs).shape == (0,)


def test_unaligned_file_size_is_refused(tmp_path):
    path = write_random_file(tmp_path / "odd.img", 4 * MiB + 512, seed=2)
    with pytest.raises(UnalignedSizeError, match="not a multiple of block_size_bytes"):
        open_backend(path)


def test_directory_and_char_device_are_refused(tmp_path):
    with pytest.raises(NotBlockOrRegularFileError, match="directory"):
        open_backend(tmp_path)
    with pytest.raises(NotBlockOrRegularFileError, match="character device"):
        open_backend("/dev/null")
    with pytest.raises(FileNotFoundError):
        open_backend(tmp_path / "absent")


# --------------------------------------------------------------------------- holes


def test_sparse_file_is_refused_with_holes_message(tmp_path):
    path = tmp_path / "sparse.img"
    with open(path, "wb") as f:
        f.truncate(16 * MiB)
    with pytest.raises(UnwrittenDataError, match="return zeros without any I/O") as info:
        open_backend(path)
    assert str(path) in str(info.value)
    assert [(r.start_bytes, r.length_bytes, r.kind) for r in info.value.regions] == [(0, 16 * MiB, "hole")]
    verdict = checks.written_data(path)
    assert verdict.passed is False and "zeros without any I/O" in verdict.detail


def test_partly_sparse_file_is_refused(tmp_path):
    path = write_random_file(tmp_path / "partly.img", 8 * MiB, seed=3)
    with open(path, "r+b") as f:
        f.truncate(12 * MiB)  # a 4 MiB hole at the end
    regions = unwritten_regions(path)
    assert [(r.start_bytes, r.length_bytes) for r in regions] == [(8 * MiB, 4 * MiB)]
    with pytest.raises(UnwrittenDataError, match="first at byte 8388608"):
        open_backend(path)


def test_fallocated_file_is_refused_with_holes_message(tmp_path):
    path = tmp_path / "falloc.img"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, 16 * MiB)
        except OSError as exc:
            pytest.skip(f"file system cannot fallocate: {exc}")
        os.fsync(fd)
    finally:
        os.close(fd)
    with pytest.raises(UnwrittenDataError, match="return zeros without any I/O") as info:
        open_backend(path)
    assert sum(r.length_bytes for r in info.value.regions) == 16 * MiB
    assert checks.written_data(path).passed is False


def test_written_file_passes_the_written_data_check(written_file):
    assert unwritten_regions(written_file) == []
    verdict = checks.written_data(written_file)
    assert verdict.passed is True and verdict.name == "written_data"


# --------------------------------------------------------------------------- other checks


def test_timer_resolution_and_queue_depth_verdicts(written_file):
    v = checks.timer_resolution()
    assert v.passed is True, v.detail
    assert checks.timer_resolution(required_s=1e-12).passed is False
    with pytest.raises(ValueError, match="required_s"):
        checks.timer_resolution(required_s=float("nan"))
    with open_backend(written_file) as b:
        assert checks.queue_depth_one(b).passed is True
    assert checks.queue_depth_one(object()).passed is None


def test_repeatability_verdict():
    rng = np.random.default_rng(0)
    base = rng.uniform(50e-6, 70e-6, 200)
    steady = [base * rng.normal(1, 0.02, 200) for _ in range(4)]
    assert checks.repeatability(steady).passed is True
    drifting = [base * f for f in (1.0, 1.5, 2.0)]
    verdict = checks.repeatability(drifting)
    assert verdict.passed is False and "CV" in verdict.detail
    with pytest.raises(ValueError, match="samples_by_repeat"):
        checks.repeatability([base])
    with pytest.raises(ValueError, match="samples_by_repeat"):
        checks.repeatability([base, np.full(3, np.nan)])


def test_io_error_carries_the_offset():
    err = DeviceIOError("/dev/x", 12288, 4096, OSError(5, "Input/output error"))
    assert isinstance(err, OSError) and isinstance(err, BackendError)
    assert "offset_bytes=12288" in str(err) and "EIO" in str(err)


# --------------------------------------------------------------------------- loop devices


@pytest.mark.integration
@pytest.mark.slow
def test_loop_device_backend_reads_and_checks(loops, written_file):
    dev = loops.attach(written_file)
    with open_backend(dev) as b:
        assert b.kind == "block" and b.size_bytes == 32 * MiB
        assert b.backing_file == str(written_file.resolve())
        before = checks.read_device_stat(dev)
        t = b.read_many(np.random.default_rng(3).integers(0, b.size_bytes // 4096, 300) * 4096, 4096)
        after = checks.read_device_stat(dev)
        assert 1e-6 < np.median(t) < 0.1
    assert before is not None and before.device == os.path.basename(dev)
    assert checks.reads_reached_device(before, after, 300).passed is True
    assert checks.written_data(dev).passed is True


@pytest.mark.integration
@pytest.mark.slow
def test_loop_device_without_direct_io_is_refused(loops, written_file):
    dev = loops.attach(written_file, direct_io=False)
    with pytest.raises(LoopBufferedError, match="direct-io=on"):
        open_backend(dev)


@pytest.mark.integration
@pytest.mark.slow
def test_loop_device_over_sparse_file_is_refused(loops, tmp_path):
    path = tmp_path / "sparse.img"
    with open(path, "wb") as f:
        f.truncate(16 * MiB)
    dev = loops.attach(path)
    with pytest.raises(UnwrittenDataError, match="return zeros without any I/O"):
        open_backend(dev)
    assert checks.written_data(dev).passed is False


@pytest.mark.integration
@pytest.mark.slow
def test_mounted_loop_device_is_refused_as_busy(loops, tmp_path):
    image = write_random_file(tmp_path / "fs.img", 16 * MiB, seed=6)
    dev = loops.attach(image)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "nodiscard", dev], check=True, capture_output=True)
    mnt = loops.mount(dev, tmp_path / "mnt")
    with pytest.raises(DeviceBusyError, match="busy") as info:
        open_backend(dev)
    assert f"{dev} is mounted on {mnt.resolve()}" in str(info.value)
    loops.umount(mnt)
    # Free again once unmounted: no longer busy. mkfs may have zeroed ranges with WRITE_ZEROES,
    # which the loop driver turns into unwritten extents of the backing file: then the honest
    # answer is the holes refusal.
    try:
        with open_backend(dev) as b:
            assert b.read(0, b.block_size_bytes) > 0
    except UnwrittenDataError as exc:
        assert "return zeros without any I/O" in str(exc)


@pytest.mark.integration
@pytest.mark.slow
def test_swap_loop_device_is_refused_as_busy(loops, tmp_path):
    require_tools("mkswap", "swapon", "swapoff")
    from diskmodel.calibrate.harness.probe import probe

    image = write_random_file(tmp_path / "swap.img", 16 * MiB, seed=8)
    dev = loops.attach(image)
    loops.swapon(dev)
    (d,) = probe(dev, source="sysfs").devices
    assert d.swap and d.swap_via == (os.path.basename(dev),) and not d.mounted and d.in_use
    with pytest.raises(DeviceBusyError, match=f"{dev} is in use as swap"):
        open_backend(dev)


def test_a_passing_repeatability_puts_its_requirement_beside_the_figure_it_judges():
    # repeats whose medians agree while single timings scatter widely (as rotation makes them):
    # the verdict passes, and the large per-point CV is not printed as if it were required <= 0.1
    rng = np.random.default_rng(1)
    scattered = [rng.permutation(np.linspace(2e-3, 10e-3, 400)) for _ in range(3)]
    verdict = checks.repeatability(scattered)
    assert verdict.passed is True
    judged, _, shown = verdict.detail.partition(";")
    assert "CV of medians 0.000 (required <= 0.1)" in judged
    assert "median per-point CV" in shown and "not judged" in shown and "required" not in shown
