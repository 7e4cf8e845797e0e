"""A fio job's offsets lie in its region, the first ``--size`` bytes of the target, however large the device:
a random job covers each block of the region once, in random order; ``--io_size`` moves more or fewer bytes
over the same region.

Reference: fio itself, its ``--write_iolog`` of the same job on a 1 GiB file (fio(1), "size", "io_size",
"norandommap").
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from diskmodel.model.predictions.block_workloads import FioJob
from diskmodel.model.predictions.results import block_job_stream

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def _model_offsets(job: FioJob, device_bytes: int = GIB) -> np.ndarray:
    """The offsets of the job's reads or writes (not of its closing flush)."""
    from diskmodel.model.iopath.stream import Op

    s = block_job_stream(job, device_bytes)
    return s.offset_bytes[s.op != Op.FLUSH]


def test_a_random_job_reads_each_block_of_its_region_once():
    offsets = _model_offsets(FioJob("randread", 4 * KIB, 4 * MIB))
    assert sorted(offsets.tolist()) == list(range(0, 4 * MIB, 4 * KIB))
    assert not np.all(np.diff(offsets) > 0)  # in random order


def test_io_size_spreads_the_same_bytes_over_a_larger_region():
    offsets = _model_offsets(FioJob("randwrite", 4 * KIB, 4 * MIB, region_bytes=GIB))
    assert offsets.size == 1024 and np.unique(offsets).size == 1024
    assert offsets.max() < GIB and offsets.max() > GIB // 2 and np.all(offsets % (4 * KIB) == 0)


def test_a_job_moving_more_than_its_region_goes_over_it_again():
    seq = _model_offsets(FioJob("read", 64 * KIB, 1 * MIB, region_bytes=256 * KIB))
    assert seq.tolist() == [i * 64 * KIB % (256 * KIB) for i in range(16)]
    rand = _model_offsets(FioJob("randread", 64 * KIB, 1 * MIB, region_bytes=256 * KIB))
    for p in range(4):  # each pass a permutation of the region's four blocks
        assert sorted(rand[4 * p:4 * p + 4].tolist()) == [0, 64 * KIB, 128 * KIB, 192 * KIB]


def test_a_region_larger_than_the_device_is_one_line():
    with pytest.raises(ValueError, match=r"^size_bytes: the job works in a region of 2147483648 bytes, more than "
                                         r"the device's 1073741824$"):
        block_job_stream(FioJob("randread", 4 * KIB, MIB, region_bytes=2 * GIB), GIB)


def _fio_offsets(tmp_path, job: FioJob) -> np.ndarray:
    target = tmp_path / "target.img"
    with open(target, "wb") as f:
        f.truncate(GIB)
    log = tmp_path / "iolog"
    argv = ["fio", *job.fio_arguments(str(target)), "--randrepeat=1", f"--write_iolog={log}",
            "--output=/dev/null"]
    assert "--direct=1" in argv
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in log.read_text().splitlines()[1:]]
    kind = "write" if job.is_write else "read"
    return np.array([int(r[3]) for r in rows if len(r) == 5 and r[2] == kind], dtype=np.int64)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("job", [FioJob("randread", 4 * KIB, 4 * MIB),
                                 FioJob("randread", 4 * KIB, 4 * MIB, region_bytes=GIB),
                                 FioJob("randwrite", 64 * KIB, 2 * MIB, end_fsync=False),
                                 FioJob("read", 64 * KIB, MIB)])
def test_the_offsets_are_those_fio_itself_issues(tmp_path, job):
    from conftest import require_tools

    require_tools("fio")
    fio, model = _fio_offsets(tmp_path, job), _model_offsets(job)
    assert fio.size == model.size == job.size_bytes // job.block_size_bytes
    assert fio.max() < job.region and model.max() < job.region
    assert np.unique(fio).size == fio.size and np.unique(model).size == model.size  # no block twice
    if job.region == job.size_bytes:
        assert sorted(fio.tolist()) == sorted(model.tolist())  # the whole region, block by block
    else:  # spread over the region alike: both reach its last quarter and its first
        assert min(fio.max(), model.max()) > job.region * 3 // 4 and max(fio.min(), model.min()) < job.region // 4
    if job.sequential:
        assert fio.tolist() == model.tolist()
