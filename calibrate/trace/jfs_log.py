"""jfs's log read back: what each transaction wrote to it, for the model's record sizes (model/iopath/fs_jfs.py).

The VM makes a fresh jfs on its scratch disk, makes ``files`` empty files ``f0, f1, ...`` in one
directory, syncs, and prints the inline log (the device's last 4 MiB, ``mkfs.jfs -q``'s size on the
1 GiB disk) in base64 while the file system is still mounted (a block device's cache holds what a
first read of it found: one dump a boot). :func:`parse_log` reads the records back as logredo does,
from the newest page's end-of-record backwards (jfs_logmgr.h): a record is its lines, each line
then its 4-byte descriptor (struct lvd: slot offset, slot count), then the 36-byte struct lrd whose
``length`` is the bytes of lines and descriptors before it; a log page holds 4080 bytes between its
8-byte header and trailer (struct logpage: page number, end of the last record in it).
"""
from __future__ import annotations

import base64
import struct
from collections import Counter

__all__ = ["LOG_PAGES", "guest_script", "parse_guest_output", "parse_log", "transactions", "record_kind"]

LOG_PAGES = 1024  # mkfs.jfs's inline log on a 1 GiB device: 4 MiB
LOG_FIRST_BLOCK = (1 << 30) // 4096 - LOG_PAGES
PAGE, HEADER, TRAILER, LRD = 4096, 8, 8, 36
#: struct lrd types (jfs_logmgr.h)
TYPES = {0x8000: "COMMIT", 0x4000: "SYNCPT", 0x2000: "MOUNT", 0x0800: "REDOPAGE", 0x0080: "NOREDOPAGE",
         0x0040: "NOREDOINOEXT", 0x0008: "UPDATEMAP", 0x0001: "NOREDOFILE"}
#: redopage.type bits: the page kind and its flags
PAGE_KINDS = {0x1: "INODE", 0x2: "XTREE", 0x4: "DTREE", 0x80: "DATA"}
PAGE_FLAGS = {0x10: "ROOT", 0x100: "NEW", 0x200: "EXTEND", 0x800: "DIRX"}


def guest_script(files: int) -> str:
    """The guest's script: jfs made and mounted afresh, ``files`` empty files, sync, the log in base64."""
    if not 1 <= int(files) <= 100000:
        raise ValueError(f"files = {files!r} must be 1 .. 100000")
    return (
        "while read -r m; do insmod \"$m\" 2>/dev/null || true; done < /etc/diskmodel/modules.filesystems\n"
        "mkdir -p /mnt/fs\nmkfs.jfs -q /dev/vda >/dev/null 2>&1\n"
        "mount -t jfs /dev/vda /mnt/fs\numount /mnt/fs\nmount -t jfs /dev/vda /mnt/fs\n"
        f"i=0; while [ $i -lt {int(files)} ]; do : > /mnt/fs/f$i; i=$((i+1)); done\nsync\n"
        "echo @@LOG\n"
        f"dd if=/dev/vda bs=4096 skip={LOG_FIRST_BLOCK} count={LOG_PAGES} 2>/dev/null | base64\n"
        "echo @@END\numount /mnt/fs\n")


def parse_guest_output(output: str) -> bytes:
    """The log's bytes from the guest's output."""
    lines = output.replace("\r", "").splitlines()
    try:
        start = next(i for i, x in enumerate(lines) if x.endswith("@@LOG"))
        end = next(i for i in range(start, len(lines)) if lines[i].endswith("@@END"))
    except StopIteration:
        raise ValueError("guest output: no @@LOG ... @@END section") from None
    return base64.b64decode("".join(x.strip() for x in lines[start + 1:end]))


def record_kind(rec: dict) -> str:
    """``REDO-<page kind>[/flags]`` for a REDOPAGE record, else its type's name."""
    if rec["type"] != "REDOPAGE":
        return rec["type"]
    t = rec["page_type"]
    kind = "+".join(v for k, v in PAGE_KINDS.items() if t & k) or hex(t)
    flags = [v for k, v in PAGE_FLAGS.items() if t & k]
    return "REDO-" + kind + "".join("/" + f for f in flags)


def parse_log(log: bytes) -> list[dict]:
    """The log's records, oldest first, as far back as they parse from the newest page (the one of
    the largest page number): ``type``, ``bytes`` (the record's whole size), and for REDOPAGE and
    UPDATEMAP records ``page_type`` and ``lines`` ((slot offset, slot count) per line)."""
    pages = [log[i:i + PAGE] for i in range(0, len(log) - PAGE + 1, PAGE)]
    if len(pages) < 3:
        raise ValueError(f"jfs log: {len(log)} bytes hold no log page")
    numbers = [struct.unpack_from("<I", p, 0)[0] for p in pages[2:]]
    newest = 2 + max(range(len(numbers)), key=numbers.__getitem__)
    order = [2 + (newest - 2 - k) % (len(pages) - 2) for k in range(len(pages) - 2)][::-1]
    stream = b"".join(pages[q][HEADER:PAGE - TRAILER] for q in order)
    eor = struct.unpack_from("<H", pages[newest], 6)[0]
    end = len(stream) - (PAGE - HEADER - TRAILER) + eor - HEADER
    records = []
    while end >= LRD:
        _tid, _back, typ, length, _aggr = struct.unpack_from("<IIHHI", stream, end - LRD)
        if typ not in TYPES or end - LRD - length < 0:
            break
        rec = {"type": TYPES[typ], "bytes": LRD + length}
        if typ in (0x0800, 0x0008):
            _fileset, _ino, page_type, l2 = struct.unpack_from("<IIHH", stream, end - LRD + 16)
            rec["page_type"] = page_type
            rec["lines"] = _lines(stream[end - LRD - length:end - LRD], l2)
        records.append(rec)
        end -= LRD + length
    return records[::-1]


def _lines(data: bytes, l2: int):
    out, q = [], len(data)
    while q >= 4 and l2 < 16:
        off, n = struct.unpack_from("<HH", data, q - 4)
        if (n << l2) + 4 > q:
            return None
        out.append((off, n))
        q -= 4 + (n << l2)
    return out[::-1] if q == 0 else None


def transactions(records: list[dict]) -> list[tuple[int, Counter]]:
    """Per transaction (records up to its COMMIT), its bytes and its records by kind; the mount's and
    sync points' records left out."""
    out, nbytes, kinds = [], 0, Counter()
    for rec in records:
        if rec["type"] in ("MOUNT", "SYNCPT"):
            continue
        nbytes += rec["bytes"]
        kinds[record_kind(rec)] += 1
        if rec["type"] == "COMMIT":
            out.append((nbytes, kinds))
            nbytes, kinds = 0, Counter()
    return out
