"""doctest's console summary: `test cases:`, `assertions:` and `Status:` lines, one block per run.

A run counts only when its whole three-line block is there; blocks of several runs in
one output (a script running two binaries) add up, and a run that printed its version
banner but no block (it died first) leaves `summary_seen` False. `assertions: 0` under
`Status: SUCCESS!` is reported as it is (assertions=0): the grader, not the parser,
refuses that pass.
"""

from __future__ import annotations

import re

from gates.parsers import Counts, Parser
from gates.parsers._common import first, guarded, lines

_START = re.compile(r'^\[doctest\] doctest version is "')
_CASES = re.compile(
    r"^\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|(?:\s*(\d+) skipped)?$"
)
_ASSERTS = re.compile(r"^\[doctest\] assertions:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|$")
_STATUS = re.compile(r"^\[doctest\] Status: (SUCCESS|FAILURE)!$")
_CASE_NAME = re.compile(r"^TEST CASE:\s+(.*)$")


def _parse(stdout: str, stderr: str) -> Counts:
    passed = failed = skipped = asserts = asserts_failed = 0
    starts = blocks = 0
    notes: list[str] = []
    names: list[str] = []
    cases: re.Match[str] | None = None
    assertions: re.Match[str] | None = None
    for line in lines(stdout, stderr):
        if _START.match(line):
            starts += 1
        elif m := _CASE_NAME.match(line):
            if m.group(1) not in names:
                names.append(m.group(1))
        elif m := _CASES.match(line):
            cases, assertions = m, None
        elif (m := _ASSERTS.match(line)) and cases is not None:
            assertions = m
        elif (m := _STATUS.match(line)) and cases is not None and assertions is not None:
            blocks += 1
            run_failed = int(cases.group(3))
            if m.group(1) == "FAILURE" and run_failed == 0:
                # the status line outranks a count that says nothing failed
                run_failed = 1
                notes.append("Status: FAILURE! with 0 failed cases: counted as 1 failed")
            unaccounted = int(cases.group(1)) - int(cases.group(2)) - run_failed - int(cases.group(4) or 0)
            if unaccounted > 0:
                # a total the parts do not add up to: the missing cases did not pass
                run_failed += unaccounted
                notes.append(f"{unaccounted} test cases neither passed, failed nor skipped: counted as failed")
            passed += int(cases.group(2))
            failed += run_failed
            skipped += int(cases.group(4) or 0)
            asserts += int(assertions.group(1))
            asserts_failed += int(assertions.group(3))
            cases = assertions = None
    if starts > blocks:
        notes.append(f"{starts - blocks} of {starts} doctest runs printed no summary")
    if failed and names:
        notes.extend(first(names))
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        assertions=asserts,
        assertions_failed=asserts_failed,
        summary_seen=blocks > 0 and blocks >= starts,
        notes=tuple(notes),
    )


class DoctestParser:
    name = "doctest"
    reports_assertions = True

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr)


PARSER: Parser = DoctestParser()
