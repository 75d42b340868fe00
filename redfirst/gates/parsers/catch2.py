"""Catch2's console summary (v2 and v3 print it alike): `All tests passed (...)`, or the
`test cases:` / `assertions:` rows, or `No tests ran`.

How the columns count: `passed` and `failed` are what they say; `skipped` (v3 `SKIP()`)
and `failed as expected` (`[!shouldfail]`, `[!mayfail]`) are both counted as skipped, not
executed: a case that was expected to fail proves nothing about the claim. Assertions are
the passed plus failed ones (those failed as expected are left out). A column this parser
does not know is counted as failed, so an unknown word can never add to a pass.
Summaries of several runs in one output add up, and the failures of a `-r compact` run
(`Failed 1 test case, failed 1 assertion.`) count too.

A run announces itself by what it prints before its cases, in this order: `Filters: ...` (a
test spec was given), v3's `Randomness seeded to:`, and the banner `<program> is a Catch v2.x
host application.` (v3: `Catch2 v3.x`; v2 prints it only with `-s` or at its first failure). A
mark of a kind the open run already printed, or of an earlier kind, starts another run: the open
one ended without its summary, and `summary_seen` is False (so is it for a run still open at
the end). A v2 run without a test spec that exits before its first failure prints nothing at
all, and cannot be seen in the output (docs/guide.md). A list mode (`--list-tests`, `--list-tags`:
`All available ...:` or `Matching ...:`) ran nothing: `nothing_ran`, whatever its exit status (v2
exits with the number of names listed). `--list-test-names-only` prints bare names, and is not told
from a run that printed nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import gather, guarded, lines

# The marks a run prints before its cases, by the order they come in one run.
_MARKS = ((re.compile(r"^Filters: "), 0), (re.compile(r"^Randomness seeded to: \d+$"), 1),
          (re.compile(r"^.+ is a Catch2? v\d+\.\d+\.\d+ host application\.$"), 2))
_ALL_PASSED = re.compile(r"^All tests passed \((\d+) assertions? in (\d+) test cases?\)$")
_ROW = re.compile(r"^(test cases|assertions):\s*(\d+|- none -)((?:\s*\|\s*\d+ [a-z ]+?)*)$")
_COLUMN = re.compile(r"\|\s*(\d+) ([a-z ]+?)\s*(?=\||$)")
_NO_TESTS = re.compile(r"^No tests ran$")
# a list mode (--list-tests, --list-tags, ...): names printed, nothing run
_LISTED = re.compile(r"^(?:All available (?:test cases|tags|reporters|listeners)|Matching (?:test cases|tags)):$")
# the compact reporter's failing totals (`-r compact`): not a summary this parser grades, but its failures count
_COMPACT_FAILED = re.compile(
    r"^Failed (?:both |all )?(\d+) test cases?, failed (?:both |all )?(\d+) assertions?\.$")

_KNOWN = ("passed", "failed", "skipped", "failed as expected")


def _columns(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for count, word in _COLUMN.findall(text):
        out[word] = out.get(word, 0) + int(count)
    return out


def _parse(stdout: str, stderr: str) -> Counts:
    passed = failed = skipped = asserts = asserts_failed = 0
    summaries = unfinished = 0
    marked = -1         # the latest mark the open run printed (-1: no run open)
    nothing_ran = False
    notes: list[str] = []
    cases_row: dict[str, int] | None = None
    for line in lines(stdout, stderr):
        rank = next((r for pattern, r in _MARKS if pattern.match(line)), None)
        if rank is not None:
            if rank <= marked:
                unfinished += 1     # another run began before the open one printed its summary
            marked = rank
        elif m := _ALL_PASSED.match(line):
            summaries += 1
            marked = -1
            asserts += int(m.group(1))
            passed += int(m.group(2))
        elif m := _COMPACT_FAILED.match(line):
            failed += int(m.group(1))
            asserts_failed += int(m.group(2))
            notes.append(f"a compact-reporter run failed {m.group(1)} test cases: counted as failed")
            marked = -1
        elif _NO_TESTS.match(line):
            summaries += 1
            marked = -1
            nothing_ran = True
        elif _LISTED.match(line):
            nothing_ran = True      # counts only what ran: a listed case is none of it
            notes.append(f"Catch2 listed without running ({line})")
        elif m := _ROW.match(line):
            columns = _columns(m.group(3))
            unknown = {word: n for word, n in columns.items() if word not in _KNOWN}
            if unknown:
                notes.append(f"unknown Catch2 columns counted as failed: {unknown}")
            if m.group(1) == "test cases":
                cases_row = columns
                passed += columns.get("passed", 0)
                failed += columns.get("failed", 0) + sum(unknown.values())
                skipped += columns.get("skipped", 0) + columns.get("failed as expected", 0)
            elif cases_row is not None:
                # the assertions row closes the summary that the test cases row opened
                summaries += 1
                marked = -1
                cases_row = None
                asserts += columns.get("passed", 0) + columns.get("failed", 0) + sum(unknown.values())
                asserts_failed += columns.get("failed", 0) + sum(unknown.values())
    if cases_row is not None:
        notes.append("a `test cases:` row without its `assertions:` row")
    unfinished += marked >= 0
    if unfinished:
        notes.append(f"{unfinished} Catch2 run(s) announced themselves and printed no summary")
    executed = passed + failed
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        assertions=asserts,
        assertions_failed=asserts_failed,
        summary_seen=summaries > 0 and not unfinished and cases_row is None,
        nothing_ran=nothing_ran and executed == 0,
        notes=tuple(notes),
    )


_RULE = re.compile(r"^(?:-{20,}|={20,}|\.{20,})$")
_FAILED_AT = re.compile(r"^(?P<file>.+):(?P<line>\d+): FAILED:$")


def _failures(text_lines: list[str]) -> list[Failure]:
    """Each test case that printed a `file:line: FAILED:` report (the console reporter's block under
    the case's name between dashed rules), with its first: the expression and its expansion, or the
    exception's message. A `[!shouldfail]` case's report is listed too: the console reporter does
    not mark it, so it is read as any other (it explains a verdict; `failed` counts)."""
    out: list[Failure] = []
    name, seen = "", set()
    for i, line in enumerate(text_lines):
        if i >= 2 and _RULE.match(text_lines[i - 2]) and text_lines[i - 2].startswith("-") and \
                text_lines[i].startswith("-") and _RULE.match(line):
            name = text_lines[i - 1].strip()
        elif (m := _FAILED_AT.match(line)) and name not in seen:
            seen.add(name)
            said = gather(text_lines, i + 1, lambda t: not t.strip() or bool(_RULE.match(t)))
            out.append(Failure(name or "?", said or "FAILED", m.group("file"), int(m.group("line"))))
    return out


class Catch2Parser(Parser):
    name = "catch2"
    reports_assertions = True
    exit_meanings: Mapping[int, ExitMeaning] = {}

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr, _failures)


PARSER: Parser = Catch2Parser()
