"""Where each mutation of a run sits in its file, for the reports that show mutants in the source
(the HTML page's source view, the mutation-testing report): found by `place` alone, never guessed."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from redfirst.mutations.anchor import occurrences
from redfirst.mutations.model import Mutation


@dataclass(frozen=True)
class Placed:
    """A mutation at its place: 1-based line and column of the anchor's first character, and of
    the position just after its last (the mutation-testing report's `location`), and the file's
    whole unified diff with real hunk headers."""
    start: tuple[int, int]
    end: tuple[int, int]
    diff: str


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def read_sources(root: Path, files: Iterable[str]) -> dict[str, str]:
    """The text of each named file under `root` as it is now; a file that cannot be read as UTF-8
    text (gone, a folder, binary) is left out, and so is every mutant in it."""
    out: dict[str, str] = {}
    for rel in dict.fromkeys(files):
        try:
            out[rel] = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out


def place(mutation: Mutation, sources: Mapping[str, str]) -> Placed | None:
    """The one place a mutant is put at a line. A caller may rely on: a Placed only where the
    mutation's anchor occurs in its file's text in `sources` at the occurrence it names (the only
    one when it names none, as `apply_anchor` requires); else None, and the caller leaves the mutant
    out of any source view and says so. The diff is of the whole file, so its hunk headers carry
    the file's real line numbers."""
    text = sources.get(mutation.file)
    if text is None or not mutation.anchor:
        return None
    found = occurrences(text, mutation.anchor)
    index = (mutation.occurrence or 1) - 1
    if not found or (mutation.occurrence is None and len(found) > 1) or index >= len(found):
        return None
    at = found[index]
    mutated = text[:at] + mutation.replace + text[at + len(mutation.anchor):]
    diff = "\n".join(difflib.unified_diff(text.splitlines(), mutated.splitlines(), f"a/{mutation.file}",
                                          f"b/{mutation.file}", lineterm=""))
    return Placed(_position(text, at), _position(text, at + len(mutation.anchor)), diff or "(no change)")


def anchor_diff(mutation: Mutation) -> str:
    """A mutation's edit as a diff of its anchor alone (a mutant `place` could not put in its file):
    no hunk header, as no line number is known."""
    lines = difflib.unified_diff(mutation.anchor.splitlines(), mutation.replace.splitlines(),
                                 f"a/{mutation.file}", f"b/{mutation.file}", lineterm="")
    return "\n".join(line for line in lines if not line.startswith("@@")) or "(no change)"

