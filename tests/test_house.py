"""The house rules a reader relies on, checked on the source itself (an AST walk, no imports):
model/ never depends on calibrate/, no import cycle, no module over 600 lines and no function over 150 (the
benchmark scripts and the tests too), and
``diskmodel.model.predict`` is the module.

What still breaks a rule is listed below by name, so that the lists can only shrink: a new breach fails, and so
does a listed one that has been mended (take it off the list)."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"diskmodel.model": "model", "diskmodel.calibrate": "calibrate", "diskmodel.data": "data"}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 150

# Cycles among the imports, deferred ones (inside functions) included: a deferred import hides a cycle from
# the interpreter, not from a reader.
KNOWN_CYCLES: set = set()
KNOWN_LONG_MODULES: set = set()
KNOWN_LONG_FUNCTIONS: set = set()
# The benchmark scripts and the tests (not packages) are held to the same sizes; what still breaks them:
KNOWN_LONG_BENCHMARK_FUNCTIONS: set = set()


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the three packages: its dotted name -> (file, is a package's __init__)."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join([package] + (parts[:-1] if is_package else parts))] = (path, is_package)
    return found


def _imports(name: str, path: Path, is_package: bool, modules) -> set[str]:
    """The modules of the three packages that *name* imports anywhere in its text (TYPE_CHECKING blocks aside)."""
    package = name if is_package else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []  # ast.walk has not entered it yet
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            source = (base + ("." + node.module if node.module else "")) if node.level else (node.module or "")
            for alias in node.names:
                target = f"{source}.{alias.name}"
                found.add(target if target in modules else source)
    return {m for m in found if m in modules and m != name}


def _cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


@pytest.fixture(scope="module")
def import_graph():
    modules = _modules()
    return {name: _imports(name, path, is_package, modules) for name, (path, is_package) in modules.items()}


def test_the_cycle_finder_finds_a_cycle_and_only_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == {frozenset("abc")}


def test_model_never_imports_calibrate(import_graph):
    wrong = sorted(f"{m} -> {t}" for m, targets in import_graph.items() if m.startswith("diskmodel.model")
                   for t in targets if t.startswith("diskmodel.calibrate"))
    assert wrong == []


def test_no_new_import_cycle(import_graph):
    cycles = _cycles(import_graph)
    assert sorted(map(sorted, cycles - KNOWN_CYCLES)) == [], "a new import cycle"
    assert sorted(map(sorted, KNOWN_CYCLES - cycles)) == [], "a cycle was mended: take it off KNOWN_CYCLES"


def test_module_and_function_sizes():
    long_modules, long_functions = set(), set()
    for folder in (*PACKAGES.values(), "benchmarks", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text()
            if len(text.splitlines()) > MAX_MODULE_LINES:
                long_modules.add(rel)
            for node in ast.walk(ast.parse(text, rel)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                        long_functions.add(f"{rel}:{node.name}")
    assert sorted(long_modules - KNOWN_LONG_MODULES) == [], f"modules over {MAX_MODULE_LINES} lines"
    known = KNOWN_LONG_FUNCTIONS | KNOWN_LONG_BENCHMARK_FUNCTIONS
    assert sorted(long_functions - known) == [], f"functions over {MAX_FUNCTION_LINES} lines"
    assert sorted(KNOWN_LONG_MODULES - long_modules) == [], "mended: take it off KNOWN_LONG_MODULES"
    assert sorted(known - long_functions) == [], "mended: take it off KNOWN_LONG_FUNCTIONS or its benchmarks' list"


def test_predict_is_the_module_and_its_function_inside():
    module = importlib.import_module("diskmodel.model.predict")
    assert Path(module.__file__).name == "predict.py"
    import diskmodel.model

    assert diskmodel.model.predict is module, "the package's attribute `predict` shadows the module"
    assert callable(module.predict)


# A measured figure in a comment or docstring goes stale with the next change it does not follow: figures
# live in benchmarks/results and docs/benchmarks.md (and DiskSim's evidence in docs/disksim_keys.md), history
# in git. These patterns are the lab notebook's: counts of agreeing requests, before -> after, sessions, timings.
LAB_NOTEBOOK = re.compile(
    r"\b\d[\d,]* of (?:the |its |DiskSim's |our )?\d[\d,]* (?:requests|traces|times)\b"   # 1499 of 1500 requests
    r"|\b\d[\d.,]* ?%? ?-> ?\d[\d.,]* ?%?"                                                 # 55 -> 31, 99.52 -> 99.72 %
    r"|\bwent from \d|\bfrom \d[\d,]* to \d[\d,]* of\b"                                    # went from 2709 to 353 of
    r"|\bsession \d+\b|\bdevelopment seeds? \d"                                            # since session 8
    r"|\btook \d[\d.]* ?(?:x|×|s\b|ms\b|min\b)"                                            # took 3x the CPU time
    r"|\babout \d[\d.]* ?s (?:under TCG|per boot|of in-guest)")                            # about 3 s per boot


def _comments_and_docstrings(path: Path):
    import io
    import tokenize

    source = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                for offset, line in enumerate(doc.splitlines()):
                    yield node.body[0].lineno + offset, line


def test_no_measured_figure_in_a_comment_or_docstring():
    found = []
    for folder in PACKAGES.values():
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line_number, text in _comments_and_docstrings(path):
                # a comment and its next line are searched together: a figure may wrap
                if LAB_NOTEBOOK.search(text):
                    found.append(f"{path.relative_to(ROOT)}:{line_number}: {text.strip()[:120]}")
    assert not found, "measured figures in comments or docstrings:\n" + "\n".join(found)


# User-facing text (docstrings, help, error messages, notebooks, the docs, the README) names the papers (Dagenais;
# Marechal; Djordjevic & Timcenko; the multi-disk LVM study; the loop-image study), not the project's seed
# files or its issue numbers, which a user has never seen.
PROJECT_JARGON = re.compile(r"\bseeds? 00[0-4]\b|\bissue #?\d+\b", re.IGNORECASE)


def test_user_facing_text_names_the_papers_not_seed_files_or_issues():
    paths = [p for folder in PACKAGES.values() for p in sorted((ROOT / folder).rglob("*.py"))]
    paths += sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
             for path in paths for number, line in enumerate(path.read_text().splitlines(), start=1)
             if PROJECT_JARGON.search(line)]
    assert not found, "seed files or issue numbers in user-facing text:\n" + "\n".join(found)

# model/ is pure: none of its modules imports what reaches files, processes or clocks, nor a reader of
# diskmodel.data. What still does is listed by name, so that the list can only shrink. One subpackage is
# left out whole: model/_jit/, numba's cache locator, which reads the model's sources and reads and writes
# the compiled kernels (what numba's own cache=True would do, in a folder of ours).
IMPURE_MODULES = {"os", "io", "shutil", "subprocess", "tempfile", "time", "socket", "pathlib", "glob",
                  "signal", "threading", "multiprocessing", "diskmodel.model._jit", "diskmodel.calibrate"}
KNOWN_IMPURE = {
    # numba's on-disk cache located before any kernel is defined: the package's first import
    "model/__init__.py -> diskmodel.model._jit",
    # load_disksim_drive and validate_drive take a drive folder and read it with diskmodel.data's readers
    "model/disksim_drives/convert.py -> diskmodel.data.disksim.read_drive_folder",
}


def _reaches(name: str) -> bool:
    if name.startswith("diskmodel.data."):
        return name.rsplit(".", 1)[-1].startswith("read_")
    return any(name == m or name.startswith(m + ".") for m in IMPURE_MODULES)


def test_model_touches_no_file_process_or_clock():
    found = set()
    for path in sorted((ROOT / "model").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("model/_jit/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found.update(f"{rel} -> {name}" for name in names if _reaches(name))
    assert sorted(found - KNOWN_IMPURE) == [], "model/ reaches files, processes or clocks"
    assert sorted(KNOWN_IMPURE - found) == [], "mended: take it off KNOWN_IMPURE"
