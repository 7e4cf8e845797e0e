"""The everyday workloads measured with the real tools, in a directory of a mounted file system:
bonnie++ (:mod:`.bonnie`), PostMark (Katcher 1997; Debian's ``postmark`` 1.51), ``cp`` of a file,
``tar -cf`` of a tree of small files, and a disk image made by ``dd`` (zero-filled) or ``truncate`` (sparse).

Each workload is named by the same spec string the model reads
(:func:`diskmodel.model.iopath.workload_spec.parse_workload`: ``copy:size=64M``,
``tar:files=1000,file_bytes=16k,dirs=4``, ``image:size=64M,kind=sparse``,
``bonnie:size=64M,files=1024``, ``postmark:files=500,transactions=2000``) and measured as:

1. the tools it needs are checked first (:func:`missing_tools`), before anything is made;
2. a folder of the run is made in the directory, recorded in the run state before it is made
   (kind ``dir``, removed with all it holds by the run's teardown);
3. what the workload finds already there (the copy's source, the tar's tree, PostMark's command file) is
   written, then
   ``sync`` and the caches dropped (``/proc/sys/vm/drop_caches``), so the workload reads from
   the device as the model's ``initial_bytes`` say;
4. the workload's commands run one after the other with no shell (:func:`steps`), in the folder as
   their working directory (PostMark makes its files there, named short:
   :mod:`diskmodel.calibrate.bench.postmark`), then
   ``sync -f`` of the folder's file system (syncfs(2): the model's closing sync, without
   waiting for every other file system of the machine), timed by :func:`measure`;
   :func:`steps_argv` is the same as one argument vector (this module run by the same Python),
   so ``diskmodel trace record -- ARGV`` traces exactly the workload.

:func:`measure` returns a :class:`ToolResult`: the workload's definition (the spec and one line
saying what it does) beside the elapsed time and the rate.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from diskmodel.calibrate.bench.memory_cgroup import drop_caches
from diskmodel.model.iopath import workloads_bonnie, workloads_files
from diskmodel.model.iopath.workload_spec import _pairs, size_value

__all__ = ["ToolResult", "ToolWorkload", "missing_tools", "prepare", "steps", "steps_argv", "measure", "definition",
           "TOOLS", "is_tool_spec", "pace_on_tmpfs"]

#: The programs each workload runs, with the Debian package that has them.
#: Workload -> the programs it runs; their packages: ``harness.tools.DEBIAN_PACKAGES``.
TOOLS = {"copy": ("cp",), "tar": ("tar",), "image": ("dd", "truncate"), "bonnie": ("bonnie++",),
         "postmark": ("postmark",)}
#: PostMark's command file in the workload's folder (its files are made beside it: ``set location .``).
_POSTMARK_CFG = "postmark.cfg"
_FILL_BYTES = 1 << 20


def _spec(spec: str) -> tuple[str, dict]:
    name, _, rest = str(spec).partition(":")
    if name not in TOOLS:
        raise ValueError(f"workload {spec!r}: {name!r} is not one the tools measure ({', '.join(TOOLS)})")
    if name == "postmark":  # no pairs here: its presets (postmark:test1) are none; postmark_config reads both
        return name, {}
    return name, _pairs(name, rest)


def _postmark_config(spec: str):
    from diskmodel.model.iopath.workload_spec import postmark_config

    return postmark_config(str(spec).partition(":")[2])


def is_tool_spec(text: str) -> bool:
    """Does *text* name a workload the tools measure (``NAME`` or ``NAME:KEY=VALUE,...``, NAME one of
    :data:`TOOLS`)? The bare ``copy`` is not one: it names the loop-image study's copy (its own runner)."""
    name, colon, _ = str(text).partition(":")
    return name in TOOLS and (bool(colon) or name != "copy")


@dataclass(frozen=True)
class ToolWorkload:
    """A workload the real tools run in a mounted file system, named by its spec (:func:`measure`); checked
    when made (a bad key or value is the model's one line, ValueError)."""

    spec: str

    def __post_init__(self):
        _spec(self.spec)
        definition(self.spec)
        steps(self.spec, Path("/"))  # what only the tool refuses (bonnie++'s -n in 1024s, dd's whole MiB)

    @property
    def label(self) -> str:
        return self.spec

    @property
    def programs(self) -> tuple[str, ...]:
        return TOOLS[_spec(self.spec)[0]]


def missing_tools(spec: str) -> str | None:
    """The one line to print when a program the workload runs is missing, else None."""
    from diskmodel.calibrate.harness.tools import DEBIAN_PACKAGES

    name, _ = _spec(spec)
    for prog in TOOLS[name]:
        package = DEBIAN_PACKAGES[prog]
        if shutil.which(prog) is None:
            return (f"workload {name}: {prog} is not installed: install the Debian package {package} "
                    f"(apt-get install {package})")
    return None


def definition(spec: str) -> str:
    """What the workload does, in one line (the model's parse of the same spec is checked too)."""
    from diskmodel.model.iopath.workload_spec import full_definition, parse_workload

    parse_workload(spec)  # a bad key or value is the model's one line
    name, p = _spec(spec)
    if name == "postmark":
        return full_definition(spec) + ", then sync"
    if name == "copy":
        return f"cp --reflink=auto of a {size_value(name, 'size', p.get('size', '64M'))} B file, then sync"
    if name == "tar":
        return workloads_files.describe_tar(size_value(name, "files", p.get("files", "1000")),
                                            size_value(name, "file_bytes", p.get("file_bytes", "16k")),
                                            size_value(name, "dirs", p.get("dirs", "1")),
                                            size_value(name, "blocking", p.get("blocking", "20"))) + ", then sync"
    if name == "image":
        return workloads_files.describe_image(size_value(name, "size", p.get("size", "64M")), p.get("kind", "zero"))
    return workloads_bonnie.describe(workloads_bonnie.config_of(p, size_value))


def _write(path: Path, size: int) -> None:
    block = bytes(min(size, _FILL_BYTES)) or b""
    with open(path, "wb") as fh:
        left = size
        while left:
            n = fh.write(block[:min(left, len(block))])
            left -= n


def prepare(spec: str, folder: Path) -> None:
    """Write what the workload finds in *folder* before it starts (the copy's source, the tar's
    tree), then sync and drop the caches."""
    name, p = _spec(spec)
    if name == "copy":
        _write(folder / "source", size_value(name, "size", p.get("size", "64M")))
    elif name == "tar":
        files = size_value(name, "files", p.get("files", "1000"))
        size = size_value(name, "file_bytes", p.get("file_bytes", "16k"))
        dirs = size_value(name, "dirs", p.get("dirs", "1"))
        tree = folder / "tree"
        tree.mkdir()
        for f in range(files):
            d = tree / f"d{f * dirs // files}" if dirs > 1 else tree
            d.mkdir(exist_ok=True)
            _write(d / f"f{f:07d}", size)
    elif name == "bonnie":
        (folder / "bonnie").mkdir()
    elif name == "postmark":
        from diskmodel.calibrate.bench.postmark_text import command_file

        (folder / _POSTMARK_CFG).write_text(command_file(_postmark_config(spec), "."))
    drop_caches()


def steps(spec: str, folder: Path) -> list[list[str]]:
    """The workload's commands (argument vectors), run in *folder* after :func:`prepare`."""
    name, p = _spec(spec)
    if name == "copy":
        return [["cp", "--reflink=auto", str(folder / "source"), str(folder / "copy")]]
    if name == "tar":
        blocking = size_value(name, "blocking", p.get("blocking", "20"))
        return [["tar", "-b", str(blocking), "-cf", str(folder / "archive.tar"), "-C", str(folder / "tree"), "."]]
    if name == "image":
        size = size_value(name, "size", p.get("size", "64M"))
        kind = p.get("kind", "zero")
        if kind == "sparse":
            return [["truncate", "-s", str(size), str(folder / "image")]]
        if size % (1 << 20):
            raise ValueError(f"workload image: size = {size} must be whole MiB for dd bs=1M")
        return [["dd", "if=/dev/zero", f"of={folder / 'image'}", "bs=1M", f"count={size >> 20}", "conv=fsync",
                 "status=none"]]
    if name == "postmark":
        return [["postmark", str(folder / _POSTMARK_CFG)]]
    config = workloads_bonnie.config_of(p, size_value)
    return [workloads_bonnie.bonnie_argv(config, str(folder / "bonnie"))]


def steps_argv(spec: str, folder: Path) -> list[str]:
    """:func:`steps` then ``sync -f FOLDER`` as one argument vector: this module, run by this Python
    (what ``diskmodel trace record -- ARGV`` traces)."""
    return [sys.executable, "-m", "diskmodel.calibrate.bench.tool_workloads", json.dumps(steps(spec, folder)),
            str(folder)]


@dataclass(frozen=True)
class ToolResult:
    """One workload measured: its spec and definition, the time from its first command's start
    to the end of the closing sync [s], the bytes it moves (read plus written by the workload
    itself) and their rate [bytes/s], bonnie++'s own report where it ran, and the wall clock
    [Unix s] at its first command's start (to cut a request log by: the timed span is
    ``started_unix_s`` .. ``started_unix_s + elapsed_s``, without the preparation before it and the
    teardown after it)."""

    spec: str
    definition: str
    elapsed_s: float
    bytes_moved: int
    bonnie: dict | None = None
    started_unix_s: float | None = None

    @property
    def rate_bytes_per_s(self) -> float:
        return self.bytes_moved / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    def line(self) -> str:
        return (f"{self.spec}  [{self.definition}]  elapsed {self.elapsed_s:.3f} s, "
                f"{self.bytes_moved / 1e6:.1f} MB moved, {self.rate_bytes_per_s / 1e6:.1f} MB/s")

    def as_dict(self) -> dict:
        return {"spec": self.spec, "definition": self.definition, "elapsed_s": self.elapsed_s,
                "bytes_moved": self.bytes_moved, "rate_bytes_per_s": self.rate_bytes_per_s, "bonnie": self.bonnie,
                "started_unix_s": self.started_unix_s}


def _bytes_moved(spec: str) -> int:
    from diskmodel.model.iopath.fileops import Kind
    from diskmodel.model.iopath.workload_spec import parse_workload

    ops = parse_workload(spec)
    moved = (ops.kind == Kind.READ) | (ops.kind == Kind.WRITE)
    if ops.fallback is not None and spec.startswith("copy"):
        moved &= ops.fallback  # cp's bytes: the read and write of a copy (a clone moves none)
    return int(ops.size_bytes[moved].sum())


def measure(spec: str, directory: str | os.PathLike, *, timeout_s: float = 1800.0, cgroup_procs=None) -> ToolResult:
    """Run the workload *spec* in *directory* (a folder of a mounted file system) and time it; its timed
    steps in the cgroup of *cgroup_procs* (a ``cgroup.procs`` file: a throttle), if given."""
    from diskmodel.calibrate.bench import process
    from diskmodel.calibrate.harness import runstate

    text = definition(spec)
    why = missing_tools(spec)
    if why:
        raise RuntimeError(why)
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"--directory {directory}: not a directory")
    with runstate.ensure_run(f"measure {spec}") as run:
        folder = directory / f"diskmodel-workload-{run.run_id}-{uuid.uuid4().hex[:8]}"
        res = run.intend("dir", path=str(folder))
        try:
            folder.mkdir()
            run.created(res, ino=os.lstat(folder).st_ino)
            prepare(spec, folder)
            # Timed here, each step a recorded child with no shell (not through steps_argv, whose
            # Python start-up would be timed too).
            started, t0 = time.time(), time.monotonic()
            outs = []
            for argv in steps(spec, folder) + [["sync", "-f", str(folder)]]:
                proc = process.spawn(argv, name=argv[0], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, cgroup_procs=cgroup_procs, cwd=folder)
                out, err = process.communicate_or_kill(proc, timeout_s)
                if proc.returncode != 0:
                    raise RuntimeError(f"workload {spec} in {directory}: {argv[0]} exited with status "
                                       f"{proc.returncode}: {(err or out).strip()[-300:]}")
                outs.append(out)
            elapsed = time.monotonic() - t0
        finally:
            # The folder goes now, not at the end of an enclosing run: the next workload finds the
            # file system as this one did.
            report = run.undo([res])
        if report.left:
            raise RuntimeError(f"workload {spec}: teardown left {'; '.join(report.left)}")
    bonnie = None
    if spec.startswith("bonnie"):
        from diskmodel.calibrate.bench.bonnie import parse_bonnie_csv

        config = workloads_bonnie.config_of(_spec(spec)[1], size_value)
        bonnie = parse_bonnie_csv(outs[0], config, elapsed).as_dict()
    if spec.startswith("postmark"):
        from diskmodel.calibrate.bench.postmark_text import check_echoed_config

        check_echoed_config(_postmark_config(spec), outs[0])  # PostMark ran what the model is given
    return ToolResult(spec, text, elapsed, _bytes_moved(spec), bonnie, started)


def pace_on_tmpfs(spec: str, *, timeout_s: float = 1800.0) -> float:
    """The workload's time on a tmpfs of its own [s]: the application alone (process start, system calls,
    copies, file operations) on this machine now, with no device (fsync and sync return at once, reads are
    page-cache hits). The model puts the workload's operations on that clock
    (:func:`diskmodel.model.iopath.workloads_pace.paced`). The tmpfs is recorded in the run before it is
    mounted and unmounted after, on every exit path."""
    from diskmodel.calibrate.bench.tmpfs import tmpfs_mounted
    from diskmodel.calibrate.harness import runstate
    from diskmodel.model.iopath.fileops import least_bytes_held
    from diskmodel.model.iopath.workload_spec import parse_workload

    size = least_bytes_held(parse_workload(spec)) * 2 + (64 << 20)  # the files, the copies made of them, slack
    with runstate.ensure_run(f"pace of {spec} on tmpfs") as run, tmpfs_mounted(run, size) as where:
        return measure(spec, where, timeout_s=timeout_s).elapsed_s


def _main(argv: list[str]) -> int:
    """Run the JSON list of argument vectors in order (no shell), then syncfs of the folder's file
    system (``sync -f``); stop at the first failure."""
    for step in json.loads(argv[0]) + [["sync", "-f", argv[1]]]:
        proc = subprocess.run(step, stdin=subprocess.DEVNULL, cwd=argv[1])
        if proc.returncode != 0:
            print(f"{step[0]} exited with status {proc.returncode}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
