"""Real test programs built once per machine, not once per pytest session.

The suite and the selftest run many pytest sessions (the selftest runs one per gate, under each
mutation), and each used to compile Catch2, doctest and GoogleTest programs again: two thirds of
some selftest gates' time. `built()` keeps each build in a folder named by the hash of everything
given as its inputs (source, flags, compiler identity), and reuses it only while every file the
build read from outside (headers, libraries: what the build reported) is as it was then, by size
and modification time, as make decides. A build that did not finish leaves no manifest, so the next
caller builds again. Builds of one key are serialised by an fcntl lock, across xdist workers and
sessions alike.

`REDFIRST_TEST_BUILDS` moves the cache (default: the temp folder, per user).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

MANIFEST = "redfirst-built.json"


def cache_root() -> Path:
    configured = os.environ.get("REDFIRST_TEST_BUILDS")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / f"redfirst-test-builds-{os.getuid()}"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _fresh(folder: Path) -> bool:
    """The build in `folder` finished, and every file it read is as it was then."""
    try:
        read = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(read, dict) and all(_stat(path) == seen for path, seen in read.items())


def built(name: str, inputs: Iterable[bytes], make: Callable[[Path], Iterable[str]]) -> Path:
    """The folder where `make(folder)` built `name` from `inputs`; `make` returns the paths of the
    files it read outside `folder`. Made again when an input or one of those files changed."""
    digest = hashlib.sha256()
    for part in inputs:
        digest.update(hashlib.sha256(part).digest())
    folder = cache_root() / f"{name}-{digest.hexdigest()[:20]}"
    with locked(folder.with_name(folder.name + ".lock")):
        if _fresh(folder):
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        read = sorted(set(make(folder)))
        (folder / MANIFEST).write_text(json.dumps({path: _stat(path) for path in read}))
    return folder


def compiler_id(cxx: str) -> bytes:
    """`cxx` (a path) and what its `--version` says."""
    done = subprocess.run([cxx, "--version"], capture_output=True, check=False)
    return cxx.encode() + b"\0" + done.stdout


def depfile_paths(depfile: Path) -> list[str]:
    """The prerequisites a `-MD -MF depfile` compile wrote (make syntax: `target: a b \\`), a
    relative one taken from the depfile's folder (where the compile ran)."""
    text = depfile.read_text().replace("\\\n", " ")
    paths: list[str] = []
    for rule in text.splitlines():
        _, _, prerequisites = rule.partition(": ")
        paths += [os.path.join(depfile.parent, p) for p in prerequisites.split()]
    return paths


def libraries(cxx: str, flags: Sequence[str]) -> list[str]:
    """The files the `-lname` flags link, as the compiler finds them."""
    found = []
    for flag in flags:
        if flag.startswith("-l"):
            for suffix in (".so", ".a"):
                done = subprocess.run([cxx, f"-print-file-name=lib{flag[2:]}{suffix}"], capture_output=True,
                                      text=True, check=False)
                path = done.stdout.strip()
                if os.path.isabs(path) and os.path.exists(path):
                    found.append(os.path.realpath(path))
                    break
    return found
