"""`mutate check [FILES|IDS]`: validate mutation files and their anchors; runs nothing."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gates.verdict import EXIT_ERROR, EXIT_OK
from mutations.anchor import AnchorError, apply_anchor
from mutations.commands.common import Exit, gates_of, project_at
from mutations.loader import MutationFileError
from mutations.selection import UsageError, check_against_gates, select


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="mutate check", description="Validate mutation files (schema, gates, "
                                "anchors) without running anything.")
    p.add_argument("targets", nargs="*")
    p.add_argument("--root")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else 0
    try:
        project = project_at(args.root)
        mutations = select(project, args.targets, Path(os.getcwd()))
        check_against_gates(mutations, gates_of(project))
    except Exit as e:
        print(e.message, file=sys.stderr)
        return e.code
    except UsageError as e:
        print(f"mutate: {e}", file=sys.stderr)
        return EXIT_ERROR
    except MutationFileError as e:
        print("\n".join(e.problems), file=sys.stderr)
        return EXIT_ERROR
    problems = []
    for m in mutations:
        target = project.root / m.file
        if not target.is_file():
            problems.append(f"{m.source}: mutation {m.id}: file not found: {m.file}")
            continue
        try:
            apply_anchor(target.read_bytes().decode("utf-8", errors="surrogateescape"), m.anchor, m.replace,
                         m.occurrence)
        except AnchorError as e:
            problems.append(f"{m.source}: mutation {m.id}: {m.file}: {e}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return EXIT_ERROR
    print(f"{len(mutations)} mutation(s) OK")
    return EXIT_OK
