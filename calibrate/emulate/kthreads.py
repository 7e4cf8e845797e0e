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
(:class:`~diskmodel.calibrate.harness.interrupts.held`), so no thread is left changed and unrecorded.
These threads serve every process's work, so the change is for the run only and named by the caller.
A thread that ended meanwhile is skipped.
"""
from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["KERNEL_THREAD_PREFIXES", "RESCAN_S", "kernel_threads_realtime"]

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
    def __init__(self, priority: int, prefixes):
        self.priority, self.prefixes = int(priority), tuple(prefixes)
        self.saved: dict[int, tuple[int, os.sched_param]] = {}
        self.total = 0
        self.lock = threading.Lock()

    def scan(self) -> None:
        param = os.sched_param(self.priority)
        for pid in _kernel_threads(self.prefixes):
            with self.lock:
                if pid in self.saved:
                    continue
                try:
                    before = (os.sched_getscheduler(pid), os.sched_getparam(pid))
                    if before[0] == os.SCHED_FIFO:
                        continue  # already real-time (the kernel's or another run's choice): left alone
                    os.sched_setscheduler(pid, os.SCHED_FIFO, param)
                except (ProcessLookupError, PermissionError):
                    continue
                self.saved[pid] = before
                self.total += 1

    def restore(self) -> None:
        with self.lock:
            for pid, (policy, param) in self.saved.items():
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setscheduler(pid, policy, param)
            self.saved.clear()


@contextlib.contextmanager
def kernel_threads_realtime(priority: int | None, prefixes=KERNEL_THREAD_PREFIXES):
    """Inside, the kernel threads named by *prefixes* (:data:`KERNEL_THREAD_PREFIXES`) run under SCHED_FIFO
    at *priority*; afterwards each is as it was. None: nothing is changed. Yields a callable giving how
    many threads were changed so far."""
    if priority is None:
        yield lambda: 0
        return
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 99:
        raise ValueError(f"--kernel-threads-realtime priority must be a whole number from 1 to 99 (got {priority!r})")
    from diskmodel.calibrate.harness.interrupts import handle_signals, held

    changed = _Changed(priority, prefixes)
    stop = threading.Event()

    def rescan():
        while not stop.wait(RESCAN_S):
            changed.scan()

    thread = threading.Thread(target=rescan, name="kernel-threads-realtime", daemon=True)
    with handle_signals():
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
                changed.restore()
