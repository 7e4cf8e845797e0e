"""Shared fixtures.

Integration tests need real tools (loop devices, mkfs, postmark, fio, qemu) and
root. Where one is missing they skip with the reason, except when
``DISKMODEL_REQUIRE_INTEGRATION=1`` (set by .ci/run): then a missing tool fails
the run, so CI can never pass by skipping what it was meant to test.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_DISKSIM = REPO_ROOT / "data" / "disksim"
REQUIRE_INTEGRATION = os.environ.get("DISKMODEL_REQUIRE_INTEGRATION") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip with *reason*, or fail when the environment demands integration tests."""
    if REQUIRE_INTEGRATION:
        pytest.fail(f"DISKMODEL_REQUIRE_INTEGRATION=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def require_tools(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        skip_or_fail(f"missing tools: {', '.join(missing)}")


def require_root() -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root (loop devices, mounts)")


def wait_for(cond, timeout_s: float, what: str, *, poll_s: float = 0.02):
    """Poll *cond* until it returns something true, and return that; AssertionError naming *what* after *timeout_s*."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        value = cond()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.fixture(scope="session")
def disksim_dir() -> Path:
    """data/disksim, DiskSim's measured drives as the package ships them."""
    assert BUNDLED_DISKSIM.is_dir(), f"the bundled DiskSim data {BUNDLED_DISKSIM} is missing from the checkout"
    return BUNDLED_DISKSIM


@pytest.fixture
def loops(request):
    """Loop devices and mounts made by a test, torn down (and checked gone) even when it fails."""
    from _loopdev import LoopDevices

    require_root()
    require_tools("losetup", "mount", "umount", "mkfs.ext4")
    manager = LoopDevices()
    request.addfinalizer(manager.teardown)
    return manager
