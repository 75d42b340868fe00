"""`mutate sweep [--since REV | PATH... | --all]`: mutmut over the change, the paths or the
configured package; prints the survivors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from redfirst import clitools
from redfirst.mutations import sweep as sweeping
from redfirst.mutations.commands.common import Exit, gates_of, project_at, say
from redfirst.mutations.git import GitError
from redfirst.mutations.mutmut import PINNED, MutmutError
from redfirst.mutations.workspaces import WorkspaceError
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, EXIT_OK, EXIT_RED


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutate sweep", description=f"Run mutmut ({PINNED}) over the Python files "
                                "changed since REV (or every line of PATHs, or of the configured package) and "
                                "print the survivors on changed lines.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="sweep every line of the Python files under these")
    p.add_argument("--all", action="store_true", help="sweep the whole configured package (mutmut's source_paths, "
                   "else pyproject's [project] name, else lib/ or src/)")
    p.add_argument("--since", help="the base of the change (default HEAD~1)")
    p.add_argument("--root", help="the project root (default: redfirst.yaml's folder, else the git top-level)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds mutmut may run (default 3600)")
    p.add_argument("-n", "--jobs", type=int, help="mutmut's --max-children")
    clitools.add_version(p)
    return clitools.add_conventions(p)


def _stopped(args: argparse.Namespace, code: int, problem: str) -> int:
    """The sweep could not start: the problem on stderr, and --json's one document says it too."""
    if problem:
        print(problem, file=sys.stderr)
    if args.json:
        print(json.dumps({"version": 1, "exit": code, "files": [], "mutants": 0, "reused": 0, "suppressed": 0,
                          "undecided": {}, "survivors": [], "errors": [problem] if problem else []}, indent=1))
    return code


def main(argv: Sequence[str]) -> int:
    p = parser()
    try:
        args = clitools.parse_args(p, argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else 0
    chosen = [what for what, given in (("PATH", args.paths), ("--all", args.all), ("--since", args.since)) if given]
    if len(chosen) > 1:
        return _stopped(args, EXIT_ERROR, f"mutate sweep: {' and '.join(chosen)} cannot go together: "
                                          "sweep a change, paths or the configured package")
    since = args.since or "HEAD~1"
    try:
        project = project_at(args.root)
        paths = ([Path(p).absolute() for p in args.paths] if args.paths
                 else [project.root / p for p in sweeping.configured_package(project.root)] if args.all else None)
        result = sweeping.sweep(project.root, since, gates_of(project), paths=paths, timeout=args.timeout,
                                jobs=args.jobs, progress=say)
    except Exit as e:
        return _stopped(args, e.code, e.message)
    except (MutmutError, GitError, WorkspaceError, sweeping.SweepScopeError) as e:
        return _stopped(args, EXIT_ERROR, f"mutate sweep: {e}")
    undecided = dict(result.undecided)
    # A survivor is a finding (1); mutants mutmut did not decide leave the sweep undecided (3), never clean.
    code = (EXIT_NO_DECISION if not result.mutants else EXIT_RED if result.survivors
            else EXIT_NO_DECISION if undecided else EXIT_OK)
    if args.json:
        print(json.dumps({"version": 1, "exit": code, "files": list(result.files), "mutants": result.mutants,
                          "reused": result.reused, "suppressed": result.suppressed, "undecided": undecided,
                          "survivors": [s.record() for s in result.survivors]}, indent=1))
        return code
    if not result.files:
        print(f"no changed Python source files since {since}" if paths is None
              else f"no Python source files in {', '.join(str(p) for p in paths)}")
    for s in result.survivors:
        print(sweeping.describe(s))
    print(f"{result.mutants} mutants on {len(result.files)} file(s) ({result.reused} re-used from the last sweep: "
          f"unchanged functions); {len(result.survivors)} survivor(s) kept, "
          f"{result.suppressed} suppressed (off the change, same line, logging, message strings)")
    if undecided:
        listing = ", ".join(f"{status} {n}" for status, n in sorted(undecided.items()))
        print(f"NO_DECISION: {sum(undecided.values())} mutant(s) on changed lines mutmut gave no verdict on "
              f"({listing}): not kills")
    if result.survivors:
        print("turn one into a mutation file once a test kills it: mutate promote KEY")
    return code
