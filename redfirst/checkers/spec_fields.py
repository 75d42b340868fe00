"""The filled fields of a spec as a project's own spec checker reads them: a heading (any level)
with real content under it, or a `| Field | value |` table row whose value is not a placeholder."""

from __future__ import annotations

import functools
import re

from redfirst.checkers.lines import lines as git_lines
from redfirst.checkers.lines import visible
from redfirst.checkers.markdown import words

PLACEHOLDERS = {"", "-", "none", "unassigned", "open", "leaf open", "tbd", "todo", "n/a", "tba"}
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*$")
_SEPARATOR = re.compile(r":?-{3,}:?")
_CELL_PIPE = re.compile(r"(?<!\\)\|")


def is_placeholder(value: str) -> bool:
    return value.strip().strip("`").strip().lower() in PLACEHOLDERS


def cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [c.strip() for c in _CELL_PIPE.split(body)]


def is_separator(line: str) -> bool:
    parts = cells(line)
    return bool(parts) and all(_SEPARATOR.fullmatch(p) for p in parts)


def _next_is_separator(lines: list[str], index: int) -> bool:
    # walks to the next non-blank line only (a slice of the rest made each table row cost the file)
    following = next((lines[j].strip() for j in range(index + 1, len(lines)) if lines[j].strip()), "")
    return following.startswith("|") and is_separator(following)


def _value_row(lines: list[str], index: int) -> bool:
    """A table row that is neither a header nor a separator and holds a value after its first cell."""
    parts = cells(lines[index])
    return (len(parts) >= 2 and not is_separator(lines[index]) and not _next_is_separator(lines, index)
            and any(not is_placeholder(p) for p in parts[1:]))


def has_content(lines: list[str]) -> bool:
    """Prose or a filled table row; headings, fences, table headers and placeholders are not content."""
    for i, line in enumerate(lines):
        text = line.strip()
        if not text or _HEADING.match(text) or text.startswith("```"):
            continue
        if text.startswith("|"):
            if _value_row(lines, i):
                return True
            continue
        if not is_placeholder(text):
            return True
    return False


@functools.lru_cache(maxsize=64)
def filled_fields(text: str) -> frozenset[str]:
    """Headings with content under them (up to the next heading of the same or a higher level) and
    filled `| Field | value |` rows. Each line is judged once (a heading's body is a range over
    those judgements), not once per enclosing heading."""
    lines = git_lines(visible(text))  # a line of only invisible characters shows nothing: it is blank
    content = _content_lines(lines)
    before = [0]  # before[j]: content lines among lines[:j]
    for flag in content:
        before.append(before[-1] + flag)
    heads = [(i, len(h[1]), h[2]) for i, line in enumerate(lines) if (h := _HEADING.match(line))]
    fields: set[str] = set()
    for k, (i, level, title) in enumerate(heads):
        end = next((j for j, lvl, _t in heads[k + 1:] if lvl <= level), len(lines))
        if before[end] - before[i + 1] > 0:
            fields.add(words(title))
    heading_lines = {i for i, _l, _t in heads}
    for i, line in enumerate(lines):
        if i not in heading_lines and line.startswith("|") and _value_row(lines, i):
            fields.add(words(cells(line)[0]))
    return frozenset(fields)


def _content_lines(lines: list[str]) -> list[bool]:
    """has_content's judgement of each line. A row's lookahead for a separator stops at the next
    non-blank line, so judging it within the whole file or within one heading's body (which ends
    before a heading, never a separator) is the same."""
    out = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not text or _HEADING.match(text) or text.startswith("```"):
            out.append(False)
        elif text.startswith("|"):
            out.append(_value_row(lines, i))
        else:
            out.append(not is_placeholder(text))
    return out


def missing(text: str, required: dict[str, list[str]]) -> list[str]:
    """The labels of `required` (label -> accepted titles) that no filled field of `text` answers;
    a title answers when a field is it or begins with it (`Risks / decisions` for `risks`)."""
    fields = filled_fields(text)
    out = []
    for label, titles in required.items():
        alts = [words(t) for t in titles]
        if not any(f == a or f.startswith(a + " ") for f in fields for a in alts):
            out.append(label)
    return out
