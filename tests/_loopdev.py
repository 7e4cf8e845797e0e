"""Loop devices and mounts for integration tests, always torn down.

``LoopDevices`` attaches loop devices and mounts file systems, remembers every
one, and in ``teardown()`` unmounts and detaches them all, then asserts that
``losetup -l`` lists none of them and /proc/self/mountinfo none of the mounts.
Use it through a fixture with a finalizer, so teardown runs when a test fails.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np
from diskmodel.model.units import MIB as MiB


def write_random_file(path: Path, size_bytes: int, seed: int = 0) -> Path:
    """A fully written file of random bytes (fsync'ed), so it has no holes or unwritten extents."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        left = size_bytes
        while left:
            n = min(left, 8 * MiB)
            f.write(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
            left -= n
        f.flush()
        os.fsync(f.fileno())
    return path


def write_mbr(path: Path, partitions: list[tuple[int, int]]) -> None:
    """Write an MBR partition table: PARTITIONS are (start_bytes, size_bytes), 512-byte aligned, type 0x83."""
    entries = bytearray(64)
    for i, (start, size) in enumerate(partitions):
        assert start % 512 == 0 and size % 512 == 0
        e = bytearray(16)
        e[4] = 0x83
        e[8:12] = (start // 512).to_bytes(4, "little")
        e[12:16] = (size // 512).to_bytes(4, "little")
        entries[16 * i : 16 * i + 16] = e
    with open(path, "r+b") as f:
        f.seek(446)
        f.write(bytes(entries) + b"\x55\xaa")
        f.flush()
        os.fsync(f.fileno())


def _losetup_list() -> list[tuple[str, str]]:
    out = subprocess.run(
        ["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True, check=True
    ).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split(None, 1)
        if parts:
            rows.append((parts[0], parts[1].strip() if len(parts) > 1 else ""))
    return rows


class LoopDevices:
    def __init__(self) -> None:
        self.loops: list[tuple[str, str]] = []  # (device, backing file)
        self.mounts: list[str] = []
        self.swaps: list[str] = []

    def attach(self, backing: Path, *, direct_io: bool = True, partscan: bool = False) -> str:
        cmd = ["losetup", "-f", "--show", f"--direct-io={'on' if direct_io else 'off'}"]
        if partscan:
            cmd.append("-P")
        dev = subprocess.run(cmd + [str(backing)], capture_output=True, text=True, check=True).stdout.strip()
        self.loops.append((dev, str(Path(backing).resolve())))
        return dev

    def mount(self, device: str, mount_point: Path) -> Path:
        mount_point.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", device, str(mount_point)], check=True, capture_output=True)
        self.mounts.append(str(mount_point.resolve()))
        return mount_point

    def umount(self, mount_point: Path) -> None:
        subprocess.run(["umount", str(mount_point)], check=True, capture_output=True)
        self.mounts.remove(str(mount_point.resolve()))

    def swapon(self, device: str) -> None:
        subprocess.run(["mkswap", device], check=True, capture_output=True)
        self.swaps.append(device)
        subprocess.run(["swapon", device], check=True, capture_output=True)

    def teardown(self) -> None:
        errors = []
        for dev in reversed(self.swaps):
            subprocess.run(["swapoff", dev], capture_output=True)
        for mp in reversed(self.mounts):
            if subprocess.run(["umount", mp], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", mp], capture_output=True)
        for dev, _ in reversed(self.loops):
            for _attempt in range(20):
                if subprocess.run(["losetup", "-d", dev], capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
            else:
                errors.append(f"could not detach {dev}")
        ours = {b for _, b in self.loops}
        left = [(d, b) for d, b in _losetup_list() if b.removesuffix(" (deleted)") in ours]
        mountinfo = Path("/proc/self/mountinfo").read_text()
        left_mounts = [mp for mp in self.mounts if f" {mp} " in mountinfo]
        assert not errors and not left, f"loop devices left behind: {left} {errors}"
        assert not left_mounts, f"mounts left behind: {left_mounts}"
        active = [line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:] if line.strip()]
        left_swaps = [dev for dev in self.swaps if dev in active]
        assert not left_swaps, f"swap areas left active: {left_swaps}"
