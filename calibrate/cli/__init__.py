"""The ``diskmodel`` command line.

Each subcommand lives in its own module of this package, which provides
``add_parser(subparsers)``; that function adds the subparser and sets
``handler`` (a function of the parsed arguments returning an exit code).

Errors: whatever a subcommand raises is printed as one line on stderr,
``diskmodel: error: ...``, with a non-zero exit code (2 for a bad argument or
input file, 1 for a failure of the run); ``diskmodel --debug COMMAND ...`` (or
``DISKMODEL_DEBUG=1``) re-raises instead, to show the traceback. A closed
standard output (``diskmodel predict | head -1``) ends the run quietly.
"""
from __future__ import annotations

import argparse
import re
import errno
import importlib
import os
import signal
import sys

# What an error line quotes of an input value at most, and how: one helper for every reader.
from diskmodel.data.input_files import QUOTE_MAX_CHARS, quote  # noqa: F401

# Modules of diskmodel.calibrate that each add one subcommand, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "experiment",
    "calibrate",
    "predict",
    "probe",
    "postmark",
    "validate_trace",
    "iopath",
    "bench",
    "emulate",
    "trace",
    "cleanup",
    "stack_schema",
)

# Exit code of a run whose standard output was closed by its reader (128 + SIGPIPE, as a shell shows it).
EXIT_BROKEN_PIPE = 141


class UsageError(Exception):
    """A bad argument or input file; printed as ``diskmodel: error: ...`` with exit code 2."""


def flag_error(exc, flags: dict[str, str]) -> str:
    """The one line of a model error *exc*, led by the flag that set its field (*flags*: {field: flag}).

    The field is the one a :class:`~diskmodel.model._checks.FieldError` carries, never guessed from the
    text: ``budget_s must be > 0 (got 1e-09)`` of ``--budget-s`` reads ``--budget-s: budget_s must be > 0
    (got 1e-09)``, and ``mount_options: data=journal is not a mount option of xfs`` reads ``--mount-options:
    data=journal is not a mount option of xfs``. Any other error is its own line.
    """
    field = getattr(exc, "field", None)
    if not isinstance(field, str) or field not in flags:
        return one_line(exc)
    if getattr(exc, "sep", " ") == ": ":
        return one_line(f"{flags[field]}: {exc.problem}")
    return one_line(f"{flags[field]}: {exc}")


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0 (argparse names the flag in its error)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0 (got {text!r})")
    return value


# What an error line holds at most of a tool's output or an argument parser's message [characters].
ERROR_MAX_CHARS = 4 * QUOTE_MAX_CHARS


# Any error line is cut there [characters]: a message quoting a huge input is never echoed whole.
_LINE_MAX_CHARS = 1000


def one_line(text, limit: int | None = None) -> str:
    """*text* on one line: its non-empty lines joined by '; ', cut to *limit* characters ("…" marks a cut)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    joined = "; ".join(lines)
    if limit is not None and len(joined) > limit:
        return joined[:limit] + "…"
    return joined


def _debug_from_env() -> bool:
    return os.environ.get("DISKMODEL_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, ``diskmodel: error: <what> (see ... --help)``, exit 2.

    argparse's own ``error()`` prints the whole usage first (6-18 lines); the house rule is one line.
    The subcommands' parsers are of this class too (``add_subparsers`` uses the parent's class).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # a value that starts with a minus and a digit is a (negative) value, not an option: argparse's own
        # matcher takes "-8" and "-0.5" but not "-5G", which it called "expected one argument" instead of the
        # flag's own refusal (no option of this tool starts with a digit)
        self._negative_number_matcher = re.compile(r"^-\d")

    def error(self, message: str):
        text = one_line(message, ERROR_MAX_CHARS)
        _stderr(f"diskmodel: error: {text} (see `{self.prog} --help`)")
        self.exit(2)

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unrecognized argument is refused by the subcommand it was given to, so that
        the error points to that subcommand's help (argparse refuses it at the top, pointing to its help)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            actions = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
            command = getattr(parsed, "command", None)
            owner = next((a.choices[command] for a in actions if command in a.choices), self)
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def _version() -> str:
    """The installed distribution's version (setup.cfg's ``version``), as pip and the wheel's metadata give it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("diskmodel")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed; pip install -e . records it)"


def build_parser() -> argparse.ArgumentParser:
    """The ``diskmodel`` argument parser, with the subcommand of each module of COMMAND_MODULES.

    The documentation's command-line pages are generated from it (docs/conf.py).
    """
    parser = OneLineParser(
        prog="diskmodel",
        description="Predict how fast a storage layout will be, and why.",
        epilog="Errors are one line on stderr; --debug (or DISKMODEL_DEBUG=1) shows the traceback instead.",
    )
    parser.add_argument("--version", action="version", version=f"diskmodel {_version()}",
                        help="print the installed version of diskmodel and exit")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line (also DISKMODEL_DEBUG=1) "
                             "(default: off)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"diskmodel.calibrate.cli.{name}")
        module.add_parser(subparsers)
    return parser


def _filename(exc: OSError) -> str | None:
    name = exc.filename if exc.filename is not None else None
    return os.fsdecode(name) if isinstance(name, (str, bytes, os.PathLike)) else None


def describe(exc: BaseException) -> tuple[str, int]:
    """The one-line message and the exit code for an exception a subcommand raised."""
    from diskmodel.calibrate.harness.outputs import OutputRefused, OutputWriteError

    if isinstance(exc, (UsageError, OutputRefused)):
        return one_line(exc), 2
    if isinstance(exc, OutputWriteError):
        return one_line(exc), 1
    if isinstance(exc, OSError):
        name = _filename(exc)
        why = exc.strerror or str(exc) or type(exc).__name__
        if isinstance(exc, PermissionError):
            hint = ("even root may not open it here (a container or device policy forbids it); choose another path"
                    if os.geteuid() == 0 else "run as root, or choose a path you may read")
            return (f"cannot open {name}: {why} ({hint})" if name else f"{why} ({hint})"), 2
        if isinstance(exc, IsADirectoryError):
            return (f"{name} is a directory, where a file is expected" if name else why), 2
        if isinstance(exc, NotADirectoryError):
            return (f"{name}: a part of this path is not a directory" if name else why), 2
        if isinstance(exc, FileNotFoundError):
            return (f"{name}: no such file or directory" if name else one_line(why)), 2
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f" {name}" if name else ""
            return f"cannot write{where}: {why} (free some space, or choose another path)", 1
        if name:
            return f"{name}: {one_line(why)}", 1
        return one_line(why), 1
    if isinstance(exc, ValueError):
        return one_line(exc) or type(exc).__name__, 2
    if isinstance(exc, MemoryError):
        return "out of memory", 1
    if isinstance(exc, RuntimeError):  # the run's own failures (PostMarkError, TargetLocked, ...): worded already
        return one_line(exc) or type(exc).__name__, 1
    text = one_line(exc)
    return (f"internal error: {type(exc).__name__}{': ' + text if text else ''} "
            f"(run `diskmodel --debug ...` for the traceback)"), 1


def _stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr)
        sys.stderr.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _stdout_closed_by_reader() -> bool:
    """Does standard output lead to a pipe whose reader is gone?"""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except Exception:
        return True  # cannot tell: a BrokenPipeError in a command line tool is standard output's


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the flush at exit raises nothing."""
    try:
        fd = sys.stdout.fileno()
    except Exception:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def _interrupted(exc: BaseException) -> int:
    """Say that the run was interrupted (one line, then the teardown's own report if it carries one)."""
    # What was torn down is said by the teardown itself (runstate attaches its verified
    # report as ``teardown_report``); nothing more is claimed here.
    signum = getattr(exc, "signum", None)  # interrupts.Interrupted: SIGINT, SIGTERM, SIGHUP or SIGQUIT
    if not (isinstance(signum, int) and 0 < signum < 64):
        signum = signal.SIGINT
    _stderr(f"diskmodel: error: interrupted by {signal.Signals(signum).name}; the run did not finish")
    report = getattr(exc, "teardown_report", None)
    if isinstance(report, str) and report.strip():
        _stderr(report.rstrip("\n"))
    return 128 + signum


def main(argv: list[str] | None = None) -> int:
    """Run one ``diskmodel`` command line; returns its exit status.

    SIGINT, SIGTERM, SIGHUP and SIGQUIT raise
    :class:`~diskmodel.calibrate.harness.interrupts.Interrupted` for the whole
    run, from before the subcommands' modules load to the last line printed,
    so every subcommand tears down what it built and says so in one line
    (:func:`_interrupted`); the handlers in place before come back on return.
    """
    from diskmodel.calibrate.harness.interrupts import handle_signals

    with handle_signals():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:  # a signal while the subcommands' modules load is an interrupted run too
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt as exc:
        if _debug_from_env():
            raise
        return _interrupted(exc)
    debug = bool(getattr(args, "debug", False)) or _debug_from_env()
    if args.command is None:
        parser.print_help()
        return 0
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError as exc:
        if _stdout_closed_by_reader():
            _silence_stdout()
            return EXIT_BROKEN_PIPE
        if debug:
            raise
        message, code = describe(exc)
        _stderr(f"diskmodel: error: {one_line(message, _LINE_MAX_CHARS)}")
        return code
    except KeyboardInterrupt as exc:
        if debug:
            raise
        return _interrupted(exc)
    except Exception as exc:
        if debug:
            raise
        interrupt = _interrupt_behind(exc)
        if interrupt is not None:
            return _interrupted(interrupt)
        message, code = describe(exc)
        _stderr(f"diskmodel: error: {one_line(message, _LINE_MAX_CHARS)}")
        return code


def _interrupt_behind(exc: BaseException) -> BaseException | None:
    """The interruption an error came from, if it came from one: a signal that cut short code that then
    failed while unwinding (an extension's import left half done: ``BufferError: cannot close exported
    pointers exist``): the interruption is in the error's chain. An error of its own that a teardown met
    after a signal (a full file system) is said as itself."""
    seen, link = set(), exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None

