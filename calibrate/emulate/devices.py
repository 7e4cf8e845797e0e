"""Emulated drives as real block devices: :func:`emulated_drives`.

For each drive, in a folder of the run's work folder
(:meth:`~diskmodel.calibrate.harness.runstate.Run.work_dir`):

1. the data's sparse backing file (a drive larger than :data:`~diskmodel.calibrate.emulate.server.MEMORY_MAX_BYTES`;
   smaller ones keep their data in memory), in *backing_dir* if given;
2. ``nbdkit`` serving the drive on a unix socket, with the plugin :mod:`diskmodel.calibrate.emulate._nbd_plugin`;
3. ``nbdfuse`` exposing the NBD export as the file ``fuse/nbd`` on a FUSE mount;
4. ``losetup --direct-io=on --find --show`` on that file: the device, its read-ahead set to a disk's, the
   kernel's default 128 KiB, and its request limit to a disk's (:mod:`diskmodel.calibrate.harness.queue_defaults`).

Each is recorded in the run's state before it is created (processes as they are forked, with the signals
held) and torn down in reverse, checked gone, on success, failure, SIGINT and SIGTERM; ``diskmodel cleanup``
removes them after a SIGKILL (the kernel kills nbdkit and nbdfuse with their parent: ``PR_SET_PDEATHSIG``).
A file system still mounted on an emulated device at teardown is named and unmounted before the device goes.

Once a device is attached, its path's cost (loop, FUSE, nbdfuse, NBD and the
plugin's own work) is measured with O_DIRECT reads of :data:`PROBE_BYTES` served
:data:`PROBE_DELAY_S` after they reach the server, each size read until its
median is known to :data:`PROBE_TOLERANCE` of its cost (at most
:data:`PROBE_READS` reads in all): its cost at each size, read between the
sizes for a request's, taken off every request's deadline from then on
(:mod:`diskmodel.calibrate.emulate.server`); then each leg's change with the path's idle time and the
request's hold (:func:`~diskmodel.calibrate.emulate.path_probe.measure_shape`). A CPU latency request of
:data:`CPU_LATENCY_US` is held from the start to the teardown (:mod:`~diskmodel.calibrate.harness.pmqos`).

Every command is an argument vector; nothing goes through a shell.
"""
from __future__ import annotations

import contextlib
import json
import math
import logging
import mmap
import os
import shutil
import signal
import site
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from diskmodel.calibrate.emulate import path_probe
from diskmodel.calibrate.emulate.drives import DriveSpec, resolve_drive
from diskmodel.calibrate.emulate.requestlog import read_log, summarize
from diskmodel.calibrate.emulate.server import MEMORY_MAX_BYTES
from diskmodel.calibrate.harness.heap import collector_paused
from diskmodel.calibrate.harness.queue_defaults import set_disk_defaults

__all__ = ["DEFAULT_REALTIME_PRIORITY", "EmulatedDevice", "LATENESS_P99_BOUND_S", "PROBE_READS", "check_tools",
           "emulated_drives", "realtime_or_note"]

log = logging.getLogger(__name__)

PLUGIN = Path(__file__).resolve().with_name("_nbd_plugin.py")
#: The SCHED_FIFO priority every process and thread of the emulated path runs at unless told otherwise
#: (sched(7)): above every process at the normal policy, whose time slices would otherwise delay each
#: request's wake-ups on a busy host, and below the kernel's own interrupt threads (50 and up).
DEFAULT_REALTIME_PRIORITY = 40
#: The lateness p99 above which a run warns that requests completed later than simulated [s].
LATENESS_P99_BOUND_S = 0.5e-3
#: O_DIRECT reads (of :data:`PROBE_BYTES` in turn) that measure the path's cost at most (the first quarter of
#: each size's warm it up).
PROBE_READS = 250
#: A size is read until the 95 % confidence interval of its median (distribution-free: between the order
#: statistics the binomial law puts around it; Conover, Practical Nonparametric Statistics, 3rd ed., sec. 3.2) is
#: within this fraction of the path's cost at that size either side, or :data:`PROBE_READS` are spent: a quiet
#: host settles in a few reads a size, a busy one reads on as long as its noise needs. The fraction is about
#: what the fixed count of reads this rule replaced gave on a busy host (docs/benchmarks.md, the emulated
#: path's probe), so that the cost taken off is known as well as before and no worse where the host is loaded.
PROBE_TOLERANCE = 0.05
#: Reads of each size before its interval is first looked at (a quarter of them warm-up).
PROBE_MIN_READS_PER_SIZE = 12
#: The confidence of the median's interval :data:`PROBE_TOLERANCE` bounds.
PROBE_CONFIDENCE = 0.95
#: The sizes of the probe reads [bytes]: the path's cost grows with the bytes copied, not in proportion
#: (a traced drive's requests are mostly 0.5-64 KiB), so it is measured at each and read between them.
PROBE_BYTES = (512, 4096, 16384, 65536, 131072)
#: Which of the probe reads' times is the path's fixed cost [percentile]: the median, so that a request
#: completes, as its caller sees it, as often before its simulated time as after it (other processes only
#: ever add to a read's time; the fastest would leave every request late by the path's typical noise).
FIXED_COST_PERCENTILE = 50
#: Each probe read is served this long after it reaches the server, about a mechanical drive's service: the
#: path's threads sleep meanwhile, as they do while a drive serves a request, and the longer they sleep the
#: longer they take to carry the completion back (other processes have run on their CPUs meanwhile) [s].
PROBE_DELAY_S = 5e-3
#: The path is left idle this long before each probe read, as between one completion and the next arrival
#: of a host's requests, so that the request's way in is measured as it then is, not warm [s].
PROBE_GAP_S = 20e-3
#: The CPU latency request (PM QoS, :mod:`~diskmodel.calibrate.harness.pmqos`) held while the drives are
#: started and served [us]: at zero no idle CPU halts, so a thread of the path that slept wakes as fast
#: whether the host is busy or idle and however long it slept; on a virtual machine a halted vCPU's
#: wake-up goes through the hypervisor and grows the path's legs with the time the path sat idle.
CPU_LATENCY_US = 0
#: How long nbdkit may take to load the drive's simulation (and compile it on a first run) [s].
READY_TIMEOUT_S = 600.0
#: How long nbdfuse may take to mount, and a process to exit once asked [s].
MOUNT_TIMEOUT_S, EXIT_TIMEOUT_S = 30.0, 20.0
#: A backing file system must have at least this much free (or the drive's capacity, if smaller) [bytes].
BACKING_RESERVE_BYTES = 256 << 20
FUSE_DEVICE = "/dev/fuse"
#: The programs an emulated drive needs; their packages: ``harness.tools.DEBIAN_PACKAGES``.
TOOLS = ("nbdkit", "nbdfuse", "fusermount3", "losetup", "umount", "findmnt", "lsblk")


@dataclass
class EmulatedDevice:
    """One emulated drive as a block device.

    ``summary`` (the request log's :func:`~diskmodel.calibrate.emulate.requestlog.summarize`)
    is filled in at teardown; ``log_path`` is where the request log was
    written (kept only with *log_dir*).
    """

    drive: str
    path: str | None
    size_bytes: int
    log_path: str
    timing: str | None = None
    fixed_cost_s: float | None = None
    summary: dict | None = None
    #: the sparse file holding the data (None: in memory)
    backing_path: str | None = None
    #: the file nbdfuse exposes, which the loop device is attached to: the same drive one hop nearer (no loop
    #: worker thread, no block-layer completion), for O_DIRECT requests that need no block device
    file_path: str | None = None
    _processes: tuple = field(default=(), repr=False)

    def as_dict(self) -> dict:
        return {"drive": self.drive, "path": self.path, "size_bytes": self.size_bytes}

    def check_serving(self) -> None:
        """RuntimeError if nbdkit or nbdfuse, which serve the device, has exited."""
        for name, proc in self._processes:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} serving {self.drive} ({self.path}) exited with status {proc.returncode}; "
                                   f"the device no longer works")


@dataclass
class _Drive:
    spec: DriveSpec
    folder: Path
    device: EmulatedDevice
    resources: list = field(default_factory=list)
    nbdkit: subprocess.Popen | None = None
    nbdfuse: subprocess.Popen | None = None
    loop_res: object = None
    mount_res: object = None


def check_tools() -> None:
    """RuntimeError naming the missing tool and its Debian package, or root, or /dev/fuse."""
    if os.geteuid() != 0:
        raise RuntimeError("emulated drives need root (loop devices and a FUSE mount); run as root")
    from diskmodel.calibrate.harness.tools import DEBIAN_PACKAGES

    for tool in TOOLS:
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed (Debian package {DEBIAN_PACKAGES[tool]}); emulated drives "
                               f"need it")
    proc = subprocess.run(["nbdkit", "--dump-plugin", "python"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError("nbdkit's Python plugin is not installed (Debian package nbdkit-plugin-python): "
                           + (proc.stderr.strip().splitlines() or ["nbdkit --dump-plugin python failed"])[-1])
    try:
        fuse = os.stat(FUSE_DEVICE)
    except FileNotFoundError:
        raise RuntimeError(f"{FUSE_DEVICE} is missing: the kernel's fuse module is not loaded (modprobe fuse; "
                           f"Debian package fuse3)") from None
    if not stat.S_ISCHR(fuse.st_mode):
        raise RuntimeError(f"{FUSE_DEVICE} is not a character device (Debian package fuse3; modprobe fuse)")


def realtime_or_note(priority: int | None, say) -> int | None:
    """*priority* if this process may run threads under SCHED_FIFO (tried on the calling thread and put
    back), else None after one line through *say* naming why (the path then runs at the normal policy and
    its requests complete later on a busy host). None stays None."""
    from diskmodel.calibrate.emulate.server import realtime

    if priority is None:
        return None
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 99:
        raise ValueError(f"--realtime-priority must be a whole number from 1 to 99 (got {priority!r})")
    try:
        with realtime(priority):
            pass
    except PermissionError as exc:
        say(f"note: the emulated drives run at the normal scheduling policy, not SCHED_FIFO {priority} "
            f"({exc.strerror}: needs root or RLIMIT_RTPRIO); on a busy host their requests complete later than "
            f"simulated (--no-realtime says this is wanted)")
        return None
    return priority


def _check_backing_dir(backing_dir: Path, specs: list[DriveSpec]) -> None:
    if not backing_dir.is_dir():
        raise ValueError(f"--backing-dir {backing_dir}: not a directory")
    need = sum(min(s.capacity_bytes, BACKING_RESERVE_BYTES) for s in specs if s.capacity_bytes > MEMORY_MAX_BYTES)
    vfs = os.statvfs(backing_dir)
    free = vfs.f_bavail * vfs.f_frsize
    if free < need:
        raise ValueError(f"--backing-dir {backing_dir}: its file system has {free} bytes free, too small for the "
                         f"emulated drives' data (at least {need} bytes: each sparse backing file grows as its "
                         f"drive is written, up to the drive's capacity); choose a larger file system")


def _sys_path() -> list[str]:
    """Package folders of this interpreter for the plugin's (the system's) Python: site folders only."""
    paths = list(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        paths.append(site.getusersitepackages())
    paths += [p for p in sys.path if "site-packages" in p]
    return [p for p in dict.fromkeys(paths) if os.path.isdir(p)]


def _tail(path: Path, lines: int = 3) -> str:
    with contextlib.suppress(OSError):
        text = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
        return "; ".join(text[-lines:])
    return ""


def _wait_for(cond, timeout_s: float, proc: subprocess.Popen, what: str, errlog: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before it was ready: "
                               f"{_tail(errlog) or 'no message'}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} was not ready after {timeout_s:g} s: {_tail(errlog) or 'no message'}")
        time.sleep(0.02)


def _pidfile_written(path: Path):
    return lambda: path.exists() and path.stat().st_size > 0


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    """Run *argv* (no shell) as :func:`~diskmodel.calibrate.bench.process.spawn` does: recorded in the run,
    in a process group of its own that an interrupt or a timeout kills whole (a tool's own children too)."""
    from diskmodel.calibrate.bench import process

    return process.run(argv, timeout_s=120)


def _socket_path(dir_fd: int) -> str:
    # A unix socket's path must fit in 108 bytes; the run's folder may be deeper. Both nbdkit and nbdfuse
    # inherit the folder's descriptor and reach the socket through it.
    return f"/proc/self/fd/{dir_fd}/nbd.sock"


def _start_nbdkit(run, drv: _Drive, backing_dir: Path | None, log_dir: Path | None, index: int,
                  dir_fd: int, realtime_priority: int | None) -> None:
    from diskmodel.calibrate.bench.process import spawn

    spec, folder = drv.spec, drv.folder
    backing = None
    if spec.capacity_bytes > MEMORY_MAX_BYTES:
        backing = (backing_dir or folder) / f"diskmodel-emulated-{run.run_id}-{index}.img"
        res = run.intend("file", path=str(backing), not_before=time.time())
        drv.resources.append(res)
        fd = os.open(backing, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, spec.capacity_bytes)  # sparse: no block is allocated until written
            st = os.fstat(fd)
        finally:
            os.close(fd)
        run.created(res, ino=st.st_ino, dev=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
        drv.device.backing_path = str(backing)
    log_path = (log_dir / f"{_safe(spec.name)}-{index}.reqlog") if log_dir else folder / "requests.reqlog"
    drv.device.log_path = str(log_path)
    spec_path = folder / "spec.json"
    spec_path.write_text(json.dumps({**spec.as_dict(), "backing": str(backing) if backing else None,
                                     "log_path": str(log_path), "control_path": str(folder / "control.json"),
                                     "probe_delay_s": PROBE_DELAY_S, "realtime_priority": realtime_priority,
                                     "sys_path": _sys_path()}))
    pidfile, errlog = folder / "nbdkit.pid", folder / "nbdkit.log"
    with open(errlog, "wb") as err:
        drv.nbdkit = spawn(["nbdkit", "--foreground", "--exit-with-parent", "--unix", _socket_path(dir_fd),
                            "--pidfile", str(pidfile), "python", str(PLUGIN), f"spec={spec_path}"],
                           name="nbdkit", stdin=subprocess.DEVNULL, stdout=err, stderr=err, pass_fds=(dir_fd,))
    drv.resources.append(drv.nbdkit._diskmodel_resource)  # noqa: SLF001 - spawn's record of it
    what = f"nbdkit serving {spec.name}"
    if spec.timing.get("kind") != "flat":
        what += " (its simulation is compiled on its first use, which takes minutes; later runs reuse it)"
    _wait_for(_pidfile_written(pidfile), READY_TIMEOUT_S, drv.nbdkit, what, errlog)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "drive"


def _start_nbdfuse(run, drv: _Drive, dir_fd: int, realtime_priority: int | None) -> Path:
    from diskmodel.calibrate.bench.process import spawn
    from diskmodel.calibrate.harness import devstate

    folder = drv.folder
    mountpoint = folder / "fuse"
    mountpoint.mkdir()
    drv.mount_res = run.intend("mount", mountpoint=str(mountpoint))
    drv.resources.append(drv.mount_res)
    pidfile, errlog = folder / "nbdfuse.pid", folder / "nbdfuse.log"
    with open(errlog, "wb") as err:
        # real-time, nbdfuse passes one FUSE request at a time (measured), so a request queued on the host
        # reaches the drive once the last completed; in the VM (qemu's NBD client) the drive queues it
        chrt = ["chrt", "--fifo", str(realtime_priority)] if realtime_priority else []
        drv.nbdfuse = spawn([*chrt, "nbdfuse", "-C", "1", "-P", str(pidfile), str(mountpoint / "nbd"),
                             "--unix", _socket_path(dir_fd)],
                            name="nbdfuse", stdin=subprocess.DEVNULL, stdout=err, stderr=err, pass_fds=(dir_fd,))
    drv.resources.append(drv.nbdfuse._diskmodel_resource)  # noqa: SLF001
    _wait_for(_pidfile_written(pidfile), MOUNT_TIMEOUT_S, drv.nbdfuse, f"nbdfuse exposing {drv.spec.name}", errlog)
    if not devstate.mounted_at(str(mountpoint)):
        raise RuntimeError(f"nbdfuse said it was ready but nothing is mounted on {mountpoint}")
    run.created(drv.mount_res)
    return mountpoint / "nbd"


def _attach_loop(run, drv: _Drive, file: Path) -> str:
    from diskmodel.calibrate.harness import devstate

    st = os.stat(file)
    if st.st_size != drv.spec.capacity_bytes:
        raise RuntimeError(f"nbdfuse shows {file} with {st.st_size} bytes, not the drive's {drv.spec.capacity_bytes}")
    # Found again by the backing file's path alone (it names the run; once nbdfuse is gone, losetup cannot stat
    # the file). unmount_users: a file system left mounted on the device is unmounted before the device goes,
    # also by `diskmodel cleanup` after a SIGKILL (the kernel would otherwise keep the device with I/O errors).
    drv.loop_res = run.intend("loop", backing=os.path.realpath(file), offset_bytes=0, unmount_users=True)
    drv.resources.append(drv.loop_res)
    proc = _run(["losetup", "--direct-io=on", "--find", "--show", str(file)])
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"losetup --direct-io=on --find --show {file} failed: "
                           f"{proc.stderr.strip() or f'status {proc.returncode}'}")
    device = proc.stdout.strip().splitlines()[-1]
    run.created(drv.loop_res, device=device)
    info = devstate.loop_device(device)
    if info is None or str(info.get("dio")).lower() not in ("1", "true"):
        # Without direct I/O the loop device would cache the emulated drive's data in the page cache
        # a second time, and serve reads the drive never sees.
        raise RuntimeError(f"{device} over {file} runs without direct I/O (losetup --direct-io=on was not honoured)")
    set_disk_defaults(device)   # a disk's queue, not what the loop number's last use left
    return device


def _median_interval(n: int) -> tuple[int, int]:
    """The ranks (0-based, ``(low, n - 1 - low)``) of the order statistics of *n* times that hold their
    median with probability at least :data:`PROBE_CONFIDENCE`: the median lies between ranks l and u when B,
    the count of times below it (Binomial(n, 1/2)), is from l + 1 to u, so ``low`` is the largest k with
    P(B <= k) <= (1 - confidence) / 2, by the exact binomial sums (Conover, sec. 3.2); -1 where none is."""
    tail = (1 - PROBE_CONFIDENCE) / 2 * 2 ** n
    low, below = -1, 0
    while low + 1 < n and below + math.comb(n, low + 1) <= tail:
        below += math.comb(n, low + 1)
        low += 1
    return low, n - 1 - low


def _probe_cost(seen: list[float]) -> tuple[float, float]:
    """``(cost, half_width)`` of one size's probe times *seen*, in the order read: the
    :data:`FIXED_COST_PERCENTILE` of the times after the first quarter (which warms the path up) less
    :data:`PROBE_DELAY_S`, and half the width of the median's :func:`_median_interval` (infinite where the
    times are too few to bound it)."""
    kept = sorted(seen[len(seen) // 4:])
    n = len(kept)
    cost = max(kept[int(FIXED_COST_PERCENTILE / 100 * (n - 1))] - PROBE_DELAY_S, 0.0)
    low, high = _median_interval(n)
    return cost, (kept[high] - kept[low]) / 2 if low >= 0 else math.inf


def _probe_settled(seen: list[float]) -> bool:
    """Whether a size's probe times *seen* give its cost to :data:`PROBE_TOLERANCE` (see :func:`_probe_cost`)."""
    if len(seen) < PROBE_MIN_READS_PER_SIZE:
        return False
    cost, half_width = _probe_cost(seen)
    return half_width <= PROBE_TOLERANCE * cost


def _probe_times(sizes: list[int], read) -> dict[int, list[float]]:
    """Each size's probe times [s], ``read(size, i)`` timing the i-th read: the sizes not yet
    :func:`_probe_settled` taken in turn, until none is left or :data:`PROBE_READS` reads are spent."""
    times: dict[int, list[float]] = {n: [] for n in sizes}
    i = 0
    while i < PROBE_READS and (unsettled := [n for n in sizes if not _probe_settled(times[n])]):
        for n in unsettled[:PROBE_READS - i]:
            times[n].append(read(n, i))
            i += 1
    return times


def _measure_fixed_cost(device: str, capacity_bytes: int, realtime_priority: int | None, log_path) -> dict:
    """The path's own cost, from O_DIRECT reads of :data:`PROBE_BYTES` and of the largest request the
    kernel sends the device (:func:`_probe_times`: each read after :data:`PROBE_GAP_S` of idle, until each
    size's median is known to :data:`PROBE_TOLERANCE`) served :data:`PROBE_DELAY_S` after they reach the
    server: the :data:`FIXED_COST_PERCENTILE` of each size's times less that delay (the path copies each
    request's data through FUSE and NBD). The server's control
    (:func:`~diskmodel.calibrate.emulate.server.path_cost_table`): ``path_cost_by_size``, ``fixed_cost_s``
    (the cost read back to no bytes) and ``path_per_byte_s`` (the slope from the smallest size to the
    largest), and ``path_in_by_size``, each size's way in, from the server's request log at *log_path*
    (:func:`~diskmodel.calibrate.emulate.path_probe.way_in_by_size`). Read under SCHED_FIFO at
    *realtime_priority*, as the path then serves."""
    from diskmodel.calibrate.emulate.path_probe import way_in_by_size
    from diskmodel.calibrate.emulate.server import path_cost_s, realtime

    from diskmodel.calibrate.harness.device import max_request_bytes

    fd = os.open(device, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    # up to the largest request the kernel sends the device (a calibration's zone reads are that long):
    # above the largest size measured the cost is extrapolated, and the copies of a long request through
    # FUSE and NBD cost more than the line through the two largest sizes below it says
    largest = max_request_bytes(os.fstat(fd).st_rdev)
    sizes = [n for n in sorted(set(PROBE_BYTES) | ({largest} if largest else set())) if n <= capacity_bytes]
    buf = mmap.mmap(-1, max(sizes))
    span = max(capacity_bytes // 4096 - max(sizes) // 4096, 1)

    stamps = []  # (size, offset, issued, completed): the legs' measurement matches them to the server's log

    def read(n: int, i: int) -> float:
        view = memoryview(buf)[:n]
        try:
            time.sleep(PROBE_GAP_S)
            offset = (i * 7919 % span) * 4096
            t = time.monotonic()
            os.preadv(fd, [view], offset)
            done = time.monotonic()
            stamps.append((n, offset, t, done))
            return done - t
        finally:
            view.release()

    try:
        with realtime(realtime_priority), collector_paused():  # no collection timed as the path's
            times = _probe_times(sizes, read)
    finally:
        os.close(fd)
        buf.close()
    cost = {n: _probe_cost(seen)[0] for n, seen in times.items() if seen}
    small, large = min(cost), max(cost)
    legs = {"path_in_by_size": way_in_by_size(stamps, log_path)}
    if large == small:
        return {"fixed_cost_s": cost[small], "path_per_byte_s": 0.0, **legs}
    table = sorted(cost.items())
    return {"fixed_cost_s": path_cost_s(table, 0), "path_per_byte_s": (cost[large] - cost[small]) / (large - small),
            "path_cost_by_size": [list(pair) for pair in table], **legs}


def _start_drive(run, drv: _Drive, backing_dir, log_dir, index: int, realtime_priority: int | None) -> None:
    dir_fd = os.open(drv.folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _start_nbdkit(run, drv, backing_dir, log_dir, index, dir_fd, realtime_priority)
        file = _start_nbdfuse(run, drv, dir_fd, realtime_priority)
    finally:
        os.close(dir_fd)
    device = _attach_loop(run, drv, file)
    measured = _measure_fixed_cost(device, drv.spec.capacity_bytes, realtime_priority, drv.device.log_path)
    control = drv.folder / "control.json"
    # the legs by the path's idle time and the request's hold, each less its size's leg measured above
    measured.update(path_probe.measure_shape(device, drv.spec.capacity_bytes, control, drv.device.log_path,
                                             realtime_priority, measured))
    path_probe.write_control(control, measured)
    drv.device.path, drv.device.fixed_cost_s, drv.device.file_path = device, measured["fixed_cost_s"], str(file)
    drv.device._processes = (("nbdkit", drv.nbdkit), ("nbdfuse", drv.nbdfuse))


def _unmount_users(device: str, say) -> None:
    """Unmount file systems still mounted on *device* or its partitions, naming each."""
    from diskmodel.calibrate.harness import devstate

    try:
        uses = devstate.block_uses(devstate.block_device(device))
    except (devstate.DeviceStateError, OSError):
        return
    for use in uses:
        if use.kind == "mount":
            say(f"WARNING: {use.path} (emulated) is still mounted on {use.target}: unmounting it before the "
                f"device goes")
            proc = _run(["umount", use.target])
            if proc.returncode != 0:
                say(f"WARNING: umount {use.target} failed: {proc.stderr.strip()}")


def _end_process(proc: subprocess.Popen | None, *, terminate: bool) -> None:
    from diskmodel.calibrate.bench.process import reaped

    if proc is None:
        return
    if terminate and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=EXIT_TIMEOUT_S)
    if proc.returncode is not None:
        reaped(proc)


def _stop_drive(run, drv: _Drive, say, lateness_bound_s: float) -> None:
    """Tear one drive down in reverse (device, FUSE mount, nbdfuse, nbdkit, files) and summarise its log."""
    if drv.device.path:
        _unmount_users(drv.device.path, say)
    if drv.loop_res is not None:
        run.undo([drv.loop_res])
    if drv.mount_res is not None:
        if drv.mount_res.state == "intended":
            # nbdfuse was still starting when the run stopped: a look now may find no mount that it makes a
            # moment later, so it is ended first (libfuse unmounts on SIGTERM) and its mount looked for after
            _end_process(drv.nbdfuse, terminate=True)
        run.undo([drv.mount_res])  # nbdfuse exits when its mount goes, closing the NBD connection
    # A mount still there (its file held by a loop device someone keeps open) never lets nbdfuse exit by
    # itself: it is asked to, rather than waited for in vain
    _end_process(drv.nbdfuse, terminate=drv.mount_res is not None and drv.mount_res.state != "removed")
    _end_process(drv.nbdkit, terminate=True)  # nbdkit writes the request log as it unloads the plugin
    run.undo(drv.resources)
    if drv.device.path:
        _summarise_log(drv.device, lateness_bound_s)


def _summarise_log(device, lateness_bound_s: float) -> None:
    """The served drive's timing and request-log summary, from its log once nbdkit has closed it
    (left None when there is no readable log: the report then says so)."""
    if os.path.exists(device.log_path):
        with contextlib.suppress(OSError, ValueError):
            frame = read_log(device.log_path)
            device.timing = frame.attrs.get("timing")
            device.summary = summarize(frame, lateness_bound_s=lateness_bound_s)


@contextlib.contextmanager
def cpu_latency_or_note(value_us: int | None, say):
    """Hold the CPU latency request *value_us* inside (:func:`~diskmodel.calibrate.emulate.cpu_latency.cpu_latency_held`,
    recorded in the current run); where the device cannot be opened, one line through *say* and nothing held.
    None: nothing held."""
    from diskmodel.calibrate.emulate.cpu_latency import DEVICE, cpu_latency_held

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(cpu_latency_held(value_us))
        except OSError as exc:
            say(f"note: the CPUs' idle states are left as they are ({DEVICE}: {exc.strerror}); the path's "
                f"legs then grow with how long it sat idle, and with the host's load")
        yield


@contextlib.contextmanager
def emulated_drives(drives, *, backing_dir=None, log_dir=None, lateness_bound_s: float = LATENESS_P99_BOUND_S,
                    realtime_priority: int | None = DEFAULT_REALTIME_PRIORITY, say=None,
                    cpu_latency_us: int | None = CPU_LATENCY_US):
    """Serve each of *drives* as a block device; yields a list of :class:`EmulatedDevice`.

    *drives*: DRIVE arguments (:func:`~diskmodel.calibrate.emulate.drives.resolve_drive`)
    or :class:`~diskmodel.calibrate.emulate.drives.DriveSpec` objects (e.g.
    :func:`~diskmodel.calibrate.emulate.drives.flat_drive`). *backing_dir*:
    where the sparse backing files go (default: the run's work folder).
    *log_dir*: where the request logs are kept (default: not kept; each
    device's ``summary`` is filled in at teardown either way).
    *realtime_priority*: run every thread of nbdkit and nbdfuse, and the
    probe reads, under SCHED_FIFO at this priority (1-99; default
    :data:`DEFAULT_REALTIME_PRIORITY`; None: the normal policy), so that a busy
    host delays their wake-ups less (where it cannot be had, one line says so
    and the normal policy is used: :func:`realtime_or_note`); the wait before each deadline is a sleep and
    at most :data:`~diskmodel.calibrate.emulate.server.SPIN_S` of spinning,
    so they never hold a CPU for long. SIGTERM is
    turned into an interrupt inside (as SIGINT is), so that it tears down too.
    *cpu_latency_us*: the CPU latency request held from the drives' start to their teardown
    (:data:`CPU_LATENCY_US`; None: none), recorded in the run and released by its teardown.
    """
    from diskmodel.calibrate.harness.interrupts import during_teardown, handle_signals
    from diskmodel.calibrate.harness import runstate

    say = say or (lambda line: log.warning("%s", line))
    specs = [resolve_drive(d) for d in drives]
    if not specs:
        raise ValueError("give at least one drive to emulate")
    backing_dir = Path(backing_dir) if backing_dir is not None else None
    log_dir = Path(log_dir) if log_dir is not None else None
    if backing_dir is not None:
        _check_backing_dir(backing_dir, specs)
    if log_dir is not None and not log_dir.is_dir():
        raise ValueError(f"--log-dir {log_dir}: not a directory")
    realtime_priority = realtime_or_note(realtime_priority, say)
    check_tools()
    with handle_signals(), runstate.ensure_run("diskmodel emulate") as run, cpu_latency_or_note(cpu_latency_us, say):
        if backing_dir is None:
            _check_backing_dir(run.work_dir(), specs)
        built: list[_Drive] = []
        try:
            for i, spec in enumerate(specs):
                folder = run.temp_dir(f"drive{i}-")
                drv = _Drive(spec, folder, EmulatedDevice(spec.name, None, spec.capacity_bytes, ""))
                built.append(drv)
                _start_drive(run, drv, backing_dir, log_dir, i, realtime_priority)
            yield [d.device for d in built]
        finally:
            with during_teardown():
                for drv in reversed(built):
                    _stop_drive(run, drv, say, lateness_bound_s)
