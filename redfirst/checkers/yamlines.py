"""redfirst.yaml as checkers reads it: the data and the line of every key, from the shared loader
(redfirst.yamlsrc), so a key written twice, a bound passed or a bad byte is refused here exactly as
in a gate file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from redfirst import yamlsrc


class YamlError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def load(text: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """The data and a map from each path (tuple of keys/indexes) to its 1-based line; YamlError
    (line and message of the first problem) for whatever yamlsrc.load_text refuses."""
    try:
        doc = yamlsrc.load_text(text, Path("redfirst.yaml"))
    except yamlsrc.YamlError as exc:
        problem = exc.problems[0]
        raise YamlError(problem.line, problem.message) from None
    return doc.data, doc.lines


def line_of(lines: dict[tuple[Any, ...], int], path: tuple[Any, ...]) -> int:
    """The line of `path`, or of its nearest ancestor that has one."""
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)
