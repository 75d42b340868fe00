"""`gates check`: validate gate files only."""

from __future__ import annotations

import argparse

from redfirst import clitools
from redfirst.gates import api
from redfirst.gates.commands.common import problems, with_json, with_root
from redfirst.gates.loader import LoadError
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, EXIT_OK, Verdict


def add(sub: argparse._SubParsersAction) -> None:
    with_json(with_root(sub.add_parser("check", help="validate gate files only"))).set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        gates = api.load_gates(args.root)
    except LoadError as e:
        if args.json:
            print(clitools.listing("gates check", EXIT_ERROR, [], errors=e.problems))
        return problems(e.problems)
    if not gates:
        # As every empty selection: nothing checked is no decision that the gate files are fine.
        from redfirst.projectconfig import key_name

        project = api.project(args.root)
        why = f"No gate files found under {project.root} ({key_name(project.config, 'gates.paths')})."
        print(clitools.listing("gates check", EXIT_NO_DECISION, [], reason=why) if args.json else why)
        return EXIT_NO_DECISION
    if args.json:
        print(clitools.listing("gates check", EXIT_OK, [
            clitools.item(g.id, "gate-file", Verdict.GREEN, "valid", source=str(g.source), driver=g.driver.type)
            for g in gates]))
        return EXIT_OK
    for g in gates:
        print(f"{g.source}: {g.id} ({g.driver.type}{', ' + g.driver.format if g.driver.format != 'none' else ''})")
    print(f"{len(gates)} gate(s) valid.")
    return EXIT_OK
