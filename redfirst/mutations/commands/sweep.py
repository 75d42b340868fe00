"""`mutate sweep [--since REV | PATH... | --all]`: mutmut over the Python of the change, the
paths or the configured package; tree-sitter's mutants over the C, C++ and CUDA of the change or
the paths (redfirst.mutations.cxx_sweep); prints the survivors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from redfirst import clitools
from redfirst.gates.github import publish_document
from redfirst.mutations import cxx_mutants, cxx_sweep, report
from redfirst.mutations import sweep as sweeping
from redfirst.mutations.commands.common import Exit, gates_of, project_at, say, write_reports
from redfirst.mutations.git import GitError
from redfirst.mutations.mutmut import PINNED, MutmutError
from redfirst.mutations.workspaces import WorkspaceError
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, EXIT_OK, EXIT_RED, MutationOutcome, exit_code


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutate sweep", description=f"Run mutmut ({PINNED}) over the Python files, and tree-sitter mutants over the C, C++ and CUDA files, "
                                "changed since REV (or every line of PATHs, or of the configured package) and "
                                "print the survivors on changed lines.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="sweep every line of these instead of a change: Python "
                   "files or folders (mutmut), C, C++ or CUDA files (tree-sitter's mutants)")
    p.add_argument("--all", action="store_true", help="sweep the whole configured package (mutmut's source_paths, "
                   "else pyproject's [project] name, else lib/ or src/)")
    p.add_argument("--since", help="the base of the change (default HEAD~1)")
    p.add_argument("--root", help="the project root (default: redfirst.yaml's folder, else the git top-level)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds mutmut may run (default 3600)")
    p.add_argument("-n", "--jobs", type=int, help="mutmut's --max-children; the C/C++ engine's workers")
    p.add_argument("--junit", type=Path, help="write the C/C++/CUDA mutants' JUnit XML report")
    p.add_argument("--html", type=Path, help="write the C/C++/CUDA mutants' HTML page")
    p.add_argument("--sarif", type=Path, help="write the C/C++/CUDA survivors as SARIF 2.1.0 (GitHub code scanning): "
                   "one warning each at file:line:col, its rule the operator")
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
        gates = gates_of(project)
        cxx_changed: Mapping[str, set[int] | None] = {}
        paths: list[Path] | None = None
        if args.paths:
            c_like = [p for p in args.paths if cxx_mutants.is_source(p)]
            cxx_changed = _given(project.root, c_like) if c_like else {}
            paths = [Path(p).absolute() for p in args.paths if p not in c_like]
            result = sweeping.sweep(project.root, since, gates, paths=paths, timeout=args.timeout,
                                    jobs=args.jobs, progress=say) if paths else sweeping.SweepResult((), 0, (), 0)
        elif args.all:
            paths = [project.root / p for p in sweeping.configured_package(project.root)]
            result = sweeping.sweep(project.root, since, gates, paths=paths, timeout=args.timeout, jobs=args.jobs,
                                    progress=say)
        else:
            try:
                cxx_changed = sweeping.changed_lines(project.root, since, cxx_mutants.is_source)
            except GitError:        # the Python sweep says what is wrong, as it always did (mutmut first)
                cxx_changed = {}
            # mutmut only where Python changed, or nothing C-like did (its own "no changed files")
            python = not cxx_changed or bool(sweeping.changed_lines(project.root, since))
            result = sweeping.sweep(project.root, since, gates, timeout=args.timeout, jobs=args.jobs,
                                    progress=say) if python else sweeping.SweepResult((), 0, (), 0)
        cxx = cxx_sweep.sweep_cxx(project.root, cxx_changed, gates, jobs=args.jobs or 1,
                                  progress=say) if cxx_changed else None
    except Exit as e:
        return _stopped(args, e.code, e.message)
    except (MutmutError, GitError, WorkspaceError, sweeping.SweepScopeError, cxx_mutants.ParseError) as e:
        return _stopped(args, EXIT_ERROR, f"mutate sweep: {e}")
    if cxx is not None:
        return _cxx_report(args, project.root, result, cxx)
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


def _given(root: Path, paths: Sequence[str]) -> dict[str, set[int] | None]:
    """The given C, C++ or CUDA files, relative to the root, every line of each."""
    found: dict[str, set[int] | None] = {}
    for p in paths:
        path = (Path.cwd() / p).resolve()
        rel = path.relative_to(root.resolve()).as_posix() if path.is_relative_to(root.resolve()) else None
        if rel is None or not path.is_file():
            raise Exit(EXIT_ERROR, f"mutate sweep: {p}: no such file under the project root {root}")
        if not cxx_mutants.is_source(rel):
            raise Exit(EXIT_ERROR, f"mutate sweep: {p}: not a C, C++ or CUDA source "
                                   f"({' '.join(sorted(cxx_mutants.SUFFIXES))})")
        if not sweeping.mutable_place(rel):
            raise Exit(EXIT_ERROR, f"mutate sweep: {p}: a test file, not source (or mutmut's mutants/): "
                                   "a sweep mutates the code its tests check")
        found[rel] = None
    return found


def _cxx_report(args: argparse.Namespace, root: Path, result: sweeping.SweepResult, cxx: cxx_sweep.CxxResult) -> int:
    """The C/C++/CUDA findings (with the Python sweep's, where it ran) as text or --json, and the
    --junit, --html and GitHub reports of the C/C++/CUDA mutants. The exit, ranked as ever: 2
    for an ERROR, else 1 for a survivor of either, else 3 for a DISCARDED mutant or one mutmut
    left undecided, else 0; EQUIVALENT and DUPLICATE mutants are counted, never a reason to exit 3 (no test could
    tell them apart from the original or from a mutant graded already)."""
    sweeping.store(root, sweeping.SweepResult(result.files, result.mutants, (
        *result.survivors, *(f.survivor() for f in cxx.survivors)), result.suppressed))
    graded = [f.outcome for f in cxx.findings
              if f.outcome not in (MutationOutcome.EQUIVALENT, MutationOutcome.DUPLICATE)]
    code = exit_code([*graded, *(MutationOutcome.SURVIVED for _ in result.survivors),
                      *(MutationOutcome.DISCARDED for _ in result.undecided)], allow_no_decision=False) \
        if graded or result.survivors or result.undecided else (EXIT_OK if cxx.findings else EXIT_NO_DECISION)
    doc = report.document([f.result for f in cxx.findings], code)
    publish_document(doc, root=str(root))
    places = {f.result.mutation.id: report.SarifPlace(f.mutant.operator, f.mutant.col, (
        f"A mutant survived: {cxx_mutants.operator_text(f.mutant.operator)} [{f.mutant.operator}].")) for f in cxx.findings}
    unwritten = write_reports(args, "redfirst: mutate sweep", doc, [f.result for f in cxx.findings], root, places)
    counts = cxx.counts()
    per = cxx.seconds / len(cxx.findings) if cxx.findings else 0.0
    if args.json:
        print(json.dumps({"version": 1, "exit": code, "files": list(result.files), "mutants": result.mutants,
                          "reused": result.reused, "suppressed": result.suppressed, "undecided": dict(result.undecided),
                          "survivors": [s.record() for s in result.survivors],
                          "cxx": {"files": list(cxx.files), "counts": counts, "notes": list(cxx.notes),
                                  "seconds": round(cxx.seconds, 3), "items": doc["items"],
                                  "survivors": [f.survivor().record() for f in cxx.survivors]}}, indent=1))
        return code
    for s in result.survivors:
        print(sweeping.describe(s))
    for note in cxx.notes:
        print(f"note: {note}")
    for f in cxx.survivors:
        print(f.warning())
    listing = ", ".join(f"{n} {k}" for k, n in counts.items()) or "none"
    print(f"{len(cxx.findings)} C/C++/CUDA mutant(s) on {len(cxx.files)} file(s): {listing}; "
          f"{cxx.seconds:.1f} s ({per:.2f} s a mutant)")
    if result.mutants:
        print(f"{result.mutants} Python mutants: {len(result.survivors)} survivor(s) kept")
    if unwritten:
        say(unwritten)
    if cxx.survivors or result.survivors:
        print("turn one into a mutation file once a test kills it: mutate promote KEY")
    return code
