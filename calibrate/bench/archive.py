"""The pieces of the VM's initramfs: entries by guest path, staged as a tree, archived with cpio.

An entry is a file (copied from the host or literal), a folder or a symlink, keyed by its path in the
guest relative to ``/``, under a merged ``/usr`` as Debian 12's. The archive is ``cpio -o -H newc``
(GNU cpio) of the staged tree, every file owned by root; the build happens in a folder of the current
run (so its record removes it after a SIGKILL) and is published by a rename.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from diskmodel.calibrate.harness import runstate

__all__ = ["Entry", "SEARCH_PATH", "TOOL_ENV", "add_dirs", "add_host_file", "add_link", "publish", "staging_dir",
           "usr_merged", "write_cpio"]

SEARCH_PATH = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
# The builder's tools run with the system's PATH: lddtree is a Python script started
# through `/usr/bin/env python3`, and only Debian's python3 has its pyelftools.
TOOL_ENV = {"PATH": ":".join(SEARCH_PATH), "LC_ALL": "C"}


@dataclass
class Entry:
    mode: int                 # full st_mode (type and permissions)
    source: Path | None = None  # host file to copy
    data: bytes | None = None   # literal content
    target: str | None = None   # symlink target


def add_dirs(entries: dict[str, Entry], guest_path: str) -> None:
    parts = guest_path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        entries.setdefault("/".join(parts[:i]), Entry(0o040755))


def usr_merged(path: str) -> str:
    """The guest path (relative, under merged /usr) of host *path*."""
    path = path.lstrip("/")
    if path.split("/", 1)[0] in ("bin", "sbin", "lib", "lib64"):
        path = "usr/" + path
    return path


def add_link(entries: dict[str, Entry], guest: str, target: str) -> None:
    if guest not in entries:
        add_dirs(entries, guest)
        entries[guest] = Entry(0o120777, target=target)


def add_host_file(entries: dict[str, Entry], host_path: Path) -> str:
    """Copy *host_path* (symlinks resolved) to the same real path in the guest."""
    real = Path(os.path.realpath(host_path))
    guest = usr_merged(str(real))
    if guest not in entries:
        add_dirs(entries, guest)
        entries[guest] = Entry(0o100000 | (real.stat().st_mode & 0o755), source=real)
    return guest


def write_cpio(root: Path, names: Iterable[str], out) -> None:
    """Append a newc archive of *names* (relative to *root*, parents first), owned by root, to *out*.

    Only the names given go in (no ``.``, whose mode would replace the guest's /).
    """
    listing = "".join(f"{name}\n" for name in names)
    proc = subprocess.run(["cpio", "-o", "-H", "newc", "-R", "0:0", "--reproducible", "--quiet"],
                          input=listing.encode(), stdout=out, stderr=subprocess.PIPE, cwd=root,
                          timeout=600, env=TOOL_ENV)
    if proc.returncode != 0:
        raise RuntimeError(f"cpio -o -H newc failed with status {proc.returncode}: "
                           f"{proc.stderr.decode('utf-8', 'replace').strip()[-500:]}")


@contextlib.contextmanager
def staging_dir():
    """A temporary folder, inside the current run's own folder where there is a run
    (so that its record removes it even after a SIGKILL)."""
    run = runstate.current_run()
    path = run.temp_dir("initramfs.") if run is not None else Path(tempfile.mkdtemp(prefix="diskmodel-initramfs."))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def publish(target: Path, write: Callable[[Path], None]) -> None:
    """*write* a partial file next to *target*, then rename it into place (readers see all or nothing)."""
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    try:
        write(partial)
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
