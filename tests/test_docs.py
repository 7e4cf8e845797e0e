"""The documentation: notebooks stay stripped in git, and the Sphinx site builds with -W.

The build executes every notebook (myst-nb), renders the API reference from the docstrings, one
page per equation of the paper linking to its implementation, and one page per ``diskmodel``
subcommand from argparse. It runs the README's documentation command into a temporary folder.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_in_git_carry_no_outputs(path):
    """Outputs belong to the rendered docs, not to git: no outputs, no execution counts."""
    notebook = json.loads(path.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code, f"{path.name} has no code cell"
    with_outputs = [i for i, cell in enumerate(code) if cell.get("outputs")]
    counted = [i for i, cell in enumerate(code) if cell.get("execution_count") is not None]
    assert not with_outputs, f"{path.name}: code cells {with_outputs} carry outputs (clear them before committing)"
    assert not counted, f"{path.name}: code cells {counted} carry execution counts (clear them)"


def _subcommands() -> list[str]:
    from diskmodel.calibrate.cli import build_parser

    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return [name for action in actions for name in action.choices]


@pytest.fixture(scope="module")
def built_docs():
    """The site built as the README says, with warnings as errors, into a temporary folder: the build
    tests/conftest.py started when the session's tests were collected (conftest.start_docs_build)."""
    from conftest import docs_build_result

    result = docs_build_result(timeout_s=1800)
    assert result is not None, "conftest started no documentation build, yet a test reads it"
    returncode, stderr, out = result
    if returncode != 0:
        cell = stderr.find("CellExecutionError")
        shown = stderr[cell:cell + 6000] if cell >= 0 else stderr[-6000:]
        pytest.fail(f"sphinx -W failed (exit {returncode}):\n" + re.sub(r"\x1b\[[0-9;]*m", "", shown))
    return out


@pytest.mark.slow
def test_docs_build_with_warnings_as_errors_and_render_executed_notebooks(built_docs):
    for path in NOTEBOOKS:
        page = built_docs / "_generated" / "notebooks" / f"{path.stem}.html"
        assert page.is_file(), f"no page for {path.name}"
        html = page.read_text()
        assert 'class="cell_output' in html, f"{path.name} rendered without outputs"
    # The notebooks plot: their figures are in the site.
    figures = [p for p in (built_docs / "_images").glob("*.png")]
    assert len(figures) >= len(NOTEBOOKS), f"only {len(figures)} figures for {len(NOTEBOOKS)} notebooks"


@pytest.mark.slow
def test_every_subcommand_has_a_page_with_its_options(built_docs):
    from diskmodel.calibrate.cli import build_parser

    parser = build_parser()
    choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(choices) == set(_subcommands()) and len(choices) >= 7
    for name, subparser in choices.items():
        page = built_docs / "_generated" / "cli" / f"{name}.html"
        assert page.is_file(), f"subcommand {name} has no docs page"
        html = page.read_text()
        for action in subparser._actions:
            if isinstance(action, argparse._HelpAction):  # sphinx-argparse leaves out -h
                continue
            for option in action.option_strings:
                assert option in html, f"{name}: option {option} missing from its docs page"


@pytest.mark.slow
def test_equation_pages_link_to_the_implementing_functions(built_docs):
    sys.path.insert(0, str(DOCS))
    try:
        import equations
    finally:
        sys.path.remove(str(DOCS))
    numbers = [eq["number"] for eq in equations.EQUATIONS]
    assert numbers == [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12]  # the paper has no eq. 9
    for eq in equations.EQUATIONS:
        html = (built_docs / "_generated" / "equations" / f"eq{eq['number']}.html").read_text()
        for ref, _ in eq["implemented_by"]:
            target = re.search(r"`~?([\w.]+)`", ref).group(1)
            # a resolved reference is a link to the object's anchor on its module's API page
            assert re.search(rf'href="\.\./api/diskmodel[\w.]*\.html#{re.escape(target)}"', html), \
                f"eq. {eq['number']}: {target} is not linked"
