"""The audit of the places that start processes: argument vectors only, never a shell, and each one known.

Read from the source (its syntax tree), so that a new place is seen the day it is written:

* nowhere in ``model/``, ``calibrate/`` or ``benchmarks/`` does a call pass ``shell=`` or run a command
  line through ``os.system``, ``os.popen``, ``os.exec*``, ``os.spawn*``, ``pty.spawn``,
  ``asyncio.create_subprocess_*`` or ``subprocess.getoutput``/``getstatusoutput``;
* ``model/`` starts no process at all (it is pure);
* every ``subprocess.run``/``Popen``/``check_output``/``check_call``/``call`` in ``calibrate/`` is given
  an argument vector (never a string, an f-string or a concatenation of strings), and they are exactly
  the places :data:`DIRECT` lists. Everything else a run starts goes through
  :func:`diskmodel.calibrate.bench.process.spawn` (or its :func:`~diskmodel.calibrate.bench.process.run`),
  which records the child in the run and kills its process group on a signal; a new direct place is
  either moved there or added here, once someone has read it.
"""
from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("model", "calibrate", "benchmarks")
STARTERS = {"run", "Popen", "check_output", "check_call", "call"}
SHELL_ONLY = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput"),
              ("pty", "spawn"), ("asyncio", "create_subprocess_shell"), ("asyncio", "create_subprocess_exec")}

#: The direct process starts in calibrate/ (file: count), each read: a tool probed for its version or
#: listing (no run, nothing created), the teardown's own tools, spawn itself, the workload runner's steps.
DIRECT = {
    "calibrate/bench/archive.py": 1,        # cpio writing the initramfs archive from a list on stdin
    "calibrate/bench/initramfs.py": 2,      # the host's tools probed (--version, busybox --list-full)
    "calibrate/bench/process.py": 1,        # spawn's Popen: every recorded child
    "calibrate/bench/tool_workloads.py": 1,  # the workload runner's steps, argument vectors it was given
    "calibrate/bench/vm.py": 1,             # qemu --version
    "calibrate/emulate/devices.py": 1,      # nbdkit --dump-plugin python (is the plugin there)
    "calibrate/emulate/for_vm.py": 1,       # the same, for the VM's drives
    "calibrate/harness/device.py": 1,       # filefrag of the calibrated file (read only)
    "calibrate/harness/devstate.py": 1,     # lsblk/losetup/findmnt --json (read only)
    "calibrate/harness/probe.py": 1,        # a tool's --version for probe's report
    "calibrate/harness/resources.py": 2,    # the teardown's own tools (umount, losetup -d, lvm reports)
}


@functools.lru_cache(maxsize=1)
def _calls() -> tuple:
    """(file, call node) of every call in the audited folders, parsed once for both tests."""
    out = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            name = path.relative_to(ROOT).as_posix()
            out += [(name, node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return tuple(out)


def _owner_and_name(call: ast.Call) -> tuple[str | None, str | None]:
    f = call.func
    if isinstance(f, ast.Attribute):
        return (f.value.id if isinstance(f.value, ast.Name) else None), f.attr
    return None, (f.id if isinstance(f, ast.Name) else None)


def _is_text(node: ast.AST) -> bool:
    """A string, an f-string or a string concatenation: a command line, not an argument vector."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.BinOp) and (_is_text(node.left) or _is_text(node.right))


def test_no_call_runs_a_command_line_through_a_shell():
    found = []
    for name, node in _calls():
        owner, attr = _owner_and_name(node)
        if any(k.arg == "shell" for k in node.keywords):
            found.append(f"{name}:{node.lineno}: shell= given")
        if (owner, attr) in SHELL_ONLY or (owner == "os" and attr and attr.startswith(("exec", "spawn"))):
            found.append(f"{name}:{node.lineno}: {owner}.{attr}")
    assert found == []


def test_every_direct_process_start_is_an_argument_vector_and_a_known_place():
    sites, text_argv = Counter(), []
    for name, node in _calls():
        owner, attr = _owner_and_name(node)
        if owner != "subprocess" or attr not in STARTERS:
            continue
        assert not name.startswith("model/"), f"{name}:{node.lineno}: model/ starts a process"
        argv = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
        if argv is not None and _is_text(argv):
            text_argv.append(f"{name}:{node.lineno}")
        if name.startswith("calibrate/"):
            sites[name] += 1
    assert text_argv == [], "a command line given as text"
    assert dict(sites) == DIRECT, ("the direct process starts in calibrate/ changed: start the new one through "
                                   "process.spawn or process.run (recorded, killed with the run), or read it and "
                                   "add it to DIRECT")
    assert sum(DIRECT.values()) == 13
