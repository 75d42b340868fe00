"""CTest's console output: per-test result lines, the `N% tests passed, K tests failed out of M`
summary, `No tests were found!!!`, and `Total Tests: N` of `ctest -N` (`enumerated`).

Counts come from the per-test lines, because CTest's own summary counts a skipped test
(SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION) as passed: `Passed` is passed; `***Skipped`
and `***Not Run (Disabled)` are skipped; every other status (`***Failed`, `***Exception:
SegFault`, `***Timeout`, `***Not Run`, any status not known here) is failed. The summary
closes a run: without it `summary_seen` is False; failures it names beyond the per-test
lines, and tests it counts that no line shows, are counted as failed. A run whose summary
counts tests but that printed no per-test line at all is an aggregate alone: its counts
carry a doubt (never GREEN). `per_case` is the executed tests the per-test lines show.

Assertions: the output CTest shows of each test (its lines prefixed `N: ` under `-V`/`-VV`,
interleaved under `-j`; else the block after a failed test's result line, which
`--output-on-failure` prints) is read by the doctest and Catch2 parsers, and the counts of
each summary they find add up. A test that printed no such summary (a plain program, a
crash before it, a passing test's output CTest did not show) adds none: the total is a lower
bound, None when no test showed one, and a declared `assertions:` floor then has no evidence.
GoogleTest prints no assertion count, so its binaries add none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import first, guarded, lines, one_line

_START = re.compile(r"^Test project ")
_CASE = re.compile(r"^\s*\d+/\d+\s+Test\s+#\d+: (.+?) \.*\s*(\S.*?)\s+[\d.]+ sec$")
_SUMMARY = re.compile(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)$")
_NOTHING = re.compile(r"^No tests were found!!!$")
_DID_NOT_RUN = re.compile(r"^The following tests did not run:$")
_LISTED = re.compile(r"^\s+\d+ - .+ \((.+)\)$")
_TOTAL_TESTS = re.compile(r"^Total Tests: (\d+)$")
_OUTPUT_LINE = re.compile(r"^(\d+):(?: (.*))?$")      # `ctest -V`: a line of test N's own output
_STARTING = re.compile(r"^\s+Start\s+\d+: ")
# the frameworks whose per-test summaries count assertions, tried in turn on each test's output
_COUNTING = ("doctest", "catch2")


@dataclass
class _Run:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    summary: tuple[int, int] | None = None  # (failed, out of)
    skipped_listed: int = 0  # `(Skipped)` entries of "The following tests did not run:"
    nothing: bool = False
    failed_names: list[str] = field(default_factory=list)


def _status(status: str) -> str:
    if status == "Passed":
        return "passed"
    if status.startswith(("***Skipped", "***Not Run (Disabled)")):
        return "skipped"
    return "failed"


def _runs(text_lines: list[str]) -> list[_Run]:
    runs: list[_Run] = []
    run: _Run | None = None
    in_did_not_run = False
    for line in text_lines:
        if _START.match(line) or run is None:
            run = _Run()
            runs.append(run)
            in_did_not_run = False
            if _START.match(line):
                continue
        if m := _CASE.match(line):
            kind = _status(m.group(2))
            if kind == "passed":
                run.passed += 1
            elif kind == "skipped":
                run.skipped += 1
            else:
                run.failed += 1
                run.failed_names.append(m.group(1))
        elif m := _SUMMARY.match(line):
            run.summary = (int(m.group(1)), int(m.group(2)))
        elif _NOTHING.match(line):
            run.nothing = True
        elif _DID_NOT_RUN.match(line):
            in_did_not_run = True
        elif in_did_not_run and (m := _LISTED.match(line)):
            run.skipped_listed += m.group(1) == "Skipped"
        elif line.strip():
            in_did_not_run = False
    # lines before any `Test project` line are no run unless they hold results
    return [r for r in runs if r.summary or r.nothing or r.passed or r.failed or r.skipped]


def _test_outputs(text_lines: list[str]) -> list[list[str]]:
    """The output of each test as CTest showed it: by test number under -V (the last attempt
    where --repeat ran it again, as its result is), else the blocks after failed tests' result
    lines (--output-on-failure); never both, so none counts twice."""
    numbered: dict[tuple[int, str], list[str]] = {}   # (ctest run, test number) -> its last attempt's output
    blocks: list[list[str]] = []
    block: list[str] | None = None
    run = 0
    for line in text_lines:
        if m := _OUTPUT_LINE.match(line):
            text = m.group(2) or ""
            if text.startswith("Test command: "):
                numbered[(run, m.group(1))] = []  # an attempt begins (--repeat): only the last one counts
            numbered.setdefault((run, m.group(1)), []).append(text)
            continue
        if _START.match(line):
            run += 1
        if m := _CASE.match(line):
            block = [] if _status(m.group(2)) == "failed" else None
            if block is not None:
                blocks.append(block)
        elif _STARTING.match(line) or _SUMMARY.match(line) or _START.match(line):
            block = None
        elif block is not None:
            block.append(line)
    return list(numbered.values()) if numbered else blocks


def _assertions(text_lines: list[str]) -> tuple[int | None, int | None]:
    """(assertions, failed assertions) over the tests' framework summaries; None when none showed one."""
    from redfirst.gates.parsers import get

    total = failed = 0
    seen = False
    for output in _test_outputs(text_lines):
        text = "\n".join(output)
        for name in _COUNTING:
            counts = get(name).parse(text, "")
            if counts.summary_seen and counts.assertions is not None:
                seen = True
                total += counts.assertions
                failed += counts.assertions_failed or 0
                break
    return (total, failed) if seen else (None, None)


def _parse(stdout: str, stderr: str) -> Counts:
    passed = failed = skipped = 0
    notes: list[str] = []
    doubts: list[str] = []
    names: list[str] = []
    text_lines = lines(stdout, stderr)
    runs = _runs(text_lines)
    assertions, assertions_failed = _assertions(text_lines)
    per_case = sum(run.passed + run.failed for run in runs)
    for run in runs:
        names.extend(run.failed_names)
        bad = run.failed
        shown = run.passed + run.failed + run.skipped
        if run.summary is not None:
            summary_failed, out_of = run.summary
            if shown == 0:
                # no per-test lines: trust the summary only as far as it can be read
                run.skipped = run.skipped_listed
                run.passed = max(out_of - summary_failed - run.skipped_listed, 0)
                notes.append("no per-test lines: counts read from the CTest summary")
                if out_of:
                    doubts.append(f"CTest's summary counts {out_of} tests but no per-test line shows one: its "
                                  "summary alone counts a skipped test as passed")
            bad = max(bad, summary_failed)
            unaccounted = out_of - run.passed - bad - run.skipped
            if shown and unaccounted > 0:
                notes.append(f"{unaccounted} of {out_of} tests have no result line: counted as failed")
                bad += unaccounted
        passed, failed, skipped = passed + run.passed, failed + bad, skipped + run.skipped
    open_runs = sum(1 for run in runs if run.summary is None and not run.nothing)
    if open_runs:
        notes.append(f"{open_runs} of {len(runs)} CTest runs printed no summary")
    if names:
        notes.extend(first(names))
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        assertions=assertions,
        assertions_failed=assertions_failed,
        summary_seen=bool(runs) and open_runs == 0,
        nothing_ran=bool(runs) and all(run.nothing for run in runs),
        per_case=None if doubts else per_case,
        doubt="; ".join(doubts) or None,
        notes=tuple(notes),
    )


def enumerated(stdout: str) -> int | None:
    """The number of tests `ctest -N` listed (`Total Tests: N`), or None when it printed no total."""
    try:
        totals = [int(m.group(1)) for line in lines(stdout) if (m := _TOTAL_TESTS.match(line))]
    except Exception:  # never raise on garbage, like every parser
        return None
    return sum(totals) if totals else None


def _failures(text_lines: list[str]) -> list[Failure]:
    """Each failed test's result line (`3/7 Test #3: fail_exit ....***Failed  0.00 sec`): its name and
    its status (`Failed`, `Exception: SegFault`, `Not Run`), with the first line the test printed
    where `--output-on-failure` shows it under the result line; CTest prints no place."""
    out = []
    for i, line in enumerate(text_lines):
        if (m := _CASE.match(line)) and _status(m.group(2)) == "failed":
            said = next((t for t in text_lines[i + 1:i + 20] if t.strip()), "")
            ended = not said or _STARTING.match(said) or _CASE.match(said) or _SUMMARY.match(said)
            status = m.group(2).lstrip("*")
            out.append(Failure(m.group(1), one_line(status if ended else f"{status}: {said.strip()}")))
    return out


class CtestParser(Parser):
    name = "ctest"
    reports_assertions = False      # no implicit floor: a plain test program counts none
    assertions_when_declared = True  # a declared floor reads the frameworks' counts (module doc)
    exit_meanings: Mapping[int, ExitMeaning] = {}

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr, _failures)

    def enumerate_argv(self, run: str | Sequence[str]) -> list[str] | None:
        # `ctest -N` lists the selection; a shell line or a wrapper script is not known to be ctest
        if isinstance(run, str) or not run or os.path.basename(run[0]) != "ctest":
            return None
        return [*run, "-N"]

    def enumerated(self, stdout: str) -> int | None:
        return enumerated(stdout)


PARSER: Parser = CtestParser()
