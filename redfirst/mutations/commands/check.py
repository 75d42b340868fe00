"""`mutate check [FILES|IDS]`: validate mutation files and their anchors; runs nothing."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from redfirst import clitools
from redfirst.mutations.anchor import AnchorError, apply_anchor
from redfirst.mutations.commands.common import Exit, gates_of, project_at
from redfirst.mutations.loader import MutationFileError
from redfirst.mutations.selection import UsageError, check_against_gates, select
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, EXIT_OK, Cause, Verdict


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutate check", description="Validate mutation files (schema, gates, "
                                "anchors) without running anything.")
    p.add_argument("targets", nargs="*", help="mutation files, folders or ids (default: the mutations folder)")
    p.add_argument("--root", help="the project root (default: redfirst.yaml's folder, else the git top-level)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout (gates schema --output)")
    clitools.add_version(p)
    return clitools.add_conventions(p)


def main(argv: Sequence[str]) -> int:
    p = parser()
    try:
        args = clitools.parse_args(p, argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else 0
    try:
        project = project_at(args.root)
        mutations = select(project, args.targets, Path(os.getcwd()))
        check_against_gates(mutations, gates_of(project))
    except Exit as e:
        return _stopped(args, e.code, [e.message] if e.message else [])
    except UsageError as e:
        return _stopped(args, EXIT_ERROR, [f"mutate: {e}"])
    except MutationFileError as e:
        return _stopped(args, EXIT_ERROR, list(e.problems))
    problems = []
    items = []
    for m in mutations:
        target = project.root / m.file
        problem = ""
        if not target.is_file():
            problem = f"file not found: {m.file}"
        else:
            try:
                apply_anchor(target.read_bytes().decode("utf-8", errors="surrogateescape"), m.anchor, m.replace,
                             m.occurrence)
            except AnchorError as e:
                problem = f"{m.file}: {e}"
        if problem:
            problems.append(f"{m.source}: mutation {m.id}: {problem}")
        verdict, cause = (Verdict.ERROR, Cause.CONFIG) if problem else (Verdict.GREEN, None)
        items.append(clitools.item(m.id, "mutation-file", verdict, problem or "valid", cause, source=str(m.source)))
    code = EXIT_ERROR if problems else EXIT_OK if mutations else EXIT_NO_DECISION
    if args.json:
        print(clitools.listing("mutate check", code, items))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return code
    if not args.json:
        print(f"{len(mutations)} mutation(s) OK")
    return code


def _stopped(args: argparse.Namespace, code: int, problems: list[str]) -> int:
    """Nothing could be checked: the problems on stderr, and --json's one document says them too."""
    if problems:
        print("\n".join(problems), file=sys.stderr)
    if args.json:
        print(clitools.listing("mutate check", code, [], errors=problems))
    return code
