"""What every subcommand does first: find the project, repair what a killed run left,
load gates and mutation files, turning bad input into messages with exit 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redfirst.gates.config import Project, load_project
from redfirst.gates.model import Gate
from redfirst.mutations.workspaces import recover
from redfirst.verdict import EXIT_ERROR
from redfirst.yamlsrc import YamlError


class Exit(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def say(line: str) -> None:
    print(f"mutate: {line}", file=sys.stderr, flush=True)


def project_at(root: str | None) -> Project:
    try:
        project = load_project(Path(root) if root else None, Path(os.getcwd()))
    except YamlError as e:
        raise Exit(EXIT_ERROR, "\n".join(map(str, e.problems))) from None
    # Before anything else: whatever a killed run left mutated is restored (sha256 verified).
    try:
        for line in recover(project.root):
            say(line)
    except Exception as e:   # a damaged journal must stop the run, with the reason
        raise Exit(EXIT_ERROR, f"recovery failed: {e}") from None
    return project


def gates_of(project: Project) -> dict[str, Gate]:
    from redfirst.gates.api import LoadError, load_gates

    try:
        return {g.id: g for g in load_gates(project.root)}
    except LoadError as e:
        raise Exit(EXIT_ERROR, "\n".join(e.problems)) from None


def write_reports(args: Any, title: str, doc: Mapping[str, Any], results: Sequence[Any], root: Path,
                  places: Mapping[str, Any] | None = None) -> str:
    """Write a command's `--junit`, `--sarif` and `--html` reports of `doc` (`results`: the
    mutations it reports, for the HTML page's source view under `root`; `places`: the SARIF rule
    and column of an item, report.SarifPlace by id); "" when written, else why one was not (the
    caller says so and exits 2)."""
    from redfirst.mutations import report

    if args.junit:
        try:
            report.write_junit(args.junit, doc)
        except OSError as e:
            return f"cannot write the JUnit report {args.junit}: {e.strerror or e}"
    if getattr(args, "sarif", None):
        try:
            report.write_sarif(args.sarif, doc, places or {})
        except OSError as e:
            return f"cannot write the SARIF report {args.sarif}: {e.strerror or e}"
    if args.html:
        from redfirst.mutations import html_page

        return html_page.write(args.html, title, doc, results, root)
    return ""

