"""The kernel's threads on an emulated request's way, under SCHED_FIFO for a run: :func:`kernel_threads_realtime`.

A request to an emulated loop device passes two kinds of kernel thread that run at the normal policy
(sched(7)) and so wait behind every other process's time slice on a busy host:

* the loop driver hands each request to a worker of the kernel's shared unbound workqueue pool
  (``kworker/uN:M``; ``loop_queue_work`` in drivers/block/loop.c), which calls the backing file;
* the loop device has one hardware queue, so its completion is raised as the block softirq
  (``blk_mq_raise_softirq`` in block/blk-mq.c); raised from a thread, not an interrupt, it runs in
  ``ksoftirqd/N`` (``raise_softirq_irqoff`` in kernel/softirq.c).

Inside the context manager both are put under SCHED_FIFO at the given priority (the unbound pool's
workers again every :data:`RESCAN_S`, as the pool starts new ones), and every thread changed is put
back to its own policy and priority on the way out, also on an exception or a signal: SIGINT, SIGTERM,
SIGHUP and SIGQUIT are turned into an interruption inside
(:class:`~diskmodel.calibrate.harness.interrupts.handle_signals`), and one that arrives while a thread's
policy is being changed or put back is held until that is done
(:class:`~diskmodel.calibrate.harness.interrupts.held`). Each thread is recorded in the run's state file
(:mod:`~diskmodel.calibrate.harness.runstate`, the ``sched`` kind of
:mod:`~diskmodel.calibrate.harness.sched`: its pid and start time, the policy it had and the one set)
before its policy is changed, so a run killed by SIGKILL leaves a record by which ``diskmodel cleanup``
puts it back; the run's teardown and the cleanup put back only a thread that is still the same one and
still at the policy the run set. These threads serve every process's work, so the change is for the run
only and named by the caller. A thread that ended meanwhile is skipped.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading

from diskmodel.calibrate.harness import sched

__all__ = ["KERNEL_THREAD_PREFIXES", "RESCAN_S", "kernel_threads_realtime"]

log = logging.getLogger(__name__)

#: The kernel threads changed, by the start of their name (``/proc/PID/comm``).
KERNEL_THREAD_PREFIXES = ("ksoftirqd/", "kworker/u")
#: How often the unbound pool is looked at again for new workers [s].
RESCAN_S = 0.5


def _kernel_threads(prefixes) -> list[int]:
    """Pids of the kernel threads (children of kthreadd, pid 2) whose name starts with one of *prefixes*."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if (ppid == 2 or entry == "2") and name.startswith(tuple(prefixes)):
            found.append(int(entry))
    return found


class _Changed:
    """The threads this run put under SCHED_FIFO: each recorded in the run's state file before its change."""

    def __init__(self, run, priority: int, prefixes):
        self.run, self.priority, self.prefixes = run, int(priority), tuple(prefixes)
        self.seen: set[int] = set()
        self.resources = []
        self.total = 0
        self.lock = threading.Lock()

    def scan(self) -> None:
        param = os.sched_param(self.priority)
        for pid in _kernel_threads(self.prefixes):
            with self.lock:
                if pid in self.seen:
                    continue
                self.seen.add(pid)
                details = sched.details_of(pid, "SCHED_FIFO", self.priority, _name(pid))
                if details is None or details["policy"] == "SCHED_FIFO":
                    continue  # ended, or already real-time (the kernel's or another run's choice): left alone
                res = self.run.intend("sched", **details)   # recorded first: `diskmodel cleanup` finds it
                self.resources.append(res)
                try:
                    os.sched_setscheduler(pid, os.SCHED_FIFO, param)
                except (ProcessLookupError, PermissionError):
                    self.run.absent(res)
                    continue
                self.run.created(res)
                self.total += 1

    def restore(self):
        """Put back every thread changed (the run's typed undo: only a thread still the same and still at
        SCHED_FIFO at this priority); the teardown's report."""
        with self.lock:
            return self.run.undo(self.resources)


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


@contextlib.contextmanager
def kernel_threads_realtime(priority: int | None, prefixes=KERNEL_THREAD_PREFIXES):
    """Inside, the kernel threads named by *prefixes* (:data:`KERNEL_THREAD_PREFIXES`) run under SCHED_FIFO
    at *priority*; afterwards each is as it was. None: nothing is changed. Yields a callable giving how
    many threads were changed so far. Each change is recorded in the current run
    (:func:`~diskmodel.calibrate.harness.runstate.ensure_run`: a new one when there is none) before it is
    made, so ``diskmodel cleanup`` puts the threads back after a SIGKILL."""
    if priority is None:
        yield lambda: 0
        return
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 99:
        raise ValueError(f"--kernel-threads-realtime priority must be a whole number from 1 to 99 (got {priority!r})")
    from diskmodel.calibrate.harness import runstate
    from diskmodel.calibrate.harness.interrupts import handle_signals, held

    stop = threading.Event()
    with handle_signals(), runstate.ensure_run() as run:
        changed = _Changed(run, priority, prefixes)

        def rescan():
            while not stop.wait(RESCAN_S):
                try:
                    changed.scan()
                except OSError as exc:   # the run state file cannot be written: no change is made unrecorded
                    log.warning("kernel threads: the unbound pool's new workers are no longer put under "
                                "SCHED_FIFO (%s: %s)", exc.filename, exc.strerror)
                    return

        thread = threading.Thread(target=rescan, name="kernel-threads-realtime", daemon=True)
        try:
            with held():
                changed.scan()
            thread.start()
            yield lambda: changed.total
        finally:
            with held():
                stop.set()
                if thread.is_alive():
                    thread.join()
                changed.restore()   # what it could not put back stays open: the run's teardown tries again
