"""Child processes that never outlive the run that started them."""
from __future__ import annotations

import os
import signal
import subprocess


def communicate_or_kill(proc: subprocess.Popen, timeout_s: float | None):
    """``proc.communicate(timeout)``; on a timeout, an interrupt or any error,
    SIGKILL the child's process group (it was started with
    ``start_new_session=True``), reap it and re-raise."""
    try:
        return proc.communicate(timeout=timeout_s)
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise
