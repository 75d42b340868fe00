"""Anchors: the literal text a mutation replaces, located before anything is applied."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


class AnchorError(Exception):
    """The anchor is missing or ambiguous in the target; the mutation is ERROR."""


@dataclass(frozen=True)
class Applied:
    text: str          # the mutated text
    line: int          # 1-based line where the anchor starts
    removed: int       # lines removed (diff stat)
    added: int         # lines added

    @property
    def diffstat(self) -> str:
        return f"+{self.added} -{self.removed}"


def occurrences(text: str, anchor: str) -> list[int]:
    """Start offsets of every occurrence of `anchor` in `text`, overlapping ones included:
    an anchor that matches at two overlapping places is not unique."""
    found: list[int] = []
    start = 0
    if not anchor:
        return found
    while (at := text.find(anchor, start)) >= 0:
        found.append(at)
        start = at + 1
    return found


def apply_anchor(text: str, anchor: str, replace: str, occurrence: int | None = None) -> Applied:
    """`text` with the anchor replaced; AnchorError when it is missing, or ambiguous
    without `occurrence`, or has fewer occurrences than `occurrence`."""
    if not anchor:
        raise AnchorError("anchor is empty: it would match everywhere")
    found = occurrences(text, anchor)
    first_line = anchor.splitlines()[0] if anchor.strip() else repr(anchor)
    if not found:
        raise AnchorError(f"anchor not found: {first_line.strip()!r}")
    if occurrence is None and len(found) > 1:
        lines = ", ".join(str(text.count("\n", 0, at) + 1) for at in found)
        raise AnchorError(f"anchor is ambiguous: {len(found)} occurrences (lines {lines}); "
                          "grow it or set occurrence")
    index = (occurrence or 1) - 1
    if index >= len(found):
        raise AnchorError(f"occurrence {occurrence} asked, the anchor occurs {len(found)} time(s)")
    at = found[index]
    mutated = text[:at] + replace + text[at + len(anchor):]
    removed, added = _line_delta(anchor, replace)
    return Applied(mutated, text.count("\n", 0, at) + 1, removed, added)


def _line_delta(before: str, after: str) -> tuple[int, int]:
    # Lines removed and added, as `git diff --stat` counts them: unchanged lines cancel.
    a, b = before.splitlines(), after.splitlines()
    removed = added = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed, added = removed + i2 - i1, added + j2 - j1
    return removed, added
