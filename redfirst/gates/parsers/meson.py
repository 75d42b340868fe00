"""`meson test` console output (Debian's meson): per-test lines `1/3 suite / name  OK  0.01s`,
the closing summary block (`Ok:`, `Expected Fail:`, `Fail:`, `Unexpected Pass:`, `Skipped:`,
`Timeout:`), and `No tests defined.` / `No suitable tests defined.`.

How results count: `OK` passed; `FAIL`, `ERROR`, `INTERRUPT`, `TIMEOUT` and `UNEXPECTEDPASS`
failed (meson fails the run on each); `SKIP` and `EXPECTEDFAIL` skipped (a test that failed
as expected proves nothing about the claim). The per-test lines are the count and the
summary block closes a run: without the whole block `summary_seen` is False. Failures the
summary counts beyond the lines, and tests it counts that no line shows, are counted as
failed; a summary with no per-test line at all is an aggregate alone and carries a doubt
(never GREEN). Several runs in one output add up. A test's own output, which `-v` and the
error logs show between a scissors line and a rule, is not read: it may relay another report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import first, guarded, lines, one_line
from redfirst.verdict import Cause, Verdict

_CASE = re.compile(r"^\s*\d+/\d+ (?P<name>.+?)\s+(?P<res>OK|FAIL|ERROR|INTERRUPT|TIMEOUT|SKIP|EXPECTEDFAIL|"
                   r"UNEXPECTEDPASS)\s+[\d.]+s(?:\s.*)?$")
_SUMMARY = ("Ok", "Expected Fail", "Fail", "Unexpected Pass", "Skipped", "Timeout")
_SUMMARY_LINE = re.compile(r"^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):\s+(\d+)$")
_NOTHING = re.compile(r"^No (?:suitable )?tests defined\.$")
# `meson test -v` and its error logs show a test's own output between a scissors line and a rule
_CUT_START = re.compile(r"^(?:\u2015+ \u2700\s+\u2015+|-+ 8< -+)$")
_CUT_END = re.compile(r"^(?:\u2015+|-+)$")

# `meson test` exits with the number of failed tests; these statuses mean something else
EXIT_MEANINGS: Mapping[int, ExitMeaning] = {
    125: ExitMeaning(Verdict.RED, "meson's rebuild before the tests failed", Cause.BUILD),
}


def _kind(res: str) -> str:
    if res == "OK":
        return "passed"
    if res in ("SKIP", "EXPECTEDFAIL"):
        return "skipped"
    return "failed"


@dataclass
class _Run:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    summary: dict[str, int] = field(default_factory=dict)
    nothing: bool = False
    failed_names: list[str] = field(default_factory=list)

    def closed(self) -> bool:
        return self.nothing or set(self.summary) == set(_SUMMARY)


def _runs(text_lines: list[str]) -> list[_Run]:
    runs = [_Run()]
    inside = False                   # within a test's own output: what it prints is not meson's
    for line in text_lines:
        if inside or _CUT_START.match(line):
            inside = not _CUT_END.match(line)
            continue
        run = runs[-1]
        if run.closed():
            run = _Run()
            runs.append(run)
        if m := _CASE.match(line):
            kind = _kind(m.group("res"))
            setattr(run, kind, getattr(run, kind) + 1)
            if kind == "failed":
                run.failed_names.append(m.group("name"))
        elif m := _SUMMARY_LINE.match(line):
            run.summary[m.group(1)] = int(m.group(2))
        elif _NOTHING.match(line):
            run.nothing = True
    return [r for r in runs if r.summary or r.nothing or r.passed or r.failed or r.skipped]


def _parse(stdout: str, stderr: str) -> Counts:
    runs = _runs(lines(stdout, stderr))
    if not runs:
        return Counts(summary_seen=False, notes=("no meson test output",))
    passed = failed = skipped = 0
    notes: list[str] = []
    doubts: list[str] = []
    names: list[str] = []
    for run in runs:
        names.extend(run.failed_names)
        shown = run.passed + run.failed + run.skipped
        bad = run.failed
        if run.closed() and not run.nothing:
            s = run.summary
            total = sum(s.values())
            if shown == 0 and total:
                doubts.append(f"meson's summary counts {total} tests but no per-test line shows one")
            bad = max(bad, s["Fail"] + s["Unexpected Pass"] + s["Timeout"])
            unaccounted = total - run.passed - bad - run.skipped
            if unaccounted > 0:
                notes.append(f"{unaccounted} of {total} tests have no result line: counted as failed")
                bad += unaccounted
        passed, failed, skipped = passed + run.passed, failed + bad, skipped + run.skipped
    open_runs = sum(1 for run in runs if not run.closed())
    if open_runs:
        notes.append(f"{open_runs} of {len(runs)} meson test runs printed no summary")
    notes.extend(first(names))
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        summary_seen=open_runs == 0,
        nothing_ran=all(run.nothing for run in runs),
        per_case=None if doubts else passed + failed,
        doubt="; ".join(doubts) or None,
        notes=tuple(notes),
    )


def _failures(text_lines: list[str]) -> list[Failure]:
    """Each failed test's result line (`1/3 tiny:bad / fails   FAIL   0.54s   exit status 1`): its name,
    and its result with what meson says of it (`FAIL exit status 1`); meson prints no place."""
    out = []
    for line in text_lines:
        if (m := _CASE.match(line)) and _kind(m.group("res")) == "failed":
            said = line[m.end("res"):].split(None, 1)
            out.append(Failure(m.group("name"), one_line(" ".join([m.group("res"), *said[1:]]))))
    return out


class MesonParser(Parser):
    name = "meson"
    reports_assertions = False
    exit_meanings: Mapping[int, ExitMeaning] = EXIT_MEANINGS

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr, _failures)


PARSER: Parser = MesonParser()
