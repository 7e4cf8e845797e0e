"""``diskmodel cleanup [--dry-run]``: remove what runs killed with SIGKILL left behind."""
from __future__ import annotations


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "cleanup", help="list and remove what killed runs left behind (loops, mounts, cgroups, VMs, files, "
                           "kernel threads left real-time)",
        description="Remove what runs killed with SIGKILL left behind (loop devices, mounts, cgroups, VMs, "
                    "files), as their state files list it, and put back the scheduling policy of each kernel "
                    "thread such a run put under SCHED_FIFO (only the same thread, by its start time, still at "
                    "the policy the run set, and not one a live run changed too). Only state files that the "
                    "running user owns, in a run-state folder no one else may write, are acted on (any other is "
                    "named and skipped); what a live run holds the lock of is left alone.")
    parser.add_argument("--dry-run", action="store_true", help="only show what would be removed (default: off)")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from diskmodel.calibrate.harness import runstate

    return runstate.cleanup_cli(dry_run=args.dry_run)
