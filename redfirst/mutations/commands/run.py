"""`mutate [FILES|IDS]`: run mutations and require their gates RED, controls GREEN."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst import clitools
from redfirst.gates.github import publish_document
from redfirst.mutations import cache, report, shard, testing_report
from redfirst.mutations.commands.common import Exit, gates_of, project_at, say, write_reports
from redfirst.mutations.engine import Engine
from redfirst.mutations.loader import MutationFileError, mutation_paths
from redfirst.mutations.selection import UsageError, ad_hoc, changed_since, check_against_gates, select
from redfirst.mutations.workspaces import WorkspaceError
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, exit_code

FORMATS = ("text", "json", "mutation-testing-report")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutate", description="Apply anchored mutations and require the named "
                                "gates RED while the controls stay GREEN; restores every file byte for byte.",
                                epilog="subcommands (each with --help):\n"
                                "  check     validate mutation files and anchors; runs nothing\n"
                                "  sweep     run mutmut over the Python files a change touches\n"
                                "  promote   turn a sweep survivor into a mutation file, if KILLED\n"
                                "  merge     join `--shard K/N --json` reports into one, proving coverage\n"
                                "  hazards   inject graph hazards into cuda-graph gates at run time",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    clitools.add_version(p)
    p.add_argument("targets", nargs="*", help="mutation files, folders or ids (default: the mutations folder)")
    p.add_argument("--root", help="the project root (default: redfirst.yaml's folder, else the git top-level)")
    p.add_argument("--expect", choices=["red"], default="red", help="what the named gates must do (the default)")
    p.add_argument("-n", "--jobs", type=int, default=1, help="parallel workers, one worktree each")
    p.add_argument("--lease", metavar="BOX|auto", help="run the -n workers as leased jobs, one lease each, on BOX "
                   "(or any box that satisfies the gates' requires) of the configured lease backend")
    p.add_argument("--slurm", action="store_true", help="run the -n workers as Slurm jobs (srun steps inside one "
                   "allocation per worker), results streamed back as they finish")
    p.add_argument("--lease-wait", type=float, default=600.0, metavar="S", help="how long a worker, or a CUDA gate run, waits for its lease (default 600)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout (--format json)")
    p.add_argument("--format", choices=FORMATS, default="text", help="what stdout holds: the table, the --json "
                   "document, or the open mutation-testing report schema's JSON (Stryker's mutation-testing-elements)")
    p.add_argument("--junit", type=Path, help="write a JUnit XML report")
    p.add_argument("--sarif", type=Path, help="write the survivors as SARIF 2.1.0 (GitHub code scanning)")
    p.add_argument("--html", type=Path, help="write one self-contained HTML page: scores, each file's source with "
                   "its mutants inline, filters by outcome, verdicts, matrix")
    p.add_argument("--changed-since", metavar="REV", help="only mutations whose target, file or gates changed")
    p.add_argument("--no-cache", action="store_true", help="run every mutation even when a result is cached")
    p.add_argument("--shard", metavar="K/N", help="run only part K of N (1-based) of the selection; "
                   "the --json report carries what `mutate merge` checks")
    p.add_argument("--durations", metavar="REPORT|cache",
                   help="balance --shard by the seconds in an earlier --json report, or by this "
                   "machine's last run times ('cache'); every shard must be given the same")
    p.add_argument("--allow-no-decision", action="store_true", help="exit 0 instead of 3 for DISCARDED or EQUIVALENT")
    adhoc = p.add_argument_group("ad-hoc mutation")
    adhoc.add_argument("--file", help="target file, relative to the root")
    adhoc.add_argument("--anchor", help="literal text to replace")
    adhoc.add_argument("--replace", help="replacement text")
    adhoc.add_argument("--gate", action="append", default=[], help="a gate that must go RED (repeatable)")
    adhoc.add_argument("--control", action="append", default=[], help="a gate that must stay GREEN (repeatable)")
    adhoc.add_argument("--build", help="build command for this mutation (run by sh -c)")
    adhoc.add_argument("--expect-build", choices=["ok", "fails"], default="ok",
                       help="whether the mutated build must succeed (ok) or fail (fails)")
    adhoc.add_argument("--mode", default="worktree", help="worktree | commit | in-place")
    adhoc.add_argument("--id", default="ad-hoc", help="id of the ad-hoc mutation")
    return clitools.add_conventions(p)


def main(argv: Sequence[str]) -> int:
    try:
        args = clitools.parse_args(parser(), argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else 0
    if args.json and args.format not in ("text", "json"):
        print(f"mutate: --json and --format {args.format} both say what stdout holds: give one", file=sys.stderr)
        return EXIT_ERROR
    args.json = args.json or args.format == "json"
    try:
        return _run(args)
    except Exit as e:
        if e.message:
            print(e.message, file=sys.stderr)
        return _stopped(args, e.code, [e.message] if e.message else [])
    except (UsageError, WorkspaceError) as e:
        print(f"mutate: {e}", file=sys.stderr)
        return _stopped(args, EXIT_ERROR, [str(e)])
    except MutationFileError as e:
        print("\n".join(e.problems), file=sys.stderr)
        return _stopped(args, EXIT_ERROR, list(e.problems))


def _stopped(args: argparse.Namespace, code: int, problems: list[str], key: str = "errors",
             shard: dict[str, Any] | None = None) -> int:
    """A run that stopped before any mutation ran: its --junit file, --html page and --json document
    say so (never the last run's left in place: a CI reading its all-KILLED JUnit saw green)."""
    doc: dict[str, Any] = {**report.document([], code), key: problems if key == "errors" else "; ".join(problems)}
    if shard is not None:
        doc["shard"] = shard
    if args.junit:
        try:
            report.write_junit(args.junit, doc)
        except OSError as e:
            say(f"cannot write the JUnit report {args.junit}: {e.strerror or e}")
            code = doc["exit"] = EXIT_ERROR
    if args.sarif:  # this run's stop, never the last run's results left in place
        try:
            report.write_sarif(args.sarif, doc, {})
        except OSError as e:
            say(f"cannot write the SARIF report {args.sarif}: {e.strerror or e}")
            code = doc["exit"] = EXIT_ERROR
    if args.html:   # this run's page, never the last run's left in place
        from redfirst.mutations import html_page

        unwritten = html_page.write(args.html, "redfirst: mutate", doc, [], Path.cwd())
        if unwritten:
            say(unwritten)
            code = doc["exit"] = EXIT_ERROR
            doc["errors"] = [*doc.get("errors", []), unwritten]
    if args.json:
        print(json.dumps(doc, indent=1))
    elif args.format == "mutation-testing-report":   # no mutant to report; the exit code says why
        print(json.dumps(testing_report.document([], Path.cwd())[0], indent=1))
    return code


def _fleet(args: argparse.Namespace, root: Path, extra: Any) -> Any:
    """The leased workers of `--lease`/`--slurm`, or None (the workers run here)."""
    if args.lease is None and not args.slurm:
        return None
    from redfirst.mutations.fleet import Fleet, FleetError, Target, config_of

    if args.lease is not None and args.slurm:
        raise UsageError("--lease and --slurm both pick where the workers run: give one")
    if args.jobs < 1:
        raise UsageError(f"-n {args.jobs}: give at least one worker")
    if extra is not None:
        raise UsageError("an ad-hoc mutation (--file/--anchor/--replace) runs here: leased workers select "
                         "mutations by id, so write it to a mutation file")
    if args.shard is not None:
        raise UsageError("--shard runs its part here; to lease workers, run `mutate --lease` or `--slurm` without it")
    try:
        config = config_of(root)
    except FleetError as e:
        raise UsageError(str(e)) from None
    target = Target("slurm") if args.slurm else Target(config.backend, args.lease)
    return Fleet(root, target, args.jobs, wait=args.lease_wait, config=config)


def _run(args: argparse.Namespace) -> int:
    # Bytecode written under a mutation could be read back after the restore.
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    spec = shard.parse_spec(args.shard) if args.shard is not None else None
    if args.durations is not None and spec is None:
        raise UsageError("--durations balances --shard: give --shard K/N too")
    project = project_at(args.root)
    extra = ad_hoc(args)
    mutations = [extra] if extra is not None and not args.targets else []
    if extra is None or args.targets:
        mutations += select(project, args.targets, Path(os.getcwd()))
    gates = gates_of(project)
    check_against_gates(mutations, gates)
    fleet = _fleet(args, project.root, extra)
    if args.changed_since:
        mutations = changed_since(project, mutations, gates, args.changed_since)
    part: dict[str, Any] | None = None
    if spec is not None:
        durations = (None if args.durations is None else cache.durations() if args.durations == "cache"
                     else shard.read_durations(Path(args.durations)))
        selection, tree = mutations, shard.tree_id(project)
        mutations = shard.pick(selection, spec, durations)
        say(f"shard {spec}: {len(mutations)} of {len(selection)} mutations")

        def part_of(baselines: Sequence[Any]) -> dict[str, Any]:
            return shard.section(project, spec, selection, mutations, durations, baselines, tree)
        if selection and not mutations:   # a legitimate empty part: merge still needs its report
            return _stopped(args, EXIT_NO_DECISION, [f"shard {spec} holds none of the {len(selection)} "
                                                     "selected mutations"], key="reason", shard=part_of([]))
    if not mutations:
        say("no mutations selected")
        publish_document(report.document([], EXIT_NO_DECISION), root=str(project.root))
        return _stopped(args, EXIT_NO_DECISION, ["no mutations selected"], key="reason")
    from redfirst.gates.progress import Progress

    bar = Progress("mutate")
    bar.start(len(mutations), "mutations")
    engine = Engine(project.root, gates, jobs=args.jobs, progress=bar, use_cache=not args.no_cache,
                    unkeyed=mutation_paths(project), fleet=fleet, lease_wait=args.lease_wait)
    try:
        results = engine.run(mutations)
    finally:
        bar.stop()
    cache.remember_durations(shard.results_seconds(results))
    if spec is not None:
        part = part_of(engine.baselines)
    code = exit_code([r.outcome for r in results], allow_no_decision=args.allow_no_decision)
    unwritten = write_reports(args, "redfirst: mutate", report.document(results, code), results, project.root)
    if unwritten:   # a report the user asked for is missing: a usage error, never read as the verdict
        say(unwritten)
        code = EXIT_ERROR
    # Annotations on the mutated lines and a step summary, only under GitHub Actions.
    doc = report.document(results, code)
    if part is not None:
        doc["shard"] = part
    publish_document(doc, root=str(project.root))
    if args.json:
        print(report.dumps(doc))
    elif args.format == "mutation-testing-report":
        mtr, left_out = testing_report.document(results, project.root)
        for line in left_out:
            say(line)
        print(json.dumps(mtr, indent=1))
    else:
        print((f"shard {spec}\n" if spec is not None else "") + report.table(doc))
    return code
