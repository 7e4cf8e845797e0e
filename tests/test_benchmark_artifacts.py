"""Benchmark results as artifacts (issue #13, item 7, "Results as artifacts").

Every benchmark in ``benchmarks/`` writes ``benchmarks/results/NAME.json``
(its figures, its options and its environment), the README's figure table is
generated from those files, no other sentence of the README quotes a measured
figure that no artifact holds, and no benchmark docstring holds a measured
number.  These tests read the artifacts, the README and the benchmark sources
as text (docstrings through ``ast``); they import no benchmark module and run
none: only ``benchmarks/readme_figures.py --check``, in a subprocess.
"""
from __future__ import annotations

import ast
import datetime as dt
import json
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"
README = REPO_ROOT / "README.md"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
NOT_RUN = "not yet run under this version"
#: Files in benchmarks/ that are not benchmarks (the shared artifact code and the README generator).
NOT_BENCHMARKS = {"_artifact", "readme_figures"}
ENVIRONMENT_KEYS = ("cpu_model", "cpu_count", "cpus_available", "kernel_release", "python_version", "packages",
                    "git_commit", "git_dirty", "date_utc", "command_line", "load_average")
PACKAGES = ("numpy", "scipy", "pandas", "statsmodels", "numba")
FIGURE_KEYS = ("value", "unit", "decimals", "label", "headline")


def _benchmarks() -> list[str]:
    return sorted(p.stem for p in BENCHMARKS.glob("*.py")
                  if p.stem not in NOT_BENCHMARKS and not p.stem.startswith("_"))  # _name.py: a helper module


def _artifacts() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(RESULTS.glob("*.json"))}


# --------------------------------------------------------------------------- units

_TIME = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
         "min": 60.0, "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0}
_BYTE_RATE = {"B/s": 1.0, "kB/s": 1e3, "KB/s": 1e3, "KiB/s": 1024.0, "MB/s": 1e6, "MiB/s": 2.0**20,
              "GB/s": 1e9, "GiB/s": 2.0**30, "Mb/s": 1.25e5, "Gb/s": 1.25e8}
_COUNT_RATE = {"/s": 1.0, "requests/s": 1.0, "k/s": 1e3, "M/s": 1e6}
#: unit -> (dimension, factor to the dimension's base unit)
UNITS = {"%": ("percent", 1.0),
         **{u: ("time", f) for u, f in _TIME.items()},
         **{u: ("byte rate", f) for u, f in _BYTE_RATE.items()},
         **{u: ("count rate", f) for u, f in _COUNT_RATE.items()}}
# longest first, so "ms" is not read as "m" + "s" and "MB/s" not as "B/s"
_UNIT_RE = "|".join(re.escape(u) for u in sorted(set(UNITS) - {"/s"}, key=len, reverse=True))
_NUMBER_RE = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
#: A number (or a range "a-b", "a–b", "a to b") followed by a unit, not inside a word or a longer number.
QUOTED = re.compile(rf"(?<![\w.,/-])(?P<a>{_NUMBER_RE})(?:\s*(?:-|–|to)\s*(?P<b>{_NUMBER_RE}))?"
                    rf"\s*(?P<unit>{_UNIT_RE})(?![\w/])")


def quoted_figures(text: str) -> list[tuple[str, str]]:
    """(number as written, unit) for every number with a unit in *text*; a range gives both ends."""
    out = []
    for m in QUOTED.finditer(text):
        for end in ("a", "b"):
            if m.group(end):
                out.append((m.group(end), m.group("unit")))
    return out


def _matches(number: str, unit: str, fig: dict) -> bool:
    """Whether *number* [*unit*] is *fig*'s value, converted to *unit* and rounded as written."""
    if fig.get("value") is None or fig.get("unit") not in UNITS or UNITS[fig["unit"]][0] != UNITS[unit][0]:
        return False
    value = fig["value"] * UNITS[fig["unit"]][1] / UNITS[unit][1]
    decimals = len(number.split(".")[1]) if "." in number else 0
    return round(value, decimals) == float(number.replace(",", ""))


# --------------------------------------------------------------------------- README regions

def readme_prose(text: str) -> str:
    """The README without what the quoted-figure rule exempts (see test_readme_quotes_only_artifact_figures)."""
    text = re.sub(r"<!--.*?-->", "", text.replace(text[text.index(BEGIN):text.index(END) + len(END)], ""),
                  flags=re.S)
    kept, fenced, presets = [], False, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if line.startswith("## "):
            presets = line.strip() == "## Where the presets and data come from"
        if fenced or (presets and line.lstrip().startswith("|")):
            continue
        kept.append(re.sub(r"`[^`\n]*`", "", line))
    return "\n".join(kept)


def figure_rows(text: str) -> list[list[str]]:
    """The cells of each table row between the figure markers (header and rule left out)."""
    block = text[text.index(BEGIN):text.index(END)]
    rows = []
    for line in block.splitlines():
        if line.startswith("|") and not line.startswith("| ---") and not line.startswith("| command |"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


# --------------------------------------------------------------------------- (a) the README's table

def test_readme_figures_are_generated_from_the_artifacts():
    """``readme_figures.py --check`` finds the README's table identical to what the artifacts give."""
    res = subprocess.run([sys.executable, str(BENCHMARKS / "readme_figures.py"), "--check"], capture_output=True,
                         text=True, timeout=120, cwd=REPO_ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_each_figure_in_the_readme_table_is_its_artifacts_value():
    """Independently of the generator: each row's value is the artifact's figure, rounded as recorded,
    with its date and commit; a benchmark shown as not run has no artifact."""
    text = README.read_text(encoding="utf-8")
    artifacts = _artifacts()
    rows = figure_rows(text)
    assert rows, "no figure table between the markers"
    shown = {}
    current = None
    for cells in rows:
        assert len(cells) == 5, cells
        command, _, label, value, run = cells
        if command:
            current = re.fullmatch(r"`python benchmarks/(\w+)\.py`", command).group(1)
            shown[current] = []
            if value == NOT_RUN:
                assert current not in artifacts, f"{current} has an artifact but the README says it was not run"
                continue
            doc = artifacts[current]
            env = doc["environment"]
            assert run.startswith(f"{env['date_utc'][:10]}, `{env['git_commit'][:7]}`"), (current, run)
        if label.startswith("note:"):
            continue
        key = re.search(r"\(`([^`]+)`\)", label).group(1)
        fig = artifacts[current]["figures"][key]
        assert fig["headline"], (current, key)
        number = f"{fig['value']:,.{fig['decimals']}f}"
        assert value == (f"{number} {fig['unit']}" if fig["unit"] else number), (current, key, value)
        shown[current].append(key)
    assert sorted(shown) == _benchmarks(), "every benchmark has a row, and only benchmarks"
    for name, keys in shown.items():
        if name in artifacts:
            headline = [k for k, f in artifacts[name]["figures"].items() if f["headline"]]
            assert keys == headline, (name, keys, headline)


# --------------------------------------------------------------------------- (b) figures quoted elsewhere

def test_readme_quotes_only_artifact_figures():
    """A number with a unit quoted in the README's prose must be a figure of some artifact.

    Checked: every number (or each end of a range such as ``30-150 %``) directly followed
    by a percent sign, a time unit (ns, µs/us, ms, s, min, h and their words) or a rate
    (B/s ... GB/s, KiB/s ... GiB/s, Mb/s, Gb/s, M/s, k/s, requests/s).  It is accepted when a
    figure of an artifact in benchmarks/results/ (its ``figures``, not its ``details``) has
    the same dimension and, converted to the quoted unit and rounded to the quoted number of
    decimals, equals the quoted number.  Sizes (KiB, GB ...), counts and plain numbers are
    not checked.  Exempt, and only these: the generated block between the figure markers
    (checked by the tests above), fenced code blocks, inline code spans, HTML comments, and
    the table of the section "Where the presets and data come from" (literature values).
    """
    artifacts = _artifacts()
    figures = [fig for doc in artifacts.values() for fig in doc["figures"].values()]
    prose = readme_prose(README.read_text(encoding="utf-8"))
    unmatched = [f"{number} {unit}" for number, unit in quoted_figures(prose)
                 if not any(_matches(number, unit, fig) for fig in figures)]
    assert not unmatched, f"README quotes figures no artifact holds: {unmatched}"


def test_the_quoted_figure_rule_can_fail():
    fig = {"value": 18.431, "unit": "%", "decimals": 1}
    assert quoted_figures("the median error is 18.4 %, misses by 30-150 % in 1.5 minutes at 3.6 MB/s") == [
        ("18.4", "%"), ("30", "%"), ("150", "%"), ("1.5", "minutes"), ("3.6", "MB/s")]
    assert _matches("18.4", "%", fig) and _matches("18", "%", fig)
    assert not _matches("18.5", "%", fig) and not _matches("18.4", "ms", fig)
    assert _matches("1.5", "minutes", {"value": 91.0, "unit": "s", "decimals": 0})
    assert _matches("13.4", "M/s", {"value": 13.39e6, "unit": "requests/s", "decimals": 0})
    assert quoted_figures("Tables 4-6, 4 KiB reads, Python 3.11, ext3, 18 cells, eq. 7, doi:10.17559/TV-2013") == []
    prose = readme_prose(f"a 1.5 ms\n```sh\nx --budget-s 60 s\n```\n`7 s` {BEGIN}\n| 3 % |\n{END}\n"
                         "## Where the presets and data come from\n| x | 8.9 ms |\n## Next\n| y | 2 s |\n")
    assert quoted_figures(prose) == [("1.5", "ms"), ("2", "s")]


# --------------------------------------------------------------------------- (c) the artifacts

def test_every_benchmark_writes_its_own_artifact():
    """Each benchmark script calls the shared writer with its own name (read as text, not imported)."""
    for name in _benchmarks():
        source = (BENCHMARKS / f"{name}.py").read_text(encoding="utf-8")
        assert "from _artifact import" in source, name
        assert re.search(rf"write_result\(\s*\"{name}\"", source), f"{name}.py does not write {name}.json"
    assert set(_artifacts()) <= set(_benchmarks()), "an artifact without its benchmark"


@pytest.mark.parametrize("name", sorted(p.stem for p in RESULTS.glob("*.json")))
def test_artifact_holds_figures_options_and_environment(name):
    doc = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    assert doc["benchmark"] == name and doc["script"] == f"benchmarks/{name}.py"
    assert isinstance(doc["schema"], int)
    assert doc["figures"] and any(f["headline"] for f in doc["figures"].values())
    for key, fig in doc["figures"].items():
        assert all(k in fig for k in FIGURE_KEYS), (key, fig)
        assert fig["value"] is None or isinstance(fig["value"], (int, float)), key
        assert isinstance(fig["decimals"], int) and fig["decimals"] >= 0, key
    assert isinstance(doc["options"], dict) and isinstance(doc["non_default_options"], dict)
    assert all(doc["options"].get(k) == v for k, v in doc["non_default_options"].items())
    env = doc["environment"]
    missing = [k for k in ENVIRONMENT_KEYS if k not in env]
    assert not missing, f"{name}.json: environment lacks {missing}"
    assert env["cpu_model"] and env["cpu_count"] >= 1 and env["kernel_release"]
    assert re.fullmatch(r"3\.\d+\.\d+.*", env["python_version"])
    assert all(env["packages"].get(p) for p in PACKAGES), env["packages"]
    assert re.fullmatch(r"[0-9a-f]{40}", env["git_commit"]) and isinstance(env["git_dirty"], bool)
    date = dt.datetime.fromisoformat(env["date_utc"])
    assert date.utcoffset() == dt.timedelta(0), "the date is in UTC"
    assert f"benchmarks/{name}.py" in env["command_line"]


# --------------------------------------------------------------------------- (d) docstrings

_DOC_UNITS = "|".join(re.escape(u) for u in sorted({"%", *_TIME, *_BYTE_RATE, "M/s", "k/s", "requests/s"},
                                                    key=len, reverse=True))
#: A number with a percent sign, a time unit or a rate: what a measured figure looks like.
MEASURED = re.compile(rf"(?<![\w.,/-])(?:{_NUMBER_RE})\s*(?:{_DOC_UNITS})(?![\w/])")
#: A date: results are dated, methods are not.
DATE = re.compile(r"(?<!\d)(?:19|20)\d\d-[01]\d-[0-3]\d(?!\d)")
#: Method, not measurement: a confidence level ("95 % Student-t", "95 % confidence").
CONFIDENCE = re.compile(r"\d+\s*%\s*(?:Student|confidence)")
#: Method, not measurement: a usage line (a command and its options).
USAGE = re.compile(r"^\s*(?:usage:|python\s|\.venv/|\[--)", re.I)


def measured_numbers(docstring: str) -> list[str]:
    """The numbers of *docstring* that look measured (see test_no_benchmark_docstring_holds_a_measured_number)."""
    found = []
    for line in docstring.splitlines():
        if USAGE.match(line):
            continue
        found += [m.group(0) for m in MEASURED.finditer(CONFIDENCE.sub("", line))]
        found += DATE.findall(line)
    return found


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_no_benchmark_docstring_holds_a_measured_number(script):
    """Module docstrings describe the method; figures live in the artifacts and docs/benchmarks.md.

    Heuristic: no number followed by ``%``, a time unit or a rate, outside usage lines (a
    command and its options) and confidence levels ("95 % Student-t"); and no date
    (YYYY-MM-DD: results are dated, a method is not).  Method parameters are named by
    their option or constant instead (``--budget-s``, ``TARGETS``).
    """
    doc = ast.get_docstring(ast.parse((BENCHMARKS / script).read_text(encoding="utf-8"))) or ""
    assert doc, f"{script} has no module docstring"
    assert measured_numbers(doc) == [], f"{script}: move measured figures to docs/benchmarks.md"


def test_the_docstring_heuristic_can_fail():
    assert measured_numbers("Result (2026-11-22): median_cell_error_pct 18.4, target (<= 20 %) met") == [
        "20 %", "2026-11-22"]
    assert measured_numbers("Tests 1 and 3 take 548 s and 1682 s natively") == ["548 s", "1682 s"]
    assert measured_numbers("flat latency 102.0 us per 4 KiB read, 1532 MB/s; 1,142 µs") == [
        "102.0 us", "1532 MB/s", "1,142 µs"]
    assert measured_numbers("95 % Student-t intervals; 4 KiB reads; Tables 4-6; eqs. (4) and (8); ext3") == []
    assert measured_numbers("    python benchmarks/x.py [--budget-s 120] [--limits 64M,none]") == []
