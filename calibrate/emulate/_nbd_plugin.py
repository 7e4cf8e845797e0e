"""The nbdkit Python plugin that serves one emulated drive (nbdkit-python-plugin, API version 2).

Run by :mod:`diskmodel.calibrate.emulate.devices` as

    ``nbdkit --foreground --unix SOCKET --pidfile PIDFILE python _nbd_plugin.py spec=SPEC.json``

nbdkit embeds the system's Python, not the one diskmodel runs in, so this
file imports only the standard library and nbdkit until ``config_complete``;
then it puts the calling interpreter's package folders (``sys_path`` in the
spec; their ``.pth`` files read, so an editable install is found) ahead of its
own, and hands every request to a
:class:`~diskmodel.calibrate.emulate.server.DriveServer`.
nbdkit takes requests in parallel (``THREAD_MODEL_PARALLEL``): a request the
kernel sends while an earlier one is served reaches the server at once, and
the simulation queues it at the drive behind that one; the drive serves them
one at a time in arrival order, as the simulation does. (Serialized, nbdkit
read the next request off the socket only once the last reply was sent, and
the drive saw each queued request a gap after the one before completed.)
"""
import builtins
import errno
import json
import site
import sys

import nbdkit

API_VERSION = 2
#: The interpreter's thread switch interval inside nbdkit [s] (sys.setswitchinterval).
SWITCH_INTERVAL_S = 1e-4

_spec_path = None
_server = None
_priority = None


def config(key, value):
    global _spec_path
    if key != "spec":
        raise RuntimeError(f"unknown parameter {key}={value} (this plugin takes spec=FILE.json)")
    _spec_path = value


def config_complete():
    global _server
    if _spec_path is None:
        raise RuntimeError("missing parameter spec=FILE.json")
    with builtins.open(_spec_path) as f:  # this module's open() is nbdkit's callback
        spec = json.load(f)
    paths = [p for p in spec.get("sys_path", []) if p not in sys.path]
    sys.path[:0] = paths
    for path in paths:
        site.addsitedir(path)  # reads the .pth files there (an editable install's finder)
    from diskmodel.calibrate.emulate.server import DriveServer

    global _priority
    # A thread holding the interpreter's lock (the request log's, encoding rows) gives it up after this
    # long at most, not the default 5 ms, when the thread serving a request wakes for its deadline.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    _server = DriveServer(spec)
    _priority = spec.get("realtime_priority")
    _all_threads_realtime()
    _server.start_idle_flush()  # started after: it inherits the policy


def _all_threads_realtime():
    """Every thread of this process under SCHED_FIFO at the spec's priority (none: left as is).

    Not the calling thread alone: the Python threads share one interpreter lock, so a thread at the normal
    policy that holds it when a busy host preempts it delays the real-time one serving a request; and nbdkit
    starts some of its threads before the plugin is loaded. Threads started later inherit the policy."""
    if not _priority:
        return
    import os

    param = os.sched_param(int(_priority))
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setscheduler(int(tid), os.SCHED_FIFO, param)
        except ProcessLookupError:  # the thread ended meanwhile
            pass


def thread_model():
    return nbdkit.THREAD_MODEL_PARALLEL


def open(readonly):
    _all_threads_realtime()  # the connection's threads, started since the plugin was loaded
    return 1


def get_size(h):
    return _server.capacity_bytes


def is_rotational(h):
    return _server.rotational


def can_write(h):
    return True


def can_flush(h):
    return True


def can_trim(h):
    return False


def can_zero(h):
    return True


def can_fua(h):
    return nbdkit.FUA_EMULATE


def can_multi_conn(h):
    return False


def _call(method, *args):
    try:
        method(*args)
    except OSError as exc:
        nbdkit.set_error(exc.errno or errno.EIO)
        raise


def pread(h, buf, offset, flags):
    _call(_server.read, buf, offset)


def pwrite(h, buf, offset, flags):
    _call(_server.write, buf, offset)


def zero(h, count, offset, flags):
    _call(_server.zero, count, offset)


def flush(h, flags):
    _call(_server.flush)


def close(h):
    _server.save_log()


def cleanup():
    if _server is not None:
        _server.close()
