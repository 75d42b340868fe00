"""The plain closing line any program can print: `N passed, N failed` alone on a line,
optionally followed by `, N skipped` and preceded by one word with a colon
(`tests: 3 passed, 0 failed`). The last such line of the output counts (stdout, then
stderr); a line with anything else on it is not the summary. No assertions.
"""

from __future__ import annotations

import re

from gates.parsers import Counts, Parser
from gates.parsers._common import guarded, lines

_LINE = re.compile(r"^(?:[^\s:]+:\s*)?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$")


def _parse(stdout: str, stderr: str) -> Counts:
    last = None
    for line in lines(stdout, stderr):
        if m := _LINE.match(line.strip()):
            last = m
    if last is None:
        return Counts(summary_seen=False, notes=("no `N passed, N failed` line",))
    return Counts(
        passed=int(last.group(1)),
        failed=int(last.group(2)),
        skipped=int(last.group(3) or 0),
        summary_seen=True,
    )


class PlainParser:
    name = "plain"
    reports_assertions = False

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr)


PARSER: Parser = PlainParser()
