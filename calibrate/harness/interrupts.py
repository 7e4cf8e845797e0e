"""The signals that end a run the way Ctrl-C does, and the exception they raise.

SIGINT (Ctrl-C), SIGTERM (``kill``, a service manager, a batch scheduler),
SIGHUP (the terminal or the ssh connection closed) and SIGQUIT (Ctrl-\\) each
end a run with the same teardown: inside :class:`handle_signals` they raise
:class:`Interrupted` (a :class:`KeyboardInterrupt`), so that every ``finally``
and every :func:`~diskmodel.calibrate.harness.runstate.ensure_run` undoes
what it built. Left at their default dispositions, SIGTERM, SIGHUP and SIGQUIT
kill the interpreter at once and run no Python code at all (signal(7)).

The command line (:func:`diskmodel.calibrate.cli.main`) holds
:class:`handle_signals` for the whole of a run, so no subcommand is left out;
library entry points that build things (``run_on_stack``, ``measure_stack``)
hold it too, for callers that are not the command line. The run state
(:mod:`diskmodel.calibrate.harness.runstate`) blocks :data:`HANDLED_SIGNALS`
while it writes a record, and holds them back while it tears down
(:class:`during_teardown`).
"""
from __future__ import annotations

import signal
import threading

__all__ = ["HANDLED_SIGNALS", "Interrupted", "during_teardown", "handle_signals", "held"]

# The signals a run turns into a teardown; SIGKILL and SIGSTOP cannot be caught (signal(7)), and a
# run killed by SIGKILL is undone afterwards by `diskmodel cleanup`.
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Interrupted(KeyboardInterrupt):
    """One of :data:`HANDLED_SIGNALS` arrived; raised so ``finally`` blocks tear down."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


class handle_signals:
    """Context manager: each of :data:`HANDLED_SIGNALS` raises :class:`Interrupted` inside it.

    The first signal raises; a later one (a second Ctrl-C, the SIGTERM a
    closing terminal may send after its SIGHUP) is dropped until the
    outermost context is left, so that it cannot cut short the teardown the
    first one started, nor the report that follows it. Contexts nest: only
    the outermost installs handlers (an inner one inside the command line's
    is a no-op) and its exit puts back the handlers that were there before.
    Only in the main thread (elsewhere it does nothing, as Python runs
    handlers only there).
    """

    def __init__(self) -> None:
        self._old: dict[int, object] = {}
        self._active = False

    def __enter__(self) -> "handle_signals":
        if threading.current_thread() is not threading.main_thread():
            return self
        self._active = True
        _state["depth"] += 1
        if _state["depth"] == 1:
            _state["received"] = None
            for sig in HANDLED_SIGNALS:
                self._old[sig] = signal.signal(sig, _raise)
        return self

    def __exit__(self, *exc) -> None:
        if not self._active:
            return
        self._active = False
        _state["depth"] -= 1
        for sig, old in self._old.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._old.clear()
        if _state["depth"] == 0:
            _state["received"] = None


class held:
    """Context manager: a signal of :data:`HANDLED_SIGNALS` that reaches the handler inside it is kept, and
    raised as :class:`Interrupted` when the outermost one is left.

    Blocking the signals (``pthread_sigmask``) holds them in the calling thread only: the kernel gives a
    signal sent to the process to any thread that does not block it (a progress bar's monitor, a fit in
    the background), and Python then runs the handler in the main thread at once. So the handler itself
    waits here while a step and its record happen. Main thread only, like the handlers.
    """

    def __enter__(self) -> "held":
        self._main = threading.current_thread() is threading.main_thread()
        if self._main:
            _state["held"] += 1
        return self

    def __exit__(self, *exc) -> None:
        if not self._main:
            return
        _state["held"] -= 1
        if _state["held"] == 0 and _state["kept"] is not None:
            signum, _state["kept"] = _state["kept"], None
            if exc[0] is None and _state["depth"] > 0 and _state["received"] is None:
                _state["received"] = signum
                raise Interrupted(signum)


def received() -> int | None:
    """The signal that interrupted the current outermost :class:`handle_signals` context, if any."""
    return _state["received"]


# How deep the main thread is in handle_signals contexts, and the first signal received inside them.
_state: dict = {"depth": 0, "received": None, "held": 0, "kept": None}
# How deep the main thread is in during_teardown contexts, and the first signal that arrived inside them.
_teardown: dict = {"depth": 0, "kept": None}


class during_teardown:
    """Context manager: :data:`HANDLED_SIGNALS` held back while resources are torn down, then delivered.

    A teardown must not be cut short: a second Ctrl-C would leave a loop
    device or a mount half removed. Nor may the signal be lost: a teardown
    also runs in the middle of a job (a step's scratch removed, an emulated
    drive stopped before the next is served), and a Ctrl-C that lands there
    must still end the job. So, for the outermost context of the main thread:

    - the signals are blocked in the calling thread, and the programs the
      teardown starts (``umount``, ``losetup -d``, ``dmsetup``) inherit that
      mask across exec (signal(7)), so the terminal's Ctrl-C to the process
      group does not kill them half way;
    - a signal the kernel gives another thread, or one pending when the mask
      is lifted, reaches a handler that only keeps it;
    - on leaving, the handlers in place before come back and, with
      *deliver*, the first signal kept is raised again (:func:`signal.raise_signal`):
      inside :class:`handle_signals` it raises :class:`Interrupted`, or is
      dropped when the teardown is that of an interrupt already.

    ``deliver=False`` drops it: for the teardown of a run that is ending with
    an exception already, which must not be replaced by the interrupt.
    Nested contexts leave the choice to the outermost. Elsewhere than in
    the main thread it does nothing, as Python runs handlers only there.
    """

    def __init__(self, *, deliver: bool = True) -> None:
        self.deliver = deliver
        self._old: dict[int, object] = {}
        self._mask = None
        self._outer = False
        self._main = False

    def __enter__(self) -> "during_teardown":
        self._main = threading.current_thread() is threading.main_thread()
        if not self._main:
            return self
        _teardown["depth"] += 1
        self._outer = _teardown["depth"] == 1
        if self._outer:
            _teardown["kept"] = None
            for sig in HANDLED_SIGNALS:
                self._old[sig] = signal.signal(sig, _keep)
            self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
        return self

    def __exit__(self, *exc) -> None:
        if not self._main:
            return
        _teardown["depth"] -= 1
        if not self._outer:
            return
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)   # one pending in this thread reaches _keep here
        # a handler installed outside Python reads back as None: the default then, not a TypeError that
        # would leave the rest held (and every process started later deaf to Ctrl-C)
        for sig, old in self._old.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._old.clear()
        signum, _teardown["kept"] = _teardown["kept"], None
        if self.deliver and signum is not None:
            signal.raise_signal(signum)


def _keep(signum, frame) -> None:
    if _teardown["kept"] is None:
        _teardown["kept"] = signum


def _raise(signum, frame) -> None:
    if _state["received"] is not None:
        return
    if _state["held"] > 0:   # inside held(): raised when it is left
        if _state["kept"] is None:
            _state["kept"] = signum
        return
    _state["received"] = signum
    raise Interrupted(signum)
