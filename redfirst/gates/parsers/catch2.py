"""Catch2's console summary (v2 and v3 print it alike): `All tests passed (...)`, or the
`test cases:` / `assertions:` rows, or `No tests ran`.

How the columns count: `passed` and `failed` are what they say; `skipped` (v3 `SKIP()`)
and `failed as expected` (`[!shouldfail]`, `[!mayfail]`) are both counted as skipped, not
executed: a case that was expected to fail proves nothing about the claim. Assertions are
the passed plus failed ones (those failed as expected are left out). A column this parser
does not know is counted as failed, so an unknown word can never add to a pass.
Summaries of several runs in one output add up, and the failures of a `-r compact` run
(`Failed 1 test case, failed 1 assertion.`) count too; a v3 run that announced itself
(`Randomness seeded to:`) but printed no summary leaves `summary_seen` False.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from redfirst.gates.parsers import Counts, ExitMeaning, Parser
from redfirst.gates.parsers._common import guarded, lines

_START = re.compile(r"^Randomness seeded to: \d+$")
_ALL_PASSED = re.compile(r"^All tests passed \((\d+) assertions? in (\d+) test cases?\)$")
_ROW = re.compile(r"^(test cases|assertions):\s*(\d+|- none -)((?:\s*\|\s*\d+ [a-z ]+?)*)$")
_COLUMN = re.compile(r"\|\s*(\d+) ([a-z ]+?)\s*(?=\||$)")
_NO_TESTS = re.compile(r"^No tests ran$")
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
    starts = summaries = 0
    nothing_ran = False
    notes: list[str] = []
    cases_row: dict[str, int] | None = None
    for line in lines(stdout, stderr):
        if _START.match(line):
            starts += 1
        elif m := _ALL_PASSED.match(line):
            summaries += 1
            asserts += int(m.group(1))
            passed += int(m.group(2))
        elif m := _COMPACT_FAILED.match(line):
            failed += int(m.group(1))
            asserts_failed += int(m.group(2))
            notes.append(f"a compact-reporter run failed {m.group(1)} test cases: counted as failed")
        elif _NO_TESTS.match(line):
            summaries += 1
            nothing_ran = True
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
                cases_row = None
                asserts += columns.get("passed", 0) + columns.get("failed", 0) + sum(unknown.values())
                asserts_failed += columns.get("failed", 0) + sum(unknown.values())
    if cases_row is not None:
        notes.append("a `test cases:` row without its `assertions:` row")
    if starts > summaries:
        notes.append(f"{starts - summaries} of {starts} Catch2 runs printed no summary")
    executed = passed + failed
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        assertions=asserts,
        assertions_failed=asserts_failed,
        summary_seen=summaries > 0 and summaries >= starts and cases_row is None,
        nothing_ran=nothing_ran and executed == 0,
        notes=tuple(notes),
    )


class Catch2Parser(Parser):
    name = "catch2"
    reports_assertions = True
    exit_meanings: Mapping[int, ExitMeaning] = {}

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr)


PARSER: Parser = Catch2Parser()
