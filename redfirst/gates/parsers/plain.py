"""The plain closing line any program can print: `N passed, N failed` alone on a line,
optionally followed by `, N skipped` and preceded by one word with a colon
(`tests: 3 passed, 0 failed`). Every such line counts and they add up: a script that runs
two programs prints two summaries, and the first one's failures must not be hidden by the
second's pass. A line with anything else on it is not a summary. No assertions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from redfirst.gates.parsers import Counts, ExitMeaning, Parser
from redfirst.gates.parsers._common import guarded, lines

_LINE = re.compile(r"^(?:[^\s:]+:\s*)?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$")


def _parse(stdout: str, stderr: str) -> Counts:
    found = [m for line in lines(stdout, stderr) if (m := _LINE.match(line.strip()))]
    if not found:
        return Counts(summary_seen=False, notes=("no `N passed, N failed` line",))
    return Counts(
        passed=sum(int(m.group(1)) for m in found),
        failed=sum(int(m.group(2)) for m in found),
        skipped=sum(int(m.group(3) or 0) for m in found),
        summary_seen=True,
        notes=(f"{len(found)} summary lines added up",) if len(found) > 1 else (),
    )


class PlainParser(Parser):
    name = "plain"
    reports_assertions = False
    exit_meanings: Mapping[int, ExitMeaning] = {}

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr)


PARSER: Parser = PlainParser()
