"""unittest's verbose output (`python -m unittest -v`, which SGLang's and CPython's suites use):
per-test lines `test_x (mod.Class.test_x) ... ok`, the `Ran N tests in 0.01s` line, and the
closing `OK` / `OK (skipped=3)` / `FAILED (failures=1, errors=2, ...)` / `NO TESTS RAN`.

How lines count: `ok` passed; `FAIL`, `ERROR` and `unexpected success` failed (unittest
itself fails the run on an unexpected success); `skipped '...'` and `expected failure`
skipped (a test that failed as expected proves nothing about the claim). A class or module
whose `setUpClass`/`setUpModule` raised SkipTest prints one `setUpClass (mod.Class) ...
skipped` line: one skipped. One whose setup raised prints a bare `ERROR` line: one failed.
Failing subtests print indented `... FAIL` lines and fail their test. A test that prints to
stderr splits its line: the status on a later line closes it.

The `Ran N` line and the result line after it close a run; without them `summary_seen` is
False. The per-test lines are the count; `Ran N` is a cross-check, and a run whose tests the
lines do not all show (a run without -v prints dots only) carries a doubt (never GREEN).
Several runs in one output add up. unittest reports on stderr: where stderr holds a whole
run, stdout is the program's own prints (a relayed child report is not this run) and is not read,
but a whole run there that FAILED (a suite logged with `2>&1 | tee`) leaves a doubt (never GREEN).
A `FAILED` result line outranks test lines that show no failure; an `OK` one over test lines
that show one (a report a test printed amid unittest's) leaves them a doubt, not failures.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import first, guarded, lines, one_line
from redfirst.verdict import Verdict

_STATUS = r"ok|FAIL|ERROR|skipped(?: '.*'| \".*\")?|expected failure|unexpected success"
_CASE = re.compile(r"^(?P<desc>\S.*?) \.\.\. ?(?P<rest>.*)$")
_SUBTEST = re.compile(rf"^\s+\S.*? \.\.\. (?P<status>{_STATUS})$")
_BARE = re.compile(rf"^(?P<status>{_STATUS})$")
_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_RESULT = re.compile(r"^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?$")
# setUpClass (mod.Class), tearDownModule (mod), ...: a class or module, not a test
_FIXTURE = re.compile(r"^(?:setUp|tearDown)(?:Class|Module) \(")

# Python 3.12+: `unittest` exits 5 when it ran no test
EXIT_MEANINGS: Mapping[int, ExitMeaning] = {5: ExitMeaning(Verdict.NO_DECISION, "unittest ran no test (exit 5)")}


def _kind(status: str) -> str:
    if status == "ok":
        return "passed"
    if status.startswith("skipped") or status == "expected failure":
        return "skipped"
    return "failed"


@dataclass
class _Run:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    tests: int = 0                   # test lines (not setUpClass and the like): `Ran N` counts these
    ran: int | None = None
    result: str | None = None
    failed_names: list[str] = field(default_factory=list)
    pending: str | None = None       # a test line whose status has not come yet
    pending_failed: bool = False     # a subtest of it failed

    def close(self, desc: str, status: str | None, failed: bool = False, fixture: bool = False) -> None:
        kind = "failed" if failed or status is None else _kind(status)
        if not (fixture or _FIXTURE.match(desc)):
            self.tests += 1
        setattr(self, kind, getattr(self, kind) + 1)
        if kind == "failed":
            self.failed_names.append(desc)

    def settle(self) -> None:
        """Close a test whose status never came: a failing subtest says how it ended, else it did not pass."""
        if self.pending is not None:
            self.close(self.pending, None, failed=True)
            self.pending, self.pending_failed = None, False


def _runs(text_lines: list[str]) -> list[_Run]:
    runs = [_Run()]
    for line in text_lines:
        run = runs[-1]
        if m := _SUBTEST.match(line):
            if run.pending is not None and _kind(m.group("status")) == "failed":
                run.pending_failed = True
        elif m := _RAN.match(line):
            run.settle()
            run.ran = int(m.group(1))
        elif (m := _RESULT.match(line)) and run.ran is not None:
            run.result = m.group(1)
            runs.append(_Run())
        elif m := _BARE.match(line):
            if run.pending is not None:
                run.close(run.pending, m.group("status"), run.pending_failed)
                run.pending, run.pending_failed = None, False
            elif _kind(m.group("status")) == "failed":
                # a class's or module's setup raised: unittest prints its status alone
                run.close("a setUpClass or setUpModule", m.group("status"), fixture=True)
        elif m := _CASE.match(line):
            run.settle()
            rest = m.group("rest")
            if re.fullmatch(_STATUS, rest):
                run.close(m.group("desc"), rest)
            else:
                run.pending = m.group("desc")     # its status comes after its own output or its subtests
    return [r for r in runs if r.ran is not None or r.tests or r.pending or r.passed or r.failed or r.skipped]


def _report(stdout: str, stderr: str) -> list[str]:
    """The lines that are unittest's report: stderr, where unittest writes it, when it holds a whole
    report (a `Ran N tests` line); else stdout then stderr (`2>&1`, a runner streaming to stdout).
    A caller may rely on: the counts and the failure reports are read from the same lines, so what
    a test printed on stdout is never read as unittest's report while stderr holds the real one."""
    own = lines(stderr)
    return own if any(_RAN.match(line) for line in own) else lines(stdout, stderr)


def _failed_elsewhere(stdout: str, stderr: str) -> str | None:
    """Why a GREEN cannot be read where `_report` leaves stdout out (stderr holds unittest's report)
    and stdout holds a whole unittest run that failed: a suite logged through `2>&1 | tee` before
    the next one, or a child suite's report a wrapper relayed. Which it is cannot be told, so it
    never counts as a pass nor as this run's failure. A caller may rely on: no output whose stdout
    shows a unittest run ending FAILED is GREEN."""
    if _report(stdout, stderr) != lines(stderr):
        return None
    failing = [run for run in _runs(lines(stdout)) if run.result == "FAILED" or (run.result and run.failed)]
    if not failing:
        return None
    names = ", ".join(first([n for run in failing for n in run.failed_names])) or "no test named"
    return (f"stdout holds a unittest run that FAILED ({names}) beside the report on stderr: another suite "
            "logged to stdout (`2>&1 | tee`) or a relayed child's report, which cannot be told apart; run each "
            "suite with its report on stderr, or as its own gate")


def _parse(stdout: str, stderr: str) -> Counts:
    runs = _runs(_report(stdout, stderr))
    if not runs:
        return Counts(summary_seen=False, notes=("no unittest output",))
    passed = failed = skipped = 0
    notes: list[str] = []
    doubts: list[str] = [found] if (found := _failed_elsewhere(stdout, stderr)) else []
    names: list[str] = []
    for run in runs:
        run.settle()
        if run.result == "OK" and run.failed:
            # unittest says OK only when no test failed: lines it closes with OK that show a failure
            # are a report a test printed where unittest's goes (a pending test cut by its `Ran` line)
            doubts.append(f"unittest's result line says OK over {run.failed} test line(s) it shows failing "
                          f"({', '.join(first(run.failed_names))}): a report a test printed amid unittest's own")
            run.failed, run.failed_names = 0, []
        if run.result == "FAILED" and run.failed == 0:
            # the result line outranks lines that show no failure
            run.failed = 1
            notes.append("FAILED with no failing test line: counted as 1 failed")
        if run.ran is not None and run.ran != run.tests:
            doubts.append(f"unittest ran {run.ran} tests, its per-test lines show {run.tests}: run "
                          "`python -m unittest -v` so each test is printed and counted")
        passed, failed, skipped = passed + run.passed, failed + run.failed, skipped + run.skipped
        names.extend(run.failed_names)
    open_runs = sum(1 for run in runs if run.result is None)
    if open_runs:
        notes.append(f"{open_runs} of {len(runs)} unittest runs printed no `Ran N tests` and result line")
    notes.extend(first(names))
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        summary_seen=open_runs == 0,
        nothing_ran=all(run.result == "NO TESTS RAN" for run in runs),
        per_case=None if doubts else passed + failed,
        doubt="; ".join(doubts) or None,
        notes=tuple(notes),
    )


# The report of each failed test: `FAIL: test (mod.Class.test)` for a failed check (the test raised
# AssertionError, unittest's failureException), `ERROR: ...` for any other exception (an ImportError).
_FAIL_BLOCK = re.compile(r"^FAIL: \S")
_ERROR_BLOCK = re.compile(r"^ERROR: \S")


def _not_an_assertion(stdout: str, stderr: str) -> str | None:
    """A `FAIL:` block of unittest's own report: on stderr where stderr holds a whole run (what a
    test printed to stdout is not unittest's), and only where the last result line (unittest's
    own, after every test's output) counts failures: `FAILED (errors=1)` is no failed check
    whatever a test printed."""
    text = lines(stderr)
    if not any(_RAN.match(line) for line in text):
        text = lines(stdout, stderr)
    results = [m for line in text if (m := _RESULT.match(line))]
    errors = [line.strip() for line in text if _ERROR_BLOCK.match(line)]
    if results and not re.search(r"\bfailures=[1-9]", results[-1].group(2) or ""):
        first_error = f" ({errors[0]})" if errors else ""
        return f"no assertion failed: unittest's result was {results[-1].group(0).strip()}{first_error}"
    if any(_FAIL_BLOCK.match(line) for line in text):
        return None
    if errors:
        return f"no assertion failed: unittest reported {errors[0]} (an exception other than AssertionError)"
    return "no assertion failed: unittest reported no FAIL"


_BLOCK = re.compile(r"^(?:FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\S+) \((?P<where>[^)]+)\)")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_RULER = re.compile(r"^(?:=+|-+)$")


def _failures(text_lines: list[str]) -> list[Failure]:
    """Each `FAIL:`/`ERROR:` report: the test's id (`mod.Class.test`), the exception line that ends
    its traceback (`AssertionError: -1 != 5 : add(2, 3) should be 5`), at the innermost frame."""
    out: list[Failure] = []
    for i, line in enumerate(text_lines):
        m = _BLOCK.match(line)
        if not m:
            continue
        where, name = m.group("where"), m.group("name")
        case_id = where if where.endswith("." + name) else f"{where}.{name}"
        frame: tuple[str | None, int | None] = (None, None)
        own: tuple[str | None, int | None] = (None, None)
        said = ""
        for body in text_lines[i + 2:i + 200]:
            if _RULER.match(body):
                break
            if f := _FRAME.match(body):
                frame = (f.group("file"), int(f.group("line")))
                if _in_module(f.group("file"), case_id):
                    own = frame
            elif body and not body[0].isspace() and not body.startswith(("Traceback", "During handling",
                                                                          "The above exception")):
                said = body
        out.append(Failure(case_id, one_line(said) or line.split(":", 1)[0], *(own if own[0] else frame)))
    return out


def _in_module(file: str, case_id: str) -> bool:
    """Whether a traceback frame's `file` is the test's own module (`pkg/test_x.py` of
    `pkg.test_x.Class.test`): the innermost such frame places a failure raised deeper, in the
    standard library or a dependency, at the test's own line."""
    parts = case_id.split(".")
    path = file.replace("\\", "/")
    return any(path == "/".join(parts[:end]) + ".py" or path.endswith("/" + "/".join(parts[:end]) + ".py")
               for end in range(len(parts) - 1, 0, -1))


class UnittestParser(Parser):
    name = "unittest"
    reports_assertions = False
    exit_meanings: Mapping[int, ExitMeaning] = EXIT_MEANINGS

    def not_an_assertion(self, stdout: str, stderr: str, junit_xml: str | None = None) -> str | None:
        return _not_an_assertion(stdout, stderr)

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr, lambda _lines: _failures(_report(stdout, stderr)))


PARSER: Parser = UnittestParser()
