"""Bonnie++ 2.00's phases as file operations (:class:`~.fileops.FileOps`).

A :class:`BonnieConfig` holds bonnie++'s options (``-s size:chunk:seeks:seekers``,
``-n files:max:min:directories:chunk``, ``-D``, ``-z``); :func:`bonnie` turns the phases it names
into one ``FileOps``, in bonnie++'s order. What each phase does is what Debian's bonnie++ 2.00a
does under ``strace -f`` with fast mode (``-f``: the per-character tests skipped), and what its
manual page and readme.html (/usr/share/doc/bonnie++) state:

- **write** (sequential output, block): the file is created, written whole in ``chunk_bytes``
  calls, fsynced and closed. (A probe before it creates, fsyncs and removes an empty file.)
  Above 1 GiB the data is split into files of up to 1 GiB each (the manual page's ``-s``).
- **rewrite**: each chunk is read, the offset moved back, the chunk written; then fsync.
- **read** (sequential input, block): each chunk read in order; then fsync (of a clean file).
- **seeks**: ``seekers`` processes, together ``seeks`` times, move to a chunk chosen uniformly
  and read it; one seek in ten writes the chunk back (readme.html: "In 10% of cases, it is
  dirtied and written back"); each process, and the parent, fsyncs at its end. Then the data files are removed.
- **create_seq**, **stat_seq**, **delete_seq**: ``files`` files created in numeric order (the
  first half in the first directory, and so on, when ``directories`` > 1), each written with a
  size uniform on ``min_bytes .. max_bytes`` in ``file_chunk_bytes`` calls, then ``sync()``
  (sync(2), which syncs every file system: ``Kind.SYNC_ALL``);
  each stat()ed and, when it has data, read whole, in directory order; each removed in
  directory order; then ``sync()``.
- **create_rand**, **stat_rand**, **delete_rand**: the same with the files spread over the
  directories at random, stat()ed (and read) in a random order, removed in another.

Directory order is modelled as creation order. Phases not selected leave what they would have
made already on the device, not cached (``initial_bytes``): the ``read`` phase alone reads a
file written before the workload. ``direct`` (``-D``) opens the block write's file with O_DIRECT;
bonnie++ 2.00a opens it again without the flag for the rewrite, read and seeks (strace shows
it). Random numbers are numpy's (seeded by ``seed``), not
bonnie++'s, so a run matches in distribution, not chunk by chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fileops import CALL_S, COPY_BYTES_PER_S, FILE_OP_S, FileOps, Kind, _Builder, _whole

__all__ = ["BonnieConfig", "PHASES", "IO_PHASES", "FILE_PHASES", "bonnie", "bonnie_argv", "describe"]

IO_PHASES = ("write", "rewrite", "read", "seeks")
FILE_PHASES = ("create_seq", "stat_seq", "delete_seq", "create_rand", "stat_rand", "delete_rand")
PHASES = IO_PHASES + FILE_PHASES
#: Bonnie++ splits its data into files of at most this many bytes (manual page, ``-s``).
FILE_LIMIT_BYTES = 1 << 30
#: One seek in this many writes its chunk back (readme.html, "Random Seeks").
UPDATE_EVERY = 10


@dataclass(frozen=True)
class BonnieConfig:
    """Bonnie++'s options; defaults are bonnie++ 2.00's except ``size_bytes`` (bonnie++ takes
    twice the RAM; here it must be given when an I/O phase runs).

    size_bytes, chunk_bytes, seeks, seekers: ``-s size:chunk:seeks:seekers`` (chunk a power of two,
    256 B .. 1 MiB; 8192 seeks; 5 seekers). files, max_bytes, min_bytes, directories,
    file_chunk_bytes: ``-n`` (files counted one by one here, bonnie++ counts them in 1024s; 16 x
    1024 files of 0 bytes in one directory; 8 KiB calls). direct: ``-D`` (O_DIRECT for the block
    write). seed: ``-z``. phases: which of :data:`PHASES` run.
    """

    size_bytes: int = 0
    chunk_bytes: int = 8192
    seeks: int = 8192
    seekers: int = 5
    files: int = 16 * 1024
    max_bytes: int = 0
    min_bytes: int = 0
    directories: int = 1
    file_chunk_bytes: int = 8192
    direct: bool = False
    seed: int = 1
    phases: tuple = PHASES

    def __post_init__(self):
        for name, low in (("size_bytes", 0), ("chunk_bytes", 256), ("seeks", 1), ("seekers", 1), ("files", 1),
                          ("max_bytes", 0), ("min_bytes", 0), ("directories", 1), ("file_chunk_bytes", 1),
                          ("seed", 0)):
            _whole(name, getattr(self, name), low)
        c = self.chunk_bytes
        if c & (c - 1) or c > 1 << 20:
            raise ValueError(f"workload bonnie: chunk = {c} must be a power of two from 256 to 1048576 (bonnie++ -s)")
        if self.min_bytes > self.max_bytes:
            raise ValueError(f"workload bonnie: min = {self.min_bytes} must be <= max = {self.max_bytes}")
        bad = [p for p in self.phases if p not in PHASES]
        if bad or not self.phases:
            raise ValueError(f"workload bonnie: phases = {'+'.join(map(str, self.phases))!r}: "
                             f"each must be one of {', '.join(PHASES)}")
        if any(p in IO_PHASES for p in self.phases):
            if self.size_bytes < self.chunk_bytes:
                raise ValueError(f"workload bonnie: size = {self.size_bytes} must be >= chunk = {self.chunk_bytes} "
                                 f"for the phases {', '.join(p for p in self.phases if p in IO_PHASES)}")
            if self.size_bytes % self.chunk_bytes:
                raise ValueError(f"workload bonnie: size = {self.size_bytes} must be a multiple of chunk = "
                                 f"{self.chunk_bytes} (bonnie++ moves whole chunks)")


def describe(config: BonnieConfig) -> str:
    """The workload's definition in one line (printed beside its result)."""
    parts = []
    if any(p in IO_PHASES for p in config.phases):
        parts.append(f"{config.size_bytes} B data in {config.chunk_bytes} B calls, {config.seeks} seeks by "
                     f"{config.seekers} processes" + (", O_DIRECT" if config.direct else ""))
    if any(p in FILE_PHASES for p in config.phases):
        parts.append(f"{config.files} files of {config.min_bytes}..{config.max_bytes} B in {config.directories} "
                     f"director{'y' if config.directories == 1 else 'ies'}")
    return f"bonnie++ {'+'.join(config.phases)}: " + "; ".join(parts)


def bonnie_argv(config: BonnieConfig, directory: str, *, ram_mib: int = 0) -> list[str]:
    """bonnie++'s command line for *config* in *directory* (an argument vector): ``-f`` (no
    per-character tests), ``-r`` *ram_mib* (0: bonnie++'s size checks off), ``-u root``, ``-q``
    (CSV alone on standard output). Bonnie++ runs all of its I/O phases or none (``-s 0``) and all
    of its file phases or none (``-n 0``); :func:`bonnie` of the same config with every phase of
    each group run is what it does."""
    io = any(p in IO_PHASES for p in config.phases)
    files = any(p in FILE_PHASES for p in config.phases)
    for group, on in ((IO_PHASES, io), (FILE_PHASES, files)):
        if on and not set(group) <= set(config.phases):
            raise ValueError(f"workload bonnie: phases = {'+'.join(config.phases)!r}: bonnie++ runs "
                             f"{', '.join(group)} all or none; name them all (phases=io, phases=files)")
    if files and config.files % 1024:
        raise ValueError(f"workload bonnie: files = {config.files} must be a multiple of 1024 to run bonnie++ "
                         "(its -n counts files in 1024s)")
    size = f"{config.size_bytes // (1 << 20)}:{config.chunk_bytes}:{config.seeks}:{config.seekers}" if io else "0"
    if io and config.size_bytes % (1 << 20):
        raise ValueError(f"workload bonnie: size = {config.size_bytes} must be whole MiB to run bonnie++ (its -s)")
    n = f"{config.files // 1024}:{config.max_bytes}:{config.min_bytes}:{config.directories}" if files else "0"
    if files and config.file_chunk_bytes != 8192:
        if io:
            raise ValueError(f"workload bonnie: file_chunk = {config.file_chunk_bytes} with the I/O phases: Debian's "
                             "bonnie++ 2.00a aborts (double free) when -n has a chunk size and -s is not 0; "
                             "run the file phases apart")
        n += f":{config.file_chunk_bytes}"
    argv = ["bonnie++", "-d", directory, "-s", size, "-n", n, "-r", str(ram_mib), "-u", "root", "-f", "-q",
            "-z", str(config.seed)]
    if config.direct:
        argv.append("-D")
    return argv


class _Gen:
    def __init__(self, config: BonnieConfig, call_s: float, copy_bytes_per_s: float, file_op_s: float):
        self.c = config
        self.rng = np.random.default_rng(config.seed)
        self.b = _Builder(call_s, copy_bytes_per_s, file_op_s)
        self.op_s = file_op_s
        n_data = -(-config.size_bytes // FILE_LIMIT_BYTES) if config.size_bytes else 0
        self.data_sizes = [min(FILE_LIMIT_BYTES, config.size_bytes - k * FILE_LIMIT_BYTES) for k in range(n_data)]
        self.data = list(range(n_data))  # file numbers of the data files
        self.probe = n_data  # the empty file bonnie++ creates and removes first
        first = n_data + 1
        self.seq = list(range(first, first + config.files))
        self.rand = list(range(first + config.files, first + 2 * config.files))
        total = first + 2 * config.files
        self.dirs = np.zeros(total, np.int64)
        self.initial = np.zeros(total, np.int64)
        self.sizes = np.zeros(total, np.int64)
        d = config.directories
        lo, hi = config.min_bytes, config.max_bytes
        for k, files in enumerate((self.seq, self.rand)):
            n = len(files)
            self.sizes[files] = self.rng.integers(lo, hi + 1, n) if hi > lo else lo
            # The files of a random test are spread over the directories at random; a sequential test's fill them in order.
            spread = (np.arange(n) * d // n) if k == 0 else self.rng.integers(0, d, n)
            self.dirs[files] = 1 + k * d + spread

    def _add(self, kind, f, off=0, size=0, chunk=0, direct=False, at=None, op=False):
        self.b.add(kind, f, off, size, chunk, direct, at=at, op_s=self.op_s if op else 0.0)

    def _chunks(self, f, kind, size, direct=False):
        ch = self.c.chunk_bytes
        for off in range(0, size, ch):
            self._add(kind, f, off, min(ch, size - off), ch, direct)

    def io(self, phases):
        c = self.c
        if "write" in phases:
            self._add(Kind.CREATE, self.probe, op=True)
            self._add(Kind.FSYNC, self.probe)
            self._add(Kind.DELETE, self.probe, op=True)
            for f, size in zip(self.data, self.data_sizes):
                self._add(Kind.CREATE, f, op=True)
                self._chunks(f, Kind.WRITE, size, c.direct)
                self._add(Kind.FSYNC, f)
        else:
            self.initial[self.data] = self.data_sizes
        if "rewrite" in phases:
            for f, size in zip(self.data, self.data_sizes):
                for off in range(0, size, c.chunk_bytes):
                    n = min(c.chunk_bytes, size - off)
                    self._add(Kind.READ, f, off, n, c.chunk_bytes)
                    self._add(Kind.WRITE, f, off, n, c.chunk_bytes)
                self._add(Kind.FSYNC, f)
        if "read" in phases:
            for f, size in zip(self.data, self.data_sizes):
                self._chunks(f, Kind.READ, size)
                self._add(Kind.FSYNC, f)
        if "seeks" in phases:
            self._seeks()
        for f in self.data:
            self._add(Kind.DELETE, f, op=True)

    def _seeks(self):
        c = self.c
        per = [c.seeks // c.seekers + (1 if k < c.seeks % c.seekers else 0) for k in range(c.seekers)]
        chunks = np.array([s // c.chunk_bytes for s in self.data_sizes])
        starts = np.concatenate([[0], np.cumsum(chunks)])
        picks = self.rng.integers(0, int(starts[-1]), c.seeks)
        update = self.rng.integers(0, UPDATE_EVERY, c.seeks) == 0
        k = 0
        # The seekers run at once: their i-th seeks go out together.
        for i in range(max(per)):
            at = None
            for s in range(c.seekers):
                if i >= per[s]:
                    continue
                g = int(picks[k])
                f = int(np.searchsorted(starts, g, side="right") - 1)
                off = (g - int(starts[f])) * c.chunk_bytes
                self._add(Kind.READ, self.data[f], off, c.chunk_bytes, c.chunk_bytes, at=at)
                at = self.b.rows[-1][0] if at is None else at
                if update[k]:
                    self._add(Kind.WRITE, self.data[f], off, c.chunk_bytes, c.chunk_bytes, at=at)
                k += 1
        # Each seeker fsyncs its descriptor at its end, and so does the parent, which opened the file too.
        for f in self.data:
            for _ in range(c.seekers + 1):
                self._add(Kind.FSYNC, f)

    def files(self, phases, which: str):
        files = self.seq if which == "seq" else self.rand
        c = self.c
        if f"create_{which}" in phases:
            order = files
            for f in order:
                self._add(Kind.CREATE, f, op=True)
                size = int(self.sizes[f])
                for off in range(0, size, c.file_chunk_bytes):
                    self._add(Kind.WRITE, f, off, min(c.file_chunk_bytes, size - off), c.file_chunk_bytes)
            self._add(Kind.SYNC_ALL, -1)
        else:
            self.initial[files] = self.sizes[files]
        stat_order = files if which == "seq" else [files[i] for i in self.rng.permutation(len(files))]
        if f"stat_{which}" in phases:
            for f in stat_order:
                self._add(Kind.STAT, f, op=True)
                size = int(self.sizes[f])
                for off in range(0, size, c.file_chunk_bytes):
                    self._add(Kind.READ, f, off, min(c.file_chunk_bytes, size - off), c.file_chunk_bytes)
        delete_order = files if which == "seq" else [files[i] for i in self.rng.permutation(len(files))]
        if f"delete_{which}" in phases:
            for f in delete_order:
                self._add(Kind.DELETE, f, op=True)
            self._add(Kind.SYNC_ALL, -1)


def bonnie(config: BonnieConfig, *, call_s: float = CALL_S, copy_bytes_per_s: float = COPY_BYTES_PER_S,
           file_op_s: float = FILE_OP_S, sync_at_end: bool = True) -> FileOps:
    """Bonnie++'s phases ``config.phases`` (see the module docstring)."""
    g = _Gen(config, call_s, copy_bytes_per_s, file_op_s)
    phases = set(config.phases)
    if phases & set(IO_PHASES):
        g.io(phases)
    if phases & set(FILE_PHASES):
        g.files(phases, "seq")
        g.files(phases, "rand")
    return g.b.build(g.dirs, g.initial, sync_at_end)


#: The keys of ``bonnie:KEY=VALUE,...`` and the config field each sets.
SPEC_KEYS = {"size": "size_bytes", "chunk": "chunk_bytes", "seeks": "seeks", "seekers": "seekers",
             "files": "files", "max": "max_bytes", "min": "min_bytes", "dirs": "directories",
             "file_chunk": "file_chunk_bytes", "direct": "direct", "seed": "seed", "phases": "phases"}


def from_pairs(pairs: dict, size_value, *, sync_at_end: bool = True) -> FileOps:
    """``bonnie:KEY=VALUE,...`` (keys :data:`SPEC_KEYS`; ``phases`` joined by ``+``, or ``io`` /
    ``files``; sizes by *size_value*) as FileOps."""
    return bonnie(config_of(pairs, size_value), sync_at_end=sync_at_end)


def config_of(pairs: dict, size_value) -> BonnieConfig:
    """The :class:`BonnieConfig` of a spec's ``KEY=VALUE`` pairs (one ValueError line naming a bad key)."""
    kw = {}
    for key, value in pairs.items():
        if key not in SPEC_KEYS:
            raise ValueError(f"workload bonnie: key {key!r} is not one of {', '.join(SPEC_KEYS)}")
        if key == "phases":
            groups = {"io": IO_PHASES, "files": FILE_PHASES, "all": PHASES}
            kw["phases"] = tuple(p for part in value.split("+") for p in groups.get(part, (part,)))
        elif key == "direct":
            if value not in ("0", "1"):
                raise ValueError(f"workload bonnie: direct = {value!r} must be 0 or 1")
            kw["direct"] = value == "1"
        else:
            kw[SPEC_KEYS[key]] = size_value("bonnie", key, value)
    if "phases" not in kw and "size" not in pairs:
        kw["phases"] = FILE_PHASES
    return BonnieConfig(**kw)
