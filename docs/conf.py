"""Sphinx configuration of the diskmodel documentation.

Build (warnings are errors, as CI does in tests/test_docs.py):

    .venv/bin/python -m sphinx -W -b html docs docs/_build/html

Pages that are made from the code are written into ``docs/_generated/`` when the build starts
(git ignores that folder):

* ``notebooks/``: a copy of the repository's ``notebooks/*.ipynb``, which myst-nb executes, since
  the notebooks are kept in git without outputs;
* ``equations/``: one page per equation of the paper, from the table in ``docs/equations.py``;
* ``stack/``: the stack file's field reference, each node kind's fields with units, defaults and
  meaning, from the node definitions (:func:`diskmodel.model.stacks.stack_schema.schema_markdown`);
* ``cli/``: one page per subcommand of ``diskmodel``, from the parser that
  :func:`diskmodel.calibrate.cli.build_parser` builds, so a new subcommand gets its page;
* ``api/``: the API reference, one page per module of ``diskmodel.model``, ``diskmodel.data`` and
  ``diskmodel.calibrate`` (found by walking the packages, so a new module gets its page), each an
  ``automodule`` of the module's docstrings.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
GENERATED = DOCS / "_generated"
sys.path.insert(0, str(DOCS))

import equations  # noqa: E402  (docs/equations.py, beside this file)

from diskmodel.model.stacks import stack_schema  # noqa: E402  (the stack file's field reference page)

project = "diskmodel"
author = "the diskmodel authors"
copyright = "2026, the diskmodel authors"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinxarg.ext",
]

root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "alabaster"

# MyST: $...$ math in the equation pages, ``(label)=`` targets.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# Keep "--flag" as typed (the command-line pages): no smart dashes, only smart quotes and ellipses.
smartquotes_action = "qe"
# Notebook 02 goes from its title (H1) to H3 headings; MyST's header-level warning is style only.
suppress_warnings = ["myst.header"]

# myst-nb: the notebooks in git carry no outputs, so every build executes them; an error in a
# notebook fails the build.
nb_execution_mode = "force"
nb_execution_timeout = 600  # per cell [s]
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# autodoc / napoleon: numpy-style docstrings. A module documents what it defines, not what it
# imports (a package's __all__ re-exports are documented where they are defined).
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False


def _write_if_changed(path: Path, text: str) -> None:
    """Write *text* to *path* unless it holds it already (an unchanged page is not rebuilt)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _sync_folder(folder: Path, pages: dict[str, str]) -> None:
    """Make *folder* hold exactly *pages* (name -> text)."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.name in pages:
            continue
        if old.is_dir():  # e.g. .ipynb_checkpoints, if a copy was opened in Jupyter
            shutil.rmtree(old)
        else:
            old.unlink()
    for name, text in pages.items():
        _write_if_changed(folder / name, text)


def notebook_pages() -> dict[str, str]:
    """The repository's notebooks, by file name."""
    return {path.name: path.read_text() for path in sorted((ROOT / "notebooks").glob("*.ipynb"))}


def subcommands() -> list[str]:
    """The names of ``diskmodel``'s subcommands, from the parser itself."""
    import argparse

    from diskmodel.calibrate.cli import build_parser

    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return [name for action in actions for name in action.choices]


def cli_pages() -> dict[str, str]:
    """One page per subcommand, and the index of the command line."""
    names = subcommands()
    pages = {f"{name}.md": (
        f"# diskmodel {name}\n\n"
        "```{eval-rst}\n"
        ".. argparse::\n"
        "   :module: diskmodel.calibrate.cli\n"
        "   :func: build_parser\n"
        "   :prog: diskmodel\n"
        f"   :path: {name}\n"
        "```\n") for name in names}
    pages["index.md"] = (
        "# Command line\n\n"
        "Every subcommand's page is generated from its argparse parser "
        "({func}`diskmodel.calibrate.cli.build_parser`). Errors are one line on stderr, "
        "`diskmodel: error: ...`; `--debug` shows the traceback instead.\n\n"
        "```{eval-rst}\n"
        ".. argparse::\n"
        "   :module: diskmodel.calibrate.cli\n"
        "   :func: build_parser\n"
        "   :prog: diskmodel\n"
        "   :nosubcommands:\n"
        "```\n\n"
        "```{toctree}\n:maxdepth: 1\n\n" + "\n".join(names) + "\n```\n")
    return pages


def equation_pages() -> dict[str, str]:
    pages = {f"eq{eq['number']}.md": equations.page(eq) for eq in equations.EQUATIONS}
    pages["index.md"] = equations.index()
    return pages


def notebook_index() -> dict[str, str]:
    names = [Path(name).stem for name in notebook_pages()]
    return {"index.md": (
        "# Notebooks\n\n"
        "The notebooks of `notebooks/`, executed when these pages were built (git keeps them without "
        "outputs).\n\n"
        "```{toctree}\n:maxdepth: 1\n\n" + "\n".join(names) + "\n```\n")}


#: The packages of the API reference, with what each holds.
API_PACKAGES = {
    "diskmodel.model": "the model: pure, vectorised numpy, one subpackage per concern (the drive, the "
                       "simulator, file systems, the stack and its I/O path, prediction, fitting)",
    "diskmodel.data": "presets and measurements, each with its provenance",
    "diskmodel.calibrate": "everything that touches devices, files, processes and time",
}


def api_modules(package: str) -> list[str]:
    """*package* and every public module under it (not ``_private`` ones, nor ``__main__``, whose import
    runs the command line)."""
    import importlib
    import pkgutil

    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=package + "."):
        if not info.name.rsplit(".", 1)[-1].startswith("_") and importlib.import_module(info.name).__name__ == info.name:
            names.append(info.name)
    return sorted(names)


def api_pages() -> dict[str, str]:
    pages = {}
    lines = ["# API reference", "", "Generated from the docstrings, one page per module.", ""]
    for package, what in API_PACKAGES.items():
        modules = api_modules(package)
        for name in modules:
            pages[f"{name}.rst"] = f"{name}\n{'=' * len(name)}\n\n.. automodule:: {name}\n"
        lines += [f"## `{package}`", "", f"{what[0].upper()}{what[1:]}.", "",
                  "```{toctree}", ":maxdepth: 1", "", *modules, "```", ""]
    pages["index.md"] = "\n".join(lines)
    return pages


_sync_folder(GENERATED / "api", api_pages())
_sync_folder(GENERATED / "notebooks", {**notebook_pages(), **notebook_index()})
_sync_folder(GENERATED / "equations", equation_pages())
_sync_folder(GENERATED / "cli", cli_pages())
_sync_folder(GENERATED / "stack", {"index.md": stack_schema.schema_markdown()})


def _strict_references(app, env, node, contnode):
    """An unresolved Python reference on a page made here (equations, command line, index) is a warning.

    Sphinx is not nitpicky on the API pages (numpy docstrings name types such as ``array_like``), so
    without this a renamed function would leave its equation page with plain text instead of a link.
    """
    if node.get("refdomain") != "py":
        return None
    docname = node.get("refdoc", "")
    if docname.startswith(("_generated/equations/", "_generated/cli/")) or docname == "index":
        from sphinx.util import logging

        logging.getLogger(__name__).warning(
            "unresolved reference %s:%s (is it documented in the API reference?)",
            node.get("reftype"), node.get("reftarget"), location=node)
    return None


#: The numpy sections whose entries are "name : type" lines.
_NAME_SECTIONS = {"Parameters", "Other Parameters", "Attributes"}
_NAME_LINE = re.compile(r"\*{0,2}[A-Za-z_][\w.]*(\s*,\s*\*{0,2}[A-Za-z_][\w.]*)*\s*(:.*)?")


def _prose_after_parameters(app, what, name, obj, options, lines):
    """Warn about a paragraph that follows a Parameters (or Attributes) section.

    Napoleon reads every unindented line of such a section as one more entry, so a closing remark
    ("Returns ...", "Raises ...") would show as a parameter named by its words. Give it a section
    of its own ("Notes") or move it before the parameters.
    """
    section = None
    for i, line in enumerate(lines):
        underline = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.strip() and not line[0].isspace() and re.fullmatch(r"-{3,}", underline):
            section = line.strip()
        elif (section in _NAME_SECTIONS and i and not lines[i - 1].strip() and line.strip()
              and not line[0].isspace() and not re.fullmatch(r"-{3,}", line.strip())
              and not _NAME_LINE.fullmatch(line.rstrip())):
            from sphinx.util import logging

            logging.getLogger(__name__).warning(
                "docstring of %s: the paragraph %r follows its %s section, where numpy docstrings read it as "
                "an entry; put it under a 'Notes' header, or before the section", name, line[:60], section,
                type="diskmodel", subtype="docstring")
            return


def _readme_links(app, docname, source):
    """docs/benchmarks.md links the README as ``../README.md``; in the site the README is the front page."""
    if docname == "benchmarks":
        source[0] = source[0].replace("](../README.md", "](index.md")


def _spread_notebooks(app, env, docnames):
    """Deal the notebooks out over the runs of documents that a parallel read (``-j``) gives its processes.

    Sphinx reads the sorted document names in consecutive runs, one run per task
    (``sphinx.util.parallel.make_chunks``), and myst-nb executes a notebook as it reads it; the
    notebooks' names sort together, so one process would execute them all while the others read the
    API pages. Here run *k* gets notebooks *k*, *k* + runs, ..., the other documents filling the rest.
    """
    if app.parallel <= 1:
        return
    from sphinx.util.parallel import make_chunks

    notebooks = [d for d in docnames if d.startswith("_generated/notebooks/") and not d.endswith("/index")]
    others = iter([d for d in docnames if d not in notebooks])
    sizes = [len(run) for run in make_chunks(docnames, app.parallel)]
    dealt = [notebooks[k::len(sizes)] for k in range(len(sizes))]
    if any(len(mine) > size for mine, size in zip(dealt, sizes)):
        return
    docnames[:] = [d for mine, size in zip(dealt, sizes) for d in mine + [next(others) for _ in range(size - len(mine))]]


def setup(app):
    app.connect("env-before-read-docs", _spread_notebooks)
    app.connect("missing-reference", _strict_references)
    app.connect("source-read", _readme_links)
    # before napoleon (priority 500) turns the sections into fields
    app.connect("autodoc-process-docstring", _prose_after_parameters, priority=400)
