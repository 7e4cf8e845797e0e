"""Running a :class:`~diskmodel.calibrate.bench.provision.StackPlan` on this machine, step by step.

:class:`HostExecutor` runs each step with ``/bin/sh -c``, logs it, records
what it creates before creating it (:mod:`diskmodel.calibrate.harness.runstate`)
and tears everything down in reverse, by looking, on failure, on exit and on
a signal (:class:`handle_signals` turns SIGINT, SIGTERM, SIGHUP and SIGQUIT
into :class:`Interrupted`, so that ``finally`` blocks run; both live in
:mod:`diskmodel.calibrate.harness.interrupts` and are re-exported here).
"""
from __future__ import annotations

import contextlib
import logging
import os
import stat
import subprocess

from diskmodel.calibrate.harness import runstate
from diskmodel.calibrate.harness.interrupts import Interrupted, handle_signals
from diskmodel.calibrate.harness.resources import TeardownReport
from diskmodel.calibrate.bench.process import communicate_or_kill, spawn
from diskmodel.calibrate.bench.provision import StackPlan, Step

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
        self.plan = plan
        self.log = logger or log
        self.timeout_s = timeout_s
        self.variables: dict[str, str] = {}
        self._resources: list = []
        self._run_context = None
        self.history: list[tuple[str, str, int]] = []  # (what, command, returncode)
        self.report = None

    # -- running one command -------------------------------------------------
    def _sh(self, what: str, command: str) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env.update(self.variables)
        env.setdefault("LVM_SUPPRESS_FD_WARNINGS", "1")
        self.log.info("%s: %s", what, command)
        proc = spawn(["/bin/sh", "-c", command], name=what, env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
        # Interrupted or timed out: the command must not outlive us.
        out, err = communicate_or_kill(proc, self.timeout_s)
        self.history.append((what, command, proc.returncode))
        if out.strip():
            self.log.info("  stdout: %s", out.strip())
        if err.strip():
            self.log.info("  stderr: %s", err.strip())
        self.log.info("  exit status %d", proc.returncode)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def run_command(self, command: str, what: str = "command") -> subprocess.CompletedProcess:
        """Run a shell command with the plan's variables (e.g. "$DISKMODEL_MNT") set."""
        return self._sh(what, command)

    def _expand(self, value):
        if isinstance(value, str):
            for name, val in self.variables.items():
                value = value.replace(f"${name}", val)
        return value

    def _intend(self, step: Step):
        if step.resource is None:
            return None
        kind, pairs = step.resource
        details = {k: self._expand(v) for k, v in pairs}
        details = {k: v for k, v in details.items() if not (isinstance(v, str) and v.startswith("$"))}
        if kind == "loop":
            backing = os.path.realpath(details["backing"])
            st = os.stat(backing)
            details["backing"] = backing
            if stat.S_ISREG(st.st_mode):  # a regular file: found again by inode, even once unlinked
                details["backing_ino"], details["backing_dev"] = st.st_ino, f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        res = self._run.intend(kind, **details)
        self._resources.append(res)
        return res

    # -- building and tearing down -------------------------------------------
    def build(self) -> "HostExecutor":
        if runstate.current_run() is None:
            self._run_context = runstate.ensure_run(f"stack {self.plan.name} on {self.plan.backing}")
            self._run = self._run_context.__enter__()
        else:
            self._run = runstate.current_run()
        try:
            for i, step in enumerate(self.plan.steps, 1):
                res = self._intend(step)
                res_ = self._sh(f"step {i}/{len(self.plan.steps)} {step.description}", step.command)
                if res_.returncode != 0:
                    msg = (f"stack {self.plan.name}: step {i} ({step.description}) failed with status "
                           f"{res_.returncode}: {step.command}\n{res_.stderr.strip()}")
                    self.log.error(msg)
                    raise LayoutError(msg)
                if step.capture:
                    value = res_.stdout.strip()
                    if not value:
                        raise LayoutError(f"step {i} ({step.description}) printed nothing to capture")
                    self.variables[step.capture] = value
                if res is not None:
                    self._run.created(res, **{k: self._expand(v) for k, v in step.resource[1]
                                              if isinstance(v, str) and v.startswith("$")})
                elif step.undo:
                    # Nothing to look for: the undo command itself is recorded, once the step is done.
                    self._resources.append(self._run.intend("command", undo=step.undo,
                                                            env=dict(self.variables)))
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
        report = self._run.undo(self._resources) if self._resources else TeardownReport()
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
        expr = self.plan.device_expr
        for name, value in self.variables.items():
            expr = expr.replace(f'"${name}"', value)
        return expr

    def __enter__(self) -> "HostExecutor":
        return self.build()

    def __exit__(self, *exc) -> None:
        report = self.teardown()
        if exc[1] is not None:
            with contextlib.suppress(AttributeError, TypeError):
                exc[1].teardown_report = str(report)
        if report.left and exc[0] is None:
            raise LayoutError("teardown failed: " + "; ".join(report.left))
