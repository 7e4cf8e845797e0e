"""The steps of a plan: argument vectors of words, typed records of what they create, and their ``sh`` rendering.

A :class:`Step` runs one argument vector (:attr:`Step.argv`), never shell
text. A word is a ``str``, a :class:`Ref` (the value an earlier step
captured, e.g. ``Ref("DISKMODEL_DEV0")``) or a :class:`Concat` of both. The
host's executor replaces a reference by its value as (part of) one whole
word; the guest script, which has no Python, gets every word through
:func:`sh_word` alone (``shlex.quote`` of a string, ``"$NAME"`` of a
reference), so a value is always exactly one word and never interpreted.

What a step creates is a typed record, ``resource = (kind, ((key, value), ...))``
with kinds :data:`UNDO_ARGV` lists; its undo in the guest is derived from the
record (:func:`undo_argv`), and on the host the run state removes it by
looking (:mod:`diskmodel.calibrate.harness.resources`). No undo is a
command string.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Union

__all__ = ["Ref", "Concat", "Word", "Step", "ACTIONS", "UNDO_ARGV", "sh_word", "sh_words", "undo_argv",
           "words_of", "render_step", "render_undo", "GUEST_FUNCTIONS", "check_name"]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_name(name, what: str = "capture") -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"{what} must be a shell variable name, got {name!r}")
    return name


@dataclass(frozen=True)
class Ref:
    """The value an earlier step captured into *name* (a loop device's path, a mount point), as one word."""

    name: str

    def __post_init__(self) -> None:
        check_name(self.name, "Ref.name")


@dataclass(frozen=True)
class Concat:
    """One word made of strings and references, e.g. ``Concat((Ref("M"), "/image.img"))``."""

    parts: tuple

    def __post_init__(self) -> None:
        if not self.parts or not all(isinstance(p, (str, Ref)) for p in self.parts):
            raise ValueError(f"Concat.parts must be strings and Refs, got {self.parts!r}")


Word = Union[str, Ref, Concat]


def _check_word(word, where: str):
    if isinstance(word, bool) or not isinstance(word, (str, Ref, Concat)):
        raise ValueError(f"{where}: a word must be a str, Ref or Concat, got {word!r}")
    return word


def sh_word(word: Word) -> str:
    """THE rendering of one word into ``sh`` text: a quoted string, ``"$NAME"`` for a reference.

    Every value that reaches the guest's shell goes through here, so it
    arrives as exactly one word and is never expanded, split or run.
    """
    if isinstance(word, Ref):
        return f'"${word.name}"'
    if isinstance(word, Concat):
        return "".join(sh_word(p) for p in word.parts)
    if isinstance(word, str):
        return shlex.quote(word)
    raise ValueError(f"a word must be a str, Ref or Concat, got {word!r}")


def sh_words(words) -> str:
    return " ".join(sh_word(w) for w in words)


def words_of(word: Word) -> str:
    """A word as ``shlex.split`` reads back its rendering: a reference as ``$NAME``."""
    if isinstance(word, Ref):
        return f"${word.name}"
    if isinstance(word, Concat):
        return "".join(words_of(p) for p in word.parts)
    return word


#: Typed undos: kind of a resource -> (argv prefix, key of the detail the argv ends with). The guest runs
#: them; on the host the run state removes the same kinds by looking (harness/resources.py).
UNDO_ARGV: dict[str, tuple[tuple[str, ...], str]] = {
    "loop": (("losetup", "-d"), "device"),
    "mount": (("umount",), "mountpoint"),
    "dir": (("rmdir",), "path"),
    "pv": (("pvremove", "-ff", "-y"), "device"),
    "vg": (("vgremove", "-f"), "name"),
    "lv": (("lvremove", "-f"), "name"),
    "md": (("mdadm", "--stop"), "device"),
    "dm": (("dmsetup", "remove"), "name"),
    # the kernel remembers the devices of a btrfs it has scanned: make it forget them
    "btrfs": (("btrfs", "device", "scan", "--forget"), "devices"),
}

#: Built-in operations a step may run instead of an argv: on the host in Python
#: (host_executor.py), in the guest as the fixed shell function of the same name (:data:`GUEST_FUNCTIONS`).
ACTIONS = ("diskmodel_first_free_md",)


def undo_argv(resource) -> tuple | None:
    """The argv undoing what *resource* records (None: nothing)."""
    if resource is None:
        return None
    kind, pairs = resource
    prefix, key = UNDO_ARGV[kind]
    value = dict(pairs)[key]
    return (*prefix, *(value if isinstance(value, tuple) else (value,)))


@dataclass(frozen=True)
class Step:
    """One argument vector, what it creates and how its output is used.

    * description: what the step does, for the log.
    * argv: the words run (str, :class:`Ref`, :class:`Concat`); empty only with *action*.
    * capture: variable that receives the stripped standard output (or *value*), or None.
    * value: with *capture*: the variable gets this string instead of the output.
    * expect: the step is a check: its stripped output must equal this; with *wait*, it is
      polled once a second until it does.
    * action: one of :data:`ACTIONS`, run instead of an argv.
    * resource: what the step creates, for the run's record and its undo: a kind of
      :data:`UNDO_ARGV` and (key, value) pairs that find it again; values may be words.
    """

    description: str
    argv: tuple = ()
    capture: str | None = None
    resource: tuple | None = None
    value: str | None = None
    expect: str | None = None
    wait: bool = False
    action: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.argv, str):
            raise ValueError(f"step {self.description!r}: argv must be a tuple of words, not shell text")
        object.__setattr__(self, "argv", tuple(self.argv))
        for i, word in enumerate(self.argv):
            _check_word(word, f"step {self.description!r}: argv[{i}]")
        if self.action is None and not self.argv:
            raise ValueError(f"step {self.description!r}: argv must not be empty")
        if self.action is not None and (self.action not in ACTIONS or self.argv):
            raise ValueError(f"step {self.description!r}: action must be one of {', '.join(ACTIONS)}, "
                             f"without argv (got {self.action!r})")
        if self.capture is not None:
            check_name(self.capture)
        if self.value is not None and self.capture is None:
            raise ValueError(f"step {self.description!r}: value needs a capture")
        if self.wait and self.expect is None:
            raise ValueError(f"step {self.description!r}: wait needs expect")
        if self.resource is not None:
            kind, pairs = self.resource
            if kind not in UNDO_ARGV:
                raise ValueError(f"step {self.description!r}: resource kind must be one of "
                                 f"{', '.join(UNDO_ARGV)} (got {kind!r})")
            if UNDO_ARGV[kind][1] not in dict(pairs):
                raise ValueError(f"step {self.description!r}: a {kind} resource needs {UNDO_ARGV[kind][1]}")

    @property
    def undo(self) -> tuple | None:
        """The argv undoing the step (derived from its resource), or None."""
        return undo_argv(self.resource)

    def words(self) -> tuple:
        return (self.action,) if self.action else self.argv


#: The guest script's fixed functions. They take the step's words as "$@" and never evaluate them: a
#: captured value goes into its variable through ``eval "$1=\\$v"``, whose text is the variable's name
#: (checked by :func:`check_name`) and a literal ``$v``.
GUEST_FUNCTIONS = r"""diskmodel_run() { "$@" || exit $?; }
diskmodel_capture() {
  n=$1; shift
  v=$("$@") || exit $?
  [ -n "$v" ] || { echo "diskmodel: $n: the step printed nothing to capture" >&2; exit 1; }
  eval "$n=\$v"
  echo "diskmodel:   $n=$v" >&2
}
diskmodel_out() {  # the output of "$@" without the blanks at its ends (the host's str.strip())
  o=$("$@") || return $?
  b=$(printf ' \t')
  o=${o#"${o%%[!$b]*}"}
  printf '%s' "${o%"${o##*[!$b]}"}"
}
diskmodel_check() {
  want=$1; shift
  got=$(diskmodel_out "$@")
  [ "$got" = "$want" ] || { echo "diskmodel: $* printed '$got', not '$want'" >&2; exit 1; }
}
diskmodel_wait() {
  want=$1; shift
  while [ "$(diskmodel_out "$@")" != "$want" ]; do sleep 1; done
}
diskmodel_first_free_md() {  # the first md minor from 100 not taken (the host's arrays are never touched)
  i=100; while [ -e /sys/block/md$i ] || [ -e /dev/md$i ]; do i=$((i + 1)); done; echo /dev/md$i
}
"""


def render_step(step: Step) -> str:
    """The guest script's line running *step*: a fixed function name, then the step's words by :func:`sh_word`."""
    words = sh_words(step.words())
    if step.expect is not None:
        return f"{'diskmodel_wait' if step.wait else 'diskmodel_check'} {sh_word(step.expect)} {words}"
    if step.capture and step.value is None:
        return f"diskmodel_capture {step.capture} {words}"
    return f"diskmodel_run {words}"


def render_undo(step: Step) -> str | None:
    """The undo of *step* as one ``sh`` line of words (each by :func:`sh_word`), or None."""
    argv = step.undo
    return None if argv is None else sh_words(argv)
