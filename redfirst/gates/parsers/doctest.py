"""doctest's console output: the `test cases:`, `assertions:` and `Status:` summary block of each
run, and the per-case lines doctest prints beside it.

A run counts only when its whole three-line block is there; blocks of several runs in
one output (a script running two binaries) add up, and a run that printed its version
banner but no block (it died first) leaves `summary_seen` False. `assertions: 0` under
`Status: SUCCESS!` is reported as it is (assertions=0): the grader, not the parser,
refuses that pass.

The summary is an aggregate, and it lies about one filter: `--first`/`--last` leave cases
out of the run but the summary counts them as passed (`-tc`, `-ts`, `-sf` and
`--abort-after` are counted honestly, as skipped), wherever they are given (a wrapper
script, a custom main). So executed cases are counted from per-case evidence: the
`<seconds> s: <name>` line `-d` (`--duration=true`) prints for every executed case.
doctest reads its options from the command line only (no environment variable), so the
`command` driver hands `--dt-duration=true` (`per_case_args`; the `dt-` spelling no build
disables) to the gate's program: a wrapper that passes its arguments on (`"$@"`) passes it
to doctest. Those lines are the count, the summary only a cross-check: when they disagree,
`doubt` says both numbers. A run whose summary counts cases as run with no such line has
`per_case` None, and `run_doubt` refuses it (never GREEN): nothing lists what ran.

Cases doctest grades itself are graded as doctest grades them, like Catch2's `[!mayfail]`:
a `may_fail`, `should_fail` or `expected_failures(n)` case that failed as declared is
"not failed" to doctest; it is counted skipped (a case that failed as expected proves
nothing about the claim), and its failed assertions are left out of both assertion
counts. One that did not fail as declared is failed, as doctest's summary already says.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import first, gather, guarded, lines

_START = re.compile(r'^\[doctest\] doctest version is "')
_CASES = re.compile(
    r"^\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|(?:\s*(\d+) skipped)?$"
)
_ASSERTS = re.compile(r"^\[doctest\] assertions:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|$")
_STATUS = re.compile(r"^\[doctest\] Status: (SUCCESS|FAILURE)!$")
_CASE_NAME = re.compile(r"^TEST CASE:\s+(.*)$")
_DURATION = re.compile(r"^\d+\.\d+ s: (.*)$")
# a failed CHECK/REQUIRE (not WARN: doctest does not count those as failed assertions)
_FAILED_ASSERT = re.compile(r"^.+(?::\d+:|\(\d+\):) (?:FATAL )?ERROR: (?!test case (?:THREW|CRASHED))")
_AS_EXPECTED = re.compile(
    r"^(?:Failed as expected|Allowed to fail|Failed exactly \d+ times as expected) so marking it as not failed!?$"
)
# --first/--last and their dt- forms; doctest reads them with `=` only, after any number of dashes
_RANGE = re.compile(r"^-+(?:dt-)?(?:first|last|f|l)=\S")


@dataclass
class _Run:
    durations: int = 0
    case: str = ""
    failed_asserts: dict[str, int] = field(default_factory=dict)
    expected_cases: int = 0      # failed as declared: doctest's "not failed"
    expected_asserts: int = 0    # their failed assertions


def _parse(stdout: str, stderr: str) -> Counts:
    passed = failed = skipped = asserts = asserts_failed = 0
    starts = blocks = 0
    per_case: int | None = 0
    doubts: list[str] = []
    notes: list[str] = []
    names: list[str] = []
    run = _Run()
    cases: re.Match[str] | None = None
    assertions: re.Match[str] | None = None
    for line in lines(stdout, stderr):
        if _START.match(line):
            starts += 1
            run = _Run()
        elif m := _CASE_NAME.match(line):
            run.case = m.group(1)
            if m.group(1) not in names:
                names.append(m.group(1))
        elif _FAILED_ASSERT.match(line):
            run.failed_asserts[run.case] = run.failed_asserts.get(run.case, 0) + 1
        elif _AS_EXPECTED.match(line):
            run.expected_cases += 1
            run.expected_asserts += run.failed_asserts.pop(run.case, 0)
            if run.case in names:
                names.remove(run.case)
        elif _DURATION.match(line):
            run.durations += 1
        elif m := _CASES.match(line):
            cases, assertions = m, None
        elif (m := _ASSERTS.match(line)) and cases is not None:
            assertions = m
        elif (m := _STATUS.match(line)) and cases is not None and assertions is not None:
            blocks += 1
            run_passed, run_failed, run_skipped = int(cases.group(2)), int(cases.group(3)), int(cases.group(4) or 0)
            if m.group(1) == "FAILURE" and run_failed == 0:
                # the status line outranks a count that says nothing failed
                run_failed = 1
                notes.append("Status: FAILURE! with 0 failed cases: counted as 1 failed")
            unaccounted = int(cases.group(1)) - run_passed - run_failed - run_skipped
            if unaccounted > 0:
                # a total the parts do not add up to: the missing cases did not pass
                run_failed += unaccounted
                notes.append(f"{unaccounted} test cases neither passed, failed nor skipped: counted as failed")
            said = run_passed + run_failed
            if run.durations:
                if run.durations != said:
                    doubts.append(f"doctest's summary counts {said} cases as run ({run_passed} passed), its per-case "
                                  f"lines show {run.durations} executed: --first/--last count the cases they leave "
                                  "out as passed")
                per_case = None if per_case is None else per_case + run.durations
            elif said:
                per_case = None
            expected = min(run.expected_cases, run_passed)
            if expected:
                notes.append(f"{expected} cases failed as declared (may_fail, should_fail, expected_failures): "
                             "counted skipped")
            passed += run_passed - expected
            failed += run_failed
            skipped += run_skipped + expected
            asserts += max(int(assertions.group(1)) - run.expected_asserts, 0)
            asserts_failed += max(int(assertions.group(3)) - run.expected_asserts, 0)
            cases = assertions = None
            run = _Run()
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
        per_case=per_case if blocks else None,
        doubt="; ".join(doubts) or None,
        notes=tuple(notes),
    )


def range_option(run: str | Sequence[str]) -> str | None:
    """The first `--first=`/`--last=` option (any doctest spelling) in a gate's `run`, or None,
    also inside a word that is a shell command of its own.

    A string `run` is split as a shell would split it; one that cannot be split is read word by word.
    """
    if isinstance(run, str):
        try:
            words = shlex.split(run)
        except ValueError:
            words = run.split()
    else:
        words = list(run)
    # a word may itself be a shell command (`sh -c "bin --first=1"`): read inside it too
    for word in words:
        for piece in (word, *word.replace('"', " ").replace("'", " ").split()):
            if _RANGE.match(piece):
                return piece
    return None


_ERROR_AT = re.compile(r"^(?P<file>.+?)(?::(?P<line>\d+):|\((?P<msvc>\d+)\):) (?:FATAL )?ERROR: (?P<said>.*)$")


def _failures(text_lines: list[str]) -> list[Failure]:
    """Each test case (`TEST CASE:  name`) that printed an `file:line: ERROR: ...` line, with its first:
    the check and its values (`CHECK( 1 + 1 == 3 ) is NOT correct! values: CHECK( 2 == 3 )`), or how it threw
    or crashed. A `may_fail`/`should_fail` case's report is listed too: the console output does not
    mark it (it explains a verdict; `failed` counts)."""
    out: list[Failure] = []
    name, seen = "", set()
    for i, line in enumerate(text_lines):
        if m := _CASE_NAME.match(line):
            name = m.group(1).strip()
        elif (m := _ERROR_AT.match(line)) and name and name not in seen:
            seen.add(name)
            said = " ".join(filter(None, (m.group("said"), gather(text_lines, i + 1, lambda t: not t.startswith(" ")))))
            out.append(Failure(name, said, m.group("file"), int(m.group("line") or m.group("msvc"))))
    return out


class DoctestParser(Parser):
    name = "doctest"
    reports_assertions = True
    exit_meanings: Mapping[int, ExitMeaning] = {}
    per_case_args = ("--dt-duration=true",)

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr, _failures)

    def run_doubt(self, run: str | Sequence[str], counts: Counts) -> str | None:
        """A run whose summary counts executed cases that no per-case line lists: its summary is all the
        evidence, and --first/--last (on the command line or anywhere below it) make it count cases that
        never ran as passed. None when each executed case is listed, or none was executed."""
        if counts.per_case is not None or counts.executed == 0:
            return None
        option = range_option(run)
        if option is not None:
            return (f"doctest ran with {option}, and its summary counts the cases that option leaves out as "
                    "passed: add -d (--duration=true) so each executed case is printed and counted")
        return (f"doctest's summary counts {counts.executed} cases as run, but no per-case line "
                "(`<seconds> s: <name>`) lists them: redfirst hands --dt-duration=true to the gate's program, "
                "and it did not reach doctest (a wrapper script that does not pass its arguments on, a custom "
                "main, a shell command ending in a pipe, or an unprefixed -d=false that outranks it): "
                "pass -d to doctest there")


PARSER: Parser = DoctestParser()
