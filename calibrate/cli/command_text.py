"""Options of the command line that become arguments of the commands a run executes, checked before anything.

A scratch path, a device, a disk name of ``--slow`` end up in ``losetup``,
``mkfs``, ``mount``, a cgroup's ``io.max`` or the script a VM runs.  They are
held to the rule every text field of a stack is held to
(:func:`diskmodel.model.stacks.nodes.text_field`: one line, no shell metacharacter,
no control character), and may not start with ``-`` (a command would read it
as an option of its own), so that a bad one is refused in one line naming the
flag before a file, a loop device or a mount is made.  Mount and mkfs options
are checked by their file system's syntax (:mod:`diskmodel.model.filesystems.options`)
where the stack is made from them.
"""
from __future__ import annotations

from diskmodel.calibrate.cli import UsageError
from diskmodel.model.stacks.nodes import text_field


def check_command_text(args, *flags: str) -> None:
    """Refuse (UsageError naming the flag) a value of *flags* ("--scratch", ...) that no command may take."""
    for flag in flags:
        values = getattr(args, flag[2:].replace("-", "_"))
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, tuple):  # a parsed pair such as --slow's (disk, rate)
                value = value[0]
            if value is None:
                continue
            try:
                text_field(flag, value, empty_ok=False)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            if value.startswith("-"):  # a command would read it as one of its own options
                raise UsageError(f"{flag} must not start with - (got {value!r}; write ./{value} for a file "
                                 "of that name)")
