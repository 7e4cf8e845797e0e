"""Fuzz the command line: every subcommand's every option with bad values, each run in a child, classified.

Each case runs ``diskmodel ARGS`` in its own empty working folder, in a
child with a wall-time limit (``--timeout-s``) and an address-space limit
(``--memory-bytes``, RLIMIT_AS), and is classified as one of:

* ``one_line``: non-zero exit, stderr exactly one line ``diskmodel: error: ...``, nothing written;
* ``accepted``: exit 0 (a value that is in fact valid);
* ``traceback``, ``usage_dump`` (argparse's usage lines before its error), ``multi_line`` (any other
  stderr of more than one line), ``hang`` (the time limit passed), ``crash`` (killed by a signal),
  ``memory`` (MemoryError or "out of memory"), ``files_written`` (a file appeared in the working
  folder or beside the inputs).

The cases come from the parser itself (:func:`diskmodel.calibrate.cli.build_parser`): for each option
that takes a value, bad values chosen by its kind (a number, a byte count, a choice, a file), plus each
subcommand with an unknown flag, a missing value and no arguments. Prints the counts and writes
``benchmarks/results/cli_fuzz.json`` (see ``_artifact.py``), with every case's class in its details.

Run as root (the postmark and bench cases check root first): ``python benchmarks/cli_fuzz.py``.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _artifact import add_results_dir_option, figure, options_of, write_result  # noqa: E402

DISKMODEL = str(Path(sys.executable).with_name("diskmodel"))

# Arguments each subcommand needs so that the option under test is what is wrong ({in}: the inputs folder).
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
}
NUMBER_VALUES = ["nan", "-1", "0", "inf", "-inf", "1e999", "abc", "", "9" * 5000]
BYTES_VALUES = ["-8M", "0", "1.5G", "9999999999T", "lots", "", "1" + "0" * 30]
FILE_VALUES = ["{in}/fifo", "/dev/zero", "{in}/a_dir", "{in}/missing.json", "{in}/empty", "{in}/binary",
               "{in}/long_line", "{in}/" + "x" * 300]
TEXT_VALUES = ["", "x" * 5000, "-", "nope=1=2"]


def _make_inputs(folder: Path, long_line: Path | None = None) -> None:
    """The inputs of one case, in a folder of its own (cases run at once must not see each other's outputs);
    the large single-line file is a hard link to *long_line* when given."""
    folder.mkdir(parents=True)
    os.mkfifo(folder / "fifo")
    (folder / "a_dir").mkdir()
    (folder / "empty").write_bytes(b"")
    (folder / "binary").write_bytes(bytes(range(256)) * 64)
    if long_line is None:
        (folder / "long_line").write_bytes(b"7" * (16 << 20))
    else:
        os.link(long_line, folder / "long_line")
    (folder / "stack.json").write_text('{"name": "x", "disks": [')


def _values_for(action: argparse.Action) -> list[str]:
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


def cases(per_option: int = 3) -> list[tuple[str, list[str]]]:
    from diskmodel.calibrate.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = [("no-such-command", ["no-such-command"]), ("top-unknown-flag", ["--nope"])]
    for name, subparser in sub.choices.items():
        base = BASE.get(name, [])
        out.append((f"{name}:unknown-flag", [name, *base, "--no-such-flag"]))
        out.append((f"{name}:no-arguments", [name]))
        for action in subparser._actions:
            if isinstance(action, argparse._HelpAction) or action.nargs == 0:
                continue
            flag = action.option_strings[0] if action.option_strings else None
            if flag is not None:
                out.append((f"{name}:{flag}:missing-value", [name, *base, flag]))
            values = _values_for(action)
            start = sum(map(ord, action.dest)) % len(values)  # a few values an option, spread over the list
            for i, value in [(k % len(values), values[k % len(values)]) for k in range(start, start + per_option)]:
                given = [flag, value] if flag else [value]
                rest = [a for a in base if flag is None or a != flag]
                if flag is not None and flag in base:  # replace the base's own value of the flag
                    k = base.index(flag)
                    rest = base[:k] + base[k + 2:]
                if flag is None and name in ("calibrate", "probe"):
                    rest = [a for a in rest if "{in}/missing" not in a]
                out.append((f"{name}:{flag or action.dest}:{i}", [name, *rest, *given]))
    return out


def _limits(memory_bytes: int):
    def apply():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    return apply


def _listing(*folders: Path) -> list[str]:
    return sorted(str(p) for f in folders for p in f.rglob("*"))


def run_case(args: list[str], master: Path, root: Path, ident: str, timeout_s: float, memory_bytes: int) -> dict:
    case = root / "cases" / ident.replace("/", "_").replace(":", "_")[:100]
    work, inputs = case / "work", case / "inputs"
    work.mkdir(parents=True)
    _make_inputs(inputs, master / "long_line")
    fill = {"{in}": str(inputs), "{work}": str(work)}
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
    if hung:
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
    return {"id": ident, "args": [a[:200] for a in argv], "class": kind, "code": proc.returncode,
            "seconds": round(time.monotonic() - start, 2), "stderr": text[:600], "written": written[:5]}


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
    try:
        inputs = root / "inputs"   # the master copy; each case gets its own (_make_inputs)
        _make_inputs(inputs)
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda c: run_case(c[1], inputs, root, c[0], args.timeout_s, args.memory_bytes),
                                    plan))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    counts = Counter(r["class"] for r in results)
    print(f"{len(results)} cases: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    for r in results:
        if r["class"] not in ("one_line", "accepted"):
            print(f"  {r['class']:<13} {r['id']}: {' '.join(r['args'])[:160]} -> {r['stderr'][:200]!r}")
    n = len(results)
    figures = {
        "one_line_pct": figure(100.0 * counts["one_line"] / n if n else None, "%",
                               "bad command lines answered with one error line, nothing written",
                               decimals=1, headline=True),
        "cases": figure(n, "count", "command lines tried", decimals=0),
        **{f"{kind}_cases": figure(counts[kind], "count", f"cases classed {kind}", decimals=0)
           for kind in ("accepted", "traceback", "usage_dump", "multi_line", "hang", "crash", "memory",
                        "files_written")},
    }
    write_result("cli_fuzz", figures, options=options_of(parser, args), details={"cases": results},
                 results_dir=args.results_dir)
    print(f"one_line: {counts['one_line']} of {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
