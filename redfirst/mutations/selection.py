"""From command-line targets (files, folders, ids, an ad-hoc mutation) to validated
mutations, checked against the gates they name before anything runs."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from redfirst.gates.config import Project
from redfirst.gates.model import Gate, Source
from redfirst.mutations import git
from redfirst.mutations.loader import MutationFileError, load_mutations, mutation_files, mutation_paths
from redfirst.mutations.model import MODES, Expect, Mutation


class UsageError(Exception):
    """Bad command line or bad files: a message, exit 2."""


def select(project: Project, targets: Sequence[str], cwd: Path) -> list[Mutation]:
    """Files and folders are loaded as given; other targets are ids looked up in the
    project's mutation folders. Every file is validated before anything runs."""
    explicit: list[Path] = []
    ids: list[str] = []
    for t in targets:
        for candidate in (cwd / t, project.root / t):
            if candidate.exists():
                explicit.extend(mutation_files([candidate]))
                break
        else:
            ids.append(t)
    files = list(dict.fromkeys(explicit))
    if ids or not targets:
        files.extend(f for f in mutation_files(mutation_paths(project)) if f not in files)
    mutations = load_mutations(project, files)
    by_id = {m.id: m for m in mutations}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise UsageError(f"no such mutation file or id: {', '.join(unknown)} (looked in "
                         f"{', '.join(str(p) for p in mutation_paths(project))})")
    if not targets:
        return mutations
    return [m for m in mutations if m.id in ids or m.source.file in explicit]


def ad_hoc(args: argparse.Namespace) -> Mutation | None:
    """The mutation given by --file/--anchor/--replace/--gate/--control, if any."""
    given = [args.file, args.anchor, args.replace]
    if not any(given) and not args.gate and not args.control:
        return None
    if not all(x is not None for x in given):
        raise UsageError("an ad-hoc mutation needs --file, --anchor and --replace")
    if not args.gate and args.expect_build == "ok":
        raise UsageError("an ad-hoc mutation needs --gate (the gates it must turn RED), or --expect-build fails")
    if not args.anchor:
        raise UsageError("--anchor is empty: it would match everywhere")
    if args.anchor == args.replace:
        raise UsageError("--replace equals --anchor: the mutation changes nothing")
    if args.mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)}")
    return Mutation(id=args.id, file=args.file, anchor=args.anchor, replace=args.replace,
                    source=Source(Path("<command line>"), 0),
                    expect=Expect(build=args.expect_build, red=tuple(args.gate), green=tuple(args.control)),
                    build=args.build, mode=args.mode,
                    document=repr((args.file, args.anchor, args.replace, args.gate, args.control, args.build)))


def check_against_gates(mutations: Sequence[Mutation], gates: Mapping[str, Gate]) -> None:
    """Every gate a mutation names exists; `build: fails` has a build to fail."""
    problems = []
    for m in mutations:
        for g in m.expect.gates:
            if g not in gates:
                problems.append(f"{m.source}: mutation {m.id}: unknown gate {g!r}")
        if m.expect.build == "fails" and m.build is None and not any(
                g in gates and gates[g].build for g in m.expect.gates):
            problems.append(f"{m.source}: mutation {m.id}: expect.build is 'fails' but neither the mutation "
                            "nor a gate it names has a build")
    if problems:
        raise MutationFileError(problems)


def changed_since(project: Project, mutations: Sequence[Mutation], gates: Mapping[str, Gate],
                  rev: str) -> list[Mutation]:
    """Mutations whose file, target or named gate files changed since `rev` (working tree included)."""
    try:
        top = git.toplevel(project.root)
        sha = git.resolve_commit(top, rev, "--changed-since")
        names = git.z_list(top, "diff", "--name-only", "--end-of-options", sha, "--")
        names += git.z_list(top, "ls-files", "--others", "--exclude-standard")
    except git.GitError as e:
        raise UsageError(f"--changed-since {rev!r}: {e}") from None
    changed = {(top / n).resolve() for n in names}

    def touched(m: Mutation) -> bool:
        paths = [project.root / m.file, m.source.file, *(gates[g].source.file for g in m.expect.gates if g in gates)]
        return any(Path(p).resolve() in changed for p in paths)

    return [m for m in mutations if touched(m)]
