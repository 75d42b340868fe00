"""The tree a result is keyed by: every file under the root that git tracks or would
track, with its content, read once (`TreeState.of`).

Proofs (gates.proven) and mutate's results whose reads are not known key on the whole
tree (`digest`); a result whose gates reported what they read keys on the paths of the
tree (`structure`: a new conftest.py or a module that shadows an import is a change) and
on the content of each file it read (`content`). Mutation files and the state folder are
left out (`unkeyed`): each mutation keys its own document.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

MISSING = "missing"
FOLDER = "folder"
# Folders of state tools derive for themselves (bytecode, pytest's and linters' caches): a
# read there is of a copy of what the key holds already, or of nothing a verdict rests on.
DERIVED = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def blob_id(data: bytes) -> str:
    # git's blob id: an unchanged file hashes like its index entry, whatever its stat says.
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _git_z(root: Path, *args: str) -> list[str]:
    out = subprocess.run(["git", *args, "-z"], cwd=root, capture_output=True, check=False)
    if out.returncode != 0:
        raise OSError(out.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return [p for p in out.stdout.decode("utf-8", errors="surrogateescape").split("\0") if p]


def _listed(root: Path) -> dict[str, str]:
    """Relative path -> blob id of every file git tracks or would track under `root` (staged
    and unstaged edits included; a deleted tracked file is MISSING). Outside git, every file
    under the root but derived state."""
    entries: dict[str, str] = {}
    try:
        for line in _git_z(root, "ls-files", "-s"):
            meta, _, rel = line.partition("\t")
            entries[rel] = meta.split()[1]
        for rel in _git_z(root, "ls-files", "--modified", "--others", "--exclude-standard"):
            path = root / rel
            entries[rel] = blob_id(path.read_bytes()) if path.is_file() else MISSING
    except OSError:
        entries = {}
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in (".git", ".redfirst", *DERIVED)]
            for name in files:
                path = Path(folder) / name
                try:
                    entries[str(path.relative_to(root))] = blob_id(path.read_bytes())
                except OSError:
                    entries[str(path.relative_to(root))] = "unreadable"
    return entries


@dataclass(frozen=True)
class TreeState:
    """The tree under `root` as it was when read: relative path -> content (git's blob id)."""

    root: Path
    entries: Mapping[str, str]
    _now: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, root: Path, unkeyed: Iterable[Path] = ()) -> TreeState:
        """Every listed file except those under `unkeyed` (mutation files, the state folder)."""
        skip = [p.resolve() for p in unkeyed]
        kept = {}
        for rel, blob in _listed(root).items():
            if "__pycache__" in Path(rel).parts:
                continue
            full = (root / rel).resolve()
            if any(full == s or full.is_relative_to(s) for s in skip):
                continue
            kept[rel] = blob
        return cls(root, kept)

    @cached_property
    def digest(self) -> str:
        """The whole tree: every path and its content. A result keyed by it is reused only on
        the very same tree (a weakened test voids an old kill)."""
        h = hashlib.sha256()
        for rel in sorted(self.entries):
            h.update(f"{rel}\0{self.entries[rel]}\0".encode("utf-8", errors="surrogateescape"))
        return h.hexdigest()

    @cached_property
    def structure(self) -> str:
        """The paths of the tree, without their content: adding, removing or renaming any file
        changes it (a new conftest.py, a module that shadows an import, a file a test lists)."""
        h = hashlib.sha256()
        for rel in sorted(r for r, blob in self.entries.items() if blob != MISSING):
            h.update(rel.encode("utf-8", errors="surrogateescape") + b"\0")
        return h.hexdigest()

    def content(self, rel: str) -> str:
        """The content of one file as the key sees it: its blob id as listed; for a file git
        ignores (a data file in an ignored folder), the blob id of its bytes as they are now;
        MISSING or FOLDER otherwise."""
        if rel in self.entries:
            return self.entries[rel]
        if rel not in self._now:
            path = self.root / rel
            try:
                self._now[rel] = blob_id(path.read_bytes()) if path.is_file() else \
                    FOLDER if path.is_dir() else MISSING
            except OSError:
                self._now[rel] = "unreadable"
        return self._now[rel]


def tree_digest(root: Path, unkeyed: Iterable[Path] = ()) -> str:
    """Digest of every file under `root` that git tracks or would track (the tests, helpers
    and conftest files a gate reads, staged and unstaged edits included), except files
    under `unkeyed`. Outside git, every file under the root but derived state."""
    return TreeState.of(root, unkeyed).digest
