"""fio job files: a documented subset of fio's own syntax, read into the model's fio jobs.

The text is fio's job-file format (fio(1), "JOB FILE FORMAT"): an INI file
of a ``[global]`` section and job sections, ``key=value`` lines, comments
starting with ``#`` or ``;``.  One job section per file (fio runs the jobs
of a file at once, which the model does not take); ``[global]`` sets the
defaults of the job.  The keys read, with fio's meaning and defaults:

* ``rw`` (``readwrite``): read, write, randread, randwrite; rw (or
  readwrite) and randrw mix reads and writes, ``rwmixread`` percent reads
  (default 50);
* ``bs`` (``blocksize``): the request size (default 4k);
* ``iodepth``: requests in flight per job (default 1);
* ``numjobs``: copies of the job run at once (default 1), random jobs only:
  the device sees numjobs x iodepth requests in flight;
* ``size``: the region each job works in (required: there is no file to take
  it from);
* ``io_size`` (``io_limit``): bytes each job moves (default: size);
* ``direct``: 1 (O_DIRECT; the model covers these jobs only);
* ``fsync``: 0 (no fsync every N writes; the model has no per-N flush);
  ``end_fsync``: 0 or 1, fsync at the end of a write job (default 0);
* ``runtime``: a limit on the job's time (s, or with a suffix ms, s, m, h):
  a job predicted to take longer is cut there, and moves what it moved by then.

Sizes take fio's suffixes as fio reads them with its default
``kb_base=1024`` (fio(1), "kb_base"): k, m, g, t (any case, an optional
trailing b) are powers of 1024, and, inverted "for compatibility with old
scripts", ki, mi, gi, ti (with b: KiB) are powers of 1000; the definition is
printed back in bytes and SI units (MB = 10^6 bytes).
``name``, ``filename``, ``ioengine`` and ``description`` are read and ignored
(the stack says where the job runs; the engine follows the queue depth);
any other key is refused naming the key, its value and what would work.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .._checks import show
from ..iopath.fileops import FIO_RW
from .block_workloads import FioJob

#: The keys of the subset, with fio's aliases: what the model reads.
KEYS = ("rw", "rwmixread", "bs", "iodepth", "numjobs", "size", "io_size", "direct", "fsync", "end_fsync",
        "runtime")
ALIASES = {"readwrite": "rw", "blocksize": "bs", "io_limit": "io_size"}
#: Keys read and ignored, each with why.
IGNORED = {"name": "the section's name names the job", "filename": "the stack says where the job runs",
           "ioengine": "libaio above iodepth 1, else psync", "description": "text only"}
RW_VALUES = FIO_RW
_SIZE = re.compile(r"(\d+)\s*([kmgtp]?)(i?b)?", re.IGNORECASE)
_TIME = re.compile(r"(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?", re.IGNORECASE)
_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_SECONDS = {None: 1.0, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class FioJobFile:
    """One job of a fio job file, as the model reads it.

    Attributes
    ----------
    name : str
        The job section's name.
    rw : str
        read, write, randread, randwrite, rw or randrw (readwrite read as rw).
    rwmixread : int
        Percent of reads in a mixed job [0..100].
    block_size_bytes : int
        ``bs`` [bytes].
    iodepth : int
        Requests in flight per job [count].
    numjobs : int
        Copies of the job run at once [count].
    size_bytes : int
        The region each job works in [bytes].
    io_size_bytes : int
        Bytes each job moves [bytes].
    end_fsync : bool
        fsync at the end of a write job.
    runtime_s : float or None
        A limit on the job's time [s]; None: none.
    """

    name: str
    rw: str
    rwmixread: int
    block_size_bytes: int
    iodepth: int
    numjobs: int
    size_bytes: int
    io_size_bytes: int
    end_fsync: bool
    runtime_s: float | None

    @property
    def mixed(self) -> bool:
        return self.rw in ("rw", "randrw")

    @property
    def random(self) -> bool:
        return self.rw.startswith("rand")

    @property
    def total_bytes(self) -> int:
        """Bytes all the jobs move [bytes]."""
        return self.io_size_bytes * self.numjobs

    @property
    def region_bytes(self) -> int:
        """Bytes of the device all the jobs work in [bytes] (each job its own region, as fio lays out files)."""
        return self.size_bytes * self.numjobs

    def parts(self) -> list[tuple[float, FioJob]]:
        """(fraction of the requests, model job) of the job: one part, or the reads and the writes of a mix."""
        depth = self.iodepth * self.numjobs
        kinds = {"read": ["read"], "write": ["write"], "randread": ["randread"], "randwrite": ["randwrite"],
                 "rw": ["read", "write"], "randrw": ["randread", "randwrite"]}[self.rw]
        shares = [self.rwmixread / 100, 1 - self.rwmixread / 100] if self.mixed else [1.0]
        out = []
        for rw, share in zip(kinds, shares):
            if share <= 0:
                continue
            moved = max(self.block_size_bytes, int(round(self.total_bytes * share)))
            region = self.region_bytes if self.region_bytes != moved else None
            out.append((share, FioJob(rw, self.block_size_bytes, moved, depth, direct=True,
                                      end_fsync=self.end_fsync, name=f"{self.name}:{rw}", region_bytes=region)))
        return out

    def definition(self) -> str:
        """The job as the model reads it, in fio's keys with bytes and SI units (one line)."""
        def size(n):
            return f"{n} bytes ({n / 1e6:.1f} MB)" if n >= 1e6 else f"{n} bytes"
        text = f"[{self.name}] rw={self.rw}"
        if self.mixed:
            text += f" rwmixread={self.rwmixread}%"
        text += (f" bs={size(self.block_size_bytes)} iodepth={self.iodepth} numjobs={self.numjobs} "
                 f"size={size(self.size_bytes)} io_size={size(self.io_size_bytes)} direct=1 fsync=0 "
                 f"end_fsync={int(self.end_fsync)}")
        if self.runtime_s is not None:
            text += f" runtime={self.runtime_s:g} s"
        return text


def _error(key: str, value: str, what: str) -> ValueError:
    return ValueError(f"{key}={value}: {what}")


def _bytes(key: str, value: str) -> int:
    match = _SIZE.fullmatch(value.strip())
    if not match or int(match.group(1)) <= 0:
        raise _error(key, value, "not a size fio reads here (a whole number > 0 with an optional k, m, g or t: "
                                 "powers of 1024, fio's default kb_base; KiB, MiB: powers of 1000; e.g. 4k, 64m)")
    # fio's default kb_base=1024 reads "k" as 1024 and "KiB" as 1000 (fio(1), kb_base)
    base = 1000 if (match.group(3) or "").lower() == "ib" else 1024
    return int(match.group(1)) * base ** _POWER[match.group(2).lower()]


def _count(key: str, value: str, low: int, high: int | None = None) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = None
    if number is None or number < low or (high is not None and number > high):
        span = f">= {low}" if high is None else f"{low}..{high}"
        raise _error(key, value, f"must be a whole number {span}")
    return number


def _seconds(key: str, value: str) -> float:
    match = _TIME.fullmatch(value.strip())
    if not match or float(match.group(1)) <= 0:
        raise _error(key, value, "must be a time > 0 (s by default; or with us, ms, s, m, h)")
    unit = match.group(2).lower() if match.group(2) else None
    return float(match.group(1)) * _SECONDS[unit]


def _sections(text: str) -> list[tuple[str, dict[str, tuple[int, str]]]]:
    """[(section name, {key: (line number, value)})] of the INI text, in file order."""
    sections: list[tuple[str, dict]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise ValueError(f"line {number}: {show(line)} is not a section header ([name])")
            sections.append((line[1:-1].strip(), {}))
            continue
        if not sections:
            raise ValueError(f"line {number}: {show(line)} comes before any section (start with [global] "
                             "or [jobname])")
        key, sign, value = line.partition("=")
        key = key.strip().lower()
        if not sign:
            raise ValueError(f"line {number}: {show(line)} has no value; give key=value")
        sections[-1][1][ALIASES.get(key, key)] = (number, value.strip())
    return sections


def parse_fio_job(text: str) -> FioJobFile:
    """The one job of fio job file *text* (ValueError, one line naming the key, its value and what would work;
    the caller names the file)."""
    if not isinstance(text, str):
        raise ValueError(f"a job file is text (got {show(text)})")
    sections = _sections(text)
    jobs = [(name, keys) for name, keys in sections if name.lower() != "global"]
    if len(jobs) != 1:
        names = ", ".join(name for name, _ in jobs) or "none"
        raise ValueError(f"{len(jobs)} job sections ({names}); give exactly one job per file (fio runs "
                         "the jobs of one file at once, which the model does not take)")
    merged: dict[str, tuple[int, str]] = {}
    for name, keys in sections:
        if name.lower() == "global":
            merged.update(keys)
    name, own = jobs[0]
    merged.update(own)
    for key, (number, value) in merged.items():
        if key not in KEYS and key not in IGNORED:
            raise ValueError(f"line {number}: {key}={value}: not a key of the subset diskmodel reads; the keys are "
                             f"{', '.join(KEYS)} (and {', '.join(IGNORED)}, ignored)")
    value = {key: v for key, (_, v) in merged.items()}
    return _job(name, value)


def _job(name: str, value: dict[str, str]) -> FioJobFile:
    rw = value.get("rw", "read").strip().lower()
    if rw not in RW_VALUES:
        raise _error("rw", value["rw"], f"one of {', '.join(RW_VALUES)}")
    rw = "rw" if rw == "readwrite" else rw
    if "rwmixread" in value and rw not in ("rw", "randrw"):
        raise _error("rwmixread", value["rwmixread"], f"applies to a mixed job (rw=rw or randrw), not rw={rw}")
    direct = value.get("direct", "0")
    if direct.strip() not in ("1", "true"):
        raise _error("direct", direct, "the model covers O_DIRECT jobs only: give direct=1 (a buffered job times "
                                       "the page cache; fio's default is direct=0)")
    if value.get("fsync", "0").strip() != "0":
        raise _error("fsync", value["fsync"], "an fsync every N writes is not modelled: give fsync=0 (end_fsync=1 "
                                              "for one fsync at the end)")
    if "size" not in value:
        raise ValueError("size is missing (the region the job works in, e.g. size=1g; there is no file "
                         "for fio to take it from)")
    block = _bytes("bs", value.get("bs", "4k"))
    size = _bytes("size", value["size"])
    io_size = _bytes("io_size", value["io_size"]) if "io_size" in value else size
    if block > size:
        raise _error("bs", value.get("bs", "4k"), f"larger than size={value['size']} ({size} bytes)")
    numjobs = _count("numjobs", value.get("numjobs", "1"), 1)
    if numjobs > 1 and not rw.startswith("rand"):
        raise _error("numjobs", value["numjobs"], f"{numjobs} sequential streams at once are not modelled (their "
                                                  f"requests interleave); numjobs=1, or a random rw "
                                                  f"(randread, randwrite, randrw)")
    end_fsync = value.get("end_fsync", "0").strip()
    if end_fsync not in ("0", "1"):
        raise _error("end_fsync", end_fsync, "0 or 1")
    return FioJobFile(
        name=name or "job", rw=rw, rwmixread=_count("rwmixread", value.get("rwmixread", "50"), 0, 100),
        block_size_bytes=block, iodepth=_count("iodepth", value.get("iodepth", "1"), 1), numjobs=numjobs,
        size_bytes=size, io_size_bytes=io_size, end_fsync=end_fsync == "1",
        runtime_s=_seconds("runtime", value["runtime"]) if "runtime" in value else None)


def check_fits(job: FioJobFile, capacity_bytes: int, where: str) -> None:
    """ValueError (one line) when the job's region is larger than the device it runs on."""
    if job.region_bytes > capacity_bytes:
        raise ValueError(f"size={job.size_bytes} bytes x numjobs={job.numjobs}: the job works in "
                         f"{job.region_bytes / 1e6:.1f} MB but {where} holds {capacity_bytes / 1e6:.1f} MB "
                         f"(give size= at most {capacity_bytes // job.numjobs} bytes)")


def combine(job: FioJobFile, predictions: list[tuple[float, object]]) -> dict:
    """The job's figures from its parts' predictions ((fraction, BlockPrediction) each).

    A mixed job's requests are the parts' requests interleaved: its mean request time is the parts' weighted by
    their share of the requests, and its elapsed time the parts' sum.  A runtime shorter than that cuts the job
    there, at the same rate.
    """
    elapsed = sum(p.elapsed_s for _, p in predictions)
    moved = float(job.total_bytes)
    requests = sum(p.iops * p.elapsed_s for _, p in predictions)
    cut = job.runtime_s is not None and elapsed > job.runtime_s
    if cut:
        scale = job.runtime_s / elapsed
        elapsed, moved, requests = job.runtime_s, moved * scale, requests * scale
    latency = sum(share * p.latency_s for share, p in predictions)
    # each direction's bytes over the whole run's time, as fio reports a mixed job's read and write bandwidth
    scale = job.runtime_s / sum(p.elapsed_s for _, p in predictions) if cut else 1.0
    directions = {p.job.rw: p.throughput_bytes_per_s * p.elapsed_s * scale / elapsed if elapsed else math.inf
                  for _, p in predictions}
    return {"elapsed_s": elapsed, "bytes": moved, "throughput_bytes_per_s": moved / elapsed if elapsed else math.inf,
            "iops": requests / elapsed if elapsed else math.inf, "latency_s": latency, "cut_by_runtime": cut,
            "throughput_bytes_per_s_by_direction": directions}
