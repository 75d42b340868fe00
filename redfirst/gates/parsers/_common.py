"""Helpers every output parser shares: clean lines, and the guard that keeps a parser from raising.

A parser reads text a crashed or hostile program may have printed; whatever it finds, it
answers with `Counts`, and on anything it cannot read, with `summary_seen=False`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from redfirst.gates.parsers import Counts, Failure

# CSI sequences (colours, cursor moves) and OSC sequences (titles, hyperlinks).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# How many failed case names a parser keeps in `Counts.notes`.
MAX_NAMES = 5
# How much of a program's output a reason quotes.
TAIL = 400
# How many failed cases a parser keeps in `Counts.failures` (the reports say "and N more").
MAX_FAILURES = 10
# How long a failure's message may be, on one line.
MESSAGE = 300

# `path/file.ext:12` as frameworks print a place: pytest's `tests/t.py:4: AssertionError`,
# gtest's `t.cc:12: Failure`, doctest's `t.cpp(12): ERROR` (MSVC style), Catch2's `at t.cpp:12`
_PLACE = re.compile(r"(?:^|\bat |\s)(?P<file>[^\s:()\[\]]+\.[A-Za-z0-9+]+)(?::(?P<line>\d+)|\((?P<msvc>\d+)\))(?=[:\s,]|$)")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def tail(text: str) -> str:
    """The end of `text` on one line, for a reason; "(no output)" when there is none."""
    text = " ".join(text.replace("\0", " ").strip().split())
    return text[-TAIL:] if text else "(no output)"


def lines(*texts: str | None) -> list[str]:
    """The lines of stdout then stderr, colour codes removed, CR/CRLF/LF all line ends, right-stripped."""
    out: list[str] = []
    for text in texts:
        if text:
            out.extend(line.rstrip() for line in strip_ansi(text).splitlines())
    return out


def guarded(parse: Callable[[str, str], Counts], stdout: str, stderr: str,
            failures: Callable[[list[str]], list[Failure]] | None = None) -> Counts:
    """`parse(stdout, stderr)`, or an unreadable-output `Counts` if it raises: a parser never raises.
    `failures`, where the format prints per-case failure reports, reads them from the output's
    lines (stdout then stderr) into `Counts.failures`; one that raises leaves them empty: a
    failure's explanation never changes the counts. A caller may rely on: the failures never
    outnumber the failed cases; where the reports do, none is kept (a note says so), so a case
    that passed is never named as failed for want of telling the reports apart."""
    out, err = stdout if isinstance(stdout, str) else "", stderr if isinstance(stderr, str) else ""
    try:
        counts = parse(out, err)
    except Exception as exc:  # a parser bug must read as "no summary", never as a pass
        return Counts(summary_seen=False, notes=(f"output could not be parsed: {type(exc).__name__}: {exc}",))
    if failures is None or not counts.failed:
        return counts
    try:
        found = failures(lines(out, err))
    except Exception:
        return counts
    if len(found) > counts.failed:
        # more reports than failed cases: some are not failures (a Catch2 `[!shouldfail]` case, a
        # report a passing test printed) and nothing tells which: none is named, never a passed case
        return dataclasses.replace(counts, notes=(*counts.notes, (
            f"{len(found)} failure reports for {counts.failed} failed cases: none named (a case that failed "
            "as expected, or a test printing a failure report)")))
    return dataclasses.replace(counts, failures=bounded(found))


def gather(text_lines: list[str], start: int, stop: Callable[[str], bool], limit: int = 8) -> str:
    """The lines from `start` up to the first that `stop` says ends the report (or `limit` lines),
    on one line: the body of a failure's report."""
    body = []
    for line in text_lines[start:start + limit]:
        if stop(line):
            break
        body.append(line)
    return one_line(" ".join(body))


def first(names: list[str]) -> tuple[str, ...]:
    """The first few case names, and how many more, for `Counts.notes`."""
    kept = tuple(names[:MAX_NAMES])
    if len(names) > MAX_NAMES:
        kept += (f"... and {len(names) - MAX_NAMES} more",)
    return kept


def one_line(text: str, limit: int = MESSAGE) -> str:
    """`text` with its whitespace collapsed, cut at `limit` characters."""
    flat = " ".join(strip_ansi(text).replace("\0", " ").split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def places(text: str) -> list[tuple[str, int]]:
    """Every `file:line` (or `file(line)`) place `text` names, in order."""
    found = []
    for m in _PLACE.finditer(strip_ansi(text)):
        found.append((m.group("file"), int(m.group("line") or m.group("msvc"))))
    return found


def place_in(text: str, prefer: str | None = None) -> tuple[str | None, int | None]:
    """The place of a failure in its report `text`: the last place in the file `prefer` (the test's
    own file, where the caller knows it: the innermost frame of the test), else the last place."""
    found = places(text)
    if prefer:
        own = [p for p in found if p[0] == prefer or p[0].endswith("/" + prefer)]
        found = own or found
    return found[-1] if found else (None, None)


def bounded(failures: list[Failure]) -> tuple[Failure, ...]:
    """The first MAX_FAILURES failures, for `Counts.failures`."""
    return tuple(failures[:MAX_FAILURES])
