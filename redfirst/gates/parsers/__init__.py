"""Output parsers: one module per test framework, one small Protocol, one registry.

A parser reads what a real framework printed and returns `Counts`. It never decides a
verdict: grading (redfirst.gates.grade) does that, after the exit status and signals.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from redfirst.verdict import Cause, Verdict


@dataclass(frozen=True)
class Failure:
    """One failed case as the framework's output shows it: its id, its first failure line (the
    assertion message, or the exception's type and message), and where it failed when the output
    says (a path as the framework printed it, relative to the gate's `cwd`, and a line)."""

    id: str
    message: str
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Counts:
    """What the framework's own output says ran.

    `summary_seen` is False when the output holds no closing summary (truncated by a
    crash, or not this framework's output): counts are then what was seen, and a
    caller must not read the absence of failures as a pass.
    """

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    assertions: int | None = None         # None: this format does not report assertions
    assertions_failed: int | None = None
    summary_seen: bool = False
    nothing_ran: bool = False             # the runner said so itself ("No tests were found")
    # executed cases as per-case lines show them; None when the output holds none
    per_case: int | None = None
    # why these counts cannot decide (an aggregate the per-case lines contradict): never GREEN
    doubt: str | None = None
    notes: tuple[str, ...] = ()           # e.g. names of failed cases, first few
    # the failed cases the output shows, in its order, the first MAX_FAILURES at most
    # (redfirst.gates.parsers._common.MAX_FAILURES); `failed` says how many there were
    failures: tuple[Failure, ...] = ()

    @property
    def executed(self) -> int:
        # Rule 3: skipped and deselected cases are not executed.
        return self.passed + self.failed


@dataclass(frozen=True)
class ExitMeaning:
    """What a runner's exit status says when it is not "a test failed": the grader reads it
    before counting (DESIGN section 1, step 3)."""

    verdict: Verdict      # NO_DECISION (nothing ran), ERROR (the runner's usage), or RED (a red with this note)
    text: str
    # a RED's cause where the output holds no summary of tests run (meson's 125: its rebuild failed), else exit
    cause: Cause | None = None


class Parser(Protocol):
    """A parser class subclasses this Protocol, so the methods with a body are its defaults."""

    # the value of `format:` that selects this parser
    name: str
    # whether this framework reports assertion counts (doctest, Catch2 do): the implicit
    # floor `assertions >= 1` then applies
    reports_assertions: bool
    # the runner's exit statuses other than 0 and "a test failed", by status
    exit_meanings: Mapping[int, ExitMeaning]
    # arguments the `command` driver hands the gate's program so the framework lists each case it
    # executes (doctest: --dt-duration=true); () where its output does without
    per_case_args: tuple[str, ...] = ()

    # Counts from the raw stdout and stderr of one run; `junit_xml` is the JUnit report
    # text when the driver produced one, else None.
    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts: ...

    def enumerate_argv(self, run: str | Sequence[str]) -> list[str] | None:
        """The command that lists the tests `run` selects without running them, run after it and
        kept as the record's enumeration; None where this format has none."""
        return None

    def enumerated(self, stdout: str) -> int | None:
        """How many tests the enumeration listed; None when its output says no total."""
        return None

    def run_doubt(self, run: str | Sequence[str], counts: Counts) -> str | None:
        """Why `counts` cannot be trusted for a run of the command line `run`, else None."""
        return None

    def not_an_assertion(self, stdout: str, stderr: str, junit_xml: str | None = None) -> str | None:
        """None when at least one failed case of this output failed on a check (an assertion);
        else why its failures are no failed check (the cases threw, crashed or errored, the run
        bailed out, or this format cannot tell a failed check from a crash). Read by `gates
        red-first` (redfirst.gates.redfirst_cmd.assertion_red) for every format but pytest's."""
        if self.reports_assertions:
            if self.parse(stdout, stderr, junit_xml).assertions_failed:
                return None
            return "no assertion failed: a case that threw or crashed (a missing file or attribute) is not an assertion failing"
        return (f"no assertion failed that `{self.name}` output can show: it cannot tell a failed check from a "
                "test that threw or crashed (use the test framework's own format)")


# format name -> module under redfirst.gates.parsers defining `PARSER`
REGISTRY: dict[str, str] = {
    "doctest": "doctest",
    "catch2": "catch2",
    "gtest": "gtest",
    "ctest": "ctest",
    "pytest": "pytest",
    "junit": "junit",
    "tap": "tap",
    "plain": "plain",
    "unittest": "unittest",
    "meson": "meson",
}

FORMATS = (*REGISTRY, "none")


def get(name: str) -> Parser:
    """The parser for `format: name`; KeyError for an unknown or `none` format."""
    module = importlib.import_module(f"redfirst.gates.parsers.{REGISTRY[name]}")
    parser: Parser = module.PARSER
    return parser
