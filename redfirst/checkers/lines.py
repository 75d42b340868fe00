"""git's model of a file's lines: a line ends at LF and nowhere else.

`str.splitlines()` also ends lines at CR, U+2028, U+0085, form feed and other separators; a checker
that used it would judge different lines than `git diff` shows. Every checker splits with these."""

from __future__ import annotations

import re
import unicodedata

# git's isspace(): space, tab, LF, CR; not form feed, vertical tab or any non-ASCII space.
GIT_SPACE = " \t\n\r"


def lines(text: str) -> list[str]:
    """The lines of `text` as git counts them, without their LF; a CR before the LF stays in the line."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()  # the LF ending the last line opens no new line
    return parts


def byte_lines(data: bytes) -> list[bytes]:
    """`lines` over bytes: equal lines are equal bytes, as `git diff` compares them."""
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return parts


def count(text: str) -> int:
    """How many lines git numbers in `text` (the highest `path:N` that exists)."""
    return len(lines(text))


def is_blank(line: str) -> bool:
    """git's blank line (is_blank_line): nothing but git's spaces."""
    return not line.strip(GIT_SPACE)


# Where CommonMark ends a line: LF, CRLF and a lone CR. Only the lone CR is not git's.
_MARKDOWN_BREAK = re.compile(r"\r\n|\r|\n")


def markdown_to_git(text: str) -> list[int]:
    """For each line of `text` as markdown reads it, the 1-based git line it lies on."""
    out = [1]
    line = 1
    for m in _MARKDOWN_BREAK.finditer(text):
        if m.group() != "\r":
            line += 1
        out.append(line)
    return out


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters a renderer shows as
# nothing. Most are format characters (Cf); these are not: the combining grapheme joiner, variation
# selectors, Hangul fillers, Mongolian and Khmer vowel marks, and the unassigned ignorable blocks.
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u3164\ufe00-\ufe0f\uffa0"
                        "\ufff0-\ufff8\U000e0000-\U000e0fff]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_BRAILLE_BLANK = "\u2800"  # a glyph drawn as a space, not whitespace to Python


def visible(text: str) -> str:
    """`text` without what renders as nothing: Unicode's format characters (zero-width space and
    joiners, soft hyphen, BOM) and the other default-ignorable code points (combining grapheme
    joiner, variation selectors, Hangul fillers), a braille blank read as the space it shows; so an
    invisible character cannot hide a word from a pattern, nor pass for content."""
    if text.isascii():
        return text  # no format character is ASCII; most record text is
    text = _IGNORABLE.sub("", text).replace(_BRAILLE_BLANK, " ")
    # each distinct non-ASCII character judged once (a record holds tens), each format one removed
    for ch in {ch for ch in _NON_ASCII.findall(text) if unicodedata.category(ch) == "Cf"}:
        text = text.replace(ch, "")
    return text
