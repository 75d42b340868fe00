"""Table shapes, as vllm.cpp's check-agent-record.py reads them (`check_table_shapes`)."""

from __future__ import annotations

import re

from redfirst.checkers.model import Finding

_PIPE = re.compile(r"(?<!\\)\|")


def table_shapes(path: str, text: str) -> list[Finding]:
    """A `table-shape` finding at each line of a run of lines starting with `|` whose count of pipes
    (a backslash-escaped one excepted) differs from the run's first line. A caller may rely on: a
    row with a cell too many or too few is never read silently (a markdown parser pads or cuts it
    to its header)."""
    findings: list[Finding] = []
    expected: int | None = None
    for number, line in enumerate(text.split("\n"), 1):
        if not line.startswith("|"):
            expected = None
            continue
        pipes = len(_PIPE.findall(line))
        if expected is None:
            expected = pipes
        elif pipes != expected:
            findings.append(Finding(path, number, "table-shape",
                                    f"table line has {pipes} pipes; its table's first line has {expected}: "
                                    f"give every row the header's cells (escape a pipe inside a cell as \\|)"))
    return findings
