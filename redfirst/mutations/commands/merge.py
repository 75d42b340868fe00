"""`mutate merge REPORT...`: one report from `mutate --shard K/N --json` reports; NO_DECISION
(exit 3), naming what is wrong, unless they cover the selection exactly once, on one tree (this
checkout's) and version, with green baselines, and every KILLED and SURVIVED (and every outcome
listing gate results) follows from the evidence records shipped with them, bound to that mutation.
Merged kills are stored as proofs from those records."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst import clitools
from redfirst.mutations import report, shard
from redfirst.mutations.commands.common import Exit, project_at, say, write_reports
from redfirst.mutations.merge import Merged, ShardReport, against_checkout, against_files, merge, read
from redfirst.mutations.model import Mutation
from redfirst.mutations.selection import UsageError
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, exit_code

REPORT_NAME = "mutate-shard.json"   # what a folder of downloaded shard artifacts holds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutate merge", description="Join shard reports (`mutate --shard K/N --json`) "
                                "into one report; NO_DECISION unless they cover the selection exactly once, on "
                                "one tree and redfirst version, with green baselines.")
    clitools.add_version(p)
    p.add_argument("reports", nargs="*", type=Path, help="the shards' JSON reports; a folder stands for every "
                   f"{REPORT_NAME} under it (an `evidence` folder beside one is read as --evidence)")
    p.add_argument("--root", help="the project root where merged kills are stored as proofs (default: the "
                   "current project)")
    p.add_argument("--evidence", action="append", type=Path, default=[],
                   help="a shard's evidence folder (.redfirst/evidence): the records every KILLED and SURVIVED is "
                   "re-derived from, the killing ones imported as proofs (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--junit", type=Path, help="write a JUnit XML report")
    p.add_argument("--html", type=Path, help="write one self-contained HTML page")
    p.add_argument("--allow-no-decision", action="store_true",
                   help="exit 0 instead of 3 for DISCARDED or EQUIVALENT (never for an incomplete merge)")
    return clitools.add_conventions(p)


def main(argv: Sequence[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else 0
    try:
        return _run(args)
    except UsageError as e:
        print(f"mutate merge: {e}", file=sys.stderr)
        if args.json:
            print(json.dumps({**report.document([], EXIT_ERROR), "errors": [str(e)]}, indent=1))
        return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    if not args.reports:
        raise UsageError("give the shard reports to merge (REPORT...)")
    paths: list[Path] = []
    for given in args.reports:
        found = sorted(given.rglob(REPORT_NAME)) if given.is_dir() else [given]
        if not found:
            raise UsageError(f"{given}: a folder with no {REPORT_NAME} in it")
        paths += found
    args.evidence = [*args.evidence, *(p.parent / "evidence" for p in paths if (p.parent / "evidence").is_dir())]
    args.reports = paths
    reports = [read(p) for p in paths]
    merged = merge(reports, _evidence_folders(args))
    found, unchecked = _against_files_here(args, reports)
    results = list(merged.results)
    code = exit_code([r.outcome for r in results], allow_no_decision=args.allow_no_decision)
    here, where = _checkout_tree(args)
    other_tree, tree_unchecked = against_checkout(reports, here, where, passing=code == 0 and not merged.problems)
    merged = dataclasses.replace(merged, problems=(*merged.problems, *found, *other_tree))
    unchecked = "; ".join(filter(None, (unchecked, tree_unchecked)))
    if unchecked:
        say(unchecked)
    if merged.problems:
        code = EXIT_NO_DECISION    # the union does not stand for the selection: no decision
        for problem in merged.problems:
            say(f"merge: NO_DECISION: {problem}")
    else:
        contradicted = _store_proofs(args, merged)
        if contradicted:
            # a RED the shard reports that its own record does not grade RED: no decision
            merged = dataclasses.replace(merged, problems=tuple(contradicted))
            code = EXIT_NO_DECISION
            for problem in contradicted:
                say(f"merge: NO_DECISION: {problem}")
    doc: dict[str, Any] = report.document(results, code)
    doc["merge"] = {"shards": list(merged.shards), "problems": list(merged.problems), "tree": merged.tree,
                    "reports": [str(p) for p in args.reports], "unchecked": unchecked or None}
    if merged.problems:
        doc["reason"] = "; ".join(merged.problems)
    unwritten = _reports(args, results, doc)
    if unwritten:
        say(unwritten)
        code = doc["exit"] = EXIT_ERROR
    from redfirst.gates.github import publish_document

    publish_document(doc, root=str(Path(args.root or ".")))
    if args.json:
        print(report.dumps(doc))
    else:
        lines = [f"merged shards {', '.join(merged.shards)}", report.table(doc)]
        lines[1:1] = [f"NO_DECISION: {p}" for p in merged.problems]
        print("\n".join(lines))
    return code


def _reports(args: argparse.Namespace, results: Sequence[Any], doc: dict[str, Any]) -> str:
    try:
        root = project_at(args.root).root
    except Exit:    # no project here: the page places no mutant in a file
        root = Path(args.root or ".")
    return write_reports(args, "redfirst: mutate merge", doc, results, root)


def _against_files_here(args: argparse.Namespace, reports: Sequence[ShardReport]) -> tuple[list[str], str]:
    """The shards' descriptions against the mutation files of the project here (its mutation
    folders and the files the descriptions name), whatever tree the reports say they ran on:
    (problems, what was not checked, or "")."""
    from redfirst.mutations.loader import MutationFileError, load_mutations, mutation_files, mutation_paths

    unchecked = "the shards' descriptions of their mutations not checked against mutation files"
    try:
        project = project_at(args.root)
    except Exit as e:
        return [], f"{unchecked}: no project here ({e.message})"
    files = set(mutation_files(mutation_paths(project)))
    for r in reports:
        for described in r.shard["mutations"].values():
            named = project.root / str(described["source"]).rpartition(":")[0]
            if named.suffix in (".yaml", ".yml") and named.is_file():
                files.add(named)
    here: dict[str, list[Mutation]] = {}
    for file in sorted(files):
        try:
            for m in load_mutations(project, [file]):
                here.setdefault(m.id, []).append(m)
        except (MutationFileError, OSError):
            continue    # a file that does not load here describes nothing to check against
    problems, missing = against_files(reports, here)
    note = f"{unchecked} for {', '.join(missing)}: not in this project's mutation files ({project.root})" \
        if missing else ""
    return problems, note


def _checkout_tree(args: argparse.Namespace) -> tuple[dict[str, str] | None, str]:
    """The tree of the project merge decides for (shard.tree_id) and its root, or None and why
    there is none: no project here is a root with neither redfirst.yaml nor a gate folder."""
    from redfirst import projectconfig

    try:
        project = project_at(args.root)
    except Exit as e:
        return None, f"no project here ({e.message})"
    if not projectconfig.configures(project.root) and not any(p.is_dir() for p in project.gate_paths):
        return None, (f"no project here ({project.root} has neither {projectconfig.YAML}, [tool.redfirst] nor a "
                      "gate folder)")
    return shard.tree_id(project), str(project.root)


def _store_proofs(args: argparse.Namespace, merged: Merged) -> list[str]:
    """Every RED record of a merged KILLED result that merge found bound to it and regraded RED
    (Merged.proving: the only source of proofs) proves its gate, keyed by the shards' tree, but
    only where this tree is that tree; the record is imported into this project's store. Each
    must grade RED again with this project's gate, as a proof is counted (redfirst.gates.proven):
    where one does not, no proof is stored and the contradictions are returned."""
    from redfirst.gates.api import LoadError, StoreError, export, load_gates
    from redfirst.gates.proofs import add_proof
    from redfirst.gates.proven import shows_red

    try:
        project = project_at(args.root)
    except Exit as e:
        say(f"proofs not stored: no project here ({e.message})")
        return []
    here = shard.tree_id(project)
    if here["tree"] != merged.tree.get("tree"):
        say(f"proofs not stored: this tree (HEAD {here['head'][:12]}, tree key {here['tree'][:12]}) is not the "
            f"shards' (HEAD {str(merged.tree.get('head'))[:12]}, tree key {str(merged.tree.get('tree'))[:12]})")
        return []
    try:
        gates = {g.id: g for g in load_gates(project.root)}
    except LoadError as e:
        say(f"proofs not stored: this project's gate files do not load ({e})")
        return []
    store = project.root / ".redfirst" / "evidence"
    contradicted, proving = [], []
    for gate_id, mutation_id, folder in merged.proving:
        if not (store / folder.name).is_dir():
            try:
                export(folder, store)
            except StoreError as e:
                say(f"evidence {folder.name[:12]} not imported: {e}")
                continue
        gate = gates.get(gate_id)
        if gate is None or not shows_red(store, folder.name, gate):
            contradicted.append(f"mutation {mutation_id}: gate {gate_id} reported RED, but its record "
                                f"{folder.name[:12]} does not grade RED from its raw files with this "
                                f"project's gate {gate_id}")
            continue
        proving.append((gate_id, mutation_id, folder.name))
    if contradicted:
        say("proofs not stored: a record contradicts its report")
        return contradicted
    from redfirst.gates.proven import tree_state
    from redfirst.gates.reads import of_record
    from redfirst.gates.rests import rests_on

    # A proof rests on what its record read (redfirst.gates.rests), as the engine's own proofs do:
    # the whole tree, and the files read outside the root as they are here now.
    state = tree_state(project.root, project.mutation_paths)
    for gate_id, mutation_id, evidence_id in proving:
        add_proof(project.root, gate_id, "mutation", mutation_id, [evidence_id], merged.tree["tree"],
                  rests_on(state, of_record(store / evidence_id), whole_tree=True))
    return []


def _evidence_folders(args: argparse.Namespace) -> list[Path]:
    """Where merge looks for the shards' records: --evidence, the `evidence` folders beside the
    reports, then this project's own store (a record is evidence wherever it is found: it is
    checked for its seal and its binding, never trusted for its place)."""
    folders = list(args.evidence)
    try:
        folders.append(project_at(args.root).root / ".redfirst" / "evidence")
    except Exit:
        pass
    return folders
