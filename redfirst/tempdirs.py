"""Temporary folders named for the process that owns them, so that what a killed process left is removed.

A folder is made as `<prefix><boot>.<pid>.<start>-<random>` in the temporary folder: the owner is this boot of
the machine, this pid and the moment the process started. The first folder a process makes of a kind removes
the folders of that kind whose owner is gone (another boot, no such process, or a process that started at
another moment: the pid was reused), as pytest prunes its old base folders. A caller may rely on: a folder of a
live owner is never removed by another process, nor one another user owns, nor a link, nor a folder whose
name carries no owner (one an older redfirst made)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from redfirst.process import started_at

_swept: set[tuple[str, str]] = set()
_lock = threading.Lock()
_OWNER = re.compile(r"([0-9a-f]{8})\.(\d+)\.(\d+)-")


def _boot() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8] or "00000000"
    except OSError:
        return "00000000"


def owner() -> str:
    """This process as a folder name carries it: `<boot>.<pid>.<start>`."""
    pid = os.getpid()
    return f"{_boot()}.{pid}.{started_at(pid) or 0}"


def gone(name: str, prefix: str) -> bool:
    """Whether the owner named in folder `name` (made with `prefix`) is no longer running; False where the name
    carries no owner."""
    m = _OWNER.match(name[len(prefix):]) if name.startswith(prefix) else None
    if m is None:
        return False
    boot, pid, start = m.group(1), int(m.group(2)), int(m.group(3))
    return boot != _boot() or started_at(pid) != start


def sweep(prefix: str, folder: str | None = None) -> list[str]:
    """Remove the folders of kind `prefix` whose owner is gone (ours, real folders only); their paths."""
    folder = folder or tempfile.gettempdir()
    removed = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith(prefix) or not gone(entry.name, prefix):
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False) and st.st_uid == os.geteuid():
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(entry.path)
    return removed


def make(prefix: str) -> Path:
    """A new folder `<prefix><owner>-<random>` in the temporary folder; the first of its kind in this process
    first removes those of the kind that gone owners left."""
    folder = tempfile.gettempdir()
    with _lock:
        first = (prefix, folder) not in _swept
        _swept.add((prefix, folder))
    if first:
        sweep(prefix, folder)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{owner()}-", dir=folder))


@contextlib.contextmanager
def folder(prefix: str) -> Iterator[Path]:
    """`make(prefix)`, removed at the end as tempfile.TemporaryDirectory removes its own."""
    path = make(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
