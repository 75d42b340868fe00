"""`gates proofs`: each gate and what proves it can fail."""

from __future__ import annotations

import argparse

from redfirst import clitools
from redfirst.gates import api
from redfirst.gates.commands.common import problems, with_json, with_root
from redfirst.gates.loader import LoadError
from redfirst.verdict import EXIT_OK, Cause, Verdict


def add(sub: argparse._SubParsersAction) -> None:
    with_json(with_root(sub.add_parser("proofs", help="list gates and what proves they can fail"))).set_defaults(
        func=main)


def main(args: argparse.Namespace) -> int:
    from redfirst.gates import proofs

    proj = api.project(args.root)
    try:
        gates = api.load_gates(args.root)
    except LoadError as e:
        return problems(e.problems)
    from redfirst.gates.proven import valid_proofs

    table = proofs.proofs(proj.root)
    if args.json:
        items = []
        for g in gates:
            valid = valid_proofs(proj, g)
            items.append(clitools.item(
                g.id, "proof", Verdict.GREEN if valid else Verdict.NO_DECISION,
                "" if valid else "UNPROVEN: no proof that this gate can fail", None if valid else Cause.EVIDENCE,
                {"proofs": len(valid), "stale": len(table.get(g.id, [])) - len(valid)},
                proofs=[f"{p.kind}:{p.ref}" for p in valid]))
        print(clitools.listing("gates proofs", EXIT_OK, items))
        return EXIT_OK
    for g in gates:
        valid = valid_proofs(proj, g)
        stale = len(table.get(g.id, [])) - len(valid)
        names = ", ".join(f"{p.kind}:{p.ref}" for p in valid) or "UNPROVEN"
        note = f"  ({stale} proof(s) of an earlier version of this gate)" if stale else ""
        print(f"{g.id:<32} {names}{note}")
    return EXIT_OK
