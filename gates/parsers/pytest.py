"""pytest's closing terminal line: `=== 3 passed, 1 skipped, 2 deselected in 0.12s ===`, its `-q`
form `3 passed in 0.12s`, and `no tests ran in 0.01s`.

How the words count: `passed` passed; `failed` and `error`/`errors` failed (an error in
setup or teardown fails the run, and pytest may count one test both passed and errored);
`skipped` skipped; `xfailed` skipped, because a test that failed as expected proves
nothing about the claim; `xpassed` passed, because its body ran and held (a strict xfail
that passes is already reported as `failed` by pytest); `deselected` never ran and counts
nowhere; `warnings` and `rerun` count nowhere. Any other word that names a failure or an
error counts as failed, and the rest are ignored: an unknown word can never add to a pass.
The last such line of the output is pytest's own (a test may print pytest-like lines
before it); a line with nothing executed or skipped sets `nothing_ran` (pytest exit 5).
"""

from __future__ import annotations

import re

from gates.parsers import Counts, Parser
from gates.parsers._common import guarded, lines

_LINE = re.compile(
    r"^=*\s*(?P<body>no tests ran|\d+ [a-z]+(?: [a-z]+)?(?:, \d+ [a-z]+(?: [a-z]+)?)*)"
    r" in [\d.]+ ?s(?:econds)?(?: \([\d:.]+\))?\s*=*$"
)
_ITEM = re.compile(r"(\d+) ([a-z]+(?: [a-z]+)?)")

_PASSED = {"passed", "xpassed"}
_FAILED = {"failed", "error", "errors"}
_SKIPPED = {"skipped", "xfailed"}
_NOWHERE = {"deselected", "warning", "warnings", "rerun", "test collected", "tests collected"}


def _parse(stdout: str, stderr: str) -> Counts:
    last = None
    for line in lines(stdout, stderr):
        if m := _LINE.match(line):
            last = m
    if last is None:
        return Counts(summary_seen=False, notes=("no pytest summary line",))
    passed = failed = skipped = 0
    notes: list[str] = []
    for count, word in _ITEM.findall(last.group("body")):
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
    return Counts(
        passed=passed,
        failed=failed,
        skipped=skipped,
        summary_seen=True,
        nothing_ran=passed + failed + skipped == 0,
        notes=tuple(notes),
    )


class PytestParser:
    name = "pytest"
    reports_assertions = False

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr)


PARSER: Parser = PytestParser()
