"""A thread's scheduling policy as a run's undoable change: the ``sched`` resource kind.

A run that puts a thread it does not own (a kernel thread on its I/O path) under another policy records,
before ``sched_setscheduler(2)``, which thread it is and what to put back: the thread's pid with its start
time (pids are reused, so the pair names one thread), the policy and priority it had, and the policy and
priority the run sets. The undo (the run's own teardown, or ``diskmodel cleanup`` after a SIGKILL) puts the
thread back only if it is still that thread and still at what the run set: a thread that ended, a pid
that now names another thread, or a thread someone changed since, is left alone (sched(7)).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["POLICIES", "describe", "details_of", "present", "restore", "thread_sched"]

#: The policies a record may name (sched(7)); a record naming any other is refused.
POLICIES = {"SCHED_OTHER": os.SCHED_OTHER, "SCHED_BATCH": os.SCHED_BATCH, "SCHED_IDLE": os.SCHED_IDLE,
            "SCHED_FIFO": os.SCHED_FIFO, "SCHED_RR": os.SCHED_RR}
_NAMES = {v: k for k, v in POLICIES.items()}
_RESET = getattr(os, "SCHED_RESET_ON_FORK", 0x40000000)


def _start_ticks(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[19])


def thread_sched(pid: int) -> tuple[str, int, bool]:
    """(policy name, static priority, reset-on-fork) of thread *pid*; ProcessLookupError when it is gone."""
    raw = os.sched_getscheduler(pid)
    return _NAMES.get(raw & ~_RESET, str(raw & ~_RESET)), os.sched_getparam(pid).sched_priority, bool(raw & _RESET)


def details_of(pid: int, set_policy: str, set_priority: int, name: str = "") -> dict | None:
    """The record of thread *pid* about to be put under *set_policy* at *set_priority* (None: it is gone)."""
    ticks = _start_ticks(pid)
    try:
        policy, priority, reset = thread_sched(pid)
    except ProcessLookupError:
        return None
    if ticks is None or _start_ticks(pid) != ticks:
        return None
    return {"pid": pid, "start_ticks": ticks, "name": name, "policy": policy, "priority": priority,
            "reset_on_fork": reset, "set_policy": set_policy, "set_priority": int(set_priority)}


def _checked(d: dict) -> dict:
    """*d* with its fields' types and ranges checked (ValueError naming the first that is not)."""
    for key, kind in (("pid", int), ("start_ticks", int), ("priority", int), ("set_priority", int)):
        if isinstance(d.get(key), bool) or not isinstance(d.get(key), kind) or not 0 <= d[key] < 2 ** 31:
            raise ValueError(f"sched record: field {key!r} is {d.get(key)!r}, not a whole number")
    for key in ("policy", "set_policy"):
        if d.get(key) not in POLICIES:
            raise ValueError(f"sched record: field {key!r} is {d.get(key)!r}, not one of {', '.join(POLICIES)}")
    if d["pid"] < 1 or d["priority"] > 99 or d["set_priority"] > 99:
        raise ValueError("sched record: pid below 1 or a priority above 99")
    return d


def present(d: dict) -> bool:
    """Is the recorded thread still the same one (same start time) and still at what the run set?"""
    d = _checked(d)
    if _start_ticks(d["pid"]) != d["start_ticks"]:
        return False
    try:
        policy, priority, _ = thread_sched(d["pid"])
    except ProcessLookupError:
        return False
    return (policy, priority) == (d["set_policy"], d["set_priority"])


def restore(d: dict) -> str:
    """Put the recorded thread back to its policy and priority if :func:`present`; '' on success, else why not."""
    if not present(d):
        return ""
    flags = POLICIES[d["policy"]] | (_RESET if d.get("reset_on_fork") is True else 0)
    try:
        os.sched_setscheduler(d["pid"], flags, os.sched_param(d["priority"]))
    except ProcessLookupError:
        return ""
    except OSError as exc:
        return f"sched_setscheduler: {exc.strerror}"
    return ""


def describe(d: dict) -> str:
    return (f"{d.get('set_policy')} {d.get('set_priority')} set on thread {d.get('pid')} ({d.get('name') or '?'}), "
            f"which had {d.get('policy')} {d.get('priority')}")
