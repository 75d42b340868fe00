"""pytest's closing terminal line: `=== 3 passed, 1 skipped, 2 deselected in 0.12s ===`, its `-q`
form `3 passed in 0.12s`, and `no tests ran in 0.01s`.

How the words count: `passed` passed; `failed` and `error`/`errors` failed (an error in
setup or teardown fails the run, and pytest may count one test both passed and errored);
`skipped` skipped; `xfailed` skipped, because a test that failed as expected proves
nothing about the claim; `xpassed` passed, because its body ran and held (a strict xfail
that passes is already reported as `failed` by pytest); `deselected` never ran and counts
nowhere; `warnings` and `rerun` count nowhere. Any other word that names a failure or an
error counts as failed, and the rest are ignored: an unknown word can never add to a pass.
Every session in the output counts, and they add up: a script that runs pytest twice
must not hide the first session's failure behind the second one's pass. Sessions are
told apart by pytest's `test session starts` header; within one session the last
summary line is pytest's own (a test may print pytest-like lines before it), and a
header with no summary after it (the session died) leaves `summary_seen` False. The
`FAILED id` / `ERROR id` lines of the short test summaries and the F/E of the progress lines
are a floor under the failures: `-qq` prints them but no summary line, so its session is
otherwise invisible. `-q`
prints no header, so several summary lines in one stretch cannot be told apart (two
`-q` sessions, or a test that printed one): the failures of every line count, the
passes of the last only, and `doubt` says so when the earlier lines held any. A
session with nothing executed or skipped sets `nothing_ran` when every session did
(pytest exit 5).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from redfirst.gates.parsers import Counts, ExitMeaning, Parser
from redfirst.gates.parsers._common import guarded, lines
from redfirst.verdict import Verdict

_LINE = re.compile(
    r"^=*\s*(?P<body>no tests ran|\d+ [a-z]+(?: [a-z]+)?(?:, \d+ [a-z]+(?: [a-z]+)?)*)"
    r" in [\d.]+ ?s(?:econds)?(?: \([\d:.]+\))?\s*=*$"
)
_HEADER = re.compile(r"^=+ test session starts =+$")
_SHORT_HEADER = re.compile(r"^=+ short test summary info =+$")
_SHORT_FAILED = re.compile(r"^(?:FAILED|ERROR) \S")
# progress lines: `test_x.py F.  [100%]`, `-q`'s `F.  [100%]`, `-v`'s `test_x.py::test_a FAILED  [ 50%]`
_PROGRESS = re.compile(r"^(?:\S+\.py )?([.FEsxXR]+)\s*\[\s*\d+%\]$")
_PROGRESS_VERBOSE = re.compile(r"^\S+::\S.* (?:FAILED|ERROR)\s+\[\s*\d+%\]$")
_ITEM = re.compile(r"(\d+) ([a-z]+(?: [a-z]+)?)")

# pytest's exit statuses other than 0 and 1 (tests failed)
EXIT_MEANINGS: Mapping[int, ExitMeaning] = {
    5: ExitMeaning(Verdict.NO_DECISION, "pytest selected no test (exit 5): nothing ran"),
    3: ExitMeaning(Verdict.ERROR, "pytest internal error"),
    4: ExitMeaning(Verdict.ERROR, "pytest usage error"),
    2: ExitMeaning(Verdict.RED, "pytest interrupted"),
}

_PASSED = {"passed", "xpassed"}
_FAILED = {"failed", "error", "errors"}
_SKIPPED = {"skipped", "xfailed"}
_NOWHERE = {"deselected", "warning", "warnings", "rerun", "test collected", "tests collected"}


@dataclass(frozen=True)
class _Line:
    passed: int
    failed: int
    skipped: int
    notes: tuple[str, ...]


def _read(body: str) -> _Line:
    passed = failed = skipped = 0
    notes: list[str] = []
    for count, word in _ITEM.findall(body):
        n = int(count)
        if word in _PASSED:
            passed += n
        elif word in _FAILED:
            failed += n
        elif word in _SKIPPED:
            skipped += n
        elif "fail" in word or "error" in word:
            failed += n
            notes.append(f"'{count} {word}' counted as failed")
        elif word not in _NOWHERE:
            notes.append(f"'{count} {word}' ignored")
    return _Line(passed, failed, skipped, tuple(notes))


def _stretches(text_lines: list[str]) -> list[list[_Line]]:
    """The summary lines of each stretch of the output a session header opens (and of the text before the first)."""
    stretches: list[list[_Line]] = [[]]
    for line in text_lines:
        if _HEADER.match(line):
            stretches.append([])
        elif m := _LINE.match(line):
            stretches[-1].append(_read(m.group("body")))
    # text before the first header is a session only if it printed a summary (`-q` prints no header)
    return stretches if stretches[0] else stretches[1:]


def _short_failures(text_lines: list[str]) -> int:
    """Failures the per-case lines show: the `FAILED id` / `ERROR id` lines of every short
    test summary, or the F and E of the progress lines if more (`-qq -rN` prints only those)."""
    count = progress = 0
    inside = False
    for line in text_lines:
        if m := _PROGRESS.match(line):
            progress += m.group(1).count("F") + m.group(1).count("E")
        elif _PROGRESS_VERBOSE.match(line):
            progress += 1
        if _SHORT_HEADER.match(line):
            inside = True
        elif line.startswith("="):
            inside = False
        elif inside and _SHORT_FAILED.match(line):
            count += 1
    return max(count, progress)


def report(stdout: str, stderr: str) -> str:
    """The output that holds pytest's own report: its terminal reporter writes to stdout, so where
    stdout holds a summary line, stdout alone; else both (a run that sent it elsewhere, `2>&1`
    the other way). A caller may rely on: a line a test wrote to stderr (recorded after all of
    stdout, so after pytest's summary) is not in it while stdout holds pytest's report."""
    if any(_LINE.match(line) for line in lines(stdout)):
        return stdout
    return stdout + "\n" + stderr


def failed_and_errors(stdout: str, stderr: str) -> tuple[int, int] | None:
    """pytest's own count of tests that failed in their call and of errors (set-up, teardown,
    collection), from the last summary line of each session (the lines a test printed come
    before it, or on stderr beside it: `report`); None where no session printed one. A caller
    may rely on: no line a test printed before pytest's own summary line counts here."""
    stretches: list[list[str]] = [[]]
    for line in lines(report(stdout, stderr)):
        if _HEADER.match(line):
            stretches.append([])
        elif m := _LINE.match(line):
            stretches[-1].append(m.group("body"))
    last = [found[-1] for found in stretches if found]
    if not last:
        return None
    failed = errors = 0
    for body in last:
        for count, word in _ITEM.findall(body):
            if word == "failed":
                failed += int(count)
            elif word in ("error", "errors"):
                errors += int(count)
    return failed, errors


def _parse(stdout: str, stderr: str) -> Counts:
    text_lines = lines(stdout, stderr)
    stretches = _stretches(text_lines)
    if not any(stretches):
        return Counts(summary_seen=False, notes=("no pytest summary line",))
    passed = failed = skipped = 0
    notes: list[str] = []
    doubts: list[str] = []
    ran_nothing = []
    for found in stretches:
        if not found:
            notes.append("a pytest session printed no summary")
            continue
        last, earlier = found[-1], found[:-1]
        passed, skipped = passed + last.passed, skipped + last.skipped
        failed += last.failed + sum(line.failed for line in earlier)
        notes.extend(note for line in found for note in line.notes)
        ran_nothing.append(last.passed + last.failed + last.skipped == 0)
        hidden = sum(line.passed + line.skipped for line in earlier)
        if hidden:
            doubts.append(f"{len(found)} pytest summary lines in one stretch of output, with no session header "
                          f"between them (several -q sessions, or a test printing one): {hidden} passed or skipped "
                          "of the earlier lines are not counted; run pytest without -q so each session is told apart")
    listed = _short_failures(text_lines)
    if listed > failed:
        # a session whose summary line is missing (-qq) still listed its failures: they count
        notes.append(f"{listed} failures in pytest's per-case lines (short summaries, progress), {failed} in its summary "
                     "lines: counted as failed")
        failed = listed
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        summary_seen=all(stretches),
        nothing_ran=bool(ran_nothing) and all(ran_nothing),
        doubt="; ".join(doubts) or None,
        notes=tuple(notes),
    )


class PytestParser(Parser):
    name = "pytest"
    reports_assertions = False
    exit_meanings: Mapping[int, ExitMeaning] = EXIT_MEANINGS

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr)


PARSER: Parser = PytestParser()
