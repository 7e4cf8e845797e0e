"""PostMark's text interface: the command file it reads, the report and the echo it prints.

PostMark's units: "kilobytes" are 2**10 bytes and "megabytes" 2**20 bytes
(checked: a run its terse report puts at 6253613 bytes read, its verbose report
prints as "5.96 megabytes read"; 6253613 / 2**20 = 5.964). Its data amounts
are printed with two decimals, so the bytes recovered from a verbose report
are uncertain by half a unit of the last decimal (:attr:`DataAmount.resolution_bytes`).

PostMark exits with status 0 even when it could not create or delete its
files; :func:`parse_report` treats every ``Error:`` line of its output as a failure.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["UNIT_BYTES", "PostMarkError", "command_file", "DataAmount", "PostMarkReport", "parse_report",
           "parse_echoed_config", "check_echoed_config"]

#: Bytes of each unit PostMark prints (2**10 and 2**20, verified against its terse report).
UNIT_BYTES: dict[str, int] = {"bytes": 1, "kilobytes": 1 << 10, "megabytes": 1 << 20}


class PostMarkError(RuntimeError):
    """PostMark failed, printed ``Error:`` lines, or its report could not be parsed."""


_INT_FIELDS = (
    "number_of_files", "min_file_size_bytes", "max_file_size_bytes", "transactions",
    "subdirectories", "read_block_size_bytes", "write_block_size_bytes", "read_bias",
    "create_bias", "seed",
)


def _check_config(config: Any) -> None:
    for name in _INT_FIELDS:
        value = getattr(config, name)
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise ValueError(f"{name} must be an int, got {value!r}")
    positive = ("number_of_files", "transactions", "read_block_size_bytes", "write_block_size_bytes")
    for name in positive:
        if getattr(config, name) <= 0:
            raise ValueError(f"{name} must be > 0, got {getattr(config, name)}")
    if config.min_file_size_bytes <= 0:
        raise ValueError(f"min_file_size_bytes must be > 0, got {config.min_file_size_bytes}")
    if config.max_file_size_bytes < config.min_file_size_bytes:
        raise ValueError(
            f"max_file_size_bytes ({config.max_file_size_bytes}) must be >= "
            f"min_file_size_bytes ({config.min_file_size_bytes})")
    if config.subdirectories < 0:
        raise ValueError(f"subdirectories must be >= 0, got {config.subdirectories}")
    for name in ("read_bias", "create_bias"):
        if not 0 <= getattr(config, name) <= 10:
            raise ValueError(f"{name} must be in 0..10, got {getattr(config, name)}")
    if not isinstance(config.buffered_io, bool):
        raise ValueError(f"buffered_io must be a bool, got {config.buffered_io!r}")
    if config.seed < 0 or config.seed > 2**31 - 1:
        raise ValueError(f"seed must be in 0..2**31-1, got {config.seed}")


def command_file(config: Any, location: str | os.PathLike) -> str:
    """The PostMark 1.5 command file running *config* in directory *location*.

    Every setting is written out except ``set subdirectories 0``, which
    PostMark 1.51 rejects (0 is its default); ``show``
    makes PostMark echo the configuration it accepted, which
    :func:`check_echoed_config` compares with *config*.
    """
    _check_config(config)
    location = os.fspath(location)
    if not location or any(c.isspace() for c in location):
        raise ValueError(f"location must be a non-empty path without whitespace (PostMark splits on it); got {location!r}")
    lines = [
        f"set location {location}",
        f"set size {config.min_file_size_bytes} {config.max_file_size_bytes}",
        f"set number {config.number_of_files}",
        f"set transactions {config.transactions}",
        f"set read {config.read_block_size_bytes}",
        f"set write {config.write_block_size_bytes}",
        f"set buffering {'true' if config.buffered_io else 'false'}",
        f"set bias read {config.read_bias}",
        f"set bias create {config.create_bias}",
        f"set seed {config.seed}",
    ]
    if config.subdirectories > 0:
        # PostMark rejects "set subdirectories 0" ("invalid number of
        # subdirectories"); 0 is its default, so it is left unsaid.
        lines.append(f"set subdirectories {config.subdirectories}")
    lines += [
        "set report verbose",
        "show",
        "run",
        "quit",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class DataAmount:
    """An amount as PostMark prints it, and in bytes.

    value and unit: as printed ("5.96", "megabytes"). bytes: value * unit [bytes].
    resolution_bytes: half a unit of the last printed decimal [bytes].
    """

    value: float
    unit: str
    bytes: float
    resolution_bytes: float

    @classmethod
    def parse(cls, number: str, unit: str) -> "DataAmount":
        if unit not in UNIT_BYTES:
            raise PostMarkError(f"unknown PostMark unit {unit!r}")
        decimals = len(number.split(".", 1)[1]) if "." in number else 0
        scale = UNIT_BYTES[unit]
        value = float(number)
        return cls(value, unit, value * scale, 0.5 * 10.0 ** (-decimals) * scale)


@dataclass(frozen=True)
class PostMarkReport:
    """PostMark's verbose report, as numbers.

    Times are PostMark's, in whole seconds [s]; rates ``*_per_s`` are PostMark's
    integer divisions by them [1/s]. transactions = files created and deleted
    during the transaction phase (each transaction does one create or delete,
    plus one read or append). Data amounts and rates keep PostMark's printed
    value and unit next to bytes [bytes, bytes/s]; PostMark divides data by the
    total time, creation and deletion phases included.
    """

    elapsed_s: float
    transaction_time_s: float
    transactions_per_s: float
    files_created: int
    files_created_per_s: float
    files_created_alone: int
    files_created_mixed: int
    files_read: int
    files_read_per_s: float
    files_appended: int
    files_appended_per_s: float
    files_deleted: int
    files_deleted_per_s: float
    files_deleted_alone: int
    files_deleted_mixed: int
    data_read: DataAmount
    data_written: DataAmount
    read_rate: DataAmount
    write_rate: DataAmount
    raw: str = field(repr=False, compare=False, default="")

    @property
    def transactions(self) -> int:
        return self.files_created_mixed + self.files_deleted_mixed

    @property
    def read_bytes(self) -> float:
        return self.data_read.bytes

    @property
    def written_bytes(self) -> float:
        return self.data_written.bytes

    @property
    def read_bytes_per_s(self) -> float:
        """PostMark's read throughput [bytes/s] (its data / its whole seconds)."""
        return self.read_rate.bytes

    @property
    def write_bytes_per_s(self) -> float:
        return self.write_rate.bytes

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("raw")
        d["transactions"] = self.transactions
        return d


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_UNIT = r"(bytes|kilobytes|megabytes)"
_PATTERNS = {
    "time": re.compile(rf"^\s*{_NUM} seconds total\s*$", re.M),
    "ttime": re.compile(rf"^\s*{_NUM} seconds of transactions \({_NUM} per second\)\s*$", re.M),
    "created": re.compile(rf"^\s*{_NUM} created \({_NUM} per second\)\s*$", re.M),
    "created_alone": re.compile(rf"^\s*Creation alone: {_NUM} files \({_NUM} per second\)\s*$", re.M),
    "mixed": re.compile(rf"^\s*Mixed with transactions: {_NUM} files \({_NUM} per second\)\s*$", re.M),
    "read": re.compile(rf"^\s*{_NUM} read \({_NUM} per second\)\s*$", re.M),
    "appended": re.compile(rf"^\s*{_NUM} appended \({_NUM} per second\)\s*$", re.M),
    "deleted": re.compile(rf"^\s*{_NUM} deleted \({_NUM} per second\)\s*$", re.M),
    "deleted_alone": re.compile(rf"^\s*Deletion alone: {_NUM} files \({_NUM} per second\)\s*$", re.M),
    "data_read": re.compile(rf"^\s*{_NUM} {_UNIT} read \({_NUM} {_UNIT} per second\)\s*$", re.M),
    "data_written": re.compile(rf"^\s*{_NUM} {_UNIT} written \({_NUM} {_UNIT} per second\)\s*$", re.M),
}


def _errors(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines()
            if ln.strip().startswith("Error:") or "out of files" in ln]


def parse_report(text: str) -> PostMarkReport:
    """Parse PostMark's verbose report (the output of ``set report verbose``; ``run``).

    Raises PostMarkError when PostMark printed ``Error:`` lines or a field is missing.
    """
    errs = _errors(text)
    if errs:
        more = f" (and {len(errs) - 3} more)" if len(errs) > 3 else ""
        raise PostMarkError("PostMark reported errors: " + "; ".join(errs[:3]) + more)
    start = text.rfind("\nTime:")
    if start < 0 and not text.startswith("Time:"):
        raise PostMarkError("no verbose PostMark report ('Time:' section) in the output")
    body = text[start:]

    def one(key: str) -> tuple[str, ...]:
        m = _PATTERNS[key].search(body)
        if not m:
            raise PostMarkError(f"PostMark report lacks its {key!r} line")
        return m.groups()

    mixed = _PATTERNS["mixed"].findall(body)
    if len(mixed) != 2:
        raise PostMarkError(f"expected 2 'Mixed with transactions' lines, found {len(mixed)}")
    t_total = one("time")
    t_trans, tps = one("ttime")
    created, created_ps = one("created")
    c_alone, _ = one("created_alone")
    read, read_ps = one("read")
    app, app_ps = one("appended")
    deleted, deleted_ps = one("deleted")
    d_alone, _ = one("deleted_alone")
    dr = one("data_read")
    dw = one("data_written")
    return PostMarkReport(
        elapsed_s=float(t_total[0]),
        transaction_time_s=float(t_trans),
        transactions_per_s=float(tps),
        files_created=int(created), files_created_per_s=float(created_ps),
        files_created_alone=int(c_alone), files_created_mixed=int(mixed[0][0]),
        files_read=int(read), files_read_per_s=float(read_ps),
        files_appended=int(app), files_appended_per_s=float(app_ps),
        files_deleted=int(deleted), files_deleted_per_s=float(deleted_ps),
        files_deleted_alone=int(d_alone), files_deleted_mixed=int(mixed[1][0]),
        data_read=DataAmount.parse(dr[0], dr[1]),
        data_written=DataAmount.parse(dw[0], dw[1]),
        read_rate=DataAmount.parse(dr[2], dr[3]),
        write_rate=DataAmount.parse(dw[2], dw[3]),
        raw=text,
    )


_ECHO = {
    "number_of_files": re.compile(r"The base number of files is (\d+)"),
    "transactions": re.compile(r"^Transactions: (\d+)", re.M),
    "subdirectories": re.compile(r"(\d+) subdirector"),
    "read_bias": re.compile(r"Biases are: read/append=(-?\d+)"),
    "create_bias": re.compile(r"create/delete=(-?\d+)"),
    "seed": re.compile(r"Random number generator seed is (\d+)"),
}


def parse_echoed_config(text: str) -> dict[str, Any]:
    """The settings PostMark echoed in reply to ``show``."""
    out: dict[str, Any] = {}
    for key, rx in _ECHO.items():
        m = rx.search(text)
        if m:
            out[key] = int(m.group(1))
    if "subdirectories" not in out and "The base number of files" in text:
        out["subdirectories"] = 0
    m = re.search(r"(U|Not u)sing Unix buffered file I/O", text)
    if m:
        out["buffered_io"] = m.group(1) == "U"
    return out


def check_echoed_config(config: Any, text: str) -> None:
    """Raise PostMarkError if PostMark echoed settings that differ from *config*."""
    echoed = parse_echoed_config(text)
    if "number_of_files" not in echoed:
        raise PostMarkError("PostMark did not echo its configuration (no 'show' output)")
    wrong = {k: (v, getattr(config, k)) for k, v in echoed.items() if v != getattr(config, k)}
    if wrong:
        raise PostMarkError("PostMark did not take these settings (echoed vs wanted): "
                            + ", ".join(f"{k}: {a} vs {b}" for k, (a, b) in wrong.items()))
