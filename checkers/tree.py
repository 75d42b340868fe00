"""Read-only views of one committed tree or of the index: checkers never read the working tree."""

from __future__ import annotations

import fnmatch
import functools
import re
from typing import Protocol

import git


class Tree(Protocol):
    label: str  # what a reader sees in messages: a short commit id or "index"

    # every file path in the tree, sorted
    def paths(self) -> tuple[str, ...]: ...

    # the text of one file, or None when the tree does not hold it
    def read(self, path: str) -> str | None: ...


class _GitObjects:
    """Shared reading over GitPython's persistent `git cat-file --batch` process."""

    label: str
    _repo: git.Repo
    _prefix: str

    def _listing(self) -> tuple[str, ...]:
        raise NotImplementedError

    @functools.cached_property
    def _paths(self) -> tuple[str, ...]:
        return self._listing()

    @functools.cached_property
    def _path_set(self) -> frozenset[str]:
        return frozenset(self._paths)

    def paths(self) -> tuple[str, ...]:
        return self._paths

    def read(self, path: str) -> str | None:
        if path not in self._path_set:
            return None
        cache: dict[str, str] = self.__dict__.setdefault("_texts", {})
        if path not in cache:
            _sha, _kind, _size, data = self._repo.git.get_object_data(f"{self._prefix}{path}")
            cache[path] = data.decode("utf-8", errors="replace")
        return cache[path]


class GitTree(_GitObjects):
    """The tree of one commit."""

    def __init__(self, repo: git.Repo, sha: str) -> None:
        self._repo = repo
        self.sha = sha
        self.label = sha[:12]
        self._prefix = f"{sha}:"

    def _listing(self) -> tuple[str, ...]:
        out = self._repo.git.ls_tree("-r", "-z", "--name-only", "--full-tree", self.sha, strip_newline_in_stdout=False)
        return tuple(sorted(p for p in out.split("\0") if p))


class IndexTree(_GitObjects):
    """The staged content (stage 0 of the index): what `git commit` would record."""

    def __init__(self, repo: git.Repo) -> None:
        self._repo = repo
        self.label = "index"
        self._prefix = ":0:"

    def _listing(self) -> tuple[str, ...]:
        out = self._repo.git.ls_files("-z", "--cached", strip_newline_in_stdout=False)
        return tuple(sorted({p for p in out.split("\0") if p}))



class EmptyTree:
    """What precedes the first commit: no files, so everything staged is new."""

    label = "the empty tree (no commit yet)"

    def paths(self) -> tuple[str, ...]:
        return ()

    def read(self, path: str) -> str | None:
        return None


@functools.lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` crosses folders, `*` and `?` stay inside one; a pattern without `/` also matches basenames."""
    out = []
    i = 0
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
    return re.compile("".join(out) + r"\Z")


def matches(path: str, pattern: str) -> bool:
    if glob_regex(pattern).match(path):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)


def select(paths: tuple[str, ...] | list[str], patterns: list[str] | tuple[str, ...]) -> list[str]:
    return [p for p in paths if any(matches(p, pat) for pat in patterns)]
