"""Loaders for the seed paper's Tables 1-6 (data/djordjevic2015/).

Djordjevic & Timcenko (2015), DOI 10.17559/TV-20131113112940.  The CSV files
keep what the paper prints (units, decimal-comma text); see
``djordjevic2015/README.md`` for conventions and for Table 6's unit.

>>> from diskmodel.data.tables import postmark_results
>>> postmark_results().query("test == 'test2' and layout == 'ext3'")  # doctest: +SKIP
"""
from __future__ import annotations

from importlib import resources

import pandas as pd

DOI = "10.17559/TV-20131113112940"

_FILES = {
    1: "table1_native_layout.csv",
    2: "table2_lvm1_layout.csv",
    3: "table3_lvm2_layout.csv",
    4: "table4_postmark_test1.csv",
    5: "table5_postmark_test2.csv",
    6: "table6_postmark_test3.csv",
}
_TEST_OF_TABLE = {4: "test1", 5: "test2", 6: "test3"}
# The paper (like PostMark) counts KB and MB in binary multiples.
_UNIT_BYTES = {"MB/s": 2**20, "KB/s": 2**10}
#: Layout names used across the project, by the paper's column names.
LAYOUT_KEYS = {"ext3": "native", "LVM-1": "lvm1", "LVM-2": "lvm2"}


def table_path(number: int):
    """Path (importlib.resources Traversable) of Table *number*'s CSV file."""
    if number not in _FILES:
        raise ValueError(f"number must be one of {sorted(_FILES)} (got {number!r})")
    return resources.files("diskmodel.data").joinpath("djordjevic2015", _FILES[number])


def provenance(number: int) -> str:
    """The ``#`` provenance lines at the head of Table *number*'s file."""
    lines = []
    with table_path(number).open("r", encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("#"):
                break
            lines.append(line[1:].strip())
    return "\n".join(lines)


def load_table(number: int) -> pd.DataFrame:
    """Table *number* (1-6) as printed in the paper (values with decimal points).

    Tables 1-3: columns file_system, size_gb, description.  Tables 4-6:
    operation, layout, value, unit (as printed), printed (the paper's text).
    """
    with table_path(number).open("r", encoding="utf-8") as handle:
        frame = pd.read_csv(handle, comment="#", dtype={"printed": str})
    frame.attrs["provenance"] = provenance(number)
    frame.attrs["doi"] = DOI
    return frame


def postmark_results(correct_table6_unit: bool = True) -> pd.DataFrame:
    """Tables 4-6 in one long frame with throughput in bytes/s.

    Columns: test (test1..test3), table, operation (read/write), layout (as
    printed: ext3, LVM-1, LVM-2), layout_key (native, lvm1, lvm2), value and
    unit as printed, unit_used, throughput_bytes_per_s, unit_note.

    Parameters
    ----------
    correct_table6_unit : bool
        Table 6 prints KB/s where the paper's own volumes imply MB/s (README).
        True (default) reads it as MB/s and says so in ``unit_used`` and
        ``unit_note``; False converts the printed KB/s literally.
    """
    if not isinstance(correct_table6_unit, bool):
        raise ValueError(f"correct_table6_unit must be True or False (got {correct_table6_unit!r})")
    frames = []
    for number, test in _TEST_OF_TABLE.items():
        frame = load_table(number)
        frame.insert(0, "table", number)
        frame.insert(0, "test", test)
        frame["unit_used"] = frame["unit"]
        frame["unit_note"] = ""
        if number == 6 and correct_table6_unit:
            frame["unit_used"] = "MB/s"
            frame["unit_note"] = ("printed KB/s read as MB/s: the paper's 4.6 GB read at 2.8 KB/s "
                                  "would take 20 days (see djordjevic2015/README.md)")
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out.insert(out.columns.get_loc("layout") + 1, "layout_key", out["layout"].map(LAYOUT_KEYS))
    out["throughput_bytes_per_s"] = out["value"] * out["unit_used"].map(_UNIT_BYTES)
    out.attrs["doi"] = DOI
    return out


def layout_sizes_bytes(number: int) -> dict:
    """Table *number* (1-3) as {file_system: size [bytes]}, reading GB as 10^9 bytes.

    Disk makers' GB (the WD800BD is "80 GB" = 80 * 10^9 bytes); the paper
    does not say which GB its partition sizes use.
    """
    if number not in (1, 2, 3):
        raise ValueError(f"number must be 1, 2 or 3 (got {number!r})")
    frame = load_table(number)
    return {row.file_system: int(row.size_gb * 10**9) for row in frame.itertuples()}
