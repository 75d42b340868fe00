"""`mutate hazards GATE...`: graph hazards injected at run time into cuda-graph gates (redfirst.mutations.hazards)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from redfirst import clitools
from redfirst.gates.cuda.hazards import HAZARDS
from redfirst.gates.cuda.rank_hazards import COLLECTIVE_HAZARDS
from redfirst.mutations import hazards
from redfirst.mutations.commands.common import Exit, gates_of, project_at
from redfirst.verdict import EXIT_ERROR


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutate hazards", description="Inject each graph hazard (host scalar "
                                "frozen at capture, fresh allocation, outputs not written, skipped warm-up, stale "
                                "input) into cuda-graph gates at run time: RED is KILLED, GREEN SURVIVED.")
    p.add_argument("gates", nargs="+", help="ids of cuda-graph gates")
    p.add_argument("--hazard", action="append", choices=(*HAZARDS, *COLLECTIVE_HAZARDS),
                   help="only these hazards (repeatable)")
    p.add_argument("--root", help="the project root (default: redfirst.yaml's folder, else the git top-level)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    clitools.add_version(p)
    return clitools.add_conventions(p)


def main(argv: Sequence[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else 0
    try:
        project = project_at(args.root)
        known = gates_of(project)
    except Exit as e:
        print(e.message, file=sys.stderr)
        return e.code
    problems = [f"mutate hazards: no gate {g!r}" for g in args.gates if g not in known]
    problems += [f"mutate hazards: gate {g!r} has driver {known[g].driver.type}; hazards are for cuda-graph gates"
                 for g in args.gates if g in known and known[g].driver.type != "cuda-graph"]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        if args.json:
            print(clitools.listing("mutate hazards", EXIT_ERROR, [], errors=problems))
        return EXIT_ERROR
    from redfirst.gates import api

    run = api.gate_runner(project, lambda line: print(f"mutate hazards: {line}", file=sys.stderr, flush=True))
    _, results = hazards.run([known[g] for g in args.gates], run, args.hazard)
    code = hazards.exit_of(results)
    if args.json:
        items = [clitools.item(f"{r.gate}:{r.hazard}", "hazard", r.outcome.value, r.reason, evidence=r.evidence,
                               gate=r.gate, hazard=r.hazard) for r in results]
        print(clitools.listing("mutate hazards", code, items))
    else:
        print(hazards.table(results))
    return code
