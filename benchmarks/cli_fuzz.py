"""Fuzz the command line: every subcommand's every option with bad values, each run in a child, classified.

Each case runs ``diskmodel ARGS`` in its own empty working folder, in a
child with a wall-time limit (``--timeout-s``) and an address-space limit
(``--memory-bytes``, RLIMIT_AS), and is classified as one of:

* ``one_line``: non-zero exit, stderr exactly one line ``diskmodel: error: ...``, nothing written
  (each case also says whether that line names the option it tried, or for a positional argument its
  name: ``names_option``; a line about something else means the value was never looked at);
* ``accepted``: exit 0 (a value that is in fact valid);
* ``traceback``, ``usage_dump`` (argparse's usage lines before its error), ``multi_line`` (any other
  stderr of more than one line), ``hang`` (the time limit passed), ``crash`` (killed by a signal),
  ``memory`` (MemoryError or "out of memory"), ``files_written`` (a file appeared in the working
  folder or beside the inputs), ``node_replaced`` (the character device node given as a file is
  gone or is no longer one: the run wrote its output over it).

The cases come from the parser itself (:func:`diskmodel.calibrate.cli.build_parser`), its nested actions
too (``trace record``): for each option that takes a value, bad values chosen by its kind (a number, a
byte count, a choice, a file, a drive), plus each subcommand with an unknown flag, a missing value and no
arguments. Each subcommand gets the other arguments it needs (:data:`BASE`: the emulated drive a flat
calibration made here, ``trace record`` a loop device over a file made here and a command after ``--``),
so that the option under test is what is wrong. Prints the counts and writes
``benchmarks/results/cli_fuzz.json`` (see ``_artifact.py``), with every case's class in its details.

Run as root (the postmark and bench cases check root first): ``python benchmarks/cli_fuzz.py``.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _artifact import run_main, add_results_dir_option, figure, options_of, write_result  # noqa: E402

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))

# Arguments each subcommand needs so that the option under test is what is wrong ({in}: the inputs folder,
# {flat}: a flat drive's calibration, {loop}: a loop device over a 16 MiB file, both made by main()).
BASE = {
    "experiment": ["--no-progress", "--out", "{work}/report"],
    "calibrate": ["{in}/missing.img", "--no-progress"],
    "predict": [],
    "probe": ["{in}/missing-device"],
    # small enough that a value that is in fact valid runs to its end within the time limit
    "postmark": ["--layout", "native", "--workload", "test1", "--scratch", "{work}/s.img", "--quiet", "--size", "16M",
                 "--files", "50", "--transactions", "200", "--max-size", "8000"],
    "validate-trace": [],
    "bench": ["--stack", "{in}/stack.json", "--workload", "copy", "--scratch", "{work}/s.img"],
    "cleanup": ["--dry-run"],
    "emulate": ["{flat}", "--for-s", "1"],
    "emulate-log": ["{in}/empty"],
    "iopath": ["--stack", "native", "--workload", "copy:size=4M"],
    "trace record": ["--device", "{loop}", "--output", "{work}/t.npz"],
}
# Arguments that go after the option under test ("--" ends trace record's options).
TAIL = {"trace record": ["--", "true"]}
# Base arguments an option excludes: --emulate replaces the scratch.
EXCLUDES = {"--emulate": ("--scratch",)}
DRIVE_VALUES = ["nope", "{in}/fifo", "{in}/zero", "{in}/a_dir", "{in}/empty", "{in}/binary", "x" * 300, ""]
NUMBER_VALUES = ["nan", "-1", "0", "inf", "-inf", "1e999", "abc", "", "9" * 5000]
BYTES_VALUES = ["-8M", "0", "1.5G", "9999999999T", "lots", "", "1" + "0" * 30]
# {in}/zero is a character device node like /dev/zero (1, 5) made in the case's own folder: an option that
# wrongly writes to it replaces that node, never the machine's /dev/zero
FILE_VALUES = ["{in}/fifo", "{in}/zero", "{in}/a_dir", "{in}/missing.json", "{in}/empty", "{in}/binary",
               "{in}/long_line", "{in}/" + "x" * 300]
TEXT_VALUES = ["", "x" * 5000, "-", "nope=1=2"]


def _make_inputs(folder: Path, long_line: Path | None = None) -> None:
    """The inputs of one case, in a folder of its own (cases run at once must not see each other's outputs);
    the large single-line file is a hard link to *long_line* when given."""
    folder.mkdir(parents=True)
    os.mkfifo(folder / "fifo")
    os.mknod(folder / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    (folder / "a_dir").mkdir()
    (folder / "empty").write_bytes(b"")
    (folder / "binary").write_bytes(bytes(range(256)) * 64)
    if long_line is None:
        (folder / "long_line").write_bytes(b"7" * (16 << 20))
    else:
        os.link(long_line, folder / "long_line")
    (folder / "stack.json").write_text('{"name": "x", "disks": [')


def _values_for(action: argparse.Action) -> list[str]:
    if action.dest in ("emulate", "drives"):
        return DRIVE_VALUES
    if action.choices:
        return ["nope", "", "x" * 5000]
    kind = getattr(action.type, "__name__", "")
    dest = action.dest
    if kind in ("_bytes",) or dest.endswith(("size", "bytes", "memory", "limit")):
        return BYTES_VALUES
    if kind in ("int", "float", "positive_seconds") or dest.endswith(("_s", "seed", "repeats", "transactions",
                                                                         "files")):
        return NUMBER_VALUES
    meta = (action.metavar or "").upper()
    if any(w in meta for w in ("FILE", "JSON", "PATH", "DIR", "OUT", "CAL")) or dest in (
            "stack", "calibration", "costs", "disk", "json", "out", "device", "scratch", "destroy_data_on",
            "simulated", "backend", "path", "diskdir"):
        return FILE_VALUES
    return TEXT_VALUES


def _commands(parser: argparse.ArgumentParser, prefix: tuple = ()):
    """(words, subparser) of every command, nested ones (``trace record``) too; a command with actions of
    its own is yielded without them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                words = (*prefix, *name.split())
                yield words, subparser
                yield from _commands(subparser, words)


def _without(base: list[str], flags) -> list[str]:
    """*base* less each of *flags* and the value after it."""
    out, skip = [], False
    for a in base:
        if skip:
            skip = False
        elif a in flags:
            skip = True
        else:
            out.append(a)
    return out


def cases(per_option: int = 3) -> list[tuple[str, list[str], str | None]]:
    """(id, argv, what the error must name: the option's flag, a positional's name, or None)."""
    from diskmodel.calibrate.cli import build_parser

    out = [("no-such-command", ["no-such-command"], None), ("top-unknown-flag", ["--nope"], None)]
    for words, subparser in _commands(build_parser()):
        name = " ".join(words)
        base, tail = BASE.get(name, []), TAIL.get(name, [])
        out.append((f"{name}:unknown-flag", [*words, *base, "--no-such-flag", *tail], "--no-such-flag"))
        out.append((f"{name}:no-arguments", [*words], None))
        for action in subparser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.nargs == 0:
                continue
            if action.nargs == argparse.REMAINDER or (name in TAIL and not action.option_strings):
                continue   # the traced command: any words are valid
            flag = action.option_strings[0] if action.option_strings else None
            named = flag or (action.metavar if isinstance(action.metavar, str) else action.dest.upper())
            if flag is not None:
                out.append((f"{name}:{flag}:missing-value", [*words, *base, flag], flag))
            values = _values_for(action)
            start = sum(map(ord, action.dest)) % len(values)  # a few values an option, spread over the list
            for i, value in [(k % len(values), values[k % len(values)]) for k in range(start, start + per_option)]:
                given = [flag, value] if flag else [value]
                rest = _without(base, (flag, *EXCLUDES.get(flag, ()))) if flag is not None else list(base)
                if flag is None and name in ("calibrate", "probe", "emulate", "emulate-log"):
                    rest = [a for a in rest if "{in}/missing" not in a and a not in ("{flat}", "{in}/empty")]
                out.append((f"{name}:{flag or action.dest}:{i}", [*words, *rest, *given, *tail], named))
    return out


def _limits(memory_bytes: int):
    def apply():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    return apply


def _listing(*folders: Path) -> list[str]:
    return sorted(str(p) for f in folders for p in f.rglob("*"))


def run_case(args: list[str], master: Path, root: Path, ident: str, timeout_s: float, memory_bytes: int,
             named: str | None = None, fill_more: dict | None = None) -> dict:
    case = root / "cases" / ident.replace("/", "_").replace(":", "_")[:100]
    work, inputs = case / "work", case / "inputs"
    work.mkdir(parents=True)
    _make_inputs(inputs, master / "long_line")
    fill = {"{in}": str(inputs), "{work}": str(work), **(fill_more or {})}
    argv = []
    for a in args:
        for k, v in fill.items():
            a = a.replace(k, v)
        argv.append(a)
    before = _listing(inputs)
    env = dict(os.environ, DISKMODEL_RUN_DIR=str(root / "runstate"))
    env.pop("DISKMODEL_DEBUG", None)
    start = time.monotonic()
    proc = subprocess.Popen([DISKMODEL, *argv], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_limits(memory_bytes))
    try:
        out, err = proc.communicate(timeout=timeout_s)
        hung = False
    except subprocess.TimeoutExpired:  # SIGTERM first: a run tears down what it built on it
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        hung = True
    text = err.decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.strip()]
    written = _listing(work) + [p for p in _listing(inputs) if p not in before]
    try:
        node_replaced = not stat.S_ISCHR(os.lstat(inputs / "zero").st_mode)
    except FileNotFoundError:
        node_replaced = True
    if node_replaced:
        kind = "node_replaced"
    elif hung:
        kind = "hang"
    elif proc.returncode < 0:
        kind = "crash"
    elif "MemoryError" in text or "out of memory" in text:
        kind = "memory"
    elif "Traceback" in text:
        kind = "traceback"
    elif proc.returncode == 0:
        kind = "accepted"  # a valid value: the run may write its outputs
    elif written:
        kind = "files_written"
    elif lines and lines[0].startswith("usage:"):
        kind = "usage_dump"
    elif len(lines) == 1 and lines[0].startswith("diskmodel: error: "):
        kind = "one_line"
    else:
        kind = "multi_line"
    shutil.rmtree(case, ignore_errors=True)
    names_option = None if kind != "one_line" or named is None else named.lower() in lines[0].lower()
    return {"id": ident, "args": [a[:200] for a in argv], "class": kind, "names_option": names_option,
            "code": proc.returncode,
            "seconds": round(time.monotonic() - start, 2), "stderr": text[:600], "written": written[:5]}


def _flat_calibration(root: Path) -> Path:
    """A flat (flash-like) drive's calibration, the drive the emulate cases serve (tests/_faults.py's)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from diskmodel.calibrate.harness.measure import calibrate
    from diskmodel.calibrate.harness.results import calibration_to_json

    from _helpers import FlatBackend

    path = root / "flat.json"
    calibration_to_json(calibrate(FlatBackend(), budget_s=5.0, progress=False), path)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_results_dir_option(parser)
    parser.add_argument("--timeout-s", type=float, default=90.0, help="wall-time limit of a case (default 90)")
    parser.add_argument("--memory-bytes", type=int, default=6 << 30, help="RLIMIT_AS of a case (default 6 GiB)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--per-option", type=int, default=3, help="bad values tried an option (default 3)")
    parser.add_argument("--only", default=None, help="run the cases whose id contains this (default: all)")
    args = parser.parse_args(argv)
    plan = [c for c in cases(args.per_option) if args.only is None or args.only in c[0]]
    root = Path(tempfile.mkdtemp(prefix="diskmodel-fuzz-"))
    loop = None
    try:
        inputs = root / "inputs"   # the master copy; each case gets its own (_make_inputs)
        _make_inputs(inputs)
        traced = root / "traced.img"
        traced.write_bytes(b"")
        os.truncate(traced, 16 << 20)
        loop = subprocess.run(["losetup", "--find", "--show", str(traced)], capture_output=True, text=True,
                              check=True).stdout.strip()
        fill = {"{flat}": str(_flat_calibration(root)), "{loop}": loop}
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda c: run_case(c[1], inputs, root, c[0], args.timeout_s, args.memory_bytes,
                                                       c[2], fill), plan))
    finally:
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
    counts = Counter(r["class"] for r in results)
    other = [r for r in results if r["names_option"] is False]
    print(f"{len(results)} cases: " + ", ".join(f"{k} {v}" for k, v in counts.most_common())
          + f"; one line about something else than the option tried: {len(other)}")
    for r in results:
        if r["class"] not in ("one_line", "accepted") or r["names_option"] is False:
            what = r["class"] if r["names_option"] is not False else "other_line"
            print(f"  {what:<13} {r['id']}: {' '.join(r['args'])[:160]} -> {r['stderr'][:200]!r}")
    n = len(results)
    figures = {
        "one_line_pct": figure(100.0 * counts["one_line"] / n if n else None, "%",
                               "bad command lines answered with one error line, nothing written",
                               decimals=1, headline=True),
        "cases": figure(n, "count", "command lines tried", decimals=0),
        "one_line_naming_something_else_cases": figure(len(other), "count",
                                                       "one-line errors that do not name the option (or positional "
                                                       "argument) the case tried: the value was not looked at",
                                                       decimals=0),
        **{f"{kind}_cases": figure(counts[kind], "count", f"cases classed {kind}", decimals=0)
           for kind in ("accepted", "traceback", "usage_dump", "multi_line", "hang", "crash", "memory",
                        "files_written", "node_replaced")},
    }
    write_result("cli_fuzz", figures, options=options_of(parser, args), details={"cases": results},
                 results_dir=args.results_dir)
    print(f"one_line: {counts['one_line']} of {n}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
