"""Read-only views of one committed tree or of the index: checkers never read the working tree."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import subprocess
from collections.abc import Iterable
from typing import Protocol

import git

from redfirst.checkers.model import Finding

# Every git that checkers run reads the objects as committed: a replace ref (`git replace`, or one fetched as
# refs/replace/*) or a graft would show another commit, tree or parentage than the one that lands.
GIT_AS_COMMITTED = {"GIT_NO_REPLACE_OBJECTS": "1", "GIT_GRAFT_FILE": "/dev/null"}

# git's modes for what a tree entry is; only 100644 and 100755 hold a file's bytes.
REGULAR = ("100644", "100755")
KINDS = {"120000": "a symbolic link (mode 120000)", "160000": "a submodule (mode 160000)",
         "unmerged": "unmerged (conflict stages in the index)",
         "duplicate": "listed more than once in its tree (a malformed tree: git diff shows every entry, "
                      "so no one of them is the file)"}
DUPLICATE = "duplicate"


class NotAFile(Exception):
    """`path` is in the tree but git does not store a file there: a symbolic link, a submodule, an
    unmerged index entry, a path its tree lists twice, or it lies under one of those. Its text is never
    read as the file's."""

    def __init__(self, path: str, what: str, label: str, via: str | None = None) -> None:
        where = f"{path} lies under {via}, which is {what}" if via else f"{path} is {what}"
        super().__init__(f"{where} at {label}, not a file")
        self.path = path
        self.message = (f"{where} at {label}, not a file: the record must be a regular file committed at "
                        f"this path (git stores a link's target or a submodule's commit, never the file)")

    def finding(self, file: str | None = None, line: int = 1, cited: str = "") -> Finding:
        """The finding at the path itself, or at the record line (`file`, `line`) that cites it."""
        return Finding(file or self.path, line, "blob-mode", f"{cited}: {self.message}" if cited else self.message)


class Tree(Protocol):
    label: str  # what a reader sees in messages: a short commit id or "index"

    # every path git lists in the tree (files, links, submodules), sorted
    def paths(self) -> tuple[str, ...]: ...

    # the text of one file, or None when the tree does not hold it; NotAFile for a link or submodule
    def read(self, path: str) -> str | None: ...

    # the bytes of one file, or None; NotAFile as for read
    def read_bytes(self, path: str) -> bytes | None: ...


class _GitObjects:
    """Shared reading over GitPython's persistent `git cat-file --batch` process."""

    label: str
    _repo: git.Repo

    def _listing(self) -> dict[str, tuple[str, str]]:
        """path -> (mode, object id) of every entry (mode "unmerged" for an index path in conflict)."""
        raise NotImplementedError

    @functools.cached_property
    def _entries(self) -> dict[str, tuple[str, str]]:
        return self._listing()

    @functools.cached_property
    def _modes(self) -> dict[str, str]:
        return {p: mode for p, (mode, _oid) in self._entries.items()}

    @functools.cached_property
    def _paths(self) -> tuple[str, ...]:
        return tuple(sorted(self._modes))

    @functools.cached_property
    def _special(self) -> dict[str, str]:
        return {p: m for p, m in self._modes.items() if m not in REGULAR}

    def paths(self) -> tuple[str, ...]:
        return self._paths

    def read_bytes(self, path: str) -> bytes | None:
        mode = self._modes.get(path)
        if mode is None:
            self._refuse_under_special(path)
            return None
        if mode not in REGULAR:
            raise NotAFile(path, KINDS.get(mode, f"an entry of mode {mode}"), self.label)
        cache: dict[str, bytes] = self.__dict__.setdefault("_blobs", {})
        if path not in cache:
            # By object id: a path (which may hold a newline) never enters cat-file's line protocol.
            _sha, _kind, _size, data = self._repo.git.get_object_data(self._entries[path][1])
            cache[path] = data
        return cache[path]

    def read(self, path: str) -> str | None:
        data = self.read_bytes(path)
        if data is None:
            return None
        # one decoded text per path (a file many rows or citations name was decoded once per name)
        texts: dict[str, str] = self.__dict__.setdefault("_texts", {})
        if path not in texts:
            texts[path] = data.decode("utf-8", errors="replace")
        return texts[path]

    def prefetch(self, paths: Iterable[str]) -> None:
        """Reads the files among `paths` not read yet with one `git cat-file --batch` process (a
        round trip per blob through the persistent one cost more than the reading). Keyed by path
        and fetched by this tree's object ids, so what it caches is exactly what read_bytes would
        return; an object git cannot give is left for read_bytes to fail on as before."""
        cache: dict[str, bytes] = self.__dict__.setdefault("_blobs", {})
        wanted: dict[str, list[str]] = {}  # object id -> paths holding it
        for path in dict.fromkeys(paths):
            entry = self._entries.get(path)
            if entry is not None and entry[0] in REGULAR and path not in cache:
                wanted.setdefault(entry[1], []).append(path)
        if len(wanted) < 2:
            return
        proc = subprocess.run(["git", "--git-dir", str(self._repo.git_dir), "cat-file", "--batch"],
                              input="".join(f"{oid}\n" for oid in wanted).encode(), capture_output=True, check=False,
                              env={**os.environ, **GIT_AS_COMMITTED})
        out, at = proc.stdout, 0
        for oid in wanted:
            end = out.find(b"\n", at)
            if end < 0:
                return  # cut short: the rest is read one by one
            header = out[at:end].split()
            if len(header) != 3 or header[0].decode() != oid or header[1] != b"blob":
                at = end + 1  # `<oid> missing`: no body follows
                continue
            size = int(header[2])
            data = out[end + 1:end + 1 + size]
            if len(data) != size:
                return
            for path in wanted[oid]:
                cache[path] = data
            at = end + 1 + size + 1

    def _refuse_under_special(self, path: str) -> None:
        """A path below a link or submodule is absent from git's listing, yet not simply deleted."""
        if not self._special:
            return
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in self._special:
                mode = self._special[parent]
                raise NotAFile(path, KINDS.get(mode, f"an entry of mode {mode}"), self.label, via=parent)


class GitTree(_GitObjects):
    """The tree of one commit."""

    def __init__(self, repo: git.Repo, sha: str) -> None:
        self._repo = repo
        self.sha = sha
        self.label = sha[:12]

    def _listing(self) -> dict[str, tuple[str, str]]:
        out = self._repo.git.ls_tree("-r", "-z", "--full-tree", self.sha, strip_newline_in_stdout=False)
        entries: dict[str, tuple[str, str]] = {}
        for record in out.split("\0"):
            if record:
                meta, _tab, path = record.partition("\t")
                mode, _type, oid = meta.split(" ")
                # A tree `git mktree` wrote may list one path twice: `git diff` shows each entry, so
                # reading either one (the last, as a dict keeps it) would judge a text git does not.
                entries[path] = (DUPLICATE, oid) if path in entries else (mode, oid)
        return entries


class IndexTree(_GitObjects):
    """The staged content (stage 0 of the index): what `git commit` would record."""

    def __init__(self, repo: git.Repo) -> None:
        self._repo = repo
        self.label = "index"

    def _listing(self) -> dict[str, tuple[str, str]]:
        out = self._repo.git.ls_files("-z", "--stage", strip_newline_in_stdout=False)
        entries: dict[str, tuple[str, str]] = {}
        for record in out.split("\0"):
            if record:
                meta, _tab, path = record.partition("\t")
                mode, oid, stage = meta.split(" ")
                entries[path] = (mode, oid) if stage == "0" else ("unmerged", oid)
        return entries


class EmptyTree:
    """What precedes the first commit: no files, so everything staged is new."""

    label = "the empty tree (no commit yet)"

    def paths(self) -> tuple[str, ...]:
        return ()

    def read(self, path: str) -> str | None:
        return None

    def read_bytes(self, path: str) -> bytes | None:
        return None


def regular(tree: Tree, paths: list[str]) -> tuple[list[str], list[NotAFile]]:
    """`paths` split into the files git stores and the entries that are not files (links, submodules)."""
    files: list[str] = []
    refused: list[NotAFile] = []
    prefetch = getattr(tree, "prefetch", None)
    if prefetch is not None:
        prefetch(paths)  # the caller reads them next
    for path in paths:
        try:
            tree.read_bytes(path)
        except NotAFile as exc:
            refused.append(exc)
        else:
            files.append(path)
    return files, refused


@functools.lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` crosses folders, `*` and `?` stay inside one; a leading `/` anchors at the root."""
    out = []
    i = 1 if pattern.startswith("/") else 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)  # a git path may hold LF: `**` crosses it too


def matches(path: str, pattern: str) -> bool:
    """A pattern without `/` also matches basenames (`README.md` is any README.md); `/README.md`
    is the root file only."""
    if glob_regex(pattern).match(path):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)


def select(paths: tuple[str, ...] | list[str], patterns: list[str] | tuple[str, ...]) -> list[str]:
    """The paths any of `patterns` matches (as `matches` does, one combined regex for them all)."""
    whole, names = _selector(tuple(patterns))
    out = []
    for p in paths:
        if (whole is not None and whole.match(p)) or \
                (names and any(fnmatch.fnmatchcase(p.rsplit("/", 1)[-1], n) for n in names)):
            out.append(p)
    return out


@functools.lru_cache(maxsize=256)
def _selector(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    whole = re.compile("|".join(f"(?:{glob_regex(p).pattern})" for p in patterns), re.DOTALL) if patterns else None
    return whole, tuple(p for p in patterns if "/" not in p)
