"""Where numba keeps the compiled simulator, so that the first answer after an install does not wait
for the compiler: the machine code of every numba function of :mod:`diskmodel.model.simulator`,
:mod:`diskmodel.model.drive.seek` and :mod:`diskmodel.model.drive.disk` lives in a folder inside the package
(``_jit_cache/``), filled when the wheel is built (``setup.py``) or by ``.ci/setup`` for a checkout,
and read by numba's own on-disk cache (``cache=True``).

numba's cache (``numba.core.caching``) finds a folder for a function through the *locator* classes
listed in ``_CacheImpl._locator_classes``, and keys a function's index by a stamp of its source file
(in numba >= 0.61 a SHA-256 of its content) and each entry by the signature, the CPU (name and
features: ``codegen.magic_tuple()``) and the function's bytecode. The locator here
(:class:`PackageCacheLocator`, put first in that list by :func:`install`) points at the package's
folder, and stamps every function of one group (the simulator's modules; ``seek.py`` with
``disk.py``) with one hash of all of that group's sources. numba links a callee's machine code into
its callers, so a stamp of the caller's file alone would serve stale code after an edit of a callee
in another module; with one stamp per group, any edit recompiles the group.

It yields to numba's own locators (so to numba's usual folders) when ``NUMBA_CACHE_DIR`` is set,
and when numba is configured to compile differently from the build (an optimisation level other than
numba's default, debug info): numba's key does not hold those settings. Code compiled with numba's
bounds checks (``NUMBA_BOUNDSCHECK=1``, which raise IndexError where an index is out of range) is
kept apart, in ``_jit_cache/boundscheck/``, stamped the same way, so that a check of the kernel's
indices compiles once per edit of its sources rather than once per run (the test session compiles it,
``tests/conftest.py``); the wheel does not carry it (``setup.py``). Where the package's folder cannot be written (a system-wide install run by another user), the shipped files
are copied once into a folder of the user's cache (``$XDG_CACHE_HOME`` or ``~/.cache``,
``diskmodel/jit/``) and used there.

A cache entry is for one CPU and one numba version: on another CPU (or numba) the first run compiles
and adds its own entries. :func:`is_warm` tells whether this machine has them, so that the command
line can say so before it waits (:func:`compile_notice`).

Run ``python -m diskmodel.model._jit`` to compile every kernel into the folder
(:func:`precompile`). numba compiles on one core; with more than one, the kinds of block layout are
compiled in two processes at once (:func:`main`), each writing its own entries. numba's
``IndexDataCacheFile.save`` reads a function's index, adds the entry under the first free data file's
name and writes both back, so two processes saving entries of one function at once could each take
the same name, and an index could then point at the other's code: :func:`install` makes the save
hold an exclusive ``flock(2)`` on the folder while it runs.

This package sits outside :mod:`diskmodel.model`, which is pure: it reads the model's sources and
reads and writes the cache's files. ``diskmodel.model`` imports it first, so that its locator is in
place before any numba function is defined.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from numba.core import caching, config

#: The model's folder (``diskmodel/model``, found without importing the model), and the cache's folder
#: in it.
MODEL_DIR = Path(importlib.util.find_spec("diskmodel.model").origin).resolve().parent
CACHE_DIR = MODEL_DIR / "_jit_cache"

#: The groups of modules whose numba functions share one stamp (a callee's code is linked into its
#: callers within a group; no numba function of one group calls one of another): name -> sources.
GROUPS = {
    "simulator": lambda: sorted((MODEL_DIR / "simulator").glob("*.py")),
    "model": lambda: [MODEL_DIR / "drive" / "seek.py", MODEL_DIR / "drive" / "disk.py"],
}

#: CPU time of validate-trace's compile of the simulator from nothing, on the machine docs/benchmarks.md
#: names ("The first answer"), used for the notice's estimate [s].
COLD_COMPILE_CPU_S = 220.0


def _group_of(py_file: str) -> str | None:
    path = Path(py_file).resolve()
    for name, sources in GROUPS.items():
        if path in sources():
            return name
    return None


@functools.lru_cache(maxsize=None)
def _group_stamp(name: str, signature: tuple) -> str:
    """SHA-256 of the group's sources, names and contents, in order (*signature*, the files' sizes
    and modification times, keys the memo so that an edit in a running process is seen)."""
    digest = hashlib.sha256()
    for path in GROUPS[name]():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def group_stamp(name: str) -> str:
    """The stamp numba's index files of group *name* carry (see the module's docstring)."""
    signature = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in GROUPS[name]())
    return _group_stamp(name, signature)


#: The folder, inside the cache's, of the code compiled with numba's bounds checks.
BOUNDSCHECK = "boundscheck"


def _variant() -> str | None:
    """Which of the cache's folders numba's settings compile for: ``""`` as the shipped cache was
    compiled, :data:`BOUNDSCHECK` with bounds checks and otherwise as built; None for numba's own
    folders (``NUMBA_CACHE_DIR`` set, or a setting numba's key does not hold: another optimisation
    level, debug info)."""
    if config.CACHE_DIR or config.OPT != 3 or config.DEBUGINFO_DEFAULT:
        return None
    return BOUNDSCHECK if config.BOUNDSCHECK else ""


def _numba_as_built() -> bool:
    """numba compiles as the shipped cache was compiled (no setting that numba's key does not hold)."""
    return _variant() == ""


def _user_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diskmodel" / "jit"


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def cache_folder(group: str, variant: str = "") -> Path | None:
    """The folder group *group*'s compiled code (of *variant*, :func:`_variant`) is read from and
    written to: the package's, else a copy of it in the user's cache; None when neither can be
    written (numba's own locators then)."""
    shipped = CACHE_DIR / variant / group
    if _writable(shipped):
        return shipped
    copy = _user_cache_root() / variant / group
    if not _writable(copy):
        return None
    if shipped.is_dir():
        for entry in shipped.iterdir():
            target = copy / entry.name
            if entry.suffix in (".nbi", ".nbc") and not target.exists():
                shutil.copy2(entry, target)
    return copy


class PackageCacheLocator(caching._CacheLocator):
    """numba's cache locator for the functions of :data:`GROUPS`: the folder :func:`cache_folder`,
    and one stamp per group (:func:`group_stamp`)."""

    def __init__(self, py_func, py_file, group: str, folder: Path):
        _LOCKED_FOLDERS.add(str(folder))
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._group = group
        self._folder = folder

    def ensure_cache_path(self):
        self._folder.mkdir(parents=True, exist_ok=True)

    def get_cache_path(self):
        return str(self._folder)

    def get_source_stamp(self):
        return group_stamp(self._group)

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        group = _group_of(py_file) if os.path.exists(py_file) else None
        variant = _variant()
        if group is None or variant is None:
            return None
        folder = cache_folder(group, variant)
        return None if folder is None else cls(py_func, py_file, group, folder)


#: The folders :class:`PackageCacheLocator` gave numba, whose saves hold the folder's lock.
_LOCKED_FOLDERS: set[str] = set()


def _locked(save):
    """numba's ``IndexDataCacheFile.save``, holding an exclusive ``flock(2)`` on the cache's folder
    while it reads the index, names the data file and writes both, in the folders of
    :data:`_LOCKED_FOLDERS` (see the module's docstring)."""
    @functools.wraps(save)
    def save_locked(self, key, data):
        if self._cache_path not in _LOCKED_FOLDERS:
            return save(self, key, data)
        fd = os.open(self._cache_path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return save(self, key, data)
        finally:
            os.close(fd)    # closing the last descriptor releases the lock

    save_locked.diskmodel_locked = True
    return save_locked


def install() -> None:
    """Put :class:`PackageCacheLocator` first in numba's list of locators, and make numba's saves
    into its folders hold the folder's lock (once); to run before any numba function of the groups is
    defined (``diskmodel.model`` imports this package first)."""
    if PackageCacheLocator not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, PackageCacheLocator)
    if not getattr(caching.IndexDataCacheFile.save, "diskmodel_locked", False):
        caching.IndexDataCacheFile.save = _locked(caching.IndexDataCacheFile.save)


install()


def _dispatchers() -> list:
    """Every numba function of the groups (importing their modules compiles nothing)."""
    import importlib

    from numba.core.registry import CPUDispatcher

    found = []
    for sources in GROUPS.values():
        for path in sources():
            if path.stem == "__init__":
                continue
            parts = path.resolve().relative_to(MODEL_DIR).with_suffix("").parts
            module = importlib.import_module(".".join(("diskmodel.model", *parts)))
            found += [value for value in vars(module).values()
                      if isinstance(value, CPUDispatcher) and value.__module__ == module.__name__]
    return found


def is_warm() -> bool:
    """Whether this machine's compiled simulator kernel is in the cache (fresh, for this CPU and
    this numba), so that simulating compiles nothing."""
    from numba.core.registry import cpu_target

    from diskmodel.model.simulator import kernel

    cache = getattr(kernel._simulate, "_cache", None)
    if cache is None or isinstance(cache, caching.NullCache):
        return False
    magic = cpu_target.target_context.codegen().magic_tuple()
    try:
        index = cache._cache_file._load_index()
    except Exception:  # an unreadable index is a cold cache; numba rewrites it
        return False
    return any(key[1] == magic for key in index)


def compile_notice() -> str | None:
    """The line to show before a simulation that will compile: None when the cache is warm."""
    if is_warm():
        return None
    return f"compiling the simulator (first run only, about {COLD_COMPILE_CPU_S:.0f} s)"


def precompile(progress=None, kinds=None) -> float:
    """Compile (or load) every kernel for each kind of block layout (DiskSim's g1, g2 and g4) on
    the bundled drives, through every way in: a whole trace, a stepped session, one request and
    many, the vectorised service time; returns the CPU time it took [s]. *progress*: a callable
    given one line per step. *kinds*: only these kinds of layout (``"g1"``, ``"g2"``, ``"g4"``),
    and the vectorised service time only with ``"service"`` among them; None for all."""
    import numpy as np

    from diskmodel.data.disksim import BUNDLED_DRIVES, disksim_drive_folder

    from diskmodel.model.drive.disk import expected_random_service_time_s, service_time_s
    from diskmodel.model.disksim_drives.convert import load_disksim_drive
    from diskmodel.model.simulator.mapping import G2ZoneLayout, G4ZoneLayout
    from diskmodel.model.simulator.session import DriveSession
    from diskmodel.model.simulator.simulate import simulate_requests

    say = progress or (lambda line: None)
    start = time.process_time()
    wanted, kinds = kinds, {}
    for name in BUNDLED_DRIVES:
        drive = load_disksim_drive(disksim_drive_folder(name))
        params = drive.simulation_parameters()
        layout = params.layout
        kind = "g4" if isinstance(layout, G4ZoneLayout) else "g2" if isinstance(layout, G2ZoneLayout) else "g1"
        kinds.setdefault(kind, (name, drive, params))
    if "g2" not in kinds:   # no bundled drive has a g2 layout: the g1 drive with its first tracks as one
        name, drive, params = kinds["g1"]
        kinds["g2"] = (f"{name}'s first tracks as a g2 map", drive, params.evolve(layout=_g2_layout(params.layout)))
    for kind, (name, drive, params) in sorted(kinds.items()):
        if wanted is not None and kind not in wanted:
            continue
        say(f"compiling the simulator for {kind} layouts ({name})")
        lbn = np.array([0, 64, 8, 1000], np.int64)
        blocks = np.array([8, 8, 16, 1], np.int64)
        is_write = np.array([False, True, False, True])
        simulate_requests(params, is_write, lbn, blocks, np.zeros(4))
        session = DriveSession(params)
        session.serve(False, 0, 8, 0.0)
        session.serve_many(is_write, lbn, blocks, np.arange(4) * 1e-3 + 1.0)
    if wanted is not None and "service" not in wanted:
        return time.process_time() - start
    say("compiling the vectorised service time")
    from diskmodel.model.drive.presets import load_preset

    # a DiskSim drive's seek is a table, a preset's the two-piece curve: each its own copy
    for disk in (kinds["g1"][1].disk, load_preset("wd800bd")):
        service_time_s(disk, np.array([0, 1 << 20]), 4096, 0)
        service_time_s(disk, np.array([0, 1 << 20]), 4096, 0, is_write=True)
        expected_random_service_time_s(disk, 4096)
        disk.seek.seek_time_s(np.array([0.0, 10.0]))   # a calibration's fitted seek curve, alone
    return time.process_time() - start


def _g2_layout(layout, blocks: int = 2048):
    """A g2 layout (DiskSim's ``dm_layout_g2``: an extent map) of the first cylinders of g1 *layout*'s first
    zone, one extent a track, holding at least *blocks*: the kernels are compiled for each kind of layout (its
    tuple's length, :meth:`~diskmodel.model.simulator.mapping.ZoneLayout.kernel_arrays`), not for each drive,
    so a map that serves :func:`precompile`'s few requests compiles the code every g2 drive runs."""
    from diskmodel.model.simulator.mapping import G2ZoneLayout

    spt, heads = int(layout.sectors_per_track[0]), int(layout.surfaces)
    cylinders = -(-blocks // (spt * heads)) + 1
    tracks = [(c, h) for c in range(cylinders) for h in range(heads)]
    extents = [(i * spt, c, h, 0, spt) for i, (c, h) in enumerate(tracks)]
    return G2ZoneLayout.from_map(heads, [(0, cylinders - 1)], [spt], [(0.0, 0.0, 0.0)], ["sectors"], extents,
                                 cylinders, len(extents) * spt)


def prune() -> int:
    """Delete the files of the cache's folders that no fresh index names (numba leaves a stale
    index's data files behind, to be overwritten one day); returns how many went."""
    import pickle

    removed = 0
    for group in GROUPS:
        folder = cache_folder(group, _variant() or "")
        if folder is None or not folder.is_dir():
            continue
        stamp, kept = group_stamp(group), set()
        for index in folder.glob("*.nbi"):
            with open(index, "rb") as f:
                version = pickle.load(f)
                data = f.read()
            fresh = False
            if version == caching.numba.__version__:
                index_stamp, overloads = pickle.loads(data)
                fresh = index_stamp == stamp
            if fresh:
                kept.add(index.name)
                kept.update(overloads.values())
        for entry in folder.iterdir():
            if entry.suffix in (".nbi", ".nbc") and entry.name not in kept:
                entry.unlink()
                removed += 1
    return removed


#: The kinds :func:`_precompile_in_parallel` gives its second process: the g4 and g2 layouts' kernels, each
#: of whose compiles takes about as long as the g1 layout's with the helpers they share.
SECOND_PROCESS_KINDS = frozenset({"g4", "g2"})


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


def _precompile_in_parallel(progress=None) -> float:
    """:func:`precompile`, the kinds of :data:`SECOND_PROCESS_KINDS` in a forked process while this one
    compiles the rest (on one core, all here), then everything once more here: the second process's
    entries load (or, were one missing, compile); returns the CPU time of this process and the other's
    [s]. The fork comes before this process compiles anything, so the child inherits no compiler state.
    On one core, or when the kernel is in the cache already (:func:`is_warm`: the rest loads in
    seconds, less than a second process costs), all here."""
    import multiprocessing

    if _cores() < 2 or is_warm():
        return precompile(progress)
    context = multiprocessing.get_context("fork")
    other_cpu = context.Value("d", 0.0)
    child = context.Process(target=_second_process, args=(other_cpu, progress), name="diskmodel-jit")
    child.start()
    try:
        mine = precompile(progress, kinds={"g1", "g2", "g4", "service"} - SECOND_PROCESS_KINDS)
    finally:
        child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"compiling the simulator's kernels for {', '.join(sorted(SECOND_PROCESS_KINDS))} "
                           f"layouts failed in the second process (exit {child.exitcode})")
    return mine + other_cpu.value + precompile()


def _second_process(cpu_s, progress) -> None:
    cpu_s.value = precompile(progress, kinds=SECOND_PROCESS_KINDS)


def main(argv: list[str] | None = None) -> int:
    """``python -m diskmodel.model._jit``: compile every kernel into the cache's folder; with
    ``NUMBA_BOUNDSCHECK=1``, the g1 layouts' whole-trace kernels with bounds checks into
    ``_jit_cache/boundscheck/``."""
    if argv:
        print(f"usage: {sys.executable} -m diskmodel.model._jit (takes no arguments; got {argv[0]!r})",
              file=sys.stderr)
        return 2
    variant = _variant()
    if variant is None:
        print("diskmodel.model._jit: numba is set to compile otherwise (NUMBA_CACHE_DIR, NUMBA_OPT or "
              "NUMBA_DEBUGINFO): nothing to compile into the package's cache", file=sys.stderr)
        return 2
    if variant == BOUNDSCHECK:
        # the whole traces of the drives with a trace, all of g1 layouts, as the checks of the kernel's
        # indices run them
        cpu_s = precompile(progress=print, kinds={"g1"})
    else:
        cpu_s = _precompile_in_parallel(progress=print)
    prune()
    folders = sorted({str(cache_folder(g, variant)) for g in GROUPS})
    print(f"compiled the simulator in {cpu_s:.0f} s of CPU into {', '.join(folders)}")
    return 0

