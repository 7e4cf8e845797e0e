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
