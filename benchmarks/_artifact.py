"""Benchmark results as artifacts: one JSON file per benchmark, ``benchmarks/results/NAME.json``.

Every benchmark in this folder ends by calling :func:`write_result` with its
figures, its options and (optionally) details such as per-row tables.  The
file records, next to the figures, the environment the figures were measured
in (:func:`environment`): CPU model, core count, kernel release, Python and
library versions, the git commit and whether the tree was dirty, the date
(UTC, ISO 8601) and the command line.  ``benchmarks/readme_figures.py`` builds
the README's figure table from these files, and
``tests/test_benchmark_artifacts.py`` checks them.

A figure is a dict made by :func:`figure`: ``value`` (a number, in ``unit``,
rounded to ``decimals`` places when shown), ``label`` (what it is),
``headline`` (shown in the README table) and optionally ``target`` (the
value the issue asks for, in the same unit; a target is not a measurement).

The file is written atomically (a temporary file in the same folder, then
``os.replace``), so a reader never sees half an artifact.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, create_model

from diskmodel.calibrate.harness.calibration_schema import (COUNT, FLAG, NUMBER, OBJECT, TEXT, _Object, _object,
                                                           _words, first_error)
from diskmodel.calibrate.harness.outputs import replace_file_atomically

#: Version of the artifact format; readme_figures.py treats other versions as "not run under this version".
SCHEMA = 1
BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
RESULTS_DIR = BENCHMARKS / "results"
PACKAGES = ("numpy", "scipy", "pandas", "statsmodels", "numba")
#: Keys every artifact's "environment" holds (tests/test_benchmark_artifacts.py checks them).
ENVIRONMENT_KEYS = ("cpu_model", "cpu_count", "cpus_available", "kernel_release", "python_version",
                    "packages", "git_commit", "git_dirty", "date_utc", "command_line", "load_average")
#: Keys of a figure.
FIGURE_KEYS = ("value", "unit", "decimals", "label", "headline")


class Figure(_Object):
    """A figure as :func:`figure` makes it (no other key)."""

    model_config = ConfigDict(extra="forbid")
    value: NUMBER.or_null()
    unit: TEXT.field()
    decimals: COUNT.field()
    label: TEXT.field()
    headline: FLAG.field()
    target: NUMBER.field() = None


Environment = create_model("Environment", __base__=_Object, **{key: (Any, ...) for key in ENVIRONMENT_KEYS})


class Artifact(_Object):
    """An artifact as :func:`write_result` writes it, read with pydantic v2 (the schema library of every JSON
    of diskmodel, :mod:`diskmodel.calibrate.harness.calibration_schema`'s types)."""

    model_config = ConfigDict(extra="forbid")
    schema_: Annotated[Literal[1], _words("1")] = Field(alias="schema")
    benchmark: TEXT.field()
    script: TEXT.field()
    figures: Annotated[dict[str, _object(Figure)], Field(min_length=1), _words("an object of figures")]
    options: OBJECT.field()
    non_default_options: OBJECT.field()
    notes: TEXT.list()
    environment: _object(Environment)
    details: OBJECT.field()


def check_artifact(document, source: str) -> dict:
    """*document* if it is an artifact, else ValueError naming *source*, the key and the value (one line)."""
    try:
        Artifact.model_validate(document)
    except ValidationError as exc:
        key, problem = first_error(exc)
        raise ValueError(f"{source}: key '{key}' {problem}") from None
    if not any(f.get("headline") for f in document["figures"].values()):
        raise ValueError(f"{source}: at least one headline figure is needed")
    return document


def figure(value, unit: str, label: str, *, decimals: int, headline: bool = False, target=None) -> dict:
    """One figure of an artifact: *value* [*unit*], shown with *decimals* places."""
    value = None if value is None or (isinstance(value, float) and not math.isfinite(value)) else float(value)
    out = {"value": value, "unit": unit, "decimals": int(decimals), "label": label, "headline": bool(headline)}
    if target is not None:
        # a target is an upper bound in the figure's own unit; the README table prints it as "≤ target unit"
        if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target):
            raise ValueError(f"target must be a finite number in {unit or 'the figure unit'} (got {target!r})")
        out["target"] = float(target)
    return out


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _git(*args: str) -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout if res.returncode == 0 else None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def environment(argv: list[str] | None = None) -> dict:
    """Where and how the figures were measured.

    ``git_dirty`` is whether tracked or untracked files differ from the commit,
    not counting ``benchmarks/results/`` (the artifacts themselves);
    ``git_dirty_paths`` lists them (porcelain status lines).
    """
    argv = list(sys.argv if argv is None else argv)
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--", ".", ":(exclude)benchmarks/results")
    dirty_paths = None if status is None else [line for line in status.splitlines() if line.strip()]
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = None
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    script = Path(argv[0]) if argv else None
    if script is not None and script.is_absolute():
        try:
            script = script.relative_to(REPO)
        except ValueError:
            pass
    shown = ["python", str(script), *argv[1:]] if script is not None else []
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_available": available,
        "kernel_release": platform.release(),
        "python_version": platform.python_version(),
        "packages": {name: _version(name) for name in (*PACKAGES, "diskmodel")},
        "git_commit": commit.strip() if commit else None,
        "git_dirty": None if dirty_paths is None else bool(dirty_paths),
        "git_dirty_paths": dirty_paths,
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command_line": shlex.join(shown),
        "argv": argv,
        "load_average": load,
    }


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _jsonable(value.item())
    return value


def run_main(main) -> int:
    """``main()``'s exit status, with SIGINT, SIGTERM, SIGHUP and SIGQUIT turned into an interrupt for the
    whole run (:class:`~diskmodel.calibrate.harness.interrupts.handle_signals`, as the command line holds it),
    so every ``finally`` and ``with`` of the run tears down what it built; the interrupt then ends the script
    with one line and status 128 + the signal's number, not a traceback."""
    import signal

    from diskmodel.calibrate.harness.interrupts import handle_signals

    try:
        with handle_signals():
            return main()
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"{Path(sys.argv[0]).name}: error: interrupted by {signal.Signals(signum).name}; the run did not "
              "finish and wrote no artifact", file=sys.stderr)
        return 128 + int(signum)


def add_results_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--results-dir``: where the artifact goes (default benchmarks/results)."""
    parser.add_argument("--results-dir", type=Path, default=None,
                        help=f"folder for the result artifact NAME.json (default {RESULTS_DIR})")


def options_of(parser: argparse.ArgumentParser, args: argparse.Namespace, *, housekeeping=()) -> dict:
    """The parsed options as a dict, and those that differ from the parser's defaults.

    Returns ``{"options": {...}, "non_default_options": {...}}``.  ``results_dir`` is left out
    (it says where the artifact went, not how the figures were measured); the options named in
    *housekeeping* (e.g. deleting a scratch file afterwards) are kept in ``options`` but never
    counted as non-default, since they cannot change a figure.
    """
    values = {k: _jsonable(v) for k, v in vars(args).items() if k != "results_dir"}
    changed = {k: v for k, v in values.items()
               if k not in housekeeping and v != _jsonable(parser.get_default(k))}
    return {"options": values, "non_default_options": changed}


def write_result(name: str, figures: dict, *, options: dict, details: dict | None = None,
                 notes: list[str] | None = None, results_dir: Path | None = None,
                 argv: list[str] | None = None) -> Path | None:
    """Write ``results_dir/NAME.json`` atomically and return its path.

    *figures*: name -> :func:`figure`; *options*: :func:`options_of`'s dict (or a plain dict of
    options, taken as all default); *details*: anything else worth keeping (tables per row);
    *notes*: sentences about the run (e.g. reduced options).  Returns None, having written
    nothing, when run inside a pytest test without an explicit *results_dir*.
    """
    if "options" not in options:
        options = {"options": _jsonable(options), "non_default_options": {}}
    folder = Path(results_dir) if results_dir is not None else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "schema": SCHEMA,
        "benchmark": name,
        "script": f"benchmarks/{name}.py",
        "figures": _jsonable(figures),
        **_jsonable(options),
        "notes": list(notes or []),
        "environment": environment(argv),
        "details": _jsonable(details or {}),
    }
    check_artifact(document, name)
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    target = folder / f"{name}.json"
    replace_file_atomically(target, text.encode("utf-8"))
    print(f"(result artifact: {target})", file=sys.stderr)
    return target
