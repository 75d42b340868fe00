"""Local line anchors in a record cell: `[text](path#L12-L14)` links and bare `path:12` citations
that point inside an existing file of the tree, within its length."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from redfirst.checkers.lines import count as line_count
from redfirst.checkers.records import read_file
from redfirst.checkers.tree import Tree

FRAGMENT = re.compile(r"L([0-9]+)(?:-L?([0-9]+))?")
_PATH_CHARS = r"[A-Za-z0-9_./-]"


class LineCounts:
    """Lines per file of one tree, each file read once; None for a path that is not a file there."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._known: dict[str, int | None] = {}

    def of(self, path: str) -> int | None:
        if path not in self._known:
            text, _refused = read_file(self.tree, path)
            self._known[path] = None if text is None else line_count(text)
        return self._known[path]


def within(counts: LineCounts, path: str, start: int, end: int | None) -> bool:
    lines = counts.of(path)
    last = start if end is None else end
    return lines is not None and 1 <= start <= last <= lines


def resolve(source: str, target: str) -> str | None:
    """The tree path a relative link of file `source` names; None for a URL or a path leaving the tree."""
    target = target.strip().strip("<>")
    if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
        return None
    path = posixpath.normpath(posixpath.join(posixpath.dirname(source), target.split("#", 1)[0]))
    return None if path.startswith("../") or path == ".." else path.lstrip("/")


def line_anchors(source: str, links: Iterable[str], text: str, counts: LineCounts,
                 prefixes: Iterable[str] = (), files: Iterable[str] = (),
                 absent: list[str] | None = None) -> list[str]:
    """The anchored paths of one cell (links and bare citations) that exist and are in range,
    restricted to paths under `prefixes` or equal to one of `files`. Cited paths the tree does not
    hold are added to `absent` (a missing input, never a verdict on the citation)."""
    sink: list[str] = [] if absent is None else absent
    prefixes, files = tuple(prefixes), tuple(files)

    def allowed(path: str) -> bool:
        return path in files or path.startswith(prefixes)

    out = []
    for link in links:
        path = resolve(source, link)
        _, _, fragment = link.partition("#")
        m = FRAGMENT.fullmatch(fragment)
        if path and m and allowed(path):
            if within(counts, path, int(m[1]), int(m[2]) if m[2] else None):
                out.append(path)
            elif counts.of(path) is None:
                sink.append(path)
    names = "|".join([*(re.escape(p) + _PATH_CHARS + "+" for p in prefixes), *(re.escape(f) for f in files)])
    if names:
        for m in re.finditer(rf"(?<![A-Za-z0-9_./-])({names}):([0-9]+)(?:-([0-9]+))?", text):
            if within(counts, m[1], int(m[2]), int(m[3]) if m[3] else None):
                out.append(m[1])
            elif counts.of(m[1]) is None:
                sink.append(m[1])
    return out
