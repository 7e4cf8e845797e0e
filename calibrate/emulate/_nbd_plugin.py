"""The nbdkit Python plugin that serves one emulated drive (nbdkit-python-plugin, API version 2).

Run by :mod:`diskmodel.calibrate.emulate.devices` as

    ``nbdkit --foreground --unix SOCKET --pidfile PIDFILE python _nbd_plugin.py spec=SPEC.json``

nbdkit embeds the system's Python, not the one diskmodel runs in, so this
file imports only the standard library and nbdkit until ``config_complete``;
then it puts the calling interpreter's package folders (``sys_path`` in the
spec; their ``.pth`` files read, so an editable install is found) ahead of its
own, and hands every request to a
:class:`~diskmodel.calibrate.emulate.server.DriveServer`.
Requests are served one at a time (``THREAD_MODEL_SERIALIZE_ALL_REQUESTS``):
the drive serves them in arrival order, as the simulation does.
"""
import builtins
import errno
import json
import site
import sys

import nbdkit

API_VERSION = 2

_spec_path = None
_server = None


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

    _server = DriveServer(spec)
    _server.start_idle_flush()
    priority = spec.get("realtime_priority")
    if priority:
        # Real-time (SCHED_FIFO) from here on: the threads nbdkit starts to serve requests inherit it, so
        # that a deadline's wake-up does not wait behind other processes' time slices.
        import os

        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))


def thread_model():
    return nbdkit.THREAD_MODEL_SERIALIZE_ALL_REQUESTS


def open(readonly):
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
