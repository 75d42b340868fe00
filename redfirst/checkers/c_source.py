"""C-family source as a counting rule reads it: comments and string literals blanked (line structure
kept, so line numbers survive), and which lines sit inside a preprocessor guard."""

from __future__ import annotations

import re

_TOKENS = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*(?:"|$)|\'(?:\\.|[^\'\\\n])*(?:\'|$)',
                     re.S | re.M)
_IF = re.compile(r"^\s*#\s*(?:ifdef|ifndef|if)\b(.*)$")
_ELIF = re.compile(r"^\s*#\s*elif\b(.*)$")
_ELSE = re.compile(r"^\s*#\s*else\b")
_ENDIF = re.compile(r"^\s*#\s*endif\b")


def _blank(match: re.Match[str]) -> str:
    token = match.group(0)
    if "\n" not in token:  # most comments and strings: one line
        return " " * len(token)
    return "\n".join(" " * len(part) for part in token.split("\n"))


def strip_comments_and_strings(text: str) -> str:
    """`text` with every comment and string or character literal replaced by spaces (newlines kept)."""
    return _TOKENS.sub(_blank, text)


def guarded(lines: list[str], guard: re.Pattern[str]) -> list[bool]:
    """Per line: inside an `#if`/`#ifdef`/`#elif` whose condition matches `guard` (an `#else` arm is
    the other build's code, so not guarded by it)."""
    out: list[bool] = []
    stack: list[bool] = []
    for line in lines:
        if m := _IF.match(line):
            stack.append(bool(guard.search(m[1])))
        elif (m := _ELIF.match(line)) and stack:
            stack[-1] = bool(guard.search(m[1]))
        elif _ELSE.match(line) and stack:
            stack[-1] = False
        elif _ENDIF.match(line) and stack:
            stack.pop()
        out.append(any(stack))
    return out
