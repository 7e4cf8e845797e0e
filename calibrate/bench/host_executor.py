"""Running a :class:`~diskmodel.calibrate.bench.provision.StackPlan` on this machine, step by step.

:class:`HostExecutor` runs each step's argument vector with ``subprocess``,
never through a shell: a :class:`~diskmodel.calibrate.bench.steps.Ref` is
replaced by the value an earlier step captured, as (part of) one whole word;
a check compares the step's stripped output with its expected value in
Python. It logs every step, records what a step creates before creating it
(:mod:`diskmodel.calibrate.harness.runstate`; the kinds are typed, none is a
command) and tears everything down in reverse, by looking, on failure, on
exit and on a signal (:class:`handle_signals` turns SIGINT, SIGTERM, SIGHUP and SIGQUIT
into :class:`Interrupted`, so that ``finally`` blocks run; both live in
:mod:`diskmodel.calibrate.harness.interrupts` and are re-exported here). :meth:`HostExecutor.run`
runs a caller's argument vector the same way.
"""
from __future__ import annotations

import contextlib
import logging
import os
import stat
import subprocess
import time
from pathlib import Path

from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.harness.interrupts import Interrupted, handle_signals
from diskmodel.calibrate.harness.resources import TeardownReport
from diskmodel.calibrate.bench.process import communicate_or_kill, spawn
from diskmodel.calibrate.bench.provision import StackPlan, Step
from diskmodel.calibrate.bench.steps import Concat, Ref, UNDO_ARGV

__all__ = ["LayoutError", "Interrupted", "handle_signals", "HostExecutor"]

log = logging.getLogger("diskmodel.calibrate.bench.provision")


class LayoutError(RuntimeError):
    """A step of a plan failed; what was built has been rolled back."""


class HostExecutor:
    """Runs a :class:`StackPlan` on this machine, step by step, with rollback.

    Use as a context manager: ``with HostExecutor(plan) as ex: ex.mountpoint``.
    Entering builds the stack (rolling back in reverse on a failing step and
    raising :class:`LayoutError`); leaving tears it down. :meth:`teardown` is
    idempotent. Every command, its exit status and output go to the log.

    Every step that creates something is recorded in the run's state file
    (:mod:`diskmodel.calibrate.harness.runstate`) *before* it runs, with what finds it
    again (a loop device by its backing's inode and offset, a mount by its
    mount point). Teardown removes what it finds, not what the steps reported,
    so a signal that lands while ``losetup`` or ``mount`` runs, after it has
    done its work but before it has said so, leaves nothing behind; and it
    checks that each thing is gone (:class:`~diskmodel.calibrate.harness.resources.TeardownReport`).
    """

    def __init__(self, plan: StackPlan, *, logger: logging.Logger | None = None, timeout_s: float = 600.0):
        if not plan.queue_defaults and any(step.argv[:1] == ("losetup",) for step in plan.steps):
            # a loop number on this host keeps the read-ahead and request limit its earlier use left
            # (docs/benchmarks.md, "A loop number's queue settings outlive it"), so a run would depend on it
            raise ValueError(f"stack {plan.name}: a host plan sets each loop device's queue to a fresh disk's "
                             "(build_plan(..., queue_defaults=True)); this plan does not")
        self.plan = plan
        self.log = logger or log
        self.timeout_s = timeout_s
        self.variables: dict[str, str] = {}
        self._resources: list = []
        self._run_context = None
        self.history: list[tuple[str, list, int]] = []  # (what, argv, returncode)
        self.report = None
        self._first_record: int | None = None   # the run's first record made by this executor's build

    # -- running one argument vector -----------------------------------------
    def resolve(self, word) -> str:
        """A word of a step as the one argument it is: a Ref by the value captured into it."""
        if isinstance(word, Ref):
            if word.name not in self.variables:
                raise LayoutError(f"stack {self.plan.name}: {word.name} has no value yet (no earlier step captured it)")
            return self.variables[word.name]
        if isinstance(word, Concat):
            return "".join(self.resolve(p) for p in word.parts)
        if isinstance(word, tuple):
            return [self.resolve(w) for w in word]
        return word

    def run(self, argv, what: str = "command", *, timeout_s: float | None = None) -> subprocess.CompletedProcess:
        """Run one argument vector (words: str, Ref, Concat) with ``subprocess``, no shell; logged, recorded."""
        args = [self.resolve(w) for w in argv]
        env = dict(os.environ)
        env.setdefault("LVM_SUPPRESS_FD_WARNINGS", "1")
        self.log.info("%s: %s", what, args)
        proc = spawn(args, name=what, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
        # Interrupted or timed out: the command must not outlive us.
        out, err = communicate_or_kill(proc, self.timeout_s if timeout_s is None else timeout_s)
        self.history.append((what, args, proc.returncode))
        if out.strip():
            self.log.info("  stdout: %s", out.strip())
        if err.strip():
            self.log.info("  stderr: %s", err.strip())
        self.log.info("  exit status %d", proc.returncode)
        return subprocess.CompletedProcess(args, proc.returncode, out, err)

    def _action(self, step: Step) -> subprocess.CompletedProcess:
        """A built-in operation (:data:`~diskmodel.calibrate.bench.steps.ACTIONS`), here in Python."""
        if step.action == "diskmodel_first_free_md":
            i = 100
            while Path(f"/sys/block/md{i}").exists() or Path(f"/dev/md{i}").exists():
                i += 1
            return subprocess.CompletedProcess([step.action], 0, f"/dev/md{i}\n", "")
        raise LayoutError(f"unknown action {step.action!r}")

    def _step(self, i: int, step: Step) -> subprocess.CompletedProcess:
        what = f"step {i}/{len(self.plan.steps)} {step.description}"
        if step.action is not None:
            return self._action(step)
        if not step.wait:
            return self.run(step.argv, what)
        while True:  # a wait: poll once a second until the output is the expected one
            res = self.run(step.argv, what)
            if res.returncode != 0 or res.stdout.strip() == step.expect:
                return res
            time.sleep(1.0)

    def _intend(self, step: Step, *, after: bool = False):
        """Record what *step* creates: before it runs, with what is known then (a word captured by the
        step itself comes with :meth:`Run.created`); a folder whose path the step itself prints
        (``mktemp -d``) only after it (*after*), since nothing could find it before."""
        if step.resource is None:
            return None
        kind, pairs = step.resource
        key = UNDO_ARGV[kind][1]
        known = {k: v for k, v in pairs if not self._unresolved(v)}
        if not after and key not in known and kind != "loop":
            return None
        details = {k: self.resolve(v) for k, v in (pairs if after else known.items())}
        if kind == "loop":
            backing = os.path.realpath(details["backing"])
            st = os.stat(backing)
            details["backing"] = backing
            if stat.S_ISREG(st.st_mode):  # a regular file: found again by inode, even once unlinked
                details["backing_ino"], details["backing_dev"] = st.st_ino, f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        res = self._run.intend(kind, **details)
        self._resources.append(res)
        return res

    def _unresolved(self, value) -> bool:
        if isinstance(value, Ref):
            return value.name not in self.variables
        if isinstance(value, Concat):
            return any(self._unresolved(p) for p in value.parts)
        if isinstance(value, tuple):
            return any(self._unresolved(p) for p in value)
        return False

    # -- building and tearing down -------------------------------------------
    def build(self) -> "HostExecutor":
        if runstate.current_run() is None:
            self._run_context = runstate.ensure_run(f"stack {self.plan.name} on {self.plan.backing}")
            self._run = self._run_context.__enter__()
        else:
            self._run = runstate.current_run()
        self._first_record = len(self._run.resources)
        try:
            for i, step in enumerate(self.plan.steps, 1):
                pending = {k: v for k, v in (step.resource[1] if step.resource else ()) if self._unresolved(v)}
                res = self._intend(step)
                done = self._step(i, step)
                if done.returncode != 0 or (step.expect is not None and done.stdout.strip() != step.expect):
                    why = (f"failed with status {done.returncode}" if done.returncode != 0 else
                           f"printed {done.stdout.strip()!r}, not {step.expect!r}")
                    msg = (f"stack {self.plan.name}: step {i} ({step.description}) {why}: "
                           f"{done.args}\n{done.stderr.strip()}")
                    self.log.debug(msg)  # the error carries it: the command line prints it once, as one line
                    raise LayoutError(msg)
                if step.capture:
                    value = step.value if step.value is not None else done.stdout.strip()
                    if not value:
                        raise LayoutError(f"step {i} ({step.description}) printed nothing to capture")
                    self.variables[step.capture] = value
                    self.log.info("  captured %s=%s", step.capture, value)
                if res is not None:
                    self._run.created(res, **{k: self.resolve(v) for k, v in pending.items()})
                elif step.resource is not None:
                    self._run.created(self._intend(step, after=True))
        except BaseException as exc:
            report = self.teardown()
            with contextlib.suppress(AttributeError, TypeError):
                exc.teardown_report = str(report)
            raise
        return self

    def teardown(self):
        """Remove what the steps created, in reverse, and check it is gone. Safe to call again.

        Returns the :class:`~diskmodel.calibrate.harness.resources.TeardownReport`.
        """
        if not self._resources and self.report is not None:
            return self.report
        # With the children its steps started, in reverse order of creation: a child still running (a
        # losetup whose caller was interrupted before it could kill it) is killed, and its group waited
        # for, before what it may be making is looked for.
        first = len(self._run.resources) if self._first_record is None else self._first_record
        children = [r for r in self._run.resources[first:]
                    if r.kind == "process" and r.state in ("intended", "created", "left")]
        chosen = sorted({id(r): r for r in (*self._resources, *children)}.values(), key=lambda r: r.id)
        report = self._run.undo(chosen) if chosen else TeardownReport()
        self._resources = [r for r in self._resources if r.state != "removed"]
        if report.left:
            self.log.error("teardown left things behind: %s", "; ".join(report.left))
        self.report = report
        context, self._run_context = self._run_context, None
        if context is not None:
            # The run this executor opened ends here; its state file stays if anything was left.
            with contextlib.suppress(RuntimeError):
                context.__exit__(None, None, None)
        return report

    @property
    def mountpoint(self) -> str:
        return self.variables[self.plan.mount_var]

    @property
    def device(self) -> str:
        """The file system's block device path (/dev/loopN or /dev/VG/LV)."""
        return self.resolve(self.plan.device)

    def __enter__(self) -> "HostExecutor":
        return self.build()

    def __exit__(self, *exc) -> None:
        report = self.teardown()
        if exc[1] is not None:
            with contextlib.suppress(AttributeError, TypeError):
                exc[1].teardown_report = str(report)
        if report.left and exc[0] is None:
            raise LayoutError("teardown failed: " + "; ".join(report.left))
