"""The tree a result is keyed by: every file under the root that git tracks or would
track, with its content and whether it may be executed, read once (`TreeState.of`).

Proofs (redfirst.gates.proven) and mutate's results whose reads are not known key on the whole
tree (`digest`): every file under the root and every conftest.py and configuration file pytest
may read above it (`surroundings`), each with its mode and, for a link, where it leads; a
result whose gates reported what they read keys on the paths of the tree (`structure`: a new
conftest.py or a module that shadows an import is a change) and on the content of each file it
read (`content`). Mutation files and the state folder are
left out (`unkeyed`): each mutation keys its own document.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

MISSING = "missing"
FOLDER = "folder"
LINK_MODE = "120000"     # git's mode of a symbolic link (its blob holds the link's target path)
# Folders of state tools derive for themselves (bytecode, pytest's and linters' caches): a
# read there is of a copy of what the key holds already, or of nothing a verdict rests on.
DERIVED = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
IGNORED_HASHED = 1 << 20      # an ignored file up to this size is keyed by content (TreeState.ignored)


def blob_id(data: bytes) -> str:
    # git's blob id: an unchanged file hashes like its index entry, whatever its stat says.
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _git_z(root: Path, *args: str) -> list[str]:
    out = subprocess.run(["git", *args, "-z"], cwd=root, capture_output=True, check=False)
    if out.returncode != 0:
        raise OSError(out.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return [p for p in out.stdout.decode("utf-8", errors="surrogateescape").split("\0") if p]


def _under(path: str, skip: Sequence[str]) -> bool:
    return any(path == s or path.startswith(s + os.sep) for s in skip)


def _bytes(path: Path | str, skip: Sequence[str] = ()) -> str:
    """What is at `path` now (links followed): its blob id; for a folder (a program listed it:
    glob, os.walk) FOLDER and the names in it, derived state aside (a file added to an ignored
    folder changes no path git lists); MISSING or 'unreadable'."""
    try:
        if os.path.isfile(path):
            return blob_id(Path(path).read_bytes()) + _exec_mark(path)
        if os.path.isdir(path):
            # Derived state and what the key leaves out (mutation files, the state folder) aside.
            names = sorted(n for n in os.listdir(path) if n not in DERIVED
                           and not (skip and _under(os.path.realpath(os.path.join(path, n)), skip)))
            return FOLDER + ":" + hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()
        return MISSING
    except OSError:
        return "unreadable"


EXEC = ":x"     # after a blob id: the file may be executed (git's mode 100755); a dropped exec bit is a change


def _exec_mark(path: Path | str) -> str:
    try:
        return EXEC if os.stat(path).st_mode & 0o111 else ""
    except OSError:
        return ""


def _link(path: Path) -> str:
    """A symbolic link as a key sees it: where it leads (its own target path) and the content
    read through it now. Keyed by either alone, a retargeted link, or an edit of what it leads
    to, would reuse a stale result."""
    try:
        target = os.readlink(path)
    except OSError:
        return "unreadable"
    return f"link\0{target}\0{_bytes(path)}"


def fingerprint(path: Path | str) -> str:
    """What is at `path` now as a key sees it: a symbolic link by where it leads and what is read
    through it (`_link`), a file by its content and exec bit, a folder by its names; MISSING or
    'unreadable'. A retargeted link, a chmod or an edit each change it."""
    return _link(Path(path)) if os.path.islink(path) else _bytes(path)


# What pytest may read in a folder above the root: conftest.py (it walks up to its confcutdir, the
# folder of its ini file or its rootdir; not known here, so every ancestor counts) and the
# configuration files it looks in for its section (_pytest.config.findpaths).
SURROUNDING = ("conftest.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def surroundings(root: Path, mirrors: tuple[Path, Path] | None = None) -> dict[str, str]:
    """Each conftest.py and configuration file pytest may read above `root`, from its parent up
    to the filesystem's root, by its path relative to the root ('../conftest.py') -> `fingerprint`.
    `mirrors`: (a copy's top folder, the user's top folder it copies): above the copy's top, the
    user's folders stand in (a checkout under a cache folder rests on what the user's tree has
    around it). A caller may rely on: an edit, chmod, retarget, addition or removal of any such
    file changes the result; nothing else above the root does."""
    real = root.resolve()
    folders = list(real.parents)
    if mirrors is not None:
        copy, users = (p.resolve() for p in mirrors)
        if copy == real or copy in real.parents:
            folders = [f for f in real.parents if f == copy or copy in f.parents] + list(users.parents)
    found = {}
    for depth, folder in enumerate(folders, 1):
        for name in SURROUNDING:
            path = folder / name
            if os.path.lexists(path):
                found["../" * depth + name] = fingerprint(path)
    return found


def _listed(root: Path) -> dict[str, str]:
    """Relative path -> blob id of every file git tracks or would track under `root` (staged
    and unstaged edits included; a deleted tracked file is MISSING; a symbolic link is keyed
    by its target path and the content read through it: `_link`). Outside git, every file
    under the root but derived state."""
    entries: dict[str, str] = {}
    try:
        for line in _git_z(root, "ls-files", "-s"):
            meta, _, rel = line.partition("\t")
            mode, blob = meta.split()[:2]
            entries[rel] = _link(root / rel) if mode == LINK_MODE and os.path.islink(root / rel) else \
                blob + (EXEC if mode == "100755" else "")
        # Edits, a changed mode among them (git lists an unstaged chmod as modified), as the tree holds them now.
        for rel in _git_z(root, "ls-files", "--modified", "--others", "--exclude-standard"):
            path = root / rel
            entries[rel] = _link(path) if path.is_symlink() else \
                blob_id(path.read_bytes()) + _exec_mark(path) if path.is_file() else MISSING
    except OSError:
        entries = {}
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in (".git", ".redfirst", *DERIVED)]
            for name in files:
                path = Path(folder) / name
                rel = str(path.relative_to(root))
                entries[rel] = _link(path) if path.is_symlink() else _bytes(path)
    return entries


def tracked(root: Path) -> dict[str, str]:
    """Relative path -> what each file git tracks under `root` holds now (blob id and exec bit,
    a link as `_link`; MISSING once deleted); {} outside git. A caller may rely on: a run that
    rewrites, deletes or chmods a tracked file changes the result; untracked files are not in it."""
    try:
        entries = {}
        for line in _git_z(root, "ls-files", "-s"):
            meta, _, rel = line.partition("\t")
            mode, blob = meta.split()[:2]
            entries[rel] = _link(root / rel) if mode == LINK_MODE and os.path.islink(root / rel) else \
                blob + (EXEC if mode == "100755" else "")
        for rel in _git_z(root, "ls-files", "--modified"):
            path = root / rel
            entries[rel] = _link(path) if path.is_symlink() else \
                blob_id(path.read_bytes()) + _exec_mark(path) if path.is_file() else MISSING
    except OSError:
        return {}
    return entries


Stamp = tuple[int, int, int, int]


def stamp(path: Path | str) -> Stamp:
    """A file's inode, size and modification and change times now. Any write moves the change
    time, and no program can set it back: a file written and then put back as it was (an
    editor's save and its undo) keeps its content but not its stamp."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, -1, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stamps(root: Path, rels: Iterable[str]) -> dict[str, Stamp]:
    return {rel: stamp(root / rel) for rel in rels}


def written_since(root: Path, then: Mapping[str, Stamp], left: Mapping[str, Stamp] | None = None) -> list[str]:
    """The files of `then` (from `stamps`) whose stamp moved since; `left`: real path -> the
    stamp a writer we know of left on a file (redfirst's own restore), which stands for `then`."""
    moved = []
    for rel, was in then.items():
        if left:
            was = left.get(os.path.realpath(root / rel), was)
        if stamp(root / rel) != was:
            moved.append(rel)
    return sorted(moved)


@dataclass(frozen=True)
class TreeState:
    """The tree under `root` as it was when read: relative path -> content (git's blob id)."""

    root: Path
    entries: Mapping[str, str]
    _now: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    _folders: dict[str, str] = field(default_factory=dict, compare=False, repr=False)   # folder -> its realpath
    skip: tuple[str, ...] = ()          # the real paths of what `of` left out, for the folders' listings
    above: Mapping[str, str] = field(default_factory=dict)    # `surroundings` of the root

    @classmethod
    def of(cls, root: Path, unkeyed: Iterable[Path] = (), mirrors: tuple[Path, Path] | None = None) -> TreeState:
        """Every listed file except those under `unkeyed` (mutation files, the state folder), and
        the `surroundings` of the root (`mirrors`: as there)."""
        skip = tuple(str(p.resolve()) for p in unkeyed)
        kept = {}
        for rel, blob in _listed(root).items():
            if "__pycache__" in Path(rel).parts:
                continue
            if _under(str((root / rel).resolve()), skip):
                continue
            kept[rel] = blob
        return cls(root, kept, skip=skip, above=surroundings(root, mirrors))

    @cached_property
    def digest(self) -> str:
        """The whole tree: every path and its content, and what pytest may read above the root
        (`above`). A result keyed by it is reused only on the very same tree (a weakened test, or
        conftest.py above the root, voids an old kill)."""
        h = hashlib.sha256()
        for rel in sorted(self.entries):
            h.update(f"{rel}\0{self.entries[rel]}\0".encode("utf-8", errors="surrogateescape"))
        for rel in sorted(self.above):      # (none: the digest of the tree alone, as before them)
            h.update(f"{rel}\0{self.above[rel]}\0".encode("utf-8", errors="surrogateescape"))
        return h.hexdigest()

    @cached_property
    def ignored(self) -> str:
        """The files under the root git ignores (a local data file, a virtual environment), each by
        its content (by size, time and mode over 1 MiB), derived state and `skip` aside: what a run
        whose reads are not known may have read besides the listed tree (rests.rests_on)."""
        h = hashlib.sha256()
        try:
            found = _git_z(self.root, "ls-files", "--others", "--ignored", "--exclude-standard")
        except OSError:
            return "unknown"
        for rel in sorted(found):
            if DERIVED.intersection(Path(rel).parts) or Path(rel).parts[:1] == (".redfirst",):
                continue
            full = self.root / rel
            if self.skip and _under(os.path.realpath(full), self.skip):
                continue
            try:
                st = os.lstat(full)
            except OSError:
                continue
            seen = _bytes(full) if st.st_size <= IGNORED_HASHED else f"{st.st_size}:{st.st_mtime_ns}:{st.st_mode:o}"
            h.update(f"{rel}\0{seen}\0".encode("utf-8", errors="surrogateescape"))
        return h.hexdigest()

    @cached_property
    def structure(self) -> str:
        """The paths of the tree, without their content: adding, removing or renaming any file
        changes it (a new conftest.py, a module that shadows an import, a file a test lists), and
        so does one of `above`."""
        h = hashlib.sha256()
        for rel in sorted([*(r for r, blob in self.entries.items() if blob != MISSING), *self.above]):
            h.update(rel.encode("utf-8", errors="surrogateescape") + b"\0")
        return h.hexdigest()

    def content(self, rel: str) -> str:
        """The content of one file as the key sees it: its blob id as listed; for a file git
        ignores (a data file in an ignored folder), the blob id of its bytes as they are now;
        MISSING or FOLDER otherwise. A path that leads through a symbolic link (itself one, or
        in a linked folder) is keyed by where it leads and by the content read there."""
        known = self._now.get(rel)
        if known is None:
            known = self._now[rel] = self._look(rel)
        return known

    def _look(self, rel: str) -> str:
        resolved = self._resolved(rel)
        if resolved is not None:
            real_root = self._real(".")
            where = resolved[len(real_root) + 1:] if resolved.startswith(real_root + os.sep) else resolved
            listed = self.entries.get(rel, "")
            return f"{listed}\0through\0{where}\0{_bytes(resolved, self.skip)}"
        if rel in self.entries:
            return self.entries[rel]
        return _bytes(self.root / rel, self.skip)

    def _real(self, folder: str) -> str:
        real = self._folders.get(folder)
        if real is None:
            real = self._folders[folder] = os.path.realpath(self.root / folder)
        return real

    def _resolved(self, rel: str) -> str | None:
        """Where `rel` leads when a symbolic link under the root is on the way, else None."""
        folder, name = os.path.split(os.path.normpath(rel))
        real_folder = self._real(folder or ".")
        full = os.path.join(real_folder, name)
        if os.path.islink(full):
            full = os.path.realpath(full)
        return None if full == os.path.join(self._real("."), os.path.normpath(rel)) else full


def tree_digest(root: Path, unkeyed: Iterable[Path] = ()) -> str:
    """Digest of every file under `root` that git tracks or would track (the tests, helpers
    and conftest files a gate reads, staged and unstaged edits included), except files
    under `unkeyed`, and of its `surroundings`. Outside git, every file under the root but
    derived state."""
    return TreeState.of(root, unkeyed).digest
