"""Load a script that is not part of the package (a golden generator) as a module."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def load_script(path: Path, name: str | None = None):
    """The module of the Python file *path*, executed once (its ``__main__`` block is not run)."""
    spec = importlib.util.spec_from_file_location(name or Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
