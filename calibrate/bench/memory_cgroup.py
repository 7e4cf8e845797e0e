"""Cache control and memory limits for benchmark runs: drop the page cache, a throwaway memory cgroup."""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path

__all__ = ["drop_caches", "MemoryCgroup"]


def drop_caches() -> None:
    """``sync``, then drop the page cache, dentries and inodes (/proc/sys/vm/drop_caches = 3)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
    except OSError as exc:
        raise PermissionError(f"cannot drop caches (/proc/sys/vm/drop_caches): {exc}; run as root") from exc


class MemoryCgroup:
    """A throwaway memory cgroup with a hard limit, v2 or v1, whichever this machine has.

    v2: a unified hierarchy whose cgroup.controllers lists ``memory``
    (/sys/fs/cgroup or /sys/fs/cgroup/unified); limit in ``memory.max``.
    v1: /sys/fs/cgroup/memory; limit in ``memory.limit_in_bytes``.
    The cgroup is made on entering and removed on leaving (and by
    :meth:`remove`, which may be called again).
    """

    V2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
    V1_ROOT = Path("/sys/fs/cgroup/memory")
    PREFIX = "diskmodel-postmark-"

    def __init__(self, limit_bytes: int, *, name: str | None = None):
        if not isinstance(limit_bytes, int) or isinstance(limit_bytes, bool) or limit_bytes <= 0:
            raise ValueError(f"memory_limit_bytes must be a positive int, got {limit_bytes!r}")
        if limit_bytes < 16 * (1 << 20):
            raise ValueError(f"memory_limit_bytes must be >= 16 MiB for postmark to run; got {limit_bytes}")
        self.limit_bytes = limit_bytes
        self.version, self.root = self._detect()
        self.path = self.root / (name or f"{self.PREFIX}{os.getpid()}-{time.monotonic_ns()}")

    @classmethod
    def _detect(cls) -> tuple[int, Path]:
        for root in cls.V2_ROOTS:
            ctl = root / "cgroup.controllers"
            try:
                if "memory" in ctl.read_text().split():
                    return 2, root
            except OSError:
                continue
        if (cls.V1_ROOT / "memory.limit_in_bytes").exists():
            return 1, cls.V1_ROOT
        raise RuntimeError("no memory cgroup controller: neither cgroup v2 with 'memory' in "
                           "cgroup.controllers nor /sys/fs/cgroup/memory (v1) is available")

    @classmethod
    def detect_version(cls) -> int:
        return cls._detect()[0]

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def create(self) -> "MemoryCgroup":
        from diskmodel.calibrate.harness import runstate
        run = runstate.current_run()
        self._resource = run.intend("cgroup", path=str(self.path)) if run is not None else None
        if self.version == 2:
            sub = self.root / "cgroup.subtree_control"
            if "memory" not in sub.read_text().split():
                sub.write_text("+memory")
            self.path.mkdir()
            (self.path / "memory.max").write_text(str(self.limit_bytes))
            try:
                (self.path / "memory.swap.max").write_text("0")
            except OSError:
                pass
        else:
            self.path.mkdir()
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
            got = int((self.path / "memory.limit_in_bytes").read_text())
            if abs(got - self.limit_bytes) > 4096:
                self.remove()
                raise RuntimeError(f"cgroup v1 took limit {got} instead of {self.limit_bytes}")
        return self

    def oom_kills(self) -> int:
        try:
            if self.version == 2:
                for line in (self.path / "memory.events").read_text().splitlines():
                    k, v = line.split()
                    if k == "oom_kill":
                        return int(v)
            else:
                for line in (self.path / "memory.oom_control").read_text().splitlines():
                    k, v = line.split()
                    if k == "oom_kill":
                        return int(v)
        except OSError:
            pass
        return 0

    def peak_bytes(self) -> int | None:
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            try:
                return int((self.path / name).read_text())
            except (OSError, ValueError):
                continue
        return None

    def _removed(self) -> None:
        from diskmodel.calibrate.harness import runstate
        run, res = runstate.current_run(), getattr(self, "_resource", None)
        if run is not None and res is not None:
            run.absent(res)

    def remove(self) -> None:
        """Remove the cgroup (its processes must have exited). Idempotent."""
        for attempt in range(50):
            try:
                self.path.rmdir()
                self._removed()
                return
            except FileNotFoundError:
                self._removed()
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                time.sleep(0.1)
        raise RuntimeError(f"cannot remove cgroup {self.path}: still busy")

    def __enter__(self) -> "MemoryCgroup":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.remove()
