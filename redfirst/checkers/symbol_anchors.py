"""symbol_anchors: `path::Symbol` and `path:line` citations in records still point at something real."""

from __future__ import annotations

import functools
import re
from typing import Any

from redfirst.checkers.anchors import resolve
from redfirst.checkers.context import Context
from redfirst.checkers.lines import count as git_line_count
from redfirst.checkers.lines import lines as git_lines
from redfirst.checkers.model import CheckResult, Finding, Undecided, decide
from redfirst.checkers.records import hidden, read_file
from redfirst.checkers.tree import NotAFile, select

name = "symbol_anchors"
needs = "tree"
summary = "cited `path::Symbol` still holds the symbol (citation blanked), `path:line` is in range; a floor"
schema: dict[str, Any] = {
    "type": "array",
    "examples": [[{"records": [".agents/**/*.md"], "roots": ["src"]}]],
    "items": {
        "type": "object",
        "required": ["records", "roots"],
        "additionalProperties": False,
        "properties": {
            "records": {"type": "array", "items": {"type": "string"}, "minItems": 1, "examples": [[".agents/**/*.md"]],
                        "description": "globs of the records whose `path::Symbol` and `path:line` citations are checked"},
            "roots": {"type": "array", "items": {"type": "string"}, "minItems": 1, "examples": [["src", "."]],
                      "description": "folders a cited path is looked up under"},
            "min_checked": {"type": "integer", "minimum": 1, "default": 1, "examples": [10],
                            "description": "the fewest citations that must be checked, else NO_DECISION"},
        },
    },
}

_PATH = r"(?P<path>[A-Za-z0-9_][A-Za-z0-9_./+-]*\.[A-Za-z0-9]+)"
SYMBOL = re.compile(_PATH + r"::(?P<symbol>~?[A-Za-z_][A-Za-z0-9_]*(?:::~?[A-Za-z_][A-Za-z0-9_]*)*)")
# Not a line citation when a digit follows (`x.c:1.2`); a period ending the sentence is no digit.
LINE = re.compile(_PATH + r":(?P<lines>[0-9]+(?:[-,][0-9]+)*)(?![0-9]|\.[0-9])")
# A markdown link to lines, `[text](../src/a.py#L12-L14)`, relative to the record that holds it.
LINK = re.compile(r"\]\((?P<target>[^)\s#]+)#L(?P<start>[0-9]+)(?:-L?(?P<end>[0-9]+))?\)")


def inputs(config: list[dict[str, Any]]) -> list[str]:
    return [p for entry in config for p in entry["records"]]


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    return [_check_one(entry, ctx) for entry in config]


def _check_one(entry: dict[str, Any], ctx: Context) -> CheckResult:
    roots = tuple(entry["roots"])
    # A root the merge base holds is judged even when the range deleted it whole: its citations broke.
    held = (*ctx.head.paths(), *(ctx.base.paths() if ctx.base is not None else ()))
    present_roots = {r for r in roots if any(p.startswith(r) for p in held)}
    records = select(ctx.head.paths(), entry["records"])
    findings: list[Finding] = [exc.finding() for exc in hidden(ctx, entry["records"])]
    missing_roots: set[str] = set()
    checked = cited = 0
    targets = _Targets(ctx)
    for record in records:
        text, refused = read_file(ctx.head, record)
        if refused:
            findings.append(refused.finding())
            continue
        for lineno, line in enumerate(git_lines(text or ""), start=1):
            for m in LINK.finditer(line):
                path = resolve(record, m.group("target"))
                root = next((r for r in roots if path and path.startswith(r)), None)
                if path is None or root is None:
                    continue
                cited += 1
                if root not in present_roots:
                    missing_roots.add(root)
                    continue
                checked += 1
                findings.extend(_link_lines(record, lineno, m, path, targets))
            for kind, m in [("symbol", m) for m in SYMBOL.finditer(line)] + [("line", m) for m in LINE.finditer(line)]:
                path = m.group("path")
                root = next((r for r in roots if path.startswith(r)), None)
                if root is None:
                    continue  # not a local path (an upstream citation, a URL, prose)
                cited += 1
                if root not in present_roots:
                    missing_roots.add(root)
                    continue
                target, refused = targets.get(path)
                checked += 1
                if refused:
                    findings.append(refused.finding(record, lineno, m.group(0)))
                elif target is None:
                    findings.append(Finding(record, lineno, "anchor-file",
                                            f"{m.group(0)} cites {path}, which does not exist: update the citation"))
                elif kind == "symbol":
                    findings.extend(_symbol(record, lineno, m, target))
                else:
                    findings.extend(_lines(record, lineno, m, target))
    undecided = [Undecided("symbol-anchors", f"cited roots not in the tree: {', '.join(sorted(missing_roots))}")] \
        if missing_roots else []
    floor = entry.get("min_checked", 1)
    if checked < floor and not findings:
        undecided.append(Undecided("anchor-floor", f"{checked} of {cited} citations checked, floor {floor}"))
    return decide(f"{name}:{','.join(entry['records'])}", findings, undecided,
                  {"cited": cited, "checked": checked}, checked, "citations")


class _Target:
    """One cited file of the head, read once for every citation of it: its text, its line count, and
    its text with every citation blanked together with the words left standing in it (a citation
    decoded, split and scanned the whole file again, so many citations of a large file took minutes)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def count(self) -> int:
        return git_line_count(self.text)

    @functools.cached_property
    def blanked(self) -> str:
        return SYMBOL.sub(lambda c: " " * len(c.group(0)), self.text)

    @functools.cached_property
    def words(self) -> frozenset[str]:
        """Every identifier of `blanked` that _symbol's search would find as a leaf there."""
        return frozenset(w.group(1) for w in _WORD.finditer(self.blanked))


class _Targets:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._read: dict[str, tuple[_Target | None, NotAFile | None]] = {}

    def get(self, path: str) -> tuple[_Target | None, NotAFile | None]:
        if path not in self._read:
            text, refused = read_file(self._ctx.head, path)
            self._read[path] = (None if text is None else _Target(text), refused)
        return self._read[path]


def _link_lines(record: str, lineno: int, m: re.Match[str], path: str, targets: _Targets) -> list[Finding]:
    target, refused = targets.get(path)
    if refused:
        return [refused.finding(record, lineno, m.group(0))]
    if target is None:
        return [Finding(record, lineno, "anchor-file", f"{m.group(0)} links {path}, which does not exist: "
                                                       f"update the link")]
    count = target.count
    start, end = int(m.group("start")), int(m.group("end") or m.group("start"))
    if 1 <= start <= end <= count:
        return []
    return [Finding(record, lineno, "anchor-line", f"{m.group(0)} links lines {start}-{end} of {path}, which has "
                                                   f"{count}: link the lines that hold it now")]


# A file name (`sampler.h`, `a/sampler.py`) names a file, not the symbol `sampler`.
_FILE_EXT = r"\.(?:h|hh|hpp|hxx|c|cc|cpp|cxx|cu|cuh|py|pyi|md|txt|rs|go|java|js|ts|json|ya?ml|toml|cmake|sh)\b"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# An identifier standing where _symbol's search for it would match: a leaf is found iff it is one of these.
_WORD = re.compile(rf"(?<![A-Za-z0-9_/])([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_])(?!{_FILE_EXT})")


def _symbol(record: str, lineno: int, m: re.Match[str], target: _Target) -> list[Finding]:
    # Blank every citation (`x.py::f`, in any spelling of the path) so a file that quotes one is not
    # its own evidence for f.
    leaf = m.group("symbol").split("::")[-1]
    pattern = rf"(?<![A-Za-z0-9_/]){re.escape(leaf)}(?![A-Za-z0-9_])(?!{_FILE_EXT})"
    if m.group(0) in target.text:  # the file quotes this very citation: blanked as written first
        haystack = SYMBOL.sub(lambda c: " " * len(c.group(0)), target.text.replace(m.group(0), " " * len(m.group(0))))
        found = re.search(pattern, haystack) is not None
    elif _IDENTIFIER.fullmatch(leaf):
        found = leaf in target.words
    else:
        found = re.search(pattern, target.blanked) is not None
    if found:
        return []
    return [Finding(record, lineno, "anchor-symbol",
                    f"{m.group(0)}: {m.group('path')} no longer holds `{leaf}`: cite where it lives now")]


def _lines(record: str, lineno: int, m: re.Match[str], target: _Target) -> list[Finding]:
    count = target.count
    numbers = [int(n) for n in re.split(r"[-,]", m.group("lines"))]
    bad = [n for n in numbers if not 1 <= n <= count]
    if not bad:
        return []
    return [Finding(record, lineno, "anchor-line",
                    f"{m.group(0)}: line {bad[0]} is past the end of {m.group('path')} ({count} lines): "
                    f"cite the current line")]
