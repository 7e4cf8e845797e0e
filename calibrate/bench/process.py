"""Child processes that never outlive the run that started them.

Every child is started by :func:`spawn`: in a session (and so a process group)
of its own, with ``PR_SET_PDEATHSIG`` set to SIGKILL so that the kernel kills
it when its parent dies (even by SIGKILL, which runs no Python code), and,
within a :class:`~diskmodel.calibrate.harness.runstate.Run`, recorded in the run's
state file as soon as it exists, so that ``diskmodel cleanup`` can find it. It
also carries the run's ID in its environment (``DISKMODEL_RUN_ID``), as do its
own children: a run killed by SIGKILL before its record of a child was written
(the child may run, and start others, while the record is being made durable)
leaves nothing that ``diskmodel cleanup`` cannot find.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess

from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.harness.interrupts import HANDLED_SIGNALS
from diskmodel.calibrate.harness.resources import RUN_ID_ENV, live_group_members, process_start_ticks

_PR_SET_PDEATHSIG = 1
_libc = None


def _load_libc():
    global _libc
    if _libc is None:
        with contextlib.suppress(OSError):
            _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _child_setup(cgroup_procs: str | None = None) -> None:
    """In the child, before exec: unblock the signals the parent held; die with the parent; with
    *cgroup_procs*, move itself into that cgroup (its pid written to the cgroup's ``cgroup.procs``), so
    that what it execs runs there from its first instruction, with no shell in between."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if cgroup_procs is not None:
        fd = os.open(cgroup_procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)


def spawn(argv, *, name: str | None = None, cgroup_procs: str | os.PathLike | None = None,
          **popen_kwargs) -> subprocess.Popen:
    """``subprocess.Popen(argv, ...)`` in a new session, dying with its parent, recorded in the run;
    with *cgroup_procs* (a cgroup's ``cgroup.procs`` file), inside that cgroup.

    The signals that end a run (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are held
    from before the fork until the child is recorded, so an interrupt cannot
    fall between the two. In a session of its own the child is outside the
    terminal's foreground process group: a Ctrl-C or a hang-up reaches the
    run alone, which then kills its children by their record.
    """
    _load_libc()
    popen_kwargs.setdefault("start_new_session", True)
    run = runstate.current_run()
    if run is not None:   # carried by the child and its own children: found by it after a SIGKILL
        popen_kwargs["env"] = {**(popen_kwargs.get("env") or os.environ), RUN_ID_ENV: run.run_id}
    proc = None
    try:
        with runstate.signals_blocked():
            setup = (_child_setup if cgroup_procs is None
                     else functools.partial(_child_setup, os.fspath(cgroup_procs)))
            proc = subprocess.Popen(argv, preexec_fn=setup, **popen_kwargs)
            if run is not None:
                res = run.intend("process", pid=proc.pid, start_ticks=process_start_ticks(proc.pid),
                                 group=bool(popen_kwargs["start_new_session"]),
                                 name=name or os.path.basename(str(argv[0] if not isinstance(argv, str) else argv)))
                proc._diskmodel_resource = res  # noqa: SLF001 - marked removed when reaped
                run.created(res)
    except BaseException:
        # A signal that came while the child was being started is delivered as the signals are unblocked,
        # here, before the caller holds the child: kill it now, or it would go on (a losetup binding its
        # device after the teardown had looked for it and found nothing).
        if proc is not None:
            _kill_and_reap(proc)
        raise
    return proc


def _kill_and_reap(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (it was started in a session of its own), reap the child, and
    mark it gone in the run's record once no member of its group is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        proc.kill()   # the child itself, were it started outside a session of its own
    proc.wait()
    reaped(proc)


def reaped(proc: subprocess.Popen) -> None:
    """Mark a child that has exited and been waited for as gone in the run's record, unless members of its
    process group still run (a killed fio's job process, still inside a write to the device it holds open):
    then the record stays, and the teardown kills the group and waits for its last member
    (:func:`~diskmodel.calibrate.harness.resources.undo_one`) before it looks at what they held."""
    res = getattr(proc, "_diskmodel_resource", None)
    run = runstate.current_run()
    if res is not None and run is not None and proc.returncode is not None:
        if res.details.get("group") and live_group_members(proc.pid):
            return
        run.absent(res)


def communicate_or_kill(proc: subprocess.Popen, timeout_s: float | None, input=None):
    """``proc.communicate(input, timeout)``; on a timeout, an interrupt or any error,
    SIGKILL the child's process group (it was started in a session of its
    own), reap it and re-raise."""
    try:
        out = proc.communicate(input=input, timeout=timeout_s)
    except BaseException:
        _kill_and_reap(proc)
        raise
    reaped(proc)
    return out


def run(argv, *, timeout_s: float | None, input: str | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True)`` as :func:`spawn` starts a child: recorded in
    the run, dying with it, in a process group of its own that an interrupt or the timeout kills whole (a
    tool's own children too), so that a tool a run waits for (a ``mount``, ``blkparse``) never outlives it."""
    proc = spawn(list(argv), name=os.path.basename(str(argv[0])),
                 stdin=subprocess.DEVNULL if input is None else subprocess.PIPE, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True)
    out, err = communicate_or_kill(proc, timeout_s, input)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
