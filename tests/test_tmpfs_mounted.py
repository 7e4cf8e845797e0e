"""The pace's tmpfs: mounted where the run recorded it, gone after the body, also after an error in it, and a
refused mount named in one line with nothing left. Checked against the kernel's own mount table."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import require_root


def _mounted(path: Path) -> str | None:
    """The file system type mounted on *path* (from /proc/self/mounts), or None."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, kind, *_ = line.split()
        if where == str(path):
            return kind
    return None


@pytest.fixture
def run(tmp_path, monkeypatch):
    """A run of its own (its state under *tmp_path*), as root."""
    require_root()
    from diskmodel.calibrate.harness import runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    with runstate.ensure_run("test") as run:
        yield run


@pytest.mark.integration
@pytest.mark.slow
def test_a_tmpfs_is_mounted_for_the_body_and_gone_after(run):
    from diskmodel.calibrate.bench.tmpfs import tmpfs_mounted

    with tmpfs_mounted(run, 8 << 20) as where:
        assert _mounted(where) == "tmpfs"
        (where / "f").write_bytes(b"x" * 4096)
        assert any(r.kind == "mount" and r.details.get("mountpoint") == str(where) for r in run.resources)
    assert _mounted(where) is None
    assert [r.state for r in run.resources if r.details.get("mountpoint") == str(where)] == ["removed"]
    with pytest.raises(ZeroDivisionError):
        with tmpfs_mounted(run, 8 << 20) as again:
            assert _mounted(again) == "tmpfs"
            1 / 0
    assert _mounted(again) is None


@pytest.mark.integration
@pytest.mark.slow
def test_a_refused_mount_is_one_line_and_leaves_nothing(run):
    from diskmodel.calibrate.bench.tmpfs import tmpfs_mounted

    # a size tmpfs refuses: mount fails, and its record is marked absent
    with pytest.raises(RuntimeError) as caught:
        with tmpfs_mounted(run, -1):
            pass
    message = str(caught.value)
    assert "tmpfs cannot be mounted" in message and "\n" not in message
    (record,) = [r for r in run.resources if r.kind == "mount"]
    assert _mounted(Path(record.details["mountpoint"])) is None and record.state != "created"
