"""GoogleTest's console output: per-test `[       OK ]` / `[  FAILED  ]` / `[  SKIPPED ]` lines
and the closing `N tests from M test suites ran.` block.

One run lasts from `[==========] Running ...` to the next. A run with its closing block
counts from the block, never lower than its own per-test lines say failed (`GTEST_SKIP`
cases are skipped, `DISABLED_` cases never appear); tests the block leaves unaccounted
for (`ran` more than passed + skipped + failed) are counted as failed. A run without its
block (it died mid-way) counts what its per-test lines show and leaves `summary_seen`
False. Several runs (`--gtest_repeat`, scripts) add up. GoogleTest reports no assertions.

The block is an aggregate, and it lies: a `GTEST_SKIP()` in a global environment's
`SetUp` keeps every test from running, prints no per-test line, and closes with
`[  PASSED  ] N tests.`. So the per-test lines are the evidence and the block a
cross-check: when their passed or skipped counts disagree, `doubt` names both.
`--gtest_brief` prints no line for a passed test, so its passes cannot be checked:
a brief run that claims passes carries a doubt too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import first, gather, guarded, lines

_RUNNING = re.compile(r"^\[==========\] Running \d+ tests? from ")
_RAN = re.compile(r"^\[==========\] (\d+) tests? from \d+ test (?:suites?|cases?) ran\.")
_TOTAL = re.compile(r"^\[ {2}(PASSED|SKIPPED|FAILED) {1,2}\] (\d+) tests?(?:\.|, listed below:)$")
_CASE = re.compile(r"^\[ {1,7}(OK|FAILED|SKIPPED) {1,2}\] (\S.*?) \(\d+ ms\)$")
_RUN = re.compile(r"^\[ RUN {6}\] (\S.*)$")


@dataclass
class _Run:
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    ran: int | None = None  # from the closing block
    totals: dict[str, int] = field(default_factory=dict)
    failed_names: list[str] = field(default_factory=list)
    opened: bool = False  # by a `Running` line: --gtest_brief prints none, nor any passed test

    def closed(self) -> bool:
        return self.ran is not None and "PASSED" in self.totals


def _own(text_lines: list[str]) -> list[str]:
    """The lines with every per-test status line that is not GoogleTest's own left out: while a test
    runs (after its `[ RUN      ] Suite.Name`), GoogleTest's status line for it is the last
    `[  FAILED  ]`/`[       OK ]`/`[  SKIPPED ]` line naming that test before the next `[ RUN`,
    `[----------]` or `[==========]` line; any other status line there is something the test printed.
    A caller may rely on: the counts and the failures are read from these lines, so a passing test
    that prints `[  FAILED  ] X (0 ms)` makes no case failed. Status lines outside a test's run
    (`--gtest_brief` prints no `[ RUN` line) are all kept."""
    drop: set[int] = set()
    running: str | None = None
    status_at: int | None = None
    for i, line in enumerate(text_lines):
        if m := _RUN.match(line):
            running, status_at = m.group(1), None
        elif line.startswith(("[----------]", "[==========]")):
            running, status_at = None, None
        elif running is not None and (m := _CASE.match(line)):
            if m.group(2) == running and status_at is not None:
                drop.add(status_at)
            if m.group(2) == running:
                status_at = i
            else:
                drop.add(i)
    return [line for i, line in enumerate(text_lines) if i not in drop]


def _parse(stdout: str, stderr: str) -> Counts:
    runs: list[_Run] = []
    run: _Run | None = None
    for line in _own(lines(stdout, stderr)):
        if _RUNNING.match(line):
            run = _Run(opened=True)
            runs.append(run)
            continue
        case, closing = _CASE.match(line), _RAN.match(line)
        if (case or closing) and (run is None or run.closed()):
            # --gtest_brief prints no `Running` line: a case or closing line opens the run
            run = _Run()
            runs.append(run)
        if run is None:
            continue
        if m := case:
            status = m.group(1)
            if status == "OK":
                run.ok += 1
            elif status == "SKIPPED":
                run.skipped += 1
            else:
                run.failed += 1
                run.failed_names.append(m.group(2))
        elif m := closing:
            run.ran = int(m.group(1))
        elif run.ran is not None and (m := _TOTAL.match(line)):
            run.totals[m.group(1)] = int(m.group(2))

    passed = failed = skipped = 0
    notes: list[str] = []
    doubts: list[str] = []
    names: list[str] = []
    for run in runs:
        names.extend(n for n in run.failed_names if n not in names)
        if not run.closed():
            passed, failed, skipped = passed + run.ok, failed + run.failed, skipped + run.skipped
            continue
        ran = run.ran or 0
        ok, skip = run.totals.get("PASSED", 0), run.totals.get("SKIPPED", 0)
        if run.opened and (ok, skip) != (run.ok, run.skipped):
            doubts.append(f"GoogleTest's summary says {ok} passed, {skip} skipped; its per-test lines show "
                          f"{run.ok} passed, {run.skipped} skipped (a GTEST_SKIP in a global environment is "
                          "printed as passed)")
        elif not run.opened and ok:
            doubts.append(f"--gtest_brief prints no line for a passed test: GoogleTest's {ok} passed cannot be "
                          "checked against what ran; run without --gtest_brief")
        bad = max(run.totals.get("FAILED", 0), run.failed)
        unaccounted = ran - ok - skip - bad
        if unaccounted > 0:
            notes.append(f"{unaccounted} of {ran} tests neither passed, skipped nor failed: counted as failed")
            bad += unaccounted
        passed, failed, skipped = passed + ok, failed + bad, skipped + skip
    open_runs = sum(1 for run in runs if not run.closed())
    if open_runs:
        notes.append(f"{open_runs} of {len(runs)} GoogleTest runs printed no closing summary")
    if names:
        notes.extend(first(names))
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        summary_seen=bool(runs) and open_runs == 0,
        per_case=sum(run.ok + run.failed for run in runs) if runs and all(run.opened for run in runs) else None,
        doubt="; ".join(doubts) or None,
        notes=tuple(notes),
    )


# `file:line: Failure` opens what a failed EXPECT_*/ASSERT_*/FAIL() printed; an exception the test body
# threw prints `unknown file: Failure` (or a line) then `C++ exception with description ...` / `Unknown C++ exception`.
_FAILURE = re.compile(r"^(.+):(\d+): Failure$")
_THREW = re.compile(r"^(?:C\+\+ exception with description|Unknown C\+\+ exception)")



def _failures(text_lines: list[str]) -> list[Failure]:
    """Each failed test (`[  FAILED  ] Suite.Name (N ms)`) with the first `file:line: Failure` it printed
    after its `[ RUN      ]` line and the message under it (`Expected equality of these values: ...`)."""
    out: list[Failure] = []
    first_failure: tuple[str | None, int | None, str] | None = None
    text_lines = _own(text_lines)
    for i, line in enumerate(text_lines):
        if _RUN.match(line):
            first_failure = None
        elif (m := _FAILURE.match(line) or re.match(r"^(unknown file)(): Failure$", line)) and first_failure is None:
            said = gather(text_lines, i + 1, lambda t: t.startswith("[") or bool(_FAILURE.match(t)))
            where = m.group(1) if m.group(1) != "unknown file" else None
            first_failure = (where, int(m.group(2)) if m.group(2) else None, said)
        elif (m := _CASE.match(line)) and m.group(1) == "FAILED":
            file, number, said = first_failure or (None, None, "failed")
            out.append(Failure(m.group(2), said or "failed", file, number))
            first_failure = None
    return out


def _not_an_assertion(stdout: str, stderr: str) -> str | None:
    """A failure is a check's only inside a test gtest ends `[  FAILED  ]` (what a passing test
    printed, a `file:line: Failure` block among it, is that test's output, not gtest's report)."""
    threw = ""
    following = False
    checked = False         # the test running now printed a failed check's block
    for line in lines(stdout, stderr):
        if _RUN.match(line):
            checked = False
        elif (case := _CASE.match(line)) is not None:
            if case.group(1) == "FAILED" and checked:
                return None     # a check failed: EXPECT_*, ASSERT_*, FAIL(), ADD_FAILURE()
            checked = False
        if following and line.strip():
            following = False
            if _THREW.match(line):
                threw = threw or line.strip()
            else:
                checked = True
        if _FAILURE.match(line) or line.rstrip() == "unknown file: Failure":
            following = True
    return f"no assertion failed: {threw}" if threw else "no assertion failed: no gtest check printed a failure"


class GtestParser(Parser):
    name = "gtest"
    reports_assertions = False
    exit_meanings: Mapping[int, ExitMeaning] = {}

    def not_an_assertion(self, stdout: str, stderr: str, junit_xml: str | None = None) -> str | None:
        return _not_an_assertion(stdout, stderr)

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr, _failures)


PARSER: Parser = GtestParser()
