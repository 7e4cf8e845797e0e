"""Native, LVM-1 and LVM-2 storage layouts as plans of undoable shell steps.

Djordjevic & Timcenko (2015), section 4.1, Tables 1-3:

- ``native``: a file system directly on one block device (Table 1);
- ``lvm1``: one physical volume, one volume group, one logical volume using
  all of it (Table 2);
- ``lvm2``: two physical volumes of half the size each, concatenated into one
  volume group and one logical volume of the same total size (Table 3).

The file system has exactly the same size in all three layouts, as in the
paper: the logical volume is created with an exact extent count, and the
physical volumes are sized so that they hold exactly that many extents.

A layout is a :class:`LayoutPlan`, a sequence of :class:`Step` objects, each a
shell command with the shell command that undoes it. The same plan drives

- the host, through :class:`HostExecutor` (``/bin/sh -c`` per step, every step
  logged, completed steps undone in reverse on failure, SIGINT and SIGTERM turned
  into exceptions so that a ``finally`` tears everything down, teardown
  idempotent), and
- a throwaway VM, through :meth:`LayoutPlan.render_script`, one shell script
  with a ``trap`` that runs the undo commands of the steps that completed.

Steps may capture their standard output into a shell variable (``capture``);
later commands and undo commands refer to it as ``"$NAME"``. On the host the
captured values are passed to later steps as environment variables, so the
command text is identical in both places.

Every block device a plan builds on is a loop device over a region of the
scratch file or scratch block device (``losetup --offset --sizelimit``, with
``--direct-io=on`` so the backing file's page cache does not cache the data a
second time, outside any memory limit). All three layouts share that base, so
the differences measured between them are those of LVM.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shlex
import signal
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.bench.process import communicate_or_kill, spawn

__all__ = [
    "LAYOUTS",
    "FILE_SYSTEMS",
    "EXTENT_BYTES",
    "PV_SLACK_BYTES",
    "Step",
    "Region",
    "LayoutPlan",
    "LayoutError",
    "LayoutUnavailable",
    "Interrupted",
    "HostExecutor",
    "build_plan",
    "regions_for",
    "backing_bytes_required",
    "device_mapper_available",
    "require_device_mapper",
    "handle_signals",
]

log = logging.getLogger(__name__)

LAYOUTS: tuple[str, ...] = ("native", "lvm1", "lvm2")
FILE_SYSTEMS: tuple[str, ...] = ("ext3", "ext2", "ext4", "xfs")

MIB = 1 << 20
#: LVM physical extent size used for every volume group [bytes] (vgcreate -s 4m).
EXTENT_BYTES = 4 * MIB
#: Data area start of every physical volume [bytes] (pvcreate --dataalignment 1m).
PE_START_BYTES = 1 * MIB
#: Extra room in every physical volume beyond pe_start + its extents, less than
#: one extent so it never adds one [bytes].
PV_SLACK_BYTES = 2 * MIB
#: Regions of the scratch space start on MiB boundaries.
REGION_ALIGN_BYTES = 1 * MIB
#: The first region starts this far into the scratch [bytes], like a first
#: partition: an LVM label at the start of the first loop device must not
#: also appear at the start of the scratch device itself (LVM would see the
#: scratch device as a duplicate PV and refuse to use it).
FIRST_REGION_OFFSET_BYTES = 1 * MIB

#: Smallest xfs mkfs.xfs (xfsprogs >= 5.19) accepts, rounded up to 8 MiB [bytes].
XFS_MIN_BYTES = 304 * MIB

_MKFS_ARGS: dict[str, tuple[str, ...]] = {
    "ext2": ("mkfs.ext2", "-F", "-q"),
    "ext3": ("mkfs.ext3", "-F", "-q"),
    "ext4": ("mkfs.ext4", "-F", "-q"),
    "xfs": ("mkfs.xfs", "-f", "-q"),
}

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LayoutError(RuntimeError):
    """A layout step failed; what was built has been rolled back."""


class LayoutUnavailable(RuntimeError):
    """The layout cannot be built on this kernel (e.g. no device-mapper)."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; raised so ``finally`` blocks tear down."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


@dataclass(frozen=True)
class Step:
    """One shell command and the shell command that undoes it.

    description: what the step does, for the log.
    command: ``sh`` command text; may refer to earlier captures as ``"$NAME"``.
    undo: ``sh`` command undoing it, or None when nothing needs undoing.
    capture: name of a shell variable that receives the command's stripped
        standard output, or None.
    """

    description: str
    command: str
    undo: str | None = None
    capture: str | None = None
    #: What the step creates, for the run's record (:mod:`runstate`): a kind
    #: ("loop", "dir", "mount", "pv", "vg", "lv") and (key, value) pairs that
    #: find it again; values may name captures as "$NAME".
    resource: tuple[str, tuple[tuple[str, object], ...]] | None = None

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("command must not be empty")
        if self.capture is not None and not _NAME_RE.match(self.capture):
            raise ValueError(f"capture must be a shell variable name, got {self.capture!r}")


@dataclass(frozen=True)
class Region:
    """A byte range of the scratch space that becomes one block device [bytes]."""

    offset_bytes: int
    size_bytes: int


def _check_fs_size(fs_size_bytes: int) -> None:
    if not isinstance(fs_size_bytes, int) or isinstance(fs_size_bytes, bool):
        raise ValueError(f"fs_size_bytes must be an int, got {fs_size_bytes!r}")
    unit = 2 * EXTENT_BYTES
    if fs_size_bytes <= 0 or fs_size_bytes % unit:
        lower = max(unit, fs_size_bytes // unit * unit)
        raise ValueError(
            f"fs_size_bytes must be a positive multiple of {unit} (two LVM extents, so that "
            f"LVM-2's halves hold whole extents); got {fs_size_bytes}, try {lower}"
        )


def _align_up(value: int, align: int) -> int:
    return -(-value // align) * align


def regions_for(layout: str, fs_size_bytes: int) -> tuple[Region, ...]:
    """The regions of the scratch space each layout uses [bytes].

    native: one region of exactly the file-system size. lvm1: one PV holding
    fs_size/extent extents. lvm2: two PVs holding half of them each. The first
    region starts at FIRST_REGION_OFFSET_BYTES.
    """
    _check_layout(layout)
    _check_fs_size(fs_size_bytes)
    if layout == "native":
        sizes = [fs_size_bytes]
    elif layout == "lvm1":
        sizes = [PE_START_BYTES + fs_size_bytes + PV_SLACK_BYTES]
    else:
        half = fs_size_bytes // 2
        sizes = [PE_START_BYTES + half + PV_SLACK_BYTES] * 2
    regions, offset = [], FIRST_REGION_OFFSET_BYTES
    for size in sizes:
        regions.append(Region(offset, size))
        offset = _align_up(offset + size, REGION_ALIGN_BYTES)
    return tuple(regions)


def backing_bytes_required(layout: str, fs_size_bytes: int) -> int:
    """Bytes of scratch space a layout needs for a file system of fs_size_bytes."""
    last = regions_for(layout, fs_size_bytes)[-1]
    return _align_up(last.offset_bytes + last.size_bytes, REGION_ALIGN_BYTES)


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")


@dataclass(frozen=True)
class LayoutPlan:
    """The steps that build one layout, and what they leave mounted where.

    layout: "native", "lvm1" or "lvm2". fs_type: file system. fs_size_bytes:
    size of the file system's block device [bytes]. backing: path of the scratch
    file or block device. regions: byte ranges of it used. device_expr: shell
    expression of the file system's block device. mount_var: variable holding
    the mount point. vg_name/lv_name: LVM names (None for native).
    """

    layout: str
    fs_type: str
    fs_size_bytes: int
    backing: str
    regions: tuple[Region, ...]
    steps: tuple[Step, ...]
    device_expr: str
    mount_var: str
    vg_name: str | None = None
    lv_name: str | None = None
    mount_options: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        lines = [f"# layout {self.layout}: {self.fs_type} of {self.fs_size_bytes} bytes on {self.backing}"]
        for i, step in enumerate(self.steps, 1):
            cap = f"{step.capture}=$( {step.command} )" if step.capture else step.command
            lines.append(f"{i:2d}. {step.description}\n      do:   {cap}\n      undo: {step.undo or '-'}")
        return "\n".join(lines)

    def render_script(self, body: str = "", *, preamble: str = "") -> str:
        """One POSIX/busybox ``sh`` script: build the layout, run *body*, tear down.

        The script keeps a list of undo commands of the steps that completed
        and runs it in reverse from an EXIT trap (INT, TERM and HUP exit through
        it too), so a failure, the end of the body or a signal all tear down.
        The script exits with the status of the first failing step or of *body*.
        """
        out = [
            "#!/bin/sh",
            f"# diskmodel layout {self.layout} ({self.fs_type}, {self.fs_size_bytes} bytes): generated",
            "DISKMODEL_UNDO=''",
            "diskmodel_teardown() {",
            "  status=$?",
            "  trap - EXIT INT TERM HUP",
            "  set +e",
            '  echo "diskmodel: teardown" >&2',
            '  eval "$DISKMODEL_UNDO"',
            "  DISKMODEL_UNDO=''",
            '  exit "$status"',
            "}",
            "trap diskmodel_teardown EXIT",
            "trap 'exit 130' INT",
            "trap 'exit 143' TERM",
            "trap 'exit 129' HUP",
        ]
        if preamble:
            out.append(preamble.rstrip("\n"))
        for i, step in enumerate(self.steps, 1):
            out.append(f"# step {i}: {step.description}")
            out.append(f"echo {shlex.quote(f'diskmodel: step {i}: {step.description}')} >&2")
            if step.capture:
                out.append(f"{step.capture}=$( {step.command} ) || exit $?")
                out.append(f'echo "diskmodel:   {step.capture}=${step.capture}" >&2')
            else:
                out.append(f"{{ {step.command} ; }} || exit $?")
            if step.undo:
                # Prepend, so the list runs in reverse order of completion.
                undo_line = f"echo {shlex.quote(f'diskmodel: undo {i}: {step.description}')} >&2; {step.undo} || echo 'diskmodel: undo {i} failed' >&2\n"
                out.append(f"DISKMODEL_UNDO={shlex.quote(undo_line)}\"$DISKMODEL_UNDO\"")
        out.append("# body")
        out.append(body.rstrip("\n") if body else ":")
        out.append("exit $?")
        return "\n".join(out) + "\n"


def build_plan(
    layout: str,
    *,
    backing: str | os.PathLike,
    fs_size_bytes: int,
    fs_type: str = "ext3",
    mount_options: Iterable[str] = (),
    mkfs_options: Iterable[str] = (),
    mount_parent: str = "/tmp",
    mount_dir: str | None = None,
    direct_io: bool = True,
    name_token: str | None = None,
) -> LayoutPlan:
    """The plan of steps that builds *layout* on regions of *backing*.

    backing: scratch file or block device (already sized and safe to destroy;
    this function checks nothing on disk). fs_size_bytes: file-system size,
    identical for all layouts [bytes]; a multiple of 8 MiB. fs_type: ext3 (the
    paper's), ext2, ext4 or xfs. mount_parent: directory in which a fresh mount
    point is made with ``mktemp -d``; mount_dir: instead, the exact mount point
    to create (a new path, e.g. inside the run's own folder, so that the run's
    record names it before it exists). direct_io: loop devices use O_DIRECT on
    the backing. name_token: suffix of the VG name (random when None).
    """
    _check_layout(layout)
    if fs_type not in FILE_SYSTEMS:
        raise ValueError(f"fs_type must be one of {', '.join(FILE_SYSTEMS)}; got {fs_type!r}")
    regions = regions_for(layout, fs_size_bytes)
    if fs_type == "xfs" and fs_size_bytes < XFS_MIN_BYTES:
        raise ValueError(f"fs_size_bytes must be >= {XFS_MIN_BYTES} for xfs (mkfs.xfs refuses file "
                         f"systems under 300 MB); got {fs_size_bytes}")
    backing = os.fspath(backing)
    mount_options = tuple(mount_options)
    for opt in mount_options:
        if not opt or "," in opt or any(c.isspace() for c in opt):
            raise ValueError(f"mount_options must be single options without commas or spaces; got {opt!r}")
    token = name_token or secrets.token_hex(4)
    if not re.match(r"^[A-Za-z0-9]+$", token):
        raise ValueError(f"name_token must be alphanumeric; got {token!r}")
    q = shlex.quote
    steps: list[Step] = []
    devs: list[str] = []
    dio = " --direct-io=on" if direct_io else ""
    for i, region in enumerate(regions):
        var = f"DISKMODEL_DEV{i}"
        steps.append(Step(
            f"loop device over bytes {region.offset_bytes}..{region.offset_bytes + region.size_bytes} of the scratch",
            f"losetup --find --show{dio} --offset {region.offset_bytes} --sizelimit {region.size_bytes} {q(backing)}",
            undo=f'losetup -d "${var}"',
            capture=var,
            resource=("loop", (("backing", backing), ("offset", region.offset_bytes),
                               ("sizelimit", region.size_bytes), ("device", f"${var}"))),
        ))
        devs.append(f'"${var}"')
    vg = lv = None
    if layout == "native":
        device_expr = devs[0]
    else:
        vg, lv = f"diskmodel_{token}", "LogVol02"
        for i, dev in enumerate(devs):
            steps.append(Step(
                f"physical volume {i + 1} of {len(devs)}",
                f"pvcreate -ff -y --dataalignment {PE_START_BYTES // 1024}k {dev}",
                undo=f"pvremove -ff -y {dev}",
                resource=("pv", (("device", dev.strip('"')),)),
            ))
        steps.append(Step(
            f"volume group {vg} over {len(devs)} PV(s)",
            f"vgcreate -s {EXTENT_BYTES // 1024}k {vg} {' '.join(devs)}",
            undo=f"vgremove -f {vg}",
            resource=("vg", (("name", vg),)),
        ))
        extents = fs_size_bytes // EXTENT_BYTES
        steps.append(Step(
            f"logical volume {vg}/{lv} of {extents} extents",
            f"lvcreate -y -W n -l {extents} -n {lv} {vg}",
            undo=f"lvremove -f {vg}/{lv}",
            resource=("lv", (("name", f"{vg}/{lv}"),)),
        ))
        device_expr = f"/dev/{vg}/{lv}"
        per_pv = extents // len(devs)
        for i, dev in enumerate(devs):
            steps.append(Step(
                f"check {vg}/{lv} uses all {per_pv} extents of PV {i + 1}",
                f'test "$(pvs --noheadings -o pv_pe_alloc_count {dev} | tr -d " ")" = {per_pv}'
                f' || {{ pvs -o pv_name,pv_pe_count,pv_pe_alloc_count >&2; false; }}',
            ))
    steps.append(Step(
        f"check the file-system device has exactly {fs_size_bytes} bytes",
        f'test "$(blockdev --getsize64 {device_expr})" = {fs_size_bytes}'
        f' || {{ echo "device size $(blockdev --getsize64 {device_expr}) != {fs_size_bytes}" >&2; false; }}',
    ))
    mkfs = " ".join(q(a) for a in (*_MKFS_ARGS[fs_type], *mkfs_options))
    steps.append(Step(f"{fs_type} file system", f"{mkfs} {device_expr}"))
    if mount_dir is None:
        steps.append(Step(
            "mount point",
            f"mktemp -d {q(mount_parent.rstrip('/') + '/diskmodel-mnt.XXXXXX')}",
            undo='rmdir "$DISKMODEL_MNT"',
            capture="DISKMODEL_MNT",
        ))
    else:
        steps.append(Step(
            "mount point",
            f"mkdir -m 700 {q(mount_dir)} && printf '%s\\n' {q(mount_dir)}",
            undo='rmdir "$DISKMODEL_MNT"',
            capture="DISKMODEL_MNT",
            resource=("dir", (("path", mount_dir),)),
        ))
    opt = f" -o {','.join(mount_options)}" if mount_options else ""
    steps.append(Step(
        f"mount {fs_type}",
        f'mount -t {fs_type}{opt} {device_expr} "$DISKMODEL_MNT"',
        undo='umount "$DISKMODEL_MNT"',
        resource=("mount", (("mountpoint", "$DISKMODEL_MNT"),)),
    ))
    return LayoutPlan(
        layout=layout, fs_type=fs_type, fs_size_bytes=fs_size_bytes, backing=backing,
        regions=regions, steps=tuple(steps), device_expr=device_expr,
        mount_var="DISKMODEL_MNT", vg_name=vg, lv_name=lv, mount_options=mount_options,
    )


def device_mapper_available() -> bool:
    """True when this kernel has device-mapper (needed by LVM)."""
    try:
        if any(line.split()[1:] == ["device-mapper"] for line in Path("/proc/misc").read_text().splitlines()):
            return True
    except OSError:
        pass
    return Path("/sys/module/dm_mod").exists()


def require_device_mapper(layout: str) -> None:
    """Raise LayoutUnavailable, with what to do, when *layout* needs device-mapper and it is absent."""
    _check_layout(layout)
    if layout != "native" and not device_mapper_available():
        raise LayoutUnavailable(
            f"layout {layout} needs LVM, and this kernel has no device-mapper "
            "(no 'device-mapper' in /proc/misc, no /sys/module/dm_mod); "
            "pass --vm to build it in a throwaway VM"
        )


class handle_signals:
    """Context manager: SIGINT and SIGTERM raise :class:`Interrupted` inside it.

    Only in the main thread (elsewhere it does nothing). The previous handlers
    come back on exit.
    """

    def __init__(self) -> None:
        self._old: dict[int, object] = {}

    def __enter__(self) -> "handle_signals":
        import threading
        if threading.current_thread() is not threading.main_thread():
            return self

        def _raise(signum, frame):
            raise Interrupted(signum)

        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, _raise)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()


class HostExecutor:
    """Runs a :class:`LayoutPlan` on this machine, step by step, with rollback.

    Use as a context manager: ``with HostExecutor(plan) as ex: ex.mountpoint``.
    Entering builds the layout (rolling back in reverse on a failing step and
    raising :class:`LayoutError`); leaving tears it down. :meth:`teardown` is
    idempotent. Every command, its exit status and output go to the log.

    Every step that creates something is recorded in the run's state file
    (:mod:`diskmodel.calibrate.harness.runstate`) *before* it runs, with what finds it
    again (a loop device by its backing's inode and offset, a mount by its
    mount point). Teardown removes what it finds, not what the steps reported,
    so a signal that lands while ``losetup`` or ``mount`` runs, after it has
    done its work but before it has said so, leaves nothing behind; and it
    checks that each thing is gone (:class:`~diskmodel.calibrate.harness.runstate.TeardownReport`).
    """

    def __init__(self, plan: LayoutPlan, *, logger: logging.Logger | None = None, timeout_s: float = 600.0):
        self.plan = plan
        self.log = logger or log
        self.timeout_s = timeout_s
        self.variables: dict[str, str] = {}
        self._resources: list = []
        self._run_context = None
        self.history: list[tuple[str, str, int]] = []  # (what, command, returncode)
        self.report = None

    # -- running one command -------------------------------------------------
    def _sh(self, what: str, command: str) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env.update(self.variables)
        env.setdefault("LVM_SUPPRESS_FD_WARNINGS", "1")
        self.log.info("%s: %s", what, command)
        proc = spawn(["/bin/sh", "-c", command], name=what, env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
        # Interrupted or timed out: the command must not outlive us.
        out, err = communicate_or_kill(proc, self.timeout_s)
        self.history.append((what, command, proc.returncode))
        if out.strip():
            self.log.info("  stdout: %s", out.strip())
        if err.strip():
            self.log.info("  stderr: %s", err.strip())
        self.log.info("  exit status %d", proc.returncode)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def run_command(self, command: str, what: str = "command") -> subprocess.CompletedProcess:
        """Run a shell command with the plan's variables (e.g. "$DISKMODEL_MNT") set."""
        return self._sh(what, command)

    def _expand(self, value):
        if isinstance(value, str):
            for name, val in self.variables.items():
                value = value.replace(f"${name}", val)
        return value

    def _intend(self, step: Step):
        if step.resource is None:
            return None
        kind, pairs = step.resource
        details = {k: self._expand(v) for k, v in pairs}
        details = {k: v for k, v in details.items() if not (isinstance(v, str) and v.startswith("$"))}
        if kind == "loop":
            backing = os.path.realpath(details["backing"])
            st = os.stat(backing)
            details["backing"] = backing
            if stat.S_ISREG(st.st_mode):  # a regular file: found again by inode, even once unlinked
                details["backing_ino"], details["backing_dev"] = st.st_ino, f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        res = self._run.intend(kind, **details)
        self._resources.append(res)
        return res

    # -- building and tearing down -------------------------------------------
    def build(self) -> "HostExecutor":
        if runstate.current_run() is None:
            self._run_context = runstate.ensure_run(f"layout {self.plan.layout} on {self.plan.backing}")
            self._run = self._run_context.__enter__()
        else:
            self._run = runstate.current_run()
        try:
            for i, step in enumerate(self.plan.steps, 1):
                res = self._intend(step)
                res_ = self._sh(f"step {i}/{len(self.plan.steps)} {step.description}", step.command)
                if res_.returncode != 0:
                    msg = (f"layout {self.plan.layout}: step {i} ({step.description}) failed with status "
                           f"{res_.returncode}: {step.command}\n{res_.stderr.strip()}")
                    self.log.error(msg)
                    raise LayoutError(msg)
                if step.capture:
                    value = res_.stdout.strip()
                    if not value:
                        raise LayoutError(f"step {i} ({step.description}) printed nothing to capture")
                    self.variables[step.capture] = value
                if res is not None:
                    self._run.created(res, **{k: self._expand(v) for k, v in step.resource[1]
                                              if isinstance(v, str) and v.startswith("$")})
                elif step.undo:
                    # Nothing to look for: the undo command itself is recorded, once the step is done.
                    self._resources.append(self._run.intend("command", undo=step.undo,
                                                            env=dict(self.variables)))
        except BaseException as exc:
            report = self.teardown()
            with contextlib.suppress(AttributeError, TypeError):
                exc.teardown_report = str(report)
            raise
        return self

    def teardown(self):
        """Remove what the steps created, in reverse, and check it is gone. Safe to call again.

        Returns the :class:`~diskmodel.calibrate.harness.runstate.TeardownReport`.
        """
        if not self._resources and self.report is not None:
            return self.report
        report = self._run.undo(self._resources) if self._resources else runstate.TeardownReport()
        self._resources = [r for r in self._resources if r.state != "removed"]
        if report.left:
            self.log.error("teardown left things behind: %s", "; ".join(report.left))
        self.report = report
        context, self._run_context = self._run_context, None
        if context is not None:
            # The run this executor opened ends here; its state file stays if anything was left.
            with contextlib.suppress(RuntimeError):
                context.__exit__(None, None, None)
        return report

    @property
    def mountpoint(self) -> str:
        return self.variables[self.plan.mount_var]

    @property
    def device(self) -> str:
        """The file system's block device path (/dev/loopN or /dev/VG/LV)."""
        expr = self.plan.device_expr
        for name, value in self.variables.items():
            expr = expr.replace(f'"${name}"', value)
        return expr

    def __enter__(self) -> "HostExecutor":
        return self.build()

    def __exit__(self, *exc) -> None:
        report = self.teardown()
        if exc[1] is not None:
            with contextlib.suppress(AttributeError, TypeError):
                exc[1].teardown_report = str(report)
        if report.left and exc[0] is None:
            raise LayoutError("teardown failed: " + "; ".join(report.left))
