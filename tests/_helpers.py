"""Assertions shared by the test modules (imported as ``from _helpers import ...``)."""
from __future__ import annotations

ERROR_PREFIX = "diskmodel: error: "


def assert_one_error_line(stderr: str, *fragments: str | None) -> str:
    """*stderr* is exactly one line ``diskmodel: error: ...``, with no traceback and no usage dump
    (argparse's errors too), holding each of *fragments*; the line is returned.

    A fragment given as None checks nothing, so a table of cases can leave its fragment out.
    """
    assert isinstance(stderr, str), f"give the stderr text, not {type(stderr).__name__}"
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "no error message on stderr"
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith(ERROR_PREFIX), stderr
    for fragment in fragments:
        if fragment is not None:
            assert fragment in line, stderr
    return line


def keep_first_of_each(values, group, ids, keep: int = 1) -> list:
    """*values* as pytest params with *ids*: the first *keep* of each *group* (a function of a value)
    run where the test runs, the others are marked ``soak`` (``pytest -m soak``): more seeds or drives
    of a mechanism the kept ones already check."""
    import pytest

    seen: dict = {}
    params = []
    for value, ident in zip(values, ids):
        key = group(value)
        seen[key] = seen.get(key, 0) + 1
        marks = () if seen[key] <= keep else (pytest.mark.soak,)
        params.append(pytest.param(value, id=ident, marks=marks))
    return params
